"""Path confinement of the runtime API and Sandbox.realpath, which it relies on."""

from __future__ import annotations

import pytest

from agentic_bash import Sandbox
from agentic_bash.server.paths import BadPath, Denied, confine


@pytest.mark.parametrize("given,want", [
    ("", "/app"), (".", "/app"), ("a/b", "/app/a/b"), ("/etc/passwd", "/app/etc/passwd"),
    ("a/../b", "/app/b"), ("//x//y/", "/app/x/y"), ("/app/../app", "/app/app"),
])
def test_confine_maps_below_the_base(given, want):
    assert confine(given, "/app") == want


@pytest.mark.parametrize("given", ["..", "../../etc/passwd", "/../etc/passwd", "a/../../app2",
                                   "x/../../../"])
def test_confine_refuses_escapes(given):
    with pytest.raises(Denied):
        confine(given, "/app")


def test_confine_refuses_nul():
    with pytest.raises(BadPath):
        confine("a\x00b", "/app")


@pytest.mark.parametrize("isolation", ["virtual", "namespace"])
def test_sandbox_realpath_resolves_as_the_sandbox_sees(isolation):
    try:
        sb = Sandbox(isolation, workdir="/workspace", strict=isolation != "virtual")
    except Exception as e:  # noqa: BLE001
        pytest.skip(f"{isolation} unavailable: {e}")
    with sb:
        sb.run("mkdir -p d/e; ln -s d/e l; ln -s /etc up; ln -s loop loop")
        assert sb.realpath("l") == "/workspace/d/e"
        assert sb.realpath("/workspace/l/missing/x") == "/workspace/d/e/missing/x"
        assert sb.realpath("up/passwd") == "/etc/passwd"
        assert sb.realpath("loop").startswith("/workspace/loop")
