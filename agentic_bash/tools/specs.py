"""The five agent tools' names, descriptions and JSON schemas, in each vendor's flavour."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Mapping

__all__ = ["TOOL_NAMES", "ToolSpec", "anthropic_schemas", "openai_schemas", "schemas", "spec"]


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """One tool: ``parameters`` is a JSON Schema (draft 2020-12) object schema."""

    name: str
    description: str
    parameters: Mapping[str, Any]

    def schema(self) -> dict[str, Any]:
        """A fresh, mutable copy of ``parameters`` (callers may edit what they get)."""
        return copy.deepcopy(dict(self.parameters))


def _obj(props: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": required, "additionalProperties": False}


_PATH = {"type": "string", "minLength": 1,
         "description": "File path; relative paths are resolved against the shell's current directory."}

SPECS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "bash",
        "Run a bash script in a persistent, sandboxed session. The working directory, "
        "variables, functions and files persist between calls. Returns the exit code, "
        "stdout and stderr (long output keeps its start and end) and the files the call changed.",
        _obj({
            "command": {"type": "string", "minLength": 1, "description": "The bash script to run."},
            "timeout": {"type": "number", "exclusiveMinimum": 0,
                        "description": "Seconds before the command is stopped (optional)."},
        }, ["command"]),
    ),
    ToolSpec(
        "read_file",
        "Read a text file from the sandbox and return its contents.",
        _obj({"path": _PATH}, ["path"]),
    ),
    ToolSpec(
        "write_file",
        "Write content to a file in the sandbox, creating parent directories and replacing "
        "any existing content.",
        _obj({"path": _PATH, "content": {"type": "string", "description": "The full new file content."}},
             ["path", "content"]),
    ),
    ToolSpec(
        "list_files",
        "List a directory in the sandbox: one entry per line with its type and size.",
        _obj({"path": {**_PATH, "description": "Directory to list ('.' for the current directory)."}},
             ["path"]),
    ),
    ToolSpec(
        "edit_file",
        "Edit a text file by replacing one exact occurrence of `old` with `new`. `old` must "
        "appear exactly once in the file (include surrounding lines to make it unique); "
        "whitespace and indentation must match exactly.",
        _obj({
            "path": _PATH,
            "old": {"type": "string", "minLength": 1, "description": "The exact text to replace."},
            "new": {"type": "string", "description": "The replacement text."},
        }, ["path", "old", "new"]),
    ),
)

TOOL_NAMES: tuple[str, ...] = tuple(s.name for s in SPECS)
_BY_NAME = {s.name: s for s in SPECS}


def spec(name: str) -> ToolSpec:
    """The spec of tool ``name``; KeyError for an unknown name."""
    return _BY_NAME[name]


def _selected(names: Any) -> list[ToolSpec]:
    if names is None:
        return list(SPECS)
    if isinstance(names, str):
        raise TypeError("names= takes a list of tool names, not a string")
    unknown = [n for n in names if n not in _BY_NAME]
    if unknown:
        raise ValueError(f"unknown tool name(s): {', '.join(map(repr, unknown))}; known: {', '.join(TOOL_NAMES)}")
    return [_BY_NAME[n] for n in names]


def schemas(names: Any = None) -> list[dict[str, Any]]:
    """Vendor-neutral ``{"name", "description", "parameters"}`` dicts (also MCP's shape with
    ``parameters`` as ``inputSchema``)."""
    return [{"name": s.name, "description": s.description, "parameters": s.schema()} for s in _selected(names)]


def _strict(schema: dict[str, Any]) -> dict[str, Any]:
    # OpenAI structured outputs: every property required, optional ones nullable, and none of
    # the validation keywords strict mode rejects (minLength, exclusiveMinimum)
    props = schema["properties"]
    for key, prop in props.items():
        for kw in ("minLength", "exclusiveMinimum"):
            prop.pop(kw, None)
        if key not in schema["required"]:
            prop["type"] = [prop["type"], "null"]
    schema["required"] = list(props)
    return schema


def openai_schemas(names: Any = None, *, api: str = "chat", strict: bool = False) -> list[dict[str, Any]]:
    """Tool definitions for OpenAI function calling: ``api="chat"`` (Chat Completions,
    ``{"type": "function", "function": {...}}``) or ``"responses"`` (the flat Responses API
    shape). ``strict=True`` makes the schemas valid for structured outputs (optional
    arguments become required-but-nullable; ``handle`` treats null as absent)."""
    if api not in ("chat", "responses"):
        raise ValueError(f"api must be 'chat' or 'responses', not {api!r}")
    out = []
    for s in _selected(names):
        params = _strict(s.schema()) if strict else s.schema()
        fn: dict[str, Any] = {"name": s.name, "description": s.description, "parameters": params}
        if strict:
            fn["strict"] = True
        out.append({"type": "function", "function": fn} if api == "chat" else {"type": "function", **fn})
    return out


def anthropic_schemas(names: Any = None) -> list[dict[str, Any]]:
    """Tool definitions for the Anthropic Messages API: ``{"name", "description", "input_schema"}``."""
    return [{"name": s.name, "description": s.description, "input_schema": s.schema()} for s in _selected(names)]
