"""The package manifest: what pip/npm wrote is recognised, removals forget, state round-trips."""

from __future__ import annotations

import json

from agentic_bash.packages.manifest import Manifest, PackageInfo

SITE = "/usr/local/lib/python3.11/dist-packages"


def _reader(files: dict[str, bytes]):
    def read(p: str) -> bytes:
        try:
            return files[p]
        except KeyError:
            raise FileNotFoundError(p) from None
    return read


def test_pip_dist_info_and_npm_package_json_are_recognised() -> None:
    files = {
        f"{SITE}/Foo_Bar-1.2.dist-info/METADATA": b"Metadata-Version: 2.1\nName: Foo-Bar\nVersion: 1.2\n\nbody\nName: not-this\n",
        "/workspace/node_modules/@scope/pkg/package.json": json.dumps({"name": "@scope/pkg", "version": "3.0.1"}).encode(),
        "/workspace/node_modules/plain/package.json": json.dumps({"name": "plain", "version": "1.0.0"}).encode(),
        "/workspace/src/package.json": b"{}",                     # a project's own: not a package
        "/workspace/x.dist-info/METADATA": b"Name: x\nVersion: 1\n",  # not in a site dir
    }
    m = Manifest()
    m.observe(list(files), (), (), _reader(files))
    got = m.take_run()
    assert set(got) == {PackageInfo("Foo-Bar", "1.2", "pip"), PackageInfo("@scope/pkg", "3.0.1", "npm"),
                        PackageInfo("plain", "1.0.0", "npm")}
    assert m.take_run() == ()          # the run's list is taken once
    assert [p.name for p in m] == ["@scope/pkg", "plain", "Foo-Bar"]   # by manager, then name


def test_upgrade_replaces_and_removal_forgets() -> None:
    m = Manifest()
    meta = f"{SITE}/foo_bar-1.0.dist-info/METADATA"
    m.observe([meta], (), (), _reader({meta: b"Name: foo-bar\nVersion: 1.0\n"}))
    meta2 = f"{SITE}/foo_bar-2.0.dist-info/METADATA"
    m.observe([meta2], (), [meta], _reader({meta2: b"Name: foo-bar\nVersion: 2.0\n"}))
    # an upgrade deletes the old dist-info and writes the new one in the same run
    assert list(m) == [PackageInfo("foo-bar", "2.0", "pip")]
    m2 = Manifest()
    m2.observe([meta], (), (), _reader({meta: b"Name: foo-bar\nVersion: 1.0\n"}))
    m2.observe((), (), [meta], _reader({}))
    assert list(m2) == []


def test_unreadable_or_malformed_metadata_is_skipped() -> None:
    m = Manifest()
    bad = f"{SITE}/x-1.dist-info/METADATA"
    npm = "/w/node_modules/y/package.json"
    m.observe([bad, npm, f"{SITE}/gone-1.dist-info/METADATA"], (), (),
              _reader({bad: b"no headers here", npm: b"not json"}))
    assert list(m) == []


def test_state_round_trip() -> None:
    m = Manifest()
    m.add(PackageInfo("sl", "5.02-1+b1", "apt"))
    m.add(PackageInfo("requests", "2.32.3", "pip"))
    m2 = Manifest()
    m2.load(json.loads(json.dumps(m.to_json())))
    assert list(m2) == list(m)
    assert m2.take_run() == ()         # loading is not installing


def test_virtual_session_state_carries_the_manifest() -> None:
    import agentic_bash as ab
    with ab.Sandbox(isolation="virtual") as sb:
        sb._ex.packages.add(PackageInfo("sl", "1", "apt"))
        snap = sb.snapshot()
    with ab.Sandbox.from_snapshot(snap, isolation="virtual") as sb2:
        assert sb2.packages == [PackageInfo("sl", "1", "apt")]
