"""One reader of /proc/<pid>/stat for the runner, its watchdog and the session sweep (hand-written: psutil's per-process objects cost too much on the per-run and 50 ms watchdog paths)."""

from __future__ import annotations

import os
from typing import Iterator

__all__ = ["PGRP", "PPID", "START", "STATE", "THREADS", "may_run", "processes", "stat_fields"]

# indexes into stat_fields(): proc(5)'s field numbers less 3 (pid and comm come before)
STATE, PPID, PGRP, THREADS, START = 0, 1, 2, 17, 19


def stat_fields(pid: int | str) -> list[bytes] | None:
    """The fields of /proc/<pid>/stat after the command name, which may itself hold spaces
    and ``)`` (so the split is at the last ``)``); None when the process is gone."""
    try:
        fields = _read_fields(pid)
    except OSError:
        return None
    return fields if len(fields) > START else None


def _read_fields(pid: int | str) -> list[bytes]:
    """The fields of /proc/<pid>/stat after the command name (OSError as open raises it)."""
    with open(f"/proc/{pid}/stat", "rb") as f:
        data = f.read()
    return data.rpartition(b")")[2].split()


def may_run(pid: int | str, start: str) -> bool:
    """Whether the process that started at ``start`` (stat's start time) may still hold
    ``pid``: False only when /proc says the pid is free, a zombie, or another process's. A
    stat that cannot be read for another reason (no descriptor or memory left) counts as
    running, so a sweep never removes what a live owner still uses."""
    try:
        fields = _read_fields(pid)
    except (FileNotFoundError, ProcessLookupError):
        return False
    except OSError:
        return True
    if len(fields) <= START:
        return True
    return fields[START].decode() == start and fields[STATE] != b"Z"


def processes() -> Iterator[tuple[int, list[bytes]]]:
    """(pid, stat_fields) of every process this /proc shows (none if /proc is unreadable)."""
    try:
        names = os.listdir("/proc")
    except OSError:
        return
    for d in names:
        if d.isdigit():
            f = stat_fields(d)
            if f is not None:
                yield int(d), f
