"""Where the probe's cross-process cache lives and how it is read, without the probe's imports."""

# (fresh15) Sandbox() reads this file before it imports isolation/probe.py (ctypes, subprocess,
# the dataclasses: ~13 ms of a fresh process) to start the zygote early; probe.py reads and
# writes it through the same functions, so both agree on the path and on what is trusted.

from __future__ import annotations

import json
import os

__all__ = ["CACHE_TTL", "cache_path", "read_entries"]

CACHE_TTL = 24 * 3600.0
"""Seconds an entry of the cache is believed."""


def cache_path() -> str | None:
    """Where this user's probe cache lives (None: disabled by AGENTIC_BASH_PROBE_CACHE=0)."""
    if os.environ.get("AGENTIC_BASH_PROBE_CACHE", "1") in ("0", "", "no", "false"):
        return None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    if not os.path.isabs(base):
        return None
    return os.path.join(base, "agentic-bash", f"probe-{os.geteuid()}.json")


def read_entries(path: str) -> dict:
    """{key: entry} from our own file that nobody else could have written, else {}."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return {}
    try:
        st = os.fstat(fd)
        if st.st_uid != os.geteuid() or st.st_mode & 0o022 or st.st_size > 262144:
            return {}
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = json.loads(f.read())
    except (OSError, ValueError):
        return {}
    finally:
        os.close(fd)
    entries = data.get("entries") if isinstance(data, dict) else None
    return entries if isinstance(entries, dict) else {}
