"""Session-9 differential hunt: read -n/-N on multibyte text, read -a/mapfile on an associative array, unset 'a[@]', kill's usage, a killed coprocess, and agent-style cases across printf, expansions, arithmetic, globs, read, scoping, traps and coreutils give what /bin/bash gives."""

from __future__ import annotations

import shlex

import pytest

import bashdiff


def _c(script: str) -> str:
    """``script`` as ``bash -c`` runs it (errors in functions read "environment:", and what
    ends bash -c differs from a script on stdin), nested in the case."""
    return f"bash -c {shlex.quote(script)}; echo rc=$?"


pytestmark = pytest.mark.timeout(600)

# Fixed this session (each failed before the fix, in both levels)
FIXED = [
    # read -n/-N count characters, an invalid sequence takes the byte that ends it
    'read -n 2 x <<< \'éàü\'; echo "[$x]"; read -N 1 x <<< \'éa\'; echo "[$x]"; read -n 3 x <<< \'€é\'; echo "[$x]"; read -n 2 x <<< \'a\\éb\'; echo "[$x]"',
    'read -n 2 x <<< $\'\\xc3xyz\'; echo "[$x]" | od -c; read -n 1 x <<< $\'\\xe2\\x82\'; echo "[$x]" | od -c; LC_ALL=C; read -n 2 x <<< \'éàü\'; echo "[$x]" | od -c',
    'printf \'äöü\\n\' | { read -n 1 a; read -N 1 b; read c; echo "$a|$b|$c"; }',
    # read -a and mapfile refuse an associative array; mapfile looks before it reads
    "declare -A h; { read -a h; cat; } <<< $'x\\ny'; echo rc=$?; declare -p h",
    "declare -A h; { mapfile h; cat; } <<< $'x\\ny'; echo rc=$?; declare -p h; declare -A g; readarray -t g <<< z; echo rc=$?",
    "readonly h; { read -a h; cat; } <<< $'x\\ny'; echo rc=$?; { mapfile h; cat; } <<< $'p\\nq'; echo rc=$?",
    # unset 'a[@]' empties an indexed array and keeps it; an associative array's @ and * are keys
    "a=(1 2 3); unset 'a[@]'; declare -p a; b=(1 2); unset 'b[*]'; b+=(z); declare -p b; declare -a e; unset 'e[@]'; declare -p e",
    "declare -A h=([a]=1 [b]=2); unset 'h[@]'; declare -p h; declare -A g=([x]=1 ['@']=2 ['*']=3); unset 'g[@]' 'g[*]'; declare -p g",
    "f() { local -a la=(1 2); unset 'la[@]'; declare -p la; }; f; declare -n r=arr; arr=(1 2); unset 'r[@]'; declare -p arr; readonly -a ro=(1); unset 'ro[@]'; echo rc=$?",
    # kill with a signal and no pid is a usage error (2)
    'kill -9; echo rc=$?; kill -s TERM; echo rc=$?; kill -n 9; echo rc=$?; kill -9 --; echo rc=$?; kill -BAD; echo rc=$?',
    # a killed coprocess blocked reading its input ends (the in-process one waited for ever)
    'coproc cat; echo hello >&${COPROC[1]}; read -u ${COPROC[0]} line; echo "$line"; kill $COPROC_PID; echo k=$?; wait $COPROC_PID; echo w=$?',
    # an integer variable's bad value: reported in the function's frame, ends bash -c; declare/local keep their name
    _c('declare -i i; f() { echo start; i=0#4; echo in-f; }; f; echo after-f'),
    _c('declare -i i\ni=2 ; i+=0#4\necho next'),
    _c('f() { local -i j=2#3; echo same; }; f\necho next'),
    "printf 'declare -i i\\ni=0#4\\necho next $?\\nf() { i=1/0; echo in-f; }\\nf\\necho end\\n' > s.sh; bash ./s.sh; echo rc=$?",
    # shift/return with two operands end bash -c but only drop the line of a script file
    "printf 'set -- a b c\\nshift 3 x; echo same\\necho after $?\\nf() { return 1 2; echo inf; }\\nf\\necho after2 $?\\n' > s.sh; bash ./s.sh; echo rc=$?",
    # FUNCNEST's limit drops the command line (the next line runs)
    _c('FUNCNEST=3; f() { echo in; f; echo after-inner; }; g() { f; echo in-g $?; }; g\necho next $?'),
    # -v a[@]: an indexed array with an element or a set scalar; an associative array's @ is a key
    'declare -A A=([a]=1); declare -a a=([1]=1); b=(); declare -a c; s=x; e=; for v in \'A[@]\' \'a[@]\' \'a[*]\' \'b[@]\' \'c[@]\' \'s[@]\' \'e[@]\' \'n[@]\' \'a[1]\'; do [[ -v $v ]] && echo "$v set" || echo "$v unset"; done; declare -A H=([\'@\']=2); [ -v \'H[@]\' ]; echo $?',
    # enable lists the enabled builtins, -n the disabled ones, -a all; -s only the special ones
    "enable -ps; echo --; enable -nps; enable -n test echo; enable -n; enable -ns; enable -a | grep -e test -e echo -e ' cd'",
    # type in posix mode names the special builtins
    'set -o posix; type break export cd; command -V eval',
    # basename stops at its first operand
    'basename -s .sh x.sh y.sh -a; basename -a x/y -s .z; basename -- -a',
    # getopts goes on where the caller was when a function made OPTIND local (it looped for ever)
    'f() { typeset OPTIND=1; typeset opt; while getopts \':abcxyz\' opt; do echo opt: "$opt"; if [[ $opt = y ]]; then f -abc ; fi; done; }; f -xyz',
    'g() { local OPTIND=1 o; while getopts xy o; do echo "g $o"; done; }; set -- -ab; while getopts ab o; do echo "top $o"; g -xy; done',
    # read -d/mapfile -d take the first byte of the delimiter (an invalid byte was an internal error)
    's=$\'a\\xffb\\xffc\\xff\'; mapfile -t -d $\'\\xff\' array <<<"$s"; declare -p array; IFS= read -r -d $\'\\xff\' x <<< "$s"; echo "$x"; printf \'xéy\' | { read -d \'é\' v; echo "$v" | od -c | head -2; }',
    'getopts a o $\'-\\xff\' 2>&1 | od -c | head -2; { getopts b: o $\'-\\xffb\'; echo "rc=$? [$o]"; } 2>&1 | od -c | head -3',
    # read takes the bytes that end a character with it (read_mbchar): Latin-1 text in a UTF-8 locale joins lines
    'printf \'caf\\xe9\\nna\\xefve\\nok\\n\' > l1.txt; while read -r l; do printf \'%q\\n\' "$l"; done < l1.txt; cat l1.txt | while read -r l; do printf \'%q\\n\' "$l"; done',
    'printf \'A\\0B\\315\\0C\\226\\0\' | while IFS= read -rd \'\' f; do printf \'<%q>\\n\' "$f"; done; printf \'a\\xc3\\xc3\\nb\\n\' | { read x; read y; printf \'%q %q\\n\' "$x" "$y"; }',
    'printf \'%b\\200\' winter \'spring\\0375\' summer automn | while IFS= read -rd $\'\\200\' f; do printf \'<%q>\\n\' "$f"; done; LC_ALL=C; printf \'caf\\xe9\\nx\\n\' | { read x; printf \'%q\\n\' "$x"; }',
    # select into a reference that cannot take the value ends the loop (was an internal error)
    'declare -n r; select r in /; do :; done <<< 1; echo x rc=$?; declare -n q; q=/; echo rc=$?',
    # cd with a readonly PWD or OLDPWD fails with bash's message
    "bash -c 'readonly PWD ; cd / ; echo $?'; bash -c 'readonly OLDPWD ; cd / ; echo $?'",
    # shift/break name `--` when it was given; kill ''
    "set -- a b; shift -- 5; shopt -s shift_verbose; shift -- 5; shift -- -2; for f in 1 2; do break -- -5; done; for f in 1; do continue -1; done; kill ''; echo rc=$?",
    # set -x shows an empty assignment as `x=` and an empty [[ ]] operand as ''
    'set -x; b=; [[ $b > 7 ]]; [[ -n $b ]]; [[ "a b" == $b ]]; [[ $b ]]; export E=; x+=',
    # an ERR trap after a function failed names the function's last command in BASH_COMMAND
    'trap \'echo "ERR: $LINENO: -$BASH_COMMAND- failed"\' ERR; func() { [[ -z nonempty ]]; }; func; h() { (( 0 )); }; h; g() { false; return 3; }; g',
    # test's /dev/fd/N and /dev/std* are the shell's descriptors (not the runner's)
    'test -w /dev/fd/1; echo $?; test -r /dev/fd/0 < /dev/null; echo $?; test -w /dev/stdout; echo $?; [ -r /dev/fd/7 ]; echo $?; [ -e /dev/fd/9 ]; echo $?; exec 9>f; [ -w /dev/fd/9 ]; echo $?; [ -x /dev/fd/1 ]; echo $?; exec <&-; [ -e /dev/stdin ]; echo $?',
    # eval and let take name=(…) as one word (bash's PST_ASSIGNOK): it was a syntax error
    'set -- a; a=(1 2 3); eval leftSub=(\\"\\${!${1}[@]}\\"); declare -p leftSub; eval foo=(); declare -p foo; x=\'p q\'; eval arr=($x "r s" \'$x\'); declare -p arr; let i=(1+2)*3; echo $i',
    # (( )) and $(( )) expand an array subscript once: a key's $(…) is text, never run
    "declare -A assoc; key='x],b[$(echo uname >&2)'; (( assoc[$key]++ )); declare -p assoc; k2='x$y'; (( assoc[$k2]=5 )); echo $(( assoc[$k2] + 1 )); let 'assoc[$k2]+=2'; echo ${assoc[$k2]}",
    'declare -a arr; i=\'1+1\'; (( arr[$i]=7 )); declare -p arr; j=\'$(echo side >&2; echo 0)\'; (( arr[$j]=3 )); echo rc=$?; declare -A A; A[x]=42; (( y = A[\'x\'] )); echo $y $(( A["x"] ))',
    # a background command keeps the shell's stdin after an input redirection of an enclosing compound command or an input pipe (bash's stdin_redir), else /dev/null
    'for x in 1 2; do { read line ; echo "[$line]" ; } & wait; done << EOF\nab\ncd\nEOF',
    'printf \'p\\nq\\nr\\n\' | while read l; do { read m; echo "$l:$m"; } & wait; done; printf \'p\\nq\\n\' > f; while read l; do cat & wait; done < f; echo end',
    "printf 'p\\nq\\n' > f; while read l; do (cat &) ; wait; done < f; echo end; { cat & wait; } < f; printf 'x\\ny\\n' | ( read a; cat & wait ); cat & wait; echo end",
    # printf's %(fmt)T uses the zone of an exported or temporary TZ (it used the host's)
    "TZ=Asia/Tokyo printf '%(%H)T\\n' 0; f() { printf '%(%H)T\\n' 0; }; TZ=America/New_York f; TZ=x; printf '%(%H)T\\n' 0; export TZ=America/New_York; printf '%(%F %T %Z %z %s)T\\n' 1700000000; TZ=EST5 printf '%(%H %Z)T\\n' 0",
]

# Areas a held-out corpus hits (one of each kind from the session's batches), all matching
CASES = FIXED + [
    # printf
    "printf '%b\\n' 'a\\tb' 'c\\\\nd' '\\0101' '\\x41\\x4' '\\u00e9' '\\U0001F600' 'e\\cf' 'q\\'",
    "printf '%q\\n' $'a\\nb' $'\\x01' 'é' 'a|b' '#x' 'x#' '!' '{a,b}' '[x]' 'a=b' '~' 'x~' ''",
    "printf '%(%Y-%m-%d %H:%M:%S)T\\n' 0; TZ=UTC printf '%(%s %A %B %j %U)T\\n' 1700000000",
    "printf '[%5s][%-5s][%.2s]\\n' 'éé' 'ü' 'äöü'",
    "printf '[%*s][%-*s][%.*s][%*.*s]\\n' 4 a 4 b 2 abcdef 6 2 xyz",
    'printf \'%d %d %d\\n\' "\'A" \'"B\' "\'é"',
    "printf '%f %f %f\\n' inf -inf nan; printf '%.0f %.0f %.0f\\n' 0.5 1.5 2.5",
    'printf -v out \'%05.1f\' 3.14159; echo "$out"; printf -v arr[2] \'%s\' x; declare -p arr',
    "printf '[%-+5d][%+-5d][%0-5d][% 05d][%#x][%#X][%#o][%05s]\\n' 3 3 3 3 255 255 8 ab",
    "printf '%b-%s\\n' 'ab\\ccd' x y; echo after",
    # pexp
    'declare -A h=([a]=\'x y\' [b]=$\'q\\n\'); echo "${h[@]@Q}"; echo "${h[a]@Q}"',
    'declare -A h=([k]=v); a=(1 2); s=str; declare -i n=4; declare -r ro=r; echo "${h@A}"; echo "${a@A}"; echo "${s@A}"; echo "${n@A}"; echo "${ro@A}"',
    'a=(apple banana cherry); echo "${a[@]/a/A}"; echo "${a[@]//a/A}"; echo "${a[@]/#/pre-}"; echo "${a[@]/%/-suf}"',
    'a=(abc DEF gHi); echo "${a[@]^}" "${a[@]^^}" "${a[@],,}" "${a[@]~}"',
    's=abcdef; echo "${s: -2}" "${s:(-4):2}" "${s:2:-1}" "[${s:10}]" "[${s: -10}]" "${s:0:0}|"',
    'a=(a b c d e); echo "${a[@]:1:2}" "${a[@]: -2}" "${a[@]:(-3):1}" "${#a[@]}"; echo "${a[@]:1:-1}"',
    'a=(1 2 3); echo ${a[-1]} ${a[-3]}; echo ${a[-4]}; echo rc=$?',
    'declare -A h; h["a b"]=1; h[c]=2; k="a b"; echo ${h[$k]} ${h["a b"]}; unset \'h[a b]\'; declare -p h',
    'declare -A h=([\'$x\']=1 [\'a]b\']=2); declare -p h; echo "${!h[@]}" | tr \' \' \'\\n\' | sort',
    'x=abc; echo "${x/b/\\&}" "${x/b/"&"}"',
    'arr=(p q); ref=\'arr[@]\'; echo "${!ref}"; for x in "${!ref}"; do echo "<$x>"; done',
    # arith
    'echo $((2#1111)) $((8#777)) $((16#ff)) $((36#ZZ)) $((62#Z)) $((64#@)) $((0xFF)) $((0X1a)) $((010))',
    'echo $((2#12)); echo rc=$?',
    'echo $((9223372036854775807 + 1)) $((-9223372036854775807 - 2)) $(( 2**64 )) $(( 3 * 4611686018427387904 ))',
    'echo $((-7/2)) $((-7%2)) $((7/-2)) $((7%-2)) $((-9223372036854775808 % -1))',
    'a=(1 2 3); echo $((a[1]++)) $((++a[2])) $((a[0]--)); echo ${a[@]}',
    'declare -A h; ((h[x]++)); ((h[x]+=5)); echo ${h[x]}; ((h[new]--)); declare -p h',
    'x=0; ((x ? (y=1) : (y=2))); echo $y; echo $((x=5 ? 7 : 8)) $x',
    'a=a; echo $((a)); echo rc=$?',
    'echo $(( * 2 )); echo after',
    'expr 1 / 0; echo rc=$?; expr a + 1; echo rc=$?; expr; echo rc=$?',
    # regex_glob
    's=\'key=value; k2=v2\'; if [[ $s =~ ([a-z0-9]+)=([a-z0-9]+) ]]; then echo "${BASH_REMATCH[@]}" ${#BASH_REMATCH[@]}; fi',
    "[[ a =~ 'a[' ]]; echo rc=$?; re='a['; [[ a =~ $re ]]; echo rc=$?",
    'shopt -s nocasematch; [[ HELLO =~ ^hel ]] && echo ci; [[ ABC == abc ]] && echo eq; case X in x) echo case;; esac',
    '[ abc -eq 1 ]; echo rc=$?; test 1 -gt; echo rc=$?; [ 1 = ]; echo rc=$?; [ \'(\' ]; echo rc=$?',
    'shopt -s failglob; echo nomatch*; echo rc=$?; echo next',
    'mkdir -p a/b/c; touch a/1.txt a/b/2.txt a/b/c/3.txt; shopt -s globstar; echo **/*.txt; echo a/**; echo **',
    "touch a.o a.c b.o; GLOBIGNORE='*.o'; echo *; GLOBIGNORE=; echo *",
    "echo {a} {a,} {,} {1..} a{b,c\\,d}e ${x}{1,2} '{a,b}'",
    # read
    'printf \'a:b:c\' | { read -d : x; read -d : y; read -d : z; echo "$x $y $z rc=$?"; }',
    'printf \'abcdef\\nxyz\' | { read -n 3 a; read -N 4 b; read c; echo "[$a][$b][$c]"; }',
    'IFS=\' ,\' read a b c <<< \' x , y,,z \'; echo "[$a][$b][$c]"',
    'printf \'line1 \\\\\\nline2\\n\' | { read x; echo "[$x]"; }',
    'seq 5 | { mapfile -t -C \'printf "cb:%s:%s\\n"\' -c 2 a; echo ${#a[@]}; }',
    'mapfile -n -1 a < /dev/null; echo rc=$?; mapfile -u 99 a; echo rc=$?; mapfile -C echo -c 0 a < /dev/null; echo rc=$?',
    'printf \'a\\0b\\0\' | while read -r -d \'\' x; do echo "<$x>"; done',
    # scope
    'x=g; f() { local x=f; g; echo "f: $x"; }; g() { unset x; echo "g: ${x-unset}"; }; f',
    'f() { local -; set -e; set -o | grep -w errexit; }; f; set -o | grep -w errexit',
    'f() { caller; caller 0; g; }; g() { caller 1; }; f',
    'printf \'echo "src: ${BASH_SOURCE[0]} ${FUNCNAME[0]-none}"\\nf2() { echo "in f2 ${BASH_SOURCE[0]}"; }\\n\' > lib.sh; source ./lib.sh; f2; echo "${BASH_SOURCE[@]}"',
    'a=1; declare -n b=a; declare -n c=b; c=9; echo $a $b $c',
    'f() { local x=1; for i in 1 2; do echo "$i$x"; done | cat; }; declare -f f',
    # traps
    "set -E; trap 'echo ERR ${FUNCNAME[0]-top}' ERR; f() { false; }; f; (false); x=$(false)",
    'set -T; trap \'echo "RET ${FUNCNAME[0]}"\' RETURN; f() { g; }; g() { :; }; f',
    'trap \'echo "dbg: $BASH_COMMAND"\' DEBUG; a=1; echo $a; f() { echo inf; }; f',
    'set -e; f() { false; echo cont; }; if f; then echo t; fi; f; echo no',
    'set -u; a=(1); echo ${a[0]}; echo ${a[5]}; echo no',
    'true | false | (exit 4); echo "${PIPESTATUS[@]}"; ! false | true; echo "${PIPESTATUS[@]}" $?',
    'set -- -x -b; while getopts \':ab:\' o; do echo "o=$o arg=${OPTARG-}"; done',
    "shopt -s lastpipe; n=0; printf 'a\\nb\\n' | while read l; do n=$((n+1)); done; echo $n",
    # core1
    "printf '10\\n-1\\n1e3\\n 5\\nabc\\n\\n3.5\\n-0\\n+2\\n' | sort -n",
    "printf '1 a\\n2 a\\n3 b\\n' | uniq -f1 -c; printf 'xa\\nya\\nzb\\n' | uniq -s1; printf 'ab1\\nab2\\nac\\n' | uniq -w2",
    'tr; echo rc=$?; tr a; echo rc=$?; echo x | tr -d; echo rc=$?',
    'cut -f1; echo rc=$?; echo x | cut -f0; echo rc=$?; echo x | cut -c; echo rc=$?; echo x | cut -d ab -f1; echo rc=$?',
    "printf 'k1,a\\nk2,b\\n' > x; printf 'k1,A\\nk3,C\\n' > y; join -t, -a1 -a2 -e NULL -o 0,1.2,2.2 x y",
    "printf 'b\\na\\n' > x; printf 'a\\n' > y; comm x y; echo rc=$?",
    'seq; echo rc=$?; seq a; echo rc=$?; seq 1 0 3; echo rc=$?',
    "printf 'AB\\n\\x01' | od -c; printf 'AB' | od -An -tx1; printf 'ABCD' | od -t x2; printf '\\xff' | od -b; echo hi | od -A x -t x1z",
    "echo hello | base64; echo aGVsbG8K | base64 -d; printf '%0100d' 0 | base64 | head -2; printf 'x' | base64 -w 0; echo; echo '!!!' | base64 -d; echo rc=$?",
    "echo a > f1; printf 'b\\nc\\n' > f2; wc -l f1 f2; wc f1 nosuch; echo rc=$?",
    # core2
    "date -u -d @86399 '+%H:%M:%S %p %I %l %e %k %y %C %G %V %u %w %Z %z %:z'",
    "printf 'abc' > f; chmod 640 f; stat -c '%s %a %A %F %n %h' f; mkdir d; stat -c '%F %a' d; ln -s f l; stat -c '%F %N' l; stat -L -c %F l",
    "mkdir -p a/b; printf 'xy' > a/b/f; find a -printf '%p %y %d\\n' | sort; find a -type f -printf '%f %s %h\\n'",
    'echo "\'a b\' \\"c d\\" e\\\\ f" | xargs -n1 echo; echo "unterminated \'q" | xargs echo; echo rc=$?',
    "seq 3 | sed '2i\\inserted'; seq 3 | sed '2a appended'; seq 3 | sed '2c changed'; seq 3 | sed -n '2{p;p}'; seq 3 | sed '='",
    "sed 's/a/b' <<< a; echo rc=$?; sed -e 'k' <<< a; echo rc=$?; sed p nosuch; echo rc=$?",
    'awk \'BEGIN{print 1/3, 1e6, 1e7, 123456789012, 0.1+0.2, 100000*100000, -0}\'; awk \'BEGIN{OFMT="%.2f"; print 3.14159; x=3.14159; print x ""}\'',
    'awk \'BEGIN{s="Hello World"; print length(s), substr(s,1,5), index(s,"o"), toupper(s), tolower(s); gsub(/o/,"0",s); print s; print match("foobar", /ob/), RSTART, RLENGTH}\'',
    # core3
    "printf 'a\\tb\\n\\n\\nc\\x01\\n' > f; cat -n f; cat -A f; cat -s f; cat -b f; cat -E f | head -1; cat -T f | head -1",
    "printf 'a b c\\nlonger x y\\n' | column -t; printf 'a,b\\nccc,d\\n' | column -t -s,; printf '1\\n2\\n3\\n4\\n5\\n' | column -c 20",
    'cp nosuch x; echo rc=$?; mkdir d; cp d e; echo rc=$?; mv nosuch y; echo rc=$?; rm nosuch; echo rc=$?; rm d; echo rc=$?; rm -f nosuch; echo rc=$?',
    'echo hit > f1; echo miss > f2; grep hit f1 f2; grep -l hit f1 f2; grep -L hit f1 f2; grep -h hit f1 f2; grep nomatch f1; echo rc=$?; grep x nosuch; echo rc=$?; grep -s x nosuch; echo rc=$?',
    "printf 'a\\nb\\nc\\n' > x; printf 'a\\nB\\nc\\nd\\n' > y; diff x y; echo rc=$?; diff -u x y | tail -n +3; diff -q x y; diff x x; echo rc=$?",
    'echo \'[{"n":"a","v":2},{"n":"b","v":1}]\' | jq -c \'sort_by(.v) | map(.n)\'; echo \'{"a":{"b":1}}\' | jq -c \'to_entries\'; jq -n \'[range(3)]\' -c; jq -n --arg x 5 \'$x\'',
    'numfmt --to=iec 1048576 1536; numfmt --to=si 1000000; numfmt --from=iec 1K; factor 60 97; factor 1',
    # words
    'IFS=: ; x=\'a::b:\'; for w in $x; do echo "<$w>"; done; set -- $x; echo $#',
    'f() { echo $#; }; f \'\' ""; f $empty; f "$empty"; e=(); f "${e[@]}"; f "${e[*]}"',
    'echo x >&5; echo rc=$?; echo y 2>&-; cat <&7; echo rc=$?',
    'f=\'a b\'; echo x > $f; echo rc=$?; echo y > "$f"; ls',
    'V=3 :; echo "[${V-unset}]"; unset V; V=4 eval \'echo $V\'; echo "[${V-unset}]"',
    # builtins
    "echo -z; echo -neE 'q\\t'; echo; echo '-e' 'a\\nb'; echo -e -n 'z\\n'",
    'declare -l x=ABC; x+=DEF; echo $x; declare -u y; y=abc; echo $y; declare -c z=hELLO 2>&1; echo "[$z]"',
    'readonly -a ra=(1 2); ra[0]=x; echo rc=$?; ra+=(3); echo rc=$?; declare -p ra',
    '(sleep 0.3; exit 2) & (exit 5) & wait -n; echo first=$?; wait -n; echo second=$?; wait -n; echo none=$?',
    'select x in a b; do echo "[$x][$REPLY]"; done <<< $\'9\\n\'',
    'exec 3>f; echo x >&3; exec 3>&-; cat f; exec 4<f; read -u4 l; echo $l; exec 4<&-; echo y >&3; echo rc=$?',
]


@pytest.fixture(scope="module", params=["virtual", "namespace"])
def sandbox(request, tmp_path_factory):
    yield from bashdiff.sandbox(request.param, tmp_path_factory)


@pytest.mark.parametrize("script", CASES)
def test_same_as_bash(sandbox, script: str, tmp_path) -> None:
    want = bashdiff.bash(script, str(tmp_path), home=str(tmp_path))
    r = bashdiff.run(sandbox, script)
    assert (r.stdout, r.stderr, r.exit_code) == want, script
