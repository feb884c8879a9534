"""Real-world script harness: runs a corpus of scripts under ``bash -c`` and a fresh virtual Sandbox.

The corpus is a Python file (default /tmp/realworld/corpus.py, kept out of the repo because it
holds third-party scripts) defining ``cases``: a list of ``(name, [source files], driver)``.
Each case gets an empty temp dir (real bash) or a fresh ``Sandbox(isolation="virtual")``; the
source files are copied in under their base names, then the driver script runs.  Stdout, exit
status and stderr are compared; the pass rate and diffs go to /tmp/realworld/report.txt.

Usage: .venv/bin/python benchmarks/fidelity/realworld.py [--corpus FILE] [-k SUBSTR] [-j N]
"""

from __future__ import annotations

import argparse
import difflib
import multiprocessing
import os
import subprocess
import sys
import tempfile
from collections import Counter

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
BASH = "/usr/bin/bash"
ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/home/user", "USER": "user",
       "LANG": "C.UTF-8", "TERM": "dumb"}


def load(path: str) -> list[tuple[str, list[str], str]]:
    ns: dict = {}
    with open(path, encoding="utf-8") as f:
        exec(compile(f.read(), path, "exec"), ns)  # noqa: S102 - local corpus file
    return list(ns["cases"])


def _files(srcs: list[str]) -> dict[str, bytes]:
    out = {}
    for s in srcs:
        with open(s, "rb") as f:
            out[os.path.basename(s)] = f.read()
    return out


def run_bash(files: dict[str, bytes], driver: str) -> tuple[bytes, bytes, int]:
    with tempfile.TemporaryDirectory() as d:
        for n, data in files.items():
            with open(os.path.join(d, n), "wb") as f:
                f.write(data)
        try:
            p = subprocess.run(["bash", "-c", driver], executable=BASH, cwd=d, env=ENV, capture_output=True,
                               stdin=subprocess.DEVNULL, timeout=20)
        except subprocess.TimeoutExpired:
            return b"", b"<timeout>", -1
        return p.stdout, p.stderr, p.returncode


def run_sandbox(files: dict[str, bytes], driver: str) -> tuple[bytes, bytes, int]:
    sys.path.insert(0, ROOT)
    from agentic_bash import Sandbox

    try:
        with Sandbox(isolation="virtual") as sb:
            for n, data in files.items():
                sb.write_file(n, data)
            r = sb.run(driver, timeout=20)
            return r.stdout_bytes, r.stderr_bytes, r.exit_code
    except Exception as e:  # noqa: BLE001 - a crash is a failure to report, not to raise
        return b"", f"<exception {type(e).__name__}: {e}>".encode(), -2


def one(case: tuple[str, list[str], str]) -> tuple[str, bool, str, str]:
    name, srcs, driver = case
    files = _files(srcs)
    exp = run_bash(files, driver)
    got = run_sandbox(files, driver)
    ok = exp == got
    diff = ""
    if not ok:
        parts = []
        for label, a, b in (("stdout", exp[0], got[0]), ("stderr", exp[1], got[1])):
            if a != b:
                d = difflib.unified_diff(a.decode("utf-8", "replace").splitlines(),
                                         b.decode("utf-8", "replace").splitlines(),
                                         "bash", "ours", lineterm="", n=1)
                parts.append(f"  [{label}]\n" + "\n".join("    " + x for x in list(d)[:40]))
        if exp[2] != got[2]:
            parts.append(f"  [status] bash={exp[2]} ours={got[2]}")
        diff = "\n".join(parts)
    return name, ok, driver, diff


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", default="/tmp/realworld/corpus.py")
    ap.add_argument("-k", default="")
    ap.add_argument("-j", type=int, default=2)
    ap.add_argument("--out", default="/tmp/realworld/report.txt")
    a = ap.parse_args()
    cases = [c for c in load(a.corpus) if a.k in c[0]]
    with multiprocessing.Pool(a.j) as pool:
        res = pool.map(one, cases, chunksize=1)
    npass = sum(ok for _, ok, _, _ in res)
    groups: Counter[str] = Counter()
    gpass: Counter[str] = Counter()
    for name, ok, _, _ in res:
        g = name.split("/")[0]
        groups[g] += 1
        gpass[g] += ok
    lines = [f"real-world: {npass}/{len(res)} pass ({100.0 * npass / max(1, len(res)):.1f}%)"]
    lines += [f"  {g}: {gpass[g]}/{groups[g]}" for g in sorted(groups)]
    for name, ok, driver, diff in res:
        if not ok:
            lines.append(f"\n=== FAIL {name}\n--- driver:\n{driver}\n{diff}")
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines[: len(groups) + 1]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
