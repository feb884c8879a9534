"""runner15: a clean non-empty upper is not read after a program, and every change a
program makes in it is still reported by the run that made it (a store through a shared
mapping held by a background program included, in a directory that program made before any
scan watched it); as root and as an unprivileged user. The same script gives the same
lists on the session-start tree, which reads every non-empty upper after every program."""

from __future__ import annotations

import pytest

from _support import sandbox_supported

ok, why = sandbox_supported()
pytestmark = [pytest.mark.skipif(not ok, reason=f"kernel sandbox unavailable: {why}"),
              pytest.mark.timeout(400)]

W = "/workspace/p"
NONE: list = [[], [], [], 0]
WANT = {
    "setup": [[f"{W}/a/f1", f"{W}/a/f2", f"{W}/b/f3", f"{W}/b/h"], [], [], 0],
    "true": NONE,
    "touch": [[], [f"{W}/a/f1"], [], 0],
    "append": [[], [f"{W}/b/f3"], [], 0],
    "mv": [[f"{W}/b/f2"], [], [f"{W}/a/f2"], 0],
    "rm": [[], [], [f"{W}/b/h"], 0],
    "read": NONE,
    "mapped": [[], [f"{W}/a/f1"], [], 0],   # (the mapper sets its times first)
    "true_while_mapped": NONE,
    "mapped_write": [[], [f"{W}/a/f1"], [], 0],
    "new_dir": [[f"{W}/new/m"], [], [], 0],
    "new_dir_write": [[], [f"{W}/new/m"], [], 0],
    "after_kill": NONE,
    "late": [[f"{W}/new/late"], [], [], 0],
    "quiet": [NONE, NONE, NONE],
}


@pytest.mark.parametrize("who", ["root", "user"])
def test_layer_changes_stay_exact(who: str, request: pytest.FixtureRequest) -> None:
    runner = request.getfixturevalue("as_root" if who == "root" else "as_user")
    got = runner.script("_runner15_check.py", timeout=380)
    assert "error" not in got, got["error"]
    assert got == WANT, {k: (got.get(k), v) for k, v in WANT.items() if got.get(k) != v}
