"""Differential tests of shell.patterns against real bash ([[ == ]], ${x#p}, ${x/p/r}, globbing)."""

from __future__ import annotations

import os
import subprocess

import pytest

from agentic_bash.shell import patterns as P
from agentic_bash.vfs.memory import MemoryFS

BASH = "/usr/bin/bash"
ENV = {"LANG": "C.UTF-8", "PATH": "/usr/bin:/bin"}


def _q(s: str) -> str:
    return "'" + s.replace("'", "'\\''") + "'"


def run_bash(lines: list[str], prelude: str = "shopt -s extglob", cwd: str | None = None) -> list[str]:
    script = prelude + "\n" + "\n".join(f"{ln}; printf '@@\\n'" for ln in lines)
    r = subprocess.run([BASH], input=script.encode(), capture_output=True, timeout=60, env=ENV, cwd=cwd)
    assert r.stderr == b"", r.stderr
    out = r.stdout.decode("utf-8", "surrogateescape").split("@@\n")[:-1]
    assert len(out) == len(lines)
    return out


STRINGS = ["", "a", "b", "z", "-", "]", "[", "[a]", "ab", "abc", "d", "a\\", "[a", "1", ".", ".a",
           "a.c", "x.c", "foo", "fooo", "foobar", "a/b", "A", "Ab", "é", "aaa", "*", "?", "a b",
           "a-b", "\n", "ba", "abab", "bar.txt", "x.tar.gz", "^"]
PATTERNS = [
    "*", "?", "??", "a*", "*a", "*b*", "a?c", "[abc]", "[a-c]", "[!a]", "[^a]", "[]a]", "[!]]",
    "[\\]]", "[a-]", "[-a]", "[z-a]", "[[:foo:]]", "[[:alpha:]]", "[[:digit:]]", "[[:alnum:]]",
    "[[:upper:]]*", "[[:lower:]]", "[[:space:]]", "[[:punct:]]", "[[:alpha:][:digit:]]", "[a",
    "[[:alpha:]", "[a-c-e]", "\\[a]", "a\\", "\\*", "\\?", "a\\*", "[*]", "[?]", "*(a|b)", "+(a|b)",
    "?(a)", "@(a|ab|abc)", "!(a)", "!(a*)", "!(*.c)", "*.!(c)", "!(foo)*", "@()", "*(ab)",
    "+(a)b", "@(a|b)*", "!(a|b)", "a@(b|c)*", "*(+(a)|b)", "!(!(a))", "!(x!(a)y)", "!(!(!(a)))", "@(!(a)|b)", "!(@(!(a)))", "[.]", ".*", "*.*",
    "*/*", "a/*", "[[.a.]]", "x.@(tar|tar.gz)", "*.@(txt|c)", "@(*.c|foo)", "[!a-z]*",
    "[[:xdigit:]]", "[[:word:]]", "[[:blank:]]", "[[:cntrl:]]", "[[:print:]]", "[[:graph:]]",
    "a*b*", "*a*a*", "[\\^]", "[a\\-c]", "\\a", "?(", "*(a", "@(a|b", "a)", "a|b", "(a)",
    # bash's `*` followed by an extglob group
    "a*?(z)", "a*@(|z)", "a**(z)", "*!(x)", "*!(a)", "a*!(x)", "*?(b)", "a*b?(c)", "a*@(|b)", "*+(|z)",
    "*!()", "*!(*)", "a*!(z)x", "*!(z)x", "*@(b)", "a*!(@(|a))", "*?(z)x", "*+(a|*(b))", "*!(a).",
]


@pytest.fixture(scope="module")
def fnmatch_table() -> dict[tuple[str, str], bool]:
    lines = []
    keys = []
    for p in PATTERNS:
        for s in STRINGS:
            keys.append((p, s))
            lines.append(f"p={_q(p)} s={_q(s)}; [[ $s == $p ]] && printf y || printf n")
    out = run_bash(lines)
    return {k: v == "y" for k, v in zip(keys, out)}


@pytest.mark.parametrize("pattern", PATTERNS)
def test_fnmatch_against_bash(pattern: str, fnmatch_table: dict[tuple[str, str], bool]) -> None:
    got = {s: P.fnmatch(pattern, s) for s in STRINGS}
    want = {s: fnmatch_table[(pattern, s)] for s in STRINGS}
    assert got == want


def test_nocase_and_no_extglob() -> None:
    lines = [f"p={_q(p)} s={_q(s)}; [[ $s == $p ]] && printf y || printf n"
             for p, s in [("a*", "ABC"), ("[a-c]x", "BX"), ("[[:upper:]x]", "a"), ("[[:upper:]x]", "X"), ("[![:upper:]]", "A"), ("[![:lower:]b]", "B"), ("FOO", "foo")]]
    out = run_bash(lines, "shopt -s extglob nocasematch")
    got = [P.fnmatch(p, s, nocase=True) for p, s in [("a*", "ABC"), ("[a-c]x", "BX"), ("[[:upper:]x]", "a"), ("[[:upper:]x]", "X"), ("[![:upper:]]", "A"), ("[![:lower:]b]", "B"), ("FOO", "foo")]]
    assert got == [o == "y" for o in out]
    assert P.fnmatch("@(a)", "@(a)", extglob=False)
    assert not P.fnmatch("@(a)", "a", extglob=False)


SUBJECTS = ["", "abc", "a/b/c.txt", "foo.tar.gz", "aaa", "abab", "hello world", "x", "/usr/lib/", "é-é"]
OPS = [
    ("#", "a"), ("#", "*"), ("##", "*"), ("#", "*/"), ("##", "*/"), ("%", "*"), ("%%", "*"),
    ("%", ".*"), ("%%", ".*"), ("%", "/*"), ("#", "?"), ("##", "?"), ("#", "a*"), ("##", "a*"),
    ("%", "b*"), ("#", "[a-b]"), ("##", "+(a)"), ("#", "+(a)"), ("%%", "*(b|c)"), ("#", "!(a)"),
    ("##", "!(a)"), ("%", "!(c)"), ("%%", "@(.gz|.tar.gz)"), ("#", "\\*"), ("#", ""), ("%", ""),
    ("#", "abc"), ("%", "c.txt"), ("%", "o"), ("#", "é"),
    ("/", "a"), ("//", "a"), ("/", "b*"), ("//", "?"), ("/#", "a"), ("/%", "c"), ("/", ""),
    ("//", ""), ("/#", ""), ("/%", ""), ("//", "*(z)"), ("/", "*(z)"), ("//", "?(b)"),
    ("/#", "*(z)"), ("/%", "*(z)"), ("//", "b*(z)"), ("/", "*"), ("//", "*"), ("//", "[ab]"),
    ("//", "ab"), ("/", "!(a)"), ("//", "/"), ("/#", "*/"), ("/%", "/*"), ("//", "@(a|ab)"),
    ("//", "\\*"), ("//", "o"), ("/", "l*o"), ("//", "[[:space:]]"),
    ("/%", "!(\\*)"), ("/", "!(a)"), ("/%", "!([!a])"), ("//", "*!(x)"), ("/#", "*!(*)a"), ("#", "*+(a|*(b))"),
    ("/#", "@(a|)"), ("/", "?(b)c"),
]


def _bash_op(op: str, p: str) -> str:
    if op.startswith("/"):
        return f"${{s{op}$p/R}}"
    return f"${{s{op}$p}}"


def _ours_op(s: str, op: str, p: str) -> str:
    if op == "#":
        return P.strip_prefix(s, p, False)
    if op == "##":
        return P.strip_prefix(s, p, True)
    if op == "%":
        return P.strip_suffix(s, p, False)
    if op == "%%":
        return P.strip_suffix(s, p, True)
    mode = {"/": "first", "//": "all", "/#": "prefix", "/%": "suffix"}[op]
    return P.replace(s, p, "R", mode)


@pytest.fixture(scope="module")
def ops_table() -> dict[tuple[str, str, str], str]:
    keys, lines = [], []
    for op, p in OPS:
        for s in SUBJECTS:
            keys.append((op, p, s))
            lines.append(f"p={_q(p)} s={_q(s)}; printf '%s' \"{_bash_op(op, p)}\"")
    return dict(zip(keys, run_bash(lines)))


@pytest.mark.parametrize("op,p", OPS)
def test_strip_and_replace_against_bash(op: str, p: str, ops_table: dict[tuple[str, str, str], str]) -> None:
    got = {s: _ours_op(s, op, p) for s in SUBJECTS}
    want = {s: ops_table[(op, p, s)] for s in SUBJECTS}
    assert got == want


def test_nested_negation() -> None:
    assert P.fnmatch("!(!(a))", "a") and not P.fnmatch("!(!(a))", "b")


def test_nocase_upper_class() -> None:
    assert not P.fnmatch("[[:upper:]]", "a", nocase=True)


def test_has_magic_and_unescape() -> None:
    assert P.has_magic("a*") and P.has_magic("?") and P.has_magic("[ab]") and P.has_magic("@(a)")
    assert not P.has_magic("\\*") and not P.has_magic("[") and not P.has_magic("abc")
    assert not P.has_magic("@(a)", extglob=False)
    assert P.unescape("a\\*b\\\\") == "a*b\\"


def test_translate_and_compile() -> None:
    assert P.compile("*.c").fullmatch("x.c")
    assert P.compile("*.c", pathname=True).fullmatch("a/x.c") is None
    assert P.compile("?", pathname=True).fullmatch("/") is None
    assert P.compile("[!a]", pathname=True).fullmatch("/") is None
    assert P.compile("A*", nocase=True).fullmatch("abc")
    assert isinstance(P.translate("a*"), str)


def test_long_subject_is_fast() -> None:
    s = "ab/" * 20000
    assert P.strip_prefix(s, "*/", True) == ""
    assert P.strip_suffix(s, "/*", False) == s[:-1]
    assert P.replace(s, "b", "c", "all") == s.replace("b", "c")
    assert P.replace(s, "[b]", "c", "all") == s.replace("b", "c")


# ------------------------------------------------------------------------ globbing

TREE_DIRS = ["a", "a-b", "B", ".h", "c", "c/d", "c/d/e", "c/.hd", "sp ace", "x.d"]
TREE_FILES = ["a/x", "a/.y", "a-b/y", "B/z", ".h/q", "c/d/e/f", "Ab", "_u", "é", "c/.hid",
              "c/d/g.txt", "f.txt", "F.TXT", "g.c", "sp ace/in", "x.d/h.c", ".dot", "c/.hd/k"]
TREE_LINKS = [("c/lnk", "../a"), ("dangling", "nowhere"), ("ldir", "c")]

GLOBS = [
    "*", "*/", "*/*", ".*", "*.txt", "*.TXT", "?", "[a-c]*", "[!a]*", "*/*/*", "c/*", "c/*/", "c/d/*",
    "*/.*", "!(a*)", "@(.h|a)", ".h*", "a/../*", "./*", "a//*", "*/x", "x/*", "a*/", "sp*/*",
    "**", "**/", "c/**", "**/f", "**/*.txt", "c/**/", "**/*.c", "*(a|B)", "+([a-z])", "[[:upper:]]*",
    "c/lnk/*", "ldir/*", "d*", "\\*", "a\\*", "[.]h", "*/[xy]", "c/d/e/*", "*.@(c|txt)", "?.d/*.c",
    "nomatch*", "*/nomatch", "a/x*/", "c/*/e", "**/e/*", "l*/", "*/**",
]


def _build(root: str, mem: MemoryFS) -> None:
    for d in TREE_DIRS:
        os.mkdir(os.path.join(root, d))
        mem.mkdir("/t/" + d)
    for f in TREE_FILES:
        open(os.path.join(root, f), "w").close()
        mem.open("/t/" + f, "wb").close()
    for link, target in TREE_LINKS:
        os.symlink(target, os.path.join(root, link))
        mem.symlink(target, "/t/" + link)


@pytest.fixture(scope="module")
def glob_env(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, MemoryFS]:
    root = str(tmp_path_factory.mktemp("glob"))
    mem = MemoryFS()
    mem.mkdir("/t")
    _build(root, mem)
    return root, mem


@pytest.mark.parametrize("opts", ["", "dotglob", "nocaseglob", "globstar", "globstar dotglob"])
def test_glob_against_bash(opts: str, glob_env: tuple[str, MemoryFS]) -> None:
    root, mem = glob_env
    prelude = "shopt -s extglob nullglob" + (f"; shopt -s {opts}" if opts else "")
    # patterns are written unquoted into the script so bash globs them
    lines = [f"printf '%s\\n' {p}" for p in GLOBS]
    want = run_bash(lines, prelude, cwd=root)
    flags = {o: True for o in opts.split()}
    for p, w in zip(GLOBS, want):
        got = P.glob(mem, p, "/t", **flags)
        if not P.has_magic(p):
            # bash does not glob a word without magic; nullglob leaves it as is
            continue
        assert got == ([] if w == "\n" else w.splitlines()), (p, opts)


def test_glob_absolute(glob_env: tuple[str, MemoryFS]) -> None:
    _, mem = glob_env
    assert P.glob(mem, "/t/c/d/*", "/") == ["/t/c/d/e", "/t/c/d/g.txt"]
    assert P.glob(mem, "/t/*/", "/nonexistent")[:2] == ["/t/B/", "/t/a-b/"]
    assert P.glob(mem, "t/a/*", "/") == ["t/a/x"]


def test_random_extglob_against_bash() -> None:
    """Random nested extglob patterns; bash's matcher has quirks we do not all model."""
    import random

    rnd = random.Random(7)
    atoms = ["a", "b", ".", "*", "?", "[ab]", "[!a]", "[a-c]", "\\*", "[[:alpha:]]"]

    def pat(d: int = 0) -> str:
        out = ""
        for _ in range(rnd.randint(1, 4)):
            if rnd.random() < 0.25 and d < 2:
                alts = "|".join(pat(d + 1) for _ in range(rnd.randint(1, 2)))
                out += f"{rnd.choice('?*+@!')}({alts})"
            else:
                out += rnd.choice(atoms)
        return out

    pairs = [(pat(), "".join(rnd.choice("ab.c") for _ in range(rnd.randint(0, 5)))) for _ in range(600)]
    ops = ["#", "##", "%", "%%", "/", "//", "/#", "/%"]
    lines = [f"p={_q(p)} s={_q(s)}; [[ $s == $p ]] && printf y || printf n; printf '|%s' "
             + " ".join(f'"{_bash_op(op, p)}"' for op in ops) for p, s in pairs]
    want = run_bash(lines)
    bad = []
    for (p, s), w in zip(pairs, want):
        got = ("y" if P.fnmatch(p, s) else "n") + "".join("|" + _ours_op(s, op, p) for op in ops)
        if got != w:
            bad.append((p, s, got, w))
    assert len(bad) <= len(pairs) // 200, bad[:5]


def test_callable_replacement_is_patsub_ampersand() -> None:
    cases = [("hello world", "o", "first"), ("hello world", "o", "all"), ("hello", "l*", "first"),
             ("abc", "?(b)", "all"), ("abc", "a", "prefix"), ("abc", "*c", "suffix"), ("abc", "", "prefix")]
    ops = {"first": "/", "all": "//", "prefix": "/#", "suffix": "/%"}
    lines = [f"shopt -s patsub_replacement; p={_q(p)} s={_q(s)}; printf '%s' \"${{s{ops[m]}$p/<&>}}\""
             for s, p, m in cases]
    want = run_bash(lines)
    got = [P.replace(s, p, lambda t: f"<{t}>", m) for s, p, m in cases]
    assert got == want


def test_nocasematch_applies_to_replacement() -> None:
    cases = [("ABC", "b", "first"), ("ABAB", "a?", "all"), ("Abc", "a", "prefix"), ("abC", "c", "suffix"),
             ("xAy", "[a]", "all")]
    ops = {"first": "/", "all": "//", "prefix": "/#", "suffix": "/%"}
    lines = [f"shopt -s nocasematch; p={_q(p)} s={_q(s)}; printf '%s' \"${{s{ops[m]}$p/-}}\"" for s, p, m in cases]
    want = run_bash(lines)
    assert [P.replace(s, p, "-", m, nocase=True) for s, p, m in cases] == want


def test_many_stars_are_linear() -> None:
    import time as _t

    s = "a" * 5000
    t0 = _t.monotonic()
    assert not P.fnmatch("*a*a*a*a*a*a*a*b", s)
    assert P.strip_prefix(s, "*a*a*b", True) == s
    assert P.replace(s + "b", "*a*a*b", "x", "all") == "x"
    assert _t.monotonic() - t0 < 2


def test_timeout_is_enforced() -> None:
    import time as _t

    s = "a" * 5000
    t0 = _t.monotonic()
    with pytest.raises(TimeoutError):
        P.strip_prefix(s, "+(*a)b", True, timeout=0.2)
    assert _t.monotonic() - t0 < 10
    assert P.fnmatch("*.c", "x.c", timeout=1.0)


@pytest.mark.parametrize("opts", ["", "dotglob nocaseglob"])
def test_random_globs_against_bash(opts: str, glob_env: tuple[str, MemoryFS]) -> None:
    import random

    root, mem = glob_env
    rnd = random.Random(3)
    comps = ["*", "?", "a*", "*.*", "[a-c]*", ".*", "c", "d", "*/", "x*", "[!a]*", "@(a|c)", "!(a*)", "*.txt",
             "e", ".", "l*", "\\*", "..", "x", "+([a-z])"]
    pats = []
    while len(pats) < 300:
        p = "/".join(rnd.choice(comps) for _ in range(rnd.randint(1, 3))).replace("//", "/")
        if not p.startswith("..") and P.has_magic(p):
            pats.append(p)
    prelude = "shopt -s extglob nullglob" + (f"; shopt -s {opts}" if opts else "")
    want = run_bash([f"printf '%s\\n' {p}" for p in pats], prelude, cwd=root)
    flags = {o: True for o in opts.split()}
    for p, w in zip(pats, want):
        assert P.glob(mem, p, "/t", **flags) == ([] if w == "\n" else w.splitlines()), p
