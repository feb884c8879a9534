"""Attacks on a default Sandbox() through kernel memory and machine-wide counts (page tables, tmpfs inodes, VMAs, AIO, ptys, epoll watches, a blinded watchdog), judged on the host, as root and as the unprivileged user (tests/security/_attack11.py)."""

from __future__ import annotations

import os
from typing import Any

import pytest

from _support import sandbox_supported
from test_attack9_host import _nothing_left, _Parts, _run_parts, _show

ok, why = sandbox_supported()
pytestmark = [pytest.mark.skipif(not ok, reason=f"kernel sandbox unavailable: {why}"),
              pytest.mark.timeout(600)]

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_attack11.py")
PARTS = ("kernelmem", "starve", "supervisor")
LAST = ("counts",)
"""Alone after the others: it takes a share of machine-wide counts (ptys, AIO) and of this
host user's epoll watches, which the other parts' sandboxes use too."""
MiB = 1 << 20
_cache: dict[str, dict[str, Any]] = {}


@pytest.fixture(params=["root", "user"])
def got(request: pytest.FixtureRequest, token: str) -> dict[str, Any]:
    """Every part's JSON for one identity; the parts run side by side, once per test run."""
    who = request.param
    if who not in _cache:
        runner = request.getfixturevalue("as_root" if who == "root" else "as_user")
        _cache[who] = {"who": who,
                       **_run_parts(runner, SCRIPT, (PARTS, LAST), f"{token}{who}", 420)}
    return _Parts(_cache[who])


def _nums(word: str, out: str) -> list[int]:
    """The numbers after ``word`` at the start of a line (a line cut by a kill is skipped)."""
    import re
    return [int(m) for m in re.findall(rf"^{word} ([0-9]+)", out, re.M)]


def _watched(k: dict) -> bool:
    return str(k["backend"]).startswith("enforced by watchdog")


# -- kernel memory in no process's pages --------------------------------------------------------
def test_page_tables_count_against_the_memory_limit(got: dict) -> None:
    # before, as the user (watchdog): reads at a 2 MiB stride of a 256 GiB read-only mapping
    # made 512 MiB of page tables (RSS ~10 MiB: the zero page counts nowhere); they lived
    # 7 s, to the end, under a 256 MiB limit. As root the memory cgroup charges them.
    k = got["kernelmem"]
    r = k["pagetables"]
    assert "survived" not in r["out"] and r["limit"] == "memory", _show(r)
    assert r["host_seconds_over"] < 4, _show(r)   # (the program holds for 6 s when not killed)
    assert k["after"].get("value") == "alive\n", _show(k)
    _nothing_left(k["left"])


@pytest.mark.parametrize("where", ["_dev_shm", "_dev"])
def test_tmpfs_inodes_are_bounded_and_counted(got: dict, where: str) -> None:
    # before, as the user: 600,000 empty files in /dev/shm (541 MiB of slab) and 200,000 in
    # the sandbox's own /dev (250 MiB) lived under a 256 MiB limit: an empty file costs no
    # byte of a tmpfs's size, and each tmpfs allowed ~3M inodes (half the host's RAM)
    k = got["kernelmem"]
    r = k[f"inodes{where}"]
    made = _nums("made", r["out"])
    stopped = "survived" not in r["out"] or "errno None" not in r["out"]
    assert stopped, _show(r)
    # at most about twice the limit's worth of inodes (~1 KiB each) came to exist
    assert max(made, default=0) <= 2 * k["limit"] // 1024 + 20000, _show(r)
    if _watched(k):
        assert isinstance(r["held"], int) and r["held"] <= 2 * k["limit"] // 1024, _show(r)
    if where == "_dev":   # (the runner's file API removes them: no kill reaches it)
        assert r["removed"].get("value", "?") is None, _show(r)
    # (a memory cgroup full of inodes may OOM-kill the runner too: the sandbox restarts,
    # with a fresh /dev/shm)


def test_vmas_copied_by_fork_count_against_the_memory_limit(got: dict, request) -> None:
    # 40 forks of a process with 60,000 VMAs hold ~585 MiB of slab (vm_area_struct, maple
    # nodes) and no page of their own. A memory cgroup charges it (root); the watchdog has
    # no cheap per-process figure for it (a VMA count is only in /proc/<pid>/maps)
    k = got["kernelmem"]
    if _watched(k):
        request.applymarker(pytest.mark.xfail(
            strict=True, reason="known gap (THREAT_MODEL): the watchdog cannot see VMAs"))
    r = k["vmas"]
    assert "survived" not in r["out"] and r["limit"] == "memory", _show(r)


def test_a_watchdog_sample_is_not_slowed_by_descriptors(got: dict) -> None:
    # before, as the user: 9 processes of 20,000 descriptors each plus 40 sockets made one
    # sample read ~180,000 descriptors; the next came 4x that later, and a program grew to
    # 1.5 GiB and held it 4 s under a 256 MiB limit (2 GiB in 14 s with 30 such processes).
    # Now 7 of 16,000 (more would pass the watchdog's descriptor budget, a kill of its own)
    s = got["starve"]
    r = s["starve"]
    held = _nums("held", r["out"])
    assert "survived" not in r["out"] and r["limit"] == "memory", _show(r)
    if _watched(s):   # (a sampler: a few samples' worth of growth past the limit; with
        # the whole scan each sample, 7 x 16,000 descriptors let it reach 1,024 MiB)
        assert max(held, default=0) <= 3 * s["limit"] // MiB, _show(r)
    assert s["after"].get("value") == "alive\n", _show(s)
    _nothing_left(s["left"])


# -- counts of the whole machine, or of the host user ---------------------------------------------
def test_aio_contexts_of_the_machine_stay_the_hosts(got: dict) -> None:
    # before (both identities): one io_setup(65536) inside took fs.aio-max-nr, the whole
    # machine's count; every host process's io_setup failed with EAGAIN while it lived
    c = got["counts"]
    assert c["host_aio_before"] in ("ok", "skip"), _show(c)
    assert c["aio"]["host_during"] in ("ok", "skip"), _show(c)
    words = c["aio"]["inside"].split()
    assert words[:1] == ["aio"] and int(words[1]) < 65536, _show(c)
    assert c["after"].get("value") == "alive\n", _show(c)
    _nothing_left(c["left"])


def test_ptys_of_the_machine_are_not_one_sandboxs(got: dict) -> None:
    # before (both identities): one sandbox opened 3,071 ptys, all the machine had for
    # devpts instances other than the host's; another sandbox's openpty and tty=True run
    # then failed ("out of pty devices", ENOSPC)
    from agentic_bash.isolation.rootfs import PTYS
    c = got["counts"]
    words = c["ptys"]["inside"].split()
    assert words[:1] == ["ptys"] and int(words[1]) <= PTYS, _show(c)
    other = c["ptys"]["other_sandbox"].get("value") or {}
    assert other.get("openpty", "").startswith("/dev/pts/"), _show(c)
    assert other["tty_run"][0] == 0 and "/dev/pts/" in other["tty_run"][1], _show(c)


@pytest.mark.xfail(strict=True, reason="known gap (THREAT_MODEL): nothing bounds a sandbox's "
                   "epoll watches, a count of the host user's")
def test_epoll_watches_of_the_host_user_are_not_one_sandboxs(got: dict) -> None:
    # Linux counts epoll watches per host user (fs.epoll.max_user_watches), not per user
    # namespace: measured once by hand as the user, a sandbox registered all 5,491,506 and
    # the caller's own epoll_ctl (its network proxy's listener) failed with ENOSPC. The
    # program here stops at an eighth; the claim is that a sandbox cannot take that much
    c = got["counts"]
    words = c["epoll"]["out"].split()
    assert words[:1] == ["watches"], _show(c)
    assert int(words[1]) < c["epoll_max"] // 8, _show(c)


# -- the seccomp supervisor's sysinfo answer (compat11's: pid 1 writes into the caller) --------
def test_sysinfo_answers_land_only_in_the_callers_writable_memory(got: dict) -> None:
    # the supervisor checks the buffer writable, then writes through /proc/<pid>/mem (which
    # forces writes past page protections): a thread swapping the buffer for a read-only
    # shared mapping of a host /usr file in between must not change that file
    s = got["supervisor"]
    r = s["race"]
    lines = dict(ln.split(" ", 1) for ln in r["out"].splitlines() if " " in ln)
    import json
    race = json.loads(lines["RACE"])
    assert race.get("ok", 0) > 0, _show(s)            # answered, sometimes EFAULT (14)
    assert set(race) - {"ok", "null", "file_ro", "kernel"} <= {"errno 14"}, _show(s)
    for k in ("null", "file_ro", "kernel"):
        assert race[k] == [-1, 14], _show(s)
    assert lines["SHA"] == s["sha_before"] and s["host_sha_same"], _show(s)
    _nothing_left(s["left"])


def test_a_sysinfo_flood_does_not_slow_the_memory_limit(got: dict) -> None:
    # 32 threads calling sysinfo (each a notification pid 1 answers, ~6,500 a second here)
    # while a program grows by 64 MiB every 50 ms: the limit still stops it early
    s = got["supervisor"]
    r = s["flood"]
    held = _nums("held", r["out"])
    assert "survived" not in r["out"] and r["limit"] == "memory", _show(r)
    if _watched(s):
        assert max(held, default=0) <= 4 * s["limit"] // MiB, _show(r)
    assert s["after"].get("value") == "alive\n", _show(s)


def test_open_files_of_the_machine_are_not_one_sandboxs(got: dict) -> None:
    # Linux has one table of open files for the machine (fs.file-max, 2,466,177 here): past
    # it, every process without CAP_SYS_ADMIN in the host's namespace gets ENFILE. Measured
    # by hand as the user: 30 processes of 19,438 opens of /dev/null took 586k of it in a
    # few seconds (127 would take all). The program stops at a quarter; the claim is that
    # the sandbox never held an eighth (the watchdog kills the largest holders past a
    # sixteenth; as root, where a memory cgroup replaces the watchdog, pid 1's descriptor
    # guard does: attack12, before it the root sandbox held the whole quarter)
    f = got["counts"]["files"]
    if "held_peak" not in f:
        pytest.skip(f"a quarter of this host's file-max needs more than 64 processes: {f}")
    # the host's count moves with every other process on the machine (another sandbox of
    # this suite doing the same on the other worker took it past the bound): what the
    # sandbox itself says it held, each child's count written every 2,000 opens, bounds it
    # from the other side
    said = sum(int(x) for x in f["reported"][1:]) + 2000 * int(f["reported"][0] or 0)
    assert min(f["held_peak"], said) < f["want"] // 2, _show(f)
