"""SandboxPool: sandboxes started ahead of time, handed out by a queue pop, never handed out twice."""

# Design (DESIGN.md decision 9): a sandboxed session cannot be wiped in place (overlay upper
# dirs cannot be swapped under a live mount, and the sandbox may no longer mount), so a
# released sandbox is never reused: release() kills the handle at once (every later call on
# it raises SandboxClosed), ends its processes on a background closer thread, and the filler
# thread starts a fresh one from the pool's options to take its place. "Clean" is therefore
# by construction: a new session layer, new shell state, new processes. A sandbox that died
# while waiting in the pool (OOM, a kill from outside; DESIGN.md decision 10) is discarded
# by acquire() and never handed out.
#
# Thread safety: every method may be called from any thread at any time. One Condition
# guards the counts; sandboxes are created and closed outside it.

from __future__ import annotations

import atexit
import collections
import contextlib
import itertools
import queue
import threading
import time
import warnings
import weakref
from typing import Any, AsyncIterator, Iterator

from . import telemetry
from .errors import PoolExhausted, SandboxClosed, SandboxError
from .session import Sandbox

__all__ = ["PoolExhausted", "SandboxPool"]

_BACKOFF_MAX = 5.0
_REFILL_QUIET = 0.002
"""Seconds with no acquire() before the fillers start topping the pool up. A filler's
host-side set-up of a sandbox is Python that holds the GIL: an acquire() of a burst waited
behind it for up to the interpreter's switch interval (5 ms), p99 1-6 ms over 80 acquires
in bursts of 8."""
_REFILL_HOLD_MAX = 0.02
"""...but never more than this after the first acquire() of a burst (a steady stream)."""
_CLOSERS = 4
_FILLERS = 2
_ids = itertools.count(1)


class SandboxPool:
    """A pool of ready sandboxes, all built from one set of options.

    ``SandboxPool(min_size=2, max_size=8, idle_ttl=300.0, **sandbox_options)``: the options
    are ``Sandbox(...)``'s (``isolation``, ``env``, ``mounts``, ``limits``, ``network``, ...);
    sandboxes with different options come from different pools. A background filler keeps
    ``min_size`` sandboxes ready and replaces each released one; ready sandboxes beyond
    ``min_size`` that sat unused for ``idle_ttl`` seconds are closed (``None``: never).
    At most ``max_size`` sandboxes exist at once (ready, leased, starting and closing).

    ``acquire(timeout=)`` returns a ready sandbox at once, else starts one if fewer than
    ``max_size`` exist, else waits up to ``timeout`` seconds for one and raises
    ``PoolExhausted``. ``release(sb)`` (or leaving ``with pool.sandbox() as sb:``) ends that
    sandbox for good: the handle is dead from then on and nothing of its session reaches
    the next user, who gets a different, fresh sandbox. ``close()`` ends every sandbox of
    the pool, leased ones included, and waits until their processes are gone.
    """

    def __init__(self, min_size: int = 1, max_size: int = 8, idle_ttl: float | None = 300.0,
                 *, acquire_timeout: float | None = 30.0, name: str | None = None,
                 **sandbox_options: Any) -> None:
        for label, v in (("min_size", min_size), ("max_size", max_size)):
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                raise ValueError(f"{label} must be an int >= 0, not {v!r}")
        if max_size < 1 or min_size > max_size:
            raise ValueError(f"need 0 <= min_size <= max_size and max_size >= 1 "
                             f"(got min_size={min_size}, max_size={max_size})")
        if idle_ttl is not None and not idle_ttl > 0:
            raise ValueError(f"idle_ttl must be > 0 seconds or None, not {idle_ttl!r}")
        if acquire_timeout is not None and acquire_timeout < 0:
            raise ValueError(f"acquire_timeout must be >= 0 or None, not {acquire_timeout!r}")
        self.min_size, self.max_size, self.idle_ttl = min_size, max_size, idle_ttl
        self.acquire_timeout = acquire_timeout
        self.name = name or f"pool-{next(_ids)}"
        self.options: dict[str, Any] = dict(sandbox_options)
        self._cond = threading.Condition(threading.RLock())
        self._ready: collections.deque[tuple[Sandbox, float]] = collections.deque()
        self._leased: dict[int, Sandbox] = {}
        self._creating = 0
        self._closing = 0
        self._refill = 0
        self._burst: tuple[float, float] | None = None   # first and last acquire of a burst
        self._closed = False
        self._last_error: BaseException | None = None
        self._counts = {"created": 0, "discarded": 0, "released": 0, "expired": 0,
                        "waited": 0, "exhausted": 0}
        self._closer_q: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._otel = telemetry.active()
        # The first sandbox is built here, on the caller's thread: bad options, strict=True
        # on a kernel that cannot, or a broken install fail the constructor, not a thread.
        if min_size:
            self._creating += 1
            try:
                sb = self._create()
            finally:
                self._creating -= 1
            self._ready.append((sb, time.monotonic()))
        else:
            self._validate_options()
        # two fillers: a sandbox start is partly waiting (the zygote's fork, mounts), so two
        # overlap a little (40 sandboxes: 3.4 s -> 2.9 s at load average 13 on 2 cores)
        self._fillers = [threading.Thread(target=self._fill_loop, name=f"{self.name}-filler{i}",
                                          daemon=True) for i in range(_FILLERS)]
        self._closer = threading.Thread(target=self._close_loop, name=f"{self.name}-closer",
                                        daemon=True)
        for t in self._fillers:
            t.start()
        self._closer.start()
        _live.add(self)
        telemetry.track_pool(self)

    # ------------------------------------------------------------------ handing out
    def acquire(self, timeout: float | None = ...) -> Sandbox:  # type: ignore[assignment]
        """A clean sandbox for the caller alone, until ``release()``. ``timeout`` (seconds;
        default ``acquire_timeout``; ``None`` waits as long as it takes; ``0`` never waits)
        bounds the wait when ``max_size`` sandboxes are all in use: then PoolExhausted."""
        if timeout is ...:
            timeout = self.acquire_timeout
        otel = self._otel
        if otel is None:
            return self._acquire(timeout)[0]
        t0 = time.monotonic()
        with otel.tracer.start_as_current_span("sandbox.pool.acquire",
                                               attributes={"sandbox.pool": self.name}) as span:
            sb, how = self._acquire(timeout)
            waited = time.monotonic() - t0
            span.set_attribute("sandbox.pool.wait_time", waited)
            span.set_attribute("sandbox.pool.source", how)
            otel.pool_wait.record(waited, {"pool": self.name})
            return sb

    def _acquire(self, timeout: float | None) -> tuple[Sandbox, str]:
        cond = self._cond
        deadline = None
        waited = False
        with cond:
            while True:
                if self._closed:
                    raise SandboxClosed(f"the sandbox pool {self.name} is closed")
                ready = self._ready
                while ready:
                    sb, _ = ready.pop()   # the most recently started: older ones may expire
                    if _healthy(sb):
                        self._lease_locked(sb)
                        now = time.monotonic()
                        self._burst = (self._burst[0] if self._burst else now, now)
                        if len(ready) + self._creating < self.min_size:
                            cond.notify_all()   # the filler tops up
                        return sb, "ready"
                    self._counts["discarded"] += 1
                    self._discard_locked(sb)
                if self._total() < self.max_size:
                    self._creating += 1
                    break
                if timeout is not None and timeout <= 0:
                    self._counts["exhausted"] += 1
                    raise PoolExhausted(f"all {self.max_size} sandboxes of {self.name} are in "
                                        "use")
                now = time.monotonic()
                if deadline is None and timeout is not None:
                    deadline = now + timeout
                if not waited:
                    waited = True
                    self._counts["waited"] += 1
                left = None if deadline is None else deadline - now
                if left is not None and left <= 0:
                    self._counts["exhausted"] += 1
                    raise PoolExhausted(f"all {self.max_size} sandboxes of {self.name} stayed "
                                        f"in use for {timeout:g}s")
                cond.wait(left)
        # a free slot: start one on this thread (outside the lock)
        try:
            sb = self._create()
        except BaseException:
            with cond:
                self._creating -= 1
                cond.notify_all()
            raise
        with cond:
            self._creating -= 1
            if self._closed:
                self._discard_locked(sb)
                cond.notify_all()
                raise SandboxClosed(f"the sandbox pool {self.name} is closed")
            self._lease_locked(sb)
            return sb, "created"

    def _lease_locked(self, sb: Sandbox) -> None:
        self._leased[id(sb)] = sb
        # (check11) sb.close() -- or `with pool.acquire() as sb:` -- releases it: else its
        # slot stayed leased for good and a full pool raised PoolExhausted ever after
        sb._lease_pool = weakref.ref(self)  # type: ignore[attr-defined]

    def try_acquire(self) -> Sandbox | None:
        """A ready sandbox if one is waiting, else None; never starts one, never blocks."""
        with self._cond:
            if self._closed:
                raise SandboxClosed(f"the sandbox pool {self.name} is closed")
            while self._ready:
                sb, _ = self._ready.pop()
                if _healthy(sb):
                    self._lease_locked(sb)
                    if len(self._ready) + self._creating < self.min_size:
                        self._cond.notify_all()
                    return sb
                self._counts["discarded"] += 1
                self._discard_locked(sb)
        return None

    def release(self, sb: Sandbox) -> None:
        """Hand ``sb`` back: it is dead from now on (SandboxClosed on any call), its processes
        end in the background, and a fresh sandbox takes its place. Releasing twice is a
        no-op; a sandbox from elsewhere is a ValueError."""
        otel = self._otel
        span = (otel.tracer.start_as_current_span("sandbox.pool.release",
                                                  attributes={"sandbox.pool": self.name})
                if otel is not None else contextlib.nullcontext())
        with span, self._cond:
            if self._leased.pop(id(sb), None) is None:
                if isinstance(sb, Sandbox) and getattr(sb, "_pool_released", False):
                    return
                raise ValueError("release() takes a sandbox acquired from this pool")
            self._counts["released"] += 1
            sb._pool_released = True  # type: ignore[attr-defined]
            sb._lease_pool = None  # type: ignore[attr-defined]
            self._discard_locked(sb)
            if not self._closed:
                self._refill = min(self._refill + 1, self.max_size)
            self._cond.notify_all()

    @contextlib.contextmanager
    def sandbox(self, timeout: float | None = ...) -> Iterator[Sandbox]:  # type: ignore[assignment]
        """``with pool.sandbox() as sb:`` acquire, then release on the way out."""
        sb = self.acquire(timeout)
        try:
            yield sb
        finally:
            self.release(sb)

    @contextlib.asynccontextmanager
    async def asandbox(self, timeout: float | None = ...) -> AsyncIterator[Sandbox]:  # type: ignore[assignment]
        """``async with pool.asandbox() as sb:`` the same, without blocking the event loop:
        a ready sandbox is taken on the loop's thread; starting or waiting for one happens
        on a worker thread. Release is non-blocking (the teardown runs on the closer)."""
        sb = self.try_acquire()
        if sb is None:
            import asyncio

            sb = await asyncio.to_thread(self.acquire, timeout)
        try:
            yield sb
        finally:
            self.release(sb)

    # ------------------------------------------------------------------ state
    def stats(self) -> dict[str, Any]:
        """Counts now (ready, leased, creating, closing, owed: replacements for released
        sandboxes not started yet) and since the start (created, released, discarded,
        expired, waited, exhausted)."""
        with self._cond:
            return {"ready": len(self._ready), "leased": len(self._leased),
                    "creating": self._creating, "closing": self._closing,
                    "owed": self._refill,
                    "closed": self._closed, **self._counts,
                    "last_error": repr(self._last_error) if self._last_error else None}

    @property
    def size(self) -> int:
        """Sandboxes that exist now (ready + leased + starting + closing) <= max_size."""
        with self._cond:
            return self._total()

    @property
    def closed(self) -> bool:
        return self._closed

    def _total(self) -> int:
        return len(self._ready) + len(self._leased) + self._creating + self._closing

    # ------------------------------------------------------------------ making and ending
    def _validate_options(self) -> None:
        bad = set(self.options) & {"_snapshot"}
        if bad:
            raise TypeError(f"unexpected Sandbox options: {', '.join(sorted(bad))}")

    def _create(self) -> Sandbox:
        sb = Sandbox(**self.options)
        with self._cond:
            self._counts["created"] += 1
        return sb

    def _discard_locked(self, sb: Sandbox) -> None:
        """Kill the handle now; its executor is closed on the closer thread."""
        ex = sb._detach_for_pool()
        self._closing += 1
        self._closer_q.put(ex)

    def _close_loop(self) -> None:
        # Closing is mostly waiting for the kernel to tear a namespace down: a few run at
        # once (close() of a pool of hundreds would otherwise take minutes).
        import concurrent.futures

        with concurrent.futures.ThreadPoolExecutor(_CLOSERS, f"{self.name}-close") as workers:
            while True:
                ex = self._closer_q.get()
                if ex is None:
                    return
                try:
                    workers.submit(self._close_one, ex)
                except RuntimeError:
                    # (check11) the interpreter is exiting (an unclosed pool at atexit):
                    # no new worker threads, so close it here
                    self._close_one(ex)

    def _close_one(self, ex: Any) -> None:
        try:
            ex.close()
        except Exception:  # noqa: BLE001 - a broken sandbox is still gone after close
            pass
        with self._cond:
            self._closing -= 1
            self._cond.notify_all()

    def _fill_loop(self) -> None:
        cond = self._cond
        backoff = 0.0
        while True:
            with cond:
                while True:
                    if self._closed:
                        return
                    self._expire_locked()
                    want = (len(self._ready) + self._creating < self.min_size
                            or self._refill > 0)
                    if want and self._total() < self.max_size:
                        hold = self._refill_hold()
                        if hold > 0:
                            cond.wait(hold)
                            continue
                        if self._refill > 0:
                            self._refill -= 1
                        self._creating += 1
                        # a sandbox is ready for whoever asks now: nobody waits for this one
                        spare = len(self._ready) > 0
                        break
                    cond.wait(self._next_expiry())
            try:
                # (sessions14) nobody waits for a filler's sandbox while another is ready: the
                # zygote may finish its deferred warm-up first (less private memory per idle
                # sandbox). The first one of an empty pool is not held back (an acquire() at
                # once would wait up to zygote.BACKGROUND_STEPS for it, or behind it).
                from .isolation.zygote import background_spawns
                if spare:
                    with background_spawns():
                        sb = self._create()
                else:
                    sb = self._create()
            except BaseException as e:  # noqa: BLE001 - keep filling; acquire() reports
                with cond:
                    self._creating -= 1
                    self._last_error = e
                    cond.notify_all()
                    if self._closed:
                        return   # closed meanwhile (at exit the zygote goes first): no warning
                backoff = min(_BACKOFF_MAX, backoff * 2 or 0.05)
                warnings.warn(f"SandboxPool {self.name}: starting a sandbox failed: {e!r}",
                              RuntimeWarning, stacklevel=1)
                with cond:
                    cond.wait(backoff)
                continue
            backoff = 0.0
            with cond:
                self._creating -= 1
                if self._closed:
                    self._discard_locked(sb)
                else:
                    self._ready.append((sb, time.monotonic()))
                cond.notify_all()

    def _refill_hold(self) -> float:
        """Seconds the fillers wait before starting a sandbox: until acquire() has been
        quiet for _REFILL_QUIET, at most _REFILL_HOLD_MAX after a burst's first one."""
        if self._burst is None:
            return 0.0
        now = time.monotonic()
        first, last = self._burst
        hold = min(last + _REFILL_QUIET, first + _REFILL_HOLD_MAX) - now
        if hold <= 0:
            self._burst = None
            return 0.0
        return hold

    def _expire_locked(self) -> None:
        if self.idle_ttl is None:
            return
        now = time.monotonic()
        ready = self._ready
        # oldest at the left; only the ones beyond min_size go
        while len(ready) > self.min_size and now - ready[0][1] >= self.idle_ttl:
            sb, _ = ready.popleft()
            self._counts["expired"] += 1
            self._discard_locked(sb)

    def _next_expiry(self) -> float | None:
        if self.idle_ttl is None or len(self._ready) <= self.min_size:
            return None
        return max(0.0, self._ready[0][1] + self.idle_ttl - time.monotonic()) + 0.001

    # ------------------------------------------------------------------ closing
    def close(self, timeout: float = 30.0) -> None:
        """End every sandbox of the pool (ready and leased: their handles die), wait up to
        ``timeout`` seconds for their processes to be gone; later acquire() raises
        SandboxClosed. Idempotent."""
        with self._cond:
            first = not self._closed
            self._closed = True
            if first:
                while self._ready:
                    self._discard_locked(self._ready.popleft()[0])
                for sb in list(self._leased.values()):
                    sb._pool_released = True  # type: ignore[attr-defined]
                    self._discard_locked(sb)
                self._leased.clear()
                self._refill = 0
            self._cond.notify_all()
            deadline = time.monotonic() + timeout
            while self._creating or self._closing:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._cond.wait(left)
        if first:
            self._closer_q.put(None)
        _live.discard(self)
        for t in self._fillers:
            if threading.current_thread() is not t:
                t.join(timeout=5)
        if threading.current_thread() is not self._closer:
            self._closer.join(timeout=5)

    def __enter__(self) -> SandboxPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> SandboxPool:
        return self

    async def __aexit__(self, *exc: object) -> None:
        import asyncio

        await asyncio.to_thread(self.close)

    def __repr__(self) -> str:
        s = self.stats()
        return (f"<SandboxPool {self.name} ready={s['ready']} leased={s['leased']} "
                f"max={self.max_size}{' closed' if s['closed'] else ''}>")


def _healthy(sb: Sandbox) -> bool:
    """Still fit to hand out: not closed, and its sandbox process (if any) alive and quiet."""
    if sb.closed:
        return False
    check = getattr(sb._ex, "healthy", None)
    if check is None:
        return True
    try:
        return bool(check())
    except SandboxError:
        return False


_live: weakref.WeakSet[SandboxPool] = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    for pool in list(_live):
        try:
            pool.close(timeout=5)
        except Exception:  # noqa: BLE001
            pass
