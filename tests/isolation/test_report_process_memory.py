"""The isolation report names the per-program memory cap (Limits.max_process_memory) exactly when the programs the sandbox starts carry it."""

from __future__ import annotations

import sys
import warnings

import pytest

from agentic_bash import Limits, Sandbox
from agentic_bash.isolation.plan import plan
from agentic_bash.isolation.probe import probe

pytestmark = [pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux only"),
              pytest.mark.timeout(300)]

MiB = 1 << 20


@pytest.mark.parametrize("cap", [200 * MiB, None])
def test_report_names_the_cap_programs_carry(cap: int | None) -> None:
    if plan("namespace", probe()).level != "namespace":
        pytest.skip("no kernel sandbox here")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        sb = Sandbox(limits=Limits(max_process_memory=cap))
    try:
        note = " ".join(n for n in sb.isolation.notes if n.startswith("limits:"))
        r = sb.run("python3 -c 'import resource; print(resource.getrlimit(resource.RLIMIT_DATA)[0])'",
                   timeout=60)
        if cap is None:
            assert "per program" not in note, note
            assert int(r.stdout) in (-1, resource_infinity()) or int(r.stdout) > 1 << 40, r.stdout
        else:
            assert "200 MiB of private memory per program" in note, note
            assert int(r.stdout) == cap, (r.stdout, r.stderr)
    finally:
        sb.close()


def resource_infinity() -> int:
    import resource
    return resource.RLIM_INFINITY
