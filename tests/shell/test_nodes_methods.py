"""The AST node classes' shared methods (nodes._Node) behave as @dataclass(frozen=True) would,
and importing the module generates none of dataclasses' methods from source."""

from __future__ import annotations

import copy
import dataclasses
import pickle
import subprocess
import sys

import pytest

from agentic_bash.shell import nodes as N

CLASSES = [c for c in vars(N).values()
           if isinstance(c, type) and c.__module__ == N.__name__ and dataclasses.is_dataclass(c)]


def _sample(cls: type, seed: str) -> object:
    args = []
    for i, f in enumerate(f for f in dataclasses.fields(cls) if f.init):
        args.append(f"{seed}{i}")
    return cls(*args)


def _reference(cls: type) -> type:
    """The same fields as a real frozen dataclass (what the node classes were)."""
    return dataclasses.make_dataclass(
        cls.__name__, [(f.name, Any_, dataclasses.field(default=f.default, init=f.init,
                                                       repr=f.repr, compare=f.compare))
                       for f in dataclasses.fields(cls)], frozen=True)


Any_ = object


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_node_methods_are_a_frozen_dataclass(cls: type) -> None:
    ref = _reference(cls)
    a, b, c = _sample(cls, "x"), _sample(cls, "x"), _sample(cls, "y")
    ra, rc = _sample(ref, "x"), _sample(ref, "y")
    assert repr(a) == repr(ra).replace(ref.__qualname__, cls.__qualname__, 1)
    assert (a == b, a == c, a != c) == (ra == _sample(ref, "x"), ra == rc, ra != rc)
    assert hash(a) == hash(b) and a is not b
    assert a != ra   # another class, even with the same fields
    first = dataclasses.fields(cls)[0].name
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(a, first, "other")
    with pytest.raises(dataclasses.FrozenInstanceError):
        delattr(a, first)
    with pytest.raises(AttributeError):   # (no such slot)
        a.not_a_field = 1   # type: ignore[attr-defined]
    for back in (pickle.loads(pickle.dumps(a)), copy.deepcopy(a), copy.copy(a)):
        assert type(back) is cls and back == a and repr(back) == repr(a)
    assert dataclasses.replace(a, **{first: "z"}) == dataclasses.replace(b, **{first: "z"}) != a
    assert cls.__doc__ and not cls.__doc__.startswith(cls.__name__ + "(")


def test_the_plan_slot_is_neither_compared_nor_shown() -> None:
    w = N.Word((N.Lit("x"),), "x", 1)
    s, t = N.Simple((), (w,)), N.Simple((), (w,))
    object.__setattr__(s, "plan", object())
    assert s == t and hash(s) == hash(t) and "plan" not in repr(s)
    assert pickle.loads(pickle.dumps(t)).plan is None


def test_import_generates_no_dataclass_methods() -> None:
    # (dataclasses compiles each generated method from source text in every process: ~230
    # of them for these classes were a third of the zygote's import CPU)
    code = ("import dataclasses, sys, agentic_bash.shell\n"
            "assert 'agentic_bash.shell.nodes' not in sys.modules\n"
            "made = []\n"
            "orig = dataclasses._create_fn\n"
            "dataclasses._create_fn = lambda name, *a, **k: made.append(name) or orig(name, *a, **k)\n"
            "import agentic_bash.shell.nodes\n"
            "print(len(made), sorted(set(made)))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split()[0] == "0", out.stdout
