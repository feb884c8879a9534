"""What a workload's memfd_create gives it in the default Sandbox (run as root or as the test user); prints JSON."""

from __future__ import annotations

import json
import traceback

from agentic_bash import Sandbox

PROBE = r"""
import fcntl, json, mmap, os, sys
out = {}
fd = os.memfd_create("probe", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
out["name"] = os.readlink(f"/proc/self/fd/{fd}")
out["cloexec"] = bool(fcntl.fcntl(fd, fcntl.F_GETFD) & fcntl.FD_CLOEXEC)
os.write(fd, b"hello")
try:
    fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_WRITE | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SHRINK)
    out["add_seals"] = 0
except OSError as e:
    out["add_seals"] = e.errno
out["seals"] = fcntl.fcntl(fd, fcntl.F_GET_SEALS)
try:
    os.write(fd, b"x")
    out["write_sealed"] = 0
except OSError as e:
    out["write_sealed"] = e.errno
m = os.memfd_create("map", 0)
os.ftruncate(m, 4096)
buf = mmap.mmap(m, 4096)
pid = os.fork()
if pid == 0:
    buf[:6] = b"shared"
    os._exit(0)
os.waitpid(pid, 0)
out["mmap_shared"] = bytes(buf[:6]).decode()
x = os.memfd_create("exe", 0)
with open("/bin/true", "rb") as f:
    os.write(x, f.read())
st = {}
for how in ("fexecve", "proc"):
    pid = os.fork()
    if pid == 0:
        try:
            if how == "fexecve":
                os.execve(x, ["true"], {})
            os.execv(f"/proc/self/fd/{x}", ["true"])
        except OSError as e:
            os._exit(100 + e.errno)
    st[how] = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
out["exec"] = st
from multiprocessing import shared_memory
s = shared_memory.SharedMemory(create=True, size=4096)
s.buf[:3] = b"xyz"
t = shared_memory.SharedMemory(name=s.name)
out["shm"] = bytes(t.buf[:3]).decode()
t.close(); s.close(); s.unlink()
print(json.dumps(out))
"""


def main() -> None:
    out: dict = {}
    try:
        with Sandbox() as sb:
            sb.write_file("/workspace/probe.py", PROBE.encode())
            r = sb.run("python3 probe.py", timeout=120)
            out["sandbox"] = [r.stdout, r.stderr, r.exit_code]
    except Exception:  # noqa: BLE001
        out["error"] = traceback.format_exc()
    print("\n@@JSON@@" + json.dumps(out))


if __name__ == "__main__":
    main()
