"""`agentic-bash serve`: the agent-sandbox runtime contract, driven by the official client."""

from __future__ import annotations

import asyncio
import os
import threading
import time
import urllib.parse

import pytest

from server_util import post_json, start_server

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")
requests = pytest.importorskip("requests")


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    return tmp_path_factory.mktemp("app")


@pytest.fixture(scope="module")
def server(base):
    srv = start_server("--base-dir", str(base), "--max-output", "4096")
    yield srv
    srv.stop()


class _StandInK8s:
    """What the SDK asks its k8s helper for, answered without a cluster (no pod IP, so the
    client talks to api_url only)."""

    injected_api_client = None

    def get_sandbox(self, name, namespace):
        return {"metadata": {"name": name}, "status": {}}

    def delete_sandbox_claim(self, name, namespace):
        pass


class _AsyncStandInK8s(_StandInK8s):
    async def get_sandbox(self, name, namespace):
        return {"metadata": {"name": name}, "status": {}}

    async def delete_sandbox_claim(self, name, namespace):
        pass


def _sdk(server):
    pytest.importorskip("k8s_agent_sandbox")
    from k8s_agent_sandbox.models import SandboxDirectConnectionConfig
    from k8s_agent_sandbox.sandbox import Sandbox
    return Sandbox(claim_name="claim", sandbox_id="sb-1", namespace="default",
                       connection_config=SandboxDirectConnectionConfig(api_url=server.url),
                       k8s_helper=_StandInK8s())


# ------------------------------------------------------------- upstream tester.py's checks
def test_upstream_tester_checks(server):
    url = server.url
    r = requests.get(f"{url}/")
    assert r.status_code == 200 and r.json()["status"] == "ok"

    r = requests.post(f"{url}/execute", json={"command": "echo 'hello world'"})
    assert r.status_code == 200 and r.json()["stdout"] == "hello world\n"

    r = requests.get(f"{url}/list/.")
    assert r.status_code == 200 and isinstance(r.json(), list)

    r = requests.get(f"{url}/exists/.")
    assert r.json() == {"path": "", "exists": True}
    r = requests.get(f"{url}/exists/does_not_exist")
    assert r.json() == {"path": "does_not_exist", "exists": False}

    for unsafe in ("../../etc/passwd", "/../etc/passwd"):
        r = requests.get(f"{url}/exists/{urllib.parse.quote(unsafe, safe='')}")
        assert r.status_code == 403 and r.json()["message"] == "Access denied"

    content = b"Hello world from upload test"
    r = requests.post(f"{url}/upload", files={"file": ("test_upload.txt", content)})
    assert r.status_code == 200 and "uploaded successfully" in r.json()["message"]
    assert requests.get(f"{url}/exists/test_upload.txt").json()["exists"] is True
    assert requests.get(f"{url}/download/test_upload.txt").content == content
    r = requests.post(f"{url}/execute", json={"command": "rm test_upload.txt"})
    assert r.json()["exit_code"] == 0
    assert requests.get(f"{url}/exists/test_upload.txt").json()["exists"] is False

    r = requests.post(f"{url}/upload", files={"file": ("../../unsafe_upload.txt", b"x")})
    assert r.status_code == 403 and "Access denied" in r.json()["message"]


# ------------------------------------------------------------- the official sync client
def test_official_client_run_is_bash_with_a_persistent_session(server):
    sb = _sdk(server)
    try:
        r = sb.commands.run("pwd; mkdir -p work && cd work && export GREETING=hi; f() { echo fn:$1; }")
        assert (r.stdout, r.exit_code) == ("/app\n", 0)
        r = sb.commands.run('echo "$GREETING $(pwd)" | tr a-z A-Z; f 7; for i in 1 2; do echo $i; done')
        assert r.stdout == "HI /APP/WORK\nfn:7\n1\n2\n"
        r = sb.commands.run("echo oops >&2; (exit 3)")
        assert (r.stderr, r.exit_code, r.timed_out) == ("oops\n", 3, False)
        r = sb.commands.run("nosuchcommand-xyz")
        assert r.exit_code == 127 and "not found" in r.stderr
        sb.commands.run("cd /app")
    finally:
        sb.close_connection()


def test_official_client_files(server, base):
    sb = _sdk(server)
    try:
        sb.files.write("data/in put.csv", b"a,b\n1,2\n")
        sb.files.write("notes.txt", "text\n")
        assert sb.files.read("data/in put.csv") == b"a,b\n1,2\n"
        assert (base / "data" / "in put.csv").read_bytes() == b"a,b\n1,2\n"   # the volume
        assert sb.commands.run("cat 'data/in put.csv' | wc -l").stdout.strip() == "2"
        sb.commands.run("printf made > data/made.txt; ln -sfn data linkdir; ln -sf notes.txt linkfile")
        assert sb.files.read("data/made.txt") == b"made"
        names = {e.name: e for e in sb.files.list("data")}
        assert set(names) == {"in put.csv", "made.txt"} and names["made.txt"].size == 4
        top = {e.name: e.type for e in sb.files.list(".")}
        assert top["data"] == "directory" and top["notes.txt"] == "file"
        assert top["linkdir"] == "directory" and top["linkfile"] == "file"   # symlinks as targets
        assert sb.files.exists("data/made.txt") and not sb.files.exists("data/nope")
        import io
        blob = bytes(range(256)) * 4096                      # 1 MiB, every byte value
        sb.files.write("data/stream.bin", io.BytesIO(blob))  # the SDK's chunked multipart upload
        assert sb.files.read("data/stream.bin") == blob
        sink = io.BytesIO()
        assert sb.files.read_to("data/stream.bin", sink) == len(blob) and sink.getvalue() == blob
        with pytest.raises(Exception) as ei:
            sb.files.read("data/nope")
        assert getattr(ei.value, "status_code", None) == 404
    finally:
        sb.close_connection()


def test_official_client_timeouts(server):
    sb = _sdk(server)
    try:
        t0 = time.monotonic()
        r = sb.commands.run("echo before; sleep 30; echo after", command_timeout=1)
        assert r.timed_out is True and r.exit_code != 0
        assert "after" not in r.stdout
        assert time.monotonic() - t0 < 20
        assert sb.commands.run("echo alive").stdout == "alive\n"
    finally:
        sb.close_connection()


def test_official_async_client(server):
    pytest.importorskip("k8s_agent_sandbox")
    pytest.importorskip("httpx")
    from k8s_agent_sandbox.async_sandbox import AsyncSandbox
    from k8s_agent_sandbox.models import SandboxDirectConnectionConfig

    async def main():
        sb = AsyncSandbox(claim_name="claim", sandbox_id="sb-2", namespace="default",
                              connection_config=SandboxDirectConnectionConfig(api_url=server.url),
                              k8s_helper=_AsyncStandInK8s())
        try:
            r = await sb.commands.run("export N=5; echo $((N*2))")
            assert r.stdout == "10\n"
            assert (await sb.commands.run("echo $N")).stdout == "5\n"
            await sb.files.write("async/one.txt", b"1")
            assert await sb.files.read("async/one.txt") == b"1"
            assert [e.name for e in await sb.files.list("async")] == ["one.txt"]
            assert await sb.files.exists("async/one.txt")
            assert not await sb.files.exists("async/two.txt")
            assert any(e.name == "async" for e in await sb.files.list(""))   # bare /list/
            r = await sb.commands.run("sleep 20", command_timeout=1)
            assert r.timed_out
        finally:
            await sb.close_connection()
    asyncio.run(main())


# ------------------------------------------------------------- the contract's corners
def test_paths_percent_decoding_bare_routes_and_symlink_escape(server, base):
    url = server.url
    (base / "odd").mkdir(exist_ok=True)
    (base / "odd" / "a%20b c.txt").write_bytes(b"odd")
    q = urllib.parse.quote("odd/a%20b c.txt", safe="")
    assert requests.get(f"{url}/download/{q}").content == b"odd"   # decoded once, not twice
    assert requests.get(f"{url}/list").status_code == 200
    assert requests.get(f"{url}/exists").json() == {"path": "", "exists": True}
    # a symlink pointing outside /app is refused like '..'
    post_json(f"{url}/execute", {"command": "ln -sfn /etc escape; ln -sf /etc/passwd pw"})
    for p in ("escape/passwd", "pw", "escape"):
        r = requests.get(f"{url}/download/{urllib.parse.quote(p, safe='')}")
        assert r.status_code == 403, p
    assert requests.get(f"{url}/list/escape").status_code == 403
    r = requests.post(f"{url}/upload", files={"file": ("escape/x.txt", b"x")})
    assert r.status_code == 403
    assert requests.get(f"{url}/download/nope.txt").status_code == 404
    assert requests.get(f"{url}/list/notes-missing").json() == {"message": "Path is not a directory"}
    # headers the agent-sandbox router adds are tolerated
    r = requests.get(f"{url}/exists/odd", headers={"X-Sandbox-ID": "x", "X-Sandbox-Namespace": "n",
                                                   "X-Sandbox-Port": "8888"})
    assert r.json()["exists"] is True
    assert requests.post(f"{url}/execute", json={}).status_code == 422
    assert requests.post(f"{url}/execute", json={"command": "true", "timeout_seconds": -1}).status_code == 422


def test_huge_output_is_cut_head_and_tail(server):
    st, r = post_json(server.url + "/execute",
                      {"command": "echo FIRST; head -c 100000 /dev/zero | tr '\\0' x; echo; echo LAST"})
    assert st == 200 and r["truncated"] is True
    assert r["stdout"].startswith("FIRST\n") and r["stdout"].endswith("LAST\n")
    assert "bytes elided" in r["stdout"] and len(r["stdout"]) < 5000


def test_health_answers_while_a_command_runs(server):
    done = {}
    t = threading.Thread(target=lambda: done.update(r=post_json(server.url + "/execute",
                                                                {"command": "sleep 3; echo slept"})))
    t.start()
    time.sleep(0.5)
    t0 = time.monotonic()
    status, _ = server.get("/", timeout=5)
    waited = time.monotonic() - t0
    t.join(30)
    assert status == 200 and waited < 2.0
    assert done["r"][1]["stdout"] == "slept\n"


def test_a_sandbox_crash_is_a_500_then_service_goes_on(server):
    psutil = pytest.importorskip("psutil")
    post_json(server.url + "/execute", {"command": "export KEEP=1"})
    holder = {}
    t = threading.Thread(target=lambda: holder.update(r=post_json(server.url + "/execute",
                                                                  {"command": "sleep 737"})))
    t.start()
    victim = None
    deadline = time.monotonic() + 20
    while victim is None and time.monotonic() < deadline:
        for p in psutil.Process(server.proc.pid).children(recursive=True):
            try:
                if p.cmdline()[:2] == ["sleep", "737"]:
                    victim = p.parent()
            except psutil.Error:
                pass
        time.sleep(0.1)
    if victim is None:
        t.join(1)
        pytest.skip("the sandbox's processes are not visible as children here")
    os.kill(victim.pid, 9)     # the process serving the session, not the command
    t.join(30)
    status, body = holder["r"]
    assert status == 500 and "crash" in body["message"]
    status, r = post_json(server.url + "/execute", {"command": "echo back; pwd"})
    assert status == 200 and r["stdout"] == "back\n/app\n" and r["restarted"] is True
    assert server.get("/")[0] == 200


def test_bodies_over_the_limit_are_413(tmp_path):
    srv = start_server("--base-dir", str(tmp_path), "-i", "virtual", "--max-body", "2048")
    try:
        r = requests.post(f"{srv.url}/upload", files={"file": ("big.bin", b"x" * 4096)})
        assert r.status_code == 413
        assert not (tmp_path / "big.bin").exists()
        r = requests.post(f"{srv.url}/upload", files={"file": ("small.bin", b"x" * 100)})
        assert r.status_code == 200 and (tmp_path / "small.bin").read_bytes() == b"x" * 100
        r = requests.post(f"{srv.url}/execute", json={"command": "echo " + "y" * 4096})
        assert r.status_code == 413
    finally:
        srv.stop()


def test_sigterm_leaves_no_sandbox_process_behind(tmp_path):
    psutil = pytest.importorskip("psutil")
    srv = start_server("--base-dir", str(tmp_path))
    try:
        post_json(srv.url + "/execute", {"command": "sleep 300 & echo started"})
        kids = psutil.Process(srv.proc.pid).children(recursive=True)
        srv.proc.terminate()
        assert srv.proc.wait(timeout=30) == 128 + 15
        gone, alive = psutil.wait_procs(kids, timeout=15)
        assert alive == []
    finally:
        srv.stop()


def test_default_timeout_from_the_flag_or_upstreams_variable(tmp_path):
    for args, env in ((("-t", "1"), {}), ((), {"SANDBOX_EXEC_TIMEOUT_SECONDS": "1"})):
        srv = start_server("--base-dir", str(tmp_path), "-i", "virtual", *args, env=env)
        try:
            t0 = time.monotonic()
            st, r = post_json(srv.url + "/execute", {"command": "sleep 20; echo late"})
            assert st == 200 and r["timed_out"] is True and "late" not in r["stdout"], args
            assert time.monotonic() - t0 < 15
            st, r = post_json(srv.url + "/execute", {"command": "sleep 1.5; echo ok", "timeout_seconds": 10})
            assert r["stdout"] == "ok\n"          # the request's own timeout wins
        finally:
            srv.stop()


def test_isolation_none_serves_the_base_dir_at_its_own_path(tmp_path):
    srv = start_server("--base-dir", str(tmp_path), "-i", "none")
    try:
        st, r = post_json(srv.url + "/execute", {"command": "pwd; echo made > m.txt"})
        assert r["stdout"] == f"{os.path.realpath(tmp_path)}\n"
        assert (tmp_path / "m.txt").read_text() == "made\n"
        assert requests.get(f"{srv.url}/download/m.txt").content == b"made\n"
        r = requests.get(f"{srv.url}/exists/{urllib.parse.quote('../../etc/passwd', safe='')}")
        assert r.status_code == 403
        assert requests.get(f"{srv.url}/download/etc/passwd").status_code == 404
    finally:
        srv.stop()
