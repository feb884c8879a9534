"""Network: latency the proxy adds per HTTPS request on loopback, and sandbox creation public vs deny."""

# Run: .venv/bin/python benchmarks/network_bench.py [--n 200] [--sandboxes 20] [--json out.json]
# Needs the openssl binary (a throw-away self-signed certificate for the loopback origin).

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _stats(xs: list[float]) -> dict[str, float]:
    xs = sorted(xs)
    return {"median_ms": round(statistics.median(xs) * 1e3, 3),
            "p10_ms": round(xs[len(xs) // 10] * 1e3, 3),
            "p90_ms": round(xs[(len(xs) * 9) // 10] * 1e3, 3), "n": len(xs)}


def _origin(certdir: str) -> tuple[int, str, int]:
    """A TLS origin on 127.0.0.1 in a child process (no GIL shared with the proxy), answering
    each request with a tiny HTTP/1.1 response. Returns (port, CA file, pid)."""
    cert, key = os.path.join(certdir, "c.pem"), os.path.join(certdir, "k.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key,
                    "-out", cert, "-days", "1", "-subj", "/CN=bench.test",
                    "-addext", "subjectAltName=DNS:bench.test"], check=True, capture_output=True)
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(64)
    pid = os.fork()
    if pid == 0:
        try:
            sctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            sctx.load_cert_chain(cert, key)
            while True:
                c, _ = srv.accept()
                c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                try:
                    with sctx.wrap_socket(c, server_side=True) as s:
                        while True:
                            buf = b""
                            while b"\r\n\r\n" not in buf:
                                d = s.recv(4096)
                                if not d:
                                    break
                                buf += d
                            if not buf:
                                break
                            s.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                except (OSError, ssl.SSLError):
                    pass
        finally:
            os._exit(0)
    port = srv.getsockname()[1]
    srv.close()
    return port, cert, pid


def _request(s: ssl.SSLSocket) -> None:
    s.sendall(b"GET / HTTP/1.1\r\nHost: bench.test\r\n\r\n")
    buf = b""
    while not buf.endswith(b"ok"):
        buf += s.recv(4096)


def _conn(addr: tuple[str, int]) -> socket.socket:
    # no Nagle: small TLS records otherwise wait for a delayed ACK (40 ms) on both paths
    s = socket.create_connection(addr)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def _direct(port: int, ctx: ssl.SSLContext) -> None:
    with _conn(("127.0.0.1", port)) as raw:
        with ctx.wrap_socket(raw, server_hostname="bench.test") as s:
            _request(s)


def _via_proxy(proxy: tuple[str, int], port: int, ctx: ssl.SSLContext) -> None:
    with _conn(proxy) as raw:
        raw.sendall(b"CONNECT bench.test:%d HTTP/1.1\r\nHost: bench.test:%d\r\n\r\n" % (port, port))
        buf = b""
        while b"\r\n\r\n" not in buf:
            buf += raw.recv(4096)
        assert buf.startswith(b"HTTP/1.1 200"), buf
        with ctx.wrap_socket(raw, server_hostname="bench.test") as s:
            _request(s)


def _client(n: int, port: int, cafile: str, proxy: tuple[str, int]) -> dict[str, list[float]]:
    """The measuring client (a child process, as a tool in a sandbox would be)."""
    ctx = ssl.create_default_context(cafile=cafile)
    for _ in range(20):  # warm-up
        _direct(port, ctx)
        _via_proxy(proxy, port, ctx)
    out: dict[str, list[float]] = {"direct": [], "via": [], "ka_direct": [], "ka_via": []}
    for _ in range(n):  # interleaved, so load drift hits both alike
        t = time.perf_counter()
        _direct(port, ctx)
        out["direct"].append(time.perf_counter() - t)
        t = time.perf_counter()
        _via_proxy(proxy, port, ctx)
        out["via"].append(time.perf_counter() - t)
    # one request inside an established tunnel vs on a direct connection
    with _conn(("127.0.0.1", port)) as raw, \
            ctx.wrap_socket(raw, server_hostname="bench.test") as s:
        for _ in range(n):
            t = time.perf_counter()
            _request(s)
            out["ka_direct"].append(time.perf_counter() - t)
    raw = _conn(proxy)
    raw.sendall(b"CONNECT bench.test:%d HTTP/1.1\r\n\r\n" % port)
    raw.recv(4096)
    with ctx.wrap_socket(raw, server_hostname="bench.test") as s:
        for _ in range(n):
            t = time.perf_counter()
            _request(s)
            out["ka_via"].append(time.perf_counter() - t)
    return out


def https_latency(n: int) -> dict:
    """Origin and client are child processes; this process runs only the proxy (as a caller
    of Sandbox does), so the client measures what a tool in a sandbox would see."""
    with tempfile.TemporaryDirectory() as d:
        port, cafile, origin_pid = _origin(d)
        lst = socket.socket()
        lst.bind(("127.0.0.1", 0))
        lst.listen(64)
        proxy = lst.getsockname()
        go_r, go_w = os.pipe()
        res_r, res_w = os.pipe()
        child = os.fork()  # before the proxy's thread exists in this process
        if child == 0:
            os.close(go_w)
            os.close(res_r)
            os.read(go_r, 1)
            data = json.dumps(_client(n, port, cafile, proxy)).encode()
            while data:
                data = data[os.write(res_w, data):]
            os._exit(0)
        os.close(go_r)
        os.close(res_w)
        from agentic_bash.network import NetworkPolicy
        from agentic_bash.network.proxy import get_proxy
        # the name path: resolved (test resolver, on the proxy's worker thread), checked, SNI
        policy = NetworkPolicy(allow=["bench.test"], block_private=False,
                               resolver={"bench.test": ["127.0.0.1"]})
        att = get_proxy().attach(policy, tcp=[lst], resolver=policy.resolver)
        try:
            os.write(go_w, b"g")
            os.close(go_w)
            chunks = []
            while True:
                c = os.read(res_r, 1 << 16)
                if not c:
                    break
                chunks.append(c)
            os.close(res_r)
            os.waitpid(child, 0)
        finally:
            att.close()
            os.kill(origin_pid, signal.SIGKILL)
            os.waitpid(origin_pid, 0)
    res = json.loads(b"".join(chunks))
    d_, v_ = _stats(res["direct"]), _stats(res["via"])
    kd, kv = _stats(res["ka_direct"]), _stats(res["ka_via"])
    return {"new_connection_direct": d_, "new_connection_via_proxy": v_,
            "added_per_new_https_request_ms": round(v_["median_ms"] - d_["median_ms"], 3),
            "in_tunnel_direct": kd, "in_tunnel_via_proxy": kv,
            "added_per_request_in_tunnel_ms": round(kv["median_ms"] - kd["median_ms"], 3)}


def creation(n: int) -> dict:
    from agentic_bash.executors.sandboxed import SandboxedExecutor

    warnings.simplefilter("ignore")
    SandboxedExecutor(isolation="namespace", network="deny").close()  # zygote + probe warm
    SandboxedExecutor(isolation="namespace", network="public").close()  # proxy thread warm
    from agentic_bash.network.proxy import ProxyServer
    attach: list[float] = []
    inside: list[float] = []
    orig = ProxyServer.attach

    def timed(self, *a, **kw):  # noqa: ANN001, ANN002, ANN003, ANN202
        t = time.perf_counter()
        try:
            return orig(self, *a, **kw)
        finally:
            attach.append(time.perf_counter() - t)
    ProxyServer.attach = timed  # type: ignore[method-assign]
    out: dict[str, list[float]] = {"deny": [], "public": [], "host": []}
    for _ in range(n):
        for mode in out:
            t = time.perf_counter()
            ex = SandboxedExecutor(isolation="namespace", network=mode)
            out[mode].append(time.perf_counter() - t)
            if mode == "public" and ex.observed.get("t_network_ms") is not None:
                inside.append(ex.observed["t_network_ms"] / 1e3)
            ex.close()
    ProxyServer.attach = orig  # type: ignore[method-assign]
    st = {k: _stats(v) for k, v in out.items()}
    return {**st, "public_minus_deny_ms": round(st["public"]["median_ms"] -
                                                st["deny"]["median_ms"], 3),
            "proxy_attach": _stats(attach),
            "sandbox_side_network_step": _stats(inside)}


def attach_memory(k: int) -> dict:
    """Memory of the shared proxy per attached sandbox: k listener pairs attached at once."""
    from agentic_bash.network import NetworkPolicy
    from agentic_bash.network.proxy import get_proxy

    def rss_kib() -> int:
        with open("/proc/self/status") as f:
            return next(int(ln.split()[1]) for ln in f if ln.startswith("VmRSS:"))
    proxy = get_proxy()
    time.sleep(0.2)
    before = rss_kib()
    atts = []
    for _ in range(k):
        t = socket.socket()
        t.bind(("127.0.0.1", 0))
        t.listen(16)
        u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        u.bind(("127.0.0.1", 0))
        atts.append(proxy.attach(NetworkPolicy(), tcp=[t], udp=[u]))
    time.sleep(0.5)
    after = rss_kib()
    for a in atts:
        a.close()
    return {"sandboxes": k, "rss_per_attachment_kib": round((after - before) / k, 1)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--sandboxes", type=int, default=20)
    ap.add_argument("--json")
    args = ap.parse_args()
    res = {"https": https_latency(args.n), "creation": creation(args.sandboxes),
           "memory": attach_memory(200)}
    print(json.dumps(res, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=2) + "\n")


if __name__ == "__main__":
    main()
