"""awk sum over 100k lines: our in-process awk vs the machine's awk (mawk)."""

from __future__ import annotations

import io
import resource
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agentic_bash.commands import load_all  # noqa: E402
from agentic_bash.commands.base import CommandContext  # noqa: E402
from agentic_bash.limits import Budget, Limits  # noqa: E402
from agentic_bash.vfs.memory import MemoryFS  # noqa: E402

N = 100_000
PROGRAMS = [
    ["-F,", "{s+=$3} END {print s}"],
    ["{n[$1]++} END {for (k in n) c++; print c}"],
    ["-F,", "$2 > 500 {c++} END {print c+0}"],
    ["{print $2, $1}"],
]


def main() -> None:
    data = "".join(f"k{i % 97},{i % 1000},{i % 13}.5\n" for i in range(N)).encode()
    fs = MemoryFS()
    fs.mkdir("/w")
    with fs.open("/w/data.csv", "wb") as f:
        f.write(data)
    Path("/tmp/awk_bench_data.csv").write_bytes(data)
    awk = load_all()["awk"].fn
    for prog in PROGRAMS:
        out = io.BytesIO()
        ctx = CommandContext(fs=fs, cwd="/w", env={"LANG": "C.UTF-8"}, stdin=io.BytesIO(), stdout=out,
                             stderr=io.BytesIO(), budget=Budget(Limits()), name="awk")
        t = time.perf_counter()
        c = time.process_time()
        awk(ctx, ["awk", *prog, "data.csv"])
        ours = time.perf_counter() - t
        ours_cpu = time.process_time() - c
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        real = subprocess.run(["awk", *prog, "/tmp/awk_bench_data.csv"], capture_output=True)
        theirs = time.perf_counter() - t
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        theirs_cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
        same = "same" if real.stdout == out.getvalue() else "DIFFERENT"
        print(f"{' '.join(prog):45s} ours {ours * 1000:7.1f} ms ({ours_cpu * 1000:5.0f} cpu)   "
              f"awk {theirs * 1000:6.1f} ms ({theirs_cpu * 1000:4.0f} cpu)   {same}")


if __name__ == "__main__":
    main()
