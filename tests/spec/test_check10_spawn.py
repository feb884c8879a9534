"""Native spawn as bash does it (check10 on pool10's fork_exec without Popen): exec errors, argv[0], odd environments, descriptors, inherited signal dispositions and ulimits, against real bash."""

from __future__ import annotations

import shutil

import pytest

import bashdiff

CASES = [
    # ENOEXEC: an ELF header is a binary even without a NUL in its first line (bash 5.1+)
    "printf '\\177ELF garbage' > badelf; chmod 755 badelf; ./badelf; echo \"st=$?\"",
    "printf '\\177ELF\\0\\0' > badelf2; chmod 755 badelf2; ./badelf2; echo \"st=$?\"",
    # no shebang: run as a shell script, arguments passed
    "printf 'echo ran $# \"$1\"\\n' > ns; chmod 755 ns; ./ns a; echo \"st=$?\"",
    "printf 'echo hi\\n' > nx; chmod 644 nx; ./nx; echo \"st=$?\"",
    "mkdir -p d; ./d; echo \"st=$?\"",
    "printf '#!/nonexistent/interp\\n' > bi; chmod 755 bi; ./bi; echo \"st=$?\"",
    "/nonexistent/x; echo \"st=$?\"",
    "(exec -a myname /bin/sh -c 'echo $0')",
    "env 'odd=a b' 'X=$(x)' /bin/sh -c 'echo \"$odd|$X\"'",
    "/bin/sh -c 'echo to3 >&3' 3>f3; cat f3",
    "/bin/cat <(echo procsub)",
    "(trap '' INT; /bin/sh -c 'kill -INT $$; echo survived')",
    "(ulimit -n 77; /bin/sh -c 'ulimit -n')",
    "(ulimit -f 10; /bin/sh -c 'ulimit -f')",
    "/bin/sh -c 'kill -TERM $$'; echo \"st=$?\"",
    # a removed cwd: programs still run in it (bash's children inherit it)
    "mkdir -p g && cd g && rmdir ../g && /bin/pwd; echo \"st=$?\"; /bin/ls; echo \"st=$?\"; "
    "/bin/ls | /bin/cat; cd ..; /bin/ls -d g; echo \"st=$?\"",
    "mkdir -p h/i && cd h/i && rm -r ../../h && cd ../missing/..; echo \"st=$?\"; cd ../..; "
    "echo \"st=$?\"; [ -e h ]; echo \"h=$?\"",
]


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory):
    if shutil.which("dash") is None and shutil.which("sh") is None:
        pytest.skip("no /bin/sh")
    yield from bashdiff.sandbox("namespace", tmp_path_factory)


@pytest.mark.parametrize("script", CASES)
def test_spawn_same_as_bash(sandbox, script: str, tmp_path) -> None:
    want = bashdiff.bash(script, str(tmp_path), home=str(tmp_path))
    r = bashdiff.run(sandbox, script)
    assert (r.stdout, r.stderr, r.exit_code) == want, script
