"""Developer tool: run the spec table (or cases matching argv[1]) and print differences."""

from __future__ import annotations

import sys
import tempfile

sys.path.insert(0, ".")
from tests.spec.table import bash_c as real_bash  # noqa: E402
from tests.spec.table import load_cases  # noqa: E402
from agentic_bash import Sandbox  # noqa: E402

flt = sys.argv[1] if len(sys.argv) > 1 else ""
bad = 0
n = 0
for c in load_cases():
    if flt and flt not in c.id:
        continue
    n += 1
    with tempfile.TemporaryDirectory() as d:
        e = real_bash(c.script, cwd=d, stdin=c.stdin)
    with Sandbox(isolation="virtual") as sb:
        g = sb.run(c.script, stdin=c.stdin, timeout=10)
    ok = g.stdout_bytes == e.stdout and g.exit_code == e.returncode and (
        "nostderr" in c.flags and bool(g.stderr_bytes) == bool(e.stderr) or g.stderr_bytes == e.stderr)
    if not ok:
        bad += 1
        print(f"--- {c.id}{' (xfail)' if c.xfail else ''}\n{c.script}")
        if g.stdout_bytes != e.stdout:
            print(f"  stdout exp {e.stdout!r}\n         got {g.stdout_bytes!r}")
        if g.exit_code != e.returncode:
            print(f"  status exp {e.returncode} got {g.exit_code}")
        if g.stderr_bytes != e.stderr:
            print(f"  stderr exp {e.stderr!r}\n         got {g.stderr_bytes!r}")
print(f"{n - bad}/{n} pass")
