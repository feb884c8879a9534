"""grep -r over 1000 files and sed s///g over 10 MB: our in-process tools vs GNU grep/sed."""

from __future__ import annotations

import io
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agentic_bash.commands import load_all  # noqa: E402
from agentic_bash.commands.base import CommandContext  # noqa: E402
from agentic_bash.limits import Budget, Limits  # noqa: E402
from agentic_bash.vfs.memory import MemoryFS  # noqa: E402

WORDS = ("alpha beta gamma delta epsilon foo bar baz quux lorem ipsum dolor sit amet "
         "return value self def class import TODO FIXME print").split()


def _ours(fs: MemoryFS, argv: list[str]) -> tuple[float, bytes]:
    reg = load_all()
    out = io.BytesIO()
    ctx = CommandContext(fs=fs, cwd="/w", env={"LANG": "C.UTF-8"}, stdin=io.BytesIO(), stdout=out,
                         stderr=io.BytesIO(), budget=Budget(Limits()), name=argv[0])
    t = time.perf_counter()
    reg[argv[0]].fn(ctx, argv)
    return time.perf_counter() - t, out.getvalue()


def _real(root: str, argv: list[str]) -> tuple[float, bytes]:
    t = time.perf_counter()
    p = subprocess.run(argv, capture_output=True, cwd=root, env={"LANG": "C.UTF-8", "PATH": "/usr/bin:/bin"})
    return time.perf_counter() - t, p.stdout


def _norm(b: bytes) -> list[bytes]:
    return sorted(b.split(b"\n"))


def main() -> None:
    rng = random.Random(7)
    fs = MemoryFS()
    fs.mkdir("/w")
    with tempfile.TemporaryDirectory() as root:
        # 1000 files of ~40 lines in 20 directories
        fs.mkdir("/w/tree")
        os.mkdir(f"{root}/tree")
        for d in range(20):
            fs.mkdir(f"/w/tree/d{d}")
            os.mkdir(f"{root}/tree/d{d}")
            for f in range(50):
                lines = "".join(" ".join(rng.choice(WORDS) for _ in range(8)) + "\n" for _ in range(40))
                data = lines.encode()
                with fs.open(f"/w/tree/d{d}/f{f}.py", "wb") as fh:
                    fh.write(data)
                Path(f"{root}/tree/d{d}/f{f}.py").write_bytes(data)
        # 10 MB file
        line = " ".join(rng.choice(WORDS) for _ in range(10)) + "\n"
        big = (line * (10 * 1024 * 1024 // len(line) + 1)).encode()
        with fs.open("/w/big.txt", "wb") as fh:
            fh.write(big)
        Path(f"{root}/big.txt").write_bytes(big)
        cases = [
            (["grep", "-r", "TODO", "tree"], True),
            (["grep", "-rn", "foo.*bar", "tree"], True),
            (["grep", "-rl", "FIXME", "tree"], True),
            (["grep", "-rc", "-i", "todo", "tree"], True),
            (["grep", "-c", "foo", "big.txt"], False),
            (["grep", "-v", "foo", "big.txt"], False),
            (["sed", "s/foo/FOO/g", "big.txt"], False),
            (["sed", "-E", "s/(alpha|beta) ([a-z]+)/\\2 \\1/g", "big.txt"], False),
            (["sed", "-n", "/TODO/p", "big.txt"], False),
        ]
        print(f"grep tree: 1000 files, {sum(len(Path(root, 'tree', f'd{d}', f'f{f}.py').read_bytes()) for d in range(20) for f in range(50)) // 1024} KiB; big.txt: {len(big) / 1e6:.1f} MB")
        for argv, unordered in cases:
            to, oo = _ours(fs, argv)
            tr, ro = _real(root, argv)
            same = (_norm(oo) == _norm(ro)) if unordered else (oo == ro)
            ratio = to / tr if tr else float("inf")
            print(f"{' '.join(argv):55s} ours {to * 1000:8.1f} ms   GNU {tr * 1000:7.1f} ms   x{ratio:5.1f}  {'same' if same else 'DIFFERENT'}")


if __name__ == "__main__":
    main()
