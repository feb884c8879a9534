"""A user's-eye check of the sandbox process (leaks after close, crash, quiet-spell timeouts, sysinfo, Ctrl-C) for check11; prints JSON."""

from __future__ import annotations

import ctypes
import glob
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback

from agentic_bash import Sandbox, SandboxPool
from agentic_bash.errors import SandboxCrashed
from agentic_bash.isolation.zygote import get_zygote


def mounts() -> set[str]:
    with open("/proc/self/mountinfo") as f:
        return {" ".join(line.split()[3:5]) for line in f}


def cgdirs() -> set[str]:
    out = set()
    for root in glob.glob("/sys/fs/cgroup/*/"):
        for d, subs, _ in os.walk(root):
            if f"agentic-bash-{os.getpid()}-" in d:
                out.add(d)
    return out


def tmpents() -> set[str]:
    d = tempfile.gettempdir()
    return {n for n in os.listdir(d) if n.startswith("agentic-bash") and f"-{os.getpid()}-" in n}


def inotify() -> int:
    n = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}") == "anon_inode:inotify":
                n += 1
        except OSError:
            pass
    return n


def zkids() -> list[int]:
    z = get_zygote().pid
    out = []
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                with open(f"/proc/{p}/stat") as f:
                    s = f.read()
                if int(s.rsplit(")", 1)[1].split()[1]) == z:
                    out.append(int(p))
            except (OSError, ValueError, IndexError):
                pass
    return sorted(out)


def mykids() -> int:
    me = os.getpid()
    n = 0
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                with open(f"/proc/{p}/stat") as f:
                    s = f.read()
                if int(s.rsplit(")", 1)[1].split()[1]) == me:
                    n += 1
            except (OSError, ValueError, IndexError):
                pass
    return n


def state() -> dict:
    return {"zkids": zkids(), "mounts": mounts(), "cg": cgdirs(), "tmp": tmpents(),
            "inotify": inotify(), "fds": len(os.listdir("/proc/self/fd")),
            "threads": threading.active_count(), "kids": mykids(),
            "tnames": sorted(t.name for t in threading.enumerate())}


def settle(before: dict, timeout: float = 15.0) -> dict:
    end = time.monotonic() + timeout
    while True:
        now = state()
        now.pop("tnames")
        diff = {"zkids": sorted(set(now["zkids"]) - set(before["zkids"])),
                "mounts": sorted(now["mounts"] - before["mounts"]),
                "cg": sorted(now["cg"] - before["cg"]),
                "tmp": sorted(now["tmp"] - before["tmp"]),
                "inotify": now["inotify"] - before["inotify"],
                "fds": now["fds"] - before["fds"],
                "threads": now["threads"] - before["threads"],
                "kids": now["kids"] - before["kids"]}
        clean = not any(diff.values())
        if clean or time.monotonic() > end:
            return diff
        time.sleep(0.2)


def pid1_of(sb) -> int:
    import psutil
    top = psutil.Process(sb._ex.pid)
    for p in [top] + top.children(recursive=True):
        with open(f"/proc/{p.pid}/status") as f:
            for line in f:
                if line.startswith("NSpid:") and line.split()[-1] == "1" and len(line.split()) > 2:
                    return p.pid
    raise AssertionError("no pid 1")


def wait_for(pred, timeout=15.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.05)
    return False


def check(name, out, fn):
    try:
        out[name] = fn()
    except Exception:  # noqa: BLE001
        out[name] = {"error": traceback.format_exc()[-3000:]}


def t_leak_single():
    Sandbox().close()  # warm the zygote
    before = state()
    sb = Sandbox()
    r = sb.run("echo hi; /bin/true; cat /etc/hostname >/dev/null; (sleep 30 &) ; echo x > /tmp/f")
    sb.close()
    return {"stdout": r.stdout, "diff": settle(before)}


def t_leak_pool():
    before = state()
    pool = SandboxPool(min_size=2, max_size=3)
    with pool.sandbox() as a, pool.sandbox() as b:
        a.run("echo a; sleep 30 &")
        b.run("/bin/true")
    with pool.sandbox() as c:
        c.run("echo c")
    pool.close()
    return {"diff": settle(before)}


def t_crash(target):
    before = state()
    sb = Sandbox()
    sb.run("echo warm")
    victim = pid1_of(sb) if target == "pid1" else sb._ex.pid
    box = {}

    def go():
        t0 = time.monotonic()
        try:
            r = sb.run("sleep 20; echo done", timeout=60)
            box["r"] = {"exit": r.exit_code, "stdout": r.stdout, "restarted": r.restarted,
                        "extra": {k: str(v) for k, v in r.extra.items() if "restart" in k}}
        except Exception as e:  # noqa: BLE001
            box["exc"] = type(e).__name__ + ": " + str(e)
        box["dt"] = time.monotonic() - t0
    t = threading.Thread(target=go)
    t.start()
    time.sleep(1.0)
    os.kill(victim, signal.SIGKILL)
    t.join(60)
    r2 = sb.run("echo after")
    r3 = sb.run("echo again")
    sb.close()
    return {"victim_is_top": victim == sb._ex.pid, "first": box,
            "next": [r2.stdout, r2.exit_code, r2.restarted, r2.extra.get("restart_reason")],
            "third_restarted": r3.restarted, "diff": settle(before)}


def t_crash_idle():
    """pid 1 killed while idle: the next call goes to a restarted sandbox and says so."""
    sb = Sandbox()
    sb.run("echo warm; export KEEP=1")
    os.kill(pid1_of(sb), signal.SIGKILL)
    time.sleep(1.0)
    try:
        r = sb.run("echo after $KEEP")
        got = [r.stdout, r.exit_code, r.restarted, r.extra.get("restart_reason")]
    except Exception as e:  # noqa: BLE001
        got = type(e).__name__ + ": " + str(e)
    sb.close()
    return got


def t_pool_crash():
    pool = SandboxPool(min_size=1, max_size=1)
    with pool.sandbox() as a:
        a.run("echo a")
        ida = id(a)
        p1 = pid1_of(a)
        os.kill(p1, signal.SIGKILL)
        try:
            a.run("sleep 3")
            got = "no exception"
        except SandboxCrashed as e:
            got = "SandboxCrashed"
        except Exception as e:  # noqa: BLE001
            got = type(e).__name__ + str(e)
    with pool.sandbox() as b:
        r = b.run("echo b")
        same = id(b) == ida
        p1b = pid1_of(b)
    pool.close()
    return {"during": got, "next_same_object": same, "next_pid1_same": p1b == p1,
            "next": [r.stdout, r.restarted]}


def t_pool_close_leased():
    """sb.close() on a leased sandbox (or ``with pool.acquire() as sb``) gives its slot back."""
    pool = SandboxPool(min_size=0, max_size=1)
    try:
        with pool.acquire() as a:
            a.run("echo a")
        try:
            b = pool.acquire(timeout=10)
        except Exception as e:  # noqa: BLE001
            return {"second": type(e).__name__, "stats": pool.stats()}
        r = b.run("echo b")
        pool.release(b)
        return {"second": r.stdout, "stats": pool.stats()}
    finally:
        pool.close()


def t_quiet_timeout():
    sb = Sandbox()
    sb.run("echo warm")
    time.sleep(3)
    t0 = time.monotonic()
    r = sb.run("sleep 5", timeout=1)
    dt = time.monotonic() - t0
    time.sleep(3)
    t0 = time.monotonic()
    r2 = sb.run("/bin/sleep 5; echo no", timeout=1)
    dt2 = time.monotonic() - t0
    sb.close()
    return {"dt": dt, "exit": r.exit_code, "limit": r.limit_exceeded,
            "dt2": dt2, "exit2": r2.exit_code, "out2": r2.stdout, "limit2": r2.limit_exceeded}


def t_quiet_memory():
    from agentic_bash.limits import Limits
    sb = Sandbox(limits=Limits(max_memory_bytes=256 << 20, max_process_memory=None))
    sb.run("echo warm")
    time.sleep(3)
    t0 = time.monotonic()
    r = sb.run("python3 -c 'a=[]\nwhile True: a.append(bytearray(16<<20))'", timeout=60)
    dt = time.monotonic() - t0
    r2 = sb.run("echo alive")
    sb.close()
    return {"dt": dt, "exit": r.exit_code, "limit": r.limit_exceeded, "err": r.stderr[-300:],
            "after": [r2.stdout, r2.restarted]}


def _accepts(kw):
    import inspect
    return kw in inspect.signature(Sandbox.__init__).parameters


def t_sysinfo():
    with Sandbox() as sb:
        r = sb.run("python3 -c 'import os; print(os.sysconf(\"SC_PHYS_PAGES\")*4096)'; nproc; "
                   "free -b | head -2; java -version 2>&1 | head -1; echo rc=$?", timeout=60)
        return {"out": r.stdout, "err": r.stderr[-500:], "exit": r.exit_code}


def t_meminfo():
    with Sandbox() as sb:
        r = sb.run("awk '/^MemTotal:/ {print $2}' /proc/meminfo; free -b | awk '/^Mem:/ {print $2}'")
        lim = sb._ex.limits.max_memory_bytes
        return {"out": r.stdout, "limit": lim}


def t_net():
    """A sandbox with an allow-list (network set up by pid 1 after the fork): its proxy works
    after a crash and restart, and nothing is left after close."""
    from agentic_bash import NetworkPolicy
    with Sandbox(network=NetworkPolicy(allow=["pypi.org"])) as sb:  # (the proxy's resolver
        sb.run("curl -s -o /dev/null --max-time 20 https://pypi.org/simple/", timeout=40)  # thread: once)
    before = state()
    out = {}
    for _ in range(3):
        sb = Sandbox(network=NetworkPolicy(allow=["pypi.org"]))
        r = sb.run("curl -s -o /dev/null -w '%{http_code}' --max-time 20 https://pypi.org/simple/ 2>&1; echo", timeout=40)
        out.setdefault("before", []).append(r.stdout.strip())
        os.kill(pid1_of(sb), signal.SIGKILL)
        time.sleep(0.5)
        r = sb.run("curl -s -o /dev/null -w '%{http_code}' --max-time 20 https://pypi.org/simple/ 2>&1; echo", timeout=40)
        out.setdefault("after", []).append([r.stdout.strip(), r.restarted])
        sb.close()
    out["diff"] = settle(before)
    return out


def t_ctrl_c_restart():
    """Ctrl-C while the call after a crash restarts the sandbox: KeyboardInterrupt, and the
    next call has the files and says restarted."""
    Sandbox().close()
    before = state()
    res = []
    for delay in (0.0, 0.02, 0.05, 0.1, 0.2):
        sb = Sandbox()
        sb.run("echo f > /workspace/keep")
        os.kill(pid1_of(sb), signal.SIGKILL)
        time.sleep(0.3)

        ready = threading.Event()

        def poke(delay=delay):
            # (from inside the try below: at delay 0 the signal once landed in t.start(),
            # before the try, and ended the probe with KeyboardInterrupt; CI at 08:20)
            ready.wait()
            time.sleep(delay)
            signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
        t = threading.Thread(target=poke)
        t.start()
        try:
            ready.set()
            r = sb.run("sleep 2; echo first")
            first = "no interrupt"
        except KeyboardInterrupt:
            first = "KeyboardInterrupt"
        except Exception as e:  # noqa: BLE001
            first = type(e).__name__ + ": " + str(e)
        t.join()
        try:
            r = sb.run("cat /workspace/keep; echo next")
            nxt = [r.stdout, r.restarted]
        except Exception as e:  # noqa: BLE001
            nxt = type(e).__name__ + ": " + str(e)
        sb.close()
        res.append([delay, first, nxt])
    return {"runs": res, "diff": settle(before)}


def t_ctrl_c_ctor_close():
    """Ctrl-C while Sandbox() starts or while close() runs, at several moments: afterwards
    no cgroup, session dir, fd or process of those sandboxes is left."""
    Sandbox().close()
    before = state()
    res = []
    for what in ("ctor", "close"):
        for delay in (0.0, 0.005, 0.01, 0.02, 0.03, 0.045, 0.06, 0.1, 0.15):
            sb = None
            if what == "close":
                sb = Sandbox()
                sb.run("echo hi")
            ready = threading.Event()

            def poke(delay=delay):
                ready.wait()
                time.sleep(delay)
                signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
            t = threading.Thread(target=poke)
            t.start()
            got = "none"
            try:
                ready.set()
                if what == "ctor":
                    sb = Sandbox()
                else:
                    sb.close()
                t.join()
            except KeyboardInterrupt:
                got = "KeyboardInterrupt"
            except Exception as e:  # noqa: BLE001
                got = type(e).__name__ + ": " + str(e)
            try:
                t.join()
            except KeyboardInterrupt:
                pass
            if sb is not None:
                sb.close()
            res.append([what, delay, got])
    import gc
    gc.collect()
    return {"runs": res, "diff": settle(before)}


def t_loop():
    Sandbox().close()
    before = state()
    for _ in range(50):
        sb = Sandbox()
        sb.run("/bin/true")
        sb.close()
    return {"diff": settle(before)}


def t_ctrl_c():
    sb = Sandbox()
    sb.run("echo warm; X=1")
    box = {}
    main = threading.main_thread()

    def poke():
        time.sleep(1.0)
        signal.pthread_kill(main.ident, signal.SIGINT)
    threading.Thread(target=poke).start()
    t0 = time.monotonic()
    try:
        sb.run("sleep 20; echo done", timeout=60)
        box["first"] = "no interrupt"
    except KeyboardInterrupt:
        box["first"] = "KeyboardInterrupt"
    box["dt"] = time.monotonic() - t0
    t0 = time.monotonic()
    r = sb.run("echo $X next")
    box["next"] = [r.stdout, r.exit_code, r.restarted]
    box["next_dt"] = time.monotonic() - t0
    sb.close()
    return box


def main() -> None:
    out: dict = {"uid": os.getuid()}
    names = sys.argv[1:] or ["leak_single", "leak_pool", "crash_pid1", "crash_top", "crash_idle",
                             "pool_crash", "pool_close_leased", "quiet_timeout", "quiet_memory", "sysinfo", "loop",
                             "ctrl_c"]
    fns = {"leak_single": t_leak_single, "leak_pool": t_leak_pool,
           "crash_pid1": lambda: t_crash("pid1"), "crash_top": lambda: t_crash("top"),
           "crash_idle": t_crash_idle, "pool_crash": t_pool_crash, "pool_close_leased": t_pool_close_leased,
           "quiet_timeout": t_quiet_timeout, "quiet_memory": t_quiet_memory,
           "sysinfo": t_sysinfo, "meminfo": t_meminfo, "net": t_net, "ctrl_c_restart": t_ctrl_c_restart, "ctrl_c_ctor_close": t_ctrl_c_ctor_close, "loop": t_loop, "ctrl_c": t_ctrl_c}
    for n in names:
        check(n, out, fns[n])
    print("\n@@JSON@@" + json.dumps(out, default=sorted))


if __name__ == "__main__":
    main()
