"""RuntimeHost and SessionManager without HTTP, over stand-in sandboxes (crash fallbacks, reaper)."""

from __future__ import annotations

import threading
import time

import pytest

from agentic_bash.errors import SandboxCrashed
from agentic_bash.server.runtime import RuntimeHost
from agentic_bash.server.sessions import ApiError, SessionManager


class FakeSandbox:
    made: list["FakeSandbox"] = []

    def __init__(self, **kw):
        self.kw = kw
        self.broken = False
        self.closed = False
        self.cwd = "/workspace"
        self.isolation_level = "virtual"
        FakeSandbox.made.append(self)

    @classmethod
    def from_snapshot(cls, data, **kw):
        sb = cls(**kw)
        sb.snap = data
        return sb

    def run(self, script, **kw):
        if self.broken:
            raise SandboxCrashed("gone")
        return script

    def interrupt(self):
        pass

    def close(self):
        self.closed = True


def test_runtime_host_replaces_a_sandbox_that_cannot_restart():
    FakeSandbox.made = []
    host = RuntimeHost(FakeSandbox)
    host.start()
    first = host.sandbox
    assert host.call(lambda sb: sb.run("a")).value == "a"
    first.broken = True
    with pytest.raises(SandboxCrashed):          # this call is the 500
        host.call(lambda sb: sb.run("b"))
    out = host.call(lambda sb: sb.run("c"))      # its own restart failed too: replaced, retried
    assert out.value == "c" and out.restarted == "gone"
    assert first.closed and host.sandbox is not first and len(FakeSandbox.made) == 2
    assert host.call(lambda sb: sb.run("d")).restarted is None


def test_session_manager_rebuilds_from_the_last_snapshot_and_reaps(tmp_path):
    FakeSandbox.made = []
    mgr = SessionManager(str(tmp_path / "s.db"), sandbox_cls=FakeSandbox, default_ttl=0.5,
                         reap_interval=3600)
    mgr.start()
    try:
        sid = mgr.create({})["id"]
        mgr._save_snapshot(sid, b"SNAP")
        sb = mgr._live[sid].sb
        sb.broken = True
        with pytest.raises(ApiError) as ei:
            mgr.call(sid, lambda s: s.run("x"))
        assert ei.value.status == 500
        value, restarted = mgr.call(sid, lambda s: s.run("y"))
        assert value == "y" and "last snapshot" in restarted
        assert mgr._live[sid].sb.snap == b"SNAP" and sb.closed

        busy = mgr.create({})["id"]
        idle = mgr.create({"ttl": 0.2})["id"]
        lock = mgr._live[busy].lock
        lock.acquire()                            # a call in progress
        try:
            time.sleep(0.6)
            reaped = mgr.reap()
        finally:
            lock.release()
        assert idle in reaped and busy not in reaped and sid in reaped
        assert mgr.store.get(idle).status == "expired" and mgr.store.get(busy).status == "running"
        with pytest.raises(ApiError) as ei:
            mgr.call(idle, lambda s: s.run("z"))
        assert ei.value.status == 410
    finally:
        mgr.close()


def test_session_manager_store_survives_and_reconciles(tmp_path):
    db = str(tmp_path / "s.db")
    a = SessionManager(db, sandbox_cls=FakeSandbox)
    a.start()
    sid = a.create({"env": {"K": "v"}})["id"]
    a._save_snapshot(sid, b"S")
    a._stop.set()                                 # a "crash": no close(), rows left running
    b = SessionManager(db, sandbox_cls=FakeSandbox)
    b.start()
    try:
        assert b.reconciled == [sid]
        row = b.store.get(sid)
        assert row.status == "crashed" and row.options == {"env": {"K": "v"}}
        again = b.create({"from_session": sid})
        assert b._live[again["id"]].sb.snap == b"S"
        assert b._live[again["id"]].sb.kw["env"]["K"] == "v"
    finally:
        b.close()
        a.pool.shutdown()
        a.store.close()


def test_session_manager_caps_live_sessions(tmp_path):
    mgr = SessionManager(str(tmp_path / "s.db"), sandbox_cls=FakeSandbox, max_sessions=2)
    mgr.start()
    try:
        first = mgr.create({})["id"]
        mgr.create({})
        with pytest.raises(ApiError) as ei:
            mgr.create({})
        assert ei.value.status == 429
        mgr.delete(first)
        assert mgr.create({})["status"] == "running"
    finally:
        mgr.close()


class SlowFake(FakeSandbox):
    def __init__(self, **kw):
        time.sleep(0.3)
        super().__init__(**kw)


def test_concurrent_creates_respect_the_cap(tmp_path):
    mgr = SessionManager(str(tmp_path / "s.db"), sandbox_cls=SlowFake, max_sessions=2)
    mgr.start()
    try:
        outcomes = []

        def one():
            try:
                outcomes.append(mgr.create({})["status"])
            except ApiError as e:
                outcomes.append(e.status)
        ts = [threading.Thread(target=one) for _ in range(5)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(10)
        assert sorted(map(str, outcomes)) == ["429", "429", "429", "running", "running"]
    finally:
        mgr.close()


def test_clients_get_the_host_network_only_if_the_server_has_it(tmp_path):
    for server_net, allowed in ((None, False), ("public", False), ("host", True)):
        defaults = {} if server_net is None else {"network": server_net}
        mgr = SessionManager(str(tmp_path / f"{server_net}.db"), sandbox_cls=FakeSandbox,
                             sandbox_defaults=defaults)
        try:
            for v in ("host", "allow"):
                if allowed:
                    assert mgr._kwargs({"network": v})["network"] == v
                else:
                    with pytest.raises(ApiError):
                        mgr._kwargs({"network": v})
            assert mgr._kwargs({"network": "deny"})["network"] == "deny"
            pol = mgr._kwargs({"network": {"allow": ["pypi.org", "*.pythonhosted.org"]}})["network"]
            assert pol.allow == ("pypi.org", "*.pythonhosted.org")
        finally:
            mgr.store.close()
            mgr.pool.shutdown()


class _HandOffLock:
    """A lock that, on its first release, lets a waiting "command" take it and hold it 5 s
    (a run that arrives between a file call's check and its call)."""

    def __init__(self):
        self._l = threading.Lock()
        self.first = True
        self.taken = threading.Event()

    def acquire(self, blocking=True, timeout=-1):
        return self._l.acquire(blocking, timeout)

    def release(self):
        self._l.release()
        if self.first:
            self.first = False

            def command():
                with self._l:
                    self.taken.set()
                    time.sleep(5)
            threading.Thread(target=command, daemon=True).start()
            self.taken.wait(5)

    def __enter__(self):
        self._l.acquire()
        return self

    def __exit__(self, *a):
        self.release()


def test_a_file_call_on_an_idle_session_does_not_wait_for_a_command_that_arrives_after_it(tmp_path):
    mgr = SessionManager(str(tmp_path / "s.db"), sandbox_cls=FakeSandbox, reap_interval=3600)
    mgr.start()
    try:
        sid = mgr.create({})["id"]
        mgr._live[sid].lock = _HandOffLock()
        t0 = time.monotonic()
        got = mgr.files_op(sid, "/workspace/f", lambda sb, p: "read", lambda *a: NotImplemented)
        # before: the idle check released the lock and took it again, and the command that
        # came in between ran first (conform11's serve test: the call waited 30 s and failed)
        assert got == "read" and time.monotonic() - t0 < 4
    finally:
        mgr.close()


@pytest.mark.parametrize("server, asked, ok", [
    ("deny", "public", False), ("deny", {"allow": ["pypi.org"]}, False), ("deny", "deny", True),
    (None, "public", True), (None, "deny", True), (None, {"allow": ["pypi.org"]}, True),
    (None, "host", False), ("public", "host", False), ("host", "public", True),
    ("allowlist", "public", False), ("allowlist", {"allow": ["example.com"]}, False),
    ("allowlist", {"allow": ["pypi.org"]}, True), ("allowlist", "deny", True),
])
def test_a_session_network_is_never_wider_than_the_servers(tmp_path, server, asked, ok):
    from agentic_bash.network import NetworkPolicy
    defaults = {}
    if server == "allowlist":
        defaults["network"] = NetworkPolicy(allow=["pypi.org"])
    elif server is not None:
        defaults["network"] = server
    mgr = SessionManager(str(tmp_path / "s.db"), sandbox_cls=FakeSandbox, reap_interval=3600,
                         sandbox_defaults=defaults)
    try:
        if ok:
            mgr._kwargs({"network": asked})
        else:
            # before: a client widened a server's "deny" to "public" (attack12's note)
            with pytest.raises(ApiError) as ei:
                mgr._kwargs({"network": asked})
            assert ei.value.status == 422 and "network" in str(ei.value)
    finally:
        mgr.close()
