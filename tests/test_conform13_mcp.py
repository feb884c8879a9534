"""`agentic-bash mcp` through the SDK's high-level Client, whose default (mode="auto") speaks
the 2026-07-28 protocol (server/discover, a per-request envelope) rather than initialize."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

mcp = pytest.importorskip("mcp")
anyio = pytest.importorskip("anyio")
if not hasattr(mcp, "Client"):  # pragma: no cover - mcp 1.x has no high-level Client
    pytest.skip("this mcp has no high-level Client", allow_module_level=True)

BIN = Path(sys.executable).parent / "agentic-bash"
CMD = [str(BIN)] if BIN.exists() else [sys.executable, "-m", "agentic_bash"]


def test_the_default_client_negotiates_the_newest_protocol_and_every_call_works():
    from mcp import Client, StdioServerParameters
    from mcp.shared.exceptions import MCPError
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    params = StdioServerParameters(command=CMD[0], args=[*CMD[1:], "mcp", "-i", "virtual"], env=dict(os.environ))
    seen: list = []

    async def on_progress(progress, total, message):
        seen.append((progress, message))

    async def body():
        out = {}
        with anyio.fail_after(120):
            async with Client(params) as c:
                out["version"] = c.session.protocol_version
                out["tools"] = sorted(t.name for t in (await c.list_tools()).tools)
                out["ok"] = await c.call_tool("bash", {"command": "cd /tmp; echo hi; exit 3"})
                out["bad"] = await c.call_tool("bash", {"command": 5})
                out["progress"] = await c.call_tool(
                    "bash", {"command": "for i in 1 2 3; do echo line$i; sleep 0.7; done"},
                    progress_callback=on_progress)
                t = time.monotonic()
                try:
                    await c.call_tool("bash", {"command": "sleep 60"}, read_timeout_seconds=1.0)
                    out["gave_up"] = None
                except MCPError as e:
                    out["gave_up"] = str(e)
                out["next"] = await c.call_tool("bash", {"command": "echo next"})
                out["waited"] = time.monotonic() - t
                await c.call_tool("write_file", {"path": "/workspace/r.txt", "content": "R"})
                out["res"] = (await c.read_resource("file:///workspace/r.txt")).contents[0].text
                try:
                    await c.read_resource("file:///workspace/none.txt")
                except MCPError as e:
                    out["missing"] = (e.error.code, e.error.data)
        return out

    got = anyio.run(body)
    assert got["version"] in MODERN_PROTOCOL_VERSIONS
    assert got["tools"] == ["bash", "edit_file", "list_files", "read_file", "write_file"]
    ok = got["ok"]
    assert ok.is_error is False and ok.structured_content["exit_code"] == 3
    assert ok.structured_content["stdout"] == "hi\n" and ok.structured_content["cwd"] == "/tmp"
    assert got["bad"].is_error is True and got["bad"].content[0].text.startswith("error: ")
    assert got["progress"].structured_content["stdout"] == "line1\nline2\nline3\n"
    assert seen and all(a[0] < b[0] for a, b in zip(seen, seen[1:]))
    # the client gave up after 1 s: its sleep 60 was interrupted, the next call did not wait
    assert got["gave_up"] is not None
    assert got["next"].structured_content["stdout"] == "next\n" and got["waited"] < 30
    assert got["res"] == "R"
    # 2026-07-28 retired -32002: "resource not found" is -32602 with the uri (SEP-2164)
    assert got["missing"] == (-32602, {"uri": "file:///workspace/none.txt"})
