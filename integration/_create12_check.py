"""The host's root at a sandbox's first command (detached after the runner's fork, create12): its mount table, the top of the root, and the start-up timeline; prints JSON."""

from __future__ import annotations

import json
import traceback

from agentic_bash import Sandbox


def main() -> None:
    out: dict = {"sandboxes": []}
    try:
        for _ in range(3):
            with Sandbox() as sb:
                # the very first command: nothing ran in the sandbox before it
                r = sb.run("grep -c ' /.old-root' /proc/self/mountinfo; "
                           "test -e /.old-root; echo $?; touch /x 2>/dev/null; echo $?; "
                           "awk '$5 == \"/\"' /proc/self/mountinfo | grep -c ' ro[, ]'")
                ob = sb._ex.observed
                out["sandboxes"].append({
                    "first": [r.stdout, r.exit_code], "timing": ob.get("timing", {}),
                    "overlay_mounts": ob.get("overlay_mounts", []),
                    "mechanisms": dict(sb.isolation.mechanisms)})
    except Exception:  # noqa: BLE001
        out["error"] = traceback.format_exc()
    print("\n@@JSON@@" + json.dumps(out))


if __name__ == "__main__":
    main()
