"""shell/printf.format's plain-format path (no conversion, no argument) against its general path."""

from __future__ import annotations

import random

from agentic_bash.shell import printf as pf


def test_plain_formats_match_the_general_path():
    """Random formats of text, one-letter escapes, other escapes, NUL, non-ASCII and
    lone surrogates: with no argument the answer is the general path's, which is what
    ``fmt + "%s"`` with one empty argument formats (the same bytes, status and errors)."""
    rnd = random.Random(1809)
    alphabet = ["a", "Z", " ", "\n", "\\", "\\n", "\\t", "\\\\", "\\e", "\\v", "\\q", "\\x41", "\\101",
                "\\u00e9", "\\c", "é", "\0", "\udcff", "'", '"', "\\'", "\\?"]
    plain = 0
    for _ in range(3000):
        fmt = "".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 8)))
        if "%" in fmt:
            continue  # (not plain: the general path either way, and "%s" would join a "%")
        got = pf.format(fmt, [])
        want = pf.format(fmt + "%s", [""])
        assert (got[0], got[1], list(got[2])) == (want[0], want[1], list(want[2])), repr(fmt)
        plain += pf._PLAIN_FORMAT.match(fmt) is not None
    assert plain > 300
