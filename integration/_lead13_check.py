"""Lead, session 13, through a namespace sandbox: a fork the kernel refuses at the process limit is reported even when what filled the limit is gone by the run's end; the shell's process is named bash; /dev/shm's inodes are bounded by the memory limit; prints JSON."""

from __future__ import annotations

import dataclasses
import json
import warnings

from agentic_bash import Limits, Sandbox

# background sleeps fill the limit, a foreground program is refused, then the jobs are
# killed and waited for: at the run's end nothing of the sandbox's workload is left
FILL = ("for i in $(seq 14); do sleep 30 & done 2>/dev/null; /bin/true; echo rc=$?; "
        "kill $(jobs -p) 2>/dev/null; wait 2>/dev/null; echo done")


def main() -> dict:
    out: dict = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sb = Sandbox("namespace", limits=dataclasses.replace(Limits(), max_processes=8))
    try:
        r = sb.run(FILL, timeout=60)
        out["fill"] = [r.stdout, r.stderr, r.exit_code, r.limit_exceeded]
        r = sb.run("/bin/true; echo rc=$?", timeout=60)
        out["after"] = [r.stdout, r.exit_code, r.limit_exceeded]
        r = sb.run("ps -p $$ -o comm=; cat /proc/$$/comm", timeout=60)
        out["names"] = [r.stdout, r.stderr, r.exit_code]
    finally:
        sb.close()
    # a tmpfs's inodes are memory no byte of its size counts: at most one per KiB of the
    # memory limit, where a cgroup enforces it and where the watchdog samples it
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sb = Sandbox("namespace", limits=dataclasses.replace(Limits(), max_memory_bytes=128 << 20,
                                                              allow_watchdog=True))
    try:
        r = sb.run("stat -f -c %c /dev/shm", timeout=60)
        out["shm_inodes"] = [r.stdout, r.stderr, r.exit_code]
    finally:
        sb.close()
    return out


if __name__ == "__main__":
    print("\n@@JSON@@" + json.dumps(main()))
