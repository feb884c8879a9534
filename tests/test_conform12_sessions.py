"""`serve --sessions`: file calls beside a running command at the virtual and landlock levels (and delete at every level)."""

from __future__ import annotations

import threading
import time

import pytest

from server_util import poll as _poll, start_server

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")
requests = pytest.importorskip("requests")

KEY = "k-conform12"


def _levels() -> list[str]:
    from agentic_bash.isolation.probe import probe
    caps = probe()
    out = ["virtual"]
    if getattr(caps, "landlock_abi", 0) > 0:
        out.append("landlock")
    if caps.user_namespace and caps.mount_namespace and caps.overlay_userns:
        out.append("namespace")
    return out


def _api(srv, method, path, **kw):
    kw.setdefault("timeout", 60)
    return requests.request(method, srv.url + path, headers={"Authorization": f"Bearer {KEY}"}, **kw)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    db = tmp_path_factory.mktemp("sessions") / "s.db"
    srv = start_server("--sessions", "--db", str(db), "--api-key", KEY, "-i", "virtual")
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def landlock_server(tmp_path_factory):
    # (attack12) a client may ask for landlock only of a server whose operator chose it
    db = tmp_path_factory.mktemp("sessions-ll") / "s.db"
    srv = start_server("--sessions", "--db", str(db), "--api-key", KEY, "-i", "landlock")
    yield srv
    srv.stop()


def _server_for(request, level):
    return request.getfixturevalue("landlock_server" if level == "landlock" else "server")


@pytest.mark.parametrize("level", _levels())
def test_file_calls_do_not_wait_for_the_running_command(request, level):
    srv = _server_for(request, level)
    made = _api(srv, "POST", "/v1/sessions", json={"isolation": level})
    assert made.status_code in (200, 201), made.text
    sid = made.json()["id"]
    base = f"/v1/sessions/{sid}"
    try:
        r = _api(srv, "POST", base + "/exec", json={"command": "mkdir -p sub; echo pre > sub/pre.txt; "
                                                              "echo gone > sub/del.txt; mkdir -p sub/tree/x"})
        assert r.json()["exit_code"] == 0, r.text
        done = {}
        # the command ends only when the file `go` appears: written below, through the API
        t = threading.Thread(target=lambda: done.update(r=_api(srv, "POST", base + "/exec", json={
            "command": "touch started; while [ ! -e go ]; do sleep 0.05; done; cat go; ls sub"},
            timeout=120).json()))
        t.start()

        def started():
            try:
                return _api(srv, "GET", base + "/files/exists", params={"path": "started"},
                            timeout=20).json()["exists"]
            except requests.Timeout:
                pytest.fail(f"{level}: a file call waited for the running command")
        assert _poll(started)
        assert t.is_alive()
        t0 = time.monotonic()
        assert _api(srv, "GET", base + "/files", params={"path": "sub/pre.txt"}, timeout=20).content == b"pre\n"
        names = {e["name"] for e in _api(srv, "GET", base + "/files/list", params={"path": "sub"},
                                         timeout=20).json()}
        assert names == {"pre.txt", "del.txt", "tree"}
        assert _api(srv, "DELETE", base + "/files", params={"path": "sub/del.txt"}, timeout=20).status_code == 204
        assert _api(srv, "DELETE", base + "/files", params={"path": "sub/tree", "recursive": "true"},
                    timeout=20).status_code == 204
        assert _api(srv, "GET", base + "/files/exists", params={"path": "sub/del.txt"},
                    timeout=20).json()["exists"] is False
        assert t.is_alive(), "the command ended before `go` was written"
        assert time.monotonic() - t0 < 15
        assert _api(srv, "PUT", base + "/files", params={"path": "go"}, data=b"went\n",
                    timeout=20).status_code == 204
        t.join(60)
        assert done["r"]["stdout"] == "went\npre.txt\n"
    finally:
        _api(srv, "DELETE", f"/v1/sessions/{sid}")


@pytest.mark.parametrize("level", [lv for lv in _levels() if lv != "virtual"])
def test_a_link_out_of_the_workdir_is_never_followed_by_the_host(request, level):
    srv = _server_for(request, level)
    sid = _api(srv, "POST", "/v1/sessions", json={"isolation": level}).json()["id"]
    base = f"/v1/sessions/{sid}"
    try:
        r = _api(srv, "POST", base + "/exec", json={"command": "ln -s /etc out; ln -s /etc/hostname host"})
        assert r.json()["exit_code"] == 0, r.text
        done = {}
        t = threading.Thread(target=lambda: done.update(r=_api(srv, "POST", base + "/exec", json={
            "command": "touch started; while [ ! -e go ]; do sleep 0.05; done; echo ok"},
            timeout=120).json()))
        t.start()
        assert _poll(lambda: _api(srv, "GET", base + "/files/exists", params={"path": "started"},
                                  timeout=20).json()["exists"])
        # a write through a link out of the workdir is the Sandbox's call: it waits for the
        # command, and then the sandbox's own rules decide (never the host's view of /etc)
        w = {}
        writer = threading.Thread(target=lambda: w.update(r=_api(srv, "PUT", base + "/files",
                                                                 params={"path": "out/agb-c12"},
                                                                 data=b"x", timeout=120)))
        writer.start()
        time.sleep(0.5)
        assert writer.is_alive(), "a write through a link out of the workdir did not wait"
        assert _api(srv, "PUT", base + "/files", params={"path": "go"}, data=b"1", timeout=20).status_code == 204
        t.join(60)
        writer.join(60)
        assert done["r"]["stdout"] == "ok\n"
        import os
        assert not os.path.exists("/etc/agb-c12")
        if level == "landlock":
            assert w["r"].status_code >= 400      # Landlock refuses /etc
        else:
            # the sandbox's own /etc (its copy-on-write root) took it; the host's did not
            assert w["r"].status_code == 204
            r = _api(srv, "POST", base + "/exec", json={"command": "cat /etc/agb-c12"})
            assert r.json()["stdout"] == "x"
    finally:
        _api(srv, "DELETE", f"/v1/sessions/{sid}")
