"""Hostile snapshots and tars are refused with SnapshotError and change nothing."""

from __future__ import annotations

import io
import tarfile

import pytest

from agentic_bash import Mount, Sandbox, SnapshotError
from agentic_bash.snapshot import fit_layout, read_snapshot


def tar_of(*members: tuple) -> bytes:
    """members: (name, kind, arg): kind f (arg=bytes), d, l (arg=target), h (arg=target),
    c (char device), b (block device)."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tf:
        for name, kind, arg in members:
            ti = tarfile.TarInfo(name)
            if kind == "f":
                ti.size = len(arg)
                tf.addfile(ti, io.BytesIO(arg))
                continue
            ti.type = {"d": tarfile.DIRTYPE, "l": tarfile.SYMTYPE, "h": tarfile.LNKTYPE,
                       "c": tarfile.CHRTYPE, "b": tarfile.BLKTYPE}[kind]
            if kind == "d":
                ti.mode = 0o755
            if kind in ("l", "h"):
                ti.linkname = arg
            if kind in ("c", "b"):
                ti.devmajor, ti.devminor = 1, 3
            tf.addfile(ti)
    return out.getvalue()


HOSTILE = {
    "dotdot": tar_of(("workspace/../../x", "f", b"x")),
    "dotdot_first": tar_of(("../x", "f", b"x")),
    "absolute": tar_of(("/etc/evil", "f", b"x")),
    "symlink_then_file": tar_of(("workspace/l", "l", "/etc"), ("workspace/l/passwd", "f", b"x")),
    "symlink_then_dir": tar_of(("workspace/l", "l", "../.."), ("workspace/l/d", "d", None)),
    "char_device": tar_of(("workspace/null", "c", None)),
    "block_device": tar_of(("workspace/sda", "b", None)),
    "hardlink_out": tar_of(("workspace/h", "h", "/etc/passwd")),
    "hardlink_dotdot": tar_of(("workspace/h", "h", "../../etc/passwd")),
    "truncated": tar_of(("workspace/big", "f", b"y" * 5000))[:1500],
    "bad_state": tar_of((".agentic-bash/state.json", "f", b"{not json"), ("workspace/ok", "f", b"1")),
    "not_a_tar": b"this is not a tar archive at all" * 40,
}


def session_fingerprint(sb: Sandbox) -> tuple:
    r = sb.run('echo "$KEEP"; pwd; ls -A /workspace; cat /workspace/keep')
    return r.stdout, sb.exists("/etc/evil"), sb.exists("/x")


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_restore_refuses_and_changes_nothing(name):
    with Sandbox(isolation="virtual") as sb:
        sb.run("KEEP=1; echo k > /workspace/keep; cd /tmp")
        before = session_fingerprint(sb)
        with pytest.raises(SnapshotError):
            sb.restore(HOSTILE[name])
        assert session_fingerprint(sb) == before
        assert not sb.exists("/workspace/ok")


@pytest.mark.parametrize("name", sorted(n for n in HOSTILE if n != "bad_state"))
def test_upload_tar_refuses_and_writes_nothing(name):
    with Sandbox(isolation="virtual") as sb:
        sb.write_file("/workspace/keep", b"k")
        with pytest.raises(SnapshotError):
            sb.upload_tar(io.BytesIO(HOSTILE[name]), "/workspace/up")
        assert [f.name for f in sb.list_files("/workspace")] in (["keep"], ["keep", "up"])
        assert not sb.exists("/etc/evil") and not sb.exists("/workspace/up/ok")


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_host_side_validation_for_the_sandboxed_mode(name):
    # what restore() checks on the host before a sandbox process is started
    with pytest.raises(SnapshotError):
        read_snapshot(HOSTILE[name])


def test_from_snapshot_refuses_hostile():
    with pytest.raises(SnapshotError):
        Sandbox.from_snapshot(HOSTILE["symlink_then_file"], isolation="virtual")


def test_write_through_existing_symlink_in_lower_refused(tmp_path):
    (tmp_path / "lnk").symlink_to("/etc")
    data = tar_of(("workspace/lnk/evil", "f", b"x"))
    with Sandbox(isolation="virtual", mounts={"/workspace": Mount(str(tmp_path))}) as sb:
        with pytest.raises(SnapshotError):
            sb.restore(data)
        assert not sb.exists("/etc/evil")


def test_symlinks_are_stored_and_restored_as_they_are():
    data = tar_of(("workspace/venv", "d", None), ("workspace/venv/bin", "d", None),
                  ("workspace/venv/bin/python3", "l", "/usr/bin/python3"),
                  ("workspace/up", "l", "../../../etc"))
    with Sandbox.from_snapshot(data, isolation="virtual") as sb:
        assert sb.run("readlink venv/bin/python3 up").stdout == "/usr/bin/python3\n../../../etc\n"


def test_caps_on_entries_and_bytes():
    data = tar_of(*[(f"workspace/f{i}", "f", b"0123456789") for i in range(20)])
    with Sandbox(isolation="virtual") as sb:
        sb.run("KEEP=1")
        with pytest.raises(SnapshotError, match="entries"):
            sb.restore(data, max_entries=10)
        with pytest.raises(SnapshotError, match="bytes"):
            sb.restore(data, max_bytes=100)
        assert not sb.exists("/workspace/f0")
        sb.restore(data, max_entries=25, max_bytes=1000)
        assert sb.exists("/workspace/f19")
    with pytest.raises(SnapshotError):
        Sandbox.from_snapshot(data, isolation="virtual", max_entries=5)
    with pytest.raises(SnapshotError):
        read_snapshot(data, max_entries=5)


def test_layout_fit_for_a_sandbox_drops_layout_dirs_and_names_blocked_paths():
    ok = tar_of(("home", "d", None), ("home/user", "d", None), ("home/user/.rc", "f", b"rc"),
                ("workspace", "d", None), ("workspace/a", "f", b"a"), ("tmp", "d", None),
                ("workspace/.wh.gone", "f", b""))
    writable = ["/home/user", "/tmp", "/workspace"]
    fitted = fit_layout(read_snapshot(ok), writable)
    names = tarfile.open(fileobj=io.BytesIO(fitted)).getnames()
    assert names == ["home/user/.rc", "workspace/a", "workspace/.wh.gone"]
    bad = tar_of(("usr/local/bin/tool", "f", b"x"), ("etc/.wh.hosts", "f", b""), ("workspace/a", "f", b"a"))
    with pytest.raises(SnapshotError) as ei:
        fit_layout(read_snapshot(bad), writable)
    assert "/usr/local/bin/tool" in str(ei.value) and "/etc/hosts" in str(ei.value)
    assert "/workspace/a" not in str(ei.value)
