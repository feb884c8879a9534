"""What the supervisor's sysinfo answer costs and what the JVM makes of it: sysinfo(2) and a bare notified call per call in a default Sandbox() vs the host; java -version wall time."""

# Run: .venv/bin/python benchmarks/compat11_bench.py [--calls N] [--json out.json]
# In the sandbox sysinfo goes to pid 1's supervisor (seccomp user notification): two context
# switches, a Python thread, /proc/<pid>/mem + maps opened, one PROCMAP_QUERY, one pwrite.
# tkill(own tid, 0) is a notified call the supervisor lets through at once: the floor.

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

PROBE = r"""
import ctypes, threading, time, json
libc = ctypes.CDLL(None); libc.syscall.restype = ctypes.c_long
buf = ctypes.create_string_buffer(112); tid = threading.get_native_id()
out = {}
for name, f in (("sysinfo", lambda: libc.sysinfo(buf)), ("tkill0", lambda: libc.syscall(200, tid, 0)),
                ("getpid", lambda: libc.syscall(39))):
    f()
    t = time.perf_counter()
    for _ in range(N):
        f()
    out[name] = (time.perf_counter() - t) / N * 1e6
print(json.dumps(out))
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--json")
    a = ap.parse_args()
    from agentic_bash import Sandbox

    code = f"N = {a.calls}\n" + PROBE
    res: dict = {"calls": a.calls, "load": os.getloadavg()[0]}
    ns: dict = {}
    exec(compile(code.replace("print(json.dumps(out))", "RES = out"), "probe", "exec"), ns)
    res["host_us"] = ns["RES"]
    with Sandbox() as sb:
        r = sb.run("python3 -", stdin=code, timeout=300)
        res["sandbox_us"] = json.loads(r.stdout.strip().splitlines()[-1])
        if shutil.which("java"):
            walls = []
            for _ in range(5):
                t = time.perf_counter()
                r = sb.run("java -version 2>/dev/null", timeout=120)
                walls.append(time.perf_counter() - t)
            res["java_version_s"] = {"status": r.exit_code, "min": min(walls),
                                     "median": sorted(walls)[2]}
    for k in ("host_us", "sandbox_us"):
        print(k, {n: round(v, 1) for n, v in res[k].items()})
    if "java_version_s" in res:
        print("java -version s", {k: round(v, 3) for k, v in res["java_version_s"].items()})
    print("load", round(res["load"], 1))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
