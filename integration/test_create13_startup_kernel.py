"""create13: the runner reports each start-up step's CPU and page faults for pid 1 and itself, pin_imports reads only the packages whose entries change, the reported overlays are the kernel's, every protection is in place at the first command, and close() leaves no process, cgroup, session dir or mount; as root and as an unprivileged user."""

from __future__ import annotations

import os
import subprocess

import pytest

from _support import HERE, _parse, sandbox_supported

ok, why = sandbox_supported()
pytestmark = [pytest.mark.skipif(not ok, reason=f"kernel sandbox unavailable: {why}"),
              pytest.mark.timeout(300)]

PID1 = ["s1", "joined", "unshared", "s2", "rooted", "fork", "detached", "done"]
RUNNER = ["s3_forked", "s3", "restricted", "pinned", "executor", "scanner", "ready"]


@pytest.mark.parametrize("who", ["root", "user"])
def test_startup_steps_and_first_command(who: str, request: pytest.FixtureRequest) -> None:
    runner = request.getfixturevalue("as_root" if who == "root" else "as_user")
    p = subprocess.run(runner.prefix + [runner.python, os.path.join(HERE, "_create13_check.py")],
                       capture_output=True, text=True, env=runner.env, cwd=runner.cwd,
                       timeout=240)
    assert p.returncode == 0, f"{p.stdout[-3000:]}\n{p.stderr[-5000:]}"
    got = _parse(p.stdout)
    assert "error" not in got, got["error"]
    assert len(got["sandboxes"]) == 3, got
    for sb in got["sandboxes"]:
        out, code = sb["first"]
        assert code == 0 and out.startswith("hi\n"), sb["first"]
        assert "NoNewPrivs:\t1" in out and "Seccomp:\t2" in out, out
        assert "CapEff:\t0000000000000000" in out, out
        for m in ("mount_namespace", "overlay", "landlock", "seccomp", "caps_dropped"):
            assert sb["mechanisms"][m] == "enforced", sb["mechanisms"]
        cpu = sb["cpu"]
        for steps in (PID1, RUNNER):
            assert set(steps) <= set(cpu), (steps, cpu)
            seq = [cpu[s] for s in steps]
            # each process's own thread: CPU and minor faults only grow, step after step
            assert all(a[0] <= b[0] and a[1] <= b[1] for a, b in zip(seq, seq[1:])), seq
            assert seq[-1][0] > 0 and seq[-1][1] > 0, seq
        # the zygote had every module the runner imports before pin_imports: only the
        # packages whose __path__ entries change were read (runner.note_packages)
        assert sb["imports"].get("all_modules") == 0, sb["imports"]
        # the overlays pid 1 reports (statfs of where it mounted them) are the kernel's
        # overlay mounts of the sandbox, as /proc/self/mountinfo lists them
        assert sb["overlay_mounts"] and "/workspace" in sb["overlay_mounts"], sb
        assert sorted(sb["overlay_mounts"]) == sorted(sb["mountinfo_overlays"]), sb
        t = sb["timing"]
        assert t["rooted"] <= t["detached"] <= t["s2_done"] <= t["ready"], t
        # close() left nothing: no process of the sandbox, no cgroup, session dir or mount
        assert len(sb["pids"]) >= 2, sb["pids"]
        assert sb["left"] == {"processes": [], "cgroups": [], "session": False,
                              "mounts": []}, sb["left"]
