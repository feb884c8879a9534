"""The FileSystem contract, run against every backend (MemoryFS, HostFS, OverlayFS, MountFS)."""

from __future__ import annotations

import errno
import os
import stat

import pytest

from agentic_bash.vfs.base import FileSystem

from .conftest import BACKENDS, make_backend


@pytest.fixture(params=BACKENDS)
def fs(request, tmp_path):
    f = make_backend(request.param, tmp_path)
    f.mkdir("/t")
    return f


def write(fs, path, data=b"", mode="wb"):
    with fs.open(path, mode) as f:
        f.write(data)


def read(fs, path):
    with fs.open(path, "rb") as f:
        return f.read()


def errno_of(fn, *a):
    try:
        fn(*a)
    except OSError as e:
        return e.errno
    return None


def test_protocol(fs):
    assert isinstance(fs, FileSystem)


def test_write_read_append(fs):
    write(fs, "/t/f", b"hello\n")
    assert read(fs, "/t/f") == b"hello\n"
    write(fs, "/t/f", b"more\n", "ab")
    assert read(fs, "/t/f") == b"hello\nmore\n"
    write(fs, "/t/f", b"x", "wb")
    assert read(fs, "/t/f") == b"x"
    assert fs.stat("/t/f").st_size == 1
    assert fs.stat("/t/f").is_file


def test_file_object(fs):
    write(fs, "/t/f", b"one\ntwo\nthree")
    with fs.open("/t/f", "r+b") as f:
        assert f.readable() and f.writable()
        assert f.readline() == b"one\n"
        assert f.tell() == 4
        buf = bytearray(3)
        assert f.readinto(buf) == 3 and bytes(buf) == b"two"
        f.seek(0)
        assert list(f) == [b"one\n", b"two\n", b"three"]
        f.seek(0, 2)
        f.write(b"!")
        f.seek(3)
        f.truncate()
    assert read(fs, "/t/f") == b"one"
    with fs.open("/t/f", "rb") as f:
        assert f.readable() and not f.writable()
    with fs.open("/t/g", "w+b") as f:
        f.write(b"abc")
        f.seek(0)
        assert f.read() == b"abc"


def test_append_mode_always_at_end(fs):
    write(fs, "/t/f", b"abc")
    with fs.open("/t/f", "a+b") as f:
        f.seek(0)
        f.write(b"d")
        f.seek(0)
        assert f.read() == b"abcd"


def test_sparse_write(fs):
    with fs.open("/t/f", "wb") as f:
        f.seek(4)
        f.write(b"x")
    assert read(fs, "/t/f") == b"\0\0\0\0x"


def test_open_errors(fs):
    write(fs, "/t/f", b"x")
    assert errno_of(fs.open, "/t/missing", "rb") == errno.ENOENT
    assert errno_of(fs.open, "/t/nodir/x", "wb") == errno.ENOENT
    assert errno_of(fs.open, "/t/f/x", "wb") == errno.ENOTDIR
    assert errno_of(fs.open, "/t", "wb") == errno.EISDIR
    assert errno_of(fs.open, "/t/f", "xb") == errno.EEXIST
    write(fs, "/t/new", b"1", "xb")
    assert read(fs, "/t/new") == b"1"


def test_mkdir_rmdir(fs):
    fs.mkdir("/t/d")
    assert fs.stat("/t/d").is_dir
    assert errno_of(fs.mkdir, "/t/d") == errno.EEXIST
    assert errno_of(fs.mkdir, "/t/x/y") == errno.ENOENT
    write(fs, "/t/d/f")
    assert errno_of(fs.rmdir, "/t/d") == errno.ENOTEMPTY
    assert errno_of(fs.rmdir, "/t/d/f") == errno.ENOTDIR
    assert errno_of(fs.unlink, "/t/d") == errno.EISDIR
    assert errno_of(fs.rmdir, "/t/none") == errno.ENOENT
    fs.unlink("/t/d/f")
    assert errno_of(fs.unlink, "/t/d/f") == errno.ENOENT
    fs.rmdir("/t/d")
    assert not fs.exists("/t/d")


def test_listdir_scandir(fs):
    fs.mkdir("/t/d")
    write(fs, "/t/a")
    fs.symlink("a", "/t/l")
    assert sorted(fs.listdir("/t")) == ["a", "d", "l"]
    modes = {e.name: e.st_mode for e in fs.scandir("/t")}
    assert stat.S_ISDIR(modes["d"]) and stat.S_ISREG(modes["a"]) and stat.S_ISLNK(modes["l"])
    assert errno_of(fs.listdir, "/t/a") == errno.ENOTDIR
    assert errno_of(fs.listdir, "/t/zz") == errno.ENOENT


def test_rename(fs):
    write(fs, "/t/a", b"A")
    write(fs, "/t/b", b"B")
    fs.rename("/t/a", "/t/b")
    assert read(fs, "/t/b") == b"A" and not fs.exists("/t/a")
    fs.mkdir("/t/d")
    fs.mkdir("/t/d/e")
    write(fs, "/t/d/e/f", b"F")
    assert errno_of(fs.rename, "/t/d", "/t/d/e/x") == errno.EINVAL
    assert errno_of(fs.rename, "/t/b", "/t/d") == errno.EISDIR
    assert errno_of(fs.rename, "/t/d", "/t/b") == errno.ENOTDIR
    fs.mkdir("/t/full")
    write(fs, "/t/full/x")
    assert errno_of(fs.rename, "/t/d", "/t/full") in (errno.ENOTEMPTY, errno.EEXIST)
    fs.mkdir("/t/empty")
    fs.rename("/t/d", "/t/empty")
    assert read(fs, "/t/empty/e/f") == b"F"
    assert errno_of(fs.rename, "/t/nope", "/t/x") == errno.ENOENT
    fs.rename("/t/b", "/t/b")
    assert read(fs, "/t/b") == b"A"


def test_symlinks(fs):
    write(fs, "/t/f", b"data")
    fs.symlink("f", "/t/l")
    fs.symlink("missing", "/t/dangling")
    assert fs.readlink("/t/l") == "f"
    assert read(fs, "/t/l") == b"data"
    assert fs.stat("/t/l", follow_symlinks=False).is_symlink
    assert fs.stat("/t/l").is_file
    assert not fs.exists("/t/dangling") and fs.lexists("/t/dangling")
    assert errno_of(fs.readlink, "/t/f") == errno.EINVAL
    assert errno_of(fs.symlink, "x", "/t/f") == errno.EEXIST
    fs.symlink("loop2", "/t/loop1")
    fs.symlink("loop1", "/t/loop2")
    assert errno_of(fs.stat, "/t/loop1") == errno.ELOOP
    # writing through a dangling symlink creates its target
    write(fs, "/t/dangling", b"made")
    assert read(fs, "/t/missing") == b"made"
    fs.mkdir("/t/d")
    fs.symlink("d", "/t/ld")
    write(fs, "/t/ld/inner", b"i")
    assert read(fs, "/t/d/inner") == b"i"
    assert errno_of(fs.rmdir, "/t/ld") == errno.ENOTDIR
    fs.unlink("/t/ld")
    assert fs.exists("/t/d/inner")


def test_hard_links(fs):
    write(fs, "/t/a", b"one")
    fs.link("/t/a", "/t/b")
    assert fs.stat("/t/a").st_nlink == 2
    write(fs, "/t/b", b"two", "ab")
    assert read(fs, "/t/a") == b"onetwo"
    fs.unlink("/t/a")
    assert read(fs, "/t/b") == b"onetwo"
    assert fs.stat("/t/b").st_nlink == 1
    fs.mkdir("/t/d")
    assert errno_of(fs.link, "/t/d", "/t/d2") == errno.EPERM
    assert errno_of(fs.link, "/t/b", "/t/d") == errno.EEXIST


def test_chmod_utime_truncate(fs):
    write(fs, "/t/f", b"abcdef")
    fs.chmod("/t/f", 0o600)
    assert stat.S_IMODE(fs.stat("/t/f").st_mode) == 0o600
    fs.utime("/t/f", (1000.0, 2000.0))
    st = fs.stat("/t/f")
    assert st.st_mtime == 2000.0 and st.st_atime == 1000.0
    fs.truncate("/t/f", 2)
    assert read(fs, "/t/f") == b"ab"
    fs.truncate("/t/f", 4)
    assert read(fs, "/t/f") == b"ab\0\0"
    assert errno_of(fs.truncate, "/t", 0) == errno.EISDIR
    with fs.open("/t/g", "wb", 0o700):
        pass
    assert stat.S_IMODE(fs.stat("/t/g").st_mode) & 0o700 == 0o700


def test_realpath_access(fs):
    fs.mkdir("/t/d")
    fs.symlink("d", "/t/l")
    write(fs, "/t/d/f")
    assert fs.realpath("/t/l/f") == "/t/d/f"
    assert fs.realpath("/t/l/nope/x") == "/t/d/nope/x"
    assert fs.access("/t/d/f", os.F_OK)
    assert fs.access("/t/d/f", os.R_OK | os.W_OK)
    assert not fs.access("/t/zzz", os.F_OK)


def test_exists_never_raises(fs):
    write(fs, "/t/f")
    assert not fs.exists("/t/f/x")
    assert not fs.lexists("/t/f/x")
    assert fs.exists("/") and fs.stat("/").is_dir


def test_fifo(fs):
    import threading

    fs.mkfifo("/t/p", 0o644)
    assert stat.S_ISFIFO(fs.stat("/t/p").st_mode)
    got = []

    def reader():
        with fs.open("/t/p", "rb") as f:
            got.append(f.read())

    t = threading.Thread(target=reader)
    t.start()
    with fs.open("/t/p", "wb") as f:  # blocks until the reader has opened
        f.write(b"one\n")
        f.write(b"two\n")
    t.join(10)
    assert got == [b"one\ntwo\n"]
    assert errno_of(fs.mkfifo, "/t/p") == errno.EEXIST
