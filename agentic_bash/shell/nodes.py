"""The frozen AST of a parsed bash script; only the parser builds it, only the interpreter walks it."""

# Conventions shared by parser and interpreter:
#
# * Every node carries ``line`` (1-based line of its first token in the source given to
#   the parser); ``LINENO`` and error messages use it.
# * A ``Word`` is a tuple of parts. Quoting is structural: ``Lit`` is *unquoted* source
#   text (backslash escapes already resolved into ``Escaped``), ``SQ``/``DQ``/``ANSIC``
#   are quoted. Brace expansion, tilde expansion, word splitting and globbing are the
#   interpreter's job and apply only to unquoted parts, exactly as in bash.
# * Arithmetic (``$(( ))``, ``(( ))``, ``for ((;;))``, array subscripts) is kept as a
#   ``Word``: bash expands it like a double-quoted string first and parses the result as
#   an arithmetic expression afterwards, so the interpreter does the same (and caches the
#   arithmetic parse by string).
# * Extglob patterns (``@(a|b)`` …) stay inside ``Lit`` text; the pattern matcher reads them.

from __future__ import annotations

import dataclasses
import operator
from dataclasses import dataclass, field
from typing import Any, Union

__all__ = [
    "ANSIC", "AndOr", "ArithCmd", "ArithFor", "ArithSub", "ArrayElem", "Assign", "Case",
    "CaseArm", "CmdSub", "Command", "Cond", "Coproc", "CondAnd", "CondBinary", "CondExpr",
    "CondNot", "CondOr", "CondUnary", "CondWord", "DQ", "Escaped", "For", "FuncDef",
    "Group", "HereDoc", "If", "Lit", "ListItem", "Param", "Part", "Pipeline", "ProcSub",
    "Redir", "SQ", "Script", "Select", "Simple", "Subshell", "While", "Word",
]


class _Node:
    """What every node class shares: a frozen value object over its slots.

    The classes below are dataclasses for their field lists (``dataclasses.fields``,
    ``replace``, the template builder's walk), but their methods are these, written once,
    instead of the ~230 functions ``@dataclass(frozen=True)`` generates from source text and
    compiles in every process that imports this module (a third of the zygote's import CPU:
    46 -> 15 ms here). Equality and hashing are those of a frozen dataclass: same class and
    equal compared fields (``_key``, set below for each class; ``Simple.plan`` is not
    compared); assigning or deleting a field raises ``FrozenInstanceError``; pickling and
    copying go through ``__getstate__``/``__setstate__``. ``__init__`` is _fast_init's."""

    __slots__ = ()
    _key: Any = None
    _shown: tuple[str, ...] = ()

    def __setattr__(self, name: str, value: Any) -> None:
        raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")

    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            key = self._key
            return key(self) == key(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._key(self))

    def __repr__(self) -> str:
        shown = ", ".join(f"{n}={getattr(self, n)!r}" for n in self._shown)
        return f"{type(self).__qualname__}({shown})"

    def __getstate__(self) -> list[Any]:
        return [getattr(self, n) for n in self.__slots__]

    def __setstate__(self, state: list[Any]) -> None:
        for n, v in zip(self.__slots__, state):
            object.__setattr__(self, n, v)



# ----------------------------------------------------------------------------- words


@dataclass(init=False, repr=False, eq=False, slots=True)
class Lit(_Node):
    """Unquoted literal text (may hold glob, brace, tilde and extglob characters)."""

    text: str


@dataclass(init=False, repr=False, eq=False, slots=True)
class Escaped(_Node):
    """A backslash-escaped character outside quotes (``\\*``): literal, never special."""

    text: str


@dataclass(init=False, repr=False, eq=False, slots=True)
class SQ(_Node):
    """Single-quoted text, verbatim."""

    text: str


@dataclass(init=False, repr=False, eq=False, slots=True)
class ANSIC(_Node):
    """``$'...'`` with its escapes already decoded."""

    text: str


@dataclass(init=False, repr=False, eq=False, slots=True)
class DQ(_Node):
    """Double-quoted text; parts are ``Lit`` (literal inside quotes), ``Param``, ``CmdSub``, ``ArithSub``."""

    parts: tuple[Part, ...]


@dataclass(init=False, repr=False, eq=False, slots=True)
class Param(_Node):
    """A parameter expansion, ``$x`` (``short=True``) or ``${...}``.

    ``name``: variable name, digit string, or one of ``@ * # ? - $ ! 0 _``.
    ``index``: the subscript word of ``${a[...]}`` (``Lit('@')``/``Lit('*')`` for all), or None.
    ``prefix``: ``''``, ``'#'`` (length) or ``'!'`` (indirection / keys / name prefixes).
    ``op``: ``''`` or one of ``:- - := = :? ? :+ + # ## % %% / // /# /% : ^ ^^ , ,, @``;
    with ``prefix='!'`` and no index, ``op`` ``'*'``/``'@'`` means ``${!prefix*}``/``${!prefix@}``.
    ``arg``: operand word (default value, pattern, offset, transform letter for ``@``).
    ``arg2``: second operand (replacement of ``/``; length of ``:``), None when absent.
    """

    name: str
    index: Word | None = None
    prefix: str = ""
    op: str = ""
    arg: Word | None = None
    arg2: Word | None = None
    short: bool = False


@dataclass(init=False, repr=False, eq=False, slots=True)
class CmdSub(_Node):
    """``$(...)`` or a backtick substitution; ``body`` is already parsed."""

    body: Script
    backtick: bool = False


@dataclass(init=False, repr=False, eq=False, slots=True)
class ArithSub(_Node):
    """``$(( expr ))``; ``expr`` is expanded like a double-quoted string, then evaluated."""

    expr: Word


@dataclass(init=False, repr=False, eq=False, slots=True)
class ProcSub(_Node):
    """``<(...)`` (``direction='<'``) or ``>(...)``."""

    direction: str
    body: Script


Part = Union[Lit, Escaped, SQ, ANSIC, DQ, Param, CmdSub, ArithSub, ProcSub]


@dataclass(init=False, repr=False, eq=False, slots=True)
class Word(_Node):
    """One shell word. ``text`` is its source text (for ``set -x``, ``declare -f``, messages)."""

    parts: tuple[Part, ...]
    text: str = ""
    line: int = 0


# ----------------------------------------------------------------------- redirections


@dataclass(init=False, repr=False, eq=False, slots=True)
class HereDoc(_Node):
    """Body of ``<<``/``<<-``: unquoted delimiters give an expandable ``body`` (``DQ``-like
    parts, no quote removal of ``'`` or ``"``), quoted ones a single ``Lit``."""

    body: Word
    quoted: bool
    strip_tabs: bool
    delimiter: str


@dataclass(init=False, repr=False, eq=False, slots=True)
class Redir(_Node):
    """One redirection.

    ``op`` is one of ``< > >> >| <> <& >& &> &>> <<< << <<-``.
    ``fd`` is the explicit left fd (``2>``) or None for the operator's default.
    ``fd_var`` is set for ``{name}>file`` (bash allocates an fd >= 10 into ``$name``).
    ``target`` is a ``Word`` (file, fd number, ``-``, here-string) or a ``HereDoc``.
    """

    op: str
    target: Word | HereDoc
    fd: int | None = None
    fd_var: str | None = None
    line: int = 0


# ---------------------------------------------------------------------------- commands


@dataclass(init=False, repr=False, eq=False, slots=True)
class ArrayElem(_Node):
    """One element of ``a=(...)``: ``[key]=value`` / ``[key]+=value`` or a bare ``value``."""

    value: Word
    key: Word | None = None
    append: bool = False


@dataclass(init=False, repr=False, eq=False, slots=True)
class Assign(_Node):
    """``name=value``, ``name+=value``, ``name[i]=value`` or ``name=(...)``."""

    name: str
    value: Word | None = None
    index: Word | None = None
    array: tuple[ArrayElem, ...] | None = None
    append: bool = False
    line: int = 0


@dataclass(init=False, repr=False, eq=False, slots=True)
class Simple(_Node):
    """A simple command: assignments, words (argv before expansion), redirections."""

    assigns: tuple[Assign, ...]
    words: tuple[Word, ...]
    redirs: tuple[Redir, ...] = ()
    line: int = 0
    # the interpreter's cached execution plan (a pure function of the fields above; set
    # once with object.__setattr__, never compared, not copied by dataclasses.replace)
    plan: Any = field(default=None, init=False, compare=False, repr=False)


@dataclass(init=False, repr=False, eq=False, slots=True)
class Pipeline(_Node):
    """``[time [-p]] [!] a | b |& c``; ``stderr_too[i]`` is True when stage i is followed by ``|&``."""

    cmds: tuple[Command, ...]
    negated: bool = False
    stderr_too: tuple[bool, ...] = ()
    timed: bool = False
    time_posix: bool = False
    line: int = 0
    # set by the parser when the pipeline's text has nothing that needs real threads or
    # time (`&`, `<( )`, coproc, timeout, wait, read -t, eval/source/sh): its in-process
    # stages may run as greenlets over in-memory pipes (shell/coop.py)
    coop: bool = False


@dataclass(init=False, repr=False, eq=False, slots=True)
class AndOr(_Node):
    """``first op1 c1 op2 c2 ...`` with ops ``&&``/``||`` evaluated left to right."""

    first: Command
    rest: tuple[tuple[str, Command], ...]
    line: int = 0


@dataclass(init=False, repr=False, eq=False, slots=True)
class ListItem(_Node):
    """One command of a list, terminated by ``;``/newline (``background=False``) or ``&``."""

    cmd: Command
    background: bool = False
    # Added by the parser (optional, printing only): the command ended with a newline rather
    # than `;`; bash keeps those newlines when it prints a `$( … )` body (declare -f).
    newline: bool = False
    # top level only: the line where the command line this item ends stops being read (its
    # newline, or the end of the here-documents read after it); 0 when it ends no line
    end_line: int = 0


@dataclass(init=False, repr=False, eq=False, slots=True)
class Script(_Node):
    """A command list: the whole script, a function/group/subshell body, a branch."""

    items: tuple[ListItem, ...]
    line: int = 0
    # a `…` body (or any substitution in a here-document): bash runs its text as written,
    # lines counted from its first line (a `$( … )` body is printed back first: one line
    # per command line)
    raw: bool = False


@dataclass(init=False, repr=False, eq=False, slots=True)
class Subshell(_Node):
    """``( list )``: ``body`` in a forked copy of the shell."""

    body: Script
    redirs: tuple[Redir, ...] = ()
    line: int = 0


@dataclass(init=False, repr=False, eq=False, slots=True)
class Coproc(_Node):
    """``coproc [NAME] command``: ``body`` runs asynchronously with its stdin and stdout
    connected to the shell through ``NAME[1]`` and ``NAME[0]`` (NAME defaults to COPROC)."""

    name: str
    body: Command
    line: int = 0


@dataclass(init=False, repr=False, eq=False, slots=True)
class Group(_Node):
    """``{ list; }``: ``body`` in the current shell."""

    body: Script
    redirs: tuple[Redir, ...] = ()
    line: int = 0


@dataclass(init=False, repr=False, eq=False, slots=True)
class If(_Node):
    """``clauses`` are (condition, body) for ``if`` and each ``elif``."""

    clauses: tuple[tuple[Script, Script], ...]
    else_body: Script | None = None
    redirs: tuple[Redir, ...] = ()
    line: int = 0


@dataclass(init=False, repr=False, eq=False, slots=True)
class While(_Node):
    """``while cond; do body; done`` (``until=True``: ``until``)."""

    cond: Script
    body: Script
    until: bool = False
    redirs: tuple[Redir, ...] = ()
    line: int = 0


@dataclass(init=False, repr=False, eq=False, slots=True)
class For(_Node):
    """``for var [in words]``; ``words=None`` means ``in "$@"``."""

    var: str
    words: tuple[Word, ...] | None
    body: Script
    redirs: tuple[Redir, ...] = ()
    line: int = 0
    end_line: int = 0  # where the parser finished it: bash names a bad var there


@dataclass(init=False, repr=False, eq=False, slots=True)
class ArithFor(_Node):
    """``for ((init; cond; step))``; an empty clause is None (an empty cond is true)."""

    init: Word | None
    cond: Word | None
    step: Word | None
    body: Script
    redirs: tuple[Redir, ...] = ()
    line: int = 0


@dataclass(init=False, repr=False, eq=False, slots=True)
class Select(_Node):
    """``select var [in words]``; ``words=None`` means ``in "$@"``."""

    var: str
    words: tuple[Word, ...] | None
    body: Script
    redirs: tuple[Redir, ...] = ()
    line: int = 0
    end_line: int = 0  # where the parser finished it: bash names a bad var there


@dataclass(init=False, repr=False, eq=False, slots=True)
class CaseArm(_Node):
    """``terminator`` is ``;;``, ``;&`` or ``;;&``."""

    patterns: tuple[Word, ...]
    body: Script
    terminator: str = ";;"


@dataclass(init=False, repr=False, eq=False, slots=True)
class Case(_Node):
    """``case word in arms esac``."""

    word: Word
    arms: tuple[CaseArm, ...]
    redirs: tuple[Redir, ...] = ()
    line: int = 0


@dataclass(init=False, repr=False, eq=False, slots=True)
class FuncDef(_Node):
    """``name() body`` / ``function name body``; ``source`` is the definition's text."""

    name: str
    body: Command
    source: str = ""
    line: int = 0


@dataclass(init=False, repr=False, eq=False, slots=True)
class ArithCmd(_Node):
    """``(( expr ))``."""

    expr: Word
    redirs: tuple[Redir, ...] = ()
    line: int = 0


# --------------------------------------------------------------------------- [[ ... ]]


@dataclass(init=False, repr=False, eq=False, slots=True)
class CondWord(_Node):
    """A lone word in ``[[ w ]]`` (true when non-empty)."""

    word: Word
    # Added by the parser (optional, printing only): how many explicit `( … )` surrounded
    # this term in the source; `declare -f` prints them back.
    paren: int = 0


@dataclass(init=False, repr=False, eq=False, slots=True)
class CondUnary(_Node):
    """``-f file``, ``-z s``, ``-v name`` …"""

    op: str
    operand: Word
    # Added by the parser (optional, printing only): how many explicit `( … )` surrounded
    # this term in the source; `declare -f` prints them back.
    paren: int = 0


@dataclass(init=False, repr=False, eq=False, slots=True)
class CondBinary(_Node):
    """``== != = < > =~ -eq -ne -lt -le -gt -ge -nt -ot -ef``.

    For ``==``/``!=``/``=`` the right word is a pattern (quoted parts match literally);
    for ``=~`` it is a regex whose quoted parts match literally.
    """

    op: str
    left: Word
    right: Word
    # Added by the parser (optional, printing only): how many explicit `( … )` surrounded
    # this term in the source; `declare -f` prints them back.
    paren: int = 0


@dataclass(init=False, repr=False, eq=False, slots=True)
class CondNot(_Node):
    """``! expr`` inside ``[[ ]]``."""

    expr: CondExpr
    # Added by the parser (optional, printing only): how many explicit `( … )` surrounded
    # this term in the source; `declare -f` prints them back.
    paren: int = 0


@dataclass(init=False, repr=False, eq=False, slots=True)
class CondAnd(_Node):
    """``left && right`` inside ``[[ ]]``."""

    left: CondExpr
    right: CondExpr
    # Added by the parser (optional, printing only): how many explicit `( … )` surrounded
    # this term in the source; `declare -f` prints them back.
    paren: int = 0


@dataclass(init=False, repr=False, eq=False, slots=True)
class CondOr(_Node):
    """``left || right`` inside ``[[ ]]``."""

    left: CondExpr
    right: CondExpr
    # Added by the parser (optional, printing only): how many explicit `( … )` surrounded
    # this term in the source; `declare -f` prints them back.
    paren: int = 0


CondExpr = Union[CondWord, CondUnary, CondBinary, CondNot, CondAnd, CondOr]


@dataclass(init=False, repr=False, eq=False, slots=True)
class Cond(_Node):
    """``[[ expr ]]``."""

    expr: CondExpr
    redirs: tuple[Redir, ...] = ()
    line: int = 0


Command = Union[
    Simple, Pipeline, AndOr, Subshell, Group, If, While, For, ArithFor, Select, Case,
    FuncDef, ArithCmd, Cond, Coproc,
]


_FIELDS: dict[type, tuple[str, ...]] = {}


def shift_lines(node: object, delta: int) -> object:
    """A copy of ``node`` with every non-zero ``line`` / ``end_line`` moved by ``delta``
    (bash numbers the commands of a ``$( … )`` from the line of the command running it)."""
    if delta == 0:
        return node
    t = type(node)
    if t is tuple:
        return tuple(shift_lines(x, delta) for x in node)  # type: ignore[attr-defined]
    names = _FIELDS.get(t)
    if names is None:
        if not hasattr(t, "__dataclass_fields__"):
            return node
        names = _FIELDS[t] = tuple(t.__dataclass_fields__)  # type: ignore[attr-defined]
    changes = {}
    for name in names:
        v = getattr(node, name)
        if name in ("line", "end_line"):
            if v:
                changes[name] = v + delta
        elif type(v) is tuple or hasattr(type(v), "__dataclass_fields__"):
            nv = shift_lines(v, delta)
            if nv is not v:
                changes[name] = nv
    if not changes:
        return node
    new = object.__new__(t)
    for name in names:
        object.__setattr__(new, name, changes.get(name, getattr(node, name)))
    return new


def _fast_init(cls: type) -> None:
    """Give a frozen slotted node class a fast ``__init__`` and a twin (TWINS[cls]): a
    mutable class with the same slots whose ``__init__`` stores each field with a plain
    attribute store and then makes the object a ``cls`` (the layouts are the same, so
    ``__class__`` may be assigned). The ``__init__`` dataclass generates calls
    ``object.__setattr__`` per field, and a slot descriptor's ``__set__`` called per field
    costs a method-wrapper call each: building a new line's nodes (shell/template.py calls
    the twins directly) was a tenth of running it. ``cls``'s own ``__init__`` turns the
    new object into the twin for the stores. Same signature and defaults; the node stays
    frozen (its own ``__setattr__`` still refuses).

    (fresh15) The two ``__init__`` are compiled at the class's first construction (or by
    ``compile_inits()``, the zygote's deferred step), not at import: compiling all 76 was
    ~4.5 ms of the zygote's start, and a first command builds a handful of the classes."""
    # (a _Node too, for the layouts to match; its stores are object's own)
    twin = type(cls.__name__ + "Twin", (_Node,), {
        "__slots__": cls.__slots__, "__module__": __name__,  # type: ignore[attr-defined]
        "__setattr__": object.__setattr__, "__delattr__": object.__delattr__})
    TWINS[cls] = twin

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        _compile_init(cls, twin)
        cls.__init__(self, *args, **kwargs)  # type: ignore[misc]

    def twin_init(self: Any, *args: Any, **kwargs: Any) -> None:
        _compile_init(cls, twin)
        twin.__init__(self, *args, **kwargs)  # type: ignore[misc]

    __init__.__qualname__ = f"{cls.__qualname__}.__init__"
    cls.__init__ = __init__  # type: ignore[misc]
    twin.__init__ = twin_init  # type: ignore[misc]
    _LAZY_INIT[cls] = twin


def _compile_init(cls: type, twin: type) -> None:
    """The real ``__init__`` of ``cls`` and of its twin, generated from the field list."""
    ns: dict[str, Any] = {"_cls": cls, "_osa": object.__setattr__, "_twin": twin}
    params: list[str] = []
    body: list[str] = []
    for f in dataclasses.fields(cls):
        if f.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
            raise TypeError(f"{cls.__name__}.{f.name}: default_factory is not supported here")
        if not f.init:
            ns[f"_d_{f.name}"] = f.default
            body.append(f"    self.{f.name} = _d_{f.name}")
            continue
        if f.default is dataclasses.MISSING:
            params.append(f.name)
        else:
            ns[f"_d_{f.name}"] = f.default
            params.append(f"{f.name}=_d_{f.name}")
        body.append(f"    self.{f.name} = {f.name}")
    sig = ", ".join(["self"] + params)
    stores = "\n".join(body) + "\n"
    src = (f"def twin_init({sig}):\n{stores}    self.__class__ = _cls\n"
           f"def __init__({sig}):\n    _osa(self, '__class__', _twin)\n{stores}    self.__class__ = _cls\n")
    exec(src, ns)  # noqa: S102 - generated from the class's own field list, as dataclasses does
    twin.__init__ = ns["twin_init"]  # type: ignore[misc]
    init = ns["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    cls.__init__ = init  # type: ignore[misc]
    _LAZY_INIT.pop(cls, None)


def compile_inits() -> None:
    """Compile every node class's ``__init__`` not compiled yet (the zygote does it once it
    is ready, so the sandboxes it forks later share them)."""
    for cls, twin in list(_LAZY_INIT.items()):
        _compile_init(cls, twin)


_LAZY_INIT: dict[type, type] = {}
TWINS: dict[type, type] = {}
"""Each node class's twin (see _fast_init): ``TWINS[Lit]("x")`` is ``Lit("x")``, made faster."""


for _cls in list(globals().values()):
    if isinstance(_cls, type) and _cls.__module__ == __name__ and dataclasses.is_dataclass(_cls):
        _fast_init(_cls)
        _fs = dataclasses.fields(_cls)
        _cls._key = operator.attrgetter(*[f.name for f in _fs if f.compare])
        _cls._shown = tuple(f.name for f in _fs if f.repr)
del _cls, _fs
