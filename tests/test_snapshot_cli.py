"""Separate CLI calls continue one session through snapshot files; REPL meta-commands."""

from __future__ import annotations

import subprocess
import sys
import io
import tarfile

from agentic_bash.snapshot import _decompress

CLI = [sys.executable, "-m", "agentic_bash"]


def cli(*args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([*CLI, *args], input=stdin, capture_output=True, timeout=120)


def test_snapshot_then_restore_chain(tmp_path):
    s, s2 = str(tmp_path / "s.tar"), str(tmp_path / "s2.tar")
    p = cli("snapshot", "-i", "virtual", "--out", s, "--cmd", "export A=1; echo hi > f")
    assert p.returncode == 0, p.stderr
    with open(s, "rb") as f:
        assert "workspace/f" in tarfile.open(fileobj=io.BytesIO(_decompress(f.read()))).getnames()
    p = cli("restore", "-i", "virtual", "--in", s, "--cmd", "echo $A; cat f; echo more >> f", "--out", s2)
    assert (p.stdout, p.returncode) == (b"1\nhi\n", 0), p.stderr
    p = cli("snapshot", "-i", "virtual", "--from", s2, "--out", s, "--cmd", "cat f; exit 4")
    assert (p.stdout, p.returncode) == (b"hi\nmore\n", 4)
    p = cli("restore", "-i", "virtual", "--in", s, "--cmd", "cat f")
    assert p.stdout == b"hi\nmore\n"


def test_restore_refuses_a_bad_snapshot(tmp_path):
    bad = tmp_path / "bad.tar"
    bad.write_bytes(b"garbage" * 100)
    p = cli("restore", "-i", "virtual", "--in", str(bad), "--cmd", "echo no")
    assert p.returncode == 125 and b"sandbox error" in p.stderr and p.stdout == b""


def test_exclude_env_keeps_secrets_out(tmp_path):
    s = str(tmp_path / "s.tar")
    cli("snapshot", "-i", "virtual", "--out", s, "--exclude-env", "TOKEN",
        "--cmd", "export TOKEN=hunter22; export OK=1")
    with open(s, "rb") as f:
        assert b"hunter22" not in _decompress(f.read())
    p = cli("restore", "-i", "virtual", "--in", s, "--cmd", 'echo "[$TOKEN] $OK"')
    assert p.stdout == b"[] 1\n"


def test_repl_meta_commands_on_a_restored_session(tmp_path):
    s, s3 = str(tmp_path / "s.tar"), str(tmp_path / "s3.tar")
    cli("snapshot", "-i", "virtual", "--out", s, "--cmd", "export A=1")
    script = (f"echo $A\necho x > new\n%files\n%snapshot {s3}\n%reset\necho [$A]\n"
              f"%restore {s3}\necho $A; cat new\n").encode()
    p = cli("restore", "-i", "virtual", "--in", s, stdin=script)
    out = p.stdout.decode()
    assert out.splitlines() == ["1", "created: /workspace/new", f"snapshot written to {s3}",
                                "session reset", "[]", f"restored from {s3}", "1", "x"], p.stderr
