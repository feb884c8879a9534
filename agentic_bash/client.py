"""RemoteSandbox: a session of `agentic-bash serve --sessions`, with the methods of Sandbox."""

# stdlib http.client on purpose: the client adds no dependency to the package, and one
# keep-alive connection per RemoteSandbox (behind a lock) is all it needs.

from __future__ import annotations

import base64
import http.client
import json
import os
import threading
import urllib.parse
from typing import Any, AsyncIterator, BinaryIO, Callable, Iterator, Mapping

from .errors import SandboxCrashed, SandboxError, SnapshotError
from .fileapi import FileInfo
from .result import Result
from .streaming import StreamEvent

__all__ = ["RemoteError", "RemoteSandbox"]


class RemoteError(SandboxError):
    """The service refused or failed a call; ``status`` is the HTTP status."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"{status}: {message}")
        self.status = status
        self.message = message


def _result(d: dict[str, Any]) -> Result:
    from .errors import PolicyViolation
    extra = {}
    if d.get("restarted"):
        extra = {"restart_reason": d.get("restart_reason", "")}
    return Result(restarted=bool(d.get("restarted")),
        stdout_bytes=base64.b64decode(d["stdout_b64"]) if "stdout_b64" in d else d.get("stdout", "").encode(),
        stderr_bytes=base64.b64decode(d["stderr_b64"]) if "stderr_b64" in d else d.get("stderr", "").encode(),
        exit_code=int(d.get("exit_code", 0)), duration=float(d.get("duration", 0.0)),
        timed_out=bool(d.get("timed_out")), truncated=bool(d.get("truncated")), cwd=d.get("cwd", ""),
        files_created=tuple(d.get("files_created", ())), files_modified=tuple(d.get("files_modified", ())),
        files_deleted=tuple(d.get("files_deleted", ())), cpu_time=float(d.get("cpu_time", 0.0)),
        files_truncated=bool(d.get("files_truncated")),
        peak_memory=int(d.get("peak_memory", 0)),
        violations=tuple(PolicyViolation(v.get("kind", ""), v.get("detail", ""))
                         for v in d.get("violations", ())),
        extra=extra)


class RemoteSandbox:
    """Like ``Sandbox(...)``, but the session lives in an ``agentic-bash serve --sessions``
    service: ``RemoteSandbox(url, api_key=..., isolation=..., env=..., limits={...}, ttl=...)``.
    ``RemoteSandbox(url, session_id=...)`` attaches to an existing session instead."""

    def __init__(self, url: str, *, api_key: str | None = None, session_id: str | None = None,
                 timeout: float = 600.0, _create: dict[str, Any] | None = None, **options: Any) -> None:
        u = urllib.parse.urlsplit(url)
        if u.scheme not in ("http", "https") or not u.hostname:
            raise ValueError(f"url must be http(s)://host[:port], not {url!r}")
        self.url = url.rstrip("/")
        self._u = u
        self._key = api_key if api_key is not None else os.environ.get("AGENTIC_BASH_API_KEY", "")
        self._timeout = timeout
        self._lock = threading.Lock()
        self._conn: http.client.HTTPConnection | None = None
        self._closed = False
        if "limits" in options and hasattr(options["limits"], "__dataclass_fields__"):
            lim = options["limits"]
            options["limits"] = {k: getattr(lim, k) for k in lim.__dataclass_fields__
                                 if getattr(lim, k) is not None}
        if session_id is None:
            body = dict(_create or {})
            body.update(options)
            info = self._json("POST", "/v1/sessions", body)
            session_id = info["id"]
            self.info = info
        else:
            self.info = self._json("GET", f"/v1/sessions/{session_id}")
        self.id: str = session_id

    # ------------------------------------------------------------------ transport
    def _connection(self) -> http.client.HTTPConnection:
        if self._conn is None:
            cls = http.client.HTTPSConnection if self._u.scheme == "https" else http.client.HTTPConnection
            self._conn = cls(self._u.hostname, self._u.port, timeout=self._timeout)
        return self._conn

    def _request(self, method: str, path: str, body: bytes | None = None,
                 headers: dict[str, str] | None = None, stream: bool = False) -> Any:
        h = {"Authorization": f"Bearer {self._key}", **(headers or {})}
        prefix = self._u.path.rstrip("/")
        for attempt in (0, 1):
            conn = self._connection()
            try:
                conn.request(method, prefix + path, body=body, headers=h)
                resp = conn.getresponse()
            except (ConnectionError, http.client.RemoteDisconnected, http.client.BadStatusLine):
                # a keep-alive connection the server closed meanwhile: one fresh retry
                conn.close()
                self._conn = None
                if attempt:
                    raise
                continue
            if stream and resp.status < 400:
                return resp
            data = resp.read()
            if resp.status >= 400:
                try:
                    msg = json.loads(data).get("error", data.decode(errors="replace"))
                except ValueError:
                    msg = data.decode(errors="replace")
                if resp.status == 500 and "crashed" in msg:
                    raise SandboxCrashed(msg)
                if resp.status == 400 and "snapshot" in msg:
                    raise SnapshotError(msg)
                if resp.status == 404 and "No such file" in msg:
                    raise FileNotFoundError(2, "No such file or directory", msg.split(":")[0])
                raise RemoteError(resp.status, msg)
            return data
        raise AssertionError("unreachable")

    def _json(self, method: str, path: str, body: Any = None) -> Any:
        with self._lock:
            data = self._request(method, path, None if body is None else json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
        return json.loads(data) if data else None

    def _raw(self, method: str, path: str, body: bytes | None = None) -> bytes:
        with self._lock:
            return self._request(method, path, body, {"Content-Type": "application/octet-stream"})

    def _s(self, tail: str = "", **query: Any) -> str:
        q = {k: v for k, v in query.items() if v is not None}
        return f"/v1/sessions/{self.id}{tail}" + (("?" + urllib.parse.urlencode(q)) if q else "")

    # ------------------------------------------------------------------ running
    @staticmethod
    def _exec_body(script: str, stdin: Any, env: Mapping[str, str] | None, cwd: str | None,
                   timeout: float | None) -> dict[str, Any]:
        b: dict[str, Any] = {"command": script}
        if stdin is not None:
            data = stdin.read() if hasattr(stdin, "read") else stdin
            if isinstance(data, str):
                data = data.encode()
            b["stdin_b64"] = base64.b64encode(data).decode()
        if env is not None:
            b["env"] = dict(env)
        if cwd is not None:
            b["cwd"] = cwd
        if timeout is not None:
            b["timeout"] = timeout
        return b

    def run(self, script: str, *, stdin: bytes | str | BinaryIO | None = None,
            env: Mapping[str, str] | None = None, cwd: str | None = None,
            timeout: float | None = None) -> Result:
        return _result(self._json("POST", self._s("/exec"), self._exec_body(script, stdin, env, cwd, timeout)))

    def tty_input(self, data: bytes | str) -> None:
        """As ``Sandbox.tty_input`` with no ``run(tty=...)`` going on: the service runs no
        pseudo-terminal (``run`` here has no ``tty``), so there is never one to type at."""

    def tty_resize(self, rows: int, cols: int) -> None:
        """As ``Sandbox.tty_resize`` with no ``run(tty=...)`` going on (see ``tty_input``)."""

    def stream(self, script: str, **kw: Any) -> Iterator[StreamEvent]:
        """``stdout``/``stderr`` events as the service sends them (SSE), then ``result``."""
        body = self._exec_body(script, kw.get("stdin"), kw.get("env"), kw.get("cwd"), kw.get("timeout"))
        body["stream"] = True
        with self._lock:
            resp = self._request("POST", self._s("/exec"), json.dumps(body).encode(),
                                 {"Content-Type": "application/json"}, stream=True)
            event = None
            for raw in resp:
                line = raw.decode().rstrip("\r\n")
                if line.startswith("event: "):
                    event = line[7:]
                elif line.startswith("data: ") and event:
                    d = json.loads(line[6:])
                    if event in ("stdout", "stderr"):
                        yield StreamEvent(event, base64.b64decode(d["b64"]))
                    elif event == "result":
                        yield StreamEvent("result", result=_result(d))
                    elif event == "error":
                        resp.read()
                        if "crashed" in d.get("error", ""):
                            raise SandboxCrashed(d["error"])
                        raise RemoteError(int(d.get("status", 500)), d.get("error", ""))
                    event = None
            resp.read()

    async def arun(self, script: str, **kw: Any) -> Result:
        """``run()`` on a worker thread; cancelling the awaiting task interrupts the run."""
        import asyncio
        task = asyncio.ensure_future(asyncio.to_thread(lambda: self.run(script, **kw)))
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            await asyncio.to_thread(self.interrupt)
            raise

    async def astream(self, script: str, **kw: Any) -> AsyncIterator[StreamEvent]:
        """``stream()`` for asyncio: events as the service sends them, then ``result``."""
        import asyncio
        it = self.stream(script, **kw)
        done = object()
        while True:
            ev = await asyncio.to_thread(next, it, done)
            if ev is done:
                return
            yield ev

    def run_stream(self, script: str, *, on_stdout: Callable[[bytes], None] | None = None,
                   on_stderr: Callable[[bytes], None] | None = None, **kw: Any) -> Result:
        result = None
        for ev in self.stream(script, **kw):
            if ev.kind == "stdout" and on_stdout:
                on_stdout(ev.data)
            elif ev.kind == "stderr" and on_stderr:
                on_stderr(ev.data)
            elif ev.kind == "result":
                result = ev.result
        if result is None:
            raise SandboxError("the stream ended without a result")
        return result

    # ------------------------------------------------------------------ files
    def write_file(self, path: str, data: bytes | str, mode: int = 0o644) -> None:
        if isinstance(data, str):
            data = data.encode()
        self._raw("PUT", self._s("/files", path=path, mode=f"{mode:o}"), data)

    def read_file(self, path: str) -> bytes:
        return self._raw("GET", self._s("/files", path=path))

    def list_files(self, path: str = ".") -> list[FileInfo]:
        return [FileInfo(**d) for d in self._json("GET", self._s("/files/list", path=path))]

    def exists(self, path: str) -> bool:
        return bool(self._json("GET", self._s("/files/exists", path=path))["exists"])

    def remove(self, path: str, recursive: bool = False) -> None:
        self._raw("DELETE", self._s("/files", path=path, recursive="1" if recursive else None))

    def upload_tar(self, fileobj: BinaryIO | bytes, dest: str = "/workspace") -> None:
        data = fileobj if isinstance(fileobj, (bytes, bytearray)) else fileobj.read()
        self._raw("PUT", self._s("/files/tar", path=dest), bytes(data))

    def download_tar(self, fileobj: BinaryIO | None = None, path: str = "/workspace") -> bytes:
        data = self._raw("GET", self._s("/files/tar", path=path))
        if fileobj is not None:
            fileobj.write(data)
        return data

    # ------------------------------------------------------------------ snapshots
    def snapshot(self, fileobj: BinaryIO | str | os.PathLike[str] | None = None, **_: Any) -> bytes | None:
        """The session's snapshot (also kept by the service as its restore point)."""
        data = self._raw("POST", self._s("/snapshot"))
        if fileobj is None:
            return data
        if isinstance(fileobj, (str, os.PathLike)):
            tmp = os.fspath(fileobj) + ".tmp"
            with open(tmp, "wb") as f:
                f.write(data)
            os.replace(tmp, fileobj)
        else:
            fileobj.write(data)
        return None

    def restore(self, data: bytes | BinaryIO | str | os.PathLike[str], **_: Any) -> None:
        self._raw("POST", self._s("/restore"), _read(data))

    @classmethod
    def from_snapshot(cls, data: bytes | BinaryIO | str | os.PathLike[str], *, url: str,
                      api_key: str | None = None, **options: Any) -> RemoteSandbox:
        return cls(url, api_key=api_key, _create={"snapshot": base64.b64encode(_read(data)).decode()},
                   **options)

    @classmethod
    def from_session(cls, session_id: str, *, url: str, api_key: str | None = None,
                     **options: Any) -> RemoteSandbox:
        """A new session resumed from the last snapshot of ``session_id`` (e.g. one the service
        marked crashed after a restart)."""
        return cls(url, api_key=api_key, _create={"from_session": session_id}, **options)

    def reset(self) -> None:
        self._raw("POST", self._s("/reset"))

    def interrupt(self) -> None:
        """Stop the command running in this session (from another thread)."""
        self._oneshot("POST", self._s("/interrupt"))

    def realpath(self, path: str) -> str:
        return self._json("GET", self._s("/files/realpath", path=path))["realpath"]

    def get_state(self) -> dict[str, Any]:
        return self._json("GET", self._s("/state"))

    def set_state(self, state: dict[str, Any]) -> None:
        self._json("PUT", self._s("/state"), state)

    @property
    def env(self) -> Mapping[str, str]:
        from types import MappingProxyType
        return MappingProxyType(self._json("GET", self._s("/env")))

    @property
    def network_log(self) -> list[dict[str, Any]]:
        """What the service's network proxy did for this session (see Sandbox.network_log)."""
        return list(self._json("GET", self._s("/network_log")))

    @property
    def packages(self) -> list[Any]:
        """``[PackageInfo(name, version, manager)]`` the session installed."""
        from .packages.manifest import PackageInfo
        return [PackageInfo.from_json(v) for v in self._json("GET", self._s("/packages"))]

    @property
    def isolation_level(self) -> str:
        return self.info.get("isolation", "")

    @property
    def transforms(self) -> tuple[Callable[[Any], Any], ...]:
        return ()

    @transforms.setter
    def transforms(self, fns: Any) -> None:
        raise NotImplementedError("AST transforms run in the process that parses; set them on the server")

    def register_command(self, name: str, fn: Callable[..., int]) -> None:
        raise NotImplementedError("custom Python commands run in this process only, not over HTTP")

    def _oneshot(self, method: str, path: str) -> None:
        # its own connection: the shared one is busy with the run being interrupted
        cls = http.client.HTTPSConnection if self._u.scheme == "https" else http.client.HTTPConnection
        conn = cls(self._u.hostname, self._u.port, timeout=30)
        try:
            conn.request(method, self._u.path.rstrip("/") + path,
                         headers={"Authorization": f"Bearer {self._key}"})
            resp = conn.getresponse()
            data = resp.read()
            if resp.status >= 400:
                raise RemoteError(resp.status, data.decode(errors="replace"))
        finally:
            conn.close()

    # ------------------------------------------------------------------ state
    @property
    def cwd(self) -> str:
        return self._json("GET", self._s()).get("cwd", "")

    @property
    def status(self) -> str:
        return self._json("GET", self._s())["status"]

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        """Delete the session on the service (idempotent)."""
        if self._closed:
            return
        self._closed = True
        try:
            self._raw("DELETE", self._s())
        except RemoteError as e:
            if e.status not in (404, 410):
                raise
        finally:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def detach(self) -> None:
        """Drop the connection, leaving the session alive on the service."""
        self._closed = True
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __enter__(self) -> RemoteSandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<RemoteSandbox {self.id} at {self.url}{' closed' if self._closed else ''}>"


def _read(data: bytes | BinaryIO | str | os.PathLike[str]) -> bytes:
    if isinstance(data, (bytes, bytearray)):
        return bytes(data)
    if isinstance(data, (str, os.PathLike)):
        with open(data, "rb") as f:
            return f.read()
    return data.read()
