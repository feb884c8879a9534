"""The reference bash of a foreign corpus case cannot write the host's files (tests/bashdiff.py, foreign=True)."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

import bashdiff


@pytest.mark.skipif(os.geteuid() != 0, reason="the case is about a root test run")
def test_a_foreign_case_cannot_write_where_root_can(tmp_path):
    # (outside /tmp, which the foreign case sees as its own private one)
    base = tempfile.mkdtemp(prefix="bashdiff-foreign-", dir="/var/tmp")
    try:
        _cannot_write(Path(base), tmp_path)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _cannot_write(base: Path, tmp_path: Path) -> None:
    os.chmod(base, 0o755)
    host = base / "host-dir"       # stands for /, /usr/local/bin: root's, mode 0755
    host.mkdir()
    os.chmod(host, 0o755)
    work = tmp_path / "work"
    work.mkdir()
    os.chmod(tmp_path, 0o755)
    script = f"touch {host}/planted; echo st=$?; echo ok > here; cat here"
    out, err, st = bashdiff.bash_c(script, str(work), foreign=True)
    assert out == "st=1\nok\n" and "Permission denied" in err, (out, err, st)
    assert not (host / "planted").exists()
    # our own cases keep writing as before (their files keep their owner)
    out, _, _ = bashdiff.bash_c(f"touch {host}/ours; echo st=$?", str(work))
    assert out == "st=0\n" and (host / "ours").exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="the case is about a root test run")
def test_a_foreign_case_has_a_private_tmp(tmp_path):
    os.chmod(tmp_path, 0o755)
    marker = f"/tmp/bashdiff-foreign-{os.getpid()}"
    out, err, st = bashdiff.bash_c(f"touch {marker}; ls /tmp", str(tmp_path), foreign=True)
    # (besides the marker: the top of the cwd's path, bound back into the private /tmp)
    top = str(tmp_path).split("/")[2] if str(tmp_path).startswith("/tmp/") else None
    assert out.split() == sorted(n for n in (os.path.basename(marker), top) if n), (out, err, st)
    assert not os.path.exists(marker)


@pytest.mark.skipif(os.geteuid() != 0, reason="the case is about a root test run")
def test_a_foreign_case_resolves_its_cwd_and_keeps_bytes(tmp_path):
    # the cwd under root's 0700 /tmp/pytest-of-root, seen as nobody through the private /tmp
    work = tmp_path / "w"
    work.mkdir()
    out, err, st = bashdiff.bash_c("realpath .; pwd -P; cd .. && ls; printf 'a\\rb\\377\\n'",
                                   str(work), foreign=True, raw=True)
    assert (out, err, st) == (f"{work}\n{work}\nw\n".encode() + b"a\rb\xff\n", b"", 0)


@pytest.mark.skipif(os.geteuid() != 0, reason="the case is about a root test run")
def test_a_foreign_case_reopens_its_output_and_has_its_home(tmp_path):
    env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": "/home/user"}
    out, err, st = bashdiff.bash_c("echo o >/dev/stdout; echo e | tee /dev/stderr >/dev/null; cd && pwd",
                                   str(tmp_path), env=env, foreign=True)
    assert (out, err, st) == ("o\n/home/user\n", "e\n", 0)
