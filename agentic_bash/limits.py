"""Resource limits (one frozen dataclass) and the per-run budget the interpreter charges."""

from __future__ import annotations

import gc
import os
import sys
import threading
import time
import weakref
from dataclasses import dataclass, replace
from typing import Any

from ._values import value_methods
from .errors import LimitExceeded

__all__ = ["Budget", "HeldPool", "Limits", "active_budget", "charge_read", "check_size", "hold",
           "release_held", "start_thread", "check_words"]

MiB = 1024 * 1024
GiB = 1024 * MiB


def _default_memory() -> int:
    """A quarter of the host's RAM, at most 4 GiB (at least 256 MiB)."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 4 * GiB
    return max(256 * MiB, min(4 * GiB, total // 4))


_DEFAULT_MEMORY = _default_memory()
_MIN_MEMORY = 16 * MiB
"""Below this a sandbox's own processes do not fit (8 MiB: the runner died at start, measured)."""
_MIN_FILES = 64
"""The runner is bound by max_open_files too, and needs a few dozen descriptors itself."""


class _DefaultBytes(int):
    """A byte count left at its default (``type(v) is _DefaultBytes``): told apart from the
    same number given explicitly, so a level can pick its own default."""

    __slots__ = ()

    def __repr__(self) -> str:
        return int.__repr__(self)


SHELL_BYTES = 256 * MiB
"""The default ``max_shell_bytes`` where ``max_memory_bytes`` allows it: many 16 MB
variables each under ``max_variable_bytes`` grew the process ~170 MB/s with no total bound
(a namespace runner pushed past its memory cgroup was OOM-killed, ``SandboxCrashed``)."""

VIRTUAL_FS_BYTES = 256 * MiB
"""The virtual level's session layer when ``max_fs_bytes`` is left at its default: its files
are the host process's own memory (``cat /dev/zero > f`` grew the process by 1,025 MiB at
the 1 GiB default), so it holds at most this much; an explicit ``max_fs_bytes`` is used as
given."""


def fs_bytes(limits: Any, virtual: bool) -> int | None:
    """``max_fs_bytes`` as a level applies it (see VIRTUAL_FS_BYTES)."""
    v = getattr(limits, "max_fs_bytes", None)
    if virtual and type(v) is _DefaultBytes:
        return min(int(v), VIRTUAL_FS_BYTES)
    return v

# The budget of the run the current thread works for: bound by the shell where a thread
# starts running script code (a run, a pipeline stage, a job, a process substitution), so
# code with no command context (a line reader, a device file, a string builder) charges it.
_bound = threading.local()


@value_methods
@dataclass(frozen=True, slots=True, repr=False, eq=False)
class Limits:
    """What one ``run()`` may consume. ``None`` means unlimited.

    The ``normal`` profile (the defaults) must not get in the way of real scripts;
    ``Limits.hardened()`` is for untrusted input.
    """

    timeout: float | None = 300.0
    """Wall-clock seconds per ``run()``; on expiry the run ends with ``timed_out=True``, status 124."""
    max_commands: int | None = 10_000_000
    """Simple commands (builtins, functions, commands) executed per run."""
    max_loop_iterations: int | None = 10_000_000
    """Iterations of all loops together per run."""
    max_call_depth: int | None = 1000
    """Nesting of function calls, ``source``, ``eval`` and nested ``bash``; bash's FUNCNEST analogue."""
    max_output_bytes: int | None = 16 * MiB
    """Bytes kept per output stream (stdout, stderr) of a run; the rest is cut with a visible marker."""
    max_variable_bytes: int | None = 64 * MiB
    """Size of one variable value, array element, here-doc or command-substitution result."""
    max_shell_bytes: int | None = _DefaultBytes(SHELL_BYTES)
    """Bytes the shell's own state may hold across a session, counted as Python holds them:
    every variable's and array element's value and name plus its bookkeeping, function
    definitions (estimated from their text), aliases, traps, positional parameters, history,
    in the session's shell and in its live subshells and jobs. An assignment that would take
    it past this fails like bash's ``xmalloc: cannot allocate N bytes``: the run ends with
    status 1 and ``Result.limit_exceeded == "memory"``, the variables stay as they were, and
    the session goes on (``unset`` frees room). Half of it bounds what the session's
    commands hold at once (whole inputs of tac, shuf, od, sort's lines...: ``HeldPool``); past
    it the command says "memory exhausted". Left at its default: a quarter of
    ``max_memory_bytes``, at most 256 MiB (``SHELL_BYTES``); an explicit value is used as
    given (None: no cap)."""
    max_fs_bytes: int | None = _DefaultBytes(1024 * MiB)
    """Bytes the session layer may hold: the virtual filesystem's, or in the namespace level
    the tmpfs holding the upper layers (``/workspace``, ``$HOME``, ``/tmp``, ...) and,
    separately, ``/dev/shm`` (at least 1 MiB each there); past it writes fail with ENOSPC.
    The host's disk is not used. Left at its default, the virtual level (whose files are
    the host process's memory) holds at most 256 MiB (``VIRTUAL_FS_BYTES``)."""
    max_file_count: int | None = 1_000_000
    """Entries the session layer of a virtual filesystem may hold."""
    max_processes: int | None = 1024
    """Processes and threads of the sandbox's workload alive at once, every descendant counted
    (sandboxed modes: a pids cgroup, or RLIMIT_NPROC in the sandbox's user namespace; the
    runner's own few tasks get headroom on top). One more fork fails with EAGAIN; the
    interpreter reports it like bash (``fork: Resource temporarily unavailable``, status 254).
    In ``none`` mode only the interpreter's direct children are counted."""
    max_memory_bytes: int | None = _DEFAULT_MEMORY
    """RAM (and swap, where the kernel accounts it) of the whole sandbox: every process in it,
    the interpreter included, plus what its tmpfs mounts hold. Past it the workload is killed
    with SIGKILL (status 137, bash's ``Killed`` line, ``Result.limit_exceeded == "memory"``)
    and the session goes on. Default: a quarter of the host's RAM, at most 4 GiB. Enforced by a
    memory cgroup, else by the runner's watchdog (see ``allow_watchdog``)."""
    cpu_quota: float | None = None
    """CPU time per wall-clock second for the whole sandbox, as a fraction of one CPU (``0.5``:
    half a core; ``2.0``: two cores). Needs a cpu cgroup; None = no cap."""
    max_file_bytes: int | None = None
    """Largest file any sandbox process may write (RLIMIT_FSIZE); a write past it fails with
    EFBIG and tools print ``File too large`` (SIGXFSZ is ignored in the sandbox). None = no cap
    beyond ``max_fs_bytes``."""
    max_open_files: int | None = None
    """Open file descriptors per sandbox process (RLIMIT_NOFILE); None = the host's."""
    max_address_space: int | None = None
    """Address space (RLIMIT_AS) of each native process, inherited by its children: a
    per-process cap that makes allocations fail (``MemoryError``, status 1) rather than a kill.
    None = no per-process cap (``max_memory_bytes`` bounds the whole sandbox)."""
    max_process_memory: int | None = 384 * MiB
    """Private writable memory (RLIMIT_DATA: heap and anonymous mappings, not code or shared
    files) of each native process, inherited by its children: an allocation past it fails,
    so a runaway tool ends itself with its own error (GNU ``shuf``/``tac``/``tail``:
    ``memory exhausted``, status 1; Python: ``MemoryError``) while the session goes on. GNU
    ``sort`` sizes its buffer from it (half) and spills the rest to temporary files. A program
    that needs more (a large compile, a data job) needs a higher value or None (then only
    ``max_memory_bytes`` bounds it). Set before exec where the spawn forks anyway, else right
    after it: a program that allocated past it before the runner reached it (a loaded machine)
    is then killed (SIGKILL, status 137), and a process it forked in its first microseconds may
    escape it, as with ``max_processes``. 384 MiB: a tool on
    endless input then stays well under 512 MiB (at 512 MiB GNU ``tail -n1`` of /dev/full
    grew the sandbox by 505 MiB), while venv, git and a gcc/make build still work."""
    allow_watchdog: bool = False
    """With ``strict=True``, accept the runner's memory watchdog (samples every ~50 ms, then
    kills the largest process) where no memory cgroup can be had. It is weaker than a cgroup:
    an allocation faster than one sample can overshoot briefly. Without ``strict`` the
    watchdog is used anyway and reported as ``enforced by watchdog``."""
    max_jobs: int | None = 256
    """Background jobs (``cmd &``) alive at once in a session, nested ``bash`` included (each is
    a thread in-process). Past it ``&`` fails with bash's ``fork: Resource temporarily
    unavailable`` (EAGAIN), status 254; a background job that hits it is treated as a fork
    bomb and its whole job tree is killed. Jobs started by a job share the first job's
    deadline, so a self-spawning tree ends at most ``timeout`` after it began."""

    def __post_init__(self) -> None:
        # the whole-sandbox resource fields: a bad value would otherwise surface as an OSError
        # from a cgroup file, or silently (tmpfs size=0 means no bound at all)
        for name, low in (("max_memory_bytes", _MIN_MEMORY), ("max_processes", 1),
                          ("max_file_bytes", 1), ("max_open_files", _MIN_FILES),
                          ("max_address_space", _MIN_MEMORY), ("max_process_memory", _MIN_MEMORY),
                          ("max_fs_bytes", 0), ("max_shell_bytes", 0)):
            v = getattr(self, name)
            if v is None:
                continue
            if isinstance(v, bool) or not isinstance(v, int):
                raise TypeError(f"Limits.{name} must be an int or None, not {type(v).__name__}")
            if v < low:
                raise ValueError(f"Limits.{name} must be at least {low}, not {v}")
        q = self.cpu_quota
        if q is not None:
            if isinstance(q, bool) or not isinstance(q, (int, float)):
                raise TypeError(f"Limits.cpu_quota must be a number or None, not {type(q).__name__}")
            if not (0.01 <= q <= 1024):
                raise ValueError(f"Limits.cpu_quota must be between 0.01 and 1024 CPUs, not {q!r}")
        if not isinstance(self.allow_watchdog, bool):
            raise TypeError("Limits.allow_watchdog must be a bool")

    @classmethod
    def normal(cls) -> Limits:
        return cls()

    @classmethod
    def hardened(cls) -> Limits:
        return cls(
            timeout=30.0, max_commands=1_000_000, max_loop_iterations=1_000_000,
            max_call_depth=200, max_output_bytes=1 * MiB, max_variable_bytes=4 * MiB,
            max_fs_bytes=256 * MiB, max_file_count=100_000, max_processes=128,
            max_memory_bytes=512 * MiB, cpu_quota=1.0, max_file_bytes=64 * MiB,
            max_open_files=1024, max_jobs=32, max_process_memory=256 * MiB,
        )

    def shell_bytes(self) -> int | None:
        """``max_shell_bytes`` as applied (its default follows the memory limits; see there)."""
        v = self.max_shell_bytes
        if type(v) is not _DefaultBytes:
            return v
        m = self.max_memory_bytes
        return int(v) if m is None else min(int(v), m // 4)

    def with_(self, **changes: object) -> Limits:
        return replace(self, **changes)  # type: ignore[arg-type]


_monotonic = time.monotonic


class Budget:
    """The live counters of one run, shared by every thread of it (pipeline stages, jobs).

    ``check()`` raises ``LimitExceeded`` (``limit='timeout'`` at the deadline, or when
    ``cancel()`` was called). The interpreter converts it into a Result; commands only let
    it propagate.
    """

    __slots__ = ("limits", "deadline", "commands", "iterations", "_cancelled", "_reason", "_event",
                 "cmd_cap", "iter_cap", "held", "stages", "_tids", "_kicked", "_arr_added", "_arr_step",
                 "_pipes", "_kick_at", "span", "shell_cap", "pool", "_subs", "_wakers", "__weakref__")

    # What a command may hold in memory at once (sort's lines, shuf's, tac's, a whole-file
    # read): this many times ``max_variable_bytes``, counting each held line's bytes plus
    # HELD_OVERHEAD for the object around it. Past it sort spills to temporary files and the
    # others refuse, as GNU tools do when malloc fails.
    HELD_FACTOR = 4
    HELD_OVERHEAD = 64
    # (64: `f(){ f | f; }; f` ends with EAGAIN in 0.35-1.1 s at load ~19, where with 128 it
    # took 0.8-2.0 s, a third of the runs reaching the deadline, and 1-1.9 s past it in the
    # starved fuzz: every stage thread must be torn down at the stop)
    STAGE_THREADS = 64

    def __init__(self, limits: Limits, timeout: float | None = None) -> None:
        self._start(limits, timeout, time.monotonic())
        self._event = threading.Event()

    def _start(self, limits: Limits, timeout: float | None, now: float) -> None:
        """The counters of a run that starts at ``now``."""
        self.limits = limits
        # the charges (and the interpreter's inlined copies of them) call over_*() only past
        # these counts, when cancelled or at the deadline; a subclass sets -1 to be asked on
        # every charge
        self.cmd_cap = sys.maxsize if limits.max_commands is None else limits.max_commands
        self.iter_cap = sys.maxsize if limits.max_loop_iterations is None else limits.max_loop_iterations
        t = limits.timeout if timeout is None else timeout
        self.deadline: float | None = None if t is None else now + t
        self.span = t  # (the run's timeout: bounds how early the watchdog may stop it, see due)
        self.commands = 0
        self.iterations = 0
        self.held = 0
        # bytes added to arrays since one was last measured (see charge_array)
        self._arr_added = 0
        cap = self.held_cap()
        self._arr_step = sys.maxsize if cap is None else max(1 << 16, cap // 8)
        # what the session's shell state may hold (see shell.state.Holdings)
        self.shell_cap = limits.shell_bytes()
        self.pool: HeldPool | None = None  # the session's (see HeldPool), set by its executor
        self.stages = 0  # pipeline stages running on threads of their own (see stage_cap)
        # threads the watchdog watches for this budget (see watch): (ident, Thread)
        self._tids: list[tuple[int, Any]] = []
        self._kicked = False  # the watchdog has sent its threads an asynchronous timeout
        self._kick_at = 0.0  # when it last did
        self._pipes: list[weakref.ref[Any]] | None = None  # OS pipes of the run (track_pipe)
        self._subs: list[weakref.ref[Budget]] | None = None  # budgets started under it (adopt)
        self._wakers: list[int] | None = None  # eventfds of waits on it (add_waker)
        if not _watch_started and not WATCH_OFF:
            _start_watch()  # (with the first budget, not inside a run)
        self._cancelled = False
        self._reason = "timeout"

    # -- checks -------------------------------------------------------------------------
    def check(self) -> None:
        if self._cancelled:
            raise LimitExceeded(self._reason, "interrupted" if self._reason == "interrupt" else "timed out")
        d = self.deadline
        if d is not None and time.monotonic() >= d:
            self._cancelled = True
            self._fire()
            _wake_watch()   # (jobs this run started are due now: see _JobBudget.due)
            self.abort_pipes()
            raise LimitExceeded("timeout", "timed out")

    def charge_command(self) -> None:
        n = self.commands = self.commands + 1
        if n > self.cmd_cap or self._cancelled or ((d := self.deadline) is not None and _monotonic() >= d):
            self.over_command()

    def charge_iteration(self) -> None:
        n = self.iterations = self.iterations + 1
        if n > self.iter_cap or self._cancelled or ((d := self.deadline) is not None and _monotonic() >= d):
            self.over_iteration()

    def over_command(self) -> None:
        """The rest of charge_command once ``commands`` is counted (the interpreter's hot
        path inlines the count and the test above): raise at max_commands, else check()."""
        m = self.limits.max_commands
        if m is not None and self.commands > m:
            raise LimitExceeded("max_commands", f"too many commands (limit {m})")
        self.check()

    def over_iteration(self) -> None:
        """The rest of charge_iteration once ``iterations`` is counted (see over_command)."""
        m = self.limits.max_loop_iterations
        if m is not None and self.iterations > m:
            raise LimitExceeded("max_loop_iterations", f"too many loop iterations (limit {m})")
        self.check()

    # -- sizes: every read, every built string, every held buffer ------------------------
    def charge_read(self, nbytes: int) -> None:
        """``nbytes`` were just read (a chunk, a line): the deadline and cancel are checked.
        Readers call it per chunk, so an endless source (``/dev/zero``, ``yes |``) stops at
        the deadline wherever it is read."""
        if self._cancelled or self.cmd_cap < 0 or ((d := self.deadline) is not None and _monotonic() >= d):
            self.check()

    def check_size(self, nbytes: int, what: str) -> None:
        """One string or buffer of ``nbytes`` is about to be built (a line, a variable, a
        here-document, printf's output, an expanded word): past ``max_variable_bytes`` the
        run fails as bash does when malloc fails; the deadline is checked too."""
        lim = self.limits.max_variable_bytes
        if lim is not None and nbytes > lim:
            raise LimitExceeded("max_variable_bytes", f"{what} too large: exceeds max_variable_bytes ({lim} bytes)")
        if self._cancelled or ((d := self.deadline) is not None and _monotonic() >= d):
            self.check()

    def charge_array(self, d: dict, added: int, name: str) -> None:
        """``added`` bytes were just stored in the array ``d`` (each element's value, an
        associative key, HELD_OVERHEAD per new element): an array may hold ``held_cap()``
        bytes, as one command may. The array is measured whenever an eighth of that cap was
        added to arrays since the last measure, so the cost stays linear; past the cap the
        run fails as bash does when malloc fails."""
        n = self._arr_added = self._arr_added + added
        if n < self._arr_step:
            return
        self._arr_added = 0
        self.check_array(array_bytes(d), name)

    def check_array(self, size: int, name: str) -> None:
        """An array of ``size`` bytes (see array_bytes) is about to be held."""
        cap = self.held_cap()
        if cap is not None and size > cap:
            raise LimitExceeded("max_variable_bytes",
                                f"{name}: array too large: {size} bytes exceed the limit of {cap} bytes "
                                "(4 x max_variable_bytes)")
        self.check()

    def held_cap(self) -> int | None:
        """Bytes one command may hold in memory (see HELD_FACTOR), None for no cap."""
        lim = self.limits.max_variable_bytes
        return None if lim is None else lim * self.HELD_FACTOR

    def stage_cap(self) -> int:
        """Pipeline stages that may run at once on threads of their own (stages that run as
        greenlets, shell/coop.py, are not counted): a stage is a process in bash, so
        ``max_processes`` bounds them, at most STAGE_THREADS (a thousand threads fighting
        for the GIL took seconds to stop); past it a pipeline fails like a fork that gets
        EAGAIN (``f(){ f | f; }; f``)."""
        m = self.limits.max_processes
        return self.STAGE_THREADS if m is None else min(m, self.STAGE_THREADS)

    def bind(self) -> Budget | None:
        """Make this the budget of the calling thread; returns the one it replaces (give it
        to ``unbind``)."""
        prior = getattr(_bound, "budget", None)
        _bound.budget = self
        return prior

    @staticmethod
    def unbind(prior: Budget | None) -> None:
        _bound.budget = prior

    def due(self, now: float) -> str | None:
        """Why the watchdog must stop this budget's threads now (past the deadline plus
        WATCH_GRACE: "timeout"), or None. On a starved machine (see early()) that moment
        comes earlier, so the stop itself, slowed as much as everything else, still ends
        near the deadline."""
        d = self.deadline
        if d is not None and now >= d + WATCH_GRACE - early(self.span):
            return "timeout"
        return None

    def watch(self) -> None:
        """Watch the calling thread (one running the run's script: the run's own, a pipeline
        stage's, a job's): once ``due()``, it gets an asynchronous LimitExceeded('timeout') at
        its next bytecode, so a Python loop with no check of its own (any command's) still
        ends in time. Call ``unwatch()`` before any bookkeeping that must not be cut short."""
        # (both under the lock: the watchdog, which sends under it, never sees the thread
        # half registered, so unwatch() always undoes exactly this)
        with _WATCH_LOCK:
            # (the Thread too: a thread whose unwatch() was cut short leaves its entry, and
            # its ident goes to the next thread started; the watchdog drops an entry whose
            # ident now names another Thread)
            self._tids.append((threading.get_ident(), threading.current_thread()))
            _ACTIVE.append(self)
        # the watchdog sleeps until the nearest moment some budget needs it: wake it only
        # when this one needs it sooner (a run with a short timeout); a run that ends before
        # the watchdog's next look costs it nothing (_look_at, inlined)
        d = self.deadline
        if d is not None and d + WATCH_GRACE - WATCH_EARLY_MAX - WATCH_APPROACH < _wake_at:
            _wake_watch()

    def _look_at(self) -> float:
        """The earliest moment the watchdog must look at this budget on its own:
        WATCH_APPROACH before the earliest moment due() can say "timeout" (early() at its
        largest). What else makes a budget due (a cancel, see _JobBudget.due) wakes the
        watchdog itself; it looks at least every WATCH_IDLE regardless."""
        d = self.deadline
        if d is None:
            return _INF
        return d + WATCH_GRACE - WATCH_EARLY_MAX - WATCH_APPROACH

    def unwatch(self) -> None:
        """Stop watching the calling thread; an exception the watchdog queued for it just
        now is dropped, so it cannot land in the caller's code after the run."""
        tid = threading.get_ident()
        tids = self._tids
        while True:
            try:
                # (under the lock the watchdog sends nothing; a kick sent just before lands
                # here at the latest, and the removal is done again)
                with _WATCH_LOCK:
                    for e in tids:
                        if e[0] == tid:
                            tids.remove(e)
                            try:
                                _ACTIVE.remove(self)
                            except ValueError:  # (cleared after a fork)
                                pass
                            break
                    if self._kicked:
                        _set_async_exc(tid, None)
                return
            except _DeadlineKick:
                continue

    # -- time ---------------------------------------------------------------------------
    def remaining(self) -> float | None:
        """Seconds until the deadline (never negative), or None without one."""
        if self.deadline is None:
            return None
        return max(0.0, self.deadline - time.monotonic())

    def sleep(self, seconds: float) -> None:
        """Sleep, waking at once on cancel or at the deadline (then raising)."""
        end = time.monotonic() + seconds
        while True:
            self.check()
            left = end - time.monotonic()
            if left <= 0:
                return
            r = self.remaining()
            w = left if r is None else min(left, r + 0.001)
            from .shell import coop as _coop  # (a lower layer: imported when first needed)
            if _coop.in_stage():
                # a greenlet pipeline stage (shell/coop.py): the other stages run meanwhile
                _coop.block(self._is_cancelled, time.monotonic() + w)
            else:
                self._event.wait(w)

    def cancel(self, reason: str = "interrupt") -> None:
        """Make every later ``check()`` raise (from any thread): Ctrl-C, ``close()``, timeout watchdog."""
        self._reason = reason
        self._cancelled = True
        self._fire()
        _wake_watch()   # (a budget whose due() looks at this one's flag: see _look_at)
        self.abort_pipes()

    def step(self, most: float) -> float:
        """How long a wait that checks this budget between rounds may block: ``most``, or
        less when the deadline comes sooner (a cancel wakes ``sleep`` and native waits
        itself, see _fire)."""
        d = self.deadline
        if d is None:
            return most
        return max(0.0005, min(most, d - _monotonic() + 0.0005))

    # -- who is told at once when the budget is cancelled ---------------------------------
    def adopt(self, child: Budget) -> None:
        """``child`` (a background job's budget) ends when this one is cancelled: told at
        once (see _fire), not at its next look at this one's flag."""
        subs = self._subs
        if subs is None:
            subs = self._subs = []
        elif len(subs) >= 64 and not len(subs) & (len(subs) - 1):
            subs[:] = [r for r in subs if r() is not None]   # (a fork bomb's thousands of jobs)
        subs.append(weakref.ref(child))
        if self._cancelled and not child._cancelled:
            child.cancel("killed")   # (cancelled while the child was being made)

    def add_waker(self, fd: int) -> None:
        """Make eventfd ``fd`` readable when this budget is cancelled (a native wait polls
        it beside the child's pidfd: it ended up to 50 ms after a cancel). Call
        ``remove_waker`` before closing it."""
        with _WAKER_LOCK:
            ws = self._wakers
            if ws is None:
                ws = self._wakers = []
            ws.append(fd)
        if self._cancelled:
            os.eventfd_write(fd, 1)

    def remove_waker(self, fd: int) -> None:
        with _WAKER_LOCK:
            ws = self._wakers
            if ws is not None and fd in ws:
                ws.remove(fd)

    def _fire(self) -> None:
        """The budget was just cancelled: wake its sleepers and native waits, and cancel the
        budgets started under it (jobs: their own jobs in turn)."""
        try:
            self._event.set()
        except Exception:  # noqa: BLE001 - (a subclass's lazily made event)
            pass
        if self._wakers:
            # (under the lock: an fd removed and closed meanwhile may be reused by then)
            with _WAKER_LOCK:
                for fd in self._wakers or ():
                    try:
                        os.eventfd_write(fd, 1)
                    except OSError:
                        pass
        subs = self._subs
        if subs:
            for r in list(subs):
                c = r()
                if c is not None and not c._cancelled:
                    c.cancel("killed")

    # -- the run's OS pipes ---------------------------------------------------------------
    def track_pipe(self, pipe: Any) -> None:
        """``pipe`` (an end of a shell.streams.Pipe, with abort()) was made for this run: when the run stops, a thread
        blocked reading or writing it must return at once (a pending asynchronous exception
        is only delivered when a blocking call returns)."""
        # (plain weak references: a WeakSet's callback runs in whichever thread drops the
        # pipe, where the watchdog's exception may land: "Exception ignored" on stderr)
        ps = self._pipes
        if ps is None:
            ps = self._pipes = []
        elif len(ps) >= 64 and not len(ps) & (len(ps) - 1):
            ps[:] = [r for r in ps if r() is not None]
        ps.append(weakref.ref(pipe))

    def abort_pipes(self) -> None:
        """Break every pipe of the run (readers see EOF, writers EPIPE); any thread may call it."""
        ps = self._pipes
        if not ps:
            return
        for r in list(ps):
            p = r()
            if p is None:
                continue
            try:
                p.abort()
            except Exception:  # noqa: BLE001 - a pipe closed meanwhile
                pass

    def _is_cancelled(self) -> bool:
        return self._cancelled

    @property
    def cancelled(self) -> bool:
        return self._cancelled


class HeldPool:
    """What the commands of one session hold in memory at once (whole inputs read by
    ``read_bounded``: tac, shuf, od, fmt...; sort's lines before it spills), across its
    pipeline stages and jobs: each command may hold ``held_cap()``, and together they may
    hold ``cap`` (half of ``max_shell_bytes``); past it the command that asks for more fails
    with "memory exhausted", as GNU's do when malloc fails. (Six jobs each running ``tac``
    on a 60 MB line took +805 MiB.) What a command holds is given back when it returns
    (``release_held``)."""

    __slots__ = ("cap", "held", "lock")

    def __init__(self) -> None:
        self.cap: int | None = None
        self.held = 0
        self.lock = threading.Lock()


def hold(nbytes: int) -> None:
    """The command running on this thread holds ``nbytes`` more; MemoryError past its
    session's HeldPool. A no-op outside a run or without a pool."""
    b = getattr(_bound, "budget", None)
    pool = None if b is None else b.pool
    if pool is None or pool.cap is None:
        return
    with pool.lock:
        if pool.held + nbytes > pool.cap:
            raise MemoryError("memory exhausted")
        pool.held += nbytes
    _bound.held = getattr(_bound, "held", 0) + nbytes
    _bound.held_pool = pool


def held_mark() -> int:
    """What this thread's commands hold now (give it to ``release_held`` when one returns)."""
    return _bound.__dict__.get("held", 0)   # (getattr with a default raises inside: ~1 us)


def release_held(mark: int) -> None:
    """Give back what was held on this thread since ``held_mark()`` returned ``mark``."""
    n = _bound.__dict__.get("held", 0) - mark
    if n <= 0:
        return
    pool = getattr(_bound, "held_pool", None)
    _bound.held = mark
    if pool is not None:
        with pool.lock:
            pool.held = max(0, pool.held - n)


def array_bytes(d: dict) -> int:
    """What an array holds by the budget's count: its values, its keys when they are strings
    (associative), and HELD_OVERHEAD per element."""
    if not d:
        return 0
    n = sum(map(len, d.values())) + Budget.HELD_OVERHEAD * len(d)
    if type(next(iter(d))) is str:
        n += sum(map(len, d))
    return n


def active_budget() -> Budget | None:
    """The budget bound to the calling thread (see ``Budget.bind``), or None outside a run."""
    return getattr(_bound, "budget", None)


def charge_read(nbytes: int) -> None:
    """``Budget.charge_read`` on the calling thread's budget, if any."""
    b = getattr(_bound, "budget", None)
    if b is not None:
        b.charge_read(nbytes)


def check_words(count: int, chars: int, what: str = "word list") -> None:
    """A list of ``count`` words holding ``chars`` characters is about to be built (field
    splitting, ``read -a``): bounded as an array is (``held_cap``, each word counted with
    HELD_OVERHEAD), so 30 million words of a 60 MB value are refused before their list
    takes gigabytes (a namespace interpreter was OOM-killed: attack12)."""
    b = getattr(_bound, "budget", None)
    cap = _DEFAULT_VAR * Budget.HELD_FACTOR if b is None else b.held_cap()
    if cap is not None and chars + Budget.HELD_OVERHEAD * count > cap:
        raise LimitExceeded("max_variable_bytes", f"{what} too large: {count} words exceed the limit of "
                            f"{cap} bytes (4 x max_variable_bytes)")
    if b is not None:
        b.charge_read(0)   # (the deadline)


def check_size(nbytes: int, what: str) -> None:
    """``Budget.check_size`` on the calling thread's budget; outside a run, the default
    ``max_variable_bytes`` applies, so nothing unbounded is built even then."""
    b = getattr(_bound, "budget", None)
    if b is not None:
        b.check_size(nbytes, what)
    elif nbytes > _DEFAULT_VAR:
        raise LimitExceeded("max_variable_bytes", f"{what} too large: exceeds max_variable_bytes ({_DEFAULT_VAR} bytes)")


_DEFAULT_VAR = Limits().max_variable_bytes or sys.maxsize


try:
    _CORES = max(1, min(4, len(os.sched_getaffinity(0))))
except (AttributeError, OSError):
    _CORES = 2

REGEX_SLICE = 0.005
"""CPU seconds a ``regex`` match may run on the caller's thread before ``bounded_match``
redoes it on a worker thread that the caller waits for on the wall clock."""


def bounded_match(fn: Any, *args: Any, left: float | None) -> Any:
    """``fn(*args, timeout=...)``, a match method of a ``regex`` pattern, ended within
    ``left`` seconds of wall-clock time (TimeoutError past them; None: no bound).

    regex's ``timeout=`` counts the process's CPU time (``clock()``), which runs far slower
    than the wall clock on a loaded machine: ``[[ $x =~ (y.)+$ ]]`` on a 6 MB value with 3 s
    left ran 53 s, and the run with it. So a match runs here for REGEX_SLICE of CPU (nearly
    all end within it); a longer one is redone on a worker thread with the GIL released
    (``concurrent=True``) while this thread waits on the wall clock. A worker left behind at
    the deadline ends by its own CPU timeout (``left``, counted over the whole process)."""
    if left is None:
        return fn(*args)
    try:
        return fn(*args, timeout=left if left < REGEX_SLICE else REGEX_SLICE)
    except TimeoutError:
        if left <= REGEX_SLICE:
            raise
    end = _monotonic() + left - REGEX_SLICE
    box: list[Any] = []
    done = threading.Event()

    # (its CPU bound: the whole process's CPU time may run ahead of the wall clock by the
    # cores it has, which must not end the match before the caller's deadline)
    cpu = left * _CORES

    def work() -> None:
        try:
            box.append((True, fn(*args, timeout=cpu, concurrent=True)))
        except BaseException as e:  # noqa: BLE001 - handed to the caller
            box.append((False, e))
        done.set()
    t = threading.Thread(target=work, name="agentic-bash-match", daemon=True)
    try:
        start_thread(t)
    except RuntimeError:   # (no thread to be had at the process limit: the CPU bound only)
        return fn(*args, timeout=max(0.0, end - _monotonic()))
    while not done.wait(max(0.0, min(0.05, end - _monotonic()))):
        if _monotonic() >= end:
            raise TimeoutError("pattern matching timed out")
        b = getattr(_bound, "budget", None)
        if b is not None and b._cancelled:
            raise TimeoutError("pattern matching interrupted")
    ok, v = box[0]
    if ok:
        return v
    raise v


# -- the watchdog: a deadline for Python code that never checks one --------------------------

WATCH_GRACE = 0.03
"""Seconds past a run's deadline before the watchdog interrupts its threads itself."""
WATCH_POLL = 0.01
"""How often the watchdog looks while some run's stop is near (see WATCH_APPROACH)."""
WATCH_APPROACH = 0.5
"""From this many seconds before the earliest moment a watched budget can be due, the
watchdog looks every WATCH_POLL (so early() knows its recent lateness when it matters);
before that it sleeps until then, or WATCH_IDLE, or until woken (a budget that needs it
sooner, a cancel)."""
WATCH_IDLE = 0.25
"""The longest the watchdog sleeps without being woken."""

WATCH_EARLY_FACTOR = 4.0
"""How many times its own recent lateness (see early()) the watchdog acts before its moment."""
WATCH_EARLY_MAX = 0.25
"""At most this many seconds early ..."""
WATCH_EARLY_SHARE = 0.1
"""... and at most this share of the run's timeout."""
WATCH_LAG_FLOOR = 0.02
"""Lateness (seconds) below this is normal scheduling: the watchdog then acts on time."""

_lag = 0.0      # how late the watchdog's recent wake-ups came (a peak halving every 0.5 s)
_lag_at = 0.0   # when _lag was last updated


def early(span: float | None) -> float:
    """Seconds before WATCH_GRACE past the deadline that the watchdog stops a run whose
    timeout is ``span``: 0 normally; on a starved machine (the watchdog's own 10 ms sleeps
    coming back late by L > WATCH_LAG_FLOOR: other processes hold the CPUs, or hundreds of
    this process's threads hold the GIL) min(WATCH_EARLY_FACTOR x L, WATCH_EARLY_MAX,
    WATCH_EARLY_SHARE x span). Everything after the stop (unwinding, stopping the stages and
    jobs, building the Result) is slowed by the same factor: measured at load 13-33 on 2
    cores, runs whose worker got 0.3-0.7 s of CPU in ~3 s of wall time ended 0.5-1.6 s past
    their deadline. The run then reports timed_out and 124 a little before its timeout."""
    lag = _lag
    if lag <= WATCH_LAG_FLOOR or span is None:
        return 0.0
    e = WATCH_EARLY_FACTOR * lag
    if e > WATCH_EARLY_MAX:
        e = WATCH_EARLY_MAX
    s = WATCH_EARLY_SHARE * span
    return e if e < s else s


def _note_lag(late: float, now: float) -> None:
    global _lag, _lag_at
    decayed = _lag * 0.5 ** ((now - _lag_at) / 0.5) if _lag else 0.0
    _lag = late if late > decayed else decayed
    _lag_at = now


WATCH_OFF = False
"""Set by a process that must stay single-threaded (the zygote, which forks sandboxes): no
watchdog thread there; its forked children start their own."""

_ACTIVE: list[Budget] = []  # one entry per bind of a budget (list ops are atomic under the GIL)
_INF = float("inf")
_wake = threading.Lock()  # released: the watchdog looks again now (see _wake_watch)
_wake.acquire()
_wake_at = _INF  # when the watchdog looks next on its own (inf while it looks)


def _wake_watch() -> None:
    """Make the watchdog look again now. (A plain lock that the watchdog waits to acquire
    and this releases: an Event's wait, a Condition in Python, cost its idle look ~3x.)"""
    try:
        _wake.release()
    except RuntimeError:
        pass   # (a wake-up is pending already)
_WAKER_LOCK = threading.Lock()   # (Budget.add_waker/remove_waker/_fire)
_NOKICK: dict[int, int] = {}  # thread -> depth of no_kick() regions (Thread.start, fd making)
_WATCH_LOCK = threading.Lock()
_watch_started = False


class _DeadlineKick(LimitExceeded):
    """Raised asynchronously by the watchdog in a thread past its run's deadline."""

    def __init__(self, limit: str = "timeout", message: str = "timed out") -> None:
        super().__init__(limit, message)


def current_frames() -> dict[int, Any]:
    """``sys._current_frames()`` with the collector off. CPython 3.11 builds that dict under
    the runtime's thread-list lock; a collection triggered by one of its allocations runs
    finalizers (Python code, which may give up the GIL) while that lock is held, and a
    thread that is exiting takes the GIL and then waits for the lock: both wait forever
    (the fork-bomb hang, ~1 in 40 runs; CPython gh-106883). Nothing else here may run
    Python code, so with automatic collection off the call holds the GIL to its end."""
    was = gc.isenabled()
    if was:
        gc.disable()
    try:
        return sys._current_frames()
    finally:
        if was:
            gc.enable()


def _set_async_exc(tid: int, exc: type[BaseException] | None) -> None:
    import ctypes
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(tid), None if exc is None else ctypes.py_object(exc))


def _watch() -> None:
    while True:
        try:
            if _watch_round():
                return
        except Exception:  # noqa: BLE001 - the watchdog must outlive any one budget's trouble
            time.sleep(0.01)


def _watch_round() -> bool:
    """The watchdog's loop (returns True in a forked child, which starts its own). It sleeps
    until the nearest moment a watched budget needs it (see Budget._look_at), at most
    WATCH_IDLE, and wakes at once when a budget needs it sooner or one is cancelled; near
    a budget's stop it looks every WATCH_POLL, as it did all the time before (a 100 Hz tick
    while any run went: `sleep 0.05` cost the runner ~1 ms of CPU in five wake-ups)."""
    global _wake_at
    import os
    me = os.getpid()
    wait = WATCH_IDLE
    while True:
        target = _monotonic() + wait
        _wake_at = target
        woken = _wake.acquire(True, wait)   # (a wake-up taken is consumed)
        # (from here until _wake_at is set again, every watch() wakes the next wait)
        _wake_at = _INF
        wait = WATCH_IDLE
        if not _ACTIVE:
            continue   # (idle: nothing else to do, its lateness not noted, as before)
        now = _monotonic()
        if not woken:
            _note_lag(now - target, now)
        nearest = now + wait
        frames = None  # (taken when a budget is due, again when 2 ms old: a storm's
        taken = 0.0    # hundreds of budgets each copied the frames of hundreds of threads)
        for b in list(_ACTIVE):
            if not b._tids:
                continue
            try:
                why = b.due(now)
            except Exception:  # noqa: BLE001 - (a job's session half closed)
                why = "killed"
            if why is None:
                look = b._look_at()
                if look < nearest:
                    nearest = look
                continue
            if b._kicked and now < b._kick_at + 0.1:
                if b._kick_at + 0.1 < nearest:
                    nearest = b._kick_at + 0.1
                continue  # (kicked already: again every 100 ms while it is still watched)
            if not b._cancelled:
                b._reason = why
                b._cancelled = True
                nearest = now  # (jobs of this budget are due now: look again at once)
                try:
                    # (a thread sleeping or in a native wait on the budget wakes: before its
                    # deadline when the stop comes early, see early(); its jobs are told)
                    b._fire()
                except Exception:  # noqa: BLE001
                    pass
            # the order matters (see unwatch): flag first, then look and send under the lock
            b._kicked = int(b._kicked) + 1
            b._kick_at = now
            if frames is None or _monotonic() - taken > 0.002:
                frames = current_frames()
                taken = _monotonic()
            # (ident -> Thread, kept by threading; without it no entry is taken as stale)
            live = getattr(threading, "_active", None)
            with _WATCH_LOCK:
                for e in list(b._tids):
                    tid = e[0]
                    f = frames.get(tid)
                    if live is not None and live.get(tid) is not e[1]:
                        # the thread that registered is gone (its unwatch was cut short) and
                        # the ident may be another thread's now: never send to it (a stale
                        # entry of a fork bomb's budget killed a later run's pipeline stage)
                        b._tids.remove(e)
                        try:
                            _ACTIVE.remove(b)
                        except ValueError:
                            pass
                        continue
                    if f is None:
                        continue  # (not a live thread: never send to an id a new one may reuse)
                    if tid in _NOKICK or _in_stdlib(f):
                        # inside Thread.start, threading's or weakref's own code (a WeakSet
                        # callback prints "Exception ignored"): at the next round
                        b._kick_at = now - 0.09
                        continue
                    _set_async_exc(tid, _DeadlineKick)
            f = None
            if b._kick_at + 0.1 < nearest:
                nearest = b._kick_at + 0.1
            if b._kicked == 1:
                # a thread blocked in a pipe's read()/write() only sees the exception when
                # the call returns: make it return now
                b.abort_pipes()
        frames = None  # (no frame kept alive until the next round)
        b = None  # type: ignore[assignment]  # (nor the last budget: the executor reuses a run's
        # budget only when nothing else holds it, tests/shell/test_run_reuse.py)
        # near a stop (or past a look that is due): every WATCH_POLL, as the stop needs
        wait = max(nearest - _monotonic(), WATCH_POLL)
        if os.getpid() != me:  # pragma: no cover - (a forked child starts its own)
            return True


_STDLIB_FILES = frozenset(m.__file__ for m in (threading, weakref, __import__("_weakrefset")))


def _in_stdlib(frame: Any) -> bool:
    """Is a thread at ``frame`` (its innermost Python frame) inside threading/weakref code,
    where an asynchronous exception breaks their bookkeeping, or inside a gc callback (the
    collector prints "Exception ignored in: <gc callback>" and drops it)? (A thread that
    waits in a join or an Event looks at the budget itself when it wakes.)"""
    if frame is None:
        return False
    code = frame.f_code
    if code.co_filename in _STDLIB_FILES and code.co_name not in ("run", "_bootstrap_inner", "_bootstrap"):
        return True
    # a finalizer (``__del__``) or gc callback swallows the exception and is cut short (a
    # PipeWriter's __del__ that closes its descriptor), a close() cut short leaks: look at
    # the three innermost frames
    cbs = gc.callbacks
    codes = {getattr(cb, "__code__", None) for cb in cbs} if cbs else ()
    f = frame
    for _ in range(3):
        if f is None:
            break
        if f.f_code.co_name in _NOKICK_NAMES or f.f_code in codes:
            return True
        f = f.f_back
    return False


# (a kick inside a close() cut short leaked its descriptor; one in a finalizer is dropped)
_NOKICK_NAMES = frozenset({"__del__", "close", "__exit__", "_leave", "unwatch"})


def _quiet_unraisable(hook: Any) -> Any:
    """``sys.unraisablehook`` that drops the watchdog's own exception (it lands in a
    finalizer despite _in_stdlib when the thread enters one after the look; the watchdog
    kicks again) and hands anything else to ``hook``."""
    def unraisable(u: Any) -> None:
        if isinstance(u.exc_value, _DeadlineKick) or (
                isinstance(u.exc_type, type) and issubclass(u.exc_type, _DeadlineKick)):
            return
        hook(u)
    unraisable._agb_quiet = True  # type: ignore[attr-defined]
    return unraisable


class _NoKick:
    """``with no_kick:`` — the watchdog sends no exception to this thread inside the block.
    For the few steps an asynchronous exception would leave half done: Thread.start (it
    left threading's tables inconsistent: KeyError from _limbo), and making a descriptor
    (it lands right after ``os.pipe()``/``os.open()`` returns, before the number is stored:
    a fork bomb's stage threads leaked a pipe in 1 of 4 runs). Keep the block short."""

    __slots__ = ()

    def __enter__(self) -> None:
        me = threading.get_ident()
        added = False
        try:
            with _WATCH_LOCK:
                _NOKICK[me] = _NOKICK.get(me, 0) + 1
                added = True
        except BaseException:
            # (a kick sent while this thread waited for the lock lands as it leaves it: the
            # block does not run, so the region ends here)
            if added:
                _leave(me)
            raise

    def __exit__(self, *exc: object) -> None:
        _leave(threading.get_ident())


def _leave(me: int) -> None:
    with _WATCH_LOCK:
        n = _NOKICK.get(me, 0) - 1
        if n > 0:
            _NOKICK[me] = n
        else:
            _NOKICK.pop(me, None)


no_kick = _NoKick()


def start_thread(t: threading.Thread) -> None:
    """``t.start()`` where the watchdog's exception must not land (see _NoKick)."""
    with no_kick:
        t.start()


GC_THRESHOLD0 = 10_000
"""The collector's generation-0 threshold once this process runs scripts (set with the first
budget, only over CPython's default 700: a host that tuned it keeps its own; None: never).
The interpreter leaves almost no cyclic garbage (no cycle per fork, job or stopped stage),
so most collections walk live objects for nothing, and a generation-2 pass, which walks all
of them and cannot be interrupted, may land on a run's deadline: an eval of 500 KB (450K
parse objects) made 4-5 such passes of 0.16-0.2 s each (seconds at load 30+); with 10,000,
0-1 (54 collections instead of 780, CPU 0.85 -> 0.63 s)."""


def _tune_gc() -> None:
    t = GC_THRESHOLD0
    if t is not None:
        t0, t1, t2 = gc.get_threshold()
        if t0 == 700 and t > t0:
            gc.set_threshold(t, t1, t2)


def _start_watch() -> None:
    global _watch_started
    with _WATCH_LOCK:
        if _watch_started:
            return
        _watch_started = True
    _tune_gc()
    if not getattr(sys.unraisablehook, "_agb_quiet", False):
        sys.unraisablehook = _quiet_unraisable(sys.unraisablehook)
    threading.Thread(target=_watch, name="agentic-bash-deadline", daemon=True).start()


def _after_fork() -> None:
    global _watch_started, _WATCH_LOCK, WATCH_OFF, _lag, _wake, _wake_at, _WAKER_LOCK
    _watch_started = False
    _lag = 0.0
    WATCH_OFF = False
    _WATCH_LOCK = threading.Lock()
    _wake = threading.Lock()   # (the parent's may have been held at the fork)
    _WAKER_LOCK = threading.Lock()
    _wake.acquire()
    _wake_at = _INF
    del _ACTIVE[:]
    _NOKICK.clear()


if hasattr(__import__("os"), "register_at_fork"):
    __import__("os").register_at_fork(after_in_child=_after_fork)
