"""`agentic-bash serve` with real clients that time out, queue, crowd in, restart or stop it."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from server_util import k8s_sdk, poll, post_json, start_server

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")
requests = pytest.importorskip("requests")
pytest.importorskip("k8s_agent_sandbox")


def _level() -> str:
    from agentic_bash.isolation.probe import probe
    caps = probe()
    return "namespace" if caps.user_namespace and caps.mount_namespace and caps.overlay_userns else "virtual"


@pytest.fixture(scope="module", params=["virtual", _level()])
def served(request, tmp_path_factory):
    base = tmp_path_factory.mktemp("app")
    srv = start_server("--base-dir", str(base), "-i", request.param)
    yield srv, base
    srv.stop()


def test_a_client_that_times_out_stops_its_command_and_the_next_call_runs_at_once(served):
    srv, base = served
    sb = k8s_sdk(srv.url)
    try:
        with pytest.raises(Exception, match="(?i)timed out|failed to communicate"):
            sb.commands.run("sleep 120; echo late > late.txt", timeout=2)
        t0 = time.monotonic()
        r = sb.commands.run("echo next", timeout=60)
        assert r.stdout == "next\n"
        # before: this call waited for the abandoned `sleep 120` (and so timed out too)
        assert time.monotonic() - t0 < 30
        assert not (base / "late.txt").exists()
    finally:
        sb.close_connection()


def test_a_queued_call_whose_client_left_never_runs(served):
    srv, base = served
    first = {}
    t = threading.Thread(target=lambda: first.update(r=post_json(
        srv.url + "/execute", {"command": "touch started; while [ ! -e release ]; do sleep 0.05; done; "
                                      "rm -f started; echo first"},
        timeout=120)))
    t.start()
    sb = k8s_sdk(srv.url)
    try:
        assert poll(lambda: (base / "started").exists())    # the first command holds the session
        with pytest.raises(Exception, match="(?i)timed out|failed to communicate"):
            sb.commands.run("echo queued > queued.txt", timeout=1)
        (base / "release").write_text("")        # (the file API is not blocked either)
        t.join(60)
        assert first["r"][1]["stdout"] == "first\n"
        r = sb.commands.run("ls queued.txt 2>&1; rm -f release", timeout=60)
        assert "No such file" in r.stdout
    finally:
        sb.close_connection()


def test_concurrent_clients_each_get_their_own_answer(served):
    srv, base = served
    errors = []

    def client(i):
        sb = k8s_sdk(srv.url)
        try:
            for j in range(3):
                r = sb.commands.run(f"echo c{i}-{j}; echo e{i} >&2; exit {i}", timeout=120)
                if (r.stdout, r.stderr, r.exit_code) != (f"c{i}-{j}\n", f"e{i}\n", i):
                    errors.append((i, j, r))
                data = os.urandom(1000 + i)
                sb.files.write(f"conc/{i}-{j}.bin", data, timeout=120)
                if sb.files.read(f"conc/{i}-{j}.bin", timeout=120) != data:
                    errors.append((i, j, "file"))
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append((i, repr(e)))
        finally:
            sb.close_connection()
    ts = [threading.Thread(target=client, args=(i,)) for i in range(6)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(300)
    assert not errors, errors[:5]
    assert len(os.listdir(base / "conc")) == 18


def test_sigterm_during_a_command_and_an_upload_ends_quickly_and_leaves_nothing(tmp_path):
    psutil = pytest.importorskip("psutil")
    base = tmp_path / "app"
    srv = start_server("--base-dir", str(base), "-i", _level())
    try:
        kids = psutil.Process(srv.proc.pid).children(recursive=True)
        got = {}
        t = threading.Thread(target=lambda: got.update(r=post_json(
            srv.url + "/execute", {"command": "sleep 60; echo late"}, timeout=60)))
        t.start()

        def slow_body():
            yield (b"--B\r\nContent-Disposition: form-data; name=\"file\"; filename=\"partial.bin\"\r\n\r\n")
            for _ in range(200):
                yield b"x" * 4096
                time.sleep(0.05)
        u = threading.Thread(target=lambda: got.update(u=_quiet_post(
            srv.url + "/upload", slow_body(), {"content-type": "multipart/form-data; boundary=B"})))
        u.start()
        time.sleep(1.0)
        t0 = time.monotonic()
        srv.proc.send_signal(signal.SIGTERM)
        assert srv.proc.wait(timeout=30) == 128 + signal.SIGTERM
        assert time.monotonic() - t0 < 15
        t.join(30)
        u.join(30)
        # the command's client got an answer (interrupted), not a hang
        assert "r" in got and "late" not in str(got["r"])
        gone, alive = psutil.wait_procs(kids, timeout=15)
        assert alive == []
        assert not (base / "partial.bin").exists()
        assert not [p for p in os.listdir(base) if ".agb-" in p]
    finally:
        srv.stop()


def _quiet_post(url, data, headers):
    try:
        return requests.post(url, data=data, headers=headers, timeout=60).status_code
    except requests.RequestException as e:
        return repr(e)


def test_files_survive_a_server_restart_and_a_new_server_serves_them(tmp_path):
    base = tmp_path / "app"
    srv = start_server("--base-dir", str(base), "-i", "virtual")
    try:
        sb = k8s_sdk(srv.url)
        sb.files.write("keep/me.txt", b"kept")
        assert sb.commands.run("X=1; echo $X").stdout == "1\n"
        sb.close_connection()
    finally:
        srv.stop()
    srv = start_server("--base-dir", str(base), "-i", "virtual")
    try:
        sb = k8s_sdk(srv.url)
        assert sb.files.read("keep/me.txt") == b"kept"
        assert sb.commands.run("cat keep/me.txt; echo \"[$X]\"").stdout == "kept[]\n"   # a new shell
        sb.close_connection()
    finally:
        srv.stop()


# ------------------------------------------------------------------ --sessions
KEY = "conform11-key-" + "y" * 16


@pytest.fixture(scope="module")
def sessions_server(tmp_path_factory):
    d = tmp_path_factory.mktemp("sessions")
    srv = start_server("--sessions", "--db", str(d / "s.db"), "--api-key", KEY, "-i", "virtual")
    yield srv
    srv.stop()


def _api(srv, method, path, **kw):
    return requests.request(method, srv.url + path, headers={"authorization": f"Bearer {KEY}"},
                            timeout=kw.pop("timeout", 60), **kw)


def test_sessions_exec_whose_client_times_out_is_interrupted(sessions_server):
    srv = sessions_server
    sid = _api(srv, "POST", "/v1/sessions", json={}).json()["id"]
    with pytest.raises(requests.RequestException):
        _api(srv, "POST", f"/v1/sessions/{sid}/exec", json={"command": "sleep 120; touch late"}, timeout=2)
    t0 = time.monotonic()
    r = _api(srv, "POST", f"/v1/sessions/{sid}/exec", json={"command": "echo next; ls late 2>&1"}).json()
    assert r["stdout"].startswith("next\n") and "No such file" in r["stdout"]
    assert time.monotonic() - t0 < 30
    # a streamed exec whose reader hangs up mid-stream: interrupted as well
    with _api(srv, "POST", f"/v1/sessions/{sid}/exec", json={
            "command": "echo first; sleep 120; touch late2", "stream": True}, stream=True) as resp:
        for line in resp.iter_lines():
            if line.startswith(b"event: stdout"):
                break
    t0 = time.monotonic()
    r = _api(srv, "POST", f"/v1/sessions/{sid}/exec", json={"command": "echo again; ls late2 2>&1"}).json()
    assert r["stdout"].startswith("again\n") and "No such file" in r["stdout"]
    assert time.monotonic() - t0 < 30


def test_sessions_wrong_ids_and_a_deleted_session(sessions_server):
    srv = sessions_server
    assert _api(srv, "POST", "/v1/sessions/nope/exec", json={"command": "true"}).status_code == 404
    assert _api(srv, "GET", "/v1/sessions/nope").status_code == 404
    assert _api(srv, "GET", "/v1/sessions/nope/files", params={"path": "/x"}).status_code == 404
    assert _api(srv, "POST", "/v1/sessions/%2e%2e/exec", json={"command": "true"}).status_code == 404
    sid = _api(srv, "POST", "/v1/sessions", json={}).json()["id"]
    assert _api(srv, "DELETE", f"/v1/sessions/{sid}").status_code == 204
    assert _api(srv, "POST", f"/v1/sessions/{sid}/exec", json={"command": "true"}).status_code == 410
    assert _api(srv, "POST", f"/v1/sessions/{sid}/exec", json={"command": "true", "stream": True}).status_code == 410


def test_sessions_file_calls_in_the_workdir_do_not_wait_for_a_running_command(tmp_path):
    if _level() != "namespace":
        pytest.skip("the direct path serves namespace sandboxes only")
    srv = start_server("--sessions", "--db", str(tmp_path / "s.db"), "--api-key", KEY, "-i", "namespace")
    try:
        sid = _api(srv, "POST", "/v1/sessions", json={}).json()["id"]
        base = f"/v1/sessions/{sid}"
        r = _api(srv, "POST", base + "/exec", json={"command": "mkdir -p sub; echo pre > sub/pre.txt; "
                                                              "ln -s pre.txt sub/in; ln -s /etc/hostname sub/out"})
        assert r.json()["exit_code"] == 0
        done = {}
        t = threading.Thread(target=lambda: done.update(r=_api(srv, "POST", base + "/exec", json={
            "command": "touch started; while [ ! -e go ]; do sleep 0.05; done; cat go"}, timeout=120).json()))
        t.start()
        def started():
            try:
                return _api(srv, "GET", base + "/files/exists", params={"path": "started"},
                            timeout=30).json()["exists"]
            except requests.Timeout:
                pytest.fail("a file call in the workdir waited for the running command")
        assert poll(started)
        assert t.is_alive()
        assert _api(srv, "GET", base + "/files", params={"path": "/workspace/sub/in"}).content == b"pre\n"
        listed = {e["name"]: e["type"] for e in _api(srv, "GET", base + "/files/list", params={"path": "sub"}).json()}
        assert listed == {"in": "symlink", "out": "symlink", "pre.txt": "file"}
        # a link out of the workdir is the Sandbox's business: that call waits for the command
        # and then reads the sandbox's file, never the host's
        late = {}
        w = threading.Thread(target=lambda: late.update(r=_api(srv, "GET", base + "/files",
                                                                 params={"path": "sub/out"}, timeout=120)))
        w.start()
        time.sleep(0.5)
        assert w.is_alive() and t.is_alive()
        assert _api(srv, "PUT", base + "/files", params={"path": "go"}, data=b"went\n").status_code == 204
        t.join(60)
        w.join(60)
        assert done["r"]["stdout"] == "went\n"
        assert late["r"].status_code == 200 and late["r"].content == b"sandbox\n"
    finally:
        srv.stop()
