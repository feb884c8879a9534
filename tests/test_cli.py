"""The CLI front door: exit codes, pass-through, JSON, files with arguments, the plain REPL."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

CLI = [sys.executable, "-m", "agentic_bash"]


def cli(*args: str, stdin: bytes = b"", timeout: float = 60) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([*CLI, *args], input=stdin, capture_output=True, timeout=timeout)


def test_run_cmd_passes_output_and_status():
    p = cli("run", "--isolation", "virtual", "--cmd", "echo out; echo err >&2; exit 3")
    assert p.stdout == b"out\n"
    assert p.stderr == b"err\n"
    assert p.returncode == 3


def test_run_timeout_exits_124():
    p = cli("run", "--isolation", "virtual", "--timeout", "0.3", "--cmd", "while :; do :; done")
    assert p.returncode == 124


def test_run_json():
    p = cli("run", "--isolation", "virtual", "--json", "--cmd", "cd /tmp; echo hi")
    d = json.loads(p.stdout)
    assert d["stdout"] == "hi\n" and d["exit_code"] == 0 and d["cwd"] == "/tmp"
    assert p.returncode == 0


def test_run_file_with_args(tmp_path):
    f = tmp_path / "s.sh"
    f.write_text('echo "$#:$1:$2"\necho "line $LINENO"\n')
    p = cli("run", "--isolation", "virtual", str(f), "a b", "c")
    assert p.stdout == b"2:a b:c\nline 2\n"
    assert p.returncode == 0


def test_run_missing_file():
    p = cli("run", "--isolation", "virtual", "/nonexistent/x.sh")
    assert p.returncode == 127
    assert b"No such file or directory" in p.stderr


def test_run_env_and_workdir():
    p = cli("run", "--isolation", "virtual", "--env", "A=1", "--workdir", "/tmp", "--cmd", 'echo "$A $PWD"')
    assert p.stdout == b"1 /tmp\n"


def test_mount_cow_never_writes_host(tmp_path):
    (tmp_path / "f.txt").write_text("host\n")
    p = cli("run", "--isolation", "virtual", "--mount", f"/workspace={tmp_path}:cow",
            "--cmd", "cat /workspace/f.txt; echo changed > /workspace/f.txt; cat /workspace/f.txt")
    assert p.stdout == b"host\nchanged\n"
    assert (tmp_path / "f.txt").read_text() == "host\n"


def test_no_arguments_is_usage_error():
    p = cli("run", "--isolation", "virtual")
    assert p.returncode == 2


def test_plain_repl_keeps_state_and_continues_lines():
    script = b"x=5\ncd /tmp\nif true; then\n  echo \"$x $PWD\"\nfi\nfalse\n"
    p = cli("shell", "--isolation", "virtual", stdin=script)
    assert p.stdout == b"5 /tmp\n"
    assert b"\x1b" not in p.stdout + p.stderr
    assert p.returncode == 1


@pytest.mark.parametrize("argv", [["--help"], ["run", "--help"], ["shell", "--help"]])
def test_help(argv):
    p = cli(*argv)
    assert p.returncode == 0 and b"Usage" in p.stdout
