"""runner15: the layer scan leaves a clean non-empty upper unread, and still reports every
change a program makes in it, including a store through a shared mapping held by a
background process (in a directory it made before any scan watched it); prints JSON."""

from __future__ import annotations

import json
import traceback

from agentic_bash import Limits, Sandbox

W = "/workspace/p"
# a background program: maps FILE (making its directory first when asked), says so in
# /dev/shm (not a tracked upper), writes through the mapping on /dev/shm/go-NAME, stays
MAPPER = r"""
import mmap, os, sys, time
path, name, mkdir = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
if mkdir:
    os.mkdir(os.path.dirname(path))
    with open(path, "wb") as f:
        f.write(b"x" * 4096)
os.utime(path, (1, 1))
f = open(path, "r+b"); m = mmap.mmap(f.fileno(), 0); f.close()
open("/dev/shm/mapped-" + name, "w").close()
while not os.path.exists("/dev/shm/go-" + name):
    time.sleep(0.01)
m[0:1] = b"Q"
open("/dev/shm/done-" + name, "w").close()
time.sleep(600)
"""


def _files(r) -> list:
    keep = lambda ps: sorted(p for p in ps if p.startswith("/workspace/"))  # noqa: E731
    return [keep(r.files_created), keep(r.files_modified), keep(r.files_deleted), r.exit_code]


def _wait(name: str) -> str:
    return f"while [ ! -e /dev/shm/{name} ]; do /bin/sleep 0.01; done"


def main() -> dict:
    out: dict = {}
    sb = Sandbox("namespace", limits=Limits(timeout=60))
    try:
        sb.write_file("/tmp/mapper.py", MAPPER.encode())
        r = sb.run(f"mkdir -p {W}/a {W}/b && /usr/bin/touch {W}/a/f2 {W}/b/f3 && "
                   f"/bin/dd if=/dev/zero of={W}/a/f1 bs=4096 count=1 status=none && "
                   f"/bin/cp /etc/hostname {W}/b/h")
        out["setup"] = _files(r)
        out["true"] = _files(sb.run("/bin/true"))
        out["touch"] = _files(sb.run(f"/usr/bin/touch -d @5 {W}/a/f1"))
        out["append"] = _files(sb.run(f"/bin/sh -c 'echo more >> {W}/b/f3'"))
        out["mv"] = _files(sb.run(f"/bin/mv {W}/a/f2 {W}/b/f2"))
        out["rm"] = _files(sb.run(f"/bin/rm {W}/b/h"))
        out["read"] = _files(sb.run(f"/bin/cat {W}/b/f3 > /dev/null; /bin/ls -R {W} > /dev/null"))
        # a mapping of an existing file, held by a background program across runs
        r = sb.run(f"/usr/bin/python3 /tmp/mapper.py {W}/a/f1 one 0 > /dev/null 2>&1 & "
                   + _wait("mapped-one"))
        out["mapped"] = _files(r)
        out["true_while_mapped"] = _files(sb.run("/bin/true"))
        out["mapped_write"] = _files(sb.run(f"/usr/bin/touch /dev/shm/go-one; {_wait('done-one')}"))
        # a directory made, and a file in it mapped, by a program before any scan saw them
        r = sb.run(f"/usr/bin/python3 /tmp/mapper.py {W}/new/m two 1 > /dev/null 2>&1 & "
                   + _wait("mapped-two"))
        out["new_dir"] = _files(r)
        out["new_dir_write"] = _files(sb.run(f"/usr/bin/touch /dev/shm/go-two; {_wait('done-two')}"))
        sb.run("kill %1 %2; wait")
        out["after_kill"] = _files(sb.run("/bin/true"))
        out["late"] = _files(sb.run(f"/usr/bin/touch {W}/new/late"))
        out["quiet"] = [_files(sb.run("/bin/true")) for _ in range(3)]
    finally:
        sb.close()
    return out


if __name__ == "__main__":
    try:
        res = main()
    except Exception:  # noqa: BLE001
        res = {"error": traceback.format_exc()}
    print("\n@@JSON@@" + json.dumps(res))
