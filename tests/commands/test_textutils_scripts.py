"""Agent-style pipelines of the text/file commands: our Sandbox vs real bash + GNU tools."""

from __future__ import annotations

import os
import subprocess

import pytest

from harness_files import ENV  # noqa: E402

FILES = {
    "src/app.py": "import os\n# TODO: fix\ndef main():\n    print('hi')  # TODO later\n",
    "src/util.py": "def helper():\n    return 42\n",
    "src/data.csv": "id,name,score\n3,carol,88\n1,alice,95\n2,bob,72\n4,dave,95\n",
    "README.md": "# Project\n\nSome text here.\nMore text.\n",
    "logs/app.log": "INFO start\nERROR boom\nINFO ok\nERROR bad\nWARN hmm\nERROR boom\n",
    "words.txt": "the cat\nthe dog\na cat\nthe cat\n",
    "notes.txt": "b\na\nc\nb\n",
}

SCRIPTS = [
    "printf 'b\\na\\nb\\n' | sort | uniq -c",
    "sort notes.txt | uniq -c | sort -rn",
    "cat logs/app.log | cut -d' ' -f1 | sort | uniq -c | sort -rn | head -1",
    "tr ' ' '\\n' < words.txt | sort | uniq -c | sort -k1,1nr -k2",
    "wc -l src/app.py src/util.py",
    "wc -l < src/app.py",
    "cat src/*.py | wc -l",
    "head -n 2 src/data.csv; tail -n +2 src/data.csv | sort -t, -k3,3nr -k2,2",
    "tail -n +2 src/data.csv | cut -d, -f2 | tr a-z A-Z | paste -sd,",
    "seq 1 10 | paste - - | column -t",
    "seq 5 | tac | head -3 | tr -d '\\n'; echo",
    "echo hello | tee copy.txt | rev; cat copy.txt",
    "echo 'a b c' | tr -s ' ' | cut -d' ' -f2-",
    "ls; ls src | wc -l",
    "ls -1 src logs",
    "ls -a src",
    "ls nope src 2>&1",
    "mkdir -p out/sub && touch out/sub/f && ls -R out",
    "cp -r src backup && ls backup && diff -r src backup && echo same",
    "mv notes.txt n2.txt && ls *.txt",
    "rm -rf logs && ls",
    "cat README.md | head -1 | od -c",
    "printf 'x\\ty\\n' | od -An -tx1",
    "basename src/app.py .py; dirname src/app.py; basename -a a/b c/d",
    "for f in src/*.py; do echo \"$(basename \"$f\"): $(wc -l < \"$f\")\"; done",
    "seq -s+ 10 | bc 2>/dev/null || seq -s+ 10",
    "seq 3 | while read n; do printf '%03d\\n' $n; done",
    "sort -u notes.txt | tr '\\n' ' '; echo",
    "sort -t, -k3 -n src/data.csv | head -2",
    "cat -n README.md | tail -2",
    "cat nope README.md 2>&1 | head -3",
    "head -n1 README.md nope src/util.py 2>&1",
    "wc -c README.md nope 2>&1",
    "ls -d src/*.py | xargs -n1 basename",
    "echo abc | md5sum; echo abc | sha256sum",
    "printf 'hello' | base64 | base64 -d; echo",
    "uniq -d <(sort words.txt)",
    "comm -12 <(sort words.txt | uniq) <(printf 'a cat\\nthe cat\\n')",
    "join -t, <(tail -n +2 src/data.csv | sort -t, -k1,1) <(printf '1,x\\n3,y\\n')",
    "nl -ba README.md",
    "fold -w 5 README.md | head -3",
    "expand -t 4 <(printf 'a\\tb\\n')",
    "yes | head -n 3",
    "seq 100000 | tail -1",
    "seq 0.5 0.5 2.5",
    "seq -w 1 10 | head -3",
    "echo -e 'a\\tb' | cat -A",
    "printf '%s\\n' z y x | sort -r | head -1",
    "stat -c '%s %n' README.md",
    "touch a b c && ls -m a b c",
    "ln -s README.md link && readlink link && cat link | head -1",
    "chmod 600 README.md && stat -c %a README.md && ls -l README.md | cut -c1-10",
    "d=$(mktemp -d); echo \"$d\" | grep -c '^/tmp/tmp\\.'; rmdir \"$d\"",
    "realpath src/../README.md",
    "printf 'one\\ntwo\\n' > f.txt && cat >> f.txt <<< three && wc -l f.txt",
    "du -s src >/dev/null && echo ok",
    "truncate -s 0 README.md && wc -c README.md",
    "tr -dc 'a-z\\n' < words.txt | sort | uniq | wc -l",
    "env printf '%5s|\\n' ab",
    "echo 'a:b:c' | cut -d: -f2 --complement",
    "printf 'b 2\\na 1\\n' | sort -k2n | awk '{print $1}'",
    "grep -c TODO src/app.py | tee count.txt; cat count.txt",
    "find src -name '*.py' | sort | xargs wc -l",
    "sort words.txt | uniq -c | sort -nr | head -n 2",
    "echo '3 1 2' | tr ' ' '\\n' | sort -n | tail -1",
    # a file that is also the output: cat refuses it when bytes are left to read, grep always
    # (unless it prints no lines); neither may chase its own output
    "cat notes.txt >> notes.txt; echo $?; cat notes.txt",
    "cat notes.txt > notes.txt; echo $?; wc -c notes.txt",
    "cat - words.txt < words.txt >> words.txt; echo $?; wc -l words.txt",
    "{ read x; cat; } < notes.txt >> notes.txt; cat notes.txt",
    "cat -n notes.txt 1<> notes.txt; echo $?",
    "grep a notes.txt >> notes.txt; echo $?; grep -r b . >> notes.txt; echo $?; grep a < notes.txt >> notes.txt; echo $?",
    "grep -c a notes.txt >> notes.txt; grep -l a notes.txt >> notes.txt; grep -m1 a notes.txt >> notes.txt; cat notes.txt",
    "grep -s x notes.txt > notes.txt; echo $?",
    # ls -I/--ignore, --hide (void under -a/-A), -B: fnmatch with FNM_PERIOD, operands exempt
    "touch .h.txt x~ .y~; ls -1 -I '*.txt'; ls --hide='*.txt'; ls -A --hide='*.txt'",
    "touch .h.txt x~ .y~; ls -a -I '*.txt'; ls -a -I '.*'; ls -B -a; ls -a --ignore='*'",
    "ls -1 -I '*.txt' words.txt; ls -R -I 'u*' src; ls -I '[nw]*' --hide='R*'",
    # tail -f: ignored on a pipe; no followable file means GNU gives up at once
    "seq 3 | tail -f -n1; echo $?; seq 3 | tail -f -; echo $?",
    "tail -f nope1 nope2; echo $?; tail -f src; echo $?; tail -fn1 nope; echo $?",
    # tar: member patterns need --wildcards (GNU warns otherwise); -C is checked first
    "tar -cf x.tar src notes.txt; tar -tf x.tar 'src/*.py' 'n?tes.txt' nope; echo $?",
    "tar -cf x.tar src notes.txt; tar -tf x.tar --wildcards 'src/*.py' | sort; tar -tf x.tar --no-wildcards 'n*'; echo $?",
    "tar -cf x.tar notes.txt; tar -xf x.tar -C nope; echo $?; tar -cf y.tar -C notes.txt x; echo $?",
    # ls: -w must be a number; a bad --time-style matters only to a long listing
    "ls -w x; echo $?; ls -w -1; echo $?; ls --time-style=bad words.txt; ls -l --time-style=posix-bad words.txt; echo $?",
    # tar: getopt's usage errors exit 64, others 2; -T lists are stat'ed first
    "tar --bogus; echo $?; tar -cf; echo $?; tar -q; echo $?; tar; echo $?; tar -cxf a; echo $?",
    "tar -cf y.tar -T nope; echo $?",
    # diff: one directory against itself is silent
    "diff src src; echo $?; diff -qs src ./src/; echo $?; diff -s notes.txt notes.txt",
]


def _ours(script: str) -> tuple[bytes, bytes, int]:
    from agentic_bash import Sandbox

    sb = Sandbox(isolation="virtual")
    try:
        for name, data in FILES.items():
            sb.write_file(name, data)
        r = sb.run(script)
        return r.stdout_bytes, r.stderr_bytes, r.exit_code
    finally:
        sb.close()


def _real(script: str, root: str) -> tuple[bytes, bytes, int]:
    for name, data in FILES.items():
        p = os.path.join(root, name)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w") as f:
            f.write(data)
    env = dict(ENV)
    env["HOME"] = root
    p = subprocess.run(["/usr/bin/bash", "-c", script], capture_output=True, cwd=root, env=env, timeout=20)
    err = p.stderr.replace(b"/usr/bin/bash: line 1: ", b"bash: line 1: ")
    return p.stdout.replace(root.encode(), b"/workspace"), err.replace(root.encode(), b"/workspace"), p.returncode


@pytest.mark.parametrize("script", SCRIPTS)
def test_pipeline(script: str, tmp_path) -> None:
    root = str(tmp_path / "w")
    os.makedirs(root)
    a = _ours(script)
    b = _real(script, root)
    assert a[0] == b[0], f"stdout ours={a[0]!r}\nreal={b[0]!r}\nstderr ours={a[1]!r} real={b[1]!r}"
    assert a[1] == b[1], f"stderr ours={a[1]!r}\nreal={b[1]!r}"
    assert a[2] == b[2]
