"""The awk run-time: records and fields, I/O redirections, getline, builtins, and the main loop."""

from __future__ import annotations

import io
import math
import re
import time as _time
from itertools import islice as _islice
from typing import BinaryIO

from ...errors import LimitExceeded
from .._regex import timeout_guard
from ..base import CommandContext
from .codegen import compile_program
from .arrays import AwkArray, int_subscript
from .runtime import UNINIT, AwkError, StrNum, _numcache, compile_awk, fmt_num, sprintf, strnum_value, to_num

__all__ = ["Program", "run_program"]



class _Next(Exception):
    pass


class _NextFile(Exception):
    pass


class _Fatal(Exception):
    """mawk's fatal input errors: message already printed, exit 2 without END."""


class _Exit(Exception):
    def __init__(self, code: float | None) -> None:
        super().__init__()
        self.code = code


_WEIRD_WS = re.compile(r"[\r\x0b\x0c\x1c-\x1f\x85\xa0]")
_UNCLEAN = "\r\x0b\x0c\x1c\x1d\x1e\x1f\x85\xa0"
_AWK_WS = re.compile(r"[^ \t\n]+")
_PARA_SEP = re.compile(r"\n\n+")
_ASSIGN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=", re.S)


def enc(s: str) -> bytes:
    return s.encode("latin-1", "replace")


def dec(b: bytes) -> str:
    return b.decode("latin-1")


class _PStr(str):
    """A plain string assigned to a field (raw ``str`` items in a field list are unread input)."""

    __slots__ = ()


class Reader:
    """Records from a byte stream by RS: one char, "" (paragraphs), or a regex (as gawk)."""

    def __init__(self, stream: BinaryIO, rt: "Runtime") -> None:
        self.s = stream
        self.rt = rt
        self.buf = ""
        self.pos = 0
        self.eof = False
        self._read = getattr(stream, "read1", None) or stream.read
        # single-char RS fast path: records pre-split from the buffer, consumed by index
        self.lines: list[str] = []
        self.li = 0
        self.lines_rs = ""
        # the pre-split records hold no blank but space, tab and newline that str.split()
        # would split at
        self.clean = False

    def _unsplit(self) -> None:
        if self.li < len(self.lines):
            rest = self.lines_rs.join(self.lines[self.li:]) + self.lines_rs
            self.buf = rest + self.buf[self.pos:]
            self.pos = 0
        self.lines = []
        self.li = 0

    def fill(self) -> bool:
        if self.eof:
            return False
        try:
            data = self._read(65536)
        except ValueError:
            data = b""
        if not data:
            self.eof = True
            return False
        if self.pos:
            self.buf = self.buf[self.pos:] + dec(data)
            self.pos = 0
        else:
            self.buf += dec(data)
        lim = self.rt.max_record
        if lim is not None and len(self.buf) > lim:
            raise LimitExceeded("max_variable_bytes", f"awk: record longer than {lim} bytes")
        return True

    def read(self) -> str | None:
        rs = self.rt.RS
        rs = rs if isinstance(rs, str) else self.rt.tostr(rs)
        if self.lines_rs != rs and self.lines:
            self._unsplit()
        if len(rs) == 1:
            li = self.li
            if li < len(self.lines):
                self.li = li + 1
                return self.lines[li]
            if self.lines:
                self.lines = []
                self.li = 0
            if self.pos < len(self.buf) or self.fill():
                chunk = self.buf[self.pos:]
                parts = chunk.split(rs)
                if len(parts) > 2:
                    self.clean = not any(c in chunk for c in _UNCLEAN)
                    self.buf = parts.pop()
                    self.pos = 0
                    self.lines = parts
                    self.lines_rs = rs
                    self.li = 1
                    self.rt.RT = rs
                    return parts[0]
            while True:
                i = self.buf.find(rs, self.pos)
                if i >= 0:
                    r = self.buf[self.pos:i]
                    self.pos = i + 1
                    self.rt.RT = rs
                    return r
                if not self.fill():
                    if self.pos < len(self.buf):
                        r = self.buf[self.pos:]
                        self.pos = len(self.buf)
                        self.rt.RT = ""
                        return r
                    return None
        if rs == "":
            # paragraph mode: skip leading newlines, records end at blank lines
            while True:
                while self.pos < len(self.buf) and self.buf[self.pos] == "\n":
                    self.pos += 1
                if self.pos < len(self.buf) or not self.fill():
                    break
            while True:
                m = _PARA_SEP.search(self.buf, self.pos)
                if m is not None and (m.end() < len(self.buf) or self.eof):
                    r = self.buf[self.pos:m.start()]
                    self.pos = m.end()
                    self.rt.RT = m.group(0)
                    return r
                if not self.fill():
                    if self.pos < len(self.buf):
                        r = self.buf[self.pos:].rstrip("\n")
                        self.pos = len(self.buf)
                        self.rt.RT = "\n" if r else ""
                        return r
                    return None
        rx = compile_awk(rs, self.rt.mawk).rx
        while True:
            m = rx.search(self.buf, self.pos, timeout=self.rt.tmo())
            while m is not None and m.end() == m.start():
                m = rx.search(self.buf, m.end() + 1, timeout=self.rt.tmo()) if m.end() < len(self.buf) else None
            if m is not None and (m.end() < len(self.buf) or self.eof):
                r = self.buf[self.pos:m.start()]
                self.pos = m.end()
                self.rt.RT = m.group(0)
                return r
            if not self.fill():
                if m is not None:
                    continue
                if self.pos < len(self.buf):
                    r = self.buf[self.pos:]
                    self.pos = len(self.buf)
                    self.rt.RT = ""
                    return r
                return None


class _Out:
    """Buffered text output to a byte stream (stdout, a file, or a pipe's buffer)."""

    def __init__(self, stream: BinaryIO, kind: str = "file", cmd: str = "") -> None:
        self.stream = stream
        self.parts: list[str] = []
        self.size = 0
        self.kind = kind
        self.cmd = cmd

    def write(self, s: str) -> None:
        self.parts.append(s)
        self.size += len(s)
        if self.size > 32768 or self.kind == "stderr":  # stderr is unbuffered
            self.flush()

    def flush(self) -> None:
        if self.kind == "null":
            self.parts.clear()
            self.size = 0
            return
        if self.parts:
            data = enc("".join(self.parts))
            self.parts.clear()  # in place: the record loop appends through a bound append
            self.size = 0
            self.stream.write(data)
        f = getattr(self.stream, "flush", None)
        if f is not None and self.kind != "pipe":
            try:
                f()
            except (ValueError, OSError):
                pass


class Runtime:
    def __init__(self, ctx: CommandContext, mawk: bool = True) -> None:
        self.ctx = ctx
        self.mawk = mawk
        self.NR = 0.0
        self.FNR = 0.0
        self.FS = " "
        self.OFS = " "
        self.ORS = "\n"
        self.RS = "\n"
        self.SUBSEP = "\x1c"
        self.CONVFMT = "%.6g"
        self.OFMT = "%.6g"
        self.RSTART = 0.0
        self.RLENGTH = -1.0
        self.FILENAME = ""
        self.RT = ""
        self.rec: str = UNINIT
        self.flds: list | None = []
        self.nf = 0
        self.stdout = _Out(ctx.stdout, "stdout")
        self.outs: dict[str, _Out] = {}
        self.ins: dict[str, Reader] = {}
        self.cmd_status: dict[str, int] = {}
        self.main_reader: Reader | None = None
        self.stdin_reader: Reader | None = None
        self.argi = 1
        self.ns: dict[str, object] = {}
        self.rng = _GlibcRandom(int(_time.time()) ^ id(self))
        self.seed = 0.0
        self.budget = ctx.budget
        self.max_record = ctx.budget.limits.max_variable_bytes
        self.exit_code = 0
        self.no_more_files = False
        self.nerr = 0
        # integral numbers print as integers within mawk's int range; gawk: any exact integer
        self.int_lim = 2147483647.0 if mawk else 1e300
        self.rec_fs: object = " "
        self._skey_fs: object = None
        self._skey_para: object = None
        self._sfn = None

    # -- conversions -----------------------------------------------------------------------
    def tostr(self, v: object) -> str:
        if isinstance(v, str):
            return v
        if -self.int_lim <= v <= self.int_lim:  # type: ignore[operator]
            i = int(v)  # type: ignore[call-overload]
            if i == v:
                return str(i)
        return fmt_num(v, self.CONVFMT)  # type: ignore[arg-type]

    def tmo(self) -> float | None:
        r = self.budget.remaining()
        if r is not None and r <= 0.0:
            self.budget.check()  # raises at the deadline rather than passing timeout=0
        return r

    # -- special variables ---------------------------------------------------------------
    def setv(self, name: str, v: object) -> object:
        if name in ("NR", "FNR", "RSTART", "RLENGTH"):
            setattr(self, name, to_num(v))
        else:
            setattr(self, name, v if isinstance(v, str) else self.tostr(v))
        return v

    # -- records and fields --------------------------------------------------------------
    def set_record(self, s: str) -> None:
        self.rec = StrNum(s)
        self.flds = None
        self.rec_fs = self.FS

    def split_fields(self, s: str, fs: object, para: bool = True) -> list[str]:
        if s == "":
            return []
        if fs == " ":
            if _WEIRD_WS.search(s) is None:
                return s.split()
            return _AWK_WS.findall(s)
        fs = fs if isinstance(fs, str) else self.tostr(fs)
        if para and self.RS == "" and fs != " " and fs != "\n" and not self.mawk:
            # paragraph mode: newline always separates fields too (POSIX, gawk; not mawk)
            parts: list[str] = []
            for line in s.split("\n"):
                parts.extend(self.split_fields(line, fs, False) if line != "" else [""])
            return parts
        if len(fs) == 1 and fs != "\\":
            if fs == "\t" or fs not in " ":
                return s.split(fs)
        if fs == "":
            return list(s)
        if fs == "\t":
            return s.split("\t")
        rx = compile_awk(fs, self.mawk).rx
        out = []
        pos = 0
        for m in rx.finditer(s, timeout=self.tmo()):
            if m.end() == m.start():
                continue
            out.append(s[pos:m.start()])
            pos = m.end()
        out.append(s[pos:])
        return out

    def _split(self) -> list:
        # POSIX: a record splits with the FS in force when it was read, not a later one
        fs = self.rec_fs
        if fs is not self._skey_fs or (self.RS == "") is not self._skey_para:
            self._make_splitter(fs)
        # raw str items become StrNum lazily, on first access (most fields are never read)
        f = self._sfn(self.rec)  # type: ignore[misc]
        self.flds = f
        self.nf = len(f)
        return f

    def splitter(self, fs: object, clean: bool):  # noqa: ANN201
        """The field splitter for records read under ``fs`` (``clean``: see Reader.clean)."""
        if fs == " " and clean:
            return str.split
        if fs is not self._skey_fs or (self.RS == "") is not self._skey_para:
            self._make_splitter(fs)
        return self._sfn

    def _make_splitter(self, fs: object) -> None:
        para = self.RS == ""
        self._skey_fs = fs
        self._skey_para = para
        if fs == " ":
            search = _WEIRD_WS.search
            findall = _AWK_WS.findall

            def sfn(s: str) -> list[str]:
                return s.split() if search(s) is None else findall(s)
        elif isinstance(fs, str) and len(fs) == 1 and fs != "\\" and not para:
            def sfn(s: str) -> list[str]:
                return s.split(fs) if s else []
        else:
            def sfn(s: str) -> list[str]:
                return self.split_fields(s, fs)
        self._sfn = sfn

    def field(self, i: int) -> object:
        if i > 0:
            f = self.flds
            if f is None:
                f = self._split()
            if i <= len(f):
                v = f[i - 1]
                if type(v) is str:
                    v = f[i - 1] = StrNum(v)
                return v
            # mawk: a field past NF is an empty string, not an uninitialized value ($3 == 0 is false)
            return _NO_FIELD if self.mawk else UNINIT
        if i == 0:
            return self.rec
        raise AwkError(f"negative field index ${i}")

    def fnum(self, i: int) -> float:
        """``to_num(self.field(i))`` for a constant ``i`` > 0, without the StrNum."""
        f = self.flds
        if f is None:
            f = self._split()
        if i <= len(f):
            v = f[i - 1]
            r = _numcache.get(v)
            return r if r is not None else to_num(v)
        return 0.0

    def getnf(self) -> float:
        if self.flds is None:
            self._split()
        return float(self.nf)

    def _rebuild(self) -> None:
        ofs = self.OFS if isinstance(self.OFS, str) else self.tostr(self.OFS)
        self.rec = StrNum(ofs.join([self.tostr(x) for x in self.flds]))  # type: ignore[union-attr]

    def setfield(self, i: int, v: object) -> object:
        if i == 0:
            self.rec = StrNum(self.tostr(v))
            self.flds = None
            self.rec_fs = self.FS
            return v
        if i < 0:
            raise AwkError(f"negative field index ${i}")
        f = self.flds
        if f is None:
            f = self._split()
        if i > len(f):
            # (mawk: the fields this adds are empty strings, as fields past NF are)
            f.extend([_NO_FIELD if self.mawk else UNINIT] * (i - len(f)))
        # an assigned plain string must stay a string (never a strnum): mark it
        f[i - 1] = _PStr(v) if type(v) is str else v
        self.nf = len(f)
        self._rebuild()
        return v

    def setnf(self, v: object) -> object:
        n = int(to_num(v))
        f = self.flds
        if f is None:
            f = self._split()
        if n < len(f):
            del f[n:]
        else:
            f.extend([_NO_FIELD if self.mawk else UNINIT] * (n - len(f)))
        self.nf = n
        self._rebuild()
        return v

    def fop(self, i: int, op: str, r: float) -> float:
        cur = to_num(self.field(i))
        v = _ARITH[op](cur, r)
        self.setfield(i, v)
        return v

    def fpost(self, i: int, d: float) -> float:
        cur = to_num(self.field(i))
        self.setfield(i, cur + d)
        return cur

    # -- input -----------------------------------------------------------------------------
    def _stdin(self) -> Reader:
        if self.stdin_reader is None:
            self.stdin_reader = Reader(self.ctx.stdin, self)
        return self.stdin_reader

    def next_main(self) -> str | None:
        """The next main-input record, advancing through ARGV's files and assignments."""
        while True:
            if self.main_reader is None:
                if self.no_more_files:
                    return None
                r = self._open_next()
                if r is None:
                    self.no_more_files = True
                    return None
                self.main_reader = r
            rec = self.main_reader.read()
            if rec is not None:
                self.NR += 1.0
                self.FNR += 1.0
                return rec
            self.end_file()

    def end_file(self) -> None:
        if self.main_reader is not None:
            self.main_reader = None
            if self.ns.get("_has_endfile"):
                self.ns["_endfile"]()  # type: ignore[operator]

    def _open_next(self) -> Reader | None:
        ns = self.ns
        argv = ns["g_ARGV"]
        while True:
            argc = int(to_num(ns.get("g_ARGC", 0.0)))
            if self.argi >= argc:
                if getattr(self, "_used_file", False):
                    return None
                self._used_file = True
                self.FILENAME = StrNum("-")  # mawk and gawk both name the implicit stdin "-"
                self.FNR = 0.0
                return self._begin_file(self._stdin(), "")
            a = argv.get(str(self.argi))  # type: ignore[union-attr]
            self.argi += 1
            if a is None or a == "":
                continue
            a = a if isinstance(a, str) else self.tostr(a)
            if _ASSIGN.match(a):
                name, _, val = a.partition("=")
                self.assign_var(name, val)
                continue
            self._used_file = True
            self.FILENAME = StrNum(a)
            self.FNR = 0.0
            if a in ("-", "/dev/stdin"):
                return self._begin_file(self._stdin(), a)
            try:
                path = self.ctx.path(a.encode("latin-1").decode("utf-8", "surrogateescape"))
                st = self.ctx.fs.stat(path)
                if st.is_dir:
                    # the message goes out before what stdout still buffers (flushed at exit)
                    self.ctx.stderr.write(enc(f"{self.ctx.name}: read error (Is a directory)\n"))
                    raise _Fatal()
                f = self.ctx.fs.open(path, "rb")
            except OSError as e:
                self.ctx.stderr.write(enc(f"{self.ctx.name}: cannot open {a} (No such file or directory)\n"
                                          if e.errno == 2 else
                                          f"{self.ctx.name}: cannot open {a} ({e.strerror})\n"))
                raise _Fatal() from None
            return self._begin_file(Reader(f, self), a)

    def _begin_file(self, r: Reader, name: str) -> Reader:
        if self.ns.get("_has_beginfile"):
            self.main_reader = r
            self.ns["_beginfile"]()  # type: ignore[operator]
        return r

    def assign_var(self, name: str, val: str) -> None:
        from .parser import unescape
        v = StrNum(unescape(val))
        if name in _SPECIAL_NAMES:
            self.setv(name, v) if name != "NF" else self.setnf(v)
        else:
            if isinstance(self.ns.get("g_" + name), dict):
                raise AwkError(f"can't assign to {name}; it's an array name.")
            self.ns["g_" + name] = v

    def getline_main(self, want_var: bool) -> object:
        try:
            rec = self.next_main()
        except _Exit:
            raise
        if rec is None:
            return (0.0, None) if want_var else 0.0
        if want_var:
            return (1.0, StrNum(rec))
        self.set_record(rec)
        return 1.0

    def _in_reader(self, name: str) -> Reader | None:
        r = self.ins.get(name)
        if r is not None:
            return r
        if name in ("-", "/dev/stdin"):
            r = self._stdin()
        elif name == "/dev/null":
            r = Reader(io.BytesIO(b""), self)
        elif name == "":
            return None  # open("") fails (ENOENT): getline returns -1
        else:
            try:
                f = self.ctx.fs.open(self.ctx.path(name.encode("latin-1").decode("utf-8", "surrogateescape")),
                                     "rb")
            except IsADirectoryError:
                # mawk opens a directory, then its first read fails: fatal
                self.ctx.stderr.write(enc(f"{self.ctx.name}: read error (Is a directory)\n"))
                raise _Fatal() from None
            except OSError:
                return None
            r = Reader(f, self)
        self.ins[name] = r
        return r

    def getline_file(self, name: str, want_var: bool) -> object:
        r = self._in_reader(name)
        if r is None:
            return (-1.0, None) if want_var else -1.0
        rec = r.read()
        if rec is None:
            return (0.0, None) if want_var else 0.0
        if want_var:
            return (1.0, StrNum(rec))
        self.set_record(rec)
        self.NR += 0.0
        return 1.0

    def getline_cmd(self, cmd: str, want_var: bool) -> object:
        r = self.ins.get("\0cmd" + cmd)
        if r is None:
            self.flush_all()
            buf = io.BytesIO()
            st = self._exec(cmd, stdout=buf)
            self.cmd_status[cmd] = st
            buf.seek(0)
            r = Reader(buf, self)
            self.ins["\0cmd" + cmd] = r
        rec = r.read()
        if rec is None:
            return (0.0, None) if want_var else 0.0
        # mawk leaves NR alone for `cmd | getline` (POSIX would count it)
        if want_var:
            return (1.0, StrNum(rec))
        self.set_record(rec)
        return 1.0

    # -- output ----------------------------------------------------------------------------
    def output(self, kind: str, name: str) -> _Out:
        key = name
        o = self.outs.get(key)
        if o is not None:
            return o
        if kind == "|":
            self.flush_all()  # mawk flushes all output before it forks the command
            o = _Out(io.BytesIO(), "pipe", name)
        elif name in ("/dev/stdout", "-"):
            o = self.stdout
        elif name == "/dev/stderr":
            o = _Out(self.ctx.stderr, "stderr")
        elif name == "/dev/null":
            o = _Out(io.BytesIO(), "null")
        else:
            try:
                if name == "":
                    raise FileNotFoundError(2, "No such file or directory")
                f = self.ctx.fs.open(self.ctx.path(name.encode("latin-1").decode("utf-8", "surrogateescape")),
                                     "ab" if kind == ">>" else "wb")
            except OSError as e:
                err = AwkError(f"cannot open \"{name}\" for output ({e.strerror})")
                err.plain = True  # type: ignore[attr-defined]  # mawk: no "run time error" here
                raise err from None
            o = _Out(f, "file")
        self.outs[key] = o
        return o

    def _exec(self, cmd: str, stdin: BinaryIO | None = None, stdout: BinaryIO | None = None) -> int:
        ex = self.ctx.exec
        if ex is None:
            self.ctx.stderr.write(b"sh: 1: command execution is not available\n")
            return 127
        c = cmd.encode("latin-1").decode("utf-8", "surrogateescape")
        return ex(["sh", "-c", c], stdin=stdin if stdin is not None else io.BytesIO(b""),
                  stdout=stdout if stdout is not None else self.ctx.stdout, stderr=self.ctx.stderr)

    def _close_out(self, o: _Out) -> int:
        o.flush()
        if o.kind == "pipe":
            data = o.stream.getvalue()  # type: ignore[attr-defined]
            return self._exec(o.cmd, stdin=io.BytesIO(data))
        if o.kind == "file":
            try:
                o.stream.close()
            except OSError:
                return -1
        return 0

    def close(self, name: str) -> float:
        res = -1.0
        o = self.outs.pop(name, None)
        if o is not None:
            st = self._close_out(o)
            res = float(st)
        r = self.ins.pop(name, None)
        if r is not None:
            res = 0.0
            if r is not self.stdin_reader:
                try:
                    r.s.close()
                except OSError:
                    pass
        r = self.ins.pop("\0cmd" + name, None)
        if r is not None:
            res = float(self.cmd_status.pop(name, 0))
        return res

    def fflush(self, name: str | None) -> float:
        if name is None or name in ("/dev/stdout",):
            self.stdout.flush()
            return 0.0
        if name == "":
            self.flush_all()
            return 0.0
        o = self.outs.get(name)
        if o is None:
            return -1.0
        if o.kind != "pipe":
            o.flush()
        return 0.0

    def flush_all(self) -> None:
        self.stdout.flush()
        for o in self.outs.values():
            if o.kind != "pipe":
                o.flush()

    def close_all(self) -> None:
        # mawk's exit closes its output pipes (waiting for the commands) before stdio flushes
        # what is still buffered for stdout
        for name in list(self.outs):
            if self.outs[name].kind == "pipe":
                self._close_out(self.outs.pop(name))
        for name in list(self.outs):
            self._close_out(self.outs.pop(name))
        self.stdout.flush()

    def system(self, cmd: str) -> float:
        self.flush_all()
        st = self._exec(cmd, stdin=self.ctx.stdin)
        return float(st)

    # -- builtins needing state ---------------------------------------------------------------
    def split(self, s: str, arr: dict, sep: object) -> float:
        if sep is None:
            parts = self.split_fields(s, self.FS)
        elif isinstance(sep, str):
            if sep == " ":
                parts = self.split_fields(s, " ")
            elif s == "":
                parts = []
            elif len(sep) == 1 and sep != "\\":
                parts = s.split(sep)
            elif sep == "":
                parts = list(s)
            else:
                parts = self._rx_split(s, compile_awk(sep, self.mawk))
        else:
            parts = [] if s == "" else self._rx_split(s, sep)
        arr.load_split([StrNum(p) for p in parts])
        return float(len(parts))

    def _rx_split(self, s: str, pr) -> list[str]:  # noqa: ANN001
        out = []
        pos = 0
        for m in pr.rx.finditer(s, timeout=self.tmo()):
            if m.end() == m.start():
                continue
            out.append(s[pos:m.start()])
            pos = m.end()
        out.append(s[pos:])
        return out

    def match(self, s: str, pr, arr: dict | None) -> float:  # noqa: ANN001
        m = pr.rx.search(s, timeout=self.tmo())
        if arr is not None:
            arr.clear()
        if m is None:
            self.RSTART = 0.0
            self.RLENGTH = -1.0
            return 0.0
        self.RSTART = float(m.start() + 1)
        self.RLENGTH = float(m.end() - m.start())
        if arr is not None:
            for i in range(0, (m.re.groups if hasattr(m, "re") else 0) + 1):
                g = m.group(i)
                if g is not None:
                    _aset(arr, float(i), StrNum(g))
                    _aset(arr, f"{i}{self.SUBSEP}start", float(m.start(i) + 1))
                    _aset(arr, f"{i}{self.SUBSEP}length", float(len(g)))
        return self.RSTART

    def rand(self) -> float:
        # mawk here is built with srandom/random: rand() is random() / RAND_MAX
        return self.rng.next() / 2147483647.0

    def srand(self, seed: float | None) -> float:
        prev = self.seed
        self.seed = float(int(_time.time())) if seed is None else seed
        s = self.seed
        # mawk's d_to_I: truncate, clamp to [-INT_MAX, INT_MAX]; NaN fails both of its
        # comparisons and seeds as -INT_MAX
        n = -2147483647 if s != s else int(max(-2147483647.0, min(2147483647.0, s)))
        self.rng = _GlibcRandom(n)
        return prev

    def strftime(self, fmt: object = None, ts: object = None, utc: object = None) -> str:
        import datetime as dt

        from ..sysutils import _tz_from, format_date
        f = "%a %b %e %H:%M:%S %Z %Y" if fmt is None else self.tostr(fmt)
        t = _time.time() if ts is None else to_num(ts)
        tz = dt.timezone.utc if (utc is not None and _truth(utc)) else _tz_from(self.ctx.env.get("TZ", "UTC"))
        try:
            d = dt.datetime.fromtimestamp(int(t), tz)
        except (OverflowError, OSError, ValueError):
            return ""
        return format_date(f, d)

    def systime(self) -> float:
        return float(int(_time.time()))

    def mktime(self, spec: str) -> float:
        import datetime as dt

        from ..sysutils import _tz_from
        parts = spec.split()
        if len(parts) < 6:
            return -1.0
        try:
            y, mo, d, h, mi, s = (int(float(x)) for x in parts[:6])
            tz = _tz_from(self.ctx.env.get("TZ", "UTC"))
            base = dt.datetime(y, 1, 1, tzinfo=tz)
            t = base + dt.timedelta(days=0)
            # normalise out-of-range fields like mktime(3)
            t = dt.datetime(y + (mo - 1) // 12, (mo - 1) % 12 + 1, 1, tzinfo=tz) + dt.timedelta(
                days=d - 1, hours=h, minutes=mi, seconds=s)
            return float(int(t.timestamp()))
        except (ValueError, OverflowError):
            return -1.0


def _truth(v: object) -> bool:
    if isinstance(v, float):
        return v != 0.0
    if v is UNINIT:
        return False
    if isinstance(v, StrNum):
        n = strnum_value(v)
        if n is not None:
            return n != 0.0
    return v != ""


_SPECIAL_NAMES = {"NR", "FNR", "NF", "FS", "OFS", "ORS", "RS", "SUBSEP", "CONVFMT", "OFMT", "RSTART",
                  "RLENGTH", "FILENAME", "RT"}


def _div(a: float, b: float) -> float:
    # mawk divides in IEEE arithmetic: 1/0 is inf, 0/0 is -nan, and the program goes on
    if b == 0.0:
        if a != a or a == 0.0:
            return -math.nan
        return math.copysign(math.inf, a) * math.copysign(1.0, b)
    return a / b


def _mod(a: float, b: float) -> float:
    if b == 0.0 or a in (math.inf, -math.inf):
        return -math.nan
    return math.fmod(a, b)


def _pow(a: float, b: float) -> float:
    try:
        r = a ** b
    except ZeroDivisionError:
        return math.inf
    except OverflowError:
        return math.inf
    if isinstance(r, complex):
        return -math.nan
    return r


_ARITH = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b, "/": _div, "%": _mod,
          "^": _pow}


def _cv(a: object, b: object) -> tuple:
    if type(a) is float:
        na = a
    elif a is UNINIT:
        na = 0.0
    elif type(a) is StrNum:
        na = strnum_value(a)  # type: ignore[arg-type]
    else:
        na = None
    if na is not None:
        if type(b) is float:
            return na, b
        if b is UNINIT:
            return na, 0.0
        if type(b) is StrNum:
            nb = strnum_value(b)  # type: ignore[arg-type]
            if nb is not None:
                return na, nb
    return None, None


def _first(a: object, *_: object) -> object:
    return a


def _key(v: object) -> str:
    return v if isinstance(v, str) else _NS_TOSTR(v)  # type: ignore[return-value]


_NS_TOSTR = str  # replaced per run (CONVFMT-aware)


def _akey(d: AwkArray, sub: object, create: bool) -> str | None:
    if type(sub) is float:
        i = int_subscript(sub)  # type: ignore[arg-type]
        if i is not None:
            return d.ipath(str(i), i, create)
        return d.spath(_NS_TOSTR(sub), create)
    if not isinstance(sub, str):
        raise AwkError("can't use scalar as array")
    return d.spath(sub, create)


def _aget(d: AwkArray, sub: object) -> object:
    try:
        k = _akey(d, sub, True)
    except AttributeError:
        raise AwkError("can't use scalar as array") from None
    return dict.__getitem__(d, k)


def _aset(d: AwkArray, sub: object, v: object) -> object:
    try:
        k = _akey(d, sub, True)
    except AttributeError:
        raise AwkError("can't use scalar as array") from None
    dict.__setitem__(d, k, v)
    return v


def _aop(d: AwkArray, sub: object, op: str, r: float) -> float:
    k = _akey(d, sub, True)
    v = _ARITH[op](to_num(dict.__getitem__(d, k)), r)
    dict.__setitem__(d, k, v)
    return v


def _apost(d: AwkArray, sub: object, delta: float) -> float:
    k = _akey(d, sub, True)
    cur = to_num(dict.__getitem__(d, k))
    dict.__setitem__(d, k, cur + delta)
    return cur


def _ain(d: AwkArray, sub: object) -> bool:
    try:
        return _akey(d, sub, False) is not None
    except AttributeError:
        raise AwkError("can't use scalar as array") from None


def _adel(d: AwkArray, sub: object) -> None:
    if type(sub) is float:
        i = int_subscript(sub)  # type: ignore[arg-type]
        if i is not None:
            d.delete(str(i), False)
            return
        d.delete(_NS_TOSTR(sub), True)
        return
    d.delete(sub, True)  # type: ignore[arg-type]


def _aiter(d: AwkArray) -> list[str]:
    return d.loop_keys()


def _substr(s: str, m: float, n: float | None = None) -> str:
    # mawk: start and length truncate toward zero; a start below 1 moves to 1 and (mawk's
    # arithmetic) lengthens the result by the distance: substr("hello", -1, 3) == "hell".
    ln = len(s)
    if m != m or (n is not None and n != n):
        return ""
    start = int(m) if abs(m) < 1e18 else (10**18 if m > 0 else -10**18)
    if n is None:
        length = ln + 1
    else:
        length = int(n) if abs(n) < 1e18 else (10**18 if n > 0 else -10**18)
    if start < 1:
        if n is not None:
            length -= start
        start = 1
    if length <= 0 or start > ln:
        return ""
    return s[start - 1:start - 1 + length]


def _sub(pr, repl: str, s: str, glob: bool) -> tuple[int, str]:  # noqa: ANN001
    rx = pr.rx
    out: list[str] = []
    pos = 0
    n = 0
    ln = len(s)
    last_end = -1
    search = rx.search
    tm = _NS_T()
    # pre-split the replacement: '&' = match, '\&' = literal &, '\\' = backslash
    pieces = _repl_pieces(repl)
    while pos <= ln:
        m = search(s, pos, timeout=tm)
        if m is None:
            break
        st, en = m.span()
        if st == en and st == last_end:
            # an empty match right after the previous match is not allowed
            if st < ln:
                out.append(s[st])
            pos = st + 1
            if pos > ln:
                break
            continue
        out.append(s[pos:st])
        mt = m.group(0)
        for p in pieces:
            out.append(mt if p is None else p)
        n += 1
        last_end = en
        if st == en:
            if st < ln:
                out.append(s[st])
            pos = en + 1
        else:
            pos = en
        if not glob:
            break
    if n == 0:
        return 0, s
    if pos < ln:
        out.append(s[pos:])
    return n, "".join(out)


_repl_cache: dict[str, list] = {}


def _repl_pieces(repl: str) -> list:
    r = _repl_cache.get(repl)
    if r is not None:
        return r
    pieces: list = []
    buf: list[str] = []
    i = 0
    while i < len(repl):
        c = repl[i]
        if c == "\\" and i + 1 < len(repl) and repl[i + 1] in "&\\":
            buf.append(repl[i + 1])
            i += 2
            continue
        if c == "&":
            if buf:
                pieces.append("".join(buf))
                buf = []
            pieces.append(None)
            i += 1
            continue
        buf.append(c)
        i += 1
    if buf:
        pieces.append("".join(buf))
    if len(_repl_cache) > 1000:
        _repl_cache.clear()
    _repl_cache[repl] = pieces
    return pieces


def _gensub(pr, repl: str, how: object, s: str) -> str:  # noqa: ANN001
    if isinstance(how, str) and how[:1] in ("g", "G"):
        which = 0
    else:
        which = int(to_num(how))
        if which < 1:
            which = 1
    out: list[str] = []
    pos = 0
    count = 0
    ln = len(s)
    last_end = -1
    while pos <= ln:
        m = pr.rx.search(s, pos, timeout=_NS_T())
        if m is None:
            break
        st, en = m.span()
        if st == en and st == last_end:
            if st < ln:
                out.append(s[st])
            pos = st + 1
            continue
        count += 1
        out.append(s[pos:st])
        if which == 0 or count == which:
            i = 0
            while i < len(repl):
                c = repl[i]
                if c == "\\" and i + 1 < len(repl):
                    d = repl[i + 1]
                    if d.isdigit():
                        out.append(m.group(int(d)) or "" if int(d) <= pr.groups else "")
                    elif d == "&":
                        out.append("&")
                    else:
                        out.append(d if d == "\\" else "\\" + d)
                    i += 2
                    continue
                out.append(m.group(0) if c == "&" else c)
                i += 1
        else:
            out.append(m.group(0))
        last_end = en
        if st == en:
            if st < ln:
                out.append(s[st])
            pos = en + 1
        else:
            pos = en
        if which and count >= which:
            break
    if pos < ln:
        out.append(s[pos:])
    return "".join(out)


def _trunc(v: float) -> float:
    if v != v or v in (math.inf, -math.inf):
        return v
    return float(int(v))


def _m_log(v: float) -> float:
    if v < 0 or v != v:
        return -math.nan if v == v else v
    if v == 0:
        return -math.inf
    return math.log(v)


def _m_sqrt(v: float) -> float:
    if v < 0:
        return -math.nan
    return math.sqrt(v)


def _m_exp(v: float) -> float:
    try:
        return math.exp(v)
    except OverflowError:
        return math.inf


def _m_sin(v: float) -> float:
    try:
        return math.sin(v)
    except ValueError:
        return -math.nan


def _m_cos(v: float) -> float:
    try:
        return math.cos(v)
    except ValueError:
        return -math.nan


def _bits(v: float) -> int:
    return int(v) & 0xFFFFFFFFFFFFFFFF if v == v and abs(v) != math.inf else 0


def _asort(src: dict, dst: dict | None, by_index: bool = False) -> float:
    def sk(v: object) -> tuple:
        if isinstance(v, float):
            return (0, v, "")
        if isinstance(v, StrNum) and strnum_value(v) is not None:
            return (0, strnum_value(v), "")
        return (1, 0.0, str(v))
    vals = list(src.keys()) if by_index else list(src.values())
    vals.sort(key=sk)
    target = src if dst is None else dst
    target.clear()
    for i, v in enumerate(vals, 1):
        _aset(target, float(i), StrNum(v) if by_index else v)
    return float(len(vals))


def _strtonum(v: object) -> float:
    if isinstance(v, float):
        return v
    s = str(v).strip()
    try:
        if s[:2].lower() == "0x":
            return float(int(s[2:] or "0", 16))
        if len(s) > 1 and s[0] == "0" and s.isdigit():
            return float(int(s, 8))
    except ValueError:
        return 0.0
    return to_num(v)


def _typeof(v: object) -> str:
    if v is UNINIT:
        return "untyped"
    if isinstance(v, float):
        return "number"
    if isinstance(v, StrNum):
        return "strnum" if strnum_value(v) is not None else "string"
    return "string"


def _NS_T() -> float | None:  # replaced per run
    return None


class Program:
    """A compiled awk program, ready to run over a context."""

    def __init__(self, src: str, mawk: bool = True) -> None:
        from .parser import parse
        self.ast = parse(src, mawk)
        self.extra: list[tuple[int, str]] = self.ast["extra"]
        self.pysrc, self.consts, self.globals, self.arrays = compile_program(self.ast, mawk)
        self.code = compile(self.pysrc, "<awk>", "exec")
        self.mawk = mawk
        for c in self.consts.values():  # regex literals fail at compile time, like mawk
            if isinstance(c, tuple) and c[:1] == ("rx",):
                compile_awk(c[1], mawk)  # type: ignore[arg-type]


_NO_FIELD = StrNum("")


class _GlibcRandom:
    """glibc's random() (TYPE_3 additive feedback) after srandom(seed), so seeded rand() matches mawk."""

    __slots__ = ("r", "i", "j")

    def __init__(self, seed: int) -> None:
        seed &= 0xFFFFFFFF
        if seed == 0:
            seed = 1
        word = seed - (1 << 32) if seed >= 1 << 31 else seed  # int32_t
        r = [word]
        for _ in range(30):
            hi = int(word / 127773)  # C division truncates toward zero
            lo = word - hi * 127773
            word = 16807 * lo - 2836 * hi
            if word < 0:
                word += 2147483647
            r.append(word)
        self.r = [x & 0xFFFFFFFF for x in r]
        self.i, self.j = 3, 0  # front and rear pointers of glibc's state table (SEP_3 = 3)
        for _ in range(310):
            self.next()

    def next(self) -> int:
        r = self.r
        v = (r[self.i] + r[self.j]) & 0xFFFFFFFF
        r[self.i] = v
        self.i = (self.i + 1) % 31
        self.j = (self.j + 1) % 31
        return v >> 1


def run_program(prog: Program, ctx: CommandContext, argv_operands: list[str],
                assigns: list[tuple[str, str]], fs: str | None) -> int:
    """Run BEGIN, the main loop over ARGV, END. Returns the exit status."""
    global _NS_TOSTR, _NS_T
    R = Runtime(ctx, prog.mawk)
    ns: dict[str, object] = {}
    R.ns = ns

    lim = R.int_lim

    def _str(v: object) -> str:
        if isinstance(v, str):
            return v
        if -lim <= v <= lim:  # type: ignore[operator]
            i = int(v)  # type: ignore[call-overload]
            if i == v:
                return str(i)
        return fmt_num(v, R.CONVFMT if isinstance(R.CONVFMT, str) else "%.6g")  # type: ignore[arg-type]

    def _ostr(v: object) -> str:
        if isinstance(v, str):
            return v
        if -lim <= v <= lim:  # type: ignore[operator]
            i = int(v)  # type: ignore[call-overload]
            if i == v:
                return str(i)
        return fmt_num(v, R.OFMT if isinstance(R.OFMT, str) else "%.6g")  # type: ignore[arg-type]

    def _bool(v: object) -> bool:
        return _truth(v)

    def _num(v: object) -> float:
        return v if type(v) is float else to_num(v)  # type: ignore[return-value]

    def _cmpf(op):  # noqa: ANN001, ANN202
        def f(a: object, b: object) -> bool:
            na, nb = _cv(a, b)
            if na is not None:
                return op(na, nb)
            return op(_str(a), _str(b))
        return f

    import operator as _op
    budget = ctx.budget
    counter = [0]

    def _charge() -> None:
        counter[0] += 1
        if counter[0] & 1023 == 0:
            budget.check()

    maxbytes = budget.limits.max_variable_bytes

    def _cc(s: str) -> str:
        if maxbytes is not None and len(s) > maxbytes:
            raise LimitExceeded("max_variable_bytes", f"awk: string longer than {maxbytes} bytes")
        return s

    def _dynrx(s: str):  # noqa: ANN202
        return compile_awk(s, prog.mawk)

    def _sprintf(fmt: str, args: list, fname: str = "sprintf") -> str:
        return _cc(sprintf(fmt, args, _str, fname, maxbytes, prog.mawk))

    def _printf(write, fmt: str, args: list) -> None:  # noqa: ANN001
        try:
            s = _cc(sprintf(fmt, args, _str, "printf", maxbytes, prog.mawk))
        except AwkError as e:
            if getattr(e, "partial", ""):
                write(e.partial)  # type: ignore[attr-defined]
            raise
        write(s)

    def _toupper(s: str) -> str:
        return s.encode("latin-1", "replace").upper().decode("latin-1")

    def _tolower(s: str) -> str:
        return s.encode("latin-1", "replace").lower().decode("latin-1")

    def _int(v: float) -> int:
        if v != v:
            return 0
        return int(v)

    def _oflush() -> int:
        R.stdout.flush()
        return 0

    environ = AwkArray()
    for k, v in ctx.env.items():
        _aset(environ, k.encode("utf-8", "surrogateescape").decode("latin-1"), StrNum(
            v.encode("utf-8", "surrogateescape").decode("latin-1")))
    argvd = AwkArray()
    _aset(argvd, 0.0, StrNum(ctx.name or "awk"))
    for i, a in enumerate(argv_operands, 1):
        _aset(argvd, float(i), StrNum(a.encode("utf-8", "surrogateescape").decode("latin-1")))
    ns.update({
        "R": R, "UNINIT": UNINIT, "StrNum": StrNum, "_str": _str, "_ostr": _ostr, "_bool": _bool, "_num": _num,
        "_lt": _cmpf(_op.lt), "_le": _cmpf(_op.le), "_eq": _cmpf(_op.eq), "_ne": _cmpf(_op.ne),
        "_gt": _cmpf(_op.gt), "_ge": _cmpf(_op.ge), "_charge": _charge, "_dynrx": _dynrx,
        "_sprintf": _sprintf, "_printf": _printf, "_toupper": _toupper, "_tolower": _tolower, "_int": _int, "_key": _str,
        "_cc": _cc, "_aget": _aget, "_aset": _aset, "_ain": _ain, "_adel": _adel, "_aiter": _aiter,
        "AwkArray": AwkArray, "_aop": _aop, "_apost": _apost, "_first": _first,
        "_div": _div, "_mod": _mod, "_pow": _pow, "_substr": _substr, "_sub": _sub, "_gensub": _gensub,
        "_trunc": _trunc, "_m_sqrt": _m_sqrt, "_m_exp": _m_exp, "_m_log": _m_log, "_m_sin": _m_sin,
        "_m_cos": _m_cos, "_atan2": math.atan2,
        "_bit_and": lambda *a: float(_bits_reduce(_op.and_, a)),
        "_bit_or": lambda *a: float(_bits_reduce(_op.or_, a)),
        "_bit_xor": lambda *a: float(_bits_reduce(_op.xor, a)),
        "_bit_lshift": lambda a, b: float((_bits(a) << _bits(b)) & 0xFFFFFFFFFFFFFFFF),
        "_bit_rshift": lambda a, b: float(_bits(a) >> _bits(b)),
        "_bit_compl": lambda a: float(~_bits(a) & 0x1FFFFFFFFFFFFF),
        "_asort": lambda s, d: _asort(s, d), "_asorti": lambda s, d: _asort(s, d, True),
        "_strtonum": _strtonum, "_typeof": _typeof,
        "_islice": _islice, "_check": budget.check, "_SN": StrNum, "_tn": to_num, "_lfield": _lfield,
        "_NOF": _NO_FIELD if prog.mawk else UNINIT, "_oflush": _oflush,
        "_T": R.tmo, "_w": R.stdout.write, "_Next": _Next, "_NextFile": _NextFile, "_Exit": _Exit,
        "g_ENVIRON": environ, "g_ARGV": argvd, "g_ARGC": float(len(argv_operands) + 1),
    })
    for name, c in prog.consts.items():
        if isinstance(c, tuple) and c[:1] == ("rx",):
            ns[name] = compile_awk(c[1], prog.mawk)  # type: ignore[arg-type]
        else:
            ns[name] = c
    for g in prog.globals:
        key = "g_" + g
        if key not in ns:
            ns[key] = AwkArray() if g in prog.arrays else UNINIT
    _NS_TOSTR = _str
    _NS_T = R.tmo
    # module-level helpers that need per-run state read these through the module globals
    globals()["_NS_T"] = R.tmo
    exec(prog.code, ns)  # noqa: S102 - our own generated code
    ns["_has_beginfile"] = bool(prog.ast["beginfile"])
    ns["_has_endfile"] = bool(prog.ast["endfile"])
    status = 0
    ast = prog.ast
    try:
        with timeout_guard():
            if fs is not None:
                R.FS = fs
            for name, val in assigns:
                R.assign_var(name, val)
            exited = False
            try:
                if ast["begin"]:
                    try:
                        ns["_begin"]()  # type: ignore[operator]
                    except (_Next, _NextFile):
                        pass
                if ast["items"] or ast["end"] or ast["beginfile"] or ast["endfile"]:
                    main = ns["_main"]
                    loop = ns.get("_loop")
                    has_items = bool(ast["items"])
                    n = 0
                    while True:
                        r = R.main_reader
                        if loop is not None and r is not None and r.li < len(r.lines) and r.lines_rs is R.RS:
                            # the rest of the pre-split batch in the generated record loop
                            i = r.li
                            r.li = len(r.lines)
                            loop(r.lines, i, R.splitter(R.FS, r.clean), R.NR, R.FNR)  # type: ignore[operator]
                            continue
                        if not has_items and r is not None and r.li < len(r.lines) and r.lines_rs is R.RS:
                            # no main rules: the batch only counts
                            k = len(r.lines) - r.li
                            R.NR += k
                            R.FNR += k
                            R.rec = StrNum(r.lines[-1])
                            R.flds = None
                            R.rec_fs = R.FS
                            r.li = len(r.lines)
                            budget.check()
                            continue
                        if r is not None and r.li < len(r.lines) and r.lines_rs is R.RS:
                            # fast path: next pre-split line of the current file
                            rec = r.lines[r.li]
                            r.li += 1
                            R.NR += 1.0
                            R.FNR += 1.0
                        else:
                            rec = R.next_main()
                            if rec is None:
                                break
                        R.rec = StrNum(rec)
                        R.flds = None
                        R.rec_fs = R.FS
                        if has_items:
                            try:
                                main()  # type: ignore[operator]
                            except _Next:
                                pass
                            except _NextFile:
                                R.end_file()
                        n += 1
                        if n & 1023 == 0:
                            budget.check()
            except _Exit as e:
                exited = True
                if e.code is not None:
                    status = int(e.code) & 0xFF if e.code == e.code else 0
            try:
                if ast["end"]:
                    ns["_end"]()  # type: ignore[operator]
            except _Exit as e:
                if e.code is not None:
                    status = int(e.code) & 0xFF
            except (_Next, _NextFile):
                pass
            _ = exited
            R.close_all()
    except _Fatal:
        try:
            R.close_all()
        except Exception:  # noqa: BLE001
            pass
        return 2
    except AwkError as e:
        # the message goes out first; what mawk still buffers for stdout and files follows at exit
        if getattr(e, "plain", False):
            ctx.stderr.write(enc(f"{ctx.name or 'awk'}: {e}\n"))
        else:
            ctx.stderr.write(enc(f"{ctx.name or 'awk'}: run time error: {e}\n"
                                 f"\tFILENAME=\"{R.FILENAME}\" FNR={R.tostr(R.FNR)} NR={R.tostr(R.NR)}\n"))
        try:
            R.close_all()
        except Exception:  # noqa: BLE001
            pass
        return 2
    except RecursionError:
        try:
            R.close_all()
        except Exception:  # noqa: BLE001
            pass
        ctx.stderr.write(enc(f"{ctx.name or 'awk'}: function call nesting too deep\n"))
        return 2
    if R.nerr and status == 0:
        status = R.nerr
    return status


def _lfield(f: list, rec: str, i: int, nof: object) -> object:
    """``$i`` for a computed ``i`` in the record loop (f: the record's fields, nof: past NF)."""
    if i > 0:
        return StrNum(f[i - 1]) if i <= len(f) else nof
    if i == 0:
        return StrNum(rec)
    raise AwkError(f"negative field index ${i}")


def _bits_reduce(op, args) -> int:  # noqa: ANN001
    r = _bits(args[0])
    for a in args[1:]:
        r = op(r, _bits(a))
    return r
