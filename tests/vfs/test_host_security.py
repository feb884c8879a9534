"""HostFS confinement: ``..``, absolute and relative symlinks, loops, /proc tricks, races, EROFS."""

from __future__ import annotations

import errno
import os
import threading
import time

import pytest

from agentic_bash.vfs.host import HostFS


@pytest.fixture
def jail(tmp_path):
    root = tmp_path / "root"
    (root / "inside").mkdir(parents=True)
    (root / "inside" / "ok.txt").write_bytes(b"ok")
    secret = tmp_path / "secret"
    secret.write_bytes(b"TOP SECRET")
    return root, secret


def err(fn, *a):
    try:
        fn(*a)
    except OSError as e:
        return e.errno
    return None


def read(fs, p):
    with fs.open(p, "rb") as f:
        return f.read()


def test_dotdot_cannot_climb(jail):
    root, secret = jail
    fs = HostFS(str(root))
    assert err(read, fs, "/../secret") == errno.ENOENT
    assert err(read, fs, "/inside/../../secret") == errno.ENOENT
    assert err(read, fs, "/../../../../../../" + str(secret)) == errno.ENOENT
    assert read(fs, "/../inside/ok.txt") == b"ok"
    assert fs.realpath("/../..") == "/"


def test_symlinks_are_chrooted(jail):
    root, secret = jail
    os.symlink(str(secret), root / "abs")
    os.symlink("../../../../../.." + str(secret), root / "inside" / "rel")
    os.symlink("/etc", root / "myetc")
    os.symlink("/etc", root / "etc")  # chrooted, it points at itself
    os.symlink("/", root / "slash")
    fs = HostFS(str(root), writable=True)
    assert err(read, fs, "/abs") == errno.ENOENT
    assert err(read, fs, "/inside/rel") == errno.ENOENT
    assert err(read, fs, "/myetc/passwd") == errno.ELOOP
    assert err(read, fs, "/etc/passwd") == errno.ELOOP
    assert sorted(fs.listdir("/slash")) == sorted(os.listdir(root))
    assert read(fs, "/slash/slash/inside/ok.txt") == b"ok"
    # writing through an escaping symlink creates the file inside the root, if at all
    assert err(read, fs, "/abs") == errno.ENOENT
    with pytest.raises(OSError):
        with fs.open("/abs", "wb") as f:
            f.write(b"pwned")
    assert secret.read_bytes() == b"TOP SECRET"
    os.symlink("/made-here", root / "dangling")
    with fs.open("/dangling", "wb") as f:
        f.write(b"x")
    assert (root / "made-here").read_bytes() == b"x"
    assert fs.real_path("/dangling") == str(root / "made-here")
    assert fs.real_path("/abs") is None
    # metadata calls through links cannot reach outside either
    for call in (lambda: fs.chmod("/abs", 0o777), lambda: fs.utime("/abs", (0, 0)),
                 lambda: fs.truncate("/abs", 0), lambda: fs.stat("/abs")):
        with pytest.raises(OSError):
            call()
    assert secret.read_bytes() == b"TOP SECRET"
    assert os.stat(secret).st_mtime > 0


def test_proc_self_root_is_just_a_name(jail):
    root, secret = jail
    fs = HostFS(str(root))
    assert err(read, fs, "/proc/self/root" + str(secret)) == errno.ENOENT
    assert err(fs.listdir, "/proc/self/fd") == errno.ENOENT


def test_symlink_loops(jail):
    root, _ = jail
    os.symlink("b", root / "a")
    os.symlink("a", root / "b")
    os.symlink("self/x", root / "self")
    fs = HostFS(str(root))
    assert err(fs.stat, "/a") == errno.ELOOP
    assert err(fs.stat, "/self") == errno.ELOOP
    assert fs.lexists("/a")


def test_read_only_refuses_every_write(jail):
    root, _ = jail
    fs = HostFS(str(root), writable=False)
    before = sorted(os.walk(root))
    assert err(lambda: fs.open("/inside/ok.txt", "wb")) == errno.EROFS
    assert err(lambda: fs.open("/inside/ok.txt", "r+b")) == errno.EROFS
    assert err(lambda: fs.open("/new", "wb")) == errno.EROFS
    assert err(lambda: fs.open("/nodir/new", "wb")) == errno.ENOENT
    assert err(fs.mkdir, "/d") == errno.EROFS
    assert err(fs.mkdir, "/inside") == errno.EEXIST
    assert err(fs.unlink, "/inside/ok.txt") == errno.EROFS
    assert err(fs.unlink, "/nope") == errno.ENOENT
    assert err(fs.rmdir, "/inside") == errno.EROFS
    assert err(fs.rename, "/inside", "/x") == errno.EROFS
    assert err(fs.symlink, "x", "/l") == errno.EROFS
    assert err(fs.link, "/inside/ok.txt", "/l") == errno.EROFS
    assert err(fs.chmod, "/inside/ok.txt", 0o777) == errno.EROFS
    assert err(fs.utime, "/inside/ok.txt", None) == errno.EROFS
    assert err(fs.truncate, "/inside/ok.txt", 0) == errno.EROFS
    assert not fs.access("/inside/ok.txt", os.W_OK)
    assert fs.access("/inside/ok.txt", os.R_OK)
    assert sorted(os.walk(root)) == before
    assert read(fs, "/inside/ok.txt") == b"ok"


def test_symlink_swapped_in_a_race_never_escapes(jail, tmp_path):
    root, _ = jail
    outside = tmp_path / "outside"
    outside.mkdir()
    fs = HostFS(str(root), writable=True)
    (root / "d").mkdir()
    stop = time.monotonic() + 0.5
    swaps = 0

    def flipper():
        nonlocal swaps
        while time.monotonic() < stop:
            os.rename(root / "d", root / "d.real")
            try:
                os.symlink(str(outside), root / "d")
                time.sleep(0)
                os.unlink(root / "d")
                swaps += 1
            finally:
                os.rename(root / "d.real", root / "d")

    t = threading.Thread(target=flipper)
    t.start()
    n = 0
    while time.monotonic() < stop:
        try:
            with fs.open("/d/f%d" % (n % 50), "wb") as f:
                f.write(b"x")
            fs.mkdir("/d/sub%d" % (n % 50))
        except OSError:
            pass
        n += 1
    t.join()
    assert swaps > 0
    assert os.listdir(outside) == []
