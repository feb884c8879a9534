"""`agentic-bash serve` against upstream's runtime (examples/python-runtime-sandbox/main.py)
as its clients see it: the official client, and the JSON its FastAPI app answers errors with."""

from __future__ import annotations

import pytest

from bashdiff import bash_c
from server_util import k8s_sdk, post_json, start_server

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")
requests = pytest.importorskip("requests")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    srv = start_server("--base-dir", str(tmp_path_factory.mktemp("app")), "-i", "virtual")
    yield srv
    srv.stop()


def test_an_empty_command_is_0_not_the_status_of_the_command_before(server):
    sb = k8s_sdk(server.url)
    try:
        assert sb.commands.run("nosuchcommand-c10").exit_code == 127
        for nothing in ("", "   ", "# just a comment", "\n\n"):
            r = sb.commands.run(nothing)
            assert (r.exit_code, r.stdout, r.stderr) == (0, "", ""), repr(nothing)
        assert sb.commands.run("false").exit_code == 1
        assert sb.commands.run("echo $?").stdout == "1\n"      # $? still carries over
    finally:
        sb.close_connection()


@pytest.mark.bash
@pytest.mark.parametrize("script", [
    "false; . ./empty; echo $?",
    "false; . ./comment; echo $?",
    "false; eval '# c'; echo $?",
    "false; eval ''; echo $?",
    "false; x=$(); echo $?",
    "false; x=$(# c\n); echo $?",
])
def test_sourcing_or_evaluating_nothing_is_status_0_as_in_bash(tmp_path, script):
    from agentic_bash import Sandbox
    (tmp_path / "empty").write_text("")
    (tmp_path / "comment").write_text("# nothing here\n")
    want = bash_c(script, str(tmp_path))
    with Sandbox(isolation="virtual", mounts={"/w": (str(tmp_path), "ro")}, workdir="/w") as sb:
        r = sb.run(script)
    assert (r.stdout, r.exit_code) == (want[0], want[2])


@pytest.mark.parametrize("method,path,status", [
    ("GET", "/nope", 404), ("GET", "/download", 404), ("GET", "/execute", 405),
    ("POST", "/", 405), ("PUT", "/upload", 405)])
def test_unknown_paths_and_methods_answer_json_like_upstream(server, method, path, status):
    r = requests.request(method, server.url + path, timeout=30)
    assert r.status_code == status
    assert r.headers["content-type"].startswith("application/json")
    assert r.json() == {"detail": "Not Found" if status == 404 else "Method Not Allowed"}
    if status == 405:
        assert r.headers.get("allow")


@pytest.mark.parametrize("body,loc", [
    ({}, ["body", "command"]), ({"command": 5}, ["body", "command"]), (["echo"], ["body"]),
    ({"command": "true", "timeout_seconds": 0}, ["body", "timeout_seconds"])])
def test_invalid_execute_bodies_are_422_with_upstreams_detail_list(server, body, loc):
    st, r = post_json(server.url + "/execute", body)
    assert st == 422
    assert r["message"] and [d["loc"] for d in r["detail"]] == [loc]


def test_an_upload_without_a_file_is_422_with_upstreams_detail_list(server):
    r = requests.post(server.url + "/upload", files={"other": ("a.txt", b"A")}, timeout=30)
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "file"]


@pytest.mark.parametrize("signum", [15, 1])
def test_a_signal_during_a_command_answers_it_and_stops_cleanly(tmp_path, signum):
    import glob
    import os
    import threading
    import time
    psutil = pytest.importorskip("psutil")
    srv = start_server("--base-dir", str(tmp_path))
    try:
        st, r = post_json(srv.url + "/execute", {"command": "sleep 300 & echo started"})
        assert r["stdout"] == "started\n"
        held: dict = {}
        t = threading.Thread(target=lambda: held.update(r=post_json(srv.url + "/execute",
                                                                    {"command": "sleep 301"})))
        t.start()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not any(
                "301" in " ".join(p.cmdline()) for p in psutil.Process(srv.proc.pid).children(recursive=True)
                if p.is_running()):
            time.sleep(0.1)
        kids = psutil.Process(srv.proc.pid).children(recursive=True)
        dirs = [d for d in glob.glob("/tmp/agentic-bash-*") + glob.glob("/dev/shm/agentic-bash-*")
                if f"-{srv.proc.pid}-" in os.path.basename(d)]
        srv.proc.send_signal(signum)
        try:
            rc = srv.proc.wait(timeout=40)     # k8s waits 30 s before SIGKILL; we take ~3
        except Exception:
            rc = None
        t.join(30)
        assert rc == 128 + signum, srv.output()[-2000:]
        status, body = held["r"]                # the request in flight got an answer
        assert status == 200 and body["exit_code"] != 0 and body["timed_out"] is False
        assert "Traceback" not in srv.output()
        _, alive = psutil.wait_procs(kids, timeout=15)
        assert alive == []
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and any(os.path.exists(d) for d in dirs):
            time.sleep(0.1)
        assert not any(os.path.exists(d) for d in dirs)
    finally:
        srv.stop()
