"""Smaller coreutils agents reach for: factor, sum, tsort, unlink, link, nice, stdbuf, dd."""

from __future__ import annotations

import os
import re
import time

from ._args import OptError, open_input, parse_opts, quote, quotef, try_help
from .base import CommandContext, command, strerror
from .sysutils import _q, _run


def _qf(s: str) -> str:
    """GNU's quoteaf() for file names: always ASCII single quotes."""
    return "'" + s.replace("'", "'\\''") + "'"


def _w(ctx: CommandContext, s: str) -> None:
    ctx.stdout.write(s.encode("utf-8", "surrogateescape"))


def _try(ctx: CommandContext) -> None:
    ctx.stderr.write(f"Try '{ctx.name or 'cmd'} --help' for more information.\n".encode())


def _factors(n: int, ctx: CommandContext) -> list[int]:
    """The prime factors of ``n``, ascending: trial division by small primes, then
    Miller-Rabin and Pollard-Brent rho for what is left (GNU factors 128-bit numbers at once;
    trial division alone ran past the deadline)."""
    out = []
    for p in (2, 3):
        while n % p == 0:
            out.append(p)
            n //= p
    f, step = 5, 2
    while f * f <= n and f < 10000:
        while n % f == 0:
            out.append(f)
            n //= f
        f += step
        step = 6 - step
    if n > 1:
        big: list[int] = []
        _rho_split(n, big, ctx)
        out += sorted(big)
    return out


_MR_BASES = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67, 71)


def _is_prime(n: int) -> bool:
    """Miller-Rabin with the first 20 primes as bases (deterministic below 3.3e24; beyond,
    a composite passing all twenty is not known)."""
    if n < 2:
        return False
    for p in _MR_BASES:
        if n % p == 0:
            return n == p
    d, r = n - 1, 0
    while d % 2 == 0:
        d //= 2
        r += 1
    for a in _MR_BASES:
        x = pow(a, d, n)
        if x in (1, n - 1):
            continue
        for _ in range(r - 1):
            x = x * x % n
            if x == n - 1:
                break
        else:
            return False
    return True


def _rho_split(n: int, out: list[int], ctx: CommandContext) -> None:
    """Append the prime factors of ``n`` (no factor below 10000) to ``out``."""
    import math
    stack = [n]
    while stack:
        m = stack.pop()
        if m == 1:
            continue
        if _is_prime(m):
            out.append(m)
            continue
        r = math.isqrt(m)
        if r * r == m:
            stack += [r, r]
            continue
        c = 1
        while True:
            # Brent's cycle finding with batched gcds
            y, q, g, k, x, ys = 2, 1, 1, 1, 2, 2
            steps = 0
            while g == 1:
                x = y
                for _ in range(k):
                    y = (y * y + c) % m
                j = 0
                while j < k and g == 1:
                    ys = y
                    for _ in range(min(128, k - j)):
                        y = (y * y + c) % m
                        q = q * abs(x - y) % m
                    g = math.gcd(q, m)
                    j += 128
                    steps += 128
                    if steps & 0xFFFF < 128:
                        ctx.budget.check()
                k *= 2
            if g == m:
                g = 1
                while g == 1:
                    ys = (ys * ys + c) % m
                    g = math.gcd(abs(x - ys), m)
            if g != m:
                break
            c += 1
        stack += [g, m // g]


@command("factor", usage="factor [NUMBER]...", help="Print the prime factors of each NUMBER.")
def factor(ctx: CommandContext, argv: list[str]) -> int:
    try:
        _, args = parse_opts(ctx, argv, "", {}, status=1)  # 9.1's factor has no options: -1 is one
    except OptError as e:
        return e.status
    status = 0

    def one(tok: str) -> None:
        nonlocal status
        t = tok.strip(" \t")
        if t.startswith("+"):
            t = t[1:]
        if not t.isdigit() or not t.isascii():
            ctx.stderr.write(f"factor: {_q(ctx, tok)} is not a valid positive integer\n".encode())
            status = 1
            return
        n = int(t)
        _w(ctx, f"{n}:" + "".join(f" {p}" for p in (_factors(n, ctx) if n > 1 else [])) + "\n")

    if args:
        for a in args:
            one(a)
    else:
        for line in ctx.stdin:
            for tok in line.decode("utf-8", "surrogateescape").split():
                one(tok)
    return status


@command("sum", usage="sum [-rs] [FILE]...", help="Checksum and count the blocks in a file.")
def sum_(ctx: CommandContext, argv: list[str]) -> int:
    try:
        opts, files = parse_opts(ctx, argv, "rs", {"sysv": "s"}, status=1)
    except OptError as e:
        return e.status
    sysv = False
    for k, _ in opts:
        sysv = k == "s"
    status = 0
    for fn in files or ["-"]:
        try:
            with open_input(ctx, fn) as f:
                data = f.read()
        except OSError as e:
            ctx.stderr.write(f"sum: {quotef(fn)}: {strerror(e)}\n".encode("utf-8", "surrogateescape"))
            status = 1
            continue
        name = "" if fn == "-" and not files else f" {fn}"
        if sysv:
            s = sum(data) & 0xFFFFFFFF
            r = (s & 0xFFFF) + (s >> 16)
            r = (r & 0xFFFF) + (r >> 16)
            _w(ctx, f"{r} {-(-len(data) // 512)}{name}\n")
        else:
            ck = 0
            for b in data:
                ck = (ck >> 1) + ((ck & 1) << 15)
                ck = (ck + b) & 0xFFFF
            _w(ctx, f"{ck:05d} {-(-len(data) // 1024):5d}{name}\n")
    return status


@command("tsort", usage="tsort [FILE]", help="Topological sort of the pairs in FILE.")
def tsort(ctx: CommandContext, argv: list[str]) -> int:
    try:
        _, args = parse_opts(ctx, argv, "", {}, status=1)
    except OptError as e:
        return e.status
    if len(args) > 1:
        ctx.error(f"extra operand {quote(ctx, args[1])}")
        try_help(ctx)
        return 1
    fn = args[0] if args else "-"
    try:
        with open_input(ctx, fn) as f:
            toks = f.read().decode("utf-8", "surrogateescape").split()
    except IsADirectoryError:
        toks = []  # GNU tsort reads a directory as empty input
    except OSError as e:
        ctx.stderr.write(f"tsort: {fn}: {strerror(e)}\n".encode("utf-8", "surrogateescape"))
        return 1
    if len(toks) % 2:
        ctx.stderr.write(f"tsort: {fn}: input contains an odd number of tokens\n".encode())
        return 1
    order: list[str] = []
    succ: dict[str, list[str]] = {}
    indeg: dict[str, int] = {}
    for i in range(0, len(toks), 2):
        a, b = toks[i], toks[i + 1]
        for x in (a, b):
            if x not in indeg:
                indeg[x] = 0
                succ[x] = []
                order.append(x)
        if a != b:
            succ[a].append(b)
            indeg[b] += 1
    # GNU walks its tree of names; for the usual small inputs, insertion order with a queue
    # matches it.
    queue = [x for x in order if indeg[x] == 0]
    out: list[str] = []  # stdout is block-buffered (see the loop report below)
    done = 0
    while queue:
        x = queue.pop(0)
        out.append(x + "\n")
        done += 1
        for y in succ[x]:
            indeg[y] -= 1
            if indeg[y] == 0:
                queue.append(y)
    if done < len(order):
        # GNU reports through error(), which flushes what stdout holds first
        _w(ctx, "".join(out))
        out = []
        ctx.stderr.write(f"tsort: {fn}: input contains a loop:\n".encode())
        for x in order:
            if indeg[x] > 0:
                ctx.stderr.write(f"tsort: {x}\n".encode())
                out.append(x + "\n")
        _w(ctx, "".join(out))
        return 1
    _w(ctx, "".join(out))
    return 0


@command("unlink", usage="unlink FILE", help="Call the unlink function to remove FILE.")
def unlink(ctx: CommandContext, argv: list[str]) -> int:
    args = [a for a in argv[1:] if a != "--"]
    if not args:
        ctx.stderr.write(b"unlink: missing operand\n")
        _try(ctx)
        return 1
    if len(args) > 1:
        ctx.stderr.write(f"unlink: extra operand {_q(ctx, args[1])}\n".encode())
        _try(ctx)
        return 1
    try:
        ctx.fs.unlink(ctx.path(args[0]))
    except OSError as e:
        ctx.stderr.write(f"unlink: cannot unlink {_qf(args[0])}: {strerror(e)}\n".encode())
        return 1
    return 0


@command("link", usage="link FILE1 FILE2", help="Create a hard link FILE2 to FILE1.")
def link(ctx: CommandContext, argv: list[str]) -> int:
    args = [a for a in argv[1:] if a != "--"]
    if len(args) < 2:
        msg = "missing operand" if not args else f"missing operand after {_q(ctx, args[0])}"
        ctx.stderr.write(f"link: {msg}\n".encode())
        _try(ctx)
        return 1
    if len(args) > 2:
        ctx.stderr.write(f"link: extra operand {_q(ctx, args[2])}\n".encode())
        _try(ctx)
        return 1
    try:
        ctx.fs.link(ctx.path(args[0]), ctx.path(args[1]))
    except OSError as e:
        ctx.stderr.write(f"link: cannot create link {_qf(args[1])} to {_qf(args[0])}: "
                         f"{strerror(e)}\n".encode())
        return 1
    return 0


@command("nice", usage="nice [OPTION] [COMMAND [ARG]...]", help="Run COMMAND (the niceness is not changed here).")
def nice(ctx: CommandContext, argv: list[str]) -> int:
    args = argv[1:]
    i = 0
    adj: str | None = None
    while i < len(args):
        a = args[i]
        if a == "--":
            i += 1
            break
        if a in ("-n", "--adjustment"):
            if i + 1 >= len(args):
                ctx.stderr.write(b"nice: option requires an argument -- 'n'\n")
                _try(ctx)
                return 125
            adj = args[i + 1]
            i += 2
        elif a.startswith(("-n", "--adjustment=")) or (a[:1] == "-" and a[1:].lstrip("-").isdigit()):
            adj = a.split("=", 1)[1] if a.startswith("--") else a[2:] if a.startswith("-n") else a[1:]
            i += 1
        elif a in ("--help", "--version"):
            try:
                parse_opts(ctx, [argv[0], a], "", {})
            except OptError as e:
                return e.status
        elif a.startswith("-") and a != "-":
            ctx.stderr.write(f"nice: invalid option -- '{a[1]}'\n".encode("utf-8", "surrogateescape")
                             if not a.startswith("--") else f"nice: unrecognized option '{a}'\n".encode())
            _try(ctx)
            return 125
        else:
            break
    if adj is not None and not re.fullmatch(r"[ \t]*[-+]?\d+", adj):
        ctx.error(f"invalid adjustment {quote(ctx, adj)}")
        return 125
    rest = args[i:]
    if not rest:
        if adj is not None:
            ctx.error("a command must be given with an adjustment")
            _try(ctx)
            return 125
        _w(ctx, f"{os.getpriority(os.PRIO_PROCESS, 0)}\n")   # the process's own, as GNU nice
        return 0
    return _run(ctx, rest, who="nice")


@command("stdbuf", usage="stdbuf OPTION... COMMAND", help="Run COMMAND (buffering is already per call here).")
def stdbuf(ctx: CommandContext, argv: list[str]) -> int:
    args = argv[1:]
    i = 0
    while i < len(args) and args[i].startswith("-") and args[i] != "--":
        i += 2 if args[i] in ("-i", "-o", "-e") else 1
    if i < len(args) and args[i] == "--":
        i += 1
    if i >= len(args):
        ctx.stderr.write(b"stdbuf: missing operand\n")
        _try(ctx)
        return 125
    return _run(ctx, args[i:], who="stdbuf")


_SUFFIX = {"c": 1, "w": 2, "b": 512, "k": 1024, "K": 1024, "M": 1024 ** 2, "G": 1024 ** 3, "kB": 1000,
           "KB": 1000, "MB": 1000 ** 2, "GB": 1000 ** 3, "KiB": 1024, "MiB": 1024 ** 2, "GiB": 1024 ** 3}


def _dd_num(s: str) -> int | None:
    total = 1
    for part in s.split("x"):
        j = len(part)
        while j and not part[j - 1].isdigit():
            j -= 1
        num, suf = part[:j], part[j:]
        if not num.isdigit() or (suf and suf not in _SUFFIX):
            return None
        total *= int(num) * (_SUFFIX[suf] if suf else 1)
    return total


def _human(n: float, base: int) -> str:
    units = ["kB", "MB", "GB", "TB"] if base == 1000 else ["KiB", "MiB", "GiB", "TiB"]
    for u in units:
        n /= base
        if n < base or u == units[-1]:
            return f"{n:.1f} {u}" if n < 10 else f"{n:.0f} {u}"
    return ""


_DD_FLAGS = frozenset("append direct directory dsync sync fullblock nonblock noatime nocache noctty "
                      "nofollow count_bytes skip_bytes seek_bytes".split())
_DD_SYMBOLS = {
    "conv": ("conversion", frozenset("ascii ebcdic ibm block unblock lcase ucase sparse swab sync excl "
                                     "nocreat notrunc noerror fdatasync fsync".split())),
    "status": ("status level", frozenset(("none", "noxfer", "progress"))),
    "iflag": ("input flag", _DD_FLAGS),
    "oflag": ("output flag", _DD_FLAGS),
}


@command("dd", usage="dd [OPERAND]...", help="Copy a file, converting and formatting according to the operands.")
def dd(ctx: CommandContext, argv: list[str]) -> int:
    ops: dict[str, str] = {}
    for a in argv[1:]:
        k, eq, v = a.partition("=")
        if not eq or k not in ("if", "of", "bs", "ibs", "obs", "count", "skip", "seek", "status", "conv",
                               "iflag", "oflag", "cbs"):
            ctx.stderr.write(f"dd: unrecognized operand {_q(ctx, a)}\n".encode("utf-8", "surrogateescape"))
            _try(ctx)
            return 1
        ops[k] = v
        # GNU checks each symbolic list as it parses the operand
        allowed = _DD_SYMBOLS.get(k)
        if allowed is not None:
            for w in v.split(","):
                if w not in allowed[1]:
                    ctx.stderr.write(f"dd: invalid {allowed[0]}: {_q(ctx, w)}\n".encode("utf-8", "surrogateescape"))
                    _try(ctx)
                    return 1
    nums: dict[str, int] = {}
    for k in ("bs", "ibs", "obs", "count", "skip", "seek"):
        if k in ops:
            n = _dd_num(ops[k])
            if n is None or (k in ("bs", "ibs", "obs") and n == 0):
                ctx.stderr.write(f"dd: invalid number: {_q(ctx, ops[k])}\n".encode())
                return 1
            nums[k] = n
    ibs = nums.get("bs", nums.get("ibs", 512))
    obs = nums.get("bs", nums.get("obs", 512))
    convs = set(filter(None, ops.get("conv", "").split(",")))
    start = time.monotonic()
    try:
        src = open_input(ctx, ops["if"]) if "if" in ops else ctx.stdin
    except OSError as e:
        ctx.stderr.write(f"dd: failed to open {_qf(ops['if'])}: {strerror(e)}\n".encode())
        return 1
    if ibs > _DD_MAX_BLOCK(ctx) or obs > _DD_MAX_BLOCK(ctx):
        n = max(ibs, obs)
        which = "input" if ibs >= obs else "output"
        ctx.stderr.write(f"dd: memory exhausted by {which} buffer of size {n} bytes ({_human(n, 1024)})\n".encode())
        if "if" in ops:
            src.close()
        return 1
    full = part = 0
    skip = nums.get("skip", 0)
    count = nums.get("count")
    out = None
    written = 0
    tail = b""
    err: str | None = None
    with src:
        # (streamed block by block: dd of an endless input held every block it read, 444 MiB
        # in 2 s of `dd if=/dev/zero of=/dev/null`)
        for _ in range(skip):
            ctx.budget.check()
            if not src.read(ibs):
                break
        try:
            if "of" in ops:
                path = ctx.path(ops["of"])
                seek = nums.get("seek", 0) * obs
                old = b""
                if ctx.fs.exists(path) and ("notrunc" in convs or seek):
                    with ctx.fs.open(path, "rb") as f:
                        old = f.read()
                if "notrunc" in convs:
                    tail = old[seek:]
                out = ctx.fs.open(path, "wb")
                if seek:
                    out.write(old[:seek].ljust(seek, b"\0"))
                del old
            else:
                out = ctx.stdout
        except OSError as e:
            ctx.stderr.write(f"dd: failed to open {_qf(ops.get('of', '-'))}: {strerror(e)}\n".encode())
            if out is not None and out is not ctx.stdout:
                out.close()
            return 1
        try:
            while count is None or full + part < count:
                blk = src.read(ibs)
                if not blk:
                    break
                ctx.budget.check()
                if len(blk) == ibs:
                    full += 1
                else:
                    part += 1
                if "ucase" in convs:
                    blk = blk.upper()
                if "lcase" in convs:
                    blk = blk.lower()
                try:
                    out.write(blk)
                except OSError as e:
                    err = f"dd: error writing {_qf(ops.get('of', 'standard output'))}: {strerror(e)}\n"
                    break
                written += len(blk)
            if err is None and tail[written:]:
                out.write(tail[written:])
        finally:
            if out is not ctx.stdout:
                try:
                    out.close()
                except OSError:
                    pass
    if err is not None:
        ctx.stderr.write(err.encode())
    n = written
    status = ops.get("status", "")
    if status not in ("none", "noxfer"):
        ofull, opart = divmod(n, obs)
        msg = f"{full}+{part} records in\n{ofull}+{1 if opart else 0} records out\n"
        el = max(time.monotonic() - start, 1e-6)
        rate = n / el
        size = f"{n} bytes" if n < 1000 else f"{n} bytes ({_human(n, 1000)}, {_human(n, 1024)})"
        if n == 1:
            size = "1 byte"
        msg += f"{size} copied, {el:.6g} s, {_human(rate, 1000) if rate >= 1000 else f'{rate:.0f} B'}/s\n"
        ctx.stderr.write(msg.encode())
    elif status == "noxfer":
        ofull, opart = divmod(n, obs)
        ctx.stderr.write(f"{full}+{part} records in\n{ofull}+{1 if opart else 0} records out\n".encode())
    return 0 if err is None else 1


def _DD_MAX_BLOCK(ctx: CommandContext) -> int:  # noqa: N802
    """The largest block dd reads or writes at once (GNU allocates it; past it: "memory
    exhausted by input buffer"): a quarter of what a command may hold."""
    from ._args import held_cap
    return held_cap(ctx) // 4
