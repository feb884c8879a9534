"""Exercise SandboxPool on the kernel sandbox and print what was observed as JSON (run by test_pool_kernel)."""

from __future__ import annotations

import json
import os
import signal
import sys
import tempfile
import threading
import time


def mounts() -> set[str]:
    with open("/proc/self/mountinfo") as f:
        return {" ".join(line.split()[3:5]) for line in f}


def session_dirs() -> set[str]:
    d = tempfile.gettempdir()
    return {n for n in os.listdir(d) if n.startswith("agentic-bash-session-")}


def gone(pid: int, timeout: float = 10.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.02)
    return False


def main() -> None:
    from agentic_bash import SandboxPool
    from agentic_bash.isolation.zygote import get_zygote

    out: dict = {"uid": os.geteuid()}
    z = get_zygote()
    out["zygote_base"] = z.base
    m0, t0 = mounts(), session_dirs()
    pool = SandboxPool(min_size=2, max_size=6, idle_ttl=1.0, isolation="namespace")

    # 1. a dirty session, then the next user's view (compared with a fresh one's)
    with pool.sandbox() as fresh:
        out["fresh_ls"] = fresh.run("ls -A /workspace /tmp ~").stdout
    a = pool.acquire()
    out["isolation_level"] = a.isolation_level
    a_pid = a._ex.pid
    r = a.run("cd /workspace && echo secret > f.txt; echo t > /tmp/t; echo h > ~/h; "
              "export TOKEN=s3cr3t; f() { echo fn; }; alias ll='ls -l'; cd /tmp; "
              "history -s 'echo secret'; (exec -a leftover-sleep sleep 300) & "
              "nohup sleep 301 >/dev/null 2>&1 & echo started")
    out["a_setup"] = [r.exit_code, r.stdout, r.stderr]
    out["a_ps"] = a.run("ps -eo args").stdout
    pool.release(a)
    try:
        a.run("echo still here")
        out["a_after_release"] = "ran"
    except Exception as e:  # noqa: BLE001
        out["a_after_release"] = type(e).__name__
    out["a_gone"] = gone(a_pid)
    b = pool.acquire()
    out["b_pid_differs"] = b._ex.pid != a_pid
    out["b_ls"] = b.run("ls -A /workspace /tmp ~").stdout
    r = b.run("echo \"[$TOKEN]\"; type f; alias; pwd; history; ps -eo args")
    out["b_view"] = [r.exit_code, r.stdout, r.stderr]
    pool.release(b)

    # 2. fifty threads, three rounds each
    ok, errors = [0], []
    lock = threading.Lock()

    def user(i: int) -> None:
        try:
            for k in range(3):
                with pool.sandbox(timeout=120) as sb:
                    r = sb.run(f"echo {i}-{k} > /workspace/me; cat /workspace/me; ls /workspace")
                    assert r.stdout == f"{i}-{k}\nme\n", (r.stdout, r.stderr)
                with lock:
                    ok[0] += 1
        except BaseException as e:  # noqa: BLE001
            errors.append(repr(e))

    ts = [threading.Thread(target=user, args=(i,)) for i in range(50)]
    t = time.monotonic()
    for th in ts:
        th.start()
    for th in ts:
        th.join(300)
    out["threads"] = {"ok": ok[0], "errors": errors[:5], "seconds": time.monotonic() - t}
    out["stats_after_threads"] = pool.stats()

    # 2b. asyncio sessions: arun/astream on the event loop, state kept, a cancelled run
    async def asessions() -> dict:
        import asyncio

        async def one(i: int) -> list:
            async with pool.asandbox() as sb:
                r1 = await sb.arun(f"x={i}; echo $x > /workspace/n")
                r2 = await sb.arun("echo $((x+1)); cat /workspace/n")
                evs = [ev.kind async for ev in sb.astream("echo o; echo e >&2")]
                task = asyncio.ensure_future(sb.arun("sleep 30; echo late"))
                await asyncio.sleep(0.2)
                task.cancel()
                try:
                    await task
                except asyncio.CancelledError:
                    pass
                r3 = await sb.arun("echo after")
                return [r1.exit_code, r2.stdout, sorted(evs), r3.stdout]
        t = time.monotonic()
        got = await asyncio.gather(*(one(i) for i in range(6)))
        return {"results": got, "seconds": time.monotonic() - t}
    import asyncio
    out["asyncio"] = asyncio.run(asessions())

    # 3. idle TTL: the surplus goes back down to min_size
    end = time.monotonic() + 20
    peak = 0
    while time.monotonic() < end and peak <= 2:
        peak = max(peak, pool.stats()["ready"])
        time.sleep(0.02)
    def settled() -> bool:   # the burst's replacements all started, the surplus gone
        st = pool.stats()
        return st["ready"] <= 2 and st["creating"] == 0 and st["owed"] == 0
    while time.monotonic() < end and not (settled() and time.sleep(0.3) is None and settled()):
        time.sleep(0.05)
    out["ready_peak"] = peak
    out["stats_after_ttl"] = pool.stats()

    # 4. a ready sandbox whose process was killed from outside is never handed out
    with pool._cond:
        victims = [sb._ex.pid for sb, _ in pool._ready]
    for pid in victims:
        os.kill(pid, signal.SIGKILL)
    for pid in victims:
        gone(pid)
    d0 = pool.stats()["discarded"]
    sb = pool.acquire()
    out["after_kill"] = {"victims": len(victims), "pid_is_victim": sb._ex.pid in victims,
                         "run": sb.run("echo alive").stdout,
                         "discarded": pool.stats()["discarded"] - d0}
    pool.release(sb)

    # 5. close: no sandbox process, mount or temp dir left
    pool.close()
    time.sleep(0.1)
    import psutil
    out["zygote_children"] = [c.pid for c in psutil.Process(z.pid).children(recursive=True)]
    out["new_mounts"] = sorted(mounts() - m0)
    out["new_tmp"] = sorted(session_dirs() - t0)
    out["stats_closed"] = pool.stats()
    print("\n@@JSON@@" + json.dumps(out))


if __name__ == "__main__":
    sys.exit(main())
