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
