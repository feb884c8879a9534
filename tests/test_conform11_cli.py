"""`agentic-bash shell` through a pty: lines typed while a command runs are the next commands."""

from __future__ import annotations

import os
import re
import sys

import pytest

pexpect = pytest.importorskip("pexpect")


def _level() -> str:
    from agentic_bash.isolation.probe import probe
    caps = probe()
    return "namespace" if caps.user_namespace and caps.mount_namespace and caps.overlay_userns else "virtual"


def _plain(b: bytes) -> bytes:
    return re.sub(rb"\x1b(?:\[[0-9;?]*[A-Za-z]|[=>])", b"", b)


@pytest.mark.parametrize("level", ["virtual", _level()])
def test_lines_typed_ahead_during_a_command_run_after_it_as_in_bash(tmp_path, level):
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path), "TERM": "xterm",
           "LANG": "C.UTF-8", "PROMPT_TOOLKIT_NO_CPR": "1"}
    c = pexpect.spawn(sys.executable, ["-m", "agentic_bash", "shell", "-i", level,
                                       "--history-file", str(tmp_path / "h")],
                      env=env, cwd=str(tmp_path), timeout=60, dimensions=(30, 100))
    try:
        c.expect_exact(b"/workspace$", timeout=120)
        # all at once: the first command is still running when the rest arrives (its
        # terminal echoes them); the quotes keep the echoed text from matching the output
        c.send(b"sleep 1; echo one\recho t''wo\rread -r v; echo got-$v\rtyped for read\r"
               b"echo th''ree; exit 3\r")
        c.expect(pexpect.EOF, timeout=60)
        out = _plain(c.before)
    finally:
        c.close(force=True)
    assert c.exitstatus == 3, out[-500:]
    for line in (b"one", b"two", b"got-typed for read", b"three"):
        assert b"\n" + line + b"\r\n" in out, (line, out[-800:])


def test_typeahead_comes_back_from_the_terminal_nothing_read():
    from agentic_bash import Sandbox
    import threading
    import time
    with Sandbox(isolation="virtual") as sb:
        def typer():
            time.sleep(0.3)
            sb.tty_input(b"echo next\rpart")
        t = threading.Thread(target=typer)
        t.start()
        r = sb.run("sleep 1; echo first", tty=True)
        t.join()
        assert r.extra.get("tty_unread") == "echo next\npart"
        r = sb.run("read x; echo x=$x", tty=True, stdin=b"abc\rrest\r")
        assert "x=abc" in r.stdout and r.extra.get("tty_unread") == "rest\n"
        r = sb.run("echo nothing typed", tty=True)
        assert "tty_unread" not in r.extra


def _cli(*args, input=None):
    import subprocess
    return subprocess.run([sys.executable, "-m", "agentic_bash", *args], input=input, capture_output=True,
                          timeout=120)


def test_snapshot_and_restore_take_the_file_as_an_argument_or_an_option(tmp_path):
    snap = tmp_path / "s.tar"
    r = _cli("snapshot", str(snap), "-i", "virtual", "--cmd", "cd /tmp; K=v1; exit 4")
    assert r.returncode == 4 and snap.exists(), r.stderr
    r = _cli("restore", str(snap), "-i", "virtual", "--cmd", 'echo "$K $PWD"; exit 5')
    assert (r.returncode, r.stdout) == (5, b"v1 /tmp\n"), r.stderr
    r = _cli("restore", "--in", str(snap), "-i", "virtual", "--cmd", 'echo "$K"')
    assert (r.returncode, r.stdout) == (0, b"v1\n")
    for args in (("restore", "--cmd", "true"), ("restore", str(snap), "--in", str(snap), "--cmd", "true"),
                 ("snapshot", "--cmd", "true"), ("snapshot", str(snap), "--out", str(snap), "--cmd", "true")):
        r = _cli(*args, "-i", "virtual")
        assert r.returncode == 2 and b"once" in r.stderr, args
    r = _cli("restore", str(tmp_path / "missing.tar"), "-i", "virtual", "--cmd", "true")
    assert r.returncode == 125 and b"No such file" in r.stderr
