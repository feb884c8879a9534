"""A /path command's binary is read once to rule out an in-process placeholder, again only after it changed."""

from __future__ import annotations

import os
import time

from agentic_bash.executors import inprocess as IP
from agentic_bash.executors.inprocess import InProcessExecutor
from agentic_bash.executors.native import NativeLauncher
from agentic_bash.limits import Limits
from agentic_bash.vfs.host import HostFS


def _settled(path: str) -> None:
    """Wait until the file's last change is older than the cache's settle window."""
    end = time.monotonic() + 10
    while time.time() - os.stat(path).st_ctime <= IP._SETTLED_S * 2 and time.monotonic() < end:
        time.sleep(0.02)


def test_binary_head_read_once_until_it_changes(tmp_path, monkeypatch) -> None:  # noqa: ANN001
    tool = tmp_path / "tool"
    tool.write_text("#!/bin/sh\necho one\n")
    tool.chmod(0o755)
    _settled(str(tool))
    native = NativeLauncher(pdeathsig=False)
    ex = InProcessExecutor(fs=HostFS("/", writable=True), native=native,
                           env={"PATH": "/usr/bin:/bin"}, workdir=str(tmp_path), limits=Limits())
    opened: list[str] = []
    real_open = HostFS.open
    monkeypatch.setattr(HostFS, "open", lambda self, p, *a, **k: opened.append(p)
                        or real_open(self, p, *a, **k))
    try:
        assert ex.run("./tool").stdout == "one\n"
        assert opened == [str(tool)]                 # read once, to rule out a placeholder
        assert ex.run("./tool; ./tool").stdout == "one\none\n"
        assert opened == [str(tool)]                 # not again while unchanged
        # rewritten in place (same inode) as a placeholder: read again, and refused as one
        tool.write_text("#!/bin/sh\n# tool: provided in-process by agentic-bash\n")
        r = ex.run("./tool")
        assert len(opened) == 2 and r.exit_code == 126, (opened, r)
        assert "in-process command is unavailable" in r.stderr
    finally:
        ex.close()
        native.close()
