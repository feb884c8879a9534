"""An agent loop in the Anthropic Messages API shape, run offline by a scripted model.

Swap ``ScriptedModel`` for ``anthropic.Anthropic().messages`` (and read ``resp.content``
blocks as attributes) to drive the same loop with a real model:

    python examples/anthropic_agent_loop.py            # virtual sandbox, no network, no key
    python examples/anthropic_agent_loop.py namespace  # real binaries in a kernel sandbox
"""

from __future__ import annotations

import sys
from typing import Any

from agentic_bash import Sandbox
from agentic_bash.tools import Renderer, anthropic_schemas, handle

# What the "model" does, turn by turn: (tool calls, text their results must show — a real
# model would read them). The task: make a small notes project, find a TODO with grep, edit
# it away (after an edit whose text is not unique), and leave a report.
SCRIPT: list[tuple[list[tuple[str, dict[str, Any]]], str]] = [
    ([("bash", {"command": "mkdir -p notes && cd notes && printf 'item\\nTODO: call Bob\\nitem\\n' > today.md"})],
     "files created: /workspace/notes, /workspace/notes/today.md"),
    ([("bash", {"command": "grep -n TODO *.md; echo \"cwd is $PWD\""})], "stdout:\n2:TODO: call Bob\ncwd is /workspace/notes"),
    ([("edit_file", {"path": "today.md", "old": "item", "new": "first item"})],
     "error: edit_file: `old` occurs 2 times in /workspace/notes/today.md (at lines 1, 3)"),
    ([("edit_file", {"path": "today.md", "old": "TODO: call Bob", "new": "DONE: called Bob"}),
      ("read_file", {"path": "today.md"})], "item\nDONE: called Bob\nitem\n"),
    ([("bash", {"command": "seq 1 200000 > big.log; cat big.log"})], "200000\nfiles created: /workspace/notes/big.log"),
    ([("write_file", {"path": "/workspace/report.txt", "content": "1 TODO resolved\n"})],
     "created /workspace/report.txt (16 bytes)"),
]
FINAL = "The TODO in notes/today.md is done; report.txt says so."


class ScriptedModel:
    """Stands in for ``client.messages``: answers ``create()`` from SCRIPT, checking on each
    turn that the request is well formed and that the tool results say what the script expects."""

    def __init__(self, script: list[Any], final: str) -> None:
        self.script, self.final, self.turn = list(script), final, 0

    def create(self, *, model: str, max_tokens: int, system: str, messages: list[dict[str, Any]],
               tools: list[dict[str, Any]]) -> dict[str, Any]:
        assert all(set(t) == {"name", "description", "input_schema"} for t in tools)
        if self.turn:
            last = messages[-1]
            assert last["role"] == "user"
            blocks = [b for b in last["content"] if b["type"] == "tool_result"]
            assert [b["tool_use_id"] for b in blocks] == [f"toolu_{self.turn - 1}_{i}"
                                                           for i in range(len(self.script[self.turn - 1][0]))]
            results = "\n".join(b["content"] for b in blocks)
            expect = self.script[self.turn - 1][1]
            assert expect in results, f"turn {self.turn - 1}: expected {expect!r} in:\n{results}"
        if self.turn >= len(self.script):
            content: list[dict[str, Any]] = [{"type": "text", "text": self.final}]
            stop = "end_turn"
        else:
            content = [{"type": "tool_use", "id": f"toolu_{self.turn}_{i}", "name": name, "input": args}
                       for i, (name, args) in enumerate(self.script[self.turn][0])]
            stop = "tool_use"
        self.turn += 1
        return {"role": "assistant", "content": content, "stop_reason": stop}


def agent_loop(client: Any, sb: Sandbox, task: str, *, renderer: Renderer | None = None,
               max_turns: int = 20) -> list[dict[str, Any]]:
    """Ask the model; run every tool_use block on the session; answer with tool_result blocks
    (``is_error`` when the call itself failed) until the model ends its turn."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": task}]
    tools = anthropic_schemas()
    for _ in range(max_turns):
        resp = client.create(model="claude-sonnet-4-5", max_tokens=4096, tools=tools, messages=messages,
                             system="You are a coding agent with a persistent bash sandbox.")
        messages.append({"role": "assistant", "content": resp["content"]})
        if resp["stop_reason"] != "tool_use":
            return messages
        results = []
        for block in resp["content"]:
            if block["type"] == "tool_use":
                out = handle(sb, block["name"], block["input"], renderer=renderer)
                results.append({"type": "tool_result", "tool_use_id": block["id"], "content": out,
                                "is_error": out.startswith("error: ")})
        messages.append({"role": "user", "content": results})
    raise RuntimeError(f"no final answer after {max_turns} turns")


def check_workspace(sb: Sandbox) -> None:
    """What the task must leave behind."""
    assert sb.read_file("/workspace/notes/today.md") == b"item\nDONE: called Bob\nitem\n"
    assert sb.read_file("/workspace/report.txt") == b"1 TODO resolved\n"
    assert sb.run("grep -rc TODO /workspace/notes/today.md").stdout == "0\n"


def main(isolation: str = "virtual") -> list[dict[str, Any]]:
    with Sandbox(isolation=isolation) as sb:
        # a small budget: the 1.3 MB `cat big.log` comes back as its first and last lines
        messages = agent_loop(ScriptedModel(SCRIPT, FINAL), sb, "resolve the TODO in my notes",
                              renderer=Renderer(max_bytes=2048))
        check_workspace(sb)
    for m in messages[1:]:
        for b in m["content"]:
            if b["type"] == "tool_use":
                print(f"> {b['name']}({b['input']})")
            elif b["type"] == "tool_result":
                flag = " (is_error)" if b["is_error"] else ""
                print(f"  [{b['tool_use_id']}]{flag} " + b["content"].replace("\n", "\n    "))
            else:
                print(f"assistant: {b['text']}")
    return messages


if __name__ == "__main__":
    main(*sys.argv[1:2])
