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


def test_cut_one_field_whole_block_matches_gnu(monkeypatch):
    """-f N where every line (or all but one) has N-1 delimiters: the newline-led regex
    answers the block, or its match count falls short and the general regex does."""
    from agentic_bash.commands import fieldutils

    hits = [0, 0]
    block = fieldutils._one_field_block

    def counting(text, rx, *size):  # noqa: ANN001, ANN002, ANN202
        got = block(text, rx, *size)
        hits[got is not None] += 1
        return got

    monkeypatch.setattr(fieldutils, "_one_field_block", counting)
    rnd = random.Random(1818)
    for i in range(120):
        d = rnd.choice([" ", ":", "\t", ".", "]"])
        n = rnd.randint(1, 4)
        lines = []
        for _ in range(rnd.randint(1, 9)):
            k = rnd.randint(n - 1, n + 2)
            lines.append(d.join("".join(rnd.choice("ab c:.") for _ in range(rnd.randint(0, 3))) for _ in range(k + 1)))
        if i % 4 == 0:
            lines.insert(rnd.randrange(len(lines) + 1), rnd.choice(["", "plain", "x" + d]))
        text = ("\n".join(lines) + rnd.choice(["\n", ""])).encode()
        a, b = compare(["cut", "-d", d, "-f", str(n)], stdin=text)
        assert (a.stdout, a.status) == (b.stdout, b.status), (d, n, text)
    assert hits[1] > 50 and hits[0] > 5, hits


def test_cut_one_field_grouped_lines_match_gnu(monkeypatch):
    """-f N over blocks of many lines: the 16-lines-per-match pattern answers the first
    multiple of 16 lines and the one-line pattern the rest; a short line among the
    grouped ones or the rest (first, middle, last) sends the block to the general regex.
    N above 16 has no grouped pattern."""
    from agentic_bash.commands import fieldutils

    paths = {"fast": 0, "fallback": 0}
    block = fieldutils._one_field_block

    def counting(text, rx, *size):  # noqa: ANN001, ANN002, ANN202
        got = block(text, rx, *size)
        paths["fast" if got is not None else "fallback"] += 1
        return got

    monkeypatch.setattr(fieldutils, "_one_field_block", counting)
    rnd = random.Random(1819)
    for i in range(60):
        d = rnd.choice([" ", ":", "\t", "."])
        n = rnd.choice([1, 2, 3, 5, 16, 17])
        count = rnd.choice([15, 16, 17, 31, 32, 33, 47, 100, 161])
        lines = [d.join("".join(rnd.choice("ab c:.") for _ in range(rnd.randint(0, 3)))
                        for _ in range(rnd.randint(n - 1, n + 2) + 1)) for _ in range(count)]
        if i % 3 == 0:
            short = d.join(["x"] * rnd.randint(1, max(1, n - 1))) if n > 1 else ""
            lines[rnd.choice([0, count // 2, count - 1, rnd.randrange(count)])] = short if n > 1 else "plain"
        text = ("\n".join(lines) + rnd.choice(["\n", ""])).encode()
        a, b = compare(["cut", "-d", d, "-f", str(n)], stdin=text)
        assert (a.stdout, a.status) == (b.stdout, b.status), (d, n, text)
    assert paths["fast"] > 20 and paths["fallback"] > 5, paths


def test_cut_fast_field_pattern_matches_gnu(monkeypatch):
    """-f N (N <= 16) where lines have a delimiter after the field: the [^D]*+ pattern (32
    lines per match) answers the block; a line whose field ends it or that is short (first,
    middle, among the last lines, last) makes its count fall short, and the other patterns
    answer. Every output as GNU cut's."""
    from agentic_bash.commands import fieldutils

    sizes = {"fast": 0, "fast-miss": 0}
    block = fieldutils._one_field_block

    def counting(text, rx, *size):  # noqa: ANN001, ANN002, ANN202
        got = block(text, rx, *size)
        if size:
            sizes["fast" if got is not None else "fast-miss"] += 1
        return got

    monkeypatch.setattr(fieldutils, "_one_field_block", counting)
    rnd = random.Random(1811)
    for i in range(80):
        d = rnd.choice([" ", ":", "\t", ".", "]", "\\", "-"])
        n = rnd.choice([1, 2, 3, 7, 16])
        count = rnd.choice([1, 5, 31, 32, 33, 64, 65, 100, 200])
        lines = [d.join("".join(rnd.choice("ab c:.]-") for _ in range(rnd.randint(0, 4)))
                        for _ in range(n + rnd.randint(1, 3))) for _ in range(count)]
        if i % 2 == 0:
            k = rnd.choice([0, count // 2, count - 1, max(0, count - 3), rnd.randrange(count)])
            lines[k] = rnd.choice([d.join(["x"] * n), d.join(["y"] * max(1, n - 1)), "", "plain"])
        text = ("\n".join(lines) + rnd.choice(["\n", ""])).encode()
        a, b = compare(["cut", "-d", d, "-f", str(n)], stdin=text)
        assert (a.stdout, a.status) == (b.stdout, b.status), (d, n, text)
    assert sizes["fast"] > 20 and sizes["fast-miss"] > 5, sizes


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


def test_grep_count_one_literal_matches_gnu():
    """grep -c / -vc of one literal (counted by one regex over the block): lines holding it
    twice, empty lines, an unterminated last line, regex-special literals, UTF-8 text."""
    rnd = random.Random(1881)
    for _ in range(120):
        text = _lines(rnd, rnd.choice(["ab.", "a*b ", "é a", "k1 ", "x\\y"]))
        if rnd.random() < 0.3:
            text = text * rnd.randint(2, 50)  # several lines per block, repeats
        lit = rnd.choice(["a", "ab", "k1", ".", "a*", "é", "\\"])
        argv = ["grep"] + rnd.choice([["-c"], ["-vc"], ["-cF"], ["-c", "-e"]]) + [lit]
        a, b = compare(argv, stdin=text)
        assert (a.stdout, a.status) == (b.stdout, b.status), (argv, text)
