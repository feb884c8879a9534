"""host15: the sandbox's runner runs SCHED_BATCH (a runner woken by the host's request does not
preempt the host's thread), its programs inherit it, pid 1 does not; the workload's niceness
and an awaited run's host-side deadline are as before. As root, as an unprivileged user and at
the landlock level (judged on the host)."""

from __future__ import annotations

import subprocess

import pytest

from _support import _parse, sandbox_supported

ok, why = sandbox_supported()
pytestmark = [pytest.mark.skipif(not ok, reason=f"kernel sandbox unavailable: {why}"),
              pytest.mark.timeout(300)]

CHECK = r'''
import asyncio, json, os, sys, warnings, psutil
from agentic_bash import Sandbox
warnings.simplefilter("ignore")
res = {}
with Sandbox(**({"isolation": sys.argv[1]} if sys.argv[1:] else {})) as sb:
    res["inside"] = sb.run("/bin/sh -c 'chrt -p $$'; nice").stdout
    res["echo"] = asyncio.run(sb.arun("echo hi")).stdout
    pols = []
    for p in psutil.Process().children(recursive=True):
        try:
            cmd = " ".join(p.cmdline())[:200]
            for t in p.threads():
                pols.append([p.pid, t.id, cmd, os.sched_getscheduler(t.id)])
        except (psutil.Error, OSError):
            pass
    res["tree"] = pols
    # which process serves the runs: the one whose children include a program we start
    sb.run("sleep 5 &")
    res["sleep_parent"] = [[p.pid, p.ppid(), os.sched_getscheduler(p.pid)]
                           for p in psutil.Process().children(recursive=True)
                           if p.name() == "sleep"]
print("\n@@JSON@@" + json.dumps(res))
'''


@pytest.mark.parametrize("who,level", [("root", None), ("user", None), ("root", "landlock")])
def test_the_runner_and_its_programs_are_batch(request: pytest.FixtureRequest, who: str,
                                               level: str | None) -> None:
    import os
    runner = request.getfixturevalue("as_root" if who == "root" else "as_user")
    p = subprocess.run(runner.prefix + [runner.python, "-c", CHECK] + ([level] if level else []),
                       capture_output=True, text=True, env=runner.env, cwd=runner.cwd,
                       timeout=240)
    assert "@@JSON@@" in p.stdout, p.stdout[-2000:] + p.stderr[-3000:]
    res = _parse(p.stdout)
    assert res["echo"] == "hi\n"
    assert "policy: SCHED_BATCH" in res["inside"], res["inside"]
    assert res["inside"].rstrip().endswith("10"), res["inside"]   # the workload's niceness
    sleeps = res["sleep_parent"]
    assert sleeps and all(s[2] == os.SCHED_BATCH for s in sleeps), sleeps
    # the sleep's parent is the runner: every thread of it is batch
    runner_pid = sleeps[0][1]
    threads = [t for t in res["tree"] if t[0] == runner_pid]
    assert threads and all(t[3] == os.SCHED_BATCH for t in threads), res["tree"]
    # the zygote and pid 1 (every Python process above the runner) are not
    above = [t for t in res["tree"] if t[0] != runner_pid and "python" in t[2].split(" ")[0]
             and t[0] not in {s[0] for s in sleeps}]
    assert above and all(t[3] == os.SCHED_OTHER for t in above), res["tree"]
