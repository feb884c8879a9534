"""Shell state: variables with attributes and dynamic scope, options, functions, traps, aliases."""

from __future__ import annotations

import os
from sys import getsizeof as _sizeof
from typing import Any, Iterator
from weakref import ref as _weakref

from ..errors import LimitExceeded

__all__ = [
    "ASSOC", "ARRAY", "EXPORT", "INTEGER", "LOWER", "NAMEREF", "READONLY", "TRACE", "UPPER",
    "SET_OPTIONS", "SHOPT_DEFAULTS", "Holdings", "array_top", "cow_violations", "ShellState", "SPECIAL", "CAPCASE", "TEMPVAR", "TempScope", "Var", "VarError",
]

EXPORT = 1
READONLY = 2
INTEGER = 4
ARRAY = 8
ASSOC = 16
NAMEREF = 32
LOWER = 64
UPPER = 128
TRACE = 256
# a prefix assignment's binding (`v=1 cmd`): not a letter of declare -p; `local v` adopts it
TEMPVAR = 512
# assigning the variable has a side effect (LC_ALL & co. call setlocale): not a letter of
# declare -p; it keeps the variable off the interpreter's inline assignment fast paths
SPECIAL = 1024
# declare -c: the first character upper case, the rest lower case (bash's capcase)
CAPCASE = 2048

# declare -p prints attribute letters in this order (bash's ``attributes`` table)
ATTR_LETTERS = (("a", ARRAY), ("A", ASSOC), ("i", INTEGER), ("l", LOWER), ("n", NAMEREF),
                ("r", READONLY), ("t", TRACE), ("u", UPPER), ("x", EXPORT), ("c", CAPCASE))

# (long name, letter or '') in ``set -o`` listing order
SET_OPTIONS: dict[str, str] = {
    "allexport": "a", "braceexpand": "B", "emacs": "", "errexit": "e", "errtrace": "E",
    "functrace": "T", "hashall": "h", "histexpand": "H", "history": "", "ignoreeof": "",
    "interactive-comments": "", "keyword": "k", "monitor": "m", "noclobber": "C",
    "noexec": "n", "noglob": "f", "nolog": "", "notify": "b", "nounset": "u", "onecmd": "t",
    "physical": "P", "pipefail": "", "posix": "", "privileged": "p", "verbose": "v", "vi": "",
    "xtrace": "x",
}
LETTER_TO_OPTION = {v: k for k, v in SET_OPTIONS.items() if v}
# ``$-`` order: bash's shell_flags table, then ``c``
DASH_ORDER = "abefhikmnptuvxBCEHPT"

SHOPT_DEFAULTS: dict[str, bool] = {
    "autocd": False, "assoc_expand_once": False, "cdable_vars": False, "cdspell": False,
    "checkhash": False, "checkjobs": False, "checkwinsize": True, "cmdhist": True,
    "compat31": False, "compat32": False, "compat40": False, "compat41": False,
    "compat42": False, "compat43": False, "compat44": False, "complete_fullquote": True,
    "direxpand": False, "dirspell": False, "dotglob": False, "execfail": False,
    "expand_aliases": False, "extdebug": False, "extglob": False, "extquote": True,
    "failglob": False, "force_fignore": True, "globasciiranges": True, "globskipdots": True,
    "globstar": False, "gnu_errfmt": False, "histappend": False, "histreedit": False,
    "histverify": False, "hostcomplete": True, "huponexit": False, "inherit_errexit": False,
    "interactive_comments": True, "lastpipe": False, "lithist": False,
    "localvar_inherit": False, "localvar_unset": False, "login_shell": False,
    "mailwarn": False, "no_empty_cmd_completion": False, "nocaseglob": False,
    "nocasematch": False, "noexpand_translation": False, "nullglob": False,
    "patsub_replacement": True, "progcomp": True, "progcomp_alias": False, "promptvars": True,
    "restricted_shell": False, "shift_verbose": False, "sourcepath": True,
    "varredir_close": False, "xpg_echo": False,
}


class VarError(Exception):
    """An assignment the shell refuses (readonly, bad subscript); ``message`` is bash's text."""

    def __init__(self, message: str, fatal: bool = True) -> None:
        super().__init__(message)
        self.message = message
        self.fatal = fatal


class Var:
    """One variable: ``value`` is a str (scalar), dict[int, str] (indexed), dict[str, str]
    (associative) or None (declared but unset).

    An array's dict is copy-on-write between forks: ``copy()`` shares it and marks both
    Vars ``shared``; a shared dict is never changed again, so whoever changes an array in
    place takes it with ``own()`` first (replacing ``value`` with a new dict needs no
    ``own``)."""

    __slots__ = ("value", "attrs", "top", "shared")

    def __init__(self, value: Any = None, attrs: int = 0) -> None:
        self.value = value
        self.attrs = attrs
        # (dict, len, max key) of an indexed array, while that dict has that length and no
        # element was unset (see array_top): `a+=(x)` finds the next index in O(1)
        self.top: tuple[dict, int, int] | None = None
        # value is a dict another Var (a fork's) may hold too: copy it before changing it
        self.shared = False

    def copy(self) -> Var:
        v = self.value
        n = Var(v, self.attrs)
        if type(v) is dict:
            # (a fork of a bomb after `a=({1..500000})` copied 500K entries per job)
            self.shared = n.shared = True
            n.top = self.top
            if _COW_CHECK is not None:
                _COW_CHECK.append((v, list(v.items())))
        return n

    def own(self) -> Any:
        """``value``, for a change in place: a dict shared with a fork is copied first."""
        v = self.value
        if self.shared:
            self.shared = False
            if type(v) is dict:
                n = self.value = dict(v)
                t = self.top
                if t is not None and t[0] is v:
                    self.top = (n, t[1], t[2])
                return n
        return v

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return f"Var({self.value!r}, {self.attrs})"


# (dict, its items when shared) per shared array, when AGB_COW_CHECK is set in the
# environment: tests check that no shared dict changed (see cow_violations)
_COW_CHECK: list[tuple[dict, list]] | None = [] if os.environ.get("AGB_COW_CHECK") else None


def cow_violations() -> list[list]:
    """Under AGB_COW_CHECK: the items of every array dict that changed after a fork shared
    it (each should be empty: a change in place must ``own()`` the dict first)."""
    if _COW_CHECK is None:
        return []
    return [items for d, items in _COW_CHECK if list(d.items()) != items]


def array_top(var: Var, d: dict) -> int:
    """The highest index of the indexed array ``d`` (var's value), -1 when empty. Cached on
    the Var: adding keys changes the length, and unsetting an element clears the cache
    (builtin unset), so a cached answer for the same dict and length is still right."""
    t = var.top
    if t is not None and t[0] is d and t[1] == len(d):
        return t[2]
    m = max(d) if d else -1
    var.top = (d, len(d), m)
    return m


class GlobalName(str):
    """A variable name that means the global variable of that name: what a function's
    circular nameref resolves to (bash's find_global_variable_noref)."""

    __slots__ = ()


class TempScope(dict):  # type: ignore[type-arg]
    """The scope of a builtin's prefix assignments (`v=1 eval ...`): `local` and `declare`
    skip it and bind in the function's scope.  ``bltn`` marks bash's "builtin environment"
    (eval, source, unset, mapfile): a `local v` run inside adopts that scope's v in place."""

    __slots__ = ("bltn",)

    def __init__(self, bltn: bool = False) -> None:
        super().__init__()
        self.bltn = bltn

    def copy_vars(self) -> TempScope:
        n = TempScope(self.bltn)
        for k, v in self.items():
            n[k] = v.copy()
        return n


HISTORY_MAX = 1000
"""Run scripts a session remembers (``history``, snapshots); the list itself is trimmed in
batches and may briefly hold up to a tenth more."""


class _ForkScopes:
    """``ShellState.scopes`` of a lazy fork: copied from the parent's on first use, then an
    ordinary instance attribute (a non-data descriptor, like functools.cached_property).

    Not ``__getattr__``: a class that defines it gets no specialised attribute loads from
    CPython (3.11), which made every ``state.options``/``state.traps`` read a generic lookup."""

    def __get__(self, st: Any, owner: Any = None) -> Any:
        if st is None:
            return self
        d = st.__dict__
        src = d.pop("_scopes_src", None)
        if src is None:
            raise AttributeError("scopes")
        sc = d["scopes"] = _copy_scopes(src)
        return sc


# The estimate of what the shell state holds (Holdings.measure), close to CPython's own
# sizes (tracemalloc, 3.11): a scalar variable ~190 bytes beside its value's, an array
# element ~85, a function ~70 bytes per character of its text (its syntax tree) plus ~1 KiB
VAR_COST = 128
ELEM_COST = 48
FUNC_COST = 256
FUNC_PER_CHAR = 72
ITEM_COST = 57   # a str in a list (positional parameters, dirstack, history): header + pointer
CHARGE_MIN = 1024
"""A value this long is charged to the shell's Holdings wherever it is stored (shorter ones
only when they make a new variable or element: overwriting one frees as much as it takes)."""


def new_var_cost(name: str, value: str | None) -> int:
    """What a new scalar variable ``name`` holding ``value`` is charged when it is made
    (a value of CHARGE_MIN or more is charged again where it is stored)."""
    if value is None or len(value) >= CHARGE_MIN:
        return VAR_COST + len(name)
    return VAR_COST + len(name) + 50 + len(value)


def list_cost(items: Any) -> int:
    """What ``Holdings.measure`` counts for a list of these strings (``set --``, pushd)."""
    return sum(map(len, items)) + ITEM_COST * len(items)


HISTORY_SHARE = 8
"""The session's history keeps at most 1/HISTORY_SHARE of ``max_shell_bytes`` of script
text (its oldest entries go first, as past HISTORY_MAX entries): each run's script is
appended, and 1,000 scripts of 10 MB were 10 GB of host memory nothing charged."""


class Holdings:
    """What a session's shell state holds: the variables, arrays, functions, aliases, traps,
    positional parameters and history of its shell and of its live forks (subshells, jobs)
    that added something, measured (``measure``) only when what was added since the last
    measure could take it past the cap. Shared by a shell and all its forks (``fork`` copies
    the attribute). The interpreter charges every value it stores (``charge``): the run
    fails (``LimitExceeded('max_shell_bytes')``, bash's failed xmalloc) before a store that
    would pass the cap. Hand-written: nothing measures a Python object graph this cheaply
    (a walk of what the session holds is linear; tracemalloc slows every allocation)."""

    __slots__ = ("root", "forks", "known", "added")

    def __init__(self, root: ShellState) -> None:
        self.root = _weakref(root)
        self.forks: list[Any] = []  # weak references to forks that charged something
        self.known = 0   # the last measure
        self.added = 0   # bytes charged since: known + added bounds what is held now

    def charge(self, st: ShellState, nbytes: int, cap: int | None) -> None:
        """``st`` is about to hold ``nbytes`` more (its fork registers on its first charge)."""
        if st._held_by != id(st):
            self._register(st)
        a = self.added = self.added + nbytes
        if cap is not None and self.known + a > cap:
            self.settle(nbytes, cap)

    def _register(self, st: ShellState) -> None:
        st._held_by = id(st)
        if self.root() is not st:
            fs = self.forks
            fs[:] = [r for r in fs if r() is not None]
            fs.append(_weakref(st))

    def settle(self, nbytes: int, cap: int) -> None:
        """Measure; raise when what is held plus ``nbytes`` is past ``cap``."""
        total = self.measure()
        if total + nbytes > cap:
            self.known = total
            self.added = 0
            raise _shell_exceeded(nbytes, total, cap)
        self.known = total
        self.added = nbytes

    def measure(self) -> int:
        """Bytes held by the shell and its registered live forks (a fork's values shared
        with the shell are counted once)."""
        root = self.root()
        seen: set[int] = set()
        total = 0 if root is None else _state_size(root, None, seen)
        for r in list(self.forks):
            st = r()
            if st is not None:
                total += _state_size(st, root, seen)
        return total


def _scopes_of(st: ShellState) -> list[dict[str, Var]]:
    d = st.__dict__
    sc = d.get("scopes")
    return sc if sc is not None else d.get("_scopes_src") or []


def _array_size(d: dict) -> int:
    n = sum(map(_sizeof, d.values())) + ELEM_COST * len(d)
    if d and type(next(iter(d))) is str:
        n += sum(map(_sizeof, d))
    return n


def _state_size(st: ShellState, base: ShellState | None, seen: set[int]) -> int:
    """What ``st`` holds beyond what ``base`` (the shell it was forked from) holds as the
    same objects; lists and arrays in ``seen`` are not counted again."""
    total = 0
    bsc = _scopes_of(base) if base is not None else ()
    for i, sc in enumerate(_scopes_of(st)):
        ref = bsc[i] if i < len(bsc) else None
        for k, v in sc.items():
            val = v.value
            if ref is not None:
                r = ref.get(k)
                if r is not None and r.value is val:
                    continue
            if type(val) is dict:
                if id(val) in seen:
                    continue
                seen.add(id(val))
                total += VAR_COST + len(k) + _array_size(val)
            else:
                total += VAR_COST + len(k) + (_sizeof(val) if val is not None else 0)
    bf = base.functions if base is not None else {}
    for k, f in st.functions.items():
        if bf.get(k) is not f:
            total += FUNC_COST + FUNC_PER_CHAR * len(getattr(f, "source", "") or "")
    for lst in (st.history, st.positional, st.dirstack):
        if id(lst) not in seen:
            seen.add(id(lst))
            total += sum(map(_sizeof, lst)) + 8 * len(lst)
    for dct in (st.aliases, st.traps):
        if base is None or dct != (base.aliases if dct is st.aliases else base.traps):
            total += sum(map(_sizeof, dct.values())) + VAR_COST * len(dct)
    return total


def _shell_exceeded(nbytes: int, held: int, cap: int) -> LimitExceeded:
    # (built here, not in the frame that raises it: see interpreter._subst_exceeded)
    return LimitExceeded("max_shell_bytes",
                         f"xmalloc: cannot allocate {nbytes} bytes: the shell holds {held} bytes "
                         f"of variables, functions and history (max_shell_bytes: {cap})")


class ShellState:
    """Everything ``bash -c`` keeps between commands; copied (``fork``) for subshells."""

    scopes = _ForkScopes()
    _held_by = 0  # id(self) once it charged its Holdings (a fork's copy has its parent's)

    def __init__(self) -> None:
        self.holdings = Holdings(self)
        self.scopes: list[dict[str, Var]] = [{}]  # type: ignore[misc]
        # builtins turned off by `enable -n`; replaced, never mutated, so a subshell's copy
        # is its own
        self.disabled: frozenset[str] = frozenset()
        self.functions: dict[str, Any] = {}
        self.func_sources: dict[str, str] = {}
        self.aliases: dict[str, str] = {}
        self.options: dict[str, bool] = {k: False for k in SET_OPTIONS}
        self.options.update(braceexpand=True, hashall=True, **{"interactive-comments": True})
        self.shopt: dict[str, bool] = dict(SHOPT_DEFAULTS)
        self.traps: dict[str, str] = {}
        self.positional: list[str] = []
        self.arg0 = "bash"
        self.cwd = "/"
        self.dirstack: list[str] = []
        self.history: list[str] = []
        self.umask = 0o022
        self.last_status = 0
        self.last_bg_pid: int | None = None
        self.last_arg = ""
        self.hash: dict[str, str] = {}
        self.hash_hits: dict[str, int] = {}
        self.hash_path: str | None = None  # the PATH the hashed paths were found with
        self.env_cache: dict[str, str] | None = None
        self.subshell = 0

    def fork(self, lazy: bool = False) -> ShellState:
        """A copy for a subshell. ``lazy``: the variables are copied on the copy's first use
        of ``scopes``; only for a subshell that runs while this shell waits for it (``$(…)``,
        ``( … )``), since until then it sees this shell's variables as they are."""
        s = ShellState.__new__(ShellState)
        # (one copy of the attribute dict, then stores into it: cheaper than update() plus
        # attribute stores)
        sd = self.__dict__
        d = s.__dict__ = sd.copy()
        if lazy:
            src = sd.get("scopes")
            if src is not None:
                del d["scopes"]
                d["_scopes_src"] = src
            # else: self is lazy and unused itself; d already has its _scopes_src
        else:
            d.pop("_scopes_src", None)
            d["scopes"] = _copy_scopes(self.scopes)
        d["functions"] = self.functions.copy()
        d["func_sources"] = self.func_sources.copy()
        d["aliases"] = self.aliases.copy()
        d["options"] = self.options.copy()
        d["shopt"] = self.shopt.copy()
        d["traps"] = self.traps.copy()
        # (positional is replaced, never changed in place: shared)
        d["dirstack"] = self.dirstack.copy()
        d["hash"] = self.hash.copy()
        d["hash_hits"] = self.hash_hits.copy()
        d["subshell"] = self.subshell + 1
        return s

    def sync_hash(self, path: str | None) -> None:
        """bash forgets every hashed command when PATH is assigned: drop the table when
        PATH is no longer the value it was filled with."""
        if self.hash and path != self.hash_path:
            self.hash.clear()
            self.hash_hits.clear()
        self.hash_path = path

    # -- raw lookup ----------------------------------------------------------------------
    def find(self, name: str) -> Var | None:
        scopes = self.scopes
        if type(name) is GlobalName:
            return scopes[0].get(name)
        v = scopes[-1].get(name)
        if v is not None or len(scopes) == 1:
            return v
        for i in range(len(scopes) - 2, -1, -1):
            v = scopes[i].get(name)
            if v is not None:
                return v
        return None

    def find_scope(self, name: str) -> tuple[dict[str, Var] | None, Var | None]:
        if type(name) is GlobalName:
            sc = self.scopes[0]
            v = sc.get(name)
            return (sc, v) if v is not None else (None, None)
        for sc in reversed(self.scopes):
            v = sc.get(name)
            if v is not None:
                return sc, v
        return None, None

    # functions with the trace attribute (declare -ft): they inherit DEBUG and RETURN traps
    func_trace: frozenset[str] = frozenset()
    # readonly functions (readonly -f, declare -fr): cannot be redefined or unset
    func_readonly: frozenset[str] = frozenset()

    def local_index(self) -> int:
        """Index of the scope `local` binds in: the top one that is not a TempScope."""
        scopes = self.scopes
        i = len(scopes) - 1
        while i > 0 and type(scopes[i]) is not dict:
            i -= 1
        return i

    # the character type locale last in effect is C (bytes): naming a locale that does not
    # exist keeps it (Interpreter.byte_locale)
    ctype_bytes = False
    # locale names setlocale() already failed on (a set once one fails)
    locale_failed: Any = frozenset()

    # called with the nameref's name when resolving runs into a loop (the interpreter warns):
    # held weakly, as (weak reference to the shell, function). A bound method of the shell
    # that owns this state made every forked shell a reference cycle (shell -> state ->
    # method -> shell) that only the cyclic collector freed, with its fds, pipes and
    # variables: 13-88 objects per subshell or pipeline stage, and a job storm's thousands
    # of them made generation-2 collections of up to seconds at a later run's deadline
    _circ: Any = None

    @property
    def on_circular(self) -> Any:
        c = self._circ
        if c is None:
            return None
        obj = c[0]()
        return obj if obj is None or c[1] is None else c[1].__get__(obj)

    @on_circular.setter
    def on_circular(self, fn: Any) -> None:
        if fn is None:
            self._circ = None
        elif hasattr(fn, "__self__"):
            self._circ = (_weakref(fn.__self__), fn.__func__)
        else:
            self._circ = (lambda: fn, None)  # (a plain function: held as it is)

    def resolve_ref(self, name: str, depth: int = 0) -> str:
        """Follow namerefs to the final variable name (may include a subscript); ``""`` when
        the chain comes back to a name already passed (bash: "circular name reference"),
        except for a function's local reference, which then means the global variable of
        that name (a GlobalName), as in bash 5.2 (`f() { local -n ref=$1; }; f ref`)."""
        orig = name
        while depth < 10:
            v = self.find(name)
            if v is None or not (v.attrs & NAMEREF) or not isinstance(v.value, str) or not v.value:
                return name
            nxt = v.value
            if nxt == orig or nxt == name:
                if self.on_circular is not None:
                    self.on_circular(orig)
                sc, _ = self.find_scope(nxt)
                if len(self.scopes) > 1 and sc is not None and sc is not self.scopes[0]:
                    return GlobalName(nxt)
                return ""
            name = nxt
            depth += 1
        return name

    def all_names(self) -> Iterator[str]:
        seen: set[str] = set()
        for sc in reversed(self.scopes):
            for k in sc:
                if k not in seen and k != "-":
                    seen.add(k)
                    yield k

    def visible(self) -> dict[str, Var]:
        out: dict[str, Var] = {}
        for sc in self.scopes:
            out.update(sc)
        out.pop("-", None)  # `local -` bookkeeping, not a variable
        return out

    def environ(self) -> dict[str, str]:
        """The exported variables as a dict (cached until an exported variable changes), in
        the order bash builds a child's environment: temporary (``VAR=x cmd``) and
        function-local variables first, innermost scope first, then the global table in
        hash-bucket order (1024 buckets, newest first within one), which is what ``env``
        and ``printenv`` show."""
        env = self.env_cache
        if env is None:
            env = ShellEnv()
            scopes = self.scopes
            seen: set[str] = {"-"}  # `local -` bookkeeping, not a variable
            for sc in reversed(scopes[1:]):
                for k, v in sc.items():
                    if k in seen:
                        continue
                    seen.add(k)
                    if v.attrs & EXPORT and v.value is not None and type(v.value) is not dict:
                        env[k] = v.value  # bash does not export arrays
            glob = scopes[0]
            names = [k for k, v in glob.items() if k not in seen and v.attrs & EXPORT
                     and v.value is not None and type(v.value) is not dict]
            order = sorted(range(len(names)), key=lambda i: (_env_bucket(names[i]), -i))
            for i in order:
                env[names[i]] = glob[names[i]].value  # type: ignore[assignment]
            self.env_cache = env
        return env

    def dash_flags(self) -> str:
        letters = {LETTER_TO_OPTION[c] for c in DASH_ORDER if c in LETTER_TO_OPTION}
        out = [c for c in DASH_ORDER if (c in LETTER_TO_OPTION and self.options.get(LETTER_TO_OPTION[c]))
               or (c == "i" and getattr(self, "interactive", False))]
        _ = letters
        # the mode letter: c for `bash -c` (every run), s when reading stdin, none for a file
        return "".join(out) + getattr(self, "dash_mode", "c")


class ShellEnv(dict):  # type: ignore[type-arg]
    """The environment the shell hands a command (commands it starts see ``$_`` too)."""

    __slots__ = ()


def _copy_scopes(scopes: list[dict[str, Var]]) -> list[dict[str, Var]]:
    return [{k: v.copy() for k, v in sc.items()} if type(sc) is dict else sc.copy_vars()  # type: ignore[attr-defined]
            for sc in scopes]


_BUCKETS: dict[str, int] = {}


def _env_bucket(name: str) -> int:
    """The bucket of ``name`` in bash's 1024-bucket variable table (memoised: the
    environment is rebuilt after every change to an exported variable)."""
    b = _BUCKETS.get(name)
    if b is None:
        if len(_BUCKETS) > 4096:
            _BUCKETS.clear()
        b = _BUCKETS[name] = _bash_hash(name) & 1023
    return b


def _bash_hash(s: str) -> int:
    """bash's hash_string (FNV-1, 32 bit) over the UTF-8 bytes of a key (as signed chars:
    a byte past 0x7f is sign-extended before the XOR)."""
    i = 2166136261
    for c in s.encode("utf-8", "surrogateescape"):
        i = (i * 16777619) & 0xFFFFFFFF
        i ^= c if c < 128 else c | 0xFFFFFF00
    return i


def assoc_keys(d: dict[str, str]) -> list[str]:
    """Keys of an associative array in bash's iteration order: by hash bucket (1024 buckets,
    growing x4 past 2 entries per bucket), newest first within a bucket."""
    n = len(d)
    if n < 2:
        return list(d)
    nb = 1024
    while n >= nb * 2:
        nb *= 4
    mask = nb - 1
    keyed = [((_bash_hash(k) & mask), -i, k) for i, k in enumerate(d)]
    keyed.sort()
    return [k for _, _, k in keyed]


def hash_order(keys: list[str], buckets: int = 256) -> list[str]:
    """bash's hashed-command table order (FILENAME_HASH_BUCKETS = 256), newest first per bucket."""
    mask = buckets - 1
    keyed = [((_bash_hash(k) & mask), -i, k) for i, k in enumerate(keys)]
    keyed.sort()
    return [k for _, _, k in keyed]
