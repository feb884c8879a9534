"""apt-get/apt inside a sandbox without uid 0: the real apt resolves and downloads, dpkg-deb unpacks."""

# Why a shim at all: the sandbox user is never uid 0 (as a root caller it maps to kuid 0 but
# has no capabilities; unprivileged, uid 0 is not mapped), so the real `apt-get install`
# fails on apt's _apt-owned partial directories and on dpkg's need for root. The real apt
# still does every part that matters — dependency resolution (`-s`), download with the
# signed index's hashes (`--download-only`) and `update` — when pointed at directories the
# sandbox user owns. What needs root is replaced: each .deb is unpacked with dpkg-deb and
# tar, and, where /var/lib/dpkg is writable (a root caller's copy-on-write /var), recorded
# in dpkg's status and info/*.list so dpkg -l, dpkg -L and later apt runs know it.
# Maintainer scripts are not run; each skipped script is named on stderr.
# Unprivileged (/usr read-only) packages go to a prefix in $HOME/.local/apt-root whose
# bin dirs are linked into ~/.local/bin and whose library dirs join LD_LIBRARY_PATH.

from __future__ import annotations

import io
import os
import posixpath
import pwd
from typing import Any

from .._lazyre import lazy_compile as _lazy_re
from .manifest import PackageInfo

__all__ = ["APT_COMMANDS", "apt_shim", "archive_dirs"]

SHARED_APT = "/.agentic-bash/cache/apt"

APT_COMMANDS = frozenset({"apt-get", "apt", "apt-cache"})

# apt-get options that take a value (as separate word)
_VALUE_OPTS = {"-o", "-c", "-t", "-a", "--option", "--config-file", "--target-release",
               "--default-release", "--host-architecture", "--build-profiles", "-P"}
_INST = _lazy_re(r"^Inst (\S+) (?:\[(\S+)\] )?\((\S+) (.*?)(?: \[(\S+)\])?\)")
_SIM_NOTE = ("NOTE: This is only a simulation!", "apt-get needs root privileges",
             "Keep also in mind that locking", "so don't depend on the relevance")
_BIN_DIRS = ("usr/bin", "usr/sbin", "usr/games", "bin", "sbin", "usr/local/bin")
_LIB_DIRS = ("usr/lib/x86_64-linux-gnu", "usr/lib", "lib/x86_64-linux-gnu", "lib")


class _Ctx:
    """What the shim needs from the interpreter: run argv natively, write output, the env."""

    def __init__(self, sh: Any, run: Any) -> None:
        self.sh = sh
        self._exec = run

    def run(self, argv: list[str], *, stdin: bytes | None = None, capture: bool = True,
            env: dict[str, str] | None = None) -> tuple[int, bytes, bytes]:
        out, err = (io.BytesIO(), io.BytesIO()) if capture else (None, None)
        from ..shell.streams import InputBytes
        st = self._exec(argv, stdin=InputBytes(stdin) if stdin is not None else None,
                        stdout=out, stderr=err, env=env)
        return st, out.getvalue() if out else b"", err.getvalue() if err else b""

    def out(self, text: str) -> None:
        self.sh.fds[1].write(text.encode("utf-8", "surrogateescape"))

    def err(self, text: str) -> None:
        self.sh.fds[2].write(text.encode("utf-8", "surrogateescape"))


def _layout(home: str) -> dict[str, str]:
    """Where this sandbox keeps apt's state: system-wide when /usr and dpkg's database are
    writable (a root caller's copy-on-write root), else below the user's home."""
    system = os.access("/usr", os.W_OK) and os.access("/var/lib/dpkg/status", os.W_OK)
    base = "/var/lib/agentic-bash/apt" if system else posixpath.join(home, ".local/share/agentic-bash/apt")
    return {
        "system": "1" if system else "",
        "base": base,
        "lists": posixpath.join(base, "lists"),
        "cache": posixpath.join(base, "cache"),
        "archives": posixpath.join(base, "cache/archives"),
        "status": "/var/lib/dpkg/status" if system else posixpath.join(base, "status"),
        "root": "/" if system else posixpath.join(home, ".local/apt-root"),
        "bindir": "/usr/local/bin" if system else posixpath.join(home, ".local/bin"),
    }


def _user() -> str:
    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return str(os.getuid())


def _base_opts(lay: dict[str, str]) -> list[str]:
    lists = lay["lists"] if os.path.isdir(lay["lists"]) else "/var/lib/apt/lists"
    opts = {"APT::Sandbox::User": _user(), "Debug::NoLocking": "1",
            "Dir::State::Lists": lists + "/", "Dir::Cache": lay["cache"] + "/",
            "Dir::Cache::Archives": lay["archives"] + "/", "Dir::State::status": lay["status"],
            "Dpkg::Use-Pty": "0"}
    out: list[str] = []
    for k, v in opts.items():
        out += ["-o", f"{k}={v}"]
    return out


def _prepare(lay: dict[str, str]) -> None:
    os.makedirs(posixpath.join(lay["archives"], "partial"), exist_ok=True)
    if not lay["system"] and not os.path.exists(lay["status"]):
        # the private dpkg database starts as the system's: apt then knows what is installed
        os.makedirs(posixpath.dirname(lay["status"]), exist_ok=True)
        try:
            with open("/var/lib/dpkg/status", "rb") as f:
                data = f.read()
        except OSError:
            data = b""
        with open(lay["status"], "wb") as f:
            f.write(data)


def _split_args(argv: list[str]) -> tuple[list[str], list[str]]:
    opts: list[str] = []
    words: list[str] = []
    i = 1
    while i < len(argv):
        a = argv[i]
        if a == "--":
            words += argv[i + 1:]
            break
        if a.startswith("-") and a != "-":
            opts.append(a)
            if a in _VALUE_OPTS and i + 1 < len(argv):
                opts.append(argv[i + 1])
                i += 1
        else:
            words.append(a)
        i += 1
    return opts, words


def apt_shim(ex: Any, sh: Any, run: Any, argv: list[str], real: str) -> int | None:
    """Run ``apt-get``/``apt``/``apt-cache`` (``real`` is the binary's path) pointed at
    sandbox-owned state; ``install`` is carried out without root. ``run`` is the dispatch
    chain's ``ctx.exec``; ``ex.packages`` (a Manifest) records what was installed. None: not
    handled, the caller runs the real tool as usual."""
    name = posixpath.basename(argv[0])
    opts, words = _split_args(argv)
    if any(o in ("-h", "--help", "-v", "--version") for o in opts):
        return None
    home = getattr(getattr(ex, "info", None), "home", None) or os.environ.get("HOME", "/tmp")
    lay = _layout(home)
    try:
        _prepare(lay)
    except OSError:
        return None  # nowhere to keep apt's state: let the real tool say what it says
    c = _Ctx(sh, run)
    base = _base_opts(lay)
    apt_get = posixpath.join(posixpath.dirname(real), "apt-get")
    if name == "apt-cache" or not words or words[0] not in ("install", "update", "upgrade",
                                                              "dist-upgrade", "full-upgrade",
                                                              "reinstall"):
        # everything else reads apt's state: the real tool, with this sandbox's state
        st, _, _ = c.run([real, *base, *argv[1:]], capture=False)
        return st
    if words[0] == "update":
        return _update(c, lay, real, base, argv)
    sim = [o for o in opts if o not in ("-y", "--yes", "--assume-yes", "-q", "-qq", "--quiet")]
    if any(o in ("-s", "--simulate", "--just-print", "--dry-run", "--recon", "--no-act",
                 "-d", "--download-only", "--print-uris") for o in opts):
        st, _, _ = c.run([apt_get, *base, *argv[1:]], capture=False)
        return st
    return _install(c, ex, lay, apt_get, base, sim, words, quiet=_quiet_level(opts) >= 2)


def _quiet_level(opts: list[str]) -> int:
    """apt's -q count: -q is 1 (progress off), -qq or -q=2 is 2 (only errors)."""
    n = 0
    for o in opts:
        if o in ("--quiet", "-q"):
            n += 1
        elif o.startswith("--quiet=") or o.startswith("-q="):
            n = int(o.split("=", 1)[1]) if o.split("=", 1)[1].isdigit() else n + 1
        elif o.startswith("-") and not o.startswith("--") and set(o[1:]) <= set("qy"):
            n += o.count("q")
    return n


def _update(c: _Ctx, lay: dict[str, str], real: str, base: list[str], argv: list[str]) -> int:
    lists = lay["lists"]
    if not os.path.isdir(lists):
        # start from the system's lists, so a failed update leaves what was there
        os.makedirs(posixpath.join(lists, "partial"), exist_ok=True)
        try:
            for de in os.scandir("/var/lib/apt/lists"):
                if de.is_file() and de.name not in ("lock",):
                    with open(de.path, "rb") as src, open(posixpath.join(lists, de.name), "wb") as dst:
                        while chunk := src.read(1 << 20):
                            dst.write(chunk)
        except OSError:
            pass
        base = _base_opts(lay)
    st, _, _ = c.run([real, *base, *argv[1:]], capture=False)
    return st


def _install(c: _Ctx, ex: Any, lay: dict[str, str], apt_get: str, base: list[str],
             opts: list[str], words: list[str], quiet: bool) -> int:
    st, out, err = c.run([apt_get, *base, *opts, "-s", *words])
    text = out.decode("utf-8", "replace")
    plan: list[tuple[str, str | None, str, str]] = []
    shown: list[str] = []
    for line in text.splitlines():
        m = _INST.match(line)
        if m is not None:
            plan.append((m.group(1), m.group(2), m.group(3), m.group(5) or ""))
            continue
        if line.startswith(("Conf ", "Remv ", "Purg ")) or any(n in line for n in _SIM_NOTE):
            continue
        shown.append(line)
    if not quiet or st:
        c.out("".join(s + "\n" for s in shown))
    if st:
        c.err(err.decode("utf-8", "replace"))
        return st
    if not plan:
        return 0
    pins = [f"{n}={v}" for n, _, v, _ in plan]
    _seed_from_cache(lay["archives"], plan)
    st, out, err = c.run([apt_get, *base, *opts, "-y", "--download-only", "install", *pins])
    for line in out.decode("utf-8", "replace").splitlines():
        if line.startswith(("Get:", "Fetched", "Err:", "Ign:")) and not quiet:
            c.out(line + "\n")
    if st:
        c.err(err.decode("utf-8", "replace"))
        return st
    c.err(err.decode("utf-8", "replace"))
    skipped: list[str] = []
    done: list[tuple[str, str]] = []
    for pkg, old, ver, arch in plan:
        deb = _find_deb(lay["archives"], pkg, ver)
        if deb is None:
            c.err(f"E: {pkg} ({ver}): the downloaded archive is missing from {lay['archives']}\n")
            return 100
        if not quiet:
            if old is None:
                c.out(f"Selecting previously unselected package {pkg}.\n")
            c.out(f"Preparing to unpack .../{posixpath.basename(deb)} ...\n")
            c.out(f"Unpacking {pkg} ({ver})" + (f" over ({old})" if old else "") + " ...\n")
        st = _unpack(c, lay, pkg, ver, arch, deb, skipped)
        if st:
            return st
        done.append((pkg, ver))
    for pkg, ver in done:
        if not quiet:
            c.out(f"Setting up {pkg} ({ver}) ...\n")
        manifest = getattr(ex, "packages", None)
        if manifest is not None:
            manifest.add(PackageInfo(pkg.split(":", 1)[0], ver, "apt"))
    if skipped:
        c.err("agentic-bash: maintainer scripts not run (no root in the sandbox): "
              + ", ".join(skipped) + "\n")
    if not lay["system"]:
        _export_prefix(c, lay)
    return 0


def _seed_from_cache(archives: str, plan: list[tuple[str, str | None, str, str]]) -> None:
    """Archives the host verified and shared (packages/cache.py) are copied in first, so apt
    downloads only what no sandbox has fetched before."""
    shared = SHARED_APT
    if not os.path.isdir(shared):
        return
    for pkg, _, ver, arch in plan:
        name = f"{pkg.split(':', 1)[0]}_{ver.replace(':', '%3a')}_{arch or 'all'}.deb"
        src = posixpath.join(shared, name)
        dst = posixpath.join(archives, name)
        if os.path.isfile(src) and not os.path.exists(dst):
            try:
                with open(src, "rb") as f, open(dst + ".part", "wb") as g:
                    while chunk := f.read(1 << 20):
                        g.write(chunk)
                os.replace(dst + ".part", dst)
            except OSError:
                pass


def archive_dirs(home: str) -> list[str]:
    """Where the shim keeps downloaded archives (system-wide, or below ``home``)."""
    return ["/var/lib/agentic-bash/apt/cache/archives",
            posixpath.join(home, ".local/share/agentic-bash/apt/cache/archives")]


def _find_deb(archives: str, pkg: str, ver: str) -> str | None:
    stem = pkg.split(":", 1)[0]
    quoted = ver.replace(":", "%3a")
    try:
        names = os.listdir(archives)
    except OSError:
        return None
    for n in names:
        if n.startswith(f"{stem}_") and n.endswith(".deb") and (
                f"_{quoted}_" in n or f"_{ver}_" in n):
            return posixpath.join(archives, n)
    return None


def _unpack(c: _Ctx, lay: dict[str, str], pkg: str, ver: str, arch: str, deb: str,
            skipped: list[str]) -> int:
    import tarfile   # (fresh15: not at import, the zygote's preload imports this module)

    st, ctrl, err = c.run(["dpkg-deb", "--ctrl-tarfile", deb])
    if st:
        c.err(err.decode("utf-8", "replace"))
        return 100
    control = b""
    md5sums = b""
    with tarfile.open(fileobj=io.BytesIO(ctrl)) as t:
        for m in t.getmembers():
            base = posixpath.basename(m.name)
            if not m.isfile():
                continue
            data = t.extractfile(m).read()  # type: ignore[union-attr]
            if base == "control":
                control = data
            elif base == "md5sums":
                md5sums = data
            elif base in ("preinst", "postinst", "prerm", "postrm", "config", "triggers"):
                skipped.append(f"{pkg} ({base})")
    st, fsys, err = c.run(["dpkg-deb", "--fsys-tarfile", deb])
    if st:
        c.err(err.decode("utf-8", "replace"))
        return 100
    paths: list[str] = []
    body = io.BytesIO()
    # the archive's "./" entry is the root itself, which tar would chmod (the sandbox's root
    # is read-only): the tree is re-packed without it, refusing members that climb out
    with tarfile.open(fileobj=io.BytesIO(fsys)) as t, tarfile.open(fileobj=body, mode="w") as w:
        for m in t.getmembers():
            rel = posixpath.normpath(m.name)
            if rel.startswith("./"):
                rel = rel[2:]
            if rel in (".", "") or rel == "/":
                paths.append("/.")
                continue
            if rel.startswith("/") or ".." in rel.split("/"):
                c.err(f"E: {pkg}: refusing archive member {m.name!r}\n")
                return 100
            paths.append("/" + rel)
            m.name = rel
            w.addfile(m, t.extractfile(m) if m.isfile() else None)
    fsys = body.getvalue()
    root = lay["root"]
    os.makedirs(root, exist_ok=True)
    st, _, err = c.run(["tar", "-x", "--keep-directory-symlink", "--no-same-owner",
                        "--no-overwrite-dir", "-C", root, "-f", "-"], stdin=fsys)
    if st:
        c.err(f"dpkg: error processing archive {deb} (--unpack):\n "
              + err.decode("utf-8", "replace"))
        return 100
    _record(lay, pkg, arch, control, md5sums, paths)
    _link_commands(lay, paths)
    return 0


def _record(lay: dict[str, str], pkg: str, arch: str, control: bytes, md5sums: bytes,
            paths: list[str]) -> None:
    """dpkg's own bookkeeping: a status stanza and info/<pkg>.list (and .md5sums)."""
    fields = control.decode("utf-8", "replace").rstrip("\n").split("\n")
    stanza = [fields[0], "Status: install ok installed", *fields[1:]]
    name = pkg.split(":", 1)[0]
    multi_same = any(f.lower() == "multi-arch: same" for f in fields)
    text = "\n".join(stanza) + "\n"
    status = lay["status"]
    try:
        with open(status, encoding="utf-8", errors="replace") as f:
            old = f.read()
    except OSError:
        old = ""
    keep = []
    for block in old.split("\n\n"):
        if not block.strip():
            continue
        first = block.lstrip("\n").split("\n", 1)[0]
        same_arch = not multi_same or f"\nArchitecture: {arch}" in block
        if first == f"Package: {name}" and same_arch:
            continue
        keep.append(block.strip("\n"))
    keep.append(text.strip("\n"))
    tmp = status + ".agentic-new"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write("\n\n".join(keep) + "\n")
    os.replace(tmp, status)
    info = posixpath.join(posixpath.dirname(status), "info") if lay["system"] else \
        posixpath.join(lay["base"], "info")
    os.makedirs(info, exist_ok=True)
    stem = f"{name}:{arch}" if multi_same and arch else name
    with open(posixpath.join(info, stem + ".list"), "w", encoding="utf-8") as f:
        f.write("".join(p + "\n" for p in paths))
    if md5sums:
        with open(posixpath.join(info, stem + ".md5sums"), "wb") as f:
            f.write(md5sums)


def _link_commands(lay: dict[str, str], paths: list[str]) -> None:
    """Executables the package puts where the default PATH does not look (/usr/games, or
    anywhere in the unprivileged prefix) are linked into a bin dir on PATH."""
    root = lay["root"]
    bindir = lay["bindir"]
    on_path = {"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"}
    for p in paths:
        d, base = posixpath.split(p)
        if not base or d.lstrip("/") not in _BIN_DIRS:
            continue
        if lay["system"] and d in on_path:
            continue
        real = posixpath.join(root, p.lstrip("/"))
        if not os.path.isfile(real) or not os.access(real, os.X_OK):
            continue
        link = posixpath.join(bindir, base)
        if os.path.lexists(link):
            continue
        os.makedirs(bindir, exist_ok=True)
        os.symlink(real, link)


def _export_prefix(c: _Ctx, lay: dict[str, str]) -> None:
    """Unprivileged: the prefix's commands and libraries are found from the next command on."""
    sh = c.sh
    root = lay["root"]

    def prepend(var: str, dirs: list[str]) -> None:
        cur = sh.get_scalar(var) or ""
        parts = [p for p in cur.split(":") if p]
        new = [d for d in dirs if d not in parts and os.path.isdir(d)]
        if new:
            sh.set_var(var, ":".join(new + parts))
            _export(sh, var)

    prepend("PATH", [lay["bindir"]])
    prepend("LD_LIBRARY_PATH", [posixpath.join(root, d) for d in _LIB_DIRS])
    # (compat11) Perl modules of the prefix: cowsay's Text::CharWidth (libtext-charwidth-perl)
    # was unpacked there and perl did not look ("Can't locate Text/CharWidth.pm in @INC")
    import glob
    prepend("PERL5LIB", sorted(glob.glob(posixpath.join(root, "usr/lib/*/perl5/*")))
            + sorted(glob.glob(posixpath.join(root, "usr/lib/*/perl/*")))
            + [posixpath.join(root, "usr/share/perl5")])


def _export(sh: Any, name: str) -> None:
    from ..shell.state import EXPORT
    v = sh.state.find(name)
    if v is not None:
        v.attrs |= EXPORT
        sh.state.env_cache = None
