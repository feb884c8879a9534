"""`agentic-bash shell` as a person types at it: errors that end only a non-interactive bash."""

from __future__ import annotations

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
    r.c.sendline("X=kept")
    r.prompt()
    for line, said in [("fi", "syntax error near unexpected token `fi'"),
                       ("echo ${nothing_c13:?not s''et}", "not set"),
                       ("exec /nonexistent/c13", "No such file or directory"),
                       ("set -u; echo $unset_c13", "unset_c13: unbound variable")]:
        r.c.sendline(line)
        r.expect(said)
        r.prompt()
    r.run("set +u; echo state=$X", "state=kept")
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
