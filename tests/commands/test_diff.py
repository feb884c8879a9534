"""diff, cmp, patch: differential tests against GNU diffutils 3.8 and GNU patch 2.7."""

from __future__ import annotations

import os
import random
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from harness_search import assert_same, make_fs, ours, real  # noqa: E402

A = "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n"
B = "a\nB\nc\nd\ne\nf\ng\nh\ni\nj\nk\n"
FILES = {
    "a": A,
    "b": B,
    "same": A,
    "noeol": "a\nb\nc",
    "noeol2": "a\nb\nC",
    "empty": "",
    "ws1": "hello world\n  indented\nTAB\there\ntrail \n\nend\n",
    "ws2": "hello   world\nindented\ntab\there\ntrail\n\n\nend\n",
    "bin": b"a\0b\n",
    "d1/f": "x\n",
    "d1/same": "s\n",
    "d1/only1": "1\n",
    "d1/sub/g": "z\n",
    "d1/sub/h": "h1\n",
    "d1/kind": "file\n",
    "d2/f": "y\n",
    "d2/same": "s\n",
    "d2/only2": "2\n",
    "d2/sub/g": "z\n",
    "d2/sub/h": "h2\n",
    "d2/kind/x": "dir\n",
}

CASES = [
    ["diff", "a", "b"],
    ["diff", "a", "same"],
    ["diff", "b", "a"],
    ["diff", "a", "empty"],
    ["diff", "empty", "a"],
    ["diff", "noeol", "noeol2"],
    ["diff", "a", "noeol"],
    ["diff", "-u", "--label", "L1", "--label", "L2", "a", "b"],
    ["diff", "-U1", "--label", "L1", "--label", "L2", "a", "b"],
    ["diff", "-U0", "--label", "L1", "--label", "L2", "a", "b"],
    ["diff", "-c", "--label", "L1", "--label", "L2", "a", "b"],
    ["diff", "-C1", "--label", "L1", "--label", "L2", "a", "b"],
    ["diff", "-u", "--label", "x", "--label", "y", "noeol", "noeol2"],
    ["diff", "-u", "--label", "x", "--label", "y", "empty", "a"],
    ["diff", "-c", "--label", "x", "--label", "y", "a", "empty"],
    ["diff", "-q", "a", "b"],
    ["diff", "-q", "a", "same"],
    ["diff", "-s", "a", "same"],
    ["diff", "-i", "ws1", "ws2"],
    ["diff", "-w", "ws1", "ws2"],
    ["diff", "-b", "ws1", "ws2"],
    ["diff", "-B", "ws1", "ws2"],
    ["diff", "-Bw", "ws1", "ws2"],
    ["diff", "-Z", "ws1", "ws2"],
    ["diff", "-iwB", "ws1", "ws2"],
    ["diff", "-t", "ws1", "ws2"],
    ["diff", "-T", "a", "b"],
    ["diff", "a", "bin"],
    ["diff", "-a", "a", "bin"],
    ["diff", "a", "nope"],
    ["diff", "nope", "a"],
    ["diff", "a"],
    ["diff", "a", "b", "c"],
    ["diff", "d1", "d2"],
    ["diff", "-r", "d1", "d2"],
    ["diff", "-rq", "d1", "d2"],
    ["diff", "-ru", "--label", "x", "--label", "y", "d1/sub", "d2/sub"],
    ["diff", "-rN", "d1", "d2"],
    ["diff", "d1/f", "d2"],
    ["diff", "-x", "sub", "-r", "d1", "d2"],
    ["cmp", "a", "b"],
    ["cmp", "a", "same"],
    ["cmp", "-s", "a", "b"],
    ["cmp", "-b", "a", "b"],
    ["cmp", "-l", "a", "b"],
    ["cmp", "-lb", "a", "b"],
    ["cmp", "noeol", "a"],
    ["cmp", "a", "noeol"],
    ["cmp", "empty", "a"],
    ["cmp", "a", "nope"],
    ["cmp", "-n", "3", "a", "b"],
    ["cmp", "-i", "4", "a", "b"],
]


@pytest.mark.parametrize("argv", CASES, ids=[" ".join(c) for c in CASES])
def test_diff_differential(argv: list[str]) -> None:
    assert_same(argv, FILES)


def _random_files(rng: random.Random, n: int, edits: int) -> tuple[str, str]:
    alpha = rng.choice(["ab", "abc", "abcdefgh", "aab"])
    a = [rng.choice(alpha) for _ in range(rng.randint(0, n))]
    b = list(a)
    for _ in range(rng.randint(0, edits)):
        op = rng.random()
        if op < 0.3 and b:
            del b[rng.randrange(len(b))]
        elif op < 0.6:
            b.insert(rng.randint(0, len(b)), rng.choice(alpha + "xyz"))
        elif b:
            b[rng.randrange(len(b))] = rng.choice(alpha + "xyz")
    da = "".join(x + "\n" for x in a)
    db = "".join(x + "\n" for x in b)
    if rng.random() < 0.2 and da:
        da = da[:-1]
    if rng.random() < 0.2 and db:
        db = db[:-1]
    return da, db


@pytest.mark.parametrize("seed", range(6))
def test_diff_random_identical_hunks(seed: int) -> None:
    """GNU's Myers variant + discard + shift_boundaries: the hunks must be byte-identical."""
    rng = random.Random(seed)
    for _ in range(8):
        da, db = _random_files(rng, 60 if seed % 2 else 15, 12)
        files = {"a": da, "b": db}
        for flags in ([], ["-u"], ["-c"], ["-U1"]):
            argv = ["diff", *flags, "--label", "A", "--label", "B", "a", "b"] if flags else ["diff", "a", "b"]
            x, y = ours(argv, files), real(argv, files)
            assert (x.stdout, x.status) == (y.stdout, y.status), (argv, da, db)


def test_diff_headers_timestamps() -> None:
    fs = make_fs(FILES)
    r = ours(["diff", "-u", "a", "b"], fs=fs)
    head = r.stdout.split(b"\n")[:2]
    assert head[0].startswith(b"--- a\t") and head[1].startswith(b"+++ b\t")
    assert head[0].endswith(b" +0000")


PATCH = "--- a\n+++ b\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n@@ -9,2 +9,3 @@\n i\n j\n+k\n"


@pytest.mark.parametrize("argv,stdin", [
    (["patch", "a"], PATCH),
    (["patch", "-p0", "a"], PATCH),
    (["patch", "--dry-run", "a"], PATCH),
    (["patch", "-R", "b"], PATCH),
    (["patch", "-i", "p.diff", "a"], ""),
    (["patch", "-p1"], "--- x/a\n+++ y/a\n@@ -2 +2 @@\n-b\n+BB\n"),
    (["patch", "-s", "a"], PATCH),
    (["patch", "a"], "--- a\n+++ a\n@@ -4,3 +4,3 @@\n c\n-d\n+D\n e\n"),
    (["patch", "a"], "2c2\n< b\n---\n> BB\n9a10,11\n> x\n> y\n"),
    (["patch", "a"], "3,4d2\n< c\n< d\n"),
    (["patch", "-p0"], "--- a\n+++ b\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"),
    (["patch", "-p0"], "--- p.diff\n+++ a\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"),
    (["patch", "b"], PATCH),
])
def test_patch(argv: list[str], stdin: str) -> None:
    files = {"a": A, "b": B, "p.diff": PATCH}
    fs = make_fs(files)
    r = ours(argv, fs=fs, stdin=stdin.encode())
    import subprocess
    import tempfile

    from harness_search import ENV, write_real
    with tempfile.TemporaryDirectory() as root:
        write_real(root, files)
        p = subprocess.run(argv, input=stdin.encode(), capture_output=True, cwd=root, env=ENV)
        theirs = {n: open(os.path.join(root, n), "rb").read() for n in sorted(os.listdir(root))}
    mine = {}
    for n in sorted(fs.listdir("/workspace")):
        with fs.open("/workspace/" + n) as fh:
            mine[n] = fh.read()
    assert (r.stdout, r.status) == (p.stdout, p.returncode), (r.stderr, p.stderr)
    assert mine == theirs


def test_patch_roundtrip_with_diff() -> None:
    fs = make_fs(FILES)
    d = ours(["diff", "-u", "a", "b"], fs=fs)
    r = ours(["patch", "a"], fs=fs, stdin=d.stdout)
    assert r.status == 0 and r.stdout == b"patching file a\n"
    with fs.open("/workspace/a") as fh:
        assert fh.read() == B.encode()


@pytest.mark.parametrize("flags", [["-u"], ["-c"], ["-U0"]])
def test_diff_headers_exact(flags: list[str]) -> None:
    import subprocess
    import tempfile

    from harness_search import ENV, write_real
    files = {"a": A, "b": B}
    # (the VFS keeps float mtimes: nanoseconds survive only when a float holds them exactly)
    stamps = {"a": (1700000000, 250000000), "b": (1700003600, 0)}
    fs = make_fs(files)
    for k, (sec, ns) in stamps.items():
        fs.utime("/workspace/" + k, (sec + ns / 1e9, sec + ns / 1e9))
    argv = ["diff", *flags, "a", "b"]
    r = ours(argv, fs=fs)
    with tempfile.TemporaryDirectory() as root:
        write_real(root, files)
        for k, (sec, ns) in stamps.items():
            os.utime(os.path.join(root, k), ns=(sec * 10**9 + ns, sec * 10**9 + ns))
        p = subprocess.run(argv, capture_output=True, cwd=root, env=ENV)
    assert (r.stdout, r.status) == (p.stdout, p.returncode)
