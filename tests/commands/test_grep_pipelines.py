"""Agent-style pipelines through grep/sed/find/xargs/diff/expr in a virtual Sandbox vs real bash + GNU."""

from __future__ import annotations

import os
import subprocess
import tempfile

import pytest

TREE = {
    "src/app.py": "import os\n# TODO: refactor\ndef main():\n    print('hi')  # TODO later\n",
    "src/util.py": "def helper(x):\n    return x * 2\n",
    "src/pkg/__init__.py": "",
    "src/pkg/mod.py": "# TODO: docs\nVALUE = 42\nold_name = 1\n",
    "docs/readme.md": "# Project\nold text here\nold again\n",
    "data/nums.txt": "3\n1\n2\n10\n",
    "data/words.txt": "apple\nbanana\ncherry\napple pie\n",
    "notes.txt": "first line\nsecond old line\nthird\n",
}

SCRIPTS = [
    "grep -rn TODO src | cut -d: -f1 | sort -u",
    "grep -rl TODO . | sort",
    "grep -rc TODO src | sort",
    "find . -name '*.py' | sort | xargs wc -l",
    "find . -type f -name '*.py' -print0 | sort -z | xargs -0 grep -l def",
    "find src -type d | sort",
    "find . -name '*.md' -exec grep -n old {} \\;",
    "find . -newer notes.txt -name nothing; echo $?",
    "sed -i 's/old/new/' notes.txt && cat notes.txt",
    "sed -i.bak 's/old/NEW/g' docs/readme.md && cat docs/readme.md docs/readme.md.bak",
    "sed -n '2,3p' data/words.txt",
    "sed 's/apple/APPLE/g; /cherry/d' data/words.txt",
    "grep -c apple data/words.txt",
    "grep -o 'a[a-z]*' data/words.txt | sort | uniq -c",
    "grep -v apple data/words.txt | wc -l",
    "grep -E '^(apple|cherry)$' data/words.txt || echo none",
    "cat data/words.txt | grep -m1 an",
    "grep -w pie data/words.txt; echo status=$?",
    "grep -q banana data/words.txt && echo found",
    "grep -rn --include='*.py' 'def ' src | sort",
    "grep -rn --exclude-dir=pkg TODO src | sort",
    "printf 'b\\na\\n' > x; printf 'a\\nb\\n' > y; diff x y; echo $?",
    "diff -u --label old --label new data/nums.txt data/words.txt; echo $?",
    "cp notes.txt n2 2>/dev/null || cat notes.txt > n2; sed -i 's/third/3rd/' n2; diff notes.txt n2",
    "expr $(grep -c apple data/words.txt) + 1",
    "expr length \"$(head -1 data/words.txt)\"",
    "echo 'a b c' | xargs -n1 | sort -r",
    "ls src | xargs -I{} echo file: {}",
    "find . -name '*.txt' | sort | xargs -n2 echo",
    "grep -rh TODO src | sed 's/.*TODO:* *//' | sort",
    "sed -n '/def/{=;p}' src/app.py",
    "grep -n '' data/nums.txt | sed 's/:/ => /'",
    "find . -path ./src -prune -o -type f -print | sort",
    "find src -name '*.py' -size -1k | sort",
    "sed '1!G;h;$!d' data/words.txt",
    "sed -E 's/([a-z]+) ([a-z]+)/\\2 \\1/' data/words.txt",
    "grep -B1 -A1 banana data/words.txt",
    "echo 'x=1' | sed 's/\\(.*\\)=\\(.*\\)/\\2=\\1/'",
]


def _real(script: str) -> tuple[bytes, bytes, int]:
    with tempfile.TemporaryDirectory() as root:
        for name, data in TREE.items():
            p = os.path.join(root, name)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "w") as f:
                f.write(data)
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": root, "LANG": "C.UTF-8", "TZ": "UTC"}
        p = subprocess.run(["/usr/bin/bash", "-c", script], capture_output=True, cwd=root, env=env, timeout=30)
        return p.stdout, p.stderr, p.returncode


@pytest.mark.parametrize("script", SCRIPTS, ids=SCRIPTS)
def test_pipeline(script: str) -> None:
    from agentic_bash import Sandbox
    from agentic_bash.commands import load_all

    reg = load_all()
    missing = [c for c in ("sort", "cut", "uniq", "wc", "head", "cp", "ls", "cat")
               if (f"{c} " in script or f"| {c}" in script) and c not in reg]
    if missing:
        pytest.skip(f"needs {', '.join(missing)} (another helper's commands)")
    sb = Sandbox(isolation="virtual")
    try:
        for name, data in TREE.items():
            sb.write_file(name, data)
        r = sb.run(script)
        out, err, st = _real(script)
        assert r.stdout_bytes == out, f"ours={r.stdout_bytes!r}\nreal={out!r}\nours stderr={r.stderr_bytes!r}"
        assert r.exit_code == st, (r.stderr_bytes, err)
    finally:
        sb.close()
