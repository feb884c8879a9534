"""The sandbox side of the network set-up: listeners on the sandbox's loopback, passed out."""

from __future__ import annotations

import json
import os
import select
import socket
import struct
from typing import Any

__all__ = ["DNS_ADDR", "PROXY_ADDR", "own_netns", "proxy_env", "recv_listeners",
           "send_listeners", "wants_proxy"]

PROXY_ADDR = ("127.0.0.1", 3128)
DNS_ADDR = ("127.0.0.1", 53)
RESOLV_CONF = "nameserver 127.0.0.1\noptions timeout:2 attempts:1\n"
_HDR = struct.Struct("!II")  # isolation.wire's framing


def own_netns(cfg: dict[str, Any]) -> bool:
    """Every mode but ``host`` (the seed's ``allow``) gets its own network namespace."""
    net = cfg.get("network", "allow")
    mode = net.get("mode", "public") if isinstance(net, dict) else net
    return mode not in ("allow", "host")


def wants_proxy(cfg: dict[str, Any]) -> bool:
    net = cfg.get("network")
    return isinstance(net, dict) and bool(net.get("proxy"))


def send_listeners(cfg: dict[str, Any], sock: socket.socket) -> None:
    """In the sandbox's network namespace (loopback up): create the proxy and DNS listeners
    and send them to the host over the channel (SCM_RIGHTS), then close them here.

    Security invariant: no sandbox process keeps these sockets; the port stays bound by the
    host's copy, so nothing in the sandbox can listen on it in the proxy's place. Binding port
    53 needs CAP_NET_BIND_SERVICE, which pid 1 still has in its own user namespace."""
    if not wants_proxy(cfg):
        return
    tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        tcp.bind(PROXY_ADDR)
        tcp.listen(256)
        udp.bind(DNS_ADDR)
        from ..isolation.wire import send_msg
        send_msg(sock, {"ev": "net", "proxy": "%s:%d" % PROXY_ADDR, "dns": "%s:%d" % DNS_ADDR},
                 fds=[tcp.fileno(), udp.fileno()])
    finally:
        tcp.close()
        udp.close()


def recv_listeners(sock: socket.socket, timeout: float) -> tuple[dict[str, Any], list[socket.socket]]:
    """Host side: the first start-up frame, with the listeners if it is the ``net`` one.
    Returns (header, sockets); any other header (e.g. ``fatal``) comes back with no sockets
    for the caller to handle as the first message."""
    from ..isolation.wire import WireClosed, recv_msg

    r, _, _ = select.select([sock], [], [], timeout)
    if not r:
        return {}, []
    data, fds, _, _ = socket.recv_fds(sock, _HDR.size, 4)
    for fd in fds:
        os.set_inheritable(fd, False)
    socks = [socket.socket(fileno=fd) for fd in fds]
    try:
        if not data:
            raise WireClosed("connection closed")
        while len(data) < _HDR.size:
            more = sock.recv(_HDR.size - len(data))
            if not more:
                raise WireClosed("connection closed")
            data += more
        hl, pl = _HDR.unpack(data)
        body = b""
        while len(body) < hl + pl:
            more = sock.recv(hl + pl - len(body))
            if not more:
                raise WireClosed("connection closed")
            body += more
        try:
            header = json.loads(body[:hl])
        except ValueError as e:
            raise WireClosed(f"malformed frame: {e}") from e
        if not isinstance(header, dict):
            raise WireClosed("malformed frame")
    except BaseException:
        for s in socks:
            s.close()
        raise
    if header.get("ev") != "net":
        for s in socks:
            s.close()
        return header, []
    # Security invariant: only a listening TCP and a UDP socket are accepted from the sandbox
    for s in socks:
        if s.family != socket.AF_INET or s.type not in (socket.SOCK_STREAM, socket.SOCK_DGRAM):
            for t in socks:
                t.close()
            raise WireClosed("the sandbox passed an unexpected socket")
    return header, socks


def proxy_env(proxy: str = "%s:%d" % PROXY_ADDR) -> dict[str, str]:
    """Environment that points ordinary tools at the proxy (curl reads only lower-case
    http_proxy; pip, git and npm read these or their npm_config_* forms)."""
    http = f"http://{proxy}"
    env = {"http_proxy": http, "https_proxy": http, "all_proxy": f"socks5h://{proxy}",
           "no_proxy": "localhost,127.0.0.1,::1", "npm_config_proxy": http,
           "npm_config_https_proxy": http}
    for k in ("http_proxy", "https_proxy", "all_proxy", "no_proxy"):
        env[k.upper()] = env[k]
    return env
