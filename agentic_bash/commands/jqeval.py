"""jq's evaluation (libjq and the jq 1.6 CLI's output), in-process or in the worker process that jqcmd runs it in."""

# Imports only the standard library and the ``jq`` binding: the worker (``serve``) loads this
# file by path, without the package.

from __future__ import annotations

import decimal
import json
import math
import re
import time
from typing import Any, Callable

try:
    import jq as _jq
except ImportError:  # pragma: no cover - the [jq] extra is missing
    _jq = None

_ESC = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r", "\b": "\\b", "\f": "\\f"}


def _esc_char(c: str, ascii_only: bool) -> str:
    e = _ESC.get(c)
    if e is not None:
        return e
    o = ord(c)
    if o < 0x20 or o == 0x7F:
        return f"\\u{o:04x}"
    if ascii_only and o > 0x7E:
        if o > 0xFFFF:
            o -= 0x10000
            return f"\\u{0xD800 + (o >> 10):04x}\\u{0xDC00 + (o & 0x3FF):04x}"
        return f"\\u{o:04x}"
    return c


_NEEDS_ESC = re.compile(r'["\\\x00-\x1f\x7f]')


_NON_ASCII = re.compile(r"[^\x00-\x7e]")


def dump_string(s: str, ascii_only: bool = False) -> str:
    if _NEEDS_ESC.search(s) is None and not (ascii_only and _NON_ASCII.search(s)):
        return '"' + s + '"'
    return '"' + "".join(_esc_char(c, ascii_only) for c in s) + '"'


def format_number(x: float | int) -> str:
    """jq 1.6's jvp_dtoa_fmt: shortest digits, exponent form outside [1e-5, 1e17)."""
    if isinstance(x, int):
        if abs(x) < 10**17:
            return str(x)
        x = float(x)
    if x != x:
        return "null"
    if math.isinf(x):
        x = math.copysign(1.7976931348623157e308, x)
    if x == 0:
        return "-0" if math.copysign(1.0, x) < 0 else "0"
    d = decimal.Decimal(repr(x))
    sign, digits, exp = d.as_tuple()
    ds = "".join(map(str, digits)).rstrip("0") or "0"
    # decimal point position: value = 0.DIGITS * 10^decpt
    decpt = len(digits) + int(exp)
    nd = len(ds)
    neg = "-" if sign else ""
    if decpt <= -4 or decpt > nd + 15:
        e = decpt - 1
        mant = ds[0] + ("." + ds[1:] if nd > 1 else "")
        return f"{neg}{mant}e{'+' if e >= 0 else '-'}{abs(e):02d}"
    if decpt <= 0:
        return f"{neg}0.{'0' * -decpt}{ds}"
    if decpt >= nd:
        return f"{neg}{ds}{'0' * (decpt - nd)}"
    return f"{neg}{ds[:decpt]}.{ds[decpt:]}"


def dump_json(v: Any, indent: int | str = 2, sort_keys: bool = False, ascii_only: bool = False,
              level: int = 0) -> str:
    """jq's dump: ``indent`` 0 = compact, an int = spaces, "\\t" = tabs."""
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, (int, float)):
        return format_number(v)
    if isinstance(v, str):
        return dump_string(v, ascii_only)
    pad = indent if isinstance(indent, str) else " " * indent
    if isinstance(v, list):
        if not v:
            return "[]"
        if not indent:
            return "[" + ",".join(dump_json(x, indent, sort_keys, ascii_only, level + 1) for x in v) + "]"
        inner = pad * (level + 1)
        return ("[\n" + ",\n".join(inner + dump_json(x, indent, sort_keys, ascii_only, level + 1) for x in v)
                + "\n" + pad * level + "]")
    if isinstance(v, dict):
        if not v:
            return "{}"
        items = sorted(v.items()) if sort_keys else list(v.items())
        if not indent:
            return "{" + ",".join(dump_string(k, ascii_only) + ":" + dump_json(x, indent, sort_keys, ascii_only,
                                                                               level + 1)
                                  for k, x in items) + "}"
        inner = pad * (level + 1)
        return ("{\n" + ",\n".join(inner + dump_string(k, ascii_only) + ": "
                                   + dump_json(x, indent, sort_keys, ascii_only, level + 1) for k, x in items)
                + "\n" + pad * level + "}")
    return json.dumps(v)


class _Input:
    __slots__ = ("fname", "value", "where")

    def __init__(self, value: Any, where: str, fname: str | None = None) -> None:
        self.value = value
        self.where = where
        self.fname = fname  # what input_filename reports (jq names stdin "<stdin>")


_cache: dict[tuple, Any] = {}


def _compile(src: str, args: dict) -> Any:
    key = (src, json.dumps(args, sort_keys=True, default=str))
    p = _cache.get(key)
    if p is None:
        if len(_cache) > 64:
            _cache.clear()
        p = _jq.compile(src, args=args)
        _cache[key] = p
    return p


_DIRECTIVE = re.compile(r"syntax error, unexpected (?:import|include)\b")


def compile_alone(src: str, args: dict, behind_prelude: ValueError) -> Any:
    """``src`` compiled on its own, for its error messages in the user's own lines, once it
    failed behind _PRELUDE with ``behind_prelude``. A module directive (import, include) is
    valid only first in a program, so behind the prelude it is always that syntax error; on
    its own libjq would load the named file, of this host (a virtual sandbox's jq read a host
    .jq file and printed its lines in the syntax error, and probed for any .jq/.json): such a
    program is refused here instead, with the error jqcmd gives for one it recognises."""
    if _DIRECTIVE.search(str(behind_prelude)):
        raise ValueError("jq: error: modules are not available in the sandbox\n"
                         "jq: 1 compile error")
    return _compile(src, args)


# $ENV/env come from the sandbox; halt and halt_error (which the binding would drop) become
# marked errors that the output loop turns into jq's behaviour: stop, print, exit status.
_PRELUDE = ("$__agentic_env as $ENV | def env: $ENV; def input_filename: $__agentic_fname; "
            "def halt: error({\"__agentic_halt\": true, \"code\": 0}); "
            "def halt_error($c): error({\"__agentic_halt\": true, \"code\": $c, \"value\": .}); "
            "def halt_error: halt_error(5); "
            # jq 1.6's tonumber parses the string as JSON: its parser's messages, and type_error's
            # 14-byte dump of anything that is not a number
            "def tonumber: if type == \"number\" then . else (if type == \"string\" then fromjson "
            "else null end) as $__v | if ($__v | type) == \"number\" then $__v else error(\"\\(type) "
            "(\\(tojson | if length > 14 then .[0:11] + \"...\" else . end)) cannot be parsed as a number\") "
            "end end; "
            "def leaf_paths: paths(scalars); "
            # 1.6's ltrimstr/rtrimstr hand back anything that is not a string pair unchanged
            "def ltrimstr($x): if type == \"string\" and ($x | type) == \"string\" and startswith($x) "
            "then .[($x | length):] else . end; "
            "def rtrimstr($x): if type == \"string\" and ($x | type) == \"string\" and endswith($x) "
            "and ($x | length) > 0 then .[:length - ($x | length)] else . end; ")


_NOTHING = object()


_COMPILE_ERR_RE = re.compile(r"jq: error: (.*?) at <top-level>, line (\d+), column (\d+):\n(?:    .*\n)?(?: *\^+\n?)?")


def _compile_err_16(msg: str, src: str) -> str:
    """libjq 1.7's compile error in jq 1.6's shape: "$end", the shell-quoting hint, and the
    offending line followed by as many spaces as the error's column (1.6 prints no caret)."""
    lines = src.split("\n")

    def one(m: re.Match[str]) -> str:
        text, line, col = m.group(1), int(m.group(2)), int(m.group(3))
        if text.startswith("syntax error"):
            text = text.replace("end of file", "$end") + " (Unix shell quoting issues?)"
        ln = lines[line - 1] if 0 < line <= len(lines) else ""
        return f"jq: error: {text} at <top-level>, line {line}:\n{ln}{' ' * max(col - 1, 0)}\n"

    return _COMPILE_ERR_RE.sub(one, msg)


_PARSE_POS_RE = re.compile(r"^parse error: Invalid (?:numeric )?literal at line (\d+), column (\d+)$")


def _parse_err_16(msg: str, text: str) -> str:
    """jq 1.6 says "Invalid literal" for a bad token starting with t/f/n (not three long and
    n-initial: that one tried "nan" and then a number) and "Invalid numeric literal" otherwise."""
    m = _PARSE_POS_RE.match(msg)
    if not m:
        return msg
    line, col = int(m.group(1)), int(m.group(2))
    rows = text.split("\n")
    off = sum(len(r) + 1 for r in rows[:line - 1]) + col - 1  # the delimiter that ended the token
    tok = re.search(r"[A-Za-z0-9.+\-]+$", text[:max(off, 0)])
    if not tok:
        return msg
    t = tok.group(0)
    lit = t[0] in "tf" or (t[0] == "n" and len(t) != 3)
    kind = "Invalid literal" if lit else "Invalid numeric literal"
    return f"parse error: {kind} at line {line}, column {col}"


def _err_text(msg: str) -> str:
    """The binding's runtime message in jq 1.6's words (the bundled libjq is newer)."""
    if msg.startswith("jq: error"):
        msg = msg.split(":", 2)[-1].strip()
    msg = _IDX_RE.sub(r'with string "\1"', msg)
    # 1.7 appends the offending key ("with number (0)"); 1.6 names only its kind
    msg = _IDX_KIND_RE.sub(r"\1", msg)
    return msg


_IDX_RE = re.compile(r'with string \("((?:[^"\\]|\\.)*)"\)')


_IDX_KIND_RE = re.compile(r"^(Cannot index \w+ with (?:number|array|object|boolean|null)) \(.*\)$", re.S)


def _parse_all(text: str) -> tuple[list[Any], str | None]:
    """All JSON values in ``text`` parsed by libjq itself (its messages, its number rules)."""
    vals: list[Any] = []
    if not text.strip():
        return vals, None
    try:
        for v in _compile(".", {}).input_text(text):
            vals.append(v)
    except ValueError as e:
        return vals, str(e)
    return vals, None


_INPUT_RE = re.compile(r"(?<![\w$@.])(inputs|input)(?![\w])")


def _uses_input(src: str) -> bool:
    return _INPUT_RE.search(_strip_strings(src)) is not None


def _strip_strings(src: str) -> str:
    return re.sub(r'"(?:[^"\\]|\\.)*"', '""', src)


def _rewrite_inputs(src: str) -> str:
    out = []
    pos = 0
    for m in re.finditer(r'"(?:[^"\\]|\\.)*"', src):
        out.append(_INPUT_RE.sub(_repl_input, src[pos:m.start()]))
        out.append(m.group(0))
        pos = m.end()
    out.append(_INPUT_RE.sub(_repl_input, src[pos:]))
    return "".join(out)


def _repl_input(m: re.Match) -> str:
    if m.group(1) == "inputs":
        return "($__agentic_inputs[])"
    return "(if ($__agentic_inputs|length) > 0 then $__agentic_inputs[0] else error(\"No more inputs\") end)"



def evaluate(job: dict, out: Callable[[bytes], Any], err: Callable[[bytes], Any],
             check: Callable[[], None]) -> int:
    """Run ``job`` (see jqcmd.jq: the filter, its arguments, the options and the inputs'
    bytes) as the jq 1.6 CLI would: its outputs to ``out``, its messages to ``err``; returns
    the exit status. ``check`` is called between inputs and outputs (the run's budget)."""
    filter_: str = job["filter"]
    opts: dict = job["opts"]
    indent: int | str = job["indent"]
    named: dict = job["named"]
    positional: list = job["positional"]
    sources: list[tuple[str, bytes]] = job["sources"]
    status: int = job["status"]
    for k, v, text in job["slurpfiles"]:
        vals, perr = _parse_all(text)
        if perr:
            err(f"jq: Bad JSON in --slurpfile {k} {v}: {perr}\n".encode())
            return 2
        named[k] = vals
    jargs = dict(named)
    jargs["ARGS"] = {"positional": positional, "named": named}
    run_args = dict(jargs)
    run_args["__agentic_env"] = job["env"]
    run_args["__agentic_fname"] = None
    try:
        prog = _compile(_PRELUDE + filter_, run_args)
    except ValueError as behind:
        try:
            compile_alone(filter_, jargs, behind)  # errors reported against the user's own text
        except ValueError as e:
            msg = _compile_err_16(str(e), filter_)
            if not msg.endswith("\n"):
                msg += "\n"
            err(msg.encode("utf-8", "replace"))
            return 3
        prog = _compile(_PRELUDE + filter_, run_args)
    inputs: list[_Input] = []
    parse_error: str | None = None
    check()
    if opts["R"]:
        if opts["s"]:
            text = "".join(d.decode("utf-8", "replace") for _, d in sources)
            name = sources[-1][0] if sources else "<stdin>"
            inputs.append(_Input(text, name, name))
        else:
            for name, d in sources:
                lines = d.decode("utf-8", "replace").split("\n")
                if lines and lines[-1] == "":
                    lines.pop()
                for ln in lines:
                    inputs.append(_Input(ln, name, name))
    else:
        for name, d in sources:
            text = d.decode("utf-8", "replace")
            vals, perr = _parse_all(text)
            where = f"{name}:{text.count(chr(10))}"
            inputs.extend(_Input(v, where, name) for v in vals)
            if perr:
                parse_error = _parse_err_16(perr, text)
                break
        if opts["s"]:
            last_name = sources[-1][0] if sources else None
            inputs = [_Input([x.value for x in inputs], inputs[-1].where if inputs else "<unknown>", last_name)]
    if opts["n"]:
        rest = [x.value for x in inputs]
        inputs = [_Input(None, "<unknown>")]
    else:
        rest = []
    # `input`/`inputs` read the remaining inputs: the binding has no input callback, so the
    # whole stream is handed over as an array (the program then runs once).
    src2 = filter_
    if _uses_input(filter_):
        if not opts["n"] and inputs:
            rest = [x.value for x in inputs[1:]]
            inputs = inputs[:1]
        src2 = _rewrite_inputs(filter_)
        run_args["__agentic_inputs"] = rest
        prog = _compile(_PRELUDE + src2, run_args)

    ind: int | str = 0 if opts["c"] else indent
    last: Any = _NOTHING
    by_fname: dict[str, Any] = {}
    wants_fname = "input_filename" in filter_
    for inp in inputs:
        check()
        try:
            p_run = prog
            fname = inp.fname
            if wants_fname and fname is not None:
                p_run = by_fname.get(fname)
                if p_run is None:
                    fargs = dict(run_args)
                    fargs["__agentic_fname"] = fname
                    p_run = by_fname[fname] = _compile(_PRELUDE + src2, fargs)
            for v in p_run.input_value(inp.value):
                check()  # libjq itself cannot be interrupted; between outputs we can stop
                last = v
                if opts["seq"]:
                    out(b"\x1e")
                if opts["r"] and isinstance(v, str):
                    s = v
                else:
                    s = dump_json(v, ind, opts["S"], opts["a"])
                out(s.encode("utf-8", "replace"))
                if not opts["j"]:
                    out(b"\n")
            status = 0 if status != 2 else 2
        except ValueError as e:
            msg = str(e)
            if msg == "break":
                continue
            where = inp.where
            try:
                obj = json.loads(msg) if msg[:1] in "{[" else None
            except ValueError:
                obj = None
            if isinstance(obj, dict) and obj.get("__agentic_halt") is True:
                if "value" in obj:
                    hv = obj["value"]
                    if isinstance(hv, str):
                        err(hv.encode("utf-8", "replace"))
                    else:
                        err((dump_json(hv, 0) + "\n").encode("utf-8", "replace"))
                code = obj.get("code", 0)
                return int(code) if isinstance(code, (int, float)) else 5
            if isinstance(obj, (dict, list)):
                err(f"jq: error (at {where}) (not a string): {dump_json(obj, 0)}\n".encode())
            else:
                err(f"jq: error (at {where}): {_err_text(msg)}\n".encode("utf-8", "replace"))
            status = 5
    if parse_error is not None:
        err(f"{parse_error}\n".encode())
        return 2 if status == 2 else 4  # (jq 1.6 exits 4 after an input parse error, 2 if a file was missing)
    if opts["e"] and status == 0 and inputs and not (len(inputs) == 1 and inputs[0].where == "<none>"):
        if last is _NOTHING:
            return 4
        if last is None or last is False:
            return 1
    return status


# -- the worker process -----------------------------------------------------------------------
# Frames to the parent: one kind byte, a 4-byte little-endian length, the payload.
# a: the job was read (an end of file before it means the worker was gone, not the job's
# fault); o: output bytes; e: message bytes; x: the exit status (ASCII); m: memory exhausted.

def _frame(kind: bytes, payload: bytes = b"") -> bytes:
    return kind + len(payload).to_bytes(4, "little") + payload


def _write_all(fd: int, data: bytes) -> None:
    import os
    mv = memoryview(data)
    while mv:
        mv = mv[os.write(fd, mv):]


def _read_exact(fd: int, n: int) -> bytes:
    import os
    parts = []
    while n:
        b = os.read(fd, min(n, 1 << 20))
        if not b:
            raise EOFError
        parts.append(b)
        n -= len(b)
    return b"".join(parts)


def serve(idle: float) -> None:
    """The worker: jobs from stdin, frames to stdout, one job at a time; it ends at end of
    input or after ``idle`` seconds without a job. Each job's memory is capped (RLIMIT_DATA:
    what the worker uses now plus the job's ``cap``), so a program that builds too much
    fails to allocate here and the parent reports "memory exhausted"."""
    import os
    import resource
    import select
    rfd, wfd = 0, 1
    soft0, hard = resource.getrlimit(resource.RLIMIT_DATA)
    while True:
        if not select.select([rfd], [], [], idle)[0]:
            return
        try:
            n = int.from_bytes(_read_exact(rfd, 8), "little")
            job = json.loads(_read_exact(rfd, n))
            job["sources"] = [(name, _read_exact(rfd, size)) for name, size in job["sources"]]
        except (EOFError, OSError):
            return
        _write_all(wfd, _frame(b"a"))
        cap = job.pop("cap", None)
        if cap is not None:
            with open("/proc/self/statm") as f:
                # (statm's "data" field: data + stack pages, what RLIMIT_DATA counts, near enough)
                data = int(f.read().split()[5]) * resource.getpagesize()
            lim = data + int(cap)
            if hard != resource.RLIM_INFINITY:
                lim = min(lim, hard)
            resource.setrlimit(resource.RLIMIT_DATA, (lim, hard))
        buf = bytearray()
        last = [time.monotonic()]

        def flush() -> None:
            mv = memoryview(bytes(buf))
            del buf[:]
            for i in range(0, len(mv), 1 << 20):
                _write_all(wfd, _frame(b"o", mv[i:i + (1 << 20)]))
            last[0] = time.monotonic()

        def out(b: bytes) -> None:
            buf.extend(b)
            if len(buf) >= 1 << 16 or time.monotonic() - last[0] > 0.05:
                flush()

        def err(b: bytes) -> None:
            if buf:
                flush()
            _write_all(wfd, _frame(b"e", b))

        try:
            st = evaluate(job, out, err, lambda: None)
            if buf:
                flush()
            _write_all(wfd, _frame(b"x", str(st).encode()))
        except MemoryError:
            buf = bytearray()
            _write_all(wfd, _frame(b"m"))
            return
        finally:
            job = None  # type: ignore[assignment]
            if cap is not None:
                resource.setrlimit(resource.RLIMIT_DATA, (soft0, hard))
