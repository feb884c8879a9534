"""Session-12 differential hunt over peers' corpora and bash's own tests: each fixed class as `bash -c` against a reset sandbox, compared as bytes."""

from __future__ import annotations

import pytest

import bashdiff

pytestmark = pytest.mark.timeout(600)

ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": "/home/user",
       "USER": "user", "TERM": "dumb", "TZ": "UTC"}

# Fixed this session (each failed before the fix in at least one level)
FIXED = [
    # bash's printable_filename: a command name or cd argument with anything non-printable
    # is reported as $'...'; hash -l single-quotes shell metacharacters
    "a\rb; $'x\\ty'; $'\\377'; printf -v c '\\x01z'; $c; cd $'a\\rb'; cd $'x\\ty'/z; echo ok; é; 'a b'",
    "command -p $'n\\to' 2>&1; hash -p /bin/ls $'l\\ts'; hash -p '/bin/a b' 'x;y'; hash -p /bin/cat c; hash -l; hash -lt c 'x;y'",
    # set -v echoes the lines after the last command too (blank lines, comments)
    "set -v\necho b\n\n\n#x",
    "set -v\necho a\n\n# c\necho b\n\n",
    "eval $'set -v\\n\\necho c\\n\\n'; bash -c $'set -v\\ntrue\\n\\n'",
]

CASES = FIXED + [
]


@pytest.fixture(scope="module", params=["virtual", "namespace"])
def sandbox(request, tmp_path_factory):
    yield from bashdiff.sandbox(request.param, tmp_path_factory)


def same(sb, script: str, tmp_path) -> None:
    """``script`` as `bash -c` by the confined reference and by the reset sandbox, as bytes
    (the reference's cwd written as the sandbox's /workspace)."""
    out, err, st = bashdiff.bash_c(script, str(tmp_path), env=ENV, raw=True)
    cwd = str(tmp_path).encode()
    want = (out.replace(cwd, b"/workspace"), err.replace(cwd, b"/workspace"), st)
    sb.reset()
    r = sb.run(script, timeout=60)
    assert (r.stdout_bytes, r.stderr_bytes, r.exit_code) == want, script


@pytest.mark.parametrize("script", CASES)
def test_same_as_bash(sandbox, script: str, tmp_path) -> None:
    same(sandbox, script, tmp_path)
