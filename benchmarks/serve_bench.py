"""`agentic-bash serve`: /execute echo round trip over loopback, and sessions/s created.

Run: .venv/bin/python benchmarks/serve_bench.py [--json FILE] [--n 2000] [--sessions 50]
Servers are child processes on 127.0.0.1; the clients keep one HTTP/1.1 connection alive
(http.client), as an SDK's session does. Latencies are min / median / p99 over N calls.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import pathlib
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tests"))
from server_util import start_server  # noqa: E402

KEY = "bench-key"


def _stats(xs: list[float]) -> dict[str, float]:
    xs = sorted(xs)
    return {"min_ms": xs[0] * 1e3, "median_ms": statistics.median(xs) * 1e3,
            "p99_ms": xs[int(len(xs) * 0.99) - 1] * 1e3, "n": len(xs)}


def _conn(url: str) -> http.client.HTTPConnection:
    host, port = url.split("//")[1].split(":")
    return http.client.HTTPConnection(host, int(port), timeout=30)


def execute_round_trip(isolation: str, n: int) -> dict[str, Any]:
    base = tempfile.mkdtemp(prefix="agb-bench-")
    srv = start_server("--base-dir", base, "-i", isolation)
    try:
        c = _conn(srv.url)
        body = json.dumps({"command": "echo hi"}).encode()
        hdr = {"content-type": "application/json"}
        times = []
        for i in range(n + 50):
            t = time.perf_counter()
            c.request("POST", "/execute", body, hdr)
            r = c.getresponse()
            data = r.read()
            dt = time.perf_counter() - t
            if i >= 50:                       # warm-up excluded
                times.append(dt)
        assert json.loads(data)["stdout"] == "hi\n"
        out = {"execute_echo": _stats(times)}
        times = []
        for i in range(n // 2):
            t = time.perf_counter()
            c.request("GET", "/")
            c.getresponse().read()
            times.append(time.perf_counter() - t)
        out["health"] = _stats(times)
        try:
            from k8s_agent_sandbox.models import SandboxDirectConnectionConfig
            from k8s_agent_sandbox.sandbox import Sandbox as SdkSandbox

            class K8s:
                injected_api_client = None

                def get_sandbox(self, *a: Any) -> dict[str, Any]:
                    return {}
            sdk = SdkSandbox("c", "s", connection_config=SandboxDirectConnectionConfig(api_url=srv.url),
                             k8s_helper=K8s())
            times = []
            for i in range(n // 4 + 20):
                t = time.perf_counter()
                sdk.commands.run("echo hi")
                if i >= 20:
                    times.append(time.perf_counter() - t)
            out["official_sdk_run_echo"] = _stats(times)
        except ImportError:
            pass
        return out
    finally:
        srv.stop()


def sessions_created(isolation: str, count: int, workers: int, pool: int = 0) -> dict[str, Any]:
    from agentic_bash.client import RemoteSandbox
    d = tempfile.mkdtemp(prefix="agb-bench-")
    srv = start_server("--sessions", "--db", os.path.join(d, "s.db"), "--api-key", KEY, "-i", isolation,
                       "--max-sessions", str(count * 3), "--pool-size", str(pool))
    try:
        out: dict[str, Any] = {}
        if pool:
            deadline = time.monotonic() + 300
            while time.monotonic() < deadline:     # let the pool fill before timing
                if json.loads(srv.get("/")[1])["pool"]["ready"] >= pool:
                    break
                time.sleep(0.2)
        for w in ((workers,) if pool else (1, workers)):
            t = time.perf_counter()
            with ThreadPoolExecutor(w) as ex:
                sbs = list(ex.map(lambda _: RemoteSandbox(srv.url, api_key=KEY), range(count)))
            dt = time.perf_counter() - t
            out[f"create_{count}_with_{w}_clients"] = {"seconds": dt, "sessions_per_s": count / dt}
            sb = sbs[0]
            times = []
            for i in range(220):
                t = time.perf_counter()
                sb.run("echo hi")
                if i >= 20:
                    times.append(time.perf_counter() - t)
            out.setdefault("exec_echo", _stats(times))
            t = time.perf_counter()
            with ThreadPoolExecutor(w) as ex:
                list(ex.map(lambda s: s.close(), sbs))
            out[f"delete_{count}_with_{w}_clients_s"] = time.perf_counter() - t
        return out
    finally:
        srv.stop()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--sessions", type=int, default=50)
    ap.add_argument("--isolation", nargs="*", default=["virtual", "namespace"])
    ap.add_argument("--pool", type=int, default=50, help="also time creation from a pool this big")
    a = ap.parse_args()
    res: dict[str, Any] = {"runtime": {}, "sessions": {}}
    for iso in a.isolation:
        res["runtime"][iso] = r = execute_round_trip(iso, a.n)
        e = r["execute_echo"]
        print(f"/execute echo, {iso:9s}: min {e['min_ms']:.3f} ms  median {e['median_ms']:.3f} ms  "
              f"p99 {e['p99_ms']:.3f} ms" + (f"   official SDK median {r['official_sdk_run_echo']['median_ms']:.3f} ms"
                                            if "official_sdk_run_echo" in r else ""))
    for iso in a.isolation:
        res["sessions"][iso] = s = sessions_created(iso, a.sessions, 8)
        for k, v in s.items():
            if isinstance(v, dict) and "sessions_per_s" in v:
                print(f"sessions, {iso:9s}: {k}: {v['sessions_per_s']:.1f}/s")
        print(f"sessions, {iso:9s}: exec echo median {s['exec_echo']['median_ms']:.3f} ms")
        if a.pool:
            res["sessions"][iso + "+pool"] = s = sessions_created(iso, a.sessions, 8, a.pool)
            for k, v in s.items():
                if isinstance(v, dict) and "sessions_per_s" in v:
                    print(f"sessions, {iso:9s} from a pool of {a.pool}: {k}: {v['sessions_per_s']:.1f}/s")
    if a.json:
        pathlib.Path(a.json).write_text(json.dumps(res, indent=2) + "\n")


if __name__ == "__main__":
    main()
