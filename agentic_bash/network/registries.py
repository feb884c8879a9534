"""The package registries this host's pip, npm and apt are configured to use, as allowlist rules."""

from __future__ import annotations

import configparser
import glob
import os
import re
from urllib.parse import urlsplit

__all__ = ["package_registries"]

_DEFAULTS = ("pypi.org", "files.pythonhosted.org", "registry.npmjs.org")
"""PyPI's index and file hosts, npm's registry: asked for even when nothing names them."""

_PIP_KEYS = ("index-url", "extra-index-url", "find-links")


def _host(url: str) -> str | None:
    try:
        u = urlsplit(url.strip())
    except ValueError:
        return None
    if u.scheme not in ("http", "https") or not u.hostname:
        return None
    return u.hostname.lower().rstrip(".")


def _pip_urls(home: str) -> list[str]:
    """index-url, extra-index-url and find-links from pip's config files and environment."""
    files = [os.path.join(d, "pip", "pip.conf")
             for d in (os.environ.get("XDG_CONFIG_DIRS") or "/etc/xdg").split(":") if d]
    files += ["/etc/pip.conf", os.path.join(home, ".pip", "pip.conf"),
              os.path.join(home, ".config", "pip", "pip.conf")]
    if os.environ.get("PIP_CONFIG_FILE"):
        files.append(os.environ["PIP_CONFIG_FILE"])
    out: list[str] = []
    for f in files:
        cp = configparser.RawConfigParser(strict=False)
        try:
            cp.read(f, encoding="utf-8")
        except (configparser.Error, OSError, UnicodeDecodeError):
            continue
        for section in cp.sections():
            for key in _PIP_KEYS:
                if cp.has_option(section, key):
                    out += (cp.get(section, key) or "").split()
    for key in _PIP_KEYS:
        out += os.environ.get("PIP_" + key.upper().replace("-", "_"), "").split()
    return out


def _npm_urls(home: str) -> list[str]:
    """``registry`` and ``@scope:registry`` from the npmrc files npm reads."""
    out: list[str] = []
    for f in ("/usr/etc/npmrc", "/etc/npmrc", os.path.join(home, ".npmrc")):
        try:
            with open(f, encoding="utf-8", errors="replace") as fh:
                for line in fh:
                    m = re.match(r"\s*(?:@[^:\s]+:)?registry\s*=\s*(\S+)", line)
                    if m:
                        out.append(m.group(1))
        except OSError:
            pass
    for k, v in os.environ.items():
        if k.lower() == "npm_config_registry":
            out.append(v)
    return out


def _apt_urls(root: str = "/etc/apt") -> list[str]:
    """The URIs of the enabled apt sources (one-line ``.list`` and deb822 ``.sources``)."""
    out: list[str] = []
    for f in [os.path.join(root, "sources.list")] + sorted(
            glob.glob(os.path.join(root, "sources.list.d", "*.list"))):
        try:
            with open(f, encoding="utf-8", errors="replace") as fh:
                for line in fh:
                    parts = line.split("#", 1)[0].split()
                    if parts and parts[0] in ("deb", "deb-src"):
                        rest = parts[1:]
                        if rest and rest[0].startswith("["):  # [arch=... signed-by=...]
                            while rest and not rest[0].endswith("]"):
                                rest = rest[1:]
                            rest = rest[1:]
                        if rest:
                            out.append(rest[0])
        except OSError:
            pass
    for f in sorted(glob.glob(os.path.join(root, "sources.list.d", "*.sources"))):
        try:
            with open(f, encoding="utf-8", errors="replace") as fh:
                text = fh.read()
        except OSError:
            continue
        for stanza in re.split(r"\n\s*\n", text):
            if re.search(r"(?im)^Enabled:\s*no\s*$", stanza):
                continue
            for m in re.finditer(r"(?im)^URIs:\s*(.+)$", stanza):
                out += m.group(1).split()
    return out


def package_registries(home: str | None = None) -> tuple[str, ...]:
    """Host names for ``NetworkPolicy(allow=...)``: PyPI, npm's registry and whatever this
    host's pip, npm and apt configuration names (http/https sources only; ``file:`` indexes
    need no network), in a stable order."""
    home = home or os.path.expanduser("~")
    hosts = list(_DEFAULTS)
    for url in _pip_urls(home) + _npm_urls(home) + _apt_urls():
        h = _host(url)
        if h:
            hosts.append(h)
    return tuple(dict.fromkeys(hosts))
