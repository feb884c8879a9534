"""Operations for the session-integrity property: each call checks it got its own output."""

# Every run prints a token no other call prints, so a result that belongs to another call
# (the failure issue 19 describes: one call behind after an interrupt) is caught by the
# call that receives it. Used by test_integrity_kernel.py through hypothesis (as root,
# in-process) and as a script with seeded random sequences (as the unprivileged user).

from __future__ import annotations

import asyncio
import itertools
import json
import os
import random
import shutil
import signal
import sys
import tempfile
import threading
import time
import warnings
from typing import Any

OPS = ("echo", "stream", "bad", "sigint", "timeout", "thread", "cancel", "callback", "custom")
_n = itertools.count()


def _token(kind: str) -> str:
    return f"{kind}{os.getpid()}x{next(_n)}"


def _tok(ctx: Any, argv: list[str]) -> int:
    ctx.stdout.write(ctx.stdin.read())
    return 0


class Session:
    """A Sandbox plus the calls still running on other threads (checked at the end)."""

    def __init__(self, level: str) -> None:
        from agentic_bash import Limits, Sandbox
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.sb = Sandbox(level, limits=Limits(timeout=20))
        self.tmp: str | None = None
        if level == "none":   # the none level runs on the host: a directory of its own
            self.tmp = tempfile.mkdtemp(prefix="agb-prop-")
            self.sb.run(f"cd {self.tmp}")
        self.sb.register_command("tok", _tok)
        self.level = level
        self.threads: list[tuple[threading.Thread, dict[str, Any], str]] = []
        self.log: list[str] = []

    def close(self) -> None:
        try:
            self.settle()
            self.sb.close()
        finally:
            if self.tmp is not None:
                shutil.rmtree(self.tmp, ignore_errors=True)

    def settle(self) -> None:
        for t, box, tok in self.threads:
            t.join(30)
            assert not t.is_alive(), "a call on a thread never returned"
            r = box.get("r")
            assert r is not None, f"thread call failed: {box.get('e')!r}"
            assert r.stdout == f"{tok}\n", (tok, r)
        self.threads.clear()

    def own(self, r: Any, tok: str) -> None:
        assert (r.stdout, r.stderr, r.exit_code) == (f"{tok}\n", "", 0), (tok, r, self.log)

    # -- the operations ------------------------------------------------------------------
    def op(self, name: str, x: float) -> None:
        self.log.append(f"{name}({x:.2f})")
        getattr(self, "op_" + name)(x)

    def op_echo(self, x: float) -> None:
        tok = _token("E")
        self.own(self.sb.run(f"echo {tok}"), tok)

    def op_custom(self, x: float) -> None:
        """A custom command: its function runs in this process (over the channel when the
        interpreter is in a sandbox), fed through a pipe."""
        tok = _token("U")
        self.own(self.sb.run(f"echo {tok} | tok | cat"), tok)

    def op_stream(self, x: float) -> None:
        tok = _token("S")
        got: list[bytes] = []
        r = self.sb.run_stream(f"echo {tok}; sleep 0.05; echo {tok}", on_stdout=got.append)
        assert r.stdout == f"{tok}\n{tok}\n" and b"".join(got) == r.stdout_bytes, (tok, r, got)

    def op_bad(self, x: float) -> None:
        tok = _token("B")
        bad = [dict(timeout="5"), dict(timeout=-1), dict(env={"A": 1}), dict(cwd=3),
               dict(stdin=5)][int(x * 5) % 5]
        try:
            self.sb.run(f"echo {tok}", **bad)
        except (TypeError, ValueError):
            pass
        else:
            raise AssertionError(f"bad arguments {bad} were accepted")
        try:
            self.sb.run(None)  # type: ignore[arg-type]
        except TypeError:
            pass
        else:
            raise AssertionError("run(None) was accepted")

    def op_sigint(self, x: float) -> None:
        tok = _token("I")
        delay = 0.05 + 0.3 * x

        def fire() -> None:
            time.sleep(delay)
            os.kill(os.getpid(), signal.SIGINT)
        t = threading.Thread(target=fire, daemon=True)
        try:
            t.start()
            try:
                r = self.sb.run(f"sleep 0.5; echo {tok}")
                # an in-process interpreter may complete the run before the signal lands
                assert r.stdout in ("", f"{tok}\n"), (tok, r)
            finally:
                t.join()
                time.sleep(0.01)
        except KeyboardInterrupt:
            pass

    def op_timeout(self, x: float) -> None:
        tok = _token("T")
        r = self.sb.run(f"sleep 3; echo {tok}", timeout=0.2 + 0.2 * x)
        assert r.timed_out and r.exit_code == 124 and tok not in r.stdout, (tok, r)

    def op_thread(self, x: float) -> None:
        tok = _token("H")
        box: dict[str, Any] = {}

        def call() -> None:
            try:
                box["r"] = self.sb.run(f"sleep {0.1 + 0.2 * x:.2f}; echo {tok}")
            except BaseException as e:  # noqa: BLE001
                box["e"] = e
        t = threading.Thread(target=call, daemon=True)
        t.start()
        t.join(0.02)  # the caller stops waiting; the call goes on and is checked later
        self.threads.append((t, box, tok))

    def op_cancel(self, x: float) -> None:
        tok = _token("C")

        async def main() -> None:
            task = asyncio.ensure_future(asyncio.to_thread(self.sb.run,
                                                           f"sleep 0.2; echo {tok}"))
            await asyncio.sleep(0.05 * x)
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                pass
        asyncio.run(main())

    def op_callback(self, x: float) -> None:
        tok = _token("K")

        def boom(chunk: bytes) -> None:
            raise ValueError("callback failed")
        try:
            r = self.sb.run_stream(f"echo {tok}; echo {tok}", on_stdout=boom)
        except ValueError:
            return  # sandboxed levels: the exchange completes, then the error is raised
        # in-process levels report it as the run's internal error (status 2)
        assert r.exit_code != 0 and "callback failed" in r.stderr, (tok, r)
        assert r.stdout in ("", f"{tok}\n", f"{tok}\n{tok}\n"), (tok, r)


def run_sequence(s: Session, ops: list[tuple[str, float]]) -> None:
    for name, x in ops:
        s.op(name, x)
    s.op("echo", 0.0)  # the session is in step at the end
    s.settle()


def crash_check(level: str) -> dict[str, Any]:
    """Kill the sandbox process during a run: that call raises SandboxCrashed, the next one
    runs in a fresh sandbox over the same files and says ``restarted``."""
    from agentic_bash import SandboxCrashed
    s = Session(level)
    try:
        sb = s.sb
        sb.run("echo before > f")
        pid = sb._ex.pid
        killer = threading.Timer(0.5, os.kill, (pid, signal.SIGKILL))
        killer.start()
        try:
            sb.run("sleep 3")
        except SandboxCrashed:
            pass
        else:
            raise AssertionError("the killed run returned")
        r = sb.run("cat f")
        assert (r.stdout, r.restarted) == ("before\n", True), r
        r = sb.run("echo ok")
        assert (r.stdout, r.restarted) == ("ok\n", False), r
        return {"level": sb.isolation_level, "new_pid": sb._ex.pid != pid}
    finally:
        s.close()


def main() -> int:
    """``python _integrity_ops.py LEVEL SEEDS LENGTH``: random sequences, JSON summary;
    ``python _integrity_ops.py LEVEL crash``: the crash-recovery check."""
    if sys.argv[2] == "crash":
        out = crash_check(sys.argv[1])
        print("\n@@JSON@@" + json.dumps({**out, "uid": os.getuid()}))
        return 0
    level, seeds, length = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    done = 0
    s = Session(level)
    used = s.sb.isolation_level
    try:
        for seed in range(seeds):
            rnd = random.Random(seed)
            ops = [(rnd.choice(OPS), rnd.random()) for _ in range(length)]
            run_sequence(s, ops)
            done += len(ops)
    finally:
        s.close()
    print("\n@@JSON@@" + json.dumps({"level": used, "ops": done, "uid": os.getuid()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
