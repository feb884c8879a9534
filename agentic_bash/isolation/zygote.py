"""The zygote: a fresh single-threaded interpreter that forks sandboxes; and its host-side client."""

# Why: unshare(CLONE_NEWUSER) fails with EINVAL in a multi-threaded process, and forking a
# multi-threaded caller can deadlock in the child. So the caller (any threads) never forks a
# sandbox itself; it execs this module once (a fresh interpreter, preloaded with the runner
# and the interpreter's modules) and asks it over a SOCK_SEQPACKET socket to fork one sandbox
# per request, passing the sandbox's end of a socketpair with SCM_RIGHTS.

from __future__ import annotations

import atexit
import importlib
import json
import os
import pickle
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from typing import Any

__all__ = ["Zygote", "get_zygote", "main"]

PRELOAD = (
    "agentic_bash.isolation.runner", "agentic_bash.isolation.rootfs",
    "agentic_bash.isolation.landlock_rules", "agentic_bash.isolation.seccomp_filter",
    "agentic_bash.executors.native", "agentic_bash.executors.sandboxed",
    "agentic_bash.executors.inprocess", "agentic_bash.vfs.host", "agentic_bash.shell.interpreter",
    "agentic_bash.commands", "pyseccomp", "json", "pickle",
)
_MSG_MAX = 1 << 20


# -- server side (runs in the zygote process) --------------------------------------------------
def _preload() -> list[str]:
    failed = []
    for name in PRELOAD:
        try:
            importlib.import_module(name)
        except Exception as e:  # noqa: BLE001 - optional pieces (pyseccomp) may be absent
            failed.append(f"{name}: {e}")
    try:
        from agentic_bash.commands import load_all
        load_all(eager=True)  # the zygote forks sandboxes: import every command once
    except Exception as e:  # noqa: BLE001
        failed.append(f"commands.load_all: {e}")
    try:
        from .seccomp_filter import compile_bpf, syscall_names
        compile_bpf()
        compile_bpf(notify=True)
        syscall_names()
    except Exception as e:  # noqa: BLE001
        failed.append(f"seccomp: {e}")
    try:
        _warm_interpreter()
    except Exception as e:  # noqa: BLE001
        failed.append(f"warm-up: {e}")
    return failed


def _warm_interpreter() -> None:
    """Run a little script over a MemoryFS so lazily imported parts (parser, expansions,
    builtins, change tracking) are loaded once here instead of in every sandbox."""
    from agentic_bash.executors.inprocess import InProcessExecutor
    from agentic_bash.vfs.memory import MemoryFS

    fs = MemoryFS()
    for d in ("/tmp", "/workspace"):
        try:
            fs.mkdir(d)
        except OSError:
            pass
    ex = InProcessExecutor(fs=fs, native=None, workdir="/workspace")
    ex.run('x=1; y=$((x+1)); f() { local a="$1"; echo "${a:-z}" > /tmp/f; }; f "$y"; '
           'for i in 1 2; do case $i in 1) :;; *) [[ -n $i ]] && test -e /tmp/f;; esac; done; '
           'cat /tmp/f | tr a-z A-Z >/dev/null; s=$(echo hi); if true; then :; fi; echo "$s" >&2',
           timeout=10)
    ex.close()
    # ... and the native path over a HostFS (a scratch directory; /bin/true only)
    from agentic_bash.executors.native import NativeLauncher
    from agentic_bash.vfs.host import HostFS

    d = tempfile.mkdtemp(prefix="agentic-bash-warm-")
    try:
        ex = InProcessExecutor(fs=HostFS(d, writable=True), native=NativeLauncher(pdeathsig=False),
                               workdir="/")
        ex.run("/bin/true; echo x > f; /bin/true < f > /dev/null 2>&1", timeout=10)
        ex.close()
    finally:
        shutil.rmtree(d, ignore_errors=True)


def main(fd: int) -> int:
    ctl = socket.socket(fileno=fd)
    failed = _preload()
    base = tempfile.mkdtemp(prefix="agentic-bash-base-")
    from .rootfs import prepare_base
    try:
        prepare_base(base)
    except Exception as e:  # noqa: BLE001
        failed.append(f"prepare_base: {e}")
    children: set[int] = set()
    import gc
    gc.collect()
    gc.freeze()  # keep the preloaded heap shared copy-on-write across sandboxes

    def cleanup() -> None:
        for pid in list(children):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        for pid in list(children):
            try:
                os.waitpid(pid, 0)
            except OSError:
                pass
        shutil.rmtree(base, ignore_errors=True)

    atexit.register(cleanup)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    rd, wr = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    signal.set_wakeup_fd(wr)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    ctl.send(json.dumps({"ready": True, "base": base, "pid": os.getpid(),
                         "threads": threading.active_count(), "preload_failed": failed}).encode())
    while True:
        try:
            r, _, _ = select.select([ctl, rd], [], [])
        except InterruptedError:
            r = [rd]
        if rd in r:
            try:
                while os.read(rd, 512):
                    pass
            except BlockingIOError:
                pass
        _reap(children)
        if ctl not in r:
            continue
        try:
            data, fds, _flags, _addr = socket.recv_fds(ctl, _MSG_MAX, 1)
        except InterruptedError:
            continue
        except OSError:
            break
        if not data:
            break
        if not fds:
            ctl.send(json.dumps({"error": "no channel fd passed"}).encode())
            continue
        try:
            cfg = pickle.loads(data)
            cfg["base_dir"] = base
        except Exception as e:  # noqa: BLE001
            os.close(fds[0])
            ctl.send(json.dumps({"error": f"bad request: {e}"}).encode())
            continue
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                signal.set_wakeup_fd(-1)
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
                atexit.unregister(cleanup)
                os.close(rd)
                os.close(wr)
                ctl.close()
                from .runner import sandbox_main
                code = sandbox_main(cfg, socket.socket(fileno=fds[0]))
            finally:
                os._exit(code)
        os.close(fds[0])
        children.add(pid)
        ctl.send(json.dumps({"pid": pid}).encode())
    return 0


def _reap(children: set[int]) -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        children.discard(pid)


# -- client side (runs in the caller) ------------------------------------------------------------
class Zygote:
    """Handle on one zygote process. ``spawn(cfg)`` returns (channel socket, S1 pid)."""

    def __init__(self) -> None:
        pkg_parent = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        here, there = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        # Security invariant: a minimal environment. /proc/<pid>/environ of every sandbox
        # process shows the environment the zygote was exec'd with, never the caller's.
        env = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
               "LANG": "C.UTF-8", "PYTHONPATH": pkg_parent, "PYTHONDONTWRITEBYTECODE": "1",
               "PYTHONSAFEPATH": "1"}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "agentic_bash.isolation.zygote", str(there.fileno())],
            pass_fds=[there.fileno()], env=env, stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, cwd="/", close_fds=True,
            # not in the caller's process group: Ctrl-C at the caller's terminal (a REPL, `run`)
            # is the caller's to handle, not a KeyboardInterrupt in every sandbox
            start_new_session=True)
        there.close()
        self.sock = here
        self.owner = os.getpid()
        self.lock = threading.Lock()
        here.settimeout(60)
        try:
            hello = json.loads(here.recv(_MSG_MAX))
        except (OSError, ValueError) as e:
            self.close()
            raise OSError(f"sandbox zygote failed to start: {e}") from e
        here.settimeout(None)
        self.base: str = hello["base"]
        self.pid: int = hello["pid"]
        self.preload_failed: list[str] = hello.get("preload_failed", [])

    def spawn(self, cfg: dict[str, Any]) -> tuple[socket.socket, int]:
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            with self.lock:
                socket.send_fds(self.sock, [pickle.dumps(cfg)], [theirs.fileno()])
                reply = json.loads(self.sock.recv(_MSG_MAX) or b"{}")
        except BaseException:
            mine.close()
            raise
        finally:
            theirs.close()
        if "pid" not in reply:
            mine.close()
            raise OSError(reply.get("error") or "sandbox zygote is gone")
        return mine, int(reply["pid"])

    def alive(self) -> bool:
        return self.proc.poll() is None and self.owner == os.getpid()

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


_zygote: Zygote | None = None
_zlock = threading.Lock()


def get_zygote() -> Zygote:
    """The process-wide zygote, started on first use (and again after a fork or its death)."""
    global _zygote
    with _zlock:
        if _zygote is None or not _zygote.alive():
            if _zygote is not None and _zygote.owner == os.getpid():
                _zygote.close()
            _zygote = Zygote()
            atexit.register(_zygote.close)
        return _zygote


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1])))
