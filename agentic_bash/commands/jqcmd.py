"""jq over the VFS: libjq (the ``jq`` package) runs the filter; output formatted like the jq 1.6 CLI."""

# libjq cannot be interrupted, so inputs are bounded by limits.max_variable_bytes instead.
# $ENV / env are rebound to the sandbox's environment (libjq would read the host's), and
# module imports are refused (they would read the host filesystem).

from __future__ import annotations

import decimal
import json
import math
import re
from typing import Any

from .base import CommandContext, command

__all__ = ["dump_json", "format_number"]

try:
    import jq as _jq
except ImportError:  # pragma: no cover - the [jq] extra is missing
    _jq = None

_USAGE = """Usage:\tjq [OPTIONS] FILTER [FILES...]
\tjq [OPTIONS] --args FILTER [ARGUMENTS...]
\tjq [OPTIONS] --jsonargs FILTER [JSON_VALUES...]

jq is a tool for processing JSON inputs, applying the given filter to
its JSON text inputs and producing the filter's results as JSON on
standard output.

The simplest filter is ., which copies jq's input to its output
unmodified (except for formatting, but note that IEEE754 is used
for number representation internally, with all that that implies).

For more advanced filters see the jq(1) manpage ("man jq")
and/or https://stedolan.github.io/jq

Example:

\t$ echo '{"foo": 0}' | jq .
\t{
\t  "foo": 0
\t}

Some of the options include:
  -c               compact instead of pretty-printed output;
  -n               use `null` as the single input value;
  -e               set the exit status code based on the output;
  -s               read (slurp) all inputs into an array; apply filter to it;
  -r               output raw strings, not JSON texts;
  -a               output ASCII with escape sequences;
  -S               sort keys of objects on output;
  -C               colorize JSON;
  -M               monochrome (don't colorize JSON);
  --tab            use tabs for indentation;
  --arg a v        set variable $a to value <v>;
  --argjson a v    set variable $a to JSON value <v>;
  --slurpfile a f  set variable $a to an array of JSON texts read from <f>;
  --rawfile a f    set variable $a to a string consisting of the contents of <f>;
  --args           remaining arguments are string arguments, not files;
  --jsonargs       remaining arguments are JSON arguments, not files;
  --               terminates argument processing;

Named arguments are also available as $ARGS.named[], while
positional arguments are available as $ARGS.positional[].

See the manpage for more options.
"""

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
_BAD_MODULE = re.compile(r"^\s*(import|include)\b|\bmodulemeta\b|get_search_list")


def _compile(src: str, args: dict) -> Any:
    key = (src, json.dumps(args, sort_keys=True, default=str))
    p = _cache.get(key)
    if p is None:
        if len(_cache) > 64:
            _cache.clear()
        p = _jq.compile(src, args=args)
        _cache[key] = p
    return p


@command("jq", usage="jq [OPTIONS] FILTER [FILES...]", help="Command-line JSON processor (libjq).")
def jq(ctx: CommandContext, argv: list[str]) -> int:
    if _jq is None:
        ctx.stderr.write(b"jq: the jq Python package (libjq bindings) is not installed\n")
        return 2
    opts = {"r": False, "j": False, "c": False, "n": False, "s": False, "e": False, "S": False, "a": False,
            "R": False, "seq": False}
    indent: int | str = 2
    named: dict[str, Any] = {}
    positional: list[Any] = []
    filter_: str | None = None
    files: list[str] = []
    from_file: str | None = None
    rest_mode: str | None = None
    args = argv[1:]
    i = 0
    limit = ctx.budget.limits.max_variable_bytes

    def usage_err(msg: str) -> int:
        ctx.stderr.write(f"jq: {msg}\n".encode())
        ctx.stderr.write(b"Use jq --help for help with command-line options,\nor see the jq manpage, "
                         b"or online docs  at https://stedolan.github.io/jq\n")
        return 2

    def read_file(name: str) -> bytes:
        with ctx.fs.open(ctx.path(name), "rb") as f:
            data = f.read(limit + 1 if limit is not None else -1)
        if limit is not None and len(data) > limit:
            raise _TooBig(name)
        return data

    end_opts = False
    while i < len(args):
        a = args[i]
        i += 1
        if rest_mode is not None and filter_ is not None and (end_opts or not a.startswith("-") or a == "-"):
            if rest_mode == "args":
                positional.append(a)
            else:
                try:
                    positional.append(json.loads(a))
                except ValueError:
                    return usage_err(f"Invalid JSON text passed to --jsonargs")
            continue
        if end_opts or not a.startswith("-") or a == "-":
            if filter_ is None and from_file is None:
                filter_ = a
            else:
                files.append(a)
            continue
        if a == "--":
            end_opts = True
            continue
        if a.startswith("--"):
            name = a[2:]
            if name in ("raw-output",):
                opts["r"] = True
            elif name == "join-output":
                opts["r"] = opts["j"] = True
            elif name == "compact-output":
                opts["c"] = True
            elif name == "null-input":
                opts["n"] = True
            elif name == "slurp":
                opts["s"] = True
            elif name == "exit-status":
                opts["e"] = True
            elif name == "sort-keys":
                opts["S"] = True
            elif name == "ascii-output":
                opts["a"] = True
            elif name == "raw-input":
                opts["R"] = True
            elif name in ("color-output", "monochrome-output", "unbuffered", "stream-errors"):
                pass
            elif name == "seq":
                opts["seq"] = True
            elif name == "tab":
                indent = "\t"
            elif name == "indent":
                if i >= len(args):
                    return usage_err("--indent takes one parameter")
                m = re.match(r"\s*[+-]?\d+", args[i])  # jq 1.6 reads it with atoi()
                n = int(m.group()) if m else 0
                i += 1
                if n > 7 or n < -1:
                    return usage_err("--indent takes a number between -1 and 7")
                indent = "\t" if n == -1 else n
            elif name in ("arg", "argjson", "slurpfile", "rawfile"):
                if i + 1 >= len(args):
                    return usage_err(f"--{name} takes two parameters (e.g. --{name} varname "
                                     f"{'value' if name in ('arg', 'argjson') else 'filename'})")
                k, v = args[i], args[i + 1]
                i += 2
                if name == "arg":
                    named[k] = v
                elif name == "argjson":
                    try:
                        named[k] = json.loads(v)
                    except ValueError:
                        return usage_err("invalid JSON text passed to --argjson")
                else:
                    try:
                        data = read_file(v)
                    except OSError as e:
                        ctx.stderr.write(f"jq: Bad JSON in --{name} {k} {v}: Could not open {v}: "
                                         f"{e.strerror}\n".encode())
                        return 2
                    except _TooBig:
                        ctx.stderr.write(f"jq: error: {v}: input larger than the sandbox limit "
                                         f"({limit} bytes)\n".encode())
                        return 2
                    text = data.decode("utf-8", "replace")
                    if name == "rawfile":
                        named[k] = text
                    else:
                        vals, perr = _parse_all(text)
                        if perr:
                            ctx.stderr.write(f"jq: Bad JSON in --slurpfile {k} {v}: {perr}\n".encode())
                            return 2
                        named[k] = vals
            elif name in ("from-file",):
                if i >= len(args):
                    return usage_err("-f takes a parameter")
                from_file = args[i]
                i += 1
            elif name == "args":
                rest_mode = "args"
            elif name == "jsonargs":
                rest_mode = "jsonargs"
            elif name == "help":
                ctx.stdout.write(_USAGE.encode())
                return 0
            elif name == "version":
                ctx.stdout.write(b"jq-1.6\n")
                return 0
            else:
                return usage_err(f"Unknown option {a}")
            continue
        # short options, clustered
        for c in a[1:]:
            if c in "rcnseSaRj":
                opts[c] = True
                if c == "j":
                    opts["r"] = True
            elif c in "CM":
                pass
            elif c == "h":
                ctx.stdout.write(_USAGE.encode())
                return 0
            elif c == "f":
                if i >= len(args):
                    return usage_err("-f takes a parameter")
                from_file = args[i]
                i += 1
            elif c == "L":
                i += 1
            else:
                return usage_err(f"Unknown option {a}")
    if from_file is not None:
        if filter_ is not None:
            files.insert(0, filter_)
        try:
            filter_ = read_file(from_file).decode("utf-8", "replace")
        except OSError as e:
            ctx.stderr.write(f"jq: error: Could not open {from_file}: {e.strerror}\n".encode())
            return 2
        except _TooBig:
            ctx.stderr.write(b"jq: error: program file too large\n")
            return 2
    if filter_ is None:
        filter_ = "."
    if _BAD_MODULE.search(filter_):
        ctx.stderr.write(b"jq: error: modules are not available in the sandbox\njq: 1 compile error\n")
        return 3
    jargs = dict(named)
    jargs["ARGS"] = {"positional": positional, "named": named}
    env = dict(ctx.env)
    run_args = dict(jargs)
    run_args["__agentic_env"] = env
    run_args["__agentic_fname"] = None
    try:
        prog = _compile(_PRELUDE + filter_, run_args)
    except ValueError:
        prog = None
    if prog is None:
        try:
            _compile(filter_, jargs)  # compile errors are reported against the user's own text
        except ValueError as e:
            msg = _compile_err_16(str(e), filter_)
            if not msg.endswith("\n"):
                msg += "\n"
            ctx.stderr.write(msg.encode("utf-8", "replace"))
            return 3
        prog = _compile(_PRELUDE + filter_, run_args)

    # -- inputs --------------------------------------------------------------------------
    status = 0
    inputs: list[_Input] = []
    parse_error: str | None = None
    total = 0
    sources: list[tuple[str, bytes]] = []
    if not files:
        data = ctx.stdin.read(limit + 1) if limit is not None else ctx.stdin.read()
        if limit is not None and len(data) > limit:
            ctx.stderr.write(f"jq: error: input larger than the sandbox limit ({limit} bytes)\n".encode())
            return 2
        if not opts["n"] or _uses_input(filter_):
            sources.append(("<stdin>", data))
    else:
        for fn in files:
            try:
                if fn == "-":  # stdin among the files; a second "-" finds it drained
                    data = ctx.stdin.read(limit + 1) if limit is not None else ctx.stdin.read()
                    if limit is not None and len(data) > limit:
                        raise _TooBig(fn)
                    fn = "<stdin>"
                else:
                    data = read_file(fn)
            except _TooBig:
                ctx.stderr.write(f"jq: error: {fn}: input larger than the sandbox limit ({limit} bytes)\n"
                                 .encode())
                return 2
            except OSError as e:
                ctx.stderr.write(f"jq: error: Could not open file {fn}: {e.strerror}\n".encode())
                status = 2
                continue
            total += len(data)
            if limit is not None and total > limit:
                ctx.stderr.write(f"jq: error: input larger than the sandbox limit ({limit} bytes)\n".encode())
                return 2
            sources.append((fn, data))
    ctx.budget.check()
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
    out = ctx.stdout
    by_fname: dict[str, Any] = {}
    wants_fname = "input_filename" in filter_
    for inp in inputs:
        ctx.budget.check()
        try:
            p_run = prog
            fname = inp.fname
            if wants_fname and fname is not None:
                p_run = by_fname.get(fname)
                if p_run is None:
                    fargs = dict(run_args)
                    fargs["__agentic_fname"] = fname
                    p_run = by_fname[fname] = _compile(_PRELUDE + src2, fargs)
            outs = (_forked_outputs(ctx, p_run, inp.value) if _may_loop(filter_)
                    else p_run.input_value(inp.value))
            try:
                for v in outs:
                    ctx.budget.check()  # libjq itself cannot be interrupted; between outputs we can stop
                    last = v
                    if opts["seq"]:
                        out.write(b"\x1e")
                    if opts["r"] and isinstance(v, str):
                        s = v
                    else:
                        s = dump_json(v, ind, opts["S"], opts["a"])
                    out.write(s.encode("utf-8", "surrogatepass" if False else "replace"))
                    if not opts["j"]:
                        out.write(b"\n")
            finally:
                # (a forked child's reader is closed, and the child killed, however the loop
                # ended: a stage stopped by a closed pipe or the deadline left its generator
                # held by the traceback, and the child blocked writing for the rest of the
                # process's life -- CI found one alive after ten minutes)
                close = getattr(outs, "close", None)
                if close is not None:
                    close()
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
                        ctx.stderr.write(hv.encode("utf-8", "replace"))
                    else:
                        ctx.stderr.write((dump_json(hv, 0) + "\n").encode("utf-8", "replace"))
                code = obj.get("code", 0)
                return int(code) if isinstance(code, (int, float)) else 5
            if isinstance(obj, (dict, list)):
                ctx.stderr.write(f"jq: error (at {where}) (not a string): {dump_json(obj, 0)}\n".encode())
            else:
                ctx.stderr.write(f"jq: error (at {where}): {_err_text(msg)}\n".encode("utf-8", "replace"))
            status = 5
    if parse_error is not None:
        ctx.stderr.write(f"{parse_error}\n".encode())
        return 2 if status == 2 else 4  # (jq 1.6 exits 4 after an input parse error, 2 if a file was missing)
    if opts["e"] and status == 0 and inputs and not (len(inputs) == 1 and inputs[0].where == "<none>"):
        if last is _NOTHING:
            return 4
        if last is None or last is False:
            return 1
    return status


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


class _TooBig(Exception):
    pass


# A program that can loop or recurse inside libjq (`def f: f; f`, `last(range(1e9))`,
# `[range(1e8)]`) ran there holding the GIL: the run's deadline could not stop it, not even
# the watchdog ran (`def f: f; f` never ended; `last(range(3e7))` held the process 48 s).
# Such programs run in a forked child (libjq's state only, no Python code of ours): the
# parent reads its outputs with the deadline checked and kills it at the stop. Its memory
# is not capped (an RLIMIT_AS of its size + 128 MiB, tried, still let `"x" * 1e9` build 1 GB:
# not understood, left out), as it was not in-process either. Programs without
# these constructs (`.`, `.a[] | .b`, `select(...)`) cost what their input costs and stay
# in-process (a fork is ~ms for a large host process).
_MAY_LOOP = re.compile(r"\b(?:repeat|recurse|recurse_down|until|while|def|reduce|foreach|limit|"
                       r"combinations|walk|paths|leaf_paths|splits|pow|getpath|env|input|inputs|last|nth|"
                       r"first|until|tostream|fromstream|truncate_stream|ltrimstr|rtrimstr|implode)\b|\.\.|\*")


def _may_loop(src: str) -> bool:
    """See _MAY_LOOP. A bare ``range`` streams its outputs (the deadline is checked between
    them) and stays in-process: a fork is counted in the process tree's RSS with all the
    host's pages (copy-on-write, shared), +575 MiB for `jq -n 'range(1e9)' | head`; inside
    ``[...]`` it is one output and forks."""
    return _MAY_LOOP.search(src) is not None or ("range" in src and "[" in src)


def _forked_outputs(ctx: CommandContext, prog: Any, value: Any) -> Any:
    """``prog.input_value(value)``'s outputs, computed in a forked child (see _MAY_LOOP)."""
    import os
    import pickle
    import select
    import signal
    import struct

    from ._args import held_cap
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            os.close(r)

            def send(obj: Any) -> None:
                b = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
                os.write(w, struct.pack("<Q", len(b)))
                mv = memoryview(b)
                while mv:
                    n = os.write(w, mv)
                    mv = mv[n:]
            try:
                for v in prog.input_value(value):
                    send(("v", v))
                send(("end", None))
            except ValueError as e:
                send(("err", str(e)))
            except MemoryError:
                send(("mem", None))
        finally:
            os._exit(0)
    os.close(w)
    buf = bytearray()
    ended = False
    try:
        while not ended:
            rl, _, _ = select.select([r], [], [], 0.02)
            ctx.budget.check()
            if not rl:
                continue
            chunk = os.read(r, 1 << 20)
            if not chunk:
                raise MemoryError("memory exhausted")  # the child died (its memory cap, most likely)
            buf += chunk
            if len(buf) > held_cap(ctx):
                raise MemoryError("memory exhausted")
            while len(buf) >= 8:
                n = struct.unpack_from("<Q", buf)[0]
                if len(buf) < 8 + n:
                    break
                kind, v = pickle.loads(bytes(buf[8:8 + n]))
                del buf[:8 + n]
                if kind == "v":
                    yield v
                elif kind == "err":
                    raise ValueError(v)
                elif kind == "mem":
                    raise MemoryError("memory exhausted")
                else:
                    ended = True
                    break
    finally:
        os.close(r)
        try:
            if not ended:
                os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        except OSError:
            pass


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
