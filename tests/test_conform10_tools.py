"""The agent-tool adapters used the way their frameworks' users call them."""

from __future__ import annotations

import asyncio
import json

import pytest

from agentic_bash import Sandbox


def test_langchain_tools_take_a_bare_string_like_other_one_argument_tools():
    pytest.importorskip("langchain_core")
    from agentic_bash.tools.langchain import langchain_tools

    with Sandbox(isolation="virtual") as sb:
        tools = {t.name: t for t in langchain_tools(sb)}
        assert tools["bash"].invoke("cd /tmp && echo hi > f.txt && echo $((6*7))") == \
            "exit code: 0\nstdout:\n42\nfiles created: /tmp/f.txt\ncwd: /tmp"
        assert tools["read_file"].invoke("f.txt") == "hi\n"        # relative to the shell's cwd
        assert tools["list_files"].invoke("/tmp") == "/tmp: 1 entry\nf.txt  (3 bytes)"
        assert asyncio.run(tools["bash"].ainvoke("pwd")) == "exit code: 0\nstdout:\n/tmp\ncwd: /tmp"
        # a tool with several required arguments still needs a dict, and says so
        with pytest.raises(ValueError, match="String tool inputs"):
            tools["write_file"].invoke("f.txt")


def test_openai_agents_tools_explain_refused_arguments_to_the_model():
    pytest.importorskip("agents")
    from agents.tool_context import ToolContext

    from agentic_bash.tools.openai_agents import openai_agents_tools

    async def invoke(tool, raw: str) -> str:
        ctx = ToolContext(context=None, tool_name=tool.name, tool_call_id="call-1", tool_arguments=raw)
        return await tool.on_invoke_tool(ctx, raw)

    with Sandbox(isolation="virtual") as sb:
        tools = {t.name: t for t in openai_agents_tools(sb)}
        bash, edit = tools["bash"], tools["edit_file"]
        assert asyncio.run(invoke(bash, "echo hi")).startswith("error: bash: arguments are not valid JSON")
        assert asyncio.run(invoke(bash, json.dumps({"command": 3, "timeout": None}))) == \
            "error: bash: argument 'command' must be a string, not int"
        assert asyncio.run(invoke(edit, json.dumps({"path": "/x", "old": "a"}))) == \
            "error: edit_file: missing required argument 'new'"
        # a good call is untouched
        assert asyncio.run(invoke(bash, json.dumps({"command": "echo ok", "timeout": None}))) == \
            "exit code: 0\nstdout:\nok\ncwd: /workspace"
