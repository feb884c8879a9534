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
# - npm: the same, with the host's own ``npm pack NAME@VERSION`` (private npm cache, scripts
#   off): the tarball is stored where npm's cacache finds a tarball by its sha512 integrity
#   (``_cacache/content-v2/sha512/<hex>``), computed here from the bytes; npm looks tarballs up
#   by the integrity its registry metadata gives and cacache re-checks the digest on read.
#   Sandboxes see it through an overlay at /.agentic-bash/npm-cache (``NPM_CONFIG_CACHE``);
#   npm's log says "(cache hit)" for the tarball.
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
from typing import Any, Iterable

__all__ = ["NPM_CACHE_PATH", "PIP_CACHE_PATH", "SANDBOX_CACHE", "cache_root", "pip_cache_entry", "promote",
           "pypi_url", "wait_promotions"]

SANDBOX_CACHE = "/.agentic-bash/cache"
"""Where the shared cache appears, read-only, inside every sandbox."""
PIP_CACHE_PATH = "/.agentic-bash/pip-cache"
"""pip's cache directory inside a sandbox (``PIP_CACHE_DIR``): the shared ``pip`` directory
under a copy-on-write overlay whose upper is in the sandbox's own layer."""
NPM_CACHE_PATH = "/.agentic-bash/npm-cache"
"""npm's cache directory inside a sandbox (``NPM_CONFIG_CACHE``), the same way over ``npm``."""
HOST_FETCH_TIMEOUT = 300.0
"""Bound on one host-side ``pip download`` or ``npm pack``."""
MAX_FETCHES_PER_RUN = 16
"""Packages of one run the host fetches at most (the names come from files the sandbox wrote)."""
MAX_FETCHES = 512
"""Host fetches per process at most."""
REGISTRY_HOSTS = {"pip": "files.pythonhosted.org", "npm": "registry.npmjs.org"}
"""What a sandbox's network policy must reach for the host to fetch on its behalf."""



def cache_root(create: bool = True) -> str:
    """``$AGENTIC_BASH_CACHE``, else ``$XDG_CACHE_HOME/agentic-bash`` (``~/.cache``)."""
    d = os.environ.get("AGENTIC_BASH_CACHE")
    if not d:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        d = os.path.join(base, "agentic-bash")
    if create:
        for sub in ("", "apt", "pip", "npm"):
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
    from email.utils import formatdate  # (here: 8-12 ms of import the first sandbox skips)

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


def _put_npm(root: str, body: bytes) -> str:
    """Store a package tarball where npm's cacache looks a tarball up by its sha512 integrity
    (``_cacache/content-v2/sha512/<hex>``); cacache checks that digest again on every read."""
    h = hashlib.sha512(body).hexdigest()
    path = os.path.join(root, "npm", "_cacache", "content-v2", "sha512", h[:2], h[2:4], h[4:])
    with _Locked(root):
        if not os.path.exists(path):
            _put_file(path, body)
    return path


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


class _HostFetcher:
    """One background thread that downloads on the host, with the host's own tools, what
    sandboxes installed with pip or npm, and writes it into the shared cache. ``wait()`` for
    tests and benchmarks."""

    def __init__(self) -> None:
        self.q: queue.Queue[tuple[str, str, str, str] | None] = queue.Queue()
        self.pending = 0
        self.cond = threading.Condition()
        self.seen: set[tuple[str, str, str, str]] = set()
        self.proc: subprocess.Popen[bytes] | None = None
        self.thread: threading.Thread | None = None
        self.pip: list[str] | None = None
        self.npm: list[str] | None = None
        self.last: dict[str, Any] = {}

    def submit(self, root: str, manager: str, name: str, version: str) -> bool:
        key = (root, manager, _norm(name) if manager == "pip" else name, version)
        with self.cond:
            if key in self.seen:
                return False
            if len(self.seen) >= MAX_FETCHES:
                return False
            self.seen.add(key)
            self.pending += 1
            if self.thread is None or not self.thread.is_alive():
                self.thread = threading.Thread(target=self._loop, name="agentic-bash-cache",
                                               daemon=True)
                self.thread.start()
        self.q.put(key)
        return True

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
            root, manager, name, version = key
            try:
                mark = os.path.join(root, manager, ".fetched",
                                    f"{name}-{version}".replace("/", "%2F"))
                if not os.path.exists(mark):
                    tmp = tempfile.mkdtemp(prefix="agentic-bash-fetch-")
                    try:
                        fetch = self._fetch_pip if manager == "pip" else self._fetch_npm
                        n = fetch(root, name, version, tmp)
                    finally:
                        shutil.rmtree(tmp, ignore_errors=True)
                    if n:
                        _put_file(mark, b"")
                        self.last = {"stored": n, "package": key[1:]}
            except Exception as e:  # noqa: BLE001 - a cache is an optimisation
                self.last = {"error": repr(e), "package": key[1:]}
            finally:
                with self.cond:
                    self.pending -= 1
                    self.cond.notify_all()

    def _run(self, cmd: list[str], tmp: str, env: dict[str, str], key: tuple[str, ...]) -> bytes | None:
        """Run a host tool (bounded, own session so it can be killed at exit); its stdout, or
        None (the error kept in ``last``)."""
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, env=env, cwd=tmp,
                                     start_new_session=True)
        try:
            out, err = self.proc.communicate(timeout=HOST_FETCH_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.communicate()
            raise
        finally:
            code, self.proc = self.proc.returncode, None
        if code != 0:
            self.last = {"error": err.decode("utf-8", "replace")[-500:], "package": key}
            return None
        return out

    def _fetch_pip(self, root: str, name: str, version: str, tmp: str) -> int:
        if self.pip is None:
            self.pip = _host_pip()
        # wheels only: an sdist would make pip run the package's build code on the host to
        # learn its metadata, and the name comes from the sandbox
        cmd = self.pip + ["download", "--no-deps", "--only-binary=:all:", "--no-cache-dir",
                          "--no-input", "--disable-pip-version-check", "-q", "-d", tmp,
                          f"{name}=={version}"]
        env = {k: v for k, v in os.environ.items() if k != "PIP_CACHE_DIR"}
        if self._run(cmd, tmp, env, ("pip", name, version)) is None:
            return 0
        n = 0
        for fn in sorted(os.listdir(tmp)):
            parts = fn.split("-")
            if len(parts) < 2 or _norm(parts[0]) != name:
                continue  # only the package asked for (no deps were fetched anyway)
            with open(os.path.join(tmp, fn), "rb") as f:
                body = f.read()
            _put_pip(root, pypi_url(fn, body), body)
            n += 1
        return n

    def _fetch_npm(self, root: str, name: str, version: str, tmp: str) -> int:
        if self.npm is None:
            npm = shutil.which("npm")
            self.npm = [npm] if npm else []
        if not self.npm:
            return 0
        dest = os.path.join(tmp, "out")
        os.mkdir(dest)
        # a private npm cache: the host user's own ~/.npm is not touched
        cmd = self.npm + ["pack", f"{name}@{version}", "--json", "--pack-destination", dest,
                          "--cache", os.path.join(tmp, "npm-cache"), "--loglevel=error",
                          "--ignore-scripts", "--no-fund", "--no-audit"]
        env = {k: v for k, v in os.environ.items() if k.lower() != "npm_config_cache"}
        if self._run(cmd, tmp, env, ("npm", name, version)) is None:
            return 0
        n = 0
        for fn in os.listdir(dest):
            if fn.endswith(".tgz"):
                with open(os.path.join(dest, fn), "rb") as f:
                    body = f.read()
                _put_npm(root, body)
                n += 1
        return n

    def stop(self) -> None:
        p = self.proc
        if p is not None:
            try:
                os.killpg(p.pid, 9)
            except OSError:
                pass


_fetcher = _HostFetcher()
atexit.register(_fetcher.stop)


def wait_promotions(timeout: float = 300.0) -> bool:
    """Wait until the host has stored every pip and npm package promoted so far. False on
    timeout."""
    return _fetcher.wait(timeout)


_NAME = {"pip": re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*"),
         "npm": re.compile(r"(?:@[a-z0-9][a-z0-9._~-]*/)?[a-z0-9][a-z0-9._~-]*")}
_VERSION = re.compile(r"[A-Za-z0-9][A-Za-z0-9.+!_-]*")


def _promote_fetched(pkgs: Iterable[Any], root: str, manager: str) -> int:
    if manager == "pip":
        try:
            import msgpack  # noqa: F401
        except ImportError:
            return 0  # pip's cache format needs it (the linux extra installs it)
    n = 0
    for p in list(pkgs)[:MAX_FETCHES_PER_RUN]:
        if _NAME[manager].fullmatch(p.name) and _VERSION.fullmatch(p.version):
            n += _fetcher.submit(root, manager, p.name, p.version)
    return n


def _reaches(policy: Any, host: str) -> bool:
    mode = getattr(policy, "mode", None)
    if mode in ("public", "host"):
        return True
    if mode == "allowlist":
        try:
            return policy.check_name(host, 443) is None and policy.name_allowed(host, 443)
        except Exception:  # noqa: BLE001
            return False
    return False


def promote(ex: Any, installed: Iterable[Any], *, apt_archives: Iterable[str] = (),
            network: Any = None) -> int:
    """After a run that installed ``installed`` (PackageInfo): copy the apt archives it
    downloaded into the shared cache, each verified against the host's index, and queue its
    pip and npm packages for the host to fetch itself, when the sandbox's ``network`` policy
    (a NetworkPolicy; None: unknown, nothing is fetched) reaches that registry itself: the
    host's fetch never carries a name out of a sandbox that could not send it. Returns how
    many were added or queued; never raises (a cache is an optimisation)."""
    installed = list(installed)
    apt = [p for p in installed if p.manager == "apt"]
    n = 0
    try:
        root = cache_root()
        if apt:
            n += _promote_apt(ex, apt, root, apt_archives)
        for manager in ("pip", "npm"):
            mine = [p for p in installed if p.manager == manager]
            if mine and _reaches(network, REGISTRY_HOSTS[manager]):
                n += _promote_fetched(mine, root, manager)
    except Exception:  # noqa: BLE001
        pass
    return n
