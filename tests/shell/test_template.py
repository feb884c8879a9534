"""shell/template.py: a tree built from a line's shape equals the tree the parser makes."""

from __future__ import annotations

import glob
import os

import pytest

from agentic_bash import Sandbox
from agentic_bash.shell import template as T
from agentic_bash.shell.parser import parse_with_warnings as parse

HERE = os.path.dirname(__file__)


def _corpus() -> list[str]:
    scripts: list[str] = []
    for f in sorted(glob.glob(os.path.join(HERE, "..", "spec", "cases", "*.txt"))):
        cur: list[str] = []
        with open(f, encoding="utf-8", errors="surrogateescape") as fh:
            for line in fh:
                if line.startswith("## "):
                    if cur:
                        scripts.append("".join(cur))
                    cur = []
                else:
                    cur.append(line)
        if cur:
            scripts.append("".join(cur))
    return scripts + [ln for s in scripts for ln in s.splitlines() if ln.strip()]


EXTRA = [
    "if [ 5 -gt 3 ]; then echo y; else echo n; fi",
    "for i in 1 2 3; do echo $i; done",
    "case x7 in x1) echo one;; *) echo other;; esac",
    "printf 'a1\\nb\\n' | grep -c a",
    "i=0; while [ $i -lt 3 ]; do i=$((i+1)); done; echo 9",
    "echo 'it''s' \"two words\" plain 2>/dev/null",
    "[[ -f /etc/passwd && abc == a* ]] && echo yes",
    "cat <<EOF\nx 1\nEOF",
    "a=(1 2 3); echo ${a[@]: 1: 1} x",
    "echo 'multi\nline' after",
    "for 1 in a; do :; done",
    "echo 1>&2 7 2> err",
    "ls -la /tmp | head -5 | wc -l",
    "echo a+b c@d 'x=1' \"y=2\" e+f 7",
    "grep -c a@b+c 'q=r' 4 && echo 'k=v' 5",
    "echo $x 'a=1' 6 \"$y\" b+@ 8",
]


def test_shapes_build_the_parsers_tree():
    used = 0
    for s in _corpus() + EXTRA:
        for eg in (False, True):
            try:
                ref, warns = parse(s, extglob=eg)
            except Exception:  # noqa: BLE001 - an error must not be templated either
                ref, warns = None, None
            got = T.templated(s, eg, parse)
            if got is None:
                continue
            used += 1
            assert ref is not None and not warns, s
            assert got == ref, s
    assert used > 2000  # the shapes cover much of the corpus


def test_lines_that_differ_in_digits_build_the_parsers_tree():
    """Each corpus line with digits, then the same line with its digit runs changed (the
    skeleton cache answers those): every templated tree equals the parser's."""
    import re

    rnd = __import__("random").Random(18)
    used = 0
    for s in _corpus() + EXTRA:
        if not re.search(r"\d", s):
            continue
        variants = [s] + [re.sub(r"\d+", lambda m: rnd.choice(["0", "7", "12345", m.group(0), "99"]), s)
                          for _ in range(3)]
        for v in variants:
            try:
                ref, warns = parse(v, extglob=False)
            except Exception:  # noqa: BLE001
                ref, warns = None, None
            got = T.templated(v, False, parse)
            if got is None:
                continue
            used += 1
            assert ref is not None and not warns, v
            assert got == ref, v
    assert used > 1000


@pytest.mark.parametrize("script,want", [
    ("for i in 1 2 {n}; do echo $i; done", "1\n2\n{n}\n"),
    ("if [ {n} -gt 3 ]; then echo big; else echo small; fi", None),
    ("echo 'x {n}' | tr a-z A-Z", "X {n}\n"),
])
def test_new_lines_of_one_shape_run_right(script, want):
    with Sandbox(isolation="virtual") as sb:
        for n in (1, 5, 42, 7):
            r = sb.run(script.replace("{n}", str(n)))
            exp = want.replace("{n}", str(n)) if want else ("big\n" if n > 3 else "small\n")
            assert r.stdout == exp


def _simples(node, out):  # noqa: ANN001, ANN202
    from agentic_bash.shell import nodes as N
    t = type(node)
    if t is N.Simple:
        out.append(node)
    if t is tuple:
        for x in node:
            _simples(x, out)
    elif hasattr(t, "__dataclass_fields__"):
        for f in t.__dataclass_fields__:
            _simples(getattr(node, f), out)
    return out


def test_plans_set_by_the_builder_are_the_interpreters():
    """A Simple built from a shape may carry its execution plan already (made from the
    shape's plan and the values): it must be the plan interpreter._simple_plan makes for
    the parser's node, for corpus lines and their digit variants."""
    import re

    from agentic_bash.shell.interpreter import _simple_plan

    rnd = __import__("random").Random(1818)
    preset = 0
    for s in _corpus() + EXTRA:
        variants = [s] + ([re.sub(r"\d+", lambda m: rnd.choice(["0", "7", "12345", "99"]), s) for _ in range(2)]
                          if re.search(r"\d", s) else [])
        for v in variants:
            got = T.templated(v, False, parse)
            if got is None:
                continue
            ref, _ = parse(v, extglob=False)
            for g, r in zip(_simples(got, []), _simples(ref, []), strict=True):
                if g.plan is not None:
                    preset += 1
                    object.__setattr__(r, "plan", None)
                    assert g.plan == _simple_plan(r), v
    assert preset > 500


def test_remembered_subtrees_follow_every_value_they_hold():
    """Branches, case arms and commands are remembered by the values they hold (nested
    ones included): lines of one shape with values changed in random positions, sent
    interleaved, each build the parser's tree."""
    import re

    shapes = [
        "if [ 1 -gt 2 ]; then echo 3; elif [ 4 -lt 5 ]; then echo 6 7; else echo 8; fi",
        "case x1 in x2) echo 3;; x4|x5) echo 6; echo 7;; *) echo 8;; esac",
        "for i in 1 2; do if [ $i -eq 3 ]; then echo 4; fi; done",
        "while [ 1 -lt 2 ]; do echo 3; break; done; echo 4 | grep -c 5",
        "{ echo 1; echo 2; } | sort -k3 | head -4",
    ]
    rnd = __import__("random").Random(1821)
    used = 0
    for _ in range(400):
        s = rnd.choice(shapes)
        v = re.sub(r"\d+", lambda m: rnd.choice([m.group(0), "1", "2", "9", "12"]), s)
        ref, warns = parse(v, extglob=False)
        got = T.templated(v, False, parse)
        if got is None:
            continue
        used += 1
        assert not warns and got == ref, v
    assert used > 300
