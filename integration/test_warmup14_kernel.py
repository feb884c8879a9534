"""sessions14: the runner's warm-up after ready leaves no trace in the shell or the sandbox (the
first commands see the same state with and without it) and takes the first echo's
copy-on-write faults; as root and as an unprivileged user."""

from __future__ import annotations

import pytest

from _support import sandbox_supported

ok, why = sandbox_supported()
pytestmark = [pytest.mark.skipif(not ok, reason=f"kernel sandbox unavailable: {why}"),
              pytest.mark.timeout(300)]


def _diff(a: list[dict], b: list[dict]) -> str:
    import difflib
    out = []
    for i, (x, y) in enumerate(zip(a, b)):
        for k in x:
            if x[k] != y[k]:
                out.append(f"run {i} {k}:")
                out += difflib.unified_diff(str(y[k]).splitlines(), str(x[k]).splitlines(),
                                            "without", "with", lineterm="", n=1)
    return "\n".join(out)


@pytest.mark.parametrize("who", ["root", "user"])
def test_warmup_leaves_no_trace(who: str, request: pytest.FixtureRequest) -> None:
    runner = request.getfixturevalue("as_root" if who == "root" else "as_user")
    got = {}
    for w in ("1", "0"):
        env = dict(runner.env, AGENTIC_BASH_RUNNER_WARMUP=w)
        saved, runner.env = runner.env, env
        try:
            got[w] = runner.script("_warmup14_check.py", timeout=240)
        finally:
            runner.env = saved
        assert "error" not in got[w], got[w]["error"]
    for kind in ("direct", "pooled"):
        on, off = got["1"][kind], got["0"][kind]
        assert on["first"] == off["first"] == ["hi\n", 0, ""]
        # every field of the first two results after `echo hi`: the whole shell state
        # (variables, $?, $_, LINENO, BASH_COMMAND, history, hash table, jobs, traps, options,
        # functions, aliases), the files, the processes (pids), the protections
        assert on["runs"] == off["runs"], (kind, _diff(on["runs"], off["runs"]))
        assert on["runs"][0]["exit_code"] == 0, on["runs"][0]
        assert "history" not in on["runs"][0]["stderr"], on["runs"][0]
        # the warm-up ran (the first echo found the zygote's pages it writes already
        # private: ~110 copy-on-write faults without it, ~30 with it)
        assert on["faults_first_echo"] + 30 < off["faults_first_echo"], (kind, on, off)
