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


STOPPED = r"""
import sys, time, importlib.abc
class Slow(importlib.abc.MetaPathFinder):
    # the first import of moretext (shuf) is slow, as under load: the run's deadline lands in it
    first = True
    def find_spec(self, name, path, target=None):
        if name == 'agentic_bash.commands.moretext' and Slow.first:
            Slow.first = False
            t = time.monotonic()
            while time.monotonic() - t < 5:
                sum(range(1000))
        return None
sys.meta_path.insert(0, Slow())
import agentic_bash as ab
with ab.Sandbox(isolation='virtual') as sb:
    r1 = sb.run('shuf -n1 <<< x', timeout=0.5)
    r2 = sb.run('shuf -n1 <<< x; column -t <<< "a b"')
    print(repr((r1.exit_code, r1.timed_out, r2.stdout, r2.stderr, r2.exit_code)))
"""


def test_a_run_stopped_during_a_modules_first_import_does_not_break_it() -> None:
    p = subprocess.run([sys.executable, "-c", STOPPED], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    code, timed_out, out, err, status = eval(p.stdout.strip().splitlines()[-1])
    assert (code, timed_out) == (124, True)
    assert (out, err, status) == ("x\na  b\n", "", 0)
    assert "unavailable" not in p.stderr
