"""The namespace probe's answer is cached across processes, keyed and guarded."""

from __future__ import annotations

import json
import os

import pytest

from agentic_bash.isolation import probe as P


@pytest.fixture
def counted(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("AGENTIC_BASH_PROBE_CACHE", raising=False)
    calls = []

    def fake_child():
        calls.append(1)
        return {"user_namespace": True, "mount_namespace": False}, {
            "mount_namespace": "unshare(CLONE_NEWNS): nope"}

    monkeypatch.setattr(P, "_run_ns_child", fake_child)
    P.probe.cache_clear()
    yield calls
    P.probe.cache_clear()


def test_second_probe_reads_the_cache(counted):
    a = P.probe()
    P.probe.cache_clear()
    b = P.probe()
    assert len(counted) == 1
    assert a.user_namespace and b.user_namespace and not b.mount_namespace
    assert b.reason("mount_namespace") == "unshare(CLONE_NEWNS): nope"
    st = os.stat(P.cache_path())
    assert st.st_mode & 0o777 == 0o600
    assert os.stat(os.path.dirname(P.cache_path())).st_mode & 0o777 == 0o700


def test_key_change_measures_again(counted, monkeypatch):
    P.probe()
    P.probe.cache_clear()
    monkeypatch.setattr(P, "_cache_key", lambda: "another-kernel")
    P.probe()
    assert len(counted) == 2


def test_file_others_could_write_is_ignored(counted):
    P.probe()
    os.chmod(P.cache_path(), 0o666)
    P.probe.cache_clear()
    P.probe()
    assert len(counted) == 2


def test_expired_or_garbage_entries_are_ignored(counted):
    P.probe()
    path = P.cache_path()
    with open(path) as f:
        data = json.load(f)
    for entry in data["entries"].values():
        entry["time"] -= P._CACHE_TTL + 1
    with open(path, "w") as f:
        json.dump(data, f)
    P.probe.cache_clear()
    P.probe()
    assert len(counted) == 2
    with open(path, "w") as f:
        f.write("{not json")
    P.probe.cache_clear()
    caps = P.probe()
    assert len(counted) == 3 and caps.user_namespace


def test_disabled_by_environment(counted, monkeypatch):
    monkeypatch.setenv("AGENTIC_BASH_PROBE_CACHE", "0")
    assert P.cache_path() is None
    P.probe()
    P.probe.cache_clear()
    P.probe()
    assert len(counted) == 2


def test_invalidate_drops_file_and_memory(counted):
    P.probe()
    assert os.path.exists(P.cache_path())
    P.invalidate_cache()
    assert not os.path.exists(P.cache_path())
    P.probe()
    assert len(counted) == 2


def test_failed_probe_process_is_not_remembered(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(P, "_run_ns_child", lambda: ({}, {
        "user_namespace": "probe process failed: TimeoutExpired()"}))
    P.probe.cache_clear()
    try:
        assert not P.probe().user_namespace
        assert not os.path.exists(P.cache_path())
    finally:
        P.probe.cache_clear()


def test_several_interpreters_share_the_file(counted, monkeypatch):
    keys = iter(["venv-a", "venv-b", "venv-a", "venv-b"])
    monkeypatch.setattr(P, "_cache_key", lambda: next(keys))
    for _ in range(4):
        P.probe.cache_clear()
        P.probe()
    assert len(counted) == 2   # each key measured once, then both served from the file
