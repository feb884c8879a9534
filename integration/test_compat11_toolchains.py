"""Real toolchains in a default Sandbox() as root and as an unprivileged user: java/javac with no flags (the JVM sizes its heap from the sandbox's memory, answered by the seccomp supervisor's sysinfo), gcc/make, git, venv+pip, npm, sqlite3, curl to a loopback server."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess

import pytest

from _support import HERE, _parse, sandbox_supported

ok, why = sandbox_supported()
pytestmark = [pytest.mark.skipif(not ok, reason=f"kernel sandbox unavailable: {why}"),
              pytest.mark.timeout(600)]

SCENARIOS = ("sysinfo", "java", "cc", "git", "venv_pip", "npm", "sqlite", "curl")


def _reachable(host: str) -> bool:
    try:
        with socket.create_connection((host, 443), timeout=5):
            return True
    except OSError:
        return False


_RESULTS: dict[str, dict] = {}


def _results(who: str, request: pytest.FixtureRequest) -> dict:
    """Every scenario, once per identity, in one sandbox (a JVM and a pip install each take
    seconds: one run of the check script serves all the tests of that identity)."""
    if who not in _RESULTS:
        runner = request.getfixturevalue("as_root" if who == "root" else "as_user")
        p = subprocess.run(runner.prefix + [runner.python, os.path.join(HERE, "_compat11_check.py"),
                                            *SCENARIOS],
                           capture_output=True, text=True, env=runner.env, cwd=runner.cwd,
                           timeout=540)
        assert p.returncode == 0, f"{p.stdout[-3000:]}\n{p.stderr[-5000:]}"
        _RESULTS[who] = _parse(p.stdout)
    got = _RESULTS[who]
    assert "error" not in got, got["error"]
    return got


def _run(who: str, request: pytest.FixtureRequest, name: str, host_tools: tuple[str, ...]):
    missing = [t for t in host_tools if shutil.which(t) is None]
    if missing:
        pytest.skip(f"not installed: {', '.join(missing)}")
    got = _results(who, request)
    if got[name] is None:
        pytest.skip(f"{name}: its tools are not reachable inside the sandbox")
    return got, got[name]


WHO = pytest.mark.parametrize("who", ["root", "user"])


@WHO
def test_sysinfo_is_the_sandboxs_memory(who: str, request: pytest.FixtureRequest) -> None:
    got, (out, err, code) = _run(who, request, "sysinfo", ("python3",))
    assert code == 0, (out, err)
    limit = got["limits"]["max_memory_bytes"]
    host = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    want = min(limit, host)
    m = re.search(r"^total (\d+) free (\d+) swap (\d+)$", out, re.M)
    assert m, out
    total, free, swap = map(int, m.groups())
    assert total == want and 0 < free <= total and swap == 0, out
    assert f"phys {want}\n" in out, out          # glibc's sysconf(_SC_PHYS_PAGES) too
    # a bad pointer is EFAULT, as from the kernel, and read-only memory stays untouched
    assert "null -1 EFAULT\n" in out, out
    assert "readonly -1 EFAULT True\n" in out, out


@WHO
def test_java_with_no_flags(who: str, request: pytest.FixtureRequest) -> None:
    got, (out, err, _code) = _run(who, request, "java", ("java", "javac"))
    assert "version=0\n" in out and "javac=0\n" in out and "run=0\n" in out, (out, err)
    assert "hello 200000 " in out, (out, err)
    # the JVM's ergonomics saw the sandbox's memory: initial heap 1/64, max heap 1/4 of it
    # (both rounded by the JVM to its alignment; 1/64 of this 24 GiB host was 376 MiB)
    mem = min(got["limits"]["max_memory_bytes"],
              os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    init = int(re.search(r"InitialHeapSize\s+= (\d+)", out).group(1))
    mx = int(re.search(r"MaxHeapSize\s+= (\d+)", out).group(1))
    assert abs(init - mem / 64) <= 4 << 20 and abs(mx - mem / 4) <= 4 << 20, out
    assert "hs_err" not in out, out


@WHO
def test_cc_and_make(who: str, request: pytest.FixtureRequest) -> None:
    _got, (out, err, code) = _run(who, request, "cc", ("cc", "make"))
    assert code == 0 and "make=0\nc ok 1\n" in out, (out, err)


@WHO
def test_git(who: str, request: pytest.FixtureRequest) -> None:
    _got, (out, err, code) = _run(who, request, "git", ("git",))
    assert code == 0 and out == "first\ngit=0\n", (out, err)


@WHO
def test_venv_and_pip_install_from_pypi(who: str, request: pytest.FixtureRequest) -> None:
    if not _reachable("pypi.org"):
        pytest.skip("PyPI unreachable")
    _got, (out, err, code) = _run(who, request, "venv_pip", ("python3",))
    assert code == 0 and "pip=0\nimported termcolor\n" in out, (out, err)


@WHO
def test_npm_install(who: str, request: pytest.FixtureRequest) -> None:
    if not _reachable("registry.npmjs.org"):
        pytest.skip("npm registry unreachable")
    _got, (out, err, code) = _run(who, request, "npm", ("node", "npm"))
    assert code == 0 and "npm=0\nnode true\n" in out, (out, err)


@WHO
def test_sqlite3(who: str, request: pytest.FixtureRequest) -> None:
    _got, (out, err, code) = _run(who, request, "sqlite", ("sqlite3",))
    assert code == 0 and out == "6\n", (out, err)


@WHO
def test_curl_to_a_loopback_server(who: str, request: pytest.FixtureRequest) -> None:
    _got, (out, err, code) = _run(who, request, "curl", ("curl", "python3"))
    assert "served\ncurl=0\n" in out, (out, err, code)
