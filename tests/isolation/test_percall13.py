"""Pipelines of native programs started from the run's own thread (percall13): the same output, statuses, errors and stdin sharing as bash, the fallbacks, and that no stage thread or shell fork is made."""

from __future__ import annotations

import sys
import warnings

import pytest

import bashdiff

pytestmark = [pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux only"),
              pytest.mark.timeout(300)]

_X = "chmod +x"
# run by /bin/bash in an empty directory and by the sandbox in its own (see bashdiff)
CASES = [
    "seq 5 | tac | head -2; echo ${PIPESTATUS[@]}",
    "yes | head -2; echo ${PIPESTATUS[@]}",
    "seq 100000 | cat | head -1; echo ${PIPESTATUS[@]}",
    "set -o pipefail; seq 3 | dash -c 'cat >/dev/null; exit 3' | cat; echo $? ${PIPESTATUS[@]}",
    "seq 3 | dash -c 'cat; exit 3' | dash -c 'cat >/dev/null; exit 4'; echo $? ${PIPESTATUS[@]}",
    "! seq 2 | grep -q 1; echo $? ${PIPESTATUS[@]}",
    "ls /nonexistent_pc13 | wc -l; echo ${PIPESTATUS[@]}",
    # stderr: every stage's goes to the shell's, and |& sends one stage's into the pipe
    "{ seq 2 | dash -c 'echo e1 >&2; cat' | dash -c 'echo e2 >&2; cat'; } 2>&1 | sort",
    "dash -c 'echo err >&2; echo out' |& sed 's/^/[/'; echo ${PIPESTATUS[@]}",
    # a stage before the last a signal ended: its status, no report line (bash reports a
    # pipeline whose last stage a signal ended; neither path here does yet)
    "dash -c 'kill -9 $$' | cat; echo ${PIPESTATUS[@]}",
    "dash -c 'kill -SEGV $$' | cat; echo $? ${PIPESTATUS[@]}",
    # the first stage reads what a builtin left of the shell's stdin
    "printf 'a\\nb\\nc\\n' | { read x; cat | tr a-z A-Z; echo x=$x; }",
    "printf 'a\\nb\\n' > f; { read x; cat | wc -l; echo $x; } < f",
    # the environment: `_` is each program's path; the lookup leaves the hash table alone
    "seq 1 | env | grep '^_='",
    "hash -r; seq 2 | cat | wc -l; hash; echo $?",
    "hash -r; seq 2 >/dev/null; seq 1 | cat; hash | sed 's/^ *[0-9]*//'",
    "true x; seq 3 | cat; echo \"$_\"",
    # a stage that cannot start: not found, not executable, a script without #!, first or not
    "seq 2 | nosuch_pc13 | cat; echo ${PIPESTATUS[@]:1}",  # (seq: 0 or 141, as it comes)
    f"mkdir b; printf 'cat; echo ns\\n' > b/y; {_X} b/y; PATH=$PWD/b:$PATH; seq 2 | y | cat; "
    "echo ${PIPESTATUS[@]}",
    f"mkdir b; printf 'echo ns $#\\n' > b/y; {_X} b/y; PATH=$PWD/b:$PATH; y | cat; "
    "echo ${PIPESTATUS[@]}",
    "mkdir b; printf 'x\\n' > b/nx; PATH=$PWD/b:$PATH; { seq 2 | nx | cat; } 2>&1 | sed \"s|$PWD|P|\"; "
    "echo ${PIPESTATUS[@]}",
    "mkdir b; printf 'x\\n' > b/nx; PATH=$PWD/b:$PATH; { nx | cat; } 2>&1 | sed \"s|$PWD|P|\"",
    # functions, exported ones and builtins keep the general path
    "f() { cat; }; seq 2 | f | wc -l",
    "g() { :; }; export -f g; seq 2 | env | grep -c '^BASH_FUNC_g'",
    "seq 2 | read x; echo \"[$x]\"",
    # in a subshell, a command substitution, a function, a loop
    "(seq 3 | tail -1); x=$(seq 4 | tail -1); echo $x",
    "f() { seq \"$1\" | wc -l; }; f 3; for i in 1 2; do seq 2 | head -1; done",
    "seq 3 | wc -l > out; cat out; cat out | cat",
]


def _bash(script: str, cwd: str) -> tuple[str, str, int]:
    return bashdiff.bash(script, cwd)


@pytest.fixture(scope="module", params=["none", "namespace"])
def sandbox(request, tmp_path_factory):
    yield from bashdiff.sandbox(request.param, tmp_path_factory, ("seq", "dash", "tac"))


@pytest.mark.parametrize("script", CASES)
def test_same_as_bash(sandbox, script: str, tmp_path) -> None:
    want = _bash(script, str(tmp_path))
    r = bashdiff.run(sandbox, script)
    assert (r.stdout, r.stderr, r.exit_code) == want, script


def test_a_pipeline_of_programs_forks_no_shell_and_starts_no_stage_thread(monkeypatch, tmp_path) -> None:
    """The native path is taken (no fork of the shell, no stage thread) where every stage is
    a program; a stage that cannot start, a builtin or a function takes the general path."""
    from agentic_bash import Sandbox
    from agentic_bash.shell.interpreter import Interpreter
    calls = {"fork": 0, "stage": 0}
    fork, start_stage = Interpreter.fork, Interpreter.start_stage

    def counted_fork(self, *a, **k):
        calls["fork"] += 1
        return fork(self, *a, **k)

    def counted_stage(self, *a, **k):
        calls["stage"] += 1
        return start_stage(self, *a, **k)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sb = Sandbox("none", workdir=str(tmp_path))
    try:
        monkeypatch.setattr(Interpreter, "fork", counted_fork)
        monkeypatch.setattr(Interpreter, "start_stage", counted_stage)
        r = sb.run("seq 5 | tac | head -2; echo ${PIPESTATUS[@]}")
        assert (r.stdout, r.exit_code) == ("5\n4\n0 0 0\n", 0)
        assert calls == {"fork": 0, "stage": 0}
        r = sb.run("mkdir -p b; printf 'cat\\n' > b/y; chmod +x b/y; PATH=$PWD/b:$PATH; "
                   "seq 2 | y | cat; echo ${PIPESTATUS[@]}")
        assert (r.stdout, r.exit_code) == ("1\n2\n0 0 0\n", 0)
        assert calls["stage"] == 1   # the script without #! only
        calls.update(fork=0, stage=0)
        r = sb.run("f() { cat; }; seq 2 | f | cat")
        assert r.stdout == "1\n2\n" and calls["stage"] == 2
    finally:
        sb.close()
