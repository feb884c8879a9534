"""Pure pieces of the sandbox layout: sanitised /etc, writable paths, mounts, environment."""

from __future__ import annotations

import os
import sys

import pytest

from agentic_bash.executors.sandboxed import _norm_mounts, sandbox_env
from agentic_bash.isolation.landlock_rules import host_read_rules
from agentic_bash.isolation.rootfs import prepare_base, writable_paths

linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux layout")


@linux
def test_sanitised_etc_has_no_secrets(tmp_path) -> None:
    prepare_base(str(tmp_path))
    etc = tmp_path / "etc"
    names = set(os.listdir(etc))
    for secret in ("shadow", "gshadow", "shadow-", "ssh", "sudoers", "npmrc", "machine-id"):
        assert secret not in names
    assert not (etc / "ssl" / "private").exists()
    assert not any(p.name.startswith("auth.conf") for p in (etc / "apt").glob("*")) \
        if (etc / "apt").exists() else True
    passwd = (etc / "passwd").read_text()
    with open("/etc/passwd") as f:
        host_users = {line.split(":")[0] for line in f if line.strip()}
    ours = {line.split(":")[0] for line in passwd.splitlines()}
    assert ours <= {"root", "_apt", "nobody"} | (host_users & {"root", "_apt", "nobody"})
    assert (etc / "hosts").read_text().startswith("127.0.0.1")
    assert (tmp_path / "empty").is_dir() and not os.listdir(tmp_path / "empty")


def test_writable_paths() -> None:
    base = writable_paths({"workdir": "/workspace", "home": "/home/user"})
    assert set(base) == {"/workspace", "/home/user", "/tmp", "/var/tmp", "/dev"}
    root = writable_paths({"workdir": "/w", "home": "/root", "cow_system": True,
                           "mounts": [{"target": "/data", "mode": "cow"},
                                      {"target": "/ro", "mode": "ro"}]})
    assert {"/usr", "/etc", "/opt", "/var", "/data", "/w", "/root"} <= set(root)
    assert "/ro" not in root and "/" not in root


@linux
def test_landlock_level_read_rules_skip_secrets() -> None:
    read, list_only = host_read_rules({"writable": ["/tmp/ws"], "python_binds": ["/opt/venv"]})
    assert "/etc/shadow" not in read and "/etc/ssh" not in read and "/etc/ssl/private" not in read
    assert "/usr" in read and "/tmp/ws" in read and "/opt/venv" in read
    assert not any(p in ("/", "/home", "/root", "/tmp", "/run") for p in read)
    assert list_only == ["/etc"]


def test_norm_mounts_forms(tmp_path) -> None:
    d = str(tmp_path)
    want = [{"source": d, "target": "/workspace", "mode": "cow", "readonly": False}]
    assert _norm_mounts({"/workspace": d}) == want
    assert _norm_mounts({"/workspace/": (d, "cow")}) == want
    assert _norm_mounts([(d, "/workspace")]) == want
    assert _norm_mounts({"/data": (d, "ro")})[0]["readonly"]
    with pytest.raises(ValueError):
        _norm_mounts({"/x": (d, "bogus")})
    with pytest.raises(NotADirectoryError):
        _norm_mounts({"/x": str(tmp_path / "missing")})


def test_sandbox_env_is_clean(monkeypatch) -> None:
    monkeypatch.setenv("AGB_SECRET_TOKEN", "s3cr3t")
    env = sandbox_env({"FOO": "1", "TERM": "xterm"}, home="/home/user", unprivileged=True)
    assert "AGB_SECRET_TOKEN" not in env
    assert env["FOO"] == "1" and env["TERM"] == "xterm"  # the caller's choice wins
    assert env["PAGER"] == "cat" and env["DEBIAN_FRONTEND"] == "noninteractive"
    # (no PIP_USER: pip falls back to ~/.local itself, and PIP_USER breaks a venv's pip)
    assert env["PIP_BREAK_SYSTEM_PACKAGES"] == "1" and "PIP_USER" not in env
    assert "PIP_USER" not in sandbox_env(None, home="/root", unprivileged=False)
