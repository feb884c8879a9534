"""readable(): select()'s contract without its fd < 1024 limit (hundreds of sandboxes)."""

from __future__ import annotations

import os
import resource
import select
import socket
import time

import pytest

from agentic_bash.isolation.fdwait import readable


def test_ready_and_not_ready():
    r, w = os.pipe()
    a, b = socket.socketpair()
    try:
        assert readable([r, a], 0) == []
        t = time.monotonic()
        assert readable([r], 0.05) == [] and time.monotonic() - t >= 0.04
        os.write(w, b"x")
        b.send(b"y")
        assert set(readable([r, a], 1)) == {r, a}    # objects come back as given
        b.close()
        os.read(r, 1)
        a.recv(1)
        assert readable([a], 1) == [a]                # EOF counts as readable
    finally:
        for fd in (r, w):
            os.close(fd)
        a.close()


def test_descriptors_above_1024():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 2100:
        pytest.skip(f"RLIMIT_NOFILE hard limit {hard}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 2100), hard))
    r, w = os.pipe()
    high = 2000
    os.dup2(r, high)
    try:
        with pytest.raises(ValueError):
            select.select([high], [], [], 0)          # what the host used to call
        assert readable([high], 0) == []
        os.write(w, b"x")
        assert readable([high], 1) == [high]
    finally:
        for fd in (r, w, high):
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
