"""agentic_bash.tools: render cost of huge output, tool-layer overhead per call, MCP round trip.

Run: .venv/bin/python benchmarks/tools_bench.py [--json FILE] [--n 300]
Times are min / median over N (the machine is shared: read medians, not single runs).
"""

from __future__ import annotations

import argparse
import json
import pathlib
import statistics
import sys
import time
from typing import Any, Callable

from agentic_bash import Sandbox
from agentic_bash.result import Result
from agentic_bash.tools import Renderer, handle


def _timed(fn: Callable[[], Any], n: int) -> dict[str, float]:
    xs = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        xs.append(time.perf_counter() - t)
    xs.sort()
    return {"min_ms": xs[0] * 1e3, "median_ms": statistics.median(xs) * 1e3, "n": n}


def render_10mb(n: int) -> dict[str, Any]:
    data = b"".join(b"line %08d of the output\n" % i for i in range(420_000))
    r = Result(stdout_bytes=data, stderr_bytes=data[:1_000_000], cwd="/w")
    rr = Renderer()
    out = {"input_bytes": len(data) + 1_000_000, "rendered_bytes": len(rr.render(r).encode())}
    out.update(_timed(lambda: rr.render(r), n))
    return out


def tool_overhead(isolation: str, n: int) -> dict[str, Any]:
    with Sandbox(isolation=isolation) as sb:
        sb.run("true")
        run = _timed(lambda: sb.run("echo hi"), n)
        tool = _timed(lambda: handle(sb, "bash", '{"command": "echo hi"}'), n)
        write = _timed(lambda: handle(sb, "write_file", {"path": "f.txt", "content": "x" * 1000}), n)
        edit = _timed(lambda: (sb.write_file("e.txt", "a = 1\n" * 200 + "target\n"),
                               handle(sb, "edit_file", {"path": "e.txt", "old": "target", "new": "done"})), n)
    return {"run_echo": run, "handle_bash_echo": tool, "handle_write_file_1k": write,
            "write_plus_edit_file_1k": edit,
            "overhead_median_us": (tool["median_ms"] - run["median_ms"]) * 1e3}


def mcp_round_trip(isolation: str, n: int) -> dict[str, Any]:
    import anyio
    from mcp import ClientSession, StdioServerParameters, stdio_client

    cmd = pathlib.Path(sys.executable).parent / "agentic-bash"
    params = StdioServerParameters(command=str(cmd), args=["mcp", "-i", isolation])

    async def main() -> dict[str, Any]:
        t0 = time.perf_counter()
        async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
            await s.initialize()
            start = time.perf_counter() - t0
            xs = []
            for _ in range(n):
                t = time.perf_counter()
                await s.call_tool("bash", {"command": "echo hi"})
                xs.append(time.perf_counter() - t)
        xs.sort()
        return {"startup_ms": start * 1e3, "min_ms": xs[0] * 1e3, "median_ms": statistics.median(xs) * 1e3, "n": n}

    return anyio.run(main)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    ap.add_argument("--n", type=int, default=300)
    a = ap.parse_args()
    res: dict[str, Any] = {"render_10mb": render_10mb(max(a.n // 30, 5))}
    for level in ("virtual", "namespace"):
        res[f"tool_overhead_{level}"] = tool_overhead(level, a.n)
        res[f"mcp_round_trip_{level}"] = mcp_round_trip(level, a.n)
    print(json.dumps(res, indent=2))
    if a.json:
        pathlib.Path(a.json).write_text(json.dumps(res, indent=2) + "\n")


if __name__ == "__main__":
    main()
