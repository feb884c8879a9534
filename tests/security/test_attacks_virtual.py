"""Attacks on the virtual mode (and the in-process paths every mode uses): each ends bounded and clear."""

from __future__ import annotations

import os
import resource
import threading
import time
from pathlib import Path

import pytest

import agentic_bash as ab
import agentic_bash.shell.streams  # noqa: F401  (its process-wide /dev/null is not a leak)

TIMEOUT = 2.0
SLACK = 4.0  # loose: CI machines are slow and shared


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def _settle(pred, seconds: float = 6.0) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.05)
    return pred()


class Attack:
    """A fresh sandbox; after the attack it must still answer, and close() must leave no
    threads or descriptors behind."""

    def __init__(self, limits: ab.Limits | None = None, **kw: object) -> None:
        self.threads = sum(1 for t in threading.enumerate() if t.name != "agentic-bash-deadline")
        self.fds = _fds()
        self.sb = ab.Sandbox(isolation="virtual", limits=limits or ab.Limits(timeout=TIMEOUT), **kw)

    def run(self, script: str, timeout: float | None = None, **kw: object) -> ab.Result:
        t0 = time.monotonic()
        r = self.sb.run(script, timeout=timeout, **kw)
        took = time.monotonic() - t0
        assert isinstance(r, ab.Result)
        assert took < (timeout or TIMEOUT) + SLACK, (script, took)
        return r

    def still_ok(self) -> None:
        r = self.sb.run("echo ok", timeout=10)
        assert r.stdout == "ok\n"

    def close(self) -> None:
        self.sb.close()
        # (the process-wide deadline watchdog, started with the first budget, is not a leak)
        live = lambda: sum(1 for t in threading.enumerate() if t.name != "agentic-bash-deadline")  # noqa: E731
        assert _settle(lambda: live() <= self.threads), threading.enumerate()
        assert _settle(lambda: _fds() <= self.fds), (self.fds, _fds())


@pytest.fixture
def atk():
    a = Attack()
    yield a
    a.close()


# --------------------------------------------------------------------------- fork bombs
BOMBS = [
    ":(){ :|:& };:",
    "bash -c ':(){ :|:& };:'",
    "f(){ f & f; }; f",
    "f(){ f | f & }; f",
    "{ while :; do sleep 1 & done; } & sleep 0.3",
    "bomb(){ bomb & bomb & wait; }; bomb &",
]


@pytest.mark.parametrize("script", BOMBS)
def test_fork_bomb_dies_while_session_lives(atk: Attack, script: str) -> None:
    r = atk.run(script)
    assert r.exit_code in (0, 1, 124, 254)
    # the bomb's job tree dies on its own (cap hit inside a job, or the root's deadline),
    # without close(): later runs get the machine back
    assert _settle(lambda: threading.active_count() <= atk.threads + 2, TIMEOUT + SLACK), threading.active_count()
    r2 = atk.run("sleep 0.1 & wait; echo ok")
    assert r2.stdout.endswith("ok\n")
    # the last of the bomb's jobs may still be unwinding when the thread count settles
    assert _settle(lambda: "fork: Resource temporarily unavailable" not in atk.run("true & wait").stderr,
                   TIMEOUT + SLACK)


def test_fork_bomb_in_foreground_loop_fails_like_eagain() -> None:
    a = Attack(ab.Limits(timeout=TIMEOUT, max_jobs=16))  # a small cap: reached even on a loaded CI
    try:
        r = a.run("while :; do sleep 1 & done")
        assert r.timed_out and r.exit_code == 124
        assert "fork: Resource temporarily unavailable" in r.stderr
        a.still_ok()
    finally:
        a.close()


def test_background_jobs_capped_by_max_jobs() -> None:
    a = Attack(ab.Limits(timeout=TIMEOUT, max_jobs=5))
    try:
        r = a.run("for i in 1 2 3 4 5 6 7; do sleep 0.5 & done; wait; echo done")
        assert r.stderr.count("fork: Resource temporarily unavailable") == 2
        assert r.stdout == "done\n"
        assert a.run("sleep 0.1 & wait; echo ok").stdout == "ok\n"
    finally:
        a.close()


def test_bomb_output_does_not_outlive_the_session(atk: Attack) -> None:
    atk.run(":(){ :|:& };:")
    time.sleep(0.5)
    r = atk.run("echo later")
    assert r.stdout.endswith("later\n")
    # whatever the bomb wrote after its run is kept bounded (documented late output)
    assert len(r.stderr) <= 16 * 1024 * 1024 + 200


def test_loop_after_bomb_still_times_out(atk: Attack) -> None:
    atk.run(":(){ :|:& };:")
    r = atk.run("while true; do echo aaa; done", timeout=1.0)
    assert r.timed_out and r.exit_code == 124


def test_recursive_subshells_hit_the_nesting_limit(atk: Attack) -> None:
    r = atk.run("f(){ (f); }; f")
    assert r.exit_code != 0
    assert "maximum function nesting level exceeded" in r.stderr or r.timed_out
    atk.still_ok()


def test_long_pipeline_is_bounded(atk: Attack) -> None:
    r = atk.run(" | ".join(["yes"] * 400) + " | head -1")
    assert r.stdout in ("y\n", "") and (r.exit_code == 0 or r.timed_out)
    atk.still_ok()


def test_funcnest_is_honoured(atk: Attack) -> None:
    r = atk.run("FUNCNEST=5; f(){ f; }; f; echo unreachable")
    # bash 5.2: environment: line 1: f: maximum function nesting level exceeded (5)
    assert r.stderr == "environment: line 1: f: maximum function nesting level exceeded (5)\n"
    assert r.exit_code == 1 and r.stdout == ""


# --------------------------------------------------------------------------- memory bombs
def test_brace_expansion_bomb(atk: Attack) -> None:
    r = atk.run("a=({1..100000000}); echo ${#a[@]}")
    assert "brace expansion" in r.stderr and r.exit_code != 0 or r.timed_out


def test_printf_width_bomb_is_capped(atk: Attack) -> None:
    r = atk.run("printf '%*s' 2000000000 | wc -c")
    assert int(r.stdout.strip() or 0) <= 64 * 1024 * 1024


def test_doubling_variable_fails_at_max_variable_bytes(atk: Attack) -> None:
    r = atk.run("x=x; while :; do x=$x$x; done")
    assert r.exit_code == 1 and "too large" in r.stderr


def test_cmdsub_of_endless_output_fails_at_the_limit() -> None:
    a = Attack(ab.Limits(timeout=30, max_variable_bytes=1 << 20))
    try:
        for s in ("x=$(yes); echo ${#x}", "x=$(yes | cat); echo ${#x}", "x=$(cat /dev/zero)"):
            r = a.run(s, timeout=30)
            assert not r.timed_out, s
            assert r.exit_code == 1 and "max_variable_bytes" in r.stderr, (s, r.stderr)
            assert r.duration < 10
        a.still_ok()
    finally:
        a.close()


def test_read_of_an_endless_line_is_bounded() -> None:
    a = Attack(ab.Limits(timeout=30, max_variable_bytes=1 << 20))
    try:
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        r = a.run("yes | tr -d '\\n' | { read x; echo ${#x}; }", timeout=30)
        assert r.exit_code == 1 and "max_variable_bytes" in r.stderr and r.duration < 10
        grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
        assert grown_mb < 500
        r = a.run("printf 'a\\\\\\nb\\n' | { read x; echo $x; }")
        assert r.stdout == "ab\n"
        a.still_ok()
    finally:
        a.close()


def test_growing_array_is_bounded(atk: Attack) -> None:
    r = atk.run("a=(); while :; do a+=(xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx); done")
    assert r.timed_out or r.exit_code != 0
    atk.still_ok()


def test_huge_heredoc_is_bounded(atk: Attack) -> None:
    r = atk.run("x=$(head -c 3000000 /dev/zero | tr '\\0' a)\ncat <<EOF | wc -c\n$x$x$x$x\nEOF")
    assert r.stdout.strip() == "12000001"


def test_huge_output_is_cut_visibly() -> None:
    a = Attack(ab.Limits(timeout=TIMEOUT, max_output_bytes=100_000))
    try:
        r = a.run("yes")
        assert r.truncated and r.timed_out
        assert "[agentic-bash: output truncated: " in r.stdout  # head + marker + tail
        assert r.stdout.startswith("y\ny\n") and r.stdout.endswith("y\n")
        assert len(r.stdout) < 100_200
        a.still_ok()
    finally:
        a.close()


# --------------------------------------------------------------------------- deep nesting
def test_deep_command_substitution(atk: Attack) -> None:
    r = atk.run("echo " + "$(echo " * 1000 + "x" + ")" * 1000)
    assert r.stdout == "x\n" or r.exit_code != 0
    atk.still_ok()


@pytest.mark.parametrize("script", [
    "f='eval \"$f\"'; eval \"$f\"",
    "echo 'source /tmp/self.sh' > /tmp/self.sh; source /tmp/self.sh",
    "echo '. ./s.sh' > s.sh; . ./s.sh",
    "s='bash -c \"$s\"'; export s; bash -c \"$s\"",
    "f(){ local x=$(f); }; f",
])
def test_recursion_hits_a_limit(atk: Attack, script: str) -> None:
    r = atk.run(script)
    # `local x=$(f)` masks the status (0 in bash too): then the message is what shows it
    assert r.exit_code != 0 or r.timed_out or "nesting" in r.stderr
    assert r.stderr or r.timed_out  # a message says why
    atk.still_ok()


# --------------------------------------------------------------------------- bytes
def test_nul_and_invalid_utf8(atk: Attack) -> None:
    r = atk.run("echo a\0b")
    assert isinstance(r.stdout, str)
    r = atk.run("printf '\\xff\\xfe' > f; cat f | od -An -tx1; touch $'\\xff\\x80name'; ls | wc -l")
    assert r.stdout.split()[:2] == ["ff", "fe"] and r.exit_code == 0
    r = atk.run("x=$'\\xff'; echo \"${#x}\"; printf '%s' \"$x\" | wc -c")
    assert r.stdout.split() == ["1", "1"]
    r = atk.run("cat \"$(printf 'a\\xffb')\"")
    assert r.exit_code == 1 and "No such file" in r.stderr
    atk.still_ok()


# --------------------------------------------------------------------------- hostile paths
def test_sandbox_has_its_own_etc(atk: Attack) -> None:
    host = Path("/etc/passwd").read_text()
    for s in ("cat /etc/passwd", "cat /../../etc/passwd", "cd ../../../..; cat etc/passwd",
              "cat /proc/self/root/etc/passwd", "exec 3</etc/passwd; cat <&3",
              "ln -s / x; cat x/etc/passwd", "cat < <(cat /etc/passwd)", "cat /dev/fd/3 3</etc/passwd"):
        r = atk.run(s)
        assert r.stdout != host or host == "", s
    r = atk.run("cat /etc/shadow; ln -s / y; cat y/etc/shadow; cat /proc/1/environ; cat /proc/self/environ")
    assert r.stdout == "" and r.exit_code != 0
    r = atk.run("cd ../../../..; pwd")
    assert r.stdout == "/\n"


@pytest.fixture
def hostile_tree(tmp_path: Path) -> Path:
    (tmp_path / "secret").write_text("SECRET\n")
    m = tmp_path / "mnt"
    (m / "sub").mkdir(parents=True)
    (m / "sub" / "f").write_text("data\n")
    os.symlink("../secret", m / "rel")
    os.symlink(str(tmp_path / "secret"), m / "abs")
    os.symlink("/etc/shadow", m / "shadow")
    os.symlink("/etc/passwd", m / "passwd")
    os.symlink("../..", m / "up")
    os.symlink("/", m / "root")
    return tmp_path


@pytest.mark.parametrize("mode", ["cow", "ro", "rw"])
def test_mount_symlinks_never_reach_the_host(hostile_tree: Path, mode: str) -> None:
    host_passwd = Path("/etc/passwd").read_text()
    a = Attack(mounts={"/data": ab.Mount(str(hostile_tree / "mnt"), mode=mode)})
    try:
        r = a.run("cat /data/rel /data/abs /data/shadow /data/up/secret /data/root/etc/shadow /data/sub/../../secret")
        assert "SECRET" not in r.stdout and r.exit_code != 0
        assert host_passwd not in a.run("cat /data/passwd /data/root/etc/passwd").stdout or not host_passwd
        a.run(f"echo pwn > /data/rel; echo pwn > /data/abs; echo pwn >> /data/up/secret; "
              f"echo pwn > /data/root/{hostile_tree}/secret; echo pwn > /data/root/tmp/pwned_{os.getpid()}; "
              f"cd /data/sub; echo pwn > ../../secret; ln -s {hostile_tree}/secret l; echo pwn > l; cat l")
        assert (hostile_tree / "secret").read_text() == "SECRET\n"
        assert not Path(f"/tmp/pwned_{os.getpid()}").exists()
        # ../.. from /data is the sandbox's own / (a write there stays in the session layer)
        r = a.run("cd /data; cd up; cd ..; cd ../../..; pwd")
        assert r.stdout == "/\n"
        a.run("echo new > /data/sub/f; rm -f /data/sub/f2; mkdir /data/d")
        want = "new\n" if mode == "rw" else "data\n"
        assert (hostile_tree / "mnt" / "sub" / "f").read_text() == want
        assert (hostile_tree / "mnt" / "d").exists() == (mode == "rw")
        a.still_ok()
    finally:
        a.close()
    assert (hostile_tree / "secret").read_text() == "SECRET\n"


# --------------------------------------------------------------------------- the host process
def test_kill_and_exec_never_touch_the_host(atk: Attack) -> None:
    pid = os.getpid()
    for s, st in (("kill -9 $$; echo after", 137), ("kill 0; echo after", 143),
                  # kill(2) with pid -1 skips the caller: the shell goes on (no other process:
                  # ESRCH, then "after")
                  ("kill -9 -1; echo after", 0), (f"kill -9 {pid}; echo $?", None),
                  ("kill -STOP $$; echo after", None), ("exec ls /; echo not", 0),
                  ("exec true", 0), ("exec 1>&-; echo x", None), ("exec 2>&-; nosuch", None),
                  ("exec </dev/null; cat", 0)):
        r = atk.run(s)
        if st is not None:
            assert r.exit_code == st, (s, r)
        assert "not" not in r.stdout
    assert os.getpid() == pid
    atk.still_ok()


def test_ulimit_does_not_change_the_host(atk: Attack) -> None:
    before = [resource.getrlimit(x) for x in (resource.RLIMIT_NOFILE, resource.RLIMIT_NPROC,
                                               resource.RLIMIT_AS, resource.RLIMIT_CPU)]
    atk.run("ulimit -n 3; ulimit -u 1; ulimit -v 1000; ulimit -t 1; ulimit -a")
    after = [resource.getrlimit(x) for x in (resource.RLIMIT_NOFILE, resource.RLIMIT_NPROC,
                                              resource.RLIMIT_AS, resource.RLIMIT_CPU)]
    assert before == after
    atk.still_ok()


@pytest.mark.parametrize("script", [
    "trap 'kill -INT $$' INT; kill -INT $$; echo after",
    "trap 'trap - EXIT; exit 3' EXIT; exit 2",
    "trap 'echo t' ERR; f(){ false; }; f; f",
    "trap 'kill -TERM $$' TERM; kill $$",
    "trap 'exit 7' USR1; kill -USR1 $$; echo no",
    "(exit 300); echo $?; exit 300",
    "echo $(exit 4) $?; exit | exit | exit; echo alive",
    "f(){ exit 9; }; x=$(f); echo $?; f",
    "while :; do exit 5; done",
    "case x in x) exit 6;; esac",
])
def test_traps_and_exit_are_bounded(atk: Attack, script: str) -> None:
    r = atk.run(script)
    assert 0 <= r.exit_code <= 255
    atk.still_ok()


# --------------------------------------------------------------------------- blocking things
def test_sleep_infinity_times_out(atk: Attack) -> None:
    r = atk.run("sleep infinity", timeout=0.5)
    assert r.timed_out and r.exit_code == 124 and r.duration < 3


def test_read_without_stdin_returns(atk: Attack) -> None:
    r = atk.run("read x; echo rc=$?; cat; echo done")
    assert r.stdout == "rc=1\ndone\n"


@pytest.mark.parametrize("script,out", [
    ("cat /dev/zero | head -c 10 | wc -c", "10\n"),
    ("cat /dev/urandom | head -c 1000 | wc -c", "1000\n"),
    ("yes | head -n 3", "y\ny\ny\n"),
    ("od -An -N4 -tx1 /dev/zero", " 00 00 00 00\n"),
])
def test_endless_sources_stop_with_head(atk: Attack, script: str, out: str) -> None:
    r = atk.run(script)
    assert r.stdout == out and not r.timed_out


def test_tail_f_and_wait(atk: Attack) -> None:
    r = atk.run("touch f; tail -f f")
    assert r.exit_code != 0 or r.timed_out
    r = atk.run("wait; echo $?; wait %3; echo $?; wait 99999; echo $?")
    assert r.stdout == "0\n127\n127\n"


def test_process_substitution_abuse(atk: Attack) -> None:
    r = atk.run("cat <(cat <(cat <(yes))) | head -1")
    assert r.stdout == "y\n"
    r = atk.run("while :; do : <(yes); done")
    assert r.timed_out
    r = atk.run("for i in $(seq 200); do exec {fd}< <(echo $i); done; echo ok")
    assert r.stdout.endswith("ok\n") or r.exit_code != 0
    atk.still_ok()


@pytest.mark.parametrize("script", [
    "[[ aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa! =~ ^(a+)+$ ]]",
    "echo aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa! | grep -E '^(a+)+$'",
    "echo aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa! | grep -P '^(a+)+$'",
    "echo aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa! | sed -E 's/^(a+)+$/x/'",
    "echo aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa! | awk '/^(a+)+$/'",
    "echo aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa | grep -E '(a|aa|aaa|a*)*b'",
    "x=$(printf 'a%.0s' {1..5000}); [[ $x == *(a|aa)b ]]",
])
def test_catastrophic_regex_bounded(atk: Attack, script: str) -> None:
    r = atk.run("shopt -s extglob\n" + script)
    assert r.exit_code in (0, 1, 2, 124)
    atk.still_ok()


def test_fifo_without_peer_ends_at_the_deadline(atk: Attack) -> None:
    for s in ("mkfifo p; cat p", "mkfifo q; echo x > q"):
        r = atk.run(s, timeout=0.5)
        assert r.timed_out and r.duration < 3, s
    r = atk.run("mkfifo r; cat r & sleep 0.2; echo hi > r; wait")
    assert r.stdout == "hi\n"
    atk.run("mkfifo s; cat s &")  # a job blocked on a FIFO ends with close()
    atk.still_ok()


def test_filling_the_session_layer_is_a_write_error() -> None:
    a = Attack(ab.Limits(timeout=20, max_fs_bytes=4 * 1024 * 1024))
    try:
        r = a.run("head -c 50000000 /dev/zero > big; echo $?", timeout=20)
        assert r.stdout == "1\n"
        assert "head: write error: No space left on device" in r.stderr
        assert "internal error" not in r.stderr
        assert a.run("rm big; echo hi > small; cat small").stdout == "hi\n"
    finally:
        a.close()


def test_redirect_from_dev_zero_is_endless_and_bounded(atk: Attack) -> None:
    assert atk.run("cat < /dev/zero | head -c 100000 | wc -c").stdout == "100000\n"
    r = atk.run("while read x; do :; done < /dev/zero")  # one endless NUL line
    assert r.exit_code == 1 and "max_variable_bytes" in r.stderr or r.timed_out
    atk.still_ok()


def test_killing_a_job_ends_the_jobs_it_started() -> None:
    # the inner busy loop's own deadline is a minute away: only the parent's kill can end it
    a = Attack(ab.Limits(timeout=60.0))
    try:
        threads = threading.active_count()
        a.run("{ { while :; do :; done; } & wait; } & echo started")
        assert _settle(lambda: threading.active_count() >= threads + 2, SLACK)
        a.run("kill %1")
        assert _settle(lambda: threading.active_count() <= threads, SLACK), threading.enumerate()
        assert a.run("jobs").stdout == ""
    finally:
        a.close()
