"""Packages: sandbox start on a named image vs a plain one, disk per sandbox, apt and pip installs cold vs from the shared cache."""

# Run: .venv/bin/python benchmarks/packages_bench.py [--n 30] [--json out.json]
# Needs a sandboxed level (user namespaces) and the package registries for the build.

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time


def _median_ms(xs: list[float]) -> float:
    return statistics.median(xs) * 1e3


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=30)
    ap.add_argument("--json")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="abpkgbench-")
    os.environ["AGENTIC_BASH_IMAGES"] = os.path.join(work, "images")
    os.environ["AGENTIC_BASH_CACHE"] = os.path.join(work, "cache")
    import agentic_bash as ab
    from agentic_bash.packages.images import build_image

    out: dict[str, float | int | str] = {}
    t = time.perf_counter()
    img = build_image("bench", "pip install -q termcolor requests")
    out["image_build_s"] = round(time.perf_counter() - t, 2)
    out["image_bytes"] = img.size
    ab.Sandbox().close()  # zygote and probe warm

    def start(**kw: object) -> float:
        t0 = time.perf_counter()
        with ab.Sandbox(**kw) as sb:
            sb.run("true")
        return time.perf_counter() - t0

    plain, on_image = [], []
    for _ in range(args.n):   # interleaved, so machine noise hits both alike
        plain.append(start())
        on_image.append(start(image="bench"))
    out["plain_start_ms"] = round(_median_ms(plain), 1)
    out["image_start_ms"] = round(_median_ms(on_image), 1)
    out["image_over_plain"] = round(statistics.median(on_image) / statistics.median(plain), 2)

    # 50 sandboxes on one image: the image directory is the only copy of its files
    du_before = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(img.root) for f in fs)
    boxes = [ab.Sandbox(image="bench") for _ in range(50)]
    try:
        ok = sum(b.run("python3 -c 'import requests'").exit_code == 0 for b in boxes)
    finally:
        for b in boxes:
            b.close()
    du_after = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(img.root) for f in fs)
    out["fifty_sandboxes_import_ok"] = ok
    out["image_bytes_after_fifty"] = du_after - du_before + img.size

    # apt: a cold install, then the same in a new sandbox served by the shared cache
    if shutil.which("apt-get"):
        for label in ("apt_install_cold_s", "apt_install_cached_s"):
            with ab.Sandbox() as sb:
                t0 = time.perf_counter()
                r = sb.run("apt-get install -y -q sl >/dev/null 2>&1; command -v sl", timeout=300)
                out[label] = round(time.perf_counter() - t0, 2)
                out[label + "_ok"] = int(r.stdout.strip().endswith("/sl"))
    # pip: a package not in this machine's local wheel mirror, cold (downloaded), then in a new
    # sandbox once the host has stored it (served from the shared cache)
    from agentic_bash.packages.cache import wait_promotions
    for label in ("pip_install_cold_s", "pip_install_cached_s"):
        with ab.Sandbox() as sb:
            t0 = time.perf_counter()
            r = sb.run("pip install --no-deps cowsay==6.1 2>&1", timeout=300)
            out[label] = round(time.perf_counter() - t0, 2)
            out[label + "_downloads"] = r.stdout.count("Downloading ")
            out[label + "_cached"] = r.stdout.count("Using cached ")
        if label.endswith("cold_s"):
            t0 = time.perf_counter()
            wait_promotions(300)
            out["pip_host_store_s"] = round(time.perf_counter() - t0, 2)
    # npm: the same; a tarball fetch shows in npm's http log as "fetch GET 200 ….tgz"
    if shutil.which("npm"):
        for label in ("npm_install_cold_s", "npm_install_cached_s"):
            with ab.Sandbox() as sb:
                t0 = time.perf_counter()
                r = sb.run("mkdir -p /workspace/p && cd /workspace/p && npm install is-number@7.0.0 "
                           "--loglevel http --no-audit --no-fund 2>&1", timeout=300)
                out[label] = round(time.perf_counter() - t0, 2)
                out[label + "_tarball_gets"] = sum(
                    1 for ln in r.stdout.splitlines() if "fetch GET" in ln and ln.split()[5].endswith(".tgz"))
            if label.endswith("cold_s"):
                wait_promotions(300)
    shutil.rmtree(work, ignore_errors=True)
    width = max(len(k) for k in out)
    for k, v in out.items():
        print(f"{k:<{width}}  {v}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
