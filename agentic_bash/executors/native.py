"""Launching real binaries for the interpreter: process groups, no tty, clean fds, death signal."""

from __future__ import annotations

import errno
import fcntl
import io
import os
import queue
import resource
import signal
import subprocess
import sys
import termios
import threading
import time
import weakref
from typing import Any, Callable, Mapping

from ..isolation.fdwait import readable
from ..limits import Budget as _Budget
from ..limits import no_kick

try:
    if os.environ.get("AGENTIC_BASH_FASTSPAWN", "1") == "0":
        raise ImportError("turned off by AGENTIC_BASH_FASTSPAWN=0")
    from . import _fastspawn as _FAST_MOD
    _FAST: Any = _FAST_MOD
    FAST_SPAWN = "compiled"
except ImportError as _e:   # (no C compiler at install time, or turned off)
    _FAST = None
    FAST_SPAWN = f"unavailable: {_e}"
"""Whether native spawns and waits go through the compiled path (_fastspawn.c): "compiled",
or "unavailable: <why>" (then the pure-Python path below runs every spawn: the same
children, only slower). The sandbox runner reports it (observed["fast_spawn"])."""

__all__ = ["NativeLauncher", "NativeProcess", "stdin_handoff", "terminate", "wait_all_collecting",
           "wait_collecting"]

GRACE = 0.15
"""Seconds between SIGTERM and SIGKILL when a run's (or the session's) processes are ended."""

# Signals whose disposition survives execve when ignored (SIG_IGN); a child must start with
# defaults, e.g. `yes | head -1` relies on SIGPIPE killing `yes`.
_RESET_SIGNALS = tuple(s for s in (
    signal.SIGPIPE, signal.SIGINT, signal.SIGQUIT, signal.SIGTERM, signal.SIGHUP,
    signal.SIGTSTP, signal.SIGTTIN, signal.SIGTTOU, signal.SIGCHLD, signal.SIGUSR1,
    signal.SIGUSR2, signal.SIGALRM, getattr(signal, "SIGXFSZ", None),
) if s is not None)


def _has_controlling_tty() -> bool:
    try:
        fd = os.open("/dev/tty", os.O_RDONLY | os.O_NOCTTY)
    except OSError:
        return False
    os.close(fd)
    return True


def _status(returncode: int) -> int:
    """Popen's returncode (-N for signal N) as bash reports it: exit code or 128+signal."""
    return 128 - returncode if returncode < 0 else returncode


class NativeProcess:
    """One launched binary. ``wait`` returns bash-style status; ``kill_group`` signals its group."""

    __slots__ = ("_popen", "pid", "pgid", "_pidfd", "_status", "_lock", "_owner", "capped")

    def __init__(self, popen: subprocess.Popen, pgid: int, pidfd: int | None = -2,
                 capped: bool = False) -> None:
        self._popen = popen
        self.pid: int = popen.pid
        self.pgid: int = pgid
        self._status: int | None = None
        self._lock = threading.Lock()
        self._owner: NativeLauncher | None = None
        self.capped = capped
        """The child set its own RLIMIT_DATA and RLIMIT_NPROC caps before exec (the
        compiled path): nothing to lower from outside after the spawn."""
        if pidfd != -2:
            self._pidfd: int | None = pidfd if pidfd is not None and pidfd >= 0 else None
            return
        try:
            self._pidfd = os.pidfd_open(popen.pid)
        except (OSError, AttributeError):
            self._pidfd = None

    def poll(self) -> int | None:
        return self.wait(0)

    def wait(self, timeout: float | None = None) -> int | None:
        """Exit status (128+signal when killed by one), or None if ``timeout`` passed first."""
        if self._status is not None:
            return self._status
        if timeout is not None and self._pidfd is not None:
            # A pidfd becomes readable when the child exits: no polling loop, no latency.
            try:
                r = readable([self._pidfd], max(0.0, timeout))
            except (OSError, ValueError):
                r = [True]
            if not r:
                return None
            timeout = None
        with self._lock:
            if self._status is not None:
                return self._status
            try:
                rc = self._popen.wait(timeout)
            except subprocess.TimeoutExpired:
                return None
            self._status = _status(rc)
            if self._pidfd is not None:
                os.close(self._pidfd)
                self._pidfd = None
            if self._owner is not None:
                self._owner._reaped(self)
            return self._status

    @property
    def returncode(self) -> int | None:
        return self._status

    @property
    def signaled(self) -> bool:
        """Whether a signal ended it (a status above 128 may also be a plain exit code)."""
        rc = getattr(self._popen, "returncode", None)
        return rc is not None and rc < 0

    def kill(self, sig: int = signal.SIGKILL) -> None:
        if self._status is None:
            try:
                os.kill(self.pid, sig)
            except (ProcessLookupError, PermissionError):
                pass

    def kill_group(self, sig: int = signal.SIGKILL) -> None:
        """Signal the whole process group (the child and everything it started)."""
        try:
            os.killpg(self.pgid, sig)
        except (ProcessLookupError, PermissionError):
            self.kill(sig)

    def __del__(self) -> None:
        fd = getattr(self, "_pidfd", None)
        if fd is not None:
            try:
                os.close(fd)
            except OSError:
                pass

    def __repr__(self) -> str:
        return f"<NativeProcess pid={self.pid} pgid={self.pgid} status={self._status}>"


class NativeLauncher:
    """Starts native commands for the interpreter.

    Each child: its own process group (or the pipeline's), no controlling terminal, fds other
    than 0/1/2 closed, signal dispositions and mask reset, optionally ``PR_SET_PDEATHSIG``
    (SIGKILL) and every capability dropped.

    Security invariant: the death signal fires when the *thread* that forked exits, not the
    process, so with ``pdeathsig=True`` every fork happens on one long-lived spawner thread
    owned by the launcher (stopped by ``close()``). Inside a sandbox the pid namespace already
    kills every process when its pid 1 dies, so the runner turns pdeathsig off and children
    start through the fast vfork path. ``drop_caps`` drops capabilities in each child; the
    sandbox runner instead drops its own, so children inherit none.

    Job control: a process joins group ``pgid`` only within one session. When this process
    has a controlling terminal (host mode from a REPL), each child gets ``setsid`` (so it can
    never open the terminal) and therefore leads its own group; ``NativeProcess.pgid`` says
    which group it really is in. Without a controlling terminal (the sandbox runner, servers,
    tests) children simply join the requested group.
    """

    def __init__(self, *, pdeathsig: bool | None = None, drop_caps: bool = False,
                 umask: int | None = None) -> None:
        if pdeathsig is None:  # a Linux feature; elsewhere children are only grouped
            pdeathsig = sys.platform.startswith("linux")
        self.pdeathsig = pdeathsig
        self.drop_caps = drop_caps
        self.umask = umask
        self._setsid_each = _has_controlling_tty()
        self._queue: queue.SimpleQueue | None = None
        self._thread: threading.Thread | None = None
        self._thread_lock = threading.Lock()
        self._closed = False
        self.spawned = 0
        self.refused = 0
        """Spawns refused at ``max_live`` or by the kernel with EAGAIN (the runner reports
        them as the process limit)."""
        """How many children were started (the sandbox runner's change tracking reads it)."""
        self.live: set[NativeProcess] = set()
        """Children not yet reaped; ``kill_all`` ends their process groups (``close()`` of a
        host-mode session: `nohup cmd &` must not outlive it)."""
        self._live_lock = threading.Lock()
        self.max_live: int | None = None
        """Live children allowed at once (``Limits.max_processes``); past it spawn is EAGAIN."""
        self.max_memory: int | None = None
        """RLIMIT_AS of each child (``Limits.max_memory_bytes``); None = inherit."""
        self.max_data: int | None = None
        """RLIMIT_DATA of each child (``Limits.max_process_memory``), set right after the spawn;
        None = inherit."""
        self.nice = 0
        """Niceness each child gets (the sandbox runner's: WORKLOAD_NICE, so the runner serving
        a builtin wins the CPU over the workload's programs); 0 = as the launcher's. Children
        the spawner thread starts inherit it (that thread runs at it); a preexec sets it
        before exec; a vfork spawn from another thread gets it right after its exec (see
        _spawn)."""
        self._preexec = self._make_preexec() if (pdeathsig or drop_caps) else None
        self._workload: _WorkloadSetup | None = None

    def confine_workload(self, *, room: Callable[[], None] | None = None, floor: Any = None,
                         oom_fd: int | None = None, oom_score_adj: int | None = None,
                         ignore_sigxfsz: bool = False, nproc: tuple[int, int] | None = None,
                         cgroup_fds: tuple[int, ...] = (),
                         spawner_fds: tuple[int, ...] = (), wait: bool = True) -> None:
        """Sandbox runner only: every child from now on starts with ``oom_score_adj`` (so the
        OOM killer picks the workload, never the runner), SIGXFSZ ignored (a write past
        RLIMIT_FSIZE fails with EFBIG, "File too large", instead of killing), RLIMIT_NPROC
        ``nproc`` = (workload limit, the runner's own higher one) and joined to the workload's
        cgroups (``cgroup_fds``: open ``cgroup.procs`` files).

        None of it needs code in the child, which would cost the vfork fast path (a fork of
        this large process plus Python in the child: 5x the spawn time, measured): the runner
        raises its own oom_score_adj and lowers its soft RLIMIT_NPROC just around the spawn
        (both inherited; an unprivileged process may go back to its own earlier values),
        then lowers the child's hard limit and moves it into the cgroup once it has started.
        A process the child forks in those few microseconds keeps the runner's hard
        RLIMIT_NPROC and its group, which only the runner's headroom bounds.

        ``spawner_fds`` (cgroup v1: open ``tasks`` files of the workload's groups): children
        are started by one spawner thread that has moved itself into those groups, so each
        is born there and nothing is moved per spawn (see cgroups.work_tasks_files); if the
        thread cannot join them, children are moved through ``cgroup_fds`` as above. The
        groups hold two slots for the runner: the spawner thread's and one that a placeholder
        thread keeps until ``adopt_run_thread`` hands it to the thread running the
        interpreter (whose own spawns then need no hand-off).

        ``wait=False``: the spawner thread joins the groups while the caller goes on (the
        sandbox runner's start-up); ``workload_joined()`` waits for it. Until then children
        are moved one by one, as when it could not join."""
        self._workload = _WorkloadSetup(oom_fd, oom_score_adj, nproc, cgroup_fds)
        self._workload.room = room   # (attack13: watchdog.SpawnRoom, called before each spawn)
        self._workload.floor = floor  # (attack13: watchdog.PID1_RAISES's page)
        if spawner_fds:
            self._join_fds = tuple(spawner_fds)
            self._joined = threading.Event()
            self._spawner()
            if wait:
                self.workload_joined()
        if ignore_sigxfsz and hasattr(signal, "SIGXFSZ"):
            self._always_ignore = (signal.SIGXFSZ,)
            if _inherit_ignored_sigxfsz():
                # children inherit it (restore_signals=False): still the vfork fast path
                self._inherited_ignore = (signal.SIGXFSZ,)

    def workload_joined(self) -> bool:
        """Wait (up to 10 s) for the spawner thread started by ``confine_workload`` to join
        the workload's groups; True when children are born there from now on."""
        if self._workload is None or self._joined is None:
            return False
        self._joined.wait(10)
        self._workload.in_group = self._in_group
        return self._workload.in_group

    # -- the child-side setup (runs between fork and exec: ctypes calls only) --------------
    def _make_preexec(self) -> Callable[[], None]:
        from ..isolation import syscalls as sc

        pdeathsig, drop_caps = self.pdeathsig, self.drop_caps
        parent = os.getpid()
        libc_signal_reset = _signal_resetter()

        def preexec() -> None:
            _apply_rlimits(self.max_memory)
            if pdeathsig:
                sc.set_pdeathsig(signal.SIGKILL)
                if os.getppid() != parent:  # parent died before prctl: die now
                    os._exit(137)
            libc_signal_reset()
            if drop_caps:
                sc.drop_all_caps()

        return preexec

    # -- spawning -----------------------------------------------------------------------
    def spawn(self, argv: list[str], *, executable: str, env: Mapping[str, str], cwd: str,
              stdin: int, stdout: int, stderr: int, pgid: int | None = None,
              ignore: tuple[int, ...] = (), ctty: bool = False,
              fds: Mapping[int, int] | None = None, umask: int | None = None,
              rlimits: tuple[tuple[int, int, int], ...] = (),
              closed: tuple[int, ...] = (), handoff: bool = False) -> NativeProcess:
        """Start ``executable`` with ``argv``; raises OSError (ENOENT, EACCES, …) if exec fails.

        ``fds``: descriptors above 2 the child gets, ``{number in the child: fd here}`` (each
        fd here above 2): the shell's ``3>file``, ``<(cmd)`` and the like. ``umask``: the
        shell's (else the launcher's). ``rlimits``: ``(resource, soft, hard)`` the shell's
        ``ulimit`` set, applied after the sandbox's own (they can only lower them).

        ``pgid`` None: the child leads a new process group; otherwise it joins ``pgid``
        (falling back to a new group if that group is already gone). ``ignore``: signals the
        child starts with ignored (bash: ``trap '' SIG`` is inherited across exec, and an
        asynchronous command ignores SIGINT and SIGQUIT). ``ctty``: the child leads a new
        session whose controlling terminal is its stdout (a pty of ``run(tty=...)``).
        ``closed``: descriptors among 0-2 the child starts with closed (bash's ``>&-``; the
        stdin/stdout/stderr given for them are placeholders). ``handoff``: started by the
        spawner thread even when called from the adopted run thread (a pipeline stage before
        the last: that thread runs at the workload's niceness, so the child has it from its
        first instruction, as a stage thread's child does).
        """
        if self._closed:
            raise OSError(9, "native launcher is closed")
        if self.max_live is not None and len(self.live) >= self.max_live:
            self.refused += 1
            raise BlockingIOError(errno.EAGAIN, os.strerror(errno.EAGAIN))
        self.spawned += 1
        if self._always_ignore:
            ignore = tuple(ignore) + self._always_ignore
        if handoff and _FAST is not None and self._preexec is None and "/" in executable:
            # the compiled path sets the niceness in the child before exec: a child the run
            # thread starts has it from its first instruction too (no hand-off needed)
            handoff = False
        try:
            if self._workload is not None:
                proc = self._workload.spawn(
                    (self._spawn if threading.get_ident() == self._direct and not handoff
                     else self._spawn_on_thread)
                    if self._workload.in_group else self._spawn,
                    (argv, executable, env, cwd, stdin, stdout, stderr, pgid, ignore, ctty,
                     fds, umask, rlimits, closed))
            elif self._preexec is None:
                proc = self._spawn(argv, executable, env, cwd, stdin, stdout, stderr, pgid,
                                   ignore, ctty, fds, umask, rlimits, closed)
            else:
                proc = self._spawn_on_thread(argv, executable, env, cwd, stdin, stdout, stderr,
                                             pgid, ignore, ctty, fds, umask, rlimits, closed)
        except BlockingIOError:
            # the kernel refused the fork (RLIMIT_NPROC, the pids group): the process limit,
            # seen where it happened (RLIMIT_NPROC has no counter to read after the run)
            self.refused += 1
            raise
        if self.max_data is not None and not proc.capped:
            _cap_data(proc.pid, self.max_data)
        with self._live_lock:
            self.live.add(proc)
        proc._owner = self
        return proc

    def _reaped(self, proc: NativeProcess) -> None:
        with self._live_lock:
            self.live.discard(proc)

    def kill_all(self, grace: float = GRACE) -> None:
        """SIGTERM every live child's process group, ``grace`` seconds, then SIGKILL."""
        with self._live_lock:
            procs = list(self.live)
        terminate(procs, grace)

    def _spawn(self, argv: list[str], executable: str, env: Mapping[str, str], cwd: str,
               stdin: int, stdout: int, stderr: int, pgid: int | None,
               ignore: tuple[int, ...] = (), ctty: bool = False,
               fds: Mapping[int, int] | None = None, umask: int | None = None,
               rlimits: tuple[tuple[int, int, int], ...] = (),
               closed: tuple[int, ...] = ()) -> NativeProcess:
        preexec = self._preexec
        restore = True
        # the spawner thread runs at the workload's niceness: its children inherit it at the
        # fork, before they run a single instruction
        nice = self.nice if threading.get_ident() != self._nice_tid else 0
        if self._inherited_ignore:
            restore = False
            ignore = tuple(s for s in ignore if s not in self._inherited_ignore)
        if (_FAST is not None and preexec is None and "/" in executable and type(stdin) is int
                and type(stdout) is int and type(stderr) is int
                and min(stdin, stdout, stderr) >= 0):
            if ctty or self._setsid_each:
                pgid = -3 if ctty else -2   # (a new session: the child leads its group)
            return self._spawn_fast(argv, executable, env, cwd, stdin, stdout, stderr, pgid,
                                    ignore, fds, umask, rlimits, closed, restore, nice)
        if preexec is None and self.max_memory is not None:
            limit = self.max_memory
            preexec = lambda: _apply_rlimits(limit)  # noqa: E731 - the fast path has no preexec
        if preexec is not None and self.max_data is not None:
            # a fork path anyway: the per-program cap is set before exec, at no extra cost
            # (the vfork path gets it right after the spawn: see _cap_data)
            base_data, data = preexec, _data_limits(self.max_data)

            def preexec() -> None:
                resource.setrlimit(resource.RLIMIT_DATA, data)
                base_data()
        if ignore:
            # after the reset (restore_signals and the preexec's own): SIG_IGN survives execve
            base = preexec
            set_ignored = self._ignorer()

            def preexec() -> None:
                if base is not None:
                    base()
                set_ignored(ignore)
        if ctty:
            base_tty = preexec

            def preexec() -> None:
                if base_tty is not None:
                    base_tty()
                try:  # after setsid (Popen's start_new_session): fd 1 is the pty's slave
                    fcntl.ioctl(1, termios.TIOCSCTTY, 0)
                except OSError:
                    pass
        if closed:
            base_closed = preexec

            def preexec() -> None:
                if base_closed is not None:
                    base_closed()
                for fd in closed:  # (after Popen's dup2 of the placeholders onto 0-2)
                    try:
                        os.close(fd)
                    except OSError:
                        pass
        if fds:
            # Popen can only keep an fd at the number it has here: the extra ones are moved
            # into place in the child, and every other fd above 2 is marked close-on-exec
            # (Popen's own close_fds would close the moved ones too)
            base_fds = preexec
            moves = tuple(fds.items())
            _syscall()

            def preexec() -> None:
                if base_fds is not None:
                    base_fds()
                _place_fds(moves)
        if nice and preexec is not None:
            # a fork path anyway: the niceness is set in the child, before exec
            base_nice, level = preexec, nice
            nice = 0

            def preexec() -> None:
                base_nice()
                try:
                    os.setpriority(os.PRIO_PROCESS, 0, level)
                except OSError:
                    pass
        if rlimits:
            # last: the descriptors above are placed first (`ulimit -n 3; tail < <(echo hi)`
            # failed in preexec when fd 63 was moved under a limit of 3)
            base_rl = preexec

            def preexec() -> None:
                if base_rl is not None:
                    base_rl()
                for res, soft, hard in rlimits:
                    try:
                        resource.setrlimit(res, (soft, hard))
                    except (OSError, ValueError):
                        pass  # above what the sandbox allows: its own limit stays
        kw: dict = dict(executable=executable, env=dict(env), cwd=cwd, stdin=stdin,
                        stdout=stdout, stderr=stderr, close_fds=not fds, restore_signals=restore,
                        preexec_fn=preexec)
        if umask is not None or self.umask is not None:
            kw["umask"] = umask if umask is not None else self.umask
        if self._setsid_each or ctty:
            p = subprocess.Popen(list(argv), start_new_session=True, **kw)
            _renice(p.pid, nice)
            return NativeProcess(p, p.pid)
        start: Callable[..., Any] = subprocess.Popen
        if (preexec is None and not fds and _FORK_EXEC is not None and "/" in executable
                and type(stdin) is int and type(stdout) is int and type(stderr) is int
                and min(stdin, stdout, stderr) >= 0):
            start = _popen_direct   # the common case: no Popen object (see there)
            if nice:
                kw["nice"] = nice   # (set the moment the child has exec'd)
                nice = 0
        if pgid is not None:
            try:
                p = start(list(argv), process_group=pgid, **kw)
                _renice(pgid, nice)
                return NativeProcess(p, pgid)
            except PermissionError:
                # EPERM from setpgid: the pipeline's group has no member left; lead a new one
                # (an exec EACCES would also land here and fail again below, as it should).
                pass
        p = start(list(argv), process_group=0, **kw)
        _renice(p.pid, nice)
        return NativeProcess(p, p.pid)

    def _spawn_fast(self, argv: list[str], executable: str, env: Mapping[str, str], cwd: str,
                    stdin: int, stdout: int, stderr: int, pgid: int | None,
                    ignore: tuple[int, ...], fds: Mapping[int, int] | None, umask: int | None,
                    rlimits: tuple[tuple[int, int, int], ...], closed: tuple[int, ...],
                    restore: bool, nice: int) -> NativeProcess:
        """``_spawn`` through the compiled path (_fastspawn.c): a vfork-style clone whose
        child sets everything the Python path sets around its spawn (signals, descriptors,
        group, umask, the workload's RLIMIT_DATA and RLIMIT_NPROC caps, the shell's ulimits,
        niceness) before execve, with no preexec and no exec-error pipe."""
        caps = self._caps()
        if umask is None:
            umask = self.umask
        if type(env) is not dict:
            env = dict(env)
        moves = tuple(fds.items()) if fds else ()
        want = pgid if pgid is not None else 0   # (-2, -3: a new session, see _fastspawn.c)
        while True:
            try:
                pid, pidfd = _FAST.spawn(executable, argv, env, cwd, stdin, stdout, stderr,
                                         want, -1 if umask is None else umask, nice, restore,
                                         ignore, caps, rlimits, closed, moves)
                break
            except PermissionError as e:
                # EPERM from setpgid (named by the cwd, as Popen's): the pipeline's group has
                # no member left; lead a new one
                if want <= 0 or e.filename != cwd:
                    raise
                want = 0
        return NativeProcess(_Child(pid, argv), want if want > 0 else pid, pidfd, capped=True)

    def _caps(self) -> tuple[tuple[int, int], ...]:
        """What the compiled path lowers in each child before exec: RLIMIT_DATA to
        ``max_data``, RLIMIT_AS to ``max_memory`` and, for the sandbox's workload,
        RLIMIT_NPROC to the workload's limit (the runner lowers its own soft one around the
        spawn, so the fork itself is refused at it: _WorkloadSetup)."""
        caps: list[tuple[int, int]] = []
        if self.max_data is not None:
            caps.append((resource.RLIMIT_DATA, int(self.max_data)))
        if self.max_memory is not None:
            caps.append((resource.RLIMIT_AS, int(self.max_memory)))
        w = self._workload
        if w is not None and w.nproc is not None:
            caps.append((resource.RLIMIT_NPROC, int(w.nproc[0])))
        return tuple(caps)

    def _spawn_on_thread(self, *args: Any) -> NativeProcess:
        """``_spawn`` on the spawner thread (pdeathsig, or the workload's cgroup)."""
        q = self._spawner()
        reply: queue.SimpleQueue = queue.SimpleQueue()
        q.put((reply, args))
        ok, value = reply.get()
        if not ok:
            raise value
        return value

    _ignore_fn: Callable[[tuple[int, ...]], None] | None = None
    _always_ignore: tuple[int, ...] = ()
    _inherited_ignore: tuple[int, ...] = ()
    _join_fds: tuple[int, ...] = ()
    _joined: threading.Event | None = None
    _in_group = False
    _direct: int | None = None
    """Thread id of the adopted run thread (in the workload's groups; spawns directly)."""
    _nice_tid: int | None = None
    """Thread id of the spawner thread once it runs at ``nice`` (its children inherit it)."""
    _slot: threading.Event | None = None
    _holder: threading.Thread | None = None

    def _ignorer(self) -> Callable[[tuple[int, ...]], None]:
        fn = self._ignore_fn
        if fn is None:
            fn = self._ignore_fn = _signal_ignorer()
        return fn

    def _spawner(self) -> queue.SimpleQueue:
        with self._thread_lock:
            if self._thread is None or not self._thread.is_alive():
                self._queue = queue.SimpleQueue()
                self._thread = threading.Thread(target=self._serve, args=(self._queue,),
                                                name="agentic-bash-spawner", daemon=True)
                self._thread.start()
            assert self._queue is not None
            return self._queue

    def _join_group(self) -> None:
        """On the spawner thread: move this thread alone into the workload's groups ("0" in
        a v1 ``tasks`` file moves the writing thread, without the global lock)."""
        ok = True
        for fd in self._join_fds:
            try:
                os.write(fd, b"0")
            except OSError:
                ok = False
        self._in_group = ok
        if not ok and self._workload is not None:
            self._workload.in_group = False   # (a restarted thread that could not join)

    def _serve(self, q: queue.SimpleQueue) -> None:
        if self._join_fds:
            self._join_group()
            if self._in_group and self._holder is None:
                # the run thread's slot, held by a thread born here (in the groups) until
                # adopt_run_thread takes it, so the workload's pids.max is exact either way
                self._slot = threading.Event()
                self._holder = threading.Thread(target=self._slot.wait,
                                                name="agentic-bash-slot", daemon=True)
                self._holder.start()
            if self._joined is not None:
                self._joined.set()
        if self.nice:
            # (after the set-up above, which the sandbox's start waits for; this thread only:
            # Linux's niceness is per thread, and this one starts only workload processes)
            try:
                os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), self.nice)
                self._nice_tid = threading.get_ident()
            except OSError:
                pass
        while True:
            item = q.get()
            if item is None:
                return
            reply, args = item
            try:
                reply.put((True, self._spawn(*args)))
            except BaseException as e:  # noqa: BLE001 - handed to the caller's thread
                reply.put((False, e))

    def adopt_run_thread(self) -> bool:
        """Called on the long-lived thread that runs the interpreter (the sandbox runner's
        run thread): it moves itself into the workload's groups, taking the slot the
        placeholder thread held, so the children it starts are born there without the
        hand-off to the spawner thread. Other threads still start theirs on the spawner.

        The group's pids.max counts tasks, threads included, and a thread is born in its
        creator's groups: a thread this one started would take one of the workload's
        slots. So from here on every thread it starts is created by a helper thread outside
        the groups (see _ThreadStarts). False (nothing changed) when children are not born
        in the groups here, or the hook cannot be placed."""
        if not (self._workload is not None and self._workload.in_group and self._in_group
                and self._holder is not None and self._direct is None):
            return False
        hook = _ThreadStarts.install()
        if hook is None:
            return False
        for fd in self._join_fds:
            try:
                os.write(fd, b"0")
            except OSError:
                # (one fd per v1 hierarchy, the pids one: nothing half-joined to undo)
                return False
        me = threading.get_ident()
        hook.route(me)
        self._direct = me
        assert self._slot is not None
        self._slot.set()          # the placeholder's slot is this thread's now
        self._holder.join(5)
        return True

    def close(self) -> None:
        """Stop the spawner thread; with pdeathsig, children still running get SIGKILL."""
        self._closed = True
        if self._slot is not None:
            self._slot.set()
        with self._thread_lock:
            if self._thread is not None and self._queue is not None:
                self._queue.put(None)
                self._thread.join(timeout=5)
                self._thread = None

    def __enter__(self) -> NativeLauncher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _ThreadStarts:
    """Threads started by a thread in the workload's cgroups are created by a helper thread
    outside them (see ``NativeLauncher.adopt_run_thread``). ``threading``'s module-level
    thread-start function (``_start_new_thread`` up to 3.12, ``_start_joinable_thread``
    from 3.13) and ``_thread``'s are wrapped, once per process; other threads pay one
    ``get_ident`` and a set lookup per thread started."""

    _NAMES = ("start_new_thread", "start_joinable_thread")
    _installed: _ThreadStarts | None = None
    _lock = threading.Lock()

    def __init__(self) -> None:
        self.routed: set[int] = set()
        self.count = 0
        """Thread starts asked for (any thread, refused ones included) since the hook was
        placed; a lost concurrent increment still leaves it changed."""
        self.queue: queue.SimpleQueue = queue.SimpleQueue()
        self.wrapped: list[tuple[Any, str, Callable[..., Any]]] = []

    @classmethod
    def install(cls) -> _ThreadStarts | None:
        """The process's hook (made on first use), or None when this Python's threading
        has none of the functions known here."""
        import _thread
        with cls._lock:
            if cls._installed is not None:
                return cls._installed
            targets = [(mod, name) for mod, prefix in ((threading, "_"), (_thread, ""))
                       for name in (prefix + n for n in cls._NAMES) if hasattr(mod, name)]
            if not any(mod is threading for mod, _ in targets):
                return None
            self = cls()
            # started before anything is routed, by a thread still outside the groups
            threading.Thread(target=self._serve, name="agentic-bash-threads",
                             daemon=True).start()
            for mod, name in targets:
                original = getattr(mod, name)
                self.wrapped.append((mod, name, original))
                setattr(mod, name, self._wrap(original))
            cls._installed = self
            return self

    @classmethod
    def uninstall(cls) -> None:
        """Put the original functions back (tests; a sandbox runner never does)."""
        with cls._lock:
            self, cls._installed = cls._installed, None
            if self is not None:
                for mod, name, original in self.wrapped:
                    setattr(mod, name, original)
                self.routed.clear()
                self.queue.put(None)

    def route(self, ident: int) -> None:
        self.routed.add(ident)

    def _wrap(self, original: Callable[..., Any]) -> Callable[..., Any]:
        routed, q, get_ident, hook = self.routed, self.queue, threading.get_ident, self

        def start(*args: Any, **kwargs: Any) -> Any:
            hook.count += 1
            if get_ident() not in routed:
                return original(*args, **kwargs)
            reply: queue.SimpleQueue = queue.SimpleQueue()
            q.put((reply, original, args, kwargs))
            ok, value = reply.get()
            if not ok:
                raise value
            return value
        start.__wrapped__ = original  # type: ignore[attr-defined]
        return start

    def _serve(self) -> None:
        while True:
            item = self.queue.get()
            if item is None:
                return
            reply, fn, args, kwargs = item
            try:
                reply.put((True, fn(*args, **kwargs)))
            except BaseException as e:  # noqa: BLE001 - handed to the caller's thread
                reply.put((False, e))


def _fork_exec_call() -> tuple[Callable[..., int], tuple[Any, ...]] | None:
    """``_posixsubprocess.fork_exec`` and the arguments after ``preexec_fn`` that this
    Python's subprocess passes it, when its call there is one of the two layouts known here
    (22 arguments, or 23 with ``allow_vfork`` as in this machine's 3.11), checked against
    subprocess's own source once; otherwise None (Popen is used)."""
    try:
        import re

        import _posixsubprocess
        with open(subprocess.__file__, encoding="utf-8") as f:
            src = f.read()
    except (ImportError, OSError, TypeError, ValueError):
        return None
    m = re.search(r"self\.pid = _fork_exec\((.*?)\)\n", src, re.S)
    if m is None:
        return None
    call = " ".join(m.group(1).split())
    if call == _LAYOUT:
        return _posixsubprocess.fork_exec, ()
    if call == _LAYOUT + ", _USE_VFORK" and hasattr(subprocess, "_USE_VFORK"):
        return _posixsubprocess.fork_exec, (bool(subprocess._USE_VFORK),)
    return None


_LAYOUT = ("args, executable_list, close_fds, tuple(sorted(map(int, fds_to_keep))), cwd, "
           "env_list, p2cread, p2cwrite, c2pread, c2pwrite, errread, errwrite, errpipe_read, "
           "errpipe_write, restore_signals, start_new_session, process_group, gid, gids, uid, "
           "umask, preexec_fn")
_FORK_EXEC = _fork_exec_call()
_FSE = sys.getfilesystemencoding()
_orphans: list[int] = []   # children dropped unreaped (Popen keeps such in subprocess._active)


def _renice(pgid: int, nice: int) -> None:
    """The workload's niceness for the process group ``pgid`` of a child just spawned (the
    whole group: a child it forked already is caught too; the group holds only workload
    processes). A program may still see 0 before this lands."""
    if nice:
        try:
            os.setpriority(os.PRIO_PGRP, pgid, nice)
        except OSError:
            pass  # (already gone)


def _popen_direct(args: list[str], *, executable: str, env: Mapping[str, str], cwd: str | None,
                  stdin: int, stdout: int, stderr: int, close_fds: bool, restore_signals: bool,
                  preexec_fn: None, process_group: int, umask: int = -1,
                  nice: int = 0) -> _Child:
    """What ``subprocess.Popen(args, ...)`` does for the launcher's common case (fds given,
    no preexec, an executable path), without building a Popen object: the same
    ``fork_exec`` call with the same arguments (vfork where Popen would use it), the same
    exec-error pipe and the same exceptions. ~45 us less per spawn (550 -> 505 us for
    /bin/true and a waitpid, 31 environment variables), most of it before the child starts."""
    assert preexec_fn is None and close_fds
    fork_exec, tail = _FORK_EXEC  # type: ignore[misc]
    if _orphans:
        _reap_orphans()
    # each (name, value) is encoded once per process: the shell's environment is the same
    # from one spawn to the next (31 variables: 27 -> ~2 us a spawn)
    get = _ENV_BYTES.get
    env_list = [get(kv) or _env_entry(kv) for kv in env.items()]
    exe = os.fsencode(executable)
    errpipe_read, errpipe_write = os.pipe()
    low: list[int] = []
    while errpipe_write < 3:   # (as Popen: not where the child's 0-2 go)
        low.append(errpipe_write)
        errpipe_write = os.dup(errpipe_write)
    for fd in low:
        os.close(fd)
    try:
        try:
            pid = fork_exec(args, (exe,), True, (errpipe_write,), cwd, env_list,
                            stdin, -1, -1, stdout, -1, stderr, errpipe_read, errpipe_write,
                            restore_signals, False, process_group, None, None, None, umask,
                            None, *tail)
        finally:
            os.close(errpipe_write)
        # the child has exec'd (vfork) or failed: its niceness first, before anything else
        # here (a program that reads it at once may still see the old one)
        _renice(process_group or pid, nice)
        data = bytearray()
        while True:
            part = os.read(errpipe_read, 50000)
            data += part
            if not part or len(data) > 50000:
                break
    finally:
        os.close(errpipe_read)
    child = _Child(pid, args)
    if data:
        child.wait()
        raise _child_error(data, cwd, executable)
    return child


_ENV_BYTES: dict[tuple[Any, Any], bytes] = {}
"""(name, value) -> b"name=value" as Popen encodes it, for the variables spawned so far: at
most _ENV_BYTES_MAX of them, each up to _ENV_BYTES_LONGEST bytes (at most 512 KiB; when full
it starts again)."""
_ENV_BYTES_MAX = 512
_ENV_BYTES_LONGEST = 1024


def _env_entry(kv: tuple[Any, Any]) -> bytes:
    k, v = kv
    kb = k.encode(_FSE, "surrogateescape") if type(k) is str else os.fsencode(k)
    if b"=" in kb:
        raise ValueError("illegal environment variable name")
    b = kb + b"=" + (v.encode(_FSE, "surrogateescape") if type(v) is str else os.fsencode(v))
    if type(k) is str and type(v) is str and len(b) <= _ENV_BYTES_LONGEST:
        if len(_ENV_BYTES) >= _ENV_BYTES_MAX:
            _ENV_BYTES.clear()
        _ENV_BYTES[kv] = b   # (str only: immutable, and the key is what .items() gives)
    return b


def _child_error(data: bytearray, cwd: str | None, executable: str) -> BaseException:
    """The exception Popen raises for the exec-error pipe's ``data`` (subprocess.py)."""
    import builtins
    try:
        name, hex_errno, raw = data.split(b":", 2)
        msg = raw.decode()
    except ValueError:
        name, hex_errno = b"SubprocessError", b"0"
        msg = f"Bad exception data from child: {bytes(data)!r}"
    kind = getattr(builtins, name.decode("ascii"), subprocess.SubprocessError)
    if not (isinstance(kind, type) and issubclass(kind, BaseException)):
        kind = subprocess.SubprocessError
    if issubclass(kind, OSError) and hex_errno:
        num = int(hex_errno, 16)
        filename: str | None = executable
        if msg == "noexec":
            msg, filename = "", cwd   # (the error must be from chdir(cwd))
        if num != 0:
            msg = os.strerror(num)
        return kind(num, msg, filename)
    return kind(msg)


class _Child:
    """The part of a Popen object NativeProcess uses (pid, returncode, wait), for a child
    started by ``_popen_direct``."""

    __slots__ = ("pid", "args", "returncode")

    def __init__(self, pid: int, args: list[str]) -> None:
        self.pid = pid
        self.args = args
        self.returncode: int | None = None

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is not None:
            return self.returncode
        if timeout is None:
            try:
                _, sts = os.waitpid(self.pid, 0)
            except ChildProcessError:
                sts = 0   # (reaped elsewhere, or SIGCHLD ignored: as Popen says, 0)
            self.returncode = os.waitstatus_to_exitcode(sts)
            return self.returncode
        end = time.monotonic() + timeout
        delay = 0.0005
        while True:
            try:
                pid, sts = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:
                pid, sts = self.pid, 0
            if pid == self.pid:
                self.returncode = os.waitstatus_to_exitcode(sts)
                return self.returncode
            left = end - time.monotonic()
            if left <= 0:
                raise subprocess.TimeoutExpired(self.args, timeout)
            delay = min(delay * 2, left, 0.05)
            time.sleep(delay)

    def __del__(self) -> None:
        if self.returncode is None:
            try:
                if os.waitpid(self.pid, os.WNOHANG)[0] == 0:
                    _orphans.append(self.pid)
            except Exception:  # noqa: BLE001 - (gone, or the interpreter is shutting down)
                pass


def _reap_orphans() -> None:
    for pid in list(_orphans):
        try:
            done = os.waitpid(pid, os.WNOHANG)[0] != 0
        except ChildProcessError:
            done = True
        if done:
            try:
                _orphans.remove(pid)
            except ValueError:
                pass


def memfd(name: str) -> int:
    """os.memfd_create (close-on-exec), again after EINTR: with a seccomp listener the call
    goes to pid 1's supervisor (seccomp_filter: memfd_create -> NOTIFY), and a signal to the
    runner while it waits for the answer (its SIGALRM, a SIGCHLD) ends it with EINTR, which
    os.memfd_create does not retry. (compat12: as an unprivileged user a run with stdin
    killed the runner, "the sandbox process died during run()", in 1 of 2-8 runs lasting a
    second or two.)"""
    while True:
        try:
            return os.memfd_create(name, os.MFD_CLOEXEC)
        except InterruptedError:
            continue


helper_processes = [0, 0]
"""[started, ended] of the processes in-process commands keep beside the launcher's children
(jq's worker, commands/jqcmd.py): the sandbox runner reads every counter after a run while
one was alive or started (watchdog.S3Usage: the memory cgroup's OOM killer may pick it, and
the launcher never counted it). Each command bumps them under its own lock."""


def threads_started() -> int | None:
    """How many thread starts this process asked for since the thread-start hook was placed
    (see _ThreadStarts; a sandbox runner whose run thread joined the workload's group), or
    None where there is no hook (nothing is known then)."""
    h = _ThreadStarts._installed
    return None if h is None else h.count


class _WorkloadSetup:
    """What ``NativeLauncher.confine_workload`` gives every child (see there)."""

    def __init__(self, oom_fd: int | None, oom_score_adj: int | None,
                 nproc: tuple[int, int] | None, cgroup_fds: tuple[int, ...]) -> None:
        self.lock = threading.Lock()
        self.oom_fd: int | None = None
        self.oom_raise = self.oom_back = b""
        if oom_score_adj is not None and oom_fd is not None:
            try:
                fd = oom_fd  # /proc/self/oom_score_adj, opened before privileges were dropped
                back = os.pread(fd, 16, 0).strip() or b"0"
                os.pwrite(fd, str(int(oom_score_adj)).encode(), 0)
                os.pwrite(fd, back, 0)  # raising and going back must both work, or neither is used
                self.oom_fd, self.oom_raise, self.oom_back = fd, str(int(oom_score_adj)).encode(), back
            except (OSError, ValueError):
                pass
        self.nproc = nproc
        self.cgroup_fds = tuple(cgroup_fds)
        self.in_group = False
        """Children are born in the workload's groups (the spawner thread is in them)."""
        self.started: list[tuple[int, int]] = []
        """(pid, pgid) of the children started since the runner last cleared it (one run)."""
        self.on_spawn: Callable[[], None] | None = None
        """Called after each child has started (the runner wakes pid 1's descriptor guard)."""
        self.room: Callable[[], None] | None = None
        """Called before each spawn, before the runner's oom_score_adj is raised: raises
        OSError(ENOMEM) when the memory cgroup has no room for the child's start."""
        self.floor: Any = None
        """pid 1's page (watchdog.PID1_RAISES): while its ``raises`` is 1, pid 1 gives each
        new process oom_score_adj 1000 and the runner keeps its own through the spawn."""

    def spawn(self, fn: Callable[..., NativeProcess], args: tuple) -> NativeProcess:
        if self.room is not None:
            self.room()
        fd, nproc = self.oom_fd, self.nproc
        floor = self.floor
        if floor is not None and floor.get("raises"):
            fd = None
        else:
            floor = None
        with self.lock:
            if fd is not None:
                os.pwrite(fd, self.oom_raise, 0)
            if nproc is not None:
                resource.setrlimit(resource.RLIMIT_NPROC, (nproc[0], nproc[1]))
            try:
                proc = fn(*args)
            finally:
                if nproc is not None:
                    resource.setrlimit(resource.RLIMIT_NPROC, (nproc[1], nproc[1]))
                if fd is not None:
                    os.pwrite(fd, self.oom_back, 0)
        if nproc is not None and not proc.capped:
            try:
                resource.prlimit(proc.pid, resource.RLIMIT_NPROC, (nproc[0], nproc[0]))
            except OSError:
                pass
        if not self.in_group:
            for cfd in self.cgroup_fds:
                try:
                    os.write(cfd, str(proc.pid).encode())
                except OSError:
                    pass  # already gone
        if floor is not None:
            floor.kicked(proc.pid)
        if len(self.started) < 4096:
            self.started.append((proc.pid, proc.pgid))
        if self.on_spawn is not None:
            self.on_spawn()
        return proc


_SYS_CLOSE_RANGE = 436  # the same number on every Linux architecture (generic syscall table)
_CLOSE_RANGE_CLOEXEC = 1 << 2
_libc_syscall: Any = None


def _syscall() -> Any:
    # ctypes resolved here, in the parent: a forked child of a threaded process must not load
    # libraries
    global _libc_syscall
    if _libc_syscall is None:
        import ctypes
        f = ctypes.CDLL(None, use_errno=True).syscall
        f.restype = ctypes.c_long
        _libc_syscall = f
    return _libc_syscall


def _place_fds(moves: tuple[tuple[int, int], ...]) -> None:
    """In the child (pre-exec): put each ``(target, source)`` at ``target`` and mark every
    other descriptor above 2 close-on-exec. Sources are first copied above every target, so
    one move never overwrites another's source. close_range(2) with CLOSE_RANGE_CLOEXEC (Linux
    5.11) has no Python binding; without it, /proc/self/fd is walked."""
    top = max(t for t, _ in moves) + 1
    tmp = [(t, fcntl.fcntl(src, fcntl.F_DUPFD_CLOEXEC, top)) for t, src in moves]
    for t, src in tmp:
        os.dup2(src, t)  # inheritable at the target
    keep = sorted(t for t, _ in moves)
    lo = 3
    ok = True
    for k in keep + [None]:
        hi = (k - 1) if k is not None else 0xFFFFFFFF
        if lo <= hi and _libc_syscall(_SYS_CLOSE_RANGE, lo, hi, _CLOSE_RANGE_CLOEXEC) != 0:
            ok = False
            break
        if k is not None:
            lo = k + 1
    if not ok:
        for name in os.listdir("/proc/self/fd"):
            fd = int(name)
            if fd > 2 and fd not in keep:
                try:
                    fcntl.fcntl(fd, fcntl.F_SETFD, fcntl.FD_CLOEXEC)
                except OSError:
                    pass


def terminate(procs: list[NativeProcess], grace: float = GRACE) -> None:
    """End the process groups of ``procs``: SIGTERM, up to ``grace`` seconds for them to exit
    (returns as soon as all have), then SIGKILL to whatever is left in those groups.

    Security invariant: SIGKILL goes to the *group* even when its leader exited, so children a
    program left behind in its group (`nohup sh -c 'sleep 100'`) die too."""
    procs = [p for p in procs if p is not None]
    if not procs:
        return
    for p in procs:
        p.kill_group(signal.SIGTERM)
    end = time.monotonic() + grace
    # The deadline watchdog (limits.py) may raise into this thread at any bytecode, again
    # every 100 ms, while we wait out the grace: the sequence resumes where it was (every
    # step is idempotent) so SIGKILL is always sent, and the first such exception goes on
    # afterwards. Without this a SIGTERM-ignoring child outlived its run's timeout.
    pending: BaseException | None = None
    killed = False
    give_up = end + 2.0
    while True:
        try:
            if not killed:
                for p in procs:
                    p.wait(max(0.0, end - time.monotonic()))
                for p in procs:
                    try:
                        os.killpg(p.pgid, signal.SIGKILL)
                    except (ProcessLookupError, PermissionError):
                        p.kill(signal.SIGKILL)
                killed = True
            for p in procs:
                p.wait(1.0)
            break
        except BaseException as e:  # noqa: BLE001 - re-raised below
            if pending is None:
                pending = e
            if killed and time.monotonic() > give_up:
                break
    if pending is not None:
        raise pending


_channel: Any = None
"""The sandbox runner's channel watch (runner.serve, set by ``watch_channel``): a native wait
on the thread serving the channel watches the channel itself once it has lasted
``_WATCH_AFTER`` (see wait_collecting)."""
_WATCH_AFTER = 0.002
_WAKE_AFTER = 0.002
"""A native wait makes its budget's waker (an eventfd: ~3 us with its close) only once it has
lasted this long, so the per-call path of short programs pays nothing for it."""
_EVENTFD = hasattr(os, "eventfd")


def watch_channel(watch: Any) -> None:
    """Sandbox runner only: ``watch`` (or None) has ``thread`` (the serving thread's ident),
    ``enter()`` (the channel's fd to watch from now on, or None when someone else reads it),
    ``wake()`` (it is readable: hand it to its reader) and ``leave()``."""
    global _channel
    _channel = watch


def wait_collecting(proc: NativeProcess, outs: dict[int, Any], check: Callable[[], None],
                    remaining: Callable[[], float | None], budget: Any = None) -> int:
    """Wait for ``proc`` while copying its output pipes (``{read_fd: writer}``) on this thread.

    No pump threads: starting two of them cost more than the fork/exec itself. ``check()``
    runs at least every 50 ms (and at the deadline ``remaining()`` reports); when it raises,
    the child's group gets SIGTERM, a grace, SIGKILL (``terminate``), and the error goes on.
    A wait that lasts past ``_WAKE_AFTER`` also polls an eventfd ``budget`` (limits.Budget)
    makes readable when it is cancelled, so an interrupt, a close or the cancel of the run
    that started a background job ends the child at once (it waited for the next 50 ms
    round: ``( sleep 100 & wait )`` returned 50-60 ms past its timeout).
    A pipe still open once the child has exited (a background grandchild holds it) is handed
    to a daemon thread, so the caller returns when its child does. Every read fd is closed.

    On the sandbox runner's serving thread (``watch_channel``), a wait that lasts more than
    ``_WATCH_AFTER`` also watches the channel to the host, so the run's standby reader is not
    woken by a timer to read it (a signal, two thread wake-ups and the channel handed over
    and back: ~0.1-0.15 ms of runner CPU for every program that ran past 5 ms); the first
    frame that arrives wakes it at once (an interrupt, the host gone).

    With the compiled path, the first ``_WATCH_AFTER`` of the wait is one call into C (a
    short program ends inside it: its output copied, it reaped, its pipes drained and
    closed); a longer one goes on in ``wait_all_collecting``'s loop from where it stands.
    """
    fast = _FAST
    pfd = proc._pidfd
    since = None
    if fast is not None and pfd is not None:
        since = time.monotonic()
        first = _FIRST_MS
        w = _channel
        if w is not None and w.thread == threading.get_ident():
            # the lend timer due sooner than the watch point (a spawn that took long, a timer
            # kept from the last run): the wait watches the channel from its start instead
            due = getattr(w, "due", None)
            at = due() if due is not None else 0.0
            if at and at - since < _WATCH_AFTER + _WAKE_SLACK:
                first = 0
                since -= _WATCH_AFTER
        try:
            lt = remaining()
            ms = first if lt is None else max(0, min(first, int(lt * 1000)))
            try:
                ended, data, _ = fast.wait_step((pfd,), list(outs), (), ms, 65536)
            except (OSError, ValueError):
                ended, data = (), ()
            for r, chunk in data:
                _take(r, chunk, outs)
            if ended:
                rc = proc.wait()
                _drain_exited(outs)
                return rc
        except BaseException:
            # (check() is not called here, but the deadline watchdog's exception may land
            # anywhere): no child outlives its wait
            if proc.returncode is None:
                terminate([proc])
            for r in list(outs):
                _close_quietly(r)
            outs.clear()
            raise
    # (from the wait's start: the channel watch and the waker are due at once after the C
    # call; counted afresh, the watch came ~4 ms into the wait, after the lend timer had
    # fired for a program started late in its run's first 5 ms)
    return wait_all_collecting([proc], outs, check, remaining, budget, since)[0]


_WAKE_SLACK = 0.005
"""A wait on the serving thread watches the channel from its start unless the lend timer is
due at least this long after the first call's 2 ms: the time the thread may take to run again
after that call (a run queue under load) must not let the timer fire first."""
_FIRST_MS = 2
"""The first call of a single child's wait (ms): the _WATCH_AFTER / _WAKE_AFTER before which
the general loop would watch nothing more than the child and its pipes either."""


def wait_all_collecting(procs: list[NativeProcess], outs: dict[int, Any],
                        check: Callable[[], None], remaining: Callable[[], float | None],
                        budget: Any = None, since: float | None = None) -> list[int]:
    """``wait_collecting`` for several children at once (the stages of a pipeline of native
    programs started from one thread: executors/inprocess.py native_pipeline): one poll over
    every child's pidfd, every output pipe, the channel and the budget's waker; the
    children's statuses in order. When ``check()`` raises, every child still running has its
    group ended (``terminate``) and the error goes on. ``since``: when the wait began
    (time.monotonic(); default now), from which _WATCH_AFTER and _WAKE_AFTER count.

    ``check()`` runs at least every 50 ms, or only at the deadline and when woken where a
    round has nothing else to catch (_waits_on_waker): a plain run budget with its waker
    made and every child watched through a pidfd; its cancel writes the waker."""
    rcs: list[int | None] = [None] * len(procs)
    left = len(procs)
    by_fd: dict[int, int] = {}
    polled: list[int] = []   # children without a pidfd (old kernels): polled
    for i, p in enumerate(procs):
        if p._pidfd is not None:
            by_fd[p._pidfd] = i
        else:
            polled.append(i)
    w = _channel
    if w is not None and w.thread != threading.get_ident():
        w = None
    if since is None:
        since = time.monotonic()
    watch_at = since + _WATCH_AFTER if w is not None else None
    cfd: int | None = None   # the channel, while this wait watches it
    entered = False
    fast = _FAST
    wake_at = since + _WAKE_AFTER if budget is not None and _EVENTFD else None
    wfd: int | None = None   # the budget's waker (see Budget.add_waker), once made
    most = 0.05   # the longest round: check() between rounds
    try:
        try:
            while left:
                lt = remaining()
                tmo = most if lt is None else max(0.001, min(most, lt))
                if polled:
                    tmo = min(tmo, 0.005)
                if watch_at is not None:
                    now = time.monotonic()
                    if now >= watch_at:
                        watch_at = None
                        entered = True
                        cfd = w.enter()
                    else:
                        tmo = max(0.001, min(tmo, watch_at - now))
                if wake_at is not None:
                    now = time.monotonic()
                    if now >= wake_at:
                        wake_at = None
                        with no_kick:   # (a kick between the two would leak the fd)
                            wfd = os.eventfd(0, os.EFD_CLOEXEC | os.EFD_NONBLOCK)
                            try:
                                budget.add_waker(wfd)
                            except BaseException:
                                os.close(wfd)
                                wfd = None
                                raise
                        if not polled and _waits_on_waker(budget):
                            most = _WOKEN_ROUND
                            lt = remaining()
                            tmo = most if lt is None else max(0.001, min(most, lt))
                            if watch_at is not None:
                                tmo = max(0.001, min(tmo, watch_at - now))
                    else:
                        tmo = max(0.001, min(tmo, wake_at - now))
                if fast is not None:
                    # one round in C: the poll, a read of each readable pipe; the pidfds
                    # that say a child has ended (reaped below, under its lock)
                    pfds = list(by_fd)
                    try:
                        ended, data, ready = fast.wait_step(
                            pfds, list(outs), [x for x in (cfd, wfd) if x is not None],
                            max(0, int(tmo * 1000 + 0.999)), 65536)
                    except (OSError, ValueError):
                        ended, data, ready = (), (), ()
                    for r, chunk in data:
                        _take(r, chunk, outs)
                    for j in ended:
                        i = by_fd.pop(pfds[j])
                        rcs[i] = procs[i].wait()   # it has exited (this closes its pidfd)
                        left -= 1
                else:
                    waitset = list(outs) + list(by_fd)
                    if cfd is not None:
                        waitset.append(cfd)
                    if wfd is not None:
                        waitset.append(wfd)
                    try:
                        ready = readable(waitset, tmo)
                    except (OSError, ValueError):
                        ready = []
                for r in ready:
                    if r == cfd:
                        cfd = None
                        w.wake()   # (its reader takes it from here)
                    elif r == wfd:
                        try:
                            os.eventfd_read(wfd)   # (check() below raises: cancelled)
                        except OSError:
                            pass
                    elif r in by_fd:
                        i = by_fd.pop(r)
                        rcs[i] = procs[i].wait()   # it has exited (this closes its pidfd)
                        left -= 1
                    elif r in outs:
                        _copy_once(r, outs)
                for i in polled:
                    if rcs[i] is None:
                        rc = procs[i].poll()
                        if rc is not None:
                            rcs[i] = rc
                            left -= 1
                if left:
                    check()
        except BaseException:
            # check() raising, or the deadline watchdog's exception landing anywhere in this
            # loop (it interrupts job and stage threads too): no child outlives it
            if entered:
                entered = False
                w.leave()
            terminate([p for p, rc in zip(procs, rcs) if rc is None])
            raise
        if entered:
            entered = False
            w.leave()
        # the children are gone: take what is already buffered; a pipe kept open by a
        # grandchild continues on a thread
        _drain_exited(outs)
        return rcs  # type: ignore[return-value]
    finally:
        if wfd is not None:
            with no_kick:
                budget.remove_waker(wfd)
                _close_quietly(wfd)
        for r in list(outs):
            _close_quietly(r)
        outs.clear()


_WOKEN_ROUND = 1.0
"""The longest round of a native wait whose budget's cancel writes its waker (see
_waits_on_waker): check() is then a safety net, not the way a cancel is seen."""


def _waits_on_waker(budget: Any) -> bool:
    """Whether ``budget.check()`` raises only after what also writes its wakers or is the
    deadline (``remaining()``): limits.Budget's own check (cancelled, deadline); every
    cancel goes through Budget.cancel or the deadline watchdog, both of which fire the
    wakers. A job's budget (shell/jobs.py) also looks at its parents and its session in
    check(): it keeps the 50 ms rounds."""
    return type(budget).check is _Budget.check


def _drain_exited(outs: dict[int, Any]) -> None:
    """After the children exited: take what their pipes already hold; a pipe still open (a
    background grandchild holds it) goes on on a daemon thread."""
    fast = _FAST
    for _ in range(256):
        if not outs:
            break
        if fast is not None:
            try:
                data = fast.wait_step((), list(outs), (), 0, 65536)[1]
            except (OSError, ValueError):
                break
            if not data:
                break
            for r, chunk in data:
                _take(r, chunk, outs)
            continue
        try:
            ready = readable(list(outs), 0)
        except (OSError, ValueError):
            break
        if not ready:
            break
        for r in ready:
            _copy_once(r, outs)
    for r, w in list(outs.items()):
        del outs[r]
        threading.Thread(target=_pump_rest, args=(r, w), daemon=True).start()


def _copy_once(r: int, outs: dict[int, Any]) -> None:
    try:
        chunk = os.read(r, 65536)
    except OSError:
        chunk = b""
    _take(r, chunk, outs)


def _take(r: int, chunk: bytes, outs: dict[int, Any]) -> None:
    """What a read of pipe ``r`` gave: written to its stream, or (end of file, an error, a
    reader gone) the pipe closed and dropped."""
    if chunk:
        try:
            outs[r].write(chunk)
            return
        except (BrokenPipeError, OSError):
            pass  # the reader went away: the child gets EPIPE/SIGPIPE on its next write
    del outs[r]
    _close_quietly(r)


def _pump_rest(r: int, w: Any) -> None:
    try:
        while True:
            chunk = os.read(r, 65536)
            if not chunk:
                break
            try:
                w.write(chunk)
            except (BrokenPipeError, OSError):
                break
    except OSError:
        pass
    finally:
        _close_quietly(r)


def stdin_handoff(stream: object) -> tuple[int, Callable[[], None]] | None:
    """A real fd that gives a native child exactly the bytes of ``stream`` not yet consumed,
    and a function to call once the child is done (it moves ``stream`` past what the child
    read). None when the stream cannot be handed over; the caller then pumps it.

    bash semantics: builtins and children share one offset, so with stdin "1\\n2\\n"
    `read a; cat` gives a=1 and cat prints 2. Never ``peek()`` a blocking buffered stream
    here: that would pull input into our buffer before the child could read it."""
    if isinstance(stream, io.BytesIO):
        fd = _memfd_of(stream)
        if fd is None:
            return None
        os.lseek(fd, stream.tell(), os.SEEK_SET)

        def sync_bytesio() -> None:
            try:
                stream.seek(os.lseek(fd, 0, os.SEEK_CUR))
            except (OSError, ValueError):
                pass
        return fd, sync_bytesio
    fileno = getattr(stream, "fileno", None)
    if fileno is None:
        return None
    try:
        fd = fileno()
    except (OSError, ValueError, io.UnsupportedOperation):
        return None
    if not isinstance(stream, io.BufferedIOBase) or not hasattr(stream, "peek"):
        return fd, _noop  # unbuffered: the fd's offset is the stream's
    try:
        seekable = stream.seekable()
    except (OSError, ValueError):
        seekable = False
    if seekable:
        try:
            os.lseek(fd, stream.tell(), os.SEEK_SET)  # undo the read-ahead
        except (OSError, ValueError):
            return None

        def sync_file() -> None:
            try:
                pos = os.lseek(fd, 0, os.SEEK_CUR)
                # a seek to the end always drops the buffer (and the cached raw offset, which
                # the child moved); a plain seek into the old buffer would reuse stale bytes
                stream.seek(0, os.SEEK_END)
                stream.seek(pos)
            except (OSError, ValueError):
                pass
        return fd, sync_file
    rawp = getattr(stream, "_rawp", None)
    if getattr(rawp, "nread", None) == 0:
        # a PipeReader that never buffered a byte: all that is unread is in the pipe (what
        # `read` peeked at may go: the child can take it)
        rawp.handoffs += 1  # type: ignore[union-attr]
        return fd, _noop
    # A pipe behind a buffer: bytes already buffered must reach the child first, so those
    # (rare) cases are pumped. Looking costs no input: with O_NONBLOCK an empty buffer's
    # peek returns b"" at once; it may buffer what is already in the pipe, which the pump
    # then delivers in order.
    try:
        flags = fcntl.fcntl(fd, fcntl.F_GETFL)
        fcntl.fcntl(fd, fcntl.F_SETFL, flags | os.O_NONBLOCK)
        try:
            buffered = stream.peek(0)  # type: ignore[attr-defined]
        except BlockingIOError:
            buffered = b""
        finally:
            fcntl.fcntl(fd, fcntl.F_SETFL, flags)
    except (OSError, ValueError):
        return None
    return None if buffered else (fd, _noop)


def _noop() -> None:
    pass


_MEMFD_ATTR = "_agentic_bash_memfd"


def _memfd_of(stream: io.BytesIO) -> int | None:
    """A memfd holding ``stream``'s bytes, made once per stream (closed with it); children
    then read it like a file with a shared offset, and no pump thread is needed."""
    try:
        with stream.getbuffer() as mv:
            size = mv.nbytes
            cached = getattr(stream, _MEMFD_ATTR, None)
            if cached is not None and cached[1] == size:
                return cached[0]
            fd = memfd("stdin")
            view = mv
            while view:
                view = view[os.write(fd, view):]
    except (OSError, AttributeError, ValueError, BufferError):
        return None
    try:
        setattr(stream, _MEMFD_ATTR, (fd, size))
    except AttributeError:
        os.close(fd)
        return None
    weakref.finalize(stream, _close_quietly, fd)
    return fd


def _close_quietly(fd: int) -> None:
    try:
        os.close(fd)
    except OSError:
        pass


def _data_limits(cap: int, current: tuple[int, int] | None = None) -> tuple[int, int]:
    """RLIMIT_DATA (soft, hard) at most ``cap``: a lower limit already in place stays."""
    inf = resource.RLIM_INFINITY
    soft, hard = current if current is not None else resource.getrlimit(resource.RLIMIT_DATA)
    soft = cap if soft == inf or soft > cap else soft
    hard = cap if hard == inf or hard > cap else hard
    return min(soft, hard), hard


_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def _cap_data(pid: int, cap: int) -> None:
    """Lower child ``pid``'s RLIMIT_DATA to ``cap`` (soft and hard; a lower ``ulimit -d`` of
    the shell stays) right after its spawn: a preexec would cost the vfork fast path (see
    _inherit_ignored_sigxfsz). The child's own children inherit it. (Its current limits are
    read, not assumed: it may have lowered them itself already, and root could raise them.)

    A child the runner is slow to reach (a loaded machine) may allocate before the cap lands;
    from the cap on it cannot grow, so one look at its private data after the cap tells
    whether it already holds more: then it is killed (SIGKILL, as an OOM kill would), so no
    program keeps more than the cap whichever way the race went."""
    try:
        resource.prlimit(pid, resource.RLIMIT_DATA,
                         _data_limits(cap, resource.prlimit(pid, resource.RLIMIT_DATA)))
        fd = os.open(f"/proc/{pid}/statm", os.O_RDONLY | os.O_CLOEXEC)
        try:
            data_pages = int(os.read(fd, 256).split()[5])  # data + stack, in pages
        finally:
            os.close(fd)
    except (OSError, ValueError, IndexError):
        return  # (already gone)
    if data_pages * _PAGE > cap:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def _apply_rlimits(max_memory: int | None) -> None:
    """In the child before exec: cap its address space (inherited by its own children)."""
    if max_memory is not None:
        resource.setrlimit(resource.RLIMIT_AS, (max_memory, max_memory))


def _sigpipe_noop(signum: int, frame: Any) -> None:
    """SIGPIPE handled, not ignored: a write to a closed pipe still fails with EPIPE here,
    and execve resets a handled signal to its default in every child."""


def _inherit_ignored_sigxfsz() -> bool:
    """The sandbox runner's children must start with SIGXFSZ ignored (a write past
    RLIMIT_FSIZE fails with EFBIG) and SIGPIPE at its default (`yes | head`). Setting that in
    the child costs the vfork fast path (a Python preexec means a full fork of the runner:
    ~1.7 ms instead of ~0.4 ms per command, measured). Instead this process ignores SIGXFSZ
    itself (inherited across execve) and handles SIGPIPE instead of ignoring it (a handler is
    reset by execve), so children started with restore_signals=False get exactly that.
    Only possible on the main thread; False leaves the preexec path in charge."""
    try:
        if signal.getsignal(signal.SIGPIPE) == signal.SIG_IGN:
            signal.signal(signal.SIGPIPE, _sigpipe_noop)
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        return signal.getsignal(signal.SIGPIPE) != signal.SIG_IGN
    except (ValueError, OSError, AttributeError):  # not the main thread, or no such signal
        return False


def _signal_ignorer() -> Callable[[tuple[int, ...]], None]:
    """A function that sets SIG_IGN for some signals via libc (safe between fork and exec)."""
    import ctypes
    import ctypes.util

    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    libc.signal.restype = ctypes.c_void_p
    libc.signal.argtypes = (ctypes.c_int, ctypes.c_void_p)

    def ignore(sigs: tuple[int, ...]) -> None:
        for s in sigs:
            libc.signal(int(s), 1)  # SIG_IGN == 1

    return ignore


def _signal_resetter() -> Callable[[], None]:
    """A function that sets default dispositions and an empty mask via libc (no Python signal API,
    which may refuse to run off the main thread in the forked child)."""
    import ctypes
    import ctypes.util

    import platform

    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    libc.signal.restype = ctypes.c_void_p
    libc.signal.argtypes = (ctypes.c_int, ctypes.c_void_p)
    sigs = _RESET_SIGNALS
    empty = (ctypes.c_ulong * 16)()  # sigset_t is 1024 bits in glibc
    # glibc's signal() refuses the real-time signals it reserves (32, 33), yet an ignored
    # one survives execve like any other: reset every signal with the raw rt_sigaction
    # syscall. A zeroed kernel sigaction is SIG_DFL with no flags and an empty mask on
    # both the x86_64 and the generic (aarch64) layouts.
    nr = {"x86_64": 13, "aarch64": 134}.get(platform.machine())
    zero_action = (ctypes.c_ulong * 8)()
    others = tuple(n for n in range(1, 65) if n not in (signal.SIGKILL, signal.SIGSTOP))

    def reset() -> None:
        for s in sigs:
            libc.signal(int(s), None)  # SIG_DFL == 0
        if nr is not None:
            for n in others:
                libc.syscall(nr, n, ctypes.byref(zero_action), None, 8)
        libc.sigprocmask(2, ctypes.byref(empty), None)  # SIG_SETMASK

    return reset

