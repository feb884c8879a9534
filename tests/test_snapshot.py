"""Snapshots in virtual mode: restore(snapshot()) is the identity on files and shell state."""

from __future__ import annotations

import io
import json
import os
import shlex
import shutil
import stat
import subprocess
import tarfile

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentic_bash import Mount, Sandbox, SnapshotError
from agentic_bash.snapshot import FORMAT, STATE_MEMBER, VERSION, _decompress
from agentic_bash.vfs.oci import INDEX_MEMBER

NAMES = ["a", "b", "c", "d1", "d2", "x.txt", "sub", "n o"]


# ---------------------------------------------------------------------------------- helpers
def tree_of(fs, top: str) -> dict[str, tuple]:
    """(type, permission bits, content or link target) of everything below ``top``."""
    out: dict[str, tuple] = {}

    def walk(d: str, rel: str) -> None:
        for n in sorted(fs.listdir(d)):
            p = d.rstrip("/") + "/" + n
            if p in ("/dev", "/proc"):
                continue  # device nodes are not part of a snapshot (and /dev/random differs)
            r = rel + n
            s = fs.stat(p, follow_symlinks=False)
            if stat.S_ISLNK(s.st_mode):
                out[r] = ("l", fs.readlink(p))
            elif stat.S_ISDIR(s.st_mode):
                out[r] = ("d", stat.S_IMODE(s.st_mode))
                walk(p, r + "/")
            else:
                with fs.open(p, "rb") as f:
                    out[r] = ("f", stat.S_IMODE(s.st_mode), f.read())

    walk(top, "")
    return out


def host_tree(top: str) -> dict[str, tuple]:
    out: dict[str, tuple] = {}
    for dirpath, dirnames, filenames in os.walk(top):
        rel = os.path.relpath(dirpath, top)
        rel = "" if rel == "." else rel + "/"
        for n in list(dirnames):
            p = os.path.join(dirpath, n)
            if os.path.islink(p):
                out[rel + n] = ("l", os.readlink(p))
                dirnames.remove(n)
            else:
                out[rel + n] = ("d", stat.S_IMODE(os.lstat(p).st_mode))
        for n in filenames:
            p = os.path.join(dirpath, n)
            if os.path.islink(p):
                out[rel + n] = ("l", os.readlink(p))
            else:
                with open(p, "rb") as f:
                    out[rel + n] = ("f", stat.S_IMODE(os.lstat(p).st_mode), f.read())
    return out


def make_lower(root: str, spec: list[tuple]) -> None:
    os.makedirs(root, exist_ok=True)
    for kind, rel, arg in spec:
        p = os.path.join(root, rel)
        if os.path.lexists(p) or not os.path.isdir(os.path.dirname(p)) \
                or os.path.islink(os.path.dirname(p)):
            continue
        if kind == "d":
            os.mkdir(p)
            os.chmod(p, arg)
        elif kind == "f":
            with open(p, "wb") as f:
                f.write(arg[0])
            os.chmod(p, arg[1])
        else:
            os.symlink(arg, p)
    with open(os.path.join(root, "sentinel_untouched"), "wb") as f:
        f.write(b"never changed")


paths = st.lists(st.sampled_from(NAMES), min_size=1, max_size=3).map("/".join)
lower_spec = st.lists(st.one_of(
    st.tuples(st.just("d"), paths, st.sampled_from([0o755, 0o700, 0o775])),
    st.tuples(st.just("f"), paths, st.tuples(st.binary(max_size=40), st.sampled_from([0o644, 0o600, 0o755]))),
    st.tuples(st.just("l"), paths, st.sampled_from(["a", "../x", "/usr/bin/python3", "sub/b"])),
), max_size=14)
op = st.tuples(st.sampled_from(["write", "unlink", "rename", "mkdir", "rmdir", "chmod", "symlink", "rmtree"]),
               paths, paths, st.binary(max_size=30), st.sampled_from([0o600, 0o644, 0o755, 0o700]))


def apply_op(o: tuple, real: str, fs, top: str) -> None:
    """Apply one operation to the real directory and, if it worked there, to the sandbox."""
    kind, a, b, data, mode = o
    ra, rb = os.path.join(real, a), os.path.join(real, b)
    va, vb = top + "/" + a, top + "/" + b

    def both(host, virt) -> None:
        try:
            host()
        except OSError:
            return
        virt()

    if kind == "write":
        if os.path.isdir(ra) or not os.path.isdir(os.path.dirname(ra)) or os.path.islink(ra):
            return

        def vw() -> None:
            with fs.open(va, "wb", 0o644) as f:
                f.write(data)

        def hw() -> None:
            with open(ra, "wb") as f:
                f.write(data)
        both(hw, vw)
    elif kind == "unlink":
        if os.path.lexists(ra) and not (os.path.isdir(ra) and not os.path.islink(ra)):
            both(lambda: os.unlink(ra), lambda: fs.unlink(va))
    elif kind == "rename":
        if os.path.lexists(ra) and not os.path.lexists(rb) and os.path.isdir(os.path.dirname(rb)) \
                and not (rb + "/").startswith(ra + "/") and not os.path.islink(os.path.dirname(rb)):
            both(lambda: os.rename(ra, rb), lambda: fs.rename(va, vb))
    elif kind == "mkdir":
        if not os.path.lexists(ra) and os.path.isdir(os.path.dirname(ra)) \
                and not os.path.islink(os.path.dirname(ra)):
            both(lambda: os.mkdir(ra), lambda: fs.mkdir(va))
    elif kind == "rmdir":
        if os.path.isdir(ra) and not os.path.islink(ra) and not os.listdir(ra):
            both(lambda: os.rmdir(ra), lambda: fs.rmdir(va))
    elif kind == "rmtree":
        if os.path.isdir(ra) and not os.path.islink(ra):
            shutil.rmtree(ra)
            _vrmtree(fs, va)
    elif kind == "chmod":
        if os.path.lexists(ra) and not os.path.islink(ra):
            both(lambda: os.chmod(ra, mode), lambda: fs.chmod(va, mode))
    elif kind == "symlink":
        if not os.path.lexists(ra) and os.path.isdir(os.path.dirname(ra)) \
                and not os.path.islink(os.path.dirname(ra)):
            both(lambda: os.symlink(b, ra), lambda: fs.symlink(b, va))


def _vrmtree(fs, p: str) -> None:
    s = fs.stat(p, follow_symlinks=False)
    if stat.S_ISDIR(s.st_mode):
        for n in fs.listdir(p):
            _vrmtree(fs, p + "/" + n)
        fs.rmdir(p)
    else:
        fs.unlink(p)


values = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=12)
shell_state = st.fixed_dictionaries({
    "vars": st.dictionaries(st.sampled_from(["V1", "V2", "V3", "lower_v"]), values, max_size=3),
    "exported": st.lists(st.sampled_from(["V1", "V2", "E1"]), max_size=2),
    "array": st.lists(values, max_size=4),
    "assoc": st.dictionaries(st.sampled_from(["k", "key two", "x"]), values, max_size=3),
    "func": st.sampled_from(["", "f() { echo f \"$@\"; }", "g() { local x=1; for i in 1 2; do echo $i; done; }"]),
    "options": st.lists(st.sampled_from(["-o pipefail", "-u", "-e", "-o noglob", "-f"]), max_size=2, unique=True),
    "shopt": st.lists(st.sampled_from(["nullglob", "dotglob", "extglob", "expand_aliases"]), max_size=2, unique=True),
    "trap": st.sampled_from(["", "trap 'echo bye' EXIT", "trap 'echo usr' USR1"]),
    "alias": st.sampled_from(["", "alias ll='ls -l'"]),
    "dirs": st.lists(st.sampled_from(["/tmp", "/", "/workspace"]), max_size=2),
    "cd": st.sampled_from(["/tmp", "/workspace", "/"]),
    "umask": st.sampled_from(["022", "077", "002"]),
})


def state_script(s: dict) -> str:
    q = shlex.quote
    lines = [f"{k}={q(v)}" for k, v in s["vars"].items()]
    lines += [f"export {k}" for k in s["exported"]]
    lines.append("arr=(" + " ".join(q(v) for v in s["array"]) + ")")
    lines.append("declare -A m=(" + " ".join(f"[{q(k)}]={q(v)}" for k, v in s["assoc"].items()) + ")")
    for d in s["dirs"]:
        lines.append(f"pushd {d} >/dev/null")
    lines.append(f"cd {s['cd']}")
    lines.append(f"umask {s['umask']}")
    for x in (s["func"], s["trap"], s["alias"]):
        if x:
            lines.append(x)
    for o in s["shopt"]:
        lines.append(f"shopt -s {o}")
    for o in s["options"]:
        lines.append(f"set {o}")
    return "\n".join(lines) + "\n"


def comparable(state: dict) -> dict:
    state = dict(state)
    state.pop("history", None)   # the restored session did not type the commands
    return state


# ---------------------------------------------------------------------------------- properties
@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(spec=lower_spec, ops=st.lists(op, max_size=14), shell=shell_state)
def test_restore_of_snapshot_is_identity(tmp_path_factory, spec, ops, shell):
    base = tmp_path_factory.mktemp("snap")
    lower = str(base / "lower")
    real = str(base / "real")
    make_lower(lower, spec)
    shutil.copytree(lower, real, symlinks=True)
    mounts = {"/workspace": Mount(lower, "cow")}
    with Sandbox(isolation="virtual", mounts=mounts) as sb:
        fs = sb._ex.fs
        for o in ops:
            apply_op(o, real, fs, "/workspace")
        # the overlay over the lower equals a flattened copy that got the same operations
        assert tree_of(fs, "/workspace") == host_tree(real)
        r = sb.run(state_script(shell))
        assert r.exit_code == 0, r.stderr
        sb.run("echo tmpfile > /tmp/t; mkdir -p ~/.cfg; ln -sf /usr/bin/python3 ~/.cfg/py")
        data = sb.snapshot()
        before_tree = tree_of(fs, "/")
        before_state = comparable(sb.get_state())
    check_layer(data, lower)
    with Sandbox.from_snapshot(data, isolation="virtual", mounts=mounts) as sb2:
        assert tree_of(sb2._ex.fs, "/") == before_tree
        assert comparable(sb2.get_state()) == before_state
    # and into an existing session, replacing what it had
    with Sandbox(isolation="virtual", mounts=mounts) as sb3:
        sb3.run("echo junk > /workspace/junk; junkvar=1; cd /")
        sb3.restore(data)
        assert tree_of(sb3._ex.fs, "/") == before_tree
        assert comparable(sb3.get_state()) == before_state
    assert host_tree(lower) == _fresh_lower(spec, str(base / "again"))  # the lower is untouched


def _fresh_lower(spec: list[tuple], root: str) -> dict:
    make_lower(root, spec)
    return host_tree(root)


def check_layer(data: bytes, lower: str) -> None:
    """OCI image-spec layer rules: tar readable by GNU tar, whiteouts name a lower entry and
    share no name with an entry of the layer, opaque markers sit in directories of the layer,
    unchanged lower files are not in it, the state member is there."""
    data = _decompress(data)   # (the default snapshot is tar+zstd: see test_default_snapshot_is_tar_zstd)
    p = subprocess.run(["tar", "tf", "-"], input=data, capture_output=True)
    assert p.returncode == 0, p.stderr
    names = [n.rstrip("/") for n in p.stdout.decode().splitlines()]
    assert STATE_MEMBER in names
    entries = set(names)
    for n in names:
        d, _, base = n.rpartition("/")
        if base == ".wh..wh..opq":
            assert d in entries
        elif base.startswith(".wh."):
            target = (d + "/" if d else "") + base[4:]
            assert target not in entries, f"whiteout and entry for {target}"
            if target.startswith("workspace/"):
                assert os.path.lexists(os.path.join(lower, target[len("workspace/"):])), target
    assert "workspace/sentinel_untouched" not in entries
    tf = tarfile.open(fileobj=io.BytesIO(data))
    state = json.loads(tf.extractfile(STATE_MEMBER).read())
    assert state["format"] == FORMAT and state["version"] == VERSION
    assert state["mounts"]["/workspace"]["mode"] == "cow"


# ---------------------------------------------------------------------------------- examples
def test_snapshot_contents_and_state_member():
    with Sandbox(isolation="virtual") as sb:
        sb.run("export TOKEN=secret A=1; mkdir -p d; echo x > d/f; chmod 600 d/f; ln -s d/f l; cd d")
        data = sb.snapshot(exclude_env=["TOKEN"])
    tf = tarfile.open(fileobj=io.BytesIO(_decompress(data)))
    m = {t.name: t for t in tf.getmembers()}
    assert m["workspace/d/f"].mode == 0o600 and m["workspace/l"].issym()
    assert m["workspace/l"].linkname == "d/f"
    state = json.loads(tf.extractfile(STATE_MEMBER).read())
    assert state["excluded_env"] == ["TOKEN"] and "TOKEN" not in state["shell"]["vars"]
    assert state["shell"]["cwd"] == "/workspace/d" and state["isolation"] == "virtual"
    assert b"secret" not in _decompress(data)
    with Sandbox.from_snapshot(data, isolation="virtual") as sb2:
        r = sb2.run('echo "[$TOKEN] $A"; pwd; cat f')
        assert r.stdout == "[] 1\n/workspace/d\nx\n"


def test_deleted_lower_file_is_a_whiteout_and_replaced_dir_opaque(tmp_path):
    (tmp_path / "gone.txt").write_text("x")
    (tmp_path / "dir").mkdir()
    (tmp_path / "dir" / "old").write_text("o")
    with Sandbox(isolation="virtual", mounts={"/workspace": Mount(str(tmp_path))}) as sb:
        r = sb.run("rm gone.txt; rm -r dir; mkdir dir; echo n > dir/new")
        assert "/workspace/gone.txt" in r.files_deleted
        data = sb.snapshot()
    names = tarfile.open(fileobj=io.BytesIO(_decompress(data))).getnames()
    assert "workspace/.wh.gone.txt" in names
    assert "workspace/dir/.wh..wh..opq" in names or "workspace/dir/.wh.old" in names
    with Sandbox.from_snapshot(data, isolation="virtual",
                               mounts={"/workspace": Mount(str(tmp_path))}) as sb2:
        assert sb2.run("ls; ls dir").stdout == "dir\ndir/\n".replace("dir/\n", "new\n")
    assert (tmp_path / "gone.txt").exists()


def test_snapshot_to_path_is_atomic_and_fileobj_streams(tmp_path):
    with Sandbox(isolation="virtual") as sb:
        sb.run("echo hi > f")
        out = tmp_path / "s.tar"
        assert sb.snapshot(str(out)) is None
        buf = io.BytesIO()
        sb.snapshot(buf)
        names = tarfile.open(fileobj=io.BytesIO(_decompress(buf.getvalue()))).getnames()
        assert names == tarfile.open(fileobj=io.BytesIO(_decompress(out.read_bytes()))).getnames() \
            == [STATE_MEMBER, INDEX_MEMBER, "workspace", "workspace/f"]
        assert [p.name for p in tmp_path.iterdir()] == ["s.tar"]  # no temp file left
        sb.run("echo changed > f")
        sb.restore(str(out))
        assert sb.run("cat f").stdout == "hi\n"
        sb.restore(io.BytesIO(out.read_bytes()))
        assert sb.read_file("f") == b"hi\n"


def test_gzipped_snapshot_restores():
    import gzip
    with Sandbox(isolation="virtual") as sb:
        sb.run("echo z > z; Z=1")
        data = gzip.compress(sb.snapshot(compression=None))
    with Sandbox.from_snapshot(data, isolation="virtual") as sb2:
        assert sb2.run("cat z; echo $Z").stdout == "z\n1\n"


def test_reset_drops_layer_and_state_back_to_constructor_options():
    with Sandbox(isolation="virtual", env={"KEEP": "k"}, workdir="/srv/w") as sb:
        sb.run("echo x > f; cd /tmp; X=1; export KEEP=changed; f() { :; }; rm /etc/hostname")
        sb.reset()
        r = sb.run('pwd; ls; echo "[$X] $KEEP"; type f; cat /etc/hostname')
        assert r.stdout == "/srv/w\n[] k\nsandbox\n"
        assert "f: not found" in r.stderr


def test_reset_after_from_snapshot_drops_restored_contents():
    with Sandbox(isolation="virtual") as sb:
        sb.run("echo x > f; V=1")
        data = sb.snapshot()
    with Sandbox.from_snapshot(data, isolation="virtual") as sb2:
        assert sb2.exists("f")
        sb2.reset()
        assert not sb2.exists("f") and sb2.run("echo [$V]").stdout == "[]\n"


def test_reset_is_constant_time_in_tree_size():
    import time

    def cost(n: int) -> float:
        with Sandbox(isolation="virtual") as sb:
            fs = sb._ex.fs
            for i in range(n):
                with fs.open(f"/workspace/f{i}", "wb") as f:
                    f.write(b"x")
            best = 1e9
            for _ in range(5):
                with fs.open("/workspace/marker", "wb") as f:
                    f.write(b"x")
                t = time.perf_counter()
                sb.reset()
                best = min(best, time.perf_counter() - t)
            assert not sb.exists("/workspace/f0")
            return best

    small, large = cost(10), cost(20000)
    assert large < max(small * 20, 0.01)  # loose: it must not walk 20000 entries


def test_entries_in_read_only_mount_are_refused_naming_them(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    with Sandbox(isolation="virtual") as sb:
        sb.run("mkdir -p /data && echo x > /data/a && echo y > /data/b && echo w > w")
        data = sb.snapshot()
    with Sandbox(isolation="virtual", mounts={"/data": Mount(str(ro), "ro")}) as sb2:
        sb2.run("echo keep > k; K=1")
        with pytest.raises(SnapshotError) as ei:
            sb2.restore(data)
        assert "/data/a" in str(ei.value) and "/data/b" in str(ei.value)
        assert sb2.run("cat k; echo $K").stdout == "keep\n1\n"  # nothing changed
        assert not sb2.exists("w")
    assert list(ro.iterdir()) == []


def test_state_json_versions():
    with Sandbox(isolation="virtual") as sb:
        sb.run("A=1")
        buf = io.BytesIO(sb.snapshot(compression=None))
    tf = tarfile.open(fileobj=buf)
    state = json.loads(tf.extractfile(STATE_MEMBER).read())
    state["version"] = VERSION + 1
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as w:
        body = json.dumps(state).encode()
        ti = tarfile.TarInfo(STATE_MEMBER)
        ti.size = len(body)
        w.addfile(ti, io.BytesIO(body))
    with Sandbox(isolation="virtual") as sb2:
        sb2.run("B=2")
        with pytest.raises(SnapshotError, match="newer"):
            sb2.restore(out.getvalue())
        assert sb2.run("echo $B").stdout == "2\n"


def test_plain_layer_without_state_restores_files_and_fresh_state():
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as w:
        ti = tarfile.TarInfo("workspace/plain")
        ti.size = 2
        w.addfile(ti, io.BytesIO(b"p\n"))
    with Sandbox(isolation="virtual") as sb:
        sb.run("cd /tmp; X=1")
        sb.restore(out.getvalue())
        assert sb.run('pwd; cat plain; echo "[$X]"').stdout == "/workspace\np\n[]\n"


def test_hundred_thousand_entries_restore():
    from agentic_bash.vfs import oci

    out = io.BytesIO()
    tw = oci._TarWriter(out)
    tw.add("workspace/many", oci.DIRTYPE, 0o755)
    for i in range(100):
        tw.add(f"workspace/many/d{i}", oci.DIRTYPE, 0o755)
        for j in range(999):
            tw.add(f"workspace/many/d{i}/f{j}", oci.REGTYPE, 0o644, data=b"x")
    tw.close()
    data = out.getvalue()
    with Sandbox.from_snapshot(data, isolation="virtual") as sb:
        assert len(sb.list_files("/workspace/many/d99")) == 999
        assert sb.read_file("/workspace/many/d42/f998") == b"x"
        again = sb.snapshot()
    assert tarfile.open(fileobj=io.BytesIO(_decompress(again))).getnames().count("workspace/many/d7/f5") == 1


# ------------------------------------------------------------------ issue 18: compressed, incremental
@pytest.mark.parametrize("compression,magic", [("gzip", b"\x1f\x8b"), ("zstd", b"\x28\xb5\x2f\xfd")])
def test_compressed_snapshots_restore(compression, magic):
    pytest.importorskip("zstandard") if compression == "zstd" else None
    with Sandbox(isolation="virtual") as sb:
        for i in range(200):
            sb.write_file(f"/workspace/src/f{i}.txt", f"file {i}\n" * 4)
        sb.run("cd /workspace && v=kept")
        plain = sb.snapshot(compression=None)
        data = sb.snapshot(compression=compression)
        assert data[:len(magic)] == magic
        assert len(data) < len(plain) / 10
        with Sandbox.from_snapshot(data, isolation="virtual") as s2:
            assert s2.run("cat src/f199.txt | wc -l; echo $v").stdout == "4\nkept\n"


def test_compression_is_checked():
    with Sandbox(isolation="virtual") as sb:
        with pytest.raises(ValueError):
            sb.snapshot(compression="lz4")


def test_incremental_snapshot_chain():
    with Sandbox(isolation="virtual") as sb:
        for i in range(1000):
            sb.write_file(f"/workspace/src/f{i}.txt", f"file {i}\n" * 4)
        full = sb.snapshot(compression="gzip")
        sb.run("echo changed > /workspace/src/f7.txt; rm /workspace/src/f8.txt; "
               "mkdir /workspace/new && echo n > /workspace/new/a; x=1")
        inc = sb.snapshot(parent=full, compression="gzip")
        assert len(inc) < 0.05 * len(full)
        sb.run("echo later > /workspace/src/f9.txt; rm -r /workspace/new")
        inc2 = sb.snapshot(parent=[full, inc])
        with Sandbox.from_snapshot([full, inc], isolation="virtual") as s2:
            out = s2.run("cat src/f7.txt new/a; ls src | wc -l; echo $x; ls src/f8.txt").stdout
            assert out == "changed\nn\n999\n1\n"
            s2.restore([full, inc, inc2])
            assert s2.run("cat src/f9.txt src/f7.txt; ls new 2>&1 | wc -l").stdout == "later\nchanged\n1\n"
            assert s2.run("test -e new || echo gone").stdout == "gone\n"
        with pytest.raises(SnapshotError):
            sb.snapshot(parent=inc)           # an increment alone is not the previous state
        with pytest.raises(SnapshotError):
            Sandbox.from_snapshot([full, inc2], isolation="virtual")  # not its parent


# ------------------------------------------------------------------ session 10: the default form
def _tree_session(sb, n: int = 300) -> None:
    for i in range(n):
        sb.write_file(f"/workspace/src/f{i}.txt", f"file {i}\n" * 4)
    sb.run("cd /workspace && v=kept")


def test_default_snapshot_is_tar_zstd_that_gnu_tar_reads(tmp_path):
    from agentic_bash.snapshot import MEDIA_TYPES, media_type
    with Sandbox(isolation="virtual") as sb:
        _tree_session(sb)
        data = sb.snapshot()
        assert sb.snapshot(compression="auto")[:4] == data[:4]
        plain = sb.snapshot(compression=None)
        sb.snapshot(str(tmp_path / "s.tar.zst"))
    assert data[:4] == b"\x28\xb5\x2f\xfd" and media_type(data) == MEDIA_TYPES["zstd"]
    assert media_type(plain) == MEDIA_TYPES[None] and len(data) < len(plain) / 10
    assert (tmp_path / "s.tar.zst").read_bytes()[:4] == b"\x28\xb5\x2f\xfd"
    assert tarfile.open(fileobj=io.BytesIO(_decompress(data))).getnames() == \
        tarfile.open(fileobj=io.BytesIO(plain)).getnames()
    if shutil.which("zstd"):   # the OCI tar+zstd form other tools read: zstd -dc | tar t
        z = subprocess.run(["zstd", "-dc"], input=data, capture_output=True, check=True).stdout
        p = subprocess.run(["tar", "tf", "-"], input=z, capture_output=True, check=True)
        assert "workspace/src/f299.txt" in p.stdout.decode().split()
    import gzip
    import zstandard
    # the forms earlier versions wrote: a plain tar (the old default), one-shot zstd frames
    # without a checksum and gzip (session 9's compression=), all still restored
    old = [zstandard.ZstdCompressor(level=3).compress(plain), gzip.compress(plain)]
    for src in (data, str(tmp_path / "s.tar.zst"), plain, *old):
        with Sandbox.from_snapshot(src, isolation="virtual") as s2:
            assert s2.run("cat src/f299.txt | wc -l; echo $v; pwd").stdout == "4\nkept\n/workspace\n"


def test_without_zstandard_the_default_is_gzip_without_a_warning(monkeypatch):
    import sys
    import warnings
    with Sandbox(isolation="virtual") as sb:
        _tree_session(sb, 50)
        zdata = sb.snapshot()
        monkeypatch.setitem(sys.modules, "zstandard", None)   # import zstandard -> ImportError
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            data = sb.snapshot()
            inc = sb.snapshot(parent=data)
        assert data[:2] == b"\x1f\x8b" and inc[:2] == b"\x1f\x8b"
        with pytest.raises(SnapshotError, match="zstandard"):
            sb.snapshot(compression="zstd")
        sb.run("echo later > later")
        with pytest.raises(SnapshotError, match="zstandard"):
            sb.restore(zdata)                       # refused with the reason; nothing changed
        assert sb.run("cat later; echo $v").stdout == "later\nkept\n"
        sb.restore([data, inc])
        assert sb.run("cat src/f49.txt | wc -l; test -e later || echo gone").stdout == "4\ngone\n"


@pytest.mark.parametrize("compression", ["zstd", "gzip"])
def test_compression_streams_in_bounded_memory(compression):
    """A layer past the index's buffer (64 MiB) is compressed as it is written: the Python
    heap's peak stays far below the layer's size (it held the whole tar before)."""
    import tracemalloc
    from agentic_bash.vfs import oci
    chunk = b"".join(b"%08d some text that compresses\n" % i for i in range(1 << 15))  # ~1.2 MiB
    n = oci._INDEX_MAX // len(chunk) + 8
    with Sandbox(isolation="virtual") as sb:
        for i in range(n):
            sb.write_file(f"/workspace/big/f{i}", chunk)
        sink = io.BytesIO()
        tracemalloc.start()
        try:
            sb.snapshot(sink, compression=compression)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < 16 << 20, peak
        data = sink.getvalue()
        assert len(data) < n * len(chunk) / 4
    with Sandbox.from_snapshot(data, isolation="virtual") as s2:
        assert s2.read_file(f"/workspace/big/f{n - 1}") == chunk


def test_corrupt_or_oversized_compressed_snapshots_are_refused(monkeypatch):
    import gzip
    import zstandard
    from agentic_bash import snapshot as snap
    with Sandbox(isolation="virtual") as sb:
        _tree_session(sb, 50)
        z, g = sb.snapshot(), sb.snapshot(compression="gzip")
        sb.run("echo mine > mine; v=mine")
        mid = len(z) // 2
        flipped = [z[:at] + bytes([z[at] ^ 0x55]) + z[at + 1:] for at in (mid, len(z) - 5)]  # (frame checksum)
        for bad in (z[:mid], z[:-3], z[:12] + b"x" * 64, *flipped, g[:len(g) // 2], g[:-3], g[:20] + b"x" * 64):
            with pytest.raises(SnapshotError, match="corrupt compressed snapshot"):
                sb.restore(bad)
        assert sb.run("cat mine; echo $v").stdout == "mine\nmine\n"
        # frames and members one after another are one stream (as zstd(1) and gzip(1) read them)
        raw = _decompress(z)
        two = zstandard.ZstdCompressor().compress(raw[:1000]) + zstandard.ZstdCompressor().compress(raw[1000:])
        assert _decompress(two) == raw == _decompress(gzip.compress(raw[:700]) + gzip.compress(raw[700:]))
        monkeypatch.setattr(snap, "_MAX_TAR", len(raw) - 1)   # a bomb: refused while expanding
        for data in (z, g):
            with pytest.raises(SnapshotError, match="expands past"):
                sb.restore(data)
        assert sb.run("cat mine").stdout == "mine\n"


def test_incremental_with_the_default_form_stays_small():
    with Sandbox(isolation="virtual") as sb:
        _tree_session(sb, 1000)
        full = sb.snapshot()
        sb.write_file("/workspace/src/f7.txt", b"changed\n")
        inc = sb.snapshot(parent=full)
        # (the bound; ~4.5% here: the state member, 1.3 KiB compressed, is most of it)
        assert inc[:4] == b"\x28\xb5\x2f\xfd" and len(inc) < 0.05 * len(full)
        names = tarfile.open(fileobj=io.BytesIO(_decompress(inc))).getnames()
        assert names == [STATE_MEMBER, "workspace/src/f7.txt"]
    with Sandbox.from_snapshot([full, inc], isolation="virtual") as s2:
        assert s2.run("cat src/f7.txt src/f8.txt | head -2; ls src | wc -l").stdout == "changed\nfile 8\n1000\n"
