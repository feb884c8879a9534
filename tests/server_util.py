"""Start `agentic-bash serve` as a child process on a loopback port for the server tests."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.request
from typing import Any

__all__ = ["ServerProc", "k8s_sdk", "poll", "post_json", "start_server"]


class ServerProc:
    def __init__(self, proc: subprocess.Popen, url: str, log: str) -> None:
        self.proc = proc
        self.url = url
        self.log = log

    def output(self) -> str:
        with open(self.log) as f:
            return f.read()

    def get(self, path: str, headers: dict[str, str] | None = None, timeout: float = 30) -> tuple[int, Any]:
        req = urllib.request.Request(self.url + path, headers=headers or {})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        try:
            os.unlink(self.log)
        except OSError:
            pass


def start_server(*args: str, env: dict[str, str] | None = None, timeout: float = 60) -> ServerProc:
    """``agentic-bash serve --host 127.0.0.1 --port 0 ARGS...``; returns once GET / answers."""
    cmd = [sys.executable, "-m", "agentic_bash", "serve", "--host", "127.0.0.1", "--port", "0", *args]
    e = dict(os.environ)
    e.update(env or {})
    # output to a file, not a pipe nobody drains (a full pipe would block the server)
    log = tempfile.NamedTemporaryFile("w+", prefix="agb-serve-", suffix=".log", delete=False)
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=e, text=True,
                            start_new_session=True)
    deadline = time.monotonic() + timeout
    url = None
    while time.monotonic() < deadline and proc.poll() is None:
        with open(log.name) as f:
            m = re.search(r"listening on (http://\S+)", f.read())
        if m:
            url = m.group(1)
            break
        time.sleep(0.05)
    if url is None:
        proc.kill()
        proc.wait(timeout=10)
        with open(log.name) as f:
            raise RuntimeError("server did not start: " + f.read())
    srv = ServerProc(proc, url, log.name)
    while time.monotonic() < deadline:
        try:
            status, body = srv.get("/", timeout=2)
            if status in (200, 401):
                return srv
        except OSError:
            time.sleep(0.05)
    srv.stop()
    raise RuntimeError("server did not answer GET /")


def post_json(url: str, body: Any, headers: dict[str, str] | None = None, timeout: float = 60) -> tuple[int, Any]:
    data = json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method="POST",
                                 headers={"content-type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


class _StandInK8s:
    """The k8s helper the official client asks about its claim: no cluster behind it."""

    injected_api_client = None

    def get_sandbox(self, name, namespace):  # noqa: ANN001, ANN201
        return {"metadata": {"name": name}, "status": {}}

    def delete_sandbox_claim(self, name, namespace):  # noqa: ANN001, ANN201
        pass


def k8s_sdk(url: str) -> Any:
    """The official k8s-agent-sandbox client talking straight to ``url`` (the test is skipped
    where the package is not installed)."""
    import pytest
    pytest.importorskip("k8s_agent_sandbox")
    from k8s_agent_sandbox.models import SandboxDirectConnectionConfig
    from k8s_agent_sandbox.sandbox import Sandbox
    return Sandbox(claim_name="c", sandbox_id="s", namespace="default",
                   connection_config=SandboxDirectConnectionConfig(api_url=url),
                   k8s_helper=_StandInK8s())


def poll(pred: Any, deadline: float = 60.0) -> bool:
    """Whether ``pred()`` came true within ``deadline`` seconds (asked every 50 ms)."""
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.05)
    return False
