"""OverlayFS's inode fast paths (open/stat/unlink/exists in cached directories) ≡ its general code."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentic_bash.vfs.changes import diff, snapshot_marker
from agentic_bash.vfs.memory import MemoryFS
from agentic_bash.vfs.overlay import OverlayFS

from .test_differential import apply, ops
from .test_overlay_props import build, build_ops, tree


class _General(OverlayFS):
    """The same overlay with every fast path off."""

    _cached_resolve = False

    def _upper_parent(self, path):  # noqa: ANN001, ANN202
        return None


def _tree(ov):
    check = ov.upper.check_permissions
    ov.upper.check_permissions = False  # a directory without x must not hide the rest
    try:
        return tree(ov, with_times=False)
    finally:
        ov.upper.check_permissions = check


def _under(op, root="/r"):
    """``op`` with its absolute paths moved below ``root`` (so their parents are cached)."""
    return tuple(root + a if isinstance(a, str) and a.startswith("/") else a for a in op)


def _pair(lower_ops, check, root=None):
    lower = MemoryFS(check_permissions=False)
    if root:
        lower.mkdir(root)
        lower_ops = [_under(op, root) for op in lower_ops]
    build(lower, lower_ops)
    return (OverlayFS(MemoryFS(check_permissions=check), [lower]),
            _General(MemoryFS(check_permissions=check), [lower]))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lower_ops=build_ops, pre=st.lists(ops, max_size=12), seq=st.lists(ops, max_size=30),
       check=st.booleans(), root=st.sampled_from([None, "/r"]))
def test_fast_paths_equal_general_code(lower_ops, pre, seq, check, root):
    fast, slow = _pair(lower_ops, check, root)
    if root:
        pre = [_under(op, root) for op in pre]
        seq = [_under(op, root) for op in seq]
    for op in pre:
        assert apply(fast, op) == apply(slow, op), op
    mf, ms = snapshot_marker(fast.upper), snapshot_marker(slow.upper)
    for op in seq:
        assert apply(fast, op) == apply(slow, op), op
        assert _tree(fast) == _tree(slow), op
    assert diff(mf) == diff(ms)


def test_search_permission_in_cached_directory():
    fast, slow = _pair([("mkdir", "/a")], True)
    for ov in (fast, slow):
        ov.mkdir("/a/b")
        with ov.open("/a/b/f", "wb") as f:  # fills the caches
            f.write(b"x")
        ov.stat("/a/b/f")
        ov.chmod("/a", 0o600)
    for op in (("write", "/a/b/g", "wb", b"y"), ("write", "/a/b/f", "ab", b"y"), ("read", "/a/b/f"),
               ("unlink", "/a/b/f"), ("stat", "/a/b/f"), ("exists", "/a/b/f")):
        assert apply(fast, op) == apply(slow, op), op
    assert apply(fast, ("write", "/a/b/g", "wb", b"y")) == ("errno", "EACCES")
    for ov in (fast, slow):
        ov.chmod("/a", 0o755)
    for op in (("write", "/a/b/g", "wb", b"y"), ("unlink", "/a/b/f"), ("read", "/a/b/g")):
        assert apply(fast, op) == apply(slow, op), op
    assert _tree(fast) == _tree(slow)


def test_lower_names_in_merged_directory():
    # /d is in the lower and (after a write) in the upper: a name only the lower has is
    # copied up / whited out by the general code, one nobody has is created in place
    fast, slow = _pair([("mkdir", "/d"), ("write", "/d/low", "wb", b"L")], True)
    seq = [("write", "/d/new", "wb", b"n"), ("write", "/d/new", "ab", b"m"), ("stat", "/d/low"),
           ("exists", "/d/low"), ("write", "/d/low", "ab", b"+"), ("unlink", "/d/low"),
           ("exists", "/d/low"), ("stat", "/d/low"), ("write", "/d/low", "wb", b"again"),
           ("read", "/d/low"), ("unlink", "/d/new"), ("stat", "/d/new")]
    mf, ms = snapshot_marker(fast.upper), snapshot_marker(slow.upper)
    for op in seq:
        assert apply(fast, op) == apply(slow, op), op
        assert _tree(fast) == _tree(slow), op
    assert diff(mf) == diff(ms)
    assert fast._upcache  # the fast paths were taken


def test_deep_tree_and_search_permission_through_the_shell():
    from agentic_bash import Sandbox

    with Sandbox(isolation="virtual") as sb:
        r = sb.run("mkdir -p /tmp/" + "/".join(["d"] * 300) + "; echo hi > /tmp/d/f")
        assert r.exit_code == 0 and len(r.files_created) == 301
        r = sb.run("rm -rf /tmp/d; ls /tmp/d")
        assert len(r.files_deleted) == 301 and "No such file" in r.stderr
        r = sb.run("mkdir -p /tmp/q/r; echo x > /tmp/q/r/f; chmod 600 /tmp/q; echo y > /tmp/q/r/g;"
                   " rm /tmp/q/r/f; mkdir /tmp/q/r/s; chmod 700 /tmp/q; echo z >> /tmp/q/r/f;"
                   " cat /tmp/q/r/f; ls /tmp/q/r")
        assert r.stdout == "x\nz\nf\n"
        assert r.stderr.count("Permission denied") == 3
        assert list(r.files_created) == ["/tmp/q", "/tmp/q/r", "/tmp/q/r/f"]
