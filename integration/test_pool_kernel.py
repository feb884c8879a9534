"""SandboxPool over the kernel sandbox, as root and as an unprivileged user."""

from __future__ import annotations

import os
import subprocess

import pytest

from _support import HERE, _parse, sandbox_supported

ok, why = sandbox_supported()
pytestmark = [pytest.mark.skipif(not ok, reason=f"kernel sandbox unavailable: {why}"),
              pytest.mark.slow, pytest.mark.timeout(600)]

_cache: dict[str, dict] = {}


@pytest.fixture(params=["root", "user"])
def obs(request: pytest.FixtureRequest) -> dict:
    who = request.param
    if who not in _cache:
        runner = request.getfixturevalue("as_root" if who == "root" else "as_user")
        p = subprocess.run(runner.prefix + [runner.python, os.path.join(HERE, "_pool_check.py")],
                           capture_output=True, text=True, env=runner.env, cwd=runner.cwd,
                           timeout=400)
        assert p.returncode == 0, f"{p.stdout[-3000:]}\n{p.stderr[-5000:]}"
        got = _parse(p.stdout)
        got["base_left"] = os.path.exists(got["zygote_base"])   # the process has exited
        _cache[who] = got
    return _cache[who]


def test_pool_uses_the_kernel_sandbox(obs: dict) -> None:
    assert obs["isolation_level"] == "namespace"
    assert obs["a_setup"][0] == 0, obs["a_setup"]
    assert "sleep 300" in obs["a_ps"] and "sleep 301" in obs["a_ps"]


def test_released_handle_is_dead_and_its_processes_gone(obs: dict) -> None:
    assert obs["a_after_release"] == "SandboxClosed"
    assert obs["a_gone"]
    assert obs["b_pid_differs"]


def test_next_user_sees_no_trace(obs: dict) -> None:
    code, out, err = obs["b_view"]
    assert code == 0
    for trace in ("f.txt", "secret", "s3cr3t", "ll", "sleep 30", "\nt\n", "\nh\n"):
        assert trace not in out, (trace, out)
    assert obs["b_ls"] == obs["fresh_ls"], (obs["b_ls"], obs["fresh_ls"])
    assert "/workspace:\n" in obs["b_ls"] and "f.txt" not in obs["b_ls"]
    assert out.startswith("[]\n"), out          # $TOKEN unset
    assert "\n/workspace\n" in out               # cwd back to the start
    assert "f: not found" in err


def test_fifty_threads_all_succeed(obs: dict) -> None:
    th = obs["threads"]
    assert th["ok"] == 150 and not th["errors"], th


def test_asyncio_sessions_on_the_loop(obs: dict) -> None:
    got = obs["asyncio"]["results"]
    assert got == [[0, f"{i + 1}\n{i}\n", ["result", "stderr", "stdout"], "after\n"]
                   for i in range(6)], got
    assert obs["asyncio"]["seconds"] < 120


def test_idle_ttl_trims_back_to_min_size(obs: dict) -> None:
    assert obs["ready_peak"] > 2
    st = obs["stats_after_ttl"]
    assert st["ready"] == 2 and st["expired"] >= 1, st


def test_dead_ready_sandboxes_are_discarded(obs: dict) -> None:
    k = obs["after_kill"]
    assert k["victims"] >= 1 and not k["pid_is_victim"]
    assert k["run"] == "alive\n" and k["discarded"] >= 1


def test_close_leaves_no_process_mount_or_temp_dir(obs: dict) -> None:
    assert obs["zygote_children"] == []
    assert obs["new_mounts"] == [] and obs["new_tmp"] == []
    st = obs["stats_closed"]
    assert st["ready"] == st["leased"] == st["creating"] == st["closing"] == 0
    assert not obs["base_left"]
