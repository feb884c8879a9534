"""Session integrity costs: per-call round trip, recovery after an interrupt, restart after a crash."""

# Run: .venv/bin/python benchmarks/integrity_bench.py [--level namespace] [--n 500] [--json out.json]

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import threading
import time
import warnings


def _ms(xs: list[float]) -> dict[str, float]:
    xs = sorted(xs)
    return {"median_ms": round(statistics.median(xs) * 1e3, 3),
            "p90_ms": round(xs[(len(xs) * 9) // 10] * 1e3, 3), "n": len(xs)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--level", default="namespace")
    ap.add_argument("--n", type=int, default=500)
    ap.add_argument("--json")
    a = ap.parse_args()
    warnings.simplefilter("ignore")
    from agentic_bash import Sandbox, SandboxCrashed
    out: dict[str, object] = {"level": a.level, "loadavg_before": os.getloadavg()}
    sb = Sandbox(a.level)
    for _ in range(50):
        sb.run("true")
    xs = []
    for _ in range(a.n):
        t = time.perf_counter()
        sb.run("true")
        xs.append(time.perf_counter() - t)
    out["run_true"] = _ms(xs)
    xs = []
    for _ in range(a.n):
        t = time.perf_counter()
        sb.exists("/tmp")
        xs.append(time.perf_counter() - t)
    out["exists"] = _ms(xs)
    # KeyboardInterrupt during a run, then the next call (drains the abandoned reply)
    xs = []
    for _ in range(10):
        threading.Timer(0.1, os.kill, (os.getpid(), signal.SIGINT)).start()
        try:
            sb.run("sleep 5")
        except KeyboardInterrupt:
            pass
        t = time.perf_counter()
        assert sb.run("echo ok").stdout == "ok\n"
        xs.append(time.perf_counter() - t)
    out["next_call_after_sigint"] = _ms(xs)
    # crash and restart, with a small and a 50 MB session layer
    if sb.isolation_level in ("namespace", "landlock"):
        for label, setup in (("restart_small_layer", "echo x > f"),
                             ("restart_50MB_layer", "head -c 50000000 /dev/urandom > big")):
            xs = []
            for _ in range(3):
                sb.run(setup)
                os.kill(sb._ex.pid, signal.SIGKILL)
                try:
                    sb.run("sleep 5")
                except SandboxCrashed:
                    pass
                t = time.perf_counter()
                r = sb.run("true")
                xs.append(time.perf_counter() - t)
                assert r.restarted
            out[label] = _ms(xs)
    sb.close()
    out["loadavg_after"] = os.getloadavg()
    print(json.dumps(out, indent=1))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
