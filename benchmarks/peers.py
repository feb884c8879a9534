"""Side-by-side timings of agentic-bash, real bash, bashkit (PyPI) and just-bash (npm) in one run.

Usage: .venv/bin/python benchmarks/peers.py [--quick] [--out benchmarks/results/peers.json]

Peers are installed on demand: bashkit into the current venv with pip, just-bash into
benchmarks/peers/node_modules with npm. A peer that cannot be installed is reported as such.
Numbers are seconds per iteration; ratios are ours / peer from this one run.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

TEN_MB = 10 * 1024 * 1024

CASES = [
    # name, setup, script, iterations (quick / full), expected stdout
    ("echo_per_call", "", "echo hello", (200, 3000), "hello\n"),
    ("loop_10k", "", "x=0; for i in $(seq 1 10000); do x=$((x+i)); done; echo $x", (1, 5), "50005000\n"),
    ("write_1000_ls", "mkdir -p /tmp/w && cd /tmp/w",
     "cd /tmp/w && for i in $(seq 1 1000); do echo $i > f$i; done; ls | wc -l", (1, 3), "1000\n"),
    ("cat_10mb_wc", "", "cat /tmp/big | wc -c", (1, 5), f"{TEN_MB}\n"),
]


def _best(samples: list[float]) -> float:
    return statistics.median(samples)


# ------------------------------------------------------------------------------ ours


def bench_ours(quick: bool) -> dict[str, float | str]:
    from agentic_bash import Limits, Sandbox

    out: dict[str, float | str] = {}
    for name, setup, script, iters, expect in CASES:
        n = iters[0] if quick else iters[1]
        with Sandbox(isolation="virtual") as sb:
            if name == "cat_10mb_wc":
                sb.write_file("/tmp/big", b"x" * TEN_MB)
            if setup:
                sb.run(setup)
            r = sb.run(script)
            if r.stdout.strip() != expect.strip():
                out[name] = f"wrong output: {r.stdout[:60]!r} {r.stderr[:100]!r}"
                continue
            samples = []
            if name == "echo_per_call":
                t0 = time.perf_counter()
                for _ in range(n):
                    sb.run(script)
                out[name] = (time.perf_counter() - t0) / n
                continue
            for _ in range(n):
                t0 = time.perf_counter()
                sb.run(script)
                samples.append(time.perf_counter() - t0)
            out[name] = _best(samples)
    # construction
    samples = []
    for _ in range(20 if quick else 200):
        t0 = time.perf_counter()
        sb = Sandbox(isolation="virtual")
        sb.run(":")
        samples.append(time.perf_counter() - t0)
        sb.close()
    out["construct_first_cmd"] = _best(samples)
    # timeout latency: how long after the deadline the run comes back
    lat = []
    with Sandbox(isolation="virtual", limits=Limits(timeout=60)) as sb:
        for _ in range(3 if quick else 10):
            r = sb.run("while :; do :; done", timeout=0.2)
            lat.append(r.duration - 0.2 if r.timed_out else float("nan"))
    out["timeout_latency"] = _best(lat)
    return out


# ------------------------------------------------------------------------------ real bash


def bench_bash(quick: bool) -> dict[str, float | str]:
    out: dict[str, float | str] = {}
    tmp = tempfile.mkdtemp(prefix="bench-bash-")
    try:
        big = os.path.join(tmp, "big")
        with open(big, "wb") as f:
            f.write(b"x" * TEN_MB)
        env = {"PATH": "/usr/bin:/bin", "HOME": tmp, "LANG": "C.UTF-8"}
        # per call on a warm session: one persistent bash reading commands from a pipe
        p = subprocess.Popen(["bash"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, cwd=tmp)
        assert p.stdin and p.stdout
        n = CASES[0][3][0 if quick else 1]
        t0 = time.perf_counter()
        for _ in range(n):
            p.stdin.write(b"echo hello; echo __END__\n")
            p.stdin.flush()
            while p.stdout.readline() != b"__END__\n":
                pass
        out["echo_per_call"] = (time.perf_counter() - t0) / n
        p.stdin.close()
        p.wait()
        for name, setup, script, iters, _expect in CASES[1:]:
            script = script.replace("/tmp/big", big).replace("/tmp/w", os.path.join(tmp, "w"))
            setup = setup.replace("/tmp/w", os.path.join(tmp, "w"))
            samples = []
            for _ in range(iters[0] if quick else iters[1]):
                if setup:
                    subprocess.run(["bash", "-c", setup], env=env, cwd=tmp, check=True)
                t0 = time.perf_counter()
                subprocess.run(["bash", "-c", script], env=env, cwd=tmp, capture_output=True, check=True)
                samples.append(time.perf_counter() - t0)
                shutil.rmtree(os.path.join(tmp, "w"), ignore_errors=True)
            out[name] = _best(samples)
        samples = []
        for _ in range(20 if quick else 100):
            t0 = time.perf_counter()
            subprocess.run(["bash", "-c", ":"], env=env)
            samples.append(time.perf_counter() - t0)
        out["construct_first_cmd"] = _best(samples)
        lat = []
        for _ in range(3):
            t0 = time.perf_counter()
            subprocess.run(["timeout", "0.2", "bash", "-c", "while :; do :; done"])
            lat.append(time.perf_counter() - t0 - 0.2)
        out["timeout_latency"] = _best(lat)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out


# ------------------------------------------------------------------------------ bashkit


def bench_bashkit(quick: bool) -> dict[str, float | str]:
    try:
        import bashkit  # type: ignore[import-not-found]
    except ImportError:
        r = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "bashkit"], capture_output=True)
        if r.returncode:
            return {"error": "bashkit not installable: " + r.stderr.decode()[-200:]}
        import bashkit  # type: ignore[import-not-found]
    out: dict[str, float | str] = {}
    for name, setup, script, iters, expect in CASES:
        n = iters[0] if quick else iters[1]
        # bashkit's default budget (10,000 commands) would stop loop_10k; lift it like ours
        b = bashkit.Bash(max_commands=10**7, max_loop_iterations=10**7)
        if name == "cat_10mb_wc":
            # bashkit refuses files over 10,000,000 bytes: two halves, concatenated by cat
            b.write_file("/tmp/big1", "x" * (TEN_MB // 2))
            b.write_file("/tmp/big2", "x" * (TEN_MB // 2))
            script = "cat /tmp/big1 /tmp/big2 | wc -c"
        if setup:
            b.execute_sync(setup)
        r = b.execute_sync(script)
        if r.stdout.strip() != expect.strip():
            out[name] = f"wrong output: {r.stdout[:60]!r}"
            continue
        samples = []
        if name == "echo_per_call":
            t0 = time.perf_counter()
            for _ in range(n):
                b.execute_sync(script)
            out[name] = (time.perf_counter() - t0) / n
            continue
        for _ in range(n):
            t0 = time.perf_counter()
            b.execute_sync(script)
            samples.append(time.perf_counter() - t0)
        out[name] = _best(samples)
    samples = []
    for _ in range(20 if quick else 200):
        t0 = time.perf_counter()
        b = bashkit.Bash()
        b.execute_sync(":")
        samples.append(time.perf_counter() - t0)
    out["construct_first_cmd"] = _best(samples)
    return out


# ------------------------------------------------------------------------------ just-bash


def bench_just_bash(quick: bool) -> dict[str, float | str]:
    d = HERE / "peers"
    if not (d / "node_modules" / "just-bash").exists():
        r = subprocess.run(["npm", "install", "--silent", "--prefix", str(d), "just-bash"], capture_output=True)
        if r.returncode:
            return {"error": "just-bash not installable: " + r.stderr.decode()[-200:]}
    cases = []
    for name, setup, script, iters, expect in CASES:
        if name == "cat_10mb_wc":
            setup = "printf '%*s' 1048576 '' | tr ' ' x > /tmp/m; for i in 1 2 3 4 5 6 7 8 9 10; do cat /tmp/m; done > /tmp/big"
        cases.append({"name": name, "setup": setup, "script": script,
                      "iters": min(iters[0] if quick else iters[1], 300), "expect": expect})
    r = subprocess.run(["node", str(d / "just_bash_runner.mjs")], input=json.dumps(cases).encode(),
                       capture_output=True, cwd=d, timeout=900)
    if r.returncode:
        return {"error": r.stderr.decode()[-300:]}
    return json.loads(r.stdout)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default=str(HERE / "results" / "peers.json"))
    ap.add_argument("--only", default="ours,bash,bashkit,just-bash")
    a = ap.parse_args()
    runners = {"ours": bench_ours, "bash": bench_bash, "bashkit": bench_bashkit, "just-bash": bench_just_bash}
    res = {}
    for k in a.only.split(","):
        print(f"running {k} ...", file=sys.stderr)
        res[k] = runners[k](a.quick)
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(res, indent=2))
    names = [c[0] for c in CASES] + ["construct_first_cmd", "timeout_latency"]
    peers = [k for k in res if k != "ours"]
    print(f"{'case':22} {'ours':>12} " + " ".join(f"{p:>12} {'ratio':>7}" for p in peers))
    for n in names:
        o = res.get("ours", {}).get(n)
        row = f"{n:22} {_fmt(o):>12} "
        for p in peers:
            v = res[p].get(n)
            ratio = f"{o / v:.2f}x" if isinstance(o, float) and isinstance(v, float) and v > 0 else "-"
            row += f"{_fmt(v):>12} {ratio:>7} "
        print(row)


def _fmt(v: object) -> str:
    if isinstance(v, float):
        return f"{v * 1e6:.1f}us" if v < 1e-3 else f"{v * 1e3:.2f}ms"
    return "-" if v is None else str(v)[:12]


if __name__ == "__main__":
    main()
