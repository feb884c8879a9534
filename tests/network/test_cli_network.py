"""CLI --network and --allow: mapped onto Sandbox(network=...), bad values rejected with status 2."""

from __future__ import annotations

import subprocess
import sys

import pytest
import typer

from agentic_bash.cli import sandbox_kwargs
from agentic_bash.network import NetworkPolicy

BASE = {"isolation": "virtual", "env": [], "mount": [], "workdir": None, "timeout": None,
        "strict": False}


def test_options_map_to_policy() -> None:
    assert "network" not in sandbox_kwargs({**BASE, "network": None, "allow": []})
    assert sandbox_kwargs({**BASE, "network": "deny", "allow": []})["network"] == "deny"
    p = sandbox_kwargs({**BASE, "network": None, "allow": ["*.x.test", "10.0.0.0/8:443"]})
    assert p["network"] == NetworkPolicy(allow=["*.x.test", "10.0.0.0/8:443"])
    with pytest.raises(typer.BadParameter):
        sandbox_kwargs({**BASE, "network": "deny", "allow": ["x.test"]})


@pytest.mark.parametrize("args", [["--network", "bogus"], ["--allow", "a.*"],
                                  ["--allow", "x.test:99999"]])
def test_bad_values_are_usage_errors(args: list[str]) -> None:
    p = subprocess.run([sys.executable, "-m", "agentic_bash", "run", "-i", "virtual", *args,
                        "-c", "true"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "Invalid value" in p.stderr, p.stderr
