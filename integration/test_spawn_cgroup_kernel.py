"""Native children are born in the workload's pids group (spawner and run threads), and the process limit stays exact."""

from __future__ import annotations

import os
import threading
import time

import pytest

from _support import sandbox_supported

ok, why = sandbox_supported()
pytestmark = [pytest.mark.skipif(not ok, reason=f"kernel sandbox unavailable: {why}"),
              pytest.mark.timeout(300)]


def _sandbox(**limits):  # noqa: ANN003, ANN202
    from agentic_bash import Limits, Sandbox
    sb = Sandbox("namespace", limits=Limits(**limits))
    cg = sb._ex._resources.cgroups
    if os.geteuid() != 0 or cg is None or "processes" not in cg.applied or not cg.work_tasks_files:
        sb.close()
        pytest.skip("no cgroup v1 pids group for the workload here")
    return sb


def test_children_and_grandchildren_start_in_the_workload_group() -> None:
    sb = _sandbox()
    try:
        # the runner says its threads joined (else the host lowers the group's pids.max)
        assert sb._ex.observed["limits"]["spawner_in_group"] is True
        for cmd in ("cat /proc/self/cgroup", "/bin/dash -c 'cat /proc/self/cgroup; :'"):
            time.sleep(0.05)   # commands apart, as an agent runs them
            r = sb.run(cmd)
            pids = [line for line in r.stdout.splitlines() if ":pids:" in line]
            assert len(pids) == 1 and pids[0].endswith("/work"), r
        # the runner itself is not in it: two of its threads are (the launcher's spawner and
        # the run thread), and the threads the run thread starts (pipeline stages, pumps,
        # jobs) are not
        r = sb.run("/bin/true | cat; (echo a; /bin/true) | cat; x=$(/bin/true | cat); "
                   "/bin/sleep 0.1 & timeout 5 /bin/true; wait; echo done")
        assert r.stdout.endswith("done\n"), r
        work = os.path.join(sb._ex._resources.cgroups.dirs["pids"], "work")
        with open(os.path.join(work, "tasks")) as f:
            tasks = f.read().split()
        assert len(tasks) == 2, tasks
        with open(os.path.join(work, "cgroup.procs")) as f:
            procs = f.read().split()
        assert len(procs) == 1   # both are threads of one process (S3)
        runner = int(procs[0])
        # and while a run's pipeline stages and job threads exist, still only those two of
        # the runner's threads are there (each stage's native child is, as it should be)
        runner_tids = []
        done = threading.Event()

        def sample() -> None:
            while not done.is_set():
                runner_tids.append(len(_runner_threads_in(work, runner)))
                time.sleep(0.01)
        t = threading.Thread(target=sample)
        t.start()
        try:
            r = sb.run("/bin/sleep 0.4 | /bin/cat; /bin/sleep 0.3 & /bin/sleep 0.2 | /bin/cat; "
                       "wait; echo done", timeout=60)
        finally:
            done.set()
            t.join()
        assert r.stdout == "done\n", r
        assert len(runner_tids) > 5 and set(runner_tids) == {2}, runner_tids
    finally:
        sb.close()


def _tgid(tid: str) -> int | None:
    try:
        with open(f"/proc/{tid}/status") as f:
            return int(next(line.split()[1] for line in f if line.startswith("Tgid:")))
    except (OSError, StopIteration, ValueError):
        return None   # (exited meanwhile)


def _runner_threads_in(work: str, runner: int) -> list[str]:
    """Threads of the runner process (pid ``runner``) in the workload's group. (Not "any
    Python process": a child between vfork and exec still shows the runner's cmdline.)"""
    with open(os.path.join(work, "tasks")) as f:
        return [tid for tid in f.read().split() if _tgid(tid) == runner]


def test_process_limit_is_exact_with_the_spawner_slot() -> None:
    sb = _sandbox(max_processes=4)
    try:
        # a real shell (dash: `sh -c` would be the interpreter itself) and three sleeps:
        # exactly the limit
        r = sb.run("/bin/dash -c 'sleep 1 & sleep 1 & sleep 1 & wait' 2>&1; echo st=$?",
                   timeout=60)
        assert r.stdout.endswith("st=0\n") and r.limit_exceeded is None, r
        # and four: one over; the grandchild's fork is refused and reported (long sleeps: the
        # first must still run when the fourth fork comes, on any machine)
        r = sb.run("/bin/dash -c 'sleep 5 & sleep 5 & sleep 5 & sleep 5 & wait' 2>&1; "
                   "echo st=$?", timeout=60)
        assert r.limit_exceeded == "processes", r
        assert "cannot fork" in r.stdout.lower(), r
        assert sb.run("echo ok").stdout == "ok\n"
    finally:
        sb.close()
