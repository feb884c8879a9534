"""The zygote clones a sandbox's pid 1 straight into its namespaces (no S1), the fallback through S1 gives the same isolation, and pid 1 holds no privilege once the runner is ready; as root and as an unprivileged user."""

from __future__ import annotations

import os
import subprocess

import pytest

from _support import HERE, _parse, sandbox_supported

ok, why = sandbox_supported()
pytestmark = [pytest.mark.skipif(not ok, reason=f"kernel sandbox unavailable: {why}"),
              pytest.mark.timeout(300)]


def _check(runner, clone: bool) -> dict:
    env = dict(runner.env)
    if not clone:
        env["AGENTIC_BASH_ZYGOTE_CLONE"] = "0"
    p = subprocess.run(runner.prefix + [runner.python, os.path.join(HERE, "_clone_check.py")],
                       capture_output=True, text=True, env=env, cwd=runner.cwd, timeout=240)
    assert p.returncode == 0, f"{p.stdout[-3000:]}\n{p.stderr[-5000:]}"
    got = _parse(p.stdout)
    assert "error" not in got, got["error"]
    return got


@pytest.mark.parametrize("who", ["root", "user"])
def test_pid1_is_cloned_by_the_zygote_and_the_fallback_isolates_the_same(
        who: str, request: pytest.FixtureRequest) -> None:
    runner = request.getfixturevalue("as_root" if who == "root" else "as_user")
    direct, via_s1 = _check(runner, True), _check(runner, False)
    # no S1: the channel's process is pid 1 itself, a child of the zygote; two processes
    assert direct["top_is_pid1"] and direct["top_parent_is_zygote"], direct
    assert direct["processes"] == 2 and direct["pid1_count"] == 1, direct
    # fallback: S1 (host pid namespace) above pid 1, three processes
    assert not via_s1["top_is_pid1"] and via_s1["top_parent_is_zygote"], via_s1
    assert via_s1["processes"] == 3 and via_s1["pid1_count"] == 1, via_s1
    for got in (direct, via_s1):
        assert got["run"] == ["ok\n0\n", 0], got
        # pid 1 gave up every capability and set no_new_privs before the runner was ready
        assert got["pid1_capeff"] == "0000000000000000" and got["pid1_nnp"] == "1", got
    assert direct["mechanisms"] == via_s1["mechanisms"], (direct["mechanisms"],
                                                          via_s1["mechanisms"])
    for m in ("user_namespace", "mount_namespace", "pid_namespace", "network_namespace",
              "landlock", "seccomp", "no_new_privs", "caps_dropped"):
        assert direct["mechanisms"][m] == "enforced", direct["mechanisms"]
    # clone_fork itself: pid 1 in its namespace, glibc's tid field matches, and threads,
    # fork and subprocess work in the child
    c = direct["clone_fork"]
    assert c["status"] == 3, c
    assert c["child"]["pid"] == c["child"]["tid"] == c["child"]["tid_field"] == 1, c
    assert c["child"]["thread_tid"] > 1 and c["child"]["fork_status"] == 7, c
    assert c["child"]["subprocess"] == "sub\n", c
