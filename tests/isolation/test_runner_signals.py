"""Programs in a namespace sandbox cannot kill, stop or starve its runner: signals to it, its group or -1, tkill of its threads, a pidfd of it, prlimit; the session survives (attack)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import textwrap
import warnings

import pytest

pytestmark = [pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux only"),
              pytest.mark.timeout(300)]

_PY = "python3 -c"
# Each attack runs as a native program (python3, dash, pkill); the runner is the parent of
# a native child ($PPID of dash) and is found by name as well. After each one the session
# must answer the next run as the same sandbox (not a restarted one) with its state intact.
ATTACKS = [
    "dash -c 'kill $PPID'; echo rc=$?",
    "dash -c 'kill -9 $PPID'; echo rc=$?",
    "dash -c 'kill -STOP $PPID'; echo rc=$?",
    "dash -c 'kill -9 -$PPID'; echo rc=$?",
    "dash -c 'kill -9 -1'; echo rc=$?",
    "dash -c 'kill -9 1'; echo rc=$?",
    "dash -c 'kill -TERM 0'; echo rc=$?",
    "pkill -9 -f agentic_bash; echo rc=$?",
    "kill -TERM $(pgrep -f zygote) 2>/dev/null; echo rc=$?",
    "dash -c 'kill -9 $(pgrep -f agentic_bash)'; echo rc=$?",
    f"{_PY} 'import os; os.kill(-1, 9)'; echo rc=$?",
    f"{_PY} 'import os; os.kill(os.getppid(), 19)'; echo rc=$?",
    # join the runner's process group, then signal "my group"
    f"{_PY} 'import os; os.setpgid(0, os.getppid()); os.kill(0, 9)'; echo rc=$?",
    # tkill of every thread of the runner
    f"{_PY} 'import ctypes, os; l = ctypes.CDLL(None); p = os.getppid(); "
    "[l.syscall(200, int(t), 9) for t in os.listdir(f\"/proc/{p}/task\")]'; echo rc=$?",
    # tgkill of its threads
    f"{_PY} 'import ctypes, os; l = ctypes.CDLL(None); p = os.getppid(); "
    "[l.syscall(234, p, int(t), 9) for t in os.listdir(f\"/proc/{p}/task\")]'; echo rc=$?",
    # rt_sigqueueinfo, pidfd_open + pidfd_send_signal, a pidfd from opening /proc/<pid>
    f"{_PY} 'import ctypes, os; l = ctypes.CDLL(None); b = ctypes.create_string_buffer(128); "
    "l.syscall(129, os.getppid(), 9, b)'; echo rc=$?",
    f"{_PY} 'import os, signal\ntry:\n fd = os.pidfd_open(os.getppid())\nexcept OSError as e:\n print(e)\n"
    "fd = os.open(f\"/proc/{os.getppid()}\", os.O_RDONLY)\ntry:\n signal.pidfd_send_signal(fd, 9)\n"
    "except OSError as e:\n print(e)'; echo rc=$?",
    # a CPU-time limit of one second would have the kernel kill it later
    f"{_PY} 'import os, resource; resource.prlimit(os.getppid(), resource.RLIMIT_CPU, (1, 1))'; "
    "echo rc=$?",
]

# What programs may still do: signal themselves, their own threads and children.
ALLOWED = [
    (f"{_PY} 'import os, signal; signal.raise_signal(signal.SIGTERM)'; echo $?", "143\n"),
    (f"{_PY} 'import ctypes, os, threading; l = ctypes.CDLL(None); "
     "print(l.syscall(200, threading.get_native_id(), 0))'", "0\n"),
    ("dash -c 'sleep 5 & kill $!; wait $!; echo $?'", "143\n"),
    ("dash -c 'kill -0 $$ && echo self'", "self\n"),
    (f"{_PY} 'import os; print(os.pidfd_open(os.getpid()) > 0)'", "True\n"),
    # whether the parent exists (signal 0), and reading its limits, are harmless
    (f"{_PY} 'import os; os.kill(os.getppid(), 0); print(\"parent\")'", "parent\n"),
    ("dash -c 'kill -0 $PPID && echo parent'", "parent\n"),
    (f"{_PY} 'import ctypes, os; l = ctypes.CDLL(None); p = os.getppid(); "
     "print({l.syscall(200, int(t), 0) for t in os.listdir(f\"/proc/{p}/task\")})'", "{0}\n"),
    (f"{_PY} 'import os, resource; print(resource.prlimit(os.getppid(), resource.RLIMIT_NOFILE)[0] > 0)'",
     "True\n"),
]


def _session_survives(sb, script: str) -> tuple[bool, str]:
    sb.run("MARK=kept")
    r = sb.run(script, timeout=30)
    after = sb.run("echo ${MARK:-lost}", timeout=30)
    ok = not r.restarted and not after.restarted and after.stdout == "kept\n" and not r.timed_out
    return ok, f"{script}: {r.stdout!r} {r.stderr[-300:]!r} restarted={r.restarted}/{after.restarted}"


@pytest.fixture(scope="module")
def sb():
    from agentic_bash import Sandbox
    from agentic_bash.isolation.plan import plan
    from agentic_bash.isolation.probe import probe
    if plan("namespace", probe()).level != "namespace":
        pytest.skip("no kernel sandbox here")
    for tool in ("python3", "dash", "pkill"):
        if subprocess.run(["which", tool], capture_output=True).returncode:
            pytest.skip(f"{tool} not installed")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        s = Sandbox(isolation="namespace")
    yield s
    s.close()


@pytest.mark.parametrize("script", ATTACKS)
def test_runner_survives(sb, script: str) -> None:
    ok, why = _session_survives(sb, script)
    assert ok, why


def test_refusal_is_reported(sb) -> None:
    r = sb.run("dash -c 'kill -9 $PPID'; echo rc=$?", timeout=30)
    assert r.stdout == "rc=1\n"
    assert r.stderr.startswith("dash: 1: kill: Operation not permitted\n")
    # with a seccomp listener (this kernel) the refusal is itemised
    if "user notification" in str(sb.isolation):
        assert any(v.kind == "syscall" and v.detail.startswith("kill(") for v in r.violations)


def test_limits_of_the_runner_are_refused(sb) -> None:
    # RLIMIT_CPU of 1 s would have the kernel kill it later, after this test
    r = sb.run(f"{_PY} 'import os, resource; resource.prlimit(os.getppid(), resource.RLIMIT_CPU, (1, 1))' "
               "2>&1 | tail -1", timeout=30)
    assert r.stdout == "PermissionError: [Errno 1] Operation not permitted\n"


@pytest.mark.parametrize("call", ["l.syscall(62, p, 10)", "l.syscall(234, p, p, 10)",
                                  "l.syscall(129, p, 10, b)"], ids=["kill", "tgkill", "rt_sigqueueinfo"])
def test_forwarded_signal_reaches_the_shell_by_every_call(sb, call: str) -> None:
    # USR1 to the runner by kill, tgkill or rt_sigqueueinfo: the supervisor hands it to the
    # shell (its trap runs) and the call succeeds, whichever argument carries pid and signal
    r = sb.run("trap 'echo got USR1' USR1; python3 -c 'import ctypes, os; l = ctypes.CDLL(None); "
               f"b = ctypes.create_string_buffer(128); p = os.getppid(); print({call})'; echo after",
               timeout=30)
    assert (r.stdout, r.exit_code, r.restarted) == ("0\ngot USR1\nafter\n", 0, False), r.stderr


@pytest.mark.parametrize("script,want", ALLOWED)
def test_programs_still_signal_their_own(sb, script: str, want: str) -> None:
    r = sb.run(script, timeout=30)
    assert r.stdout == want, (script, r.stderr)
    assert not r.restarted


# -- the same attacks as an unprivileged user -------------------------------------------------
# (as_user: tests/conftest.py)
_USER_SCRIPT = textwrap.dedent("""
    import json, sys, warnings
    warnings.simplefilter("ignore")
    import agentic_bash as ab
    out = []
    with ab.Sandbox(isolation="namespace") as sb:
        for c in json.loads(sys.argv[1]):
            sb.run("MARK=kept")
            r = sb.run(c, timeout=30)
            a = sb.run("echo ${MARK:-lost}", timeout=30)
            out.append([c, r.restarted or a.restarted or a.stdout != "kept\\n" or r.timed_out])
    print(json.dumps(out))
""")


def test_runner_survives_unprivileged(as_user) -> None:
    from agentic_bash.isolation.plan import plan
    from agentic_bash.isolation.probe import probe
    if plan("namespace", probe()).level != "namespace":
        pytest.skip("no kernel sandbox here")
    fd, script = tempfile.mkstemp(suffix=".py", dir=as_user.env["TMPDIR"])
    with os.fdopen(fd, "w") as f:
        f.write(_USER_SCRIPT)
    os.chmod(script, 0o644)
    p = subprocess.run(as_user.prefix + [as_user.python, script, json.dumps(ATTACKS)],
                       capture_output=True, text=True, env=as_user.env, cwd="/", timeout=240)
    assert p.returncode == 0, p.stderr[-3000:]
    lost = [c for c, bad in json.loads(p.stdout.strip().splitlines()[-1]) if bad]
    assert lost == []
