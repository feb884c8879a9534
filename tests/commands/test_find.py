"""find: differential table against GNU findutils 4.9 (sorted output: GNU uses readdir order)."""

from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from harness_search import assert_same, make_fs, ours  # noqa: E402

FILES = {
    "src/a.py": "import os\n",
    "src/b.py": "x = 1\n" * 300,
    "src/empty.txt": "",
    "src/sub/c.txt": "TODO c\n",
    "src/sub/d.PY": "d\n",
    "src/sub/deep/e.md": "# e\n",
    "src/.hidden": "h\n",
    "src/link": "->a.py",
    "src/dangling": "->nope",
    "emptydir": None,
    "docs/readme.md": "hello\n",
    "big.bin": b"\0" * 5000,
    "sp ace.txt": "s\n",
}

CASES = [
    # GNU's parse-time checks of -type, -size, -regextype, -printf and '('
    ["find", ".", "-type", "zz"], ["find", ".", "-type", "f,"], ["find", ".", "-type", "ff"],
    ["find", ".", "-type", ""], ["find", ".", "-type", "f,f"], ["find", ".", "-type", "D"],
    ["find", ".", "-size", "x"], ["find", ".", "-size", "1x"], ["find", ".", "-size", ""],
    ["find", ".", "-size", "1.5k"], ["find", ".", "-size", "+-1"],
    ["find", ".", "-regextype", "bad", "-regex", "x"], ["find", ".", "("],
    ["find", ".", "-maxdepth", "0", "-printf", "%Q %5Q|%-3j\\q\n"], ["find", ".", "-printf", "%"],
    ["find", ".", "-newermt", "garbage"], ["find", ".", "-newerXt", "x"], ["find", ".", "-newermm"],
    ["find", ".", "-newerBt", "2000-01-01"], ["find", ".", "-newermt", "@0", "-name", "*.py"],
    ["find"],
    ["find", "."],
    ["find", "src"],
    ["find", "src/"],
    ["find", "src", "docs"],
    ["find", ".", "-name", "*.py"],
    ["find", ".", "-name", "*.PY"],
    ["find", ".", "-iname", "*.py"],
    ["find", ".", "-name", "[ab].py"],
    ["find", ".", "-name", "[!a]*.py"],
    ["find", ".", "-name", "[^a]*.py"],
    ["find", ".", "-name", ".*"],
    ["find", ".", "-name", "*"],
    ["find", ".", "-path", "./src/*.py"],
    ["find", ".", "-path", "*sub*"],
    ["find", ".", "-ipath", "*SUB*"],
    ["find", ".", "-regex", ".*\\.py"],
    ["find", ".", "-regex", ".*/[ab]\\.py?"],
    ["find", ".", "-regextype", "posix-extended", "-regex", ".*/(a|b)\\.py"],
    ["find", ".", "-iregex", ".*\\.PY"],
    ["find", ".", "-type", "f"],
    ["find", ".", "-type", "d"],
    ["find", ".", "-type", "l"],
    ["find", ".", "-type", "f,l"],
    ["find", ".", "-xtype", "l"],
    ["find", "-L", ".", "-type", "l"],
    ["find", "-L", "src", "-name", "link", "-type", "f"],
    ["find", "-H", "src/link"],
    ["find", ".", "-size", "+1k"],
    ["find", ".", "-size", "-1k"],
    ["find", ".", "-size", "0"],
    ["find", ".", "-size", "5000c"],
    ["find", ".", "-size", "+2"],
    ["find", ".", "-size", "-1M"],
    ["find", ".", "-empty"],
    ["find", ".", "-maxdepth", "1"],
    ["find", ".", "-maxdepth", "0"],
    ["find", ".", "-mindepth", "2"],
    ["find", ".", "-mindepth", "1", "-maxdepth", "2", "-type", "d"],
    ["find", ".", "-depth", "-name", "sub*"],
    ["find", ".", "-name", "sub", "-prune", "-o", "-print"],
    ["find", ".", "-path", "./src", "-prune", "-o", "-name", "*.md", "-print"],
    ["find", ".", "-name", "*.py", "-o", "-name", "*.md"],
    ["find", ".", "(", "-name", "*.py", "-or", "-name", "*.md", ")", "-a", "-type", "f"],
    ["find", ".", "!", "-name", "*.py", "-type", "f"],
    ["find", ".", "-not", "-type", "d"],
    ["find", ".", "-type", "f", "-name", "*.txt", "-print0"],
    ["find", "src", "-printf", "%p|%f|%h|%s|%m|%M|%y|%d|%P|%l\\n"],
    ["find", ".", "-printf", "%h/%f %Y\\n"],
    ["find", "src", "-type", "f", "-printf", "%-10f|%5s|%05s\\n"],
    ["find", ".", "-name", "*.py", "-exec", "echo", "found", "{}", ";"],
    ["find", ".", "-name", "*.py", "-exec", "echo", "x{}y", "\\;"],
    ["find", ".", "-name", "*.py", "-exec", "echo", "{}", "+"],
    ["find", "src", "-name", "*.py", "-execdir", "echo", "{}", ";"],
    ["find", ".", "-name", "*.py", "-exec", "false", ";"],
    ["find", ".", "-name", "*.py", "-exec", "false", "{}", "+"],
    ["find", ".", "-name", "*.py", "-exec", "nosuchcmd", ";"],
    ["find", ".", "-true"],
    ["find", ".", "-false"],
    ["find", ".", "-name", "a.py", "-quit"],
    ["find", ".", "-perm", "644", "-type", "f"],
    ["find", ".", "-perm", "-u+w", "-name", "*.md"],
    ["find", ".", "-perm", "/111", "-type", "f"],
    ["find", ".", "-readable", "-name", "*.md"],
    ["find", ".", "-executable", "-type", "f"],
    ["find", ".", "-mtime", "-1", "-name", "*.md"],
    ["find", ".", "-mtime", "+1"],
    ["find", ".", "-mmin", "-5", "-name", "*.md"],
    ["find", ".", "-links", "1", "-name", "*.py"],
    ["find", "nope"],
    ["find", "nope", "src", "-name", "a.py"],
    ["find", ""],
    ["find", "src", "-foo"],
    ["find", "src", "-name"],
    ["find", "src", "x", "-name", "a"],
    ["find", "src", "-name", "a", "x"],
    ["find", "src", "-type", "q"],
    ["find", "src", "-size", "3x"],
    ["find", "src", "-newer", "nope"],
    ["find", "src", "-exec"],
    ["find", "src", "-exec", "echo", "{}", "x", "+"],
    ["find", "src", "-exec", "echo", "x{}", "+"],
    ["find", "src", "-name", "*.py", "-o"],
    ["find", "src", "(", "-name", "a"],
    ["find", "src", "-o", "-name", "a"],
    ["find", "src", "!"],
    ["find", "src", "-mtime", "x"],
    ["find", "src", "-maxdepth", "x"],
    ["find", "src", "-perm", "999"],
    ["find", "src", "-user", "nobodyx"],
]


@pytest.mark.parametrize("argv", CASES, ids=[" ".join(c) for c in CASES])
def test_find_differential(argv: list[str]) -> None:
    assert_same(argv, FILES, sort=True)


def test_find_newer() -> None:
    import time
    fs = make_fs(FILES)
    time.sleep(0.02)
    with fs.open("/workspace/new.txt", "wb") as f:
        f.write(b"n")
    r = ours(["find", ".", "-newer", "sp ace.txt", "-type", "f"], fs=fs)
    assert r.stdout == b"./new.txt\n"


def test_find_delete() -> None:
    fs = make_fs(FILES)
    r = ours(["find", "src", "-name", "*.py", "-delete"], fs=fs)
    assert r.status == 0 and r.stdout == b""
    assert not fs.exists("/workspace/src/a.py") and fs.exists("/workspace/src/sub/c.txt")
    r = ours(["find", "src", "-delete"], fs=fs)
    assert r.status == 0 and not fs.lexists("/workspace/src")


def test_find_delete_nonempty() -> None:
    assert_same(["find", "src", "-name", "sub", "-delete"], FILES, sort=True)


@pytest.mark.parametrize("answer", [b"y\n", b"n\n", b""])
@pytest.mark.parametrize("action", ["-ok", "-okdir"])
def test_find_ok_reads_answer(answer: bytes, action: str) -> None:
    """GNU's prompt names the command and the path only: ``< echo ... src/a.py > ? ``."""
    assert_same(["find", "src", "-name", "a.py", action, "echo", "yes", "{}", ";"], FILES, stdin=answer)


@pytest.mark.parametrize("expr", [
    ["-printf", "%p %t|%TY-%Tm-%Td %TH:%TM:%TS|%T@|%Tk\\n"],
    ["-mtime", "+2"], ["-mtime", "3"], ["-mtime", "-4"], ["-mtime", "-3"], ["-mmin", "+60"],
    ["-mmin", "-4400"], ["-newer", "old"], ["-not", "-newer", "mid"],
    ["-newermt", "2 days ago"], ["-newermt", "yesterday"], ["-newermm", "old"], ["-not", "-neweram", "mid"],
])
def test_find_times(expr: list[str]) -> None:
    """Same mtimes on both sides (utime), so time tests and formats compare exactly."""
    import subprocess
    import tempfile
    import time as _t

    from harness_search import ENV, write_real
    now = int(_t.time())
    stamps = {"old": now - 3 * 86400 - 100, "mid": now - 86400 * 3 // 2, "new": now - 30}
    files = {k: k + "\n" for k in stamps}
    fs = make_fs(files)
    for k, t in stamps.items():
        fs.utime("/workspace/" + k, (t, t))
    argv = ["find", ".", "-type", "f", *expr]
    r = ours(argv, fs=fs)
    with tempfile.TemporaryDirectory() as root:
        write_real(root, files)
        for k, t in stamps.items():
            os.utime(os.path.join(root, k), (t, t))
        p = subprocess.run(argv, capture_output=True, cwd=root, env=ENV)
    assert sorted(r.stdout.split(b"\n")) == sorted(p.stdout.split(b"\n")), (r.stdout, p.stdout)
    assert r.status == p.returncode


def test_symlink_loop_with_L() -> None:
    assert_same(["find", "-L", ".", "-name", "x*"], {"d/x1": "1\n", "d/loop": "->.."}, sort=True)


def test_deep_trees_do_not_hit_python_recursion_limit() -> None:
    import sys as _sys
    old = _sys.getrecursionlimit()
    depth = 450
    fs = make_fs({})
    p = "/workspace/d"
    fs.mkdir(p)
    for _ in range(depth):
        p += "/d"
        fs.mkdir(p)
    with fs.open(p + "/f", "wb") as f:
        f.write(b"x\n")
    from agentic_bash.commands import load_all
    load_all()
    _sys.setrecursionlimit(400)  # the walks must not need one Python frame per level
    try:
        assert ours(["find", ".", "-name", "f"], fs=fs).stdout.endswith(b"/d/f\n")
        assert ours(["grep", "-rl", "x", "d"], fs=fs).stdout.endswith(b"/d/f\n")
        assert ours(["diff", "-r", "d", "d"], fs=fs).status == 0
    finally:
        _sys.setrecursionlimit(old)
