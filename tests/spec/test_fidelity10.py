"""Session-10 differential hunt: a function's circular nameref means the global variable, `$!`/`wait $!` of a process substitution, bc on long operator chains and huge numbers, stat's %.NY precision, and agent-style cases give what /bin/bash gives."""

from __future__ import annotations

import pytest

import bashdiff

pytestmark = pytest.mark.timeout(600)

# Fixed this session (each failed before the fix)
FIXED = [
    # a function's nameref named as the caller's variable resolves to the global one (bash 5.2 warns)
    'f() { local -n ref=$1; echo "[$ref]"; ref=new; declare -p ref; }; ref=global; f ref 2>/dev/null; echo "$ref"',
    'g() { local -n x=x; echo "${x:-empty}"; x+=6; echo "${#x} ${x^^}"; }; x=5; g 2>/dev/null; echo $x; h() { local -n y=$1; y=(a b); echo "${y[1]}"; }; h y 2>/dev/null; declare -p y',
    'k() { local -n z=z; echo "[$z]"; z=1; }; unset z; k 2>/dev/null; declare -p z; declare -n q=q; echo $?',
    # $! is a process substitution's pid, and wait $! its status
    'cat <(exit 123); wait $!; echo $?; echo hi > >(cat >/dev/null); echo "${!:+set}"; x=$!; sleep 0.1 & [ $! != $x ] && echo diff; wait $x; echo w=$?',
    'read v < <(echo a; exit 4); wait $!; echo $?; diff <(echo a) <(echo b) >/dev/null; wait $!; echo $?; (wait $! 2>/dev/null; echo sub=$?); wait $! $!; echo $?',
    # bc: a 100000-term sum (was "maximum recursion depth exceeded"), numbers past 4300 digits
    'seq 1 100000 | paste -sd+ | bc; echo "2^3^2; 10-2-3; 100/5/2; 7%4*3; x=1; x++ + x++ * 2 - x; 2*3^2+1" | bc',
    'seq 1 20000 | paste -sd"*" | bc | md5sum; x=$(seq 1 3000 | paste -sd"*" | bc | tr -d "\\\\\\n"); echo "$x + 1" | bc | md5sum; echo "length($x)" | bc; echo "scale=5000; 1/3" | bc | wc -c',
    # stat %.NY: seconds with N digits of the fraction
    'touch -d "2024-01-02 03:04:05.125" f; stat -c "%.3Y|%Y|%.1X|%15.2Y|%-15.2Y|%.0Y|" f',
    # device numbers of /dev/null and friends (ls -l, stat %t %T %r %Hr %Lr %R, file)
    'ls -l /dev/null /dev/zero /dev/urandom | cut -c1-11,25-30; file /dev/null /dev/zero; stat -c "%t %T %r %Hr %Lr %F %R" /dev/null /dev/urandom; echo > f; stat -c "%t %T %r %Hr %Lr %F %R" f',
    # file -i/--mime adds the charset
    'mkdir d; ln -s d l; mkfifo p; echo hi > t; printf "caf\xc3\xa9\n" > u; printf "caf\xe9\n" > la; printf "\x89PNG\r\n" > b; : > e; echo "{\"a\":1}" > j.json; echo "#!/bin/sh" > s.sh; file -i d l p t u la b e /dev/null j.json s.sh; file --mime d t; file --mime-type t',
    # coreutils called by a path name themselves by it (GNU program_name)
    # a nameref to an element expands its subscript when assigned through (`A["K"]`, `A[$key]`)
    'declare -A A=([K]=val); declare -n ref=\'A["K"]\'; echo "b $ref"; ref=val2; echo "a $ref"; declare -p A; key=K; declare -n r2=\'A[$key]\'; r2=v3; declare -p A; a=(1 2); i=0; declare -n r5="a[i]"; r5+=z; declare -p a; declare -n r6="A[a b]"; r6=sp; declare -p A',
    # $[ ] nests brackets
    'a[0]=$[1+3]; b[0]=$[b[0]]; c[0]=$[b[0]]; echo ${c[0]}; echo $[a[0]*2] $[ (1+2)*3 ] "$[a[0]]"; x=$[ a[ $[0] ] ]; echo $x',
    # break/continue/return in a while/until condition act on that loop (the script ended)
    'while break; do echo x; done; echo done $?; for i in 1 2; do echo i=$i; while break; do echo x; done; done; n=0; until ((n++ > 2)) && break; do echo y$n; done; for i in 1 2 3; do while [ $i = 2 ] && continue 2; do echo x; break; done; echo i$i; done; f() { while return 3; do :; done; }; f; echo f=$?',
    # help with no pattern: bash's header and two columns of synopses (COLUMNS, `*` for disabled)
    'help | head -20; enable -n echo test; help | md5sum; for c in 50 60 70 90 30 20; do COLUMNS=$c help | tail -n +9 | md5sum; done',
    # ${x////c}: a pattern's leading / is not the delimiter
    'x="/_/"; echo ${x////c}; echo ${x//"/"/c}; x="slash / brace } hi"; echo "ambiguous:" ${x///}; y=a/cb/c; echo ${y///c} ${y//} ${y/#/P} ${y/#//Q} "${y////-}" ${y//\\//+}; p=/usr/local/bin; echo ${p////:}',
    # the replacement: a leading ~ expands (even quoted), a backslash escapes any character
    'HOME=/h; x=/h/a; echo "${x//~/X}" ${x#~} ${x/#~/T} ${x/%~/T}; y=abc; echo "${y/b/\\~}" "${y:-\\~}" "${y/b/\\x}" "${y/b/\\&}" "${y/b/\\\\}" ${y/b/\\~} "${y/b/~/}" "${y/b/x~}" "${y/b/&&}"; shopt -u patsub_replacement; echo "${y/b/~}" "${y/b/\\x}"',
    # "${*:-w}" with an empty IFS tests the joined "$*"
    'set -- "" ""; for ifs in unset " " ""; do if [ $ifs = unset ] 2>/dev/null; then unset IFS; else IFS=$ifs; fi; echo "[${*:-m}][${*:+p}][${@:-m}][${@:+p}]" [${*:-m}] [${@:+p}]; done; a=("" ""); IFS=; echo "[${a[*]:-m}][${a[@]:-m}][${a[*]:+p}]"',
    # prompt \j counts the running jobs (was an internal error), \NNN wraps past \377
    'PS1="foo \\j bar"; echo "${PS1@P}"; sleep 1 & echo "${PS1@P}"; kill %%; wait; echo "${PS1@P}"; PS1="\\555\\101$"; echo "${PS1@P}"',
    # compgen -F calls the function (COMP_* set, COMPREPLY read); -W splits at IFS; helptopic;
    # complete with no name and compopt's option names are usage errors
    'f() { echo "args:$#:$1:$2:$3"; declare -p COMP_WORDS COMP_CWORD COMP_LINE COMP_POINT 2>&1; COMPREPLY=(one two "th ree"); return 3; }; compgen -F f foo a; echo rc=$?; compgen -F f -P "<" -X "t*" x; echo rc=$?; g() { COMPREPLY=hello; }; compgen -W "a b" -F g; echo rc=$?; compgen -F nosuch; echo rc=$?; declare -p COMP_CWORD COMPREPLY; complete -F f; echo rc=$?; compopt -o invalid; echo rc=$?; compopt -o nospace; echo rc=$?',
    'v=val; IFS=":%"; compgen -W "spam:eggs%ham cheese\\:colon"; unset IFS; compgen -W "a  b \\"c d\\" e\\\\ f \\$v"; IFS=,; compgen -W "p,,q"; compgen -W "\\$(echo m n)"; compgen -A helptopic -S ___ fal; compgen -A helptopic | wc -l',
    # a dropped line (a bad compound assignment) leaves status 1, even when nothing else ran
    "bash -c 'a=(1 2; echo x'; echo rc=$?; bash -c 'false; a=(1 2; echo x\necho next $?'; echo rc=$?; bash -c ''; echo rc=$?",
    '/usr/bin/env nosuchcmd; /usr/bin/printf "%d\n" x; /usr/bin/env printf "%d\n" y; /usr/bin/printf "x" a; /usr/bin/timeout 1 nosuch; echo $?; /bin/ls nosuch; /usr/bin/sort -Q; echo $?',
]

CASES = FIXED + [
]


# The namespace level only: `help NAME` prints bash's long text (run by the sandbox's bash)
NAMESPACE_ONLY = [
    'help cd | head -4; help -m echo | head -3; help -d cd; help nosuch ec; echo $?; help nosuchx; echo $?; help "ec*" | head -3; help read | md5sum; enable -n echo; help echo | head -2',
]


@pytest.fixture(scope="module", params=["virtual", "namespace"])
def sandbox(request, tmp_path_factory):
    yield from bashdiff.sandbox(request.param, tmp_path_factory)


@pytest.mark.parametrize("script", CASES)
def test_same_as_bash(sandbox, script: str, tmp_path) -> None:
    want = bashdiff.bash(script, str(tmp_path), home=str(tmp_path))
    r = bashdiff.run(sandbox, script)
    assert (r.stdout, r.stderr, r.exit_code) == want, script


@pytest.mark.parametrize("script", NAMESPACE_ONLY)
def test_same_as_bash_namespace(sandbox, script: str, tmp_path) -> None:
    if sandbox.isolation_level != "namespace":
        pytest.skip("bash's long help texts come from the sandbox's own bash")
    want = bashdiff.bash(script, str(tmp_path), home=str(tmp_path))
    r = bashdiff.run(sandbox, script)
    assert (r.stdout, r.stderr, r.exit_code) == want, script
