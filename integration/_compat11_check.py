"""Real toolchains in one default Sandbox() (run as root or as the test user): each named scenario's script, its tools probed first; prints JSON."""

from __future__ import annotations

import json
import sys
import traceback

from agentic_bash import Limits, Sandbox

SYSINFO = r"""
python3 - <<'EOF'
import ctypes, errno, struct
S = struct.Struct("=q3Q6QHH4xQQI4x")
libc = ctypes.CDLL(None, use_errno=True)
buf = ctypes.create_string_buffer(S.size)
print("rc", libc.sysinfo(buf))
v = S.unpack(buf.raw)
print("total", v[4] * v[14], "free", v[5] * v[14], "swap", v[8] * v[14])
print("null", libc.sysinfo(None), errno.errorcode.get(ctypes.get_errno()))
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                      ctypes.c_int, ctypes.c_long)
ro = libc.mmap(None, 4096, 1, 0x22, -1, 0)   # PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS
print("readonly", libc.sysinfo(ctypes.c_void_p(ro)), errno.errorcode.get(ctypes.get_errno()),
      ctypes.string_at(ro, 112) == bytes(112))
import os
print("phys", os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
EOF
"""

JAVA = r"""
mkdir -p /workspace/j && cd /workspace/j
cat > Hello.java <<'EOF'
import java.util.*;
public class Hello {
  public static void main(String[] a) {
    long init = Runtime.getRuntime().totalMemory();
    List<Integer> l = new ArrayList<>();
    for (int i = 0; i < 200000; i++) l.add(i);
    System.out.println("hello " + l.size() + " maxheap " + Runtime.getRuntime().maxMemory()
                       + " initheap " + init);
  }
}
EOF
cat > Hold.java <<'EOF'
import java.util.*;
public class Hold {
  public static void main(String[] a) {
    List<byte[]> l = new ArrayList<>();
    int n = Integer.parseInt(a[0]);
    try {
      for (int i = 0; i < n; i++) l.add(new byte[1 << 20]);
      System.out.println("held " + l.size());
    } catch (OutOfMemoryError e) {
      l = null;
      System.out.println("OutOfMemoryError");
    }
  }
}
EOF
java -version 2>&1; echo "version=$?"
javac Hello.java Hold.java; echo "javac=$?"
java Hello; echo "run=$?"
java Hold 4096; echo "hold4096=$?"
ls hs_err* 2>/dev/null
"""

CC = r"""
mkdir -p /workspace/c && cd /workspace/c
cat > hello.c <<'EOF'
#include <stdio.h>
#include <stdlib.h>
int main(void) { char *p = malloc(1 << 20); printf("c ok %d\n", p != NULL); return 0; }
EOF
printf 'hello: hello.c\n\t$(CC) -O2 -o $@ $<\n' > Makefile
make -s; echo "make=$?"
./hello
"""

GIT = r"""
mkdir -p /workspace/g && cd /workspace/g && git init -q . && git config user.email a@example.com &&
git config user.name A && echo hi > f && git add f && git commit -qm first && git log --format=%s
echo "git=$?"
"""

VENV_PIP = r"""
cd /workspace && python3 -m venv v && v/bin/pip install -q --disable-pip-version-check termcolor
echo "pip=$?"
v/bin/python -c 'import termcolor; print("imported", termcolor.__name__)'
"""

SQLITE = r"""
sqlite3 /tmp/t.db 'create table t(a); insert into t values (1),(2),(3); select sum(a) from t;'
"""

CURL = r"""
mkdir -p /tmp/www && echo served > /tmp/www/f && cd /tmp/www
python3 -m http.server 8765 --bind 127.0.0.1 >/dev/null 2>&1 &
for i in $(seq 200); do curl -s -o /dev/null http://127.0.0.1:8765/f && break; sleep 0.1; done
curl -s http://127.0.0.1:8765/f; echo "curl=$?"
kill %1
"""

# name -> (tools it needs inside the sandbox, script)
SCENARIOS: dict[str, tuple[tuple[str, ...], str]] = {
    "sysinfo": (("python3",), SYSINFO),
    "java": (("java", "javac"), JAVA),
    "cc": (("cc", "make"), CC),
    "git": (("git",), GIT),
    "venv_pip": (("python3",), VENV_PIP),
    "sqlite": (("sqlite3",), SQLITE),
    "curl": (("curl", "python3"), CURL),
}


def main(names: list[str]) -> None:
    out: dict = {}
    try:
        with Sandbox() as sb:
            out["limits"] = {"max_memory_bytes": sb.limits.max_memory_bytes,
                             "max_process_memory": sb.limits.max_process_memory}
            for name in names:
                tools, script = SCENARIOS[name]
                probe = sb.run(" && ".join(f"command -v {t} >/dev/null" for t in tools))
                if probe.exit_code != 0:
                    out[name] = None
                    continue
                r = sb.run(script, timeout=240)
                out[name] = [r.stdout, r.stderr, r.exit_code]
        if "sysinfo" in names:
            # no per-program cap: a process sees the sandbox's whole memory
            with Sandbox(limits=Limits(max_process_memory=None)) as sb:
                r = sb.run(SYSINFO)
                out["sysinfo_nocap"] = [r.stdout, r.stderr, r.exit_code]
    except Exception:  # noqa: BLE001
        out["error"] = traceback.format_exc()
    print("\n@@JSON@@" + json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1:])
