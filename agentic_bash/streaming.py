"""The iterator form of streaming output: ``for ev in sb.stream(script)``."""

from __future__ import annotations

import queue
import threading
from dataclasses import dataclass
from typing import Any, Iterator

from ._values import value_methods
from .result import Result

__all__ = ["StreamEvent", "stream_events"]


@value_methods
@dataclass(frozen=True, slots=True, repr=False, eq=False)
class StreamEvent:
    """``kind`` is ``stdout`` or ``stderr`` (a chunk in ``data``, as produced) or ``result``
    (the last event; ``result`` holds the run's Result)."""

    kind: str
    data: bytes = b""
    result: Result | None = None

    @property
    def text(self) -> str:
        return self.data.decode("utf-8", "replace")


_DONE = object()


def stream_events(sb: Any, script: str, kw: dict[str, Any]) -> Iterator[StreamEvent]:
    """Run ``script`` on a worker thread and yield its output as it arrives. Leaving the loop
    early interrupts the run (like Ctrl-C) and waits for it to stop."""
    q: queue.SimpleQueue[Any] = queue.SimpleQueue()
    hook = sb._on_output

    def deliver(fd: int, chunk: bytes) -> None:
        if hook is not None:
            hook(fd, chunk)
        q.put(StreamEvent("stdout" if fd == 1 else "stderr", bytes(chunk)))

    def work() -> None:
        try:
            r = sb._run(script, stdin=kw.get("stdin"), env=kw.get("env"), cwd=kw.get("cwd"),
                        timeout=kw.get("timeout"), on_output=deliver)
            q.put(StreamEvent("result", result=r))
        except BaseException as e:  # noqa: BLE001 - re-raised in the consuming thread
            q.put(e)
        q.put(_DONE)

    sb._check()
    t = threading.Thread(target=work, name="agentic-bash-stream", daemon=True)
    t.start()
    finished = False
    try:
        while True:
            item = q.get()
            if item is _DONE:
                finished = True
                return
            if isinstance(item, BaseException):
                finished = True
                raise item
            yield item
    finally:
        if not finished:
            sb.interrupt()
        t.join()
