"""Differential tests of shell.arith against real bash's $(( ))."""

from __future__ import annotations

import re
import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentic_bash.shell.arith import ArithError, evaluate, parse_int_constant

BASH = "/usr/bin/bash"

# Variables both sides start with.
SCALARS = {
    "s": "1 +", "p": " 5 ", "q": "x=", "w": "q", "v": "v", "zz": "z[1]+1", "n": "-5",
    "big": "9223372036854775807", "e": "", "ref": "n*2", "hex": "0x10", "oct": "010",
    "i": "1", "sp": "  ",
}
ARRAYS = {"z": {"0": "7", "1": "8"}}
ASSOC = {"A": {"k": "3", "a b": "4", "1+1": "9"}}


class FakeVars:
    def __init__(self) -> None:
        self.scalars = dict(SCALARS)
        self.arrays = {k: dict(v) for k, v in ARRAYS.items()}
        self.assoc = {k: dict(v) for k, v in ASSOC.items()}

    def get(self, name: str, index: str | None) -> str | None:
        if name in self.assoc:
            return self.assoc[name].get(index if index is not None else "0")
        if name in self.arrays:
            return self.arrays[name].get(index if index is not None else "0")
        if index not in (None, "0"):
            return None
        return self.scalars.get(name)

    def set(self, name: str, index: str | None, value: int) -> None:
        if name in self.assoc:
            self.assoc[name][index if index is not None else "0"] = str(value)
        elif name in self.arrays or index not in (None, "0"):
            arr = self.arrays.setdefault(name, {})
            if name in self.scalars:
                arr["0"] = self.scalars.pop(name)
            arr[index if index is not None else "0"] = str(value)
        else:
            self.scalars[name] = str(value)

    def is_assoc(self, name: str) -> bool:
        return name in self.assoc


def _q(s: str) -> str:
    return "'" + s.replace("'", "'\\''") + "'"


def _preamble() -> str:
    out = [f"{k}={_q(v)}" for k, v in SCALARS.items()]
    for k, arr in ARRAYS.items():
        out.append(f"{k}=(" + " ".join(f"[{i}]={_q(x)}" for i, x in arr.items()) + ")")
    for k, arr in ASSOC.items():
        out.append(f"declare -A {k}=(" + " ".join(f"[{_q(i)}]={_q(x)}" for i, x in arr.items()) + ")")
    return "\n".join(out) + "\n"


_PREFIX = re.compile(r"^(?:/usr/bin/)?bash: line \d+: ", re.M)


def bash_results(exprs: list[str]) -> list[str]:
    script = [_preamble()]
    for e in exprs:
        script.append(f"( trap 'echo \"x=$x y=$y z=${{z[*]}}\"' EXIT; echo \"=$(( {e}))\" ) 2>&1; echo '@@'")
    r = subprocess.run([BASH, "-c", "\n".join(script)], capture_output=True, timeout=60,
                       env={"LANG": "C.UTF-8", "PATH": "/usr/bin:/bin"})
    assert r.stderr == b"", r.stderr
    chunks = r.stdout.decode().split("@@\n")[:-1]
    assert len(chunks) == len(exprs)
    return [_PREFIX.sub("", c).rstrip("\n") for c in chunks]


def ours(expr: str) -> str:
    v = FakeVars()
    try:
        return f"={evaluate(expr, v)}\n" + _state(v)
    except ArithError as e:
        # bash aborts the command; the subshell's variables show the side effects so far
        return e.message + "\n" + _state(v)


def _state(v: FakeVars) -> str:
    z = " ".join(v.arrays["z"][k] for k in sorted(v.arrays["z"], key=int))
    return f"x={v.scalars.get('x', '')} y={v.scalars.get('y', '')} z={z}"


CASES = [
    # constants and bases
    "0", "1", "42", "017", "0x1F", "0X1f", "0xff", "2#101", "8#17", "16#ff", "36#Zz", "37#Zz", "64#Zz",
    "64#@_", "64#_", "10#08", "08", "09", "0#1", "1#1", "65#1", "2#", "2#3", "0x", "0xg", "1a",
    "99999999999999999999", "0xFFFFFFFFFFFFFFFF", "9223372036854775807", "9223372036854775808",
    "37#Zz + 1", "08 + 1", "0x1 + 09", "5 08", "x 08", "0x 1", "2##1", "10#", "1 + 2#",
    # basic operators and precedence
    "1+2*3", "(1+2)*3", "10-4-3", "2*3+4*5", "100/7", "100%7", "-7/2", "-7%2", "7%-2", "-7/-2",
    "2**10", "2**63", "2**64", "2**62*2", "-2**2", "(-2)**3", "2**3**2", "0**0", "1**0", "2**-1",
    "3**40", "-3**41", "7**-0",
    "1<2", "2<1", "1<=1", "2>=3", "3>2", "1==1", "1!=1", "1==1==1", "5>4>3",
    "1&&0", "1&&2", "0||0", "0||3", "!0", "!5", "!!7", "~5", "~-1", "-5", "+5", "- -5", "--5",
    "-+-+5", "5&3", "5|3", "5^3", "1<<4", "256>>4", "1<<63", "1<<64", "1<<-1", "-8>>65",
    "-8<<65", "7>>70", "-1>>1", "-9223372036854775808/-1", "-9223372036854775808%-1",
    "9223372036854775807+1", "-9223372036854775807-2", "9223372036854775807*2",
    "1|2^3&4", "1+2<<3", "1<2==1", "1&1==1", "3>2?4:5", "0?1:0?2:3", "1?2:3?4:5", "1,2,3",
    "1 , 2", "(1,2)+3",
    # whitespace
    "  3 / 0  ", " 1 +", "\t1\n+\n2", "", "   ",
    # variables
    "x", "x+1", "n", "n*n", "ref", "ref+1", "hex+oct", "p", "p + 1", "s", "s+1", "q", "w", "v",
    "e", "e+1", "sp", "sp+1", "big+1", "-n", "zz", "z", "z[0]", "z[1]", "z[2]", "z[ 1 ]", "z[i]",
    "z[i-1]+z[i]", "z[1/0]", "z[1/0]=5", "A[k]", "A[a b]", "A[1+1]", "A[2]", "A[k]+A[a b]",
    "z[i]++, z[1]", "++z[0], z[0]", "A[k]*=2, A[k]", "A[new]=5, A[new]",
    # assignments
    "x=5", "x=5, x", "x=y=3, x+y", "x=5, x+=2, x", "x=3, x<<=1, x>>=1, x&=6, x|=9, x^=4, x%=5, x*=7, x-=1, x/=2",
    "x/=0", "x%=0", "x=7, x/=2", "x=-7, x%=2, x", "n-=1, n", "u=2", "A_B1=3, A_B1*2",
    "x=1, 1 + x += 2", "1 + x = 5", "1 = 2", "y=1, y++ + x = 5", "1 ? 2 : x = 3", "1 || x = 3",
    "1 | x = 3", "-x = 3", "(x) = 3", "x=3, x++ = 7", "c=3, c**=2", "x = 1 ? 2 : 3",
    "0 ? x = 1 : 2", "x ? y : z",
    # increments
    "x++", "x++, x", "++x", "x--, x", "--x, x", "b=1,b++ + ++b", "x-- - --x", "x+++x", "x++ + ++x",
    "++n", "n++, n", "--x++", "++x++", "-- ++x", "5++", "++", "++5", "x ++ 1", "x=5, x++, x++, x",
    "i++ + i++ + i", "big++, big",
    # short circuit and noeval
    "0 && 1/0", "1 || 1/0", "0 && 2**-1", "0 && (x/=0)", "0 && x++, x", "1 || (x=5), x",
    "1 ? 2 : 1/0", "0 ? 1/0 : 2", "1 ? 1/0 : 2", "1 ?(x=9):5, x", "0 ?(x=9):5, x",
    "0 && (x=1) || (y=2), x, y", "0 && s", "1 || v", "0 && z[1/0]", "1 && 0 && x++, x",
    # errors
    "1/0", "1/0 + 3", "3 + 1/0", "1%0", "1 +", "1 + 2 3", "1 1", "x y", "x @", "1 + x @",
    "1 + 2 @", "(1) @", "1.5", "1 @ 2", "$", "3 +$", "~", "!", "1,,2", "1 ? 2", "1 ? : 2",
    "1 ? 2 3", "1 ? 2 : ", "x=", "a[", "a[1", "a[1]]", "x [", "1 ( 2 )", "x=5 @", "x++ @",
    "1 ? 2 :3 ", "5 5 ", "1 +\t", "* 3", "= 3", "x=(1/0 + 3)",
    # bash evaluates while parsing: effects and runtime errors before a syntax error
    "1/0 + 08", "x=(1/0 + 08)", "x=1, 1 +", "x=1, y=2 @", "x++ @", "++x @", "++x++", "x=5 1", "(x=3) @",
    "x=2, x ? 3", "x=2, x ? (y=1) 5", "0 ? (x=1) : (y=2) @", "1 ? (x=1) : (y=2) @", "0 && (x=1) @",
    "1 && (x=1) @", "1 || (x=1) @", "x+=2 @", "x+=2, 1 = 2", "x=3, x**08", "x=1, 1/0 @", "1/0 @",
    "z[1]++ +", "x = 1 +", "x = y = 2 +", "(x=7) ** @", "2 * 1/0 * 08", "3 - x++ - 08",
    "0 && 1/0 + 08", "x=9, 0 ? 1 : 08",
]



@pytest.fixture(scope="module")
def bash_table() -> dict[str, str]:
    return dict(zip(CASES, bash_results(CASES)))


@pytest.mark.parametrize("expr", CASES)
def test_against_bash(expr: str, bash_table: dict[str, str]) -> None:
    assert ours(expr) == bash_table[expr]


def test_side_effects_and_protocol() -> None:
    v = FakeVars()
    assert evaluate("x = 3, y = x * 2, z[5] = y", v) == 6
    assert v.scalars["x"] == "3" and v.scalars["y"] == "6" and v.arrays["z"]["5"] == "6"
    calls: list[tuple[str, str | None]] = []

    class Spy(FakeVars):
        def get(self, name: str, index: str | None) -> str | None:
            calls.append((name, index))
            return super().get(name, index)

    evaluate("A[1+1] + z[i+1]", Spy())
    assert calls == [("A", "1+1"), ("i", None), ("z", "2")]


def test_recursion_limit() -> None:
    with pytest.raises(ArithError) as ei:
        evaluate("v", FakeVars())
    assert ei.value.message == 'v: expression recursion level exceeded (error token is "v")'


def test_deep_nesting_does_not_crash() -> None:
    e = "(" * 100 + "1" + ")" * 100
    assert evaluate(e, FakeVars()) == 1
    assert evaluate("+".join(["1"] * 5000), FakeVars()) == 5000


def test_parse_int_constant() -> None:
    assert parse_int_constant("0x1F") == 31
    assert parse_int_constant("64#@_") == 4031
    with pytest.raises(ValueError):
        parse_int_constant("08")


# --------------------------------------------------------------------- hypothesis

_BINOPS = ["+", "-", "*", "/", "%", "<<", ">>", "<", ">", "<=", ">=", "==", "!=", "&", "^", "|",
           "&&", "||", "**", ","]
_ATOMS = st.one_of(
    st.integers(min_value=0, max_value=2**63 - 1).map(str),
    st.integers(min_value=0, max_value=300).map(str),
    st.sampled_from(["x", "y", "n", "big", "0x7f", "010", "2#1011", "x++", "--y", "z[1]"]),
)


def _expr() -> st.SearchStrategy[str]:
    return st.recursive(
        _ATOMS,
        lambda sub: st.one_of(
            st.tuples(sub, st.sampled_from(_BINOPS), sub).map(lambda t: f"{t[0]} {t[1]} {t[2]}"),
            st.tuples(st.sampled_from(["-", "!", "~", "+"]), sub).map(lambda t: f"{t[0]}({t[1]})"),
            sub.map(lambda s: f"({s})"),
            st.tuples(sub, sub, sub).map(lambda t: f"{t[0]} ? {t[1]} : {t[2]}"),
            st.tuples(st.sampled_from(["x", "y"]), st.sampled_from(["=", "+=", "*=", "-=", "<<=", "|="]), sub)
            .map(lambda t: f"{t[0]} {t[1]} ({t[2]})"),
        ),
        max_leaves=12,
    )


@settings(deadline=None, max_examples=15)
@given(st.lists(_expr(), min_size=40, max_size=40))
def test_random_expressions_match_bash(exprs: list[str]) -> None:
    # append the variables so side effects are compared too
    exprs = [f"{e}, x, y" if i % 2 else e for i, e in enumerate(exprs)]
    expected = bash_results(exprs)
    for e, want in zip(exprs, expected):
        assert ours(e) == want, e
