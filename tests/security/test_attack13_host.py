"""Attacks on a default Sandbox() that leave its memory full with nothing a kill frees, or with the runner the biggest process, judged on the host, as root and as the unprivileged user (tests/security/_attack13.py)."""

from __future__ import annotations

import os
from typing import Any

import pytest

from _support import sandbox_supported
from test_attack9_host import _nothing_left, _Parts, _run_parts, _show

ok, why = sandbox_supported()
pytestmark = [pytest.mark.skipif(not ok, reason=f"kernel sandbox unavailable: {why}"),
              pytest.mark.timeout(600)]

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_attack13.py")
PARTS = ("unowned", "small", "pagetables")
_cache: dict[str, dict[str, Any]] = {}


@pytest.fixture(params=["root", "user"])
def got(request: pytest.FixtureRequest, token: str) -> dict[str, Any]:
    """Every part's JSON for one identity; the parts run side by side, once per test run."""
    who = request.param
    if who not in _cache:
        runner = request.getfixturevalue("as_root" if who == "root" else "as_user")
        _cache[who] = {"who": who, **_run_parts(runner, SCRIPT, (PARTS,), f"{token}{who}", 420)}
    return _Parts(_cache[who])


def _no_crash(runs: list[dict[str, Any]], k: dict[str, Any]) -> None:
    assert runs and all("exc" not in r for r in runs), _show(k)


def test_memory_no_process_owns_never_crashes_the_sandbox(got: dict) -> None:
    # Before, as root (memory cgroup, 128 MiB): /tmp (the session layer, 1 GiB by default) or
    # /dev/shm filled to the limit left the OOM killer nothing to free and the runner as its
    # pick: every later command ended in SandboxCrashed (3 of 3), and the restart re-filled
    # the layer. Now the tmpfs mounts and SysV IPC are sized within the limit less the
    # runner's room (resources.unowned_caps): writes meet ENOSPC ("disk")
    k = got["unowned"]
    assert k["host_ipc_before"] == k["host_ipc_during"] == k["host_ipc_after"], _show(k)
    if str(k["backend"]).startswith("enforced by cgroup"):
        # shmmax, shmall (pages), msgmni, sem: the sandbox's own namespace's
        assert k["ipc_inside"][2:] == ["32", "250", "8192", "32", "128"], _show(k)
        assert int(k["ipc_inside"][0]) <= k["limit"] // 16, _show(k)
    assert "exc" not in k["fill"] and not k["fill"].get("hung"), _show(k)
    _no_crash(k["after"], k)
    assert all(r["out"].split() == ["0", "2000"] or r["limit"] == "memory" for r in k["after"]), _show(k)
    assert k["alive"].get("value") == "alive\n", _show(k)
    _nothing_left(k["left"])


def test_many_small_programs_never_crash_the_sandbox(got: dict) -> None:
    # Before, as root: 40 programs of ~6 MiB each started in a loop under 128 MiB (each
    # allocating at once): the runner raised its oom_score_adj to the workload's 1000 around
    # each spawn (so the child inherits it) and the execing child is no OOM candidate, so
    # an OOM in that window took the biggest process at 1000, the runner: SandboxCrashed in
    # the loop itself (1 in 1-3 runs). Now pid 1 gives each new process 1000 as it starts
    # (watchdog.PID1_RAISES) and the runner stays at 0; a later spawn while the group is
    # full waits for room and else fails with ENOMEM (watchdog.SpawnRoom: status 126,
    # limit_exceeded "memory")
    k = got["small"]
    assert "exc" not in k["start"] and not k["start"].get("hung"), _show(k)
    _no_crash(k["after"], k)
    for r in k["after"]:
        # (126: a spawn refused for room; 137: the user's watchdog, over the limit, killed
        # it: both say "memory")
        assert r["out"].split() == ["0"] or (r["out"].split() in (["126"], ["137"])
                                             and r["limit"] == "memory"), _show(k)
    assert k["alive"].get("value", "").endswith("alive\n"), _show(k)
    _nothing_left(k["left"])


def test_a_program_killed_for_its_page_tables_does_not_take_the_next_command(got: dict) -> None:
    # Session 12's CI (root, attack11's kernelmem part): right after a program was killed
    # for its page tables, the next `sleep 0.3` ended in SandboxCrashed. The group holds a
    # victim's page tables for 50-100 ms after the kill (RCU); an allocation of pid 1 or the
    # runner then made the OOM killer take the runner (2 of 4 runs of 3 kills each here).
    # Now a run that saw a kill waits for that memory before its result, and a spawn waits
    # for room (watchdog.SpawnRoom); 6 kills, each followed at once by two commands
    k = got["pagetables"]
    flat = []
    for r in k["rounds"]:
        flat += r if isinstance(r, list) else [r]
    _no_crash(flat, k)
    kills = [r for r in k["rounds"] if isinstance(r, dict)]
    assert kills and all("survived" not in r["out"] and r["limit"] == "memory"
                         for r in kills), _show(k)
    assert k["alive"].get("value") == "alive\n", _show(k)
    _nothing_left(k["left"])
