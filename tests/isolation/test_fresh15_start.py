"""(fresh15) Sandbox() starts the zygote before the probe when the probe cache says user
namespaces work, and discards it when the probe then disagrees; the probe key's SHA-256
without hashlib."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap
import time

import pytest

from agentic_bash.isolation import probe as P
from agentic_bash.isolation import zygote as Z


def _write_cache(tmp_path, res, age=0.0, mode=0o600):
    d = tmp_path / "agentic-bash"
    d.mkdir(mode=0o700, exist_ok=True)
    path = d / f"probe-{os.geteuid()}.json"
    path.write_text(json.dumps({"entries": {"k": {"time": time.time() - age, "res": res,
                                                  "reasons": {}}}}))
    os.chmod(path, mode)
    return path


@pytest.fixture
def cache_home(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("AGENTIC_BASH_PROBE_CACHE", raising=False)
    return tmp_path


def test_hint_reads_the_probe_cache(cache_home, monkeypatch):
    assert Z.userns_hint() is False                       # no file
    _write_cache(cache_home, {"user_namespace": False})
    assert Z.userns_hint() is False
    path = _write_cache(cache_home, {"user_namespace": True})
    assert Z.userns_hint() is True
    assert path == __import__("pathlib").Path(P.cache_path())   # the probe's own file
    os.chmod(path, 0o666)                                 # others could have written it
    assert Z.userns_hint() is False
    _write_cache(cache_home, {"user_namespace": True}, age=2 * 24 * 3600)   # expired
    assert Z.userns_hint() is False
    path.write_text("{not json")
    assert Z.userns_hint() is False
    _write_cache(cache_home, {"user_namespace": True})
    monkeypatch.setenv("AGENTIC_BASH_PROBE_CACHE", "0")
    assert Z.userns_hint() is False


def test_cache_key_digest_is_sha256():
    assert P._sha256().name == "sha256"
    h = P._sha256()
    h.update(b"agentic-bash")
    assert h.hexdigest() == hashlib.sha256(b"agentic-bash").hexdigest()


_ORDER = textwrap.dedent(r'''
    import json, sys
    import agentic_bash.isolation.zygote as Z
    seen = []
    init = Z.Zygote.__init__
    def spy(self):
        seen.append("agentic_bash.isolation.probe" in sys.modules)
        init(self)
    Z.Zygote.__init__ = spy
    from agentic_bash import Sandbox
    sb = Sandbox(sys.argv[1])
    r = sb.run("echo ok")
    print(json.dumps({"probe_imported_at_start": seen, "level": sb.isolation_level,
                      "out": r.stdout}))
    sb.close()
''')


def _caps_namespace() -> bool:
    caps = P.probe()
    return caps.user_namespace and caps.mount_namespace and caps.pid_namespace


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux only")
def test_zygote_starts_before_the_probe_module_is_imported(tmp_path):
    if not _caps_namespace():
        pytest.skip("no user namespaces here")
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    env.pop("AGENTIC_BASH_PROBE_CACHE", None)
    run = [sys.executable, "-c", _ORDER, "namespace"]
    # first process: no cache file yet, so no guess (the zygote starts after the probe)
    first = json.loads(subprocess.run(run, env=env, capture_output=True, text=True,
                                      check=True, timeout=120).stdout)
    assert first["probe_imported_at_start"] == [True]
    # from then on the cache says user namespaces work: started before the probe's import
    second = json.loads(subprocess.run(run, env=env, capture_output=True, text=True,
                                       check=True, timeout=120).stdout)
    assert second["probe_imported_at_start"] == [False]
    assert second["level"] == "namespace" and second["out"] == "ok\n"


_DISCARD = textwrap.dedent(r'''
    import json, os, sys, time
    import agentic_bash.isolation.probe as P
    import agentic_bash.isolation.zygote as Z
    P.probe.cache_clear()
    # the probe disagrees with the (stale) cache: no user namespace here
    P.probe = lambda: P.Capabilities(linux=True, reasons={"user_namespace": "test: none"})
    Z.userns_hint = lambda: True
    made = []
    init = Z.Zygote.__init__
    def spy(self):
        init(self)
        made.append(self)
    Z.Zygote.__init__ = spy
    from agentic_bash import Sandbox
    sb = Sandbox("auto")
    level = sb.isolation_level
    sb.close()
    z = made[0]
    code = z.proc.wait(timeout=60)
    tag = f"{Z.BASE_PREFIX}{os.stat('/proc/self/ns/pid').st_ino}-{z.proc.pid}-"
    left = [n for d in ("/dev/shm", "/tmp") if os.path.isdir(d) for n in os.listdir(d)
            if n.startswith(tag)]
    print(json.dumps({"level": level, "made": len(made), "forgotten": Z._zygote is None,
                      "exit": code, "sock_closed": z.sock.fileno() == -1, "bases_left": left}))
''')


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux only")
def test_early_zygote_is_discarded_when_the_probe_disagrees(tmp_path):
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    p = subprocess.run([sys.executable, "-c", _DISCARD], env=env, capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    got = json.loads(p.stdout)
    assert got == {"level": "virtual", "made": 1, "forgotten": True, "exit": 0,
                   "sock_closed": True, "bases_left": []}
    # the discarded zygote exits quietly (no traceback on the caller's stderr)
    assert "Traceback" not in p.stderr


_QUIET = textwrap.dedent(r'''
    import json
    from agentic_bash import Sandbox
    from agentic_bash.isolation import zygote as Z
    got = []
    Sandbox("namespace").close()         # the zygote's first: its deferred steps are pending
    got.append(Z.get_zygote().last_spawn["quiet"])
    with Z.background_spawns():          # a pool's filler: nobody waits, no quiet time
        Sandbox("namespace").close()
    got.append(Z.get_zygote().last_spawn["quiet"])
    for _ in range(7):
        Sandbox("namespace").close()
        got.append(Z.get_zygote().last_spawn["quiet"])
    print(json.dumps({"quiet": got, "each": Z.QUIET, "total": Z.QUIET_TOTAL}))
''')


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux only")
def test_deferred_steps_hold_back_after_a_fork_within_a_bound() -> None:
    if not _caps_namespace():
        pytest.skip("no user namespaces here")
    p = subprocess.run([sys.executable, "-c", _QUIET], capture_output=True, text=True,
                       timeout=180)
    assert p.returncode == 0, p.stderr
    got = json.loads(p.stdout)
    q = got["quiet"]
    assert q[0] == got["each"] and q[1] == 0, q
    # later ones: QUIET while steps are left, none once they are done; QUIET_TOTAL in all
    assert all(x in (0, got["each"]) for x in q), q
    assert q[2:] == sorted(q[2:], reverse=True), q
    assert sum(q) <= got["total"] + 1e-9, q
