"""Scripts that pass a namespace sandbox's memory inside the interpreter (word lists of a 60 MB string) must end in a Result with a limit, never in SandboxCrashed (attack12 against contract12's budgets)."""

from __future__ import annotations

import os
from typing import Iterator

import pytest

from _support import sandbox_supported

import agentic_bash as ab
from agentic_bash.errors import SandboxCrashed

ok, why = sandbox_supported()
pytestmark = [pytest.mark.skipif(not ok, reason=f"kernel sandbox unavailable: {why}"),
              pytest.mark.skipif(os.geteuid() != 0, reason="the memory cgroup case: root"),
              pytest.mark.timeout(300)]

GEN = "python3 -c \"import sys; sys.stdout.write('a '*30000000)\""
"""60 MB of one-letter words (under max_variable_bytes, 64 MiB): 30M words once split."""

CASES = {
    "read_a": GEN + " | { read -r -a w; echo ${#w[@]}; }",
    "array_of_substitution": f"x=($({GEN})); echo ${{#x[@]}}",
    "set_positional": f"set -- $({GEN}); echo $#",
    "for_in_substitution": f"for w in $({GEN}); do :; done; echo ok",
}


@pytest.fixture(scope="module")
def sb() -> Iterator[ab.Sandbox]:
    with ab.Sandbox(limits=ab.Limits(max_memory_bytes=256 << 20, timeout=60)) as s:
        yield s


@pytest.mark.parametrize("name", list(CASES))
def test_word_lists_past_memory_end_in_a_result(sb: ab.Sandbox, name: str) -> None:
    # before (root, 256 MiB): each of these ended in SandboxCrashed after 3 s (30M words of
    # a 60 MB string: the list alone is 240 MB of pointers, the interpreter was OOM-killed)
    try:
        r = sb.run(CASES[name], timeout=60)
    except SandboxCrashed as e:
        sb.run("true", timeout=60)   # (the next call restarts it, for the next case)
        pytest.fail(f"SandboxCrashed escaped run(): {e}")
    assert r.exit_code != 0 and r.limit_exceeded is not None, (r.exit_code, r.limit_exceeded,
                                                                r.stderr[-500:])
    assert sb.run("echo alive", timeout=60).stdout == "alive\n"
