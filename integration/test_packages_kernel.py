"""Real installs from the registries inside a default Sandbox(), as root and as an unprivileged user."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess

import pytest

from _support import HERE, _parse, pypi_reachable, sandbox_supported

PROBE = os.path.join(HERE, "_packages_probe.py")

pytestmark = pytest.mark.slow


def _host_fingerprint(path: str) -> str:
    """Names, sizes and mtimes below ``path``: any write on the host changes it."""
    h = hashlib.sha256()
    for root, dirs, files in os.walk(path):
        dirs.sort()
        for f in sorted(files):
            p = os.path.join(root, f)
            try:
                st = os.lstat(p)
            except OSError:
                continue
            h.update(f"{p}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


def _probe(runner, what: str) -> dict:
    p = subprocess.run(runner.prefix + [runner.python, PROBE, what], capture_output=True,
                       text=True, env=runner.env, cwd=runner.cwd, timeout=600)
    assert p.returncode == 0, f"{p.stdout[-3000:]}\n{p.stderr[-3000:]}"
    return _parse(p.stdout)


@pytest.fixture(params=["as_root", "as_user"])
def who(request: pytest.FixtureRequest):
    ok, why = sandbox_supported()
    if not ok:
        pytest.skip(why)
    return request.getfixturevalue(request.param)


def _apt_reachable() -> bool:
    return shutil.which("apt-get") is not None and pypi_reachable()


def test_apt_get_install_runs_by_name_and_leaves_the_host_alone(who) -> None:
    if not _apt_reachable():
        pytest.skip("no apt-get or no package registry reachable")
    before = {p: _host_fingerprint(p) for p in ("/usr/games", "/var/lib/dpkg/info")}
    status = open("/var/lib/dpkg/status", "rb").read()
    out = _probe(who, "apt")
    assert out["level"] == "namespace"
    stdout, _, _ = out["apt"]
    assert "rc=0" in stdout, stdout
    assert "/sl\n" in stdout and "sl=" in stdout, stdout
    assert ["sl", out["installed"][0][1], "apt"] in out["installed"]
    assert any(p[0] == "sl" and p[2] == "apt" for p in out["manifest"])
    assert "already the newest version" in out["again"]
    assert "found" in out["restored"][0]
    assert any(p[0] == "sl" for p in out["restored"][1])
    # the host's /usr and dpkg database are never written
    assert not os.path.exists("/usr/games/sl")
    assert open("/var/lib/dpkg/status", "rb").read() == status
    assert {p: _host_fingerprint(p) for p in before} == before


def test_pip_install_then_import_and_snapshot(who) -> None:
    if not pypi_reachable():
        pytest.skip("PyPI not reachable")
    out = _probe(who, "pip")
    assert "ok" in out["pip"][0], out["pip"]
    assert any(p[0].lower() == "termcolor" and p[2] == "pip" for p in out["installed"])
    assert "again" in out["restored"][0]
    assert any(p[0].lower() == "termcolor" for p in out["restored"][1])


def test_npm_install_into_the_workspace(who) -> None:
    if shutil.which("npm") is None or not pypi_reachable():
        pytest.skip("no npm or no registry reachable")
    out = _probe(who, "npm")
    assert "rc=0" in out["npm"][0] and "true" in out["npm"][0], out["npm"]
    assert any(p[0] == "is-number" and p[2] == "npm" for p in out["installed"])


def test_apt_archives_are_shared_after_host_verification(who) -> None:
    if not _apt_reachable():
        pytest.skip("no apt-get or no package registry reachable")
    out = _probe(who, "cache")
    assert int(out["first_gets"]) >= 1
    assert any(n.startswith("sl_") and n.endswith(".deb") for n in out["cached"])
    # the planted archive failed the host's check and never reached the shared cache
    assert out["poison_added"] == 0
    assert out["cached_after_poison"] == out["cached"]
    # the second sandbox downloads nothing and still gets a working sl
    first, _, rest = out["second"].partition("\n")
    assert first == "0" and rest.strip().endswith("/sl"), out["second"]


def test_pip_and_npm_downloads_are_shared_through_the_host(who) -> None:
    if not pypi_reachable():
        pytest.skip("PyPI not reachable")
    out = _probe(who, "pipcache")
    if "Downloading cowsay-6.1" not in out["first"]:
        pytest.skip(f"cowsay was not downloaded here (a local mirror?): {out['first']!r}")
    assert "imported" in out["first"], out["first"]
    assert out["promoted"] is True, out
    # the host fetched it itself and stored it in both of pip's cache layouts
    assert any(f.startswith("pip/http/") for f in out["host_files"]), out["host_files"]
    assert any(f.startswith("pip/http-v2/") and f.endswith(".body") for f in out["host_files"]), out
    # the second sandbox downloads nothing: pip says so
    assert "Using cached cowsay-6.1-py3-none-any.whl" in out["second"], out["second"]
    assert "Downloading" not in out["second"] and "imported" in out["second"], out["second"]
    assert out["env"] == "/.agentic-bash/pip-cache\n"
    # what a sandbox writes to its pip cache stays in its own layer
    assert out["plant"] == "wrote\nshared-refused\n", out["plant"]
    assert "planted" not in out["third_sees"], out["third_sees"]
    assert "planted" not in out["host_after"] and "planted2" not in out["host_after"]
    # npm: the first sandbox fetches the tarball, the second finds it by its integrity
    if shutil.which("npm"):
        assert "npm_first" in out, out
        get = "fetch GET 200 https://registry.npmjs.org/is-number/-/is-number-7.0.0.tgz"
        assert get in out["npm_first"] and "added 1 package" in out["npm_first"], out
        assert out["npm_promoted"] is True
        assert get not in out["npm_second"] and "added 1 package" in out["npm_second"], out
        assert re.search(r"is-number-7\.0\.0\.tgz \d+ms \(cache hit\)", out["npm_second"]), out


def test_registries_allowlist_lets_installs_through_and_nothing_else(who) -> None:
    if not _apt_reachable():
        pytest.skip("no apt-get or no package registry reachable")
    out = _probe(who, "registries")
    stdout, _ = out["run"]
    assert "Successfully installed cowsay-6.1" in stdout, out
    assert "apt=0" in stdout, out
    assert "curl=0" not in stdout, out
    assert any("github.com" in v and "allowlist" in v for v in out["violations"]), out


def test_image_is_a_shared_lower(who) -> None:
    if not pypi_reachable():
        pytest.skip("PyPI not reachable")
    out = _probe(who, "image")
    assert any(p[0].lower() == "termcolor" for p in out["image_packages"])
    assert out["image_runs"] == ["tc\nfrom-image\n"] * 5
    assert out["image_marker_after"] == "mine\n"          # writes land in the session layer
    assert any(p[0].lower() == "termcolor" for p in out["image_sb_packages"])
    before, after = out["image_bytes"]
    assert before == after                                   # no sandbox wrote into the image
