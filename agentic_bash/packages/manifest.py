"""The session's package manifest, kept current by observing what the real installers wrote."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from .._lazyre import lazy_compile as _lazy_re
from .._values import value_methods

__all__ = ["Manifest", "PackageInfo"]

# pip leaves NAME-VERSION.dist-info/METADATA in a site directory; npm leaves
# node_modules/[@scope/]NAME/package.json. The installers are the real tools: we only read
# what they wrote (files the run created, modified or deleted), never re-implement them.
_PIP_META = _lazy_re(r"/(?:site|dist)-packages/([^/]+)\.dist-info/METADATA$")
_NPM_META = _lazy_re(r"/node_modules/((?:@[^/]+/)?[^/@][^/]*)/package\.json$")


@value_methods
@dataclass(frozen=True, slots=True, repr=False, eq=False)
class PackageInfo:
    """One installed package: ``manager`` is ``pip``, ``npm`` or ``apt``."""

    name: str
    version: str
    manager: str

    def to_json(self) -> list[str]:
        return [self.name, self.version, self.manager]

    @classmethod
    def from_json(cls, v: Any) -> PackageInfo:
        if isinstance(v, dict):
            return cls(str(v["name"]), str(v["version"]), str(v["manager"]))
        name, version, manager = v
        return cls(str(name), str(version), str(manager))


def _pip_fields(meta: bytes) -> tuple[str, str] | None:
    name = version = None
    for line in meta.split(b"\n", 64)[:64]:
        if not line.strip():
            break  # the headers end at the first blank line
        if line.startswith(b"Name:"):
            name = line[5:].strip().decode("utf-8", "replace")
        elif line.startswith(b"Version:"):
            version = line[8:].strip().decode("utf-8", "replace")
    return (name, version) if name and version else None


def _npm_fields(raw: bytes) -> tuple[str, str] | None:
    try:
        d = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(d, dict) or not isinstance(d.get("name"), str):
        return None
    return d["name"], str(d.get("version", ""))


class Manifest:
    """What the session installed, by (manager, name); the run's additions are collected
    until ``take_run()``. Not thread-safe on its own: runs of one session never overlap."""

    __slots__ = ("_pk", "_run")

    def __init__(self) -> None:
        self._pk: dict[tuple[str, str], PackageInfo] = {}
        self._run: list[PackageInfo] = []

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(sorted(self._pk.values(), key=lambda p: (p.manager, p.name.lower())))

    def __len__(self) -> int:
        return len(self._pk)

    def add(self, info: PackageInfo) -> None:
        key = (info.manager, info.name.lower())
        if self._pk.get(key) != info:
            self._pk[key] = info
            self._run.append(info)

    def remove(self, manager: str, name: str) -> None:
        self._pk.pop((manager, name.lower()), None)

    def observe(self, created: Iterable[str], modified: Iterable[str], deleted: Iterable[str],
                read: Callable[[str], bytes]) -> None:
        """Record pip and npm packages whose metadata files the run wrote or removed
        (removals first: an upgrade deletes the old dist-info and writes the new one)."""
        for path in deleted:
            if path.endswith("/METADATA"):
                m = _PIP_META.search(path)
                if m is not None:
                    # NAME-VERSION.dist-info: the name never contains a '-' (wheel rule)
                    self._forget("pip", m.group(1).rsplit("-", 1)[0])
            elif path.endswith("/package.json"):
                m = _NPM_META.search(path)
                if m is not None:
                    self._forget("npm", m.group(1))
        for path in (*created, *modified):
            if path.endswith("/METADATA"):
                m = _PIP_META.search(path)
                if m is None:
                    continue
                manager, parse = "pip", _pip_fields
            elif path.endswith("/package.json"):
                m = _NPM_META.search(path)
                if m is None:
                    continue
                manager, parse = "npm", _npm_fields
            else:
                continue
            try:
                fields = parse(read(path))
            except OSError:
                continue
            if fields is not None:
                self.add(PackageInfo(fields[0], fields[1], manager))

    def _forget(self, manager: str, name: str) -> None:
        canon = re.sub(r"[-_.]+", "-", name).lower() if manager == "pip" else name.lower()
        for key in list(self._pk):
            if key[0] == manager and (key[1] == name.lower() or (
                    manager == "pip" and re.sub(r"[-_.]+", "-", key[1]) == canon)):
                del self._pk[key]

    def take_run(self) -> tuple[PackageInfo, ...]:
        out = tuple(self._run)
        self._run.clear()
        return out

    def to_json(self) -> list[list[str]]:
        return [p.to_json() for p in self]

    def load(self, entries: Iterable[Any]) -> None:
        self._pk.clear()
        self._run.clear()
        for e in entries or ():
            try:
                p = PackageInfo.from_json(e)
            except (KeyError, TypeError, ValueError):
                continue
            self._pk[(p.manager, p.name.lower())] = p

