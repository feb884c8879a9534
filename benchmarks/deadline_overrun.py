"""How far past its timeout a timed-out run returns to the caller, per isolation level.

Usage: python benchmarks/deadline_overrun.py [--isolation namespace] [-n 50] [--timeout 0.5]

Runs each script of SCRIPTS ``-n`` times in one Sandbox (round-robin) with ``--timeout`` and
records, as the caller sees it, the wall time of ``run()`` minus the timeout; prints p50 /
p90 / p99 / max per script and over all, and the load average. Compare two trees under the
same load by running it from both at once (PYTHONPATH=<tree>).
"""

from __future__ import annotations

import argparse
import os
import time

SCRIPTS = [
    "sleep 30",                       # a wait the interpreter's budget ends
    "while :; do :; done",            # Python code the watchdog interrupts
    "yes > /dev/null",                # a native program killed at the deadline (namespace)
    "cat /dev/zero",                  # 16 MiB of output cut and carried back
    "x=$(yes | head -c 1000000); while :; do y=${x//y/z}; done",  # large strings built in a loop
    "( sleep 100 & wait )",           # a job's program ended by its run's cancel (session 13)
    "while :; do x=$(head -c 30000000 /dev/zero); done",  # NULs dropped from 30 MB, in C code
]


def _pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * len(xs)))]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--isolation", default="namespace")
    ap.add_argument("-n", type=int, default=50)
    ap.add_argument("--timeout", type=float, default=0.5)
    ap.add_argument("--only", default=None, help="run only the scripts containing this text")
    a = ap.parse_args()
    scripts = [s for s in SCRIPTS if a.only is None or a.only in s]
    import agentic_bash as ab
    over: dict[str, list[float]] = {s: [] for s in scripts}
    loads = []
    with ab.Sandbox(isolation=a.isolation) as sb:
        sb.run("true")
        for _ in range(a.n):
            for s in scripts:
                t0 = time.monotonic()
                r = sb.run(s, timeout=a.timeout)
                over[s].append(time.monotonic() - t0 - a.timeout)
                assert r.timed_out, (s, r)
            loads.append(os.getloadavg()[0])
    allv = [v for vs in over.values() for v in vs]
    print(f"{ab.__file__}  isolation={a.isolation} timeout={a.timeout} runs={len(allv)} "
          f"load min/median/max {min(loads):.0f}/{_pct(loads, 0.5):.0f}/{max(loads):.0f}")
    for s, vs in list(over.items()) + [("ALL", allv)]:
        print(f"  {s[:48]:48s} p50 {_pct(vs, .5) * 1000:6.0f}  p90 {_pct(vs, .9) * 1000:6.0f}  "
              f"p99 {_pct(vs, .99) * 1000:6.0f}  max {max(vs) * 1000:6.0f} ms")


if __name__ == "__main__":
    main()
