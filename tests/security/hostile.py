"""A grammar of hostile scripts (endless inputs, huge builds, recursion, odd descriptors) for the run-contract fuzz."""

from __future__ import annotations

import random

# Endless or large inputs, as a pipeline's first stage or a redirection.
SOURCES = [
    "yes", "cat /dev/zero", "cat /dev/urandom", "seq 1 1000000000", "head -c 100000000 /dev/zero",
    "yes | tr -d '\\n'", "printf '%s\\n' {1..200000}", "echo hi", "printf 'a\\0b\\0'",
    "head -c 3000000 /dev/urandom", "yes abcdefghijklmnopqrstuvwxyz",
]
FILES = ["/dev/zero", "/dev/urandom", "/dev/null", "/dev/full", "/dev/", "/etc/passwd", "nofile", "/proc/self/status"]

# Commands that read their input (stdin or a file operand).
SINKS = [
    "read -n 3 x", "read -N 3 x", "read x", "read -d '' x", "read -r -a arr", "mapfile a", "mapfile -d '' a",
    "mapfile -n 5 a", "head -n1", "head -c 10", "tail -n1", "tail -c 4", "rev", "sed ''", "sed -n '$p'",
    "grep x", "grep -c a", "awk 1", "awk 'END{print NR}'", "cut -c1", "cut -d: -f1", "uniq", "uniq -c", "sort",
    "sort -u", "sort -n", "shuf", "tac", "wc -l", "wc -c", "tr -d '\\n'", "od -c", "md5sum", "sha256sum",
    "base64", "strings", "fold -w 5", "nl", "paste -s", "cat", "tee /dev/null", "xargs echo", "jq .",
    "bc", "column -t", "fmt", "expand", "comm - /etc/passwd", "diff - /etc/passwd", "cmp - /etc/passwd",
    "split -l 1000000", "csplit - 2", "join - /etc/passwd", "sum", "cksum", "xxd", "hexdump -C",
    "while read -r l; do :; done", "while IFS= read -r -n1 c; do :; done",
]

# Strings and words the shell builds.
BUILDERS = [
    "printf '%16777216s' {1..100} >/dev/null", "printf -v x '%16777216s' {1..10}",
    "printf '%.99999999999f' 1 2 3 >/dev/null", "printf '%*s' 2147483647 x >/dev/null",
    "printf '%s' {1..300000} >/dev/null", "echo {0..9}{0..9}{0..9}{0..9}{0..9}{0..9} >/dev/null",
    "echo {1..100000000}", "echo {a..z}{a..z}{a..z}{a..z} | wc -c", "x=$(head -c 16777216 /dev/zero | tr '\\0' a)",
    "x=$(yes)", "x=$(cat /dev/zero)", "x=$(< /dev/zero)", "x=x; for i in {1..40}; do x=$x$x; done",
    "x=x; while :; do x+=$x; done", "a=(); while :; do a+=(\"$RANDOM$RANDOM\"); done",
    "x=$(seq 1000000); y=$x$x$x$x$x$x$x$x$x$x", "wc -c <<< \"$(seq 2000000)$(seq 2000000)\"",
    "cat <<EOF | wc -c\n$(seq 1000000)$(seq 1000000)$(seq 1000000)\nEOF",
    "s=$(printf '%*s' 1000000 ''); echo \"${s// /abcdefgh}\" | wc -c",
    "x=$(printf '%*s' 20000000 ''); echo ${#x}", "eval \"$(printf 'echo %s;' {1..50000})\" >/dev/null",
    "set -- {1..200000}; echo \"$*$*$*\" | wc -c", "declare -a A=({1..500000}); echo ${#A[@]}",
    "echo $((2**62*4))", "echo $(( 1 << 100 ))", "printf '%d' 99999999999999999999999",
]

# Control flow that repeats, recurses or forks.
CONTROL = [
    "f(){ f | f; }; f", "f(){ f; }; f", "f(){ f & f; }; f", ":(){ :|:& };:", "while :; do :; done",
    "for ((;;)); do echo x; done >/dev/null", "until false; do true; done", "while true; do echo y; done | head -1",
    "sleep 100", "sleep 100 & wait", "(while :; do :; done) &", "trap 'echo t' EXIT; sleep 5",
    "eval 'eval \"$(yes eval | head -1000)\"'", "g(){ local x=$1$1; g $x; }; g ab", "exec 3</dev/zero; read -u 3 -n 5 z",
    "mkfifo /tmp/p$$ 2>/dev/null; cat /tmp/p$$", "coproc yes; head -c 5 <&${COPROC[0]}", "bash -c 'bash -c \"yes\"' | head -1",
    "timeout 0.2 yes >/dev/null", "select x in a b; do break; done",
]

# Odd descriptors and values that once ended in an internal error.
ODD = [
    "echo $'\\ud800'", "echo '\ud800'", "cat >(true)", "tail >&-", "yes >&-", "md5sum x >&-", "echo hi >&-",
    "cat <&-", "strings -n 9223372036854775807 /etc/passwd", "echo ${A[-1]:=x}", "echo ${A[-3]}",
    "select x in a b; do break; done </dev/", "read x </dev/", "mapfile a </dev/", "set -n", "set -u; echo $nope",
    "readonly r; echo ${r:=x}", "echo x > /dev/full", "exec 1>&-; echo gone", "exec 0<&-; cat", "ulimit -n 3; cat /etc/passwd",
    "cd /dev/zero", ". /dev/zero", "source /dev/urandom", "bash /dev/zero", "printf -v 'a[' x", "echo $((1/0))",
    "declare -n r=r; echo $r", "x=(); echo ${x[@]: -1:-1}", "shopt -s extglob; [[ aaaaaaaaaaaaaaaaaaaaaaaab == +(a|aa)*c ]]",
    "echo ${x:-$(</dev/zero)}", "case $(yes | head -c 100000) in *[!y]*) ;; esac",
]

REDIRECT_SINK = ["{cmd} < {file}", "{cmd} {file}", "{src} | {cmd}", "{src} | {cmd} | tail -c 20",
                 "{cmd} <<< \"$({src} | head -c 1000000)\"", "x=$({src} | {cmd})", "{cmd} < <({src})"]


def statement(rng: random.Random) -> str:
    kind = rng.random()
    if kind < 0.45:
        form = rng.choice(REDIRECT_SINK)
        cmd = rng.choice(SINKS)
        if form == "{cmd} {file}" and (cmd.startswith(("read", "mapfile", "while")) or "-" in cmd.split()[-1:]):
            form = "{cmd} < {file}"
        return form.format(cmd=cmd, file=rng.choice(FILES), src=rng.choice(SOURCES))
    if kind < 0.65:
        return rng.choice(BUILDERS)
    if kind < 0.82:
        return rng.choice(CONTROL)
    return rng.choice(ODD)


def script(rng: random.Random) -> str:
    """One script: one to three statements, sometimes wrapped in a loop, a subshell, a
    function, a command substitution or a pipeline."""
    parts = [statement(rng) for _ in range(rng.randint(1, 3))]
    body = "; ".join(p for p in parts)
    wrap = rng.random()
    if wrap < 0.1:
        body = f"for i in 1 2 3; do {body}; done"
    elif wrap < 0.2:
        body = f"( {body} )"
    elif wrap < 0.27:
        body = f"h(){{ {body}; }}; h"
    elif wrap < 0.33:
        body = f"echo \"$( {body} )\" | wc -c"
    elif wrap < 0.38:
        body = f"{{ {body}; }} 2>&1 | head -c 100"
    elif wrap < 0.42:
        body = f"{{ {body}; }} &"
    if rng.random() < 0.5:
        body += "; echo end $?"
    return body
