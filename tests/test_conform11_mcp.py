"""`agentic-bash mcp` through the official SDK client: output schema, structured results, progress."""

from __future__ import annotations

import base64
import os
import sys
from pathlib import Path

import pytest

mcp = pytest.importorskip("mcp")
anyio = pytest.importorskip("anyio")
jsonschema = pytest.importorskip("jsonschema")

BIN = Path(sys.executable).parent / "agentic-bash"
CMD = [str(BIN)] if BIN.exists() else [sys.executable, "-m", "agentic_bash"]


def _level() -> str:
    from agentic_bash.isolation.probe import probe
    caps = probe()
    return "namespace" if caps.user_namespace and caps.mount_namespace and caps.overlay_userns else "virtual"


async def _with_session(level: str, body, *extra: str):
    from mcp import ClientSession, StdioServerParameters, stdio_client
    params = StdioServerParameters(command=CMD[0], args=[*CMD[1:], "mcp", "-i", level, *extra],
                                   env=dict(os.environ))
    with anyio.fail_after(120):
        async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
            await s.initialize()
            return await body(s)


@pytest.mark.parametrize("level", ["virtual", _level()])
def test_bash_declares_an_output_schema_and_every_result_matches_it(level):
    async def body(s):
        tools = {t.name: t for t in (await s.list_tools()).tools}
        out = {"schema": tools["bash"].output_schema,
               "inputs": {n: t.input_schema for n, t in tools.items()}}
        out["ok"] = await s.call_tool("bash", {"command": "cd /tmp; echo hi; echo oops >&2; exit 3"})
        out["big"] = await s.call_tool("bash", {"command": "head -c 100000 /dev/zero | tr '\\0' y; echo"})
        out["slow"] = await s.call_tool("bash", {"command": "sleep 20", "timeout": 0.5})
        out["bad"] = await s.call_tool("bash", {"command": ""})
        out["file"] = await s.call_tool("read_file", {"path": "/nonexistent-c11"})
        return out
    got = anyio.run(lambda: _with_session(level, body))
    schema = got["schema"]
    jsonschema.Draft202012Validator.check_schema(schema)
    for s in got["inputs"].values():
        jsonschema.Draft202012Validator.check_schema(s)
    ok = got["ok"]
    assert ok.is_error is False
    jsonschema.validate(ok.structured_content, schema)
    assert ok.structured_content == {"exit_code": 3, "stdout": "hi\n", "stderr": "oops\n", "timed_out": False,
                                     "truncated": False, "cwd": "/tmp"}
    assert ok.content[0].text.startswith("exit code: 3")
    big = got["big"].structured_content
    jsonschema.validate(big, schema)
    assert big["truncated"] is True and len(big["stdout"]) < 20_000 and big["stdout"].startswith("yyy")
    slow = got["slow"].structured_content
    jsonschema.validate(slow, schema)
    assert slow["timed_out"] is True and slow["exit_code"] == 124
    for name in ("bad", "file"):
        r = got[name]
        assert r.is_error is True and r.structured_content is None
        assert r.content[0].text.startswith("error: ")


def test_progress_notifications_carry_the_output_as_it_comes():
    seen: list = []

    async def on_progress(progress, total, message):
        seen.append((progress, total, message))

    async def body(s):
        plain = await s.call_tool("bash", {"command": "echo no-token"})
        r = await s.call_tool("bash", {"command": "for i in 1 2 3 4 5 6; do echo line$i; sleep 0.3; done"},
                              progress_callback=on_progress)
        return plain, r
    plain, r = anyio.run(lambda: _with_session("virtual", body))
    assert "no-token" in plain.content[0].text
    assert r.structured_content["stdout"] == "".join(f"line{i}\n" for i in range(1, 7))
    assert seen, "no notifications/progress for a 1.8 s command"
    values = [p for p, _, _ in seen]
    assert values == sorted(set(values)) and values[-1] <= len(r.structured_content["stdout"])
    assert all(m in {f"line{i}" for i in range(1, 7)} for _, _, m in seen), seen


def test_ping_resources_and_binary_or_unicode_files(tmp_path):
    proj = tmp_path / "proj"
    (proj / "dïr").mkdir(parents=True)
    (proj / "dïr" / "ünï €.txt").write_text("héllo\n")
    (proj / "blob.bin").write_bytes(bytes(range(256)))

    async def body(s):
        out = {"ping": await s.send_ping()}
        res = await s.list_resources()
        out["uris"] = {str(x.uri): x for x in res.resources}
        out["text"] = await s.read_resource(next(u for u in out["uris"] if u.endswith(".txt")))
        out["blob"] = await s.read_resource(next(u for u in out["uris"] if u.endswith(".bin")))
        try:
            await s.read_resource("file:///workspace/nope-c11")
        except mcp.MCPError as e:
            out["missing"] = (e.code if hasattr(e, "code") else None, e.message)
        return out
    got = anyio.run(lambda: _with_session("virtual", body, "-m", f"/workspace={proj}"))
    assert len(got["uris"]) == 2
    text = got["text"].contents[0]
    assert text.text == "héllo\n"
    blob = got["blob"].contents[0]
    assert base64.b64decode(blob.blob) == bytes(range(256))
    assert "nope-c11" in got["missing"][1]
