"""CPU-time benchmarks (loaded machine friendly): agentic-bash vs real bash vs bashkit, one run.

Usage: .venv/bin/python benchmarks/cpu_bench.py [--root TREE] [--out FILE.json]

``--root`` runs agentic-bash from another checkout (e.g. a ``git archive`` of an older commit)
so before/after numbers come from one run. Ours and bashkit are measured with
``time.process_time`` (in-process, threads included); bash with the children's user+sys CPU
from ``getrusage(RUSAGE_CHILDREN)`` (per call: the warm bash's /proc ticks). Numbers are CPU
seconds per iteration (median of the samples).

Per-call cases: ``echo_per_call`` repeats one script (the parse cache hits),
``echo_distinct_per_call`` runs a new ``echo hello N`` each time (what an agent's commands
cost), ``pipe_per_call`` a two-stage pipeline (a stage thread here, two forks in bash).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

TEN_MB = 10 * 1024 * 1024
LOOP = "x=0; for i in $(seq 1 10000); do x=$((x+i)); done; echo $x"
WRITES = "cd /tmp/w && for i in $(seq 1 1000); do echo $i > f$i; done; ls | wc -l"
DEEP = "mkdir -p /tmp/" + "/".join(["d"] * 1000)


def _cpu(fn, n: int = 1, reps: int = 3) -> float:
    samples = []
    for _ in range(reps):
        t0 = time.process_time()
        for _ in range(n):
            fn()
        samples.append((time.process_time() - t0) / n)
    return statistics.median(samples)


def _distinct(run):  # noqa: ANN001, ANN202
    """A call that runs a script not seen before (`echo hello N`): what an agent's commands
    cost, where the parse cache cannot help."""
    count = iter(range(10**9))
    return lambda: run(f"echo hello {next(count)}")


def bench_ours(root: str | None) -> dict[str, float]:
    if root:
        sys.path.insert(0, root)
    from agentic_bash import Sandbox

    out: dict[str, float] = {}
    sb = Sandbox(isolation="virtual")
    sb.run("echo warm")
    out["echo_per_call"] = _cpu(lambda: sb.run("echo hello"), 2000)
    out["echo_distinct_per_call"] = _cpu(_distinct(sb.run), 2000)
    out["pipe_per_call"] = _cpu(lambda: sb.run("echo hi | cat"), 200)
    assert sb.run(LOOP).stdout == "50005000\n"
    out["loop_10k"] = _cpu(lambda: sb.run(LOOP))

    def writes() -> None:
        sb.run("rm -rf /tmp/w; mkdir -p /tmp/w")
        assert sb.run(WRITES).stdout.strip() == "1000"
    out["write_1000_ls"] = _cpu(writes)
    sb.write_file("/tmp/big", b"x" * TEN_MB)
    assert sb.run("cat /tmp/big | wc -c").stdout.strip() == str(TEN_MB)
    out["cat_10mb_wc"] = _cpu(lambda: sb.run("cat /tmp/big | wc -c"))
    out["wc_10mb"] = _cpu(lambda: sb.run("wc -c < /tmp/big"))

    def deep() -> None:
        sb.run("rm -rf /tmp/d")
        assert sb.run(DEEP).exit_code == 0
    out["mkdir_p_1000_deep"] = _cpu(deep, reps=1)
    sb.close()

    def construct() -> None:
        s = Sandbox(isolation="virtual")
        s.run(":")
        s.close()
    out["construct_first_cmd"] = _cpu(construct, 20)
    t0 = time.process_time()
    with Sandbox(isolation="virtual") as s:
        s.run("while :; do :; done", timeout=0.2)
    out["timeout_0.2s_cpu"] = time.process_time() - t0
    return out


def _bash_cpu(script: str, cwd: str, reps: int = 3) -> float:
    samples = []
    for _ in range(reps):
        a = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(["bash", "-c", script], cwd=cwd, capture_output=True, check=True)
        b = resource.getrusage(resource.RUSAGE_CHILDREN)
        samples.append((b.ru_utime - a.ru_utime) + (b.ru_stime - a.ru_stime))
    return statistics.median(samples)


def bench_bash() -> dict[str, float]:
    out: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        big = os.path.join(tmp, "big")
        with open(big, "wb") as f:
            f.write(b"x" * TEN_MB)
        # per call: one warm bash; its CPU is read from /proc (it is not our child until wait)
        p = subprocess.Popen(["bash"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=tmp)
        assert p.stdin and p.stdout

        def proc_cpu() -> float:  # the warm bash's own CPU plus its waited-for children's
            f = open(f"/proc/{p.pid}/stat").read().rsplit(")", 1)[1].split()
            return sum(int(x) for x in f[11:15]) / os.sysconf("SC_CLK_TCK")

        def per_call(line: bytes, n: int) -> float:
            c0 = proc_cpu()
            for i in range(n):
                p.stdin.write(line.replace(b"N", str(i).encode()) + b"; echo __END__\n")
                p.stdin.flush()
                while p.stdout.readline() != b"__END__\n":
                    pass
            return (proc_cpu() - c0) / n
        out["echo_per_call"] = per_call(b"echo hello", 2000)
        out["echo_distinct_per_call"] = per_call(b"echo hello N", 2000)
        out["pipe_per_call"] = per_call(b"echo hi | cat", 200)
        p.stdin.close()
        p.wait()
        out["loop_10k"] = _bash_cpu(LOOP, tmp)
        w = WRITES.replace("/tmp/w", os.path.join(tmp, "w"))
        out["write_1000_ls"] = _bash_cpu(f"rm -rf {tmp}/w; mkdir -p {tmp}/w; " + w, tmp)
        out["cat_10mb_wc"] = _bash_cpu(f"cat {big} | wc -c", tmp)
        out["wc_10mb"] = _bash_cpu(f"wc -c < {big}", tmp)
        out["mkdir_p_1000_deep"] = _bash_cpu(f"rm -rf {tmp}/d; " + DEEP.replace("/tmp/", tmp + "/"), tmp, 1)
        out["construct_first_cmd"] = _bash_cpu(":", tmp, 20)
    return out


def bench_bashkit() -> dict[str, float | str]:
    try:
        import bashkit  # type: ignore[import-not-found]
    except ImportError:
        return {"error": "bashkit not installed"}
    out: dict[str, float | str] = {}

    def fresh() -> object:  # bashkit's budgets are per instance: one per case, like peers.py
        return bashkit.Bash(max_commands=10**7, max_loop_iterations=10**7)
    # bashkit 0.20.1 refuses a session's 1001st exec() call ("session exec() call limit
    # exceeded"): a fresh instance per case and at most 3 x 300 calls on it (before, the
    # later cases timed that refusal)
    b = fresh()
    b.execute_sync("echo warm")
    out["echo_per_call"] = _cpu(lambda: b.execute_sync("echo hello"), 300)
    b = fresh()
    out["echo_distinct_per_call"] = _cpu(_distinct(b.execute_sync), 300)
    b = fresh()
    out["pipe_per_call"] = _cpu(lambda: b.execute_sync("echo hi | cat"), 200)
    b = fresh()
    assert b.execute_sync(LOOP).stdout == "50005000\n"
    out["loop_10k"] = _cpu(lambda: b.execute_sync(LOOP))
    b = fresh()

    def writes() -> None:
        b.execute_sync("rm -rf /tmp/w; mkdir -p /tmp/w")
        b.execute_sync(WRITES)
    out["write_1000_ls"] = _cpu(writes)
    b = fresh()
    b.write_file("/tmp/big1", "x" * (TEN_MB // 2))
    b.write_file("/tmp/big2", "x" * (TEN_MB // 2))
    assert b.execute_sync("cat /tmp/big1 /tmp/big2 | wc -c").stdout.strip() == str(TEN_MB)
    out["cat_10mb_wc"] = _cpu(lambda: b.execute_sync("cat /tmp/big1 /tmp/big2 | wc -c"))

    def construct() -> None:
        bashkit.Bash().execute_sync(":")
    out["construct_first_cmd"] = _cpu(construct, 20)
    return out


# ---------------------------------------------------------------------------- issue 18's table
# (case, script; N in a per-call script becomes a new number each call so no parse cache hits)
PER_CALL = [
    ("pipe: echo hi | cat", "echo hi | cat"),
    ("new printf | grep -c a", "printf 'aN\\nb\\n' | grep -c a"),
    ("new if", "if [ N -gt 3 ]; then echo y; else echo n; fi"),
    ("new for", "for i in 1 2 N; do echo $i; done"),
    ("new while", "i=0; while [ $i -lt 3 ]; do i=$((i+1)); done; echo N"),
    ("new case", "case xN in x1) echo one;; *) echo other;; esac"),
    ("new 3-stage pipeline", "echo N | tr 0-9 a-j | wc -c"),
]
LINES = 200_000
DATA = "/tmp/b18/d.txt"
TREE = "/tmp/b18/tree"
BULK = [
    # case, our/bashkit script, bash+GNU script (mawk for awk), expected stdout
    ("awk sum $2 (200k lines)", "awk '{s+=$2} END{print s}' D", "mawk '{s+=$2} END{print s}' D"),
    ("awk regex filter (200k)", "awk '/7 k/ {c++} END{print c+0}' D", "mawk '/7 k/ {c++} END{print c+0}' D"),
    ("awk print $3,$1 (200k)", "awk '{print $3, $1}' D | tail -1", "mawk '{print $3, $1}' D | tail -1"),
    ("sort -k3 | tail -1 (200k)", "sort -k3 D | tail -1", None),
    ("sort | uniq -c | wc -l", "sort D | uniq -c | wc -l", None),
    ("cut -d' ' -f2 | tail -1", "cut -d' ' -f2 D | tail -1", None),
    ("wc -l (200k)", "wc -l < D", None),
    ("grep -c (200k)", "grep -c 'k1' D", None),
    ("sed s/// | tail -1 (200k)", "sed 's/k/K/' D | tail -1", None),
    ("grep -r over 1000 files | wc -l", "grep -r needle T | wc -l", None),
    ("cat 10 MB | wc -c", "cat B | wc -c", None),
]


def _data() -> str:
    return "".join(f"{i * 7919 % 100003} {i % 1000} k{i % 97}\n" for i in range(LINES))


def _tree_files() -> dict[str, str]:
    return {f"d{i % 10}/f{i}.txt": ("needle\n" if i % 7 == 0 else "hay\n") * 3 for i in range(1000)}


def _per_call_cpu(run, script: str, n: int) -> float:  # noqa: ANN001
    count = iter(range(10**9))
    for _ in range(20):
        # warm: the first use of a command imports its module and compiles its tables once
        # per process (tens of ms for grep), which is not a per-call cost
        run(script.replace("N", str(10**8 + next(count))))
    return _cpu(lambda: run(script.replace("N", str(next(count)))), n)


def table_ours(root: str | None, n: int) -> dict[str, Any]:
    if root:
        sys.path.insert(0, root)
    from agentic_bash import Sandbox
    out: dict[str, Any] = {}
    sb = Sandbox(isolation="virtual")
    sb.run("echo warm | cat")
    for name, script in PER_CALL:
        out[name] = _per_call_cpu(sb.run, script, n)
    sb.write_file(DATA, _data().encode())
    for rel, body in _tree_files().items():
        sb.write_file(f"{TREE}/{rel}", body.encode())
    sb.write_file("/tmp/b18/big", b"x" * TEN_MB)
    for name, script, _ in BULK:
        sc = script.replace(" D", " " + DATA).replace(" T", " " + TREE).replace(" B", " /tmp/b18/big")
        r = sb.run(sc)
        out[name] = _cpu(lambda: sb.run(sc), 1, 3)
        out[name + " :out"] = r.stdout
    sb.close()
    out.update(_snapshots_ours())
    return out


def _snapshots_ours() -> dict[str, Any]:
    from agentic_bash import Sandbox
    out: dict[str, Any] = {}
    sb = Sandbox(isolation="virtual")
    for i in range(1000):
        sb.write_file(f"/workspace/src/f{i}.txt", f"file {i}\n" * 4)
    # (the default form: tar+zstd since session 10, a plain tar before; --root runs old trees)
    out["snapshot 1000 files"] = _wall(sb.snapshot)
    data = sb.snapshot()
    out["snapshot size (bytes)"] = float(len(data))
    out["restore (from_snapshot)"] = _wall(lambda: Sandbox.from_snapshot(data, isolation="virtual").close())
    for comp in ("tar", "gzip", "zstd"):
        try:
            cdata = sb.snapshot(compression=None if comp == "tar" else comp)
        except Exception as e:  # noqa: BLE001 - zstandard missing: say so in the table
            out[f"snapshot size {comp} (bytes)"] = str(e)[:11]
            continue
        out[f"snapshot {comp}"] = _wall(lambda c=comp: sb.snapshot(compression=None if c == "tar" else c))
        out[f"snapshot size {comp} (bytes)"] = float(len(cdata))
        out[f"restore {comp}"] = _wall(lambda d=cdata: Sandbox.from_snapshot(d, isolation="virtual").close())
    try:
        sb.write_file("/workspace/src/f7.txt", b"changed\n")
        inc = sb.snapshot(parent=data)
        out["incremental after 1 change (bytes)"] = float(len(inc))
    except TypeError:
        out["incremental after 1 change (bytes)"] = "no parent="
    sb.close()
    return out


def _wall(fn, reps: int = 10) -> float:  # noqa: ANN001
    """The snapshot rows: CPU seconds of the whole process (every thread: bashkit's too),
    min of 10. Wall time moved 3x between runs a minute apart on the loaded machine (the
    process preempted in the middle), for both sides alike."""
    ts = []
    for _ in range(reps):
        t0 = time.process_time()
        fn()
        ts.append(time.process_time() - t0)
    return min(ts)


def table_bashkit(n: int) -> dict[str, Any]:
    try:
        import bashkit  # type: ignore[import-not-found]
    except ImportError:
        return {"error": "bashkit not installed"}
    out: dict[str, Any] = {}

    def fresh():  # noqa: ANN202 - bashkit 0.20.1 refuses a session's 1001st exec() call
        b = bashkit.Bash(max_commands=10**8, max_loop_iterations=10**8)
        b.execute_sync("echo warm | cat")
        return b
    for name, script in PER_CALL:
        b = fresh()
        out[name] = _per_call_cpu(b.execute_sync, script, min(n, 300))
    b = fresh()
    b.execute_sync("mkdir -p /tmp/b18 " + " ".join(f"{TREE}/d{i}" for i in range(10)) + " /workspace/src")
    b.write_file(DATA, _data())
    for rel, body in _tree_files().items():
        b.write_file(f"{TREE}/{rel}", body)
    b.write_file("/tmp/b18/big1", "x" * (TEN_MB // 2))
    b.write_file("/tmp/b18/big2", "x" * (TEN_MB // 2))
    for name, script, _ in BULK:
        sc = (script.replace(" D", " " + DATA).replace(" T", " " + TREE)
              .replace("cat B", "cat /tmp/b18/big1 /tmp/b18/big2"))
        r = b.execute_sync(sc)
        out[name] = _cpu(lambda: b.execute_sync(sc), 1, 3)
        out[name + " :out"] = r.stdout
    b = bashkit.Bash()
    b.execute_sync("mkdir -p /workspace/src")
    for i in range(1000):
        b.write_file(f"/workspace/src/f{i}.txt", f"file {i}\n" * 4)
    out["snapshot 1000 files"] = _wall(b.snapshot)
    data = b.snapshot()
    out["snapshot size (bytes)"] = float(len(data))
    out["restore (from_snapshot)"] = _wall(lambda: bashkit.Bash.from_snapshot(data))
    return out


def table_bash(n: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    env = {"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8", "HOME": "/tmp"}
    with tempfile.TemporaryDirectory() as tmp:
        p = subprocess.Popen(["bash"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=tmp, env=env)
        assert p.stdin and p.stdout

        def proc_cpu() -> float:
            f = open(f"/proc/{p.pid}/stat").read().rsplit(")", 1)[1].split()
            return sum(int(x) for x in f[11:15]) / os.sysconf("SC_CLK_TCK")
        for name, script in PER_CALL:
            c0 = proc_cpu()
            for i in range(n):
                p.stdin.write(script.replace("N", str(i)).encode() + b"; echo __END__\n")
                p.stdin.flush()
                while p.stdout.readline() != b"__END__\n":
                    pass
            out[name] = (proc_cpu() - c0) / n
        p.stdin.close()
        p.wait()
        data = os.path.join(tmp, "d.txt")
        with open(data, "w") as f:
            f.write(_data())
        tree = os.path.join(tmp, "tree")
        for rel, body in _tree_files().items():
            os.makedirs(os.path.dirname(os.path.join(tree, rel)), exist_ok=True)
            with open(os.path.join(tree, rel), "w") as f:
                f.write(body)
        big = os.path.join(tmp, "big")
        with open(big, "wb") as f:
            f.write(b"x" * TEN_MB)
        base = _bash_cpu(":", tmp, 5)  # bash's own start-up, taken off each figure
        for name, script, gnu in BULK:
            sc = (gnu or script).replace(" D", " " + data).replace(" T", " " + tree).replace(" B", " " + big)
            r = subprocess.run(["bash", "-c", sc], cwd=tmp, capture_output=True, env=env)
            out[name] = max(0.0, _bash_cpu(sc, tmp, 3) - base)
            out[name + " :out"] = r.stdout.decode()
    return out


def issue18_table(root: str | None, n: int, only: list[str]) -> dict[str, dict[str, Any]]:
    os.environ["LC_ALL"] = "C.UTF-8"
    res: dict[str, dict[str, Any]] = {}
    if "ours" in only:
        res["ours"] = table_ours(root, n)
    if "bashkit" in only:
        res["bashkit"] = table_bashkit(n)
    if "bash" in only:
        res["bash+GNU"] = table_bash(n)
    names = [c for c, _ in PER_CALL] + [c for c, _, _ in BULK] + [
        "snapshot 1000 files", "snapshot size (bytes)", "restore (from_snapshot)",
        "snapshot tar", "snapshot size tar (bytes)", "restore tar",
        "snapshot gzip", "snapshot size gzip (bytes)", "restore gzip",
        "snapshot zstd", "snapshot size zstd (bytes)", "restore zstd",
        "incremental after 1 change (bytes)"]
    cols = list(res)
    print("\nissue 18 (virtual mode, LC_ALL=C.UTF-8; CPU per call / per run, snapshots CPU min of 10)")
    print(f"{'case':36}" + "".join(f"{c:>12}" for c in cols)
          + "".join(f"{'÷' + c:>12}" for c in cols if c != "ours"))
    for name in names:
        row = f"{name:36}"
        o = res.get("ours", {}).get(name)
        for c in cols:
            row += f"{_fmt(res[c].get(name)):>12}"
        for c in cols:
            if c == "ours":
                continue
            v = res[c].get(name)
            ok = isinstance(o, float) and isinstance(v, float) and v > 0
            mark = ""
            if ok and name + " :out" in res[c] and res[c][name + " :out"] != res["ours"].get(name + " :out"):
                mark = "≠"  # the outputs differ (bashkit's tools are not GNU's)
            row += f"{(f'{o / v:.2f}x' if ok else '-') + mark:>12}"
        print(row)
    return res


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        if v >= 1000:
            return f"{v / 1024:.1f} KiB"
        return f"{v * 1e6:.1f}us" if v < 1e-3 else f"{v * 1e3:.2f}ms"
    return "-" if v is None else str(v)[:11]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", help="run agentic-bash from this tree")
    ap.add_argument("--only", default="ours,bash,bashkit")
    ap.add_argument("--table-only", action="store_true", help="only issue 18's table")
    ap.add_argument("--calls", type=int, default=300, help="per-call iterations (x3 samples)")
    ap.add_argument("--out")
    a = ap.parse_args()
    res: dict[str, dict] = {}
    only = a.only.split(",")
    if not a.table_only:
        for who in only:
            res[who] = {"ours": lambda: bench_ours(a.root), "bash": bench_bash, "bashkit": bench_bashkit}[who]()
        cases = sorted({k for v in res.values() for k in v})
        print(f"{'case (CPU s/iter)':24}" + "".join(f"{w:>14}" for w in res))
        for c in cases:
            row = ""
            for w in res:
                v = res[w].get(c)
                row += f"{v:14.6f}" if isinstance(v, float) else f"{'-':>14}"
            print(f"{c:24}{row}")
    res["issue18"] = issue18_table(a.root, a.calls, only)
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"unit": "CPU seconds per iteration", "root": a.root, **res}, f, indent=1)


if __name__ == "__main__":
    main()
