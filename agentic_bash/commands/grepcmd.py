"""grep, egrep, fgrep (GNU grep 3.8) over the VFS."""

# GNU grep 3.8 behaviours kept here (checked against /usr/bin/grep on this machine):
# * "binary file matches" goes to stderr as ``grep: NAME: binary file matches`` (3.5+), the
#   exit status stays 0. A file is binary when its first buffer holds a NUL byte; in a UTF-8
#   locale a selected line with invalid UTF-8 switches to binary mode at that line (the lines
#   before it are printed). -c/-l/-L/-q are unaffected.
# * Debian's egrep/fgrep are `exec grep -E/-F` scripts: no "obsolescent" warning here.
# * Exit status: 0 if a line was selected, else 1; 2 on any error unless -q selected a line.
# * -L lists files without a selected line and exits 0 iff it listed one (3.5+).
# * Recursive traversal order is readdir (hash) order in GNU; we sort names.

from __future__ import annotations

import dataclasses
import errno
import fnmatch
import io
import itertools
import re
import stat as _stat
from typing import Any

import regex

from ..limits import charge_read
from ._args import OptError, _reader, is_output_file, iter_chunks, parse_opts
from ._regex import (
    RegexError, compile_patterns, from_text, timeout_guard, to_text, utf8_locale,
)
from .base import CommandContext, as_invoked, command, ctx_with

USAGE = "grep [OPTION]... PATTERNS [FILE]..."

HELP = """Search for PATTERNS in each FILE.
Example: grep -i 'hello world' menu.h main.c
PATTERNS can contain multiple patterns separated by newlines.

Pattern selection and interpretation:
  -E, --extended-regexp     PATTERNS are extended regular expressions
  -F, --fixed-strings       PATTERNS are strings
  -G, --basic-regexp        PATTERNS are basic regular expressions
  -P, --perl-regexp         PATTERNS are Perl regular expressions
  -e, --regexp=PATTERNS     use PATTERNS for matching
  -f, --file=FILE           take PATTERNS from FILE
  -i, --ignore-case         ignore case distinctions in patterns and data
      --no-ignore-case      do not ignore case distinctions (default)
  -w, --word-regexp         match only whole words
  -x, --line-regexp         match only whole lines
  -z, --null-data           a data line ends in 0 byte, not newline

Miscellaneous:
  -s, --no-messages         suppress error messages
  -v, --invert-match        select non-matching lines
  -V, --version             display version information and exit
      --help                display this help text and exit

Output control:
  -m, --max-count=NUM       stop after NUM selected lines
  -b, --byte-offset         print the byte offset with output lines
  -n, --line-number         print line number with output lines
      --line-buffered       flush output on every line
  -H, --with-filename       print file name with output lines
  -h, --no-filename         suppress the file name prefix on output
      --label=LABEL         use LABEL as the standard input file name prefix
  -o, --only-matching       show only nonempty parts of lines that match
  -q, --quiet, --silent     suppress all normal output
      --binary-files=TYPE   assume that binary files are TYPE;
                            TYPE is 'binary', 'text', or 'without-match'
  -a, --text                equivalent to --binary-files=text
  -I                        equivalent to --binary-files=without-match
  -d, --directories=ACTION  how to handle directories;
                            ACTION is 'read', 'recurse', or 'skip'
  -D, --devices=ACTION      how to handle devices, FIFOs and sockets;
                            ACTION is 'read' or 'skip'
  -r, --recursive           like --directories=recurse
  -R, --dereference-recursive  likewise, but follow all symlinks
      --include=GLOB        search only files that match GLOB (a file pattern)
      --exclude=GLOB        skip files that match GLOB
      --exclude-from=FILE   skip files that match any file pattern from FILE
      --exclude-dir=GLOB    skip directories that match GLOB
  -L, --files-without-match  print only names of FILEs with no selected lines
  -l, --files-with-matches  print only names of FILEs with selected lines
  -c, --count               print only a count of selected lines per FILE
  -T, --initial-tab         make tabs line up (if needed)
  -Z, --null                print 0 byte after FILE name

Context control:
  -B, --before-context=NUM  print NUM lines of leading context
  -A, --after-context=NUM   print NUM lines of trailing context
  -C, --context=NUM         print NUM lines of output context
  -NUM                      same as --context=NUM
      --group-separator=SEP  print SEP on line between matches with context
      --no-group-separator  do not print separator for matches with context
      --color[=WHEN],
      --colour[=WHEN]       use markers to highlight the matching strings;
                            WHEN is 'always', 'never', or 'auto'
  -U, --binary              do not strip CR characters at EOL (MSDOS/Windows)

When FILE is '-', read standard input.  With no FILE, read '.' if
recursive, '-' otherwise.  With fewer than two FILEs, assume -h.
Exit status is 0 if any line is selected, 1 otherwise;
if any error occurs and -q is not given, the exit status is 2.

Report bugs to: bug-grep@gnu.org
GNU grep home page: <https://www.gnu.org/software/grep/>
General help using GNU software: <https://www.gnu.org/gethelp/>"""

SHORT = "EFGPe:f:iywxzsvVm:bnHhoqaId:D:rRLlcTZB:A:C:U0123456789"
LONG = {
    "extended-regexp": "E", "fixed-strings": "F", "basic-regexp": "G", "perl-regexp": "P",
    "regexp": "e", "file": "f", "ignore-case": "i", "no-ignore-case": None,
    "word-regexp": "w", "line-regexp": "x", "null-data": "z", "no-messages": "s",
    "invert-match": "v", "version": "V", "max-count": "m", "byte-offset": "b",
    "line-number": "n", "no-line-number": None, "line-buffered": None, "with-filename": "H",
    "no-filename": "h", "label": "label:", "only-matching": "o", "quiet": "q", "silent": "q",
    "binary-files": "binary-files:", "text": "a", "directories": "d", "devices": "D",
    "recursive": "r", "dereference-recursive": "R", "include": "include:",
    "exclude": "exclude:", "exclude-from": "exclude-from:", "exclude-dir": "exclude-dir:",
    "files-without-match": "L", "files-with-matches": "l", "count": "c",
    "initial-tab": "T", "null": "Z", "before-context": "B", "after-context": "A",
    "context": "C", "group-separator": "group-separator:",
    "no-group-separator": None, "color": "color::", "colour": "color::", "binary": "U",
}

CHUNK = 65536
_CTX = b"\0ctx"  # a context line under -o: counts for separators, prints nothing
_BRE_SPECIAL = frozenset(".[]\\*^$+?{}()|")


class _Stop(Exception):
    """-q found a match (or -m reached everywhere): stop reading input."""


@dataclasses.dataclass
class _Opts:
    mode: str = "G"
    patterns: list[str] = dataclasses.field(default_factory=list)
    have_patterns: bool = False
    icase: bool = False
    whole: str = ""
    nul_data: bool = False
    no_messages: bool = False
    invert: bool = False
    max_count: int | None = None
    byte_offset: bool = False
    line_number: bool = False
    with_filename: bool | None = None
    label: str = "(standard input)"
    only: bool = False
    quiet: bool = False
    binary_files: str = "binary"
    directories: str = "read"
    devices: str = "read"
    deref: bool = False
    include: list[str] = dataclasses.field(default_factory=list)
    exclude: list[str] = dataclasses.field(default_factory=list)
    exclude_dir: list[str] = dataclasses.field(default_factory=list)
    list_files: str = ""  # 'l' or 'L'
    count: bool = False
    initial_tab: bool = False
    null: bool = False
    before: int = 0
    after: int = 0
    group_sep: bytes | None = b"--"
    color: bool = False
    context_given: bool = False


_FINDERS: dict[tuple[str, object], object] = {}
# (patterns, mode, -i, -w/-x, UTF-8, whole-buffer search) -> _Grep's compiled matchers
_COMPILED: dict[tuple[object, ...], tuple[Any, Any, Any, Any]] = {}
_COUNTERS: dict[str, re.Pattern[str]] = {}


def _line_finder(source: str, flags: object) -> object:
    """One match per matching line (see _Grep), compiled once per pattern and flags."""
    key = (source, flags)
    f = _FINDERS.get(key)
    if f is None:
        if len(_FINDERS) > 256:
            _FINDERS.clear()
        f = _FINDERS[key] = regex.compile("(?m:^)[^\n]*?(?:%s)[^\n]*" % source, flags)
    return f

def _usage(ctx: CommandContext) -> int:
    ctx.stderr.write(f"Usage: {USAGE}\nTry 'grep --help' for more information.\n".encode())
    return 2


def _context_num(ctx: CommandContext, v: str) -> int:
    try:
        n = int(v)
        if n < 0:
            raise ValueError
        return n
    except ValueError:
        ctx.error(f"{v}: invalid context length argument")
        raise OptError(2) from None


# argv (and whether POSIXLY_CORRECT is set) -> what _parse made of it, for a parse that
# wrote nothing and read no file (-f, --exclude-from): agents run the same grep over and over,
# and the option loop below was a quarter of a short grep's cost
_PARSED: dict[tuple[tuple[str, ...], bool], tuple[_Opts, tuple[str, ...]]] = {}


def _parse(ctx: CommandContext, argv: list[str]) -> tuple[_Opts, list[str]]:
    key = (tuple(argv), "POSIXLY_CORRECT" in ctx.env)
    hit = _PARSED.get(key)
    if hit is not None:
        o = _Opts.__new__(_Opts)
        # (a copy of the kept one's attributes; its lists are only ever replaced, never
        # changed: a dict copy, a fifth of the cost of update() into the new object's)
        o.__dict__ = hit[0].__dict__.copy()
        return o, list(hit[1])
    o, operands, cacheable = _parse_opts(ctx, argv)
    if cacheable:
        if len(_PARSED) >= 256:
            _PARSED.clear()
        keep = _Opts.__new__(_Opts)
        keep.__dict__.update(o.__dict__)
        _PARSED[key] = (keep, tuple(operands))
    return o, operands


def _parse_opts(ctx: CommandContext, argv: list[str]) -> tuple[_Opts, list[str], bool]:
    err = io.BytesIO()
    try:
        opts, operands = parse_opts(ctx_with(ctx, stderr=err), argv, SHORT, LONG)
    except OptError as e:
        msg = err.getvalue()
        if e.status != 0:
            # grep prints its usage line between the diagnostic and the Try line
            # (both name the program "grep", however it was run)
            k = msg.rfind(b"Try '")
            msg = msg[:k] + f"Usage: {USAGE}\nTry 'grep --help' for more information.\n".encode()
        ctx.stderr.write(msg)
        raise
    msg = err.getvalue()
    if msg:
        ctx.stderr.write(msg)
    cacheable = not msg
    o = _Opts()
    if argv[0].endswith("egrep"):
        o.mode = "E"
    elif argv[0].endswith("fgrep"):
        o.mode = "F"
    digits = ""
    last_digit = False
    matcher_set = argv[0].endswith(("egrep", "fgrep"))
    ctx_default: int | None = None
    after: int | None = None
    before: int | None = None
    for k, v in opts:
        if k.isdigit() and len(k) == 1:
            digits = (digits if last_digit else "") + k
            last_digit = True
            ctx_default = int(digits)
            continue
        last_digit = False
        if k in "EFGP" and len(k) == 1:
            if matcher_set and o.mode != k:
                ctx.error("conflicting matchers specified")
                raise OptError(2)
            matcher_set = True
            o.mode = k
        elif k == "e":
            o.patterns.extend((v or "").split("\n"))
            o.have_patterns = True
        elif k == "f":
            assert v is not None
            cacheable = False
            try:
                if v == "-":
                    data = b"".join(iter_chunks(ctx.stdin))
                else:
                    with ctx.fs.open(ctx.path(v), "rb") as fh:
                        data = fh.read()
            except OSError as e:
                ctx.os_error(e, v)
                raise OptError(2) from None
            text = data.decode("utf-8", "surrogateescape")
            if text.endswith("\n"):
                text = text[:-1]
            if text or data:
                o.patterns.extend(text.split("\n"))
            o.have_patterns = True
        elif k in ("i", "y"):
            o.icase = True
        elif k == "no-ignore-case":
            o.icase = False
        elif k == "w":
            o.whole = o.whole or "w"
            if o.whole == "w":
                pass
        elif k == "x":
            o.whole = "x"
        elif k == "z":
            o.nul_data = True
        elif k == "s":
            o.no_messages = True
        elif k == "v":
            o.invert = True
        elif k == "V":
            ctx.stdout.write(
                b"grep (GNU grep) 3.8\nCopyright (C) 2022 Free Software Foundation, Inc.\n"
                b"License GPLv3+: GNU GPL version 3 or later <https://gnu.org/licenses/gpl.html>.\n"
                b"This is free software: you are free to change and redistribute it.\n"
                b"There is NO WARRANTY, to the extent permitted by law.\n\n"
                b"Written by Mike Haertel and others; see\n"
                b"<https://git.sv.gnu.org/cgit/grep.git/tree/AUTHORS>.\n")
            raise OptError(0)
        elif k == "m":
            try:
                o.max_count = int(v or "")
            except ValueError:
                ctx.error("invalid max count")
                raise OptError(2) from None
        elif k == "b":
            o.byte_offset = True
        elif k == "n":
            o.line_number = True
        elif k == "no-line-number":
            o.line_number = False
        elif k == "H":
            o.with_filename = True
        elif k == "h":
            o.with_filename = False
        elif k == "label":
            o.label = v or ""
        elif k == "o":
            o.only = True
        elif k == "q":
            o.quiet = True
        elif k == "binary-files":
            if v not in ("binary", "text", "without-match"):
                ctx.error("unknown binary-files type")
                raise OptError(2)
            o.binary_files = v
        elif k == "a":
            o.binary_files = "text"
        elif k == "I":
            o.binary_files = "without-match"
        elif k == "D" and v not in ("read", "skip"):
            ctx.error("unknown devices method")  # exact words only, no argmatch
            raise OptError(2)
        elif k in ("d", "D"):
            valid = ("read", "recurse", "skip") if k == "d" else ("read", "skip")
            cands = [x for x in valid if v and x.startswith(v)]
            if v in valid:
                cands = [v]
            if len(cands) != 1:
                name = "--directories" if k == "d" else "--devices"
                kind = "ambiguous" if cands else "invalid"
                lines = "".join(f"  - \u2018{x}\u2019\n" for x in valid)
                ctx.stderr.write(
                    f"grep: {kind} argument \u2018{v}\u2019 for \u2018{name}\u2019\n"
                    f"Valid arguments are:\n{lines}Usage: {USAGE}\n"
                    "Try 'grep --help' for more information.\n".encode())
                raise OptError(1)  # argmatch_die: EXIT_FAILURE
            if k == "d":
                o.directories = cands[0]
            else:
                o.devices = cands[0]
        elif k == "r":
            o.directories = "recurse"
            o.deref = False
        elif k == "R":
            o.directories = "recurse"
            o.deref = True
        elif k == "include":
            o.include.append(v or "")
        elif k == "exclude":
            o.exclude.append(v or "")
        elif k == "exclude-from":
            cacheable = False
            try:
                with ctx.fs.open(ctx.path(v or ""), "rb") as fh:
                    o.exclude.extend(x for x in fh.read().decode("utf-8", "surrogateescape").split("\n") if x)
            except OSError as e:
                ctx.os_error(e, v)
                raise OptError(2) from None
        elif k == "exclude-dir":
            o.exclude_dir.append(v or "")
        elif k == "L":
            o.list_files = "L"
        elif k == "l":
            o.list_files = "l"
        elif k == "c":
            o.count = True
        elif k == "T":
            o.initial_tab = True
        elif k == "Z":
            o.null = True
        elif k == "A":
            after = _context_num(ctx, v or "")
        elif k == "B":
            before = _context_num(ctx, v or "")
        elif k == "C":
            ctx_default = _context_num(ctx, v or "")
        elif k == "group-separator":
            o.group_sep = (v or "").encode("utf-8", "surrogateescape")
        elif k == "no-group-separator":
            o.group_sep = None
        elif k == "color":
            if v in (None, "always", "yes", "force"):
                o.color = v is not None
            elif v in ("never", "no", "none", "auto", "tty", "if-tty"):
                o.color = False
            else:
                # grep 3.8 sets show_help for an unknown WHEN: the --help text, status 0
                from ._args import _print_help
                _print_help(ctx, "grep")
                raise OptError(0)
    o.context_given = after is not None or before is not None or ctx_default is not None
    o.after = after if after is not None else (ctx_default or 0)
    o.before = before if before is not None else (ctx_default or 0)
    if not o.have_patterns:
        if not operands:
            raise OptError(_usage(ctx))
        o.patterns = operands.pop(0).split("\n")
    return o, operands, cacheable


class _Grep:
    def __init__(self, ctx: CommandContext, o: _Opts) -> None:
        self.ctx = ctx
        self.o = o
        self.utf8 = utf8_locale(ctx.env)
        self.out = ctx.stdout
        self.num_width = 0  # -T: width of line numbers / byte offsets
        self.status_err = False
        self.any_selected = False
        self.printed_group = False
        self.sep = b"\0" if o.nul_data else b"\n"
        pats = tuple(o.patterns)
        # the whole-buffer fast path: cheap when no per-line details are needed
        self.use_buffer = (
            not o.nul_data and o.mode != "P" and not o.byte_offset and not o.context_given
            and not o.color
        )
        key = (pats, o.mode, o.icase, o.whole, self.utf8, self.use_buffer)
        hit = _COMPILED.get(key)
        if hit is not None:
            self.line_rx, self.buf_rx, self.line_finder, self.literals = hit
            return
        self.line_rx = compile_patterns(pats, mode=o.mode, icase=o.icase, whole=o.whole,
                                        utf8=self.utf8)
        self.buf_rx = (compile_patterns(pats, mode=o.mode, icase=o.icase, whole=o.whole,
                                        buffer=True, utf8=self.utf8)
                       if self.use_buffer else None)
        # one match per matching line: lets finditer (one timeout set-up per block) do the
        # scanning; regex's per-call timeout set-up costs ~8 us, more than a line's search
        self.line_finder = (_line_finder(self.buf_rx.source, self.buf_rx.fast.flags)
                            if self.buf_rx is not None else None)
        # plain literal patterns: str.find, no regex engine at all
        self.literals: list[str] | None = None
        if self.use_buffer and not o.whole and all("\n" not in p for p in pats) and pats:
            if o.mode == "F" or all(not any(c in _BRE_SPECIAL for c in p) for p in pats):
                if not o.icase or all(p.isascii() for p in pats):
                    self.literals = [p.lower() if o.icase else p for p in pats]
        if len(_COMPILED) >= 256:
            _COMPILED.clear()
        _COMPILED[key] = (self.line_rx, self.buf_rx, self.line_finder, self.literals)

    # -- output helpers --------------------------------------------------------------
    def error(self, msg: str) -> None:
        if not self.o.no_messages:
            self.ctx.error(msg)

    def prefix(self, name: bytes | None, lineno: int, offset: int, sep: bytes) -> bytes:
        o = self.o
        if o.color:
            # GNU's default GREP_COLORS: fn=35 ln=32 bn=32 se=36
            sepc = b"\x1b[36m\x1b[K" + sep + b"\x1b[m\x1b[K"
            s = b""
            if name is not None:
                s += b"\x1b[35m\x1b[K" + name + b"\x1b[m\x1b[K" + (b"\0" if o.null else sepc)
            if o.line_number:
                s += b"\x1b[32m\x1b[K%d\x1b[m\x1b[K" % lineno + sepc
            if o.byte_offset:
                s += b"\x1b[32m\x1b[K%d\x1b[m\x1b[K" % offset + sepc
            return s
        parts = []
        w = self.num_width if o.initial_tab else 0
        if name is not None:
            parts.append(name + (b"\0" if o.null else sep))
        if o.line_number:
            parts.append(b"%*d" % (w, lineno) + sep)
        if o.byte_offset:
            parts.append(b"%*d" % (w, offset) + sep)
        return b"".join(parts)

    def _bad_utf8(self, text: str) -> bool:
        if not self.utf8 or text.isascii():
            return False
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            return True
        return False

    # -- per input ---------------------------------------------------------------------
    def search(self, stream, display: str) -> int:  # noqa: ANN001
        return self.count_one(stream, display) if self.count_lit else self.search_stream(stream, display)

    def count_one(self, stream, display: str) -> int:  # noqa: ANN001
        """search_stream for ``-c`` (or ``-vc``) of one literal, where that ends in its
        one-literal count: an input that is one read without a NUL is counted here (most
        pipes into ``grep -c``), without search_stream's set-up; otherwise the reads made
        go to search_stream first."""
        o = self.o
        lit = self.literals[0]  # type: ignore[index]
        # (iter_chunks' first two steps, without a generator: each read charged, the first
        # empty one ends the input)
        read = _reader(stream)
        data = read(CHUNK)
        if not data:
            return 0
        charge_read(len(data))
        more = read(CHUNK)
        if more:
            charge_read(len(more))
            return self.search_stream(stream, display, [data, more], iter_chunks(stream, CHUNK))
        if b"\0" in data:
            return self.search_stream(stream, display, [data], iter(()))
        self.ctx.budget.check()
        text = to_text(data, self.utf8)
        rx = _COUNTERS.get(lit)
        if rx is None:
            if len(_COUNTERS) >= 256:
                _COUNTERS.clear()
            rx = _COUNTERS[lit] = re.compile(re.escape(lit) + "[^\n]*+")
        hits = len(rx.findall(text))
        if o.invert:
            hits = text.count("\n") + (0 if text.endswith("\n") else 1) - hits
        if hits:
            self.any_selected = True
        return hits

    def search_stream(self, stream, display: str, pre: list[bytes] | None = None,  # noqa: ANN001
                      rest: Any = None) -> int:
        """Search one input; return the number of selected lines (output already written).
        ``pre``: chunks already read from it, then the iterator ``rest`` of its chunks."""
        o = self.o
        ctx = self.ctx
        utf8 = self.utf8
        if o.initial_tab:
            # grep 3.8 -T pads numbers to the digit count of the input's size (19 for a pipe)
            self.num_width = 19
            try:
                pos = stream.tell()
                self.num_width = len(str(stream.seek(0, 2)))
                stream.seek(pos)
            except (OSError, AttributeError, ValueError):
                pass
        name = display.encode("utf-8", "surrogateescape") if self.with_filename else None
        listing = bool(o.list_files or o.quiet)
        printing = not (listing or o.count)
        maxc = o.max_count
        selected = 0
        lineno = 0
        offset = 0  # byte offset of the next line
        binary = False
        before_buf: list[tuple[int, int, bytes]] = []
        after_left = 0
        last_printed = 0
        out: list[bytes] = []
        sep = self.sep
        sep_s = sep.decode()
        tm = self.ctx.budget.remaining
        line_search = self.line_rx.fast.search
        buf_search = self.buf_rx.fast.search if self.buf_rx is not None else None
        rx_iter = self.line_rx.rx.finditer
        context = o.context_given
        tab = b"\t" if o.initial_tab and (name is not None or o.line_number or o.byte_offset) else b""
        plain_prefix = name is None and not o.line_number and not o.byte_offset and not tab
        carry = b""
        done = False
        bad_enc = False
        chunks = iter_chunks(stream, CHUNK) if pre is None else itertools.chain(pre, rest)

        def emit(ln: int, data: bytes) -> None:
            nonlocal last_printed
            # the separator also goes between groups of different files
            if context and o.group_sep is not None and (
                    (last_printed and ln > last_printed + 1) or (not last_printed and self.printed_group)):
                out.append((b"\x1b[36m\x1b[K" + o.group_sep + b"\x1b[m\x1b[K" if o.color else o.group_sep) + b"\n")
            if data is not None and not (o.only and data is _CTX):
                out.append(data)
            last_printed = ln
            self.printed_group = True

        while True:
            data = next(chunks, None)
            if data is None:
                if not carry:
                    break
                block, carry = carry, b""
            else:
                if carry:
                    data = carry + data
                k = data.rfind(sep)
                if k < 0:
                    carry = data
                    continue
                block, carry = data[:k + 1], data[k + 1:]
            ctx.budget.check()
            if binary is not None and not binary and o.binary_files != "text" and not o.nul_data:
                # GNU checks every buffer it reads for NULs, not only the first
                if b"\0" in block:
                    binary = True
                    if o.binary_files == "without-match":
                        return 0
            if binary:
                # GNU's nul_zapper: in a binary file a NUL ends a line for matching purposes
                block = block.replace(b"\0", b"\n")
            text = to_text(block, utf8)
            if buf_search is not None:
                # whole-buffer search: find the matching lines' spans, materialise only
                # the selected lines (or just count them)
                n = len(text)
                base = lineno  # lines before this block
                state = [base, 0]  # [lines before position state[1], position]

                def line_no(pos: int) -> int:
                    state[0] += text.count("\n", state[1], pos)
                    state[1] = pos
                    return state[0] + 1

                def spans():  # noqa: ANN202
                    lits = self.literals
                    if lits is not None:
                        hay = text.lower() if o.icase and text.isascii() else text
                        if hay is text and o.icase:
                            hay = None  # non-ASCII text with -i: use the regex
                        if hay is not None:
                            pos = 0
                            find = hay.find
                            while pos < n:
                                best = -1
                                for lit in lits:
                                    k = find(lit, pos)
                                    if k >= 0 and (best < 0 or k < best):
                                        best = k
                                if best < 0:
                                    return
                                st = hay.rfind("\n", 0, best) + 1
                                e = hay.find("\n", best)
                                e = n if e < 0 else e + 1
                                yield st, e
                                pos = e
                            return
                    with timeout_guard():
                        for m in self.line_finder.finditer(text, timeout=tm()):
                            st = m.start()
                            if st >= n:
                                return  # the empty "line" after the final newline
                            e = m.end()
                            yield st, (e + 1 if e < n else n)

                def selected_lines():  # noqa: ANN202
                    if not o.invert:
                        yield from spans()
                        return
                    prev = 0
                    for st, e in list(spans()) + [(n, n)]:
                        q = prev
                        while q < st:
                            k = text.find("\n", q, st)
                            k = st if k < 0 else k + 1
                            yield q, k
                            q = k
                        prev = e

                stop = False
                lits = self.literals
                if (lits is not None and len(lits) == 1 and lits[0] and o.count and not listing and maxc is None
                        and not o.icase and not o.only and not binary):
                    # -c of one literal: one match per line that holds it (the match runs
                    # to the line's end), no line split
                    rx = _COUNTERS.get(lits[0])
                    if rx is None:
                        if len(_COUNTERS) >= 256:
                            _COUNTERS.clear()
                        rx = _COUNTERS[lits[0]] = re.compile(re.escape(lits[0]) + "[^\n]*+")
                    nl = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
                    hits = len(rx.findall(text))
                    k = nl - hits if o.invert else hits
                    if k:
                        self.any_selected = True
                    selected += k
                    lineno += nl
                    continue
                if lits is not None and not o.only and (not o.icase or text.isascii()):
                    # literal patterns: filter the split lines at C speed
                    lines = text.split("\n")
                    ends_nl = lines[-1] == ""
                    if ends_nl:
                        lines.pop()
                    hl = [x.lower() for x in lines] if o.icase else lines
                    if len(lits) == 1:
                        lit = lits[0]
                        sel = [i for i, x in enumerate(hl) if (lit in x) != o.invert]
                    else:
                        sel = [i for i, x in enumerate(hl) if any(t in x for t in lits) != o.invert]
                    if maxc is not None and selected + len(sel) >= maxc:
                        sel = sel[:maxc - selected]
                        stop = True
                    if sel:
                        self.any_selected = True
                        if listing:
                            self.flush(out)
                            return selected + len(sel)
                    if printing and sel:
                        if binary:
                            self.flush(out)
                            self.error_binary(display)
                            return selected + 1
                        last_i = len(lines) - 1
                        for i in sel:
                            line = lines[i]
                            if utf8 and not line.isascii() and self._bad_utf8(line):
                                bad_enc = True
                                continue
                            if plain_prefix:
                                out.append(from_text(line, utf8) + b"\n")
                            else:
                                out.append(self.prefix(name, lineno + i + 1, 0, b":") + tab
                                           + from_text(line, utf8) + b"\n")
                        _ = last_i
                    selected += len(sel)
                    if o.line_number or True:
                        lineno += len(lines)
                    self.flush(out)
                    if stop:
                        break
                    continue
                if not printing and not listing and maxc is None and not binary:
                    # -c without -m: count only
                    if o.invert:
                        total = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
                        hits = sum(1 for _ in spans())
                        selected += total - hits
                    else:
                        selected += sum(1 for _ in spans())
                    if selected:
                        self.any_selected = True
                else:
                    for st, e in selected_lines():
                        selected += 1
                        self.any_selected = True
                        if listing:
                            self.flush(out)
                            return selected
                        if printing:
                            line = text[st:e]
                            if binary:
                                self.flush(out)
                                self.error_binary(display)
                                return selected
                            # -o prints the matches of a line with an encoding error (they
                            # cannot hold the bad byte: "." and "[^...]" do not match it)
                            if not o.only and self._bad_utf8(line):
                                bad_enc = True
                            elif o.only:
                                if not o.invert:
                                    body = line[:-1] if line.endswith("\n") else line
                                    ln = line_no(st) if o.line_number else 0
                                    with timeout_guard():
                                        for m in rx_iter(body, timeout=tm()):
                                            if m.end() > m.start():
                                                out.append(self.prefix(name, ln, 0, b":") + tab
                                                           + from_text(m.group(), utf8) + b"\n")
                            else:
                                if not line.endswith("\n"):
                                    line += "\n"
                                if plain_prefix:
                                    out.append(from_text(line, utf8))
                                else:
                                    ln = line_no(st) if o.line_number else 0
                                    out.append(self.prefix(name, ln, 0, b":") + tab + from_text(line, utf8))
                        if maxc is not None and selected >= maxc:
                            stop = True
                            break
                if o.line_number:
                    lineno = base + text.count("\n") + (0 if text.endswith("\n") else 1)
                self.flush(out)
                if stop:
                    break
                continue
            lines = text.split(sep_s)
            last = lines.pop()  # '' when the block ends with the separator
            if last:
                lines.append(last)
            nlines = len(lines)
            t = tm()
            for idx, line in enumerate(lines):
                lineno += 1
                with timeout_guard():
                    is_sel = (line_search(line, timeout=t) is not None) != o.invert
                raw = from_text(line, utf8) if (printing or o.byte_offset) else b""
                if done:
                    # -m reached: trailing context only (matching lines print as context)
                    if after_left <= 0 or not printing:
                        break
                    after_left -= 1
                    emit(lineno, _CTX if o.only else self.prefix(name, lineno, offset, b"-") + tab + raw + sep)
                elif is_sel:
                    selected += 1
                    self.any_selected = True
                    if listing:
                        self.flush(out)
                        return selected
                    if printing and (binary or (not o.only and self._bad_utf8(line))):
                        if binary:
                            self.flush(out)
                            self.error_binary(display)
                            return selected
                        bad_enc = True  # GNU skips the line and reports at the end
                    elif printing:
                        for bl, bo, braw in before_buf:
                            # -o prints no context lines, but they still decide the "--"
                            emit(bl, _CTX if o.only else self.prefix(name, bl, bo, b"-") + tab + braw + sep)
                        before_buf.clear()
                        if o.only:
                            if not o.invert:
                                with timeout_guard():
                                    for m in rx_iter(line, timeout=t):
                                        if m.end() == m.start():
                                            continue
                                        mo = offset + len(from_text(line[:m.start()], utf8)) if o.byte_offset else 0
                                        mt = from_text(m.group(), utf8)
                                        if o.color:
                                            mt = b"\x1b[01;31m\x1b[K" + mt + b"\x1b[m\x1b[K"
                                        emit(lineno, self.prefix(name, lineno, mo, b":") + tab + mt + sep)
                        elif o.color and not o.invert:
                            emit(lineno, self.prefix(name, lineno, offset, b":") + self.colorize(line, t) + sep)
                        else:
                            emit(lineno, self.prefix(name, lineno, offset, b":") + tab + raw + sep)
                        after_left = o.after
                    if maxc is not None and selected >= maxc:
                        done = True
                        if not printing or not o.after:
                            break
                elif printing:
                    if after_left > 0:
                        after_left -= 1
                        emit(lineno, _CTX if o.only else self.prefix(name, lineno, offset, b"-") + tab + raw + sep)
                    elif o.before:
                        before_buf.append((lineno, offset, raw))
                        if len(before_buf) > o.before:
                            del before_buf[0]
                if o.byte_offset:
                    offset += len(raw) + (1 if (idx < nlines - 1 or not last) else 0)
            else:
                self.flush(out)
                continue
            break  # -m satisfied
        self.flush(out)
        if bad_enc:
            self.error_binary(display)
        return selected

    def colorize(self, line: str, t: float | None) -> bytes:
        parts = []
        pos = 0
        with timeout_guard():
            for m in self.line_rx.rx.finditer(line, timeout=t):
                if m.end() == m.start():
                    continue
                parts.append(from_text(line[pos:m.start()], self.utf8))
                parts.append(b"\x1b[01;31m\x1b[K" + from_text(m.group(), self.utf8) + b"\x1b[m\x1b[K")
                pos = m.end()
        parts.append(from_text(line[pos:], self.utf8))
        return b"".join(parts)

    def error_binary(self, display: str) -> None:
        if not self.o.quiet:
            self.ctx.stderr.write(f"grep: {display}: binary file matches\n".encode("utf-8", "surrogateescape"))

    def flush(self, out: list[bytes]) -> None:
        if out:
            if not self.o.quiet:
                self.out.write(b"".join(out))
            out.clear()

    # -- files -------------------------------------------------------------------------
    def report(self, display: str, selected: int) -> None:
        o = self.o
        name = display.encode("utf-8", "surrogateescape")
        end = b"\0" if o.null else b"\n"
        if o.quiet:
            if selected:
                raise _Stop
            return
        cname = b"\x1b[35m\x1b[K" + name + b"\x1b[m\x1b[K" if o.color else name
        if o.count and not o.list_files:  # -l/-L override -c
            if self.with_filename:
                sep = b"\0" if o.null else (b"\x1b[36m\x1b[K:\x1b[m\x1b[K" if o.color else b":")
                self.out.write(cname + sep + b"%d\n" % selected)
            else:
                self.out.write(b"%d\n" % selected)
        if o.list_files == "l" and selected:
            self.out.write(cname + end)
        elif o.list_files == "L" and not selected:
            self.out.write(cname + end)
            self.any_listed = True

    def excluded_file(self, path: str, command_line: bool) -> bool:
        o = self.o
        base = path.rstrip("/").rsplit("/", 1)[-1]
        names = (base, path) if command_line else (base,)
        for g in o.exclude:
            if any(fnmatch.fnmatchcase(nm, g) for nm in names):
                return True
        if o.include:
            return not any(fnmatch.fnmatchcase(nm, g) for g in o.include for nm in names)
        return False

    def excluded_dir(self, path: str) -> bool:
        base = path.rstrip("/").rsplit("/", 1)[-1]
        return any(fnmatch.fnmatchcase(base, g) for g in self.o.exclude_dir)

    def excluded_operand_dir(self, operand: str) -> bool:
        """A directory named on the command line: GNU matches the name as typed ("sub/" is not
        "sub") or any part after a slash ("../gx" is "gx"); the implicit "." never."""
        for g in self.o.exclude_dir:
            pat = g.rstrip("/") or g
            if fnmatch.fnmatchcase(operand, pat):
                return True
            i = operand.find("/")
            while i >= 0:
                if fnmatch.fnmatchcase(operand[i + 1:], pat):
                    return True
                i = operand.find("/", i + 1)
        return False

    def walk(self, operand: str, display: str) -> None:
        """One operand, depth-first with an explicit stack (trees may be deeper than Python's)."""
        stack = [(operand, display, True, None)]
        while stack:
            children = self.do_file(*stack.pop())
            if children:
                stack.extend(reversed(children))

    def do_file(self, operand: str, display: str, command_line: bool, st=None):  # noqa: ANN001, ANN201
        ctx = self.ctx
        o = self.o
        if operand == "-" and command_line:
            if self.is_output(ctx.stdin, o.label):
                return
            sel = self.search(ctx.stdin, o.label)
            self.report(o.label, sel)
            return
        if operand == "":
            self.error(f"{display}: No such file or directory")
            self.status_err = True
            return
        p = ctx.path(operand)
        try:
            follow = o.deref or command_line
            if st is None:
                st = ctx.fs.stat(p, follow_symlinks=follow)
        except OSError as e:
            if not command_line and not ctx.fs.exists(p) and ctx.fs.lexists(p):
                return  # dangling symlink met during recursion: GNU skips it silently
            self.error(f"{display}: {e.strerror or 'No such file or directory'}")
            self.status_err = True
            return
        if _stat.S_ISLNK(st.st_mode):
            return  # -r does not follow symlinks found while recursing
        if _stat.S_ISDIR(st.st_mode):
            if o.directories == "skip":
                return
            if o.directories == "read":
                # GNU reads the directory, fails with EISDIR, and still reports it (-c: 0, -L)
                self.error(f"{display}: Is a directory")
                self.status_err = True
                if self.fname_mode == "auto":
                    self.with_filename = not command_line
                if not o.quiet:
                    self.report(display, 0)
                return
            if command_line and o.exclude_dir and not self.implicit_dot and self.excluded_operand_dir(operand):
                return
            try:
                names = sorted(ctx.fs.listdir(p))
            except OSError as e:
                self.error(f"{display}: {e.strerror}")
                self.status_err = True
                return
            children = []
            for nm in names:
                child = nm if display == "" else (display.rstrip("/") + "/" + nm if display != "/" else "/" + nm)
                if self.implicit_dot and display == ".":
                    child = nm
                cp = p.rstrip("/") + "/" + nm
                try:
                    cst = ctx.fs.stat(cp, follow_symlinks=o.deref)
                except OSError:
                    continue
                if _stat.S_ISDIR(cst.st_mode):
                    if self.excluded_dir(nm):
                        continue
                elif _stat.S_ISLNK(cst.st_mode):
                    continue
                elif self.excluded_file(nm, False):
                    continue
                children.append((cp, child, False, cst))
            return children
            return
        if command_line and (o.include or o.exclude) and self.excluded_file(operand, True):
            return
        if not _stat.S_ISREG(st.st_mode) and o.devices == "skip":
            return
        try:
            fh = ctx.fs.open(p, "rb")
        except OSError as e:
            self.error(f"{display}: {e.strerror}")
            self.status_err = True
            return
        if self.fname_mode == "auto":
            self.with_filename = not command_line
        with fh:
            if self.is_output(fh, display):
                return
            sel = self.search(fh, display)
        self.report(display, sel)

    def is_output(self, fh, display: str) -> bool:  # noqa: ANN001
        """GNU refuses to read the file its output goes to, unless it prints no lines (-c/-l/-L/-q/-m1)."""
        o = self.o
        if o.quiet or o.count or o.list_files or (o.max_count is not None and o.max_count <= 1):
            return False
        if not is_output_file(self.ctx, fh, unread_only=False):
            return False
        self.error(f"{display}: input file is also the output")
        self.status_err = True
        return True


@command("grep", "egrep", "fgrep", usage=USAGE, help=HELP)
def grep(ctx: CommandContext, argv: list[str]) -> int:
    ctx = as_invoked(ctx, "grep")
    try:
        o, files = _parse(ctx, argv)
    except OptError as e:
        return e.status
    if not o.patterns:
        # no pattern at all (-f /dev/null): GNU matches nothing by inverting the empty pattern
        o.patterns = [""]
        o.invert = not o.invert
        o.whole = ""
    # GNU exits at once when nothing can be selected: -m 0, or -v with only empty patterns
    if (o.max_count == 0 or (o.invert and not o.whole and all(p == "" for p in o.patterns))) \
            and o.list_files != "L":
        return 1
    try:
        g = _Grep(ctx, o)
    except RegexError as e:
        ctx.error(str(e))
        return 2
    for w in g.line_rx.warnings:
        ctx.error(f"warning: {w}")
    g.implicit_dot = False
    g.any_listed = False
    lits = g.literals
    # (the conditions under which search_stream counts a block with its one-literal counter)
    # (a flag, not a bound method in an attribute: that would be a cycle holding the
    # context, and the run's budget with it, until the next collection)
    g.count_lit = bool(lits is not None and len(lits) == 1 and lits[0] and o.count
                       and not o.list_files and not o.quiet and o.max_count is None and not o.icase
                       and not o.only and not o.initial_tab)
    if not files:
        if o.directories == "recurse":
            files = ["."]
            g.implicit_dot = True
        else:
            files = ["-"]
    # grep 3.8: with one operand and -r, names are printed only for files found by recursion
    g.fname_mode = o.with_filename if o.with_filename is not None else (
        True if len(files) > 1 else ("auto" if o.directories == "recurse" else False))
    g.with_filename = g.fname_mode is True
    try:
        if g.count_lit and len(files) == 1 and files[0] == "-" and not g.implicit_dot:
            # (`… | grep -c word`: walk → do_file → is_output → search, inlined; -c reads
            # its own output file too)
            g.report(o.label, g.count_one(ctx.stdin, o.label))
        else:
            for f in files:
                if g.implicit_dot:
                    g.walk(".", ".")
                else:
                    g.walk(f, f if f != "-" else o.label)
    except _Stop:
        return 0
    except BrokenPipeError:
        raise
    except OSError as e:
        if e.errno == errno.EPIPE:
            raise
        raise
    ok = g.any_selected  # 3.5+: even with -L, success means a line was selected
    if g.status_err and not (o.quiet and ok):
        return 2
    return 0 if ok else 1
