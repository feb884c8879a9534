"""A third hostile-script generator: special files, deep recursion, huge argument lists, traps with subshells and coprocesses, read -t, signals to self, ulimit."""

from __future__ import annotations

import random

import hostile2

PROC = ["/proc/self/stat", "/proc/self/statm", "/proc/self/status", "/proc/self/maps", "/proc/self/smaps",
        "/proc/self/fd/", "/proc/self/task/", "/proc/self/mounts", "/proc/self/mountinfo", "/proc/self/limits",
        "/proc/self/io", "/proc/self/stack", "/proc/self/syscall", "/proc/self/wchan", "/proc/self/pagemap",
        "/proc/self/mem", "/proc/self/cwd", "/proc/self/root/etc/passwd", "/proc/self/exe", "/proc/self/environ",
        "/proc/self/cmdline", "/proc/self/oom_score_adj", "/proc/self/attr/current", "/proc/1/cmdline",
        "/proc/1/environ", "/proc/sys/kernel/pid_max", "/proc/sys/kernel/hostname", "/proc/loadavg",
        "/proc/uptime", "/proc/stat", "/proc/interrupts", "/proc/kallsyms", "/proc/sysrq-trigger",
        "/proc/kcore", "/proc/self/clear_refs", "/proc/self/coredump_filter", "/proc/thread-self/comm"]
DEV = ["/dev/zero", "/dev/full", "/dev/null", "/dev/urandom", "/dev/random", "/dev/tty", "/dev/ptmx",
       "/dev/kmsg", "/dev/mem", "/dev/port", "/dev/shm/", "/dev/fd/255", "/dev/stdin", "/dev/fd/9",
       "/dev/pts/0", "/dev/console", "/dev/loop0", "/dev/sda", "/sys/kernel/mm/transparent_hugepage/enabled",
       "/sys/fs/cgroup/memory.max", "/sys/class/net/lo/mtu"]
FILES = PROC + DEV
FILE_OPS = ["cat {f} | head -c 100000 | wc -c", "read -r x < {f}; echo ${{#x}}", "mapfile -n 1000 a < {f}; echo ${{#a[@]}}",
            "head -c 1000 {f} | od -c | head -3", "wc -c {f}", "exec 3<{f}; read -t 1 -N 10 y <&3; exec 3<&-",
            "echo x > {f}; echo $?", "echo 1 >> {f}", "while read -r l; do :; done < {f}", "cp {f} /tmp/c$$; ls -l /tmp/c$$",
            "tail -c 10 {f}", "dd if={f} bs=1M count=2 status=none | wc -c", "od -N 64 -tx1 {f}", "ls -la {f}",
            "stat {f}", "grep -c . {f}", "sort {f} | head -1", "tac {f} | head -1", ": < {f}", "exec 4>{f}; echo hi >&4",
            "cat < {f} > /dev/null", "xxd -l 32 {f}", "md5sum {f}", "strings {f} | head -2", "file {f}", "[ -r {f} ]; echo $?",
            "test -s {f} && echo big", "du -s {f}", "readlink -f {f}", "find {f} -maxdepth 2 | head -5",
            "grep -r zz {f} 2>/dev/null | head -1", "truncate -s 0 {f}", "source {f}", ". {f}"]
RECURSE = [
    "f(){ f $(( $1 + 1 )); }; f 0",
    "f(){ local a=$1$1; f \"$a\"; }; f x",
    "f(){ echo $1 > /dev/null; f $(( $1 + 1 )) | cat; }; f 0",
    "f(){ g; }; g(){ f; }; f",
    "f(){ x=$(f); }; f",
    "f(){ (f); }; f",
    "f(){ eval f; }; f",
    "echo 'source /tmp/r$$' > /tmp/r$$; source /tmp/r$$",
    "echo '. /tmp/r$$; echo x' > /tmp/r$$; . /tmp/r$$",
    "s='eval \"$s\"'; eval \"$s\"",
    "f(){ bash -c 'f(){ f; }; f'; }; f",
    "FUNCNEST=20; f(){ f; }; f; echo $?",
    "alias a='a;a'; eval a",
    "f(){ trap 'f' RETURN; }; f",
    "f(){ f & wait; }; f",
    "f(){ local -a a=(\"$@\" \"$@\"); f \"${a[@]}\"; }; f 1",
    "f(){ [[ $1 -gt 100000 ]] || f $(( $1 + 1 )); }; f 0; echo deep",
    "f(){ declare -n r=$1; f r; }; f x",
    "x='${x}'; eval \"echo $x\"",
    "f(){ (( $1 )) && f $(( $1 - 1 )); }; f 5000; echo $?",
    "for i in {1..3000}; do s=\"{ $s }\"; done; eval \"$s\"",
    "e='(((((((((((((((((((((((((((((((('; eval \"echo $(( ${e}1${e//(/)} ))\"",
]
HUGE_ARGS = [
    "set -- {1..200000}; echo $#", "echo {1..300000} | wc -c", "a=( $(seq 200000) ); echo ${#a[@]}",
    "/bin/echo $(seq 100000) | wc -c", "/bin/true $(printf 'x%.0s' {1..3000000}); echo $?",
    "env $(seq 50000) true; echo $?", "printf '%s\\n' {1..200000} | xargs echo | wc -l",
    "printf '%s\\n' {1..200000} | xargs -n 1 -P 100 true; echo $?", "x=$(printf '%200000s'); set -- $x$x$x; echo $#",
    "set -- \"${@:1:99999999}\"; echo $#", "f(){ echo $#; }; f {a..z}{a..z}{a..z}{0..9}",
    "a=({1..100000}); b=(\"${a[@]}\" \"${a[@]}\" \"${a[@]}\"); echo ${#b[@]}", "declare -A h; for i in {1..50000}; do h[$i]=$i; done; echo ${#h[@]}",
    "exec /bin/echo $(seq 300000) | tail -c 10", "ls $(printf '/nope%.0s ' {1..30000}) 2>&1 | wc -l",
    "cat $(printf '/etc/passwd %.0s' {1..5000}) | wc -l", "test $(seq 100000); echo $?", "[[ $(seq 100000) ]]; echo $?",
    "case $(seq 100000) in *99999*) echo hit;; esac", "export BIG=$(printf '%1000000s'); /bin/true; echo $?",
]
TRAPS = [
    "trap 'echo T; (exit 3)' EXIT; ( trap 'echo sub' EXIT; exit 2 ); echo $?",
    "coproc c { cat; }; echo x >&${c[1]}; read -t 1 y <&${c[0]}; echo $y",
    "trap '( kill -TERM $$ )' DEBUG; echo a",
    "coproc yes; head -c 10 <&${COPROC[0]}; kill $COPROC_PID",
    "coproc a { sleep 100; }; coproc b { sleep 100; }; echo ${a_PID:+a} ${b_PID:+b}",
    "trap 'coproc true' RETURN; f(){ :; }; f; wait",
    "( trap - EXIT; trap 'echo in' EXIT; exit 7 ); echo $?",
    "trap 'echo err; false' ERR; set -E; f(){ false; }; ( f ); echo $?",
    "trap 'exec 1>&-' DEBUG; echo gone",
    "trap 'trap - DEBUG; echo once' DEBUG; echo a; echo b",
    "coproc { trap 'echo bye' EXIT; read x; }; exec {COPROC[1]}>&-; wait",
    "(trap 'echo int' INT; kill -INT $BASHPID; echo after)",
    "trap 'sleep 100' EXIT; exit 0",
    "trap 'yes | head -c 9999999 > /dev/null' EXIT; ( exit )",
    "coproc { yes; }; sleep 0.2; exec {COPROC[0]}<&-; wait $COPROC_PID; echo $?",
    "trap '(( x++ < 50 )) && kill -USR1 $$' USR1; kill -USR1 $$; echo $x",
    "set -m; sleep 100 & kill -STOP $!; jobs; kill -9 $!",
    "trap 'echo $(trap)' EXIT; (:)",
    "coproc c1 { coproc c2 { cat; }; cat; }; echo hi >&${c1[1]}; exec {c1[1]}>&-; cat <&${c1[0]}",
    "{ trap 'echo sig' TERM; sleep 5 & wait; } & sleep 0.1; kill %1; wait",
]
READ_T = [
    "read -t 0.001 x < /dev/zero; echo $?", "read -t 0 x; echo $?", "read -t 99999999999 x < <(sleep 5); echo $?",
    "read -t -1 x; echo $?", "read -t 1e-9 x; echo $?", "read -t 0.5 -N 999999999 x < /dev/urandom; echo ${#x}",
    "while read -t 0.01 l; do :; done < <(yes); echo $?", "read -t 1 -d '' x < /dev/zero; echo $?",
    "read -t 0.1 -u 9 x; echo $?", "read -t 2 x <> /tmp/f$$; echo $?", "read -t 0.2 -s -n 1 x < /dev/tty; echo $?",
    "mkfifo /tmp/q$$; read -t 0.3 x < /tmp/q$$; echo $?", "read -t 0.2 x <&-; echo $?",
    "TMOUT=0.2; read x; echo $?", "{ sleep 1; echo late; } | read -t 0.1 x; echo $?",
]
SIGNALS = [
    "kill -TERM $$; echo after", "kill -9 $$; echo after", "kill -STOP $$; echo after", "kill -INT 0; echo after",
    "kill -s HUP $BASHPID; echo after", "(kill -KILL $$); echo after", "trap 'echo hup' HUP; kill -HUP $$; echo after",
    "kill -0 $$; echo $?", "kill -ALRM $$; echo after", "kill -- -$$; echo after", "kill %1; echo $?",
    "sleep 100 & kill -TERM $!; wait $!; echo $?", "suspend; echo $?", "trap '' TERM; kill $$; echo survived",
    "kill -SEGV $$; echo after", "kill -PIPE $$; echo after", "kill -CONT $$; echo $?", "kill -l 9999; echo $?",
    "kill -s WINCH $$; echo $?", "(sleep 0.1; kill -TERM $$) & sleep 5; echo late", "kill -USR2 $PPID; echo $?",
    "kill -9 1; echo $?", "kill -TERM -1; echo $?", "exec kill -TERM $$",
]
ULIMIT = [
    "ulimit -v 10000; echo hi; ls /", "ulimit -n 3; cat /etc/passwd | wc -l", "ulimit -s 16; f(){ f; }; f",
    "ulimit -t 1; while :; do :; done", "ulimit -f 0; echo x > /tmp/f$$; echo $?", "ulimit -u 1; sleep 1 & wait; echo $?",
    "ulimit -c unlimited; echo $?", "ulimit -H -n 1; echo $?; ls", "ulimit -m 1; echo $?", "ulimit -l 0; echo $?",
    "ulimit -x 0; echo $?", "ulimit -p; echo $?", "ulimit -a | wc -l", "ulimit -n 999999999; echo $?",
    "ulimit -d 1000; yes | head -c 100000000 | sort | tail -1", "ulimit -v 100000; python3 -c 'x=bytearray(10**9)'; echo $?",
    "ulimit -S -t 0; /bin/true; echo $?", "(ulimit -n 4; exec 3</etc/passwd 4</etc/passwd 5</etc/passwd); echo $?",
    "ulimit -q 0; echo $?", "ulimit -e 99; echo $?", "ulimit -i 0; kill -USR1 $$; echo $?",
    "ulimit -f 1; head -c 100000 /dev/zero > /tmp/u$$; echo $?", "ulimit -n 5; for i in {1..9}; do exec {f}</dev/null; done; echo $f",
]
GROUPS = [RECURSE, HUGE_ARGS, TRAPS, READ_T, SIGNALS, ULIMIT]


def _part(rng: random.Random) -> str:
    r = rng.random()
    if r < 0.3:
        return rng.choice(FILE_OPS).format(f=rng.choice(FILES))
    if r < 0.9:
        return rng.choice(rng.choice(GROUPS))
    return rng.choice(hostile2.FEATURES)


def script(rng: random.Random) -> str:
    """1-4 parts (a special file under an operation, or one of the shapes above), joined as
    a list or a pipeline, wrapped 0-2 times (hostile2's wraps: ``$( )``, ``eval``, a
    function with ``& wait``, a subshell...)."""
    parts = [_part(rng) for _ in range(rng.randint(1, 4))]
    body = rng.choice(["; ", "\n", " && ", " || ", " | ", " & "]).join(parts)
    for _ in range(rng.choice([0, 0, 1, 1, 2])):
        body = rng.choice(hostile2.WRAPS).format(body=body, q=hostile2._q(body))
    if rng.random() < 0.3:
        body += "\necho end $?"
    return body
