"""The registries allowlist is read from pip, npm and apt configuration, http(s) sources only."""

from __future__ import annotations

from agentic_bash.network import NetworkPolicy
from agentic_bash.network import registries as reg


def test_pip_npm_and_apt_sources_are_read(tmp_path, monkeypatch) -> None:
    home = tmp_path / "home"
    (home / ".config" / "pip").mkdir(parents=True)
    (home / ".config" / "pip" / "pip.conf").write_text(
        "[global]\nindex-url = https://mirror.example.org/simple\n"
        "extra-index-url = file:///opt/local/simple https://extra.example.net/simple\n"
        "[install]\nfind-links = http://Wheels.Example.com./w\n")
    (home / ".npmrc").write_text("registry=https://npm.example.org/\n"
                                 "@corp:registry=https://npm.corp.example/\n")
    monkeypatch.setenv("PIP_EXTRA_INDEX_URL", "https://env.example.org/simple")
    monkeypatch.setenv("XDG_CONFIG_DIRS", str(tmp_path / "nothing"))
    monkeypatch.delenv("PIP_CONFIG_FILE", raising=False)
    apt = tmp_path / "apt"
    (apt / "sources.list.d").mkdir(parents=True)
    (apt / "sources.list").write_text(
        "# comment\ndeb [arch=amd64 signed-by=/k.gpg] http://deb.example.org/debian bookworm main\n"
        "deb-src https://src.example.org/debian bookworm main\n")
    (apt / "sources.list.d" / "a.sources").write_text(
        "Types: deb\nURIs: http://one.example.org/debian http://two.example.org/d\n"
        "Suites: x\n\nTypes: deb\nEnabled: no\nURIs: http://off.example.org/\nSuites: y\n")
    (apt / "sources.list.d" / "b.list.disabled").write_text("deb http://disabled.example.org/ x main\n")
    real = reg._apt_urls
    monkeypatch.setattr(reg, "_apt_urls", lambda root=str(apt): real(root))
    hosts = reg.package_registries(str(home))
    for h in ("pypi.org", "files.pythonhosted.org", "registry.npmjs.org", "mirror.example.org",
              "extra.example.net", "wheels.example.com", "env.example.org", "npm.example.org",
              "npm.corp.example", "deb.example.org", "src.example.org", "one.example.org",
              "two.example.org"):
        assert h in hosts, (h, hosts)
    for h in ("off.example.org", "disabled.example.org", "opt"):
        assert h not in hosts
    assert len(hosts) == len(set(hosts))


def test_policy_shortcut_is_an_allowlist() -> None:
    p = NetworkPolicy.coerce("registries")
    assert p.mode == "allowlist" and "pypi.org" in p.allow
    p2 = NetworkPolicy.registries("internal.example:443")
    assert "internal.example:443" in p2.allow
    # round-trips as a plain allowlist (snapshots, the server)
    assert NetworkPolicy.from_dict(p.to_dict()) == p


def test_cli_names_registries_among_the_modes() -> None:
    import subprocess
    import sys
    r = subprocess.run([sys.executable, "-m", "agentic_bash", "run", "--network", "nope",
                        "--cmd", "true"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "registries" in r.stderr
