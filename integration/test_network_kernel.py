"""Network policy on the real kernel, as root and as an unprivileged user (servers on host loopback only)."""

from __future__ import annotations

import os
import subprocess

import pytest

from _support import HERE, PIP_PACKAGE, _parse, pypi_reachable, sandbox_supported

NET_BATTERY = os.path.join(HERE, "_net_battery.py")
_cache: dict[str, dict] = {}

ok, why = sandbox_supported()
pytestmark = pytest.mark.skipif(not ok, reason=why)


@pytest.fixture(scope="module", params=["root", "user"])
def net(request: pytest.FixtureRequest) -> dict:
    who = request.param
    if who not in _cache:
        from agentic_bash.isolation.probe import probe
        if not probe().network_namespace:
            pytest.skip("no network namespaces")
        r = request.getfixturevalue("as_root" if who == "root" else "as_user")
        args = ["--pip", PIP_PACKAGE] if pypi_reachable() else []
        p = subprocess.run(r.prefix + [r.python, NET_BATTERY, *args], capture_output=True,
                           text=True, env=r.env, cwd=r.cwd, timeout=400)
        assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-5000:]
        _cache[who] = _parse(p.stdout)
    return _cache[who]


def _no_secret(net: dict, r: dict) -> None:
    assert net["secret"] not in r["out"] + r["err"], r


def test_default_is_public_through_the_proxy(net: dict) -> None:
    assert net["level"] == "namespace"
    mech = net["report"]["mechanisms"]
    assert mech["network_namespace"] == "enforced" and mech["network_proxy"] == "enforced"
    assert any(n.startswith("network: public") for n in net["report"]["notes"])
    env = net["default"]["env"]["out"]
    for k in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "http_proxy",
              "https_proxy", "no_proxy", "npm_config_https_proxy"):
        assert f"\n{k}=" in "\n" + env, k


def test_host_loopback_services_are_unreachable(net: dict) -> None:
    d = net["default"]
    for k in ("curl_noproxy", "curl_proxy", "curl_proxy_localhost", "curl_proxy_mapped",
              "curl_connect", "curl_socks", "python_tcp", "python_udp", "devtcp", "devudp"):
        _no_secret(net, d[k])
    assert d["devtcp"]["code"] != 0 and d["python_tcp"]["code"] != 0
    assert d["python_udp"]["code"] != 0 and d["devudp"]["code"] != 0
    # through the proxy each attempt is refused with a one-line reason and a violation
    for k in ("curl_proxy", "curl_proxy_localhost", "curl_proxy_mapped", "curl_connect",
              "curl_socks"):
        v = d[k]["violations"]
        assert v and v[0][0] == "network" and "loopback" in v[0][2], (k, d[k])
    assert d["curl_proxy"]["out"].startswith("agentic-bash proxy: ")
    assert "403" in d["curl_connect"]["err"]


def test_metadata_and_host_addresses_refused(net: dict) -> None:
    d = net["default"]
    assert "link-local" in d["curl_metadata"]["violations"][0][2]
    for k, r in d.items():
        if k.startswith("host_addr"):
            _no_secret(net, r)
            assert r["violations"], (k, r)


def test_raw_and_packet_sockets_fail(net: dict) -> None:
    d = net["default"]
    assert d["raw"]["code"] != 0 and "raw ok" not in d["raw"]["out"]
    assert d["packet"]["code"] != 0 and "packet ok" not in d["packet"]["out"]


def test_tools_that_ignore_the_proxy(net: dict) -> None:
    d = net["default"]
    if not net["transparent"]:
        assert "Network is unreachable" in d["direct_private"]["out"], d["direct_private"]
        return
    # nftables in the sandbox's namespace sent them to the proxy, which refused
    assert "Connection reset by peer" in d["direct_private"]["out"], d["direct_private"]
    assert any(v[1].startswith("10.255.255.1:80") for v in d["direct_private"]["violations"])
    assert "Operation not permitted" in d["direct_udp"]["out"], d["direct_udp"]
    if net["transparent6"]:
        assert "Connection reset by peer" in d["direct_private6"]["out"], d["direct_private6"]
        assert any(v[1].startswith("[fd00::5]:80") for v in d["direct_private6"]["violations"])
    else:
        assert "unreachable" in d["direct_private6"]["out"], d["direct_private6"]
    if "host_own" in net:
        _no_secret(net, d["direct_host_own"])
        assert d["direct_host_own"]["violations"], d["direct_host_own"]
        assert net["redirect_allowed"]["out"] == net["secret"] + "\n", net["redirect_allowed"]
        f = net["sni_fronting"]["violations"]
        assert f and "TLS SNI 'evil.test'" in f[0][2], net["sni_fronting"]
        assert not net["sni_listed"]["violations"], net["sni_listed"]
        # the listed name's client reached the server (a plain-text reply breaks its TLS)
        assert "SSL" in net["sni_listed"]["out"], net["sni_listed"]


def test_allowlist(net: dict) -> None:
    a = net["allow"]
    # listed names reach (the test resolver points them at the host service, with
    # block_private=False), an unlisted one is refused with a violation
    assert net["secret"] in a["listed"]["out"] and not a["listed"]["violations"]
    assert net["secret"] in a["wild"]["out"]
    assert net["secret"] in a["devtcp_listed"]["out"]
    for k in ("evil", "bare"):
        _no_secret(net, a[k])
        assert "not in the allowlist" in a[k]["violations"][0][2], a[k]
    assert a["getent_ok"]["out"].split() == ["127.0.0.1", "ok.test"]
    assert a["getent_evil"]["out"] == "rc=2\n" and a["getent_evil"]["violations"]
    # the on_violation hook saw each refusal the results carried
    assert sorted(map(tuple, net["hook"])) == sorted(
        (v[0], v[1]) for r in a.values() for v in r["violations"])


def test_allowed_name_resolving_to_private_is_refused(net: dict) -> None:
    p = net["private"]
    assert "169.254.169.254" in p["meta"]["violations"][0][2]
    assert "loopback" in p["lo"]["violations"][0][2]
    _no_secret(net, p["lo"])
    assert p["getent_meta"]["out"] == "rc=2\n"


def test_deny_is_loopback_only(net: dict) -> None:
    d = net["deny"]
    assert d["curl"]["code"] != 0 and d["getent"]["out"] == "rc=2\n"
    assert d["env"]["out"] == "0\n"
    assert net["deny_report"]["mechanisms"]["network_proxy"] == "disabled"


def test_nothing_left_open_after_close(net: dict) -> None:
    assert net["fds_leaked"] == 0


def test_pip_through_the_proxy(net: dict) -> None:
    if "pip_install" not in net:
        pytest.skip("PyPI is not reachable from this machine")
    assert net["pip_install"]["out"] == "imported\n", net["pip_install"]
    assert any(e["target"].startswith("pypi.org:") and e["verdict"] == "allowed"
               for e in net["pip_log"]), net["pip_log"]
    assert PIP_PACKAGE in net["pip_download_allow"]["out"], net["pip_download_allow"]
    part = net["pip_download_partial"]
    assert part["code"] != 0
    assert any(v[1].startswith("files.pythonhosted.org:") for v in part["violations"]), part
