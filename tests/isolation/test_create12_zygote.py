"""create12: the zygote's bytecode choice and its start-up command line."""

from __future__ import annotations

import os
import sys

import pytest

from agentic_bash.isolation import zygote


def _fake_tree(root, compiled: bool = True) -> list[tuple[str, str]]:
    """A package directory holding a source (and, if ``compiled``, bytecode) of every
    preloaded module of ours; returns (source, bytecode) pairs."""
    tag = sys.implementation.cache_tag
    pairs = []
    for name in zygote.PRELOAD:
        if not name.startswith("agentic_bash."):
            continue
        parts = name.split(".")[1:]
        d = os.path.join(root, *parts[:-1])
        os.makedirs(os.path.join(d, "__pycache__"), exist_ok=True)
        src = os.path.join(d, parts[-1] + ".py")
        pyc = os.path.join(d, "__pycache__", f"{parts[-1]}.{tag}.pyc")
        with open(src, "w") as f:
            f.write("x = 1\n")
        os.utime(src, (1_000_000, 1_000_000))
        if compiled:
            with open(pyc, "wb") as f:
                f.write(b"\0")
            os.utime(pyc, (2_000_000, 2_000_000))
        pairs.append((src, pyc))
    with open(os.path.join(root, "__init__.py"), "w") as f:
        f.write("")
    return pairs


def test_tree_compiled_needs_every_preloaded_module(tmp_path):
    pairs = _fake_tree(str(tmp_path))
    assert len(pairs) > 5
    assert zygote._tree_compiled(str(tmp_path)) is True
    # the package's own __init__ compiled (what a caller writing bytecode leaves) but one
    # preloaded module not: the zygote must not be told to skip writing bytecode
    os.unlink(pairs[-1][1])
    assert zygote._tree_compiled(str(tmp_path)) is False


def test_tree_compiled_refuses_stale_bytecode(tmp_path):
    pairs = _fake_tree(str(tmp_path))
    src, _ = pairs[len(pairs) // 2]
    os.utime(src, (3_000_000, 3_000_000))   # edited after it was compiled
    assert zygote._tree_compiled(str(tmp_path)) is False


def test_tree_compiled_none_at_all(tmp_path):
    _fake_tree(str(tmp_path), compiled=False)
    assert zygote._tree_compiled(str(tmp_path)) is False


def test_bytecode_env_uses_private_cache_when_tree_is_partial(tmp_path, monkeypatch):
    monkeypatch.setattr(zygote, "_tree_compiled", lambda root=None: False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    env = zygote._bytecode_env()
    d = env.get("PYTHONPYCACHEPREFIX")
    assert d is not None and d.startswith(str(tmp_path))
    assert "PYTHONDONTWRITEBYTECODE" not in env
    assert os.stat(d).st_mode & 0o077 == 0
    monkeypatch.setattr(zygote, "_tree_compiled", lambda root=None: True)
    assert zygote._bytecode_env() == {"PYTHONDONTWRITEBYTECODE": "1"}


def test_bytecode_env_refuses_a_shared_cache_dir(tmp_path, monkeypatch):
    monkeypatch.setattr(zygote, "_tree_compiled", lambda root=None: False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    d = tmp_path / "agentic-bash" / f"pycache-{os.geteuid()}"
    d.mkdir(parents=True)
    d.chmod(0o777)
    assert zygote._bytecode_env() == {"PYTHONDONTWRITEBYTECODE": "1"}


def _site(monkeypatch, dirs: list[str]) -> None:
    import site
    monkeypatch.setattr(site, "getsitepackages", lambda: list(dirs))
    monkeypatch.setattr(site, "ENABLE_USER_SITE", False)


def test_site_dirs_mirror_site_without_running_it(tmp_path, monkeypatch):
    sp = tmp_path / "site-packages"
    extra = tmp_path / "extra"
    sp.mkdir()
    extra.mkdir()
    (sp / "a.pth").write_text(f"# a comment\n{extra}\n\n{tmp_path / 'missing'}\n")
    # the two whose import lines the zygote may skip: setuptools' shim, our own editable finder
    (sp / "distutils-precedence.pth").write_text("import os; var = 'SETUPTOOLS_USE_DISTUTILS'\n")
    (sp / "__editable__.agentic_bash-0.1.0.pth").write_text("import __editable___x; x.install()\n")
    _site(monkeypatch, [str(sp), str(tmp_path / "absent")])
    assert zygote._site_dirs() == [str(sp), str(extra)]


def test_site_dirs_none_when_a_pth_runs_code(tmp_path, monkeypatch):
    sp = tmp_path / "site-packages"
    sp.mkdir()
    (sp / "other.pth").write_text("import some_finder; some_finder.install()\n")
    _site(monkeypatch, [str(sp)])
    assert zygote._site_dirs() is None   # (the zygote then starts with site, as before)


def _hello(monkeypatch, site_dirs) -> tuple[dict, list[bytes]]:
    if site_dirs is not None:
        monkeypatch.setattr(zygote, "_site_dirs", site_dirs)
    z = zygote.Zygote()
    try:
        hello = z.ready()
        with open(f"/proc/{hello['pid']}/cmdline", "rb") as f:
            return hello, f.read().split(b"\0")
    finally:
        z.close()


def test_zygote_without_site_preloads_what_it_does_with_site(monkeypatch):
    if zygote._site_dirs() is None:
        pytest.skip("this interpreter's .pth files run code: the zygote starts with site")
    fast, argv = _hello(monkeypatch, None)
    assert b"-S" in argv, argv
    slow, argv = _hello(monkeypatch, lambda: None)
    assert b"-S" not in argv, argv
    assert fast["preload_failed"] == slow["preload_failed"], (fast, slow)
