"""A sandbox's own cgroups (v1 memory/cpu through cgroupspy, v1 pids by hand as cgroupspy has no pids controller, or one v2 dir), made below the caller's group and removed on close."""

from __future__ import annotations

import atexit
import errno
import itertools
import os
import signal
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Mapping

from .._lazyre import lazy_compile as _lazy_re
from .._values import value_methods

__all__ = ["CgroupHost", "SandboxCgroups", "detect", "detect_cached", "parse_mountinfo",
           "parse_proc_cgroup", "sweep_stale", "systemd_user_manager"]

PREFIX = "agentic-bash-"
_NAME = _lazy_re(r"^agentic-bash-(\d+)-\d+-[0-9a-f]+$")
_V1_WANTED = ("memory", "pids", "cpu")
_V2_WANTED = ("memory", "pids", "cpu")
_PERIOD_US = 100_000
_RUNNER_PIDS = 64
"""pids.max of the sandbox's group is the workload's (its own group below) plus this plus
``runner_pids``: room for the runner's tasks (about 6 measured: S1, S2 and its thread, S3 and
its run thread) and a few processes a child forks before it is moved to the workload's group."""
_RUNNER_THREADS_IN_WORK = 2
"""v1: the runner's threads in the workload's pids group (its slots in that pids.max): the
native launcher's spawner thread and the run thread (or, until the run thread takes it, a
placeholder thread)."""
_STALE_AGE = 60.0
_seq = itertools.count(1)
_swept: set[str] = set()


@value_methods
@dataclass(frozen=True, slots=True, repr=False, eq=False)
class CgroupHost:
    """Where this process may make cgroups: ``dirs`` maps a controller to the caller's own
    group directory in its hierarchy (v1), or every usable controller to the one v2 dir."""

    version: int = 0
    """1 (v1 controllers used), 2 (unified) or 0 (none usable)."""
    dirs: Mapping[str, str] = field(default_factory=dict)
    reasons: Mapping[str, str] = field(default_factory=dict)
    """Why a wanted controller is not in ``dirs``."""

    def usable(self, controller: str) -> bool:
        return controller in self.dirs


def parse_mountinfo(text: str) -> list[tuple[str, str, str, set[str]]]:
    """(mount root, mount point, fstype, super options) of every cgroup/cgroup2 mount."""
    out = []
    for line in text.splitlines():
        pre, sep, post = line.partition(" - ")
        if not sep:
            continue
        a, b = pre.split(), post.split()
        if len(a) < 5 or len(b) < 3 or b[0] not in ("cgroup", "cgroup2"):
            continue
        point = a[4].replace("\\040", " ")
        out.append((a[3], point, b[0], set(b[2].split(","))))
    return out


def parse_proc_cgroup(text: str) -> tuple[dict[str, str], str | None]:
    """(v1 controller -> own path, v2 own path or None) from /proc/self/cgroup."""
    v1: dict[str, str] = {}
    v2: str | None = None
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        hid, ctrls, path = parts
        if hid == "0" and ctrls == "":
            v2 = path
        else:
            for c in ctrls.split(","):
                if c:
                    v1[c] = path
    return v1, v2


def _join(point: str, mroot: str, own: str) -> str | None:
    """The directory of ``own`` (a path from /proc/self/cgroup) under a mount of ``mroot``."""
    if mroot != "/" and not (own == mroot or own.startswith(mroot.rstrip("/") + "/")):
        return None  # our group is outside what this mount shows
    rel = own[len(mroot):] if mroot != "/" else own
    return os.path.join(point, rel.lstrip("/")).rstrip("/") or point


def detect(proc: str = "/proc") -> CgroupHost:
    """Probe the hierarchies this process sits in; never raises."""
    try:
        with open(f"{proc}/self/mountinfo") as f:
            mounts = parse_mountinfo(f.read())
        with open(f"{proc}/self/cgroup") as f:
            own_v1, own_v2 = parse_proc_cgroup(f.read())
    except OSError as e:
        return CgroupHost(reasons={c: f"{e.filename}: {e.strerror}" for c in _V1_WANTED})
    reasons: dict[str, str] = {}
    v1_dirs: dict[str, str] = {}
    for c in _V1_WANTED:
        m = next((m for m in mounts if m[2] == "cgroup" and c in m[3]), None)
        if m is None:
            reasons[c] = f"no cgroup v1 {c} hierarchy"
            continue
        d = _join(m[1], m[0], own_v1.get(c, "/"))
        if d is None or not os.path.isdir(d):
            reasons[c] = f"our {c} group is not visible under {m[1]}"
        elif not os.access(d, os.W_OK | os.X_OK):
            reasons[c] = f"{d} is not writable (cgroup v1 needs root)"
        else:
            v1_dirs[c] = d
    if v1_dirs:
        return CgroupHost(1, v1_dirs, reasons)
    v2 = next((m for m in mounts if m[2] == "cgroup2"), None)
    if v2 is None or own_v2 is None:
        return CgroupHost(0, {}, reasons or {c: "no cgroup filesystem" for c in _V2_WANTED})
    d = _join(v2[1], v2[0], own_v2)
    if d is None or not os.path.isdir(d):
        return CgroupHost(0, {}, {c: "our cgroup v2 group is not visible" for c in _V2_WANTED})
    v2_dirs, v2_reasons = _v2_usable(d)
    if v2_dirs:
        return CgroupHost(2, v2_dirs, v2_reasons)
    # both stories where both hierarchies exist (a v2 mount without controllers is common)
    return CgroupHost(0, {}, {c: "; ".join(r for r in (reasons.get(c), v2_reasons.get(c))
                                           if r and not r.startswith("no cgroup v1"))
                              or "unavailable" for c in _V2_WANTED})


_cached: tuple[int, CgroupHost] | None = None


def detect_cached() -> CgroupHost:
    """``detect()`` once per process (~80 us; even re-reading /proc/self/cgroup to see whether
    we were moved costs ~45 us). A process moved to another group after its first sandbox
    keeps making groups below the old one, which is still not the root."""
    global _cached
    c = _cached
    if c is not None and c[0] == os.getpid():
        return c[1]
    host = detect()
    _cached = (os.getpid(), host)
    return host


def _read(path: str) -> str:
    with open(path) as f:
        return f.read()


def _write(path: str, value: str | int) -> None:
    with open(path, "w") as f:
        f.write(str(value))


def _v2_usable(d: str) -> tuple[dict[str, str], dict[str, str]]:
    """Controllers a child of ``d`` would get: delegated (``d`` writable) and enabled in
    ``d/cgroup.subtree_control`` — or enabled here when ``d`` holds no process itself."""
    reasons: dict[str, str] = {}
    if not (os.access(d, os.W_OK | os.X_OK) and os.access(os.path.join(d, "cgroup.procs"), os.W_OK)):
        hint = (" (a systemd user manager runs here: systemd-run --user --scope -p "
                "Delegate=yes gives a delegated subtree)" if systemd_user_manager() else "")
        return {}, {c: f"cgroup v2: {d} is not delegated to us{hint}" for c in _V2_WANTED}
    try:
        avail = set(_read(os.path.join(d, "cgroup.controllers")).split())
        enabled = set(_read(os.path.join(d, "cgroup.subtree_control")).split())
    except OSError as e:
        return {}, {c: f"cgroup v2: {e.strerror}" for c in _V2_WANTED}
    missing = [c for c in _V2_WANTED if c in avail and c not in enabled]
    if missing:
        try:
            # fails with EBUSY while our own group holds processes ("no internal processes")
            _write(os.path.join(d, "cgroup.subtree_control"), " ".join("+" + c for c in missing))
            enabled |= set(missing)
        except OSError as e:
            hint = ("; run under a delegated scope: systemd-run --user --scope -p Delegate=yes"
                    if systemd_user_manager() else "")
            for c in missing:
                reasons[c] = f"cgroup v2: cannot enable {c} below {d} ({e.strerror}){hint}"
    out = {}
    for c in _V2_WANTED:
        if c in enabled:
            out[c] = d
        elif c not in reasons:
            reasons[c] = f"cgroup v2: controller {c} not available in {d}"
    return out, reasons


def _pread(fd: int, n: int) -> bytes:
    # lseek + read rather than os.pread: the same on cgroupfs, and pyfakefs knows only these
    os.lseek(fd, 0, os.SEEK_SET)
    return os.read(fd, n)


def systemd_user_manager() -> bool:
    """A systemd user manager answers for this user (delegation could then be asked for)."""
    rt = os.environ.get("XDG_RUNTIME_DIR") or f"/run/user/{os.getuid()}"
    return os.path.exists(os.path.join(rt, "systemd", "private"))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep_stale(parent: str, now: float | None = None) -> int:
    """Remove empty groups of ours below ``parent`` left by a host process that died without
    closing them (older than a minute, their host pid gone). Never touches other groups, nor
    a group that still holds a process. Returns how many were removed."""
    now = time.time() if now is None else now
    n = 0
    try:
        names = os.listdir(parent)
    except OSError:
        return 0
    for name in names:
        m = _NAME.match(name)
        if m is None or int(m.group(1)) == os.getpid() or _alive(int(m.group(1))):
            continue
        d = os.path.join(parent, name)
        try:
            if now - os.stat(d).st_mtime < _STALE_AGE or _read(os.path.join(d, "cgroup.procs")).strip():
                continue
            for sub in sorted((e.path for e in os.scandir(d) if e.is_dir()), reverse=True):
                os.rmdir(sub)
            os.rmdir(d)
            n += 1
        except OSError:
            continue
    return n


class SandboxCgroups:
    """The groups of one sandbox. ``procs_files`` are what the sandbox's first process writes
    its pid to (before any namespace or user code); ``close()`` kills what is left and removes
    every directory made here. Raises OSError from the constructor when a group cannot be made
    (nothing is left behind then)."""

    def __init__(self, host: CgroupHost, *, memory: int | None = None, pids: int | None = None,
                 cpu_quota: float | None = None, runner_pids: int = 0) -> None:
        self.version = host.version
        self.backend = f"cgroup-v{host.version}"
        self.name = f"{PREFIX}{os.getpid()}-{next(_seq)}-{os.urandom(3).hex()}"
        self.dirs: dict[str, str] = {}
        """controller -> the directory made for this sandbox (v2: the same one for all)."""
        self.applied: dict[str, str] = {}
        """limit ("memory", "processes", "cpu") -> the value written, as text."""
        self._mem_node: Any = None
        self._fds: dict[str, int] = {}
        self._counts: tuple[int, int] | None = None
        self._subdirs: list[str] = []
        self._join: list[str] | None = None
        self.work_procs_files: list[str] = []
        """``cgroup.procs`` of the workload's own groups (native children are moved there)."""
        self.work_tasks_files: list[str] = []
        """v1: ``tasks`` of the workload's groups, with two slots in pids.max for the
        runner's threads there (``_RUNNER_THREADS_IN_WORK``). Each moves itself in once
        (writing "0": no global lock) and every native child is then born in the group. Moving each child by pid into
        cgroup.procs instead takes the kernel's global threadgroup lock, whose entry waits
        for an RCU grace period when no move happened lately: ~8 ms per command measured
        here when commands are 50 ms apart (1 ms back to back), and the child could fork
        before it was moved."""
        self._oom0 = 0
        self._pids0 = 0
        want = {"memory": memory is not None, "pids": pids is not None,
                "cpu": cpu_quota is not None}
        for parent in set(host.dirs.values()) - _swept:
            _swept.add(parent)
            sweep_stale(parent)
        try:
            if host.version == 1:
                self._make_v1(host, want, memory, pids, cpu_quota, runner_pids)
            elif host.version == 2:
                self._make_v2(host, want, memory, pids, cpu_quota, runner_pids)
        except BaseException:
            self.close()
            raise

    # -- creation ------------------------------------------------------------------------
    def _make_v1(self, host: CgroupHost, want: dict[str, bool], memory: int | None,
                 pids: int | None, cpu_quota: float | None, runner_pids: int) -> None:
        if want["memory"] and host.usable("memory"):
            node = self._cgroupspy_node(host.dirs["memory"], "memory")
            if node is not None:
                child = node.create_cgroup(self.name)
                self.dirs["memory"] = child.full_path.decode()
                ctl = child.controller
                ctl.limit_in_bytes = int(memory)  # type: ignore[arg-type]
                try:
                    # RAM + swap together; the file exists only with swap accounting
                    ctl.memsw_limit_in_bytes = int(memory)  # type: ignore[arg-type]
                except OSError as e:
                    if e.errno != errno.ENOENT:
                        raise
                self._mem_node = child
            else:
                self.dirs["memory"] = self._mkdir(host.dirs["memory"])
                _write(os.path.join(self.dirs["memory"], "memory.limit_in_bytes"), int(memory))  # type: ignore[arg-type]
            try:
                # (attack10) v1 charges socket buffers (TCP, UDP) to a group only once its
                # tcp limit is set: 150 loopback connections held 559 MiB of them in a
                # 256 MiB group. Setting it both counts and caps them (separately from the
                # limit above, so the sandbox's total stays within twice its limit).
                _write(os.path.join(self.dirs["memory"], "memory.kmem.tcp.limit_in_bytes"),
                       int(memory))  # type: ignore[arg-type]
            except OSError:
                pass   # (no such file: this kernel charges them with the rest, or not at all)
            self.applied["memory"] = str(memory)
        if want["pids"] and host.usable("pids"):
            # by hand: cgroupspy knows no pids controller. The workload gets a group of its
            # own below the sandbox's, so it can never take the runner's tasks.
            d = self.dirs["pids"] = self._mkdir(host.dirs["pids"])
            # +2 in both: two of the runner's threads live in the workload's group (v1 lets
            # a thread of a process sit in another group), the launcher's spawner and the
            # run thread, so every child is born there instead of being moved after its
            # start (see work_tasks_files and NativeLauncher.adopt_run_thread)
            _write(os.path.join(d, "pids.max"), int(pids) + _RUNNER_THREADS_IN_WORK + _RUNNER_PIDS + runner_pids)  # type: ignore[arg-type]
            os.mkdir(os.path.join(d, "work"))
            self._subdirs.append(os.path.join(d, "work"))
            _write(os.path.join(d, "work", "pids.max"), int(pids) + _RUNNER_THREADS_IN_WORK)  # type: ignore[arg-type]
            self.work_procs_files.append(os.path.join(d, "work", "cgroup.procs"))
            self.work_tasks_files.append(os.path.join(d, "work", "tasks"))
            self.applied["processes"] = str(pids)
        if want["cpu"] and host.usable("cpu"):
            quota = max(1000, int(float(cpu_quota) * _PERIOD_US))  # type: ignore[arg-type]
            node = self._cgroupspy_node(host.dirs["cpu"], "cpu")
            if node is not None:
                child = node.create_cgroup(self.name)
                self.dirs["cpu"] = child.full_path.decode()
                child.controller.cfs_period_us = _PERIOD_US
                child.controller.cfs_quota_us = quota
            else:
                d = self.dirs["cpu"] = self._mkdir(host.dirs["cpu"])
                _write(os.path.join(d, "cpu.cfs_period_us"), _PERIOD_US)
                _write(os.path.join(d, "cpu.cfs_quota_us"), quota)
            self.applied["cpu"] = f"{quota}/{_PERIOD_US}"

    @staticmethod
    def _cgroupspy_node(own_dir: str, controller: str) -> Any:
        """A cgroupspy node for ``own_dir`` inside the ``controller`` hierarchy, built from its
        path (not by scanning the whole tree), or None when the layout is not cgroupspy's
        (``<mounts>/<controller>/...``) or cgroupspy is missing."""
        try:
            from cgroupspy.nodes import Node
        except ImportError:
            return None
        parts = own_dir.strip("/").split("/")
        try:
            i = parts.index(controller)
        except ValueError:
            return None
        node = Node(("/" + "/".join(parts[:i])).encode())
        for p in parts[i:]:
            node = Node(p.encode(), parent=node)
        return node if node.controller is not None else None

    def _mkdir(self, parent: str) -> str:
        d = os.path.join(parent, self.name)
        os.mkdir(d)
        return d

    def _make_v2(self, host: CgroupHost, want: dict[str, bool], memory: int | None,
                 pids: int | None, cpu_quota: float | None, runner_pids: int) -> None:
        parent = next(iter(host.dirs.values()))
        d = self._mkdir(parent)
        for c in ("memory", "pids", "cpu"):
            self.dirs[c] = d
        # no process may sit in a v2 group whose children have controllers: the runner and
        # the workload get a leaf each
        for leaf in ("runner", "work"):
            os.mkdir(os.path.join(d, leaf))
            self._subdirs.append(os.path.join(d, leaf))
        self._join = [os.path.join(d, "runner", "cgroup.procs")]
        if want["memory"] and host.usable("memory"):
            _write(os.path.join(d, "memory.max"), int(memory))  # type: ignore[arg-type]
            try:
                _write(os.path.join(d, "memory.swap.max"), 0)  # memory.max is then RAM+swap
            except OSError as e:
                if e.errno != errno.ENOENT:
                    raise
            self.applied["memory"] = str(memory)
        if want["pids"] and host.usable("pids"):
            _write(os.path.join(d, "pids.max"), int(pids) + _RUNNER_PIDS + runner_pids)  # type: ignore[arg-type]
            _write(os.path.join(d, "cgroup.subtree_control"), "+pids")
            _write(os.path.join(d, "work", "pids.max"), int(pids))  # type: ignore[arg-type]
            self.work_procs_files.append(os.path.join(d, "work", "cgroup.procs"))
            self.applied["processes"] = str(pids)
        if want["cpu"] and host.usable("cpu"):
            quota = max(1000, int(float(cpu_quota) * _PERIOD_US))  # type: ignore[arg-type]
            _write(os.path.join(d, "cpu.max"), f"{quota} {_PERIOD_US}")
            self.applied["cpu"] = f"{quota}/{_PERIOD_US}"

    def no_runner_threads_in_work(self) -> None:
        """v1: the runner reported that its threads are not in the workload's pids group
        (its spawner could not join it): that group's pids.max loses their slots. Called
        at start-up, before the first run."""
        if self.version != 1 or "processes" not in self.applied:
            return
        for f in self.work_procs_files:
            try:
                _write(os.path.join(os.path.dirname(f), "pids.max"), int(self.applied["processes"]))
            except OSError:
                pass

    # -- the sandbox side -----------------------------------------------------------------
    @property
    def procs_files(self) -> list[str]:
        """``cgroup.procs`` files the sandbox's first process joins."""
        if self._join is not None:
            return list(self._join)
        return sorted({os.path.join(d, "cgroup.procs") for d in self.dirs.values()})

    @property
    def pids_events_files(self) -> list[str]:
        """``pids.events`` of the sandbox's pids group and of the workload's below it (the
        runner reads them through descriptors S1 opens, to see its own run's refused forks)."""
        if "processes" not in self.applied:
            return []
        return [os.path.join(self.dirs["pids"], "pids.events")] + [
            os.path.join(os.path.dirname(f), "pids.events") for f in self.work_procs_files]

    @property
    def memory_counter_files(self) -> dict[str, Any]:
        """The memory group's peak (written to reset it) and OOM-kill counter files, which S1
        opens for the runner: it reads them around each run, so the host reads nothing."""
        if "memory" not in self.applied:
            return {}
        d = self.dirs["memory"]
        return {"peak": self._peak_path(), "reset": "0" if self.version == 1 else "r",
                "oom": os.path.join(d, "memory.oom_control" if self.version == 1
                                    else "memory.events")}

    def _all_procs_files(self) -> list[str]:
        return sorted({os.path.join(d, "cgroup.procs") for d in self.dirs.values()}
                      | {os.path.join(d, "cgroup.procs") for d in self._subdirs})

    # -- per run --------------------------------------------------------------------------
    # Opening a cgroup file costs ~50 us, reading an open one ~1 us: the files read on every
    # run stay open (``_fds``) and the counters' values at the end of a run are the next
    # run's start.
    def _fd(self, path: str, flags: int = os.O_RDONLY) -> int | None:
        fd = self._fds.get(path)
        if fd is None:
            try:
                fd = self._fds[path] = os.open(path, flags | os.O_CLOEXEC)
            except OSError:
                return None
        return fd

    def _counter_at(self, path: str, key: str) -> int:
        fd = self._fd(path)
        if fd is None:
            return 0
        try:
            for line in _pread(fd, 4096).decode().splitlines():
                k, _, v = line.partition(" ")
                if k == key:
                    return int(v)
        except (OSError, ValueError):
            pass
        return 0

    def _oom_kills(self) -> int:
        if "memory" not in self.applied:
            return 0
        return self._counter_at(os.path.join(self.dirs["memory"], "memory.oom_control"
                                             if self.version == 1 else "memory.events"),
                                "oom_kill")

    def _pids_refusals(self) -> int:
        """Forks refused at pids.max, in the sandbox's group or the workload's below it (each
        counts where its own limit was hit)."""
        if "processes" not in self.applied:
            return 0
        n = self._counter_at(os.path.join(self.dirs["pids"], "pids.events"), "max")
        for f in self.work_procs_files:
            n += self._counter_at(os.path.join(os.path.dirname(f), "pids.events"), "max")
        return n

    def _peak_path(self) -> str:
        return os.path.join(self.dirs["memory"], "memory.max_usage_in_bytes"
                            if self.version == 1 else "memory.peak")

    def begin_run(self) -> None:
        """Reset the peak and remember the counters before a run."""
        if self._counts is None:
            self._counts = (self._oom_kills(), self._pids_refusals())
        if "memory" not in self.applied:
            return
        fd = self._fd(self._peak_path(), os.O_RDWR)
        if fd is not None:
            try:
                # v1: any write resets the peak; v2 (Linux >= 6.12): resets it for this fd
                os.lseek(fd, 0, os.SEEK_SET)
                os.write(fd, b"0" if self.version == 1 else b"r")
            except OSError:
                pass

    def end_run(self) -> dict[str, Any]:
        """``peak_memory`` (bytes, None if unknown), ``oom_killed`` and ``pids_refused`` (counts)
        for the run since ``begin_run``."""
        peak: int | None = None
        if "memory" in self.applied:
            fd = self._fd(self._peak_path(), os.O_RDWR)
            try:
                peak = int(_pread(fd, 64)) if fd is not None else None
            except (OSError, ValueError):
                peak = None
        counts = (self._oom_kills(), self._pids_refusals())
        before = self._counts or counts
        self._counts = counts
        return {"peak_memory": peak, "oom_killed": counts[0] - before[0],
                "pids_refused": counts[1] - before[1]}

    # -- teardown -------------------------------------------------------------------------
    def _procs(self) -> list[int]:
        out: set[int] = set()
        for p in self._all_procs_files():
            try:
                out.update(int(x) for x in _read(p).split())
            except (OSError, ValueError):
                pass
        return sorted(out)

    def close(self, timeout: float = 5.0, linger: bool = True) -> bool:
        """Kill every process still in the groups, then remove the directories (idempotent).
        True when nothing is left; otherwise (processes that take longer than ``timeout`` to
        exit, e.g. 32 closing ~19,000 descriptors each) and with ``linger``, a background
        thread of this process goes on killing and removing for up to _LINGER_FOR seconds."""
        for fd in self._fds.values():
            try:
                os.close(fd)
            except OSError:
                pass
        self._fds.clear()
        if not self.dirs:
            return True
        end = time.monotonic() + timeout
        if self.version == 2:
            d = next(iter(self.dirs.values()))
            try:
                _write(os.path.join(d, "cgroup.kill"), 1)
            except OSError:
                pass
        while True:
            procs = self._procs()
            if not procs:
                break
            for pid in procs:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            if time.monotonic() > end:
                break
            time.sleep(0.01)
        for d in sorted(self._subdirs, reverse=True):
            self._rmdir(d, end)
        self._subdirs = [d for d in self._subdirs if os.path.isdir(d)]
        left = {}
        for c, d in sorted(self.dirs.items()):
            if not os.path.isdir(d):
                continue
            if not self._rmdir(d, end):
                left[c] = d
        self.dirs = left
        if left and linger:
            _linger(self)
        return not left

    @staticmethod
    def _rmdir(d: str, end: float) -> bool:
        while True:
            try:
                os.rmdir(d)
                return True
            except FileNotFoundError:
                return True
            except OSError:
                # EBUSY for a moment after the last task exited
                if time.monotonic() > end:
                    return False
                time.sleep(0.01)

    def __repr__(self) -> str:
        return f"<SandboxCgroups {self.backend} {self.applied}>"


_LINGER_FOR = 300.0
_LINGER_STEP = 0.2
_lingering: list[tuple[SandboxCgroups, float]] = []
_linger_lock = threading.Lock()
_linger_thread: list[threading.Thread] = []
_linger_atexit: list[bool] = []


def _linger(g: SandboxCgroups) -> None:
    """Groups a close() could not remove yet: retried on one daemon thread (a long-lived host
    process would otherwise keep them until it exits and a later one sweeps them)."""
    with _linger_lock:
        if any(x is g for x, _ in _lingering):
            return
        _lingering.append((g, time.monotonic() + _LINGER_FOR))
        if not _linger_thread or not _linger_thread[0].is_alive():
            t = threading.Thread(target=_linger_loop, name="agentic-bash-cgroup-linger",
                                 daemon=True)
            _linger_thread[:] = [t]
            t.start()
        if not _linger_atexit:
            _linger_atexit.append(True)
            atexit.register(_linger_at_exit)


def _linger_at_exit(budget: float = 10.0) -> None:
    """At the host process's exit (the daemon thread dies with it): a last, bounded go at the
    groups still lingering (a harness that closes a sandbox and exits at once left one whose
    tasks took a few seconds more to die: session 13 CI)."""
    end = time.monotonic() + budget
    while True:
        with _linger_lock:
            items = [g for g, _ in _lingering]
        if not items:
            return
        for g in items:
            try:
                if g.close(timeout=0, linger=False):
                    with _linger_lock:
                        _lingering[:] = [(x, u) for x, u in _lingering if x is not g]
            except Exception:  # noqa: BLE001 - never fails the exit
                pass
        if time.monotonic() > end:
            return
        time.sleep(0.05)


def _linger_loop() -> None:
    while True:
        time.sleep(_LINGER_STEP)
        with _linger_lock:
            items = list(_lingering)
        gone = []
        for g, until in items:
            try:
                done = g.close(timeout=0, linger=False)
            except Exception:  # noqa: BLE001 - never ends the retries of the others
                done = False
            if done or time.monotonic() > until:
                gone.append(g)
        with _linger_lock:
            _lingering[:] = [(g, u) for g, u in _lingering if not any(g is x for x in gone)]
            if not _lingering:
                _linger_thread.clear()
                return
