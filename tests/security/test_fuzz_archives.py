"""Hypothesis against the tar/snapshot readers and serve's path confinement: never outside, only SnapshotError, bounded."""

from __future__ import annotations

import io
import os
import tarfile
import tracemalloc

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import agentic_bash as ab
from agentic_bash.errors import SnapshotError
from agentic_bash.server.paths import BadPath, Denied, confine, within
from agentic_bash.vfs import oci
from agentic_bash.vfs.host import HostFS

SETTINGS = settings(max_examples=60, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow,
                                           HealthCheck.function_scoped_fixture])

_seg = st.sampled_from(["a", "b", "..", ".", "", ".wh.a", ".wh..wh..opq", "etc", "x y",
                        "\u00e9", "passwd", "link"])
_name = st.lists(_seg, min_size=1, max_size=5).map("/".join) | st.sampled_from(
    ["/etc/passwd", "../../escape", "/", "a/../../b", "./a", "a//b", "link/inner"])
_target = st.sampled_from(["/", "/etc", "..", "../..", "a", "/tmp", "../outside",
                           "link", ".", "a/b"])
_member = st.tuples(
    _name,
    st.sampled_from([tarfile.REGTYPE, tarfile.DIRTYPE, tarfile.SYMTYPE, tarfile.LNKTYPE,
                     tarfile.CHRTYPE, tarfile.FIFOTYPE, tarfile.BLKTYPE]),
    _target, st.binary(max_size=64), st.integers(0, 0o7777))


def _tar(members: list) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tf:
        for name, typ, target, data, mode in members:
            ti = tarfile.TarInfo(name or ".")
            ti.type, ti.mode = typ, mode
            if typ == tarfile.REGTYPE:
                ti.size = len(data)
                tf.addfile(ti, io.BytesIO(data))
            else:
                if typ in (tarfile.SYMTYPE, tarfile.LNKTYPE):
                    ti.linkname = target
                tf.addfile(ti)
    return buf.getvalue()


def _mutate(data: bytes, flips: list[tuple[int, int]], cut: int | None) -> bytes:
    b = bytearray(data)
    for pos, val in flips:
        if b:
            b[pos % len(b)] = val
    return bytes(b[:cut] if cut is not None else b)


_archives = st.one_of(
    st.lists(_member, max_size=8).map(_tar),
    st.tuples(st.lists(_member, min_size=1, max_size=4).map(_tar),
              st.lists(st.tuples(st.integers(0, 1 << 16), st.integers(0, 255)), max_size=12),
              st.none() | st.integers(0, 4096)).map(lambda t: _mutate(*t)),
    st.binary(max_size=2048),
)


def _snapshot_of_host(tmp: str) -> dict[str, tuple]:
    out = {}
    for root, dirs, files in os.walk(tmp):
        for n in dirs + files:
            p = os.path.join(root, n)
            st_ = os.lstat(p)
            out[p] = (st_.st_mode, st_.st_size, st_.st_mtime_ns)
    return out


@SETTINGS
@given(data=_archives)
def test_import_tar_onto_a_host_dir_stays_inside(tmp_path_factory, data: bytes) -> None:
    base = tmp_path_factory.mktemp("fuzz")
    root = base / "root"
    outside = base / "outside"
    root.mkdir()
    outside.mkdir()
    (outside / "sentinel").write_text("s")
    os.symlink(str(outside), str(root / "link"))   # a symlink out, as a careless caller's tree
    before_out = _snapshot_of_host(str(outside))
    fs = HostFS(str(root), writable=True)
    tracemalloc.start()
    try:
        oci.import_tar(io.BytesIO(data), fs, "/", max_entries=1000, max_bytes=1 << 20)
    except SnapshotError:
        pass
    finally:
        _cur, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    assert peak < 64 << 20, peak
    assert _snapshot_of_host(str(outside)) == before_out
    for p in os.listdir(str(base)):
        assert p in ("root", "outside")
    for dirpath, dirs, files in os.walk(str(root)):
        for n in files:
            st_ = os.lstat(os.path.join(dirpath, n))
            # a hostile mode never makes a setuid/setgid file of the caller's on the host
            assert not st_.st_mode & 0o6000, (n, oct(st_.st_mode))
            assert not (os.path.stat.S_ISBLK(st_.st_mode) or os.path.stat.S_ISCHR(st_.st_mode))


@SETTINGS
@given(data=_archives)
def test_restore_and_upload_raise_only_snapshot_error(data: bytes) -> None:
    with ab.Sandbox("virtual") as sb:
        sb.run("echo k > /workspace/keep")
        try:
            sb.upload_tar(io.BytesIO(data), "/workspace/up")
        except SnapshotError:
            pass
        try:
            sb.restore(data)
        except SnapshotError:
            pass
        assert sb.run("echo alive").stdout == "alive\n"


_upath = st.lists(st.sampled_from(["..", ".", "", "a", "b", "%2e%2e", "\\", "~", "etc",
                                   "\u2025", "a\x00b"]), max_size=6).map("/".join)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(p=_upath, absolute=st.booleans())
def test_confine_never_leaves_the_base(p: str, absolute: bool) -> None:
    base = "/srv/base"
    user = ("/" if absolute else "") + p
    try:
        out = confine(user, base)
    except (Denied, BadPath):
        return
    assert within(out, base) and (out == base or out.startswith(base + "/")), (user, out)
    assert "\0" not in out


def test_setuid_bits_from_a_tar_never_reach_the_host(tmp_path) -> None:
    data = _tar([("su", tarfile.REGTYPE, "", b"#!/bin/sh\n", 0o6755),
                 ("d", tarfile.DIRTYPE, "", b"", 0o7777)])
    oci.import_tar(io.BytesIO(data), HostFS(str(tmp_path), writable=True), "/")
    assert (tmp_path / "su").read_bytes() == b"#!/bin/sh\n"
    assert not (tmp_path / "su").stat().st_mode & 0o6000
    assert not (tmp_path / "d").stat().st_mode & 0o6000
