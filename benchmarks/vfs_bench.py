"""VFS micro-benchmarks: MemoryFS/OverlayFS vs tmpfs writes, snapshot export/import, reset, tracking."""

from __future__ import annotations

import io
import os
import shutil
import tempfile
import time

from agentic_bash.vfs.changes import diff, snapshot_marker
from agentic_bash.vfs.layout import build_virtual_fs
from agentic_bash.vfs.memory import MemoryFS
from agentic_bash.vfs.oci import export_layer, import_layer

N = 20_000


def rate(fn, n: int) -> float:
    t = time.perf_counter()
    fn(n)
    return n / (time.perf_counter() - t)


def vfs_writes(fs, d: str):
    def run(n: int) -> None:
        for i in range(n):
            with fs.open(f"{d}/f{i}", "wb") as f:
                f.write(b"hello world\n")
    return run


def os_writes(d: str):
    def run(n: int) -> None:
        for i in range(n):
            with open(f"{d}/f{i}", "wb") as f:
                f.write(b"hello world\n")
    return run


def best(fn, repeat: int = 3) -> float:
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return min(out)


def main() -> None:
    print(f"{'case':48s} {'result':>14s}")
    m = MemoryFS()
    m.mkdir("/w")
    print(f"{'MemoryFS writes/s (open+write+close)':48s} {rate(vfs_writes(m, '/w'), N):14,.0f}")
    fs, info = build_virtual_fs(None, ["cat"])
    print(f"{'OverlayFS (virtual root) writes/s':48s} {rate(vfs_writes(fs, '/workspace'), N):14,.0f}")
    shm = "/dev/shm" if os.path.isdir("/dev/shm") else None
    d = tempfile.mkdtemp(dir=shm)
    try:
        print(f"{'tmpfs writes/s via open() (' + (shm or 'tmp') + ')':48s} {rate(os_writes(d), N):14,.0f}")
    finally:
        shutil.rmtree(d)

    t = best(lambda: build_virtual_fs(None, ["cat", "ls"]))
    print(f"{'build_virtual_fs (cached base)':48s} {t * 1e6:11,.1f} µs")
    t = best(lambda: info.reset())
    print(f"{'reset() after 20k files':48s} {t * 1e6:11,.1f} µs")
    t = best(lambda: diff(snapshot_marker(info.upper), fs), 5)
    print(f"{'snapshot_marker + diff, nothing changed':48s} {t * 1e6:11,.1f} µs")

    # snapshot / restore: 1000 small files
    fs, info = build_virtual_fs(None, [])
    for i in range(1000):
        with fs.open(f"/workspace/f{i}.txt", "wb") as f:
            f.write(b"x" * 100)
    buf = io.BytesIO()
    t = best(lambda: (buf.seek(0), buf.truncate(), export_layer(fs, buf)))
    data = buf.getvalue()
    print(f"{'export 1000 small files':48s} {t * 1e3:11,.2f} ms ({len(data) // 1024} KiB)")

    def restore() -> None:
        f2, _ = build_virtual_fs(None, [])
        import_layer(io.BytesIO(data), f2)

    t = best(restore)
    print(f"{'import 1000 small files (fresh sandbox)':48s} {t * 1e3:11,.2f} ms")

    # one 100 MB file
    fs, info = build_virtual_fs(None, [])
    with fs.open("/workspace/big.bin", "wb") as f:
        f.write(os.urandom(1 << 20) * 100)
    t = best(lambda: (buf.seek(0), buf.truncate(), export_layer(fs, buf)), 2)
    data = buf.getvalue()
    print(f"{'export one 100 MB file':48s} {t * 1e3:11,.2f} ms")
    t = best(restore, 2)
    print(f"{'import one 100 MB file':48s} {t * 1e3:11,.2f} ms")


if __name__ == "__main__":
    main()
