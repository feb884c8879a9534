"""The agent-sandbox runtime HTTP contract (port 8888) served by one persistent bash Sandbox."""

# Contract (kubernetes-sigs/agent-sandbox examples/python-runtime-sandbox/main.py, which the
# official k8s-agent-sandbox client speaks): GET / health; POST /execute {command,
# timeout_seconds?} -> {stdout, stderr, exit_code, timed_out}, 200 even when the command
# fails; POST /upload (multipart field "file", its filename the destination); GET
# /download/{p}; GET /list/{p}; GET /exists/{p}; bare /list and /exists. Differences from
# upstream, on purpose: the command is bash on a persistent session (upstream: shlex.split and
# no shell, a fresh process each time), timeout_seconds is honoured, a path is percent-decoded
# once (upstream decodes twice), symlinks are resolved as the sandbox sees them (its view is the only
# one; a listed symlink leading out of the base dir is a "file"), an upload replaces its
# file atomically, a client that goes away (its read timeout) interrupts its command (the
# session is one shell: it would hold up every later call), and huge output is cut
# head+tail with a marker instead of being returned whole.
#
# Threads: the event loop never touches the Sandbox; every call runs in a worker thread under
# one lock, so GET / answers while a command runs. File calls do not take that lock when the
# base dir is the host's directory as the sandbox sees it (hostfiles.py): they are served from
# it directly, streamed, while a command runs. A SandboxCrashed is answered with 500; the
# Sandbox restarts itself on the next call over the same files (DESIGN.md decision 10), and if
# even that fails the server builds a new one from its options.

from __future__ import annotations

import logging
import math
import os
import posixpath
import threading
from dataclasses import dataclass
from typing import Any, Callable
from urllib.parse import quote

from ..errors import SandboxCrashed, SandboxError
from ..result import truncate
from .gate import Abandoned, Gate, until_disconnect
from .hostfiles import HostFiles, Upload
from .paths import BadPath, Denied, confine, within

__all__ = ["RuntimeHost", "create_app", "default_base_dir"]

log = logging.getLogger("agentic_bash.server")

SANDBOX_DIR = "/app"            # the base dir as the sandbox sees it; also the initial cwd
DEFAULT_TIMEOUT = 300.0         # upstream's SANDBOX_EXEC_TIMEOUT_SECONDS default
DEFAULT_MAX_OUTPUT = 1 << 20    # bytes kept per stream in an /execute reply (head + tail)


def default_base_dir() -> str:
    """The host directory shown as /app: ``SANDBOX_BASE_DIR``, else ``/app`` (as upstream)."""
    return os.environ.get("SANDBOX_BASE_DIR", "").strip() or "/app"


def default_timeout() -> float | None:
    """``SANDBOX_EXEC_TIMEOUT_SECONDS`` (upstream's knob; an invalid value means upstream's
    300), else None: the Sandbox's own ``Limits.timeout`` (``--timeout``) applies."""
    raw = os.environ.get("SANDBOX_EXEC_TIMEOUT_SECONDS", "").strip()
    if not raw:
        return None
    try:
        v = float(raw)
    except ValueError:
        return DEFAULT_TIMEOUT
    return v if math.isfinite(v) and v > 0 else DEFAULT_TIMEOUT


@dataclass
class _Outcome:
    value: Any = None
    restarted: str | None = None


class RuntimeHost:
    """One Sandbox behind a lock; recreated by ``factory`` when its process dies."""

    def __init__(self, factory: Callable[[], Any]) -> None:
        self._factory = factory
        self._lock = threading.Lock()
        self._sb: Any = None
        self._restart_reason: str | None = None
        self._crashed = False     # the last call ended in SandboxCrashed
        self._closing = False
        self.restarts = 0

    def start(self) -> None:
        with self._lock:
            if self._sb is None:
                self._sb = self._factory()

    @property
    def sandbox(self) -> Any:
        return self._sb

    @property
    def closing(self) -> bool:
        """stop() was called: calls are refused from now on."""
        return self._closing

    def call(self, fn: Callable[[Any], Any]) -> _Outcome:
        """``fn(sandbox)`` under the lock. A SandboxCrashed propagates (the caller answers
        500); the Sandbox restarts itself on its next call (its Result says so). Only if that
        restart fails too is the Sandbox replaced from the factory and the call retried once;
        the outcome then says it was restarted and why."""
        with self._lock:
            if self._closing:
                raise SandboxError("the server is shutting down")
            if self._sb is None:
                self._sb = self._factory()
            try:
                value = fn(self._sb)
            except SandboxCrashed as e:
                if not self._crashed:
                    self._crashed = True
                    raise
                self._replace(str(e))
                value = fn(self._sb)
            self._crashed = False
            reason, self._restart_reason = self._restart_reason, None
            return _Outcome(value, reason)

    def _replace(self, reason: str) -> None:
        log.warning("sandbox could not restart (%s); starting a new one", reason)
        old, self._sb = self._sb, None
        try:
            old.close()
        except Exception:  # noqa: BLE001 - the old process is gone; close() only tidies up
            pass
        self.restarts += 1
        self._restart_reason = reason
        self._sb = self._factory()

    def interrupt(self) -> None:
        """Interrupt the command running now, if any (any thread)."""
        sb = self._sb
        if sb is not None:
            try:
                sb.interrupt()
            except Exception:  # noqa: BLE001 - a dead sandbox has nothing to interrupt
                pass

    def stop(self) -> None:
        """Shutting down: the command running (if any) is interrupted, and calls that come
        or still wait are refused (SandboxError), so every request is answered quickly."""
        self._closing = True
        sb = self._sb
        if sb is not None:
            try:
                sb.interrupt()
            except Exception:  # noqa: BLE001 - closing anyway
                pass

    def close(self) -> None:
        """stop(), then close the Sandbox."""
        self.stop()
        with self._lock:
            if self._sb is not None:
                self._sb.close()
                self._sb = None


def _msg(status: int, message: str) -> Any:
    from starlette.responses import JSONResponse
    return JSONResponse({"message": message}, status_code=status)


def _invalid(message: str, loc: tuple[Any, ...], kind: str) -> Any:
    """A 422 with our ``message`` and the ``detail`` list upstream's FastAPI sends (type, loc,
    msg), so a client written against either finds what it reads."""
    from starlette.responses import JSONResponse
    return JSONResponse({"message": message, "detail": [{"type": kind, "loc": list(loc), "msg": message}]},
                        status_code=422)


def _resolve(sb: Any, user_path: str, base: str = SANDBOX_DIR) -> str:
    """The sandbox path for a client path, symlinks resolved; Denied/BadPath otherwise."""
    full = confine(user_path, base)
    real = sb.realpath(full)
    if not within(real, base):
        raise Denied(user_path)
    return real


def _entry_type(sb: Any, info: Any, listings: dict[str, dict[str, Any]]) -> tuple[str, int]:
    """(file|directory, size) of a listing entry, a symlink reported as its target
    (``listings`` caches the directories looked into, so n links cost one listing each)."""
    if info.type == "dir":
        return "directory", info.size
    if info.type != "symlink":
        return "file", info.size
    target = sb.realpath(info.path)
    parent, name = posixpath.split(target)
    parent = parent or "/"
    if parent not in listings:
        try:
            listings[parent] = {e.name: e for e in sb.list_files(parent)}
        except OSError:
            listings[parent] = {}
    e = listings[parent].get(name)
    if e is not None and e.type != "symlink":
        return ("directory" if e.type == "dir" else "file"), e.size
    return "file", info.size   # dangling or looping: what os.DirEntry.is_dir() says too


def _list(sb: Any, user_path: str, base: str) -> list[dict[str, Any]]:
    real = _resolve(sb, user_path, base)
    entries = sb.list_files(real)
    if len(entries) == 1 and entries[0].path == real:
        raise NotADirectoryError(real)   # list_files() of a file is the file itself
    out = []
    listings: dict[str, dict[str, Any]] = {}
    for info in entries:
        kind, size = _entry_type(sb, info, listings)
        out.append({"name": info.name, "size": size, "type": kind, "mod_time": info.mtime})
    out.sort(key=lambda e: e["name"])
    return out


class _FilePart:
    """python-multipart callbacks keeping the first part named "file" that has a filename
    (any part named "file" unless ``need_filename``): its (decoded) filename once its headers
    are read, its data as it comes."""

    def __init__(self, charset: bytes, need_filename: bool = True) -> None:
        self._need_filename = need_filename
        import codecs
        try:
            self._charset = codecs.lookup(charset.decode("latin-1")).name
        except LookupError:
            self._charset = "latin-1"
        self._field = b""
        self._value = b""
        self._disposition = b""
        self._current = False
        self.found = False        # its headers were read
        self.done = False         # its end was read
        self.filename: str | None = None
        self.pending: list[bytes] = []

    def callbacks(self) -> dict[str, Any]:
        return {"on_part_begin": self._begin, "on_part_data": self._data, "on_part_end": self._end,
                "on_header_field": self._hfield, "on_header_value": self._hvalue,
                "on_header_end": self._hend, "on_headers_finished": self._headers_done}

    def _decode(self, raw: bytes) -> str:
        try:
            return raw.decode(self._charset)
        except UnicodeDecodeError:
            return raw.decode("latin-1")   # as starlette (upstream's parser) does

    def _begin(self) -> None:
        self._disposition = b""
        self._current = False

    def _hfield(self, data: bytes, start: int, end: int) -> None:
        self._field += data[start:end]

    def _hvalue(self, data: bytes, start: int, end: int) -> None:
        self._value += data[start:end]

    def _hend(self) -> None:
        if self._field.lower() == b"content-disposition":
            self._disposition = self._value
        self._field = self._value = b""

    def _headers_done(self) -> None:
        from python_multipart.multipart import parse_options_header
        _, opts = parse_options_header(self._disposition)
        if not self.found and opts.get(b"name") == b"file" and (
                b"filename" in opts or not self._need_filename):
            self.found = self._current = True
            self.filename = self._decode(opts[b"filename"]) if b"filename" in opts else None

    def _data(self, data: bytes, start: int, end: int) -> None:
        if self._current:
            self.pending.append(bytes(data[start:end]))

    def _end(self) -> None:
        if self._current:
            self._current = False
            self.done = True


class _FileBody:
    """A download's body: ``size`` bytes of ``fd`` in pieces (read on worker threads by
    Starlette); the fd is closed at the end, or when the reply is dropped unsent."""

    def __init__(self, fd: int, size: int) -> None:
        self._fd = fd
        self._it = HostFiles.chunks(fd, size)

    def __iter__(self) -> "_FileBody":
        return self

    def __next__(self) -> bytes:
        if self._fd < 0:
            raise StopIteration
        try:
            return next(self._it)
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        if self._fd >= 0:
            fd, self._fd = self._fd, -1
            os.close(fd)

    __del__ = close


def create_app(host: RuntimeHost, *, default_timeout_s: float | None = None,
               max_output: int = DEFAULT_MAX_OUTPUT, max_body: int = 512 << 20,
               sandbox_dir: str = SANDBOX_DIR, files: HostFiles | None = None) -> Any:
    """The Starlette app speaking the runtime contract over ``host``; file paths are
    confined to ``sandbox_dir`` as the sandbox sees it. With ``files`` (the host directory
    shown as ``sandbox_dir``) file calls are served from it, streamed, without waiting for
    a running command; else through the Sandbox's file API under its lock."""
    from anyio import CapacityLimiter, to_thread
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response, StreamingResponse
    from starlette.routing import Route

    timeout_default = default_timeout_s if default_timeout_s is not None else default_timeout()
    head = max_output // 2
    tail = max_output - head

    limiters: dict[str, Any] = {}

    def limiter(kind: str) -> Any:
        # commands waiting for the sandbox and file calls each have their own threads, so
        # neither can use up the threads the other needs (made on the loop, at first use)
        if kind not in limiters:
            limiters[kind] = CapacityLimiter(40 if kind == "run" else 16)
        return limiters[kind]

    async def run(fn: Callable[[Any], Any]) -> _Outcome:
        return await to_thread.run_sync(host.call, fn, limiter=limiter("run"))

    async def direct(fn: Callable[..., Any], *args: Any) -> Any:
        return await to_thread.run_sync(fn, *args, limiter=limiter("files"))

    async def health(request: Request) -> Response:
        return JSONResponse({"status": "ok", "message": "Sandbox Runtime is active."})

    async def execute(request: Request) -> Response:
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > max_body:
            return _msg(413, f"the body is larger than the server's limit of {max_body} bytes")
        try:
            body = await request.json()
        except ValueError:
            return _invalid("the body must be JSON: {\"command\": \"...\"}", ("body",), "json_invalid")
        if not isinstance(body, dict):
            return _invalid("the body must be a JSON object: {\"command\": \"...\"}", ("body",),
                            "model_attributes_type")
        if not isinstance(body.get("command"), str):
            return _invalid("field 'command' (a string) is required", ("body", "command"),
                            "missing" if body.get("command") is None else "string_type")
        t = body.get("timeout_seconds")
        if t is None:
            t = timeout_default
        elif isinstance(t, bool) or not isinstance(t, (int, float)) or not (math.isfinite(t) and t > 0):
            return _invalid("field 'timeout_seconds' must be a positive number", ("body", "timeout_seconds"),
                            "greater_than")
        command = body["command"]
        tt = None if t is None else float(t)
        gate = Gate()
        try:
            out = await until_disconnect(request.receive, gate, host.interrupt,
                                         lambda: run(lambda sb: gate.run(lambda: sb.run(command, timeout=tt))))
        except Abandoned:
            return _msg(499, "the client went away before the command started")
        except SandboxCrashed as e:
            return _msg(500, f"the sandbox crashed; the next call restarts it: {e}")
        except SandboxError as e:
            return _msg(500, f"{type(e).__name__}: {e}")
        except (TypeError, ValueError) as e:     # arguments the Sandbox refused before running
            return _invalid(str(e), ("body",), "value_error")
        r = out.value
        stdout, stderr = r.stdout, r.stderr
        cut = r.truncated
        if len(r.stdout_bytes) > max_output:
            stdout, cut = truncate(stdout, head, tail), True
        if len(r.stderr_bytes) > max_output:
            stderr, cut = truncate(stderr, head, tail), True
        reply: dict[str, Any] = {"stdout": stdout, "stderr": stderr, "exit_code": r.exit_code,
                                 "timed_out": r.timed_out}
        if cut:
            reply["truncated"] = True
        restarted = out.restarted or (r.extra.get("restart_reason") if getattr(r, "restarted", False) else None)
        if restarted:
            reply["restarted"] = True
            reply["restart_reason"] = restarted
        return JSONResponse(reply)

    async def file_op(fn: Callable[[Any], Any]) -> Any:
        try:
            return (await run(fn)).value
        except Denied:
            return _msg(403, "Access denied")
        except BadPath as e:
            return _msg(400, str(e))
        except SandboxCrashed as e:
            return _msg(500, f"the sandbox crashed; the next call restarts it: {e}")

    async def upload(request: Request) -> Response:
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > max_body:
            return _msg(413, f"the upload is larger than the server's limit of {max_body} bytes")
        if files is not None:
            return await upload_direct(request)
        try:
            form = await request.form(max_part_size=max_body)
        except Exception as e:  # noqa: BLE001 - a malformed multipart body
            return _invalid(f"could not read the multipart body: {e}", ("body",), "value_error")
        f = form.get("file")
        if f is None or isinstance(f, str) or not getattr(f, "filename", None):
            return _invalid("a multipart field 'file' with a filename is required", ("body", "file"), "missing")
        name = f.filename
        if f.size is not None and f.size > max_body:
            return _msg(413, f"the upload is larger than the server's limit of {max_body} bytes")
        data = await f.read()

        def write(sb: Any) -> Any:
            dest = _resolve(sb, name, sandbox_dir)
            if dest == sandbox_dir:
                return _msg(400, "the filename does not name a file")
            sb.write_file(dest, data)
            return JSONResponse({"message": f"File '{name}' uploaded successfully."})
        try:
            return await file_op(write)
        except SandboxError as e:
            return _msg(500, f"File upload failed: {e}")
        except OSError as e:
            return _msg(500, f"File upload failed: {e.strerror or e}")

    async def upload_direct(request: Request) -> Response:
        """The multipart body streamed into the destination (memory: one piece at a time;
        the body past ``max_body`` is 413, however it is framed)."""
        from python_multipart.multipart import MultipartParser, parse_options_header
        ctype, params = parse_options_header(request.headers.get("content-type"))
        if ctype != b"multipart/form-data" or not params.get(b"boundary"):
            return _invalid("could not read the multipart body: the content type must be "
                            "multipart/form-data with a boundary", ("body",), "value_error")
        part = _FilePart(params.get(b"charset", b"utf-8"))
        parser = MultipartParser(params[b"boundary"], part.callbacks())
        up: Upload | None = None
        failed: Response | None = None
        total = 0
        try:
            async for chunk in request.stream():
                total += len(chunk)
                if total > max_body:
                    return _msg(413, f"the upload is larger than the server's limit of {max_body} bytes")
                if failed is not None:
                    continue          # read to the end, so the client gets the answer
                try:
                    parser.write(chunk)
                except Exception as e:  # noqa: BLE001 - python-multipart's parse errors
                    failed = _invalid(f"could not read the multipart body: {e}", ("body",), "value_error")
                    continue
                if part.found and up is None:
                    failed = opened = await open_upload(part.filename)
                    if isinstance(opened, Upload):
                        up, failed = opened, None
                if part.pending:
                    data = b"".join(part.pending)
                    part.pending.clear()
                    if up is not None:
                        await direct(up.write, data)
            if failed is not None:
                return failed
            try:
                parser.finalize()
            except Exception as e:  # noqa: BLE001
                return _invalid(f"could not read the multipart body: {e}", ("body",), "value_error")
            if up is None:
                return _invalid("a multipart field 'file' with a filename is required", ("body", "file"), "missing")
            if not part.done:
                return _invalid("could not read the multipart body: it ended inside the file",
                                ("body",), "value_error")
            u, up = up, None
            try:
                await direct(u.commit)
            except OSError as e:
                return _msg(500, f"File upload failed: {e.strerror or e}")
            return JSONResponse({"message": f"File '{part.filename}' uploaded successfully."})
        finally:
            if up is not None:
                up.abort()    # (here, not on a thread: this may run while being cancelled)

    async def on_host(what: str, fn: Callable[..., Any], *args: Any) -> tuple[Any, Response | None]:
        """``fn(*args)`` on the host's view of the base dir: (its result, None), or (None,
        the reply its refusal gets)."""
        try:
            return await direct(fn, *args), None
        except Denied:
            return None, _msg(403, "Access denied")
        except BadPath as e:
            return None, _msg(400, str(e))
        except OSError as e:
            return None, _msg(500, f"{what} failed: {e.strerror or e}")

    async def open_upload(name: str | None) -> Any:
        """An Upload to the client's ``name``, or the reply that refuses it."""
        if not name:
            return _invalid("a multipart field 'file' with a filename is required", ("body", "file"), "missing")
        assert files is not None
        try:
            if confine(name, sandbox_dir) == sandbox_dir.rstrip("/"):
                return _msg(400, "the filename does not name a file")
            return await direct(Upload, files, name)
        except Denied:
            return _msg(403, "Access denied")
        except BadPath as e:
            return _msg(400, str(e))
        except OSError as e:
            return _msg(500, f"File upload failed: {e.strerror or e}")

    async def download(request: Request) -> Response:
        p = request.path_params.get("path", "")
        if files is not None:
            got, refused = await on_host("Download", files.open_file, p)
            if refused is not None:
                return refused
            if got is None:
                return _msg(404, "File not found")
            fd, size = got
            fname = posixpath.basename(p) or "download"
            return StreamingResponse(_FileBody(fd, size), media_type="application/octet-stream", headers={
                "content-disposition": f"attachment; filename*=utf-8''{quote(fname)}",
                "content-length": str(size)})

        def read(sb: Any) -> Any:
            real = _resolve(sb, p, sandbox_dir)
            try:
                data = sb.read_file(real)
            except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
                return _msg(404, "File not found")
            fname = posixpath.basename(p) or "download"
            return Response(data, media_type="application/octet-stream", headers={
                "content-disposition": f"attachment; filename*=utf-8''{quote(fname)}"})
        return await file_op(read)

    async def list_dir(request: Request) -> Response:
        p = request.path_params.get("path", "")
        if files is not None:
            entries, refused = await on_host("List files", files.listing, p)
            if refused is not None:
                return refused
            if entries is None:
                return _msg(404, "Path is not a directory")
            entries.sort(key=lambda e: str(e["name"]))
            return JSONResponse(entries)

        def listing(sb: Any) -> Any:
            try:
                return JSONResponse(_list(sb, p, sandbox_dir))
            except (FileNotFoundError, NotADirectoryError):
                return _msg(404, "Path is not a directory")
            except OSError as e:
                return _msg(500, f"List files failed: {e.strerror or e}")
        return await file_op(listing)

    async def exists(request: Request) -> Response:
        p = request.path_params.get("path", "")
        if files is not None:
            ok, refused = await on_host("Exists", files.exists, p)
            if refused is not None:
                return refused
            return JSONResponse({"path": p, "exists": ok})

        def check(sb: Any) -> Any:
            return JSONResponse({"path": p, "exists": bool(sb.exists(_resolve(sb, p, sandbox_dir)))})
        return await file_op(check)

    routes = [
        Route("/", health, methods=["GET"]),
        Route("/execute", execute, methods=["POST"]),
        Route("/upload", upload, methods=["POST"]),
        Route("/download/{path:path}", download, methods=["GET"]),
        Route("/list", list_dir, methods=["GET"]),
        Route("/list/{path:path}", list_dir, methods=["GET"]),
        Route("/exists", exists, methods=["GET"]),
        Route("/exists/{path:path}", exists, methods=["GET"]),
    ]
    from .sandboxd import sandboxd_routes
    routes += sandboxd_routes(files, direct, max_body=max_body, ready=lambda: not host.closing,
                              host=host, inside=sandbox_dir)

    async def http_error(request: Request, exc: Exception) -> Response:
        # unknown paths and methods answer JSON like upstream's FastAPI ({"detail": ...})
        status = getattr(exc, "status_code", 500)
        return JSONResponse({"detail": getattr(exc, "detail", "") or "error"}, status_code=status,
                            headers=getattr(exc, "headers", None))

    from starlette.exceptions import HTTPException
    app = Starlette(routes=routes, exception_handlers={HTTPException: http_error})
    app.router.redirect_slashes = False
    app.state.host = host
    return app


def sandbox_factory(base_dir: str, **sandbox_kwargs: Any) -> tuple[Callable[[], Any], str]:
    """(a factory of Sandboxes, the base dir as they see it). The host's ``base_dir`` is
    mounted read-write at /app, their initial cwd; with isolation "none" (the host's own
    view, no mounts) it is used at its own path instead. The base dir is created if missing
    (SandboxError if it cannot be)."""
    from ..session import Sandbox
    try:
        os.makedirs(base_dir, exist_ok=True)
    except OSError as e:
        raise SandboxError(f"cannot create the base directory {base_dir}: {e.strerror}; set "
                           "SANDBOX_BASE_DIR or --base-dir to a writable directory") from None
    real = os.path.realpath(base_dir)
    mounts = dict(sandbox_kwargs.pop("mounts", None) or {})
    if sandbox_kwargs.get("isolation") == "none":
        inside = real
    else:
        inside = SANDBOX_DIR
        mounts[SANDBOX_DIR] = (real, "rw")
    sandbox_kwargs["workdir"] = inside

    def make() -> Any:
        return Sandbox(mounts=mounts or None, **sandbox_kwargs)
    return make, inside


def direct_files(base_dir: str, **sandbox_kwargs: Any) -> HostFiles | None:
    """The host directory as the runtime's file calls may use it directly (hostfiles.py):
    None when the sandbox's view of the base dir may differ from the host's (another mount
    inside it, hide=/read_only= rules), and file calls then go through the Sandbox."""
    if sandbox_kwargs.get("hide") or sandbox_kwargs.get("read_only"):
        return None
    real = os.path.realpath(base_dir)
    inside = real if sandbox_kwargs.get("isolation") == "none" else SANDBOX_DIR
    for dest in (sandbox_kwargs.get("mounts") or {}):
        d = posixpath.normpath("/" + str(dest).lstrip("/"))
        if within(d, inside) or within(inside, d):
            return None
    return HostFiles(real, inside)
