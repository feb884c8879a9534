"""issue 18: cut's one-range regex and sed's s/literal/literal/ per-line replace vs GNU (random inputs)."""

from __future__ import annotations

import random

from harness_files import compare


def _lines(rnd: random.Random, alpha: str) -> bytes:
    lines = ["".join(rnd.choice(alpha) for _ in range(rnd.randint(0, 12))) for _ in range(rnd.randint(0, 8))]
    return ("\n".join(lines) + rnd.choice(["\n", "", "\n\n"])).encode()


def test_cut_one_field_range_matches_gnu():
    """Lines with no delimiter, fewer delimiters than the field, empty lines, an
    unterminated last line, regex-special delimiters; -f N, N-M, N-, --complement."""
    rnd = random.Random(18)
    checked = 0
    for _ in range(150):
        text = _lines(rnd, rnd.choice([" ab", ":ab\t", " ", "x y:", ".a\\", "]^-a"]))
        d = rnd.choice([" ", ":", "\t", ".", "\\", "]", "^", "-"])
        lo = rnd.randint(1, 5)
        spec = rnd.choice([f"{lo}", f"{lo}-{lo + rnd.randint(0, 3)}", f"{lo}-"])
        argv = ["cut", "-d", d, "-f", spec] + rnd.choice([[], ["--complement"], ["--output-delimiter=,"]])
        a, b = compare(argv, stdin=text)
        assert (a.stdout, a.status) == (b.stdout, b.status), (argv, text)
        checked += 1
    assert checked == 150


def test_sed_literal_first_per_line_matches_gnu():
    """s/lit/rep/ (first occurrence on each line) against GNU sed, with occurrences that
    overlap, repeat on a line, sit at line ends, and replacements that are empty or hold a
    backslash; the g and N forms run the general path alongside."""
    rnd = random.Random(81)
    checked = 0
    for _ in range(150):
        text = _lines(rnd, rnd.choice(["abk", "kk a", "x\\y", "aab", "é a"]))
        pat = rnd.choice(["k", "a", "aa", "ab", "é", "\\\\"])
        rep = rnd.choice(["K", "", "\\\\", "Z", "é", "&x"])
        argv = ["sed", f"s/{pat}/{rep}/" + rnd.choice(["", "", "2", "g"])]
        a, b = compare(argv, stdin=text)
        assert (a.stdout, a.status) == (b.stdout, b.status), (argv, text)
        checked += 1
    assert checked == 150
