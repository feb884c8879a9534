"""A sandbox's start-up as its runner reports it (create13): the CPU and page faults of each step, which pin_imports path ran, the mechanisms at the first command; prints JSON."""

from __future__ import annotations

import json
import traceback

from agentic_bash import Sandbox


def main() -> None:
    out: dict = {"sandboxes": []}
    try:
        for _ in range(3):
            with Sandbox() as sb:
                r = sb.run("echo hi; /bin/true; cat /proc/self/status | grep -E '^(Seccomp|NoNewPrivs|CapEff):'")
                ov = sb.run("awk '/ - overlay / {print $5}' /proc/self/mountinfo")
                ob = sb._ex.observed
                out["sandboxes"].append({
                    "first": [r.stdout, r.exit_code], "cpu": ob.get("cpu", {}),
                    "imports": ob.get("imports", {}), "timing": ob.get("timing", {}),
                    "overlay_mounts": ob.get("overlay_mounts", []),
                    "mountinfo_overlays": ov.stdout.split(),
                    "mechanisms": dict(sb.isolation.mechanisms)})
    except Exception:  # noqa: BLE001
        out["error"] = traceback.format_exc()
    print("\n@@JSON@@" + json.dumps(out))


if __name__ == "__main__":
    main()
