"""The supervisor's sysinfo answer against hostile callers (namespace and landlock levels): pointers into read-only file mappings (shared and private), a buffer flipped read-only by another thread mid-call, and a flood from several processes; the files stay as they were and the supervisor keeps answering."""

from __future__ import annotations

import hashlib
import warnings

import pytest

from _support import sandbox_supported
from agentic_bash import Limits, Sandbox

ok, why = sandbox_supported()
pytestmark = [pytest.mark.skipif(not ok, reason=f"kernel sandbox unavailable: {why}"),
              pytest.mark.timeout(300)]

HOSTILE = r"""
python3 - <<'EOF'
import ctypes, errno, os, threading, time
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long)
libc.mprotect.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
libc.sysinfo.argtypes = (ctypes.c_void_p,)

def call(addr):
    r = libc.sysinfo(ctypes.c_void_p(addr))
    return "ok" if r == 0 else errno.errorcode.get(ctypes.get_errno())

# read-only file mappings: shared and private, of a file the sandbox cannot write
for flags, name in ((0x01, "shared"), (0x02, "private")):
    fd = os.open("/usr/bin/env", os.O_RDONLY)
    addr = libc.mmap(None, 4096, 1, flags, fd, 0)   # PROT_READ
    before = ctypes.string_at(addr, 112)
    print(name, call(addr), ctypes.string_at(addr, 112) == before)
    os.close(fd)

# another thread flips the buffer read-only and back while this one calls sysinfo
buf = libc.mmap(None, 4096, 3, 0x22, -1, 0)
stop = False
def flip():
    while not stop:
        libc.mprotect(buf, 4096, 1)
        libc.mprotect(buf, 4096, 3)
t = threading.Thread(target=flip); t.start()
seen = set()
end = time.monotonic() + 2
while time.monotonic() < end:
    seen.add(call(buf))
stop = True; t.join()
print("race", ",".join(sorted(seen)))

# a flood from 4 processes at once
pids = []
for _ in range(4):
    pid = os.fork()
    if pid == 0:
        b = ctypes.create_string_buffer(112)
        end = time.monotonic() + 2
        while time.monotonic() < end:
            libc.sysinfo(b)
        os._exit(0)
    pids.append(pid)
for p in pids:
    os.waitpid(p, 0)
b = ctypes.create_string_buffer(112)
print("after", call(ctypes.addressof(b)))
print("phys", os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
EOF
"""


def _digest(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


@pytest.mark.parametrize("isolation", ["namespace", "landlock"])
def test_sysinfo_hostile_pointers_and_flood(isolation: str) -> None:
    """The landlock level's supervisor (S1, in the host's pid namespace) answers too."""
    before = _digest("/usr/bin/env")
    cap = 384 << 20
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # (the landlock level warns of what it lacks)
        sb = Sandbox(isolation=isolation, limits=Limits(max_process_memory=cap))
    with sb:
        r = sb.run(HOSTILE, timeout=120)
        after_in = sb.run("sha256sum /usr/bin/env", timeout=30).stdout.split()[0]
    out = r.stdout
    assert r.exit_code == 0, r
    # EFAULT, as from the kernel, and the mapped bytes unchanged
    assert "shared EFAULT True\n" in out and "private EFAULT True\n" in out, r
    # each call of the race is answered one way or the other (never another error)
    race = [line for line in out.splitlines() if line.startswith("race ")]
    assert race and set(race[0][5:].split(",")) <= {"ok", "EFAULT"}, r
    assert "after ok\n" in out, r
    assert f"phys {cap}\n" in out, r     # the per-program cap, as the namespace level says
    assert _digest("/usr/bin/env") == before == after_in
