"""A run's cwd= as `cd DIR` would make it for that run only: $PWD, OLDPWD, bad directories."""
from __future__ import annotations

import pytest

from agentic_bash import Sandbox
from agentic_bash.isolation.plan import plan
from agentic_bash.isolation.probe import probe


def _namespace_ok() -> bool:
    try:
        return plan("namespace", probe()).level == "namespace"
    except Exception:
        return False


LEVELS = ["virtual", pytest.param("namespace", marks=pytest.mark.skipif(
    not _namespace_ok(), reason="namespace isolation not available here"))]


@pytest.fixture(params=LEVELS)
def sb(request):
    s = Sandbox(isolation=request.param)
    yield s
    s.close()


def test_pwd_names_the_runs_directory_and_the_session_gets_its_own_back(sb):
    assert sb.run("mkdir -p /tmp/d").exit_code == 0
    r = sb.run('echo "$PWD"; pwd; /bin/pwd; printenv PWD; cd ..; echo "$OLDPWD $PWD"', cwd="/tmp/d")
    assert r.stdout == "/tmp/d\n/tmp/d\n/tmp/d\n/tmp/d\n/tmp/d /tmp\n"
    r = sb.run('echo "$PWD ${OLDPWD-unset}"; pwd; printenv PWD')
    assert r.stdout == "/workspace unset\n/workspace\n/workspace\n"
    # a relative cwd= is taken from the session's directory
    sb.run("mkdir -p sub; cd /tmp")
    r = sb.run('echo "$PWD"', cwd="d")
    assert r.stdout == "/tmp/d\n"
    assert sb.run('echo "$PWD $OLDPWD"').stdout == "/tmp /workspace\n"


@pytest.mark.parametrize("where, why", [("/nonexist", "No such file or directory"),
                                        ("/etc/hostname", "Not a directory")])
def test_a_directory_that_is_not_there_is_an_error_and_nothing_runs(sb, where, why):
    r = sb.run("echo ran; touch /tmp/ran", cwd=where)
    assert r.exit_code == 1 and r.stdout == ""
    assert r.stderr == f"agentic-bash: cwd: {where}: {why}\n"
    r = sb.run('test -e /tmp/ran; echo $? "$PWD"')
    assert r.stdout == "1 /workspace\n"
