"""Lead, session 13, as root and as a user: a fork refused at the process limit is the run's limit_exceeded even when the processes that filled it are gone by the run's end (root: the pids group's counter; a user: RLIMIT_NPROC, which has none); $$ is named bash; /dev/shm's inodes are bounded by the memory limit."""

from __future__ import annotations

import pytest

from _support import sandbox_supported

ok, why = sandbox_supported()
pytestmark = [pytest.mark.skipif(not ok, reason=f"kernel sandbox unavailable: {why}"),
              pytest.mark.timeout(300)]


_cache: dict[str, dict] = {}


@pytest.fixture(params=["root", "user"])
def obs(request: pytest.FixtureRequest) -> dict:
    who = request.param
    if who not in _cache:
        runner = request.getfixturevalue("as_root" if who == "root" else "as_user")
        _cache[who] = runner.script("_lead13_check.py", timeout=240)
    return _cache[who]


def test_a_refused_fork_is_reported_after_its_jobs_are_gone(obs: dict) -> None:
    out, err, code, exceeded = obs["fill"]
    assert out == "rc=254\ndone\n" and "fork: Resource temporarily unavailable" in err, obs
    assert exceeded == "processes", obs
    assert obs["after"] == ["rc=0\n", 0, None], obs   # blamed on that run only


def test_the_shells_process_is_named_bash(obs: dict) -> None:
    # (it was the zygote's python3: `ps -p $$ -o comm=` is how scripts ask what shell runs them)
    assert obs["names"] == ["bash\nbash\n", "", 0], obs["names"]


def test_dev_shm_inodes_are_bounded_by_the_memory_limit(obs: dict) -> None:
    # (as the user, with the watchdog as the memory limit, /dev/shm allowed one inode per KiB
    # of max_fs_bytes: 1M; 580,000 empty files came to exist under 128 MiB before its kill)
    out, err, code = obs["shm_inodes"]
    assert code == 0 and err == "", obs["shm_inodes"]
    assert 4096 <= int(out) <= (128 << 20) >> 10, obs["shm_inodes"]
