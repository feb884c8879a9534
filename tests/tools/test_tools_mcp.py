"""`agentic-bash mcp`: an MCP client from the official SDK drives the server over stdio."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

mcp = pytest.importorskip("mcp")
anyio = pytest.importorskip("anyio")

from agentic_bash.tools import schemas  # noqa: E402

BIN = Path(sys.executable).parent / "agentic-bash"
CMD = [str(BIN)] if BIN.exists() else [sys.executable, "-m", "agentic_bash"]


def _namespace_works() -> bool:
    from agentic_bash.isolation.probe import probe
    caps = probe()
    return caps.user_namespace and caps.mount_namespace and caps.overlay_userns


async def _session_script(level: str, tmp_path: Path) -> dict:
    from mcp import ClientSession, StdioServerParameters, stdio_client

    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "given.txt").write_text("from the host\n")
    params = StdioServerParameters(
        command=CMD[0], args=[*CMD[1:], "mcp", "-i", level, "-m", f"/workspace={proj}"],
        env={**os.environ, "PYTHONWARNINGS": "default"})
    seen: dict = {}
    with anyio.fail_after(60):
        async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
            await s.initialize()
            listed = await s.list_tools()
            seen["tools"] = {t.name: t.input_schema for t in listed.tools}
            seen["read_only"] = sorted(t.name for t in listed.tools if t.annotations.read_only_hint)
            seen["bash1"] = await s.call_tool("bash", {"command": "cd /tmp && X=41 && f() { echo $((X+1)); }"})
            seen["bash2"] = await s.call_tool("bash", {"command": "f; pwd"})
            seen["write"] = await s.call_tool("write_file", {"path": "/workspace/notes/a.txt", "content": "hé\nlo\n"})
            seen["read"] = await s.call_tool("read_file", {"path": "/workspace/notes/a.txt"})
            seen["edit"] = await s.call_tool("edit_file", {"path": "/workspace/notes/a.txt", "old": "lo", "new": "LO"})
            seen["bad"] = await s.call_tool("bash", {"command": 3})
            seen["resources"] = await s.list_resources()
            seen["templates"] = await s.list_resource_templates()
            seen["res"] = await s.read_resource("file:///workspace/notes/a.txt")
            try:
                await s.read_resource("file:///workspace/missing")
            except mcp.MCPError as exc:
                seen["res_missing"] = exc.message
    # the host directory was a copy-on-write lower: untouched
    seen["host_listing"] = sorted(p.name for p in proj.iterdir())
    return seen


def _text(result) -> str:
    assert len(result.content) == 1 and result.content[0].type == "text"
    return result.content[0].text


@pytest.mark.parametrize("level", ["virtual", "namespace"])
def test_mcp_client_over_stdio(level, tmp_path):
    if level == "namespace" and not _namespace_works():
        pytest.skip("user namespaces are unavailable here")
    seen = anyio.run(_session_script, level, tmp_path)
    assert seen["tools"] == {s["name"]: s["parameters"] for s in schemas()}
    assert seen["read_only"] == ["list_files", "read_file"]
    assert _text(seen["bash1"]) == "exit code: 0\n(no output)\ncwd: /tmp"
    assert _text(seen["bash2"]) == "exit code: 0\nstdout:\n42\n/tmp\ncwd: /tmp"   # state persisted
    assert _text(seen["write"]) == ("created /workspace/notes/a.txt (7 bytes)\n"
                                    "files created: /workspace/notes/a.txt")
    assert _text(seen["read"]) == "hé\nlo\n" and not seen["read"].is_error
    assert _text(seen["edit"]).startswith("edited /workspace/notes/a.txt: replaced 1 occurrence")
    assert seen["bad"].is_error and _text(seen["bad"]) == "error: bash: argument 'command' must be a string, not int"
    uris = {r.uri: r for r in seen["resources"].resources}
    assert set(uris) == {"file:///workspace/given.txt", "file:///workspace/notes/a.txt"}
    assert uris["file:///workspace/notes/a.txt"].size == 7
    assert [t.uri_template for t in seen["templates"].resource_templates] == ["file:///{+path}"]
    assert [c.text for c in seen["res"].contents] == ["hé\nLO\n"]
    assert seen["res_missing"] == "/workspace/missing: No such file or directory"
    assert seen["host_listing"] == ["given.txt"]


async def _cancel_script() -> dict:
    from mcp import ClientSession, StdioServerParameters, stdio_client

    params = StdioServerParameters(command=CMD[0], args=[*CMD[1:], "mcp", "-i", "virtual"])
    seen: dict = {}
    with anyio.fail_after(60):
        async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
            await s.initialize()
            await s.call_tool("bash", {"command": "K=kept"})
            t0 = anyio.current_time()
            try:   # the client gives up after 1 s and sends notifications/cancelled
                await s.call_tool("bash", {"command": "sleep 30; touch /workspace/late"}, read_timeout_seconds=1)
            except mcp.MCPError as exc:
                seen["timeout"] = exc.message
            seen["next"] = await s.call_tool("bash", {"command": "echo $K; ls /workspace"})
            seen["elapsed"] = anyio.current_time() - t0
    return seen


def test_cancelled_call_interrupts_the_command():
    seen = anyio.run(_cancel_script)
    assert "timeout" in seen
    assert _text(seen["next"]) == "exit code: 0\nstdout:\nkept\ncwd: /workspace"   # no 'late' file
    assert seen["elapsed"] < 20   # not the 30 s the cancelled command asked for


NOISY_SERVER = r"""
import os, sys, warnings
from agentic_bash import Sandbox
from agentic_bash.tools.mcp_server import run_stdio

def noisy():
    print("print() noise")
    os.write(1, b"raw fd 1 noise\n")
    warnings.warn("a start-up warning")
    return Sandbox(isolation="virtual")

sys.exit(run_stdio(noisy))
"""


def _rpc(i, method, params):
    return json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}) + "\n"


def test_stdout_carries_only_protocol():
    msgs = (_rpc(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                   "clientInfo": {"name": "raw", "version": "0"}})
            + json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n"
            + _rpc(2, "tools/call", {"name": "bash", "arguments": {"command": "echo to-the-model"}})
            + _rpc(3, "tools/call", {"name": "nope", "arguments": {}}))
    p = subprocess.Popen([sys.executable, "-c", NOISY_SERVER], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        p.stdin.write(msgs.encode())
        p.stdin.flush()
        frames = []
        while len([f for f in frames if "id" in f]) < 3:   # answers to 1, 2, 3, then hang up
            line = p.stdout.readline()
            assert line, p.stderr.read().decode()
            frames.append(json.loads(line))                 # every line is a JSON-RPC frame
        p.stdin.close()
        rest = p.stdout.read()
        assert p.wait(timeout=30) == 0
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert rest == b""
    assert all(f["jsonrpc"] == "2.0" for f in frames)
    by_id = {f["id"]: f for f in frames if "id" in f}
    assert by_id[1]["result"]["serverInfo"]["name"] == "agentic-bash"
    assert by_id[2]["result"]["content"][0]["text"] == "exit code: 0\nstdout:\nto-the-model\ncwd: /workspace"
    assert by_id[3]["result"]["isError"] is True
    assert by_id[3]["result"]["content"][0]["text"].startswith("error: unknown tool 'nope'")
    err = p.stderr.read().decode()
    assert "print() noise" in err and "raw fd 1 noise" in err and "a start-up warning" in err


def test_mcp_command_reports_sandbox_errors_on_stderr(tmp_path):
    p = subprocess.run([*CMD, "mcp", "-i", "virtual", "-m", f"/workspace={tmp_path}/absent"],
                       input=b"", capture_output=True, timeout=60)
    assert p.returncode != 0 and p.stdout == b"" and b"absent" in p.stderr


def test_mcp_takes_every_shared_sandbox_option():
    # the shared group (isolation, mounts, env, limits, network, ...) reaches mcp as it grows
    from typer.testing import CliRunner

    from agentic_bash.cli import SANDBOX_OPTIONS, app

    out = CliRunner().invoke(app, ["mcp", "--help"], terminal_width=200).output
    for _, _, opt in SANDBOX_OPTIONS:
        assert opt.param_decls[0] in out
    assert "--max-bytes" in out
