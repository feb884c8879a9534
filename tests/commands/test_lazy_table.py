"""commands.MODULES (the lazy name -> module table) matches what the modules register."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def test_table_matches_registrations() -> None:
    # a fresh interpreter: importing each listed module registers exactly its listed names,
    # and importing every module registers nothing unlisted
    code = textwrap.dedent("""
        import importlib, pkgutil
        import agentic_bash.commands as c
        from agentic_bash.commands.base import REGISTRY
        bad = []
        for mod, names in c.MODULES.items():
            importlib.import_module("agentic_bash.commands." + mod)
            for n in names:
                spec = dict.get(REGISTRY, n)
                if spec is None or spec.fn.__module__ != "agentic_bash.commands." + mod:
                    bad.append(("listed but not registered by", mod, n))
        listed = {n for names in c.MODULES.values() for n in names}
        c.load_all(eager=True)
        for n, spec in dict.items(REGISTRY):
            if n not in listed:
                bad.append(("registered but not listed", spec.fn.__module__, n))
        print(bad)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout


def test_lookup_imports_one_module() -> None:
    code = textwrap.dedent("""
        import sys
        from agentic_bash.commands import load_all
        r = load_all()
        assert "sed" in r and r["sed"].name == "sed" and r.get("no-such-cmd") is None
        print("agentic_bash.commands.awkcmd" in sys.modules, "agentic_bash.commands.sedcmd" in sys.modules)
        # names are listed from the table without imports; values() imports every module
        print(len(r) >= 100 and "awk" in list(r), "agentic_bash.commands.awkcmd" in sys.modules)
        print(len(list(r.values())) == len(r), "agentic_bash.commands.awkcmd" in sys.modules)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True", "True", "False", "True", "True"], out.stdout + out.stderr
