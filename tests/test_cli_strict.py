"""The CLI refuses mistakes (usage errors, status 2) and does I/O like bash (stdin, live ordered output, run FILE)."""

from __future__ import annotations

import base64
import json
import subprocess
import sys

import pytest

CLI = [sys.executable, "-m", "agentic_bash"]


def cli(*args: str, stdin: bytes = b"", timeout: float = 60, cwd: str | None = None,
        merge: bool = False) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([*CLI, *args], input=stdin, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT if merge else subprocess.PIPE,
                          timeout=timeout, cwd=cwd)


def _namespace_ok() -> bool:
    from agentic_bash.isolation.plan import plan
    from agentic_bash.isolation.probe import probe

    return plan("namespace", probe()).level == "namespace"


LEVELS = ["virtual", pytest.param("namespace", marks=pytest.mark.skipif(
    not _namespace_ok(), reason="no kernel sandbox on this host"))]


# ---------------------------------------------------------------- strictness
@pytest.mark.parametrize("argv, needle", [
    (["run", "--jsno", "--cmd", "echo x"], b"--json"),          # the suggestion
    (["run", "--bogus", "--cmd", 'echo "[$*]"'], b"--bogus"),
    (["shell", "--bogus"], b"--bogus"),
    (["snapshot", "--bogus", "-o", "x"], b"--bogus"),
])
def test_unknown_option_is_a_usage_error(argv, needle):
    p = cli(*argv)
    assert p.returncode == 2
    assert p.stdout == b""                      # the script did not run
    assert b"No such option" in p.stderr and needle in p.stderr


def test_cmd_and_file_are_mutually_exclusive(tmp_path):
    f = tmp_path / "s.sh"
    f.write_text("echo file\n")
    p = cli("run", "-i", "virtual", "--cmd", "echo cmd", str(f), "a", "b")
    assert p.returncode == 2 and p.stdout == b""
    assert b"mutually exclusive" in p.stderr


def test_cmd_takes_arguments_after_dashdash():
    p = cli("run", "-i", "virtual", "--cmd", 'echo "$#:[$1]:[$2]"', "--", "a b", "--x")
    assert p.stdout == b"2:[a b]:[--x]\n" and p.returncode == 0


def test_options_after_file_belong_to_the_script(tmp_path):
    f = tmp_path / "s.sh"
    f.write_text('echo "[$*]"\n')
    p = cli("run", "-i", "virtual", str(f), "--json", "-x")
    assert p.stdout == b"[--json -x]\n" and p.returncode == 0


def test_bad_isolation_is_a_usage_error_without_traceback():
    p = cli("run", "-i", "nope", "--cmd", "echo x")
    assert p.returncode == 2 and p.stdout == b""
    assert b"nope" in p.stderr and b"Traceback" not in p.stderr


@pytest.mark.parametrize("spec, needle", [
    ("/workspace=./p:xyz", b"unknown mode 'xyz'"),
    ("/workspace=./missing", b"no such directory"),
    ("workspace=./p", b"must be an absolute path"),
    ("/workspace", b"expected DEST=SRC"),
])
def test_mount_specs_are_validated_precisely(tmp_path, spec, needle):
    (tmp_path / "p").mkdir()
    p = cli("run", "-i", "virtual", "--mount", spec, "--cmd", "echo ran", cwd=str(tmp_path))
    assert p.returncode == 2 and p.stdout == b""
    assert needle in p.stderr and b"Traceback" not in p.stderr


def test_mount_mode_suffix_still_works(tmp_path):
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "f").write_text("host\n")
    p = cli("run", "-i", "virtual", "--mount", "/data=./p:ro", "--cmd", "cat /data/f", cwd=str(tmp_path))
    assert p.stdout == b"host\n" and p.returncode == 0


@pytest.mark.parametrize("value", ["-1", "0", "nan", "inf"])
def test_timeout_must_be_positive(value):
    p = cli("run", "-i", "virtual", "--timeout", value, "--cmd", "echo ran")
    assert p.returncode == 2 and p.stdout == b""
    assert b"--timeout" in p.stderr


def test_timeout_says_so_on_stderr():
    p = cli("run", "-i", "virtual", "--timeout", "0.3", "--cmd", "echo before; while :; do :; done")
    assert p.returncode == 124
    assert p.stdout == b"before\n"
    lines = p.stderr.decode().splitlines()
    assert len(lines) == 1 and "timed out" in lines[0]


def test_explicit_level_unavailable_fails_unless_auto(monkeypatch):
    """-i namespace on a host without user namespaces: an error (as --strict), not a silent
    virtual session; -i auto falls back with a warning."""
    from typer.testing import CliRunner

    import agentic_bash.isolation.probe as probe_mod
    from agentic_bash.cli import app
    from agentic_bash.isolation.probe import Capabilities

    no_kernel = Capabilities(linux=True, reasons={"user_namespace": "disabled for this test"})
    monkeypatch.setattr(probe_mod, "probe", lambda: no_kernel)
    runner = CliRunner()
    r = runner.invoke(app, ["run", "-i", "namespace", "--cmd", "echo ran"])
    assert r.exit_code == 125, r.output
    assert "ran" not in r.output and "not available" in r.output
    r = runner.invoke(app, ["run", "-i", "auto", "--cmd", "echo ran"])
    assert r.exit_code == 0 and "ran" in r.output
    assert "falling back to 'virtual'" in r.output


# ---------------------------------------------------------------- bash-like I/O
@pytest.mark.parametrize("level", LEVELS)
def test_stdin_is_passed_through(level):
    p = cli("run", "-i", level, "--cmd", "cat; echo end", stdin=b"hi\nthere\n")
    assert p.stdout == b"hi\nthere\nend\n" and p.returncode == 0


@pytest.mark.parametrize("level", LEVELS)
def test_stdout_and_stderr_keep_their_order_on_one_stream(level):
    p = cli("run", "-i", level, "--cmd", "echo 1; echo 2 >&2; echo 3; ls /nonexistent; echo 4",
            merge=True)
    lines = p.stdout.decode().splitlines()
    assert lines[:3] == ["1", "2", "3"] and lines[-1] == "4"
    assert "nonexistent" in lines[3]


@pytest.mark.parametrize("level", LEVELS)
def test_output_streams_while_the_script_runs(tmp_path, level):
    """The script prints, then waits for a file the test creates only after it has read that
    line: with output collected until the end, the script gives up waiting instead."""
    script = ("echo start; for i in $(seq 100); do [ -e /sig/go ] && break; sleep 0.1; done; "
              "[ -e /sig/go ] && echo end || echo gave-up")
    proc = subprocess.Popen([*CLI, "run", "-i", level, "--mount", f"/sig={tmp_path}:rw",
                             "--cmd", script], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        first = proc.stdout.readline()           # type: ignore[union-attr]
        (tmp_path / "go").write_text("")
        rest = proc.stdout.read()                # type: ignore[union-attr]
        proc.wait(timeout=60)
    finally:
        proc.kill()
        proc.wait()
    assert first == b"start\n"
    assert rest == b"end\n"


@pytest.mark.parametrize("level", LEVELS)
def test_run_file_sets_dollar0_and_sources_siblings(tmp_path, level):
    d = tmp_path / "dir"
    d.mkdir()
    (d / "lib.sh").write_text("libfn() { echo from-lib; }\n")
    (d / "main.sh").write_text(
        'echo "0=$0"\necho "src=${BASH_SOURCE[0]}"\nsource "$(dirname "$0")/lib.sh"\nlibfn\n'
        'echo "args=$*"\n')
    p = cli("run", "-i", level, "dir/main.sh", "a", "b", cwd=str(tmp_path))
    main = str(d / "main.sh")
    assert p.stdout.decode() == f"0={main}\nsrc={main}\nfrom-lib\nargs=a b\n", p.stderr
    assert p.returncode == 0


def test_run_file_directory_is_read_only(tmp_path):
    d = tmp_path / "dir"
    d.mkdir()
    (d / "main.sh").write_text('echo x > "$(dirname "$0")/new" || echo refused\n')
    p = cli("run", "-i", "virtual", str(d / "main.sh"))
    assert b"refused" in p.stdout
    assert not (d / "new").exists()


def test_none_starts_in_the_callers_cwd(tmp_path):
    (tmp_path / "here.txt").write_text("x")
    p = cli("run", "-i", "none", "--cmd", "pwd; ls", cwd=str(tmp_path))
    assert p.stdout.decode().splitlines() == [str(tmp_path), "here.txt"]
    assert p.returncode == 0


def test_json_carries_bytes_losslessly():
    p = cli("run", "-i", "virtual", "--json", "--cmd", r"printf 'a\xffb'; printf 'ok' >&2")
    d = json.loads(p.stdout)
    assert base64.b64decode(d["stdout_b64"]) == b"a\xffb"
    assert "stderr_b64" not in d and d["stderr"] == "ok"


def test_json_collects_instead_of_streaming():
    p = cli("run", "-i", "virtual", "--json", "--cmd", "echo out; echo err >&2")
    d = json.loads(p.stdout)   # stdout holds exactly one JSON document
    assert d["stdout"] == "out\n" and d["stderr"] == "err\n"
    assert p.stderr == b""


@pytest.mark.parametrize("level", LEVELS)
def test_sigint_interrupts_the_script_like_bash(level):
    """Ctrl-C (SIGINT to the CLI) ends the script with 130 and no traceback; the script's
    later commands do not run."""
    import signal

    proc = subprocess.Popen([*CLI, "run", "-i", level, "--cmd", "echo go; sleep 30; echo after"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert proc.stdout.readline() == b"go\n"   # type: ignore[union-attr]
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == 130
    assert b"after" not in out and b"Traceback" not in err


@pytest.mark.parametrize("level", LEVELS)
def test_stdin_that_never_ends_does_not_hold_a_script_that_does_not_read(level):
    proc = subprocess.Popen([*CLI, "run", "-i", level, "--cmd", "echo x"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        rc = proc.wait(timeout=60)   # our end of its stdin stays open all along
        out = proc.stdout.read()     # type: ignore[union-attr]
    finally:
        proc.kill()
        proc.wait()
        proc.stdin.close()           # type: ignore[union-attr]
    assert (rc, out) == (0, b"x\n")


@pytest.mark.parametrize("level", LEVELS)
def test_stdin_is_shared_by_builtins_and_commands_and_streams_in_bulk(level):
    p = cli("run", "-i", level, "--cmd", 'read a; read b; echo "$a $b"; cat',
            stdin=b"1\n2\n3\n4\n")
    assert p.stdout == b"1 2\n3\n4\n"
    big = bytes(range(256)) * 12_000   # 3 MB, every byte value
    p = cli("run", "-i", level, "--cmd", "od -An -tx1 -v | wc -l; cat > /dev/null", stdin=big)
    assert p.stdout == b"%d\n" % (len(big) // 16) and p.returncode == 0
