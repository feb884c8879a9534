"""Installs real packages inside a default Sandbox() and prints what it saw as JSON (run as root or the test user)."""

from __future__ import annotations

import json
import os
import sys

import agentic_bash as ab


def main() -> None:
    what = sys.argv[1]
    out: dict = {"uid": os.getuid()}
    with ab.Sandbox() as sb:
        out["level"] = sb.isolation_level
        if what == "apt":
            r = sb.run("apt-get install -y sl >/tmp/apt.log 2>&1; echo rc=$?; tail -3 /tmp/apt.log; "
                       "command -v sl; sl -h >/dev/null 2>&1 </dev/null; echo sl=$?", timeout=300)
            out["apt"] = [r.stdout, r.stderr, r.exit_code]
            out["installed"] = [p.to_json() for p in r.packages_installed]
            r = sb.run("apt-get install -y sl 2>&1 | tail -2", timeout=300)
            out["again"] = r.stdout
            out["manifest"] = [p.to_json() for p in sb.packages]
            snap = sb.snapshot()
            with ab.Sandbox.from_snapshot(snap) as sb2:
                r = sb2.run("command -v sl && echo found")
                out["restored"] = [r.stdout, [p.to_json() for p in sb2.packages]]
        elif what == "pip":
            r = sb.run("pip install -q termcolor 2>&1 | tail -3; python3 -c 'import termcolor; print(\"ok\")'",
                       timeout=300)
            out["pip"] = [r.stdout, r.stderr, r.exit_code]
            out["installed"] = [p.to_json() for p in r.packages_installed]
            snap = sb.snapshot()
            with ab.Sandbox.from_snapshot(snap) as sb2:
                r = sb2.run("python3 -c 'import termcolor; print(\"again\")'")
                out["restored"] = [r.stdout, [p.to_json() for p in sb2.packages]]
        elif what == "npm":
            r = sb.run("mkdir -p /workspace/p && cd /workspace/p && npm install --silent --no-audit "
                       "--no-fund is-number >/dev/null 2>&1; echo rc=$?; "
                       "node -e 'console.log(require(\"is-number\")(5))'", timeout=300)
            out["npm"] = [r.stdout, r.stderr, r.exit_code]
            out["installed"] = [p.to_json() for p in r.packages_installed]
    print("\n@@JSON@@" + json.dumps(out))


if __name__ == "__main__":
    main()
