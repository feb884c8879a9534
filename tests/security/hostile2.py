"""A second hostile-script generator: real scripts (the spec table) mutated, plus shell-feature combinations and odd command flags."""

from __future__ import annotations

import os
import random
import re
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))

SPECIAL = ["/dev/zero", "/dev/urandom", "/dev/full", "/dev/null", "/dev/stdin", "/dev/stdout", "/dev/stderr",
           "/dev/fd/0", "/dev/fd/3", "/dev/tty", "/dev/random", "/dev/", "/proc/self/status", "/proc/self/maps",
           "/proc/cpuinfo", "/proc/self/fd/0", "/proc/self/environ", "/proc/meminfo", "/proc/self/cmdline",
           "/proc/1/status", "/proc/self/mem", "/proc/kmsg", "/sys/kernel/mm/transparent_hugepage/enabled",
           "/etc/passwd", "/", ".", "..", "''", "nofile", "/tmp/p$$"]
HUGE_NUM = ["0", "-1", "1", "-0", "9223372036854775807", "9223372036854775808", "-9223372036854775808",
            "99999999999999999999999", "2147483648", "4294967296", "1e9", "0x7fffffff", "08", "1000000000",
            "'  3'", "''", "-", "--", "1.5", "$((2**63))", "10#99", "64#@", "2#" + "1" * 64]
HOSTILE_WORDS = ["{1..100000}", "$(yes | head -c 3000000)", "\"$(printf '%*s' 5000000 '')\"", "$(</dev/zero)",
                 "${x:-$(yes | head -1000000)}", "\"${@}\"", "$*", "${!a*}", "${a[@]:-1}", "$'\\x00\\xff'",
                 "'" + "a" * 70000 + "'", "$RANDOM", "${#BASH_SOURCE[@]}", "$(( (1<<62) * 4 ))",
                 "*", "/*/*/*/*", "**", "$(cat /dev/urandom | head -c 1000)", "\\", "$'\\ud800'", "$'\\udcff'",
                 "${PIPESTATUS[@]}", "$(exit 3)", "<(yes)", ">(cat)", "~nobody", "${x@Q}", "${x/#/$(yes|head -c 9999)}"]
SOURCES = ["yes", "cat /dev/zero", "cat /dev/urandom", "seq 1 100000000", "head -c 50000000 /dev/zero",
           "yes $'a\\tb c'", "printf '%s\\n' {1..100000}", "echo hi", "printf 'a\\0b\\0'", "cat /proc/self/maps",
           "od -An -tx1 /dev/urandom", "yes '' ", "yes | tr -d '\\n'", "awk 'BEGIN{while(1)print 1}'",
           "sed -n 'p' /dev/zero", "jq -n 'range(1e9)'", "seq -f '%.0f' 1 1e12", "tr -c '' x < /dev/zero"]
# in-process commands with odd, extreme or contradictory flags
ODD_CMDS = [
    "sort -k 99999999999", "sort -k 1.99999999999", "sort -t '' -k2", "sort -S 1", "sort -S 99999999999T",
    "sort --parallel=100000", "sort -m - - -", "sort -o /dev/full", "sort -c", "sort -R", "sort -V", "sort -h -r -s",
    "sort -T /dev/null", "sort -T /nonexistent", "sort -z", "sort -u -f -k3,3n", "sort -g",
    "head -c -99999999999", "head -n -1", "head -c 9223372036854775807", "tail -c +99999999999", "tail -n +0",
    "tail -f", "tail -F /dev/null", "tail --pid=1 -f /dev/null", "tail -c -1", "tail -n 999999999999999",
    "cut -b 1-99999999999", "cut -c 9223372036854775807-", "cut -f 1- -d ''", "cut -z -f2",
    "tr -s '[:alpha:]' '[x*]'", "tr '\\0-\\377' 'a-z'", "tr -d '[=a=]'", "tr 'a-z' '[x*99999999999]'",
    "uniq -w 99999999999 -s 99999999999", "uniq -D", "uniq --group=both", "uniq -c -i -z",
    "seq -w 1 0.000001 2", "seq -f '%99999999f' 1", "seq -s '' 1e9", "seq 1 0 5", "seq 9223372036854775807 9223372036854775810",
    "fold -w 0", "fold -w 99999999999", "fmt -w 99999", "fmt -w 0", "pr -w 9999999 -l 0", "pr -99999",
    "nl -v 9223372036854775807", "nl -i 0 -w 999999", "paste -d '' - - - -", "paste -s -d '\\0'",
    "od -w999999999", "od -N 99999999999 -j 99999999999", "od -t x16", "xxd -c 9999999", "xxd -l -1",
    "hexdump -n 99999999999 -s 99999999999", "base64 -w 0 -d", "base64 -i -d", "base32 -d", "basenc --z85",
    "md5sum -c", "sha256sum -c --strict", "cksum -a sha512", "sum -s", "wc -L", "wc --files0-from=-",
    "expand -t 99999999999", "expand -t 0", "unexpand -a -t 1", "column -t -s ''", "column -c 0",
    "join -t '' -1 99999999999", "comm -3 - -", "diff - /dev/zero", "cmp -n 99999999999 - /dev/zero",
    "split -b 1 -a 1", "split -n 99999999999", "csplit - '/a/' '{*}'", "csplit - 1 '{99999999}'",
    "grep -E '(a*)*b'", "grep -P '(a|a)*$'", "grep -c ''", "grep -o ''", "grep -f /dev/zero", "grep -m 99999999999 x",
    "grep -A 99999999999 x", "grep -e '\\(\\)\\1*'", "grep -z .", "grep -r x /proc/self",
    "sed 's/x*/y/g'", "sed -n 'H;${x;p}'", "sed ':a;N;ba'", "sed 's/\\(.*\\)*/\\1\\1/'", "sed -z 's/^/x/'",
    "sed 'w /dev/full'", "sed -i s/a/b/ /dev/zero", "sed '1~0p'", "sed 'y/abc/xyz/;G;G;G;G'",
    "awk '{a[NR]=$0}'", "awk 'BEGIN{while(1) s=s s \"x\"}'", "awk 'BEGIN{printf \"%99999999d\", 1}'",
    "awk '{print > \"/dev/full\"}'", "awk 'BEGIN{getline x < \"/dev/zero\"; print length(x)}'",
    "awk 'BEGIN{for(;;) a[i++]=i}'", "awk -v RS='' 1", "awk -F '' '{print NF}'", "awk 'BEGIN{system(\"yes\")}'",
    "jq -s .", "jq -R .", "jq 'repeat(.)'", "jq -n '[range(1e7)]|length'", "jq -n 'def f: f; f'", "jq '.[] as $x | $x'",
    "bc -l <<< 'scale=99999; 4*a(1)'", "bc <<< '2^99999999'", "bc <<< 'for(;;){}'", "bc <<< 'define f(x){return f(x)}; f(1)'",
    "expr 9223372036854775807 + 1", "expr substr aaa 99999999999 1", "expr '(' '(' '(' 1 ')' ')' ')'",
    "factor 18446744073709551617", "factor 99999999999999999999999999999999999", "numfmt --to=iec 1e999",
    "printf '%s' $(seq 100000)", "printf '%b' '\\0777\\c'", "printf '%*.*d' -99999 -99999 1", "printf '%q' $'\\xff\\ud800'",
    "printf '%(%Y)T' -99999999999999", "printf '%.9999999999d' 1", "printf '%c' ''", "printf '%n'", "printf '%1$s'",
    "date -d @99999999999999999", "date -d 'next year' +%s%N", "date +%999999999Y",
    "tac -s ''", "tac -r -s 'a*'", "shuf -n 99999999999", "shuf -i 1-9223372036854775807 -n 3", "shuf -r -n 1000000",
    "shuf -i 1-100000000", "rev", "strings -n 1", "strings -n 0", "tsort", "tsort /dev/zero",
    "xargs -n 1 -P 1000", "xargs -0", "xargs -s 1", "xargs -L 0", "xargs -I{} sh -c 'echo {}'", "xargs -r true",
    "find / -maxdepth 99999 -name zzz", "find /proc -name x", "find . -exec true {} +", "find / -newer /dev/zero",
    "ls -R /proc/self", "ls -laR /", "du -a /", "stat -c '%n%n%n%n%n' /dev/zero", "tree /", "tree -L 99999999999 /",
    "dd if=/dev/zero bs=1G count=4", "dd if=/dev/zero of=/dev/full", "dd bs=99999999999 count=1 if=/dev/urandom",
    "dd if=/dev/zero skip=99999999999", "truncate -s 99999999999 /tmp/t$$", "truncate -s 8E /tmp/t$$",
    "gzip -c", "gzip -d", "zcat", "bzip2 -c", "xz -c", "tar cf - /", "tar xf /dev/zero", "unzip /dev/zero",
    "iconv -f utf-16 -t utf-8", "iconv -f nope", "envsubst", "getopt -o $(printf 'a%.0s' {1..10000}) -- x",
    "timeout 0 yes", "timeout -s KILL 0.1 sleep 9", "timeout 99999999999 true", "nice -n 99999 true",
    "stdbuf -o0 yes", "env -i yes", "env -u PATH sort", "yes $(seq 10000)", "yes ''",
    "sleep 99999999999", "sleep inf", "sleep -1", "sleep 0x10", "kill -0 0", "kill -STOP $$", "kill -9 $$",
    "kill -TERM 0", "kill -9 -1", "kill %99", "kill -l 99999", "ps -ef", "id -G", "mktemp -d -p /dev/null",
    "mkfifo /tmp/f$$; cat /tmp/f$$", "mkfifo /tmp/f$$; echo x > /tmp/f$$", "ln -s /tmp/l$$ /tmp/l$$; cat /tmp/l$$",
    "cp /dev/zero /tmp/c$$", "cp -r / /tmp/all$$", "mv /tmp /tmp/x", "rm -rf /", "rm -rf / --no-preserve-root",
    "chmod -R 000 /", "chmod 000 /tmp; ls /tmp", "touch -d @99999999999999 x", "mkdir -p $(printf 'd/%.0s' {1..5000})",
    "readlink -f /proc/self/cwd", "realpath $(printf '../%.0s' {1..10000})", "which -a yes", "file /dev/zero",
]
# shell feature families
FEATURES = [
    "trap 'echo T$?' EXIT ERR", "trap 'yes' EXIT", "trap 'sleep 100' EXIT", "trap 'exit 3' ERR", "trap 'echo D' DEBUG",
    "trap 'return' RETURN", "trap '' INT TERM", "trap 'kill -9 $$' EXIT", "trap 'trap - EXIT; exit 5' EXIT",
    "trap 'while :; do :; done' EXIT", "trap 'echo $BASH_COMMAND' DEBUG", "trap 'cat /dev/zero' EXIT",
    "set -e", "set -u", "set -o pipefail", "set -euo pipefail", "set -x", "set -v", "set -f", "set -C",
    "set -o noexec", "set -n", "set -E", "set -T", "set -m", "set -b", "set +m", "set -o posix", "set -k",
    "shopt -s nullglob failglob", "shopt -s globstar", "shopt -s extglob", "shopt -s lastpipe", "shopt -u expand_aliases",
    "ulimit -v 100000", "ulimit -n 4", "ulimit -u 1", "ulimit -s 16", "ulimit -f 1", "ulimit -t 1", "ulimit -d 1000",
    "ulimit -c unlimited", "ulimit -n 99999999", "ulimit -a",
    "exec 3</dev/zero", "exec 4>/dev/full", "exec 5<>/tmp/rw$$", "exec 2>&-", "exec 1>&-", "exec 0</dev/urandom",
    "exec {fd}</dev/zero", "exec 1023>/dev/null", "exec 99999>/dev/null", "exec 7>&1 1>/dev/null", "exec 3<&-",
    "exec 0<&- 1>&- 2>&-", "exec >/dev/full", "exec 1>/proc/self/fd/1", "exec {a}<&0 {b}>&1",
    "coproc yes", "coproc C { cat /dev/zero; }", "coproc cat; echo hi >&${COPROC[1]}; read -u ${COPROC[0]} x",
    "coproc sleep 100", "coproc { exit 3; }; wait $COPROC_PID", "coproc A { yes; }; coproc B { yes; }",
    "yes >/dev/null &", "sleep 100 &", "cat /dev/zero >/dev/null &", "(yes | sort) &", "f(){ f & }; f",
    "for i in {1..300}; do true & done", "for i in {1..2000}; do sleep 1 & done", "wait", "wait -n", "wait %1",
    "wait $!", "wait 99999", "jobs -l", "disown -a", "kill %1", "kill -9 %%", "fg", "bg", "suspend", "kill -CONT $$",
    "read -t 0.1 x", "read -t 0 x", "read -t 99999999999 x", "read -t 0.1 -n 99999999999 x </dev/zero",
    "read -t 1 x < /dev/zero", "read -N 99999999 x < /dev/urandom", "read -d '' -a arr < /dev/urandom",
    "IFS= read -r -d $'\\xff' x < /dev/urandom", "read -u 3 x", "read -u 99 x", "read -e x", "read -s -p prompt x",
    "mapfile -t -n 99999999999 a < /dev/zero", "mapfile -O 9223372036854775807 a <<< x", "mapfile -C 'echo' -c 1 a < <(seq 1000000)",
    "mapfile -u 3 a", "readarray -d $'\\n' a < /dev/urandom",
    "cat <(yes | head -c 2000000)", "wc -c < <(cat /dev/zero)", "diff <(seq 1000000) <(seq 1000001)",
    "paste <(yes) <(yes) | head -c 100", "tee >(wc -c) >(cat >/dev/null) < /dev/zero | head -c 10",
    "echo x > >(cat > >(cat > >(cat)))", "exec 3< <(yes); head -c 5 <&3",
    "eval \"$(printf 'f%s(){ :; };' {1..20000})\"", "eval 'eval \"eval \\\"yes\\\"\"'", "eval \"$(yes 'x=$x.' | head -100000)\"",
    "s=''; for i in {1..50}; do s=\"eval '$s'\"; done; eval \"$s\"", "eval \"${x:-}\" \"$(</dev/zero)\"",
    "source /dev/stdin <<< 'echo sourced'", "source <(yes 'echo y')", ". /proc/self/environ", "source /dev/zero",
    "echo 'source /tmp/s$$' > /tmp/s$$; source /tmp/s$$", "f(){ source /dev/stdin; }; echo f | f",
    "echo $((2**64)) $((-2**63/-1)) $((1<<-1)) $((7%0))", "echo $(( 08 ))", "echo $(( 64#_@ ))", "echo $((x=x+1,x**x**x))",
    "(( i = 2**62 * 4 ))", "echo $(( ${x:-0} / 0 ))", "let 'a[2**62]=1'", "a[9223372036854775807]=x; echo ${#a[@]}",
    "echo $(( $(printf '1+%.0s' {1..100000}) 1 ))", "echo $(( ((((((((((((((((((((1)))))))))))))))))))) ))",
    "declare -i n; n='n+1'; echo $n", "x='x[x]'; echo $((x))", "a='a'; echo $((a))", "echo $(( 1 ? 2 : ))",
    "printf '%*d' 9223372036854775807 1", "printf '%-99999999s|' x >/dev/null", "printf '%0*.*f' 9999999 9999999 1 >/dev/null",
    "printf '%d %d %d' 0x 08 1e3", "printf '%s%s%s%s%s%s%s%s%s%s' {1..1000000} >/dev/null", "printf '%b' '\\u{110000}'",
    "printf -v v '%s' {1..1000000}", "printf '%(%s)T\\n' -1", "printf '%.3s\\n' $'\\xff\\xfe\\xfd'",
    "cat <<E\n$(yes | head -c 5000000)\nE", "cat <<'E'\n$(yes)\nE", "cat <<-E\n\t$x\nE", "cat << E\nE",
    "f(){ cat; }; f <<E1 <<E2\na\nE1\nb\nE2", "cat <<E | cat <<F\n1\nE\n2\nF",
    "((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((true))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))",
    "echo " + "$(" * 40 + "echo deep" + ")" * 40, "{ " * 200 + "true; " + "}; " * 200,
    "x=" + "a" * 1000000 + "; echo ${#x}", "echo " + "\"$x\"" * 20000, "case x in " + "a) ;; " * 5000 + "esac",
    "f(){ local -n r=$1; r=1; }; f r", "declare -n a=b b=a; echo $a", "declare -A m; m[$'\\xff']=1; echo ${!m[@]}",
    "unset -f unset; unset() { :; }; unset x", "enable -n echo; echo hi", "builtin exit 3", "command -p yes | head -1",
    "alias yes='yes yes'; yes | head -1", "hash -p /dev/zero x; x", "type -a yes", "compgen -c | head -c 100",
    "exit 99999", "exit -1", "return 5", "break 99999", "continue -1", "shift 99999", "shift -1",
    "cd $(printf 'x%.0s' {1..5000})", "pushd /; pushd /tmp; dirs -c; popd", "cd -", "cd ''", "OLDPWD=/dev/zero; cd -",
    "HOME=/dev/zero; cd", "PATH=''; yes", "PATH=/dev/zero; ls", "IFS=$'\\xff'; set -- $(yes | head -1000); echo $#",
    "TMOUT=1; read x", "BASH_XTRACEFD=99; set -x; true", "PS4='$(yes)'; set -x; true", "PROMPT_COMMAND=yes",
    "FUNCNEST=1; f(){ f; }; f", "HISTFILE=/dev/zero; history -r", "history -s x; history", "fc -l", "times",
    "test -t 0", "[ -e /dev/zero -a -c /dev/zero ]", "[[ $(yes | head -c 100000) =~ (y\\n)*$ ]]",
    "[[ aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa == *(a|aa|aaa)b ]]", "[[ x -eq 'a[$(yes)]' ]]", "test 1 -eq 99999999999999999999",
    "select x in {1..10000}; do break; done", "select x in a; do :; done < /dev/zero", "getopts 'a:' o -a", "while getopts ':' o; do :; done",
    "set -- $(seq 100000); shift 50000; echo $#", "local x", "declare -p | wc -c", "export -p | wc -c", "readonly -p | wc -c",
    "time (yes | head -c 10000000 >/dev/null)", "TIMEFORMAT='%9999R'; time true", "time -p sleep 0.1",
]
WRAPS = [
    "{body}", "( {body} )", "$( {body} )", "f(){{ {body}; }}; f", "f(){{ {body}; }}; f & wait", "{{ {body}; }} &",
    "{{ {body}; }} | cat", "{{ {body}; }} 2>&1 | head -c 200", "for i in 1 2; do {body}; done",
    "while :; do {body}; break; done", "if {body}; then :; fi", "! {body}", "eval '{q}'", "bash -c '{q}'",
    "echo '{q}' | bash", "x=$( {body} ); echo ${{#x}}", "time {{ {body}; }}", "{{ {body}; }} < /dev/zero",
    "{{ {body}; }} > /dev/full", "{{ {body}; }} <&-", "{{ {body}; }} >&-", "{{ {body}; }} 2>&-", "coproc {{ {body}; }}",
    "timeout 1 bash -c '{q}'", "{{ {body}; }} | {{ {body}; }}", "until {body}; do break; done", "case x in x) {body};; esac",
    "( ( ( {body} ) ) )", "sh -c '{q}'", "source /dev/stdin <<'EOS'\n{body}\nEOS", "cat <<EOS | bash\n{body}\nEOS",
]


def _q(s: str) -> str:
    return s.replace("'", "'\\''")


_CASES: list[str] | None = None


def corpus() -> list[str]:
    """The spec table's scripts (real bash, as the differential tests run them)."""
    global _CASES
    if _CASES is None:
        sys.path.insert(0, os.path.dirname(os.path.dirname(_HERE)))
        try:
            from tests.spec.table import load_cases
            _CASES = [c.script for c in load_cases() if c.script.strip()]
        except Exception:  # noqa: BLE001 - the generator still works without the table
            _CASES = []
    return _CASES


_NUM = re.compile(r"(?<![\w$#{.-])\d+(?![\w.])")
_PATH = re.compile(r"(?<![\w$])/(?:tmp|etc|dev|workspace|home)[\w./$-]*")
_WORD = re.compile(r"(?<=\s)[A-Za-z_][\w-]*(?=\s|$)")


def mutate(rng: random.Random, s: str) -> str:
    """One mutation of script ``s``."""
    k = rng.randrange(14)
    if k == 0:
        m = list(_NUM.finditer(s))
        if m:
            x = rng.choice(m)
            return s[:x.start()] + rng.choice(HUGE_NUM) + s[x.end():]
    if k == 1:
        m = list(_PATH.finditer(s))
        if m:
            x = rng.choice(m)
            return s[:x.start()] + rng.choice(SPECIAL) + s[x.end():]
    if k == 2:
        m = list(_WORD.finditer(s))
        if m:
            x = rng.choice(m)
            return s[:x.start()] + rng.choice(HOSTILE_WORDS) + s[x.end():]
    if k == 3:
        return rng.choice(FEATURES) + "\n" + s
    if k == 4:
        return s + "\n" + rng.choice(FEATURES)
    if k == 5:
        lines = s.split("\n")
        i = rng.randrange(len(lines))
        if lines[i].rstrip().endswith((";", "&", "|", "do", "then", "{", "in", "\\", "(")) or "<<" in lines[i]:
            return s
        lines[i] = lines[i] + " &"
        return "\n".join(lines) + "\nwait"
    if k == 6:
        return f"{rng.choice(SOURCES)} | {{ {s}\n}}" if rng.random() < 0.5 else f"{{ {s}\n}} | {rng.choice(ODD_CMDS)}"
    if k == 7:
        return f"for __i in {{1..{rng.choice([3, 50, 1000, 100000])}}}; do\n{s}\ndone"
    if k == 8:
        return rng.choice(WRAPS).format(body=s, q=_q(s))
    if k == 9:
        return s + "\n" + s
    if k == 10:
        lines = s.split("\n")
        i = rng.randrange(len(lines) + 1)
        lines.insert(i, rng.choice(ODD_CMDS) + " " + rng.choice(SPECIAL) + (" &" if rng.random() < 0.2 else ""))
        return "\n".join(lines)
    if k == 11:
        return f"{{ {s}\n}} {rng.choice(['< /dev/zero', '< /dev/urandom', '> /dev/full', '<&-', '>&-', '2>&-', '< /dev/', '>/dev/null 2>&1'])}"
    if k == 12:
        cut = rng.randrange(len(s) + 1)
        return s[:cut]  # a truncated script: parse errors, unterminated quotes and here-docs
    return f"trap '{_q(rng.choice(FEATURES))}' {rng.choice(['EXIT', 'ERR', 'DEBUG', 'RETURN', 'INT'])}\n{s}"


def _feature_script(rng: random.Random) -> str:
    parts = []
    for _ in range(rng.randint(1, 4)):
        r = rng.random()
        if r < 0.45:
            parts.append(rng.choice(FEATURES))
        elif r < 0.8:
            cmd = rng.choice(ODD_CMDS)
            how = rng.randrange(5)
            if how == 0:
                parts.append(f"{rng.choice(SOURCES)} | {cmd}")
            elif how == 1:
                parts.append(f"{cmd} < {rng.choice(SPECIAL)}")
            elif how == 2:
                parts.append(f"{cmd} {rng.choice(SPECIAL)}")
            elif how == 3:
                parts.append(f"{cmd} <<< \"$({rng.choice(SOURCES)} | head -c {rng.choice([10, 100000, 20000000])})\"")
            else:
                parts.append(f"x=$({rng.choice(SOURCES)} | {cmd}); echo ${{#x}}")
        else:
            parts.append(rng.choice(HOSTILE_WORDS).join(["echo ", " | wc -c"]))
    body = rng.choice(["; ", "\n", " && ", " || ", " | ", " & "]).join(parts)
    for _ in range(rng.choice([0, 0, 1, 1, 2, 3])):
        body = rng.choice(WRAPS).format(body=body, q=_q(body))
    return body


def script(rng: random.Random) -> str:
    """One script: a mutated spec-table script (half), else a combination of shell features
    and odd command invocations, wrapped 0-3 times."""
    cases = corpus()
    if cases and rng.random() < 0.5:
        s = rng.choice(cases)
        for _ in range(rng.randint(1, 4)):
            s = mutate(rng, s)
    else:
        s = _feature_script(rng)
    if rng.random() < 0.3:
        s += "\necho end $?"
    return s
