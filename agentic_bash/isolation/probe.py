"""What this kernel and process can enforce: ``probe() -> Capabilities`` (cached, never raises)."""

# The namespace part of the probe (a fresh interpreter that unshares and mounts: 40-190 ms)
# is also cached across processes in the user's cache dir, keyed by everything its answer
# depends on (kernel build, boot, uid/gid, the namespaces this process sits in, the sysctls
# that gate user namespaces); the cheap parts (Landlock ABI, seccomp, cgroups) are measured
# live every time. A stale or tampered cache can only make a plan promise too much, which
# report.verify() then catches at sandbox start (and a failed start drops the cache).

from __future__ import annotations

import ctypes
import functools
import json
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Mapping

from .._values import value_methods
from .probecache import CACHE_TTL as _CACHE_TTL
from .probecache import cache_path
from .probecache import read_entries as _cache_read

__all__ = ["Capabilities", "cache_path", "invalidate_cache", "landlock_abi", "probe"]


@value_methods
@dataclass(frozen=True, slots=True, repr=False, eq=False)
class Capabilities:
    """Measured facts; ``reasons`` explains every False/0 field by name."""

    linux: bool = False
    real_root: bool = False
    user_namespace: bool = False
    mount_namespace: bool = False
    pid_namespace: bool = False
    network_namespace: bool = False
    overlay_userns: bool = False
    """overlayfs mountable inside a user namespace with ``-o userxattr``."""
    tmpfs_user_xattr: bool = False
    """tmpfs accepts ``user.*`` xattrs (Linux >= 6.6): a tmpfs session layer can hold overlay uppers."""
    landlock_abi: int = 0
    seccomp: bool = False
    seccomp_user_notif: bool = False
    seccomp_library: bool = False
    """pyseccomp + libseccomp importable (the filter is compiled with them)."""
    cgroup_version: int = 0
    """2 (unified), 1 (v1 controllers) or 0 (none visible)."""
    cgroup_delegated: bool = False
    """This process may create child cgroups (v2: writable cgroup dir; v1: writable controllers)."""
    kernel: str = ""
    reasons: Mapping[str, str] = field(default_factory=dict)

    def reason(self, name: str) -> str:
        return self.reasons.get(name, "not supported here")


# -- Landlock ABI (a harmless query; no state change) --------------------------------------
_NR_LANDLOCK_CREATE_RULESET = 444  # same number on every architecture (asm-generic table)


def landlock_abi() -> int:
    """The kernel's Landlock ABI version, 0 when absent or disabled."""
    if not sys.platform.startswith("linux"):
        return 0
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall.restype = ctypes.c_long
        v = libc.syscall(ctypes.c_long(_NR_LANDLOCK_CREATE_RULESET), None, ctypes.c_size_t(0),
                         ctypes.c_uint32(1))  # LANDLOCK_CREATE_RULESET_VERSION
        return int(v) if v > 0 else 0
    except Exception:  # noqa: BLE001 - a probe never raises
        return 0


# -- the namespace probe runs in a fresh single-threaded interpreter -----------------------
# unshare(CLONE_NEWUSER) fails with EINVAL in a multi-threaded process, and the caller may
# well be multi-threaded; the child below uses only the stdlib and prints one JSON object.
_CHILD = r'''
import ctypes, errno, json, os, sys, tempfile
libc = ctypes.CDLL(None, use_errno=True)
libc.mount.argtypes = (ctypes.c_char_p,) * 3 + (ctypes.c_ulong, ctypes.c_char_p)
res = {}
reasons = {}
def err(what):
    e = ctypes.get_errno()
    return f"{what}: {os.strerror(e)}"
uid, gid = os.geteuid(), os.getegid()
tmp = tempfile.mkdtemp(prefix="agentic-bash-probe-")
try:
    if libc.unshare(0x10000000) != 0:
        reasons["user_namespace"] = err("unshare(CLONE_NEWUSER)")
        raise SystemExit
    try:
        with open("/proc/self/setgroups", "w") as f: f.write("deny")
    except OSError:
        pass
    try:
        with open("/proc/self/uid_map", "w") as f: f.write(f"0 {uid} 1")
        with open("/proc/self/gid_map", "w") as f: f.write(f"0 {gid} 1")
    except OSError as e:
        reasons["user_namespace"] = f"writing uid/gid map: {e.strerror}"
        raise SystemExit
    res["user_namespace"] = True
    if libc.unshare(0x00020000) != 0:
        reasons["mount_namespace"] = err("unshare(CLONE_NEWNS)")
        raise SystemExit
    res["mount_namespace"] = True
    libc.mount(None, b"/", None, (1 << 18) | 16384, None)  # MS_PRIVATE|MS_REC
    t = tmp.encode()
    if libc.mount(b"tmpfs", t, b"tmpfs", 0, b"mode=0755") != 0:
        reasons["overlay_userns"] = err("mount tmpfs")
    else:
        os.mkdir(tmp + "/probe")
        try:
            os.setxattr(tmp + "/probe", "user.agentic_bash", b"1")
            res["tmpfs_user_xattr"] = True
        except OSError as e:
            reasons["tmpfs_user_xattr"] = f"setxattr user.* on tmpfs: {e.strerror}"
        for d in ("lower", "upper", "work", "merged"):
            os.mkdir(f"{tmp}/{d}")
        with open(f"{tmp}/lower/f", "w") as f: f.write("x")
        opts = f"lowerdir={tmp}/lower,upperdir={tmp}/upper,workdir={tmp}/work,userxattr".encode()
        if libc.mount(b"overlay", f"{tmp}/merged".encode(), b"overlay", 0, opts) != 0:
            reasons["overlay_userns"] = err("mount overlay -o userxattr")
        else:
            try:
                with open(f"{tmp}/merged/f", "a") as f: f.write("y")
                os.unlink(f"{tmp}/merged/f")
                res["overlay_userns"] = True
            except OSError as e:
                reasons["overlay_userns"] = f"overlay copy-up: {e.strerror}"
    if libc.unshare(0x40000000) != 0:
        reasons["network_namespace"] = err("unshare(CLONE_NEWNET)")
    else:
        res["network_namespace"] = True
    if libc.unshare(0x20000000) != 0:
        reasons["pid_namespace"] = err("unshare(CLONE_NEWPID)")
    else:
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.write(w, str(os.getpid()).encode())
            os._exit(0)
        os.close(w)
        got = os.read(r, 32)
        os.waitpid(pid, 0)
        if got == b"1":
            res["pid_namespace"] = True
        else:
            reasons["pid_namespace"] = "first child is not pid 1"
except SystemExit:
    pass
except Exception as e:
    reasons.setdefault("user_namespace", f"probe failed: {e!r}")
finally:
    print(json.dumps({"res": res, "reasons": reasons, "tmp": tmp}))
'''


def _run_ns_child() -> tuple[dict, dict]:
    try:
        out = subprocess.run([sys.executable, "-I", "-S", "-c", _CHILD], capture_output=True,
                             timeout=20, stdin=subprocess.DEVNULL, close_fds=True)
        data = json.loads(out.stdout.decode() or "{}")
    except Exception as e:  # noqa: BLE001
        return {}, {"user_namespace": f"probe process failed: {e!r}"}
    tmp = data.get("tmp")
    if tmp:
        # Its mounts lived only in its own namespace; on the host side the dir is empty.
        for sub in ("probe", "lower/f", "lower", "upper", "work", "merged"):
            p = os.path.join(tmp, sub)
            try:
                os.unlink(p) if sub == "lower/f" else os.rmdir(p)
            except OSError:
                pass
        try:
            os.rmdir(tmp)
        except OSError:
            pass
    return data.get("res", {}), data.get("reasons", {})


# -- the cross-process cache of the namespace child's answer -------------------------------
_CACHE_VERSION = 1
_KEY_FILES = (
    "/proc/sys/kernel/random/boot_id", "/proc/sys/kernel/osrelease", "/proc/sys/kernel/version",
    "/proc/sys/user/max_user_namespaces", "/proc/sys/user/max_mnt_namespaces",
    "/proc/sys/user/max_pid_namespaces", "/proc/sys/user/max_net_namespaces",
    "/proc/sys/kernel/unprivileged_userns_clone",
    "/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
)


def _sha256() -> Any:
    """A SHA-256 object without importing hashlib (which loads OpenSSL's libcrypto: 3-4 ms
    of the host's first probe and of the zygote's import, fresh15); the same digest."""
    try:
        from _sha2 import sha256   # (Python >= 3.12)
    except ImportError:
        try:
            from _sha256 import sha256
        except ImportError:
            from hashlib import sha256
    return sha256()


def _cache_key() -> str:
    h = _sha256()
    h.update(f"v{_CACHE_VERSION} {sys.platform} {os.geteuid()} {os.getegid()} "
             f"{os.getuid()} {os.getgid()}".encode())
    for f in _KEY_FILES:
        try:
            with open(f, "rb") as fh:
                h.update(f.encode() + b"=" + fh.read())
        except OSError:
            h.update(f.encode() + b"=-")
    try:
        # the seccomp library answer is cached too (importing it runs ldconfig: ~20 ms)
        import importlib.util
        spec = importlib.util.find_spec("pyseccomp")
        origin = spec.origin if spec is not None and spec.origin else "-"
        h.update(f"pyseccomp={origin}:{os.stat(origin).st_mtime_ns if origin != '-' else 0}"
                 .encode())
    except (ImportError, ValueError, OSError):
        h.update(b"pyseccomp=?")
    for ns in ("user", "mnt", "pid", "net"):
        # another container or user namespace is another machine as far as this goes
        try:
            h.update(f"{ns}={os.stat(f'/proc/self/ns/{ns}').st_ino}".encode())
        except OSError:
            h.update(f"{ns}=-".encode())
    return h.hexdigest()


_CACHE_ENTRIES = 8  # one per venv/interpreter of this user (the key covers pyseccomp's path)


def _cache_load(path: str, key: str) -> tuple[dict, dict] | None:
    entry = _cache_read(path).get(key)
    if not isinstance(entry, dict):
        return None
    try:
        if not (0 <= time.time() - float(entry.get("time", 0)) < _CACHE_TTL):
            return None
    except (TypeError, ValueError):
        return None
    res, reasons = entry.get("res"), entry.get("reasons")
    if not isinstance(res, dict) or not isinstance(reasons, dict):
        return None
    return ({str(k): bool(v) for k, v in res.items()},
            {str(k): str(v) for k, v in reasons.items()})


def _cache_store(path: str, key: str, res: dict, reasons: dict) -> None:
    d = os.path.dirname(path)
    tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
    try:
        os.makedirs(d, mode=0o700, exist_ok=True)
        st = os.stat(d)
        if st.st_uid != os.geteuid() or st.st_mode & 0o022:
            return
        now = time.time()
        entries = {k: v for k, v in _cache_read(path).items()
                   if isinstance(v, dict) and isinstance(v.get("time"), (int, float))
                   and 0 <= now - v["time"] < _CACHE_TTL}
        entries[key] = {"time": now, "res": res, "reasons": reasons}
        keep = sorted(entries, key=lambda k: entries[k]["time"])[-_CACHE_ENTRIES:]
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump({"entries": {k: entries[k] for k in keep}}, f)
        os.replace(tmp, path)
    except (OSError, ValueError):
        try:
            os.unlink(tmp)
        except OSError:
            pass


def invalidate_cache() -> None:
    """Forget the cached namespace probe (this process's and the file): a sandbox failed to
    start on what it promised. The next probe() measures again."""
    probe.cache_clear()
    path = cache_path()
    if path:
        try:
            os.unlink(path)
        except OSError:
            pass


def _ns_facts() -> tuple[dict, dict]:
    """The namespace child's answer, from the cache when its key still matches."""
    path = cache_path()
    key = ""
    if path:
        try:
            key = _cache_key()
            got = _cache_load(path, key)
        except Exception:  # noqa: BLE001 - a probe never raises
            got = None
        if got is not None:
            return got
    res, reasons = _run_ns_child()
    lib, why = _seccomp_library()
    res["seccomp_library"] = lib
    if why:
        reasons["seccomp_library"] = why
    # a failure of the probe process itself (timeout, no python) is not a fact to remember
    if path and key and not any("probe process failed" in r or "probe failed" in r
                                for r in reasons.values()):
        _cache_store(path, key, res, reasons)
    return res, reasons


def _seccomp() -> tuple[bool, bool, str]:
    try:
        with open("/proc/self/status") as f:
            if not any(line.startswith("Seccomp:") for line in f):
                return False, False, "kernel without CONFIG_SECCOMP"
    except OSError as e:
        return False, False, f"/proc/self/status: {e.strerror}"
    try:
        with open("/proc/sys/kernel/seccomp/actions_avail") as f:
            avail = f.read().split()
    except OSError:
        avail = []
    if avail and "errno" not in avail:
        return False, False, "SECCOMP_RET_ERRNO not available"
    return True, "user_notif" in avail, ""


def _seccomp_library() -> tuple[bool, str]:
    try:
        import pyseccomp  # noqa: F401
        return True, ""
    except Exception as e:  # noqa: BLE001 - ImportError or libseccomp missing (OSError)
        return False, f"pyseccomp/libseccomp not importable: {e}"


def _cgroups() -> tuple[int, bool, str]:
    try:
        with open("/proc/self/mountinfo") as f:
            info = f.read()
    except OSError as e:
        return 0, False, f"/proc/self/mountinfo: {e.strerror}"
    fstypes = [line.split(" - ", 1)[1].split()[0] for line in info.splitlines() if " - " in line]
    if "cgroup2" in fstypes and "cgroup" not in fstypes:
        try:
            with open("/proc/self/cgroup") as f:
                rel = f.read().strip().split("::", 1)[-1]
        except OSError:
            rel = "/"
        d = "/sys/fs/cgroup" + (rel if rel != "/" else "")
        ok = os.access(d, os.W_OK) and os.access(os.path.join(d, "cgroup.procs"), os.W_OK)
        return 2, ok, "" if ok else f"{d} not writable (no delegation)"
    if "cgroup" in fstypes:
        ok = os.access("/sys/fs/cgroup/memory", os.W_OK) and os.access("/sys/fs/cgroup/pids",
                                                                       os.W_OK)
        return 1, ok, "" if ok else "cgroup v1 controllers not writable"
    return 0, False, "no cgroup filesystem mounted"


@functools.lru_cache(maxsize=1)
def probe() -> Capabilities:
    """Measure once per process. Never raises: anything unexpected becomes a reason."""
    try:
        return _probe()
    except Exception as e:  # noqa: BLE001
        return Capabilities(reasons={"user_namespace": f"probe failed: {e!r}"})


def _probe() -> Capabilities:
    if not sys.platform.startswith("linux"):
        why = f"not Linux ({sys.platform})"
        return Capabilities(reasons={k: why for k in (
            "user_namespace", "mount_namespace", "pid_namespace", "network_namespace",
            "overlay_userns", "tmpfs_user_xattr", "landlock", "seccomp", "cgroup")})
    reasons: dict[str, str] = {}
    res, ns_reasons = _ns_facts()
    reasons.update(ns_reasons)
    for dep, needs in (("mount_namespace", "user_namespace"), ("pid_namespace", "user_namespace"),
                       ("network_namespace", "user_namespace"),
                       ("overlay_userns", "mount_namespace"),
                       ("tmpfs_user_xattr", "mount_namespace")):
        if not res.get(dep) and dep not in reasons:
            reasons[dep] = reasons.get(needs, f"needs {needs}")
    abi = landlock_abi()
    if not abi:
        reasons["landlock"] = "kernel without Landlock (or disabled by the LSM list)"
    sc, notif, why = _seccomp()
    if why:
        reasons["seccomp"] = why
    lib = bool(res.get("seccomp_library")) if "seccomp_library" in res else None
    if lib is None:
        lib, why = _seccomp_library()
        if not lib:
            reasons["seccomp_library"] = why
    if sc and not notif:
        reasons["seccomp_user_notif"] = "SECCOMP_RET_USER_NOTIF not available"
    cg, deleg, why = _cgroups()
    if why:
        reasons["cgroup"] = why
    return Capabilities(
        linux=True, real_root=os.geteuid() == 0,
        user_namespace=bool(res.get("user_namespace")),
        mount_namespace=bool(res.get("mount_namespace")),
        pid_namespace=bool(res.get("pid_namespace")),
        network_namespace=bool(res.get("network_namespace")),
        overlay_userns=bool(res.get("overlay_userns")),
        tmpfs_user_xattr=bool(res.get("tmpfs_user_xattr")),
        landlock_abi=abi, seccomp=sc, seccomp_user_notif=notif, seccomp_library=lib,
        cgroup_version=cg, cgroup_delegated=deleg, kernel=os.uname().release,
        reasons=reasons,
    )


if __name__ == "__main__":  # pragma: no cover - `python -m agentic_bash.isolation.probe`
    from dataclasses import asdict
    print(json.dumps(asdict(probe()), indent=2, default=dict))
