"""Native-only pipelines started from the runner's run thread (percall13), through a namespace sandbox: output, timeout, interrupt, close, streamed output and the process limit; prints JSON."""

from __future__ import annotations

import dataclasses
import json
import os
import threading
import time
import warnings

from agentic_bash import Limits, Sandbox

LEFT = ("for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline 2>/dev/null; echo; done "
        "| grep -c '^sleep 3[01] '")


def main() -> dict:
    out: dict = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sb = Sandbox("namespace")
    try:
        out["level"] = sb.isolation.level
        r = sb.run("seq 5 | tac | head -2; echo ${PIPESTATUS[@]}; yes | head -1; echo ${PIPESTATUS[@]}")
        out["plain"] = [r.stdout, r.stderr, r.exit_code]
        # a timeout ends every stage
        t = time.monotonic()
        r = sb.run("sleep 30 | sleep 31 | cat", timeout=1)
        out["timeout"] = [r.timed_out, r.exit_code, round(time.monotonic() - t, 2)]
        out["timeout_left"] = sb.run(LEFT).stdout.strip()
        # an interrupt (again every 50 ms until the run is over) ends it too
        done = threading.Event()

        def interrupter() -> None:
            done.wait(0.3)
            while not done.wait(0.05):
                sb.interrupt()
        th = threading.Thread(target=interrupter)
        th.start()
        t = time.monotonic()
        try:
            r = sb.run("sleep 30 | sleep 31 | cat; echo not-reached", timeout=60)
        finally:
            done.set()
            th.join()
        out["interrupt"] = [r.exit_code, "not-reached" in r.stdout, round(time.monotonic() - t, 2)]
        out["interrupt_left"] = sb.run(LEFT).stdout.strip()
        # streamed output of the last stage and of every stage's stderr
        got: dict[int, list[bytes]] = {1: [], 2: []}
        r = sb._ex.run("seq 3 | cat; seq 2 | dash -c 'cat >&2' | cat",
                       on_output=lambda fd, b: got[fd].append(b))
        out["streamed"] = [b"".join(got[1]).decode(), b"".join(got[2]).decode(), r.exit_code]
        out["after"] = sb.run("echo after").stdout
    finally:
        sb.close()
    # the process limit: stages past it are refused as a fork would be
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sb = Sandbox("namespace", limits=dataclasses.replace(Limits(), max_processes=8))
    try:
        r = sb.run("sleep 0.2 | sleep 0.2 | cat; echo ${PIPESTATUS[@]}", timeout=30)
        out["limit_room"] = [r.stdout, r.stderr, r.exit_code, r.limit_exceeded]
        r = sb.run("for i in 1 2 3 4 5 6; do sleep 3 & done; sleep 1 | sleep 1 | sleep 1; "
                   "echo ${PIPESTATUS[@]}; kill %1 %2 %3 %4 %5 %6; wait", timeout=30)
        out["limit"] = [r.stdout, r.stderr, r.exit_code, r.limit_exceeded]
        out["limit_after"] = sb.run("seq 2 | cat").stdout
    finally:
        sb.close()
    # close() during a pipeline from another thread: the run ends, nothing is left
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sb = Sandbox("namespace")
    pid = sb._ex.pid
    threading.Timer(0.5, sb.close).start()
    t = time.monotonic()
    try:
        sb.run("sleep 30 | sleep 31 | cat", timeout=60)
        out["close"] = "returned"
    except Exception as e:  # noqa: BLE001
        out["close"] = type(e).__name__
    out["close_s"] = round(time.monotonic() - t, 2)
    end = time.monotonic() + 20
    while time.monotonic() < end:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    out["close_gone"] = time.monotonic() < end
    return out


if __name__ == "__main__":
    print("\n@@JSON@@" + json.dumps(main()))
