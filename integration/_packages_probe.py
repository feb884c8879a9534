"""Installs real packages inside a default Sandbox() and prints what it saw as JSON (run as root or the test user)."""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time

# a private cache and image store per probe (TMPDIR is the test's own)
os.environ["AGENTIC_BASH_CACHE"] = tempfile.mkdtemp(prefix="abcache-")
os.environ["AGENTIC_BASH_IMAGES"] = tempfile.mkdtemp(prefix="abimg-")

import agentic_bash as ab  # noqa: E402


def main() -> None:
    what = sys.argv[1]
    out: dict = {"uid": os.getuid()}
    if what == "registries":
        # an allowlist of the package registries: installs work, anything else is refused
        with ab.Sandbox(network="registries") as sb:
            out["level"] = sb.isolation_level
            r = sb.run("pip install --no-deps cowsay==6.1 2>&1 | tail -1; "
                       "apt-get install -y sl >/dev/null 2>&1; echo apt=$?; "
                       "curl -sS -m 10 -o /dev/null https://github.com/ 2>&1; echo curl=$?",
                       timeout=300)
            out["run"] = [r.stdout, r.stderr]
            out["violations"] = [str(v) for v in r.violations]
        print("\n@@JSON@@" + json.dumps(out))
        return
    with ab.Sandbox() as sb:
        out["level"] = sb.isolation_level
        if what == "apt":
            r = sb.run("apt-get install -y sl >/tmp/apt.log 2>&1; echo rc=$?; tail -3 /tmp/apt.log; "
                       "command -v sl; sl -h >/dev/null 2>&1 </dev/null; echo sl=$?", timeout=300)
            out["apt"] = [r.stdout, r.stderr, r.exit_code]
            out["installed"] = [p.to_json() for p in r.packages_installed]
            r = sb.run("apt-get install -y sl 2>&1 | tail -2", timeout=300)
            out["again"] = r.stdout
            out["manifest"] = [p.to_json() for p in sb.packages]
            snap = sb.snapshot()
            with ab.Sandbox.from_snapshot(snap) as sb2:
                r = sb2.run("command -v sl && echo found")
                out["restored"] = [r.stdout, [p.to_json() for p in sb2.packages]]
        elif what == "pip":
            r = sb.run("pip install -q termcolor 2>&1 | tail -3; python3 -c 'import termcolor; print(\"ok\")'",
                       timeout=300)
            out["pip"] = [r.stdout, r.stderr, r.exit_code]
            out["installed"] = [p.to_json() for p in r.packages_installed]
            snap = sb.snapshot()
            with ab.Sandbox.from_snapshot(snap) as sb2:
                r = sb2.run("python3 -c 'import termcolor; print(\"again\")'")
                out["restored"] = [r.stdout, [p.to_json() for p in sb2.packages]]
        elif what == "npm":
            r = sb.run("mkdir -p /workspace/p && cd /workspace/p && npm install --silent --no-audit "
                       "--no-fund is-number >/dev/null 2>&1; echo rc=$?; "
                       "node -e 'console.log(require(\"is-number\")(5))'", timeout=300)
            out["npm"] = [r.stdout, r.stderr, r.exit_code]
            out["installed"] = [p.to_json() for p in r.packages_installed]
        elif what == "cache":
            r = sb.run("apt-get install -y sl 2>&1 | grep -c '^Get:'", timeout=300)
            out["first_gets"] = r.stdout.strip()
            cache = os.environ["AGENTIC_BASH_CACHE"]
            out["cached"] = sorted(os.listdir(os.path.join(cache, "apt")))
            # a hostile sandbox plants a trojan under a real package's archive name and
            # claims it installed it: the host checks its own index and keeps nothing
            from agentic_bash.packages.apt import archive_dirs
            from agentic_bash.packages.cache import promote
            from agentic_bash.packages.manifest import PackageInfo
            r = sb.run("apt-cache show --no-all-versions cowsay | sed -n 's/^Version: //p'")
            ver = r.stdout.strip()
            d = [a for a in archive_dirs(sb.info.home) if sb.run(f"test -d {a}").exit_code == 0][0]
            sb.write_file(f"{d}/cowsay_{ver}_all.deb", b"#!/bin/sh\necho pwned\n")
            out["poison_added"] = promote(sb._ex, [PackageInfo("cowsay", ver, "apt")],
                                          apt_archives=[d])
            out["cached_after_poison"] = sorted(os.listdir(os.path.join(cache, "apt")))
            with ab.Sandbox() as sb2:
                r = sb2.run("apt-get install -y sl 2>&1 | grep -c '^Get:'; command -v sl", timeout=300)
                out["second"] = r.stdout
        elif what == "pipcache":
            # cowsay: small, pure Python, and not in this machine's local wheel mirror, so the
            # first install really downloads it from PyPI
            from agentic_bash.packages.cache import PIP_CACHE_PATH, wait_promotions
            cmd = ("pip install --no-deps cowsay==6.1 2>&1 | grep -E 'cowsay-6.1|Successfully'; "
                   "python3 -c 'import cowsay; print(\"imported\")'")
            r = sb.run(cmd, timeout=300)
            out["first"] = r.stdout
            t = time.monotonic()
            out["promoted"] = wait_promotions(300)
            out["promote_s"] = time.monotonic() - t
            cache = os.environ["AGENTIC_BASH_CACHE"]
            out["host_files"] = sorted(os.path.relpath(os.path.join(dp, f), cache)
                                       for dp, _, fs in os.walk(os.path.join(cache, "pip"))
                                       for f in fs)
            with ab.Sandbox() as sb2:
                r = sb2.run(cmd, timeout=300)
                out["second"] = r.stdout
                out["env"] = sb2.run("echo $PIP_CACHE_DIR").stdout
                # the sandbox may write its own pip cache (its layer), never the shared one
                r = sb2.run(f"echo planted > {PIP_CACHE_PATH}/planted && echo wrote; "
                            "echo x > /.agentic-bash/cache/pip/planted2 2>/dev/null "
                            "&& echo shared-written || echo shared-refused")
                out["plant"] = r.stdout
            with ab.Sandbox() as sb3:
                out["third_sees"] = sb3.run(f"ls {PIP_CACHE_PATH}").stdout
            out["host_after"] = sorted(os.listdir(os.path.join(cache, "pip")))
            # npm: the same through npm's content-addressed cache
            npm = ("mkdir -p /workspace/p && cd /workspace/p && npm install is-number@7.0.0 "
                   "--loglevel http --no-audit --no-fund 2>&1 | grep -E 'is-number-7.0.0.tgz|added'")
            if sb.run("command -v npm").exit_code == 0:
                out["npm_first"] = sb.run(npm, timeout=300).stdout
                out["npm_promoted"] = wait_promotions(300)
                with ab.Sandbox() as sb4:
                    out["npm_second"] = sb4.run(npm, timeout=300).stdout
        elif what == "image":
            from agentic_bash.packages.images import build_image
            t = time.monotonic()
            img = build_image("tc", "pip install -q termcolor && echo from-image > /workspace/marker")
            out["build_s"] = time.monotonic() - t
            out["image_packages"] = [p.to_json() for p in img.packages]
            before = sum(os.path.getsize(os.path.join(dp, f)) for dp, _, fs in os.walk(img.root) for f in fs)
            boxes = [ab.Sandbox(image="tc") for _ in range(5)]
            try:
                outs = [b.run("python3 -c 'import termcolor; print(\"tc\")'; cat /workspace/marker; "
                              "echo mine > /workspace/marker").stdout for b in boxes]
                out["image_runs"] = outs
                out["image_marker_after"] = boxes[0].run("cat /workspace/marker").stdout
                out["image_sb_packages"] = [p.to_json() for p in boxes[0].packages]
            finally:
                for b in boxes:
                    b.close()
            after = sum(os.path.getsize(os.path.join(dp, f)) for dp, _, fs in os.walk(img.root) for f in fs)
            out["image_bytes"] = [before, after]
    print("\n@@JSON@@" + json.dumps(out))


if __name__ == "__main__":
    main()
