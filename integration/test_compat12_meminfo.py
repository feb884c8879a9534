"""compat12: /proc/meminfo, `free` and sysinfo(2) in a default Sandbox() show the sandbox's memory, live, as root and as an unprivileged user."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from _support import HERE, _parse, sandbox_supported

MiB = 1 << 20
GiB = 1 << 30


def _probe(runner, *names: str) -> dict:
    p = subprocess.run(runner.prefix + [runner.python, os.path.join(HERE, "_compat12_probe.py"),
                                        *names],
                       capture_output=True, text=True, env=runner.env, cwd=runner.cwd,
                       timeout=300)
    assert p.returncode == 0, f"{p.stdout[-3000:]}\n{p.stderr[-5000:]}"
    got = _parse(p.stdout)
    for k, v in got.items():
        assert not (isinstance(v, dict) and "error" in v), f"{k}: {v['error']}"
    return got


def _runner(who: str, request: pytest.FixtureRequest):
    return request.getfixturevalue("as_root" if who == "root" else "as_user")


# -- the view itself (no kernel needed) --------------------------------------------------------
HOST = b"""MemTotal:       24684092 kB
MemFree:          968704 kB
MemAvailable:   22458160 kB
Buffers:          388536 kB
Cached:         12424724 kB
SwapCached:            0 kB
Active(file):    8070404 kB
SwapTotal:       2097148 kB
SwapFree:        2097148 kB
Shmem:             14288 kB
CommitLimit:    12342044 kB
VmallocTotal:   34359738367 kB
HugePages_Total:       4
Hugepagesize:       2048 kB
DirectMap1G:    25165824 kB
"""


def _kb(text: bytes) -> dict[str, int]:
    return {line.split(b":")[0].decode(): int(line.split()[1]) for line in text.splitlines()}


def test_meminfo_view_is_the_sandboxs_memory_column_for_column() -> None:
    from agentic_bash.isolation.procfs import meminfo_view
    m = {"used": 300 * MiB, "file": 100 * MiB, "shmem": 20 * MiB, "active_file": 60 * MiB,
         "inactive_file": 20 * MiB}
    out = meminfo_view(HOST, 4 * GiB, m)
    v = _kb(out)
    assert v["MemTotal"] == 4 * GiB >> 10
    assert v["MemFree"] == (4 * GiB - 300 * MiB) >> 10            # not the host's 946 MiB
    assert v["MemAvailable"] == (4 * GiB - 300 * MiB + 80 * MiB) >> 10   # + its file cache
    assert v["Cached"] == 100 * MiB >> 10 and v["Shmem"] == 20 * MiB >> 10
    assert v["Buffers"] == v["SwapTotal"] == v["SwapFree"] == v["HugePages_Total"] == 0
    assert v["CommitLimit"] == v["MemTotal"] and v["DirectMap1G"] == v["MemTotal"]
    assert v["VmallocTotal"] == 34359738367 and v["Hugepagesize"] == 2048
    # same keys, same order, same columns (readers that index by column or line keep working)
    assert [line[:16] for line in out.splitlines()] == [line[:16] for line in HOST.splitlines()]
    assert [len(line) for line in out.splitlines()] == [len(line) for line in HOST.splitlines()]
    # a limit above the host's RAM: the host's; usage past the limit: nothing free
    assert _kb(meminfo_view(HOST, 64 * GiB, {"used": 0}))["MemTotal"] == 24684092
    over = _kb(meminfo_view(HOST, GiB, {"used": 2 * GiB}))
    assert over["MemFree"] == over["MemAvailable"] == 0


def test_sysinfo_with_the_views_figures_leaves_room_for_its_cache() -> None:
    # busybox free: used = sysinfo total - free - buffers - meminfo's Cached; it printed a
    # wrapped negative number when sysinfo's free was the whole (capped) total
    from agentic_bash.isolation import seccomp_filter as sf
    host = (100, 0, 0, 0, 24 * GiB, GiB, 3 * GiB, 2 * GiB, 0, 0, 300, 0, 0, 0, 1)
    cache = 50 * MiB
    for cap in (None, 384 * MiB):
        v = sf._SYSINFO.unpack(sf.sysinfo_view(host, 4 * GiB, 100 * MiB, cap,
                                               {"used": 100 * MiB, "file": cache,
                                                "shmem": 5 * MiB}))
        total, free, shared, buffers = v[4], v[5], v[6], v[7]
        assert total - free - buffers - cache >= 0, (cap, v)
        assert buffers == 0 and shared == 5 * MiB
    # without the figures, as before (compat11's unit test covers the rest)
    v = sf._SYSINFO.unpack(sf.sysinfo_view(host, 4 * GiB))
    assert v[7] == 2 * GiB


# -- in a real sandbox ---------------------------------------------------------------------------
ok, why = sandbox_supported()
kernel = pytest.mark.skipif(not ok, reason=f"kernel sandbox unavailable: {why}")


@kernel
@pytest.mark.timeout(400)
@pytest.mark.parametrize("who", ["root", "user"])
def test_free_top_node_and_sysinfo_show_the_sandboxs_memory(
        who: str, request: pytest.FixtureRequest) -> None:
    got = _probe(_runner(who, request), "view")["view"]
    for name, g in (("default", got["default"]), ("1g", got["1g"])):
        assert g["exit"] == 0 and g["kind"] == "regular file", g
        mi, lim = g["meminfo"], g["limit"]
        # MemTotal is the limit (below the host's RAM), free and available within it, no swap
        assert mi["MemTotal"] == lim < got["host_total"], (name, g)
        assert 0 < mi["MemFree"] <= mi["MemAvailable"] <= lim, (name, g)
        # an idle sandbox uses little (the view is capped by the host's own MemAvailable: on
        # a host short of memory that is the lower figure)
        assert mi["MemAvailable"] >= min(lim - GiB, g["host_available"] // 2), (name, g)
        assert mi["SwapTotal"] == 0, (name, g)
        total, used, free, avail = g["free"]          # procps free -b
        assert total == lim and 0 <= used < lim and avail <= lim, (name, g)
        b_total, b_used, b_free, b_cache, b_avail = g["busybox"]
        # busybox: total from sysinfo (the per-program cap when there is one), cache from
        # /proc/meminfo; "used" was a wrapped negative (18 digits) before
        assert b_total == min(lim, g["cap"] or lim) == g["phys"], (name, g)
        assert 0 <= b_used <= b_total and b_free <= b_total, (name, g)
        if isinstance(g.get("node"), list):
            assert g["node"][0] == lim and 0 < g["node"][1] <= lim, (name, g)
        assert g["note"] and "sandbox's own" in g["note"][0], (name, g)
        kib = str(lim >> 10)
        assert g["builtins"] == [0, f"{kib}\n{g['builtins'][1].split()[1]}\n{kib}\n", ""], g
        assert int(g["builtins"][1].split()[1]) > 10 and g["api"].split()[1] == kib, g


@kernel
@pytest.mark.timeout(400)
@pytest.mark.parametrize("who", ["root", "user"])
def test_the_view_follows_the_sandboxs_usage_as_readers_open_it(
        who: str, request: pytest.FixtureRequest) -> None:
    got = _probe(_runner(who, request), "live")["live"]
    assert got["exit"] == 0, got
    v = json.loads(got["out"])
    held = 200 * MiB
    if got["host_available"] < got["limit"] + GiB:
        # the view's MemAvailable is the host's then, which other processes move too
        pytest.skip(f"the host has {got['host_available'] >> 20} MiB available, under the "
                    "sandbox's limit: the view follows the host's figure")
    # 200 MiB held by one process: another's MemAvailable drops by about that much (a
    # memory cgroup: at once; the watchdog as an unprivileged user: its next 50 ms sample)
    assert v["before"] - v["during"] >= held * 3 // 4, v
    # a reader that keeps the file open and re-reads it sees new figures too (a timer)
    assert v["before"] - v["held_open"] >= held * 3 // 4, v
    # let go: back within a quarter of it, both for new readers and the one holding it open
    assert v["before"] - v["after"] < held // 4, v
    assert v["before"] - v["open_after"] < held // 4, v


@kernel
@pytest.mark.timeout(400)
@pytest.mark.parametrize("who", ["root", "user"])
def test_programs_cannot_change_the_view_and_a_flood_of_readers_is_served(
        who: str, request: pytest.FixtureRequest) -> None:
    got = _probe(_runner(who, request), "hostile")["hostile"]
    assert got["exit"] == 0, got
    h = got["h"]
    assert h["open_rw"] in ("EACCES", "EROFS") and h["chmod"] == "EROFS", h
    assert h["truncate"] in ("EACCES", "EROFS") and h["unlink"] in ("EACCES", "EBUSY"), h
    # no program may hold a lease on it (pid 1's writable descriptor stands in the way)
    assert h["lease_rd"] == "EAGAIN" and h["lease_wr"] == "EAGAIN", h
    f = got["flood"]
    counts = [int(x) for x in f["out"].split()[:-1]]
    assert f["exit"] == 0 and f["out"].endswith("done\n") and len(counts) == 4, f
    assert min(counts) > 0, f
    a = got["after"]
    assert a["exit"] == 0 and a["kv"]["MemTotal"] < got["host_total"], a
    assert 0 < a["kv"]["MemAvailable"] <= a["kv"]["MemTotal"], a
    # the host's own file is untouched
    with open("/proc/meminfo") as fh:
        assert int(fh.readline().split()[1]) * 1024 == got["host_total"]
