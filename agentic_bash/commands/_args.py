"""GNU getopt_long-compatible option parsing and input helpers shared by the commands."""

# Interface (shared by every command module):
#
#   opts, operands = parse_opts(ctx, argv, "nrk:t:", {"numeric-sort": "n", "key": "k"})
#
# * ``argv[0]`` is the program name; options come from ``argv[1:]``.
# * short spec: getopt letters, ``x:`` takes an argument, ``x::`` an optional one (only
#   attached: ``-xVAL``). A leading ``+`` (or POSIXLY_CORRECT in ctx.env) stops at the
#   first operand instead of permuting (GNU's default is permutation: ``sort f -r``).
# * long options: dict of name -> short letter, or -> a long-only key (``"debug"``) with a
#   trailing ``:`` when it takes an argument and ``::`` when the argument is optional
#   (``{"color": "color::", "exclude": "exclude:"}``); value ``None`` = long-only key named
#   like the option, no argument. Unambiguous prefixes are accepted (exact match wins;
#   several prefixes mapping to the same key are not ambiguous, as in glibc).
# * returns ``(opts, operands)``: opts is a list of ``(key, value-or-None)`` in command-line
#   order, key being the short letter or the long-only key (without colons).
# * ``--help`` and ``--version`` are always recognised (every GNU tool has them), unless the
#   caller maps them itself: ``--help`` prints the registered help and raises ``OptHelp``
#   (an OptError with status 0); ``--version`` prints "<name> (GNU coreutils) 9.1" likewise.
#   Callers simply do ``except OptError as e: return e.status``.
# * Errors print glibc's exact message plus "Try 'NAME --help' for more information." to
#   ctx.stderr and raise ``OptError(status)`` (2 by default; pass ``status=1`` where the GNU
#   tool exits 1 on usage errors, e.g. ls uses 2, cat/head/... use 1).

from __future__ import annotations

import functools

import errno
import io
import os
import re
import stat
from typing import Any, BinaryIO, Callable, Iterator, Mapping

from ..limits import Budget, charge_read, check_size, hold
from ..shell.streams import LineReads
from .base import REGISTRY, CommandContext

__all__ = [
    "OptError", "OptHelp", "iter_lines", "open_input", "parse_opts", "prog_name",
    "read_all", "try_help", "usage_error",
]

VERSIONS = {
    # tools that are not coreutils report their own package (as the real ones do)
    "grep": "grep (GNU grep) 3.8", "egrep": "grep (GNU grep) 3.8", "fgrep": "grep (GNU grep) 3.8",
    "sed": "sed (GNU sed) 4.9", "find": "find (GNU findutils) 4.9.0",
    "xargs": "xargs (GNU findutils) 4.9.0", "diff": "diff (GNU diffutils) 3.8",
    "cmp": "cmp (GNU diffutils) 3.8", "tar": "tar (GNU tar) 1.34",
    "gzip": "gzip 1.12", "column": "column from util-linux 2.38.1",
    "hexdump": "hexdump from util-linux 2.38.1", "hd": "hd from util-linux 2.38.1",
    "rev": "rev from util-linux 2.38.1", "xz": "xz (XZ Utils) 5.4.1",
    "unxz": "unxz (XZ Utils) 5.4.1", "xzcat": "xzcat (XZ Utils) 5.4.1",
    "strings": "GNU strings (GNU Binutils for Debian) 2.40", "file": "file-5.44",
    "iconv": "iconv (Debian GLIBC 2.36-9+deb12u14) 2.36",
    "getconf": "getconf (Debian GLIBC 2.36-9+deb12u14) 2.36",
}


class OptError(Exception):
    """Option parsing ended the command; ``status`` is its exit status (message already printed)."""

    def __init__(self, status: int = 2) -> None:
        super().__init__(status)
        self.status = status


class OptHelp(OptError):
    """``--help`` / ``--version`` was handled (printed to stdout); exit with status 0."""

    def __init__(self) -> None:
        super().__init__(0)


def prog_name(ctx: CommandContext, argv: list[str] | None = None) -> str:
    return ctx.name or (argv[0] if argv else "")


def obsolete_num_option(argv: list[str], letter: str) -> list[str]:
    """argv with each obsolete ``-NUM`` argument rewritten as ``-<letter>NUM`` (fmt -72, fold -40)."""
    args = [argv[0]]
    for a in argv[1:]:
        # (not the value of a preceding -<letter>: `fold -w -1` is a bad width, not -w1)
        args.append(("-" + letter + a[1:]) if re.fullmatch(r"-\d+", a) and args[-1] != "-" + letter else a)
    return args


def try_help(ctx: CommandContext, name: str | None = None) -> None:
    n = name or ctx.name
    ctx.stderr.write(f"Try '{n} --help' for more information.\n".encode("utf-8", "surrogateescape"))


def usage_error(ctx: CommandContext, msg: str | None, status: int = 1) -> OptError:
    """Print ``name: msg`` and the Try-help line; return an OptError to raise (or its status)."""
    if msg is not None:
        ctx.error(msg)
    try_help(ctx)
    return OptError(status)


@functools.lru_cache(maxsize=512)
def _parse_short_spec(spec: str) -> tuple[dict[str, int], bool]:
    """letter -> 0 (no arg), 1 (required), 2 (optional); and whether permutation is off."""
    posix = False
    if spec.startswith("+"):
        posix, spec = True, spec[1:]
    out: dict[str, int] = {}
    i = 0
    while i < len(spec):
        c = spec[i]
        i += 1
        kind = 0
        if spec.startswith("::", i):
            kind, i = 2, i + 2
        elif spec.startswith(":", i):
            kind, i = 1, i + 1
        out[c] = kind
    return out, posix


@functools.lru_cache(maxsize=512)
def _long_table(short: str, items: tuple[tuple[str, str | None], ...]) -> dict[str, tuple[str, int]]:
    """parse_opts' long name -> (key, kind) table (cached per option spec: never mutated)."""
    shorts = _parse_short_spec(short)[0]
    longs: dict[str, tuple[str, int]] = {}
    for lname, target in items:
        if target is None:
            longs[lname] = (lname, 0)
        elif len(target) == 1 and target in shorts:
            longs[lname] = (target, shorts[target])
        else:
            t = target
            kind = 2 if t.endswith("::") else 1 if t.endswith(":") else 0
            longs[lname] = (t.rstrip(":"), kind)
    longs.setdefault("help", ("\0help", 0))
    longs.setdefault("version", ("\0version", 0))
    return longs


def _print_help(ctx: CommandContext, name: str) -> None:
    from ._gnuhelp import HELP  # the reference machine's own text, where it is coreutils
    text_b = HELP.get(name.rsplit("/", 1)[-1])
    if text_b is not None:
        ctx.stdout.write(text_b)
        return
    spec = REGISTRY.get(ctx.name) or REGISTRY.get(name)
    text = ""
    if spec is not None:
        usage, hlp = spec.usage.strip("\n"), spec.help.strip("\n")
        if usage and not usage.startswith("Usage:"):
            usage = f"Usage: {usage}"
        text = "\n".join(x for x in (usage, hlp) if x)
    if not text:
        text = f"Usage: {name} [OPTION]... [FILE]..."
    ctx.stdout.write((text + "\n").encode("utf-8", "surrogateescape"))


def _print_version(ctx: CommandContext, name: str) -> None:
    base = name.rsplit("/", 1)[-1]
    from ._gnuhelp import VERSION
    if base in VERSION:
        ctx.stdout.write(VERSION[base])
        return
    line = VERSIONS.get(base, f"{base} (GNU coreutils) 9.1")
    ctx.stdout.write((line + "\n").encode())


def parse_opts(
    ctx: CommandContext,
    argv: list[str],
    short: str = "",
    long: Mapping[str, str | None] | None = None,
    *,
    status: int = 2,
) -> tuple[list[tuple[str, str | None]], list[str]]:
    """Parse ``argv[1:]`` like glibc getopt_long; see the module comment for the contract."""
    for a in argv[1:]:
        if a[:1] == "-" and a != "-":
            break
    else:
        return [], argv[1:]  # no option-like word at all (`cat`, `sort f`): nothing to parse
    name = prog_name(ctx, argv)
    shorts, posix = _parse_short_spec(short)  # (cached: never mutate shorts)
    if "POSIXLY_CORRECT" in ctx.env:
        posix = True
    # long name -> (key, kind)
    longs = _long_table(short, tuple(long.items()) if long else ())

    def fail(msg: str) -> OptError:
        ctx.stderr.write(f"{name}: {msg}\n".encode("utf-8", "surrogateescape"))
        try_help(ctx, name)
        return OptError(status)

    opts: list[tuple[str, str | None]] = []
    operands: list[str] = []
    args = argv[1:]
    i, n = 0, len(args)
    while i < n:
        a = args[i]
        i += 1
        if a == "--":
            operands.extend(args[i:])
            break
        if a.startswith("--"):
            body = a[2:]
            lname, eq, val = body.partition("=")
            if lname in longs:
                full = lname
            else:
                cands = [k for k in longs if k.startswith(lname)]
                if not cands:
                    raise fail(f"unrecognized option '{a}'")
                if len({longs[c] for c in cands}) > 1:
                    from ._longorder import LONG_ORDER
                    order = LONG_ORDER.get(name.rsplit("/", 1)[-1], ())
                    cands.sort(key=lambda c: order.index(c) if c in order else len(order))
                    # glibc lists the first match and those that differ from it (an alias
                    # of the first, like flock's --nb for --nonblocking, is left out)
                    cands = cands[:1] + [c for c in cands[1:] if longs[c] != longs[cands[0]]]
                    poss = " ".join(f"'--{c}'" for c in cands)
                    raise fail(f"option '--{lname}' is ambiguous; possibilities: {poss}")
                full = cands[0]
            key, kind = longs[full]
            value: str | None = None
            if eq:
                if kind == 0:
                    raise fail(f"option '--{full}' doesn't allow an argument")
                value = val
            elif kind == 1:
                if i >= n:
                    raise fail(f"option '--{full}' requires an argument")
                value = args[i]
                i += 1
            if key == "\0help":
                _print_help(ctx, name)
                raise OptHelp()
            if key == "\0version":
                _print_version(ctx, name)
                raise OptHelp()
            opts.append((key, value))
            continue
        if a.startswith("-") and a != "-":
            j = 1
            while j < len(a):
                c = a[j]
                j += 1
                kind = shorts.get(c)
                if kind is None or c == ":":
                    raise fail(f"invalid option -- '{c}'")
                if kind == 0:
                    opts.append((c, None))
                    continue
                rest = a[j:]
                if rest:
                    opts.append((c, rest))
                elif kind == 2:
                    opts.append((c, None))
                elif i < n:
                    opts.append((c, args[i]))
                    i += 1
                else:
                    raise fail(f"option requires an argument -- '{c}'")
                break
            continue
        operands.append(a)
        if posix:
            operands.extend(args[i:])
            break
    return opts, operands


# -- input ---------------------------------------------------------------------------------

class _NoClose(LineReads):
    """Wraps stdin so ``with open_input(ctx, '-')`` does not close the shared stream. A plain
    class with io.RawIOBase's methods: a RawIOBase (and its finalizer) cost more to make and
    drop than a short ``cat``'s whole read."""

    __slots__ = ("_raw",)
    _LINES_CHECKED = False  # (what it wraps bounds its own reads)

    closed = False

    def __init__(self, raw: BinaryIO) -> None:
        self._raw = raw

    def readable(self) -> bool:
        return True

    def writable(self) -> bool:
        return False

    def seekable(self) -> bool:
        return False

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        raise io.UnsupportedOperation("fileno")

    def seek(self, *a: object) -> int:
        raise io.UnsupportedOperation("seek")

    def read(self, size: int | None = -1) -> bytes:
        return self._raw.read(-1 if size is None else size)

    def readall(self) -> bytes:
        return self._raw.read(-1)

    def read1(self, size: int = -1) -> bytes:
        r1 = getattr(self._raw, "read1", None)
        return r1(size) if r1 is not None else self._raw.read(size)

    def readinto(self, b) -> int:  # noqa: ANN001
        data = self.read1(len(b))
        b[: len(data)] = data
        return len(data)

    def identity(self) -> tuple[Any, int] | None:
        return _file_identity(self._raw)

    def tell(self) -> int:
        return self._raw.tell()

    def readline(self, size: int | None = -1) -> bytes:
        return self._raw.readline(-1 if size is None else size)

    def __iter__(self) -> _NoClose:
        return self

    def flush(self) -> None:
        pass

    def close(self) -> None:  # never closes the underlying stdin
        pass

    def __enter__(self) -> _NoClose:
        return self

    def __exit__(self, *a: object) -> None:
        pass


def open_input(ctx: CommandContext, operand: str) -> BinaryIO:
    """Binary stream for a file operand (``-`` = stdin, never closed by ``close()``).

    OSError propagates with ``filename`` set to the operand as typed, so callers can print
    ``cmd: operand: No such file or directory``. A directory raises EISDIR (GNU reports
    ``Is a directory`` when it reads one).
    """
    if operand == "-":
        return _NoClose(ctx.stdin)  # type: ignore[return-value]
    p = ctx.path(operand)
    try:
        f = ctx.fs.open(p, "rb")
    except OSError as e:
        raise type(e)(e.errno, e.strerror or "", operand) from None
    if operand.endswith("/") and len(operand) > 1:
        # "file/" names a directory; the VFS path has lost the slash
        f.close()
        raise NotADirectoryError(errno.ENOTDIR, "Not a directory", operand)
    try:
        st = ctx.fs.stat(p)
        isdir = st.is_dir
    except OSError:
        isdir = False
    if isdir:
        f.close()
        raise IsADirectoryError(errno.EISDIR, "Is a directory", operand)
    return f


def _reader(stream: BinaryIO):  # noqa: ANN202
    r1 = getattr(stream, "read1", None)
    return r1 if r1 is not None else stream.read


def iter_lines(stream: BinaryIO, chunk: int = 65536, sep: bytes = b"\n") -> Iterator[bytes]:
    """Yield lines with their separator (the last one may lack it), reading in chunks.

    Uses ``read1`` where available so a pipe's data flows as soon as it is written. Every
    chunk is charged to the run's budget (deadline) and a line is at most
    ``max_variable_bytes`` long (``head -n1 /dev/zero`` ends instead of growing forever).
    """
    read = _reader(stream)
    parts: list[bytes] = []  # an unfinished line, in pieces (joining per chunk was quadratic)
    plen = 0
    while True:
        data = read(chunk)
        if not data:
            break
        n = len(data)
        charge_read(n)
        k = data.find(sep)
        if k < 0:
            parts.append(data)
            plen += n
            check_size(plen, "input line")
            continue
        if parts:
            parts.append(data[:k + 1])
            yield b"".join(parts)
            parts = []
            plen = 0
        else:
            yield data[:k + 1]
        start = k + 1
        while True:
            k = data.find(sep, start)
            if k < 0:
                break
            yield data[start:k + 1]
            start = k + 1
        if start < n:
            parts.append(data[start:])
            plen = n - start
    if parts:
        yield b"".join(parts)


def iter_chunks(stream: BinaryIO, chunk: int = 65536) -> Iterator[bytes]:
    read = _reader(stream)
    while True:
        data = read(chunk)
        if not data:
            return
        charge_read(len(data))
        yield data


def read_all(stream: BinaryIO) -> bytes:
    return b"".join(iter_chunks(stream))


# -- quoting like gnulib quotearg (messages must match GNU byte for byte) --------------------

_SHELL_SPECIAL = set(" !\"$&'()*;<=>?[\\^`|:")
_C_ESC = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v"}


def _is_ctl(ch: str) -> bool:
    o = ord(ch)
    return o < 32 or o == 127 or 0xDC80 <= o <= 0xDCFF or (o >= 128 and not ch.isprintable())


def _esc(ch: str) -> str:
    if ch in _C_ESC:
        return _C_ESC[ch]
    o = ord(ch)
    if 0xDC80 <= o <= 0xDCFF:
        return "\\%03o" % (o - 0xDC00)
    return "".join("\\%03o" % b for b in ch.encode("utf-8", "surrogateescape"))


def quoteaf(name: str, always: bool = True) -> str:
    """gnulib's shell-escape(-always) quoting: ``'a b'``, ``"a'b"``, ``'a'$'\\n''b'``."""
    ctl = any(_is_ctl(c) for c in name)
    if not always and name and not ctl and not any(c in _SHELL_SPECIAL for c in name) \
            and name[0] not in "#~":
        return name
    if not ctl and "'" in name and not any(c in '$`\\"!' for c in name):
        return f'"{name}"'
    out: list[str] = ["'"]
    in_esc = False
    for c in name:
        if _is_ctl(c):
            if not in_esc:
                out.append("'$'")
                in_esc = True
            out.append(_esc(c))
            continue
        if in_esc:
            out.append("''")
            in_esc = False
        out.append("'\\''" if c == "'" else c)
    out.append("'")
    s = "".join(out)
    if in_esc and s.endswith("'''"):
        # GNU drops the empty trailing '' after a final $'..'
        s = s[:-2]
    return s


def quotef(name: str) -> str:
    """gnulib quotef: shell-escape quoting only where needed (``cat: 'a b': No such file``)."""
    return quoteaf(name, always=False)


def _c_escape(s: str) -> str:
    out = []
    for c in s:
        if c == "\\":
            out.append("\\\\")
        elif _is_ctl(c):
            out.append(_esc(c))
        else:
            out.append(c)
    return "".join(out)


def quote_locale(s: str, utf8: bool = True) -> str:
    """gnulib locale_quoting_style: ‘x’ (UTF-8) or 'x', backslashes and controls C-escaped."""
    body = _c_escape(s)
    return f"\u2018{body}\u2019" if utf8 else f"'{body}'"


def quote(ctx: CommandContext, s: str) -> str:
    """gnulib quote(): locale quotes, ‘x’ in a UTF-8 locale and 'x' in C/POSIX."""
    return quote_locale(s, is_utf8(ctx))


def is_utf8(ctx: CommandContext) -> bool:
    env = ctx.env
    loc = env.get("LC_ALL") or env.get("LC_CTYPE") or env.get("LANG") or ""
    low = loc.lower()
    return "utf-8" in low or "utf8" in low


def file_error(ctx: CommandContext, exc: OSError, name: str) -> None:
    """``cmd: name: strerror`` with GNU's quotef quoting of the name."""
    from .base import strerror

    ctx.error(f"{quotef(name)}: {strerror(exc)}")


# -- stdio-like output buffering ------------------------------------------------------------

class OutBuf:
    """Block-buffers a command's stdout like glibc stdio does for a pipe or file (4 KiB)."""

    __slots__ = ("_raw", "_parts", "_n", "_limit")

    def __init__(self, raw: BinaryIO, limit: int = 4096) -> None:
        self._raw = raw
        self._parts: list[bytes] = []
        self._n = 0
        self._limit = limit

    def write(self, b: bytes) -> int:
        self._parts.append(b)
        self._n += len(b)
        if self._n >= self._limit:
            self.flush()
        return len(b)

    def flush(self) -> None:
        if self._parts:
            data = b"".join(self._parts)
            self._parts = []
            self._n = 0
            self._raw.write(data)

    def identity(self) -> tuple[Any, int] | None:
        return _file_identity(self._raw)

    def writable(self) -> bool:
        return True


class _ErrFlushing:
    """stderr that first flushes the buffered stdout, as glibc's error() does (fflush(stdout))."""

    __slots__ = ("_raw", "_out")

    def __init__(self, raw: BinaryIO, out: OutBuf) -> None:
        self._raw = raw
        self._out = out

    def write(self, b: bytes) -> int:
        self._out.flush()
        return self._raw.write(b)

    def flush(self) -> None:
        fl = getattr(self._raw, "flush", None)
        if fl is not None:
            fl()

    def writable(self) -> bool:
        return True


# The shell's own "could not run it" line: a wrapper (env, nice, timeout, ...) reports it in its
# words instead, as the real one's failed execvp() would.
_NOT_RUN = re.compile(rb"(?:[^\n:]*: (?:line \d+: )?)?(.*): (command not found|No such file or directory"
                      rb"|Permission denied|Is a directory)\n\Z", re.S)


class _HoldNotRun:
    """Stderr pass-through that holds back a first write shaped like the shell's not-run line."""

    __slots__ = ("_raw", "_name", "held", "_started")

    def __init__(self, raw: BinaryIO, name: str) -> None:
        self._raw = raw
        self._name = name.encode("utf-8", "surrogateescape")
        self.held: bytes | None = None
        self._started = False

    def write(self, b: bytes) -> int:
        if not self._started:
            self._started = True
            m = _NOT_RUN.match(b)
            if m is not None and m.group(1) == self._name:
                self.held = bytes(b)
                return len(b)
        elif self.held is not None:
            self._raw.write(self.held)
            self.held = None
        return self._raw.write(b)

    def flush(self) -> None:
        self._raw.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._raw, name)


def run_command(ctx: CommandContext, argv: list[str], who: str, msg: Callable[[str, str], str], *,
                stdin: BinaryIO | None = None, stdout: BinaryIO | None = None,
                stderr: BinaryIO | None = None, env: Mapping[str, str] | None = None,
                cwd: str | None = None) -> int:
    """Runs ``argv`` through ``ctx.exec``. If it cannot be run, prints ``who: msg(name, reason)``
    (GNU's execvp() report) instead of the shell's line and returns 127 (not found) or 126."""
    return run_checked(ctx, argv, who, msg, stdin=stdin, stdout=stdout, stderr=stderr, env=env, cwd=cwd)[0]


def run_checked(ctx: CommandContext, argv: list[str], who: str, msg: Callable[[str, str], str], *,
                stdin: BinaryIO | None = None, stdout: BinaryIO | None = None,
                stderr: BinaryIO | None = None, env: Mapping[str, str] | None = None,
                cwd: str | None = None) -> tuple[int, bool]:
    """``run_command`` that also says whether the command could not be run at all."""
    err = stderr if stderr is not None else ctx.stderr
    if ctx.exec is None:
        err.write(f"{who}: {msg(argv[0], 'No such file or directory')}\n".encode("utf-8", "surrogateescape"))
        return 127, True
    hold = _HoldNotRun(err, argv[0])
    st = ctx.exec(argv, stdin=stdin if stdin is not None else ctx.stdin,
                  stdout=stdout if stdout is not None else ctx.stdout, stderr=hold,  # type: ignore[arg-type]
                  env=env, cwd=cwd)
    held = hold.held
    if held is not None:
        m = _NOT_RUN.match(held)
        if st in (126, 127) and m is not None:
            why = m.group(2).decode()
            why = {"command not found": "No such file or directory",
                   "Is a directory": "Permission denied"}.get(why, why)
            err.write(f"{who}: {msg(argv[0], why)}\n".encode("utf-8", "surrogateescape"))
            return st, True
        err.write(held)
    return st, False


def read_files0(ctx: CommandContext, spec: str, open_fmt: str = "cannot open {} for reading: {}",
                 shell_quote: bool = True) -> list[str] | None:
    """The names listed in ``--files0-from=F`` (NUL-terminated, the last terminator optional;
    F ``-`` is stdin), or None after printing the tool's open error (``open_fmt``)."""
    try:
        if spec == "-":
            data = read_all(ctx.stdin)
        else:
            with ctx.fs.open(ctx.path(spec), "rb") as f:
                data = f.read()
    except OSError as e:
        from .base import strerror
        ctx.error(open_fmt.format(quoteaf(spec) if shell_quote else quotef(spec), strerror(e)))
        return None
    names = data.split(b"\0")
    if names[-1] == b"":
        names.pop()
    return [n.decode("utf-8", "surrogateescape") for n in names]


def _file_identity(f: Any) -> tuple[Any, int] | None:
    ident = getattr(f, "identity", None)
    if ident is not None:
        return ident()
    try:
        st = os.fstat(f.fileno())
    except (AttributeError, OSError, ValueError):
        return None
    return ((st.st_dev, st.st_ino), st.st_size) if stat.S_ISREG(st.st_mode) else None


def is_output_file(ctx: CommandContext, f: BinaryIO, unread_only: bool = True) -> bool:
    """GNU's "input file is output file" test: ``f`` is the regular file stdout writes to and
    (cat; ``unread_only``) still has bytes past its read position, as ``cat f >> f`` would
    chase its own output; grep refuses the same file even when empty."""
    out = _file_identity(ctx.stdout)
    if out is None:
        return False
    inp = _file_identity(f)
    if inp is None or inp[0] != out[0]:
        return False
    if not unread_only:
        return True
    try:
        return f.tell() < inp[1]
    except (OSError, ValueError):
        return False


def stdio(fn):  # noqa: ANN001, ANN201
    """Decorator: run the command with a stdio-buffered stdout, flushed when it returns.

    Writes to stderr flush stdout first (GNU's error() does), so ``cmd a nope 2>&1`` keeps
    program order while per-line writes still become few pipe writes.
    """
    import functools

    from .base import new_context

    @functools.wraps(fn)
    def wrapper(ctx: CommandContext, argv: list[str]) -> int:
        buf = OutBuf(ctx.stdout)
        # (new_context, not dataclasses.replace: a tenth of the cost of a short `wc -l`)
        c2 = new_context(ctx.fs, ctx.cwd, ctx.env, ctx.stdin, buf, _ErrFlushing(ctx.stderr, buf),  # type: ignore[arg-type]
                         ctx.budget, ctx.info, ctx.exec, ctx.umask, ctx.name)
        try:
            return fn(c2, argv)
        except MemoryError:
            # GNU's xalloc_die(): "memory exhausted", the tool's failure status
            c2.error("memory exhausted")
            return 2 if ctx.name.rsplit("/", 1)[-1] in ("sort", "ls", "du") else 1
        finally:
            buf.flush()

    return wrapper


def iter_line_blocks(stream: BinaryIO, sep: bytes = b"\n", chunk: int = 1 << 18
                     ) -> Iterator[tuple[list[bytes], bool]]:
    """Yield ``(lines, unterminated)`` batches: complete lines without their separator.

    The last batch may be ``([partial], True)`` for input not ending in ``sep``. Batching
    lets commands work on lists (comprehensions, ``groupby``) instead of line by line.
    """
    parts: list[bytes] = []  # an unfinished line, in pieces
    plen = 0
    for data in iter_chunks(stream, chunk):
        k = data.rfind(sep)
        if k < 0:
            parts.append(data)
            plen += len(data)
            check_size(plen, "input line")
            continue
        if parts:
            parts.append(data)
            data = b"".join(parts)
            k += plen
            parts = []
        yield data[:k].split(sep), False
        rest = data[k + 1:]
        parts = [rest] if rest else []
        plen = len(rest)
    if parts:
        yield [b"".join(parts)], True


def iter_text_blocks(stream: BinaryIO, sep: bytes = b"\n", chunk: int = 1 << 18
                     ) -> Iterator[tuple[bytes, bool]]:
    """``iter_line_blocks`` without the split: ``(text, unterminated)`` where ``text`` is
    whole lines joined by ``sep`` without the last one's (for a C-level regex over a block)."""
    parts: list[bytes] = []  # an unfinished line, in pieces
    plen = 0
    for data in iter_chunks(stream, chunk):
        k = data.rfind(sep)
        if k < 0:
            parts.append(data)
            plen += len(data)
            check_size(plen, "input line")
            continue
        if parts:
            parts.append(data)
            data = b"".join(parts)
            k += plen
            parts = []
        yield data[:k], False
        rest = data[k + 1:]
        parts = [rest] if rest else []
        plen = len(rest)
    if parts:
        yield b"".join(parts), True


MAX_BUFFERED = 128 * 1024 * 1024
"""Largest input a command that must hold all of it (sort, tac, od, ...) keeps in memory.
(128 MiB, was 256: with the copies a command makes of what it holds, ``tail -n1
/dev/zero``, ``shuf`` or ``tac`` of 250 MB grew the process by 480-720 MiB, past the
512 MiB the run contract allows; sort spills past a quarter of it either way.)"""


def held_cap(ctx: CommandContext) -> int:
    """What one command may hold in memory: MAX_BUFFERED, or less under a smaller
    max_variable_bytes (``Budget.held_cap``) or max_fs_bytes."""
    cap = MAX_BUFFERED
    b = ctx.budget
    hc = b.held_cap() if hasattr(b, "held_cap") else None
    if hc is not None and hc < cap:
        cap = max(hc, 1 << 20)
    lim = getattr(getattr(b, "limits", None), "max_fs_bytes", None)
    if isinstance(lim, int) and lim < cap:
        cap = max(lim, 1 << 20)
    return cap


def read_bounded(ctx: CommandContext, stream: BinaryIO, sep: bytes | None = b"\n", cap: int | None = None) -> bytes:
    """All of ``stream``, checking the run's budget; MemoryError past ``held_cap`` (or
    ``cap``, when smaller: a command that makes several copies of what it holds).

    GNU tools would spill to temporary files; in a sandbox an endless input (``sort
    /dev/zero``) must end with "memory exhausted" rather than eat the host's memory. The
    callers split what they read into lines (``sep``), each a Python object: every one is
    counted with Budget.HELD_OVERHEAD bytes more, so a hundred million short lines are
    refused before they take gigabytes.
    """
    cap = held_cap(ctx) if cap is None else min(cap, held_cap(ctx))
    over = Budget.HELD_OVERHEAD if sep else 0
    # (a BytesIO grows in place and getvalue() hands over its buffer: a list of chunks
    # joined at the end held the input twice, 500 MB for `tac` of 250 MB)
    buf = io.BytesIO()
    n = 0
    for chunk in iter_chunks(stream, 1 << 16):
        k = len(chunk) + (over * chunk.count(sep) if over else 0)  # type: ignore[arg-type]
        n += k
        if n > cap:
            raise MemoryError("memory exhausted")
        hold(k)  # (the session's commands together: limits.HeldPool)
        buf.write(chunk)
    data = buf.getvalue()
    buf.close()
    return data


def argmatch(ctx: CommandContext, value: str | None, option: str, groups: list[list[str]],
             status: int = 1) -> str | None:
    """gnulib XARGMATCH: exact name or unambiguous prefix -> the group's first name.

    On failure prints GNU's "invalid/ambiguous argument" block (with the valid choices and the
    Try line), sets nothing and returns None; the caller returns ``status``.
    """
    v = value or ""
    for g in groups:
        if v in g:
            return g[0]
    hits = {g[0] for g in groups for name in g if name.startswith(v)}  # ("" prefixes every name)
    if len(hits) == 1:
        return hits.pop()
    what = "ambiguous" if len(hits) > 1 else "invalid"
    ctx.error(f"{what} argument {quote(ctx, v)} for {quote(ctx, option)}")
    lines = ["Valid arguments are:"]
    for g in groups:
        lines.append("  - " + ", ".join(quote(ctx, x) for x in g))
    ctx.stderr.write(("\n".join(lines) + "\n").encode("utf-8", "surrogateescape"))
    try_help(ctx)
    return None
