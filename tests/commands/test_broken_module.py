"""A command module that fails to import is reported (warning, status 126 with the reason), never a silent success."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = r"""
import sys, importlib.abc, warnings
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == 'agentic_bash.commands.textutils':
            raise ImportError('simulated broken module')
sys.meta_path.insert(0, Block())
warnings.simplefilter('always')
import agentic_bash as ab
with ab.Sandbox(isolation='virtual') as sb:
    r = sb.run('cat /etc/hostname; echo rc=$?; sort <<< b')
    print(repr((r.stdout, r.stderr)))
"""


def test_broken_command_module_is_an_error_not_a_silent_success() -> None:
    p = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    out, err = eval(p.stdout.strip().splitlines()[-1])
    assert out == "rc=126\nb\n"  # other modules' commands still work
    assert "cat: cannot execute: the in-process command is unavailable" in err
    assert "ImportError: simulated broken module" in err
    assert "commands in agentic_bash.commands.textutils are unavailable" in p.stderr  # warned
