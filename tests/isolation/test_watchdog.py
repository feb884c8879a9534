"""The runner's side of the limits: the page shared with the watchdog, per-run figures, /proc sampling."""

from __future__ import annotations

import os
import sys

import pytest

from agentic_bash.isolation import watchdog as wd
from agentic_bash.result import Result

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux /proc")


def _replace(r: Result, **kw):  # noqa: ANN003
    import dataclasses
    return dataclasses.replace(r, **kw)


def test_page_is_shared_across_fork() -> None:
    page = wd.WatchdogPage()
    page.set("peak", 123)
    pid = os.fork()
    if pid == 0:
        page.set("kills", page.get("kills") + 7)
        page.set("last", -5)
        os._exit(0 if page.get("peak") == 123 else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert page.get("kills") == 7 and page.get("last") == -5


def test_usage_reads_the_watchdogs_figures_for_this_run_only() -> None:
    page = wd.WatchdogPage()
    page.set("kills", 2)   # an earlier run's
    page.set("at_max", 4)
    u = wd.S3Usage({"_watchdog_page": page})
    u.begin()
    gen = page.get("gen")
    # the watchdog samples during the run
    page.set("seen", gen)
    page.set("peak", 90 << 20)
    page.set("last", 10 << 20)
    u.ran()
    r = u.end(Result(), _replace)
    assert r.peak_memory == 90 << 20 and r.limit_exceeded is None and r.cpu_time >= 0
    u.begin()
    page.set("kills", 3)   # killed during this run
    r = u.end(Result(exit_code=137), _replace)
    assert r.limit_exceeded == "memory" and [v.kind for v in r.violations] == ["limit"]
    # no sample since begin: the last total stands in for the peak
    assert r.peak_memory == 10 << 20
    u.begin()
    page.set("at_max", 5)
    r = u.end(Result(), _replace)
    assert r.limit_exceeded == "processes"


def test_an_interpreter_limit_is_kept_and_memory_wins() -> None:
    page = wd.WatchdogPage()
    u = wd.S3Usage({"_watchdog_page": page})
    u.begin()
    r = u.end(Result(limit_exceeded="output"), _replace)
    assert r.limit_exceeded == "output"
    u.begin()
    page.set("kills", 1)
    r = u.end(Result(limit_exceeded="timeout", timed_out=True), _replace)
    assert r.limit_exceeded == "memory"


def test_file_size_is_reported_for_a_file_at_the_cap(tmp_path) -> None:
    f = tmp_path / "f"
    f.write_bytes(b"x" * 1000)
    u = wd.S3Usage({"resources": {"rlimits": {"FSIZE": 1000}}})
    u.begin()
    assert u.end(Result(files_created=(str(f),)), _replace).limit_exceeded == "file_size"
    u = wd.S3Usage({"resources": {"rlimits": {"FSIZE": 1001}}})
    u.begin()
    assert u.end(Result(files_modified=(str(f),)), _replace).limit_exceeded is None


def test_sample_counts_this_process_and_refines_only_past_the_limit(monkeypatch) -> None:  # noqa: ANN001
    me = os.getpid()
    real = os.listdir
    # the sandbox's /proc shows its own few processes; this host's shows hundreds
    monkeypatch.setattr(os, "listdir", lambda p=".": [str(me), "self"] if p == "/proc" else real(p))
    total, n, procs = wd.sample()
    assert n >= 1 and any(pid == me for _, pid in procs)
    mine = dict((pid, v) for v, pid in procs)[me]
    assert mine > 0 and total >= mine
    # past a (tiny) limit the figures are proportional ones, never more than statm's
    total2, _, procs2 = wd.sample(limit=1, known={me: 4096})
    assert dict((pid, v) for v, pid in procs2)[me] == 4096
    assert wd.pss_anon("self") is not None


def test_s1_join_moves_itself_through_tasks_when_single_threaded(tmp_path, monkeypatch) -> None:  # noqa: ANN001
    """A v1 hierarchy (it has ``tasks``) is joined by writing "0" there when the process is
    single-threaded (no global lock, no RCU grace period); otherwise, and on v2, the pid
    goes to cgroup.procs. Either way the group counts as joined for the report."""
    import os

    from agentic_bash.isolation import watchdog as wd
    v1, v2 = tmp_path / "v1", tmp_path / "v2"
    for d in (v1, v2):
        d.mkdir()
        (d / "cgroup.procs").write_text("")
    (v1 / "tasks").write_text("")
    for single in (True, False):
        for d in (v1, v2):
            (d / "cgroup.procs").write_text("")
        (v1 / "tasks").write_text("")
        monkeypatch.setattr(wd, "_single_threaded", lambda single=single: single)
        cfg = {"resources": {"cgroups": [str(v1 / "cgroup.procs"), str(v2 / "cgroup.procs")]}}
        wd.s1_join(cfg)
        assert cfg["limits_observed"]["cgroups_joined"] == [str(v1 / "cgroup.procs"),
                                                            str(v2 / "cgroup.procs")]
        assert (v2 / "cgroup.procs").read_text() == str(os.getpid())
        if single:
            assert (v1 / "tasks").read_text() == "0"
            assert (v1 / "cgroup.procs").read_text() == ""
        else:
            assert (v1 / "tasks").read_text() == ""
            assert (v1 / "cgroup.procs").read_text() == str(os.getpid())


def test_single_threaded_sees_threads() -> None:
    import threading

    from agentic_bash.isolation.watchdog import _single_threaded
    ev = threading.Event()
    t = threading.Thread(target=ev.wait)
    t.start()
    try:
        assert not _single_threaded()
    finally:
        ev.set()
        t.join()


def test_memory_cgroup_counters_read_in_the_runner(tmp_path) -> None:  # noqa: ANN001
    """With the memory group's files opened by S1, S3 resets the peak before each run, reads
    it after, and reports an OOM kill of the run (host-side reads are then skipped)."""
    peak, oom = tmp_path / "memory.max_usage_in_bytes", tmp_path / "memory.oom_control"
    peak.write_text("123\n")
    oom.write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 2\n")
    fds = (os.open(peak, os.O_RDWR), os.open(oom, os.O_RDONLY))
    try:
        u = wd.S3Usage({"_memory_fds": (fds[0], fds[1], b"0")})
        u.begin()
        assert peak.read_text().startswith("0")   # reset
        peak.write_text("5678\n")
        r = u.end(Result(), _replace)
        assert r.peak_memory == 5678 and r.limit_exceeded is None and not r.violations
        u.begin()
        oom.write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 3\n")
        r = u.end(Result(exit_code=137, limit_exceeded="timeout"), _replace)
        assert r.limit_exceeded == "memory"
        assert [v.detail for v in r.violations] == [
            "memory: out of memory in the sandbox, the largest workload process was killed"]
        u.begin()   # counted from here: the earlier kill is not this run's
        assert u.end(Result(), _replace).limit_exceeded is None
    finally:
        for fd in fds:
            os.close(fd)


def test_full_tmpfs_is_checked_only_after_runs_that_could_write(monkeypatch) -> None:  # noqa: ANN001
    calls: list[str] = []

    class St:
        f_bavail, f_frsize = 0, 4096   # full
    monkeypatch.setattr(os, "statvfs", lambda p: calls.append(p) or St())
    native = type("N", (), {"spawned": 0, "refused": 0})()
    u = wd.S3Usage({"level": "namespace", "layer_size": 1 << 20, "_native": native})
    u.begin()
    assert u.end(Result(), _replace).limit_exceeded is None and calls == []
    for r in (Result(exit_code=1), Result(files_created=("/tmp/x",)),
              Result(files_modified=("/tmp/x",))):
        u.begin()
        assert u.end(r, _replace).limit_exceeded == "disk"
    u.begin()
    native.spawned = 1   # a program ran: it may have written
    assert u.end(Result(), _replace).limit_exceeded == "disk"


class _Files:
    """Stand-ins for the cgroup files S1 opens for S3 (pread/pwrite work on plain files),
    with a count of the reads S3 makes."""

    def __init__(self, tmp_path, monkeypatch) -> None:  # noqa: ANN001
        self.paths = {n: tmp_path / n for n in ("peak", "oom", "ev_sandbox", "ev_work", "cur")}
        self.set(peak=0, oom=0, ev_sandbox=0, ev_work=0, cur=1)   # 1: the spawner thread
        self.fds = {n: os.open(p, os.O_RDWR) for n, p in self.paths.items()}
        self.reads: list[str] = []
        names = {fd: n for n, fd in self.fds.items()}
        real = os.pread
        monkeypatch.setattr(wd.os, "pread", lambda fd, n, off: (
            self.reads.append(names.get(fd, "?")), real(fd, n, off))[1])

    def set(self, **kw: int) -> None:
        for n, v in kw.items():
            text = {"oom": f"oom_kill_disable 0\nunder_oom 0\noom_kill {v}\n",
                    "ev_sandbox": f"max {v}\n", "ev_work": f"max {v}\n"}.get(n, f"{v}\n")
            self.paths[n].write_text(text)

    def cfg(self, native) -> dict:  # noqa: ANN001
        f = self.fds
        return {"_memory_fds": (f["peak"], f["oom"], b"0"), "_native": native,
                "_pids_events_fds": [f["ev_sandbox"], f["ev_work"]],
                "_work_pids_current_fd": f["cur"]}

    def close(self) -> None:
        for fd in self.fds.values():
            os.close(fd)


def _native(in_group: bool = True):  # noqa: ANN202
    """A stand-in launcher: ``in_group`` = children are born in the workload's group."""
    w = type("W", (), {"in_group": in_group, "started": []})()
    return type("N", (), {"spawned": 0, "refused": 0, "_workload": w})()


def test_counter_reads_are_skipped_only_while_no_workload_process_exists(
        tmp_path, monkeypatch) -> None:  # noqa: ANN001
    files = _Files(tmp_path, monkeypatch)
    native = _native()
    from agentic_bash.executors import native as native_mod
    monkeypatch.setattr(native_mod, "threads_started", lambda: None)   # (no hook: see below)
    try:
        u = wd.S3Usage(files.cfg(native))
        # builtins only: the peak, and the sandbox group's refusals (the runner's own threads)
        files.reads.clear()
        u.begin()
        assert u.end(Result(), _replace).limit_exceeded is None
        assert sorted(files.reads) == ["ev_sandbox", "peak"]
        # a refused thread of the runner during a builtin-only run is still this run's
        u.begin()
        files.set(ev_sandbox=1)
        r = u.end(Result(), _replace)
        assert r.limit_exceeded == "processes"
        # a run that starts a program reads everything, and whether it left one behind
        u.begin()
        files.reads.clear()
        native.spawned += 1
        files.set(cur=2)   # a background job is still running
        assert u.end(Result(), _replace).limit_exceeded is None
        assert sorted(files.reads) == ["cur", "ev_sandbox", "ev_work", "oom", "peak"]
        # ... then, while it runs, between runs: its OOM kill and refused forks are not the
        # next run's (the next run reads the counters at its start)
        files.set(oom=1, ev_work=3, cur=1)
        files.reads.clear()
        u.begin()
        assert {"oom", "ev_work", "ev_sandbox"} <= set(files.reads)
        r = u.end(Result(), _replace)
        assert r.limit_exceeded is None and not r.violations
        # quiet again: an OOM kill with a program started during the run is seen
        u.begin()
        native.spawned += 1
        files.set(oom=2)
        assert u.end(Result(exit_code=137), _replace).limit_exceeded == "memory"
    finally:
        files.close()


def test_counters_are_read_again_when_something_started_a_program_between_runs(
        tmp_path, monkeypatch) -> None:  # noqa: ANN001
    files = _Files(tmp_path, monkeypatch)
    native = _native()
    try:
        u = wd.S3Usage(files.cfg(native))
        u.begin()
        u.end(Result(), _replace)
        native.spawned += 1            # not by a run (none should; if one did)
        files.set(ev_work=2, cur=1)
        files.reads.clear()
        u.begin()
        assert "ev_work" in files.reads
        assert u.end(Result(), _replace).limit_exceeded is None
    finally:
        files.close()


def test_no_reads_are_skipped_when_children_are_moved_after_they_start(
        tmp_path, monkeypatch) -> None:  # noqa: ANN001
    files = _Files(tmp_path, monkeypatch)
    try:
        u = wd.S3Usage(files.cfg(_native(in_group=False)))
        files.reads.clear()
        u.begin()
        files.set(oom=1)   # e.g. a grandchild left outside the workload's group
        assert u.end(Result(), _replace).limit_exceeded == "memory"
        assert {"oom", "ev_work"} <= set(files.reads)
    finally:
        files.close()


def test_a_builtin_run_that_started_no_thread_skips_the_sandbox_groups_refusals(
        tmp_path, monkeypatch) -> None:  # noqa: ANN001
    """With the thread-start hook counting (a runner whose run thread joined the workload's
    group), a builtin-only run that started no thread reads only the peak: nothing else can
    have forked. One that started a thread reads the refusals, and a refused one is this
    run's limit."""
    files = _Files(tmp_path, monkeypatch)
    native = _native()
    from agentic_bash.executors import native as native_mod
    count = [0]
    monkeypatch.setattr(native_mod, "threads_started", lambda: count[0])
    try:
        u = wd.S3Usage(files.cfg(native))
        u.begin()
        u.end(Result(), _replace)
        files.reads.clear()
        u.begin()
        assert u.end(Result(), _replace).limit_exceeded is None
        assert files.reads == ["peak"]
        u.begin()
        count[0] += 1            # a job's thread
        files.reads.clear()
        assert u.end(Result(), _replace).limit_exceeded is None
        assert sorted(files.reads) == ["ev_sandbox", "peak"]
        u.begin()
        count[0] += 1            # refused
        files.set(ev_sandbox=1)
        r = u.end(Result(), _replace)
        assert r.limit_exceeded == "processes"
    finally:
        files.close()
