"""No setuid/setgid file can be made from a sandbox: an rw-mounted host dir would otherwise get a setuid-root shell."""

from __future__ import annotations

import os
import stat

import pytest

import agentic_bash as ab

from _support import sandbox_supported

ok, why = sandbox_supported()
pytestmark = [pytest.mark.skipif(not ok, reason=f"kernel sandbox unavailable: {why}"),
              pytest.mark.slow]

ATTACK = ("cp /bin/bash sh1; chmod 4755 sh1; chmod u+s,g+s sh1; "
          "python3 -c \"import os; os.close(os.open('sh2', os.O_CREAT|os.O_WRONLY, 0o6755)); "
          "os.chmod('sh2', 0o4755)\"; "
          "python3 -c \"import os; fd = os.open('.', os.O_TMPFILE|os.O_WRONLY, 0o4755)\"; "
          "install -m 4755 /bin/true sh3; mkdir -m 2775 d1; cp -p /usr/bin/passwd sh4; true")


def test_rw_mount_gets_no_setuid_file(tmp_path) -> None:
    os.chmod(tmp_path, 0o755)
    with ab.Sandbox(mounts={"/workspace": (str(tmp_path), "rw")}) as sb:
        r = sb.run(ATTACK)
        assert any("refused by seccomp" in str(v) for v in r.violations), r
        assert sb.run("chmod 755 sh1 && echo fine").stdout == "fine\n"   # plain modes work
    made = sorted(os.listdir(tmp_path))
    assert "sh1" in made, made    # the attack ran
    for n in made:
        st = os.lstat(tmp_path / n)
        assert not st.st_mode & (stat.S_ISUID | stat.S_ISGID), (n, oct(st.st_mode))


def test_default_session_gets_no_setuid_file_either() -> None:
    with ab.Sandbox() as sb:
        r = sb.run(ATTACK + "; stat -c '%a %n' sh1 sh2 sh3 sh4 d1")
        modes = [ln.split()[0] for ln in r.stdout.splitlines()]
        assert modes and all(not int(m, 8) & 0o6000 for m in modes), r.stdout
