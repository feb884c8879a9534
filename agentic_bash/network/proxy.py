"""The filtering proxy outside the sandboxes: HTTP CONNECT, absolute-URI HTTP, SOCKS5 and a DNS stub."""

# Where it runs: one asyncio loop on one daemon thread of the caller's process, shared by all
# of that process's sandboxes (each attaches the listening sockets its runner created inside
# the sandbox's network namespace and passed out). Not in the zygote, which must stay
# single-threaded to fork safely; not a separate process, so that refusals reach
# Result.violations without another channel. Hand-written on asyncio streams (proxy.py and
# mitmproxy are far larger and neither checks resolved addresses against a policy).
#
# Security invariants:
# - every name is resolved here, each resolved address is checked, and the connection goes to
#   an address that was checked (never re-resolved), so DNS rebinding gains nothing;
# - a name that answers with any refused address is refused whole;
# - the addresses of this host's own interfaces are refused like loopback.

from __future__ import annotations

import asyncio
import collections
import ipaddress
import logging
import os
import socket
import struct
import threading
import time
from typing import Any, Callable, Iterable, Mapping
from urllib.parse import urlsplit

from ..errors import PolicyViolation
from . import dns
from .policy import UNRESOLVED, NetworkPolicy, canonical_host

__all__ = ["Attachment", "ProxyServer", "get_proxy"]

log = logging.getLogger("agentic_bash.network")

_HEAD_LIMIT = 64 * 1024
_IDLE = 30.0           # seconds a client may take to send its request
_CONNECT_TIMEOUT = 10.0
_CHUNK = 256 * 1024
# Per sandbox: each proxied connection costs the caller's process two fds, and every DNS
# question a worker-thread lookup; beyond these a sandbox is refused rather than allowed to
# exhaust the caller (its fd limit is often 1024).
MAX_CONNECTIONS = 256
MAX_DNS_INFLIGHT = 32
# Refusals kept between two runs (a run drains them into its Result): a background process
# refusing connections in a loop after its run returned added ~240 a second, ~1 KiB each,
# for as long as the caller did not run again (attack9); past this they are counted
MAX_PENDING_VIOLATIONS = 1000
_DNS_TTL = 30.0  # seconds a name's addresses are reused (as the stub's answers say)
_SO_ORIGINAL_DST = 80  # linux/netfilter_ipv4.h; IP6T_SO_ORIGINAL_DST is the same number

Resolver = Callable[[str], Iterable[str]]


def host_resolve(host: str) -> list[str]:
    """The host's own resolver (getaddrinfo), addresses in its order, duplicates dropped."""
    try:
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        return []
    return list(dict.fromkeys(i[4][0] for i in infos))


def _local_addresses() -> frozenset[str]:
    """This host's interface addresses (a sandbox must not reach host services through them)."""
    out: set[str] = set()
    try:
        import psutil
        for addrs in psutil.net_if_addrs().values():
            for a in addrs:
                if a.family in (socket.AF_INET, socket.AF_INET6):
                    out.add(ipaddress.ip_address(a.address.split("%")[0]).compressed)
    except Exception:  # noqa: BLE001 - psutil missing: loopback/private checks still apply
        pass
    return frozenset(out)


class Attachment:
    """One sandbox's listeners on the shared proxy, its policy, log and refusals."""

    def __init__(self, server: ProxyServer, policy: NetworkPolicy, label: str,
                 resolver: Resolver | Mapping[str, Iterable[str]] | None) -> None:
        self.server = server
        self.policy = policy
        self.label = label
        if isinstance(resolver, Mapping):
            table = {canonical_host(k): list(v) for k, v in resolver.items()}
            resolver = lambda h: table.get(h, [])  # noqa: E731
        self.resolver = resolver
        self.log: collections.deque[dict[str, Any]] = collections.deque(maxlen=1000)
        self._violations: list[PolicyViolation] = []
        self._dropped = 0
        self._recent: dict[tuple[str, str], float] = {}
        self._lock = threading.Lock()
        self._servers: list[Any] = []
        self._socks: list[socket.socket] = []
        self._writers: set[asyncio.StreamWriter] = set()
        self._dns_names: dict[str, collections.deque[str]] = {}
        self._dns_cache: dict[str, tuple[float, list[str]]] = {}
        self._active = 0
        self.dns_inflight = 0
        self.closed = False

    # -- bookkeeping (loop thread) -----------------------------------------------------
    def _record(self, kind: str, target: str, verdict: str, detail: str = "") -> None:
        self.log.append({"t": time.time(), "via": kind, "target": target, "verdict": verdict,
                         "detail": detail})

    def refuse(self, via: str, target: str, reason: str) -> None:
        self._record(via, target, "refused", reason)
        log.info("sandbox %s: refused %s %s: %s", self.label, via, target, reason)
        now = time.monotonic()
        with self._lock:
            if via == "dns":  # one lookup asks for A and AAAA (and retries): one violation
                key = (target, reason)
                if now - self._recent.get(key, -10.0) < 1.0:
                    return
                self._recent[key] = now
                if len(self._recent) > 1024:
                    self._recent = {k: t for k, t in self._recent.items() if now - t < 1.0}
            if len(self._violations) >= MAX_PENDING_VIOLATIONS:
                self._dropped += 1
                return
            self._violations.append(PolicyViolation("network", f"{target}: {reason}",
                                                    target=target, reason=reason))

    def drain(self) -> list[PolicyViolation]:
        """Refusals since the last call (the caller adds them to the run's Result); past
        MAX_PENDING_VIOLATIONS one more says how many were not itemised."""
        with self._lock:
            out, self._violations = self._violations, []
            if self._dropped:
                why = f"{self._dropped} more refusals not itemised"
                out.append(PolicyViolation("network", why, target="", reason=why))
                self._dropped = 0
            return out

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        self.server.call(self._aclose())

    async def _aclose(self) -> None:
        self.closed = True
        for s in self._servers:
            s.close()
        for w in list(self._writers):
            w.close()
        for sock in self._socks:  # those no server took over yet
            sock.close()
        self._socks.clear()
        self._servers.clear()
        self._writers.clear()

    # -- decisions (loop thread) -------------------------------------------------------
    def _resolve(self, host: str) -> list[str]:
        """Runs on worker threads: the cache is shared with the loop thread under a lock."""
        addrs = list(self.resolver(host)) if self.resolver is not None else host_resolve(host)
        if addrs:
            with self._lock:
                self._dns_cache[host] = (time.monotonic() + _DNS_TTL, addrs)
                while len(self._dns_cache) > 1024:
                    self._dns_cache.pop(next(iter(self._dns_cache)))
        return addrs

    def _cached(self, host: str) -> list[str]:
        with self._lock:
            hit = self._dns_cache.get(host)
        return hit[1] if hit is not None and hit[0] > time.monotonic() else []

    async def decide(self, host: str, port: int | None) -> tuple[list[str], str]:
        """Checked addresses for ``host`` (``port`` None: a DNS question), or ([], reason).
        A name is resolved on a worker thread (getaddrinfo blocks), its answer kept for
        _DNS_TTL seconds; every use of it is checked again."""
        p, local = self.policy, self.server.local_addrs
        try:
            ipaddress.ip_address(host.strip("[]"))
            return p.decide(host, port, self._resolve, local)
        except ValueError:
            pass
        try:
            key = canonical_host(host)
        except ValueError:
            key = ""
        if key and self._cached(key):
            return p.decide(host, port, self._cached, local)
        return await asyncio.get_running_loop().run_in_executor(
            None, p.decide, host, port, self._resolve, local)

    # -- connection handling -----------------------------------------------------------
    def _over_limit(self, writer: asyncio.StreamWriter, via: str) -> bool:
        if self._active < MAX_CONNECTIONS:
            self._active += 1
            # asyncio sets TCP_NODELAY only when sock.proto == IPPROTO_TCP, and sockets
            # accepted from a socket(AF_INET, SOCK_STREAM) listener have proto 0: without
            # this every TLS handshake through the proxy waited ~40 ms for a delayed ACK
            try:
                writer.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP,
                                                           socket.TCP_NODELAY, 1)
            except (OSError, AttributeError):
                pass
            return False
        self.refuse(via, "(connection)", f"more than {MAX_CONNECTIONS} connections at once")
        writer.close()
        return True

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self._over_limit(writer, "proxy"):
            return
        self._writers.add(writer)
        try:
            first = await asyncio.wait_for(reader.readexactly(1), _IDLE)
            if first == b"\x05":
                await self._socks5(reader, writer)
            else:
                await self._http(first, reader, writer)
        except (asyncio.IncompleteReadError, asyncio.TimeoutError, ConnectionError,
                asyncio.LimitOverrunError, ValueError, OSError):
            pass
        except Exception:  # noqa: BLE001 - one bad client never takes the loop down
            log.exception("sandbox %s: proxy connection failed", self.label)
        finally:
            self._active -= 1
            self._writers.discard(writer)
            writer.close()

    async def handle_transparent(self, reader: asyncio.StreamReader,
                                 writer: asyncio.StreamWriter) -> None:
        """A connection the sandbox's nftables redirected here: its original destination is
        an address; the policy judges it by the names this sandbox's DNS stub answered with
        that address (an allowlist), else as an address."""
        if self._over_limit(writer, "redirect"):
            return
        self._writers.add(writer)
        try:
            sock = writer.get_extra_info("socket")
            if sock.family == socket.AF_INET6:  # struct sockaddr_in6
                raw = sock.getsockopt(socket.IPPROTO_IPV6, _SO_ORIGINAL_DST, 28)
                port = struct.unpack_from("!H", raw, 2)[0]
                addr = ipaddress.ip_address(raw[8:24]).compressed
                tgt = f"[{addr}]:{port}"
            else:
                raw = sock.getsockopt(socket.SOL_IP, _SO_ORIGINAL_DST, 16)
                port = struct.unpack_from("!H", raw, 2)[0]
                addr = socket.inet_ntop(socket.AF_INET, raw[4:8])
                tgt = f"{addr}:{port}"
            why = ""
            names = [n for n in self._dns_names.get(addr, ())
                     if not self.policy.check_name(n, port) and self.policy.name_allowed(n, port)]
            if names:
                why = self.policy.check_addr(ipaddress.ip_address(addr), port, by_name=True) \
                    or self.policy._local(addr, self.server.local_addrs) or ""
                addrs = [] if why else [addr]
            else:
                addrs, why = await self.decide(addr, port)
            if why:
                self.refuse("redirect", tgt + (f" ({names[0]})" if names else ""), why)
                # a reset, not a clean close: the tool says "Connection reset by peer"
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                return
            ur, uw, err = await self._dial(addrs, port)
            if uw is None:
                self._record("redirect", tgt, "failed", err)
                return
            sni_ok = None
            if names and self.policy.mode == "allowlist":
                # allowed as one of these names: a TLS client must not name another host
                def sni_ok(sni: str) -> bool:
                    c = _canon_or_none(sni)
                    return c is not None and not self.policy.check_name(c, port) and \
                        self.policy.name_allowed(c, port)
            await self._tunnel(reader, writer, ur, uw, addr, tgt, "redirect", sni_ok,
                               " ".join(names))
        except (asyncio.IncompleteReadError, asyncio.TimeoutError, ConnectionError,
                ValueError, OSError):
            pass
        except Exception:  # noqa: BLE001 - one bad client never takes the loop down
            log.exception("sandbox %s: redirected connection failed", self.label)
        finally:
            self._active -= 1
            self._writers.discard(writer)
            writer.close()

    async def _dial(self, addrs: list[str], port: int) -> tuple[Any, Any, str]:
        err = ""
        for a in addrs:
            try:
                r, w = await asyncio.wait_for(asyncio.open_connection(a, port), _CONNECT_TIMEOUT)
                return r, w, ""
            except (OSError, asyncio.TimeoutError) as e:
                err = f"{a}:{port}: {e.strerror if isinstance(e, OSError) and e.strerror else 'timed out'}"
        return None, None, err or "no address"

    async def _http(self, first: bytes, reader: asyncio.StreamReader,
                    writer: asyncio.StreamWriter) -> None:
        head = first + await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), _IDLE)
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ")
        if len(parts) != 3 or not parts[2].startswith("HTTP/"):
            return await self._reply(writer, 400, "malformed request line")
        method, target, version = parts
        headers = [ln for ln in lines[1:] if ln]
        if method.upper() == "CONNECT":
            host, port = _split_hostport(target, None)
            if host is None or port is None:
                return await self._reply(writer, 400, f"bad CONNECT target {target!r}")
            tgt = f"{host}:{port}"
            addrs, why = await self.decide(host, port)
            if why:
                return await self._refused(writer, "connect", tgt, why)
            ur, uw, err = await self._dial(addrs, port)
            if uw is None:
                self._record("connect", tgt, "failed", err)
                return await self._reply(writer, 502, f"cannot reach {tgt}: {err}")
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            await writer.drain()
            await self._tunnel(reader, writer, ur, uw, host, tgt, "connect")
            return
        u = urlsplit(target)
        if u.scheme.lower() != "http" or not u.hostname:
            return await self._reply(writer, 400, "this proxy takes CONNECT or absolute "
                                                  "http:// URIs")
        try:
            port = u.port or 80
        except ValueError:
            return await self._reply(writer, 400, f"bad port in {target!r}")
        host = u.hostname
        tgt = f"{host}:{port}"
        for ln in headers:
            k, _, v = ln.partition(":")
            if k.strip().lower() == "host":
                hh, _ = _split_hostport(v.strip(), port)
                try:
                    same = hh is not None and canonical_host(hh) == canonical_host(host)
                except ValueError:
                    same = False
                if not same:
                    why = f"Host header {v.strip()!r} does not match {host}"
                    self.refuse("http", tgt, why)
                    return await self._reply(writer, 403, why)
        addrs, why = await self.decide(host, port)
        if why:
            return await self._refused(writer, "http", tgt, why)
        ur, uw, err = await self._dial(addrs, port)
        if uw is None:
            self._record("http", tgt, "failed", err)
            return await self._reply(writer, 502, f"cannot reach {tgt}: {err}")
        path = u.path or "/"
        if u.query:
            path += "?" + u.query
        drop = {"proxy-connection", "proxy-authorization", "connection", "keep-alive"}
        out = [f"{method} {path} {version}"] + [
            ln for ln in headers if ln.partition(":")[0].strip().lower() not in drop]
        # one request per connection: a second request on it could name another host
        out.append("Connection: close")
        uw.write(("\r\n".join(out) + "\r\n\r\n").encode("latin-1"))
        self._record("http", tgt, "allowed")
        await self._pipe_both(reader, writer, ur, uw)

    async def _socks5(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        n = (await reader.readexactly(1))[0]
        methods = await reader.readexactly(n)
        if 0 not in methods:
            writer.write(b"\x05\xff")
            return
        writer.write(b"\x05\x00")
        ver, cmd, _, atyp = await asyncio.wait_for(reader.readexactly(4), _IDLE)
        if atyp == 1:
            host = socket.inet_ntop(socket.AF_INET, await reader.readexactly(4))
        elif atyp == 4:
            host = socket.inet_ntop(socket.AF_INET6, await reader.readexactly(16))
        elif atyp == 3:
            ln = (await reader.readexactly(1))[0]
            host = (await reader.readexactly(ln)).decode("latin-1")
        else:
            writer.write(b"\x05\x08\x00\x01" + bytes(6))
            return
        port = struct.unpack("!H", await reader.readexactly(2))[0]
        tgt = f"{host}:{port}"
        if ver != 5 or cmd != 1:  # only CONNECT; BIND and UDP ASSOCIATE are not offered
            self.refuse("socks5", tgt, "only SOCKS5 CONNECT is supported")
            writer.write(b"\x05\x07\x00\x01" + bytes(6))
            return
        addrs, why = await self.decide(host, port)
        if why.startswith(UNRESOLVED):
            self._record("socks5", tgt, "failed", why)
            writer.write(b"\x05\x04\x00\x01" + bytes(6))  # host unreachable
            return
        if why:
            self.refuse("socks5", tgt, why)
            writer.write(b"\x05\x02\x00\x01" + bytes(6))  # not allowed by ruleset
            return
        ur, uw, err = await self._dial(addrs, port)
        if uw is None:
            self._record("socks5", tgt, "failed", err)
            writer.write(b"\x05\x05\x00\x01" + bytes(6))  # connection refused
            return
        writer.write(b"\x05\x00\x00\x01" + bytes(6))
        await writer.drain()
        await self._tunnel(reader, writer, ur, uw, host, tgt, "socks5")

    async def _tunnel(self, reader: Any, writer: Any, ur: Any, uw: Any, host: str, tgt: str,
                      via: str, sni_ok: Callable[[str], bool] | None = None,
                      detail: str = "") -> None:
        """Relay a tunnel. A TLS client whose SNI names a host ``sni_ok`` refuses (default:
        any other than the tunnel's target name) is domain fronting past the policy: refused.
        An address target with no ``sni_ok`` is not checked (the address was)."""
        self._writers.add(uw)
        try:
            if sni_ok is None:
                try:
                    ipaddress.ip_address(host.strip("[]"))
                except ValueError:
                    want = _canon_or_none(host)
                    sni_ok = lambda sni: _canon_or_none(sni) == want  # noqa: E731
            first = b""
            if sni_ok is not None:
                first, server_first = await _first_bytes(reader, ur)
                if server_first:  # the server talks first (no TLS client hello to check)
                    writer.write(server_first)
            if sni_ok is not None and first:
                try:
                    if len(first) < 5 and first[0] == 0x16:
                        first += await asyncio.wait_for(reader.readexactly(5 - len(first)),
                                                        _IDLE)
                    if len(first) >= 5 and first[0] == 0x16:
                        need = 5 + min(struct.unpack("!H", first[3:5])[0], 16384) - len(first)
                        if need > 0:
                            first += await asyncio.wait_for(reader.readexactly(need), _IDLE)
                        sni = _sni(first)
                        if sni is not None and not sni_ok(sni):
                            self.refuse(via, tgt, f"TLS SNI {sni!r} does not match the "
                                                  f"tunnel's target {host}")
                            return
                except (asyncio.TimeoutError, asyncio.IncompleteReadError):
                    return
            self._record(via, tgt, "allowed", detail)
            if first:
                uw.write(first)
            await self._pipe_both(reader, writer, ur, uw)
        finally:
            self._writers.discard(uw)
            uw.close()

    async def _pipe_both(self, cr: Any, cw: Any, ur: Any, uw: Any) -> None:
        self._writers.add(uw)
        try:
            await asyncio.gather(_pipe(cr, uw), _pipe(ur, cw))
        finally:
            self._writers.discard(uw)
            uw.close()

    async def _refused(self, writer: asyncio.StreamWriter, via: str, tgt: str, why: str) -> None:
        if why.startswith(UNRESOLVED):  # not a policy decision: the name has no address
            self._record(via, tgt, "failed", why)
            return await self._reply(writer, 502, why)
        self.refuse(via, tgt, why)
        return await self._reply(writer, 403, why)

    async def _reply(self, writer: asyncio.StreamWriter, code: int, reason: str) -> None:
        text = {400: "Bad Request", 403: "Forbidden", 502: "Bad Gateway"}[code]
        line = reason.replace("\r", " ").replace("\n", " ")
        body = f"agentic-bash proxy: {line}\n".encode()
        writer.write(f"HTTP/1.1 {code} {text}\r\nContent-Type: text/plain\r\n"
                     f"Content-Length: {len(body)}\r\nConnection: close\r\n"
                     f"X-Agentic-Bash-Refused: {line[:200]}\r\n\r\n".encode("latin-1",
                                                                           "replace") + body)
        await writer.drain()

    # -- DNS stub ------------------------------------------------------------------------
    async def dns_query(self, data: bytes) -> bytes | None:
        q = dns.parse_query(data)
        if q is None:
            return None
        name, qtype = q[2], q[3]
        if qtype not in (dns.TYPE_A, dns.TYPE_AAAA):
            return dns.answer(q, dns.REFUSED)
        addrs, why = await self.decide(name, None)
        if why:
            if why.startswith(UNRESOLVED):
                return dns.answer(q, dns.NXDOMAIN)
            self.refuse("dns", name.rstrip(".").lower(), why)
            return dns.answer(q, dns.REFUSED)
        self._record("dns", name, "answered", " ".join(addrs))
        canon = name.rstrip(".").lower()
        for a in addrs:  # what a redirected connection to this address was looking for
            self._dns_names.setdefault(a, collections.deque(maxlen=8))
            if canon not in self._dns_names[a]:
                self._dns_names[a].append(canon)
        while len(self._dns_names) > 4096:
            self._dns_names.pop(next(iter(self._dns_names)))
        return dns.answer(q, dns.NOERROR, addrs)


class _Dns(asyncio.DatagramProtocol):
    def __init__(self, att: Attachment) -> None:
        self.att = att
        self.transport: Any = None

    def connection_made(self, transport: Any) -> None:
        self.transport = transport

    def datagram_received(self, data: bytes, addr: Any) -> None:
        if self.att.dns_inflight >= MAX_DNS_INFLIGHT:
            return  # dropped: the resolver retries

        async def go() -> None:
            self.att.dns_inflight += 1
            try:
                reply = await self.att.dns_query(data)
            except Exception:  # noqa: BLE001
                log.exception("sandbox %s: DNS query failed", self.att.label)
                return
            finally:
                self.att.dns_inflight -= 1
            if reply is not None and self.transport is not None:
                self.transport.sendto(reply, addr)
        asyncio.ensure_future(go())

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()


async def _first_bytes(client: asyncio.StreamReader,
                       upstream: asyncio.StreamReader) -> tuple[bytes, bytes]:
    """Whichever side of a fresh tunnel speaks first: (client bytes, b"") or (b"", server
    bytes). A cancelled StreamReader.read leaves the buffered data in place."""
    c = asyncio.ensure_future(client.read(_CHUNK))
    u = asyncio.ensure_future(upstream.read(_CHUNK))
    done, pending = await asyncio.wait({c, u}, timeout=_IDLE,
                                       return_when=asyncio.FIRST_COMPLETED)
    for t in pending:
        t.cancel()
        try:
            await t
        except (asyncio.CancelledError, Exception):  # noqa: BLE001
            pass
    if c in done and not c.cancelled() and c.exception() is None:
        got = c.result()
        if u in done and not u.cancelled() and u.exception() is None and u.result():
            # both at once: deliver the server's bytes too (no SNI concern: it spoke)
            return got, u.result()
        return got, b""
    if u in done and not u.cancelled() and u.exception() is None:
        return b"", u.result()
    return b"", b""


async def _pipe(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
    try:
        while True:
            data = await r.read(_CHUNK)
            if not data:
                break
            w.write(data)
            await w.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        try:
            if w.can_write_eof():
                w.write_eof()
        except (OSError, RuntimeError):
            pass


def _split_hostport(s: str, default: int | None) -> tuple[str | None, int | None]:
    s = s.strip()
    if s.startswith("["):
        end = s.find("]")
        if end < 0:
            return None, None
        host, rest = s[1:end], s[end + 1:]
        if not rest:
            return host, default
        if not rest.startswith(":"):
            return None, None
        p = rest[1:]
    elif s.count(":") == 1:
        host, p = s.split(":")
    elif ":" in s:
        return s, default  # a bare IPv6 address
    else:
        return s, default
    if not p.isdigit() or not 0 < int(p) < 65536:
        return None, None
    return host, int(p)


def _canon_or_none(h: str) -> str | None:
    try:
        return canonical_host(h)
    except ValueError:
        return None


def _sni(record: bytes) -> str | None:
    """The server_name of a TLS ClientHello record, or None (absent or unparsable)."""
    try:
        p = 5
        if record[p] != 1:  # handshake type client_hello
            return None
        p += 4 + 2 + 32
        p += 1 + record[p]                                   # session id
        p += 2 + struct.unpack_from("!H", record, p)[0]     # cipher suites
        p += 1 + record[p]                                   # compression
        end = p + 2 + struct.unpack_from("!H", record, p)[0]
        p += 2
        while p + 4 <= end:
            etype, elen = struct.unpack_from("!HH", record, p)
            p += 4
            if etype == 0:
                q = p + 2
                while q + 3 <= p + elen:
                    ntype, nlen = record[q], struct.unpack_from("!H", record, q + 1)[0]
                    if ntype == 0:
                        return record[q + 3:q + 3 + nlen].decode("ascii")
                    q += 3 + nlen
                return None
            p += elen
    except (IndexError, struct.error, UnicodeDecodeError):
        return None
    return None


class ProxyServer:
    """The process-wide proxy: an asyncio loop on a daemon thread; sandboxes attach to it."""

    def __init__(self) -> None:
        self.owner = os.getpid()
        self.local_addrs = _local_addresses()
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self._run, name="agentic-bash-proxy", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def call(self, coro: Any, timeout: float = 10.0) -> Any:
        if threading.current_thread() is self.thread:
            return asyncio.ensure_future(coro)
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def attach(self, policy: NetworkPolicy, *, tcp: list[socket.socket] = (),  # type: ignore[assignment]
               udp: list[socket.socket] = (), label: str = "",  # type: ignore[assignment]
               transparent: list[socket.socket] = (),  # type: ignore[assignment]
               resolver: Resolver | Mapping[str, Iterable[str]] | None = None) -> Attachment:
        """Serve ``tcp`` listeners (HTTP proxy and SOCKS5 on each), ``udp`` DNS sockets and
        ``transparent`` listeners (redirected connections) for one sandbox under ``policy``.
        The sockets are taken over (closed on detach)."""
        att = Attachment(self, policy, label, resolver)
        att._socks = [*tcp, *transparent, *udp]
        for s in att._socks:
            s.setblocking(False)

        async def go() -> None:
            # Not waited for: connections made meanwhile wait in the listeners' backlogs
            # (and DNS questions in the socket buffer), so the sandbox starts without a
            # round trip to this thread. A socket leaves att._socks before a server takes
            # it: closing it under a server would leave a stale selector entry that a later
            # socket with the same fd number inherits.
            try:
                for kind, s in [*(("tcp", s) for s in tcp),
                                *(("transparent", s) for s in transparent),
                                *(("udp", s) for s in udp)]:
                    if att.closed:
                        break
                    att._socks.remove(s)
                    if kind == "udp":
                        _, srv = await self.loop.create_datagram_endpoint(lambda: _Dns(att),
                                                                          sock=s)
                    else:
                        srv = await asyncio.start_server(
                            att.handle if kind == "tcp" else att.handle_transparent, sock=s,
                            limit=_HEAD_LIMIT)
                    att._servers.append(srv)
            except Exception:  # noqa: BLE001
                if not att.closed:
                    log.exception("sandbox %s: cannot serve its network listeners", label)
                s.close()  # taken from att._socks, and no server owns it
                await att._aclose()
            if att.closed:
                await att._aclose()
        self.loop.call_soon_threadsafe(asyncio.ensure_future, go())
        return att

    def alive(self) -> bool:
        return self.owner == os.getpid() and self.thread.is_alive()


_proxy: ProxyServer | None = None
_plock = threading.Lock()


def get_proxy() -> ProxyServer:
    """The process-wide proxy, started on first use (and again in a forked child)."""
    global _proxy
    with _plock:
        if _proxy is None or not _proxy.alive():
            _proxy = ProxyServer()
        return _proxy
