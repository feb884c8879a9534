"""Echo latency of 20 sandboxes (builtin echo, 10-30 ms apart) while 3 other sandboxes run a native CPU hog, the hog at the launcher's niceness and under `nice -n 19` (issue 13); set PYTHONPATH to compare trees."""

from __future__ import annotations

import asyncio
import random
import sys
import time

from agentic_bash import Sandbox

N_ECHO, N_HOG, SECS = 20, 3, 6


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p / 100 * len(xs)))] * 1e3


async def trial(echos: list[Sandbox], hogs: list[Sandbox], nice: int) -> list[float]:
    lat: list[float] = []
    stop = time.monotonic() + SECS

    async def echo(sb: Sandbox) -> None:
        rnd = random.Random(id(sb))
        await asyncio.sleep(rnd.random() * 0.02)
        while time.monotonic() < stop:
            t0 = time.perf_counter()
            await sb.arun("echo hi")
            lat.append(time.perf_counter() - t0)
            await asyncio.sleep(0.01 + rnd.random() * 0.02)

    async def hog(sb: Sandbox) -> None:
        pre = f"/usr/bin/nice -n {nice} " if nice else ""
        await sb.arun(f"{pre}/usr/bin/timeout {SECS + 0.5} /usr/bin/python3 -c 'while 1: pass'",
                      timeout=SECS + 5)

    await asyncio.gather(*(echo(s) for s in echos), *(hog(s) for s in hogs))
    return lat


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    arms = [int(a) for a in sys.argv[2].split(",")] if len(sys.argv) > 2 else [0, 19]
    echos = [Sandbox(isolation="namespace") for _ in range(N_ECHO)]
    hogs = [Sandbox(isolation="namespace") for _ in range(N_HOG)]
    for s in echos + hogs:
        s.run("true")
    res: dict[int, list[float]] = {a: [] for a in arms}
    try:
        for r in range(rounds):
            for nice in arms:
                with open("/proc/loadavg") as f:
                    load = f.read().split()[0]
                lat = asyncio.run(trial(echos, hogs, nice))
                res[nice] += lat
                print(f"round {r} hog nice +{nice:2}: echo n={len(lat)} p50 {pct(lat, 50):.2f} "
                      f"p90 {pct(lat, 90):.2f} p99 {pct(lat, 99):.2f} ms load {load}", flush=True)
        for nice, lat in res.items():
            print(f"ALL hog nice +{nice:2}: n={len(lat)} p50 {pct(lat, 50):.2f} "
                  f"p90 {pct(lat, 90):.2f} p99 {pct(lat, 99):.2f} ms")
    finally:
        for s in echos + hogs:
            s.close()


if __name__ == "__main__":
    main()
