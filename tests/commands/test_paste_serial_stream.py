"""paste -s streams its joined line as GNU does: endless input meets the output bounds instead of growing a line in memory until the deadline."""

from __future__ import annotations

from agentic_bash import Sandbox


def test_serial_paste_of_endless_input_meets_the_substitution_bound() -> None:
    with Sandbox(isolation="virtual") as sb:
        r = sb.run("x=$(cat /dev/urandom | paste -s)", timeout=30)
        # before: no output until the 30 s deadline, the line held whole (~700 MiB in 2 s)
        assert not r.timed_out, r
        assert "output exceeds max_variable_bytes" in r.stderr
        assert r.exit_code == 1
        assert sb.run("echo ok").stdout == "ok\n"


def test_serial_paste_output_unchanged_in_chunks() -> None:
    with Sandbox(isolation="virtual") as sb:
        r = sb.run("seq 200000 | paste -s -d '+-' | md5sum; seq 200000 | tr '\\n' X | wc -c; "
                   "seq 5 | paste -s -d ',;'; printf '' | paste -s | od -An -c")
        joined = "".join(f"{n}{'+-'[(n - 1) % 2] if n < 200000 else ''}" for n in range(1, 200001))
        import hashlib
        want = hashlib.md5((joined + "\n").encode()).hexdigest() + "  -\n"
        assert r.stdout.splitlines()[0] + "\n" == want
        assert r.stdout.splitlines()[2:] == ["1,2;3,4;5", "  \\n"]
