"""The runner's warm-up (sessions14) leaves no trace: the first two commands of sandboxes, one
pooled and one made directly, print the whole shell state; run once with the warm-up and once
without (AGENTIC_BASH_RUNNER_WARMUP=0), the caller compares. Also the runner's minor faults
during the first `echo`. Prints JSON."""

from __future__ import annotations

import json
import os
import time
import traceback

from agentic_bash import Sandbox, SandboxPool

# everything a first command can see of the shell and the sandbox (bash's own state and
# the processes / files); values that change by themselves between runs are left out
# (and a program's oom_score_adj: pid 1 raises it after the start, a race with the read;
# the processes are listed by the shell's glob: `ls /proc | grep` lists grep or not)
STATE = r"""echo "status=$? _=$_ LINENO=$LINENO BASH_COMMAND=$BASH_COMMAND BASHPID=$BASHPID$$"
history
declare -p | grep -Ev '^declare [-a-zA-Z]+ (RANDOM|SRANDOM|SECONDS|EPOCHREALTIME|EPOCHSECONDS|BASH_COMMAND|_)='
declare -f; alias; set -o; shopt; trap -p; jobs -l; hash; ulimit -a; umask; pwd; dirs
ls -la --time-style=+T /tmp /workspace /dev/shm
echo /proc/[0-9]*
cat /proc/self/status | grep -E '^(NoNewPrivs|Seccomp|CapEff|Cpus_allowed_list):'
"""
SECOND = 'echo "status=$? _=$_ LINENO=$LINENO"; history; hash; jobs -l'


def _runner(sb: Sandbox) -> int:
    p = sb._ex.pid
    for _ in range(3):
        with open(f"/proc/{p}/task/{p}/children") as f:
            kids = f.read().split()
        if not kids:
            break
        p = int(kids[0])
    return p


def _minflt(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[7])


def _one(sb: Sandbox) -> dict:
    time.sleep(0.5)   # (ready, then the runner's idle wait and its warm-up)
    r = _runner(sb)
    f0 = _minflt(r)
    first = sb.run("echo hi")
    faults = _minflt(r) - f0
    out = {"faults_first_echo": faults, "runs": []}
    for script in (STATE, SECOND):
        res = sb.run(script)
        out["runs"].append({k: getattr(res, k) for k in (
            "stdout", "stderr", "exit_code", "timed_out", "limit_exceeded", "files_created",
            "files_modified", "files_deleted")} | {"violations": [str(v) for v in res.violations]})
    out["first"] = [first.stdout, first.exit_code, first.stderr]
    return out


def main() -> dict:
    got: dict = {"warmup": os.environ.get("AGENTIC_BASH_RUNNER_WARMUP", "1")}
    sb = Sandbox("namespace")
    try:
        got["direct"] = _one(sb)
    finally:
        sb.close()
    pool = SandboxPool(min_size=1, max_size=1, idle_ttl=None, isolation="namespace")
    try:
        with pool.sandbox() as sb:
            got["pooled"] = _one(sb)
    finally:
        pool.close()
    return got


if __name__ == "__main__":
    try:
        res = main()
    except Exception:  # noqa: BLE001
        res = {"error": traceback.format_exc()}
    print("\n@@JSON@@" + json.dumps(res))
