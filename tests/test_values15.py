"""(fresh15) The value classes with _values.value_methods behave as @dataclass(frozen=True,
slots=True) would: repr, ==, hash, frozen, pickle/copy, replace, signature; and importing
them generates no __eq__/__hash__/__repr__ from source."""

from __future__ import annotations

import copy
import dataclasses
import importlib
import inspect
import pickle
import subprocess
import sys

import pytest

from agentic_bash._values import value_methods

MODULES = ["agentic_bash.limits", "agentic_bash.result", "agentic_bash.fileapi",
           "agentic_bash.session", "agentic_bash.streaming", "agentic_bash.isolation.probe",
           "agentic_bash.isolation.plan", "agentic_bash.isolation.report",
           "agentic_bash.isolation.cgroups", "agentic_bash.commands.base",
           "agentic_bash.network.policy", "agentic_bash.vfs.changes", "agentic_bash.vfs.base",
           "agentic_bash.packages.manifest"]


def _classes() -> list[type]:
    out = []
    for name in MODULES:
        mod = importlib.import_module(name)
        for v in vars(mod).values():
            if (isinstance(v, type) and v.__module__ == name and dataclasses.is_dataclass(v)
                    and v.__dict__.get("__eq__") is value_methods.__globals__["__eq__"]):
                out.append(v)
    return out


CLASSES = _classes()


def _reference(cls: type) -> type:
    """A real frozen slotted dataclass with the same fields (what the class was)."""
    specs = []
    for f in dataclasses.fields(cls):
        kw = dict(init=f.init, repr=f.repr, compare=f.compare, hash=f.hash,
                  kw_only=f.kw_only)
        if f.default is not dataclasses.MISSING:
            kw["default"] = f.default
        if f.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
            kw["default_factory"] = f.default_factory  # type: ignore[misc]
        specs.append((f.name, f.type, dataclasses.field(**kw)))
    return dataclasses.make_dataclass(cls.__name__, specs, frozen=True, slots=True,
                                      namespace={"__module__": cls.__module__})


def _raw(cls: type, values: dict) -> object:
    """An instance with these field values, set without __init__ (whose checks differ per
    class; the methods under test do not depend on it)."""
    obj = object.__new__(cls)
    for k, v in values.items():
        object.__setattr__(obj, k, v)
    return obj


def _values(cls: type, seed: str) -> dict:
    return {f.name: f"{seed}{i}" for i, f in enumerate(dataclasses.fields(cls))}


def test_there_are_value_classes() -> None:
    names = {c.__name__ for c in CLASSES}
    assert {"Limits", "Result", "Capabilities", "Plan", "SystemInfo", "NetworkPolicy",
            "IsolationReport", "FileInfo", "StreamEvent", "Mount"} <= names, names


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_methods_are_a_frozen_dataclass(cls: type) -> None:
    ref = _reference(cls)
    a, b, c = (_raw(cls, _values(cls, s)) for s in ("x", "x", "y"))
    ra, rb, rc = (_raw(ref, _values(cls, s)) for s in ("x", "x", "y"))
    assert repr(a) == repr(ra) and repr(c) == repr(rc)
    assert (a == b, a == c, a != c, a != b) == (ra == rb, ra == rc, ra != rc, ra != rb)
    assert hash(a) == hash(ra) == hash(b) and hash(c) == hash(rc)
    assert (a == ra, ra == a, a.__eq__(1)) == (False, False, NotImplemented)
    # one field differs at a time: equal or not as the reference says
    for f in dataclasses.fields(cls):
        v = {**_values(cls, "x"), f.name: "other"}
        assert (_raw(cls, v) == a) == (_raw(ref, v) == ra), f.name
        assert (hash(_raw(cls, v)) == hash(a)) == (hash(_raw(ref, v)) == hash(ra)), f.name
    # the same NaN object in a compared field: equal (tuples compare identity first)
    nan = float("nan")
    va = {**_values(cls, "x"), dataclasses.fields(cls)[0].name: nan}
    assert (_raw(cls, va) == _raw(cls, dict(va))) == (_raw(ref, va) == _raw(ref, dict(va)))
    # unhashable field values: the same error
    vu = {k: [v] for k, v in _values(cls, "x").items()}
    errs = []
    for k in (cls, ref):
        try:
            hash(_raw(k, vu))
            errs.append(None)
        except TypeError as e:
            errs.append(str(e))
    assert errs[0] == errs[1]
    # a repr that reaches itself
    loop: list = []
    vr = {**_values(cls, "x"), dataclasses.fields(cls)[-1].name: loop}
    ar, rr = _raw(cls, vr), _raw(ref, vr)
    loop.append(ar)
    ref_loop: list = [rr]
    object.__setattr__(rr, dataclasses.fields(cls)[-1].name, ref_loop)
    assert repr(ar) == repr(rr)
    # frozen
    first = dataclasses.fields(cls)[0].name
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(a, first, "z")
    with pytest.raises(dataclasses.FrozenInstanceError):
        delattr(a, first)
    assert not hasattr(a, "__dict__")
    # pickling and copying
    for back in (pickle.loads(pickle.dumps(a)), copy.deepcopy(a), copy.copy(a)):
        assert type(back) is cls and back == a and repr(back) == repr(a)
    # the constructor is dataclasses' own
    assert str(inspect.signature(cls)) == str(inspect.signature(ref))
    assert cls.__match_args__ == ref.__match_args__


def test_real_instances() -> None:
    from agentic_bash import Limits
    from agentic_bash.result import Result

    a, b = Limits(timeout=3), Limits(timeout=3)
    assert a == b and hash(a) == hash(b) and a != Limits(timeout=4)
    assert repr(a).startswith("Limits(timeout=3")
    assert dataclasses.replace(a, timeout=4) == Limits(timeout=4)
    assert {a: 1}[b] == 1
    r = Result(stdout_bytes=b"x", exit_code=0)
    assert r == Result(stdout_bytes=b"x") != Result(stdout_bytes=b"y")
    assert repr(r).startswith("Result(stdout_bytes=b'x', ")


def test_the_decorator_refuses_what_it_would_not_mean() -> None:
    with pytest.raises(TypeError):
        @value_methods
        @dataclasses.dataclass(frozen=True)
        class A:
            x: int = 0
    with pytest.raises(TypeError):
        @value_methods
        @dataclasses.dataclass(frozen=True, eq=False, repr=False)
        class B:
            x: int = 0

            def __repr__(self) -> str:
                return "B"


def test_import_generates_no_eq_hash_repr() -> None:
    code = ("import dataclasses\n"
            "made = []\n"
            "orig = dataclasses._create_fn\n"
            "dataclasses._create_fn = lambda name, *a, **k: made.append(name) or orig(name, *a, **k)\n"
            f"import {', '.join(MODULES)}\n"
            "print(sorted(set(made)))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    made = set(eval(out.stdout))  # noqa: S307 - our own print
    assert not made & {"__eq__", "__hash__", "__repr__"}, made
