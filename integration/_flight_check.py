"""A workload that fills the user's count of descriptors in flight over unix sockets, then the caller starts another sandbox (run as root or as the test user); prints JSON."""

from __future__ import annotations

import json
import resource
import time
import traceback

from agentic_bash import Sandbox

# sends one descriptor 250 times a message until the kernel refuses (ETOOMANYREFS once the
# user's count passes the sender's limit), then holds them queued
HOG = r"""
import os, socket, sys, time
a, b = socket.socketpair()
a.setblocking(False)
fd = os.open("/dev/null", os.O_RDONLY)
n = 0
try:
    while True:
        socket.send_fds(a, [b"x"], [fd] * 250)
        n += 250
except OSError as e:
    print(n, e.errno, flush=True)
time.sleep(60)
"""


def main() -> None:
    out: dict = {"host_hard": resource.getrlimit(resource.RLIMIT_NOFILE)[1]}
    try:
        with Sandbox() as sb:
            sb.write_file("/workspace/hog.py", HOG.encode())
            out["limits"] = sb.run("ulimit -n; ulimit -Hn").stdout.split()
            sb.run("ulimit -n $(ulimit -Hn); python3 hog.py > hog.out 2>&1 &")
            end = time.monotonic() + 60
            while time.monotonic() < end and not sb.run("cat hog.out").stdout:
                time.sleep(0.1)
            out["hog"] = sb.run("cat hog.out").stdout.split()
            try:
                with Sandbox() as other:
                    r = other.run("echo other")
                    out["other"] = [r.stdout, r.stderr, r.exit_code]
            except Exception as e:  # noqa: BLE001 - the finding
                out["other"] = f"{type(e).__name__}: {e}"
            r = sb.run("echo same")
            out["same"] = [r.stdout, r.stderr, r.exit_code]
            sb.run("kill %1; wait")
    except Exception:  # noqa: BLE001
        out["error"] = traceback.format_exc()
    print("\n@@JSON@@" + json.dumps(out))


if __name__ == "__main__":
    main()
