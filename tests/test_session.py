"""The public Sandbox API in virtual mode: state across runs, limits, files, robustness."""

from __future__ import annotations

import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentic_bash import Limits, Mount, Sandbox, SandboxClosed


def test_run_basic(sb):
    r = sb.run("echo hello")
    assert r.stdout == "hello\n" and r.exit_code == 0 and r.stderr == ""
    assert not r.timed_out and not r.truncated and r.duration >= 0


def test_state_persists(sb):
    sb.run("cd /tmp && export X=1; y=2; f() { echo f$1; }; alias a=b; set -- p q")
    r = sb.run("echo $X $y $(f 3) $PWD $#")
    assert r.stdout == "1 2 f3 /tmp 2\n"
    assert sb.cwd == "/tmp"
    assert sb.env["X"] == "1"


def test_exit_ends_run_not_session(sb):
    r = sb.run("echo a; exit 3; echo b")
    assert (r.stdout, r.exit_code) == ("a\n", 3)
    assert sb.run("echo still").stdout == "still\n"


def test_bash_c_flags(sb):
    assert sb.run("echo $-").stdout == "hBc\n"
    assert sb.run("echo \"$BASH_EXECUTION_STRING\"").stdout == 'echo "$BASH_EXECUTION_STRING"\n'


def test_unbound_variable_status(sb):
    r = sb.run("set -u; echo $nope; echo after")
    assert r.exit_code == 127 and r.stdout == ""
    assert r.stderr == "bash: line 1: nope: unbound variable\n"


def test_syntax_error(sb):
    r = sb.run("fi")
    assert r.exit_code == 2
    assert r.stderr.startswith("bash: -c: line 1: syntax error near unexpected token `fi'")


def test_clean_environment():
    with Sandbox(isolation="virtual", env={"FOO": "1"}) as sb:
        env = dict(sb.env)
        assert env["PATH"] == "/usr/local/bin:/usr/bin:/bin"
        assert env["HOME"] == "/home/user" and env["USER"] == "user"
        assert env["FOO"] == "1" and env["TERM"] == "dumb" and env["PAGER"] == "cat"
        assert "LS_COLORS" not in env and "VIRTUAL_ENV" not in env
        assert sb.cwd == "/workspace"


def test_per_run_env_and_cwd(sb):
    r = sb.run("echo $TMPV; pwd", env={"TMPV": "x"}, cwd="/tmp")
    assert r.stdout == "x\n/tmp\n"
    r = sb.run("echo \"[$TMPV]\"; pwd")
    assert r.stdout == "[]\n/workspace\n"


def test_stdin(sb):
    r = sb.run("read a; cat_like() { while read l; do echo \"<$l>\"; done; }; cat_like; echo $a",
               stdin=b"first\nsecond\nthird\n")
    assert r.stdout == "<second>\n<third>\nfirst\n"
    assert sb.run("read x; echo $?").stdout == "1\n"


def test_timeout_busy_loop(sb):
    t = time.monotonic()
    r = sb.run("while :; do :; done", timeout=0.2)
    el = time.monotonic() - t
    assert r.timed_out and r.exit_code == 124
    assert el < 2.0
    assert sb.run("echo ok").stdout == "ok\n"


def test_timeout_pipeline(sb):
    r = sb.run("while :; do echo y; done | while read l; do :; done", timeout=0.3)
    assert r.timed_out and r.exit_code == 124


def test_limits_timeout_default():
    with Sandbox(isolation="virtual", limits=Limits(timeout=0.2)) as sb:
        r = sb.run("i=0; while true; do i=$((i+1)); done")
        assert r.timed_out


def test_output_truncation():
    with Sandbox(isolation="virtual", limits=Limits(max_output_bytes=1000)) as sb:
        r = sb.run("for i in $(seq 1 1000); do echo line $i; done")
        assert r.truncated
        assert "output truncated" in r.stdout
        assert len(r.stdout_bytes) < 1200


def test_pipeline_streams(sb):
    t = time.monotonic()
    r = sb.run("while true; do echo y; done | head -1", timeout=5)
    assert r.stdout == "y\n" and r.exit_code == 0
    assert time.monotonic() - t < 3


def test_files_relative_to_cwd(sb):
    sb.write_file("src/keep", b"")
    sb.run("cd /workspace/src")
    sb.write_file("notes/a.txt", b"data")
    assert sb.read_file("/workspace/src/notes/a.txt") == b"data"
    assert sb.exists("notes/a.txt")
    assert sb.run("cat notes/a.txt").stdout == "data"
    names = [e["name"] for e in sb.list_files("notes")]
    assert names == ["a.txt"]
    sb.remove("notes", recursive=True)
    assert not sb.exists("notes")


def test_file_changes_reported(sb):
    r = sb.run("echo x > new.txt")
    assert "/workspace/new.txt" in r.files_created


def test_closed():
    sb = Sandbox(isolation="virtual")
    sb.close()
    with pytest.raises(SandboxClosed):
        sb.run("echo")
    sb.close()


def test_context_manager():
    with Sandbox(isolation="virtual") as sb:
        assert sb.run("true").ok
    assert sb.closed


def test_custom_command(sb):
    def hello(ctx, argv):
        ctx.stdout.write(("hi " + " ".join(argv[1:]) + " " + ctx.env.get("V", "") + "\n").encode())
        return 5

    sb.register_command("hello", hello)
    r = sb.run("V=1 hello a b; echo $?")
    assert r.stdout == "hi a b 1\n5\n"


def test_custom_command_crash_is_a_status(sb):
    def boom(ctx, argv):
        raise RuntimeError("kaput")

    sb.register_command("boom", boom)
    r = sb.run("boom; echo after $?")
    assert "after 2" in r.stdout and "kaput" in r.stderr


def test_internal_error_becomes_status(sb, monkeypatch):
    from agentic_bash.shell import interpreter, nodes

    def broken(self, cmd):
        raise ValueError("interpreter bug")

    monkeypatch.setitem(interpreter._HANDLERS, nodes.ArithCmd, broken)
    r = sb.run("echo before; (( 1 ))")
    assert r.exit_code == 2
    assert "internal error" in r.stderr and r.stdout == "before\n"
    monkeypatch.undo()
    assert sb.run("echo fine").stdout == "fine\n"


def test_command_not_found_virtual(sb):
    r = sb.run("python3 -c 'print(1)'")
    assert r.exit_code == 127
    assert r.stderr == "bash: line 1: python3: command not found\n"


def test_mount_cow(tmp_path):
    (tmp_path / "a.txt").write_text("host\n")
    with Sandbox(isolation="virtual", mounts={"/workspace": str(tmp_path)}) as sb:
        assert sb.run("cat a.txt").stdout == "host\n"
        sb.run("echo changed > a.txt")
        assert sb.run("cat a.txt").stdout == "changed\n"
    assert (tmp_path / "a.txt").read_text() == "host\n"
    with Sandbox(isolation="virtual", mounts={"/data": Mount(str(tmp_path), mode="ro")}) as sb:
        assert sb.run("cat /data/a.txt").stdout == "host\n"


def test_background_and_wait(sb):
    r = sb.run("(echo bg) & wait; echo $!; jobs")
    assert r.stdout.startswith("bg\n")


def test_nested_bash(sb):
    r = sb.run("export E=1; x=2; bash -c 'echo $E ${x:-unset} $0 $1' zero one")
    assert r.stdout == "1 unset zero one\n"
    sb.write_file("s.sh", b"#!/bin/bash\necho script $1\nexit 4\n", mode=0o755)
    r = sb.run("./s.sh arg; echo $?")
    assert r.stdout == "script arg\n4\n"


def test_nul_and_invalid_utf8(sb):
    r = sb.run("printf 'a\\0b\\xff' | wc -c")
    assert r.stdout.strip() == "4"
    r = sb.run(b"echo \xff\xfe".decode("utf-8", "surrogateescape"))
    assert r.exit_code == 0


def test_huge_one_line_script(sb):
    script = "x=1;" * 20_000 + "echo $x"
    r = sb.run(script, timeout=120)
    assert r.stdout == "1\n"


def test_deep_cmdsub_nesting(sb):
    script = "echo " + "$(echo " * 60 + "deep" + ")" * 60
    r = sb.run(script, timeout=20)
    assert r.exit_code in (0, 2)


def test_function_recursion_limit():
    with Sandbox(isolation="virtual", limits=Limits(max_call_depth=50)) as sb:
        r = sb.run("f() { f; }; f; echo after")
        assert r.exit_code == 1
        assert "maximum function nesting level exceeded" in r.stderr


# ------------------------------------------------------------------ hypothesis
_atoms = st.sampled_from([
    "echo a", "true", "false", "x=1", "echo $x", "read v", "f", "f() { echo f; }", "exit 3",
    "echo $((1/0))", "${u:?e}", "set -e", "set -u", "shift", "break", "continue", "return",
    "cat", "echo hi | cat", "(exit 2)", "{ echo g; }", "echo $(echo s)", "a=(1 2)", "echo ${a[@]}",
    "trap 'echo t' EXIT", "local z", "declare -A m", "m[k]=v", "echo ${#m[@]}", "eval 'echo e'",
    "[[ a == a ]]", "[ 1 -lt 2 ]", "(( i++ ))", "echo *", "cd /tmp", "cd /nope", "exec 3>&-",
    "echo > /tmp/h", "cat < /tmp/h", "wait", "sleep 0.01 &", "if", "fi", "'", '"', "$(", "`",
    "case a in a) echo c;; esac", "while false; do :; done", "for i in 1 2; do echo $i; done",
])
_seps = st.sampled_from(["; ", "\n", " && ", " || ", " | ", " & "])


@st.composite
def scripts(draw):
    n = draw(st.integers(1, 6))
    parts = [draw(_atoms)]
    for _ in range(n - 1):
        parts.append(draw(_seps))
        parts.append(draw(_atoms))
    return "".join(parts)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(script=scripts())
def test_random_scripts_never_raise_or_hang(script):
    with Sandbox(isolation="virtual") as sb:
        t = time.monotonic()
        r = sb.run(script, timeout=1.0)
        assert time.monotonic() - t < 2.0
        assert isinstance(r.exit_code, int) and 0 <= r.exit_code <= 255


def test_background_output_after_run_returns(sb):
    # loose bound: run() must not wait for the 3 s job (it settles in-process jobs 0.25 s)
    r = sb.run("(sleep 3; echo late) & echo now")
    assert r.stdout == "now\n"
    assert r.duration < 2.5
    seen = ""
    deadline = time.monotonic() + 10
    while "late" not in seen and time.monotonic() < deadline:
        time.sleep(0.2)
        seen += sb.run("echo next").stdout
    assert seen.endswith("late\nnext\n") and seen.count("late") == 1


def test_host_mode_runs_native_binaries(tmp_path):
    import shutil as _sh

    if not _sh.which("tr"):
        pytest.skip("no tr on this host")
    with pytest.warns(RuntimeWarning):
        sb = Sandbox(isolation="none", workdir=str(tmp_path))
    with sb:
        r = sb.run("echo abc | tr a-z A-Z; echo x > f.txt; cat < f.txt | wc -c; pwd")
        assert r.stdout == f"ABC\n2\n{tmp_path}\n"
        assert (tmp_path / "f.txt").read_text() == "x\n"
        r = sb.run("sleep 5", timeout=0.3)
        assert r.timed_out


def test_hooks():
    seen = []
    with Sandbox(isolation="virtual", on_output=lambda fd, b: seen.append((fd, b)),
                 before_run=lambda s: seen.append(("before", s)),
                 after_run=lambda r: seen.append(("after", r.exit_code))) as sb:
        sb.run("echo out; echo err >&2; exit 4")
    assert seen[0] == ("before", "echo out; echo err >&2; exit 4")
    assert (1, b"out\n") in seen and (2, b"err\n") in seen
    assert seen[-1] == ("after", 4)


def test_commands_allowlist():
    got = []
    with Sandbox(isolation="virtual", commands_allowlist=["echo", "cat"], on_violation=got.append) as sb:
        r = sb.run("echo ok | cat; grep x /dev/null; echo $?")
        assert r.stdout == "ok\n127\n"
        assert "grep: command not allowed by policy" in r.stderr
        assert [v.detail for v in r.violations] == ["grep"]
        assert got and got[0].kind == "command"


def test_state_roundtrip_json():
    import json

    with Sandbox(isolation="virtual") as sb:
        sb.run('cd /tmp; x=1; export E=2; a=(1 "2 3"); declare -A m=([k]=v); f() { echo f $1; }; '
               'alias ll="ls -l"; set -o pipefail; shopt -s nullglob')
        state = json.loads(json.dumps(sb.get_state()))
    with Sandbox(isolation="virtual") as sb2:
        sb2.set_state(state)
        r = sb2.run('pwd; echo $x $E ${a[1]} ${m[k]}; f arg; alias; shopt nullglob; printenv E; '
                    'set -o | grep pipefail')
        assert r.stdout == ("/tmp\n1 2 2 3 v\nf arg\nalias ll='ls -l'\nnullglob       \ton\n2\n"
                            "pipefail       \ton\n")


def test_consecutive_runs_keep_their_output_apart():
    # run() reuses a finished run's streams and budget when nothing else holds them
    sb = Sandbox(isolation="virtual", limits=Limits(max_output_bytes=10))
    try:
        r = sb.run("echo 123456789012345; echo e1 >&2")
        # head and tail of the limit are kept, around a visible marker
        assert r.truncated and r.stdout.startswith("12345\n[agentic-bash: output truncated")
        assert r.stdout.endswith("]\n2345\n")
        for i in range(3):
            r = sb.run(f"echo {i}; echo err{i} >&2")
            assert (r.stdout, r.stderr, r.truncated) == (f"{i}\n", f"err{i}\n", False)
        # a process substitution still running after its run returned writes later: that
        # output must not show up in the next run's result
        r = sb.run(": <(sleep 0.3; echo late >&2); echo x")
        assert r.stdout == "x\n"
        time.sleep(0.6)
        r = sb.run("echo y")
        assert (r.stdout, r.stderr) == ("y\n", "")
        r = sb.run("while :; do :; done", timeout=0.2)
        assert r.timed_out
        r = sb.run("for i in 1 2 3; do :; done; echo after")
        assert (r.stdout, r.exit_code, r.timed_out) == ("after\n", 0, False)
    finally:
        sb.close()


def test_stdin_is_read_only(sb):
    r = sb.run("echo x >&0; echo $?")
    assert r.stdout == "1\n" and "Bad file descriptor" in r.stderr
    r = sb.run("cat; echo y >&0 || echo refused", stdin=b"in\n")
    assert r.stdout == "in\nrefused\n"


def test_runs_from_two_threads_take_turns():
    # runs of one session never overlap: each sees its own output and its own $x
    import threading
    with Sandbox(isolation="virtual") as sb:
        results: dict[int, list[str]] = {0: [], 1: []}

        def work(k: int) -> None:
            for i in range(60):
                r = sb.run(f"x={k}-{i}; for j in 1 2 3; do :; done; echo $x")
                results[k].append(r.stdout)

        ts = [threading.Thread(target=work, args=(k,)) for k in (0, 1)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(60)
        assert not any(t.is_alive() for t in ts)
        for k in (0, 1):
            assert results[k] == [f"{k}-{i}\n" for i in range(60)]


def test_a_descriptor_opened_by_exec_ends_with_its_run():
    with Sandbox(isolation="virtual") as sb:
        r = sb.run("exec 3>/tmp/f; echo hi >&3; cat /tmp/f")
        assert r.stdout == "hi\n"
        r = sb.run("echo again >&3")
        assert r.exit_code == 1 and "3: Bad file descriptor" in r.stderr
        assert sb.run("echo ok").stdout == "ok\n"


def test_a_run_started_inside_a_run_of_the_same_sandbox_fails_instead_of_hanging():
    from agentic_bash import SandboxError
    with Sandbox(isolation="virtual") as sb:
        seen: list[str] = []

        def nested(ctx, argv):  # noqa: ANN001
            try:
                sb.run("echo inner")
            except SandboxError as e:
                seen.append(str(e))
                return 3
            return 0

        sb.register_command("nested", nested)
        r = sb.run("nested; echo after $?")
        assert r.stdout == "after 3\n"
        assert seen == ["run() called from inside a run of the same sandbox"]
        assert sb.run("echo ok").stdout == "ok\n"


def test_a_sandbox_used_only_for_one_chained_call_stays_open_for_it():
    # the bound method must keep the Sandbox alive: its finalizer closes the executor
    assert Sandbox(isolation="virtual").run("echo hi").stdout == "hi\n"
    run = Sandbox(isolation="virtual").run
    import gc
    gc.collect()
    assert run("echo again").stdout == "again\n"
