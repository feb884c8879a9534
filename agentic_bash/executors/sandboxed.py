"""SandboxedExecutor: the interpreter runs inside a sandbox process and is driven over a socket."""

from __future__ import annotations

import functools
import os
import pickle
import select
import shutil
import signal
import socket
import stat
import sys
import tempfile
import threading
import time
import warnings
from typing import Any, BinaryIO, Iterable, Mapping

from ..errors import (IsolationUnavailable, LimitExceeded, ParseError, PolicyViolation,
                      SandboxClosed, SandboxCrashed, SandboxError, SnapshotError)
from ..isolation.plan import Plan, plan as make_plan
from ..isolation.probe import probe
from ..isolation.report import IsolationReport, verify
from ..isolation.wire import WireClosed, recv_msg, send_msg
from ..limits import Limits
from ..result import Result
from .base import OutputCallback

__all__ = ["SandboxedExecutor", "make_inner_executor", "sandbox_env"]

_GRACE = 2.0            # seconds past the run's timeout before the host interrupts on its own
_KILL_AFTER = 3.0       # then seconds more before the host kills an unresponsive sandbox
_START_TIMEOUT = 60.0

_NONINTERACTIVE = {"TERM": "dumb", "PAGER": "cat", "GIT_PAGER": "cat",
                   "DEBIAN_FRONTEND": "noninteractive", "PIP_BREAK_SYSTEM_PACKAGES": "1",
                   "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INPUT": "1",
                   "PIP_ROOT_USER_ACTION": "ignore",
                   "PYTHONUNBUFFERED": "1"}


def sandbox_env(env: Mapping[str, str] | None, *, home: str, unprivileged: bool,
                user: str = "user") -> dict[str, str]:
    """The environment the sandbox's shell starts with: only what the caller gave plus
    non-interactive defaults. Security invariant: nothing of the host process's environment."""
    out = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
           "HOME": home, "USER": user, "LOGNAME": user, "LANG": "C.UTF-8",
           "SHELL": "/bin/bash", "HOSTNAME": "sandbox", **_NONINTERACTIVE}
    if unprivileged:
        # /usr is read-only here: a plain `pip install X` must go to ~/.local
        out["PIP_USER"] = "1"
    out.update(env or {})
    return out


def _norm_mounts(mounts: Any) -> list[dict[str, Any]]:
    """Normalise mounts to [{source, target, mode}] with mode ``cow`` (copy-on-write, the
    default), ``ro`` or ``rw`` (writes reach the host directory: explicit opt-in).

    Accepts session.py's {sandbox_path: (host_path, mode)}, {sandbox_path: host_path},
    {sandbox_path: Mount(src, mode)}, or an iterable of (host_path, sandbox_path[, mode])."""
    if not mounts:
        return []
    items: list[tuple[Any, Any, str]] = []
    if isinstance(mounts, Mapping):
        for dst, spec in mounts.items():
            if isinstance(spec, (tuple, list)):
                items.append((spec[0], dst, spec[1] if len(spec) > 1 else "cow"))
            elif hasattr(spec, "src"):
                items.append((spec.src, dst, getattr(spec, "mode", "cow")))
            else:
                items.append((spec, dst, "cow"))
    else:
        for m in mounts:
            items.append((m[0], m[1], m[2] if len(m) > 2 else "cow"))
    out = []
    for src, dst, mode in items:
        if mode not in ("cow", "ro", "rw"):
            raise ValueError(f"mount mode must be 'cow', 'ro' or 'rw', not {mode!r}")
        src = os.path.realpath(os.fspath(src))
        if not os.path.isdir(src):
            raise NotADirectoryError(f"mount source is not a directory: {src}")
        out.append({"source": src, "target": "/" + os.fspath(dst).strip("/"), "mode": mode,
                    "readonly": mode == "ro"})
    return out


@functools.lru_cache(maxsize=1)
def _python_binds() -> tuple[str, ...]:
    """Host paths the runner's Python needs, bound read-only at the same paths in the sandbox
    (the caller's venv may live under /tmp, pyenv under a 0700 home)."""
    import sys

    import agentic_bash
    paths = [sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
             os.path.dirname(os.path.abspath(agentic_bash.__file__))]
    for name in ("pyseccomp", "regex"):
        try:
            mod = __import__(name)
        except Exception:  # noqa: BLE001
            continue
        f = getattr(mod, "__file__", None)
        if f:
            f = os.path.abspath(f)
            paths.append(os.path.dirname(f) if f.endswith("__init__.py") else f)
    out: list[str] = []
    for p in paths:
        p = os.path.realpath(p)
        if p == "/" or p.startswith("/usr/") or p == "/usr" or not os.path.exists(p):
            continue
        if any(p == q or p.startswith(q + "/") for q in out):
            continue
        out = [q for q in out if not q.startswith(p + "/")] + [p]
    return tuple(out)


def _stdlib_binds() -> tuple[str, ...]:
    """With a base rootfs the host's /usr is not the sandbox's: bind the runner's stdlib."""
    import sysconfig

    out = []
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        for scheme_vars in ({}, {"base": sys.base_prefix, "platbase": sys.base_exec_prefix}):
            try:
                p = os.path.realpath(sysconfig.get_paths(vars=scheme_vars)[key])
            except (KeyError, OSError):
                continue
            if os.path.isdir(p) and p not in out:
                out.append(p)
    dyn = os.path.join(sysconfig.get_paths()["stdlib"], "lib-dynload")
    if os.path.isdir(dyn) and os.path.realpath(dyn) not in out:
        out.append(os.path.realpath(dyn))
    return tuple(out)


def _base_rootfs(base: Any) -> str:
    """``Sandbox(base=DIR|TAR)``: a directory is used in place; a tar (optionally compressed)
    is extracted once, with vfs.oci's refusals (no absolute names, .., devices, links out),
    into ~/.cache/agentic-bash/rootfs/<sha256> and reused."""
    import hashlib

    path = os.path.realpath(os.fspath(base))
    if os.path.isdir(path):
        return path
    if not os.path.isfile(path):
        raise FileNotFoundError(f"base rootfs not found: {path}")
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    cache = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"),
                         "agentic-bash", "rootfs")
    dest = os.path.join(cache, h.hexdigest())
    if os.path.isdir(dest):
        return dest
    os.makedirs(cache, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".extract-", dir=cache)
    try:
        from ..vfs.host import HostFS
        from ..vfs.oci import import_tar
        with open(path, "rb") as f:
            import_tar(f, HostFS(tmp, writable=True), "/")
        os.chmod(tmp, 0o755)
        try:
            os.rename(tmp, dest)
        except OSError:  # another process won the race
            _rmtree(tmp)
    except BaseException:
        _rmtree(tmp)
        raise
    return dest


def _rmtree(path: str) -> None:
    def onerror(fn, p, exc):  # noqa: ANN001 - overlay work dirs are created mode 000
        try:
            os.chmod(os.path.dirname(p), 0o700)
            os.chmod(p, 0o700) if os.path.isdir(p) and not os.path.islink(p) else None
            fn(p)
        except OSError:
            pass
    shutil.rmtree(path, onerror=onerror)


_ERRORS: dict[str, type[BaseException]] = {
    c.__name__: c for c in (ValueError, TypeError, KeyError, IndexError, NotImplementedError,
                            RuntimeError, SandboxError, SandboxClosed, SnapshotError,
                            IsolationUnavailable, SandboxCrashed)
}


def _raise_remote(h: dict[str, Any]) -> None:
    t, msg = h.get("type", "SandboxError"), h.get("msg", "")
    if "errno" in h and h["errno"] is not None:
        raise OSError(h["errno"], h.get("strerror") or msg, h.get("filename"))
    if t == "LimitExceeded":
        raise LimitExceeded(h.get("limit", "?"), msg)
    if t == "PolicyViolation":
        raise PolicyViolation(h.get("kind", "?"), h.get("detail", msg))
    if t == "ParseError":
        raise ParseError(h.get("message", msg), h.get("line", 0), h.get("token"))
    cls = _ERRORS.get(t)
    if cls is not None:
        raise cls(msg)
    raise SandboxError(f"{t} in the sandbox: {msg}")


class SandboxedExecutor:
    """The Executor protocol over a sandbox process (``level`` ``namespace`` or ``landlock``).

    ``isolation`` is the verified report. Raises ``IsolationUnavailable`` when ``strict`` and a
    promised mechanism is missing or was not applied, or when the level cannot run here.
    """

    def __init__(self, *, level: str | None = None, isolation: str | None = None, env: Mapping[str, str] | None = None,
                 workdir: str = "/workspace", mounts: Any = None, limits: Limits = Limits(),
                 strict: bool = False, info: Any = None, prefer_inprocess: bool = False,
                 commands_allowlist: Any = None, base: Any = None, network: str = "allow",
                 plan: Plan | None = None, engine: str = "interpreter",
                 layer_tar: bytes | None = None) -> None:
        from ..isolation.zygote import get_zygote

        self._closed = True
        self._dead = False
        self._lock = threading.RLock()
        self._send_lock = threading.Lock()
        self._session_dir: str | None = None
        self._pidfd: int | None = None
        base_root = _base_rootfs(base) if base is not None else ""
        level = level or isolation or "namespace"
        p = plan or make_plan(level, probe(), strict=strict, network=network)
        if not p.sandboxed:
            raise IsolationUnavailable("; ".join(p.warnings) or
                                       f"isolation={level!r} does not use a sandbox process")
        self.plan = p
        self.limits = limits
        self._session_dir = tempfile.mkdtemp(prefix="agentic-bash-session-")
        unpriv = os.geteuid() != 0
        mnts = _norm_mounts(mounts)
        host_ns = {}
        for key in ("user", "mnt", "pid", "net"):
            try:
                host_ns[key] = os.stat(f"/proc/self/ns/{key}").st_ino
            except OSError:
                pass
        if p.level == "namespace":
            home = getattr(info, "home", None) or "/home/user"
            wd = workdir
            writable: list[str] = []
        else:
            ws = next((m["source"] for m in mnts if m["target"] == "/" + workdir.strip("/")
                       and m["mode"] == "rw"), None)
            if ws is None:
                ws = os.path.join(self._session_dir, "workspace")
                os.mkdir(ws)
            tmp = os.path.join(self._session_dir, "tmp")
            os.mkdir(tmp, 0o700)
            home = ws
            wd = ws
            writable = [ws, tmp, "/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/pts",
                        "/dev/ptmx", "/dev/shm"]
            env = {"TMPDIR": tmp, **(env or {})}
        self.workdir = wd
        cfg: dict[str, Any] = {
            "level": p.level, "network": p.network, "session_dir": self._session_dir,
            "session_layer": p.session_layer or "tmpfs", "cow_system": p.cow_system,
            "layer_size": limits.max_fs_bytes, "mounts": mnts, "workdir": wd,
            "writable": writable, "home": home,
            "user": getattr(info, "user", None) or "user",
            "uid": int(getattr(info, "uid", 1000)), "gid": int(getattr(info, "gid", 1000)),
            "group": getattr(info, "group", None) or getattr(info, "user", None) or "user",
            "landlock_abi": p.landlock_abi if p.applies("landlock") else 0,
            "seccomp": p.applies("seccomp"), "seccomp_notify": p.seccomp_notify,
            "host_ns": host_ns,
            "python_binds": list(_python_binds()) + (list(_stdlib_binds()) if base_root else []),
            "base_root": base_root,
            "env": sandbox_env(env, home=home, unprivileged=unpriv,
                               user=getattr(info, "user", None) or "user"),
            "limits": limits, "info": info, "prefer_inprocess": prefer_inprocess,
            "commands_allowlist": commands_allowlist, "engine": engine,
            "executor_factory": "agentic_bash.executors.sandboxed:make_inner_executor",
            "t_host": time.time(), "layer_tar": layer_tar,
        }
        try:
            try:
                self._sock, self.pid = get_zygote().spawn(cfg)
            except OSError as e:
                raise SandboxError(f"could not start a sandbox: {e}") from e
            try:
                self._pidfd = os.pidfd_open(self.pid)
            except OSError:
                self._pidfd = None
            self._closed = False
            h = self._recv(_START_TIMEOUT)
            if h is None:
                raise SandboxCrashed("the sandbox did not start within "
                                     f"{_START_TIMEOUT:.0f}s")
            hdr, _ = h
            if hdr.get("ev") == "fatal":
                raise SandboxError(f"sandbox setup failed in {hdr.get('where')}: "
                                   f"{hdr.get('type')}: {hdr.get('msg')}\n{hdr.get('trace', '')}")
            if hdr.get("ev") != "ready":
                raise SandboxError(f"unexpected first message from the sandbox: {hdr!r}")
        except WireClosed as e:
            self._teardown()
            raise SandboxCrashed(f"the sandbox process died during setup ({e})") from None
        except BaseException:
            self._teardown()
            raise
        self.observed: dict[str, Any] = hdr.get("observed", {})
        import base64
        self.layer_extras: dict[str, bytes] = {
            k: base64.b64decode(v) for k, v in (hdr.get("layer_extras") or {}).items()}
        """The ``.agentic-bash/`` members of ``layer_tar`` (e.g. the shell state), not written."""
        self.layer_uppers: list[dict[str, str]] = list(self.observed.get("uppers", []))
        self.isolation: IsolationReport = verify(p, self.observed)
        missing = [m for m, v in self.isolation.mechanisms.items()
                   if p.applies(m) and v != "enforced"]
        if strict and missing:
            self.close()
            raise IsolationUnavailable("planned but not in effect: " + ", ".join(
                f"{m} ({self.isolation.mechanisms[m]})" for m in missing))
        for w in self.isolation.warnings:
            warnings.warn(w, RuntimeWarning, stacklevel=2)

    # -- transport --------------------------------------------------------------------------
    def _send(self, header: dict[str, Any], payload: bytes = b"") -> None:
        try:
            with self._send_lock:
                send_msg(self._sock, header, payload)
        except OSError as e:
            self._dead = True
            raise SandboxCrashed(f"the sandbox process is gone ({e})") from None

    def _recv(self, timeout: float | None) -> tuple[dict[str, Any], bytes] | None:
        if timeout is not None:
            r, _, _ = select.select([self._sock], [], [], max(0.0, timeout))
            if not r:
                return None
        return recv_msg(self._sock)

    def _check(self) -> None:
        if self._closed:
            raise SandboxClosed("the sandbox is closed")
        if self._dead:
            raise SandboxCrashed("the sandbox process died; create a new sandbox "
                                 "(e.g. from the last snapshot)")

    def _call(self, op: str, **kwargs: Any) -> Any:
        with self._lock:
            self._check()
            self._send({"op": op}, pickle.dumps(kwargs) if kwargs else b"")
            try:
                hdr, payload = recv_msg(self._sock)
            except WireClosed:
                self._dead = True
                raise SandboxCrashed("the sandbox process died") from None
            if hdr.get("ev") == "error":
                _raise_remote(hdr)
            if hdr.get("bytes"):
                return payload
            return hdr.get("value")

    # -- Executor protocol -----------------------------------------------------------------
    def run(self, script: str, stdin: bytes | BinaryIO | None = None,
            env: Mapping[str, str] | None = None, cwd: str | None = None,
            timeout: float | None = None, on_output: OutputCallback | None = None,
            tty: Mapping[str, Any] | None = None) -> Result:
        data = stdin.read() if stdin is not None and hasattr(stdin, "read") else stdin
        if isinstance(data, str):
            data = data.encode()
        with self._lock:
            self._check()
            req = {"op": "run", "script": script, "stdin": data is not None,
                   "env": dict(env) if env is not None else None, "cwd": cwd,
                   "timeout": timeout, "stream": on_output is not None}
            if tty is not None:
                req["tty"] = dict(tty)   # a pty inside the sandbox (agentic_bash.tty)
            self._send(req, data or b"")
            t = timeout if timeout is not None else self.limits.timeout
            deadline = None if t is None else time.monotonic() + t + _GRACE
            interrupted = False
            callback_error: BaseException | None = None
            try:
                while True:
                    wait = None if deadline is None else deadline - time.monotonic()
                    if wait is not None and wait <= 0:
                        if not interrupted:
                            # the interpreter should have stopped itself at its deadline
                            self.interrupt()
                            interrupted = True
                            deadline = time.monotonic() + _KILL_AFTER
                            continue
                        self._kill()
                        raise SandboxCrashed("the sandbox did not stop after its timeout and "
                                             "was killed")
                    msg = self._recv(wait)
                    if msg is None:
                        continue
                    hdr, payload = msg
                    ev = hdr.get("ev")
                    if ev == "out":
                        if on_output is not None and callback_error is None:
                            try:
                                on_output(int(hdr.get("fd", 1)), payload)
                            except BaseException as e:  # noqa: BLE001 - raised after the result
                                callback_error = e
                    elif ev == "result":
                        if callback_error is not None:
                            raise callback_error
                        return self._result(hdr, payload)
                    elif ev == "error":
                        _raise_remote(hdr)
                    else:
                        raise SandboxError(f"unexpected message from the sandbox: {hdr!r}")
            except WireClosed:
                self._dead = True
                raise SandboxCrashed("the sandbox process died during run()") from None

    @staticmethod
    def _result(h: dict[str, Any], payload: bytes) -> Result:
        n = int(h.get("stdout_len", 0))
        return Result(
            stdout_bytes=payload[:n], stderr_bytes=payload[n:],
            exit_code=int(h.get("exit_code", 0)), duration=float(h.get("duration", 0.0)),
            timed_out=bool(h.get("timed_out")), truncated=bool(h.get("truncated")),
            cwd=str(h.get("cwd", "")), files_created=tuple(h.get("files_created", ())),
            files_modified=tuple(h.get("files_modified", ())),
            files_deleted=tuple(h.get("files_deleted", ())),
            cpu_time=float(h.get("cpu_time", 0.0)), peak_memory=int(h.get("peak_memory", 0)),
            violations=tuple(PolicyViolation(str(k), str(d)) for k, d in h.get("violations", ())),
            extra=dict(h.get("extra") or {}))

    def interrupt(self) -> None:
        if self._closed or self._dead:
            return
        try:
            with self._send_lock:
                send_msg(self._sock, {"op": "interrupt"})
        except OSError:
            pass

    def tty_input(self, data: bytes) -> None:
        """Bytes typed at the pty of the run(tty=...) going on (no reply, like interrupt)."""
        if self._closed or self._dead or not data:
            return
        try:
            with self._send_lock:
                send_msg(self._sock, {"op": "tty_input"}, bytes(data))
        except OSError:
            pass

    def tty_resize(self, rows: int, cols: int) -> None:
        if self._closed or self._dead:
            return
        try:
            with self._send_lock:
                send_msg(self._sock, {"op": "tty_resize", "rows": int(rows), "cols": int(cols)})
        except OSError:
            pass

    def read_file(self, path: str) -> bytes:
        return self._call("read_file", path=path)

    def write_file(self, path: str, data: bytes, mode: int = 0o644) -> None:
        self._call("write_file", path=path, data=bytes(data), mode=mode)

    def list_files(self, path: str) -> list[dict[str, Any]]:
        return self._call("list_files", path=path)

    def exists(self, path: str) -> bool:
        return bool(self._call("exists", path=path))

    def realpath(self, path: str) -> str:
        return str(self._call("realpath", path=path))

    def remove(self, path: str, recursive: bool = False) -> None:
        self._call("remove", path=path, recursive=recursive)

    def get_state(self) -> dict[str, Any]:
        return self._call("get_state")

    def export_layer(self, fileobj: BinaryIO | None = None, *,
                     extra_members: dict[str, bytes] | None = None) -> bytes:
        """The session layer (everything the sandbox wrote, native writes included) as an OCI
        image-layer tar in ``vfs.oci``'s format; written to ``fileobj`` if given. A new
        ``SandboxedExecutor(layer_tar=...)`` restores it."""
        data = self._call("export_layer", extra_members=extra_members)
        if fileobj is not None:
            fileobj.write(data)
        return data

    def set_state(self, state: dict[str, Any]) -> None:
        self._call("set_state", state=state)

    @property
    def cwd(self) -> str:
        return self._call("cwd")

    @property
    def env(self) -> Mapping[str, str]:
        return self._call("env")

    @property
    def alive(self) -> bool:
        return not (self._closed or self._dead)

    # -- teardown ---------------------------------------------------------------------------
    def _kill(self) -> None:
        self._dead = True
        try:
            os.kill(self.pid, signal.SIGKILL)  # S2 has PDEATHSIG: the namespace goes with it
        except (OSError, AttributeError):
            pass

    def _wait_gone(self, timeout: float) -> bool:
        """Wait for S1 to exit (it outlives every other sandbox process)."""
        if self._pidfd is None:
            return True
        r, _, _ = select.select([self._pidfd], [], [], timeout)
        return bool(r)

    def _teardown(self) -> None:
        sock = getattr(self, "_sock", None)
        if sock is not None:
            # EOF on the channel means S1 (the last process of the sandbox) has exited
            sock.settimeout(5)
            try:
                while sock.recv(65536):
                    pass
            except OSError:
                self._kill()
            sock.close()
        if self._pidfd is not None:
            if not self._wait_gone(5):
                self._kill()
                self._wait_gone(5)
            os.close(self._pidfd)
            self._pidfd = None
        if self._session_dir:
            _rmtree(self._session_dir)
            self._session_dir = None
        self._closed = True

    def close(self) -> None:
        """End the sandbox: every process in it (background jobs, nohup) dies; idempotent.
        A run() in progress on another thread is interrupted first (it returns its result)."""
        with self._send_lock:
            if self._closed and self._session_dir is None:
                return
        self.interrupt()
        got = self._lock.acquire(timeout=_GRACE + _KILL_AFTER)
        try:
            if not got:
                self._kill()
            if not self._dead and not self._closed:
                try:
                    with self._send_lock:
                        send_msg(self._sock, {"op": "close"})
                except OSError:
                    pass
            self._closing = True
            self._teardown()
        finally:
            if got:
                self._lock.release()

    def __del__(self) -> None:
        try:
            if not self._closed:
                self.close()
        except Exception:  # noqa: BLE001
            pass

    def __enter__(self) -> SandboxedExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# -- inside the sandbox ------------------------------------------------------------------------
def make_inner_executor(cfg: dict[str, Any]) -> Any:
    """Runs in the sandbox process (S3): the interpreter over the sandbox's own root."""
    from .native import NativeLauncher

    # The pid namespace (or the landlock level's subreaper) kills children when the runner
    # dies and the runner itself has no capabilities left, so children take the vfork path.
    native = NativeLauncher(pdeathsig=False, drop_caps=False)
    if cfg.get("engine") == "bash":
        return _BashExecutor(cfg, native)
    try:
        from ..vfs.host import HostFS
        from .inprocess import InProcessExecutor
    except ImportError:
        return _BashExecutor(cfg, native)
    kwargs: dict[str, Any] = dict(
        fs=HostFS("/", writable=True), native=native, env=cfg["env"], workdir=cfg["workdir"],
        limits=cfg["limits"], prefer_inprocess=cfg.get("prefer_inprocess", False),
        commands_allowlist=cfg.get("commands_allowlist"))
    if cfg.get("info") is not None:
        kwargs["info"] = cfg["info"]
    return InProcessExecutor(**kwargs)


class _BashExecutor:
    """A stand-in interpreter (``engine='bash'``): each run is ``/bin/bash -c`` inside the
    sandbox. Used for benchmarks and while the in-process interpreter is unavailable; shell
    state does not persist between runs."""

    def __init__(self, cfg: dict[str, Any], native: Any) -> None:
        self.native = native
        self._env = dict(cfg["env"])
        self._cwd = cfg["workdir"]
        self.limits: Limits = cfg["limits"]
        self._current: Any = None
        self._cancel = threading.Event()

    def run(self, script: str, stdin: bytes | None = None, env: Mapping[str, str] | None = None,
            cwd: str | None = None, timeout: float | None = None,
            on_output: OutputCallback | None = None) -> Result:
        t0 = time.monotonic()
        self._cancel.clear()
        e = {**self._env, **(env or {})}
        r0, w0 = os.pipe()
        r1, w1 = os.pipe()
        r2, w2 = os.pipe()
        try:
            p = self.native.spawn(["bash", "-c", script], executable="/bin/bash", env=e,
                                  cwd=cwd or self._cwd, stdin=r0, stdout=w1, stderr=w2)
        finally:
            for fd in (r0, w1, w2):
                os.close(fd)
        self._current = p
        if stdin:
            threading.Thread(target=_feed, args=(w0, stdin), daemon=True).start()
        else:
            os.close(w0)
        bufs = {1: bytearray(), 2: bytearray()}
        fds = {r1: 1, r2: 2}
        t = timeout if timeout is not None else self.limits.timeout
        deadline = None if t is None else t0 + t
        timed_out = False
        while fds:
            wait = None if deadline is None else max(0.0, deadline - time.monotonic())
            ready, _, _ = select.select(list(fds), [], [], wait)
            if not ready and not timed_out and (deadline is not None):
                timed_out = True
                _stop(p)
                deadline = None
                continue
            for fd in ready:
                chunk = os.read(fd, 65536)
                if not chunk:
                    os.close(fd)
                    del fds[fd]
                    continue
                bufs[fds[fd]] += chunk
                if on_output:
                    on_output(fds[fd], chunk)
        status = p.wait()
        p.kill_group(signal.SIGKILL)  # background jobs of this run do not outlive it here
        self._current = None
        if self._cancel.is_set() and not timed_out:
            status = 130
        return Result(stdout_bytes=bytes(bufs[1]), stderr_bytes=bytes(bufs[2]),
                      exit_code=124 if timed_out else status, timed_out=timed_out,
                      duration=time.monotonic() - t0, cwd=self._cwd)

    def interrupt(self) -> None:
        self._cancel.set()
        p = self._current
        if p is not None:
            _stop(p)

    def read_file(self, path: str) -> bytes:
        with open(path, "rb") as f:
            return f.read()

    def write_file(self, path: str, data: bytes, mode: int = 0o644) -> None:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, mode)
        with os.fdopen(fd, "wb") as f:
            f.write(data)

    def list_files(self, path: str) -> list[dict[str, Any]]:
        out = []
        for de in os.scandir(path):
            st = de.stat(follow_symlinks=False)
            out.append({"name": de.name, "path": os.path.join(path, de.name),
                        "type": "dir" if stat.S_ISDIR(st.st_mode) else
                        "symlink" if stat.S_ISLNK(st.st_mode) else "file",
                        "size": st.st_size, "mode": stat.S_IMODE(st.st_mode),
                        "mtime": st.st_mtime})
        return out

    def exists(self, path: str) -> bool:
        return os.path.lexists(path)

    def realpath(self, path: str) -> str:
        return os.path.realpath(path)

    def remove(self, path: str, recursive: bool = False) -> None:
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path) if recursive else os.rmdir(path)
        else:
            os.unlink(path)

    def get_state(self) -> dict[str, Any]:
        return {"cwd": self._cwd, "vars": dict(self._env), "exported": sorted(self._env)}

    def set_state(self, state: dict[str, Any]) -> None:
        self._cwd = state.get("cwd", self._cwd)

    @property
    def cwd(self) -> str:
        return self._cwd

    @property
    def env(self) -> Mapping[str, str]:
        return dict(self._env)

    def close(self) -> None:
        self.interrupt()


def _feed(fd: int, data: bytes) -> None:
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    except OSError:
        pass
    finally:
        os.close(fd)


def _stop(p: Any) -> None:
    """SIGTERM to the group, a short grace, then SIGKILL."""
    p.kill_group(signal.SIGTERM)
    if p.wait(0.2) is None:
        p.kill_group(signal.SIGKILL)
