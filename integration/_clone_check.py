"""The sandbox's process tree as the host sees it (pid 1 cloned by the zygote, or S1 on the fallback path), pid 1's privileges at the first run, and clone_fork in a child; prints JSON."""

from __future__ import annotations

import json
import os
import traceback

from agentic_bash import Sandbox
from agentic_bash.isolation.zygote import get_zygote


def _status(pid: int) -> dict[str, str]:
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            out[k] = v.strip()
    return out


def _clone_fork_child() -> dict:
    """clone_fork into new user+pid+mount namespaces: the child is pid 1 there, glibc's tid
    field says so, and threads, fork and subprocess work in it."""
    import threading

    from agentic_bash.isolation import syscalls as sc
    r, w = os.pipe()
    pid = sc.clone_fork(sc.CLONE_NEWUSER | sc.CLONE_NEWPID | sc.CLONE_NEWNS)
    if pid == 0:
        code = 1
        try:
            import ctypes
            import subprocess
            got = {"pid": os.getpid(), "tid": threading.get_native_id(),
                   "tid_field": ctypes.c_int32.from_address(sc._tid_addr).value}
            box = []
            t = threading.Thread(target=lambda: box.append(threading.get_native_id()))
            t.start()
            t.join()
            got["thread_tid"] = box[0]
            p = os.fork()
            if p == 0:
                os._exit(7)
            got["fork_status"] = os.waitstatus_to_exitcode(os.waitpid(p, 0)[1])
            got["subprocess"] = subprocess.run(["/bin/echo", "sub"], capture_output=True,
                                               text=True).stdout
            os.write(w, json.dumps(got).encode())
            code = 3
        finally:
            os._exit(code)
    os.close(w)
    data = b""
    while chunk := os.read(r, 65536):
        data += chunk
    os.close(r)
    status = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    return {"child": json.loads(data or b"{}"), "status": status}


def main() -> None:
    out: dict = {}
    try:
        import psutil
        with Sandbox() as sb:
            top = psutil.Process(sb._ex.pid)
            tree = [top.pid] + [c.pid for c in top.children(recursive=True)]
            ns = {p: _status(p).get("NSpid", "").split() for p in tree}
            pid1 = [p for p in tree if len(ns[p]) > 1 and ns[p][-1] == "1"]
            r = sb.run("echo ok; /bin/true; echo $?")
            st = _status(pid1[0]) if pid1 else {}
            out.update(processes=len(tree), top_is_pid1=bool(pid1) and pid1[0] == top.pid,
                       top_parent_is_zygote=top.ppid() == get_zygote().pid,
                       pid1_count=len(pid1), run=[r.stdout, r.exit_code],
                       pid1_capeff=st.get("CapEff"), pid1_nnp=st.get("NoNewPrivs"),
                       mechanisms=dict(sb.isolation.mechanisms))
        out["clone_fork"] = _clone_fork_child()
    except Exception:  # noqa: BLE001
        out["error"] = traceback.format_exc()
    print("\n@@JSON@@" + json.dumps(out))


if __name__ == "__main__":
    main()
