"""Which backend enforces each resource limit of a sandbox (pure planning), and the host side that sets them up, reads usage back per run and cleans up."""

from __future__ import annotations

import dataclasses
import os
from typing import Any, Mapping

from ..errors import IsolationUnavailable, PolicyViolation
from .cgroups import CgroupHost, SandboxCgroups, detect_cached

__all__ = ["LIMIT_MECHANISMS", "ResourceControl", "asked_limits", "plan_resources",
           "unowned_caps"]

LIMIT_MECHANISMS: dict[str, str] = {
    "memory": "memory_limit", "processes": "process_limit", "cpu": "cpu_limit",
    "file_size": "file_size_limit", "open_files": "open_files_limit", "disk": "disk_limit",
}
"""limit -> its key in ``IsolationReport.mechanisms``."""

RUNNER_SLACK = 8
"""Unprivileged (RLIMIT_NPROC counts every task of the sandbox's user): extra room in the
runner's own limit for the threads it adds during a run (a spawn, a pump), on top of
``watchdog.NPROC_*`` and the background jobs' threads."""

WATCHDOG_INTERVAL = 0.05

MiB = 1 << 20
RUNNER_RESERVE = 32 * MiB
"""(attack13) Room in a memory cgroup kept out of reach of memory that no process owns (see
``unowned_caps``), plus a sixteenth of the limit: the runner's two processes (10-22 MiB
measured) and their growth in a run (a command's output, the shell's values)."""


def unowned_caps(memory: int | None, fs_bytes: int | None) -> dict[str, int] | None:
    """(attack13) Where a memory cgroup enforces ``memory``: how big the sandbox's session
    tmpfs and ``/dev/shm`` may be, and its SysV shared memory, so that all of it together
    stays below the limit less ``RUNNER_RESERVE`` and a sixteenth. None where no cap is needed.

    Files in a tmpfs and SysV segments are memory no process owns: killing processes frees
    none of it. Before, a root sandbox of 128 MiB whose ``/tmp`` or ``/dev/shm`` was filled
    to the limit (the session layer's default is 1 GiB) left the OOM killer nothing to pick
    but the runner: every later command ended in ``SandboxCrashed``, and the restart re-filled
    the layer. A tmpfs costs up to 2.25 times its size (its bytes, and ~1.25 KiB of inode a
    KiB: ``rootfs._inodes``). Past a cap, writes fail with ENOSPC (shmget with ENOSPC/EINVAL)."""
    if not memory:
        return None
    room = int(memory) - RUNNER_RESERVE - int(memory) // 16
    sysv = max(1 * MiB, int(memory) // 32)
    room -= sysv
    want = int(fs_bytes) if fs_bytes else None
    # a tmpfs costs up to 2.25x its size (an inode ~1.25 KiB measured, one per KiB);
    # /dev/shm gets an eighth of what is left, the session layer the rest
    total = max(0, room) * 4 // 9
    shm = max(1 * MiB, total // 8)
    if want is not None:
        shm = min(shm, want)
    layer = max(1 * MiB, total - shm)
    if want is not None:
        layer = min(layer, want)
    return {"layer": layer, "shm": shm, "sysv": sysv}


def asked_limits(limits: Any) -> dict[str, Any]:
    """The OS-level limits ``limits`` asks for: limit name -> value."""
    out = {"memory": limits.max_memory_bytes, "processes": limits.max_processes,
           "cpu": limits.cpu_quota, "file_size": limits.max_file_bytes,
           "open_files": limits.max_open_files, "disk": limits.max_fs_bytes}
    return {k: v for k, v in out.items() if v is not None}


def _kernel_at_least(release: str, want: tuple[int, int]) -> bool:
    try:
        major, minor = release.split(".")[:2]
        return (int(major), int("".join(ch for ch in minor if ch.isdigit()) or 0)) >= want
    except ValueError:
        return False


def plan_resources(limits: Any, *, level: str, session_layer: str, cg: CgroupHost,
                   sandbox_uid_is_root: bool, kernel: str) -> dict[str, str]:
    """Pure: limit name -> ``cgroup-v1`` | ``cgroup-v2`` | ``rlimit`` | ``watchdog`` |
    ``tmpfs`` | ``unavailable: <reason>``, for every limit ``limits`` asks for.

    ``sandbox_uid_is_root``: the sandbox's processes are kernel uid 0 (a root caller), which
    RLIMIT_NPROC exempts."""
    out: dict[str, str] = {}
    asked = asked_limits(limits)
    cgv = f"cgroup-v{cg.version}"
    if "memory" in asked:
        if cg.usable("memory"):
            out["memory"] = cgv
        elif level == "namespace":
            out["memory"] = "watchdog"
        else:
            out["memory"] = "unavailable: " + cg.reasons.get(
                "memory", "no memory cgroup") + "; the watchdog needs the namespace level"
    if "processes" in asked:
        if cg.usable("pids"):
            out["processes"] = cgv
        elif level != "namespace":
            out["processes"] = ("unavailable: " + cg.reasons.get("pids", "no pids cgroup")
                                + "; without a user namespace RLIMIT_NPROC counts all of "
                                "the caller's processes")
        elif sandbox_uid_is_root:
            out["processes"] = ("unavailable: " + cg.reasons.get("pids", "no pids cgroup")
                                + "; RLIMIT_NPROC does not apply to uid 0")
        elif not _kernel_at_least(kernel, (5, 14)):
            out["processes"] = (f"unavailable: kernel {kernel} counts RLIMIT_NPROC per user, "
                                "not per user namespace")
        else:
            out["processes"] = "rlimit"
    if "cpu" in asked:
        out["cpu"] = cgv if cg.usable("cpu") else "unavailable: " + cg.reasons.get(
            "cpu", "no cpu cgroup")
    if "file_size" in asked:
        out["file_size"] = "rlimit"
    if "open_files" in asked:
        out["open_files"] = "rlimit"
    if "disk" in asked:
        if level == "namespace" and session_layer == "tmpfs":
            out["disk"] = "tmpfs"
        elif level == "namespace":
            out["disk"] = "unavailable: the session layer is on disk (tmpfs here has no user xattrs)"
        else:
            out["disk"] = "unavailable: the landlock level writes to a real workspace directory"
    return out


def _job_threads(limits: Any) -> int:
    """Threads the interpreter may add for background jobs (``Limits.max_jobs``, each with
    room for a helper thread): they belong to the runner's budget, not the workload's."""
    return 2 * int(limits.max_jobs or 0)


def _refusals(backends: Mapping[str, str], allow_watchdog: bool) -> list[str]:
    bad = [f"{k} ({v.removeprefix('unavailable: ')})" for k, v in backends.items()
           if v.startswith("unavailable")]
    if not allow_watchdog and backends.get("memory") == "watchdog":
        bad.append("memory (only a watchdog here; pass Limits(allow_watchdog=True) to accept it)")
    return bad


def _fmt_bytes(n: int) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size and n % size == 0:
            return f"{n // size} {unit}"
    return f"{n} bytes"


class ResourceControl:
    """Host side of one sandbox's limits: plans the backends, makes the cgroups before the
    sandbox starts (``cfg`` goes into the runner's start-up config), adds the report entries,
    and turns the run's usage into ``Result`` fields. Raises ``IsolationUnavailable`` with
    ``strict`` when an asked-for limit cannot be enforced."""

    def __init__(self, limits: Any, *, level: str, session_layer: str, strict: bool,
                 euid: int, cg: CgroupHost | None = None) -> None:
        self.limits = limits
        self.cg_host = cg if cg is not None else detect_cached()
        plan_args = dict(level=level, session_layer=session_layer,
                         sandbox_uid_is_root=euid == 0, kernel=os.uname().release)
        self.backends = plan_resources(limits, cg=self.cg_host, **plan_args)
        self.cgroups: SandboxCgroups | None = None
        self._runner_counts = False
        b = self.backends
        if any(v.startswith("cgroup") for v in b.values()):
            try:
                self.cgroups = SandboxCgroups(
                    self.cg_host,
                    memory=limits.max_memory_bytes if b.get("memory", "").startswith("cgroup") else None,
                    pids=limits.max_processes if b.get("processes", "").startswith("cgroup") else None,
                    runner_pids=_job_threads(limits),
                    cpu_quota=limits.cpu_quota if b.get("cpu", "").startswith("cgroup") else None)
            except OSError as e:
                # a group that could not be made (or written) is planned again as if the
                # hierarchy were not ours: the watchdog and rlimits where they apply
                why = f"could not make the sandbox's cgroup ({e.strerror or e})"
                self.backends = plan_resources(
                    limits, cg=CgroupHost(0, {}, {c: why for c in ("memory", "pids", "cpu")}),
                    **plan_args)
        if strict:
            bad = _refusals(self.backends, bool(getattr(limits, "allow_watchdog", False)))
            if bad:
                self.close()
                raise IsolationUnavailable("strict: cannot enforce the limits asked for: "
                                           + "; ".join(bad))

    @property
    def cfg(self) -> dict[str, Any]:
        """What the runner needs: cgroup.procs files to join, rlimits, the watchdog."""
        lim = self.limits
        b = self.backends
        rl: dict[str, int] = {"CORE": 0}
        if "file_size" in b:
            rl["FSIZE"] = int(lim.max_file_bytes)
        if "open_files" in b:
            rl["NOFILE"] = int(lim.max_open_files)
        out: dict[str, Any] = {
            "cgroups": self.cgroups.procs_files if self.cgroups else [],
            "work_cgroups": self.cgroups.work_procs_files if self.cgroups else [],
            "work_tasks": self.cgroups.work_tasks_files if self.cgroups else [],
            "pids_events": self.cgroups.pids_events_files if self.cgroups else [],
            "memory_counters": self.cgroups.memory_counter_files if self.cgroups else {},
            "rlimits": rl, "ignore_sigxfsz": "file_size" in b, "oom_score_adj": 1000,
            "nproc": int(lim.max_processes) if b.get("processes") == "rlimit" else None,
            "runner_slack": RUNNER_SLACK + _job_threads(lim),
            "max_processes": lim.max_processes,
        }
        if b.get("memory", "").startswith("cgroup"):
            caps = unowned_caps(lim.max_memory_bytes, getattr(lim, "max_fs_bytes", None))
            if caps:
                out["unowned"] = caps
        if b.get("memory") == "watchdog":
            out["watchdog"] = {"memory": int(lim.max_memory_bytes),
                               "interval": WATCHDOG_INTERVAL}
        else:
            # pid 1 still bounds the sandbox's share of the machine's open-file table, which
            # no cgroup does (watchdog.s2_wait_with_fd_guard; the watchdog does it otherwise)
            out["fd_guard"] = True
        return out

    def report(self, report: Any, observed: Mapping[str, Any]) -> Any:
        """``report`` with one entry per asked limit, verified against what the runner saw."""
        mech = dict(report.mechanisms)
        notes = list(report.notes)
        warns = list(report.warnings)
        seen = observed.get("limits", {}) or {}
        joined = set(seen.get("cgroups_joined", ()))
        lim = self.limits
        for name, backend in self.backends.items():
            key = LIMIT_MECHANISMS[name]
            value = backend
            if backend.startswith("cgroup"):
                want = self.cgroups.procs_files if self.cgroups else []
                if not want or not joined.issuperset(want):
                    value = f"unavailable: not applied ({seen.get('cgroup_error') or 'the sandbox did not join its cgroup'})"
            elif backend == "rlimit":
                rl = seen.get("rlimits", {})
                res = {"file_size": "FSIZE", "open_files": "NOFILE", "processes": "NPROC"}[name]
                if res not in rl:
                    value = "unavailable: not applied (the runner did not set RLIMIT_" + res + ")"
            elif backend == "watchdog":
                if not seen.get("watchdog"):
                    value = "unavailable: not applied (the runner's watchdog did not start)"
            elif backend == "tmpfs":
                if not seen.get("tmpfs_sized"):
                    value = "unavailable: not applied (no size on the session tmpfs)"
            if not value.startswith("unavailable"):
                value = f"enforced by {value}"
            mech[key] = value
            if value.startswith("unavailable"):
                warns.append(f"{name} limit {value}")
        parts = []
        on = {k for k in self.backends if mech[LIMIT_MECHANISMS[k]].startswith("enforced")}
        if "memory" in on:
            parts.append(f"memory {_fmt_bytes(int(lim.max_memory_bytes))} for the whole sandbox")
        if "processes" in on:
            parts.append(f"{lim.max_processes} processes")
        if getattr(lim, "max_process_memory", None) is not None:
            parts.append(f"{_fmt_bytes(int(lim.max_process_memory))} of private memory per "
                         + ("program (RLIMIT_DATA, set in the child before its exec)"
                            if observed.get("fast_spawn") == "compiled" else
                            "program (RLIMIT_DATA, set right after its spawn; a program that "
                            "allocated past it before the runner reached it is killed)"))
        if "cpu" in on:
            parts.append(f"{lim.cpu_quota:g} CPU")
        if "file_size" in on:
            parts.append(f"files up to {_fmt_bytes(int(lim.max_file_bytes))}")
        if "disk" in on:
            parts.append(f"{_fmt_bytes(int(lim.max_fs_bytes))} for the session layer, /tmp "
                         "and /dev/shm each")
        if parts:
            notes.append("limits: " + ", ".join(parts))
        if self.backends.get("memory") == "watchdog" and mech.get("memory_limit", "").startswith("enforced"):
            notes.append("memory watchdog: the runner samples every "
                         f"{WATCHDOG_INTERVAL * 1000:.0f} ms (anonymous and shared memory, "
                         "memfds held open, SysV segments, tmpfs, unix/TCP/UDP socket buffers "
                         "every 250 ms) and kills the largest process; a program's memfd is a "
                         "file of the sandbox's /dev/shm (counted; it cannot be sealed, "
                         "nor executed while open for writing); "
                         "weaker than a cgroup (a fast allocation can overshoot between samples; "
                         "pipe buffers and kernel objects per descriptor are not seen)")
        return dataclasses.replace(report, mechanisms=mech, notes=tuple(notes),
                                   warnings=tuple(warns))

    # -- per run --------------------------------------------------------------------------
    def runner_counts(self, observed: Mapping[str, Any]) -> None:
        """After start-up: when the runner holds every cgroup counter file (S1 opened them),
        it reads peak memory, OOM kills and refused forks around each run itself, in the
        sandbox, and the host's per-run reads (5 files, ~20 us a call) are skipped."""
        seen = observed.get("limits", {}) or {}
        c = self.cgroups
        if c is None:
            return
        if seen.get("spawner_in_group") is False:
            # none of the runner's threads could join the workload's group (children are
            # moved there one by one): its limit goes back to max_processes exactly
            c.no_runner_threads_in_work()
        want_mem = bool(c.memory_counter_files)
        want_pids = len(c.pids_events_files)
        self._runner_counts = ((not want_mem or bool(seen.get("memory_counters")))
                               and seen.get("pids_events_opened", 0) == want_pids)

    def begin_run(self) -> None:
        if self.cgroups is not None and not self._runner_counts:
            self.cgroups.begin_run()

    def end_run(self, r: Any) -> Any:
        """The Result with the cgroup's figures: peak memory, and ``limit_exceeded`` when the
        kernel OOM-killed or refused a fork during the run (unless the runner reads them)."""
        if self.cgroups is None or self._runner_counts:
            return r
        u = self.cgroups.end_run()
        changes: dict[str, Any] = {}
        if u["peak_memory"] is not None:
            changes["peak_memory"] = u["peak_memory"]
        exceeded = r.limit_exceeded
        if u["oom_killed"] > 0:
            exceeded = "memory"
        elif u["pids_refused"] > 0 and exceeded in (None, "timeout"):
            exceeded = "processes"
        if exceeded != r.limit_exceeded:
            changes["limit_exceeded"] = exceeded
            if exceeded in ("memory", "processes") and not any(
                    v.kind == "limit" for v in r.violations):
                detail = ("memory: out of memory in the sandbox, the largest workload process "
                          "was killed" if exceeded == "memory" else
                          "processes: a fork was refused at the process limit")
                changes["violations"] = tuple(r.violations) + (PolicyViolation("limit", detail),)
        return dataclasses.replace(r, **changes) if changes else r

    def close(self) -> bool:
        return self.cgroups.close() if self.cgroups is not None else True
