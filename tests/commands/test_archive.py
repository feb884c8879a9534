"""Archives: tar/gzip/bzip2/xz/zip round trips, interop with the real tools, extraction safety."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import tarfile

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from harness_awk import Harness, real  # noqa: E402

TREE = {"d/a.txt": "hello\n", "d/sub/b": "x\n", "d/sub/c.log": "log\n" * 100, "top.txt": "top\n"}


def _h() -> Harness:
    h = Harness(TREE)
    h.fs.symlink("a.txt", "/workspace/d/link")
    return h


@pytest.mark.parametrize("z", ["", "z", "j", "J"])
def test_tar_roundtrip_and_gnu_lists_it(z, tmp_path):
    h = _h()
    r = h.run(["tar", f"c{z}f", "x.tar", "d", "top.txt"])
    assert r.status == 0, r.err
    data = h.read("x.tar")
    (tmp_path / "x.tar").write_bytes(data)
    gnu = real(["tar", "tf", "x.tar"], cwd=str(tmp_path))
    ours = h.run(["tar", "tf", "x.tar"])
    assert gnu.status == 0
    assert sorted(ours.out.splitlines()) == sorted(gnu.out.splitlines())
    assert "d/link" in ours.out and "d/sub/" in ours.out
    # GNU extracts what we wrote, byte for byte
    out = tmp_path / "out"
    out.mkdir()
    assert real(["tar", "xf", "../x.tar"], cwd=str(out)).status == 0
    assert (out / "d/sub/c.log").read_text() == "log\n" * 100
    assert os.readlink(out / "d/link") == "a.txt"
    # and we extract it again elsewhere
    h.fs.mkdir("/workspace/o")
    r = h.run(["tar", "xf", "x.tar", "-C", "o"])
    assert r.status == 0, r.err
    assert h.read("o/d/sub/b") == b"x\n"
    assert h.fs.readlink("/workspace/o/d/link") == "a.txt"


def test_tar_reads_gnu_archives(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "d/f1").write_text("one\n")
    (tmp_path / "d/f2").write_text("two\n")
    assert real(["tar", "czf", "g.tgz", "d"], cwd=str(tmp_path)).status == 0
    h = Harness()
    h.write("g.tgz", (tmp_path / "g.tgz").read_bytes())
    r = h.run(["tar", "tzf", "g.tgz"])
    assert sorted(r.out.splitlines()) == ["d/", "d/f1", "d/f2"]
    r = h.run(["tar", "tf", "g.tgz"])  # compression detected without -z
    assert sorted(r.out.splitlines()) == ["d/", "d/f1", "d/f2"]
    assert h.run(["tar", "xzf", "g.tgz"]).status == 0
    assert h.read("d/f2") == b"two\n"
    assert h.run(["tar", "xOf", "g.tgz", "d/f1"]).out == "one\n"
    h.fs.mkdir("/workspace/s")
    assert h.run(["tar", "-x", "-f", "g.tgz", "-C", "s", "--strip-components=1"]).status == 0
    assert h.read("s/f1") == b"one\n"


def test_tar_verbose_listing_matches_gnu(tmp_path):
    h = Harness({"d/a": "12345\n"}, env={"TZ": "UTC", "PATH": "/usr/bin:/bin"})
    h.fs.utime("/workspace/d/a", (1700000000, 1700000000))
    h.fs.utime("/workspace/d", (1700000000, 1700000000))
    h.run(["tar", "cf", "v.tar", "d"])
    (tmp_path / "v.tar").write_bytes(h.read("v.tar"))
    gnu = real(["tar", "tvf", "v.tar"], cwd=str(tmp_path), env={"TZ": "UTC"})
    ours = h.run(["tar", "tvf", "v.tar"])
    assert ours.out == gnu.out


def test_tar_messages():
    h = _h()
    r = h.run(["tar", "xf", "nope.tar"])
    assert r.status == 2
    assert r.err == ("tar: nope.tar: Cannot open: No such file or directory\n"
                     "tar: Error is not recoverable: exiting now\n")
    r = h.run(["tar", "cf", "e.tar"])
    assert r.status == 2 and "Cowardly refusing" in r.err
    r = h.run(["tar"])
    assert r.status == 2 and "You must specify one of" in r.err
    r = h.run(["tar", "cf", "abs.tar", "/workspace/top.txt"])
    assert r.err == "tar: Removing leading `/' from member names\n"
    assert h.run(["tar", "tf", "abs.tar"]).out == "workspace/top.txt\n"
    r = h.run(["tar", "tf", "abs.tar", "nothere"])
    assert r.status == 2 and "tar: nothere: Not found in archive" in r.err
    r = h.run(["tar", "cvf", "v.tar", "top.txt"])
    assert r.out == "top.txt\n"
    r = h.run(["tar", "czf", "-", "top.txt"])
    assert r.stdout[:2] == b"\x1f\x8b"
    r = h.run(["tar", "--exclude=*.log", "-cf", "ex.tar", "d"])
    assert "c.log" not in h.run(["tar", "tf", "ex.tar"]).out


def _evil_tar(members) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        for name, kind, payload in members:
            ti = tarfile.TarInfo(name)
            if kind == "sym":
                ti.type = tarfile.SYMTYPE
                ti.linkname = payload
                tf.addfile(ti)
            else:
                ti.size = len(payload)
                tf.addfile(ti, io.BytesIO(payload))
    return buf.getvalue()


def test_tar_extraction_stays_inside():
    h = Harness()
    h.fs.mkdir("/workspace/t")
    h.write("evil.tar", _evil_tar([
        ("../../etc/passwd_x", "file", b"pwned"),
        ("/abs_x", "file", b"abs"),
        ("esc", "sym", "/tmp"),
        ("esc/owned", "file", b"through the link"),
        ("ok/file", "file", b"fine"),
    ]))
    r = h.run(["tar", "xf", "evil.tar", "-C", "t"])
    assert not h.fs.exists("/etc/passwd_x")
    assert h.read("t/etc/passwd_x") == b"pwned"
    assert h.read("t/abs_x") == b"abs"
    assert not h.fs.exists("/tmp/owned")
    assert h.read("t/ok/file") == b"fine"
    assert "Removing leading `../../'" in r.err
    assert "Removing leading `/'" in r.err


def test_unzip_stays_inside():
    import zipfile
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("../../evil.txt", "x")
        zf.writestr("good/g.txt", "g")
    h = Harness()
    h.write("e.zip", buf.getvalue())
    h.fs.mkdir("/workspace/u")
    h.run(["unzip", "-q", "e.zip", "-d", "u"])
    assert not h.fs.exists("/evil.txt") and not h.fs.exists("/workspace/evil.txt")
    assert h.read("u/evil.txt") == b"x"
    assert h.read("u/good/g.txt") == b"g"


@pytest.mark.parametrize("prog,ext,dec", [("gzip", ".gz", ["gzip", "-dc"]), ("bzip2", ".bz2", ["bzip2", "-dc"]),
                                          ("xz", ".xz", ["xz", "-dc"])])
def test_compressors_interop(prog, ext, dec, tmp_path):
    payload = ("line %d\n" * 1 % 0) * 0 + "".join(f"line {i}\n" for i in range(500))
    h = Harness({"f.txt": payload})
    h.fs.chmod("/workspace/f.txt", 0o600)
    r = h.run([prog, "f.txt"])
    assert r.status == 0, r.err
    assert not h.fs.exists("/workspace/f.txt")
    assert h.fs.stat("/workspace/f.txt" + ext).st_mode & 0o777 == 0o600
    (tmp_path / ("f.txt" + ext)).write_bytes(h.read("f.txt" + ext))
    assert real([*dec, "f.txt" + ext], cwd=str(tmp_path)).out == payload
    # the real tool's output decompresses with ours (-d, -c, the cat alias, and stdin)
    realc = real([prog, "-c"], stdin=payload).stdout
    h.write("g.txt" + ext, realc)
    cat = {"gzip": "zcat", "bzip2": "bzcat", "xz": "xzcat"}[prog]
    assert h.run([cat, "g.txt" + ext]).out == payload
    assert h.run([prog, "-dc"], stdin=realc).out == payload
    assert h.run([prog, "-d", "-k", "g.txt" + ext]).status == 0
    assert h.read("g.txt") == payload.encode() and h.fs.exists("/workspace/g.txt" + ext)


def test_gzip_messages():
    h = Harness({"h.txt": "x\n", "g.txt.gz": b""})
    r = h.run(["gunzip", "nope.gz"])
    # gunzip is a script running gzip: the messages come from gzip (as on this machine)
    assert (r.err, r.status) == ("gzip: nope.gz: No such file or directory\n", 1)
    r = h.run(["gunzip", "h.txt"])
    assert (r.err, r.status) == ("gzip: h.txt: unknown suffix -- ignored\n", 2)
    r = h.run(["gzip", "g.txt.gz"])
    assert r.err == "gzip: g.txt.gz already has .gz suffix -- unchanged\n"
    r = h.run(["gunzip"], stdin=b"notgz\n")
    assert (r.err, r.status) == ("\ngzip: stdin: not in gzip format\n", 1)
    r = h.run(["bzip2", "nope"])
    assert (r.err, r.status) == ("bzip2: Can't open input file nope: No such file or directory.\n", 1)
    r = h.run(["xz", "nope"])
    assert (r.err, r.status) == ("xz: nope: No such file or directory\n", 1)
    h.run(["gzip", "-k", "h.txt"])
    r = h.run(["gzip", "-k", "h.txt"])
    assert r.status == 2 and "already exists" in r.err
    r = h.run(["gzip", "-l", "h.txt.gz"])
    assert r.out.splitlines()[0].split() == ["compressed", "uncompressed", "ratio", "uncompressed_name"]


def test_zip_unzip(tmp_path):
    h = _h()
    r = h.run(["zip", "-r", "z.zip", "d"])
    assert r.status == 0
    assert "  adding: d/ (stored 0%)\n" in r.out and "  adding: d/sub/c.log (deflated" in r.out
    (tmp_path / "z.zip").write_bytes(h.read("z.zip"))
    lst = real(["unzip", "-l", "z.zip"], cwd=str(tmp_path))
    assert lst.status == 0 and "d/sub/c.log" in lst.out
    h.fs.mkdir("/workspace/x")
    r = h.run(["unzip", "-q", "z.zip", "-d", "x"])
    assert r.status == 0
    assert h.read("x/d/sub/c.log") == b"log\n" * 100
    assert h.run(["unzip", "-p", "z.zip", "d/a.txt"]).out == "hello\n"
    r = h.run(["unzip", "-l", "z.zip"])
    assert r.out.startswith("Archive:  z.zip\n  Length      Date    Time    Name\n")
    r = h.run(["unzip", "nope.zip"])
    assert r.status == 9
    # real zip's archive extracts with ours
    (tmp_path / "src").mkdir()
    (tmp_path / "src/r.txt").write_text("real\n")
    subprocess.run(["zip", "-qr", "../r.zip", "."], cwd=str(tmp_path / "src"), check=True)
    h.write("r.zip", (tmp_path / "r.zip").read_bytes())
    r = h.run(["unzip", "r.zip"])
    assert r.status == 0 and h.read("r.txt") == b"real\n"
    assert " extracting: r.txt                   \n" in r.out or "  inflating: r.txt" in r.out
