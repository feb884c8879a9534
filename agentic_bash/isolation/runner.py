"""The sandbox process: namespaces, pid-1 reaper, own root, self-restriction, then serving Executor calls."""

# Process tree of one sandbox (namespace level):
#   S2  pid 1 of the new pid namespace, cloned by the zygote straight into new
#       user+mnt+pid+uts+ipc[+net] namespaces (syscalls.clone_fork): joins its cgroups, writes
#       its uid/gid maps, builds the root, pivots, forks S3, drops every privilege and only
#       reaps; when S3 exits it exits and the kernel kills the namespace. Its pidfd turns
#       readable only once every process of the namespace is gone.
#   S3  the interpreter: setsid, no_new_privs, caps dropped, Landlock, seccomp, then serves
# Where clone3 is refused or unavailable, the zygote forks S1 instead, which unshares, writes
# the maps and forks S2, then waits for it (so the host sees EOF on the channel only when
# every sandbox process is gone). At the landlock level there are no namespaces: S1 is a
# child subreaper that kills leftover descendants when S3 exits.

from __future__ import annotations

import importlib
import os
import pickle
import queue
import resource
import signal
import socket
import struct
import threading
import time
from time import monotonic as _monotonic
from typing import Any, Callable

from ..executors.native import memfd
from ..network import inside as _net_inside  # noqa: F401 - preloaded with the runner (zygote)
from . import syscalls as sc
from .wire import Reader, WireClosed, flight_headroom, send_msg

__all__ = ["namespace_flags", "observe", "sandbox_main", "sandbox_main_direct", "serve"]

PR_SET_DUMPABLE = 4


def _mark(cfg: dict[str, Any], name: str) -> None:
    """(create13) This thread's CPU (ms) and minor page faults at a start-up step, for
    observed["cpu"] (pid 1's steps reach the runner through the fork or pid 1's byte)."""
    cfg["m_" + name] = (round(time.thread_time() * 1e3, 3),
                        resource.getrusage(resource.RUSAGE_THREAD).ru_minflt)
PR_SET_CHILD_SUBREAPER = 36


def _fatal(sock: socket.socket, where: str, exc: BaseException) -> None:
    try:
        # (fresh15) imported here: traceback and textwrap were ~2 ms of the zygote's start
        import traceback
        trace = traceback.format_exc(limit=8)
    except Exception:  # noqa: BLE001 - the message goes out without its trace
        trace = ""
    try:
        send_msg(sock, {"ev": "fatal", "where": where, "type": type(exc).__name__,
                        "msg": str(exc), "trace": trace})
    except Exception:  # noqa: BLE001
        pass


def _write(path: str, data: str) -> None:
    with open(path, "w") as f:
        f.write(data)


def sandbox_main(cfg: dict[str, Any], sock: socket.socket) -> int:
    """Runs in S1 (just forked from the zygote). Returns the exit status for os._exit."""
    # Everything inherited from the zygote out of the collector's sight (S2 and S3 inherit
    # this): a collection here that walked the zygote's not yet frozen objects (those of its
    # idle warm-up) would write to each one's header and copy its page into this sandbox
    import gc
    gc.freeze()
    cfg["t_s1"] = time.time()
    try:
        sc.set_pdeathsig(signal.SIGKILL)  # the zygote died: so does every sandbox
        _limits_s1(cfg)
        cfg["t_joined"] = time.time()
        if cfg["level"] == "namespace":
            return _s1_namespace(cfg, sock)
        return _s1_landlock(cfg, sock)
    except BaseException as e:  # noqa: BLE001
        _fatal(sock, "setup", e)
        return 1


def namespace_flags(cfg: dict[str, Any]) -> int:
    """The namespaces a sandbox of ``cfg`` (namespace level) gets."""
    flags = (sc.CLONE_NEWUSER | sc.CLONE_NEWNS | sc.CLONE_NEWPID | sc.CLONE_NEWUTS |
             sc.CLONE_NEWIPC)
    if _own_netns(cfg):
        flags |= sc.CLONE_NEWNET
    return flags


def _enter_userns(cfg: dict[str, Any], uid: int, gid: int) -> None:
    """Just after the namespaces are made (uid/gid: our ids outside them)."""
    # One id only (a process may map just its own euid from inside): the session's uid (1000
    # "user", or 0 for Sandbox(user="root")) is the caller's uid. As real root that makes the
    # root-owned /usr, /etc, ... the sandbox user's own, so copy-up writes work without any
    # capability; every other host id shows as nobody.
    _write("/proc/self/setgroups", "deny")
    _write("/proc/self/uid_map", f"{int(cfg.get('uid', 0))} {uid} 1")
    _write("/proc/self/gid_map", f"{int(cfg.get('gid', 0))} {gid} 1")
    _userns_limits()
    _ipc_limits(cfg)
    _network_prepare(cfg)
    cfg["t_unshared"] = time.time()
    _mark(cfg, "unshared")


def sandbox_main_direct(cfg: dict[str, Any], sock: socket.socket, uid: int, gid: int) -> int:
    """Runs in S2, cloned by the zygote into its new namespaces (see the top of this file);
    ``uid``/``gid``: the zygote's effective ids (unmapped in here until the maps are written).
    Returns the exit status for os._exit."""
    import gc
    gc.freeze()   # (as in sandbox_main)
    cfg["t_s1"] = cfg["t_unshare"] = time.time()
    _mark(cfg, "s1")
    cfg["direct_clone"] = True   # (no S1: one task less under RLIMIT_NPROC, watchdog.py)
    try:
        sc.set_pdeathsig(signal.SIGKILL)  # the zygote died: so does every sandbox
        # cgroups first: every process of the sandbox is started after this (a file of a
        # group we made, owned by our uid outside; no capability is used)
        _limits_s1(cfg)
        cfg["t_joined"] = time.time()
        _mark(cfg, "joined")
        _enter_userns(cfg, uid, gid)
        try:
            send_msg(sock, {"ev": "init_pid", "pid": None})  # this process: gone = all gone
        except OSError:
            pass
    except BaseException as e:  # noqa: BLE001
        _fatal(sock, "setup", e)
        return 1
    try:
        return _s2_init(cfg, sock)
    except BaseException as e:  # noqa: BLE001
        _fatal(sock, "root", e)
        return 1


def _s1_namespace(cfg: dict[str, Any], sock: socket.socket) -> int:
    flags = namespace_flags(cfg)
    uid, gid = os.geteuid(), os.getegid()
    sc.unshare(flags)
    cfg["t_unshare"] = time.time()
    _enter_userns(cfg, uid, gid)
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            code = _s2_init(cfg, sock)
        except BaseException as e:  # noqa: BLE001
            _fatal(sock, "root", e)
        os._exit(code)
    # S1 keeps its copy of the channel open until the whole namespace is gone (see above)
    try:
        send_msg(sock, {"ev": "init_pid", "pid": pid})  # for the host: gone = all gone
    except OSError:
        pass
    while True:
        try:
            _, status = os.waitpid(pid, 0)
            return os.waitstatus_to_exitcode(status) & 0xFF
        except ChildProcessError:
            return 0
        except InterruptedError:
            continue


def _s2_init(cfg: dict[str, Any], sock: socket.socket) -> int:
    from .rootfs import build_root

    cfg["t_s2"] = time.time()
    _mark(cfg, "s2")
    sc.set_pdeathsig(signal.SIGKILL)
    # $$ is this process's pid: `ps -p $$ -o comm=` and /proc/$$/comm say bash, as for a
    # shell (the runner forked below inherits the name; programs take their own at exec)
    sc.set_name("bash")
    usage_fd = _memory_usage_fd(cfg)   # (compat11) before the host's cgroupfs is out of reach
    stat_fd = _memory_usage_fd(cfg, "memory.stat")   # (compat12)
    t0 = time.monotonic()
    # (the host's root stays attached at rootfs.OLD_ROOT until detach_old_root() below, after
    # S3's fork: S3 runs only this package's code until it has pid 1's byte on s2_done)
    facts = build_root(cfg, detach=False)
    facts["t_root"] = time.monotonic() - t0
    meminfo = _meminfo_install(cfg, facts, usage_fd, stat_fd)   # (compat12) before S3 exists
    cfg["t_rooted"] = time.time()
    _mark(cfg, "rooted")
    _send_layer_fd(sock)
    try:
        sc.sethostname("sandbox")   # (before S3 exists: it must never see the host's name)
    except OSError:
        pass
    sup_parent, sup_child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    sig_r, sig_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)  # signals for the shell (S2 -> S3)
    # S3 starts while this process detaches the host's root (an RCU grace period: 3-6 ms of
    # wall) and sets up the network (loopback, the proxy's listeners, the nftables redirect:
    # ~2 ms of CPU that S3's own start-up no longer waits behind). S3 writes nothing on the
    # channel before this process says it is done (one byte on s2_done: the host's root is
    # detached, the listeners are sent and closed, this process holds no capability any more)
    done_r, done_w = os.pipe2(os.O_CLOEXEC)
    _mark(cfg, "fork")
    pid = os.fork()
    if pid == 0:
        _mark(cfg, "s3_forked")
        code = 1
        try:
            sup_parent.close()
            os.close(sig_w)
            os.close(done_w)
            if meminfo is not None:
                meminfo.close()   # (the view's writable descriptor is pid 1's alone)
            cfg["_s2_done_fd"] = done_r
            code = _s3_main(cfg, sock, facts, sup_child, sig_r)
        except BaseException as e:  # noqa: BLE001
            try:
                sup_child.close()   # (pid 1 may be waiting for the listener: EOF instead)
                _wait_s2(cfg)       # (its frames first; then this one, whole)
            except BaseException:  # noqa: BLE001
                pass
            _fatal(sock, "runner", e)
        os._exit(code)
    os.close(done_r)
    sup_child.close()
    os.close(sig_r)
    try:
        from .rootfs import detach_old_root
        detach_old_root()
    except BaseException as e:  # noqa: BLE001 - the sandbox must not start with the host's root
        _fatal(sock, "root", e)
        os.kill(pid, signal.SIGKILL)
        sock.close()
        raise
    t_detached = time.time()
    _mark(cfg, "detached")
    try:
        if _own_netns(cfg):
            _loopback_up()
            _network_start(cfg, sock)
    except BaseException as e:  # noqa: BLE001 - the sandbox must not start without it
        _fatal(sock, "network", e)
        os.kill(pid, signal.SIGKILL)
        raise
    finally:
        sock.close()
    # pid 1 runs no untrusted code, but shares uid with everything in the sandbox: make it
    # unreadable through /proc and give up the namespace's capabilities. (attack13) Fail
    # closed: before, an OSError here was swallowed (the later steps skipped too) and the
    # runner still got its byte; now the runner is told pid 1 failed and the sandbox does
    # not start (S3's _wait_s2 raises; the host's Sandbox() fails with the reason).
    try:
        s2_drop_privileges()
    except OSError:
        try:
            os.write(done_w, b"0")
        except OSError:
            pass
        os.close(done_w)
        from .watchdog import reap_until
        return reap_until(pid)
    # the supervisor answers from before the runner's first run (S3 sent its listener, or
    # "-", long before it waits for the byte below; on its error path it closes its end)
    _start_supervisor(sup_parent, pid, sig_w,
                      "/dev/shm" if _memfd_redirect(cfg) else None,
                      *_memory_view(cfg, usage_fd),
                      figures=meminfo.memory.read if meminfo is not None else None)
    if meminfo is not None:
        _meminfo_start(meminfo)
    try:
        # (with the moment the host's root was detached: S3 reports it in its timing)
        _mark(cfg, "done")
        os.write(done_w, b"1" + struct.pack("dddqq", t_detached, cfg["m_detached"][0],
                                            cfg["m_done"][0], cfg["m_detached"][1],
                                            cfg["m_done"][1]))
    except OSError:
        pass   # (S3 is gone: reaped below)
    os.close(done_w)
    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(s, signal.SIG_IGN)
    # (create12) the heap its start-up freed back to the kernel, after the runner has its
    # byte: 0.7 MB of an idle sandbox's private memory (4.6 -> 3.9 MB USS for pid 1)
    try:
        sc._libc.malloc_trim(0)
    except (AttributeError, OSError):
        pass   # (not glibc)
    if (cfg.get("resources") or {}).get("watchdog"):
        from .watchdog import s2_wait_with_watchdog
        return s2_wait_with_watchdog(cfg, pid)
    if (cfg.get("resources") or {}).get("fd_guard"):   # (attack12: the open-file table)
        from .watchdog import s2_wait_with_fd_guard
        return s2_wait_with_fd_guard(cfg, pid)
    from .watchdog import reap_until
    return reap_until(pid)


def s2_drop_privileges() -> None:
    """pid 1, once the root and the network are set up: non-dumpable, no_new_privs, every
    capability of its namespace dropped (bounding set too). Raises OSError if any fails."""
    sc.prctl(PR_SET_DUMPABLE, 0)
    sc.set_no_new_privs()
    sc.drop_all_caps()


def _wait_s2(cfg: dict[str, Any]) -> None:
    """S3, before its first frame on the channel: wait until pid 1 has sent its own (the
    network listeners), detached the host's root and dropped its privileges (see _s2_init).
    Raises if pid 1 died."""
    fd = cfg.pop("_s2_done_fd", None)
    if fd is None:
        return
    try:
        while True:
            try:
                got = os.read(fd, 41)   # (one write of 41 bytes: a pipe keeps it whole)
                break
            except InterruptedError:
                continue
    finally:
        os.close(fd)
    if got[:1] != b"1":
        raise OSError("pid 1 of the sandbox failed before the runner was ready")
    if len(got) == 41:
        cfg["t_detached"], c1, c2, f1, f2 = struct.unpack("dddqq", got[1:])
        cfg["m_detached"], cfg["m_done"] = (c1, f1), (c2, f2)


def _limits_s1(cfg: dict[str, Any]) -> None:
    """Resource limits, in S1 before unshare: join the sandbox's cgroups (everything started
    after this is inside) and prepare what S2 and S3 need (isolation/watchdog.py)."""
    if cfg.get("resources"):
        from .watchdog import s1_join
        s1_join(cfg)


def _send_layer_fd(sock: socket.socket) -> None:
    """Give the host an O_PATH fd of the session layer: it keeps the layer's tmpfs alive
    after this sandbox dies, so a restart can carry the files over (DESIGN.md decision 10).
    The host reads it only once every process of this sandbox is gone."""
    from .rootfs import LAYER_PATH
    try:
        fd = os.open(LAYER_PATH, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return
    try:
        send_msg(sock, {"ev": "layer_fd"}, fds=[fd])
    finally:
        os.close(fd)


def _own_netns(cfg: dict[str, Any]) -> bool:
    from ..network.inside import own_netns
    return own_netns(cfg)


SIGPENDING_MAX = 4096
"""RLIMIT_SIGPENDING of the runner and every program it starts (namespace level)."""

USERNS_LIMITS = {"max_inotify_instances": 16, "max_inotify_watches": 8192,
                 "max_fanotify_groups": 4, "max_fanotify_marks": 8192}
"""The sandbox's user namespace's own per-user limits (/proc/sys/user; S1 holds
CAP_SYS_RESOURCE there). The kernel charges these counts to every ancestor namespace's user
too: before (attack10), a sandbox's 120 inotify instances were host root's 128, and the host
root's own inotify_init1 failed with EMFILE until the sandbox let go."""


def _userns_limits() -> None:
    for name, value in USERNS_LIMITS.items():
        try:
            _write(f"/proc/sys/user/{name}", str(value))
        except OSError:
            pass   # (an older kernel without the knob: the host's own limit applies)


IPC_LIMITS = {"msgmni": "32", "sem": "250 8192 32 128"}
"""(attack13) The sandbox's IPC namespace: SysV message queues (32 of ``msgmnb``, 16 KiB) and
semaphores (8,192 in all), memory no process owns (the kernel's defaults allow 32,000 queues,
500 MiB, and 1e9 semaphores); shared memory gets ``resources.unowned_caps``'s share."""


def _ipc_limits(cfg: dict[str, Any]) -> None:
    """(attack13) Just after the namespaces are made: /proc/sys/kernel's IPC knobs are the
    writer's IPC namespace's, and it is ours (its owner is the new user namespace). What a
    kill cannot free must leave the runner room in the memory cgroup (the OOM killer
    otherwise takes the runner: SandboxCrashed); read-only inside afterwards."""
    caps = (cfg.get("resources") or {}).get("unowned")
    if not caps:
        return
    sysv = int(caps["sysv"])
    for name, value in (("shmmax", str(sysv)), ("shmall", str(max(1, sysv >> 12))),
                        *IPC_LIMITS.items()):
        try:
            _write(f"/proc/sys/kernel/{name}", value)
        except OSError:
            pass   # (a kernel without the knob: its default applies)


def _network_prepare(cfg: dict[str, Any]) -> None:
    """Network step of S1 (just unshared; the host's /proc still reaches the new namespace's
    sysctls): what the redirect of proxy-unaware tools needs before the root is built."""
    from ..network.inside import prepare_netns
    prepare_netns(cfg)


def _network_start(cfg: dict[str, Any], sock: socket.socket) -> None:
    """Network step of S2 (own netns, loopback up, still privileged in it): the proxy and DNS
    listeners are created here and passed to the host before anything else is sent."""
    from ..network.inside import send_listeners
    send_listeners(cfg, sock)


def _loopback_up() -> None:
    """A fresh network namespace has only `lo`, and it is down."""
    import fcntl
    import struct

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        ifr = struct.pack("16sH14x", b"lo", 0)
        flags = struct.unpack("16sH14x", fcntl.ioctl(s, 0x8913, ifr))[1]  # SIOCGIFFLAGS
        fcntl.ioctl(s, 0x8914, struct.pack("16sH14x", b"lo", flags | 0x1 | 0x40))  # UP|RUNNING


def _memfd_redirect(cfg: dict[str, Any]) -> bool:
    """(attack10) Memory is only watched, not a cgroup's: workload memfds become files of the
    sandbox's /dev/shm (seccomp_filter.Supervisor._memfd), which the watchdog counts."""
    return bool((cfg.get("resources") or {}).get("watchdog")) and cfg.get("level") == "namespace"


def _memory_usage_fd(cfg: dict[str, Any], name: str | None = None) -> int | None:
    """The sandbox's memory cgroup's usage file (v1 ``memory.usage_in_bytes``, v2
    ``memory.current``), opened read-only for the supervisor's sysinfo answer; or its file
    ``name`` (compat12: memory.stat, for /proc/meminfo)."""
    mem = (cfg.get("resources") or {}).get("memory_counters") or {}
    if not mem.get("peak") or cfg.get("level") not in ("namespace", "landlock"):
        return None
    name = name or ("memory.usage_in_bytes" if mem.get("reset") == "0" else "memory.current")
    try:
        return os.open(os.path.join(os.path.dirname(mem["peak"]), name),
                       os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None


def _memory_view(cfg: dict[str, Any], usage_fd: int | None) -> tuple[int | None, Any, Any]:
    """(compat11) What the supervisor answers sysinfo(2) with: the sandbox's memory limit as
    the machine's RAM (None: the host's figures; the landlock level only with a memory
    cgroup, it has no watchdog), how to read what the sandbox uses now (its memory cgroup,
    else the watchdog's last sample), and the per-program cap (``max_process_memory``)."""
    lim = cfg.get("limits")
    if cfg.get("level") not in ("namespace", "landlock"):
        return None, None, None
    limit = getattr(lim, "max_memory_bytes", None)
    if cfg.get("level") == "landlock" and usage_fd is None:
        limit = None   # (not enforced there: only the per-program cap is real)
    cap = getattr(lim, "max_process_memory", None)
    page = cfg.get("_watchdog_page")
    if limit is None or (usage_fd is None and page is None):
        return limit, None, cap
    if usage_fd is not None:
        return limit, lambda: int(os.pread(usage_fd, 32, 0)), cap
    return limit, lambda: page.get("last") or None, cap


def _meminfo_install(cfg: dict[str, Any], facts: dict[str, Any], usage_fd: int | None,
                     stat_fd: int | None) -> Any:
    """(compat12) pid 1, root built: the sandbox's own /proc/meminfo (isolation/procfs.py),
    at the namespace level when the memory limit is enforced (a memory cgroup or the
    watchdog). ``facts["meminfo"]`` says which view programs get (for the report)."""
    limit, used, _cap = _memory_view(cfg, usage_fd)
    if cfg.get("level") != "namespace" or limit is None or used is None:
        facts["meminfo"] = ("host (no mount namespace)" if cfg.get("level") != "namespace"
                            else "host (no memory limit)" if limit is None
                            else "host (the sandbox's memory is not measured)")
        return None
    from .procfs import SandboxMemory, install_meminfo
    v1 = ((cfg.get("resources") or {}).get("memory_counters") or {}).get("reset") == "0"
    t0 = time.monotonic()
    try:
        view = install_meminfo(SandboxMemory(limit, usage_fd, stat_fd, v1=v1,
                                             last=None if usage_fd is not None else used))
    except Exception as e:  # noqa: BLE001 - the kernel's file stays; the report says so
        facts["meminfo"] = f"host ({getattr(e, 'strerror', None) or e})"
        return None
    facts["meminfo"] = "sandbox (memory cgroup)" if usage_fd is not None else "sandbox (watchdog)"
    facts["t_meminfo"] = round(time.monotonic() - t0, 6)
    return view


def _meminfo_start(view: Any) -> None:
    """pid 1's main thread, S3 forked: the view answers each open from here on."""
    try:
        view.start()
    except Exception as e:  # noqa: BLE001 - the file keeps the figures of its last rewrite
        view.mode = "static" + repr(e).replace(" ", "_")


def _start_supervisor(sup: socket.socket, runner: int | None = None, signals: int | None = None,
                      memfd_dir: str | None = None, memory: int | None = None,
                      used: Any = None, process_memory: int | None = None,
                      figures: Any = None) -> None:
    """Receive the seccomp listener from the runner (or b"-" when it has none) and answer
    its notifications on a thread; each refusal is reported back over ``sup``."""
    import json

    from .seccomp_filter import Supervisor, recv_fd
    fd = recv_fd(sup)
    if fd is None:
        sup.close()
        return

    def report(detail: str) -> None:
        try:
            sup.send(json.dumps({"kind": "syscall", "detail": detail}).encode(),
                     socket.MSG_DONTWAIT)
        except OSError:
            pass

    Supervisor(fd, report, protect=runner, signals=signals, memfd_dir=memfd_dir,
               memory=memory, used=used, process_memory=process_memory,
               figures=figures).start()


def _s1_landlock(cfg: dict[str, Any], sock: socket.socket) -> int:
    sc.prctl(PR_SET_CHILD_SUBREAPER, 1)
    sup_parent, sup_child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            sup_parent.close()
            sc.set_pdeathsig(signal.SIGKILL)  # S1 killed from outside: the runner goes too
            code = _s3_main(cfg, sock, {"uppers": [], "overlay_mounts": []}, sup_child)
        except BaseException as e:  # noqa: BLE001
            _fatal(sock, "runner", e)
        os._exit(code)
    sup_child.close()
    _start_supervisor(sup_parent, pid, None, None, *_memory_view(cfg, _memory_usage_fd(cfg)))
    code = 0
    while True:
        try:
            p, status = os.waitpid(-1, 0)
        except ChildProcessError:
            break
        if p == pid:
            code = os.waitstatus_to_exitcode(status) & 0xFF
            _kill_descendants()
    return code


def _kill_descendants() -> None:
    """Orphans re-parented to this subreaper: kill them (and their groups) until none is left."""
    from .procstat import PPID, processes
    me = str(os.getpid()).encode()
    for _ in range(50):
        kids = [pid for pid, f in processes() if f[PPID] == me]
        if not kids:
            return
        for k in kids:
            for fn in (os.killpg, os.kill):
                try:
                    fn(k, signal.SIGKILL)
                except OSError:
                    pass
        time.sleep(0.005)
        while True:
            try:
                if os.waitpid(-1, os.WNOHANG)[0] == 0:
                    break
            except ChildProcessError:
                break


def _s3_main(cfg: dict[str, Any], sock: socket.socket, facts: dict[str, Any],
             sup: socket.socket | None = None, signals: int | None = None) -> int:
    os.setsid()
    # (host15) SCHED_BATCH: a runner woken by the host's request does not preempt the host
    # (the kernel never wakeup-preempts for a batch task); the host's one thread serving many
    # sandboxes then finishes its batch of sends before the runners take the CPUs, instead of
    # losing it at every send. Inherited by this process's threads and programs; a
    # scheduling preference, not a confinement (a program may switch itself back).
    try:
        os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))
    except (OSError, AttributeError):
        pass
    os.umask(0o022)
    host_files = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if cfg.get("resources"):
        # rlimits and the oom_score_adj file, while this process may still open it
        from .watchdog import s3_prepare
        s3_prepare(cfg)
    if cfg.get("level") == "namespace":
        # (attack10) queued signals are counted per user in every ancestor user namespace:
        # 96k of them queued to a blocked signal inside made host root's timer_create(2)
        # fail with EAGAIN. The count in the sandbox's namespace is checked against this.
        try:
            resource.setrlimit(resource.RLIMIT_SIGPENDING, (SIGPENDING_MAX, SIGPENDING_MAX))
        except (OSError, ValueError):
            pass
    workdir = cfg.get("workdir") or "/workspace"
    os.chdir(workdir)
    # The zygote was exec'd with a minimal environment; nothing of the host's leaks here.
    home = cfg.get("home") or workdir
    os.environ.clear()
    os.environ.update({"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                       "HOME": home, "LANG": "C.UTF-8"})
    t_s3 = time.time()
    _mark(cfg, "s3")
    landlock_error = ""
    landlock_abi = 0
    seccomp_error = ""
    sc.prctl(PR_SET_DUMPABLE, 0)
    sc.drop_all_caps()
    sc.set_no_new_privs()
    if cfg.get("landlock_abi", 0) > 0:
        from .landlock_rules import apply_landlock
        from .rootfs import writable_paths
        try:
            if cfg["level"] == "namespace":
                landlock_abi = apply_landlock(cfg["landlock_abi"], ["/"], writable_paths(cfg))
            else:
                from .landlock_rules import host_read_rules
                read, list_only = host_read_rules(cfg)
                landlock_abi = apply_landlock(cfg["landlock_abi"], read,
                                              list(cfg.get("writable", ())), list_only=list_only)
        except OSError as e:
            landlock_error = str(e)
    seccomp_notify = False
    if cfg.get("seccomp"):
        from .seccomp_filter import apply_seccomp, deny_list, send_fd
        deny = deny_list(allow_ptrace=bool(cfg.get("allow_ptrace")))
        try:
            if cfg.get("seccomp_notify") and sup is not None:
                try:
                    listener = apply_seccomp(deny, notify=True, protect=os.getpid(),
                                             memfd=_memfd_redirect(cfg))
                except OSError:
                    listener = None
                    apply_seccomp(deny, protect=os.getpid())
                if listener is not None:
                    # Security invariant: the listener leaves this process at once; whoever
                    # holds it decides the outcome of refused calls.
                    send_fd(sup, listener)
                    os.close(listener)
                    seccomp_notify = True
            else:
                apply_seccomp(deny, protect=os.getpid())
        except Exception as e:  # noqa: BLE001 - reported, and verify() sees Seccomp: 0
            seccomp_error = f"{type(e).__name__}: {e}"
    if sup is not None and not seccomp_notify:
        try:
            sup.send(b"-")
        except OSError:
            pass
        sup.close()
        sup = None
    elif sup is not None:
        sup.setblocking(False)
    t_restricted = time.time()
    _mark(cfg, "restricted")
    t0 = time.monotonic()
    imports: dict[str, Any] = dict(pin_imports(cfg, facts, landlock_abi > 0))
    imports["t"] = round(time.monotonic() - t0, 5)
    t_pinned = time.time()
    _mark(cfg, "pinned")
    observed = observe(cfg.get("host_ns", {}))
    observed["imports"] = imports
    observed["timing"] = {k: round(v, 4) for k, v in (
        ("s1", cfg["t_s1"]), ("joined", cfg.get("t_joined", 0)),
        ("unshare", cfg.get("t_unshare", 0)), ("unshared", cfg.get("t_unshared", 0)),
        ("s2", cfg.get("t_s2", 0)), ("rooted", cfg.get("t_rooted", 0)),
        ("s3", t_s3), ("restricted", t_restricted), ("pinned", t_pinned))}
    observed.update(facts, landlock_abi_applied=landlock_abi, landlock_error=landlock_error,
                    seccomp_error=seccomp_error, seccomp_notify=seccomp_notify,
                    limits=cfg.get("limits_observed", {}))
    t0 = time.monotonic()
    factory = _resolve(cfg["executor_factory"])
    executor = factory(cfg)
    if cfg.get("_engine_error"):
        observed["engine_error"] = cfg["_engine_error"]   # (compat12: the report warns)
    # (cspawn14) whether programs start through the compiled spawn (a speed, not a protection)
    try:
        from ..executors.native import FAST_SPAWN
        observed["fast_spawn"] = FAST_SPAWN
    except ImportError as e:
        observed["fast_spawn"] = f"unavailable: {e}"
    observed["t_executor"] = time.monotonic() - t0
    observed["timing"]["executor"] = round(time.time(), 4)
    _mark(cfg, "executor")
    scanner = None
    try:
        from .layerscan import LayerScanner
        uppers = facts.get("uppers") or ([{"target": workdir, "upper": workdir}]
                                         if cfg["level"] == "landlock" else [])
        scanner = LayerScanner(uppers)
        if cfg["level"] != "namespace":
            # (no pid namespace: /proc is the host's, never quiet; the scanner stays
            # untrusted and reads every non-empty upper, without a listing per run)
            scanner.quiet = lambda: False
        # (attack9) export_layer's bound: a sparse file costs the layer nothing, but a tar
        # holds every byte of it (S3 ran out of memory building one and died)
        size = cfg.get("layer_size") if cfg["level"] == "namespace" else None
        # (+ headers: ~1.5 KiB an entry, so a small layer of many empty files still fits)
        scanner.max_bytes = max(size + size // 4, 512 << 20) if size else None
    except Exception:  # noqa: BLE001 - change tracking of native writes is best effort
        scanner = None
    # pid 1's byte: the host's root is detached (and the network set up, pid 1's privileges
    # dropped) before anything here touches a path that input chose (the layer's tar below)
    _mark(cfg, "scanner")
    _wait_s2(cfg)
    observed["timing"].update(detached=round(cfg.get("t_detached", 0), 4),
                              s2_done=round(time.time(), 4))
    extras: dict[str, str] = {}
    if cfg.get("layer_tar"):
        import base64
        import io

        from ..vfs.oci import import_layer
        got = import_layer(io.BytesIO(cfg["layer_tar"]), executor.fs)
        extras = {k: base64.b64encode(v).decode() for k, v in got.items()}
        if scanner is not None:
            scanner.refresh()
    if seccomp_notify and signals is not None and hasattr(executor, "signal_fd"):
        # signals programs send the shell, written by pid 1's supervisor (seccomp_filter
        # FORWARDED); the shell reads them after each program it runs and in `wait`
        executor.signal_fd = signals
    elif signals is not None:
        os.close(signals)
    native = cfg.get("_native")
    if getattr(native, "_workload", None) is not None and (cfg.get("workload") or {}).get(
            "spawner_fds"):
        # whether the launcher's threads sit in the workload's pids group (its pids.max has
        # their slots; the host takes them away when they do not). The spawner thread has
        # been joining them since the executor was made; waited for only here.
        observed.setdefault("limits", {})["spawner_in_group"] = bool(native.workload_joined())
    # (lead, a small edit in pool10's file) last before the workload: descriptors in flight
    # are counted per user against the sender's limit; the workload stays below the host's
    flight_headroom(host_files)
    observed["timing"]["ready"] = round(time.time(), 4)
    _mark(cfg, "ready")
    # (create13) [CPU ms, minor faults] of pid 1's main thread (s1 .. done) and of this
    # process's (s3_forked .. ready) at each step, counted from each one's start
    observed["cpu"] = {k[2:]: v for k, v in cfg.items() if k.startswith("m_")}
    send_msg(sock, {"ev": "ready", "observed": observed, "pid": os.getpid(),
                    "layer_extras": extras})
    limits = getattr(executor, "shell", None) is not None and getattr(executor, "limits", None)
    if limits:
        # (sessions14) a first command's copy-on-write faults taken while the sandbox waits
        # to be used, on a throwaway shell (isolation/warmup.py); before the usage figures'
        # baselines
        from .warmup import warm_up
        warm_up(sock, limits)
    usage = None
    if cfg.get("resources"):
        from .watchdog import S3Usage
        usage = S3Usage(cfg)
    serve(sock, executor, scanner, sup, usage=usage)
    return 0


def pin_imports(cfg: dict[str, Any], facts: dict[str, Any], landlocked: bool) -> dict[str, int]:
    """Make every later import of this process come from code the workload cannot change.

    The runner imports lazily (snapshots, the file API, rare commands, codecs). Its import
    roots are host paths bound at the same path, often under a directory the workload owns
    (a package under the host's /tmp: its parent is a directory of the sandbox's /tmp), so the
    workload could break them (``chmod 000 /tmp``: ModuleNotFoundError in the runner) or plant
    a module in a root it may write (PYTHONPATH's directory: code run by the runner). Here,
    before any workload command: each sys.path entry and package __path__ entry the workload
    may write is replaced by the same directory of the overlay's read-only lower when there is
    one, else dropped; the rest are reached through an O_PATH descriptor (/proc/self/fd/N), so
    no later chmod or rename of an ancestor changes what they resolve to. Bytecode is read
    only next to its source (no pycache prefix, which would name a path the workload can
    create). Returns counts (pinned, dropped, kept) for the observed facts."""
    import stat
    import sys

    if cfg["level"] == "namespace":
        from .rootfs import writable_paths
        writable = writable_paths(cfg)
    else:
        writable = [os.path.realpath(w) for w in cfg.get("writable", ())]
    lowers = [(u["target"].rstrip("/") or "/", u["lower"]) for u in facts.get("uppers") or ()
              if u.get("lower")]
    proc_fd = os.path.isdir("/proc/self/fd")
    done: dict[str, str | None] = {}
    stats = {"pinned": 0, "dropped": 0, "kept": 0, "lower": 0}
    ro: dict[str, bool] = {}

    def under(p: str, tops: list[str]) -> bool:
        return any(p == t or p.startswith(t.rstrip("/") + "/") for t in tops)

    def immune(p: str) -> bool:
        """Every directory from / down to ``p`` is on a read-only mount and none is a
        symlink: nothing can rename, chmod, replace or add to them (a mount point cannot
        be renamed either), so ``p`` stays as it is (rewriting it would copy the pages of
        its module into this process)."""
        parts = p.strip("/").split("/")
        if not p.startswith("/") or "." in parts or ".." in parts:
            return False
        cur = ""
        for part in [""] + parts:
            cur = f"{cur}/{part}" if cur not in ("", "/") else "/" + part
            got = ro.get(cur)
            if got is None:
                try:
                    got = (not stat.S_ISLNK(os.lstat(cur).st_mode)
                           and bool(os.statvfs(cur).f_flag & os.ST_RDONLY))
                except OSError:
                    got = False
                ro[cur] = got
            if not got:
                return False
        return True

    def may_write(fd: int, p: str) -> bool:
        if os.fstatvfs(fd).f_flag & os.ST_RDONLY:
            return False
        if cfg["level"] != "namespace" and not landlocked:
            return False   # no Landlock: the workload is the host user, nothing to keep from it
        real = os.path.realpath(p)
        return not landlocked or under(p, writable) or under(real, writable)

    # directories replaced by a descriptor or a lower: what lies below them is reached
    # through it, unless a path the workload may write is nested in them
    trusted: list[tuple[str, str]] = []

    def pin(p: str, depth: int = 0) -> str | None:
        if p in done:
            return done[p]
        if immune(p):
            stats["kept"] += depth == 0
            done[p] = p
            return p
        for top, new in trusted:
            if p.startswith(top) and not under_any(top):
                done[p] = new + p[len(top) - 1:]
                return done[p]
        out: str | None = None
        try:
            fd = os.open(p, os.O_PATH | os.O_CLOEXEC)
        except (OSError, ValueError, TypeError):
            fd = -1
        if fd >= 0:
            try:
                bad = may_write(fd, p)
            except OSError:
                bad = True
            if not bad:
                out = f"/proc/self/fd/{fd}" if proc_fd else p
                if not proc_fd:
                    os.close(fd)
            else:
                os.close(fd)
                real = os.path.realpath(p)
                for target, lower in lowers:
                    if depth == 0 and under(real, [target]):
                        out = pin(lower + real[len(target.rstrip("/")):], 1)
                        if out is not None:
                            stats["lower"] += 1
                        break
        if out is None:
            stats["dropped"] += 1
        else:
            if out.startswith("/proc/self/fd/"):
                stats["pinned"] += 1
            trusted.append((p.rstrip("/") + "/", out))
        done[p] = out
        return out

    def under_any(top: str) -> bool:
        return any(w.startswith(top) for w in writable)

    def pinned(paths: list[str]) -> list[str] | None:
        """The new list, or None when nothing in it changes."""
        new = [q for q in (pin(p) for p in paths if isinstance(p, str)) if q]
        return None if new == list(paths) else new

    # (only what changes is assigned, and what is replaced is kept, not freed: writing to or
    # freeing the zygote's objects copies their pages into this process)
    new = pinned(sys.path)
    if new is not None:
        _KEPT.append(sys.path)
        sys.path = new
    count, mods, entries = _PACKAGES
    if count != len(sys.modules):
        mods, entries = list(sys.modules.values()), None
    stats["all_modules"] = int(entries is None)
    if entries is not None:
        # (create13) only the packages with an entry that changes are touched: the entries
        # were copied in the zygote into a few pages of their own (note_packages), and
        # reading every package's __path__ here cost ~460 copy-on-write faults, ~2 ms
        hit: set[int] = set()
        for p, idx in entries.items():
            if p is None or pin(p) != p:
                hit.update(idx)
        mods = [mods[i] for i in sorted(hit)]
    for mod in mods:
        path = getattr(mod, "__path__", None)
        if path is None or isinstance(path, str):
            continue
        try:
            new = pinned(list(path))
            if new is None:
                continue
            _KEPT.extend(path)
            if isinstance(path, list):
                path[:] = new   # (in place: __spec__.submodule_search_locations is this list)
            else:
                mod.__path__ = new
        except (AttributeError, TypeError):
            continue
    # (the finders cached for the old paths stay: nothing names those paths any more, and
    # freeing them touched ~0.5 ms of shared pages)
    sys.pycache_prefix = None
    sys.dont_write_bytecode = True
    return stats


_PACKAGES: tuple[int, list[Any], dict[Any, tuple[int, ...]] | None] = (-1, [], None)
_KEPT: list[Any] = []


def note_packages() -> None:
    """In the zygote before a fork: the packages imported so far and a copy of their
    __path__ entries (pin_imports looks at these instead of every module: touching each
    module object in the sandbox copies its pages). ``entries``: each entry (a fresh copy of
    the string) -> the indexes of the packages that list it; under None the packages whose
    __path__ is not a plain list of strings (a namespace package's is recomputed from
    sys.path when read), which pin_imports always reads. Taken again only when sys.modules
    has grown: a regular package's __path__ changed in the zygote without an import would
    go unseen (the zygote runs only this package's code; its later steps import; reading
    every __path__ per request would fault the zygote's own shared pages)."""
    import sys
    global _PACKAGES
    if _PACKAGES[0] == len(sys.modules):
        return
    mods = list(sys.modules.values())
    pkgs = [m for m in mods if getattr(m, "__path__", None) is not None]
    entries: dict[Any, list[int]] = {None: []}
    for i, m in enumerate(pkgs):
        path = getattr(m, "__path__", None)
        if type(path) is not list or any(type(p) is not str for p in path):
            entries[None].append(i)
            continue
        for p in path:
            entries.setdefault((p + "\0")[:-1], []).append(i)
    _PACKAGES = (len(mods), pkgs, {k: tuple(v) for k, v in entries.items()})


def _resolve(spec: str) -> Callable[[dict[str, Any]], Any]:
    mod, _, attr = spec.partition(":")
    return getattr(importlib.import_module(mod), attr)


def observe(host_ns: dict[str, int]) -> dict[str, Any]:
    """What this process can prove about itself (the evidence behind the report)."""
    o: dict[str, Any] = {}
    try:
        with open("/proc/self/status") as f:
            for line in f:
                k, _, v = line.partition(":")
                v = v.strip()
                if k == "Seccomp":
                    o["seccomp_mode"] = int(v)
                elif k == "NoNewPrivs":
                    o["no_new_privs"] = int(v)
                elif k in ("CapEff", "CapPrm", "CapBnd", "CapInh", "CapAmb"):
                    o["cap_" + k[3:].lower()] = int(v, 16)
    except (OSError, ValueError):
        pass
    new = []
    for key, ino in host_ns.items():
        try:
            if os.stat(f"/proc/self/ns/{key}").st_ino != ino:
                new.append(key)
        except OSError:
            pass
    o["new_namespaces"] = new
    o["uid"] = os.getuid()
    return o


# -- serving ----------------------------------------------------------------------------------
_FIGURES = frozenset(("cpu_time", "peak_memory"))   # written into the header directly
_NO_FIGURES: dict[str, Any] = {}   # (read only)
_FILE_OPS = ("read_file", "write_file", "list_files", "exists", "remove", "get_state",
             "set_state", "cwd", "env", "realpath")


def _error_header(e: BaseException) -> dict[str, Any]:
    h: dict[str, Any] = {"ev": "error", "type": type(e).__name__, "msg": str(e)}
    if isinstance(e, OSError):
        h.update(errno=e.errno, strerror=e.strerror, filename=e.filename)
    for attr in ("limit", "kind", "detail", "line", "token", "message"):
        v = getattr(e, attr, None)
        if isinstance(v, (str, int)):
            h[attr] = v
    return h


def _jsonable(x: Any) -> Any:
    import json
    try:
        json.dumps(x)
        return x
    except (TypeError, ValueError):
        if isinstance(x, dict):
            return {str(k): _jsonable(v) for k, v in x.items()}
        if isinstance(x, (list, tuple, set, frozenset)):
            return [_jsonable(v) for v in x]
        if isinstance(x, bytes):
            return x.decode("utf-8", "surrogateescape")
        return repr(x)


def result_header(r: Any) -> tuple[dict[str, Any], bytes]:
    """A Result as a "result" frame. Fields at their default (no files, no violations,
    False, None, 0) are left out: the host reads each one with that default."""
    if r.files_created or r.files_modified or r.files_deleted:
        from ..result import cap_files
        r = cap_files(r)   # (attack10: 200k paths cost the host +77 MB)
    h: dict[str, Any] = {"ev": "result", "exit_code": r.exit_code, "duration": r.duration,
                         "cwd": r.cwd, "stdout_len": len(r.stdout_bytes)}
    if r.files_truncated:
        h["files_truncated"] = True
    if r.timed_out:
        h["timed_out"] = True
    if r.truncated:
        h["truncated"] = True
    if r.files_created:
        h["files_created"] = list(r.files_created)
    if r.files_modified:
        h["files_modified"] = list(r.files_modified)
    if r.files_deleted:
        h["files_deleted"] = list(r.files_deleted)
    if r.cpu_time:
        h["cpu_time"] = r.cpu_time
    if r.peak_memory:
        h["peak_memory"] = r.peak_memory
    if r.violations:
        h["violations"] = [[v.kind, v.detail] for v in r.violations]
    le = getattr(r, "limit_exceeded", None)
    if le is not None:
        h["limit_exceeded"] = le
    if r.extra:
        h["extra"] = _jsonable(r.extra)
    if r.packages_installed:
        h["packages_installed"] = [p.to_json() for p in r.packages_installed]
    return h, (r.stdout_bytes + r.stderr_bytes if r.stderr_bytes else r.stdout_bytes)


_devnull: list[Any] = []   # one /dev/null for every run without stdin (it has no state)


def _stdin_file(data: bytes) -> Any:
    """The run's stdin as a real file: native commands then share one fd and its offset, as
    in bash (`sleep 1; cat` leaves the input to cat), and no pump thread is needed. Without
    data it is /dev/null, opened once and kept (see ``_release_stdin``)."""
    if not data:
        if _devnull and not _devnull[0].closed:
            return _devnull[0]
        f = open(os.devnull, "rb", buffering=0)
        _devnull[:] = [f]
        return f
    fd = memfd("stdin")
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
    os.lseek(fd, 0, os.SEEK_SET)
    return os.fdopen(fd, "rb", buffering=0)  # no read-ahead: the offset is shared


def _release_stdin(f: Any) -> None:
    if not (_devnull and f is _devnull[0]):
        f.close()


class _StdinPipe:
    """A run's stdin streamed from the host (``run(stdin=<a pipe>)``, ``echo x | agentic-bash
    run``): a real pipe whose write end a thread fills with the host's ``stdin`` frames; after
    each chunk it asks for the next (``stdin_more``), so the host reads ahead of the script by
    at most one chunk plus the pipe's buffer, and a script that never reads never waits."""

    def __init__(self, send: Any, rid: Any) -> None:
        r, w = os.pipe()
        self.file = os.fdopen(r, "rb", buffering=0)
        self._w = w
        self._q: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        self._send = send
        self._rid = rid
        self._t = threading.Thread(target=self._pump, name="stdin", daemon=True)
        self._t.start()

    def put(self, chunk: bytes) -> None:
        self._q.put(chunk)

    def _pump(self) -> None:
        try:
            while True:
                chunk = self._q.get()
                if not chunk:   # EOF from the host, or the run is over
                    return
                view = memoryview(chunk)
                while view:
                    view = view[os.write(self._w, view):]
                self._send({"ev": "stdin_more", "id": self._rid})
        except OSError:
            pass
        finally:
            try:
                os.close(self._w)
            except OSError:
                pass

    def close(self) -> None:
        self._q.put(None)
        self.file.close()   # a writer blocked on a full pipe gets EPIPE


def _children() -> set[int]:
    """Pids (with start times) of this process's direct children."""
    from .procstat import PPID, processes
    me = str(os.getpid()).encode()
    return {pid for pid, f in processes() if f[PPID] == me}


def _kill_new_children(before: set[int], grace: float = 0.05) -> None:
    """Backstop after a timed-out run: whatever the run started and left behind (and its
    process group) gets SIGTERM, up to ``grace`` seconds to exit (it returns as soon as no
    process of theirs is left but zombies), then SIGKILL. Jobs from earlier runs stay.
    (The grace was a fixed 50 ms sleep whenever the run left a child, even one already
    dead and not yet reaped by the job thread that ended it: the whole of the 50-60 ms
    `sleep 100 & wait` returned past its timeout.)"""
    from .procstat import PGRP, PPID, STATE, processes
    me = str(os.getpid()).encode()
    new = set()
    groups = set()
    for pid, f in processes():
        if f[PPID] == me and pid not in before:
            new.add(pid)
            if f[STATE] != b"Z":
                groups.add(pid)
    if not new:
        return
    for pid in new:
        for fn in (os.killpg, os.kill):
            try:
                fn(pid, signal.SIGTERM)
            except OSError:
                pass
    end = time.monotonic() + grace
    pause = 0.0005
    while groups and time.monotonic() < end:
        time.sleep(pause)
        pause = min(pause * 2, 0.008)
        left = set()
        for pid, f in processes():
            if f[STATE] != b"Z" and (pid in groups or int(f[PGRP]) in groups):
                left.add(pid)
        if not left:
            break
    for pid in new:
        for fn in (os.killpg, os.kill):
            try:
                fn(pid, signal.SIGKILL)
            except OSError:
                pass


def _merge_changes(r: Any, native: tuple[set[str], set[str], set[str]]) -> Any:
    if not (native[0] or native[1] or native[2] or r.files_created or r.files_modified
            or r.files_deleted):
        return r  # (nothing changed anywhere: no copy of the result)
    import dataclasses

    c = set(r.files_created) | native[0]
    m = (set(r.files_modified) | native[1]) - c
    d = (set(r.files_deleted) | native[2]) - c - m
    return dataclasses.replace(r, files_created=tuple(sorted(c)),
                               files_modified=tuple(sorted(m)), files_deleted=tuple(sorted(d)))


def _note_packages(manifest: Any, r: Any) -> Any:
    """The packages this run installed (``manifest``: the executor's ``packages``): what the
    apt shim noted plus pip/npm metadata files the run wrote (read here, inside the sandbox,
    where they are plain files)."""
    if r.files_created or r.files_modified or r.files_deleted:
        def read(p: str) -> bytes:
            with open(p, "rb") as f:
                return f.read(1 << 20)
        manifest.observe(r.files_created, r.files_modified, r.files_deleted, read)
    new = manifest.take_run()
    if not new:
        return r
    import dataclasses
    return dataclasses.replace(r, packages_installed=new)


def _drain_violations(sup: socket.socket | None, ready: Any = None) -> list[tuple[str, str]]:
    """The supervisor's reports of refused system calls waiting on ``sup``. ``ready``: a poll
    object on ``sup``; when it says nothing is waiting, nothing is read (a recv that fails
    with EAGAIN raises, ~1.5 us a run)."""
    if sup is None or (ready is not None and not ready.poll(0)):
        return []
    import json

    out: list[tuple[str, str]] = []
    while sup is not None:
        try:
            data = sup.recv(4096)
        except (BlockingIOError, InterruptedError):
            break
        except OSError:
            break
        if not data:
            break
        try:
            v = json.loads(data)
            out.append((str(v["kind"]), str(v["detail"])))
        except (ValueError, KeyError, TypeError):
            continue
    return out


_LEND_AFTER = 0.010
"""Seconds a run executes on the serving thread before the standby thread reads the channel.
(runner15: 10 ms, was 5: a native wait watches the channel itself once it has lasted 2 ms,
and the thread waking from that first 2 ms may wait in the run queue for milliseconds under
load (SCHED_BATCH does not preempt on wake-up); with 5 ms the timer fired first in ~35% of
back-to-back `sleep 0.05` runs and lent the channel for nothing. An interrupt of a loop of
builtins is read within 10 ms instead of 5.)"""
_LEND_KEEP = 0.008
"""In a burst of runs, a lend timer armed earlier is kept for a run when it fires at least this
many seconds after the run's start (serve's run_here); <= _LEND_AFTER, > native's _WATCH_AFTER."""
_BURST_GAP = 0.001
"""A run that begins within this many seconds of the last one's end is part of a burst (serve's
run_here: the lend timer is then not disarmed at its end)."""
_SIGALRM_BYTE = bytes([signal.SIGALRM])
_LEND_NOW = b"\xff"   # (no signal has this number)


def _on_alarm(signum: int, frame: Any) -> None:
    """SIGALRM's handler: nothing (the wakeup fd has already woken the standby thread)."""


def serve(sock: socket.socket, executor: Any, scanner: Any = None,
          sup: socket.socket | None = None, usage: Any = None) -> None:
    """Answer requests until ``close`` or EOF. Every reply and every output event carries the
    id of the request it answers (see wire.py).

    On the main thread (the sandbox's S3) a ``run`` executes on this thread itself, with no
    hand-off to another thread (a futex wake and a context switch per call; the echo round
    trip's largest item): frames that matter while it runs (interrupt, stdin, custom-command
    I/O, tty) are then read by a standby thread, which takes the channel over when the run
    has lasted ``_LEND_AFTER`` (a SIGALRM from an interval timer wakes it through the signal
    wakeup fd, even while this thread is in C code) or at once when the run needs it (streamed
    stdin, a tty, a custom command's call). It hands the channel back when the run ends;
    a frame for after the run (the next request) is kept for this thread. Elsewhere (not the
    main thread) runs go to a worker thread as before."""
    send_lock = threading.Lock()
    active: list[threading.Thread] = []
    current: list[Any] = [None]  # id of the run in progress
    calls: dict[int, Any] = {}   # custom-command calls waiting for the host, by call id
    staged: list[Any] = [None]   # a layer arriving in pieces (stage_layer)
    stdin_pipes: dict[Any, _StdinPipe] = {}   # runs whose stdin the host streams, by id
    # runs go to one long-lived worker thread (a thread started per run cost ~50 us);
    # ``idle`` is set while no run is in progress
    runs: queue.SimpleQueue[Any] = queue.SimpleQueue()
    idle = threading.Event()
    idle.set()

    def send(h: dict[str, Any], payload: bytes = b"") -> None:
        with send_lock:
            send_msg(sock, h, payload)

    native = getattr(executor, "native", None)
    manifest = getattr(executor, "packages", None)
    # The launcher's own books (every native child is its child), not a /proc scan:
    # scanning twice per run cost ~140 us, more than the rest of an `echo` round trip.
    live = getattr(native, "live", None)
    sup_ready = None
    if sup is not None:
        import select
        sup_ready = select.poll()
        sup_ready.register(sup.fileno(), select.POLLIN)

    def do_run(req: dict[str, Any], payload: bytes) -> None:
        # (the per-call path of every run, `echo hi` included: what is not needed for a run
        # without streaming, stdin, tty or children is not made)
        get = req.get
        rid = get("id")
        on_output = None
        if get("stream"):
            def on_output(fd: int, chunk: bytes) -> None:
                send({"ev": "out", "fd": fd, "id": rid}, bytes(chunk))
        if live is None:
            before = _children()
        else:
            before = {p.pid for p in tuple(live)} if live else set()
        spawned = getattr(native, "spawned", -1)
        how = get("stdin")
        pipe = stdin_pipes.get(rid) if how == "pipe" else None
        if pipe is not None:
            stdin = pipe.file
        else:
            stdin = _stdin_file(payload if how else b"")
        try:
            if usage is not None:
                usage.begin()
            t_run = _monotonic()
            t_out = get("timeout")
            by = get("by")
            if by is not None:
                # (contract12) the host's deadline, on the same clock: the time the request
                # took to arrive is not added to the run's
                t_out = max(0.0, by - t_run)
            tty = get("tty")
            if tty is None:
                # (by position: InProcessExecutor.run and _BashExecutor.run take them so)
                r = executor.run(req["script"], stdin, get("env"), get("cwd"), t_out, on_output)
            else:
                r = executor.run(req["script"], stdin=stdin, env=get("env"), cwd=get("cwd"),
                                 timeout=t_out, on_output=on_output, tty=tty)
            if usage is not None:
                usage.ran()
            if r.timed_out:
                _kill_new_children(before)
            # (the poll of the supervisor's socket inline: a call less per run)
            refused = (_drain_violations(sup) if sup_ready is not None and sup_ready.poll(0)
                       else None)
            if refused:
                import dataclasses

                from ..errors import PolicyViolation
                r = dataclasses.replace(r, violations=tuple(r.violations) + tuple(
                    PolicyViolation(k, d) for k, d in refused))
            if scanner is not None:
                # (bounded by the run's deadline, as the builtin diff is: 5,000 nested
                # directories took 0.3-1 s to read after it; a cut scan lists what it saw
                # and marks the result's file lists incomplete)
                until = None if t_out is None else max(t_run + t_out, time.monotonic()) + 0.05
                try:
                    if (getattr(native, "spawned", -2) != spawned
                            or (live if live is not None else _children())):
                        r = _merge_changes(r, scanner.changes(until))
                    elif r.files_created or r.files_modified or r.files_deleted:
                        scanner.refresh(until)  # builtin writes, already in the result
                    if scanner.partial and not r.files_truncated:
                        import dataclasses
                        r = dataclasses.replace(r, files_truncated=True)
                except Exception:  # noqa: BLE001
                    pass
            figures: dict[str, Any] = _NO_FIGURES
            if usage is not None:
                figures = usage.changes(r)  # after the merge: it sees native writes
                if not _FIGURES.issuperset(figures):
                    import dataclasses
                    r = dataclasses.replace(r, **figures)
                    figures = {}
                if r.limit_exceeded == "processes":
                    # what this run left behind at the process limit is a fork bomb until
                    # shown otherwise: its process groups go, as after a timeout (jobs of
                    # earlier runs stay), and the reply waits until they are reaped so the
                    # next run finds the process table as it was
                    usage.kill_leftovers()
                    _kill_new_children(before)
            if manifest is not None:
                r = _note_packages(manifest, r)
            h, body = result_header(r)
            for k, v in figures.items():   # (a new Result only for them cost ~5 us a run)
                if v:
                    h[k] = v
                else:
                    h.pop(k, None)   # at its default, as result_header leaves it
            h["id"] = rid
            current[0] = None
            send(h, body)
        except BaseException as e:  # noqa: BLE001
            current[0] = None
            try:
                send({**_error_header(e), "id": rid})
            except OSError:
                pass
        finally:
            current[0] = None
            if stdin_pipes:
                pipe_ = stdin_pipes.pop(rid, None)
                if pipe_ is not None:
                    pipe_.close()
            _release_stdin(stdin)

    def worker() -> None:
        adopt = getattr(getattr(executor, "native", None), "adopt_run_thread", None)
        if adopt is not None:
            # this thread's own native children are then born in the workload's cgroups
            # with no hand-off to the launcher's spawner thread
            adopt()
        while True:
            item = runs.get()
            if item is None:
                return
            try:
                do_run(*item)
            finally:
                idle.set()

    def host_command(name: str) -> Callable[..., int]:
        """A custom command whose function lives in the host: called over the channel,
        stdin pulled by the host (``call_read``), output pushed (``call_out``)."""
        import queue

        def proxy(ctx: Any, argv: list[str]) -> int:
            rid = current[0]
            cid = next(call_ids)
            q: Any = queue.Queue()
            calls[cid] = q
            try:
                lend_now()   # its replies come on the channel: someone must read it
                send({"ev": "call", "id": rid, "call": cid, "name": name, "argv": list(argv),
                      "cwd": ctx.cwd, "env": dict(ctx.env)})
                while True:
                    try:
                        r, data = q.get(timeout=0.05)
                    except queue.Empty:
                        ctx.budget.check()  # an interrupt or the deadline ends the wait
                        continue
                    op = r.get("op")
                    if op == "call_read":
                        chunk = ctx.stdin.read(max(1, min(int(r.get("n", 65536)), 1 << 16)))
                        send({"ev": "call_in", "id": rid, "call": cid}, chunk or b"")
                    elif op == "call_out":
                        try:
                            (ctx.stderr if r.get("fd") == 2 else ctx.stdout).write(data)
                        except BrokenPipeError:
                            send({"ev": "call_end", "id": rid, "call": cid})
                            return 141
                    elif op == "call_done":
                        return int(r.get("status", 0))
            finally:
                calls.pop(cid, None)
        return proxy

    import itertools
    call_ids = itertools.count(1)
    reader = Reader(sock, blocking=True)

    def during_run(req: dict[str, Any], payload: bytes) -> bool:
        """Frames handled while a run is in progress (on whichever thread reads); False for
        every other frame."""
        op = req.get("op")
        if op in ("call_read", "call_out", "call_done"):
            # the host's side of a custom command the running script called
            q = calls.get(req.get("call"))
            if q is not None and req.get("target") == current[0]:
                q.put((req, payload))
            return True
        if op == "interrupt":
            # an interrupt meant for a run that has ended must not hit the next one
            target = req.get("target")
            if target is None or target == current[0]:
                try:
                    executor.interrupt()
                except Exception:  # noqa: BLE001
                    pass
            return True
        if op == "stdin":
            # a chunk of a streamed stdin (empty: end of file); stale ones are dropped
            p = stdin_pipes.get(req.get("target"))
            if p is not None:
                p.put(payload)
            return True
        if op in ("tty_input", "tty_resize"):
            # keys typed at / the window size of a run(tty=...)'s pty, while it runs; like
            # an interrupt, only for the run it names
            if req.get("target", current[0]) != current[0]:
                return True
            try:
                if op == "tty_input":
                    # (queued: the run is accepted; its pty may not exist yet)
                    executor.tty_input(payload, queued=True)
                else:
                    executor.tty_resize(int(req["rows"]), int(req["cols"]))
            except Exception:  # noqa: BLE001
                pass
            return True
        return False

    # -- runs on this thread; the standby thread reads the channel while one lasts ---------
    inline = threading.current_thread() is threading.main_thread()
    lend = threading.Lock()
    state = {"running": False, "lent": False, "watched": False, "rearmed": False}
    armed = [0.0]   # when the lend timer fires (monotonic; 0: not armed), see run_here
    ended = [0.0]   # when the last run ended (monotonic), see run_here
    returned = threading.Event()
    kept: list[Any] = []   # frames the standby thread read that are for after the run
    wake_r = wake_w = done_r = done_w = -1
    if inline:
        try:
            wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
            done_r, done_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
            signal.signal(signal.SIGALRM, _on_alarm)
            signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
        except (ValueError, OSError, AttributeError):
            inline = False

    def lend_now() -> None:
        """The running script needs the channel read now (not after _LEND_AFTER)."""
        if inline and state["running"] and not state["lent"]:
            try:
                os.write(wake_w, _LEND_NOW)
            except OSError:
                pass

    class _Watch:
        """A native program's wait on this thread watches the channel itself instead of the
        lend timer (executors/native.py wait_collecting): no signal and no standby wake-up
        for a program that runs past _LEND_AFTER; a frame arriving meanwhile lends the
        channel at once."""
        thread = threading.get_ident()

        @staticmethod
        def enter() -> int | None:
            with lend:
                if not state["running"] or state["lent"]:
                    return None
                # (marked first: whatever stops this thread next, leave() re-arms the timer)
                state["watched"] = True
                armed[0] = 0.0
                signal.setitimer(signal.ITIMER_REAL, 0)
            return sock.fileno()

        @staticmethod
        def leave() -> None:
            with lend:
                if state["watched"] and state["running"] and not state["lent"]:
                    _arm(_monotonic())
                    state["rearmed"] = True
                state["watched"] = False

        @staticmethod
        def due() -> float:
            """When the lend timer fires (monotonic), 0.0 when it is not armed: a native
            wait starting later than _WATCH_AFTER before it watches at once."""
            return armed[0]

        wake = staticmethod(lend_now)

    def standby() -> None:
        import select

        idle_poll = select.poll()
        idle_poll.register(wake_r, select.POLLIN)
        run_poll = select.poll()
        run_poll.register(sock.fileno(), select.POLLIN)
        run_poll.register(done_r, select.POLLIN)
        while True:
            idle_poll.poll()
            try:
                got = os.read(wake_r, 512)
            except BlockingIOError:
                continue
            except OSError:
                return
            if _SIGALRM_BYTE not in got and _LEND_NOW not in got:
                continue   # another handled signal (SIGPIPE)
            with lend:
                if not state["running"] or state["lent"]:
                    continue
                state["lent"] = True
            try:
                reading = True
                while True:
                    if reading:
                        try:
                            f = reader.take()
                        except WireClosed:
                            f, reading = None, False
                            kept.append(None)
                        if f is not None:
                            if during_run(*f):
                                continue
                            kept.append(f)   # the next request: after the run, in order
                            if f[0].get("op") == "close":
                                try:
                                    executor.interrupt()
                                except Exception:  # noqa: BLE001
                                    pass
                            reading = False
                            continue
                    evs = run_poll.poll() if reading else [(done_r, 0)]
                    if any(fd == done_r for fd, _ in evs):
                        if not reading:
                            select.select([done_r], [], [])
                        try:
                            while os.read(done_r, 64):
                                pass
                        except BlockingIOError:
                            pass
                        break
                    try:
                        reader.fill_nowait()
                    except WireClosed:
                        reading = False
                        kept.append(None)   # EOF: the run ends as after an interrupt
                        try:
                            executor.interrupt()
                        except Exception:  # noqa: BLE001
                            pass
            finally:
                with lend:
                    state["lent"] = False
                returned.set()

    def _arm(now: float) -> None:
        armed[0] = now + _LEND_AFTER
        signal.setitimer(signal.ITIMER_REAL, _LEND_AFTER)

    def run_here(req: dict[str, Any], payload: bytes) -> None:
        # (``returned`` is set once per lend and cleared after it is waited for: a run that
        # was not lent does not touch it, ~2 us)
        with lend:
            state["running"] = True
        now = _monotonic()
        # The lend timer in a burst of runs (this one began within _BURST_GAP of the last
        # one's end): a timer still armed, due at least _LEND_KEEP from now, is kept, so it
        # fires between _LEND_KEEP and _LEND_AFTER into this run (a native wait disarms it
        # at _WATCH_AFTER, before either), and it is not disarmed at the run's end (two
        # setitimer calls a run were 2 of its 9 system calls). The burst's last run leaves
        # it armed: it fires once in the pause after it and wakes the standby thread, which
        # finds no run. A run after a pause arms it and disarms it at its end, as before
        # (a timer left armed at an agent's pace would wake two threads after every call).
        burst = now - ended[0] < _BURST_GAP
        if req.get("stdin") == "pipe" or req.get("tty") is not None:
            lend_now()
        elif armed[0] - now < _LEND_KEEP:
            _arm(now)
        try:
            do_run(req, payload)
        finally:
            # (a timer a native wait re-armed at its end is not kept for the next run even
            # in a burst: due _LEND_AFTER after that wait, it would fire early in the next run,
            # before that run's own wait watches the channel, and lend it for nothing)
            if armed[0] and (not burst or state["rearmed"]):
                armed[0] = 0.0
                signal.setitimer(signal.ITIMER_REAL, 0)
            with lend:
                state["running"] = state["watched"] = state["rearmed"] = False
                was = state["lent"]
            if was:
                os.write(done_w, b"x")
                returned.wait()
                returned.clear()
            ended[0] = _monotonic()

    if inline:
        active.append(threading.Thread(target=standby, name="standby", daemon=True))
        active[0].start()
        if native is not None:
            from ..executors import native as native_mod
            native_mod.watch_channel(_Watch)
        adopt = getattr(getattr(executor, "native", None), "adopt_run_thread", None)
        if adopt is not None:
            # this thread's own native children are then born in the workload's cgroups
            # with no hand-off to the launcher's spawner thread (the standby thread was
            # started first: it is outside them)
            adopt()
    else:
        # the run thread starts now, not at the first run: its set-up (adopt_run_thread) is
        # then off the first command's path
        active.append(threading.Thread(target=worker, name="runner", daemon=True))
        active[0].start()
    try:
        while True:
            if kept:
                msg = kept.pop(0)
                if msg is None:
                    break   # the standby thread saw the channel close
                req, payload = msg
            else:
                if usage is not None and (inline or idle.is_set()):
                    usage.settle(executor)   # (pid 1's watchdog may sleep while quiet)
                try:
                    msg = reader.recv()
                    assert msg is not None
                    req, payload = msg
                except WireClosed:
                    break
            if usage is not None:
                usage.request()
            op = req.get("op")
            rid = req.get("id")
            if op == "run" and inline:   # (first: the per-call path; during_run takes no run)
                current[0] = rid
                if req.get("stdin") == "pipe":
                    # made here, before the run: the first chunk may follow at once
                    stdin_pipes[rid] = _StdinPipe(send, rid)
                run_here(req, payload)
                continue
            if during_run(req, payload):
                continue
            if op == "close":
                break
            if not inline:
                idle.wait()
                if op == "run":
                    current[0] = rid
                    if req.get("stdin") == "pipe":
                        # made here, not on the worker: the first chunk may follow at once
                        stdin_pipes[rid] = _StdinPipe(send, rid)
                    idle.clear()
                    runs.put((req, payload))
                    continue
            if op == "ping":
                send({"ev": "ok", "value": None, "id": rid})
                continue
            if op == "register_command":
                try:
                    args = pickle.loads(payload) if payload else {}
                    executor.register_command(str(args["name"]), host_command(str(args["name"])))
                    send({"ev": "ok", "value": None, "id": rid})
                except BaseException as e:  # noqa: BLE001
                    send({**_error_header(e), "id": rid})
                continue
            if op == "export_layer":
                try:
                    import io

                    from .layerscan import export_layer_tar
                    args = pickle.loads(payload) if payload else {}
                    buf = io.BytesIO()
                    export_layer_tar(getattr(scanner, "uppers", ()), buf,
                                     args.get("extra_members"),
                                     max_bytes=getattr(scanner, "max_bytes", None))
                    send({"ev": "ok", "bytes": True, "id": rid}, buf.getvalue())
                except BaseException as e:  # noqa: BLE001
                    send({**_error_header(e), "id": rid})
                continue
            if op == "stage_layer":
                # a layer sent in pieces (a restart carries the dead sandbox's files over this
                # way, so neither side holds it twice in memory); import_layer(staged=True)
                # then reads it from here
                try:
                    if staged[0] is None:
                        staged[0] = os.fdopen(memfd("layer"), "w+b")
                    staged[0].write(payload)
                    send({"ev": "ok", "value": None, "id": rid})
                except BaseException as e:  # noqa: BLE001
                    send({**_error_header(e), "id": rid})
                continue
            if op == "import_layer" and staged[0] is not None:
                f, staged[0] = staged[0], None
                try:
                    from ..vfs.oci import import_layer
                    with f:
                        f.seek(0)
                        import_layer(f, executor.fs)
                    if scanner is not None:
                        scanner.refresh()
                    send({"ev": "ok", "bytes": True, "id": rid}, b"")
                except BaseException as e:  # noqa: BLE001
                    send({**_error_header(e), "id": rid})
                continue
            if op in ("upload_tar", "download_tar", "import_layer"):
                # Sandbox.upload_tar/download_tar and snapshot restores (agentic_bash.fileapi):
                # vfs.oci on our root. A layer arrives here rather than in cfg["layer_tar"]
                # because the zygote's spawn message has a size limit (EMSGSIZE at ~100 MB).
                try:
                    from ..fileapi import serve_tar_op
                    args = pickle.loads(payload) if payload else {}
                    value = serve_tar_op(executor, op, args)
                    if op == "import_layer" and scanner is not None:
                        scanner.refresh()  # restored files are the baseline, not changes
                    send({"ev": "ok", "bytes": True, "id": rid}, value)
                except BaseException as e:  # noqa: BLE001
                    send({**_error_header(e), "id": rid})
                continue
            if op not in _FILE_OPS:
                send({"ev": "error", "type": "ValueError", "msg": f"unknown op {op!r}",
                      "id": rid})
                continue
            try:
                args = pickle.loads(payload) if payload else {}
                attr = getattr(executor, op)
                value = attr(**args) if callable(attr) else attr
                if scanner is not None and op in ("write_file", "remove") and \
                        isinstance(args.get("path"), str):
                    scanner.note(args["path"])  # the file API's change is no run's change
                if isinstance(value, bytes):
                    send({"ev": "ok", "bytes": True, "id": rid}, value)
                else:
                    if op == "env":
                        value = dict(value)
                    send({"ev": "ok", "value": _jsonable(value), "id": rid})
            except BaseException as e:  # noqa: BLE001
                send({**_error_header(e), "id": rid})
    finally:
        if inline and native is not None:
            from ..executors import native as native_mod
            native_mod.watch_channel(None)
        try:
            executor.interrupt()
        except Exception:  # noqa: BLE001
            pass
        if not inline:
            runs.put(None)
            for t in active:
                t.join(timeout=5)
        try:
            executor.close()
        except Exception:  # noqa: BLE001
            pass
