"""A snapshot's INDEX_MEMBER: read instead of the headers when it agrees with them, else ignored."""

from __future__ import annotations

import io
import json
import tarfile

import pytest

from agentic_bash.errors import SnapshotError
from agentic_bash.vfs import oci
from agentic_bash.vfs.layout import build_virtual_fs
from agentic_bash.vfs.memory import MemoryFS
from agentic_bash.vfs.overlay import OverlayFS

from .test_overlay_props import tree

EXTRAS = {".agentic-bash/state.json": b'{"v": 1}'}


def _layer() -> tuple[bytes, object]:
    fs, _ = build_virtual_fs(None, ["cat", "ls"])
    with fs.open("/workspace/a b.txt", "wb") as f:
        f.write("ünïcode".encode())
    fs.mkdir("/workspace/" + "d" * 120)
    with fs.open("/workspace/" + "d" * 120 + "/" + "n" * 90, "wb") as f:
        f.write(b"long name" * 100)
    fs.symlink("/usr/bin/python3", "/workspace/py")
    fs.link("/workspace/a b.txt", "/workspace/hard")
    fs.mkdir("/workspace/private", 0o700)
    fs.utime("/workspace/private", (1.25, 1700000000.123456))
    fs.unlink("/usr/bin/ls")
    fs.rmdir("/srv")
    fs.mkdir("/srv")
    buf = io.BytesIO()
    oci.export_layer(fs, buf, extra_members=EXTRAS)
    return buf.getvalue(), fs


def _restore(data: bytes, monkeypatch, use_index: bool) -> tuple[object, list]:
    calls: list = []
    real = oci._indexed

    def spy(f, m):  # noqa: ANN001, ANN202
        got = real(f, m) if use_index else None
        calls.append(got is not None)
        return got

    monkeypatch.setattr(oci, "_indexed", spy)
    fresh, _ = build_virtual_fs(None, ["cat", "ls"])
    extras = oci.import_layer(io.BytesIO(data), fresh)
    assert extras == EXTRAS  # the index is never handed out as an extra
    return fresh, calls


def test_index_restore_equals_header_restore(monkeypatch):
    data, src = _layer()
    names = tarfile.open(fileobj=io.BytesIO(data)).getnames()
    assert names[:2] == [".agentic-bash/state.json", oci.INDEX_MEMBER]
    a, calls = _restore(data, monkeypatch, True)
    assert calls == [True]
    b, calls = _restore(data, monkeypatch, False)
    assert calls == [False]
    assert tree(a, with_times=True) == tree(b, with_times=True) == tree(src, with_times=True)
    assert a.stat("/workspace/private").st_mtime == 1700000000.123456


def _retar(data: bytes, fix, indent: int | None = None) -> bytes:  # noqa: ANN001
    """The archive with the index JSON changed by ``fix`` (padded to its length, or its header
    rewritten when it grows)."""
    tf = tarfile.open(fileobj=io.BytesIO(data))
    m = tf.getmember(oci.INDEX_MEMBER)
    raw = tf.extractfile(m).read()
    new = fix(json.loads(raw))
    body = json.dumps(new, separators=(",", ":"), indent=indent).encode()
    if len(body) > len(raw):
        # a longer index: its header and padding rewritten (the entries' positions count
        # from the index's end, so the members after it need no change)
        start = m.offset_data - 512
        after = m.offset_data + len(raw) + (-len(raw) % 512)
        ti = tarfile.TarInfo(oci.INDEX_MEMBER)
        ti.size, ti.mode = len(body), 0o644
        return (data[:start] + ti.tobuf(tarfile.USTAR_FORMAT) + body + bytes(-len(body) % 512)
                + data[after:])
    body = body.ljust(len(raw))  # JSON allows trailing blanks
    return data[:m.offset_data] + body + data[m.offset_data + len(body):]


def _rename_first_file(idx: list) -> list:
    for e in idx:
        if e[2] == "0":
            e[1] = e[1][:-1] + "X"
            return idx
    raise AssertionError


def _shrink(idx: list) -> list:
    for e in idx:
        if e[2] == "0" and e[7] > 1:
            e[7] -= 1
            return idx
    raise AssertionError


@pytest.mark.parametrize("fix", [
    _rename_first_file,                                    # a name the header does not have
    _shrink,                                               # a size the header does not have
    lambda idx: idx[:-1],                                  # an entry left out: no tiling to the end
    lambda idx: [[idx[0][0] + 1, *idx[0][1:]], *idx[1:]],  # a header that is not where it says
    lambda idx: [[*e[:3], "x", *e[4:]] for e in idx],      # not numbers
    lambda idx: {"not": "a list"},
    lambda idx: [[*e[:3], True, *e[4:]] for e in idx],     # a bool is not a number here
    lambda idx: [e[:8] for e in idx],                      # entries one field short
    lambda idx: [*idx[:1], [*idx[1], 0], *idx[2:]],        # one entry a field long (columns: no zip truncation)
    lambda idx: [[*e[:7], -e[7] - 1, e[8]] for e in idx],  # a negative size
    lambda idx: [[float(e[0]), *e[1:]] for e in idx],      # a gap that is no int
    lambda idx: [[*e[:6], str(e[6]), *e[7:]] for e in idx],  # an mtime that is no number
    lambda idx: [*idx[:2], [*idx[2][:2], "00", *idx[2][3:]], *idx[3:]],  # a type of two letters
], ids=["name", "size", "missing", "offsets", "types", "shape", "bool", "short", "long", "negative",
        "float-gap", "str-mtime", "type2"])
def test_an_index_that_disagrees_is_ignored(monkeypatch, fix):
    data, src = _layer()
    bad = _retar(data, fix)
    a, calls = _restore(bad, monkeypatch, True)
    assert calls == [False]
    assert tree(a, with_times=True) == tree(src, with_times=True)


def test_a_member_appended_after_the_indexed_ones_is_read(monkeypatch):
    data, _ = _layer()
    extra = io.BytesIO()
    with tarfile.open(fileobj=extra, mode="w", format=tarfile.PAX_FORMAT) as tf:
        ti = tarfile.TarInfo("workspace/late")
        ti.size = 4
        tf.addfile(ti, io.BytesIO(b"late"))
    end = data.rstrip(b"\0")
    end = data[:len(end) + (-len(end) % 512)]
    a, calls = _restore(end + extra.getvalue(), monkeypatch, True)
    assert calls == [False]
    with a.open("/workspace/late") as f:
        assert f.read() == b"late"


def test_index_entries_pass_the_same_refusals(monkeypatch):
    """An index naming ../x or a device is refused as the header would be (the headers agree)."""
    up = MemoryFS(check_permissions=False)
    ov = OverlayFS(up, [MemoryFS(check_permissions=False)])
    with ov.open("/aaaa", "wb") as f:
        f.write(b"x")
    buf = io.BytesIO()
    oci.export_layer(ov, buf, extra_members=EXTRAS)
    data = buf.getvalue().replace(b"aaaa\0", b"../a\0").replace(b'"aaaa"', b'"../a"')
    # (that header's checksum no longer matches: the index path does not read checksums,
    # and its plan is refused for the name all the same)
    with pytest.raises(SnapshotError, match=r"'\.\.'"):
        oci.import_layer(io.BytesIO(data), OverlayFS(MemoryFS(check_permissions=False), []))


def test_a_longer_index_that_agrees_is_read(monkeypatch):
    """(the tampered cases above that grow the index are ignored for what they change, not
    for the rewrite: the same index spelled longer is still read)"""
    data, src = _layer()
    assert _retar(data, lambda idx: idx) == data
    longer = _retar(data, lambda idx: idx, indent=2)
    assert len(longer) > len(data)
    a, calls = _restore(longer, monkeypatch, True)
    assert calls == [True]
    assert tree(a, with_times=True) == tree(src, with_times=True)
