"""An MCP server over stdio (official ``mcp`` SDK) serving the agent tools on one Sandbox."""

# stdout is the protocol: the process's fd 1 is moved to a private descriptor before the
# Sandbox exists and fd 1 then points at stderr (fd 0 at /dev/null), so nothing the
# sandbox, its children, a warning or a stray print() writes can corrupt a frame.
#
# Requests are read from the wire by _WireLines (wait until readable, then one read) rather
# than anyio.wrap_file: a thread blocked in readline() cannot be cancelled, so SIGTERM or
# Ctrl-C left the server waiting for a client line that never came (and SIGTERM, on the
# default action, skipped closing the Sandbox and left its session directory behind).
# At end of input the requests already read are answered first (for at most DRAIN_SECONDS):
# `agentic-bash mcp < requests.jsonl` gets every reply, not "Connection closed".

from __future__ import annotations

import base64
import copy
import io
import json
import mimetypes
import os
import posixpath
import select
import signal
import stat
import sys
import threading
from typing import Any, Callable
from urllib.parse import quote, unquote, urlparse

from .handlers import BASH_OUTPUT_SCHEMA, handle
from .render import Renderer
from .specs import SPECS

__all__ = ["build_server", "file_uri", "run_stdio", "workspace_files"]

MAX_RESOURCES = 1000
# the protocol versions whose specification gives "resource not found" code -32002
_NOT_FOUND_32002 = frozenset({"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"})
DRAIN_SECONDS = 3.0
PROGRESS_INTERVAL = 0.5     # seconds between notifications/progress of a bash call at least
PROGRESS_LINE = 200         # bytes of the last output line a progress message carries
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

    Calls reach the Sandbox one at a time from worker threads (it is one shell session), in
    the order their requests arrived; a call the client cancels interrupts the command it
    was running, and a cancelled call that had not started never runs."""
    _require_mcp()
    import anyio
    import anyio.to_thread
    import mcp_types as types
    from mcp.server.lowlevel import Server
    from mcp.shared.exceptions import MCPError

    from .. import __version__

    serial = threading.Lock()   # held by the worker thread, even one whose caller gave up
    turn = anyio.Lock()         # FIFO: calls run in the order their requests arrived
    root = getattr(sb, "workdir", "/workspace")

    class _Call:
        __slots__ = ("cancelled", "running", "flags")

        def __init__(self) -> None:
            self.cancelled = False
            self.running = False
            self.flags = threading.Lock()

    def locked(state: _Call, fn: Callable[..., Any], *args: Any) -> Any:
        with serial:
            with state.flags:
                if state.cancelled:      # given up while it waited for an abandoned call
                    raise RuntimeError("cancelled before it ran")
                state.running = True
            try:
                return fn(*args)
            finally:
                with state.flags:
                    state.running = False

    async def call(fn: Callable[..., Any], *args: Any) -> Any:
        state = _Call()
        async with turn:
            try:
                return await anyio.to_thread.run_sync(locked, state, fn, *args, abandon_on_cancel=True)
            except anyio.get_cancelled_exc_class():
                # the client cancelled (notifications/cancelled, or its own timeout): stop the
                # run in progress, as Ctrl-C would, so the session is free for the next call;
                # a call still waiting for its turn is dropped and interrupts nothing
                with state.flags:
                    state.cancelled = True
                    running = state.running
                interrupt = getattr(sb, "interrupt", None)
                if running and interrupt is not None:
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
                       output_schema=copy.deepcopy(BASH_OUTPUT_SCHEMA) if s.name == "bash" else None,
                       annotations=hints[s.name]) for s in SPECS])

    async def call_tool(ctx: Any, params: Any) -> Any:
        details: dict[str, Any] = {}
        token = _progress_token(ctx)
        if params.name != "bash" or token is None:
            text = await call(lambda: handle(sb, params.name, params.arguments or {}, renderer=renderer,
                                             details=details))
        else:
            text = await _with_progress(ctx, lambda out: handle(
                sb, params.name, params.arguments or {}, renderer=renderer, on_output=out, details=details))
        failed = text.startswith("error: ")
        # bash declares an output schema: its results carry the data too (the text stays the
        # model's reading); an error result has only the text
        return types.CallToolResult(content=[types.TextContent(text=text)], is_error=failed,
                                    structured_content=details if details and not failed else None)

    async def _with_progress(ctx: Any, fn: Callable[[Callable[[int, bytes], None]], str]) -> str:
        """``fn(on_output)`` as a call, with notifications/progress while it runs: the output
        bytes so far as ``progress`` and the last line as ``message``, at most
        PROGRESS_INTERVAL apart and only when there is more."""
        seen = {"bytes": 0, "line": b"", "partial": b""}
        lock = threading.Lock()

        def on_output(fd: int, chunk: bytes) -> None:
            with lock:
                seen["bytes"] += len(chunk)
                *whole, partial = (seen["partial"] + chunk).split(b"\n")
                seen["partial"] = partial[-PROGRESS_LINE:]
                for ln in reversed(whole):
                    if ln.strip():
                        seen["line"] = ln[-PROGRESS_LINE:]
                        break
                if partial.strip():
                    seen["line"] = seen["partial"]

        async def report(done: Any) -> None:
            sent = 0
            while not done.is_set():
                with anyio.move_on_after(PROGRESS_INTERVAL):
                    await done.wait()
                with lock:
                    n, line = seen["bytes"], seen["line"]
                if n > sent:
                    sent = n
                    try:
                        await ctx.session.report_progress(
                            float(n), None, line.decode("utf-8", "replace") or None)
                    except Exception:  # noqa: BLE001 - progress is a courtesy; the call goes on
                        return

        done = anyio.Event()
        async with anyio.create_task_group() as tg:
            tg.start_soon(report, done)
            try:
                return await call(fn, on_output)
            finally:
                done.set()

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
            # "resource not found": -32002 up to protocol 2025-11-25, -32602 from 2026-07-28
            # on (SEP-2164, which retired -32002); the uri goes in data either way
            code = -32002 if getattr(ctx, "protocol_version", "") in _NOT_FOUND_32002 else -32602
            raise MCPError(code, f"{path}: {exc.strerror or exc}", data={"uri": uri}) from None
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


def _progress_token(ctx: Any) -> Any:
    """The request's ``_meta.progressToken`` (None: the client asked for no progress)."""
    meta = getattr(ctx, "meta", None)
    token = meta.get("progress_token", meta.get("progressToken")) if isinstance(meta, dict) else \
        getattr(meta, "progress_token", None)
    return None if isinstance(token, bool) else token


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


class _WireLines:
    """Async iteration over the UTF-8 lines of a blocking descriptor, cancellable at any
    point: it waits for the fd to be readable on the event loop and then reads what is
    there (a regular file or /dev/null, which cannot be polled, is read directly). At end
    of input it ends once ``answered()`` is true (or DRAIN_SECONDS have passed)."""

    def __init__(self, fd: int, answered: Callable[[], bool] = lambda: True) -> None:
        self._fd = fd
        self._answered = answered
        self._buf = bytearray()
        self._scanned = 0          # no newline in _buf[:_scanned]
        self._eof = False
        self.requests = 0          # lines read that are JSON-RPC requests (id and method)
        try:
            self._poll = not stat.S_ISREG(os.fstat(fd).st_mode)
        except OSError:
            self._poll = False

    def __aiter__(self) -> "_WireLines":
        return self

    async def __anext__(self) -> str:
        import anyio
        while True:
            nl = self._buf.find(b"\n", self._scanned)
            if nl >= 0 or (self._eof and self._buf):
                end = nl + 1 if nl >= 0 else len(self._buf)
                line = bytes(self._buf[:end])
                del self._buf[:end]
                self._scanned = 0
                text = line.decode("utf-8", "replace")
                self._count(text)
                return text
            if self._eof:
                with anyio.move_on_after(DRAIN_SECONDS):
                    while not self._answered():
                        await anyio.sleep(0.02)
                raise StopAsyncIteration
            self._scanned = len(self._buf)
            if self._poll:
                try:
                    await anyio.wait_readable(self._fd)
                except PermissionError:      # epoll refuses this kind of file: plain reads
                    self._poll = False
            chunk = os.read(self._fd, 1 << 16)
            if chunk:
                self._buf += chunk
            else:
                self._eof = True

    def _count(self, text: str) -> None:
        try:
            msg = json.loads(text)
        except (ValueError, RecursionError):
            return
        if isinstance(msg, dict) and "id" in msg and "method" in msg:
            self.requests += 1


class _WireWriter:
    """The protocol's output for ``stdio_server``: writes lines and counts the responses
    (this server sends the client no requests, so every message with an id is one). Once
    the client has closed its end, output is dropped instead of failing the server."""

    def __init__(self, f: Any) -> None:
        self._f = f
        self.responses = 0
        self._broken = False

    def gone(self) -> bool:
        """The reading end of the output is closed (the client went away)."""
        if not self._broken:
            try:
                poller = select.poll()
                poller.register(self._f.fileno(), 0)    # POLLERR/POLLHUP are always reported
                self._broken = any(ev & (select.POLLERR | select.POLLHUP) for _, ev in poller.poll(0))
            except (OSError, ValueError):
                self._broken = True
        return self._broken

    async def write(self, text: str) -> None:
        await self._io(self._f.write, text)
        if text.startswith('{"jsonrpc":"2.0","id":'):
            self.responses += 1

    async def flush(self) -> None:
        await self._io(self._f.flush)

    async def _io(self, fn: Callable[..., Any], *args: Any) -> None:
        import anyio
        if self._broken:
            return
        try:
            await anyio.to_thread.run_sync(fn, *args)
        except (BrokenPipeError, ConnectionResetError):
            self._broken = True


_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def run_stdio(open_sandbox: Callable[[], Any], *, renderer: Renderer | None = None) -> int:
    """Serve MCP on this process's stdin/stdout until the client hangs up; the Sandbox is
    opened by ``open_sandbox()`` (after stdout is protected) and closed at the end.

    Returns 0 when the client hung up, 128+N when signal N (SIGTERM, SIGINT, SIGHUP; main
    thread only) stopped the server: the call in progress is interrupted and the Sandbox
    closed either way."""
    _require_mcp()
    import anyio
    from mcp.server.stdio import stdio_server

    stopped: list[int] = []
    main_thread = threading.current_thread() is threading.main_thread()
    wire_in, wire_out, restore = _claim_stdio()
    try:
        sb = open_sandbox()
        try:
            server = build_server(sb, renderer=renderer)
            writer = io.TextIOWrapper(os.fdopen(wire_out, "wb"), encoding="utf-8", write_through=True)
            wire = _WireWriter(writer)
            reader = _WireLines(wire_in, lambda: wire.gone() or wire.responses >= reader.requests)
            wire_out = -1

            async def main() -> None:
                async with anyio.create_task_group() as tg:
                    if main_thread:
                        tg.start_soon(watch_signals, tg.cancel_scope)
                    async with stdio_server(reader, wire) as (rs, ws):  # type: ignore[arg-type]
                        await server.run(rs, ws, server.create_initialization_options())
                    tg.cancel_scope.cancel()

            async def watch_signals(scope: Any) -> None:
                with anyio.open_signal_receiver(*_STOP_SIGNALS) as signals:
                    async for signum in signals:
                        stopped.append(int(signum))
                        scope.cancel()
                        return

            try:
                anyio.run(main)
            finally:
                try:
                    writer.close()
                except (OSError, ValueError):
                    pass
        finally:
            sb.close()
    finally:
        for fd in (wire_in, wire_out):
            if fd >= 0:
                os.close(fd)
        restore()
    return 128 + stopped[0] if stopped else 0
