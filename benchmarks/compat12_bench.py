"""What the sandbox's own /proc/meminfo costs a reader: open+read+close of it vs of a regular file of the same size, in a default Sandbox() and on the host; `free` wall time; pid 1's install time."""

# Run: .venv/bin/python benchmarks/compat12_bench.py [--opens N] [--json out.json]
# In the sandbox each open of /proc/meminfo that finds pid 1's lease held waits for pid 1 to
# rewrite the file (a signal to its main thread, a Python handler, the cgroup's usage and
# memory.stat read, ~1.5 KB written); opens within 5 ms of the last rewrite find no lease and
# cost what a tmpfs file does. "spaced" opens 6 ms apart always pay the rewrite.

from __future__ import annotations

import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

PROBE = r"""
import json, os, time
out = {}
with open("/proc/meminfo", "rb") as f:
    data = f.read()
with open("/tmp/plain", "wb") as f:
    f.write(data)
def one(p):
    with open(p, "rb") as f:
        f.read()
for name, path in (("meminfo", "/proc/meminfo"), ("plain", "/tmp/plain")):
    one(path)
    t = time.perf_counter()
    for _ in range(N):
        one(path)
    out[name + "_burst"] = (time.perf_counter() - t) / N * 1e6
    lat = []
    for _ in range(N // 10):
        time.sleep(0.006)
        t = time.perf_counter(); one(path); lat.append(time.perf_counter() - t)
    lat.sort()
    out[name + "_spaced"] = lat[len(lat) // 2] * 1e6
    out[name + "_spaced_p99"] = lat[int(len(lat) * 0.99)] * 1e6
print(json.dumps(out))
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--opens", type=int, default=2000)
    ap.add_argument("--json")
    a = ap.parse_args()
    from agentic_bash import Sandbox

    code = f"N = {a.opens}\n" + PROBE
    res: dict = {"opens": a.opens, "load": os.getloadavg()[0]}
    ns: dict = {}
    exec(compile(code.replace("/tmp/plain", f"/tmp/plain-{os.getpid()}").replace(
        "print(json.dumps(out))", "RES = out"), "probe", "exec"), ns)
    os.unlink(f"/tmp/plain-{os.getpid()}")
    res["host_us"] = ns["RES"]
    with Sandbox() as sb:
        # (a file, not `python3 -` with stdin: as an unprivileged user that crashed the
        # sandbox in 5 of 42 runs, session 11's code too; see /work/coord/notes/compat12.md)
        sb.write_file("/tmp/compat12_probe.py", code.encode())
        r = sb.run("python3 /tmp/compat12_probe.py", timeout=300)
        res["sandbox_us"] = json.loads(r.stdout.strip().splitlines()[-1])
        walls = []
        for _ in range(20):
            t = time.perf_counter()
            sb.run("free >/dev/null")
            walls.append(time.perf_counter() - t)
        walls.sort()
        res["free_run_ms"] = {"min": walls[0] * 1e3, "median": walls[10] * 1e3}
        res["install_ms"] = sb._ex.observed.get("t_meminfo", 0) * 1e3
    for k in ("host_us", "sandbox_us"):
        print(k, {n: round(v, 1) for n, v in res[k].items()})
    print("free_run_ms", {n: round(v, 2) for n, v in res["free_run_ms"].items()},
          "install_ms", res["install_ms"], "load", round(res["load"], 1))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
