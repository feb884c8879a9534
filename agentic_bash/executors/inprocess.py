"""InProcessExecutor: the interpreter in this process over a FileSystem (virtual and host modes)."""

# Security invariant: in virtual mode (``native=None``) nothing here starts a host process;
# every command resolves to a builtin, a function, a registered custom command or an
# in-process command, else 127.

from __future__ import annotations

import errno
import io
import itertools
import os
import posixpath
import signal
import stat as _stat
import subprocess
import sys
import threading
import time
from typing import Any, BinaryIO, Callable, Iterator, Mapping

from .._lazyre import lazy_compile as _lazy_re
from ..commands.base import CommandContext, SystemInfo, new_context
from ..errors import LimitExceeded, ParseError, SandboxClosed, SandboxError
from ..limits import Budget, HeldPool, Limits, _DeadlineKick, held_mark, no_kick, release_held, start_thread
from ..result import FILES_LISTED, LIMIT_NAMES, Result, cap_files, make_result
from ..shell import coop as _coop
from ..shell import nodes as N
from ..shell.nodes import Simple
from ..shell.expand import ExpansionError
from ..shell.interpreter import (AbortLine, CmdFS, DirInput, ExitShell, Interpreter, LoopCtl, ReturnFn, stage_results,
                                 _KeepOpen, exec_candidate)
from ..shell.builtins import SIGNALS, LiveAliases, _verbose_echo
from ..shell.quoting import from_host, host_bytes, printable_filename
from ..shell.state import ARRAY, EXPORT, HISTORY_MAX, HISTORY_SHARE, INTEGER, READONLY, ShellState, Var
from ..shell.streams import NULL, Capture, HereDoc, InputBytes, NullStream, Pipe, PipeWriter
from ..vfs.host import HostFS
from ..vfs.memory import MemoryFS
from ..vfs.paths import normalize
from .base import OutputCallback
from .native import stdin_handoff, terminate, wait_all_collecting, wait_collecting
from ..shell.parser import parse as _parse
from ..packages.apt import APT_COMMANDS, apt_shim
from ..packages.manifest import Manifest
from ..shell.parser import _CACHE_MAX_SOURCE, CACHE_BUDGET, parse_with_warnings as _parse_w
from ..shell.template import templated as _templated
try:
    from ..vfs.changes import diff as _diff, snapshot_marker as _snapshot_marker
except ImportError:  # pragma: no cover
    _diff = _snapshot_marker = None  # type: ignore[assignment]

__all__ = ["InProcessExecutor", "run_nested_shell"]

_monotonic = time.monotonic
_refcount = sys.getrefcount
# references to a run's budget or capture when only run() (a local) and the shell (sh.budget,
# sh.fds) hold it, plus getrefcount's own argument
_OWN_REFS = 3
_HISTORY_TRIM = HISTORY_MAX + HISTORY_MAX // 10
_HISTORY_BIG = 1 << 16


def _trim_history(hist: list[str], shell_cap: int | None) -> None:
    """A long script was just added: the history keeps at most 1/HISTORY_SHARE of
    ``max_shell_bytes`` of script text, dropping its oldest entries (the newest stays)."""
    if shell_cap is None:
        return
    most = shell_cap // HISTORY_SHARE
    total = sum(map(len, hist))
    k = 0
    while total > most and k < len(hist) - 1:
        total -= len(hist[k])
        k += 1
    if k:
        del hist[:k]
# a script that may turn on set -v runs line by line (each line is echoed as read)
_VERBOSE_ON = _lazy_re(r"\bset\b[^\n;|&]*(?:\s-[a-zA-Z]*v|\bverbose\b)")


def _whole_script(script: str, extglob: bool, again: bool = False) -> N.Script | None:
    """The tree of ``script`` when it can run parsed whole; None when it must be read a line
    at a time (it may turn on aliases, extglob or ``set -v`` for its later lines, it has a
    syntax error, or parsing it warns). Scripts up to _CACHE_MAX_SOURCE characters are
    remembered in _TREES (both answers); a line built from its shape (shell/template.py)
    only as _AGAIN the first time (``again``: it came again, keep its tree): most such lines
    are never sent twice, and keeping each one's tree alive cost a new line more than the
    building (allocation, and the garbage collector walking every kept node)."""
    keep: Any = None
    if "expand_aliases" in script or "extglob" in script or ("set" in script and _VERBOSE_ON.search(script)):
        tree = None
    elif (tree := _templated(script, extglob, _parse_w)) is not None:
        keep = tree if again else _AGAIN  # a new line of a shape parsed before
    else:
        try:
            tree, warns = _parse_w(script, extglob=extglob)
        except ParseError as e:
            if getattr(e, "hopeless", False):
                raise
            tree = warns = None
        if warns:
            tree = None
    if keep is None:
        keep = tree
    if len(script) <= _CACHE_MAX_SOURCE:
        cache = _TREES[extglob]
        with _TREES_LOCK:
            if script in cache:
                cache[script] = keep
            else:
                held = _TREES_HELD[extglob] + len(script)
                if cache and (len(cache) >= _TREES_MAX or held > CACHE_BUDGET):
                    # first in, first out (insertion order), an eighth at a time: a dict's
                    # first live key is found past every key deleted before it, so one
                    # eviction per new line cost a scan of hundreds of dead slots
                    for old in list(itertools.islice(cache, max(1, len(cache) // 8))):
                        del cache[old]
                        held -= len(old)
                    while cache and held > CACHE_BUDGET:
                        old = next(iter(cache))
                        del cache[old]
                        held -= len(old)
                cache[script] = keep
                _TREES_HELD[extglob] = held
    return tree


# run()'s parse cache, one dict per extglob setting: script text -> _whole_script's answer
# (a plain dict lookup is half the cost of an lru_cache call on the per-call path)
_TREES: tuple[dict[str, N.Script | None], dict[str, N.Script | None]] = ({}, {})
_TREES_MAX = 4096
_TREES_HELD = [0, 0]  # characters of script text each dict holds (<= parser.CACHE_BUDGET)
_TREES_LOCK = threading.Lock()
_MISS: Any = object()
_AGAIN: Any = object()  # (in _TREES: template the line again, then keep its tree)


_BIN_DIRS = ("/usr/local/bin", "/usr/bin", "/bin", "/usr/sbin", "/sbin", "/usr/local/sbin")


def load_commands() -> dict[str, Any]:
    """The in-process command registry; a command module that fails to import is skipped."""
    from .. import commands
    try:
        return commands.load_all()
    except Exception:  # noqa: BLE001 - one broken command module must not break the shell
        import importlib
        import pkgutil
        for m in pkgutil.iter_modules(commands.__path__):
            if m.name.startswith("_") or m.name == "base":
                continue
            try:
                importlib.import_module(f"{commands.__name__}.{m.name}")
            except Exception:  # noqa: BLE001
                pass
        return commands.REGISTRY


def _init_state(st: ShellState, env: Mapping[str, str], workdir: str, info: SystemInfo) -> None:
    sc = st.scopes[0]
    for k, v in env.items():
        sc[k] = Var(v, EXPORT)
    defaults = {
        "IFS": " \t\n", "PS4": "+ ", "OPTIND": "1", "OPTERR": "1", "HOSTNAME": info.hostname,
        "HOSTTYPE": info.machine, "MACHTYPE": f"{info.machine}-pc-linux-gnu", "OSTYPE": "linux-gnu",
        "BASH": "/usr/bin/bash", "BASH_VERSION": "5.2.15(1)-release",
        # bash sets SHELL (not exported) from the user's passwd entry when it is unset
        "SHELL": "/bin/bash",
        "BASH_LOADABLES_PATH": "/usr/local/lib/bash:/usr/lib/bash:/opt/local/lib/bash:/usr/pkg/lib/bash:/opt/pkg/lib/bash:.",
    }
    for k, v in defaults.items():
        if k not in sc:
            sc[k] = Var(v)
    sc["OPTIND"].attrs |= INTEGER
    sc["BASH_VERSINFO"] = Var({0: "5", 1: "2", 2: "15", 3: "1", 4: "release", 5: f"{info.machine}-pc-linux-gnu"},
                              ARRAY | READONLY)
    sc["UID"] = Var(str(info.uid), INTEGER | READONLY)
    sc["EUID"] = Var(str(info.uid), INTEGER | READONLY)
    sc["PPID"] = Var(str(info.ppid), INTEGER | READONLY)
    if "SHLVL" not in sc:
        sc["SHLVL"] = Var("1", EXPORT)
    sc["PWD"] = Var(workdir, EXPORT)
    if "OLDPWD" not in sc:
        sc["OLDPWD"] = Var(None, EXPORT)  # bash starts with OLDPWD exported but unset
    st.cwd = workdir
    st.env_cache = None


# bash's own texts for `bash --version`, `--help` and a bad option (usage on stderr, status 2)
_BASH_VERSION_TEXT = ("GNU bash, version 5.2.15(1)-release ({0}-pc-linux-gnu)\n"
                      "Copyright (C) 2022 Free Software Foundation, Inc.\n"
                      "License GPLv3+: GNU GPL version 3 or later <http://gnu.org/licenses/gpl.html>\n\n"
                      "This is free software; you are free to change and redistribute it.\n"
                      "There is NO WARRANTY, to the extent permitted by law.\n")
_BASH_USAGE = ('Usage:\tbash [GNU long option] [option] ...\n'
               '\tbash [GNU long option] [option] script-file ...\n'
               'GNU long options:\n'
               '\t--debug\n'
               '\t--debugger\n'
               '\t--dump-po-strings\n'
               '\t--dump-strings\n'
               '\t--help\n'
               '\t--init-file\n'
               '\t--login\n'
               '\t--noediting\n'
               '\t--noprofile\n'
               '\t--norc\n'
               '\t--posix\n'
               '\t--pretty-print\n'
               '\t--rcfile\n'
               '\t--restricted\n'
               '\t--verbose\n'
               '\t--version\n'
               'Shell options:\n'
               '\t-ilrsD or -c command or -O shopt_option\t\t(invocation only)\n'
               '\t-abefhkmnptuvxBCEHPT or -o option\n')
_BASH_HELP_TAIL = ('Type `bash -c "help set"\' for more information about shell options.\n'
                   "Type `bash -c help' for more information about shell builtin commands.\n"
                   "Use the `bashbug' command to report bugs.\n"
                   '\n'
                   'bash home page: <http://www.gnu.org/software/bash>\n'
                   'General help using GNU software: <http://www.gnu.org/gethelp/>\n')


def _bash_usage(name: str) -> str:
    return _BASH_USAGE.replace("\tbash [", f"\t{name} [")


def exported_functions(st: ShellState) -> dict[str, str]:
    """The ``export -f`` functions as bash puts them in a program's environment:
    ``BASH_FUNC_name%%=() {  body…}`` (its one-line-indent print of the definition), in its
    512-bucket function table's order (newest first within a bucket)."""
    names = [n for n in getattr(st, "exported_funcs", ()) if n in st.functions]
    if not names:
        return {}
    from ..shell.state import _bash_hash
    from ..shell.unparse import format_function
    pos = {n: i for i, n in enumerate(st.functions)}
    out: dict[str, str] = {}
    for n in sorted(names, key=lambda n: (_bash_hash(n) & 511, -pos[n])):
        lines = format_function(st.functions[n]).split("\n")[1:]  # ("name () " goes)
        if len(lines) < 2:
            continue
        mid = "\n".join(" " + ln.lstrip() for ln in lines[1:-1])
        out[f"BASH_FUNC_{n}%%"] = "() " + lines[0] + mid + "\n" + lines[-1]
    return out


def _heredoc_pipe(stream: HereDoc) -> tuple[int, Callable[[], None]] | None:
    """A pipe holding what is left of a here-document or here-string, for a program's
    input: bash 5.2 writes one smaller than the pipe's capacity into a pipe (a larger one
    goes to a file: None here, the caller's memfd). Once the program is done, the stream
    moves past what it read, so the next reader of the same body gets the rest, as the
    next reader of bash's pipe does."""
    import fcntl
    import termios
    try:
        with stream.getbuffer() as mv:
            pos = stream.tell()
            rest = bytes(mv[pos:])
    except (ValueError, BufferError):
        return None
    if len(rest) >= 65536:
        return None
    r, w = os.pipe2(os.O_CLOEXEC)
    try:
        os.set_blocking(w, False)
        done = os.write(w, rest) if rest else 0
    except OSError:
        done = -1
    finally:
        os.close(w)
    if done != len(rest):
        os.close(r)  # (a pipe made smaller by the user's pipe-pages limit: the file path)
        return None
    end = pos + len(rest)

    def sync() -> None:
        try:
            left = int.from_bytes(fcntl.ioctl(r, termios.FIONREAD, b"\0\0\0\0"), sys.byteorder)
            stream.seek(end - left)
        except (OSError, ValueError):
            pass
        finally:
            os.close(r)
    return r, sync


def _is_func_env(k: str) -> bool:
    return k.startswith("BASH_FUNC_") and k.endswith("%%")


# How a tool reports that its standard input is a directory: (message, exit status).
_READ_ERRORS: dict[str, tuple[str, int]] = {
    "grep": ("{0}: (standard input): Is a directory", 2),
    "egrep": ("{0}: (standard input): Is a directory", 2),
    "fgrep": ("{0}: (standard input): Is a directory", 2),
    "sort": ("{0}: read failed: -: Is a directory", 2),
    "tr": ("{0}: read error: Is a directory", 1), "tee": ("{0}: read error: Is a directory", 1),
    "sed": ("{0}: read error on stdin: Is a directory", 4),
    "awk": ("{0}: read error (Is a directory)", 2), "gawk": ("{0}: read error (Is a directory)", 2),
    "rev": ("{0}: stdin: 0: Is a directory", 1), "uniq": ("{0}: error reading '-'", 1),
    "bc": ("(standard_in) 1: read() in flex scanner failed", 1),
}

# How a tool reports a failed write to its standard output: (message, exit status).
_WRITE_ERRORS: dict[str, tuple[str, int]] = {
    "sed": ("{0}: couldn't flush stdout: {1}", 4),
    "awk": ("{0}: close failed on file /dev/stdout ({1})", 2),
    "gawk": ("{0}: close failed on file /dev/stdout ({1})", 2),
    "grep": ("{0}: write error: {1}", 2), "egrep": ("{0}: write error: {1}", 2),
    "fgrep": ("{0}: write error: {1}", 2), "ls": ("{0}: write error: {1}", 2),
    "dir": ("{0}: write error: {1}", 2), "vdir": ("{0}: write error: {1}", 2),
    "wc": ("{0}: write error", 1),
    "sort": ("{0}: fflush failed: 'standard output': {1}\n{0}: write error", 2),
}
# ... and when standard output is closed (`cmd >&-`, EBADF), where a tool's words differ
# (GNU cat and yes fstat() their output first)
_CLOSED_OUT_ERRORS: dict[str, tuple[str, int]] = {
    "yes": ("{0}: standard output: {1}", 1), "cat": ("{0}: standard output: {1}", 1),
}

# Tools whose messages carry a fixed program name, not argv[0] as invoked (`/usr/bin/awk`
# still says `awk:`); every other tool is GNU-like and names itself as invoked.
_FIXED_NAME = frozenset({
    "awk", "mawk", "gawk", "nawk", "rev", "hexdump", "hd", "jq", "column", "bc", "curl", "wget",
    "gzip", "gunzip", "zcat", "egrep", "fgrep", "tree", "zip", "unzip", "xxd", "less", "more",
    "look", "git", "python", "python3", "file", "script", "getopt", "tput", "clear",
})

# How a tool reports that its standard input is closed (`cmd <&-`): (message, exit status).
# Only tools that print nothing else on stdout in that case are listed; the others keep
# reading it as empty input.
_B = "Bad file descriptor"
_BADF_READ: dict[str, tuple[str, int]] = {
    "cat": ("{0}: -: %s\n{0}: closing standard input: %s" % (_B, _B), 1),
    "sort": ("{0}: stat failed: -: %s" % _B, 2),
    "head": ("{0}: error reading 'standard input': %s\n{0}: -: %s" % (_B, _B), 1),
    "tail": ("{0}: cannot fstat 'standard input': %s\n{0}: -: %s" % (_B, _B), 1),
    "tac": ("{0}: 'standard input': read error: %s\n{0}: -: %s" % (_B, _B), 1),
    "grep": ("{0}: (standard input): %s" % _B, 2), "egrep": ("{0}: (standard input): %s" % _B, 2),
    "fgrep": ("{0}: (standard input): %s" % _B, 2),
    "sed": ("{0}: read error on stdin: %s" % _B, 4),
    "awk": ("{0}: read error (%s)" % _B, 2), "mawk": ("{0}: read error (%s)" % _B, 2),
    "rev": ("{0}: stdin: 0: %s" % _B, 1), "uniq": ("{0}: error reading '-'", 1),
    "tee": ("{0}: read error: %s\n{0}: standard input: %s" % (_B, _B), 1),
    "fmt": ("{0}: read error\n{0}: closing standard input: %s" % _B, 1),
    "comm": ("{0}: -: %s" % _B, 1), "diff": ("{0}: -: %s" % _B, 2), "cmp": ("{0}: -: %s" % _B, 2),
    "split": ("{0}: -: %s" % _B, 1), "ptx": ("{0}: -: %s" % _B, 1),
    "pr": ("{0}: 'standard input': %s" % _B, 1), "tsort": ("{0}: standard input: %s" % _B, 1),
    "column": ("{0}: read failed: %s" % _B, 1),
    "iconv": ("{0}: error while reading the input: %s" % _B, 1),
    "gzip": ("{0}: standard input: %s" % _B, 1),
    "dd": ("{0}: error reading 'standard input': %s\n{0}: closing input file 'standard input': %s" % (_B, _B), 1),
    "bc": ("(standard_in) 1: read() in flex scanner failed", 1),
    "xxd": ("{0}: %s" % _B, 2), "numfmt": ("{0}: error reading input: %s" % _B, 0),
    "factor": ("", 0), "strings": ("", 0), "jq": ("", 2),
}
for _n in ("tr", "base64", "base32", "basenc", "join", "shuf"):
    _BADF_READ[_n] = ("{0}: read error: %s" % _B, 1)
for _n in ("cut", "nl", "paste", "fold", "expand", "unexpand"):
    _BADF_READ[_n] = ("{0}: -: %s\n{0}: -: %s" % (_B, _B), 1)
for _n in ("md5sum", "sha1sum", "sha224sum", "sha256sum", "sha384sum", "sha512sum", "b2sum", "sum"):
    _BADF_READ[_n] = ("{0}: -: %s\n{0}: standard input: %s" % (_B, _B), 1)
del _B, _n


class InProcessExecutor:
    """Runs scripts with the in-process interpreter; one persistent shell state per instance."""

    # Each bash function call is ~10 Python frames; max_call_depth=1000 needs headroom.
    # Python 3.11 runs Python-to-Python calls without C recursion, so this is safe.
    _RECURSION_LIMIT = 30_000
    files_listed: int | None = FILES_LISTED
    """Paths kept per changed-files list of a Result (None: all; the sandbox's runner caps
    them itself, after its package detection has read them)."""

    def __init__(self, *, fs: Any, native: Any = None, env: Mapping[str, str] | None = None,
                 workdir: str = "/workspace", limits: Limits = Limits(), info: SystemInfo = SystemInfo(),
                 prefer_inprocess: bool = False, commands_allowlist: Any = None, layer: Any = None) -> None:
        import sys
        if sys.getrecursionlimit() < self._RECURSION_LIMIT:
            sys.setrecursionlimit(self._RECURSION_LIMIT)
        self.fs = fs
        self.native = native
        self.signal_fd: int | None = None  # signals programs sent the shell (see take_signals)
        self._path_cache: dict[tuple[str, str, str | None], tuple[Any, str | None]] = {}
        if native is not None:
            # every native child passes the launcher: it enforces the process and memory caps
            native.max_live = limits.max_processes
            native.max_memory = limits.max_address_space
            native.max_data = limits.max_process_memory
        self.limits = limits
        self.info = info
        self.prefer_inprocess = prefer_inprocess
        self.allowlist = set(commands_allowlist) if commands_allowlist is not None else None
        self.layer = layer
        if layer is not None and hasattr(layer, "set_wait_hook"):
            # security: a FIFO open/read/write with no peer (`mkfifo p; cat p`) waits in
            # the filesystem; without this hook it outlived the run's deadline (up to 1 h)
            layer.set_wait_hook(self._fifo_wait)
        self.registry = load_commands()
        self.custom: dict[str, Callable[..., int]] = {}
        self.packages = Manifest()
        self._in_shim = False
        self._closed = False
        # one token while no run() is going: run() pops it and puts it back
        self._turn: list[bool] = [True]
        self._dropped: set[int] = set()  # threads whose waiting run was cancelled (check9)
        self._budget: Budget | None = None
        self._held_pool = HeldPool()  # (what this session's commands hold at once)
        self._late: tuple[Capture, Capture] | None = None
        self._violations: list[Any] = []
        self._idle_marker: Any = None
        self._spare: tuple[Budget, Capture, Capture, dict[int, Any]] | None = None
        self._no_stdin = InputBytes(b"")
        self._tty: Any = None  # the PtySession of a run(tty=...) going on
        self._tty_pending = b""  # keys typed before it started
        self.shell = Interpreter(fs, info=info, host=self)
        self.shell.exited = False  # set by run_toplevel when the script ran `exit`
        base_env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": info.home, "USER": info.user,
                    "LANG": "C.UTF-8", "SHLVL": "1", "TERM": "dumb", "PAGER": "cat", "GIT_PAGER": "cat",
                    "SHELL": "/bin/bash"}  # (as the namespace level's environment has it)
        if env:
            base_env.update(env)
        _init_state(self.shell.state, base_env, workdir, info)
        # `bash -c` started with a clean environment: $_ is the shell's argv[0] until a
        # command sets it
        self.shell.state.last_arg = "bash"
        self.shell.start_time = time.monotonic()

    # ------------------------------------------------------------------ protocol
    @property
    def cwd(self) -> str:
        return self.shell.state.cwd

    @property
    def env(self) -> Mapping[str, str]:
        return dict(self.shell.state.environ())

    def register_command(self, name: str, fn: Callable[..., int]) -> None:
        self.custom[name] = fn

    def _fifo_wait(self) -> None:
        # the waiting thread's own budget is not known here: the current run's (timeout,
        # interrupt) or, between runs (a background job), the session's close
        b = self._budget
        if b is not None:
            b.check()
        elif self._closed:
            raise LimitExceeded("closed", "closed")

    def interrupt(self) -> None:
        b = self._budget
        if b is not None:
            b.cancel("interrupt")

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self.interrupt()
        jobs = self.shell.jobs
        if jobs is not None:
            for j in list(jobs.jobs.values()):
                if j.child is not None:
                    j.child.budget.cancel("closed")
        kill_all = getattr(self.native, "kill_all", None)
        if kill_all is not None:
            # security: background (`nohup cmd &`) children and their process groups end
            # now, not when a job thread next polls its budget (the caller may exit first)
            kill_all()

    def take_signals(self, sh: Any) -> None:
        """Signals programs sent the shell (inside a sandbox: a pipe pid 1's seccomp
        supervisor writes, isolation/seccomp_filter.FORWARDED) go to the queue of the shell
        that ran the program, which acts on them at its next command."""
        fd = self.signal_fd
        if fd is None:
            return
        try:
            data = os.read(fd, 256)
        except OSError:  # (nothing pending: EAGAIN)
            return
        for b in data:
            try:
                name = signal.Signals(b).name[3:]
            except ValueError:
                continue
            if name in ("HUP", "INT", "QUIT", "USR1", "USR2", "ALRM", "TERM"):
                sh.sig_queue.append(name)

    def run(self, script: str, stdin: bytes | BinaryIO | None = None,
            env: Mapping[str, str] | None = None, cwd: str | None = None,
            timeout: float | None = None, on_output: OutputCallback | None = None,
            tty: Any = None) -> Result:
        # the per-call path: every line here is paid by `run("echo hi")` (issue 2's target);
        # Sandbox.run passes the arguments by position (cheaper than by keyword)
        if self._closed:
            raise SandboxClosed("sandbox is closed")
        if not script.isascii():
            script = from_host(script)  # a lone surrogate: raw bytes, never an encode error
        if "\x00" in script:
            script = script.replace("\x00", "")  # bash drops NUL bytes from what it reads
        if tty is not None:
            return self._run_tty(script, stdin, env, cwd, timeout, on_output, tty)
        turn = self._turn
        try:
            turn.pop()  # (atomic under the GIL: a lock costs this path twice as much)
        except IndexError:
            self._wait_turn()
            if self._dropped and threading.get_ident() in self._dropped:
                # (Sandbox.arun cancelled while this call waited its turn: never run)
                self._dropped.discard(threading.get_ident())
                turn.append(True)
                raise SandboxError("run cancelled before it began")
        try:
            t0 = _monotonic()
            limits = self.limits
            spare = self._spare
            if spare is not None:
                # the previous run's budget and streams, which nothing else holds (see below)
                self._spare = None
                budget, out, err, fds = spare
                spare = None  # the tuple would count as a holder at the end
                t = limits.timeout if timeout is None else timeout
                budget.deadline = None if t is None else t0 + t
                budget.span = t
                budget.commands = budget.iterations = budget._arr_added = 0
                budget._pipes = None  # (the previous run's pipes are not this run's to break)
                budget._subs = None   # (nor its finished jobs' budgets)
                if on_output is not None or out.on_output is not None:
                    out.on_output = err.on_output = on_output
            else:
                budget = _RunBudget(limits, timeout, t0)
                out = Capture(limits.max_output_bytes, on_output, 1)
                err = Capture(limits.max_output_bytes, on_output, 2)
                fds = {}
            self._budget = budget
            sh = self.shell
            sh.budget = budget
            pool = self._held_pool
            budget.pool = pool
            cap = budget.shell_cap
            pool.cap = None if cap is None else cap // 2
            if pool.held and (sh.jobs is None or all(j.done.is_set() for j in list(sh.jobs.jobs.values()))):
                pool.held = 0  # (no command of the session runs: what a cut-short release left)
            if self._late is not None or self._violations:
                self._before_run(out, err)
            if stdin is None:
                inp: Any = self._no_stdin
            elif isinstance(stdin, (bytes, bytearray, memoryview)):
                inp = InputBytes(bytes(stdin))
            elif isinstance(stdin, str):
                inp = InputBytes(host_bytes(stdin))
            else:
                inp = stdin
            fds[0] = inp
            fds[1] = out
            fds[2] = err
            if self._tty is not None:
                fds[1] = fds[2] = self._tty.writer
                if self._tty.early:   # Ctrl-C typed while this run was starting
                    budget.cancel("interrupt")
            sh.fds = fds
            sh.exec_string = script
            st = sh.state
            hist = st.history
            hist.append(script)
            if len(hist) > _HISTORY_TRIM:
                del hist[:-HISTORY_MAX]  # in batches: one memmove per hundred runs
            if len(script) > _HISTORY_BIG:
                _trim_history(hist, budget.shell_cap)
            sh.lineno = sh.loop_depth = sh.errexit_off = 0
            if st.options["noexec"]:
                # `set -n` reads the rest of its run without running it (bash -c); a session
                # is interactive, where bash ignores -n, so it never outlives that run
                st.options["noexec"] = False
            if sh.funcstack:
                sh.funcstack = []
            if sh.sig_queue:
                # (`kill $$` from a job: the shell acts on it at its next command; one the
                # last run did not reach, ended by its deadline or sent by a job it left
                # behind, made the next run, `echo ok`, end with 143 at once)
                del sh.sig_queue[:]
            sh.pipestatus = []
            if sh.jobs is not None and sh.jobs.jobs:
                sh.jobs.mark_reported()
            temp_scope = saved_cwd = None
            if env:
                # per-run env: visible to this run only, like VAR=x cmd
                temp_scope = {k: Var(from_host(v), EXPORT) for k, v in env.items()}
                st.scopes.append(temp_scope)
                st.env_cache = None
            if cwd is not None:
                saved_cwd = st.cwd
                st.cwd = normalize(cwd, st.cwd)
                saved_pwd = _enter_run_cwd(st)
            marker = self._idle_marker
            if marker is not None and marker.fs is self.fs:
                # the previous run changed nothing: its empty journal records this one
                marker.fs._journal = marker.journal
            else:
                marker = self._start_tracking()
            timed_out = False
            exceeded = None
            try:
                try:
                    budget.watch()  # (past the deadline the watchdog interrupts this thread)
                    bad = _bad_run_cwd(sh, st.cwd) if saved_cwd is not None else None
                    if bad is not None:
                        # as `cd DIR && script` would: the script does not run
                        err.write(f"agentic-bash: cwd: {cwd}: {bad}\n".encode("utf-8", "replace"))
                        status = 1
                        tree = _MISS
                    elif st.shopt["expand_aliases"] or st.options["verbose"]:
                        tree = None
                    else:
                        tree = _TREES[st.shopt["extglob"] is True].get(script, _MISS)
                        if tree is _MISS or tree is _AGAIN:
                            tree = _whole_script(script, st.shopt["extglob"] is True, tree is _AGAIN)
                    if tree is _MISS:
                        pass
                    elif tree is not None:
                        sh.exec_tree = tree  # type: ignore[attr-defined]  # (see _execed)
                        try:
                            status = run_toplevel(sh, tree, who=_who(sh))
                        finally:
                            sh.exec_tree = None  # type: ignore[attr-defined]
                    else:
                        # line by line: aliases and extglob apply from the next line, warnings in
                        # order, and the complete lines before a syntax error run, as bash -c does
                        status = run_toplevel(sh, None, source=script, who=_who(sh))
                finally:
                    # the watch ends before any cleanup: a kick the watchdog queued lands here
                    # at the latest and is caught below like the deadline itself (one that
                    # landed in the cleanup skipped the EXIT trap, which then fired at the end
                    # of the next run)
                    budget.unwatch()
            except LimitExceeded as e:
                _unwatch_all(budget)  # (a kick that cut the unwatch above short)
                _drop_frames(e)
                # like timeout(1) killing the process group: jobs of this run die with it
                self._cancel_jobs(budget)
                if e.limit not in ("interrupt", "closed"):
                    exceeded = LIMIT_NAMES.get(e.limit, e.limit)
                if e.limit in ("timeout",):
                    timed_out = True
                    status = 124
                    if "EXIT" in st.traps:
                        _exit_trap_at_deadline(sh, budget)
                elif e.limit in ("interrupt", "closed"):
                    status = 130
                else:
                    status = 1
                    err.write(f"agentic-bash: {e}\n".encode())
            except RecursionError as e:
                _drop_frames(e)
                sh.write_err(b"bash: maximum nesting depth exceeded\n")
                status = 2
            except ParseError as e:  # input no reader can take in bounded time
                _drop_frames(e)  # (the parser raises what it built: a cycle with its frames)
                sh.write_err(f"bash: line {e.line}: {e.message}\n".encode("utf-8", "replace"))
                status = 2
            except BaseException as e:  # noqa: BLE001 - nothing may escape run()
                if isinstance(e, KeyboardInterrupt):  # the host's own Ctrl-C is not the script's
                    raise
                _unwatch_all(budget)
                _drop_frames(e)
                if budget._cancelled and budget._reason == "timeout":
                    # broken by the stop itself (the deadline watchdog's exception landed
                    # in library code): the run timed out
                    self._cancel_jobs(budget)
                    timed_out = True
                    status = 124
                    if "EXIT" in st.traps:
                        _exit_trap_at_deadline(sh, budget)
                elif isinstance(e, RuntimeError) and "can't start new thread" in str(e):
                    # a thread the shell needed (a pipeline stage, a process substitution)
                    # was refused at the process limit: bash's failed fork, not our error
                    status = 254
                    err.write(b"bash: fork: Resource temporarily unavailable\n")
                elif isinstance(e, MemoryError):
                    # an allocation of the shell's own failed (the process's memory limit, a
                    # matcher's backtracking): what bash says when malloc fails, not our error
                    status = 1
                    exceeded = "memory"
                    err.write(b"agentic-bash: xmalloc: cannot allocate memory\n")
                else:
                    status = 2
                    err.write(f"agentic-bash: internal error: {type(e).__name__}: {e}\n".encode("utf-8", "replace"))
            finally:
                if temp_scope is not None:
                    for i in range(len(st.scopes) - 1, 0, -1):
                        if st.scopes[i] is temp_scope:
                            del st.scopes[i]
                            break
                    st.env_cache = None
                if saved_cwd is not None:
                    st.cwd = saved_cwd
                    _leave_run_cwd(st, saved_pwd)
                if sh.owned:
                    sh.close_owned()
                self._budget = None
            if not timed_out and exceeded is None and budget._cancelled and budget._reason == "timeout":
                # the deadline passed and stopped something (a read the watchdog broke
                # returned EOF, a stage ended) though the script then reached its end: the
                # run timed out all the same, as under timeout(1)
                self._cancel_jobs(budget)
                timed_out = True
                status = 124
            jobs = sh.jobs
            if jobs is not None:
                # background jobs started by this run: give them a moment to finish so their
                # output lands in this result (bash -c's caller sees it too while the pipe is open)
                self._settle_jobs(t0, budget)
            st.last_status = status
            created = modified = deleted = ()
            files_partial = False
            if marker is not None:
                if marker.journal.prior:
                    self._idle_marker = None
                    try:
                        # (bounded by the deadline, or 50 ms past a timed-out one: contract10)
                        dl = budget.deadline
                        ch = _diff(marker, until=None if dl is None else max(dl, _monotonic()) + 0.05)
                        created, modified, deleted = tuple(ch.created), tuple(ch.modified), tuple(ch.deleted)
                        files_partial = ch.partial
                    except Exception:
                        pass
                elif marker.fs._journal is marker.journal:
                    # nothing changed: stop recording (what diff() does); the next run reuses it
                    marker.fs._journal = None
            lim = limits.max_output_bytes
            truncated = out.truncated or err.truncated
            if not truncated:
                so = bytes(out.buf)
                se = bytes(err.buf) if err.buf else b""
            # (else getvalue() below copies it: a cut 16 MiB output was copied twice, slow
            # at the deadline of a starved run)
            if truncated or (lim is not None and len(so) + len(se) > lim):
                # (a write racing past the limit is cut here; getvalue() marks the cut)
                so = out.getvalue()
                se = err.getvalue()
                truncated = out.truncated or err.truncated
            if jobs is not None and jobs.jobs and any(not j.done.is_set() for j in list(jobs.jobs.values())):
                if self._late is None:
                    self._late = (Capture(lim), Capture(lim))
                out.forward, err.forward = self._late
            elif (not truncated and not budget._cancelled and _refcount(out) <= _OWN_REFS
                    and _refcount(err) <= _OWN_REFS and _refcount(budget) <= _OWN_REFS
                    and sh.fds is fds and len(fds) == 3 and _refcount(fds) <= _OWN_REFS):
                # Nothing but this frame and the shell holds them (no job, stray process
                # substitution or pipeline stage of this run is alive to write or charge
                # later, the fd table is the run's own with no fd opened by exec): the next
                # run resets and reuses them instead of allocating four objects. A reference
                # elsewhere, however it got there, means fresh ones.
                out.buf.clear()
                if se:
                    err.buf.clear()
                self._spare = (budget, out, err, fds)
            viol = self._violations
            if truncated and exceeded is None:
                exceeded = "output"
            r = make_result(so, se, status, _monotonic() - t0, timed_out, truncated,
                            st.cwd, created, modified, deleted, tuple(viol) if viol else (),
                            exceeded)
            if (len(created) > FILES_LISTED or len(modified) > FILES_LISTED
                    or len(deleted) > FILES_LISTED) and self.files_listed:
                r = cap_files(r, self.files_listed)   # (attack10: the lists were unbounded)
            if files_partial:
                import dataclasses
                r = dataclasses.replace(r, files_truncated=True)
            if sh.exited:
                # `exit` (or a fatal error) ended the shell: an interactive one would stop here
                if sh.exited == "fatal":
                    r.extra["fatal"] = True
                sh.exited = False
                r.extra["exited"] = True
            return r
        except _DeadlineKick:
            # the watchdog's exception landed in this run's own cleanup, past the script's end
            # or its deadline (the handlers above unwatch first, so this is rare): the run
            # timed out. Its output so far is its own, and its EXIT trap runs now (left set,
            # it fired at the end of the next run); what cleanup was skipped is the cwd/env
            # override of this run only
            sh = self.shell
            b = sh.budget
            _unwatch_all(b)
            self._cancel_jobs(b)
            if "EXIT" in sh.state.traps:
                _exit_trap_at_deadline(sh, b)
            self._budget = None
            return make_result(out.getvalue(), err.getvalue(), 124, _monotonic() - t0, True,
                               out.truncated or err.truncated, sh.state.cwd, (), (), (), ())
        finally:
            turn.append(True)

    def undrop_thread(self, thread: int) -> None:
        self._dropped.discard(thread)

    def interrupt_thread(self, thread: int) -> None:
        """Interrupt the run in progress only if thread ``thread`` is the one running it, not
        one queued behind it (``Sandbox.arun`` cancelled while waiting its turn). Looks at
        that thread's stack, so the per-run path pays nothing for it."""
        from ..limits import current_frames  # (not sys._current_frames: see there)
        f = current_frames().get(thread)
        run_code, wait_code = InProcessExecutor.run.__code__, InProcessExecutor._wait_turn.__code__
        inside = False
        while f is not None:
            code = f.f_code
            if (code is wait_code or code is run_code) and f.f_locals.get("self") is self:
                if code is wait_code:
                    # still waiting for its turn (the current run is someone else's): it is
                    # dropped when it gets the turn; the caller clears the mark (undrop_thread)
                    self._dropped.add(thread)
                    return
                inside = True
            f = f.f_back
        if inside:
            self.interrupt()

    def _run_tty(self, script: str, stdin: Any, env: Mapping[str, str] | None, cwd: str | None,
                 timeout: float | None, on_output: OutputCallback | None, tty: Any) -> Result:
        """run() with a pseudo-terminal as stdin, stdout and stderr (merged, as on a
        terminal); ``stdin`` bytes, then keys typed before it started, are typed at it first.
        See agentic_bash.tty."""
        from dataclasses import replace

        from ..tty import PtySession, tty_spec
        spec = tty_spec(tty)
        if self._tty is not None:
            raise SandboxError("another run(tty=...) of this session is going on")
        if stdin is not None and not isinstance(stdin, (bytes, bytearray, memoryview, str)):
            stdin = stdin.read()
        def on_interrupt() -> None:
            # (early first, then the budget: run() reads them in the other order, so one of
            # the two sees the interrupt however the threads interleave)
            pty.early = True
            b = self._budget
            if b is not None:
                b.cancel("interrupt")
        pty = PtySession(spec, on_output, self.limits.max_output_bytes, on_interrupt)
        self._tty = pty
        left = b""
        try:
            pending, self._tty_pending = self._tty_pending, b""
            if stdin:
                pty.input(host_bytes(stdin) if isinstance(stdin, str) else bytes(stdin))
            if pending:
                pty.input(pending)
            run_env = dict(env or {})
            run_env.setdefault("TERM", pty.term)
            r = self.run(script, pty.reader, run_env, cwd, timeout, None)
        finally:
            self._tty = None
            self._tty_pending = b""   # never into a later run
            left = pty.finish()
        r = replace(r, stdout_bytes=r.stdout_bytes + bytes(pty.buf), truncated=r.truncated or pty.truncated)
        if left:
            # typed at the terminal, read by nothing: the caller's shell reads it next (repl.py)
            r = replace(r, extra={**r.extra, "tty_unread": left.decode("utf-8", "surrogateescape")})
        return r

    def tty_input(self, data: bytes, queued: bool = False) -> bool:
        """Bytes typed at the terminal of the run(tty=...) going on; False (dropped) when no
        run is going on. Typed while a run is starting (``queued``: the sandbox runner has
        accepted the run they are for), they wait for its terminal (bounded)."""
        pty = self._tty
        if pty is not None:
            pty.input(bytes(data))
            return True
        if not (queued or not self._turn) or len(self._tty_pending) >= 65536:
            return False
        self._tty_pending += bytes(data)[:65536]
        return True

    def tty_resize(self, rows: int, cols: int) -> None:
        pty = self._tty
        if pty is not None:
            pty.resize(rows, cols)

    def _wait_turn(self) -> None:
        """Another thread is inside run() on this executor: wait for it to finish (runs of one
        session never overlap; the token list is the lock, polled on this rare path). A run
        started from inside a run of this session on the same thread (a custom command
        calling ``sb.run``) would wait for itself forever: that is an error instead."""
        f = sys._getframe(2)  # (1 is the run() that is waiting)
        code = InProcessExecutor.run.__code__
        while f is not None:
            if f.f_code is code and f.f_locals.get("self") is self:
                raise SandboxError("run() called from inside a run of the same sandbox")
            f = f.f_back
        while True:
            try:
                self._turn.pop()
                return
            except IndexError:
                time.sleep(0.001)

    def _before_run(self, out: Capture, err: Capture) -> None:
        """What a run inherits from the ones before it: background jobs' late output goes
        first in its streams; the last run's policy violations are dropped."""
        if self._violations:
            self._violations = []
        late = self._late
        if late is not None:
            # output background jobs wrote after the previous run returned
            lo, le = late[0].take(), late[1].take()
            if lo:
                out.write(lo)
            if le:
                err.write(le)

    def _start_tracking(self) -> Any:
        """Start recording this run's file changes (a Marker), or None without tracking."""
        if _snapshot_marker is None:
            return None
        m = self._idle_marker
        if m is not None and m.fs is (getattr(self.fs, "_track_via", None) or self.fs):
            m.fs._journal = m.journal
            return m
        try:
            m = self._idle_marker = _snapshot_marker(self.fs)
        except Exception:
            return None
        return m

    def _cancel_jobs(self, budget: Budget | None = None) -> None:
        """The jobs of the run with ``budget`` (the tree it started) end with it; jobs of
        earlier runs (a server started with ``&``) go on, as background jobs of an
        interactive bash go on when a foreground command is stopped. (Every live job of the
        session was killed: a later run's timeout ended an earlier run's server; contract13.)"""
        jobs = self.shell.jobs
        if jobs is None:
            return
        for j in list(jobs.jobs.values()):
            if not j.done.is_set() and j.child is not None and (
                    budget is None or _started_by(j, budget)):
                j.killed = True
                # dead with this run (its thread may take a moment to end): reported, so a
                # later run's `wait -n` does not take its status for one of its own jobs
                j.reported = True
                j.child.budget.cancel("killed")

    def _settle_jobs(self, t0: float, budget: Budget) -> None:
        # run() returns when the foreground finishes (issue 2); later output is kept for the
        # next run (``_late``). Jobs of earlier runs and jobs that are a native process are
        # never waited for. Only in-process jobs this run started get a bounded moment, so a
        # quick one (`echo hi &`) or a self-limiting tree (a fork bomb hitting max_jobs) ends
        # inside this run and its output lands in this result.
        jobs = self.shell.jobs
        if jobs is None or not jobs.jobs:
            return
        # the whole job tree this run started counts (jobs started by its jobs, at any
        # depth, are in the session's live registry): a fork bomb's last words
        # (`fork: Resource temporarily unavailable`) belong to this run, not the next. A
        # tree that keeps growing gets up to 2 s: it either stops or hits max_jobs and is
        # killed; one that does not grow gets the usual 0.25 s.
        start = time.monotonic()
        # never past the run's deadline: a script that ended at 1.9 s of a 2 s timeout with a
        # growing tree returned at ~4 s, status 0 and timed_out False
        stop = start + 2.0 if budget.deadline is None else min(start + 2.0, budget.deadline)
        end = min(start + 0.25, stop)
        most = 0
        while True:
            live = list(getattr(self, "_live_jobs", None) or ())
            mine = [j for j in list(jobs.jobs.values()) + live
                    if not j.done.is_set() and j.native is None and _started_by(j, budget)]
            if not mine:
                if most == 0:
                    time.sleep(0)  # a thread switch: a job about to finish can
                return
            now = time.monotonic()
            if len(mine) > most:
                if most:
                    end = max(end, min(now + 0.25, stop))
                most = len(mine)
            if now >= end:
                return
            mine[0].done.wait(min(end - now, 0.02))

    def native_job(self, sh: Interpreter, cmd: N.Command) -> bool:
        """Whether background job ``cmd`` is (a pipeline ending in) a simple command that
        will run as a native process (start_job then waits for it so `$!` is its pid)."""
        if self.native is None:
            return False
        while isinstance(cmd, N.Pipeline):
            if not cmd.cmds or cmd.negated or cmd.timed:
                return False
            cmd = cmd.cmds[-1]
        if not isinstance(cmd, N.Simple) or not cmd.words:
            return False
        parts = cmd.words[0].parts
        if len(parts) != 1 or not isinstance(parts[0], N.Lit):
            return False
        name = parts[0].text
        if not name or any(c in name for c in "*?[{~=$`\\"):
            return False
        st = sh.state
        if name in st.functions or name in self.custom or name == "bash" or (
                name == "sh" and self.prefer_inprocess):
            return False  # (`sh` is the system's dash where it can be: run_command)
        from ..shell.builtins import BUILTINS
        if name in getattr(st, "aliases", ()) or name in BUILTINS:
            return False
        if self.allowlist is not None and posixpath.basename(name) not in self.allowlist:
            return False
        if "/" in name:
            return not self._is_placeholder(normalize(name, st.cwd))
        if name in self.registry and self.prefer_inprocess:
            return False
        return self.find_path(sh, name) is not None

    # ------------------------------------------------------------------ dispatch (host API)
    def _path_candidates(self, sh: Interpreter, name: str, path: str | None) -> Iterator[tuple[str, Any]]:
        """(path as bash spells it, stat) of each regular file ``name`` in the PATH entries:
        an entry keeps its own spelling (``bin`` gives ``bin/name``, an empty one ``./name``)."""
        if path is None:
            path = sh.get_scalar("PATH")
            if path is None:
                return
        cwd = sh.state.cwd
        stat = self.fs.stat
        for d in path.split(":"):
            if not d:
                d = "."
            elif d.endswith("/"):
                d = d[:-1]
            cand = d + "/" + name
            try:
                s = stat(normalize(cand, cwd))
            except OSError:
                continue
            if s.is_file:
                yield cand, s

    def find_path(self, sh: Interpreter, name: str, path: str | None = None) -> str | None:
        """The file bash would run for ``name``: the first executable one on PATH, else the
        first non-executable one (running it then fails with "Permission denied")."""
        if path is None:
            path = sh.get_scalar("PATH")
            if path is None:
                return None
        gen = self._fs_generation()
        key = None
        if gen is not None:
            # an answer stays good while no layer of the file system changed (a subshell's
            # lookup then costs no stat; bash's visible hash table is not involved)
            key = (name, path, sh.state.cwd if ("::" in path or path[:1] != "/" or ":." in path
                                                or path.endswith(":")) else None)
            hit = self._path_cache.get(key)
            if hit is not None and hit[0] == gen:
                return hit[1]
        fallback = None
        found = None
        for cand, s in self._path_candidates(sh, name, path):
            if s.st_mode & 0o111:
                found = cand
                break
            if fallback is None:
                fallback = cand
        if found is None:
            found = fallback
        if key is not None:
            cache = self._path_cache
            if len(cache) > 512:
                cache.clear()
            cache[key] = (gen, found)
        return found

    def _fs_generation(self) -> Any:
        """A value that changes whenever any layer of the file system does, or None when
        some layer cannot tell (then nothing is cached)."""
        fs = self.fs
        up = getattr(fs, "upper", None)
        if up is None:
            return getattr(fs, "generation", None) if type(fs) is MemoryFS else None
        if type(up) is not MemoryFS:
            return None
        g = up.generation
        lows = fs.lowers
        if not lows:
            return g
        out = [g]
        for lo in lows:
            if type(lo) is not MemoryFS:
                return None
            out.append(lo.generation)
        return tuple(out)

    def find_all_paths(self, sh: Interpreter, name: str, path: str | None = None) -> list[str]:
        out: list[str] = []
        for cand, s in self._path_candidates(sh, name, path):
            if s.st_mode & 0o111 and cand not in out:
                out.append(cand)
        return out

    def can_run(self, sh: Interpreter, name: str) -> bool:
        return name in self.custom or name in self.registry or name in ("bash", "sh") or \
            self.find_path(sh, name) is not None

    def run_command(self, sh: Interpreter, argv: list[str], resolved: str | None = None) -> int:
        """Run ``argv``; ``resolved``: the file already found for it (``command -p``), run
        with ``argv[0]`` as typed."""
        name = argv[0]
        # The allowlist names every command a script may invoke (in-process, custom and
        # native alike); anything else is "not found" (127), as issue 4 specifies.
        if self.allowlist is not None and posixpath.basename(name) not in self.allowlist:
            from ..errors import PolicyViolation
            self._violations.append(PolicyViolation("command", name))
            sh.error(f"{name}: command not allowed by policy")
            return 127
        fn = self.custom.get(name)
        if fn is not None:
            return self._call(sh, fn, argv, custom=True)
        if self.native is not None and not self._in_shim and (
                name in APT_COMMANDS or ("/" in name and posixpath.basename(name) in APT_COMMANDS)):
            st = self._package_shim(sh, argv)
            if st is not None:
                return st
        if "/" in name or resolved is not None:
            return self._run_path(sh, resolved or name, argv)
        st = sh.state
        path = st.hash.get(name) if st.hash else None
        if path is not None:
            st.sync_hash(sh.get_scalar("PATH"))
            path = st.hash.get(name)
        if path is not None:
            st.hash_hits[name] = st.hash_hits.get(name, 0) + 1
        else:
            path = self.find_path(sh, name)
            if path is not None and st.options["hashall"]:
                st.sync_hash(sh.get_scalar("PATH"))
                st.hash[name] = path
                st.hash_hits[name] = 1
        spec = self.registry.get(name)
        if path is None and (spec is not None or name in ("bash", "sh")) and not _path_has_bin_dir(sh, st.cwd):
            # PATH names none of the directories our commands live in (PATH=/nowhere): bash
            # finds no `ls` (nor `bash`) there either
            spec = None
            if not sh.get_scalar("PATH") and sh.state.functions.get("command_not_found_handle") is None:
                sh.error(f"{name}: No such file or directory")  # an empty PATH searches "."
                return 127
        elif name == "bash" or (name == "sh" and (path is None or self.native is None or self.prefer_inprocess)):
            # (`sh` with a real program to run is the system's dash, as /bin/sh, `dash` and
            # `env sh` already are: the in-process dash emulation is only the fallback)
            return run_nested_shell(sh, argv)
        if spec is not None and (self.prefer_inprocess or self.native is None):
            if path is None or _in_bin_dir(path, st.cwd):
                return self._call(sh, spec.fn, argv)
        if path is not None:
            if self.native is not None and not self.prefer_inprocess:
                return self._spawn(sh, normalize(path, st.cwd), argv, spelled=path)
            # a file of the user's on PATH (a script, or one shadowing a command of ours)
            return self._run_path(sh, path, argv)
        if spec is not None:
            return self._call(sh, spec.fn, argv)
        handler = sh.state.functions.get("command_not_found_handle")
        if handler is not None and not getattr(sh, "_in_cnf", False):
            # bash runs this function (in a subshell) for a command it cannot find
            child = sh.fork()
            child._in_cnf = True  # type: ignore[attr-defined]
            try:
                return child.call_function("command_not_found_handle", handler, list(argv))
            except ExitShell as e:
                return e.status
        sh.error(f"{name}: not found" if sh.dash else f"{printable_filename(name)}: command not found")
        return 127

    def stage_command(self, sh: Interpreter, name: str) -> Callable[..., int] | None:
        """The in-process command run_command would call for ``name`` when that is all it
        would do: no policy refusal, custom command, package shim or file of the user's on
        PATH; looked up without touching ``sh``'s hash table (a pipeline stage is a
        subshell's lookup: bash's parent never hashes it). None: use run_command."""
        if self.native is not None or "/" in name or name in self.custom or name in ("bash", "sh"):
            return None
        if self.allowlist is not None and name not in self.allowlist:
            return None
        reg = self.registry
        spec = dict.get(reg, name)  # (a loaded command: no Python-level get)
        if spec is None:
            spec = reg.get(name)  # (the lazy registry loads its module)
            if spec is None:
                return None
        st = sh.state
        path = st.hash.get(name) if st.hash else None
        if path is None or st.hash_path != sh.get_scalar("PATH"):
            path = self.find_path(sh, name)
        if path is None or not _in_bin_dir(path, st.cwd):
            return None
        return spec.fn

    def native_pipeline(self, sh: Interpreter, cmd: N.Pipeline, argvs: list[list[str]]) -> int | None:
        """Pipeline ``cmd`` (stage argvs from Interpreter._native_stages) when each stage is a
        program run_command would spawn as it is (found on PATH; no policy refusal, custom
        command, package shim, in-process preference, bash/sh, tty, background job, extra
        descriptor or exported function): the programs start from this thread with OS pipes
        between them and one wait collects them all, where the general path starts a thread
        and forks this shell per stage (~0.4 ms of the runner's CPU for `ls | wc -l`). Each
        is the program that stage's own lookup finds (a subshell's: the hash table is read,
        never written) with the environment, limits, process group and niceness it would
        get (stages before the last start on the launcher's spawner thread, as a stage
        thread's do). A stage whose start fails runs the general way on a thread (it reports
        the error, or runs a script without `#!`); if the first fails, None: nothing has
        started and the general path runs the pipeline. Statuses, PIPESTATUS and pipefail as
        there."""
        native = self.native
        fds = sh.fds
        if (native is None or self.prefer_inprocess or self._tty is not None or self._in_shim
                or len(fds) > 3 or fds.get(0) is None or fds.get(1) is None or fds.get(2) is None
                or getattr(sh, "exec_opts", None) is not None
                or getattr(sh, "_bg_job", None) is not None):
            return None
        st = sh.state
        if getattr(st, "exported_funcs", None):
            return None
        custom, allow = self.custom, self.allowlist
        path_var = sh.get_scalar("PATH")
        hashed = st.hash if st.hash and st.hash_path == path_var else None
        paths = []
        for argv in argvs:
            name = argv[0]
            if ("/" in name or name in custom or name in APT_COMMANDS or name in ("bash", "sh")
                    or (allow is not None and name not in allow)):
                return None
            path = hashed.get(name) if hashed else None
            if path is None:
                path = self.find_path(sh, name, path_var) if path_var is not None else None
                if path is None:
                    return None
            paths.append(path)
        if native.max_live is not None and len(native.live) + len(argvs) > native.max_live:
            return None   # (stages refused at the process limit: the general path's errors)
        b = sh.budget  # each stage is a command (charge_command, inlined), all before any starts
        for _ in argvs:
            k = b.commands = b.commands + 1
            if k > b.cmd_cap or b._cancelled or ((d := b.deadline) is not None and _monotonic() >= d):
                b.over_command()
        n = len(argvs)
        stderr_too = cmd.stderr_too
        pipes = [Pipe() for _ in range(n - 1)]
        results: list[int] = stage_results(n)
        errors: list[BaseException | None] = [None] * n
        threads: list[threading.Thread] = []
        procs: list[Any] = []
        where: list[int] = []   # stage of each proc
        fd_for, close_after, after_child, outs, _closed = _fd_mapper(self, sh)
        env = _c_env(dict(st.environ()))
        real_cwd = (self.fs.real_path(st.cwd) if hasattr(self.fs, "real_path") else st.cwd) or "/"
        common = dict(cwd=real_cwd, pgid=None, ignore=_ignored_signals(sh), umask=st.umask,
                      **_rlimits(sh))
        started = False
        try:
            try:
                for i, argv in enumerate(argvs):
                    path = paths[i]
                    p = normalize(path, st.cwd)
                    exe = self.fs.real_path(p) if hasattr(self.fs, "real_path") else p
                    exe = _exec_name(path, exe or p, real_cwd)
                    e = dict(env)
                    e["_"] = (path if "/" in path else p).split("\0", 1)[0]   # (bash: the command's path)
                    argv = _c_argv(argv)
                    last = i == n - 1
                    if i == 0:
                        fin = fd_for(0, False, False)
                        if fin is None:
                            return None   # (a stream only a pump thread can feed: general path)
                    else:
                        fin = pipes[i - 1].reader.fileno()
                    fout = fd_for(1, True) if last else pipes[i].writer.fd
                    ferr = (pipes[i].writer.fd if not last and i < len(stderr_too) and stderr_too[i]
                            else fd_for(2, True))
                    try:
                        with no_kick:   # (see _spawn_native: no child left without its wait)
                            proc = native.spawn(argv, executable=exe, env=e, stdin=fin,
                                                stdout=fout, stderr=ferr, handoff=not last,
                                                **common)
                    except BlockingIOError:
                        # a fork the kernel refused (the pids cgroup, RLIMIT_NPROC): bash's
                        # words and status for that stage, as _spawn_native says them (not
                        # tried again: the refusal is the run's to report)
                        sh.error(f"fork: {os.strerror(errno.EAGAIN)}")
                        results[i] = 254
                        started = True
                        if i:
                            pipes[i - 1].reader.close()
                        if not last:
                            pipes[i].writer.close()
                        continue
                    except (OSError, subprocess.SubprocessError):
                        if not started:
                            return None
                        # this stage as a stage thread would run it: its own lookup, spawn and
                        # error (or a script without #! run by the shell)
                        threads.append(sh.start_stage(cmd, i, pipes, results, errors))
                        continue
                    started = True
                    procs.append(proc)
                    where.append(i)
                    if i:
                        pipes[i - 1].reader.close()
                    if not last:
                        pipes[i].writer.close()
            finally:
                for fd in close_after:
                    try:
                        os.close(fd)
                    except OSError:
                        pass
                if not started:
                    b.commands -= n   # (charged again by the general path)
                    for fd in list(outs):
                        try:
                            os.close(fd)
                        except OSError:
                            pass
                    outs.clear()
                    for fn in after_child:
                        fn()
                    for pp in pipes:
                        pp.close()
            budget = sh.budget
            try:
                rcs = wait_all_collecting(procs, outs, budget.check, budget.remaining, budget)
            finally:
                for fn in after_child:
                    fn()
            ends = results.ends  # type: ignore[attr-defined]
            for i, rc, proc in zip(where, rcs, procs):
                results[i] = rc
                ends[i] = (proc.pid, rc - 128 if rc > 128 and getattr(proc, "signaled", False) else 0)
        except BaseException:
            # (the watchdog's exception between two stages' starts, or before the wait took
            # them over: the stages started so far never outlive the run; contract13)
            left = [pp for pp in procs if pp.wait(0) is None]
            if left:
                terminate(left)
            raise
        finally:
            if started:
                sh.join_stages(threads, pipes)
        if self.signal_fd is not None:
            self.take_signals(sh)
        return sh._pipeline_status(results, errors)

    def _package_shim(self, sh: Interpreter, argv: list[str]) -> int | None:
        """Dispatch's package-shim step: apt without uid 0 (packages/apt.py); None passes on."""
        name = argv[0]
        path = name if "/" in name else self.find_path(sh, name)
        if path is None:
            return None
        self._in_shim = True
        try:
            return apt_shim(self, sh, _Exec(self, sh), argv, normalize(path, sh.state.cwd))
        finally:
            self._in_shim = False

    def _run_path(self, sh: Interpreter, name: str, argv: list[str]) -> int:
        p = normalize(name, sh.state.cwd)
        try:
            s = self.fs.stat(p)
        except OSError:
            if any(len(c.encode("utf-8", "surrogateescape")) > 255 for c in p.split("/")):
                sh.error(f"{name}: File name too long")  # execve's ENAMETOOLONG
                return 126
            sh.error(f"{name}: No such file or directory")
            return 127
        if s.is_dir:
            sh.error(f"{name}: Is a directory")
            return 126
        if not (s.st_mode & 0o111):
            sh.error(f"{name}: Permission denied")
            return 126
        base = posixpath.basename(p)
        native = self.native is not None and not self.prefer_inprocess
        known = _placeholder_known(s) if native else None
        if posixpath.dirname(p) in _BIN_DIRS and (base in self.registry or base in ("bash", "sh")) \
                and (not native or known or (known is None and self._is_placeholder(p))):
            if base in ("bash", "sh"):
                return run_nested_shell(sh, [name] + argv[1:])
            return self._call(sh, self.registry[base].fn, argv)
        if known is False:
            # a binary read before and unchanged since (same inode, size, times): no head to
            # read again (two opens of it per command otherwise)
            return self._spawn(sh, p, argv, spelled=name)
        try:
            with self.fs.open(p, "rb") as f:
                head = f.read(256)
        except OSError as e:
            if self.native is not None and e.errno == errno.EACCES:
                # execute-only (`chmod 111`): execve needs no read permission; a script's
                # interpreter then fails to read it, as under bash
                return self._spawn(sh, p, argv, spelled=name)
            sh.error(f"{name}: {os.strerror(e.errno or 13)}")
            return 126
        if self.native is not None and b"provided in-process by agentic-bash" not in head[:200]:
            # (the head just read answers _is_placeholder: one open of the binary, not two)
            if native:
                _placeholder_note(s, False)
            return self._spawn(sh, p, argv, spelled=name)
        if b"provided in-process by agentic-bash" in head[:200]:
            # a placeholder whose implementation did not load: say so, never "succeed" silently
            why = getattr(self.registry, "why_missing", lambda n: None)(base)
            sh.error(f"{name}: cannot execute: the in-process command is unavailable"
                     + (f" ({why})" if why else ""))
            return 126
        if head.startswith(b"#!"):
            # as the kernel reads it: the interpreter up to a blank, then the rest of the line
            # (trimmed) as ONE optional argument (`#!/bin/bash -e`, `#!/usr/bin/env -S bash -eu`)
            line = head[2:].split(b"\n", 1)[0].decode("utf-8", "replace").strip(" \t")
            interp, _, optarg = line.replace("\t", " ").partition(" ")
            optarg = optarg.strip(" \t")
            opt = [optarg] if optarg else []
            ib = posixpath.basename(interp)
            if not interp:
                # (execve fails with ENOEXEC: bash runs the file itself)
                return run_nested_shell(sh, ["bash", p] + argv[1:], script_name=name)
            try:
                there = self.fs.exists(normalize(interp, sh.state.cwd))
            except OSError:
                there = False
            if not there:
                # (`#!/bin/bash\r`, a missing interpreter: execve's ENOENT, as bash 5.2 words it)
                sh.error(f"{name}: cannot execute: required file not found")
                return 127
            if ib == "env" and self.registry.get("env") is not None:
                # env itself parses the argument (-S, -u, `bash -e` as one name)
                spec = self.registry.get("env")
                return self._call(sh, spec.fn, [interp] + opt + [name if "/" in name else p] + argv[1:])
            if ib in ("bash", "sh", "dash"):
                # (#!/bin/sh is dash, as on Debian: no brace expansion, no `==` in test)
                return run_nested_shell(sh, ["bash" if ib == "bash" else "sh"] + opt + [p] + argv[1:],
                                        script_name=name)
            spec = self.registry.get(ib)
            if spec is not None:
                return self._call(sh, spec.fn, [ib] + opt + [p] + argv[1:])
            sh.error(f"{name}: {interp}: bad interpreter: No such file or directory")
            return 126
        # no shebang: bash runs it as a shell script (ENOEXEC fallback)
        return run_nested_shell(sh, ["bash", p] + argv[1:], script_name=name)

    def _is_placeholder(self, p: str) -> bool:
        try:
            with self.fs.open(p, "rb") as f:
                return b"provided in-process by agentic-bash" in f.read(200)
        except OSError:
            return False

    def make_ctx(self, sh: Interpreter, name: str, *, env: Mapping[str, str] | None = None) -> CommandContext:
        fds = sh.fds
        i, o, e = fds.get(0), fds.get(1), fds.get(2)
        st = sh.state
        if env is None:
            env = st.env_cache  # (environ()'s cache, read here: a call less per command)
            if env is None:
                env = st.environ()
            if getattr(st, "exported_funcs", None):
                from ..shell.state import ShellEnv
                env = ShellEnv(env)
                env.update(exported_functions(st))  # (`env`, `printenv` list them)
            if (sh.exec_cmd is not None or getattr(sh, "exec_tree", None) is not None) and _lowers_shlvl(sh):
                from ..shell.state import ShellEnv
                env = ShellEnv(env)
                _exec_shlvl(sh, env)
        return new_context(
            CmdFS(self.fs, fds, st.umask), st.cwd, env,
            _KeepOpen(i) if i is not None else CLOSED_IN,
            _KeepOpen(o) if o is not None else _ClosedOut(),
            _KeepOpen(e) if e is not None else NULL,
            sh.budget, self.info, _Exec(self, sh), st.umask, name)

    def _call(self, sh: Interpreter, fn: Callable[..., int], argv: list[str], custom: bool = False) -> int:
        a0 = argv[0]
        name = a0 if "/" not in a0 else posixpath.basename(a0)
        # GNU tools run by path name themselves as invoked (`/bin/cat: x: No such file...`);
        # the others print a fixed program name
        ctx = self.make_ctx(sh, a0 if "/" in a0 and name not in _FIXED_NAME else name)
        if sh.forked_simple and _coop.AVAILABLE:
            _coop.exec_point()  # (a pipeline stage that is one program: bash's child execs it)
        mark = held_mark()
        try:
            st = fn(ctx, list(argv))
            return int(st) if st is not None else 0
        except BrokenPipeError:
            if sh.exec_cmd is not None:
                sh.exec_ended(0, 13)  # (a stage that is this command died of SIGPIPE in bash)
            return 141
        except (LimitExceeded, MemoryError) as e:
            if type(e) is not MemoryError and (
                    e.limit != "max_variable_bytes" or custom or getattr(e, "shell", False)):  # type: ignore[union-attr]
                raise
            # a line, a read or a buffer past max_variable_bytes inside a tool (`sed ''
            # /dev/zero`), or past what a command may hold (held_cap: `yes | gzip -d`, an
            # internal error before): the tool fails as GNU's does when malloc fails, the
            # script goes on
            _drop_frames(e)
            base = posixpath.basename(argv[0])
            ctx.stderr.write(f"{argv[0]}: memory exhausted\n".encode("utf-8", "surrogateescape"))
            return 2 if base in ("sort", "ls", "du", "grep", "egrep", "fgrep", "diff", "cmp") else 1
        except (ExitShell, ReturnFn, LoopCtl):
            raise
        except RecursionError:
            sh.error(f"{argv[0]}: maximum recursion depth exceeded")
            return 2
        except StdinClosed:
            msg, st = _BADF_READ.get(posixpath.basename(argv[0]), ("{0}: -: Bad file descriptor", 1))
            if msg:
                ctx.stderr.write((msg.format(argv[0]) + "\n").encode())
            return st
        except IsADirectoryError:
            # a read error the tool did not report itself: stdin redirected from a
            # directory (`sort < dir`); each tool's words and status
            msg, st = _READ_ERRORS.get(posixpath.basename(argv[0]), ("{0}: -: Is a directory", 1))
            ctx.stderr.write((msg.format(argv[0]) + "\n").encode())
            return st
        except OSError as e:
            if e.errno not in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EBADF):
                if e.errno is None:
                    sh.error(f"{argv[0]}: internal error: {type(e).__name__}: {e}")
                    return 2
                # an I/O error the tool did not report itself: GNU's words, status 1
                where = f"{e.filename}: " if e.filename else ""
                ctx.stderr.write(f"{argv[0]}: {where}{os.strerror(e.errno)}\n".encode("utf-8", "surrogateescape"))
                return 1
            # a full output (/dev/full, or a full session layer: `head -c 2G /dev/zero > f`)
            # or a closed one (`cmd >&-`, EBADF): each tool's own words and status, without
            # the shell's prefix
            base = posixpath.basename(argv[0])
            msg, st = (e.errno == errno.EBADF and _CLOSED_OUT_ERRORS.get(base)
                       or _WRITE_ERRORS.get(base, ("{0}: write error: {1}", 1)))
            ctx.stderr.write((msg.format(argv[0], os.strerror(e.errno)) + "\n").encode())
            return st
        except Exception as e:  # noqa: BLE001 - a buggy command is a failed command, not a crash
            if sh.budget.cancelled:
                raise LimitExceeded(sh.budget._reason, "timed out") from None  # (see run())
            sh.error(f"{argv[0]}: internal error: {type(e).__name__}: {e}")
            return 2
        finally:
            if held_mark() != mark:
                release_held(mark)  # (what it held of its session's HeldPool)

    # run in-process command ``fn`` (from stage_command) with ``sh``'s descriptors: _call
    # itself (one Python call less per direct pipeline stage)
    call_command = _call

    def _spawn(self, sh: Interpreter, path: str, argv: list[str], spelled: str | None = None) -> int:
        return _spawn_native(self, sh, path, argv, spelled)

    def native_bash(self, sh: Interpreter, argv: list[str]) -> int | None:
        """``argv`` run by the real /usr/bin/bash as a program of the sandbox (`help`'s long
        texts); None without native programs or that file."""
        if self.native is None or self.allowlist is not None and "bash" not in self.allowlist:
            return None  # (a policy that does not allow bash gets the short text)
        try:
            if not _stat.S_ISREG(self.fs.stat("/usr/bin/bash").st_mode):
                return None
        except OSError:
            return None
        return self._spawn(sh, "/usr/bin/bash", argv, spelled="bash")

    # ------------------------------------------------------------------ files
    _API_READ_MAX = 1 << 30

    def _api_open(self, path: str, mode: str, perm: int = 0o644) -> BinaryIO:
        """The file API's open: a FIFO, socket or terminal the script left at ``path`` is
        refused (ENXIO) instead of making the caller wait forever for its other end (on a
        real root atomically, through O_NONBLOCK; elsewhere checked just before)."""
        if isinstance(self.fs, HostFS):
            return self.fs.open(path, mode, perm, regular=True)
        try:
            st = self.fs.stat(path)
        except OSError:
            st = None
        if st is not None and (_stat.S_ISFIFO(st.st_mode) or _stat.S_ISSOCK(st.st_mode)):
            raise OSError(errno.ENXIO, "not a regular file (the file API does not open FIFOs, "
                          "sockets or terminals)", path)
        return self.fs.open(path, mode, perm)

    def read_file(self, path: str) -> bytes:
        with self._api_open(path, "rb") as f:
            try:
                size = os.fstat(f.fileno()).st_size
            except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
                size = 0
            if size > self._API_READ_MAX:
                # a sparse file costs the sandbox nothing to make; reading it whole took the
                # sandbox process past its memory limit (and a reply this big cannot cross
                # the wire: isolation/wire.py MAX_FRAME)
                raise OSError(errno.EFBIG, f"file too large for read_file ({size} bytes, "
                              f"at most {self._API_READ_MAX})", path)
            return f.read()

    def write_file(self, path: str, data: bytes, mode: int = 0o644) -> None:
        parent = posixpath.dirname(path)
        _makedirs(self.fs, parent)
        with self._api_open(path, "wb", mode) as f:
            f.write(data)

    def list_files(self, path: str, limit: int | None = None) -> list[dict[str, Any]]:
        """Entries of ``path`` (the first ``limit`` by name), or of the file itself."""
        from ..fileapi import first_names
        try:
            names = self.fs.listdir(path)
        except NotADirectoryError:
            # (not the parent's whole listing: the caller asked for one entry)
            parent, name = posixpath.split(path)
            out = self._entries(parent or "/", [name])
            if not out:
                raise
            return out
        return self._entries(path, first_names(names, limit))

    def _entries(self, path: str, names: list[str]) -> list[dict[str, Any]]:
        out = []
        for name in names:
            p = path.rstrip("/") + "/" + name
            try:
                s = self.fs.stat(p, follow_symlinks=False)
            except OSError:
                continue
            kind = "dir" if _stat.S_ISDIR(s.st_mode) else ("symlink" if _stat.S_ISLNK(s.st_mode) else "file")
            out.append({"name": name, "path": p, "type": kind, "size": s.st_size,
                        "mode": s.st_mode & 0o7777, "mtime": s.st_mtime})
        return out

    def exists(self, path: str) -> bool:
        return self.fs.exists(path)

    def realpath(self, path: str) -> str:
        return self.fs.realpath(path)

    def remove(self, path: str, recursive: bool = False) -> None:
        s = self.fs.stat(path, follow_symlinks=False)
        if _stat.S_ISDIR(s.st_mode):
            if recursive:
                for name in self.fs.listdir(path):
                    self.remove(path.rstrip("/") + "/" + name, True)
            self.fs.rmdir(path)
        else:
            self.fs.unlink(path)

    # ------------------------------------------------------------------ state
    def get_state(self) -> dict[str, Any]:
        from ..shell.unparse import format_function
        st = self.shell.state
        vars_: dict[str, Any] = {}
        for name, v in st.scopes[0].items():
            val = v.value
            if type(val) is dict:
                val = {"assoc" if v.attrs & 16 else "indexed": [[k, x] for k, x in val.items()]}
            vars_[name] = {"value": val, "attrs": v.attrs}
        return {
            "cwd": st.cwd, "vars": vars_, "positional": list(st.positional),
            "functions": {k: format_function(f) for k, f in st.functions.items()},
            "options": dict(st.options), "shopt": dict(st.shopt), "traps": dict(st.traps),
            "aliases": dict(st.aliases), "dirstack": list(st.dirstack), "history": st.history[-HISTORY_MAX:],
            "umask": st.umask, "last_status": st.last_status,
            **({"ulimits": {c: list(v) for c, v in st.ulimits.items()}}
               if getattr(st, "ulimits", None) else {}),
            "packages": self.packages.to_json(),
            **({"script_name": self.shell.script_name} if self.shell.script_name != "bash" else {}),
        }

    def set_state(self, state: dict[str, Any]) -> None:
        from ..shell.parser import parse
        st = ShellState()
        for name, d in state.get("vars", {}).items():
            val = d.get("value")
            if isinstance(val, dict):
                if "assoc" in val:
                    val = {str(k): x for k, x in val["assoc"]}
                else:
                    val = {int(k): x for k, x in val.get("indexed", [])}
            st.scopes[0][name] = Var(val, int(d.get("attrs", 0)))
        st.cwd = state.get("cwd", "/")
        st.positional = list(state.get("positional", []))
        for k, src in state.get("functions", {}).items():
            try:
                tree = parse(src)
                for item in tree.items:
                    if isinstance(item.cmd, N.FuncDef):
                        st.functions[item.cmd.name] = item.cmd
            except ParseError:
                pass
        st.options.update(state.get("options", {}))
        st.shopt.update(state.get("shopt", {}))
        st.traps = dict(state.get("traps", {}))
        st.aliases = dict(state.get("aliases", {}))
        st.dirstack = list(state.get("dirstack", []))
        st.history = list(state.get("history", []))
        st.umask = int(state.get("umask", 0o022))
        lims = state.get("ulimits")
        if isinstance(lims, dict):
            from ..shell.builtins import _ULIMITS
            st.ulimits = {c: (int(v[0]), int(v[1])) for c, v in lims.items()  # type: ignore[attr-defined]
                          if c in _ULIMITS and isinstance(v, (list, tuple)) and len(v) == 2}
        st.last_status = int(state.get("last_status", 0))
        st.last_arg = "bash"  # (a shell started again: $_ is its argv[0], as at creation)
        st.on_circular = self.shell._circular_ref
        if isinstance(state.get("script_name"), str):
            # $0 and BASH_SOURCE of a script file run as the session (`agentic-bash run FILE`)
            self.shell.script_name = self.shell.fn_source = st.arg0 = state["script_name"]
            self.shell.script_file = True  # type: ignore[attr-defined]  # (its "main" frame)
            st.dash_mode = ""  # type: ignore[attr-defined]  # $- of a script file has no c
        if state.get("stdin_script"):
            # a piped REPL's session: bash reading its script from stdin names itself in
            # errors, `bash: line 3: …` (not `bash: -c: line 3:`), with no "main" frame
            st.stdin_script = True  # type: ignore[attr-defined]
            self.shell.fn_source = "main"  # (a function's BASH_SOURCE there; bash -c's: environment)
            st.dash_mode = "s"  # type: ignore[attr-defined]  # ($- of `bash < file`: hBs)
        if state.get("interactive"):
            # the REPL's session (never in get_state: a snapshot restored by `run` is not one):
            # errors as bash -i prints them, $- with i, ${x:?} ends its line with 1
            st.interactive = True  # type: ignore[attr-defined]
            st.dash_mode = ""  # type: ignore[attr-defined]
        self.shell.state = st
        self.shell.getopts_state = (1, 0)  # (a position inside the old shell's arguments)
        self.packages.load(state.get("packages") or ())


def _ignored_signals(sh: Interpreter) -> tuple[int, ...]:
    """Signals a native child starts with ignored, as under bash: those the script ignores
    (``trap '' INT``), plus SIGINT and SIGQUIT for an asynchronous command (``cmd &``; bash -c
    has no job control)."""
    traps = sh.state.traps
    ign = [SIGNALS[k] for k, v in traps.items() if v == "" and k in SIGNALS] if traps else []
    if getattr(sh, "_bg_job", None) is not None:
        ign += [2, 3]
    return tuple(sorted(set(ign)))


_EVENT_LOCK = threading.Lock()


class _RunBudget(Budget):
    """Budget whose threading.Event is made on first use (most runs never sleep or cancel)."""

    __slots__ = ("_ev",)

    def __init__(self, limits: Limits, timeout: float | None, now: float) -> None:  # noqa: D107
        self._start(limits, timeout, now)
        self._ev = None

    @property  # type: ignore[override]
    def _event(self) -> threading.Event:
        ev = self._ev
        if ev is None:
            with _EVENT_LOCK:
                ev = self._ev
                if ev is None:
                    ev = self._ev = threading.Event()
                    if self._cancelled:
                        ev.set()
        return ev

    @_event.setter
    def _event(self, value: threading.Event) -> None:
        self._ev = value


class _Exited(Exception):
    def __init__(self, status: int) -> None:
        self.status = status


class StdinClosed(Exception):
    """A read from a command's closed standard input (`cmd <&-`)."""


class _ClosedIn:
    """The stdin of a command run with fd 0 closed: every read fails with EBADF."""

    __slots__ = ()
    closed = True

    def _fail(self, *a: object) -> Any:
        raise StdinClosed(errno.EBADF, "Bad file descriptor")

    read = read1 = readline = readlines = readinto = __iter__ = _fail

    def close(self) -> None:
        pass

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *a: object) -> None:
        pass


CLOSED_IN = _ClosedIn()


class _ClosedOut:
    closed = True

    def write(self, data: bytes) -> int:
        if not data:
            return 0  # (no write(2) happens: `tail >&-` with nothing to print succeeds)
        raise OSError(9, "Bad file descriptor")

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass


class _Exec:
    """``ctx.exec``: run argv through the dispatch chain (builtins, commands; no functions)."""

    __slots__ = ("ex", "sh")

    def __init__(self, ex: InProcessExecutor, sh: Interpreter) -> None:
        self.ex = ex
        self.sh = sh

    def __call__(self, argv: list[str], *, stdin: Any = None, stdout: Any = None, stderr: Any = None,
                 env: Mapping[str, str] | None = None, cwd: str | None = None) -> int:
        from ..shell.builtins import BUILTINS
        child = self.sh.fork()
        if stdin is not None:
            child.fds[0] = stdin
        if stdout is not None:
            child.fds[1] = stdout
        if stderr is not None:
            child.fds[2] = stderr
        if cwd is not None:
            child.state.cwd = normalize(cwd, child.state.cwd)
        if env is not None:
            # the given mapping is the complete environment of the command
            ef = getattr(child.state, "exported_funcs", None)
            if ef:
                # exported functions travel in the environment (BASH_FUNC_name%%): those
                # cleared from it (env -i, env -u) are gone
                child.state.exported_funcs = frozenset(  # type: ignore[attr-defined]
                    n for n in ef if f"BASH_FUNC_{n}%%" in env)
            scopes = child.state.scopes
            sc = scopes[0]
            # (every scope: a prefix assignment's temporary one too, `FOO=1 env -u FOO sh`)
            for each in scopes:
                for k, v in list(each.items()):
                    if v.attrs & EXPORT and k not in env:
                        v.attrs &= ~EXPORT
            for k, v in env.items():
                if not _is_func_env(k):  # (an exported function stays one: exported_funcs)
                    for each in scopes[1:]:
                        if k in each:
                            del each[k]  # (the value given wins over a shadowing one)
                    sc[k] = Var(v, EXPORT)
            # exactly this environment, in its order, and a plain dict: a command started by
            # env/xargs/find is not given bash's $_ (see commands.sysutils._from_shell)
            child.state.env_cache = dict(env)
        if not argv:
            return 0
        try:
            # env/xargs/find exec a program, so a tool that exists as one (echo, printf,
            # true, pwd, ...) runs as that, with its own messages; a shell-only builtin is
            # still run as a builtin
            fn = BUILTINS.get(argv[0])
            if fn is not None and argv[0] not in self.ex.registry:
                return child.run_builtin(fn, list(argv))
            return self.ex.run_command(child, list(argv))
        except ExitShell as e:
            return e.status
        except (ReturnFn, LoopCtl):
            return child.state.last_status


def _makedirs(fs: Any, path: str) -> None:
    if path in ("", "/") or fs.exists(path):
        return
    _makedirs(fs, posixpath.dirname(path))
    try:
        fs.mkdir(path)
    except FileExistsError:
        pass


_DASH_TOKENS = frozenset("then fi do done esac else elif in ; ;; ;& ;;& & | && || ( ) { } ! |&".split())


def _dash_syntax(msg: str) -> str | None:
    """`sh` is dash here: its wording of a syntax error bash reports as ``msg`` (None: keep)."""
    if msg.startswith("syntax error near unexpected token `"):
        tok = msg[len("syntax error near unexpected token `"):-1]
        if tok == "newline":
            return "end of file unexpected"
        return f'"{tok}" unexpected' if tok in _DASH_TOKENS else "word unexpected"
    if msg.startswith("unexpected EOF while looking for matching `"):
        closer = msg[-2:-1]
        if closer in "\"'":
            return "Unterminated quoted string"
        if closer == "}":
            return "Missing '}'"
        if closer == "`":
            return "EOF in backquote substitution"
        return f'end of file unexpected (expecting "{closer}")'
    if msg == "syntax error: unexpected end of file":
        return "end of file unexpected"
    return None


def report_parse_error(sh: Interpreter, e: ParseError, lines: list[str], who: str) -> None:
    name = sh.script_name
    line = e.line or 1
    if sh.dash and who == "-c":
        d = _dash_syntax(e.message)
        if d == "end of file unexpected" and getattr(e, "expecting", None):
            d += f' (expecting "{e.expecting}")'  # type: ignore[attr-defined]
        if d is not None:
            ln = min(line, max(len(lines), 1))
            sh.write_err(f"{name}: {ln}: Syntax error: {d}\n".encode("utf-8", "surrogateescape"))
            return
    interactive = getattr(sh.state, "interactive", False)
    if interactive:
        prefix = f"{name}: "   # bash -i: no line number, and the offending line is not echoed
    elif who == "-c":
        prefix = f"{name}: -c: line {line}: "
    else:
        prefix = f"{who}: line {line}: "
    if not e.message:
        return  # bash says nothing for some [[ ]] syntax errors (`[[ ]]`)
    for ln, msg in getattr(e, "before", ()):
        # an error bash reported first, on its own line (see Parser.read_regex_word)
        sh.write_err((prefix.replace(f"line {line}:", f"line {ln}:") + msg + "\n").encode())
    sh.write_err((prefix + e.message + "\n").encode("utf-8", "surrogateescape"))
    if getattr(e, "keep_status", False) or interactive:
        return  # [[ ]] syntax errors do not echo the source line
    src = getattr(e, "source_line", None)
    if src is None and e.message.startswith("syntax error near"):
        src = lines[line - 1] if 0 < line <= len(lines) else ""
    if src is not None:
        sh.write_err((prefix + "`" + src + "'\n").encode("utf-8", "surrogateescape"))


def _lines(sh: Interpreter, source: str, who: str):  # type: ignore[no-untyped-def]
    """Top-level command lines of ``source``; a syntax error is reported when reached."""
    from ..shell.parser import CommandReader
    reader = CommandReader(source, extglob=bool(sh.state.shopt.get("extglob")), aliases=LiveAliases(sh))
    lines = source.split("\n")
    while True:
        # `shopt -s extglob` takes effect from the next command line, as in bash
        reader.extglob = bool(sh.state.shopt.get("extglob"))
        start = reader.consumed[1]
        try:
            tree = reader.next()
        except ParseError as e:
            _reader_warnings(sh, reader, who)  # a here-document read to the end before the error
            report_parse_error(sh, e, lines, who)
            if getattr(e, "resume_pos", None) is not None:
                sh.state.last_status = 1  # a bad compound assignment: the line is dropped
                sh.__dict__["dropped_line"] = True  # (its 1 stands: the script was not empty)
                continue
            # bash -c exits with e.status (1 for an unclosed `a=(`, 127 inside `$(…)`); after a
            # [[ ]] syntax error with the current $? unchanged
            if getattr(e, "keep_status", False):
                status = sh.state.last_status
            else:
                status = getattr(e, "status", 2)
            if status == 2 and sh.state.last_status and not sh.dash \
                    and e.message.startswith("unexpected EOF while looking for matching"):
                # the reader ran out of text inside a quote or $(...): bash leaves a failed
                # command's status as the exit status (it sets 2 only over a 0)
                status = sh.state.last_status
            x = ExitShell(status)
            x.fatal = True   # an interactive shell reports it and reads the next line
            raise x from None
        _reader_warnings(sh, reader, who)  # here-document delimited by end-of-file
        # set -v: each command line as read, blank lines too (and those after the last command)
        _verbose_echo(sh, reader, start)
        if tree is None:
            return
        if sh.dash:
            _dash_refuse(sh, tree, who)
        yield tree


def _dash_refuse(sh: Interpreter, tree: Any, who: str) -> None:
    """`sh` is dash here: bash syntax its parser refuses ends the shell with its syntax error."""
    from ..shell.dashcheck import dash_syntax_error
    bad = dash_syntax_error(tree)
    if bad is not None:
        name = sh.script_name if who == "-c" else who
        sh.write_err(f"{name}: {bad[0]}: Syntax error: {bad[1]}\n".encode("utf-8", "surrogateescape"))
        x = ExitShell(2)
        x.fatal = True
        raise x


def _reader_warnings(sh: Interpreter, reader: Any, who: str) -> None:
    """Print (and clear) the reader's here-document warnings under the script's name."""
    if reader.warnings:
        prefix = sh.script_name if who == "-c" else who
        for ln, msg in reader.warnings:
            sh.write_err(f"{prefix}: line {ln}: warning: {msg}\n".encode("utf-8", "surrogateescape"))
        reader.warnings.clear()


def _line_abandoned(sh: Interpreter, e: ExitShell, script: bool = False) -> None:
    """A top-level command raised ExitShell: re-raise it unless it only abandons the rest of
    its command line (an arithmetic expansion error, a failed readonly assignment; and, when
    bash reads a script file or stdin rather than -c text, an error in an array subscript,
    which ends ``bash -c`` but only drops the line of a script)."""
    if not e.discard and not (script and getattr(e, "subscript", False)):
        try:
            raise e
        finally:
            e = None  # type: ignore[assignment]  # (this frame in its traceback: a cycle)
    sh.state.last_status = e.status
    if isinstance(e, AbortLine) and sh.state.options.get("errexit"):
        # set -e: a failed readonly assignment ends the shell (an arithmetic error not)
        raise ExitShell(e.status) from None


def _run_items(sh: Interpreter, items: tuple[N.ListItem, ...], script: bool = False) -> None:
    """Top-level commands; an arithmetic expansion error (``echo $((1/0)); echo x``)
    abandons the rest of its command line only, as bash -c does, with ``$?`` 1."""
    # bash reads a command line at a time: `for …\ndone; echo x` is one line, so an error
    # inside the loop also drops `echo x`. An item ended by a newline ends such a line.
    skip = False
    prev: N.ListItem | None = None
    sh.top_items = items  # (Interpreter.report_line)
    for item in items:
        cmd = item.cmd
        sh.top_item = item
        sh.line_frame = 0  # (a case an error left)
        if sh.line_shift:
            cmd = N.shift_lines(cmd, sh.line_shift)  # type: ignore[assignment]
        if skip:
            if prev is not None and not (prev.newline or (prev.background and getattr(cmd, "line", 0)
                                                            > getattr(prev.cmd, "line", 0))):
                prev = item
                continue
            skip = False
        prev = item
        try:
            if item.background:
                sh.run_background(cmd)
            elif type(cmd) is Simple:
                sh.exec_simple(cmd)  # type: ignore[arg-type]
            else:
                sh.execute(cmd)
        except ExitShell as e:
            _line_abandoned(sh, e, script)
            skip = True
            # bash does not get back to the line where it stopped reading this command line:
            # its counter stays at the failing command's, and later lines count from there
            k = next(i for i, it in enumerate(items) if it is item)  # (only on this error path)
            end = next((it.end_line for it in items[k:] if it.newline), 0)
            if end:
                sh.line_shift += sh.lineno - (end + sh.line_shift)


def _who(sh: Interpreter) -> str:
    """How a run's errors name the shell: ``-c`` (bash -c TEXT), or the script's name when
    the session runs a script file (`agentic-bash run FILE`: bash FILE says ``FILE: line 3:``
    for a syntax error, not ``FILE: -c: line 3:``, and ends with 1 at ${x:?}, not 127)."""
    st = sh.state
    if sh.__dict__.get("script_file", False) or getattr(st, "interactive", False) \
            or getattr(st, "stdin_script", False):
        return sh.script_name
    return "-c"


def run_toplevel(sh: Interpreter, tree: N.Script | None, *, exit_trap: bool = True,
                 source: str | None = None, who: str = "-c") -> int:
    """Run a script as ``bash -c`` would: exit ends it, EXIT trap at the end. With ``source``
    the text is parsed and run one command line at a time (aliases, late syntax errors)."""
    prior = sh.budget.bind()  # readers and builders with no context charge this run
    try:
        return _run_toplevel(sh, tree, exit_trap, source, who)
    finally:
        Budget.unbind(prior)


EXIT_TRAP_GRACE = 0.05
"""Seconds an EXIT trap may run after its run's deadline (bash runs it when timeout(1)'s
SIGTERM arrives); past them it is cut, so the run still returns in time."""


def _exit_trap_at_deadline(sh: Interpreter, budget: Budget) -> None:
    """A run that timed out runs its EXIT trap (as bash killed by SIGTERM does) within
    EXIT_TRAP_GRACE; without this the trap stayed set and fired at the end of the next run.
    The calling thread is no longer watched: the trap is watched on its own (a trap that
    loops ends at the grace's end), and whatever stops it, the trap is gone afterwards."""
    budget.deadline = _monotonic() + EXIT_TRAP_GRACE
    budget.span = EXIT_TRAP_GRACE  # (the watchdog's early stop is a share of this, not of the run's)
    budget._cancelled = False
    prior = budget.bind()
    try:
        try:
            budget.watch()
            sh.run_exit_trap(124)
        finally:
            budget.unwatch()
    except BaseException:  # noqa: BLE001 - the run already ended with 124
        _unwatch_all(budget)
        sh.state.traps.pop("EXIT", None)
    finally:
        Budget.unbind(prior)
        budget._cancelled = True


def _drop_frames(e: BaseException | None) -> None:
    """Clear the locals of the finished frames in ``e``'s traceback (and its context's): a
    frame holding the exception that holds it is a cycle, and all the frames' locals (a
    substitution's 64 MiB buffer, a tool's input) lived until a generation-2 collection, which
    the raised gen-0 threshold makes rare (+64 MiB of process memory per `x=$(yes)`)."""
    for _ in range(8):
        if e is None:
            return
        tb = e.__traceback__
        while tb is not None:
            f = tb.tb_frame
            # (a generator's frame is skipped: clearing a suspended one would close it; one
            # the exception left is finished and already clear)
            if not f.f_code.co_flags & _GEN_FLAGS:
                try:
                    f.clear()
                except RuntimeError:  # still executing (the catching frame and its callers)
                    pass
            tb = tb.tb_next
        e = e.__context__ or e.__cause__


_GEN_FLAGS = 0x20 | 0x80 | 0x100 | 0x200  # CO_GENERATOR, CO_COROUTINE, CO_ITERABLE_COROUTINE, CO_ASYNC_GENERATOR


def _unwatch_all(budget: Budget) -> None:
    """``budget.unwatch()`` for the calling thread even when a kick the watchdog sent lands
    at its start (unwatch drops one that comes later): afterwards none can arrive."""
    while True:
        try:
            budget.unwatch()
            return
        except _DeadlineKick:
            continue


def _run_toplevel(sh: Interpreter, tree: N.Script | None, exit_trap: bool, source: str | None,
                  who: str) -> int:
    sh.line_shift = 0
    try:
        if tree is not None:
            items = tree.items
            if len(items) == 1 and not items[0].background:
                # one command (the per-call path): _run_items without its loop
                item = items[0]
                cmd = item.cmd
                sh.top_items, sh.top_item = items, item  # (Interpreter.report_line)
                sh.line_frame = 0
                try:
                    if type(cmd) is Simple:
                        sh.exec_simple(cmd)  # type: ignore[arg-type]
                    elif type(cmd) is N.Pipeline:
                        sh.exec_pipeline(cmd)  # (what execute() dispatches to)
                    else:
                        sh.execute(cmd)
                except ExitShell as e:
                    _line_abandoned(sh, e)
                    if type(cmd) is not Simple and item.newline and item.end_line:
                        # (as _run_items: later lines count from the failing command's)
                        sh.line_shift += sh.lineno - (item.end_line + sh.line_shift)
            elif items:
                _run_items(sh, items)
            else:
                sh.state.last_status = 0   # nothing to run: 0, as `bash -c ''` (not the last $?)
        else:
            ran = False
            sh.__dict__.pop("dropped_line", None)
            for t in _lines(sh, source or "", who):
                ran = ran or bool(t.items)
                _run_items(sh, t.items, who != "-c")
            if not ran and not sh.__dict__.pop("dropped_line", False):
                sh.state.last_status = 0
        if sh.chld_pending or sh.sig_queue:
            sh.run_pending()  # (children the last command reaped, signals sent meanwhile)
        status = sh.state.last_status
    except ExitShell as e:
        status = e.status
        # (read by InProcessExecutor.run: the REPL leaves on `exit`, not on an error that
        # ends only a non-interactive shell)
        sh.exited = "fatal" if (e.fatal or e.eof or isinstance(e.__context__, ExpansionError)) else True
        if status == 127 and (isinstance(e.__context__, ExpansionError) or getattr(e, "eof", False)):
            if sh.dash:
                status = 2  # dash ends with 2 in every mode
            elif who != "-c" or sh.state.options["errexit"]:
                # an unbound variable or ${x:?} ends a script file, or bash -c under set -e,
                # with 1 (bash -c without set -e: 127)
                status = 1
    except ExpansionError as e:
        sh.error(e.message)
        status = e.status
        if status == 127:
            status = 2 if sh.dash else 1 if who != "-c" or sh.state.options["errexit"] else 127
    except (ReturnFn, LoopCtl):
        status = sh.state.last_status
    except BrokenPipeError:
        status = 141
    except RecursionError:
        sh.error("maximum nesting depth exceeded")
        status = 2
    if exit_trap and sh.state.traps:
        status = sh.run_exit_trap(status)
    sh.state.last_status = status
    return status



_IN_BIN: dict[str, bool] = {}


def _enter_run_cwd(st: Any) -> tuple[Any, Any]:
    """A run's ``cwd=`` is its working directory as `cd` would make it: $PWD names it. The
    global PWD and OLDPWD as they were, for _leave_run_cwd."""
    sc = st.scopes[0]
    pwd, oldpwd = sc.get("PWD"), sc.get("OLDPWD")
    # (copies: `cd` assigns to the Var objects in place)
    old = pwd and pwd.copy(), oldpwd and oldpwd.copy()
    sc["PWD"] = Var(st.cwd, pwd.attrs if pwd is not None else EXPORT)
    st.env_cache = None
    return old


def _bad_run_cwd(sh: Any, path: str) -> str | None:
    """Why a run cannot start in ``path`` (strerror's words), or None."""
    try:
        if sh.fs.stat(path).is_dir:
            return None
        return os.strerror(errno.ENOTDIR)
    except OSError as e:
        return os.strerror(e.errno or errno.ENOENT)


def _leave_run_cwd(st: Any, saved: tuple[Any, Any]) -> None:
    """Puts back PWD and OLDPWD with the session's own directory (a `cd` inside the run
    changed them along with the directory that is being restored)."""
    sc = st.scopes[0]
    for name, v in zip(("PWD", "OLDPWD"), saved):
        if v is None:
            sc.pop(name, None)
        else:
            sc[name] = v
    st.env_cache = None


def _in_bin_dir(path: str, cwd: str) -> bool:
    """Whether the file ``path`` (as found on PATH) sits in a directory our commands live in;
    remembered for absolute paths (the answer does not depend on cwd then)."""
    if path[:1] != "/":
        return posixpath.dirname(normalize(path, cwd)) in _BIN_DIRS
    r = _IN_BIN.get(path)
    if r is None:
        if len(_IN_BIN) > 1024:
            _IN_BIN.clear()
        r = _IN_BIN[path] = posixpath.dirname(normalize(path, "/")) in _BIN_DIRS
    return r


def _path_has_bin_dir(sh: Interpreter, cwd: str) -> bool:
    """Whether $PATH lists one of the directories the in-process commands live in."""
    path = sh.get_scalar("PATH")
    if path is None:
        return False
    for d in path.split(":"):
        d = normalize(d or ".", cwd)
        if d in _BIN_DIRS:
            return True
    return False

_NOT_DASH_VARS = ("OPTERR", "HOSTNAME", "HOSTTYPE", "MACHTYPE", "OSTYPE", "BASH", "BASH_VERSION",
                  "SHELL", "BASH_LOADABLES_PATH", "BASH_VERSINFO", "UID", "EUID")


def run_nested_shell(sh: Interpreter, argv: list[str], *, script_name: str | None = None) -> int:
    """``bash``/``sh`` as a command: a child shell with only the exported environment."""
    from ..shell.parser import parse
    from ..shell.state import LETTER_TO_OPTION
    lim = sh.budget.limits.max_call_depth
    depth = getattr(sh, "nest_depth", 0)
    if lim is not None and depth >= min(lim, 64):
        sh.error(f"{argv[0]}: maximum nesting level exceeded")
        return 1
    args = argv[1:]
    command: str | None = None
    opts: dict[str, bool] = {}
    shopts: dict[str, bool] = {}
    posix = False
    dash = posixpath.basename(argv[0]) == "sh"
    name = argv[0] or "bash"  # (bash names itself as invoked: /usr/bin/bash: -Z: ...)
    read_stdin = False
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--" or a == "-":
            i += 1
            break
        if a in ("-c",):
            command = ""
            i += 1
            continue
        if a == "-s":
            read_stdin = True
            i += 1
            continue
        if a in ("-o", "+o") and i + 1 < len(args):
            if not dash and args[i + 1] not in sh.state.options:
                sh.write_err(f"{name}: line 0: {name}: {args[i + 1]}: invalid option name\n".encode())
                return 2
            opts[args[i + 1]] = a[0] == "-"
            i += 2
            continue
        if a in ("-O", "+O") and i + 1 < len(args) and not dash:
            if args[i + 1] not in sh.state.shopt:
                sh.write_err(f"{name}: line 0: {args[i + 1]}: invalid shell option name\n".encode())
                return 2
            shopts[args[i + 1]] = a[0] == "-"
            i += 2
            continue
        if a.startswith("--") and dash:
            sh.write_err(f"{argv[0]}: 0: Illegal option --\n".encode())  # (dash has no long options)
            return 2
        if a in ("--norc", "--noprofile", "--posix", "-l", "--login", "-i", "-p", "--version", "--help",
                 "--noediting", "--verbose", "--debug", "--debugger", "--restricted"):
            if a == "--version":
                sh.write_out(_BASH_VERSION_TEXT.format(sh.info.machine).encode())
                return 0
            if a == "--help":
                sh.write_out(("GNU bash, version 5.2.15(1)-release-({0}-pc-linux-gnu)\n".format(sh.info.machine)
                              + _bash_usage(name) + _BASH_HELP_TAIL.replace("`bash -c", f"`{name} -c")).encode())
                return 0
            if a == "--posix":
                opts["posix"] = True
                posix = True
            elif a == "--verbose":
                opts["verbose"] = True
            i += 1
            continue
        if a in ("--rcfile", "--init-file"):
            if i + 1 >= len(args):
                sh.write_err(f"{name}: {a[2:]}: option requires an argument\n".encode())
                return 2
            i += 2
            continue
        if a.startswith("--") and len(a) > 2:
            sh.write_err((f"{name}: {a}: invalid option\n" + _bash_usage(name)).encode())
            return 2
        if len(a) > 1 and a[0] in "-+" and not a.startswith("--"):
            ok = True
            used = 0  # (each o/O in a cluster takes the next argument: `-euo pipefail`)
            for c in a[1:]:
                if c in "oO" and not dash and i + 1 + used < len(args):
                    val = args[i + 1 + used]
                    used += 1
                    if c == "o":
                        if val not in sh.state.options:
                            sh.write_err(f"{name}: line 0: {name}: {val}: invalid option name\n".encode())
                            return 2
                        opts[val] = a[0] == "-"
                    else:
                        if val not in sh.state.shopt:
                            sh.write_err(f"{name}: line 0: {val}: invalid shell option name\n".encode())
                            return 2
                        shopts[val] = a[0] == "-"
                elif c == "c":
                    command = ""
                elif c == "s":
                    read_stdin = True
                elif c in LETTER_TO_OPTION:
                    opts[LETTER_TO_OPTION[c]] = a[0] == "-"
                elif c in "il":
                    pass
                else:
                    ok = False
            if not ok:
                bad = next(c for c in a[1:] if c not in "csoO" and c not in LETTER_TO_OPTION and c not in "il")
                if dash:
                    sh.write_err(f"{argv[0]}: 0: Illegal option {a[0]}{bad}\n".encode())
                else:
                    sh.write_err((f"{name}: {a[0]}{bad}: invalid option\n" + _bash_usage(name)).encode())
                return 2
            i += 1 + used
            continue
        break
    rest = args[i:]
    child = Interpreter(sh.fs, budget=sh.budget, info=sh.info, host=sh.host)
    child.nest_depth = depth + 1  # type: ignore[attr-defined]
    if dash:
        # /bin/sh is dash here: its echo interprets escapes, and its errors read "sh: 1: …"
        child.dash = True
        child.state.shopt["xpg_echo"] = True
        # dash has no brace expansion (`echo {1..3}` prints it as written) and no mode
        # letter in $- (hashall stays on: its letter shows, which dash's $- lacks)
        child.state.options["braceexpand"] = False
        child.state.dash_mode = ""  # type: ignore[attr-defined]
        from ..shell.builtins import DASH_MISSING
        child.state.disabled = DASH_MISSING  # (looked up as commands: `declare: not found`)
    child.fds = dict(sh.fds)
    child.jobs = None
    st = child.state
    for k, v in sh.state.environ().items():
        st.scopes[0][k] = Var(v, EXPORT)
    for k, v in (sh.state.scopes[-1].items() if len(sh.state.scopes) > 1 else ()):
        if v.attrs & EXPORT and type(v.value) is str:
            st.scopes[0][k] = Var(v.value, EXPORT)
    _init_state(st, {}, sh.state.cwd, sh.info)
    if dash:
        for n in _NOT_DASH_VARS:  # (bash's own variables, unless the environment has them)
            v = st.scopes[0].get(n)
            if v is not None and not v.attrs & EXPORT:
                del st.scopes[0][n]
    # a process of its own: $$ and BASHPID its own pid, PPID the shell that started it (a
    # script calling itself with bash makes its temporary names from $$)
    from ..shell.pids import new_pid
    child.pid = child.bashpid = new_pid()
    st.scopes[0]["PPID"] = Var(str(sh.bashpid), INTEGER | READONLY)
    if "PATH" not in st.scopes[0]:
        # bash gives itself a default search path (not exported) when its environment has none
        st.scopes[0]["PATH"] = Var("/usr/local/bin:/usr/local/sbin:/usr/bin:/usr/sbin:/bin:/sbin:.")
    exported = [n for n in getattr(sh.state, "exported_funcs", ()) if n in sh.state.functions]
    if exported:
        # functions marked with export -f reach the child, as bash passes them in its environment
        for n in exported:
            st.functions[n] = sh.state.functions[n]
        st.exported_funcs = frozenset(exported)  # type: ignore[attr-defined]
    try:
        # (sh is dash here, which leaves SHLVL as it finds it)
        lvl = int(sh.get_scalar("SHLVL") or "1") + (0 if dash else 1) - _lowers_shlvl(sh)
    except ValueError:
        lvl = 2
    st.scopes[0]["SHLVL"] = Var(str(lvl), EXPORT)
    lc_all = st.scopes[0].get("LC_ALL")
    if not dash and lc_all is not None and type(lc_all.value) is str and lc_all.value:
        from ..shell.interpreter import utf8_locale_name
        if lc_all.value not in ("C", "POSIX") and not utf8_locale_name(lc_all.value):
            # a bash started with an LC_ALL this machine lacks says so at start-up (only
            # LC_ALL: the other categories stay quiet there)
            child.write_err(f"{argv[0]}: warning: setlocale: LC_ALL: cannot change locale "
                            f"({lc_all.value})\n".encode("utf-8", "surrogateescape"))
    st.umask = sh.state.umask
    if getattr(sh.state, "ulimits", None):
        st.ulimits = sh.state.ulimits  # type: ignore[attr-defined]
    st.options.update(opts)
    st.shopt.update(shopts)
    if posix:
        st.scopes[0]["POSIXLY_CORRECT"] = Var("y")  # (bash --posix sets it, unexported)
    child.start_time = time.monotonic()
    if command is not None:
        if not rest:
            if dash:
                sh.write_err(f"{argv[0]}: 0: -c requires an argument\n".encode())
            else:
                sh.write_err(f"{name}: -c: option requires an argument\n".encode())
            return 2
        src = rest[0]
        child.script_name = rest[1] if len(rest) > 1 else ("sh" if dash else "bash")
        eo = getattr(sh, "exec_opts", None)  # `exec -a NAME sh -c ...`: $0 is NAME
        st.arg0 = rest[1] if len(rest) > 1 else eo[0] if eo and eo[0] is not None else argv[0]
        st.positional = rest[2:]
        child.exec_string = src
        who = "-c"
    elif rest and not read_stdin:
        path = normalize(rest[0], sh.state.cwd)
        try:
            with CmdFS(sh.fs, sh.fds).open(path, "rb") as f:
                data = f.read()
        except IsADirectoryError:
            # bash has already made the operand its $0 when the read fails; dash (sh)
            # reads a directory as an empty script
            if posixpath.basename(argv[0]) == "sh":
                return 0
            sh.write_err(f"{rest[0]}: {rest[0]}: Is a directory\n".encode())
            return 126
        except OSError as e:
            if posixpath.basename(argv[0]) == "sh":  # dash's wording and status
                sh.write_err(f"{argv[0]}: 0: cannot open {rest[0]}: "
                             f"{'No such file' if e.errno == errno.ENOENT else os.strerror(e.errno or 2)}\n".encode())
                return 2
            sh.write_err(f"{argv[0]}: {script_name or rest[0]}: {os.strerror(e.errno or 2)}\n".encode())
            return 127 if e.errno == errno.ENOENT else 126
        src = data.decode("utf-8", "surrogateescape")
        child.script_name = script_name or rest[0]
        child.script_file = True  # type: ignore[attr-defined]  # (a "main" call frame)
        child.fn_source = child.script_name
        st.arg0 = script_name or rest[0]
        st.positional = rest[1:]
        st.dash_mode = ""  # type: ignore[attr-defined]  # $- of a script file has no c
        who = child.script_name
    else:
        stream = sh.fds.get(0)
        try:
            data = stream.read() if stream is not None else b""
        except IsADirectoryError:
            sh.write_err(f"{argv[0]}: error reading input file: Is a directory\n".encode())
            return 2
        src = data.decode("utf-8", "surrogateescape")
        st.positional = rest
        child.script_name = "sh" if dash else "bash"
        child.fds[0] = NULL
        st.dash_mode = "s"  # type: ignore[attr-defined]
        who = "bash"
    tree = None
    if who == "-c" and not dash and not (st.shopt["expand_aliases"] or st.options["verbose"]):
        # parsed whole where it can be, as a run's own script is: bash -c execs its last
        # command (SHLVL one lower there; a signal that ends it ends this bash)
        try:
            tree = _whole_script(src, st.shopt["extglob"] is True)
        except ParseError:
            tree = None
    if tree is not None:
        child.exec_tree = tree  # type: ignore[attr-defined]  # (see _execed)
        child.exec_cmd = exec_candidate(tree)
        st_ = run_toplevel(child, tree, who=who)
    else:
        st_ = run_toplevel(child, None, source=src, who=who)
    child.close_owned()
    sig = child.killed_by
    job = getattr(sh, "_bg_job", None)
    if sig and st_ == 128 + sig and not sh.in_cmdsub and not sh.exec_ended(child.exec_pid or child.pid, sig) \
            and (job is None or not (job.killed or sh.budget.cancelled)):
        # `bash -c 'kill -9 $$'`: reported as bash reports its child the signal ended
        _report_signal(sh, child.exec_pid or child.pid, sig, argv)
    return st_


_FD_REF = _lazy_re(r"/(?:dev|proc/self)/fd/([0-9]+)")


def _extra_fds(sh: Interpreter, argv: list[str], fd_for: Callable[..., int | None],
               close_after: list[int]) -> dict[int, int]:
    """The shell's descriptors above 2 as real fds for a native child, as bash passes every
    open one: files, pipes and here-documents directly (a shared offset, nothing consumed),
    output streams of the shell through a pipe copied in; an input stream with no descriptor
    of its own only when this command names it (``/dev/fd/N`` in its arguments, e.g. from
    ``<(cmd)``, or a process substitution made for it), since pumping it otherwise would take
    input some later command is owed."""
    named = {int(m) for a in argv if "/fd/" in a for m in _FD_REF.findall(a)}
    subst = {id(p[1]) for p in sh.procsubs}
    out: dict[int, int] = {}
    for n in sorted(sh.fds):
        if n < 3:
            continue
        if len(out) >= 64:
            break
        s = sh.fds[n]
        inner = s._s if isinstance(s, _KeepOpen) else s
        write = not hasattr(inner, "read") or (
            hasattr(inner, "writable") and _safe(inner.writable) and not _safe(inner.readable))
        # an output stream is always safe to pass: what the child writes is copied in, and
        # a pipe a background grandchild keeps open is drained on a thread
        fd = fd_for(n, write, pump=write or n in named or id(inner) in subst)
        if fd is None:
            continue
        if fd < 3:  # would be overwritten by the child's own stdio first
            fd = os.dup(fd)
            close_after.append(fd)
        out[n] = fd
    return out


def _rlimits(sh: Interpreter) -> dict[str, Any]:
    """``ulimit`` settings of the shell as ``spawn(rlimits=...)``."""
    own = getattr(sh.state, "ulimits", None)
    if not own:
        return {}
    import resource

    from ..shell.builtins import _ULIMITS
    out = []
    for c, (soft, hard) in own.items():
        res = getattr(resource, _ULIMITS[c][0], None)
        if res is not None:
            out.append((res, soft, hard))
    return {"rlimits": tuple(out)}


def _safe(fn: Callable[[], bool]) -> bool:
    try:
        return bool(fn())
    except (OSError, ValueError):
        return False


def _is_exec_file(ex: InProcessExecutor, path: str) -> bool:
    try:
        s = ex.fs.stat(path)
    except OSError:
        return False
    return bool(s.is_file and s.st_mode & 0o111)


def _exec_name(spelled: str | None, exe: str, real_cwd: str) -> str:
    """The file name to hand execve: the path as bash spells it (``./x.sh``, ``bin/tool``;
    a script's interpreter gets it as $0 / sys.argv[0]) where it names the same file from
    the child's cwd, else the resolved one."""
    if not spelled or spelled == exe or spelled.startswith("/") or "/" not in spelled:
        return exe
    try:
        same = os.path.samefile(os.path.join(real_cwd, spelled), exe)
    except (OSError, ValueError):
        same = False
    return spelled if same else exe


_REMOVED: list[int] = []   # an O_PATH descriptor of an empty directory already removed


def _removed_dir() -> str:
    """A path naming an empty, removed directory in whichever process resolves it (the
    child's chdir runs before its descriptors are closed): check10, a program started in a
    removed cwd."""
    if not _REMOVED:
        import tempfile
        d = tempfile.mkdtemp(prefix=".agentic-bash-gone-")
        fd = os.open(d, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        os.rmdir(d)
        _REMOVED.append(fd)
    return f"/proc/self/fd/{_REMOVED[0]}"


def _noexec(ex: InProcessExecutor, sh: Interpreter, path: str, argv: list[str], shown: str,
            err: int) -> int:
    """What bash does when execve refuses an existing file: ENOEXEC runs a text file as a
    shell script in a new shell (a binary one is refused), ENOENT means its interpreter is
    missing, another error with a `#!` line names the interpreter."""
    try:
        with ex.fs.open(path, "rb") as f:
            head = f.read(80)
    except OSError:
        head = b""
    if err == errno.ENOEXEC:
        nl, nul = head.find(b"\n"), head.find(b"\0")
        # bash's check_binary_file: an ELF header, or a NUL in the first line (5.1+)
        if head.startswith(b"\x7fELF") or nul >= 0 and (nl < 0 or nul < nl):
            sh.error(f"{shown}: cannot execute binary file: Exec format error")
            return 126
        return run_nested_shell(sh, ["bash", path] + argv[1:], script_name=shown)
    if err == errno.ENOENT:
        sh.error(f"{shown}: cannot execute: required file not found")
        return 127
    if head.startswith(b"#!"):
        line = head[2:].split(b"\n", 1)[0]
        interp = line.strip(b" \t").split(None, 1)[0] if line.strip(b" \t") else b""
        if interp.endswith(b"\r"):
            interp = interp[:-1] + b"^M"
        sh.error(f"{shown}: {interp.decode('utf-8', 'surrogateescape')}: bad interpreter: "
                 f"{os.strerror(err)}")
        return 126
    sh.error(f"{shown}: {os.strerror(err)}")
    return 126


_NOT_PLACEHOLDERS: dict[tuple, bool] = {}
_SETTLED_S = 0.05


def _placeholder_known(s: Any) -> bool | None:
    """False when the file with stat ``s`` was read before and is no placeholder (keyed by
    device, inode, size, mtime and ctime: a rewrite changes ctime, which user space cannot
    set back); None when it must be read. pool8: a /path command paid two opens, two
    fstats, a seek and a read of the binary (12 system calls) on every run."""
    return _NOT_PLACEHOLDERS.get((s.st_dev, s.st_ino, s.st_size, s.st_mtime, s.st_ctime))


def _placeholder_note(s: Any, value: bool) -> None:
    # only once its last change is older than a clock tick (a rewrite within the same tick
    # could leave ctime as it was); at most 4096 binaries remembered
    if s.st_ino and time.time() - s.st_ctime > _SETTLED_S and len(_NOT_PLACEHOLDERS) < 4096:
        _NOT_PLACEHOLDERS[(s.st_dev, s.st_ino, s.st_size, s.st_mtime, s.st_ctime)] = value


def _fd_mapper(ex: InProcessExecutor, sh: Interpreter) -> tuple[
        Callable[..., int | None], list[int], list[Callable[[], None]], dict[int, Any], list[int]]:
    """``fd_for(n, write, pump=True)``: a real fd for the shell's descriptor ``n`` that native
    children get, and the books it keeps: fds to close once the children are started, what
    to call once they are done, output pipes to copy (read end -> the shell's stream; one per
    stream, shared by every child writing to it, so their writes keep their order), and
    which of 0-2 a child starts with closed."""
    close_after: list[int] = []
    after_child: list[Callable[[], None]] = []
    outs: dict[int, Any] = {}  # read end -> the shell stream the child's output goes to
    out_pipes: dict[int, int] = {}  # read end -> write end
    closed: list[int] = []  # of 0-2: closed in the child

    def fd_for(n: int, write: bool, pump: bool = True) -> int | None:
        s = sh.fds.get(n)
        if s is None:
            # a closed descriptor (`>&-`, `<&-`): the child starts with it closed (`ls >&-`:
            # "write error: Bad file descriptor", status 2); /dev/null is the placeholder
            fd = os.open(os.devnull, os.O_WRONLY if write else os.O_RDONLY)
            close_after.append(fd)
            if n <= 2:
                closed.append(n)
            return fd
        inner = s._s if isinstance(s, _KeepOpen) else s
        if isinstance(inner, NullStream):
            # /dev/null itself (bash's child has it open there): no pipe, no pump thread
            fd = os.open(os.devnull, os.O_RDWR)
            close_after.append(fd)
            return fd
        if not write and type(inner) is DirInput:
            # `< dir`: the program reads the directory and reports EISDIR itself, as under
            # bash (`cat: -: Is a directory`)
            try:
                real = ex.fs.real_path(inner.path) if hasattr(ex.fs, "real_path") else None
                fd = os.open(real or "/", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            except (OSError, ValueError, TypeError):
                fd = os.open("/", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            close_after.append(fd)
            return fd
        if not write:
            # stdin: the child gets exactly the bytes earlier builtins left (shared offset)
            h = _heredoc_pipe(inner) if isinstance(inner, HereDoc) else None
            if h is None:
                h = stdin_handoff(inner)
            if h is not None:
                after_child.append(h[1])
                return h[0]
        fileno = getattr(inner, "fileno", None)
        if write and fileno is not None and not isinstance(inner, io.BytesIO):
            try:
                fd = fileno()
                flush = getattr(inner, "flush", None)
                if flush is not None:
                    flush()  # what builtins wrote comes first
                return fd
            except (OSError, ValueError, io.UnsupportedOperation):
                pass
        if not pump:
            return None
        if write:
            # copied on this thread by wait_collecting; `2>&1` into one stream shares a pipe,
            # so the child's writes keep their order
            for r0, w0 in out_pipes.items():
                if outs[r0] is inner:
                    return w0
            r, w = os.pipe()
            outs[r] = inner
            out_pipes[r] = w
            close_after.append(w)
            return w
        r, w = os.pipe()

        def pump_in() -> None:
            try:
                while True:
                    chunk = inner.read(65536) if hasattr(inner, "read") else b""
                    if not chunk:
                        break
                    os.write(w, chunk)
            except (OSError, ValueError):  # the reader exited, or the stream was closed
                pass
            finally:
                os.close(w)
        t = threading.Thread(target=pump_in, daemon=True)
        close_after.append(r)
        start_thread(t)  # (not interrupted inside Thread.start by the deadline watchdog)
        return r

    return fd_for, close_after, after_child, outs, closed


def _c_argv(argv: list[str]) -> list[str]:
    """``argv`` as execve takes it: C strings, each cut at a NUL."""
    if any("\0" in a for a in argv):
        return [a.split("\0", 1)[0] for a in argv]
    return argv


def _c_env(env: dict[str, str]) -> dict[str, str]:
    """``env`` as execve takes it: values cut at a NUL, names holding one left out."""
    if "\0" in "".join(env.values()):   # (one C pass; a generator was ~4 us a spawn)
        return {k: v.split("\0", 1)[0] for k, v in env.items() if "\0" not in k}
    return env


def _spawn_native(ex: InProcessExecutor, sh: Interpreter, path: str, argv: list[str],
                  spelled: str | None = None) -> int:
    """Run a host binary through the NativeLauncher with the shell's streams as real fds."""
    pumps: list[threading.Thread] = []
    fd_for, close_after, after_child, outs, closed = _fd_mapper(ex, sh)
    env = dict(sh.state.environ())
    if getattr(sh.state, "exported_funcs", None):
        env.update(exported_functions(sh.state))  # (bash: after the variables)
    _exec_shlvl(sh, env)
    exec_opts = getattr(sh, "exec_opts", None)
    if exec_opts is not None:
        # `exec -a NAME` / `-l` / `-c`: the program's argv[0], an empty environment
        a0, clear = exec_opts
        if a0 is not None:
            argv = [a0] + argv[1:]
        if clear:
            env = {}
    if exec_opts is None or not exec_opts[1]:
        env["_"] = spelled if spelled and "/" in spelled else path  # (bash: the command's path)
    argv = _c_argv(argv)
    env = _c_env(env)
    try:
        fin, fout, ferr = fd_for(0, False), fd_for(1, True), fd_for(2, True)
        extra = _extra_fds(sh, argv, fd_for, close_after) if len(sh.fds) > 3 else None
        real_cwd = ex.fs.real_path(sh.state.cwd) if hasattr(ex.fs, "real_path") else sh.state.cwd
        exe = ex.fs.real_path(path) if hasattr(ex.fs, "real_path") else path
        exe = _exec_name(spelled, exe or path, real_cwd or "/")
        tty = ex._tty
        # a run(tty=...): the child writing to the terminal gets it as controlling terminal
        ctty = tty is not None and fout == tty.slave
        kw = dict(executable=exe, env=env, cwd=real_cwd or "/", stdin=fin, stdout=fout,
                  stderr=ferr, pgid=None, ignore=_ignored_signals(sh),
                  **({"ctty": True} if ctty else {}), **({"fds": extra} if extra else {}),
                  umask=sh.state.umask, **_rlimits(sh),
                  **({"closed": tuple(closed)} if closed else {}))
        try:
            # (no watchdog exception between the child's start and `proc`: one landing there
            # left the child running after its run had stopped, found only at close)
            with no_kick:
                proc = ex.native.spawn(argv, **kw)
        except FileNotFoundError as e:
            # the shell's directory was removed (`cd d; rm -rf ../d; ls`): the child's
            # chdir failed, where bash's children inherit the deleted directory. An empty
            # removed one behaves the same (ls lists nothing, pwd -P cannot name it)
            if e.filename != kw["cwd"] or os.path.isdir(kw["cwd"]):
                raise
            kw["cwd"] = _removed_dir()
            with no_kick:
                proc = ex.native.spawn(argv, **kw)
    except OSError as e:
        for fd in close_after + list(outs):
            try:
                os.close(fd)
            except OSError:
                pass
        for fn in after_child:
            fn()
        if e.errno == errno.EAGAIN:  # Limits.max_processes: like bash's failed fork
            sh.error(f"fork: {os.strerror(e.errno)}")
            return 254
        # bash names the file as it found it (a PATH entry joined on, or as typed)
        shown = spelled if spelled and "/" in spelled else argv[0]
        if e.errno not in (errno.E2BIG, errno.ENOMEM, None) and _is_exec_file(ex, path):
            return _noexec(ex, sh, path, argv, shown, e.errno)
        sh.error(f"{shown}: {os.strerror(e.errno or 2)}")
        # bash's shell_execve: 127 only for ENOENT; E2BIG (an environment grown past the
        # kernel's limit, e.g. by export -f), ENOMEM, ETXTBSY, ... are 126
        return 127 if e.errno in (errno.ENOENT, None) else 126
    except subprocess.SubprocessError as e:  # (the child's setup failed before exec)
        for fd in close_after + list(outs):
            try:
                os.close(fd)
            except OSError:
                pass
        for fn in after_child:
            fn()
        sh.error(f"{argv[0]}: cannot execute: {e}")
        return 126
    waiting = False
    try:
        for fd in close_after:
            try:
                os.close(fd)
            except OSError:
                pass
        job = getattr(sh, "_bg_job", None)
        out = sh.fds.get(1)
        if job is not None and not job.pid_ready.is_set() and (
                not isinstance(out, PipeWriter) or out is getattr(job.child, "fds", {}).get(1)):
            # `$!` of a background job is its real pid (a pipeline's: the last stage's, the
            # one not writing into a pipe the job itself made)
            job.native = proc
            if sh.jobs is not None:
                sh.jobs.by_pid[proc.pid] = job
            job.pid = proc.pid
            job.pid_ready.set()
        budget = sh.budget
        # budget.check() raising (timeout, kill, close) ends the child like timeout(1):
        # SIGTERM, a short grace, then SIGKILL to its group
        if ctty:
            tty.foreground += 1
        try:
            waiting = True
            rc = wait_collecting(proc, outs, budget.check, budget.remaining, budget)
        finally:
            if ctty:
                tty.foreground -= 1
        if ctty and rc == 128 + signal.SIGINT and tty.interrupted:
            # killed by the interrupt typed at its terminal: the rest of the script stops
            # too, as in an interactive bash
            tty.interrupted = False
            budget.cancel("interrupt")
    except BaseException:
        if not waiting or proc.wait(0) is None:
            # (the watchdog's exception landed before wait_collecting could take the child
            # over, or at its very start): the child never outlives its run
            terminate([proc])
        raise
    finally:
        for fn in after_child:
            fn()
        for t in pumps:
            t.join(2)
    if rc > 128 and not sh.in_cmdsub and getattr(proc, "signaled", True) \
            and not sh.exec_ended(proc.pid, rc - 128) \
            and (job is None or not (job.killed or sh.budget.cancelled)) and (rc == 137 or not _execed(sh)):
        # (SIGKILL keeps its line even where bash would have exec'd: here it is most often
        # the memory limit's OOM kill, which the line explains)
        # (a `( … )` or `{ …; } | cat` subshell reports as bash's does; a simple pipeline
        # stage's status is its pipeline's, a command substitution says nothing)
        _report_signal(sh, proc.pid, rc - 128, argv)
    if ex.signal_fd is not None:
        ex.take_signals(sh)
    return rc


def _execed(sh: Interpreter) -> bool:
    """Is the program that just ended the one bash -c would have exec'd? Not when a trap with
    commands is set (bash then forks to run it; an ignored signal does not count), nor inside
    a function or subshell."""
    tree = getattr(sh, "exec_tree", None)  # (the run's tree: looked at only after a signal)
    return tree is not None and sh.current_command is exec_candidate(tree) \
        and sh.current_command is not None and not any(sh.state.traps.values()) \
        and sh.top is sh and not sh.is_subshell and not sh.funcstack and not sh.source_stack


def _lowers_shlvl(sh: Interpreter) -> bool:
    """bash lowers SHLVL by one before it execs a command without a fork: bash -c's last
    command, the last of a `( … )` or `$( … )`, a simple command run with `&` (not a
    pipeline stage: that one is forked, then execs with SHLVL as it is)."""
    if sh.exec_cmd is not None and sh.execs_now():
        return not sh.forked_simple or getattr(sh, "_bg_job", None) is not None
    return _execed(sh)


def _exec_shlvl(sh: Interpreter, env: dict[str, str]) -> None:
    """bash -c lowers SHLVL by one before it execs its last command (adjust_shell_level(-1)):
    `bash -c 'printenv SHLVL'` prints 0, a `bash -c` run so prints its parent's level."""
    v = env.get("SHLVL")
    if v is not None and _lowers_shlvl(sh):
        try:
            env["SHLVL"] = str(int(v) - 1)
        except ValueError:
            pass


def _report_signal(sh: Interpreter, pid: int, sig: int, argv: list[str]) -> None:
    """bash's line for a foreground command a signal ended (an OOM kill reads like a real
    one): Interpreter.report_signaled, on the shell's stderr outside the command's redirections."""
    sh.report_signaled(pid, sig, lambda: sh.command_text(argv), sh.outer_err)


def _started_by(job: Any, budget: Budget) -> bool:
    """Whether ``job`` belongs to the job tree the run with ``budget`` started."""
    b = getattr(getattr(job, "child", None), "budget", None)
    if b is None:
        return False
    if getattr(b, "parent", None) is budget:
        return True
    root = getattr(b, "root", None)
    return root is not None and getattr(root, "parent", None) is budget
