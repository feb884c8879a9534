"""Shared harness of the differential tests: a script run by /bin/bash and by a sandbox the same way."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import warnings
from typing import Any, Iterator

import pytest


def bash(script: str, cwd: str, home: str | None = None) -> tuple[str, str, int]:
    """(stdout, stderr, status) of ``script`` under /bin/bash: on its stdin, as a run is
    (errors read "bash: line N: ..."), inside ``( )`` so what one case sets stays in it."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"}
    if home is not None:
        env["HOME"] = home
    p = subprocess.run([*_confine(), sys.executable, "-I", "-S", "-c", _INIT],
                       input=f"(\n{script}\n)", capture_output=True, text=True, cwd=cwd,
                       env=env, timeout=60, preexec_fn=_default_signals)
    return p.stdout, p.stderr, p.returncode


def bash_c(script: str, cwd: str, env: dict[str, str] | None = None,
           foreign: bool = False, raw: bool = False) -> tuple[Any, Any, int]:
    """(stdout, stderr, status) of ``bash -c script``, confined as bash() is (a status of
    128+n for a signal, as a run reports it), in a session of its own.

    ``foreign``: a case from a corpus we did not write. Root in a user namespace is still the
    host's root towards the host's files (fidelity10's corpus runs made /zz, /scripts and
    /usr/local/bin entries), so such a case runs as the host's ``nobody`` (65534), with a
    private /tmp, and ``cwd`` must be a throwaway directory it may write (made 0777 here);
    inside, it is root of its own user namespace. A ``cwd`` under /tmp is bound at its own
    path into that private /tmp (made with traversable parents), so the case can resolve it;
    the output pipes are made reopenable (``>/dev/stdout``, ``tee /dev/stderr``) and a HOME
    under /home that the host lacks is made on a private /home (as the sandbox has it).

    ``raw``: stdout and stderr as bytes (a ``\r`` kept, invalid UTF-8 allowed)."""
    if env is None:
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"}
    argv = [*_confine(), sys.executable, "-I", "-S", "-c", _INIT, "bash", "-c", script]
    if foreign:
        # (root inside its user namespace, to mount the private /tmp; the host's nobody
        # towards every host file)
        confine = [a if a != "--map-current-user" else "--map-root-user" for a in _confine()]
        argv = [*_as_nobody(), *confine, sys.executable, "-I", "-S", "-c",
                _PRIVATE_TMP + _INIT, "bash", "-c", script]
        os.chmod(cwd, 0o777)
    with subprocess.Popen(argv,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=not raw, cwd=cwd,
                          env=env, start_new_session=True,
                          preexec_fn=_reopenable if foreign else _default_signals) as p:
        try:
            out, err = p.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            # the whole session: killing unshare alone left the bash inside spinning
            # (fidelity10 saw one run on for six minutes)
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except OSError:
                pass
            p.communicate()
            raise
    return out, err, p.returncode


def _default_signals() -> None:
    """(in the child) SIGINT/SIGQUIT at their defaults, as a shell started by a terminal has
    them: a harness launched as a background job (`cmd &`) would have them ignored, which bash
    then reports (`trap -p INT`) and keeps"""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGQUIT, signal.SIG_DFL)


def _reopenable() -> None:
    """(in the child, still root) the output pipes may be opened again by name as nobody"""
    _default_signals()
    for fd in (1, 2):
        try:
            os.fchmod(fd, 0o666)
        except OSError:
            pass


def _confine() -> list[str]:
    """The reference bash runs as root on CI and on corpora written for sandboxes (`date -s`,
    `kill -9 -1`, `ip link`): it gets its own user, pid, mount and network namespaces, as
    the same uid, so it cannot set the host clock, signal host processes or reach the
    network, and the files it writes keep their owner. Where unshare cannot (no user
    namespaces), the reference cases are skipped rather than run unconfined."""
    global _CONFINE
    if _CONFINE is None:
        argv = ["unshare", "--map-current-user", "--mount", "--pid", "--fork", "--mount-proc",
                "--net", "--"]
        ok = shutil.which("unshare") and subprocess.run(
            [*argv, "/bin/true"], capture_output=True).returncode == 0
        _CONFINE = argv if ok else []
    if not _CONFINE:
        pytest.skip("the reference bash needs user namespaces to run confined")
    return _CONFINE


_CONFINE: list[str] | None = None


def _as_nobody() -> list[str]:
    """setpriv to the host's nobody when this process is root (a foreign case must not write
    as root); skipped where that cannot be done."""
    if os.geteuid() != 0:
        return []
    if not shutil.which("setpriv"):
        pytest.skip("setpriv missing: a foreign case cannot run as nobody")
    return ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"]


# (foreign cases) a private tmpfs on /tmp before bash starts; fails closed
# (a cwd under /tmp is bound back at its own path: the case's realpath/pwd -P resolve it)
_PRIVATE_TMP = r"""
import ctypes, os, sys
_libc = ctypes.CDLL(None, use_errno=True)
_cwd = os.getcwd()
_fd = os.open(".", os.O_PATH | os.O_DIRECTORY)
if _libc.mount(b"tmpfs", b"/tmp", b"tmpfs", 0, b"mode=1777") != 0:
    sys.exit("bashdiff: no private /tmp: " + str(ctypes.get_errno()))
if _cwd.startswith("/tmp/"):
    os.makedirs(_cwd, mode=0o755)
    if _libc.mount(f"/proc/self/fd/{_fd}".encode(), _cwd.encode(), None, 0x1000 | 0x4000, None) != 0:
        sys.exit("bashdiff: cannot bind the cwd: " + str(ctypes.get_errno()))
    os.chdir(_cwd)
os.close(_fd)
_home = os.environ.get("HOME", "")
if _home.startswith("/home/") and not os.path.isdir(_home):
    if _libc.mount(b"tmpfs", b"/home", b"tmpfs", 0, b"mode=0755") != 0:
        sys.exit("bashdiff: no private /home: " + str(ctypes.get_errno()))
    os.makedirs(_home)
"""

# pid 1 of the reference's namespace (bash as pid 1 would ignore default-action signals):
# runs bash (or the command line it is given), then, as an unconfined run's capture would,
# waits while anything left behind still holds the output pipes (the namespace's
# processes die with it)
_INIT = r"""
import os, subprocess, sys, time
bash = subprocess.Popen(sys.argv[1:] or ["bash"])
status = bash.wait()
pipes = {os.readlink(f"/proc/self/fd/{fd}") for fd in (1, 2)}
pipes = {p for p in pipes if p.startswith("pipe:")}
def holds():
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or pid == "1":
            continue
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                if os.readlink(f"/proc/{pid}/fd/{fd}") in pipes:
                    return True
        except OSError:
            pass
    return False
deadline = time.monotonic() + 55
while pipes and holds() and time.monotonic() < deadline:
    try:
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass
    except ChildProcessError:
        pass
    time.sleep(0.01)
sys.exit(status if status >= 0 else 128 - status)
"""


def sandbox(level: str, tmp_path_factory: Any, tools: tuple[str, ...] = ()) -> Iterator[Any]:
    """A sandbox of ``level`` for a module of cases (skipped where the level or a tool is
    missing); ``none`` works in a temporary directory of its own."""
    from agentic_bash import Sandbox
    if level == "namespace":
        from agentic_bash.isolation.plan import plan
        from agentic_bash.isolation.probe import probe
        if plan("namespace", probe()).level != "namespace":
            pytest.skip("no kernel sandbox here")
    for tool in tools:
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} not installed")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        kw = {"workdir": str(tmp_path_factory.mktemp("ws"))} if level == "none" else {}
        sb = Sandbox(isolation=level, **kw)
    try:
        yield sb
    finally:
        sb.close()


def run(sb: Any, script: str, timeout: float = 60) -> Any:
    """``script`` in the sandbox as bash() runs it: in ``( )``, in a fresh directory."""
    d = f"t{abs(hash(script))}"
    sb.run(f"mkdir -p {d}")
    sb.run(f"cd {d}")
    try:
        return sb.run(f"(\n{script}\n)", timeout=timeout)
    finally:
        sb.run("cd ..")


_USER_SCRIPT = """
import json, os, subprocess, sys, tempfile, warnings
warnings.simplefilter("ignore")
import agentic_bash as ab
cases, home = json.loads(sys.argv[1]), sys.argv[2] == "1"
out = []
with ab.Sandbox(isolation="namespace") as sb:
    base = sb.run("pwd").stdout.strip()
    for i, c in enumerate(cases):
        d = tempfile.mkdtemp()
        env = {"PATH": os.environ["PATH"], "LANG": "C.UTF-8"}
        if home:
            env["HOME"] = d
        b = subprocess.run(["bash"], executable="/bin/bash", input=f"(\\n{c}\\n)",
                           capture_output=True, text=True, cwd=d, timeout=60, env=env)
        sb.run(f"cd {base}; mkdir -p c{i} && cd c{i}")
        r = sb.run(f"(\\n{c}\\n)", timeout=60)
        out.append([[b.stdout, b.stderr, b.returncode], [r.stdout, r.stderr, r.exit_code]])
print(json.dumps(out))
"""


def as_user_results(as_user: Any, cases: list[str], home: bool = False,
                    timeout: float = 280) -> list[tuple[str, list, list]]:
    """Each case run as the unprivileged test user (integration/conftest.py's ``as_user``),
    by /bin/bash and by a namespace Sandbox as run() runs them: (case, bash's, ours), each
    [stdout, stderr, status]. ``home``: bash's HOME is its case's directory. Skips where
    there is no kernel sandbox."""
    import json
    import tempfile

    from agentic_bash.isolation.plan import plan
    from agentic_bash.isolation.probe import probe
    if plan("namespace", probe()).level != "namespace":
        pytest.skip("no kernel sandbox here")
    # (in the user's TMPDIR, which the fixture removes: pytest's tmp_path is root's alone)
    fd, script = tempfile.mkstemp(suffix=".py", dir=as_user.env["TMPDIR"])
    with os.fdopen(fd, "w") as f:
        f.write(_USER_SCRIPT)
    os.chmod(script, 0o644)
    p = subprocess.run(as_user.prefix + [as_user.python, script, json.dumps(cases), "1" if home else "0"],
                       capture_output=True, text=True, env=as_user.env, cwd="/", timeout=timeout)
    assert p.returncode == 0, p.stderr[-3000:]
    results = json.loads(p.stdout.strip().splitlines()[-1])
    return [(c, want, got) for c, (want, got) in zip(cases, results)]
