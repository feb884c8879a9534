"""Agent-style command lines over a small project tree, for real-vs-virtual fidelity checks."""

from __future__ import annotations

# Fixed modification times (UTC seconds) so ls -l, find -newer and stat agree on both sides.
T0 = 1700000000          # 2023-11-14 22:13:20 UTC: every file by default
T_LATE = T0 + 7200       # files "edited later" (find -newer, ls -t)

CORE_PY = '''"""Core logic for the inventory service."""

import json
import os

from .utils import slugify, parse_size

DEFAULT_LIMIT = 50


class Inventory:
    """Keeps items in memory."""

    def __init__(self, path):
        self.path = path
        self.items = {}
        # TODO: load lazily instead of at construction
        self.load()

    def load(self):
        if not os.path.exists(self.path):
            return
        with open(self.path) as fh:
            self.items = json.load(fh)

    def add(self, name, qty=1):
        key = slugify(name)
        self.items[key] = self.items.get(key, 0) + qty  # FIXME: negative qty
        return key

    def total(self):
        return sum(self.items.values())

    def biggest(self, limit=DEFAULT_LIMIT):
        # TODO(ana): make limit configurable
        ranked = sorted(self.items.items(), key=lambda kv: -kv[1])
        return ranked[:limit]
'''

UTILS_PY = '''"""Small helpers."""

import re

_SIZE = re.compile(r"^(\\d+)([kmg]?)$")


def slugify(text):
    text = text.strip().lower()
    return re.sub(r"[^a-z0-9]+", "-", text).strip("-")


def parse_size(value):
    m = _SIZE.match(value.lower())
    if not m:
        raise ValueError("bad size: %s" % value)
    num, unit = m.groups()
    mult = {"": 1, "k": 1024, "m": 1024 ** 2, "g": 1024 ** 3}[unit]
    return int(num) * mult


def chunks(seq, n):
    # FIXME: handles n <= 0 badly
    for i in range(0, len(seq), n):
        yield seq[i:i + n]
'''

CLI_PY = '''"""Command line entry point."""

import argparse
import sys

from .core import Inventory


def main(argv=None):
    parser = argparse.ArgumentParser(prog="inv")
    parser.add_argument("--db", default="inventory.json")
    parser.add_argument("item", nargs="?")
    args = parser.parse_args(argv)
    inv = Inventory(args.db)
    if args.item:
        inv.add(args.item)
    print(inv.total())
    # TODO: exit codes for errors
    return 0


if __name__ == "__main__":
    sys.exit(main())
'''

INIT_PY = '''"""Inventory package."""

__version__ = "0.3.1"
'''

TEST_CORE = '''from myapp.core import Inventory


def test_add(tmp_path):
    inv = Inventory(str(tmp_path / "db.json"))
    assert inv.add("Blue Widget") == "blue-widget"
    assert inv.total() == 1


def test_biggest(tmp_path):
    inv = Inventory(str(tmp_path / "db.json"))
    inv.add("a", 3)
    inv.add("b", 5)
    assert inv.biggest(1) == [("b", 5)]
'''

PACKAGE_JSON = '''{
  "name": "inventory-web",
  "version": "1.4.0",
  "private": true,
  "scripts": {
    "build": "vite build",
    "test": "vitest run",
    "lint": "eslint src"
  },
  "dependencies": {
    "react": "^18.2.0",
    "react-dom": "^18.2.0",
    "axios": "^1.6.2",
    "lodash": "4.17.21"
  },
  "devDependencies": {
    "vite": "^5.0.0",
    "vitest": "^1.0.4",
    "eslint": "^8.55.0"
  },
  "deps": [
    {"name": "react", "size": 120, "license": "MIT"},
    {"name": "axios", "size": 45, "license": "MIT"},
    {"name": "lodash", "size": 530, "license": "MIT"},
    {"name": "left-pad", "size": 2, "license": "WTFPL"}
  ]
}
'''

CONFIG_JSON = '''{"service": {"name": "inventory", "port": 8080, "debug": false},
 "database": {"host": "db.internal", "port": 5432, "pool": {"min": 2, "max": 10}},
 "features": ["search", "export", "audit"],
 "owners": [{"name": "ana", "email": "ana@example.com", "active": true},
            {"name": "bo", "email": "bo@example.com", "active": false},
            {"name": "cy", "email": null, "active": true}],
 "timeout": 2.5}
'''

DATA_CSV = '''id,name,score,city
1,alice,82,Lisbon
2,bob,67,Porto
3,carol,91,Lisbon
4,dave,55,Braga
5,erin,78,Porto
6,frank,91,Faro
7,grace,60,Lisbon
8,heidi,73,Braga
'''

APP_LOG = '''2024-03-01 08:00:01 INFO  server started on :8080
2024-03-01 08:00:02 DEBUG loading config from /etc/inv.json
2024-03-01 08:01:15 WARN  slow query (1203 ms): SELECT * FROM items
2024-03-01 08:02:40 INFO  GET /items 200 12ms
2024-03-01 08:02:41 INFO  GET /items/7 404 3ms
2024-03-01 08:05:09 ERROR database timeout after 2.5s
2024-03-01 08:05:10 INFO  retrying connection
2024-03-01 08:05:12 ERROR database timeout after 2.5s
2024-03-01 09:15:00 WARN  disk usage at 91%
2024-03-01 09:30:27 INFO  POST /items 201 40ms
2024-03-01 10:00:00 INFO  shutdown requested
'''

README = '''# Inventory

A tiny inventory service used to exercise command line tools.

## Install

    pip install -e .

## Usage

Run `inv --db inventory.json widget` to add a widget.

## Notes

- TODO: document the web front end
- The log lives in logs/app.log.
'''

GUIDE_MD = '''# Guide

start
step one: configure
step two: run
end

Appendix: nothing here.
'''

RELEASE_NOTES = '''v0.3.1 fixed slugify for unicode
v0.3.0 added biggest()
v0.2.0 first public release
'''

MAKEFILE = '''.PHONY: test lint

test:
\tpytest -q tests

lint:
\tflake8 src
'''

FRUITS_A = "apple\nbanana\ncherry\ndate\nfig\n"
FRUITS_B = "banana\ncherry\nelderberry\nfig\ngrape\n"
NAMES_TXT = "1 alice\n2 bob\n3 carol\n4 dave\n"
AGES_TXT = "1 34\n2 27\n4 45\n5 19\n"
WORDS = "the cat sat on the mat\nthe dog ate the cat food\na bird on a wire\n"
OLD_CFG = "host=localhost\nport=8080\nmode=dev\nretries=3\n"
NEW_CFG = "host=localhost\nport=9090\nmode=prod\nretries=3\nverbose=1\n"
UNICODE = "café\nnaïve résumé\nstraße\n日本語\n"

BINARY = bytes(range(0, 256, 7)) + b"\x00\x00PNG\r\n\x1a\n" + b"tail"

FILES: dict[str, bytes] = {
    "README.md": README.encode(),
    "package.json": PACKAGE_JSON.encode(),
    "config.json": CONFIG_JSON.encode(),
    "data.csv": DATA_CSV.encode(),
    "Makefile": MAKEFILE.encode(),
    ".gitignore": b"__pycache__/\n*.pyc\nbuild/\n",
    "logs/app.log": APP_LOG.encode(),
    "src/myapp/__init__.py": INIT_PY.encode(),
    "src/myapp/core.py": CORE_PY.encode(),
    "src/myapp/utils.py": UTILS_PY.encode(),
    "src/myapp/cli.py": CLI_PY.encode(),
    "tests/test_core.py": TEST_CORE.encode(),
    "docs/guide.md": GUIDE_MD.encode(),
    "docs/release notes.txt": RELEASE_NOTES.encode(),
    "assets/logo.bin": BINARY,
    "txt/fruits_a.txt": FRUITS_A.encode(),
    "txt/fruits_b.txt": FRUITS_B.encode(),
    "txt/names.txt": NAMES_TXT.encode(),
    "txt/ages.txt": AGES_TXT.encode(),
    "txt/words.txt": WORDS.encode(),
    "txt/unicode.txt": UNICODE.encode(),
    "conf/old.cfg": OLD_CFG.encode(),
    "conf/new.cfg": NEW_CFG.encode(),
}

DIRS = ["src", "src/myapp", "tests", "docs", "assets", "logs", "txt", "conf", "empty"]

SYMLINKS: dict[str, str] = {"docs/readme-link.md": "../README.md"}

# Files whose mtime is T_LATE instead of T0.
LATE = {"src/myapp/cli.py", "logs/app.log"}

# The command lines.  Each runs in a fresh copy of the tree, cwd = tree root.
COMMANDS: list[str] = r"""
grep -rn TODO src | cut -d: -f1 | sort -u
grep -rn TODO src | sort
grep -rn FIXME . | sort
grep -rl TODO . | sort
grep -rc TODO src | sort
grep -c def src/myapp/core.py
grep -n 'def ' src/myapp/*.py
grep -rn --include='*.py' 'import' . | sort
grep -rw self src/myapp/core.py | head -3
grep -E 'ERROR|WARN' logs/app.log
grep -v INFO logs/app.log | wc -l
grep -o '[0-9]\+ms' logs/app.log
grep -oE '[0-9]{2}:[0-9]{2}:[0-9]{2}' logs/app.log | head -4
grep -i 'todo' README.md
grep -A1 'class Inventory' src/myapp/core.py
grep -B2 -n 'return key' src/myapp/core.py
grep -C1 ERROR logs/app.log
grep -m2 INFO logs/app.log
grep -q ERROR logs/app.log && echo found
grep -q NOPE logs/app.log || echo missing
grep -L TODO src/myapp/*.py
grep -h def src/myapp/utils.py src/myapp/cli.py
grep -x 'start' docs/guide.md
grep -F '2.5s' logs/app.log
grep -e alice -e bob data.csv
grep -w 'on' txt/words.txt
grep '^v0' 'docs/release notes.txt'
grep -n '' txt/fruits_a.txt
grep nothing-here README.md; echo "rc=$?"
grep TODO missing.txt; echo "rc=$?"
grep -s TODO missing.txt; echo "rc=$?"
grep '[' README.md; echo "rc=$?"
grep -E '(' README.md; echo "rc=$?"
grep --bogus x README.md; echo "rc=$?"
grep -r TODO --exclude-dir=tests . | sort
grep -rn 'def \w\+(self' src | sort | head -5
grep -P '\d{3} \d+ms' logs/app.log
grep PNG assets/logo.bin
grep -c '' assets/logo.bin
grep -a -c tail assets/logo.bin
grep -rl '__version__' --include=*.py .
grep -n -i 'error' logs/app.log | cut -d: -f1 | paste -sd,
grep -oh 'TODO[^:]*' -r src | sort | uniq -c
find . -name '*.py' | sort
find . -name '*.py' | xargs wc -l | sort -n
find . -type d | sort
find . -type f -name '*.json' | sort
find . -type f -newer data.csv | sort
find . -type l
find . -maxdepth 1 -type f | sort
find src -name '*.py' -exec grep -l TODO {} \; | sort
find src -name '*.py' -exec wc -l {} + | sort -n
find . -empty | sort
find . -path ./src -prune -o -name '*.py' -print
find . -name '*.md' -o -name '*.txt' | sort
find . -iname 'MAKEFILE'
find . -type f -size +1k | sort
find . -type f -size -100c | sort
find docs -type f -print0 | xargs -0 wc -c | sort -n
find . -name '*.py' -newer src/myapp/core.py
find src -type f | wc -l
find . -not -path '*/src/*' -type f -name '*.py'
find . -name '*.cfg' -printf '%f %s\n' | sort
find . -type f -name '*.py' -printf '%d %p\n' | sort
find missing-dir -name x; echo "rc=$?"
find . -maxdepth 2 -mindepth 2 -type d | sort
find src -name __init__.py -delete; find src -name '*.py' | sort
find . -regex '.*/t[a-z]*\.txt' | sort
find . -name 'release*'
find . -type f -mmin -1 | sort
find . -perm -u+x -type f | sort
find . -type f | sed 's|^\./||' | sort | head -5
find . -name "*.py" | xargs grep -c def | sort
find . -name '*.py' | xargs -n1 basename | sort
find . -name '*.json' | xargs -I{} sh -c 'echo {}: $(wc -c < {})' | sort
find . -name '*.txt' -print0 | sort -z | xargs -0 ls
ls
ls -1
ls -a
ls -A
ls src/myapp
ls -R src
ls -F
ls -p docs
ls -d */
ls *.json
ls -S txt
ls -t src/myapp
ls -r txt
ls -lgG src/myapp
ls -lgG docs
ls -lgGh assets
ls -1 --color=never txt | head -3
ls missing; echo "rc=$?"
ls -la src/myapp | tail -n +2 | awk '{print $1, $5, $NF}'
ls -l docs/readme-link.md | awk '{print $1, $NF, $(NF-1), $(NF-2)}'
wc -l *.json *.csv
wc -l src/myapp/*.py
wc -w txt/words.txt
wc -c assets/logo.bin
wc -m txt/unicode.txt
wc txt/words.txt
wc -L README.md
cat txt/words.txt | wc -l
wc -l < data.csv
wc nothere; echo "rc=$?"
head -n 5 logs/app.log
head -3 data.csv
head -c 20 README.md
head -n -8 logs/app.log
tail -n 3 logs/app.log
tail -n +2 data.csv
tail -c 10 README.md
tail -1 data.csv
head -2 txt/fruits_a.txt txt/fruits_b.txt
cut -d, -f2 data.csv
cut -d, -f2,3 data.csv | tail -n +2
cut -d, -f1 --complement data.csv | head -3
cut -c1-10 logs/app.log | head -3
cut -d' ' -f3 logs/app.log | sort | uniq -c
cut -f1 -d= conf/old.cfg
cut -d: -f2 README.md
cut -b 3-5 txt/unicode.txt
tr a-z A-Z < txt/fruits_a.txt
tr -d '\n' < txt/fruits_a.txt
tr -s ' ' < logs/app.log | head -2
tr ',' '\t' < data.csv | head -2
tr -cd '[:alpha:]\n' < txt/words.txt
tr '[:lower:]' '[:upper:]' <<< 'hello world'
echo 'a-b-c' | tr - _
tr -c 'a-z\n' '.' < txt/words.txt
tr -d '[:digit:]' < data.csv | head -3
sort txt/fruits_b.txt txt/fruits_a.txt
sort -r txt/fruits_a.txt
sort -t, -k3 -n data.csv
sort -t, -k3,3nr -k2,2 data.csv | head -4
sort -t, -k4,4 -s data.csv
sort -u txt/words.txt
sort -n txt/ages.txt -k2
cut -d, -f4 data.csv | tail -n +2 | sort | uniq -c | sort -rn
cat txt/words.txt | tr ' ' '\n' | sort | uniq -c | sort -rn | head -3
tr ' ' '\n' < txt/words.txt | sort | uniq -d
tr ' ' '\n' < txt/words.txt | sort | uniq -u
sort -c txt/fruits_a.txt && echo sorted
sort -c txt/words.txt; echo "rc=$?"
sort -k2 txt/names.txt -r
sort -h <<< $'10K\n2M\n512\n1G'
sort -V <<< $'v1.10\nv1.2\nv1.9'
sort --bogus; echo "rc=$?"
uniq -c <(sort txt/fruits_a.txt txt/fruits_b.txt)
sort txt/fruits_a.txt txt/fruits_b.txt | uniq -d
sed -n '/start/,/end/p' docs/guide.md
sed 's/old/new/' <<< 'old gold'
sed -i 's/8080/9000/' conf/old.cfg && cat conf/old.cfg
sed -i.bak 's/dev/test/' conf/old.cfg && cat conf/old.cfg conf/old.cfg.bak
sed -n '2,4p' data.csv
sed '1d' data.csv
sed '/^$/d' README.md
sed -n '$p' logs/app.log
sed 's/,/;/g' data.csv | head -3
sed -E 's/([0-9]+),([a-z]+)/\2=\1/' data.csv
sed 's/^/> /' txt/fruits_a.txt
sed '3q' logs/app.log
sed -n '/ERROR/=' logs/app.log
sed 'y/abc/xyz/' txt/fruits_a.txt
sed -e 's/a/A/' -e 's/e/E/g' txt/fruits_a.txt
sed '2i\inserted line' txt/fruits_a.txt
sed '2a appended' txt/fruits_a.txt
sed 's/TODO/DONE/w /dev/stdout' src/myapp/cli.py | grep DONE
sed -n 's/.*version": "\(.*\)".*/\1/p' package.json
sed 's/[' README.md; echo "rc=$?"
sed -n l txt/unicode.txt
sed = txt/fruits_b.txt | paste - -
sed '$!N;s/\n/ /' txt/fruits_a.txt
sed nothere.txt; echo "rc=$?"
sed 's/x/y/' nothere.txt; echo "rc=$?"
awk -F, '{s+=$3} END {print s}' data.csv
awk -F, 'NR>1 {print $2}' data.csv
awk 'NR>1 {print $2}' txt/names.txt
awk -F, 'NR>1 && $3>75 {print $2, $3}' data.csv
awk -F, 'NR>1 {c[$4]++} END {for (k in c) print k, c[k]}' data.csv | sort
awk '{print NF}' txt/words.txt
awk '{print $NF}' logs/app.log | head -3
awk '/ERROR/ {n++} END {print n+0}' logs/app.log
awk -F, -v OFS='|' '{$1=$1; print}' data.csv | head -3
awk 'length > 40' logs/app.log | wc -l
awk '{printf "%-8s|%5.1f\n", $2, $1*1.5}' txt/names.txt
awk -F, 'NR==1{next} {sum[$4]+=$3; n[$4]++} END {for (c in sum) printf "%s %.2f\n", c, sum[c]/n[c]}' data.csv | sort
awk 'BEGIN {print 2^10, 7%3, int(9.7)}'
awk '{print toupper(substr($0,1,1)) substr($0,2)}' txt/fruits_a.txt
awk -F= '{print $2}' conf/new.cfg
awk 'NR==FNR {a[$1]=$2; next} $1 in a {print $2, a[$1]}' txt/names.txt txt/ages.txt
awk '{gsub(/the/, "THE"); print}' txt/words.txt
awk 'END {print NR}' logs/app.log
awk -F'[ :]' '{print $2":"$3}' logs/app.log | sort -u | head -3
awk '{ $2 = ""; print }' txt/names.txt
awk 'BEGIN { split("a:b:c", p, ":"); print p[3], length(p) }'
awk '{print > "out_" $1 ".txt"} END {close("out_1.txt")}' txt/names.txt && cat out_1.txt out_4.txt
awk 'BEGIN { x = sprintf("%05d", 42); print x }'
awk '/start/,/end/' docs/guide.md
awk '{ print length($0) }' txt/unicode.txt
awk 'BEGIN { printf "%s\n" }'; echo "rc=$?"
awk '{print $1' data.csv; echo "rc=$?"
awk -F, '$3 == 91' data.csv
awk '{a[NR]=$0} END {for (i=NR; i>0; i--) print a[i]}' txt/fruits_a.txt
jq -r '.deps[] | .name' package.json
jq '.dependencies | keys' package.json
jq -r '.dependencies | to_entries[] | "\(.key)@\(.value)"' package.json
jq '.deps | map(.size) | add' package.json
jq -c '.deps[] | select(.size > 100)' package.json
jq '.scripts.build' package.json
jq -r '.version' package.json
jq '.service.port' config.json
jq -r '.features | join(",")' config.json
jq '.owners[] | select(.active) | .name' config.json
jq -c '.database.pool' config.json
jq '.owners | length' config.json
jq -r '.owners[] | [.name, (.email // "none")] | @tsv' config.json
jq -r '.owners[] | [.name, .active] | @csv' config.json
jq '.database.pool.max += 5 | .database.pool' config.json
jq -S '.service' config.json
jq '.timeout * 2' config.json
jq 'keys' config.json
jq '[.deps[] | .license] | unique' package.json
jq '.deps | sort_by(-.size) | .[0].name' package.json
jq -n '[1,2,3] | map(. * 10)'
jq -n --arg who ana '{user: $who}'
jq '.missing.field' config.json
jq '.features[1:]' config.json
jq 'has("timeout")' config.json
jq -e '.service.debug' config.json; echo "rc=$?"
jq . nothere.json; echo "rc=$?"
jq '.[' config.json; echo "rc=$?"
jq -r '.deps | group_by(.license) | map("\(.[0].license): \(length)") | .[]' package.json
echo '{"a":1,"b":[1,2]}' | jq -c .
jq -r 'paths(scalars) | map(tostring) | join(".")' config.json | head -5
tar czf x.tgz src && tar tzf x.tgz | sort
tar cf docs.tar docs && tar tf docs.tar | sort
tar czf s.tgz src/myapp/utils.py && mkdir out && tar xzf s.tgz -C out && find out -type f
tar cf - txt | tar tf - | sort
tar czf a.tgz -C txt fruits_a.txt && tar xzOf a.tgz fruits_a.txt
tar xzf nothere.tgz; echo "rc=$?"
mkdir -p build/out && cp data.csv build/out/ && ls build/out
cp -r src src2 && find src2 -type f | sort
mv txt/words.txt txt/w.txt && ls txt
rm txt/names.txt && ls txt
rm nothere; echo "rc=$?"
rm -f nothere; echo "rc=$?"
rmdir src; echo "rc=$?"
rm -r empty && ls -d empty; echo "rc=$?"
mkdir src; echo "rc=$?"
touch new.txt && ls new.txt
cp nothere x; echo "rc=$?"
ln -s data.csv d.csv && readlink d.csv && head -1 d.csv
cat -n txt/fruits_a.txt
cat -A conf/old.cfg
cat txt/fruits_a.txt txt/fruits_b.txt | sort | uniq | wc -l
cat nothere; echo "rc=$?"
cat docs/readme-link.md | head -1
cat "docs/release notes.txt"
cat docs/release\ notes.txt | wc -l
nl txt/fruits_a.txt
nl -ba README.md | head -5
tac txt/fruits_a.txt
rev txt/fruits_a.txt
seq 5
seq 2 2 10
seq -s, 1 5
seq -w 8 11
seq 1 0.5 3
expr 3 + 4
expr 10 / 3
expr length hello
expr 5 \> 3
expr 1 / 0; echo "rc=$?"
expr substr abcdef 2 3
expr index hello l
expr match abc123 '[a-z]*'
printf '%s\n' a b c
printf '%5s|%-5s|\n' ab cd
printf '%d %x %o\n' 255 255 255
printf '%.3f\n' 3.14159
printf '%s=%s\n' k1 v1 k2 v2
printf '%b' 'a\tb\n'
printf '%q\n' 'it is'
printf '%05.1f\n' 3.14159
printf 'x%sy\n'
date -d @0 -u
date -u -d @1700000000 +%Y-%m-%d
date -u -d '2024-03-01 08:00:00' +%s
date -u -d @86400 '+%A %B %d %j'
for f in src/myapp/*.py; do basename "$f" .py; done
for f in src/myapp/*.py; do dirname "$f"; done | uniq
basename /a/b/c.txt
dirname /a/b/c.txt
basename -s .py src/myapp/core.py src/myapp/cli.py
stat -c '%n %s' data.csv config.json
stat -c '%a %F' src data.csv
stat -c '%Y %n' logs/app.log
stat --format='%s' assets/logo.bin
stat nothere; echo "rc=$?"
stat -c '%F %N' docs/readme-link.md
du -sh src
du -s txt
du -a docs | sort -k2
du -sh assets/logo.bin
md5sum data.csv
md5sum txt/*.txt
sha256sum config.json
sha1sum README.md | cut -c1-12
md5sum data.csv > sums && md5sum -c sums
base64 txt/fruits_a.txt
base64 txt/fruits_a.txt | base64 -d
echo 'aGVsbG8K' | base64 -d
base64 -w 20 README.md | head -3
od -c txt/fruits_a.txt
od -An -tx1 assets/logo.bin | head -2
od -c assets/logo.bin | tail -3
xxd assets/logo.bin | head -3
xxd -p txt/fruits_a.txt
head -c 16 assets/logo.bin | xxd
paste txt/names.txt txt/ages.txt
paste -d, txt/fruits_a.txt txt/fruits_b.txt
paste -s txt/fruits_a.txt
comm txt/fruits_a.txt txt/fruits_b.txt
comm -12 txt/fruits_a.txt txt/fruits_b.txt
comm -3 txt/fruits_a.txt txt/fruits_b.txt
join txt/names.txt txt/ages.txt
join -a1 txt/names.txt txt/ages.txt
join -v2 txt/names.txt txt/ages.txt
column -t -s, data.csv
column -t conf/new.cfg
column -t -s= conf/new.cfg
diff -u conf/old.cfg conf/new.cfg
diff conf/old.cfg conf/new.cfg; echo "rc=$?"
diff -q conf/old.cfg conf/new.cfg; echo "rc=$?"
diff txt/fruits_a.txt txt/fruits_a.txt && echo same
diff -u txt/fruits_a.txt txt/fruits_b.txt
diff nothere conf/new.cfg; echo "rc=$?"
diff <(sort txt/fruits_b.txt) txt/fruits_b.txt && echo same
diff -r src src; echo "rc=$?"
xargs -I{} echo 'item: {}' < txt/fruits_a.txt
cat txt/fruits_a.txt | xargs
cat txt/fruits_a.txt | xargs -n2
cat txt/fruits_a.txt | xargs -n1 echo got
echo 'a b c' | xargs -n1 | sort -r
printf 'x\0y\0' | xargs -0 echo
ls txt | xargs -I% sh -c 'wc -l < txt/%'
echo | xargs -r echo nothing; echo "rc=$?"
cut -d, -f1 data.csv | tail -n +2 | xargs -n4
fold -w 20 README.md | head -4
fmt -w 30 txt/words.txt
expand Makefile | cat -A
split -l 3 data.csv part_ && ls part_* && cat part_ab
csplit -s docs/guide.md /step/ && ls xx*
tee copy.txt < txt/fruits_a.txt > /dev/null && cat copy.txt
echo hello | tee -a txt/fruits_a.txt && tail -2 txt/fruits_a.txt
yes | head -3
yes no | head -n 2
echo $((3 * 7)) $(( 10 % 4 ))
echo "files: $(ls src/myapp | wc -l)"
x=$(grep -c TODO src/myapp/core.py); echo "count=$x"
test -f data.csv && echo file
test -d src && echo dir
[ -s empty ] || echo notsizedfile
[ -L docs/readme-link.md ] && echo link
[ -x Makefile ] || echo notexec
realpath --relative-to=. docs/readme-link.md
readlink docs/readme-link.md
file assets/logo.bin data.csv
cmp txt/fruits_a.txt txt/fruits_b.txt; echo "rc=$?"
cmp -s data.csv data.csv && echo same
env -i A=1 printenv A
true | false; echo "rc=$?"
echo start; nosuchcommand; echo "rc=$?"
cd src && pwd | sed 's|.*/||' && ls
cd nothere; echo "rc=$?"
export N=5; seq $N | paste -sd+ | bc
echo '2^10 + 1' | bc
echo 'scale=3; 10/3' | bc
echo '1.5 * 4' | bc -l
numfmt --to=iec 1048576 2>/dev/null || echo no-numfmt
shuf -i 1-5 -n 5 | sort -n
sort -R txt/fruits_a.txt | sort
which ls >/dev/null && echo has-ls
grep -rn TODO src --include=*.py | awk -F: '{print $1 ":" $2}' | sort -t: -k1,1 -k2,2n
grep -c . data.csv logs/app.log
grep -rhoE '\b[A-Z]{4,}\b' src | sort | uniq -c | sort -rn
sed -n '/^## /p' README.md | sed 's/## //'
awk -F, 'NR>1' data.csv | sort -t, -k3nr | head -3 | cut -d, -f2
jq -r '.deps[] | "\(.name)\t\(.size)"' package.json | sort -k2n | column -t
find . -name '*.py' -print0 | xargs -0 grep -l 'import re' | sort
find . -type f \( -name '*.md' -o -name '*.json' \) | sort | xargs wc -c
tail -n +2 data.csv | cut -d, -f3 | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'
grep -E '^[0-9-]+ [0-9:]+ (ERROR|WARN)' logs/app.log | awk '{print $3}' | sort | uniq -c
cat logs/app.log | awk '{print $4, $5}' | grep '^/items' | sort | uniq -c
head -n 1 data.csv | tr , '\n' | nl
printf '%s\n' "$(date -u -d @0 +%Y)" done
cat <<'EOF2' | wc -l
one
two
EOF2
""".strip("\n").split("\n")

# Second round: more options, shell glue around the tools, smaller coreutils.
COMMANDS += r"""
ls -la | wc -l
ls -l | head -1
ls -ltr src/myapp | awk '{print $NF}'
ls -1 src/myapp/*.py | xargs -n1 wc -l
ls -al docs | awk 'NR>1 {print $1, $NF}'
ls --group-directories-first
ls -lSr txt | awk '{print $5, $9}'
ls -m txt
ls -x src/myapp
ls -C
ls -1a | head -5
ls -i data.csv | wc -w
ls "docs/release notes.txt"
ls -b docs
ls -Q docs
ls src/*/
find . -name '*.py' -exec basename {} \; | sort
find . -type f -name '*.py' | xargs grep -n 'TODO\|FIXME' | sort
find . -type f -not -name '*.py' -not -path './.git*' | sort | head -20
find . -name "*.log" -exec tail -1 {} \;
find . -type d -empty
find src tests -name 'test_*.py'
find . -name '*.py' -size -1k | sort
find . -newer README.md -type f | sort
find . ! -newer data.csv -type f | sort | head -3
find . -type f -printf '%s %p\n' | sort -rn | head -3
find . -type f -printf '%TY-%Tm-%Td %p\n' | sort | head -3
find . -type f -name '*.json' -exec jq -r '.name // empty' {} \;
find . -maxdepth 1 -name '.*'
find . -type f | grep -v '/\.' | wc -l
find . -name '*.csv' -o -name '*.log' | xargs ls -1
find . -type f -links 1 | wc -l
find . -name "*.py" -mtime -1
find . -name "*.py" -mtime +30 | sort
find src -depth -type d
find . -samefile README.md
find . -xtype l
find . -lname '*README*'
find . -name '*.txt' -size +0 | sort
grep -rn "TODO" --include="*.py" . | wc -l
grep -rI TODO . | sort
grep -rn -e TODO -e FIXME src | sort -t: -k1,1 -k2,2n
grep -rnw 'Inventory' . | sort
grep --color=never -n Inventory src/myapp/cli.py
grep -n --color=always TODO src/myapp/cli.py | cat -v
grep -c ERROR logs/app.log logs/app.log
grep -ri 'todo\|fixme' --include='*.py' -l . | sort
grep -E '^\s+def ' src/myapp/core.py
grep -P '^\s+def (?!_)' src/myapp/core.py
grep -o '"[a-z-]*": "\^' package.json
grep -Po '"version": "\K[^"]+' package.json
grep -E -o '\b[0-9]{3}\b' logs/app.log | sort | uniq -c
grep -n '' README.md | tail -2
grep -vn '^$' README.md | head -3
grep '\.py$' <(find . -type f) | sort
grep -f txt/fruits_a.txt txt/fruits_b.txt
grep -vxFf txt/fruits_a.txt txt/fruits_b.txt
grep -ric error logs
grep -b ERROR logs/app.log
grep -n -A2 -B1 'def add' src/myapp/core.py
grep -T -n def src/myapp/utils.py
grep -Z -l TODO src/myapp/*.py | tr '\0' '\n'
grep -r --exclude='*.py' TODO . | sort
grep -rn TODO src --null | cut -d '' -f1 | sort -u
grep -E 'a{2,}' txt/words.txt; echo $?
grep -e '-v' README.md; echo $?
grep -- -e README.md; echo $?
grep -c '^[0-9]' data.csv
grep -w -c the txt/words.txt
grep -ow the txt/words.txt | wc -l
grep 'caf' txt/unicode.txt
grep -i 'STRASSE\|straße' txt/unicode.txt
grep -o . txt/unicode.txt | head -5
grep -r pattern /nonexistent; echo $?
grep -rn TODO src/myapp/core.py src/nothere.py; echo $?
grep -rn --max-count=1 TODO src | sort
grep -l import src/myapp/*.py | xargs -n1 basename
sed -n '1~2p' txt/fruits_a.txt
sed -n '2,$p' txt/fruits_b.txt
sed '0,/INFO/s//LOG/' logs/app.log | head -2
sed -r 's/(\w+)=(\w+)/\2 <- \1/' conf/new.cfg
sed -n '/^def /,/^$/p' src/myapp/utils.py
sed '/TODO/s/^/#/' src/myapp/cli.py | grep '#'
sed 's/\s\+$//' Makefile | cat -A
sed -e :a -e '$!N;s/\n/,/;ta' txt/fruits_a.txt
sed 's/\(.*\)/"\1"/' txt/fruits_a.txt
sed 's/a/A/2' txt/words.txt
sed 's/the/THE/gI' txt/words.txt
sed -n 'p;n' txt/fruits_a.txt
sed '1!G;h;$!d' txt/fruits_a.txt
sed -i '/^mode/d' conf/new.cfg && cat conf/new.cfg
sed -i -e '1i # header' -e '$a # footer' conf/old.cfg && cat conf/old.cfg
sed -i 's/"version": ".*"/"version": "2.0.0"/' package.json && grep version package.json
sed -s -n '$p' txt/fruits_a.txt txt/fruits_b.txt
sed -z 's/\n/ /g' txt/fruits_a.txt
sed 's/x/y/;s/[/z/' txt/fruits_a.txt; echo $?
sed -n '/apple/{n;p}' txt/fruits_a.txt
sed 'N;P;D' txt/fruits_a.txt
sed '$d' txt/fruits_a.txt
sed 's#/#|#g' .gitignore
sed 's/\bthe\b/a/g' txt/words.txt
sed 's/[[:space:]]\+/ /g' logs/app.log | head -2
sed 'c\changed' txt/fruits_a.txt | head -2
sed -n 'l 20' README.md | head -3
awk '{print FILENAME ":" FNR}' txt/fruits_a.txt txt/fruits_b.txt | tail -2
awk -F, 'NR==1 {for (i=1;i<=NF;i++) print i, $i}' data.csv
awk 'BEGIN {OFS="\t"} {print $1, $2}' txt/names.txt
awk '{s += length($0)} END {print s / NR}' txt/fruits_a.txt
awk -F, '{printf "%s,%s\n", $2, $3 * 2}' data.csv | tail -3
awk 'BEGIN{while ((getline line < "txt/fruits_a.txt") > 0) n++; print n}'
awk '{ print $0 | "sort -r" }' txt/fruits_a.txt
awk 'BEGIN { "date -u -d @0 +%Y" | getline y; print y }'
awk -v n=3 'NR <= n' logs/app.log
awk '$3 == "ERROR" {print $1, $2}' logs/app.log
awk '{ sub(/:[0-9]+$/, "", $2); print $2 }' logs/app.log | uniq -c
awk 'NF {print $1}' README.md | sort | uniq -c | sort -rn | head -3
awk '{print substr($0, index($0, $3))}' logs/app.log | head -2
awk -F'"' '/"name"/ {print $4}' package.json
awk 'BEGIN { printf "%d%%\n", 0.456 * 100 }'
awk 'BEGIN { print length("héllo") }'
awk '{ printf "%5.2f\n", $2 / 3 }' txt/ages.txt
awk 'BEGIN { print substr("hello", 2, 3), index("hello", "l"), match("foobar", /o+/), RSTART, RLENGTH }'
awk -F, 'NR > 1 { if ($3 > max) { max = $3; who = $2 } } END { print who, max }' data.csv
awk 'BEGIN { x["a"]=1; delete x["a"]; print length(x) }'
awk '{ $0 = tolower($0); print }' README.md | head -2
awk 'BEGIN { printf "%c%c\n", 72, "i" }'
awk '{ n = split($0, w, " "); print n, w[n] }' txt/words.txt
awk 'BEGIN { print 1e6, 1000000, 0.1 + 0.2, 100/3 }'
awk 'BEGIN { print int(-3.7), -7 % 3 }'
awk 'BEGIN { CONVFMT="%.2g"; x = 3.14159; y = x ""; print y }'
awk -f nothere.awk; echo $?
awk 'BEGIN { getline; print "got " $0 }' < txt/fruits_a.txt
awk 'NR % 2 == 0' logs/app.log | wc -l
awk '{ lines[NR] = $0 } END { print lines[1]; print lines[NR] }' data.csv
jq '.' config.json | head -5
jq -c '.owners[]' config.json
jq -r '.owners[].email' config.json
jq -r '.owners[] | select(.email != null) | .email' config.json
jq '[.owners[] | select(.active)] | length' config.json
jq 'to_entries | map(.key)' config.json
jq '.deps | map({(.name): .size}) | add' package.json
jq -r '.dependencies | keys[]' package.json
jq -r '.devDependencies | to_entries | sort_by(.key) | .[] | .key + " " + .value' package.json
jq '.scripts | length' package.json
jq --arg n react '.deps[] | select(.name == $n) | .size' package.json
jq --argjson m 100 '[.deps[] | select(.size > $m) | .name]' package.json
jq -r '@base64 "\(.name)"' package.json
jq -r '.name | ascii_upcase' package.json
jq '.version | split(".") | map(tonumber)' package.json
jq 'del(.deps)' package.json | jq -c 'keys'
jq '.service += {"tls": true}' config.json | jq -c .service
jq -r '.features[] | select(startswith("e"))' config.json
jq 'any(.owners[]; .name == "bo")' config.json
jq '[.deps[].size] | min, max' package.json
jq -r '.deps[] | "\(.name): \(.size)kb"' package.json
jq '.timeout | floor' config.json
jq 'walk(if type == "boolean" then not else . end) | .service' config.json
jq -s 'length' package.json config.json
jq -n 'now | type'
jq -r 'input_filename' package.json
jq '.deps[0] | keys_unsorted' package.json
jq -c 'path(..)' config.json | head -4
jq -r '.owners | map(.name) | @sh' config.json
jq '.database | .. | numbers' config.json
jq -e '.nope' config.json; echo $?
jq 'error("boom")' config.json; echo $?
jq '.a.b.c = 1' <<< '{}'
jq -c 'to_entries' <<< '{"b":2,"a":1}'
jq --tab . <<< '{"a":[1,2]}'
jq --indent 1 . <<< '{"a":[1,2]}'
jq -j '.features[]' config.json; echo
jq -r '.[]' <<< '[1,"a",null,true]'
jq '.[] | numbers' <<< '[1,"a",null,2.5]'
jq 'limit(2; .[])' <<< '[5,6,7]'
jq 'reduce .[] as $x (0; . + $x)' <<< '[1,2,3,4]'
jq '1 / 3' <<< null
jq '10000000000000000000' <<< null
jq '.[] | tostring' <<< '[1, "x", {"a":1}]'
jq 'ltrimstr("v")' <<< '"v1.2"'
jq 'test("^a.c$")' <<< '"abc"'
jq 'sub("b"; "B")' <<< '"abcb"'
jq -r 'gsub("\\s+"; "_")' <<< '"a  b   c"'
jq 'splits(", *")' <<< '"a, b,c"'
jq '@uri' <<< '"a b&c"'
jq 'tojson' <<< '{"a":1}'
jq 'fromjson' <<< '"{\"a\":1}"'
jq 'group_by(.k) | map(length)' <<< '[{"k":1},{"k":2},{"k":1}]'
jq 'unique_by(length)' <<< '["a","bb","c"]'
jq 'flatten' <<< '[1,[2,[3]]]'
jq 'range(3)' <<< null
jq '[range(0;10;3)]' -c <<< null
jq 'indices(1)' -c <<< '[1,2,1]'
jq 'env | type' <<< null
jq '$ENV | has("PATH")' <<< null
jq 'ascii' <<< 65; echo $?
jq '.[] as [$a, $b] | $a + $b' <<< '[[1,2],[3,4]]'
jq 'if . > 2 then "big" elif . > 1 then "mid" else "small" end' <<< 2
jq 'try error("x") catch .' <<< null
jq '.a?' <<< '[1]'
jq '.[-1]' <<< '[1,2,3]'
jq 'input' <<< '1 2'
jq -n '[inputs]' -c <<< '1 2 3'
jq --slurp -c 'map(. * 2)' <<< '1 2 3'
jq -R 'length' txt/fruits_a.txt
jq -Rs 'split("\n")' -c txt/fruits_a.txt
jq -r '.owners[] | "\(.name)\t\(.active)"' config.json | column -t
jq '.' assets/logo.bin; echo $?
for f in *.json; do echo "$f: $(jq -r '.name // "n/a"' "$f")"; done
while IFS=, read -r id name score city; do echo "$name lives in $city"; done < data.csv | tail -n +2
while read -r line; do echo "${#line}"; done < txt/fruits_a.txt
cat data.csv | while IFS=, read -r a b c d; do [ "$c" -gt 80 ] 2>/dev/null && echo "$b"; done
count=0; for f in src/myapp/*.py; do count=$((count + $(wc -l < "$f"))); done; echo $count
for d in */; do echo "${d%/}: $(find "$d" -type f | wc -l)"; done
files=(src/myapp/*.py); echo "${#files[@]} ${files[0]##*/}"
name=core.py; echo "${name%.py} ${name#*.} ${name^^}"
v=$(jq -r .version package.json); echo "v${v//./_}"
if grep -q TODO README.md; then echo has-todo; else echo clean; fi
[[ -f data.csv && -d src ]] && echo both
case "$(head -1 data.csv)" in id,*) echo csv-header;; *) echo other;; esac
set -- $(wc -l < data.csv); echo "lines=$1"
printf '%s\n' src/myapp/*.py | while read -r f; do grep -c def "$f"; done
{ echo header; tail -n +2 data.csv | sort -t, -k3n; } | head -4
(cd src/myapp && ls *.py | wc -l)
echo "a,b,c" | IFS=, read -r x y z; echo "[$x]"
mapfile -t lines < txt/fruits_a.txt; echo "${lines[2]} ${#lines[@]}"
readarray -t arr < <(cut -d, -f2 data.csv); echo "${arr[@]:1:3}"
declare -A m; m[a]=1; m[b]=2; for k in "${!m[@]}"; do echo "$k=${m[$k]}"; done | sort
echo $(( $(wc -l < data.csv) - 1 ))
diff <(cut -d, -f2 data.csv | sort) <(cut -d, -f2 data.csv) >/dev/null && echo sorted || echo unsorted
test -e nothere || echo "no such file"
ls nothere 2>&1 | head -1
cat nothere 2>/dev/null || echo "failed with $?"
grep -q x nothere 2>&1; echo $?
echo hello > out.txt && cat out.txt && rm out.txt && ls out.txt 2>&1
echo one >> txt/fruits_a.txt; tail -n 1 txt/fruits_a.txt
touch -d '2020-01-01 00:00' old.txt && stat -c '%y' old.txt
touch -t 202001011200 t.txt && ls -l --time-style=+%Y%m%d t.txt | awk '{print $6}'
mkdir -p a/b/c && touch a/b/c/d.txt && find a | sort
cp -v data.csv backup.csv
mv -v data.csv moved.csv
rm -v txt/ages.txt
mkdir -v newdir
ln -sf ../README.md docs/link2 && ls -l docs/link2 | awk '{print $NF}'
chmod +x Makefile && ls -l Makefile | cut -c1-10
chmod 600 data.csv && stat -c %a data.csv
install -m 755 Makefile bin_make && stat -c '%a %s' bin_make
cp -p data.csv keep.csv && stat -c %Y keep.csv
head -n 2 txt/*.txt
tail -n 1 txt/fruits_a.txt txt/fruits_b.txt
tail -q -n1 txt/fruits_a.txt txt/fruits_b.txt
head -c -5 txt/fruits_a.txt
wc -l txt/*.txt
wc -c txt/*.txt | sort -n | head -2
wc -lwc README.md data.csv
cut -d, -f3 data.csv | tail -n +2 | paste -sd+ | bc
cut -d ',' -f 2- data.csv | head -2
cut -c 1-4,10- txt/fruits_a.txt
cut -d, -f5 data.csv | head -2
cut -f2 txt/names.txt
cut -s -d' ' -f2 txt/names.txt
cut -d, -f2 --output-delimiter=' | ' data.csv | head -2
cut; echo $?
cut -f0 data.csv; echo $?
sort -k2,2 -t' ' txt/ages.txt
sort -nk2 txt/ages.txt
sort -t, -k4,4 -k3,3nr data.csv
sort -f <<< $'b\nA\na\nB'
sort <<< $'b\nA\na\nB'
sort -b -k2 <<< $'x  b\ny a'
sort -z < /dev/null | wc -c
sort -o sorted.txt txt/fruits_b.txt && cat sorted.txt
sort -m txt/fruits_a.txt txt/fruits_b.txt
sort -n <<< $'10\n9\n-1\n1.5\nabc'
sort -g <<< $'1e3\n2\n0x10'
sort -M <<< $'Mar\nJan\nFeb'
sort nothere; echo $?
uniq -c txt/fruits_a.txt
uniq -i <<< $'a\nA\nb'
uniq -f1 <<< $'1 a\n2 a\n3 b'
sort txt/words.txt | uniq -c | sort -k1,1nr -k2
tr -s '\n' < README.md | wc -l
tr 'a-y' 'b-z' <<< 'hal'
tr -d 'aeiou' < txt/fruits_a.txt
tr '\n' ' ' < txt/fruits_a.txt; echo
tr -s '[:space:]' '\n' < txt/words.txt | sort -u | wc -l
tr; echo $?
tr 'abc' < txt/fruits_a.txt; echo $?
printf '%-10s %5d\n' alice 82 bob 7
printf '%s\n' "$(cat txt/fruits_a.txt | head -2)"
printf '%03d\n' 7 42
printf '%x\n' 'A' 2>&1
printf '%d\n' abc; echo $?
printf '%.2s\n' hello
printf '%*d|\n' 6 42
printf '\x41\101\n'
printf '%e\n' 12345.678
printf '%g %g\n' 0.0001 123456789
printf "%s %s\n" a
printf '%c' hello; echo
echo -e 'a\tb'
echo -n 'no newline'; echo
echo 'single $HOME' "double $HOME"
date -u -d @1700000000
date -u -d '@1700000000' '+%F %T %Z'
date -u -d '2024-02-29 +1 day' +%F
date -u -d '2024-01-31 +1 month' +%F
date -u -d 'yesterday' +%Y > /dev/null && echo ok
date -d @0 -u +%s
date -u -d @3600 +%H:%M
date -d 'not a date'; echo $?
date -u +%Y -d @2000000000
date -u -d '2024-03-01T08:00:00Z' +%s
date -u -r data.csv +%F
diff -c conf/old.cfg conf/new.cfg
diff --brief txt/fruits_a.txt txt/fruits_b.txt
diff -y -W 40 txt/fruits_a.txt txt/fruits_b.txt
diff -i <(echo ABC) <(echo abc) && echo same
diff -w <(echo 'a  b') <(echo 'a b') && echo same
diff -u /dev/null txt/fruits_a.txt | tail -n +3
diff -ru conf txt | head -5
diff -N conf/old.cfg nothere; echo $?
diff -U1 conf/old.cfg conf/new.cfg | tail -n +3
diff --label a --label b -u conf/old.cfg conf/new.cfg
xargs -a txt/fruits_a.txt echo
xargs -n2 -P1 echo < txt/fruits_b.txt
echo 'a b' | xargs -I X echo "[X]"
find txt -name '*.txt' | sort | xargs cat | wc -l
printf '%s\n' 1 2 3 | xargs -L1 echo n
echo 1 2 3 | xargs -t echo 2>&1
echo x | xargs false; echo $?
echo x | xargs nothere-cmd; echo $?
seq 10 | xargs -n3 | tail -1
seq 3 | xargs -I{} mkdir dir{} && ls -d dir*
seq 0 3 10
seq 5 -1 1 | tr '\n' ' '; echo
seq -f 'item%02g' 3
seq 1.5 3
seq 10 | head -n 3 | tac
seq 100 | tail -n 2
seq 1000 | grep -c 7
expr "$(wc -l < data.csv)" - 1
expr abc : 'a\(.\)'
expr 2 \* 3 + 1
expr 0 \& 1; echo $?
expr '' \| b
basename "docs/release notes.txt" .txt
dirname docs/guide.md src
basename -a a/b c/d
readlink -f docs/readme-link.md
readlink -f nothere
pwd -P
stat -c '%s %n' txt/* | sort -n
stat -c '%F' docs/readme-link.md empty assets/logo.bin
stat -L -c '%s' docs/readme-link.md
stat -c '%A %h %s' data.csv
stat -t data.csv | cut -d' ' -f2
du -b data.csv
du -ch txt/*.txt | tail -1
du --max-depth=1 . | sort -k2
du -s --apparent-size src
du -sh * | sort -h | tail -3
md5sum < data.csv
md5sum -c <(echo 'bad  data.csv'); echo $?
sha256sum txt/fruits_a.txt | awk '{print $1}' | cut -c1-16
cksum data.csv
base64 -w0 txt/fruits_a.txt; echo
echo -n 'hi' | base64
echo 'not base64!' | base64 -d; echo $?
od -t x1 -N 8 assets/logo.bin
od -A x -t x1z txt/fruits_a.txt | head -2
od -c -w8 txt/fruits_a.txt | head -3
od -An -c README.md | head -1
hexdump -C txt/fruits_a.txt | head -2
xxd -l 16 README.md
xxd -r -p <<< '68690a'
xxd -c 8 txt/fruits_a.txt | head -2
xxd -i txt/fruits_a.txt | head -3
nl -w2 -s') ' txt/fruits_a.txt
nl -v0 txt/fruits_b.txt
tac data.csv | head -2
rev <<< 'hello world'
paste -d' ' txt/names.txt txt/ages.txt | awk '{print $2, $4}'
paste - - < txt/fruits_a.txt
paste -sd' ' txt/fruits_b.txt
join -t' ' -1 1 -2 1 txt/names.txt txt/ages.txt
join -o 1.2,2.2 txt/names.txt txt/ages.txt
join -e NA -a1 -o 1.2,2.2 txt/names.txt txt/ages.txt
comm -23 txt/fruits_a.txt txt/fruits_b.txt
comm -13 <(sort txt/fruits_a.txt) <(sort txt/fruits_b.txt)
comm txt/words.txt txt/fruits_a.txt; echo $?
column -t -s, -o ' | ' data.csv | head -3
column -c 40 txt/fruits_a.txt
printf 'a b c\nlong-x y z\n' | column -t
column -t -N ID,NAME,SCORE,CITY -s, data.csv | head -2
column -J -s, -N a,b,c,d data.csv | head -4
fold -w 10 -s txt/words.txt
fmt -w 20 README.md | head -5
pr -t -2 txt/fruits_a.txt
expand -t 4 Makefile
unexpand -a <<< '        x'
head -n1 data.csv | tr ',' '\n' | wc -l
yes abc | head -c 10; echo
timeout 5 sleep 0 && echo done
sleep 0.1 && echo slept
true && echo yes || echo no
false; echo $?
! grep -q zzz data.csv && echo absent
command -v jq >/dev/null && echo jq-here
type cd
type -t grep
nosuch-tool --version; echo $?
./nothere.sh; echo $?
bash -c 'exit 3'; echo $?
sh -c 'echo $0' 
env | grep -c '^PATH='
umask
printenv LANG
hostname >/dev/null && echo host
whoami >/dev/null && echo who
id -u >/dev/null && echo id
uname
uname -s
nproc >/dev/null && echo cpus
sum data.csv
tsort <<< 'a b b c'
factor 84
numfmt --to=si 1500000
factor 1 0 12 abc; echo $?
echo 100 | factor
factor 84 97 1000001
factor -- -5; echo $?
sum data.csv; printf abc | sum; sum -s data.csv; sum nothere; echo $?
printf 'a b\nb c\nx y' | tsort; printf 'a b\nb a' | tsort; echo $?
tsort <<< 'a b b c'
unlink; echo $?; unlink nothere; echo $?; unlink data.csv && ls data.csv; echo $?
link a; echo $?; link data.csv hl.csv && stat -c %h data.csv
nice echo hi; nice -n 5 echo x; nice -n; echo $?; nice
stdbuf -oL echo y; stdbuf -o0 grep -c a data.csv
dd if=data.csv of=/dev/null status=none; echo $?
printf 'hello world' | dd bs=5 count=1 2>/dev/null; echo
printf 'hello' | dd status=noxfer; echo
dd if=nothere; echo $?
printf 'abcdef' | dd bs=1 skip=2 count=3 status=none; echo
printf 'abc' | dd conv=ucase status=none; echo
dd bogus=1; echo $?
dd if=data.csv of=copy.csv bs=1k status=none && cmp data.csv copy.csv && echo same
dd if=/dev/zero of=zero.bin bs=1024 count=4 status=none && stat -c %s zero.bin
printf 'XY' | dd of=data.csv conv=notrunc status=none && head -1 data.csv
dd if=data.csv bs=10 count=2 status=none | wc -c
link nothere x; echo $?
dd if=data.csv of=nodir/x status=none; echo $?
ls -C
ls -C src/myapp txt
ls -x
ls -C -w 40
ls -Cw 30 txt
ls -F -C
ls -m -w 30 txt
ls -x -w 50 src/myapp
ls -mw40
""".strip("\n").split("\n")

# Third round: formats (wc/ls/du/stat/date), UTF-8 text, awk numbers, regex corners.
COMMANDS += r"""
wc < data.csv
wc -l - < data.csv
cat data.csv | wc -c
wc -l txt/fruits_a.txt - < data.csv
wc -m txt/unicode.txt README.md
ls -l docs/readme-link.md | cut -d' ' -f1,5-
ls -s txt
ls -sh assets
du docs
du -a src | sort -k2
du -h --max-depth=0 src
stat -c '%y' data.csv
stat -c '%x|%z' data.csv | cut -c1-19
stat -c '%b %B %o' data.csv
stat -f -c %T . >/dev/null && echo fs
date -u -d @1700000000 '+%a %b %e %H:%M:%S %Z %Y'
date -u -d @1700000000 -R
date -u -d @1700000000 -I
date -u -d @1700000000 --iso-8601=seconds
date -u -d @1700000000 '+%s %N' | cut -c1-10
date -u -d @1700000000 '+%U %V %W %u %w %C %y %G'
date -u -d '2024-03-01 08:00:01' '+%p %I %l %k'
date -u -d 'tomorrow' > /dev/null; echo $?
TZ=America/New_York date -d @0
TZ=Asia/Tokyo date -d @0 +%H
date -u -d '1 hour ago' >/dev/null && echo ok
printf '%-8s|\n' café naïve
printf '%5.1f%%\n' 45.678
cut -c1-3 txt/unicode.txt
cut -b1-3 txt/unicode.txt | od -c | head -3
tr 'é' 'e' < txt/unicode.txt
tr '[:lower:]' '[:upper:]' < txt/unicode.txt
sed 's/./X/' txt/unicode.txt
sed 's/é/E/g' txt/unicode.txt
grep -o '..$' txt/unicode.txt
grep -c 'ß' txt/unicode.txt
awk '{print length($0)}' txt/unicode.txt
awk '{print toupper($0)}' txt/unicode.txt
awk '{print substr($0,1,3)}' txt/unicode.txt
rev txt/unicode.txt
sort txt/unicode.txt
sort -f <<< $'b\nB\na\nA'
sort <<< $'a b\na  a\nab'
sort -t: -k2 <<< $'x:10\ny:9\nz:100'
sort -k1.2 <<< $'ab\nba\ncc'
sort -u -t, -k4,4 data.csv
sort -rn -k3 -t, data.csv | head -3
wc -L txt/unicode.txt
fold -w 4 txt/unicode.txt
awk 'BEGIN { print 0.1 + 0.2; print 1/3; print 2^53; print 2^53 + 1; print 1e16; print 123456789012 }'
awk 'BEGIN { print -0; print 1e300*1e300; print log(-1) }'
awk 'BEGIN { printf "%d\n", "3abc"; printf "%s\n", 1e5; print 100000 * 10 }'
awk 'BEGIN { x = "10"; y = "9"; print (x < y), (x+0 < y+0) }'
awk '{ print ($1 < $2) }' <<< '10 9'
awk 'BEGIN { printf "%5s|%-5s|%.1s\n", "ab", "cd", "xyz" }'
awk 'BEGIN { printf "%i %o %X %e %G\n", 42, 8, 255, 1234.5, 0.00001 }'
awk 'BEGIN { OFMT = "%.2f"; print 3.14159, 10 }'
awk '{ $3 = "X" } 1' txt/names.txt
awk 'BEGIN { FS = "," } { print NF }' data.csv | uniq -c
awk -F'\t' '{ print $1 }' <<< $'a\tb'
awk 'BEGIN { RS = "" } { print NR ": " $1 }' README.md
awk -v RS=',' 'END { print NR }' <<< 'a,b,c'
awk '{ print; next; print "never" }' txt/fruits_a.txt | head -2
awk 'BEGIN { while (i < 3) { i++; if (i == 2) continue; print i } }'
awk 'function f(x) { return x * 2 } BEGIN { print f(21) }'
awk 'BEGIN { a = "x"; a = a a a; print a; print length() }' < /dev/null
awk '{ print NR, NF, $NF }' <<< $'a b c\n\nd'
awk 'BEGIN { srand(1); x = rand(); print (x >= 0 && x < 1) }'
awk 'BEGIN { print substr("hello", 0), substr("hello", -1, 3), substr("hello", 4, 100) }'
awk 'BEGIN { s = "a.b.c"; gsub(".", "-", s); print s }'
awk 'BEGIN { s = "a.b.c"; gsub(/\./, "-", s); print s }'
awk 'BEGIN { s = "hello"; sub(/l+/, "[&]", s); print s }'
awk 'BEGIN { printf("%s %s\n", "a", "b") }'
awk '/^#/ { next } NF' README.md | head -3
awk '$1 ~ /^[0-9]+$/ { s += $1 } END { print s }' txt/names.txt
awk '!seen[$0]++' txt/words.txt
awk 'BEGIN { print index("abc", ""), length("") }'
awk -F: '{ print $1 }' /etc/passwd | head -1
grep -E '^(a|b)' txt/fruits_a.txt
grep -E 'an{2}' txt/fruits_a.txt; echo $?
grep 'a\{2\}' txt/fruits_a.txt; echo $?
grep -E 'a+n' txt/fruits_a.txt
grep 'a\+n' txt/fruits_a.txt
grep 'x*' txt/fruits_a.txt | wc -l
grep -o 'a*' txt/fruits_a.txt | head -3
grep -ow 'a' txt/words.txt | wc -l
grep -E '\<c' txt/words.txt
grep '\bc' txt/words.txt
grep -E '[[:upper:]]' logs/app.log | wc -l
grep -e '' -c README.md
grep -n '^' txt/fruits_a.txt | head -2
grep -v -e apple -e fig txt/fruits_a.txt
grep -i -w 'THE' txt/words.txt
grep -x -E 'a.*' txt/fruits_a.txt
grep -E '(ERROR|WARN).*[0-9]+' -o logs/app.log
grep -rn 'def' src --include='*.py' -h | wc -l
grep -n -o 'self\.[a-z]*' src/myapp/core.py | sort -u -t: -k2 | head -4
grep -E "timeout after [0-9.]+s" logs/app.log | uniq -c
grep -P '(?<=GET )/\S+' -o logs/app.log
grep -P '\d+(?=ms)' -o logs/app.log
grep -m1 -n 'def' src/myapp/*.py
grep -A1 -m1 'def' src/myapp/utils.py
grep -c -v '^\s*$' src/myapp/core.py
sed -n '/class/,$p' src/myapp/core.py | head -3
sed 's/^[ \t]*//' src/myapp/core.py | grep -c '^def'
sed -E 's/^([^,]*),([^,]*)/\2,\1/' data.csv | head -2
sed 's/\(^\|,\)\([a-z]\)/\1\u\2/g' data.csv | head -3
sed -E 's/(.)(.)/\2\1/' txt/fruits_a.txt
sed 's/.*/\U&/' txt/fruits_b.txt
sed 's/\w\+/[&]/2' txt/words.txt
sed -n '/alice/,+2p' data.csv
sed -n '3,/Porto/p' data.csv
sed '2,4!d' data.csv
sed -n '$=' data.csv
sed 's/$/\r/' txt/fruits_a.txt | od -c | head -2
sed ':a;s/^\(\s*\)\t/\1  /;ta' Makefile
sed 'n;d' txt/fruits_a.txt
sed '/^$/N;/\n$/D' README.md | wc -l
sed "s/'/\"/g" <<< "it's"
sed 's/a\|e/_/g' txt/fruits_a.txt
sed -E 's/a|e/_/g' txt/fruits_a.txt
sed 's/[aeiou]//2g' txt/fruits_a.txt
sed -n '/^## Install/,/^## /{/^## /!p}' README.md
sed '1~3d' logs/app.log | wc -l
sed -e '/start/,/end/{/start/n;/end/!d}' docs/guide.md
sed 's%/items%/api/items%' logs/app.log | grep -c api
sed 'w copy.txt' txt/fruits_a.txt > /dev/null && cat copy.txt
sed -i '' txt/fruits_a.txt; echo $?
sed -n 'x;p' txt/fruits_a.txt
sed '=' txt/fruits_a.txt | sed 'N;s/\n/\t/'
""".strip("\n").split("\n")

COMMANDS += r"""
grep -T -n def src/myapp/utils.py
grep -T a txt/fruits_a.txt txt/fruits_b.txt
grep -Tnb a txt/fruits_a.txt
grep -Tn 1 <(seq 12)
grep -Tn 5 - < data.csv
seq 12 | grep -Tn 1
grep -Tc a txt/fruits_a.txt
grep -Tn -A1 apple txt/fruits_a.txt
grep -rTn TODO src | sort
""".strip("\n").split("\n")

COMMANDS += r"""
ln data.csv hard.csv && find . -samefile data.csv | sort
find -L . -samefile README.md | sort
find . -samefile nothere; echo $?
find . -samefile; echo $?
""".strip("\n").split("\n")

COMMANDS += r"""
touch 'a b' "it's" $'tab\tx' $'nl\ny' 'back\sl' 'q"x' && ls -Q
touch 'a b' "it's" $'tab\tx' 'back\sl' 'q"x' && ls -b
touch 'a b' "it's" 'back\sl' 'q"x' && ls --quoting-style=shell
touch 'a b' "it's" && ls --quoting-style=shell-always txt . | head -5
ls -lgGQ docs
ls -N docs
ls -Qm txt
ls -QC -w 50 txt
""".strip("\n").split("\n")

# Fourth round: archives and compressors, shell glue (fds, loops, expansions, tests).
COMMANDS += r"""
exec 3>out.txt; echo via-fd >&3; exec 3>&-; cat out.txt
echo a > f1; echo b >> f1; cat f1
: > empty.txt; wc -c empty.txt
echo x | tee f2 f3 >/dev/null; cat f2 f3
cat < nothere; echo $?
echo $'a\nb' | while read l; do echo "[$l]"; done
export FOO=bar; bash -c 'echo $FOO'
env FOO=1 sh -c 'echo $FOO'
let x=2*3; echo $x
echo -e "col1\tcol2\nv1\tv2" | column -t
[[ "abc123" =~ ^[a-z]+([0-9]+)$ ]] && echo "${BASH_REMATCH[1]}"
[ 1 -eq ]; echo $?
[ a == b ]; echo $?
declare -i n=3+4; echo $n
echo "$(( $(date -u -d @86400 +%s) / 3600 ))"
xargs < txt/fruits_a.txt -n 10 echo
find . -name '*.md' -exec sh -c 'wc -l < "$1"' _ {} \; | sort -n
grep -l TODO $(find src -name '*.py') | sort
wc -l $(find . -name '*.cfg') | tail -1
for f in $(ls txt); do echo "$f"; done | head -3
ls txt | while read -r f; do echo "${f%.txt}"; done
find . -name '*.json' | while read -r f; do jq -c 'keys' "$f"; done | sort
cd docs && cat "release notes.txt" | head -1; cd ..; pwd
pushd src >/dev/null && pwd && popd >/dev/null && pwd
zip -qr z.zip src && unzip -Z1 z.zip | sort
zip -qr z.zip src; echo $?; ls z.zip
tar cf a.tar txt && tar rf a.tar data.csv && tar tf a.tar | sort
zip -qr z.zip src && unzip -Z1 z.zip | sort
zip -q z.zip data.csv README.md && unzip -Z -1 z.zip
tar cf a.tar txt && tar rf a.tar data.csv && tar tf a.tar | sort
tar rf new.tar README.md && tar tf new.tar
tar cf a.tar txt/ages.txt && tar uf a.tar txt/ages.txt data.csv && tar tf a.tar
tar czf a.tgz txt && tar rzf a.tgz data.csv; echo $?
tar cf a.tar docs && tar -rvf a.tar Makefile && tar tvf a.tar | wc -l
tar -czvf src.tgz src | sort
tar -cvf d.tar docs txt/ages.txt | sort
tar czf s.tgz src && mkdir x && tar -xzvf s.tgz -C x | sort
tar czf s.tgz src && tar xzf s.tgz --strip-components=1 -C /tmp 2>&1 | head -1; mkdir y && tar xzf s.tgz --strip-components=2 -C y && ls y
tar cf a.tar txt && tar rf a.tar data.csv && tar tf a.tar | sort
tar cf a.tar --exclude='*.py' src && tar tf a.tar | sort
tar czf - src | tar tzf - | wc -l
tar cjf b.tbz docs && tar tjf b.tbz | sort
tar cJf b.txz docs && tar tJf b.txz | sort
tar caf auto.tar.gz docs && file auto.tar.gz | cut -d, -f1
tar tf data.csv; echo $?
tar; echo $?
tar cf empty.tar; echo $?
tar czf t.tgz nothere; echo $?
gzip -k data.csv && ls data.csv* && gzip -l data.csv.gz | tail -1 | awk '{print $2, $4}'
gzip -c data.csv | gunzip | head -2
gzip data.csv && ls data.csv* && zcat data.csv.gz | wc -l
gzip -d nothere.gz; echo $?
gzip -9 -c README.md | wc -c | awk '{print ($1 > 0)}'
echo hello | gzip | gzip -d
bzip2 -c data.csv | bunzip2 | tail -1
xz -c data.csv | xz -d | head -1
zip -q z.zip data.csv README.md && unzip -l z.zip | tail -1
zip -qr z.zip src && unzip -Z1 z.zip | sort
zip -q z.zip data.csv && mkdir u && unzip -q z.zip -d u && ls u
set -e; false; echo notreached
set -o pipefail; false | true; echo $?
cat data.csv | head -1; echo "${PIPESTATUS[@]}"
ls nothere 2>&1 >/dev/null | wc -l
{ echo out; echo err >&2; } 2>&1 | sort
echo "$(echo inner) outer"
x=5; (( x > 3 )) && echo big
echo $((0x1F)) $((2**10)) $((7/2)) $((-7%3))
a=(one two three); echo "${a[-1]} ${#a[@]} ${a[*]:1}"
s="Hello World"; echo "${s,,} ${s// /_} ${s:6} ${#s}"
f=path/to/file.tar.gz; echo "${f##*/} ${f%%.*} ${f%.*} ${f#*.}"
echo {1..5} {a..c} {01..03}
echo file{A,B}.txt
for i in $(seq 3); do printf '%d,' $i; done; echo
i=0; while [ $i -lt 3 ]; do i=$((i+1)); done; echo $i
until false; do echo once; break; done
f() { echo "args: $# $1"; return 3; }; f a b; echo $?
trap 'echo bye' EXIT; echo hi
printf -v out '%05d' 42; echo $out
read -r a b <<< 'x y z'; echo "$b"
echo "${UNSET:-default} ${UNSET:=set} $UNSET"
echo ${#PATH} > /dev/null && echo ok
shopt -s nullglob; echo *.nothing
shopt -s globstar; echo src/**/*.py
echo src/*/c*.py
ls *.{json,csv}
echo [a-d]*
""".strip("\n").split("\n")

COMMANDS += r"""
printf 'id,name\n1,al ice\n2,"b"\n3,\n' | column -J -s, -N a,b
printf 'id,name\n1,al ice\n2,"b"\n3,\n' | column -t -s, -N A,B
printf 'id,name\n' | column -J -s, -N a,b -n mytab
column -J -s, data.csv; echo $?
printf '1,x,y\n' | column -t -s, -N a,b
printf '1\n' | column -t -s, -N a,b,c
printf '1\n' | column -J -s, -N a,b,c
column -t -N A,B conf/new.cfg
""".strip("\n").split("\n")

# Fifth round: error paths agents hit (missing operands, bad options, missing files).
COMMANDS += r"""
head -n abc data.csv; echo $?
tail -n x data.csv; echo $?
cut -f data.csv; echo $?
sort -k 0 data.csv; echo $?
seq a; echo $?
wc -x data.csv; echo $?
ls -z; echo $?
cp data.csv; echo $?
mv data.csv; echo $?
mkdir src; echo $?
rm src; echo $?
rmdir nothere; echo $?
grep; echo $?
sed; echo $?
awk; echo $?
xargs echo <<< "it's"; echo $?
find . -name; echo $?
find . -bogus; echo $?
tar; echo $?
jq; echo $?
diff data.csv; echo $?
head nothere data.csv; echo $?
cat src; echo $?
grep -r TODO nothere src/myapp/cli.py; echo $?
sort -t, -k5 data.csv | head -2
uniq nothere; echo $?
tr -d; echo $?
touch nodir/x; echo $?
ln -s data.csv data.csv; echo $?
cp -r src src; echo $?
mv src src/inner; echo $?
chmod 999 data.csv; echo $?
chmod u+x nothere; echo $?
date -d garbage; echo $?
expr; echo $?
expr 1 +; echo $?
printf; echo $?
echo $((1/0)); echo $?
basename; echo $?
dirname; echo $?
stat; echo $?
du nothere; echo $?
md5sum nothere; echo $?
base64 nothere; echo $?
wc -l nothere data.csv; echo $?
nl nothere; echo $?
paste nothere; echo $?
join txt/names.txt; echo $?
comm txt/fruits_a.txt; echo $?
od nothere; echo $?
xxd nothere; echo $?
seq 1 0 5 | head -2; echo $?
sed -i 's/a/b/' nothere; echo $?
sed -n '1p;' -e 'x' data.csv; echo $?
sed 's/a/b/q' data.csv; echo $?
sed -e 'p' -e '{' data.csv; echo $?
awk '{print $1' data.csv; echo $?
awk 'BEGIN { x = 1 / 0 }'; echo $?
awk -F data.csv; echo $?
jq -r . nothere.json data.csv; echo $?
jq --arg x; echo $?
grep -E 'a{1,2' data.csv; echo $?
find . -newer nothere; echo $?
find . -type z; echo $?
find . -maxdepth x; echo $?
xargs -n 0 echo < /dev/null; echo $?
sort -n -k2,2x data.csv; echo $?
cut -d, -f2-1 data.csv; echo $?
cut -c0 data.csv; echo $?
head -c; echo $?
cd src/myapp/cli.py; echo $?
source nothere.sh; echo $?
. ; echo $?
export 1x=2; echo $?
unset -v; echo $?
readonly r=1; r=2; echo $?
local x=1; echo $?
shift 5; echo $?
return; echo $?
break; echo $?
awk; echo $?
awk -F data.csv; echo $?
awk -v x=1; echo $?
awk --; echo $?
awk -f; echo $?
awk -v; echo $?
jq -r . nothere.json data.csv; echo $?
jq . nothere.json config.json | head -1; echo $?
xargs echo <<< "it's"; echo $?
printf 'a b\nit'"'"'s\nc\n' | xargs echo; echo $?
printf 'a b c d\nit'"'"'s\n' | xargs -n2 echo; echo $?
echo '"abc' | xargs -n1 echo; echo $?
echo | xargs echo x; echo $?
""".strip("\n").split("\n")


def _join_heredocs(lines: list[str]) -> list[str]:
    """Glue a here-document's body back onto the line that opened it."""
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if "<<'EOF2'" in line:
            j = i + 1
            while lines[j] != "EOF2":
                j += 1
            out.append("\n".join(lines[i:j + 1]))
            i = j + 1
            continue
        out.append(line)
        i += 1
    return out


COMMANDS = list(dict.fromkeys(_join_heredocs(COMMANDS)))


# --------------------------------------------------------------------------- running
REAL_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "TERM": "dumb", "TZ": "UTC"}


def materialise(root: str) -> None:
    """Write the tree under the real directory ``root`` with the fixed mtimes."""
    import os

    for d in DIRS:
        os.makedirs(os.path.join(root, d), exist_ok=True)
    for rel, data in FILES.items():
        p = os.path.join(root, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "wb") as f:
            f.write(data)
    for rel, target in SYMLINKS.items():
        os.symlink(target, os.path.join(root, rel))
    for rel in list(FILES) + DIRS + [""]:
        t = T_LATE if rel in LATE else T0
        os.utime(os.path.join(root, rel) if rel else root, (t, t))
    for rel in SYMLINKS:
        os.utime(os.path.join(root, rel), (T0, T0), follow_symlinks=False)


def materialise_sandbox(sb) -> None:  # noqa: ANN001 - agentic_bash Sandbox
    """Write the same tree into the sandbox's /workspace through write_file (plus the VFS for
    symlinks and mtimes, which write_file cannot express)."""
    fs = sb._ex.fs
    for d in DIRS:
        if not fs.exists("/workspace/" + d):
            fs.mkdir("/workspace/" + d)
    for rel, data in FILES.items():
        sb.write_file(rel, data)
    for rel, target in SYMLINKS.items():
        fs.symlink(target, "/workspace/" + rel)
    for rel in list(FILES) + DIRS + [""]:
        t = T_LATE if rel in LATE else T0
        fs.utime("/workspace/" + rel if rel else "/workspace", (t, t))
    for rel in SYMLINKS:
        fs.utime("/workspace/" + rel, (T0, T0), follow_symlinks=False)


def run_real(cmd: str, timeout: float = 20) -> tuple[bytes, bytes, int]:
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory(prefix="agentcorpus") as base:
        import os

        root = os.path.join(base, "workspace")
        os.mkdir(root)
        materialise(root)
        env = dict(REAL_ENV, HOME="/home/user", USER="user", PWD=root)
        p = subprocess.run(["bash", "-c", cmd], executable="/usr/bin/bash", cwd=root, env=env, capture_output=True,
                           stdin=subprocess.DEVNULL, timeout=timeout)
        rootb = root.encode()
        return p.stdout.replace(rootb, b"/workspace"), p.stderr.replace(rootb, b"/workspace"), p.returncode


def run_virtual(cmd: str) -> tuple[bytes, bytes, int]:
    from agentic_bash import Sandbox

    sb = Sandbox(isolation="virtual")
    try:
        materialise_sandbox(sb)
        r = sb.run(cmd)
        return r.stdout_bytes, r.stderr_bytes, r.exit_code
    finally:
        sb.close()
