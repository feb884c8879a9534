"""pydantic-ai adapter: the agent tools as one ``FunctionToolset`` (extra ``pydantic-ai``)."""

from __future__ import annotations

import threading
from typing import Any

from .handlers import handle
from .render import Renderer
from .specs import _selected

__all__ = ["pydantic_ai_toolset"]


def pydantic_ai_toolset(sb: Any, *, renderer: Renderer | None = None, names: Any = None) -> Any:
    """A ``FunctionToolset`` whose tools (``Tool.from_schema`` with the shared JSON schemas,
    sequential) run on ``sb``: ``Agent(model, toolsets=[pydantic_ai_toolset(sb)])``."""
    try:
        from pydantic_ai import Tool
        from pydantic_ai.toolsets import FunctionToolset
    except ImportError as exc:
        raise ImportError("pydantic_ai_toolset needs the 'pydantic-ai' extra: "
                          "pip install 'agentic-bash[pydantic-ai]'") from exc
    lock = threading.Lock()

    def make(name: str) -> Any:
        def run(**kwargs: Any) -> str:
            with lock:
                return handle(sb, name, kwargs, renderer=renderer)
        run.__name__ = name
        return run

    return FunctionToolset([Tool.from_schema(make(s.name), name=s.name, description=s.description,
                                             json_schema=s.schema(), sequential=True)
                            for s in _selected(names)])
