"""`agentic-bash serve --sessions` through RemoteSandbox: concurrency, isolation, auth, TTL, restart."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest

from server_util import post_json, start_server

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

from agentic_bash.client import RemoteError, RemoteSandbox  # noqa: E402
from agentic_bash.errors import SandboxCrashed  # noqa: E402

KEY = "test-key-" + "x" * 20


@pytest.fixture(scope="module")
def virtual_server(tmp_path_factory):
    d = tmp_path_factory.mktemp("sessions")
    srv = start_server("--sessions", "--db", str(d / "s.db"), "--api-key", KEY, "-i", "virtual",
                       "--max-sessions", "200")
    yield srv
    srv.stop()


def _remote(srv, **kw):
    return RemoteSandbox(srv.url, api_key=KEY, **kw)


def test_fifty_concurrent_sessions_each_keep_their_own_state(virtual_server):
    n = 50
    barrier = threading.Barrier(n, timeout=60)

    def agent(i: int):
        with _remote(virtual_server, env={"WHO": f"agent{i}"}) as sb:
            barrier.wait()          # all 50 sessions are live at once
            sb.run(f"export N={i}; mkdir -p /workspace/d; cd /workspace/d")
            sb.write_file(f"mine-{i}.txt", f"from {i}")
            r = sb.run('echo "$WHO $N $(pwd)"; cat mine-*.txt; ls')
            others = [j for j in (i - 1, i + 1) if 0 <= j < n and sb.exists(f"/workspace/d/mine-{j}.txt")]
            return i, r.stdout, r.exit_code, others, sb.id

    with ThreadPoolExecutor(n) as ex:
        results = list(ex.map(agent, range(n)))
    assert len({sid for *_, sid in results}) == n
    for i, out, code, others, _ in results:
        assert code == 0
        assert out == f"agent{i} {i} /workspace/d\nfrom {i}mine-{i}.txt\n"
        assert others == []


def test_sessions_are_isolated_in_the_default_mode(tmp_path):
    srv = start_server("--sessions", "--db", str(tmp_path / "s.db"), "--api-key", KEY)
    try:
        with _remote(srv) as a, _remote(srv) as b:
            a.run("echo s3cret > /workspace/a.txt; echo t > /tmp/a.txt; export PRIV=a")
            assert b.run("cat /workspace/a.txt /tmp/a.txt; echo ${PRIV:-unset}").stdout == "unset\n"
            assert not b.exists("/workspace/a.txt") and not b.exists("/tmp/a.txt")
            assert a.read_file("/workspace/a.txt") == b"s3cret\n"
            ids = {s["id"] for s in json.loads(_get(srv, "/v1/sessions")[1])["sessions"]}
            assert {a.id, b.id} <= ids
            c = _remote(srv)
            c.close()
            running = {s["id"] for s in json.loads(_get(srv, "/v1/sessions?status=running")[1])["sessions"]}
            assert {a.id, b.id} <= running and c.id not in running
    finally:
        srv.stop()


def _get(srv, path, key=KEY):
    headers = {} if key is None else {"Authorization": f"Bearer {key}"}
    return srv.get(path, headers=headers)


def test_wrong_or_missing_key_is_401(virtual_server):
    with _remote(virtual_server) as sb:
        for key in (None, "", "wrong", KEY + "x", KEY[:-1]):
            for path in ("/v1/sessions", f"/v1/sessions/{sb.id}", f"/v1/sessions/{sb.id}/files?path=/etc/passwd"):
                status, _ = _get(virtual_server, path, key)
                assert status == 401, (key, path)
        status, body = post_json(virtual_server.url + f"/v1/sessions/{sb.id}/exec", {"command": "id"},
                                 headers={"Authorization": "Bearer wrong"})
        assert status == 401
        status, body = post_json(virtual_server.url + f"/v1/sessions/{sb.id}/exec", {"command": "id"},
                                 headers={"Authorization": "Basic " + KEY})
        assert status == 401
        assert _get(virtual_server, "/", None)[0] == 200            # health needs no key
        with pytest.raises(RemoteError) as ei:
            RemoteSandbox(virtual_server.url, api_key="nope")
        assert ei.value.status == 401
        assert sb.run("echo still").stdout == "still\n"


def test_bad_options_are_refused(virtual_server):
    for opts, status in (({"isolation": "none"}, 422), ({"limits": {"timeout": 10 ** 9}}, 422),
                         ({"limits": {"bogus": 1}}, 422), ({"colour": "red"}, 422),
                         ({"ttl": -1}, 422), ({"base": "/"}, 422), ({"from_session": "s-nope"}, 404)):
        st, body = post_json(virtual_server.url + "/v1/sessions", opts,
                             headers={"Authorization": f"Bearer {KEY}"})
        assert st == status, (opts, body)
    with _remote(virtual_server, limits={"timeout": 1.0}) as sb:
        r = sb.run("while :; do :; done")
        assert r.timed_out and r.exit_code == 124


def test_streamed_exec_delivers_output_before_the_result(virtual_server):
    with _remote(virtual_server) as sb:
        seen = []
        t0 = time.monotonic()
        for ev in sb.stream("echo one; echo err >&2; sleep 1; echo two"):
            seen.append((ev.kind, ev.data, time.monotonic() - t0, ev.result))
        kinds = [k for k, *_ in seen]
        assert kinds[-1] == "result" and kinds.count("result") == 1
        assert b"".join(d for k, d, *_ in seen if k == "stdout") == b"one\ntwo\n"
        assert b"".join(d for k, d, *_ in seen if k == "stderr") == b"err\n"
        first = next(t for k, d, t, _ in seen if d.startswith(b"one"))
        assert seen[-1][2] - first > 0.5            # it arrived while the command still ran
        out = []
        r = sb.run_stream("printf 'a\\nb\\n'", on_stdout=out.append)
        assert b"".join(out) == b"a\nb\n" and r.exit_code == 0


def test_ttl_expiry_and_leases_extended_by_activity(tmp_path):
    srv = start_server("--sessions", "--db", str(tmp_path / "s.db"), "--api-key", KEY, "-i", "virtual",
                       "--ttl", "1.5")
    try:
        busy = _remote(srv)
        idle = _remote(srv)
        t_end = time.monotonic() + 3.5
        while time.monotonic() < t_end:          # activity every 0.3 s keeps `busy` alive
            assert busy.run("echo hi").stdout == "hi\n"
            time.sleep(0.3)
        assert idle.status == "expired"
        assert busy.status == "running"
        with pytest.raises(RemoteError) as ei:
            idle.run("true")
        assert ei.value.status == 410
        busy.close()
    finally:
        srv.stop()


def test_restart_reconciles_sessions_and_resumes_from_the_last_snapshot(tmp_path):
    db = str(tmp_path / "s.db")
    srv = start_server("--sessions", "--db", db, "--api-key", KEY, "-i", "virtual")
    try:
        kept = _remote(srv)
        kept.run("export X=42; cd /tmp; echo data > /workspace/f")
        kept.snapshot()
        bare = _remote(srv)
        bare.run("export Y=1")
        kept_id, bare_id = kept.id, bare.id
    finally:
        os.killpg(srv.proc.pid, signal.SIGKILL)     # the server dies with its sandboxes
        srv.proc.wait(timeout=10)
        srv.stop()
    srv = start_server("--sessions", "--db", db, "--api-key", KEY, "-i", "virtual")
    try:
        rows = {s["id"]: s for s in json.loads(_get(srv, "/v1/sessions")[1])["sessions"]}
        assert rows[kept_id]["status"] == "crashed" and rows[kept_id]["restorable"] is True
        assert rows[bare_id]["status"] == "crashed" and rows[bare_id]["restorable"] is False
        assert "restarted" in rows[kept_id]["reason"]
        with pytest.raises(RemoteError) as ei:
            RemoteSandbox(srv.url, api_key=KEY, session_id=kept_id).run("true")
        assert ei.value.status == 410
        with RemoteSandbox.from_session(kept_id, url=srv.url, api_key=KEY) as again:
            assert again.run("echo $X; pwd; cat /workspace/f").stdout == "42\n/tmp\ndata\n"
        with pytest.raises(RemoteError) as ei:
            RemoteSandbox.from_session(bare_id, url=srv.url, api_key=KEY)
        assert ei.value.status == 409
    finally:
        srv.stop()


def test_a_crashed_session_sandbox_is_a_500_then_resumes(tmp_path):
    psutil = pytest.importorskip("psutil")
    srv = start_server("--sessions", "--db", str(tmp_path / "s.db"), "--api-key", KEY, "-i", "namespace")
    try:
        try:
            sb = _remote(srv)
        except RemoteError as e:
            pytest.skip(f"namespace isolation unavailable: {e}")
        sb.run("export KEEP=7; cd /tmp")
        sb.snapshot()
        holder = {}
        t = threading.Thread(target=lambda: holder.update(e=_catch(lambda: sb.run("sleep 747"))))
        t.start()
        victim = None
        deadline = time.monotonic() + 20
        while victim is None and time.monotonic() < deadline:
            for p in psutil.Process(srv.proc.pid).children(recursive=True):
                try:
                    if p.cmdline()[:2] == ["sleep", "747"]:
                        victim = p.parent()
                except psutil.Error:
                    pass
            time.sleep(0.1)
        assert victim is not None
        os.kill(victim.pid, signal.SIGKILL)
        t.join(30)
        assert isinstance(holder["e"], SandboxCrashed)
        r = sb.run("echo $KEEP; pwd")
        assert r.stdout == "7\n/tmp\n" and r.restarted is True and r.extra["restart_reason"]
        sb.close()
    finally:
        srv.stop()


def _catch(fn):
    try:
        return fn()
    except Exception as e:  # noqa: BLE001
        return e


def test_remote_sandbox_has_the_methods_of_sandbox(virtual_server):
    from agentic_bash import Sandbox
    public = {n for n in dir(Sandbox) if not n.startswith("_")}
    assert public - set(dir(RemoteSandbox)) == set()
    with _remote(virtual_server, env={"E": "1"}) as sb:
        sb.run("f() { echo fn; }; X=5; mkdir -p /workspace/d; ln -s d /workspace/l")
        assert sb.env["E"] == "1"
        assert sb.realpath("/workspace/l") == "/workspace/d"
        assert sb.network_log == []           # a virtual session has no proxy: nothing logged
        sb.tty_input("ignored")               # no run(tty=...) over the service: nothing to type at
        st = sb.get_state()
        assert "f" in json.dumps(st)
        sb.reset()
        assert sb.run("f; echo ${X:-none}").stdout == "none\n"
        sb.set_state(st)
        assert sb.run("f; echo $X").stdout == "fn\n5\n"
        holder = {}
        t = threading.Thread(target=lambda: holder.update(r=sb.run("sleep 30; echo done")))
        t.start()
        time.sleep(0.5)
        RemoteSandbox(virtual_server.url, api_key=KEY, session_id=sb.id).interrupt()
        t.join(20)
        assert not t.is_alive() and "done" not in holder["r"].stdout and holder["r"].exit_code != 0
        with pytest.raises(NotImplementedError):
            sb.register_command("x", lambda ctx, argv: 0)


def test_remote_sandbox_async_and_packages(virtual_server):
    import asyncio

    async def main():
        with _remote(virtual_server) as sb:
            r = await sb.arun("export A=3; echo $((A+1))")
            assert r.stdout == "4\n"
            kinds = [ev.kind async for ev in sb.astream("echo x; echo y >&2")]
            assert kinds[-1] == "result" and {"stdout", "stderr"} <= set(kinds)
            assert sb.packages == []
    asyncio.run(main())


def test_sessions_come_from_the_pool_when_one_is_configured(tmp_path):
    srv = start_server("--sessions", "--db", str(tmp_path / "s.db"), "--api-key", KEY, "-i", "virtual",
                       "--pool-size", "2")
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:      # the filler starts its sandboxes in the background
            with _remote(srv) as probe:
                if probe.info.get("pooled"):
                    break
            time.sleep(0.2)
        sbs = [_remote(srv) for _ in range(4)]
        sbs.append(_remote(srv, env={"OWN": "1"}))          # own options: never from the pool
        assert any(sb.info["pooled"] for sb in sbs[:4])
        assert sbs[-1].info["pooled"] is False
        for i, sb in enumerate(sbs):
            sb.run(f"echo {i} > /workspace/who")
        assert [sb.read_file("/workspace/who") for sb in sbs] == [f"{i}\n".encode() for i in range(5)]
        for sb in sbs:
            sb.close()
    finally:
        srv.stop()


def test_sigterm_snapshots_idle_sessions_for_the_next_server(tmp_path):
    db = str(tmp_path / "s.db")
    srv = start_server("--sessions", "--db", db, "--api-key", KEY, "-i", "virtual", "--max-body", "4096")
    try:
        sb = _remote(srv)
        sb.run("export KEPT=yes; cd /tmp; echo f > /workspace/f")
        with pytest.raises(RemoteError) as ei:
            sb.write_file("/workspace/big", b"x" * 5000)
        assert ei.value.status == 413
        sid = sb.id
    finally:
        srv.proc.terminate()                 # graceful: uvicorn stops, the manager snapshots
        srv.proc.wait(timeout=30)
        srv.stop()
    srv = start_server("--sessions", "--db", db, "--api-key", KEY, "-i", "virtual")
    try:
        row = json.loads(_get(srv, f"/v1/sessions/{sid}")[1])
        assert row["status"] == "stopped" and row["restorable"] is True
        with RemoteSandbox.from_session(sid, url=srv.url, api_key=KEY) as again:
            assert again.run("echo $KEPT; pwd; cat /workspace/f").stdout == "yes\n/tmp\nf\n"
    finally:
        srv.stop()


def test_a_session_cannot_reach_the_service_or_escape_its_network(tmp_path):
    # the server's own default is "host" so that the probe has a control that reaches it
    srv = start_server("--sessions", "--db", str(tmp_path / "s.db"), "--api-key", KEY, "-i", "namespace",
                       "--network", "host")
    try:
        port = srv.url.rsplit(":", 1)[1]
        probe = (f"(exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null && echo reached || echo refused")
        for net, want in ((None, "reached"), ("public", "refused"), ("deny", "refused"),
                          ({"allow": ["example.invalid"]}, "refused")):
            try:
                sb = _remote(srv, **({} if net is None else {"network": net}))
            except RemoteError as e:
                pytest.skip(f"namespace isolation unavailable: {e}")
            with sb:
                assert sb.run(probe, timeout=20).stdout == want + "\n", net
        for bad in ("everything", {"allow": "x"}, {"allow": ["a"], "more": []}, 7):
            st, body = post_json(srv.url + "/v1/sessions", {"network": bad},
                                 headers={"Authorization": f"Bearer {KEY}"})
            assert st == 422, (bad, body)
    finally:
        srv.stop()
