"""A cgroup OOM kill of jq's worker process (an in-process command's helper, not started by the launcher) is this run's memory limit, and no later run's (review12)."""

from __future__ import annotations

import os
import warnings

import pytest

import agentic_bash as ab
from agentic_bash.errors import IsolationUnavailable

MiB = 1 << 20


def test_the_jq_worker_killed_at_the_memory_limit_is_reported_by_its_own_run() -> None:
    if os.geteuid() != 0:
        pytest.skip("memory cgroups need root here")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sb = ab.Sandbox(isolation="landlock", prefer_inprocess=True,
                            limits=ab.Limits(max_memory_bytes=64 * MiB))
    except IsolationUnavailable as e:
        pytest.skip(f"landlock level unavailable: {e}")
    with sb:
        if not sb.isolation.mechanisms.get("memory_limit", "").startswith("enforced by cgroup"):
            pytest.skip(f"memory limit: {sb.isolation.mechanisms.get('memory_limit')}")
        # a fresh sandbox: no workload process yet, the runner skips its counter reads.
        # 30M numbers in libjq (~500 MiB) pass 64 MiB long before the worker's own cap
        # (its size + 128 MiB): the kernel OOM-kills the worker, the largest process
        r = sb.run("jq -n '[range(30000000)] | length'", timeout=60)
        later = [sb.run(s, timeout=60) for s in ("echo ok", "python3 -c pass", "python3 -c pass")]
    assert r.exit_code != 0 and "memory exhausted" in r.stderr, r
    assert r.limit_exceeded == "memory", r
    assert any(v.kind == "limit" for v in r.violations), r
    for x in later:   # before: None for the jq run, then "memory" for the first python3
        assert x.exit_code == 0 and x.limit_exceeded is None, x
