"""The run contract under generated hostile scripts: hangs, escapes, memory, internal errors, deadline overruns.

Usage: python benchmarks/contract_fuzz.py [-n 2000] [--isolation virtual|namespace] [--timeout 2]
       [--seed 1] [--per-sandbox 25] [--show 10] [--from K] [--watch sj] [--dump F] [--json F]
       [--hog N] [--only I,J,...] [--gen 1|2|3|mix|all] [--gc-check]

Each script runs in a worker process (one Sandbox per ``--per-sandbox`` scripts, as the
issue's fuzzer did); the parent kills a worker that does not answer within timeout + 15 s
(a hang). For every run it records the wall time past the timeout, the worker's peak RSS
growth (itself plus its children: RSS every 10 ms, the tree listed every 100 ms), the CPU time the worker got and the
load average (a run far past its deadline with little CPU was starved by the machine), and
whether ``echo ok`` still works afterwards. ``--hog N`` runs N busy-looping processes of
its own for the whole fuzz (CPU starvation on demand, instead of whatever load the machine
has). Prints the counts and the overrun distribution (p50/p90/p99/max) of the runs
that timed out.
"""

from __future__ import annotations

import argparse
import math
import multiprocessing as mp
import os
import random
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "security"))
import hostile  # noqa: E402
import hostile2  # noqa: E402
import hostile3  # noqa: E402

GENERATORS = {"1": hostile.script, "2": hostile2.script, "3": hostile3.script}

MiB = 1 << 20


def _rss_tree(p) -> int:  # noqa: ANN001
    import psutil
    total = 0
    try:
        total = p.memory_info().rss
        for c in p.children(recursive=True):
            try:
                total += c.memory_info().rss
            except psutil.Error:
                pass
    except psutil.Error:
        pass
    return total


class _Tracer:
    """For ``--trace``: where a run's time past its deadline went. Records the watchdog's
    kicks, the collector's generation-2 passes, and (after the deadline) the run thread's
    innermost frames every 5 ms; ``report`` keeps it for a run that ended late."""

    def __init__(self, timeout: float) -> None:
        import gc

        from agentic_bash import limits
        self.timeout = timeout
        self.limits = limits
        self.events: list[tuple[float, str]] = []
        self.samples: list[tuple[float, str]] = []
        self.t0 = 0.0
        self.run_tid = threading.get_ident()
        orig = limits._set_async_exc

        def sae(tid, exc):  # noqa: ANN001, ANN202
            if exc is not None:
                self.events.append((time.monotonic(), "kick"))
            orig(tid, exc)
        limits._set_async_exc = sae
        gstart = [0.0]

        def gccb(phase, info):  # noqa: ANN001, ANN202
            if info.get("generation") == 2:
                if phase == "start":
                    gstart[0] = time.monotonic()
                else:
                    self.events.append((gstart[0], f"gc2 {time.monotonic() - gstart[0]:.3f}s"))
        gc.callbacks.append(gccb)
        threading.Thread(target=self._sample, daemon=True).start()

    def start(self) -> None:
        self.events.clear()
        self.samples.clear()
        self.t0 = time.monotonic()

    def _sample(self) -> None:
        import os as _os
        while True:
            time.sleep(0.005)
            t0 = self.t0
            if not t0 or time.monotonic() < t0 + self.timeout:
                continue
            f = self.limits.current_frames().get(self.run_tid)
            st = []
            while f is not None and len(st) < 3:
                st.append(f"{_os.path.basename(f.f_code.co_filename)}:{f.f_code.co_name}:{f.f_lineno}")
                f = f.f_back
            self.samples.append((time.monotonic(), " < ".join(st)))
            del f

    def report(self, dt: float) -> list[str]:
        d = self.t0 + self.timeout
        self.t0 = 0.0
        lines = [f"{t - d:+.3f} {what}" for t, what in self.events if t > d - 1.0]
        last = None
        for t, top in list(self.samples):
            if top != last:
                lines.append(f"{t - d:+.3f}   {top}")
                last = top
        return lines


def _worker(conn, isolation: str, timeout: float, watch: str | None = None,  # noqa: ANN001
            dump: str | None = None, trace: bool = False, gc_check: bool = False) -> None:
    import faulthandler

    import psutil

    from agentic_bash import Sandbox
    if watch is not None:
        from agentic_bash.shell import interpreter, jobs
        interpreter._WATCH_STAGES = "s" in watch
        jobs._WATCH_JOBS = "j" in watch
    dumpf = open(dump, "a") if dump else None  # noqa: SIM115
    me = psutil.Process()
    sb = None
    tracer = _Tracer(timeout) if trace else None
    while True:
        msg = conn.recv()
        if msg is None:
            break
        fresh, script = msg
        if fresh or sb is None:
            if sb is not None:
                sb.close()
            sb = Sandbox(isolation=isolation)
            sb.run("true")
        base = _rss_tree(me)
        peak = [base]
        at_peak: list = []
        stop = threading.Event()

        def sample() -> None:
            # (the process tree is listed every 100 ms, its members' RSS read every 10 ms:
            # listing it walks all of /proc, and at every 5 ms this sampler took a large
            # share of a starved worker's CPU and GIL, inflating the overruns it measures)
            import psutil
            procs: list = []
            k = 0
            while not stop.wait(0.01):
                if k % 10 == 0:
                    try:
                        procs = [me, *me.children(recursive=True)]
                    except psutil.Error:
                        procs = [me]
                k += 1
                total = 0
                each = []
                for p in procs:
                    try:
                        r = p.memory_info().rss
                    except psutil.Error:
                        continue
                    total += r
                    each.append((r, p))
                if total > peak[0]:
                    peak[0] = total
                    if total - base > 256 * MiB:
                        # which processes held it (the worker, the sandbox's runner, a child)
                        at_peak[:] = each
        t = threading.Thread(target=sample, daemon=True)
        t.start()
        rec = {"script": script}
        if dumpf is not None:
            # every thread's stack into --dump shortly before the parent gives up (a hang)
            dumpf.write(f"\n==== {time.strftime('%H:%M:%S')} {script!r}\n")
            dumpf.flush()
            faulthandler.dump_traceback_later(timeout + 8, file=dumpf)
        c0 = me.cpu_times()
        if tracer is not None:
            tracer.start()
        t0 = time.monotonic()
        try:
            r = sb.run(script, timeout=timeout)
            rec.update(code=r.exit_code, timed_out=r.timed_out, internal="internal error" in r.stderr)
            if rec["internal"]:
                k = r.stderr.find("internal error")
                rec["internal_msg"] = r.stderr[k:k + 300].splitlines()[0]
        except BaseException as e:  # noqa: BLE001 - what escaped run() is the finding
            rec.update(exc=f"{type(e).__name__}: {e}")
        rec["dt"] = time.monotonic() - t0
        if tracer is not None:
            tl = tracer.report(rec["dt"])
            if rec["dt"] > timeout + 0.3:
                rec["trace"] = tl
        c1 = me.cpu_times()
        # CPU seconds the worker got during the run and the load then: a run far past its
        # deadline with little CPU was starved by the machine (nice, load), not slow itself
        rec["cpu"] = (c1.user - c0.user) + (c1.system - c0.system)
        rec["load"] = os.getloadavg()[0]
        stop.set()
        t.join()
        rec["rss"] = (peak[0] - base) / MiB
        if gc_check:
            # memory the run left in reference cycles (a frame holding its own exception held a
            # 64 MiB capture until a generation-2 collection): what a full collection frees now
            # (summed over the buffers the garbage refers to, not the RSS a collection gives
            # back: a job still ending frees memory meanwhile)
            import gc
            import io
            gc.set_debug(gc.DEBUG_SAVEALL)
            try:
                gc.collect()
                held, seen = 0, set()
                for o in gc.garbage:
                    for x in (o, *gc.get_referents(o)):
                        if id(x) in seen:
                            continue
                        seen.add(id(x))
                        if isinstance(x, (bytes, bytearray, str, memoryview)):
                            held += sys.getsizeof(x)
                        elif isinstance(x, io.BytesIO) and not x.closed:
                            held += len(x.getbuffer())
                rec["gc_freed"] = held / MiB
                if held > 32 * MiB:
                    rec["gc_kinds"] = sorted({type(o).__name__ for o in gc.garbage})[:20]
            finally:
                gc.set_debug(0)
                gc.garbage.clear()
                del seen
                gc.collect()
        if at_peak:
            def label(p) -> str:  # noqa: ANN001
                try:
                    return f"{p.pid} {' '.join(p.cmdline())[-40:]}"
                except psutil.Error:
                    return f"{p.pid} (gone)"
            rec["rss_by_proc"] = [f"{r / MiB:.0f} MiB {label(p)}" for r, p in sorted(at_peak, key=lambda x: -x[0])[:6]]
        try:
            t1 = time.monotonic()
            ok = sb.run("echo ok", timeout=5)
            rec["ok"] = ok.stdout == "ok\n"
            # a background job's output that came after its run returned lands in the next
            # run's (by design: ``_late``): the session still answers
            rec["late_output"] = not rec["ok"] and ok.stdout.endswith("ok\n") and ok.exit_code == 0
            # (the session answered within the check's timeout: a script may leave state
            # that changes what `echo ok` does, as in bash: a DEBUG trap, an alias, `set -v`)
            rec["ok_in_time"] = time.monotonic() - t1 < 5.5
            if not rec["ok"]:
                rec["ok_detail"] = (f"echo ok -> {ok.stdout[:60]!r} {ok.stderr[-120:]!r} "
                                    f"status {ok.exit_code} in {time.monotonic() - t1:.2f}s")
        except BaseException as e:  # noqa: BLE001
            rec["ok"] = False
            rec["exc_after"] = f"{type(e).__name__}: {e}"
            sb = None
        if dumpf is not None:
            faulthandler.cancel_dump_traceback_later()
        conn.send(rec)


def _short(script: str, n: int = 400) -> str:
    """A script for the report: long ones (70,000-character words) cut in the middle."""
    return repr(script) if len(script) <= n else f"{script[:n // 2]!r} ...<{len(script)} chars>... {script[-n // 4:]!r}"


def _hog() -> None:
    while True:
        pass


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=2000)
    ap.add_argument("--isolation", default="virtual")
    ap.add_argument("--timeout", type=float, default=2.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--per-sandbox", type=int, default=25)
    ap.add_argument("--show", type=int, default=10)
    ap.add_argument("--from", dest="start", type=int, default=0,
                    help="run scripts from this index on (the earlier ones are generated, not run)")
    ap.add_argument("--watch", default=None,
                    help="override the watchdog's thread flags: 's' stages, 'j' jobs, '' neither")
    ap.add_argument("--dump", default=None, help="file for a stack dump of every hang")
    ap.add_argument("--json", default=None, help="write every run's record here")
    ap.add_argument("--trace", action="store_true",
                    help="for runs past timeout + 0.3 s, show the kicks, gen-2 collections and run-thread stacks after the deadline")
    ap.add_argument("--hog", type=int, default=0, help="busy-looping processes to run meanwhile (load)")
    ap.add_argument("--gc-check", action="store_true",
                    help="after each run, what a full collection frees (virtual: memory left in reference cycles)")
    ap.add_argument("--only", default=None, help="run only these script indices (comma-separated)")
    ap.add_argument("--gen", default="1", choices=["1", "2", "3", "mix", "all"],
                    help="the grammar (tests/security/hostile.py), mutated real scripts and feature mixes "
                         "(hostile2.py), special files/recursion/huge argument lists/traps/read -t/signals/"
                         "ulimit (hostile3.py), each script from 1 or 2 at random (mix), or from 1, 2 or 3 (all)")
    a = ap.parse_args()
    only = None if a.only is None else {int(x) for x in a.only.split(",")}
    rng = random.Random(a.seed)
    ctx = mp.get_context("spawn")
    recs: list[dict] = []
    hangs: list[str] = []
    proc = conn = None
    t_start = time.monotonic()
    hogs = [ctx.Process(target=_hog, daemon=True) for _ in range(a.hog)]
    for h in hogs:
        h.start()
    for i in range(a.n):
        g = a.gen if a.gen not in ("mix", "all") else rng.choice("12" if a.gen == "mix" else "123")
        s = GENERATORS[g](rng)
        if i < a.start or (only is not None and i not in only):
            continue
        if proc is None:
            conn, child = ctx.Pipe()
            proc = ctx.Process(target=_worker, args=(child, a.isolation, a.timeout, a.watch, a.dump, a.trace, a.gc_check),
                               daemon=True)
            proc.start()
        conn.send((i % a.per_sandbox == 0 or i == a.start, s))
        # (the run, then `echo ok` with its own 5 s: a script that leaves a DEBUG trap running
        # `yes` makes that check time out too, which is not a hang of the run)
        if conn.poll(a.timeout + 15 + (30 if i % a.per_sandbox == 0 else 0)):
            try:
                recs.append(conn.recv())
                recs[-1]["i"] = i
                continue
            except EOFError:
                pass
        hangs.append(s)
        proc.kill()
        proc.join()
        proc = None
    if proc is not None:
        conn.send(None)
        proc.join(10)
    for h in hogs:
        h.kill()
        h.join()
    wall = time.monotonic() - t_start
    if a.json:
        import json
        Path(a.json).write_text(json.dumps({"args": vars(a), "hangs": hangs, "runs": recs}, indent=1))

    over = sorted(r["dt"] - a.timeout for r in recs if r.get("timed_out"))
    late = [r for r in recs if r["dt"] > a.timeout + 0.5]
    lying = [r for r in recs if r["dt"] > a.timeout + 0.5 and not r.get("timed_out")]
    exc = [r for r in recs if "exc" in r or "exc_after" in r]
    internal = [r for r in recs if r.get("internal")]
    big = [r for r in recs if r["rss"] > 512]
    broken = [r for r in recs if not r.get("ok") and not r.get("late_output")]
    no_answer = [r for r in recs if not r.get("ok_in_time")]
    late_out = [r for r in recs if r.get("late_output")]
    bad124 = [r for r in recs if r.get("timed_out") and r.get("code") != 124]
    print(f"{a.n} scripts, isolation={a.isolation}, timeout={a.timeout}, seed={a.seed}, {wall:.0f} s")
    ld = sorted(r["load"] for r in recs) or [0.0]
    print(f"load average (1 min) during runs: min {ld[0]:.1f}  median {ld[len(ld) // 2]:.1f}  max {ld[-1]:.1f}"
          f"  (own hogs: {a.hog})")
    print(f"hangs (no answer in timeout+15 s): {len(hangs)}")
    print(f"exceptions escaping run(): {len(exc)}")
    print(f"internal errors: {len(internal)}")
    print(f"RSS growth > 512 MiB: {len(big)}   max RSS growth: {max((r['rss'] for r in recs), default=0):.0f} MiB")
    print(f"session unusable after: {len(broken)}   (a job's late output before 'ok': {len(late_out)}; "
          f"no answer within the check's timeout or an exception: {len(no_answer)})")
    if a.gc_check:
        cyc = sorted((r for r in recs if r.get("gc_freed", 0) > 32), key=lambda r: -r["gc_freed"])
        print(f"runs leaving > 32 MiB in reference cycles: {len(cyc)}")
        for r in cyc[:a.show]:
            print(f"  cycles: {r['gc_freed']:.0f} MiB {_short(r['script'])}\n      {r.get('gc_kinds')}")
    print(f"timed out: {len(over)}; timed_out without 124: {len(bad124)}")
    print(f"past timeout + 0.5 s: {len(late)} (of them not timed_out: {len(lying)})")
    if over:
        def pct(p: float) -> float:  # nearest rank (statistics.quantiles extrapolates past the max)
            return over[max(0, math.ceil(p * len(over)) - 1)]
        print(f"overrun of timed-out runs (s): p50 {pct(0.5):.3f}  p90 {pct(0.9):.3f}  p99 {pct(0.99):.3f}"
              f"  max {over[-1]:.3f}")
        allover = sorted(max(0.0, r["dt"] - a.timeout) for r in recs)
        print(f"time past the timeout, all runs: max {allover[-1]:.3f}, > 0.5 s: {sum(x > 0.5 for x in allover)}")
    for r in sorted(recs, key=lambda r: -r["rss"])[:a.show // 2]:
        print(f"  top rss: +{r['rss']:.0f}M {r['dt']:.2f}s {_short(r['script'])}")
    for r in sorted((r for r in recs if r.get("timed_out")), key=lambda r: -r["dt"])[:a.show // 2]:
        print(f"  top overrun: {r['dt'] - a.timeout:.3f}s {_short(r['script'])}")
    for title, rows in (("hang", [{"script": s, "dt": float("inf")} for s in hangs]), ("exception", exc),
                        ("internal", internal), ("rss", big), ("unusable", broken), ("late", late)):
        for r in sorted(rows, key=lambda r: -r["dt"])[:a.show]:
            print(f"  {title}: {r['dt']:.2f}s rss+{r.get('rss', 0):.0f}M"
                  + (f" cpu {r['cpu']:.2f}s load {r['load']:.0f}" if "cpu" in r else "")
                  + f" {r.get('exc', '')}{r.get('internal_msg', '')} {_short(r['script'])}"
                  + (f"\n      ({r['ok_detail']})" if title == "unusable" and "ok_detail" in r else "")
                  + "".join(f"\n      {ln}" for ln in (r.get("rss_by_proc", ()) if title == "rss" else ()))
                  + "".join(f"\n      {ln}" for ln in (r.get("trace", ()) if title == "late" else ())[:40]))


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    main()
