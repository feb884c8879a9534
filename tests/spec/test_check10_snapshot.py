"""Snapshots a user might hand back by mistake (check10 on speed10's tar+zstd default): a plain-tar snapshot cut at a member boundary and an incremental one alone are refused, not restored as a session missing files."""

from __future__ import annotations

import io
import tarfile

import pytest

from agentic_bash import Sandbox
from agentic_bash.errors import SnapshotError

SETUP = ("mkdir -p /workspace/d; echo one > /workspace/d/f; "
         "head -c 20000 /dev/zero | tr '\\0' a > /workspace/big; echo keep > /workspace/zz")


@pytest.fixture(scope="module")
def sb():
    s = Sandbox("virtual")
    s.run(SETUP)
    yield s
    s.close()


def test_plain_snapshot_cut_at_any_member_boundary_is_refused(sb) -> None:
    plain = sb.snapshot(compression=None)
    tf = tarfile.open(fileobj=io.BytesIO(plain))
    ends = sorted({m.offset for m in tf.getmembers()} | {m.offset_data for m in tf.getmembers()})
    cuts = [c for c in ends if c > 0]
    assert len(cuts) >= 8
    for cut in cuts:
        with pytest.raises(SnapshotError, match="truncated"):
            Sandbox.from_snapshot(plain[:cut], isolation="virtual")
    # the whole thing, and one without its record padding, still restore
    for data in (plain, plain[:tf.offset + 1024]):
        with Sandbox.from_snapshot(data, isolation="virtual") as t:
            assert t.run("cat /workspace/zz; wc -c < /workspace/big").stdout == "keep\n20000\n"


def test_foreign_plain_tar_without_end_blocks_still_restores() -> None:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        ti = tarfile.TarInfo("workspace/old.txt")
        ti.size = 4
        tf.addfile(ti, io.BytesIO(b"old\n"))
    data = buf.getvalue()[:1024]   # header and data, no end-of-archive blocks
    with Sandbox.from_snapshot(data, isolation="virtual") as t:
        assert t.run("cat /workspace/old.txt").stdout == "old\n"


def test_incremental_snapshot_alone_is_refused(sb) -> None:
    full = sb.snapshot()
    sb.run("echo two > /workspace/new")
    inc = sb.snapshot(parent=full)
    for src in (inc, [inc]):
        with pytest.raises(SnapshotError, match="incremental"):
            Sandbox.from_snapshot(src, isolation="virtual")
        with Sandbox("virtual") as t:
            with pytest.raises(SnapshotError, match="incremental"):
                t.restore(src)
    with Sandbox.from_snapshot([full, inc], isolation="virtual") as t:
        assert t.run("cat /workspace/d/f /workspace/new").stdout == "one\ntwo\n"
