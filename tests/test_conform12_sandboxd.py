"""The official k8s-agent-sandbox client's sandboxd runtime (REST files + gRPC ProcessService) against `agentic-bash serve --rest-port --grpc-port`."""

from __future__ import annotations

import asyncio
import io
import json
import os
import re
import signal
import threading
import time
import urllib.request

import pytest

from server_util import poll as _poll, post_json, start_server

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")
grpc = pytest.importorskip("grpc")
pytest.importorskip("k8s_agent_sandbox")

from k8s_agent_sandbox.exceptions import SandboxRequestError  # noqa: E402
from k8s_agent_sandbox.models import SandboxdInClusterConnectionConfig  # noqa: E402
from k8s_agent_sandbox.sandbox import Sandbox as K8sSandbox  # noqa: E402

try:
    from k8s_agent_sandbox.commands._process_stubs import process_pb2 as pb  # noqa: E402
    from k8s_agent_sandbox.commands._process_stubs import process_pb2_grpc as pbg  # noqa: E402
except ImportError:  # pragma: no cover - a client without the grpc extra
    pytest.skip("k8s-agent-sandbox[grpc] is not installed", allow_module_level=True)
from google.protobuf import empty_pb2  # noqa: E402


class _StandInK8s:
    """What the client asks the cluster: the sandbox's pod IP (here the loopback)."""

    injected_api_client = None

    def get_sandbox(self, name, namespace):
        return {"metadata": {"name": name}, "status": {"podIPs": [{"ip": "127.0.0.1"}]}}

    def delete_sandbox_claim(self, name, namespace):
        pass


class _AsyncStandInK8s(_StandInK8s):
    async def get_sandbox(self, name, namespace):  # type: ignore[override]
        return super().get_sandbox(name, namespace)


def _level() -> str:
    from agentic_bash.isolation.probe import probe
    caps = probe()
    return "namespace" if caps.user_namespace and caps.mount_namespace and caps.overlay_userns else "virtual"


class _Served:
    def __init__(self, srv, base, level):
        self.level = level
        self.srv = srv
        self.base = base
        log = srv.output()
        self.rest = int(re.search(r"sandboxd REST on http://[^:]+:(\d+)", log).group(1))
        self.grpc = int(re.search(r"ProcessService on [^ ]+:(\d+)", log).group(1))

    def config(self):
        return SandboxdInClusterConnectionConfig(mode="in-cluster-pod-ip", rest_port=self.rest,
                                                 grpc_port=self.grpc)

    def sdk(self):
        return K8sSandbox(claim_name="c", sandbox_id="s", namespace="default",
                          connection_config=self.config(), k8s_helper=_StandInK8s())

    def stub(self):
        ch = grpc.insecure_channel(f"127.0.0.1:{self.grpc}")
        return ch, pbg.ProcessServiceStub(ch)

    def rest_call(self, method, path, data=None, headers=None, timeout=30):
        req = urllib.request.Request(f"http://127.0.0.1:{self.rest}{path}", data=data, method=method,
                                     headers=headers or {})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return r.status, dict(r.headers), r.read()
        except urllib.error.HTTPError as e:
            return e.code, dict(e.headers), e.read()


def _start(base, level, *extra, env=None):
    srv = start_server("--base-dir", str(base), "-i", level, "--rest-port", "0", "--grpc-port", "0",
                       *extra, env=env)
    return _Served(srv, base, level)


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    # the level a pod runs by default (namespace where the kernel allows it); the virtual
    # level's differences (its in-process commands) get a test of their own below
    base = tmp_path_factory.mktemp("workspace")
    s = _start(base, _level(), env={"SANDBOX_ID": "sb-1", "SANDBOX_API_TOKEN": "secret"})
    yield s
    s.srv.stop()


def test_commands_run_is_a_fresh_process_in_the_root_with_env_and_cwd(served):
    sb = served.sdk()
    try:
        r = sb.commands.run("echo out; echo err >&2; pwd; exit 3")
        assert (r.stdout, r.stderr, r.exit_code, r.timed_out) == ("out\n/app\n", "err\n", 3, False)
        # like a process of its own: a cd, an export or a function does not outlive it
        sb.commands.run("cd /tmp; export LEFT=1; f() { :; }")
        r = sb.commands.run("pwd; echo \"[${LEFT-}]\"; type f >/dev/null 2>&1 || echo nof")
        assert r.stdout == "/app\n[]\nnof\n"
        sb.files.write("sub/dir/x.txt", "x")
        r = sb.commands.run('echo "$A $B"; pwd', env={"A": "1", "B": "two words"}, cwd="sub/dir")
        assert r.stdout == "1 two words\n/app/sub/dir\n"
        # files do outlive it, and the host's base directory is the sandbox's /app
        sb.commands.run("echo made > made.txt")
        assert (served.base / "made.txt").read_text() == "made\n"
        with pytest.raises(RuntimeError, match="PERMISSION_DENIED"):
            sb.commands.run("pwd", cwd="../..")
        with pytest.raises(RuntimeError, match="NOT_FOUND"):
            sb.commands.run("pwd", cwd="no/such/dir")
        with pytest.raises(ValueError):
            sb.commands.run("true", env={"A=B": "1"})     # the client refuses it itself
    finally:
        sb.close_connection()


def test_command_timeout_reports_timed_out_and_stops_the_command(served):
    sb = served.sdk()
    try:
        t0 = time.monotonic()
        r = sb.commands.run("sleep 30; echo late > late.txt", command_timeout=1)
        assert r.timed_out and r.exit_code == 124
        assert time.monotonic() - t0 < 20
        t1 = time.monotonic()
        assert sb.commands.run("echo next").stdout == "next\n"
        # the session was free again: the abandoned command was interrupted at its deadline
        assert time.monotonic() - t1 < 15
        time.sleep(0.5)
        assert not (served.base / "late.txt").exists()
    finally:
        sb.close_connection()


def test_files_round_trip_list_exists_delete_and_errors(served):
    sb = served.sdk()
    try:
        sb.files.write("d/a.bin", bytes(range(256)) * 10)
        sb.files.write("d/s.txt", "héllo")
        sb.files.write("d/big.bin", io.BytesIO(b"z" * (3 << 20)))       # a streamed upload
        assert sb.files.read("d/a.bin") == bytes(range(256)) * 10
        assert sb.files.read("d/s.txt") == "héllo".encode()
        sink = io.BytesIO()
        assert sb.files.read_to("d/big.bin", sink) == 3 << 20
        with pytest.raises(RuntimeError, match="exceeds limit"):
            sb.files.read_to("d/big.bin", io.BytesIO(), max_bytes=1000)
        entries = {e.name: e for e in sb.files.list("d")}
        assert set(entries) == {"a.bin", "s.txt", "big.bin"}
        assert entries["a.bin"].size == 2560 and entries["a.bin"].type == "file"
        assert entries["a.bin"].mode == "0644"
        assert abs(entries["a.bin"].modified.timestamp() - time.time()) < 600
        assert {e.name for e in sb.files.list(".")} >= {"d"}
        assert next(e for e in sb.files.list("") if e.name == "d").type == "directory"
        assert sb.files.exists("d/a.bin") and sb.files.exists("d") and not sb.files.exists("d/nope")
        # the sandbox sees what the client wrote, and the client what the sandbox wrote
        assert sb.commands.run("cat d/s.txt").stdout == "héllo"
        with pytest.raises(SandboxRequestError) as e:
            sb.files.read("d/nope")
        assert e.value.status_code == 404
        assert json.loads(e.value.response.text)["code"] == "NOT_FOUND"
        with pytest.raises(SandboxRequestError) as e:
            sb.files.read("../../etc/passwd", allow_unsafe_paths=True)
        assert e.value.status_code == 403
        assert json.loads(e.value.response.text)["code"] == "PERMISSION_DENIED"
        with pytest.raises(ValueError):
            sb.files.write("../x", b"no")                    # the client refuses it itself
        with pytest.raises(SandboxRequestError) as e:
            sb.files.delete("d")
        assert e.value.status_code == 409
        sb.files.delete("d/s.txt")
        assert not sb.files.exists("d/s.txt")
        sb.files.delete("d", recursive=True)
        assert not sb.files.exists("d") and not (served.base / "d").exists()
        with pytest.raises(SandboxRequestError) as e:
            sb.files.delete("d")
        assert e.value.status_code == 404
    finally:
        sb.close_connection()


def test_symlinks_are_the_sandboxs_and_never_lead_out(served):
    sb = served.sdk()
    try:
        r = sb.commands.run("mkdir -p ln && echo in > ln/t.txt && ln -sfn /etc ln/out && "
                            "ln -sfn t.txt ln/ok && ln -sfn nowhere ln/dangling && ln -sfn /app/ln ln/self")
        assert r.exit_code == 0, r.stderr
        names = {e.name: e.type for e in sb.files.list("ln")}
        # as sandboxd: a link shows as its target, one leading out or dangling is left out
        assert names == {"t.txt": "file", "ok": "file", "self": "directory"}
        assert sb.files.read("ln/ok") == b"in\n"
        assert sb.files.read("ln/self/t.txt") == b"in\n"
        for p in ("ln/out/passwd", "ln/out"):
            with pytest.raises(SandboxRequestError) as e:
                sb.files.read(p)
            assert e.value.status_code == 403
        with pytest.raises(SandboxRequestError) as e:
            sb.files.write("ln/out/evil", b"x")
        assert e.value.status_code == 403
        # DELETE removes the link, not what it names
        sb.files.delete("ln/ok")
        assert sb.files.exists("ln/t.txt") and not sb.files.exists("ln/ok")
    finally:
        sb.commands.run("rm -rf ln")
        sb.close_connection()


def test_rest_details_mode_multipart_head_health_metadata(served):
    st, _, _ = served.rest_call("PUT", "/v1/files/m/run.sh?mode=0755", b"#!/bin/sh\necho ran\n",
                                {"Content-Type": "application/octet-stream"})
    assert st == 204
    assert oct((served.base / "m" / "run.sh").stat().st_mode & 0o777) == "0o755"
    st, _, body = served.rest_call("GET", "/v1/files/m")
    listing = json.loads(body)
    assert listing["path"] == "/m" and listing["entries"][0]["mode"] == "0755"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", listing["entries"][0]["modified_at"])
    for bad in ("0999", "755", "01755", "x"):
        st, _, body = served.rest_call("PUT", f"/v1/files/m/f?mode={bad}", b"x")
        assert st == 400 and json.loads(body)["code"] == "INVALID_ARGUMENT", bad
    boundary = "b0und"
    mp = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"other\"\r\n\r\nnot this\r\n"
          f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"\r\n\r\nthe part\r\n"
          f"--{boundary}--\r\n").encode()
    st, _, _ = served.rest_call("PUT", "/v1/files/m/part.txt", mp,
                                {"Content-Type": f"multipart/form-data; boundary={boundary}"})
    assert st == 204 and (served.base / "m" / "part.txt").read_bytes() == b"the part"
    st, _, body = served.rest_call("PUT", "/v1/files/m", b"x")
    assert st == 400 and "directory" in json.loads(body)["message"]
    st, headers, body = served.rest_call("HEAD", "/v1/files/m/part.txt")
    assert st == 200 and body == b"" and headers["content-length"] == "8"
    assert served.rest_call("HEAD", "/v1/files/m/none")[0] == 404
    st, _, body = served.rest_call("DELETE", "/v1/files/?recursive=maybe")
    assert st == 400
    st, _, body = served.rest_call("DELETE", "/v1/files/")
    assert st == 409 and json.loads(body)["code"] == "CONFLICT"
    for bad in ("m/a%00b", "m/" + "n" * 300):
        st, _, body = served.rest_call("PUT", f"/v1/files/{bad}", b"x")
        assert st == 400 and json.loads(body)["code"] == "INVALID_ARGUMENT", bad
    st, headers, _ = served.rest_call("POST", "/v1/files/m/part.txt", b"x")
    assert st == 405 and set(headers["allow"].split(", ")) == {"GET", "HEAD", "PUT", "DELETE"}
    st, _, body = served.rest_call("GET", "/v1/health")
    assert st == 200 and json.loads(body)["status"] == "ok"
    st, _, body = served.rest_call("GET", "/v1/metadata")
    env = json.loads(body)["env"]
    assert env.get("SANDBOX_ID") == "sb-1" and "SANDBOX_API_TOKEN" not in env
    # the runtime's own port serves /v1 as well
    with urllib.request.urlopen(served.srv.url + "/v1/health", timeout=30) as r:
        assert json.loads(r.read())["status"] == "ok"
    served.rest_call("DELETE", "/v1/files/m?recursive=true")


def test_file_calls_do_not_wait_for_a_running_command(served):
    sb = served.sdk()
    done = {}
    # the command ends only once `go` exists, which the client writes below: it must not wait
    t = threading.Thread(target=lambda: done.update(r=sb.commands.run(
        "touch started; while [ ! -e go ]; do sleep 0.05; done; cat go", command_timeout=120)))
    t.start()
    try:
        assert _poll(lambda: (served.base / "started").exists())
        other = served.sdk()
        other.files.write("during.txt", b"during", timeout=20)
        assert other.files.read("during.txt", timeout=20) == b"during"
        assert other.files.exists("during.txt", timeout=20)
        assert "during.txt" in {e.name for e in other.files.list(".", timeout=20)}
        other.files.delete("during.txt", timeout=20)
        assert t.is_alive()
        other.files.write("go", b"went", timeout=20)
        other.close_connection()
    finally:
        t.join(60)
        sb.close_connection()
    assert done["r"].stdout == "went"
    for name in ("started", "go"):
        os.unlink(served.base / name)


def test_concurrent_clients_each_get_their_own_answers(served):
    errors = []

    def client(i):
        sb = served.sdk()
        try:
            for j in range(3):
                sb.files.write(f"c{i}/f{j}", f"{i}-{j}")
                r = sb.commands.run(f"cat c{i}/f{j}; echo; echo {i} >&2")
                if (r.stdout, r.stderr) != (f"{i}-{j}\n", f"{i}\n"):
                    errors.append((i, j, r))
                if sb.files.read(f"c{i}/f{j}") != f"{i}-{j}".encode():
                    errors.append((i, j, "read"))
        except Exception as e:  # noqa: BLE001 - collected for the assertion
            errors.append((i, repr(e)))
        finally:
            sb.close_connection()
    ts = [threading.Thread(target=client, args=(i,)) for i in range(5)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(120)
    assert not errors
    served.sdk().commands.run("rm -rf c0 c1 c2 c3 c4")


def test_huge_output_is_cut_in_execute_and_whole_in_start(served):
    sb = served.sdk()
    try:
        r = sb.commands.run("head -c 5000000 /dev/zero | tr '\\0' a")
        assert r.exit_code == 0
        # 5 MB would pass a gRPC client's 4 MiB receive limit: cut head+tail with a marker
        assert r.stdout.startswith("a" * 1000) and r.stdout.endswith("a" * 1000)
        assert "bytes elided" in r.stdout and len(r.stdout) < 2_200_000
    finally:
        sb.close_connection()
    ch, stub = served.stub()
    try:
        n, kinds = 0, []
        for ev in stub.Start(pb.StartRequest(config=pb.ProcessConfig(
                command=["sh", "-c", "head -c 6000000 /dev/zero; echo done >&2"])), timeout=120):
            k = ev.WhichOneof("event")
            kinds.append(k)
            if k == "stdout":
                n += len(ev.stdout)
        assert n == 6_000_000
        assert kinds[0] == "init" and kinds[-1] == "exit" and "stderr" in kinds
        # past the sandbox's output limit (16 MiB by default) the stream says so on stderr
        # instead of ending as if that were all the output
        n, err = 0, b""
        for ev in stub.Start(pb.StartRequest(config=pb.ProcessConfig(
                command=["sh", "-c", "head -c 20000000 /dev/zero"])), timeout=120):
            k = ev.WhichOneof("event")
            if k == "stdout":
                n += len(ev.stdout)
            elif k == "stderr":
                err += ev.stderr
        assert 6_000_000 < n < 20_000_000 and b"was not streamed" in err
    finally:
        ch.close()


def test_process_service_start_stdin_signal_pty_and_errors(served):
    ch, stub = served.stub()
    try:
        # server reflection, as sandboxd has it (grpcurl's way in): the service and its messages
        from grpc_reflection.v1alpha.proto_reflection_descriptor_database import ProtoReflectionDescriptorDatabase
        from google.protobuf.descriptor_pool import DescriptorPool
        db = ProtoReflectionDescriptorDatabase(ch)
        assert "process.v1.ProcessService" in db.get_services()
        svc = DescriptorPool(db).FindServiceByName("process.v1.ProcessService")
        assert {m.name for m in svc.methods} == {"Start", "Execute", "WriteStdin", "SendSignal", "ResizeTTY"}
        assert svc.methods_by_name["Start"].server_streaming
        r = stub.Execute(pb.ExecuteRequest(config=pb.ProcessConfig(command=["echo", "a b", "c"])), timeout=60)
        assert (r.exit_code, r.stdout) == (0, b"a b c\n")
        for argv, code in ((["no-such-program"], grpc.StatusCode.NOT_FOUND),
                           (["/no/such/file"], grpc.StatusCode.NOT_FOUND),
                           ([], grpc.StatusCode.INVALID_ARGUMENT)):
            with pytest.raises(grpc.RpcError) as e:
                stub.Execute(pb.ExecuteRequest(config=pb.ProcessConfig(command=argv)), timeout=60)
            assert e.value.code() == code, argv
        # a shell's 127 is an exit code, as with upstream's /bin/sh -c
        r = stub.Execute(pb.ExecuteRequest(config=pb.ProcessConfig(command=["sh", "-c", "no-such-program"])),
                         timeout=60)
        assert r.exit_code == 127 and b"not found" in r.stderr
        # events in order: init, output as produced, exit with the code
        evs = [(ev.WhichOneof("event"), ev) for ev in stub.Start(pb.StartRequest(config=pb.ProcessConfig(
            command=["bash", "-c", "echo 1; echo 2 >&2; exit 4"])), timeout=60)]
        assert evs[0][0] == "init" and evs[0][1].init.process_id > 0
        assert [k for k, _ in evs[1:]] == ["stdout", "stderr", "exit"] and evs[-1][1].exit.exit_code == 4
        # stdin: bytes, then EOF
        it = stub.Start(pb.StartRequest(config=pb.ProcessConfig(command=["sh", "-c", "read a; echo got $a; cat"])),
                        timeout=60)
        pid = next(it).init.process_id
        stub.WriteStdin(pb.WriteStdinRequest(process_id=pid, input=b"one\ntwo\n"), timeout=30)
        stub.WriteStdin(pb.WriteStdinRequest(process_id=pid, eof=empty_pb2.Empty()), timeout=30)
        out = b"".join(ev.stdout for ev in it if ev.WhichOneof("event") == "stdout")
        assert out == b"got one\ntwo\n"
        # a signal ends a running process
        it = stub.Start(pb.StartRequest(config=pb.ProcessConfig(command=["sh", "-c", "echo up; sleep 60"])),
                        timeout=90)
        pid = next(it).init.process_id
        assert next(it).stdout == b"up\n"
        t0 = time.monotonic()
        stub.SendSignal(pb.SendSignalRequest(process_id=pid, signal=pb.SIGNAL_SIGTERM), timeout=30)
        rest = list(it)
        assert rest[-1].WhichOneof("event") == "exit" and rest[-1].exit.exit_code != 0
        assert time.monotonic() - t0 < 30
        for call, req in ((stub.SendSignal, pb.SendSignalRequest(process_id=pid, signal=pb.SIGNAL_SIGINT)),
                          (stub.WriteStdin, pb.WriteStdinRequest(process_id=99999, input=b"x")),
                          (stub.ResizeTTY, pb.ResizeTTYRequest(process_id=99999, cols=1, rows=1))):
            with pytest.raises(grpc.RpcError) as e:
                call(req, timeout=30)
            assert e.value.code() == grpc.StatusCode.NOT_FOUND
        # a terminal: typed keys arrive, stty sees its size and ResizeTTY reaches it (the
        # virtual level's in-process commands do not see a terminal: only the keys there)
        real = served.level != "virtual"
        script = "stty size; read x; echo got $x; stty size" if real else "echo ready; read x; echo got $x"
        it = stub.Start(pb.StartRequest(config=pb.ProcessConfig(command=["sh", "-c", script]),
                                        pty=pb.PTY(cols=80, rows=24)), timeout=60)
        pid = next(it).init.process_id
        buf = b""
        for ev in it:
            if ev.WhichOneof("event") == "stdout":
                buf += ev.stdout
                if (b"24 80" if real else b"ready") in buf:
                    break
        stub.ResizeTTY(pb.ResizeTTYRequest(process_id=pid, cols=100, rows=30), timeout=30)
        stub.WriteStdin(pb.WriteStdinRequest(process_id=pid, input=b"abc\n"), timeout=30)
        for ev in it:
            if ev.WhichOneof("event") == "stdout":
                buf += ev.stdout
        assert b"got abc" in buf
        assert b"30 100" in buf or not real
        # ResizeTTY of a process without a terminal
        it = stub.Start(pb.StartRequest(config=pb.ProcessConfig(command=["sleep", "30"])), timeout=60)
        pid = next(it).init.process_id
        with pytest.raises(grpc.RpcError) as e:
            stub.ResizeTTY(pb.ResizeTTYRequest(process_id=pid, cols=1, rows=1), timeout=30)
        assert e.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        it.cancel()                   # the client goes away: the process is interrupted
        t0 = time.monotonic()
        assert stub.Execute(pb.ExecuteRequest(config=pb.ProcessConfig(command=["true"])), timeout=60).exit_code == 0
        assert time.monotonic() - t0 < 20
    finally:
        ch.close()


def test_the_async_client_speaks_sandboxd_too(served):
    from k8s_agent_sandbox.async_sandbox import AsyncSandbox

    async def go():
        sb = AsyncSandbox(claim_name="c", sandbox_id="s", namespace="default",
                          connection_config=served.config(), k8s_helper=_AsyncStandInK8s())
        try:
            await sb.files.write("async/x.txt", b"from async")
            r = await sb.commands.run("cat x.txt; pwd", cwd="async", env={"Q": "1"})
            assert (r.stdout, r.exit_code) == ("from async/app/async\n", 0)
            assert await sb.files.read("async/x.txt") == b"from async"
            assert [e.name for e in await sb.files.list("async")] == ["x.txt"]
            assert await sb.files.exists("async/x.txt")
            r = await sb.commands.run("sleep 30", command_timeout=1)
            assert r.timed_out
            await sb.files.delete("async", recursive=True)
            assert not await sb.files.exists("async")
        finally:
            await sb.close_connection()
    asyncio.run(asyncio.wait_for(go(), 120))


def test_legacy_and_sandboxd_clients_share_one_server(served):
    # the python-runtime contract keeps its persistent shell beside sandboxd's fresh processes
    st, r = post_json(served.srv.url + "/execute", {"command": "export KEEP=kept; cd /tmp"})
    assert st == 200
    sb = served.sdk()
    try:
        assert sb.commands.run("pwd").stdout == "/app\n"
    finally:
        sb.close_connection()
    st, r = post_json(served.srv.url + "/execute", {"command": "echo $KEEP; pwd; cd /app"})
    assert r["stdout"] == "kept\n/tmp\n"


def test_the_virtual_level_serves_sandboxd_too(tmp_path):
    s = _start(tmp_path, "virtual")
    sb = s.sdk()
    ch, stub = s.stub()
    try:
        sb.files.write("v/in.txt", "virtual")
        r = sb.commands.run("cat in.txt; echo; pwd; echo $V; exit 5", cwd="v", env={"V": "vee"})
        assert (r.stdout, r.exit_code) == ("virtual\n/app/v\nvee\n", 5)
        assert sb.commands.run("sleep 30", command_timeout=1).timed_out
        assert sb.commands.run("echo after").stdout == "after\n"
        assert (tmp_path / "v" / "in.txt").read_text() == "virtual"
        it = stub.Start(pb.StartRequest(config=pb.ProcessConfig(command=["sh", "-c", "read a; echo got $a >&2"])),
                        timeout=60)
        pid = next(it).init.process_id
        stub.WriteStdin(pb.WriteStdinRequest(process_id=pid, input=b"v\n"), timeout=30)
        evs = [(ev.WhichOneof("event"), ev) for ev in it]
        assert evs[0][0] == "stderr" and evs[0][1].stderr == b"got v\n" and evs[-1][0] == "exit"
        sb.files.delete("v", recursive=True)
        assert not (tmp_path / "v").exists()
        # the root itself is only emptied, as sandboxd does
        sb.files.write("w/x", b"1")
        sb.files.write("y", b"2")
        st, _, _ = s.rest_call("DELETE", "/v1/files/?recursive=true")
        assert st == 204 and tmp_path.is_dir() and not list(tmp_path.iterdir())
    finally:
        ch.close()
        sb.close_connection()
        s.srv.stop()


def test_sigterm_with_a_stream_running_stops_cleanly(tmp_path):
    psutil = pytest.importorskip("psutil")
    s = _start(tmp_path, _level())
    ch, stub = s.stub()
    try:
        # a stream the client cancelled first (its handler once waited forever for an event,
        # and the server's exit then waited for that thread)
        gone = stub.Start(pb.StartRequest(config=pb.ProcessConfig(command=["sh", "-c", "echo a; sleep 60"])),
                          timeout=120)
        assert next(gone).WhichOneof("event") == "init"
        assert next(gone).stdout == b"a\n"
        gone.cancel()
        it = stub.Start(pb.StartRequest(config=pb.ProcessConfig(command=["sh", "-c", "echo up; sleep 120"])),
                        timeout=120)
        assert next(it).WhichOneof("event") == "init"
        assert next(it).stdout == b"up\n"
        kids = psutil.Process(s.srv.proc.pid).children(recursive=True)
        assert kids or _level() == "virtual"
        t0 = time.monotonic()
        s.srv.proc.send_signal(signal.SIGTERM)
        s.srv.proc.wait(timeout=60)
        assert time.monotonic() - t0 < 30
        assert s.srv.proc.returncode == 143
        # the stream ended (with its exit event or an error), it did not hang
        try:
            rest = [ev.WhichOneof("event") for ev in it]
            assert rest[-1:] == ["exit"]
        except grpc.RpcError:
            pass
        # nothing of the server's is left behind
        gone, alive = psutil.wait_procs(kids, timeout=15)
        assert not alive
    finally:
        ch.close()
        s.srv.stop()


def test_the_sandboxd_flag_picks_its_ports_and_is_refused_with_sessions(monkeypatch):
    from typer.testing import CliRunner

    import agentic_bash.server.command as command
    from agentic_bash.cli import app
    seen = {}
    monkeypatch.setattr(command, "_serve", lambda *a: seen.update(args=a))
    r = CliRunner().invoke(app, ["serve", "--sandboxd"])
    assert r.exit_code == 0, r.output
    assert seen["args"][-2:] == (8080, 9090)
    r = CliRunner().invoke(app, ["serve", "--sandboxd", "--grpc-port", "0"])
    assert r.exit_code == 0 and seen["args"][-2:] == (8080, 0)
    r = CliRunner().invoke(app, ["serve", "--port", "0"])
    assert seen["args"][-2:] == (None, None)      # the python-runtime contract alone
    r = CliRunner().invoke(app, ["serve", "--sessions", "--sandboxd"])
    assert r.exit_code == 2 and "sessions" in r.output


def test_files_go_through_the_sandbox_when_a_mount_lies_inside_the_root(tmp_path):
    # the host's directory is then not what the sandbox sees: the Sandbox's file API answers
    data = tmp_path / "data"
    data.mkdir()
    (data / "m.txt").write_text("mounted")
    base = tmp_path / "base"
    base.mkdir()
    s = _start(base, "virtual", "-m", f"/app/data={data}:ro")
    sb = s.sdk()
    try:
        sb.files.write("sub/a.txt", b"hello")
        assert sb.files.read("sub/a.txt") == b"hello"
        assert (base / "sub" / "a.txt").read_bytes() == b"hello"
        assert sb.files.read("data/m.txt") == b"mounted"
        assert {e.name: e.type for e in sb.files.list(".")} == {"data": "directory", "sub": "directory"}
        assert [e.name for e in sb.files.list("data")] == ["m.txt"]
        assert sb.files.exists("data/m.txt") and not sb.files.exists("data/none")
        with pytest.raises(SandboxRequestError) as e:
            sb.files.write("data/new.txt", b"x")          # the read-only mount refuses it
        assert e.value.status_code == 403 and not (data / "new.txt").exists()
        st, _, _ = s.rest_call("PUT", "/v1/files/sub/m.sh?mode=0700", b"#!/bin/sh\n")
        assert st == 204 and oct((base / "sub" / "m.sh").stat().st_mode & 0o777) == "0o700"
        with pytest.raises(SandboxRequestError) as e:
            sb.files.delete("sub")
        assert e.value.status_code == 409
        sb.files.delete("sub", recursive=True)
        assert not (base / "sub").exists()
        with pytest.raises(SandboxRequestError) as e:
            sb.files.read("../../etc/passwd", allow_unsafe_paths=True)
        assert e.value.status_code == 403
        assert sb.commands.run("cat data/m.txt").stdout == "mounted"
    finally:
        sb.close_connection()
        s.srv.stop()


@pytest.mark.parametrize("flag", ["--grpc-port", "--rest-port"])
def test_a_port_in_use_is_a_one_line_error_and_nothing_says_listening(flag, tmp_path):
    import socket
    import subprocess
    import sys
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        r = subprocess.run([sys.executable, "-m", "agentic_bash", "serve", "-i", "virtual", "--host", "127.0.0.1",
                            "--port", "0", flag, str(port), "--base-dir", str(tmp_path)],
                           capture_output=True, text=True, timeout=120)
    assert r.returncode == 1
    assert "Traceback" not in r.stderr and "listening" not in r.stdout
    assert re.search(r"agentic-bash serve: .*(in use|Address already)", r.stderr)
