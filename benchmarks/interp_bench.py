"""Interpreter benchmarks: ours next to real bash and bashkit (reuses benchmarks/peers.py's cases).

Usage: .venv/bin/python benchmarks/interp_bench.py [--quick]
Prints seconds per iteration for each case and the ratio ours / peer.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import peers  # noqa: E402


def _fmt(v: object) -> str:
    if isinstance(v, float):
        return f"{v * 1e6:10.1f}us" if v < 1e-3 else f"{v * 1e3:10.2f}ms"
    return f"{str(v)[:24]:>12}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--no-bashkit", action="store_true")
    a = ap.parse_args()
    res = {"ours": peers.bench_ours(a.quick), "bash": peers.bench_bash(a.quick)}
    if not a.no_bashkit:
        res["bashkit"] = peers.bench_bashkit(a.quick)
    names = list(res["ours"])
    cols = list(res)
    print(f"{'case':22}" + "".join(f"{c:>13}" for c in cols) + "   ratios (ours/peer)")
    for n in names:
        row = f"{n:22}" + "".join(" " + _fmt(res[c].get(n, "-")) for c in cols)
        ratios = []
        for c in cols[1:]:
            o, p = res["ours"].get(n), res[c].get(n)
            if isinstance(o, float) and isinstance(p, float) and p > 0:
                ratios.append(f"{c}:{o / p:.2f}x")
        print(row + "   " + " ".join(ratios))


if __name__ == "__main__":
    main()
