"""_regex: POSIX BRE/ERE translation, leftmost-longest matching, messages, locales, timeouts."""

from __future__ import annotations

import os
import random
import sys
import time

import pytest

from agentic_bash.commands._regex import (
    RegexError, compile_patterns, compile_posix, from_text, to_text, translate, utf8_locale,
)

sys.path.insert(0, os.path.dirname(__file__))
from harness_search import ours, real  # noqa: E402


@pytest.mark.parametrize("pat,ext,msg", [
    ("[a", False, "Unmatched [, [^, [:, [., or [="),
    ("\\(a", False, "Unmatched ( or \\("),
    ("(a", True, "Unmatched ( or \\("),
    ("a\\)", False, "Unmatched ) or \\)"),
    ("a\\{1", False, "Unmatched \\{"),
    ("a\\{2,1\\}", False, "Invalid content of \\{\\}"),
    ("a{1,2,3}", True, "Invalid content of \\{\\}"),
    ("a\\{99999\\}", False, "Regular expression too big"),
    ("[[:nope:]]", False, "Invalid character class name"),
    ("[z-a]", False, "Invalid range end"),
    ("a\\", False, "Trailing backslash"),
    ("\\(a\\)\\2", False, "Invalid back reference"),
    ("[[.ab.]]", False, "Invalid collation character"),
])
def test_errors(pat: str, ext: bool, msg: str) -> None:
    with pytest.raises(RegexError) as ei:
        compile_posix(pat, extended=ext)
    assert str(ei.value) == msg


@pytest.mark.parametrize("pat,ext,subject,want", [
    ("x*\\(xy\\)\\{0,1\\}", False, "xxy", "xxy"),   # leftmost-longest, not leftmost-first
    ("(a|ab)(c|bcd)", True, "abcd", "abcd"),
    ("a|ab", True, "ab", "ab"),
    ("a**", False, "aaa", "aaa"),
    ("*a", False, "*a", "*a"),                      # BRE: leading * is literal
    ("a\\{2\\}", False, "aaaa", "aa"),
    ("[]a]*", False, "]a]b", "]a]"),
    ("\\(ab\\)\\1", False, "xabab", "abab"),
])
def test_longest_match(pat: str, ext: bool, subject: str, want: str) -> None:
    m = compile_posix(pat, extended=ext).rx.search(subject)
    assert m is not None and m.group() == want


def test_bytes_and_locales() -> None:
    raw = "héllo".encode() + b"\xff"
    assert from_text(to_text(raw, True), True) == raw
    assert from_text(to_text(raw, False), False) == raw
    u = compile_posix(b"h.l", extended=False, utf8=True)
    c = compile_posix(b"h..l", extended=False, utf8=False)
    assert u.rx.search(to_text(raw, True)) and c.rx.search(to_text(raw, False))
    assert utf8_locale({"LANG": "C.UTF-8"}) and not utf8_locale({"LANG": "C.UTF-8", "LC_ALL": "C"})
    assert not utf8_locale({})


def test_buffer_mode_never_crosses_lines() -> None:
    for pat in ("[^a]*b", "a\\s*b", "a\\W*b", "a[[:space:]]*b", "a[\x01-z]*b", "a.*b"):
        rx = compile_posix(pat, extended=False, buffer=True)
        assert all("\n" not in m.group() for m in rx.rx.finditer("a\nb")), pat
        assert rx.rx.search("a\nb") is None or pat.startswith("[^"), pat
        assert rx.rx.search("xa b") is not None, pat


def test_multiple_patterns_keep_backref_numbering() -> None:
    rx = compile_patterns(("\\(a\\)\\1", "\\(b\\)\\1"), mode="G")
    assert rx.rx.search("bb") and not rx.rx.search("ab")


def test_translate_reports_warnings() -> None:
    assert translate("*a", extended=True)[2] == ("* at start of expression",)
    assert translate("a*", extended=True)[2] == ()


def test_timeout_on_catastrophic_pattern() -> None:
    rx = compile_posix("(a|aa)+$", extended=True)
    t = time.monotonic()
    with pytest.raises(TimeoutError):
        rx.fast.search("a" * 60 + "b", timeout=0.3)
    assert time.monotonic() - t < 30  # without the timeout this would run for years


@pytest.mark.parametrize("seed", range(3))
def test_random_bre_against_grep(seed: int) -> None:
    rng = random.Random(seed)
    toks = ["a", "b", ".", "*", "\\(", "\\)", "\\|", "\\+", "\\?", "[ab]", "[^a]", "^", "$",
            "\\{1,2\\}", "\\{2\\}", "\\1", "x", "\\<", "\\>", "\\w", "[[:alpha:]]", "a*"]
    for _ in range(15):
        pat = "".join(rng.choice(toks) for _ in range(rng.randint(1, 6)))
        lines = ["".join(rng.choice("abx ") for _ in range(rng.randint(0, 8))) for _ in range(4)]
        stdin = ("\n".join(lines) + "\n").encode()
        argv = ["grep", "-on", "--", pat]
        a, b = ours(argv, None, stdin=stdin), real(argv, None, stdin=stdin)
        assert (a.stdout, a.status, a.stderr) == (b.stdout, b.status, b.stderr), pat
