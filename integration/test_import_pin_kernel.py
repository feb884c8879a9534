"""The runner's lazy imports work and stay ours after the workload chmods or seeds its import paths, as root and as an unprivileged user."""

from __future__ import annotations

import os
import subprocess

import pytest

from _support import HERE, _parse, sandbox_supported

ok, why = sandbox_supported()
pytestmark = [pytest.mark.skipif(not ok, reason=f"kernel sandbox unavailable: {why}"),
              pytest.mark.timeout(300)]


@pytest.mark.parametrize("who", ["root", "user"])
def test_lazy_imports_right_after_creation(who: str, request: pytest.FixtureRequest) -> None:
    runner = request.getfixturevalue("as_root" if who == "root" else "as_user")
    # no deferred warm-up in the zygote: every lazily imported module is imported by the
    # sandbox itself, after the workload has had its go at the import paths
    env = {**runner.env, "AGENTIC_BASH_ZYGOTE_WARMUP": "0"}
    p = subprocess.run(runner.prefix + [runner.python, os.path.join(HERE, "_import_pin_check.py")],
                       capture_output=True, text=True, env=env, cwd=runner.cwd, timeout=240)
    assert p.returncode == 0, f"{p.stdout[-3000:]}\n{p.stderr[-5000:]}"
    got = _parse(p.stdout)
    bad = {k: v for k, v in got["steps"].items() if v != "ok"}
    assert not bad, bad
    assert got["pwned"] == [], got           # no planted module ran in the runner
    imports = got["imports"]
    assert imports["pinned"] + imports["lower"] + imports["kept"] > 0, got
    if any(p.startswith("/usr/") for p in got["planted"]):
        # (root: /usr is a copy-on-write overlay the workload writes) the stdlib is
        # imported from the overlay's read-only lower
        assert imports["lower"] >= 1, got
    if who == "user":
        # the package's parent lies under the host's /tmp: in the sandbox a directory of its
        # /tmp, which the workload owns: seeded, then dropped from the runner's sys.path
        assert got["chmod"] == "0", got
        assert got["root_dirs"][0] in got["planted"], got
        assert imports["dropped"] >= 1 and imports["pinned"] >= 1, got
    assert got["read_file"] == "alpha\n", got
    assert {"a.txt", "up/b.txt"} <= set(got["download_names"]), got
    run = got["run"]
    assert run["exit"] == 0 and "internal error" not in run["err"], run
    assert run["out"].splitlines() == ["f () ", "a\\ b", "98ea6e4f", "1 2 3 ", "1", "6",
                                       "0000000   x  \\n", "[1]+  Running                 sleep 0.2 &",
                                       "done"], run
    assert "planter.py" in got["from_snapshot"].split(), got
    assert got["alive"] == "alive\n", got
