"""Attacks on this session's namespace-mode changes (pids slots, inotify skip, binary cache, here-doc pipes, job trees), run as root or the test user; prints JSON."""

from __future__ import annotations

import io
import json
import os
import sys
import tarfile
import threading
import time
import traceback
from typing import Any, Callable

from agentic_bash import Limits, Sandbox

MAX = 12


# -- what the host sees -----------------------------------------------------------------------
def _ppid(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def _runner(sb: Sandbox) -> tuple[int, set[int]]:
    """The sandbox's pid 1 (host pid) and the runner's own processes (S1 where there is
    one, S2 = pid 1, S3 and anything else there before the workload)."""
    import psutil
    kids = psutil.Process(sb._ex.pid).children(recursive=True)
    every = [sb._ex.pid] + [k.pid for k in kids]
    top = next(p for p in every if _innermost_pid(p) == 1)
    return top, set(every)


def _innermost_pid(pid: int) -> int | None:
    """The pid ``pid`` has in its own (innermost) pid namespace."""
    try:
        with open(f"/proc/{pid}/status") as f:
            return int(next(line for line in f if line.startswith("NSpid:")).split()[-1])
    except (OSError, StopIteration, ValueError):
        return None


def _workload(top: int, runner: set[int]) -> set[int]:
    """Host pids of every process below the sandbox's pid 1 that is not the runner's."""
    parents = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            parents[int(d)] = _ppid(int(d))
    out = set()
    for pid in parents:
        p, n = pid, 0
        while p and p != top and n < 64:
            p, n = parents.get(p), n + 1
        if p == top and pid not in runner:
            out.add(pid)
    return out


class Sampler:
    """Peak number of workload processes and tasks while a run goes on, and (root) any
    workload process seen in a pids group other than the workload's."""

    def __init__(self, sb: Sandbox) -> None:
        self.top, self.runner = _runner(sb)
        self.peak = self.peak_tasks = self.samples = 0
        self.outside: list[str] = []
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._loop, daemon=True)
        self._t.start()

    def _loop(self) -> None:
        while not self._stop.is_set():
            procs = _workload(self.top, self.runner)
            tasks = 0
            for pid in procs:
                try:
                    tasks += len(os.listdir(f"/proc/{pid}/task"))
                    with open(f"/proc/{pid}/cgroup") as f:
                        cg = f.read()
                except OSError:
                    continue
                for line in cg.splitlines():
                    # (an exiting task shows the root group: not a place it runs in)
                    if ":pids:" in line and not line.endswith(("/work", ":/")) \
                            and len(self.outside) < 10:
                        self.outside.append(f"{pid} {line}")
            self.peak = max(self.peak, len(procs))
            self.peak_tasks = max(self.peak_tasks, tasks)
            self.samples += 1
            time.sleep(0.003)

    def done(self) -> dict[str, Any]:
        self._stop.set()
        self._t.join(10)
        return {"peak": self.peak, "peak_tasks": self.peak_tasks, "outside": self.outside,
                "samples": self.samples}


def _res(r: Any) -> dict[str, Any]:
    return {"exit": r.exit_code, "out": r.stdout[-1500:], "err": r.stderr[-1500:],
            "limit": r.limit_exceeded, "timed_out": r.timed_out,
            "created": sorted(r.files_created), "modified": sorted(r.files_modified),
            "deleted": sorted(r.files_deleted)}


def _describe(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat") as f:
            st = f.read().rsplit(")", 1)[1].split()
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmd = f.read().replace(b"\0", b" ").decode(errors="replace")[:80]
        return f"{pid} {st[0]} ppid={st[1]} {cmd}"
    except (OSError, IndexError):
        return f"{pid} gone"


def _drained(sb: Sandbox, deadline: float = 15.0) -> list[str]:
    """Workload processes still there after waiting up to ``deadline`` for them to go."""
    top, runner = _runner(sb)
    end = time.monotonic() + deadline
    while True:
        left = _workload(top, runner)
        if not left or time.monotonic() > end:
            return [_describe(p) for p in sorted(left)]
        time.sleep(0.05)


def _sampled(sb: Sandbox, cmd: str, timeout: float = 20) -> dict[str, Any]:
    s = Sampler(sb)
    t0 = time.monotonic()
    try:
        r = sb.run(cmd, timeout=timeout)
    finally:
        got = s.done()
    got.update(_res(r), wall=round(time.monotonic() - t0, 2))
    got["after"] = sb.run("echo alive").stdout
    return got


# -- 8073694: the runner's two threads in the workload's pids group ----------------------------
PY_THREADS = ("/usr/bin/python3 -c '\nimport threading, time\nn = 0\ntry:\n"
              "    while n < 400:\n"
              "        threading.Thread(target=time.sleep, args=(2,), daemon=True).start(); n += 1\n"
              "except RuntimeError:\n    pass\nprint(\"threads\", n)\n'")

CGROUP_ESCAPE = r"""/usr/bin/python3 -c '
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
ok = []
os.makedirs("/tmp/cgx", exist_ok=True)
for fs, opt in ((b"cgroup", b"pids"), (b"cgroup2", None), (b"tmpfs", None)):
    if libc.mount(b"none", b"/tmp/cgx", fs, 0, opt) == 0:
        ok.append("mount " + fs.decode())
if libc.unshare(0x02000000) == 0:
    ok.append("unshare cgroupns")
for p in ("/sys/fs/cgroup/pids/tasks", "/sys/fs/cgroup/cgroup.procs", "/proc/1/root/sys/fs/cgroup"):
    try:
        with open(p, "w") as f:
            f.write(str(os.getpid()))
        ok.append("wrote " + p)
    except OSError:
        pass
for pid in os.listdir("/proc"):
    if pid.isdigit():
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                t = os.readlink(f"/proc/{pid}/fd/{fd}")
                if "cgroup" in t or t.endswith(("/tasks", "procs")):
                    ok.append(f"fd {pid}/{fd} {t}")
        except OSError:
            pass
print("escaped:", ok)
'"""


def pids_part() -> dict[str, Any]:
    out: dict[str, Any] = {}
    sb = Sandbox(limits=Limits(max_processes=MAX, timeout=30))
    try:
        out["native_forkbomb"] = _sampled(
            # (the run waits until the bomb has met the limit: bash says "fork: retry" then;
            # at load ~25 a fixed second ended the run before it had, CI at 5e16a9f)
            # then goes on 2 s more, builtins only (a busy table refuses the shell's threads
            # too), as a run that started a bomb would
            sb, "/bin/bash -c 'f(){ f | f & }; f' 2>/tmp/bomb.err; SECONDS=0; l=; "
                "until [[ $l == *'fork: retry'* ]] || (( SECONDS > 60 )); do "
                "read -r l < /tmp/bomb.err; done; SECONDS=0; while (( SECONDS < 2 )); do :; done; "
                "echo survived", timeout=90)
        out["native_forkbomb"]["left"] = _drained(sb)
        out["native_threads"] = _sampled(sb, PY_THREADS)
        out["subshell_storm"] = _sampled(
            sb, "for i in $(seq 1 40); do ( /bin/sleep 1 & /bin/sleep 1 ) & done 2>/dev/null;"
                " wait; echo done")
        out["job_thread_storm"] = _sampled(
            sb, "for i in $(seq 1 150); do { sleep 1; } & done 2>/dev/null; x=$(echo sub);"
                " echo $x; wait; echo done")
        # the group full of the workload's processes: the run thread (in that group) still
        # starts the threads of pipelines, substitutions and jobs (a helper outside the
        # group creates them)
        out["threads_while_full"] = _sampled(
            sb, f"for i in $(seq 1 {MAX + 4}); do /bin/sleep 5 & done;"
                " for i in 1 2 3; do echo x | { read l; echo got$l; }; done;"
                " y=$(echo sub; echo more | { read m; echo $m; }); echo $y;"
                " read p < <(echo procsub); echo $p;"
                " { echo job; } & wait $!; kill $(jobs -p) 2>/dev/null; wait; echo end")
        out["cgroup_escape"] = _sampled(sb, CGROUP_ESCAPE)
        out["xargs_parallel"] = _sampled(
            sb, "seq 1 40 | xargs -P 40 -I{} /bin/sleep 0.5 2>/dev/null; echo done")
    finally:
        sb.close()
    return out


# -- 7e56667 and the session layer: nothing changed unseen, nothing lost in a snapshot --------
def _tar_names(snap: bytes) -> dict[str, str]:
    from agentic_bash.snapshot import _decompress
    tf = tarfile.open(fileobj=io.BytesIO(_decompress(snap)))
    return {m.name: oct(m.mode) for m in tf.getmembers()}


def files_part() -> dict[str, Any]:
    out: dict[str, Any] = {}
    sb = Sandbox(limits=Limits(timeout=60))
    try:
        home = sb.run("echo $HOME").stdout.strip()
        out["home"] = home
        # unreadable entries, the upper's own top included
        r = sb.run("cd /; echo secret > /workspace/f0; chmod 000 /workspace/f0;"
                   " mkdir -p /workspace/d1/d2; echo deep > /workspace/d1/d2/g;"
                   " chmod 100 /workspace/d1/d2; chmod 000 /workspace/d1;"
                   " echo top > /tmp/t0; chmod 000 /tmp")
        step: dict[str, Any] = {"setup": _res(r)}
        try:
            snap = sb.snapshot()
            step["names"] = {k: v for k, v in _tar_names(snap).items()
                             if k.startswith(("workspace", "tmp"))}
        except Exception as e:  # noqa: BLE001
            snap = None
            step["snapshot_error"] = f"{type(e).__name__}: {e}"
        step["modes_after"] = sb.run("stat -c '%a %n' /workspace/f0 /workspace/d1 /tmp").stdout
        if snap is not None:
            sb2 = Sandbox.from_snapshot(snap)
            try:
                step["restored"] = _res(sb2.run(
                    "stat -c '%a %n' /workspace/f0 /workspace/d1; chmod 700 /workspace/d1"
                    " /workspace/f0; chmod 700 /workspace/d1/d2; cat /workspace/f0"
                    " /workspace/d1/d2/g /tmp/t0"))
            finally:
                sb2.close()
        out["unreadable_snapshot"] = step
        # an upper found empty because it could not be read is read again once readable
        sb.run("chmod 1777 /tmp")
        steps = []
        for cmd in ("cd /; /bin/dash -c 'echo a > /workspace/x; chmod 000 /workspace'",
                    "cd /; /bin/chmod 755 /workspace; /bin/dash -c 'echo b >> /workspace/x'",
                    "/bin/rm /workspace/x"):
            steps.append(_res(sb.run(cmd)))
        out["unreadable_upper_changes"] = steps
        # the inotify queue overflowed (16384 events by default) while a file lands in
        # another, empty upper
        r = sb.run("/usr/bin/python3 -c '\nimport os\nfor i in range(20000):\n"
                   "    p = \"/tmp/churn%d\" % (i % 50)\n    open(p, \"w\").close()\n"
                   "    os.unlink(p)\n'"
                   f" && /bin/dash -c 'echo last > {home}/after_overflow'")
        out["inotify_overflow"] = _res(r)
        # ways of writing that are not write(2) through a plain open, into fresh uppers:
        # O_TMPFILE + linkat, a write through /proc/self/fd, mmap, rename from a subdir
        r = sb.run("/usr/bin/python3 -c '\nimport os, mmap\n"
                   f"h = \"{home}\"\n"
                   "try:\n    fd = os.open(h, os.O_TMPFILE | os.O_WRONLY, 0o644)\n"
                   "    os.write(fd, b\"tmpfile\")\n"
                   "    os.link(\"/proc/self/fd/%d\" % fd, h + \"/linked\")\n"
                   "except OSError as e:\n    print(\"tmpfile\", e)\n"
                   "    open(h + \"/linked\", \"w\").write(\"tmpfile\")\n"
                   "fd = os.open(\"/workspace/viafd\", os.O_CREAT | os.O_WRONLY, 0o644)\n"
                   "os.write(os.open(\"/proc/self/fd/%d\" % fd, os.O_WRONLY), b\"viafd\")\n"
                   "f = open(\"/workspace/mm\", \"w+b\"); f.write(b\"........\"); f.flush()\n"
                   "m = mmap.mmap(f.fileno(), 8); m[0:8] = b\"mmapdata\"; m.flush()\n"
                   "os.makedirs(\"/tmp/sub/deep\"); open(\"/tmp/sub/deep/r\", \"w\").write(\"ren\")\n"
                   "os.rename(\"/tmp/sub\", \"/tmp/moved\")\n'")
        out["odd_writes"] = _res(r)
        # a background native writes (mmap, in place) after its run returned
        r = sb.run("/usr/bin/python3 -c '\nimport mmap, time\ntime.sleep(0.5)\n"
                   "f = open(\"/workspace/mm\", \"r+b\")\nm = mmap.mmap(f.fileno(), 8)\n"
                   "m[0:8] = b\"LATEDATA\"; m.flush()\nopen(\"/workspace/late\", \"w\").write(\"late\")\n'"
                   " >/dev/null 2>&1 &")
        out["late_run"] = _res(r)
        end = time.monotonic() + 20
        while time.monotonic() < end and "late" not in sb.run("cat /workspace/late 2>/dev/null").stdout:
            time.sleep(0.1)
        sb.run("wait")
        snap = sb.snapshot()
        sb2 = Sandbox.from_snapshot(snap)
        try:
            out["late_restored"] = _res(sb2.run(
                f"cat {home}/after_overflow {home}/linked /workspace/viafd /workspace/mm"
                " /workspace/late /tmp/moved/deep/r"))
        finally:
            sb2.close()
        # hard links and a chain of snapshots: a change through the second name survives
        s1 = sb.snapshot()
        sb.run("echo one > /workspace/h1; /bin/ln /workspace/h1 /workspace/h2")
        s2 = sb.snapshot(parent=s1)
        sb.run("/bin/dash -c 'echo two > /workspace/h2'")
        s3 = sb.snapshot(parent=[s1, s2])
        sb3 = Sandbox()
        try:
            sb3.restore([s1, s2, s3])
            out["hardlink_chain"] = _res(sb3.run("cat /workspace/h1 /workspace/h2"))
        finally:
            sb3.close()
    finally:
        sb.close()
    return out


# -- 73018ed, a75e707, c9dba04: binaries, here-docs, exported functions --------------------------
REAL = b"#!/bin/sh\necho REAL_BINARY_RAN\n"
PLACEHOLDER = b"#!/bin/sh\n# tool: provided in-process by agentic-bash\n"


def exec_part(is_root: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    real = REAL.rstrip(b"\n") + b"#" * (len(PLACEHOLDER) - len(REAL)) + b"\n"
    assert len(real) == len(PLACEHOLDER)
    sb = Sandbox(limits=Limits(timeout=60, max_open_files=64))
    try:
        # a binary run (and remembered as no placeholder), then overwritten in place with a
        # placeholder of the same size and its mtime put back: at once, and after a pause
        sb.write_file("/tmp/ph", PLACEHOLDER)
        runs = []
        for i, pause in enumerate(("", "/bin/sleep 0.3;")):
            tool = f"/tmp/tool{i}"
            sb.write_file(tool, real)
            sb.run(f"chmod 755 {tool}")
            time.sleep(0.2)   # (older than the cache's settle window: remembered)
            first = _res(sb.run(f"{tool}; {tool}"))
            swapped = _res(sb.run(
                f"/usr/bin/touch -r {tool} /tmp/ref; {tool} >/dev/null; {pause}"
                f" /bin/dd if=/tmp/ph of={tool} conv=notrunc status=none;"
                f" /usr/bin/touch -r /tmp/ref {tool}; {tool}; echo rc=$?;"
                f" stat -c '%s %Y' {tool} /tmp/ref"))
            runs.append({"first": first, "swapped": swapped})
        out["placeholder_swap"] = runs
        # here-documents as pipes: nothing else open in the program, no descriptor kept
        # by the shell per program (64 open files at most)
        out["heredoc_fds"] = _res(sb.run("/bin/ls /proc/self/fd <<EOF\nbody\nEOF\n"
                                         "/bin/ls /proc/self/fd <<< str"))
        s3 = None
        if is_root:
            import psutil
            s3 = psutil.Process(sb._ex.pid).children(recursive=True)[-1].pid
        before = len(os.listdir(f"/proc/{s3}/fd")) if s3 else None
        r = sb.run("for i in $(seq 1 150); do /bin/true <<EOF\nx$i\nEOF\n"
                   "/bin/true <<< y; /bin/sleep 0 <<< z & done; wait;"
                   " /bin/cat <<< ok; h=$(printf 'a%.0s' $(seq 1 60000));"
                   " /usr/bin/head -c 3 <<< \"$h\"; echo; /bin/true <<< \"$h\"; echo rc=$?")
        after = len(os.listdir(f"/proc/{s3}/fd")) if s3 else None
        out["heredoc_loop"] = {**_res(r), "fds_before": before, "fds_after": after}
        # export -f into programs: a function of 1.1 MB (past the kernel's 128 KiB per
        # string: E2BIG, bash's 126), then without it; bounded, the session goes on
        r = sb.run("big() { echo $(printf 'x%.0s' {1..10}); }; "
                   "eval \"huge() { : $(head -c 1100000 /dev/zero | tr '\\0' x); }\";"
                   " export -f big huge; /bin/true; echo rc=$?; export -fn huge;"
                   " /bin/bash -c big; /usr/bin/env | grep -c '^BASH_FUNC_'")
        out["export_f"] = _res(r)
        out["alive"] = sb.run("echo alive").stdout
    finally:
        sb.close()
    return out


# -- 5e8c2e8: jobs end with the run that started them; a bomb of jobs is bounded ---------------
def jobs_part(is_root: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    sb = Sandbox(limits=Limits(timeout=60))
    top, runner = _runner(sb)
    try:
        t0 = time.monotonic()
        # (in-process jobs: a native program started with & outlives the run, as in bash;
        # test_contract_jobs checks that one)
        r = sb.run("( /bin/sleep 30 ) & (while :; do :; done) & { sleep 30; } & echo started",
                   timeout=2)
        out["job_deadline"] = {**_res(r), "wall": round(time.monotonic() - t0, 2)}
        time.sleep(2.5)
        out["job_deadline"]["left"] = _drained(sb, 10)
        out["job_deadline"]["jobs"] = sb.run("jobs").stdout
        # a here-doc when the user's new pipes hold only two pages (over the per-user soft
        # limit of pipe pages, 64 MiB: the body no longer fits in one): bounded, nothing lost
        r = sb.run("/usr/bin/python3 -c '\nimport fcntl, os, time\nn = 0\n"
                   "for i in range(90):\n    r, w = os.pipe()\n    try:\n"
                   "        fcntl.fcntl(w, 1031, 1 << 20); n += 1\n    except OSError:\n"
                   "        pass\n    os.close(w)\n"
                   "r, w = os.pipe()\nprint(n, fcntl.fcntl(w, 1032), flush=True)\ntime.sleep(3)\n' &"
                   " sleep 1; body=$(printf \"%060000d\" 0); /usr/bin/wc -c <<EOF\n$body\nEOF\n"
                   "kill %1; wait")
        out["heredoc_small_pipes"] = _res(r)
        t0 = time.monotonic()
        r = sb.run("f() { f & f & }; f; wait", timeout=4)
        out["inproc_bomb"] = {**_res(r), "wall": round(time.monotonic() - t0, 2)}
        t0 = time.monotonic()
        r = sb.run("g() { /bin/true; g & g & /bin/sleep 0.1; }; g; wait", timeout=4)
        out["mixed_bomb"] = {**_res(r), "wall": round(time.monotonic() - t0, 2),
                             "left": _drained(sb, 10), "runner": sorted(runner)}
        # a zombie the runner has not reaped yet goes at its next run
        sb.run("/bin/true")
        out["mixed_bomb"]["left_after_next_run"] = _drained(sb, 10)
        out["alive"] = sb.run("echo alive").stdout
        cg = dict(getattr(getattr(sb._ex, "_resources", None), "cgroups", None).dirs) \
            if is_root and getattr(getattr(sb._ex, "_resources", None), "cgroups", None) else {}
        sb.run("for i in $(seq 1 30); do /bin/sleep 60 & done; f() { f & f & }; f &"
               " ( while :; do :; done ) &", timeout=3)
    finally:
        t0 = time.monotonic()
        sb.close()
        out["close_wall"] = round(time.monotonic() - t0, 2)
    end = time.monotonic() + 15
    while time.monotonic() < end:
        left = [p for p in runner | _workload(top, set()) if os.path.exists(f"/proc/{p}")
                and _ppid(p) is not None]
        groups = [d for d in cg.values() if os.path.exists(d)]
        if not left and not groups:
            break
        time.sleep(0.1)
    out["after_close"] = {"procs": len(left), "cgroups": groups, "watched": sorted(cg)}
    return out


PARTS: dict[str, Callable[..., dict[str, Any]]] = {
    "pids": lambda root: pids_part(), "files": lambda root: files_part(),
    "exec": exec_part, "jobs": jobs_part}


def main() -> None:
    part = sys.argv[1]
    is_root = os.geteuid() == 0
    t0 = time.monotonic()
    try:
        got = PARTS[part](is_root)
    except Exception:  # noqa: BLE001
        got = {"error": traceback.format_exc()}
    got["_wall"] = round(time.monotonic() - t0, 2)
    print("\n@@JSON@@" + json.dumps(got))


if __name__ == "__main__":
    main()
