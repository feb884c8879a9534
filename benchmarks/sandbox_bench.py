"""Sandboxed mode: per-command cost, sandbox creation, timeout latency, against unshare and bwrap."""

# Run: .venv/bin/python benchmarks/sandbox_bench.py [--n 200] [--json out.json]
#      .venv/bin/python benchmarks/sandbox_bench.py --ab-create OLD_TREE [--rounds 4 --n 12]
# bubblewrap comes from the Debian package `bubblewrap` (apt-get install bubblewrap).
# --ab-create: creation of two checkouts in child processes taking turns (the same load for
# both): Sandbox() / first /bin/true / close() wall, unshare interleaved, and the CPU and
# run-queue wait of every process a creation involves (host thread, zygote, the sandbox's
# own processes; /proc/PID/task/*/schedstat, ns resolution), medians per round.
#      .venv/bin/python benchmarks/sandbox_bench.py --timeline [--n 20]
# --timeline: one warm creation step by step (medians): wall ms after Sandbox() is called at
# each start-up step, and the CPU (ms) and minor page faults of pid 1's and of the runner's
# main thread at each step (observed["cpu"], counted from each process's start).
#      .venv/bin/python benchmarks/sandbox_bench.py --floor [--n 30]
# --floor: what the process structure alone costs, in a process with the zygote's preload and
# warm-up (its image size): fork until the child writes a byte; clone3 into the sandbox's
# namespaces; clone3 then a second fork inside (pid 1 + the runner, doing nothing), against
# unshare -Ur --mount --pid --net --fork /bin/true.

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import time


def _stats(xs: list[float]) -> dict[str, float]:
    xs = sorted(xs)
    return {"median_ms": statistics.median(xs) * 1e3, "p10_ms": xs[len(xs) // 10] * 1e3,
            "p90_ms": xs[(len(xs) * 9) // 10] * 1e3, "n": len(xs)}


def _time(fn, n: int) -> dict[str, float]:
    out = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return _stats(out)


_AB_CHILD = r"""
import json, os, statistics, subprocess, sys, threading, time
import psutil
from agentic_bash import Sandbox
from agentic_bash.isolation.zygote import get_zygote

UNSHARE = ["unshare", "-Ur", "--mount", "--pid", "--net", "--fork", "/bin/true"]


def sched(pid, task=None):
    out = [0, 0]
    tasks = [task] if task else os.listdir(f"/proc/{pid}/task")
    for t in tasks:
        try:
            with open(f"/proc/{pid}/task/{t}/schedstat") as f:
                a = f.read().split()
        except OSError:
            continue
        out[0] += int(a[0])
        out[1] += int(a[1])
    return out


Sandbox("namespace").close()
z = get_zygote().pid
me = threading.get_native_id()
rows = {k: [] for k in ("create", "first", "close", "create_plus_first", "unshare",
                        "cpu_ms", "wait_ms", "processes", "pid1_faults", "runner_faults")}
for _ in range(int(sys.argv[1])):
    z0, h0 = sched(z), sched(os.getpid(), me)
    t0 = time.perf_counter()
    sb = Sandbox("namespace")
    t1 = time.perf_counter()
    h1, z1 = sched(os.getpid(), me), sched(z)
    top = psutil.Process(sb._ex.pid)
    procs = [top.pid] + [c.pid for c in top.children(recursive=True)]
    own = [sched(p) for p in procs]
    flt = []   # minor faults of pid 1 and the runner at ready
    for p in procs[:2]:
        with open(f"/proc/{p}/stat") as f:
            flt.append(int(f.read().rsplit(")", 1)[1].split()[7]))
    sb.run("/bin/true")
    t2 = time.perf_counter()
    sb.close()
    t3 = time.perf_counter()
    rows["create"].append((t1 - t0) * 1e3)
    rows["first"].append((t2 - t1) * 1e3)
    rows["close"].append((t3 - t2) * 1e3)
    rows["create_plus_first"].append((t2 - t0) * 1e3)
    rows["cpu_ms"].append((sum(c for c, _ in own) + h1[0] - h0[0] + z1[0] - z0[0]) / 1e6)
    rows["wait_ms"].append((sum(w for _, w in own) + h1[1] - h0[1] + z1[1] - z0[1]) / 1e6)
    rows["processes"].append(len(procs))
    rows["pid1_faults"].append(flt[0])
    if len(flt) > 1:
        rows["runner_faults"].append(flt[1])
    t = time.perf_counter()
    subprocess.run(UNSHARE, check=True)
    rows["unshare"].append((time.perf_counter() - t) * 1e3)
out = {k: statistics.median(v) for k, v in rows.items() if v}
out["ratio"] = out["create_plus_first"] / out["unshare"]
with open("/proc/loadavg") as f:
    out["load"] = f.read().split()[:3]
print(json.dumps(out))
"""


def ab_create(old_tree: str, rounds: int, n: int) -> dict:
    """Creation figures of ``old_tree`` and of this checkout, child processes taking turns."""
    import os
    import statistics as st

    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    trees = {"old": os.path.abspath(old_tree), "new": here}
    for t in trees.values():
        subprocess.run([sys.executable, "-m", "compileall", "-q", os.path.join(t, "agentic_bash")],
                       check=True, stdout=subprocess.DEVNULL)
    runs: dict[str, list[dict]] = {k: [] for k in trees}
    for r in range(rounds):
        for name in (list(trees) if r % 2 == 0 else list(trees)[::-1]):
            env = dict(os.environ, PYTHONPATH=trees[name])
            p = subprocess.run([sys.executable, "-c", _AB_CHILD, str(n)], env=env, cwd="/",
                               capture_output=True, text=True, timeout=900)
            if p.returncode:
                raise RuntimeError(p.stderr[-3000:])
            got = json.loads(p.stdout.strip().splitlines()[-1])
            runs[name].append(got)
            print(f"round {r} {name}: " + ", ".join(
                f"{k} {v:.1f}" if isinstance(v, float) else f"{k} {v}" for k, v in got.items()),
                flush=True)
    out: dict = {"trees": trees, "rounds": rounds, "per_round": n, "runs": runs}
    for name, rs in runs.items():
        out[name] = {k: st.median(x[k] for x in rs) for k in rs[0]
                     if k != "load" and all(k in x for x in rs)}
    return out


def timeline(n: int) -> dict:
    """Medians of the start-up steps of ``n`` warm creations (see --timeline above)."""
    from agentic_bash import Sandbox

    Sandbox().close()
    keys = ["s1", "joined", "unshared", "s2", "rooted", "detached", "s3", "restricted",
            "pinned", "executor", "s2_done", "ready"]
    wall: dict[str, list[float]] = {}
    cpu: dict[str, list[list[float]]] = {}
    for _ in range(n):
        t0 = time.time()
        sb = Sandbox()
        t1 = time.time()
        sb.run("/bin/true")
        t2 = time.time()
        obs = sb._ex.observed  # type: ignore[attr-defined]
        for k in keys:
            if obs["timing"].get(k):
                wall.setdefault(k, []).append((obs["timing"][k] - t0) * 1e3)
        wall.setdefault("returned", []).append((t1 - t0) * 1e3)
        wall.setdefault("first_done", []).append((t2 - t0) * 1e3)
        for k, v in (obs.get("cpu") or {}).items():
            cpu.setdefault(k, []).append(v)
        sb.close()
        t = time.perf_counter()
        subprocess.run(["unshare", "-Ur", "--mount", "--pid", "--net", "--fork", "/bin/true"],
                       check=True)
        wall.setdefault("unshare", []).append((time.perf_counter() - t) * 1e3)
    out = {"wall_ms": {k: round(statistics.median(v), 2) for k, v in wall.items()},
           "cpu_ms_faults": {k: [round(statistics.median(x[0] for x in v), 3),
                                 int(statistics.median(x[1] for x in v))]
                             for k, v in cpu.items()}}
    with open("/proc/loadavg") as f:
        out["load"] = f.read().split()[:3]
    return out


_FLOOR_CHILD = r"""
import gc, json, os, statistics, subprocess, sys, time
from agentic_bash.isolation import zygote
from agentic_bash.isolation import syscalls as sc
zygote._preload()
import agentic_bash.commands as cmds
cmds.load_all(eager=True)
zygote._warm_interpreter()
gc.collect()
gc.freeze()
flags = (sc.CLONE_NEWUSER | sc.CLONE_NEWNS | sc.CLONE_NEWPID | sc.CLONE_NEWUTS | sc.CLONE_NEWIPC
         | sc.CLONE_NEWNET)


def once(kind):
    r, w = os.pipe()
    t = time.perf_counter()
    pid = os.fork() if kind == "fork" else sc.clone_fork(flags)
    if pid == 0:
        if kind == "clone_fork":
            if os.fork() == 0:
                os.write(w, b"x")
                os._exit(0)
            os.wait()
        else:
            os.write(w, b"x")
        os._exit(0)
    os.read(r, 1)
    dt = time.perf_counter() - t
    os.waitpid(pid, 0)
    os.close(r)
    os.close(w)
    return dt * 1e3


rows = {k: [] for k in ("fork", "clone", "clone_fork", "unshare")}
for _ in range(int(sys.argv[1])):
    for k in ("fork", "clone", "clone_fork"):
        rows[k].append(once(k))
    t = time.perf_counter()
    subprocess.run(["unshare", "-Ur", "--mount", "--pid", "--net", "--fork", "/bin/true"],
                   check=True)
    rows["unshare"].append((time.perf_counter() - t) * 1e3)
out = {k: round(statistics.median(v), 3) for k, v in rows.items()}
with open("/proc/self/status") as f:
    out["rss_kb"] = int(next(l for l in f if l.startswith("VmRSS")).split()[1])
with open("/proc/loadavg") as f:
    out["load"] = f.read().split()[:3]
print(json.dumps(out))
"""


def floor(n: int) -> dict:
    """The process structure's own cost (see --floor above), in a child process."""
    p = subprocess.run([sys.executable, "-c", _FLOOR_CHILD, str(n)], capture_output=True,
                       text=True, timeout=600, cwd="/")
    if p.returncode:
        raise RuntimeError(p.stderr[-3000:])
    return json.loads(p.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--json")
    ap.add_argument("--ab-create", metavar="OLD_TREE")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--timeline", action="store_true")
    ap.add_argument("--floor", action="store_true")
    args = ap.parse_args()
    n = args.n
    if args.timeline or args.floor:
        res = timeline(n if n != 200 else 20) if args.timeline else floor(n if n != 200 else 30)
        print(json.dumps(res, indent=1))
        if args.json:
            with open(args.json, "w") as f:
                json.dump(res, f, indent=2)
        return
    if args.ab_create:
        res = ab_create(args.ab_create, args.rounds, n if n != 200 else 12)
        for name in ("old", "new"):
            print(name, json.dumps({k: round(v, 2) for k, v in res[name].items()}))
        if args.json:
            with open(args.json, "w") as f:
                json.dump(res, f, indent=2)
        return

    from agentic_bash.executors.sandboxed import SandboxedExecutor
    from agentic_bash.isolation.zygote import get_zygote

    res: dict[str, object] = {}
    t = time.perf_counter()
    get_zygote()
    res["zygote_start_ms"] = (time.perf_counter() - t) * 1e3

    # 1. one native /bin/true in a live sandbox vs subprocess.run
    res["subprocess_run_true"] = _time(lambda: subprocess.run(["/bin/true"]), n)
    sb = SandboxedExecutor(isolation="namespace")
    sb.run("/bin/true")
    res["sandbox_native_true"] = _time(lambda: sb.run("/bin/true"), n)
    res["sandbox_builtin_true"] = _time(lambda: sb.run("true"), n)
    res["ratio_native_true"] = (res["sandbox_native_true"]["median_ms"]  # type: ignore[index]
                                / res["subprocess_run_true"]["median_ms"])  # type: ignore[index]
    if shutil.which("bwrap"):
        bw = ["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
              "--unshare-all", "true"]
        res["bwrap_true"] = _time(lambda: subprocess.run(bw), max(20, n // 4))

    # 2. timeout latency: how long after the deadline run() returns
    lat = []
    for _ in range(10):
        t = time.perf_counter()
        r = sb.run("sleep 10", timeout=0.3)
        assert r.timed_out
        lat.append(time.perf_counter() - t - 0.3)
    res["timeout_latency"] = _stats(lat)
    sb.close()

    # 3. creation + first command, after the zygote is up
    def create_first() -> None:
        s = SandboxedExecutor(isolation="namespace")
        s.run("/bin/true")
        s.close()

    cycles = []
    for _ in range(max(10, n // 10)):
        t0 = time.perf_counter()
        s = SandboxedExecutor(isolation="namespace")
        t1 = time.perf_counter()
        s.run("/bin/true")
        t2 = time.perf_counter()
        s.close()
        t3 = time.perf_counter()
        cycles.append((t1 - t0, t2 - t1, t3 - t2, t2 - t0))
    res["create"] = _stats([c[0] for c in cycles])
    res["first_command"] = _stats([c[1] for c in cycles])
    res["close"] = _stats([c[2] for c in cycles])
    res["create_plus_first"] = _stats([c[3] for c in cycles])
    un = ["unshare", "-Ur", "--pid", "--fork", "--mount", "--net", "true"]
    res["unshare_true"] = _time(lambda: subprocess.run(un), max(20, n // 4))
    res["ratio_create_vs_unshare"] = (res["create_plus_first"]["median_ms"]  # type: ignore[index]
                                      / res["unshare_true"]["median_ms"])  # type: ignore[index]
    if shutil.which("bwrap"):
        res["bwrap_create"] = res["bwrap_true"]

    try:
        with open("/proc/loadavg") as f:
            res["loadavg"] = f.read().split()[:3]
    except OSError:
        pass
    for k, v in res.items():
        if isinstance(v, dict):
            print(f"{k:24s} median {v['median_ms']:8.2f} ms  p10 {v['p10_ms']:8.2f}  "
                  f"p90 {v['p90_ms']:8.2f}  (n={v['n']})")
        else:
            print(f"{k:24s} {v}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=2)


if __name__ == "__main__":
    sys.exit(main())
