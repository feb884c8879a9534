"""Unit tests of interpreter internals: field splitting, read splitting, assoc order, streams."""

from __future__ import annotations

import threading

import pytest

from agentic_bash.shell.builtins import _split_read
from agentic_bash.shell.expand import _Fields, _field_text
from agentic_bash.shell.state import ShellState, Var, assoc_keys
from agentic_bash.shell.streams import Capture, Pipe


def _split(ifs, *chunks):
    fb = _Fields(ifs)
    for kind, text in chunks:
        {"lit": fb.lit, "q": fb.q, "split": fb.split}[kind](text)
    return [_field_text(c) for c, _q in fb.finish()]


@pytest.mark.parametrize("ifs,chunks,want", [
    (None, [("split", "  a  b ")], ["a", "b"]),
    (None, [("lit", "["), ("split", " a b "), ("lit", "]")], ["[", "a", "b", "]"]),
    (":", [("split", "a::b")], ["a", "", "b"]),
    (":", [("split", "a:")], ["a"]),
    (":", [("split", ":a")], ["", "a"]),
    (" :", [("split", "a : b")], ["a", "b"]),
    ("", [("split", "a b")], ["a b"]),
    (None, [("q", "")], [""]),
    (None, [("split", "")], []),
    (None, [("split", "a "), ("q", "")], ["a", ""]),
])
def test_field_splitting(ifs, chunks, want):
    assert _split(ifs, *chunks) == want


@pytest.mark.parametrize("line,n,ifs,want", [
    ("a b c", 2, None, ["a", "b c"]),
    ("  a  ", 1, None, ["a"]),
    ("1:2:3", 2, ":", ["1", "2:3"]),
    ("x:", 1, ":", ["x"]),
    ("a\\ b c", 2, None, ["a b", "c"]),
])
def test_read_splitting(line, n, ifs, want):
    assert _split_read(line, n, ifs, False) == want


def test_assoc_order_matches_bash():
    d = {k: "1" for k in ("x", "y", "z", "foo", "bar")}
    assert assoc_keys(d) == ["z", "y", "x", "foo", "bar"]
    assert assoc_keys({"a": "", "b": "", "c": ""}) == ["c", "b", "a"]


def test_state_fork_is_deep_for_values():
    st = ShellState()
    st.scopes[0]["a"] = Var({0: "x"})
    child = st.fork()
    # copy-on-write: the fork shares the dict until one side owns it
    assert child.scopes[0]["a"].value is st.scopes[0]["a"].value
    child.scopes[0]["a"].own()[1] = "y"
    assert st.scopes[0]["a"].value == {0: "x"}
    st.scopes[0]["a"].own()[2] = "z"
    assert child.scopes[0]["a"].value == {0: "x", 1: "y"}
    assert st.scopes[0]["a"].value == {0: "x", 2: "z"}
    assert child.subshell == st.subshell + 1


def test_capture_truncates_visibly():
    c = Capture(limit=10)
    c.write(b"0123456789abc")
    assert c.truncated
    out = c.getvalue()
    # the first and the last half of the limit are kept (the end of a log is where errors are)
    assert out.startswith(b"01234\n") and b"truncated: 3 bytes elided" in out
    assert out.endswith(b"\n89abc")


def test_capture_threadsafe():
    c = Capture()

    def w():
        for _ in range(1000):
            c.write(b"x")

    ts = [threading.Thread(target=w) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert len(c.getvalue()) == 4000


def test_pipe_close_idempotent():
    p = Pipe()
    p.writer.write(b"hi")
    p.writer.close()
    p.writer.close()
    assert p.reader.read() == b"hi"
    p.reader.close()
    p.reader.close()
    with pytest.raises(BrokenPipeError):
        p.writer.write(b"x")
