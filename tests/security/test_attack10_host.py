"""Attacks on a default Sandbox() (the bound prefix, unbounded lists, memory the watchdog cannot see, and new ones), judged on the host, as root and as the unprivileged user (tests/security/_attack10.py)."""

from __future__ import annotations

import os
from typing import Any

import pytest

from _support import sandbox_supported
from test_attack9_host import _nothing_left, _Parts, _run_parts, _show

ok, why = sandbox_supported()
pytestmark = [pytest.mark.skipif(not ok, reason=f"kernel sandbox unavailable: {why}"),
              pytest.mark.timeout(600)]

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_attack10.py")
PARTS = ("prefix", "lists", "memory", "ucounts", "etc")
LAST = ("inflight",)
"""Run after the others: it fills this host user's count of descriptors in flight, which
stops the other parts' programs from sending any meanwhile (the kernel's per-user count)."""
_cache: dict[str, dict[str, Any]] = {}


@pytest.fixture(params=["root", "user"])
def got(request: pytest.FixtureRequest, token: str) -> dict[str, Any]:
    """Every part's JSON for one identity; the parts run side by side, once per test run."""
    who = request.param
    if who not in _cache:
        runner = request.getfixturevalue("as_root" if who == "root" else "as_user")
        _cache[who] = {"who": who,
                       **_run_parts(runner, SCRIPT, (PARTS, LAST), f"{token}{who}", 400)}
    return _Parts(_cache[who])


# -- a venv made at a project's root ---------------------------------------------------------
def test_a_venv_at_a_project_root_does_not_bind_the_project(got: dict) -> None:
    # before: the whole sys.prefix was bound read-only, so `python -m venv .` at a project's
    # root put its .env, sources and .git into every sandbox
    r = got["prefix"]["venv_at_project_root"]
    assert r["prefix"] == r["proj"] and r["out"].rstrip().endswith("alive"), _show(r)
    assert r["leaked"] == [], _show(r)
    assert r["proj"] not in r["binds"], _show(r)
    assert not [b for b in r["binds"] if r["proj"].startswith(b + "/")], _show(r)


# -- Result.files_created and list_files over 30k files --------------------------------------
def test_changed_files_and_listings_are_capped_and_say_so(got: dict) -> None:
    # before: every path was listed (200k files: +77 MB in the caller for the lists alone;
    # the layer's tmpfs allows ~3M) and nothing said a list was incomplete
    from agentic_bash.result import FILES_LISTED
    n = got["lists"]["namespace"]
    assert n["made"] == "30000", _show(n)
    assert n["created"] == FILES_LISTED and n["files_truncated"] is True, _show(n)
    assert n["in_dict"] is True and n["first"] == ["/workspace/m/f00000",
                                                   "/workspace/m/f00001"], _show(n)
    assert n["list"] == 10_000 and n["list_truncated"] is True, _show(n)
    assert n["list_first"] == ["f00000", "f00001"], _show(n)
    assert n["few"] == [f"f0000{i}" for i in range(5)] and n["few_truncated"] is True, _show(n)
    assert n["every"] == 30000 and n["every_truncated"] is False, _show(n)
    assert n["one_file"] == ["f00007"] and n["small"] is False, _show(n)
    _nothing_left(n["left"])
    v = got["lists"]["virtual"]
    assert v["created"] == FILES_LISTED and v["files_truncated"] is True, _show(v)
    assert v["list"] == 10_000 and v["list_truncated"] is True, _show(v)


# -- kernel memory no process shows --------------------------------------------------------
def test_memfds_in_flight_stay_within_the_memory_limit(got: dict) -> None:
    # before, as the unprivileged user (watchdog, no memory cgroup): 12 memfds of 64 MiB, each
    # sent over a unix socket and closed, held 768 MiB for 4 s under a 256 MiB limit
    m = got["memory"]
    r = m["memfd_inflight"]
    held = [int(ln.split()[1]) for ln in r["out"].splitlines() if ln.startswith("held ")]
    refused = any(x in r["err"] for x in ("MemoryError", "Errno 12", "Errno 28"))
    assert "survived" not in r["out"] and (r["limit"] == "memory" or refused), _show(m)
    assert max(held, default=0) <= 2 * m["limit"] >> 20, _show(m)
    # memfds still work for programs (as a file of the sandbox's /dev/shm when watched)
    assert m["memfd_ok"]["out"] == "memfd works True 11\n", _show(m)
    assert m["stdin"]["out"] == "in-put\n3\n", _show(m)
    assert m["after"].get("value") == "alive\n", _show(m)
    _nothing_left(m["left"])


@pytest.mark.parametrize("how", ["held", "inflight"])
def test_socket_buffers_stay_within_the_memory_limit(got: dict, how: str) -> None:
    # before, as the unprivileged user: 3,000 filled unix socketpairs of one process held
    # 667 MiB under a 256 MiB limit (kernel memory in no process's figures); 120 with 4 MiB
    # send buffers, 960 MiB; sent in flight and closed, the same. The watchdog now counts
    # socket queues (sock_diag).
    m = got["memory"]
    r = m[f"sockets_{how}"]
    queued = [int(ln.split()[1]) for ln in r["out"].splitlines() if ln.startswith("queued ")]
    refused = any(x in r["err"] for x in ("MemoryError", "Errno 12", "Errno 105"))
    assert "survived" not in r["out"] and (r["limit"] == "memory" or refused), _show(r)
    # a sampler: at most a few samples' worth of filling past the limit
    assert max(queued, default=0) <= 4 * m["limit"] >> 20, _show(r)


def test_loopback_tcp_buffers_stay_bounded(got: dict) -> None:
    # before: 150 loopback TCP connections inside the sandbox held 559 MiB of socket buffers
    # under a 256 MiB limit, as root too (cgroup v1 charges socket memory only once a group's
    # tcp limit is set) and as the user (the watchdog did not see it)
    m = got["memory"]
    r = m["tcp_loopback"]
    queued = [int(ln.split()[1]) for ln in r["out"].splitlines() if ln.startswith("queued ")]
    assert queued, _show(r)
    if m["backend"].startswith("enforced by cgroup"):
        # (the group's tcp limit stops the buffers themselves)
        assert max(queued) <= 2 * m["limit"] >> 20, _show(r)
    # (the watchdog, unprivileged, kills once a sample sees the queues: how far they got
    # first is its sampling latency, which a loaded CI machine stretches -- 745 MiB queued
    # before the kill in two CI runs -- so the claim checked is the kill, below)
    if "survived" in r["out"]:   # (cgroup: the buffers stop growing at the group's tcp limit)
        assert got["who"] == "root" and m["backend"].startswith("enforced by cgroup"), _show(m)
    else:
        assert r["limit"] == "memory", _show(r)


# -- per-user kernel counts charged to the host user of every ancestor user namespace --------
def test_per_user_kernel_counts_stay_the_sandboxs_own(got: dict) -> None:
    # before: a sandbox's 120 inotify instances were all of host root's 128 (and, as the
    # user, all of that user's): inotify_init1 on the host failed with EMFILE; 96k signals
    # queued inside made the host's timer_create fail with EAGAIN
    u = got["ucounts"]
    assert u["host_before"] == ["ok", "ok"], _show(u)
    inside = u["inside"].split()
    assert inside[:1] == ["instances"] and "queued" in inside, _show(u)
    assert 0 < int(inside[1]) <= 16 and 0 < int(inside[3]) <= 8192, _show(u)
    assert 0 < int(inside[inside.index("queued") + 1]) <= 4096, _show(u)
    assert u["host_during"] == ["ok", "ok"], _show(u)
    assert u["after"].get("value") == "alive\n", _show(u)
    _nothing_left(u["left"])


# -- credentials in the host's /etc config files ---------------------------------------------
def test_credentials_in_the_hosts_etc_are_redacted(got: dict) -> None:
    # before: the sanitised /etc copied pip.conf, wgetrc, gitconfig, apt/ and profile.d/ as
    # they were: a private index's user:token in /etc/pip.conf was readable in every sandbox
    e = got["etc"]
    assert e["copy"] == {"leaked": [], "kept": True}, _show(e)
    if got["who"] == "root":   # (the end-to-end check needs a private mount namespace)
        s = e["sandbox"]
        assert s["out"].rstrip().endswith("alive") and s["leaked"] == [], _show(s)
        assert s["redacted"] >= 6, _show(s)


# -- descriptors in flight, counted per host user ------------------------------------------
def test_descriptors_in_flight_do_not_stop_new_sandboxes(got: dict) -> None:
    # before: 20,000 descriptors in flight in one sandbox (cheap: the same fd 200 times a
    # message) made every new sandbox of the same host user fail with ETOOMANYREFS, as root
    # and as the user, for as long as a background process held them
    i = got["inflight"]
    words = i["inside"].split()
    # thousands in flight, or refused (109, ETOOMANYREFS) because this host user's count was
    # already at the workload's cap (another process of the same user, e.g. a parallel test)
    assert "inflight" in words, _show(i)
    assert int(words[words.index("inflight") + 1]) >= 5000 or "refused 109" in i["inside"], \
        _show(i)
    assert i["second"] == "second alive\n", _show(i)
    assert i["after"].get("value") == "alive\n", _show(i)
    _nothing_left(i["left"])
