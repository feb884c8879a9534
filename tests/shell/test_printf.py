"""Differential tests of shell.printf against bash's printf builtin and echo -e."""

from __future__ import annotations

import re
import subprocess
import time

import pytest

from agentic_bash.shell.printf import echo_escapes, format as pformat

BASH = "/usr/bin/bash"
MARK = "\x01MARK"


def _q(s: str) -> str:
    return "'" + s.replace("'", "'\\''") + "'"


CASES: list[tuple[str, list[str]]] = [
    # escapes in the format
    ("a\\nb\\tc\\\\d", []), ("\\a\\b\\f\\r\\v\\e\\E", []), ("\\'\\\"\\?", []), ("\\101\\1234\\400\\0", []),
    ("\\x41\\x4g\\x", []), ("\\xg", []), ("\\u00e9\\u12\\U1F600\\ud800\\U110000", []), ("\\u", []),
    ("\\U", []), ("a\\cb", []), ("\\q\\%", []), ("trailing\\", []), ("%%|%5%|", []), ("100%", []),
    # %s %c %b %q
    ("%s\\n", ["a", "b", "c"]), ("%s %s\\n", ["a"]), ("%s-%d\\n", ["a", "1", "b", "2", "c"]), ("x\\n", ["a", "b"]),
    ("%5s|%-5s|%.2s|%5.1s|", ["ab", "ab", "abc", "abc"]), ("%05s|%-05s|", ["ab", "ab"]), ("%s", []),
    ("%c%c%c|", ["abc", "", "é"]), ("%c", []), ("%3c|%-3c|", ["x", "y"]), ("%.3s|%5s|", ["é€x", "é"]),
    ("%b|%b\\n", ["a\\0101\\101\\x41\\u00e9", "\\c", "z"]), ("%b", ["a\\cb", "x"]), ("%b|", ["\\'\\\"\\?\\q\\\\"]),
    ("%b", ["\\x"]), ("%b", ["\\u"]), ("%b", ["trail\\"]), ("%5b|%-5b|%.1b|", ["a\\tb", "x", "yz"]),
    ("%q|", ["a b"]), ("%q|%q|", ["", "it's"]), ("%q", ["\\n$x`"]), ("%-8q|%8q|%.3q|", ["a b", "x", "a b c"]),
    ("%q\\n", ["\t", "é", "a\nb"]),
    # integers
    ("%d %i", ["42", "-7"]), ("%d", ["abc"]), ("%d", ["12abc"]), ("%d", ["99999999999999999999"]),
    ("%d", ["-99999999999999999999"]), ("%u", ["-1"]), ("%u", ["-99999999999999999999"]), ("%x", ["99999999999999999999"]),
    ("%d %d %d", ["0x1f", "017", "0X10"]), ("%i", ["-0x10"]), ("%d", ["08"]), ("%d", ["0x"]), ("%d", ["0xg"]),
    ("%d", ["-"]), ("%d", ["+"]), ("%d", [" 5"]), ("%d", ["5 "]), ("%d", [""]), ("%d", [" "]), ("%d", ["1.5"]),
    ("%d %d %d %d", ["'A", "\"B", "'é", "'"]), ("%d", ["'\udcff"]), ("%x %X %o", ["255", "255", "8"]),
    ("%#x %#X %#o %#o %#x", ["255", "255", "8", "0", "0"]), ("%+d % d %+ d", ["5", "5", "5"]), ("%+u % x", ["5", "255"]),
    ("%05d|%-5d|%5d|%-05d|", ["42", "42", "-42", "3"]), ("%.3d|%.0d|%5.3d|%-8.3x|", ["-5", "0", "7", "255"]),
    ("%05.2d|%#.0o|%.0x|", ["3", "0", "0"]), ("%+08d|% 08d|%08x|", ["42", "42", "255"]), ("%'d", ["1234567"]),
    ("%hhd %ld %lld %jd %zd %hd", ["1", "2", "3", "4", "5", "6"]), ("%d %d", ["9223372036854775807", "-9223372036854775808"]),
    ("%o %x", ["-1", "-1"]), ("%*d|%-*d|", ["5", "42", "5", "42"]), ("%*d|", ["-5", "3"]), ("%.*d|", ["4", "7"]),
    ("%.*d|", ["-4", "7"]), ("%*.*d|", ["6", "3", "7"]), ("%*s|", ["x"]), ("%d", []), ("%x%o", []),
    # floats
    ("%f %e %g", ["3.14159", "3.14159", "3.14159"]), ("%.20f", ["0.1"]), ("%.0f %.0f %.0f %.0f", ["0.5", "1.5", "2.5", "-0.5"]),
    ("%g %g %g %g %g", ["100000", "1000000", "0.0001", "0.00001234567", "1e-5"]), ("%G %E", ["1e-10", "123.456"]),
    ("%#g %#.0f %#.0e %#x", ["1", "3", "5", "0"]), ("%+.0e %e", ["0", "0"]), ("%10.4f|%-10.3e|%08.3f|", ["-3.14159", "314.159", "-3.14159"]),
    ("%F %f %f %e %g", ["inf", "nan", "-nan", "-inf", "INFINITY"]), ("%5f|%-6f|%06f|", ["inf", "nan", "-inf"]),
    ("%f", ["abc"]), ("%f", ["1.5e"]), ("%f", ["0x1p3"]), ("%f", ["0x1.8p1"]), ("%f %f", ["'a", "\"b"]),
    ("%e", ["1e4000"]), ("%f", ["1e5000"]), ("%f", ["1e-5000"]), ("%.30e", ["1e-4000"]), ("%Lf", ["1e300"]),
    ("%a %a %a %A", ["1", "0", "-0", "255.5"]), ("%.3a|%.0a|%.1a|%#a|", ["1.1", "1.5", "1.96875", "1"]), ("%a", ["1e-4940"]),
    ("%.3g|%.0g|%.10g|%g", ["1234567", "0.5", "2.5", "123456789"]), ("%.15g %.17g %.18g", ["0.1", "0.1", "0.1"]),
    ("%f %f", ["  2.5", "+.5"]), ("%f", ["."]), ("%f", ["1e"]), ("%f", ["1e+"]), ("%g", ["-0"]), ("%.2f", ["2.675"]),
    ("%e", ["9.9999999"]), ("%.1e", ["9.96"]), ("%g", ["999999.5"]), ("%g", ["0.000099999995"]), ("%f", ["1.0000000000000000000001"]),
    ("%.3f", ["123456789012345678901234567890"]), ("%g", ["1e400"]), ("%e", ["4.9e-324"]), ("%e", ["0x1p-16445"]),
    ("%f", ["nan(123)"]), ("%f", ["infinit"]),
    # errors
    ("%z", []), ("ab%5", []), ("%", []), ("a%5.3", []), ("%y|", ["x"]), ("x%ky", []), ("%s%", ["a"]),
    ("%(%Y)X|", ["0"]), ("%5%", []),
    # time
    ("%(%Y-%m-%d %H:%M:%S)T|", ["0"]), ("%(%s)T|", ["1700000000"]), ("%()T|", ["3600"]), ("%10(%Y)T|%-6(%H)T|%.2(%Y)T|", ["0", "0", "0"]),
    ("%((%Y))T", ["0"]), ("%(%Y)T", ["abc"]),
    # %n consumes an argument
    ("%n%s", ["x", "y"]),
]


def _bash_script(cases: list[tuple[str, list[str]]]) -> str:
    lines = []
    for fmt, args in cases:
        argv = " ".join(_q(a) for a in args)
        lines.append(f"printf -- {_q(fmt)} {argv}; printf '{MARK}%s\\x01' $?; echo {MARK} >&2")
    return "\n".join(lines)


def bash_results(cases: list[tuple[str, list[str]]]) -> list[tuple[bytes, int, list[str]]]:
    r = subprocess.run([BASH], input=_bash_script(cases).encode("utf-8", "surrogateescape"), capture_output=True,
                       timeout=60, env={"LANG": "C.UTF-8", "PATH": "/usr/bin:/bin", "TZ": "UTC"})
    outs = re.findall(rb"(.*?)\x01MARK(\d+)\x01", r.stdout, re.S)
    errs = r.stderr.decode("utf-8", "surrogateescape").split(MARK + "\n")[:-1]
    assert len(outs) == len(errs) == len(cases)
    res = []
    for (out, rc), err in zip(outs, errs):
        msgs = [re.sub(r"^(?:/usr/bin/)?bash: line \d+: ", "", ln) for ln in err.splitlines()]
        res.append((out, int(rc), msgs))
    return res


@pytest.fixture(scope="module")
def table() -> list[tuple[bytes, int, list[str]]]:
    return bash_results(CASES)


@pytest.mark.parametrize("i", range(len(CASES)), ids=[repr(c) for c in CASES])
def test_against_bash(i: int, table: list[tuple[bytes, int, list[str]]]) -> None:
    fmt, args = CASES[i]
    got = pformat(fmt, args, localtime=time.gmtime)
    assert got == table[i]


def test_time_defaults() -> None:
    out, rc, errs = pformat("%(%s)T %(%s)T %(%s)T", ["-1", "-2"], now=1000.0, start_time=5.0)
    assert (out, rc, errs) == (b"1000 5 1000", 0, [])


ECHO = ["a\\101|\\0101|\\x41|\\x|\\u00e9|\\u|\\q|\\\"|\\'|\\?|\\e|\\E|\\\\|z\\", "x\\cy", "\\1234\\08|\\00000",
        "\\x4142\\u41\\U0001F600", "\\n\\t\\r\\a\\b\\f\\v", "plain é", "\\0", "\\c", "a\\", "\\xZ\\UZ"]


def test_echo_e_against_bash() -> None:
    script = "\n".join(f"echo -ne {_q(s)}; printf '{MARK}'" for s in ECHO)
    r = subprocess.run([BASH, "-c", script], capture_output=True, timeout=60, env={"LANG": "C.UTF-8"})
    outs = r.stdout.split(MARK.encode())[:-1]
    for s, want in zip(ECHO, outs):
        data, stop = echo_escapes(s)
        assert data == want, s
        assert stop == ("\\c" in s), s


def _random_cases(seed: int, count: int) -> list[tuple[str, list[str]]]:
    import random

    rnd = random.Random(seed)

    def num() -> str:
        k = rnd.random()
        if k < 0.3:
            return repr(rnd.uniform(-1e6, 1e6))
        if k < 0.5:
            return f"{rnd.randint(-99999, 99999)}e{rnd.randint(-320, 320)}"
        if k < 0.6:
            return f"{rnd.randint(0, 9)}.{rnd.randint(0, 10 ** rnd.randint(1, 25))}"
        if k < 0.7:
            return f"0x{rnd.randint(1, 2**40):x}p{rnd.randint(-100, 100)}"
        if k < 0.8:
            return f"{rnd.randint(1, 9)}e{rnd.randint(-4960, 4940)}"
        if k < 0.9:
            return str(rnd.choice([0.5, 1.5, 2.5, 0.125, 9.5, 99.5, 0.05, 0.15]) * rnd.choice([1, 10, -1]))
        return str(rnd.randint(-2**64, 2**64))

    cases = []
    for _ in range(count):
        conv = rnd.choice("feEgGaAFdiouxXsc")
        flags = "".join(rnd.sample("-+ #0", rnd.randint(0, 2)))
        w = rnd.choice(["", str(rnd.randint(1, 30))])
        p = rnd.choice(["", ".", "." + str(rnd.randint(0, 25))])
        cases.append((f"%{flags}{w}{p}{conv}|", [num()]))
    return cases


def test_random_conversions_against_bash() -> None:
    cases = _random_cases(11, 800)
    want = bash_results(cases)
    for (fmt, args), w in zip(cases, want):
        assert pformat(fmt, args) == w, (fmt, args)


def test_random_formats_against_bash() -> None:
    import random

    rnd = random.Random(3)
    toks = ["%", "%s", "%d", "%b", "%q", "%c", "%x", "%5", "%-", "%.", "%*", "*", ".", "5", "0", "#", "+", " ",
            "\\", "\\n", "\\0", "\\x4", "\\u", "a", "%%", "l", "h", ")T", "z", "\\c", "'", '"', "é", "%a", "%g"]
    args = ["", "a", "1", "-3", "0x1f", "\\t", "\\c", "'A", "x y", "08", "2.5", "é", "*", "%", "1e3"]
    cases = [("".join(rnd.choice(toks) for _ in range(rnd.randint(1, 6))),
              [rnd.choice(args) for _ in range(rnd.randint(0, 3))]) for _ in range(1000)]
    want = bash_results(cases)
    for (fmt, a), w in zip(cases, want):
        assert pformat(fmt, a) == w, (fmt, a)


def test_huge_precision_is_cheap_and_exact() -> None:
    import hashlib

    r = subprocess.run([BASH, "-c", "printf '%.17000f|%.43000e' 0.1 1e-4940"], capture_output=True, timeout=60)
    out, rc, _ = pformat("%.17000f|%.43000e", ["0.1", "1e-4940"])
    assert hashlib.md5(out).digest() == hashlib.md5(r.stdout).digest()
    t0 = time.monotonic()
    assert len(pformat("%.10000000f", ["1"])[0]) == 10000002
    assert time.monotonic() - t0 < 5
