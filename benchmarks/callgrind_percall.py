"""Instructions per call (valgrind callgrind) of the per-call cases, for one or two trees.

Usage: .venv/bin/python benchmarks/callgrind_percall.py [--root OLD_TREE] [--n 200] [--jobs 2]

For each tree and case, one process under ``valgrind --tool=callgrind`` warms a virtual
Sandbox, then runs the case N times; a second process does the same with N=0. The
difference over N is the case's instruction count per call (start-up, imports and warm-up
cancel out). PYTHONHASHSEED is fixed so two runs execute the same code. Instruction counts
do not move with the machine's load, unlike times. ``--root`` is another checkout (e.g.
``git archive`` of main before a change) for a before/after table from one run.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent

CASES = {
    "echo hi | cat": "echo hi | cat",
    "new printf | grep -c a": "printf 'aN\\nb\\n' | grep -c a",
    "new if": "if [ N -gt 3 ]; then echo y; else echo n; fi",
    "new for": "for i in 1 2 N; do echo $i; done",
    "new case": "case xN in x1) echo one;; *) echo other;; esac",
    "new echo": "echo hello N",
    "new 3-stage pipeline": "echo N | tr 0-9 a-j | wc -c",
    "new echo N | cat": "echo N | cat",
}

CHILD = r"""
import sys
sys.path.insert(0, sys.argv[1])
from agentic_bash import Sandbox
script, n = sys.argv[2], int(sys.argv[3])
sb = Sandbox(isolation="virtual")
for i in range(20):  # warm: imports, caches, the first of each shape
    sb.run(script.replace("N", str(10**6 + i)))
for i in range(n):
    sb.run(script.replace("N", str(i)))
sb.close()
"""


def instructions(root: str, script: str, n: int) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "cg.out")
        env = dict(os.environ, PYTHONHASHSEED="0", LC_ALL="C.UTF-8")
        subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
                        sys.executable, "-c", CHILD, root, script, str(n)],
                       env=env, check=True, capture_output=True)
        text = Path(out).read_text()
    m = re.search(r"^(?:summary|totals):\s+(\d+)", text, re.M)
    if m is None:
        raise RuntimeError("no totals in the callgrind output")
    return int(m.group(1))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", help="an older tree to compare with")
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--only", help="comma-separated case names")
    a = ap.parse_args()
    trees = {"now": str(HERE.parent)}
    if a.root:
        trees = {"before": a.root, **trees}
    cases = {k: v for k, v in CASES.items() if not a.only or k in a.only.split(",")}
    jobs = {}
    with ThreadPoolExecutor(a.jobs) as pool:
        for t, root in trees.items():
            for name, script in cases.items():
                jobs[(t, name, a.n)] = pool.submit(instructions, root, script, a.n)
                jobs[(t, name, 0)] = pool.submit(instructions, root, script, 0)
    print(f"{'case (instructions per call)':30}" + "".join(f"{t:>14}" for t in trees)
          + ("   now/before" if a.root else ""))
    for name in cases:
        vals = [(jobs[(t, name, a.n)].result() - jobs[(t, name, 0)].result()) / a.n for t in trees]
        row = f"{name:30}" + "".join(f"{v:14,.0f}" for v in vals)
        if a.root:
            row += f"   {vals[1] / vals[0]:.2f}x"
        print(row)


if __name__ == "__main__":
    main()
