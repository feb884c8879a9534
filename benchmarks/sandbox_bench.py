"""Sandboxed mode: per-command cost, sandbox creation, timeout latency, against unshare and bwrap."""

# Run: .venv/bin/python benchmarks/sandbox_bench.py [--n 200] [--json out.json]
# bubblewrap comes from the Debian package `bubblewrap` (apt-get install bubblewrap).

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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--json")
    args = ap.parse_args()
    n = args.n

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
