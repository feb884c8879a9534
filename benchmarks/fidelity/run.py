"""Bash fidelity harness: runs a case corpus under ``bash -c`` and a virtual Sandbox, reports differences.

Corpus: ``*.sh`` files under a directory (default /tmp/fidelity/corpus), each holding cases
separated by ``#### name`` header lines; the category is the file name.  Lines starting with
``## `` are annotations and are dropped (the truth is what /usr/bin/bash prints here).
``--spec`` also adds the project's own tests/spec/cases table.

Usage: .venv/bin/python benchmarks/fidelity/run.py [--corpus DIR] [--spec] [-k SUBSTR] [-j N]
Writes the report (pass rate overall and per category, then failures with diffs) to
/tmp/fidelity/report.txt (``--out``).

Each case runs in a fresh temp dir under ``/usr/bin/bash -c`` (argv[0] ``bash``, the minimal
environment of tests/spec/table.py) and in a fresh ``Sandbox(isolation="virtual")``; stdout,
stderr and the exit status are compared byte for byte, nothing normalised.  Cases using
``argv.py`` get a shell-function version of it prepended (in both shells).

Skip rules (SKIP_RULES below; things a sandbox legitimately differs on): real pids (``$$``,
``$!``, BASHPID, PPID, ps/kill/jobs/disown), /proc, /dev/fd, /sys and /dev/tty, host users and
ids (UID, EUID, GROUPS, HOSTNAME, HOSTTYPE, MACHTYPE, OSTYPE, ~user, id, whoami, /etc/passwd),
time (SECONDS, EPOCH*, RANDOM, SRANDOM, date, time, times, %(...)T), host files and tools
(python, perl, stty, ulimit, nested sh/bash -c, $SH/$TMP/$REPO_ROOT of the Oils runner),
interactive features (history, fc, bind, complete*, set -i/-m) and host shell state
(BASH_VERSION, BASH_VERSINFO, $BASH, $0, SHLVL, umask).  A bash run that times out is skipped.
"""

from __future__ import annotations

import argparse
import difflib
import multiprocessing
import os
import re
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
BASH = "/usr/bin/bash"
ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/home/user", "USER": "user",
       "LANG": "C.UTF-8", "TERM": "dumb", "PAGER": "cat", "GIT_PAGER": "cat"}

# Helper the Oils corpus calls: prints its argv as a Python list (a shell function, so it runs
# the same way in both shells).
ARGV_PY = ("argv.py() { local a s='['; local sep=''; for a in \"$@\"; do a=${a//\\\\/\\\\\\\\}; "
           "if [[ $a == *\\'* ]]; then s+=\"$sep\\\"$a\\\"\"; else s+=\"$sep'$a'\"; fi; sep=', '; done; "
           "printf '%s]\\n' \"$s\"; }\n")

# Skip rules: things a sandbox legitimately differs on.  Each is (reason, regex on the script).
SKIP_RULES: list[tuple[str, re.Pattern[str]]] = [
    ("real pids", re.compile(r"\$\$|\$!|\bBASHPID\b|\bPPID\b|\bps\b|\bkill\b|\bjobs\b|\bwait\b\s+%|\bdisown\b")),
    ("/proc, /dev/fd, /sys", re.compile(r"/proc/|/dev/fd|/sys/|/dev/tty")),
    ("host users and ids", re.compile(r"\b(UID|EUID|GROUPS|HOSTNAME|HOSTTYPE|MACHTYPE|OSTYPE)\b|~root|~[a-z]+/|\bid\b\s|\bwhoami\b|/etc/passwd")),
    ("time", re.compile(r"\b(SECONDS|EPOCHSECONDS|EPOCHREALTIME|RANDOM|SRANDOM)\b|\bdate\b|\btime\b|\btimes\b|%\(.*\)T")),
    ("host files and tools", re.compile(r"\bpython[23]?\b|\bperl\b|\b(od|hexdump)\b -c|\bstty\b|\bulimit\b|\bexec\s+\S*sh\b|\$SH\b|\$REPO_ROOT|\$TMP\b|\bsh -c\b|\bbash -c\b|\bbash\b\s+-")),
    ("interactive / history / completion", re.compile(r"\b(history|fc|bind|complete|compgen|compopt|suspend|logout)\b|\bset -[a-z]*[im]")),
    ("host shell state", re.compile(r"\bBASH_VERSION\b|\bBASH_VERSINFO\b|\bBASH\b|\$0\b|\bSHLVL\b|\bulimit\b|\bumask\b")),
]


def load_corpus(corpus: str) -> list[tuple[str, str, str]]:
    out = []
    for fn in sorted(os.listdir(corpus)):
        if not fn.endswith(".sh"):
            continue
        cat = fn[:-3]
        with open(os.path.join(corpus, fn), encoding="utf-8", errors="surrogateescape") as f:
            text = f.read()
        name, cur = None, []
        for line in text.split("\n") + ["#### "]:
            if line.startswith("#### ") or line.startswith("### "):
                if name is not None:
                    body = "\n".join(cur).strip("\n")
                    if body.strip():
                        out.append((cat, name, body))
                name, cur = line.split(" ", 1)[1].strip(), []
            elif name is not None and not line.startswith("## "):
                cur.append(line)
    return out


def load_spec() -> list[tuple[str, str, str]]:
    sys.path.insert(0, ROOT)
    from tests.spec.table import load_cases

    return [("spec-" + c.file, c.name, c.script) for c in load_cases() if not c.stdin]


def skip_reason(script: str) -> str | None:
    for reason, rx in SKIP_RULES:
        if rx.search(script):
            return reason
    return None


def run_case(args: tuple[str, str, str]) -> dict:
    cat, name, script = args
    full = (ARGV_PY + script) if "argv.py" in script else script
    with tempfile.TemporaryDirectory() as d:
        try:
            e = subprocess.run(["bash", "-c", full], executable=BASH, capture_output=True, cwd=d,
                               env=ENV, timeout=10, stdin=subprocess.DEVNULL)
            exp = (e.stdout, e.stderr, e.returncode)
        except subprocess.TimeoutExpired:
            return {"cat": cat, "name": name, "script": script, "skip": "bash timeout"}
    from agentic_bash import Sandbox

    try:
        with Sandbox(isolation="virtual") as sb:
            g = sb.run(full, timeout=10)
        got = (g.stdout_bytes, g.stderr_bytes, g.exit_code)
    except Exception as ex:  # a crash out of run() is a failure, recorded
        got = (b"", f"EXCEPTION {type(ex).__name__}: {ex}".encode(), -999)
    # The ARGV_PY prelude shifts line numbers by one in both shells alike: nothing to fix.
    return {"cat": cat, "name": name, "script": script, "exp": exp, "got": got,
            "ok": exp == got, "ok_out": exp[0] == got[0] and exp[2] == got[2]}


def _diff(label: str, a: bytes, b: bytes) -> str:
    if a == b:
        return ""
    ea = a.decode("utf-8", "backslashreplace").splitlines(keepends=True)
    eb = b.decode("utf-8", "backslashreplace").splitlines(keepends=True)
    d = "".join(difflib.unified_diff(ea, eb, f"bash {label}", f"ours {label}", n=2))
    return d if d.endswith("\n") else d + "\n"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", default="/tmp/fidelity/corpus")
    ap.add_argument("--spec", action="store_true", help="also run tests/spec/cases")
    ap.add_argument("-k", default="")
    ap.add_argument("-j", type=int, default=2)
    ap.add_argument("--out", default="/tmp/fidelity/report.txt")
    a = ap.parse_args()
    cases = load_corpus(a.corpus) if os.path.isdir(a.corpus) else []
    if a.spec:
        cases += load_spec()
    if a.k:
        cases = [c for c in cases if a.k in f"{c[0]}:{c[1]}"]
    skipped: Counter[str] = Counter()
    todo = []
    for c in cases:
        r = skip_reason(c[2])
        if r:
            skipped[r] += 1
        else:
            todo.append(c)
    with multiprocessing.Pool(a.j) as pool:
        results = pool.map(run_case, todo, chunksize=4)
    for r in results:
        if "skip" in r:
            skipped[r["skip"]] += 1
    results = [r for r in results if "skip" not in r]
    per: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for r in results:
        p = per[r["cat"]]
        p[0] += r["ok"]
        p[1] += r["ok_out"]
        p[2] += 1
    n = len(results)
    ok = sum(r["ok"] for r in results)
    ok_out = sum(r["ok_out"] for r in results)
    lines = [f"PASS {ok}/{n} = {100 * ok / max(n, 1):.1f}% (stdout+status only: {ok_out}/{n} = "
             f"{100 * ok_out / max(n, 1):.1f}%)",
             "skipped: " + ", ".join(f"{k}={v}" for k, v in skipped.most_common()), "", "per category:"]
    for cat in sorted(per):
        p = per[cat]
        lines.append(f"  {cat:28s} {p[0]:4d}/{p[2]:<4d} (out+status {p[1]})")
    lines.append("")
    for r in results:
        if r["ok"]:
            continue
        (eo, ee, es), (go, ge, gs) = r["exp"], r["got"]
        lines.append(f"=== {r['cat']}: {r['name']}")
        lines.append(r["script"])
        lines.append("---")
        if es != gs:
            lines.append(f"status: bash {es} ours {gs}")
        lines.append(_diff("stdout", eo, go) + _diff("stderr", ee, ge))
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    try:
        print("\n".join(lines[: 4 + len(per)]))
    except BrokenPipeError:
        pass


if __name__ == "__main__":
    main()
