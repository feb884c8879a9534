"""A jq program that runs in a forked child (commands/jqcmd.py, _MAY_LOOP) leaves no child behind however its output loop ends."""

from __future__ import annotations

import os
import time

import pytest

import agentic_bash as ab


def _children() -> set[int]:
    me = str(os.getpid())
    out = set()
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/stat", "rb") as f:
                    if f.read().rsplit(b")", 1)[1].split()[1].decode() == me:
                        out.add(int(pid))
            except (OSError, IndexError):
                pass
    return out


@pytest.mark.parametrize("script", ["jq -n 'def f: 1, f; f' | head -2",
                                    "x=$(jq -n 'def f: 1, f; f' | head -1); echo $x",
                                    "jq -n 'def f: 1, f; f' > /dev/null",
                                    "jq -n '[limit(5; repeat(1))] | .[]' | head -1"])
def test_no_forked_jq_child_outlives_its_command(script: str) -> None:
    before = _children()
    with ab.Sandbox(isolation="virtual") as sb:
        r = sb.run(script, timeout=1)
        assert "internal error" not in r.stderr, r
        end = time.monotonic() + 10
        while _children() - before and time.monotonic() < end:
            time.sleep(0.05)
        assert not (_children() - before), script
