"""jq's worker works at the namespace level, where the runner cannot exec its own python (review12): a fork of the runner, stopped at the deadline and capped in memory."""

from __future__ import annotations

import time
import warnings

import pytest

import agentic_bash as ab


def _namespace_ok() -> bool:
    try:
        from agentic_bash.isolation.plan import plan
        from agentic_bash.isolation.probe import probe
        return plan("namespace", probe()).level == "namespace"
    except Exception:  # noqa: BLE001
        return False


pytestmark = pytest.mark.skipif(not _namespace_ok(), reason="namespace level unavailable")


def test_in_process_jq_runs_its_worker_in_a_namespace_sandbox() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sb = ab.Sandbox(isolation="namespace", prefer_inprocess=True)
    with sb:
        # before: "jq: error: cannot start: Permission denied" (exit 2) for every one
        r = sb.run("jq -n '[range(5)] | length'; jq -n '[range(3)] | add'", timeout=60)
        assert (r.exit_code, r.stdout, r.stderr) == (0, "5\n3\n", ""), r
        r = sb.run("echo '[1,2,3]' | jq -c '. as $a | [.[] | $a[0]]'", timeout=60)
        assert (r.exit_code, r.stdout) == (0, "[1,1,1]\n"), r
        t0 = time.monotonic()
        r = sb.run("jq -n 'last(range(1e10))'", timeout=1)
        assert (r.exit_code, r.limit_exceeded) == (124, "timeout") and time.monotonic() - t0 < 30, r
        r = sb.run("jq -n '\"x\" * 1e9' | wc -c", timeout=60)
        assert r.stdout == "0\n" and "memory exhausted" in r.stderr, r
        assert sb.run("echo ok", timeout=60).stdout == "ok\n"
