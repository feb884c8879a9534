"""Agent tools over a Sandbox: schemas for OpenAI/Anthropic/MCP, one call handler, renderers."""

from __future__ import annotations

from .handlers import ToolArgumentError, handle, parse_arguments
from .render import ALL_PARTS, DEFAULT_PARTS, Renderer, cut_middle
from .specs import TOOL_NAMES, ToolSpec, anthropic_schemas, openai_schemas, schemas, spec

__all__ = [
    "ALL_PARTS", "DEFAULT_PARTS", "Renderer", "TOOL_NAMES", "ToolArgumentError", "ToolSpec",
    "anthropic_schemas", "cut_middle", "handle", "openai_schemas", "parse_arguments", "schemas",
    "spec",
]
