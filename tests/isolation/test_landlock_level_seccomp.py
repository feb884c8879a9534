"""The landlock level applies the seccomp filter its plan promises (the runner compiles it after Landlock, so libseccomp's output must not need a file under /tmp)."""

from __future__ import annotations

import sys
import warnings

import pytest

from agentic_bash import Sandbox
from agentic_bash.isolation.plan import plan
from agentic_bash.isolation.probe import probe

pytestmark = [pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux only"),
              pytest.mark.timeout(300)]


def test_landlock_level_applies_seccomp() -> None:
    p = plan("landlock", probe())
    if p.level != "landlock" or p.mechanisms.get("seccomp") != "enforced":
        pytest.skip(f"no landlock level with seccomp here: {p.mechanisms}")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sb = Sandbox("landlock")
    try:
        assert sb.isolation.mechanisms["seccomp"] == "enforced", str(sb.isolation)
        assert not [w for w in caught if "seccomp" in str(w.message)]
        # the runner and the programs it starts carry the filter: ptrace is refused
        r = sb.run("grep '^Seccomp:' /proc/self/status; /bin/grep '^Seccomp:' /proc/self/status; "
                   "python3 -c 'import ctypes; print(ctypes.CDLL(None).ptrace(16, 1, 0, 0))'",
                   timeout=60)
        assert r.stdout == "Seccomp:\t2\nSeccomp:\t2\n-1\n", (r.stdout, r.stderr)
    finally:
        sb.close()
