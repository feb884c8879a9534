"""Proxy-unaware tools: a default route over loopback and an nftables redirect of outbound TCP."""

# Runs in the sandbox's pid 1, inside its own user and network namespaces, where it holds
# CAP_NET_ADMIN over that namespace only: no root and no veth (a veth would put host services
# bound to 0.0.0.0 one hop away). libnftables is called through ctypes (python3-nftables is a
# 30-line ctypes wrapper around the same call and not on PyPI); the route is one SIOCADDRT
# ioctl (pyroute2 would be an import of ~50 ms in every sandbox for one route).

from __future__ import annotations

import ctypes
import ctypes.util
import fcntl
import socket
from typing import Any

__all__ = ["install_redirect"]

_SIOCADDRT = 0x890B
_RTF_UP = 0x1

_RULES = """
table ip agentic_bash {
  chain nat_out {
    type nat hook output priority -100; policy accept;
    ip daddr != 127.0.0.0/8 meta l4proto tcp redirect to :%(port)d
  }
  chain filter_out {
    type filter hook output priority 0; policy accept;
    ip daddr != 127.0.0.0/8 meta l4proto != tcp reject
  }
}
"""
# Both families in one inet table (one transaction, ~0.8 ms against ~1.0 for an ip and an
# ip6 table); IPv6 needs no route_localnet: a redirect to ::1 over lo gets its replies.
_RULES_INET = """
table inet agentic_bash {
  chain nat_out {
    type nat hook output priority -100; policy accept;
    ip daddr != 127.0.0.0/8 meta l4proto tcp redirect to :%(port)d
    ip6 daddr != ::1 meta l4proto tcp redirect to :%(port)d
  }
  chain filter_out {
    type filter hook output priority 0; policy accept;
    ip daddr != 127.0.0.0/8 meta l4proto != tcp reject
    ip6 daddr != ::1 meta l4proto != tcp reject
  }
}
"""


class _SockAddr(ctypes.Structure):
    _fields_ = [("family", ctypes.c_ushort), ("data", ctypes.c_char * 14)]


class _RtEntry(ctypes.Structure):
    _fields_ = [("pad1", ctypes.c_ulong), ("dst", _SockAddr), ("gateway", _SockAddr),
                ("genmask", _SockAddr), ("flags", ctypes.c_ushort), ("pad2", ctypes.c_short),
                ("pad3", ctypes.c_ulong), ("pad4", ctypes.c_void_p), ("metric", ctypes.c_short),
                ("dev", ctypes.c_char_p), ("mtu", ctypes.c_ulong), ("window", ctypes.c_ulong),
                ("irtt", ctypes.c_ushort)]


def _load() -> tuple[Any, str]:
    try:  # by soname: ctypes.util.find_library runs ldconfig (milliseconds, a fork)
        lib = ctypes.CDLL("libnftables.so.1")
    except OSError:
        name = ctypes.util.find_library("nftables")
        try:
            lib = ctypes.CDLL(name or "libnftables.so")
        except OSError as e:
            return None, f"libnftables not available ({e}); install the nftables package"
    lib.nft_ctx_new.restype = ctypes.c_void_p
    lib.nft_ctx_new.argtypes = [ctypes.c_uint32]
    lib.nft_run_cmd_from_buffer.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
    lib.nft_ctx_free.argtypes = [ctypes.c_void_p]
    lib.nft_ctx_buffer_error.argtypes = [ctypes.c_void_p]
    lib.nft_ctx_get_error_buffer.argtypes = [ctypes.c_void_p]
    lib.nft_ctx_get_error_buffer.restype = ctypes.c_char_p
    return lib, ""


# loaded once at import: the zygote preloads this module, so sandboxes fork with it mapped
_LIB, _LIB_ERROR = _load()


def _nft(rules: str) -> str:
    lib = _LIB
    if lib is None:
        return _LIB_ERROR
    ctx = lib.nft_ctx_new(0)
    if not ctx:
        return "nft_ctx_new failed"
    try:
        lib.nft_ctx_buffer_error(ctx)
        if lib.nft_run_cmd_from_buffer(ctx, rules.encode()) != 0:
            err = (lib.nft_ctx_get_error_buffer(ctx) or b"").decode(errors="replace").strip()
            return f"nftables refused the rules: {err.splitlines()[0] if err else '?'}"
    finally:
        lib.nft_ctx_free(ctx)
    return ""


class _In6RtMsg(ctypes.Structure):
    _fields_ = [("dst", ctypes.c_ubyte * 16), ("src", ctypes.c_ubyte * 16),
                ("gateway", ctypes.c_ubyte * 16), ("type", ctypes.c_uint32),
                ("dst_len", ctypes.c_uint16), ("src_len", ctypes.c_uint16),
                ("metric", ctypes.c_uint32), ("info", ctypes.c_ulong),
                ("flags", ctypes.c_uint32), ("ifindex", ctypes.c_int)]


def _default_route(family: int) -> None:
    if family == socket.AF_INET:
        rt = _RtEntry()
        rt.dst.family = rt.gateway.family = rt.genmask.family = socket.AF_INET
        rt.flags = _RTF_UP
        rt.dev = b"lo"
        data = bytes(rt)
    else:
        rt6 = _In6RtMsg()
        rt6.flags = _RTF_UP
        rt6.metric = 1
        rt6.ifindex = socket.if_nametoindex("lo")
        data = bytes(rt6)
    with socket.socket(family, socket.SOCK_DGRAM) as s:
        fcntl.ioctl(s, _SIOCADDRT, data)


def install_redirect(port: int, *, ipv6: bool = True) -> tuple[str, bool]:
    """Send every outbound TCP connection to ``port`` on loopback (127.0.0.1, and ::1 when
    ``ipv6``: the proxy's transparent listeners, which read the original destination with
    SO_ORIGINAL_DST) and refuse other non-loopback traffic at once. Returns (why not or "",
    whether IPv6 is redirected too); on an error nothing of the failed family is installed."""
    v6 = ipv6
    err = _nft((_RULES_INET if v6 else _RULES) % {"port": port})
    if err and v6:  # e.g. a kernel without inet nat (< 5.2): IPv4 alone
        v6 = False
        err = _nft(_RULES % {"port": port})
    if err:
        return err, False
    try:
        _default_route(socket.AF_INET)
    except OSError as e:
        return f"default route over loopback: {e.strerror or e}", False
    if v6:
        try:
            _default_route(socket.AF_INET6)
        except OSError:
            v6 = False  # IPv6 connects stay "Network is unreachable"
    return "", v6
