"""Network checks run as one identity (root or the test user): prints JSON after a marker."""

from __future__ import annotations

import json
import os
import socket
import sys
import threading
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SECRET = "HOSTSECRET-7f3a"


def host_services() -> tuple[int, int, int]:
    """A TCP, a UDP and an HTTP service on the host's 127.0.0.1 (what a sandbox must not reach)."""
    tcp = socket.socket()
    tcp.bind(("127.0.0.1", 0))
    tcp.listen(16)
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 0))
    http = socket.socket()
    http.bind(("127.0.0.1", 0))
    http.listen(16)

    def tcp_loop() -> None:
        while True:
            c, _ = tcp.accept()
            c.sendall(SECRET.encode() + b"\n")
            c.close()

    def udp_loop() -> None:
        while True:
            _, a = udp.recvfrom(2048)
            udp.sendto(SECRET.encode(), a)

    def http_loop() -> None:
        while True:
            c, _ = http.accept()
            c.settimeout(5)
            try:
                c.recv(65536)
                body = SECRET.encode()
                c.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
            except OSError:
                pass
            c.close()
    for f in (tcp_loop, udp_loop, http_loop):
        threading.Thread(target=f, daemon=True).start()
    return tcp.getsockname()[1], udp.getsockname()[1], http.getsockname()[1]


def rr(r) -> dict:
    return {"out": r.stdout, "err": r.stderr, "code": r.exit_code,
            "violations": [[v.kind, v.target, v.reason, v.detail] for v in r.violations]}


def main() -> None:
    from agentic_bash import Sandbox
    from agentic_bash.network import NetworkPolicy

    pip_pkg = sys.argv[sys.argv.index("--pip") + 1] if "--pip" in sys.argv else ""
    tcp, udp, http = host_services()
    out: dict = {"secret": SECRET}
    warnings.simplefilter("ignore")
    t0 = time.monotonic()
    with Sandbox() as sb:
        out["t_start"] = time.monotonic() - t0
        out["level"] = sb.isolation_level
        out["report"] = sb.isolation.to_dict()
        hosts = sorted(a for a in _host_addrs())
        out["host_addrs"] = hosts
        py_tcp = (f"python3 -c \"import socket; s=socket.create_connection(('127.0.0.1', {tcp}),"
                  " 3); print(s.recv(100))\"")
        py_udp = (f"python3 -c \"import socket; s=socket.socket(socket.AF_INET, "
                  f"socket.SOCK_DGRAM); s.settimeout(2); s.sendto(b'x', ('127.0.0.1', {udp})); "
                  "print(s.recv(100))\"")
        checks = {
            "curl_noproxy": f"curl -sS -m 5 --noproxy '*' http://127.0.0.1:{http}/",
            "curl_proxy": f"curl -sS -m 5 --noproxy '' -x http://127.0.0.1:3128 "
                          f"http://127.0.0.1:{http}/",
            "curl_proxy_localhost": f"curl -sS -m 5 --noproxy '' -x http://127.0.0.1:3128 "
                                    f"http://localhost:{http}/",
            "curl_proxy_mapped": f"curl -sS -m 5 --noproxy '' -x http://127.0.0.1:3128 "
                                 f"'http://[::ffff:127.0.0.1]:{http}/'",
            "curl_connect": f"curl -sS -m 5 --noproxy '' -x http://127.0.0.1:3128 "
                            f"-p http://127.0.0.1:{http}/",
            "curl_socks": f"curl -sS -m 5 --noproxy '' --socks5-hostname 127.0.0.1:3128 "
                          f"http://127.0.0.1:{http}/",
            "curl_metadata": "curl -sS -m 5 http://169.254.169.254/latest/meta-data/",
            "python_tcp": py_tcp,
            "python_udp": py_udp,
            "devtcp": f"exec 3<>/dev/tcp/127.0.0.1/{tcp} && head -c 100 <&3",
            "devudp": f"exec 4<>/dev/udp/127.0.0.1/{udp} && echo x >&4 && "
                      f"timeout 2 head -c 20 <&4",
            "raw": "python3 -c \"import socket; socket.socket(socket.AF_INET, socket.SOCK_RAW, "
                   "socket.IPPROTO_ICMP); print('raw ok')\"",
            "packet": "python3 -c \"import socket; socket.socket(socket.AF_PACKET, "
                      "socket.SOCK_RAW); print('packet ok')\"",
            # a proxy-unaware connection to a private address: redirected (nftables) and
            # refused by the proxy, or unreachable without the redirect; never dialled
            "direct_private": "env -i python3 -c \"import socket; s=socket.create_connection("
                              "('10.255.255.1', 80), 3); print(repr(s.recv(10)))\" 2>&1 | tail -1",
            "direct_private6": "env -i python3 -c \"import socket; s=socket.create_connection("
                               "('fd00::5', 80), 3); print(repr(s.recv(10)))\" 2>&1 | tail -1",
            "direct_udp": "python3 -c \"import socket; s=socket.socket(socket.AF_INET, "
                          "socket.SOCK_DGRAM); s.sendto(b'x', ('10.255.255.1', 53))\" 2>&1 "
                          "| tail -1",
            "env": "env | grep -i _proxy | sort",
        }
        for i, a in enumerate(hosts):
            h = f"[{a}]" if ":" in a else a
            checks[f"host_addr{i}"] = (f"curl -sS -m 5 --noproxy '' -x http://127.0.0.1:3128 "
                                       f"http://{h}:{http}/")
        v4 = [a for a in hosts if ":" not in a]
        if v4:
            # the host's own address, with a service bound on it: redirected and refused
            hsrv = socket.socket()
            hsrv.bind((v4[0], 0))
            hsrv.listen(4)
            threading.Thread(target=_serve_secret, args=(hsrv,), daemon=True).start()
            out["host_own"] = [v4[0], hsrv.getsockname()[1]]
            checks["direct_host_own"] = (
                f"env -i python3 -c \"import socket; s=socket.create_connection(('{v4[0]}', "
                f"{hsrv.getsockname()[1]}), 3); print(repr(s.recv(100)))\" 2>&1 | tail -1")
        out["default"] = {k: rr(sb.run(v, timeout=30)) for k, v in checks.items()}
        out["transparent"] = any("redirected" in n for n in sb.isolation.notes)
        out["transparent6"] = any("IPv4 and IPv6" in n for n in sb.isolation.notes)
        if pip_pkg:
            out["pip_install"] = rr(sb.run(
                f"PIP_CONFIG_FILE=/dev/null python3 -m pip install -q --no-cache-dir {pip_pkg} "
                f"&& python3 -c 'import {pip_pkg}; print(\"imported\")'", timeout=180))
            out["pip_log"] = [e for e in sb.network_log if e["via"] != "dns"][-10:]
    # the zygote and the shared proxy are process-wide: count fds once they exist (and once
    # the host has finished fetching what the pip install above asked it to share)
    from agentic_bash.packages.cache import wait_promotions
    wait_promotions(300)
    fds_before = len(os.listdir("/proc/self/fd"))
    # an allowlist with a test resolver
    res = {"ok.test": ["127.0.0.1"], "a.x.test": ["127.0.0.1"], "x.test.evil": ["127.0.0.1"],
           "meta.x.test": ["169.254.169.254"], "lo.x.test": ["127.0.0.1"]}
    seen: list = []
    with Sandbox(network=NetworkPolicy(allow=["ok.test", "*.x.test"], block_private=False,
                                       resolver=res), on_violation=seen.append) as sb:
        px = "curl -sS -m 5 --noproxy '' -x http://127.0.0.1:3128"
        out["allow"] = {k: rr(sb.run(v, timeout=30)) for k, v in {
            "listed": f"{px} http://ok.test:{http}/",
            "wild": f"{px} http://a.x.test:{http}/",
            "evil": f"{px} http://x.test.evil:{http}/",
            "bare": f"{px} http://x.test:{http}/",
            "devtcp_listed": f"exec 3<>/dev/tcp/ok.test/{tcp} && head -c 100 <&3",
            "getent_ok": "getent hosts ok.test",
            "getent_evil": "getent hosts x.test.evil; echo rc=$?",
        }.items()}
    out["hook"] = [[v.kind, v.target] for v in seen]
    with Sandbox(network=NetworkPolicy(allow=["*.x.test"], resolver=res)) as sb:
        px = "curl -sS -m 5 --noproxy '' -x http://127.0.0.1:3128"
        out["private"] = {k: rr(sb.run(v, timeout=30)) for k, v in {
            "meta": f"{px} http://meta.x.test/latest/",
            "lo": f"{px} http://lo.x.test:{http}/",
            "getent_meta": "getent hosts meta.x.test; echo rc=$?",
        }.items()}
    if "host_own" in out:
        # the redirect's allowed path: an explicit CIDR rule for the host's own address
        a, port = out["host_own"]
        with Sandbox(network=NetworkPolicy(allow=[f"{a}/32:{port}"])) as sb:
            out["redirect_allowed"] = rr(sb.run(
                f"env -i python3 -c \"import socket; s=socket.create_connection(('{a}', "
                f"{port}), 3); print(s.recv(100).decode().strip())\" 2>&1 | tail -1", timeout=30))
    if "host_own" in out:
        # a proxy-unaware TLS client, allowlisted by the name the DNS stub answered: its SNI
        # must be an allowed name too (domain fronting on a shared address is refused)
        a = out["host_own"][0]
        lsn = socket.socket()
        lsn.bind((a, 0))
        lsn.listen(8)
        threading.Thread(target=_reply_after_data, args=(lsn,), daemon=True).start()
        port = lsn.getsockname()[1]
        tls = ("env -i python3 -c \"import socket, ssl; s=socket.create_connection(('{a}', "
               "{p}), 3); c=ssl.create_default_context(); c.check_hostname=False; "
               "c.verify_mode=ssl.CERT_NONE; c.wrap_socket(s, server_hostname='{sni}')\" 2>&1 "
               "| tail -1")
        with Sandbox(network=NetworkPolicy(allow=["ok.test"], block_private=False,
                                           resolver={"ok.test": [a]})) as sb:
            sb.run("getent hosts ok.test")
            out["sni_fronting"] = rr(sb.run(tls.format(a=a, p=port, sni="evil.test"), timeout=30))
            out["sni_listed"] = rr(sb.run(tls.format(a=a, p=port, sni="ok.test"), timeout=30))
        lsn.close()  # the test's own server, not counted as a leak
    if pip_pkg:
        with Sandbox(network=NetworkPolicy(allow=["pypi.org", "files.pythonhosted.org"])) as sb:
            out["pip_download_allow"] = rr(sb.run(
                f"PIP_CONFIG_FILE=/dev/null python3 -m pip download -q --no-deps "
                f"--no-cache-dir -d /tmp/dl {pip_pkg} && ls /tmp/dl", timeout=180))
        with Sandbox(network=NetworkPolicy(allow=["pypi.org"])) as sb:
            out["pip_download_partial"] = rr(sb.run(
                f"PIP_CONFIG_FILE=/dev/null python3 -m pip download -q --no-deps --retries 0 "
                f"--no-cache-dir -d /tmp/dl {pip_pkg}", timeout=180))
    with Sandbox(network="deny") as sb:
        out["deny"] = {k: rr(sb.run(v, timeout=30)) for k, v in {
            "curl": "curl -sS -m 5 https://pypi.org/",
            "getent": "getent hosts pypi.org; echo rc=$?",
            "env": "env | grep -ic _proxy",
        }.items()}
        out["deny_report"] = sb.isolation.to_dict()
    # cleanup: nothing of the sandboxes stays open in this process
    out["fds_leaked"] = len(os.listdir("/proc/self/fd")) - fds_before
    print("\n@@JSON@@" + json.dumps(out))


def _serve_secret(srv: socket.socket) -> None:
    while True:
        c, _ = srv.accept()
        c.sendall(SECRET.encode() + b"\n")
        c.close()


def _reply_after_data(srv: socket.socket) -> None:
    while True:
        try:
            c, _ = srv.accept()
        except OSError:
            return
        c.settimeout(5)
        try:
            if c.recv(65536):
                c.sendall(SECRET.encode() + b"\n")
        except OSError:
            pass
        c.close()


def _host_addrs() -> set[str]:
    from agentic_bash.network.proxy import _local_addresses
    return {a for a in _local_addresses() if not a.startswith(("127.", "::1", "fe80"))}


if __name__ == "__main__":
    main()
