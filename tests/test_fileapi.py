"""The Sandbox file API: FileInfo listings, relative paths, tar upload/download, change tracking."""

from __future__ import annotations

import io
import tarfile

import pytest

from agentic_bash import Mount, Sandbox
from agentic_bash.fileapi import FileInfo


def test_write_read_exists_remove_relative_to_cwd(sb):
    sb.run("mkdir -p /workspace/proj && cd /workspace/proj")
    sb.write_file("src/main.py", "print(1)\n", mode=0o755)
    assert sb.read_file("/workspace/proj/src/main.py") == b"print(1)\n"
    assert sb.exists("src/main.py") and not sb.exists("src/nope")
    assert sb.run("ls -l src/main.py").stdout.startswith("-rwxr-xr-x")
    sb.remove("src/main.py")
    assert not sb.exists("src/main.py")
    sb.write_file("src/a/b", b"")
    with pytest.raises(OSError):
        sb.remove("src")
    sb.remove("src", recursive=True)
    assert not sb.exists("src")
    with pytest.raises(FileNotFoundError):
        sb.read_file("missing")


def test_list_files_returns_fileinfo(sb):
    sb.run("mkdir d; echo hello > f; ln -s f l; chmod 600 f; touch -d @1700000000 f")
    infos = sb.list_files(".")
    assert all(isinstance(i, FileInfo) for i in infos)
    by = {i.name: i for i in infos}
    assert sorted(by) == ["d", "f", "l"]
    f = by["f"]
    assert (f.path, f.size, f.type, f.mode, int(f.mtime)) == ("/workspace/f", 6, "file", 0o600, 1700000000)
    assert by["d"].type == "dir" and by["l"].type == "symlink"
    assert f["name"] == "f" and f.to_dict()["size"] == 6  # dict-style access still works
    assert [i.name for i in sb.list_files("f")] == ["f"]     # a file lists as itself


def test_upload_and_download_tar_roundtrip(sb):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for name, data in (("pkg/a.txt", b"A"), ("pkg/sub/b.txt", b"BB")):
            ti = tarfile.TarInfo(name)
            ti.size = len(data)
            ti.mode = 0o640
            tf.addfile(ti, io.BytesIO(data))
        ti = tarfile.TarInfo("pkg/link")
        ti.type, ti.linkname = tarfile.SYMTYPE, "a.txt"
        tf.addfile(ti)
    buf.seek(0)
    sb.upload_tar(buf, "in")           # relative to the cwd, created if missing
    assert sb.run("cat in/pkg/a.txt in/pkg/sub/b.txt in/pkg/link; stat -c %a in/pkg/a.txt").stdout == "ABBA640\n"
    out = io.BytesIO()
    data = sb.download_tar(out, path="in/pkg")
    assert out.getvalue() == data
    tf = tarfile.open(fileobj=io.BytesIO(data))
    assert sorted(tf.getnames()) == ["a.txt", "link", "sub", "sub/b.txt"]
    assert tf.extractfile("sub/b.txt").read() == b"BB"
    assert tf.getmember("link").issym()


def test_change_tracking_against_the_merged_view(tmp_path):
    (tmp_path / "keep").write_text("k")
    (tmp_path / "edit").write_text("old")
    (tmp_path / "gone").write_text("g")
    (tmp_path / "mode").write_text("m")
    with Sandbox(isolation="virtual", mounts={"/workspace": Mount(str(tmp_path))}) as sb:
        r = sb.run("echo new > new; echo more >> edit; rm gone; chmod 700 mode; cat keep >/dev/null; "
                   "echo t > /tmp/t; mkdir dd; touch keep")
        assert set(r.files_created) == {"/workspace/new", "/tmp/t", "/workspace/dd"}
        assert set(r.files_modified) == {"/workspace/edit", "/workspace/mode"}
        assert r.files_deleted == ("/workspace/gone",)
        r = sb.run("echo again > new; rm new; echo x > tmpf; rm tmpf")
        assert r.files_deleted == ("/workspace/new",) and r.files_created == ()
        sb.write_file("api.txt", b"x")                     # outside a run: not reported later
        assert sb.run("true").files_created == ()
