"""A command whose HTTP client may go away: interrupted if it runs, never started if it waits."""

# Both services run one shell per session: a command left running for a client that timed
# out (and closed its connection) would hold the session up for every later call. So each
# command request is watched: on http.disconnect a queued command is dropped and a running
# one interrupted (again every half second until its run has ended).

from __future__ import annotations

import threading
from typing import Any, Awaitable, Callable

__all__ = ["Abandoned", "Gate", "until_disconnect"]


class Abandoned(Exception):
    """The client went away before its command started."""


class Gate:
    """One command request: queued -> running -> done, or queued -> abandoned."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.state = "queued"

    def run(self, fn: Callable[[], Any]) -> Any:
        """``fn()`` unless the client has already gone (Abandoned)."""
        with self._lock:
            if self.state == "abandoned":
                raise Abandoned()
            self.state = "running"
        try:
            return fn()
        finally:
            with self._lock:
                self.state = "done"

    def abandon(self, interrupt: Callable[[], None]) -> bool:
        """The client is gone: a queued command will not run, a running one is interrupted.
        True once nothing more is to be done."""
        with self._lock:
            if self.state == "queued":
                self.state = "abandoned"
                return True
            if self.state != "running":
                return True
        try:
            interrupt()
        except Exception:  # noqa: BLE001 - nothing to interrupt any more
            pass
        return False

    def abandon_soon(self, interrupt: Callable[[], None]) -> None:
        """``abandon`` from a place that cannot wait (a generator being closed): retried on
        a thread until the run has ended."""
        if self.abandon(interrupt):
            return

        def retry() -> None:
            import time
            while not self.abandon(interrupt):
                time.sleep(0.5)
        threading.Thread(target=retry, name="agentic-bash-abandon", daemon=True).start()


async def until_disconnect(receive: Callable[[], Awaitable[Any]], gate: Gate,
                           interrupt: Callable[[], None], work: Callable[[], Awaitable[Any]]) -> Any:
    """``await work()`` while watching the request's ``receive`` for http.disconnect (the
    body must have been read): then the gate's command is abandoned."""
    import anyio
    box: dict[str, Any] = {}

    async def watch() -> None:
        while True:
            msg = await receive()
            if msg.get("type") == "http.disconnect":
                break
        while not gate.abandon(interrupt):
            await anyio.sleep(0.5)

    async with anyio.create_task_group() as tg:
        tg.start_soon(watch)
        try:
            box["value"] = await work()
        except BaseException as e:  # noqa: BLE001 - re-raised below, outside the group
            box["error"] = e
        finally:
            tg.cancel_scope.cancel()
    if "error" in box:
        raise box["error"]
    return box["value"]
