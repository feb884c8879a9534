"""Native processes under the interpreter on the real kernel, as root and as an unprivileged user."""

# Real `$!` of native background jobs, kill/wait on it, stdin offsets shared with builtins,
# SIGTERM-grace-SIGKILL on timeout, no settle delay while jobs live, and background children
# dying with close(): in the namespace sandbox and in host mode ("none"). This file is also the
# battery: `python test_native_jobs_kernel.py battery MODE TOKEN` prints JSON observations, which the
# tests below collect as each identity (same pattern as _battery.py).

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
import warnings

import pytest

THIS = os.path.abspath(__file__)


def _alive_by_cmdline(cmd: str) -> list[int]:
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/cmdline", "rb") as f:
                c = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
            with open(f"/proc/{d}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if c == cmd and state != "Z":
            out.append(int(d))
    return out


def battery(mode: str, token: str) -> dict:
    from agentic_bash import Sandbox

    n = 40000 + int(token) % 20000  # unique sleep lengths: host-side process lookups
    work = tempfile.mkdtemp(prefix="agb-native-jobs-")
    kw = {"workdir": work} if mode == "none" else {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        sb = Sandbox(isolation=mode, **kw)
    obs: dict = {"mode": sb.isolation_level, "uid": os.geteuid()}

    def run(script: str, **k) -> dict:
        t = time.monotonic()
        r = sb.run(script, **k)
        return {"out": r.stdout, "err": r.stderr, "code": r.exit_code, "timed_out": r.timed_out,
                "dt": time.monotonic() - t}

    # 1. $! is the real pid (of the pipeline's last stage); kill/wait act on it
    # (the pid is known once the child exists; its cmdline is empty while it is in execve and
    # the forker's before that, as with bash's fork: read it again for up to a second)
    cmdline = ("for i in $(seq 20); do c=$(tr '\\0' ' ' < /proc/$p/cmdline); "
               "case $c in sleep*) break;; esac; sleep 0.05; done; echo \"$c\"; ")
    obs["bang"] = run(f"sleep {n} & p=$!; {cmdline}"
                      "kill $p; wait $p; echo st=$?; kill -0 $p 2>/dev/null || echo gone")
    obs["bang_pipe"] = run(f"sleep 0.2 | sleep {n + 1} & p=$!; {cmdline}"
                           "kill $p; wait $p; echo st=$?")
    obs["jobspec"] = run(f"sleep {n + 2} & kill %1; wait %1; echo st=$?")
    # 2. run() returns when the foreground finishes, jobs alive or not
    run(f"sleep {n + 3} &")
    obs["true_with_job"] = min(run("true")["dt"] for _ in range(5))
    run("kill %1; wait")
    # 3. stdin: the native child reads exactly what builtins left
    obs["stdin_file"] = run("read a; cat; echo a=$a", stdin=b"1\n2\n")
    obs["stdin_pipe"] = run("printf '1\\n2\\n3\\n' | { read a; cat; echo a=$a; }")
    # 4. timeout: SIGTERM first (a handler runs), then SIGKILL after a short grace
    handler = ("import signal,sys,time\n"
               "def h(*a):\n open('termed','w').write('x'); sys.exit(0)\n"
               "signal.signal(signal.SIGTERM, h)\ntime.sleep(30)\n")
    ignorer = "import signal,time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\ntime.sleep(30)\n"
    # unique names: in host mode `ps` sees the other identities' batteries too
    h, i = f"h{n}.py", f"i{n}.py"
    run(f"cat > {h} <<'EOF'\n{handler}EOF\ncat > {i} <<'EOF'\n{ignorer}EOF")
    obs["timeout_handler"] = run(f"python3 {h}", timeout=1.0)
    obs["termed"] = run("cat termed")["out"]
    obs["timeout_ignorer"] = run(f"python3 {i}", timeout=0.5)
    obs["after_timeout"] = run(f"ps -eo args | grep -c '^python3 [hi]{n}.py' || true; echo ok")
    # 5. nohup and other background children die with close()
    r = run(f"nohup sleep {n + 4} >/dev/null 2>&1 & nohup sh -c 'sleep {n + 5}; :' "
            ">/dev/null 2>&1 & sleep 0.3; echo started")
    obs["nohup_started"] = r
    obs["before_close"] = [_alive_by_cmdline(f"sleep {n + 4}"), _alive_by_cmdline(f"sleep {n + 5}")]
    sb.close()
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline and (_alive_by_cmdline(f"sleep {n + 4}")
                                           or _alive_by_cmdline(f"sleep {n + 5}")):
        time.sleep(0.02)
    obs["after_close"] = _alive_by_cmdline(f"sleep {n + 4}") + _alive_by_cmdline(f"sleep {n + 5}")
    obs["leftover"] = sum(len(_alive_by_cmdline(f"sleep {n + i}")) for i in range(6))
    return obs


# ------------------------------------------------------------------------------ the tests
if __name__ != "__main__":
    from _support import _parse, sandbox_supported

    ok, why = sandbox_supported()
    pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]
    _cache: dict[tuple[str, str], dict] = {}

    @pytest.fixture(params=[("namespace", "root"), ("namespace", "user"),
                            ("none", "root"), ("none", "user")], ids=lambda p: f"{p[0]}-{p[1]}")
    def obs(request: pytest.FixtureRequest) -> dict:
        mode, who = request.param
        if mode == "namespace" and not ok:
            pytest.skip(f"kernel sandbox unavailable: {why}")
        if (mode, who) not in _cache:
            runner = request.getfixturevalue("as_root" if who == "root" else "as_user")
            token = str(os.getpid() * 7 + len(_cache))
            p = subprocess.run(runner.prefix + [runner.python, THIS, "battery", mode, token],
                               capture_output=True, text=True, env=runner.env, cwd=runner.cwd,
                               timeout=300)
            if p.returncode != 0:
                raise AssertionError(f"battery failed ({p.returncode}) as {who}/{mode}:\n"
                                     f"{p.stdout[-3000:]}\n{p.stderr[-5000:]}")
            _cache[(mode, who)] = _parse(p.stdout)
        return _cache[(mode, who)]

    def test_bang_is_the_real_pid(obs: dict) -> None:
        lines = obs["bang"]["out"].splitlines()
        assert lines[0].startswith("sleep 4") or lines[0].startswith("sleep 5"), obs["bang"]
        assert lines[1:] == ["st=143", "gone"], obs["bang"]

    def test_bang_of_a_pipeline_is_its_last_stage(obs: dict) -> None:
        first, st = obs["bang_pipe"]["out"].splitlines()
        assert first.startswith("sleep ") and first != "sleep 0.2", obs["bang_pipe"]
        assert st == "st=143"

    def test_kill_jobspec(obs: dict) -> None:
        assert obs["jobspec"]["out"] == "st=143\n", obs["jobspec"]

    def test_run_returns_without_settling_jobs(obs: dict) -> None:
        assert obs["true_with_job"] < 1.0, obs["true_with_job"]  # not the job's many seconds

    def test_native_stdin_shares_the_offset(obs: dict) -> None:
        assert obs["stdin_file"]["out"] == "2\na=1\n", obs["stdin_file"]
        assert obs["stdin_pipe"]["out"] == "2\n3\na=1\n", obs["stdin_pipe"]

    def test_timeout_is_sigterm_then_sigkill(obs: dict) -> None:
        h, i = obs["timeout_handler"], obs["timeout_ignorer"]
        assert h["timed_out"] and h["dt"] < 3.0, h
        assert obs["termed"] == "x", obs  # the SIGTERM handler ran
        assert i["timed_out"] and i["dt"] < 3.0, i  # SIGKILL after the grace, not the 30 s sleep
        assert obs["after_timeout"]["out"] == "0\nok\n", obs["after_timeout"]

    def test_nohup_children_die_with_close(obs: dict) -> None:
        assert obs["nohup_started"]["out"] == "started\n", obs["nohup_started"]
        assert all(len(x) == 1 for x in obs["before_close"]), obs["before_close"]
        assert obs["after_close"] == [] and obs["leftover"] == 0, obs

else:
    if sys.argv[1:2] == ["battery"]:
        result = battery(sys.argv[2], sys.argv[3])
        print("\n@@JSON@@" + json.dumps(result))
