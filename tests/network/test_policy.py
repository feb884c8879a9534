"""NetworkPolicy: rule parsing, canonical names, the non-public address list, decisions."""

from __future__ import annotations

import ipaddress

import pytest
from hypothesis import given, settings, strategies as st

from agentic_bash.network import NetworkPolicy, blocked_reason, canonical_host, parse_rule
from agentic_bash.network.policy import UNRESOLVED, unwrap


@pytest.mark.parametrize("addr", [
    "127.0.0.1", "127.255.0.9", "10.1.2.3", "172.16.0.1", "172.31.255.255", "192.168.1.1",
    "169.254.169.254", "100.64.0.1", "100.127.255.254", "0.0.0.0", "224.0.0.1",
    "255.255.255.255", "::1", "::", "fd00::1", "fc00::5", "fe80::1", "ff02::1",
    "::ffff:127.0.0.1", "::ffff:169.254.169.254", "::ffff:10.0.0.1", "64:ff9b::7f00:1",
    "64:ff9b::a9fe:a9fe", "64:ff9b:1::a00:1", "2002:7f00:1::", "::7f00:1",
])
def test_non_public_addresses_are_blocked(addr: str) -> None:
    assert blocked_reason(addr) is not None


@pytest.mark.parametrize("addr", [
    "203.0.113.80",   # documentation range: this machine's registries resolve here
    "198.51.100.7", "192.0.2.1", "2001:db8::1", "8.8.8.8", "1.1.1.1", "172.32.0.1",
    "100.128.0.1", "2606:4700::1111", "64:ff9b::808:808",
])
def test_public_and_documentation_addresses_pass(addr: str) -> None:
    assert blocked_reason(addr) is None


def test_unwrap_forms() -> None:
    v4 = ipaddress.ip_address("127.0.0.1")
    for form in ("::ffff:127.0.0.1", "64:ff9b::127.0.0.1", "::127.0.0.1", "2002:7f00:1::"):
        assert unwrap(ipaddress.ip_address(form)) == v4


@given(st.integers(0, 2**32 - 1))
@settings(max_examples=300, deadline=None)
def test_mapped_and_nat64_judged_like_their_ipv4(n: int) -> None:
    v4 = ipaddress.IPv4Address(n)
    want = blocked_reason(v4) is None
    assert (blocked_reason(ipaddress.IPv6Address((0xFFFF << 32) | n)) is None) == want
    assert (blocked_reason(ipaddress.IPv6Address((0x64FF9B << 96) | n)) is None) == want


def test_canonical_host() -> None:
    assert canonical_host("WWW.Example.ORG.") == "www.example.org"
    assert canonical_host("bücher.example") == canonical_host("xn--bcher-kva.example")
    assert canonical_host("[::1]") == "::1"
    for bad in ("", ".", "a..b", "a b", "-x..", "x/y"):
        with pytest.raises(ValueError):
            canonical_host(bad)


def test_rules_parse() -> None:
    r = parse_rule("*.GitHub.com.")
    assert (r.name, r.suffix, r.port) == ("github.com", True, None)
    r = parse_rule("files.example.org:443")
    assert (r.name, r.suffix, r.port) == ("files.example.org", False, 443)
    r = parse_rule("10.1.2.0/24:443")
    assert (str(r.net), r.port) == ("10.1.2.0/24", 443)
    r = parse_rule("[2001:db8::]/32:8443")
    assert (str(r.net), r.port) == ("2001:db8::/32", 8443)
    assert str(parse_rule("2001:db8::/32").net) == "2001:db8::/32"
    for bad in ("", "x:0", "x:65536", "x:http", "a.*.b", "*", "10.0.0.0/33", "[::1"):
        with pytest.raises(ValueError):
            parse_rule(bad)


def test_wildcards_match_subdomains_only() -> None:
    p = NetworkPolicy(allow=["*.x.test", "exact.test"])
    assert p.mode == "allowlist"
    assert p.name_allowed("a.x.test", 443) and p.name_allowed("a.b.x.test", 80)
    assert not p.name_allowed("x.test", 443)
    assert not p.name_allowed("x.test.evil", 443)
    assert not p.name_allowed("evilx.test", 443)
    assert p.name_allowed("exact.test", 1) and not p.name_allowed("a.exact.test", 1)


def _res(table: dict[str, list[str]]):
    return lambda h: table.get(h, [])


def test_decide_public() -> None:
    p = NetworkPolicy()
    assert p.mode == "public"
    r = _res({"pypi.test": ["203.0.113.80"], "meta.test": ["169.254.169.254"],
              "lo.test": ["127.0.0.1"], "mixed.test": ["203.0.113.9", "10.0.0.1"],
              "mapped.test": ["::ffff:127.0.0.1"]})
    assert p.decide("PyPI.test.", 443, r) == (["203.0.113.80"], "")
    for name in ("meta.test", "lo.test", "mixed.test", "mapped.test"):
        addrs, why = p.decide(name, 443, r)
        assert addrs == [] and "not a public address" in why, (name, why)
    assert p.decide("nowhere.test", 443, r)[1].startswith(UNRESOLVED)
    assert "not a public address" in p.decide("127.0.0.1", 80, r)[1]
    assert "address of this host" in p.decide("203.0.113.5", 80, r,
                                               frozenset({"203.0.113.5"}))[1]


def test_decide_allowlist_and_deny() -> None:
    r = _res({"a.x.test": ["198.51.100.1"], "x.test.evil": ["198.51.100.2"],
              "lo.x.test": ["127.0.0.1"], "bad.x.test": ["198.51.100.3"]})
    p = NetworkPolicy(allow=["*.x.test", "10.1.2.0/24:443"], deny=["bad.x.test"])
    assert p.decide("a.x.test", 443, r) == (["198.51.100.1"], "")
    assert "not in the allowlist" in p.decide("x.test.evil", 443, r)[1]
    assert "not a public address" in p.decide("lo.x.test", 443, r)[1]
    assert "deny rule" in p.decide("bad.x.test", 443, r)[1]
    # an explicit CIDR rule reaches its private network, on its port only
    assert p.decide("10.1.2.7", 443, r) == (["10.1.2.7"], "")
    assert "not in the allowlist" in p.decide("10.1.2.7", 22, r)[1]
    assert NetworkPolicy(allow=["*.x.test"], block_private=False).decide(
        "lo.x.test", 80, r) == (["127.0.0.1"], "")


def test_deny_and_host_modes() -> None:
    assert NetworkPolicy.coerce("deny").decide("203.0.113.1", 80, _res({}))[1]
    assert NetworkPolicy.coerce("allow").mode == "host"
    assert NetworkPolicy.coerce("host").decide("127.0.0.1", 80, _res({})) == (["127.0.0.1"], "")
    with pytest.raises(ValueError):
        NetworkPolicy(mode="deny", allow=["x.test"])


def test_policy_round_trips_as_json() -> None:
    import json
    p = NetworkPolicy(allow=["*.x.test", "10.0.0.0/8:22"], deny=["y.x.test"],
                      block_private=False)
    assert NetworkPolicy.from_dict(json.loads(json.dumps(p.to_dict()))) == p


def test_sandbox_rejects_bad_network_before_starting() -> None:
    from agentic_bash import Sandbox
    with pytest.raises(ValueError, match="network"):
        Sandbox("virtual", network="sometimes")
    with pytest.raises(TypeError, match="network"):
        Sandbox("virtual", network=3)
    with pytest.raises(ValueError, match="network"):
        Sandbox("virtual", network={"allow": ["a.*"]})


def test_virtual_has_no_network_by_default() -> None:
    from agentic_bash import Sandbox
    with Sandbox("virtual") as sb:
        assert "network" in str(sb.isolation)
        r = sb.run("exec 3<>/dev/tcp/127.0.0.1/9; echo $?")
        assert r.stdout.strip() != "0"
