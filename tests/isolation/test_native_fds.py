"""Native commands get the shell's descriptors above 2, umask and ulimits, and see builtins' writes at once, as under bash (differential)."""

from __future__ import annotations

import sys

import pytest

import bashdiff

pytestmark = [pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux only"),
              pytest.mark.timeout(300)]

# every case is run by /bin/bash in an empty directory and by the sandbox in its own; python3
# stands for any native program that uses a descriptor it was given
CASES = [
    # process substitution as a file name (diff, comm, paste ... are native here)
    "diff <(echo a) <(echo b); echo rc=$?",
    "comm -12 <(printf 'a\\nb\\n') <(printf 'b\\nc\\n')",
    "paste <(seq 2) <(seq 3 4)",
    "cat <(echo x) <(echo y)",
    "wc -l <(seq 10) | cut -c1-8",
    "sort -m <(printf '1\\n3\\n') <(printf '2\\n4\\n')",
    "cmp <(echo a) <(echo a) && echo same",
    "python3 -c 'import sys; print(sys.stdin.read().strip())' < <(echo ps_stdin)",
    # descriptors above 2, from redirections and exec
    "python3 -c 'import os; print(os.read(5, 10))' 5< <(echo five)",
    "python3 -c 'import os; os.write(4, b\"to4\\n\")' 4>o4; cat o4",
    "python3 -c 'import os; os.write(3, b\"x\\n\")' 3>&1 | tr x y",
    "exec 4<<<'here'; python3 -c 'import os; print(os.read(4, 10))'; read -u 4 v; echo v=$v",
    "exec 5>o5; python3 -c 'import os; os.write(5, b\"py\\n\")'; echo sh >&5; cat o5",
    "exec 3>&1; python3 -c 'import os; os.write(3, b\"three\\n\")'; echo after",
    "exec 3< <(printf '1\\n2\\n3\\n'); read -u 3 a; ls / >/dev/null; read -u 3 b; echo $a $b",
    "f() { python3 -c 'import os; print(os.read(3, 20))'; }; f 3<<<infunc",
    # builtins' writes reach the file at once, in order with native writes
    "{ echo a; ls -d /; echo b; } > o2; cat o2",
    "exec >o1; echo one; ls -d /; echo two; exec >/dev/stderr; cat o1 >&2",
    "echo first > o3; { echo second; cat o3; } >> o3; cat o3",
    "exec 3>x3; echo hi >&3; read l < x3; echo \"l=$l\"; cat x3",
    "exec 3>x4; echo hi >&3; echo \"$(<x4)\"",
    "exec 3>x5; echo 'echo sourced' >&3; source ./x5",
    "exec 3>>x9; echo a >&3; echo b >> x9; echo c >&3; exec 3>&-; cat x9",
    "{ echo a; python3 -c 'print(\"b\")'; echo c; } > x11; cat x11",
    # umask and ulimit reach native children; a subshell's stay in it
    "umask 077; touch f1; mkdir d1; stat -c %a f1 d1; python3 -c 'import os; print(oct(os.umask(0)))'",
    "(umask 027; touch g1); touch g2; stat -c %a g1 g2",
    "ulimit -n 100; python3 -c 'import resource; print(resource.getrlimit(resource.RLIMIT_NOFILE))'; "
    "(ulimit -n 50; ulimit -n); ulimit -n",
    "ulimit -Sn 64; ulimit -Sn; python3 -c 'import resource; print(resource.getrlimit(resource.RLIMIT_NOFILE)[0])'",
    "ulimit -Sn 64; ulimit -Hn 32; echo rc=$?; ulimit -Hn 80; ulimit -Hn; ulimit -Hn 90; echo rc=$?",
    "ulimit -s 4096; sh -c 'ulimit -s'; python3 -c 'import resource; print(resource.getrlimit(resource.RLIMIT_STACK)[0] >> 10)'",
    # (the shell's "File size limit exceeded" report differs in its job number: stdout only)
    "ulimit -f 1; head -c 5000 /dev/zero > big; echo rc=$?; stat -c %s big  # stdout only",
    "ulimit -n abc; echo rc=$?; ulimit -p 5; echo rc=$?; ulimit -b; echo rc=$?",
    "ulimit -c 0 -n 100; ulimit -c -n; ulimit -n 64 -c",
    # NUL bytes: dropped from the script as bash reads it, and never in a native's argv
    "echo a\x00b; x=c\x00d; echo ${#x}",
    "printf -v y 'a\\0b'; echo ${#y}; python3 -c 'import sys; print(sys.argv[1:])' \"$y\"",
]


@pytest.fixture(scope="module", params=["none", "namespace"])
def sandbox(request, tmp_path_factory):
    yield from bashdiff.sandbox(request.param, tmp_path_factory, ("diff", "comm", "paste", "python3"))


@pytest.mark.parametrize("script", CASES)
def test_same_as_bash(sandbox, script: str, tmp_path) -> None:
    want = bashdiff.bash(script, str(tmp_path))
    r = bashdiff.run(sandbox, script)
    if script.endswith("# stdout only"):
        assert (r.stdout, r.exit_code) == (want[0], want[2]), script
    else:
        assert (r.stdout, r.stderr, r.exit_code) == want, script
