"""jq programs super-linear in their input run in the worker, which the deadline stops: none of them freezes the host process in libjq past its timeout (review12)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from agentic_bash.commands.jqcmd import _light

# in a child process: before the fix each froze its interpreter (libjq holds the GIL) for
# minutes or for good, well past the run's 1 s timeout
_CHILD = r"""
import json, sys, time
import agentic_bash as ab
cases = [
    ("jq -n '\"\\(last(range(1e9)))\"'", None),                      # a loop inside a string
    ("jq '[.[] as $x | .[] as $y | .[] as $z | 1] | length' /w/flat.json", None),
    ("jq -n --argjson a \"$(cat /w/flat.json)\" '[$a[] | $a[] | $a[]] | length'", None),
    ("jq '[tostream] | length' /w/deep.json", None),
]
out = []
with ab.Sandbox(isolation="virtual") as sb:
    sb.write_file("/w/flat.json", "[" + ",".join(["0"] * 20000) + "]")
    sb.write_file("/w/deep.json", "[" * 9999 + "]" * 9999)
    for script, _ in cases:
        t = time.monotonic()
        r = sb.run(script, timeout=1)
        out.append([script, r.exit_code, r.limit_exceeded, round(time.monotonic() - t, 2)])
print(json.dumps(out))
"""


def test_super_linear_programs_end_at_the_deadline() -> None:
    p = subprocess.run([sys.executable, "-c", _CHILD], capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    for script, code, exceeded, took in json.loads(p.stdout.strip().splitlines()[-1]):
        # stopped at the deadline (124), or by the worker's memory cap (`jq: memory exhausted`)
        assert code in (124, 1) and took < 30, (script, code, exceeded, took)


@pytest.mark.parametrize("prog,light", [
    (".a", True), (".[] | .name", True), ("map(.a)", True), (".a = 1", True), ("$name", True),
    ('"hello \\(.name)"', True), ("[.[] | tostring] | join(\",\")", True), ("$ENV.HOME", True),
    ('"\\(last(range(3e7)))"', False), (". as $a | .[] | $a[]", False),
    ("[$a[] | $a[]] | length", False), ("[paths] | length", False), ("[tostream]", False),
    ("(..|numbers) |= .+1", False), ("del(..|nulls)", False),
])
def test_what_runs_in_process(prog: str, light: bool) -> None:
    assert _light(prog, 100) is light
