"""Regression tests for session 10's run-contract work (issue 20): memory peaks of in-process commands, traps."""

from __future__ import annotations

import pytest

import agentic_bash as ab
from agentic_bash import limits
from bashdiff import bash_c
from test_contract_found9 import _namespace_ok, _peak_growth

MiB = 1 << 20


@pytest.fixture(scope="module")
def sb():
    s = ab.Sandbox(isolation="virtual")
    s.run("true")
    yield s
    s.close()


# -- the virtual level's files are the host process's memory -------------------------------
# `cat /dev/zero > f` grew the process by 1,025 MiB: the session layer took max_fs_bytes'
# 1 GiB default, and in the virtual level that is the host's own memory.

def test_the_virtual_session_layer_holds_at_most_256_mib_by_default(sb: ab.Sandbox) -> None:
    r, grew = _peak_growth(sb, "cat /dev/zero > /tmp/f; echo $?; stat -c %s /tmp/f", 20)
    sb.run("rm -f /tmp/f")
    assert r.stdout == f"1\n{256 * MiB}\n", r
    assert "No space left on device" in r.stderr, r
    assert grew < 400, grew


def test_an_explicit_max_fs_bytes_is_used_as_given() -> None:
    assert limits.fs_bytes(ab.Limits(), virtual=True) == 256 * MiB
    assert limits.fs_bytes(ab.Limits(), virtual=False) == 1024 * MiB
    assert limits.fs_bytes(ab.Limits(max_fs_bytes=1024 * MiB), virtual=True) == 1024 * MiB
    assert limits.fs_bytes(ab.Limits().with_(timeout=5), virtual=True) == 256 * MiB
    assert limits.fs_bytes(ab.Limits(max_fs_bytes=8 * MiB), virtual=True) == 8 * MiB
    with ab.Sandbox(isolation="virtual", limits=ab.Limits(max_fs_bytes=300 * MiB)) as s:
        r = s.run("head -c 280000000 /dev/zero > /tmp/f; echo $?; stat -c %s /tmp/f", timeout=30)
        assert r.stdout == "0\n280000000\n", r


# -- commands that held everything they read or wrote --------------------------------------

@pytest.mark.parametrize("script, out, bound", [
    # dd kept every block it read until its input ended (444 MiB in 2 s of /dev/zero)
    ("dd if=/dev/zero bs=1M count=300 status=none | wc -c", "314572800\n", 100),
    # tac of one 120 MB line: five copies (read, split, buffer, slice, bytes)
    ("head -c 120000000 /dev/zero | tac | wc -c", "120000000\n", 300),
    # hexdump/xxd -p/-i and strings built their whole output before writing any
    ("head -c 2000000 /dev/urandom | hexdump -C | wc -l", "125001\n", 30),
    ("head -c 30000000 /dev/urandom | xxd -p | wc -l", "1000000\n", 200),
    ("head -c 2000000 /dev/urandom | xxd -i | wc -l", "166667\n", 50),
    ("yes abcd | head -c 10000000 | strings | wc -l", "2000000\n", 50),
    # base64/basenc held the encoding and its wrapped copy (3x), base2 8x; iconv five copies
    ("head -c 100000000 /dev/zero | base64 -w0 | tail -c 4", "AA==", 200),
    ("head -c 100000000 /dev/zero | base64 | wc -l", "1754386\n", 200),
    ("head -c 100000000 /dev/zero | iconv -f latin1 -t utf-8 | wc -c", "100000000\n", 260),
    # sort -u spilled every repeated line to the in-memory /tmp (972 MiB)
    ("yes abcdefghijklmnopqrstuvwxyz | head -n 3000000 | sort -u", "abcdefghijklmnopqrstuvwxyz\n", 50),
])
def test_big_inputs_stay_bounded(sb: ab.Sandbox, script: str, out: str | None, bound: int) -> None:
    r, grew = _peak_growth(sb, script, 60)
    assert not r.timed_out and r.exit_code == 0, (script, r)
    if out is not None:
        assert r.stdout == out, (script, r)
    assert grew < bound, (script, grew)


@pytest.mark.parametrize("script", ["tail -n1 /dev/zero", "head -c 250000000 /dev/zero | shuf | wc -c",
                                    # join/comm held every line of an endless input (+626 MiB)
                                    "join - /etc/passwd < <(yes abcdefghijklmnopqrstuvwxyz)"])
def test_what_a_command_must_hold_is_refused_past_128_mib(sb: ab.Sandbox, script: str) -> None:
    r, grew = _peak_growth(sb, script, 60)
    assert "memory exhausted" in r.stderr, (script, r)
    assert grew < 300, (script, grew)


def test_archives_are_bounded_in_and_out(sb: ab.Sandbox) -> None:
    # gzip/bzip2/xz/tar/unzip read their whole input up to max_fs_bytes (1 GiB) and held it
    # twice, and inflated an archive whole: `yes | gzip -d` +322 MiB in 2 s, a 300 KB
    # gzip of 300 MB of zeros decompressed into memory at once
    r, grew = _peak_growth(sb, "yes | gzip -d | wc -c", 30)
    assert (r.stdout, r.stderr) == ("0\n", "gzip: memory exhausted\n"), r
    assert grew < 300, grew
    sb.run("head -c 100000000 /dev/zero | gzip -1 > /tmp/z.gz", timeout=60)
    r, grew = _peak_growth(sb, "cat /tmp/z.gz /tmp/z.gz /tmp/z.gz | gzip -d | wc -c; zcat /tmp/z.gz | wc -c", 60)
    sb.run("rm /tmp/z.gz")
    assert r.stdout == "0\n100000000\n" and "gzip: memory exhausted" in r.stderr, r
    assert grew < 300, grew


@pytest.mark.parametrize("script", [
    "dd if=/dev/zero of=/dev/full bs=1k count=3 2>&1 | head -2; echo $?",
    "printf 'a:b\\nc:dd\\n' | column -t -s ''; echo $?",
    "{ seq 10 | gzip; seq 5 | gzip; echo junk; } | gzip -d | md5sum; { seq 10 | bzip2; seq 5 | bzip2; } | "
    "bzip2 -d | md5sum; { seq 10 | xz; seq 5 | xz; } | xz -d | md5sum",
    "mkdir d; seq 1000 > d/a; tar czf t.tgz d; rm -r d; tar xzf t.tgz; md5sum d/a; tar xOzf t.tgz d/a | wc -l; "
    "zip -q z.zip d/a; unzip -p z.zip | wc -l",
    "dd if=/dev/zero bs=99999999999 count=1 2>&1; echo $?",
    "echo abcdef | dd conv=ucase bs=2 2>/dev/null",
    "printf abcdefgh > f; printf XY | dd of=f seek=2 bs=1 conv=notrunc 2>/dev/null; cat f; echo; "
    "printf XY | dd of=f seek=2 bs=1 2>/dev/null; cat f",
    "printf ab > f; printf XY | dd of=f seek=4 bs=1 conv=notrunc 2>/dev/null; od -c f",
    "printf abcdefgh | dd skip=1 bs=3 count=1 2>/dev/null",
    "seq 20000 > f; xxd -i f | md5sum; xxd -p -c 7 f | md5sum; : > e; xxd -i e; "
    "printf '\\xab\\xcd' > g; xxd -i -c 5 -u g; xxd -i -u < g",
    "seq 20000 > f; for o in '' -C -c -b -d -o -v; do hexdump $o f | md5sum; done; hexdump -s 7 -n 300 -C f",
    "{ seq 200000; seq 200000; } | sort -u | md5sum; seq 200000 | sed 's/$/ x/' | sort -u -k2,2",
    "seq 300000 | tac | md5sum; { seq 5; printf abc; } | tac",
    "seq 15000 > r; printf '\\xff\\x00\\x80\\x7f%.0s' {1..3001} >> r; for k in base64 base64url base32 "
    "base32hex base16 base2msbf base2lsbf; do for w in 0 1 7 76; do basenc --$k -w $w r | md5sum; done; done; "
    "head -c 120000 r > r4; basenc --z85 -w 9 r4 | md5sum; head -c 5 r | basenc --z85; echo $?; printf ab | base64 -w 1; "
    "seq 30000 | head -c 40001 | basenc --z85 -w 7 | tail -c 20",
    "printf 'h\\xe9llo\\n' | iconv -f latin1 -t utf-8 | od -c; printf 'h\\xe9llo\\n' | iconv -f utf-8 -t ascii; "
    "echo $?; echo héllo | iconv -c -f utf-8 -t ascii; seq 3 > a; seq 4 6 > b; iconv -f latin1 -t utf-16 a b | od -c",
], ids=lambda s: s[:40])
def test_the_streamed_commands_print_what_gnu_prints(sb: ab.Sandbox, script: str, tmp_path) -> None:  # noqa: ANN001
    out, _err, code = bash_c(script, str(tmp_path))
    sb.run("rm -rf /tmp/w && mkdir /tmp/w")
    r = sb.run("cd /tmp/w\n" + script, timeout=60)
    assert (r.stdout, r.exit_code) == (out, code), script


# -- an arithmetic error in a DEBUG, ERR or signal trap ends only the trap -----------------
# It ended the command's whole line: a session whose DEBUG trap hit one (`trap 'a=a;
# echo $((a))' DEBUG`) ran nothing at all any more, every later run empty with status 1.

@pytest.mark.parametrize("script", [
    "trap 'echo $((1/0))' DEBUG; echo ok; echo $?",
    "trap 'a=a; echo $((a))' DEBUG\necho ok\necho $?",
    "trap 'echo $((1/0))' ERR; false; echo after $?",
    "trap 'readonly r=1; r=2; echo in' DEBUG; echo ok",
    "set -e; trap 'echo $((1/0))' DEBUG; echo ok; echo $?",
    "trap 'echo $((1/0))' USR1; kill -USR1 $$; echo after $?",
    "shopt -s extdebug; trap 'echo $((1/0))' DEBUG; echo ok; echo $?",
    "trap 'echo ${x:?unset}' DEBUG; echo ok; echo $?",
    "f(){ :; }; trap 'echo $((1/0))' RETURN; f; echo after $?",
])
def test_an_arithmetic_error_in_a_trap_ends_only_the_trap(script: str, tmp_path) -> None:  # noqa: ANN001
    out, _err, code = bash_c(script, str(tmp_path))
    with ab.Sandbox(isolation="virtual") as s:
        r = s.run(script, timeout=20)
        assert (r.stdout, r.exit_code) == (out, code), script


def test_a_session_whose_debug_trap_fails_still_runs_commands(sb: ab.Sandbox) -> None:
    with ab.Sandbox(isolation="virtual") as s:
        s.run("trap 'a=a; echo $((a))' DEBUG")
        r = s.run("echo ok")
        assert r.stdout == "ok\n" and r.exit_code == 0, r


# -- opening a FIFO with no peer in the namespace level ------------------------------------
# The runner opened a redirection's FIFO with a blocking open() in its own thread: with no
# reader (`mkfifo p; echo x > p`) or no writer (`read x < p`) nothing could stop it, and the
# host killed the sandbox 5 s past the deadline (SandboxCrashed escaped run(); fuzz seed 302).

@pytest.mark.skipif(not _namespace_ok(), reason="kernel sandbox unavailable")
def test_a_fifo_open_with_no_peer_ends_at_the_deadline_in_the_namespace_level() -> None:
    with ab.Sandbox(isolation="namespace") as s:
        for script in ("mkfifo /tmp/f1; echo x > /tmp/f1", "mkfifo /tmp/f2; cat < /tmp/f2",
                       "read x < /tmp/f2", "exec 3</tmp/f2", "exec 3>/tmp/f1"):
            r = s.run(script, timeout=1)  # SandboxCrashed escaped here
            assert r.timed_out and r.exit_code == 124, (script, r)
            assert r.duration < 3, (script, r.duration)
            assert s.run("echo ok", timeout=10).stdout == "ok\n"
        # a peer that comes: the open waits for it, as bash's does
        r = s.run("mkfifo /tmp/f5; { sleep 0.3; echo hi > /tmp/f5; } & read x < /tmp/f5; echo got $x; "
                  "cat /tmp/f5 & sleep 0.2; echo data > /tmp/f5; wait; "
                  "mkfifo /tmp/f6; exec 4<>/tmp/f6; echo rw >&4; read y <&4; echo $y", timeout=20)
        assert r.stdout == "got hi\ndata\nrw\n", r


# -- the changed-files diff after the deadline ---------------------------------------------
# A run's Result lists the files it changed: with 5,000 nested directories the lookups took
# 0.2-0.6 s after the deadline (fuzz seed 401: 0.64 s past it). The diff now stops at the
# deadline (+50 ms for a run that reached it) and says the lists are partial.

def test_the_changed_files_diff_stops_at_its_time_bound() -> None:
    import time

    from agentic_bash.vfs import changes
    with ab.Sandbox(isolation="virtual") as s:
        r = s.run("mkdir -p $(printf 'd/%.0s' {1..300})", timeout=30)
        assert len(r.files_created) == 300 and not r.files_truncated, r.files_created[:3]
        fs = s._ex.fs
        m = changes.snapshot_marker(fs)
        fs.mkdir("/workspace/e")
        for i in range(200):
            fs.mkdir(f"/workspace/e/{i}")
        ch = changes.diff(m, until=time.monotonic() - 1)
        assert ch.partial and len(ch.created) < 201, len(ch.created)


# -- jq programs that loop inside libjq ----------------------------------------------------
# libjq runs holding the GIL: `def f: f; f` never ended (not even the watchdog ran) and
# `last(range(3e7))` held the process for 48 s (fuzz seed 501: a "hang"). Such programs run
# in a forked child the deadline can kill.

@pytest.mark.parametrize("prog", ["def f: f; f", "last(range(1e10))", "[range(1e10)] | length"])
def test_a_looping_jq_program_ends_at_the_deadline(sb: ab.Sandbox, prog: str) -> None:
    r = sb.run(f"jq -n '{prog}'", timeout=1)
    # an array that grows without end may meet jq's memory cap before the deadline (the
    # worker's cap, session 11; real jq ends the same way, given time)
    ran_out = "[" in prog and (r.exit_code, r.stderr) == (1, "jq: memory exhausted\n")
    assert (r.timed_out and r.exit_code == 124) or ran_out, r
    assert r.duration < 3, r.duration
    r = sb.run("echo '{\"a\":[1,{\"b\":2}]}' | jq -c '[.. | numbers], ([range(3)] | add), (def f: .a; f | length)'; "
               "jq -n 'error(\"x\")'; echo $?", timeout=20)
    assert (r.stdout, r.stderr) == ("[1,2]\n3\n2\n5\n", "jq: error (at <unknown>): x\n"), r


# -- found by the last batch (seed 601) ----------------------------------------------------

def test_base64_ignore_garbage_is_one_pass_and_date_widths_are_capped(sb: ab.Sandbox) -> None:
    # `base64 -i -d` removed garbage with re.sub: one C call holding the GIL, 8.7 s past a
    # 2 s deadline for 50 MB of zeros; `date +%999999999Y` padded to 1 GB (+954 MiB)
    r = sb.run("x=$(head -c 50000000 /dev/zero | base64 -i -d); echo ${#x}", timeout=10)
    assert r.stdout == "0\n" and r.duration < 5, r
    r, grew = _peak_growth(sb, "date +%999999999Y | wc -c", 20)
    assert r.stdout == f"{(16 << 20) + 1}\n", r
    assert grew < 150, grew
    r = sb.run("seq 2000 | base64 > b; printf '@@\\n!!' >> b; base64 -i -d b | md5sum; seq 2000 | md5sum")
    a, b = r.stdout.split("\n")[:2]
    assert a == b, r
