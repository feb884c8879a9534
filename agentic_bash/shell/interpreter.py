"""The tree-walking bash interpreter: commands, redirections, pipelines, functions, variables."""

# Error handling model (who raises, who catches):
# * ``ExitShell`` (exit, errexit, fatal expansion errors) unwinds to the nearest shell
#   boundary: a subshell/pipeline stage/command substitution or ``run_toplevel``.
# * ``ReturnFn``/``LoopCtl`` unwind to the function call / loop.
# * ``LimitExceeded`` (budget) unwinds everything to the executor.
# All are ``BaseException`` subclasses (except LimitExceeded, never caught here) so an
# ``except Exception`` around a command cannot swallow them.

from __future__ import annotations

import errno as _errno
import functools
import io
import os
import random
import re
import threading
import time
from sys import getsizeof as _sizeof
from typing import Any, Callable

from .._lazyre import lazy_compile as _lazy_re
from ..errors import LimitExceeded, ParseError
from ..limits import Budget, bounded_match, start_thread
from ..vfs.paths import normalize
from . import nodes as N
from .expand import Expander, ExpansionError, _Fields, _field_text, _lower, _plain_name, _upper, glob_escape
from .state import (
    ARRAY, ASSOC, CAPCASE, EXPORT, INTEGER, LOWER, NAMEREF, READONLY, SPECIAL, TEMPVAR, UPPER, CHARGE_MIN, ELEM_COST, FUNC_COST, FUNC_PER_CHAR, VAR_COST, GlobalName, ShellState,
    TempScope, Var, LETTER_TO_OPTION,
    VarError, array_top, assoc_keys,
)
from .quoting import printable_filename
from .streams import NULL, Capture, HereDoc, NullStream, Pipe
from . import coop as _coop
from . import patterns as _patterns
from .arith import SubscriptError as _SubscriptError
from .arith import ArithError as _ArithError, context as _arith_context, evaluate_in as _arith_eval_in
from .arith import _FNS as _arith_fns, _recursion_msg as _arith_recursion_msg
from .parser import decl_assign as _decl_assign, parse_cached as _parse_cached, sized_cache as _sized_cache

__all__ = ["ExitShell", "Interpreter", "LoopCtl", "ReturnFn"]

_monotonic = time.monotonic

_NAME_RE = _lazy_re(r"[A-Za-z_][A-Za-z_0-9]*\Z")


_UTF8_LOCALES = frozenset(("C.UTF-8", "C.utf8", "C.UTF8", "C.utf-8"))
# the variables bash hands to setlocale() on assignment (LANG's failures are silent)
_LOCALE_VARS = frozenset(("LC_ALL", "LC_CTYPE", "LC_COLLATE", "LC_MESSAGES", "LC_NUMERIC", "LC_TIME"))


def utf8_locale_name(val: str) -> bool:
    """Does glibc take ``val`` for the C.UTF-8 locale (the only UTF-8 one here)?  It ignores a
    ``@modifier`` and compares the codeset lowercased without punctuation."""
    if val in _UTF8_LOCALES:
        return True
    if not val.startswith("C."):
        return False
    codeset = val[2:].partition("@")[0]
    return "".join(c for c in codeset.lower() if c.isalnum()) == "utf8"


def byte_view(s: str) -> str:
    """``s`` as the C locale sees it: one code point per byte (non-ASCII bytes become
    surrogateescape code points, which no pattern class, case mapping or quoting treats
    as a printable letter)."""
    return s.encode("utf-8", "surrogateescape").decode("ascii", "surrogateescape")


def char_view(s: str) -> str:
    """The inverse of :func:`byte_view`: valid UTF-8 sequences become characters again."""
    return s.encode("utf-8", "surrogateescape").decode("utf-8", "surrogateescape")


class ExitShell(BaseException):
    # discard: an arithmetic expansion error; bash -c abandons only the current top-level
    # command line and goes on with the next one (a subshell just exits)
    # eof: a fatal expansion error (set -u, ${x:?}): bash jumps to the top level with
    # FORCE_EOF, which bash -c (and a forked simple command) turns into 127 while a subshell
    # running a compound command or $( ) exits with 1
    # fatal: an error that ends a non-interactive shell only (a syntax error, exec that
    # failed, a posix special builtin's error); an interactive bash reports it and goes on
    eof = False
    subscript = False
    fatal = False

    def __init__(self, status: int, discard: bool = False) -> None:
        self.status = status
        self.discard = discard


# $( … ) bodies renumbered for the line they run at: (id(body), line) -> (body, copy)
_RELOCATED: dict[tuple[int, int], tuple[N.Script, N.Script]] = {}


def _line_of_cmd(cmd: N.Command) -> int:
    return getattr(cmd, "line", 0)


def expansion_exit(e: ExpansionError) -> ExitShell:
    """The ExitShell for a fatal expansion error.  A discarding one from a parameter
    expansion or a glob (bad substitution, failglob) is an AbortLine, which set -e turns into
    an exit; one from $((...)) or a substring's numbers (``subst``) only drops the line."""
    discard = getattr(e, "discard", False)
    if discard and not getattr(e, "subst", False) and not getattr(e, "arith", False):
        return AbortLine(e.status)
    x = ExitShell(e.status, discard)
    x.subscript = getattr(e, "subscript", False)  # (a script file only drops the line)
    if e.status == 127:
        x.eof = True
    return x


class AbortLine(ExitShell):
    """An assignment to a readonly variable (or a bad subscript): like an arithmetic error,
    bash -c discards the rest of the current top-level command line and goes on."""

    def __init__(self, status: int) -> None:
        super().__init__(status, True)


class CircularRef(ExitShell):
    """An assignment through a circular nameref: bash warns and drops the command line (set
    -e does not end the shell), but a builtin assigning a variable (read, printf -v) just
    fails with status 1."""

    def __init__(self, status: int) -> None:
        super().__init__(status, True)


class ReturnFn(BaseException):
    def __init__(self, status: int) -> None:
        self.status = status


class LoopCtl(BaseException):
    def __init__(self, kind: str, n: int, status: int = 0) -> None:
        self.kind = kind
        self.n = n
        self.status = status


class RedirError(Exception):
    """A redirection failed (already reported): the command does not run; ``status`` is $?.
    ``expansion``: the here-string expansion error behind it, which only a simple command
    survives (a compound command's or exec's drops the line like a word's)."""

    status = 1
    expansion: Any = None


class DirInput:
    """``< dir``: opening a directory for reading succeeds (as open(2) does); every read
    fails with EISDIR, which the reading command reports (``cat: -: Is a directory``)."""

    __slots__ = ("path",)
    closed = False

    def __init__(self, path: str = "/") -> None:
        self.path = path  # (a program is given the directory itself: executors/inprocess)

    def _fail(self, *a: Any) -> Any:
        raise IsADirectoryError(_errno.EISDIR, "Is a directory")

    read = read1 = readline = readlines = readinto = _fail

    def __iter__(self) -> Any:
        return self._fail()

    def write(self, data: bytes) -> int:
        raise OSError(_errno.EBADF, "Bad file descriptor")

    def fileno(self) -> int:
        raise io.UnsupportedOperation("fileno")

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass

    def readable(self) -> bool:
        return True

    def writable(self) -> bool:
        return False


DYNAMIC = frozenset({
    "LINENO", "RANDOM", "SECONDS", "BASHPID", "EPOCHSECONDS", "EPOCHREALTIME", "SRANDOM",
    "BASH_SUBSHELL", "FUNCNAME", "BASH_SOURCE", "BASH_LINENO", "BASH_COMMAND", "PIPESTATUS",
    "DIRSTACK", "BASH_ARGC", "BASH_ARGV", "GROUPS", "BASH_EXECUTION_STRING", "SHELLOPTS", "BASHOPTS",
    "PWD", "BASH_ALIASES", "BASH_CMDS", "BASH_ARGV0", "COMP_WORDBREAKS",
})

# first pipeline stages that run before the rest without a fork (Interpreter._producer)
_PRODUCERS = frozenset({"echo", "printf", "true", "false", ":"})
_PRINTF_UNBOUNDED = _lazy_re(r"%[-+ #0']*[0-9*.n]")
_PRODUCE_CAP = 1 << 20  # bytes a producer stage may write before its reader runs
_PROCSUB_LAG = 250  # ms at most a `>(cmd)` waits for the shell's first write (see _await_writer)
# in-process commands that may run as a pipeline's last stage after a producer without a fork
# (Interpreter._direct_stages): they see nothing of the shell but their context
_DIRECT_LAST = frozenset({
    "cat", "grep", "egrep", "fgrep", "wc", "head", "tail", "sort", "uniq", "cut", "tr", "sed",
    "awk", "rev", "tac", "nl", "base64", "md5sum", "sha1sum", "sha256sum", "paste", "fold", "od",
    "jq", "tee", "column", "expand", "unexpand", "fmt",
})
# ... and as a middle stage: output at most a small multiple of the input, no file read
# unless named by a word (_reads_stdin_only)
_DIRECT_MIDDLE = frozenset({
    "cat", "grep", "egrep", "fgrep", "wc", "head", "tail", "sort", "uniq", "cut", "tr", "rev", "tac",
})

SPECIAL_BUILTINS = frozenset({
    "break", ":", ".", "continue", "eval", "exec", "exit", "export", "readonly", "return",
    "set", "shift", "times", "trap", "unset", "source",
})


class _KeepOpen:
    """A stream handed to a command that must not be closed by it (our pipe/capture)."""

    __slots__ = ("_s",)

    def __init__(self, s: Any) -> None:
        self._s = s

    def close(self) -> None:
        pass

    def __getattr__(self, name: str) -> Any:
        try:
            return getattr(self._s, name)
        except AttributeError:
            if (name in _READ_OPS and not hasattr(self._s, "read")) \
                    or (name in _WRITE_OPS and not hasattr(self._s, "write")):
                # the other end of a one-way stream (`cat >(true)` reads the pipe's write
                # end): EBADF, as read(2)/write(2) give on a descriptor opened the other way
                # (a readable stream without read1, as timeout's guard, is read with read)
                return _ebadf
            raise

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *a: object) -> None:
        pass

    def __iter__(self):
        if not hasattr(self._s, "read") and not hasattr(self._s, "__iter__"):
            _ebadf()
        return iter(self._s)


_READ_OPS = frozenset(("read", "read1", "readline", "readlines", "readinto", "readall"))
_WRITE_OPS = frozenset(("write", "writelines"))


def _ebadf(*a: object) -> Any:
    raise OSError(_errno.EBADF, "Bad file descriptor")


_STDIN_OPS = frozenset(("<", "<>", "<&", "<<", "<<-", "<<<"))  # (redirections of stdin, fd 0 by default)
_STD_FDS = {"/dev/stdin": 0, "/dev/stdout": 1, "/dev/stderr": 2}


def _stage_broke(sh: Any, e: BaseException, i: int, results: list[int],
                 errors: list[BaseException | None]) -> None:
    """Pipeline stage ``i`` of shell ``sh`` ended by an exception that is no limit and no
    interrupt: once the run is stopped anything may break (the deadline watchdog's exception
    can land inside threading's own bookkeeping), and that is the stop (124); otherwise
    status 1 and an "internal error" line, as a stage never ends the run silently."""
    if sh.budget.cancelled:
        errors[i] = LimitExceeded(sh.budget._reason, "timed out")
        results[i] = 124
        return
    results[i] = 1
    try:
        sh.error(f"internal error: {type(e).__name__}: {e}")
    except Exception:
        pass


class CmdFS:
    """The filesystem a command sees: the VFS plus /dev/fd/N, /dev/std*, /dev/null of this shell."""

    __slots__ = ("_fs", "_fds", "_umask")

    def __init__(self, fs: Any, fds: dict[int, Any], umask: int | None = None) -> None:
        self._fs = fs
        self._fds = fds
        self._umask = umask  # (a file a command creates gets 0666 & ~umask, as open(2) gives)

    def _special(self, path: str) -> Any:
        if path.startswith("/dev/"):
            rest = path[5:]
            if rest == "null":
                return NullStream()
            if rest == "stdin":
                return self._fd(0)
            if rest == "stdout":
                return self._fd(1)
            if rest == "stderr":
                return self._fd(2)
            if rest.startswith("fd/") and rest[3:].isdigit():
                return self._fd(int(rest[3:]))
            if rest.startswith("fd/") or rest == "fd":
                return None
        elif path.startswith("/proc/self/fd/") and path[14:].isdigit():
            return self._fd(int(path[14:]))
        return None

    def _fd(self, n: int) -> Any:
        s = self._fds.get(n)
        if s is None:
            raise FileNotFoundError(_errno.ENOENT, "No such file or directory", f"/dev/fd/{n}")
        return _KeepOpen(s)

    def open(self, path: str, mode: str = "rb", perm: int | None = None) -> Any:
        if perm is None:
            perm = 0o644 if self._umask is None else 0o666 & ~self._umask
        s = self._special(path)
        if s is not None:
            inner = s._s if type(s) is _KeepOpen else s
            if not hasattr(inner, "read" if "r" in mode and "+" not in mode else "write"):
                # the other end of a one-way stream (`cat >(true)`): EBADF, as bash's read of
                # a descriptor opened the other way gives, not a crash
                raise OSError(_errno.EBADF, "Bad file descriptor", path)
            return s
        return self._fs.open(path, mode, perm)

    def exists(self, path: str) -> bool:
        if path.startswith("/dev/fd/") and path[8:].isdigit():
            return int(path[8:]) in self._fds
        return self._fs.exists(path)

    def _shell_fd(self, path: str) -> int | None:
        """The descriptor /dev/fd/N or /dev/std* names (bash looks these up in its own
        descriptor table, never in the file system), or None for any other path."""
        if not path.startswith("/dev/"):
            return None   # (every stat and access a command makes comes through here)
        if path.startswith("/dev/fd/") and path[8:].isdigit():
            return int(path[8:])
        return _STD_FDS.get(path)

    def stat(self, path: str, follow_symlinks: bool = True) -> Any:
        n = self._shell_fd(path)
        if n is not None:
            if n not in self._fds or self._fds[n] is None:
                # (not the runner's own descriptor of that number)
                raise FileNotFoundError(_errno.ENOENT, "No such file or directory", path)
            from ..vfs.base import StatResult
            return StatResult(0o010600)
        return self._fs.stat(path, follow_symlinks)

    def access(self, path: str, mode: int) -> bool:
        n = self._shell_fd(path)
        if n is not None:
            # bash's sh_stataccess: the mode bits of what the descriptor is open on (a
            # pipe's 0600 here): readable and writable, not executable
            return n in self._fds and self._fds[n] is not None and not mode & os.X_OK
        return self._fs.access(path, mode)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._fs, name)



class _BashRandom:
    """bash 5.2's $RANDOM: the Park-Miller minimal standard generator with its high and low
    halves xor-ed (compat level > 50), never the same value twice in a row; seeding with
    ``RANDOM=n`` makes the sequence bash's own."""

    __slots__ = ("last", "seed")

    def __init__(self) -> None:
        self.seed = random.getrandbits(31)
        self.last = 0

    def reseed(self, n: int) -> None:
        self.seed = n & 0xFFFFFFFF  # bash keeps the seed in an unsigned 32-bit word
        self.last = 0

    def next(self) -> int:
        while True:
            h, l = divmod(self.seed or 123459876, 127773)  # a zero seed cannot be used
            t = 16807 * l - 2836 * h
            self.seed = t + 0x7FFFFFFF if t < 0 else t
            rv = ((self.seed >> 16) ^ (self.seed & 0xFFFF)) & 0x7FFF
            if rv != self.last:
                self.last = rv
                return rv

class _NewArith:
    """``Interpreter._arith_vars`` / ``_arith_ctx`` of a fork: made on its first arithmetic
    (a non-data descriptor, like _NewRandom)."""

    def __get__(self, sh: Any, owner: Any = None) -> Any:
        if sh is None:
            return self
        d = sh.__dict__
        av = d.get("_arith_vars")
        if av is None:
            av = d["_arith_vars"] = _ArithVars(sh)
        ctx = d.get("_arith_ctx")
        if ctx is None:
            ctx = d["_arith_ctx"] = _arith_context(av)
        return av if self is Interpreter.__dict__["_arith_vars"] else ctx


class _NewRandom:
    """``Interpreter.rng`` of a fork: a new generator made on the fork's first use of $RANDOM
    (a non-data descriptor: the instance attribute then answers), not at every fork."""

    def __get__(self, sh: Any, owner: Any = None) -> Any:
        if sh is None:
            return self
        r = sh.__dict__["rng"] = _BashRandom()
        return r


from .pids import reserve as _next_pid  # noqa: E402


class _NewPid:
    """``Interpreter.bashpid`` of a fork: its own pid, allocated on first use (``$BASHPID``,
    ``kill``, a report of its death), not at every fork."""

    def __get__(self, sh: Any, owner: Any = None) -> Any:
        if sh is None:
            return self
        from .pids import checked
        d = sh.__dict__
        p = d["bashpid"] = checked(d.get("_pidno"))
        return p


_NO_TRAPS: dict[str, str] = {}  # a fork's fork_traps/parent_traps when there were none (never mutated)


class Interpreter(Expander):
    """One shell: state + the machinery to run AST nodes against a filesystem and streams."""

    rng = _NewRandom()
    bashpid = _NewPid()
    _arith_vars = _NewArith()
    _arith_ctx = _NewArith()

    argv_frames: tuple[tuple[str, ...], ...] = ()   # BASH_ARGV frames pushed in extdebug mode
    in_let = False      # inside the let builtin (its invalid-identifier errors name it)
    in_dparen = False   # inside (( )) or for (( )) (those errors say `((: `)
    # the bottom BASH_ARGV frame: the $@ of when extdebug first came on (or of the first
    # top-level use); None until then. Function calls never pop it.
    argv_base: tuple[str, ...] | None = None
    # dynamic variables `unset` made ordinary (bash: "loses its special properties")
    unspecial: frozenset[str] = frozenset()
    set_args = 0  # times `set` replaced the positional parameters (source keeps them then)
    # applying an external command's redirections (their expansion errors fail only it)
    redir_external = False
    # `sh` here is dash: its echo, "not found" wording and "sh: LINE: " error prefix
    dash = False
    # bash -c: after an expansion error abandons a command line, bash's line counter goes on
    # from the failing command's line: later top-level commands are numbered this much off
    line_shift = 0

    # descriptor -> pipe end of this shell's coprocesses (bash keeps them out of subshells
    # and pipeline stages, though not out of command substitutions)
    coproc_fds: dict[int, Any] = {}

    # a simple command forked as a pipeline stage or background job: its own failure is the
    # child's exit status, never an ERR trap in the child
    forked_simple = False
    # the simple command this fork runs as its whole self (a pipeline stage's, a `( … )`'s
    # last, a job's): bash execs it, so a signal that ends it ends the fork, which its parent
    # reports (see exec_ended); exec_pid is that program's pid once it ended so
    exec_cmd: Any = None
    exec_pid = 0
    # where bash's line_number stands for a report (see report_line): the line of the
    # innermost for/select/case/function running (0: none), and the top-level item running
    line_frame = 0
    top_items: Any = None
    top_item: Any = None
    # (defaults read on every command: a class attribute, not getattr's AttributeError path)
    _bg_job: Any = None   # the background job whose shell this is (shell/jobs.py)
    exec_tree: Any = None  # the run's parsed script while it runs (executors/inprocess.py)
    in_cmdsub = False
    # whose background jobs this shell has (see jobs.job_view): the session's shell its own
    # (owner None), a subshell only its own, a command substitution its parent's too
    job_view: tuple = (None,)
    job_parent_view: tuple = ()

    def __init__(self, fs: Any, *, state: ShellState | None = None, budget: Budget | None = None,
                 info: Any = None, host: Any = None) -> None:
        from ..commands.base import SystemInfo
        from ..limits import Limits
        self.fs = fs
        self.state = state if state is not None else ShellState()
        self.state.on_circular = self._circular_ref
        self.budget = budget if budget is not None else Budget(Limits())
        self.info = info if info is not None else SystemInfo()
        self.host = host  # the executor: external command lookup and spawning
        self.fds: dict[int, Any] = {0: NULL, 1: NULL, 2: NULL}
        self.lineno = 0
        self.errexit_off = 0      # >0 inside conditions (if/while tests, && || lists, !)
        self.neg_off = 0          # the errexit_off of a `!` begun without set -e
        # the function, eval or source running, with budget.commands when it began (bash
        # names it in an error of its first command's expansion: `eval: a: cannot convert`)
        self.cmd_frame: tuple[str, int] | None = None
        self.in_cond = 0
        self.funcstack: list[tuple[str, int, str]] = []   # (name, call line, source)
        self.loop_depth = 0
        self.pipestatus: list[int] = [0]
        self.cmdsub_status: int | None = None
        self.script_name = "bash"
        self.exec_string = ""
        self.current_command = ""
        self.owned: list[Any] = []   # files opened by exec redirections
        self.jobs: Any = None
        self.start_time = time.monotonic()
        self.seconds_base = 0
        self.rng = _BashRandom()
        self.pid = getattr(self.info, "pid", 1) or 1
        self.bashpid = self.pid
        self.is_subshell = False
        self.in_trap = False
        self.in_debug = False    # running the DEBUG trap (it never fires inside itself)
        self.trap_level = 0      # inside any trap handler: BASH_COMMAND keeps the pre-trap command
        self.err_hidden = 0      # calls that hid the caller's ERR trap (no set -E) under way
        self.stdin_redir = False  # (bash's stdin_redir: `&` keeps stdin instead of /dev/null)
        self.in_chld = False
        self.top = self          # the shell $$ names (its subshells and jobs share it)
        self.sig_queue: list[str] = []  # signals sent to it by its subshells and jobs (shared)
        self.outer_err = None    # a redirected external command's shell stderr
        self.killed_by = 0       # the signal `kill` sent this shell itself (it ends with 128+n)
        self.chld_pending = 0    # children ended (commands, subshells, jobs) since the last CHLD trap
        self.trap_command: Any = ""  # BASH_COMMAND as the outermost running trap found it
        self.fresh_err_trap: str | None = None
        self.call_depth = 0
        self.source_depth = 0
        self.procsubs: list[Any] = []
        self.getopts_state: tuple[int, int] = (1, 0)
        self._arith_vars = _ArithVars(self)
        self._arith_ctx = _arith_context(self._arith_vars)
        self.fn_source = "environment"
        self.source_stack: list[str] = []
        # (len(funcstack) when it began, line of the `source` command) per source_stack entry
        self.source_calls: list[tuple[int, int]] = []

    # ================================================================== forking
    def fork(self, *, cmdsub: bool = False, lazy: bool = False) -> Interpreter:
        """A subshell: copied state, same fs/budget/host, copied fd table. ``lazy``: a
        subshell this shell waits for (see ShellState.fork)."""
        child = Interpreter.__new__(Interpreter)
        # (one copy of the attribute dict, then stores into it: a third of the cost of
        # update() plus attribute stores)
        d = child.__dict__ = self.__dict__.copy()
        state = self.state
        cst = d["state"] = state.fork(lazy)
        cst.on_circular = child._circular_ref
        fds = d["fds"] = self.fds.copy()
        if self.coproc_fds and not cmdsub:
            for fd, end in self.coproc_fds.items():
                if fds.get(fd) is end:
                    del fds[fd]
        d["owned"] = []
        d["procsubs"] = []
        d.pop("last_procsub", None)  # (`wait $!` in a subshell: not its child)
        d["funcstack"] = self.funcstack.copy()
        d["source_stack"] = self.source_stack.copy()
        d["source_calls"] = self.source_calls.copy()
        d["is_subshell"] = True
        d.pop("bashpid", None)  # (its number now, vetted on first use: _NewPid)
        d["_pidno"] = pid = _next_pid()
        view = self.job_view
        d["job_parent_view"] = view
        d["job_view"] = view + (pid,) if cmdsub else (pid,)
        # bash reseeds $RANDOM in a subshell; the parent's sequence goes on (a new generator
        # on the child's first use: see Interpreter.rng)
        d.pop("rng", None)
        # the arithmetic adapter and context are made on the child's first arithmetic (see
        # Interpreter._arith_vars): most forks (pipeline stages, $( )) never do any
        d.pop("_arith_vars", None)
        d.pop("_arith_ctx", None)
        traps = state.traps
        if traps:
            # a subshell keeps ignored signals; ERR only under set -E, DEBUG and RETURN only
            # under set -T (bash's reset_signal_handlers); `trap -p` still lists the parent's
            opts = state.options
            keep = {k: v for k, v in traps.items() if v == "" or (k == "ERR" and opts["errtrace"])
                    or ((k == "RETURN" or k == "DEBUG")
                        and (opts["functrace"] or state.shopt["extdebug"]))}
            cst.traps = keep
            d["fork_traps"] = dict(keep)
            d["parent_traps"] = dict(traps)
        else:
            # (ShellState.fork gave the child an empty copy; these two are only read)
            d["fork_traps"] = d["parent_traps"] = _NO_TRAPS
        d["forked_simple"] = False
        d["chld_pending"] = 0
        d["killed_by"] = 0
        d["exec_cmd"] = None
        d["exec_pid"] = 0
        if cmdsub:
            d["loop_depth"] = 0
            d["in_cmdsub"] = True  # (and its subshells: see executors/inprocess._report_signal)
        if cmdsub and not state.shopt.get("inherit_errexit"):
            cst.options["errexit"] = False  # a copy (ShellState.fork)
        return child

    def call_frames(self) -> list[tuple[str, int, str]]:
        """The call stack innermost first, as bash's FUNCNAME / BASH_LINENO / BASH_SOURCE
        see it: (name, line called from, file) per function call and per ``source``
        (name "source", the file read), without the bottom "main" frame."""
        fs = self.funcstack
        if not self.source_calls:
            return fs[::-1]
        frames: list[tuple[str, int, str]] = []
        k = 0
        for (depth, line), fname in zip(self.source_calls, self.source_stack):
            frames.extend(fs[k:depth])
            k = max(k, depth)
            frames.append(("source", line, fname))
        frames.extend(fs[k:])
        return frames[::-1]

    # ================================================================== errors
    def err_prefix(self) -> str:
        if getattr(self.state, "interactive", False):
            return f"{self.script_name}: "   # bash -i names the shell and no line (error.c)
        if self.source_stack and self.source_calls[-1][0] >= len(self.funcstack):
            name = self.source_stack[-1]  # a file sourced by the innermost function (or top)
        elif self.funcstack:
            name = self.funcstack[-1][2]
        else:
            name = self.script_name
        if self.dash:
            return f"{name}: {self.lineno}: "
        if self.lineno > 0:
            return f"{name}: line {self.lineno}: "
        return f"{name}: "

    def _circular_ref(self, name: str) -> None:
        self.error(f"warning: {name}: circular name reference")

    def error(self, msg: str) -> None:
        if self.dash and msg.endswith(": unbound variable"):
            msg = msg[:-18] + ": parameter not set"  # dash's wording for set -u
        self.write_err((self.err_prefix() + msg + "\n").encode("utf-8", "surrogateescape"))

    def write_err(self, data: bytes) -> None:
        s = self.fds.get(2)
        if s is None:
            return
        try:
            s.write(data)
        except (OSError, ValueError):
            pass

    def write_out(self, data: bytes) -> None:
        s = self.fds.get(1)
        if s is None:
            raise OSError(_errno.EBADF, "Bad file descriptor")
        s.write(data)

    # ================================================================== variables
    def lookup_var(self, name: str) -> Var | None:
        if name in DYNAMIC and (not self.dash or name == "PWD"):
            # (dash has none of bash's dynamic variables; this one is built without LINENO)
            if name in self.unspecial:
                return self.state.find(name)
            if name == "LINENO" or name == "FUNCNAME":
                # a local LINENO, or LINENO after `unset LINENO`, is an ordinary variable
                v = self.state.find(name)
                if v is not None:
                    return v
            v = self._dynamic(name)
            if v is not None:
                return v
        return self.state.find(name)

    def _dynamic(self, name: str) -> Var | None:
        st = self.state
        if name == "LINENO":
            return Var(str(self.lineno))
        if name == "RANDOM":
            return Var(str(self.rng.next()), INTEGER)
        if name == "SRANDOM":
            return Var(str(random.getrandbits(32)))
        if name == "SECONDS":
            return Var(str(int(time.monotonic() - self.start_time) + self.seconds_base), INTEGER)
        if name == "BASHPID":
            return Var(str(self.bashpid), INTEGER)
        if name == "EPOCHSECONDS":
            return Var(str(int(time.time())))
        if name == "EPOCHREALTIME":
            return Var(f"{time.time():.6f}")
        if name == "BASH_SUBSHELL":
            return Var(str(st.subshell))
        if name == "FUNCNAME":
            if not self.funcstack:
                # bash keeps the `source` frames but shows them only while a function runs
                return Var(None, ARRAY)  # declared, unset
            names = [f[0] for f in self.call_frames()]
            # (a script file has a bottom "main" frame; bash -c has none, whatever its $0)
            main = self.__dict__.get("script_file", False)
            if main:
                names.append("main")
            return Var(dict(enumerate(names)), ARRAY)
        if name == "BASH_SOURCE":
            srcs = [f[2] for f in self.call_frames()]
            if self.__dict__.get("script_file", False):
                srcs.append(self.script_name)
            return Var(dict(enumerate(srcs)), ARRAY)
        if name == "BASH_LINENO":
            main = self.__dict__.get("script_file", False)
            if not self.funcstack and not self.source_stack:
                return Var({0: "0"} if main else {}, ARRAY)  # (a script's top level: main's 0)
            lines = [str(f[1]) for f in self.call_frames()]
            if main:
                lines.append("0")
            return Var(dict(enumerate(lines)), ARRAY)
        if name == "BASH_COMMAND":
            if self.trap_level:
                # bash never updates BASH_COMMAND for a trap's own commands
                cc = self.trap_command
                if callable(cc):
                    cc = self.trap_command = cc()
                return Var(cc if type(cc) is str else _cmd_text(cc) if type(cc) is N.Simple else " ".join(cc))
            cc = self.current_command
            if callable(cc):
                cc = self.current_command = cc()
            # (a Simple node, kept as it is and rendered only when read, shows as written)
            return Var(cc if type(cc) is str else _cmd_text(cc) if type(cc) is N.Simple else " ".join(cc))
        if name == "PIPESTATUS":
            return Var({i: str(s) for i, s in enumerate(self.pipestatus)}, ARRAY)
        if name == "DIRSTACK":
            return Var(dict(enumerate([self.tilde_short(st.cwd)] + st.dirstack)), ARRAY)
        if name in ("BASH_ARGC", "BASH_ARGV", "GROUPS"):
            v = st.find(name)
            if v is not None or name == "GROUPS":
                return v if v is not None else Var({}, ARRAY)
            if self.argv_base is None and not self.funcstack:
                # bash fills them on first use at top level (not inside a function)
                self.argv_base = tuple(st.positional)
            frames = self.argv_frames if self.argv_base is None else (self.argv_base,) + self.argv_frames
            if name == "BASH_ARGV":
                vals = [a for f in reversed(frames) for a in reversed(f)]
            else:
                vals = [str(len(f)) for f in reversed(frames)]
            return Var(dict(enumerate(vals)), ARRAY)
        if name == "BASH_EXECUTION_STRING":
            return Var(self.exec_string)
        if name == "SHELLOPTS":
            return Var(":".join(k for k, on in sorted(st.options.items()) if on), READONLY)
        if name == "BASHOPTS":
            return Var(":".join(k for k, on in sorted(st.shopt.items()) if on), READONLY)
        if name == "BASH_ALIASES" or name == "BASH_CMDS":
            v = st.find(name)
            if v is not None:
                return v
            return Var(dict(st.aliases) if name == "BASH_ALIASES" else dict(st.hash), ASSOC)
        if name == "BASH_ARGV0":
            return st.find(name) or Var(st.arg0)
        if name == "COMP_WORDBREAKS":
            # (bash's `set` shows it only once assigned: not a listed variable until then)
            return st.find(name) or Var(" \t\n\"'@><=;|&(:")
        if name == "PWD":
            return None
        return None

    def tilde_short(self, path: str) -> str:
        home = self.get_scalar("HOME")
        if home and home != "/" and (path == home or path.startswith(home + "/")):
            return "~" + path[len(home):]
        return path

    def get_ifs(self) -> str | None:
        v = self.state.find("IFS")
        if v is None:
            return None
        val = v.value
        if val is None:
            return None
        if type(val) is dict:
            return val.get(0, "")
        return val

    def get_scalar(self, name: str) -> str | None:
        src = self.state.__dict__.get("_scopes_src")
        if src is not None and name not in DYNAMIC:
            # a lazy fork that has not copied its variables yet reads its parent's (as they
            # are: the parent waits), so a stage that only reads PATH copies nothing
            for sc in reversed(src):
                v = sc.get(name)
                if v is not None:
                    break
            else:
                return None
            if not v.attrs & NAMEREF:
                val = v.value
                if type(val) is dict:
                    return val.get("0") if v.attrs & ASSOC else val.get(0)
                return val
        v = self.lookup_var(name)
        if v is None:
            return None
        if v.attrs & NAMEREF:
            target = self.state.resolve_ref(name)
            if target != name or type(target) is GlobalName:
                return self.get_scalar_ref(target)
        val = v.value
        if val is None:
            return None
        if type(val) is dict:
            if v.attrs & ASSOC:
                return val.get("0")
            return val.get(0)
        return val

    def get_scalar_ref(self, target: str) -> str | None:
        if "[" in target and target.endswith("]"):
            try:
                from .parser import parse_word
                w = parse_word("${" + target + "}")
                p = w.parts[0]
                if type(p) is N.Param:
                    r = self.param_value(p, False)  # unquoted: None when unset
                    return r if type(r) is str else None
            except Exception:
                return None
        return self.get_scalar(target)

    def special_or_var(self, name: str) -> Any:
        """Value of ``$name`` for a Param without subscript (None when unset)."""
        c = name[:1]
        if c.isdigit():
            if name == "0":
                return self.state.arg0
            i = int(name)
            pos = self.state.positional
            return pos[i - 1] if i <= len(pos) else None
        if len(name) == 1 and not (c.isalpha() or c == "_"):
            if name == "?":
                return str(self.state.last_status)
            if name == "#":
                return str(len(self.state.positional))
            if name == "$":
                return str(self.pid)
            if name == "!":
                b = self.state.last_bg_pid
                return None if b is None else str(b)
            if name == "-":
                if self.dash:
                    # dash's $-: its option letters, last first, and s when it reads stdin
                    opts = self.state.options
                    fl = "".join(c for c in "efimnxvECau" if c == "i" and getattr(self.state, "interactive", False)
                                 or c in LETTER_TO_OPTION and opts.get(LETTER_TO_OPTION[c]))
                    return ("s" if getattr(self.state, "dash_mode", "") == "s" else "") + fl[::-1]
                return self.state.dash_flags()
        if name == "_":
            return self.state.last_arg
        return self.get_scalar(name)

    def grow(self, nbytes: int) -> None:
        """The shell is about to hold ``nbytes`` more (a value, a variable, an element, a
        function): past ``max_shell_bytes`` the run fails as bash's xmalloc does."""
        st = self.state
        st.holdings.charge(st, nbytes, self.budget.shell_cap)

    def check_assignable(self, name: str, var: Var | None) -> None:
        if var is not None and var.attrs & READONLY:
            raise VarError(f"{name}: readonly variable")

    def _coerce(self, var: Var | None, value: str, append_to: str | None = None) -> str:
        if var is None:
            return value if append_to is None else append_to + value
        a = var.attrs
        if a & INTEGER:
            try:
                n = self.arith(value)
                if append_to is not None:
                    n = self.arith(append_to or "0") + n
                    n = ((n + (1 << 63)) % (1 << 64)) - (1 << 63)
            except ExpansionError as e:
                # an integer variable's bad value ends bash -c (a script file drops the line)
                if getattr(e, "arith", False):
                    e.discard = False
                    e.subscript = True  # type: ignore[attr-defined]
                raise
            value = str(n)
        elif append_to is not None:
            value = append_to + value
        if a & UPPER:
            value = _upper(value)  # towupper per character, as bash: ß stays ß
        elif a & LOWER:
            value = _lower(value)
        elif a & CAPCASE and value:
            value = _upper(value[0]) + _lower(value[1:])
        return value

    def set_var(self, name: str, value: str, *, append: bool = False, scope: dict | None = None) -> None:
        """Assign a scalar (to element 0 of an array), honouring attributes and namerefs."""
        st = self.state
        if len(value) >= _CHARGE_MIN:
            self.grow(_sizeof(value))
        if name == "OPTIND":
            # bash: any assignment to OPTIND restarts getopts within its current word
            self.getopts_state = (0, 0)
        elif name in _LOCALE_VARS:
            var = st.find(name) if scope is None else scope.get(name)
            if var is None:
                (st.scopes[0] if scope is None else scope)[name] = Var(None, SPECIAL)
                self.locale_check(name, value)
            else:
                var.attrs |= SPECIAL
                if not var.attrs & READONLY:
                    new = (self.get_scalar(name) or "") + value if append else value
                    self.locale_check(name, new.lower() if var.attrs & LOWER else new.upper() if var.attrs & UPPER else new)
        if scope is None:
            var = st.find(name)
            if var is not None and not var.attrs and not append and type(var.value) is not dict \
                    and not st.options["allexport"]:
                var.value = value
                return
        sc, var = st.find_scope(name) if scope is None else (scope, scope.get(name))
        if var is not None and var.attrs & NAMEREF:
            target = st.resolve_ref(name)
            if not target:
                raise CircularRef(1)  # a circular reference: bash warns and drops the command line
            if target != name or type(target) is GlobalName:
                if "[" in target:
                    # (the subscript is expanded as bash does: `declare -n r='A["K"]'` is A[K])
                    nm, _, sub = target.partition("[")
                    try:
                        from .parser import parse_word
                        idx = parse_word(sub[:-1])
                    except Exception:
                        idx = N.Word((N.Lit(sub[:-1]),), sub[:-1])
                    self.assign_element(nm, idx, value, append=append)
                    return
                name = target
                sc, var = st.find_scope(name)
            elif value and not _NAME_RE.match(value.split("[")[0]):
                # (an unset reference given a value that names no variable)
                raise _named_error(f"`{value}': not a valid identifier")
        if name in DYNAMIC and var is None and not self.dash and name not in self.unspecial:
            if name == "SECONDS":
                self.seconds_base = int(value) if value.lstrip("-").isdigit() else 0
                self.start_time = time.monotonic()
                return
            if name == "RANDOM":
                # RANDOM has the integer attribute: the value is evaluated, then seeds
                try:
                    self.rng.reseed(self.arith(value))
                except ExpansionError:
                    pass
                return
            if name in ("LINENO", "BASH_SUBSHELL", "BASHPID", "FUNCNAME", "PIPESTATUS", "BASH_ARGC", "BASH_ARGV"):
                return
            if name in ("SHELLOPTS", "BASHOPTS"):
                raise VarError(f"{name}: readonly variable")
        if var is None:
            self.grow(VAR_COST + len(name) + (50 + len(value) if len(value) < _CHARGE_MIN else 0))
            if self.state.options["allexport"]:
                st.scopes[0][name] = Var(value, EXPORT)
                st.env_cache = None
            else:
                st.scopes[0][name] = Var(value)
            return
        if var.attrs & READONLY:
            raise VarError(f"{name}: readonly variable")
        old = var.value
        if old is None and var.attrs & (ARRAY | ASSOC):
            old = var.value = {}  # `declare -A h; h=x` stores element 0 ("0")
        if append:
            prev = old.get("0" if var.attrs & ASSOC else 0) if type(old) is dict else old
            if prev:
                self._check_append(name, prev, value)
        if type(old) is dict:
            key: Any = "0" if var.attrs & ASSOC else 0
            prev = old.get(key) if append else None
            if append or var.attrs & (INTEGER | UPPER | LOWER | CAPCASE):
                value = self._coerce(var, value, prev if append else None)
            var.own()[key] = value
        else:
            if var.attrs & (INTEGER | UPPER | LOWER | CAPCASE):
                var.value = self._coerce(var, value, (old or "") if append else None)
            else:
                var.value = (old or "") + value if append else value
        if var.attrs & EXPORT or self.state.options["allexport"]:
            if self.state.options["allexport"]:
                var.attrs |= EXPORT
            st.env_cache = None
            if name == "PATH" and st.hash:
                st.hash.clear()  # bash forgets hashed commands on any PATH assignment
                st.hash_hits.clear()

    def declare_var(self, name: str, *, local: bool = False) -> Var:
        """Find or create the variable ``name`` (in the function scope when ``local``)."""
        st = self.state
        if local and len(st.scopes) > 1:
            sc = st.scopes[st.local_index()]
            v = sc.get(name)
            if v is None:
                self.grow(VAR_COST + len(name))
                v = Var(None)
                sc[name] = v
            return v
        v = st.find(name)
        if v is None:
            self.grow(VAR_COST + len(name))
            v = Var(None)
            st.scopes[0][name] = v
        return v

    def assoc_key(self, idx: N.Word) -> str:
        """An associative array's subscript, expanded as an unquoted word is but not split
        or globbed: a backslash quotes any character (`b[\\]]` is `]`, `b[a\\ b]` is `a b`),
        where an indexed array's arithmetic keeps it."""
        if "\\" in idx.text:
            from .parser import parse_word
            idx = parse_word(idx.text)
        return self.expand_str(idx)

    def eval_index(self, idx: N.Word, name: str, var: Var | None) -> Any:
        if var is not None and var.attrs & ASSOC:
            return self.assoc_key(idx)
        text = self.expand_dq(idx)
        try:
            return self.arith(text)
        except ExpansionError as e:
            e.discard = False  # type: ignore[attr-defined]  # fatal, as for a set array
            e.subscript = True  # type: ignore[attr-defined]
            e.arith = False  # type: ignore[attr-defined]  # not one that only drops the line
            raise

    def get_element(self, name: str, var: Var, idx: N.Word) -> str | None:
        val = var.value
        if var.attrs & ASSOC:
            key = self.assoc_key(idx)
            if not key:
                self.error(f"{name}: bad array subscript")
                return None
            return val.get(key) if type(val) is dict else (val if key == "0" else None)
        text = self.expand_dq(idx)  # a bad substitution here only drops the line
        try:
            i = self.arith(text)
        except ExpansionError as e:
            e.discard = False  # type: ignore[attr-defined]  # fatal, as in an assignment
            e.subscript = True  # type: ignore[attr-defined]
            e.arith = False  # type: ignore[attr-defined]  # not one that only drops the line
            raise
        if type(val) is dict:
            if i < 0:
                if not val:
                    self.error(f"{name}: bad array subscript")
                    return None
                i = max(val) + 1 + i
                if i < 0:
                    self.error(f"{name}: bad array subscript")
                    return None
            return val.get(i)
        if i == 0 or i == -1:
            return val
        return None

    def assign_element(self, name: str, idx: N.Word, value: str, append: bool = False, local: bool = False) -> None:
        if not idx.parts:
            raise VarError(f"{name}[]: bad array subscript")  # `a[]=v` (a blank subscript is 0)
        st = self.state
        rname = st.resolve_ref(name)
        var = st.find(rname)
        if var is not None and var.attrs & NAMEREF or "[" in rname:
            # ref[i]=v through a nameref to an element (or an unset nameref): bash refuses
            raise VarError(f"`{rname if '[' in rname else ''}': not a valid identifier")
        if var is None:
            var = Var({}, ARRAY)
            st.scopes[0][rname] = var
        if var.attrs & READONLY:
            raise VarError(f"{name}: readonly variable")  # a nameref reports its own name
        if var.attrs & ASSOC:
            key: Any = self.assoc_key(idx)
            if not key:
                # an empty key is no element (bash names the subscript as written)
                raise VarError(f"{name}[{idx.text}]: bad array subscript")
            if type(var.value) is not dict:
                var.value = {}
        else:
            if idx.text in ("*", "@"):
                raise VarError(f"{name}[{idx.text}]: bad array subscript")
            try:
                i = self.arith(self.expand_dq(idx))
            except ExpansionError as e:
                # a bad subscript in an assignment ends the shell (bash), where a bad $(( ))
                # only abandons the command line; builtins report it without their name
                e.discard = False  # type: ignore[attr-defined]
                e.subscript = True  # type: ignore[attr-defined]
                raise
            if type(var.value) is not dict:
                var.value = {} if var.value is None else {0: var.value}
                var.attrs |= ARRAY
            if i < 0:
                top = array_top(var, var.value) + 1
                if top + i < 0:
                    raise VarError(f"{rname}[{self._word_src(idx)}]: bad array subscript")
                i = top + i
            key = i
        d = var.value
        prev = d.get(key, "") if append else None
        if prev is None:
            n = len(value) + (_ELEM_GROW + len(key) + 49 if type(key) is str else _ELEM_GROW)
            self.budget.charge_array(d, len(value) + _HELD_OVERHEAD + (len(key) if type(key) is str else 0), rname)
        else:
            self._check_append(rname, prev, value)
            n = len(value) + (len(prev) if len(prev) >= _CHARGE_MIN else 0)
            self.budget.charge_array(d, len(value), rname)
        self.grow(n)
        if append or var.attrs & (INTEGER | UPPER | LOWER | CAPCASE):
            value = self._coerce(var, value, prev)
        var.own()[key] = value

    def _check_append(self, name: str, prev: str, value: str) -> None:
        """``name+=value``: the joined value is bounded like any assigned one."""
        lim = self.budget.limits.max_variable_bytes
        if lim is not None and len(prev) + len(value) > lim:
            raise LimitExceeded("max_variable_bytes", f"variable {name} too large")

    def set_array(self, name: str, elems: tuple[N.ArrayElem, ...], *, append: bool = False,
                  assoc: bool | None = None, local: bool = False, var: Var | None = None,
                  decl: bool = False) -> None:
        st = self.state
        if var is None:
            rname = st.resolve_ref(name)
            if "[" in rname:
                raise VarError(f"`{rname}': not a valid identifier")
            var = st.find(rname) if not local else None
            if var is None:
                var = self.declare_var(rname, local=local)
            elif var.attrs & NAMEREF:
                # an unset nameref given a list becomes a plain array (bash warns)
                self.error(f"warning: {rname}: removing nameref attribute")
                var.attrs &= ~NAMEREF
                var.value = None
        else:
            rname = name
        if var.attrs & READONLY:
            raise VarError(f"{name}: readonly variable")  # a nameref reports its own name
        if assoc:
            var.attrs |= ASSOC
        is_assoc = bool(var.attrs & ASSOC)
        if not is_assoc:
            var.attrs |= ARRAY
        old = var.value
        if append and type(old) is dict:
            d = var.own()
        elif append and old is not None:
            d = {("0" if is_assoc else 0): old}
        else:
            d = {}
        budget = self.budget
        # a declaration's compound value is traced expanded, each word single-quoted
        # (bash expands and requotes it before the builtin runs): `+ a=('1' ['k']='v')`
        tr: list[str] | None = [] if decl and st.options["xtrace"] else None
        if is_assoc:
            if elems and elems[0].key is None:
                # bash 5.1+: a=(k1 v1 k2 v2) pairs keys and values when the first word is
                # not [k]=v (a later [k]=v word is then a key like any other)
                pending: str | None = None
                for el in elems:
                    words = self.expand_words([el.value]) if el.key is None else [self._elem_text(el)]
                    if tr is not None:
                        tr.extend(_sh_single_quote(w) for w in words)
                    for w in words:
                        if pending is None:
                            pending = w
                        else:
                            w = self._coerce(var, w)
                            if var.shared and var.value is d:
                                d = var.own()  # (an expansion forked: a fork shares the array)
                            d[pending] = w
                            pending = None
                    budget.charge_array(d, sum(map(len, words)) + _HELD_OVERHEAD * len(words), rname)
                    self.grow(sum(map(len, words)) + _ELEM_GROW * len(words))
                if pending is not None:
                    d[pending] = ""
                if tr is not None:
                    self.xtrace_raw(f"{name}{'+=' if append else '='}(" + " ".join(tr) + ")")
            else:
                pairs = []
                for el in elems:
                    if el.key is None:
                        pairs.append((el, "", ""))
                        if tr is not None:
                            tr.append(_sh_single_quote(el.value.text))
                        continue
                    # bash 5.2 does no tilde expansion in an associative array's values
                    pairs.append((el, self.expand_str(el.key), self.expand_str(el.value)))
                    if tr is not None:
                        tr.append(f"[{_sh_single_quote(pairs[-1][1])}]{'+=' if el.append else '='}"
                                  + _sh_single_quote(pairs[-1][2]))
                if tr is not None:
                    self.xtrace_raw(f"{name}{'+=' if append else '='}(" + " ".join(tr) + ")")
                for el, k, v in pairs:
                    if el.key is None:
                        # bash names the word as written; declare quotes it once more
                        t = el.value.text
                        self.error(f"{rname}: {_single_quote(t) if decl else t}: "
                                   "must use subscript when assigning associative array")
                        continue
                    if not k:
                        self.error(("[''" + ("]+=" if el.append else "]=") + _sh_single_quote(v) if decl
                                    else self._elem_text(el)) + ": bad array subscript")
                        continue
                    budget.charge_array(d, len(k) + len(v) + _HELD_OVERHEAD, rname)
                    self.grow(len(k) + len(v) + _ELEM_GROW + 49)
                    v = self._coerce(var, v, d.get(k, "")) if el.append and append else self._coerce(var, v)
                    if var.shared and var.value is d:
                        d = var.own()  # (an expansion forked: a fork shares the array now)
                    d[k] = v
        else:
            # bash expands all the values first (with the old array), then evaluates each
            # subscript in turn, seeing the elements assigned before it; a [k]=v word that
            # brace-expands becomes plain words
            items: list[tuple[N.Word | str | None, list[str], bool]] = []
            for el in elems:
                if el.key is not None:
                    vt = el.value.text
                    if ("," in vt or ".." in vt) and self._has_brace(el.value):
                        from .parser import parse_word
                        ws = self.expand_words([parse_word(self._elem_text(el))])
                        if len(ws) != 1:
                            items.append((None, ws, False))
                            if tr is not None:
                                tr.extend(_sh_single_quote(w) for w in ws)
                            continue
                    if tr is not None:
                        # (the subscript expands once, here, as bash's requoted word does)
                        k = self.expand_dq(el.key)
                        v = self.expand_str(el.value, assign=True)
                        tr.append(f"[{_sh_single_quote(k)}]{'+=' if el.append else '='}{_sh_single_quote(v)}")
                        items.append((k, [v], el.append))
                        continue
                    items.append((el.key, [self.expand_str(el.value, assign=True)], el.append))
                else:
                    items.append((None, self.expand_words([el.value]), False))
                    if tr is not None:
                        tr.extend(_sh_single_quote(w) for w in items[-1][1])
            if tr is not None:
                self.xtrace_raw(f"{name}{'+=' if append else '='}(" + " ".join(tr) + ")")
            if var.shared and var.value is d:
                d = var.own()  # (an expansion forked: a fork shares the array now)
            var.value = d
            nxt = top = array_top(var, d) + 1
            for key, vals, app in items:
                if key is not None:
                    if (key if type(key) is str else key.text) in ("*", "@"):
                        self.error(f"[{key if type(key) is str else key.text}]{'+=' if app else '='}{vals[0]}: "
                                   "cannot assign to non-numeric index")
                        continue
                    try:
                        kt = key if type(key) is str else self.expand_dq(key)
                        if not kt:
                            # bash names the expanded word
                            self.error(f"[]{'+=' if app else '='}{vals[0]}: bad array subscript")
                            continue
                        i = self.arith(kt)
                    except ExpansionError as e:
                        e.discard = False  # type: ignore[attr-defined]  # ends the shell (bash)
                        e.subscript = True  # type: ignore[attr-defined]
                        raise
                    if i < 0:
                        i = array_top(var, d) + 1 + i
                        if i < 0:
                            kw = key if type(key) is str else key.text
                            self.error(f"[{kw}]{'+=' if app else '='}{vals[0]}: bad array subscript")
                            continue
                    # (an integer array's [i]+=v adds, as the element assignment does)
                    budget.charge_array(d, len(vals[0]) + _HELD_OVERHEAD, rname)
                    self.grow(len(vals[0]) + _ELEM_GROW)
                    v = self._coerce(var, vals[0], d.get(i, "")) if app else self._coerce(var, vals[0])
                    if var.shared and var.value is d:
                        d = var.own()  # (the subscript forked: a fork shares the array now)
                    d[i] = v
                    nxt = i + 1
                else:
                    budget.charge_array(d, sum(map(len, vals)) + _HELD_OVERHEAD * len(vals), rname)
                    self.grow(sum(map(len, vals)) + _ELEM_GROW * len(vals))
                    if var.shared and var.value is d:
                        d = var.own()  # (an expansion forked: a fork shares the array now)
                    if var.attrs & (INTEGER | UPPER | LOWER | CAPCASE):
                        for w in vals:
                            w = self._coerce(var, w)
                            if var.shared and var.value is d:
                                d = var.own()  # (arithmetic forked: a fork shares the array)
                            d[nxt] = w
                            nxt += 1
                    else:
                        for w in vals:
                            d[nxt] = w
                            nxt += 1
                if nxt > top:
                    top = nxt
            var.top = (d, len(d), top - 1)
        var.value = d
        if var.attrs & EXPORT:
            st.env_cache = None

    @staticmethod
    def _elem_text(el: N.ArrayElem) -> str:
        """The source text of a ``[k]=v`` element."""
        key = el.key.text if el.key is not None else ""
        return f"[{key}]{'+=' if el.append else '='}{el.value.text}"

    def set_array_values(self, name: str, vals: list[str]) -> None:
        st = self.state
        rname = st.resolve_ref(name)
        var = st.find(rname)
        if var is None:
            var = Var(None)
            st.scopes[0][rname] = var
        elif var.attrs & NAMEREF:
            self.error(f"warning: {rname}: removing nameref attribute")
            var.attrs &= ~NAMEREF
        if var.attrs & READONLY:
            raise VarError(f"{rname}: readonly variable")
        var.attrs |= ARRAY
        var.attrs &= ~ASSOC
        # (measured before the dict is built: a split line may be millions of words)
        n = sum(map(len, vals))
        self.budget.check_array(n + _HELD_OVERHEAD * len(vals), rname)
        self.grow(n + _ELEM_GROW * len(vals))
        var.value = {i: v for i, v in enumerate(vals)}

    def unset_var(self, name: str, *, follow_ref: bool = True) -> int:
        st = self.state
        if follow_ref:
            name = st.resolve_ref(name) or name  # circular: the nameref itself goes
        for i in range(len(st.scopes) - 1, -1, -1):
            sc = st.scopes[i]
            v = sc.get(name)
            if v is not None:
                if v.attrs & READONLY:
                    self.error(f"unset: {name}: cannot unset: readonly variable")
                    return 1
                if v.attrs & TEMPVAR:
                    # a prefix assignment's binding goes, uncovering the one beneath it
                    del sc[name]
                    st.env_cache = None
                    return 0
                if i >= st.local_index() and i > 0 and self.funcstack:
                    # unsetting a local of the current function leaves it local and unset
                    sc[name] = Var(None, 0)
                    sc[name].attrs = 0
                    del sc[name]
                    sc[name] = Var(None)
                    st.env_cache = None
                    return 0
                del sc[name]
                if v.attrs & EXPORT:
                    st.env_cache = None
                if i == 0 and (name == "LINENO" or name == "FUNCNAME"):
                    sc[name] = Var(None)  # once unset, never special again
                return 0
        if name == "LINENO" or name == "FUNCNAME":
            st.scopes[0][name] = Var(None)  # bash: unset LINENO loses its special meaning
        elif name in ("BASH_SOURCE", "BASH_LINENO", "BASH_ARGC", "BASH_ARGV"):
            self.error(f"unset: {name}: cannot unset")
            return 1
        elif name in DYNAMIC and name not in _KEEP_SPECIAL and not self.dash:
            self.unspecial = self.unspecial | {name}  # (RANDOM=5 is then a plain 5)
        return 0

    # ================================================================== arithmetic
    def arith(self, expr: str) -> int:
        try:
            fn = _arith_fns.get(expr)
            if fn is not None:
                return fn(self._arith_ctx, False)
            return _arith_eval_in(expr, self._arith_ctx)
        except RecursionError:
            err = ExpansionError(_arith_recursion_msg(expr), 1)
            err.discard = True  # type: ignore[attr-defined]
            err.arith = True  # type: ignore[attr-defined]  # an arithmetic error: set -e goes on
            raise err from None
        except _ArithError as e:
            err = ExpansionError(e.message, 1)
            if type(e) is _SubscriptError:
                # an error in an array subscript ends bash -c, reported without a prefix
                err.discard = False  # type: ignore[attr-defined]
                err.subscript = True  # type: ignore[attr-defined]
            else:
                err.discard = True  # type: ignore[attr-defined]
                err.arith = True  # type: ignore[attr-defined]
                if self.dash:
                    _dash_arith_error(err, expr)
            raise err from None
        except VarError as e:
            # set -u: an unbound name in arithmetic ends bash -c with 127, in (( )) and let too
            raise ExpansionError(e.message, 127 if e.message.endswith(": unbound variable") else 1) from None

    def expand_subscript(self, sub: str) -> str:
        """A subscript that arrives as text (unset 'a[$k]', printf -v, test -v, a variable's
        value in arithmetic): bash expands it (quote removal, $x, $(cmd)) before use."""
        if not any(c in sub for c in "$`'\"\\"):
            return sub
        from .parser import parse_word
        try:
            w = parse_word(sub)
        except Exception:
            return sub
        return self.expand_str(w)

    def sub_word(self, sub: str) -> N.Word:
        """The subscript text as a word to expand like a written ``a[sub]=`` subscript."""
        if not any(c in sub for c in "$`'\"\\"):
            return N.Word((N.Lit(sub),), sub)
        from .parser import parse_word
        try:
            return parse_word(sub)
        except Exception:
            return N.Word((N.Lit(sub),), sub)

    def arith_expand(self, w: N.Word) -> int:
        """A $((...)) or ((...)) expression: its expansions, then the arithmetic.  An error in
        the arithmetic only drops the command line (``subst``); a bad substitution in the
        text is reported with the whole expression as written, and set -e ends the shell."""
        parts = w.parts
        try:
            if self.dash and "**" in w.text:
                # dash has no ** operator
                e = ExpansionError(f"{w.text.strip()}: syntax error: operand expected", 1)
                e.arith = True  # type: ignore[attr-defined]
                raise e
            if len(parts) == 1 and type(parts[0]) is N.Lit:
                return self.arith(parts[0].text)
            return self.arith(self.expand_arith(w))
        except ExpansionError as e:
            if self.dash and getattr(e, "arith", False):
                _dash_arith_error(e, w.text)
                raise
            if getattr(e, "arith", False):
                e.subst = True  # type: ignore[attr-defined]  # a $((...)) word, not a [[ -eq ]] operand
            elif e.message.endswith(": bad substitution") and w.text:
                e.message = f"{w.text}: bad substitution"
            raise

    def arith_sub(self, w: N.Word) -> int:
        """A $((...)) word part.  bash finds its end again when it expands it, reading a
        ``#`` after a blank as a comment to the end of the line: when that hides the closing
        ``))`` it is a bad substitution (named here by the $((...)) alone; bash names the
        whole word, quotes and all)."""
        t = w.text
        if "#" in t and _ARITH_COMMENT.search(t):
            e = self.reported_error(f"bad substitution: no closing `)' in $(({t}))")
            e.name_word = "arith"  # type: ignore[attr-defined]  # renamed by the word
            raise e
        if self.in_dparen:
            self.in_dparen = False  # (a $(( )) inside (( )) is not the (( )) itself)
            try:
                return self.arith_expand(w)
            finally:
                self.in_dparen = True
        return self.arith_expand(w)

    def arith_word(self, w: N.Word) -> int:
        """An arithmetic operand word (a substring's offset or length)."""
        parts = w.parts
        if len(parts) == 1 and type(parts[0]) is N.Lit:
            return self.arith(parts[0].text)
        return self.arith(self.expand_dq(w))

    # ================================================================== pattern helpers
    def pat_opts(self) -> dict[str, bool]:
        sh = self.state.shopt
        return {"extglob": True, "nocase": sh["nocasematch"]}

    def locale_check(self, name: str, value: str) -> None:
        """bash calls setlocale() when a locale variable is assigned; a locale this machine
        lacks draws glibc's warning (an LC_* category only while LC_ALL is unset or empty).
        Only a category's first failure on a name carries errno's text: glibc caches the miss."""
        if not value or value in ("C", "POSIX") or utf8_locale_name(value):
            return
        if name != "LC_ALL" and self.get_scalar("LC_ALL"):
            return
        failed = self.state.locale_failed
        key = (name, value)
        tail = "" if key in failed else ": No such file or directory"
        if type(failed) is frozenset:
            failed = self.state.locale_failed = set()
        failed.add(key)
        self.error(f"warning: setlocale: {name}: cannot change locale ({value}){tail}")

    def byte_locale(self) -> bool:
        """Does LC_ALL / LC_CTYPE / LANG select the C locale, where bash counts, slices and
        matches bytes?  Unset means C; only C, POSIX and the C.UTF-8 family exist here, and
        naming any other locale leaves the previous one in effect (bash's setlocale fails)."""
        find = self.state.find
        for n in ("LC_ALL", "LC_CTYPE", "LANG"):
            v = find(n)
            if v is not None:
                val = v.value
                if type(val) is str and val:
                    if val == "C" or val == "POSIX":
                        self.state.ctype_bytes = True
                        return True
                    if val in _UTF8_LOCALES or utf8_locale_name(val):
                        self.state.ctype_bytes = False
                        return False
                    return self.state.ctype_bytes
        self.state.ctype_bytes = True
        return True

    def qv(self, s: str) -> str:
        """``s`` as bash's quoting sees it: in the C locale every non-ASCII byte is
        unprintable, so it comes out as ``$'\\303\\251'``."""
        return s if s.isascii() or not self.byte_locale() else byte_view(s)

    def fnmatch(self, s: str, pat: str, *, nocase: bool | None = None, extglob: bool | None = None) -> bool:
        """Match ``s`` against a shell pattern.  Extended groups need ``shopt -s extglob``
        (case, ``${x^^p}``) except in ``[[ == ]]``, which bash always matches with them."""
        patterns = _patterns
        sh = self.state.shopt
        if nocase is None:
            nocase = sh["nocasematch"]
        if extglob is None:
            extglob = sh["extglob"]
        if not (s.isascii() and pat.isascii()) and self.byte_locale():
            s, pat = byte_view(s), byte_view(pat)
        return patterns.fnmatch(pat, s, extglob=extglob, nocase=nocase)

    def pat_strip(self, v: str, pat: str, op: str) -> str:
        patterns = _patterns
        if not (v.isascii() and pat.isascii()) and self.byte_locale():
            return char_view(self._pat_strip(byte_view(v), byte_view(pat), op))
        return self._pat_strip(v, pat, op)

    def _pat_strip(self, v: str, pat: str, op: str) -> str:
        patterns = _patterns
        eg = self.state.shopt["extglob"]
        if op in ("#", "##"):
            return patterns.strip_prefix(v, pat, longest=(op == "##"), extglob=eg)
        return patterns.strip_suffix(v, pat, longest=(op == "%%"), extglob=eg)

    def pat_replace(self, v: str, pat: str, repl: tuple[str, bool], op: str) -> str:
        if not (v.isascii() and pat.isascii()) and self.byte_locale():
            return char_view(self._pat_replace(byte_view(v), byte_view(pat), (byte_view(repl[0]), repl[1]), op))
        return self._pat_replace(v, pat, repl, op)

    def _pat_replace(self, v: str, pat: str, repl: tuple[str, bool], op: str) -> str:
        patterns = _patterns
        mode = {"/": "first", "//": "all", "/#": "prefix", "/%": "suffix"}[op]
        text, amp = repl
        sh = self.state.shopt
        if not amp:
            text = text.replace("\\&", "&").replace("\\\\", "\\") if "\\" in text else text
            # nocasematch covers ${x/p/r} (not ${x#p}); extended groups need extglob
            return patterns.replace(v, pat, text, mode, extglob=sh["extglob"], nocase=sh["nocasematch"])
        return _replace_amp(v, pat, _AmpRepl(text), mode, sh["nocasematch"], sh["extglob"])

    def case_mod(self, v: str, op: str, pat: str) -> str:
        if not v:
            return v
        if not v.isascii() and self.byte_locale():
            return char_view(self._case_mod(byte_view(v), op, pat))
        return self._case_mod(v, op, pat)

    def _case_mod(self, v: str, op: str, pat: str) -> str:
        up = op[0] == "^"
        allc = len(op) == 2
        if op[0] == "~":  # ${x~} / ${x~~}: toggle case (undocumented bash operators)
            # (per character, as towupper/towlower: ß and İ stay one character)
            def swap(c: str) -> str:
                return _lower(c) if c.isupper() else _upper(c) if c.islower() else c
            if not pat or pat == "?":
                return "".join(map(swap, v)) if allc else swap(v[0]) + v[1:]
            return "".join(swap(c) if (allc or i == 0) and self.fnmatch(c, pat, nocase=False, extglob=True) else c
                           for i, c in enumerate(v))
        conv = _upper if up else _lower  # towupper/towlower: one character stays one
        if not pat or pat == "?":
            if allc:
                return conv(v)
            return conv(v[0]) + v[1:]
        out = []
        for i, c in enumerate(v):
            if (allc or i == 0) and self.fnmatch(c, pat, nocase=False, extglob=True):
                c = conv(c)
            out.append(c)
        return "".join(out)

    def glob(self, pat: str) -> list[str] | None:
        """Expand a glob pattern; None means "keep the word as is"."""
        patterns = _patterns
        sh = self.state.shopt
        # Assigning a non-empty GLOBIGNORE turns dotglob on for good (until GLOBIGNORE is
        # unset), and the list always hides . and ..; bash does it on assignment, we on use.
        ignore = self.get_scalar("GLOBIGNORE")
        if ignore:
            sh["dotglob"] = True
            self.state.globignore_dotglob = True
        elif ignore is None and getattr(self.state, "globignore_dotglob", False):
            sh["dotglob"] = False
            self.state.globignore_dotglob = False
        if not patterns.has_magic(pat, extglob=sh["extglob"]):
            # bash's glob_pattern_p: a `[` without its `]` (`[`, `a[b`) or only escaped
            # characters (x='a\*'; echo $x) make no pattern: the word stays as it is, and
            # nullglob/failglob do not apply
            return None
        try:
            res = patterns.glob(self.fs, pat, self.state.cwd, dotglob=sh["dotglob"],
                                nocaseglob=sh["nocaseglob"], globstar=sh["globstar"], extglob=sh["extglob"],
                                skipdots=sh["globskipdots"])
            if ignore and res:
                res = patterns.globignore(res, ignore, extglob=sh["extglob"], nocase=sh["nocaseglob"])
        except LimitExceeded:
            raise
        except Exception:
            res = []
        if res:
            return res
        if sh["nullglob"]:
            return []
        if sh["failglob"]:
            raise self.reported_error(f"no match: {patterns.unescape(pat)}")
        # no match: the word stays as it was, backslashes that came from an expansion
        # included (x='a\*'; echo $x prints a\*), so the caller keeps its own text
        return None

    def prompt_expand(self, s: str) -> str:
        res = self.prompt_decode(s)
        if self.state.shopt.get("promptvars") and ("$" in res or "`" in res):
            # promptvars (on by default): the decoded prompt then undergoes parameter, command
            # and arithmetic expansion as if double-quoted
            from .parser import parse_word
            try:
                res = self.expand_str(parse_word(res, dq=True))
            except ParseError:
                pass
        return res

    def prompt_decode(self, s: str) -> str:
        """A prompt string's backslash escapes (\\u \\w \\$ ...), before its expansions."""
        if "\\" not in s:
            return s
        out = []
        i = 0
        while i < len(s):
            c = s[i]
            if c == "\\" and i + 1 < len(s):
                d = s[i + 1]
                i += 2
                if d == "u":
                    out.append(self.info.user)
                elif d in "hH":
                    out.append(self.info.hostname if d == "H" else self.info.hostname.split(".")[0])
                elif d == "w":
                    out.append(self.tilde_short(self.state.cwd))
                elif d == "W":
                    cw = self.state.cwd
                    out.append(cw if cw == "/" else self.tilde_short(cw).rsplit("/", 1)[-1])
                elif d == "$":
                    out.append("#" if self.info.uid == 0 else "$")
                elif d == "s":
                    out.append("bash")
                elif d == "n":
                    out.append("\n")
                elif d == "\\":
                    out.append("\\")
                elif d in "[]":
                    pass
                elif d == "e":
                    out.append("\x1b")
                elif d == "a":
                    out.append("\x07")
                elif d == "r":
                    out.append("\r")
                elif d in "vV":
                    ver = self.get_scalar("BASH_VERSION") or "5.2.15(1)-release"
                    full = ver.split("(")[0]
                    out.append(full if d == "V" else ".".join(full.split(".")[:2]))
                elif d == "j":
                    # (bash's count_all_jobs: the jobs of this shell not yet ended)
                    jt = getattr(self, "jobs", None)
                    n = 0
                    if jt is not None:
                        from .jobs import job_view
                        n = sum(not j.done.is_set() for j in jt.visible(job_view(self, listing=True)))
                    out.append(str(n))
                elif d == "!":
                    out.append("1")  # the history number: no history in a non-interactive shell
                elif d == "#":
                    out.append("0")
                elif d == "l":
                    out.append("tty")  # basename of the terminal device; none here
                elif d in "01234567" and i + 1 < len(s) and s[i] in "01234567" and s[i + 1] in "01234567":
                    out.append(chr(int(d + s[i:i + 2], 8) & 0xFF))
                    i += 2
                elif d in "dtT@AD":
                    fmt = {"d": "%a %b %d", "t": "%H:%M:%S", "T": "%I:%M:%S", "@": "%I:%M %p",
                           "A": "%H:%M"}.get(d)
                    if d == "D":
                        if i < len(s) and s[i] == "{":
                            j = s.find("}", i + 1)
                            j = len(s) if j < 0 else j
                            fmt = s[i + 1:j] or "%X"
                            i = j + 1
                        else:
                            out.append("\\D")
                            continue
                    out.append(time.strftime(fmt or "%X", time.localtime()))
                else:
                    out.append("\\" + d)
                continue
            out.append(c)
            i += 1
        return "".join(out)

    # ================================================================== declare -p helpers
    def array_literal(self, var: Var) -> str:
        from .builtins_compat import quote_declare
        val = var.value if type(var.value) is dict else ({} if var.value is None else {0: var.value})
        if var.attrs & ASSOC:
            items = [f"[{_assoc_key(k)}]={quote_declare(self.qv(val[k]))}" for k in assoc_keys(val)]
            return "(" + " ".join(items) + (" )" if items else ")")
        items = [f"[{k}]={quote_declare(self.qv(val[k]))}" for k in sorted(val)]
        return "(" + " ".join(items) + ")"

    def listed_vars(self, decl: bool = False) -> dict[str, Var]:
        """The variables `set`, `declare -p`, `readonly` and `export` list: the visible ones
        plus the dynamic ones bash lists with a value (BASH_EXECUTION_STRING, SHELLOPTS, ...;
        ``decl``: `declare`'s listing, which also shows BASH_ARGV0 and COMP_WORDBREAKS)."""
        items = self.state.visible()
        if self.dash:
            return items
        for n in _LISTED_DYNAMIC + (_DECL_LISTED if decl else ()):
            if n not in items:
                if (n == "BASH_ARGC" or n == "BASH_ARGV") and self.argv_base is None \
                        and not self.state.shopt.get("extdebug"):
                    v: Var | None = Var({}, ARRAY)  # (filled on first use: not by a listing)
                elif n == "DIRSTACK" and not self.state.dirstack:
                    v = Var({}, ARRAY)  # (bash fills it when it is used, or by pushd)
                elif n == "BASH_ALIASES" or n == "BASH_CMDS":
                    # a listing shows what bash last computed: nothing, unless a script
                    # read them first (the common case; such reads are not tracked)
                    v = Var({}, ASSOC)
                elif n == "BASH_ARGV0" or n == "COMP_WORDBREAKS":
                    v = Var(None)  # (listed as declared, without a value, until used)
                else:
                    v = self._dynamic(n)
                if v is not None:
                    items[n] = v
        if decl:
            # bash's declare lists its value-less dynamic variables by name (`declare -i RANDOM`)
            for n, attrs in _DECL_VALUELESS:
                if n not in items and n not in self.unspecial:
                    items[n] = Var(None, attrs)
        if "PIPESTATUS" not in items and "PIPESTATUS" not in self.unspecial and self.budget.commands > 1:
            items["PIPESTATUS"] = self._dynamic("PIPESTATUS")  # (once a command has run)
        if "_" not in items:
            items["_"] = Var(self.state.last_arg)
        return items

    def set_names(self) -> list[str]:
        """The names of set variables, sorted, as ``${!prefix@}`` and ``compgen -v`` list
        them: the shell's variables plus the dynamic ones bash keeps in its table."""
        st = self.state
        names = set(st.all_names())
        names.update(_TABLE_DYNAMIC)
        if self.exec_string is not None:
            names.add("BASH_EXECUTION_STRING")
        out = []
        for n in names:
            v = st.find(n)
            if v is None and n in DYNAMIC and not self.dash and n not in self.unspecial:
                if n == "FUNCNAME" and not self.funcstack:
                    continue
                out.append(n)
            elif v is not None and v.value is not None:
                out.append(n)
        return sorted(out)

    def declare_line(self, name: str, var: Var) -> str:
        from .builtins_compat import quote_declare
        flags = self.attr_letters(var) or "-"
        if var.value is None:
            return f"declare -{flags} {name}"
        if type(var.value) is dict or var.attrs & (ARRAY | ASSOC):
            return f"declare -{flags} {name}={self.array_literal(var)}"
        return f"declare -{flags} {name}={quote_declare(self.qv(var.value))}"

    # ================================================================== command substitution etc.
    def relocated(self, body: N.Script) -> N.Script:
        """``body`` of a ``$( … )`` / ``<( … )`` numbered as bash runs it: from the line of
        the command being run, one line per newline-separated command line of the body
        (bash re-reads the text it printed back, so blank lines and comments do not count)."""
        items = body.items
        if not items:
            return body
        base = self.lineno
        if _line_of_cmd(items[0].cmd) == base and not any(it.newline for it in items[:-1]):
            return body  # one line, on the command's own line: nothing moves
        key = (id(body), base)
        hit = _RELOCATED.get(key)
        if hit is not None and hit[0] is body:
            return hit[1]
        out = []
        group = 0
        delta = base - body.line if body.raw and body.line else None
        for it in items:
            if delta is None:
                first = _line_of_cmd(it.cmd)
                delta = base + group - first if first else 0
            out.append(N.shift_lines(it, delta))
            if it.newline and not body.raw:
                group += 1
                delta = None
        new = N.Script(tuple(out), base)  # type: ignore[arg-type]
        if len(_RELOCATED) > 2048:
            _RELOCATED.clear()
        _RELOCATED[key] = (body, new)
        return new

    def command_subst(self, body: N.Script) -> str:
        body = self.relocated(body)
        child = self.fork(cmdsub=True, lazy=True)
        child.xtrace_level = getattr(self, "xtrace_level", 0) + 1
        lim = self.budget.limits.max_variable_bytes
        cap = _SubstCapture(lim)
        child.fds[1] = cap
        items = body.items
        c = items[0].cmd if len(items) == 1 and not items[0].background else None
        if (type(c) is N.Simple and not c.words and not c.assigns and len(c.redirs) == 1
                and c.redirs[0].op == "<" and c.redirs[0].fd in (None, 0)):
            # $(< file): the file's contents, like $(cat file) without running cat
            def copy() -> int:
                src = child.fds.get(0)
                if type(src) is DirInput:
                    return 0  # bash reads a directory as empty here, silently
                while src is not None:
                    chunk = src.read(65536)
                    if not chunk:
                        break
                    cap.write(chunk)
                return 0
            try:
                status = child.with_redirs(c.redirs, copy)
            except ExitShell as e:
                status = e.status
        else:
            child.exec_cmd = exec_candidate(body)
            status = child.run_subshell_script(body)
        self.state.last_status = status
        self.cmdsub_status = status
        self.chld_pending += 1
        data = bytes(cap.buf)
        if cap.truncated:
            self.error("command substitution: output truncated (max_variable_bytes)")
        data = data.rstrip(b"\n")
        if b"\0" in data:
            self.error("warning: command substitution: ignored null byte in input")
            data = data.translate(None, b"\0")
        return data.decode("utf-8", "surrogateescape")

    def process_subst(self, p: N.ProcSub) -> str:
        pipe = Pipe()
        child = self.fork()
        if p.direction == "<":
            child.fds[1] = pipe.writer
            mine = pipe.reader
            theirs = pipe.writer
        else:
            child.fds[0] = pipe.reader
            mine = pipe.writer
            theirs = pipe.reader

        body = self.relocated(p.body)
        items = body.items
        c = items[0].cmd if len(items) == 1 and not items[0].background else None
        cat = (p.direction == "<" and type(c) is N.Simple and not c.words and not c.assigns
               and len(c.redirs) == 1 and c.redirs[0].op == "<" and c.redirs[0].fd in (None, 0))

        box = [1]  # (its status, for `wait $!`)

        def target() -> None:
            b = child.budget
            b.bind()  # (a thread of its own: nothing to restore)
            try:
                try:
                    b.watch()  # (the watchdog interrupts it too; unwatched before the close)
                    if p.direction == ">":
                        _await_writer(theirs)
                    box[0] = self._procsub_body(child, c if cat else None, body, theirs)
                finally:
                    b.unwatch()
            except BaseException:
                pass
            finally:
                theirs.close()

        t = threading.Thread(target=target, daemon=True)
        start_thread(t)
        # `$!` is the process substitution's pid, and `wait $!` its status (bash 5.1)
        self.state.last_bg_pid = pid = child.bashpid
        self.last_procsub = (pid, t, box)
        fd = 63
        while fd in self.fds:
            fd -= 1
        self.fds[fd] = mine
        self.procsubs.append((fd, mine, t, p.direction))
        return f"/dev/fd/{fd}"

    @staticmethod
    def _procsub_body(child: Interpreter, cat: N.Simple | None, body: N.Script, theirs: Any) -> int:
        if cat is not None:
            # <(< file) is the file's contents, as $(< file) is (bash)
            def copy() -> int:
                src = child.fds.get(0)
                if type(src) is DirInput:
                    return 0
                while src is not None:
                    chunk = src.read(65536)
                    if not chunk:
                        break
                    theirs.write(chunk)
                return 0
            return child.with_redirs(cat.redirs, copy)
        return child.run_subshell_script(body)

    def finish_procsubs(self, mark: int) -> None:
        while len(self.procsubs) > mark:
            fd, stream, t, direction = self.procsubs.pop()
            if self.fds.get(fd) is stream:
                del self.fds[fd]
            if any(v is stream for v in self.fds.values()):
                # `exec 4< <(cmd)` keeps the pipe: the shell owns it from now on
                self.owned.append(stream)
                continue
            stream.close()
            if direction == ">":
                t.join(5)
            else:
                t.join(0.05)

    # ================================================================== running
    def run_script(self, script: N.Script) -> int:
        if not script.items:
            self.state.last_status = 0   # `$()` and the like: 0, not the status before
            return 0
        for item in script.items:
            c = item.cmd
            if item.background:
                self.run_background(c)
            elif type(c) is N.Simple:
                self.exec_simple(c)
            else:
                self.execute(c)
        return self.state.last_status

    def run_subshell_script(self, body: N.Script | N.Command, forked_simple: bool = False) -> int:
        """Run ``body`` (a script, or one command as if it were a script of it) as a
        subshell (this interpreter is already a fork).

        ``forked_simple``: a simple command forked as a pipeline stage or background job,
        where bash's fatal expansion errors keep the top level's 127.
        """
        try:
            try:
                t = type(body)
                if t is N.Script:
                    self.run_script(body)  # type: ignore[arg-type]
                elif t is N.Simple:
                    self.exec_simple(body)  # type: ignore[arg-type]
                else:
                    self.execute(body)  # type: ignore[arg-type]
                if self.chld_pending or self.sig_queue:
                    self.run_pending()
                st = self.state.last_status
            except ExitShell as e:
                # (set -e: 1 even from a forked simple command)
                st = 1 if e.eof and (not forked_simple or self.state.options["errexit"]) else e.status
            except ExpansionError as e:
                self.error(e.message)
                st = 1 if e.status == 127 and (not forked_simple or self.state.options["errexit"]) else e.status
            except (LoopCtl, ReturnFn) as e:
                # `(return 4)` in a function ends the subshell with that status
                st = e.status
            st = self.run_exit_trap(st)
        except BrokenPipeError:
            st = 141
            self.killed_by = 13  # (a builtin's write: bash's subshell dies of SIGPIPE)
        finally:
            self.close_owned()
        return st

    def run_exit_trap(self, st: int) -> int:
        trap = self.state.traps.pop("EXIT", None)
        if trap:
            self.state.last_status = st
            try:
                self.run_string(trap, trap="exit")
            except ExitShell as e:
                # a fatal expansion error in the trap keeps the status the shell was exiting with
                return st if e.eof or e.discard else e.status
            except ReturnFn as e:
                if self.funcstack:
                    return e.status  # run by `exit` in a function: `return N` sets the status
            except LoopCtl:
                pass
        return st

    def close_owned(self) -> None:
        for f in self.owned:
            try:
                f.close()
            except Exception:
                pass
        self.owned = []

    def run_string(self, src: str, *, trap: bool | str = False, name: str | None = None,
                   first_line: int = 0) -> int:
        """Run ``src`` here. ``trap`` is True for a trap's action, or the name bash gives it
        in syntax errors ("exit", "error", "return", "debug": ``bash: exit trap: line 1:``)."""
        try:
            script = _parse_cached(src) if first_line <= 1 else _parse_at_line(src, first_line)
        except ParseError as e:
            if type(trap) is str:
                base = self.err_prefix().split(":", 1)[0]
                ln = max(e.line, 1)
                self.write_err(f"{base}: {trap} trap: line {ln}: {e.message}\n".encode("utf-8", "surrogateescape"))
                if e.message.startswith("syntax error near"):
                    lines = src.split("\n")
                    text = lines[ln - 1] if ln <= len(lines) else src
                    self.write_err(f"{base}: {trap} trap: line {ln}: `{text}'\n".encode("utf-8", "surrogateescape"))
                return 2
            self.error(e.message)
            if not trap:
                self.state.last_status = 2
            return 2
        saved = self.state.last_status
        saved_ps = self.pipestatus
        saved_cmd = self.current_command
        if trap:
            if not self.trap_level:
                self.trap_command = saved_cmd  # what BASH_COMMAND shows while the trap runs
            self.trap_level += 1
            try:
                self.run_script(script)
            except ExitShell as e:
                # an arithmetic error or a readonly assignment in a DEBUG, ERR or signal trap ends
                # only the trap: the command goes on (bash); it had ended the whole line, so a
                # session whose DEBUG trap failed so could run nothing any more
                if not (e.discard and not e.eof and trap in (True, "debug", "error")):
                    raise
                self.state.last_status = e.status
            finally:
                self.trap_level -= 1
        else:
            self.run_script(script)
        st = self.state.last_status
        if trap:
            self.state.last_status = saved
            self.pipestatus = saved_ps
            self.current_command = saved_cmd  # a trap's own commands never become BASH_COMMAND
        return st

    def execute(self, cmd: N.Command) -> int:
        t = type(cmd)
        if t is N.Simple:
            return self.exec_simple(cmd)
        h = _HANDLERS.get(t)
        if h is None:  # pragma: no cover
            raise ExpansionError(f"unsupported node {t.__name__}")
        return h(self, cmd)

    def set_status(self, st: int) -> int:
        self.state.last_status = st
        return st

    def after_failure(self, st: int) -> None:
        """errexit and the ERR trap after a command that failed outside a condition."""
        fresh = self.fresh_err_trap
        if fresh is not None:
            self.fresh_err_trap = None
        if st != 0 and not self.errexit_off:
            self.run_err_trap(fresh)
            if self.state.options["errexit"]:
                x = ExitShell(st)
                x.errexit = True  # type: ignore[attr-defined]  # (see _eval_frame)
                raise x

    def run_err_trap(self, fresh: str | None = None) -> None:
        trap = self.state.traps.get("ERR")
        # a function call fires only an ERR trap that was set before it (bash); a forked
        # simple command's child never runs it
        if (trap and not self.in_trap and trap is not fresh
                and not (self.forked_simple and not self.funcstack)):
            self.in_trap = True
            try:
                # bash numbers an ERR trap's lines from the failing command's line
                self.run_string(trap, trap="error", first_line=self.lineno)
            finally:
                self.in_trap = False

    # ------------------------------------------------------------------ compound commands
    def with_redirs(self, redirs: tuple[N.Redir, ...], fn: Callable[[], int], redir_line: bool = True,
                    report: bool = True) -> int:
        """Run ``fn`` with ``redirs`` applied. ``redir_line``: a compound command's redirection
        (errors name the redirection's line, and errexit/ERR run here unless ``report`` is
        False because the caller runs them)."""
        if not redirs:
            return fn()
        if redir_line:
            # bash's stdin_redir: a control structure's redirections decide whether an
            # asynchronous command started later keeps the shell's stdin (`while read l; do
            # cmd & done < f`) or gets /dev/null; set here and, as in bash, not put back
            self.stdin_redir = any(r.op in _STDIN_OPS and r.fd in (None, 0) and r.fd_var is None
                                   for r in redirs)
        saved = self.fds
        opened: list[Any] = []
        psmark = len(self.procsubs)
        # bash reports a failed redirection of a compound command (`done < missing`,
        # `} > /`) on the redirection's own line
        saved_line = self.lineno
        ln = getattr(redirs[0].target, "line", 0) if redir_line else 0
        if redir_line:
            for r in redirs:
                if type(r.target) is N.HereDoc:
                    # bash has read the here-document by then: the line of its delimiter
                    b = r.target.body
                    ln = b.line + b.text.count("\n")
        if ln:
            self.lineno = ln
        try:
            self.fds = self.apply_redirs(redirs, dict(saved), opened)
        except RedirError as e:
            self.fds = saved
            for f in opened:
                _close(f)
            if e.expansion is not None and redir_line:
                raise expansion_exit(e.expansion) from None
            # the ERR trap sees the line of the last command bash numbered, not the redirection's
            self.lineno = saved_line
            st = self.set_status(e.status)
            if redir_line and report:
                self.after_failure(st)
            return st
        self.lineno = saved_line
        try:
            return fn()
        finally:
            cur = self.fds
            self.fds = saved
            for r in redirs:
                if r.fd_var is not None and r.target != "-":
                    # bash leaves a {var}> descriptor open after the command
                    v = self.get_scalar(r.fd_var)
                    if v is not None and v.isdigit() and int(v) in cur:
                        if self.fds is saved:
                            self.fds = saved = dict(saved)
                        f = cur[int(v)]
                        saved[int(v)] = f
                        if f in opened:
                            opened.remove(f)
                            self.owned.append(f)
            for f in opened:
                _close(f)
            if len(self.procsubs) > psmark:
                # `{ ...; } > >(tac)`: the process substitution gets its EOF and finishes
                # when the command is done
                self.finish_procsubs(psmark)

    def exec_group(self, cmd: N.Group) -> int:
        return self.with_redirs(cmd.redirs, lambda: self.run_script(cmd.body))

    def exec_coproc(self, cmd: N.Coproc) -> int:
        """``coproc``: a background job whose stdin/stdout are pipes to this shell, whose
        ends (read, write) are ``NAME[0]``/``NAME[1]``; its pid is ``NAME_PID`` and ``$!``."""
        from .jobs import start_job
        self.lineno = cmd.line or self.lineno
        name = cmd.name
        old = self.state.find(name)
        if old is not None and old.attrs & READONLY:
            self.error(f"{name}: readonly variable")
            return self.set_status(1)
        to_child = Pipe()
        from_child = Pipe()
        job = start_job(self, cmd.body, {0: to_child.reader, 1: from_child.writer}, shown=cmd)
        if job is None:
            to_child.close()
            from_child.close()
            return self.state.last_status
        child = job.child
        if child is not None:
            # killing the job breaks its input too: an in-process coprocess blocked reading
            # it (`coproc cat; kill $COPROC_PID; wait`) sees end-of-file and ends
            child.budget.track_pipe(to_child.writer)
        # bash puts the read end on 63 and the write end on 60 (the highest free below)
        rfd = 63
        while rfd in self.fds:
            rfd -= 1
        wfd = 60
        while wfd in self.fds or wfd == rfd:
            wfd -= 1
        self.fds[rfd] = from_child.reader
        self.fds[wfd] = to_child.writer
        # owned: `exec {NAME[1]}>&-` closes the write end (the coprocess sees end of input),
        # and the end of the run closes both, as bash's exit would
        self.owned.extend((from_child.reader, to_child.writer))
        self.coproc_fds = {**self.coproc_fds, rfd: from_child.reader, wfd: to_child.writer}
        self.state.scopes[0][name] = Var({0: str(rfd), 1: str(wfd)}, ARRAY)
        self.state.scopes[0][name + "_PID"] = Var(str(job.pid))
        return self.set_status(0)

    def exec_subshell(self, cmd: N.Subshell) -> int:
        self.lineno = cmd.line or self.lineno

        outer_err = self.fds.get(2)

        def run() -> int:
            child = self.fork(lazy=True)
            child.loop_depth = 0  # `(break)` in a loop: the subshell has no loop
            if not cmd.redirs:
                child.stdin_redir = False  # (bash: a subshell decides by its own redirections)
            child.exec_cmd = exec_candidate(cmd.body)
            st = child.run_subshell_script(cmd.body)
            self.chld_pending += 1
            if self.jobs is not None:
                _notify_job_deaths(self)
            sig = child.killed_by
            job = getattr(self, "_bg_job", None)
            if sig and not self.in_cmdsub and job is not None and getattr(self, "job_cmd", None) is cmd:
                # `( … ) &`: the job is this subshell, reported by the shell that waits for it
                self.killed_by = sig
            elif sig and not self.in_cmdsub and (job is None or not (job.killed or self.budget.cancelled)):
                from .unparse import format_command
                self.report_signaled(child.exec_pid or child.bashpid, sig, lambda: format_command(cmd),
                                     outer_err)
            return self.set_status(st)
        st = self.with_redirs(cmd.redirs, run, report=False)
        self.pipestatus = [st]
        self.after_failure(st)
        return st

    def cond_run(self, script: N.Script) -> int:
        self.errexit_off += 1
        try:
            return self.run_script(script)
        finally:
            self.errexit_off -= 1

    def exec_if(self, cmd: N.If) -> int:
        def run() -> int:
            for cond, body in cmd.clauses:
                if self.cond_run(cond) == 0:
                    return self.run_script(body)
            if cmd.else_body is not None:
                return self.run_script(cmd.else_body)
            return self.set_status(0)
        return self.with_redirs(cmd.redirs, run)

    def _loop_pass(self, body: N.Script) -> tuple[int, bool]:
        """Run a while/until/for loop body once: its status, and whether a ``break`` ends the
        loop. ``break N``/``continue N`` with N > 1 go on to the enclosing loop."""
        try:
            for item in body.items:
                c = item.cmd
                if item.background:
                    self.run_background(c)
                elif type(c) is N.Simple:
                    self.exec_simple(c)
                else:
                    self.execute(c)
            return self.state.last_status, False
        except LoopCtl as lc:
            if lc.n > 1:
                lc.n -= 1
                raise
            # the loop's status is that of `break`/`continue` itself
            return lc.status, lc.kind == "break"

    def exec_while(self, cmd: N.While) -> int:
        def run() -> int:
            st = 0
            self.loop_depth += 1
            budget = self.budget
            state = self.state
            cond = cmd.cond.items
            body = cmd.body.items
            until = cmd.until
            simple = N.Simple
            try:
                while True:
                    n = budget.iterations = budget.iterations + 1  # charge_iteration(), inlined
                    if n > budget.iter_cap or budget._cancelled or (
                            (d := budget.deadline) is not None and _monotonic() >= d):
                        budget.over_iteration()
                    # cond_run and _loop_pass, inlined
                    try:
                        # (a `break`/`continue` in the condition is this loop's: `while break`)
                        self.errexit_off += 1
                        try:
                            for item in cond:
                                c = item.cmd
                                if item.background:
                                    self.run_background(c)
                                elif type(c) is simple:
                                    self.exec_simple(c)
                                else:
                                    self.execute(c)
                        finally:
                            self.errexit_off -= 1
                        if (state.last_status == 0) == until:
                            break
                        for item in body:
                            c = item.cmd
                            if item.background:
                                self.run_background(c)
                            elif type(c) is simple:
                                self.exec_simple(c)
                            else:
                                self.execute(c)
                        st = state.last_status
                    except LoopCtl as lc:
                        if lc.n > 1:
                            lc.n -= 1
                            raise
                        # the loop's status is that of `break`/`continue` itself
                        st = lc.status
                        if lc.kind == "break":
                            break
            finally:
                self.loop_depth -= 1
            return self.set_status(st)
        return self.with_redirs(cmd.redirs, run)

    def report_line(self) -> int:
        """bash's line_number where it reports a job's end: the innermost for/select/case
        or function definition's line; at the top level, where the parser stopped reading
        the command line that runs (a multi-line `if … fi`: its `fi`)."""
        if self.line_frame:
            return self.line_frame
        items, item = self.top_items, self.top_item
        if items is not None:
            seen = False
            for it in items:
                seen = seen or it is item
                if seen and it.end_line and (it.newline or it is items[-1]):
                    return it.end_line + getattr(self, "line_shift", 0)
        return self.lineno

    def _frame_line(self) -> int:
        """The line bash's commands fall back to inside a function: its definition's."""
        if not self.funcstack:
            return 0
        f = self.state.functions.get(self.funcstack[-1][0])
        return getattr(f, "line", 0) or 0

    def exec_for(self, cmd: N.For) -> int:
        def run() -> int:
            self.lineno = cmd.line or self.lineno
            if not _NAME_RE.match(cmd.var):
                # bash checks the name when the loop runs: `for 1 in a` fails with status 1,
                # before the loop sets the line number (the top level's is where the parser
                # stopped; a function's, its definition line)
                self.lineno = self._frame_line() or cmd.end_line or cmd.line or self.lineno
                self.error(f"`{cmd.var}': not a valid identifier")
                if self.state.options["posix"]:
                    raise ExitShell(2)  # (bash: a fatal error in posix mode, ERREXIT)
                return self.set_status(1)
            if cmd.words is None:
                items = list(self.state.positional)
            else:
                items = self._compound_words(cmd.words)
            st = 0
            self.loop_depth += 1
            saved_frame = self.line_frame
            self.line_frame = cmd.line  # (bash's line_number for its body: see report_line)
            budget = self.budget
            try:
                xt = self.state.options["xtrace"]
                wtext = None
                ref = self.state.find(cmd.var)
                if ref is not None and not ref.attrs & NAMEREF:
                    ref = None
                name = cmd.var
                state = self.state
                opts = state.options
                body = cmd.body.items
                simple = N.Simple
                for it in items:
                    n = budget.iterations = budget.iterations + 1  # charge_iteration(), inlined
                    if n > budget.iter_cap or budget._cancelled or (
                            (d := budget.deadline) is not None and _monotonic() >= d):
                        budget.over_iteration()
                    if state.traps:
                        self.lineno = cmd.line or self.lineno
                        self._debug_compound(lambda: f"for {cmd.var} in " + (
                            " ".join(w.text for w in cmd.words) if cmd.words is not None else '"$@"'))
                    if xt:
                        if wtext is None:
                            wtext = " ".join(w.text for w in cmd.words) if cmd.words is not None else '"$@"'
                        self.xtrace_raw(f"for {cmd.var} in {wtext}")
                    if ref is not None:
                        # a nameref control variable is pointed at each word in turn (bash)
                        if not _NAME_RE.match(it.split("[", 1)[0]) or ("[" in it and not it.endswith("]")):
                            self.error(f"`{it}': not a valid identifier")
                            return self.set_status(1)
                        if ref.attrs & READONLY:
                            self.error(f"{cmd.var}: readonly variable")
                            return self.set_status(1)
                        ref.value = it
                    else:
                        # set_var's fast path, inlined: a plain variable takes the value as is
                        v = state.find(name)
                        if v is not None and not v.attrs and type(v.value) is not dict and not opts["allexport"]:
                            v.value = it
                        else:
                            try:
                                self.set_var(name, it)
                            except VarError as e:
                                # bash ends the loop with status 1 and goes on after it
                                self.error(e.message)
                                self.set_status(1)
                                self.after_failure(1)
                                return 1
                    # _loop_pass, inlined
                    try:
                        for item in body:
                            c = item.cmd
                            if item.background:
                                self.run_background(c)
                            elif type(c) is simple:
                                self.exec_simple(c)
                            else:
                                self.execute(c)
                        st = state.last_status
                    except LoopCtl as lc:
                        if lc.n > 1:
                            lc.n -= 1
                            raise
                        # the loop's status is that of `break`/`continue` itself
                        st = lc.status
                        if lc.kind == "break":
                            break
            finally:
                self.loop_depth -= 1
                self.line_frame = saved_frame
            return self.set_status(st)
        return self.with_redirs(cmd.redirs, run)

    def exec_arith_for(self, cmd: N.ArithFor) -> int:
        def run() -> int:
            self.lineno = cmd.line or self.lineno
            xt = self.state.options["xtrace"]
            try:
                if xt and cmd.init is None:
                    self.xtrace_raw(self._for_trace(None))
                if cmd.init is not None:
                    if self.state.traps:  # no closure per iteration unless a trap is set
                        self._debug_compound(lambda: f"(({cmd.init.text.lstrip()}))")  # type: ignore[union-attr]
                    if xt:
                        self.xtrace_raw(self._for_trace(cmd.init))
                    self._dparen(cmd.init)
            except ExpansionError as e:
                _arith_for_err(self, e)
                return self.set_status(1)
            st = 0
            self.loop_depth += 1
            saved_frame = self.line_frame
            self.line_frame = cmd.line  # (bash's line_number for its body: see report_line)
            budget = self.budget
            try:
                while True:
                    n = budget.iterations = budget.iterations + 1  # charge_iteration(), inlined
                    if n > budget.iter_cap or budget._cancelled or (
                            (d := budget.deadline) is not None and _monotonic() >= d):
                        budget.over_iteration()
                    try:
                        if cmd.cond is not None:
                            self.lineno = cmd.line or self.lineno
                            if self.state.traps:  # no closure per iteration unless a trap is set
                                self._debug_compound(lambda: f"(({cmd.cond.text.lstrip()}))")  # type: ignore[union-attr]
                        if xt:
                            self.xtrace_raw(self._for_trace(cmd.cond))
                        if cmd.cond is not None and self._dparen(cmd.cond) == 0:
                            break
                    except ExpansionError as e:
                        _arith_for_err(self, e)
                        st = 1
                        break
                    st, brk = self._loop_pass(cmd.body)
                    if brk:
                        break
                    if cmd.step is not None:
                        try:
                            self.lineno = cmd.line or self.lineno
                            if self.state.traps:  # no closure per iteration unless a trap is set
                                self._debug_compound(lambda: f"(({cmd.step.text.lstrip()}))")  # type: ignore[union-attr]
                            if xt:
                                self.xtrace_raw(self._for_trace(cmd.step))
                            self._dparen(cmd.step)
                        except ExpansionError as e:
                            _arith_for_err(self, e)
                            st = 1
                            break
                    elif xt:
                        self.xtrace_raw(self._for_trace(None))
            finally:
                self.loop_depth -= 1
                self.line_frame = saved_frame
            return self.set_status(st)
        return self.with_redirs(cmd.redirs, run)

    def _compound_words(self, words: tuple[N.Word, ...]) -> list[str]:
        """A compound command's own words (for/select lists): an expansion error there
        (failglob, arithmetic, ${x:?}) is reported here and ends the command line as in a
        simple command."""
        try:
            return self.expand_words(words)
        except ExpansionError as e:
            self.error(e.message)
            raise expansion_exit(e) from None

    def exec_select(self, cmd: N.Select) -> int:
        def run() -> int:
            if not _NAME_RE.match(cmd.var):
                self.lineno = self._frame_line() or cmd.end_line or cmd.line or self.lineno
                self.error(f"`{cmd.var}': not a valid identifier")
                return self.set_status(1)  # (not fatal in posix mode, unlike for)
            self.lineno = cmd.line or self.lineno
            if self.state.options["xtrace"]:
                # (bash's xtrace_print_select_command_head: once, before the words expand)
                self.xtrace_raw(f"select {cmd.var} in " + (
                    " ".join(w.text for w in cmd.words) if cmd.words is not None else '"$@"'))
            items = list(self.state.positional) if cmd.words is None else self._compound_words(cmd.words)
            if not items:
                return self.set_status(0)
            st = 0
            self.loop_depth += 1
            saved_frame = self.line_frame
            self.line_frame = cmd.line  # (bash's line_number for its body: see report_line)
            menu = True
            try:
                if self.state.traps:  # no closure per iteration unless a trap is set
                    self._debug_compound(lambda: f"select {cmd.var} in " + (
                        " ".join(w.text for w in cmd.words) if cmd.words is not None else '"$@"'))
                while True:
                    self.budget.charge_iteration()
                    if menu:
                        # bash lists the items first and again only after an empty reply
                        lines = "".join(f"{i + 1}) {it}\n" for i, it in enumerate(items))
                        self.write_err(lines.encode())
                        menu = False
                    ps3 = self.get_scalar("PS3")
                    self.write_err((ps3 if ps3 is not None else "#? ").encode())
                    line = self.read_line(self.fds.get(0))
                    if line is None:
                        # at end of input bash ends the line on stdout and the loop fails
                        # (a closed stdout, `>&-`, is no error of select's: it was an
                        # internal error, EBADF)
                        try:
                            self.write_out(b"\n")
                        except (OSError, ValueError):
                            pass
                        st = 1
                        break
                    reply = line.rstrip("\n")
                    self.set_var("REPLY", reply)
                    if reply == "":
                        menu = True
                        continue
                    try:
                        n = int(reply.strip())
                    except ValueError:
                        n = 0
                    try:
                        self.set_var(cmd.var, items[n - 1] if 1 <= n <= len(items) else "")
                    except VarError as e:
                        # (as `for`: the loop ends with status 1, the script goes on)
                        self.error(e.message)
                        return self.set_status(1)
                    try:
                        st = self.run_script(cmd.body)
                    except LoopCtl as lc:
                        if lc.n > 1:
                            lc.n -= 1
                            raise
                        st = 0  # `break`/`continue` succeed
                        if lc.kind == "break":
                            break
            finally:
                self.loop_depth -= 1
                self.line_frame = saved_frame
            return self.set_status(st)
        return self.with_redirs(cmd.redirs, run)

    def exec_case(self, cmd: N.Case) -> int:
        def run() -> int:
            saved_frame = self.line_frame
            self.line_frame = cmd.line  # (bash's line_number for its arms; left as is when an
            # error or break/return leaves it: the loop, function or next top-level command resets it)
            self.lineno = cmd.line or self.lineno
            if self.state.traps:  # no closure per iteration unless a trap is set
                self._debug_compound(lambda: f"case {cmd.word.text or self._word_src(cmd.word)} in ")  # sic
            try:
                w = self.expand_str(cmd.word, tilde=True)
            except ExpansionError as e:
                self.error(e.message)
                raise expansion_exit(e) from None
            if self.state.options["xtrace"]:
                # bash traces the case word as written, not expanded
                self.xtrace_raw(f"case {cmd.word.text or self._word_src(cmd.word)} in")
            arms = cmd.arms
            i = 0
            st = 0
            matched_any = False
            while i < len(arms):
                arm = arms[i]
                hit = False
                for pw in arm.patterns:
                    try:
                        pat = self.expand_pattern(pw)
                    except ExpansionError as e:
                        self.error(e.message)
                        raise expansion_exit(e) from None
                    if self.fnmatch(w, pat):
                        hit = True
                        break
                if hit:
                    matched_any = True
                    # an empty arm gives 0, not the status left by the case word
                    st = self.run_script(arm.body) if arm.body.items else 0
                    term = arm.terminator
                    while term == ";&" and i + 1 < len(arms):
                        i += 1
                        st = self.run_script(arms[i].body) if arms[i].body.items else 0
                        term = arms[i].terminator
                    if term == ";;&":
                        i += 1
                        continue
                    break
                i += 1
            if not matched_any:
                st = 0
            self.line_frame = saved_frame
            return self.set_status(st)
        return self.with_redirs(cmd.redirs, run)

    def exec_funcdef(self, cmd: N.FuncDef) -> int:
        name = cmd.name
        if any(c in name for c in "$`'\"\\"):
            self.lineno = cmd.line + cmd.source.count("\n")  # bash: the definition's last line
            self.error(f"`{name}': not a valid identifier")
            return self.set_status(1)
        if name in SPECIAL_BUILTINS and self.state.options["posix"]:
            # POSIX mode: a special builtin cannot become a function; fatal for bash -c
            self.lineno = cmd.line + cmd.source.count("\n")
            self.error(f"`{name}': is a special builtin")
            raise ExitShell(2)
        if name in self.state.func_readonly:
            self.lineno = cmd.line + cmd.source.count("\n")  # (as above: the last line)
            self.error(f"{name}: readonly function")
            return self.set_status(1)
        if self.state.functions.get(name) is not cmd:
            self.grow(FUNC_COST + FUNC_PER_CHAR * len(cmd.source))
        self.state.functions[name] = cmd
        src = self.source_stack[-1] if self.source_stack else (self.script_name if self.script_name != "bash" else None)
        if src is not None:
            self.state.func_sources[name] = src
        elif name in self.state.func_sources:
            del self.state.func_sources[name]
        return self.set_status(0)

    def exec_arith_cmd(self, cmd: N.ArithCmd) -> int:
        if cmd.redirs:
            st = self.with_redirs(cmd.redirs, lambda: self._arith_cmd(cmd), report=False)
        else:
            st = self._arith_cmd(cmd)
        self.pipestatus = [st]
        self.after_failure(st)
        return st

    def _dparen(self, w: N.Word) -> int:
        """A for (( )) clause."""
        self.in_dparen = True
        try:
            return self.arith_expand(w)
        finally:
            self.in_dparen = False

    def _arith_cmd(self, cmd: N.ArithCmd) -> int:
        self.lineno = cmd.line or self.lineno
        self.budget.charge_command()
        if self.dash:
            # dash reads `((x++))` as a subshell in a subshell running the command `x++`
            first = (cmd.expr.text.split() or [""])[0]
            self.error(f"{first}: not found")
            return 127
        if self.state.traps or self.err_hidden:
            self._debug_compound(lambda: f"(({cmd.expr.text}))")
        if self.state.options["xtrace"]:
            self.xtrace_raw("(( " + self.expand_dq(cmd.expr) + " ))")
        self.in_dparen = True
        try:
            v = self.arith_expand(cmd.expr)
            self.in_dparen = False
        except ExpansionError as e:
            self.in_dparen = False
            if e.status == 127 and e.message.endswith(": unbound variable") or not (
                    getattr(e, "subst", False) or e.message.endswith(": readonly variable")):
                # set -u, or a bad substitution in the text (named with the whole expression)
                self.error(e.message)
                raise expansion_exit(e) from None
            self.error(_arith_for_msg(e.message, getattr(e, "subscript", False)))
            if getattr(e, "subscript", False):
                raise expansion_exit(e) from None
            return self.set_status(1)
        st = 0 if v != 0 else 1
        self.state.last_status = st
        return st

    def exec_cond(self, cmd: N.Cond) -> int:
        if self.dash:
            # dash (/bin/sh) has no [[: it looks for a command of that name
            self.lineno = cmd.line or self.lineno
            self.error("[[: not found")
            st = self.set_status(127)
            self.after_failure(st)
            return st

        def run() -> int:
            self.lineno = cmd.line or self.lineno
            self.budget.charge_command()
            if self.state.traps or self.err_hidden:
                from .unparse import format_command
                self._debug_compound(lambda: format_command(cmd))
            try:
                r = self.eval_cond(cmd.expr)
            except _CondError as e:
                if e.args[0]:  # an invalid =~ regex: status 2 and no message, as bash
                    self.error(e.args[0])
                return self.set_status(2)
            except ExpansionError as e:
                if e.fatal and "unbound" in e.message:
                    raise
                if getattr(e, "subst", False):
                    # a $((...)) in a [[ word fails like in any command word
                    self.error(e.message)
                    raise ExitShell(e.status, e.discard) from None
                if not getattr(e, "arith", False):
                    # a bad substitution (or a fatal subscript error) in a word: as in any
                    # command's words, the line is dropped
                    self.error(e.message)
                    raise expansion_exit(e) from None
                self.error(f"[[: {e.message}" if "syntax error" in e.message or "expression" in e.message
                           or "division" in e.message or "value too great" in e.message or "invalid" in e.message else e.message)
                return self.set_status(1 if "syntax" in e.message or "division" in e.message
                                       or "value too great" in e.message or "invalid" in e.message else 1)
            return self.set_status(0 if r else 1)
        st = self.with_redirs(cmd.redirs, run, report=False) if cmd.redirs else run()
        self.pipestatus = [st]
        self.after_failure(st)
        return st

    def eval_cond(self, e: Any) -> bool:
        t = type(e)
        if t is N.CondAnd:
            return self.eval_cond(e.left) and self.eval_cond(e.right)
        if t is N.CondOr:
            return self.eval_cond(e.left) or self.eval_cond(e.right)
        if t is N.CondNot:
            if self.state.options["xtrace"] and type(e.expr) in (N.CondWord, N.CondUnary, N.CondBinary):
                self._cond_trace_neg = True
            return not self.eval_cond(e.expr)
        xt = self.state.options["xtrace"]
        neg = ""
        if xt and getattr(self, "_cond_trace_neg", False):
            neg = "! "
            self._cond_trace_neg = False
        if t is N.CondWord:
            v = self.expand_str(e.word, tilde=True)
            if xt:
                self._cond_trace(neg, ["-n", v])
            return v != ""
        if t is N.CondUnary:
            op = e.op
            operand = self.expand_str(e.operand, tilde=True)
            if xt:
                self._cond_trace(neg, [op, operand])
            if op == "-v":
                return self.var_is_set(operand)
            if op == "-o":
                return bool(self.state.options.get(operand, False))
            from .testexpr import unary_test
            if op == "-R":
                v = self.state.find(operand)
                return v is not None and bool(v.attrs & NAMEREF)
            return unary_test(op, operand, self.cmd_fs(), self.state.cwd, self.var_is_set,
                              is_option_set=self.option_is_set, uid=self.info.uid, gid=self.info.gid,
                              isatty=self.fd_is_tty)
        if t is N.CondBinary:
            op = e.op
            left = self.expand_str(e.left, tilde=True)
            if xt:
                rt = (self.pattern_trace(e.right) if op in ("==", "=", "!=") else
                      self.expand_str(e.right, tilde=True))
                self._cond_trace(neg, [left, op, rt])
            if op in ("==", "=", "!="):
                pat = self.expand_pattern(e.right)
                r = self.fnmatch(left, pat, extglob=True)
                return r if op != "!=" else not r
            if op == "=~":
                return self.regex_match(left, self.expand_regex(e.right))
            right = self.expand_str(e.right, tilde=True)
            if op in ("-eq", "-ne", "-lt", "-le", "-gt", "-ge"):
                a = self.arith(left)
                b = self.arith(right)
                return {"-eq": a == b, "-ne": a != b, "-lt": a < b, "-le": a <= b,
                        "-gt": a > b, "-ge": a >= b}[op]
            if op == "<":
                return left < right
            if op == ">":
                return left > right
            from .testexpr import binary_test
            return binary_test(op, left, right, self.cmd_fs(), self.state.cwd)
        raise _CondError("conditional: unknown expression")

    def _cond_trace(self, neg: str, words: list[str]) -> None:
        # bash prints [[ operands raw (patterns with their quoted characters escaped)
        # (an empty operand shows as '', as xtrace_print_cond_term prints it)
        self.xtrace_raw("[[ " + neg + " ".join(w if w else "''" for w in words) + " ]]")

    def regex_match(self, s: str, pat: str) -> bool:
        import regex
        cview = not (s.isascii() and pat.isascii()) and self.byte_locale()
        if cview:
            s, pat = byte_view(s), byte_view(pat)
        try:
            rx = _compile_ere(pat, self.state.shopt["nocasematch"], not cview)
        except Exception:
            raise _CondError("") from None
        if rx is None:
            return False
        try:
            m = bounded_match(rx.search, s, left=self.budget.remaining())
        except TimeoutError:
            self.budget.check()
            return False
        except MemoryError:
            # the matcher's backtracking ran out of memory (a POSIX longest match over tens
            # of MB: was an internal error): glibc's regexec fails with REG_ESPACE, and
            # bash's [[ =~ ]] then says 1, as for no match
            self.budget.check()
            self.state.scopes[0]["BASH_REMATCH"] = Var({}, ARRAY)
            return False
        _ = regex
        if m is None:
            self.state.scopes[0]["BASH_REMATCH"] = Var({}, ARRAY)
            return False
        groups = {0: m.group(0)}
        for i in range(1, (rx.groups or 0) + 1):
            g = m.group(i)
            groups[i] = g if g is not None else ""
        if cview:
            groups = {k: char_view(g) for k, g in groups.items()}
        var = self.state.find("BASH_REMATCH")
        if var is not None and var.attrs & READONLY:
            return True
        self.state.scopes[0]["BASH_REMATCH"] = Var(groups, ARRAY)
        return True

    def option_is_set(self, name: str) -> bool:
        return bool(self.state.options.get(name, False))

    def fd_is_tty(self, fd: int) -> bool:
        """``[ -t FD ]``: only a run(tty=...)'s terminal streams say yes (isatty())."""
        s = self.fds.get(fd)
        s = getattr(s, "_s", s)   # (_KeepOpen)
        f = getattr(s, "isatty", None)
        try:
            return bool(f is not None and getattr(s, "tty", False) and f())
        except (OSError, ValueError):
            return False

    def var_is_set(self, name: str) -> bool:
        if "[" in name and name.endswith("]"):
            base, _, sub = name[:-1].partition("[")
            if sub in ("@", "*") and _NAME_RE.match(base):
                # -v a[@]: an indexed array with an element, or a set scalar; an
                # associative array's @ and * are keys like any other (bash 5.2)
                v = self.lookup_var(self.state.resolve_ref(base))
                if v is None or v.value is None:
                    return False
                if type(v.value) is not dict:
                    return True
                return sub in v.value if v.attrs & ASSOC else bool(v.value)
            if _NAME_RE.match(base) and sub not in ("@", "*"):
                sub = self.expand_subscript(sub)
                # -v a[k]: is that element set (an unset element is not "", it is unset)
                v = self.lookup_var(self.state.resolve_ref(base))
                if v is None or v.value is None:
                    return False
                val = v.value
                if type(val) is not dict:
                    try:
                        return self.arith(sub) in (0, -1)
                    except ExpansionError:
                        return False
                if v.attrs & ASSOC:
                    return sub in val
                try:
                    i = self.arith(sub)
                except ExpansionError:
                    return False
                if i < 0:
                    i += (max(val) + 1) if val else 0
                    if i < 0:
                        self.error(f"{base}: bad array subscript")
                        return False
                return i in val
            try:
                return self.get_scalar_ref(name) is not None
            except ExpansionError:
                return False
        if name in ("@", "*"):
            return bool(self.state.positional)
        if name.isdigit():
            return self.special_or_var(name) is not None
        v = self.lookup_var(self.state.resolve_ref(name))
        if v is None or v.value is None:
            return False
        if type(v.value) is dict:
            return (("0" if v.attrs & ASSOC else 0) in v.value)
        return True

    def exec_andor(self, cmd: N.AndOr) -> int:
        rest = cmd.rest
        self.errexit_off += 1
        try:
            st = self.execute(cmd.first)
        finally:
            self.errexit_off -= 1
        last = len(rest) - 1
        for i, (op, c) in enumerate(rest):
            if (op == "&&") == (st == 0):
                if i == last:
                    st = self.execute(c)
                else:
                    self.errexit_off += 1
                    try:
                        st = self.execute(c)
                    finally:
                        self.errexit_off -= 1
        return self.set_status(st)

    # ------------------------------------------------------------------ pipelines
    def exec_pipeline(self, cmd: N.Pipeline) -> int:
        cmds = cmd.cmds
        t0 = time.monotonic() if cmd.timed else 0.0
        c0 = os.times() if cmd.timed else None
        # bash ignores failures inside `! cmd` (for set -e and the ERR trap) only if set -e
        # is on when it starts (`! f` where f runs `set -e; false` exits); otherwise only
        # the inverted status itself, which call_function tells from ``neg_off``
        if cmd.negated:
            self.errexit_off += 1
            neg_saved = self.neg_off
            self.neg_off = 0 if self.state.options["errexit"] else self.errexit_off
        try:
            if len(cmds) == 1:
                st = self.execute(cmds[0])
                self.pipestatus = [st]
            elif not cmds:
                st = 0
            else:
                try:
                    if cmd.coop and _coop.AVAILABLE and self._coop_ok(cmd):
                        st = self._run_pipeline_coop(cmd)  # (run_pipeline's first test, inlined)
                    else:
                        st = self.run_pipeline(cmd)
                finally:
                    self.chld_pending += len(cmds)  # (each stage is a process in bash)
                # $LINENO (an ERR trap's too) is the pipeline's last stage's line afterwards
                self.lineno = getattr(cmds[-1], "line", 0) or self.lineno
                if st > 128:
                    ends = self.__dict__.pop("pipe_ends", None)
                    if ends is not None:
                        self.report_pipeline(cmd, self.pipestatus, ends)
                if self.jobs is not None:
                    _notify_job_deaths(self)
                if st and type(cmds[-1]) is N.Subshell and self.errexit_off == cmd.negated:
                    # bash waits for a `( … )` last stage as for a lone subshell, whose failure
                    # runs the ERR trap (and errexit) once before the pipeline's own failure
                    # does; under set -e a `!` makes bash ignore that stage's status
                    errexit = self.state.options["errexit"]
                    if not (errexit and cmd.negated):
                        self.run_err_trap()
                        if errexit:
                            raise ExitShell(st)
        finally:
            if cmd.negated:
                self.errexit_off -= 1
                self.neg_off = neg_saved
        if cmd.negated:
            st = 0 if st else 1
        if cmd.timed:
            self.report_time(time.monotonic() - t0, cmd.time_posix, c0)
        self.state.last_status = st
        if len(cmds) > 1 and not cmd.negated and (st or self.fresh_err_trap is not None):
            self.after_failure(st)  # (with 0 it only clears fresh_err_trap)
        return st

    def report_time(self, real: float, posix: bool, c0: Any = None) -> None:
        """The report of ``time``: user and system CPU are this process's and its reaped
        children's (native programs') since ``c0``, an os.times() taken at the start."""
        user = sys_ = 0.0
        if c0 is not None:
            c1 = os.times()
            user = max(0.0, (c1.user - c0.user) + (c1.children_user - c0.children_user))
            sys_ = max(0.0, (c1.system - c0.system) + (c1.children_system - c0.children_system))
        if posix:
            fmt = "real %2R\nuser %2U\nsys %2S"
        else:
            tf = self.get_scalar("TIMEFORMAT")
            fmt = tf if tf is not None else "\nreal\t%3lR\nuser\t%3lU\nsys\t%3lS"
            if not fmt:
                return  # a null TIMEFORMAT: no timing report at all (not even a newline)
        self.write_err((_timeformat(fmt, real, user, sys_) + "\n").encode())

    def _coop_ok(self, cmd: N.Pipeline) -> bool:
        """Can this pipeline's stages run as greenlets over in-memory pipes? Only where no
        stage can be a native process (virtual mode) and, beyond the parser's check of the
        text (Pipeline.coop), no stage calls a function (whose body the check never saw) or
        names its command by an expansion."""
        host = self.host
        if host is not None and getattr(host, "native", None) is not None:
            return False
        funcs = self.state.functions
        for c in cmd.cmds:
            if type(c) is N.Simple:
                ws = c.words
                if ws:
                    w = ws[0]
                    parts = w.parts
                    if len(parts) != 1 or type(parts[0]) is not N.Lit or (funcs and w.text in funcs):
                        return False
            elif funcs:
                return False
        return True

    def run_pipeline(self, cmd: N.Pipeline) -> int:
        if cmd.coop and _coop.AVAILABLE and self._coop_ok(cmd):
            return self._run_pipeline_coop(cmd)
        cmds = cmd.cmds
        n = len(cmds)
        budget = self.budget
        with _STAGE_LOCK:
            full = budget.stages + n - 1 > budget.stage_cap()
            if not full:
                budget.stages += n - 1
        if not full and getattr(budget, "root", None) is not None:
            # a job's pipeline: its stage threads count against the session's job threads
            # too (50 jobs of `f(){ f | f; }` held 869 threads: 0.53 s past the deadline)
            from .jobs import threads_full
            if threads_full(self):
                full = True
                with _STAGE_LOCK:
                    budget.stages -= n - 1
        if full:
            # bash's fork() failing with EAGAIN; the threads a recursive pipeline would start
            # are bounded like processes
            self.error("fork: Resource temporarily unavailable")
            self.pipestatus = [254] * n
            return 254
        try:
            return self._run_pipeline(cmd, cmds, n)
        finally:
            with _STAGE_LOCK:
                budget.stages -= n - 1

    def _run_pipeline(self, cmd: N.Pipeline, cmds: Any, n: int) -> int:
        self.budget.check()  # (a stopped run forks no more: a fork copies every variable)
        host = self.host
        if host is not None and getattr(host, "native", None) is not None:
            # every stage a plain native program: started from this thread, no stage thread
            # and no fork of this shell (the host says None when it cannot)
            argvs = self._native_stages(cmds)
            if argvs is not None:
                st = host.native_pipeline(self, cmd, argvs)
                if st is not None:
                    return st
        pipes = [Pipe() for _ in range(n - 1)]
        results: list[int] = stage_results(n)
        errors: list[BaseException | None] = [None] * n
        threads = []
        traps = self.state.traps
        debug = bool(traps) and "DEBUG" in traps and not self.in_debug
        for i in range(n - 1):
            if debug and type(cmds[i]) is N.Simple:
                # bash runs the DEBUG trap for a simple pipeline stage in the parent, before
                # the fork (the stage itself does not inherit the trap)
                self.lineno = cmds[i].line or self.lineno  # type: ignore[union-attr]
                self._debug_compound(lambda c=cmds[i]: _cmd_text(c))  # type: ignore[misc]
            threads.append(self.start_stage(cmd, i, pipes, results, errors))
        last = cmds[-1]
        lastpipe = self.state.shopt["lastpipe"]
        try:
            if lastpipe:
                saved = self.fds
                self.fds = dict(saved)
                self.fds[0] = pipes[-1].reader
                try:
                    results[-1] = self.execute(last)
                except ExitShell:
                    raise
                finally:
                    self.fds = saved
                    pipes[-1].reader.close()
            else:
                if debug and type(last) is N.Simple:
                    self.lineno = last.line or self.lineno  # type: ignore[union-attr]
                    self._debug_compound(lambda: _cmd_text(last))  # type: ignore[arg-type]
                child = self.fork()
                child.fds[0] = pipes[-1].reader
                child.stdin_redir = True
                self._stage(child, last, n - 1, results, errors, None, pipes[-1].reader)
        finally:
            self.join_stages(threads, pipes)
        return self._pipeline_status(results, errors)

    def start_stage(self, cmd: N.Pipeline, i: int, pipes: list[Any], results: list[int],
                    errors: list[BaseException | None]) -> threading.Thread:
        """Stage ``i`` of ``cmd`` started in a fork of this shell on a thread of its own,
        reading ``pipes[i - 1]`` and writing ``pipes[i]`` (the last stage: this shell's
        stdout); it closes both ends when it is done."""
        child = self.fork()
        last = i == len(cmd.cmds) - 1
        if i > 0:
            child.fds[0] = pipes[i - 1].reader
            child.stdin_redir = True  # (an input pipe keeps stdin for its `&` commands)
        if not last:
            child.fds[1] = pipes[i].writer
            stderr_too = cmd.stderr_too
            if i < len(stderr_too) and stderr_too[i]:
                child.fds[2] = pipes[i].writer
        t = threading.Thread(target=self._stage_thread,
                             args=(child, cmd.cmds[i], i, results, errors,
                                   None if last else pipes[i].writer,
                                   pipes[i - 1].reader if i else None),
                             daemon=True)
        start_thread(t)
        return t

    def join_stages(self, threads: list[threading.Thread], pipes: list[Any]) -> None:
        """Wait for the stage threads; once the run is stopped, their pipes are broken and
        a stage still busy after _STAGE_STOP_GRACE is left to end at its next check. Every
        pipe is closed."""
        stopped = None
        try:
            for t in threads:
                while t.is_alive():
                    t.join(0.05)
                    if self.budget.cancelled:
                        for p in pipes:
                            p.abort()  # (never blocks, where close() waits for a blocked read)
                            p.close()
                        now = time.monotonic()
                        if stopped is None:
                            stopped = now
                        elif now - stopped > _STAGE_STOP_GRACE:
                            # a stage stuck in a long uninterruptible step ends at its
                            # next check; the run does not wait for it
                            break
        finally:
            for p in pipes:
                p.close()

    def _native_stages(self, cmds: Any) -> list[list[str]] | None:
        """The argv of each stage when all are simple commands of literal words with no
        assignment or redirection that name no function or builtin, and this shell has no
        trap, xtrace, noexec, lastpipe or coprocess a stage would see: candidates for the
        host's native_pipeline (it decides whether each is a native program). Else None."""
        st = self.state
        opts = st.options
        if st.traps or opts["xtrace"] or opts["noexec"] or st.shopt["lastpipe"] or self.coproc_fds:
            return None
        funcs = st.functions
        out: list[list[str]] = []
        for c in cmds:
            if type(c) is not N.Simple:
                return None
            plan = c.plan  # type: ignore[attr-defined]
            if plan is None:
                plan = _simple_plan(c)  # type: ignore[arg-type]
            if plan[0] != _P_ARGV or (plan[2] and opts["keyword"]):
                return None
            argv = plan[1]
            if argv[0] in funcs or argv[0] in _BUILTINS:
                return None
            out.append(list(argv))
        return out

    def _pipeline_status(self, results: list[int], errors: list[Any]) -> int:
        """The end of a pipeline, however its stages ran: a stage's exception goes on,
        PIPESTATUS is set, the status is the last stage's (pipefail: the last non-zero)."""
        for e in errors:
            if e is not None:
                # (neither the list nor this frame may keep it: its traceback holds this
                # frame and the callers', a reference cycle per stopped pipeline)
                errors[:] = [None] * len(errors)  # (a stage thread still running stores later)
                try:
                    raise e
                finally:
                    e = None
        ends = getattr(results, "ends", None)
        if ends is not None:
            results.ends = None  # type: ignore[attr-defined]  # (PIPESTATUS keeps no fork alive)
        self.pipestatus = results
        st = results[-1]
        if self.state.options["pipefail"]:
            st = next((s for s in reversed(results) if s), 0)
        if st > 128 and ends is not None:
            self.pipe_ends = ends  # (exec_pipeline reports a signal's end from it)
        return st

    def _producer(self, c: N.Command) -> list[str] | None:
        """The argv of a first pipeline stage that may run to its end before the rest, in
        this shell without a fork: ``echo``/``printf``/``true``/``false``/``:`` (the
        builtins) with literal words only. Its output is bounded by its words (printf: no
        width, precision or %n), it reads nothing and changes no state, so the fork would
        be all a subshell adds; and bash's stage has written it all before a short reader
        exits (`echo hi | true` is 0 0 there)."""
        if type(c) is not N.Simple:
            return None
        plan = c.plan  # type: ignore[attr-defined]
        if plan is None:
            plan = _simple_plan(c)  # type: ignore[arg-type]
        if plan[0] != _P_ARGV or plan[2]:
            return None
        argv = plan[1]
        name = argv[0]
        st = self.state
        if name not in _PRODUCERS or st.functions.get(name) is not None or (st.disabled and name in st.disabled):
            return None
        if name == "printf" and (len(argv) < 2 or argv[1][:1] == "-"
                                 or ("%" in argv[1] and _PRINTF_UNBOUNDED.search(argv[1]))):
            return None
        # what it may write, over-estimated, must be small: printf repeats its format for
        # every argument (a long format times many arguments is quadratic in the script),
        # and %(…)T or %q may grow a piece; past the cap the stage gets a pipe with
        # back-pressure as before
        words = sum(map(len, argv))
        if (words if name != "printf" else (len(argv[1]) * 16 + 16) * len(argv) + 4 * words) > _PRODUCE_CAP:
            return None
        return list(argv)

    def _produce(self, c: N.Simple, argv: list[str], out: Any, err_too: bool) -> int:
        """Run producer ``argv`` (see _producer) with its standard output into ``out``."""
        b = self.budget  # charge_command(), inlined: a command like any other (counted, the deadline holds)
        k = b.commands = b.commands + 1
        if k > b.cmd_cap or b._cancelled or ((d := b.deadline) is not None and _monotonic() >= d):
            b.over_command()
        saved, line = self.fds, self.lineno
        fds = self.fds = dict(saved)
        fds[1] = out
        if err_too:
            fds[2] = out
        self.lineno = c.line or line
        try:
            return _BUILTINS[argv[0]](self, argv)
        except BrokenPipeError:
            return 141  # (its stderr: the stage's SIGPIPE, not this shell's)
        except OSError as e:
            st = self.builtin_failed(e, argv)
            if st is None:
                raise
            return st
        finally:
            self.fds, self.lineno = saved, line

    def _direct_stages(self, cmds: Any, pipes: list[Any], results: list[int],
                       errors: list[BaseException | None], stderr_too: Any) -> int:
        """After a producer (see _producer): run the next stages that are in-process filters
        of literal words (_DIRECT_LAST; a middle one only from _DIRECT_MIDDLE, with at most
        CAP bytes waiting for it and no word that could name a file: its output is bounded
        by its input and it blocks on nothing) one after another in this shell, without a
        fork: such a command sees only its context, so the subshell would add nothing (the
        command is looked up without hashing it, as a subshell's lookup leaves this shell's
        table alone). A middle stage runs so only when the stage after it does too (a stage
        that may not read, like ``true``, keeps the scheduler's order: its writer then sees
        EPIPE as it mostly does in bash). Returns the index of the first stage left to run."""
        n = len(cmds)
        host = self.host
        if host is None:
            return 1
        funcs = self.state.functions
        fns: list[Any] = []
        for i in range(1, n):
            c = cmds[i]
            if type(c) is not N.Simple or (i < len(stderr_too) and stderr_too[i]):
                break
            plan = c.plan  # type: ignore[attr-defined]
            if plan is None:
                plan = _simple_plan(c)  # type: ignore[arg-type]
            if plan[0] != _P_ARGV or plan[2]:
                break
            argv = plan[1]
            name = argv[0]
            last = i == n - 1
            if name not in (_DIRECT_LAST if last else _DIRECT_MIDDLE) or name in funcs or name in _BUILTINS:
                break
            if not last and not _reads_stdin_only(self, argv):
                break
            fn = host.stage_command(self, name)
            if fn is None:
                break
            fns.append((fn, argv, c.line))  # type: ignore[attr-defined]
        k = len(fns)
        if k < n - 1:
            k -= 1  # (the last of them feeds a stage that is not direct: see above)
        call = host.call_command
        i = 1
        while i <= k:
            fn, argv, cline = fns[i - 1]
            src = pipes[i - 1]
            last = i == n - 1
            if not last and src.size > _coop.CAP:
                return i
            b = self.budget  # charge_command(), inlined: a command like any other (counted, the deadline holds)
            c = b.commands = b.commands + 1
            if c > b.cmd_cap or b._cancelled or ((d := b.deadline) is not None and _monotonic() >= d):
                b.over_command()
            saved, line = self.fds, self.lineno
            fds = self.fds = dict(saved)
            fds[0] = src.reader
            if not last:
                fds[1] = _coop.Filler(pipes[i])
            self.lineno = cline or line
            try:
                results[i] = call(self, fn, argv)  # (_call passes the command a list of its own)
            except LimitExceeded as e:
                errors[i] = e.with_traceback(None)  # (kept, its frames were a cycle)
                results[i] = 124
            except KeyboardInterrupt as e:
                errors[i] = e.with_traceback(None)
                results[i] = 130
            except ExitShell as e:
                results[i] = e.status
            except Exception as e:  # noqa: BLE001 - as _stage: a stage never kills the run silently
                _stage_broke(self, e, i, results, errors)
            finally:
                self.fds, self.lineno = saved, line
                src.close()
                if not last:
                    pipes[i].wclosed = True
            i += 1
            if errors[i - 1] is not None:
                for j in range(i, n):
                    results[j] = 124  # (stopped: the caller raises the stage's error)
                return n
        return i

    def _run_pipeline_coop(self, cmd: N.Pipeline) -> int:
        """run_pipeline with the stages as greenlets (shell/coop.py): same forks, statuses,
        SIGPIPE and PIPESTATUS; no thread and no descriptor."""
        cmds = cmd.cmds
        n = len(cmds)
        budget = self.budget
        pipes = [_coop.GPipe(budget) for _ in range(n - 1)]
        st = self.state
        if st.env_cache is None and "_scopes_src" not in st.__dict__:
            st.environ()  # the stages' commands share it (each would build its own)
        results: list[int] = stage_results(n)
        errors: list[BaseException | None] = [None] * n
        fns: list[Callable[[], None]] = []
        stderr_too = cmd.stderr_too
        traps = self.state.traps
        debug = bool(traps) and "DEBUG" in traps and not self.in_debug
        lastpipe = self.state.shopt["lastpipe"]
        stage = self._stage
        first = 0
        if not traps and not st.options["xtrace"] and not st.options["noexec"]:
            argv = self._producer(cmds[0])
            if argv is not None:
                # the first stage runs to its end now, into a pipe that takes it all
                p = pipes[0]
                results[0] = self._produce(cmds[0], argv, _coop.Filler(p),  # type: ignore[arg-type]
                                           bool(stderr_too) and stderr_too[0])
                p.wclosed = True
                first = 1
                if not lastpipe and not self.coproc_fds:
                    # filters whose input is all there run in turn, without a fork
                    first = self._direct_stages(cmds, pipes, results, errors, stderr_too)
                    if first == n:
                        return self._pipeline_status(results, errors)
                    p = pipes[first - 1]
                if first == n - 1 and not lastpipe:
                    # one stage left, with nothing to schedule beside it: called directly
                    child = self.fork(lazy=True)
                    child.fds[0] = r = p.reader
                    child.stdin_redir = True
                    try:
                        stage(child, cmds[first], first, results, errors, None, r)
                    finally:
                        p.close()
                    return self._pipeline_status(results, errors)
        for i in range(first, n - 1):
            c = cmds[i]
            if debug and type(c) is N.Simple:
                self.lineno = c.line or self.lineno  # type: ignore[union-attr]
                self._debug_compound(lambda c=c: _cmd_text(c))  # type: ignore[misc]
            # the stages run while this shell waits (and only the last may be this shell):
            # a lazy fork copies the variables only if the stage touches them
            child = self.fork(lazy=not lastpipe)
            fds = child.fds
            if i > 0:
                fds[0] = pipes[i - 1].reader
                child.stdin_redir = True
            w = pipes[i].writer
            fds[1] = w
            if i < len(stderr_too) and stderr_too[i]:
                fds[2] = w
            fns.append(functools.partial(stage, child, c, i, results, errors, w,
                                         pipes[i - 1].reader if i else None))
        last = cmds[-1]
        r = pipes[-1].reader
        if lastpipe:
            def run_last() -> None:
                saved = self.fds
                self.fds = dict(saved)
                self.fds[0] = r
                try:
                    results[-1] = self.execute(last)
                except BaseException as e:  # noqa: BLE001 - re-raised below, after every stage
                    errors[-1] = e.with_traceback(None)
                finally:
                    self.fds = saved
                    r.close()
            fns.append(run_last)
        else:
            if debug and type(last) is N.Simple:
                self.lineno = last.line or self.lineno  # type: ignore[union-attr]
                self._debug_compound(lambda: _cmd_text(last))  # type: ignore[arg-type]
            child = self.fork(lazy=True)
            child.fds[0] = r
            child.stdin_redir = True
            fns.append(functools.partial(stage, child, last, n - 1, results, errors, None, r))
        try:
            _coop.run(fns, budget, pipes)
        finally:
            for p in pipes:
                p.close()
        return self._pipeline_status(results, errors)

    def _stage_thread(self, child: Interpreter, cmd: N.Command, i: int, results: list[int],
                      errors: list[BaseException | None], w: Any, r: Any) -> None:
        """A pipeline stage on a thread of its own, watched: the deadline watchdog interrupts
        its Python code too (not only the run's thread)."""
        b = child.budget
        try:
            try:
                if _WATCH_STAGES:
                    b.watch()
                self._stage(child, cmd, i, results, errors, w, r)
            finally:
                b.unwatch()
        except LimitExceeded as e:  # (a kick that landed between the stage's end and unwatch)
            if errors[i] is None:
                errors[i] = e.with_traceback(None)
                results[i] = 124
            if w is not None:
                w.close()
            if r is not None:
                r.close()

    def _stage(self, child: Interpreter, cmd: N.Command, i: int, results: list[int],
               errors: list[BaseException | None], w: Any, r: Any) -> None:
        prior = child.budget.bind()
        ends = getattr(results, "ends", None)
        if ends is not None:
            ends[i] = (child, 0)
        try:
            t = type(cmd)
            if t is N.Simple:
                child.forked_simple = True
                child.exec_cmd = cmd
            elif t is N.Subshell:
                child.exec_cmd = exec_candidate(cmd.body)  # type: ignore[attr-defined]
                # a `( … )` stage is that forked child itself (bash forks once: BASH_SUBSHELL 1)
                child.lineno = cmd.line or child.lineno  # type: ignore[attr-defined]
                child.loop_depth = 0
                body = cmd.body  # type: ignore[attr-defined]
                if cmd.redirs:
                    results[i] = child.with_redirs(cmd.redirs, lambda: child.run_subshell_script(body),
                                                   report=False)
                    if results[i] and not child.errexit_off:
                        child.state.last_status = results[i]
                else:
                    results[i] = child.run_subshell_script(body)
                return
            results[i] = child.run_subshell_script(cmd, child.forked_simple)  # type: ignore[arg-type]
        except LimitExceeded as e:
            errors[i] = e.with_traceback(None)
            results[i] = 124
        except BrokenPipeError:
            results[i] = 141
            child.killed_by = 13
        except KeyboardInterrupt as e:  # the host's Ctrl-C: re-raised by the pipeline
            errors[i] = e.with_traceback(None)
            results[i] = 130
        except BaseException as e:  # noqa: BLE001 - a stage must never kill the run silently
            _stage_broke(child, e, i, results, errors)
        finally:
            Budget.unbind(prior)
            if ends is not None and child.killed_by:
                ends[i] = (child, child.killed_by)
            if w is not None:
                w.close()
            if r is not None:
                r.close()

    # ------------------------------------------------------------------ background jobs
    def run_background(self, cmd: N.Command) -> None:
        from .jobs import start_job
        if start_job(self, cmd) is not None:
            # bash: an asynchronous command's status is 0 (a run of only `x &` after a
            # timed-out one returned 124, timed_out False)
            self.state.last_status = 0

    # ------------------------------------------------------------------ simple commands
    def xtrace(self, argv: list[str]) -> None:
        qv = self.qv
        self.xtrace_raw(" ".join(_xq(qv(a)) for a in argv))

    def ps4(self) -> str:
        """$PS4 expanded for one trace line (kept as is, after an error message, if it is bad)."""
        ps4 = self.get_scalar("PS4")
        if ps4 is None:
            return ""
        if "\\" in ps4:
            ps4 = self.prompt_decode(ps4)  # a prompt string: \\$ \\u \\w ... first
        if "$" not in ps4 and "`" not in ps4 or not self.state.shopt.get("promptvars"):
            return ps4
        # bash turns xtrace off while it expands PS4, so a $(...) in it is not traced
        opts = self.state.options
        opts["xtrace"] = False
        try:
            from .parser import parse_word
            try:
                w = parse_word(ps4, dq=True)
            except Exception as e:
                cut = ps4.rfind("$(")
                if getattr(e, "message", "") == "unexpected EOF while looking for matching `)'" and cut >= 0:
                    # an unclosed $( fails as a command substitution (bash numbers it two
                    # lines on) and expands to nothing: the text before it stays
                    base = self.err_prefix().split(":", 1)[0]
                    self.write_err(f"{base}: command substitution: line {self.lineno + 2}: {e.message}\n"
                                   .encode("utf-8", "surrogateescape"))
                    try:
                        head = self.expand_str(parse_word(ps4[:cut], dq=True))
                    except Exception:
                        head = ps4[:cut]
                    # (and bash still runs the text, less its last character)
                    body = ps4[cut + 2:-1]
                    if body.strip():
                        try:
                            from .parser import parse
                            head += self.command_subst(parse(body))
                        except Exception:
                            pass
                    return head
                self.error(f"{ps4}: bad substitution")
                return ps4
            try:
                return self.expand_str(w)
            except ExpansionError as e:
                self.error(e.message)  # bash reports it and traces with the unexpanded text
                return ps4
            except Exception:
                return ps4
        finally:
            opts["xtrace"] = True

    def xtrace_raw(self, text: str, ps4: str | None = None) -> None:
        if ps4 is None:
            ps4 = self.ps4()
        lead = ps4[:1] * getattr(self, "xtrace_level", 0)
        line = (lead + ps4 + text + "\n").encode("utf-8", "surrogateescape")
        fdv = self.get_scalar("BASH_XTRACEFD")
        if fdv and fdv.isdigit() and int(fdv) in self.fds:
            # set -x writes to the fd BASH_XTRACEFD names, when that fd is open
            try:
                self.fds[int(fdv)].write(line)
            except (OSError, ValueError, AttributeError):
                pass
            return
        self.write_err(line)

    def exec_simple(self, cmd: N.Simple) -> int:
        self.lineno = cmd.line
        b = self.budget  # charge_command(), inlined
        n = b.commands = b.commands + 1
        if n > b.cmd_cap or b._cancelled or ((d := b.deadline) is not None and _monotonic() >= d):
            b.over_command()
        if self.chld_pending or self.sig_queue:
            self.run_pending()
        st = self.state
        if st.options["noexec"]:
            return 0
        traps = st.traps
        if not self.trap_level:
            # BASH_COMMAND: this command as written (rendered when read), set before it expands
            self.current_command = cmd
        if traps and "DEBUG" in traps and not self.in_debug:
            if self._run_debug_trap() and st.shopt["extdebug"]:
                return self.set_status(0)  # extdebug: a failing DEBUG trap skips the command
        plan = cmd.plan
        if plan is None:
            plan = _simple_plan(cmd)
        kind = plan[0]
        if kind == _P_ARGV:
            if plan[2] and st.options["keyword"]:
                kind = _P_GENERAL  # (set -k moves some words into the environment)
            else:
                # static words: no process substitution of this command's to finish afterwards
                return self._run_plain(list(plan[1]))
        elif kind == _P_ARGVP:
            # static words and $name of ordinary variables holding a string that needs no
            # splitting or globbing (else the general path: nothing was evaluated twice,
            # reading such a variable has no effect)
            kind = _P_GENERAL
            if not (plan[2] and st.options["keyword"]):
                argv = []
                find = st.find
                ifs_ok = None
                for a in plan[1]:
                    if type(a) is str:
                        argv.append(a)
                        continue
                    var = find(a[0].name)
                    if var is None or var.attrs & NAMEREF:
                        break
                    v = var.value
                    if type(v) is not str:
                        break
                    if not a[1]:
                        if ifs_ok is None:
                            ifs_ok = self.get_ifs() in (None, " \t\n")
                        if not ifs_ok or not _SAFE_VALUE.match(v):
                            break
                    argv.append(v)
                else:
                    return self._run_plain(argv)
        procsubs = self.procsubs
        if kind and not st.options["xtrace"]:
            # one plain `name=value` (no redirection): do_assign and _assign_only, inlined
            if kind == _P_LIT:
                value = plan[2]
            else:
                try:
                    if kind == _P_ARITH:
                        value = str(self.arith(plan[2]))
                    else:
                        value = self.param_value(plan[2], True)
                        if type(value) is not str:
                            value = self.expand_str(cmd.assigns[0].value, assign=True)  # type: ignore[arg-type]
                except ExpansionError as err:
                    self.error(err.message)
                    if err.fatal:
                        raise expansion_exit(err) from None
                    return self.set_status(err.status)
            lim = self.budget.limits.max_variable_bytes
            if lim is not None and len(value) > lim:
                raise LimitExceeded("max_variable_bytes", f"variable {plan[1]} too large")
            var = st.find(plan[1])
            if var is not None and not var.attrs and type(var.value) is not dict and not st.options["allexport"]:
                if len(value) >= _CHARGE_MIN:
                    self.grow(_sizeof(value))
                var.value = value
            else:
                try:
                    self.set_var(plan[1], value)
                except VarError as err:
                    self.error(err.message)
                    if st.options["posix"]:
                        raise ExitShell(127) from None  # bash's posix mode: fatal, with 127
                    raise AbortLine(1) from None
                except ExpansionError as err:
                    # (an integer variable's value is an arithmetic error: reported here,
                    # where the function's frame still names the source, as do_assign's is)
                    self.error(err.message)
                    if err.fatal:
                        raise expansion_exit(err) from None
                    return self.set_status(err.status)
            self.pipestatus = [0]
            st.last_arg = ""
            st.last_status = 0
            return 0
        mark = len(procsubs)
        self.cmdsub_status = None
        words = cmd.words
        if len(words) > 1 and st.options["keyword"]:
            cmd = _keyword_assigns(cmd, st.shopt["extglob"])
            words = cmd.words
        if not words:
            try:
                return self._assign_only(cmd)
            finally:
                if procsubs:
                    self.finish_procsubs(mark)
        try:
            try:
                p0 = words[0].parts
                decl_last = None
                if len(p0) == 1 and type(p0[0]) is N.Lit and p0[0].text in _DECL_NAMES:
                    argv = self._expand_decl(words)
                    decl_last = self.decl_last
                else:
                    argv = self.expand_words(words)
            except ExpansionError as e:
                self.error(e.message)
                if e.fatal:
                    raise expansion_exit(e) from None
                return self.set_status(e.status)
            if not argv:
                return self._assign_only(cmd)
            if decl_last is None:
                return self._run_argv(cmd, argv)
            status = self._run_argv(cmd, argv)
            st.last_arg = decl_last
            return status
        finally:
            if procsubs:
                self.finish_procsubs(mark)

    def _expand_decl(self, words: tuple[N.Word, ...]) -> list[str]:
        """declare/local/export/readonly: assignment-looking words are not split or globbed."""
        decl_assign = _decl_assign
        argv = self.expand_words(words[:1])
        arrays: dict[int, Any] = {}
        for w in words[1:]:
            a = decl_assign(w)
            if a is not None:
                # bash makes the assignment now, while it expands the command: the builtin
                # sees only the name (the word, if that failed in a function)
                if _decl_compound(self, argv, a):
                    argv.append(a.name)
                else:
                    arrays[len(argv) - 1] = a
                    argv.append(w.text)
                continue
            p0 = w.parts[0] if w.parts else None
            m = _DECL_ASSIGN_RE.match(p0.text) if type(p0) is N.Lit else None
            if m:
                if "{" in w.text and self.state.options["braceexpand"] and self._has_brace(w):
                    # bash brace-expands an assignment word given to a declaration builtin
                    # (`declare d={1,2}` is `declare d=1 d=2`); the results are plain words
                    # then (split and globbed, no tilde after the '=')
                    if len(self._braces(w)) != 1:
                        argv.extend(self.expand_words([w]))
                        continue
                # the value tilde-expands after the first '=' as in a real assignment
                k = m.end()
                rest = N.Word((N.Lit(p0.text[k:]),) + w.parts[1:], w.text[k:])
                argv.append(p0.text[:k] + self.expand_str(rest, assign=2))  # type: ignore[arg-type]
            else:
                argv.extend(self.expand_words([w]))
        # indices relative to the builtin's argument list, after its options
        nopt = 0
        for a in argv[1:]:
            if a[:1] in "-+" and len(a) > 1 and "=" not in a:
                nopt += 1
            else:
                break
        self.decl_arrays = {i - nopt: v for i, v in arrays.items()}
        # bash's $_ after `declare a=(1 2)` is the name: a compound assignment's word is not
        # kept as an argument
        last = arrays.get(len(argv) - 2)
        self.decl_last = last.name if last is not None else None
        return argv

    def _for_trace(self, w: N.Word | None) -> str:
        """xtrace of an arith-for expression: leading blanks dropped, an empty one shown as 1."""
        text = self.expand_dq(w).lstrip(" \t\n") if w is not None else ""
        return f"(( {text if text.strip() else '1'} ))"

    def _debug_compound(self, text: Callable[[], str]) -> None:
        """bash runs the DEBUG trap before for/select/case headers, each for iteration,
        [[ ]], (( )) and the clauses of for (( )), with BASH_COMMAND their text."""
        traps = self.state.traps
        if not self.trap_level:
            # (text made only if BASH_COMMAND is read: an ERR trap may want it)
            self.current_command = text
        if traps and "DEBUG" in traps and not self.in_debug:
            self._run_debug_trap()

    def _run_debug_trap(self) -> int:
        """Run the DEBUG trap; its status (non-zero skips the command under extdebug)."""
        self.in_debug = True
        try:
            # like ERR, the trap text is numbered from the line of the command it precedes
            return self.run_string(self.state.traps["DEBUG"], trap="debug", first_line=self.lineno)
        finally:
            self.in_debug = False

    def _run_alias(self, cmd: N.Simple, argv: list[str]) -> int:
        from .parser import parse
        text = self.state.aliases[argv[0]]
        rest = " ".join(w.text for w in cmd.words[1:])
        src = text + (" " + rest if rest else "")
        try:
            script = parse(src)
        except ParseError as e:
            self.error(e.message)
            return self.set_status(2)
        if cmd.redirs:
            return self.with_redirs(cmd.redirs, lambda: self.run_script(script))
        return self.run_script(script)

    def do_assign(self, a: N.Assign, *, scope: dict | None = None) -> str | None:
        """Perform one assignment (raises VarError / ExpansionError)."""
        if a.array is not None:
            if a.index is not None:
                raise VarError(f"{a.name}[{self._word_src(a.index)}]: cannot assign list to array member")
            self.set_array(a.name, a.array, append=a.append)
            return None
        w = a.value
        if w is None:
            value = ""
        else:
            p = w.parts
            if len(p) == 1 and type(p[0]) is N.ArithSub:
                e = p[0].expr.parts  # type: ignore[union-attr]
                if len(e) == 1 and type(e[0]) is N.Lit and "#" not in e[0].text:  # type: ignore[union-attr]
                    value = str(self.arith(e[0].text))  # type: ignore[union-attr]
                else:
                    value = str(self.arith_sub(p[0].expr))  # type: ignore[union-attr]
            else:
                value = self.expand_str(w, assign=True)
        lim = self.budget.limits.max_variable_bytes
        if lim is not None and len(value) > lim:
            raise LimitExceeded("max_variable_bytes", f"variable {a.name} too large")
        if a.index is not None:
            self.assign_element(a.name, a.index, value, append=a.append)
        elif scope is None and not a.append:
            st = self.state
            var = st.find(a.name)
            # set_var's fast path, inlined: a plain variable takes the value as is
            if var is not None and not var.attrs and type(var.value) is not dict and not st.options["allexport"]:
                if len(value) >= _CHARGE_MIN:
                    self.grow(_sizeof(value))
                var.value = value
            else:
                self.set_var(a.name, value)
        else:
            self.set_var(a.name, value, append=a.append, scope=scope)
        return value

    def _assign_only(self, cmd: N.Simple) -> int:
        xt = self.state.options["xtrace"]
        for a in cmd.assigns:
            if a.append and self.dash:
                # dash has no `+=`: the word is a command's name
                w = f"{a.name}+={self.expand_str(a.value) if a.value is not None else ''}"
                self.error(f"{w}: not found")
                return self.set_status(127)
            # the trace line's PS4 sees the variables as they were before this assignment
            ps4 = self.ps4() if xt else None
            if xt and a.array is not None:
                # bash traces a compound assignment as written, before expanding it
                self._trace_assign(a, None, ps4)
            try:
                v = self.do_assign(a)
            except VarError as e:
                self.error(e.message)
                if self.state.options["posix"]:
                    raise ExitShell(127) from None  # bash's posix mode: fatal, with 127
                raise AbortLine(1) from None
            except ExpansionError as e:
                self.error(e.message)
                if e.fatal:
                    raise expansion_exit(e) from None
                return self.set_status(e.status)
            if xt and a.array is None:
                self._trace_assign(a, v, ps4)
        st = self.cmdsub_status if self.cmdsub_status is not None else 0
        self.pipestatus = [st]
        self.state.last_arg = ""
        if cmd.redirs:
            def noop() -> int:
                return 0
            keep = [(r.fd_var, self.get_scalar(r.fd_var)) for r in cmd.redirs
                    if r.fd_var is not None and "[" not in r.fd_var]
            r = self.with_redirs(cmd.redirs, noop, False)
            for name, old in keep:
                # a command of only redirections: bash opens `{v}>f`'s descriptor and
                # closes it again, and v keeps its value
                v = self.get_scalar(name)
                if v is not None and v != old and v.isdigit() and int(v) in self.fds:
                    f = self.fds.pop(int(v))
                    if f in self.owned:
                        self.owned.remove(f)
                        _close(f)
                try:
                    if old is None:
                        self.unset_var(name)
                    else:
                        self.set_var(name, old)
                except VarError:
                    pass
            if r:
                self.set_status(r)
                self.after_failure(r)
                return r
        self.set_status(st)
        if st:
            self.after_failure(st)
        return st

    def _trace_assign(self, a: N.Assign, v: str | None, ps4: str | None = None) -> None:
        op = "+=" if a.append else "="
        sub = f"[{self._word_src(a.index)}]" if a.index is not None else ""
        if a.array is not None:
            # bash prints a compound assignment's words as written, unexpanded
            elems = []
            for e in a.array:
                val = e.value.text if e.value.text or not e.value.parts else self._word_src(e.value)
                if e.key is not None:
                    elems.append(f"[{e.key.text or self._word_src(e.key)}]{'+=' if e.append else '='}{val}")
                else:
                    elems.append(val)
            self.xtrace_raw(f"{a.name}{op}(" + " ".join(elems) + ")", ps4)
            return
        # (an empty value shows as nothing: `+ x=`, as xtrace_print_assignment prints it)
        self.xtrace_raw(f"{a.name}{sub}{op}{_xq(self.qv(v)) if v else ''}", ps4)

    def _run_plain(self, argv: list[str]) -> int:
        """Run expanded ``argv`` of a command with no prefix assignment and no redirection
        (the common case of ``_run_argv``)."""
        st = self.state
        name = argv[0]
        if st.options["xtrace"]:
            self._xtrace_argv(argv)
        func = st.functions.get(name)
        if func is not None and not (st.options["posix"] and name in SPECIAL_BUILTINS):
            status = self.call_function(name, func, argv[1:])
        else:
            builtin = _BUILTINS.get(name)
            if builtin is not None and not (st.disabled and name in st.disabled):
                try:
                    status = builtin(self, argv)
                except (OSError, VarError, ExpansionError) as e:
                    status = self.builtin_failed(e, argv)
                    if status is None:
                        raise
            else:
                status = self.run_external(argv)
        st.last_arg = argv[-1]
        st.last_status = status
        self.pipestatus = [status]
        if status:
            self.after_failure(status)
        return status

    def _xtrace_argv(self, argv: list[str]) -> None:
        self.xtrace(argv)
        if argv[0] in ("export", "readonly"):
            # (bash traces each name=value it assigns, unless -a/-A make it an array)
            for a in argv[1:]:
                if a[:1] == "-" and ("a" in a or "A" in a) and "=" not in a:
                    return
                if "=" in a and _DECL_ASSIGN_RE.match(a):
                    k, _, v = a.partition("=")
                    self.xtrace_raw(f"{k}={_xq(v) if v else ''}")

    def _run_argv(self, cmd: N.Simple, argv: list[str]) -> int:
        if not cmd.assigns and not cmd.redirs:
            return self._run_plain(argv)
        st = self.state
        name = argv[0]
        xt = st.options["xtrace"]
        func = st.functions.get(name)
        builtin = None
        if func is not None and name in SPECIAL_BUILTINS and st.options["posix"]:
            func = None  # POSIX: special builtins are found before functions
        if func is None:
            builtin = _BUILTINS.get(name)
            if builtin is not None and st.disabled and name in st.disabled:
                builtin = None
        temp_scope: dict[str, Var] | None = None
        if cmd.assigns:
            # bash (not in posix mode) keeps prefix assignments temporary even before special
            # builtins: `x=1 eval 'echo $x'; echo $x` prints 1, then nothing.  A function's
            # become bindings of its own scope (bash merges them into its variable context)
            temp_scope = {} if func is not None else TempScope(name in _BLTN_ENV)
            ok = True
            # each value sees the bindings before it: `A=1 B=$A cmd` gives B=1
            st.scopes.append(temp_scope)
            try:
                ok = self._temp_assigns(cmd.assigns, temp_scope, xt,
                                        func is not None or builtin is not None)
            finally:
                if st.scopes[-1] is temp_scope:
                    st.scopes.pop()
                st.env_cache = None
            if not ok:
                return self.set_status(1)
        if xt:
            self._xtrace_argv(argv)

        if cmd.redirs and func is None and _bare_exec(argv):
            return self._exec_redirs(cmd.redirs)

        def run() -> int:
            if func is not None:
                return self.call_function(name, func, argv[1:], temp_scope)
            if builtin is not None:
                return self.run_builtin(builtin, argv)
            return self.run_external(argv)

        external = func is None and builtin is None
        if temp_scope and func is not None:
            st.env_cache = None
            try:
                status = self._run_redirected(cmd.redirs, run, external)
            finally:
                st.env_cache = None
        elif temp_scope:
            st.scopes.append(temp_scope)
            st.env_cache = None
            try:
                status = self._run_redirected(cmd.redirs, run, external)
            finally:
                # pop our temp scope (it may no longer be on top if a function misbehaved)
                for i in range(len(st.scopes) - 1, 0, -1):
                    if st.scopes[i] is temp_scope:
                        del st.scopes[i]
                        break
                st.env_cache = None
            if func is None and name in ("export", "readonly"):
                self._keep_declared_temps(temp_scope, argv)
            if builtin is not None and st.options["posix"] and name in SPECIAL_BUILTINS:
                # POSIX: assignments before a special builtin outlive it (still exported)
                for n, tv in temp_scope.items():
                    var = st.find(n)
                    if var is None:
                        st.scopes[0][n] = tv
                    elif not var.attrs & READONLY:
                        var.value = tv.value
                        var.attrs |= tv.attrs
                st.env_cache = None
        else:
            status = self._run_redirected(cmd.redirs, run, external)
        st.last_arg = argv[-1]
        self.set_status(status)
        self.pipestatus = [status]
        if status:
            self.after_failure(status)
        return status

    def _run_redirected(self, redirs: tuple[N.Redir, ...], run: Callable[[], int], external: bool) -> int:
        """A simple command's ``run`` with its redirections applied. bash expands an external
        command's redirections in the forked child: an expansion error there (even set -u's)
        fails that command only, with its status (``redir_external`` tells _redir_path)."""
        if not redirs:
            return run()
        if not external:
            return self.with_redirs(redirs, run, False)

        outer_err = self.fds.get(2)

        def run_external() -> int:
            self.redir_external = False
            self.outer_err = outer_err  # (where bash reports the command's death by a signal)
            return run()
        self.redir_external = True
        try:
            return self.with_redirs(redirs, run_external, False)
        finally:
            self.redir_external = False
            self.outer_err = None

    def _temp_assigns(self, assigns: tuple[N.Assign, ...], temp_scope: dict[str, Var], xt: bool,
                      in_shell: bool = True) -> bool:
        """Bind a command's prefix assignments in ``temp_scope``; False after a non-fatal
        expansion error. ``in_shell``: for a builtin or function, whose locale variables
        bash applies (setlocale); a program only gets them in its environment."""
        ok = True
        for a in assigns:
            if a.index is not None:
                # an array element cannot be put in a command's environment (bash)
                self.error(f"`{a.name}[{self._word_src(a.index)}]': not a valid identifier")
                continue
            try:
                if a.array is not None:
                    # bash passes `B=(b b) cmd` to the command as the text "(b b)"
                    value = "(" + " ".join((f"[{el.key.text}]=" if el.key is not None else "")
                                           + el.value.text for el in a.array) + ")"
                else:
                    value = self.expand_str(a.value, assign=True) if a.value is not None else ""
                if xt:
                    # (an empty value shows as nothing: `+ x=`, as for a plain assignment)
                    self.xtrace_raw(f"{a.name}{'+=' if a.append else '='}{_xq(self.qv(value)) if value else ''}")
                existing = self.state.find(a.name)
                if existing is not None and existing.attrs & READONLY:
                    self.error(f"{a.name}: readonly variable")
                    continue
                if a.append and existing is not None and type(existing.value) is str:
                    value = existing.value + value
                if in_shell and a.name in _LOCALE_VARS:
                    self.locale_check(a.name, value)
                temp_scope[a.name] = Var(value, EXPORT | TEMPVAR)
            except ExpansionError as e:
                self.error(e.message)
                if e.fatal:
                    raise expansion_exit(e) from None
                ok = False
        return ok

    def _keep_declared_temps(self, temp_scope: dict[str, Var], argv: list[str]) -> None:
        """bash: `x=1 export x` (or readonly) makes the temporary x a shell variable."""
        st = self.state
        for a in argv[1:]:
            if a.startswith("-"):
                continue
            n = a.partition("=")[0].partition("+")[0]
            tv = temp_scope.get(n)
            if tv is None:
                continue
            var = st.find(n)
            if var is None:
                st.scopes[0][n] = tv
            else:
                var.value = tv.value
                var.attrs |= tv.attrs
        st.env_cache = None

    def _exec_redirs(self, redirs: tuple[N.Redir, ...]) -> int:
        """``exec`` with only redirections: they stay in effect for the rest of the shell."""
        opened: list[Any] = []
        try:
            new = self.apply_redirs(redirs, dict(self.fds), opened)
        except RedirError as e:
            for f in opened:
                _close(f)
            if e.expansion is not None:
                raise expansion_exit(e.expansion) from None
            return self.set_status(e.status)
        old = self.fds
        self.fds = new
        still = set(id(v) for v in new.values())
        for f in list(self.owned):
            if id(f) not in still:
                _close(f)
                self.owned.remove(f)
        self.owned.extend(opened)
        _ = old
        return self.set_status(0)

    def disabled_builtins(self) -> frozenset[str]:
        return self.state.disabled

    def run_builtin(self, fn: Callable[[Interpreter, list[str]], int], argv: list[str]) -> int:
        try:
            return fn(self, argv)
        except (OSError, VarError, ExpansionError) as e:
            st = self.builtin_failed(e, argv)
            if st is None:
                raise
            return st

    def builtin_failed(self, e: BaseException, argv: list[str]) -> int | None:
        """The status of builtin ``argv`` that raised ``e`` (an OS, variable or expansion
        error); None for what ends more than the builtin, which the caller raises again
        (re-raised here, from a frame holding it, it was a cycle that kept the frames' data:
        a process substitution's 200,000 printf arguments, +76 MiB until a collection)."""
        if isinstance(e, BrokenPipeError):
            # a builtin runs in this shell: SIGPIPE ends the whole (sub)shell, as in bash
            if self.is_subshell:
                return None
            return 141
        if isinstance(e, OSError):
            # (a stream opened for reading only says "File not open for writing": write(2)
            # on such a descriptor is EBADF)
            msg = os.strerror(e.errno) if e.errno else (
                os.strerror(_errno.EBADF) if isinstance(e, io.UnsupportedOperation) else str(e))
            self.error(f"{argv[0]}: write error: {msg}")
            return 1
        if isinstance(e, VarError):
            self.error(f"{argv[0]}: {e.message}" if getattr(e, "builtin_named", False) else e.message)
            return 1
        if isinstance(e, ExpansionError):
            # an arithmetic error assigning through `read`/`printf -v` to an integer
            # variable is reported under the builtin's name
            if argv[0] in ("read", "printf", "mapfile", "readarray") and not getattr(e, "named", False):
                e.message = f"{argv[0]}: {e.message}"
                e.named = True  # type: ignore[attr-defined]
        return None

    def call_function(self, name: str, func: N.FuncDef, args: list[str],
                      scope: dict[str, Var] | None = None) -> int:
        st = self.state
        lim = self.budget.limits.max_call_depth
        fv = st.scopes[0].get("FUNCNEST")
        nest = False
        if fv is not None and type(fv.value) is str and fv.value.isdigit() and int(fv.value) > 0:
            # FUNCNEST (bash; global only here): a positive value lowers the limit
            nest = lim is None or int(fv.value) < lim
            lim = int(fv.value) if lim is None else min(lim, int(fv.value))
        if lim is not None and len(self.funcstack) >= lim:
            self.error(f"{name}: maximum function nesting level exceeded ({lim})")
            # FUNCNEST's limit drops the command line, as bash (the next line runs); the
            # sandbox's own max_call_depth ends the run
            raise ExitShell(1, nest)
        saved_pos = st.positional
        st.positional = list(args)
        saved_argv = self.argv_frames
        if st.shopt.get("extdebug"):
            # BASH_ARGV/BASH_ARGC (bash): a call made in extdebug mode pushes its arguments.
            # Immutable tuples, so a subshell's copy never pops its parent's frames.
            self.argv_frames += (tuple(args),)
        st.scopes.append(scope if scope is not None else {})
        self.funcstack.append((name, self.lineno, st.func_sources.get(name) or self.fn_source))
        saved_line = self.lineno
        saved_loops = self.loop_depth
        saved_frame = self.line_frame
        self.line_frame = func.line or saved_frame  # (bash's line_number in a function's body)
        self.loop_depth = 0
        status = 0
        err_before = st.traps.get("ERR") if st.traps else None
        hidden = err_before is not None and not st.options["errtrace"]
        if hidden:
            # without set -E a function does not see the caller's ERR trap (bash saves it
            # and puts it back on return); one the function sets itself does fire
            del st.traps["ERR"]
            self.err_hidden += 1  # (BASH_COMMAND still follows [[ ]] and (( )) for it)
        # a function without set -T runs with the RETURN trap reset (bash): it fires for the
        # function only when set inside it, and the caller's trap comes back afterwards
        # unless the function left one of its own
        saved_ret = None
        saved_dbg = None
        if st.traps and not st.options["functrace"] and name not in st.func_trace \
                and not st.shopt["extdebug"]:
            # (declare -ft gives one function the set -T behaviour; extdebug implies it)
            if "RETURN" in st.traps:
                saved_ret = st.traps.pop("RETURN")
            if "DEBUG" in st.traps:
                saved_dbg = st.traps.pop("DEBUG")  # nor is DEBUG inherited without set -T
        frame = self.cmd_frame
        self.cmd_frame = (name, self.budget.commands)
        gs = self.getopts_state  # (put back on return if the function made OPTIND local)
        pop_msg = False
        off = self.errexit_off
        if off and off == self.neg_off:
            self.errexit_off = off - 1  # run by `!` without set -e: not a condition for its body
        try:
            body = func.body
            try:
                if saved_dbg is None and st.traps and "DEBUG" in st.traps and not self.in_debug:
                    # set -T: once more on entry, at the definition's line, BASH_COMMAND
                    # still the call
                    self.lineno = func.line or self.lineno
                    self._run_debug_trap()
                if type(body) is N.Group:
                    if body.redirs:
                        # a failing body redirection is reported at the definition's line
                        self.lineno = func.line or self.lineno
                        status = self.with_redirs(body.redirs, lambda: self.run_script(body.body), False)
                    else:
                        status = self.run_script(body.body)
                else:
                    status = self.execute(body)
            except ReturnFn as r:
                status = r.status
            except ExitShell as x:
                pop_msg = getattr(x, "pop_ctx", False)
                raise
            trap = st.traps.get("RETURN")
            # the trap's lines count from the definition's line
            if trap and not self.in_trap:
                self.in_trap = True
                try:
                    self.run_string(trap, trap="return", first_line=func.line or self.lineno)
                finally:
                    self.in_trap = False
        finally:
            self.errexit_off = off
            self.cmd_frame = frame
            if saved_ret is not None and "RETURN" not in st.traps:
                st.traps["RETURN"] = saved_ret
            if saved_dbg is not None and "DEBUG" not in st.traps:
                st.traps["DEBUG"] = saved_dbg
            self.funcstack.pop()
            self.argv_frames = saved_argv
            if len(st.scopes) > 1:
                sc = st.scopes.pop()
                if sc:
                    if "OPTIND" in sc:
                        self.getopts_state = gs  # (bash: getopts goes on where the caller was)
                    saved_opts = sc.get("-")
                    if saved_opts is not None and type(saved_opts.value) is dict:
                        st.options.update(saved_opts.value)
                    st.env_cache = None
                # else: no locals, the visible variables (and so the environment) are unchanged
            else:
                st.env_cache = None
            st.positional = saved_pos
            self.lineno = saved_line
            self.line_frame = saved_frame
            self.loop_depth = saved_loops
            if err_before is None:
                if status and st.traps:
                    self.fresh_err_trap = st.traps.get("ERR")
            elif not st.options["errtrace"] and "ERR" not in st.traps:
                st.traps["ERR"] = err_before
            if hidden:
                self.err_hidden -= 1
            if pop_msg:
                # bash's unwinding after set -e fired in eval'd or sourced text complains
                # once per function frame it leaves, in the caller's context
                self.error("pop_var_context: head of shell_variables not a function context")
        return status

    # ------------------------------------------------------------------ external commands
    def make_env(self) -> dict[str, str]:
        return dict(self.state.environ())

    def cmd_fs(self) -> CmdFS:
        return CmdFS(self.fs, self.fds)

    def run_external(self, argv: list[str], *, use_path: bool = True, resolved: str | None = None) -> int:
        if self.host is None:
            self.error(f"{argv[0]}: not found" if self.dash
                       else f"{printable_filename(argv[0])}: command not found")
            return 127
        try:
            if resolved is not None:
                return self.host.run_command(self, argv, resolved)
            return self.host.run_command(self, argv)
        finally:
            self.chld_pending += 1
            if self.jobs is not None:
                _notify_job_deaths(self)

    def report_signaled(self, pid: int, sig: int, text: Callable[[], str], err: Any = None) -> None:
        """bash's line for a foreground child a signal ended, on the shell's own stderr
        ``err`` (not the command's redirected one): ``bash: line 1:  4242 Killed
        python3 -c ...`` with the command as written; SIGTERM, and any signal the shell
        traps, as a bare name; SIGINT and SIGPIPE say nothing."""
        if sig in (2, 13) or (self.state.options["posix"] and not self.__dict__.get("script_file")):
            return  # (bash -c in posix mode reports no job's end)
        import signal as _signal
        try:
            name = _signal.strsignal(sig) or f"Unknown signal {sig}"
        except ValueError:
            name = f"Unknown signal {sig}"
        try:
            trapped = _signal.Signals(sig).name[3:] in self.state.traps
        except ValueError:
            trapped = False
        if sig == 15 or trapped:
            line = f"{name}\n"
        else:
            line = f"{self.report_prefix()}{pid:>5} {name:<24}{text()}\n"
        s = err if err is not None else self.fds.get(2)
        if s is not None:
            try:
                s.write(line.encode("utf-8", "surrogateescape"))
            except (OSError, ValueError):
                pass

    def execs_now(self) -> bool:
        """Whether the command running is exec_cmd, the one this shell runs without a fork
        (a nested bash -c forks it once a trap with commands is set)."""
        c = self.exec_cmd
        return c is not None and self.current_command is c and not self.trap_level and not (
            self.top is self and any(self.state.traps.values()))

    def report_prefix(self) -> str:
        """err_prefix() at bash's line for a job report (report_line)."""
        saved = self.lineno
        self.lineno = self.report_line()
        try:
            return self.err_prefix()
        finally:
            self.lineno = saved

    def exec_ended(self, pid: int, sig: int) -> bool:
        """A program this shell ran (``pid``) ended by signal ``sig``: True when it is the
        command this fork execs (exec_cmd; not one inside a function it calls), which then
        ends the fork the same way for its parent to report (killed_by, exec_pid); False
        when the caller reports it itself."""
        if not self.execs_now():
            return False
        self.killed_by = sig
        self.exec_pid = pid
        return True

    def report_pipeline(self, cmd: N.Pipeline, results: list[int], ends: list[Any]) -> None:
        """bash's report of a foreground pipeline a signal ended (notify_of_job_status): the
        job's status is its last stage's (pipefail: the last that failed); when a signal
        other than INT, TERM or PIPE (and not trapped) ended it, every stage with its pid and
        end, ``bash: line 1:  4242 Done                    seq 3`` then ``      4243 Killed
        | sleep 5``; TERM or a trapped signal: its bare name; nothing in $( ) or in a
        ``bash -c`` in posix mode. ``ends[i]``: (pid, or the stage's fork, or None; signal
        or 0) as the pipeline's paths record them."""
        if self.in_cmdsub or (self.state.options["posix"] and not self.__dict__.get("script_file")):
            return
        job = getattr(self, "_bg_job", None)
        own = job is not None and getattr(self, "job_cmd", None) is cmd  # (the job is this pipeline)
        n = len(results)
        sigs = [0] * n
        for i in range(n):
            e = ends[i]
            if e is not None and e[1]:
                sigs[i] = e[1]
            elif results[i] == 141 and e is None:
                sigs[i] = 13  # (a stage run in this shell that met EPIPE: bash's died of SIGPIPE)
        last = n - 1
        if self.state.options["pipefail"]:
            last = next((i for i in range(n - 1, -1, -1) if sigs[i] or results[i]), n - 1)
        sig = sigs[last]
        if not sig or sig in (2, 13):
            return
        import signal as _signal
        try:
            trapped = _signal.Signals(sig).name[3:] in self.state.traps
        except ValueError:
            trapped = False

        def name(k: int) -> str:
            if sigs[k]:
                try:
                    return _signal.strsignal(sigs[k]) or f"Signal {sigs[k]}"
                except ValueError:
                    return f"Signal {sigs[k]}"
            st = results[k]
            if not st:
                return "Done"
            return f"Done({st})" if self.state.options["posix"] else f"Exit {st}"
        if own or job is not None and (job.killed or self.budget.cancelled):
            if own and not (sig == 15 or trapped):
                job.listing = "".join(self._stage_lines(cmd, results, ends, sigs, name))
                job.signaled = True  # (reported by the shell that waits for it, at its line)
            return
        if sig == 15 or trapped:
            self.write_err(f"{name(last)}\n".encode())
            return
        self.write_err((self.report_prefix() + "".join(self._stage_lines(cmd, results, ends, sigs, name)))
                       .encode("utf-8", "surrogateescape"))

    def _stage_lines(self, cmd: N.Pipeline, results: list[int], ends: list[Any], sigs: list[int],
                     name: Callable[[int], str]) -> list[str]:
        """report_pipeline's lines, one per stage (pid, end, command)."""
        from .pids import reserve
        from .unparse import format_command
        lines: list[str] = []
        first = (sigs[0], results[0] if not sigs[0] else 0)
        stderr_too = cmd.stderr_too
        for k, c in enumerate(cmd.cmds):
            e = ends[k]
            who = e[0] if e is not None else None
            pid = who if type(who) is int else (who.exec_pid or who.bashpid) if who is not None else reserve()
            text = name(k)
            if k and (sigs[k], results[k] if not sigs[k] else 0) == first:
                text = ""
            lines.append(f"{'     ' if k else ''}{pid:>5} {text:<{24 if text else 22}}{'| ' if k else ''}")
            ctext = format_command(c)
            if k < len(stderr_too) and stderr_too[k]:
                ctext += " 2>&1"
            lines.append(ctext + "\n")
        return lines

    def command_text(self, argv: list[str]) -> str:
        """The simple command running ``argv`` as bash prints it (words as written, then its
        redirections), or ``argv`` quoted when that command is not at hand."""
        cc = self.current_command
        if callable(cc):
            cc = self.current_command = cc()
        if not self.trap_level and type(cc) is N.Simple and cc.words:
            return _cmd_text(cc)
        import shlex
        return shlex.join(argv)

    def run_pending(self) -> None:
        """Before a command: signals its subshells and jobs sent to this shell (``kill $$``),
        then the CHLD trap."""
        if self.sig_queue and self.top is self:
            self.take_signals()
        if self.chld_pending:
            if "CHLD" in self.state.traps:
                self.run_chld_trap()
            else:
                self.chld_pending = 0  # (what run_chld_trap does without a trap)

    def take_signals(self) -> None:
        """Act on the signals sent to this shell as bash does once its foreground command is
        done: a trap runs, an ignored or harmless one is dropped, any other ends the shell
        with 128+n (raises ExitShell)."""
        q = self.sig_queue
        while q:
            sig = q.pop(0)
            trap = self.state.traps.get(sig)
            if trap is not None:
                if trap:
                    self.run_string(trap, trap=True)
                continue
            if sig in ("CHLD", "WINCH", "URG", "CONT", "STOP", "TSTP", "TTIN", "TTOU", "EXIT"):
                continue
            from .builtins import SIGNALS
            self.killed_by = SIGNALS.get(sig, 15)
            del q[:]
            raise ExitShell(128 + self.killed_by)

    def run_chld_trap(self) -> None:
        """bash runs the CHLD trap once for each child it reaped (a command run as a process,
        a subshell, a pipeline's stages, a background job), before the next command; never
        inside itself, and what the trap's own commands start does not count."""
        n = self.chld_pending
        self.chld_pending = 0
        trap = self.state.traps.get("CHLD")
        if not trap or self.in_chld:
            return
        self.in_chld = True
        try:
            for _ in range(n):
                self.run_string(trap, trap=True)
        finally:
            self.in_chld = False
            self.chld_pending = 0

    def read_line(self, stream: Any, fd: int = 0) -> str | None:
        """One line of input (select's reply), bounded like read's; a read error is reported
        as bash does (``read error: 0: Is a directory``) and taken for the end of input."""
        if stream is None:
            return None
        parts = []
        size = 0
        try:
            while True:
                chunk = stream.readline(65536)
                if not chunk:
                    break
                parts.append(chunk)
                size += len(chunk)
                if chunk.endswith(b"\n"):
                    break
                self.budget.check_size(size, "read")
        except OSError as e:
            self.error(f"read error: {fd}: {os.strerror(e.errno or _errno.EIO)}")
            return None
        if not parts:
            return None
        return b"".join(parts).decode("utf-8", "surrogateescape")

    # ------------------------------------------------------------------ redirections
    def apply_redirs(self, redirs: tuple[N.Redir, ...], fds: dict[int, Any], opened: list[Any]) -> dict[int, Any]:
        # redirections apply left to right: a later one's error message (and its target's
        # expansions) already see the earlier ones (`2>&1 >/missing` reports on stdout)
        saved = self.fds
        self.fds = fds
        try:
            for r in redirs:
                self._apply_redir(r, fds, opened)
        finally:
            self.fds = saved
        return fds

    def _redir_path(self, r: N.Redir) -> str:
        w = r.target
        try:
            if self.state.options.get("posix"):
                # a non-interactive posix-mode shell neither splits nor globs a
                # redirection's word (`cat < *.txt` opens a file named *.txt)
                v = self.expand_str(w, tilde=True)  # type: ignore[arg-type]
                quoted = any(type(p) in (N.SQ, N.DQ, N.ANSIC, N.Escaped) for p in w.parts)  # type: ignore[union-attr]
                fields = [v] if v or quoted else []
            else:
                fields = self.expand_words([w])  # type: ignore[list-item]
        except ExpansionError as e:
            self.error(e.message)
            if e.fatal and not self.redir_external:
                raise expansion_exit(e) from None
            err = RedirError()
            err.status = e.status if e.fatal else 1
            raise err from None
        if len(fields) != 1:
            self.error(f"{w.text}: ambiguous redirect")  # type: ignore[union-attr]
            raise RedirError()
        return fields[0]

    def open_file(self, path: str, mode: str) -> Any:
        """Open ``path`` for a redirection; /dev/* specials handled here."""
        if path.startswith("/dev/"):
            rest = path[5:]
            if rest == "null":
                return NullStream(), False
            if rest in ("stdin", "stdout", "stderr"):
                n = {"stdin": 0, "stdout": 1, "stderr": 2}[rest]
                s = self.fds.get(n)
                if s is None:
                    raise OSError(_errno.EBADF, "Bad file descriptor")
                return s, False
            if rest.startswith("fd/") and rest[3:].isdigit():
                s = self.fds.get(int(rest[3:]))
                if s is None:
                    raise OSError(_errno.EBADF, "Bad file descriptor")
                return s, False
            # `< /dev/zero` is the filesystem's endless device (a 64 KiB BytesIO here made
            # `tr -d x < /dev/zero | head -c 100000` stop at 65536 bytes)
            if rest in ("tty",):
                raise OSError(_errno.ENXIO, "No such device or address")
            if rest.startswith(("tcp/", "udp/")):
                # bash's network redirections: the host executor opens them under its
                # network policy (agentic_bash.network.devtcp); without one, a plain path
                opener = getattr(self.host, "open_socket", None)
                f = opener(path) if opener is not None else None
                if f is not None:
                    return f, True
        p = normalize(path, self.state.cwd)
        if "w" in mode and self.state.options["noclobber"] and mode == "wb":
            try:
                stt = self.fs.stat(p)
                if not stt.is_dir and stt.is_file:
                    raise _Clobber()
            except FileNotFoundError:
                pass
        return self.fs.open(p, mode, 0o666 & ~self.state.umask), True

    def _redir_expansion_failed(self, e: ExpansionError) -> None:
        """An expansion error in a here-document or here-string: bash expands a program's
        in the forked child, where any error (even set -u's or ${x:?}) just fails that
        command, with 127 for those two; a builtin's, a function's or a compound command's
        is the shell's own, as in a word (set -u ends it, $((1/0)) drops the line)."""
        self.error(e.message)
        if e.fatal and not self.redir_external:
            raise expansion_exit(e) from None
        err = RedirError()
        # (the forked child of a `$( … )` ends with 1 there, as a script's shell does)
        err.status = 127 if e.status == 127 and not self.in_cmdsub else 1
        raise err from None

    def _apply_redir(self, r: N.Redir, fds: dict[int, Any], opened: list[Any]) -> None:
        op = r.op
        if op in ("<<", "<<-"):
            hd = r.target
            if hd.quoted:  # type: ignore[union-attr]
                body = self._word_src(hd.body)  # type: ignore[union-attr]
            else:
                try:
                    body = self.expand_dq(hd.body)  # type: ignore[union-attr]
                except ExpansionError as e:
                    self._redir_expansion_failed(e)
            self.budget.check_size(len(body), "here-document")
            fd = 0 if r.fd is None else r.fd
            if r.fd_var is not None:
                fd = self._alloc_fd(fds)
                self._set_fd_var(r.fd_var, fd)
            fds[fd] = HereDoc(body.encode("utf-8", "surrogateescape"))
            return
        if op == "<<<":
            try:
                s = self.expand_str(r.target, tilde=True)  # type: ignore[arg-type]
            except ExpansionError as e:
                self._redir_expansion_failed(e)
            self.budget.check_size(len(s) + 1, "here-string")
            fd = 0 if r.fd is None else r.fd
            if r.fd_var is not None:
                fd = self._alloc_fd(fds)
                self._set_fd_var(r.fd_var, fd)
            fds[fd] = HereDoc((s + "\n").encode("utf-8", "surrogateescape"))
            return
        if op in (">&", "<&"):
            tw = r.target
            try:
                fields = self.expand_words([tw])  # type: ignore[list-item]
            except ExpansionError as e:
                self.error(e.message)
                if e.fatal:
                    raise expansion_exit(e) from None
                raise RedirError() from None
            if len(fields) != 1:
                self.error(f"{tw.text}: ambiguous redirect")  # type: ignore[union-attr]
                raise RedirError()
            t = fields[0]
            fd = r.fd if r.fd is not None else (1 if op == ">&" else 0)
            if t == "-" and r.fd_var is not None:
                # exec {v}>&- closes the descriptor whose number is in $v
                v = self.get_scalar_ref(r.fd_var)
                if v is not None and v.isdigit():
                    fds.pop(int(v), None)
                return
            if r.fd_var is not None:
                fd = self._alloc_fd(fds)
            if t == "-":
                fds.pop(fd, None)
                return
            move = t.endswith("-") and t[:-1].isdigit()
            if move:
                t = t[:-1]
            if t.isdigit():
                src = int(t)
                if src == fd and r.fd_var is None:
                    return  # `3>&3`, `3>&3-`: bash does nothing, open or not
                s = fds.get(src)
                if s is None:
                    # bash names the word as written (`>&$fd` -> "$fd: Bad file descriptor")
                    self.error(f"{getattr(tw, 'text', '') or t}: Bad file descriptor")
                    raise RedirError()
                fds[fd] = s
                if move:
                    fds.pop(src, None)
                if r.fd_var is not None:
                    self._set_fd_var(r.fd_var, fd)
                return
            if op == ">&" and r.fd is None and r.fd_var is None:
                op = "&>"
                path = t
            elif op == ">&" and r.fd == 1:
                op = ">"  # 1>&file: stdout to a file, as bash
                path = t
            else:
                # bash: `2>&file`, `{v}>&file` and `<&file` are not redirections to a file
                self.error(f"{r.fd_var if r.fd_var is not None else t}: ambiguous redirect")
                raise RedirError()
        else:
            path = self._redir_path(r)
        if path == "":
            self.error(": No such file or directory")
            raise RedirError()
        mode = _REDIR_MODES[op]
        try:
            try:
                f, own = self.open_file(path, "wb" if mode == "wb!" else mode) if mode != "wb!" else self._open_force(path)
            except FileNotFoundError:
                if mode == "r+b":
                    f, own = self.open_file(path, "w+b")
                else:
                    raise
        except _Clobber:
            self.error(f"{path}: cannot overwrite existing file")
            raise RedirError() from None
        except IsADirectoryError:
            if mode != "rb":
                self.error(f"{path}: Is a directory")
                raise RedirError() from None
            f, own = DirInput(path), False
        except OSError as e:
            msg = os.strerror(e.errno) if e.errno else str(e)
            self.error(f"{path}: {msg}")
            raise RedirError() from None
        if own:
            opened.append(f)
        if op in ("&>", "&>>"):
            fds[1] = f
            fds[2] = f
            return
        fd = r.fd if r.fd is not None else (0 if op in ("<", "<>") else 1)
        if r.fd_var is not None:
            fd = self._alloc_fd(fds)
            self._set_fd_var(r.fd_var, fd)
        fds[fd] = f

    def _set_fd_var(self, name: str, fd: int) -> None:
        """``{v}>file`` stores the descriptor number in ``v`` (or an element, ``{a[1]}``)."""
        try:
            if name.endswith("]"):
                base, _, sub = name.partition("[")
                self.assign_element(base, N.Word((N.Lit(sub[:-1]),), sub[:-1]), str(fd))
            else:
                self.set_var(name, str(fd))
        except VarError as e:
            self.error(e.message)
            self.error(f"{name}: cannot assign fd to variable")
            raise RedirError() from None

    def _open_force(self, path: str) -> Any:
        nc = self.state.options["noclobber"]
        self.state.options["noclobber"] = False
        try:
            return self.open_file(path, "wb")
        finally:
            self.state.options["noclobber"] = nc

    @staticmethod
    def _alloc_fd(fds: dict[int, Any]) -> int:
        fd = 10
        while fd in fds:
            fd += 1
        return fd


# open() mode of each file redirection; "wb!" is `>|` (writes even under noclobber)
_REDIR_MODES = {"<": "rb", ">": "wb", ">|": "wb!", ">>": "ab", "<>": "r+b", "&>": "wb", "&>>": "ab"}


class _Clobber(Exception):
    pass


class _CondError(Exception):
    pass


class _AmpRepl:
    """Replacement text with bash's ``&`` (the matched text) for patsub_replacement."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __call__(self, match: str) -> str:
        out = []
        t = self.text
        i = 0
        while i < len(t):
            c = t[i]
            if c == "\\" and i + 1 < len(t):
                out.append(t[i + 1])
                i += 2
                continue
            out.append(match if c == "&" else c)
            i += 1
        return "".join(out)


def _replace_amp(s: str, pat: str, repl: Any, mode: str, nocase: bool, extglob: bool = True) -> str:
    """``${s/p/r}`` where r uses ``&`` for the matched text (patsub_replacement)."""
    from .patterns import _compile
    n = len(s)
    if mode == "prefix":
        rx = _compile(pat, extglob, nocase, False, False)
        for i in range(n, -1, -1):
            if rx.fullmatch(s, 0, i):
                return repl(s[:i]) + s[i:]
        return s
    if mode == "suffix":
        rx = _compile(pat, extglob, nocase, False, False)
        for i in range(n + 1):
            if rx.fullmatch(s, i, n):
                return s[:i] + repl(s[i:])
        return s
    if not pat:
        return s
    rx = _compile(pat, extglob, nocase, False, True)
    if n == 0:
        return repl("") if rx.fullmatch(s) else s
    out: list[str] = []
    pos = 0
    while pos < n:
        m = rx.search(s, pos)
        if m is None or m.start() >= n:
            break
        a, b = m.span()
        out.append(s[pos:a])
        out.append(repl(m.group(0)))
        if b == a:
            out.append(s[a])
            b = a + 1
        pos = b
        if mode == "first":
            break
    out.append(s[pos:])
    return "".join(out)


def _assoc_key(k: str) -> str:
    """A key as declare -p shows it: double-quoted when bash's sh_contains_shell_metas says
    so (a ~ only first or after = or :, a # only first), or when it is @ (the all-elements
    subscript)."""
    from .builtins_compat import quote_declare
    if k and k != "@" and not _KEY_METAS.search(k) and not _KEY_TILDE.search(k) and k[0] != "#":
        return k
    return quote_declare(k)


_KEY_METAS = _lazy_re(r"[ \t\n'\"\\|&;()<>!{}*\[?\]^$`\x00-\x1f\x7f]")
_KEY_TILDE = _lazy_re(r"(?:^|[=:])~")


# dynamic variables bash's listings show with a value (BASH_ARGC/BASH_ARGV are filled only
# under extdebug, BASH_ALIASES/BASH_CMDS not kept here)
_LISTED_DYNAMIC = ("BASHOPTS", "BASH_ALIASES", "BASH_ARGC", "BASH_ARGV", "BASH_CMDS",
                   "BASH_EXECUTION_STRING", "BASH_LINENO", "BASH_SOURCE", "DIRSTACK",
                   "FUNCNAME", "GROUPS", "SHELLOPTS")
_DECL_LISTED = ("BASH_ARGV0", "COMP_WORDBREAKS")
_DECL_VALUELESS = (("BASHPID", INTEGER), ("BASH_COMMAND", 0), ("BASH_SUBSHELL", 0), ("EPOCHREALTIME", 0),
                   ("EPOCHSECONDS", 0), ("HISTCMD", INTEGER), ("LINENO", 0), ("RANDOM", INTEGER),
                   ("SECONDS", 0), ("SRANDOM", INTEGER))
# dynamic variables that `unset` leaves as they are (PIPESTATUS is rebuilt by every pipeline)
_KEEP_SPECIAL = frozenset({"PWD", "PIPESTATUS", "SHELLOPTS", "BASHOPTS"})
# dynamic variables always in bash's table (${!BASH@}, compgen -v), FUNCNAME only in a function
_TABLE_DYNAMIC = ("BASHOPTS", "BASHPID", "BASH_ALIASES", "BASH_ARGC", "BASH_ARGV", "BASH_ARGV0",
                  "BASH_CMDS", "BASH_COMMAND", "BASH_LINENO", "BASH_SOURCE", "BASH_SUBSHELL",
                  "COMP_WORDBREAKS", "DIRSTACK", "EPOCHREALTIME", "EPOCHSECONDS", "FUNCNAME", "GROUPS", "LINENO",
                  "PIPESTATUS", "RANDOM", "SECONDS", "SHELLOPTS", "SRANDOM")
# builtins whose prefix assignments form bash's "builtin environment" (see TempScope)
_BLTN_ENV = frozenset({"eval", "source", ".", "unset", "mapfile", "readarray"})
_DECL_NAMES = frozenset({"declare", "typeset", "local", "export", "readonly"})
_DECL_ASSIGN_RE = _lazy_re(r"[A-Za-z_][A-Za-z_0-9]*(\[[^]]*\])?\+?=")


def _is_decl(w: N.Word) -> bool:
    p = w.parts
    return len(p) == 1 and type(p[0]) is N.Lit and p[0].text in _DECL_NAMES


_ARITH_COMMENT = _lazy_re(r"[ \t]#[^\n]*\Z")


def _single_quote(t: str) -> str:
    from .quoting import quote_single
    return quote_single(t)


_DASH_ARITH = (("division by 0", "division by zero"), ("operand expected", "expecting primary"),
               ("missing `)'", "expecting ')'"))


def _dash_arith_error(e: ExpansionError, expr: str) -> None:
    """`sh` is dash here: an arithmetic error reads `arithmetic expression: REASON: "EXPR"`
    and ends the shell with status 2."""
    if e.message.startswith("arithmetic expression: "):
        return
    why = e.message.partition(": ")[2]
    reason = next((d for b, d in _DASH_ARITH if b in why), "expecting EOF")
    e.message = f'arithmetic expression: {reason}: "{expr}"'
    e.status = 2
    e.discard = False
    e.arith = False  # type: ignore[attr-defined]
    e.subst = False  # type: ignore[attr-defined]


def _decl_compound(sh: Interpreter, argv: list[str], assign: N.Assign) -> bool:
    from .builtins import decl_compound
    return decl_compound(sh, argv, assign)


def _sh_single_quote(t: str) -> str:
    """bash's sh_single_quote: always '...', an embedded ' as '\\''."""
    return "'" + t.replace("'", "'\\''") + "'"


def _arith_for_err(sh: Interpreter, e: ExpansionError) -> None:
    """Report a for (( )) expression error; set -u's unbound variable ends the shell."""
    sub = getattr(e, "subscript", False)
    if not sub and not getattr(e, "subst", False) and e.status != 127 \
            and not e.message.endswith(": readonly variable"):
        sh.error(e.message.lstrip())  # a bad substitution in the text: reported as is, drops the line
        raise expansion_exit(e)
    sh.error(_arith_for_msg(e.message, sub))
    if e.status == 127 and e.message.endswith(": unbound variable"):
        raise ExitShell(127)
    if e.message.endswith(": readonly variable") and sh.state.options["errexit"]:
        raise ExitShell(1)  # bash: set -e ends the shell here (an arithmetic error does not)
    if getattr(e, "subscript", False):
        raise expansion_exit(e)


def _arith_for_msg(msg: str, subscript: bool = False) -> str:
    """bash prefixes (( )) expression errors with "((: ", not unbound or readonly variables
    (those are reported where the variable is read or assigned) nor subscript errors."""
    return msg if subscript or msg.endswith(("unbound variable", ": readonly variable")) \
        or msg.startswith("((") else "((: " + msg


def _xq(w: str) -> str:
    """Quote one word the way ``set -x`` prints it."""
    from .quoting import quote_xtrace
    return quote_xtrace(w)


def _await_writer(reader: Any) -> None:
    """A `>(cmd)` starts once the shell wrote into it or closed it (at most _PROCSUB_LAG ms):
    after bash's fork the shell nearly always writes first, so `echo hi > >(true)` is 0 (the
    pipe takes the line before its reader is gone); a thread started at once made it 141."""
    from ..isolation.fdwait import readable
    try:
        readable([reader], _PROCSUB_LAG / 1000)
    except (OSError, ValueError, AttributeError):
        time.sleep(0.004)


def _close(f: Any) -> None:
    try:
        f.close()
    except Exception:
        pass


def _timeformat(fmt: str, real: float, user: float = 0.0, sys_: float = 0.0) -> str:
    """bash's TIMEFORMAT: %[p][l]R|U|S, %P (CPU percentage: (user+sys)/real), %%."""
    out = []
    i = 0
    n = len(fmt)
    while i < n:
        c = fmt[i]
        if c != "%" or i + 1 >= n:
            out.append(c)
            i += 1
            continue
        i += 1
        if fmt[i] == "%":
            out.append("%")
            i += 1
            continue
        prec = 3
        if fmt[i].isdigit():
            prec = min(int(fmt[i]), 3)
            i += 1
        long = False
        if i < n and fmt[i] == "l":
            long = True
            i += 1
        if i >= n:
            out.append("%")
            break
        k = fmt[i]
        i += 1
        if k == "P":
            out.append(f"{(user + sys_) * 100 / real if real > 0 else 0.0:.2f}")
            continue
        if k not in "RUS":
            out.append("%" + k)
            continue
        v = real if k == "R" else user if k == "U" else sys_
        if long:
            m = int(v // 60)
            sec = v - 60 * m
            out.append(f"{m}m{sec:.{prec}f}s")
        else:
            out.append(f"{v:.{prec}f}")
    return "".join(out)


def _fmt_lr(t: float) -> str:
    m = int(t // 60)
    return f"{m}m{t - 60 * m:.3f}s"


# Per-node plans for simple commands (keyed by id; the entry holds the node, so the id stays
# its own): what exec_simple can do without the general expansion machinery.
_P_GENERAL, _P_LIT, _P_ARITH, _P_PARAM, _P_ARGV, _P_ARGVP = 0, 1, 2, 3, 4, 5
# an unquoted $name whose value is one of these characters only stays one word as it is
_SAFE_VALUE = _lazy_re(r"[A-Za-z0-9_./:,%=+@-]+\Z")


def _simple_param(p: Any, quoted: bool) -> bool:
    """``$name`` / ``${name}`` of an ordinary variable (not special, positional or dynamic)."""
    return (type(p) is N.Param and not p.op and not p.prefix and p.index is None
            and _plain_name(p.name) < 0)
_STATIC_WORD = re.compile(r"[^*?\[{~@!+]*\Z")  # no glob, brace, tilde or extglob character


def _static_lit(text: str) -> bool:
    """An unquoted literal word that expands to itself (``[`` and ``]`` are no glob patterns)."""
    if _STATIC_WORD.match(text):
        return True
    return "{" not in text and "~" not in text and "\\" not in text \
        and not _patterns.has_magic(text, extglob=True)


def _bare_exec(argv: list[str]) -> bool:
    """``exec`` with only redirections, whose descriptors stay for the rest of the shell; also
    through ``command`` (``command exec 2>>log``), though not through ``builtin`` (bash)."""
    if argv[0] == "command":
        argv = argv[2:] if argv[1:2] == ["--"] else argv[1:]
        if not argv:
            return False
    return argv[0] == "exec" and (len(argv) == 1 or argv[1:] == ["--"])


def _reads_stdin_only(sh: Interpreter, argv: tuple[str, ...]) -> bool:
    """Whether a _DIRECT_MIDDLE command with these words reads nothing but its standard
    input: tr never opens a file; for the others no word may name an existing file (a FIFO
    could block, /dev/zero never ends, a large file is not small input), no option may carry
    a path (``-f/dev/stdin``) or be long, and grep may not recurse (-r/-R/-d) or read
    patterns from a file (-f)."""
    name = argv[0]
    if name == "tr":
        return True
    fs = sh.fs
    cwd = sh.state.cwd
    grep = name in ("grep", "egrep", "fgrep")
    for w in argv[1:]:
        if w[:1] == "-" and w != "-":
            if w[:2] == "--" or "/" in w or (grep and any(c in w for c in "rRdfD")):
                return False
            continue
        if w == "-" or "/" in w:
            return False
        try:
            if fs.lexists(normalize(w, cwd)):
                return False
        except (OSError, ValueError):
            return False
    return True


def _simple_plan(cmd: N.Simple) -> tuple[Any, ...]:
    plan: tuple[Any, ...] = (_P_GENERAL,)
    if not cmd.redirs:
        if not cmd.words and len(cmd.assigns) == 1:
            a = cmd.assigns[0]
            w = a.value
            if w is not None and a.array is None and a.index is None and not a.append \
                    and len(w.parts) == 1:
                p = w.parts[0]
                tp = type(p)
                if (tp is N.Lit and "~" not in p.text) or tp is N.SQ:  # type: ignore[union-attr]
                    plan = (_P_LIT, a.name, p.text)  # type: ignore[union-attr]
                elif tp is N.ArithSub and len(p.expr.parts) == 1 and type(p.expr.parts[0]) is N.Lit \
                        and "#" not in p.expr.text:  # type: ignore[union-attr]
                    plan = (_P_ARITH, a.name, p.expr.parts[0].text)  # type: ignore[union-attr]
                elif tp is N.DQ and len(p.parts) == 1:  # type: ignore[union-attr]
                    p = p.parts[0]  # type: ignore[union-attr]
                    tp = type(p)
                if tp is N.Param and not p.op and not p.prefix and p.index is None:  # type: ignore[union-attr]
                    plan = (_P_PARAM, a.name, p)
        elif cmd.words and not cmd.assigns:
            argv: list[Any] = []
            params = False
            for w in cmd.words:
                if len(w.parts) != 1:
                    break
                p = w.parts[0]
                tp = type(p)
                if tp is N.Lit and _static_lit(p.text):  # type: ignore[union-attr]
                    argv.append(p.text)  # type: ignore[union-attr]
                elif tp is N.SQ or tp is N.Escaped or tp is N.ANSIC:
                    argv.append(p.text)  # type: ignore[union-attr]
                elif tp is N.DQ and all(type(q) is N.Lit for q in p.parts):  # type: ignore[union-attr]
                    argv.append("".join([q.text for q in p.parts]))  # type: ignore[union-attr]  # "text"
                elif argv and _simple_param(p, False):
                    argv.append((p, False))  # $name
                    params = True
                elif argv and tp is N.DQ and len(p.parts) == 1 and _simple_param(p.parts[0], True):  # type: ignore[union-attr]
                    argv.append((p.parts[0], True))  # "$name"  # type: ignore[union-attr]
                    params = True
                else:
                    break
            else:
                if argv[0] not in _DECL_NAMES:
                    # (the flag: a later word would be an assignment under `set -k`)
                    flag = any(type(a) is str and _ASSIGN_WORD.match(a) for a in argv[1:])
                    plan = (_P_ARGVP if params else _P_ARGV, tuple(argv), flag)
    object.__setattr__(cmd, "plan", plan)
    return plan


_ASSIGN_WORD = _lazy_re(r"[A-Za-z_][A-Za-z0-9_]*(?:\[[^]]*\])?\+?=")


def _keyword_assigns(cmd: N.Simple, extglob: bool) -> N.Simple:
    """`set -k`: words after the command name that are assignments (an unquoted ``NAME=``
    start) go to the command's environment like prefix assignments."""
    from .parser import _decl_assign
    assigns = list(cmd.assigns)
    words = [cmd.words[0]]
    for w in cmd.words[1:]:
        p0 = w.parts[0] if w.parts else None
        a = (_decl_assign(w.text, w.line, extglob)
             if type(p0) is N.Lit and _ASSIGN_WORD.match(p0.text) else None)  # type: ignore[union-attr]
        if a is None:
            words.append(w)
        else:
            assigns.append(a)
    if len(words) == len(cmd.words):
        return cmd
    return N.Simple(tuple(assigns), tuple(words), cmd.redirs, cmd.line)


def exec_candidate(tree: N.Script) -> N.Simple | None:
    """The command bash runs with exec (no fork) when it gets to it, in ``bash -c`` and in a
    ``( … )``: the last simple command of the list or of its last &&/|| list, without
    redirections; a signal that kills it kills that shell."""
    if not tree.items or tree.items[-1].background:
        return None
    c: Any = tree.items[-1].cmd
    if type(c) is N.AndOr:
        if len(tree.items) > 1:
            return None  # (bash 5.2: `a; b && c` forks c, a lone `b && c` execs it)
        c = c.rest[-1][1] if c.rest else c.first
    return c if type(c) is N.Simple and not c.redirs else None


class StageResults(list):
    """A pipeline's stage statuses (PIPESTATUS), with ``ends``: per stage, (its pid or its
    fork or None, the signal that ended it or 0), for Interpreter.report_pipeline."""

    __slots__ = ("ends",)
    ends: list[Any]


def stage_results(n: int) -> StageResults:
    """A StageResults of ``n`` stages, all 0 and no end recorded."""
    r = StageResults(_ZEROS[n] if n < 8 else [0] * n)
    r.ends = [None] * n
    return r


_ZEROS = [[0] * k for k in range(8)]


def _cmd_text(cmd: N.Simple) -> str:
    """The command as BASH_COMMAND shows it: words as written, then the redirections the way
    bash's print_cmd spells them (``2> /dev/null``, ``1>&2``, here-document bodies last)."""
    text = " ".join([f"{a.name}={a.value.text if a.value else ''}" for a in cmd.assigns] + [w.text for w in cmd.words])
    if not cmd.redirs:
        return text
    parts = [text] if text else []
    bodies = []
    for r in cmd.redirs:
        op, fd, tgt = r.op, r.fd, r.target
        lead = "{" + r.fd_var + "}" if r.fd_var else ""
        if type(tgt) is N.HereDoc:
            parts.append(f"{lead}{'' if fd is None else fd}{op}" + (f"'{tgt.delimiter}'" if tgt.quoted else tgt.delimiter))
            bodies.append(tgt.body.text + tgt.delimiter + "\n")
            continue
        word = tgt.text
        if op in ("<&", ">&"):
            n = fd if fd is not None else (0 if op == "<&" else 1)
            parts.append(f"{lead or n}>&-" if word == "-" else f"{lead or n}{op}{word}")
        elif op == "<>":
            parts.append(f"{lead or (0 if fd is None else fd)}<> {word}")
        elif op in ("&>", "&>>", "<<<"):
            parts.append(f"{op} {word}")
        else:
            default = 0 if op == "<" else 1
            parts.append(f"{lead}{'' if fd is None or fd == default else fd}{op} {word}")
    out = " ".join(parts)
    return out + "\n" + "".join(bodies) if bodies else out


_ERE_CACHE: dict[tuple[str, bool], Any] = {}


_ERE_INTERVAL = _lazy_re(r"\{(\d*)(,\d*)?\}")


def _ere_bad_repeat(pat: str) -> bool:
    """glibc regcomp (REG_EXTENDED) rejects a repetition with nothing to repeat (``*a``,
    ``(+``, ``a|?``) and a ``{`` that does not start a valid interval (``{``, ``a{1``,
    ``{}``); GNU grep's engine accepts them as literals, bash's =~ returns 2."""
    n = len(pat)
    i = 0
    atom = False
    while i < n:
        c = pat[i]
        if c == "\\":
            i += 2
            atom = True
            continue
        if c == "[":
            j = i + 1
            if j < n and pat[j] == "^":
                j += 1
            if j < n and pat[j] == "]":
                j += 1
            while j < n and pat[j] != "]":
                if pat[j] == "[" and j + 1 < n and pat[j + 1] in ":.=":
                    close = pat.find(pat[j + 1] + "]", j + 2)
                    if close < 0:
                        break
                    j = close + 2
                    continue
                j += 1
            i = j + 1
            atom = True
            continue
        if c in "*+?":
            if not atom:
                return True
        elif c == "{":
            if not atom:
                return True
            m = _ERE_INTERVAL.match(pat, i)
            if m is None or (m.group(1) == "" and not m.group(2)):
                return True
            i = m.end()
            continue
        elif c in "(|":
            atom = False
            i += 1
            continue
        elif c == "^":
            atom = False
            i += 1
            continue
        else:
            atom = True
        i += 1
    return False


def _compile_ere(pat: str, nocase: bool, utf8: bool = True) -> Any:
    key = (pat, nocase, utf8)
    rx = _ERE_CACHE.get(key)
    if rx is None:
        if _ere_bad_repeat(pat):
            raise ValueError("invalid repetition")
        # glibc's regcomp (REG_EXTENDED) is GNU ERE: \< \> \b \w word operators, a
        # backslash taken literally inside brackets; the grep translation speaks it
        # (no lines here: "." matches a newline; the C locale's byte view is one char a byte)
        from ..commands._regex import compile_posix
        rx = compile_posix(pat, extended=True, icase=nocase, dotall=True, utf8=utf8).rx
        if len(_ERE_CACHE) > 512:
            _ERE_CACHE.clear()
        _ERE_CACHE[key] = rx
    return rx


def _named_error(msg: str) -> VarError:
    """A VarError the builtin's name prefixes (built here: see _subst_exceeded)."""
    err = VarError(msg)
    err.builtin_named = True  # type: ignore[attr-defined]
    return err


class _SubstCapture(Capture):
    """Output of a command substitution. Past ``max_variable_bytes`` the writer is stopped
    and the run fails (LimitExceeded), as bash dies of xmalloc: `x=$(yes)` must not keep
    the CPU busy (and drop bytes) until the deadline."""

    __slots__ = ()
    keep_tail = False  # the value is cut and the run fails: no tail to keep

    def write(self, data: bytes) -> int:
        n = Capture.write(self, data)
        if self.truncated:
            # (raised with no local naming it: a frame holding its own exception is a cycle
            # that kept this capture's whole buffer alive until a generation-2 collection,
            # +64 MiB of process memory per `x=$(yes)`, 2.6 GiB after a few runs)
            raise _subst_exceeded(self.limit)
        return n


def _subst_exceeded(limit: int | None) -> LimitExceeded:
    e = LimitExceeded("max_variable_bytes",
                      f"command substitution: output exceeds max_variable_bytes ({limit} bytes)")
    e.shell = True  # type: ignore[attr-defined]  # the shell's own, not the writing tool's
    return e


class _ArithVars:
    """Adapter: the interpreter's variables as arith.ArithVars."""

    __slots__ = ("sh",)

    def __init__(self, sh: Interpreter) -> None:
        self.sh = sh

    def get(self, name: str, index: str | None) -> str | None:
        sh = self.sh
        if index is None:
            if name not in DYNAMIC:
                scopes = sh.state.scopes
                v = scopes[-1].get(name)
                if v is None and len(scopes) > 1:
                    v = sh.state.find(name)
                if v is not None and not v.attrs & NAMEREF:
                    val = v.value
                    if type(val) is str:
                        return val
            return self._get_plain(name)
        if not index:
            sh.error(f"{name}[]: bad array subscript")
            sh.error(f"{name}[]: bad array subscript")
            return None
        rname = sh.state.resolve_ref(name)
        var = sh.lookup_var(rname)
        if var is None or var.value is None:
            if sh.state.options["nounset"]:
                raise VarError(f"{name}: unbound variable")
            if index[:1] == "-" and (var is None or not var.attrs & ASSOC):
                sh.error(f"{name}: bad array subscript")  # and the value is 0 (bash)
            return None
        val = var.value
        if type(val) is dict:
            if var.attrs & ASSOC:
                return val.get(index)
            i = int(index)
            if i < 0:
                i = (max(val) + 1 if val else 0) + i
                if i < 0:
                    sh.error(f"{name}: bad array subscript")
                    return None
            return val.get(i)
        if index[:1] == "-":
            sh.error(f"{name}: bad array subscript")
            return None
        return val if index == "0" else None

    def _get_plain(self, name: str) -> str | None:
        sh = self.sh
        v = sh.get_scalar(name) if not name.isdigit() else sh.special_or_var(name)
        if v is None and sh.state.options["nounset"]:
            raise VarError(f"{name}: unbound variable")
        return v

    def set(self, name: str, index: str | None, value: int) -> None:
        sh = self.sh
        if index is None:
            sh.set_var(name, str(value))
        elif not index:
            sh.error(f"{'let: ' if sh.in_let else '((: ' if sh.in_dparen else ''}`{name}[]': not a valid identifier")
        else:
            try:
                sh.assign_element(name, N.Word((N.Lit(index),), index), str(value))
            except VarError as e:
                if not e.message.endswith(": bad array subscript"):
                    raise
                # (a negative subscript past the start: bash reports it, and the expression
                # goes on with the value)
                sh.error(e.message)

    def expand_sub(self, sub: str) -> str:
        return self.sh.expand_subscript(sub)

    def is_assoc(self, name: str) -> bool:
        v = self.sh.state.find(self.sh.state.resolve_ref(name))
        return v is not None and bool(v.attrs & ASSOC)


_HANDLERS: dict[type, Callable[[Interpreter, Any], int]] = {
    N.Pipeline: Interpreter.exec_pipeline,
    N.AndOr: Interpreter.exec_andor,
    N.Subshell: Interpreter.exec_subshell,
    N.Coproc: Interpreter.exec_coproc,
    N.Group: Interpreter.exec_group,
    N.If: Interpreter.exec_if,
    N.While: Interpreter.exec_while,
    N.For: Interpreter.exec_for,
    N.ArithFor: Interpreter.exec_arith_for,
    N.Select: Interpreter.exec_select,
    N.Case: Interpreter.exec_case,
    N.FuncDef: Interpreter.exec_funcdef,
    N.ArithCmd: Interpreter.exec_arith_cmd,
    N.Cond: Interpreter.exec_cond,
}

_ = (_Fields, _field_text, glob_escape, Capture, ASSOC, EXPORT, NAMEREF)

@_sized_cache(entries=256)
def _parse_at_line(src: str, first_line: int) -> N.Script:
    """A trap string parsed with its first line numbered ``first_line`` (LINENO, error lines)."""
    from .parser import Parser
    try:
        return Parser(src, first_line - 1).parse_script()
    except RecursionError:
        return _parse_cached(src)  # raises the bash-style nesting error


_STAGE_LOCK = threading.Lock()
_HELD_OVERHEAD = Budget.HELD_OVERHEAD
_CHARGE_MIN = CHARGE_MIN   # (state.py)
_ELEM_GROW = ELEM_COST + 49
"""What a new array element is charged beside its characters (its entry and str header)."""
# Stage threads are watched (kicked) by the deadline watchdog. (Off for a while: the fuzz's
# seed 7, script 186 — a fork bomb after a 500K-element array — ran 8-25 s past a 2 s
# deadline; the cause was each fork copying the array, ~20 ms of GIL per fork, with kicks
# on or off; since arrays are copy-on-write between forks it ends in 0.2-0.5 s.)
_WATCH_STAGES = True
_STAGE_STOP_GRACE = 0.1  # seconds a stopped run waits for its thread stages to end

from .builtins import BUILTINS as _BUILTINS  # noqa: E402 - builtins import this module lazily
from .builtins import notify_job_deaths as _notify_job_deaths  # noqa: E402
