"""Differential tests of shell.testexpr against real bash's test and [."""

from __future__ import annotations

import os
import subprocess
import time

import pytest

from agentic_bash.shell import testexpr as T
from agentic_bash.vfs.host import HostFS
from agentic_bash.vfs.memory import MemoryFS

BASH = "/usr/bin/bash"


def _q(s: str) -> str:
    return "'" + s.replace("'", "'\\''") + "'"


CASES: list[list[str]] = [
    [], [""], ["x"], ["-z"], ["!"], ["("], [")"], ["-a"], ["-o"], ["]"],
    ["!", ""], ["!", "x"], ["-z", ""], ["-z", "x"], ["-n", ""], ["-n", "x"], ["x", "y"], ["-q", "x"],
    ["-x"], ["a", "-a"], ["(", "x"], ["-t", "x"], ["-t", "1"], ["-t"],
    ["a", "=", "a"], ["a", "=", "b"], ["a", "==", "a"], ["a", "!=", "b"], ["a", "<", "b"], ["b", "<", "a"],
    ["a", ">", "B"], ["é", ">", "z"], ["a", "=~", "a"], ["a", "-a", "b"], ["a", "-a", ""], ["", "-o", ""],
    ["", "-o", "x"], ["!", "-z", "x"], ["!", "-z", ""], ["(", "x", ")"], ["(", "", ")"], ["a", "b", "c"],
    ["=", "=", "="], ["!", "=", "a"], ["-n", "=", "-n"], ["(", "a", "b"], ["-t", "1", "x"],
    ["1", "-eq", "1"], ["1", "-eq", "a"], [" 1 ", "-eq", "1"], ["+1", "-eq", "1"], ["-1", "-lt", "0"],
    ["0x1", "-eq", "1"], ["99999999999999999999", "-eq", "1"], ["9223372036854775807", "-gt", "-9223372036854775808"],
    ["", "-eq", "0"], ["1", "-ne", "2"], ["2", "-le", "2"], ["3", "-ge", "4"], ["3", "-gt", "2"], ["1", "-eq"],
    ["-eq", "-eq", "-eq"], ["010", "-eq", "10"],
    ["!", "!", "a"], ["!", "a", "=", "a"], ["!", "a", "=", "b"], ["(", "a", "=", ")"], ["(", "-n", "x", ")"],
    ["(", "a", ")", "b"], ["a", "=", "b", "c"], ["-n", "a", "-a", "-z", "b"], ["-n", "a", "-o", "-z", "b"],
    ["(", "a", "=", "a", ")", "-a", "(", "b", ")"], ["a", "=", "b", "c", "d", "e"], ["a", "-a", "b", "-o"],
    ["(", "(", "a", ")", ")"], ["!", "(", "a", "=", "b", ")"], ["a", "-a", "b", "-a", "c"],
    ["", "-o", "a", "-a", ""], ["a", "-o", "", "-a", ""], ["!", "!", "!", "a", "-a", "b"],
    ["(", "a", "-a", "b"], ["(", "a", "b", "c", ")"], ["x", "-a", "(", "y", ")", ")"], ["-z", "-a", "-n"],
    ["1", "-eq", "x", "-o", "a"], ["a", "-o", "1", "-eq", "x"], ["-t", "1", "-a", "a", "b"],
    ["(", ")", "-a", "(", ")"], ["a", "-a", "-t", "-o", "b"],
    # files
    ["-e", "file"], ["-e", "nonexist"], ["-e", ""], ["-a", "file"], ["-f", "file"], ["-f", "dir"], ["-d", "dir"],
    ["-d", "file"], ["-s", "file"], ["-s", "empty"], ["-h", "link"], ["-L", "link"], ["-h", "file"],
    ["-L", "dangling"], ["-e", "dangling"], ["-f", "link"], ["-d", "dirlink"], ["-p", "fifo"], ["-p", "file"],
    ["-r", "file"], ["-w", "file"], ["-x", "file"], ["-x", "exe"], ["-x", "dir"], ["-r", "nonexist"],
    ["-u", "suid"], ["-g", "sgid"], ["-k", "sticky"], ["-u", "file"], ["-O", "file"], ["-G", "file"],
    ["-c", "/dev/null"], ["-b", "/dev/null"], ["-S", "file"], ["-e", "file/"], ["-d", "dir/"],
    ["-e", "dir/../file"], ["-f", "/etc/passwd"], ["-d", "/"],
    ["file", "-nt", "old"], ["old", "-nt", "file"], ["file", "-ot", "old"], ["old", "-ot", "file"],
    ["file", "-nt", "nonexist"], ["nonexist", "-nt", "file"], ["nonexist", "-ot", "file"], ["file", "-ot", "nonexist"],
    ["file", "-ef", "file"], ["file", "-ef", "link"], ["file", "-ef", "old"], ["file", "-ef", "nonexist"],
    ["-v", "HOME"], ["-v", "NOPE_X"], ["-f", "file", "-a", "-d", "dir"], ["!", "-e", "nonexist"],
]


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> str:
    d = str(tmp_path_factory.mktemp("t"))
    with open(os.path.join(d, "file"), "w") as f:
        f.write("data")
    open(os.path.join(d, "empty"), "w").close()
    open(os.path.join(d, "old"), "w").close()
    os.utime(os.path.join(d, "old"), (time.time() - 1000, time.time() - 1000))
    os.mkdir(os.path.join(d, "dir"))
    os.symlink("file", os.path.join(d, "link"))
    os.symlink("dir", os.path.join(d, "dirlink"))
    os.symlink("nowhere", os.path.join(d, "dangling"))
    os.mkfifo(os.path.join(d, "fifo"))
    for name, mode in [("exe", 0o755), ("suid", 0o4755), ("sgid", 0o2755)]:
        open(os.path.join(d, name), "w").close()
        os.chmod(os.path.join(d, name), mode)
    os.mkdir(os.path.join(d, "sticky"))
    os.chmod(os.path.join(d, "sticky"), 0o1777)
    return d


def bash_results(cases: list[list[str]], cwd: str, cmd: str) -> list[tuple[int, str | None]]:
    lines = []
    for args in cases:
        argv = " ".join(_q(a) for a in args)
        end = " ']'" if cmd == "[" else ""
        lines.append(f"{cmd} {argv}{end} 2>&1; echo \"@$?\"")
    r = subprocess.run([BASH], input="\n".join(lines).encode(), capture_output=True, timeout=60, cwd=cwd,
                       env={"LANG": "C.UTF-8", "PATH": "/usr/bin:/bin", "HOME": "/tmp"})
    out = _chunks(r.stdout.decode())
    assert len(out) == len(cases)
    return out


def _chunks(text: str) -> list[tuple[int, str | None]]:
    res: list[tuple[int, str | None]] = []
    msg: list[str] = []
    for line in text.splitlines():
        if line.startswith("@"):
            res.append((int(line[1:]), "\n".join(msg) if msg else None))
            msg = []
        else:
            # "bash: line N: [: msg"
            msg.append(line.split(": ", 2)[2] if line.startswith(("bash: line", "/usr/bin/bash: line")) else line)
    return res


@pytest.mark.parametrize("cmd", ["[", "test"])
def test_against_bash(cmd: str, tree: str) -> None:
    want = bash_results(CASES, tree, cmd)
    fs = HostFS("/", writable=True)
    for args, w in zip(CASES, want):
        got = T.evaluate(args, fs=fs, cwd=tree, is_var_set=lambda n: n == "HOME", bracket=cmd == "[")
        assert got == w, (cmd, args)


def test_missing_bracket_helper() -> None:
    assert T.strip_bracket(["a", "]"]) == ["a"]
    assert T.strip_bracket(["a"]) is None
    assert T.MISSING_BRACKET == "[: missing `]'"


def test_unary_and_binary_exports() -> None:
    fs = MemoryFS()
    fs.mkdir("/d")
    fs.open("/d/f", "wb").close()
    yes = lambda n: True  # noqa: E731
    assert T.unary_test("-d", "d", fs, "/", yes)
    assert T.unary_test("-f", "/d/f", fs, "/", yes)
    assert not T.unary_test("-f", "d/f/", fs, "/", yes)
    assert T.unary_test("-O", "/d/f", fs, "/", yes, uid=1000)
    assert T.binary_test("-lt", "1", "2", fs, "/")
    with pytest.raises(T.TestError) as ei:
        T.binary_test("-lt", "x", "2", fs, "/")
    assert ei.value.message == "x: integer expression expected"
    assert T.unary_test("-o", "errexit", fs, "/", yes, is_option_set=lambda o: o == "errexit")


@pytest.mark.parametrize("cmd", ["[", "test"])
def test_random_argument_lists_against_bash(cmd: str, tree: str) -> None:
    import random

    rnd = random.Random(5)
    toks = ["!", "(", ")", "-a", "-o", "-n", "-z", "=", "!=", "-eq", "-lt", "1", "2", "x", "", "-f", "file",
            "dir", "<", "-t", "]", "-d", "-", "--"]
    cases = [[rnd.choice(toks) for _ in range(rnd.randint(0, 8))] for _ in range(1200)]
    want = bash_results(cases, tree, cmd)
    fs = HostFS("/", writable=True)
    for args, w in zip(cases, want):
        got = T.evaluate(args, fs=fs, cwd=tree, is_var_set=lambda n: False, bracket=cmd == "[")
        assert got == w, (cmd, args)
