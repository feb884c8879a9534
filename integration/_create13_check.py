"""A sandbox's start-up as its runner reports it (create13): the CPU and page faults of each step, which pin_imports path ran, the mechanisms at the first command; prints JSON."""

from __future__ import annotations

import json
import os
import time
import traceback

from agentic_bash import Sandbox


def _tree(sb: Sandbox) -> list[int]:
    """pid 1 of the sandbox and every process below it (host pids)."""
    out, todo = [], [sb._ex.pid]
    while todo:
        p = todo.pop()
        out.append(p)
        for t in os.listdir(f"/proc/{p}/task"):
            try:
                with open(f"/proc/{p}/task/{t}/children") as f:
                    todo += [int(c) for c in f.read().split()]
            except OSError:
                pass
    return out


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(") ", 1)[-1][:1] not in ("Z", "")
    except OSError:
        return False


def _left(pids: list[int], cgroups: list[str], session: str | None) -> dict:
    """What close() left behind: processes, cgroup directories, the session directory and
    host mounts naming it (polled for up to 10 s)."""
    deadline = time.monotonic() + 10
    while True:
        with open("/proc/self/mountinfo") as f:
            mounts = [ln for ln in f if session and session in ln]
        left = {"processes": [p for p in pids if _alive(p)],
                "cgroups": [d for d in cgroups if os.path.exists(d)],
                "session": bool(session and os.path.exists(session)), "mounts": mounts}
        if not any(left.values()) or time.monotonic() > deadline:
            return left
        time.sleep(0.1)


def main() -> None:
    out: dict = {"sandboxes": []}
    try:
        for _ in range(3):
            sb = Sandbox()
            pids = _tree(sb)
            cg = list(getattr(getattr(sb._ex._resources, "cgroups", None), "dirs", {}).values())
            session = sb._ex._session_dir
            with sb:
                r = sb.run("echo hi; /bin/true; cat /proc/self/status | grep -E '^(Seccomp|NoNewPrivs|CapEff):'")
                ov = sb.run("awk '/ - overlay / {print $5}' /proc/self/mountinfo")
                ob = sb._ex.observed
                out["sandboxes"].append({
                    "first": [r.stdout, r.exit_code], "cpu": ob.get("cpu", {}),
                    "imports": ob.get("imports", {}), "timing": ob.get("timing", {}),
                    "overlay_mounts": ob.get("overlay_mounts", []),
                    "mountinfo_overlays": ov.stdout.split(),
                    "mechanisms": dict(sb.isolation.mechanisms), "pids": pids})
            out["sandboxes"][-1]["left"] = _left(pids, cg, session)
    except Exception:  # noqa: BLE001
        out["error"] = traceback.format_exc()
    print("\n@@JSON@@" + json.dumps(out))


if __name__ == "__main__":
    main()
