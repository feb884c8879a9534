"""create12: the pool's fillers wait for a burst of acquire() calls to end before topping it up (the GIL), and still top it up."""

from __future__ import annotations

import time

from agentic_bash import SandboxPool
from agentic_bash import pool as pool_mod


def _wait(pred, deadline: float = 30.0) -> bool:
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.01)
    return pred()


def test_refill_hold_quiet_then_capped():
    p = SandboxPool(min_size=0, max_size=2, idle_ttl=None, isolation="virtual")
    try:
        assert p._refill_hold() == 0.0
        now = time.monotonic()
        p._burst = (now, now)   # an acquire just now: wait for the quiet gap
        assert 0 < p._refill_hold() <= pool_mod._REFILL_QUIET
        # a steady stream: the last acquire is recent, but the burst began long ago
        p._burst = (now - 2 * pool_mod._REFILL_HOLD_MAX, time.monotonic())
        assert p._refill_hold() == 0.0 and p._burst is None
        p._burst = (now - 1.0, now - 1.0)   # quiet for a second
        assert p._refill_hold() == 0.0
    finally:
        p.close()


def test_a_burst_is_replaced_after_it_ends():
    p = SandboxPool(min_size=4, max_size=8, idle_ttl=None, isolation="virtual")
    try:
        assert _wait(lambda: p.stats()["ready"] == 4), p.stats()
        got = [p.acquire(timeout=30) for _ in range(4)]
        assert p.stats()["leased"] == 4
        # topped up again once acquire() went quiet
        assert _wait(lambda: p.stats()["ready"] == 4), p.stats()
        for sb in got:
            p.release(sb)
        assert _wait(lambda: p.stats()["leased"] == 0), p.stats()
    finally:
        p.close()


def test_a_steady_stream_does_not_starve_the_fillers(monkeypatch):
    # (a quiet gap longer than the stream's: only the cap can let the fillers start)
    monkeypatch.setattr(pool_mod, "_REFILL_QUIET", 30.0)
    p = SandboxPool(min_size=2, max_size=100, idle_ttl=None, isolation="virtual")
    got = []
    try:
        assert _wait(lambda: p.stats()["ready"] == 2), p.stats()
        sources = []
        end = time.monotonic() + 10.0
        # acquires closer together than _REFILL_QUIET: without the cap the fillers would wait
        # for the stream to end, and every acquire after the first two would start its own
        while time.monotonic() < end and len(got) < 90:
            sb, how = p._acquire(30)
            got.append(sb)
            sources.append(how)
            if len(got) > 2 and how == "ready":
                break
            time.sleep(0.001)
        assert sources[:2] == ["ready", "ready"], sources
        assert "ready" in sources[2:], sources
    finally:
        for sb in got:
            p.release(sb)
        p.close()



def test_a_filler_holds_back_only_while_a_sandbox_is_ready(monkeypatch):
    # (lead14) the zygote finishes its deferred warm-up before a filler's fork only when
    # nobody waits for it: a filler of a pool emptied by acquire() forks at once (another
    # acquire() would otherwise wait up to zygote.BACKGROUND_STEPS behind that warm-up)
    from agentic_bash.isolation import zygote

    seen: list[bool] = []
    orig = SandboxPool._create

    def create(self):
        seen.append(bool(getattr(zygote._background, "on", False)))
        return orig(self)

    monkeypatch.setattr(SandboxPool, "_create", create)
    p = SandboxPool(min_size=2, max_size=4, idle_ttl=None, isolation="virtual")
    got = []
    try:
        assert _wait(lambda: p.stats()["ready"] == 2), p.stats()
        # the constructor's own (not a filler's), then a filler's with one ready: held back
        assert seen == [False, True], seen
        got = [p.acquire(timeout=30) for _ in range(2)]
        assert _wait(lambda: p.stats()["ready"] == 2), p.stats()
        assert seen[2] is False, seen   # the pool was empty: at once
        assert not getattr(zygote._background, "on", False)   # (this thread's never set)
    finally:
        for sb in got:
            p.release(sb)
        p.close()
