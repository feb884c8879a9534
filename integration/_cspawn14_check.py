"""What a native program gets and how its failures read, through a namespace sandbox, with the compiled spawn or without it (AGENTIC_BASH_FASTSPAWN): bash's own answers from inside the same sandbox, the child's limits, groups, signals and descriptors, timeouts, interrupts, streaming and the process limit; prints JSON."""

from __future__ import annotations

import dataclasses
import json
import re
import shlex
import threading
import time
import warnings

from agentic_bash import Limits, Sandbox

# (script, stdin): run by the sandbox's interpreter and by `bash -c` inside the same sandbox
CASES: list[tuple[str, bytes | None]] = [
    ("/bin/true; echo $?", None),
    ("/nonexist; echo $?", None),
    ("nosuchcmd; echo $?", None),
    ("/etc/passwd; echo $?", None),
    ("/tmp; echo $?", None),
    ("printf 'echo hi $0 $1\\n' > /tmp/n.sh; chmod +x /tmp/n.sh; /tmp/n.sh a; echo $?", None),
    ("printf '\\000\\001junk' > /tmp/j; chmod +x /tmp/j; /tmp/j; echo $?", None),
    ("printf '#!/nonexist/interp\\n' > /tmp/m; chmod +x /tmp/m; /tmp/m; echo $?", None),
    ("printf '#!/bin/sh\\necho script $1\\n' > /tmp/s; chmod +x /tmp/s; /tmp/s x; echo $?", None),
    ("chmod -x /tmp/s; /tmp/s; echo $?", None),
    ("sh -c 'exit 3'; echo $?", None),
    ("sh -c 'kill -TERM $$'; echo $?", None),
    ("sh -c 'kill -KILL $$'; echo $?", None),
    ("sh -c 'kill -SEGV $$'; echo $?", None),
    ("seq 1 60000", None),
    ("head -c 300000 /dev/zero | tr '\\0' a | wc -c", None),
    ("seq 1 20000 >&2; echo done", None),
    ("cat", b"hello\nworld\n"),
    ("read a; echo got $a; cat", b"1\n2\n3\n"),
    ("head -1; head -1", b"a\nb\nc\n"),
    ("ls >&-; echo $?", None),
    ("sh -c 'echo out; echo err >&2' 2>&1", None),
    ("sh -c 'echo three >&3' 3>/tmp/f3; cat /tmp/f3", None),
    ("exec 4</etc/hostname; sh -c 'cat <&4' | wc -l", None),
    # (in subshells: the session keeps its umask, ulimits and traps from one run to the next)
    ("(umask 077; sh -c umask)", None),
    ("(ulimit -n 64; sh -c 'ulimit -n')", None),
    ("(ulimit -S -d 200000; sh -c 'ulimit -d')", None),
    ("(trap '' INT; grep -E '^Sig(Ign|Blk)' /proc/self/status)", None),
    ("sh -c 'grep -E \"^Sig(Ign|Blk)\" /proc/self/status' & wait", None),
    ("grep -E '^Sig(Ign|Blk|Cgt)' /proc/self/status", None),
    ("mkdir -p /tmp/gone; cd /tmp/gone; rmdir /tmp/gone; /bin/ls; echo $?", None),
    ("cd /usr; /bin/pwd; env -i /usr/bin/env", None),
    ("A=1 /usr/bin/printenv A", None),
    ("exec -a myname sh -c 'echo $0'", None),
]

# facts of the child's process: the same on both paths (compared by the test)
FACTS = {
    # (the Python path caps RLIMIT_DATA and RLIMIT_NPROC from outside once the program runs)
    "limits": "sh -c 'sleep 0.3; grep -E \"^Max (data size|processes|address space|open files)\" "
              "/proc/$$/limits'",
    "status": "grep -E '^(Seccomp|NoNewPrivs|CapEff|CapPrm|CapBnd|SigBlk|SigIgn|SigCgt):' "
              "/proc/self/status",
    # (as root pid 1 raises a new program's oom_score_adj at its first look, and the Python
    # path renices a program started from the run thread once it runs: read a moment later)
    "oom": "sh -c 'sleep 0.3; cat /proc/$$/oom_score_adj'",
    "nice": "sh -c 'sleep 0.3; cut -d\" \" -f19 /proc/$$/stat'",
    "pgrp_is_own": "sh -c 'set -- $(cut -d\" \" -f5,6 /proc/$$/stat); "
                   "[ \"$1\" = \"$$\" ] && echo leader; echo sid=$2'",
    "fds": "ls /proc/self/fd | sort -n | tr '\\n' ' '",
    "umask": "grep -E '^Umask' /proc/self/status",
    "big_alloc": "python3 -c 'bytearray(600 << 20)' 2>&1 | tail -1; echo ${PIPESTATUS[0]}",
}


def _pids(text: str) -> str:
    return re.sub(r"line 1: +[0-9]+ ", "line 1: PID ", text)


def _cgroup(sb: Sandbox) -> list[str]:
    """The child's cgroup paths with the sandbox's own name cut out (it differs per sandbox)."""
    text = sb.run("cat /proc/self/cgroup").stdout
    return sorted(re.sub(r"agentic-bash-[0-9a-f-]+", "SANDBOX", re.sub(
        r"[0-9a-f]{8,}", "X", line.split(":", 2)[-1])) for line in text.splitlines())


def main() -> dict:
    out: dict = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sb = Sandbox("namespace")
    try:
        out["level"] = sb.isolation.level
        out["fast_spawn"] = [n for n in sb.isolation.notes if n.startswith("native spawns")]
        diff = []
        for script, stdin in CASES:
            ours = sb.run(script, stdin=stdin)
            sb.run("rm -rf /tmp/n.sh /tmp/j /tmp/m /tmp/s /tmp/f3 /tmp/gone; cd /tmp")
            theirs = sb.run("bash -c " + shlex.quote(script), stdin=stdin)
            sb.run("rm -rf /tmp/n.sh /tmp/j /tmp/m /tmp/s /tmp/f3 /tmp/gone; cd /tmp")
            # (a job's pid in bash's "Killed" line differs by one fork)
            a = [ours.stdout, _pids(ours.stderr), ours.exit_code]
            b = [theirs.stdout, _pids(theirs.stderr), theirs.exit_code]
            diff.append([script, a, b])
        out["diff"] = diff
        out["facts"] = {k: sb.run(v).stdout for k, v in FACTS.items()}
        # (the compiled path sets it before exec: a program sees it from its first instruction)
        out["nice_now"] = sb.run("cut -d' ' -f19 /proc/self/stat").stdout
        out["limits_now"] = sb.run("grep -E '^Max (data size|processes)' /proc/self/limits").stdout
        out["cgroup"] = _cgroup(sb)
        out["cap_kill"] = sb.run("python3 -c 'bytearray(600 << 20)'; echo $?").stdout
        # streamed output (the interpreter's on_output): every chunk, in order
        got: dict[int, list[bytes]] = {1: [], 2: []}
        r = sb._ex.run("seq 3; sh -c 'echo e1 >&2; sleep 0.1; echo e2 >&2'; seq 4 5",
                       on_output=lambda fd, b: got[fd].append(b))
        out["streamed"] = [b"".join(got[1]).decode(), b"".join(got[2]).decode(), r.exit_code,
                           r.stdout, r.stderr]
        # a timeout and an interrupt end the program; nothing is left
        t = time.monotonic()
        r = sb.run("sleep 30; echo not-reached", timeout=1)
        out["timeout"] = [r.timed_out, r.exit_code, round(time.monotonic() - t, 2),
                          "not-reached" in r.stdout]
        done = threading.Event()

        def interrupter() -> None:
            done.wait(0.3)
            while not done.wait(0.05):
                sb.interrupt()
        th = threading.Thread(target=interrupter)
        th.start()
        t = time.monotonic()
        try:
            r = sb.run("sleep 31; echo not-reached", timeout=60)
        finally:
            done.set()
            th.join()
        out["interrupt"] = [r.exit_code, "not-reached" in r.stdout, round(time.monotonic() - t, 2)]
        out["left"] = sb.run("for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline 2>/dev/null; "
                             "echo; done | grep -c '^sleep 3[01]'").stdout.strip()
        # output past the run's cap: truncated, visible
        r = sb.run("head -c 3000000 /dev/zero | tr '\\0' a; echo", timeout=30)
        out["big"] = [len(r.stdout), r.truncated, r.exit_code]
    finally:
        sb.close()
    # the process limit: a program past it is refused as a fork would be
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sb = Sandbox("namespace", limits=dataclasses.replace(Limits(), max_processes=6,
                                                              max_output_bytes=1 << 20))
    try:
        r = sb.run("for i in 1 2 3 4 5 6 7; do sleep 3 & done; /bin/true; echo rc=$?; "
                   "kill %1 %2 %3 %4 %5 %6 %7 2>/dev/null; wait", timeout=30)
        out["limit"] = [r.stdout, r.stderr, r.exit_code]
        out["limit_after"] = sb.run("/bin/echo ok").stdout
        r = sb.run("head -c 3000000 /dev/zero | tr '\\0' a; echo", timeout=30)
        out["capped_output"] = [len(r.stdout), r.truncated, r.exit_code]
    finally:
        sb.close()
    return out


if __name__ == "__main__":
    print("\n@@JSON@@" + json.dumps(main()))
