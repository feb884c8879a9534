"""Framework adapters: schemas round-trip through each framework's own tool code, and each
framework's own test double (no model, no network) drives a session through them."""

from __future__ import annotations

import json

import pytest

from agentic_bash import Sandbox
from agentic_bash.tools import TOOL_NAMES, openai_schemas, schemas

OURS = {s["name"]: s for s in schemas()}
STRICT = {s["function"]["name"]: s["function"]["parameters"] for s in openai_schemas(strict=True)}

SCRIPT = [   # (tool, arguments) an agent might send; the final workspace is checked below
    ("bash", {"command": "mkdir -p /workspace/app && cd /workspace/app && export GREETING=hello"}),
    ("write_file", {"path": "main.py", "content": "print('hi')\n"}),
    ("edit_file", {"path": "main.py", "old": "'hi'", "new": "'hi there'"}),
    ("bash", {"command": "echo \"$GREETING from $PWD\" > out.txt; cat main.py"}),
    ("list_files", {"path": "."}),
    ("read_file", {"path": "out.txt"}),
]


def _check_workspace(sb: Sandbox) -> None:
    assert sb.read_file("/workspace/app/main.py") == b"print('hi there')\n"
    assert sb.read_file("/workspace/app/out.txt") == b"hello from /workspace/app\n"


def _check_answers(answers: list[str]) -> None:
    assert answers[1] == "created /workspace/app/main.py (12 bytes)\nfiles created: /workspace/app/main.py"
    assert answers[3].startswith("exit code: 0\nstdout:\nprint('hi there')\n")
    assert answers[4] == "/workspace/app: 2 entries\nmain.py  (18 bytes)\nout.txt  (26 bytes)"
    assert answers[5] == "hello from /workspace/app\n"


# ------------------------------------------------------------------ LangChain
def test_langchain_schemas_round_trip():
    pytest.importorskip("langchain_core")
    from langchain_core.utils.function_calling import convert_to_openai_tool

    from agentic_bash.tools.langchain import langchain_tools

    with Sandbox(isolation="virtual") as sb:
        tools = langchain_tools(sb)
        assert [t.name for t in tools] == list(TOOL_NAMES)
        for t in tools:
            assert convert_to_openai_tool(t) == {"type": "function", "function": {
                "name": t.name, "description": OURS[t.name]["description"],
                "parameters": OURS[t.name]["parameters"]}}
            # LangChain adds the tool's description to a dict schema it hands a model
            assert t.tool_call_schema == {**OURS[t.name]["parameters"],
                                          "description": OURS[t.name]["description"]}


def test_langchain_fake_model_agent_loop():
    pytest.importorskip("langchain_core")
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    from agentic_bash.tools.langchain import langchain_tools

    replies = [AIMessage(content="", tool_calls=[{"name": n, "args": a, "id": f"call{i}", "type": "tool_call"}])
               for i, (n, a) in enumerate(SCRIPT)] + [AIMessage(content="done")]
    model = GenericFakeChatModel(messages=iter(replies))
    with Sandbox(isolation="virtual") as sb:
        by_name = {t.name: t for t in langchain_tools(sb)}
        messages: list = [HumanMessage("set up the app")]
        answers: list[str] = []
        while True:
            ai = model.invoke(messages)
            messages.append(ai)
            if not ai.tool_calls:
                break
            for call in ai.tool_calls:
                tm = by_name[call["name"]].invoke(call)   # LangChain's own tool-call path
                assert isinstance(tm, ToolMessage) and tm.tool_call_id == call["id"]
                answers.append(tm.content)
                messages.append(tm)
        assert messages[-1].content == "done" and len(answers) == len(SCRIPT)
        _check_answers(answers)
        _check_workspace(sb)
        # bad arguments come back as text for the model, not as an exception
        bad = by_name["bash"].invoke({"name": "bash", "args": {"command": 5}, "id": "x", "type": "tool_call"})
        assert bad.content == "error: bash: argument 'command' must be a string, not int"


# ------------------------------------------------------------------ OpenAI Agents SDK
def _normalise_agents_schema(schema: dict) -> dict:
    # pydantic spells an optional number as anyOf [number, null] and adds titles
    out = {k: v for k, v in schema.items() if k != "title"}
    props = {}
    for name, prop in schema["properties"].items():
        prop = {k: v for k, v in prop.items() if k != "title"}
        if "anyOf" in prop:
            prop["type"] = [alt["type"] for alt in prop.pop("anyOf")]
        props[name] = prop
    out["properties"] = props
    return out


def test_openai_agents_schemas_round_trip():
    pytest.importorskip("agents")
    from agents import FunctionTool

    from agentic_bash.tools.openai_agents import openai_agents_tools

    with Sandbox(isolation="virtual") as sb:
        tools = openai_agents_tools(sb)
    assert [t.name for t in tools] == list(TOOL_NAMES)
    for t in tools:
        assert isinstance(t, FunctionTool) and t.strict_json_schema
        assert t.description == OURS[t.name]["description"]
        got = _normalise_agents_schema(t.params_json_schema)
        want = STRICT[t.name]
        assert got["properties"] == want["properties"]
        assert set(got["required"]) == set(want["required"]) and got["additionalProperties"] is False


def test_openai_agents_scripted_model_run():
    pytest.importorskip("agents.testing")
    from agents import Agent, RunConfig, Runner
    from agents.testing import ScriptedModel, assistant_message, function_call

    from agentic_bash.tools.openai_agents import openai_agents_tools

    steps = [[function_call(n, a, call_id=f"call{i}")] for i, (n, a) in enumerate(SCRIPT)]
    steps.append([function_call("bash", {"command": "exit 3", "timeout": None}, call_id="last")])
    steps.append([assistant_message("done")])
    model = ScriptedModel(steps)
    with Sandbox(isolation="virtual") as sb:
        agent = Agent(name="coder", instructions="use the tools", model=model, tools=openai_agents_tools(sb))
        result = Runner.run_sync(agent, "set up the app", run_config=RunConfig(tracing_disabled=True),
                                 max_turns=len(steps) + 1)
        assert result.final_output == "done"
        _check_workspace(sb)
    outputs = [item.output for item in result.new_items if getattr(item, "type", "") == "tool_call_output_item"]
    assert len(outputs) == len(SCRIPT) + 1
    _check_answers(outputs)
    assert outputs[-1] == "exit code: 3\n(no output)\ncwd: /workspace/app"
    # the model saw our tool definitions in the request the SDK built
    sent = {t.name for t in model.first_call.tools}
    assert sent == set(TOOL_NAMES)


# ------------------------------------------------------------------ pydantic-ai
def test_pydantic_ai_function_model_run():
    pytest.importorskip("pydantic_ai")
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from agentic_bash.tools.pydantic_ai import pydantic_ai_toolset

    seen_defs: dict = {}
    answers: list[str] = []

    def scripted(messages: list, info: AgentInfo) -> ModelResponse:
        seen_defs.update({d.name: d for d in info.function_tools})
        for part in messages[-1].parts:
            if isinstance(part, ToolReturnPart):
                answers.append(part.content)
        step = len(answers)
        if step < len(SCRIPT):
            name, args = SCRIPT[step]
            return ModelResponse(parts=[ToolCallPart(name, json.dumps(args), tool_call_id=f"c{step}")])
        return ModelResponse(parts=[TextPart("done")])

    with Sandbox(isolation="virtual") as sb:
        agent = Agent(FunctionModel(scripted), toolsets=[pydantic_ai_toolset(sb)])
        result = agent.run_sync("set up the app")
        assert result.output == "done"
        _check_workspace(sb)
    _check_answers(answers)
    # round trip: the definitions pydantic-ai hands a model carry our schemas unchanged
    assert sorted(seen_defs) == sorted(TOOL_NAMES)
    for name, d in seen_defs.items():
        assert d.parameters_json_schema == OURS[name]["parameters"]
        assert d.description == OURS[name]["description"]


def test_pydantic_ai_test_model_calls_every_tool():
    pytest.importorskip("pydantic_ai")
    from pydantic_ai import Agent
    from pydantic_ai.models.test import TestModel

    from agentic_bash.tools.pydantic_ai import pydantic_ai_toolset

    model = TestModel()   # calls every tool once with arguments generated from its schema
    with Sandbox(isolation="virtual") as sb:
        result = Agent(model, toolsets=[pydantic_ai_toolset(sb)]).run_sync("go")
    returns = [p for m in result.all_messages() for p in getattr(m, "parts", [])
               if type(p).__name__ == "ToolReturnPart"]
    assert sorted(p.tool_name for p in returns) == sorted(TOOL_NAMES)
    assert all(isinstance(p.content, str) and p.content for p in returns)
