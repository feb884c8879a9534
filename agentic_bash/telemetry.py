"""Optional OpenTelemetry spans and metrics (extra ``otel``, API only); absent, nothing is paid."""

# Spans: ``sandbox.run`` (exit code, duration, peak memory, timed out), ``sandbox.pool.acquire``
# (wait time, created or ready) and ``sandbox.pool.release``. Metrics: ``sandbox.run.duration``
# (histogram, s), ``sandbox.pool.wait_time`` (histogram, s), ``sandbox.pool.size`` (gauge by
# ``state``: ready, leased, creating, closing). The SDK, exporters and providers are the
# application's business: a Sandbox or pool is instrumented when a provider is set at its
# creation; ``AGENTIC_BASH_OTEL=0`` turns the instrumentation off.

from __future__ import annotations

import os
import sys
import threading
import weakref
from typing import Any, Iterator

__all__ = ["Telemetry", "active", "get", "track_pool"]


class Telemetry:
    """The tracer and instruments, made once per process."""

    def __init__(self, trace: Any, metrics: Any) -> None:
        from . import __version__

        self.trace = trace
        self.metrics = metrics
        self.tracer = trace.get_tracer("agentic_bash", __version__)
        meter = metrics.get_meter("agentic_bash", __version__)
        self.run_duration = meter.create_histogram(
            "sandbox.run.duration", unit="s", description="Wall time of Sandbox.run()")
        self.pool_wait = meter.create_histogram(
            "sandbox.pool.wait_time", unit="s",
            description="Time SandboxPool.acquire() waited for a sandbox")
        self._pools: weakref.WeakSet[Any] = weakref.WeakSet()
        self._Observation = metrics.Observation
        meter.create_observable_gauge(
            "sandbox.pool.size", callbacks=[self._observe_pools], unit="{sandbox}",
            description="Sandboxes of live SandboxPools, by state")

    def configured(self) -> bool:
        """A tracer or meter provider has been set (an API without an SDK records nothing,
        so sandboxes made before that skip the instrumentation and its cost)."""
        try:
            tp = self.trace.get_tracer_provider()
            mp = self.metrics.get_meter_provider()
        except Exception:  # noqa: BLE001
            return False
        idle = ("ProxyTracerProvider", "NoOpTracerProvider", "_ProxyMeterProvider",
                "NoOpMeterProvider")
        return type(tp).__name__ not in idle or type(mp).__name__ not in idle

    def _observe_pools(self, _options: Any) -> Iterator[Any]:
        for pool in list(self._pools):
            try:
                st = pool.stats()
            except Exception:  # noqa: BLE001 - a metrics callback must not raise
                continue
            for state in ("ready", "leased", "creating", "closing"):
                yield self._Observation(st[state], {"state": state, "pool": pool.name})

    def run_span(self, level: str) -> Any:
        return self.tracer.start_as_current_span(
            "sandbox.run", attributes={"sandbox.isolation": level})

    def end_run(self, span: Any, level: str, r: Any) -> None:
        span.set_attribute("sandbox.exit_code", r.exit_code)
        span.set_attribute("sandbox.duration", r.duration)
        span.set_attribute("sandbox.peak_memory", r.peak_memory)
        span.set_attribute("sandbox.timed_out", r.timed_out)
        self.run_duration.record(r.duration, {"sandbox.isolation": level})


_lock = threading.Lock()
_state: list[Telemetry | None] = []


def get() -> Telemetry | None:
    """The process's Telemetry, or None when OpenTelemetry is not installed or turned off."""
    if _state:
        return _state[0]
    with _lock:
        if not _state:
            t = None
            if os.environ.get("AGENTIC_BASH_OTEL", "1") not in ("0", "no", "false", "off"):
                try:
                    from opentelemetry import metrics, trace
                    t = Telemetry(trace, metrics)
                except Exception:  # noqa: BLE001 - ImportError, or a broken install
                    t = None
            _state.append(t)
    return _state[0]


def active() -> Telemetry | None:
    """get(), if a provider is configured now; what a new Sandbox or pool instruments with.
    An application that never imported OpenTelemetry cannot have configured it: then not
    even the import is paid (~30 ms)."""
    if "opentelemetry.trace" not in sys.modules and "opentelemetry.metrics" not in sys.modules:
        return None
    t = get()
    return t if t is not None and t.configured() else None


def track_pool(pool: Any) -> None:
    t = get()
    if t is not None:
        t._pools.add(pool)
