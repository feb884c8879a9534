"""What the whole-sandbox limits cost: at sandbox creation (host side and in the sandbox) and per native command."""

# Run: .venv/bin/python benchmarks/limits_bench.py [--n 300] [--json out.json]
# As root the limits are cgroups (v1 here); as an unprivileged user rlimits and the watchdog.

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import warnings

warnings.simplefilter("ignore", RuntimeWarning)


def _stats(xs: list[float]) -> dict[str, float]:
    xs = sorted(xs)
    return {"median_us": round(statistics.median(xs) * 1e6, 1),
            "p10_us": round(xs[len(xs) // 10] * 1e6, 1),
            "p90_us": round(xs[(len(xs) * 9) // 10] * 1e6, 1), "n": len(xs)}


def _host_side(n: int) -> dict:
    """ResourceControl from plan to close: cgroup mkdirs and writes (root), or nothing but
    planning (unprivileged)."""
    from agentic_bash import Limits
    from agentic_bash.isolation.cgroups import detect
    from agentic_bash.isolation.resources import ResourceControl

    cg = detect()
    out = {}
    for name, lim in (("default", Limits()),
                      ("memory+pids+cpu", Limits(max_memory_bytes=256 << 20, max_processes=64,
                                                 cpu_quota=1.0))):
        make, close = [], []
        ResourceControl(lim, level="namespace", session_layer="tmpfs", strict=False,
                        euid=os.geteuid(), cg=cg).close()  # imports, sweep
        for _ in range(n):
            t = time.perf_counter()
            rc = ResourceControl(lim, level="namespace", session_layer="tmpfs", strict=False,
                                 euid=os.geteuid(), cg=cg)
            rc.cfg
            t1 = time.perf_counter()
            rc.close()
            t2 = time.perf_counter()
            make.append(t1 - t)
            close.append(t2 - t1)
        out[name] = {"create": _stats(make), "close": _stats(close)}
    out["detect"] = _stats(_timed(detect, n))
    return out


def _timed(fn, n: int) -> list[float]:
    xs = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        xs.append(time.perf_counter() - t)
    return xs


_JOIN = r"""
import os, sys, time, json
paths = sys.argv[1:]
xs = []
for _ in range(50):
    pid = os.fork()
    if pid == 0:
        t = time.perf_counter()
        for p in paths:
            with open(p, "w") as f:
                f.write(str(os.getpid()))
        os.write(1, b"%f\n" % (time.perf_counter() - t))
        os._exit(0)
    os.waitpid(pid, 0)
"""


def _join_cost() -> dict | None:
    """S1's step: writing its pid into each cgroup.procs (root only)."""
    from agentic_bash import Limits
    from agentic_bash.isolation.resources import ResourceControl

    if os.geteuid() != 0:
        return None
    rc = ResourceControl(Limits(), level="namespace", session_layer="tmpfs", strict=False,
                         euid=0)
    try:
        p = subprocess.run([sys.executable, "-c", _JOIN, *rc.cfg["cgroups"]],
                           capture_output=True, text=True, timeout=60)
        xs = [float(x) for x in p.stdout.split()]
    finally:
        rc.close()
    return _stats(xs) if xs else None


def _per_command(n: int) -> dict:
    """/bin/true in one sandbox with the default limits vs one with none (interleaved)."""
    from agentic_bash import Limits
    from agentic_bash.executors.sandboxed import SandboxedExecutor

    off = Limits(max_memory_bytes=None, max_processes=None, max_fs_bytes=None)
    with SandboxedExecutor(isolation="namespace", limits=Limits()) as on_sb, \
            SandboxedExecutor(isolation="namespace", limits=off) as off_sb:
        res = {"default_limits": on_sb.isolation.mechanisms.get("memory_limit"),
               "no_limits": off_sb.isolation.mechanisms.get("memory_limit", "absent")}
        for sb in (on_sb, off_sb):
            for _ in range(20):
                sb.run("/bin/true")
        t_on, t_off, t_on_b, t_off_b = [], [], [], []
        for _ in range(n):
            for sb, xs, script in ((on_sb, t_on, "/bin/true"), (off_sb, t_off, "/bin/true"),
                                   (on_sb, t_on_b, "echo hi"), (off_sb, t_off_b, "echo hi")):
                t = time.perf_counter()
                sb.run(script)
                xs.append(time.perf_counter() - t)
        on, offm = statistics.median(t_on), statistics.median(t_off)
        res.update({"native_true_limits": _stats(t_on), "native_true_none": _stats(t_off),
                    "native_overhead_pct": round((on - offm) / offm * 100, 1),
                    "builtin_echo_limits": _stats(t_on_b), "builtin_echo_none": _stats(t_off_b),
                    "builtin_overhead_pct": round((statistics.median(t_on_b)
                                                   - statistics.median(t_off_b))
                                                  / statistics.median(t_off_b) * 100, 1)})
    return res


def _creation(n: int) -> dict:
    """Whole sandbox creation with and without limits (noisy: seconds of other work)."""
    from agentic_bash import Limits
    from agentic_bash.executors.sandboxed import SandboxedExecutor

    off = Limits(max_memory_bytes=None, max_processes=None, max_fs_bytes=None)
    a, b = [], []
    for _ in range(n):
        for lim, xs in ((Limits(), a), (off, b)):
            t = time.perf_counter()
            SandboxedExecutor(isolation="namespace", limits=lim).close()
            xs.append(time.perf_counter() - t)
    return {"with_limits": _stats(a), "without": _stats(b)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--json")
    args = ap.parse_args()
    res = {"uid": os.geteuid(), "host_side": _host_side(min(args.n, 200)),
           "s1_join": _join_cost(), "per_command": _per_command(args.n),
           "creation": _creation(max(5, args.n // 30))}
    text = json.dumps(res, indent=2)
    print(text)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
