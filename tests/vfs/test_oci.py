"""OCI layer export/import: round trips, ``tar`` compatibility, hostile archives, scale."""

from __future__ import annotations

import io
import os
import subprocess
import tarfile
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentic_bash.errors import SnapshotError
from agentic_bash.vfs.layout import build_virtual_fs
from agentic_bash.vfs.memory import MemoryFS
from agentic_bash.vfs.oci import export_layer, export_tar, import_layer, import_tar
from agentic_bash.vfs.overlay import OverlayFS

from .test_differential import apply
from .test_overlay_props import build, build_ops, more_ops, tree


def write(fs, p, data=b"", mode="wb"):
    with fs.open(p, mode) as f:
        f.write(data)


def exported(fs, **kw) -> bytes:
    buf = io.BytesIO()
    export_layer(fs, buf, **kw)
    return buf.getvalue()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lower_ops=build_ops, seq=st.lists(more_ops, max_size=25))
def test_export_import_round_trip(lower_ops, seq):
    lower = MemoryFS(check_permissions=False)
    build(lower, lower_ops)
    ov = OverlayFS(MemoryFS(check_permissions=False), [lower])
    build(ov, seq)
    data = exported(ov, extra_members={".agentic-bash/state.json": b'{"v": 1}'})
    fresh = OverlayFS(MemoryFS(check_permissions=False), [lower])
    extras = import_layer(io.BytesIO(data), fresh)
    assert extras == {".agentic-bash/state.json": b'{"v": 1}'}
    assert tree(fresh, with_times=True) == tree(ov, with_times=True)
    # and the re-export of the restored layer is the same archive
    assert exported(fresh, extra_members={".agentic-bash/state.json": b'{"v": 1}'}) == data


def test_unchanged_lower_files_are_not_exported():
    fs, info = build_virtual_fs(None, ["cat", "ls"])
    write(fs, "/workspace/new", b"n")
    fs.unlink("/usr/bin/ls")
    names = tarfile.open(fileobj=io.BytesIO(exported(fs))).getnames()
    assert "workspace/new" in names and "usr/bin/.wh.ls" in names
    assert not any(n.endswith("bin/cat") or n.startswith("etc") for n in names)


def test_tar_tf_reads_the_export(tmp_path):
    fs, _ = build_virtual_fs(None, ["cat"])
    write(fs, "/workspace/a b.txt", "ünïcode".encode())
    fs.symlink("/usr/bin/python3", "/workspace/py")
    fs.link("/workspace/a b.txt", "/workspace/hard")
    fs.rmdir("/srv")
    fs.mkdir("/srv")
    fs.unlink("/etc/hostname")
    p = tmp_path / "layer.tar"
    p.write_bytes(exported(fs, extra_members={".agentic-bash/state.json": b"{}"}))
    out = subprocess.run(["tar", "tf", str(p)], capture_output=True, text=True, check=True).stdout.split("\n")
    for want in ("workspace/a b.txt", "workspace/py", "workspace/hard", "srv/.wh..wh..opq",
                 "etc/.wh.hostname", ".agentic-bash/state.json"):
        assert want in out
    x = tmp_path / "x"
    x.mkdir()
    subprocess.run(["tar", "xf", str(p), "-C", str(x)], check=True)
    assert (x / "workspace" / "a b.txt").read_bytes() == "ünïcode".encode()
    assert os.readlink(x / "workspace" / "py") == "/usr/bin/python3"
    assert os.stat(x / "workspace" / "hard").st_ino == os.stat(x / "workspace" / "a b.txt").st_ino


def _tar(*members) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tf:
        for m in members:
            if isinstance(m, tuple):
                ti, data = m
                ti.size = len(data)
                tf.addfile(ti, io.BytesIO(data))
            else:
                tf.addfile(m)
    return buf.getvalue()


def _ti(name, type=tarfile.REGTYPE, linkname="", mode=0o644):
    ti = tarfile.TarInfo(name)
    ti.type = type
    ti.linkname = linkname
    ti.mode = mode
    return ti


def _hostile():
    ok = (_ti("workspace/ok.txt"), b"fine")
    return {
        "dotdot": _tar(ok, (_ti("workspace/../../etc/x"), b"x")),
        "absolute": _tar(ok, (_ti("/etc/passwd"), b"x")),
        "symlink-then-file": _tar(ok, _ti("workspace/l", tarfile.SYMTYPE, "/etc"), (_ti("workspace/l/passwd"), b"x")),
        "through-existing-symlink": _tar(ok, (_ti("bin/evil"), b"x")),
        "file-then-child": _tar(ok, (_ti("workspace/f"), b"1"), (_ti("workspace/f/x"), b"2")),
        # (the parent checks remember parents that passed: a sibling's passing is no pass here)
        "file-then-child-after-siblings": _tar(ok, (_ti("workspace/d/a"), b"1"), (_ti("workspace/d/f"), b"1"),
                                               (_ti("workspace/d/b"), b"1"), (_ti("workspace/d/f/x"), b"2")),
        "through-existing-symlink-after-sibling": _tar((_ti("usr/x"), b"1"), (_ti("bin/evil"), b"x")),
        "chardev": _tar(ok, _ti("workspace/null", tarfile.CHRTYPE)),
        "blockdev": _tar(ok, _ti("workspace/sda", tarfile.BLKTYPE)),
        "hardlink-escape": _tar(ok, _ti("workspace/h", tarfile.LNKTYPE, "../../etc/shadow")),
        "hardlink-absolute": _tar(ok, _ti("workspace/h", tarfile.LNKTYPE, "/etc/shadow")),
        "hardlink-to-missing": _tar(ok, _ti("workspace/h", tarfile.LNKTYPE, "etc/hosts")),
        "whiteout-dotdot": _tar(ok, _ti("workspace/.wh..."), ),
        "truncated": _tar(ok, (_ti("workspace/big"), b"y" * 5000))[:1536],
        "garbage": b"\x00garbage" * 300,
        "too-many": _tar(*[(_ti(f"workspace/f{i}"), b"") for i in range(20)]),
        "too-big": _tar((_ti("workspace/a"), b"a" * 600), (_ti("workspace/b"), b"b" * 600)),
    }


@pytest.mark.parametrize("case", sorted(_hostile()))
def test_hostile_layers_are_refused_and_nothing_is_written(case):
    fs, info = build_virtual_fs(None, ["cat"])
    before = tree(fs)
    with pytest.raises(SnapshotError):
        import_layer(io.BytesIO(_hostile()[case]), fs, max_entries=10, max_bytes=1000)
    assert tree(fs) == before
    assert info.upper.listdir("/") == []


def test_symlinks_are_restored_not_followed():
    fs, info = build_virtual_fs(None, [])
    data = _tar(_ti("workspace/venv/bin/python3", tarfile.SYMTYPE, "/usr/bin/python3"),
                _ti("workspace/up", tarfile.SYMTYPE, "../../../../etc"))
    import_layer(io.BytesIO(data), fs)
    assert fs.readlink("/workspace/venv/bin/python3") == "/usr/bin/python3"
    assert fs.readlink("/workspace/up") == "../../../../etc"


def test_existing_symlink_is_replaced_not_written_through():
    fs, info = build_virtual_fs(None, [])
    write(fs, "/workspace/target", b"keep")
    fs.symlink("target", "/workspace/l")
    import_layer(io.BytesIO(_tar((_ti("workspace/l"), b"new"))), fs)
    assert fs.stat("/workspace/l", follow_symlinks=False).is_file
    with fs.open("/workspace/target") as f:
        assert f.read() == b"keep"


def test_streamed_unseekable_input():
    fs, _ = build_virtual_fs(None, [])
    write(fs, "/workspace/a", b"x" * 100)
    data = exported(fs)
    r, w = os.pipe()
    os.write(w, data)
    os.close(w)
    fresh, _ = build_virtual_fs(None, [])
    with os.fdopen(r, "rb") as pipe:
        import_layer(pipe, fresh)
    with fresh.open("/workspace/a") as f:
        assert f.read() == b"x" * 100


def test_limits_are_checked_before_writing():
    from agentic_bash.limits import Limits

    fs, _ = build_virtual_fs(None, [])
    write(fs, "/workspace/big", b"x" * 5000)
    small, info = build_virtual_fs(None, [], limits=Limits(max_fs_bytes=1000))
    with pytest.raises(SnapshotError):
        import_layer(io.BytesIO(exported(fs)), small)
    assert info.upper.listdir("/") == []


def test_plain_tar_round_trip_and_refusals(tmp_path):
    fs, _ = build_virtual_fs(None, [])
    fs.mkdir("/workspace/src")
    write(fs, "/workspace/src/a.py", b"print(1)")
    fs.symlink("src/a.py", "/workspace/link")
    buf = io.BytesIO()
    export_tar(fs, "/workspace", buf)
    names = tarfile.open(fileobj=io.BytesIO(buf.getvalue())).getnames()
    assert sorted(names) == ["link", "src", "src/a.py"]
    other, _ = build_virtual_fs(None, [])
    import_tar(io.BytesIO(buf.getvalue()), other, "/home/user/dl")
    with other.open("/home/user/dl/src/a.py") as f:
        assert f.read() == b"print(1)"
    assert other.readlink("/home/user/dl/link") == "src/a.py"
    before = tree(other)
    with pytest.raises(SnapshotError):
        import_tar(io.BytesIO(_hostile()["dotdot"]), other, "/workspace")
    with pytest.raises(SnapshotError):
        import_tar(io.BytesIO(_tar(_ti("x", tarfile.SYMTYPE, "/etc"), (_ti("x/passwd"), b"1"))), other, "/workspace")
    assert tree(other) == before


def test_hundred_thousand_entries_import_in_reasonable_time():
    from agentic_bash.vfs.oci import _TarWriter

    n = 100_000
    buf = io.BytesIO()
    tw = _TarWriter(buf)  # tarfile takes ~10 s to write this many members on a busy CI box
    for d in range(100):
        tw.add(f"workspace/d{d}", b"5", 0o755)
    for i in range(n - 100):
        tw.add(f"workspace/d{i % 100}/f{i}", b"0", 0o644, data=b"x")
    tw.close()
    fs, _ = build_virtual_fs(None, [])
    buf.seek(0)
    t = time.perf_counter()
    import_layer(buf, fs)
    assert time.perf_counter() - t < 60  # ~2 s idle here
    assert len(fs.listdir("/workspace/d7")) == (n - 100) // 100


def test_apply_sequence_semantics():
    # restoring over a session that already diverged: the layer wins where it says something
    lower = MemoryFS(check_permissions=False)
    lower.mkdir("/d")
    write(lower, "/d/x", b"lower")
    src = OverlayFS(MemoryFS(check_permissions=False), [lower])
    apply(src, ("unlink", "/d/x"))
    data = exported(src)
    dst = OverlayFS(MemoryFS(check_permissions=False), [lower])
    write(dst, "/d/y", b"upper")
    import_layer(io.BytesIO(data), dst)
    assert sorted(dst.listdir("/d")) == ["y"]


def test_restore_through_mounts(tmp_path):
    ro = tmp_path / "ro"
    rw = tmp_path / "rw"
    ro.mkdir()
    rw.mkdir()
    (ro / "f").write_bytes(b"ro")
    layout = {"/data": (str(ro), "ro"), "/out": (str(rw), "rw")}
    fs, info = build_virtual_fs(layout, [])
    write(fs, "/workspace/a", b"A")
    data = exported(fs)  # MountFS is accepted; only the session layer is exported
    assert tarfile.open(fileobj=io.BytesIO(data)).getnames() == ["workspace", "workspace/a"]
    fresh, finfo = build_virtual_fs(layout, [])
    import_layer(io.BytesIO(data), fresh)
    with fresh.open("/workspace/a") as f:
        assert f.read() == b"A"
    # entries for an rw mount go to the host dir; a read-only mount refuses, naming paths, writing nothing
    import_layer(io.BytesIO(_tar((_ti("out/x"), b"X"), (_ti("workspace/new/deep/y"), b"Y"))), fresh)
    assert (rw / "x").read_bytes() == b"X"
    with fresh.open("/workspace/new/deep/y") as f:
        assert f.read() == b"Y"
    before = tree(fresh)
    with pytest.raises(SnapshotError, match="/data/g"):
        import_layer(io.BytesIO(_tar((_ti("workspace/b"), b"B"), (_ti("data/g"), b"G"))), fresh)
    assert tree(fresh) == before and sorted(os.listdir(ro)) == ["f"]


def test_skip_devices_and_write_atomic(tmp_path):
    from agentic_bash.vfs.oci import write_atomic

    data = _tar(_ti("dev/console", tarfile.CHRTYPE), (_ti("etc/os-release"), b"x"))
    fs, _ = build_virtual_fs(None, [])
    with pytest.raises(SnapshotError):
        import_tar(io.BytesIO(data), fs, "/srv")
    import_tar(io.BytesIO(data), fs, "/srv", skip_devices=True)
    assert fs.exists("/srv/etc/os-release") and not fs.lexists("/srv/dev/console")
    out = tmp_path / "snap.tar"
    write_atomic(str(out), lambda f: export_layer(fs, f))
    assert tarfile.open(out).getnames()
    with pytest.raises(RuntimeError):
        write_atomic(str(out), lambda f: (f.write(b"partial"), (_ for _ in ()).throw(RuntimeError()))[0])
    assert tarfile.open(out).getnames()  # the old file is intact, no temp file left behind
    assert sorted(os.listdir(tmp_path)) == ["snap.tar"]


def test_import_tar_onto_confined_hostfs(tmp_path):
    from agentic_bash.vfs.host import HostFS

    root = tmp_path / "root"
    (root / "w").mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(str(outside), root / "w" / "esc")  # an existing escaping symlink in the target
    host = HostFS(str(root), writable=True)
    d = _ti("w/d", tarfile.DIRTYPE, mode=0o750)
    d.mtime = 1000
    f = _ti("w/d/f", mode=0o640)
    f.mtime = 2000
    data = _tar(d, (f, b"data"), _ti("w/d/l", tarfile.SYMTYPE, "/etc/passwd"),
                _ti("w/d/h", tarfile.LNKTYPE, "w/d/f"), (_ti("w/esc"), b"replaces the link"))
    import_tar(io.BytesIO(data), host, "/")
    assert (root / "w" / "d" / "f").read_bytes() == b"data"
    assert os.stat(root / "w" / "d" / "f").st_mode & 0o777 == 0o640
    assert os.stat(root / "w" / "d").st_mode & 0o777 == 0o750
    assert os.stat(root / "w" / "d").st_mtime == 1000 and os.stat(root / "w" / "d" / "f").st_mtime == 2000
    assert os.readlink(root / "w" / "d" / "l") == "/etc/passwd"
    assert os.stat(root / "w" / "d" / "h").st_ino == os.stat(root / "w" / "d" / "f").st_ino
    assert (root / "w" / "esc").read_bytes() == b"replaces the link" and os.listdir(outside) == []
    with pytest.raises(SnapshotError):  # a new escaping symlink then a file through it
        import_tar(io.BytesIO(_tar(_ti("w/x", tarfile.SYMTYPE, str(outside)), (_ti("w/x/f"), b"1"))), host, "/")
    assert os.listdir(outside) == [] and not (root / "w" / "x").exists()


def test_upload_belongs_to_the_sandbox_user():
    fs, info = build_virtual_fs(None, [])
    ti = _ti("a.txt")
    ti.uid = ti.gid = 0
    import_tar(io.BytesIO(_tar((ti, b"x"))), fs, "/workspace")
    assert fs.stat("/workspace/a.txt").st_uid == 1000


@pytest.mark.parametrize("fmt", ["gnu", "posix", "ustar", "gzip"])
def test_reads_archives_made_by_gnu_tar(tmp_path, fmt):
    src = tmp_path / "src"
    deep = src / ("long-directory-name-" * 6) / "sub"
    deep.mkdir(parents=True)
    (deep / ("file-" * 30 + ".txt")).write_bytes(b"deep")
    (src / "ünï.txt").write_bytes(b"utf8")
    os.symlink("ünï.txt", src / "link")
    os.link(src / "ünï.txt", src / "hard")
    (src / "big.bin").write_bytes(os.urandom(70_000))
    out = tmp_path / "a.tar"
    if fmt == "ustar":  # ustar cannot hold the long names: leave them out
        args = ["tar", "--format=ustar", "-C", str(src), "-cf", str(out), "ünï.txt", "link", "hard", "big.bin"]
    else:
        args = ["tar", "-z" if fmt == "gzip" else f"--format={fmt}", "-C", str(src), "-cf", str(out), "."]
    subprocess.run(args, check=True, capture_output=True)
    fs, _ = build_virtual_fs(None, [])
    with open(out, "rb") as f:
        import_tar(f, fs, "/workspace")
    for p in ("ünï.txt", "hard"):
        with fs.open("/workspace/" + p) as f:
            assert f.read() == b"utf8"
    assert fs.readlink("/workspace/link") == "ünï.txt"
    with fs.open("/workspace/big.bin") as f:
        assert f.read() == (src / "big.bin").read_bytes()
    if fmt != "ustar":
        rel = str(deep.relative_to(src))
        with fs.open(f"/workspace/{rel}/{'file-' * 30}.txt") as f:
            assert f.read() == b"deep"


def test_read_only_directories_get_their_mode_after_their_children(tmp_path):
    from agentic_bash.vfs.host import HostFS

    ro = _ti("w/ro", tarfile.DIRTYPE, mode=0o555)
    data = _tar(ro, (_ti("w/ro/f"), b"inside"))
    fs, _ = build_virtual_fs(None, [])
    fs.mkdir("/workspace/up")
    import_tar(io.BytesIO(data), fs, "/workspace/up")
    assert fs.stat("/workspace/up/w/ro").st_mode & 0o777 == 0o555
    root = tmp_path / "r"
    root.mkdir()
    import_tar(io.BytesIO(data), HostFS(str(root), writable=True), "/")
    assert (root / "w" / "ro" / "f").read_bytes() == b"inside"
    assert os.stat(root / "w" / "ro").st_mode & 0o777 == 0o555
    os.chmod(root / "w" / "ro", 0o755)
    # the generic path (any other FileSystem), with owner permission bits enforced
    from agentic_bash.vfs.mount import MountFS

    generic = MountFS(MemoryFS(), {})
    import_tar(io.BytesIO(data), generic, "/")
    with generic.open("/w/ro/f") as f:
        assert f.read() == b"inside"
    assert generic.stat("/w/ro").st_mode & 0o777 == 0o555


@pytest.mark.parametrize("target", ["overlay", "host"])
def test_declared_directory_replaces_an_existing_symlink(tmp_path, target):
    from agentic_bash.vfs.host import HostFS

    outside = tmp_path / "outside"
    outside.mkdir()
    if target == "host":
        root = tmp_path / "r"
        (root / "workspace").mkdir(parents=True)
        os.symlink(str(outside), root / "workspace" / "l")
        fs = HostFS(str(root), writable=True)
    else:
        fs, _ = build_virtual_fs(None, [])
        fs.symlink("/etc", "/workspace/l")
    data = _tar(_ti("workspace/l", tarfile.DIRTYPE, mode=0o755), (_ti("workspace/l/x"), b"x"))
    import_tar(io.BytesIO(data), fs, "/")
    assert fs.stat("/workspace/l", follow_symlinks=False).is_dir
    assert fs.exists("/workspace/l/x")
    assert os.listdir(outside) == []
    if target == "overlay":
        assert not fs.exists("/etc/x")
