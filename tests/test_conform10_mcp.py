"""`agentic-bash mcp` as a process: signals, piped requests and a client that vanishes."""

from __future__ import annotations

import glob
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

pytest.importorskip("mcp")
psutil = pytest.importorskip("psutil")

BIN = Path(sys.executable).parent / "agentic-bash"
CMD = [str(BIN)] if BIN.exists() else [sys.executable, "-m", "agentic_bash"]

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "conform10", "version": "0"}}}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def _call(i: int, command: str) -> dict:
    return {"jsonrpc": "2.0", "id": i, "method": "tools/call",
            "params": {"name": "bash", "arguments": {"command": command}}}


def _level() -> str:
    from agentic_bash.isolation.probe import probe
    caps = probe()
    return "namespace" if caps.user_namespace and caps.mount_namespace and caps.overlay_userns else "virtual"


def _session_dirs(pid: int) -> list[str]:
    # the sandbox's host-side scratch directories carry the pid of the process that opened it
    tmp = tempfile.gettempdir()
    return [p for p in glob.glob(os.path.join(tmp, "agentic-bash-*")) + glob.glob("/dev/shm/agentic-bash-*")
            if f"-{pid}-" in os.path.basename(p)]


def _wait_for(pred, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(0.05)
    return pred()


def _start(level: str, stderr) -> subprocess.Popen:
    return subprocess.Popen([*CMD, "mcp", "-i", level], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=stderr)


def _send(p: subprocess.Popen, msg: dict) -> None:
    p.stdin.write((json.dumps(msg) + "\n").encode())
    p.stdin.flush()


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_a_signal_stops_the_server_cleanly_during_a_call(signum, tmp_path):
    level = _level() if signum == signal.SIGTERM else "virtual"
    err = open(tmp_path / "stderr", "w+")
    p = _start(level, err)
    try:
        _send(p, INIT)
        assert set(_replies(p, {1})) == {1}
        _send(p, INITIALIZED)
        _send(p, _call(2, "sleep 300 & echo started"))
        assert "started" in _replies(p, {2})[2]["result"]["content"][0]["text"]
        _send(p, _call(3, "sleep 301"))           # still running when the signal comes
        kids = psutil.Process(p.pid).children(recursive=True)
        dirs = _session_dirs(p.pid)
        time.sleep(0.5)
        p.send_signal(signum)
        try:
            rc = p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            rc = None
        assert rc == 128 + signum, f"exit status {rc}; stderr: {err.seek(0) or err.read()[-2000:]}"
        _, alive = psutil.wait_procs(kids, timeout=15)
        assert alive == []
        assert _wait_for(lambda: not any(os.path.exists(d) for d in dirs), 15), dirs
    finally:
        if p.poll() is None:
            p.kill()
            p.wait(timeout=10)
        err.close()


def test_requests_piped_from_a_file_are_all_answered(tmp_path):
    req = tmp_path / "requests.jsonl"
    msgs = [INIT, INITIALIZED, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
            _call(3, "echo piped; cd /tmp"), _call(4, "pwd")]
    req.write_text("".join(json.dumps(m) + "\n" for m in msgs))
    with open(req, "rb") as f:
        out = subprocess.run([*CMD, "mcp", "-i", "virtual"], stdin=f, capture_output=True, timeout=120)
    assert out.returncode == 0, out.stderr.decode()[-2000:]
    replies = {m["id"]: m for m in map(json.loads, out.stdout.decode().splitlines())}
    assert sorted(replies) == [1, 2, 3, 4]
    assert len(replies[2]["result"]["tools"]) == 5
    assert "piped" in replies[3]["result"]["content"][0]["text"]
    assert "/tmp" in replies[4]["result"]["content"][0]["text"]
    # a pipe that ends (printf ... | agentic-bash mcp) is the same
    cat = subprocess.Popen(["cat", str(req)], stdout=subprocess.PIPE)
    out = subprocess.run([*CMD, "mcp", "-i", "virtual"], stdin=cat.stdout, capture_output=True, timeout=120)
    cat.stdout.close()
    cat.wait(timeout=10)
    assert sorted(json.loads(line)["id"] for line in out.stdout.decode().splitlines()) == [1, 2, 3, 4]


def test_a_client_that_vanishes_mid_call_ends_the_server_without_a_traceback(tmp_path):
    err = open(tmp_path / "stderr", "w+")
    p = _start(_level(), err)
    try:
        _send(p, INIT)
        assert set(_replies(p, {1})) == {1}
        _send(p, INITIALIZED)
        _send(p, _call(2, "sleep 4; seq 100000"))
        kids = psutil.Process(p.pid).children(recursive=True)
        time.sleep(0.5)
        p.stdin.close()          # the client dies: both of its pipe ends are gone
        p.stdout.close()
        rc = p.wait(timeout=60)
        err.seek(0)
        text = err.read()
        assert rc == 0 and "Traceback" not in text, text[-2000:]
        _, alive = psutil.wait_procs(kids, timeout=15)
        assert alive == []
    finally:
        if p.poll() is None:
            p.kill()
            p.wait(timeout=10)
        err.close()


def _replies(p: subprocess.Popen, ids: set, timeout: float = 90) -> dict:
    """Read replies until every id in ``ids`` is answered or the deadline passes (raw reads
    of the pipe: a buffered readline could hold lines that select() no longer reports)."""
    import selectors
    out: dict = {}
    buf = b""
    fd = p.stdout.fileno()
    sel = selectors.DefaultSelector()
    sel.register(fd, selectors.EVENT_READ)
    deadline = time.monotonic() + timeout
    while not ids <= set(out) and time.monotonic() < deadline:
        if not sel.select(timeout=0.5):
            continue
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            break
        buf += chunk
        *lines, buf = buf.split(b"\n")
        for line in lines:
            msg = json.loads(line)
            if "id" in msg:
                out[msg["id"]] = msg
    sel.close()
    return out


def test_pipelined_calls_run_in_the_order_they_were_sent(tmp_path):
    p = _start("virtual", subprocess.DEVNULL)
    try:
        _send(p, INIT)
        assert set(_replies(p, {1})) == {1}
        _send(p, INITIALIZED)
        ids = set(range(10, 30))
        for i in sorted(ids):     # sent back to back, no waiting for replies
            _send(p, _call(i, f"echo {i} >> /tmp/order"))
        _send(p, _call(99, "cat /tmp/order"))
        got = _replies(p, ids | {99})
        assert set(got) == ids | {99}
        text = got[99]["result"]["content"][0]["text"]
        assert text.split("stdout:\n")[1].split("\ncwd:")[0].split() == [str(i) for i in sorted(ids)]
    finally:
        p.kill()
        p.wait(timeout=10)


def test_cancelling_a_queued_call_neither_runs_it_nor_interrupts_the_running_one(tmp_path):
    p = _start("virtual", subprocess.DEVNULL)
    try:
        _send(p, INIT)
        assert set(_replies(p, {1})) == {1}
        _send(p, INITIALIZED)
        _send(p, _call(2, "sleep 3; echo first-done"))
        _send(p, _call(3, "touch /tmp/queued-ran; echo queued"))
        time.sleep(1)             # 2 is running, 3 waits for its turn
        _send(p, {"jsonrpc": "2.0", "method": "notifications/cancelled",
                  "params": {"requestId": 3, "reason": "changed my mind"}})
        got = _replies(p, {2})
        assert "exit code: 0" in got[2]["result"]["content"][0]["text"]
        assert "first-done" in got[2]["result"]["content"][0]["text"]
        _send(p, _call(4, "ls /tmp/queued-ran"))
        got = _replies(p, {4})
        assert "No such file" in got[4]["result"]["content"][0]["text"]
    finally:
        p.kill()
        p.wait(timeout=10)


def test_a_missing_resource_is_the_not_found_error_of_the_negotiated_protocol(tmp_path):
    p = _start("virtual", subprocess.DEVNULL)
    try:
        _send(p, INIT)                 # 2025-06-18: "resource not found" is -32002, uri in data
        assert _replies(p, {1})[1]["result"]["protocolVersion"] == "2025-06-18"
        _send(p, INITIALIZED)
        _send(p, {"jsonrpc": "2.0", "id": 2, "method": "resources/read",
                  "params": {"uri": "file:///workspace/missing.txt"}})
        err = _replies(p, {2})[2]["error"]
        assert err["code"] == -32002 and err["data"] == {"uri": "file:///workspace/missing.txt"}
        assert "No such file" in err["message"]
    finally:
        p.kill()
        p.wait(timeout=10)


def test_stdio_over_a_socketpair_as_node_based_hosts_give_it():
    # libuv (Node: Claude Desktop, VS Code hosts) hands a child UNIX socketpairs, not pipes
    import socket
    a, b = socket.socketpair()
    p = subprocess.Popen([*CMD, "mcp", "-i", "virtual"], stdin=b.fileno(), stdout=b.fileno(),
                         stderr=subprocess.DEVNULL)
    b.close()
    try:
        a.settimeout(60)
        buf = b""

        def recv() -> dict:
            nonlocal buf
            while b"\n" not in buf:
                chunk = a.recv(65536)
                assert chunk, "the server closed the socket"
                buf += chunk
            line, buf = buf.split(b"\n", 1)
            return json.loads(line)

        a.sendall((json.dumps(INIT) + "\n").encode())
        assert recv()["id"] == 1
        a.sendall((json.dumps(INITIALIZED) + "\n" + json.dumps(_call(2, "echo over-a-socket")) + "\n").encode())
        assert "over-a-socket" in recv()["result"]["content"][0]["text"]
        a.shutdown(socket.SHUT_WR)        # the host hangs up
        assert p.wait(timeout=30) == 0
    finally:
        if p.poll() is None:
            p.kill()
            p.wait(timeout=10)
        a.close()
