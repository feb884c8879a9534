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
    assert "exc" not in k["fill"] and not k["fill"].get("hung"), _show(k)
    _no_crash(k["after"], k)
    assert all(r["out"].split() == ["0", "2000"] or r["limit"] == "memory" for r in k["after"]), _show(k)
    assert k["alive"].get("value") == "alive\n", _show(k)
    _nothing_left(k["left"])


@pytest.mark.xfail(strict=False, reason="open (attack13): a spawn while the group is at its "
                   "limit is refused now (SpawnRoom), but an OOM while the runner's "
                   "oom_score_adj is raised for a spawn, or right after a kill, still takes "
                   "the runner (1 in 3-5 runs as root); fix: oom_score_adj -1000 for pid 1 and "
                   "the runner (THREAT_MODEL)")
def test_many_small_programs_never_crash_the_sandbox(got: dict) -> None:
    # Before, as root: 40 background programs of ~6 MiB each under 128 MiB, then /bin/true:
    # the runner raises its oom_score_adj to the workload's around each spawn and the
    # execing child is no OOM candidate, so the group's OOM took the runner (the biggest at
    # 1000): SandboxCrashed. Now a spawn waits for room and else fails with ENOMEM
    # (watchdog.SpawnRoom): status 126, limit_exceeded "memory"
    k = got["small"]
    assert "exc" not in k["start"] and not k["start"].get("hung"), _show(k)
    _no_crash(k["after"], k)
    for r in k["after"]:
        assert r["out"].split() == ["0"] or (r["out"].split() == ["126"]
                                             and r["limit"] == "memory"), _show(k)
    assert k["alive"].get("value", "").endswith("alive\n"), _show(k)
    _nothing_left(k["left"])


@pytest.mark.xfail(strict=False, reason="open (attack13): after an OOM kill the group holds "
                   "the victim's page tables for 50-100 ms more, and pid 1's or the runner's "
                   "next allocation makes the OOM killer take the runner (2 of 4 runs as root); "
                   "the fix is oom_score_adj -1000 for pid 1 and the runner (THREAT_MODEL)")
def test_a_program_killed_for_its_page_tables_does_not_take_the_next_command(got: dict) -> None:
    # Session 12's CI (root, attack11's kernelmem part): right after a program was killed
    # for its page tables, the next `sleep 0.3` ended in SandboxCrashed: page tables go back
    # to the group after an RCU grace period, and the next spawn's OOM took the runner. Now
    # a spawn waits for them (SpawnRoom) and a run that saw an OOM kill waits before its
    # result (SpawnRoom.settle), but pid 1's own allocations can still meet them. This
    # repeats the sequence; it must never raise
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
