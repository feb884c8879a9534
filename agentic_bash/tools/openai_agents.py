"""OpenAI Agents SDK adapter: the agent tools through ``function_tool`` (extra ``openai-agents``)."""

# No ``from __future__ import annotations`` here: function_tool reads the tool functions'
# annotations with get_type_hints, which cannot see the closure names they use.

import threading
from typing import Annotated, Any, Callable

from .handlers import ToolArgumentError, handle, parse_arguments
from .render import Renderer
from .specs import _selected

__all__ = ["openai_agents_tools"]


def _functions(call: Callable[[str, dict[str, Any]], str]) -> dict[str, Callable[..., str]]:
    # typed signatures: function_tool derives its strict JSON schema from them, and the
    # descriptions come from the shared specs (checked against them in the tests)
    from pydantic import Field

    from .specs import spec

    def d(tool: str, arg: str) -> Any:
        return Field(description=spec(tool).parameters["properties"][arg]["description"])

    def bash(command: Annotated[str, d("bash", "command")],
             timeout: Annotated[float | None, d("bash", "timeout")] = None) -> str:
        return call("bash", {"command": command, "timeout": timeout})

    def read_file(path: Annotated[str, d("read_file", "path")]) -> str:
        return call("read_file", {"path": path})

    def write_file(path: Annotated[str, d("write_file", "path")],
                   content: Annotated[str, d("write_file", "content")]) -> str:
        return call("write_file", {"path": path, "content": content})

    def list_files(path: Annotated[str, d("list_files", "path")]) -> str:
        return call("list_files", {"path": path})

    def edit_file(path: Annotated[str, d("edit_file", "path")], old: Annotated[str, d("edit_file", "old")],
                  new: Annotated[str, d("edit_file", "new")]) -> str:
        return call("edit_file", {"path": path, "old": old, "new": new})

    return {f.__name__: f for f in (bash, read_file, write_file, list_files, edit_file)}


def openai_agents_tools(sb: Any, *, renderer: Renderer | None = None, names: Any = None) -> list[Any]:
    """``FunctionTool`` objects (built by ``agents.function_tool``, strict schemas) that run
    on ``sb``; the SDK runs them in a thread, and calls on the session are serialised."""
    try:
        from agents import function_tool
    except ImportError as exc:
        raise ImportError("openai_agents_tools needs the 'openai-agents' extra: "
                          "pip install 'agentic-bash[openai-agents]'") from exc
    lock = threading.Lock()

    def call(name: str, args: dict[str, Any]) -> str:
        with lock:
            return handle(sb, name, args, renderer=renderer)

    fns = _functions(call)
    return [function_tool(fns[s.name], name_override=s.name, description_override=s.description,
                          use_docstring_info=False, failure_error_function=_explain(s.name))
            for s in _selected(names)]


def _explain(name: str) -> Callable[[Any, Exception], str]:
    """The model-facing text of arguments the SDK refused before calling the tool (bad JSON,
    a wrong type): what ``handle`` says of them, not the SDK's bare "An error occurred"."""
    def explain(ctx: Any, error: Exception) -> str:
        raw = getattr(ctx, "tool_arguments", None)
        if raw is not None:
            try:
                parse_arguments(name, raw)
            except ToolArgumentError as exc:
                return f"error: {exc}"
            except Exception:  # noqa: BLE001 - only a better wording is at stake here
                pass
        return f"error: {name}: the arguments were refused ({type(error).__name__}: {error})"
    return explain
