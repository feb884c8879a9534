"""The public Sandbox: a persistent bash session over a chosen isolation level."""

from __future__ import annotations

import os
import posixpath
import sys
import threading
import warnings
import weakref
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, AsyncIterator, BinaryIO, Callable, Iterable, Iterator, Mapping

from ._values import value_methods
from .commands.base import SystemInfo
from .errors import IsolationUnavailable, SandboxClosed, SandboxError, Unsupported
from .limits import Limits
from .result import Result, truncate
from .fileapi import FileInfo, FileList
from .streaming import StreamEvent
from .validation import (ISOLATION_LEVELS, check_path, check_run_args, check_sandbox_options,
                         check_write_data, plain_run_args)
from .vfs.paths import normalize

__all__ = ["FileInfo", "Mount", "Result", "Sandbox", "StreamEvent", "truncate"]


class _Released:
    """The executor of a handle given back to its pool: every use raises SandboxClosed."""

    alive = False

    def __getattr__(self, name: str) -> Any:
        raise SandboxClosed("this sandbox was released to its pool")

    def close(self) -> None:
        pass


_RELEASED = _Released()
_workers: list[Any] = []
_workers_lock = threading.Lock()


def _async_workers() -> Any:
    """Threads for arun/astream (not the loop's default executor: its few workers would let
    a handful of long runs delay every other session's calls). Threads start on demand."""
    if not _workers:
        import concurrent.futures
        with _workers_lock:
            if not _workers:
                _workers.append(concurrent.futures.ThreadPoolExecutor(
                    max_workers=512, thread_name_prefix="agentic-bash-async"))
    return _workers[0]


@value_methods
@dataclass(frozen=True, slots=True, repr=False, eq=False)
class Mount:
    """A host directory mapped into the sandbox: ``cow`` (default), ``ro`` or ``rw``."""

    src: str
    mode: str = "cow"

    def __post_init__(self) -> None:
        if self.mode not in ("cow", "ro", "rw"):
            raise ValueError(f"mount mode must be 'cow', 'ro' or 'rw', not {self.mode!r}")


def _norm_mounts(mounts: Mapping[str, Any] | None) -> dict[str, tuple[str, str]]:
    import os
    out: dict[str, tuple[str, str]] = {}
    for dest, spec in (mounts or {}).items():
        if isinstance(spec, Mount):
            src, mode = spec.src, spec.mode
        elif isinstance(spec, tuple):
            src, mode = spec
        else:
            src, mode = str(spec), "cow"
        out[normalize(dest)] = (os.path.abspath(os.fspath(src)), mode)
    return out


def _none_java(env: dict[str, str], limits: Limits, report: Any) -> tuple[dict[str, str], Any]:
    """(compat12) isolation='none' has no supervisor to tell a program the per-program cap
    through sysinfo(2): the JVM sized its initial heap from the host's RAM (1/64 of 24 GiB,
    376 MiB), over the 384 MiB RLIMIT_DATA, and `java -version` failed ("insufficient memory
    for the Java Runtime Environment"). JAVA_TOOL_OPTIONS=-XX:MaxRAM=<cap> makes every JVM
    (java, javac, jar) size itself from the cap; the JVM says so on stderr ("Picked up
    JAVA_TOOL_OPTIONS"). A caller's own JAVA_TOOL_OPTIONS is kept."""
    cap = limits.max_process_memory
    if cap is None or "JAVA_TOOL_OPTIONS" in env:
        return env, report
    from dataclasses import replace
    env = {**env, "JAVA_TOOL_OPTIONS": f"-XX:MaxRAM={int(cap)}"}
    note = (f"JAVA_TOOL_OPTIONS=-XX:MaxRAM={int(cap)}: no supervisor answers sysinfo(2) here, "
            "and a JVM sized from the host's RAM did not start under the per-program cap "
            "(max_process_memory); JVMs print 'Picked up JAVA_TOOL_OPTIONS' on stderr")
    return env, replace(report, notes=report.notes + (note,))


def _make_executor(isolation: str, *, env: dict[str, str], workdir: str, mounts: dict[str, tuple[str, str]],
                   limits: Limits, strict: bool, prefer_inprocess: bool, info: SystemInfo,
                   commands_allowlist: Any = None, **extra: Any) -> tuple[Any, str, Any]:
    """Pick and build the executor for ``isolation``; returns (executor, level used, report).

    ``extra`` may carry ``network=``, ``base=`` and ``layer_tar=`` (a snapshot's layer, which
    only a sandboxed executor takes at construction)."""
    early = None
    if sys.platform == "linux" and isolation in ("auto", "namespace", "landlock"):
        # (fresh15) the zygote's start is the longest step of a process's first sandbox: it
        # starts before the probe's import and run (~13 ms) when it will be used (landlock),
        # or probably will be (the probe cache says user namespaces work), and is discarded
        # below if the probe disagrees
        from .isolation import zygote as _zygote
        if isolation == "landlock" or _zygote.userns_hint():
            early = _zygote.start_early()
    from .isolation.probe import probe
    # virtual and none plan without the kernel: the probe (a namespace child, ~0.1 s) is
    # only paid by the levels that use what it finds
    caps = None if isolation in ("virtual", "none") else probe()
    if caps is not None and (caps.user_namespace or isolation == "landlock"):
        # start the zygote now without waiting for it: its preload overlaps with the plan
        # and the limits and network set-up in the executor (first thing: it is the longest
        # step of a process's first sandbox)
        try:
            from .isolation.zygote import get_zygote
            get_zygote(wait=False)
        except OSError:
            pass   # the sandboxed executor reports it
    elif early is not None:
        from .isolation.zygote import discard_early
        discard_early(early)
    from .isolation.plan import plan as make_plan
    from .isolation.report import report_from_plan
    from .network import resolve_network
    network = resolve_network(extra.pop("network", None), isolation)
    from .vfs.protect import PathRules
    rules = PathRules(extra.pop("hide", None) or (), extra.pop("read_only", None) or (),
                      workdir)
    allow_ptrace = bool(extra.pop("allow_ptrace", False))
    p = make_plan(isolation, caps, strict=strict, network=network)  # type: ignore[arg-type]
    if rules and p.level in ("landlock", "none"):
        # Landlock cannot refuse a path below one it allows, and 'none' confines nothing:
        # a protection that cannot be applied is refused, never silently dropped
        raise IsolationUnavailable(f"hide=/read_only= need the 'namespace' or 'virtual' "
                                   f"level; isolation {p.level!r} cannot enforce them")
    if p.level in ("namespace", "landlock"):
        from .executors.sandboxed import SandboxedExecutor
        ex = SandboxedExecutor(plan=p, env=env, workdir=workdir, mounts=mounts, limits=limits,
                               strict=strict, info=info, prefer_inprocess=prefer_inprocess,
                               commands_allowlist=commands_allowlist, network=network,
                               protect=rules, allow_ptrace=allow_ptrace, **extra)
        return ex, p.level, ex.isolation  # the executor already warned about degradations
    extra.pop("layer_tar", None)
    if extra.pop("base", None) is not None:
        raise IsolationUnavailable(f"base= needs a sandboxed isolation level, not {p.level!r}")
    if extra.pop("image", None) is not None:
        raise IsolationUnavailable(f"image= needs a sandboxed isolation level, not {p.level!r}")
    if extra:
        raise TypeError(f"unexpected Sandbox options: {', '.join(sorted(extra))}")
    for w in p.warnings:
        warnings.warn(w, RuntimeWarning, stacklevel=3)
    report = report_from_plan(p)
    from .executors.inprocess import InProcessExecutor
    if p.level == "none":
        from .executors.native import NativeLauncher
        from .vfs.host import HostFS
        warnings.warn("isolation='none': commands run on the host with nothing confined",
                      RuntimeWarning, stacklevel=3)
        fs = HostFS("/", writable=True)
        env, report = _none_java(env, limits, report)
        ex = InProcessExecutor(fs=fs, native=NativeLauncher(), env=env, workdir=workdir, limits=limits,
                               info=info, prefer_inprocess=prefer_inprocess,
                               commands_allowlist=commands_allowlist)
        return ex, "none", report
    from .vfs.layout import build_virtual_fs
    from .executors.inprocess import load_commands
    # test and [ are builtins that coreutils also installs as /usr/bin/test and /usr/bin/[
    names = list(load_commands()) + ["bash", "sh", "test", "["]
    fs, layer = build_virtual_fs(mounts, names, home=info.home, workdir=workdir, limits=limits)
    try:
        if not fs.exists(workdir):
            fs.mkdir(workdir)
    except OSError:
        pass
    if rules:
        from dataclasses import replace
        from .vfs.protect import ProtectedFS
        fs = ProtectedFS(fs, rules)
        report = replace(report, mechanisms={**report.mechanisms,
                                             "protected_paths": "enforced by the VFS gate"},
                         notes=report.notes + ("protected paths: " + rules.describe(),))
    ex = InProcessExecutor(fs=fs, native=None, env=env, workdir=workdir, limits=limits, info=info,
                           prefer_inprocess=True, commands_allowlist=commands_allowlist, layer=layer)
    if p.network != "deny":
        # a policy was given: /dev/tcp connects from this process to addresses it checked
        from .network.devtcp import host_opener
        from .network.policy import NetworkPolicy
        ex.open_socket = host_opener(NetworkPolicy.coerce(network),  # type: ignore[attr-defined]
                                     lambda v: ex._violations.append(v))
    return ex, "virtual", report


def _close_executor(ex: Any) -> None:
    try:
        ex.close()
    except Exception:
        pass


class Sandbox:
    """A stateful bash session. Each ``run()`` behaves like ``bash -c`` on the persistent state.

    Hooks: ``on_command(script)`` before each run, ``on_result(result)`` after it,
    ``on_violation(PolicyViolation)`` for each refused action, ``on_output(fd, chunk)`` for
    output as it is produced (``before_run``/``after_run`` are older names of the first two).
    ``commands=[names]`` allowlists the commands a script may invoke by name (a mapping
    registers custom commands instead); ``transforms=[fn(ast) -> ast]`` rewrite each script's
    AST before it runs. ``isolation`` is the report of what is actually enforced.
    """

    def __init__(self, isolation: str = "auto", *, env: Mapping[str, str] | None = None,
                 workdir: str = "/workspace", mounts: Mapping[str, Any] | None = None,
                 limits: Limits | None = None, strict: bool = False,
                 commands: Iterable[str] | Mapping[str, Callable[..., int]] | None = None,
                 prefer_inprocess: bool = False, hostname: str = "sandbox", user: str = "user",
                 uid: int | None = None, pid: int = 1, ppid: int = 0,
                 commands_allowlist: Any = None,
                 transforms: Iterable[Callable[[Any], Any]] = (),
                 on_output: Callable[[int, bytes], None] | None = None,
                 on_violation: Callable[[Any], None] | None = None,
                 on_command: Callable[[str], None] | None = None,
                 on_result: Callable[[Result], None] | None = None,
                 before_run: Callable[[str], None] | None = None,
                 after_run: Callable[[Result], None] | None = None, **extra: Any) -> None:
        self._closed = True
        # every argument is checked before anything is created (no temp dir, no process)
        checked = check_sandbox_options(dict(
            isolation=isolation, env=env, workdir=workdir, mounts=mounts, limits=limits,
            strict=strict, commands=commands, prefer_inprocess=prefer_inprocess,
            hostname=hostname, user=user, uid=uid, pid=pid, ppid=ppid,
            commands_allowlist=commands_allowlist, transforms=transforms, on_output=on_output,
            on_violation=on_violation, on_command=on_command, on_result=on_result,
            before_run=before_run, after_run=after_run, **extra))
        env, commands_allowlist = checked["env"], checked["commands_allowlist"]
        transforms = checked["transforms"]
        snapshot = extra.pop("_snapshot", None)
        self.limits = limits if limits is not None else Limits()
        home = "/root" if user == "root" else f"/home/{user}"
        if uid is None:
            uid = 0 if user == "root" else 1000
        self.info = SystemInfo(hostname=hostname, user=user, uid=uid, gid=uid,
                               group="root" if uid == 0 else user, home=home, pid=pid, ppid=ppid)
        base_env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": home, "USER": user,
                    "LANG": "C.UTF-8", "SHLVL": "1", "TERM": "dumb", "PAGER": "cat", "GIT_PAGER": "cat"}
        if env:
            base_env.update(env)
        custom: dict[str, Callable[..., int]] = {}
        if isinstance(commands, Mapping):
            custom = dict(commands)   # older form: a mapping registers custom commands
        elif commands is not None:
            if isinstance(commands, str):
                raise TypeError("commands= takes a list of command names, not a string")
            allowed = set(commands)
            commands_allowlist = allowed if commands_allowlist is None else allowed | set(commands_allowlist)
        self.workdir = normalize(workdir)
        from .vfs.protect import PathRules
        self._rules = PathRules(checked.get("hide") or (), checked.get("read_only") or (),
                                self.workdir)
        self._mounts = _norm_mounts(mounts)
        self.requested_isolation = isolation
        self._transforms: tuple[Callable[[Any], Any], ...] = tuple(transforms)
        # everything reset() needs to rebuild the session as the constructor defined it
        self._options: dict[str, Any] = dict(
            env=base_env, workdir=self.workdir, mounts=self._mounts, limits=self.limits,
            strict=strict, prefer_inprocess=prefer_inprocess, info=self.info,
            commands_allowlist=commands_allowlist, **extra)
        opts = dict(self._options)
        if snapshot is not None:
            from .snapshot import prepare_for_constructor
            snapshot = prepare_for_constructor(self, snapshot, opts)
        self._ex, self.isolation_level, self.isolation = _make_executor(isolation, **opts)
        try:
            self._finish_init(on_output, on_violation, on_command, before_run, on_result,
                              after_run, custom, snapshot)
        except BaseException:
            # (Ctrl-C or an error after the sandbox exists: nothing else would close it, and
            # its session dir and cgroups stayed until the process ended)
            _close_executor(self._ex)
            raise

    def _finish_init(self, on_output, on_violation, on_command, before_run, on_result,  # noqa: ANN001
                     after_run, custom, snapshot) -> None:
        self._on_output = on_output
        self._on_violation = on_violation
        self._on_command = on_command or before_run
        self._on_result = on_result or after_run
        # run() goes straight to the executor unless a hook must see the script or result
        from . import telemetry
        self._otel = telemetry.active()   # None unless OpenTelemetry is set up
        self._hooked = (self._on_command is not None or self._on_violation is not None
                        or self._on_result is not None or self._otel is not None)
        self._closed = False
        self._finalizer = weakref.finalize(self, _close_executor, self._ex)
        self._route()
        self._custom: dict[str, Callable[..., int]] = {}
        # what reset() returns an in-process session to (a sandboxed one gets a new process)
        self._initial_state: dict[str, Any] | None = (
            None if self.isolation_level in ("namespace", "landlock") else self._ex.get_state())
        for name, fn in custom.items():
            self.register_command(name, fn)
        if snapshot is not None:
            from .snapshot import finish_constructor
            finish_constructor(self, snapshot)

    # ------------------------------------------------------------------ running
    def run(self, script: str, *, stdin: bytes | str | BinaryIO | None = None,
            env: Mapping[str, str] | None = None, cwd: str | None = None,
            timeout: float | None = None, tty: bool | Mapping[str, Any] | None = None) -> Result:
        """Run ``script`` on the session; ``stdin``, ``env``, ``cwd``, ``timeout`` apply to
        this run only. Bad arguments raise TypeError/ValueError before anything runs.

        ``tty=True`` (or ``{"term", "rows", "cols"}``) gives the run a pseudo-terminal as
        stdin, stdout and stderr, as in an interactive shell: output is merged into
        ``stdout`` (with the terminal's ``\r\n``), ``stdin`` bytes are typed at it, native
        programs see a terminal (TERM from ``term``, default $TERM), and
        ``tty_input()``/``tty_resize()`` reach it while the run goes on."""
        if not plain_run_args(script, stdin, env, cwd, timeout):
            stdin, env, cwd, timeout = check_run_args(script, stdin, env, cwd, timeout)
        if tty is not None and tty is not False:
            from .tty import tty_spec
            self._check()
            spec = tty_spec(tty)
            return self._run(script, stdin=stdin, env=env, cwd=cwd, timeout=timeout,
                             on_output=self._on_output, tty=spec)
        if self._direct and type(stdin) is not str:
            # no hook or transform to serve: straight to the executor, arguments by position
            # (it raises SandboxClosed once closed)
            r = self._ex.run(script, stdin, env, cwd, timeout, self._on_output)
            if r.packages_installed:
                self._promote(r)
            return r
        return self._run(script, stdin=stdin, env=env, cwd=cwd, timeout=timeout,
                         on_output=self._on_output)

    @property
    def transforms(self) -> tuple[Callable[[Any], Any], ...]:
        """The AST transforms applied to each script, in order (assign a new sequence to
        change them)."""
        return self._transforms

    @transforms.setter
    def transforms(self, fns: Iterable[Callable[[Any], Any]]) -> None:
        self._transforms = tuple(fns)
        self._route()

    def _route(self) -> None:
        # (not a bound executor method stored as ``self.run``: `Sandbox().run(...)` would then
        # hold no reference to the Sandbox, whose finalizer closes the executor mid-call)
        self._direct = not (self._hooked or self._transforms)

    def _run(self, script: str, *, stdin: Any, env: Mapping[str, str] | None, cwd: str | None,
             timeout: float | None, on_output: Callable[[int, bytes], None] | None,
             tty: dict[str, Any] | None = None) -> Result:
        self._check()
        if isinstance(stdin, str):
            from .shell.quoting import host_bytes
            stdin = host_bytes(stdin)  # (a lone surrogate included: see host_bytes)
        if self._on_command is not None:
            self._on_command(script)
        text = script
        if self._transforms:
            from .transforms import apply_transforms
            text = apply_transforms(script, self._transforms)
        otel = self._otel
        kw = {"tty": tty} if tty is not None else {}
        if otel is None:
            r = self._ex.run(text, stdin=stdin, env=env, cwd=cwd, timeout=timeout,
                             on_output=on_output, **kw)
        else:
            with otel.run_span(self.isolation_level) as span:
                r = self._ex.run(text, stdin=stdin, env=env, cwd=cwd, timeout=timeout,
                                 on_output=on_output, **kw)
                otel.end_run(span, self.isolation_level, r)
        if r.packages_installed:
            self._promote(r)
        if self._on_violation is not None:
            for v in r.violations:
                self._on_violation(v)
        if self._on_result is not None:
            self._on_result(r)
        return r

    def _promote(self, r: Result) -> None:
        """Share what this run installed with later sandboxes (packages/cache.py: verified
        by the host, never taken on the sandbox's word)."""
        if self.isolation_level != "namespace":
            return
        from .packages.apt import archive_dirs
        from .packages.cache import promote
        promote(self._ex, r.packages_installed, apt_archives=archive_dirs(self.info.home),
                network=getattr(self._ex, "_policy", None))

    def run_stream(self, script: str, *, on_stdout: Callable[[bytes], None] | None = None,
                   on_stderr: Callable[[bytes], None] | None = None, **kw: Any) -> Result:
        """Like ``run()``, delivering output chunks to ``on_stdout``/``on_stderr`` as produced."""
        unknown = set(kw) - {"stdin", "env", "cwd", "timeout", "tty"}
        if unknown:
            raise TypeError(f"run_stream() got an unexpected keyword argument "
                            f"{sorted(unknown)[0]!r}")
        _, kw["env"], kw["cwd"], kw["timeout"] = check_run_args(
            script, kw.get("stdin"), kw.get("env"), kw.get("cwd"), kw.get("timeout"))
        for name, cb in (("on_stdout", on_stdout), ("on_stderr", on_stderr)):
            if cb is not None and not callable(cb):
                raise TypeError(f"{name} must be callable, not {type(cb).__name__}")

        def deliver(fd: int, chunk: bytes) -> None:
            if self._on_output is not None:
                self._on_output(fd, chunk)
            cb = on_stdout if fd == 1 else on_stderr
            if cb is not None:
                cb(chunk)
        tty = kw.get("tty")
        if tty is not None and tty is not False:
            from .tty import tty_spec
            tty = tty_spec(tty)
        else:
            tty = None
        return self._run(script, stdin=kw.get("stdin"), env=kw.get("env"), cwd=kw.get("cwd"),
                         timeout=kw.get("timeout"), on_output=deliver, tty=tty)

    def stream(self, script: str, **kw: Any) -> Iterator[StreamEvent]:
        """``for ev in sb.stream(script)``: ``stdout``/``stderr`` events with ``data`` as output
        is produced, then one ``result`` event carrying the Result."""
        from .streaming import stream_events
        return stream_events(self, script, kw)

    # ------------------------------------------------------------------ asyncio
    async def arun(self, script: str, *, stdin: bytes | str | BinaryIO | None = None,
                   env: Mapping[str, str] | None = None, cwd: str | None = None,
                   timeout: float | None = None) -> Result:
        """``await sb.arun(script)``: the event loop never blocks. A sandboxed run is sent and
        its reply read on the loop itself when nothing else needs a thread (no hooks or
        transforms, stdin bytes or None, the sandbox not busy); otherwise ``run()`` goes to a
        worker thread. Cancelling the awaiting task interrupts the run (like Ctrl-C)."""
        import asyncio

        if self._direct and (stdin is None or type(stdin) is bytes):
            fast = getattr(self._ex, "arun", None)   # (SandboxClosed once released)
            if fast is not None:
                r = await fast(script, stdin, env, cwd, timeout, self._on_output)
                if r is not None:
                    if r.packages_installed:
                        await asyncio.get_running_loop().run_in_executor(
                            _async_workers(), self._promote, r)
                    return r
        worker: list[int] = []
        gate = threading.Lock()
        ended = [False, False]  # [cancelled, the worker's call returned]

        def work() -> Result:
            with gate:
                if ended[0]:
                    raise SandboxError("run cancelled before it began")  # (never sent)
                worker.append(threading.get_ident())
            try:
                return self.run(script, stdin=stdin, env=env, cwd=cwd, timeout=timeout)
            finally:
                with gate:
                    ended[1] = True
                    undrop = getattr(self._ex, "undrop_thread", None)
                    if undrop is not None:
                        undrop(worker[0])  # (a mark its cancel left, if its run never took it)
        fut = asyncio.get_running_loop().run_in_executor(_async_workers(), work)
        try:
            return await fut
        except asyncio.CancelledError:
            try:
                with gate:
                    ended[0] = True
                    mine = getattr(self._ex, "interrupt_thread", None)
                    if ended[1]:
                        pass  # its run is over: nothing to stop
                    elif mine is None:
                        self.interrupt()
                    elif worker:
                        # only this task's own run (not one it was queued behind); a run still
                        # waiting behind another is dropped when its turn comes
                        mine(worker[0])
            except Exception:  # noqa: BLE001 - closed meanwhile: nothing left to stop
                pass
            raise

    async def astream(self, script: str, **kw: Any) -> AsyncIterator[StreamEvent]:
        """``async for ev in sb.astream(script)``: ``stream()`` for asyncio; output events
        as produced, then the ``result`` event. Leaving early interrupts the run."""
        import asyncio

        self._check()
        loop = asyncio.get_running_loop()
        q: asyncio.Queue[Any] = asyncio.Queue()
        hook = self._on_output
        done = object()
        stdin = kw.get("stdin")
        if self._direct and (stdin is None or type(stdin) is bytes):
            fast = getattr(self._ex, "arun", None)
            if fast is not None:
                # on the loop itself (see arun): output events are queued as they arrive
                def put(fd: int, chunk: bytes) -> None:
                    if hook is not None:
                        hook(fd, chunk)
                    q.put_nowait(StreamEvent("stdout" if fd == 1 else "stderr", bytes(chunk)))
                task = asyncio.ensure_future(fast(script, stdin, kw.get("env"), kw.get("cwd"),
                                                  kw.get("timeout"), put))
                task.add_done_callback(lambda _t: q.put_nowait(done))
                finished = False
                try:
                    while True:
                        item = await q.get()
                        if item is done:
                            break
                        yield item
                    r = task.result()
                    if r is not None:
                        finished = True
                        yield StreamEvent("result", result=r)
                        return
                    finished = True   # it did not go that way (nothing was sent): below
                finally:
                    if not finished:
                        task.cancel()   # interrupts the run; the next call drains its reply
                        await asyncio.wait([task])
                q = asyncio.Queue()

        def deliver(fd: int, chunk: bytes) -> None:
            if hook is not None:
                hook(fd, chunk)
            loop.call_soon_threadsafe(q.put_nowait,
                                      StreamEvent("stdout" if fd == 1 else "stderr", bytes(chunk)))

        def work() -> Result:
            return self._run(script, stdin=kw.get("stdin"), env=kw.get("env"), cwd=kw.get("cwd"),
                             timeout=kw.get("timeout"), on_output=deliver)

        fut = loop.run_in_executor(_async_workers(), work)
        fut.add_done_callback(lambda _f: q.put_nowait(done))
        finished = False
        try:
            while True:
                item = await q.get()
                if item is done:
                    break
                yield item
            finished = True
            yield StreamEvent("result", result=fut.result())
        finally:
            if not finished:
                try:
                    self.interrupt()
                except Exception:  # noqa: BLE001
                    pass
                # the worker still holds the session: wait for it without blocking the loop
                await asyncio.wait([fut])

    def interrupt(self) -> None:
        self._ex.interrupt()

    def tty_input(self, data: bytes | str) -> bool:
        """Type ``data`` at the terminal of the ``run(tty=...)`` going on (from another
        thread). False when no run is going on (nothing is kept for a later run): a caller
        relaying keys may try again once the run has started."""
        if isinstance(data, str):
            data = data.encode("utf-8")
        fn = getattr(self._ex, "tty_input", None)
        return bool(fn(bytes(data))) if fn is not None else False

    def tty_resize(self, rows: int, cols: int) -> None:
        """Set the window size of the ``run(tty=...)`` going on (its program gets SIGWINCH)."""
        fn = getattr(self._ex, "tty_resize", None)
        if fn is not None:
            fn(int(rows), int(cols))

    def register_command(self, name: str, fn: Callable[..., int]) -> None:
        """Add a custom command ``fn(ctx, argv) -> int`` (found after functions and builtins).
        The function always runs in this process. Under ``namespace``/``landlock`` the
        sandboxed interpreter calls it over the session channel: ``ctx.stdin``, ``ctx.stdout``
        and ``ctx.stderr`` are streamed from and to the command's place in the script, and
        ``ctx.fs`` is unavailable (Unsupported)."""
        from .validation import _command_name
        _command_name("name", name)
        if not callable(fn):
            raise TypeError(f"fn must be callable, not {type(fn).__name__}")
        self._check()
        reg = getattr(self._ex, "register_command", None)
        if reg is None:
            raise Unsupported(
                f"register_command: custom Python commands run in the caller's process and are "
                f"supported with isolation='virtual' or 'none', not {self.isolation_level!r}")
        reg(name, fn)
        self._custom[name] = fn

    # ------------------------------------------------------------------ files
    def _abs(self, path: str) -> str:
        if type(path) is not str:
            path = check_path("path", path)
        elif "\0" in path:
            raise ValueError(f"path must not contain NUL: {path!r}")
        return normalize(path, self.cwd)

    def write_file(self, path: str, data: bytes | str, mode: int = 0o644) -> None:
        if type(data) is not bytes:
            data = check_write_data(data)
        if isinstance(mode, bool) or not isinstance(mode, int) or not 0 <= mode <= 0o7777:
            raise (ValueError if isinstance(mode, int) and not isinstance(mode, bool)
                   else TypeError)(f"mode must be an int permission mode (0o644), not {mode!r}")
        self._check()
        p = self._abs(path)
        self._guard(p)
        self._ex.write_file(p, data, mode)

    def _guard(self, path: str) -> None:
        """hide=/read_only= for the host-side file API: a hidden name is never created or
        removed through it (EACCES), a read-only one never changed (EROFS) — in every mode."""
        rules = getattr(self, "_rules", None)
        if not rules:
            return
        import errno
        try:
            real = self._ex.realpath(path)
        except Exception:  # noqa: BLE001
            real = path
        for p in (path, real):
            if rules.hidden(p):
                raise PermissionError(errno.EACCES, "Permission denied (hidden path)", path)
            if rules.readonly(p):
                raise OSError(errno.EROFS, "Read-only file system (read_only path)", path)

    def read_file(self, path: str) -> bytes:
        self._check()
        return self._ex.read_file(self._abs(path))

    def list_files(self, path: str = ".", limit: int | None = 10_000) -> FileList:
        """Entries of the directory ``path`` (or the file itself), sorted by name: at most
        ``limit`` (None: all), with ``.truncated`` True when the directory holds more."""
        self._check()
        from .fileapi import list_files
        return list_files(self._ex, self._abs(path), limit)

    def exists(self, path: str) -> bool:
        self._check()
        return self._ex.exists(self._abs(path))

    def realpath(self, path: str) -> str:
        """``path`` with every symlink resolved as the sandbox sees it (missing parts kept)."""
        self._check()
        return self._ex.realpath(self._abs(path))

    def remove(self, path: str, recursive: bool = False) -> None:
        self._check()
        p = self._abs(path)
        self._guard(p)
        self._ex.remove(p, recursive)

    def upload_tar(self, fileobj: BinaryIO | bytes, dest: str = "/workspace") -> None:
        """Extract a tar (optionally gzipped) below ``dest``; refuses escaping names, writes
        through symlinks and device nodes with SnapshotError, having written nothing."""
        self._check()
        from .fileapi import upload_tar
        upload_tar(self._ex, fileobj, self._abs(dest))

    def download_tar(self, fileobj: BinaryIO | None = None, path: str = "/workspace") -> bytes:
        """A tar of ``path`` (names relative to it); written to ``fileobj`` too if given."""
        self._check()
        from .fileapi import download_tar
        return download_tar(self._ex, fileobj, self._abs(path))

    # ------------------------------------------------------------------ snapshots
    def snapshot(self, fileobj: BinaryIO | str | os.PathLike[str] | None = None, *,
                 exclude_env: Iterable[str] = (), compression: str | None = "auto",
                 parent: Any = None) -> bytes | None:
        """The session as an OCI image-layer tar plus ``.agentic-bash/state.json``: returned as
        bytes, or streamed to ``fileobj``, or written atomically to a path. ``compression``:
        "auto" (tar+zstd; tar+gzip if ``zstandard`` cannot be imported), "zstd", "gzip" or
        None (a plain tar); compressed as it is written. ``restore`` reads all three.
        ``parent``: an earlier snapshot of this session (or its chain ``[full, ...]``): only
        what changed since goes in, restorable as ``restore([full, ..., this])``."""
        self._check()
        from .snapshot import take_snapshot
        return take_snapshot(self, fileobj, exclude_env=exclude_env, compression=compression,
                             parent=parent)

    def restore(self, data: bytes | BinaryIO | str | os.PathLike[str], *,
                max_entries: int | None = None, max_bytes: int | None = None) -> None:
        """Replace the session's files and shell state by a snapshot's (from any mode). Raises
        SnapshotError, leaving the session as it was, if the snapshot cannot be honoured;
        ``max_entries``/``max_bytes`` cap what it may hold (defaults: vfs.oci's)."""
        self._check()
        from .snapshot import restore_snapshot
        restore_snapshot(self, data, max_entries=max_entries, max_bytes=max_bytes)

    @classmethod
    def from_snapshot(cls, data: bytes | BinaryIO | str | os.PathLike[str], *,
                      max_entries: int | None = None, max_bytes: int | None = None,
                      **options: Any) -> Sandbox:
        """A new Sandbox (``options`` as for the constructor) resumed from a snapshot;
        ``reset()`` later returns it to the constructor's options, not to the snapshot."""
        return cls(**options, _snapshot=(data, max_entries, max_bytes))

    def reset(self) -> None:
        """Drop the session layer and the shell state back to what the constructor defined
        (virtual mode: O(1); sandboxed: a fresh sandbox process)."""
        self._check()
        from .snapshot import reset_session
        reset_session(self)

    def _swap_executor(self, ex: Any, level: str, report: Any) -> None:
        """Make ``ex`` the session's executor and close the previous one."""
        old = self._ex
        self._finalizer.detach()
        self._ex, self.isolation_level, self.isolation = ex, level, report
        self._finalizer = weakref.finalize(self, _close_executor, ex)
        for name, fn in self._custom.items():
            reg = getattr(ex, "register_command", None)
            if reg is not None:
                reg(name, fn)
        if old is not ex:
            _close_executor(old)

    # ------------------------------------------------------------------ state
    @property
    def packages(self) -> list[Any]:
        """``[PackageInfo(name, version, manager)]`` the session installed (pip, npm, apt),
        observed from what the real installers wrote; travels in snapshots."""
        self._check()
        from .packages.manifest import Manifest, PackageInfo
        m = getattr(self._ex, "packages", None)
        if isinstance(m, Manifest):
            return list(m)
        return sorted((PackageInfo.from_json(e) for e in self._ex.get_state().get("packages") or ()),
                      key=lambda p: (p.manager, p.name.lower()))

    @property
    def network_log(self) -> list[dict[str, Any]]:
        """What the network proxy did for this sandbox (connections allowed, refused or
        failed, DNS answers), newest last; empty where no proxy serves it."""
        return list(getattr(self._ex, "network_log", None) or [])

    @property
    def cwd(self) -> str:
        return self._ex.cwd

    @property
    def env(self) -> Mapping[str, str]:
        return MappingProxyType(dict(self._ex.env))

    @property
    def closed(self) -> bool:
        return self._closed

    def get_state(self) -> dict[str, Any]:
        return self._ex.get_state()

    def set_state(self, state: dict[str, Any]) -> None:
        self._ex.set_state(state)

    def _check(self) -> None:
        if self._closed:
            raise SandboxClosed("sandbox is closed")

    def _detach_for_pool(self) -> Any:
        """Kill this handle at once (every later call raises SandboxClosed) and return its
        executor for the caller to close; SandboxPool.release ends sandboxes this way."""
        ex = self._ex
        self._finalizer.detach()
        self._ex = _RELEASED
        self._closed = True
        return ex

    def close(self) -> None:
        if not self._closed:
            ref = getattr(self, "_lease_pool", None)
            pool = ref() if ref is not None else None
            if pool is not None:
                pool.release(self)   # leased from a SandboxPool: give its slot back
                return
            self._closed = True
            self._finalizer()

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        if self._closed:
            return f"<Sandbox isolation={self.isolation_level!r} closed>"
        return f"<Sandbox isolation={self.isolation_level!r} cwd={self.cwd!r}>"

    _ = posixpath
