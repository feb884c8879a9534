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
    b = fresh()
    b.execute_sync("echo warm")
    out["echo_per_call"] = _cpu(lambda: b.execute_sync("echo hello"), 2000)
    out["echo_distinct_per_call"] = _cpu(_distinct(b.execute_sync), 2000)
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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", help="run agentic-bash from this tree")
    ap.add_argument("--only", default="ours,bash,bashkit")
    ap.add_argument("--out")
    a = ap.parse_args()
    res: dict[str, dict] = {}
    for who in a.only.split(","):
        res[who] = {"ours": lambda: bench_ours(a.root), "bash": bench_bash, "bashkit": bench_bashkit}[who]()
    cases = sorted({k for v in res.values() for k in v})
    print(f"{'case (CPU s/iter)':24}" + "".join(f"{w:>14}" for w in res))
    for c in cases:
        row = ""
        for w in res:
            v = res[w].get(c)
            row += f"{v:14.6f}" if isinstance(v, float) else f"{'-':>14}"
        print(f"{c:24}{row}")
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"unit": "CPU seconds per iteration", "root": a.root, **res}, f, indent=1)


if __name__ == "__main__":
    main()
