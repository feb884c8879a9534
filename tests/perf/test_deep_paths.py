"""Deep directory trees stay tractable (path resolution was cubic in the depth)."""

from __future__ import annotations

import time

from agentic_bash import Sandbox


def test_mkdir_p_3000_nested_dirs() -> None:
    with Sandbox(isolation="virtual") as sb:
        deep = "/tmp/" + "/".join(["d"] * 3000)
        t0 = time.process_time()
        r = sb.run(f"mkdir -p {deep} && cd {deep} && echo ok > f && cat f")
        took = time.process_time() - t0
        assert r.exit_code == 0, r.stderr[:300]
        assert r.stdout == "ok\n"
        # loose bound: ~15 s of CPU on a loaded 2-core box; it ran past 300 s before
        assert took < 60, took


def test_mkdir_p_dotdot_after_created() -> None:
    with Sandbox(isolation="virtual") as sb:
        r = sb.run("cd /tmp && mkdir -p a/b/../b/c/./d && ls -d a/b/c/d && mkdir -pv x/y/../z")
        assert r.exit_code == 0, r.stderr
        assert r.stdout == ("a/b/c/d\nmkdir: created directory 'x'\nmkdir: created directory 'x/y'\n"
                            "mkdir: created directory 'x/y/../z'\n")  # GNU's output
