"""After a pipeline of in-process stages nothing but the executor holds a run's budget and streams (no cycle keeps them)."""

from __future__ import annotations

import gc

import pytest

from agentic_bash import Sandbox


@pytest.mark.parametrize("script", [
    "echo hi | cat", "printf 'a1\\nb\\n' | grep -c a", "echo 5 | tr 0-9 a-j | wc -c",
    "printf 'x\\n' | sed s/x/y/", "echo a | grep a", "echo a | sort | uniq",
])
def test_pipeline_leaves_the_run_objects_free(script):
    """The executor reuses a run's budget, streams and fd table when only it holds them
    (InProcessExecutor._spare); a reference cycle through a pipe or a command's state
    held them until the next collection, so every such pipeline allocated new ones."""
    with Sandbox(isolation="virtual") as sb:
        ex = sb._ex
        was = gc.isenabled()
        gc.disable()  # (a collection in the middle would free a cycle and hide it)
        try:
            for i in range(3):
                r = sb.run(script.replace("1", str(i + 1)))
                assert r.exit_code == 0
                assert ex._spare is not None, script
        finally:
            if was:
                gc.enable()
