"""An agent loop in the OpenAI Chat Completions shape, run offline by a scripted model.

Swap ``ScriptedModel`` for ``openai.OpenAI().chat.completions`` (and read ``resp.choices[0]
.message`` as attributes) to drive the same loop with a real model:

    python examples/openai_agent_loop.py            # virtual sandbox, no network, no key
    python examples/openai_agent_loop.py namespace  # real binaries in a kernel sandbox
"""

from __future__ import annotations

import json
import sys
from typing import Any

from agentic_bash import Sandbox
from agentic_bash.tools import handle, openai_schemas

# What the "model" does, turn by turn: (tool calls, text their results must show — a real
# model would read them). The task: a line-counting script has a bug (wc -w); run it, see the
# wrong count, fix it (after one edit that misses), run it again.
SCRIPT: list[tuple[list[tuple[str, dict[str, Any]]], str]] = [
    ([("write_file", {"path": "proj/count.sh",
                      "content": '#!/bin/bash\n# print how many lines FILE has\nwc -w < "$1"\n'}),
      ("write_file", {"path": "proj/data.txt", "content": "a b\nc d\ne\n"})],
     "created /workspace/proj/data.txt"),
    ([("bash", {"command": "cd proj && bash count.sh data.txt"})], "stdout:\n5\n"),
    ([("edit_file", {"path": "count.sh", "old": "wc -c", "new": "wc -l"})], "error: edit_file: `old` was not found"),
    ([("edit_file", {"path": "count.sh", "old": "wc -w", "new": "wc -l"})], "files modified: /workspace/proj/count.sh"),
    ([("bash", {"command": "bash count.sh data.txt", "timeout": 10})], "stdout:\n3\n"),
    ([("list_files", {"path": "."})], "count.sh  (57 bytes)"),
]
FINAL = "Fixed: count.sh used `wc -w` (words); it now counts lines and prints 3 for data.txt."


class ScriptedModel:
    """Stands in for ``client.chat.completions``: answers ``create()`` from SCRIPT, checking on
    each turn that the request is well formed and that the tool results it got say what the
    script expects (a real model would read them)."""

    def __init__(self, script: list[Any], final: str) -> None:
        self.script, self.final, self.turn = list(script), final, 0

    def create(self, *, model: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        assert {t["function"]["name"] for t in tools} == {"bash", "read_file", "write_file", "list_files", "edit_file"}
        if self.turn:
            results = "\n".join(m["content"] for m in messages if m["role"] == "tool"
                                and m["tool_call_id"].startswith(f"call_{self.turn - 1}_"))
            expect = self.script[self.turn - 1][1]
            assert expect in results, f"turn {self.turn - 1}: expected {expect!r} in:\n{results}"
        if self.turn >= len(self.script):
            message: dict[str, Any] = {"role": "assistant", "content": self.final}
            finish = "stop"
        else:
            calls = self.script[self.turn][0]
            message = {"role": "assistant", "content": None, "tool_calls": [
                {"id": f"call_{self.turn}_{i}", "type": "function",
                 "function": {"name": name, "arguments": json.dumps(args)}}
                for i, (name, args) in enumerate(calls)]}
            finish = "tool_calls"
        self.turn += 1
        return {"choices": [{"index": 0, "message": message, "finish_reason": finish}]}


def agent_loop(client: Any, sb: Sandbox, task: str, *, max_turns: int = 20) -> list[dict[str, Any]]:
    """The usual loop: ask the model, run each tool call on the session, feed the results back,
    until the model answers without tool calls."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent with a persistent bash sandbox."},
        {"role": "user", "content": task},
    ]
    tools = openai_schemas()
    for _ in range(max_turns):
        message = client.create(model="gpt-4.1", messages=messages, tools=tools)["choices"][0]["message"]
        messages.append(message)
        if not message.get("tool_calls"):
            return messages
        for call in message["tool_calls"]:
            fn = call["function"]
            # arguments arrive as JSON text; handle() parses and checks them, and answers in words
            messages.append({"role": "tool", "tool_call_id": call["id"],
                             "content": handle(sb, fn["name"], fn["arguments"])})
    raise RuntimeError(f"no final answer after {max_turns} turns")


def check_workspace(sb: Sandbox) -> None:
    """What the task must leave behind."""
    assert sb.read_file("/workspace/proj/count.sh").decode().endswith('wc -l < "$1"\n')
    assert sb.run("bash /workspace/proj/count.sh /workspace/proj/data.txt").stdout.strip() == "3"


def main(isolation: str = "virtual") -> list[dict[str, Any]]:
    with Sandbox(isolation=isolation) as sb:
        messages = agent_loop(ScriptedModel(SCRIPT, FINAL), sb, "count.sh prints the wrong count; fix it")
        check_workspace(sb)
    for m in messages[2:]:
        if m["role"] == "tool":
            print(f"  [{m['tool_call_id']}] " + m["content"].replace("\n", "\n    "))
        elif m.get("tool_calls"):
            for c in m["tool_calls"]:
                print(f"> {c['function']['name']}({c['function']['arguments']})")
        else:
            print(f"assistant: {m['content']}")
    return messages


if __name__ == "__main__":
    main(*sys.argv[1:2])
