"""The runner's lazily armed lend timer (echo14): after a burst of short runs (the timer kept armed), after an idle gap (it fired between runs) and after a native wait (it was disarmed), a long run of builtins or programs is still interrupted and still times out; a plain run's figures; prints JSON."""

from __future__ import annotations

import json
import threading
import time
import warnings

from agentic_bash import Sandbox

LONG = {"builtin_loop": "while :; do :; done", "sleep": "sleep 30", "native": "/bin/sleep 30",
        "programs": "while :; do /bin/true; done"}


def _interrupted(sb: Sandbox, script: str, after: float = 0.3) -> list:
    t = threading.Timer(after, sb.interrupt)
    t.start()
    start = time.monotonic()
    try:
        r = sb.run(script, timeout=60)
    finally:
        t.cancel()
    return [r.exit_code, r.timed_out, round(time.monotonic() - start, 2)]


def _timed_out(sb: Sandbox, script: str) -> list:
    start = time.monotonic()
    r = sb.run(script, timeout=0.5)
    return [r.exit_code, r.timed_out, round(time.monotonic() - start, 2)]


def main() -> dict:
    out: dict = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sb = Sandbox("namespace")
    try:
        out["level"] = sb.isolation.level
        for name, script in LONG.items():
            for _ in range(300):   # a burst: the lend timer stays armed from run to run
                sb.run("echo hi")
            out[f"burst_interrupt_{name}"] = _interrupted(sb, script)
            for _ in range(300):
                sb.run("echo hi")
            out[f"burst_timeout_{name}"] = _timed_out(sb, script)
            sb.run("echo hi")
            time.sleep(0.2)   # idle: an armed timer fired between runs
            out[f"idle_interrupt_{name}"] = _interrupted(sb, script)
            # a native wait past 2 ms disarms the timer and re-arms it when it ends
            out[f"watched_interrupt_{name}"] = _interrupted(sb, "/bin/sleep 0.05; " + script)
        r = sb.run("echo hi")
        out["plain"] = [r.stdout, r.exit_code, r.cpu_time > 0, r.peak_memory > 0,
                        r.limit_exceeded, r.timed_out, r.truncated, list(r.violations)]
        out["after"] = sb.run("echo after").stdout
    finally:
        sb.close()
    return out


if __name__ == "__main__":
    print("\n@@JSON@@" + json.dumps(main()))
