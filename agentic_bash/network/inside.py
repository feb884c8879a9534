"""The sandbox side of the network set-up: listeners on the sandbox's loopback, passed out."""

from __future__ import annotations

import socket

from .redirect import install_redirect
from typing import Any

__all__ = ["DNS_ADDR", "PROXY_ADDR", "TRANSPARENT_ADDR", "own_netns", "prepare_netns",
           "proxy_env", "send_listeners", "wants_proxy"]

PROXY_ADDR = ("127.0.0.1", 3128)
DNS_ADDR = ("127.0.0.1", 53)
TRANSPARENT_ADDR = ("127.0.0.1", 3129)
RESOLV_CONF = "nameserver 127.0.0.1\noptions timeout:2 attempts:1\n"


def own_netns(cfg: dict[str, Any]) -> bool:
    """Every mode but ``host`` (the seed's ``allow``) gets its own network namespace."""
    net = cfg.get("network", "allow")
    mode = net.get("mode", "public") if isinstance(net, dict) else net
    return mode not in ("allow", "host")


def wants_proxy(cfg: dict[str, Any]) -> bool:
    net = cfg.get("network")
    return isinstance(net, dict) and bool(net.get("proxy"))


def prepare_netns(cfg: dict[str, Any]) -> None:
    """In S1, right after unshare: allow 127.0.0.1 as a NAT target for connections routed
    over loopback (route_localnet; without it the redirected connection's replies are
    dropped). Records in cfg whether it worked; the redirect is installed only then."""
    net = cfg.get("network")
    if not wants_proxy(cfg) or not net.get("transparent", True):
        return
    try:
        for dev in ("all", "lo"):
            with open(f"/proc/sys/net/ipv4/conf/{dev}/route_localnet", "w") as f:
                f.write("1")
        net["localnet"] = True
    except OSError as e:
        net["localnet_error"] = f"route_localnet: {e.strerror or e}"


def send_listeners(cfg: dict[str, Any], sock: socket.socket) -> None:
    """In the sandbox's network namespace (loopback up): create the proxy, DNS and
    transparent listeners, redirect outbound TCP to the last (nftables, when it can), and send
    them to the host over the channel (SCM_RIGHTS), then close them here.

    Security invariant: no sandbox process keeps these sockets; the ports stay bound by the
    host's copies, so nothing in the sandbox can listen in the proxy's place. Binding port 53
    and the nftables rules need capabilities pid 1 still has over its own namespaces."""
    if not wants_proxy(cfg):
        return
    import time
    t0 = time.perf_counter()
    socks = {"proxy": socket.socket(socket.AF_INET, socket.SOCK_STREAM),
             "dns": socket.socket(socket.AF_INET, socket.SOCK_DGRAM)}
    try:
        socks["proxy"].setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        socks["proxy"].bind(PROXY_ADDR)
        socks["proxy"].listen(256)
        socks["dns"].bind(DNS_ADDR)
        h: dict[str, Any] = {"ev": "net", "proxy": "%s:%d" % PROXY_ADDR,
                             "dns": "%s:%d" % DNS_ADDR, "transparent": ""}
        if cfg["network"].get("localnet_error"):
            h["transparent_error"] = cfg["network"]["localnet_error"]
        elif cfg["network"].get("localnet"):
            t = socks["transparent"] = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            t.bind(TRANSPARENT_ADDR)
            t.listen(256)
            try:
                t6 = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
            except OSError:
                t6 = None  # no IPv6 in this kernel
            if t6 is not None:
                socks["transparent6"] = t6
                t6.bind(("::1", TRANSPARENT_ADDR[1]))
                t6.listen(256)
            err, v6 = install_redirect(TRANSPARENT_ADDR[1], ipv6=t6 is not None)
            if err:
                socks.pop("transparent").close()
                h["transparent_error"] = err
            else:
                h["transparent"] = "%s:%d" % TRANSPARENT_ADDR
            if not v6 and t6 is not None:
                socks.pop("transparent6").close()
        h["roles"] = list(socks)
        h["t_ms"] = round((time.perf_counter() - t0) * 1e3, 3)
        from ..isolation.wire import send_msg
        send_msg(sock, h, fds=[s.fileno() for s in socks.values()])
    finally:
        for s in socks.values():
            s.close()


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
