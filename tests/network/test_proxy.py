"""The filtering proxy on host loopback, without a sandbox: CONNECT, http://, SOCKS5, SNI, DNS."""

from __future__ import annotations

import socket
import ssl
import struct
import threading
from typing import Iterator

import pytest

from agentic_bash.network import NetworkPolicy
from agentic_bash.network.proxy import get_proxy


@pytest.fixture
def origin() -> Iterator[int]:
    """A tiny HTTP origin on host loopback; answers every request with ORIGIN and the Host."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)
    srv.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                c, _ = srv.accept()
            except OSError:
                continue
            with c:
                c.settimeout(5)
                buf = b""
                try:
                    while b"\r\n\r\n" not in buf:
                        d = c.recv(4096)
                        if not d:
                            break
                        buf += d
                except OSError:
                    continue
                line = buf.split(b"\r\n", 1)[0]
                body = b"ORIGIN " + line + b"\n"
                try:
                    c.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
                except OSError:
                    pass
    t = threading.Thread(target=serve, daemon=True)
    t.start()
    yield srv.getsockname()[1]
    stop.set()
    t.join(2)
    srv.close()


def attach(policy: NetworkPolicy, udp: bool = False):
    lst = socket.socket()
    lst.bind(("127.0.0.1", 0))
    lst.listen(16)
    addr = lst.getsockname()
    u = None
    if udp:
        u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        u.bind(("127.0.0.1", 0))
    att = get_proxy().attach(policy, tcp=[lst], udp=[u] if u else [], label="test",
                             resolver=policy.resolver)
    return att, addr, (u.getsockname() if u else None)


def _ask(addr, data: bytes) -> bytes:
    with socket.create_connection(addr, timeout=5) as s:
        s.sendall(data)
        out = b""
        while True:
            d = s.recv(65536)
            if not d:
                return out
            out += d


def test_connect_to_loopback_is_refused_with_a_violation(origin: int) -> None:
    att, addr, _ = attach(NetworkPolicy())
    try:
        out = _ask(addr, b"CONNECT 127.0.0.1:%d HTTP/1.1\r\n\r\n" % origin)
        assert out.startswith(b"HTTP/1.1 403 ")
        assert b"loopback" in out and b"ORIGIN" not in out
        v, = att.drain()
        assert (v.kind, v.target) == ("network", f"127.0.0.1:{origin}")
        assert "loopback" in v.reason
        # every spelling of the host's loopback
        for host in (b"[::ffff:127.0.0.1]", b"[64:ff9b::7f00:1]", b"localhost", b"[::1]",
                     b"0.0.0.0"):
            out = _ask(addr, b"GET http://%s:%d/ HTTP/1.1\r\nHost: %s:%d\r\n\r\n"
                       % (host, origin, host, origin))
            assert out.startswith(b"HTTP/1.1 403 ") and b"ORIGIN" not in out, (host, out)
        out = _ask(addr, b"\x05\x01\x00\x05\x01\x00\x01\x7f\x00\x00\x01" + struct.pack("!H", origin))
        assert out[:4] == b"\x05\x00\x05\x02"  # SOCKS5: not allowed by ruleset
    finally:
        att.close()


def test_allowed_targets_relay(origin: int) -> None:
    res = {"ok.test": ["127.0.0.1"]}
    att, addr, _ = attach(NetworkPolicy(allow=["ok.test", "127.0.0.1/32"], block_private=False,
                                        resolver=res))
    try:
        out = _ask(addr, b"GET http://ok.test:%d/p?q=1 HTTP/1.1\r\nHost: ok.test:%d\r\n"
                         b"Proxy-Connection: keep-alive\r\n\r\n" % (origin, origin))
        assert b"200 OK" in out and b"ORIGIN GET /p?q=1 HTTP/1.1" in out
        with socket.create_connection(addr, timeout=5) as s:
            s.sendall(b"CONNECT ok.test:%d HTTP/1.1\r\n\r\n" % origin)
            assert s.recv(4096).startswith(b"HTTP/1.1 200")
            s.sendall(b"GET /t HTTP/1.1\r\n\r\n")
            assert b"ORIGIN GET /t" in s.recv(4096)
        # SOCKS5 with remote DNS
        with socket.create_connection(addr, timeout=5) as s:
            s.sendall(b"\x05\x01\x00")
            assert s.recv(2) == b"\x05\x00"
            s.sendall(b"\x05\x01\x00\x03\x07ok.test" + struct.pack("!H", origin))
            assert s.recv(10)[:2] == b"\x05\x00"
            s.sendall(b"GET /s HTTP/1.1\r\n\r\n")
            assert b"ORIGIN GET /s" in s.recv(4096)
        assert att.drain() == []
        assert any(e["verdict"] == "allowed" for e in att.log)
    finally:
        att.close()


def test_allowlist_refuses_the_unlisted(origin: int) -> None:
    res = {"a.x.test": ["127.0.0.1"], "x.test.evil": ["127.0.0.1"]}
    att, addr, _ = attach(NetworkPolicy(allow=["*.x.test"], block_private=False, resolver=res))
    try:
        assert b"200 OK" in _ask(addr, b"GET http://a.x.test:%d/ HTTP/1.1\r\n\r\n" % origin)
        out = _ask(addr, b"CONNECT x.test.evil:%d HTTP/1.1\r\n\r\n" % origin)
        assert out.startswith(b"HTTP/1.1 403") and b"not in the allowlist" in out
        v, = att.drain()
        assert v.target == f"x.test.evil:{origin}"
    finally:
        att.close()


def test_host_header_and_sni_must_match(origin: int) -> None:
    res = {"ok.test": ["127.0.0.1"]}
    att, addr, _ = attach(NetworkPolicy(allow=["ok.test"], block_private=False, resolver=res))
    try:
        out = _ask(addr, b"GET http://ok.test:%d/ HTTP/1.1\r\nHost: evil.test\r\n\r\n" % origin)
        assert out.startswith(b"HTTP/1.1 403") and b"Host header" in out
        with socket.create_connection(addr, timeout=5) as s:
            s.sendall(b"CONNECT ok.test:%d HTTP/1.1\r\n\r\n" % origin)
            assert s.recv(4096).startswith(b"HTTP/1.1 200")
            ctx = ssl.create_default_context()
            with pytest.raises((ssl.SSLError, OSError)):
                ctx.wrap_socket(s, server_hostname="evil.test").do_handshake()
        reasons = [v.reason for v in att.drain()]
        assert any("Host header" in r for r in reasons)
        assert any("SNI 'evil.test'" in r for r in reasons)
    finally:
        att.close()


def _dns_query(name: str, qtype: int = 1) -> bytes:
    q = b"".join(bytes([len(p)]) + p.encode() for p in name.split(".")) + b"\x00"
    return struct.pack("!HHHHHH", 0x1234, 0x0100, 1, 0, 0, 0) + q + struct.pack("!HH", qtype, 1)


def test_dns_stub_answers_only_allowed_names() -> None:
    res = {"ok.test": ["198.51.100.7", "2001:db8::7"], "lo.test": ["127.0.0.1"]}
    att, _, dns_addr = attach(NetworkPolicy(allow=["ok.test", "lo.test"], resolver=res), udp=True)
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as c:
            c.settimeout(5)
            for name, qtype, rcode, rdata in (("ok.test", 1, 0, bytes([198, 51, 100, 7])),
                                             ("OK.test", 28, 0, socket.inet_pton(
                                                 socket.AF_INET6, "2001:db8::7")),
                                             ("lo.test", 1, 5, None), ("no.test", 1, 5, None)):
                c.sendto(_dns_query(name, qtype), dns_addr)
                r = c.recv(512)
                assert r[:2] == b"\x12\x34" and r[3] & 0xF == rcode, name
                if rdata is not None:
                    assert r.endswith(rdata) and struct.unpack("!H", r[6:8])[0] == 1
        assert {v.target for v in att.drain()} == {"lo.test", "no.test"}
    finally:
        att.close()


def test_close_releases_the_listener() -> None:
    att, addr, _ = attach(NetworkPolicy())
    att.close()
    with pytest.raises(OSError):
        socket.create_connection(addr, timeout=2).close()


def test_connections_per_sandbox_are_capped(monkeypatch: pytest.MonkeyPatch) -> None:
    from agentic_bash.network import proxy
    monkeypatch.setattr(proxy, "MAX_CONNECTIONS", 3)
    att, addr, _ = attach(NetworkPolicy())
    held = []
    try:
        for _ in range(3):  # idle clients: each holds a slot until it speaks or times out
            held.append(socket.create_connection(addr, timeout=5))
        import time
        deadline = time.monotonic() + 5
        while att._active < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        with socket.create_connection(addr, timeout=5) as s:
            assert s.recv(100) == b""  # closed at once
        assert "connections at once" in att.drain()[0].reason
    finally:
        for s in held:
            s.close()
        att.close()


def test_numeric_host_spellings_are_judged_after_resolving() -> None:
    from agentic_bash.network.proxy import host_resolve
    p = NetworkPolicy()
    for host in ("2130706433", "0x7f.1", "127.1", "localhost."):
        addrs, why = p.decide(host, 80, host_resolve)
        assert addrs == [] and "loopback" in why, (host, why)


def test_userinfo_and_pipelining_do_not_change_the_target(origin: int) -> None:
    res = {"ok.test": ["127.0.0.1"]}
    att, addr, _ = attach(NetworkPolicy(allow=["ok.test"], block_private=False, resolver=res))
    try:
        # the host is what follows '@'; the userinfo names nothing we connect to
        out = _ask(addr, b"GET http://ok.test@127.0.0.1:%d/ HTTP/1.1\r\n\r\n" % origin)
        assert out.startswith(b"HTTP/1.1 403") and b"ORIGIN" not in out
        # a second, pipelined request naming another host goes down the same (allowed)
        # connection to the same origin, never to a new destination
        out = _ask(addr, b"GET http://ok.test:%d/a HTTP/1.1\r\n\r\n"
                         b"GET http://169.254.169.254/latest HTTP/1.1\r\n\r\n" % origin)
        assert b"ORIGIN GET /a" in out
        assert not any("169.254" in (e["target"]) for e in att.log)
    finally:
        att.close()


def test_malformed_requests_get_400_or_close(origin: int) -> None:
    att, addr, _ = attach(NetworkPolicy(allow=["127.0.0.1/32"]))
    try:
        for req in (b"CONNECT 127.0.0.1:0 HTTP/1.1\r\n\r\n", b"CONNECT nohost HTTP/1.1\r\n\r\n",
                    b"GET /relative HTTP/1.1\r\n\r\n", b"GET ftp://x/ HTTP/1.1\r\n\r\n",
                    b"BLAH\r\n\r\n"):
            assert _ask(addr, req).startswith(b"HTTP/1.1 400"), req
        assert _ask(addr, b"GET http://x/" + b"a" * 70000 + b" HTTP/1.1\r\n\r\n") == b""
        # SOCKS5: BIND and UDP ASSOCIATE are refused, no auth method -> 0xff
        assert _ask(addr, b"\x05\x01\x02") == b"\x05\xff"
        out = _ask(addr, b"\x05\x01\x00\x05\x02\x00\x01\x7f\x00\x00\x01" + struct.pack("!H", origin))
        assert out[2:4] == b"\x05\x07"
    finally:
        att.close()
