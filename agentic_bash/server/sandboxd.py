"""sandboxd's Filesystem & Runtime REST API (/v1/files, /v1/health, /v1/metadata) over the base directory."""

# Contract: kubernetes-sigs/agent-sandbox packages/sandboxd (KEP-539.2), spec/filesystem/v1/
# filesystem.yaml and pkg/server/filesystem.go, which the official client speaks with its
# Sandboxd* connection configs. GET a file -> its bytes (Content-Length, Last-Modified), a
# directory -> {"path", "entries": [{name, size, type, modified_at, mode}]} (a symlink as its
# target, one leading out of the root or dangling left out); HEAD the same without a body;
# PUT raw bytes or a multipart "file" part -> 204, written atomically, parents created,
# ?mode=0NNN (default 0644); DELETE -> 204, ?recursive=true, 409 on a non-empty directory,
# the root itself only emptied; errors {"code", "message"} with 400/403/404/409. Served from
# the host directory as the sandbox sees it (hostfiles.py: fd-by-fd O_NOFOLLOW walk, symlinks
# with the sandbox's meaning, nothing outside the root), so calls never wait for a command.
# Differences on purpose: DELETE of a symlink removes the link (upstream resolves it first and
# removes the target); a listing holds at most MAX_LIST entries (the first by name); a body
# past --max-body is 413; a FIFO or device is 400 (upstream would block opening a FIFO).

from __future__ import annotations

import errno
import os
import posixpath
import shutil
import stat
import time
from typing import Any, Awaitable, Callable

from ..errors import SandboxError
from .hostfiles import MAX_LIST, HostFiles, Upload
from .paths import BadPath, Denied

__all__ = ["sandboxd_routes", "metadata_env"]

_SENSITIVE = ("TOKEN", "SECRET", "PASSWORD", "PASSWD", "CRED", "KEY", "AUTH", "BEARER", "PRIVATE", "CERT")
_TRUE = {"1", "t", "T", "TRUE", "true", "True"}
_FALSE = {"0", "f", "F", "FALSE", "false", "False"}


def _recursive(arg: str | None) -> bool | None:
    """sandboxd's ``recursive`` query value (Go's strconv.ParseBool); None when not a boolean."""
    if not arg or arg in _FALSE:
        return False
    return True if arg in _TRUE else None


def metadata_env(prefix: str = "SANDBOX_", environ: dict[str, str] | None = None) -> dict[str, str]:
    """Environment variables named ``prefix``... that do not look like credentials (as
    sandboxd's /v1/metadata: untrusted code in the sandbox can read it)."""
    src = os.environ if environ is None else environ
    return {k: v for k, v in src.items()
            if k.startswith(prefix) and not any(m in k.upper() for m in _SENSITIVE)}


def _rfc3339(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def _http_date(t: float) -> str:
    from email.utils import formatdate   # (English day and month names whatever LC_TIME)
    return formatdate(t, usegmt=True)


class _Files:
    """The calls behind the routes, on the host's view of the root (run on worker threads)."""

    def __init__(self, files: HostFiles) -> None:
        self.files = files
        self.inside = files.inside

    def rel(self, p: str) -> str:
        """A client path relative to the root: the root's own absolute path is cut off first
        (as sandboxd does), then hostfiles treats what is left as relative."""
        if p == self.inside:
            return ""
        if self.inside != "/" and p.startswith(self.inside + "/"):
            return p[len(self.inside) + 1:]
        return p

    def get(self, p: str, head: bool) -> tuple[str, Any]:
        """("file", (fd or -1, size, mtime)) | ("dir", listing) | ("missing", None) |
        ("special", None)."""
        try:
            r = self.files.resolve(self.rel(p))
        except (FileNotFoundError, NotADirectoryError):
            return "missing", None
        with r:
            st = r.st
            if st is None:
                return "missing", None
            if stat.S_ISDIR(st.st_mode):
                return "dir", self._listing(r, p)
            if not stat.S_ISREG(st.st_mode):
                return "special", None
            if head:
                return "file", (-1, st.st_size, st.st_mtime)
            assert r.name is not None
            try:
                fd = os.open(r.name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                             dir_fd=r.dirfd)
            except OSError as e:
                if e.errno in (errno.ENOENT, errno.ELOOP, errno.ENOTDIR):
                    return "missing", None      # replaced since it was resolved
                raise
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            os.close(fd)
            return "special", None
        return "file", (fd, st.st_size, st.st_mtime)

    def _listing(self, r: Any, p: str) -> list[dict[str, Any]]:
        fd = os.open("." if r.name is None else r.name,
                     os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=r.dirfd)
        try:
            with os.scandir(fd) as it:
                names = sorted(de.name for de in it)[:MAX_LIST]
            base = self.rel(p).rstrip("/")
            out: list[dict[str, Any]] = []
            for name in names:
                try:
                    st = os.stat(name, dir_fd=fd, follow_symlinks=False)
                except FileNotFoundError:
                    continue                     # removed meanwhile
                if stat.S_ISLNK(st.st_mode):
                    try:
                        with self.files.resolve(f"{base}/{name}" if base else name) as t:
                            if t.st is None:
                                continue         # dangling: left out, as sandboxd does
                            st = t.st
                    except (Denied, BadPath, OSError):
                        continue                 # leading out of the root, or looping
                out.append({"name": name, "size": st.st_size,
                            "type": "directory" if stat.S_ISDIR(st.st_mode) else "file",
                            "modified_at": _rfc3339(st.st_mtime),
                            "mode": "%04o" % stat.S_IMODE(st.st_mode)})
            return out
        finally:
            os.close(fd)

    def open_upload(self, p: str, mode: int) -> Upload:
        return Upload(self.files, self.rel(p), mode, force_mode=True)

    def is_dir(self, p: str) -> bool:
        try:
            with self.files.resolve(self.rel(p)) as r:
                return r.st is not None and stat.S_ISDIR(r.st.st_mode)
        except (FileNotFoundError, NotADirectoryError):
            return False

    def delete(self, p: str, recursive_arg: str | None) -> tuple[int, str, str] | None:
        """None when removed, else (status, code, message)."""
        try:
            r = self.files.resolve(self.rel(p), follow=False)
        except (FileNotFoundError, NotADirectoryError):
            r = None
        if r is None or r.st is None:
            if r is not None:
                r.close()
            return 404, "NOT_FOUND", "path does not exist within the sandbox"
        with r:
            recursive = _recursive(recursive_arg)
            if recursive is None:
                return 400, "INVALID_ARGUMENT", f"recursive {recursive_arg!r} must be a boolean"
            if r.name is None:                   # the root: emptied, never removed
                if not recursive:
                    return 409, "CONFLICT", ("cannot delete the sandbox root; pass recursive=true "
                                             "to clear its contents")
                fd = os.open(".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=r.dirfd)
                try:
                    for name in os.listdir(fd):
                        self._remove(fd, name, True)
                finally:
                    os.close(fd)
                return None
            self._remove(r.dirfd, r.name, recursive)
            return None

    @staticmethod
    def _remove(dirfd: int, name: str, recursive: bool) -> None:
        st = os.stat(name, dir_fd=dirfd, follow_symlinks=False)
        if not stat.S_ISDIR(st.st_mode):
            os.unlink(name, dir_fd=dirfd)
        elif recursive:
            shutil.rmtree(name, dir_fd=dirfd)    # fd-based: never follows a symlink out
        else:
            os.rmdir(name, dir_fd=dirfd)


class _Buffered:
    """An upload through the Sandbox's file API: kept in memory (the body is bounded by
    --max-body), written at ``commit``."""

    def __init__(self, write: Callable[[bytes], None]) -> None:
        self._write = write
        self._parts: list[bytes] = []

    def write(self, data: bytes) -> None:
        self._parts.append(bytes(data))

    def commit(self) -> None:
        self._write(b"".join(self._parts))

    def abort(self) -> None:
        self._parts.clear()


class _SandboxOps:
    """The same calls through the Sandbox's file API under the session lock, for when the
    host's directory is not what the sandbox sees (a --mount inside the root, hide= or
    read_only= rules, which the Sandbox applies): they wait for a running command."""

    def __init__(self, host: Any, inside: str) -> None:
        self.host = host
        self.inside = inside.rstrip("/") or "/"
        self.rel = _Files.rel.__get__(self)          # (the same path rules)

    def _call(self, fn: Callable[[Any], Any]) -> Any:
        return self.host.call(fn).value

    def _real(self, sb: Any, p: str, follow: bool = True) -> str:
        from .paths import confine, within
        full = confine(self.rel(p), self.inside)
        if follow:
            real = sb.realpath(full)
        else:
            parent, name = posixpath.split(full)
            real = full if full == self.inside else posixpath.join(sb.realpath(parent), name)
        if not within(real, self.inside):
            raise Denied(p)
        return real

    def _kind(self, sb: Any, real: str) -> Any:
        """The entry of ``real`` in its parent's listing (None: missing)."""
        if real == self.inside or real == "/":
            return "root"
        parent, name = posixpath.split(real)
        try:
            return next((e for e in sb.list_files(parent or "/", limit=None) if e.name == name), None)
        except (FileNotFoundError, NotADirectoryError):
            return None

    def get(self, p: str, head: bool) -> tuple[str, Any]:
        def fn(sb: Any) -> tuple[str, Any]:
            from .paths import within
            real = self._real(sb, p)
            me = self._kind(sb, real)
            if me is None:
                return "missing", None
            if me != "root" and me.type == "file":
                data = b"" if head else sb.read_file(real)
                return "file", (data, me.size, me.mtime)
            if me != "root" and me.type != "dir":
                return "missing", None               # a dangling link
            out = []
            for e in sb.list_files(real, limit=MAX_LIST):
                info = e
                if e.type == "symlink":
                    t = sb.realpath(e.path)
                    if not within(t, self.inside):
                        continue
                    info = self._kind(sb, t)
                    if info is None or info == "root" or info.type == "symlink":
                        continue
                out.append({"name": e.name, "size": info.size,
                            "type": "directory" if info.type == "dir" else "file",
                            "modified_at": _rfc3339(info.mtime), "mode": "%04o" % (info.mode & 0o7777)})
            return "dir", out
        try:
            return self._call(fn)
        except (FileNotFoundError, NotADirectoryError):
            return "missing", None

    def is_dir(self, p: str) -> bool:
        def fn(sb: Any) -> bool:
            me = self._kind(sb, self._real(sb, p))
            return me == "root" or (me is not None and me.type == "dir")
        return bool(self._call(fn))

    def open_upload(self, p: str, mode: int) -> _Buffered:
        def write(data: bytes) -> None:
            self._call(lambda sb: sb.write_file(self._real(sb, p), data, mode))
        return _Buffered(write)

    def delete(self, p: str, recursive_arg: str | None) -> tuple[int, str, str] | None:
        def fn(sb: Any) -> tuple[int, str, str] | None:
            real = self._real(sb, p, follow=False)
            me = self._kind(sb, real)
            if me is None:
                return 404, "NOT_FOUND", "path does not exist within the sandbox"
            recursive = _recursive(recursive_arg)
            if recursive is None:
                return 400, "INVALID_ARGUMENT", f"recursive {recursive_arg!r} must be a boolean"
            if me == "root":
                if not recursive:
                    return 409, "CONFLICT", ("cannot delete the sandbox root; pass recursive=true "
                                             "to clear its contents")
                for e in sb.list_files(real, limit=None):
                    sb.remove(e.path, True)
                return None
            if me.type == "dir" and not recursive and len(sb.list_files(real, limit=1)):
                return 409, "CONFLICT", "directory is not empty; pass recursive=true to remove it"
            sb.remove(real, recursive)
            return None
        return self._call(fn)


def sandboxd_routes(files: HostFiles | None, direct: Callable[..., Awaitable[Any]], *, max_body: int,
                    ready: Callable[[], bool], metadata_prefix: str = "SANDBOX_",
                    host: Any = None, inside: str = "/app") -> list[Any]:
    """The /v1 routes over ``files`` (the root as the sandbox sees it), or with ``files``
    None through the Sandbox of ``host`` (a RuntimeHost) with its root at ``inside``;
    ``direct(fn, *args)`` runs a blocking call on a worker thread; ``ready()`` False makes
    /v1/health 503."""
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response, StreamingResponse
    from starlette.routing import Route

    from .runtime import _FileBody, _FilePart

    ops: Any = _Files(files) if files is not None else _SandboxOps(host, inside) if host is not None else None
    started = time.monotonic()
    meta = metadata_env(metadata_prefix)

    def err(status: int, code: str, message: str) -> Response:
        return JSONResponse({"code": code, "message": message}, status_code=status)

    def refused(e: BaseException) -> Response:
        if isinstance(e, Denied):
            return err(403, "PERMISSION_DENIED", "path traversal outside sandbox root is forbidden")
        if isinstance(e, BadPath):
            return err(400, "INVALID_ARGUMENT", str(e))
        if isinstance(e, PermissionError) or (isinstance(e, OSError) and e.errno == errno.EROFS):
            return err(403, "PERMISSION_DENIED", "permission denied")
        if isinstance(e, SandboxError):
            return err(500, "INTERNAL", f"{type(e).__name__}: {e}")
        if isinstance(e, OSError) and e.errno in (errno.ELOOP, errno.ENAMETOOLONG):
            return err(400, "INVALID_ARGUMENT", os.strerror(e.errno))
        if isinstance(e, OSError) and e.errno in (errno.ENOTEMPTY, errno.EEXIST):
            return err(409, "CONFLICT", "directory is not empty; pass recursive=true to remove it")
        return err(500, "INTERNAL", f"{getattr(e, 'strerror', None) or e}")

    async def get_file(request: Request) -> Response:
        p = request.path_params.get("path", "")
        head = request.method == "HEAD"
        try:
            kind, got = await direct(ops.get, p, head)
        except (Denied, BadPath, OSError, SandboxError) as e:
            return refused(e)
        if kind == "missing":
            return err(404, "NOT_FOUND", "path does not exist within the sandbox")
        if kind == "special":
            return err(400, "INVALID_ARGUMENT", "not a regular file or a directory")
        if kind == "dir":
            shown = p if p.startswith("/") else "/" + p
            return JSONResponse({"path": shown, "entries": got})
        fd, size, mtime = got
        headers = {"content-length": str(size), "last-modified": _http_date(mtime),
                   "accept-ranges": "none"}
        if isinstance(fd, bytes):                # through the Sandbox's file API
            if head:
                return Response(b"", media_type="application/octet-stream", headers=headers)
            headers["content-length"] = str(len(fd))
            return Response(fd, media_type="application/octet-stream", headers=headers)
        if fd < 0:
            return Response(b"", media_type="application/octet-stream", headers=headers)
        return StreamingResponse(_FileBody(fd, size), media_type="application/octet-stream",
                                 headers=headers)

    async def put_file(request: Request) -> Response:
        raw_mode = request.query_params.get("mode", "")
        mode = 0o644
        if raw_mode:
            if (len(raw_mode) != 4 or raw_mode[0] != "0"
                    or any(c not in "01234567" for c in raw_mode[1:])):
                return err(400, "INVALID_ARGUMENT", f"mode {raw_mode!r} must match ^0[0-7]{{3}}$")
            mode = int(raw_mode, 8)
        p = request.path_params.get("path", "")
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > max_body:
            return err(413, "RESOURCE_EXHAUSTED", f"the body is larger than the server's limit of {max_body} bytes")
        try:
            if await direct(ops.is_dir, p):
                return err(400, "INVALID_ARGUMENT", "target path is a directory")
        except (Denied, BadPath, OSError, SandboxError) as e:
            return refused(e)
        from python_multipart.multipart import MultipartParser, parse_options_header
        ctype, params = parse_options_header(request.headers.get("content-type"))
        part: _FilePart | None = None
        parser: Any = None
        if ctype == b"multipart/form-data":
            if not params.get(b"boundary"):
                return err(400, "INVALID_ARGUMENT", "invalid multipart body: no boundary")
            part = _FilePart(params.get(b"charset", b"utf-8"), need_filename=False)
            parser = MultipartParser(params[b"boundary"], part.callbacks())
        up: Upload | None = None
        total = 0
        try:
            try:
                up = await direct(ops.open_upload, p, mode)
            except IsADirectoryError:
                return err(400, "INVALID_ARGUMENT", "target path is a directory")
            except NotADirectoryError:
                return err(400, "INVALID_ARGUMENT", "a parent of the path is not a directory")
            except (Denied, BadPath, OSError, SandboxError) as e:
                return refused(e)
            failed: Response | None = None
            async for chunk in request.stream():
                total += len(chunk)
                if total > max_body:
                    return err(413, "RESOURCE_EXHAUSTED",
                               f"the body is larger than the server's limit of {max_body} bytes")
                if failed is not None or not chunk:
                    continue
                if parser is None:
                    await direct(up.write, chunk)
                    continue
                assert part is not None
                try:
                    parser.write(chunk)
                except Exception as e:  # noqa: BLE001 - python-multipart's parse errors
                    failed = err(400, "INVALID_ARGUMENT", f"invalid multipart body: {e}")
                    continue
                if part.pending:
                    data = b"".join(part.pending)
                    part.pending.clear()
                    await direct(up.write, data)
            if failed is not None:
                return failed
            if part is not None:
                try:
                    parser.finalize()
                except Exception as e:  # noqa: BLE001
                    return err(400, "INVALID_ARGUMENT", f"invalid multipart body: {e}")
                if not part.found:
                    return err(400, "INVALID_ARGUMENT", "multipart body is missing the required \"file\" part")
                if not part.done:
                    return err(400, "INVALID_ARGUMENT", "invalid multipart body: it ended inside the file")
            u, up = up, None
            try:
                await direct(u.commit)
            except (Denied, BadPath, OSError, SandboxError) as e:
                return refused(e)
            return Response(status_code=204)
        finally:
            if up is not None:
                up.abort()

    async def delete_file(request: Request) -> Response:
        p = request.path_params.get("path", "")
        try:
            out = await direct(ops.delete, p, request.query_params.get("recursive"))
        except (Denied, BadPath, OSError, SandboxError) as e:
            return refused(e)
        if out is not None:
            return err(*out)
        return Response(status_code=204)

    async def health(request: Request) -> Response:
        if not ready():
            return err(503, "UNAVAILABLE", "the server is shutting down")
        return JSONResponse({"status": "ok", "uptime_seconds": int(time.monotonic() - started)})

    async def metadata(request: Request) -> Response:
        return JSONResponse({"env": meta})

    if ops is None:
        async def no_files(request: Request) -> Response:
            return err(501, "UNIMPLEMENTED", "sandboxd's file API is served only when the base "
                       "directory is what the sandbox sees (no --mount inside it, no hide or "
                       "read-only rules)")
        return [Route("/v1/files/{path:path}", no_files, methods=["GET", "HEAD", "PUT", "DELETE"]),
                Route("/v1/health", health, methods=["GET"]),
                Route("/v1/metadata", metadata, methods=["GET"])]
    async def file_route(request: Request) -> Response:
        # one route for the four methods (a 405 then lists them all in Allow)
        if request.method == "PUT":
            return await put_file(request)
        if request.method == "DELETE":
            return await delete_file(request)
        return await get_file(request)

    return [
        Route("/v1/files/{path:path}", file_route, methods=["GET", "HEAD", "PUT", "DELETE"]),
        Route("/v1/health", health, methods=["GET"]),
        Route("/v1/metadata", metadata, methods=["GET"]),
    ]
