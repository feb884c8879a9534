"""`agentic-bash run FILE` mounts FILE's directory: a script kept in a home (or next to .ssh, .aws, .env) must not bring those into the sandbox; judged on the host as root and as the unprivileged user."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile

import pytest

from _support import sandbox_supported

ok, why = sandbox_supported()
pytestmark = [pytest.mark.skipif(not ok, reason=f"kernel sandbox unavailable: {why}"),
              pytest.mark.timeout(300)]


@pytest.mark.parametrize("who", ["root", "user"])
def test_run_file_beside_credentials_does_not_mount_them(request: pytest.FixtureRequest,
                                                         token: str, who: str) -> None:
    # before: `agentic-bash run ~/task.sh` mounted the whole directory read-only, and the
    # script printed ~/.ssh/id_rsa, ~/.aws/credentials and ./.env
    runner = request.getfixturevalue("as_root" if who == "root" else "as_user")
    d = tempfile.mkdtemp(prefix="agb10-cli-", dir=runner.env.get("TMPDIR"))
    try:
        secret = f"CLISECRET-{token}{who}"
        for rel in (".ssh/id_rsa", ".aws/credentials", ".env"):
            os.makedirs(os.path.dirname(os.path.join(d, rel)), exist_ok=True)
            with open(os.path.join(d, rel), "w") as f:
                f.write(f"{secret}-{rel}\n")
        with open(os.path.join(d, "lib.sh"), "w") as f:
            f.write("echo sibling-sourced\n")
        with open(os.path.join(d, "task.sh"), "w") as f:
            f.write('here="$(dirname "$0")"\nsource "$here/lib.sh"\n'
                    'cat "$here/.ssh/id_rsa" "$here/.aws/credentials" "$here/.env" 2>&1\n'
                    'grep -rs CLISECRET "$here" /tmp 2>&1\necho done\n')
        if who == "user":
            shutil.chown(d, "agbtest")
            for root, dirs, files in os.walk(d):
                for n in dirs + files:
                    shutil.chown(os.path.join(root, n), "agbtest")
        p = subprocess.run(runner.prefix + [runner.python, "-m", "agentic_bash", "run",
                                            os.path.join(d, "task.sh")],
                           capture_output=True, text=True, env=runner.env, cwd="/",
                           timeout=240)
        assert p.returncode == 0 and p.stdout.rstrip().endswith("done"), (p.stdout, p.stderr)
        assert "sibling-sourced" in p.stdout, (p.stdout, p.stderr)
        assert secret not in p.stdout and secret not in p.stderr, (p.stdout, p.stderr)
        assert "holds credentials" in p.stderr, p.stderr
        # the private copy is gone with the command
        assert not [n for n in os.listdir(runner.env.get("TMPDIR") or tempfile.gettempdir())
                    if n.startswith("agentic-bash-script-")], p.stderr
    finally:
        shutil.rmtree(d, ignore_errors=True)
