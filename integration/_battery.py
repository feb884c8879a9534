"""Real-kernel observations of one sandboxed session, printed as JSON (run as root or as a test user)."""

# Usage: python _battery.py checks TOKEN [--pip PACKAGE]  |  python _battery.py leak N
# The pytest side (test_sandbox_kernel.py) runs this in a subprocess, as root and via runuser
# as an unprivileged user, and asserts on the JSON; one source of truth for both.

from __future__ import annotations

import json
import os
import shutil
import sys
import time


def _zygote_descendants(name: str | None = None, cmdline: str | None = None) -> list[dict]:
    """Processes below this process's zygote (or this process when none), by /proc scan."""
    from agentic_bash.isolation.zygote import _zygote
    root = _zygote.pid if _zygote is not None else os.getpid()
    parent: dict[int, int] = {}
    comm: dict[int, str] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                data = f.read()
        except OSError:
            continue
        c = data[data.index("(") + 1:data.rindex(")")]
        fields = data.rsplit(")", 1)[1].split()
        if fields[0] == "Z":
            continue
        parent[int(d)] = int(fields[1])
        comm[int(d)] = c
    out = []
    for pid in parent:
        p = pid
        while p in parent and p != root and p > 1:
            p = parent[p]
        if p == root and pid != root and (name is None or comm[pid] == name):
            if cmdline is not None:
                try:
                    with open(f"/proc/{pid}/cmdline", "rb") as f:
                        if f.read().replace(b"\0", b" ").strip() != cmdline.encode():
                            continue
                except OSError:
                    continue
            out.append({"pid": pid, "comm": comm[pid]})
    return out


def checks(token: str, pip_pkg: str | None) -> dict:
    from agentic_bash.commands.base import SystemInfo
    from agentic_bash.executors.sandboxed import SandboxedExecutor

    secret = f"hostsecret-{token}"
    os.environ["AGB_HOST_SECRET"] = secret
    home = os.path.expanduser("~")
    ssh = os.path.join(home, ".ssh")
    made_ssh = not os.path.isdir(ssh)
    os.makedirs(ssh, mode=0o700, exist_ok=True)
    key = os.path.join(ssh, f"agb-test-{token}")
    with open(key, "w") as f:
        f.write(f"sshsecret-{token}\n")
    obs: dict = {"uid": os.geteuid(), "home": home}
    try:
        shadow_host = ""
        try:
            with open("/etc/shadow") as f:
                shadow_host = f.readline().strip()
        except OSError:
            pass
        t0 = time.monotonic()
        sb = SandboxedExecutor(isolation="namespace", info=SystemInfo())
        obs["create_s"] = time.monotonic() - t0
        obs["report"] = sb.isolation.to_dict()
        obs["report_str"] = str(sb.isolation)

        def run(script: str, **kw) -> dict:
            r = sb.run(script, **kw)
            return {"out": r.stdout, "err": r.stderr, "code": r.exit_code,
                    "timed_out": r.timed_out, "duration": r.duration}

        obs["py42"] = run("echo 'print(6*7)' > a.py && python3 a.py")
        targets = ["/etc", "/usr", "/usr/local", "/tmp", "/workspace", "/var/tmp", "/opt"]
        obs["writes_inside"] = run("for d in " + " ".join(targets) +
                                   f"; do echo x > $d/agb-{token} && echo ok:$d; done")
        obs["writes_host"] = [d for d in targets if os.path.exists(f"{d}/agb-{token}")]
        obs["shadow"] = run("cat /etc/shadow")
        obs["shadow_host_first_line"] = shadow_host
        obs["ssh"] = run(f"cat {key}; ls -la {ssh}")
        obs["proc"] = run("ls /proc")
        obs["ps"] = run("ps -e -o pid=,comm=")
        obs["unshare"] = run("unshare -r true")
        obs["unshare_user"] = run("unshare -U true")
        obs["mount"] = run("mount -t tmpfs none /mnt")
        # the sibling is found by name, not $!, so the check does not depend on job control
        sb.write_file("/workspace/pt.py", b"import ctypes, os, time\n"
                      b"for _ in range(100):\n"
                      b"    pids = [int(p) for p in os.listdir('/proc') if p.isdigit() and\n"
                      b"            open(f'/proc/{p}/comm').read().strip() == 'sleep']\n"
                      b"    if pids: break\n"
                      b"    time.sleep(0.02)\n"
                      b"l = ctypes.CDLL(None, use_errno=True)\n"
                      b"r = l.ptrace(16, pids[0], 0, 0)\n"
                      b"print(r, ctypes.get_errno(), pids[0])\n"
                      b"os.kill(pids[0], 9)\n")
        obs["ptrace"] = run("sleep 30 & python3 /workspace/pt.py")
        obs["outside"] = run("echo x > /outside/path")
        obs["symlink"] = run("ln -s /etc/shadow s1 && cat s1; ln -s /proc/1/root r1 && "
                             "ls r1/; cat /proc/1/root/etc/hostname; cat /proc/1/environ; "
                             f"ln -s {key} s2 && cat s2")
        obs["hardlink"] = run("ln /etc/passwd h1; ln /usr/bin/python3 h2; ls")
        obs["env"] = run("env; cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n'")
        obs["secret"] = secret
        obs["capeff"] = run("grep -E 'CapEff|CapBnd|NoNewPrivs|Seccomp:' /proc/self/status")
        t0 = time.monotonic()
        obs["timeout"] = run("sleep 10", timeout=0.5)
        obs["timeout_wall"] = time.monotonic() - t0
        time.sleep(0.1)
        obs["timeout_left"] = _zygote_descendants("sleep", "sleep 10")
        obs["after_timeout"] = run("echo alive")
        obs["bg"] = run("nohup sleep 100 > /dev/null 2>&1 & echo started")
        # nohup is an in-process command whose job thread spawns the native sleep: give it a
        # moment on a loaded machine (the run returns once `echo started` ran)
        deadline = time.monotonic() + 10
        while True:
            obs["nohup_before_close"] = _zygote_descendants("sleep", "sleep 100")
            if obs["nohup_before_close"] or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        if pip_pkg:
            obs["pip"] = run(f"pip install {pip_pkg}", timeout=240)
            mod = pip_pkg.replace("-", "_")
            obs["pip_import"] = run(f"python3 -c 'import {mod}; print({mod}.__file__)'")
        obs["host_site_has_pkg"] = bool(pip_pkg) and any(
            os.path.exists(os.path.join(d, (pip_pkg or "").replace("-", "_")))
            for d in ("/usr/local/lib/python3.11/dist-packages", "/usr/lib/python3/dist-packages",
                      os.path.expanduser("~/.local/lib/python3.11/site-packages")))
        # a program cannot kill the runner (seccomp refuses signals to it) ...
        obs["kill_runner"] = run("python3 -c 'import os; os.kill(os.getppid(), 9)'; echo after")
        # ... so the crash comes from outside: the sandbox process killed during a run
        import signal
        import threading
        killer = threading.Timer(0.5, os.kill, (sb.pid, signal.SIGKILL))
        killer.start()
        try:
            obs["crash"] = run("sleep 5")
        except Exception as e:  # noqa: BLE001
            obs["crash"] = {"exc": type(e).__name__}
        killer.join()
        try:
            # DESIGN.md decision 10: the next run starts a fresh sandbox process over the
            # same session layer and says so
            r = sb.run("echo again")
            obs["crash_again"] = {"stdout": r.stdout, "restarted": r.restarted}
        except Exception as e:  # noqa: BLE001
            obs["crash_again"] = type(e).__name__
        sb.close()
        time.sleep(0.2)
        obs["nohup_after_close"] = _zygote_descendants("sleep", "sleep 100")
        obs["left_after_close"] = _zygote_descendants()
    finally:
        # Parallel workers share ~/.ssh: remove only our key, and the dir only when empty.
        try:
            os.unlink(key)
        except FileNotFoundError:
            pass
        if made_ssh:
            try:
                os.rmdir(ssh)
            except OSError:
                pass
    return obs


def landlock_checks(token: str) -> dict:
    import tempfile

    from agentic_bash.executors.sandboxed import SandboxedExecutor

    ws = tempfile.mkdtemp(prefix="agb-ll-")
    home = os.path.expanduser("~")
    obs: dict = {"ws": ws}
    sb = SandboxedExecutor(isolation="landlock", mounts={"/workspace": (ws, "rw")})
    try:
        obs["report"] = sb.isolation.to_dict()

        def run(script: str) -> dict:
            r = sb.run(script)
            return {"out": r.stdout, "err": r.stderr, "code": r.exit_code}

        obs["py42"] = run("echo 'print(6*7)' > a.py && python3 a.py")
        obs["in_ws"] = sorted(os.listdir(ws))
        obs["write_out"] = run(f"echo x > /tmp/agb-ll-{token}; echo x > {home}/agb-ll-{token}")
        obs["written_outside"] = [p for p in (f"/tmp/agb-ll-{token}", f"{home}/agb-ll-{token}")
                                  if os.path.exists(p)]
        obs["read_home"] = run(f"ls {home}; cat /etc/shadow")
        obs["capeff"] = run("grep -E 'CapEff|NoNewPrivs' /proc/self/status")
    finally:
        sb.close()
        shutil.rmtree(ws, ignore_errors=True)
    return obs


def _host_counts() -> dict:
    import glob
    with open("/proc/self/mountinfo") as f:
        mounts = len(f.read().splitlines())
    return {"fds": len(os.listdir("/proc/self/fd")), "mounts": mounts,
            "descendants": len(_zygote_descendants()),
            "session_dirs": len(glob.glob(os.path.join(
                os.environ.get("TMPDIR", "/tmp"), "agentic-bash-session-*"))),
            "threads": len(os.listdir("/proc/self/task")),
            "cgroups": len(glob.glob(f"/sys/fs/cgroup/**/agentic-bash-{os.getpid()}-*",
                                     recursive=True))}


def leak(n: int) -> dict:
    from agentic_bash.executors.sandboxed import SandboxedExecutor

    def cycle(i: int) -> None:
        sb = SandboxedExecutor(isolation="namespace")
        r = sb.run("echo hi; /bin/true" + ("; sleep 60 &" if i % 25 == 0 else ""))
        assert r.stdout.startswith("hi"), r
        sb.close()

    cycle(1)
    time.sleep(0.2)
    before = _host_counts()
    t0 = time.monotonic()
    for i in range(n):
        cycle(i)
    elapsed = time.monotonic() - t0
    time.sleep(0.3)
    return {"before": before, "after": _host_counts(), "per_cycle_s": elapsed / n}


if __name__ == "__main__":
    if sys.argv[1] == "landlock":
        result = landlock_checks(sys.argv[2])
    elif sys.argv[1] == "checks":
        pkg = sys.argv[sys.argv.index("--pip") + 1] if "--pip" in sys.argv else None
        result = checks(sys.argv[2], pkg)
    else:
        result = leak(int(sys.argv[2]))
    print("\n@@JSON@@" + json.dumps(result))
