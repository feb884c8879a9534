"""The CHLD trap fires once per child as bash's does, and `time`/`times` report the CPU of native children (differential and measured)."""

from __future__ import annotations

import shutil

import pytest

import bashdiff

pytestmark = pytest.mark.timeout(300)

# /bin/true stands for any program: in bash every command that is not a builtin or function
# is a child process, and so is each stage of a pipeline, a subshell and a $( )
CASES = [
    "trap 'echo chld' CHLD; sleep 0.1 & wait; echo done",
    "trap 'echo chld' CHLD; true; /bin/true; echo x; (exit 1); echo $(echo y)",
    "trap 'echo chld $?' CHLD; sleep 0.1 & sleep 0.2 & wait; echo done",
    "trap 'echo chld' CHLD; /bin/true | cat; echo end",
    "trap 'echo chld' SIGCHLD; sleep 0.2 & echo started; sleep 0.5; echo end",
    "trap 'echo chld' CHLD; (sleep 0.1; echo sub) & wait",
    "( trap 'echo c' CHLD; /bin/true )",
    "trap 'echo c' CHLD; f() { /bin/true; }; f; echo after",
    "trap 'echo c' CHLD; x=$(date +%s); echo got",
    "trap 'echo c' CHLD; for i in 1 2; do /bin/true; done; echo e",
    "trap 'echo c' CHLD; echo a | (read x; echo $x)",
    "trap 'echo c; x=$(echo in)' CHLD; /bin/true; echo after",
    "n=0; trap 'n=$((n+1))' CHLD; for i in 1 2 3; do sleep 0.05 & done; wait; echo $n",
    "trap 'echo c' CHLD; trap -p CHLD; trap - CHLD; /bin/true; echo none",
    "trap 'echo c' CHLD; if /bin/true; then echo yes; fi",
    "trap 'echo c' CHLD; python3 -c 'print(1)'; ls /nonexistent 2>/dev/null; echo $?",
    "trap 'echo c' CHLD; cat <<< hi",
    "trap 'echo c' CHLD; echo hi > /dev/null; printf 'x\\n'; echo done",
]


@pytest.fixture(scope="module", params=["virtual", "namespace"])
def sandbox(request, tmp_path_factory):
    yield from bashdiff.sandbox(request.param, tmp_path_factory)


@pytest.mark.parametrize("script", CASES)
def test_same_as_bash(sandbox, script: str, tmp_path) -> None:
    if "python3" in script and (sandbox.isolation_level == "virtual" or shutil.which("python3") is None):
        pytest.skip("python3 is a native program")
    want = bashdiff.bash(script, str(tmp_path), home=str(tmp_path))
    r = bashdiff.run(sandbox, script)
    assert (r.stdout, r.stderr, r.exit_code) == want, script


_BUSY = "python3 -c 'n = 0\nfor i in range(3 * 10**6): n += i'"


@pytest.fixture(scope="module")
def native_sb(tmp_path_factory):
    if shutil.which("python3") is None:
        pytest.skip("python3 not installed")
    yield from bashdiff.sandbox("namespace", tmp_path_factory)


def test_time_counts_a_native_childs_cpu(native_sb) -> None:
    r = native_sb.run(f"TIMEFORMAT='%3U %3S %3R'; {{ time {_BUSY}; }} 2>&1")
    user, sys_, real = (float(x) for x in r.stdout.split())
    assert user > 0.0 and sys_ >= 0.0 and real > 0.0, r.stdout


def test_time_default_and_posix_formats_carry_user_time(native_sb) -> None:
    r = native_sb.run(f"unset TIMEFORMAT; {{ time {_BUSY}; }} 2>&1 | grep user")
    assert r.stdout.startswith("user\t0m") and r.stdout != "user\t0m0.000s\n", r.stdout
    r = native_sb.run(f"{{ time -p {_BUSY}; }} 2>&1 | grep user")
    assert r.stdout.startswith("user ") and float(r.stdout.split()[1]) > 0.0, r.stdout


def test_times_reports_children(native_sb) -> None:
    r = native_sb.run(f"{_BUSY}; times")
    shell, children = r.stdout.splitlines()
    assert children.split()[0] != "0m0.000s", r.stdout


# `kill $$` from a subshell, $( ) or background job signals the shell itself: its trap runs
# once the foreground command is done (a `wait` returns 128+n at once), an untrapped signal
# ends it. Compared with `bash -c` (no wrapping subshell: $$ must be the trap's shell), each
# in a fresh sandbox; bash killed by signal n is status 128+n here.
KILL_SELF = [
    "trap 'echo got USR1' USR1; (sleep 0.1; kill -USR1 $$) & wait; echo \"wait=$?\"",
    "trap 'echo got USR1' USR1; (sleep 0.1; kill -USR1 $$); echo after",
    "trap 'echo got TERM' TERM; (kill $$); echo after",
    "trap 'echo got' USR2; { sleep 0.1; kill -USR2 $$; } & sleep 0.5; echo after; wait",
    "(kill $$); echo \"after $?\"",
    "trap 'echo parent-trap' USR1; ( trap 'echo sub-trap' USR1; kill -USR1 $BASHPID; kill -USR1 $$ ); echo end",
    "x=$(kill -USR1 $$; echo in); echo \"[$x] $?\"",
    "trap 'echo caught; exit 3' TERM; (sleep 0.1; kill $$) & sleep 1; echo never",
    "trap 'echo got' USR1; (sleep 0.2; kill -USR1 $$) & p=$!; wait $p; echo \"w=$?\"",
    "trap '' TERM; (kill $$); echo survived",
    "(kill -9 $$); echo never",
    "f() { kill -USR1 $$; echo in-f; }; trap 'echo t' USR1; f; (f); echo end",
]


# ... and from a program it runs (its parent, or $$): pid 1's seccomp supervisor hands the
# signal to the runner (namespace level only: there are no programs in the virtual one)
NATIVE_KILL = [
    "trap 'echo got' USR1; python3 -c 'import os; os.kill(os.getppid(), 10)'; echo after",
    "trap 'echo got TERM' TERM; dash -c 'kill -TERM $PPID'; echo after",
    "python3 -c 'import os; os.kill(os.getppid(), 15)'; echo never",
    "trap 'echo u2' USR2; P=$$ python3 -c 'import os; os.kill(int(os.environ[\"P\"]), 12)'; echo after",
    "trap 'echo hup; exit 4' HUP; dash -c 'kill -HUP $PPID; sleep 0.2'; echo never",
    "dash -c 'kill -USR1 $PPID'; echo never",
    "trap 'echo t' USR1; sleep 1 & python3 -c 'import os; os.kill(os.getppid(), 10)'; wait; echo \"w=$?\"",
]


@pytest.mark.parametrize("level", ["virtual", "namespace"])
def test_kill_of_the_shell_from_its_children(level, tmp_path, tmp_path_factory) -> None:
    gen = bashdiff.sandbox(level, tmp_path_factory)
    next(gen)  # (skips where the level is missing)
    gen.close()
    from agentic_bash import Sandbox
    bad = []
    natives = level == "namespace" and shutil.which("python3") and shutil.which("dash")
    for script in KILL_SELF + (NATIVE_KILL if natives else []):
        want = bashdiff.bash_c(script, str(tmp_path))
        with Sandbox(isolation=level) as sb:
            r = sb.run(script, timeout=60)
        if (r.stdout, r.stderr, r.exit_code) != want:
            bad.append((script, want, (r.stdout, r.stderr, r.exit_code)))
    assert bad == []


# -- the same, as an unprivileged user ---------------------------------------------------------
import json  # noqa: E402
import os  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import textwrap  # noqa: E402

# (as_user: tests/conftest.py)
_USER_SCRIPT = textwrap.dedent("""
    import json, os, subprocess, sys, tempfile, warnings
    warnings.simplefilter("ignore")
    import agentic_bash as ab
    out = []
    with ab.Sandbox(isolation="namespace") as sb:
        for c in json.loads(sys.argv[1]):
            d = tempfile.mkdtemp()
            p = subprocess.run(["/bin/bash", "-c", c], capture_output=True, text=True, cwd=d,
                               env={"PATH": os.environ["PATH"], "LANG": "C.UTF-8"},
                               start_new_session=True, timeout=60)
            want = [p.stdout, p.stderr, p.returncode if p.returncode >= 0 else 128 - p.returncode]
            r = sb.run(c, timeout=60)
            out.append([c, want, [r.stdout, r.stderr, r.exit_code]])
            sb.run("trap - HUP INT QUIT USR1 USR2 ALRM TERM; wait")  # (one session for all)
    print(json.dumps(out))
""")


def test_kill_of_the_shell_unprivileged(as_user) -> None:
    from agentic_bash.isolation.plan import plan
    from agentic_bash.isolation.probe import probe
    if plan("namespace", probe()).level != "namespace":
        pytest.skip("no kernel sandbox here")
    if not (shutil.which("python3") and shutil.which("dash")):
        pytest.skip("python3 or dash not installed")
    fd, script = tempfile.mkstemp(suffix=".py", dir=as_user.env["TMPDIR"])
    with os.fdopen(fd, "w") as f:
        f.write(_USER_SCRIPT)
    os.chmod(script, 0o644)
    p = subprocess.run(as_user.prefix + [as_user.python, script, json.dumps(NATIVE_KILL)],
                       capture_output=True, text=True, env=as_user.env, cwd="/", timeout=280)
    assert p.returncode == 0, p.stderr[-3000:]
    bad = [(c, w, g) for c, w, g in json.loads(p.stdout.strip().splitlines()[-1]) if w != g]
    assert bad == []
