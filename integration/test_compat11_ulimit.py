"""`ulimit -d`/`-v` in a default Sandbox() report the per-program caps every native child gets (Limits.max_process_memory, max_address_space), as bash's would under those limits (it said unlimited)."""

from __future__ import annotations

import pytest

from _support import sandbox_supported
from agentic_bash import Limits, Sandbox

ok, why = sandbox_supported()
pytestmark = [pytest.mark.skipif(not ok, reason=f"kernel sandbox unavailable: {why}"),
              pytest.mark.timeout(120)]

SCRIPT = ("ulimit -d; ulimit -Hd; ulimit -v; sh -c 'ulimit -d'; "
          "ulimit -d unlimited; echo raise=$?; ulimit -d 200000; sh -c 'ulimit -d'")


def test_ulimit_reports_the_per_program_caps() -> None:
    with Sandbox(limits=Limits(max_process_memory=384 << 20, max_address_space=1 << 30)) as sb:
        r = sb.run(SCRIPT, timeout=60)
    # the shell's figure is the one /bin/sh (a native child) sees; raising past the hard
    # limit is refused as bash refuses it; lowering reaches children
    assert r.stdout == "393216\n393216\n1048576\n393216\nraise=1\n200000\n", r
    assert "ulimit: data seg size: cannot modify limit: Operation not permitted" in r.stderr, r


def test_ulimit_without_caps_is_unlimited() -> None:
    with Sandbox(limits=Limits(max_process_memory=None)) as sb:
        r = sb.run("ulimit -d; sh -c 'ulimit -d'; ulimit -d unlimited; echo raise=$?", timeout=60)
    assert r.stdout == "unlimited\nunlimited\nraise=0\n", r
