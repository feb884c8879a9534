"""Hypothesis properties: overlay ≡ flattened copy, and the change journal ≡ a tree diff."""

from __future__ import annotations

import stat

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentic_bash.vfs.changes import capture, diff, snapshot_marker
from agentic_bash.vfs.host import HostFS
from agentic_bash.vfs.memory import MemoryFS
from agentic_bash.vfs.overlay import OverlayFS

from .test_differential import apply, ops, paths, targets

build_ops = st.lists(st.one_of(
    st.tuples(st.just("mkdir"), paths),
    st.tuples(st.just("write"), paths, st.just("wb"), st.binary(max_size=4)),
    st.tuples(st.just("symlink"), targets, paths),
    st.tuples(st.just("chmod"), paths, st.sampled_from([0o700, 0o755, 0o600])),
), max_size=20)

more_ops = st.one_of(
    ops,
    st.tuples(st.just("utime"), paths, st.just((5.0, 7.0))),
)


def tree(fs, path="/", with_times=False):
    out = {}
    for name in sorted(fs.listdir(path)):
        p = path.rstrip("/") + "/" + name
        s = fs.stat(p, follow_symlinks=False)
        extra = (s.st_mtime,) if with_times and not stat.S_ISDIR(s.st_mode) else ()
        if stat.S_ISLNK(s.st_mode):
            out[p] = ("l", fs.readlink(p))
        elif stat.S_ISDIR(s.st_mode):
            out[p] = ("d", stat.S_IMODE(s.st_mode))
            out.update(tree(fs, p, with_times))
        elif stat.S_ISREG(s.st_mode):
            with fs.open(p, "rb") as f:
                out[p] = ("f", stat.S_IMODE(s.st_mode), f.read(), s.st_nlink) + extra
        else:
            out[p] = ("special", s.st_mode)
    return out


def all_states(fs, path="/"):
    out = {}
    for name in fs.listdir(path):
        p = path.rstrip("/") + "/" + name
        out[p] = capture(fs, p)
        if stat.S_ISDIR(fs.stat(p, follow_symlinks=False).st_mode):
            out.update(all_states(fs, p))
    return out


def build(fs, seq):
    for op in seq:
        apply(fs, op)


SETTINGS = settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@SETTINGS
@given(lower_ops=build_ops, seq=st.lists(more_ops, max_size=25))
def test_overlay_equals_flattened(lower_ops, seq):
    lower = MemoryFS(check_permissions=False)
    flat = MemoryFS(check_permissions=False)
    build(lower, lower_ops)
    build(flat, lower_ops)
    before = tree(lower)
    ov = OverlayFS(MemoryFS(check_permissions=False), [lower])
    assert tree(ov) == before
    for op in seq:
        want = apply(flat, op)
        got = apply(ov, op)
        # nlink of a hard-linked lower file: copy-up breaks the link, like overlayfs without index
        assert got == want, op
        assert tree(ov) == tree(flat), op
    assert tree(lower) == before  # the lower is never written


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lower_ops=build_ops, seq=st.lists(more_ops, max_size=20))
def test_overlay_over_hostfs_equals_flattened(tmp_path_factory, lower_ops, seq):
    d = tmp_path_factory.mktemp("lower")
    real_lower = HostFS(str(d), writable=True)
    flat = MemoryFS(check_permissions=False)
    build(real_lower, lower_ops)
    build(flat, lower_ops)
    ov = OverlayFS(MemoryFS(check_permissions=False), [HostFS(str(d), writable=False)])
    before = tree(real_lower)
    for op in seq:
        assert apply(ov, op) == apply(flat, op), op
    assert tree(ov) == tree(flat)
    assert tree(real_lower) == before


@SETTINGS
@given(lower_ops=build_ops, pre=st.lists(more_ops, max_size=8), seq=st.lists(more_ops, max_size=20))
def test_journal_equals_tree_diff(lower_ops, pre, seq):
    lower = MemoryFS(check_permissions=False)
    build(lower, lower_ops)
    ov = OverlayFS(MemoryFS(check_permissions=False), [lower])
    build(ov, pre)
    before = {"/": capture(ov, "/"), **all_states(ov)}
    m = snapshot_marker(ov.upper)
    build(ov, seq)
    after = {"/": capture(ov, "/"), **all_states(ov)}
    ch = diff(m, ov)
    assert ch.created == sorted(p for p in after if p not in before)
    assert ch.deleted == sorted(p for p in before if p not in after)
    assert ch.modified == sorted(p for p in after if p in before and after[p] != before[p])
