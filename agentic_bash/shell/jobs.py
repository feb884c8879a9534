"""Background jobs: ``cmd &`` runs in a thread on a forked shell; ``wait``, ``jobs``, ``kill %N``."""

from __future__ import annotations

import threading
import time
import weakref
from typing import TYPE_CHECKING, Any

from ..errors import LimitExceeded
from ..limits import Budget, Limits, start_thread
from . import nodes as N
from .pids import new_pid

if TYPE_CHECKING:  # pragma: no cover
    from .interpreter import Interpreter

__all__ = ["Job", "JobTable", "start_job"]


class _Done(threading.Event):
    """A job's end. Also set (status 124, or 143 when it was killed) once its thread is seen
    gone without having set it, or when the thread was never started: the deadline
    watchdog's exception can cut a job's own bookkeeping short (or start_job before the
    thread starts), and a job nobody ends would hold ``wait`` and the job cap forever."""

    _NEVER_STARTED = 2.0  # seconds without a thread after which a job is taken as never run

    def __init__(self, job: Job) -> None:
        super().__init__()
        # (weakly: job -> done -> job was a reference cycle per job, and a fork bomb's
        # thousands of them made the collector's later passes long)
        self._job = weakref.ref(job)
        self._t0 = time.monotonic()

    def is_set(self) -> bool:
        if super().is_set():
            return True
        j = self._job()
        if j is None:
            return True  # (the job itself is gone: nothing can still run it)
        t = j.thread
        if (t is not None and not t.is_alive() and t.ident is not None) or (
                t is None and time.monotonic() - self._t0 > self._NEVER_STARTED):
            j.abandon()
            return True
        return False

    def wait(self, timeout: float | None = None) -> bool:
        end = None if timeout is None else time.monotonic() + timeout
        while True:
            if self.is_set():
                return True
            step = 0.05 if end is None else min(0.05, end - time.monotonic())
            if step <= 0:
                return self.is_set()
            if super().wait(step):
                return True


class Job:
    __slots__ = ("num", "pid", "cmd_text", "thread", "status", "done", "child", "reported", "killed",
                 "timed_out", "signaled", "listing",
                 "native", "pid_ready", "live", "single", "tree", "inproc", "owner", "vnum",
                 "__weakref__")

    def __init__(self, num: int, pid: int, cmd_text: str) -> None:
        self.num = num
        self.pid = pid
        self.cmd_text = cmd_text
        self.thread: threading.Thread | None = None
        self.status: int | None = None
        self.done = _Done(self)
        self.live: set | None = None  # the registry of running jobs it counts in
        self.tree: _JobBudget | None = None  # the job tree whose nested jobs it counts in
        self.inproc = False  # counts against IN_PROCESS_JOBS (runs the interpreter on its thread)
        self.owner: int | None = None  # the shell (its fork number) whose child it is
        self.vnum = num  # its number as `jobs` and %N show it (see JobTable.add)
        self.child: Any = None
        self.reported = False
        self.killed = False
        self.timed_out = False  # ended by its deadline (the run's that started it, at most)
        self.signaled = False  # its command (run in-process) ended by a signal, as a process would
        self.listing = ""  # a pipeline's report of its stages (Interpreter.report_pipeline)
        self.native: Any = None  # the real process `$!` names (a native job's last stage)
        self.pid_ready = threading.Event()  # set once ``pid`` is final (or the job ended)
        self.single = False  # the job is one native command (`kill %N` signals it for real)

    def abandon(self) -> None:
        """End a job whose thread cannot end it (see _Done): idempotent."""
        if self.status is None:
            self.status = 143 if self.killed else 124
        live = self.live
        if live is not None:
            with _reg_lock:
                live.discard(self)
                _leave_tree(self)
        self.pid_ready.set()
        threading.Event.set(self.done)
        self.child = None


def own_jobs(sh: Interpreter, jobs: list[Job]) -> list[Job]:
    """The jobs of ``jobs`` that are children of ``sh`` itself: a subshell shares its
    parent's table, but bash's ``wait`` there waits for none of the parent's jobs (a
    background subshell that ran ``wait`` waited for itself until its deadline)."""
    me = sh.__dict__.get("_pidno")
    return [j for j in jobs if j.owner == me]


KEEP_FINISHED = 256
"""Finished jobs a session's table remembers (their status for ``wait %N``/``wait PID``),
as bash remembers the statuses of its last CHILD_MAX children; older ones are forgotten."""


class JobTable:
    """Jobs of one session (shared by the shell and its runs)."""

    def __init__(self) -> None:
        self.jobs: dict[int, Job] = {}
        self.by_pid: dict[int, Job] = {}
        self.lock = threading.Lock()
        self.finished_order: list[Job] = []

    def add(self, cmd_text: str, job: Job | None = None, view: tuple = (None,)) -> Job:
        """A new job (or ``job``, made beforehand) numbered and listed. ``view``: the job
        owners the starting shell sees (see job_view): the number it shows counts among
        those only, as each bash subshell has a job table of its own."""
        with self.lock:
            if len(self.jobs) >= 2 * KEEP_FINISHED or len(self.by_pid) >= 2 * KEEP_FINISHED:
                self._prune()
            num = max(self.jobs, default=0) + 1
            if job is None:
                job = Job(num, new_pid(), cmd_text)
            elif not job.pid:
                job.pid = new_pid()
            job.num = num
            job.vnum = 1 + max((j.vnum for j in list(self.jobs.values()) if j.owner in view), default=0)
            self.jobs[num] = job
            self.by_pid[job.pid] = job
            return job

    def _prune(self) -> None:
        """Forget all but the last KEEP_FINISHED finished jobs (under the lock): a fork bomb
        left thousands in the table, each with its events and locks, for the rest of the
        session (2,864 after three storms: memory, and every later collection walked them)."""
        # (over copies: a native job's thread adds its real pid to by_pid without this lock,
        # and is_set() is Python code, during which that thread may run: "dictionary changed
        # size during iteration", an internal error in 2 of 300 namespace fuzz runs)
        done = [j for j in list(self.jobs.values()) if j.done.is_set()]
        for j in done[:len(done) - KEEP_FINISHED]:
            if self.jobs.get(j.num) is j:
                del self.jobs[j.num]
        if len(self.by_pid) >= 2 * KEEP_FINISHED:
            gone = [p for p, j in list(self.by_pid.items())
                    if self.jobs.get(j.num) is not j and j.done.is_set()]
            for p in gone[:len(gone) - KEEP_FINISHED]:
                self.by_pid.pop(p, None)

    def mark_reported(self) -> None:
        """Between runs (a prompt, to the session): jobs that ended are reported, as bash
        reports them before its next prompt, and ``wait -n`` waits only for jobs not yet
        reported (bash: 127 with none left). A job the last run's deadline stopped gave a
        later run's ``wait -n`` its 124 at once."""
        with self.lock:
            for j in list(self.jobs.values()):
                if not j.reported and j.done.is_set():
                    j.reported = True

    def remove(self, job: Job) -> None:
        with self.lock:
            self.jobs.pop(job.num, None)

    def current(self) -> Job | None:
        with self.lock:
            return self.jobs[max(self.jobs)] if self.jobs else None

    def visible(self, view: tuple) -> list[Job]:
        """The jobs a shell whose job view is ``view`` has, by their shown number."""
        with self.lock:
            return sorted((j for j in list(self.jobs.values()) if j.owner in view), key=lambda j: j.vnum)

    def find(self, spec: str, view: tuple | None = None) -> Job | None:
        if view is not None:
            return self._find_in(spec, view)
        if spec.startswith("%"):
            s = spec[1:]
            if s in ("", "%", "+"):
                return self.current()
            if s == "-":
                with self.lock:
                    ks = sorted(self.jobs)
                    return self.jobs[ks[-2]] if len(ks) > 1 else (self.jobs[ks[0]] if ks else None)
            if s.isdigit():
                return self.jobs.get(int(s))
            with self.lock:
                for j in self.jobs.values():
                    if j.cmd_text.startswith(s.lstrip("?")) or (s.startswith("?") and s[1:] in j.cmd_text):
                        return j
            return None
        if spec.isdigit():
            return self.by_pid.get(int(spec))
        return None


    def _find_in(self, spec: str, view: tuple) -> Job | None:
        """find() among the jobs of ``view``, %N by the number shown there."""
        items = self.visible(view)
        if spec.startswith("%"):
            s = spec[1:]
            if s in ("", "%", "+"):
                return items[-1] if items else None
            if s == "-":
                return items[-2] if len(items) > 1 else (items[0] if items else None)
            if s.isdigit():
                n = int(s)
                return next((j for j in items if j.vnum == n), None)
            for j in items:
                if j.cmd_text.startswith(s.lstrip("?")) or (s.startswith("?") and s[1:] in j.cmd_text):
                    return j
            return None
        if spec.isdigit():
            j = self.by_pid.get(int(spec))
            return j if j is not None and j.owner in view else None
        return None


def job_view(sh: Interpreter, listing: bool = False) -> tuple:
    """The owners (fork numbers, None for the session's shell) whose jobs ``sh`` has: a bash
    subshell starts with an empty job table (its own jobs only), a command substitution
    keeps its parent's. ``listing``: for the ``jobs`` builtin, which as a simple command of
    a pipeline stage still lists the parent's (bash's "jobs hack": `jobs | cat`)."""
    v = sh.job_view
    if listing and sh.forked_simple:
        v = v + sh.job_parent_view
    return v


def _text(cmd: N.Command) -> str:
    try:
        from .unparse import format_command
        return format_command(cmd)
    except Exception:
        return "job"


class _JobBudget(Budget):
    """A job's budget: it may outlive its run, but not that run's deadline, and it also
    ends when the budget it was started under is cancelled (run timeout, interrupt, close,
    kill)."""

    __slots__ = ("parent", "_root", "host", "depth", "tree_live")

    def __init__(self, limits: Limits, parent: Budget, host: Any = None,
                 native: bool = False) -> None:
        super().__init__(limits)
        # a job must also notice its parent, root or session ending, which set no flag of its
        # own: every charge goes on to over_*() and so to check()
        self.cmd_cap = self.iter_cap = -1
        self.pool = parent.pool  # (the session's commands hold from one pool: limits.HeldPool)
        self.parent = parent
        self.host = host
        self.tree_live = 0  # (a root's) live jobs started inside its tree, see start_job
        self.depth = parent.depth + 1 if isinstance(parent, _JobBudget) else 1
        if isinstance(parent, _JobBudget):
            # security: a job started by a job is charged to the first job's deadline, so a
            # self-spawning tree (fork bomb) ends at most `timeout` after it began instead of
            # renewing its deadline every generation
            self._root: _JobBudget | None = parent.root
            rd = parent.root.deadline
            if rd is not None and (self.deadline is None or rd < self.deadline):
                self.deadline = rd
        else:
            self._root = None  # (itself: see root; a reference to itself was a cycle per job)
            # an in-process job ends by the deadline of the run that started it: with a
            # fresh Limits.timeout (300 s), `(while :; do :; done) &` in a 2 s run kept a
            # thread of the interpreter busy, and every later run slow, for five minutes. A
            # native program started with & (a server for the next runs to talk to) keeps
            # its own Limits.timeout: the sandbox's limits bound it, and bash would let it
            # run on after the command that started it
            pd = parent.deadline
            if not native and pd is not None and (self.deadline is None or pd < self.deadline):
                self.deadline = pd
        # the parent's cancel (the run's timeout or interrupt, the starting job killed)
        # reaches this budget at once: its sleeps and native waits wake then, not at a 50 ms
        # poll (`( sleep 100 & wait )` returned 58-63 ms past its timeout)
        parent.adopt(self)

    @property
    def root(self) -> _JobBudget:
        """The budget of the first job of this job's tree (itself for a first job)."""
        r = self._root
        return self if r is None else r

    def track_pipe(self, pipe: Any) -> None:
        # the job dies with the run that started its tree (check below): so do its pipes,
        # broken by that run's watchdog even while the job blocks in a read
        Budget.track_pipe(self, pipe)
        self.root.parent.track_pipe(pipe)

    def due(self, now: float) -> str | None:
        # the watchdog stops a job at its own deadline, and as soon as what check() looks
        # at is stopped (the run that started its tree, the session)
        why = Budget.due(self, now)
        if why is not None or self._cancelled:
            return why or self._reason
        r = self.root
        if (self.parent._cancelled or r._cancelled or r.parent._cancelled
                or getattr(self.host, "_closed", False)):
            return "killed"
        return None

    def check(self) -> None:
        if not self._cancelled:
            r = self.root
            # the parent job may be finished (never checks again): look at the root and at
            # the run that started the root too; close() of the session ends every job
            if (self.parent._cancelled or r._cancelled or r.parent._cancelled
                    or getattr(self.host, "_closed", False)):
                self.cancel("killed")
        Budget.check(self)



_reg_lock = threading.Lock()

NESTED_SHARE = 4
"""A job tree (the jobs a background job started, at any depth) may hold max_jobs //
NESTED_SHARE live jobs (64 of the default 256): a fork bomb is stopped there, before it holds
every slot of the session with hundreds of threads fighting for the GIL (the run that ends
at the deadline then waited its turn behind them: 0.4-0.8 s past its timeout)."""


IN_PROCESS_JOBS = 128
"""Live jobs that run interpreter code on their thread (every job but a native command's)
the session may hold, when max_jobs allows more: a thread each, all wanting the GIL. Past it
the run's shell waits as bash does when fork() fails with EAGAIN ("fork: retry", 1, 2, 4,
8 s) and a job nested in a job tree kills the tree. Jobs of native commands (namespace
mode: a thread that waits for the process) count only against max_jobs."""


JOB_THREADS = 256
"""Threads the session's in-process jobs may hold together: one each, plus the thread of
each pipeline stage they run (Budget.stages). Past it a job's pipeline fails as a fork
that gets EAGAIN."""


def threads_full(sh: Interpreter) -> bool:
    """Do the session's in-process jobs hold more than JOB_THREADS threads (counting the
    stages the caller just added to its budget)? Counted from the live jobs each time, so
    nothing a cut-short job left behind counts for long."""
    live = _live_jobs(sh, sh.jobs) if sh.jobs is not None else getattr(sh.host, "_live_jobs", None)
    if not live:
        return False
    n = 0
    for j in list(live):
        if j.inproc:
            c = j.child
            n += 1 + (getattr(getattr(c, "budget", None), "stages", 0) if c is not None else 0)
    return n > JOB_THREADS


def _enter(live: set, job: Job, pool: bool) -> bool:
    """Count ``job`` among the live ones, unless ``pool`` and IN_PROCESS_JOBS in-process
    jobs are live already (a job that never got its thread leaves within 2 s: _Done)."""
    for attempt in (0, 1):
        with _reg_lock:
            if not pool or sum(j.inproc for j in live) < IN_PROCESS_JOBS:
                live.add(job)
                job.done._t0 = time.monotonic()  # (its 2 s to get a thread start now)
                return True
        if attempt == 0:
            # (a job whose thread is gone, or never came, leaves on this look: _Done)
            for j in list(live):
                j.done.is_set()
    return False


def _leave_tree(job: Job) -> None:
    """(under _reg_lock) ``job`` no longer counts in its tree."""
    t = job.tree
    if t is not None:
        job.tree = None
        t.tree_live -= 1


# Job threads are watched by the deadline watchdog (see interpreter._WATCH_STAGES): kicked
# at their deadline or once their run or tree is stopped (_JobBudget.due), not only at
# their next check.
_WATCH_JOBS = True
# An in-process job lets the shell that started it go first for this long, as a forked
# bash child does (its first instructions come after the fork's copy): `echo a & echo b`
# prints b first under bash nearly always
_FORK_LAG = 0.004


def _live_jobs(sh: Interpreter, table: JobTable) -> set[Job]:
    """Live background jobs of the whole session (nested ``bash`` shares the host)."""
    host = sh.host
    reg = getattr(host, "_live_jobs", None)
    if reg is None:
        reg = set()
        try:
            host._live_jobs = reg  # type: ignore[union-attr]
        except AttributeError:  # no host (unit tests) or a slotted one: per table
            reg = table.__dict__.setdefault("_live", set())
    return reg


def start_job(sh: Interpreter, cmd: N.Command, fds: dict[int, Any] | None = None,
              shown: N.Command | None = None) -> Job | None:
    """Run ``cmd`` in the background on a forked shell.  ``fds`` replace the child's
    descriptors (its stdin stays then) and are closed when it ends; ``shown`` is the
    command ``jobs`` lists instead of ``cmd``."""
    # a stopped run or killed job tree forks no more (a fork copies every variable: a fork
    # bomb next to a 500K-element array kept the process busy for > 10 s after its deadline)
    sh.budget.check()
    if sh.jobs is None:
        sh.jobs = JobTable()
    table: JobTable = sh.jobs
    cap = sh.budget.limits.max_jobs
    live = _live_jobs(sh, table)
    b = sh.budget
    tree = b.root if isinstance(b, _JobBudget) else None
    probe = getattr(sh.host, "native_job", None)
    native = probe is not None and probe(sh, cmd)
    with _reg_lock:
        full = cap is not None and len(live) >= cap
    job = Job(0, 0, _text(shown if shown is not None else cmd))  # (numbered when it starts)
    job.live = live
    job.inproc = not native
    if not full and cap is not None:
        if tree is not None and not _tree_room(sh, b, tree, cap):
            return None
        # (counted among the live jobs here: racing starters never pass the pool together)
        if not _room(sh, b, lambda: _enter(live, job, job.inproc and cap > IN_PROCESS_JOBS)):
            return None
        with _reg_lock:
            full = len(live) > cap  # (after a pause above)
            if full:
                live.discard(job)
    elif not full:
        _enter(live, job, False)
    if full:
        # what bash says when fork() fails (EAGAIN from RLIMIT_NPROC)
        _fork_failed(sh)
        if isinstance(sh.budget, _JobBudget):
            # security: a background job that runs into the cap is a fork bomb
            # (`:(){ :|:& };:`): kill its whole job tree now rather than let it hold the
            # cap (and the CPU) until its deadline, failing every later `&` of the session
            sh.budget.root.cancel("killed")
        return None
    try:
        table.add(job.cmd_text, job, sh.job_view)
        return _start(sh, cmd, fds, table, live, job, native)
    except RuntimeError as e:
        job.abandon()
        if "can't start new thread" not in str(e):
            raise
        # the job's thread refused (unprivileged: RLIMIT_NPROC counts the shell's threads
        # with the workload's processes; a fork bomb of `( ... ) &` fills it): what bash
        # says when its fork() gets EAGAIN, and the script goes on (was an internal error
        # that ended the run)
        table.remove(job)
        _fork_failed(sh)
        return None
    except BaseException:
        # (the watchdog's exception, most likely) before the job's thread runs: it never will
        job.abandon()
        raise


def _fork_failed(sh: Interpreter) -> None:
    """What bash says, and the status it sets, when fork() fails with EAGAIN."""
    sh.error("fork: Resource temporarily unavailable")
    sh.state.last_status = 254


def _tree_room(sh: Interpreter, b: _JobBudget, tree: _JobBudget, cap: int) -> bool:
    """May a job of job tree ``tree`` start one more (see NESTED_SHARE)? A job nested in the
    tree (a fork bomb's shape: jobs starting jobs starting jobs) that finds it full kills the
    tree, as at the session's cap; the tree's first job (a background loop fanning out) gets
    bash's answer to EAGAIN: "fork: retry", a pause of 1, 2, 4 and 8 s, then the error."""
    most = max(1, cap // NESTED_SHARE)
    return _room(sh, b, lambda: tree.tree_live < most)


def _room(sh: Interpreter, b: Budget, room: Any) -> bool:
    if room():
        return True
    if isinstance(b, _JobBudget) and b is not b.root:
        # security: jobs starting jobs starting jobs that run out of room are a fork bomb:
        # the tree dies now rather than hold the threads (and the GIL) until its deadline
        _fork_failed(sh)
        b.root.cancel("killed")
        return False
    for pause in (1, 2, 4, 8):  # bash's make_child: FORKSLEEP doubling up to 16
        sh.error("fork: retry: Resource temporarily unavailable")
        b.sleep(pause)
        if room():
            return True
    _fork_failed(sh)
    return False


def _start(sh: Interpreter, cmd: N.Command, fds: dict[int, Any] | None, table: JobTable,
           live: set, job: Job, native: bool) -> Job:
    job.live = live
    job.owner = sh.__dict__.get("_pidno")
    child = sh.fork()
    # a background job outlives the run that started it: it gets its own budget, but
    # still stops when the session cancels the run's budget (close/interrupt)
    parent_budget = sh.budget
    child.budget = _JobBudget(parent_budget.limits, parent_budget, sh.host, native)
    with _reg_lock:
        if isinstance(parent_budget, _JobBudget):
            job.tree = parent_budget.root
            job.tree.tree_live += 1
    job.child = child
    child.job_parent_view = ()  # (`jobs &` lists nothing: bash's hack is for pipelines only)
    child._bg_job = job  # type: ignore[attr-defined]  # the host records a native job's real pid
    sh.state.last_bg_pid = job.pid
    if 0 not in sh.fds or sh.fds.get(0) is None:
        pass

    keep_stdin = sh.stdin_redir  # (as the shell was when it started the job)

    def target() -> None:
        st = 1
        b = child.budget
        b.bind()  # (a thread of its own: nothing to restore)
        try:
            # watched: the deadline watchdog interrupts the job's Python code when its
            # deadline passes or its run is stopped (see _JobBudget.due); unwatched before
            # the bookkeeping below, which must always run
            try:
                if _WATCH_JOBS:
                    b.watch()
                child.fds = dict(child.fds)
                from .streams import NullStream
                if fds is not None:
                    child.fds.update(fds)
                    child.owned.extend(fds.values())
                elif not keep_stdin:
                    child.fds[0] = NullStream()
                child.job_cmd = cmd  # (its end is the job's: reported by the shell that waits)
                if type(cmd) is N.Simple:
                    child.forked_simple = True
                    child.exec_cmd = cmd
                if not native:
                    time.sleep(_FORK_LAG)
                st = child.run_subshell_script(N.Script((N.ListItem(cmd),)), child.forked_simple)
            finally:
                b.unwatch()
        except LimitExceeded as e:
            st = 124 if not job.killed else 128 + getattr(child, "kill_signal", 15)
            job.timed_out = e.limit == "timeout" and not job.killed
            if e.limit not in ("timeout", "interrupt", "closed", "killed") and not job.killed:
                # a size or memory cap: the job's shell dies as bash's does when malloc
                # fails (its message, status 1), not silently as at the deadline
                st = 1
                child.write_err(f"agentic-bash: {e}\n".encode("utf-8", "replace"))
        except BaseException:  # noqa: BLE001
            st = 1
        finally:
            if job.killed and st in (0, 124):
                st = 128 + getattr(child, "kill_signal", 15)  # (kill -9 %1: 137, as bash)
            elif child.killed_by and st == 128 + child.killed_by:
                job.signaled = True  # (`sh -c 'kill -9 $$' &` with sh in-process)
            job.status = st
            with _reg_lock:
                live.discard(job)
                _leave_tree(job)
            job.pid_ready.set()
            job.done.set()
            sh.chld_pending += 1  # (the CHLD trap of the shell that started it: run_chld_trap)
            job.child = None  # (the forked shell and what it held go with the job)

    # A job that is (a pipeline ending in) a native command: `$!` is its real pid, known
    # once the process exists. Any other job keeps its synthetic pid (nothing may claim it).
    job.single = native and type(cmd) is N.Simple
    if not native:
        job.pid_ready.set()
    t = threading.Thread(target=target, daemon=True)
    job.thread = t
    start_thread(t)
    if native:
        rem = sh.budget.remaining()
        job.pid_ready.wait(2.0 if rem is None else min(2.0, rem))
        sh.state.last_bg_pid = job.pid
    return job
