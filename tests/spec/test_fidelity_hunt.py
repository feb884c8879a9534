"""Agent-style scripts from the session-7 differential hunt (getopts' end, fds and natives, here-docs, set -e corners, namerefs) give what /bin/bash gives (differential)."""

from __future__ import annotations

import shutil

import pytest

import bashdiff

pytestmark = pytest.mark.timeout(300)

CASES = [
    # getopts unsets OPTARG when the options end
    "while getopts ':x:' o -x; do :; done; echo \"$o $OPTARG\"",
    "OPTARG=foo; getopts a o; echo \"[$OPTARG] ${OPTARG-unset}\"",
    "set -- -a; OPTARG=bar; getopts a o; echo \"[$o][${OPTARG-unset}]\"; getopts a o; "
    "echo \"[$o][${OPTARG-unset}]\"",
    "set -- -a -- b; while getopts a o; do echo $o; done; echo \"$o ${OPTARG-unset} $OPTIND\"",
    "getopts_demo() { local OPTIND opt verbose=0 file=; while getopts 'vf:h' opt; do case $opt in "
    "v) verbose=1;; f) file=$OPTARG;; h) echo usage; return;; *) return 2;; esac; done; "
    "echo \"v=$verbose f=$file rest=${*:OPTIND}\"; }; getopts_demo -v -f x.txt a b; getopts_demo -z; echo $?",
    # natives sharing the shell's descriptors and input
    "exec 3> f3; python3 -c 'import os; os.write(3, b\"a\")'; echo b >&3; exec 3>&-; cat f3; echo",
    "exec 3< <(printf 'x\\ny\\n'); read -u 3 l; python3 -c 'import os, sys; "
    "sys.stdout.write(os.read(3, 10).decode())'; exec 3<&-; echo \"l=$l\"",
    "printf 'a\\nb\\nc\\n' > in; { read x; python3 -c 'import sys; print(sys.stdin.readline().strip())'; "
    "read y; echo \"$x $y\"; } < in",
    "printf 'a\\nb\\nc\\n' > in; exec 4< in; read -u 4 x; head -1 <&4; read -u 4 y; echo \"$x $y\"",
    "exec > out.txt; echo one; python3 -c 'print(\"two\")'; ls nonexist 2>&1; exec >&2; cat out.txt 1>&2",
    "exec 2> err.txt; ls nonexist; python3 -c 'import sys; print(\"e\", file=sys.stderr)'; exec 2>&1; cat err.txt",
    "python3 -c 'import sys; print(sys.argv[1])' \"$(printf 'multi\\nline')\"",
    "while IFS= read -r -d '' f; do echo \"[$f]\"; done < <(printf 'x\\0y z\\0')",
    "mkdir d; touch d/'a b' d/c; find d -type f -print0 | sort -z | xargs -0 -n1 basename",
    # head leaves a shared seekable input just past what it printed (a pipe: all read)
    "printf 'a\\nb\\n' > in; { head -1; cat; } < in",
    "printf 'h\\nz\\na\\n' > f; (head -n 1; sort) < f",
    "printf 'a\\nb\\nc\\n' > in; { read x; head -1; cat; } < in",
    "seq 3 | { head -1; cat; }",
    # process substitution into native programs: /dev/fd/N is open in the child
    "/usr/bin/cat <(echo hi) <(echo there)",
    "/usr/bin/diff <(printf 'a\\nb\\n') <(printf 'a\\nc\\n'); echo rc=$?",
    "/usr/bin/paste <(seq 3) <(seq 4 6)",
    "python3 -c 'import sys; print(open(sys.argv[1]).read().strip())' <(echo viafd)",
    "while read l; do echo \"[$l]\"; done < <(python3 -c 'print(1); print(2)')",
    "echo data > >(python3 -c 'import sys; print(\"got\", sys.stdin.read().strip())'); sleep 0.5",
    # here-documents
    "cat <<EOF\nTab:\tx\nVar: ${HOME:+set}\nCmd: $(echo sub)\nEsc: \\$HOME \\`\nEOF",
    "f() { cat <<EOF\nin func $1\nEOF\n}; f arg",
    "x=$(cat <<'EOF'\n$not_expanded\nEOF\n); echo \"$x\"",
    # set -e corners
    "set -e; f() { (( 0 )); }; f; echo unreached",
    "set -e; [[ -f nonexist ]] && echo yes; echo continues",
    "set -eo pipefail; grep x <<< abc | wc -l; echo unreached",
    "set -e; trap 'echo \"exit $?\"' EXIT; cmd_fail() { return 3; }; cmd_fail",
    "set -e; out=$(false) || echo \"caught $?\"",
    # namerefs, declare -p
    "make_arr() { local -n out=$1; out=(x y z); }; make_arr myarr; echo \"${myarr[@]}\"",
    "declare -n ref=var1; var1=10; ref+=5; echo $var1",
    "v=abc; [[ $v =~ ^a(b)(c)$ ]]; declare -p BASH_REMATCH",
    "declare -A m=([x]=1 [y]=2 [zz]=3 [a]=4 [hello]=5); echo ${!m[@]}; declare -p m",
    "a=([1]=x [0]=y); a[3]+=z; declare -p a",
    "v=$'tab\\there'; declare -p v; printf '%q\\n' \"$v\"",
]


@pytest.fixture(scope="module", params=["virtual", "namespace"])
def sandbox(request, tmp_path_factory):
    yield from bashdiff.sandbox(request.param, tmp_path_factory)


@pytest.mark.parametrize("script", CASES)
def test_same_as_bash(sandbox, script: str, tmp_path) -> None:
    if ("python3" in script or "/usr/bin/" in script) and (
            sandbox.isolation_level == "virtual" or shutil.which("python3") is None):
        pytest.skip("a native program")
    want = bashdiff.bash(script, str(tmp_path), home=str(tmp_path))
    r = bashdiff.run(sandbox, script)
    assert (r.stdout, r.stderr, r.exit_code) == want, script


# -- the same cases (and the CHLD trap's) as an unprivileged user -----------------------------
import importlib.util  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import textwrap  # noqa: E402

_INTEGRATION = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "integration")
if _INTEGRATION not in sys.path:
    sys.path.insert(0, _INTEGRATION)
_spec = importlib.util.spec_from_file_location("_agb_hunt_integration_conftest",
                                               os.path.join(_INTEGRATION, "conftest.py"))
_conf = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
_spec.loader.exec_module(_conf)  # type: ignore[union-attr]
as_user = _conf.as_user

_USER_SCRIPT = textwrap.dedent("""
    import json, os, subprocess, sys, tempfile, warnings
    warnings.simplefilter("ignore")
    import agentic_bash as ab
    cases = json.loads(sys.argv[1])
    out = []
    with ab.Sandbox(isolation="namespace") as sb:
        base = sb.run("pwd").stdout.strip()
        for i, c in enumerate(cases):
            d = tempfile.mkdtemp()
            b = subprocess.run(["bash"], executable="/bin/bash", input=f"(\\n{c}\\n)",
                               capture_output=True, text=True, cwd=d, timeout=60,
                               env={"PATH": os.environ["PATH"], "LANG": "C.UTF-8", "HOME": d})
            sb.run(f"cd {base}; mkdir -p c{i} && cd c{i}")
            r = sb.run(f"(\\n{c}\\n)", timeout=60)
            out.append([[b.stdout, b.stderr, b.returncode], [r.stdout, r.stderr, r.exit_code]])
    print(json.dumps(out))
""")


def test_same_as_bash_unprivileged(as_user) -> None:
    from agentic_bash.isolation.plan import plan
    from agentic_bash.isolation.probe import probe
    if plan("namespace", probe()).level != "namespace":
        pytest.skip("no kernel sandbox here")
    sp = importlib.util.spec_from_file_location(
        "_agb_traps_time_cases", os.path.join(os.path.dirname(os.path.abspath(__file__)), "test_traps_time.py"))
    mod = importlib.util.module_from_spec(sp)  # type: ignore[arg-type]
    sp.loader.exec_module(mod)  # type: ignore[union-attr]
    CHLD_CASES = mod.CASES
    cases = [c for c in CASES + CHLD_CASES if "$HOME" not in c and "${HOME" not in c]
    fd, script = tempfile.mkstemp(suffix=".py", dir=as_user.env["TMPDIR"])
    with os.fdopen(fd, "w") as f:
        f.write(_USER_SCRIPT)
    os.chmod(script, 0o644)
    p = subprocess.run(as_user.prefix + [as_user.python, script, json.dumps(cases)],
                       capture_output=True, text=True, env=as_user.env, cwd="/", timeout=280)
    assert p.returncode == 0, p.stderr[-3000:]
    results = json.loads(p.stdout.strip().splitlines()[-1])
    bad = [(case, want, got) for case, (want, got) in zip(cases, results) if got != want]
    assert bad == []
