"""xargs (GNU findutils 4.9): build command lines from input and run them through ctx.exec."""

# GNU behaviours kept here:
# * Default input syntax: blanks/newlines separate items, '...' "..." and backslash quote;
#   an unmatched quote runs what was collected, then fails with status 1.
# * Without -r the command runs once even on empty input.
# * -P N is accepted but commands run one after another (same output, no parallelism).
# * Exit: 123 if any run exited 1-125, 124 if one exited 255 (xargs stops), 125 on a
#   signal, 126 if it could not run, 127 if not found.
# * The command buffer is 131072 bytes (GNU's default), counting each argument plus a NUL.

from __future__ import annotations

import io

from ._args import OptError, iter_lines, parse_opts, run_checked
from .base import CommandContext, as_invoked, command

USAGE = "xargs [OPTION]... COMMAND [INITIAL-ARGS]..."
HELP = """Run COMMAND with arguments INITIAL-ARGS and more arguments read from input.

Mandatory and optional arguments to long options are also
mandatory or optional for the corresponding short option.
  -0, --null                   items are separated by a null, not whitespace;
                                 disables quote and backslash processing and
                                 logical EOF processing
  -a, --arg-file=FILE          read arguments from FILE, not standard input
  -d, --delimiter=CHARACTER    items in input stream are separated by CHARACTER,
                                 not by whitespace; disables quote and backslash
                                 processing and logical EOF processing
  -E END                       set logical EOF string; if END occurs as a line
                                 of input, the rest of the input is ignored
                                 (ignored if -0 or -d was specified)
  -e, --eof[=END]              equivalent to -E END if END is specified;
                                 otherwise, there is no end-of-file string
  -I R                         same as --replace=R
  -i, --replace[=R]            replace R in INITIAL-ARGS with names read
                                 from standard input, split at newlines;
                                 if R is unspecified, assume {}
  -L, --max-lines=MAX-LINES    use at most MAX-LINES non-blank input lines per
                                 command line
  -l[MAX-LINES]                similar to -L but defaults to at most one non-
                                 blank input line if MAX-LINES is not specified
  -n, --max-args=MAX-ARGS      use at most MAX-ARGS arguments per command line
  -o, --open-tty               Reopen stdin as /dev/tty in the child process
                                 before executing the command; useful to run an
                                 interactive application.
  -P, --max-procs=MAX-PROCS    run at most MAX-PROCS processes at a time
  -p, --interactive            prompt before running commands
      --process-slot-var=VAR   set environment variable VAR in child processes
  -r, --no-run-if-empty        if there are no arguments, then do not run COMMAND;
                                 if this option is not given, COMMAND will be
                                 run at least once
  -s, --max-chars=MAX-CHARS    limit length of command line to MAX-CHARS
      --show-limits            show limits on command-line length
  -t, --verbose                print commands before executing them
  -x, --exit                   exit if the size (see -s) is exceeded
      --help                   display this help and exit
      --version                output version information and exit

Please see also the documentation at https://www.gnu.org/software/findutils/.
You can report (and track via the Savannah bug tracker) find bugs here:
<https://savannah.gnu.org/bugs/?group=findutils>."""

BUF = 131072


_SAFE = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_@%+=:,./-{}")


def _shell_quote(a: bytes) -> bytes:
    """gnulib quotearg's shell-escape style, as xargs -t prints arguments."""
    if a and all(c in _SAFE or c >= 128 for c in a):
        return a
    printable = all(32 <= c < 127 or c >= 128 for c in a)
    if printable and b"'" not in a:
        return b"'" + a + b"'"
    if printable and not any(c in a for c in b'"$`\\'):
        return b'"' + a + b'"'
    out = bytearray()
    seg = bytearray()
    def flush() -> None:
        if seg:
            out.extend(b"'" + bytes(seg).replace(b"'", b"'\\''") + b"'")
            seg.clear()
    for c in a:
        if 32 <= c < 127 or c >= 128:
            seg.append(c)
        else:
            flush()
            esc = {7: b"\\a", 8: b"\\b", 9: b"\\t", 10: b"\\n", 11: b"\\v", 12: b"\\f", 13: b"\\r"}.get(c)
            out.extend(b"$'" + (esc or b"\\%03o" % c) + b"'")
    flush()
    return bytes(out) or b"''"


class _Fail(Exception):
    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


def _unescape_delim(ctx: CommandContext, d: str) -> str | None:
    if len(d) == 1:
        return d
    if d.startswith("\\"):
        simple = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v", "\\": "\\", "0": "\0"}
        if len(d) == 2 and d[1] in simple:
            return simple[d[1]]
        if d[1] == "x" or d[1] in "01234567":
            # GNU reads the number with strtoul: blanks, a sign and (base 16) 0x may lead,
            # and no digits at all is 0 (`-d '\x'` splits at NULs)
            v = _strtoul(d[2:] if d[1] == "x" else d[1:], 16 if d[1] == "x" else 8)
            if v is not None and 0 <= v < 256:
                return chr(v)
    ctx.error(f"Invalid input delimiter specification {d}: the delimiter must be either a single character or an escape sequence starting with \\.")
    return None


def _strtoul(t: str, base: int) -> int | None:
    """C strtoul on the whole of ``t`` (None when characters are left over)."""
    t = t.lstrip(" \t\n\v\f\r")
    neg = t[:1] == "-"
    if t[:1] in "+-" and t:
        t = t[1:]
    if base == 16 and t[:2].lower() == "0x" and len(t) > 2:
        t = t[2:]
    digits = "0123456789abcdef"[:base]
    k = 0
    while k < len(t) and t[k].lower() in digits:
        k += 1
    if k < len(t):
        return None
    v = int(t, base) if t else 0
    return (-v) % 256 if neg else v


_BLANKS = b" \t"


def _tokens(lines, eof: str | None):  # noqa: ANN001, ANN202
    """GNU xargs' default input syntax over a stream of lines: yields (item, ends_line),
    ("\0EOF", False) at the logical end-of-file word, or ("\0ERR", kind) for a quote left
    open. A backslash quotes any byte, newline included; quotes do not span lines; an item
    ends a logical line (-L) only at a newline not preceded by a blank; at the end of input
    an empty item (``""``, a lone quote or backslash) is dropped."""
    eofb = eof.encode("utf-8", "surrogateescape") if eof else None
    cur = bytearray()
    in_word = quoted = False
    state = 0  # 0 normal, 1 in quote, 2 after backslash
    q = 0
    prev = 10
    first = True  # first item of its line (the only place an end-of-file word counts at EOF)
    for line in lines:
        n = len(line)
        i = 0
        while i < n:
            c = line[i]
            if state == 2:
                cur.append(c)
                state = 0
            elif state == 1:
                if c == 10:
                    yield ("\0ERR", "single" if q == 39 else "double")
                    return
                if c == q:
                    state = 0
                else:
                    cur.append(c)
            elif c in b" \t\n":
                if in_word:
                    item = bytes(cur)
                    k = item.find(b"\0")
                    if k >= 0:
                        item = item[:k]  # arguments are C strings: a NUL ends them
                    if eofb is not None and not quoted and item == eofb:
                        yield ("\0EOF", False)
                        return
                    yield (item, c == 10 and prev not in _BLANKS)
                    cur = bytearray()
                    in_word = quoted = False
                    first = False
                if c == 10:
                    first = True
            elif c == 39 or c == 34:
                state, q, in_word, quoted = 1, c, True, True
            elif c == 92:
                state, in_word = 2, True
            else:
                j = i + 1
                while j < n and line[j] not in b" \t\n'\"\\":
                    j += 1
                cur += line[i:j]
                in_word = True
                i = j
                prev = line[j - 1]
                continue
            prev = c
            i += 1
    if state == 1 and cur:
        yield ("\0ERR", "single" if q == 39 else "double")
        return
    if cur:
        item = bytes(cur)
        k = item.find(b"\0")
        if k >= 0:
            item = item[:k]
        if eofb is not None and first and not quoted and item == eofb:
            yield ("\0EOF", False)
            return
        yield (item, True)


@command("xargs", usage=USAGE, help=HELP)
def xargs(ctx: CommandContext, argv: list[str]) -> int:
    ctx = as_invoked(ctx, "xargs")
    try:
        opts, rest = parse_opts(ctx, ["xargs", *argv[1:]], "+0a:d:E:e::I:i::L:l::n:oP:prs:tx",
                                {"null": "0", "arg-file": "a", "delimiter": "d", "eof": "e",
                                 "replace": "i", "max-lines": "l", "max-args": "n",
                                 "open-tty": "o", "max-procs": "P", "interactive": "p",
                                 "no-run-if-empty": "r", "max-chars": "s", "verbose": "t",
                                 "exit": "x", "show-limits": None, "process-slot-var": "process-slot-var:",
                                 "help": None, "version": None},
                                status=1)
    except OptError as e:
        return e.status
    null = False
    delim: str | None = None
    eof: str | None = None
    replace: str | None = None
    max_lines: int | None = None
    max_args: int | None = None
    no_empty = verbose = interactive = exit_size = False
    max_chars = BUF
    argfile: str | None = None

    def num(opt: str, v: str | None, lo: int = 1) -> int:
        try:
            x = int(v or "")
        except ValueError:
            ctx.error(f"invalid number \"{v}\" for -{opt} option")
            ctx.stderr.write(b"Try 'xargs --help' for more information.\n")
            raise _Fail(1) from None
        if x < lo:
            ctx.error(f"value {x} for -{opt} option should be >= {lo}")
            if opt == "s":  # GNU only warns for -s and goes on with the least size
                return lo
            ctx.stderr.write(b"Try 'xargs --help' for more information.\n")
            raise _Fail(1)
        return x

    # GNU: -I/-i, -L/-l and -n exclude each other; a later one wins with a warning naming
    # the earlier (only an explicit -L/-l counts as "max-lines": -I sets one line itself)
    lines_set = False
    slot_var: str | None = None
    try:
        for k, v in opts:
            if k == "0":
                null = True
                delim = None
            elif k == "a":
                argfile = v
            elif k == "d":
                d = _unescape_delim(ctx, v or "")
                if d is None:
                    return 1
                delim = d
                null = False
            elif k == "E":
                eof = v
            elif k == "e":
                eof = v or None
            elif k in ("I", "i"):
                if max_args is not None:
                    ctx.error("warning: options --max-args and --replace/-I/-i are mutually exclusive, ignoring previous --max-args value")
                if lines_set:
                    ctx.error("warning: options --max-lines and --replace/-I/-i are mutually exclusive, ignoring previous --max-lines value")
                replace = v if k == "I" else (v or "{}")
                max_lines = 1
                lines_set = False
                max_args = None
                exit_size = True
            elif k in ("L", "l"):
                if replace is not None:
                    which = "-L" if k == "L" else "--max-lines/-l"
                    ctx.error(f"warning: options --replace and {which} are mutually exclusive, ignoring previous --replace value")
                    replace = None
                    exit_size = False
                if max_args is not None:
                    which = "-L" if k == "L" else "--max-lines/-l"
                    ctx.error(f"warning: options --max-args and {which} are mutually exclusive, ignoring previous --max-args value")
                max_lines = num(k, v) if (v or k == "L") else 1
                lines_set = True
                max_args = None
            elif k == "n":
                n_ = num("n", v)
                if replace is not None:
                    if n_ == 1:
                        continue  # -I already runs one item at a time: -n1 changes nothing
                    ctx.error("warning: options --replace and --max-args/-n are mutually exclusive, ignoring previous --replace value")
                    replace = None
                    exit_size = False
                    max_lines = None
                if lines_set:
                    ctx.error("warning: options --max-lines and --max-args/-n are mutually exclusive, ignoring previous --max-lines value")
                    max_lines = None
                    lines_set = False
                max_args = n_
            elif k == "process-slot-var":
                slot_var = v or None
            elif k == "P":
                num("P", v, 0)
            elif k == "p":
                interactive = True
                verbose = True
            elif k == "r":
                no_empty = True
            elif k == "s":
                max_chars = num("s", v)
            elif k == "t":
                verbose = True
            elif k == "x":
                exit_size = True
            elif k == "help":
                ctx.stdout.write(XARGS_HELP)
                return 0
            elif k == "version":
                ctx.stdout.write(XARGS_VERSION)
                return 0
            elif k == "show-limits":
                ctx.stderr.write(
                    b"Your environment variables take up 0 bytes\n"
                    b"POSIX upper limit on argument length (this system): 2091724\n"
                    b"POSIX smallest allowable upper limit on argument length (all systems): 4096\n"
                    b"Maximum length of command we could actually use: 2091724\n"
                    b"Size of command buffer we are actually using: 131072\n"
                    b"Maximum parallelism (--max-procs must be no greater): 2147483647\n")
    except _Fail as f:
        return f.status
    cmd = rest or ["echo"]
    if eof is not None and (null or delim is not None):
        ctx.error("warning: the -E option has no effect if -0 or -d is used.\n")

    # -- read input (streamed: commands run as soon as a batch is complete) --------------
    if argfile == "-":
        argfile = None  # `-a -` reads standard input
    if argfile is not None:
        try:
            src = ctx.fs.open(ctx.path(argfile), "rb")
        except IsADirectoryError:
            src = io.BytesIO(b"")  # GNU reads a directory as empty input
        except OSError as e:
            from ._regex import utf8_locale
            q = f"\u2018{argfile}\u2019" if utf8_locale(ctx.env) else f"'{argfile}'"
            ctx.error(f"Cannot open input file {q}: {e.strerror}")
            return 1
    else:
        src = ctx.stdin
    child_stdin = io.BytesIO(b"")  # GNU gives children /dev/null when input is stdin
    bad_quote: list[str] = []

    def units_iter():  # noqa: ANN202
        """Units of input: the items of one logical line (-L/-I) or single items."""
        if null or delim is not None:
            sep = b"\0" if null else delim.encode("utf-8", "surrogateescape")  # type: ignore[union-attr]
            for part in iter_lines(src, sep=sep):
                if part.endswith(sep):
                    part = part[:-len(sep)]
                k = part.find(b"\0")
                yield [part[:k] if k >= 0 else part]
            return
        eofb = eof.encode("utf-8", "surrogateescape") if eof is not None else None
        if replace is not None:
            for line in iter_lines(src):
                s_ = line.rstrip(b"\n").lstrip(b" \t")
                if eofb is not None and s_ == eofb:
                    return
                if s_:
                    yield [s_]
            return
        cur: list[bytes] = []
        warned = False

        def lines():  # noqa: ANN202
            nonlocal warned
            for line in iter_lines(src):
                if not warned and b"\0" in line:
                    warned = True
                    ctx.error("WARNING: a NUL character occurred in the input.  It cannot be passed through in the argument list.  Did you mean to use the --null option?")
                yield line

        if True:
            for item, ends in _tokens(lines(), eof):
                if item == "\0ERR":
                    if cur:
                        yield cur
                    bad_quote.append(ends)  # type: ignore[arg-type]
                    return
                if item == "\0EOF":
                    if cur:
                        yield cur
                    return
                cur.append(item)  # type: ignore[arg-type]
                if ends:
                    yield cur
                    cur = []
        if cur:
            yield cur

    units = units_iter()

    # -- run ----------------------------------------------------------------------------
    status = 0
    base = [a.encode("utf-8", "surrogateescape") for a in cmd]
    base_len = sum(len(a) + 1 for a in base)

    def run(args: list[bytes]) -> int | None:
        """Run one command line; return None to continue or a final status to stop."""
        nonlocal status
        argv_b = args
        sargs = [a.decode("utf-8", "surrogateescape") for a in argv_b]
        if verbose:
            ctx.stderr.write(b" ".join(_shell_quote(a) for a in argv_b) + (b" ?..." if interactive else b"\n"))
            if interactive:
                ans = b""
                while True:
                    ch = ctx.stdin.read(1) if argfile is not None else b""
                    if not ch or ch == b"\n":
                        break
                    ans += ch
                if not ans.lower().startswith(b"y"):
                    return None
        # --process-slot-var: commands run one at a time here, so each has slot 0
        st, not_run = run_checked(ctx, sargs, "xargs", lambda n, why: f"{n}: {why}", stdin=child_stdin,
                                  env={**ctx.env, slot_var: "0"} if slot_var else None)
        if not_run:
            return st
        if st == 126:
            return 126
        if st == 255:
            ctx.error(f"{sargs[0]}: exited with status 255; aborting")
            return 124
        if st > 128:
            ctx.error(f"{sargs[0]}: terminated by signal {st - 128}")
            return 125
        if st != 0:
            status = 123
        return None

    if base_len > max_chars and replace is None:
        ctx.error("cannot fit single argument within argument list size limit")
        return 1
    ran = False
    if replace is not None:
        r = replace.encode("utf-8", "surrogateescape")
        for u in units:
            ctx.budget.check()
            item = u[0]
            # GNU's three limits: the input line, each argument after replacement, the whole
            if len(item) + 1 > max_chars:
                ctx.error("argument line too long")
                return 1
            args = []
            total = 0
            for k_, a0 in enumerate(base):
                a = a0.replace(r, item)
                if r in a0 and len(a) >= max_chars:
                    ctx.error("command too long")
                    return 1
                total += len(a) + 1
                if total > max_chars:
                    ctx.error("cannot fit single argument within argument list size limit" if k_ == 0
                              else "argument list too long")
                    return 1
                args.append(a)
            ran = True
            res = run(args)
            if res is not None:
                return res
    else:
        batch: list[bytes] = []
        blen = base_len
        nlines = 0

        def flush() -> int | None:
            nonlocal batch, blen, nlines, ran
            ran = True
            res = run(base + batch)
            batch, blen, nlines = [], base_len, 0
            return res

        for u in units:
            ctx.budget.check()
            for item in u:
                if blen + len(item) + 1 > max_chars:
                    if not batch:
                        ctx.error("argument line too long")
                        return 1
                    res = flush()
                    if res is not None:
                        return res
                batch.append(item)
                blen += len(item) + 1
                if max_args is not None and len(batch) >= max_args:
                    res = flush()
                    if res is not None:
                        return res
            if max_lines is not None and batch:
                nlines += 1
                if nlines >= max_lines:
                    res = flush()
                    if res is not None:
                        return res
        # an unmatched quote before any argument: GNU never runs the command
        if batch or (not ran and not no_empty and not bad_quote):
            if not (no_empty and not batch):
                res = flush()
                if res is not None:
                    return res
    if bad_quote:
        ctx.error(f"unmatched {bad_quote[0]} quote; by default quotes are special to xargs unless you use the -0 option")
        return 1
    return status


# -- --help / --version texts of the GNU tools on the reference machine --------------------

XARGS_HELP = b'Usage: xargs [OPTION]... COMMAND [INITIAL-ARGS]...\nRun COMMAND with arguments INITIAL-ARGS and more arguments read from input.\n\nMandatory and optional arguments to long options are also\nmandatory or optional for the corresponding short option.\n  -0, --null                   items are separated by a null, not whitespace;\n                                 disables quote and backslash processing and\n                                 logical EOF processing\n  -a, --arg-file=FILE          read arguments from FILE, not standard input\n  -d, --delimiter=CHARACTER    items in input stream are separated by CHARACTER,\n                                 not by whitespace; disables quote and backslash\n                                 processing and logical EOF processing\n  -E END                       set logical EOF string; if END occurs as a line\n                                 of input, the rest of the input is ignored\n                                 (ignored if -0 or -d was specified)\n  -e, --eof[=END]              equivalent to -E END if END is specified;\n                                 otherwise, there is no end-of-file string\n  -I R                         same as --replace=R\n  -i, --replace[=R]            replace R in INITIAL-ARGS with names read\n                                 from standard input, split at newlines;\n                                 if R is unspecified, assume {}\n  -L, --max-lines=MAX-LINES    use at most MAX-LINES non-blank input lines per\n                                 command line\n  -l[MAX-LINES]                similar to -L but defaults to at most one non-\n                                 blank input line if MAX-LINES is not specified\n  -n, --max-args=MAX-ARGS      use at most MAX-ARGS arguments per command line\n  -o, --open-tty               Reopen stdin as /dev/tty in the child process\n                                 before executing the command; useful to run an\n                                 interactive application.\n  -P, --max-procs=MAX-PROCS    run at most MAX-PROCS processes at a time\n  -p, --interactive            prompt before running commands\n      --process-slot-var=VAR   set environment variable VAR in child processes\n  -r, --no-run-if-empty        if there are no arguments, then do not run COMMAND;\n                                 if this option is not given, COMMAND will be\n                                 run at least once\n  -s, --max-chars=MAX-CHARS    limit length of command line to MAX-CHARS\n      --show-limits            show limits on command-line length\n  -t, --verbose                print commands before executing them\n  -x, --exit                   exit if the size (see -s) is exceeded\n      --help                   display this help and exit\n      --version                output version information and exit\n\nPlease see also the documentation at https://www.gnu.org/software/findutils/.\nYou can report (and track progress on fixing) bugs in the "xargs"\nprogram via the GNU findutils bug-reporting page at\nhttps://savannah.gnu.org/bugs/?group=findutils or, if\nyou have no web access, by sending email to <bug-findutils@gnu.org>.\n'

XARGS_VERSION = b'xargs (GNU findutils) 4.9.0\nCopyright (C) 2022 Free Software Foundation, Inc.\nLicense GPLv3+: GNU GPL version 3 or later <https://gnu.org/licenses/gpl.html>.\nThis is free software: you are free to change and redistribute it.\nThere is NO WARRANTY, to the extent permitted by law.\n\nWritten by Eric B. Decker, James Youngman, and Kevin Dalley.\n'
