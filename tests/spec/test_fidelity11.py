"""Session-11 differential hunt: pipeline stages start (and trace) first to last, hexdump's formats, basenc's base16 decoding, and the areas agents' scripts use give what /bin/bash gives."""

from __future__ import annotations

import pytest

import bashdiff

pytestmark = pytest.mark.timeout(600)

# Fixed this session (each failed before the fix in at least one level)
FIXED = [
    # hexdump -x: util-linux's "   %04x " cells; several formats print a line each, in order
    'echo abcd | hexdump -x; printf "abc" | hexdump -x; printf "abcdefghijklmnopqrstuvwxyz0123456789" | hexdump -x',
    'printf abcdefgh | hd -x; printf abcdefgh | hexdump -b -c -d; head -c 48 /dev/zero | hexdump -x -C; printf abc > f; hexdump -s 1 f; hexdump -s 1 < f; hexdump -s 5 f; echo $?; hexdump -C -s 1 -n 1 f; printf abc | hexdump -s 0; echo $?; printf "" | hexdump -x; echo $?',
    'printf "abcdefgh" | hexdump -x -C; printf "abcdefgh" | hexdump -C -x; printf "abc" | hexdump -x -n 2; printf "abcdef" | hexdump -x -s 1; echo $?',
    # basenc --base16 -d: upper case only (coreutils 9.1), -i drops lower case, the pairs
    # before a bad byte are written
    'for x in 616 6a6B 6A6b "61 62" "61g62" "6162\\n63\\n" "61\\n6" "4142ab43"; do printf "%s" "[$x] "; printf "$x" | basenc --base16 -d | od -c | head -1; printf "$x" | basenc --base16 -d -i | od -c | head -1; done 2>&1',
    'echo 6162 | basenc --base16 -di; echo "61:62" | basenc --base16 -d -i; echo $?; echo "6a6B" | basenc --base16 -d; echo $?; echo "6A6B" | basenc --base16 -d; echo $?; printf abc | basenc --base16 -i; echo $?',
    # ~user from the sandbox's /etc/passwd; ~N, ~+N, ~-N name the directory stack
    'echo ~nobody ~nobody/y ~nosuchuser ~nobody: a=~nobody:~root; echo $a',
    'cd /tmp; echo ~+0 ~0 ~-0 ~1 ~+1; pushd /tmp >/dev/null; pushd / >/dev/null; echo ~1 ~+1 ~-1 ~0 ~3 ~-3; popd >/dev/null; echo ~1',
    # glibc's regex: a '-' starting an element that is not last is "Invalid range end"; after a
    # dropped `*`, ")" is ordinary (grep -E '(*)b': "Unmatched ( or \(")
    'for p in "[1-3-5]" "[a-c-e]" "[ab-]" "[-ab]" "[a-]" "[!--]" "[--z]" "[[:alpha:]-z]" "[a-c-]" "[^-a]" "[^a-c-e]"; do echo "a-c" | grep -- "$p"; echo "[$p] $?"; done 2>&1',
    'for p in "(*)b" "(+)" "a|*b" "(?)" "(**)" "(*a)" "*a" "a(*)" "(|*)b" "()" "(a|)"; do printf "%s\\n" "(b" "b" ")b" "ab" "*a" | grep -E -- "$p"; echo "[$p] $?"; done 2>&1',
    # sed -E: a repeat with nothing before it is an error; sed BRE: `**` and `*\{` are
    'for p in "*a" "a|*b" "(*)" "(+a)" "?a" "a**" "a+*" "(a|+)" "{1}a" "a{1}{2}" "^*a" "a(|b)" "()" "a\\b*"; do echo "*ab" | sed -E "s/$p/X/"; echo "[$p] $?"; done 2>&1',
    'for p in "*a" "\\(*a\\)" "a\\|*b" "^*a" "\\{1\\}a" "a**" "a*\\{2\\}" "a\\{1\\}*" "a\\+*" "a*\\+" "\\(^*\\)"; do echo "*ab" | sed "s/$p/X/"; echo "[$p] $?"; done 2>&1',
    # sed: /re/p without -n prints the line twice (a fast path printed it once)
    'printf "ha\\nx\\n" | sed "/h/p"; printf "ha\\n" | sed -e "#r" -e "/h/p"; printf "a\\nb\\n" | sed "/a/d;/b/p"; printf "a\\nb\\n" | sed -n "/a/p"',
    # sed: a script that starts with "#n" is -n; labels end at a blank, ";" or "}"
    'for s in "#n;p" "#n p" "#nx" "#np" "#N" " #n" "#n"; do printf "[%s] " "$s"; echo ha | sed "$s" | tr "\\n" " "; echo; done; echo ha | sed -e "#nr" -e p; printf "#nx\\np\\n" > f.sed; echo ha | sed -f f.sed',
    'echo x | sed ":a b"; echo x | sed "b end ; s/x/y/; :end"; echo x | sed -n "/x/{p;b}"; echo x | sed -n "/x/{b end};p;:end"; echo x | sed ":my label\\ns/x/y/"; echo x | sed "t x y"; echo x | sed "b}"; echo x | sed -n "/x/{:a}"; echo rc=$?',
    'printf "a\\\\\\nb\\nc\\n" | sed ": testcont; /\\\\\\\\$/{ =; N; b testcont }"',
    # sed: a backslash ending an -e piece escapes nothing (s and y unterminated); y's \A is A
    'echo abcabc | sed -e "s/ab/&\\\\" -e "/g"; echo rc=$?; echo abcabc | sed "s/ab/&\\\\\\n/g"; printf "aNc\\n" | sed -e "y/N/\\\\" -e "/"; echo rc=$?; echo "A/B,D" | sed "y/\\\\A\\\\B\\\\D/xyz/"; printf "a-a" | sed -e "a\\\\" -e "text"',
    # sed: a skipped numeric first address starts its range late unless its end is behind
    'seq 6 | sed -n "1{N;N};2,3p" | tr "\\n" " "; echo; seq 6 | sed -n "1{N;N};2,2p"; seq 6 | sed -n "2d;2,3p"; seq 6 | sed "2d;2,1p" | tr "\\n" " "; seq 4 | sed -n "1{N;N;d};1p;2,3p;3p;4p"; seq 6 | sed -n "1{N;N};2,+1p" | tr "\\n" " "; seq 6 | sed "2d;2,/5/p" | tr "\\n" " "',
    # sed w/W/s///w: a last line without its newline is written without it
    'printf "a\\nb" | sed "w o1" >/dev/null; od -c o1; printf "a\\nb" | sed "W o2" >/dev/null; od -c o2; printf "a\\nb" | sed "s/b/c/w o3" >/dev/null; od -c o3; printf "a\\nb" | sed "N;W o4" > /dev/null; od -c o4; printf thingy > input; printf again | sed -e "s/i/z/" -e "woutputw" input -; echo -n X; cat outputw',
]

CASES = FIXED + [
]

# awk is mawk on this machine (the namespace level runs it; the virtual level is ours)
FIXED_AWK = [
    # an undefined function is reported once per call (a print's call was compiled twice)
    'awk "BEGIN{f(); f()}"; echo x | awk "{print f(1)}"; echo x | awk "{print gensub(/a/, \\"b\\", \\"g\\")}"; echo x | awk "{ print f(1), f(2) }"',
    # fields that an assignment past NF adds are empty strings ($2 == 0 is false in mawk)
    'echo "" | awk "{ \\$2 = length(\\$2); print (\\$1 != \\$2), (\\$1 == \\$2), NF }"; echo "" | awk "{ \\$3 = 0; print (\\$1 != \\$3), (\\$2 == 0), (\\$2 == \\"\\") }"; echo a | awk "{NF=3; print (\\$2 == 0), (\\$3 == \\"\\"), NF}"; echo "1 2" | awk "{ \\$4 = 7; print; print (\\$3 == 0), \\$3 + 1 }"',
    # mawk's brackets: a backslash escapes anything, a backwards range is its ends and "-",
    # a "-" after a range is literal; `a()b`/`a(*)b` compile, `()a` does not
    'echo "x[y]z" | awk "/[^\\[\\]]/ {print \\"m1\\"} /[\\[\\]]/ {print \\"m3\\"}"; echo "[" | awk "/^[\\[\\]]/ {print \\"m4\\"}"; echo "xSuper-User" | awk "{gsub(\\"[r-U]\\", \\"(&)\\"); print}"; echo "abc-" | awk "{gsub(/[a-c-e]/, \\"X\\"); print}"; echo b | awk "/[c-a]/ {print \\"m\\"}"',
    'for r in "()" "a()" "()a" "a()b" "(|a)" "(a|)" "(()a)" "x(())" "a(|)b" "a(*)b" "(+a)"; do printf "%-8s " "$r"; echo "ab" | awk "/$r/ {print \\"m\\"} END {print \\"e\\"}" 2>&1 | tr "\\n" " "; echo; done',
    # syntax errors in a -f program name its file and its own line
    'printf "BEGIN { x = 1 @ 2 }\\n" > u.awk; printf "BEGIN {\\n print 1\\n" > m.awk; printf "BEGIN { f() }\\n" > f.awk; printf "BEGIN { print 1 }\\n" > ok.awk; awk -f m.awk; awk -f ok.awk -f m.awk; awk -f ok.awk -f f.awk; awk -f ok.awk -f u.awk; printf "{ x = 1 +* 2 }\\n" > p.awk; awk -f p.awk; echo rc=$?',
    # mawk parses `$NF++` as `$(NF++)` (`$i++` increments the field)
    'echo "1 5 9" | awk "{ print \\$NF++; print \\$NF; print NF }"; echo "3 4" | awk "{ i=1; print \\$i++; print i; \\$2++; print }"',
]
CASES += FIXED_AWK

FIXED_CMDS = [
    # tree 2.1.0 counts a directory it was given only when it lists something
    'mkdir e; tree e | tail -1; tree . | tail -1; tree | tail -1; mkdir -p x/y; touch x/y/z; tree x | tail -1; cd e; tree | tail -1; cd ..; tree -d x | tail -1; tree x e | tail -1; touch e/f; tree e | tail -1',
    # numfmt: the input's own fraction digits, rounding at a format's precision (from zero),
    # "%0Nf" zero-pads the number, "%'f"; errors after the numbers before them
    'for f in "%08.2f" "%.2f" "%-8.1f|" "%8f" "%f" "%\'f" "%.0f" "%08f" "%+.1f" "x%.3fy" "%10.2f"; do printf "[%s] " "$f"; numfmt --format="$f" -- 3.14159 3.141 -2.5 1234567.891 2>&1 | tr "\\n" " "; echo; done',
    'numfmt 3.14159 1.5 2 -- -2.50 1e3 2>&1; numfmt --to=si 3.14159 1500.5 9.96 999.5 999999; numfmt --format="%08.2f" --to=si 1234567; numfmt --to=si --format=%.2f 5.678; numfmt --format="%.1f" --round=nearest 3.14159 3.15 3.25; numfmt --format="%.1f" --round=down -- 3.19 -3.19',
    'numfmt --padding=-6 --format="%4.1f" 2; numfmt --format="%010.3f" --to=iec 2048; numfmt --from=si 1.5K 2.25M; numfmt --from=iec --to=si 1Ki; numfmt 1.000; numfmt --to=iec-i 1048576 1536',
    # file: a GIF's size, as far as the data goes (libmagic)
    'printf "GIF89a\\x10" > g1; file g1; printf "GIF89a\\x10\\x00\\x20" > g2; file g2; printf "GIF89a\\x10\\x00\\x20\\x00" > g3; file g3; printf "GIF87a\\x01\\x01\\x02\\x02\\x00" > g4; file g4; file -i g4; file -b g3',
    # df --output=FIELDS (the sizes themselves are the sandbox's: only what does not depend on them)
    'df --output=target / ; df --output=size -h / | head -1; df --output=source,fstype,itotal / | head -1; df --output=bogus / ; echo $?; df -i --output=target / 2>&1; echo $?; df --output=target,target / 2>&1; echo $?; df --output=file,target . nosuch 2>&1 | head -2',
]
CASES += FIXED_CMDS


@pytest.fixture(scope="module", params=["virtual", "namespace"])
def sandbox(request, tmp_path_factory):
    yield from bashdiff.sandbox(request.param, tmp_path_factory)


@pytest.mark.parametrize("script", CASES)
def test_same_as_bash(sandbox, script: str, tmp_path) -> None:
    want = bashdiff.bash(script, str(tmp_path), home=str(tmp_path))
    r = bashdiff.run(sandbox, script)
    assert (r.stdout, r.stderr, r.exit_code) == want, script


# Bash forks a pipeline's stages left to right and each traces itself as it starts, so the
# order of `set -x` lines (and of what stages write to stderr first) races in bash; left to
# right is what it prints nearly always (24-30 of 30 runs at load 6). The virtual level's
# stages (greenlets on one thread) must print that order every time, and bash at least once
# in ten runs (the namespace level's programs race as bash's do).
ORDERED = [
    ('set -x; echo a | cat', '+ echo a\n+ cat\n'),
    ('set -x; echo a | tr a b | cat; x=1', '+ echo a\n+ tr a b\n+ cat\n+ x=1\n'),
    ('set -x; printf "%s\\n" b a | sort | head -1', "+ printf '%s\\n' b a\n+ sort\n+ head -1\n"),
    ('set -x; { echo a; echo b; } | wc -l', '+ echo a\n+ echo b\n+ wc -l\n'),
    ('set -x; echo a | while read l; do :; done', '+ echo a\n+ read l\n+ :\n+ read l\n'),
    ('echo 1 >&2 | echo 2 >&2 | echo 3 >&2', '1\n2\n3\n'),
    ('{ echo a >&2; echo x; } | { echo b >&2; cat >/dev/null; }', 'a\nb\n'),
]


@pytest.mark.parametrize("script,err", ORDERED)
def test_stages_start_in_order(sandbox, script: str, err: str, tmp_path) -> None:
    if sandbox.isolation_level != "virtual":
        pytest.skip("the namespace level's stages run as processes and threads: they race")
    for _ in range(3):
        r = bashdiff.run(sandbox, script)
        assert r.stderr == err, script
    # (our order is asserted above; here only that bash prints it too. Its stages race:
    # in a CI run under load bash never printed it in 10 tries, so not seeing it in 30 is
    # a skip, not a failure of ours)
    seen = []
    for _ in range(30):
        got = bashdiff.bash(script, str(tmp_path), home=str(tmp_path))[1]
        if got == err:
            break
        seen.append(got)
    else:
        pytest.skip(f"bash did not print {err!r} in 30 tries here: {sorted(set(seen))!r}")
