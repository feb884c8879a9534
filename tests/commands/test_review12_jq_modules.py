"""jq never loads a module file: a directive behind a comment is refused, in-process and in the worker, and a host file's lines never reach the sandbox (review12)."""

from __future__ import annotations

import pytest

import agentic_bash as ab

SECRET = "review12 host-only line"


@pytest.mark.parametrize("body", ["1", "[range(3)]"])   # in-process; the worker process
@pytest.mark.parametrize("directive", ['include "{m}";', 'import "{m}" as $d;'])
def test_a_module_directive_after_a_comment_reads_no_host_file(tmp_path, body: str,
                                                               directive: str) -> None:
    (tmp_path / "m.jq").write_text(SECRET + "\n")
    (tmp_path / "m.json").write_text('{"k": "%s"}\n' % SECRET)
    prog = "# a comment first\n" + directive.format(m=tmp_path / "m") + " " + body
    with ab.Sandbox(isolation="virtual") as sb:
        r = sb.run(f"jq -n '{prog}'")
        again = sb.run("jq -n '1 +'; jq -n '[range(2)] | length'")
    assert SECRET not in r.stdout + r.stderr, r
    assert r.exit_code == 3, r
    assert "modules are not available in the sandbox" in r.stderr, r
    # ordinary compile errors keep their own message; ordinary programs still run
    assert "syntax error" in again.stderr and again.stdout == "2\n", again
