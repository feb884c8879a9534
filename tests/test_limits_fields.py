"""The whole-sandbox resource fields of Limits: defaults, hardened(), and refusal of values no backend could apply."""

from __future__ import annotations

import math
import os

import pytest

from agentic_bash import Limits

MiB = 1 << 20


def test_defaults_bound_memory_and_processes() -> None:
    lim = Limits()
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    assert lim.max_memory_bytes == max(256 * MiB, min(4 << 30, total // 4))
    assert lim.max_processes == 1024 and lim.max_fs_bytes == 1024 * MiB
    assert lim.cpu_quota is None and lim.max_file_bytes is None and not lim.allow_watchdog


def test_hardened_is_tighter_everywhere_it_sets() -> None:
    n, h = Limits(), Limits.hardened()
    assert h.max_memory_bytes < n.max_memory_bytes and h.max_processes < n.max_processes
    assert h.max_fs_bytes < n.max_fs_bytes
    assert h.cpu_quota is not None and h.max_file_bytes is not None and h.max_open_files


@pytest.mark.parametrize("kw,exc", [
    ({"max_memory_bytes": 1000}, ValueError), ({"max_memory_bytes": 1.5e9}, TypeError),
    ({"max_processes": 0}, ValueError), ({"max_processes": True}, TypeError),
    ({"cpu_quota": 0}, ValueError), ({"cpu_quota": math.nan}, ValueError),
    ({"cpu_quota": "0.5"}, TypeError), ({"max_file_bytes": 0}, ValueError),
    ({"max_open_files": 3}, ValueError), ({"max_fs_bytes": -1}, ValueError),
    ({"max_address_space": 4096}, ValueError), ({"allow_watchdog": 1}, TypeError),
])
def test_values_no_backend_could_apply_are_refused(kw: dict, exc: type) -> None:
    with pytest.raises(exc, match="Limits." + next(iter(kw))):
        Limits(**kw)


def test_none_means_unbounded_and_with_keeps_checking() -> None:
    lim = Limits(max_memory_bytes=None, max_processes=None, max_fs_bytes=None, cpu_quota=2)
    assert lim.cpu_quota == 2
    with pytest.raises(ValueError):
        lim.with_(max_processes=-5)
