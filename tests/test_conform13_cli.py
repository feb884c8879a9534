"""`agentic-bash shell` as a person types at it: errors that end only a non-interactive bash."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytest.importorskip("pexpect")

from test_repl_pty import Repl, _level  # noqa: E402

CMD = [sys.executable, "-m", "agentic_bash"]


@pytest.fixture
def repl(tmp_path):
    made: list[Repl] = []

    def make(level: str) -> Repl:
        r = Repl(tmp_path, level)
        r.c.timeout = 90   # per expected output: loose, the machine is shared and loaded
        made.append(r)
        return r
    yield make
    for r in made:
        r.close()


@pytest.mark.parametrize("level", ["virtual", _level("namespace")])
def test_a_typo_or_fatal_expansion_error_does_not_end_the_interactive_shell(repl, level):
    # bash -i reports each of these and reads the next line (checked against bash -i on
    # this machine); the REPL used to end, with the sandbox and all its state, at the first
    r = repl(level)
    r.prompt()
    try:
        _typos(r)
    except BaseException:
        print(bytes(r.log[-3000:]).decode("utf-8", "replace"))   # what the screen showed
        raise


def _typos(r: Repl) -> None:
    r.c.sendline("X=kept")
    r.prompt()
    # ... with bash -i's words: no "line 1:", no "-c:", no echo of the offending line, and
    # $? 1 after ${x:?} and set -u (bash -c: 127)
    for line, said, status in [("fi", "bash: syntax error near unexpected token `fi'\r\n", 2),
                               ("echo ${nothing_c13:?not s''et}", "bash: nothing_c13: not set", 1),
                               ("exec /nonexistent/c13", "bash: /nonexistent/c13: No such file", 127),
                               ("set -u; echo $unset_c13", "bash: unset_c13: unbound variable", 1)]:
        r.c.sendline(line)
        r.expect(said)
        r.prompt()
        r.run("echo rc=$?", f"rc={status}")
    r.run("set +u; echo state=$X flags=$-", "state=kept flags=hiB")
    assert b"line 1:" not in r.log and b"-c:" not in r.log and b"bash: `fi'" not in r.log
    # `set -e` and a failure, like `exit`, do end an interactive bash
    r.c.sendline("set -e; false")
    assert r.finish() == 1
    assert b"Traceback" not in r.log


def test_read_from_a_pipe_the_shell_stops_at_a_syntax_error_like_bash_reading_stdin():
    p = subprocess.run([*CMD, "shell", "-i", "virtual"], input=b"echo one\nfi\necho after\n",
                       capture_output=True, timeout=120)
    assert p.stdout == b"one\n"
    assert b"syntax error near unexpected token `fi'" in p.stderr
    assert p.returncode == 2


def _spawn_run(tmp_path, level: str, script: str):
    import os

    import pexpect
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path), "TERM": "xterm",
           "LANG": "C.UTF-8"}
    return pexpect.spawn(sys.executable, ["-m", "agentic_bash", "run", "-i", level, "--cmd", script],
                         env=env, cwd=str(tmp_path), timeout=60, dimensions=(30, 100))


@pytest.mark.parametrize("level", ["virtual", _level("namespace")])
def test_run_at_a_terminal_gives_the_script_that_terminal_as_bash_c_has_it(tmp_path, level):
    # bash -c 'read ...' at a terminal waits for the person's line; run answered EOF at once
    import pexpect
    c = _spawn_run(tmp_path, level, 'read -p "name? " n; echo "hi $n"; [ -t 0 ] && [ -t 1 ] && echo both-tty')
    try:
        c.expect_exact("name? ", timeout=120)
        c.sendline("bob")
        c.expect_exact("hi bob")
        c.expect_exact("both-tty")
        c.expect(pexpect.EOF)
        c.close()
        assert c.exitstatus == 0
        # Ctrl-C is typed at the run's terminal: the command stops, 130 as under bash
        c = _spawn_run(tmp_path, level, "echo sta''rt; sleep 60; echo never")
        c.expect_exact("start", timeout=120)
        c.sendcontrol("c")
        c.expect(pexpect.EOF)
        c.close()
        assert c.exitstatus == 130 and b"never" not in c.before
    finally:
        if c.isalive():
            c.terminate(force=True)


SCRIPT_FILES = {
    "syntax": "echo a\nfoo_nf_c13\nfi\necho never\n",
    "colon_q": "echo a\necho ${x_c13:?nope}; echo same\necho never\n",
    "set_u": "set -u\necho $nope_c13\necho never\n",
    "arith": "echo a\necho $((1/0)); echo same\necho next\n",
    "flags": "echo \"$-\"; set -e; echo \"$-\"\n",
}


@pytest.mark.parametrize("level", ["virtual", _level("namespace")])
@pytest.mark.parametrize("case", sorted(SCRIPT_FILES))
def test_run_file_reports_errors_as_bash_file_does(tmp_path, case, level):
    # bash FILE names the file without bash -c's "-c:" and ends with 1 at a fatal expansion
    # error; run FILE said "FILE: -c: line 3:" and ended with 127
    import bashdiff
    script = tmp_path / "s.sh"
    script.write_text(SCRIPT_FILES[case])
    ref = tmp_path / "ref"
    ref.mkdir()
    (ref / "s.sh").write_text(SCRIPT_FILES[case])
    want = bashdiff.bash_c("bash s.sh", str(ref))
    p = subprocess.run([*CMD, "run", "-i", level, str(script)], capture_output=True, timeout=120,
                       cwd=str(tmp_path))
    got = (p.stdout.decode(), p.stderr.decode().replace(f"{script}:", "s.sh:"), p.returncode)
    assert got == want


def test_version_and_short_help_as_gnu_programs_have_them():
    from importlib.metadata import version
    for flag in ("--version", "-V"):
        p = subprocess.run([*CMD, flag], capture_output=True, timeout=60)
        assert (p.returncode, p.stdout.decode(), p.stderr) == (0, f"agentic-bash {version('agentic-bash')}\n", b"")
    for args in ([], ["run"], ["shell"], ["serve"], ["mcp"], ["image"]):
        long = subprocess.run([*CMD, *args, "--help"], capture_output=True, timeout=60)
        short = subprocess.run([*CMD, *args, "-h"], capture_output=True, timeout=60)
        assert long.returncode == 0 and long.stdout.startswith(b"Usage: agentic-bash")
        assert (short.returncode, short.stdout) == (0, long.stdout), args


@pytest.mark.parametrize("level", [_level("namespace")])
def test_a_sandbox_that_dies_under_the_repl_is_restarted_and_the_repl_goes_on(repl, level):
    # DESIGN decision 10 (every front door): the run raises SandboxCrashed, the Sandbox stays
    # usable over the same files; the REPL ended with 125 and the person lost the session
    import signal

    import psutil
    r = repl(level)
    r.prompt()
    r.c.sendline("X=1; echo data > /workspace/f; echo sta''rt; sleep 60")
    r.expect("start")
    # the sandbox processes are the zygote's children (the zygote is the REPL's child)
    victims = [k for z in psutil.Process(r.c.pid).children() for k in z.children()]
    assert victims
    for k in victims:
        os.kill(k.pid, signal.SIGKILL)
    r.expect("the next command starts a fresh sandbox")
    r.prompt()
    r.run("cat /workspace/f; echo flags=$-", "flags=hiB")
    assert b"data" in r.log
    r.c.sendline("exit 4")
    assert r.finish() == 4
