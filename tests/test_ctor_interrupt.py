"""Ctrl-C after the sandbox exists but before Sandbox() returns closes it (no session dir left)."""

from __future__ import annotations

import pytest

import agentic_bash as ab
from agentic_bash import session as session_mod
from agentic_bash import telemetry


@pytest.mark.parametrize("level", ["namespace"])
def test_an_interrupt_late_in_the_constructor_closes_the_sandbox(level, monkeypatch):
    made = []
    real = session_mod._make_executor

    def make(*a, **kw):  # noqa: ANN002, ANN003
        got = real(*a, **kw)
        made.append(got[0])
        return got

    def interrupted():
        raise KeyboardInterrupt

    monkeypatch.setattr(session_mod, "_make_executor", make)
    monkeypatch.setattr(telemetry, "active", interrupted)
    try:
        with pytest.raises(KeyboardInterrupt):
            ab.Sandbox(level)
    except ab.IsolationUnavailable:
        pytest.skip(f"{level} unavailable")
    assert len(made) == 1
    ex = made[0]
    if level == "namespace":
        # before: nothing closed it; its process, session dir and cgroups stayed
        assert ex._closed and ex._session_dir is None
        with pytest.raises(ab.SandboxClosed):
            ex.run("echo hi")
