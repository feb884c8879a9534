"""`make bench`: run the benchmark suites one after another and print each one's table.

Usage: .venv/bin/python benchmarks/run.py [--quick] [--only cpu,peers,...] [--list]

Each suite is its own script run as a child process (a suite that fails, or needs what this
machine lacks, is reported and the others still run); peers (bashkit, real bash with GNU
tools and mawk, just-bash) appear side by side in the suites that compare against them,
wherever they are installed. The default set is the in-process suites (a few minutes on two
cores); ``--all`` adds the sandboxed ones (namespaces, cgroups, network, packages, serve).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

# name, script, arguments (full), arguments (--quick), in the default set
SUITES = [
    ("cpu", "cpu_bench.py", [], ["--calls", "100"], True),
    ("peers", "peers.py", ["--only", "ours,bash,bashkit"], ["--quick", "--only", "ours,bash,bashkit"], True),
    ("awk", "awk_bench.py", [], [], True),
    ("search", "search_bench.py", [], [], True),
    ("snapshot", "snapshot_bench.py", ["--no-sandbox"], ["--no-sandbox"], True),
    ("vfs", "vfs_bench.py", [], [], True),
    ("tools", "tools_bench.py", [], ["--n", "50"], True),
    ("sandbox", "sandbox_bench.py", [], ["--n", "50"], False),
    ("pool", "pool_bench.py", [], ["--quick"], False),
    ("integrity", "integrity_bench.py", [], ["--n", "100"], False),
    ("limits", "limits_bench.py", [], ["--n", "50"], False),
    ("network", "network_bench.py", [], ["--n", "50"], False),
    ("serve", "serve_bench.py", [], ["--n", "300"], False),
    ("packages", "packages_bench.py", [], ["--n", "5"], False),
]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="fewer iterations per suite")
    ap.add_argument("--all", action="store_true", help="also the sandboxed suites")
    ap.add_argument("--only", help="comma-separated suite names")
    ap.add_argument("--list", action="store_true")
    a = ap.parse_args()
    if a.list:
        for name, script, _, _, default in SUITES:
            print(f"{name:10} {script:22} {'default' if default else '--all'}")
        return 0
    want = set(a.only.split(",")) if a.only else None
    env = dict(os.environ, LC_ALL="C.UTF-8", PYTHONPATH=str(HERE.parent))
    failed = []
    for name, script, full, quick, default in SUITES:
        if want is not None and name not in want:
            continue
        if want is None and not default and not a.all:
            continue
        path = HERE / script
        if not path.exists():
            print(f"== {name}: {script} is missing", flush=True)
            failed.append(name)
            continue
        print(f"\n== {name} ({script} {' '.join(quick if a.quick else full)})", flush=True)
        t0 = time.monotonic()
        r = subprocess.run([sys.executable, str(path), *(quick if a.quick else full)], env=env)
        print(f"== {name}: exit {r.returncode} in {time.monotonic() - t0:.0f} s", flush=True)
        if r.returncode:
            failed.append(name)
    if failed:
        print(f"\nsuites that failed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
