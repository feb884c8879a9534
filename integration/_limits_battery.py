"""Resource-limit checks run as one identity (root or the test user); prints JSON after a marker."""

from __future__ import annotations

import json
import os
import shutil
import signal
import time
import traceback
import warnings

warnings.simplefilter("ignore", RuntimeWarning)

import agentic_bash as ab  # noqa: E402
from agentic_bash.errors import IsolationUnavailable, SandboxCrashed  # noqa: E402

MiB = 1 << 20


def _r(r: ab.Result) -> dict:
    return {"out": r.stdout[-2000:], "err": r.stderr[-2000:], "code": r.exit_code,
            "exceeded": r.limit_exceeded, "cpu": r.cpu_time, "peak": r.peak_memory,
            "violations": [v.kind for v in r.violations]}


def _ours() -> list[str]:
    """cgroup directories this process made (named agentic-bash-<pid>-...)."""
    out = []
    mark = f"agentic-bash-{os.getpid()}-"
    for root, dirs, _ in os.walk("/sys/fs/cgroup"):
        for d in dirs:
            if d.startswith(mark):
                out.append(os.path.join(root, d))
        dirs[:] = [d for d in dirs if not d.startswith("agentic-bash-")]
    return out


def _host_bytes(path: str) -> int:
    n = 0
    for root, _, files in os.walk(path):
        for f in files:
            try:
                n += os.lstat(os.path.join(root, f)).st_size
            except OSError:
                pass
    return n


FORK = r"""python3 - <<'EOF'
import os, time
kids = []
refused = 0
for i in range(500):
    try:
        p = os.fork()
    except OSError:
        refused += 1
        continue
    if p == 0:
        time.sleep(3)
        os._exit(0)
    kids.append(p)
alive = sum(1 for d in os.listdir('/proc') if d.isdigit())
print(len(kids), refused, alive)
for k in kids:
    os.waitpid(k, 0)
EOF"""

BUSY = "python3 -c 'import time\nt = time.time()\nwhile time.time() - t < 2: pass'"


def checks() -> dict:
    out: dict = {"uid": os.geteuid()}
    with ab.Sandbox(isolation="namespace", limits=ab.Limits(max_memory_bytes=64 * MiB)) as sb:
        out["report"] = dict(sb.isolation.mechanisms)
        out["mem64"] = _r(sb.run("python3 -c 'b = bytearray(300 << 20)'"))
        out["mem64_next"] = _r(sb.run("echo ok"))
        out["mem64_again"] = _r(sb.run("python3 -c 'b = bytearray(300 << 20)'; echo st=$?"))
        out["mem64_small"] = _r(sb.run("python3 -c 'b = bytearray(8 << 20); print(len(b))'"))
        # (attack13: as root pid 1 raises each program as it starts, within ~1 ms; polled)
        out["oom_adj"] = _r(sb.run(
            "python3 -c 'import os, time\nfor i in range(100):\n"
            "    v = open(\"/proc/self/oom_score_adj\").read().strip()\n"
            "    if v == \"1000\": break\n    time.sleep(0.05)\nprint(v)'; "
            "python3 -c 'import os; "
            "print(open(f\"/proc/{os.getppid()}/oom_score_adj\").read().strip())'; "
            "cat /proc/1/oom_score_adj"))
    with ab.Sandbox(isolation="namespace") as sb:
        out["default_report"] = dict(sb.isolation.mechanisms)
        t = time.monotonic()
        out["big"] = _r(sb.run("python3 -c 'b = bytearray(8 << 30)'"))
        out["big_wall"] = time.monotonic() - t
        out["big_next"] = _r(sb.run("echo ok"))
        # a runaway tool in the default sandbox: the per-process cap fails its allocations
        out["shuf"] = _r(sb.run("yes | shuf | tail -c 4", timeout=20))
        tools = ["python3 -m venv /workspace/v && /workspace/v/bin/python -c 'print(7)'"]
        if shutil.which("git"):
            tools.append("cd /workspace && git init -q src && cd src && echo hi > f && "
                         "git -c user.email=a@b -c user.name=n add f && "
                         "git -c user.email=a@b -c user.name=n commit -qm m && cd .. && "
                         "git clone -q src dst && cat dst/f")
        if shutil.which("gcc") and shutil.which("make"):
            tools.append("mkdir -p /workspace/c && cd /workspace/c && "
                         "printf '#include <stdio.h>\\nint main(void){puts(\"built\");return 0;}\\n' > m.c && "
                         "printf 'm: m.c\\n\\tgcc -O2 -o m m.c\\n' > Makefile && make -s && ./m")
        out["tools"] = [_r(sb.run(t, timeout=120)) for t in tools]
    with ab.Sandbox(isolation="namespace", limits=ab.Limits(max_process_memory=None)) as sb:
        # without the per-process cap, the whole sandbox's memory limit kills it
        out["big_cgroup"] = _r(sb.run("python3 -c 'b = bytearray(8 << 30)'"))
        out["big_cgroup_next"] = _r(sb.run("echo ok"))
    with ab.Sandbox(isolation="namespace", limits=ab.Limits(max_processes=50)) as sb:
        out["fork"] = _r(sb.run(FORK, timeout=60))
        out["fork_next"] = _r(sb.run("echo ok"))
        # a bomb left running in the background by a run that hit the limit does not outlive it
        # (its timeout is generous: 50 spinning forks starve everything else on a loaded 2-core
        # machine, and what is checked here is the cleanup, not the speed)
        # (the run waits, in-process, until the bomb has met the limit once: under load a
        # fixed 2 s could end before python had even started forking)
        out["bomb_bg"] = _r(sb.run("rm -f /tmp/full; python3 -c 'import os\nwhile 1:\n  try: os.fork()\n"
                                   "  except OSError: open(\"/tmp/full\", \"w\")' & "
                                   "SECONDS=0; while [ ! -e /tmp/full ] && (( SECONDS < 90 )); do :; done; "
                                   "echo left", timeout=120))
        # no pause: the reply came after the bomb was reaped
        out["bomb_after"] = _r(sb.run("ls /proc | grep -c '^[0-9]'"))
    with ab.Sandbox(isolation="namespace", limits=ab.Limits(cpu_quota=0.2)) as sb:
        out["cpu_report"] = sb.isolation.mechanisms.get("cpu_limit")
        if sb.isolation.mechanisms.get("cpu_limit", "").startswith("enforced"):
            out["cpu"] = _r(sb.run(BUSY))
    with ab.Sandbox(isolation="namespace", limits=ab.Limits(max_file_bytes=10 * MiB)) as sb:
        out["fsize"] = _r(sb.run("cd /workspace && dd if=/dev/zero of=f bs=1M count=50; "
                                 "stat -c %s f"))
        out["fsize_builtin"] = _r(sb.run("cd /workspace && head -c 20000000 /dev/zero > g; "
                                         "echo st=$?"))
    with ab.Sandbox(isolation="namespace", limits=ab.Limits(max_fs_bytes=50 * MiB)) as sb:
        host_dir = sb._ex._session_dir  # the sandbox's layer lives in its own tmpfs
        out["disk"] = _r(sb.run("cd /workspace && head -c 100000000 /dev/zero > g; echo st=$?; "
                                "stat -c %s g"))
        out["disk_host_bytes"] = _host_bytes(host_dir)
        out["disk_next"] = _r(sb.run("rm /workspace/g; echo ok > /workspace/h; cat /workspace/h"))
        out["shm"] = _r(sb.run("head -c 100000000 /dev/zero > /dev/shm/x; echo st=$?; "
                               "stat -c %s /dev/shm/x"))
        out["shm_next"] = _r(sb.run("rm /dev/shm/x; echo ok"))
    # strict: an asked-for limit that cannot be enforced refuses to start
    try:
        with ab.Sandbox(isolation="namespace", strict=True,
                        limits=ab.Limits(max_memory_bytes=64 * MiB)) as sb:
            out["strict_mem"] = "started"
    except IsolationUnavailable as e:
        out["strict_mem"] = f"refused: {e}"
    try:
        with ab.Sandbox(isolation="namespace", strict=True,
                        limits=ab.Limits(max_memory_bytes=64 * MiB, allow_watchdog=True)) as sb:
            out["strict_mem_watchdog"] = "started"
    except IsolationUnavailable as e:
        out["strict_mem_watchdog"] = f"refused: {e}"
    # a crash of the sandbox process leaves no group behind
    sb = ab.Sandbox(isolation="namespace")
    sb.run("true")
    out["groups_live"] = len(_ours())
    os.kill(sb._ex.pid, signal.SIGKILL)
    try:
        sb.run("true")
        out["crash"] = "ran"
    except SandboxCrashed:
        out["crash"] = "crashed"
    except Exception as e:  # noqa: BLE001
        out["crash"] = f"{type(e).__name__}: {e}"
    sb.close()
    out["groups_after_crash"] = _ours()
    return out


if __name__ == "__main__":
    try:
        res = checks()
    except Exception:  # noqa: BLE001
        res = {"error": traceback.format_exc()}
    print("\n@@JSON@@" + json.dumps(res))
