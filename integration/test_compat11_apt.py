"""apt-get install of a Perl library in a default Sandbox() as an unprivileged user: the prefix's Perl module dirs join PERL5LIB (cowsay's Text::CharWidth was unpacked and perl did not look)."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from _support import _parse, pypi_reachable, sandbox_supported

ok, why = sandbox_supported()
pytestmark = [pytest.mark.skipif(not ok, reason=f"kernel sandbox unavailable: {why}"),
              pytest.mark.timeout(400)]

# an XS module (a .so under the arch dir) not installed on this host: the install is real
SCRIPT = r"""
apt-get install -y -qq libtext-charwidth-perl >/dev/null 2>&1; echo "install=$?"
perl -MText::CharWidth=mbswidth -e 'print "width ", mbswidth("abc"), "\n"'
"""

CHECK = f"""
import json, traceback
from agentic_bash import Sandbox
out = {{}}
try:
    with Sandbox() as sb:
        r = sb.run({SCRIPT!r}, timeout=300)
        out["run"] = [r.stdout, r.stderr, r.exit_code]
except Exception:
    out["error"] = traceback.format_exc()
print("\\n@@JSON@@" + json.dumps(out))
"""


def test_perl_module_from_apt_as_user(as_user) -> None:
    if shutil.which("apt-get") is None or shutil.which("perl") is None:
        pytest.skip("no apt-get or perl")
    if not pypi_reachable():   # (the same check the package tests use for the mirrors)
        pytest.skip("no package registry reachable")
    if subprocess.run(["dpkg", "-s", "libtext-charwidth-perl"], capture_output=True).returncode == 0:
        pytest.skip("libtext-charwidth-perl is installed on this host: the case would not fetch it")
    p = subprocess.run(as_user.prefix + [as_user.python, "-c", CHECK], capture_output=True,
                       text=True, env=as_user.env, cwd=as_user.cwd, timeout=360)
    assert p.returncode == 0, f"{p.stdout[-3000:]}\n{p.stderr[-5000:]}"
    got = _parse(p.stdout)
    assert "error" not in got, got["error"]
    out, err, _code = got["run"]
    assert "install=0\nwidth 3\n" in out, (out, err)

