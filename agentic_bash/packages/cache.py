"""The shared download cache: read-only in every sandbox, filled only with what the host verified."""

# Threat: a sandbox is untrusted, and a cache shared between sandboxes is a way to poison
# every later install (a trojaned .deb or wheel). So no sandbox ever writes the shared cache.
# It is bound read-only at /.agentic-bash/cache in each sandbox; after a run that installed
# packages the host promotes them, trusting nothing the sandbox says beyond the names:
# - apt: the .deb the sandbox downloaded is read over the session channel and kept only if
#   its SHA256 equals the one in the *host's* apt index (signed Release files that the
#   host's apt verified) for that package and version; otherwise it is dropped.
# - pip and npm: not shared. Their caches are keyed by URL with no digest the host could
#   check without refetching, and a wheel offered through find-links loses to the index's
#   copy of the same version in pip's resolver (measured: pip 23 downloads again), so a
#   host-fetched wheel cache would cost a second download and save none.
# Writes go to a temp name and are renamed into place under an flock, so concurrent
# sandboxes and processes never see a partial file.

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import subprocess
from typing import Any, Iterable

__all__ = ["SANDBOX_CACHE", "cache_root", "promote"]

SANDBOX_CACHE = "/.agentic-bash/cache"
"""Where the shared cache appears, read-only, inside every sandbox."""



def cache_root(create: bool = True) -> str:
    """``$AGENTIC_BASH_CACHE``, else ``$XDG_CACHE_HOME/agentic-bash`` (``~/.cache``)."""
    d = os.environ.get("AGENTIC_BASH_CACHE")
    if not d:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        d = os.path.join(base, "agentic-bash")
    if create:
        for sub in ("", "apt"):
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


def promote(ex: Any, installed: Iterable[Any], *, apt_archives: Iterable[str] = ()) -> int:
    """After a run that installed ``installed`` (PackageInfo), copy the apt archives it
    downloaded into the shared cache, each verified against the host's index. Returns how
    many were added; never raises (a cache is an optimisation)."""
    apt = [p for p in installed if p.manager == "apt"]
    if not apt:
        return 0
    try:
        return _promote_apt(ex, apt, cache_root(), apt_archives)
    except Exception:  # noqa: BLE001
        return 0
