"""Session-13 hunt for everyday scripts that differ from bash: each fixed class as `bash -c` against a reset sandbox, compared as bytes."""

from __future__ import annotations

import pytest

import bashdiff

pytestmark = pytest.mark.timeout(600)

ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": "/home/user",
       "USER": "user", "TERM": "dumb", "TZ": "UTC"}

# Fixed this session (each failed before the fix in at least one level)
FIXED = [
    # $SHELL is set (bash takes it from the passwd entry when the environment lacks it);
    # `local` outside a function is refused before its options are read
    "echo $SHELL; local -Q; echo $?; local -a -Q x; echo $?; local -a b=(1); declare -p b; "
    "f() { local -Q; }; f; echo $?",
    # kill -s / -n without a signal: status 1 (bash's sh_needarg), not 2
    "kill -n; echo $?; kill -s; echo $?",
    # a [[ ]] syntax error found at its end is reported at the line of the `[[`
    "echo 0\n[[ a &&\n\n b ) ]]\necho not",
    "echo 1\n[[ a == b\necho after",
    "[[ -n a\nb ]]; echo $?",
    # a compound command's failed redirection after a here-document: the line of the
    # here-document's delimiter (it printed no line at all)
    "while false; do :; done <<EOF < nosuch\nx\ny\nEOF\necho b",
    "{ :; } <<-EOF < nosuch\n\tx\n\tEOF\necho",
    "while read l; do echo \"h:$l\"; done > o.txt <<EOF < nosuch\nalpha\nEOF\necho \"rc=$?\"",
    # set -o posix binds POSIXLY_CORRECT=y, +o posix unsets it
    "set -o posix; declare -p POSIXLY_CORRECT; set +o posix; declare -p POSIXLY_CORRECT; echo $?",
    # command -p runs the program with argv[0] as typed (its messages said /bin/ls)
    "command -p ls /nonexistent; command -p cat nosuch; command -p nosuch; echo $?",
    # a locale variable before a program only goes to its environment: no setlocale
    # warning (a builtin or function still draws it)
    "LC_ALL=en_US.UTF-8 ls; LC_ALL=en_US.UTF-8 ls | cat; LC_ALL=en_US.UTF-8 sort /dev/null; "
    "LC_ALL=en_US.UTF-8 echo x; f() { :; }; LC_ALL=en_US.UTF-8 f; LC_ALL=xx cat /dev/null",
    # ... but a bash started with such an LC_ALL warns at its start-up (LC_ALL only)
    "LC_CTYPE=xx bash -c :; echo 1; LANG=xx bash -c :; echo 2; LC_ALL=C LC_CTYPE=xx bash -c :; echo 3; "
    "LC_TIME=yy LC_ALL=zz bash -c :; echo 4; LC_ALL=xx sh -c :; echo 5; "
    "LC_ALL=zh_TW.big5 /bin/bash -c 'echo x'; LC_ALL=C.UTF-8 bash -c 'echo ok'",
    # case changes per character as glibc's towupper/towlower: İ lowers to i, ß stays (in
    # ${x,,} ${x~~} declare -l, and sed's \U \L \u \l)
    "x=İSTß; echo ${x,,} ${x^^} ${x,} ${x~~} ${x~}; y=aBc; echo ${y~~} ${y~} ${y~~[a-b]}; "
    "declare -l l=İX; echo $l; echo 'straße İx' | sed 's/.*/\\U&/;s/^./\\l&/'; "
    "echo 'İSTANBUL ß' | sed 's/.*/\\L&/; s/s/\\u&/'",
    # `kill -SIG $$` with a trap: the trap runs once kill is done, so its $? is kill's 0
    "trap 'echo in trap $?' USR1; (exit 5); kill -USR1 $$; echo \"after $?\"; false; kill -USR1 $$ && echo x; "
    "trap 'echo t $?; (exit 9)' TERM; false; kill $$; echo \"a3 $?\"; f() { (exit 4); kill -USR1 $$; }; f; echo $?",
    # just-bash's process-substitution parser probes: a process substitution in an
    # unquoted ${x:-...} operand and in an =~ regex; a here-document delimiter whose quotes
    # are only inside $( ) is unquoted and taken as written
    "unset x; cat ${x:-<(printf ok)}; echo; y=1; echo ${y:+<(true)} | grep -c /dev/fd; "
    "echo \"${x:-<(printf ok)}\"; z=abc; echo ${z/b/<(x)}",
    "[[ /dev/fd/63+ =~ <(true)\\+ ]] && echo regex-ok; [[ a =~ (a|<) ]]; echo $?",
    "HOME=/home/demo; cat <<EOF$(echo 'x')\n$HOME\nEOF$(echo x)",
    "cat <<\"E\"$(x)\n$HOME\nE$(x)\necho; cat <<E''\n$x\nE\ncat <<`a \"b\"`\n$USER\n`a \"b\"`",
    # sh is dash: no `==` in test ("unexpected operator", 2), no brace expansion, cd's and
    # local's words and statuses, a #!/bin/sh script runs as dash in the virtual level too,
    # "expecting" in an end-of-file syntax error where the parser knows the closer
    "sh -c '[ \"x\" == \"y\" ]'; echo $?; sh -c 'test ab == ab'; echo $?; sh -c '[ 1 -eq 1 -a a == a ]'; "
    "echo $?; sh -c 'x=5; if [ $x == 5 ]; then echo yes; else echo no; fi'; sh -c '[ a = a ] && echo ok; "
    "[ = = = ] && echo eq3; echo {1..3} a{b,c}'",
    "printf '#!/bin/sh\\necho {x,y} $0 $1\\nnosuch\\n[ a == b ]\\necho $?\\n' > t.sh; chmod +x t.sh; ./t.sh arg; "
    "echo rc=$?; printf '#!/bin/sh -e\\nfalse\\necho no\\n' > u.sh; chmod +x u.sh; ./u.sh; echo $?",
    "sh -c 'cd /etc/passwd'; echo $?; sh -c 'cd /nonexist; echo after'; echo $?; sh -c 'cd a b'; echo $?; "
    "sh -c 'local x'; echo $?; sh -c 'f() { local x=1; echo $x; }; f'",
    "sh -c 'for i in 1; do echo'; sh -c '{ echo'; sh -c '( echo'; sh -c 'if true'; sh -c 'echo |'",
    # bash -c lowers SHLVL before it execs its last command
    "printenv SHLVL; printenv SHLVL",
    "bash -c 'echo $SHLVL'; bash -c 'echo $SHLVL'",
    "env | grep SHLVL; true && printenv SHLVL",
    # rmdir of a path ending in . or .. fails as rmdir(2) does (the virtual level removed an
    # empty working directory with `rmdir .`)
    "mkdir -p e/f; rmdir .; echo $?; rmdir ..; echo $?; rmdir e/f/.; echo $?; "
    "rmdir --ignore-fail-on-non-empty .; echo $?; cd e; rmdir ../e; echo $?; ls ..",
]

CASES = FIXED + [
]

# the namespace level only: `sh` there is the system's dash, as /bin/sh, `dash` and `env sh`
# already were (the virtual level's in-process dash emulation lacks most of its refusals)
NAMESPACE_ONLY = [
    "echo 'echo sourced' > lib.sh; sh -c 'source ./lib.sh'; echo $?; sh -c 'declare x=1'; echo $?; "
    "sh -c 'x=abcdef; echo ${x:0:2}'; echo $?; sh -c 'set -o pipefail; echo ok'; echo $?; "
    "sh -c 'a=(1 2 3); echo ${a[1]}'; echo $?; sh -c 'printf \"%d\\n\" abc'; echo $?",
]


@pytest.fixture(scope="module", params=["virtual", "namespace"])
def sandbox(request, tmp_path_factory):
    yield from bashdiff.sandbox(request.param, tmp_path_factory)


def same(sb, script: str, tmp_path) -> None:
    """``script`` by the reference bash (foreign: as nobody, private /tmp) and by ``sb``
    (the reference's cwd written as the sandbox's /workspace)."""
    out, err, st = bashdiff.bash_c(script, str(tmp_path), env=ENV, foreign=True, raw=True)
    cwd = str(tmp_path).encode()
    want = (out.replace(cwd, b"/workspace"), err.replace(cwd, b"/workspace"), st)
    sb.reset()
    r = sb.run(script, timeout=60)
    assert (r.stdout_bytes, r.stderr_bytes, r.exit_code) == want, script


@pytest.mark.parametrize("script", CASES)
def test_same_as_bash(sandbox, script: str, tmp_path) -> None:
    same(sandbox, script, tmp_path)


def test_procsub_reader_starts_after_the_write(sandbox) -> None:
    """The shell writes into `>(cmd)` before cmd can end, as after bash's fork: `echo hi >
    >(true)` is 0 (it was 141 in the virtual level). Bash races here (141 in 5 of 20 runs
    on this machine), so ours is held to bash's usual answer, not compared per run."""
    sandbox.reset()
    for _ in range(3):
        r = sandbox.run("echo hi > >(false); echo rc=$?; echo hi > >(true); echo rc=$?", timeout=60)
        assert (r.stdout, r.exit_code) == ("rc=0\nrc=0\n", 0)


@pytest.mark.parametrize("script", NAMESPACE_ONLY)
def test_same_as_bash_namespace(sandbox, script: str, tmp_path) -> None:
    if sandbox.isolation_level != "namespace":
        pytest.skip("the virtual level emulates dash in-process")
    same(sandbox, script, tmp_path)
