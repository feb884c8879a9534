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


def install_redirect(port: int) -> str:
    """Send every outbound TCP connection to 127.0.0.1:``port`` (the proxy's transparent
    listener, which reads the original destination with SO_ORIGINAL_DST) and refuse other
    non-loopback traffic at once. Returns "" on success, else why not (nothing installed)."""
    err = _nft(_RULES % {"port": port})
    if err:
        return err
    rt = _RtEntry()
    rt.dst.family = rt.gateway.family = rt.genmask.family = socket.AF_INET
    rt.flags = _RTF_UP
    rt.dev = b"lo"
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            fcntl.ioctl(s, _SIOCADDRT, bytes(rt))
    except OSError as e:
        return f"default route over loopback: {e.strerror or e}"
    return ""
