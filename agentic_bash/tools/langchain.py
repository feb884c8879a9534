"""LangChain adapter: the agent tools as ``BaseTool`` objects on one Sandbox (extra ``langchain``)."""

from __future__ import annotations

import threading
from typing import Any

from .handlers import handle
from .render import Renderer
from .specs import _selected

__all__ = ["langchain_tools"]

# the tools a bare string input can call: their one required argument
_STRING_ARG = {"bash": "command", "read_file": "path", "list_files": "path"}


def langchain_tools(sb: Any, *, renderer: Renderer | None = None, names: Any = None) -> list[Any]:
    """``BaseTool`` instances (JSON-schema ``args_schema``, the same schemas as
    ``tools.schemas()``) that run on ``sb``; calls are serialised, answers are rendered text."""
    try:
        from langchain_core.tools import BaseTool, ToolException
    except ImportError as exc:
        raise ImportError("langchain_tools needs the 'langchain' extra: pip install 'agentic-bash[langchain]'") from exc

    lock = threading.Lock()

    class SandboxTool(BaseTool):  # type: ignore[misc, valid-type]
        """One agentic-bash tool bound to a Sandbox."""

        def _parse_input(self, tool_input: Any, *args: Any, **kwargs: Any) -> Any:
            # a bare string (`bash.invoke("ls")`) is the one argument of a one-argument tool;
            # langchain-core refuses strings for JSON-schema tools on its own
            if isinstance(tool_input, str) and self.name in _STRING_ARG:
                tool_input = {_STRING_ARG[self.name]: tool_input}
            return super()._parse_input(tool_input, *args, **kwargs)

        def _run(self, *args: Any, run_manager: Any = None, **kwargs: Any) -> str:
            if args:   # a bare string input: only meaningful for bash
                kwargs = {"command": args[0], **kwargs} if self.name == "bash" else kwargs
            with lock:
                text = handle(sb, self.name, kwargs, renderer=renderer)
            if text.startswith("error: "):
                # the same text for the model, and a ToolMessage with status="error" for
                # an agent invoked with a tool call (handle_tool_error passes the text on)
                raise ToolException(text)
            return text

    return [SandboxTool(name=s.name, description=s.description, args_schema=s.schema(),
                        handle_tool_error=True) for s in _selected(names)]
