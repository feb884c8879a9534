"""make_result builds the same frozen Result as the dataclass constructor."""

from __future__ import annotations

import dataclasses

import pytest

from agentic_bash.result import Result, make_result


def test_make_result_equals_constructor_and_is_frozen() -> None:
    args = (b"out", b"err", 3, 0.25, True, False, "/w", ("/a",), ("/b",), ("/c",), ())
    fast = make_result(*args)
    slow = Result(stdout_bytes=b"out", stderr_bytes=b"err", exit_code=3, duration=0.25,
                  timed_out=True, truncated=False, cwd="/w", files_created=("/a",),
                  files_modified=("/b",), files_deleted=("/c",), violations=())
    assert type(fast) is Result
    assert fast == slow
    assert fast.extra == {} and fast.extra is not make_result(*args).extra
    with pytest.raises(dataclasses.FrozenInstanceError):
        fast.exit_code = 0  # type: ignore[misc]
    assert dataclasses.replace(fast, exit_code=0).exit_code == 0
    assert fast.stdout == "out" and not fast.ok
