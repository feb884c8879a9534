"""The shared download cache: read-only in every sandbox, filled only with what the host verified."""

# Threat: a sandbox is untrusted, and a cache shared between sandboxes is a way to poison
# every later install (a trojaned .deb or wheel). So no sandbox ever writes the shared cache.
# It is bound read-only at /.agentic-bash/cache in each sandbox; after a run that installed
# packages the host promotes them, trusting nothing the sandbox says beyond the names:
# - apt: the .deb the sandbox downloaded is read over the session channel and kept only if
#   its SHA256 equals the one in the *host's* apt index (signed Release files that the
#   host's apt verified) for that package and version; otherwise it is dropped.
# - pip: the host downloads NAME==VERSION itself (its own pip, its own index settings, no
#   byte from the sandbox), in a background thread, and writes it into a pip HTTP cache
#   (both layouts: ``http/`` for pip < 23.3, ``http-v2/`` after) under the URL PyPI serves
#   that file at. PyPI's file URLs are content addressed
#   (``/packages/<blake2b-256 of the file, split 2/2/60>/<filename>``), so an entry's URL is
#   computed from its own bytes and can only ever answer for those bytes. Every sandbox sees
#   the cache through an overlay at /.agentic-bash/pip-cache (``PIP_CACHE_DIR``): pip reads
#   the shared entries ("Using cached ...") and writes its own into the sandbox's layer.
#   (Asking pip to cache what it downloads is not enough: registries that send no caching
#   headers, as this machine's does, leave pip's cache empty; and a host wheel offered through
#   find-links loses pip's tie-break to the index's copy of the same version.)
# - npm: not shared: its cache is keyed by URL with no digest the host can check without
#   fetching the tarball itself, and npm prints no "cached" distinction to rely on.
# Writes go to a temp name and are renamed into place under an flock, so concurrent
# sandboxes and processes never see a partial file.

from __future__ import annotations

import atexit
import fcntl
import hashlib
import os
import queue
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from email.utils import formatdate
from typing import Any, Iterable

__all__ = ["PIP_CACHE_PATH", "SANDBOX_CACHE", "cache_root", "pip_cache_entry", "promote",
           "pypi_url", "wait_promotions"]

SANDBOX_CACHE = "/.agentic-bash/cache"
"""Where the shared cache appears, read-only, inside every sandbox."""
PIP_CACHE_PATH = "/.agentic-bash/pip-cache"
"""pip's cache directory inside a sandbox (``PIP_CACHE_DIR``): the shared ``pip`` directory
under a copy-on-write overlay whose upper is in the sandbox's own layer."""
PIP_FETCH_TIMEOUT = 300.0
"""Bound on one host-side ``pip download``."""



def cache_root(create: bool = True) -> str:
    """``$AGENTIC_BASH_CACHE``, else ``$XDG_CACHE_HOME/agentic-bash`` (``~/.cache``)."""
    d = os.environ.get("AGENTIC_BASH_CACHE")
    if not d:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        d = os.path.join(base, "agentic-bash")
    if create:
        for sub in ("", "apt", "pip"):
            os.makedirs(os.path.join(d, sub), mode=0o755, exist_ok=True)
    return d


class _Locked:
    def __init__(self, root: str) -> None:
        self.path = os.path.join(root, ".lock")

    def __enter__(self) -> None:
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(self.fd, fcntl.LOCK_EX)

    def __exit__(self, *exc: object) -> None:
        os.close(self.fd)


def _put(root: str, sub: str, name: str, data: bytes) -> None:
    from ..vfs.oci import write_atomic

    def write(f: Any) -> None:
        f.write(data)
        os.fchmod(f.fileno(), 0o644)
    with _Locked(root):
        write_atomic(os.path.join(root, sub, name), write)


def _apt_index(name: str, version: str) -> tuple[str, str] | None:
    """(basename of Filename, SHA256) of ``name=version`` in the host's own apt index."""
    try:
        p = subprocess.run(["apt-cache", "show", "--no-all-versions", f"{name}={version}"],
                           capture_output=True, timeout=60, env={**os.environ, "LC_ALL": "C"})
    except (OSError, subprocess.TimeoutExpired):
        return None
    if p.returncode != 0:
        return None
    fields: dict[str, str] = {}
    for line in p.stdout.decode("utf-8", "replace").splitlines():
        if not line.strip():
            break
        k, sep, v = line.partition(":")
        if sep and not line.startswith(" "):
            fields[k] = v.strip()
    fn, sha = fields.get("Filename"), fields.get("SHA256")
    if not fn or not sha or not re.fullmatch(r"[0-9a-f]{64}", sha):
        return None
    return os.path.basename(fn), sha


def _promote_apt(ex: Any, pkgs: Iterable[Any], root: str, archives: Iterable[str]) -> int:
    n = 0
    for p in pkgs:
        found = _apt_index(p.name, p.version)
        if found is None:
            continue  # the sandbox's lists may be newer than the host's: nothing to check against
        fname, sha = found
        if os.path.exists(os.path.join(root, "apt", fname)):
            continue
        for d in archives:
            try:
                data = ex.read_file(f"{d}/{fname}")
            except Exception:  # noqa: BLE001 - absent, or the sandbox refused: not promoted
                continue
            if hashlib.sha256(data).hexdigest() == sha:
                _put(root, "apt", fname, data)
                n += 1
            break
    return n


# -- pip ---------------------------------------------------------------------------------------
_PYPI_FILES = "https://files.pythonhosted.org/packages"
_FRESH_FOR = 10 * 365 * 24 * 3600
"""max-age of a written entry: a content-addressed URL never changes what it serves."""


def pypi_url(filename: str, data: bytes) -> str:
    """The URL PyPI serves ``data`` at (its storage path is the file's BLAKE2b-256)."""
    h = hashlib.blake2b(data, digest_size=32).hexdigest()
    return f"{_PYPI_FILES}/{h[:2]}/{h[2:4]}/{h[4:]}/{filename}"


def _pip_key_path(directory: str, url: str) -> str:
    # pip's SafeFileCache: sha224 of the normalised URL, its first five hex digits as dirs
    h = hashlib.sha224(url.encode()).hexdigest()
    return os.path.join(directory, *h[:5], h)


def pip_cache_entry(url: str, body: bytes, *, separate_body: bool) -> bytes:
    """A cached ``200 OK`` for ``url`` as pip's vendored CacheControl stores it (``cc=4``
    then msgpack); fresh for years, since the URL names its content."""
    import msgpack

    headers = {"Content-Type": "application/octet-stream", "Content-Length": str(len(body)),
               "Cache-Control": f"max-age={_FRESH_FOR}, immutable, public",
               "Date": formatdate(time.time(), usegmt=True)}
    data = {"response": {"body": b"" if separate_body else body, "headers": headers,
                         "status": 200, "version": 11, "reason": "OK",
                         "decode_content": False},
            "vary": {}}
    return b"cc=4," + msgpack.dumps(data, use_bin_type=True)


def _put_file(path: str, data: bytes) -> None:
    from ..vfs.oci import write_atomic

    def write(f: Any) -> None:
        f.write(data)
        os.fchmod(f.fileno(), 0o644)
    os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
    write_atomic(path, write)


def _put_pip(root: str, url: str, body: bytes) -> None:
    """Write ``body`` as pip's cached response for ``url``, in both of pip's layouts."""
    pip = os.path.join(root, "pip")
    old = pip_cache_entry(url, body, separate_body=False)
    new = pip_cache_entry(url, body, separate_body=True)
    with _Locked(root):
        _put_file(_pip_key_path(os.path.join(pip, "http"), url), old)
        p2 = _pip_key_path(os.path.join(pip, "http-v2"), url)
        _put_file(p2 + ".body", body)  # the body first: pip ignores metadata without one
        _put_file(p2, new)


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _host_pip() -> list[str]:
    """The host's pip for the sandbox's default Python (same interpreter, same wheel tags),
    else this process's own."""
    for exe in ("/usr/local/bin/python3", "/usr/bin/python3"):
        if os.access(exe, os.X_OK):
            try:
                if subprocess.run([exe, "-c", "import pip"], capture_output=True,
                                  timeout=30).returncode == 0:
                    return [exe, "-m", "pip"]
            except (OSError, subprocess.TimeoutExpired):
                pass
    return [sys.executable, "-m", "pip"]


class _PipFetcher:
    """One background thread that downloads on the host what sandboxes installed with pip
    and writes it into the shared cache. ``wait()`` for tests and benchmarks."""

    def __init__(self) -> None:
        self.q: queue.Queue[tuple[str, str, str] | None] = queue.Queue()
        self.pending = 0
        self.cond = threading.Condition()
        self.seen: set[tuple[str, str, str]] = set()
        self.proc: subprocess.Popen[bytes] | None = None
        self.thread: threading.Thread | None = None
        self.pip: list[str] | None = None
        self.last: dict[str, Any] = {}

    def submit(self, root: str, name: str, version: str) -> None:
        key = (root, _norm(name), version)
        with self.cond:
            if key in self.seen:
                return
            self.seen.add(key)
            self.pending += 1
            if self.thread is None or not self.thread.is_alive():
                self.thread = threading.Thread(target=self._loop, name="agentic-bash-pip-cache",
                                               daemon=True)
                self.thread.start()
        self.q.put(key)

    def wait(self, timeout: float) -> bool:
        end = time.monotonic() + timeout
        with self.cond:
            while self.pending:
                left = end - time.monotonic()
                if left <= 0:
                    return False
                self.cond.wait(left)
        return True

    def _loop(self) -> None:
        while True:
            key = self.q.get()
            if key is None:
                return
            try:
                self._fetch(*key)
            except Exception as e:  # noqa: BLE001 - a cache is an optimisation
                self.last = {"error": repr(e), "package": key[1:]}
            finally:
                with self.cond:
                    self.pending -= 1
                    self.cond.notify_all()

    def _fetch(self, root: str, name: str, version: str) -> None:
        mark = os.path.join(root, "pip", ".fetched", f"{name}-{version}")
        if os.path.exists(mark):
            return
        if self.pip is None:
            self.pip = _host_pip()
        tmp = tempfile.mkdtemp(prefix="agentic-bash-pip-")
        try:
            cmd = self.pip + ["download", "--no-deps", "--no-cache-dir", "--no-input",
                              "--disable-pip-version-check", "-q", "-d", tmp,
                              f"{name}=={version}"]
            env = {k: v for k, v in os.environ.items() if k != "PIP_CACHE_DIR"}
            self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                         stderr=subprocess.PIPE, env=env, cwd=tmp,
                                         start_new_session=True)
            try:
                _, err = self.proc.communicate(timeout=PIP_FETCH_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.communicate()
                raise
            finally:
                code, self.proc = self.proc.returncode, None
            if code != 0:
                self.last = {"error": err.decode("utf-8", "replace")[-500:], "package": (name, version)}
                return
            n = 0
            for fn in sorted(os.listdir(tmp)):
                parts = fn.split("-")
                if len(parts) < 2 or _norm(parts[0]) != name:
                    continue  # only the package asked for (no deps were fetched anyway)
                with open(os.path.join(tmp, fn), "rb") as f:
                    body = f.read()
                _put_pip(root, pypi_url(fn, body), body)
                n += 1
            if n:
                _put_file(mark, b"")
            self.last = {"stored": n, "package": (name, version)}
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def stop(self) -> None:
        p = self.proc
        if p is not None:
            try:
                os.killpg(p.pid, 9)
            except OSError:
                pass


_fetcher = _PipFetcher()
atexit.register(_fetcher.stop)


def wait_promotions(timeout: float = 300.0) -> bool:
    """Wait until the host has stored every pip package promoted so far. False on timeout."""
    return _fetcher.wait(timeout)


def _promote_pip(pkgs: Iterable[Any], root: str) -> int:
    try:
        import msgpack  # noqa: F401
    except ImportError:
        return 0  # pip's cache format needs it (the linux extra installs it)
    n = 0
    for p in pkgs:
        if re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", p.name) and re.fullmatch(
                r"[A-Za-z0-9][A-Za-z0-9.+!_-]*", p.version):
            _fetcher.submit(root, p.name, p.version)
            n += 1
    return n


def promote(ex: Any, installed: Iterable[Any], *, apt_archives: Iterable[str] = ()) -> int:
    """After a run that installed ``installed`` (PackageInfo): copy the apt archives it
    downloaded into the shared cache, each verified against the host's index, and queue its
    pip packages for the host to fetch itself. Returns how many were added or queued; never
    raises (a cache is an optimisation)."""
    installed = list(installed)
    apt = [p for p in installed if p.manager == "apt"]
    pip = [p for p in installed if p.manager == "pip"]
    n = 0
    try:
        root = cache_root()
        if apt:
            n += _promote_apt(ex, apt, root, apt_archives)
        if pip:
            n += _promote_pip(pip, root)
    except Exception:  # noqa: BLE001
        pass
    return n
