"""Scripts that mix builtins, in-process tools and native programs act as under bash: $0 of scripts, exec -a, no-shebang files, SIGPIPE statuses, cd -P, signal reports, jobs/wait/disown, read and natives sharing a pipe (differential)."""

from __future__ import annotations

import re
import sys

import pytest

import bashdiff

pytestmark = [pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux only"),
              pytest.mark.timeout(300)]

_X = "chmod +x"
# every case is run by /bin/bash in an empty directory and by the sandbox in its own; python3
# stands for any native program
CASES = [
    # a writer more than a pipe's 64 KiB ahead of a reader that quits dies of SIGPIPE
    "seq 100000 | head -1; echo ${PIPESTATUS[@]}",
    "seq 100000 | sed 1q; echo ${PIPESTATUS[@]}",
    "printf '%s\\n' {1..100000} | head -1; echo ${PIPESTATUS[@]}",
    "seq 100000 | grep -m1 5; echo ${PIPESTATUS[@]}",
    "seq 100000 > f; tr 1 2 < f | head -1; echo ${PIPESTATUS[@]}",
    "seq 100000 | python3 -c 'print(input())'; echo ${PIPESTATUS[@]}",
    "set -o pipefail; seq 100000 | head -1; echo $?",
    "set -eo pipefail; seq 100000 | head -1; echo not reached",
    "seq 3 | head -1; echo ${PIPESTATUS[@]}",
    # a script's interpreter gets the file name as bash spelled it ($0, sys.argv[0])
    f"printf '#!/bin/sh\\necho sh $0 $1\\n' > x.sh; {_X} x.sh; ./x.sh arg",
    f"printf '#!/usr/bin/env python3\\nimport sys; print(sys.argv)\\n' > p.py; {_X} p.py; ./p.py a b; "
    "mkdir s; cd s; ../p.py",
    f"mkdir bin; printf '#!/bin/sh\\necho $0\\n' > bin/foo; {_X} bin/foo; PATH=bin:$PATH; foo",
    f"printf '#!/bin/sh\\necho $0\\n' > foo; {_X} foo; PATH=:$PATH; foo",
    f"printf '#!/bin/sh\\necho $0\\n' > q.sh; {_X} q.sh; mkdir -p k/l; ln -s ../../q.sh k/l/q; k/l/q; "
    "cd k; ./l/q",
    # reached through a symlink by PATH or an absolute name, the script gets the link's name
    f"printf '#!/bin/sh\\necho $0\\n' > q.sh; {_X} q.sh; mkdir bin; ln -s $PWD/q.sh bin/q; "
    "PATH=$PWD/bin:$PATH; q | sed \"s|$PWD|P|\"; $PWD/bin/q | sed \"s|$PWD|P|\"",
    # an executable text file without `#!` is run by a new shell; a binary one is refused
    f"printf 'echo noshebang $0 $1; echo ${{BASH_VERSION:+isbash}}\\n' > y.sh; {_X} y.sh; ./y.sh arg; "
    "echo rc=$?",
    f"printf 'echo in $0 $1; exit 3\\n' > y.sh; {_X} y.sh; mkdir b; mv y.sh b/; PATH=$PWD/b:$PATH; "
    "y.sh q | sed \"s|$PWD|P|\"; echo ${PIPESTATUS[0]}",
    f"printf 'x=1\\nf(){{ echo f$x; }}\\nf\\n' > z; {_X} z; ./z; f 2>/dev/null || echo nof",
    f"printf 'ab\\x00cd\\n' > bin2; {_X} bin2; ./bin2; echo $?",
    # execve's other refusals, in bash's words
    f"printf '#!/nonexistent/interp\\necho\\n' > bad.sh; {_X} bad.sh; ./bad.sh; echo $?",
    f"printf '#!/bin/sh\\r\\necho\\n' > crlf.sh; {_X} crlf.sh; ./crlf.sh; echo $?",
    "mkdir bin; printf 'echo mine\\n' > bin/foo; PATH=$PWD/bin:$PATH; foo 2>&1 | sed \"s|$PWD|P|\"; "
    "echo ${PIPESTATUS[0]}",
    # exec -a / -l name a native program's argv[0] (dash: the host's, a real binary; sh is ours)
    "exec -a myname dash -c 'echo $0'",
    "exec -l dash -c 'echo $0'",
    "X=1 exec -c dash -c 'echo ${X:-none}'",
    "exec -a myname sh -c 'echo $0'",
    "exec -a zz sh -c 'echo $0' a b",
    # cd -P resolves `..` after the symlink before it, as chdir(2) does
    "mkdir -p r/s; ln -s r/s lnk; cd -P lnk/..; ls; pwd | sed 's|.*/||'",
    "mkdir -p r/s; ln -s r/s lnk; cd lnk/..; ls; cd -P lnk/../s; echo $?",
    "mkdir -p r/s; ln -s r/s lnk; cd lnk; cd -P ..; ls",
    "cd -P /nonexistent/..; echo $?",
    "OLDPWD=; cd -; echo $?",
    # a native program a signal ended is reported as bash does, in a subshell too
    "python3 -c 'import os; os.abort()'; echo $?",
    "(python3 -c 'import os, signal; os.kill(os.getpid(), signal.SIGKILL)'; echo in)",
    "{ python3 -c 'import os, signal; os.kill(os.getpid(), signal.SIGSEGV)'; echo in; } 2>&1 | cat",
    "python3 -c 'import os, signal; os.kill(os.getpid(), signal.SIGTERM)'; echo $?",
    "x=$(python3 -c 'import os, signal; os.kill(os.getpid(), signal.SIGKILL)'); echo $?",
    "python3 -c 'import os, signal; os.kill(os.getpid(), signal.SIGKILL)' | cat; echo $?",
    "trap 'echo t' SEGV; python3 -c 'import os, signal; os.kill(os.getpid(), signal.SIGSEGV)'; echo $?",
    # ... on the shell's own stderr (not the command's redirected one), the command as written
    "python3 -c 'import os; os.abort()' 2>/dev/null; echo $?",
    "python3 -c 'import os; os.abort()' 2>err.txt; echo $?; wc -c < err.txt",
    "python3 -c 'import os, signal; os.kill(os.getpid(), 9)' >/dev/null 2>&1; echo $?",
    "code='import os; os.abort()'; python3 -c \"$code\"; echo $?",
    "f() { python3 -c 'import os, signal; os.kill(os.getpid(), 9)'; }; f 2>/dev/null; echo $?",
    # ... and so is a subshell or a `bash -c` that killed itself
    "bash -c 'kill -9 $$'; echo $?",
    "sh -c 'kill -9 $$'; echo $?",
    "bash -c 'kill -SEGV $$' 2>/dev/null; echo $?",
    "bash -c 'kill -TERM $$'; echo $?",
    "bash -c 'exit 137'; echo $?",
    "x=$(bash -c 'kill -9 $$'); echo $?",
    "(kill -9 $BASHPID); echo $?",
    "(kill -9 $BASHPID) 2>/dev/null; echo $?",
    "(kill -TERM $BASHPID); echo $?",
    "f() { kill -9 $BASHPID; }; (f); echo $?",
    "x=$(kill -9 $BASHPID); echo $?",
    "(kill -SEGV $BASHPID; echo no) 2>&1 | cat",
    # ... a status above 128 that is a plain exit code is not
    "timeout --preserve-status 0.3 sleep 3; echo $?",
    "python3 -c 'exit(137)'; echo $?; dash -c 'exit 139'; echo $?",
    # ... nor a background job, once waited for (SIGTERM's is not)
    "sleep 10 & kill -9 $!; wait $!; echo $?",
    "sleep 10 & kill -SEGV $!; wait -n; echo $?",
    "sleep 10 & kill $!; wait; echo $?",
    "x=$(sleep 10 & kill -9 $!; wait); echo \"[$x] $?\"",
    # ... and a background job a signal ended is reported once, after the next foreground
    # command (not INT, TERM or PIPE; not from $( ))
    "sleep 10 & kill -9 $!; sleep 0.5; echo x",
    "sleep 10 & kill $!; sleep 0.5; echo x",
    "python3 -c 'import time; time.sleep(10)' & kill -SEGV $!; sleep 0.5; echo x",
    "(sleep 10) & kill -9 $!; sleep 0.5; echo x",
    "{ sleep 10; } & kill -9 $!; sleep 0.5; echo x",
    "sleep 10 & p=$!; kill -9 $p; wait $p; echo $?; wait $p; echo $?",
    "sleep 10 & kill -9 $!; echo a; echo b; sleep 0.5; echo c",
    "sleep 10 & kill -USR1 $!; sleep 0.5 | cat; echo c",
    "sleep 10 & kill -HUP $!; sleep 0.5; echo c",
    # a disowned job is still a process `kill` can signal
    "sleep 5 & disown; kill $!; echo $?",
    # jobs, disown and wait options
    "sleep 0.5 & jobs -l | sed 's/ *[0-9][0-9]* / PID /'; jobs; wait",
    "sleep 0.3 & disown -h %1; jobs; wait",
    "sleep 0.3 & sleep 0.3 & disown -a; jobs; echo $?",
    "sleep 0.3 & disown %2; echo $?; disown; jobs; echo $?",
    "disown; echo $?",
    "sleep 0.1 & p=$!; wait -n -p v; echo $? $([ \"$v\" = \"$p\" ] && echo same)",
    "sleep 0.1 & q=$!; wait -p z $q; echo $([ \"$z\" = \"$q\" ] && echo pid)",
    "(exit 3) & r=$!; sleep 0.5 & wait -n -p y $r; echo \"$? $([ \"$y\" = \"$r\" ] && echo r)\"; wait",
    "u=5; wait -p u; echo \"u=${u-unset} $?\"",
    "sleep 0.2 & wait %1 %1 2>&1; echo $?",
    "(exit 3) & a=$!; (exit 4) & b=$!; wait $a $b; echo $?; wait $a; echo $?",
    "sleep 10 & kill -9 $!; wait $! $!; echo $?",
    # `kill %N` of a job that is one native command sends it the real signal (it may trap it)
    # (the program makes `ready` once its handler is in place)
    "python3 -c 'import signal, time; signal.signal(signal.SIGTERM, lambda *a: print(\"caught\", flush=True)); "
    "open(\"ready\", \"w\").close(); time.sleep(1)' & until [ -e ready ]; do sleep 0.05; done; "
    "kill %1; wait %1; echo $?",
    "python3 -c 'import signal, time; signal.signal(signal.SIGUSR1, lambda *a: print(\"usr1\", flush=True)); "
    "open(\"ready\", \"w\").close(); time.sleep(1)' & until [ -e ready ]; do sleep 0.05; done; "
    "kill -USR1 %1; wait %1; echo $?",
    "sleep 5 & kill -9 %1; wait %1; echo $?",
    "{ sleep 1; echo after; } & sleep 0.2; kill %1; wait %1; echo $?",
    "sleep 5 | cat & sleep 0.5; kill %1; wait %1; echo $?",
    # `read` takes no byte past its line from a pipe: the rest is there for a native child
    # that reads it, or for the next `read` after one that does not
    "printf 'l1\\nl2\\nl3\\n' | while IFS= read -r l; do python3 -c 'import sys; print(sys.argv[1])' \"$l\"; done",
    "printf 'l1\\nl2\\nl3\\n' | while read l; do echo \"got $l\"; "
    "python3 -c 'import sys; print(\"py\", sys.stdin.readline().strip())'; done",
    "printf 'l1\\nl2\\nl3\\n' | while read l; do echo \"got $l\"; dash -c 'read x; echo in=$x'; done",
    "while read l; do echo \"got $l\"; python3 -c 'pass'; done < <(printf 'a\\nb\\nc\\n')",
    "exec 3< <(printf '1\\n2\\n3\\n'); read -u3 a; python3 -c 'import os; print(os.read(3, 100))'; "
    "read -u3 b; echo a=$a b=$b",
    "printf 'a b\\nc d\\n' | { read x y; dash -c 'cat'; echo x=$x y=$y; }",
    "printf '1\\n2\\n3\\n' | { read -n1 a; python3 -c 'import sys; print(repr(sys.stdin.read()))'; }",
    "printf '1:2:3' | { read -d: a; python3 -c 'import sys; print(repr(sys.stdin.read()))'; echo $a; }",
    "seq 20000 | { read a; python3 -c 'import sys; print(len(sys.stdin.read()))'; }",
    "seq 5 | while read a; do python3 -c 'import sys; sys.stdin.read()' < /dev/null; echo $a; done",
    "seq 3 | (read a; read b; echo $a $b; python3 -c 'import sys; print(sys.stdin.read().strip())')",
    "printf 'x\\ny\\n' | { read -t 5 a; python3 -c 'import sys; print(sys.stdin.read().strip())'; echo $a; }",
    "printf '%s\\n' {1..3000} | while read a; do [ $a = 2999 ] && python3 -c 'print(\"at 2999\")'; done",
    # /dev/null is a real descriptor for a native (3>/dev/null was not passed at all)
    "python3 -c 'import os; os.write(3, b\"x\"); print(\"ok\")' 3>/dev/null; echo $?",
    "exec 3>/dev/null; python3 -c 'import os; os.write(3, b\"x\"); print(\"ok\")'; echo $?",
    "python3 -c 'import os; print(os.read(3, 5))' 3</dev/null; echo $?",
    "python3 -c 'import os, sys; print(os.path.realpath(\"/proc/self/fd/3\"), file=sys.stderr)' 3>/dev/null 2>&1",
    "python3 -c 'import os; print(os.path.realpath(\"/proc/self/fd/1\"))' >/dev/null; echo $?",
    # the environment bash gives a command: `_` is its path; sh (dash) keeps SHLVL
    "/usr/bin/env | grep '^_='; env | grep '^_='; printenv _; dash -c 'echo $_'",
    "exec -c /usr/bin/env",
    "sh -c 'echo $SHLVL'; bash -c 'echo $SHLVL'; echo $SHLVL",
    "{ printf 'ab'; sleep 0.3; printf 'c\\nd\\n'; } | { read x; python3 -c 'import sys; print(sys.stdin.read())'; echo $x; }",
]

# bash's report of a command a signal ended, `bash: line 2:  4242 Killed    cmd`: its pid
# differs and bash's line number there is its parser's (not always the command's), so only
# the signal's name and the command are compared
_REPORT = re.compile(r"^bash: (?:line \d+: )? *\d+ (\S.*?) {2,}(.*)$", re.M)


def _norm(err: str) -> str:
    return _REPORT.sub(r"REPORT \1: \2", err)


def _bash(script: str, cwd: str) -> tuple[str, str, int]:
    out, err, rc = bashdiff.bash(script, cwd)
    return _norm(out), _norm(err), rc


@pytest.fixture(scope="module", params=["none", "namespace"])
def sandbox(request, tmp_path_factory):
    yield from bashdiff.sandbox(request.param, tmp_path_factory, ("python3", "seq", "sed", "dash"))


@pytest.mark.parametrize("script", CASES)
def test_same_as_bash(sandbox, script: str, tmp_path) -> None:
    want = _bash(script, str(tmp_path))
    r = bashdiff.run(sandbox, script)
    assert (_norm(r.stdout), _norm(r.stderr), r.exit_code) == want, script


# -- as an unprivileged user: what read/execute permission decide ---------------------------
USER_CASES = [
    "touch f; chmod 100 f; [ -x f ] && echo x; ./f; echo $?",
    "printf 'echo hi\\n' > s; chmod 100 s; ./s; echo $?; bash s; echo $?",
    "cp /bin/true t; chmod 111 t; ./t; echo $?",
    "printf '#!/bin/sh\\necho hi\\n' > s; chmod 111 s; ./s; echo $?",
    "mkdir bin; printf 'echo hi\\n' > bin/s; chmod 100 bin/s; PATH=bin:$PATH; s; echo $?",
    "bash nonexist; echo $?",
]


def test_same_as_bash_unprivileged(as_user) -> None:
    for case, want, got in bashdiff.as_user_results(as_user, USER_CASES, timeout=240):
        assert got == want, case
