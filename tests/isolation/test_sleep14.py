"""sessions14: `sleep` in a sandboxed mode waits in the shell when it is the system's sleep with
valid durations (no program started); differential against bash with GNU sleep for what it
prints and returns, and a timeout, an interrupt, a cancel and close() end it promptly."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
import time

import pytest

pytestmark = [pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux only"),
              pytest.mark.timeout(300)]


@pytest.fixture(scope="module")
def sb():
    from agentic_bash import Sandbox
    try:
        s = Sandbox("namespace")
    except Exception as e:  # noqa: BLE001
        pytest.skip(f"namespace sandbox unavailable: {e}")
    yield s
    s.close()


def _bash(script: str) -> tuple[str, str, int, float]:
    t = time.monotonic()
    p = subprocess.run(["/bin/bash", "-c", script], capture_output=True, text=True, cwd="/tmp",
                       env={"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"},
                       timeout=60)
    return p.stdout, p.stderr, p.returncode, time.monotonic() - t


def _ours(sb, script: str) -> tuple[str, str, int, float]:
    t = time.monotonic()
    r = sb.run(script, timeout=60)
    return r.stdout, r.stderr, r.exit_code, time.monotonic() - t


def _runner_children(sb) -> list[str]:
    """The sandbox runner's child processes (host pids)."""
    p = sb._ex.pid
    for _ in range(3):
        with open(f"/proc/{p}/task/{p}/children") as f:
            kids = f.read().split()
        if not kids:
            break
        p = int(kids[0])
    out = []
    for t in os.listdir(f"/proc/{p}/task"):
        with open(f"/proc/{p}/task/{t}/children") as f:
            out += f.read().split()
    return out


# (operand, seconds GNU sleep waits)
GOOD = [("0", 0), ("0.05", 0.05), (".05", 0.05), ("0.02s", 0.02), ("0.001m", 0.06),
        ("1e-2", 0.01), ("0x0.1", 0.0625), ("+0.01", 0.01), ("0.01 0.02 0s", 0.03),
        ("0m 0h 0d 0.01", 0.01), ("5e-3s", 0.005), ("0X.08", 0.03125)]
BAD = ["", "1x", "-1", "abc", "1.5.5", "0.01 x", "1 2q", "--", "-- 0.01", "--help",
       "--version", "-z 1", "' 1'", "'1 '", "0,5", "1e", "0x", "infinity-1", "''"]


@pytest.mark.parametrize("args,secs", GOOD)
def test_valid_durations_as_gnu_sleep(sb, args: str, secs: float) -> None:
    script = f"sleep {args}; echo $?"
    want = _bash(script)
    got = _ours(sb, script)
    assert got[:3] == want[:3], (got, want)
    assert got[3] >= secs * 0.9, got      # (no upper timing bound but a loose one)
    assert got[3] < secs + 5, got


@pytest.mark.parametrize("args", BAD)
def test_bad_operands_as_gnu_sleep(sb, args: str) -> None:
    script = f"sleep {args}; echo $?"
    want = _bash(script)
    got = _ours(sb, script)
    if args == "--version":   # (the first line: the rest names the authors)
        assert got[0].splitlines()[:1] == want[0].splitlines()[:1], (got, want)
        assert got[1:3] == want[1:3], (got, want)
    else:
        assert got[:3] == want[:3], (got, want)


def test_no_program_is_started(sb) -> None:
    seen: list[list[str]] = []
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            seen.append(_runner_children(sb))
            time.sleep(0.02)

    t = threading.Thread(target=watch)
    t.start()
    try:
        r = sb.run("sleep 0.5; echo $?")
    finally:
        stop.set()
        t.join()
    assert r.stdout == "0\n"
    assert len(seen) >= 5 and not any(seen), seen
    # the lookup is bash's: hashed, counted
    assert "/usr/bin/sleep" in sb.run("hash").stdout


def test_a_program_named_sleep_of_the_users_runs(sb) -> None:
    r = sb.run("mkdir -p /tmp/b14 && printf '#!/bin/sh\\necho mine \"$@\"\\n' > /tmp/b14/sleep && "
               "chmod +x /tmp/b14/sleep && PATH=/tmp/b14:$PATH sleep 5; hash -r")
    assert (r.stdout, r.exit_code) == ("mine 5\n", 0), r


def test_a_replaced_system_sleep_runs() -> None:
    # (root in the sandbox may write /usr: the file is then not the system's; its change time
    # is newer than the shell's start)
    from agentic_bash import Sandbox
    s = Sandbox("namespace", user="root")
    try:
        if s.run("id -u").stdout.strip() != "0" or s.run("test -w /usr/bin").exit_code:
            pytest.skip("/usr/bin not writable in the sandbox")
        r = s.run("sleep 0.01 && printf '#!/bin/sh\\necho replaced\\n' > /usr/bin/sleep "
                  "&& sleep 5")
        assert (r.stdout, r.exit_code) == ("replaced\n", 0), r
        r = s.run("sleep 0.01; echo $?")   # (hashed: the same file)
        assert r.stdout == "replaced\n0\n", r
    finally:
        s.close()


def test_trap_runs_after_the_sleep_as_in_bash(sb) -> None:
    script = ("trap 'echo got' USR1; (sleep 0.1; kill -USR1 $$) & sleep 0.5; echo after; "
              "wait")
    want = _bash(script)
    got = _ours(sb, script)
    assert got[:3] == want[:3], (got, want)


def test_timeout_ends_it(sb) -> None:
    t = time.monotonic()
    r = sb.run("sleep 30", timeout=0.3)
    assert time.monotonic() - t < 5
    assert (r.exit_code, r.timed_out) == (124, True), r
    assert sb.run("echo ok").stdout == "ok\n"


def test_interrupt_ends_it(sb) -> None:
    threading.Timer(0.3, sb.interrupt).start()
    t = time.monotonic()
    r = sb.run("sleep 30; echo not reached")
    assert time.monotonic() - t < 5
    assert r.exit_code == 130 and "not reached" not in r.stdout, r
    assert sb.run("echo ok").stdout == "ok\n"


def test_cancel_ends_it(sb) -> None:
    async def main() -> float:
        task = asyncio.ensure_future(sb.arun("sleep 30"))
        await asyncio.sleep(0.3)
        t = time.monotonic()
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            pass
        r = await sb.arun("echo ok")
        assert r.stdout == "ok\n"
        return time.monotonic() - t
    assert asyncio.run(main()) < 5


def test_close_ends_it() -> None:
    from agentic_bash import Sandbox
    s = Sandbox("namespace")
    threading.Timer(0.3, s.close).start()
    t = time.monotonic()
    try:
        s.run("sleep 30")
    except Exception:  # noqa: BLE001 - (closed under it: SandboxClosed or a result)
        pass
    assert time.monotonic() - t < 5
