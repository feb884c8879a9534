"""LayerScanner over plain directories: what native writes look like, and the skip of unchanged empty uppers (inotify, or fstat where it is missing)."""

from __future__ import annotations

import os
import time

import pytest

from agentic_bash.isolation import layerscan
from agentic_bash.isolation.layerscan import LayerScanner


@pytest.fixture(params=["inotify", "fstat"])
def mode(request, monkeypatch):  # noqa: ANN001, ANN201
    """Both ways of knowing that an empty upper stayed empty."""
    if request.param == "fstat":
        monkeypatch.setattr(layerscan, "_inotify", lambda paths: None)
    return request.param


def _settle() -> None:
    """Let the last change age past the scanner's settle window (a wait for time to pass, not
    for a state: with coarse timestamps a change within the window would not move ctime)."""
    time.sleep(layerscan._SETTLED_NS / 1e9 + 0.02)


def _uppers(tmp_path) -> list[dict[str, str]]:  # noqa: ANN001
    out = []
    for name in ("usr", "etc", "tmp"):
        d = tmp_path / name
        d.mkdir()
        out.append({"target": f"/{name}", "upper": str(d)})
    return out


def test_changes_in_empty_and_full_uppers(tmp_path, mode) -> None:  # noqa: ANN001
    ups = _uppers(tmp_path)
    _settle()
    sc = LayerScanner(ups)
    assert (sc._ino is not None) == (mode == "inotify")
    assert sc.changes() == (set(), set(), set())
    assert all(k is not None for k in sc._empty)   # three empty uppers, remembered
    (tmp_path / "tmp" / "a").write_bytes(b"1")
    (tmp_path / "usr" / "d").mkdir()
    (tmp_path / "usr" / "d" / "b").write_bytes(b"2")
    assert sc.changes() == ({"/tmp/a", "/usr/d/b"}, set(), set())
    (tmp_path / "tmp" / "a").write_bytes(b"22")
    assert sc.changes() == (set(), {"/tmp/a"}, set())
    os.unlink(tmp_path / "tmp" / "a")
    _settle()
    assert sc.changes() == (set(), set(), {"/tmp/a"})
    # empty again: remembered again, and a new entry is still seen at once
    assert sc._empty[2] is not None
    (tmp_path / "tmp" / "c").write_bytes(b"3")
    assert sc.changes() == ({"/tmp/c"}, set(), set())


def test_a_fresh_change_is_not_trusted_as_settled(tmp_path, monkeypatch) -> None:  # noqa: ANN001
    monkeypatch.setattr(layerscan, "_inotify", lambda paths: None)   # (the fstat check's rule)
    monkeypatch.setattr(layerscan, "_SETTLED_NS", 3600 * 10**9)   # "fresh" on any machine
    ups = _uppers(tmp_path)
    sc = LayerScanner(ups)
    # the directories changed within the settle window, so every scan reads them (an entry added within the same clock tick would not move ctime)
    assert sc._empty == [None, None, None]
    (tmp_path / "etc" / "x").write_bytes(b"")
    assert sc.changes()[0] == {"/etc/x"}


def test_unchanged_empty_upper_is_not_read(tmp_path, monkeypatch, mode) -> None:  # noqa: ANN001
    ups = _uppers(tmp_path)
    _settle()
    sc = LayerScanner(ups)
    calls = []
    real = layerscan._scan_dir
    monkeypatch.setattr(layerscan, "_scan_dir", lambda *a: calls.append(a) or real(*a))
    sc.changes()
    assert calls == []
    (tmp_path / "etc" / "x").write_bytes(b"")
    sc.changes()
    assert [a[0] for a in calls] == [str(tmp_path / "etc")]


def test_note_forgets_the_empty_mark(tmp_path, mode) -> None:  # noqa: ANN001
    ups = _uppers(tmp_path)
    _settle()
    sc = LayerScanner(ups)
    (tmp_path / "tmp" / "api").write_bytes(b"x")   # written through the file API
    sc.note("/tmp/api")
    assert sc._empty[2] is None
    assert sc.changes() == (set(), set(), set())


def test_inotify_sees_every_way_into_an_empty_upper(tmp_path, monkeypatch) -> None:  # noqa: ANN001
    """A file, a directory, a rename from elsewhere, a hard link, a device-like whiteout
    stand-in (a fifo: mknod) each mark only their own upper; no upper is stat'ed."""
    ups = _uppers(tmp_path)
    sc = LayerScanner(ups)
    assert sc._ino is not None and sc._empty == [True, True, True]
    stats = []
    real_stat = os.stat
    monkeypatch.setattr(layerscan.os, "stat", lambda *a, **k: stats.append(a) or real_stat(*a, **k))
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "moved").write_bytes(b"m")
    (outside / "linked").write_bytes(b"l")
    steps = [
        (lambda: (tmp_path / "usr" / "f").write_bytes(b""), ({"/usr/f"}, set(), set())),
        (lambda: (tmp_path / "etc" / "d").mkdir(), (set(), set(), set())),   # a directory alone
        (lambda: os.rename(outside / "moved", tmp_path / "tmp" / "moved"),
         ({"/tmp/moved"}, set(), set())),
        (lambda: os.link(outside / "linked", tmp_path / "etc" / "d2"),
         ({"/etc/d2"}, set(), set())),
        (lambda: os.mkfifo(tmp_path / "usr" / "p"), ({"/usr/p"}, set(), set())),
    ]
    for make, want in steps:
        make()
        assert sc.changes() == want
    assert stats == []
    for p in ("usr/f", "usr/p", "tmp/moved", "etc/d2"):
        os.unlink(tmp_path / p)
    os.rmdir(tmp_path / "etc" / "d")
    assert sc.changes() == (set(), set(), {"/usr/f", "/usr/p", "/tmp/moved", "/etc/d2"})
    assert sc._empty == [True, True, True]   # empty again: trusted again


def test_inotify_gone_falls_back_to_reading_every_upper(tmp_path) -> None:  # noqa: ANN001
    """An upper removed (its watch is dropped): nothing is trusted any more; changes in the
    others are still found."""
    ups = _uppers(tmp_path)
    sc = LayerScanner(ups)
    os.rmdir(tmp_path / "usr")
    (tmp_path / "etc" / "x").write_bytes(b"")
    assert sc.changes()[0] == {"/etc/x"}
    assert sc._ino is None
    (tmp_path / "tmp" / "y").write_bytes(b"")
    assert sc.changes()[0] == {"/tmp/y"}


# -- non-empty uppers left unread while clean (runner15) -------------------------------------
def _trusted(tmp_path, monkeypatch, quiet=lambda: True):  # noqa: ANN001, ANN202
    """A scanner over three uppers, /tmp holding a small tree, trusted (``quiet``: no program
    alive, as in a sandbox between runs); _scan_dir calls are counted."""
    ups = _uppers(tmp_path)
    t = tmp_path / "tmp"
    (t / "d" / "e").mkdir(parents=True)
    for p in ("a", "d/b", "d/e/c"):
        (t / p).write_bytes(b"x" * 10)
        os.utime(t / p, (1, 1))   # (old times: any later write moves mtime, whatever the tick)
    sc = LayerScanner(ups)
    sc.quiet = quiet
    sc.changes()
    calls: list = []
    real = layerscan._scan_dir
    monkeypatch.setattr(layerscan, "_scan_dir", lambda *a, **k: calls.append(a[0]) or real(*a, **k))
    return sc, t, calls


def test_a_clean_full_upper_is_not_read_and_every_change_in_it_is_seen(tmp_path, monkeypatch) -> None:  # noqa: ANN001
    sc, t, calls = _trusted(tmp_path, monkeypatch)
    if sc._ino is None:
        pytest.skip("no inotify instance left")
    assert sc.trusted
    assert sc.changes() == (set(), set(), set()) and calls == []
    (t / "d" / "b").read_bytes()     # a read: an open and a close, no change
    os.listdir(t / "d")               # a listing
    assert sc.changes() == (set(), set(), set()) and calls == []
    steps = [
        (lambda: (t / "d" / "e" / "c").write_bytes(b"y" * 10), (set(), {"/tmp/d/e/c"}, set())),
        (lambda: open(t / "a", "ab").write(b"z"), (set(), {"/tmp/a"}, set())),
        (lambda: os.truncate(t / "d" / "b", 3), (set(), {"/tmp/d/b"}, set())),
        (lambda: os.utime(t / "a", (5, 5)), (set(), {"/tmp/a"}, set())),
        (lambda: os.rename(t / "d" / "b", t / "d" / "e" / "b2"), ({"/tmp/d/e/b2"}, set(), {"/tmp/d/b"})),
        (lambda: (t / "n").mkdir() or (t / "n" / "f").write_bytes(b"1"), ({"/tmp/n/f"}, set(), set())),
        (lambda: (t / "n" / "g").write_bytes(b"2"), ({"/tmp/n/g"}, set(), set())),   # (the new dir is watched)
        (lambda: os.link(t / "n" / "g", t / "d" / "hl"), ({"/tmp/d/hl"}, set(), set())),
        (lambda: os.symlink("/x", t / "d" / "e" / "sl"), ({"/tmp/d/e/sl"}, set(), set())),
        (lambda: os.unlink(t / "d" / "e" / "c"), (set(), set(), {"/tmp/d/e/c"})),
        (lambda: os.rename(t / "d", t / "d2"), ({"/tmp/d2/hl", "/tmp/d2/e/b2", "/tmp/d2/e/sl"}, set(),
                                              {"/tmp/d/hl", "/tmp/d/e/b2", "/tmp/d/e/sl"})),
        (lambda: (t / "d2" / "e" / "late").write_bytes(b"3"), ({"/tmp/d2/e/late"}, set(), set())),
    ]
    for make, want in steps:
        make()
        assert sc.changes() == want, make
    calls.clear()
    assert sc.changes() == (set(), set(), set()) and calls == []   # clean again


def test_a_write_through_a_shared_mapping_is_seen_while_its_file_is_open(tmp_path, monkeypatch) -> None:  # noqa: ANN001
    """The one write that raises no event: a store through a MAP_SHARED mapping. Its file was
    opened (for writing) and is not yet released while the mapping lives: the upper is read."""
    import subprocess
    import sys
    alive = [False]
    sc, t, calls = _trusted(tmp_path, monkeypatch, quiet=lambda: not alive[0])
    if sc._ino is None:
        pytest.skip("no inotify instance left")
    code = ("import mmap, sys\n"
            "f = open(sys.argv[1], 'r+b'); m = mmap.mmap(f.fileno(), 0); f.close()\n"
            "print('mapped', flush=True); sys.stdin.readline()\n"
            "m[0:1] = b'Q'; print('wrote', flush=True); sys.stdin.readline()\n")
    p = subprocess.Popen([sys.executable, "-c", code, str(t / "d" / "e" / "c")],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    alive[0] = True
    try:
        assert p.stdout.readline() == "mapped\n"
        assert sc.changes() == (set(), set(), set())
        calls.clear()
        p.stdin.write("\n")
        p.stdin.flush()
        assert p.stdout.readline() == "wrote\n"
        assert sc.changes() == (set(), {"/tmp/d/e/c"}, set())   # (still mapped: no event yet)
        assert calls
    finally:
        p.stdin.close()
        p.wait(10)
        alive[0] = False
    sc.changes()   # (its last close)
    calls.clear()
    assert sc.changes() == (set(), set(), set()) and calls == []


def test_a_directory_first_watched_while_programs_run_is_not_trusted(tmp_path, monkeypatch) -> None:  # noqa: ANN001
    """A program makes a directory and maps a file in it before any scan watches it (its
    open raised no event anyone saw): until a scan with no program alive, the upper is read
    at every scan, and the mapped write is found."""
    import subprocess
    import sys
    alive = [False]
    sc, t, calls = _trusted(tmp_path, monkeypatch, quiet=lambda: not alive[0])
    if sc._ino is None:
        pytest.skip("no inotify instance left")
    code = ("import mmap, os, sys\n"
            "d = sys.argv[1]; os.mkdir(d); p = os.path.join(d, 'm')\n"
            "open(p, 'wb').write(b'x' * 4096); os.utime(p, (1, 1))\n"
            "f = open(p, 'r+b'); m = mmap.mmap(f.fileno(), 0); f.close()\n"
            "print('mapped', flush=True); sys.stdin.readline()\n"
            "m[0:1] = b'Q'; print('wrote', flush=True); sys.stdin.readline()\n")
    p = subprocess.Popen([sys.executable, "-c", code, str(t / "new")],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    alive[0] = True
    try:
        assert p.stdout.readline() == "mapped\n"
        assert sc.changes() == ({"/tmp/new/m"}, set(), set())
        assert not sc.trusted
        p.stdin.write("\n")
        p.stdin.flush()
        assert p.stdout.readline() == "wrote\n"
        assert sc.changes() == (set(), {"/tmp/new/m"}, set())
    finally:
        p.stdin.close()
        p.wait(10)
        alive[0] = False
    sc.changes()
    assert sc.trusted
    calls.clear()
    assert sc.changes() == (set(), set(), set()) and calls == []


def test_untrusted_scanner_reads_every_full_upper(tmp_path, monkeypatch) -> None:  # noqa: ANN001
    """Outside a sandbox (other processes alive: never quiet) nothing non-empty is trusted."""
    sc, t, calls = _trusted(tmp_path, monkeypatch, quiet=lambda: False)
    assert not sc.trusted
    assert sc.changes() == (set(), set(), set())
    assert calls == [str(t)]


def test_past_the_watch_budget_an_upper_is_read_every_time(tmp_path, monkeypatch) -> None:  # noqa: ANN001
    monkeypatch.setattr(layerscan, "_MAX_WATCHES", 4)   # (the three tops + one)
    sc, t, calls = _trusted(tmp_path, monkeypatch)
    if sc._ino is None:
        pytest.skip("no inotify instance left")
    assert sc._empty[2] is None   # /tmp, /tmp/d, /tmp/d/e: not all watched
    assert sc.changes() == (set(), set(), set()) and calls == [str(t)]
    (t / "d" / "e" / "c").write_bytes(b"changed")
    assert sc.changes() == (set(), {"/tmp/d/e/c"}, set())
