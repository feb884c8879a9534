"""awk arrays that iterate in mawk's order: FNV-1 hash buckets, move-to-front chains."""

# `for (k in a)` order is unspecified by POSIX, but expectations here are recorded with
# mawk, so AwkArray models mawk's table: keys live in buckets `fnv1(key) & hmask` (64
# buckets, doubling past 12 entries per bucket on average), each bucket is a list with the
# most recently accessed key first, and keys first reached through integer subscripts sit on
# a separate integer list until the first string-keyed access or loop converts them. The
# values stay in the dict itself; only access times are recorded, and the order is computed
# when a loop starts.

from __future__ import annotations

__all__ = ["AwkArray", "fnv1"]

_fnv_cache: dict[str, int] = {}


def fnv1(k: str) -> int:
    h = _fnv_cache.get(k)
    if h is None:
        h = 2166136261
        for c in k.encode("latin-1", "replace"):
            h = ((h ^ c) * 16777619) & 0xFFFFFFFF
        if len(_fnv_cache) > 200000:
            _fnv_cache.clear()
        _fnv_cache[k] = h
    return h


_INT_MAX = 2147483647.0


class AwkArray(dict):
    __slots__ = ("srec", "irec", "astr", "hmask", "clock", "spl")

    def __init__(self) -> None:
        super().__init__()
        self._reset()

    def _reset(self) -> None:
        self.srec: dict[str, int] = {}   # string-chain recency (AY_STR)
        self.irec: dict[str, int] = {}   # integer-chain recency (AY_INT)
        self.astr = False                 # string associations exist
        self.hmask = 63
        self.clock = 0
        self.spl = False                  # still a split() array (AY_SPLIT)

    def clear(self) -> None:
        dict.clear(self)
        self._reset()

    def _grow(self) -> None:
        if len(self) > (self.hmask + 1) * 12:
            self.hmask = self.hmask * 2 + 1

    def _assoc(self) -> None:
        """add_string_associations: integer-list nodes pushed onto the string chains."""
        hm = self.hmask
        irec = self.irec
        order = sorted(irec, key=lambda k: (int(k) & hm, -irec[k]))
        c = self.clock
        srec = self.srec
        for k in order:
            c += 1
            srec[k] = c
        self.clock = c
        self.astr = True
        self.spl = False

    def spath(self, k: str, create: bool) -> str | None:
        if not len(self):
            if not create:
                return None
            self._reset()
            self.astr = True
        elif not self.astr:
            self._assoc()
        exists = dict.__contains__(self, k)
        if not exists and not create:
            return None
        self.clock += 1
        self.srec[k] = self.clock
        if not exists:
            from .runtime import UNINIT
            dict.__setitem__(self, k, UNINIT)
            self._grow()
        return k

    def ipath(self, k: str, ival: int, create: bool) -> str | None:
        n = len(self)
        if not n:
            if not create:
                return None
            self._reset()
        elif self.spl:
            if 1 <= ival <= n:
                return k
            if not create:
                return None
            self.spl = False
        irec = self.irec
        if k in irec:
            self.clock += 1
            irec[k] = self.clock
            return k
        if self.astr:
            exists = dict.__contains__(self, k)
            if not exists and not create:
                return None
            self.clock += 1
            self.srec[k] = self.clock
            irec[k] = self.clock
            if not exists:
                from .runtime import UNINIT
                dict.__setitem__(self, k, UNINIT)
                self._grow()
            return k
        if not create:
            return None
        self.clock += 1
        irec[k] = self.clock
        from .runtime import UNINIT
        dict.__setitem__(self, k, UNINIT)
        self._grow()
        return k

    def load_split(self, parts: list) -> None:
        """array_load: a fresh split() array 1..n."""
        dict.clear(self)
        self._reset()
        irec = self.irec
        for i, p in enumerate(parts, 1):
            k = str(i)
            dict.__setitem__(self, k, p)
            irec[k] = i
        self.clock = len(parts)
        while len(parts) > (self.hmask + 1) * 12:
            self.hmask = self.hmask * 2 + 1
        self.spl = True

    def delete(self, k: str, string_path: bool) -> None:
        if not len(self):
            return
        if string_path and not self.astr:
            self._assoc()
        if dict.__contains__(self, k):
            dict.__delitem__(self, k)
            self.srec.pop(k, None)
            self.irec.pop(k, None)
            self.spl = False
            if not len(self):
                self._reset()

    def loop_keys(self) -> list[str]:
        if not len(self):
            return []
        if not self.astr:
            self._assoc()
        hm = self.hmask
        sr = self.srec
        return sorted(dict.keys(self), key=lambda k: (fnv1(k) & hm, -sr.get(k, 0)))


def int_subscript(sub: float) -> int | None:
    """mawk takes the integer path for integral doubles within the int range."""
    if -_INT_MAX <= sub <= _INT_MAX:
        i = int(sub)
        if i == sub:
            return i
    return None
