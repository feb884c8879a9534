"""The offline agent loops in examples/ run in CI: one per schema flavour."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("name", ["openai_agent_loop", "anthropic_agent_loop"])
def test_example_loop_reaches_the_final_workspace(name, capsys):
    mod = _load(name)
    messages = mod.main("virtual")
    final = messages[-1]
    text = final["content"] if isinstance(final["content"], str) else final["content"][0]["text"]
    assert text == mod.FINAL
    assert "assistant: " + mod.FINAL in capsys.readouterr().out


@pytest.mark.parametrize("name", ["openai_agent_loop", "anthropic_agent_loop"])
def test_example_loop_notices_an_unexpected_tool_result(name):
    mod = _load(name)
    calls, _ = mod.SCRIPT[0]
    wrong = [(calls, "this text is not in any result")]
    from agentic_bash import Sandbox
    with Sandbox(isolation="virtual") as sb, pytest.raises(AssertionError, match="expected 'this text"):
        mod.agent_loop(mod.ScriptedModel(wrong, "x"), sb, "task")


def test_example_runs_as_a_script_in_a_kernel_sandbox():
    from agentic_bash.isolation.probe import probe
    caps = probe()
    if not (caps.user_namespace and caps.overlay_userns):
        pytest.skip("user namespaces are unavailable here")
    p = subprocess.run([sys.executable, str(EXAMPLES / "openai_agent_loop.py"), "namespace"],
                       capture_output=True, timeout=120)
    assert p.returncode == 0, p.stderr.decode()
    assert p.stdout.decode().rstrip().endswith(_load("openai_agent_loop").FINAL)
