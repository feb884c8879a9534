"""The supervisor's sysinfo(2) answer, piece by piece: the view of the sandbox's memory, the writable-range check (PROCMAP_QUERY and the maps text), and the filter sending sysinfo to the supervisor."""

from __future__ import annotations

import ctypes
import mmap
import os

import pytest

from agentic_bash.isolation import seccomp_filter as sf

GiB = 1 << 30
HOST = (100, 1, 2, 3, 24 * GiB, 7 * GiB, 1 * GiB, 2 * GiB, 8 * GiB, 8 * GiB, 300, 0, 0, 0, 1)


def _fields(raw: bytes) -> tuple[int, ...]:
    return sf._SYSINFO.unpack(raw)


def test_view_cuts_memory_to_the_limit_and_drops_swap() -> None:
    v = _fields(sf.sysinfo_view(HOST, 4 * GiB))
    assert v[4] == 4 * GiB and v[5] == 4 * GiB            # total; free at most the total
    assert v[6] == 1 * GiB and v[7] == 2 * GiB            # shared, buffers (under the total)
    assert v[8] == v[9] == 0                              # no swap
    assert v[0] == 100 and v[1:4] == (1, 2, 3) and v[10] == 300 and v[14] == 1


def test_view_free_is_what_the_sandbox_has_left() -> None:
    v = _fields(sf.sysinfo_view(HOST, 4 * GiB, used=3 * GiB))
    assert v[4] == 4 * GiB and v[5] == 1 * GiB
    assert _fields(sf.sysinfo_view(HOST, 4 * GiB, used=5 * GiB))[5] == 0   # over: none
    small_host = HOST[:5] + (GiB // 2,) + HOST[6:]
    assert _fields(sf.sysinfo_view(small_host, 4 * GiB, used=0))[5] == GiB // 2  # host's less


def test_view_never_reports_more_than_the_host() -> None:
    v = _fields(sf.sysinfo_view(HOST, 64 * GiB))
    assert v[4] == 24 * GiB


def test_view_is_the_per_program_cap_when_lower() -> None:
    mib = 1 << 20
    v = _fields(sf.sysinfo_view(HOST, 4 * GiB, used=GiB, cap=384 * mib))
    assert v[4] == 384 * mib and v[5] == 384 * mib
    assert _fields(sf.sysinfo_view(HOST, 4 * GiB, cap=8 * GiB))[4] == 4 * GiB
    # no sandbox limit: the cap, else the host's own figure
    assert _fields(sf.sysinfo_view(HOST, None, used=GiB, cap=384 * mib))[4] == 384 * mib
    assert _fields(sf.sysinfo_view(HOST, None))[4] == 24 * GiB


def test_view_keeps_the_hosts_unit() -> None:
    host = HOST[:4] + (24 * GiB // 4096, 7 * GiB // 4096) + HOST[6:14] + (4096,)
    v = _fields(sf.sysinfo_view(host, 4 * GiB, used=GiB))
    assert v[14] == 4096 and v[4] * 4096 == 4 * GiB and v[5] * 4096 == 3 * GiB


MAPS = (b"1000-3000 rw-p 00000000 00:00 0\n"
        b"3000-4000 rw-p 00000000 00:00 0 [heap]\n"
        b"5000-6000 r--p 00000000 00:00 0\n"
        b"6000-7000 rw-s 00000000 00:05 12 /dev/shm/x\n")


@pytest.mark.parametrize("addr,size,want", [
    (0x1000, 112, True), (0x2fc0, 112, True),       # inside one; across two adjacent rw
    (0x3fc0, 112, False),                           # runs into the hole at 4000
    (0x5000, 16, False), (0x0, 16, False),          # read-only; unmapped
    (0x6000, 112, True), (0x6fff, 2, False),        # shared rw; runs off the end
])
def test_writable_from_the_maps_text(addr: int, size: int, want: bool) -> None:
    assert sf._writable(MAPS, addr, size) is want


def _libc_mmap(prot: int) -> int:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                          ctypes.c_int, ctypes.c_long)
    addr = libc.mmap(None, 2 * 4096, prot, 0x22, -1, 0)   # MAP_PRIVATE | MAP_ANONYMOUS
    assert addr not in (None, ctypes.c_void_p(-1).value)
    return addr


def test_writable_from_procmap_query() -> None:
    fd = os.open("/proc/self/maps", os.O_RDONLY | os.O_CLOEXEC)
    try:
        rw = _libc_mmap(mmap.PROT_READ | mmap.PROT_WRITE)
        got = sf._writable_fd(fd, rw, 112)
        if got is None:
            pytest.skip("no PROCMAP_QUERY on this kernel (the maps text is read instead)")
        assert got is True
        assert sf._writable_fd(fd, rw + 2 * 4096 - 8, 8) is True
        assert sf._writable_fd(fd, _libc_mmap(mmap.PROT_READ), 112) is False
        assert sf._writable_fd(fd, 0, 112) is False
    finally:
        os.close(fd)
