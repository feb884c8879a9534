"""The workload's programs run at niceness 10 below the runner's 0 and cannot lower it again, as root, as an unprivileged user and at the landlock level (judged on the host)."""

from __future__ import annotations

import json
import subprocess

import pytest

from _support import _parse, sandbox_supported

ok, why = sandbox_supported()
pytestmark = [pytest.mark.skipif(not ok, reason=f"kernel sandbox unavailable: {why}"),
              pytest.mark.timeout(300)]

# In the sandbox: a program polls its own niceness until the runner's setpriority lands, then
# tries to undo it; on the host: every process of the sandbox's tree and its niceness.
CHECK = r'''
import json, os, sys, time, warnings, psutil
from agentic_bash import Sandbox
warnings.simplefilter("ignore")
PROBE = """
import json, os, resource, sys, time
end = time.monotonic() + 20
while os.getpriority(os.PRIO_PROCESS, 0) == 0 and time.monotonic() < end:
    time.sleep(0.01)
out = {"nice": os.getpriority(os.PRIO_PROCESS, 0), "rlimit_nice": resource.getrlimit(resource.RLIMIT_NICE)}
for name, fn in [("renice_0", lambda: os.setpriority(os.PRIO_PROCESS, 0, 0)),
                 ("renice_5", lambda: os.setpriority(os.PRIO_PROCESS, 0, 5)),
                 ("renice_pgrp_0", lambda: os.setpriority(os.PRIO_PGRP, 0, 0)),
                 ("raise_rlimit", lambda: resource.setrlimit(resource.RLIMIT_NICE, (40, 40))),
                 ("soft_rlimit", lambda: resource.setrlimit(resource.RLIMIT_NICE, (20, 0)))]:
    try:
        fn()
        out[name] = "allowed"
    except (OSError, ValueError) as e:
        out[name] = type(e).__name__
out["nice_after"] = os.getpriority(os.PRIO_PROCESS, 0)
print(json.dumps(out), flush=True)
open("probe-ready", "w").close()
time.sleep(30)
"""
# (the probe's failure ends the wait too)
res = {}
with Sandbox(**({"isolation": sys.argv[1]} if sys.argv[1:] else {})) as sb:
    d = sb.run("pwd").stdout.strip()   # (the landlock level writes only its workspace)
    sb.write_file(d + "/probe.py", PROBE)
    sb.run("(python3 probe.py; : > probe-ready) > probe.out 2>&1 &")
    end = time.monotonic() + 60
    while not sb.exists(d + "/probe-ready") and time.monotonic() < end:
        time.sleep(0.05)
    res["probe"] = sb.read_file(d + "/probe.out").decode()
    tree = []
    for p in psutil.Process().children(recursive=True):
        try:
            tree.append([p.pid, " ".join(p.cmdline())[:200], p.nice()])
        except psutil.Error:
            pass
    res["tree"] = tree
    res["renice_cmd"] = sb.run("/usr/bin/nice -n -5 /bin/true 2>&1").stdout
    res["uid"] = os.getuid()
print("\n@@JSON@@" + json.dumps(res))
'''


@pytest.mark.parametrize("who,level", [("root", None), ("user", None), ("root", "landlock")])
def test_workload_runs_niced_and_cannot_undo_it(request: pytest.FixtureRequest, who: str,
                                                level: str | None) -> None:
    runner = request.getfixturevalue("as_root" if who == "root" else "as_user")
    p = subprocess.run(runner.prefix + [runner.python, "-c", CHECK] + ([level] if level else []),
                       capture_output=True,
                       text=True, env=runner.env, cwd=runner.cwd, timeout=240)
    assert "@@JSON@@" in p.stdout, p.stdout[-2000:] + p.stderr[-3000:]
    res = _parse(p.stdout)
    probe = json.loads(res["probe"].strip().splitlines()[-1])
    assert probe["nice"] == 10, probe
    assert tuple(probe["rlimit_nice"]) == (0, 0), probe
    for k in ("renice_0", "renice_5", "renice_pgrp_0", "raise_rlimit", "soft_rlimit"):
        assert probe[k] in ("PermissionError", "ValueError"), (k, probe)
    assert probe["nice_after"] == 10, probe
    # on the host: the probe (a workload program) at 10; the zygote, the sandbox's init and
    # the runner (the Python processes that are not the probe) at 0
    workload = [t for t in res["tree"] if "probe.py" in t[1]]
    ours = [t for t in res["tree"] if "probe.py" not in t[1] and "python" in t[1].split(" ")[0]]
    assert workload and all(t[2] == 10 for t in workload), res["tree"]
    assert ours and all(t[2] == 0 for t in ours), res["tree"]
    # below 0 is refused too, whenever it is asked (coreutils: "cannot set niceness")
    assert "cannot set niceness" in res["renice_cmd"], res["renice_cmd"]
