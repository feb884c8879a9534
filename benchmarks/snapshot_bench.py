"""Snapshot/restore of 1000 small files and of one 100 MB file vs bashkit; virtual reset() vs tree size.

Run: .venv/bin/python benchmarks/snapshot_bench.py [--no-sandbox] [--json FILE]
Times are the best of N runs (this machine is shared; the minimum is the least noisy figure)
and the median next to it.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import warnings
from typing import Any, Callable

SMALL_FILES = 1000
BIG_BYTES = 100 * 1024 * 1024


def timed(fn: Callable[[], Any], repeat: int) -> tuple[float, float, Any]:
    times, out = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), statistics.median(times), out


def ms(x: float) -> str:
    return f"{x * 1000:8.2f} ms"


def ours(isolation: str, big: bool, repeat: int) -> dict[str, float]:
    from agentic_bash import Sandbox

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sb = Sandbox(isolation=isolation)
    try:
        if big:
            sb.write_file("/workspace/big.bin", b"\xab" * BIG_BYTES)
        else:
            for i in range(SMALL_FILES):
                sb.write_file(f"/workspace/src/f{i}.txt", f"file {i}\n" * 4)
        snap_min, snap_med, data = timed(sb.snapshot, repeat)

        def restore() -> Any:
            s2 = Sandbox.from_snapshot(data, isolation=isolation)
            s2.close()

        rest_min, rest_med, _ = timed(restore, repeat)
        into_min, into_med, _ = timed(lambda: sb.restore(data), repeat)
        return {"snapshot": snap_min, "snapshot_median": snap_med, "from_snapshot": rest_min,
                "from_snapshot_median": rest_med, "restore_into_live": into_min,
                "restore_into_live_median": into_med, "bytes": len(data)}
    finally:
        sb.close()


def bashkit_side(big: bool, repeat: int) -> dict[str, float] | None:
    try:
        import bashkit
    except ImportError:
        return None
    b = bashkit.Bash()
    if big:
        try:   # write_file takes str only; bashkit caps a file at 10 MB (0.20.1), so this fails
            b.write_file("/home/user/big.bin", "a" * BIG_BYTES)
        except Exception as e:  # noqa: BLE001
            return {"error": f"{type(e).__name__}: {e}"}
    else:
        b.execute_sync("mkdir -p /home/user/src")
        for i in range(SMALL_FILES):
            b.write_file(f"/home/user/src/f{i}.txt", f"file {i}\n" * 4)
    snap_min, snap_med, data = timed(b.snapshot, repeat)
    rest_min, rest_med, _ = timed(lambda: bashkit.Bash.from_snapshot(data), repeat)
    return {"snapshot": snap_min, "snapshot_median": snap_med, "from_snapshot": rest_min,
            "from_snapshot_median": rest_med, "bytes": len(data)}


def reset_cost(n: int, repeat: int) -> tuple[float, float]:
    from agentic_bash import Sandbox

    with Sandbox(isolation="virtual") as sb:
        fs = sb._ex.fs
        best = []
        for _ in range(repeat):
            for i in range(n):
                with fs.open(f"/workspace/f{i}", "wb") as f:
                    f.write(b"x")
            t = time.perf_counter()
            sb.reset()
            best.append(time.perf_counter() - t)
        return min(best), statistics.median(best)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--no-sandbox", action="store_true", help="skip the namespace mode")
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--json", help="also write the numbers here")
    a = ap.parse_args()
    from agentic_bash import Sandbox
    Sandbox(isolation="virtual").close()  # command registry import, base tree
    results: dict[str, Any] = {}
    for label, big, rep in (("1000 small files", False, a.repeat), ("one 100 MB file", True, max(3, a.repeat // 2))):
        row: dict[str, Any] = {"virtual": ours("virtual", big, rep), "bashkit": bashkit_side(big, rep)}
        if not a.no_sandbox:
            from agentic_bash.isolation.plan import plan
            from agentic_bash.isolation.probe import probe
            if plan("namespace", probe()).level == "namespace":
                row["namespace"] = ours("namespace", big, max(3, rep // 2))
        results[label] = row
        print(f"\n{label}:  (best / median of runs)")
        bk = row["bashkit"]
        for who, r in row.items():
            if r is None or "error" in r:
                print(f"  {who:10s} " + ("(not installed)" if r is None else f"cannot: {r['error']}"))
                continue
            line = (f"  {who:10s} snapshot {ms(r['snapshot'])} / {ms(r['snapshot_median'])}   "
                    f"from_snapshot {ms(r['from_snapshot'])} / {ms(r['from_snapshot_median'])}")
            if "restore_into_live" in r:
                line += f"   restore() {ms(r['restore_into_live'])}"
            line += f"   {r['bytes'] / 1e6:.2f} MB"
            if bk and "error" not in bk and who != "bashkit":
                line += (f"   ratio vs bashkit: snapshot {r['snapshot'] / bk['snapshot']:.2f}x, "
                         f"restore {r['from_snapshot'] / bk['from_snapshot']:.2f}x")
            print(line)
    print("\nvirtual reset() (best / median):")
    results["reset"] = {}
    for n in (10, 1000, 100_000):
        best, med = reset_cost(n, 5)
        results["reset"][n] = {"best": best, "median": med}
        print(f"  {n:7d} files in the layer: {ms(best)} / {ms(med)}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    sys.exit(main())
