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
import select
import socket
import subprocess
import sys
import threading
import time
from typing import Any

from .wire import sendmsg_fds

__all__ = ["Zygote", "background_spawns", "discard_early", "get_zygote", "main", "start_early",
           "userns_hint"]

PRELOAD = (
    "agentic_bash.isolation.runner", "agentic_bash.isolation.rootfs",
    "agentic_bash.isolation.landlock_rules", "agentic_bash.isolation.seccomp_filter",
    "agentic_bash.executors.native", "agentic_bash.executors.sandboxed",
    "agentic_bash.executors.inprocess", "agentic_bash.vfs.host", "agentic_bash.shell.interpreter",
    "agentic_bash.commands", "pyseccomp", "json", "pickle",
    # imported by every sandbox's S1/S3 otherwise (8-15 ms each under load, measured)
    "agentic_bash.isolation.watchdog", "agentic_bash.isolation.layerscan",
    "agentic_bash.network.devtcp",
    # imported lazily by declare -f, jobs and snapshots: a sandbox forked before the deferred
    # warm-up could not import it when the package is where the sandbox cannot see it (a
    # copy under the host's /tmp: the unprivileged tests' package; a snapshot failed)
    "agentic_bash.shell.unparse",
    # imported by every sandbox's pid 1 otherwise (compat12's /proc/meminfo view): +0.7-1.8
    # MB of private memory per idle sandbox, measured
    "agentic_bash.isolation.procfs",
    # imported by every sandbox's runner otherwise (its start-up, before pin_imports: a
    # module imported there sends pin_imports through every package, ~2 ms, create13)
    "mmap",
    # (sessions14) the runner's warm-up after ready (a throwaway shell over a MemoryFS)
    "agentic_bash.isolation.warmup", "agentic_bash.vfs.memory",
)
_MSG_MAX = 1 << 20
QUIET = 0.2
"""Seconds the zygote's deferred steps wait after it forks a sandbox (its start-up and first
command have the CPU); QUIET_TOTAL bounds the wait over all forks, so the steps run even
while sandboxes are made one after another."""
QUIET_TOTAL = 1.0
BACKGROUND_STEPS = 0.5
"""Seconds of deferred steps (imports, the warm-up run) the zygote may take before forking a
sandbox nobody waits for (a pool's filler: ``background_spawns``)."""
_background = threading.local()


class background_spawns:
    """``with background_spawns():`` sandboxes this thread starts are not waited for (a
    pool's filler): the zygote finishes its deferred steps before it forks them."""

    def __enter__(self) -> None:
        _background.on = True

    def __exit__(self, *exc: Any) -> None:
        _background.on = False


# -- server side (runs in the zygote process) --------------------------------------------------
def _preload() -> list[str]:
    """What a sandbox needs from its first command on: imported before the zygote is ready."""
    failed = []
    for name in PRELOAD:
        try:
            importlib.import_module(name)
        except Exception as e:  # noqa: BLE001 - optional pieces (pyseccomp) may be absent
            failed.append(f"{name}: {e}")
    try:
        from .seccomp_filter import compile_bpf, syscall_names
        compile_bpf()
        compile_bpf(notify=True)
        # (create13) the unprivileged runner's (memfds go to the supervisor): compiled in
        # every such sandbox's start-up otherwise, ~0.4 ms
        compile_bpf(notify=True, memfd=True)
        syscall_names()
    except Exception as e:  # noqa: BLE001
        failed.append(f"seccomp: {e}")
    return failed


def _deferred() -> Any:
    """Steps done while the zygote is idle, after it is ready, one small step between two
    requests (the first sandbox of a process does not wait for them; one forked before they
    ran imports what it uses itself): every command module, then a warm-up run."""
    import pkgutil

    import agentic_bash.commands as cmds
    for m in pkgutil.iter_modules(cmds.__path__):
        if not m.name.startswith("_") and m.name != "base":
            yield lambda name=m.name: importlib.import_module(f"agentic_bash.commands.{name}")
    yield lambda: cmds.load_all(eager=True)
    yield _warm_interpreter
    yield _finish_lazy
    if sys.dont_write_bytecode:
        yield lambda: _refresh_bytecode(list(sys.modules.values()))


def _refresh_bytecode(modules: list[Any]) -> int:
    """(fresh15) Write the bytecode of this package's imported modules whose cached bytecode
    is missing or older than their source; returns how many. The zygote runs without
    writing bytecode when the tree's own __pycache__ was current for PRELOAD's modules
    (_bytecode_env), so a module of the package it imports that is not in that list and was
    edited since (a merge) was compiled from source by every zygote (~1-2 ms per 1,000
    lines: the shell's modules are ~25,000). Done once ready, off every sandbox's path;
    nothing is written where this user cannot write."""
    import py_compile

    n = 0
    for mod in modules:
        spec = getattr(mod, "__spec__", None)
        if spec is None or not (spec.name or "").startswith("agentic_bash"):
            continue
        src, cached = spec.origin, spec.cached
        if not src or not cached or not src.endswith(".py"):
            continue
        if _bytecode_current(src, cached):
            continue
        try:
            py_compile.compile(src, cfile=cached, doraise=True)
            n += 1
        except (OSError, py_compile.PyCompileError):
            pass
    return n


def _bytecode_current(src: str, cached: str) -> bool:
    """Whether ``cached`` is the bytecode the import system would use for ``src`` without
    compiling it: this interpreter's magic number, and the source's mtime and size in its
    header (or a hash-based file, which this does not judge: left alone)."""
    from importlib.util import MAGIC_NUMBER
    try:
        st = os.stat(src)
        with open(cached, "rb") as f:
            head = f.read(16)
    except OSError:
        return False
    if len(head) < 16 or head[:4] != MAGIC_NUMBER:
        return False
    if int.from_bytes(head[4:8], "little") != 0:
        return True
    return (int.from_bytes(head[8:12], "little") == int(st.st_mtime) & 0xFFFFFFFF
            and int.from_bytes(head[12:16], "little") == st.st_size & 0xFFFFFFFF)


def _finish_lazy() -> None:
    """(fresh15) What the preload left to first use to be ready sooner (the AST classes'
    ``__init__``, module-level regular expressions): done here once, so the sandboxes
    forked from now on share it."""
    from agentic_bash import _lazyre
    from agentic_bash.shell import nodes
    nodes.compile_inits()
    _lazyre.compile_all()


def _warm_interpreter() -> None:
    """Run a little script over a MemoryFS so lazily imported parts (parser, expansions,
    builtins, change tracking) are loaded once here instead of in every sandbox."""
    import shutil
    import tempfile

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


def _tmpfs_dir() -> str | None:
    """/dev/shm when it is a tmpfs we may write: the sanitised /etc copy (~1,000 entries)
    takes 20 ms there and 70-850 ms on a busy disk."""
    try:
        with open("/proc/self/mountinfo") as f:
            for line in f:
                left, _, right = line.partition(" - ")
                if left.split()[4] == "/dev/shm" and right.split()[0] == "tmpfs":
                    return "/dev/shm" if os.access("/dev/shm", os.W_OK | os.X_OK) else None
    except (OSError, IndexError):
        pass
    return None


BASE_PREFIX = "agentic-bash-base-"


def _owner_tag() -> str:
    """``<pid namespace>-<pid>-<start time>-``: names the zygote that owns a base directory,
    so a later zygote can tell that one was killed before it could remove its own."""
    from .procstat import START, stat_fields
    f = stat_fields("self")
    return f"{os.stat('/proc/self/ns/pid').st_ino}-{os.getpid()}-{f[START].decode() if f else 0}-"


def sweep_stale_bases(d: str) -> int:
    """Remove base directories in ``d`` of this user and pid namespace whose zygote is gone
    (SIGKILLed: its atexit never ran). Bounded; returns how many."""
    import re
    import shutil

    from .procstat import may_run
    pat = re.compile(re.escape(BASE_PREFIX) + r"([0-9]+)-([0-9]+)-([0-9]+)-[A-Za-z0-9_]+$")
    ns, me, n = os.stat("/proc/self/ns/pid").st_ino, os.geteuid(), 0
    for name in os.listdir(d):
        m = pat.match(name)
        if m is None or int(m.group(1)) != ns:
            continue
        if may_run(m.group(2), m.group(3)):
            continue   # its zygote still runs (a zombie has done with it)
        path = os.path.join(d, name)
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if st.st_uid == me and (st.st_mode & 0o170000) == 0o040000:
            shutil.rmtree(path, ignore_errors=True)
            n += 1
            if n >= 64:
                break
    return n


def _start_base() -> tuple[str, int]:
    """Fill the shared base (sanitised /etc, /var skeleton) in a forked child, in parallel
    with the preload (the fork happens before the heavy imports, so it is cheap); a killed
    zygote's base is swept there too."""
    import tempfile

    where = _tmpfs_dir()
    try:
        tag = _owner_tag()
    except OSError:
        tag = ""
    base = tempfile.mkdtemp(prefix=BASE_PREFIX + tag, dir=where)
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            from .rootfs import prepare_base
            prepare_base(base)
            code = 0
            if tag:
                try:
                    sweep_stale_bases(os.path.dirname(base))
                except OSError:
                    pass
        except BaseException as e:  # noqa: BLE001
            try:
                os.write(2, f"agentic-bash zygote: prepare_base: {e}\n".encode())
            except OSError:
                pass
        finally:
            os._exit(code)
    return base, pid


def main(fd: int) -> int:
    import pickle
    import signal
    import agentic_bash.limits
    agentic_bash.limits.WATCH_OFF = True  # no deadline-watchdog thread in the zygote (forks)
    ctl = socket.socket(fileno=fd)
    t0 = time.monotonic()
    import gc
    # no collections while the preload allocates (they found next to nothing to free and
    # cost ~10% of it); the preloaded heap is frozen as it is, without a full collection
    # first (10-70 ms measured here): the deferred steps collect and freeze again when idle
    gc.disable()
    base, filler = _start_base()
    failed = _preload()
    t_preload = time.monotonic() - t0
    try:
        _, status = os.waitpid(filler, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            failed.append(f"prepare_base: exit status {os.waitstatus_to_exitcode(status)}")
    except ChildProcessError:
        pass
    children: set[int] = set()
    import shutil
    gc.freeze()  # keep the preloaded heap shared copy-on-write across sandboxes
    gc.enable()

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
    try:
        ctl.send(json.dumps({"ready": True, "base": base, "pid": os.getpid(),
                             "threads": threading.active_count(), "preload_failed": failed,
                             "timing": {"preload": round(t_preload, 4),
                                        "ready": round(time.monotonic() - t0, 4)}}).encode())
    except OSError:
        return 0   # the caller went away (or discarded a zygote it started early): cleanup runs
    # AGENTIC_BASH_ZYGOTE_WARMUP=0: no deferred steps (less memory per zygote; every sandbox
    # then imports what it uses itself, which the tests of pin_imports rely on)
    steps = None if os.environ.get("AGENTIC_BASH_ZYGOTE_WARMUP") == "0" else _deferred()
    # AGENTIC_BASH_ZYGOTE_CLONE=0: every namespace sandbox through S1 (fork + unshare), as
    # where clone3 is unavailable (benchmarks compare the two)
    clone_direct = os.environ.get("AGENTIC_BASH_ZYGOTE_CLONE") != "0"
    from .syscalls import clone_fork
    quiet_until, quiet_left = 0.0, QUIET_TOTAL
    while True:
        try:
            wait = None if steps is None else max(0.0, quiet_until - time.monotonic())
            r, _, _ = select.select([ctl, rd], [], [], wait)
        except InterruptedError:
            r = [rd]
        if not r and steps is not None:
            step = next(steps, None)
            if step is None:
                steps = None
                gc.collect()
                gc.freeze()
            else:
                try:
                    step()
                except Exception:  # noqa: BLE001 - a sandbox imports what is missing itself
                    pass
            continue
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
        background = bool(cfg.pop("_background", False))
        if background and steps is not None:
            # (sessions14) a pool's filler asked: nobody waits for this sandbox, so the
            # deferred steps left run first (at most BACKGROUND_STEPS seconds): a sandbox
            # forked before them imports and warms what it uses itself, in its private
            # memory (an idle pooled sandbox forked early held ~0.6 MB more USS)
            end = time.monotonic() + BACKGROUND_STEPS
            while steps is not None and time.monotonic() < end:
                step = next(steps, None)
                if step is None:
                    steps = None
                    gc.collect()
                    gc.freeze()
                    break
                try:
                    step()
                except Exception:  # noqa: BLE001 - (as in the idle loop above)
                    pass
        from .runner import namespace_flags, note_packages
        note_packages()
        pid = -1
        direct = cfg.get("level") == "namespace" and clone_direct
        if direct:
            # pid 1 of the sandbox straight from here (no S1: runner.py's top comment)
            ids = os.geteuid(), os.getegid()
            try:
                pid = clone_fork(namespace_flags(cfg))
            except OSError:
                direct = False   # (refused here: S1 unshares and reports why)
        if pid == -1:
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
                if direct:
                    from .runner import sandbox_main_direct
                    code = sandbox_main_direct(cfg, socket.socket(fileno=fds[0]), *ids)
                else:
                    from .runner import sandbox_main
                    code = sandbox_main(cfg, socket.socket(fileno=fds[0]))
            finally:
                os._exit(code)
        os.close(fds[0])
        children.add(pid)
        q = 0.0
        if steps is not None and quiet_left > 0 and not background:
            # (fresh15) the deferred steps wait while the sandbox just forked starts and
            # runs its first command: they took a CPU from its pid 1 and runner (a fresh
            # process's first result came 17 ms later at load ~7); at most QUIET_TOTAL in all
            q = min(QUIET, quiet_left)
            quiet_left -= q
            quiet_until = time.monotonic() + q
        ctl.send(json.dumps({"pid": pid, "req": cfg.get("req"), "direct": direct,
                             "quiet": round(q, 3)}).encode())
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
def _bytecode_env() -> dict[str, str]:
    """Compiled bytecode for the zygote's imports. The package's own __pycache__ when it holds
    current bytecode of every preloaded module (a normal install); otherwise (an editable
    checkout run with PYTHONDONTWRITEBYTECODE, a read-only tree) a per-user cache dir: without
    bytecode the preload compiles ~40k lines of source in every process (0.6 s instead of
    0.1 s)."""
    if _tree_compiled():
        return {"PYTHONDONTWRITEBYTECODE": "1"}
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    d = os.path.join(base, "agentic-bash", f"pycache-{os.geteuid()}")
    try:
        if not os.path.isabs(d):
            raise OSError("no cache dir")
        os.makedirs(d, mode=0o700, exist_ok=True)
        st = os.stat(d)
        # bytecode is code: only a directory nobody else can write
        if st.st_uid != os.geteuid() or st.st_mode & 0o022:
            raise OSError("cache dir not private")
    except OSError:
        return {"PYTHONDONTWRITEBYTECODE": "1"}
    return {"PYTHONPYCACHEPREFIX": d}


def _tree_compiled(root: str | None = None) -> bool:
    """Whether the package's own __pycache__ (``root``: the package's directory) has bytecode
    no older than its source for each preloaded module of ours. (Checking the package's
    __init__ alone was wrong: a caller that writes bytecode leaves its own few modules
    compiled, and the zygote then compiled the other ~40k lines in memory in every process,
    0.3-0.8 s of a fresh process's first command.)"""
    tag = sys.implementation.cache_tag
    if tag is None:
        return False
    root = root or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for name in PRELOAD:
        if not name.startswith("agentic_bash."):
            continue
        path = os.path.join(root, *name.split(".")[1:])
        src = path + ".py" if os.path.exists(path + ".py") else os.path.join(path, "__init__.py")
        pyc = os.path.join(os.path.dirname(src), "__pycache__",
                           f"{os.path.basename(src)[:-3]}.{tag}.pyc")
        try:
            if os.stat(pyc).st_mtime < os.stat(src).st_mtime:
                return False
        except OSError:
            return False
    return True


_BOOT = ("import os, sys; sys.path += [p for p in os.environ.get('AGENTIC_BASH_ZYGOTE_SITE', '')"
         ".split(os.pathsep) if p]; from agentic_bash.isolation.zygote import main; "
         "sys.exit(main(int(sys.argv[-1])))")
# the .pth files whose import lines the zygote may skip: setuptools' distutils shim, and this
# package's own editable-install finder (the zygote finds the package on PYTHONPATH)
_SKIPPABLE_PTH = ("distutils-precedence.pth", "__editable__.agentic_bash-")


def _site_dirs() -> list[str] | None:
    """The directories the site module would add to the zygote's sys.path (site-packages and
    the directory lines of their .pth files), found without running it; None (start the
    zygote with site) when a .pth file imports anything besides _SKIPPABLE_PTH's."""
    import site

    try:
        cands = list(site.getsitepackages())
    except AttributeError:   # (an old virtualenv's site module)
        return None
    if site.ENABLE_USER_SITE:
        cands.append(site.getusersitepackages())
    out: list[str] = []
    for d in cands:
        d = os.path.abspath(d)
        if not os.path.isdir(d) or d in out:
            continue
        out.append(d)
        try:
            names = sorted(n for n in os.listdir(d) if n.endswith(".pth") and not n.startswith("."))
        except OSError:
            return None
        for name in names:
            try:
                with open(os.path.join(d, name), encoding="utf-8") as f:
                    lines = f.read().splitlines()
            except (OSError, UnicodeDecodeError):
                return None
            for line in lines:
                if not line.strip() or line.startswith("#"):
                    continue
                if line.startswith(("import ", "import\t")):
                    if name.startswith(_SKIPPABLE_PTH):
                        continue
                    return None
                p = os.path.abspath(os.path.join(d, line.rstrip()))
                if os.path.isdir(p) and p not in out:
                    out.append(p)
    return out


RESULT_SNDBUF = 32 << 20
"""The send buffer of the sandbox's end of its channel (contract12): a run's result (up to
twice ``max_output_bytes`` of output) goes out in one piece instead of the default ~208 KiB
at a time, each refill waiting for the host's reader to be scheduled (a 16 MB result took
50-340 ms past the run's end at load 30-60: the namespace level's late deadlines). Set here,
by the host (SO_SNDBUFFORCE needs CAP_NET_ADMIN, which the sandbox does not have), else as
much as ``net.core.wmem_max`` allows."""


def _big_send_buffer(sock: socket.socket) -> None:
    force = getattr(socket, "SO_SNDBUFFORCE", 32)
    try:
        sock.setsockopt(socket.SOL_SOCKET, force, RESULT_SNDBUF)
        return
    except OSError:
        pass
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, RESULT_SNDBUF)
    except OSError:
        pass


class Zygote:
    """Handle on one zygote process. ``spawn(cfg)`` returns (channel socket, S1 pid)."""

    def __init__(self) -> None:
        pkg_parent = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        here, there = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        # Security invariant: a minimal environment. /proc/<pid>/environ of every sandbox
        # process shows the environment the zygote was exec'd with, never the caller's.
        env = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
               "LANG": "C.UTF-8", "PYTHONPATH": pkg_parent, "PYTHONSAFEPATH": "1",
               **_bytecode_env()}
        for k in ("AGENTIC_BASH_ZYGOTE_WARMUP", "AGENTIC_BASH_ZYGOTE_CLONE",
                  "AGENTIC_BASH_RUNNER_WARMUP",
                  "AGENTIC_BASH_FASTSPAWN"):   # (cspawn14: the compiled spawn off)
            if os.environ.get(k) == "0":
                env[k] = "0"
        site_dirs = _site_dirs()
        if site_dirs is None:
            argv = [sys.executable, "-m", "agentic_bash.isolation.zygote"]
        else:
            # (no site: its .pth files' import lines cost every zygote's start; the
            # directories it would add are appended to sys.path by _BOOT, after the stdlib)
            argv = [sys.executable, "-S", "-c", _BOOT]
            env["AGENTIC_BASH_ZYGOTE_SITE"] = os.pathsep.join(site_dirs)
        self.proc = subprocess.Popen(
            argv + [str(there.fileno())],
            pass_fds=[there.fileno()], env=env, stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, cwd="/", close_fds=True,
            # its own session: a terminal's Ctrl-C (SIGINT to the foreground process group)
            # is the caller's to handle and must not kill the zygote and every sandbox with it
            start_new_session=True)
        there.close()
        self.sock = here
        self.owner = os.getpid()
        self.lock = threading.Lock()
        self._hello_lock = threading.Lock()
        self._hello: dict[str, Any] | None = None

    def ready(self) -> dict[str, Any]:
        """Wait for the zygote's hello (it preloads meanwhile: the caller's own start-up work
        overlaps with it); raises OSError if it failed to start."""
        if self._hello is None:
            with self._hello_lock:
                if self._hello is None:
                    self.sock.settimeout(60)
                    try:
                        hello = json.loads(self.sock.recv(_MSG_MAX))
                        if not isinstance(hello, dict) or "base" not in hello:
                            raise ValueError(f"unexpected hello {hello!r}")
                    except (OSError, ValueError) as e:
                        self.close()
                        raise OSError(f"sandbox zygote failed to start: {e}") from e
                    self.sock.settimeout(None)
                    self._hello = hello
        return self._hello

    @property
    def base(self) -> str:
        return str(self.ready()["base"])

    @property
    def pid(self) -> int:
        return int(self.ready()["pid"])

    @property
    def preload_failed(self) -> list[str]:
        return list(self.ready().get("preload_failed", []))

    @property
    def timing(self) -> dict[str, float]:
        return dict(self.ready().get("timing", {}))

    def spawn(self, cfg: dict[str, Any]) -> tuple[socket.socket, int]:
        import pickle   # (fresh15: not at import, before the zygote's Popen: ~1.5 ms)

        self.ready()
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        _big_send_buffer(theirs)
        try:
            with self.lock:
                # a request number the reply echoes: a spawn abandoned on our side (e.g.
                # KeyboardInterrupt while waiting) leaves its reply behind, never to the next
                self._req = getattr(self, "_req", 0) + 1
                req = self._req
                msg = {**cfg, "req": req}
                if getattr(_background, "on", False):
                    msg["_background"] = True
                sendmsg_fds(self.sock, [pickle.dumps(msg)], [theirs.fileno()])
                while True:
                    reply = json.loads(self.sock.recv(_MSG_MAX) or b"{}")
                    if reply.get("req", req) == req:
                        break
        except BaseException:
            mine.close()
            raise
        finally:
            theirs.close()
        self.last_spawn = reply   # (the zygote's answer: pid, direct, quiet)
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


def userns_hint() -> bool:
    """Whether this user's probe cache (isolation/probe.py's file, any of its entries, within
    its time to live) says user namespaces work here: a hint read without the probe module,
    so ``Sandbox()`` can start the zygote before it imports and runs probe() (fresh15: ~13 ms
    of the host's CPU, on the path to a fresh process's first result). Never raises; False
    when there is no such file or the probe cache is off."""
    from .probecache import CACHE_TTL, cache_path, read_entries

    path = cache_path()
    if path is None:
        return False
    try:
        now = time.time()
        return any(isinstance(e, dict) and isinstance(e.get("res"), dict)
                   and e["res"].get("user_namespace") is True
                   and 0 <= now - float(e.get("time", 0)) < CACHE_TTL
                   for e in read_entries(path).values())
    except Exception:  # noqa: BLE001 - a hint: anything odd means "do not guess"
        return False


def start_early() -> Zygote | None:
    """Start the process-wide zygote without waiting for it, before the caller knows it will
    use it; returns it when this call started it (``discard_early`` undoes that), None when
    one was already running or it could not start."""
    try:
        z, started = _get(wait=False)
    except OSError:
        return None
    return z if started else None


def discard_early(z: Zygote) -> None:
    """The caller started ``z`` early and will not use it: forget it without waiting (it sees
    its socket closed once its preload is done, removes its base and exits)."""
    global _zygote
    with _zlock:
        if _zygote is z:
            _zygote = None
    try:
        z.sock.close()
    except OSError:
        pass


def get_zygote(wait: bool = True) -> Zygote:
    """The process-wide zygote, started on first use (and again after a fork or its death).
    ``wait=False`` only starts it (Sandbox() does that first, so the zygote's preload runs
    while the caller plans, probes and sets up limits and network)."""
    return _get(wait)[0]


def _get(wait: bool) -> tuple[Zygote, bool]:
    """(the process-wide zygote, whether this call started it)."""
    global _zygote
    started = False
    with _zlock:
        if _zygote is None or not _zygote.alive():
            if _zygote is not None and _zygote.owner == os.getpid():
                _zygote.close()
            _zygote = Zygote()
            atexit.register(_zygote.close)
            started = True
        z = _zygote
    if wait:
        z.ready()
    return z, started


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1])))
