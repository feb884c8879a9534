"""Named images: a session layer built once, then a read-only lower shared by many sandboxes."""

# An image is the session layer of a sandbox that ran a build script (`pip install numpy`),
# extracted once into a directory: <images>/<name>/rootfs/{usr,etc,opt,var,home,workspace}
# plus image.json (packages, how it was built). A sandbox started with image=NAME gets each of
# those directories as the top lower of the matching overlay: nothing is copied per sandbox,
# so fifty sandboxes on one image use the disk of one. Deletions made during the build (the
# layer's whiteouts) are not carried: an image only adds and replaces files.

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import shutil
import tempfile
import time
from dataclasses import dataclass
from typing import Any, BinaryIO

from ..errors import SandboxError

__all__ = ["Image", "build_image", "images_dir", "list_images", "remove_image", "resolve_image"]

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
_STATE = ".agentic-bash/state.json"


@dataclass(frozen=True, slots=True)
class Image:
    """A built image: ``root`` is the host directory whose subdirectories become lowers."""

    name: str
    root: str
    created: float
    packages: tuple[Any, ...]
    size: int
    script: str = ""


def images_dir() -> str:
    """``$AGENTIC_BASH_IMAGES``, else ``$XDG_DATA_HOME/agentic-bash/images`` (``~/.local/share``)."""
    d = os.environ.get("AGENTIC_BASH_IMAGES")
    if not d:
        base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local/share")
        d = os.path.join(base, "agentic-bash", "images")
    return d


def _check_name(name: str) -> None:
    if not isinstance(name, str) or not _NAME.match(name) or name.startswith(".by-"):
        raise ValueError(f"image name must match [A-Za-z0-9][A-Za-z0-9._-]*, not {name!r}")


def _du(path: str) -> int:
    total = 0
    for root, _dirs, files in os.walk(path):
        for f in files:
            try:
                total += os.lstat(os.path.join(root, f)).st_size
            except OSError:
                pass
    return total


def _extract_layer(layer: bytes, dest: str) -> dict[str, Any]:
    """Unpack an OCI layer tar (a snapshot) into ``dest`` through the VFS gate (no member can
    land outside it); returns the snapshot's state document."""
    from ..vfs.host import HostFS
    from ..vfs.oci import import_tar
    from ..snapshot import parse_state, read_snapshot
    loaded = read_snapshot(layer)
    state = loaded.state or {}
    os.makedirs(dest, exist_ok=True)
    fs = HostFS(dest, writable=True)
    # whiteouts and the state member are left out: an image only adds files
    import tarfile
    src = tarfile.open(fileobj=io.BytesIO(loaded.data))
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as w:
        for m in src.getmembers():
            base = os.path.basename(m.name.rstrip("/"))
            top = m.name.lstrip("./").split("/", 1)[0]
            if top in (".agentic-bash", "tmp") or m.name.lstrip("./").startswith("var/tmp") \
                    or base.startswith(".wh."):
                continue  # scratch space is not part of an environment
            w.addfile(m, src.extractfile(m) if m.isfile() else None)
    out.seek(0)
    import_tar(out, fs, "/", skip_devices=True)
    return state


def _write_meta(d: str, meta: dict[str, Any]) -> None:
    with open(os.path.join(d, "image.json"), "w") as f:
        json.dump(meta, f, indent=1)


def _load(name: str, d: str) -> Image:
    try:
        with open(os.path.join(d, "image.json")) as f:
            meta = json.load(f)
    except (OSError, ValueError) as e:
        raise SandboxError(f"image {name!r}: no readable image.json in {d}") from e
    from .manifest import PackageInfo
    if any(c in d for c in ":,\n"):
        # the directory becomes an overlayfs lowerdir= entry, where these characters separate
        raise SandboxError(f"image {name!r}: its path may not contain ':' or ',': {d}")
    return Image(name=meta.get("name", name), root=os.path.join(d, "rootfs"),
                 created=float(meta.get("created", 0)), size=int(meta.get("size", 0)),
                 packages=tuple(PackageInfo.from_json(p) for p in meta.get("packages") or ()),
                 script=str(meta.get("script", "")))


def _install(layer: bytes, final: str, meta: dict[str, Any]) -> Image:
    parent = os.path.dirname(final)
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".build-", dir=parent)
    try:
        state = _extract_layer(layer, os.path.join(tmp, "rootfs"))
        meta.setdefault("packages", list(state.get("packages") or ()))
        meta["size"] = _du(os.path.join(tmp, "rootfs"))
        _write_meta(tmp, meta)
        os.chmod(tmp, 0o755)
        old = None
        if os.path.exists(final):
            old = final + f".old-{os.getpid()}-{time.monotonic_ns()}"
            os.rename(final, old)
        os.rename(tmp, final)
        if old is not None:
            # sandboxes started on the old one keep their open lowers; new ones get this
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return _load(meta["name"], final)


def build_image(name: str, script: str, *, timeout: float | None = 1800, **sandbox_options: Any) -> Image:
    """Run ``script`` in a fresh sandbox and keep what it wrote as image ``name``; a failing
    script raises SandboxError with its output and keeps no image."""
    _check_name(name)
    from ..session import Sandbox
    with Sandbox(**sandbox_options) as sb:
        if sb.isolation_level not in ("namespace", "landlock"):
            raise SandboxError(f"images are built in a sandboxed isolation level, not {sb.isolation_level!r}")
        r = sb.run(script, timeout=timeout)
        if r.exit_code != 0:
            raise SandboxError(f"image {name!r}: the build script failed with status {r.exit_code}:\n"
                               + (r.stdout + r.stderr)[-4000:])
        layer = sb.snapshot()
    meta = {"name": name, "created": time.time(), "script": script,
            "builder_uid": os.geteuid()}
    return _install(layer, os.path.join(images_dir(), name), meta)


def import_image(name: str, snapshot: bytes | BinaryIO | str | os.PathLike[str]) -> Image:
    """Keep a snapshot's layer as image ``name``."""
    _check_name(name)
    from ..snapshot import _as_bytes
    layer = _as_bytes(snapshot)
    return _install(layer, os.path.join(images_dir(), name), {"name": name, "created": time.time()})


def resolve_image(spec: Any) -> Image:
    """``image=`` as given to Sandbox: a built image's name, its directory, or a snapshot tar
    (path or bytes, unpacked once into a directory named by its digest)."""
    if isinstance(spec, Image):
        return spec
    if isinstance(spec, (bytes, bytearray, memoryview)):
        data = bytes(spec)
        digest = hashlib.sha256(data).hexdigest()[:32]
        d = os.path.join(images_dir(), ".by-digest", digest)
        if not os.path.isdir(d):
            _install(data, d, {"name": f"sha256:{digest}", "created": time.time()})
        return _load(f"sha256:{digest}", d)
    if not isinstance(spec, (str, os.PathLike)):
        raise TypeError(f"image= takes a name, a directory or a snapshot tar, not {type(spec).__name__}")
    s = os.fspath(spec)
    if os.sep not in s and not s.endswith((".tar", ".tgz", ".gz", ".zst")):
        _check_name(s)
        d = os.path.join(images_dir(), s)
        if not os.path.isdir(d):
            raise SandboxError(f"no image named {s!r} in {images_dir()} "
                               f"(build one: agentic-bash image build {s} --cmd '...')")
        return _load(s, d)
    if os.path.isdir(s):
        return _load(os.path.basename(s.rstrip("/")), s)
    if os.path.isfile(s):
        with open(s, "rb") as f:
            return resolve_image(f.read())
    raise SandboxError(f"image {s!r}: no such image, directory or snapshot file")


def list_images() -> list[Image]:
    d = images_dir()
    out = []
    try:
        names = sorted(os.listdir(d))
    except OSError:
        return []
    for n in names:
        if n.startswith(".") or not os.path.isfile(os.path.join(d, n, "image.json")):
            continue
        try:
            out.append(_load(n, os.path.join(d, n)))
        except SandboxError:
            continue
    return out


def remove_image(name: str) -> None:
    _check_name(name)
    d = os.path.join(images_dir(), name)
    if not os.path.isfile(os.path.join(d, "image.json")):
        raise SandboxError(f"no image named {name!r}")
    shutil.rmtree(d)

