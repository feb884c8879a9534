"""LangChain adapter: the agent tools as ``BaseTool`` objects on one Sandbox (extra ``langchain``)."""

from __future__ import annotations

import threading
from typing import Any

from .handlers import handle
from .render import Renderer
from .specs import _selected

__all__ = ["langchain_tools"]


def langchain_tools(sb: Any, *, renderer: Renderer | None = None, names: Any = None) -> list[Any]:
    """``BaseTool`` instances (JSON-schema ``args_schema``, the same schemas as
    ``tools.schemas()``) that run on ``sb``; calls are serialised, answers are rendered text."""
    try:
        from langchain_core.tools import BaseTool
    except ImportError as exc:
        raise ImportError("langchain_tools needs the 'langchain' extra: pip install 'agentic-bash[langchain]'") from exc

    lock = threading.Lock()

    class SandboxTool(BaseTool):  # type: ignore[misc, valid-type]
        """One agentic-bash tool bound to a Sandbox."""

        def _run(self, *args: Any, run_manager: Any = None, **kwargs: Any) -> str:
            if args:   # a bare string input: only meaningful for bash
                kwargs = {"command": args[0], **kwargs} if self.name == "bash" else kwargs
            with lock:
                return handle(sb, self.name, kwargs, renderer=renderer)

    return [SandboxTool(name=s.name, description=s.description, args_schema=s.schema())
            for s in _selected(names)]
