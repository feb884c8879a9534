"""NetworkPolicy: the modes, allow/deny rules, and the checks every outbound connection passes."""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Union

from .._values import value_methods

__all__ = ["MODES", "UNRESOLVED", "NetworkPolicy", "Rule", "blocked_reason", "canonical_host",
           "parse_rule", "unwrap"]

MODES: tuple[str, ...] = ("public", "deny", "host", "allowlist")
UNRESOLVED = "cannot resolve "
"""Prefix of decide()'s reason when a name has no address: a failure, not a refusal."""
_ALIASES = {"allow": "host"}

IPAddress = Union[ipaddress.IPv4Address, ipaddress.IPv6Address]
IPNetwork = Union[ipaddress.IPv4Network, ipaddress.IPv6Network]

# Security invariant: an explicit list, not ipaddress's is_private/is_global. Those also
# reject documentation ranges (192.0.2/24, 198.51.100/24, 203.0.113/24, 2001:db8::/32), and
# this machine's package registries resolve into one, so `pip install` would break; and what
# they call private changes between Python versions.
_BLOCKED: tuple[tuple[IPNetwork, str], ...] = tuple(
    (ipaddress.ip_network(n), why) for n, why in (
        ("0.0.0.0/8", "unspecified"),
        ("127.0.0.0/8", "loopback"),
        ("10.0.0.0/8", "private (RFC 1918)"),
        ("172.16.0.0/12", "private (RFC 1918)"),
        ("192.168.0.0/16", "private (RFC 1918)"),
        ("169.254.0.0/16", "link-local (cloud metadata)"),
        ("100.64.0.0/10", "carrier-grade NAT"),
        ("224.0.0.0/4", "multicast"),
        ("240.0.0.0/4", "reserved/broadcast"),
        ("::/128", "unspecified"),
        ("::1/128", "loopback"),
        ("fc00::/7", "unique-local"),
        ("fe80::/10", "link-local"),
        ("fec0::/10", "site-local"),
        ("ff00::/8", "multicast"),
    ))
_NAT64 = (ipaddress.ip_network("64:ff9b::/96"), ipaddress.ip_network("64:ff9b:1::/48"))
_COMPAT = ipaddress.ip_network("::/96")
_SIXTOFOUR = ipaddress.ip_network("2002::/16")


def unwrap(addr: IPAddress) -> IPAddress:
    """The IPv4 address an IPv6 one carries (IPv4-mapped, NAT64, IPv4-compatible, 6to4), or
    ``addr`` itself: ``::ffff:127.0.0.1`` must be judged as 127.0.0.1."""
    if isinstance(addr, ipaddress.IPv4Address):
        return addr
    if addr.ipv4_mapped is not None:
        return addr.ipv4_mapped
    packed = int(addr)
    if any(addr in n for n in _NAT64):
        return ipaddress.IPv4Address(packed & 0xFFFFFFFF)
    if addr in _COMPAT and packed > 1:
        return ipaddress.IPv4Address(packed & 0xFFFFFFFF)
    if addr in _SIXTOFOUR:
        return ipaddress.IPv4Address((packed >> 80) & 0xFFFFFFFF)
    return addr


def blocked_reason(addr: str | IPAddress) -> str | None:
    """Why ``addr`` is not a public address (loopback, RFC 1918, link-local, CGNAT, ULA,
    unspecified, multicast), judged after unwrapping; ``None`` when it is public."""
    a = ipaddress.ip_address(addr) if isinstance(addr, str) else addr
    if isinstance(a, ipaddress.IPv6Address) and a.scope_id:
        a = ipaddress.IPv6Address(a.compressed.split("%")[0])
    for cand in dict.fromkeys((a, unwrap(a))):
        for net, why in _BLOCKED:
            if cand.version == net.version and cand in net:
                return f"{cand} is {why}"
    return None


def canonical_host(host: str) -> str:
    """Lower case, no trailing dot, IDNA (punycode) for non-ASCII labels; brackets removed
    from IPv6 literals. Raises ValueError for a name that cannot be a host name."""
    h = host.strip()
    if h.startswith("[") and h.endswith("]"):
        h = h[1:-1]
    h = h.rstrip(".").lower()
    if not h:
        raise ValueError(f"empty host name: {host!r}")
    try:
        return ipaddress.ip_address(h).compressed
    except ValueError:
        pass
    if not h.isascii():
        try:
            import idna  # the maintained IDNA 2008 codec, when installed
            h = idna.encode(h, uts46=True).decode("ascii")
        except ImportError:
            h = h.encode("idna").decode("ascii")
        except Exception as e:  # noqa: BLE001 - idna raises its own IDNAError
            raise ValueError(f"invalid host name {host!r}: {e}") from None
    if len(h) > 253 or not re.fullmatch(r"[a-z0-9_](?:[a-z0-9_-]{0,62}(?:\.[a-z0-9_-]{1,63})*)?",
                                        h) or any(not lab for lab in h.split(".")):
        raise ValueError(f"invalid host name {host!r}")
    return h


@value_methods
@dataclass(frozen=True, slots=True, repr=False, eq=False)
class Rule:
    """One allow/deny entry: a host name (``suffix`` for ``*.name``) or a CIDR network, with an
    optional port (``None`` = any)."""

    text: str
    name: str | None = None
    suffix: bool = False
    net: IPNetwork | None = None
    port: int | None = None

    def _port_ok(self, port: int | None, deny: bool) -> bool:
        # port None is a DNS question: an allow rule with any port answers it, a deny rule
        # only refuses the name when it has no port
        if port is None:
            return not deny or self.port is None
        return self.port is None or self.port == port

    def matches_name(self, host: str, port: int | None, deny: bool = False) -> bool:
        if self.name is None or not self._port_ok(port, deny):
            return False
        if self.suffix:
            # `*.x.test` matches a.x.test and a.b.x.test, never x.test itself or x.test.evil
            return host.endswith("." + self.name)
        return host == self.name

    def matches_addr(self, addr: IPAddress, port: int | None, deny: bool = False) -> bool:
        if self.net is None or not self._port_ok(port, deny):
            return False
        return any(a.version == self.net.version and a in self.net
                   for a in dict.fromkeys((addr, unwrap(addr))))


def _target(host: str, port: int | None) -> str:
    if port is None:
        return host
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _port(text: str, rule: str) -> int:
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise ValueError(f"bad port in network rule {rule!r}")
    return int(text)


def parse_rule(text: str) -> Rule:
    """``name``, ``*.suffix``, ``a.b.c.d[/len]``, ``[v6][/len]`` or ``v6/len``, each with an
    optional ``:port`` (IPv6 with a port needs brackets: ``[2001:db8::]/32:443``)."""
    if not isinstance(text, str):
        raise TypeError(f"network rules are strings, not {type(text).__name__}")
    s = text.strip()
    if not s:
        raise ValueError("empty network rule")
    port: int | None = None
    m = re.fullmatch(r"\[([0-9A-Fa-f:.]+)\](/\d+)?(?::(\d+))?", s)
    if m:
        addr, plen, p = m.group(1), m.group(2) or "", m.group(3)
        port = _port(p, text) if p is not None else None
        try:
            return Rule(text, net=ipaddress.ip_network(addr + plen, strict=False), port=port)
        except ValueError as e:
            raise ValueError(f"bad network rule {text!r}: {e}") from None
    if s.count(":") >= 2:  # bare IPv6, no port
        try:
            return Rule(text, net=ipaddress.ip_network(s, strict=False))
        except ValueError as e:
            raise ValueError(f"bad network rule {text!r}: {e}") from None
    if ":" in s:
        s, p = s.rsplit(":", 1)
        port = _port(p, text)
    if re.fullmatch(r"[0-9.]+(/\d+)?", s):
        try:
            return Rule(text, net=ipaddress.ip_network(s, strict=False), port=port)
        except ValueError as e:
            raise ValueError(f"bad network rule {text!r}: {e}") from None
    suffix = s.startswith("*.")
    try:
        name = canonical_host(s[2:] if suffix else s)
    except ValueError as e:
        raise ValueError(f"bad network rule {text!r}: {e}") from None
    if "*" in name:
        raise ValueError(f"bad network rule {text!r}: '*' only as a leading '*.'")
    return Rule(text, name=name, suffix=suffix, port=port)


@value_methods
@dataclass(frozen=True, slots=True, repr=False, eq=False)
class NetworkPolicy:
    """What a sandbox may reach. ``mode``: ``public`` (the default: any host whose addresses
    are public, through the proxy), ``deny`` (loopback only), ``host`` (the host's network
    stack, unconfined; ``"allow"`` is its old name) or ``allowlist`` (only ``allow`` rules).

    ``NetworkPolicy(allow=[...])`` is an allowlist; ``deny`` rules refuse even what is
    allowed; ``block_private`` refuses names that resolve to non-public addresses (an explicit
    CIDR allow rule still reaches its own network). Name rules are exact or ``*.suffix``
    (subdomains only), canonicalised (case, trailing dot, IDNA); CIDR rules may carry a port
    (``10.1.2.0/24:443``, ``[2001:db8::]/32:443``)."""

    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    block_private: bool = True
    mode: str = ""
    resolver: Any = field(default=None, compare=False, repr=False)
    """Host-side name lookup for the proxy (``fn(name) -> [addresses]`` or a mapping), e.g. a
    test resolver; default: the host's resolver. Never sent to the sandbox."""
    allow_rules: tuple[Rule, ...] = field(default=(), init=False, repr=False, compare=False)
    deny_rules: tuple[Rule, ...] = field(default=(), init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        for name in ("allow", "deny"):
            v = getattr(self, name)
            if isinstance(v, str):
                v = (v,)
            if not isinstance(v, Iterable):
                raise TypeError(f"NetworkPolicy({name}=) takes a list of rules")
            object.__setattr__(self, name, tuple(v))
        if not isinstance(self.block_private, bool):
            raise TypeError("NetworkPolicy(block_private=) takes a bool")
        mode = _ALIASES.get(self.mode, self.mode) or ("allowlist" if self.allow else "public")
        if mode not in MODES:
            raise ValueError(f"network mode must be one of {', '.join(MODES)}; got {self.mode!r}")
        if mode in ("deny", "host") and (self.allow or self.deny):
            raise ValueError(f"network mode {mode!r} takes no allow/deny rules")
        object.__setattr__(self, "mode", mode)
        object.__setattr__(self, "allow_rules", tuple(parse_rule(r) for r in self.allow))
        object.__setattr__(self, "deny_rules", tuple(parse_rule(r) for r in self.deny))

    # -- construction -------------------------------------------------------------------
    @classmethod
    def coerce(cls, value: Any) -> NetworkPolicy:
        """A policy from ``Sandbox(network=)``: a mode name, a NetworkPolicy or its dict."""
        if value is None:
            return cls(mode="public")
        if isinstance(value, cls):
            return value
        if value == "registries":
            return cls.registries()
        if isinstance(value, str):
            return cls(mode=value)
        if isinstance(value, Mapping):
            return cls.from_dict(value)
        raise TypeError("network= takes 'public', 'deny', 'host', 'registries' or a NetworkPolicy, not "
                        f"{type(value).__name__}")

    @classmethod
    def registries(cls, *extra: str, **kw: Any) -> NetworkPolicy:
        """An allowlist of the package registries (PyPI, npm, and every http(s) source this
        host's pip, npm and apt configuration names) plus ``extra`` rules;
        ``Sandbox(network="registries")`` is the same."""
        from .registries import package_registries
        return cls(allow=package_registries() + tuple(extra), **kw)

    def to_dict(self) -> dict[str, Any]:
        return {"mode": self.mode, "allow": list(self.allow), "deny": list(self.deny),
                "block_private": self.block_private}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> NetworkPolicy:
        return cls(allow=tuple(d.get("allow") or ()), deny=tuple(d.get("deny") or ()),
                   block_private=bool(d.get("block_private", True)), mode=str(d.get("mode", "")))

    @property
    def proxied(self) -> bool:
        """True when the sandbox reaches out only through the library's proxy."""
        return self.mode in ("public", "allowlist")

    @property
    def own_namespace(self) -> bool:
        return self.mode != "host"

    # -- checks -------------------------------------------------------------------------
    def check_name(self, host: str, port: int | None) -> str | None:
        """Refusal reason for ``host:port`` before resolving (``host`` canonical), or None.
        An allowlist name that no name rule lists may still pass by a CIDR rule later."""
        if self.mode == "deny":
            return "network access is denied"
        if self.mode == "host":
            return None
        for r in self.deny_rules:
            if r.matches_name(host, port, deny=True):
                return f"{_target(host, port)} matches deny rule {r.text!r}"
        return None

    def name_allowed(self, host: str, port: int | None) -> bool:
        return self.mode == "public" or any(r.matches_name(host, port) for r in self.allow_rules)

    def check_addr(self, addr: IPAddress, port: int | None, *, by_name: bool) -> str | None:
        """Refusal reason for connecting to ``addr:port`` (``by_name``: a listed name resolved
        to it), or None."""
        if self.mode == "deny":
            return "network access is denied"
        if self.mode == "host":
            return None
        for r in self.deny_rules:
            if r.matches_addr(addr, port, deny=True):
                return f"{addr} matches deny rule {r.text!r}"
        cidr_ok = any(r.matches_addr(addr, port) for r in self.allow_rules)
        if self.mode == "allowlist" and not (by_name or cidr_ok):
            return f"{_target(str(addr), port)} is not in the allowlist"
        if self.block_private and not cidr_ok:
            why = blocked_reason(addr)
            if why:
                return f"{why}, not a public address"
        return None

    def decide(self, host: str, port: int | None, resolve: Any,
               local_addrs: frozenset[str] = frozenset()) -> tuple[list[str], str]:
        """The checked addresses to connect to for ``host:port`` (``port`` None: a DNS
        question), or ``([], reason)``. ``resolve(name) -> [addresses]`` is called only for
        names; ``local_addrs`` (this host's interfaces) are refused like loopback.

        Security invariant: the caller connects only to the returned addresses (never
        re-resolves), and a name that answers with any refused address is refused whole."""
        try:
            h = canonical_host(host)
        except ValueError as e:
            return [], str(e)
        try:
            literal: IPAddress | None = ipaddress.ip_address(h)
        except ValueError:
            literal = None
        if literal is not None:
            why = self.check_addr(literal, port, by_name=False) or self._local(h, local_addrs)
            return ([], why) if why else ([h], "")
        why = self.check_name(h, port)
        if why:
            return [], why
        by_name = self.name_allowed(h, port)
        if not by_name and not any(r.net is not None for r in self.allow_rules):
            return [], f"{_target(h, port)} is not in the allowlist"
        try:
            addrs = [ipaddress.ip_address(str(a).split("%")[0]).compressed
                     for a in (resolve(h) or ())]
        except (OSError, ValueError):
            addrs = []
        addrs = list(dict.fromkeys(addrs))
        if not addrs:
            return [], UNRESOLVED + h
        for a in addrs:
            why = self.check_addr(ipaddress.ip_address(a), port, by_name=by_name) \
                or self._local(a, local_addrs)
            if why:
                return [], f"{h} resolves to {a}: {why}"
        return addrs, ""

    def _local(self, addr: str, local_addrs: frozenset[str]) -> str:
        if self.mode == "host" or not self.block_private:
            return ""
        ip = ipaddress.ip_address(addr.split("%")[0])
        # judged unwrapped too (attack9): ``[::ffff:<this host's IPv4>]`` reached a host
        # service listening on 0.0.0.0 through the proxy, as did the NAT64/6to4/compat forms
        if not {addr, ip.compressed, unwrap(ip).compressed} & local_addrs:
            return ""
        if any(r.matches_addr(ip, None) for r in self.allow_rules):
            return ""
        return f"{addr} is an address of this host"

