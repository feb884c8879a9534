"""Removing a session's directory never changes the mode of anything outside it (its parent is the host's /tmp)."""

from __future__ import annotations

import errno
import os
import stat

from agentic_bash.executors import sandboxed


def test_a_failed_rmdir_of_the_root_leaves_its_parent_alone(tmp_path, monkeypatch):
    parent = tmp_path / "host-tmp"
    parent.mkdir()
    os.chmod(parent, 0o1777)
    top = parent / "agentic-bash-session-1"
    (top / "upper" / "work").mkdir(parents=True)
    os.chmod(top / "upper" / "work", 0)  # (overlay work dirs are made mode 000)
    real = os.rmdir

    def rmdir(p, *a, **kw):
        if os.path.abspath(p) == str(top):
            raise OSError(errno.EBUSY, "busy", str(p))  # (a mount still on it)
        return real(p, *a, **kw)

    monkeypatch.setattr(os, "rmdir", rmdir)
    sandboxed._rmtree(str(top))
    # before: the failure on the tree's own root chmodded its parent to 0700 (the host's
    # /tmp became drwx------ and unprivileged users lost it)
    assert stat.S_IMODE(os.stat(parent).st_mode) == 0o1777
    assert os.listdir(top) == []  # what could go inside did
