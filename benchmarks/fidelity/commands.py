"""Command fidelity harness: runs tests/commands/agent_corpus.py under bash -c and a virtual Sandbox.

Usage: .venv/bin/python benchmarks/fidelity/commands.py [-k SUBSTR] [-j N] [--out FILE]
Prints the pass rate and, for each failing line, unified diffs of stdout / stderr and both
exit statuses.
"""

from __future__ import annotations

import argparse
import difflib
import multiprocessing
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests", "commands"))

import agent_corpus  # noqa: E402


def _one(cmd: str) -> tuple[str, list[str]]:
    try:
        real = agent_corpus.run_real(cmd)
    except Exception as e:  # noqa: BLE001 - report, do not die
        return cmd, [f"real bash failed: {e!r}"]
    try:
        ours = agent_corpus.run_virtual(cmd)
    except Exception as e:  # noqa: BLE001
        return cmd, [f"sandbox raised: {e!r}"]
    problems = []
    for label, a, b in (("stdout", real[0], ours[0]), ("stderr", real[1], ours[1])):
        if a != b:
            d = difflib.unified_diff(a.decode("utf-8", "backslashreplace").splitlines(),
                                     b.decode("utf-8", "backslashreplace").splitlines(),
                                     f"{label} (bash)", f"{label} (ours)", lineterm="", n=1)
            problems.append("\n".join(d))
    if real[2] != ours[2]:
        problems.append(f"exit status: bash {real[2]}, ours {ours[2]}")
    return cmd, problems


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("-k", default="")
    ap.add_argument("-j", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    cmds = [c for c in agent_corpus.COMMANDS if args.k in c]
    with multiprocessing.Pool(args.j) as pool:
        results = pool.map(_one, cmds, chunksize=4)
    fails = [(c, p) for c, p in results if p]
    lines = []
    for c, p in fails:
        lines.append("=" * 70)
        lines.append("$ " + c)
        lines.extend(p)
    n = len(results)
    lines.append(f"\npassed {n - len(fails)}/{n} ({100.0 * (n - len(fails)) / max(n, 1):.1f}%)")
    text = "\n".join(lines)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
