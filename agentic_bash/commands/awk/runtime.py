"""awk values, conversions, printf, regex cache and record/field machinery."""

# Values: float (number), str (string), StrNum (a str from input that may compare as a
# number), UNINIT (the uninitialised value: "" and 0 at once). Text is latin-1, one char per
# byte, like mawk (length("é") == 2 here, as with the machine's awk).

from __future__ import annotations

import math
import re

import regex

from .._regex import RegexError, compile_posix

__all__ = ["UNINIT", "StrNum", "AwkError", "Uninit"]


class AwkError(Exception):
    """A fatal run-time error: ``awk: run time error: ...`` and status 2."""


class StrNum(str):
    __slots__ = ()


class Uninit(StrNum):
    __slots__ = ()


UNINIT = Uninit("")

# strtod-like leading number (mawk converts with strtod: hex, inf and nan included)
_LEAD = re.compile(r"[ \t\n\r\f\v]*([-+]?(?:0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)(?:[pP][-+]?\d+)?|(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
                   r"|[iI][nN][fF](?:[iI][nN][iI][tT][yY])?|[nN][aA][nN]))")
# a strnum "looks numeric" only as a whole decimal number with optional blanks
# (mawk also takes 0x10 -- hex spelled with decimal digits only -- as numeric)
_FULL = re.compile(r"[ \t\n\r\f\v]*[-+]?(?:0[xX][0-9]+|(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)[ \t\n\r\f\v]*\Z")

_numcache: dict[str, float] = {}
_sncache: dict[str, float | None] = {}


_NUM_START = frozenset("0123456789+-.")


def to_num(v: object) -> float:
    if type(v) is float:
        return v  # type: ignore[return-value]
    if not isinstance(v, str):
        return float(v)  # type: ignore[arg-type]
    if v[:1] in _NUM_START and "_" not in v:
        # float() and strtod agree on a string that starts like a number and has no "_"
        # (Python's digit separators); float() also strips Unicode blanks that strtod
        # would stop at, but only around the number: none lead here, and trailing ones
        # end strtod's number where float() drops them
        try:
            return float(v)
        except ValueError:
            pass
    r = _numcache.get(v)
    if r is not None:
        return r
    s = v
    m = _LEAD.match(s)
    if m is None:
        r = 0.0
    else:
        t = m.group(1)
        try:
            if "x" in t or "X" in t:
                r = float.fromhex(t)  # strtod's hex forms, 0x1.8p1 included
            else:
                r = float(t)
        except ValueError:
            r = 0.0
    if len(_numcache) > 50000:
        _numcache.clear()
    _numcache[s] = r
    return r


def strnum_value(v: str) -> float | None:
    """The number a StrNum stands for, or None when it does not look numeric."""
    r = _sncache.get(v, False)
    if r is not False:
        return r  # type: ignore[return-value]
    if _FULL.match(v):
        t = v.strip(" \t\n\r\f\v")
        r = float(int(t, 16)) if ("x" in t or "X" in t) else float(t)
    else:
        r = None
    if len(_sncache) > 50000:
        _sncache.clear()
    _sncache[v] = r
    return r


def fmt_num(v: float, fmt: str) -> str:
    """Number -> string: integral values in int range print as integers, else ``fmt``."""
    if v == v and -2147483647.0 <= v <= 2147483647.0:  # mawk: integers only within int range
        i = int(v)
        if i == v:
            return str(i)
    if v != v:
        return "-nan" if math.copysign(1.0, v) < 0 else "nan"
    if v in (math.inf, -math.inf):
        return "inf" if v > 0 else "-inf"
    try:
        return sprintf(fmt, [v])
    except Exception:  # noqa: BLE001
        return repr(v)


_FMT_RE = re.compile(r"%([-+ #0]*)(\*|\d+)?(?:\.(\*|\d*))?(hh|h|ll|l|L|q|j|z|t)?([a-zA-Z%])")


def _c_int(v: float) -> int:
    """C-style conversion of a double to long (mawk clamps to the int range for %d)."""
    if v != v:
        return 0
    if v >= 9.223372036854775807e18:
        return 9223372036854775807
    if v <= -9.223372036854775808e18:
        return -9223372036854775808
    return int(v)


def _short_args(fname: str, fmt: str, out: list[str]) -> AwkError:
    e = AwkError(f"not enough arguments passed to {fname}(\"{fmt}\")")
    e.partial = "".join(out)  # type: ignore[attr-defined]  # mawk's printf has written this much
    return e


def sprintf(fmt: str, args: list, conv=None, fname: str = "sprintf",  # noqa: ANN001
            maxwidth: int | None = None, mawk: bool = True) -> str:
    out: list[str] = []
    pos = 0
    ai = 0
    nconv = 0
    n = len(fmt)
    tostr = conv or (lambda x: x if isinstance(x, str) else fmt_num(x, "%.6g"))
    while pos < n:
        j = fmt.find("%", pos)
        if j < 0:
            out.append(fmt[pos:])
            break
        out.append(fmt[pos:j])
        m = _FMT_RE.match(fmt, j)
        if m is None or (mawk and m.group(5) not in "%cdiouxXeEfFgGs"):
            if mawk:
                # mawk: every % wants an argument, and a conversion it does not know is fatal
                if ai >= len(args):
                    raise _short_args(fname, fmt, out)
                nconv += 1
                raise AwkError(f"improper conversion(number {nconv}) in {fname}(\"{fmt}\")")
            out.append(fmt[j:j + 2] if j + 1 < n else "%")
            pos = j + 2 if j + 1 < n else n
            continue
        flags, width, prec, _len, c = m.groups()
        pos = m.end()
        if c == "%":
            out.append("%")
            continue
        nconv += 1
        if width == "*":
            if ai >= len(args):
                raise _short_args(fname, fmt, out)
            w = int(to_num(args[ai]))
            ai += 1
            if w < 0:
                flags += "-"
                w = -w
            width = str(w)
        if prec == "*":
            if ai >= len(args):
                raise _short_args(fname, fmt, out)
            p = int(to_num(args[ai]))
            ai += 1
            prec = str(p) if p >= 0 else None
        if ai >= len(args):
            raise _short_args(fname, fmt, out)
        a = args[ai]
        ai += 1
        if maxwidth is not None and ((width and int(width) > maxwidth) or (prec and int(prec) > maxwidth)):
            from ...errors import LimitExceeded
            raise LimitExceeded("max_variable_bytes", f"awk: printf width larger than {maxwidth}")
        spec = "%" + flags + (width or "") + ("." + prec if prec is not None else "")
        if c in "di":
            v = to_num(a)
            if mawk and (v != v or v in (math.inf, -math.inf)):
                # mawk's d_to_I: >= INT_MAX clamps high, anything not > -INT_MAX (NaN too) low
                out.append((spec + "d") % (2147483647 if v >= 2147483647 else -2147483647))
                continue
            if v != v or v in (math.inf, -math.inf):
                out.append((spec + "f") % v if False else _inf_nan(spec, v))
                continue
            # mawk converts with d_to_I: clamped to [-INT_MAX, INT_MAX]
            iv = _c_int(v)
            out.append((spec + "d") % (max(-2147483647, min(2147483647, iv)) if mawk else iv))
        elif c in "ouxX":
            v = to_num(a)
            # ... and unsigned conversions with d_to_U: clamped to [0, UINT_MAX] (NaN: 0)
            if mawk and (v != v or v in (math.inf, -math.inf)):
                iv = 4294967295 if v == math.inf else 0
            else:
                iv = max(0, min(4294967295, _c_int(v))) if mawk else _c_int(v) & 0xFFFFFFFFFFFFFFFF
            if c == "o" and "#" in spec:
                body = "%o" % iv
                body = body if body.startswith("0") else "0" + body
                out.append(("%" + spec[1:].replace("#", "") + "s") % body if False else
                           (("%" + flags.replace("#", "").replace("0", "") + (width or "") + "s") % body))
            else:
                out.append((spec + ("d" if c == "u" else c)) % iv)
        elif c in "eEfFgG":
            v = to_num(a)
            out.append((spec + c) % v)
        elif c == "c":
            if isinstance(a, StrNum) and a is not UNINIT and strnum_value(a) is not None:
                a = strnum_value(a)  # a numeric-looking input field prints as a char code
            if isinstance(a, str):
                ch = a[:1] or "\0"
            else:
                ch = chr(int(to_num(a)) & 0xFF)
            out.append(("%" + flags + (width or "") + "s") % ch)
        elif c == "s":
            out.append((spec + "s") % tostr(a))
        else:
            # unknown conversion: copy it literally like mawk's "bad conversion"
            out.append(m.group(0))
            ai -= 1
    return "".join(out)


def _inf_nan(spec: str, v: float) -> str:
    s = "nan" if v != v else ("inf" if v > 0 else "-inf")
    if "+" in spec and not s.startswith("-"):
        s = "+" + s
    w = re.search(r"(\d+)", spec.lstrip("%-+ #0"))
    width = int(w.group(1)) if w and not spec[1:].split(".")[0].lstrip("-+ #0") == "" else 0
    return s.rjust(width) if "-" not in spec else s.ljust(width)


# -- regex ---------------------------------------------------------------------------------

_AWK_ESC = {"n": "\n", "t": "\t", "r": "\r", "f": "\f", "v": "\v", "a": "\a", "b": "\b", "/": "/",
            '"': '"'}
_ERE_SPECIAL = set(".[]()*+?{}|^$\\")


def awk_regex_source(src: str, mawk: bool = True) -> str:
    """awk ERE -> POSIX ERE: awk's string escapes become literal chars; mawk has no intervals."""
    out = []
    i, n = 0, len(src)
    in_br = False
    while i < n:
        c = src[i]
        if in_br:
            if c == "[" and i + 1 < n and src[i + 1] in ":.=":
                k = src.find(src[i + 1] + "]", i + 2)
                if k > 0:
                    out.append(src[i:k + 2])
                    i = k + 2
                    continue
            if c == "\\" and i + 1 < n:
                d = src[i + 1]
                if d in _AWK_ESC:
                    out.append(_AWK_ESC[d])
                    i += 2
                    continue
                if d in "\\]":
                    # awk (gawk and mawk) take \] and \\ in brackets as escapes
                    out.append("\\" + d if d == "]" else "\\\\")
                    i += 2
                    continue
                out.append("\\\\")
                i += 1
                continue
            if c == "]" and not (out and out[-1] in ("[", "[^")):
                in_br = False
            out.append(c)
            i += 1
            continue
        if c == "\\" and i + 1 < n:
            d = src[i + 1]
            if d in _AWK_ESC:
                ch = _AWK_ESC[d]
                out.append("\\" + ch if ch in _ERE_SPECIAL else ch)
                i += 2
                continue
            if d in "01234567":
                j = i + 1
                while j < n and j < i + 4 and src[j] in "01234567":
                    j += 1
                ch = chr(int(src[i + 1:j], 8) & 0xFF)
                out.append("\\" + ch if ch in _ERE_SPECIAL else ch)
                i = j
                continue
            if d == "y":
                out.append("\\b")
                i += 2
                continue
            out.append(src[i:i + 2])
            i += 2
            continue
        if c == "[":
            if mawk:
                br = _mawk_bracket(src, i + 1)
                if br is not None:
                    out.append(br[0])
                    i = br[1]
                    continue
            in_br = True
            out.append("[")
            i += 1
            if i < n and src[i] == "^":
                out[-1] = "[^"
                i += 1
            if i < n and src[i] == "]":
                out.append("\\]" if False else "]")
                i += 1
            continue
        if mawk and c == "(":
            # mawk applies a repeat right after "(" to nothing (`a(*)b` matches "ab")
            out.append(c)
            i += 1
            while i < n and src[i] in "*+?":
                i += 1
            continue
        if mawk and c in "{}":
            out.append("\\" + c)
            i += 1
            continue
        out.append(c)
        i += 1
    return "".join(out)


def _mawk_bracket(src: str, i: int) -> tuple[str, int] | None:
    """mawk's bracket expression at ``src[i:]`` (just after "[") as a POSIX one, and the index
    after it; None if it does not close. In mawk a backslash escapes any character there
    (`[\\[\\]]`), a range written backwards stands for its two ends and the "-"
    (`[r-U]`), and a "-" right after a range is literal (`[a-c-e]`); POSIX wants "]" first
    and "-" last."""
    n = len(src)
    neg = i < n and src[i] == "^"
    if neg:
        i += 1
    chars: list[str] = []
    spans: list[str] = []
    first = True

    def elem(j: int) -> tuple[str, int, bool]:
        c = src[j]
        if c == "\\" and j + 1 < n:
            d = src[j + 1]
            return _AWK_ESC.get(d, d), j + 2, True
        return c, j + 1, False

    while True:
        if i >= n:
            return None
        c = src[i]
        if c == "]" and not first:
            i += 1
            break
        first = False
        if c == "[" and i + 1 < n and src[i + 1] in ":.=":
            k = src.find(src[i + 1] + "]", i + 2)
            if k > 0:
                spans.append(src[i:k + 2])
                i = k + 2
                continue
        ch, i, _ = elem(i)
        if i + 1 < n and src[i] == "-" and src[i + 1] != "]" and not (src[i + 1] == "[" and i + 2 < n and src[i + 2] in ":.="):
            hi, j, _ = elem(i + 1)
            if ch <= hi:
                spans.append(ch + "-" + hi)
            else:
                chars += [ch, "-", hi]
            i = j
            continue
        chars.append(ch)
    body = "".join(spans)
    rest = [c for c in chars if c not in "]-^["]
    body = ("]" if "]" in chars else "") + "".join(rest) + body + ("[" if "[" in chars else "")
    if "^" in chars:
        if body or neg:
            body += "^"  # (never first: there it would negate)
        elif "-" not in chars:
            return "\\^", i  # a list of only "^"
        else:
            body = "-^"
            chars.remove("-")
    if "-" in chars:
        body += "-"
    return "[" + ("^" if neg else "") + body + "]", i


_rxcache: dict[tuple[str, bool], object] = {}


def _mawk_operand_error(src: str) -> str | None:
    """mawk's parse errors that Python's engine accepts: an empty alternative or group, or a
    repetition with nothing to repeat (``a|``, ``()``, ``*a``, ``^*``)."""
    need = True  # at the start, after ( and after |
    i, n = 0, len(src)
    while i < n:
        c = src[i]
        if c == "\\":
            i += 2
            need = False
            continue
        if c == "[":
            j = i + 1
            if j < n and src[j] == "^":
                j += 1
            if j < n and src[j] == "]":
                j += 1
            while j < n and src[j] != "]":
                if src[j] == "[" and j + 1 < n and src[j + 1] in ":.=":
                    k = src.find(src[j + 1] + "]", j + 2)  # [:class:] [.x.] [=x=]
                    if k > 0:
                        j = k + 2
                        continue
                j += 1
            i = j + 1
            need = False
            continue
        if c in "|)":
            if need:
                return "missing operand"
            need = c == "|"
        elif c == "(":
            pass  # (mawk: "(" keeps what came before it: `a()b` and `a(*)b` compile, `()a` not)
        elif c in "*+?":
            if need:
                return "missing operand"
        elif c == "^" and i == 0 and i + 1 < n and src[i + 1] in "*+":
            return "syntax error ^* or ^+"
        else:
            need = False
        i += 1
    if need and n and src[-1] == "|":
        return "missing operand"
    return None


def compile_awk(src: str, mawk: bool = True):  # noqa: ANN201
    key = (src, mawk)
    r = _rxcache.get(key)
    if r is not None:
        return r
    bad = _mawk_operand_error(src) if mawk and ("|" in src or "(" in src or src[:1] in ("*", "+", "?", "^")) else None
    if bad:
        raise AwkError(f"regular expression compile failed ({bad})\n{src}")
    try:
        pr = compile_posix(awk_regex_source(src, mawk), extended=True, utf8=False, dotall=True)
    except RegexError as e:
        msg = str(e)
        # mawk's wording for the common cases
        if "Unmatched ( " in msg:
            msg = "missing ')'"
        elif "Unmatched [" in msg:
            msg = "bad class -- [], [^] or ["
        elif "Unmatched )" in msg:
            msg = "missing '('"
        raise AwkError(f"regular expression compile failed ({msg})\n{src}") from e
    if len(_rxcache) > 2000:
        _rxcache.clear()
    _rxcache[key] = pr
    return pr


_ = regex
