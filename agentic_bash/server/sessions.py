"""The multi-session service: /v1/sessions behind a bearer key, SQLite-backed, TTL-reaped."""

# Who holds what: SessionManager owns the live Sandboxes (one _Live each, with its own lock, so
# one session's calls are serialised and different sessions run in parallel on the worker pool)
# and the store (rows survive a restart). The event loop never touches a Sandbox. The reaper
# thread closes sessions whose lease ran out (every call extends it) and skips busy ones. On
# start, rows another server process left "running" are marked crashed (their sandboxes died
# with it) and stay restorable from their last snapshot (POST /v1/sessions {"from_session"}).
# A SandboxCrashed during a call is a 500; the Sandbox restarts itself on the next call (same
# files, the shell state of its last snapshot) and that result says restarted (DESIGN.md
# decision 10); if the restart fails too, the session is rebuilt from its last snapshot file.

from __future__ import annotations

import asyncio
import base64
import binascii
import dataclasses
import hmac
import json
import logging
import os
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

from ..errors import SandboxCrashed, SandboxError, SnapshotError
from ..limits import Limits
from .gate import Abandoned, Gate, until_disconnect
from .store import SessionStore

__all__ = ["ApiError", "SessionManager", "create_sessions_app"]

log = logging.getLogger("agentic_bash.server.sessions")

_CLIENT_LEVELS = ("auto", "virtual", "namespace", "landlock")   # "none" only if the server's default


class ApiError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class _Live:
    __slots__ = ("sb", "lock", "cwd", "restarted", "kwargs", "crashed")

    def __init__(self, sb: Any, kwargs: dict[str, Any]) -> None:
        self.sb = sb
        self.lock = threading.Lock()
        self.cwd = sb.cwd
        self.restarted: str | None = None
        self.kwargs = kwargs
        self.crashed = False


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def result_json(r: Any, restarted: str | None = None) -> dict[str, Any]:
    d = r.to_dict()
    if getattr(r, "restarted", False) and not restarted:
        restarted = r.extra.get("restart_reason") or "the sandbox process died"
    d["stdout_b64"] = _b64(r.stdout_bytes)
    d["stderr_b64"] = _b64(r.stderr_bytes)
    if restarted:
        d["restarted"] = True
        d["restart_reason"] = restarted
    return d


class SessionManager:
    """Live sessions, their store rows and the reaper."""

    def __init__(self, db: str, *, sandbox_defaults: dict[str, Any] | None = None,
                 default_ttl: float = 1800.0, max_sessions: int = 1000,
                 reap_interval: float = 30.0, sandbox_cls: Any = None, pool_size: int = 0) -> None:
        if sandbox_cls is None:
            from ..session import Sandbox as sandbox_cls
        self._cls = sandbox_cls
        self.defaults = dict(sandbox_defaults or {})
        self.default_ttl = default_ttl
        self.max_sessions = max_sessions
        self.reap_interval = reap_interval
        self.store = SessionStore(db)
        self.snap_dir = db + ".snapshots" if db != ":memory:" else None
        if self.snap_dir:
            os.makedirs(self.snap_dir, exist_ok=True)
        self.instance = uuid.uuid4().hex
        self._live: dict[str, _Live] = {}
        self._live_lock = threading.Lock()
        self._starting = 0
        self._stop = threading.Event()
        self._reaper: threading.Thread | None = None
        self.pool = ThreadPoolExecutor(max_workers=max(8, min(max_sessions, 256)),
                                       thread_name_prefix="agb-session")
        self.reconciled: list[str] = []
        # sessions created with the server's own options come from a SandboxPool when one
        # is configured (pool.py): a ready sandbox is a queue pop; the rest are built on demand
        self.pool_size = pool_size
        self._sbpool: Any = None
        self._pooled: set[int] = set()

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        if self.pool_size > 0:
            from ..pool import SandboxPool
            self._sbpool = SandboxPool(min_size=self.pool_size, max_size=self.pool_size + self.max_sessions,
                                       idle_ttl=None, name="sessions", **self.defaults)
        for row in self.store.orphans(self.instance):
            self.store.set_status(row.id, "crashed", "the server restarted; the sandbox is gone"
                                  + ("; restorable from its last snapshot" if row.snapshot else ""))
            self.reconciled.append(row.id)
        if self.reconciled:
            log.warning("marked %d session(s) of a previous server crashed", len(self.reconciled))
        self._reaper = threading.Thread(target=self._reap_loop, name="agb-reaper", daemon=True)
        self._reaper.start()

    def close(self, snapshot_budget: float = 20.0) -> None:
        """Stop: each idle live session is snapshotted first (within ``snapshot_budget``
        seconds in all) and marked ``stopped``, restorable with ``from_session``; the rest
        are marked ``crashed`` (restorable from an earlier snapshot if they have one)."""
        self._stop.set()
        if self._reaper is not None:
            self._reaper.join(timeout=5)
        with self._live_lock:
            live = list(self._live.items())
            self._live.clear()
        deadline = time.monotonic() + snapshot_budget
        for sid, lv in live:
            saved = False
            if self.snap_dir and lv.lock.acquire(timeout=max(0.0, min(1.0, deadline - time.monotonic()))):
                try:
                    if time.monotonic() < deadline:
                        self._save_snapshot(sid, lv.sb.snapshot())
                        saved = True
                except Exception as e:  # noqa: BLE001 - a broken sandbox is closed anyway
                    log.warning("session %s: no snapshot at shutdown: %s", sid, e)
                finally:
                    lv.lock.release()
            else:
                try:
                    lv.sb.interrupt()
                except Exception:  # noqa: BLE001
                    pass
            self._close_sb(lv.sb)
            if saved:
                self.store.set_status(sid, "stopped", "the server stopped; restorable from the "
                                      "snapshot taken then")
            else:
                self.store.set_status(sid, "crashed", "the server stopped while it was busy")
        self.pool.shutdown(wait=False, cancel_futures=True)
        if self._sbpool is not None:
            self._sbpool.close()
        self.store.close()

    def _close_sb(self, sb: Any) -> None:
        try:
            if id(sb) in self._pooled:
                self._pooled.discard(id(sb))
                self._sbpool.release(sb)
            else:
                sb.close()
        except Exception as e:  # noqa: BLE001 - a dead sandbox may fail to tidy up
            log.debug("close: %s", e)

    def _reap_loop(self) -> None:
        while not self._stop.wait(self.reap_interval):
            try:
                self.reap()
            except Exception:  # noqa: BLE001 - the reaper must outlive one bad pass
                log.exception("reaper pass failed")

    def reap(self, now: float | None = None) -> list[str]:
        """Close sessions whose lease ran out; a busy one gets its lease extended instead."""
        done = []
        for sid in self.store.expired(time.time() if now is None else now):
            lv = self._live.get(sid)
            if lv is None:
                self.store.set_status(sid, "expired", "ttl elapsed")
                done.append(sid)
                continue
            if not lv.lock.acquire(blocking=False):
                self.store.touch(sid)     # a call is running: that is activity
                continue
            try:
                with self._live_lock:
                    self._live.pop(sid, None)
                self._close_sb(lv.sb)
                self.store.set_status(sid, "expired", "ttl elapsed")
                done.append(sid)
            finally:
                lv.lock.release()
        return done

    # ------------------------------------------------------------------ sessions
    def _kwargs(self, opts: dict[str, Any]) -> dict[str, Any]:
        kw = dict(self.defaults)
        unknown = set(opts) - {"isolation", "env", "workdir", "limits", "network", "ttl",
                               "snapshot", "from_session", "base"}
        if unknown:
            raise ApiError(422, f"unknown option(s): {', '.join(sorted(unknown))}")
        iso = opts.get("isolation")
        if iso is not None:
            allowed = _CLIENT_LEVELS + (("none",) if self.defaults.get("isolation") == "none" else ())
            if iso not in allowed:
                raise ApiError(422, f"isolation must be one of {', '.join(allowed)}")
            if iso == "landlock" and self.defaults.get("isolation") not in ("landlock", "none"):
                # (attack12) no namespaces there: the host's network (no policy: loopback
                # services, metadata), processes and readable files, all of which the
                # server's own level hides; only its operator may choose that
                raise ApiError(422, "isolation 'landlock' shares the host's network and processes: "
                                    "only a server started with -i landlock offers it")
            kw["isolation"] = iso
        if opts.get("base") is not None:
            raise ApiError(422, "base is chosen by the server operator, not per session")
        env = opts.get("env")
        if env is not None:
            if not isinstance(env, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                                    for k, v in env.items()):
                raise ApiError(422, "env must map names to strings")
            kw["env"] = {**(kw.get("env") or {}), **env}
        wd = opts.get("workdir")
        if wd is not None:
            if not isinstance(wd, str) or not wd.startswith("/"):
                raise ApiError(422, "workdir must be an absolute path")
            kw["workdir"] = wd
        lim = opts.get("limits")
        if lim is not None:
            base: Limits = kw.get("limits") or Limits()
            if not isinstance(lim, dict):
                raise ApiError(422, "limits must be an object")
            fields = {f.name for f in dataclasses.fields(Limits)}
            changes = {}
            for k, v in lim.items():
                if k not in fields:
                    raise ApiError(422, f"unknown limit {k!r}")
                if isinstance(v, bool) or not isinstance(v, (int, float)) or v <= 0:
                    raise ApiError(422, f"limit {k!r} must be a positive number")
                cap = getattr(base, k)
                if cap is not None and v > cap:
                    raise ApiError(422, f"limit {k!r} may not exceed the server's {cap}")
                changes[k] = v
            kw["limits"] = dataclasses.replace(base, **changes)
        if opts.get("network") is not None:
            kw["network"] = self._network(opts["network"])
        return kw

    def _network(self, v: Any) -> Any:
        """A client's network choice: "public", "deny", or {"allow": [...], "deny": [...]}
        (an allowlist). "host" (the host's stack, unconfined) only if it is the server's."""
        try:
            from ..network import NetworkPolicy
        except ImportError:
            raise ApiError(422, "network policies are not available in this build") from None
        server = self.defaults.get("network")
        server_mode = getattr(server, "mode", server)
        if isinstance(v, str):
            if v in ("host", "allow") and server_mode not in ("host", "allow"):
                raise ApiError(422, "network 'host' is not allowed by this server")
            if v not in ("public", "deny", "host", "allow"):
                raise ApiError(422, "network must be 'public', 'deny' or {\"allow\": [rules]}")
            return self._not_wider(v, server)
        if isinstance(v, dict) and set(v) <= {"allow", "deny"} and all(
                isinstance(x, list) and all(isinstance(r, str) for r in x) for x in v.values()):
            try:
                return self._not_wider(NetworkPolicy(allow=v.get("allow", ()), deny=v.get("deny", ())),
                                       server)
            except (TypeError, ValueError) as e:
                raise ApiError(422, f"network: {e}") from None
        raise ApiError(422, "network must be 'public', 'deny' or {\"allow\": [rules], \"deny\": [rules]}")

    @staticmethod
    def _not_wider(asked: Any, server: Any) -> Any:
        """A session's network is the server's or narrower, as its limits are: deny <
        an allowlist < public < host. Under an allowlist server only that list or "deny"
        (whether one list lies inside another is not decided here)."""
        def rank(n: Any) -> int:
            mode = getattr(n, "mode", n)
            if n is None or mode == "public":
                return 2
            if mode in ("host", "allow"):
                return 3
            if mode == "deny":
                return 0
            return 1   # an allowlist
        a, s = rank(asked), rank(server)
        if a > s or (a == s == 1 and asked != server):
            shown = {0: "deny", 1: "an allowlist", 2: "public", 3: "host"}[s]
            raise ApiError(422, f"network may not be wider than the server's ({shown})")
        return asked

    def create(self, opts: dict[str, Any]) -> dict[str, Any]:
        ttl = opts.get("ttl", self.default_ttl)
        if isinstance(ttl, bool) or not isinstance(ttl, (int, float)) or not ttl > 0:
            raise ApiError(422, "ttl must be a positive number of seconds")
        with self._live_lock:     # a slot is reserved while the sandbox starts
            if len(self._live) + self._starting >= self.max_sessions:
                raise ApiError(429, f"too many live sessions (at most {self.max_sessions})")
            self._starting += 1
        try:
            return self._create(opts)
        finally:
            with self._live_lock:
                self._starting -= 1

    def _create(self, opts: dict[str, Any]) -> dict[str, Any]:
        ttl = opts.get("ttl", self.default_ttl)
        snapshot: bytes | None = None
        if opts.get("snapshot") is not None:
            try:
                snapshot = base64.b64decode(opts["snapshot"], validate=True)
            except (binascii.Error, TypeError, ValueError):
                raise ApiError(422, "snapshot must be base64") from None
        elif opts.get("from_session") is not None:
            row = self.store.get(str(opts["from_session"]))
            if row is None:
                raise ApiError(404, "no such session")
            if not row.snapshot or not os.path.exists(row.snapshot):
                raise ApiError(409, f"session {row.id} has no snapshot to restore")
            with open(row.snapshot, "rb") as f:
                snapshot = f.read()
            if not {k for k in opts if k not in ("from_session", "ttl")}:
                opts = {**row.options, **{k: v for k, v in opts.items() if k == "ttl"}}
        kwargs = self._kwargs({k: v for k, v in opts.items() if k not in ("ttl",)})
        kwargs.pop("snapshot", None)
        kwargs.pop("from_session", None)
        try:
            sb = None
            if snapshot is None and kwargs == self.defaults and self._sbpool is not None:
                sb = self._sbpool.try_acquire()
                if sb is not None:
                    self._pooled.add(id(sb))
            if sb is not None:
                pass
            elif snapshot is not None:
                sb = self._cls.from_snapshot(snapshot, **kwargs)
            else:
                sb = self._cls(**kwargs)
        except SnapshotError as e:
            raise ApiError(400, f"snapshot refused: {e}") from None
        except (SandboxError, ValueError, TypeError) as e:
            raise ApiError(422, f"cannot create the sandbox: {e}") from None
        sid = "s-" + uuid.uuid4().hex
        stored = {k: v for k, v in opts.items() if k not in ("snapshot", "from_session")}
        with self._live_lock:
            self._live[sid] = _Live(sb, kwargs)
        row = self.store.insert(sid, stored, float(ttl), self.instance)
        if snapshot is not None and self.snap_dir:
            self._save_snapshot(sid, snapshot)
        return self.describe(sid, row)

    def describe(self, sid: str, row: Any = None) -> dict[str, Any]:
        row = row or self.store.get(sid)
        if row is None:
            raise ApiError(404, "no such session")
        d = row.to_dict()
        lv = self._live.get(sid)
        if lv is not None:
            d["cwd"] = lv.cwd
            d["isolation"] = lv.sb.isolation_level
            d["pooled"] = id(lv.sb) in self._pooled
        return d

    def list(self, status: str | None = None) -> list[dict[str, Any]]:
        return [self.describe(r.id, r) for r in self.store.list(status)]

    def delete(self, sid: str) -> None:
        row = self.store.get(sid)
        if row is None:
            raise ApiError(404, "no such session")
        with self._live_lock:
            lv = self._live.pop(sid, None)
        if lv is not None:
            try:
                lv.sb.interrupt()
            except Exception:  # noqa: BLE001
                pass
            got = lv.lock.acquire(timeout=30)
            try:
                self._close_sb(lv.sb)
            finally:
                if got:
                    lv.lock.release()
        self.store.set_status(sid, "deleted", "deleted by the client")
        if row.snapshot:
            try:
                os.unlink(row.snapshot)
            except OSError:
                pass
            self.store.set_snapshot(sid, None)

    def _save_snapshot(self, sid: str, data: bytes) -> None:
        assert self.snap_dir
        path = os.path.join(self.snap_dir, sid + ".tar")
        tmp = path + ".tmp"
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
        self.store.set_snapshot(sid, path)

    # ------------------------------------------------------------------ calls
    def call(self, sid: str, fn: Callable[[Any], Any]) -> tuple[Any, str | None]:
        """``fn(sandbox)`` under the session's lock, the lease extended before and after."""
        lv = self._live.get(sid)
        if lv is None:
            row = self.store.get(sid)
            if row is None:
                raise ApiError(404, "no such session")
            raise ApiError(410, f"session is {row.status}" + (f": {row.reason}" if row.reason else ""))
        self.store.touch(sid)
        with lv.lock:
            return self._call_locked(sid, lv, fn)

    def _call_locked(self, sid: str, lv: _Live, fn: Callable[[Any], Any]) -> tuple[Any, str | None]:
        """``call``'s body, with ``lv.lock`` held by the caller."""
        if self._live.get(sid) is not lv:
            raise ApiError(410, "session was closed")
        try:
            value = fn(lv.sb)
        except SandboxCrashed as e:
            if not lv.crashed:
                # the Sandbox restarts itself on its next call (same files, the state of
                # its last snapshot); the client hears of this crash as a 500
                lv.crashed = True
                raise ApiError(500, f"the sandbox crashed; the next call restarts it: {e}") from None
            self._recover(sid, lv, str(e))     # even the restart failed: rebuild it here
            if self._live.get(sid) is not lv:
                raise ApiError(500, f"the sandbox crashed and could not be restarted: {e}") from None
            value = fn(lv.sb)
        lv.crashed = False
        restarted, lv.restarted = lv.restarted, None
        self.store.touch(sid)
        return value, restarted

    def _recover(self, sid: str, lv: _Live, reason: str) -> None:
        log.warning("session %s: sandbox crashed (%s); restarting it", sid, reason)
        self._close_sb(lv.sb)
        row = self.store.get(sid)
        try:
            if row is not None and row.snapshot and os.path.exists(row.snapshot):
                with open(row.snapshot, "rb") as f:
                    lv.sb = self._cls.from_snapshot(f.read(), **lv.kwargs)
                reason += "; restored from its last snapshot"
            else:
                lv.sb = self._cls(**lv.kwargs)
            lv.cwd = lv.sb.cwd
            lv.restarted = reason
        except Exception as e:  # noqa: BLE001
            with self._live_lock:
                self._live.pop(sid, None)
            self.store.set_status(sid, "crashed", f"{reason}; restart failed: {e}")

    def exec(self, sid: str, command: str, *, timeout: float | None = None, stdin: bytes | None = None,
             env: dict[str, str] | None = None, cwd: str | None = None,
             on_output: Callable[[int, bytes], None] | None = None,
             gate: Gate | None = None) -> dict[str, Any]:
        """Run ``command``; with a ``gate`` it is not started once its client has gone."""
        def go(sb: Any) -> Any:
            if on_output is None:
                return sb.run(command, stdin=stdin, env=env, cwd=cwd, timeout=timeout)
            return sb.run_stream(command, on_stdout=lambda c: on_output(1, c),
                                 on_stderr=lambda c: on_output(2, c), stdin=stdin, env=env,
                                 cwd=cwd, timeout=timeout)

        def run(sb: Any) -> Any:
            return go(sb) if gate is None else gate.run(lambda: go(sb))
        r, restarted = self.call(sid, run)
        lv = self._live.get(sid)
        if lv is not None and r.cwd:
            lv.cwd = r.cwd
        return result_json(r, restarted)

    def files_op(self, sid: str, path: str, locked: Callable[[Any, str], Any],
                 direct: Callable[[Any, str, str], Any]) -> Any:
        """A file call: ``locked(sandbox, path)`` under the session's lock as any call, except
        while that lock is held (a command runs): then a virtual or none sandbox gets
        ``locked(sandbox, absolute path)`` at once (its file system takes calls from any
        thread: the interpreter's own pipeline stages share it), and a path in the workdir
        of a namespace or landlock sandbox gets ``direct(files, rel, full)`` on that
        directory as the host reaches it (hostfiles.py, confined to it), unless that
        answers NotImplemented."""
        lv = self._live.get(sid)
        if lv is not None and not lv.lock.acquire(blocking=False):
            sb = lv.sb
            if getattr(sb, "isolation_level", None) in ("virtual", "none") and "\x00" not in path:
                from ..vfs.paths import normalize
                full = normalize(path, lv.cwd or getattr(sb, "workdir", None) or "/")
                value = locked(sb, full)
                self.store.touch(sid)
                return value
            view = self._workdir_view(lv, path)
            if view is not None:
                from .paths import BadPath, Denied
                files, rel, full = view
                with files:
                    try:
                        value = direct(files, rel, full)
                    except (Denied, BadPath):
                        value = NotImplemented   # a symlink out of the workdir: the Sandbox's call
                if value is not NotImplemented:
                    self.store.touch(sid)
                    return value
        elif lv is not None:
            # idle: the call runs under the lock it just took. (Released and taken again, a
            # command arriving in between ran first and this call waited for all of it:
            # conform11's test saw it at load 106)
            try:
                self.store.touch(sid)
                return self._call_locked(sid, lv, lambda sb: locked(sb, path))[0]
            finally:
                lv.lock.release()
        return self.call(sid, lambda sb: locked(sb, path))[0]

    def _workdir_view(self, lv: _Live, path: str) -> tuple[Any, str, str] | None:
        from ..vfs.paths import normalize
        from .hostfiles import HostFiles, sandbox_dir_fd
        from .paths import within
        sb = lv.sb
        level = getattr(sb, "isolation_level", None)
        if level not in ("namespace", "landlock") or lv.kwargs.get("hide") \
                or lv.kwargs.get("read_only") or "\x00" in path:
            return None
        ex = getattr(sb, "_ex", None)
        if level == "landlock":
            # no namespaces: the workdir is a host directory (the session's, or a rw mount's
            # source) at its own path, the same for the sandbox and the host; Landlock lets
            # the sandbox read and write all of it, so the host's view bypasses nothing (the
            # walk is confined to it, symlinks resolved there, no step into another mount).
            # A mount inside it would be a view the host does not share: not then.
            workdir = getattr(ex, "workdir", None)
            if not workdir or workdir == "/" or getattr(ex, "_restarting", False):
                return None
            inside = "/" + str(getattr(sb, "workdir", "") or "").strip("/")
            for dest in (lv.kwargs.get("mounts") or {}):
                d = "/" + str(dest).strip("/")
                if d != inside and (within(d, inside) or within(d, workdir)):
                    return None
            full = normalize(path, lv.cwd or workdir)
            if not within(full, workdir):
                return None
            try:
                fd = os.open(workdir, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
            except OSError:
                return None
            return HostFiles.at_fd(fd, workdir), full[len(workdir.rstrip("/")):] or "/", full
        pid, pidfd = getattr(ex, "pid", None), getattr(ex, "_pidfd", None)
        workdir = getattr(sb, "workdir", None)
        if not pid or pidfd is None or not workdir or workdir == "/":
            return None
        full = normalize(path, lv.cwd or workdir)
        if not within(full, workdir):
            return None
        try:
            mine = os.dup(pidfd)
        except OSError:
            return None
        try:
            # (read after the pid: a sandbox restarting has its new pid before its root and
            # its masks; attack12, and hostfiles.sandbox_dir_fd refuses the host's root)
            if getattr(ex, "_restarting", False):
                return None
            fd = sandbox_dir_fd(int(pid), mine, workdir)
        finally:
            os.close(mine)
        if fd is None:
            return None
        return HostFiles.at_fd(fd, workdir), full[len(workdir.rstrip("/")):] or "/", full

    def interrupt(self, sid: str) -> None:
        """Stop the session's running command (not under its lock: that is held by the run)."""
        lv = self._live.get(sid)
        if lv is None:
            raise ApiError(404 if self.store.get(sid) is None else 410, "no live session")
        lv.sb.interrupt()

    def snapshot(self, sid: str) -> bytes:
        data, _ = self.call(sid, lambda sb: sb.snapshot())
        if self.snap_dir:
            self._save_snapshot(sid, data)
        return data


# ---------------------------------------------------------------------------- HTTP
class BearerAuth:
    """ASGI middleware: every path but ``GET /`` needs ``Authorization: Bearer <key>``."""

    def __init__(self, app: Any, key: str) -> None:
        if not key:
            raise ValueError("an API key is required")
        self.app = app
        self.key = key.encode()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"] != "/":
            got = b""
            for k, v in scope["headers"]:
                if k == b"authorization":
                    got = v
                    break
            scheme, _, token = got.partition(b" ")
            # constant-time on the token; only its length can be timed
            if not (scheme.lower() == b"bearer" and hmac.compare_digest(token.strip(), self.key)):
                body = b'{"error":"unauthorized: send Authorization: Bearer <api key>"}'
                await send({"type": "http.response.start", "status": 401, "headers": [
                    (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                    (b"www-authenticate", b'Bearer realm="agentic-bash"')]})
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


async def read_capped(request: Any, cap: int) -> bytes:
    """The request body, refused with 413 past ``cap`` bytes (declared or streamed)."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > cap:
        raise ApiError(413, f"the body is larger than the server's limit of {cap} bytes")
    buf = bytearray()
    async for chunk in request.stream():
        buf += chunk
        if len(buf) > cap:
            raise ApiError(413, f"the body is larger than the server's limit of {cap} bytes")
    return bytes(buf)


def create_sessions_app(mgr: SessionManager, *, api_key: str, max_body: int = 512 << 20) -> Any:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response, StreamingResponse
    from starlette.routing import Route

    async def off(fn: Callable[[], Any]) -> Any:
        return await asyncio.get_running_loop().run_in_executor(mgr.pool, fn)

    def err(status: int, message: str) -> Response:
        return JSONResponse({"error": message}, status_code=status)

    def handler(fn: Callable[[Request], Any]) -> Callable[[Request], Any]:
        async def wrapped(request: Request) -> Response:
            try:
                return await fn(request)
            except ApiError as e:
                return err(e.status, e.message)
            except FileNotFoundError as e:
                return err(404, f"{e.filename or ''}: No such file or directory")
            except (IsADirectoryError, NotADirectoryError) as e:
                return err(409, f"{e.filename or ''}: {e.strerror}")
            except PermissionError as e:
                return err(403, f"{e.filename or ''}: {e.strerror}")
            except SnapshotError as e:
                return err(400, str(e))
            except OSError as e:
                return err(400, f"{e.filename or ''}: {e.strerror or e}")
            except SandboxError as e:
                return err(500, f"{type(e).__name__}: {e}")
            except (TypeError, ValueError) as e:   # arguments the Sandbox refused
                return err(422, str(e))
        return wrapped

    async def body_json(request: Request) -> dict[str, Any]:
        raw = await read_capped(request, max_body)
        if not raw:
            return {}
        try:
            d = json.loads(raw)
        except ValueError:
            raise ApiError(422, "the body must be a JSON object") from None
        if not isinstance(d, dict):
            raise ApiError(422, "the body must be a JSON object")
        return d

    def qpath(request: Request, default: str | None = None) -> str:
        p = request.query_params.get("path", default)
        if p is None or p == "":
            raise ApiError(422, "query parameter 'path' is required")
        if "\x00" in p:
            raise ApiError(422, "path contains a NUL byte")
        return p

    async def health(request: Request) -> Response:
        d: dict[str, Any] = {"status": "ok", "sessions": len(mgr._live)}
        if mgr._sbpool is not None:
            st = mgr._sbpool.stats()
            d["pool"] = {"ready": st["ready"], "creating": st["creating"]}
        return JSONResponse(d)

    @handler
    async def create(request: Request) -> Response:
        opts = await body_json(request)
        return JSONResponse(await off(lambda: mgr.create(opts)), status_code=201)

    @handler
    async def list_sessions(request: Request) -> Response:
        status = request.query_params.get("status") or None
        return JSONResponse({"sessions": await off(lambda: mgr.list(status))})

    @handler
    async def get_session(request: Request) -> Response:
        sid = request.path_params["sid"]
        return JSONResponse(await off(lambda: mgr.describe(sid)))

    @handler
    async def delete_session(request: Request) -> Response:
        sid = request.path_params["sid"]
        await off(lambda: mgr.delete(sid))
        return Response(status_code=204)

    @handler
    async def exec_(request: Request) -> Response:
        sid = request.path_params["sid"]
        b = await body_json(request)
        command = b.get("command")
        if not isinstance(command, str):
            raise ApiError(422, "field 'command' (a string) is required")
        timeout = b.get("timeout")
        if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float))
                                    or not timeout > 0):
            raise ApiError(422, "timeout must be a positive number of seconds")
        stdin = None
        if b.get("stdin_b64") is not None:
            try:
                stdin = base64.b64decode(b["stdin_b64"], validate=True)
            except (binascii.Error, TypeError, ValueError):
                raise ApiError(422, "stdin_b64 must be base64") from None
        elif isinstance(b.get("stdin"), str):
            stdin = b["stdin"].encode()
        env = b.get("env")
        if env is not None and not (isinstance(env, dict) and all(isinstance(v, str) for v in env.values())):
            raise ApiError(422, "env must map names to strings")
        cwd = b.get("cwd")
        gate = Gate()
        kw = dict(timeout=timeout, stdin=stdin, env=env, cwd=cwd, gate=gate)

        def interrupt() -> None:
            try:
                mgr.interrupt(sid)
            except ApiError:
                pass
        if not b.get("stream"):
            # a client that goes away (its timeout) interrupts its command: the session's
            # next call would wait for it otherwise
            try:
                return JSONResponse(await until_disconnect(
                    request.receive, gate, interrupt, lambda: off(lambda: mgr.exec(sid, command, **kw))))
            except Abandoned:
                raise ApiError(499, "the client went away before the command started") from None
        loop = asyncio.get_running_loop()
        q: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()

        def on_output(fd: int, chunk: bytes) -> None:
            loop.call_soon_threadsafe(q.put_nowait, ("stdout" if fd == 1 else "stderr", chunk))

        def work() -> None:
            try:
                res = mgr.exec(sid, command, on_output=on_output, **kw)
                loop.call_soon_threadsafe(q.put_nowait, ("result", res))
            except Abandoned:
                loop.call_soon_threadsafe(q.put_nowait, ("error", {"status": 499, "error": "cancelled"}))
            except ApiError as e:
                loop.call_soon_threadsafe(q.put_nowait, ("error", {"status": e.status, "error": e.message}))
            except Exception as e:  # noqa: BLE001 - reported as the stream's last event
                loop.call_soon_threadsafe(q.put_nowait, ("error", {"status": 500, "error": str(e)}))

        if sid not in mgr._live:
            await off(lambda: mgr.call(sid, lambda sb: None))   # 404/410 before streaming
        fut = loop.run_in_executor(mgr.pool, work)

        async def events() -> Any:
            ended = False
            try:
                while True:
                    kind, value = await q.get()
                    if kind in ("stdout", "stderr"):
                        payload = json.dumps({"b64": _b64(value)})
                    else:
                        payload = json.dumps(value)
                    if kind in ("result", "error"):
                        ended = True
                    yield f"event: {kind}\ndata: {payload}\n\n".encode()
                    if ended:
                        await fut
                        return
            finally:
                if not ended:       # the client went away mid-stream
                    gate.abandon_soon(interrupt)
        return StreamingResponse(events(), media_type="text/event-stream",
                                 headers={"cache-control": "no-cache"})

    # (file calls while a command runs: mgr.files_op answers them for a virtual or none
    # sandbox at once and serves the workdir of a namespace or landlock sandbox from the
    # host; anything else waits for the command, as every call does)
    def read_direct(files: Any, rel: str, full: str) -> Any:
        got = files.open_file(rel)
        if got is None:
            return NotImplemented       # missing or not a file: the Sandbox words the error
        fd, size = got
        try:
            return b"".join(files.chunks(fd, size))
        finally:
            os.close(fd)

    @handler
    async def files(request: Request) -> Response:
        sid = request.path_params["sid"]
        p = qpath(request)
        if request.method == "GET":
            data = await off(lambda: mgr.files_op(sid, p, lambda sb, q: sb.read_file(q), read_direct))
            return Response(data, media_type="application/octet-stream")
        if request.method == "PUT":
            body = await read_capped(request, max_body)
            mode = int(request.query_params.get("mode", "644"), 8)

            def write_direct(files: Any, rel: str, full: str) -> Any:
                from .hostfiles import Upload
                up = Upload(files, rel, mode)
                try:
                    up.write(body)
                    up.commit()
                finally:
                    up.abort()
                return True
            await off(lambda: mgr.files_op(sid, p, lambda sb, q: sb.write_file(q, body, mode), write_direct))
            return Response(status_code=204)
        recursive = request.query_params.get("recursive", "") in ("1", "true")

        def remove_direct(files: Any, rel: str, full: str) -> Any:
            # the plain cases only (a file, a link, a directory as asked); any refusal is the
            # Sandbox's to word, after the command
            import stat as st_
            try:
                r = files.resolve(rel, follow=False)
            except OSError:
                return NotImplemented
            with r:
                if r.st is None or r.name is None:
                    return NotImplemented
                try:
                    if not st_.S_ISDIR(r.st.st_mode):
                        os.unlink(r.name, dir_fd=r.dirfd)
                    elif recursive:
                        import shutil
                        shutil.rmtree(r.name, dir_fd=r.dirfd)
                    else:
                        os.rmdir(r.name, dir_fd=r.dirfd)
                except OSError:
                    return NotImplemented
            return True
        await off(lambda: mgr.files_op(sid, p, lambda sb, q: sb.remove(q, recursive), remove_direct))
        return Response(status_code=204)

    @handler
    async def files_list(request: Request) -> Response:
        sid = request.path_params["sid"]
        p = qpath(request, ".")
        def list_direct(files: Any, rel: str, full: str) -> Any:
            got = files.entries(rel, full)
            return NotImplemented if got is None else got
        infos = await off(lambda: mgr.files_op(sid, p, lambda sb, q: [i.to_dict() for i in sb.list_files(q)],
                                               list_direct))
        return JSONResponse(infos)

    @handler
    async def files_exists(request: Request) -> Response:
        sid = request.path_params["sid"]
        p = qpath(request)
        ok = await off(lambda: mgr.files_op(sid, p, lambda sb, q: sb.exists(q),
                                            lambda files, rel, full: files.exists(rel)))
        return JSONResponse({"path": p, "exists": bool(ok)})

    @handler
    async def files_tar(request: Request) -> Response:
        sid = request.path_params["sid"]
        p = qpath(request, ".")
        if request.method == "GET":
            data, _ = await off(lambda: mgr.call(sid, lambda sb: sb.download_tar(path=p)))
            return Response(data, media_type="application/x-tar")
        body = await read_capped(request, max_body)
        await off(lambda: mgr.call(sid, lambda sb: sb.upload_tar(body, p)))
        return Response(status_code=204)

    @handler
    async def snapshot(request: Request) -> Response:
        sid = request.path_params["sid"]
        data = await off(lambda: mgr.snapshot(sid))
        from ..snapshot import media_type   # (tar+zstd by default: its OCI media type)
        return Response(data, media_type=media_type(data))

    @handler
    async def restore(request: Request) -> Response:
        sid = request.path_params["sid"]
        body = await read_capped(request, max_body)
        await off(lambda: mgr.call(sid, lambda sb: sb.restore(body)))
        return Response(status_code=204)

    @handler
    async def interrupt(request: Request) -> Response:
        sid = request.path_params["sid"]
        await off(lambda: mgr.interrupt(sid))
        return Response(status_code=204)

    @handler
    async def state(request: Request) -> Response:
        sid = request.path_params["sid"]
        if request.method == "GET":
            st, _ = await off(lambda: mgr.call(sid, lambda sb: sb.get_state()))
            return JSONResponse(st)
        new = await body_json(request)
        await off(lambda: mgr.call(sid, lambda sb: sb.set_state(new)))
        return Response(status_code=204)

    @handler
    async def env(request: Request) -> Response:
        sid = request.path_params["sid"]
        e, _ = await off(lambda: mgr.call(sid, lambda sb: dict(sb.env)))
        return JSONResponse(e)

    @handler
    async def packages(request: Request) -> Response:
        sid = request.path_params["sid"]
        pk, _ = await off(lambda: mgr.call(sid, lambda sb: [p.to_json() for p in sb.packages]))
        return JSONResponse(pk)

    @handler
    async def network_log(request: Request) -> Response:
        sid = request.path_params["sid"]
        log, _ = await off(lambda: mgr.call(sid, lambda sb: sb.network_log))
        return JSONResponse(json.loads(json.dumps(log, default=str)))

    @handler
    async def realpath(request: Request) -> Response:
        sid = request.path_params["sid"]
        p = qpath(request)
        real, _ = await off(lambda: mgr.call(sid, lambda sb: sb.realpath(p)))
        return JSONResponse({"path": p, "realpath": real})

    @handler
    async def reset(request: Request) -> Response:
        sid = request.path_params["sid"]
        await off(lambda: mgr.call(sid, lambda sb: sb.reset()))
        return Response(status_code=204)

    base = "/v1/sessions/{sid}"
    routes = [
        Route("/", health, methods=["GET"]),
        Route("/v1/sessions", create, methods=["POST"]),
        Route("/v1/sessions", list_sessions, methods=["GET"]),
        Route(base, get_session, methods=["GET"]),
        Route(base, delete_session, methods=["DELETE"]),
        Route(base + "/exec", exec_, methods=["POST"]),
        Route(base + "/files", files, methods=["GET", "PUT", "DELETE"]),
        Route(base + "/files/list", files_list, methods=["GET"]),
        Route(base + "/files/exists", files_exists, methods=["GET"]),
        Route(base + "/files/tar", files_tar, methods=["GET", "PUT"]),
        Route(base + "/snapshot", snapshot, methods=["POST"]),
        Route(base + "/restore", restore, methods=["POST"]),
        Route(base + "/reset", reset, methods=["POST"]),
        Route(base + "/interrupt", interrupt, methods=["POST"]),
        Route(base + "/state", state, methods=["GET", "PUT"]),
        Route(base + "/env", env, methods=["GET"]),
        Route(base + "/packages", packages, methods=["GET"]),
        Route(base + "/network_log", network_log, methods=["GET"]),
        Route(base + "/files/realpath", realpath, methods=["GET"]),
    ]
    app = Starlette(routes=routes)
    app.state.manager = mgr
    return BearerAuth(app, api_key)
