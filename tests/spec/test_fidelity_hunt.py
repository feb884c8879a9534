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
def test_same_as_bash_unprivileged(as_user) -> None:
    import importlib.util
    import os

    sp = importlib.util.spec_from_file_location(
        "_agb_traps_time_cases", os.path.join(os.path.dirname(os.path.abspath(__file__)), "test_traps_time.py"))
    mod = importlib.util.module_from_spec(sp)  # type: ignore[arg-type]
    sp.loader.exec_module(mod)  # type: ignore[union-attr]
    CHLD_CASES = mod.CASES
    cases = [c for c in CASES + CHLD_CASES if "$HOME" not in c and "${HOME" not in c]
    bad = [r for r in bashdiff.as_user_results(as_user, cases, home=True) if r[1] != r[2]]
    assert bad == []
