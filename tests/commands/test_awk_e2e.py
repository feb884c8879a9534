"""End-to-end: helper-8's commands inside a virtual Sandbox, compared with real bash + tools."""

from __future__ import annotations

import os
import subprocess

import pytest

FILES = {
    "data.csv": "name,qty,price\napple,3,1.5\nbanana,12,0.25\ncherry,7,3\n",
    "package.json": '{"name": "demo", "deps": [{"name": "left-pad", "version": "1.0.0"}, '
                    '{"name": "lodash", "version": "4.17.21"}]}\n',
    "src/app.py": "import os\n# TODO: fix\nprint('hi')\n",
    "src/lib.py": "def f():\n    return 1  # TODO later\n",
    "notes.txt": "alpha 1\nbeta 2\ngamma 3\n",
}

CASES = [
    "awk -F, '{s+=$3} END {print s}' data.csv",
    "awk -F, 'NR>1 {t += $2 * $3} END {printf \"%.2f\\n\", t}' data.csv",
    "jq -r '.deps[] | .name' package.json",
    "jq -c '.deps | map(.version)' package.json",
    "jq '.deps | length' package.json",
    "awk '{print $2, $1}' notes.txt",
    "awk 'BEGIN { while ((\"echo hi there\" | getline l) > 0) print \"got:\", l }'",
    "awk '{ print $1 | \"cat\" } END { close(\"cat\"); print \"done\" }' notes.txt",
    "awk 'BEGIN { system(\"echo from-system\"); print \"after\" }'",
    "awk '/TODO/ {print FILENAME\":\"FNR}' src/app.py src/lib.py",
    "cat notes.txt | awk '{s += $2} END {print s, NR}'",
    "awk -v n=2 '$2 >= n' notes.txt",
    "echo '3 4' | awk '{print $1 * $2}'",
    "printf 'b\\na\\n' | awk '{print NR\": \"$0}'",
    "awk 'END {print NR}' data.csv notes.txt",
    "echo '2^10; scale=3; 1/3' | bc",
    "echo '4*a(1)' | bc -l",
    "date -u -d @0 '+%Y-%m-%d %H:%M:%S'",
    "date -u -d '2024-02-29 12:00' +%s",
    "tar czf a.tgz src && tar tzf a.tgz | wc -l",
    "gzip -c notes.txt | gunzip -c",
    "gzip -k notes.txt && zcat notes.txt.gz | awk 'END{print NR}'",
    "bzip2 -c notes.txt | bzcat | head -1",
    "xz -c notes.txt | xzcat | tail -1",
    "true; echo $?; false; echo $?",
    "jq -n '[1,2,3] | add'",
    "echo '{\"a\":{\"b\":[1,2]}}' | jq -c '.a.b'",
    "awk 'BEGIN { printf \"%5.2f|%-4s|%c\\n\", 3.14159, \"ab\", 65 }'",
    "awk -F, 'NR > 1 { print $1 > \"out.txt\" } END { close(\"out.txt\"); while ((getline l < \"out.txt\") > 0) n++; print n }' data.csv",
    "env -i FOO=bar env",
    "printenv NOPE; echo $?",
]


@pytest.fixture
def realdir(tmp_path):
    for name, data in FILES.items():
        p = tmp_path / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(data)
    return str(tmp_path)


def _real(script: str, cwd: str) -> subprocess.CompletedProcess[bytes]:
    env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": cwd, "TZ": "UTC"}
    return subprocess.run(["/usr/bin/bash", "-c", script], capture_output=True, cwd=cwd, env=env, timeout=30)


@pytest.mark.parametrize("script", CASES)
def test_sandbox_vs_real(script, realdir):
    try:
        from agentic_bash import Sandbox
    except ImportError:  # pragma: no cover
        pytest.skip("Sandbox not available")
    gnu = _real(script, realdir)
    with Sandbox(isolation="virtual") as sb:
        for name, data in FILES.items():
            sb.write_file(name, data)
        r = sb.run(script)
    out = r.stdout if isinstance(r.stdout, str) else r.stdout.decode()
    assert out == gnu.stdout.decode()
    assert r.exit_code == gnu.returncode


_ = os
