"""Differential tests: our file coreutils vs GNU, as direct calls and as sandbox scripts."""

from __future__ import annotations

import pytest

from harness_files import (  # noqa: E402
    ROOT_INFO, ENV, Out, make_fs, real, real_script, snapshot_fs, snapshot_real,
)

FILES = {
    "a.txt": "apple\nbanana\n",
    "b.txt": "x" * 5000,
    "empty": "",
    "d/one": "1\n",
    "d/two": "22\n",
    "d/sub/deep.txt": "deep\n",
    "e": None,
    ".hidden": "h\n",
    "run.sh": "#!/bin/sh\necho hi\n",
    "data.json": '{"a": [1, 2]}\n',
}

# (script, xfail-reason or None). Each runs in a fresh dir holding FILES, under our
# Sandbox and under the real bash + coreutils; stdout, stderr and status must match.
SCRIPTS: list[str] = [
    # mkdir / rmdir
    "mkdir new && ls",
    "mkdir a.txt; echo $?",
    "mkdir x/y; echo $?",
    "mkdir -p x/y/z && ls -R x",
    "mkdir -pv p/q/r",
    "mkdir -v m1 m2",
    "mkdir -p a.txt/b; echo $?",
    "mkdir -m 700 priv && stat -c '%a %n' priv",
    "mkdir; echo $?",
    "mkdir -p d d/sub; echo $?",
    "rmdir e && ls",
    "rmdir d; echo $?",
    "rmdir nope; echo $?",
    "rmdir a.txt; echo $?",
    "mkdir -p r/s/t && rmdir -p r/s/t && ls",
    "rmdir -v e",
    # touch
    "touch new && ls -A",
    "touch nope/x; echo $?",
    "touch -c ghost; echo $?; ls",
    "touch -d '2020-01-02 03:04:05' a.txt && stat -c '%y %n' a.txt",
    "touch -t 202001020304.05 a.txt && stat -c '%Y' a.txt",
    "touch -d @86400 a.txt && stat -c %Y a.txt",
    "touch -r a.txt empty; touch -d 2001-01-01 a.txt; touch -r a.txt b.txt && stat -c %Y b.txt",
    "touch -d garbage a.txt; echo $?",
    # rm
    "rm a.txt && ls",
    "rm nope; echo $?",
    "rm -f nope; echo $?",
    "rm d; echo $?",
    "rm -r d && ls",
    "rm -rf d e nope; echo $?; ls",
    "rm -v a.txt empty",
    "rm -rv d",
    "rm -d e && ls",
    "rm -d d; echo $?",
    "rm; echo $?",
    "rm -f; echo $?",
    "rm -r .; echo $?",
    "rm -rf /; echo $?",
    "rm -r ./..; echo $?",
    "rm a.txt/; echo $?",
    "rm -i a.txt <<< y; ls",
    "rm -i a.txt <<< n; ls",
    # cp
    "cp a.txt c.txt && cat c.txt",
    "cp a.txt e && ls e",
    "cp a.txt b.txt e && ls e",
    "cp nope x; echo $?",
    "cp d x; echo $?",
    "cp -r d x && ls -R x",
    "cp -r d e && ls -R e",
    "cp -rv d x | sort",  # GNU cp walks in readdir (hash) order
    "cp -v a.txt c.txt",
    "cp a.txt a.txt; echo $?",
    "cp a.txt; echo $?",
    "cp; echo $?",
    "cp a.txt b.txt c.txt; echo $?",
    "cp a.txt nope/; echo $?",
    "cp -n a.txt b.txt; head -c 3 b.txt",
    "cp -T d x && ls x",
    "cp -t e a.txt b.txt && ls e",
    "cp -p run.sh r2 && stat -c '%a' r2",
    "chmod 750 run.sh && cp run.sh r2 && stat -c '%a' r2",
    "cp -r d d/sub; echo $?",
    "ln -s a.txt s && cp s c && stat -c '%F' c",
    "ln -s a.txt s && cp -a s c && stat -c '%F' c",
    "cp -r e a.txt; echo $?",
    # mv
    "mv a.txt z.txt && ls",
    "mv a.txt e && ls e",
    "mv -v a.txt b.txt",
    "mv nope x; echo $?",
    "mv d e && ls -R e",
    "mv d d/sub; echo $?",
    "mv a.txt a.txt; echo $?",
    "mv -n a.txt b.txt; cat a.txt",
    "mv a.txt b.txt e/; ls e",
    "mv a.txt b.txt empty; echo $?",
    "mv e a.txt; echo $?",
    "mv; echo $?",
    # ln / readlink / realpath
    "ln -s a.txt s && cat s && readlink s",
    "ln -s a.txt s; ln -s a.txt s; echo $?",
    "ln -sf b.txt s && ln -sf a.txt s && readlink s",
    "ln a.txt h && stat -c '%h' a.txt",
    "ln -sv a.txt s2",
    "ln -v a.txt h2",
    "ln d h; echo $?",
    "ln nope h; echo $?",
    "ln -s /nonexistent dangling && readlink dangling && cat dangling; echo $?",
    "ln -s a.txt e && ls e",
    "ln -s ../a.txt d/up && cat d/up",
    "ln -sr a.txt d/rel && readlink d/rel",
    "ln -s d dl && ln -sfn e dl && readlink dl",
    "readlink a.txt; echo $?",
    "readlink -f d/../a.txt",
    "readlink -f nope/x; echo $?",
    "readlink -m nope/x/../y",
    "readlink -e nope; echo $?",
    "ln -s d dl; readlink -f dl/one",
    "realpath a.txt d/sub",
    "realpath nope/x; echo $?",
    "realpath -m nope/x",
    "realpath -e nope; echo $?",
    "realpath --relative-to=d/sub a.txt",
    "ln -s d dl; realpath -s dl/one; realpath dl/one",
    # chmod
    "chmod 755 a.txt && stat -c '%a %A' a.txt",
    "chmod u+x,g-r a.txt && stat -c %a a.txt",
    "chmod +x a.txt && stat -c %a a.txt",
    "chmod -w a.txt && stat -c %a a.txt",
    "chmod a=r,u+w a.txt && stat -c %a a.txt",
    "chmod g=u a.txt && stat -c %a a.txt",
    "chmod -v 600 a.txt",
    "chmod -c 644 a.txt; chmod -c 640 a.txt",
    "chmod 999 a.txt; echo $?",
    "chmod xyz a.txt; echo $?",
    "chmod 644 nope; echo $?",
    "chmod -R 700 d && stat -c '%a %n' d d/one d/sub",
    "chmod u+s,o+t run.sh && stat -c '%a %A' run.sh",
    "chmod; echo $?",
    "chmod 644; echo $?",
    # truncate / basics
    "truncate -s 3 a.txt && cat a.txt; echo",
    "truncate -s 10 new && stat -c %s new",
    "truncate -s +5 a.txt && stat -c %s a.txt",
    "truncate -c -s 5 ghost; ls ghost; echo $?",
    "truncate a.txt; echo $?",
    "pwd",
    "cd d && pwd && pwd -P",
    "mkdir real && ln -s real lnk && cd lnk && pwd && pwd -L && pwd -P && /bin/pwd",
    # mktemp
    "f=$(mktemp) && test -f \"$f\" && echo ok && case $f in /tmp/tmp.??????????) echo shape;; esac; rm -f \"$f\"",
    "d=$(mktemp -d) && test -d \"$d\" && echo ok; rmdir \"$d\"",
    "f=$(mktemp fooXXXX) && test -f \"$f\" && echo ${#f}",
    "mktemp fooXX; echo $?",
    "f=$(mktemp -p e barXXXXXX.txt) && case $f in e/bar??????.txt) echo ok;; esac",
    "f=$(mktemp -t zzXXXXXX) && case $f in /tmp/zz??????) echo ok;; esac; rm -f \"$f\"",
    # stat
    "stat -c '%n %s %F %a' a.txt d empty",
    "ln -s a.txt s; stat -c '%N|%F' s; stat -L -c '%F' s",
    "stat nope; echo $?",
    "stat -c '%U:%G' a.txt >/dev/null; echo $?",
    "stat --printf '%s\\n' a.txt b.txt",
    # file
    "file empty d a.txt run.sh",
    "file -b a.txt",
    "ln -s a.txt s && file s",
    # du / df
    "du d",
    "du -s d e",
    "du -a d/sub",
    "du -sh d b.txt",
    "du -c d/sub b.txt",
    "du -s --max-depth=0 d; du -d 0 d",
    "du nope; echo $?",
    "du -sb a.txt",
    "df > /dev/null; echo $?",
    # trailing slashes (found by random differential runs)
    "touch g/; echo $?; ls",
    "rm -f a.txt/; echo $?; ls a.txt",
    "cp a.txt/ x; cp nope/ x; echo $?",
    "mv a.txt/ y; mv nope/ y; echo $?",
    "ln -s a.txt l/; echo $?",
    "ln -s loop loop; mv loop/x y; cp loop/x y",
    "cp -r d/ d2 && ls d2",
    # install
    "install -d x/y && ls -R x",
    "install -m 644 a.txt e/ && stat -c '%a' e/a.txt",
    "install -D a.txt deep/er/c.txt && cat deep/er/c.txt",
]

UNSTABLE_STDERR: set[str] = set()


def _run_ours(script: str):
    from agentic_bash import Sandbox

    sb = Sandbox(isolation="virtual")
    try:
        for name, data in FILES.items():
            if data is None:
                sb.run(f"mkdir -p '{name}'")
            else:
                sb.write_file(name, data)
        r = sb.run(script)
        return r
    finally:
        sb.close()


def _files_real(root: str) -> None:
    import os
    for name, data in FILES.items():
        p = os.path.join(root, name)
        if data is None:
            os.makedirs(p, exist_ok=True)
            continue
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w") as f:
            f.write(data)


@pytest.mark.parametrize("script", SCRIPTS)
def test_file_scripts(script: str, tmp_path) -> None:
    import subprocess

    root = tmp_path / "w"
    root.mkdir()
    _files_real(str(root))
    env = dict(ENV)
    env["HOME"] = str(root)
    env["TMPDIR"] = "/tmp"
    p = subprocess.run(["/usr/bin/bash", "-c", script], capture_output=True, cwd=str(root), env=env,
                       timeout=20)
    r = _run_ours(script)
    ours_err = r.stderr_bytes
    real_err = p.stderr.replace(b"/usr/bin/bash: line 1: ", b"bash: line 1: ")
    # the only normalisation: the real run's scratch directory stands for /workspace
    real_out = p.stdout.replace(str(root).encode(), b"/workspace")
    real_err = real_err.replace(str(root).encode(), b"/workspace")
    assert r.stdout_bytes == real_out, f"stdout:\nours={r.stdout_bytes!r}\nreal={real_out!r}\nerr ours={ours_err!r} real={real_err!r}"
    assert ours_err == real_err, f"stderr:\nours={ours_err!r}\nreal={real_err!r}"
    assert r.exit_code == p.returncode


# ls -l and friends: direct calls on a root-owned MemoryFS with fixed timestamps, against the
# real ls on the same tree (this test process runs as root on CI; skip otherwise).
LS_FILES = {
    "a.txt": "apple\n",
    "big.bin": "x" * 5000,
    "zero": "",
    "dir/inner": "i\n",
    "dir/sub/deep": "d\n",
    "Upper": "u\n",
    ".dot": "h\n",
    "10.txt": "t\n",
    "9.txt": "n\n",
}
LS_CASES = [
    ["ls"], ["ls", "-a"], ["ls", "-A"], ["ls", "-1"], ["ls", "-l"], ["ls", "-lA"], ["ls", "-lh"],
    ["ls", "-R"], ["ls", "-lR"], ["ls", "-d", "dir"], ["ls", "-ld", "dir", "a.txt"],
    ["ls", "dir", "a.txt"], ["ls", "-S"], ["ls", "-lS"], ["ls", "-r"], ["ls", "-F"], ["ls", "-p"],
    ["ls", "nope"], ["ls", "a.txt", "nope"], ["ls", "-z"], ["ls", "--color=never", "dir"],
    ["ls", "-m"], ["ls", "-C"], ["ls", "-x"], ["ls", "-lrt"], ["ls", "-v"], ["ls", "-1F", "dir"],
    ["ls", "-n"], ["ls", "-g", "dir"], ["ls", "-o", "dir"], ["ls", "-s"], ["ls", "-ls", "dir"],
    ["ls", "-lG", "dir"], ["ls", "--full-time", "a.txt"], ["ls", "-l", "--time-style=long-iso", "a.txt"],
    ["ls", "a.txt/"], ["ls", "dir/"], ["ls", "-Rl", "dir"], ["ls", "-X"],
    ["ls", "-l", "a.txt", "dir"], ["ls", "-g", "zero", "dir"], ["ls", "-sh"], ["ls", "-s", "-S", "dir"],
    ["ls", "-aX", "dir"], ["ls", "-shF", "nope", "dir"], ["ls", "--sort=size", "-r"], ["ls", "--format=commas"],
]


def _ours_direct(argv: list[str]) -> Out:
    import io

    from agentic_bash.commands import load_all
    from agentic_bash.commands.base import CommandContext
    from agentic_bash.limits import Budget, Limits

    reg = load_all()
    fs = make_fs(LS_FILES, root=True, fixed_time=True)
    for d in ("/workspace/dir", "/workspace/dir/sub"):
        fs.utime(d, (1704164645.0, 1704164645.0))
    fs.chmod("/workspace/dir", 0o755)
    fs.chmod("/workspace/dir/sub", 0o755)
    out, err = io.BytesIO(), io.BytesIO()
    ctx = CommandContext(fs=fs, cwd="/workspace", env=dict(ENV), stdin=io.BytesIO(), stdout=out,
                         stderr=err, budget=Budget(Limits()), info=ROOT_INFO, name=argv[0])
    st = reg[argv[0]].fn(ctx, list(argv))
    return Out(out.getvalue(), err.getvalue(), st)


def _real_ls(argv: list[str]) -> Out:
    import os
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory() as root:
        for name, data in LS_FILES.items():
            p = os.path.join(root, name)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "w") as f:
                f.write(data)
        for dp, dns, fns in os.walk(root):
            for n in dns + fns:
                os.utime(os.path.join(dp, n), (1704164645.0, 1704164645.0))
        os.utime(root, (1704164645.0, 1704164645.0))
        p = subprocess.run(argv, capture_output=True, cwd=root, env=dict(ENV), timeout=20)
        return Out(p.stdout, p.stderr, p.returncode)


@pytest.mark.skipif(__import__("os").geteuid() != 0, reason="ls -l owner names need root (files owned by root)")
@pytest.mark.parametrize("argv", LS_CASES, ids=[" ".join(a) for a in LS_CASES])
def test_ls_direct(argv: list[str]) -> None:
    a, b = _ours_direct(argv), _real_ls(argv)
    assert a.stdout == b.stdout, f"ours={a.stdout!r}\nreal={b.stdout!r}"
    assert a.stderr == b.stderr
    assert a.status == b.status


_ = (real, real_script, snapshot_fs, snapshot_real)


TREE_SETUP = ("mkdir -p src/sub docs .git && touch src/a.py src/B.py src/sub/x src/10.txt src/9.txt "
              "docs/readme .hidden run.sh && chmod +x run.sh && ln -s src lnk && ")
TREE_CASES = ["tree", "tree -a", "tree -L 1", "tree -d", "tree -F", "tree src docs", "tree nope; echo $?",
              "tree -f src", "tree --noreport -I 'sub|*.py' src", "tree -P '*.py' src", "tree -s src",
              "tree --dirsfirst", "tree -i src", "tree -a -L 1 -F"]


@pytest.mark.skipif(__import__("shutil").which("tree") is None, reason="the real tree program is not installed (apt-get install tree)")
@pytest.mark.parametrize("script", TREE_CASES)
def test_tree_against_real(script: str, tmp_path) -> None:
    import subprocess

    from agentic_bash import Sandbox

    sb = Sandbox(isolation="virtual")
    try:
        r = sb.run(TREE_SETUP + script)
    finally:
        sb.close()
    p = subprocess.run(["/usr/bin/bash", "-c", TREE_SETUP + script], capture_output=True, cwd=str(tmp_path),
                       env=dict(ENV), timeout=20)
    assert r.stdout_bytes == p.stdout
    assert r.exit_code == p.returncode
