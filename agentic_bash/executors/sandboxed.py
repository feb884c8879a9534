"""SandboxedExecutor: the interpreter runs inside a sandbox process and is driven over a socket."""

from __future__ import annotations

import functools
import io
import os
import pickle
import re
import resource
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
import weakref
from typing import Any, BinaryIO, Callable, Iterable, Mapping

from .._lazyre import lazy_compile as _lazy_re
from ..errors import (IsolationUnavailable, LimitExceeded, ParseError, PolicyViolation,
                      SandboxClosed, SandboxCrashed, SandboxError, SnapshotError)
from ..isolation.fdwait import readable
from ..isolation.plan import Plan, plan as make_plan
from ..isolation.probe import probe
from ..isolation.report import IsolationReport, verify
from ..isolation.resources import LIMIT_MECHANISMS, ResourceControl
from ..isolation.wire import Reader, WireClosed, send_msg
from ..limits import Limits
from ..result import Result, _ResultBuilder
from ..validation import check_run_args, plain_run_args
from .base import OutputCallback

__all__ = ["SandboxedExecutor", "make_inner_executor", "sandbox_env"]

_PLAIN_RESULT = frozenset(("ev", "id", "exit_code", "duration", "cwd", "stdout_len", "cpu_time",
                           "peak_memory"))
"""The keys of a result frame whose other fields are all at their defaults (runner.result_header
leaves those out): SandboxedExecutor._result fills them without looking."""
_GRACE = 2.0            # seconds past the run's timeout before the host interrupts on its own
_KILL_AFTER = 3.0       # then seconds more before the host kills an unresponsive sandbox
WORKLOAD_NICE = 10      # niceness of the workload's programs, below the runner's 0 (issue 13)
_START_TIMEOUT = 60.0
_LAYER_PIECE = 8 << 20  # bytes per frame when a restart carries a layer over

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
        # /usr is read-only here: a plain `pip install X` (and `npm install -g X`) must go to
        # ~/.local, whose bin dir is then on PATH. pip does that itself when site-packages is
        # not writable; PIP_USER=1 also made every venv's pip refuse ("Can not perform a
        # '--user' install", check10)
        out["NPM_CONFIG_PREFIX"] = f"{home}/.local"
        # npm reads its global npmrc from $PREFIX/etc: keep the system's (CA settings live there)
        out["NPM_CONFIG_GLOBALCONFIG"] = "/usr/etc/npmrc"
    out.update(env or {})
    if unprivileged and f"{home}/.local/bin" not in out.get("PATH", "").split(":"):
        out["PATH"] = f"{home}/.local/bin:" + out.get("PATH", "")
    return out


def _protect_report(rep: IsolationReport, protect: Any, observed: dict[str, Any],
                    allow_ptrace: bool) -> IsolationReport:
    """Add the protected-path and ptrace entries to the verified report."""
    from dataclasses import replace
    mech = dict(rep.mechanisms)
    notes = list(rep.notes)
    if protect:
        facts = observed.get("protect")
        if isinstance(facts, dict):
            mech["protected_paths"] = "enforced by mounts"
            notes.append(f"protected paths: {protect.describe()}; at start "
                         f"{facts.get('hidden', 0)} hidden (overlay whiteouts), "
                         f"{facts.get('read_only', 0)} read-only (bind mounts); a file created "
                         f"later under a hidden name by the sandbox itself is its own and visible")
        else:
            mech["protected_paths"] = "unavailable: not applied (the runner did not report them)"
    if mech.get("seccomp") == "enforced":
        notes.append("ptrace and process_vm_readv/writev: " +
                     ("allowed (allow_ptrace=True)" if allow_ptrace else "refused (seccomp)"))
    return replace(rep, mechanisms=mech, notes=tuple(notes))


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
    (the caller's venv may live under /tmp, pyenv under a 0700 home): the package, its
    site-packages, stdlib and lib dirs -- never a whole prefix. (attack10: the whole
    ``sys.prefix`` was bound, and a venv made at a project's root, ``python -m venv .``,
    put the project, its .git and its .env in every sandbox.)"""
    import site
    import sys
    import sysconfig

    import agentic_bash
    paths = [os.path.dirname(os.path.abspath(agentic_bash.__file__))]
    prefixes = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix,
                                              sys.base_exec_prefix)}
    # the installation's own lib dirs: stdlib, lib-dynload, and (conda, pyenv) the shared
    # libraries its extension modules load from $ORIGIN/../.. when first imported
    for scheme_vars in ({}, {"base": sys.base_prefix, "platbase": sys.base_exec_prefix}):
        for key in ("stdlib", "platstdlib", "purelib", "platlib"):
            try:
                paths.append(sysconfig.get_paths(vars=scheme_vars)[key])
            except (KeyError, OSError):
                pass
    libdir = sysconfig.get_config_var("LIBDIR")
    if isinstance(libdir, str) and sys.prefix == sys.base_prefix:
        paths.append(libdir)   # (a venv's LIBDIR is its base installation's)
    try:
        paths += site.getsitepackages()
    except AttributeError:   # (an old virtualenv's site module)
        pass
    # sys.path entries inside a prefix (python3XX.zip, a .pth's dir there); entries outside
    # every prefix (the script's dir, PYTHONPATH, editable checkouts) are the caller's own
    for p in sys.path:
        if p and os.path.isabs(p):
            rp = os.path.realpath(p)
            if any(rp.startswith(q + "/") for q in prefixes):
                paths.append(p)
    import importlib.util

    for name in ("pyseccomp", "regex"):
        # found, not imported: importing pyseccomp runs ldconfig (~20 ms) in the caller
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            continue
        f = spec.origin if spec is not None else None
        if f and f not in ("built-in", "frozen"):
            f = os.path.abspath(f)
            paths.append(os.path.dirname(f) if f.endswith("__init__.py") else f)
    out: list[str] = []
    for p in paths:
        p = os.path.realpath(p)
        if p == "/" or p.startswith("/usr/") or p == "/usr" or not os.path.exists(p):
            continue
        if p in prefixes and sys.prefix != sys.base_prefix and p == os.path.realpath(sys.prefix):
            continue   # (never a venv's root: what it holds besides lib/ is the caller's)
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


def _packages(entries: Any) -> tuple[Any, ...]:
    if not entries:
        return ()
    from ..packages.manifest import PackageInfo
    return tuple(PackageInfo.from_json(e) for e in entries)


def _rmtree(path: str) -> None:
    top = os.path.abspath(path)

    def onerror(fn, p, exc):  # noqa: ANN001 - overlay work dirs are created mode 000
        # Security invariant: only modes inside the tree change. A failure on the tree's own
        # root (its rmdir: a mount still busy, an entry made meanwhile) chmodded its parent,
        # the host's /tmp, to 0700 (found this session: unprivileged users lost /tmp).
        try:
            p = os.path.abspath(p)
            parent = os.path.dirname(p)
            if parent == top or parent.startswith(top + "/"):
                os.chmod(parent, 0o700)
            inside = p == top or p.startswith(top + "/")
            if inside and os.path.isdir(p) and not os.path.islink(p):
                os.chmod(p, 0o700)
                if fn in (os.open, os.scandir, os.listdir, os.lstat):
                    # (a directory that could not be opened: rmtree skipped its contents;
                    # now that it can be, remove them, then it)
                    shutil.rmtree(p, onerror=onerror)
                    return
            if fn in (os.rmdir, os.unlink, os.remove):
                fn(p)
        except OSError:
            pass
    shutil.rmtree(path, onerror=onerror)


SESSION_PREFIX = "agentic-bash-session-"
_SESSION_DIR = _lazy_re(re.escape(SESSION_PREFIX) + r"([0-9]+)-([0-9]+)-([0-9]+)-[A-Za-z0-9_]+$")
_SWEEP_MAX = 200
_swept = False


def _pid_start(pid: int | str) -> str | None:
    from ..isolation.procstat import START, stat_fields
    f = stat_fields(pid)
    return None if f is None else f[START].decode()


def new_session_dir() -> str:
    """A session directory named after its owner (pid namespace, pid, start time), so a later
    process can tell it was left by one that died without closing (SIGKILL, OOM) and remove
    it: the first call in each process sweeps such leftovers of this user."""
    global _swept
    try:
        ns = os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return tempfile.mkdtemp(prefix=SESSION_PREFIX)
    if not _swept:
        _swept = True
        try:
            sweep_stale_sessions(ns)
        except Exception:  # noqa: BLE001 - a sweep of leftovers never stops a new sandbox
            pass
    return tempfile.mkdtemp(prefix=f"{SESSION_PREFIX}{ns}-{os.getpid()}-{_pid_start('self')}-")


def sweep_stale_sessions(ns: int) -> int:
    """Remove session directories of this user and pid namespace whose owning process is
    gone (bounded). Returns how many."""
    from ..isolation.procstat import may_run
    d = tempfile.gettempdir()
    me = os.geteuid()
    n = 0
    for name in os.listdir(d):
        m = _SESSION_DIR.match(name)
        if m is None or int(m.group(1)) != ns or may_run(m.group(2), m.group(3)):
            continue
        path = os.path.join(d, name)
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != me:
            continue
        _rmtree(path)
        n += 1
        if n >= _SWEEP_MAX:
            break
    return n


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


def _network_cfg(p: Plan, policy: Any) -> dict[str, Any]:
    """cfg["network"] for the runner: the policy as JSON, plus whether the proxy serves it.
    A plan that cannot give the sandbox its own namespace runs it on the host's network."""
    if not p.applies("network_namespace"):
        return {"mode": "host", "proxy": False}
    return {**policy.to_dict(), "proxy": p.applies("network_proxy")}


def _prewarm_proxy() -> None:
    """The first sandbox of a process imports network/proxy.py (asyncio: 15 ms unloaded,
    50-250 ms under load) and starts the proxy's thread: done on a thread of its own while
    this one waits for the zygote and the sandbox, instead of after them
    (``_attach_listeners`` then finds it started, or waits for it under the proxy's lock)."""
    # (the module may be half-imported by another thread: no attribute is assumed)
    running = getattr(sys.modules.get("agentic_bash.network.proxy"), "_proxy", None)
    try:
        if running is not None and running.alive():
            return
    except Exception:  # noqa: BLE001 - half-made: start it (get_proxy is idempotent)
        pass

    def warm() -> None:
        try:
            from ..network.proxy import get_proxy
            get_proxy()
        except Exception:  # noqa: BLE001 - _attach_listeners tries again and reports
            pass
    threading.Thread(target=warm, name="agentic-bash-proxy-start", daemon=True).start()


def _run_request(rid: int, script: str, stdin: Any, env: Mapping[str, str] | None,
                 cwd: str | None, timeout: float | None, stream: bool) -> dict[str, Any]:
    """A "run" request; fields at their default (no stdin, env, cwd, timeout or streaming)
    are left out, the runner reads each with that default (1 us less JSON a run)."""
    req: dict[str, Any] = {"op": "run", "id": rid, "script": script}
    if stdin:
        req["stdin"] = stdin
    if env is not None:
        req["env"] = dict(env)
    if cwd is not None:
        req["cwd"] = cwd
    if timeout is not None:
        req["timeout"] = timeout
    if stream:
        req["stream"] = True
    return req


class _sigint_deferred:
    """(check11) Ctrl-C in the main thread during a restart waits for its end, then raises
    KeyboardInterrupt: mid-restart it lost the salvaged files (the old session dir was gone,
    the new sandbox not up), closed a pidfd twice (OSError EBADF to the caller) or left the
    executor half set up (KeyError on the next call)."""

    def __enter__(self) -> None:
        self.got: list[int] = []
        self.old: Any = None
        if (threading.current_thread() is threading.main_thread()
                and signal.getsignal(signal.SIGINT) is signal.default_int_handler):
            self.old = signal.signal(signal.SIGINT, lambda n, f: self.got.append(n))

    def __exit__(self, typ: Any, *exc: Any) -> None:
        if self.old is not None:
            signal.signal(signal.SIGINT, self.old)
            if self.got and typ is None:
                raise KeyboardInterrupt


class _Undelivered(SandboxCrashed):
    """A request could not be sent: the sandbox was already gone before it."""


def _streamed_fd(stdin: Any) -> int | None:
    """The fd of a ``stdin`` that is a pipe, socket or terminal (read while the script runs,
    never to its end beforehand: it may never end); None for bytes, BytesIO, regular files."""
    if stdin is None or isinstance(stdin, (bytes, bytearray, memoryview, str, io.BytesIO)):
        return None
    fileno = getattr(stdin, "fileno", None)
    if fileno is None:
        return None
    try:
        fd = fileno()
        mode = os.fstat(fd).st_mode
    except (OSError, ValueError, io.UnsupportedOperation):
        return None
    if stat.S_ISREG(mode) or stat.S_ISBLK(mode):
        return None
    return fd


class _StdinFeeder:
    """Sends a streamed stdin to the sandbox one chunk at a time: a chunk, then wait for the
    sandbox's ``stdin_more`` (it has written the chunk into the run's pipe). A thread, since
    reading the caller's pipe may block; it stops with the run."""

    def __init__(self, ex: SandboxedExecutor, rid: int, fd: int) -> None:
        self._ex, self._rid, self._fd = ex, rid, fd
        self._credit = threading.Semaphore(1)
        self._stopped = False
        threading.Thread(target=self._run, name="agentic-bash-stdin", daemon=True).start()

    def more(self) -> None:
        self._credit.release()

    def stop(self) -> None:
        self._stopped = True
        self._credit.release()

    def _run(self) -> None:
        while not self._stopped:
            if not self._credit.acquire(timeout=0.1):
                continue
            while not self._stopped:
                try:
                    r, _, _ = select.select([self._fd], [], [], 0.1)
                except (OSError, ValueError):
                    r = [self._fd]
                if r:
                    break
            if self._stopped:
                return
            try:
                chunk = os.read(self._fd, 65536)
            except OSError:
                chunk = b""
            if not self._ex._send_stdin(self._rid, chunk) or not chunk:
                return


class SandboxedExecutor:
    """The Executor protocol over a sandbox process (``level`` ``namespace`` or ``landlock``).

    ``isolation`` is the verified report. Raises ``IsolationUnavailable`` when ``strict`` and a
    promised mechanism is missing or was not applied, or when the level cannot run here.
    """

    def __init__(self, *, level: str | None = None, isolation: str | None = None, env: Mapping[str, str] | None = None,
                 workdir: str = "/workspace", mounts: Any = None, limits: Limits = Limits(),
                 strict: bool = False, info: Any = None, prefer_inprocess: bool = False,
                 commands_allowlist: Any = None, base: Any = None, network: Any = "public",
                 plan: Plan | None = None, engine: str = "interpreter",
                 layer_tar: bytes | None = None, image: Any = None, protect: Any = None,
                 allow_ptrace: bool = False) -> None:
        self._closed = True
        self._dead = False
        self._lock = threading.RLock()
        self._send_lock = threading.Lock()
        self._session_dir: str | None = None
        self._pidfd: int | None = None
        self._resources: ResourceControl | None = None
        self._init_pidfd: int | None = None
        self._layer_fd: int | None = None
        self._restarting = False
        self._net: Any = None
        from ..network.policy import NetworkPolicy
        policy = NetworkPolicy.coerce(network)
        base_root = _base_rootfs(base) if base is not None else ""
        img = None
        if image is not None:
            from ..packages.images import resolve_image
            img = resolve_image(image)
        self.image_spec: str | None = (image if isinstance(image, str) else img.root) if img else None
        """What a snapshot records of ``image=``, so a restore starts from the same image."""
        level = level or isolation or "namespace"
        p = plan or make_plan(level, probe(), strict=strict, network=policy)
        if not p.sandboxed:
            raise IsolationUnavailable("; ".join(p.warnings) or
                                       f"isolation={level!r} does not use a sandbox process")
        self.plan = p
        self.limits = limits
        mnts = _norm_mounts(mounts)  # (may refuse: before anything is created)
        if protect and p.level != "namespace":
            raise IsolationUnavailable("hide=/read_only= need the 'namespace' level")
        if protect and protect.hide:
            # hidden = absent needs an overlay (a whiteout layer); a live rw bind of a host
            # directory cannot be masked per name, so the combination is refused
            ws_t = "/" + workdir.strip("/")
            for m in mnts:
                t = m["target"]
                if m["mode"] == "rw" and (t == ws_t or t.startswith(ws_t.rstrip("/") + "/")
                                          or ws_t.startswith(t.rstrip("/") + "/")):
                    raise ValueError(f"hide= cannot apply to the rw mount at {t}: use 'cow' "
                                     f"or 'ro'")
        # cgroups are made (and strict refusals raised) before the sandbox exists
        try:
            with _sigint_deferred():   # (check11: a group made but not yet recorded)
                self._resources = ResourceControl(limits, level=p.level,
                                                  session_layer=p.session_layer or "tmpfs",
                                                  strict=strict, euid=os.geteuid())
                self._session_dir = new_session_dir()
            unpriv = os.geteuid() != 0
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
            cache_dir = ""
            if p.level == "namespace":
                from ..packages.cache import cache_root
                try:
                    cache_dir = cache_root()
                except OSError:
                    cache_dir = ""
            if cache_dir:
                from ..packages.cache import NPM_CACHE_PATH, PIP_CACHE_PATH
                env = {"PIP_CACHE_DIR": PIP_CACHE_PATH, "NPM_CONFIG_CACHE": NPM_CACHE_PATH,
                       **(env or {})}
            net_cfg = _network_cfg(p, policy)
            if net_cfg.get("proxy"):
                from ..network.inside import proxy_env
                env = {**proxy_env(), **(env or {})}
                _prewarm_proxy()
            cfg: dict[str, Any] = {
                "level": p.level, "network": net_cfg, "session_dir": self._session_dir,
                "session_layer": p.session_layer or "tmpfs", "cow_system": p.cow_system,
                # tmpfs takes size=0 as "no bound"; the layer also holds the sandbox's own
                # identity files, so it gets at least 1 MiB
                "layer_size": (None if limits.max_fs_bytes is None else max(1 << 20, limits.max_fs_bytes)),
                "mounts": mnts, "workdir": wd,
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
                "resources": self._resources.cfg,
                "image_root": img.root if img else "",
                "cache_dir": cache_dir,
                "packages": [p.to_json() for p in img.packages] if img else [],
                "protect": protect.to_json() if protect else None,
                "allow_ptrace": bool(allow_ptrace),
            }
            self._policy = policy
            self._cfg = cfg
            self._next_id = 0
            self._pending: int | None = None   # a request whose reply was abandoned on our side
            self._current: int | None = None   # the run in progress
            self._current_thread = 0           # and the thread that started it
            self._dropped: set[int] = set()    # threads whose queued run was cancelled (check9)
            self._restart_reason: str | None = None  # said by the next Result
            self._last_shell: dict[str, Any] | None = None
            self._custom: dict[str, Any] = {}
            self._arun: _AsyncRun | None = None   # a run awaited on an event loop (arun)
            self._await_timer: tuple[Any, float, Any] | None = None   # (_watch_deadline)
            hdr = self._start(cfg)
            self.observed: dict[str, Any] = hdr.get("observed", {})
            import base64
            self.layer_extras: dict[str, bytes] = {
                k: base64.b64decode(v) for k, v in (hdr.get("layer_extras") or {}).items()}
            """The ``.agentic-bash/`` members of ``layer_tar`` (e.g. the shell state), not written."""
            self.layer_uppers: list[dict[str, str]] = list(self.observed.get("uppers", []))
            self.observed["network_proxy"] = self._net is not None
            self.observed.update(getattr(self, "_net_start", {}))
            self._resources.runner_counts(self.observed)
            self.isolation: IsolationReport = self._resources.report(verify(p, self.observed),
                                                                     self.observed)
            self.isolation = _protect_report(self.isolation, protect, self.observed, allow_ptrace)
            missing = [m for m, v in self.isolation.mechanisms.items()
                       if (p.applies(m) and v != "enforced") or
                       (m in LIMIT_MECHANISMS.values() and not v.startswith("enforced"))]
            if protect and not self.isolation.mechanisms["protected_paths"].startswith("enforced"):
                # asked-for protected paths that are not in place: never run without them
                self.close()
                raise IsolationUnavailable("protected paths: "
                                           + self.isolation.mechanisms["protected_paths"])
            if strict and missing:
                self.close()
                raise IsolationUnavailable("planned but not in effect: " + ", ".join(
                    f"{m} ({self.isolation.mechanisms[m]})" for m in missing))
            for w in self.isolation.warnings:
                warnings.warn(w, RuntimeWarning, stacklevel=2)
        except BaseException:
            # (check11) Ctrl-C while this was built (before or after the sandbox started)
            # left its cgroups and session dir behind, or a running sandbox nobody owned
            if not getattr(self, "_torn", False):
                self._teardown()
            raise

    def _start(self, cfg: dict[str, Any]) -> dict[str, Any]:
        """Spawn the sandbox process and read its start-up messages up to "ready"."""
        try:
            from ..isolation.zygote import get_zygote
            try:
                self._sock, self.pid = get_zygote().spawn(cfg)
            except OSError as e:
                raise SandboxError(f"could not start a sandbox: {e}") from e
            self._reader = Reader(self._sock, want_fds=True)
            try:
                self._pidfd = os.pidfd_open(self.pid)
            except OSError:
                self._pidfd = None
            self._closed = False
            self._dead = False
            while True:
                h = self._reader.recv(_START_TIMEOUT)
                if h is None:
                    raise SandboxCrashed("the sandbox did not start within "
                                         f"{_START_TIMEOUT:.0f}s")
                hdr, _ = h
                ev = hdr.get("ev")
                if ev == "init_pid":
                    # pid 1 of the sandbox: when it is gone, so is every process in it
                    try:
                        # (pid None: the channel's own process is pid 1, runner.py's S2)
                        pid = hdr["pid"]
                        self._init_pidfd = os.pidfd_open(self.pid if pid is None else int(pid))
                    except (OSError, KeyError, TypeError, ValueError):
                        self._init_pidfd = None
                    continue
                if ev == "net":
                    self._attach_listeners(hdr)
                    continue
                if ev == "layer_fd" and hdr.get("fds"):
                    # the session layer, kept reachable after the sandbox dies (restart)
                    self._set_layer_fd(hdr["fds"][0])
                    for fd in hdr["fds"][1:]:
                        os.close(fd)
                    continue
                for fd in hdr.get("fds") or ():
                    os.close(fd)  # start-up fds nobody here claims
                if ev == "fatal":
                    if hdr.get("where") == "setup" and any(
                            w in str(hdr.get("msg")) for w in ("unshare", "uid_map", "gid_map",
                                                                "setgroups")):
                        # the kernel refused what the (possibly cached) probe promised
                        from ..isolation.probe import invalidate_cache
                        invalidate_cache()
                    raise SandboxError(f"sandbox setup failed in {hdr.get('where')}: "
                                       f"{hdr.get('type')}: {hdr.get('msg')}\n"
                                       f"{hdr.get('trace', '')}")
                if ev != "ready":
                    raise SandboxError(f"unexpected first message from the sandbox: {hdr!r}")
                self._reader.want_fds = False
                self._reader.close_fds()
                return hdr
        except WireClosed as e:
            self._teardown()
            raise SandboxCrashed(f"the sandbox process died during setup ({e})") from None
        except BaseException:
            self._teardown()
            raise

    def _set_layer_fd(self, fd: int) -> None:
        if self._layer_fd is not None:
            os.close(self._layer_fd)
        self._layer_fd = fd

    def _attach_listeners(self, hdr: dict[str, Any]) -> None:
        """Start-up handshake, network part: the proxy, DNS and transparent listeners pid 1
        made in the sandbox's namespace (the ``net`` frame, one role per fd) are attached to
        the shared proxy."""
        socks = []
        for fd in hdr.get("fds") or ():
            os.set_inheritable(fd, False)
            socks.append(socket.socket(fileno=fd))
        if not self._cfg["network"].get("proxy"):
            for s in socks:
                s.close()
            return
        from ..network.proxy import get_proxy
        policy = self._policy
        try:
            roles = dict(zip(hdr.get("roles") or (), socks))
            want = {"proxy": (socket.AF_INET, socket.SOCK_STREAM),
                    "dns": (socket.AF_INET, socket.SOCK_DGRAM),
                    "transparent": (socket.AF_INET, socket.SOCK_STREAM),
                    "transparent6": (socket.AF_INET6, socket.SOCK_STREAM)}
            # Security invariant: only the listeners asked for, of the expected kinds
            if len(roles) != len(socks) or not {"proxy", "dns"} <= set(roles) or any(
                    want.get(r) != (s.family, s.type) for r, s in roles.items()):
                raise SandboxError("the sandbox passed unexpected network listeners")
            self._net = get_proxy().attach(
                policy, tcp=[roles["proxy"]], udp=[roles["dns"]],
                transparent=[roles[r] for r in ("transparent", "transparent6") if r in roles],
                label=str(self.pid), resolver=policy.resolver)
        except BaseException:
            for s in socks:
                s.close()
            raise
        self._net_start = {"transparent": "transparent" in roles,
                           "transparent6": "transparent6" in roles,
                           "transparent_error": str(hdr.get("transparent_error") or ""),
                           "t_network_ms": hdr.get("t_ms")}

    @property
    def network_log(self) -> list[dict[str, Any]]:
        """The proxy's log of this sandbox's connections and lookups (newest last)."""
        # deque.copy() runs without releasing the GIL: the proxy thread may be appending
        return list(self._net.log.copy()) if self._net is not None else []

    def _with_network(self, r: Result) -> Result:
        if self._net is None:
            return r
        refused = self._net.drain()
        if not refused:
            return r
        import dataclasses
        return dataclasses.replace(r, violations=tuple(r.violations) + tuple(refused))

    # -- transport --------------------------------------------------------------------------
    def _new_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def _send(self, header: dict[str, Any], payload: bytes = b"") -> None:
        try:
            with self._send_lock:
                try:
                    send_msg(self._sock, header, payload)
                except OSError:
                    raise
                except BaseException:
                    # part of a frame may be out: the sandbox would read garbage after it
                    self._reader.torn = True
                    raise
        except OSError as e:
            self._dead = True
            self._crash_reason = "the sandbox process died"
            raise _Undelivered(f"the sandbox process is gone ({e})") from None

    def _deliver(self, header: dict[str, Any], payload: bytes = b"") -> None:
        """Send a request. If the sandbox turns out to be dead already, the request never
        reached it (EPIPE: nobody can read it any more), so it goes to a restarted one."""
        try:
            self._send(header, payload)
        except _Undelivered:
            if self._restarting:
                raise
            self._restart()
            self._send(header, payload)

    def _check(self) -> None:
        if self._closed:
            raise SandboxClosed("the sandbox is closed")

    def _ready(self) -> None:
        """Before a request: the channel is in step (an abandoned reply is drained) and the
        sandbox process is alive (after a crash, a new one is started over the same files)."""
        self._check()
        a = self._arun
        if a is not None and a.thread == threading.get_ident():
            # a blocking call from the event loop that awaits a run of ours (the lock is this
            # thread's already; the loop cannot take the reply while this call blocks): that
            # run is finished here first, as a run of another thread would be
            a.finish_here()
        if not self._dead and self._reader.torn:
            self._kill()
            self._crash_reason = "the channel to the sandbox was interrupted mid-message"
        if not self._dead and self._pending is not None:
            self._drain()
        if self._dead:
            self._restart()

    def _drain(self) -> None:
        """Read and drop frames up to the final reply to the abandoned request; a run that
        does not stop when interrupted gets the sandbox killed (and restarted)."""
        rid = self._pending
        deadline = time.monotonic() + _GRACE + _KILL_AFTER
        nudge = time.monotonic() + 0.5
        seen = len(self._reader.buf)
        try:
            while True:
                now = time.monotonic()
                if len(self._reader.buf) != seen:
                    # a big reply still coming in (an abandoned export_layer): not stuck
                    seen = len(self._reader.buf)
                    deadline = max(deadline, now + _KILL_AFTER)
                if now >= deadline:
                    self._kill()
                    self._crash_reason = ("an abandoned call did not end within "
                                          f"{_GRACE + _KILL_AFTER:.0f}s of its interrupt")
                    return
                msg = self._reader.recv(min(deadline, nudge) - now)
                if msg is None:
                    if time.monotonic() >= nudge:
                        self._send_interrupt(rid)  # it may not have started when asked
                        nudge = time.monotonic() + 0.5
                    continue
                hdr, _ = msg
                if hdr.get("id") == rid and hdr.get("ev") in ("result", "error", "ok"):
                    self._pending = None
                    return
                if hdr.get("ev") == "fatal":
                    raise WireClosed("the sandbox reported a fatal error")
        except WireClosed:
            self._dead = True
            self._crash_reason = "the sandbox process died"

    def _abandon(self, rid: int, interrupt: bool) -> None:
        """A call left before its reply (an exception on our side): remember to drain it."""
        if self._dead or self._reader.torn:
            return
        self._pending = rid
        if interrupt:
            self._send_interrupt(rid)

    def _send_interrupt(self, rid: int | None) -> None:
        try:
            with self._send_lock:
                send_msg(self._sock, {"op": "interrupt", "target": rid})
        except OSError:
            pass

    def _recv(self, timeout: float | None) -> tuple[dict[str, Any], bytes] | None:
        return self._reader.recv(timeout)

    def _call(self, op: str, **kwargs: Any) -> Any:
        with self._lock:
            self._ready()
            return self._call_locked(op, kwargs)

    def _call_locked(self, op: str, kwargs: dict[str, Any], payload: bytes | None = None) -> Any:
        rid = self._new_id()
        self._deliver({"op": op, "id": rid},
                      payload if payload is not None else
                      pickle.dumps(kwargs) if kwargs else b"")
        try:
            while True:
                msg = self._reader.recv(None)
                assert msg is not None
                hdr, payload = msg
                if hdr.get("id") != rid:
                    if hdr.get("ev") == "fatal":
                        raise WireClosed("the sandbox reported a fatal error")
                    continue  # a frame of an abandoned call
                if hdr.get("ev") == "error":
                    _raise_remote(hdr)
                if hdr.get("bytes"):
                    return payload
                return hdr.get("value")
        except WireClosed:
            self._dead = True
            self._crash_reason = "the sandbox process died"
            raise SandboxCrashed("the sandbox process died") from None
        except (SandboxError, OSError, ValueError, TypeError, KeyError, IndexError,
                NotImplementedError, RuntimeError):
            raise  # the reply was read: the channel is in step
        except BaseException:
            self._abandon(rid, interrupt=False)
            raise

    # -- restart after a crash (DESIGN.md decision 10) -------------------------------------
    def _salvage_layer(self) -> Any:
        """The dead sandbox's session layer as a layer tar in an unnamed temporary file, read
        through the fd its pid 1 sent at start-up. Only called once every process of that
        sandbox is gone, so nothing changes the files while they are read (symlinks are
        stored, never followed)."""
        fd = self._layer_fd
        if fd is None or self.plan.level != "namespace":
            return None
        from ..isolation.layerscan import export_layer_tar
        from ..isolation.rootfs import LAYER_PATH
        base = f"/proc/self/fd/{fd}"
        uppers = [{"target": u["target"], "upper": base + u["upper"][len(LAYER_PATH):]}
                  for u in self.layer_uppers if u.get("upper", "").startswith(LAYER_PATH)]
        f = tempfile.TemporaryFile(prefix="agentic-bash-salvage-")
        # (attack9) bounded by the layer's size: a sparse file costs the layer nothing, but
        # every byte of it would land in this host file; and no merged view: its paths are
        # the host's own
        size = self._cfg.get("layer_size")
        try:
            export_layer_tar(uppers, f, merged=False,
                             max_bytes=None if not size else max(2 * int(size), 1 << 30))
        except BaseException:
            f.close()
            raise
        return f

    def _import_salvaged(self, f: Any) -> None:
        """Send the salvaged layer in pieces and import it: memory stays O(piece)."""
        with f:
            f.seek(0)
            while True:
                chunk = f.read(_LAYER_PIECE)
                if not chunk:
                    break
                self._call_locked("stage_layer", {}, payload=chunk)
            self._call_locked("import_layer", {})

    def _restart(self) -> None:
        """Start a fresh sandbox process over the same session files and the shell state of
        the last snapshot (else the constructor's); the next Result says so."""
        reason = getattr(self, "_crash_reason", None) or "the sandbox process died"
        self._restarting = True
        try:
            with _sigint_deferred():
                self._restart_locked(reason)
        finally:
            self._restarting = False

    def _restart_locked(self, reason: str) -> None:
        self._kill()
        self._wait_gone(5)
        layer = None
        init = self._init_pidfd
        if init is not None:
            # every process of the old sandbox must be gone before its files are read
            r = readable([init], 5)
            if not r:
                reason += " (its files could not be recovered: the old sandbox did not end)"
            else:
                try:
                    layer = self._salvage_layer()
                except OSError as e:
                    reason += f" (its files could not be recovered: {e})"
            os.close(init)
            self._init_pidfd = None
        elif self.plan.level == "namespace":
            reason += " (its files could not be recovered)"
        old_dir = self._session_dir
        sock = getattr(self, "_sock", None)
        if sock is not None:
            sock.close()
        if self._pidfd is not None:
            os.close(self._pidfd)
            self._pidfd = None
        if self._layer_fd is not None:
            os.close(self._layer_fd)
            self._layer_fd = None
        net, self._net = self._net, None
        if net is not None:
            try:
                net.close()
            except Exception:  # noqa: BLE001
                pass
        cfg = dict(self._cfg, layer_tar=None, t_host=time.time())
        if self.plan.level == "namespace":
            self._session_dir = new_session_dir()
            cfg["session_dir"] = self._session_dir
            if old_dir:
                _rmtree(old_dir)
        self._pending = None
        self._current = None
        try:
            hdr = self._start(cfg)
        except BaseException as e:
            if layer is not None:
                layer.close()
            self._closed = False
            self._dead = True
            if isinstance(e, SandboxError):
                raise SandboxCrashed(f"the sandbox process died and could not be restarted: "
                                     f"{e}") from e
            raise
        self._cfg = cfg
        self.observed = hdr.get("observed", {})
        self.layer_uppers = list(self.observed.get("uppers", []))
        self.observed["network_proxy"] = self._net is not None
        self._resources.runner_counts(self.observed)
        self._crash_reason = None
        try:
            if layer is not None:
                self._import_salvaged(layer)
            if self._last_shell is not None:
                self._call_locked("set_state", {"state": self._last_shell})
            for name in self._custom:
                self._call_locked("register_command", {"name": name})
        except SandboxError as e:
            reason += f" (restoring the session failed: {e})"
        self._restart_reason = reason

    # -- Executor protocol -----------------------------------------------------------------
    def run(self, script: str, stdin: bytes | BinaryIO | None = None,
            env: Mapping[str, str] | None = None, cwd: str | None = None,
            timeout: float | None = None, on_output: OutputCallback | None = None,
            tty: Mapping[str, Any] | None = None) -> Result:
        # (the per-call path: `run("echo hi")` pays every line here; what a run without
        # stdin, env, cwd, timeout, callback or tty does not need is skipped)
        if not plain_run_args(script, stdin, env, cwd, timeout):
            check_run_args(script, stdin, env, cwd, timeout)  # before anything is sent
        if stdin is None:
            feed_fd = data = None
        else:
            feed_fd = _streamed_fd(stdin)
            if feed_fd is not None:
                data = None   # a pipe or terminal: streamed while the script runs, as bash reads it
            else:
                data = stdin.read() if hasattr(stdin, "read") else stdin
            if isinstance(data, str):
                data = data.encode()
            elif data is not None and not isinstance(data, bytes):
                data = bytes(data)
        with self._lock:
            if self._dropped and threading.get_ident() in self._dropped:
                # (Sandbox.arun cancelled while this call waited for the lock: never sent)
                self._dropped.discard(threading.get_ident())
                raise SandboxError("run cancelled before it began")
            self._ready()
            rid = self._new_id()
            req = _run_request(rid, script, "pipe" if feed_fd is not None else data is not None,
                               env, cwd, timeout, on_output is not None)
            if tty is not None:
                req["tty"] = dict(tty)   # a pty inside the sandbox (agentic_bash.tty)
            t = timeout if timeout is not None else self.limits.timeout
            deadline = None
            if t is not None:
                # (contract12) the deadline as a CLOCK_MONOTONIC time (one clock for the host
                # and the sandbox: no time namespace): the runner stops the run at it, not a
                # timeout after it got the request, which came late on a loaded machine
                req["by"] = time.monotonic() + t
            self._resources.begin_run()
            self._deliver(req, data or b"")
            self._current_thread = threading.get_ident()
            self._current = rid
            if self._dropped and self._current_thread in self._dropped:
                # (cancelled between taking the lock and becoming the current run)
                self._dropped.discard(self._current_thread)
                self._send_interrupt(rid)
            feeder = _StdinFeeder(self, rid, feed_fd) if feed_fd is not None else None
            if t is not None:
                deadline = time.monotonic() + t + _GRACE
            interrupted = False
            callback_error: BaseException | None = None
            pending: tuple[dict[str, Any], bytes] | None = None
            recv = self._reader.recv

            def deliver(fd: int, chunk: bytes) -> None:
                nonlocal callback_error
                if on_output is not None and callback_error is None:
                    try:
                        on_output(fd, chunk)
                    except BaseException as e:  # noqa: BLE001 - raised after the result
                        callback_error = e
            try:
                while True:
                    if pending is not None:  # a frame a custom command's call ended on
                        (hdr, payload), pending = pending, None
                        ev = hdr.get("ev")
                        if ev == "result":
                            self._current = None
                            if callback_error is not None:
                                raise callback_error
                            return self._finish(hdr, payload)
                        self._current = None
                        _raise_remote(hdr)
                    if deadline is None:
                        msg = recv(None)
                    else:
                        wait = deadline - time.monotonic()
                        if wait <= 0:
                            if not interrupted:
                                # the interpreter should have stopped itself at its deadline
                                self._send_interrupt(rid)
                                interrupted = True
                                deadline = time.monotonic() + _KILL_AFTER
                                continue
                            self._kill()
                            self._crash_reason = "the sandbox did not stop after a run's timeout"
                            raise SandboxCrashed("the sandbox did not stop after its timeout and "
                                                 "was killed")
                        msg = recv(wait)
                        if msg is None:
                            continue
                    hdr, payload = msg   # type: ignore[misc]
                    if hdr.get("id") != rid:
                        if hdr.get("ev") == "fatal":
                            raise WireClosed("the sandbox reported a fatal error")
                        continue  # output or reply of an abandoned call: never this run's
                    ev = hdr.get("ev")
                    if ev == "result":
                        self._current = None
                        if callback_error is not None:
                            raise callback_error
                        return self._finish(hdr, payload)
                    if ev == "out":
                        deliver(int(hdr.get("fd", 1)), payload)
                    elif ev == "call":
                        # a custom command: the function runs here, its I/O over the channel
                        pending = self._host_call(hdr, rid, deliver)
                    elif ev == "call_in" or ev == "call_end":
                        pass  # of a call that is over
                    elif ev == "stdin_more":
                        if feeder is not None:
                            feeder.more()
                    elif ev == "error":
                        self._current = None
                        _raise_remote(hdr)
                    else:
                        self._kill()
                        self._crash_reason = f"unexpected message from the sandbox: {ev!r}"
                        raise SandboxCrashed(self._crash_reason)
            except WireClosed:
                self._dead = True
                self._crash_reason = "the sandbox process died during run()"
                raise SandboxCrashed("the sandbox process died during run()") from None
            except BaseException:
                if self._current == rid:  # left before the reply (e.g. KeyboardInterrupt)
                    self._abandon(rid, interrupt=True)
                raise
            finally:
                self._current = None
                if feeder is not None:
                    feeder.stop()

    def _finish(self, hdr: dict[str, Any], payload: bytes) -> Result:
        """A run's result frame as the caller's Result: the host's own figures (cgroups read
        here, the network proxy's refusals) added."""
        r = self._result(hdr, payload)
        net = self._net
        if net is not None and (net._violations or net._dropped):
            # (looked at first without the proxy's lock: one appended just after the look is
            # the next run's, as one appended just after the drain would be)
            r = self._with_network(r)
        res = self._resources
        if res.cgroups is not None:
            r = res.end_run(r)
        return r

    async def arun(self, script: str, stdin: bytes | None = None,
                   env: Mapping[str, str] | None = None, cwd: str | None = None,
                   timeout: float | None = None,
                   on_output: OutputCallback | None = None) -> Result | None:
        """``run()`` awaited on the running event loop: the request is sent from the loop's
        thread and the reply taken off the channel when the loop sees it readable, with no
        worker thread in between. None when this call cannot go that way (another call holds
        the sandbox, an abandoned reply is still to be drained, a restart is due, custom
        commands are registered, stdin is a stream): the caller then runs ``run()`` on a
        worker thread. Cancelling the awaiting task interrupts the run; its reply is drained
        by the next call, as after a KeyboardInterrupt in ``run()``."""
        import asyncio

        self._check()
        if self._custom or not (stdin is None or (type(stdin) is bytes and len(stdin) <= 1 << 16)):
            return None   # (a big stdin would block the loop while the sandbox reads it)
        if not self._lock.acquire(blocking=False):
            return None
        try:
            # (the RLock is this thread's again if an awaited run of the same loop holds it)
            if (self._arun is not None or self._current is not None or self._pending is not None
                    or self._dead or self._reader.torn):
                return None
            if not plain_run_args(script, stdin, env, cwd, timeout):
                check_run_args(script, stdin, env, cwd, timeout)  # before anything is sent
            loop = asyncio.get_running_loop()
            rid = self._new_id()
            req = _run_request(rid, script, stdin is not None, env, cwd, timeout,
                               on_output is not None)
            t = timeout if timeout is not None else self.limits.timeout
            if t is not None:
                req["by"] = time.monotonic() + t   # (the deadline on the shared clock, as run())
            self._resources.begin_run()
            try:
                self._send(req, stdin or b"")
            except _Undelivered:
                return None   # it never reached the sandbox: run() restarts it and sends
            self._current_thread = threading.get_ident()
            self._current = rid
            a = self._arun = _AsyncRun(self, loop, rid, on_output)
            try:
                return await a.wait(timeout if timeout is not None else self.limits.timeout)
            except BaseException:
                if self._current == rid:  # left before the reply (the task was cancelled)
                    self._abandon(rid, interrupt=True)
                raise
            finally:
                a.detach()
                self._arun = None
                self._current = None
        finally:
            self._lock.release()

    def _send_stdin(self, rid: int, chunk: bytes) -> bool:
        try:
            with self._send_lock:
                send_msg(self._sock, {"op": "stdin", "target": rid}, chunk)
            return True
        except OSError:
            return False

    # -- custom commands: the function runs in this process --------------------------------
    def register_command(self, name: str, fn: Any) -> None:
        """A custom command ``fn(ctx, argv) -> int`` that the sandboxed interpreter calls over
        the channel: it runs in this process with ``ctx.stdin``/``stdout``/``stderr`` streamed
        from and to the command's place in the script; ``ctx.fs`` is not available."""
        with self._lock:
            self._ready()
            self._call_locked("register_command", {"name": name})
            self._custom[name] = fn

    def _host_call(self, hdr: dict[str, Any], rid: int,
                   deliver: Callable[[int, bytes], None]) -> tuple[dict[str, Any], bytes] | None:
        """Run the custom command the sandbox asked for; returns the run's final frame if it
        arrived while the command was still running (the run was interrupted or timed out)."""
        cid = hdr.get("call")
        name = str(hdr.get("name", ""))
        call = _HostCall(self, rid, cid, deliver)
        fn = self._custom.get(name)
        if fn is None:
            call.write(2, f"{name}: custom command not registered on the host\n".encode())
            return call.done(127)
        from ..commands.base import CommandContext
        from ..limits import Budget
        # output is buffered like a process's stdio to a pipe, flushed before each read
        call.outs = [io.BufferedWriter(_CallOut(call, fd), 1 << 16) for fd in (1, 2)]
        ctx = CommandContext(
            fs=_NoFS(name), cwd=str(hdr.get("cwd") or ""), env=dict(hdr.get("env") or {}),
            stdin=io.BufferedReader(_CallStdin(call)), stdout=call.outs[0],
            stderr=call.outs[1], budget=Budget(self.limits), name=name)
        try:
            try:
                st = fn(ctx, list(hdr.get("argv") or [name]))
                status = int(st) if st is not None else 0
            finally:
                call.flush()
        except _CallOver:
            return call.final
        except BrokenPipeError:
            status = 141
        except Exception as e:  # noqa: BLE001 - a buggy command is a failed command
            if call.final is not None:
                return call.final
            try:
                call.write(2, f"{name}: internal error: {type(e).__name__}: {e}\n".encode())
            except (_CallOver, BrokenPipeError):
                return call.final if call.final is not None else call.done(2)
            status = 2
        return call.done(status)

    def _result(self, h: dict[str, Any], payload: bytes) -> Result:
        # (filled like result.make_result: a frozen dataclass's __init__ pays an
        # object.__setattr__ per field, 9.4 against 3 us a run; every field is converted,
        # the header comes from the sandbox. The fields a plain run's header leaves out,
        # at their defaults, are looked at only when the header has other keys.)
        get = h.get
        n = int(get("stdout_len", 0))
        r: Any = _ResultBuilder()
        if n >= len(payload):
            r.stdout_bytes, r.stderr_bytes = payload, b""
        else:
            r.stdout_bytes, r.stderr_bytes = payload[:n], payload[n:]
        r.exit_code = int(get("exit_code", 0))
        r.duration = float(get("duration", 0.0))
        r.cwd = str(get("cwd", ""))
        r.cpu_time = float(get("cpu_time", 0.0))
        r.peak_memory = int(get("peak_memory", 0))
        if self._restart_reason is None and _PLAIN_RESULT.issuperset(h):
            r.timed_out = r.truncated = r.restarted = r.files_truncated = False
            r.files_created = r.files_modified = r.files_deleted = r.violations = ()
            r.packages_installed = ()
            r.extra = {}
            r.limit_exceeded = None
            r.__class__ = Result
            return r  # type: ignore[no-any-return]
        extra = dict(get("extra") or {})
        restarted = self._restart_reason is not None
        if restarted:
            extra["restart_reason"] = self._restart_reason
            self._restart_reason = None
        r.timed_out = bool(get("timed_out"))
        r.truncated = bool(get("truncated"))
        v = get("files_created")
        r.files_created = tuple(map(str, v)) if v else ()
        v = get("files_modified")
        r.files_modified = tuple(map(str, v)) if v else ()
        v = get("files_deleted")
        r.files_deleted = tuple(map(str, v)) if v else ()
        v = get("violations")
        r.violations = tuple(PolicyViolation(str(k), str(d)) for k, d in v) if v else ()
        r.extra = extra
        v = get("limit_exceeded")
        r.limit_exceeded = None if v is None else str(v)
        r.restarted = restarted
        r.packages_installed = _packages(get("packages_installed"))
        r.files_truncated = bool(get("files_truncated"))
        r.__class__ = Result
        return r  # type: ignore[no-any-return]

    def interrupt(self) -> None:
        """Interrupt the run in progress (from another thread or a signal handler); an
        interrupt never reaches a later run."""
        if self._closed or self._dead:
            return
        rid = self._current
        if rid is not None:
            self._send_interrupt(rid)

    def interrupt_thread(self, thread: int) -> None:
        """Interrupt the run in progress only if thread ``thread`` started it (a cancelled
        caller still queued behind another thread's run must not stop that run)."""
        rid = self._current
        if rid is not None and self._current_thread == thread and not (self._closed or
                                                                        self._dead):
            self._send_interrupt(rid)
        elif not (self._closed or self._dead):
            # not started yet (waiting for the lock): dropped when it gets it; the caller
            # clears the mark with undrop_thread once its call has returned either way
            self._dropped.add(thread)

    def undrop_thread(self, thread: int) -> None:
        self._dropped.discard(thread)

    def tty_input(self, data: bytes) -> bool:
        """Bytes typed at the pty of the run(tty=...) going on (no reply, like interrupt);
        addressed to that run, so keys typed as it ends never reach the next one."""
        rid = self._current
        if self._closed or self._dead or not data or rid is None:
            return False
        try:
            with self._send_lock:
                send_msg(self._sock, {"op": "tty_input", "target": rid}, bytes(data))
        except OSError:
            return False
        return True

    def tty_resize(self, rows: int, cols: int) -> None:
        rid = self._current
        if self._closed or self._dead or rid is None:
            return
        try:
            with self._send_lock:
                send_msg(self._sock, {"op": "tty_resize", "rows": int(rows), "cols": int(cols),
                                      "target": rid})
        except OSError:
            pass

    def read_file(self, path: str) -> bytes:
        return self._call("read_file", path=path)

    def write_file(self, path: str, data: bytes, mode: int = 0o644) -> None:
        self._call("write_file", path=path, data=bytes(data), mode=mode)

    def list_files(self, path: str, limit: int | None = None) -> list[dict[str, Any]]:
        if limit is None:
            return self._call("list_files", path=path)
        return self._call("list_files", path=path, limit=limit)[:limit]   # (S3's word only)

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
        self._remember_state((extra_members or {}).get(".agentic-bash/state.json"))
        if fileobj is not None:
            fileobj.write(data)
        return data

    def set_state(self, state: dict[str, Any]) -> None:
        self._call("set_state", state=state)

    def _remember_state(self, raw: bytes | None) -> None:
        if raw is None:
            return
        import json
        try:
            shell = json.loads(raw).get("shell")
        except (ValueError, AttributeError, UnicodeDecodeError):
            return
        if isinstance(shell, dict):
            self._last_shell = shell

    @property
    def cwd(self) -> str:
        return self._call("cwd")

    @property
    def env(self) -> Mapping[str, str]:
        return self._call("env")

    @property
    def alive(self) -> bool:
        return not (self._closed or self._dead)

    def healthy(self) -> bool:
        """Idle and intact (a pool's check before handing it out, a few microseconds): not
        closed, S1 has not exited, and the channel is quiet (no EOF, nothing unasked)."""
        if self._closed or self._dead:
            return False
        fds = [self._sock] + ([self._pidfd] if self._pidfd is not None else [])
        try:
            r = readable(fds, 0)
        except (OSError, ValueError):
            return False
        if r:
            self._dead = True
            return False
        return True

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
        return bool(readable([self._pidfd], timeout))

    def _teardown(self) -> None:
        self._torn = True
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
        net, self._net = getattr(self, "_net", None), None
        if net is not None:
            try:
                net.close()  # the listeners hold a reference to the sandbox's netns
            except Exception:  # noqa: BLE001
                pass
        if self._pidfd is not None:
            if not self._wait_gone(5):
                self._kill()
                self._wait_gone(5)
            os.close(self._pidfd)
            self._pidfd = None
        if self._layer_fd is not None:
            os.close(self._layer_fd)
            self._layer_fd = None
        if self._init_pidfd is not None:
            os.close(self._init_pidfd)
            self._init_pidfd = None
        reader = getattr(self, "_reader", None)
        if reader is not None:
            reader.close_fds()
        if self._session_dir:
            _rmtree(self._session_dir)
            self._session_dir = None
        if self._resources is not None:
            self._resources.close()  # after S1 is gone: kills stragglers, removes the groups
        self._closed = True

    def close(self) -> None:
        """End the sandbox: every process in it (background jobs, nohup) dies; idempotent.
        A run() in progress on another thread is interrupted first (it returns its result).
        Ctrl-C meanwhile waits for the end (check11: it left cgroups, the session dir and
        fds behind, and a second close() did nothing)."""
        with _sigint_deferred():
            self._close_now()

    def _close_now(self) -> None:
        with self._send_lock:
            if self._closed and self._session_dir is None:
                return
        a = getattr(self, "_arun", None)
        if a is not None and a.thread == threading.get_ident():
            # closed from the event loop that awaits a run of ours (the lock below is this
            # thread's already): that run ends now, before the channel goes
            a.abort(SandboxClosed("the sandbox was closed while the run was awaited"))
        self.interrupt()
        got = self._lock.acquire(timeout=_GRACE + _KILL_AFTER)
        try:
            if not got:
                self._kill()
                a = self._arun
                if a is not None:
                    # a run awaited on a loop that did not take its reply in time (blocked):
                    # it fails when that loop runs again, instead of waiting on a closed fd
                    try:
                        a.loop.call_soon_threadsafe(a.abort, SandboxClosed(
                            "the sandbox was closed while the run was awaited"))
                    except RuntimeError:
                        pass   # that loop is closed
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


class _AsyncRun:
    """One run awaited on an event loop (``SandboxedExecutor.arun``): frames are taken off the
    channel when the loop sees it readable and handled as ``run()`` handles them."""

    def __init__(self, ex: SandboxedExecutor, loop: Any, rid: int,
                 on_output: OutputCallback | None) -> None:
        self.ex = ex
        self.loop = loop
        self.rid = rid
        self.on_output = on_output
        self.fut = loop.create_future()
        self.fd = ex._sock.fileno()
        self.thread = threading.get_ident()
        self.callback_error: BaseException | None = None
        self.timer: Any = None
        self.deadline: float | None = None
        self.interrupted = False
        self.registered = False

    async def wait(self, t: float | None) -> Result:
        if t is not None:
            self.deadline = time.monotonic() + t + _GRACE
            _watch_deadline(self.ex, self.loop, t + _GRACE)
        self._take()   # frames already received
        if not self.fut.done():
            self.loop.add_reader(self.fd, self._readable)
            self.registered = True
        return await self.fut

    def _readable(self) -> None:
        if self.fut.done():
            return
        try:
            self.ex._reader.fill_nowait()
        except WireClosed:
            self._crashed()
            return
        except BaseException as e:  # noqa: BLE001 - the reader marked the channel torn
            self.fut.set_exception(e)
            return
        self._take()

    def _take(self) -> None:
        try:
            while not self.fut.done():
                f = self.ex._reader.take()
                if f is None:
                    return
                self._handle(*f)
        except WireClosed:
            self._crashed()
        except BaseException as e:  # noqa: BLE001 - the run's error, raised by the awaiter
            if not self.fut.done():
                self.fut.set_exception(e)

    def _handle(self, hdr: dict[str, Any], payload: bytes) -> None:
        ex = self.ex
        if hdr.get("id") != self.rid:
            if hdr.get("ev") == "fatal":
                raise WireClosed("the sandbox reported a fatal error")
            return  # output or reply of an abandoned call: never this run's
        ev = hdr.get("ev")
        if ev == "out":
            if self.on_output is not None and self.callback_error is None:
                try:
                    self.on_output(int(hdr.get("fd", 1)), payload)
                except BaseException as e:  # noqa: BLE001 - raised after the result
                    self.callback_error = e
        elif ev in ("call_in", "call_end", "stdin_more"):
            pass
        elif ev == "result":
            ex._current = None
            if self.callback_error is not None:
                self.fut.set_exception(self.callback_error)
            else:
                self.fut.set_result(ex._finish(hdr, payload))
        elif ev == "error":
            ex._current = None
            _raise_remote(hdr)
        else:   # ("call" too: no custom command is registered when a run takes this path)
            ex._kill()
            ex._crash_reason = f"unexpected message from the sandbox: {ev!r}"
            raise SandboxCrashed(ex._crash_reason)

    def _crashed(self) -> None:
        self.ex._dead = True
        self.ex._crash_reason = "the sandbox process died during run()"
        if not self.fut.done():
            self.fut.set_exception(SandboxCrashed("the sandbox process died during run()"))

    def _deadline(self) -> None:
        """The run's timeout plus a grace passed: interrupt it; if it still does not end,
        kill the sandbox (as run() does)."""
        if self.fut.done():
            return
        if not self.interrupted:
            self.interrupted = True
            self.ex._send_interrupt(self.rid)
            self.deadline = time.monotonic() + _KILL_AFTER
            if self.registered:
                self.timer = self.loop.call_later(_KILL_AFTER, self._deadline)
            return
        self.ex._kill()
        self.ex._crash_reason = "the sandbox did not stop after a run's timeout"
        self.fut.set_exception(SandboxCrashed("the sandbox did not stop after its timeout and "
                                              "was killed"))

    def detach(self) -> None:
        """Stop watching the channel (before it may be closed: the fd number can be reused)."""
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        if self.registered:
            self.registered = False
            self.loop.remove_reader(self.fd)

    def finish_here(self) -> None:
        """Take this run's frames off the channel on the calling thread, blocking, until it
        ends (see SandboxedExecutor._ready); the awaiting task then gets its outcome."""
        self.detach()
        try:
            while not self.fut.done():
                wait = None
                if self.deadline is not None:
                    wait = self.deadline - time.monotonic()
                    if wait <= 0:
                        self._deadline()   # interrupt; at the second deadline, kill
                        continue
                msg = self.ex._reader.recv(wait)
                if msg is not None:
                    self._handle(*msg)
        except WireClosed:
            self._crashed()
        except Exception as e:  # noqa: BLE001 - the run's error, raised by the awaiter
            if not self.fut.done():
                self.fut.set_exception(e)
        except BaseException:
            # (KeyboardInterrupt while waiting) the run is abandoned as run() abandons one
            if not self.fut.done():
                self.ex._abandon(self.rid, interrupt=True)
                self.ex._current = None
                self.fut.cancel()
            raise

    def abort(self, exc: BaseException) -> None:
        self.detach()
        if not self.fut.done():
            self.fut.set_exception(exc)


def _watch_deadline(ex: SandboxedExecutor, loop: Any, delay: float) -> None:
    """Have ``_AsyncRun._deadline`` called on ``loop`` once the awaited run of ``ex`` is past
    its deadline, ``delay`` seconds from now. One timer per sandbox and loop, kept
    from run to run, not one per run (a TimerHandle made, pushed on the loop's heap and
    cancelled per call, with Python-level comparisons in the heap): it is replaced only when
    it would fire after this run's deadline; when it fires before a run's deadline it is set
    again for the rest, and with no run awaiting it ends. A weak reference: a sandbox closed
    and dropped is not kept alive by it."""
    at = loop.time() + delay
    w = ex._await_timer
    if w is not None and w[0] is loop:
        if w[1] <= at and not w[2].cancelled():
            return
        w[2].cancel()
    ex._await_timer = (loop, at, loop.call_at(at, _deadline_due, weakref.ref(ex), loop))


def _deadline_due(ref: Any, loop: Any) -> None:
    ex = ref()
    if ex is None:
        return
    w = ex._await_timer
    if w is not None and w[0] is loop:
        ex._await_timer = None
    a = ex._arun
    if a is None or a.loop is not loop or a.deadline is None or a.fut.done():
        return
    left = a.deadline - time.monotonic()
    if left <= 0:
        a._deadline()
    else:
        _watch_deadline(ex, loop, left)


class _CallOver(Exception):
    """The run a custom command belonged to has ended (interrupted, timed out)."""


class _HostCall:
    """The host end of one custom-command call: output goes out as ``call_out`` frames,
    input is pulled with ``call_read``; frames of the same run arriving meanwhile (output
    of other pipeline stages) are delivered as usual."""

    def __init__(self, ex: SandboxedExecutor, rid: int, cid: Any,
                 deliver: Callable[[int, bytes], None]) -> None:
        self.ex, self.rid, self.cid, self.deliver = ex, rid, cid, deliver
        self.final: tuple[dict[str, Any], bytes] | None = None
        self.ended = False
        self.outs: list[Any] = []

    def flush(self) -> None:
        for w in self.outs:
            try:
                w.flush()
            except ValueError:  # closed by the command
                pass

    def _send(self, header: dict[str, Any], payload: bytes = b"") -> None:
        if self.final is not None:
            raise _CallOver()
        self.ex._send({**header, "target": self.rid, "call": self.cid}, payload)

    def _take(self, hdr: dict[str, Any], payload: bytes) -> tuple[dict[str, Any], bytes] | None:
        """Handle one frame read while the call runs; returns it if it is the call's input."""
        if hdr.get("id") != self.rid:
            if hdr.get("ev") == "fatal":
                raise WireClosed("the sandbox reported a fatal error")
            return None
        ev = hdr.get("ev")
        if ev == "out":
            self.deliver(int(hdr.get("fd", 1)), payload)
        elif ev in ("result", "error"):
            self.final = (hdr, payload)
            raise _CallOver()
        elif hdr.get("call") == self.cid:
            if ev == "call_end":
                self.ended = True
                raise BrokenPipeError(32, "the command's place in the script is gone")
            if ev == "call_in":
                return hdr, payload
        return None

    def poll(self) -> None:
        """Take whatever frames are already here (without waiting)."""
        if self.ended:
            raise BrokenPipeError(32, "the command's place in the script is gone")
        while True:
            msg = self.ex._reader.recv(0)
            if msg is None:
                return
            self._take(*msg)

    def write(self, fd: int, data: bytes) -> int:
        self.poll()
        if data:
            self._send({"op": "call_out", "fd": fd}, bytes(data))
        return len(data)

    def read(self, n: int) -> bytes:
        if self.ended:
            return b""
        self.flush()
        self._send({"op": "call_read", "n": int(n)})
        while True:
            msg = self.ex._reader.recv(None)
            assert msg is not None
            got = self._take(*msg)
            if got is not None:
                return got[1]

    def done(self, status: int) -> tuple[dict[str, Any], bytes] | None:
        if self.final is not None:
            return self.final
        try:
            self._send({"op": "call_done", "status": int(status) & 0xFF})
        except _CallOver:
            return self.final
        return None


class _CallStdin(io.RawIOBase):
    def __init__(self, call: _HostCall) -> None:
        self.call = call

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        data = self.call.read(min(len(b), 1 << 16))
        b[:len(data)] = data
        return len(data)


class _CallOut(io.RawIOBase):
    def __init__(self, call: _HostCall, fd: int) -> None:
        self.call, self.fd = call, fd

    def writable(self) -> bool:
        return True

    def write(self, b: Any) -> int:
        return self.call.write(self.fd, bytes(b))


class _NoFS:
    """``ctx.fs`` of a custom command called from a sandbox: the files are the sandbox's."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        from ..errors import Unsupported
        raise Unsupported(f"{self._name}: ctx.fs is not available to a custom command run "
                          "from a sandboxed level; use ctx.stdin/ctx.stdout (or the "
                          "Sandbox file API outside the run)")


# -- inside the sandbox ------------------------------------------------------------------------
def make_inner_executor(cfg: dict[str, Any]) -> Any:
    """Runs in the sandbox process (S3): the interpreter over the sandbox's own root."""
    from .native import NativeLauncher

    # The pid namespace (or the landlock level's subreaper) kills children when the runner
    # dies and the runner itself has no capabilities left, so children take the vfork path.
    native = NativeLauncher(pdeathsig=False, drop_caps=False)
    # The workload's programs run at a lower CPU priority than this process (issue 13: the
    # runner answering another session's builtin waited behind them); RLIMIT_NICE 0 (hard
    # too) keeps them from lowering their niceness again, whatever the host's hard limit.
    native.nice = WORKLOAD_NICE
    try:
        resource.setrlimit(resource.RLIMIT_NICE, (0, 0))
    except (OSError, ValueError, AttributeError):
        pass
    if cfg.get("workload"):
        # (the spawner thread joins the workload's groups while the runner goes on with its
        # start-up; the runner waits for it, workload_joined(), before it says ready)
        native.confine_workload(**cfg["workload"], wait=False)
        cfg["_native"] = native  # the runner's per-run usage reads its refusals
    if cfg.get("engine") == "bash":
        return _BashExecutor(cfg, native)
    try:
        from ..vfs.host import HostFS
        from .inprocess import InProcessExecutor
    except ImportError as e:
        # (compat12) an install without a required module (`regex`): the report warns
        # (runner._s3_main passes this on; it was silent, and shell state was lost per run)
        cfg["_engine_error"] = f"{type(e).__name__}: {e}"
        return _BashExecutor(cfg, native)
    kwargs: dict[str, Any] = dict(
        fs=HostFS("/", writable=True), native=native, env=cfg["env"], workdir=cfg["workdir"],
        limits=cfg["limits"], prefer_inprocess=cfg.get("prefer_inprocess", False),
        commands_allowlist=cfg.get("commands_allowlist"))
    if cfg.get("info") is not None:
        kwargs["info"] = cfg["info"]
    ex = InProcessExecutor(**kwargs)
    ex.files_listed = None   # (runner.result_header caps them after package detection)
    if cfg.get("packages"):
        ex.packages.load(cfg["packages"])   # what the image= it starts from installed
    from ..network.devtcp import sandbox_opener
    ex.open_socket = sandbox_opener(cfg.get("network") or {})  # type: ignore[attr-defined]
    return ex


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
        if stdin is not None and hasattr(stdin, "read"):
            stdin = stdin.read()   # the runner hands every run's stdin over as a file
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
            ready = readable(list(fds), wait)
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
                      duration=time.monotonic() - t0, cwd=self._cwd,
                      limit_exceeded="timeout" if timed_out else None)

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

    def list_files(self, path: str, limit: int | None = None) -> list[dict[str, Any]]:
        import heapq
        out = []
        with os.scandir(path) as it:
            des = list(it) if limit is None else heapq.nsmallest(limit, it, key=lambda d: d.name)
        for de in des:
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
