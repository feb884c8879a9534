"""``__eq__``, ``__hash__`` and ``__repr__`` of the package's frozen dataclasses, written once.

``@dataclass(frozen=True)`` generates these three for each class from source text and compiles
them in every process that imports it: ~6 ms of CPU for the 14 value classes the zygote
imports (Limits, Result, Capabilities, ...), a few per cent of a fresh process's first
sandbox (fresh15). A class declared::

    @value_methods
    @dataclass(frozen=True, slots=True, repr=False, eq=False)
    class C: ...

behaves as ``@dataclass(frozen=True, slots=True)`` would: equal when of the same class with
equal compared fields (as tuples, so ``x is x`` holds for a NaN field too), hashed as the tuple
of the fields that are hashed, shown as ``C(a=1, b='x')`` (``...`` on recursion).
tests/test_values15.py compares each class with a real frozen dataclass of its fields."""

from __future__ import annotations

import dataclasses
import operator
from typing import Any, Callable, TypeVar

from _thread import get_ident

__all__ = ["value_methods"]

T = TypeVar("T", bound=type)


def _getter(names: list[str]) -> Callable[[Any], tuple[Any, ...]]:
    """A function returning the tuple of ``names``' values (always a tuple)."""
    if len(names) >= 2:
        return operator.attrgetter(*names)
    if len(names) == 1:
        get = operator.attrgetter(names[0])
        return lambda obj: (get(obj),)
    return lambda obj: ()


def __eq__(self: Any, other: Any) -> Any:
    if other.__class__ is self.__class__:
        key = self._eq_key_
        return key(self) == key(other)
    return NotImplemented


def __hash__(self: Any) -> int:
    return hash(self._hash_key_(self))


_running: set[tuple[int, int]] = set()


def __repr__(self: Any) -> str:
    key = id(self), get_ident()
    if key in _running:
        return "..."
    _running.add(key)
    try:
        shown = ", ".join(f"{n}={getattr(self, n)!r}" for n in self._repr_names_)
        return f"{self.__class__.__qualname__}({shown})"
    finally:
        _running.discard(key)


def value_methods(cls: T) -> T:
    """Give the frozen dataclass ``cls`` (declared with ``repr=False, eq=False``) the
    ``__eq__``, ``__hash__`` and ``__repr__`` ``@dataclass(frozen=True)`` would generate."""
    params = cls.__dataclass_params__  # type: ignore[attr-defined]
    if not params.frozen or params.eq or params.repr:
        raise TypeError(f"{cls.__name__}: value_methods wants @dataclass(frozen=True, "
                        f"repr=False, eq=False)")
    own = [n for n in ("__eq__", "__hash__", "__repr__") if n in cls.__dict__]
    if own:
        raise TypeError(f"{cls.__name__} defines {', '.join(own)} itself")
    fs = dataclasses.fields(cls)
    cls._eq_key_ = _getter([f.name for f in fs if f.compare])  # type: ignore[attr-defined]
    cls._hash_key_ = _getter([f.name for f in fs  # type: ignore[attr-defined]
                              if (f.compare if f.hash is None else f.hash)])
    cls._repr_names_ = tuple(f.name for f in fs if f.repr)  # type: ignore[attr-defined]
    cls.__eq__ = __eq__  # type: ignore[method-assign]
    cls.__hash__ = __hash__  # type: ignore[method-assign]
    cls.__repr__ = __repr__  # type: ignore[method-assign]
    return cls
