"""Namespace mode: a file-API change between runs is no run's change; a background process's still is."""

from __future__ import annotations

import time

import pytest


def _namespace_ok() -> bool:
    from agentic_bash.isolation.plan import plan
    from agentic_bash.isolation.probe import probe
    return plan("namespace", probe()).level == "namespace"


@pytest.mark.skipif(not _namespace_ok(), reason="no user namespaces here")
def test_file_api_writes_are_not_reported_by_the_next_native_run() -> None:
    import agentic_bash as ab
    with ab.Sandbox(isolation="namespace") as sb:
        sb.write_file("/workspace/sub/f.txt", b"x")
        r = sb.run("/bin/true; echo y > /workspace/g")
        assert "/workspace/sub/f.txt" not in r.files_created
        assert "/workspace/g" in r.files_created
        sb.remove("/workspace/g")
        r = sb.run("/bin/true")
        assert "/workspace/g" not in r.files_deleted
        started = sb.run("(sleep 0.2; /bin/sh -c 'echo z > /workspace/bg') &")
        deadline = time.monotonic() + 20
        while not sb.exists("/workspace/bg") and time.monotonic() < deadline:
            time.sleep(0.05)
        sb.write_file("/workspace/h", b"1")
        r = sb.run("/bin/true")
        # written by a process: reported by the run that started it (which waits a moment for
        # its job tree) or else by the next one, never absorbed by the file API's write
        assert "/workspace/bg" in started.files_created + r.files_created
        assert "/workspace/h" not in r.files_created   # written by the file API
