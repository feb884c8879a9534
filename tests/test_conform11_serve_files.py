"""`agentic-bash serve`: file calls beside a running command, streamed, atomic and confined."""

from __future__ import annotations

import hashlib
import os
import threading
import urllib.parse

import pytest

from server_util import k8s_sdk, poll, post_json, start_server

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")
pytest.importorskip("python_multipart")
requests = pytest.importorskip("requests")
pytest.importorskip("k8s_agent_sandbox")


@pytest.fixture(scope="module", params=["virtual", "namespace"])
def served(request, tmp_path_factory):
    base = tmp_path_factory.mktemp("app")
    srv = start_server("--base-dir", str(base), "-i", request.param)
    yield srv, base
    srv.stop()


def _in_background(fn):
    out: dict = {}

    def go():
        try:
            out["value"] = fn()
        except BaseException as e:  # noqa: BLE001 - reported by the test
            out["error"] = e
    t = threading.Thread(target=go, daemon=True)
    t.start()
    return t, out


def test_file_calls_are_answered_while_a_command_runs(served):
    # the command waits for a file only an upload can make: if file calls waited for the
    # command, it would run into its timeout (exit 124) instead of printing the upload
    srv, base = served
    sb = k8s_sdk(srv.url)
    t, out = _in_background(lambda: sb.commands.run(
        "echo ready > r.tmp; mv r.tmp ready.txt; while [ ! -e go.txt ]; do sleep 0.05; done; cat go.txt",
        timeout=150, command_timeout=120))
    other = k8s_sdk(srv.url)
    try:
        assert poll(lambda: other.files.exists("ready.txt")), "ready.txt never appeared"
        assert other.files.read("ready.txt") == b"ready\n"
        assert "ready.txt" in {e.name for e in other.files.list(".")}
        assert t.is_alive()                       # all of that while the command ran
        other.files.write("go.txt", b"uploaded while it ran\n")
        t.join(90)
        assert not t.is_alive() and "error" not in out, out
        r = out["value"]
        assert (r.exit_code, r.stdout) == (0, "uploaded while it ran\n")
    finally:
        (base / "go.txt").write_text("")       # whatever failed, the command ends
        t.join(150)
        other.close_connection()
        sb.close_connection()


def test_a_running_command_sees_the_old_file_or_the_whole_new_one(served):
    srv, base = served
    sb = k8s_sdk(srv.url)
    size = 24 << 20
    sb.files.write("swap.bin", b"a")
    script = ("n=0; while [ ! -e swap.done ]; do s=$(stat -c %s swap.bin); n=$((n+1)); "
              f"case $s in 1|{size}) ;; *) echo partial $s;; esac; done; echo looked $n")
    t, out = _in_background(lambda: sb.commands.run(script, timeout=150, command_timeout=120))
    other = k8s_sdk(srv.url)
    try:
        assert poll(lambda: t.is_alive())
        for _ in range(3):
            other.files.write("swap.bin", b"z" * size)
            other.files.write("swap.bin", b"a")
        other.files.write("swap.done", b"")
        t.join(90)
        assert "error" not in out, out
        r = out["value"]
        assert r.exit_code == 0 and "partial" not in r.stdout, r.stdout[-500:]
        assert r.stdout.startswith("looked ")
        # no temporary name is left behind in the directory
        assert not [p for p in os.listdir(base) if ".agb-" in p]
    finally:
        (base / "swap.done").write_text("")
        t.join(150)
        other.close_connection()
        sb.close_connection()


class _Pattern:
    """``size`` deterministic bytes as a binary stream, hashed as they are read."""

    def __init__(self, size):
        self.left = size
        self.h = hashlib.sha256()
        self.block = hashlib.sha512(b"conform11").digest() * 1024   # 64 KiB

    def read(self, n=-1):
        n = min(self.left, len(self.block) if n is None or n < 0 else n, len(self.block))
        self.left -= n
        b = self.block[:n]
        self.h.update(b)
        return b


class _Sink:
    def __init__(self):
        self.h = hashlib.sha256()
        self.n = 0

    def write(self, b):
        self.h.update(b)
        self.n += len(b)
        return len(b)


def _hwm_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    raise AssertionError("no VmHWM")


def test_100_mib_upload_and_download_are_streamed(served):
    srv, base = served
    sb = k8s_sdk(srv.url)
    size = 100 << 20
    try:
        before = _hwm_kib(srv.proc.pid)
        src = _Pattern(size)
        sb.files.write("big/data.bin", src, timeout=300)
        assert os.path.getsize(base / "big" / "data.bin") == size
        r = sb.commands.run("sha256sum big/data.bin", timeout=120)
        assert r.stdout.split()[0] == src.h.hexdigest()
        sink = _Sink()
        assert sb.files.read_to("big/data.bin", sink, timeout=300) == size
        assert sink.h.hexdigest() == src.h.hexdigest()
        grew = _hwm_kib(srv.proc.pid) - before
        # a copy of the file in the server would be 100 MiB; streamed, a few pieces
        assert grew < 40 << 10, f"server peak grew by {grew} KiB"
    finally:
        try:
            os.unlink(base / "big" / "data.bin")
        except OSError:
            pass
        sb.close_connection()


def test_binary_unicode_and_nested_names_round_trip(served):
    srv, base = served
    sb = k8s_sdk(srv.url)
    data = bytes(range(256)) * 17 + b"\x00\r\n\xff"
    try:
        for name in ("bin/zero\x7fless.bin".replace("\x7f", ""), "ünï/cödé €.bin", "sp ace/a%20b.bin",
                     "deep/a/b/c/d.bin"):
            sb.files.write(name, data)
            assert sb.files.read(name) == data, name
            assert sb.files.exists(name)
            assert (base / name).read_bytes() == data
            parent, leaf = name.rsplit("/", 1)
            assert leaf in {e.name for e in sb.files.list(parent)}
        r = sb.commands.run("cat 'ünï/cödé €.bin' | wc -c")
        assert r.stdout.strip() == str(len(data))
        # an upload onto an existing file keeps that file's mode
        sb.commands.run("printf old > mode.sh; chmod 750 mode.sh")
        sb.files.write("mode.sh", b"echo new\n")
        assert oct((base / "mode.sh").stat().st_mode & 0o777) == oct(0o750)
    finally:
        sb.close_connection()


def test_hostile_paths_are_refused_and_write_nothing_outside(served, tmp_path):
    srv, base = served
    url = srv.url
    outside = tmp_path / "outside"
    outside.mkdir()
    # links made by a command inside the sandbox: out of /app (absolute and relative), and
    # one that stays inside (absolute, as the sandbox sees it)
    st, r = post_json(url + "/execute", {"command": "mkdir -p hp/in; ln -sfn /etc hp/etc; "
                                                    "ln -sfn ../.. hp/up; ln -sfn /app/hp/in hp/abs_in; "
                                                    "ln -sfn loop hp/loop; ln -sfn /tmp hp/tmp"})
    assert st == 200 and r["exit_code"] == 0, r
    for name in ("../x", "../../etc/passwd", "hp/etc/passwd", "hp/up/x", "hp/up", "hp/tmp/x",
                 "hp/etc"):
        q = urllib.parse.quote(name, safe="")
        assert requests.get(f"{url}/download/{q}", timeout=30).status_code in (403, 404), name
        got = requests.post(f"{url}/upload", files={"file": (name, b"pwned")}, timeout=30)
        assert got.status_code == 403, (name, got.status_code, got.text)
    assert requests.get(f"{url}/list/{urllib.parse.quote('hp/etc', safe='')}", timeout=30).status_code == 403
    assert requests.get(f"{url}/exists/{urllib.parse.quote('hp/up', safe='')}", timeout=30).status_code == 403
    # an absolute name is taken below /app, as upstream does
    got = requests.post(f"{url}/upload", files={"file": ("/hp/abs.txt", b"abs")}, timeout=30)
    assert got.status_code == 200 and (base / "hp" / "abs.txt").read_bytes() == b"abs"
    # through a link that stays inside /app: allowed, lands in its target
    got = requests.post(f"{url}/upload", files={"file": ("hp/abs_in/f.txt", b"in")}, timeout=30)
    assert got.status_code == 200 and (base / "hp" / "in" / "f.txt").read_bytes() == b"in"
    assert requests.get(f"{url}/download/hp%2Fabs_in%2Ff.txt", timeout=30).content == b"in"
    # a symlink loop is no file, and no hang
    assert requests.get(f"{url}/download/hp%2Floop", timeout=30).status_code in (404, 500)
    assert requests.get(f"{url}/exists/hp%2Floop", timeout=30).json()["exists"] is False
    # NUL, the base dir itself, an upload onto a directory
    assert requests.get(f"{url}/download/a%00b", timeout=30).status_code == 400
    assert requests.post(f"{url}/upload", files={"file": ("/", b"x")}, timeout=30).status_code == 400
    assert requests.post(f"{url}/upload", files={"file": ("hp/in", b"x")}, timeout=30).status_code == 500
    assert not list(outside.iterdir())
    assert not os.path.exists("/etc/x") and not os.path.exists("/tmp/x.pwned")


def test_a_symlink_entry_lists_as_its_target_inside_the_base_only(served):
    srv, base = served
    post_json(srv.url + "/execute", {"command": "mkdir -p ls/d; echo 12345 > ls/f; ln -sfn d ls/to_d; "
                                                "ln -sfn /app/ls/f ls/to_f; ln -sfn /etc ls/to_etc; "
                                                "ln -sfn nowhere ls/dangling"})
    got = {e["name"]: e["type"] for e in requests.get(srv.url + "/list/ls", timeout=30).json()}
    assert got == {"d": "directory", "f": "file", "to_d": "directory", "to_f": "file",
                   "to_etc": "file", "dangling": "file"}


def test_malformed_and_oversized_uploads(tmp_path):
    srv = start_server("--base-dir", str(tmp_path / "app"), "-i", "virtual", "--max-body", str(1 << 20))
    try:
        url = srv.url
        # chunked (no Content-Length) past --max-body: 413 all the same, nothing kept
        def gen():
            for _ in range(40):
                yield b"--B\r\nContent-Disposition: form-data; name=\"file\"; filename=\"big\"\r\n\r\n" \
                    if _ == 0 else b"x" * 65536
        r = requests.post(url + "/upload", data=gen(), headers={"content-type": "multipart/form-data; boundary=B"},
                          timeout=60)
        assert r.status_code == 413
        assert not (tmp_path / "app" / "big").exists()
        assert not [p for p in os.listdir(tmp_path / "app") if ".agb-" in p]
        # not multipart / no file field / a body cut inside the file
        assert requests.post(url + "/upload", data=b"x", timeout=30).status_code == 422
        r = requests.post(url + "/upload", files={"other": ("f", b"x")}, timeout=30)
        assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "file"]
        cut = b"--B\r\nContent-Disposition: form-data; name=\"file\"; filename=\"cut.txt\"\r\n\r\nhalf"
        r = requests.post(url + "/upload", data=cut, headers={"content-type": "multipart/form-data; boundary=B"},
                          timeout=30)
        assert r.status_code == 422
        assert not (tmp_path / "app" / "cut.txt").exists()
        # the server still serves
        assert requests.post(url + "/upload", files={"file": ("ok.txt", b"ok")}, timeout=30).status_code == 200
        assert (tmp_path / "app" / "ok.txt").read_bytes() == b"ok"
    finally:
        srv.stop()


def test_a_mount_inside_the_base_keeps_file_calls_on_the_sandbox(tmp_path):
    # the host dir is not what the sandbox sees below /app/m: file calls go through the Sandbox
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "inner.txt").write_text("from the mount")
    srv = start_server("--base-dir", str(tmp_path / "app"), "-i", "virtual",
                       "--mount", f"/app/m={tmp_path / 'm'}:ro")
    try:
        assert requests.get(srv.url + "/download/m%2Finner.txt", timeout=30).content == b"from the mount"
        r = requests.post(srv.url + "/upload", files={"file": ("up.txt", b"up")}, timeout=30)
        assert r.status_code == 200 and (tmp_path / "app" / "up.txt").read_bytes() == b"up"
    finally:
        srv.stop()
