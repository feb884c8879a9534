"""Soak at full size: N sessions x M runs (default 50 x 2000), concurrently, counting leaks and per-run latency."""

# Run: .venv/bin/python benchmarks/soak_bench.py [--sessions 50] [--runs 2000] [--threads 8]
#      [--crash-every 500] [--json benchmarks/results/soak_bench.json]
# Leaks counted after every session is closed: processes below the zygote, this process's
# fds and mounts, agentic-bash session dirs in a private TMPDIR, our cgroups. With
# --crash-every K the sandbox is SIGKILLed from the host every K runs of a session: that run
# must raise SandboxCrashed and the next must see the session's files (restarted=True).

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import sys
import tempfile
import threading
import time
import warnings

warnings.simplefilter("ignore", RuntimeWarning)
_ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path[:0] = [os.path.join(_ROOT, "tests", "security"), os.path.join(_ROOT, "integration")]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sessions", type=int, default=50)
    ap.add_argument("--runs", type=int, default=2000)
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--crash-every", type=int, default=500)
    ap.add_argument("--json")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="agb-soak-")
    tempfile.tempdir = tmp
    import agentic_bash as ab
    from agentic_bash.errors import SandboxCrashed
    from test_soak import _counts  # the same counters as the CI-sized test

    with ab.Sandbox() as sb:
        sb.run("true")
    time.sleep(0.5)
    before = _counts(tmp)
    lat: list[float] = []
    errors: list[str] = []
    crashes = {"raised": 0, "restarted_with_files": 0}
    lock = threading.Lock()
    todo = list(range(a.sessions))

    def worker() -> None:
        while True:
            with lock:
                if not todo:
                    return
                i = todo.pop()
            try:
                with ab.Sandbox() as sb:
                    sb.run(f"echo s{i} > /workspace/id")
                    for j in range(a.runs):
                        if a.crash_every and j and j % a.crash_every == 0:
                            pid = sb._ex.pid
                            threading.Timer(0.2, lambda p=pid: os.kill(p, signal.SIGKILL)).start()
                            try:
                                sb.run("sleep 10")
                            except SandboxCrashed:
                                with lock:
                                    crashes["raised"] += 1
                            r = sb.run("cat /workspace/id")
                            if r.stdout == f"s{i}\n" and r.restarted:
                                with lock:
                                    crashes["restarted_with_files"] += 1
                            continue
                        t0 = time.perf_counter()
                        r = sb.run(f"x=$((j+{j})); echo $x; /bin/true" if j % 10 else
                                   "ls /workspace | wc -l")
                        dt = time.perf_counter() - t0
                        if r.exit_code != 0:
                            errors.append(f"s{i} run {j}: {r.exit_code} {r.stderr[-200:]}")
                        with lock:
                            lat.append(dt)
            except Exception as e:  # noqa: BLE001
                errors.append(f"s{i}: {type(e).__name__}: {e}")

    t0 = time.monotonic()
    ts = [threading.Thread(target=worker) for _ in range(a.threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    wall = time.monotonic() - t0
    time.sleep(1.0)
    after = _counts(tmp)
    lat.sort()
    out = {"sessions": a.sessions, "runs_per_session": a.runs, "threads": a.threads,
           "wall_s": round(wall, 1), "runs": len(lat),
           "run_median_ms": round(statistics.median(lat) * 1e3, 2) if lat else None,
           "run_p99_ms": round(lat[int(len(lat) * 0.99)] * 1e3, 2) if lat else None,
           "crashes": crashes, "errors": errors[:20], "n_errors": len(errors),
           "before": before, "after": after, "leaked": {k: after[k] - before[k] for k in before}}
    print(json.dumps(out, indent=1))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
