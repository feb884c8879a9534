"""hide= and read_only= under attack: virtual (VFS gate) in-process, namespace (mounts) as root and unprivileged."""

from __future__ import annotations

import pytest

import agentic_bash as ab
from _battery import run_battery
from agentic_bash.vfs.protect import PathRules, compile_glob

HIDE = ["**/.env", "**/*.pem", ".git/config"]
READ_ONLY = [".git/hooks", ".bashrc"]


# -- the rules ---------------------------------------------------------------------------
@pytest.mark.parametrize("pattern,path,hit", [
    ("**/.env", ".env", True), ("**/.env", "a/b/.env", True), ("**/.env", "a/.envx", False),
    ("**/.env", ".env/inner", True), ("**/*.pem", "k.pem", True), ("**/*.pem", "d/.x.pem", True),
    ("**/*.pem", "k.pem.bak", False), (".git/config", ".git/config", True),
    (".git/config", "a/.git/config", False), (".git/hooks", ".git/hooks/pre-commit", True),
    ("*.key", "a/b.key", False), ("a/*/c", "a/b/c", True), ("a/*/c", "a/b/d/c", False),
    ("a/**/c", "a/c", True), ("a/**/c", "a/x/y/c", True), ("[ab].txt", "a.txt", True),
    ("[!ab].txt", "a.txt", False), ("?.txt", "ab.txt", False), ("**", "anything/at/all", True),
])
def test_glob(pattern: str, path: str, hit: bool) -> None:
    assert bool(compile_glob(pattern).fullmatch(path)) is hit


def test_rules_are_relative_to_the_workspace() -> None:
    r = PathRules(HIDE, READ_ONLY, "/workspace")
    assert r.hidden("/workspace/.env") and r.hidden("/workspace/x/y/.env")
    assert r.hidden("/workspace//x/../.env")
    assert not r.hidden("/etc/.env") and not r.hidden("/workspace")
    assert r.readonly("/workspace/.git/hooks/x") and not r.readonly("/workspace/.git/config2")


@pytest.mark.parametrize("kw,exc", [
    ({"hide": ".env"}, TypeError), ({"hide": [1]}, TypeError), ({"hide": ["/etc/x"]}, ValueError),
    ({"hide": ["../x"]}, ValueError), ({"read_only": [""]}, ValueError),
    ({"read_only": {"a": 1}}, TypeError), ({"allow_ptrace": 1}, TypeError),
])
def test_bad_arguments_are_refused_before_anything_starts(kw: dict, exc: type) -> None:
    with pytest.raises(exc):
        ab.Sandbox("virtual", **kw)


def test_levels_that_cannot_enforce_them_refuse() -> None:
    with pytest.raises(ab.IsolationUnavailable):
        ab.Sandbox("none", hide=["**/.env"])


# -- virtual: the VFS gate ---------------------------------------------------------------
@pytest.fixture
def ws(tmp_path):
    files = {".env": "SECRET_ENV\n", "sub/deep/.env": "SECRET_DEEP\n", "sub/k.pem": "SECRET_PEM\n",
             ".git/config": "SECRET_GIT\n", ".git/HEAD": "ref\n", ".git/hooks/pre-commit": "hook\n",
             ".bashrc": "rc\n", "readme": "public\n"}
    for rel, text in files.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    before = {rel: (tmp_path / rel).read_text() for rel in files}
    yield tmp_path
    assert {rel: (tmp_path / rel).read_text() for rel in files} == before  # host untouched


@pytest.fixture
def vsb(ws):
    s = ab.Sandbox("virtual", mounts={"/workspace": str(ws)}, hide=HIDE, read_only=READ_ONLY)
    yield s
    s.close()


def _no_secret(r: ab.Result) -> None:
    assert "SECRET" not in r.stdout + r.stderr, (r.stdout, r.stderr)


def test_virtual_report_says_the_gate_enforces_them(vsb) -> None:
    assert vsb.isolation.mechanisms["protected_paths"].startswith("enforced")
    assert any("hidden: **/.env" in n for n in vsb.isolation.notes)


@pytest.mark.parametrize("script", [
    "cat .env sub/deep/.env sub/k.pem .git/config",
    "ls -la . sub sub/deep .git; echo * .* sub/deep/.*; find .; grep -r SECRET .",
    "ln -s .env l1; cat l1; ln -s /workspace/.git l3; cat l3/config; ln .env h1; cat h1",
    "cat /proc/self/root/workspace/.env; cd sub/deep && cat ../../.env; cat //workspace/./.env",
    "mv sub s2; cat s2/deep/.env; mv .git g2; cat g2/config; mv sub/k.pem k.txt; cat k.txt",
    "tar cf /tmp/t.tar . && tar tf /tmp/t.tar; cp -r . /tmp/c; cat /tmp/c/.env; "
    "while read l; do echo $l; done < .env; echo \"$(<.env)\"",
])
def test_virtual_hidden_paths_are_absent(vsb, script: str) -> None:
    r = vsb.run(script)
    _no_secret(r)
    with pytest.raises(FileNotFoundError):
        vsb.read_file("/workspace/sub/deep/.env")
    assert "readme" in vsb.run("ls /workspace").stdout  # the rest stays visible


def test_virtual_hidden_names_cannot_be_created(vsb) -> None:
    r = vsb.run("echo made > .env; echo x > new.pem; mkdir -p a && echo y > a/.env; "
                "ls -a . a")
    assert ".env" not in r.stdout.split() and "new.pem" not in r.stdout.split()
    assert "Permission denied" in r.stderr
    with pytest.raises(PermissionError):
        vsb.write_file("/workspace/b/.env", b"x")


@pytest.mark.parametrize("script", [
    "echo evil > .git/hooks/pre-commit", "echo evil >> .bashrc", "truncate -s0 .bashrc",
    "rm -f .bashrc .git/hooks/pre-commit", "rm -rf .git/hooks", "mv .bashrc b2",
    "mv .git/hooks h2", "echo evil > x; mv -f x .bashrc", "ln -sf /tmp/evil .bashrc",
    "touch .git/hooks/new; chmod 777 .bashrc", "sed -i s/hook/evil/ .git/hooks/pre-commit",
    "mv .git g3; mkdir -p .git/hooks; echo evil > .git/hooks/pre-commit",
])
def test_virtual_read_only_paths_refuse_changes(vsb, script: str) -> None:
    vsb.run(script)
    r = vsb.run("cd /workspace; cat .bashrc .git/hooks/pre-commit; ls .git/hooks")
    assert r.stdout == "rc\nhook\npre-commit\n", (script, r.stdout, r.stderr)
    with pytest.raises(OSError):
        vsb.write_file("/workspace/.bashrc", b"evil")


# -- namespace (and virtual again) from a subprocess, as root and unprivileged -------------
def _run(request: pytest.FixtureRequest, who: str, what: str, token: str) -> dict:
    return run_battery(request, who, what, token, timeout=400)


def _kernel_ok() -> bool:
    from _support import sandbox_supported
    return sandbox_supported()[0]


kernel = pytest.mark.skipif(not _kernel_ok(), reason="kernel sandbox unavailable")


@pytest.fixture(params=["root", "user"])
def prot(request: pytest.FixtureRequest, token: str) -> dict:
    return _run(request, request.param, "protected", token)


ATTACK_NAMES = ["read", "list", "links", "proc", "lower_view", "rename", "write_ro",
                "delete_ro", "mount_tricks"]


@kernel
@pytest.mark.slow
@pytest.mark.parametrize("level", ["auto"])
@pytest.mark.parametrize("name", ATTACK_NAMES)
def test_protected_paths_hold(prot: dict, level: str, name: str) -> None:
    o = prot[level]
    assert o["mech"] and o["mech"].startswith("enforced"), o["report"]
    tok = prot["token"]
    got = o[name]["out"] + o[name]["err"]
    for secret in ("SECRET_ENV_", "SECRET_DEEP_", "SECRET_PEM_", "SECRET_GIT_"):
        assert secret + tok not in got, (name, got[-3000:])
    assert o[name]["ro_inside"] == "rc\nhook\npre-commit\n", (name, o[name])


@kernel
@pytest.mark.slow
@pytest.mark.parametrize("level", ["auto"])
def test_protected_paths_through_the_file_api(prot: dict, level: str) -> None:
    o = prot[level]
    assert o["api_read"] == ["FileNotFoundError"] * 3, o["api_read"]
    assert "written" not in o["api_write"], o["api_write"]
    assert o["after_api"] == "rc\nhook\n"
    assert o["public"].startswith("public\n")  # (.git/HEAD itself may be gone: rm -rf .git)
    assert prot["host_unchanged"]


@kernel
@pytest.mark.slow
@pytest.mark.parametrize("who", ["root", "user"])
def test_ptrace_denied_by_default_and_allowed_on_request(request, who: str, token: str) -> None:
    o = _run(request, who, "ptrace", token)
    deny, allow = o["False"], o["True"]
    assert "rc=0" not in deny["out"] and any("ptrace" in v for v in deny["violations"]), deny
    assert any("refused (seccomp)" in n for n in deny["notes"])
    assert "rc=0" in allow["out"] and int(allow["out"].split()[-1]) >= 1, allow
    assert not any("ptrace" in v for v in allow["violations"]), allow
    assert any("allowed (allow_ptrace=True)" in n for n in allow["notes"])
