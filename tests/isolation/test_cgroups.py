"""The cgroup backends against fabricated /sys/fs/cgroup and /proc trees (pyfakefs), and the pure limit planning."""

from __future__ import annotations

import os
import time

import pytest

from agentic_bash import Limits
from agentic_bash.errors import IsolationUnavailable
from agentic_bash.isolation import cgroups as cg
from agentic_bash.isolation.resources import ResourceControl, plan_resources

MiB = 1 << 20

V2_MOUNTINFO = ("25 1 0:22 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n"
                "26 1 0:5 / /proc rw - proc proc rw\n")
V1_MOUNTINFO = (
    "31 23 0:28 / /sys/fs/cgroup rw - tmpfs tmpfs rw,mode=755\n"
    "32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n"
    "35 31 0:32 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"
    "39 31 0:36 / /sys/fs/cgroup/pids rw - cgroup cgroup rw,pids\n"
    "41 31 0:38 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n")
SCOPE = "/user.slice/user-1000.slice/app.scope"


def _fake_cgroupfs(fs) -> None:  # noqa: ANN001
    """rmdir on cgroupfs removes a group with its control files; a plain fs says ENOTEMPTY."""
    real_rmdir = os.rmdir

    def rmdir(path, *a, **k):  # noqa: ANN001, ANN002, ANN003
        if os.path.isdir(path) and any(os.path.isdir(os.path.join(path, e)) for e in os.listdir(path)):
            raise OSError(16, "Device or resource busy", path)
        if os.path.isdir(path):
            for e in os.listdir(path):
                os.unlink(os.path.join(path, e))
        return real_rmdir(path, *a, **k)
    return rmdir


@pytest.fixture
def v2(fs, monkeypatch):  # noqa: ANN001
    fs.create_file("/proc/self/mountinfo", contents=V2_MOUNTINFO)
    fs.create_file("/proc/self/cgroup", contents=f"0::{SCOPE}\n")
    d = "/sys/fs/cgroup" + SCOPE
    fs.create_file(d + "/cgroup.controllers", contents="cpuset cpu io memory pids\n")
    fs.create_file(d + "/cgroup.subtree_control", contents="cpu memory pids\n")
    fs.create_file(d + "/cgroup.procs", contents="")
    monkeypatch.setattr(os, "rmdir", _fake_cgroupfs(fs))
    monkeypatch.setattr(cg, "_swept", set())
    return d


def test_parsers() -> None:
    mounts = cg.parse_mountinfo(V1_MOUNTINFO)
    assert ("/", "/sys/fs/cgroup/memory", "cgroup", {"rw", "memory"}) in mounts
    assert all(m[2] in ("cgroup", "cgroup2") for m in mounts)
    v1, v2 = cg.parse_proc_cgroup("9:pids:/\n4:memory:/a/b\n2:cpu,cpuacct:/c\n0::/\n")
    assert v1 == {"pids": "/", "memory": "/a/b", "cpu": "/c", "cpuacct": "/c"} and v2 == "/"


def test_v2_detect_and_limits_written(v2: str) -> None:
    host = cg.detect()
    assert host.version == 2 and host.dirs == {c: v2 for c in ("memory", "pids", "cpu")}
    g = cg.SandboxCgroups(host, memory=64 * MiB, pids=50, cpu_quota=0.5)
    d = os.path.join(v2, g.name)
    assert g.name.startswith(f"agentic-bash-{os.getpid()}-")
    assert open(d + "/memory.max").read() == str(64 * MiB)
    assert open(d + "/memory.swap.max").read() == "0"
    assert open(d + "/cpu.max").read() == "50000 100000"
    assert open(d + "/cgroup.subtree_control").read() == "+pids"
    assert open(d + "/work/pids.max").read() == "50"
    assert int(open(d + "/pids.max").read()) > 50  # the runner's own tasks on top
    # the sandbox joins a leaf (no process may sit in a group whose children have controllers)
    assert g.procs_files == [d + "/runner/cgroup.procs"]
    assert g.work_procs_files == [d + "/work/cgroup.procs"]
    assert g.applied == {"memory": str(64 * MiB), "processes": "50", "cpu": "50000/100000"}


def test_v2_usage_per_run(v2: str) -> None:
    g = cg.SandboxCgroups(cg.detect(), memory=64 * MiB, pids=50)
    d = os.path.join(v2, g.name)
    with open(d + "/memory.events", "w") as f:
        f.write("low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n")
    with open(d + "/work/pids.events", "w") as f:
        f.write("max 0\n")
    g.begin_run()
    with open(d + "/memory.peak", "w") as f:
        f.write("5678\n")
    with open(d + "/memory.events", "w") as f:
        f.write("low 0\nhigh 0\nmax 9\noom 2\noom_kill 2\n")
    with open(d + "/work/pids.events", "w") as f:
        f.write("max 5\n")
    u = g.end_run()
    assert u["oom_killed"] == 1 and u["pids_refused"] == 5, u
    assert u["peak_memory"] == 5678, u


def test_v2_close_removes_every_dir(v2: str) -> None:
    g = cg.SandboxCgroups(cg.detect(), memory=64 * MiB, pids=50)
    d = os.path.join(v2, g.name)
    assert os.path.isdir(d + "/work")
    assert g.close() is True
    assert not os.path.exists(d)
    assert sorted(os.listdir(v2)) == ["cgroup.controllers", "cgroup.procs",
                                      "cgroup.subtree_control"]
    assert g.close() is True  # idempotent


def test_v2_not_delegated_or_controllers_missing(fs, monkeypatch) -> None:  # noqa: ANN001
    fs.create_file("/proc/self/mountinfo", contents=V2_MOUNTINFO)
    fs.create_file("/proc/self/cgroup", contents="0::/\n")
    fs.create_file("/sys/fs/cgroup/cgroup.controllers", contents="memory pids\n")
    fs.create_file("/sys/fs/cgroup/cgroup.subtree_control", contents="memory\n")
    fs.create_file("/sys/fs/cgroup/cgroup.procs", contents="1\n")
    host = cg.detect()
    # pids gets enabled (the fake file takes the write); cpu is not offered at all
    assert host.version == 2 and "cpu" not in host.dirs
    assert "cpu" in host.reasons["cpu"]
    monkeypatch.setattr(os, "access", lambda *a, **k: False)
    host = cg.detect()
    assert host.version == 0 and "not delegated" in host.reasons["memory"]


def test_v1_layout_found_below_our_own_groups(fs) -> None:  # noqa: ANN001
    fs.create_file("/proc/self/mountinfo", contents=V1_MOUNTINFO)
    fs.create_file("/proc/self/cgroup",
                   contents="8:pids:/\n4:memory:/job/42\n1:cpu,cpuacct:/\n0::/\n")
    for d in ("/sys/fs/cgroup/pids", "/sys/fs/cgroup/memory/job/42", "/sys/fs/cgroup/cpu,cpuacct"):
        fs.create_dir(d)
    host = cg.detect()
    assert host.version == 1
    assert host.dirs == {"memory": "/sys/fs/cgroup/memory/job/42", "pids": "/sys/fs/cgroup/pids",
                         "cpu": "/sys/fs/cgroup/cpu,cpuacct"}
    g = cg.SandboxCgroups(host, memory=64 * MiB, pids=10, cpu_quota=0.25)
    mem = os.path.join("/sys/fs/cgroup/memory/job/42", g.name)
    assert open(mem + "/memory.limit_in_bytes").read() == str(64 * MiB)  # through cgroupspy
    cpu = os.path.join("/sys/fs/cgroup/cpu,cpuacct", g.name)  # not cgroupspy's layout: by hand
    assert open(cpu + "/cpu.cfs_quota_us").read() == "25000"
    pids = os.path.join("/sys/fs/cgroup/pids", g.name)
    # two slots more than asked: the runner's spawner and run threads live in the
    # workload's group
    assert open(pids + "/work/pids.max").read() == "12"
    assert int(open(pids + "/pids.max").read()) > 12
    assert g.work_tasks_files == [pids + "/work/tasks"]
    # the runner reports its threads could not join: the workload's slots are its own again
    g.no_runner_threads_in_work()
    assert open(pids + "/work/pids.max").read() == "10"
    assert sorted(g.procs_files) == sorted(os.path.join(d, "cgroup.procs") for d in (mem, cpu, pids))


def test_sweep_removes_only_stale_empty_groups_of_dead_hosts(fs, monkeypatch) -> None:  # noqa: ANN001
    parent = "/sys/fs/cgroup/pids"
    dead = os.path.join(parent, "agentic-bash-999999999-1-abcdef")
    busy = os.path.join(parent, "agentic-bash-999999998-1-abcdef")
    young = os.path.join(parent, "agentic-bash-999999997-1-abcdef")
    alive = os.path.join(parent, f"agentic-bash-{os.getppid()}-1-abcdef")
    other = os.path.join(parent, "somebody-else")
    for d, procs in ((dead, ""), (busy, "42\n"), (young, ""), (alive, ""), (other, "")):
        fs.create_file(d + "/cgroup.procs", contents=procs)
    fs.create_file(dead + "/work/cgroup.procs", contents="")
    old = 1_000_000.0
    for d in (dead, busy, alive, other):
        os.utime(d, (old, old))
    os.utime(young, (old + 100, old + 100))
    monkeypatch.setattr(os, "rmdir", _fake_cgroupfs(fs))
    assert cg.sweep_stale(parent, now=old + 120) == 1
    assert not os.path.exists(dead)
    for d in (busy, young, alive, other):
        assert os.path.isdir(d), d


# -- planning -------------------------------------------------------------------------------
NONE = cg.CgroupHost(0, {}, {"memory": "no cgroup", "pids": "no cgroup", "cpu": "no cgroup"})
V1 = cg.CgroupHost(1, {"memory": "/m", "pids": "/p", "cpu": "/c"})


def test_plan_root_with_cgroups() -> None:
    b = plan_resources(Limits(cpu_quota=0.5, max_file_bytes=MiB), level="namespace",
                       session_layer="tmpfs", cg=V1, sandbox_uid_is_root=True, kernel="6.1.0")
    assert b == {"memory": "cgroup-v1", "processes": "cgroup-v1", "cpu": "cgroup-v1",
                 "file_size": "rlimit", "disk": "tmpfs"}


def test_plan_unprivileged_without_cgroups() -> None:
    b = plan_resources(Limits(cpu_quota=0.5), level="namespace", session_layer="tmpfs", cg=NONE,
                       sandbox_uid_is_root=False, kernel="6.6.0-x")
    assert b["memory"] == "watchdog" and b["processes"] == "rlimit"
    assert b["cpu"].startswith("unavailable: no cgroup")
    old = plan_resources(Limits(), level="namespace", session_layer="disk", cg=NONE,
                         sandbox_uid_is_root=False, kernel="5.10.0")
    assert old["processes"].startswith("unavailable: kernel 5.10.0")
    assert old["disk"].startswith("unavailable: the session layer is on disk")


def test_plan_root_without_pids_cgroup_says_rlimit_cannot_count_uid_0() -> None:
    b = plan_resources(Limits(), level="namespace", session_layer="tmpfs", cg=NONE,
                       sandbox_uid_is_root=True, kernel="6.6.0")
    assert "RLIMIT_NPROC does not apply to uid 0" in b["processes"]


def test_plan_only_what_is_asked() -> None:
    lim = Limits(max_memory_bytes=None, max_processes=None, max_fs_bytes=None)
    assert plan_resources(lim, level="namespace", session_layer="tmpfs", cg=V1,
                          sandbox_uid_is_root=True, kernel="6.6") == {}


def test_strict_refuses_unenforceable_limits_and_an_unaccepted_watchdog() -> None:
    with pytest.raises(IsolationUnavailable, match="cpu"):
        ResourceControl(Limits(cpu_quota=0.5, allow_watchdog=True), level="namespace",
                        session_layer="tmpfs", strict=True, euid=1000, cg=NONE)
    with pytest.raises(IsolationUnavailable, match="allow_watchdog"):
        ResourceControl(Limits(), level="namespace", session_layer="tmpfs", strict=True,
                        euid=1000, cg=NONE)
    rc = ResourceControl(Limits(allow_watchdog=True), level="namespace", session_layer="tmpfs",
                         strict=True, euid=1000, cg=NONE)
    assert rc.cgroups is None and rc.cfg["watchdog"]["memory"] == Limits().max_memory_bytes
    # without strict, nothing is refused; the report says what is missing
    ResourceControl(Limits(cpu_quota=0.5), level="namespace", session_layer="tmpfs",
                    strict=False, euid=1000, cg=NONE)


def test_report_entries_need_evidence_from_the_runner() -> None:
    from agentic_bash.isolation.report import IsolationReport

    rc = ResourceControl(Limits(max_file_bytes=MiB, allow_watchdog=True), level="namespace",
                         session_layer="tmpfs", strict=False, euid=1000, cg=NONE)
    base = IsolationReport("namespace", "namespace", {"seccomp": "enforced"})
    seen = {"limits": {"rlimits": {"FSIZE": MiB, "NPROC": 1030}, "watchdog": True,
                       "tmpfs_sized": True}}
    rep = rc.report(base, seen)
    assert rep.mechanisms["memory_limit"] == "enforced by watchdog"
    assert rep.mechanisms["process_limit"] == "enforced by rlimit"
    assert rep.mechanisms["file_size_limit"] == "enforced by rlimit"
    assert rep.mechanisms["disk_limit"] == "enforced by tmpfs"
    assert rep.enforced == {"seccomp"}
    rep = rc.report(base, {"limits": {}})
    for k in ("memory_limit", "process_limit", "file_size_limit", "disk_limit"):
        assert rep.mechanisms[k].startswith("unavailable: not applied"), rep.mechanisms
    assert any("memory limit unavailable" in w for w in rep.warnings)


def test_a_group_that_cannot_be_made_falls_back_and_strict_refuses(monkeypatch) -> None:  # noqa: ANN001
    from agentic_bash.isolation import resources

    def boom(*a, **k):  # noqa: ANN002, ANN003
        raise PermissionError(13, "Permission denied")
    monkeypatch.setattr(resources, "SandboxCgroups", boom)
    rc = ResourceControl(Limits(), level="namespace", session_layer="tmpfs", strict=False,
                         euid=0, cg=V1)
    assert rc.cgroups is None and rc.backends["memory"] == "watchdog"
    assert "could not make the sandbox's cgroup (Permission denied)" in rc.backends["processes"]
    with pytest.raises(IsolationUnavailable, match="processes"):
        ResourceControl(Limits(allow_watchdog=True), level="namespace", session_layer="tmpfs",
                        strict=True, euid=0, cg=V1)


def test_host_takes_the_runner_slots_back_when_its_threads_are_not_in_the_group() -> None:
    from agentic_bash.isolation.resources import ResourceControl

    calls = []
    fake = type("C", (), {"memory_counter_files": {}, "pids_events_files": [],
                          "no_runner_threads_in_work": lambda self: calls.append(1)})()
    rc = ResourceControl.__new__(ResourceControl)
    rc.cgroups = fake
    rc.runner_counts({"limits": {"spawner_in_group": True}})
    rc.runner_counts({"limits": {}})
    assert calls == []
    rc.runner_counts({"limits": {"spawner_in_group": False}})
    assert calls == [1]


@pytest.fixture
def busy_group(v2: str, monkeypatch):  # noqa: ANN001
    """A sandbox's v2 group whose rmdir fails with EBUSY while ``busy[0]`` (its last tasks
    still exiting): (group, its directory, busy)."""
    g = cg.SandboxCgroups(cg.detect(), memory=64 * MiB, pids=50)
    d = os.path.join(v2, g.name)
    busy = [True]
    base_rmdir = os.rmdir

    def rmdir(path, *a, **k):  # noqa: ANN001, ANN002, ANN003
        if busy[0] and str(path).startswith(d):
            raise OSError(16, "Device or resource busy", path)
        return base_rmdir(path, *a, **k)

    monkeypatch.setattr(os, "rmdir", rmdir)
    return g, d, busy


def test_groups_close_could_not_remove_are_removed_later(busy_group, monkeypatch) -> None:  # noqa: ANN001
    # attack13 (session 13, under load): 32 processes holding ~19,000 descriptors each took
    # longer than close()'s 5 s to exit and an empty memory group was left for good
    g, d, busy = busy_group
    monkeypatch.setattr(cg, "_LINGER_STEP", 0.02)
    assert g.close(timeout=0.05) is False
    assert os.path.isdir(d)
    busy[0] = False   # the last task has exited
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and (os.path.exists(d) or cg._lingering):
        time.sleep(0.02)
    assert not os.path.exists(d) and not cg._lingering
    assert g.close() is True


def test_groups_still_lingering_at_exit_get_a_last_bounded_go(busy_group, monkeypatch) -> None:  # noqa: ANN001
    g, d, busy = busy_group
    monkeypatch.setattr(cg, "_LINGER_STEP", 60.0)   # the thread does not get to it here
    assert g.close(timeout=0.05) is False
    t = time.monotonic()
    cg._linger_at_exit(budget=0.3)          # still busy: gives up within its budget
    assert os.path.isdir(d) and time.monotonic() - t < 10
    busy[0] = False
    cg._linger_at_exit(budget=5)
    assert not os.path.exists(d) and not cg._lingering
