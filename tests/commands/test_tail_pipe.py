"""tail -n K of a pipe (the chunk-holding path) vs GNU tail on the same bytes."""

from __future__ import annotations

import random
import subprocess

from agentic_bash import Sandbox


def test_tail_of_a_pipe_matches_gnu(tmp_path):
    """Inputs of many chunks with lines long and short, a chunk without any newline, no
    final newline; K from 0 to more than the input holds: `cat f | tail -n K` (a pipe,
    read in chunks) equals GNU tail on the file."""
    rnd = random.Random(1822)
    with Sandbox(isolation="virtual") as sb:
        for i in range(12):
            lines = []
            for _ in range(rnd.randint(0, 3000)):
                n = rnd.choice([0, 1, 5, 40, 200, 70000 if rnd.random() < 0.01 else 3])
                lines.append("x" * n + str(rnd.randint(0, 99)))
            data = ("\n".join(lines) + rnd.choice(["\n", ""])).encode()
            host = tmp_path / f"d{i}"
            host.write_bytes(data)
            sb.write_file("/tmp/d", data)
            for k in (0, 1, 2, 7, 100, 5000):
                want = subprocess.run(["tail", "-n", str(k), str(host)], capture_output=True, timeout=20).stdout
                got = sb.run(f"cat /tmp/d | tail -n {k}", timeout=60)
                assert got.exit_code == 0 and got.stdout.encode("utf-8", "surrogateescape") == want, (i, k)
