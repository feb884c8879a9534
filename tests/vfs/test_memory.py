"""MemoryFS specifics: quotas, devices, FIFOs, thread safety, file objects, journal."""

from __future__ import annotations

import errno
import threading
import time

import pytest

from agentic_bash.vfs.changes import diff, snapshot_marker
from agentic_bash.vfs.memory import MemoryFS


def write(fs, p, data, mode="wb"):
    with fs.open(p, mode) as f:
        f.write(data)


def test_byte_and_file_quotas():
    fs = MemoryFS(max_bytes=10, max_files=4)
    write(fs, "/a", b"12345")
    with pytest.raises(OSError) as e:
        write(fs, "/a", b"123456789", "ab")
    assert e.value.errno == errno.ENOSPC
    write(fs, "/a", b"1234567890")  # truncation gave the bytes back
    fs.unlink("/a")
    write(fs, "/b", b"x" * 10)
    fs.mkdir("/d")
    fs.symlink("b", "/l")
    with pytest.raises(OSError) as e:
        fs.mkdir("/e")
    assert e.value.errno == errno.EDQUOT
    fs.unlink("/l")
    fs.mkdir("/e")
    with pytest.raises(OSError) as e:
        fs.truncate("/b", 11)
    assert e.value.errno == errno.ENOSPC


def test_hard_link_accounting():
    fs = MemoryFS(max_files=3)
    write(fs, "/a", b"x")
    fs.link("/a", "/b")  # a link is not a new inode
    fs.mkdir("/d")
    fs.unlink("/a")
    with pytest.raises(OSError):
        fs.mkdir("/e")
    fs.unlink("/b")
    fs.mkdir("/e")


def test_devices():
    fs = MemoryFS()
    fs.mkdir("/dev")
    for kind in ("null", "zero", "urandom"):
        fs.mknod_device("/dev/" + kind, kind)
    write(fs, "/dev/null", b"gone")
    with fs.open("/dev/null") as f:
        assert f.read() == b""
    with fs.open("/dev/zero") as f:
        assert f.read(3) == b"\0\0\0"
    with fs.open("/dev/urandom") as f:
        assert len(f.read(32)) == 32


def test_concurrent_appends_are_atomic():
    fs = MemoryFS()
    write(fs, "/log", b"")

    def worker(tag):
        with fs.open("/log", "ab") as f:
            for _ in range(500):
                f.write(tag * 10 + b"\n")

    ts = [threading.Thread(target=worker, args=(bytes([65 + i]),)) for i in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    with fs.open("/log") as f:
        lines = f.read().splitlines()
    assert len(lines) == 2000
    assert all(len(set(line)) == 1 and len(line) == 10 for line in lines)


def test_fifo_eof_epipe_and_cancel():
    fs = MemoryFS()
    fs.mkfifo("/p")
    out = []
    t = threading.Thread(target=lambda: out.append(list(fs.open("/p", "rb"))))
    t.start()
    with fs.open("/p", "wb") as w:
        w.write(b"a\nb\n")
    t.join(10)
    assert out == [[b"a\n", b"b\n"]]
    # O_RDWR never waits; with no reader left, a writer gets EPIPE
    rw = fs.open("/p", "r+b")
    rw.write(b"x")
    assert rw.read(1) == b"x"
    rw.close()

    class Cancelled(Exception):
        pass

    def hook():
        if time.monotonic() > deadline:
            raise Cancelled

    fs.wait_hook = hook
    deadline = time.monotonic() + 0.2
    with pytest.raises(Cancelled):
        fs.open("/p", "rb")  # no writer ever comes
    deadline = time.monotonic() + 0.2
    with pytest.raises(Cancelled):
        fs.open("/p", "wb")
    fs.wait_hook = None
    # reader goes away mid-stream: EPIPE
    r_ready = threading.Event()

    def short_reader():
        with fs.open("/p", "rb") as f:
            f.read(1)
        r_ready.set()

    t = threading.Thread(target=short_reader)
    t.start()
    w = fs.open("/p", "wb")
    w.write(b"y")
    r_ready.wait(5)
    with pytest.raises(BrokenPipeError):
        w.write(b"more")
    w.close()
    t.join(5)


def test_file_object_details():
    fs = MemoryFS()
    write(fs, "/f", b"abc\ndef\n")
    with fs.open("/f") as f:
        assert f.readlines() == [b"abc\n", b"def\n"]
        assert f.read() == b""
        assert f.seek(-2, 2) == 6
        assert f.read() == b"f\n"
        with pytest.raises(OSError):
            f.write(b"no")
    with pytest.raises(ValueError):
        f.read()
    with pytest.raises(ValueError):
        fs.open("/f", "q")


def test_journal_on_bare_memoryfs_follows_symlinks():
    fs = MemoryFS()
    fs.mkdir("/d")
    write(fs, "/d/f", b"1")
    fs.symlink("d", "/l")
    m = snapshot_marker(fs)
    write(fs, "/l/f", b"2")
    write(fs, "/l/g", b"new")
    ch = diff(m)
    assert ch.modified == ["/d/f"] and ch.created == ["/d/g"] and ch.deleted == []


def test_write_throughput_is_tens_of_thousands_per_second():
    fs = MemoryFS()
    n = 5000
    t = time.perf_counter()
    for i in range(n):
        with fs.open(f"/f{i}", "wb") as f:
            f.write(b"data")
    assert n / (time.perf_counter() - t) > 5000  # ~60-100k/s measured; loose for busy CI
