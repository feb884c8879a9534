"""The runner's side of the limits: the page shared with the watchdog, per-run figures, /proc sampling."""

from __future__ import annotations

import os
import sys

import pytest

from agentic_bash.isolation import watchdog as wd
from agentic_bash.result import Result

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux /proc")


def _replace(r: Result, **kw):  # noqa: ANN003
    import dataclasses
    return dataclasses.replace(r, **kw)


def test_page_is_shared_across_fork() -> None:
    page = wd.WatchdogPage()
    page.set("peak", 123)
    pid = os.fork()
    if pid == 0:
        page.set("kills", page.get("kills") + 7)
        page.set("last", -5)
        os._exit(0 if page.get("peak") == 123 else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert page.get("kills") == 7 and page.get("last") == -5


def test_usage_reads_the_watchdogs_figures_for_this_run_only() -> None:
    page = wd.WatchdogPage()
    page.set("kills", 2)   # an earlier run's
    page.set("at_max", 4)
    u = wd.S3Usage({"_watchdog_page": page})
    u.begin()
    gen = page.get("gen")
    # the watchdog samples during the run
    page.set("seen", gen)
    page.set("peak", 90 << 20)
    page.set("last", 10 << 20)
    u.ran()
    r = u.end(Result(), _replace)
    assert r.peak_memory == 90 << 20 and r.limit_exceeded is None and r.cpu_time >= 0
    u.begin()
    page.set("kills", 3)   # killed during this run
    r = u.end(Result(exit_code=137), _replace)
    assert r.limit_exceeded == "memory" and [v.kind for v in r.violations] == ["limit"]
    # no sample since begin: the last total stands in for the peak
    assert r.peak_memory == 10 << 20
    u.begin()
    page.set("at_max", 5)
    r = u.end(Result(), _replace)
    assert r.limit_exceeded == "processes"


def test_an_interpreter_limit_is_kept_and_memory_wins() -> None:
    page = wd.WatchdogPage()
    u = wd.S3Usage({"_watchdog_page": page})
    u.begin()
    r = u.end(Result(limit_exceeded="output"), _replace)
    assert r.limit_exceeded == "output"
    u.begin()
    page.set("kills", 1)
    r = u.end(Result(limit_exceeded="timeout", timed_out=True), _replace)
    assert r.limit_exceeded == "memory"


def test_file_size_is_reported_for_a_file_at_the_cap(tmp_path) -> None:
    f = tmp_path / "f"
    f.write_bytes(b"x" * 1000)
    u = wd.S3Usage({"resources": {"rlimits": {"FSIZE": 1000}}})
    u.begin()
    assert u.end(Result(files_created=(str(f),)), _replace).limit_exceeded == "file_size"
    u = wd.S3Usage({"resources": {"rlimits": {"FSIZE": 1001}}})
    u.begin()
    assert u.end(Result(files_modified=(str(f),)), _replace).limit_exceeded is None


def test_sample_counts_this_process_and_refines_only_past_the_limit(monkeypatch) -> None:  # noqa: ANN001
    me = os.getpid()
    real = os.listdir
    # the sandbox's /proc shows its own few processes; this host's shows hundreds
    monkeypatch.setattr(os, "listdir", lambda p=".": [str(me), "self"] if p == "/proc" else real(p))
    total, n, procs = wd.sample()
    assert n >= 1 and any(pid == me for _, pid in procs)
    mine = dict((pid, v) for v, pid in procs)[me]
    assert mine > 0 and total >= mine
    # past a (tiny) limit the figures are proportional ones, never more than statm's
    total2, _, procs2 = wd.sample(limit=1, known={me: 4096})
    assert dict((pid, v) for v, pid in procs2)[me] == 4096
    assert wd.pss_anon("self") is not None
