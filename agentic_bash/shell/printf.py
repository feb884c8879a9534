"""The printf builtin's formatting (bash 5.2 printf.def over glibc printf) and echo -e escapes."""

# Output is bytes: arguments are str whose undecodable bytes are surrogateescape code
# points, and ``%s``/``%b``/``%.3s`` count bytes like C's printf.
#
# Bash/glibc quirks reproduced here:
# * The format is reused while arguments remain, but only if a pass consumed one.
# * Numbers: C ``strtoimax(…, 0)`` (``0x1f``, ``017``, blanks, sign); a bad number prints
#   what was parsed so far, reports ``invalid number`` (``invalid octal number`` for
#   ``08``, ``invalid hex number`` for ``0x``) and makes the status 1; out-of-range values
#   clamp with a ``warning: …: Numerical result out of range`` and status 0. ``'c`` and
#   ``"c`` give the character's code point. ``%u -1`` wraps to 2**64-1.
# * Floats are x87 80-bit ``long double`` (bash uses strtold and %Lf): values are rounded
#   to a 64-bit significand with exponent range ±16382, so ``%.20f 0.1`` and ``%e 1e4000``
#   match; rounding to the requested digits is exact round-half-even (``%.0f 2.5`` is 2);
#   ``%a`` prints glibc's long double form (``0x8p-3`` for 1).
# * ``\c`` ends all output only inside ``%b``; in the format it is literal. In the format
#   ``\NNN`` takes up to three octal digits, in ``%b`` ``\0NNN`` up to four.
# * ``%c`` prints the first byte (a NUL without argument); ``%5s`` pads by bytes.
# * ``%(fmt)T`` formats seconds with strftime (``-1`` now, ``-2`` shell start, no argument
#   now, empty fmt ``%X``). A ``%(..)`` not followed by ``T`` warns and prints ``%``.
# * Widths and precisions are capped at MAX_WIDTH (bash would try to print gigabytes).

from __future__ import annotations

import codecs
import math
import re
import time as _time
from decimal import Decimal
from fractions import Fraction
from typing import Callable

from agentic_bash.limits import check_size
from agentic_bash.shell.quoting import quote_q

__all__ = ["MAX_WIDTH", "echo_escapes", "format"]

MAX_WIDTH = 1 << 24
FLUSH_BYTES = 1 << 20  # output kept before it is flushed (or checked against max_variable_bytes)
CHECK_EVERY = 1024  # conversions between deadline checks (a power of two)
_SHELL_START = _time.time()

_IMAX = 2**63 - 1
_IMIN = -(2**63)
_UMAX = 2**64 - 1
_INT_MAX = 2**31 - 1
_INT_MIN = -(2**31)
_CSPACE = " \t\n\v\f\r"
_OCT = "01234567"
_HEX = "0123456789abcdefABCDEF"
_SIMPLE = {"a": b"\a", "b": b"\b", "e": b"\x1b", "E": b"\x1b", "f": b"\f", "n": b"\n", "r": b"\r",
           "t": b"\t", "v": b"\v"}


_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def _enc(s: str) -> bytes:
    return s.encode("utf-8", "surrogateescape")


def _utf8(v: int) -> bytes:
    """bash's u32toutf8: UTF-8 for any value (surrogates and > U+10FFFF included)."""
    if v < 0x80:
        return bytes([v])
    if v < 0x800:
        return bytes([0xC0 | v >> 6, 0x80 | v & 0x3F])
    if v < 0x10000:
        return bytes([0xE0 | v >> 12, 0x80 | v >> 6 & 0x3F, 0x80 | v & 0x3F])
    if v < 0x200000:
        return bytes([0xF0 | v >> 18, 0x80 | v >> 12 & 0x3F, 0x80 | v >> 6 & 0x3F, 0x80 | v & 0x3F])
    if v < 0x4000000:
        return bytes([0xF8 | v >> 24, 0x80 | v >> 18 & 0x3F, 0x80 | v >> 12 & 0x3F, 0x80 | v >> 6 & 0x3F,
                      0x80 | v & 0x3F])
    return bytes([0xFC | v >> 30 & 0x01, 0x80 | v >> 24 & 0x3F, 0x80 | v >> 18 & 0x3F, 0x80 | v >> 12 & 0x3F,
                  0x80 | v >> 6 & 0x3F, 0x80 | v & 0x3F])


def _tescape(s: str, i: int, in_b: bool, errors: list[str]) -> tuple[bytes, int, bool]:
    """printf.def tescape at ``s[i]`` (just after a backslash): (bytes, chars consumed, saw \\c)."""
    n = len(s)
    c = s[i] if i < n else ""
    if c in _SIMPLE:
        return _SIMPLE[c], 1, False
    if c and c in _OCT:
        v = int(c)
        temp = 3 if (v == 0 and in_b) else 2
        j = i + 1
        while j < n and s[j] in _OCT and temp > 0:
            v = v * 8 + int(s[j])
            j += 1
            temp -= 1
        return bytes([v & 0xFF]), j - i, False
    if c == "x":
        j = i + 1
        v = 0
        while j < n and s[j] in _HEX and j < i + 3:
            v = v * 16 + int(s[j], 16)
            j += 1
        if j == i + 1:
            errors.append("printf: missing hex digit for \\x")
            return b"\\", 0, False
        return bytes([v & 0xFF]), j - i, False
    if c in ("u", "U"):
        lim = 4 if c == "u" else 8
        j = i + 1
        v = 0
        while j < n and s[j] in _HEX and j < i + 1 + lim:
            v = v * 16 + int(s[j], 16)
            j += 1
        if j == i + 1:
            errors.append(f"printf: missing unicode digit for \\{c}")
            return b"\\", 0, False
        return _utf8(v), j - i, False
    if c == "\\":
        return b"\\", 1, False
    if c in ("'", '"', "?"):
        if not in_b:
            return _enc(c), 1, False
        return b"\\", 0, False
    if c == "c" and in_b:
        return b"", 1, True
    return b"\\", 0, False


def _bexpand(s: str, errors: list[str]) -> tuple[bytes, bool]:
    out = bytearray()
    n = len(s)
    k = 0
    while k < n:
        if s[k] != "\\":
            j = s.find("\\", k)
            if j < 0:
                j = n
            out += _enc(s[k:j])
            k = j
            continue
        if k + 1 >= n:
            out += b"\\"
            break
        b, used, sawc = _tescape(s, k + 1, True, errors)
        if sawc:
            return bytes(out), True
        out += b
        k += 1 + used
    return bytes(out), False


def echo_escapes(s: str) -> tuple[bytes, bool]:
    """``echo -e`` escapes (bash's ansicstr for echo): (bytes, True when ``\\c`` stopped output)."""
    out = bytearray()
    n = len(s)
    k = 0
    while k < n:
        c = s[k]
        if c != "\\" or k + 1 >= n:
            out += _enc(c)
            k += 1
            continue
        c = s[k + 1]
        k += 2
        if c in _SIMPLE:
            out += _SIMPLE[c]
        elif c in "1234567":
            out += b"\\" + _enc(c)  # echo takes octal only as \0NNN
        elif c == "0":
            v = 0
            temp = 3
            while k < n and s[k] in _OCT and temp > 0:
                v = v * 8 + int(s[k])
                k += 1
                temp -= 1
            out.append(v & 0xFF)
        elif c == "x":
            v = 0
            j = k
            while k < n and s[k] in _HEX and k < j + 2:
                v = v * 16 + int(s[k], 16)
                k += 1
            if k == j:
                out += b"\\x"
            else:
                out.append(v)
        elif c in ("u", "U"):
            lim = 4 if c == "u" else 8
            v = 0
            j = k
            while k < n and s[k] in _HEX and k < j + lim:
                v = v * 16 + int(s[k], 16)
                k += 1
            if k == j:
                out += b"\\" + _enc(c)
            else:
                out += _utf8(v)
        elif c == "\\":
            out += b"\\"
        elif c in ("'", '"', "?"):
            out += b"\\" + _enc(c)
        elif c == "c":
            return bytes(out), True
        else:
            out += b"\\" + _enc(c)
    return bytes(out), False


# ----------------------------------------------------------------------- numbers


def _strto(s: str) -> tuple[int, int, bool]:
    """C strtoimax/strtoumax base 0: (signed magnitude, end index, any digits)."""
    n = len(s)
    j = 0
    while j < n and s[j] in _CSPACE:
        j += 1
    neg = False
    if j < n and s[j] in "+-":
        neg = s[j] == "-"
        j += 1
    if s[j:j + 2] in ("0x", "0X") and j + 2 < n and s[j + 2] in _HEX:
        base, digits, j = 16, _HEX, j + 2
    elif j < n and s[j] == "0":
        base, digits = 8, _OCT
    else:
        base, digits = 10, "0123456789"
    k = j
    while k < n and s[k] in digits:
        k += 1
    if k == j:
        return 0, 0, False
    v = int(s[j:k], base)
    return (-v if neg else v), k, True


def _glibc_mbchar(b: bytes) -> int:
    """The code glibc's UTF-8 mbrtowc gives the sequence starting ``b``: it also takes the
    old 4- to 6-byte forms up to 0x7FFFFFFF (Python rejects those past U+10FFFF), but not
    overlong forms or surrogates; anything else is its first byte."""
    c = b[0]
    if c < 0xC2 or c > 0xFD:
        return c
    n = 1 if c < 0xE0 else 2 if c < 0xF0 else 3 if c < 0xF8 else 4 if c < 0xFC else 5
    if len(b) <= n or any(not 0x80 <= x <= 0xBF for x in b[1:n + 1]):
        return c
    v = c & (0x3F >> n)
    for x in b[1:n + 1]:
        v = (v << 6) | (x & 0x3F)
    if v < (0x80, 0x800, 0x10000, 0x200000, 0x4000000)[n - 1] or 0xD800 <= v <= 0xDFFF:
        return c
    return v


class _Args:
    def __init__(self, args: list[str], errors: list[str]) -> None:
        self.args = args
        self.i = 0
        self.errors = errors
        self.conversion_error = False
        self.byte_chars = False

    def more(self) -> bool:
        return self.i < len(self.args)

    def getstr(self) -> str:
        if self.i >= len(self.args):
            return ""
        self.i += 1
        return self.args[self.i - 1]

    def getchr(self) -> bytes:
        if self.i >= len(self.args):
            return b"\0"
        self.i += 1
        return _enc(self.args[self.i - 1])[:1] or b"\0"

    def _asciicode(self, a: str) -> int:
        if len(a) < 2:
            return 0
        ch = a[1]
        o = ord(ch)
        if 0xDC80 <= o <= 0xDCFF:
            if self.byte_chars:
                return o - 0xDC00
            try:
                return _glibc_mbchar(a[1:8].encode("utf-8", "surrogateescape"))
            except UnicodeEncodeError:
                return o - 0xDC00
        return o

    def _invalid(self, a: str) -> None:
        if a[:1] == "0" and a[1:2].isdigit():
            msg = "invalid octal number"
        elif a[:2] == "0x":
            msg = "invalid hex number"
        else:
            msg = "invalid number"
        self.errors.append(f"printf: {a}: {msg}")
        self.conversion_error = True

    def _erange(self, a: str) -> None:
        self.errors.append(f"printf: warning: {a}: Numerical result out of range")

    def getintmax(self) -> int:
        if self.i >= len(self.args):
            return 0
        a = self.args[self.i]
        self.i += 1
        if a[:1] in ("'", '"'):
            return self._asciicode(a)
        v, end, _ = _strto(a)
        if end < len(a):
            self._invalid(a)
        if v > _IMAX or v < _IMIN:
            if end >= len(a):
                self._erange(a)
            v = _IMAX if v > 0 else _IMIN
        return v

    def getuintmax(self) -> int:
        if self.i >= len(self.args):
            return 0
        a = self.args[self.i]
        self.i += 1
        if a[:1] in ("'", '"'):
            return self._asciicode(a)
        v, end, _ = _strto(a)
        if end < len(a):
            self._invalid(a)
        if abs(v) > _UMAX:
            if end >= len(a):
                self._erange(a)
            return _UMAX
        return v % (1 << 64)

    def getint(self) -> int:
        v = self.getintmax()
        # bash reports the range problem naming the *next* argument (its list has moved on)
        if v > _INT_MAX or v < _INT_MIN:
            if self.i < len(self.args):
                self._erange(self.args[self.i])
            v = _INT_MAX if v > 0 else _INT_MIN
        return v

    def getfloat(self) -> _LD:
        if self.i >= len(self.args):
            return _LD("num", False, Fraction(0))
        a = self.args[self.i]
        self.i += 1
        if a[:1] in ("'", '"'):
            return _round_ld(False, Fraction(self._asciicode(a)))[0]
        v, end, erange = _strtold(a)
        if end < len(a):
            self._invalid(a)
        elif erange:
            self._erange(a)
        return v


# ------------------------------------------------------------------ long double


class _LD:
    """An x87 long double: kind 'num'/'inf'/'nan', sign, exact value, significand and exponent."""

    __slots__ = ("kind", "neg", "frac", "m", "e")

    def __init__(self, kind: str, neg: bool, frac: Fraction, m: int = 0, e: int = 0) -> None:
        self.kind = kind
        self.neg = neg
        self.frac = frac
        self.m = m
        self.e = e


_EMIN = -16382
_EMAX = 16383


def _round_ld(neg: bool, v: Fraction) -> tuple[_LD, bool]:
    if v == 0:
        return _LD("num", neg, Fraction(0)), False
    nb = v.numerator.bit_length() - v.denominator.bit_length()
    e = nb if v >= Fraction(2) ** nb else nb - 1
    big = e > _EMAX
    e = max(e, _EMIN)
    scale = e - 63
    m = round(v / Fraction(2) ** scale)
    if m >= 1 << 64:
        m >>= 1
        e += 1
        scale += 1
    if big or e > _EMAX:
        return _LD("inf", neg, Fraction(0)), True
    if m == 0:
        return _LD("num", neg, Fraction(0)), True
    exact = Fraction(m) * Fraction(2) ** scale
    # glibc reports ERANGE for an inexact subnormal result
    return _LD("num", neg, exact, m, e), m < (1 << 63) and exact != v


def _strtold(s: str) -> tuple[_LD, int, bool]:
    """C strtold: (value, end index, ERANGE)."""
    n = len(s)
    j = 0
    while j < n and s[j] in _CSPACE:
        j += 1
    neg = False
    if j < n and s[j] in "+-":
        neg = s[j] == "-"
        j += 1
    low = s[j:j + 8].lower()
    if low.startswith("inf"):
        return _LD("inf", neg, Fraction(0)), j + (8 if low == "infinity" else 3), False
    if low.startswith("nan"):
        k = j + 3
        if k < n and s[k] == "(":
            close = k + 1
            while close < n and (s[close].isalnum() or s[close] == "_"):
                close += 1
            if close < n and s[close] == ")":
                k = close + 1
        return _LD("nan", neg, Fraction(0)), k, False
    if s[j:j + 2] in ("0x", "0X"):
        k = j + 2
        mant = ""
        while k < n and s[k] in _HEX:
            mant += s[k]
            k += 1
        fdigits = 0
        if k < n and s[k] == ".":
            k2 = k + 1
            while k2 < n and s[k2] in _HEX:
                mant += s[k2]
                k2 += 1
                fdigits += 1
            if mant:
                k = k2
        if mant:
            exp = 0
            if k < n and s[k] in "pP":
                k2 = k + 1
                esign = 1
                if k2 < n and s[k2] in "+-":
                    esign = -1 if s[k2] == "-" else 1
                    k2 += 1
                k3 = k2
                while k3 < n and s[k3].isdigit() and s[k3].isascii():
                    k3 += 1
                if k3 > k2:
                    exp = esign * int(s[k2:k3][:12])
                    k = k3
            iv = int(mant, 16)
            p2 = exp - 4 * fdigits
            if iv and iv.bit_length() + p2 > _EMAX + 2:
                return _LD("inf", neg, Fraction(0)), k, True
            if iv and iv.bit_length() + p2 < _EMIN - 66:
                return _LD("num", neg, Fraction(0)), k, True
            ld, er = _round_ld(neg, Fraction(iv) * Fraction(2) ** p2)
            return ld, k, er
        # "0x" without digits: strtold parses the "0"
        return _LD("num", neg, Fraction(0)), j + 1, False
    k = j
    digits = ""
    while k < n and s[k].isdigit() and s[k].isascii():
        digits += s[k]
        k += 1
    fdigits = 0
    if k < n and s[k] == ".":
        k2 = k + 1
        while k2 < n and s[k2].isdigit() and s[k2].isascii():
            digits += s[k2]
            k2 += 1
            fdigits += 1
        if digits:
            k = k2
    if not digits:
        return _LD("num", False, Fraction(0)), 0, False
    exp = 0
    if k < n and s[k] in "eE":
        k2 = k + 1
        esign = 1
        if k2 < n and s[k2] in "+-":
            esign = -1 if s[k2] == "-" else 1
            k2 += 1
        k3 = k2
        while k3 < n and s[k3].isdigit() and s[k3].isascii():
            k3 += 1
        if k3 > k2:
            exp = esign * int(s[k2:k3][:12])
            k = k3
    iv = int(digits)
    p10 = exp - fdigits
    if iv:
        mag = len(digits.lstrip("0")) + p10
        if mag > 4935:
            return _LD("inf", neg, Fraction(0)), k, True
        if mag < -4955:
            return _LD("num", neg, Fraction(0)), k, True
    ld, er = _round_ld(neg, Fraction(iv) * Fraction(10) ** p10)
    return ld, k, er


def _itoa(n: int) -> str:
    # str() of ints beyond 4300 digits is refused by CPython; Decimal converts exactly
    return str(n) if n.bit_length() < 14000 else str(Decimal(n))


# A long double's exact decimal expansion ends within this many digits after the point
# (2**-16445 has 16445); more requested digits are zeros, so big precisions stay cheap.
_EXACT_DIGITS = 16500


def _fixed(v: Fraction, prec: int, alt: bool) -> str:
    if prec > _EXACT_DIGITS:
        return _fixed(v, _EXACT_DIGITS, alt) + "0" * (prec - _EXACT_DIGITS)
    digits = _itoa(round(v * 10**prec))
    if prec == 0:
        return digits + ("." if alt else "")
    digits = digits.rjust(prec + 1, "0")
    return digits[:-prec] + "." + digits[-prec:]


def _exp10(v: Fraction) -> int:
    x = math.floor((v.numerator.bit_length() - v.denominator.bit_length()) * 0.3010299956639812)
    while v >= Fraction(10) ** (x + 1):
        x += 1
    while v < Fraction(10) ** x:
        x -= 1
    return x


def _sci_parts(v: Fraction, prec: int) -> tuple[str, int]:
    """(digit string of prec+1 digits, decimal exponent) of v rounded to prec+1 digits."""
    if v == 0:
        return "0" * (prec + 1), 0
    x = _exp10(v)
    q = round(v * Fraction(10) ** (prec - x))
    if q >= 10 ** (prec + 1):
        x += 1
        q = round(v * Fraction(10) ** (prec - x))
    return _itoa(q), x


def _sci(v: Fraction, prec: int, alt: bool, upper: bool) -> str:
    extra = 0
    if prec > 2 * _EXACT_DIGITS:
        prec, extra = 2 * _EXACT_DIGITS, prec - 2 * _EXACT_DIGITS
    digits, x = _sci_parts(v, prec)
    digits += "0" * extra
    mant = digits[0] + ("." + digits[1:] if prec > 0 or alt else "")
    return f"{mant}{'E' if upper else 'e'}{'-' if x < 0 else '+'}{abs(x):02d}"


def _general(v: Fraction, prec: int | None, alt: bool, upper: bool) -> str:
    p = 6 if prec is None else prec
    if p == 0:
        p = 1
    _, x = _sci_parts(v, min(p, 2 * _EXACT_DIGITS) - 1)
    if p > x >= -4:
        s = _fixed(v, p - 1 - x, alt)
    else:
        s = _sci(v, p - 1, alt, upper)
    if not alt and "." in s:
        mant, sep, exp = s.partition("E" if upper else "e")
        mant = mant.rstrip("0").rstrip(".")
        s = mant + (sep + exp if sep else "")
    return s


def _hexfloat(ld: _LD, prec: int | None, alt: bool, upper: bool) -> str:
    if ld.frac == 0:
        first, rest, exp = 0, "", 0
        if prec:
            rest = "0" * prec
    else:
        first = ld.m >> 60
        frac = ld.m & ((1 << 60) - 1)
        exp = ld.e - 3
        if prec is None:
            rest = f"{frac:015x}".rstrip("0")
        elif prec >= 15:
            rest = f"{frac:015x}" + "0" * (prec - 15)
        else:
            shift = 4 * (15 - prec)
            q, rem = frac >> shift, frac & ((1 << shift) - 1)
            half = 1 << (shift - 1)
            odd = (q if prec else first) & 1  # ties go to the even last kept digit
            if rem > half or (rem == half and odd):
                q += 1
            if q >> (4 * prec):
                q = 0
                first += 1
                if first == 16:  # glibc renormalises 0x10p+e to 0x1p+(e+4)
                    first, exp = 1, exp + 4
            rest = f"{q:0{prec}x}" if prec else ""
    s = f"0x{first:x}" + ("." + rest if rest or alt else "") + f"p{'-' if exp < 0 else '+'}{abs(exp)}"
    return s.upper() if upper else s


def _pad(body: bytes, width: int, left: bool) -> bytes:
    if len(body) >= width:
        return body
    return body + b" " * (width - len(body)) if left else b" " * (width - len(body)) + body


def _num_pad(sign: str, prefix: str, digits: str, width: int, flags: str, zero_ok: bool) -> bytes:
    left = "-" in flags
    if "0" in flags and not left and zero_ok:
        digits = digits.rjust(width - len(sign) - len(prefix), "0")
    return _pad((sign + prefix + digits).encode(), width, left)


def _fmt_int(v: int, conv: str, flags: str, width: int, prec: int | None) -> bytes:
    sign = ""
    if conv in "di":
        if v < 0:
            sign, v = "-", -v
        elif "+" in flags:
            sign = "+"
        elif " " in flags:
            sign = " "
    if conv in "diu":
        digits = str(v)
    elif conv == "o":
        digits = f"{v:o}"
    elif conv == "x":
        digits = f"{v:x}"
    else:
        digits = f"{v:X}"
    if prec is not None:
        if prec == 0 and v == 0:
            digits = ""
        digits = digits.rjust(prec, "0")
    prefix = ""
    if "#" in flags:
        if conv == "o" and not digits.startswith("0"):
            digits = "0" + digits
        elif conv in "xX" and v != 0:
            prefix = "0x" if conv == "x" else "0X"
    return _num_pad(sign, prefix, digits, width, flags, prec is None)


def _fmt_float(ld: _LD, conv: str, flags: str, width: int, prec: int | None) -> bytes:
    upper = conv in "EFGA"
    alt = "#" in flags
    sign = "-" if ld.neg else "+" if "+" in flags else " " if " " in flags else ""
    if ld.kind != "num":
        body = ld.kind.upper() if upper else ld.kind
        return _num_pad(sign, "", body, width, flags, False)
    v = ld.frac
    lc = conv.lower()
    if lc == "f":
        body = _fixed(v, 6 if prec is None else prec, alt)
    elif lc == "e":
        body = _sci(v, 6 if prec is None else prec, alt, upper)
    elif lc == "g":
        body = _general(v, prec, alt, upper)
    else:
        s = _hexfloat(ld, prec, alt, upper)
        return _num_pad(sign, s[:2], s[2:], width, flags, True)
    return _num_pad(sign, "", body, width, flags, True)


# --------------------------------------------------------------------- the builtin



class _ErrorLog(list):
    """Error messages that remember how much output was formatted when each came (``at``):
    bash's stdout is line-buffered, so an error follows the complete lines before it."""

    def __init__(self, out: bytearray) -> None:
        super().__init__()
        self.out = out
        self.at: list[int] = []

    def append(self, msg: str) -> None:  # type: ignore[override]
        self.at.append(len(self.out))
        super().append(msg)


# a format of text and one-letter escapes only (what _tescape maps through _SIMPLE, and \\)
_PLAIN_FORMAT = re.compile(r"(?:[^%\\]|\\[abeEfnrtv\\])*\Z")
_PLAIN_ESCAPE = re.compile(r"\\(.)")
_PLAIN_MAP = {**{k: v.decode() for k, v in _SIMPLE.items()}, "\\": "\\"}


def _plain_escape(m: re.Match[str]) -> str:
    return _PLAIN_MAP[m.group(1)]


_PCT_S = re.compile(r"%%|%s")
_escape_decode = codecs.escape_decode  # type: ignore[attr-defined]


def plain(fmt: str) -> bytes | None:
    """What ``printf fmt`` with no argument writes when ``fmt`` is text and one-letter
    escapes only (no conversion: the usual ``printf 'text\\n'``), else None."""
    if "%" in fmt or len(fmt) >= FLUSH_BYTES:
        return None
    if "\\" not in fmt:
        return fmt.encode("utf-8", "surrogateescape")
    if _PLAIN_FORMAT.match(fmt) is None:
        return None
    if "\\e" in fmt or "\\E" in fmt:
        return _enc(_PLAIN_ESCAPE.sub(_plain_escape, fmt))
    # (\a \b \f \n \r \t \v and \\ are Python's escapes too; \e is not)
    return _escape_decode(fmt.encode("utf-8", "surrogateescape"))[0]  # type: ignore[no-any-return]


def format(fmt: str, args: list[str], *, now: float | None = None, start_time: float | None = None,  # noqa: A001
           localtime: Callable[[float], _time.struct_time] | None = None,
           byte_chars: bool = False,
           assign_n: Callable[[str, int], str | None] | None = None,
           flush: Callable[[bytes], None] | None = None) -> tuple[bytes, int, list[str]]:
    """Run ``printf fmt args...``: (stdout bytes, exit status, error messages without ``bash: ``).
    ``byte_chars``: the C locale, where ``'c`` gives a byte's value, never a multibyte character's.
    ``assign_n(name, count)``: stores ``%n``'s count (bytes written in this pass of the format),
    returning an error message or None. ``flush(data)``: takes the output so far whenever it
    passes FLUSH_BYTES (while no error is pending), as a stdio buffer would; without it the
    output is one string, bounded by max_variable_bytes. Either way the run's deadline is
    checked as the output grows and every CHECK_EVERY conversions."""
    if not args:
        data = plain(fmt)
        if data is not None:
            return data, 0, []
    out = bytearray()
    errors = _ErrorLog(out)
    a = _Args(args, errors)
    a.byte_chars = byte_chars
    n = len(fmt)
    nxt = FLUSH_BYTES  # output size at which to flush or check next
    convs = 0
    while True:
        first = a.i
        pass_start = len(out)
        i = 0
        while i < n:
            if len(out) >= nxt:
                if flush is not None and not errors:
                    check_size(0, "printf")  # (the deadline)
                    flush(bytes(out))
                    pass_start -= len(out)
                    out.clear()
                else:
                    check_size(len(out), "printf")
                    nxt = len(out) + FLUSH_BYTES
            c = fmt[i]
            if c == "\\":
                b, used, _ = _tescape(fmt, i + 1, False, errors)
                out += b
                i += 1 + used
                continue
            if c != "%":
                j = i + 1
                while j < n and fmt[j] not in "\\%":
                    j += 1
                out += _enc(fmt[i:j])
                i = j
                continue
            start = i
            i += 1
            if i < n and fmt[i] == "%":
                out += b"%"
                i += 1
                continue
            convs += 1
            if not convs & (CHECK_EVERY - 1):
                check_size(len(out), "printf")
            fl = i
            while i < n and fmt[i] in "#'-+ 0":
                i += 1
            flags = fmt[fl:i]
            width = 0
            if i < n and fmt[i] == "*":
                i += 1
                width = a.getint()
                if width < 0:
                    flags += "-"
                    width = -width
            else:
                w0 = i
                while i < n and fmt[i].isdigit() and fmt[i].isascii():
                    i += 1
                width = int(fmt[w0:i]) if i > w0 else 0
            prec: int | None = None
            if i < n and fmt[i] == ".":
                i += 1
                if i < n and fmt[i] == "*":
                    i += 1
                    prec = a.getint()
                    if prec < 0:
                        prec = None
                else:
                    negp = i < n and fmt[i] == "-"
                    if negp:
                        i += 1
                    p0 = i
                    while i < n and fmt[i].isdigit() and fmt[i].isascii():
                        i += 1
                    prec = None if negp else (int(fmt[p0:i]) if i > p0 else 0)
            width = min(width, MAX_WIDTH)
            if prec is not None:
                prec = min(prec, MAX_WIDTH)
            while i < n and fmt[i] in "hjlLtz":
                i += 1
            if i >= n:
                errors.append(f"printf: `{fmt[start:]}': missing format character")
                return bytes(out), 1, errors
            conv = fmt[i]
            i += 1
            left = "-" in flags
            if conv == "c":
                out += _pad(a.getchr(), width, left)
            elif conv == "s":
                s = _enc(a.getstr())
                out += _pad(s if prec is None else s[:prec], width, left)
            elif conv == "b":
                data, sawc = _bexpand(a.getstr(), errors)
                out += _pad(data if prec is None else data[:prec], width, left)
                if sawc:
                    return bytes(out), 1 if a.conversion_error else 0, errors
            elif conv in ("q", "Q"):
                s = a.getstr()
                if conv == "Q" and prec is not None:
                    s = _enc(s)[:prec].decode("utf-8", "surrogateescape")
                    q = _enc(quote_q(s))
                else:
                    q = _enc(quote_q(s))
                    if prec is not None:
                        q = q[:prec]
                out += _pad(q, width, left)
            elif conv == "n":
                name = a.getstr()
                if name:
                    if not _IDENT.match(name):
                        errors.append(f"printf: `{name}': not a valid identifier")
                        return bytes(out), 1, errors
                    if assign_n is not None:
                        err = assign_n(name, len(out) - pass_start)
                        if err:
                            errors.append(err)
            elif conv in ("d", "i"):
                out += _fmt_int(a.getintmax(), conv, flags, width, prec)
            elif conv in ("o", "u", "x", "X"):
                out += _fmt_int(a.getuintmax(), conv, flags, width, prec)
            elif conv in "eEfFgGaA":
                out += _fmt_float(a.getfloat(), conv, flags, width, prec)
            elif conv == "(":
                depth = 1
                j = i
                while j < n:
                    if fmt[j] == "(":
                        depth += 1
                    elif fmt[j] == ")":
                        depth -= 1
                        if depth == 0:
                            break
                    j += 1
                timefmt = fmt[i:j]
                if j + 1 >= n or fmt[j + 1] != "T":
                    bad = fmt[j + 1] if j + 1 < n else ""
                    errors.append(f"printf: warning: `{bad}': invalid time format specification")
                    out += b"%"
                    i = start + 1
                    continue
                i = j + 2
                secs = -1 if not a.more() else a.getintmax()
                t = (_time.time() if now is None else now) if secs == -1 else \
                    ((_SHELL_START if start_time is None else start_time) if secs == -2 else secs)
                try:
                    tm = (localtime or _time.localtime)(t)
                    tf = timefmt or "%X"
                    if "%s" in tf:
                        # (strftime's %s would go through mktime in this process's zone)
                        tf = _PCT_S.sub(lambda m: m.group() if m.group() == "%%" else str(int(t)), tf)
                    text = _time.strftime(tf, tm)
                except (ValueError, OverflowError, OSError):
                    text = ""
                s = _enc(text)
                out += _pad(s if prec is None else s[:prec], width, left)
            elif conv == "n":
                a.getstr()  # %n would assign the byte count to a variable; we cannot from here
            else:
                # bash names only the first byte of a multibyte character
                bad = _enc(conv)[:1].decode("utf-8", "surrogateescape")
                errors.append(f"printf: `{bad}': invalid format character")
                return bytes(out), 1, errors
        if not (a.more() and a.i > first):
            break
    if len(out) >= nxt and not (flush is not None and not errors):
        check_size(len(out), "printf")
    return bytes(out), 1 if a.conversion_error else 0, errors
