"""The virtual-mode root: default tree, mounts in ro/cow/rw modes, O(1) reset, build cost."""

from __future__ import annotations

import errno
import os
import stat
import time

import pytest

from agentic_bash.limits import Limits
from agentic_bash.vfs.changes import diff, snapshot_marker
from agentic_bash.vfs.layout import build_virtual_fs


def read(fs, p):
    with fs.open(p, "rb") as f:
        return f.read()


def write(fs, p, data, mode="wb"):
    with fs.open(p, mode) as f:
        f.write(data)


def test_default_tree():
    fs, info = build_virtual_fs(None, ["cat", "ls", "grep"])
    for d in ("/workspace", "/tmp", "/home/user", "/etc", "/usr/bin", "/dev/fd"):
        assert fs.stat(d).is_dir, d
    assert stat.S_IMODE(fs.stat("/tmp").st_mode) == 0o1777
    assert fs.listdir("/workspace") == []
    assert b"user:x:1000:1000::/home/user:/bin/bash" in read(fs, "/etc/passwd")
    assert read(fs, "/etc/hostname") == b"sandbox\n"
    assert fs.stat("/home/user").st_uid == 1000
    assert fs.readlink("/bin") == "usr/bin"
    assert sorted(fs.listdir("/bin")) == ["cat", "grep", "ls"]
    st = fs.stat("/usr/bin/cat")
    assert stat.S_IMODE(st.st_mode) == 0o755 and read(fs, "/usr/bin/cat").startswith(b"#!/bin/sh")
    assert fs.access("/bin/cat", os.X_OK)
    for dev in ("null", "zero", "urandom", "random", "stdin", "stdout", "stderr"):
        assert stat.S_ISCHR(fs.stat("/dev/" + dev).st_mode), dev


def test_devices():
    fs, info = build_virtual_fs(None, [])
    write(fs, "/dev/null", b"swallowed")
    assert read(fs, "/dev/null") == b""
    with fs.open("/dev/zero", "rb") as f:
        assert f.read(5) == b"\0" * 5
    with fs.open("/dev/urandom", "rb") as f:
        assert len(f.read(16)) == 16
    write(fs, "/dev/null", b"x", "ab")
    assert info.upper.listdir("/") == []  # devices are used in place, never copied up


def test_writes_land_in_upper_and_reset_drops_them():
    fs, info = build_virtual_fs(None, ["cat"])
    write(fs, "/workspace/a.txt", b"hi")
    write(fs, "/etc/hostname", b"other\n")
    fs.unlink("/usr/bin/cat")
    assert read(fs, "/etc/hostname") == b"other\n"
    assert not fs.exists("/bin/cat")
    info.reset()
    assert fs.listdir("/workspace") == []
    assert read(fs, "/etc/hostname") == b"sandbox\n"
    assert fs.exists("/bin/cat")
    # the shared base was never touched: a new sandbox sees the pristine tree
    fs2, _ = build_virtual_fs(None, ["cat"])
    assert read(fs2, "/etc/hostname") == b"sandbox\n"


def test_base_is_shared_and_build_is_cheap():
    build_virtual_fs(None, ["a", "b"])
    n = 100
    per = 1.0
    for _ in range(3):  # best of three batches: a loaded machine stalls one, rarely all
        t = time.perf_counter()
        for _ in range(n):
            build_virtual_fs(None, ["a", "b"])
        per = min(per, (time.perf_counter() - t) / n)
    assert per < 0.005  # target well under 1 ms; loose bound for slow CI


def test_reset_is_constant_time():
    best = 1.0
    for _ in range(3):  # best of three: one stall on a loaded machine is not the code
        fs, info = build_virtual_fs(None, [])
        for i in range(5000):
            write(fs, f"/workspace/f{i}", b"x")
        t = time.perf_counter()
        info.reset()
        best = min(best, time.perf_counter() - t)
        assert fs.listdir("/workspace") == []
    assert best < 0.05


@pytest.fixture
def hostdir(tmp_path):
    d = tmp_path / "proj"
    (d / "src").mkdir(parents=True)
    (d / "src" / "main.py").write_bytes(b"print(1)\n")
    (d / "README").write_bytes(b"readme\n")
    return d


def test_cow_mount(hostdir):
    fs, info = build_virtual_fs({"/workspace": (str(hostdir), "cow")}, [])
    assert read(fs, "/workspace/src/main.py") == b"print(1)\n"
    write(fs, "/workspace/src/main.py", b"changed\n")
    write(fs, "/workspace/new.txt", b"n")
    fs.unlink("/workspace/README")
    assert read(fs, "/workspace/src/main.py") == b"changed\n"
    assert sorted(fs.listdir("/workspace")) == ["new.txt", "src"]
    # the host is never written
    assert (hostdir / "src" / "main.py").read_bytes() == b"print(1)\n"
    assert (hostdir / "README").exists() and not (hostdir / "new.txt").exists()
    info.reset()
    assert sorted(fs.listdir("/workspace")) == ["README", "src"]


def test_ro_mount(hostdir):
    fs, info = build_virtual_fs({"/data": (str(hostdir), "ro")}, [])
    assert "data" in fs.listdir("/")
    assert read(fs, "/data/README") == b"readme\n"
    with pytest.raises(OSError) as e:
        write(fs, "/data/x", b"1")
    assert e.value.errno == errno.EROFS
    with pytest.raises(OSError) as e:
        fs.unlink("/data/README")
    assert e.value.errno == errno.EROFS
    with pytest.raises(OSError) as e:
        fs.mkdir("/data/src")
    assert e.value.errno == errno.EEXIST
    assert not fs.access("/data/README", os.W_OK)


def test_rw_mount_and_nested(hostdir, tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    fs, info = build_virtual_fs({"/workspace": (str(hostdir), "rw"), "/mnt/deep/x": (str(other), "cow")}, [])
    write(fs, "/workspace/out.txt", b"to host")
    assert (hostdir / "out.txt").read_bytes() == b"to host"
    assert fs.real_path("/workspace/out.txt") == str(hostdir / "out.txt")
    with pytest.raises(OSError) as e:
        fs.rename("/workspace/out.txt", "/tmp/out.txt")
    assert e.value.errno == errno.EXDEV
    write(fs, "/mnt/deep/x/f", b"cow")
    assert not (other / "f").exists()
    # a symlink in the upper layer into the rw mount reaches the host dir
    fs.symlink("/workspace", "/home/user/ws")
    assert read(fs, "/home/user/ws/out.txt") == b"to host"
    write(fs, "/home/user/ws/via-link", b"1")
    assert (hostdir / "via-link").exists()


def test_bad_mount_mode(hostdir):
    with pytest.raises(ValueError):
        build_virtual_fs({"/w": (str(hostdir), "weird")}, [])


def test_limits_apply_to_session_layer():
    fs, info = build_virtual_fs(None, [], limits=Limits(max_fs_bytes=1000, max_file_count=10))
    with pytest.raises(OSError) as e:
        write(fs, "/workspace/big", b"x" * 2000)
    assert e.value.errno == errno.ENOSPC
    with pytest.raises(OSError) as e:
        for i in range(20):
            write(fs, f"/workspace/f{i}", b"")
    assert e.value.errno == errno.EDQUOT


def test_change_tracking_through_layout(hostdir):
    fs, info = build_virtual_fs({"/workspace": (str(hostdir), "cow")}, ["cat"])
    m = snapshot_marker(info.upper)
    assert not diff(m, fs)
    m = snapshot_marker(info.upper)
    write(fs, "/workspace/src/main.py", b"changed\n")
    write(fs, "/workspace/new", b"n")
    fs.unlink("/workspace/README")
    fs.chmod("/usr/bin/cat", 0o700)
    fs.utime("/etc/hosts", (1, 1))
    ch = diff(m, fs)
    assert ch.created == ["/workspace/new"]
    assert ch.modified == ["/usr/bin/cat", "/workspace/src/main.py"]
    assert ch.deleted == ["/workspace/README"]


def test_write_through_a_file_opened_in_an_earlier_run_is_tracked():
    fs, info = build_virtual_fs(None, [])
    write(fs, "/etc/keep", b"x")
    f = fs.open("/etc/keep", "ab")  # e.g. exec 3>>/etc/keep in an earlier run
    f.write(b"1")
    m = snapshot_marker(info.upper)
    f.write(b"2")
    f.close()
    assert diff(m, fs).modified == ["/etc/keep"]


def test_wait_hook_survives_reset():
    fs, info = build_virtual_fs(None, [])

    class Stop(Exception):
        pass

    def hook():
        raise Stop

    info.set_wait_hook(hook)
    info.reset()
    fs.mkfifo("/tmp/p")
    with pytest.raises(Stop):
        fs.open("/tmp/p", "rb")  # no writer: the hook cancels the wait
