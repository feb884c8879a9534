"""Attacks on a default Sandbox() left open by earlier passes (the bound prefix, unbounded lists, memory the watchdog cannot see) and new ones, judged on the host; prints JSON."""

# Usage: python _attack10.py PART TOKEN. test_attack10_host.py runs each part as root and
# (runuser) as the unprivileged user. Helpers (Fresh, call, leftovers) come from _attack9.py,
# which also gives this process a private TMPDIR before agentic_bash is imported.

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import textwrap
import time
from typing import Any, Callable

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _attack9 import TMP, Fresh, _res, call, main  # noqa: E402

import agentic_bash as ab  # noqa: E402

MiB = 1 << 20


# -- part "prefix": a venv made at a project's root ------------------------------------------
VENV_CHILD = r'''
import json, sys
import agentic_bash as ab
from agentic_bash.executors.sandboxed import _python_binds
proj = sys.argv[1]
out = {"prefix": sys.prefix, "binds": list(_python_binds())}
with ab.Sandbox() as sb:
    r = sb.run(f"cat {proj}/.env {proj}/src/app.py {proj}/.git/config; ls -a {proj}; "
               f"echo alive", timeout=60)
    out.update(out=r.stdout, err=r.stderr, code=r.exit_code)
print("\n@@CHILD@@" + json.dumps(out))
'''


def part_prefix(token: str) -> dict[str, Any]:
    """``python -m venv .`` at a project's root, then a Sandbox() from that venv: the sandbox
    must not see the project (before: the whole sys.prefix, project included, was bound)."""
    proj = os.path.join(TMP, f"proj-{token}")
    base = getattr(sys, "_base_executable", None) or sys.executable
    subprocess.run([base, "-m", "venv", "--without-pip", proj], check=True,
                   capture_output=True, timeout=120)
    secret = f"PROJSECRET-{token}"
    for rel, text in ((".env", f"API_TOKEN={secret}-env\n"), ("src/app.py", f"# {secret}-src\n"),
                      (".git/config", f"[remote]\n url = https://u:{secret}-git@example\n")):
        os.makedirs(os.path.dirname(os.path.join(proj, rel)), exist_ok=True)
        with open(os.path.join(proj, rel), "w") as f:
            f.write(text)
    # the venv finds this checkout's dependencies through a .pth, as a project's would its own
    site = subprocess.run([os.path.join(proj, "bin", "python"), "-c",
                           "import site; print(site.getsitepackages()[0])"],
                          capture_output=True, text=True, check=True, timeout=60).stdout.strip()
    with open(os.path.join(site, "_deps.pth"), "w") as f:
        f.write("\n".join(p for p in sys.path if p and os.path.isabs(p) and os.path.isdir(p)))
    p = subprocess.run([os.path.join(proj, "bin", "python"), "-c", VENV_CHILD, proj],
                       capture_output=True, text=True, timeout=240, cwd="/",
                       env={**os.environ})
    marker = "\n@@CHILD@@"
    if marker not in p.stdout:
        return {"error": f"child failed {p.returncode}:\n{p.stdout[-2000:]}\n{p.stderr[-4000:]}"}
    got = json.loads(p.stdout.rsplit(marker, 1)[1])
    got["proj"] = proj
    got["leaked"] = [k for k in ("env", "src", "git") if f"{secret}-{k}" in got["out"]]
    return {"venv_at_project_root": got}


# -- part "lists": Result.files_created and list_files over many files -----------------------
def part_lists(token: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    n = 30000
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    fr = Fresh()
    with fr as sb:
        r = sb.run(f"python3 -c 'import os\nos.mkdir(\"/workspace/m\")\nfor i in range({n}):"
                   f" open(\"/workspace/m/f%05d\" % i, \"w\").close()'; ls /workspace/m | wc -l",
                   timeout=120)
        lst = sb.list_files("/workspace/m")
        few = sb.list_files("/workspace/m", limit=5)
        every = sb.list_files("/workspace/m", limit=None)
        out["namespace"] = {
            "made": r.stdout.strip(), "made_err": r.stderr[-600:], "created": len(r.files_created),
            "files_truncated": r.files_truncated, "first": list(r.files_created[:2]),
            "in_dict": r.to_dict().get("files_truncated"),
            "list": len(lst), "list_truncated": getattr(lst, "truncated", None),
            "list_first": [f.name for f in lst[:2]],
            "few": [f.name for f in few], "few_truncated": getattr(few, "truncated", None),
            "every": len(every), "every_truncated": getattr(every, "truncated", None),
            "one_file": [f.name for f in sb.list_files("/workspace/m/f00007")],
            "small": sb.run("mkdir -p /workspace/s && touch /workspace/s/a /workspace/s/b",
                            timeout=30).files_truncated}
    out["namespace"]["left"] = fr.left
    out["host_rss_growth"] = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss0) << 10
    with ab.Sandbox(isolation="virtual") as sb:
        r = sb.run("mkdir /workspace/m; cd /workspace/m; for i in $(seq 1 10050); do : > f$i; "
                   "done", timeout=120)
        lst = sb.list_files("/workspace/m")
        out["virtual"] = {"created": len(r.files_created), "files_truncated": r.files_truncated,
                          "list": len(lst), "list_truncated": getattr(lst, "truncated", None)}
    return out


# -- part "memory": kernel memory no process shows (unprivileged: the watchdog's blind spots) --
INFLIGHT_PY = textwrap.dedent(r'''
    import os, socket, sys, time
    n, size = int(sys.argv[1]), int(sys.argv[2]) << 20
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    held = 0
    for i in range(n):
        fd = os.memfd_create("x%d" % i)
        chunk = b"\xa5" * (1 << 20)
        for _ in range(size >> 20):
            os.write(fd, chunk)
        socket.send_fds(a, [b"m"], [fd])
        os.close(fd)          # now only the message in flight holds it
        held += size
        print("held", held >> 20, flush=True)
    time.sleep(4)
    print("survived", held >> 20, flush=True)
''')

SOCKETS_PY = textwrap.dedent(r'''
    import os, socket, sys, time
    n, inflight = int(sys.argv[1]), sys.argv[2] == "inflight"
    keep, total, chunk = [], 0, b"x" * 65536
    for i in range(n):
        a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        # big buffers, few sockets: descriptors in flight are counted per host user, and
        # thousands of them would stop this user's other sandboxes from starting meanwhile
        a.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
        a.setblocking(False)
        try:
            while True:
                total += a.send(chunk)
        except OSError:
            pass
        if inflight:   # both ends into a message in flight, then closed: only the
            c, d = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)   # carrier's d holds
            socket.send_fds(c, [b"s"], [a.fileno(), b.fileno()])
            a.close(); b.close(); c.close()
            keep.append(d)
        else:
            keep.append((a, b))
        if i % 8 == 0:
            print("queued", total >> 20, flush=True)
    print("queued", total >> 20, flush=True)
    time.sleep(4)
    print("survived", total >> 20, flush=True)
''')

TCP_PY = textwrap.dedent(r'''
    import socket, sys, time
    srv = socket.socket(); srv.bind(("127.0.0.1", 0)); srv.listen(4096)
    keep, total, chunk = [], 0, b"x" * 65536
    for i in range(int(sys.argv[1])):   # loopback connections, both ends' buffers filled
        c = socket.create_connection(srv.getsockname()); s, _ = srv.accept()
        c.setblocking(False)
        try:
            while True:
                total += c.send(chunk)
        except OSError:
            pass
        keep.append((c, s))
        if i % 25 == 0:
            print("queued", total >> 20, flush=True)
    print("queued", total >> 20, flush=True)
    time.sleep(4)
    print("survived", total >> 20, flush=True)
''')

MEMFD_OK_PY = textwrap.dedent(r'''
    import os, fcntl
    fd = os.memfd_create("ok", os.MFD_CLOEXEC)
    os.write(fd, b"memfd works")
    os.lseek(fd, 0, 0)
    cloexec = bool(fcntl.fcntl(fd, fcntl.F_GETFD) & fcntl.FD_CLOEXEC)
    print(os.read(fd, 100).decode(), cloexec, os.fstat(fd).st_size)
''')


def part_memory(token: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    lim = 256 * MiB
    fr = Fresh(limits=ab.Limits(max_memory_bytes=lim))
    with fr as sb:
        out["backend"] = sb.isolation.mechanisms.get("memory_limit")
        sb.write_file("/tmp/inflight.py", INFLIGHT_PY.encode())
        sb.write_file("/tmp/ok.py", MEMFD_OK_PY.encode())
        sb.write_file("/tmp/sockets.py", SOCKETS_PY.encode())
        sb.write_file("/tmp/tcp.py", TCP_PY.encode())

        def settled() -> None:
            # what a killed attack held is freed by the kernel a little after the kill (its
            # descriptors in flight): the next attack starts once a run sees no kill
            end = time.monotonic() + 20
            while time.monotonic() < end:
                if sb.run("sleep 0.3", timeout=30).limit_exceeded is None:
                    return
        r = sb.run("python3 /tmp/tcp.py 200", timeout=60)
        out["tcp_loopback"] = {**_res(r), "limit": r.limit_exceeded}
        settled()
        r = sb.run("python3 /tmp/inflight.py 12 64", timeout=60)
        out["memfd_inflight"] = {**_res(r), "limit": r.limit_exceeded,
                                 "violations": [str(v) for v in r.violations][:5]}
        for how in ("held", "inflight"):
            settled()
            r = sb.run(f"python3 /tmp/sockets.py 120 {how}", timeout=60)
            out[f"sockets_{how}"] = {**_res(r), "limit": r.limit_exceeded}
        settled()
        out["memfd_ok"] = _res(sb.run("python3 /tmp/ok.py", timeout=30))
        out["stdin"] = _res(sb.run("cat; head -c 3 /dev/zero | wc -c", stdin=b"in-put\n",
                                   timeout=30))
        out["after"] = call(lambda: sb.run("echo alive", timeout=30).stdout, 60)
    out["limit"] = lim
    out["left"] = fr.left
    return out


# -- part "ucounts": per-user kernel counts that every ancestor user namespace is charged ---
INOTIFY_PY = textwrap.dedent(r'''
    import ctypes, os, sys, time
    libc = ctypes.CDLL(None, use_errno=True)
    fds = []
    for i in range(int(sys.argv[1])):
        fd = libc.inotify_init1(0)
        if fd < 0:
            break
        fds.append(fd)
    wd = 0
    os.makedirs("/tmp/w", exist_ok=True)
    for i in range(10000):    # watches on one instance, each on a file of its own
        p = b"/tmp/w/%d" % i
        open(p, "w").close()
        if not fds or libc.inotify_add_watch(fds[0], p, 0x100) < 0:
            break
        wd += 1
    print("instances", len(fds), "watches", wd, flush=True)
    time.sleep(float(sys.argv[2]))
''')

SIGQ_PY = textwrap.dedent(r'''
    import ctypes, os, signal, sys, time
    libc = ctypes.CDLL(None, use_errno=True)
    signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGRTMIN])
    class sigval(ctypes.Union):
        _fields_ = [("i", ctypes.c_int), ("p", ctypes.c_void_p)]
    n = 0
    while n < int(sys.argv[1]) and libc.sigqueue(os.getpid(), signal.SIGRTMIN, sigval(n)) == 0:
        n += 1
    print("queued", n, flush=True)
    time.sleep(float(sys.argv[2]))
''')


def _host_inotify() -> str:
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.inotify_init1(0)
    if fd < 0:
        return os.strerror(ctypes.get_errno())
    os.close(fd)
    return "ok"


def _host_timer() -> str:
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    tid = ctypes.c_void_p()
    if libc.timer_create(1, None, ctypes.byref(tid)) != 0:   # CLOCK_MONOTONIC, SIGALRM
        return os.strerror(ctypes.get_errno())
    libc.timer_delete(tid)
    return "ok"


def _wait_for(sb: Any, path: str, deadline: float = 30) -> str:
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        r = sb.run(f"cat {path} 2>/dev/null", timeout=10).stdout
        if r.strip():
            return r
        time.sleep(0.2)
    return ""


def part_ucounts(token: str) -> dict[str, Any]:
    """This identity's own inotify and timer calls while the sandbox holds what it can of
    the per-user counts (the kernel charges the host user of every ancestor namespace)."""
    out: dict[str, Any] = {"host_before": [_host_inotify(), _host_timer()]}
    fr = Fresh()
    with fr as sb:
        sb.write_file("/tmp/ino.py", INOTIFY_PY.encode())
        sb.write_file("/tmp/sigq.py", SIGQ_PY.encode())
        sb.run("(python3 /tmp/ino.py 1000 30 > /tmp/ino.out 2>&1 &); "
               "(python3 /tmp/sigq.py 200000 30 > /tmp/sigq.out 2>&1 &)", timeout=30)
        out["inside"] = _wait_for(sb, "/tmp/ino.out", 90) + _wait_for(sb, "/tmp/sigq.out")
        out["host_during"] = [_host_inotify(), _host_timer()]
        out["after"] = call(lambda: sb.run("echo alive; tail -c 0 /tmp/ino.out", timeout=30)
                            .stdout, 60)
    out["left"] = fr.left
    out["host_after"] = [_host_inotify(), _host_timer()]
    return out


# -- part "etc": credentials in the host's /etc config files the sanitised /etc copies -------
ETC_CHILD = r'''
import json, sys
import agentic_bash as ab
with ab.Sandbox() as sb:
    r = sb.run("cat /etc/pip.conf /etc/wgetrc /etc/gitconfig /etc/profile.d/*.sh "
               "/etc/apt/apt.conf.d/* /etc/apt/sources.list.d/* "
               "/.agentic-bash/lower/etc/pip.conf 2>/dev/null; echo; "
               "pip config list 2>&1 | head -5; echo alive", timeout=60)
print("\n@@CHILD@@" + json.dumps({"out": r.stdout, "err": r.stderr}))
'''


def _fake_etc(root: str, secret: str) -> dict[str, str]:
    """Config files as a host's /etc may have them, each with a credential: name -> path."""
    files = {
        "pip.conf": f"[global]\nindex-url = https://alice:{secret}-pip@pypi.corp/simple\n",
        "wgetrc": f"passive_ftp = on\nhttp_password = {secret}-wget\n",
        "gitconfig": f"[http]\n\textraheader = AUTHORIZATION: bearer {secret}-git\n",
        "profile.d/corp.sh": f"export CORP_API_TOKEN={secret}-profile\n",
        "apt/apt.conf.d/90corp": f'Acquire::http::Proxy "http://carol:{secret}-aptproxy@p:3128";\n',
        "apt/sources.list.d/corp.list": f"deb https://bob:{secret}-aptsrc@apt.corp/debian x main\n",
    }
    out = {}
    for rel, text in files.items():
        p = os.path.join(root, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w") as f:
            f.write(text)
        out[rel] = p
    return out


def part_etc(token: str) -> dict[str, Any]:
    secret = f"ETCSECRET-{token}"
    fake = os.path.join(TMP, "etc")
    files = _fake_etc(fake, secret)
    out: dict[str, Any] = {}
    # the sanitised copy itself, from a stand-in /etc (both identities)
    from agentic_bash.isolation.rootfs import prepare_base
    base = os.path.join(TMP, "base")
    try:
        prepare_base(base, fake)
    except TypeError as e:   # (a prepare_base that reads only the real /etc)
        out["copy"] = {"error": str(e)}
    else:
        copied = {}
        for rel in files:
            with open(os.path.join(base, "etc", rel)) as f:
                copied[rel] = f.read()
        out["copy"] = {"leaked": [k for k, v in copied.items() if secret in v],
                       "kept": "pypi.corp/simple" in copied["pip.conf"]}
    if os.geteuid() == 0:
        # a whole sandbox whose zygote sees these at /etc: a private mount namespace of the
        # test's own process (the host's /etc is never written)
        binds = " && ".join(f"mount --bind {p} /etc/{rel}" for rel, p in files.items()
                            if rel in ("pip.conf", "wgetrc", "gitconfig"))
        binds += (f" && mount --bind {fake}/profile.d /etc/profile.d"
                  f" && mount --bind {fake}/apt/apt.conf.d /etc/apt/apt.conf.d"
                  f" && mkdir -p /etc/apt/sources.list.d"
                  f" && mount --bind {fake}/apt/sources.list.d /etc/apt/sources.list.d")
        p = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c",
                            f"{binds} && exec {sys.executable} -c \"$0\"", ETC_CHILD],
                           capture_output=True, text=True, timeout=240, cwd="/")
        marker = "\n@@CHILD@@"
        if marker not in p.stdout:
            return {"error": f"child failed {p.returncode}:\n{p.stdout[-2000:]}\n{p.stderr[-4000:]}"}
        got = json.loads(p.stdout.rsplit(marker, 1)[1])
        got["leaked"] = sorted({w.split("-")[-1] for w in got["out"].split()
                                if secret in w})
        got["redacted"] = got["out"].count("REDACTED-by-agentic-bash")
        out["sandbox"] = got
    return out


# -- part "inflight": descriptors in flight, counted per host user ---------------------------
INFLIGHT_FDS_PY = textwrap.dedent(r'''
    import resource, socket, sys, time
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    keep, sent = [], 0
    try:
        for i in range(200):
            c, d = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
            socket.send_fds(c, [b"x"], [0] * 200)   # 200 descriptors in flight a message
            c.close()
            keep.append(d)
            sent += 200
    except OSError as e:
        print("refused", e.errno, flush=True)
    print("inflight", sent, "hard", hard, flush=True)
    time.sleep(float(sys.argv[1]))
''')


def part_inflight(token: str) -> dict[str, Any]:
    """One sandbox puts as many descriptors in flight as it may; meanwhile this identity
    starts another sandbox (before: ETOOMANYREFS from the zygote send or the new runner)."""
    out: dict[str, Any] = {}
    fr = Fresh()
    with fr as sb:
        sb.write_file("/tmp/fds.py", INFLIGHT_FDS_PY.encode())
        sb.run("(python3 /tmp/fds.py 20 > /tmp/fds.out 2>&1 &)", timeout=30)
        out["inside"] = _wait_for(sb, "/tmp/fds.out")
        t0 = time.monotonic()
        try:
            fr2 = Fresh()
            with fr2 as sb2:
                out["second"] = sb2.run("echo second alive", timeout=30).stdout
        except Exception as e:  # noqa: BLE001
            out["second"] = f"{type(e).__name__}: {e}"[:600]
        out["second_wall"] = round(time.monotonic() - t0, 2)
        out["after"] = call(lambda: sb.run("pkill -f fds.py; echo alive", timeout=30).stdout, 60)
    out["left"] = fr.left
    return out


PARTS: dict[str, Callable[[str], dict[str, Any]]] = {
    "prefix": part_prefix, "lists": part_lists, "memory": part_memory,
    "ucounts": part_ucounts, "etc": part_etc, "inflight": part_inflight,
}


if __name__ == "__main__":
    main(PARTS)
