"""Session-12 differential hunt over peers' corpora and bash's own tests: each fixed class as `bash -c` against a reset sandbox, compared as bytes."""

from __future__ import annotations

import pytest

import bashdiff

pytestmark = pytest.mark.timeout(600)

ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": "/home/user",
       "USER": "user", "TERM": "dumb", "TZ": "UTC"}

# Fixed this session (each failed before the fix in at least one level)
FIXED = [
    # bash's printable_filename: a command name or cd argument with anything non-printable
    # is reported as $'...'; hash -l single-quotes shell metacharacters
    "a\rb; $'x\\ty'; $'\\377'; printf -v c '\\x01z'; $c; cd $'a\\rb'; cd $'x\\ty'/z; echo ok; é; 'a b'",
    "command -p $'n\\to' 2>&1; hash -p /bin/ls $'l\\ts'; hash -p '/bin/a b' 'x;y'; hash -p /bin/cat c; hash -l; hash -lt c 'x;y'",
    # set -v echoes the lines after the last command too (blank lines, comments)
    "set -v\necho b\n\n\n#x",
    "set -v\necho a\n\n# c\necho b\n\n",
    "eval $'set -v\\n\\necho c\\n\\n'; bash -c $'set -v\\ntrue\\n\\n'",
    # compgen -W: an expansion error in the list is reported and ends the command line;
    # -o dirnames/-o default when nothing else matched; -C runs the command (COMP_* exported)
    "compgen -W '${'; echo status=$?\ncompgen -W 'foo $(( 1 / 0 )) bar'; echo status=$?\n"
    "compgen -W 'a $((2+)) b' a; echo st=$?\ncompgen -W 'a $(echo hi; exit 3) b' ; echo st=$?\necho end",
    "compgen -W 'a ${x:?unset} b'; echo st=$?",
    "mkdir -p bx/c; touch f1; compgen -o dirnames b; compgen -o dirnames -W bz b; compgen -o default f; "
    "compgen -o bashdefault -W q b; echo $?; compgen -o dirnames -o plusdirs -W b1 b; compgen -d -o dirnames x; echo $?",
    "f() { declare -p COMP_LINE COMP_POINT COMP_WORDS COMP_CWORD COMP_TYPE COMP_KEY 2>&1; }\n"
    "compgen -C f b 2>/dev/null; echo ${COMP_LINE-unset}; f() { echo foo; echo \"a:$1:$2:$3\"; }\n"
    "compgen -C f b\necho compgen=$?\ncompgen -C 'echo x'\ncomplete -C f b\necho complete=$?",
    # a #! line is the interpreter and ONE optional argument, as the kernel reads it: options
    # for bash apply, env gets `-S ...` (or fails on `bash -e`), a missing interpreter (or a
    # `\r` after it) is bash's "required file not found"
    "printf '#!/bin/bash -e\\necho hi; false; echo no\\n' > s; chmod +x s; ./s; echo $?; "
    "printf '#!/bin/bash -x\\necho $0 \"$@\"\\n' > t; chmod +x t; ./t a b; mkdir bin; cp t bin/tt; PATH=$PWD/bin:$PATH tt q; "
    "printf '#! /bin/bash  -eu  \\necho $0; echo $x\\n' > w; chmod +x w; ./w; echo $?; "
    "printf '#!/usr/bin/env bash\\necho $0 $1\\n' > v; chmod +x v; ./v 1; cp v bin/vv; PATH=$PWD/bin:$PATH vv 2",
    "printf '#!/usr/bin/env -S bash -e\\necho hi; false; echo no\\n' > s; chmod +x s; ./s; echo $?; "
    "printf '#!/usr/bin/env -S -u FOO bash\\necho \"[$FOO]\"\\n' > t; chmod +x t; FOO=1 ./t; "
    "printf '#!/usr/bin/env bash -e\\necho x\\n' > u; chmod +x u; ./u; echo $?; "
    "printf '#!/usr/bin/env -S bash -euo pipefail\\necho $0; false | true; echo $?\\n' > y; chmod +x y; ./y; echo $?",
    "printf '#!/nonexist/py\\necho\\n' > a; chmod +x a; ./a; echo $?; printf '#!/bin/bash\\r\\necho cr\\n' > z; "
    "chmod +x z; ./z; echo $?; printf '#!/bin/cat -n\\nx\\n' > d; chmod +x d; ./d; printf '#!\\necho hi\\n' > f; "
    "chmod +x f; ./f; echo $?; printf '#!/usr/bin/awk -f\\nBEGIN{print 7}\\n' > g; chmod +x g; ./g",
    # bash's own options: each o/O in a cluster takes the next argument
    "bash -euo pipefail -c 'echo $-; set -o | grep pipefail'; bash -o pipefail -eu -c 'echo $-'; "
    "bash -xo pipefail -c 'echo 1'; bash -eO extglob -c 'shopt extglob; echo $-'; bash -eo nosuch -c 'echo 2'; echo $?",
    # env: -u (also -uNAME) removes a prefix assignment too; -S as GNU's build_argv, its
    # options parsed again (`-S'-u X cmd'`); a command name with a blank gets GNU's hint
    "FOO=BAR env -u FOO sh -c 'echo =$FOO='; FOO=BAR env -uFOO printenv FOO; echo $?; export FOO=X; "
    "env -u FOO bash -c 'echo =$FOO='; FOO=BAR env FOO=Q sh -c 'echo =$FOO='; "
    "f() { local FOO=L; export FOO; env -u FOO sh -c 'echo =$FOO='; FOO=M env FOO=N sh -c 'echo =$FOO='; echo $FOO; }; "
    "f; echo $FOO; A=1 env -i B=2 sh -c 'echo $A$B'",
    "env -S'-ufoo A=B FOO=AR sh -c \"echo \\$A\\$FOO\"'; env \"-S-C/ pwd\"; env -S'echo FOO #BAR'; "
    "env -S\"printf x%sx\\n A\\_B\"; env -S\"\\_printf x%sx\\n FOO\\_\"; env -S'printf x%sx\\n A \t B \v\f\r'; "
    "env -S\"printf x%sx\\n \\_ FOO\"; env -S'A=B \\c rest' env | grep -c rest; env -S'a \"b'; echo $?; "
    "env -S'\\q'; echo $?; env -S'x \\'; echo $?; env -S'printf \"%s|\" a \"\" \"${NOPE}\" c'; echo",
    "env '-v -S cat -n' 2>&1; echo $?; env 'cat -n' ./xxx 2>&1; echo $?",
    # stat's escapes (\\NNN, \\xHH as bytes, warnings), GNU's invalid directives, -c's
    # newline after the format's own text (a trailing `%`)
    "touch f; stat --printf='%n|%5n|%-5s|\\101\\x41\\xg\\q|%%|100%\\n' f; stat -c '%n %' f; stat -c '%5%' f; echo $?; "
    "stat --printf '\\0\\377\\x34\\xf' f | od -c | head -1; stat --printf='\\' f; stat --printf=%9 f; echo $?",
    # sum: getopt options and quoted names
    # od -w: a bad argument is GNU's error (was an internal error), a width that is not a
    # multiple of the types' sizes becomes their lcm with a warning
    "printf abcdefgh > f; od -w0 -An f; od -w-1 f; echo $?; od -ww f; echo $?; od -w3 -tx2 f; od -w6 -tx4 -tx2 f; od -w4 f",
    # factor: 128-bit numbers at once (Pollard rho; trial division ran past the deadline)
    "factor 0 1 2 4 97 1000000007 999999999999999989 18446744073709551615 121 1000000014000000049; "
    "factor 12847291069740315094892340035; factor 340282366920938463463374607431768211355; "
    "factor 1701071552237771378853409662551409288273703; seq 1 60 | factor | md5sum",
    # (bash's own tests) readonly -n: NAME=VALUE assigned without readonly, NAME untouched;
    # a readonly function's redefinition is reported at its last line; for with a bad name
    # is fatal in posix mode (select is not)
    "readonly -n X; declare -p X; X=2; declare -p X; readonly -n Y=1; Y=3; declare -p Y; readonly -fn f; echo $?; "
    "f(){ :; }; readonly -f f; readonly -nf f; f(){ echo 2; }; readonly -p | grep Y; readonly R=1; readonly -n R=2; echo $? $R",
    "f() { echo; }\nreadonly -f f\nf()\n{\n  echo bar\n}\necho $?; f() { :; }; function f { :; }",
    "(set -o posix; for invalid-name in a b; do echo $1; done; echo after posix for); echo st=$?; "
    "(set -o posix ; select f\\1 in a b c ; do echo $REPLY ; done ; echo after posix select 2); echo st=$?; "
    "for 1 in a; do :; done; echo $?\nset -o posix; for x-y in 1; do :; done; echo notreached",
    # a script file's top level has its "main" frame (BASH_LINENO=([0]="0")); bash -c has
    # none, whatever its $0
    "declare -p BASH_LINENO BASH_SOURCE FUNCNAME 2>&1; printf 'declare -p BASH_LINENO BASH_SOURCE FUNCNAME\\n"
    "f() { declare -p BASH_LINENO BASH_SOURCE FUNCNAME; }\\nf; (f)\\n' > s.sh; bash s.sh; . ./s.sh; "
    "bash -c 'declare -p BASH_LINENO BASH_SOURCE; f() { declare -p BASH_LINENO FUNCNAME; }; f' foo",
    "printf abc > f; sum -- '{a b:' f; sum -s f; sum -rs f; sum -sr f; sum -x; echo $?; sum --sysv f; echo abc | sum",
]

CASES = FIXED + [
]


@pytest.fixture(scope="module", params=["virtual", "namespace"])
def sandbox(request, tmp_path_factory):
    yield from bashdiff.sandbox(request.param, tmp_path_factory)


def same(sb, script: str, tmp_path) -> None:
    """``script`` as `bash -c` by the confined reference and by the reset sandbox, as bytes
    (the reference's cwd written as the sandbox's /workspace)."""
    out, err, st = bashdiff.bash_c(script, str(tmp_path), env=ENV, raw=True)
    cwd = str(tmp_path).encode()
    want = (out.replace(cwd, b"/workspace"), err.replace(cwd, b"/workspace"), st)
    sb.reset()
    r = sb.run(script, timeout=60)
    assert (r.stdout_bytes, r.stderr_bytes, r.exit_code) == want, script


@pytest.mark.parametrize("script", CASES)
def test_same_as_bash(sandbox, script: str, tmp_path) -> None:
    same(sandbox, script, tmp_path)
