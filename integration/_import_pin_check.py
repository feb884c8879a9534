"""The runner's lazy imports after the workload broke or seeded its import paths (run as root or as the test user, zygote warm-up off); prints JSON."""

from __future__ import annotations

import io
import json
import os
import sys
import tarfile
import traceback

from agentic_bash import Limits, Sandbox

# modules the runner imports lazily or may (stdlib and ours' top-level names), planted in every
# import root the workload can write: each writes a marker into /workspace when imported
PLANT = sorted({n for n in sys.stdlib_module_names if not n.startswith("_")} |
               {"zstandard", "psutil", "regex", "pyseccomp", "greenlet"})
PLANTER = r"""
import os, struct, sys, importlib.util
names, roots = sys.argv[1].split(","), sys.argv[2].split(",")
src = "import os\nopen('/workspace/PWNED-' + __name__, 'w').close()\n"
out = []
for root in roots:
    try:
        os.makedirs(root, exist_ok=True)
        for n in names:
            with open(os.path.join(root, n + ".py"), "w") as f:
                f.write(src)
        out.append(root)
    except OSError:
        pass
# bytecode the runner would not check against its source (PEP 552, unchecked hash): under the
# pycache prefix the zygote was started with, if the workload can create it
code = compile(src, "planted", "exec")
import marshal
pyc = importlib.util.MAGIC_NUMBER + struct.pack("<I", 0b01) + b"\0" * 8 + marshal.dumps(code)
for prefix, pkg in zip(sys.argv[3].split(","), sys.argv[4].split(",")):
    d = prefix + pkg
    for sub in ("", "/shell", "/commands", "/vfs", "/isolation"):
        try:
            os.makedirs(d + sub, exist_ok=True)
            for n in ("unparse", "fileapi", "oci", "hashutils", "sortcmd", "layerscan"):
                tag = sys.implementation.cache_tag
                with open(f"{d}{sub}/{n}.{tag}.pyc", "wb") as f:
                    f.write(pyc)
            out.append(d + sub)
        except OSError:
            pass
print("planted:" + ",".join(out))
"""


def step(out: dict, name: str, fn) -> object:
    try:
        got = fn()
        out["steps"][name] = "ok"
        return got
    except Exception as e:  # noqa: BLE001 - every failure is reported, not raised
        out["steps"][name] = f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=4)}"
        return None


def main() -> None:
    import agentic_bash
    pkg = os.path.dirname(os.path.abspath(agentic_bash.__file__))
    roots = [os.path.dirname(pkg)] + [p for p in sys.path if p and os.path.isdir(p)]
    uid = os.geteuid()
    prefixes = [os.path.join(os.path.expanduser("~"), ".cache", "agentic-bash", f"pycache-{uid}"),
                f"/root/.cache/agentic-bash/pycache-{uid}"]
    out: dict = {"steps": {}, "root_dirs": roots}
    sb = Sandbox("namespace", limits=Limits(timeout=60, max_memory_bytes=512 << 20, max_processes=64))
    try:
        out["imports"] = sb._ex.observed.get("imports")
        sb.write_file("/workspace/planter.py", PLANTER)
        r = sb.run(f"/usr/bin/python3 /workspace/planter.py {','.join(PLANT)} {','.join(roots)} "
                   f"{','.join(prefixes)} {','.join([pkg] * len(prefixes))}")
        out["planted"] = r.stdout.strip()[len("planted:"):].split(",") if r.stdout else []
        out["plant_err"] = r.stderr[-2000:]
        # ... and every ancestor of the package the workload owns made untraversable
        r = sb.run("chmod 000 /tmp; chmod 000 \"$HOME\"; stat -c '%a' /tmp")
        out["chmod"] = r.stdout.strip()
        # the lazily imported paths, right after creation (no warm-up in the zygote)
        snap = step(out, "snapshot", lambda: sb.snapshot())
        step(out, "write_file", lambda: sb.write_file("/workspace/a.txt", "alpha\n"))
        out["read_file"] = step(out, "read_file", lambda: sb.read_file("/workspace/a.txt").decode())
        step(out, "list_files", lambda: [f.name for f in sb.list_files("/workspace")])
        step(out, "exists", lambda: sb.exists("/workspace/a.txt"))
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tf:
            info = tarfile.TarInfo("up/b.txt")
            info.size = 5
            tf.addfile(info, io.BytesIO(b"beta\n"))
        step(out, "upload_tar", lambda: sb.upload_tar(buf.getvalue(), "/workspace"))
        tar = step(out, "download_tar", lambda: sb.download_tar(path="/workspace"))
        out["download_names"] = sorted(tarfile.open(fileobj=io.BytesIO(tar)).getnames()) \
            if isinstance(tar, bytes) else None
        r = step(out, "run", lambda: sb.run(
            "f() { echo \"$1\"; }; declare -f f | head -1; printf '%q\\n' 'a b';"
            " echo hi | sha256sum | cut -c1-8; printf '3\\n1\\n2\\n' | sort -n | tr '\\n' ' ';"
            " echo; echo '{\"a\": 1}' | jq .a; seq 3 | awk '{s+=$1} END {print s}';"
            " echo x | od -c | head -1; sleep 0.2 & jobs; wait; echo done"))
        out["run"] = {"out": r.stdout, "err": r.stderr, "exit": r.exit_code,
                      "peak_memory": r.peak_memory} if r is not None else None
        step(out, "remove", lambda: sb.remove("/workspace/a.txt"))
        step(out, "state", lambda: sb.set_state(sb.get_state()))
        pwned = sb.run("ls /workspace | grep PWNED; true").stdout.split()
        if isinstance(snap, bytes):
            step(out, "restore", lambda: sb.restore(snap))

            def from_snapshot() -> str:
                sb2 = Sandbox.from_snapshot(snap)
                try:
                    return sb2.run("ls /workspace").stdout
                finally:
                    sb2.close()
            out["from_snapshot"] = step(out, "from_snapshot", from_snapshot)
        pwned += sb.run("ls /workspace | grep PWNED; true").stdout.split()
        out["pwned"] = pwned
        step(out, "reset", lambda: sb.reset())
        out["alive"] = sb.run("echo alive").stdout
    finally:
        sb.close()
    print("\n@@JSON@@" + json.dumps(out))


if __name__ == "__main__":
    main()
