"""The host's root is detached by pid 1 after it forks the runner (create12), and still before the runner is ready: at the first command it is gone and the top of the root is read-only; as root and as an unprivileged user, with and without S1."""

from __future__ import annotations

import os
import subprocess

import pytest

from _support import HERE, _parse, sandbox_supported

ok, why = sandbox_supported()
pytestmark = [pytest.mark.skipif(not ok, reason=f"kernel sandbox unavailable: {why}"),
              pytest.mark.timeout(300)]


@pytest.mark.parametrize("clone", [True, False], ids=["direct", "s1"])
@pytest.mark.parametrize("who", ["root", "user"])
def test_host_root_detached_before_ready(who: str, clone: bool,
                                         request: pytest.FixtureRequest) -> None:
    runner = request.getfixturevalue("as_root" if who == "root" else "as_user")
    env = dict(runner.env)
    if not clone:
        env["AGENTIC_BASH_ZYGOTE_CLONE"] = "0"
    p = subprocess.run(runner.prefix + [runner.python, os.path.join(HERE, "_create12_check.py")],
                       capture_output=True, text=True, env=env, cwd=runner.cwd, timeout=240)
    assert p.returncode == 0, f"{p.stdout[-3000:]}\n{p.stderr[-5000:]}"
    got = _parse(p.stdout)
    assert "error" not in got, got["error"]
    assert len(got["sandboxes"]) == 3, got
    for sb in got["sandboxes"]:
        # no mount of the host's root, no /.old-root, nothing creatable at the top, "/" ro
        assert sb["first"] == ["0\n1\n1\n1\n", 0], sb
        t = sb["timing"]
        # pid 1 detached it, and the runner had pid 1's word, before it said ready
        assert 0 < t["detached"] <= t["s2_done"] <= t["ready"], t
        assert t["rooted"] <= t["detached"], t
        assert sb["overlay_mounts"], sb
        assert not any(m.startswith("/.old-root") for m in sb["overlay_mounts"]), sb
        for m in ("mount_namespace", "overlay", "landlock", "seccomp", "caps_dropped"):
            assert sb["mechanisms"][m] == "enforced", sb["mechanisms"]
