"""awk's command line: -F -v -f --, program text, operands; mawk's messages."""

from __future__ import annotations

import os
import re

from ..base import CommandContext
from .interp import Program, run_program
from .parser import AwkSyntaxError, unescape
from .runtime import AwkError

__all__ = ["awk_main"]

_USAGE = """Usage: mawk [Options] [Program] [file ...]

Program:
    The -f option value is the name of a file containing program text.
    If no -f option is given, a "--" ends option processing; the following
    parameters are the program text.

Options:
    -f program-file  Program  text is read from file instead of from the
                     command-line.  Multiple -f options are accepted.
    -F value         sets the field separator, FS, to value.
    -v var=value     assigns value to program variable var.
    --               unambiguous end of options.

    Implementation-specific options are prefixed with "-W".  They can be
    abbreviated:

    -W version       show version information and exit.
    -W dump          show assembler-like listing of program and exit.
    -W help          show this message and exit.
    -W interactive   set unbuffered output, line-buffered input.
    -W exec file     use file as program as well as last option.
    -W random=number set initial random seed.
    -W sprintf=number adjust size of sprintf buffer.
    -W posix_space   do not consider "\\n" a space.
    -W usage         show this message and exit.
"""

_VERSION = ("mawk 1.3.4 20200120\nCopyright 2008-2019,2020, Thomas E. Dickey\n"
            "Copyright 1991-1996,2014, Michael D. Brennan\n\n")
_LIMITS = ("random-funcs:       srandom/random\nregex-funcs:        internal\ncompiled limits:\n"
           "sprintf buffer      8192\nmaximum-integer     2147483647\n")

_cache: dict[tuple[str, bool], Program] = {}


def _l1(s: str) -> str:
    """argv text -> awk's latin-1 text (one char per byte)."""
    return s.encode("utf-8", "surrogateescape").decode("latin-1")


def awk_main(ctx: CommandContext, argv: list[str]) -> int:
    name = ctx.name or argv[0] or "awk"
    args = argv[1:]
    fs: str | None = None
    assigns: list[tuple[str, str]] = []
    progfiles: list[str] = []
    i = 0

    def err(msg: str) -> None:
        ctx.stderr.write(f"{name}: {msg}\n".encode("utf-8", "surrogateescape"))

    while i < len(args):
        a = args[i]
        if a == "--":
            i += 1
            break
        if not a.startswith("-") or a == "-":
            break
        gawk = name.rsplit("/", 1)[-1] == "gawk"  # mawk (this machine's awk) has no --version
        wopt = a[2:] if a.startswith("-W") and len(a) > 2 else (args[i + 1] if a == "-W" and i + 1 < len(args)
                                                               else "")
        if (gawk and a in ("--version", "-V")) or (a.startswith("-W") and wopt.startswith("v")):
            ctx.stdout.write(_VERSION.encode())
            ctx.stderr.write(_LIMITS.encode())
            return 0
        if gawk and a in ("--help", "-h"):
            ctx.stdout.write(_USAGE.encode())
            return 0
        if a.startswith("-W") and wopt[:1] in ("h", "u"):
            ctx.stderr.write(_USAGE.encode())  # mawk writes its usage to stderr
            return 0
        opt = a[1]
        if opt in "Ffv":
            if len(a) > 2:
                val = a[2:]
            else:
                i += 1
                if i >= len(args):
                    err(f"option -{opt} lacks argument")  # mawk's wording, no usage text
                    return 2
                val = args[i]
            if opt == "F":
                fs = _l1(val)
                # -F 't' is a tab for POSIX; mawk and gawk also take escapes in -F
                fs = "\t" if fs == "t" and False else unescape(fs)
            elif opt == "f":
                progfiles.append(val)
            else:
                if not re.match(r"[A-Za-z_][A-Za-z0-9_]*=", val):
                    err(f"improper assignment: -v {val}")
                    return 2
                k, _, v = val.partition("=")
                assigns.append((_l1(k), _l1(v)))
            i += 1
            continue
        if opt == "W":
            # -W options other than version/help are accepted and ignored
            if len(a) == 2:
                i += 1
            i += 1
            continue
        err(f"not an option: {a}")
        return 2
    rest = args[i:]
    starts: list[tuple[int, str]] = []

    def where(line: int, name: bool = True) -> str:
        for first, pf in reversed(starts):
            if line >= first:
                return f"{pf}: line {line - first + 1}" if name else str(line - first + 1)
        return f"line {line}" if name else str(line)

    if progfiles:
        texts = []
        for pf in progfiles:
            try:
                if pf in ("-", "/dev/stdin"):
                    texts.append(ctx.stdin.read())
                else:
                    with ctx.fs.open(ctx.path(pf), "rb") as f:
                        texts.append(f.read())
            except OSError as e:
                # mawk (this machine's awk): "awk: cannot open F (No such file or directory)"
                if e.errno == 21:  # EISDIR: mawk opens it, then fails to read
                    err("read error (Is a directory)")
                else:
                    err(f"cannot open {pf} ({os.strerror(e.errno or 2)})")
                return 2
        src = "\n".join(t.decode("latin-1") for t in texts)
        # (mawk names the program file and its own line in a syntax error: `awk: f.awk: line 3:`)
        at = 1
        for pf, t in zip(progfiles, texts):
            starts.append((at, pf))
            at += t.count(b"\n") + 1
    else:
        if not rest:
            # mawk: usage (and status 0) only for a bare "awk"; with options, silently 0
            if not args:
                ctx.stderr.write(_USAGE.encode())
            return 0
        src = _l1(rest[0])
        rest = rest[1:]
    # invoked as gawk: gawk's integer output and regex intervals (everything else is mawk's)
    mawk = name.rsplit("/", 1)[-1] != "gawk"
    prog = _cache.get((src, mawk))
    if prog is None:
        try:
            prog = Program(src, mawk)
            if prog.extra:
                for line, msg in prog.extra:
                    err(f"{where(line)}: {msg}")
                return 2
        except AwkSyntaxError as e:
            for line, msg in getattr(e, "extra", ()):
                err(f"{where(line)}: {msg}")
            near = e.near
            if str(e) == "syntax error":
                if near == "end of file":
                    depth = src.count("{") - src.count("}")
                    if depth > 0:
                        err(f"{where(e.line + (0 if src.endswith(chr(10)) and not starts else 1))}: missing }} near end of file")
                        return 2
                err(f"{where(e.line)}: syntax error at or near {near}")
            elif str(e) == "unexpected character":  # (mawk's scanner: no "line" here)
                c = near
                err(f"{where(e.line, False)}: unexpected character " + (f"'{c}'" if " " < c < "\x7f" else f"0x{ord(c):02x}"))
            elif str(e).startswith("runaway"):
                err(f"{where(e.line)}: {e} {near} ...")
            else:
                # mawk reports an undefined function once the whole program is read, past its
                # last line (newlines + 2); a bad call at the call's line (our checks run after
                # parsing: take the first NAME( in the text)
                line = e.line
                if not line and "arguments in call to" in str(e) and near:
                    for m in re.finditer(r"(?<![\w$])" + re.escape(near) + r"\s*\(", src):
                        if not re.search(r"\bfunc(tion)?\s+$", src[:m.start()]):
                            line = src[:m.start()].count("\n") + 1
                            break
                line = line or src.count("\n") + 2
                for other in getattr(e, "others", ()):
                    err(f"{where(line)}: function {other} never defined")
                err(f"{where(line)}: {e}")
            return 2
        except RecursionError:
            err("line 1: program too deeply nested")
            return 2
        except AwkError as e:
            err(f"line 1: {e}")
            return 2
        if len(_cache) > 64:
            _cache.clear()
        _cache[(src, mawk)] = prog
    return run_program(prog, ctx, rest, assigns, fs)
