"""Process ids for what runs in-process as if forked: subshells (BASHPID) and background jobs ($!)."""

from __future__ import annotations

import itertools
import os

# one increasing sequence, as the kernel's pids are (next() on it is atomic under the GIL)
_seq = itertools.count(1000)


def reserve() -> int:
    """The next number of the sequence, taken at a fork so that pids increase in fork order;
    ``checked`` vets it once it is used."""
    return next(_seq)


def checked(p: int | None) -> int:
    """``p``, or a later number of the sequence when a live process of this pid namespace
    has it (so ``kill`` of a subshell's BASHPID or a job's ``$!`` never names a real program)."""
    while p is None or os.path.exists(f"/proc/{p}"):
        p = next(_seq)
    return p


def new_pid() -> int:
    """A pid for something that starts now (a background job)."""
    return checked(next(_seq))
