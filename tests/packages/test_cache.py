"""The shared apt cache keeps only archives whose SHA256 the host's own index confirms."""

from __future__ import annotations

import hashlib
import os

import pytest

from agentic_bash.packages import cache
from agentic_bash.packages.manifest import PackageInfo


class _FakeSandbox:
    def __init__(self, files: dict[str, bytes]) -> None:
        self.files = files
        self.reads: list[str] = []

    def read_file(self, path: str) -> bytes:
        self.reads.append(path)
        try:
            return self.files[path]
        except KeyError:
            raise FileNotFoundError(path) from None


@pytest.fixture
def root(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTIC_BASH_CACHE", str(tmp_path / "c"))
    return cache.cache_root()


def _index(entries: dict[tuple[str, str], tuple[str, bytes]]):
    def look(name: str, version: str):
        e = entries.get((name, version))
        return None if e is None else (e[0], hashlib.sha256(e[1]).hexdigest())
    return look


def test_verified_archive_is_promoted(root, monkeypatch) -> None:
    good = b"!<arch>\nreal deb"
    monkeypatch.setattr(cache, "_apt_index", _index({("sl", "1"): ("sl_1_amd64.deb", good)}))
    sb = _FakeSandbox({"/a/sl_1_amd64.deb": good})
    assert cache.promote(sb, [PackageInfo("sl", "1", "apt")], apt_archives=["/a"]) == 1
    p = os.path.join(root, "apt", "sl_1_amd64.deb")
    assert open(p, "rb").read() == good
    assert os.stat(p).st_mode & 0o777 == 0o644
    # already cached: not read again
    sb.reads.clear()
    assert cache.promote(sb, [PackageInfo("sl", "1", "apt")], apt_archives=["/a"]) == 0
    assert sb.reads == []


def test_tampered_or_unknown_archive_is_refused(root, monkeypatch) -> None:
    good = b"real"
    monkeypatch.setattr(cache, "_apt_index", _index({("sl", "1"): ("sl_1_amd64.deb", good)}))
    sb = _FakeSandbox({"/a/sl_1_amd64.deb": b"trojan", "/a/x_9_all.deb": b"x"})
    assert cache.promote(sb, [PackageInfo("sl", "1", "apt"), PackageInfo("x", "9", "apt"),
                              PackageInfo("pipthing", "1", "pip")], apt_archives=["/a"]) == 0
    assert [f for f in os.listdir(os.path.join(root, "apt")) if not f.startswith(".")] == []


def test_missing_archive_and_failing_reads_never_raise(root, monkeypatch) -> None:
    monkeypatch.setattr(cache, "_apt_index", _index({("sl", "1"): ("sl_1_amd64.deb", b"r")}))

    class Broken:
        def read_file(self, path: str) -> bytes:
            raise RuntimeError("sandbox gone")
    assert cache.promote(_FakeSandbox({}), [PackageInfo("sl", "1", "apt")], apt_archives=["/a"]) == 0
    assert cache.promote(Broken(), [PackageInfo("sl", "1", "apt")], apt_archives=["/a"]) == 0


def test_host_index_lookup_parses_apt_cache(monkeypatch) -> None:
    import shutil
    if shutil.which("apt-cache") is None:
        pytest.skip("no apt-cache here")
    import subprocess
    p = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", "coreutils"], capture_output=True, text=True)
    if p.returncode != 0:
        pytest.skip("coreutils not known to dpkg")
    got = cache._apt_index("coreutils", p.stdout)
    if got is None:
        pytest.skip("the installed coreutils version is not in this machine's apt lists")
    fname, sha = got
    assert fname.startswith("coreutils_") and fname.endswith(".deb") and len(sha) == 64
