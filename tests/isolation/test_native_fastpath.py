"""A confined workload (SIGXFSZ ignored) still starts through the vfork fast path."""

from __future__ import annotations

import os
import signal
import subprocess

import pytest

from agentic_bash.executors import native as N


@pytest.fixture
def restore_signals():
    saved = {s: signal.getsignal(s) for s in (signal.SIGPIPE, signal.SIGXFSZ)}
    yield
    for s, h in saved.items():
        signal.signal(s, h)


def test_children_inherit_the_dispositions_without_a_preexec(restore_signals, monkeypatch):
    seen = {}
    real = subprocess.Popen

    def spy(*a, **kw):
        seen.update(preexec=kw.get("preexec_fn"), restore=kw.get("restore_signals"))
        return real(*a, **kw)

    monkeypatch.setattr(N.subprocess, "Popen", spy)
    launcher = N.NativeLauncher(pdeathsig=False)
    launcher.confine_workload(ignore_sigxfsz=True)
    r, w = os.pipe()
    try:
        p = launcher.spawn(["sh", "-c", "grep -E '^Sig(Ign|Blk)' /proc/self/status"],
                           executable="/bin/sh", env={"PATH": "/usr/bin:/bin"}, cwd="/",
                           stdin=0, stdout=w, stderr=2)
        os.close(w)
        w = -1
        out = b""
        while chunk := os.read(r, 4096):
            out += chunk
        assert p.wait(10) == 0
    finally:
        os.close(r)
        if w >= 0:
            os.close(w)
    assert seen == {"preexec": None, "restore": False}   # no Python in the child: vfork
    fields = dict(line.split(":\t") for line in out.decode().splitlines())
    ign = int(fields["SigIgn"], 16)
    assert ign & (1 << (signal.SIGXFSZ - 1))             # a write past RLIMIT_FSIZE: EFBIG
    assert not ign & (1 << (signal.SIGPIPE - 1))         # `yes | head` still ends yes
    assert int(fields["SigBlk"], 16) == 0
    # this process: SIGPIPE handled (EPIPE still raised here), never SIG_IGN or SIG_DFL
    assert signal.getsignal(signal.SIGPIPE) not in (signal.SIG_IGN, signal.SIG_DFL)
    a, b = os.pipe()
    os.close(a)
    with pytest.raises(BrokenPipeError):
        os.write(b, b"x")
    os.close(b)
