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


def test_an_unreadable_directory_inside_is_removed_with_its_contents():
    """As a user without CAP_DAC_OVERRIDE, rmtree cannot open an overlay's mode-000 work dir:
    its onerror got ``os.open`` and called it with one argument (TypeError), which escaped
    the sweep of stale sessions and failed ``Sandbox()`` as an unprivileged user."""
    if os.geteuid() != 0:
        import pytest
        pytest.skip("needs root to act as another user")
    import pathlib
    import shutil
    import tempfile
    base = pathlib.Path(tempfile.mkdtemp(prefix="agb-rmtree-"))  # (pytest's tmp is 0700)
    os.chmod(base, 0o1777)
    try:
        _as_nobody(base)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _as_nobody(base) -> None:  # noqa: ANN001
    pid = os.fork()
    if pid == 0:  # the child is nobody, without DAC override
        code = 1
        try:
            os.setgid(65534)
            os.setuid(65534)
            top = base / "agentic-bash-session-2"
            deep = top / "upper" / "work" / "work" / "inner"
            deep.mkdir(parents=True)
            (deep / "f").write_text("x")
            os.chmod(top / "upper" / "work" / "work", 0)
            sandboxed._rmtree(str(top))
            code = 0 if not os.path.exists(top) else 2
        except BaseException:  # noqa: BLE001
            import traceback
            traceback.print_exc()
            code = 3
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
