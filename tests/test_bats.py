"""bats-core (a large real-world bash program) runs inside a virtual Sandbox exactly as on the host.

bats leans on errexit inside functions, `set "-$flags"` round trips of ``$-``, DEBUG traps
firing before EXIT, BASH_LINENO/BASH_SOURCE stacks and scripts found in ``$PATH``, so a
passing and a failing test file must produce the TAP output real bats prints.
"""

from __future__ import annotations

import os
import subprocess

import pytest

from agentic_bash import Mount, Sandbox

BATS_ROOT = "/usr"  # Debian's bats: /usr/bin/bats, /usr/libexec/bats-core, /usr/lib/bats-core

SCRIPT = """#!/usr/bin/env bash
greet() {
  if [[ $# -ne 1 ]]; then echo "Usage: greet.sh <name>"; return 1; fi
  local who=${1^}
  printf 'Hello, %s!\\n' "$who"
}
greet "$@"
"""

TESTS = """#!/usr/bin/env bats
setup() { export GREETING_RUNS=$((${GREETING_RUNS:-0} + 1)); }

@test "greets by name" {
  run bash greet.sh alice
  [ "$status" -eq 0 ]
  [ "$output" = "Hello, Alice!" ]
}

@test "usage without a name" {
  run bash greet.sh
  [ "$status" -eq 1 ]
  [[ $output == Usage* ]]
}

@test "a failing assertion is reported with its line" {
  run bash greet.sh bob
  [ "$output" = "Hello, Alice!" ]
}

@test "skip is honoured" {
  skip "not today"
  false
}

@test "lines array" {
  run printf 'a\\nb\\n'
  [ "${#lines[@]}" -eq 2 ]
  [ "${lines[1]}" = b ]
}
"""


def _host_bats(tmp_path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["/usr/bin/bats", "greet.bats"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path),
                                                       "LANG": "C.UTF-8", "TERM": "dumb"})


@pytest.mark.skipif(not os.path.exists("/usr/libexec/bats-core/bats"), reason="bats is not installed (.ci/run installs it)")
def test_bats_suite_matches_host_bats(tmp_path) -> None:
    (tmp_path / "greet.sh").write_text(SCRIPT)
    (tmp_path / "greet.bats").write_text(TESTS)
    host = _host_bats(tmp_path)
    assert "not ok 3" in host.stdout  # the fixture really has one failing test
    # the host's /usr (read-only) holds bin/bats, libexec/bats-core and lib/bats-core in the
    # layout the launcher expects relative to itself
    with Sandbox(isolation="virtual", mounts={"/opt/bats": Mount(BATS_ROOT, mode="ro"),
                                              "/workspace": str(tmp_path)}) as sb:
        r = sb.run("cd /workspace && bash /opt/bats/bin/bats greet.bats", timeout=120)
    assert (r.stdout, r.exit_code) == (host.stdout, host.returncode), r.stderr
