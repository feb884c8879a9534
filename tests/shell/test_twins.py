"""Node and command-context twins (nodes._fast_init, base.new_context) build what the frozen classes build."""

from __future__ import annotations

import dataclasses

import pytest

from agentic_bash.commands import base as B
from agentic_bash.shell import nodes as N
from agentic_bash.shell.parser import parse


def _classes() -> list[type]:
    return [c for c in vars(N).values()
            if isinstance(c, type) and c.__module__ == N.__name__ and dataclasses.is_dataclass(c)]


def test_every_node_class_has_a_twin_building_an_equal_frozen_node() -> None:
    classes = _classes()
    assert len(classes) > 30 and set(N.TWINS) == set(classes)
    for cls in classes:
        fields = [f for f in dataclasses.fields(cls) if f.init]
        args = [f"v{i}" for i in range(len(fields))]
        a = cls(*args)
        b = N.TWINS[cls](*args)
        assert type(a) is cls and type(b) is cls and a == b and hash(a) == hash(b), cls
        assert repr(a) == repr(b)
        for f in dataclasses.fields(cls):
            assert getattr(a, f.name) == getattr(b, f.name), (cls, f.name)
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(b, fields[0].name, "other")
    s = N.Simple((), ())  # a field with init=False gets its default, defaults apply
    assert s.plan is None and s.redirs == () and s.line == 0
    assert dataclasses.replace(N.TWINS[N.Simple]((), (), line=3), line=4) == N.Simple((), (), (), 4)


def test_parsed_trees_are_made_of_the_frozen_classes() -> None:
    tree = parse("if [ 1 -gt 3 ]; then echo y; fi; printf 'a\\n' | grep -c a; for i in 1 2; do :; done")
    seen = 0
    stack: list[object] = [tree]
    while stack:
        n = stack.pop()
        if type(n) is tuple:
            stack.extend(n)  # type: ignore[arg-type]
        elif dataclasses.is_dataclass(n):
            assert type(n).__module__ == N.__name__ and not type(n).__name__.endswith("Twin")
            seen += 1
            stack.extend(getattr(n, f.name) for f in dataclasses.fields(n))
    assert seen > 20


def test_command_context_twin() -> None:
    args = ("fs", "/w", {"A": "1"}, "in", "out", "err", "budget", B.SystemInfo(), None, 0o22, "grep")
    c = B.new_context(*args)
    assert type(c) is B.CommandContext and c == B.CommandContext(*args)
    assert c.path("x") == "/w/x" and B.ctx_with(c, name="sed").name == "sed"
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.cwd = "/"  # type: ignore[misc]
