"""An MCP server over stdio (official ``mcp`` SDK) serving the agent tools on one Sandbox."""

# stdout is the protocol: the process's fd 1 is moved to a private descriptor before the
# Sandbox exists and fd 1 then points at stderr (fd 0 at /dev/null), so nothing the
# sandbox, its children, a warning or a stray print() writes can corrupt a frame.

from __future__ import annotations

import base64
import io
import mimetypes
import os
import posixpath
import sys
import threading
from typing import Any, Callable
from urllib.parse import quote, unquote, urlparse

from .handlers import handle
from .render import Renderer
from .specs import SPECS

__all__ = ["build_server", "file_uri", "run_stdio", "workspace_files"]

MAX_RESOURCES = 1000
MAX_RESOURCE_BYTES = 16 * 1024 * 1024
_SKIP_DIRS = frozenset({".git", "node_modules", "__pycache__", ".venv", ".mypy_cache", ".pytest_cache"})


def _require_mcp() -> Any:
    try:
        import mcp  # noqa: F401
    except ImportError as exc:
        raise ImportError("the MCP server needs the 'mcp' extra: pip install 'agentic-bash[mcp]'") from exc
    return mcp


def file_uri(path: str) -> str:
    """``file://`` URI of an absolute sandbox path."""
    return "file://" + quote(path)


def workspace_files(sb: Any, root: str, limit: int = MAX_RESOURCES) -> list[Any]:
    """Regular files below ``root``, breadth first, sorted per directory, at most ``limit``
    (tool caches such as .git and node_modules are skipped)."""
    out: list[Any] = []
    queue = [root]
    while queue and len(out) < limit:
        d = queue.pop(0)
        try:
            entries = sb.list_files(d)
        except OSError:
            continue
        for e in entries:
            if e.type == "dir":
                if e.name not in _SKIP_DIRS:
                    queue.append(e.path)
            elif e.type == "file":
                out.append(e)
                if len(out) >= limit:
                    break
    return out


def build_server(sb: Any, *, renderer: Renderer | None = None, name: str = "agentic-bash") -> Any:
    """A low-level ``mcp`` Server whose tools and ``file://`` resources act on ``sb``.

    Calls reach the Sandbox one at a time from worker threads (it is one shell session); a
    call the client cancels interrupts the command it was running."""
    _require_mcp()
    import anyio
    import anyio.to_thread
    import mcp_types as types
    from mcp.server.lowlevel import Server
    from mcp.shared.exceptions import MCPError

    from .. import __version__

    serial = threading.Lock()   # held by the worker thread, even one whose caller gave up
    root = getattr(sb, "workdir", "/workspace")

    def locked(fn: Callable[..., Any], *args: Any) -> Any:
        with serial:
            return fn(*args)

    async def call(fn: Callable[..., Any], *args: Any) -> Any:
        try:
            return await anyio.to_thread.run_sync(locked, fn, *args, abandon_on_cancel=True)
        except anyio.get_cancelled_exc_class():
            # the client cancelled (notifications/cancelled, or its own timeout): stop the run
            # in progress, as Ctrl-C would, so the session is free for the next call
            interrupt = getattr(sb, "interrupt", None)
            if interrupt is not None:
                interrupt()
            raise

    # hints for clients that ask before running a tool: the readers change nothing; bash may
    # reach the network (by the session's policy) and delete files
    hints = {
        "bash": types.ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=True),
        "read_file": types.ToolAnnotations(read_only_hint=True, open_world_hint=False),
        "list_files": types.ToolAnnotations(read_only_hint=True, open_world_hint=False),
        "write_file": types.ToolAnnotations(read_only_hint=False, destructive_hint=True,
                                            idempotent_hint=True, open_world_hint=False),
        "edit_file": types.ToolAnnotations(read_only_hint=False, destructive_hint=False,
                                           idempotent_hint=False, open_world_hint=False),
    }

    async def list_tools(ctx: Any, params: Any) -> Any:
        return types.ListToolsResult(tools=[
            types.Tool(name=s.name, description=s.description, input_schema=s.schema(),
                       annotations=hints[s.name]) for s in SPECS])

    async def call_tool(ctx: Any, params: Any) -> Any:
        text = await call(lambda: handle(sb, params.name, params.arguments or {}, renderer=renderer))
        return types.CallToolResult(content=[types.TextContent(text=text)],
                                    is_error=text.startswith("error: "))

    async def list_resources(ctx: Any, params: Any) -> Any:
        files = await call(workspace_files, sb, root)
        return types.ListResourcesResult(resources=[
            types.Resource(uri=file_uri(f.path), name=posixpath.relpath(f.path, root), size=f.size,
                           mime_type=mimetypes.guess_type(f.name)[0] or "text/plain")
            for f in files])

    async def list_templates(ctx: Any, params: Any) -> Any:
        return types.ListResourceTemplatesResult(resource_templates=[
            types.ResourceTemplate(uri_template="file:///{+path}", name="sandbox file",
                                   description="Any file in the sandbox by absolute path")])

    async def read_resource(ctx: Any, params: Any) -> Any:
        uri = str(params.uri)
        parsed = urlparse(uri)
        if parsed.scheme != "file" or parsed.netloc not in ("", "localhost"):
            raise MCPError(-32602, f"not a file:// URI of this sandbox: {uri}")
        path = unquote(parsed.path)
        try:
            data = await call(sb.read_file, path)
        except OSError as exc:
            raise MCPError(-32002, f"{path}: {exc.strerror or exc}") from None
        if len(data) > MAX_RESOURCE_BYTES:
            raise MCPError(-32603, f"{path}: {len(data)} bytes, more than {MAX_RESOURCE_BYTES} served")
        mime = mimetypes.guess_type(path)[0]
        try:
            contents: Any = types.TextResourceContents(uri=uri, text=data.decode("utf-8"),
                                                       mime_type=mime or "text/plain")
        except UnicodeDecodeError:
            contents = types.BlobResourceContents(uri=uri, blob=base64.b64encode(data).decode(),
                                                  mime_type=mime or "application/octet-stream")
        return types.ReadResourceResult(contents=[contents])

    return Server(
        name, version=__version__,
        instructions=("A persistent bash session in a sandbox: `bash` runs scripts (cwd, "
                      "variables and files persist between calls); the file tools read, write, "
                      "list and edit files; resources are the files under " + root + "."),
        on_list_tools=list_tools, on_call_tool=call_tool, on_list_resources=list_resources,
        on_list_resource_templates=list_templates, on_read_resource=read_resource)


def _claim_stdio() -> tuple[int, int, Callable[[], None]]:
    """Move the protocol's fds out of 0/1: fd 1 -> stderr, fd 0 -> /dev/null."""
    sys.stdout.flush()
    wire_in, wire_out = os.dup(0), os.dup(1)
    saved_in, saved_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    old_stdout = sys.stdout
    sys.stdout = sys.stderr   # print() from any library lands on stderr too

    def restore() -> None:
        sys.stdout = old_stdout
        for saved, fd in ((saved_in, 0), (saved_out, 1)):
            try:
                os.dup2(saved, fd)
            finally:
                os.close(saved)
    return wire_in, wire_out, restore


def run_stdio(open_sandbox: Callable[[], Any], *, renderer: Renderer | None = None) -> int:
    """Serve MCP on this process's stdin/stdout until the client hangs up; the Sandbox is
    opened by ``open_sandbox()`` (after stdout is protected) and closed at the end."""
    _require_mcp()
    import anyio
    from mcp.server.stdio import stdio_server

    wire_in, wire_out, restore = _claim_stdio()
    try:
        sb = open_sandbox()
        try:
            server = build_server(sb, renderer=renderer)
            reader = io.TextIOWrapper(os.fdopen(wire_in, "rb"), encoding="utf-8", errors="replace")
            writer = io.TextIOWrapper(os.fdopen(wire_out, "wb"), encoding="utf-8", write_through=True)
            wire_in = wire_out = -1

            async def main() -> None:
                async with stdio_server(anyio.wrap_file(reader), anyio.wrap_file(writer)) as (rs, ws):
                    await server.run(rs, ws, server.create_initialization_options())

            try:
                anyio.run(main)
            finally:
                for f in (reader, writer):
                    try:
                        f.close()
                    except (OSError, ValueError):
                        pass
        finally:
            sb.close()
    finally:
        for fd in (wire_in, wire_out):
            if fd >= 0:
                os.close(fd)
        restore()
    return 0
