"""bash's /dev/tcp/HOST/PORT and /dev/udp/HOST/PORT for the interpreter, under the network policy."""

from __future__ import annotations

import errno
import ipaddress
import socket
from typing import Any, Callable

from .._lazyre import lazy_compile as _lazy_re
from .policy import UNRESOLVED, NetworkPolicy, canonical_host

__all__ = ["host_opener", "parse_path", "sandbox_opener"]

_PATH = _lazy_re(r"/dev/(tcp|udp)/([^/]+)/([^/]+)")
_TIMEOUT = 30.0


def parse_path(path: str) -> tuple[str, str, int] | None:
    """(kind, host, port) of a /dev/tcp or /dev/udp path, else None (bash then opens the
    path as a file). A service name is looked up like bash does."""
    m = _PATH.fullmatch(path)
    if not m:
        return None
    kind, host, port = m.groups()
    if port.isdigit():
        n = int(port)
    else:
        try:
            n = socket.getservbyname(port, kind)
        except OSError:
            return None
    return (kind, host, n) if 0 <= n < 65536 else None


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _as_file(s: socket.socket) -> Any:
    f = s.makefile("rwb", buffering=0)
    s.close()  # the file keeps the connection open until it is closed
    return f


def _connect_direct(kind: str, host: str, port: int) -> Any:
    stype = socket.SOCK_STREAM if kind == "tcp" else socket.SOCK_DGRAM
    err: OSError = OSError(errno.EHOSTUNREACH, "No route to host")
    try:
        infos = socket.getaddrinfo(host, port, type=stype)
    except socket.gaierror as e:
        raise OSError(errno.EINVAL, f"{host}: {e.strerror}") from None
    for fam, typ, proto, _, addr in infos:
        s = socket.socket(fam, typ, proto)
        try:
            s.settimeout(_TIMEOUT)
            s.connect(addr)
            s.settimeout(None)
            return _as_file(s)
        except OSError as e:
            s.close()
            err = e
    raise err


def _connect_via_proxy(proxy: tuple[str, int], host: str, port: int) -> Any:
    s = socket.create_connection(proxy, timeout=_TIMEOUT)
    try:
        h = f"[{host}]" if ":" in host else host
        s.sendall(f"CONNECT {h}:{port} HTTP/1.1\r\nHost: {h}:{port}\r\n\r\n".encode())
        buf = b""
        while not buf.endswith(b"\r\n\r\n"):
            # peek, then take only the proxy's reply: what follows is the tunnel's data
            peek = s.recv(4096, socket.MSG_PEEK)
            if not peek:
                raise OSError(errno.ECONNRESET, "Connection reset by peer")
            end = (buf[-3:] + peek).find(b"\r\n\r\n")
            take = len(peek) if end < 0 else end + 4 - len(buf[-3:])
            buf += s.recv(take)
            if len(buf) > 65536:
                raise OSError(errno.EPROTO, "Protocol error")
        status = buf.split(b" ", 2)[1] if buf.count(b" ") >= 1 else b""
        if status == b"200":
            s.settimeout(None)
            return _as_file(s)
        if status == b"403":
            # the proxy has recorded the refusal (Result.violations); the tool sees EACCES
            raise OSError(errno.EACCES, "Permission denied")
        raise OSError(errno.ECONNREFUSED, "Connection refused")
    except BaseException:
        s.close()
        raise


def sandbox_opener(net: dict[str, Any]) -> Callable[[str], Any]:
    """Inside the sandbox: TCP to other hosts goes through the proxy (the same policy as every
    tool); the sandbox's own loopback and UDP are direct (the namespace has nothing else)."""
    proxy = None
    if net.get("proxy"):
        from .inside import PROXY_ADDR
        proxy = PROXY_ADDR

    def open_socket(path: str) -> Any:
        t = parse_path(path)
        if t is None:
            return None
        kind, host, port = t
        if kind == "tcp" and proxy is not None and not _is_loopback(host):
            return _connect_via_proxy(proxy, host, port)
        return _connect_direct(kind, host, port)
    return open_socket


def host_opener(policy: NetworkPolicy, on_refuse: Callable[[Any], None],
                resolve: Callable[[str], list[str]] | None = None) -> Callable[[str], Any]:
    """Virtual mode (no sandbox process): the interpreter connects from this process, to
    addresses the policy checked. Every refusal goes to ``on_refuse`` as a PolicyViolation."""
    from ..errors import PolicyViolation
    from .proxy import _local_addresses, host_resolve
    local = _local_addresses()
    if resolve is None:
        resolve = policy.resolver if callable(policy.resolver) else host_resolve
        if isinstance(policy.resolver, dict):
            table = {canonical_host(k): list(v) for k, v in policy.resolver.items()}
            resolve = lambda h: table.get(h, [])  # noqa: E731

    def open_socket(path: str) -> Any:
        t = parse_path(path)
        if t is None:
            return None
        kind, host, port = t
        addrs, why = policy.decide(host, port, resolve, local)
        if why.startswith(UNRESOLVED):
            raise OSError(errno.EINVAL, "Invalid argument")
        if why:
            tgt = f"/dev/{kind}/{host}/{port}"
            on_refuse(PolicyViolation("network", f"{tgt}: {why}", target=f"{host}:{port}",
                                      reason=why))
            raise OSError(errno.EACCES, "Permission denied")
        last: OSError = OSError(errno.EHOSTUNREACH, "No route to host")
        for a in addrs:
            try:
                return _connect_direct(kind, a, port)
            except OSError as e:
                last = e
        raise last
    return open_socket
