"""The sandbox's own root: system dirs read-only (or copy-on-write as root), sanitised /etc, session layer."""

from __future__ import annotations

import os
import re
import shutil
from typing import Any

from .._lazyre import lazy_compile as _lazy_re
from . import syscalls as sc

__all__ = ["LAYER_PATH", "LOWER_PATH", "build_root", "prepare_base", "writable_paths"]

LAYER_PATH = "/.agentic-bash/layer"
"""Where the session layer (upper dirs) is visible, read-only, inside the sandbox."""
LOWER_PATH = "/.agentic-bash/lower"
"""Where each overlay's lower directory is visible, read-only, inside the sandbox."""
CACHE_PATH = "/.agentic-bash/cache"
"""The shared download cache, read-only (packages/cache.py)."""
PIP_CACHE_PATH = "/.agentic-bash/pip-cache"
"""pip's cache: the shared one under an overlay whose upper is in the session layer."""
NPM_CACHE_PATH = "/.agentic-bash/npm-cache"
"""npm's cache, the same way."""

# Copied into the sanitised /etc. Security invariant: never shadow/gshadow, ssh host keys,
# ssl/private, sudoers, credentials files (npmrc, netrc, apt auth.conf) or the host's
# passwd/group (it names host users); passwd/group are written fresh.
_ETC_FILES = (
    "resolv.conf", "nsswitch.conf", "host.conf", "gai.conf", "ld.so.cache", "ld.so.conf",
    "localtime", "timezone", "mime.types", "protocols", "services", "networks", "rpc",
    "inputrc", "bash.bashrc", "profile", "debian_version", "os-release", "lsb-release",
    "issue", "login.defs", "shells", "pip.conf", "gitconfig", "magic", "magic.mime",
    "locale.alias", "locale.gen", "mailcap", "manpath.config", "debconf.conf", "adduser.conf",
    "mke2fs.conf", "ethertypes", "wgetrc", "ca-certificates.conf", "environment.d",
    "papersize", "xattr.conf", "vimrc", "nanorc", "default-locale", "locale.conf",
)
_ETC_DIRS = (
    "ld.so.conf.d", "ssl", "pki", "ca-certificates", "alternatives", "profile.d", "apt",
    "dpkg", "perl", "skel", "python3", "python3.11", "python3.12", "python3.13", "fonts",
    "terminfo", "bash_completion.d", "vim", "X11", "gprofng.rc", "java-17-openjdk",
    "ld.so.conf.d", "selinux", "pip",
)
_ETC_SKIP = {"private", "auth.conf", "auth.conf.d", "secring.gpg"}
_SYS_DIRS = ("usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32")
_COW = ("usr", "etc", "opt", "var")
# /var: only what package tools need, never logs (each lower is the host's dir)
_VAR_STATE = ("lib/dpkg", "lib/apt", "cache/apt", "cache/debconf", "lib/ucf", "lib/python")
_VAR_SKEL = ("cache", "lib", "log", "tmp", "spool", "local", "opt", "mail", "backups", "lock")
# procfs entries that uid 0 could write without any capability (sysctl, sysrq) or that
# leak host state: bound read-only / masked over the fresh /proc.
_PROC_RO = ("sys", "sysrq-trigger", "irq", "bus", "fs")
_PROC_MASK = ("kcore", "keys", "timer_list", "sched_debug", "kallsyms", "kmsg")
_PREFIX_SECRETS = ("pip.conf", "pip.ini", "etc/pip.conf", ".condarc", "condarc", ".netrc",
                   ".pypirc", ".env")
_DEVICES = ("null", "zero", "full", "random", "urandom", "tty")
OLD_ROOT = "/.old-root"
"""Where pivot_root leaves the host's root until detach_old_root()."""


def _copy_etc_item(src: str, dst: str) -> None:
    if os.path.islink(src) and os.path.isabs(os.readlink(src)) and not os.readlink(
            src).startswith(("/usr/", "/etc/")):
        # e.g. resolv.conf -> /run/systemd/resolve/...: /run is not in the sandbox; copy content
        try:
            shutil.copyfile(src, dst)
        except OSError:
            pass
        return
    if os.path.islink(src):
        os.symlink(os.readlink(src), dst)
    elif os.path.isdir(src):
        _copytree(src, dst)
    elif os.path.isfile(src):
        shutil.copyfile(src, dst)
        os.chmod(dst, os.stat(src).st_mode & 0o777)


def _copytree(src: str, dst: str) -> None:
    """Copy a directory tree: symlinks as symlinks, files without metadata (shutil.copytree's
    per-entry copystat makes /etc/alternatives alone take half a second)."""
    os.makedirs(dst, exist_ok=True)
    with os.scandir(src) as it:
        for de in it:
            if de.name in _ETC_SKIP:
                continue
            s, d = de.path, os.path.join(dst, de.name)
            try:
                if de.is_symlink():
                    os.symlink(os.readlink(s), d)
                elif de.is_dir():
                    _copytree(s, d)
                elif de.is_file():
                    shutil.copyfile(s, d)
                    os.chmod(d, de.stat().st_mode & 0o777)
            except OSError:
                continue


# (attack10) Credentials that copied config files may hold: a URL's user:password@ (pip's
# index-url, apt sources and proxies, git's insteadOf) and values of secret-named keys (a
# wgetrc http_password, git's http.extraheader, an exported *_TOKEN in profile.d). Redacted
# in the sanitised copy of these entries; other files are not read.
_ETC_REDACT = ("pip.conf", "pip", "gitconfig", "wgetrc", "apt", "profile.d", "environment.d",
               "bash.bashrc", "profile")
_URL_USERINFO = _lazy_re(rb"([A-Za-z][A-Za-z0-9+.-]*://)[^\s/@'\"]*:[^\s/@'\"]*@")
_SECRET_KEY = _lazy_re(
    rb"^(\s*(?:export\s+)?[\w.\-]*(?:passw(?:or)?d|token|secret|api_?key|access_?key|"
    rb"extraheader|_auth|credentials?)[\w.\-]*\s*[=:]\s*)\S.*$", re.I | re.M)
_SECRET_WORD = _lazy_re(rb"passw|token|secret|api_?key|access_?key|extraheader|_auth|"
                          rb"credential", re.I)
REDACTED = b"REDACTED-by-agentic-bash"


def _redact_tree(path: str) -> None:
    """Redact credentials (see _ETC_REDACT) in the regular text files at or below ``path``."""
    if os.path.islink(path):
        return
    if os.path.isdir(path):
        for root, _dirs, files in os.walk(path):
            for n in files:
                _redact_tree(os.path.join(root, n))
        return
    try:
        if not os.path.isfile(path) or os.path.getsize(path) > 1 << 20:
            return
        with open(path, "rb") as f:
            data = f.read()
        if b"\0" in data:
            return
        new = _URL_USERINFO.sub(rb"\1" + REDACTED + b"@", data) if b"@" in data else data
        if _SECRET_WORD.search(new):
            new = _SECRET_KEY.sub(lambda m: m.group(1) + REDACTED, new)
        if new != data:
            with open(path, "wb") as f:
                f.write(new)
    except OSError:
        pass


def prepare_base(base: str, etc_src: str = "/etc") -> None:
    """Fill ``base`` once per zygote: ``etc`` (sanitised), ``var`` (skeleton), ``empty``."""
    etc = os.path.join(base, "etc")
    os.makedirs(etc, exist_ok=True)
    for name in dict.fromkeys(_ETC_FILES + _ETC_DIRS):
        src = os.path.join(etc_src, name)
        if os.path.lexists(src):
            try:
                _copy_etc_item(src, os.path.join(etc, name))
            except OSError:
                pass
    for name in _ETC_REDACT:
        _redact_tree(os.path.join(etc, name))
    files = {
        "passwd": "root:x:0:0:sandbox user:/home/user:/bin/bash\n"
                  "_apt:x:42:65534::/nonexistent:/usr/sbin/nologin\n"
                  "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
        "group": "root:x:0:\nnogroup:x:65534:\n",
        "hostname": "sandbox\n",
        "hosts": "127.0.0.1\tlocalhost sandbox\n::1\tlocalhost ip6-localhost ip6-loopback\n",
    }
    for name, text in files.items():
        with open(os.path.join(etc, name), "w") as f:
            f.write(text)
    for name in ("mtab",):
        os.symlink("../proc/self/mounts", os.path.join(etc, name))
    var = os.path.join(base, "var")
    for d in _VAR_SKEL + _VAR_STATE:
        os.makedirs(os.path.join(var, d), exist_ok=True)
    os.symlink("../run", os.path.join(var, "run")) if not os.path.lexists(
        os.path.join(var, "run")) else None
    os.makedirs(os.path.join(base, "empty"), exist_ok=True)
    os.chmod(base, 0o755)


def _mkdirs(path: str, mode: int = 0o755) -> None:
    try:   # (most have their parent: one mkdir instead of makedirs' stat per level)
        os.mkdir(path, mode)
    except FileExistsError:
        if not os.path.isdir(path):
            raise
    except FileNotFoundError:
        os.makedirs(path, mode=mode, exist_ok=True)


def _mkpoint(target: str, like: str) -> None:
    """An empty directory or file at ``target`` to mount ``like`` onto."""
    if os.path.isdir(like):
        _mkdirs(target)
    else:
        _mkdirs(os.path.dirname(target))
        if not os.path.exists(target):
            with open(target, "w"):
                pass


def _bind(src: str, dst: str, *, readonly: bool = True, rec: bool = True) -> None:
    _mkpoint(dst, src)
    sc.mount(src, dst, None, sc.MS_BIND | (sc.MS_REC if rec else 0))
    if readonly:
        # A bind mount inherits the source's flags; in a user namespace locked flags
        # (nosuid, nodev, noexec) must be kept when remounting read-only.
        flags = sc.MS_BIND | sc.MS_REMOUNT | sc.MS_RDONLY
        st = os.statvfs(dst)
        for bit, ms in ((os.ST_NOSUID, sc.MS_NOSUID), (os.ST_NODEV, sc.MS_NODEV),
                        (os.ST_NOEXEC, sc.MS_NOEXEC)):
            if st.f_flag & bit:
                flags |= ms
        sc.mount(None, dst, None, flags)


def _overlay(lower: str, layer: str, name: str, dst: str) -> str:
    upper = os.path.join(layer, name, "upper")
    work = os.path.join(layer, name, "work")
    _mkdirs(upper)
    _mkdirs(work)
    _mkdirs(dst)
    sc.mount("overlay", dst, "overlay", 0,
             f"lowerdir={lower},upperdir={upper},workdir={work},userxattr")
    _OVERLAYS.append(dst)
    return upper


_OVERLAYS: list[str] = []
"""Where build_root mounted overlays (paths under the new root before the pivot)."""


PTYS = 64
"""Pseudo-terminals one sandbox may hold (its devpts ``max``). Every devpts instance but the
host's first draws on one count of the whole machine, kernel.pty.max less kernel.pty.reserve
(3,072 here): unbounded, one sandbox took all of them and every other sandbox's (and
container's) terminal failed with ENOSPC (attack11)."""


def _inodes(size: int | str, memory: int | None = None) -> int:
    """nr_inodes for a session tmpfs of ``size`` bytes: one per KiB. An inode is kernel memory
    (~1 KiB with its dentry) that costs no byte of the tmpfs's size; without a bound a tmpfs
    takes half the host's RAM in pages of them (3M here: 600,000 empty files held 541 MiB of
    slab, attack11). The watchdog charges them to the memory limit as well, but it samples:
    where it is the memory limit (``memory``), at most one per KiB of that limit too, so
    files made faster than it looks stop at ENOSPC (580,000 were made under 128 MiB before
    its kill in a session 13 CI)."""
    n = int(size) >> 10
    if memory:
        n = min(n, int(memory) >> 10)
    return max(4096, n)


def _capped(size: int | None, cap: int | None) -> int | None:
    """A tmpfs's size within the memory cgroup's share for memory no process owns
    (attack13: ``resources.unowned_caps``)."""
    if cap is None:
        return size
    return int(cap) if size is None else min(int(size), int(cap))


def build_root(cfg: dict[str, Any], detach: bool = True) -> dict[str, Any]:
    """Build the new root under ``cfg['session_dir']`` and pivot into it. Runs as pid 1 of the
    new pid namespace, inside the new user and mount namespaces. Returns layer facts.
    ``detach=False``: the host's root is still attached at OLD_ROOT; the caller must call
    detach_old_root() before anything but its own code runs in the sandbox."""
    sdir = cfg["session_dir"]
    base = cfg["base_dir"]
    _OVERLAYS.clear()
    cow = bool(cfg.get("cow_system"))
    sc.mount(None, "/", None, sc.MS_REC | sc.MS_PRIVATE)
    caps = (cfg.get("resources") or {}).get("unowned") or {}
    watched = ((cfg.get("resources") or {}).get("watchdog") or {}).get("memory")
    if cfg.get("session_layer", "tmpfs") == "tmpfs":
        size = _capped(cfg.get("layer_size"), caps.get("layer"))
        sc.mount("tmpfs", sdir, "tmpfs", sc.MS_NOSUID | sc.MS_NODEV,
                 "mode=0755" + (f",size={int(size)},nr_inodes={_inodes(size, watched)}"
                                if size else ""))
    layer = os.path.join(sdir, "layer")
    root = os.path.join(sdir, "root")
    _mkdirs(layer)
    _mkdirs(root)
    sc.mount("tmpfs", root, "tmpfs", sc.MS_NOSUID | sc.MS_NODEV, "mode=0755,size=16m")
    uppers: list[dict[str, str]] = []

    def R(p: str) -> str:
        return os.path.join(root, p.lstrip("/"))

    img = cfg.get("image_root") or ""

    def image_lower(target: str) -> str:
        d = os.path.join(img, target.strip("/")) if img else ""
        return d if d and os.path.isdir(d) else ""

    rules = None
    if cfg.get("protect"):
        from ..vfs.protect import PathRules
        pr = cfg["protect"]
        rules = PathRules(tuple(pr.get("hide") or ()), tuple(pr.get("read_only") or ()),
                          pr.get("workdir") or cfg.get("workdir") or "/workspace")
    protect_facts = {"hidden": 0, "read_only": 0}

    def ov(lower: str, name: str, target: str) -> None:
        # image=: the image's directory for this target is the top lower (shared, read-only)
        il = image_lower(target)
        # hide=: a layer of whiteouts above the lower makes each hidden entry absent (ENOENT)
        # for every process, builtins and native alike, whatever path reaches it
        mask = _hide_mask(rules, lower, target, os.path.join(layer, ".mask", name)) \
            if rules is not None and rules.hide else ""
        if mask:
            protect_facts["hidden"] += mask[1]
            mask = mask[0]
        lowers = ":".join(x for x in (il, mask, lower) if x)
        upper = _overlay(lowers, layer, name, R(target))
        uppers.append({"target": target, "upper": upper, "lower_src": lower, "name": name,
                       "mask": mask})

    # system directories: the host's, or those of a base rootfs (Sandbox(base=DIR|TAR))
    image = cfg.get("base_root") or ""
    src_root = image or "/"
    empty = os.path.join(base, "empty")
    for d in _SYS_DIRS:
        host = os.path.join(src_root, d)
        if os.path.islink(host):
            os.symlink(os.readlink(host), R(d))
        elif os.path.isdir(host):
            if (cow or image or image_lower("/usr")) and d == "usr":
                # with an image, /usr is an overlay even unprivileged: the host Python's
                # stdlib needs mount points in it (Landlock still keeps it read-only)
                ov(host, "usr", "/usr")
            else:
                _bind(host, R(d))
    if image:
        # an image's own /etc and /var are its state (no host secrets in them)
        etc_lower = os.path.join(image, "etc") if os.path.isdir(os.path.join(image, "etc")) \
            else os.path.join(base, "etc")
        var_lower = os.path.join(image, "var") if os.path.isdir(os.path.join(image, "var")) \
            else empty
        opt_lower = os.path.join(image, "opt") if os.path.isdir(os.path.join(image, "opt")) \
            else empty
        var_state: tuple[str, ...] = ()
    else:
        etc_lower = os.path.join(base, "etc")
        var_lower = os.path.join(base, "var")
        opt_lower = "/opt" if os.path.isdir("/opt") else empty
        var_state = _VAR_STATE
    if cow or image:
        ov(etc_lower, "etc", "/etc")
        ov(opt_lower, "opt", "/opt")
        ov(var_lower, "var", "/var")
        for sub in var_state:
            host = "/var/" + sub
            if os.path.isdir(host):
                name = "var_" + sub.replace("/", "_")
                ov(host, name, "/var/" + sub)
    else:
        _bind(etc_lower, R("etc"))
        _bind(opt_lower, R("opt"))
        _bind(var_lower, R("var"))
        for sub in var_state:
            if os.path.isdir("/var/" + sub):
                _bind("/var/" + sub, R("var/" + sub))
    if not cow:
        vt = os.path.join(layer, "var_tmp")
        _mkdirs(vt, 0o1777)
        if os.path.isdir(R("var/tmp")):
            _bind(vt, R("var/tmp"), readonly=False)
    # session directories: /workspace (lower: empty or the mount), $HOME, /tmp
    workdir = cfg.get("workdir") or "/workspace"
    home = cfg.get("home") or "/home/user"
    mounts = list(cfg.get("mounts") or ())
    ws = workdir.rstrip("/") or "/"
    ws_mount = next((m for m in mounts if m["target"].rstrip("/") == ws), None)
    if ws_mount is None or ws_mount.get("mode", "cow") == "cow":
        lower = ws_mount["source"] if ws_mount else empty
        ov(lower, "workspace", workdir)
    else:
        _bind(ws_mount["source"], R(workdir), readonly=ws_mount["mode"] == "ro")
    for target, name, mode in ((home, "home", 0o755), ("/tmp", "tmp", 0o1777)):
        if name == "home" and image_lower(target):
            ov(empty, name, target)
            continue
        d = os.path.join(layer, name)
        _mkdirs(d)
        os.chmod(d, mode)
        _bind(d, R(target), readonly=False)
        uppers.append({"target": target, "upper": d})
    for i, m in enumerate(mounts):
        if m is ws_mount:
            continue
        mode = m.get("mode", "cow")
        if mode == "cow":
            ov(m["source"], f"mount{i}", m["target"])
        else:
            _bind(m["source"], R(m["target"]), readonly=mode == "ro")
    if rules is not None and rules.read_only:
        protect_facts["read_only"] = _read_only_binds(rules, R)
    # the sandbox user (session's user/uid, mapped onto the caller's uid)
    ident = os.path.join(layer, ".ident")
    _mkdirs(ident)
    user, uid, gid = cfg.get("user") or "user", int(cfg.get("uid", 1000)), int(cfg.get("gid", 1000))
    group = cfg.get("group") or user
    pw = [] if uid == 0 else ["root:x:0:0:root:/root:/usr/sbin/nologin"]
    pw += [f"{user}:x:{uid}:{gid}:sandbox user:{home}:/bin/bash",
           "_apt:x:42:65534::/nonexistent:/usr/sbin/nologin",
           "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin"]
    gr = ([] if gid == 0 else ["root:x:0:"]) + [f"{group}:x:{gid}:", "nogroup:x:65534:"]
    for name, lines in (("passwd", pw), ("group", gr)):
        with open(os.path.join(ident, name), "w") as f:
            f.write("\n".join(lines) + "\n")
        _bind(os.path.join(ident, name), R("etc/" + name))
    # own network namespace: the host's resolvers are unreachable; ask the stub on loopback
    from ..network.inside import RESOLV_CONF, own_netns
    if own_netns(cfg) and os.path.exists(R("etc/resolv.conf")):
        with open(os.path.join(ident, "resolv.conf"), "w") as f:
            f.write(RESOLV_CONF)
        _bind(os.path.join(ident, "resolv.conf"), R("etc/resolv.conf"))
    # the interpreter's own Python and package, read-only at the same paths
    for p in cfg.get("python_binds", ()):
        if os.path.exists(p) and (image or not os.path.exists(R(p))):
            _bind(p, R(p))
            # (attack9) a venv or conda prefix may hold the caller's index credentials
            # ($VIRTUAL_ENV/pip.conf is pip's per-venv config): the sandbox read them
            for name in _PREFIX_SECRETS:
                f = os.path.join(p, name)
                if os.path.isfile(f) and not os.path.islink(f):
                    sc.mount("/dev/null", R(f), None, sc.MS_BIND)
    # /dev: minimal
    dev = R("dev")
    _mkdirs(dev)
    sc.mount("tmpfs", dev, "tmpfs", sc.MS_NOSUID | sc.MS_NOEXEC,
             "mode=0755,size=64k,nr_inodes=1024")
    for name in _DEVICES:
        if os.path.exists("/dev/" + name):
            _bind("/dev/" + name, os.path.join(dev, name), readonly=False, rec=False)
    _mkdirs(os.path.join(dev, "pts"))
    try:
        sc.mount("devpts", os.path.join(dev, "pts"), "devpts", sc.MS_NOSUID | sc.MS_NOEXEC,
                 f"newinstance,ptmxmode=0666,mode=0620,max={PTYS}")
        os.symlink("pts/ptmx", os.path.join(dev, "ptmx"))
    except OSError:
        pass
    _mkdirs(os.path.join(dev, "shm"))
    # Limits.max_fs_bytes bounds /dev/shm too (files there are memory that no process owns)
    shm_size = _capped(cfg.get("layer_size"), caps.get("shm"))
    sc.mount("tmpfs", os.path.join(dev, "shm"), "tmpfs", sc.MS_NOSUID | sc.MS_NODEV,
             "mode=1777" + (f",size={int(shm_size)},nr_inodes={_inodes(shm_size, watched)}"
                            if shm_size else ""))
    for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"),
                         ("stdout", "/proc/self/fd/1"), ("stderr", "/proc/self/fd/2")):
        os.symlink(target, os.path.join(dev, name))
    # /proc: fresh (this process is pid 1 of the new pid namespace)
    proc = R("proc")
    _mkdirs(proc)
    sc.mount("proc", proc, "proc", sc.MS_NOSUID | sc.MS_NODEV | sc.MS_NOEXEC)
    for name in _PROC_RO:
        p = os.path.join(proc, name)
        if os.path.exists(p):
            _bind(p, p)
    for name in _PROC_MASK:
        p = os.path.join(proc, name)
        if os.path.exists(p):
            if os.path.isdir(p):
                sc.mount("tmpfs", p, "tmpfs", sc.MS_RDONLY, "size=0")
            else:
                sc.mount("/dev/null", p, None, sc.MS_BIND)
    # the session layer and the overlay lowers, read-only, for snapshots and change tracking
    # from inside (the lowers show nothing the merged view does not)
    _bind(layer, R(LAYER_PATH))
    cache = cfg.get("cache_dir") or ""
    if cache and os.path.isdir(cache):
        # the shared download cache, read-only: only the host fills it (packages/cache.py)
        _bind(cache, R(CACHE_PATH))
        for sub, path in (("pip", PIP_CACHE_PATH), ("npm", NPM_CACHE_PATH)):
            if os.path.isdir(os.path.join(cache, sub)):
                # the tool reads the shared entries and writes its own into this sandbox's
                # layer (not an upper of the session: not a change of a run, not in snapshots)
                _overlay(os.path.join(cache, sub), layer, f".{sub}-cache", R(path))
    for u in uppers:
        if "lower_src" in u:
            if u.get("mask"):
                # the lower as the sandbox may see it: masked like the merged view
                _mkdirs(R(LOWER_PATH + "/" + u["name"]))
                sc.mount("overlay", R(LOWER_PATH + "/" + u["name"]), "overlay",
                         sc.MS_RDONLY | sc.MS_NOSUID | sc.MS_NODEV,
                         f"lowerdir={u['mask']}:{u['lower_src']},userxattr")
                _OVERLAYS.append(R(LOWER_PATH + "/" + u["name"]))
            else:
                _bind(u["lower_src"], R(LOWER_PATH + "/" + u["name"]))
            u["lower"] = LOWER_PATH + "/" + u["name"]
    for d in ("run", "mnt", "srv", "root"):
        _mkdirs(R(d), 0o700 if d == "root" else 0o755)
    # pivot: the old root (the host's) is detached and unreachable afterwards
    sc.mount(root, root, None, sc.MS_BIND | sc.MS_REC)
    os.chdir(root)
    points = [p[len(root):] or "/" for p in _OVERLAYS if p.startswith(root + "/")]
    old = OLD_ROOT.lstrip("/")
    _mkdirs(old)
    sc.pivot_root(".", old)
    os.chdir("/")
    facts = {"uppers": [{"target": u["target"], "upper": LAYER_PATH + u["upper"][len(layer):],
                        "lower": u.get("lower")} for u in uppers],
            "overlay_mounts": _overlay_mounts(points),
            "protect": protect_facts if rules is not None else None}
    if detach:
        detach_old_root()
    return facts


def detach_old_root() -> None:
    """The second half of build_root: detach the host's root (left at /.old-root by the
    pivot) and make the top of the new root read-only. Its umount2 waits for an RCU grace
    period (3-6 ms of wall, almost no CPU), so pid 1 does it after forking the runner, whose
    own start-up overlaps it; the runner says ready only after pid 1 has done it
    (runner._s2_init / _wait_s2)."""
    sc.umount2(OLD_ROOT, sc.MNT_DETACH)
    os.rmdir(OLD_ROOT)
    # nothing may create files at the top of the root
    sc.mount(None, "/", None, sc.MS_BIND | sc.MS_REMOUNT | sc.MS_RDONLY | sc.MS_NOSUID |
             sc.MS_NODEV)


_PROTECT_WALK_MAX = 200_000
"""Entries a protected-path scan visits before it gives up (the sandbox then fails to start:
a protection that cannot be applied is never dropped silently)."""


def _walk(top: str) -> Any:
    """(dir, name, is_dir) below ``top`` without following symlinks, bounded."""
    seen = 0
    stack = [top]
    while stack:
        d = stack.pop()
        try:
            entries = list(os.scandir(d))
        except OSError:
            continue
        for e in entries:
            seen += 1
            if seen > _PROTECT_WALK_MAX:
                raise OSError(f"protected paths: more than {_PROTECT_WALK_MAX} entries to scan "
                              f"below {top}")
            try:
                isdir = e.is_dir(follow_symlinks=False)
            except OSError:
                isdir = False
            if (yield d, e.name, isdir):
                continue   # the caller matched it: do not descend
            if isdir:
                stack.append(os.path.join(d, e.name))


def _hide_mask(rules: Any, lower: str, target: str, mask: str) -> tuple[str, int] | None:
    """A directory of overlay whiteouts for every entry of ``lower`` (seen at ``target``)
    that ``rules`` hides; None when nothing matches."""
    import stat
    if not os.path.isdir(lower):
        return None
    shutil.rmtree(mask, ignore_errors=True)   # a restart over the same layer starts afresh
    n = 0
    gen = _walk(lower)
    try:
        item = next(gen)
        while True:
            d, name, _isdir = item
            rel = os.path.relpath(os.path.join(d, name), lower)
            hit = rules.hidden(os.path.join(target, rel))
            if hit:
                dst = os.path.join(mask, rel)
                _mkdirs(os.path.dirname(dst))
                # a 0/0 character device is an overlay whiteout (allowed without CAP_MKNOD)
                os.mknod(dst, stat.S_IFCHR | 0o600, os.makedev(0, 0))
                n += 1
            item = gen.send(hit)
    except StopIteration:
        pass
    return (mask, n) if n else None


def _read_only_binds(rules: Any, R: Any) -> int:
    """Bind every existing read_only match of the workspace onto itself read-only; each
    directory between the workspace and a match becomes a mount point too, so renaming an
    ancestor away (and recreating the path) fails with EBUSY. Returns the count."""
    ws = R(rules.workdir)
    found: list[str] = []
    gen = _walk(ws)
    try:
        item = next(gen)
        while True:
            d, name, _isdir = item
            p = os.path.join(d, name)
            hit = rules.readonly("/" + os.path.relpath(p, R("/")))
            if hit:
                found.append(p)
            item = gen.send(hit)
    except StopIteration:
        pass
    anchored: set[str] = set()
    for p in sorted(found):
        anc = os.path.dirname(p)
        chain = []
        while anc != ws and anc.startswith(ws + "/"):
            chain.append(anc)
            anc = os.path.dirname(anc)
        for a in reversed(chain):
            if a not in anchored:
                anchored.add(a)
                _bind(a, a, readonly=False, rec=True)
        _bind(p, p, readonly=True, rec=True)
    return len(found)


def _overlay_mounts(points: list[str]) -> list[str]:
    """Which of ``points`` (where build_root mounted overlays) the kernel says are overlay
    mounts now (statfs; create13: /proc/self/mountinfo with the host's table still attached
    took ~0.5 ms of pid 1's start-up)."""
    out = []
    for p in points:
        try:
            if sc.fs_type(p) == sc.OVERLAYFS_MAGIC:
                out.append(p)
        except OSError:
            pass
    return out


def writable_paths(cfg: dict[str, Any]) -> list[str]:
    """Where sandboxed processes may write (the Landlock write rules)."""
    out = [cfg.get("workdir") or "/workspace", cfg.get("home") or "/home/user", "/tmp",
           "/var/tmp", "/dev"]
    if cfg.get("cow_system"):
        out += ["/" + d for d in _COW]
    out += [m["target"] for m in cfg.get("mounts") or () if m.get("mode", "cow") != "ro"]
    if cfg.get("cache_dir"):
        out += [PIP_CACHE_PATH, NPM_CACHE_PATH]
    return list(dict.fromkeys(out))

