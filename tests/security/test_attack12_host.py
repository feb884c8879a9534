"""Attacks on a default Sandbox() and serve's sessions in what session 12 changed and what earlier passes left open, judged on the host, as root and as the unprivileged user (tests/security/_attack12.py)."""

from __future__ import annotations

import os
from typing import Any

import pytest

from _support import sandbox_supported
from test_attack9_host import _nothing_left, _Parts, _run_parts, _show

ok, why = sandbox_supported()
pytestmark = [pytest.mark.skipif(not ok, reason=f"kernel sandbox unavailable: {why}"),
              pytest.mark.timeout(600)]

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_attack12.py")
PARTS = ("restart", "files", "level", "mapfiles")
_cache: dict[str, dict[str, Any]] = {}


@pytest.fixture(params=["root", "user"])
def got(request: pytest.FixtureRequest, token: str) -> dict[str, Any]:
    """Every part's JSON for one identity; the parts run side by side, once per test run."""
    who = request.param
    if who not in _cache:
        runner = request.getfixturevalue("as_root" if who == "root" else "as_user")
        _cache[who] = {"who": who, **_run_parts(runner, SCRIPT, (PARTS,), f"{token}{who}", 300)}
    return _Parts(_cache[who])


def test_serve_file_calls_during_a_restart_stay_in_the_sandbox(got: dict) -> None:
    # serve --sessions answers a file call from the host while a command holds the session's
    # lock, through /proc/<pid>/root of the sandbox's first process. Before: a restart (after
    # any crash; a client crashes its own sandbox by filling the interpreter's memory) set
    # that pid before pid 1 had pivoted into its own root, so "/tmp" was the host's /tmp: in
    # the first round the server (root or the user) read a host file and wrote one there
    r = got["restart"]
    assert r["host_read"] == 0 and not r["host_written"], _show(r)
    # the attack did run: many restarts; as root the direct path served the sandbox's own
    # file meanwhile (an unprivileged server cannot open a non-dumpable pid 1's root: once
    # the sandbox is up its calls all take the locked path)
    assert r["rounds"] >= 10, _show(r)
    assert r["inside_read"] > 0 or got["who"] == "user", _show(r)
    assert r["after"].get("value") == "inside\n", _show(r)
    _nothing_left(r["left"])


def test_open_files_of_the_machine_stay_bounded_as_root_too(got: dict) -> None:
    # fs.file-max is one table for the machine; past it every host process without
    # CAP_SYS_ADMIN gets ENFILE. The unprivileged sandbox's watchdog bounded its share
    # (attack11); a root sandbox has a memory cgroup instead and no loop: before, its 32
    # processes held 611-617k of 2.47M (the program's own stop, a quarter) for 4-6 s. Now pid 1's
    # descriptor guard kills the largest tables past a sixteenth (at least 131,072)
    f = got["files"]
    if "skip" in f:
        pytest.skip(f["skip"])
    assert f["done"].startswith("kids "), _show(f)       # the program ran to its end
    assert f["held_peak"] < f["want"] // 2, _show(f)     # never an eighth of the table
    assert f["after"].get("value") == "alive\n", _show(f)
    _nothing_left(f["left"])


def test_a_serve_client_cannot_choose_a_level_that_shares_the_host(got: dict) -> None:
    # before (root and user): a client of serve --sessions asked for isolation "landlock"
    # (no namespaces) on a server whose own level is the default, and its curl read a
    # service on the host's loopback, also with the server's network "deny"; /proc/1 was the
    # host's init. Now only a server started with -i landlock (or none) offers that level
    r = got["level"]
    assert r["host_hits"] == 0 and not r["secret_seen"], _show(r)
    for name in ("default", "deny"):
        assert r["sessions"][f"{name}/landlock"] == {"refused": 422}, _show(r)
        got_ns = r["sessions"][f"{name}/namespace"]
        assert "stdout" in got_ns and r["host_init"] not in got_ns["stdout"], _show(r)


@pytest.mark.xfail(strict=True, reason="known gap (THREAT_MODEL): struct files held by mappings "
                   "(open, mmap, close) are in no descriptor table; nothing counts them")
def test_open_files_held_by_mappings_stay_bounded(got: dict) -> None:
    # attack12: 5 processes each open a file of the sandbox's /tmp 60,000 times, map 4 KiB of
    # it and close the descriptor, then hold all at once: 300k of fs.file-max (2.47M) with no
    # descriptor (FDSize, what the watchdog and pid 1's guard sum, stays small), as root and
    # as the user, none killed. (A file of the read-only lower is mapped through overlayfs's
    # backing file, which file-nr does not count.) The claim, as for descriptors: past a
    # sixteenth the largest holders are killed
    f = got["mapfiles"]
    assert f["done"].startswith("kids "), _show(f)
    assert f["held_at_once"] < f["file_max"] // 16, _show(f)
