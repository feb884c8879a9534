"""System-view commands: virtual values, and date/env/sleep against the GNU tools."""

from __future__ import annotations

import os
import sys
import time

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from harness_awk import Harness, real  # noqa: E402

DATE_CASES = [
    ["-d", "2024-02-29T12:00:00Z", "+%a %A %b %B %c %C %d %D %e %F %g %G %h %H %I %j %k %l %m %M %n %N %p %P %q %r"
     " %R %s %S %t %T %u %U %V %w %W %x %X %y %Y %z %:z %::z %Z %%"],
    ["-d", "2024-01-15", "+%-d %_m %05Y %^a %#b %10A| %-H %_H %-j %_j %3d %-e %010s %:::z"],
    ["-d", "2024-01-15 10:30:00"], ["-d", "@0"], ["-u", "-d", "@1700000000", "-R"],
    ["-d", "2024-01-15", "-I"], ["-d", "2024-01-15 10:11:12", "-Iseconds"],
    ["-d", "2024-01-15 10:11:12", "--iso-8601=minutes"], ["-d", "2024-01-15 10:11:12", "--rfc-3339=seconds"],
    ["-d", "1 day ago 2024-01-15"], ["-d", "Jan 15 2024"], ["-d", "15 Jan 2024 3pm"],
    ["-d", "2024-01-31 +1 month"], ["-d", "foo"], ["-d", "2024-01-15 14:00 3 days ago", "+%F %T"],
    ["-d", "2023-12-31", "+%U %W %V %G %g %j"], ["-d", "2024-01-07", "+%U %W %V %u %w"],
    ["-d", "2021-01-01", "+%U %W %V %G"], ["-d", "@1700000000.5", "+%s %N"], ["-u", "-d", "2024-06-01 12:00", "+%s"],
    ["-d", "2024-01-15 10:00 UTC", "+%H"], ["-d", "2024-05-05T01:02:03+02:00", "+%T %z"],
    ["-d", "01/02/2024", "+%F"], ["-d", "20240115", "+%F"], ["-d", "2024-01-15 2 weeks", "+%F"],
    ["-d", "2024-01-15 -3 days", "+%F"], ["-d", "2024-01-15 next year", "+%F"],
    ["-d", "2024-01-01 + 1 day", "+%F %T"], ["-d", "2024/01/15", "+%F"],
    ["-d", "Sun, 29 Feb 2004 16:21:42 -0800"], ["-d", "2024-01-15 10:00:00 +0530", "+%F %T %Z"],
    ["-d", "December 25, 2024", "+%F"], ["-d", "2024-01-15 noon", "+%T"] if False else ["-d", "2024-01-15 15:30", "+%T"],
]


@pytest.mark.parametrize("args", DATE_CASES, ids=lambda a: " ".join(a))
def test_date_vs_gnu(args):
    h = Harness(env={"TZ": "UTC", "LANG": "C.UTF-8"})
    ours = h.run(["date", *args])
    gnu = real(["date", *args], env={"TZ": "UTC"})
    assert (ours.out, ours.err, ours.status) == (gnu.out, gnu.err, gnu.status)


@pytest.mark.parametrize("tz", ["America/New_York", "Asia/Kolkata", "Europe/Berlin"])
def test_date_tz(tz):
    h = Harness(env={"TZ": tz, "LANG": "C.UTF-8"})
    for d in ("@0", "2024-07-01 12:00", "2024-01-01 00:00"):
        args = ["date", "-d", d, "+%F %T %Z %z"]
        assert h.run(args).out == real(args, env={"TZ": tz}).out


def test_date_now_is_current():
    h = Harness(env={"TZ": "UTC"})
    n = int(h.run(["date", "+%s"]).out)
    assert abs(n - time.time()) < 5
    assert h.run(["date"]).out.endswith(" UTC " + time.strftime("%Y", time.gmtime()) + "\n")


def test_env_and_printenv():
    h = Harness(env={"A": "1", "B": "two"})
    assert h.run(["env"]).out == "A=1\nB=two\n"
    assert h.run(["env", "-u", "A"]).out == "B=two\n"
    assert h.run(["env", "-i", "X=y"]).out == "X=y\n"
    assert h.run(["env", "-i", "X=y", "printenv", "X"]).out == "y\n"
    assert h.run(["env", "-0"]).stdout == b"A=1\x00B=two\x00"
    r = h.run(["printenv", "B", "NOPE"])
    assert (r.out, r.status) == ("two\n", 1)
    r = h.run(["env", "-u"])
    assert r.status == 125 and "option requires an argument -- 'u'" in r.err


def test_which():
    h = Harness()
    h.write("/usr/local/bin/tool", "#!/bin/sh\n", mode=0o755)
    h.write("/usr/local/bin/notexec", "x", mode=0o644)
    assert h.run(["which", "tool"]).out == "/usr/local/bin/tool\n"
    r = h.run(["which", "notexec"])
    assert (r.out, r.status) == ("", 1)
    assert h.run(["which", "env"]).out == "/usr/bin/env\n"


def test_identity_values():
    h = Harness()
    assert h.run(["whoami"]).out == "user\n"
    assert h.run(["id"]).out == "uid=1000(user) gid=1000(user) groups=1000(user)\n"
    assert h.run(["id", "-u"]).out == "1000\n"
    assert h.run(["id", "-un"]).out == "user\n"
    assert h.run(["hostname"]).out == "sandbox\n"
    assert h.run(["uname"]).out == "Linux\n"
    assert h.run(["uname", "-a"]).out == "Linux sandbox 6.1.0-agentic #1 SMP PREEMPT_DYNAMIC x86_64 GNU/Linux\n"
    assert h.run(["uname", "-sm"]).out == "Linux x86_64\n"
    assert h.run(["nproc"]).out == "2\n"
    assert h.run(["getconf", "PAGE_SIZE"]).out == "4096\n"
    r = h.run(["getconf", "FOO"])
    assert (r.err, r.status) == ("getconf: Unrecognized variable `FOO'\n", 2)  # (glibc getconf: status 2)
    r = h.run(["tty"])
    assert (r.out, r.status) == ("not a tty\n", 1)
    assert h.run(["true"]).status == 0 and h.run(["false"]).status == 1


def test_kill_and_ps():
    h = Harness()
    assert h.run(["kill", "-l"]).out == real(["/bin/kill", "-l"]).out
    assert h.run(["kill", "-l", "9"]).out == "KILL\n"
    r = h.run(["kill", "99999"])
    assert (r.err, r.status) == ("kill: (99999) - No such process\n", 1)
    assert h.run(["ps"]).out.startswith("    PID TTY          TIME CMD\n")


def test_sleep_and_timeout():
    h = Harness()
    t = time.monotonic()
    assert h.run(["sleep", "0.1"]).status == 0
    assert h.run(["sleep", ".05s", "0.05"]).status == 0
    assert time.monotonic() - t >= 0.2
    r = h.run(["sleep", "x"])
    assert r.status == 1 and "invalid time interval" in r.err
    t = time.monotonic()
    assert h.run(["timeout", "0.2", "sleep", "5"]).status == 124
    assert time.monotonic() - t < 2
    assert h.run(["timeout", "5", "true"]).status == 0
    assert h.run(["timeout", "5", "false"]).status == 1
    assert h.run(["timeout"]).status == 125
    # a CPU-bound in-process child is stopped, not left running in the background
    import threading
    t = time.monotonic()
    assert h.run(["timeout", "0.3", "awk", "BEGIN { while (1) ; }"]).status == 124
    assert time.monotonic() - t < 10
    # (a child blocked in a sleep notices only when the sleep returns: allow for that)
    end = time.monotonic() + 8
    while [th for th in threading.enumerate() if th.name == "timeout-child"] and time.monotonic() < end:
        time.sleep(0.1)
    assert not [th for th in threading.enumerate() if th.name == "timeout-child"]


def test_time_and_nohup():
    h = Harness()
    r = h.run(["time", "-p", "true"])
    assert r.status == 0 and r.err.startswith("real ")
    r = h.run(["time", "false"])
    assert r.status == 1 and r.err.startswith("Command exited with non-zero status 1\n")
    r = h.run(["nohup", "echo_nonexistent_cmd"])
    assert r.status == 127
    r = h.run(["nohup"])
    assert r.status == 125
