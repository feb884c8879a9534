"""OverlayFS: a writable MemoryFS upper over read-only lower layers, with whiteouts and copy-up."""

# Semantics follow Linux overlayfs: a directory present in several layers is merged; any
# non-directory hides everything below it; deleting an entry that a lower layer provides
# leaves a whiteout in the upper directory; a directory created where a whiteout was is
# opaque (lowers hidden below it). Symlinks are resolved in the *merged* view, component by
# component, so a lower ``/bin -> usr/bin`` leads to upper files under ``/usr/bin``.
# Lowers are never written. Whiteouts and opaque flags live on upper directory inodes
# (``_Inode.wh`` / ``_Inode.opaque``); oci.py turns them into ``.wh.`` tar members.

from __future__ import annotations

import errno
import os
import stat as _stat
from typing import Any, BinaryIO, Iterator, Sequence

from .base import DirEntry, FileSystem, StatResult
from .changes import CONTENT_COMPARE_LIMIT
from .memory import _OPEN_FLAGS, MAXSYMLINKS, S_IFDIR, S_IFLNK, S_IFMT, S_IFREG, MemoryFS, _err
from .paths import join, realpath_with, split

__all__ = ["OverlayFS"]

COPY_CHUNK = 1 << 20


class _Found:
    """One resolved merged entry: canonical path and the layers that provide it (top first)."""

    __slots__ = ("path", "parent", "parent_layers", "layers", "st")

    def __init__(self, path: str, parent: str, parent_layers: list[int],
                 layers: list[int], st: StatResult | None) -> None:
        self.path = path
        self.parent = parent
        self.parent_layers = parent_layers   # layers providing the parent directory
        self.layers = layers                 # layers providing this entry (several only for dirs)
        self.st = st                         # lstat of the top entry, None when absent

    @property
    def top(self) -> int:
        return self.layers[0]


def _tracked(f: Any, fs: Any, path: str) -> Any:
    if hasattr(f, "track"):
        f.track = (fs, path, False)
    return f


class OverlayFS:
    """Merged view of ``upper`` (index 0) over ``lowers`` (indices 1..n, top first)."""

    def __init__(self, upper: MemoryFS, lowers: Sequence[FileSystem]) -> None:
        self.upper = upper
        self.lowers = list(lowers)
        self._lock = upper._lock
        self._journal: Any = None
        self._dircache: dict[str, list[int]] = {}  # merged dir path -> layers providing it
        # upper-only directory path -> its upper inode, every directory down to it searchable
        # (see _upper_parent); emptied with _dircache by _invalidate and by chmod of a directory
        self._upcache: dict[str, Any] = {}
        upper._track_via = self  # changes.snapshot_marker(upper) tracks the merged view

    # ------------------------------------------------------------------ layers
    def _layer(self, idx: int) -> Any:
        return self.upper if idx == 0 else self.lowers[idx - 1]

    def swap_upper(self, upper: MemoryFS) -> None:
        """Replace the upper layer (``reset()``); O(1)."""
        with self._lock:
            upper._track_via = getattr(self.upper, "_track_via", self)
            self.upper = upper
            self._lock = upper._lock
            self._dircache = {}
            self._upcache = {}

    def _upper_dir(self, path: str) -> Any:
        """The upper inode at canonical ``path`` (no symlinks in it), or None."""
        node = self.upper._root
        for c in path.split("/"):
            if c:
                node = node.children.get(c)
                if node is None or node.mode & S_IFMT != S_IFDIR:
                    return None
        return node

    def _upper_parent(self, path: str) -> tuple[Any, tuple[Any, ...], str] | None:
        """(upper inode of the parent, inodes of the parent in the lower layers that merge
        with it, last name) when ``path``'s parent is a merged directory present in the
        upper, every directory down to it searchable, and its lower layers (if any) plain
        MemoryFS trees without permission checks (the base tree); else None.

        Then the merged entry is the upper's entry if there is one (only a directory merges
        with lower ones), else absent unless a lower directory names it: the fast paths of
        open, stat and unlink use the inodes instead of a merged resolution plus a second
        walk of the upper. The search (x) checks are the ones MemoryFS._walk makes, so no
        error can differ; a caller that finds anything unusual (a symlink, a directory, a
        lower entry, a missing entry it would have to report) falls back to the general code.
        """
        parent, _, name = path.rpartition("/")
        hit = self._upcache.get(parent)
        if hit is None:
            hit = self._upper_dir_searchable(parent)
            if hit is None:
                return None
        if not name or name == "." or name == "..":
            return None
        return hit[0], hit[1], name

    def _upper_dir_searchable(self, parent: str) -> tuple[Any, tuple[Any, ...]] | None:
        """_upper_parent's lookup of ``parent`` (and its cache fill)."""
        layers = self._dircache.get(parent)
        if not parent or layers is None or layers[0] != 0:
            return None
        comps = parent[1:].split("/")
        ldirs = []
        for idx in layers[1:]:
            # a lower in the layers of a merged directory has every prefix of it as a real
            # directory (_child merges directories only), so a walk of names finds it
            lower = self.lowers[idx - 1]
            if not isinstance(lower, MemoryFS) or lower.check_permissions:
                return None
            d = lower._root
            for c in comps:
                d = d.children.get(c)
                if d is None or d.mode & S_IFMT != S_IFDIR:
                    return None
            ldirs.append(d)
        node = self.upper._root
        ok = True
        for c in comps:
            if not node.mode & 0o100:
                ok = False
            node = node.children.get(c)
            if node is None or node.mode & S_IFMT != S_IFDIR:
                return None
        if not node.mode & 0o100:
            ok = False
        if not ok and self.upper.check_permissions:
            return None
        hit = (node, tuple(ldirs))
        if ok:
            if len(self._upcache) > 10_000:
                self._upcache.clear()
            self._upcache[parent] = hit
        return hit

    @staticmethod
    def _lower_names(pnode: Any, ldirs: tuple[Any, ...], name: str) -> bool:
        """Whether a lower layer shows ``name`` in the merged directory (no upper entry)."""
        if not ldirs or (pnode.wh and name in pnode.wh):
            return False
        for d in ldirs:
            if name in d.children:
                return True
        return False

    def _upper_state(self, node: Any) -> tuple:
        """changes.capture() of the upper entry ``node`` reached through searchable directories
        (what a read through this view finds), without resolving its path again."""
        mode = node.mode
        fmt = mode & S_IFMT
        if fmt == S_IFREG:
            data = node.data
            if len(data) <= CONTENT_COMPARE_LIMIT and (mode & 0o400 or not self.upper.check_permissions):
                return (mode, bytes(data))
            return (mode, ("big", node.ino, len(data), node.mtime))
        if fmt == S_IFLNK:
            return (mode, node.target or "")
        return (mode, None)

    def _invalidate(self) -> None:
        """Forget cached directory layering (after anything that changes which layers merge,
        which upper inode a directory path names, or whether a directory is searchable)."""
        self._dircache.clear()
        self._upcache.clear()

    def _child(self, parent: str, parent_layers: list[int], name: str,
               pnode: Any = False) -> tuple[list[int], StatResult | None]:
        """Layers providing ``parent/name`` and the top entry's lstat (None: absent).

        ``pnode`` is the parent's upper inode when the caller has it (None: not in upper).
        """
        path = join(parent, name)
        layers: list[int] = []
        top: StatResult | None = None
        for idx in parent_layers:
            if idx == 0:
                if pnode is False:
                    pnode = self._upper_dir(parent)
                if pnode is None:
                    continue
                node = pnode.children.get(name)
                if node is not None:
                    top = self.upper._stat_of(node, self.upper.dev)
                    layers.append(0)
                    if node.mode & S_IFMT != S_IFDIR or node.opaque:
                        return layers, top
                    continue
                if pnode.wh and name in pnode.wh:
                    return layers, top
                continue
            try:
                st = self.lowers[idx - 1].stat(path, follow_symlinks=False)
            except (OSError, ValueError):
                continue
            if top is None:
                top = st
                layers.append(idx)
                if not _stat.S_ISDIR(st.st_mode):
                    return layers, top
            elif _stat.S_ISDIR(st.st_mode) and _stat.S_ISDIR(top.st_mode):
                layers.append(idx)
            else:
                break  # a non-directory below a directory ends the merge
        return layers, top

    def _root_layers(self) -> list[int]:
        if self.upper._root.opaque:
            return [0]
        return list(range(len(self.lowers) + 1))

    # the cached-parent shortcut of _resolve (a switch for tests that compare it with the loop)
    _cached_resolve = True

    def _resolve(self, path: str, follow: bool = True, create: bool = False) -> _Found:
        """Resolve in the merged view; the result's ``st`` is None if only the last part is missing."""
        # fast path: the parent is a merged directory resolved before (in the cache, which
        # only holds canonical, symlink-free directory paths) and the last part is a plain
        # name; this is exactly the last iteration of the loop below
        parent, _, name = path.rpartition("/")
        if name and name != "." and name != ".." and self._cached_resolve:
            players = self._dircache.get(parent) if parent else self._root_layers()
            if players is not None:
                layers, st = self._child(parent or "/", players, name)
                if st is None:
                    return _Found(path, parent or "/", players, [], None)
                if not (follow and st.st_mode & S_IFMT == S_IFLNK):
                    return _Found(path, parent or "/", players, layers, st)
        up_root = self.upper._root
        # entries: (path or None, layers, upper inode, name); a None path was left unbuilt by
        # the upper-only fast path below and is built on demand (keeps deep paths O(depth))
        stack: list[tuple[str | None, list[int], Any, str]] = [("/", self._root_layers(), up_root, "")]
        comps = [c for c in reversed(path.split("/")) if c and c != "."]
        hops = 0
        cache = self._dircache

        def at(i: int) -> str:
            e = stack[i]
            if e[0] is not None:
                return e[0]
            j = i
            while stack[j][0] is None:
                j -= 1
            base = stack[j][0]
            p = ("" if base == "/" else base) + "/" + "/".join([stack[k][3] for k in range(j + 1, i + 1)])
            stack[i] = (p, e[1], e[2], e[3])
            return p

        while comps:
            c = comps.pop()
            if c == ".":
                continue
            if c == "..":
                if len(stack) > 1:
                    stack.pop()
                continue
            _, cur_layers, cur_up, _n = stack[-1]
            if create and comps == ["."]:
                raise _err(errno.EISDIR, path)  # O_CREAT on "name/" (from a symlink target)
            if comps and cur_up is not None and cur_layers == [0]:
                # upper-only directory: its children come from the upper alone (what _child
                # would find), so descend through inodes without building path strings
                node = cur_up.children.get(c)
                if node is not None and node.mode & S_IFMT == S_IFDIR:
                    stack.append((None, [0], node, c))
                    while len(comps) > 1:  # the rest of an upper-only run, in one tight loop
                        c = comps[-1]
                        if c == "..":
                            break
                        node = node.children.get(c)
                        if node is None or node.mode & S_IFMT != S_IFDIR:
                            break
                        comps.pop()
                        stack.append((None, [0], node, c))
                    continue
            cur = at(len(stack) - 1)
            child = cur + c if cur == "/" else cur + "/" + c
            if comps:
                cached = cache.get(child)
                if cached is not None:  # a merged directory seen before
                    stack.append((child, cached, None if cur_up is None else cur_up.children.get(c), c))
                    continue
            layers, st = self._child(cur, cur_layers, c, cur_up)
            if st is None:
                if comps:
                    raise _err(errno.ENOENT, path)
                return _Found(child, cur, cur_layers, [], None)
            fmt = st.st_mode & S_IFMT
            if fmt == S_IFLNK and (comps or follow):
                hops += 1
                if hops > MAXSYMLINKS:
                    raise _err(errno.ELOOP, path)
                t = self._layer(layers[0]).readlink(child)
                if t.startswith("/"):
                    del stack[1:]
                if t.endswith(("/", "/.", "/..")) or t in (".", ".."):
                    comps.append(".")
                comps.extend(x for x in reversed(t.split("/")) if x and x != ".")
                continue
            if not comps:
                return _Found(child, cur, cur_layers, layers, st)
            if fmt != S_IFDIR:
                raise _err(errno.ENOTDIR, path)
            if len(cache) > 100_000:
                cache.clear()
            cache[child] = layers
            stack.append((child, layers, None if cur_up is None else cur_up.children.get(c), c))
        cur_layers = stack[-1][1]
        fast = stack[-1][0] is None  # reached through upper-only inodes
        cur = at(len(stack) - 1)
        if len(stack) > 1:  # every entry is its predecessor's child: the parent is a prefix
            parent = cur[:len(cur) - len(stack[-1][3]) - 1] or "/"
            parent_layers = stack[-2][1]
        else:
            parent, parent_layers = "/", cur_layers
        if fast and not self.upper.check_permissions:
            st = self.upper._stat_of(stack[-1][2], self.upper.dev)  # what upper.stat(cur) walks to
        else:
            st = self._layer(cur_layers[0]).stat(cur, False)
        return _Found(cur, parent, parent_layers, cur_layers, st)

    def _existing(self, path: str, follow: bool = True) -> _Found:
        f = self._resolve(path, follow)
        if f.st is None:
            raise _err(errno.ENOENT, path)
        return f

    # ------------------------------------------------------------------ journal
    def _jnote(self, path: str, content: bool = False) -> None:
        j = self._journal
        if j is not None:
            j.note(path)
            if content:  # hard links live only in the upper (copy-up breaks lower ones)
                self.upper._note_links(j, path)

    # ------------------------------------------------------------------ copy-up
    def _copy_up_dirs(self, path: str) -> None:
        """Make every directory of canonical ``path`` (itself included) exist in the upper."""
        if path == "/":
            return
        up = self.upper
        pnode = up._root
        names = path.strip("/").split("/")
        for i, name in enumerate(names):
            node = pnode.children.get(name)
            if node is None:
                nxt = "/" + "/".join(names[:i + 1])  # built only when needed (deep paths)
                st = self._merged_dir_stat(nxt)
                d = up._new(S_IFDIR | _stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid)
                d.children = {}
                d.nlink = 2
                d.mtime, d.atime, d.ctime = st.st_mtime, st.st_atime, st.st_ctime
                pnode.children[name] = d
                pnode.nlink += 1
                self._invalidate()
                node = d
            elif node.mode & S_IFMT != S_IFDIR:
                raise _err(errno.ENOTDIR, path)
            pnode = node

    def _merged_dir_stat(self, path: str) -> StatResult:
        for lower in self.lowers:
            try:
                st = lower.stat(path, follow_symlinks=False)
            except (OSError, ValueError):
                continue
            if _stat.S_ISDIR(st.st_mode):
                return st
        return StatResult(S_IFDIR | 0o755)

    def _copy_up(self, f: _Found, data: bool = True) -> None:
        """Copy the lower entry ``f`` into the upper (parents too), keeping mode, owner, times."""
        if f.top == 0:
            return
        self._copy_up_dirs(f.parent)
        up = self.upper
        lower = self._layer(f.top)
        st = f.st
        assert st is not None
        fmt = st.st_mode & S_IFMT
        if fmt == S_IFDIR:
            self._copy_up_dirs(f.path)
            return
        pnode = up._get(f.parent, False)
        name = split(f.path)[1]
        node = up._new(st.st_mode, st.st_uid, st.st_gid)
        if fmt == S_IFREG:
            buf = bytearray()
            if data:
                with lower.open(f.path, "rb") as src:
                    while True:
                        chunk = src.read(COPY_CHUNK)
                        if not chunk:
                            break
                        buf += chunk
                up._charge(len(buf), f.path)
            node.data = buf
        elif fmt == S_IFLNK:
            node.target = lower.readlink(f.path)
        elif fmt == _stat.S_IFCHR:
            lnode = getattr(lower, "_get", None)
            node.dev = lnode(f.path, False).dev if lnode else "null"
        node.mtime, node.atime, node.ctime = st.st_mtime, st.st_atime, st.st_ctime
        pnode.children[name] = node
        f.layers = [0]

    def _copy_up_tree(self, f: _Found) -> None:
        """Recursive copy-up of a merged directory; the upper copy becomes opaque (complete)."""
        self._copy_up(f)
        if f.st is None or not _stat.S_ISDIR(f.st.st_mode):
            return
        for name in self._names(f):
            child_layers, st = self._child(f.path, f.layers, name)
            if st is None:
                continue
            cf = _Found(join(f.path, name), f.path, f.layers, child_layers, st)
            self._copy_up_tree(cf)
        self.upper._get(f.path, False).opaque = True
        self._invalidate()
        f.layers = [0]

    def _lower_has(self, f: _Found) -> bool:
        """Whether a lower layer would show an entry at ``f.path`` once the upper one is gone."""
        for idx in f.parent_layers:
            if idx == 0:
                continue
            try:
                self.lowers[idx - 1].stat(f.path, follow_symlinks=False)
                return True
            except (OSError, ValueError):
                continue
        return False

    def _whiteout(self, f: _Found) -> None:
        self._invalidate()
        self._copy_up_dirs(f.parent)
        pnode = self.upper._get(f.parent, False)
        if pnode.wh is None:
            pnode.wh = set()
        pnode.wh.add(split(f.path)[1])

    # ------------------------------------------------------------------ queries
    def stat(self, path: str, follow_symlinks: bool = True) -> StatResult:
        with self._lock:
            u = self._upper_parent(path)
            if u is not None:
                pnode, ldirs, name = u
                node = pnode.children.get(name)
                if node is None:
                    if not self._lower_names(pnode, ldirs, name):
                        raise _err(errno.ENOENT, path)
                elif not follow_symlinks or node.mode & S_IFMT != S_IFLNK:
                    # the top entry (a directory merged with lower ones included)
                    return self.upper._stat_of(node, self.upper.dev)
            return self._existing(path, follow_symlinks).st  # type: ignore[return-value]

    def lstat(self, path: str) -> StatResult:
        return self.stat(path, follow_symlinks=False)

    def exists(self, path: str) -> bool:
        try:
            with self._lock:
                u = self._upper_parent(path)
                if u is not None:
                    node = u[0].children.get(u[2])
                    if node is None:
                        if not self._lower_names(*u):
                            return False
                    elif node.mode & S_IFMT != S_IFLNK:
                        return True
                return self._resolve(path, True).st is not None
        except (OSError, ValueError):
            return False

    def lexists(self, path: str) -> bool:
        try:
            with self._lock:
                u = self._upper_parent(path)
                if u is not None:
                    return u[2] in u[0].children or self._lower_names(*u)
                return self._resolve(path, False).st is not None
        except (OSError, ValueError):
            return False

    def _names(self, f: _Found) -> list[str]:
        names: dict[str, None] = {}
        wh: set[str] = set()
        for idx in f.layers:
            if idx == 0:
                node = self._upper_dir(f.path)
                if node is None:
                    continue
                names.update(dict.fromkeys(node.children))
                if node.wh:
                    wh = node.wh
            else:
                try:
                    lower_names = self.lowers[idx - 1].listdir(f.path)
                except (OSError, ValueError):
                    continue
                for n in lower_names:
                    if n not in wh:
                        names[n] = None
        return list(names)

    def _dir(self, path: str) -> _Found:
        f = self._existing(path, True)
        if not f.st.is_dir:  # type: ignore[union-attr]
            raise _err(errno.ENOTDIR, path)
        if self.upper.check_permissions and not (f.st.st_mode >> 6) & 4:  # type: ignore[union-attr]
            raise _err(errno.EACCES, path)
        return f

    def _upper_only_dir(self, path: str) -> Any:
        """The upper inode of ``path`` when it is a directory of the upper alone in a cached
        parent (see _upper_parent) and readable, so its names are its children; else None."""
        u = self._upper_parent(path)
        if u is None:
            return None
        pnode, ldirs, name = u
        node = pnode.children.get(name)
        if node is None or node.mode & S_IFMT != S_IFDIR or any(name in d.children for d in ldirs):
            return None
        if self.upper.check_permissions and not node.mode & 0o400:
            raise _err(errno.EACCES, path)
        return node

    def listdir(self, path: str) -> list[str]:
        with self._lock:
            node = self._upper_only_dir(path)
            if node is not None:
                return list(node.children)
            f = self._dir(path)
            if len(f.layers) == 1:
                return self._layer(f.top).listdir(f.path)
            return self._names(f)

    def scandir(self, path: str) -> Iterator[DirEntry]:
        with self._lock:
            node = self._upper_only_dir(path)
            if node is not None:
                return iter([DirEntry(n, c.mode) for n, c in node.children.items()])
            f = self._dir(path)
            if len(f.layers) == 1:
                return self._layer(f.top).scandir(f.path)
            out = []
            pnode = self._upper_dir(f.path) if f.layers[0] == 0 else None
            for name in self._names(f):
                _, st = self._child(f.path, f.layers, name, pnode)
                if st is not None:
                    out.append(DirEntry(name, st.st_mode))
            return iter(out)

    def readlink(self, path: str) -> str:
        with self._lock:
            f = self._existing(path, False)
            if not f.st.is_symlink:  # type: ignore[union-attr]
                raise _err(errno.EINVAL, path)
            return self._layer(f.top).readlink(f.path)

    def _lstat_mode(self, path: str) -> int | None:
        try:
            f = self._resolve(path, False)
        except OSError:
            return None
        return None if f.st is None else f.st.st_mode

    def realpath(self, path: str) -> str:
        with self._lock:
            return realpath_with(path, self._lstat_mode, self.readlink)

    def access(self, path: str, mode: int) -> bool:
        try:
            with self._lock:
                f = self._resolve(path, True)
        except OSError:
            return False
        if f.st is None:
            return False
        if mode == os.F_OK or not self.upper.check_permissions:
            return True
        bits = (f.st.st_mode >> 6) & 7
        want = (4 if mode & os.R_OK else 0) | (2 if mode & os.W_OK else 0) | (1 if mode & os.X_OK else 0)
        return bits & want == want

    def real_path(self, path: str) -> str | None:
        try:
            with self._lock:
                f = self._resolve(path, True)
        except OSError:
            return None
        if f.st is None or f.top == 0:
            return None
        return self._layer(f.top).real_path(f.path)

    # ------------------------------------------------------------------ open
    def open(self, path: str, mode: str = "rb", perm: int = 0o644) -> BinaryIO:
        fl = _OPEN_FLAGS.get(mode)
        with self._lock:
            if fl is not None and not fl[4]:  # not O_EXCL
                u = self._upper_parent(path)
                if u is not None:
                    f = self._open_upper(u[0], u[1], u[2], path, mode, perm, fl)
                    if f is not None:
                        return f
        return self._open(path, mode, perm)

    def _open_upper(self, pnode: Any, ldirs: tuple[Any, ...], name: str, path: str, mode: str,
                    perm: int, fl: tuple[bool, ...]) -> Any:
        """open() of ``name`` in the merged directory ``pnode`` (see _upper_parent): an upper
        regular file or a missing one; None for anything else (the general path handles it)."""
        up = self.upper
        node = pnode.children.get(name)
        if not fl[1]:  # read-only
            if node is None or node.mode & S_IFMT != S_IFREG:
                return None
            return up._open_node(node, path, mode, fl)
        j = self._journal
        if node is None:
            if not fl[2] or self._lower_names(pnode, ldirs, name):  # r+ of a missing file; copy-up
                return None
            if j is not None and path not in j.prior:
                j.prior[path] = None  # known absent (what capture() would find)
            return up._create_file(pnode, name, path, mode, perm, fl, (self, path, False), j)
        if node.mode & S_IFMT != S_IFREG:
            return None
        if up.check_permissions and not node.mode & 0o200:
            raise _err(errno.EACCES, path)
        if j is not None:
            if path not in j.prior:
                j.prior[path] = self._upper_state(node)
            if node.nlink > 1:  # hard links live only in the upper (copy-up breaks lower ones)
                for p in up._paths_of(node):
                    j.note(p)
        return up._open_node(node, path, mode, fl, (self, path, False), j)

    def _open(self, path: str, mode: str, perm: int) -> BinaryIO:
        flags = set(mode) - {"b", "t"}
        writing = bool(flags & {"w", "a", "x", "+"})
        with self._lock:
            if not writing:
                f = self._existing(path, True)
                if f.st.is_dir:  # type: ignore[union-attr]
                    raise _err(errno.EISDIR, path)
                if f.top != 0 and self.upper.check_permissions and not (f.st.st_mode >> 6) & 4:  # type: ignore[union-attr]
                    raise _err(errno.EACCES, path)
                if not _stat.S_ISFIFO(f.st.st_mode):  # type: ignore[union-attr]
                    return self._layer(f.top).open(f.path, mode)
            else:
                f = self._resolve(path, "x" not in flags, bool(flags & {"w", "a"}))
                if f.st is not None:
                    if "x" in flags:
                        raise _err(errno.EEXIST, path)
                    if f.st.is_dir:
                        raise _err(errno.EISDIR, path)
                    if not f.st.is_file and not f.st.is_symlink:
                        pass  # devices and FIFOs are used in place (never copied up), see below
                    else:
                        if self.upper.check_permissions and not (f.st.st_mode >> 6) & 2:
                            raise _err(errno.EACCES, path)
                        self._jnote(f.path, content=True)
                        self._copy_up(f, data="w" not in flags)
                        return _tracked(self.upper.open(f.path, mode, perm), self, f.path)
                elif "r" in flags:
                    raise _err(errno.ENOENT, path)
                else:
                    self._jnote(f.path)
                    self._copy_up_dirs(f.parent)
                    return _tracked(self.upper.open(f.path, mode, perm), self, f.path)
        # a FIFO open waits for the other end: never while holding the filesystem lock
        return self._layer(f.top).open(f.path, mode, perm)

    def mkfifo(self, path: str, mode: int = 0o644) -> None:
        with self._lock:
            f = self._creatable(path)
            self._jnote(f.path)
            self._copy_up_dirs(f.parent)
            self.upper.mkfifo(f.path, mode)

    # ------------------------------------------------------------------ mutations
    def _creatable(self, path: str) -> _Found:
        f = self._resolve(path, False)
        if f.st is not None:
            raise _err(errno.EEXIST, path)
        if f.path == "/":
            raise _err(errno.EEXIST, path)
        return f

    def mkdir(self, path: str, mode: int = 0o755) -> None:
        with self._lock:
            u = self._upper_parent(path)
            if u is not None:
                pnode, ldirs, name = u
                if name in pnode.children:
                    raise _err(errno.EEXIST, path)
                if not (pnode.wh and name in pnode.wh) and not any(name in d.children for d in ldirs):
                    # no lower entry, shown or whited out: a plain upper directory (the
                    # general path below without the opaque flag), layered [0] like its
                    # parent's upper-only children, cached so a deep mkdir -p stays linear
                    if self.upper.check_permissions and pnode.mode & 0o300 != 0o300:
                        raise _err(errno.EACCES, path)
                    j = self._journal
                    if j is not None and path not in j.prior:
                        j.prior[path] = None
                    d = self.upper._mkdir_in(pnode, name, mode)
                    if len(self._dircache) > 100_000:
                        self._dircache.clear()
                    self._dircache[path] = [0]
                    if d.mode & 0o100 and path.rpartition("/")[0] in self._upcache:
                        self._upcache[path] = (d, ())
                    return
            f = self._creatable(path)
            j = self._journal
            if j is not None and f.path not in j.prior:
                j.prior[f.path] = None  # known absent (what capture() would find): no second walk
            self._copy_up_dirs(f.parent)
            pnode = self.upper._get(f.parent, False)
            hidden = bool(pnode.wh and split(f.path)[1] in pnode.wh)
            self.upper.mkdir(f.path, mode)
            if hidden or self._lower_has(f):
                self.upper._get(f.path, False).opaque = True
                self._invalidate()

    def symlink(self, target: str, path: str) -> None:
        with self._lock:
            f = self._creatable(path)
            self._jnote(f.path)
            self._copy_up_dirs(f.parent)
            self.upper.symlink(target, f.path)

    def link(self, src: str, dst: str) -> None:
        with self._lock:
            s = self._existing(src, False)
            d = self._resolve(dst, False)
            if d.st is not None:
                raise _err(errno.EEXIST, src, dst)
            if s.st.is_dir:  # type: ignore[union-attr]
                raise _err(errno.EPERM, src, dst)
            self._jnote(d.path)
            self._copy_up(s)
            self._copy_up_dirs(d.parent)
            self.upper.link(s.path, d.path)

    def _remove(self, f: _Found, is_dir: bool) -> None:
        self._jnote(f.path)
        if is_dir:
            self._invalidate()
        lower = self._lower_has(f)
        if f.top == 0:
            if is_dir:
                self.upper.rmdir(f.path)
            else:
                self.upper.unlink(f.path)
        if lower:
            self._whiteout(f)

    def unlink(self, path: str) -> None:
        with self._lock:
            u = self._upper_parent(path)
            if u is not None:
                pnode, ldirs, name = u
                node = pnode.children.get(name)
                if node is not None and node.mode & S_IFMT != S_IFDIR and not (
                        ldirs and any(name in d.children for d in ldirs)):
                    # the general path below when no lower has the name: no whiteout needed
                    if self.upper.check_permissions and pnode.mode & 0o300 != 0o300:
                        raise _err(errno.EACCES, path)
                    j = self._journal
                    if j is not None and path not in j.prior:
                        j.prior[path] = self._upper_state(node)
                    self.upper._unlink_node(pnode, name, node)
                    return
            f = self._existing(path, False)
            if f.st.is_dir:  # type: ignore[union-attr]
                raise _err(errno.EISDIR, path)
            self._check_parent_writable(f, path)
            self._remove(f, False)

    def _check_parent_writable(self, f: _Found, path: str) -> None:
        if self.upper.check_permissions:
            pst = self._layer(f.parent_layers[0]).stat(f.parent, False) if f.parent_layers else None
            if pst is not None and (pst.st_mode >> 6) & 3 != 3:
                raise _err(errno.EACCES, path)

    def rmdir(self, path: str) -> None:
        with self._lock:
            u = self._upper_parent(path)
            if u is not None:
                pnode, ldirs, name = u
                node = pnode.children.get(name)
                if node is not None and node.mode & S_IFMT == S_IFDIR and not any(
                        name in d.children for d in ldirs):
                    # an upper-only directory: the general path below without a whiteout;
                    # only its own cache entries go (nothing is cached below an empty one)
                    if node.children:
                        raise _err(errno.ENOTEMPTY, path)
                    if self.upper.check_permissions and pnode.mode & 0o300 != 0o300:
                        raise _err(errno.EACCES, path)
                    node.wh = None
                    j = self._journal
                    if j is not None and path not in j.prior:
                        j.prior[path] = (node.mode, None)  # capture() of a directory
                    self._dircache.pop(path, None)
                    self._upcache.pop(path, None)
                    self.upper._rmdir_node(pnode, name, node)
                    return
            f = self._existing(path, False)
            if f.path == "/":
                raise _err(errno.EBUSY, path)
            if not f.st.is_dir:  # type: ignore[union-attr]
                raise _err(errno.ENOTDIR, path)
            if self._names(f):
                raise _err(errno.ENOTEMPTY, path)
            self._check_parent_writable(f, path)
            if f.top == 0:
                # drop whiteouts first: MemoryFS.rmdir only sees real children
                self.upper._get(f.path, False).wh = None
            self._remove(f, True)

    def rename(self, src: str, dst: str) -> None:
        with self._lock:
            s = self._resolve(src, False)
            d = self._resolve(dst, False)  # both parents resolve before ENOENT, as on Linux
            if s.st is None:
                raise _err(errno.ENOENT, src, dst)
            if s.path == "/" or d.path == "/":
                raise _err(errno.EBUSY, src, dst)
            s_dir = s.st.is_dir  # type: ignore[union-attr]
            if s_dir and (d.path + "/").startswith(s.path + "/") and d.path != s.path:
                raise _err(errno.EINVAL, src, dst)
            if d.st is not None:
                if d.path == s.path:
                    return
                if s.top == d.top and s.st.st_ino == d.st.st_ino and s.st.st_dev == d.st.st_dev:  # type: ignore[union-attr]
                    return  # hard links to one file: rename does nothing
                if s_dir:
                    if not d.st.is_dir:
                        raise _err(errno.ENOTDIR, src, dst)
                    if self._names(d):
                        raise _err(errno.ENOTEMPTY, src, dst)
                elif d.st.is_dir:
                    raise _err(errno.EISDIR, src, dst)
            j = self._journal
            if j is not None:
                j.note_move(s.path, d.path)
            self._invalidate()
            if s_dir:
                self._copy_up_tree(s)
            else:
                self._copy_up(s)
            self._copy_up_dirs(d.parent)
            src_lower = self._lower_has(s)
            if d.st is not None and d.top != 0 and d.st.is_dir:
                # an empty merged lower dir at dst: the upper rename target must not exist
                pass
            elif d.st is not None and d.top == 0 and d.st.is_dir:
                self.upper._get(d.path, False).wh = None
            self.upper.rename(s.path, d.path)
            self._invalidate()
            if s_dir and (self._lower_has(d) or d.st is not None):
                self.upper._get(d.path, False).opaque = True
            if src_lower:
                self._whiteout(s)

    def chmod(self, path: str, mode: int, follow_symlinks: bool = True) -> None:
        with self._lock:
            f = self._existing(path, follow_symlinks)
            if f.st.is_symlink:  # type: ignore[union-attr]
                return
            if f.st.is_dir and (mode ^ f.st.st_mode) & 0o100:  # type: ignore[union-attr]
                self._upcache.clear()  # its search bit changes
            self._jnote(f.path, content=True)
            self._copy_up(f)
            self.upper.chmod(f.path, mode, False)

    def chown(self, path: str, uid: int, gid: int, follow_symlinks: bool = True) -> None:
        with self._lock:
            f = self._existing(path, follow_symlinks)
            self._jnote(f.path)
            self._copy_up(f)
            self.upper.chown(f.path, uid, gid, False)

    def utime(self, path: str, times: tuple[float, float] | None = None, follow_symlinks: bool = True) -> None:
        with self._lock:
            f = self._existing(path, follow_symlinks)
            self._jnote(f.path)
            self._copy_up(f)
            self.upper.utime(f.path, times, False)

    def truncate(self, path: str, length: int) -> None:
        with self._lock:
            if length < 0:
                raise _err(errno.EINVAL, path)
            f = self._existing(path, True)
            if f.st.is_dir:  # type: ignore[union-attr]
                raise _err(errno.EISDIR, path)
            self._jnote(f.path, content=True)
            self._copy_up(f, data=length > 0)
            self.upper.truncate(f.path, length)

    # ------------------------------------------------------------------ overlay-specific
    def whiteouts(self) -> Iterator[tuple[str, bool]]:
        """(path, is_opaque_dir) for every whiteout / opaque directory in the upper, for export."""
        with self._lock:
            out: list[tuple[str, bool]] = []
            stack = [("/", self.upper._root)]
            while stack:
                path, node = stack.pop()
                if node.opaque:
                    out.append((path, True))
                for n in sorted(node.wh or ()):
                    out.append((join(path, n), False))
                for n, c in node.children.items():
                    if c.mode & S_IFMT == S_IFDIR:
                        stack.append((join(path, n), c))
            return iter(out)
