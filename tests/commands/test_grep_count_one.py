"""grep -c / -vc of one literal: the one-read count path (Grep.count_one) vs GNU grep."""

from __future__ import annotations

import random

from harness_files import compare


def test_count_one_literal_matches_gnu(monkeypatch):
    """Inputs that are one read (empty, no final newline, blank lines, non-ASCII, bytes
    that are not UTF-8), with a NUL (binary: the general path), and larger than one read
    (the reads made go to the general path): -c, -vc, -c with two files, -ch, -cH,
    against GNU grep; the one-read path must have answered some of them."""
    from agentic_bash.commands import grepcmd

    seen = {"one": 0, "general": 0}
    general = grepcmd._Grep.search_stream

    def counting(self, stream, display, pre=None, rest=None):  # noqa: ANN001, ANN202
        seen["general"] += pre is not None
        return general(self, stream, display, pre, rest)

    one = grepcmd._Grep.count_one

    def counting_one(self, stream, display):  # noqa: ANN001, ANN202
        seen["one"] += 1
        return one(self, stream, display)

    monkeypatch.setattr(grepcmd._Grep, "search_stream", counting)
    monkeypatch.setattr(grepcmd._Grep, "count_one", counting_one)
    rnd = random.Random(1820)
    pieces = [b"a", b"b", b"ab", b"x\n", b"\n", b"aa\n", b"\xc3\xa9", b"\xff", b" ", b"ba a\n"]
    checked = 0
    for i in range(80):
        body = b"".join(rnd.choice(pieces) for _ in range(rnd.randint(0, 12)))
        if i % 10 == 3:
            body += b"\0a\n"
        if i % 10 == 7:
            body = body * (70000 // max(1, len(body)) + 1) if body else b"a\n" * 40000
        lit = rnd.choice(["a", "ab", "é", "b a"])
        opts = rnd.choice([["-c"], ["-vc"], ["-c", "-v"]])
        a, b = compare(["grep", *opts, lit], stdin=body)
        assert (a.stdout, a.stderr, a.status) == (b.stdout, b.stderr, b.status), (opts, lit, body[:80])
        files = {"f1": body, "f2": body[::-1]}
        for more in (["f1", "f2"], ["-h", "f1", "f2"], ["-H", "f1"], ["f1", "-"]):
            a, b = compare(["grep", *opts, lit, *more], files=files, stdin=body[:5])
            assert (a.stdout, a.stderr, a.status) == (b.stdout, b.stderr, b.status), (opts, lit, more, body[:80])
        checked += 1
    assert checked == 80
    assert seen["general"] >= 8 and seen["one"] - seen["general"] >= 200, seen
