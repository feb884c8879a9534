"""create13: pin_imports through the zygote's copy of the package entries changes exactly what reading every package changes."""

from __future__ import annotations

import json
import os
import sys

from agentic_bash.isolation import runner


def _pin_in_child(tmp: str, fast: bool) -> dict:
    """In a forked child (this process's sys.path and modules stay as they are): a package
    under the writable ``tmp`` is imported, then pin_imports runs as a landlocked runner
    whose writable path is ``tmp``. Returns every package's __path__ and sys.path after."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.close(r)
            sys.path.insert(0, tmp)
            import create13_pkg.sub  # noqa: F401
            runner.note_packages()
            if not fast:
                runner._PACKAGES = (-1,) + runner._PACKAGES[1:]   # read every package
            stats = runner.pin_imports({"level": "landlock", "writable": [tmp]}, {}, True)
            paths = {name: list(m.__path__) for name, m in sorted(sys.modules.items())
                     if isinstance(getattr(m, "__path__", None), list)}
            with os.fdopen(w, "w") as f:
                json.dump({"stats": stats, "paths": paths, "sys_path": sys.path}, f)
            code = 0
        finally:
            os._exit(code)
    os.close(w)
    with os.fdopen(r) as f:
        data = f.read()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, data
    return json.loads(data)


def test_entries_path_equals_full_scan(tmp_path):
    pkg = tmp_path / "create13_pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    fast = _pin_in_child(str(tmp_path), True)
    full = _pin_in_child(str(tmp_path), False)
    assert fast["stats"]["all_modules"] == 0 and full["stats"]["all_modules"] == 1
    # the writable package's entries were dropped (no lower to fall back on), both ways
    assert fast["paths"]["create13_pkg"] == [] and fast["paths"]["create13_pkg.sub"] == []
    assert str(tmp_path) not in fast["sys_path"]
    assert fast["paths"] == full["paths"]
    assert fast["sys_path"] == full["sys_path"]
    for k in ("pinned", "dropped", "kept", "lower"):
        assert fast["stats"][k] == full["stats"][k], (fast["stats"], full["stats"])


def test_note_packages_copies_entries():
    runner.note_packages()
    count, pkgs, entries = runner._PACKAGES
    assert count == len(sys.modules) and entries is not None
    import agentic_bash
    i = pkgs.index(agentic_bash)
    key = next(k for k, v in entries.items() if k is not None and i in v)
    # the same text, another object: reading it in a sandbox touches the copy's page only
    assert key == agentic_bash.__path__[0] and key is not agentic_bash.__path__[0]
