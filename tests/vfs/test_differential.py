"""Differential errno test: the same operations on MemoryFS and on a real directory via ``os``."""

from __future__ import annotations

import errno
import os
import stat

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentic_bash.vfs.memory import MemoryFS

from .conftest import RealOS

NAMES = ["a", "b", "c"]
paths = st.lists(st.sampled_from(NAMES), min_size=1, max_size=3).map(lambda p: "/" + "/".join(p))
# no ".." in random targets: on the real side it could climb out of the test root
targets = st.sampled_from(["a", "b", "a/b", "c/a", ".", "b/c", "x", "self", "a/"])

ops = st.one_of(
    st.tuples(st.just("write"), paths, st.sampled_from(["wb", "ab", "xb", "r+b", "w+b"]), st.binary(max_size=5)),
    st.tuples(st.just("read"), paths),
    st.tuples(st.just("mkdir"), paths),
    st.tuples(st.just("rmdir"), paths),
    st.tuples(st.just("unlink"), paths),
    st.tuples(st.just("rename"), paths, paths),
    st.tuples(st.just("symlink"), targets, paths),
    st.tuples(st.just("link"), paths, paths),
    st.tuples(st.just("truncate"), paths, st.integers(0, 6)),
    st.tuples(st.just("stat"), paths),
    st.tuples(st.just("lstat"), paths),
    st.tuples(st.just("listdir"), paths),
    st.tuples(st.just("readlink"), paths),
    st.tuples(st.just("exists"), paths),
    st.tuples(st.just("chmod"), paths, st.sampled_from([0o700, 0o755, 0o600])),
)


def apply(fs, op):
    """Run one operation; the outcome is a comparable value or ('errno', code)."""
    kind, *args = op
    try:
        if kind == "write":
            path, mode, data = args
            with fs.open(path, mode) as f:
                f.write(data)
            return None
        if kind == "read":
            with fs.open(args[0], "rb") as f:
                return f.read()
        if kind in ("stat", "lstat"):
            s = fs.stat(args[0], follow_symlinks=kind == "stat")
            size = s.st_size if stat.S_ISREG(s.st_mode) or stat.S_ISLNK(s.st_mode) else None
            return (stat.S_IFMT(s.st_mode), size, s.st_nlink if not stat.S_ISDIR(s.st_mode) else None)
        if kind == "listdir":
            return sorted(fs.listdir(args[0]))
        if kind == "exists":
            return (fs.exists(args[0]), fs.lexists(args[0]))
        if kind == "chmod":
            return fs.chmod(args[0], args[1])
        return getattr(fs, kind)(*args)
    except OSError as e:
        return ("errno", errno.errorcode.get(e.errno, e.errno))


def tree(fs, path="/"):
    out = {}
    for name in sorted(fs.listdir(path)):
        p = path.rstrip("/") + "/" + name
        s = fs.stat(p, follow_symlinks=False)
        if stat.S_ISLNK(s.st_mode):
            out[p] = ("l", fs.readlink(p))
        elif stat.S_ISDIR(s.st_mode):
            out[p] = ("d", stat.S_IMODE(s.st_mode))
            out.update(tree(fs, p))
        else:
            with fs.open(p, "rb") as f:
                out[p] = ("f", stat.S_IMODE(s.st_mode), f.read(), s.st_nlink)
    return out


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seq=st.lists(ops, max_size=25))
def test_random_sequences_match_linux(tmp_path_factory, seq):
    root = tmp_path_factory.mktemp("diff")
    real = RealOS(str(root))
    mem = MemoryFS(check_permissions=False)
    os.umask(0o022)
    for op in seq:
        want = apply(real, op)
        got = apply(mem, op)
        assert got == want, op
    assert tree(mem) == tree(real)


FIXED = [
    # (setup ops, probe op)
    ([("mkdir", "/d"), ("mkdir", "/d/e")], ("rename", "/d", "/d/e/f")),
    ([("mkdir", "/d")], ("rename", "/d", "/d")),
    ([("mkdir", "/d"), ("mkdir", "/d/e")], ("rename", "/d/e", "/d")),
    ([("write", "/f", "wb", b"x")], ("rmdir", "/f")),
    ([("write", "/f", "wb", b"x")], ("mkdir", "/f/g")),
    ([("symlink", "nowhere", "/l")], ("mkdir", "/l")),
    ([("symlink", "nowhere", "/l")], ("write", "/l", "xb", b"")),
    ([("mkdir", "/d"), ("symlink", "..", "/d/up"), ("write", "/top", "wb", b"T")], ("read", "/d/up/top")),
    ([("mkdir", "/d"), ("mkdir", "/d/e"), ("symlink", "e/..", "/d/x"), ("write", "/d/f", "wb", b"F")], ("read", "/d/x/f")),
    ([("mkdir", "/d"), ("symlink", "../d/../d", "/d/l")], ("listdir", "/d/l")),
    ([("write", "/f", "wb", b"x"), ("symlink", "f/", "/l")], ("read", "/l")),
    ([("write", "/f", "wb", b"x"), ("symlink", "f/.", "/l")], ("read", "/l")),
    ([("write", "/f", "wb", b"x"), ("link", "/f", "/g")], ("rename", "/f", "/g")),
    ([("write", "/f", "wb", b"x"), ("link", "/f", "/g")], ("stat", "/f")),
    ([("write", "/f", "wb", b"x")], ("truncate", "/f", -1)),
    ([("mkdir", "/d")], ("read", "/d")),
    ([("symlink", "l", "/l")], ("write", "/l", "wb", b"")),
    ([("symlink", "l", "/l")], ("unlink", "/l")),
    ([("mkdir", "/d"), ("symlink", "d", "/l")], ("rename", "/l", "/d/l2")),
    ([("mkdir", "/d"), ("write", "/d/f", "wb", b"1")], ("rename", "/d/f", "/d/f/g")),
    ([("write", "/f", "wb", b"1")], ("rename", "/missing", "/f/x")),
    ([("symlink", "a/", "/a")], ("write", "/a", "wb", b"")),
    ([("symlink", "x/", "/b")], ("write", "/b", "ab", b"")),
    ([("write", "/f", "wb", b"1"), ("symlink", "f/", "/b")], ("write", "/b", "wb", b"")),
    ([("write", "/f", "wb", b"1"), ("symlink", "f/", "/b")], ("write", "/b", "r+b", b"")),
    ([("mkdir", "/d"), ("symlink", "d/", "/b")], ("write", "/b", "xb", b"")),
    ([("write", "/f", "wb", b"1")], ("link", "/missing", "/f/x")),
]


@pytest.mark.parametrize("setup,probe", FIXED)
def test_fixed_cases_match_linux(tmp_path, setup, probe):
    real = RealOS(str(tmp_path))
    mem = MemoryFS(check_permissions=False)
    for op in setup:
        assert apply(real, op) == apply(mem, op)
    assert apply(mem, probe) == apply(real, probe)
    assert tree(mem) == tree(real)


def test_realpath_matches_linux(tmp_path):
    real = RealOS(str(tmp_path))
    mem = MemoryFS(check_permissions=False)
    for fs in (real, mem):
        fs.mkdir("/d")
        fs.mkdir("/d/e")
        fs.symlink("e", "/d/le")
        fs.symlink("../d/le", "/d/e/back")
        fs.symlink("loop", "/d/loop")
    for p in ["/d/le", "/d/le/back", "/d/le/back/x/y", "/d/loop", "/d/loop/z", "/d/./le/../e"]:
        assert mem.realpath(p) == real.realpath(p), p


def _permission_case(root):
    real = RealOS(root)
    mem = MemoryFS()
    for fs in (real, mem):
        fs.mkdir("/d")
        with fs.open("/d/f", "wb") as f:
            f.write(b"x")
        fs.chmod("/d/f", 0)
    return apply(mem, ("read", "/d/f")), apply(real, ("read", "/d/f"))


def test_permission_errnos_match_linux(tmp_path):
    if os.geteuid() != 0:
        ours, linux = _permission_case(str(tmp_path))
    else:  # root bypasses permission bits: compare as nobody in a forked child
        import ast
        import shutil
        import tempfile

        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - child
            try:
                os.close(r)
                os.setgroups([])
                os.setresgid(65534, 65534, 65534)
                os.setresuid(65534, 65534, 65534)
                d = tempfile.mkdtemp()
                try:
                    os.write(w, repr(_permission_case(d)).encode())
                finally:
                    os.chmod(os.path.join(d, "d", "f"), 0o600)
                    shutil.rmtree(d)
            finally:
                os._exit(0)
        os.close(w)
        with os.fdopen(r, "rb") as f:
            data = f.read()
        os.waitpid(pid, 0)
        assert data, "child running as nobody reported nothing"
        ours, linux = ast.literal_eval(data.decode())
    assert linux == ("errno", "EACCES")
    assert ours == linux


def test_owner_permission_bits():
    mem = MemoryFS()
    mem.mkdir("/d")
    with mem.open("/d/f", "wb") as f:
        f.write(b"x")
    mem.chmod("/d/f", 0o200)
    assert apply(mem, ("read", "/d/f")) == ("errno", "EACCES")
    mem.chmod("/d/f", 0o400)
    assert apply(mem, ("write", "/d/f", "ab", b"y")) == ("errno", "EACCES")
    mem.chmod("/d", 0o500)
    assert apply(mem, ("write", "/d/g", "wb", b"y")) == ("errno", "EACCES")
    assert apply(mem, ("unlink", "/d/f")) == ("errno", "EACCES")
    mem.chmod("/d", 0o600)
    assert apply(mem, ("stat", "/d/f")) == ("errno", "EACCES")
    assert not mem.access("/d/f", os.F_OK)
    mem.chmod("/d", 0o700)
    assert mem.access("/d/f", os.R_OK) and not mem.access("/d/f", os.W_OK)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seq=st.lists(ops, max_size=25))
def test_hostfs_random_sequences_match_linux(tmp_path_factory, seq):
    from agentic_bash.vfs.host import HostFS

    real = RealOS(str(tmp_path_factory.mktemp("diffr")))
    host = HostFS(str(tmp_path_factory.mktemp("diffh")), writable=True)
    os.umask(0o022)
    for op in seq:
        assert apply(host, op) == apply(real, op), op
    assert tree(host) == tree(real)
