"""Reads of host device files and FIFOs that stay bounded: charged to the run's budget."""

from __future__ import annotations

import io
import os
import stat as _stat
from typing import Any

from ..limits import charge_read, check_size

__all__ = ["DeviceReader", "guard_special"]

CHUNK = 1 << 16
# Linux's memory devices (major 1) that never end: zero, full, random, urandom. A read of
# "everything" or of a line of them goes on forever, as on Linux; here it is charged per
# chunk, so max_variable_bytes or the deadline stops it (Python's own readall()/readline()
# on such a file is one uninterruptible C loop that grows until the host runs out).
_ENDLESS = {(1, 5), (1, 7), (1, 8), (1, 9)}


def guard_special(f: Any, st: os.stat_result) -> Any:
    """``f`` (an unbuffered FileIO on a device or FIFO) behind DeviceReader if it is read."""
    if not f.readable():
        return f
    endless = _stat.S_ISCHR(st.st_mode) and (os.major(st.st_rdev), os.minor(st.st_rdev)) in _ENDLESS
    return DeviceReader(f, endless)


class DeviceReader(io.RawIOBase):
    """A readable device or FIFO: ``read(-1)`` and ``readline()`` loop in Python chunk by
    chunk, charging the budget; a FIFO's line is read byte by byte (nothing past the newline
    is taken from the pipe); an endless device's in chunks (there is no position to lose)."""

    def __init__(self, raw: Any, endless: bool) -> None:
        self._raw = raw
        self._endless = endless
        self.name = getattr(raw, "name", "")
        self.mode = getattr(raw, "mode", "rb")

    def readable(self) -> bool:
        return True

    def writable(self) -> bool:
        return self._raw.writable()

    def seekable(self) -> bool:
        return False

    def isatty(self) -> bool:
        return self._raw.isatty()

    def fileno(self) -> int:
        return self._raw.fileno()

    def close(self) -> None:
        if not self.closed:
            self._raw.close()
        super().close()

    def write(self, b: Any) -> int:
        return self._raw.write(b)

    def read(self, size: int | None = -1) -> bytes:
        if size is not None and size >= 0:
            data = self._raw.read(min(size, CHUNK << 4)) or b""
            charge_read(len(data))
            return data
        parts = []
        total = 0
        while True:
            data = self._raw.read(CHUNK)
            if not data:
                return b"".join(parts)
            total += len(data)
            charge_read(len(data))
            check_size(total, f"read of {self.name}")
            parts.append(data)

    def readall(self) -> bytes:
        return self.read(-1)

    def read1(self, size: int = -1) -> bytes:
        return self.read(CHUNK if size is None or size < 0 else size)

    def readinto(self, b: Any) -> int:
        mv = memoryview(b).cast("B")
        data = self.read(len(mv))
        mv[:len(data)] = data
        return len(data)

    def readline(self, size: int | None = -1) -> bytes:
        limit = -1 if size is None else size
        raw = self._raw
        parts = []
        total = 0
        while limit < 0 or total < limit:
            want = CHUNK if limit < 0 else min(CHUNK, limit - total)
            if self._endless:
                data = raw.read(want) or b""
                k = data.find(b"\n")
                if k >= 0:
                    data = data[:k + 1]
            else:
                data = raw.read(1) or b""
            if not data:
                break
            parts.append(data)
            total += len(data)
            if not total & 0x3FFF or self._endless:
                charge_read(0x4000)
                check_size(total, f"line of {self.name}")
            if data.endswith(b"\n"):
                break
        return b"".join(parts)

    def __iter__(self) -> DeviceReader:
        return self

    def __next__(self) -> bytes:
        line = self.readline()
        if not line:
            raise StopIteration
        return line
