"""Hooks, the command allowlist, AST transforms, process info and per-run options."""

from __future__ import annotations

import io

import pytest

import agentic_bash
from agentic_bash import Sandbox, truncate
from agentic_bash.shell import nodes as N
from agentic_bash.transforms import apply_transforms, command_names


def test_on_command_on_result_on_violation_in_order():
    log = []
    with Sandbox(isolation="virtual", commands=["echo"], on_command=lambda s: log.append(("cmd", s)),
                 on_result=lambda r: log.append(("res", r.exit_code)),
                 on_violation=lambda v: log.append(("viol", v.kind, v.detail))) as sb:
        sb.run("echo hi; sed q /dev/null")
    assert log[0] == ("cmd", "echo hi; sed q /dev/null")
    assert ("viol", "command", "sed") in log and log[-1][0] == "res"


def test_before_after_run_are_aliases():
    log = []
    with Sandbox(isolation="virtual", before_run=log.append, after_run=lambda r: log.append(r.stdout)) as sb:
        sb.run("echo a")
    assert log == ["echo a", "a\n"]


def test_commands_list_is_an_allowlist():
    with Sandbox(isolation="virtual", commands={"echo", "cat"}) as sb:
        r = sb.run("echo ok | cat; ls /; echo $?; cd /tmp; pwd; export X=1; printf '%s\\n' p")
        lines = r.stdout.splitlines()
        # shell builtins always exist (cd, export, printf, echo); commands not listed fail
        # with 127, like a command that does not exist (issue 4)
        assert lines[0] == "ok" and lines[1] == "127" and lines[2:] == ["/tmp", "p"]
        assert [v.detail for v in r.violations] == ["ls"]
    with pytest.raises(TypeError):
        Sandbox(isolation="virtual", commands="echo")


def test_commands_mapping_still_registers_custom_commands():
    def hello(ctx, argv):
        ctx.stdout.write(b"hello " + " ".join(argv[1:]).encode() + b"\n")
        return 0

    with Sandbox(isolation="virtual", commands={"hello": hello}) as sb:
        assert sb.run("hello there").stdout == "hello there\n"
        sb.reset()
        assert sb.run("hello again").stdout == "hello again\n"  # survives reset


def test_register_command_and_allowlist_together():
    with Sandbox(isolation="virtual", commands=["echo", "mycmd"]) as sb:
        sb.register_command("mycmd", lambda ctx, argv: ctx.stdout.write(b"mine\n") and 0)
        assert sb.run("mycmd; echo ok").stdout == "mine\nok\n"


def test_parse_exposes_the_ast():
    tree = agentic_bash.parse("a=1; echo $a | grep 1 && f() { cat x; }")
    assert isinstance(tree, N.Script)
    assert command_names(tree) == ["echo", "grep", "cat"]
    with pytest.raises(agentic_bash.ParseError):
        agentic_bash.parse("if then fi")


def test_observer_transform_sees_every_command_and_script_runs_unchanged():
    names = []
    with Sandbox(isolation="virtual", transforms=[lambda t: names.extend(command_names(t))]) as sb:
        r = sb.run("echo $LINENO\n(echo b | tr b c)\necho $LINENO")
    assert r.stdout == "1\nc\n3\n"
    assert names == ["echo", "echo", "tr", "echo"]


def test_rewriting_transform_changes_what_runs():
    def no_rm(tree):
        items = []
        for it in tree.items:
            c = it.cmd
            if isinstance(c, N.Simple) and c.words and c.words[0].text == "rm":
                c = agentic_bash.parse("echo refused rm").items[0].cmd
            items.append(N.ListItem(c, it.background))
        return N.Script(tuple(items), tree.line)

    with Sandbox(isolation="virtual", transforms=[no_rm]) as sb:
        sb.write_file("f", b"x")
        r = sb.run("rm f\nls")
        assert r.stdout == "refused rm\nf\n"


def test_transform_passes_syntax_errors_through():
    assert apply_transforms("fi", [lambda t: t]) == "fi"
    with Sandbox(isolation="virtual", transforms=[lambda t: t]) as sb:
        r = sb.run("fi")
        assert r.exit_code == 2 and "syntax error" in r.stderr


def test_process_info_is_configurable_and_not_the_host():
    import os
    import socket

    with Sandbox(isolation="virtual", hostname="box", user="agent", uid=4242, pid=77, ppid=5) as sb:
        r = sb.run("echo $$ $PPID $UID $HOSTNAME; whoami; hostname; id -u")
        assert r.stdout == "77 5 4242 box\nagent\nbox\n4242\n"
    with Sandbox(isolation="virtual") as sb:
        out = sb.run("echo $$ $PPID $HOSTNAME; hostname").stdout
        assert str(os.getpid()) not in out.split() and socket.gethostname() not in out.split()


def test_per_run_stdin_forms_env_cwd_timeout(sb):
    assert sb.run("cat", stdin="text").stdout == "text"
    assert sb.run("cat", stdin=b"\xff\x00bin").stdout_bytes == b"\xff\x00bin"
    assert sb.run("cat", stdin=io.BytesIO(b"file")).stdout == "file"
    assert sb.run("echo $E; pwd", env={"E": "e"}, cwd="/tmp").stdout == "e\n/tmp\n"
    assert sb.run("echo [$E]; pwd").stdout == "[]\n/workspace\n"
    r = sb.run("sleep 5", timeout=0.2)
    assert r.timed_out and r.exit_code == 124


def test_stdout_bytes_keeps_binary(sb):
    r = sb.run(r"printf '\x80\xff\n'")
    assert r.stdout_bytes == b"\x80\xff\n" and "\ufffd" in r.stdout


def test_truncate_and_for_llm():
    text = "A" * 100 + "MIDDLE" + "Z" * 100
    t = truncate(text, head=10, tail=10)
    assert t.startswith("A" * 10) and t.endswith("Z" * 10) and "[186 bytes elided]" in t
    assert truncate("short", 10, 10) == "short"
    assert agentic_bash.truncate is truncate
    with Sandbox(isolation="virtual") as sb:
        r = sb.run("cd /tmp; seq 1 5000; echo boom >&2; exit 3")
    s = r.for_llm(head=20, tail=20)
    assert s.startswith("exit_code: 3\ncwd: /tmp\nstdout:\n1\n2\n")
    assert "bytes elided" in s and s.rstrip().endswith("stderr:\nboom")


def test_transforms_assigned_after_construction_apply_to_the_next_run():
    with Sandbox(isolation="virtual") as sb:
        assert sb.run("echo one").stdout == "one\n"
        names: list[str] = []
        sb.transforms = [lambda t: names.extend(command_names(t))]
        assert sb.run("echo two | cat").stdout == "two\n"
        assert names == ["echo", "cat"]
        assert isinstance(sb.transforms, tuple)
        sb.transforms = ()
        sb.run("true")
        assert names == ["echo", "cat"]
