"""GNU coreutils printf(1) formatting (the command; the shell builtin lives in shell/)."""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

from ._args import quotef

__all__ = ["format_float", "gnu_printf"]

_SPEC = re.compile(rb"%([-+ #0']*)(\*|\d+)?(?:\.(\*|\d*))?([hlLjzt]*)([diouxXcsbqfFeEgGaA%]?)")
_SIMPLE_ESC = {ord("\\"): 92, ord('"'): 34, ord("a"): 7, ord("b"): 8, ord("f"): 12, ord("n"): 10,
               ord("r"): 13, ord("t"): 9, ord("v"): 11, ord("e"): 27, ord("E"): 27}
_OCT = b"01234567"
_HEX = b"0123456789abcdefABCDEF"


class _State:
    def __init__(self, out: bytearray | None = None, prog: str = "printf") -> None:
        self.prog = prog
        self.err: list[bytes] = []
        self.status = 0
        self.out = out
        # (stdout bytes produced before it, message): gnulib's error() flushes stdout first
        self.marks: list[tuple[int, bytes]] = []

    def warn(self, msg: str) -> None:
        self.note(f"{self.prog}: {msg}\n".encode("utf-8", "surrogateescape"))
        self.status = 1

    def note(self, b: bytes) -> None:
        self.err.append(b)
        self.marks.append((len(self.out) if self.out is not None else 0, b))


def _q(s: str) -> str:
    from ._args import quote_locale
    return quote_locale(s)


def _fmt_escape(fmt: bytes, i: int, out: bytearray, st: _State) -> int:
    """Escape at fmt[i] == '\\' in the FORMAT string; returns the new index."""
    n = len(fmt)
    if i + 1 >= n:
        out.append(92)
        return i + 1
    c = fmt[i + 1]
    i += 2
    if c in _SIMPLE_ESC:
        out.append(_SIMPLE_ESC[c])
    elif c in _OCT:
        v = c - 48
        k = 1
        while k < 3 and i < n and fmt[i] in _OCT:
            v = v * 8 + fmt[i] - 48
            i += 1
            k += 1
        out.append(v & 0xFF)
    elif c == ord("x"):
        j = i
        while j < n and j < i + 2 and fmt[j] in _HEX:
            j += 1
        if j == i:
            st.warn("missing hexadecimal number in escape")
            raise _Stop()
        out.append(int(fmt[i:j], 16))
        i = j
    elif c in (ord("u"), ord("U")):
        want = 4 if c == ord("u") else 8
        j = i
        while j < n and j < i + want and fmt[j] in _HEX:
            j += 1
        if j - i != want:
            st.warn("missing hexadecimal number in escape")
            raise _Stop()
        out += chr(int(fmt[i:j], 16)).encode("utf-8", "surrogatepass")
        i = j
    elif c == ord("c"):
        raise _StopAll()
    else:
        out.append(92)
        out.append(c)
    return i


class _Stop(Exception):
    pass


class _StopAll(Exception):
    pass


def _b_escapes(s: bytes) -> tuple[bytes, bool]:
    """%b argument escapes (echo -e style, \\0NNN octal); returns (data, stop_all)."""
    out = bytearray()
    i, n = 0, len(s)
    while i < n:
        ch = s[i]
        if ch != 92 or i + 1 >= n:
            out.append(ch)
            i += 1
            continue
        c = s[i + 1]
        i += 2
        if c in _SIMPLE_ESC and c not in (ord('"'), ord("E")):
            out.append(_SIMPLE_ESC[c])
        elif c == ord("c"):
            return bytes(out), True
        elif c in _OCT:
            v = c - 48 if c != 48 else 0
            lim = 3 if c == 48 else 2
            k = 0
            while k < lim and i < n and s[i] in _OCT:
                v = v * 8 + s[i] - 48
                i += 1
                k += 1
            out.append(v & 0xFF)
        elif c == ord("x"):
            j = i
            while j < n and j < i + 2 and s[j] in _HEX:
                j += 1
            if j == i:
                out += b"\\x"
            else:
                out.append(int(s[i:j], 16))
                i = j
        else:
            out.append(92)
            out.append(c)
    return bytes(out), False


_INT_RE = re.compile(r"^\s*([+-]?)(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9]\d*)")


def _to_int(arg: str, st: _State, unsigned: bool = False) -> int:
    if arg == "":
        return 0
    if arg[:1] in ("'", '"'):
        rest = arg[1:]
        if not rest:
            return 0
        b = rest.encode("utf-8", "surrogateescape")
        try:
            ch = rest[0]
            if 0xDC80 <= ord(ch) <= 0xDCFF:
                return b[0]
            return ord(ch)
        except IndexError:
            return 0
    m = _INT_RE.match(arg)
    if not m:
        st.warn(f"{_q(arg)}: expected a numeric value")
        return 0
    sign, digits = m.group(1), m.group(2)
    if digits.lower().startswith("0x"):
        v = int(digits, 16)
    elif len(digits) > 1 and digits.startswith("0"):
        v = int(digits, 8)
    else:
        v = int(digits)
    if sign == "-":
        v = -v
    if m.end() != len(arg):
        st.warn(f"{_q(arg)}: value not completely converted")
    if unsigned:
        if v > 2 ** 64 - 1 or v < -(2 ** 64 - 1):
            st.warn(f"{_q(arg)}: Numerical result out of range")
            v = 2 ** 64 - 1
        return v
    if v > 2 ** 63 - 1 or v < -(2 ** 63):
        st.warn(f"{_q(arg)}: Numerical result out of range")
        v = max(min(v, 2 ** 63 - 1), -(2 ** 63))
    return v


_FLOAT_RE = re.compile(r"^\s*[+-]?(0[xX][0-9a-fA-F]*\.?[0-9a-fA-F]*(?:[pP][+-]?\d+)?|\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?|inf(?:inity)?|nan)", re.I)


def _to_float(arg: str, st: _State) -> Decimal:
    if arg == "":
        return Decimal(0)
    if arg[:1] in ("'", '"'):
        return Decimal(_to_int(arg, st))
    m = _FLOAT_RE.match(arg)
    if not m:
        st.warn(f"{_q(arg)}: expected a numeric value")
        return Decimal(0)
    text = m.group(0).strip()
    if m.end() != len(arg):
        st.warn(f"{_q(arg)}: value not completely converted")
    low = text.lower().lstrip("+-")
    neg = text.startswith("-")
    if low.startswith("inf"):
        return Decimal("-Infinity" if neg else "Infinity")
    if low.startswith("nan"):
        return Decimal("NaN")
    if low.startswith("0x"):
        try:
            return Decimal(float.fromhex(text))
        except ValueError:
            return Decimal(0)
    try:
        return Decimal(text)
    except InvalidOperation:
        return Decimal(0)


def _pad(s: bytes, flags: str, width: int | None) -> bytes:
    if width is None or len(s) >= abs(width):
        return s
    if width < 0 or "-" in flags:
        return s.ljust(abs(width))
    return s.rjust(width)


def _fmt_int(conv: str, flags: str, width: int | None, prec: int | None, v: int) -> bytes:
    """C printf integer conversion (done by hand: Python's %#o/%#x differ from C's)."""
    if conv in "ouxX" and v < 0:
        v &= (1 << 64) - 1
    neg = v < 0
    a = -v if neg else v
    digits = {"o": "%o", "x": "%x", "X": "%X"}.get(conv, "%d") % a
    if prec is not None:
        if prec == 0 and a == 0:
            digits = ""
        digits = digits.rjust(prec, "0")
    prefix = ""
    if "#" in flags:
        if conv == "o" and not digits.startswith("0"):
            digits = "0" + digits
        elif conv in "xX" and a != 0:
            prefix = "0x" if conv == "x" else "0X"
    sign = ""
    if conv in "di":
        sign = "-" if neg else "+" if "+" in flags else " " if " " in flags else ""
    body = sign + prefix + digits
    if width is not None and len(body) < abs(width):
        w = abs(width)
        if "-" in flags or width < 0:
            body = body.ljust(w)
        elif "0" in flags and prec is None:
            body = sign + prefix + digits.rjust(w - len(sign) - len(prefix), "0")
        else:
            body = body.rjust(w)
    return body.encode()


def format_float(spec: str, x: Decimal) -> str:
    """Format ``x`` with a single C float conversion ``spec`` (like ``%.3f``) embedded in text."""
    m = re.search(r"%([-+ #0']*)(\d+)?(?:\.(\d*))?([lLhqjzt]*)([fFeEgGaA])", spec)
    if not m:
        return spec
    flags, width, prec, _, conv = m.groups()
    body = _fmt_float(conv, flags, int(width) if width else None,
                      (int(prec) if prec else 0) if prec is not None else None, x).decode()
    return spec[: m.start()].replace("%%", "%") + body + spec[m.end():].replace("%%", "%")


def ld_round(f):  # noqa: ANN001, ANN201
    """Round a Fraction to the nearest x87 long double (64-bit mantissa, ties to even)."""
    from fractions import Fraction
    if f == 0:
        return Fraction(0)
    neg = f < 0
    a = -f if neg else f
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** e > a:
        e -= 1
    m = round(a * Fraction(2) ** (63 - e))
    r = Fraction(m) * Fraction(2) ** (e - 63)
    return -r if neg else r


def ld_decimal(f) -> Decimal:  # noqa: ANN001
    """Exact Decimal of a binary Fraction (power-of-two denominator)."""
    import decimal
    with decimal.localcontext() as dctx:
        dctx.prec = 400
        return Decimal(f.numerator) / Decimal(f.denominator)


def _long_double(x: Decimal) -> Decimal:
    """Round to x87 long double (64-bit mantissa), as GNU printf/seq compute in long double."""
    if not x.is_finite() or x == 0:
        return x
    from fractions import Fraction
    import decimal
    f = Fraction(x)
    neg = f < 0
    f = abs(f)
    e = f.numerator.bit_length() - f.denominator.bit_length()
    if Fraction(2) ** e > f:
        e -= 1
    m = round(f * Fraction(2) ** (63 - e))
    if m.bit_length() > 64:
        m >>= 1
        e += 1
    with decimal.localcontext() as dctx:
        dctx.prec = 5000
        v = Decimal(m) * (Decimal(2) ** (e - 63))
    return -v if neg else v


def _hexfloat(x: Decimal, upper: bool) -> str:
    """glibc %La: 0xH.HHHp±E with the leading digit holding the top 4 mantissa bits."""
    if x == 0:
        s = "-0x0p+0" if x.is_signed() else "0x0p+0"
        return s.upper().replace("0X", "0X") if upper else s
    from fractions import Fraction
    f = Fraction(x)
    neg = f < 0
    f = abs(f)
    e = f.numerator.bit_length() - f.denominator.bit_length()
    if Fraction(2) ** e > f:
        e -= 1
    m = round(f * Fraction(2) ** (63 - e))
    if m.bit_length() > 64:
        m >>= 1
        e += 1
    h = "%016x" % m
    frac = h[1:].rstrip("0")
    s = "0x" + h[0] + ("." + frac if frac else "") + "p%+d" % (e - 3)
    if neg:
        s = "-" + s
    return s.upper() if upper else s


def _fmt_float(conv: str, flags: str, width: int | None, prec: int | None, x: Decimal) -> bytes:
    if conv in "aA" and x.is_finite():
        sgn = "" if x.is_signed() else "+" if "+" in flags else " " if " " in flags else ""
        return _pad((sgn + _hexfloat(x, conv == "A")).encode(), flags, width)
    x = _long_double(x)
    if x.is_nan() or x.is_infinite():
        s = "nan" if x.is_nan() else "inf"
        if x.is_signed() and not x.is_nan():
            s = "-" + s
        elif "+" in flags:
            s = "+" + s
        elif " " in flags:
            s = " " + s
        if conv.isupper():
            s = s.upper()
        return _pad(s.encode(), flags.replace("0", ""), width)
    f = "".join(c for c in flags if c in "-+ #0")
    if conv in "fF":
        p = 6 if prec is None else prec
        import decimal
        with decimal.localcontext() as dctx:
            dctx.prec = max(60, x.adjusted() + p + 10)
            q = x.quantize(Decimal(1).scaleb(-p))
        s = f"{q:f}" if p > 0 else f"{q:.0f}"
        if p > 0 and "." not in s:
            s += "." + "0" * p
        if "#" in f and p == 0:
            s += "."
        if s.startswith("-"):
            sign, s = "-", s[1:]
            if set(s) <= set("0."):
                sign = "-"
        else:
            sign = "+" if "+" in f else " " if " " in f else ""
        if width is not None and "0" in f and "-" not in f and len(sign + s) < width:
            s = s.rjust(width - len(sign), "0")
        return _pad((sign + s).encode(), f, width)
    spec = "%" + f + ("" if width is None else str(width)) + ("" if prec is None else "." + str(prec)) + conv
    try:
        return (spec % float(x)).encode()
    except (ValueError, OverflowError):
        return str(x).encode()


def gnu_printf(fmt_s: str, args: list[str]) -> tuple[bytes, bytes, int]:
    """Run printf(1): returns (stdout bytes, stderr bytes, status)."""
    return gnu_printf_ordered(fmt_s, args)[:3]  # type: ignore[return-value]


def gnu_printf_ordered(fmt_s: str, args: list[str], prog: str = "printf",
                       ) -> tuple[bytes, bytes, int, list[tuple[int, bytes]]]:
    """gnu_printf plus where each diagnostic falls in the output (for interleaving); ``prog``
    is the name messages start with (argv[0], as GNU's program_name)."""
    fmt = fmt_s.encode("utf-8", "surrogateescape")
    out = bytearray()
    st = _State(out, prog)
    ai = 0
    nargs = len(args)
    try:
        while True:
            used_any = False
            i, n = 0, len(fmt)
            while i < n:
                ch = fmt[i]
                if ch == 92:
                    i = _fmt_escape(fmt, i, out, st)
                    continue
                if ch != 37:
                    j = fmt.find(b"%", i)
                    k = fmt.find(b"\\", i)
                    stop = min(x for x in (j, k, n) if x >= 0)
                    out += fmt[i:stop]
                    i = stop
                    continue
                m = _SPEC.match(fmt, i)
                assert m is not None
                flags_b, wid_b, prec_b, _len, conv_b = m.groups()
                conv = conv_b.decode()
                if conv == "%":
                    if m.end() - i == 2:
                        out.append(37)
                        i = m.end()
                        continue
                if not conv:
                    rest = fmt[i:m.end() + 1].decode("utf-8", "surrogateescape")
                    if m.end() >= n:
                        st.warn(f"{fmt[i:].decode('utf-8', 'surrogateescape')}: invalid conversion specification")
                    else:
                        st.warn(f"{rest}: invalid conversion specification")
                    raise _Stop()
                i = m.end()
                flags = flags_b.decode()
                width: int | None = None
                prec: int | None = None
                if wid_b == b"*":
                    used_any = True
                    width = _to_int(args[ai], st) if ai < nargs else 0
                    ai += 1
                elif wid_b:
                    width = int(wid_b)
                if prec_b is not None:
                    if prec_b == b"*":
                        used_any = True
                        prec = _to_int(args[ai], st) if ai < nargs else 0
                        ai += 1
                        if prec < 0:
                            prec = None
                    else:
                        prec = int(prec_b) if prec_b else 0
                if conv == "%":
                    out.append(37)
                    continue
                used_any = True
                arg = args[ai] if ai < nargs else None
                ai += 1
                if conv in "diouxX":
                    v = _to_int(arg, st, conv in "ouxX") if arg is not None else 0
                    out += _fmt_int(conv, flags, width, prec, v)
                elif conv in "fFeEgGaA":
                    x = _to_float(arg, st) if arg is not None else Decimal(0)
                    out += _fmt_float(conv, flags, width, prec, x)
                elif conv == "c":
                    b = arg.encode("utf-8", "surrogateescape")[:1] if arg else b"\0"
                    out += _pad(b, flags, width)
                elif conv == "s":
                    b = (arg or "").encode("utf-8", "surrogateescape")
                    if prec is not None:
                        b = b[:prec]
                    out += _pad(b, flags, width)
                elif conv == "b":
                    b, stop_all = _b_escapes((arg or "").encode("utf-8", "surrogateescape"))
                    if prec is not None:
                        b = b[:prec]
                    out += _pad(b, flags, width)
                    if stop_all:
                        raise _StopAll()
                elif conv == "q":
                    q = quotef(arg) if arg else ("''" if arg == "" else "")
                    out += _pad(q.encode("utf-8", "surrogateescape"), flags, width)
            if not used_any:
                if nargs:
                    st.note((f"{st.prog}: warning: ignoring excess arguments, starting with "
                             f"{_q(args[0])}\n").encode("utf-8", "surrogateescape"))
                break
            if ai >= nargs:
                break
    except _StopAll:
        pass
    except _Stop:
        return bytes(out), b"".join(st.err), 1, st.marks
    return bytes(out), b"".join(st.err), st.status, st.marks
