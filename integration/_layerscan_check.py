"""Native writes into empty uppers of the session layer, one upper at a time (run as root or as the test user); prints JSON."""

from __future__ import annotations

import json
import os
import time

from agentic_bash import Sandbox

out: dict = {"steps": []}
sb = Sandbox("namespace")
try:
    s3 = None
    import psutil
    kids = psutil.Process(sb._ex.pid).children(recursive=True)
    if kids:
        s3 = kids[-1].pid
    try:
        out["inotify"] = any(os.readlink(f"/proc/{s3}/fd/{fd}") == "anon_inode:inotify"
                             for fd in os.listdir(f"/proc/{s3}/fd"))
    except OSError as e:   # (as the test user, the sandbox's /proc entries may be closed)
        out["inotify"] = f"unknown: {e}"
    out["uppers"] = sorted(u["target"] for u in sb._ex.layer_uppers)
    time.sleep(0.1)   # (the fstat fallback trusts an empty upper once 50 ms old)
    lower_etc = sb.run("for f in /etc/debian_version /etc/hostname /etc/issue; do "
                       "[ -f $f ] && { echo $f; break; }; done").stdout.strip()
    steps = [
        ("/usr/bin/touch /usr/local/agb_new", "created", "/usr/local/agb_new"),
        (f"/bin/rm -f {lower_etc}", "deleted", lower_etc),
        ("/bin/mkdir /opt/agb_d && /usr/bin/touch /opt/agb_d/f", "created", "/opt/agb_d/f"),
        ("/bin/dash -c 'echo >> /var/lib/dpkg/status'", "modified", "/var/lib/dpkg/status"),
        ("/bin/dash -c 'echo x > /tmp/agb_x'", "created", "/tmp/agb_x"),
        ("/bin/mv /tmp/agb_x /workspace/agb_x", "created", "/workspace/agb_x"),
        ("/bin/dash -c 'echo y > /var/agb_y'", "created", "/var/agb_y"),
    ]
    for cmd, kind, path in steps:
        r = sb.run(cmd)
        got = {"created": r.files_created, "modified": r.files_modified,
               "deleted": r.files_deleted}
        out["steps"].append({"cmd": cmd, "exit": r.exit_code, "stderr": r.stderr,
                             "want": [kind, path], "got": {k: list(v) for k, v in got.items()}})
finally:
    sb.close()
print("\n@@JSON@@" + json.dumps(out))
