"""Run one agent tool call on a Sandbox and answer with text for the model, never raising."""

# Every failure a model can cause or meet (bad JSON, unknown tool, wrong argument types,
# missing files, a crashed sandbox) becomes an "error: ..." string it can read and act on;
# an exception escaping here would end the caller's agent loop instead.

from __future__ import annotations

import json
import logging
import math
from typing import Any, Callable, Mapping

from ..errors import SandboxClosed, SandboxCrashed, SandboxError
from ..vfs.paths import normalize
from .render import Renderer
from .specs import TOOL_NAMES, spec

__all__ = ["BASH_OUTPUT_SCHEMA", "ToolArgumentError", "bash_details", "handle", "parse_arguments"]

_log = logging.getLogger("agentic_bash.tools")

DEFAULT_RENDERER = Renderer()


class ToolArgumentError(ValueError):
    """A tool call's arguments do not match its schema; ``str()`` is the model-facing text."""


_JSON_TYPES = {"string": (str,), "number": (int, float), "integer": (int,), "boolean": (bool,)}


def parse_arguments(name: str, arguments: Any) -> dict[str, Any]:
    """Check ``arguments`` (a mapping, a JSON object text, or None) against tool ``name``'s
    schema; returns them with nulls for optional arguments dropped. ToolArgumentError if not."""
    if name not in TOOL_NAMES:
        raise ToolArgumentError(f"unknown tool {name!r}; available tools: {', '.join(TOOL_NAMES)}")
    if arguments is None or arguments == "":
        arguments = {}
    if isinstance(arguments, (str, bytes, bytearray)):
        try:
            arguments = json.loads(arguments)
        except ValueError as exc:
            raise ToolArgumentError(f"{name}: arguments are not valid JSON ({exc})") from None
    if not isinstance(arguments, Mapping):
        raise ToolArgumentError(f"{name}: arguments must be a JSON object, not {type(arguments).__name__}")
    schema = spec(name).parameters
    props: Mapping[str, Any] = schema["properties"]
    unknown = sorted(k for k in arguments if k not in props)
    if unknown:
        raise ToolArgumentError(f"{name}: unknown argument(s) {', '.join(map(repr, unknown))}; "
                                f"expected: {', '.join(props)}")
    out: dict[str, Any] = {}
    for key, prop in props.items():
        value = arguments.get(key)
        if value is None:
            if key in schema["required"]:
                raise ToolArgumentError(f"{name}: missing required argument {key!r}")
            continue
        kinds = _JSON_TYPES[prop["type"]]
        if not isinstance(value, kinds) or (prop["type"] != "boolean" and isinstance(value, bool)):
            raise ToolArgumentError(f"{name}: argument {key!r} must be a {prop['type']}, "
                                    f"not {type(value).__name__}")
        if prop["type"] == "string":
            if len(value) < prop.get("minLength", 0):
                raise ToolArgumentError(f"{name}: argument {key!r} must not be empty")
            if key == "path" and "\0" in value:
                raise ToolArgumentError(f"{name}: argument 'path' must not contain a NUL character")
        if prop["type"] == "number":
            try:
                value = float(value)
            except OverflowError:
                value = math.inf
            if not math.isfinite(value) or ("exclusiveMinimum" in prop and value <= prop["exclusiveMinimum"]):
                raise ToolArgumentError(f"{name}: argument {key!r} must be a positive number of seconds")
        out[key] = value
    return out


def handle(sb: Any, name: str, arguments: Any, *, renderer: Renderer | None = None,
           on_output: Callable[[int, bytes], None] | None = None,
           details: dict[str, Any] | None = None) -> str:
    """Run tool ``name`` with ``arguments`` (dict or JSON text) on Sandbox ``sb``; the answer
    is text for the model: the rendered result, or ``error: ...`` saying what went wrong.
    For ``bash``: ``on_output(fd, chunk)`` sees the output as it comes, and ``details`` (a
    dict) is filled with the result's fields (``bash_details``) when the command ran."""
    r = renderer or DEFAULT_RENDERER
    if name == "bash" and (on_output is not None or details is not None):
        return _guarded(sb, name, arguments, r, lambda sb_, a, r_: _bash(sb_, a, r_, on_output, details))
    return _guarded(sb, name, arguments, r, None)


def _guarded(sb: Any, name: str, arguments: Any, r: Renderer,
             fn: Callable[[Any, dict[str, Any], Renderer], str] | None) -> str:
    try:
        args = parse_arguments(name, arguments)
    except ToolArgumentError as exc:
        return f"error: {exc}"
    except Exception as exc:   # e.g. RecursionError from absurdly nested JSON
        return f"error: {name}: arguments could not be read ({type(exc).__name__})"
    try:
        return (fn or _DISPATCH[name])(sb, args, r)
    except _ToolFailure as exc:
        return f"error: {exc}"
    except SandboxCrashed as exc:
        return (f"error: {name}: the sandbox process died during this call ({exc}); the next "
                "call starts a fresh sandbox process with the files kept")
    except SandboxClosed:
        return f"error: {name}: the sandbox is closed"
    except SandboxError as exc:
        return f"error: {name}: {type(exc).__name__}: {exc}"
    except OSError as exc:
        path = exc.filename if exc.filename is not None else args.get("path", "")
        return f"error: {name}: {path}: {exc.strerror or exc}"
    except Exception as exc:   # an agent loop must get text back, whatever broke below us
        _log.exception("tool %s failed", name)
        return f"error: {name}: internal error ({type(exc).__name__}: {exc})"


class _ToolFailure(Exception):
    """A refusal worded for the model (file not text, edit string not unique, ...)."""


def _abs(sb: Any, path: str) -> str:
    return normalize(path, sb.cwd)


def _bash(sb: Any, args: dict[str, Any], r: Renderer,
          on_output: Callable[[int, bytes], None] | None = None,
          details: dict[str, Any] | None = None) -> str:
    timeout = args.get("timeout")
    if on_output is None:
        result = sb.run(args["command"], timeout=timeout)
    else:
        out = on_output
        result = sb.run_stream(args["command"], on_stdout=lambda c: out(1, c),
                               on_stderr=lambda c: out(2, c), timeout=timeout)
    if timeout is None:
        limits = getattr(sb, "limits", None)
        timeout = getattr(limits, "timeout", None)
    if details is not None:
        details.update(bash_details(result, r))
    return r.render(result, timeout=timeout)


BASH_OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "exit_code": {"type": "integer", "description": "The script's exit status (124: timed out)."},
        "stdout": {"type": "string", "description": "Standard output (long output keeps its start and end)."},
        "stderr": {"type": "string", "description": "Standard error (long output keeps its start and end)."},
        "timed_out": {"type": "boolean"},
        "truncated": {"type": "boolean", "description": "Part of the output is left out."},
        "cwd": {"type": "string", "description": "The shell's working directory afterwards."},
    },
    "required": ["exit_code", "stdout", "stderr", "timed_out", "truncated", "cwd"],
}
"""The ``bash`` tool's result as data (MCP ``outputSchema``/``structuredContent``)."""


def bash_details(result: Any, r: Renderer | None = None) -> dict[str, Any]:
    """A bash Result as BASH_OUTPUT_SCHEMA data; each stream cut head+tail to half the
    renderer's budget."""
    from .render import cut_middle
    r = r or DEFAULT_RENDERER
    out: dict[str, Any] = {"exit_code": int(result.exit_code), "timed_out": bool(result.timed_out),
                           "truncated": bool(result.truncated), "cwd": str(getattr(result, "cwd", "") or "")}
    for n in ("stdout", "stderr"):
        data = getattr(result, f"{n}_bytes")
        text = cut_middle(data, r.max_bytes // 2, r.head_fraction)
        if len(data) > r.max_bytes // 2:
            out["truncated"] = True
        out[n] = text
    return out


def _text_of(path: str, data: bytes, what: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise _ToolFailure(f"{what}: {path}: not UTF-8 text ({len(data)} bytes); use bash "
                           "(e.g. `xxd`, `file`) to inspect it") from None


def _read_file(sb: Any, args: dict[str, Any], r: Renderer) -> str:
    path = _abs(sb, args["path"])
    data = sb.read_file(path)
    if not data:
        return f"({path} is empty)"
    if b"\0" in data[:8192]:
        raise _ToolFailure(f"read_file: {path}: binary file ({len(data)} bytes); use bash "
                           "(e.g. `xxd`, `file`) to inspect it")
    return r.text(data)


def _write_file(sb: Any, args: dict[str, Any], r: Renderer) -> str:
    path = _abs(sb, args["path"])
    existed = sb.exists(path)
    data = _encode(args["content"])
    mode = _mode(sb, path) if existed else 0o644
    sb.write_file(path, data, mode)
    verb = "overwrote" if existed else "created"
    return f"{verb} {path} ({len(data)} bytes)\nfiles {'modified' if existed else 'created'}: {path}"


def _encode(text: str) -> bytes:
    # JSON can carry lone surrogates ("\\ud800"), which UTF-8 cannot encode; they become "?"
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace")


def _mode(sb: Any, path: str) -> int:
    try:
        entries = sb.list_files(path)
    except OSError:
        return 0o644
    if len(entries) == 1 and entries[0].path == path:
        if entries[0].type == "dir":
            raise IsADirectoryError(21, "Is a directory", path)
        return entries[0].mode & 0o7777 or 0o644
    return 0o644


def _list_files(sb: Any, args: dict[str, Any], r: Renderer) -> str:
    path = _abs(sb, args["path"])
    entries = sb.list_files(path)
    if len(entries) == 1 and entries[0].path == path and entries[0].type != "dir":
        e = entries[0]
        return f"{path} is a {e.type}, {e.size} bytes"
    if not entries:
        return f"{path}: empty directory"
    if getattr(entries, "truncated", False):
        # (list_files keeps the first ones by name: saying "N entries" would be a wrong count)
        lines = [f"{path}: more than {len(entries)} entries; the first {len(entries)} by name:"]
    else:
        lines = [f"{path}: {len(entries)} entr{'y' if len(entries) == 1 else 'ies'}"]
    for e in entries:
        if e.type == "dir":
            lines.append(f"{e.name}/")
        elif e.type == "symlink":
            lines.append(f"{e.name}@")
        else:
            lines.append(f"{e.name}  ({e.size} bytes)")
    return r.text("\n".join(lines))


def _line_of(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1


def _edit_file(sb: Any, args: dict[str, Any], r: Renderer) -> str:
    path, old, new = _abs(sb, args["path"]), args["old"], args["new"]
    if old == new:
        raise _ToolFailure(f"edit_file: `old` and `new` are the same; {path} not changed")
    text = _text_of(path, sb.read_file(path), "edit_file")
    count = text.count(old)
    if count == 0:
        raise _ToolFailure(f"edit_file: `old` was not found in {path}; nothing changed. It must "
                           "match the file exactly, whitespace and indentation included "
                           "(read_file shows the current content)")
    if count > 1:
        lines, at = [], text.find(old)
        while at >= 0 and len(lines) < 10:
            lines.append(str(_line_of(text, at)))
            at = text.find(old, at + 1)
        raise _ToolFailure(f"edit_file: `old` occurs {count} times in {path} (at lines "
                           f"{', '.join(lines)}{', ...' if count > len(lines) else ''}); nothing "
                           "changed. Include more surrounding text so it matches exactly once")
    at = text.index(old)
    updated = text[:at] + new + text[at + len(old):]
    sb.write_file(path, _encode(updated), _mode(sb, path))
    first = _line_of(text, at)
    body = new[:-1] if new.endswith("\n") else new
    last = first + body.count("\n")
    # a few numbered lines around the edit, so the model sees the result without a re-read
    all_lines = updated.split("\n")
    if updated.endswith("\n"):
        all_lines.pop()
    lo, hi = max(first - 3, 1), min(last + 3, len(all_lines))
    width = len(str(hi))
    snippet = "\n".join(f"{n:>{width}} | {all_lines[n - 1]}" for n in range(lo, hi + 1))
    if not new:
        where = f"removed text at line {first}"
    else:
        where = "replaced 1 occurrence, now " + (f"line {first}" if first == last else f"lines {first}-{last}")
    return r.text(f"edited {path}: {where}\n{snippet}\nfiles modified: {path}")


_DISPATCH = {"bash": _bash, "read_file": _read_file, "write_file": _write_file,
             "list_files": _list_files, "edit_file": _edit_file}
