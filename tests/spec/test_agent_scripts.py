"""Agent-style scripts (text processing, control flow, files, natives in pipelines) give what /bin/bash gives, in the virtual and namespace levels (differential)."""

from __future__ import annotations

import shutil

import pytest

import bashdiff

pytestmark = pytest.mark.timeout(600)

CASES = [
    "trap 'echo got TERM' TERM; kill -TERM $BASHPID; echo after",
    "sleep 10 & pid=$!; kill $pid; wait $pid; echo st=$?",
    "sleep 0.1 & wait; echo waited",
    "python3 -c 'import time; time.sleep(0.1)' & jobs | wc -l; wait",
    "(sleep 0.2; echo sub) & echo main; wait",
    "{ sleep 0.1; echo a; } & { echo b; } ; wait",
    "echo $(sleep 0.1; echo inner) outer",
    "ls /nonexistent 2>/dev/null || echo failed $?",
    "false; echo $?; ! false; echo $?",
    "python3 -c 'import sys; sys.stdout.write(\"no newline\")'; echo",
    "printf 'x\\0y' | python3 -c 'import sys; print(repr(sys.stdin.buffer.read()))'",
    "cat /etc/hostname > /dev/null && echo readable",
    "head -c 3 < /dev/urandom | wc -c",
    "seq 100000 | tail -1",
    "seq 1000 | python3 -c 'import sys; [sys.stdout.write(l) for l in sys.stdin]' | wc -l",
    "python3 -c 'print(\"a\\nb\\nc\")' | grep -n b",
    "exec 2>&1; ls /nope; echo merged",
    "ls /nope 2>&1 >/dev/null | wc -l",
    "echo hi 1>&2 | wc -c",
    "x=$(ls /nope 2>&1); echo \"[$x]\"",
    "cat < /dev/null | wc -c",
    "yes abc | head -n 100000 | sort -u",
    "python3 -c 'import signal,os; signal.signal(signal.SIGPIPE, signal.SIG_DFL); [print(i) for i in range(100000)]' | head -2",
    "mkdir -p a/b/c && touch a/b/c/f && find a -type f",
    "touch x y z && ls | sort -r | head -2",
    "printf '#!/bin/sh\\necho script ran $1\\n' > s.sh && chmod +x s.sh && ./s.sh arg",
    "printf '#!/usr/bin/env python3\\nprint(\"py script\")\\n' > p.py && chmod +x p.py && ./p.py",
    "printf 'echo sourced $1\\n' > s2.sh && . ./s2.sh x",
    "./nonexistent_cmd; echo rc=$?",
    "printf 'echo hi' > noexec.sh && ./noexec.sh; echo rc=$?",
    "nosuchcommand_xyz 2>&1; echo rc=$?",
    "echo $((RANDOM % 1)) $((SECONDS >= 0))",
    "tar czf a.tgz /etc/hostname 2>/dev/null && tar tzf a.tgz",
    "echo hello | gzip | gunzip",
    "python3 -c 'import json; print(json.dumps({\"a\":1}))' | python3 -c 'import json,sys; print(json.load(sys.stdin)[\"a\"])'",
    "sort <<< $'b\\na' | uniq",
    "awk 'BEGIN{print 1+1}'",
    "sed -n '2p' <<< $'l1\\nl2\\nl3'",
    "echo abc | rev | tr a-z A-Z",
    "od -c <<< ab | head -1",
    "wc -c < /etc/hostname | tr -d ' ' | grep -qE '^[0-9]+$' && echo num",
    "test -w . && echo writable",
    "set +e; (exit 5); echo $?; false && echo no || echo yes",
    "a=$(printf '%s' \"$(seq 3)\"); echo \"${a//$'\\n'/,}\"",
    "env | grep -c '^PATH='",
    "printenv HOME >/dev/null && echo home-set",
    "echo '{\"items\":[{\"n\":\"a\",\"v\":1},{\"n\":\"b\",\"v\":2}]}' | jq -r '.items[] | \"\\(.n)=\\(.v)\"'",
    "echo '[3,1,2]' | jq -c 'sort'",
    "echo '{\"a\":{\"b\":null}}' | jq '.a.b // \"dflt\"'",
    "printf 'name,age\\nbob,30\\nann,25\\n' | awk -F, 'NR>1{sum+=$2; n++} END{printf \"%.1f\\n\", sum/n}'",
    "printf 'a 1\\nb 2\\na 3\\n' | awk '{s[$1]+=$2} END{for(k in s) print k, s[k]}' | sort",
    "printf 'x=1\\ny=2\\n' | sed -E 's/^([a-z])=([0-9])$/\\2:\\1/'",
    "printf 'line1\\nline2\\n' | sed '1i header'",
    "printf 'a\\nb\\nc\\n' | sed '$d'",
    "printf 'foo bar\\n' | sed 's/\\(foo\\) \\(bar\\)/\\2 \\1/'",
    "printf 'k: v\\n' | cut -d: -f2 | tr -d ' '",
    "printf '3\\n1\\n2\\n' | sort -n | paste -sd+ | bc",
    "printf 'a\\tb\\tc\\n' | cut -f2",
    "printf 'hello world\\n' | awk '{print toupper(substr($1,1,1)) substr($1,2)}'",
    "printf '%s\\n' apple banana cherry | grep -E '^(a|c)' | wc -l",
    "printf 'a\\n\\nb\\n' | grep -v '^$'",
    "printf 'ERROR x\\nINFO y\\nERROR z\\n' | grep -c ERROR",
    "printf 'a,b\\n' | awk -F, -v OFS=';' '{$1=$1; print}'",
    "seq 10 | awk 'NR%3==0'",
    "seq 5 | sed -n '2,4p'",
    "seq 3 | xargs -I{} echo item-{}",
    "echo 'a b c' | xargs -n 1 | wc -l",
    "find . -maxdepth 0 -type d | wc -l",
    "printf 'b\\na\\n' > f1; printf 'a\\nc\\n' > f2; comm -3 <(sort f1) <(sort f2) | tr -d '\\t'",
    "printf 'one\\ntwo\\n' > f; while IFS= read -r line; do echo \"> $line\"; done < f",
    "printf 'k1=v1\\nk2=v2\\n' > conf; while IFS='=' read -r k v; do echo \"$k -> $v\"; done < conf",
    "declare -A c; for w in a b a c a; do ((c[$w]++)); done; for k in a b c; do echo $k ${c[$k]}; done",
    "s='The quick brown fox'; words=($s); echo ${#words[@]} ${words[-1]}",
    "str='a-b-c'; IFS=- read -ra p <<< \"$str\"; printf '%s\\n' \"${p[@]}\"",
    "n=5; f=1; for ((i=2;i<=n;i++)); do f=$((f*i)); done; echo $f",
    "fib() { local n=$1; ((n<2)) && { echo $n; return; }; echo $(( $(fib $((n-1))) + $(fib $((n-2))) )); }; fib 10",
    "is_prime() { local n=$1 i; ((n<2)) && return 1; for ((i=2;i*i<=n;i++)); do ((n%i==0)) && return 1; done; return 0; }; for x in {1..20}; do is_prime $x && printf '%d ' $x; done; echo",
    "printf '%s\\n' \"$(date -u -d '2024-01-15' +%A)\"",
    "printf '%-10s|%5s|\\n' left right",
    "printf '%03d-%s\\n' 5 x 12 y",
    "x=3.7; printf '%.0f\\n' $x",
    "echo $(( 17 / 5 )) $(echo 'scale=2; 17/5' | bc)",
    "arr=(z b a); IFS=$'\\n' sorted=($(sort <<<\"${arr[*]}\")); unset IFS; echo \"${sorted[*]}\"",
    "mkdir -p src && touch src/{a,b,c}.txt && for f in src/*.txt; do mv \"$f\" \"${f%.txt}.md\"; done && ls src",
    "tmp=$(mktemp) && echo data > $tmp && cat $tmp && rm $tmp && echo removed",
    "tmpd=$(mktemp -d) && test -d $tmp d; echo ${#tmpd} > /dev/null; echo ok; rmdir \"$tmpd\"",
    "cat > cfg.ini <<EOF2\n[s]\nkey = value\nEOF2\ngrep -E '^key' cfg.ini | sed 's/.*= //'",
    "set -euo pipefail; x=$(echo ok); echo $x",
    "set -u; arr=(); echo \"${arr[@]:-empty}\"",
    "trap 'echo cleanup' EXIT; echo work; exit 3",
    "err() { echo \"E: $*\" >&2; }; err something 2>&1",
    "usage() { echo \"usage: $0\"; }; usage | grep -c usage",
    "main() { local -a list=(\"$@\"); echo ${#list[@]}; }; main a 'b c' d",
    "getopts_test() { local OPTIND o; while getopts 'ab:' o; do case $o in a) echo A;; b) echo B=$OPTARG;; esac; done; }; getopts_test -a -b x",
    "case ${LANG:-x} in *UTF-8*) echo utf;; *) echo other;; esac",
    "[[ 'abc123' =~ ([0-9]+) ]] && echo ${BASH_REMATCH[1]}",
    "v=' padded '; t=\"${v#\"${v%%[![:space:]]*}\"}\"; t=\"${t%\"${t##*[![:space:]]}\"}\"; echo \"[$t]\"",
    "printf '%s\\n' {a..c}{1..2} | head -4 | tr '\\n' ' '; echo",
]


@pytest.fixture(scope="module", params=["virtual", "namespace"])
def sandbox(request, tmp_path_factory):
    yield from bashdiff.sandbox(request.param, tmp_path_factory)


@pytest.mark.parametrize("script", CASES)
def test_same_as_bash(sandbox, script: str, tmp_path) -> None:
    if sandbox.isolation_level == "virtual" and "python3" in script:
        pytest.skip("python3 is a native program (none in the virtual level)")
    for t in ("python3", "jq", "bc"):
        if t in script and shutil.which(t) is None:
            pytest.skip(f"{t} not installed")
    want = bashdiff.bash(script, str(tmp_path), home=str(tmp_path))
    r = bashdiff.run(sandbox, script)
    assert (r.stdout, r.stderr, r.exit_code) == want, script
