"""sed (GNU sed 4.9): the full script language over the VFS, streaming line by line."""

# GNU sed 4.9 behaviours kept here (checked against /usr/bin/sed on this machine):
# * "char N" in messages is the number of script characters consumed when the error was
#   noticed (an unread character does not count); -e pieces are joined by newlines, each
#   numbered ("-e expression #2, char 3: ..."); -f files report "file F line L: ...".
# * A missing label is found after parsing: "can't find label for jump to `x'", exit 4.
# * The pattern-space delimiter scan skips bracket expressions: s/[/]/X/ is valid.
# * With -s or -i, line numbers and `$` restart for each file.
# * A last input line without a newline is output without one; any later output to the
#   same stream first adds the missing newline.
# * `n`/`N` at end of input end the script (GNU prints the pattern space unless -n, even
#   for N, which POSIX says to discard).
# * Pattern spaces are str (bytes decoded by the locale, see _regex); `l` escapes bytes.

from __future__ import annotations

import io
import re
from itertools import repeat
from dataclasses import dataclass, field
from typing import BinaryIO, Callable

import regex

from ..shell.expand import _lower as _towlower, _upper as _towupper   # (towupper per character)
from ._args import OptError, iter_lines, parse_opts
from ._regex import PosixRegex, RegexError, compile_posix, from_text, timeout_guard, to_text, utf8_locale
from .base import CommandContext, as_invoked, command, ctx_with

USAGE = "sed [OPTION]... {script-only-if-no-other-script} [input-file]..."

HELP = """
  -n, --quiet, --silent
                 suppress automatic printing of pattern space
      --debug
                 annotate program execution
  -e script, --expression=script
                 add the script to the commands to be executed
  -f script-file, --file=script-file
                 add the contents of script-file to the commands to be executed
  --follow-symlinks
                 follow symlinks when processing in place
  -i[SUFFIX], --in-place[=SUFFIX]
                 edit files in place (makes backup if SUFFIX supplied)
  -l N, --line-length=N
                 specify the desired line-wrap length for the `l' command
  --posix
                 disable all GNU extensions.
  -E, -r, --regexp-extended
                 use extended regular expressions in the script
                 (for portability use POSIX -E).
  -s, --separate
                 consider files as separate rather than as a single,
                 continuous long stream.
      --sandbox
                 operate in sandbox mode (disable e/r/w commands).
  -u, --unbuffered
                 load minimal amounts of data from the input files and flush
                 the output buffers more often
  -z, --null-data
                 separate lines by NUL characters
      --help     display this help and exit
      --version  output version information and exit

If no -e, --expression, -f, or --file option is given, then the first
non-option argument is taken as the sed script to interpret.  All
remaining arguments are names of input files; if no input files are
specified, then the standard input is read.

GNU sed home page: <https://www.gnu.org/software/sed/>.
General help using GNU software: <https://www.gnu.org/gethelp/>.
"""

USAGE_TEXT = f"Usage: {USAGE}\n{HELP}".encode()


def _usage_text(ctx: CommandContext) -> bytes:
    """sed's usage names the program as invoked (`Usage: /usr/bin/sed [OPTION]...`)."""
    return USAGE_TEXT if ctx.name == "sed" else USAGE_TEXT.replace(b"sed", ctx.name.encode(), 1)

VERSION = b"""sed (GNU sed) 4.9
Packaged by Debian
Copyright (C) 2022 Free Software Foundation, Inc.
License GPLv3+: GNU GPL version 3 or later <https://gnu.org/licenses/gpl.html>.
This is free software: you are free to change and redistribute it.
There is NO WARRANTY, to the extent permitted by law.

Written by Jay Fenlason, Tom Lord, Ken Pizzini,
Paolo Bonzini, Jim Meyering, and Assaf Gordon.

This sed program was built with SELinux support.
SELinux is disabled on this system.

GNU sed home page: <https://www.gnu.org/software/sed/>.
General help using GNU software: <https://www.gnu.org/gethelp/>.
E-mail bug reports to: <bug-sed@gnu.org>.
"""


BLOCK_MODE = True  # tests switch it off to compare block mode with the line-by-line engine


_RX_SPECIAL = frozenset(".[]\\*^$+?{}()|\n")
_ANCHORS = ("(?:^)", "(?m:^)", "(?m:$)", "(?!(?s:.))", "\\A", "\\Z", "\\b", "\\B")
_mb_cache: dict = {}


def _mb_split(rx) -> bool:  # noqa: ANN001
    """Can this regex match empty inside a multibyte character the way glibc's byte-wise
    stepping does? Not when it holds anchors or word-boundary assertions."""
    r = _mb_cache.get(rx)
    if r is None:
        r = not any(a in rx.pattern for a in _ANCHORS)
        _mb_cache[rx] = r
    return r


class SedError(Exception):
    """A script error; ``str`` is the full message after ``sed: ``; ``status`` the exit code."""

    def __init__(self, msg: str, status: int = 1) -> None:
        super().__init__(msg)
        self.status = status


class _Quit(Exception):
    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


# -- script reader ------------------------------------------------------------------------

class _Reader:
    """The program text (all -e/-f pieces joined by newlines) with GNU's position bookkeeping."""

    def __init__(self, pieces: list[tuple[str, str]]) -> None:
        # pieces: (kind 'e'|'f', name-or-text) -> concatenated text; map offsets to pieces
        self.text = ""
        self.starts: list[tuple[int, str, str, int]] = []  # (start, kind, name, number)
        ne = 0
        self.lens: list[int] = []
        for kind, name, body in pieces:  # type: ignore[misc]
            if kind == "e":
                ne += 1
                self.lens.append(len(body))
            self.starts.append((len(self.text), kind, name, ne))
            self.text += body + "\n"
        if self.text.endswith("\n"):
            self.text = self.text[:-1]
        self.pos = 0
        self.n = len(self.text)
        # the newlines that join two pieces: GNU compiles each piece on its own (only a/i/c
        # text goes on into the next), so a backslash before one escapes nothing
        self.joins = {st[0] - 1 for st in self.starts[1:]}

    def at_join(self) -> bool:
        """Is the next character the newline that ends a piece?"""
        return self.pos in self.joins

    def get(self) -> str:
        """Next char or '' at EOF."""
        if self.pos >= self.n:
            self.pos = self.n + 1  # reading EOF: GNU does not count it, see where()
            return ""
        c = self.text[self.pos]
        self.pos += 1
        return c

    def unget(self, c: str) -> None:
        if c:
            self.pos -= 1
        else:
            self.pos = self.n

    def peek(self) -> str:
        return self.text[self.pos] if self.pos < self.n else ""

    def where(self) -> str:
        pos = min(self.pos, self.n)
        cur = self.starts[0]
        for s in self.starts:
            if s[0] <= max(pos - 1, 0):
                cur = s
        start, kind, name, num = cur
        if kind == "f":
            line = self.text.count("\n", start, max(pos - 1, start)) + 1
            return f"file {name} line {line}"
        # the newline joining two -e pieces is GNU's end of a piece, not a counted char
        return f"-e expression #{num}, char {min(pos - start, self.lens[num - 1])}"

    def error(self, msg: str) -> SedError:
        return SedError(f"{self.where()}: {msg}")


# -- compiled program ---------------------------------------------------------------------

@dataclass
class Addr:
    kind: str  # 'line' 'last' 're' 'step' 'zero' | addr2: 'plus' 'mult'
    n: int = 0
    step: int = 0
    rx: PosixRegex | None = None  # None with kind 're' = the last regex used
    bpat: str | None = None  # the regex text (block mode)
    bflags: str = ""


@dataclass
class Cmd:
    name: str
    a1: Addr | None = None
    a2: Addr | None = None
    neg: bool = False
    # arguments
    text: str = ""
    label: str = ""
    target: int = -1  # jump target / matching brace
    num: int | None = None
    fname: str = ""
    rx: PosixRegex | None = None
    repl: list = field(default_factory=list)
    gflag: bool = False
    occurrence: int = 1
    pflag: int = 0
    eflag: bool = False
    wfile: str = ""
    ymap: dict = field(default_factory=dict)
    bpat: str | None = None  # s: the regex text, for block mode
    bext: bool = False
    # range state
    active: bool = False
    end_line: int = 0
    done: bool = False  # a numeric first address that has passed


def _verscmp(a: str, b: str) -> int:
    """strverscmp-like: digit runs compare as numbers, other characters by code."""
    ta, tb = re.findall(r"\d+|\D", a), re.findall(r"\d+|\D", b)
    for x, y in zip(ta, tb):
        if x.isdigit() and y.isdigit():
            if int(x) != int(y):
                return 1 if int(x) > int(y) else -1
        elif x != y:
            return 1 if x > y else -1
    return (len(ta) > len(tb)) - (len(ta) < len(tb))


_SIMPLE_ESC = {"a": "\a", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}


class _Compiler:
    def __init__(self, ctx: CommandContext, rd: _Reader, extended: bool, utf8: bool,
                 posix: bool, sandbox: bool) -> None:
        self.ctx = ctx
        self.rd = rd
        self.extended = extended
        self.utf8 = utf8
        self.posix = posix
        self.sandbox = sandbox
        self.cmds: list[Cmd] = []
        self.wfiles: list[str] = []
        self.seen_rx = False

    def err(self, msg: str) -> SedError:
        return self.rd.error(msg)

    def compile_rx(self, pat: str, flags: str) -> PosixRegex | None:
        if pat == "":
            # the empty regex means "the last regex used", resolved at run time; GNU insists
            # that some regex was compiled before it
            if not self.seen_rx:
                raise SedError(self.rd.where().split(", char")[0] + ", char 0: no previous regular expression"
                               if self.rd.starts[-1][1] == "e" else "no previous regular expression")
            return None
        self.seen_rx = True
        try:
            return compile_posix(pat, extended=self.extended, icase="I" in flags,
                                 multiline="M" in flags, utf8=self.utf8, sed=True, dotall=True)
        except RegexError as e:
            raise self.err(str(e)) from None

    # GNU match_slash: read up to the unescaped delimiter; "\n" -> newline, "\<delim>" ->
    # the delimiter; bracket expressions are skipped in regexes.
    def slash(self, delim: str, regex: bool) -> str | None:
        rd = self.rd
        out: list[str] = []
        while True:
            c = rd.get()
            if c == "":
                return None
            if c == "\n" and delim != "\n" and not regex:
                # a literal newline in a replacement must be escaped
                return None
            if c == "\n" and regex and delim != "\n":
                return None
            if c == delim:
                return "".join(out)
            if c == "\\":
                if rd.at_join():
                    return None  # (`-e 's/a/b\' -e 'c/'`: unterminated)
                d = rd.get()
                if d == "":
                    return None
                if d == delim:
                    if not regex and d == "&":
                        out.append("\\")
                    out.append(d)
                elif d == "n" and regex:
                    out.append("\n")
                elif d == "\n":
                    out.append("\\\n" if not regex else "\n")
                else:
                    out.append("\\" + d)
                continue
            if c == "[" and regex:
                # copy a bracket expression verbatim
                out.append(c)
                save = rd.pos
                c2 = rd.get()
                if c2 == "^":
                    out.append(c2)
                    c2 = rd.get()
                if c2 == "]":
                    out.append(c2)
                    c2 = rd.get()
                while True:
                    if c2 == "" or c2 == "\n":
                        return None
                    if c2 == "[" and rd.peek() in ".:=":
                        kind = rd.get()
                        out.append("[" + kind)
                        while True:
                            c3 = rd.get()
                            if c3 == "" or c3 == "\n":
                                return None
                            out.append(c3)
                            if c3 == kind and rd.peek() == "]":
                                out.append(rd.get())
                                break
                        c2 = rd.get()
                        continue
                    out.append(c2)
                    if c2 == "]":
                        break
                    c2 = rd.get()
                _ = save
                continue
            out.append(c)

    def skip_ws(self) -> str:
        rd = self.rd
        while True:
            c = rd.get()
            if c not in (" ", "\t"):
                return c

    def number(self, first: str) -> int:
        rd = self.rd
        s = first
        while rd.peek().isdigit() and rd.peek().isascii():
            s += rd.get()
        return int(s)

    def address(self, c: str) -> Addr | None:
        rd = self.rd
        if c == "/" or c == "\\":
            if c == "\\":
                c = rd.get()
                if c == "" or c == "\n":
                    raise self.err("unterminated address regex")
            pat = self.slash(c, True)
            if pat is None:
                raise self.err("unterminated address regex")
            flags = ""
            while True:
                f = self.skip_ws()
                if f in ("I", "M"):
                    flags += f
                    continue
                rd.unget(f)
                break
            rx = self.compile_rx(pat, flags)
            return Addr("re", rx=rx, bpat=pat, bflags=flags)
        if c.isdigit() and c.isascii():
            n = self.number(c)
            if rd.peek() == "~":
                rd.get()
                d = rd.peek()
                step = self.number(rd.get()) if d.isdigit() else 0
                return Addr("step", n=n, step=step)
            return Addr("line", n=n)
        if c == "$":
            return Addr("last")
        return None

    def read_filename(self) -> str:
        rd = self.rd
        c = self.skip_ws()
        out = []
        while c not in ("", "\n"):
            out.append(c)
            c = rd.get()
        return "".join(out)

    def read_label(self) -> str:
        # sed 4.9: a label ends at a blank, ';' or '}' (`b end ; p`, `/x/{p;b}`)
        rd = self.rd
        c = self.skip_ws()
        out = []
        while c not in ("", "\n", ";", " ", "\t", "}"):
            out.append(c)
            c = rd.get()
        rd.unget(c)
        return "".join(out)

    def end_of_cmd(self) -> None:
        c = self.skip_ws()
        if c in ("", "\n", ";"):
            return
        if c == "}" or c == "#":
            self.rd.unget(c)
            return
        raise self.err("extra characters after command")

    def read_text(self, cmd: str) -> str:
        """a/i/c text: GNU one-liner ``a text`` or ``a\\`` + lines; backslashes escape."""
        rd = self.rd
        c = self.skip_ws()
        if c == "":
            raise self.err("expected \\ after `a', `c' or `i'")
        if c == "\\":
            c = rd.get()
            if c == "\n":
                c = rd.get()
            elif c == "":
                return ""
            else:
                # "a\text": GNU keeps what follows (leading whitespace included)
                pass
        elif self.posix:
            raise self.err("expected \\ after `a', `c' or `i'")
        out: list[str] = []
        while c not in ("", "\n"):
            if c == "\\":
                d = rd.get()
                if d == "":
                    break
                if d == "c":
                    # GNU's \cX (control-X), \dNNN, \oNNN and \xHH work in the text too
                    x = rd.get()
                    if x in ("", "\n"):
                        out.append(d)
                        c = x
                        continue
                    out.append(chr(ord(x.upper()) ^ 0x40))
                elif d in "dox":
                    base, digits, maxlen = {"d": (10, "0123456789", 3), "o": (8, "01234567", 3),
                                            "x": (16, "0123456789abcdefABCDEF", 2)}[d]
                    num = ""
                    x = rd.get()
                    while x != "" and x in digits and len(num) < maxlen:
                        num += x
                        x = rd.get()
                    out.append(chr(int(num, base) & 0xFF) if num else d)
                    c = x
                    continue
                else:
                    out.append(_SIMPLE_ESC.get(d, d))
            else:
                out.append(c)
            c = rd.get()
        text = "".join(out)
        return text + "\n"

    def repl(self, s: str) -> tuple[list, int]:
        """Parse an s/// replacement: parts and the highest group referenced."""
        parts: list = []
        lit: list[str] = []
        maxg = 0
        i = 0
        n = len(s)

        def flush() -> None:
            if lit:
                parts.append(("lit", "".join(lit)))
                lit.clear()

        while i < n:
            c = s[i]
            i += 1
            if c == "&":
                flush()
                parts.append(("grp", 0))
            elif c == "\\" and i < n:
                d = s[i]
                i += 1
                if d.isdigit() and d.isascii():
                    flush()
                    parts.append(("grp", int(d)))
                    maxg = max(maxg, int(d))
                elif d in "LUluE":
                    flush()
                    parts.append(("case", d))
                elif d == "&":
                    lit.append("&")
                elif d == "\n":
                    lit.append("\n")
                elif d in _SIMPLE_ESC:
                    lit.append(_SIMPLE_ESC[d])
                elif d == "c" and i < n:
                    lit.append(chr(ord(s[i].upper()) ^ 0x40))
                    i += 1
                elif d in "dox":
                    base, digits, maxlen = {"d": (10, "0123456789", 3), "o": (8, "01234567", 3),
                                            "x": (16, "0123456789abcdefABCDEF", 2)}[d]
                    j = i
                    while j < n and j - i < maxlen and s[j] in digits:
                        j += 1
                    if j > i:
                        lit.append(chr(int(s[i:j], base) & 0xFF))
                        i = j
                    else:
                        lit.append(d)
                else:
                    lit.append(d)
            else:
                lit.append(c)
        flush()
        return parts, maxg

    def compile(self) -> list[Cmd]:
        rd = self.rd
        cmds = self.cmds
        blocks: list[int] = []
        while True:
            c = rd.get()
            while c in (" ", "\t", "\n", ";"):
                c = rd.get()
            if c == "":
                break
            if c == "#":
                while c not in ("", "\n"):
                    c = rd.get()
                continue
            cmd = Cmd("")
            a1 = self.address(c)
            if a1 is not None:
                cmd.a1 = a1
                c = self.skip_ws()
                if c == ",":
                    c = self.skip_ws()
                    if c == "+" or c == "~":
                        d = rd.get()
                        if not (d.isdigit() and d.isascii()):
                            raise self.err("expected newer version of sed" if False else "unexpected `,'")
                        num = self.number(d)
                        cmd.a2 = Addr("plus" if c == "+" else "mult", n=num)
                    else:
                        a2 = self.address(c)
                        if a2 is None:
                            raise self.err("unexpected `,'")
                        if a2.kind == "step":
                            a2 = Addr("line", n=a2.n)
                        cmd.a2 = a2
                    c = self.skip_ws()
                else:
                    pass
                if cmd.a1.kind == "line" and cmd.a1.n == 0:
                    if cmd.a2 is None or cmd.a2.kind != "re" or self.posix:
                        raise self.err("invalid usage of line address 0")
                    cmd.a1 = Addr("zero")
            if c == "!":
                cmd.neg = True
                c = self.skip_ws()
                while c == " ":
                    c = self.skip_ws()
                if c == "!":
                    raise self.err("multiple `!'s")
            if c == "" or c == "\n" or c == ";":
                if cmd.a1 is not None or cmd.neg:
                    raise self.err("missing command")
                continue
            cmd.name = c
            has_addr = cmd.a1 is not None
            if c == "{":
                blocks.append(len(cmds))
                cmds.append(cmd)
                continue
            if c == "}":
                if has_addr or cmd.neg:
                    raise self.err("} doesn't want any addresses" if False else "unexpected `}'")
                if not blocks:
                    raise self.err("unexpected `}'")
                op = blocks.pop()
                cmds[op].target = len(cmds) + 1
                cmds.append(cmd)
                self.end_of_cmd()
                continue
            if c in "=dDgGhHlnNpPxzF":
                if c == "l":
                    ch = self.skip_ws()
                    if ch.isdigit() and ch.isascii():
                        cmd.num = self.number(ch)
                    else:
                        rd.unget(ch)
                self.end_of_cmd()
            elif c in "aic":
                if c in "ai" and cmd.a2 is not None and self.posix:
                    raise self.err("command only uses one address")
                cmd.text = self.read_text(c)
            elif c == ":":
                if has_addr:
                    raise self.err(": doesn't want any addresses")
                lab = self.read_label()
                if not lab:
                    raise self.err('":" lacks a label')
                cmd.label = lab  # (what follows it is the next command: `:a b`)
            elif c in "btT":
                cmd.label = self.read_label()  # (what follows it is the next command)
            elif c in "qQ":
                if cmd.a2 is not None:
                    raise self.err("command only uses one address")
                ch = self.skip_ws()
                if ch.isdigit() and ch.isascii():
                    cmd.num = self.number(ch)
                else:
                    rd.unget(ch)
                self.end_of_cmd()
            elif c in "rRwW":
                fn = self.read_filename()
                if not fn:
                    raise self.err("missing filename in r/R/w/W commands")
                if self.sandbox:
                    raise self.err("e/r/w commands disabled in sandbox mode")
                cmd.fname = fn
                if c in "wW":
                    self.wfiles.append(fn)
            elif c == "e":
                cmd.text = self.read_filename()
            elif c == "v":
                if _verscmp(self.read_label(), "4.9") > 0:  # this machine's sed is 4.9
                    raise self.err("expected newer version of sed")
                self.end_of_cmd()
            elif c == "y":
                self.compile_y(cmd)
            elif c == "s":
                self.compile_s(cmd)
            elif c == "#":
                raise self.err("comments don't accept any addresses")
            else:
                raise self.err(f"unknown command: `{c}'")
            cmds.append(cmd)
        if blocks:
            raise SedError(f"{self.rd.where().split(', char')[0]}, char 0: unmatched `{{'"
                           if self.rd.starts[-1][1] == "e" else f"{self.rd.where()}: unmatched `{{'")
        # resolve labels
        labels: dict[str, int] = {}
        for i, cm in enumerate(cmds):
            if cm.name == ":":
                labels.setdefault(cm.label, i)
        for cm in cmds:
            if cm.name in "btT":
                if cm.label == "":
                    cm.target = len(cmds)
                elif cm.label in labels:
                    cm.target = labels[cm.label]
                else:
                    raise SedError(f"can't find label for jump to `{cm.label}'", 4)
        return cmds

    def compile_y(self, cmd: Cmd) -> None:
        rd = self.rd
        delim = rd.get()
        if delim in ("", "\n", "\\"):
            raise self.err("unterminated `y' command")

        def part() -> list[str]:
            out: list[str] = []
            while True:
                c = rd.get()
                if c == "":
                    raise self.err("unterminated `y' command")
                if c == delim:
                    return out
                if c == "\\":
                    if rd.at_join():
                        raise self.err("unterminated `y' command")
                    d = rd.get()
                    if d == delim:
                        out.append(d)
                    elif d == "\\":
                        out.append("\\")
                    elif d == "n":
                        out.append("\n")
                    elif d in _SIMPLE_ESC:
                        out.append(_SIMPLE_ESC[d])
                    elif d == "\n":
                        out.append("\n")
                    elif d == "":
                        raise self.err("unterminated `y' command")
                    else:
                        out.append(d)  # (sed 4.9: `y/\A/x/` maps A)
                    continue
                if c == "\n":
                    raise self.err("unterminated `y' command")
                out.append(c)

        src = part()
        dst = part()
        if len(src) != len(dst):
            raise self.err("strings for `y' command are different lengths")
        cmd.ymap = {ord(a): b for a, b in zip(src, dst)}
        self.end_of_cmd()

    def compile_s(self, cmd: Cmd) -> None:
        rd = self.rd
        delim = rd.get()
        if delim in ("", "\n", "\\"):
            raise self.err("unterminated `s' command")
        pat = self.slash(delim, True)
        if pat is None:
            raise self.err("unterminated `s' command")
        rep = self.slash(delim, False)
        if rep is None:
            raise self.err("unterminated `s' command")
        flags = ""
        while True:
            c = rd.get()
            if c in ("i", "I"):
                flags += "I"
            elif c in ("m", "M"):
                flags += "M"
            elif c == "g":
                if cmd.gflag:
                    raise self.err("multiple `g' options to `s' command")
                cmd.gflag = True
            elif c == "p":
                if cmd.pflag:
                    raise self.err("multiple `p' options to `s' command")
                cmd.pflag = 1
            elif c == "e":
                cmd.eflag = True
            elif c.isdigit() and c.isascii():
                if cmd.num is not None:
                    raise self.err("multiple number options to `s' command")
                n = self.number(c)
                if n == 0:
                    raise self.err("number option to `s' command may not be zero")
                cmd.num = n
            elif c == "w":
                fn = self.read_filename()
                if not fn:
                    raise self.err("missing filename in r/R/w/W commands")
                cmd.wfile = fn
                self.wfiles.append(fn)
                break
            elif c in ("", "\n", ";"):
                rd.unget(c) if c != ";" else rd.unget(c)
                break
            elif c in ("}", "#"):
                rd.unget(c)
                break
            elif c in (" ", "\t"):
                # GNU sed skips blanks among the flags (`s/a/b/I g`) and before the end
                continue
            else:
                raise self.err("unknown option to `s'")
        cmd.occurrence = cmd.num or 1
        cmd.num = None
        cmd.rx = self.compile_rx(pat, flags)
        cmd.bpat = pat if cmd.rx is not None else None
        cmd.bext = self.extended
        cmd.repl, maxg = self.repl(rep)
        if cmd.rx is not None and maxg > cmd.rx.groups:
            raise self.err(f"invalid reference \\{maxg} on `s' command's RHS")
        cmd.text = flags
        self.end_of_cmd()


# -- execution ----------------------------------------------------------------------------

class _Output:
    """An output stream remembering whether the last line lacked its newline."""

    def __init__(self, fh: BinaryIO, unbuffered: bool = False) -> None:
        self.fh = fh
        self.missing = False
        self.buf: list[bytes] = []
        self.size = 0
        self.unbuffered = unbuffered

    def write(self, data: bytes, newline: bytes | None) -> None:
        if self.missing:
            self.buf.append(b"\n" if newline is None else newline)
            self.missing = False
        self.buf.append(data)
        self.size += len(data)
        if newline is None:
            self.missing = True
        else:
            self.buf.append(newline)
        if self.size > 65536 or self.unbuffered:
            self.flush()

    def raw(self, data: bytes) -> None:
        if self.missing and data:
            self.buf.append(b"\n")
            self.missing = False
        self.buf.append(data)
        self.size += len(data)
        if self.size > 65536:
            self.flush()

    def flush(self) -> None:
        if self.buf:
            self.fh.write(b"".join(self.buf))
            self.buf.clear()
            self.size = 0


class _Input:
    """The input files as one stream of lines (or one per file with -s/-i), one-line lookahead."""

    def __init__(self, sed: "_Sed", files: list[str]) -> None:
        self.sed = sed
        self.files = files
        self.idx = -1
        self.it = None  # current line iterator
        self.ahead: tuple[bytes, bool] | None = None
        self.name = "-"
        self.line_no = 0

    def _open_next(self) -> bool:
        """Advance to the next readable file; False when none is left."""
        sed = self.sed
        while True:
            if self.it is not None:
                sed.file_done(self)
            self.it = None
            self.idx += 1
            if self.idx >= len(self.files):
                return False
            f = self.files[self.idx]
            it = sed.open_file(f)
            if it is None:
                continue
            self.it = it
            self.name = f
            if sed.separate:
                self.line_no = 0
                for c in sed.cmds:  # line numbers restart, so numeric ranges may start again
                    if c.a1 is not None and c.a1.kind == "line":
                        c.done = False
            return True

    def _raw_next(self, cross: bool) -> tuple[bytes, bool] | None:
        while True:
            if self.it is not None:
                line = next(self.it, None)
                if line is not None:
                    sep = self.sed.sep
                    if line.endswith(sep):
                        return line[:-1], True
                    return line, False
                if not cross:
                    return None
            if not cross and self.it is None and self.idx >= 0:
                return None
            if not self._open_next():
                return None

    def next(self) -> tuple[bytes, bool] | None:
        if self.ahead is not None:
            r, self.ahead = self.ahead, None
        else:
            r = self._raw_next(cross=True)
        if r is not None:
            self.line_no += 1
        return r

    def is_last(self) -> bool:
        if self.ahead is not None:
            return False
        if self.sed.separate:
            if self.it is None:
                return True
            line = next(self.it, None)
            if line is None:
                return True
            sep = self.sed.sep
            self.ahead = (line[:-1], True) if line.endswith(sep) else (line, False)
            return False
        r = self._raw_next(cross=True)
        if r is None:
            return True
        self.ahead = r
        return False

    def at_file_end(self) -> bool:
        """No more lines in the current file (for -s/-i file switching)."""
        return self.is_last() if self.sed.separate else False


class _Sed:
    def __init__(self, ctx: CommandContext, cmds: list[Cmd], *, quiet: bool, separate: bool,
                 in_place: bool, suffix: str, null: bool, line_len: int, utf8: bool,
                 unbuffered: bool, posix: bool, wfiles: list[str], extended_rx: bool = False) -> None:
        self.ctx = ctx
        self.cmds = cmds
        self.quiet = quiet
        self.separate = separate or in_place
        self.in_place = in_place
        self.suffix = suffix
        self.sep = b"\0" if null else b"\n"
        self.sep_s = "\0" if null else "\n"
        self.line_len = line_len
        self.utf8 = utf8
        self.posix = posix
        self.extended_rx = any(c.bext for c in cmds if c.name == "s") or extended_rx
        self.status = 0
        self.stdout = _Output(ctx.stdout, unbuffered)
        self.out = self.stdout
        self.last_rx: PosixRegex | None = None
        self.append: list[tuple[str, object]] = []
        self.rfiles: dict[str, object] = {}
        self.wout: dict[str, _Output] = {}
        self.inplace_target: str | None = None
        self.inplace_buf: io.BytesIO | None = None
        self.hold = ""
        self.hchomped = True
        self.tm = ctx.budget.remaining
        for fn in wfiles:
            self.wfile(fn)

    # -- files --------------------------------------------------------------------------
    def wfile(self, fn: str) -> _Output:
        o = self.wout.get(fn)
        if o is not None:
            return o
        if fn == "/dev/stdout":
            o = self.stdout
        elif fn == "/dev/stderr":
            o = _Output(self.ctx.stderr, True)
        else:
            try:
                fh = self.ctx.fs.open(self.ctx.path(fn), "wb")
            except OSError as e:
                raise SedError(f"couldn't open file {fn}: {e.strerror}", 4) from None
            o = _Output(fh)
        self.wout[fn] = o
        return o

    def open_file(self, f: str, raw: bool = False):  # noqa: ANN201
        ctx = self.ctx
        if f == "-" and not self.in_place:
            return ctx.stdin if raw else iter_lines(ctx.stdin, sep=self.sep)
        p = ctx.path(f)
        try:
            if f == "":
                raise FileNotFoundError(2, "No such file or directory", f)
            st = ctx.fs.stat(p)
            if st.is_dir:
                if self.in_place:
                    ctx.error(f"couldn't edit {f}: not a regular file")
                    self.status = 4
                    return None
                raise SedError(f"read error on {f}: Is a directory", 4)
            if self.in_place and not st.is_file:
                ctx.error(f"couldn't edit {f}: not a regular file")
                self.status = 4
                return None
            fh = ctx.fs.open(p, "rb")
        except OSError as e:
            ctx.error(f"can't read {f}: {e.strerror}")
            self.status = 2
            return None
        if self.in_place:
            if getattr(self, "follow_symlinks", False):
                p = self._resolve_links(p)  # edit the link's target, keep the link
            self.inplace_target = p
            self.inplace_mode = st.st_mode & 0o7777
            self.inplace_buf = io.BytesIO()
            self.out = _Output(self.inplace_buf)
        return fh if raw else self._lines(fh)

    def _resolve_links(self, p: str) -> str:
        import posixpath
        fs = self.ctx.fs
        for _ in range(40):
            try:
                if not fs.stat(p, follow_symlinks=False).is_symlink:
                    return p
                t = fs.readlink(p)
            except OSError:
                return p
            p = posixpath.normpath(t if t.startswith("/") else posixpath.join(posixpath.dirname(p), t))
        return p

    def _lines(self, fh):  # noqa: ANN001, ANN202
        with fh:
            yield from iter_lines(fh, sep=self.sep)

    def file_done(self, inp: _Input) -> None:
        if self.in_place and self.inplace_target is not None:
            self.dump_append()
            self.out.flush()
            data = self.inplace_buf.getvalue() if self.inplace_buf is not None else b""
            target = self.inplace_target
            fs = self.ctx.fs
            if self.suffix:
                base = target.rsplit("/", 1)
                if "*" in self.suffix:
                    bname = self.suffix.replace("*", base[1])
                    bak = bname if bname.startswith("/") else base[0] + "/" + bname
                else:
                    bak = target + self.suffix
                try:
                    fs.rename(target, bak)
                except OSError as e:
                    self.ctx.error(f"cannot rename {target}: {e.strerror}")
            # atomic replace: write a sibling temp file, then rename over the target
            d, _, b = target.rpartition("/")
            tmp = f"{d}/sed{b[:20]}.tmp~"
            try:
                with fs.open(tmp, "wb") as fh:
                    fh.write(data)
                try:
                    fs.chmod(tmp, self.inplace_mode)
                except OSError:
                    pass
                fs.rename(tmp, target)
            except OSError as e:
                self.ctx.error(f"couldn't open temporary file {tmp}: {e.strerror}")
                self.status = 4
            self.inplace_target = None
            self.out = self.stdout

    # -- output -------------------------------------------------------------------------
    def emit_ps(self, ps: str, chomped: bool, out: _Output | None = None) -> None:
        (out or self.out).write(from_text(ps, self.utf8), self.sep if chomped else None)

    def dump_append(self) -> None:
        if not self.append:
            return
        out = self.out
        for kind, val in self.append:
            if kind == "R":
                out.write(val, self.sep)  # type: ignore[arg-type]
                continue
            # GNU completes a last line lacking its newline before a/r output, even an empty
            # text (`$a\`) or an empty/missing r file
            if out.missing:
                out.buf.append(b"\n")
                out.missing = False
            if kind == "text":
                out.raw(from_text(val, self.utf8))  # type: ignore[arg-type]
            else:
                data = self.read_rfile(val)  # type: ignore[arg-type]
                if data:
                    out.raw(data)
        self.append.clear()

    def read_rfile(self, fn: str) -> bytes:
        ctx = self.ctx
        if fn == "/dev/stdin":
            return ctx.stdin.read()
        try:
            with ctx.fs.open(ctx.path(fn), "rb") as fh:
                return fh.read()
        except IsADirectoryError:
            raise SedError(f"read error on {fn}: Is a directory", 4) from None
        except OSError:
            return b""

    def read_R(self, fn: str) -> bytes | None:
        it = self.rfiles.get(fn)
        if it is None:
            ctx = self.ctx
            try:
                if fn == "/dev/stdin":
                    it = iter_lines(ctx.stdin)
                else:
                    it = iter_lines(ctx.fs.open(ctx.path(fn), "rb"))
            except IsADirectoryError:
                raise SedError(f"read error on {fn}: Is a directory", 4) from None
            except OSError:
                it = iter(())
            self.rfiles[fn] = it
        line = next(it, None)  # type: ignore[call-overload]
        if line is None:
            return None
        return line[:-1] if line.endswith(b"\n") else line

    # -- addresses ----------------------------------------------------------------------
    def regex_for(self, rx: PosixRegex | None) -> PosixRegex:
        if rx is None:
            if self.last_rx is None:
                raise SedError("no previous regular expression")
            return self.last_rx
        self.last_rx = rx
        return rx

    def match1(self, a: Addr, ps: str, inp: _Input) -> bool:
        k = a.kind
        if k == "line":
            return inp.line_no == a.n
        if k == "re":
            rx = self.regex_for(a.rx)
            with timeout_guard():
                return rx.fast.search(ps, timeout=self.tm()) is not None
        if k == "last":
            return inp.is_last()
        if k == "step":
            if a.step <= 0:
                return inp.line_no == a.n
            return inp.line_no >= a.n and (inp.line_no - a.n) % a.step == 0
        return False

    def selected(self, c: Cmd, ps: str, inp: _Input) -> bool:
        a1 = c.a1
        if a1 is None:
            return True
        a2 = c.a2
        if a2 is None:
            return self.match1(a1, ps, inp)
        ln = inp.line_no
        if c.active:
            k = a2.kind
            if k in ("line", "plus", "mult"):
                if ln >= c.end_line:
                    c.active = False
                    return ln <= c.end_line if not self.posix else True
                return True
            if self.match1(a2, ps, inp):
                c.active = False
            return True
        if a1.kind == "line" and a2.kind in ("line", "plus", "mult", "re", "last"):
            # GNU: a numeric first address starts the range even when its line was skipped
            # (consumed by n/N); it can start only once
            if c.done or ln < a1.n:
                return False
            if ln > a1.n and a2.kind == "line" and a2.n < ln:
                return False  # (skipped, and its end is behind: `2d;2,1p` prints nothing)
            c.done = True
            return self._start_range(c, a2, ln, ps, inp)
        if a1.kind == "zero":
            if c.done:
                return False
            c.done = True
            # 0,/re/: the range is open before line 1, so /re/ may end it on line 1
            if self.match1(a2, ps, inp):
                return True
            c.active = True
            return True
        if not self.match1(a1, ps, inp):
            return False
        return self._start_range(c, a2, ln, ps, inp)

    def _start_range(self, c: Cmd, a2: Addr, ln: int, ps: str, inp: _Input) -> bool:
        k = a2.kind
        if k == "line":
            if a2.n > ln:
                c.active = True
                c.end_line = a2.n
        elif k == "plus":
            if a2.n > 0:
                c.active = True
                c.end_line = ln + a2.n
        elif k == "mult":
            if a2.n > 0:
                c.active = True
                c.end_line = (ln // a2.n + 1) * a2.n
        else:
            c.active = True  # a regex or $ second address is checked from the next line
            if k == "last" and inp.is_last():
                c.active = False
        return True

    # -- s ------------------------------------------------------------------------------
    def subst(self, c: Cmd, ps: str) -> tuple[str, bool]:
        rx = self.regex_for(c.rx)
        with timeout_guard():
            return self.sub_core(c, rx.rx.finditer(ps, timeout=self.tm()), ps, False)

    def sub_core(self, c: Cmd, matches, text: str, per_line: bool) -> tuple[str, bool]:  # noqa: ANN001
        """GNU do_subst over ``matches`` (leftmost-longest, in order). ``per_line``: the text
        holds many lines (block mode) and counting/first-only restart on each line."""
        out: list[str] = []
        prev_end = 0
        last_end = -1
        n = len(text)
        line_end = n if not per_line else -1
        count = 0
        line_done = False
        did = False
        occ = c.occurrence
        g = c.gflag
        parts = c.repl
        simple = parts[0][1] if len(parts) == 1 and parts[0][0] == "lit" else ("" if not parts else None)
        expand = self.expand
        utf8 = self.utf8
        for m in matches:
            st, e = m.span()
            if st > line_end:
                if st >= n and st == e and (n == 0 or text[n - 1] == "\n"):
                    break  # the empty line after the final newline does not exist
                line_end = text.find("\n", st)
                if line_end < 0:
                    line_end = n
                count = 0
                line_done = False
            if line_done:
                continue
            skip_first = st == e and st == last_end  # GNU: no empty match right after a match
            if not skip_first:
                last_end = e
                count += 1
            rep = None
            if not skip_first and count >= occ:
                rep = simple if simple is not None else expand(parts, m)
                out.append(text[prev_end:st])
                out.append(rep)
                prev_end = e
                did = True
                if not g:
                    line_done = True
                    if not per_line:
                        break
            if st == e and utf8 and st < n and text[st] >= "\x80" and not line_done \
                    and not ("\udc80" <= text[st] <= "\udcff") and _mb_split(m.re):
                # GNU steps over an empty match one *byte* at a time, so the inner bytes of a
                # multibyte character are match positions too (s/x*/-/g splits an "é")
                bs = text[st].encode("utf-8")
                seg = [chr(0xDC00 + bs[0])]
                hit = False
                for k in range(1, len(bs)):
                    count += 1
                    if count >= occ and not line_done:
                        seg.append(rep if rep is not None else (simple if simple is not None else expand(parts, m)))
                        hit = True
                        if not g:
                            line_done = True
                    seg.append(chr(0xDC00 + bs[k]))
                if hit:
                    out.append(text[prev_end:st])
                    out.append("".join(seg))
                    prev_end = st + 1
                    did = True
                    if line_done and not per_line:
                        break
        if not did:
            return text, False
        out.append(text[prev_end:])
        return "".join(out), True

    @staticmethod
    def expand(parts: list, m) -> str:  # noqa: ANN001
        if len(parts) == 1 and parts[0][0] == "lit":
            return parts[0][1]
        out: list[str] = []
        mode = ""  # 'U' / 'L' / ''
        one = ""  # 'u' / 'l' / ''
        for kind, v in parts:
            if kind == "case":
                if v in "UL":
                    mode, one = v, ""
                elif v == "E":
                    mode, one = "", ""
                else:
                    one = v
                continue
            s = v if kind == "lit" else (m.group(v) or "")
            if not s:
                continue
            if mode == "U":
                s = _towupper(s)
            elif mode == "L":
                s = _towlower(s)
            if one:
                s = (_towupper(s[0]) if one == "u" else _towlower(s[0])) + s[1:]
                one = ""
            out.append(s)
        return "".join(out)

    # -- l --------------------------------------------------------------------------------
    def cmd_l(self, ps: str, width: int) -> None:
        data = from_text(ps, self.utf8)
        esc = {7: "\\a", 8: "\\b", 12: "\\f", 10: "\\n", 13: "\\r", 9: "\\t", 11: "\\v", 92: "\\\\"}
        out: list[str] = []
        col = 0
        for b in data:
            if b in esc:
                o = esc[b]
            elif 32 <= b < 127:
                o = chr(b)
            else:
                o = "\\%03o" % b
            if width > 1 and col + len(o) > width - 1:
                out.append("\\\n")
                col = 0
            out.append(o)
            col += len(o)
        out.append("$")
        self.out.write("".join(out).encode("latin-1"), b"\n")

    # -- the cycle ------------------------------------------------------------------------
    # -- block mode: scripts made only of unaddressed s commands ------------------------
    def block_plan(self) -> list | None:
        """The script as steps over blocks of lines (same result as line by line), or None.

        Eligible: unaddressed ``s`` commands (no p/w/e/M flags, no newline in the pattern or
        the replacement), ``/re/d`` and ``/re/!d``, and under -n a single ``/re/p``/``/re/!p``."""
        if self.sep != b"\n" or not self.cmds:
            return None
        plan = []
        cmds = self.cmds
        if self.quiet and not (len(cmds) == 1 and cmds[0].name == "p"):
            return None
        for c in cmds:
            if c.name in ("d", "p"):
                if c.name == "p" and not self.quiet:
                    return None  # (without -n, p prints the line a second time)
                a = c.a1
                if a is None or c.a2 is not None or a.kind != "re" or a.rx is None or a.bpat is None:
                    return None
                if "\n" in a.bpat or "M" in a.bflags:
                    return None
                try:
                    brx = compile_posix(a.bpat, extended=self.extended_rx, icase="I" in a.bflags,
                                        buffer=True, utf8=self.utf8, sed=True)
                except RegexError:
                    return None
                finder = regex.compile("(?m:^)[^\n]*?(?:%s)[^\n]*" % brx.source, brx.fast.flags)
                # d drops matching lines (keep the rest); p under -n keeps them
                keep_matching = (c.name == "p") != c.neg
                plan.append(("filter", finder, keep_matching))
                continue
            if c.name != "s" or c.a1 is not None or c.neg or c.pflag or c.wfile or c.eflag:
                return None
            if c.rx is None or "M" in c.text or c.bpat is None or "\n" in c.bpat:
                return None
            if any(k == "lit" and "\n" in v for k, v in c.repl):
                return None
            try:
                brx = compile_posix(c.bpat, extended=c.bext, icase="I" in c.text, buffer=True,
                                    utf8=self.utf8, sed=True)
            except RegexError:
                return None
            plan.append(("s", c, brx.rx))
        return plan

    def filter_block(self, finder, keep_matching: bool, text: str) -> str:  # noqa: ANN001
        n = len(text)
        out: list[str] = []
        prev = 0
        with timeout_guard():
            for m in finder.finditer(text, timeout=self.tm()):
                st = m.start()
                if st >= n:
                    break
                e = m.end()
                e = e + 1 if e < n else n
                if keep_matching:
                    out.append(text[st:e])
                else:
                    out.append(text[prev:st])
                prev = e
        if not keep_matching:
            out.append(text[prev:])
        return "".join(out)

    def subst_block(self, c: Cmd, rx, text: str) -> str:  # noqa: ANN001
        lit = c.bpat
        if (c.gflag and c.occurrence == 1 and lit and "I" not in c.text
                and not any(ch in _RX_SPECIAL for ch in lit)
                and all(k == "lit" for k, _ in c.repl)):
            # a literal pattern replaced everywhere: str.replace is the same thing
            return text.replace(lit, "".join(v for _, v in c.repl))
        if (not c.gflag and c.occurrence == 1 and lit and "I" not in c.text
                and not any(ch in _RX_SPECIAL for ch in lit)
                and all(k == "lit" for k, _ in c.repl)):
            # a literal pattern replaced once per line: str.replace(lit, rep, 1) on each line,
            # mapped in C (no Python step per line or per occurrence)
            rep = "".join(v for _, v in c.repl)
            nl = text.endswith("\n")
            lines = (text[:-1] if nl else text).split("\n")
            out = "\n".join(map(str.replace, lines, repeat(lit), repeat(rep), repeat(1)))
            return out + "\n" if nl else out
        with timeout_guard():
            return self.sub_core(c, rx.finditer(text, timeout=self.tm()), text, True)[0]

    def run_blocks(self, files: list[str], plan: list) -> int:
        utf8 = self.utf8
        budget = self.ctx.budget
        try:
            for f in files:
                fh = self.open_file(f, raw=True)
                if fh is None:
                    continue
                carry = b""
                read = getattr(fh, "read1", None) or fh.read
                while True:
                    data = read(1 << 16)
                    if data:
                        data = carry + data if carry else data
                        k = data.rfind(b"\n")
                        if k < 0:
                            carry = data
                            continue
                        block, carry = data[:k + 1], data[k + 1:]
                    else:
                        block, carry = carry, b""
                        if not block:
                            break
                    budget.check()
                    text = to_text(block, utf8)
                    for step in plan:
                        if step[0] == "s":
                            text = self.subst_block(step[1], step[2], text)
                        else:
                            text = self.filter_block(step[1], step[2], text)
                    b = from_text(text, utf8)
                    if not b:
                        pass
                    elif b.endswith(b"\n"):
                        self.out.raw(b)
                    else:
                        self.out.write(b, None)
                    if not data:
                        break
                if fh is not self.ctx.stdin:
                    fh.close()
                if self.in_place:
                    self.file_done(None)  # type: ignore[arg-type]
        except SedError as e:
            self._fatal(e)
            raise
        self.finish()
        return self.status

    def _fatal(self, e: "SedError") -> None:
        # GNU's panic() writes its message, then exit() flushes what stdout still buffers
        self.ctx.error(str(e))
        e.printed = True  # type: ignore[attr-defined]
        self.finish()

    def run(self, files: list[str]) -> int:
        plan = self.block_plan() if BLOCK_MODE else None
        if plan is not None:
            return self.run_blocks(files, plan)
        inp = _Input(self, files)
        cmds = self.cmds
        ncmds = len(cmds)
        quiet = self.quiet
        utf8 = self.utf8
        budget = self.ctx.budget
        dl = self.sep.decode()  # -z: N, G, H join and D, P, W split at NUL (GNU's buffer_delimiter)
        try:
            r = inp.next()
            cycles = 0
            while r is not None:
                cycles += 1
                if cycles & 1023 == 0:
                    budget.check()
                raw, chomped = r
                ps = to_text(raw, utf8)
                tflag = False
                pc = 0
                end_autoprint = True
                restart = False  # D with a newline: next cycle without reading
                while pc < ncmds:
                    c = cmds[pc]
                    pc += 1
                    sel = self.selected(c, ps, inp)
                    if c.neg:
                        sel = not sel
                    if not sel:
                        if c.name == "{":
                            pc = c.target
                        continue
                    name = c.name
                    if name == "{" or name == "}" or name == ":":
                        continue
                    if name == "s":
                        ps2, did = self.subst(c, ps)
                        if did:
                            tflag = True
                            ps = ps2
                            if c.eflag:
                                ps = self.run_cmd(ps).rstrip("\n") if True else ps
                            if c.pflag:
                                self.emit_ps(ps, chomped)
                            if c.wfile:
                                self.emit_ps(ps, chomped, self.wfile(c.wfile))
                    elif name == "p":
                        self.emit_ps(ps, chomped)
                    elif name == "d":
                        end_autoprint = False
                        break
                    elif name == "D":
                        k = ps.find(dl)
                        if k < 0:
                            end_autoprint = False
                            break
                        ps = ps[k + 1:]
                        # GNU restarts even with nothing left: "G;D" loops until the deadline
                        restart = True
                        end_autoprint = False
                        break
                    elif name == "n":
                        if inp.is_last() or (self.separate and inp.at_file_end()):
                            if self.posix:
                                end_autoprint = False
                            break
                        if not quiet:
                            self.emit_ps(ps, chomped)
                        self.dump_append()
                        r = inp.next()
                        if r is None:
                            end_autoprint = False
                            break
                        raw, chomped = r
                        ps = to_text(raw, utf8)
                        tflag = False  # GNU's read_pattern_space resets the t flag
                    elif name == "N":
                        if inp.is_last() or (self.separate and inp.at_file_end()):
                            if self.posix:
                                end_autoprint = False
                            break
                        self.dump_append()
                        r = inp.next()
                        if r is None:
                            break
                        raw, chomped = r
                        ps = ps + dl + to_text(raw, utf8)
                        tflag = False
                    elif name == "y":
                        ps = ps.translate(c.ymap)
                    # GNU keeps "ended with a newline" with each buffer: it travels with g/h/x
                    # and G/H take the source's flag (the hold space starts with one)
                    elif name == "g":
                        ps = self.hold
                        chomped = self.hchomped
                    elif name == "G":
                        ps = ps + dl + self.hold
                        chomped = self.hchomped
                    elif name == "h":
                        self.hold = ps
                        self.hchomped = chomped
                    elif name == "H":
                        self.hold = self.hold + dl + ps
                        self.hchomped = chomped
                    elif name == "x":
                        ps, self.hold = self.hold, ps
                        chomped, self.hchomped = self.hchomped, chomped
                    elif name == "b":
                        pc = c.target
                    elif name == "t":
                        if tflag:
                            tflag = False
                            pc = c.target
                    elif name == "T":
                        if not tflag:
                            pc = c.target
                        else:
                            tflag = False
                    elif name == "a":
                        self.append.append(("text", c.text))
                    elif name == "i":
                        self.out.raw(from_text(c.text, utf8))
                    elif name == "c":
                        # in a range, the text is printed at its end only
                        if c.a2 is None or not c.active or c.neg:
                            self.out.raw(from_text(c.text, utf8))
                        end_autoprint = False
                        break
                    elif name == "=":
                        self.out.write(b"%d" % inp.line_no, b"\n")
                    elif name == "l":
                        self.cmd_l(ps, self.line_len if c.num is None else c.num)
                    elif name == "q":
                        if not quiet:
                            self.emit_ps(ps, chomped)
                        self.dump_append()
                        # GNU's q completes a last line that lacked its newline (Q does not)
                        if self.out.missing:
                            self.out.raw(b"")
                            self.out.buf.append(b"\n")
                            self.out.missing = False
                        raise _Quit(c.num or 0)
                    elif name == "Q":
                        self.append.clear()  # Q drops text queued by a/r/R too
                        raise _Quit(c.num or 0)
                    elif name == "z":
                        ps = ""
                    elif name == "F":
                        self.out.write((inp.name if inp.name else "-").encode("utf-8", "surrogateescape"), b"\n")
                    elif name == "r":
                        self.append.append(("file", c.fname))
                    elif name == "R":
                        line = self.read_R(c.fname)
                        if line is not None:
                            self.append.append(("R", line))
                    elif name == "w":
                        # (a last line without its newline is written without it, as GNU's)
                        self.emit_ps(ps, chomped, self.wfile(c.fname))
                    elif name == "W":
                        k = ps.find(dl)
                        self.emit_ps(ps if k < 0 else ps[:k], chomped or k >= 0, self.wfile(c.fname))
                    elif name == "P":
                        k = ps.find(dl)
                        if k < 0:
                            self.emit_ps(ps, chomped)
                        else:
                            self.out.write(from_text(ps[:k], utf8), self.sep)
                    elif name == "e":
                        if c.text:
                            self.out.flush()
                            res = self.run_cmd(c.text)
                            self.out.raw(from_text(res, utf8))
                        else:
                            ps = self.run_cmd(ps).rstrip("\n")
                if end_autoprint and not quiet:
                    self.emit_ps(ps, chomped)
                self.dump_append()
                if restart:
                    # D: restart the cycle with what is left, without reading input
                    r = (from_text(ps, utf8), chomped)
                    continue
                r = inp.next()
            # flush the last in-place file
            if inp.it is not None or self.in_place:
                inp._open_next() if False else None
                self.file_done(inp)
        except SedError as e:
            self._fatal(e)
            raise
        except _Quit as q:
            self.dump_append()
            if self.in_place:
                # GNU truncates: the unread rest of the file is dropped
                self.file_done(inp)
            self.finish()
            return q.status
        self.finish()
        return self.status

    def run_cmd(self, cmdline: str) -> str:
        ex = self.ctx.exec
        if ex is None:
            return ""
        buf = io.BytesIO()
        ex(["sh", "-c", cmdline], stdout=buf)
        return to_text(buf.getvalue(), self.utf8)

    def finish(self) -> None:
        self.out.flush()
        self.stdout.flush()
        for fn, o in self.wout.items():
            o.flush()
            if fn not in ("/dev/stdout", "/dev/stderr"):
                try:
                    o.fh.close()
                except OSError:
                    pass


@command("sed", usage=USAGE, help=HELP)
def sed(ctx: CommandContext, argv: list[str]) -> int:
    ctx = as_invoked(ctx, "sed")
    err = io.BytesIO()
    try:
        opts, operands = parse_opts(
            ctx_with(ctx, stderr=err), argv, "ne:f:i::l:ErsuzV",
            {"quiet": "n", "silent": "n", "expression": "e", "file": "f", "in-place": "i",
             "line-length": "l", "regexp-extended": "E", "separate": "s", "unbuffered": "u",
             "null-data": "z", "zero-terminated": "z", "posix": None, "debug": None,
             "sandbox": None, "follow-symlinks": None, "binary": "b", "version": "V",
             "help": None}, status=1)
    except OptError as e:
        msg = err.getvalue()
        # GNU sed prints its whole usage (not a Try line) on a bad option
        k = msg.find(b"Try '")
        msg = msg[:k] if k >= 0 else msg
        ctx.stderr.write(msg + _usage_text(ctx))
        return 1
    quiet = separate = in_place = extended = unbuffered = null = posix = sandbox = False
    suffix = ""
    follow = False
    line_len = 70
    pieces: list[tuple[str, str, str]] = []
    for k, v in opts:
        if k == "n":
            quiet = True
        elif k == "e":
            pieces.append(("e", "", v or ""))
        elif k == "f":
            fn = v or ""
            try:
                if fn == "-":
                    data = ctx.stdin.read()
                else:
                    with ctx.fs.open(ctx.path(fn), "rb") as fh:
                        data = fh.read()
            except OSError as e:
                ctx.error(f"couldn't open file {fn}: {e.strerror}")
                return 4
            text = to_text(data, utf8_locale(ctx.env))
            if text.endswith("\n"):
                text = text[:-1]
            pieces.append(("f", fn, text))
        elif k == "i":
            in_place = True
            suffix = v or ""
        elif k == "l":
            try:
                line_len = int(v or "")
            except ValueError:
                ctx.error(f"invalid line length: {v}" if False else f"invalid -l argument: {v}")
                return 1
        elif k in ("E", "r"):
            extended = True
        elif k == "s":
            separate = True
        elif k == "u":
            unbuffered = True
        elif k == "z":
            null = True
        elif k == "posix":
            posix = True
        elif k == "sandbox":
            sandbox = True
        elif k == "follow-symlinks":
            follow = True
        elif k == "V":
            ctx.stdout.write(VERSION)
            return 0
        elif k == "help":
            ctx.stdout.write(_usage_text(ctx) + b"E-mail bug reports to: <bug-sed@gnu.org>.\n")
            return 0
    if not pieces:
        if not operands:
            ctx.stderr.write(_usage_text(ctx))
            return 1
        pieces.append(("e", "", operands.pop(0)))
    # a script that starts with "#n" means -n (sed 4.9 here: whatever follows on that
    # line, `#nx` and `-e '#nr'` too; the rest of the line is a comment)
    if pieces[0][2].startswith("#n"):
        quiet = True
    utf8 = utf8_locale(ctx.env)
    rd = _Reader(pieces)  # type: ignore[arg-type]
    comp = _Compiler(ctx, rd, extended, utf8, posix, sandbox)
    try:
        cmds = comp.compile()
    except SedError as e:
        ctx.error(str(e))
        return e.status
    if not operands:
        if in_place:
            ctx.error("no input files")
            return 4
        operands = ["-"]
    try:
        s = _Sed(ctx, cmds, quiet=quiet, separate=separate, in_place=in_place, suffix=suffix,
                 null=null, line_len=line_len, utf8=utf8, unbuffered=unbuffered, posix=posix,
                 wfiles=comp.wfiles, extended_rx=extended)
        s.follow_symlinks = follow
        return s.run(operands)
    except SedError as e:
        if not getattr(e, "printed", False):
            ctx.error(str(e))
        return e.status if e.status != 1 else 4


_ = (Callable,)

