"""(fresh15) What the zygote's preload leaves to first use (regex, hashlib, tarfile, traceback,
the AST classes' __init__) is not imported or compiled before it is ready, works when first
used, and is finished by the zygote's deferred steps."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from agentic_bash.shell import nodes as N

_PRELOAD = textwrap.dedent(r'''
    import json, sys
    import agentic_bash.isolation.zygote as Z
    failed = Z._preload()
    from agentic_bash.shell import nodes
    out = {"failed": failed,
           "loaded": [m for m in ("regex", "hashlib", "_hashlib", "tarfile", "traceback",
                                  "textwrap") if m in sys.modules],
           "lazy_inits": len(nodes._LAZY_INIT)}
    from agentic_bash import _lazyre
    import re
    out["patterns"] = len(_lazyre._PENDING)
    out["compiled_before"] = sum(p._compiled is not None for p in _lazyre._PENDING)
    pending = list(_lazyre._PENDING)
    Z._finish_lazy()
    out["lazy_after"] = len(nodes._LAZY_INIT)
    out["patterns_after"] = len(_lazyre._PENDING)
    # every module that defined one now holds the compiled pattern
    out["still_lazy"] = [k for m in list(sys.modules.values()) if m is not None
                         and getattr(m, "__name__", "").startswith("agentic_bash")
                         for k, v in vars(m).items() if type(v) is _lazyre.LazyPattern]
    from agentic_bash.shell import patterns
    out["regex_before_use"] = type(patterns.regex).__name__
    out["glob"] = bool(patterns.compile("*.py").match("a.py"))
    out["regex_after_use"] = type(patterns.regex).__name__
    print(json.dumps(out))
''')


def test_preload_leaves_these_to_first_use() -> None:
    p = subprocess.run([sys.executable, "-c", _PRELOAD], capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    got = json.loads(p.stdout)
    assert got["failed"] == [] or all(f.startswith(("pyseccomp", "seccomp")) for f in got["failed"])
    assert got["loaded"] == [], got
    assert 30 < got["lazy_inits"] <= len(N.TWINS)   # (a module body may build one)
    assert got["lazy_after"] == 0
    assert got["patterns"] >= 40 and got["compiled_before"] <= 5, got
    assert got["patterns_after"] == 0 and got["still_lazy"] == [], got
    assert got["regex_before_use"] == "_Regex" and got["glob"]
    assert got["regex_after_use"] == "module"


_FIRST_USE = textwrap.dedent(r'''
    import dataclasses, json, pickle
    from agentic_bash.shell import nodes as N
    out = []
    for i, cls in enumerate(N.TWINS):
        args = [f"v{j}" for j, f in enumerate(f for f in dataclasses.fields(cls) if f.init)]
        # half the classes built first through the twin (shell/template.py's way), half
        # through the class; then the other way, and with a missing argument
        if i % 2:
            a, b = N.TWINS[cls](*args), cls(*args)
        else:
            b, a = cls(*args), N.TWINS[cls](*args)
        try:
            cls()
            err = None
        except TypeError as e:
            err = str(e)
        out.append([cls.__name__, type(a) is cls and type(b) is cls, a == b, hash(a) == hash(b),
                    repr(a), pickle.loads(pickle.dumps(a)) == b, err,
                    cls.__init__.__qualname__])
    print(json.dumps(out))
''')


def test_node_inits_compiled_at_first_use_match_the_compiled_ones() -> None:
    p = subprocess.run([sys.executable, "-c", _FIRST_USE], capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    first = {row[0]: row for row in json.loads(p.stdout)}
    N.compile_inits()   # (this process: the compiled ones)
    assert len(first) == len(N.TWINS)
    for cls in N.TWINS:
        import dataclasses
        args = [f"v{j}" for j, f in enumerate(f for f in dataclasses.fields(cls) if f.init)]
        a = cls(*args)
        try:
            cls()
            err = None
        except TypeError as e:
            err = str(e)
        name, same_type, eq, hsh, rep, pick, ferr, qual = first[cls.__name__]
        assert same_type and eq and hsh and pick, first[cls.__name__]
        assert rep == repr(a)
        assert ferr == err
        assert qual == cls.__init__.__qualname__ == f"{cls.__qualname__}.__init__"


_LAZYRE = textwrap.dedent(r'''
    import json, re, sys, types
    from agentic_bash import _lazyre
    a = types.ModuleType("mod_a")
    a.re = re
    exec("from agentic_bash._lazyre import lazy_compile\n"
         "X = lazy_compile(r'(a+)b', re.I)\n"
         "def use(s):\n    return X.match(s).group(1)\n", vars(a))
    b = types.ModuleType("mod_b")
    vars(b)["Y"] = a.X      # imported under a name of its own (from mod_a import X as Y)
    exec("def use(s):\n    return Y.search(s).group(0)\n", vars(b))
    out = {"before": [type(a.X).__name__, type(b.Y).__name__]}
    out["use_b"] = b.use("xAAb")
    out["after_b"] = [type(a.X).__name__, type(b.Y).__name__]
    out["use_a"] = a.use("aab")
    out["same"] = a.X is b.Y and a.X is re.compile(r"(a+)b", re.I)
    out["repr"] = repr(_lazyre.lazy_compile("z"))
    print(json.dumps(out))
''')


def test_lazy_pattern_compiles_once_and_takes_its_place() -> None:
    p = subprocess.run([sys.executable, "-c", _LAZYRE], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0, p.stderr
    got = json.loads(p.stdout)
    assert got["before"] == ["LazyPattern", "LazyPattern"]
    assert got["use_b"] == "AAb" and got["after_b"] == ["Pattern", "Pattern"]
    assert got["use_a"] == "aa" and got["same"]
    assert got["repr"] == "lazy_compile('z', 0)"


_NO_REGEX = textwrap.dedent(r'''
    import sys
    class Hide:
        @staticmethod
        def find_spec(name, path=None, target=None):
            return None
        @staticmethod
        def invalidate_caches():
            pass
    # an install without the `regex` package: no finder finds it
    sys.meta_path[:] = [f for f in sys.meta_path]
    import importlib.machinery
    real = importlib.machinery.PathFinder.find_spec
    importlib.machinery.PathFinder.find_spec = classmethod(
        lambda cls, name, path=None, target=None:
            None if name.split(".")[0] == "regex" else real(name, path, target))
    try:
        import agentic_bash.executors.inprocess
        print("imported")
    except ImportError as e:
        print("ImportError", e)
''')


def test_without_regex_the_import_still_fails_at_once() -> None:
    # (compat12: the sandbox's inner executor falls back to bash when the in-process one
    # cannot be imported; the lazy regex must not turn that into a failure at first glob)
    p = subprocess.run([sys.executable, "-c", _NO_REGEX], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("ImportError"), p.stdout


def test_zygote_refreshes_stale_bytecode_of_the_package(tmp_path) -> None:
    import importlib.util
    import os
    import types

    from agentic_bash.isolation import zygote as Z

    src = tmp_path / "mod15.py"
    src.write_text("X = 1\n")
    cached = importlib.util.cache_from_source(str(src))
    spec = importlib.util.spec_from_file_location("agentic_bash._test_mod15", src)
    mod = types.ModuleType("agentic_bash._test_mod15")
    mod.__spec__ = spec
    other = types.ModuleType("elsewhere")
    other.__spec__ = importlib.util.spec_from_file_location("elsewhere", src)
    # no bytecode yet: written (only for the package's modules)
    assert Z._refresh_bytecode([other]) == 0 and not os.path.exists(cached)
    assert Z._refresh_bytecode([mod]) == 1 and Z._bytecode_current(str(src), cached)
    assert Z._refresh_bytecode([mod]) == 0
    # the source changes (size and mtime): stale, written again
    src.write_text("X = 22\n")
    os.utime(src, (1, 1))
    assert not Z._bytecode_current(str(src), cached)
    assert Z._refresh_bytecode([mod]) == 1 and Z._bytecode_current(str(src), cached)
    # a directory nobody may write: nothing written, nothing raised
    if os.geteuid() != 0:
        os.chmod(os.path.dirname(cached), 0o500)
        src.write_text("X = 333\n")
        assert Z._refresh_bytecode([mod]) == 0
