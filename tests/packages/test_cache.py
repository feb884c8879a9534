"""The shared cache keeps only what the host verified: apt archives its own index confirms, pip files it fetched itself."""

from __future__ import annotations

import hashlib
import os

import pytest

from agentic_bash.network import NetworkPolicy
from agentic_bash.packages import cache
from agentic_bash.packages.manifest import PackageInfo

PUBLIC = NetworkPolicy()


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
    assert cache.promote(sb, [PackageInfo("sl", "1", "apt"), PackageInfo("x", "9", "apt")],
                         apt_archives=["/a"]) == 0
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


_FAKE_PIP = """
import os, sys
args = sys.argv[1:]
d = args[args.index("-d") + 1]
name, version = args[-1].split("==")
with open(os.path.join(sys.argv[0] + ".calls"), "a") as f:
    f.write(args[-1] + "\\n")
if name == "missing":
    sys.exit("ERROR: No matching distribution found for missing")
open(os.path.join(d, f"{name.replace('-', '_')}-{version}-py3-none-any.whl"), "wb").write(b"wheel:" + args[-1].encode())
open(os.path.join(d, "other-1.0-py3-none-any.whl"), "wb").write(b"not asked for")
"""


@pytest.fixture
def fake_pip(root, tmp_path, monkeypatch):
    pytest.importorskip("msgpack")
    script = tmp_path / "fakepip.py"
    script.write_text(_FAKE_PIP)
    f = cache._HostFetcher()
    f.pip = [__import__("sys").executable, str(script)]
    monkeypatch.setattr(cache, "_fetcher", f)
    return script


def test_pip_package_is_fetched_by_the_host_into_both_cache_layouts(root, fake_pip) -> None:
    assert cache.promote(None, [PackageInfo("Demo.Pkg", "1.0", "pip")], network=PUBLIC) == 1
    assert cache.wait_promotions(60)
    body = b"wheel:demo-pkg==1.0"
    url = cache.pypi_url("demo_pkg-1.0-py3-none-any.whl", body)
    h = hashlib.blake2b(body, digest_size=32).hexdigest()
    assert url.endswith(f"/{h[:2]}/{h[2:4]}/{h[4:]}/demo_pkg-1.0-py3-none-any.whl")
    key = hashlib.sha224(url.encode()).hexdigest()
    old = os.path.join(root, "pip", "http", *key[:5], key)
    new = os.path.join(root, "pip", "http-v2", *key[:5], key)
    assert open(new + ".body", "rb").read() == body
    # what pip's own CacheControl reads back: a fresh 200 with the body
    ser = pytest.importorskip("pip._vendor.cachecontrol.serialize")

    class Req:
        headers: dict = {}
    for path, body_file in ((old, None), (new, open(new + ".body", "rb"))):
        resp = ser.Serializer().loads(Req(), open(path, "rb").read(), body_file)
        assert resp is not None and resp.status == 200
        assert resp.read() == body
        assert "max-age=" in resp.headers["cache-control"] and "date" in resp.headers
        if body_file:
            body_file.close()
    # only the package asked for is stored; nothing else lands in the cache
    stored = [f for dp, _, fs in os.walk(os.path.join(root, "pip")) for f in fs]
    assert len(stored) == 4, stored  # http entry, http-v2 entry + body, the fetched mark
    # asked again (this process or another): not fetched again
    assert cache.promote(None, [PackageInfo("demo-pkg", "1.0", "pip")], network=PUBLIC) == 0
    assert cache.wait_promotions(60)
    cache._fetcher.seen.clear()
    assert cache.promote(None, [PackageInfo("demo-pkg", "1.0", "pip")], network=PUBLIC) == 1
    assert cache.wait_promotions(60)
    assert open(str(fake_pip) + ".calls").read() == "demo-pkg==1.0\n"  # once


def test_pip_fetch_failure_stores_nothing_and_never_raises(root, fake_pip) -> None:
    assert cache.promote(None, [PackageInfo("missing", "1", "pip"),
                                PackageInfo("bad name;rm", "1", "pip")], network=PUBLIC) == 1
    assert cache.wait_promotions(60)
    assert "No matching distribution" in cache._fetcher.last["error"]
    assert [f for dp, _, fs in os.walk(os.path.join(root, "pip")) for f in fs] == []


def test_host_fetches_only_for_a_sandbox_that_reaches_the_registry_itself(root, fake_pip) -> None:
    pkg = [PackageInfo("demo", "1", "pip")]
    # a sandbox that cannot reach PyPI cannot make the host ask PyPI for a name of its choosing
    for policy in (None, NetworkPolicy(mode="deny"), NetworkPolicy(allow=["example.org"]),
                   NetworkPolicy(allow=["pypi.org"], deny=["files.pythonhosted.org"])):
        assert cache.promote(None, pkg, network=policy) == 0, policy
    assert cache.promote(None, pkg, network=NetworkPolicy.registries()) == 1
    assert cache.wait_promotions(60)


def test_host_fetches_are_bounded(root, fake_pip) -> None:
    many = [PackageInfo(f"p{i}", "1", "pip") for i in range(100)]
    assert cache.promote(None, many, network=PUBLIC) == cache.MAX_FETCHES_PER_RUN
    assert cache.wait_promotions(120)


def test_host_pip_never_builds_from_source(root, monkeypatch) -> None:
    seen = []
    f = cache._HostFetcher()
    f.pip = ["pip"]
    monkeypatch.setattr(f, "_run", lambda cmd, *a: seen.append(cmd))
    f._fetch_pip(root, "x", "1", root)
    assert "--only-binary=:all:" in seen[0] and "--no-deps" in seen[0]
