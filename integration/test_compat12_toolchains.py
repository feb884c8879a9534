"""compat12: toolchains as a user runs them: java at isolation='none', psutil and top in a default Sandbox(), and an install missing a required module, as root and as an unprivileged user."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from _support import HERE, _parse, pypi_reachable, sandbox_supported

ok, why = sandbox_supported()
kernel = pytest.mark.skipif(not ok, reason=f"kernel sandbox unavailable: {why}")


def _runner(who: str, request: pytest.FixtureRequest):
    return request.getfixturevalue("as_root" if who == "root" else "as_user")


def _probe(runner, *names: str) -> dict:
    p = subprocess.run(runner.prefix + [runner.python, os.path.join(HERE, "_compat12_probe.py"),
                                        *names],
                       capture_output=True, text=True, env=runner.env, cwd=runner.cwd,
                       timeout=400)
    assert p.returncode == 0, f"{p.stdout[-3000:]}\n{p.stderr[-5000:]}"
    got = _parse(p.stdout)
    for k, v in got.items():
        assert not (isinstance(v, dict) and "error" in v), f"{k}: {v['error']}"
    return got


@pytest.mark.skipif(not (shutil.which("java") and shutil.which("javac")), reason="no JDK")
@pytest.mark.timeout(400)
@pytest.mark.parametrize("who", ["root", "user"])
def test_java_starts_at_isolation_none_under_the_per_program_cap(
        who: str, request: pytest.FixtureRequest) -> None:
    # before: "There is insufficient memory for the Java Runtime Environment to continue"
    # (initial heap 1/64 of the host's 24 GiB over the 384 MiB RLIMIT_DATA), exit 1, and an
    # hs_err_pid file in the working directory
    got = _probe(_runner(who, request), "none_java")["none_java"]
    assert got["exit"] == 0, got
    lines = got["out"].splitlines()
    assert lines[0] == "rc=0" and "openjdk version" in got["err"], got
    assert lines[1].startswith("hello ") and 32 <= int(lines[1].split()[1]) <= 384, got
    assert lines[2] == str(384 * 1024), got          # the cap is still in place
    assert got["note"] and got["hs_err"] == [], got
    # a caller's own settings win (-Xmx, with the variable unset)
    assert got["own"][:2] == [0, "hello 64\n"] and "Picked up" not in got["own"][2], got


@kernel
@pytest.mark.skipif(not pypi_reachable(), reason="PyPI unreachable")
@pytest.mark.timeout(400)
@pytest.mark.parametrize("who", ["user"])   # (root's view: test_compat12_meminfo)
def test_psutil_from_pypi_and_top_see_the_sandboxs_memory(
        who: str, request: pytest.FixtureRequest) -> None:
    got = _probe(_runner(who, request), "psutil")["psutil"]
    assert got["exit"] == 0, got
    lines = got["out"].splitlines()
    total, avail, used = (int(x) for x in lines[-2].split())
    # before: 24 GiB (the host's)
    assert total == got["limit"] and 0 < avail <= total and 0 <= used < total, got
    assert "4096.0 total" in lines[-1], got   # top's "MiB Mem :" line


_BARE = r"""
import warnings
from agentic_bash import Sandbox
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    sb = Sandbox()
said = [str(x.message) for x in w if "interpreter could not be imported" in str(x.message)]
r = sb.run("sleep 5", timeout=1)
print(repr((said, r.exit_code, r.timed_out, r.limit_exceeded)))
sb.close()
"""


@kernel
@pytest.mark.timeout(300)
@pytest.mark.parametrize("who", ["user"])   # (as check11 saw it; root's path is the same)
def test_an_install_missing_regex_says_so_and_reports_its_timeouts(
        who: str, request: pytest.FixtureRequest) -> None:
    # check11: /usr/bin/python3 with the package but not its `regex` dependency reported a
    # timeout as limit_exceeded=None. The runner could not import the interpreter and fell
    # back, silently, to `/bin/bash -c` per run (no shell state between runs either)
    if subprocess.run(["/usr/bin/python3", "-c", "import regex"],
                      capture_output=True).returncode == 0:
        pytest.skip("/usr/bin/python3 has regex")
    import tempfile

    import agentic_bash
    runner = _runner(who, request)
    top = tempfile.mkdtemp(prefix="c12-bare-", dir=runner.env["TMPDIR"])
    try:
        shutil.copytree(os.path.dirname(os.path.abspath(agentic_bash.__file__)),
                        os.path.join(top, "agentic_bash"),
                        ignore=shutil.ignore_patterns("__pycache__"))
        for root, dirs, files in os.walk(top):
            os.chmod(root, 0o755)
            for x in files:
                os.chmod(os.path.join(root, x), 0o644)
        env = dict(runner.env, PYTHONPATH=top)
        p = subprocess.run(runner.prefix + ["/usr/bin/python3", "-W", "ignore", "-c", _BARE],
                           capture_output=True, text=True, env=env, cwd="/", timeout=240)
    finally:
        shutil.rmtree(top, ignore_errors=True)
    assert p.returncode == 0, p.stderr[-3000:]
    said, code, timed_out, exceeded = eval(p.stdout.strip().splitlines()[-1])  # noqa: S307
    assert said and "regex" in said[0], p.stdout
    assert (code, timed_out, exceeded) == (124, True, "timeout"), p.stdout


_STDIN_RUNS = r"""
import random
from agentic_bash import Sandbox
from agentic_bash.errors import SandboxCrashed
random.seed(7)
got = []
with Sandbox() as sb:
    for i in range(30):
        if i % 3 == 0:
            import time; time.sleep(random.choice([0.05, 0.3]))
        try:
            r = sb.run("cat", stdin=f"line {i}\n", timeout=60)
            got.append([r.stdout, r.restarted])
        except SandboxCrashed as e:
            got.append(["crashed", str(e)])
print(repr(got))
"""


@kernel
@pytest.mark.timeout(300)
@pytest.mark.parametrize("who", ["user"])   # (root's sandbox has a memory cgroup: no notify)
def test_runs_with_stdin_survive_a_signal_during_memfd_create(
        who: str, request: pytest.FixtureRequest) -> None:
    # the runner makes each run's stdin a memfd; as an unprivileged user memfd_create goes to
    # pid 1's supervisor, and the runner's own SIGALRM (5 ms into a run) landing meanwhile
    # ended it with EINTR, which os.memfd_create does not retry: the runner died, 10 of 72
    # runs ("the sandbox process died during run()")
    runner = _runner(who, request)
    p = subprocess.run(runner.prefix + [runner.python, "-c", _STDIN_RUNS], capture_output=True,
                       text=True, env=runner.env, cwd="/", timeout=280)
    assert p.returncode == 0, p.stderr[-3000:]
    got = eval(p.stdout.strip().splitlines()[-1])  # noqa: S307
    assert got == [[f"line {i}\n", False] for i in range(30)], got


def test_the_runners_stdin_memfd_is_made_again_after_eintr(monkeypatch) -> None:
    # the deterministic half of the test above: an EINTR from memfd_create is retried
    from agentic_bash.isolation import runner
    real = os.memfd_create
    calls = []

    def flaky(name: str, flags: int = 0) -> int:
        calls.append(name)
        if len(calls) < 3:
            raise InterruptedError(4, "Interrupted system call")
        return real(name, flags)

    monkeypatch.setattr(os, "memfd_create", flaky)
    f = runner._stdin_file(b"abc")
    try:
        assert f.read() == b"abc" and calls == ["stdin"] * 3
    finally:
        f.close()
