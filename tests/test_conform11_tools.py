"""Agent tool adapters as agents call them: LangChain tool calls report failures as status=error."""

from __future__ import annotations

import pytest

pytest.importorskip("langchain_core")


def test_langchain_tool_call_failures_are_error_tool_messages_with_the_model_text():
    from agentic_bash import Sandbox
    from agentic_bash.tools.langchain import langchain_tools
    with Sandbox(isolation="virtual") as sb:
        tools = {t.name: t for t in langchain_tools(sb)}
        ok = tools["bash"].invoke({"name": "bash", "args": {"command": "echo fine; exit 4"},
                                   "id": "c1", "type": "tool_call"})
        assert ok.status == "success" and ok.tool_call_id == "c1"
        assert ok.content.startswith("exit code: 4") and "fine" in ok.content   # a failing command is a result
        bad = tools["bash"].invoke({"name": "bash", "args": {"cmd": "x"}, "id": "c2", "type": "tool_call"})
        assert bad.status == "error" and bad.tool_call_id == "c2"
        assert bad.content == "error: bash: unknown argument(s) 'cmd'; expected: command, timeout"
        miss = tools["read_file"].invoke({"name": "read_file", "args": {"path": "/nope-c11"},
                                          "id": "c3", "type": "tool_call"})
        assert miss.status == "error" and "No such file or directory" in miss.content
        # invoked with plain arguments, the answer is still the text (no exception)
        assert tools["read_file"].invoke("/nope-c11").startswith("error: read_file: /nope-c11")
