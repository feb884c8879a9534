"""System-view commands with virtual values from ``ctx.info``: env, date, uname, sleep, timeout, ..."""

from __future__ import annotations

import calendar
import datetime as _dt
import io
import re
import stat as _stat
import threading
import time as _time
from typing import Callable

from ._args import OptError, parse_opts, quoteaf, run_command
from .base import CommandContext, command, strerror

try:  # zoneinfo needs tzdata; fall back to UTC when a zone is unknown
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError
except ImportError:  # pragma: no cover
    ZoneInfo = None  # type: ignore[assignment,misc]
    ZoneInfoNotFoundError = Exception  # type: ignore[assignment,misc]

__all__ = ["format_date", "parse_date"]


def _utf8(ctx: CommandContext) -> bool:
    for k in ("LC_ALL", "LC_MESSAGES", "LANG"):
        v = ctx.env.get(k)
        if v:
            return "utf-8" in v.lower() or "utf8" in v.lower()
    return False


def _q(ctx: CommandContext, s: str) -> str:
    """GNU's quote(): curly quotes in a UTF-8 locale, ASCII ones in C."""
    return f"\u2018{s}\u2019" if _utf8(ctx) else f"'{s}'"


def _w(ctx: CommandContext, s: str) -> None:
    ctx.stdout.write(s.encode("utf-8", "surrogateescape"))


def _try(ctx: CommandContext, name: str, status: int) -> int:
    ctx.stderr.write(f"Try '{name} --help' for more information.\n".encode())
    return status


class _Opts:
    """getopt for these tools: ``spec`` letters, ``:`` after one that takes a value, ``?``
    after one with an optional (attached) value; ``longs`` maps a long name to a letter or
    key with the same suffixes.  GNU tools (``gnu=True``) go through parse_opts (glibc's
    messages, --help/--version); the others keep this tool-neutral parser."""

    def __init__(self, ctx: CommandContext, argv: list[str], spec: str, longs: dict[str, str] | None = None,
                 stop_at_operand: bool = True, status: int = 1, gnu: bool = True) -> None:
        self.opts: list[tuple[str, str | None]] = []
        self.args: list[str] = []
        self.error = False
        self.status: int | None = None  # set when parse_opts already reported (or --help)
        self._ctx = ctx
        self._name = argv[0]
        if gnu:
            short = spec.replace("?", "::")
            if stop_at_operand and not short.startswith("+"):
                short = "+" + short
            glongs: dict[str, str | None] = {}
            for k, t in (longs or {}).items():
                base = t.rstrip(":?")
                if len(base) == 1 and base in spec:
                    glongs[k] = base
                else:
                    glongs[k] = base + ("::" if t.endswith("?") else ":" if t.endswith(":") else "")
            try:
                self.opts, self.args = parse_opts(ctx, argv, short, glongs, status=status)
            except OptError as e:
                self.error = True
                self.status = e.status
            return
        name = argv[0]
        longs = longs or {}
        i = 1
        while i < len(argv):
            a = argv[i]
            if a == "--":
                self.args.extend(argv[i + 1:])
                break
            if a.startswith("--") and len(a) > 2:
                key, eq, val = a[2:].partition("=")
                cands = [k for k in longs if k.startswith(key)]
                if key in longs:
                    cands = [key]
                if len(cands) != 1:
                    if cands:
                        ctx.stderr.write(f"{name}: option '--{key}' is ambiguous\n".encode())
                    else:
                        ctx.stderr.write(f"{name}: unrecognized option '{a}'\n".encode())
                    self.error = True
                    return
                k = cands[0]
                target = longs[k]
                if target.endswith(":"):
                    target = target[:-1]
                    if not eq:
                        i += 1
                        if i >= len(argv):
                            ctx.stderr.write(f"{name}: option '--{k}' requires an argument\n".encode())
                            self.error = True
                            return
                        val = argv[i]
                    self.opts.append((target, val))
                elif target.endswith("?"):
                    self.opts.append((target[:-1], val if eq else None))
                else:
                    self.opts.append((target, None))
                i += 1
                continue
            if a.startswith("-") and len(a) > 1:
                j = 1
                while j < len(a):
                    c = a[j]
                    pos = spec.find(c)
                    if pos < 0 or c in ":?+":
                        ctx.stderr.write(f"{name}: invalid option -- '{c}'\n".encode())
                        self.error = True
                        return
                    if pos + 1 < len(spec) and spec[pos + 1] == "?":
                        self.opts.append((c, a[j + 1:] or None))
                        break
                    if pos + 1 < len(spec) and spec[pos + 1] == ":":
                        if j + 1 < len(a):
                            self.opts.append((c, a[j + 1:]))
                        else:
                            i += 1
                            if i >= len(argv):
                                ctx.stderr.write(f"{name}: option requires an argument -- '{c}'\n".encode())
                                self.error = True
                                return
                            self.opts.append((c, argv[i]))
                        break
                    self.opts.append((c, None))
                    j += 1
                i += 1
                continue
            if stop_at_operand:
                self.args.extend(argv[i:])
                break
            self.args.append(a)
            i += 1

    def fail(self, status: int) -> int:
        """The exit status for a parse error, with GNU's "Try" line unless already printed."""
        if self.status is not None:
            return 0 if self.status == 0 else status  # (0: --help/--version was printed)
        return _try(self._ctx, self._name, status)

    def has(self, k: str) -> bool:
        return any(o == k for o, _ in self.opts)

    def last(self, k: str) -> str | None:
        v = None
        for o, val in self.opts:
            if o == k:
                v = val
        return v


# --------------------------------------------------------------------------- trivial ones

@command("true", usage="true", help="Do nothing, successfully.")
def true_(ctx: CommandContext, argv: list[str]) -> int:
    return 0


@command("false", usage="false", help="Do nothing, unsuccessfully.")
def false_(ctx: CommandContext, argv: list[str]) -> int:
    return 1


@command("whoami", usage="whoami", help="Print the user name.")
def whoami(ctx: CommandContext, argv: list[str]) -> int:
    if len(argv) > 1 and argv[1] != "--":
        if argv[1].startswith("-"):
            ctx.stderr.write(f"whoami: invalid option -- '{argv[1][1:2]}'\n".encode())
        else:
            ctx.stderr.write(f"whoami: extra operand {_q(ctx, argv[1])}\n".encode())
        return _try(ctx, "whoami", 1)
    _w(ctx, ctx.info.user + "\n")
    return 0


@command("logname", usage="logname", help="Print the login name.")
def logname(ctx: CommandContext, argv: list[str]) -> int:
    _w(ctx, ctx.info.user + "\n")
    return 0


@command("users", usage="users", help="Print the logged-in users.")
def users(ctx: CommandContext, argv: list[str]) -> int:
    _w(ctx, ctx.info.user + "\n")
    return 0


@command("arch", usage="arch", help="Print the machine hardware name.")
def arch(ctx: CommandContext, argv: list[str]) -> int:
    _w(ctx, ctx.info.machine + "\n")
    return 0


@command("tty", usage="tty [-s]", help="Print the terminal name; sandboxes have none.")
def tty(ctx: CommandContext, argv: list[str]) -> int:
    o = _Opts(ctx, argv, "s", {"silent": "s", "quiet": "s"}, status=2)
    if o.error:
        return o.fail(2)
    if not o.has("s"):
        _w(ctx, "not a tty\n")
    return 1


@command("groups", usage="groups [USER]...", help="Print the groups a user is in.")
def groups(ctx: CommandContext, argv: list[str]) -> int:
    names = argv[1:]
    if not names:
        _w(ctx, ctx.info.group + "\n")
        return 0
    st = 0
    for n in names:
        if n == ctx.info.user:
            _w(ctx, f"{n} : {ctx.info.group}\n")
        else:
            ctx.error(f"{_q(ctx, n)}: no such user")
            st = 1
    return st


@command("id", usage="id [OPTION]... [USER]", help="Print user and group ids.")
def id_(ctx: CommandContext, argv: list[str]) -> int:
    o = _Opts(ctx, argv, "ugGnrz", {"user": "u", "group": "g", "groups": "G", "name": "n", "real": "r",
                                      "zero": "z"}, stop_at_operand=False)
    if o.error:
        return o.fail(1)
    i = ctx.info
    if o.args:
        if o.args[0] not in (i.user, str(i.uid)):
            ctx.error(f"{_q(ctx, o.args[0])}: no such user")
            return 1
    which = [k for k in "ugG" if o.has(k)]
    if len(which) > 1:
        ctx.error("cannot print \"only\" of more than one choice")
        return 1
    if not which:
        if o.has("n") or o.has("r"):
            ctx.error("cannot print only names or real IDs in default format")
            return 1
        _w(ctx, f"uid={i.uid}({i.user}) gid={i.gid}({i.group}) groups={i.gid}({i.group})\n")
        return 0
    k = which[0]
    if k == "u":
        v = i.user if o.has("n") else str(i.uid)
    else:
        v = i.group if o.has("n") else str(i.gid)
    _w(ctx, v + "\n")
    return 0


@command("hostname", usage="hostname [-s|-f|-d|-i|-I]", help="Print the sandbox's host name.")
def hostname(ctx: CommandContext, argv: list[str]) -> int:
    o = _Opts(ctx, argv, "sfdiIAaby", gnu=False, longs={"short": "s", "fqdn": "f", "long": "f", "domain": "d",
                                         "ip-address": "i", "all-ip-addresses": "I"})
    if o.error:
        return o.fail(1)
    h = ctx.info.hostname
    if o.args:
        ctx.error("you must be root to change the host name")
        return 1
    if o.has("i"):
        _w(ctx, "127.0.1.1\n")
    elif o.has("I"):
        _w(ctx, "\n")
    elif o.has("d"):
        _w(ctx, (h.partition(".")[2]) + "\n")
    elif o.has("s"):
        _w(ctx, h.split(".")[0] + "\n")
    else:
        _w(ctx, h + "\n")
    return 0


@command("uname", usage="uname [OPTION]...", help="Print system information.")
def uname(ctx: CommandContext, argv: list[str]) -> int:
    o = _Opts(ctx, argv, "asnrvmpio", {"all": "a", "kernel-name": "s", "sysname": "s", "nodename": "n",
                                         "kernel-release": "r", "release": "r", "kernel-version": "v",
                                         "machine": "m",
                                         "processor": "p", "hardware-platform": "i",
                                         "operating-system": "o"}, stop_at_operand=False)
    if o.error:
        return o.fail(1)
    if o.args:
        ctx.error(f"extra operand {_q(ctx, o.args[0])}")
        return _try(ctx, "uname", 1)
    i = ctx.info
    vals = {"s": i.kernel, "n": i.hostname, "r": i.kernel_release, "v": "#1 SMP PREEMPT_DYNAMIC",
            "m": i.machine, "p": "unknown", "i": "unknown", "o": "GNU/Linux"}
    flags = {k for k, _ in o.opts}
    if not flags:
        flags = {"s"}
    out = []
    for k in "snrvmpio":
        if "a" in flags:
            if k in "pi" and k not in flags:  # -a omits unknown -p/-i like GNU
                continue
            out.append(vals[k])
        elif k in flags:
            out.append(vals[k])
    _w(ctx, " ".join(out) + "\n")
    return 0


@command("nproc", usage="nproc [--all] [--ignore=N]", help="Print the number of processing units.")
def nproc(ctx: CommandContext, argv: list[str]) -> int:
    o = _Opts(ctx, argv, "", {"all": "all", "ignore": "ignore:"}, stop_at_operand=False)
    if o.error:
        return o.fail(1)
    if o.args:
        ctx.error(f"extra operand {_q(ctx, o.args[0])}")
        return _try(ctx, "nproc", 1)
    n = ctx.info.nproc
    if not o.has("all"):
        n = int(ctx.env.get("OMP_NUM_THREADS", "") or n) if (ctx.env.get("OMP_NUM_THREADS", "").isdigit()) else n
    ig = o.last("ignore")
    if ig is not None:
        if not ig.isdigit():
            ctx.error(f"invalid number: {_q(ctx, ig)}")
            return 1
        n = max(1, n - int(ig))
    _w(ctx, f"{n}\n")
    return 0


_GETCONF = {
    "ARG_MAX": "2097152", "PAGE_SIZE": "4096", "PAGESIZE": "4096", "PATH": "/bin:/usr/bin",
    "LONG_BIT": "64", "CLK_TCK": "100", "OPEN_MAX": "1024", "NAME_MAX": "255", "PATH_MAX": "4096",
    "LINE_MAX": "2048", "INT_MAX": "2147483647", "INT_MIN": "-2147483648", "CHAR_BIT": "8",
    "HOST_NAME_MAX": "64", "LOGIN_NAME_MAX": "256", "CHILD_MAX": "63448", "PIPE_BUF": "4096",
    "UINT_MAX": "4294967295", "LONG_MAX": "9223372036854775807", "SSIZE_MAX": "32767",
    "WORD_BIT": "32", "GNU_LIBC_VERSION": "glibc 2.36", "GNU_LIBPTHREAD_VERSION": "NPTL 2.36",
    "_POSIX_VERSION": "200809", "POSIX_VERSION": "200809",
}
_NPROC_VARS = frozenset(("_NPROCESSORS_ONLN", "_NPROCESSORS_CONF", "NPROCESSORS_ONLN", "NPROCESSORS_CONF"))
# the pathconf variables glibc answers by a statfs of the path (the others are constants)
_GETCONF_STATS = frozenset(("LINK_MAX", "_POSIX_LINK_MAX", "NAME_MAX", "_POSIX_NAME_MAX",
    "_POSIX_CHOWN_RESTRICTED", "FILESIZEBITS", "POSIX_REC_XFER_ALIGN", "POSIX_ALLOC_SIZE_MIN",
    "POSIX_REC_MIN_XFER_SIZE"))
# pathconf variables (given with a pathname): their values on this machine's filesystems
_GETCONF_PATH = {
    "LINK_MAX": "65000", "_POSIX_LINK_MAX": "65000", "MAX_CANON": "255", "_POSIX_MAX_CANON": "255",
    "MAX_INPUT": "255", "_POSIX_MAX_INPUT": "255", "NAME_MAX": "255", "_POSIX_NAME_MAX": "255",
    "PATH_MAX": "4096", "_POSIX_PATH_MAX": "4096", "PIPE_BUF": "4096", "_POSIX_PIPE_BUF": "4096",
    "_POSIX_CHOWN_RESTRICTED": "1", "_POSIX_NO_TRUNC": "1", "_POSIX_VDISABLE": "0",
    "FILESIZEBITS": "64", "SYMLINK_MAX": "undefined", "POSIX_REC_XFER_ALIGN": "4096",
    "POSIX_ALLOC_SIZE_MIN": "4096", "POSIX_REC_MIN_XFER_SIZE": "4096",
}


@command("getconf", usage="getconf VARIABLE [PATHNAME]", help="Print configuration values.")
def getconf(ctx: CommandContext, argv: list[str]) -> int:
    args = argv[1:]
    usage = ("Usage: getconf [-v specification] variable_name [pathname]\n"
             "       getconf -a [pathname]\n")
    if args[:1] == ["-a"]:
        n = str(ctx.info.nproc)
        for k, v in sorted({**_GETCONF, **_GETCONF_PATH, "_NPROCESSORS_ONLN": n, "_NPROCESSORS_CONF": n}.items()):
            _w(ctx, f"{k:<35} {v}\n" if False else f"{k}{' ' * max(1, 35 - len(k))}{v}\n")
        return 0
    if not args or len(args) > 2:
        ctx.stderr.write(usage.encode())
        return 2
    name = args[0]
    pathvar = _GETCONF_PATH.get(name)
    known = pathvar is not None or name in _GETCONF or name in _NPROC_VARS
    if not known:
        ctx.error(f"Unrecognized variable `{name}'")
        return 2
    # glibc: a pathconf variable needs the pathname, any other takes none
    if (pathvar is not None) != (len(args) == 2):
        ctx.stderr.write(usage.encode())
        return 2
    if pathvar is not None:
        if name in _GETCONF_STATS:
            try:
                ctx.fs.stat(ctx.path(args[1]))
            except OSError as e:
                ctx.error(f"pathconf: {args[1]}: {strerror(e)}")
                return 3
        _w(ctx, pathvar + "\n")
        return 0
    if name in _NPROC_VARS:
        _w(ctx, f"{ctx.info.nproc}\n")
        return 0
    _w(ctx, _GETCONF[name] + "\n")
    return 0


# --------------------------------------------------------------------------- env

@command("env", usage="env [OPTION]... [-] [NAME=VALUE]... [COMMAND [ARG]...]",
         help="Run a program in a modified environment, or print the environment.")
def env(ctx: CommandContext, argv: list[str]) -> int:
    # GNU env stops option parsing at the first NAME=VALUE or command word.
    # -S: GNU splices the split string into argv where the option was and parses the options
    # again from the start (`env -S'-i A=B cmd'`, `#!/usr/bin/env -S -u X cmd`)
    bad = _env_blank_option(argv)
    if bad is not None:
        # (a shebang's options arrive as one argument: GNU adds a hint before its Try line)
        ctx.stderr.write(f"{argv[0]}: invalid option -- '{bad}'\n"
                         f"{argv[0]}: use -[v]S to pass options in shebang lines\n".encode())
        return _try(ctx, "env", 125)
    said: list[str] = []
    for _ in range(64):
        found = _env_find_s(argv)
        if found is None:
            break
        head, sval, tail = found
        try:
            split = _split_s(sval, ctx.env)
        except ValueError as e:
            ctx.error(str(e))
            return 125
        if split is None:
            ctx.error("no terminating quote in -S string")
            return 125
        said.append(f"split -S:  {_q(ctx, sval)}")
        said.extend(f"{' into:' if i == 0 else '     &'}    {_q(ctx, w)}" for i, w in enumerate(split))
        argv = head + split + tail
    o = _Opts(ctx, argv, "+iu:0C:S:v", {"ignore-environment": "i", "unset": "u:", "null": "0",
                                          "chdir": "C:", "split-string": "S:", "debug": "v",
                                          # signal dispositions: accepted, nothing to change in-process
                                          "ignore-signal": "ignore-signal?", "default-signal": "default-signal?",
                                          "block-signal": "block-signal?", "list-signal-handling": "lsh"})
    if o.error:
        return o.fail(125)
    rest = list(o.args)
    verbose = o.has("v")

    def say(msg: str) -> None:  # --debug/-v: GNU's trace on stderr
        if verbose:
            ctx.stderr.write((msg + "\n").encode("utf-8", "surrogateescape"))

    for line in said:
        say(line)
    newenv: dict[str, str] = {} if o.has("i") else dict(ctx.env)
    if newenv and _from_shell(ctx) and "_" not in newenv:
        newenv["_"] = _underscore(ctx, "env")  # bash exports $_ as the command's path
    if rest[:1] == ["-"]:
        newenv = {}
        rest = rest[1:]
    if o.has("i") or not newenv and ctx.env:
        say("cleaning environ")
    for k, v in o.opts:
        if k == "u" and v is not None:
            if "=" in v or not v:
                ctx.error(f"cannot unset {_q(ctx, v)}: Invalid argument")
                return 125
            say(f"unset:    {v}")
            newenv.pop(v, None)
    while rest and "=" in rest[0]:
        a = rest.pop(0)
        say(f"setenv:   {a}")
        k, _, v = a.partition("=")
        newenv[k] = v
    cwd = o.last("C")
    if cwd is not None and rest:
        say(f"chdir:    {quoteaf(cwd)}")
        try:
            isdir = ctx.fs.stat(ctx.path(cwd)).is_dir
            err = "Not a directory"
        except OSError as e:
            isdir, err = False, strerror(e)
        if not isdir:
            ctx.error(f"cannot change directory to {quoteaf(cwd)}: {err}")
            return 125
    if not rest:
        if cwd is not None:
            ctx.error("must specify command with --chdir (-C)")
            return _try(ctx, "env", 125)
        end = "\0" if o.has("0") else "\n"
        for k, v in newenv.items():
            _w(ctx, f"{k}={v}{end}")
        return 0
    if o.has("0"):
        ctx.error("cannot specify --null (-0) with command")
        return _try(ctx, "env", 125)
    say(f"executing: {rest[0]}")
    for i, w in enumerate(rest):
        say(f"   arg[{i}]= {_q(ctx, w)}")
    st = _run(ctx, rest, env=newenv, cwd=ctx.path(cwd) if cwd else None, who="env")
    if st == 127 and any(c in rest[0] for c in " \t\n\v\f\r"):
        ctx.error("use -[v]S to pass options in shebang lines")
    return st


_ENV_LONG = ("ignore-environment", "null", "unset", "chdir", "split-string", "block-signal",
             "default-signal", "ignore-signal", "list-signal-handling", "debug", "help", "version")


def _env_blank_option(argv: list[str]) -> str | None:
    """The blank getopt meets in env's options (`env '-v -S cat'`), if it meets one first."""
    i = 1
    while i < len(argv):
        a = argv[i]
        if a == "--" or not a.startswith("-") or a == "-":
            return None
        if a.startswith("--"):
            if "=" not in a and any(o.startswith(a[2:]) for o in ("unset", "chdir", "split-string")):
                i += 1
            i += 1
            continue
        for j, c in enumerate(a[1:], 1):
            if c in " \t\n\v\f\r":
                return c
            if c in "uCS":
                if j == len(a) - 1:
                    i += 1
                break
            if c not in "i0v":
                return None
        i += 1
    return None


def _env_find_s(argv: list[str]) -> tuple[list[str], str, list[str]] | None:
    """The first -S/--split-string among env's options: (argv before it, with the flags
    bundled before S, its value, argv after it); None when there is none or it lacks a value
    (then the option parser reports it)."""
    i = 1
    while i < len(argv):
        a = argv[i]
        if a == "--" or not a.startswith("-") or a == "-":
            return None
        if a.startswith("--"):
            name, eq, val = a[2:].partition("=")
            full = [o for o in _ENV_LONG if o.startswith(name)]
            if name in _ENV_LONG:
                full = [name]
            if len(full) != 1:
                return None
            if full[0] == "split-string":
                if eq:
                    return argv[:i], val, argv[i + 1:]
                if i + 1 < len(argv):
                    return argv[:i], argv[i + 1], argv[i + 2:]
                return None
            if full[0] in ("unset", "chdir") and not eq:
                i += 1
            i += 1
            continue
        j = 1
        while j < len(a):
            c = a[j]
            if c not in "i0vuCS":
                return None  # (getopt stops here: the option parser reports it)
            if c in "uCS":
                val = a[j + 1:]
                if c == "S":
                    pre = [a[:j]] if j > 1 else []
                    if val:
                        return argv[:i] + pre, val, argv[i + 1:]
                    if i + 1 < len(argv):
                        return argv[:i] + pre, argv[i + 1], argv[i + 2:]
                    return None
                if not val:
                    i += 1
                break
            j += 1
        i += 1
    return None


def _split_s(s: str, env: dict[str, str] | None = None) -> list[str] | None:
    """env -S as GNU's build_argv: blanks (and ``\\_`` outside double quotes) separate
    arguments, '...' keeps all but ``\\\\``/``\\'``, "..." takes escapes, ``#`` starting an
    argument and ``\\c`` end the string, ${NAME} expands outside single quotes. None when a
    quote is left open; ValueError for GNU's other errors."""
    env = env or {}
    sep = True  # the next character starts a new argument
    dq = sq = False
    i, n = 0, len(s)
    pieces: list[str] = []  # the characters and expansions, in order
    starts: list[int] = []  # where each argument begins in pieces

    def start() -> None:
        nonlocal sep
        if sep:
            sep = False
            starts.append(len(pieces))

    while i < n:
        c = s[i]
        newc = c
        if c == "'" and not dq:
            sq = not sq
            start()
            i += 1
            continue
        if c == '"' and not sq:
            dq = not dq
            start()
            i += 1
            continue
        if c in " \t\n\v\f\r" and not (sq or dq):
            sep = True
            while i < n and s[i] in " \t\n\v\f\r":
                i += 1
            continue
        if c == "#" and sep and not (sq or dq):
            break
        if c == "\\" and not (sq and s[i + 1:i + 2] not in ("\\", "'")):
            i += 1
            if i >= n:
                raise ValueError("invalid backslash at end of string in -S")
            newc = s[i]
            if newc in "\"#$'\\":
                pass
            elif newc == "_":
                if not dq:
                    i += 1
                    sep = True
                    continue
                newc = " "
            elif newc == "c":
                if dq:
                    raise ValueError("'\\c' must not appear in double-quoted -S string")
                break
            elif newc in "fnrtv":
                newc = {"f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}[newc]
            else:
                raise ValueError(f"invalid sequence '\\{newc}' in -S")
        elif c == "$" and not sq:
            m = re.match(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}", s[i:])
            if m is None:
                raise ValueError(f"only ${{VARNAME}} expansion is supported, error at: {s[i:]}")
            v = env.get(m.group(1))
            if v is not None:
                start()
                pieces.append(v)
            i += m.end()
            continue
        start()
        pieces.append(newc)
        i += 1
    else:
        if dq or sq:
            return None
    bounds = starts + [len(pieces)]
    return ["".join(pieces[bounds[k]:bounds[k + 1]]) for k in range(len(starts))]


def _from_shell(ctx: CommandContext) -> bool:
    """Was this command started by the shell (not by env/xargs/find with their own env)?"""
    from ..shell.state import ShellEnv
    return isinstance(ctx.env, ShellEnv)


def _underscore(ctx: CommandContext, name: str) -> str:
    """``$_`` in a command's environment: bash exports it as the command's path."""
    return "/usr/bin/" + name


def _run(ctx: CommandContext, argv: list[str], *, env=None, cwd=None, who: str,
         stdin=None, stdout=None, stderr=None) -> int:
    # GNU's words when execvp() fails: env "‘x’: ...", timeout/nohup "failed to run command ..."
    if who in ("env", "nice"):
        def msg(n: str, why: str) -> str:
            return f"{_q(ctx, n)}: {why}"
    elif who == "nohup":
        def msg(n: str, why: str) -> str:
            return f"failed to run command {quoteaf(n)}: {why}"
    elif who == "time":
        def msg(n: str, why: str) -> str:
            return f"cannot run {n}: {why}"
    else:
        def msg(n: str, why: str) -> str:
            return f"failed to run command {_q(ctx, n)}: {why}"
    # (GNU names itself as invoked: `/usr/bin/env nosuch` says "/usr/bin/env: ‘nosuch’: …")
    return run_command(ctx, argv, ctx.name or who, msg, stdin=stdin, stdout=stdout, stderr=stderr, env=env,
                       cwd=cwd)


@command("printenv", usage="printenv [-0] [VARIABLE]...", help="Print all or part of the environment.")
def printenv(ctx: CommandContext, argv: list[str]) -> int:
    o = _Opts(ctx, argv, "0", {"null": "0"}, stop_at_operand=False)
    if o.error:
        return o.fail(2)
    end = "\0" if o.has("0") else "\n"
    env = dict(ctx.env)
    if _from_shell(ctx) and "_" not in env:
        env["_"] = _underscore(ctx, "printenv")
    if not o.args:
        for k, v in env.items():
            _w(ctx, f"{k}={v}{end}")
        return 0
    st = 0
    for n in o.args:
        if "=" not in n and n in env:
            _w(ctx, env[n] + end)
        else:
            st = 1
    return st


def _is_exec(ctx: CommandContext, p: str) -> bool:
    try:
        st = ctx.fs.stat(p)
    except OSError:
        return False
    return _stat.S_ISREG(st.st_mode) and bool(st.st_mode & 0o111)


@command("which", usage="which [-a] args", help="Locate a command on PATH.")
def which(ctx: CommandContext, argv: list[str]) -> int:
    args = argv[1:]
    all_ = False
    while args and args[0].startswith("-") and len(args[0]) > 1:
        a = args.pop(0)
        if a == "--":
            break
        for c in a[1:]:
            if c == "a":
                all_ = True
            else:
                ctx.stderr.write(f"Illegal option -{c}\nUsage: /usr/bin/which [-a] args\n".encode())
                return 2
    if not args:
        return 1
    from . import REGISTRY
    path = ctx.env.get("PATH", "")
    st = 0
    for name in args:
        found = False
        if "/" in name:
            if _is_exec(ctx, ctx.path(name)):
                _w(ctx, name + "\n")
                found = True
        else:
            for d in path.split(":"):
                d = d or "."
                p = f"{d.rstrip('/')}/{name}"
                if _is_exec(ctx, ctx.path(p)):
                    _w(ctx, p + "\n")
                    found = True
                    if not all_:
                        break
            if not found and name in REGISTRY and any(
                    d in ("/usr/bin", "/bin") for d in path.split(":")):
                # Virtual mode: in-process commands have no file; report where GNU's would be.
                _w(ctx, f"/usr/bin/{name}\n")
                found = True
        if not found:
            st = 1
    return st


# --------------------------------------------------------------------------- durations

_STRTOD = re.compile(r"\s*\+?(0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)(?:[pP][-+]?\d+)?"
                     r"|(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|[iI][nN][fF](?:[iI][nN][iI][tT][yY])?)([smhd]?)")


def _duration(s: str) -> float | None:
    """sleep/timeout operands: a non-negative strtod number (hex and inf too) and one
    optional s/m/h/d suffix, nothing else."""
    m = _STRTOD.fullmatch(s)
    if not m:
        return None
    t = m.group(1)
    try:
        v = float.fromhex(t) if t[:2] in ("0x", "0X") else float(t)
    except ValueError:
        return None
    return v * {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}[m.group(2)]


@command("sleep", usage="sleep NUMBER[SUFFIX]...", help="Pause for NUMBER seconds (s, m, h, d suffixes).")
def sleep(ctx: CommandContext, argv: list[str]) -> int:
    try:
        _, args = parse_opts(ctx, argv, "", {}, status=1)  # no options: `sleep -1` is one
    except OptError as e:
        return e.status
    if not args:
        ctx.error("missing operand")
        return _try(ctx, "sleep", 1)
    total = 0.0
    bad = False
    for a in args:
        d = _duration(a)
        if d is None:
            ctx.error(f"invalid time interval {_q(ctx, a)}")
            bad = True
            continue
        total += d
    if bad:
        return _try(ctx, "sleep", 1)
    ctx.budget.sleep(min(total, 1e9))
    return 0


class _Guard(io.RawIOBase):
    """Stream wrapper for ``timeout``: once the deadline passed, I/O raises BrokenPipeError."""

    def __init__(self, inner, dead: threading.Event) -> None:
        self.inner, self.dead = inner, dead

    def readable(self) -> bool:
        return True

    def writable(self) -> bool:
        return True

    def read(self, n: int = -1) -> bytes:
        if self.dead.is_set():
            raise BrokenPipeError("timed out")
        return self.inner.read(n)

    def readline(self, n: int = -1) -> bytes:
        if self.dead.is_set():
            raise BrokenPipeError("timed out")
        return self.inner.readline(n)

    def readinto(self, b) -> int:  # noqa: ANN001
        data = self.read(len(b))
        b[:len(data)] = data
        return len(data)

    def write(self, b) -> int:  # noqa: ANN001
        if self.dead.is_set():
            raise BrokenPipeError("timed out")
        return self.inner.write(b)

    def flush(self) -> None:
        if not self.dead.is_set():
            f = getattr(self.inner, "flush", None)
            if f:
                f()


_SIGNALS = ["HUP", "INT", "QUIT", "ILL", "TRAP", "ABRT", "BUS", "FPE", "KILL", "USR1", "SEGV", "USR2",
            "PIPE", "ALRM", "TERM", "STKFLT", "CHLD", "CONT", "STOP", "TSTP", "TTIN", "TTOU", "URG",
            "XCPU", "XFSZ", "VTALRM", "PROF", "WINCH", "POLL", "PWR", "SYS"]


def _signum(s: str) -> int | None:
    if s.isdigit():
        n = int(s)
        return n if 0 <= n <= 64 else None
    u = s.upper()
    if u.startswith("SIG"):
        u = u[3:]
    for alias, real in (("IO", "POLL"), ("IOT", "ABRT"), ("CLD", "CHLD")):
        if u == alias:
            u = real
    if u in _SIGNALS:
        return _SIGNALS.index(u) + 1
    if u == "EXIT" or u == "0":
        return 0
    return None


@command("timeout", usage="timeout [OPTION] DURATION COMMAND [ARG]...",
         help="Run a command with a time limit; status 124 when it times out.")
def timeout(ctx: CommandContext, argv: list[str]) -> int:
    o = _Opts(ctx, argv, "+s:k:v", {"signal": "s:", "kill-after": "k:", "preserve-status": "preserve-status",
                                      "foreground": "foreground", "verbose": "v"})
    if o.error:
        return o.fail(125)
    if len(o.args) < 2:
        return _try(ctx, "timeout", 125)  # GNU's usage(): only the "Try" line
    # (GNU checks the options as it meets them: -k, -s, then the duration)
    for k, v in o.opts:
        if k == "k" and _duration(v or "") is None:
            ctx.error(f"invalid time interval {_q(ctx, v or '')}")
            return _try(ctx, "timeout", 125)
        if k == "s" and _signum(v or "") is None:
            ctx.error(f"{_q(ctx, v or '')}: invalid signal")
            return _try(ctx, "timeout", 125)
    d = _duration(o.args[0])
    if d is None:
        ctx.error(f"invalid time interval {_q(ctx, o.args[0])}")
        return _try(ctx, "timeout", 125)
    sig = o.last("s") or "TERM"
    signo = _signum(sig)
    cmd = o.args[1:]
    if d == 0:
        return _run(ctx, cmd, who="timeout")
    # In-process commands cannot be killed: run the child in a thread over guarded streams;
    # at the deadline its further I/O fails (like a killed process's pipe) and we return 124.
    dead = threading.Event()
    box: dict[str, object] = {}

    def work() -> None:
        ctx.budget.bind()  # (a thread of its own: nothing to restore)
        try:
            box["st"] = _run(ctx, cmd, who="timeout", stdin=_Guard(ctx.stdin, dead),
                             stdout=_Guard(ctx.stdout, dead), stderr=_Guard(ctx.stderr, dead))
        except BaseException as e:  # noqa: BLE001 - re-raised in the caller's thread
            box["exc"] = e

    t = threading.Thread(target=work, daemon=True, name="timeout-child")
    from ..limits import start_thread
    start_thread(t)  # (not interrupted inside Thread.start by the deadline watchdog)
    end = _time.monotonic() + d
    while t.is_alive():
        ctx.budget.check()
        left = end - _time.monotonic()
        if left <= 0:
            break
        t.join(min(left, 0.05))
    if t.is_alive():
        dead.set()
        _kill_thread(t)
        if o.has("v"):
            ctx.stderr.write(f"timeout: sending signal {_SIGNALS[signo - 1] if signo else 'EXIT'} "
                             f"to command {_q(ctx, cmd[0])}\n".encode())
        if o.has("preserve-status") or signo == 9:
            # SIGKILL also reaches timeout itself (it signals its process group): 137
            return 128 + (signo or 0)
        return 124
    if "exc" in box:
        exc = box["exc"]
        if isinstance(exc, BrokenPipeError) and dead.is_set():
            return 124
        raise exc  # type: ignore[misc]
    return int(box.get("st", 0))  # type: ignore[arg-type]


class _TimedOut(BaseException):
    """Raised inside a timed-out child's thread (in-process commands have no pid to signal)."""


def _kill_thread(t: threading.Thread) -> None:
    # Pure-Python loops (awk, bc, shell loops) would otherwise keep running until the run's
    # own deadline; an asynchronous exception stops them at their next bytecode.
    import ctypes
    if t.ident is not None:
        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(t.ident), ctypes.py_object(_TimedOut))


@command("time", usage="time [-p] [-f FORMAT] COMMAND [ARG]...",
         help="Run a command and report its resource use (GNU time's format).")
def time_(ctx: CommandContext, argv: list[str]) -> int:
    o = _Opts(ctx, argv, "+pf:o:avqV", gnu=False, longs={"portability": "p", "format": "f:", "output": "o:", "append": "a",
                                          "verbose": "v", "quiet": "q", "version": "V"})
    if o.error:
        ctx.stderr.write(b"Usage: time [-apvV] [-f format] [-o file] [--append] [--verbose]\n"
                         b"       [--portability] [--format=format] [--output=file] [--version]\n"
                         b"       [--quiet] [--help] command [arg...]\n")
        return 125
    if o.has("V"):
        _w(ctx, "time (GNU Time) UNKNOWN\n")
        return 0
    if not o.args:
        ctx.stderr.write(b"Usage: time [-apvV] [-f format] [-o file] [--append] [--verbose]\n"
                         b"       [--portability] [--format=format] [--output=file] [--version]\n"
                         b"       [--quiet] [--help] command [arg...]\n")
        return 125
    t0 = _time.monotonic()
    c0 = _time.thread_time()
    st = _run(ctx, o.args, who="time")
    el = _time.monotonic() - t0
    cpu = _time.thread_time() - c0
    if o.has("p"):
        rep = f"real {el:.2f}\nuser {cpu:.2f}\nsys 0.00\n"
    else:
        fmt = o.last("f")
        mins, secs = divmod(el, 60)
        pct = f"{int(100 * cpu / el) if el > 0 else 0}%"
        vals = {"e": f"{el:.2f}", "E": f"{int(mins)}:{secs:05.2f}", "U": f"{cpu:.2f}", "S": "0.00",
                "P": pct, "M": "0", "X": "0", "D": "0", "K": "0", "I": "0", "O": "0", "F": "0",
                "R": "0", "W": "0", "c": "0", "w": "0", "x": str(st), "C": " ".join(o.args), "%": "%"}
        if fmt is None:
            rep = (f"{vals['U']}user {vals['S']}system {vals['E']}elapsed {pct}CPU "
                   "(0avgtext+0avgdata 0maxresident)k\n0inputs+0outputs (0major+0minor)pagefaults 0swaps\n")
        else:
            rep = re.sub(r"%(.)", lambda m: vals.get(m.group(1), "?" + m.group(1)), fmt)
            rep = rep.replace("\\n", "\n").replace("\\t", "\t") + "\n"
        if st != 0 and not o.has("q") and fmt is None:
            rep = f"Command exited with non-zero status {st}\n" + rep
    out = o.last("o")
    if out is not None:
        try:
            with ctx.fs.open(ctx.path(out), "ab" if o.has("a") else "wb") as f:
                f.write(rep.encode())
        except OSError as e:
            ctx.os_error(e, out)
    else:
        ctx.stderr.write(rep.encode())
    return st


@command("nohup", usage="nohup COMMAND [ARG]...", help="Run a command immune to hangups.")
def nohup(ctx: CommandContext, argv: list[str]) -> int:
    args = argv[1:]
    if args[:1] == ["--"]:
        args = args[1:]
    if not args:
        ctx.error("missing operand")
        return _try(ctx, "nohup", 125)
    # No terminal in a sandbox: GNU nohup then neither redirects nor says anything.
    st = _run(ctx, args, who="nohup")
    return st


@command("kill", usage="kill [-s SIGNAL | -SIGNAL] PID... | kill -l [SIGNAL]",
         help="Send a signal to a process (no host processes are visible in a sandbox).")
def kill(ctx: CommandContext, argv: list[str]) -> int:
    args = argv[1:]
    sig = 15
    if args and args[0] in ("-l", "-L", "--list", "--table"):
        rest = args[1:]
        if not rest:
            if args[0] in ("-L", "--table"):
                cells = [f"{i + 1:2d} {n:<7}" for i, n in enumerate(_SIGNALS)]
                for i in range(0, len(cells), 7):
                    _w(ctx, " ".join(cells[i:i + 7]).rstrip() + "\n")
            else:
                _w(ctx, " ".join(_SIGNALS[:16]) + "\n" + " ".join(_SIGNALS[16:]) + "\n")
            return 0
        st = 0
        for r in rest:
            if r.isdigit():
                n = int(r)
                n = n - 128 if n > 128 else n
                if 1 <= n <= len(_SIGNALS):
                    _w(ctx, _SIGNALS[n - 1] + "\n")
                    continue
            else:
                n2 = _signum(r)
                if n2:
                    _w(ctx, f"{n2}\n")
                    continue
            ctx.error(f"unknown signal name {r}")
            st = 1
        return st
    if args and args[0] in ("-s", "--signal", "-n"):
        if len(args) < 2:
            ctx.error(f"option requires an argument -- '{args[0][1:]}'")
            return 1
        s = _signum(args[1])
        if s is None:
            ctx.error(f"unknown signal {args[1]}; valid signals:")
            return 1
        sig, args = s, args[2:]
    elif args and args[0].startswith("-") and len(args[0]) > 1 and args[0] != "--" and not args[0][1:].isdigit():
        s = _signum(args[0][1:])
        if s is None:
            ctx.error(f"unknown signal {args[0][1:]}; valid signals:")
            return 1
        sig, args = s, args[1:]
    elif args and args[0].startswith("-") and args[0][1:].isdigit():
        sig, args = int(args[0][1:]), args[1:]
    if args[:1] == ["--"]:
        args = args[1:]
    if not args:
        ctx.stderr.write(b"\nUsage:\n kill [options] <pid> [...]\n\nOptions:\n"
                         b" <pid> [...]            send signal to every <pid> listed\n"
                         b" -<signal>, -s, --signal <signal>\n"
                         b"                        specify the <signal> to be sent\n"
                         b" -l, --list=[<signal>]  list all signal names, or convert one to a name\n"
                         b" -L, --table            list all signal names in a nice table\n\n"
                         b" -h, --help     display this help and exit\n"
                         b" -V, --version  output version information and exit\n\n"
                         b"For more details see kill(1).\n")
        return 1
    st = 0
    for p in args:
        try:
            pid = int(p)
        except ValueError:
            ctx.error(f"failed to parse argument: {_q(ctx, p)}" if False else f"failed to parse argument: '{p}'")
            st = 1
            continue
        if sig == 0 and pid == ctx.info.pid:
            continue
        ctx.error(f"({pid}) - No such process")
        st = 1
    return st


@command("ps", usage="ps [options]", help="Report the sandbox's processes.")
def ps(ctx: CommandContext, argv: list[str]) -> int:
    flags = "".join(a.lstrip("-") for a in argv[1:])
    pid = ctx.info.pid
    rows = [(pid, "bash"), (pid + 1, "ps")]
    full = any(c in flags for c in "fu") or "aux" in flags
    if "u" in flags and "-" not in "".join(argv[1:2])[:1]:
        _w(ctx, "USER         PID %CPU %MEM    VSZ   RSS TTY      STAT START   TIME COMMAND\n")
        for p, c in rows:
            _w(ctx, f"{ctx.info.user:<8} {p:>7}  0.0  0.0   4000  3000 ?        S    00:00   0:00 {c}\n")
        return 0
    if full:
        _w(ctx, "UID          PID    PPID  C STIME TTY          TIME CMD\n")
        for p, c in rows:
            _w(ctx, f"{ctx.info.user:<8} {p:>7} {ctx.info.ppid if p == pid else pid:>7}  0 00:00 ?        00:00:00 {c}\n")
        return 0
    _w(ctx, "    PID TTY          TIME CMD\n")
    for p, c in rows:
        _w(ctx, f"{p:>7} ?        00:00:00 {c}\n")
    return 0


# --------------------------------------------------------------------------- date

_DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September",
           "October", "November", "December"]


def _zone(ctx: CommandContext, utc: bool) -> _dt.tzinfo:
    if utc:
        return _dt.timezone.utc
    tz = ctx.env.get("TZ")
    if not tz:
        return _dt.timezone.utc
    return _tz_from(tz)


def _tz_from(tz: str) -> _dt.tzinfo:
    t = tz.lstrip(":")
    if t in ("UTC", "UTC0", "GMT", "GMT0", "Z", "UTC+0", ""):
        return _dt.timezone(_dt.timedelta(0), "UTC" if t != "GMT" else "GMT")
    m = re.fullmatch(r"([A-Za-z]{3,})([-+]?)(\d{1,2})(?::(\d\d))?", t)
    if m:  # POSIX TZ like EST5: the offset sign is inverted
        sign = -1 if m.group(2) != "-" else 1
        off = _dt.timedelta(hours=int(m.group(3)), minutes=int(m.group(4) or 0)) * sign
        return _dt.timezone(off, m.group(1))
    if ZoneInfo is not None:
        try:
            return ZoneInfo(t)
        except (ZoneInfoNotFoundError, ValueError, OSError):
            pass
    return _dt.timezone(_dt.timedelta(0), "UTC")


def _tzname(d: _dt.datetime) -> str:
    n = d.tzname() or "UTC"
    if n.startswith("UTC") and n != "UTC" and isinstance(d.tzinfo, _dt.timezone):
        return "UTC"
    return n


def _offset(d: _dt.datetime, colons: int) -> str:
    off = d.utcoffset() or _dt.timedelta(0)
    secs = int(off.total_seconds())
    sign = "-" if secs < 0 else "+"
    secs = abs(secs)
    h, m, s = secs // 3600, secs // 60 % 60, secs % 60
    if colons == 0:
        return f"{sign}{h:02d}{m:02d}"
    if colons == 1:
        return f"{sign}{h:02d}:{m:02d}"
    if colons == 2:
        return f"{sign}{h:02d}:{m:02d}:{s:02d}"
    if s:
        return f"{sign}{h:02d}:{m:02d}:{s:02d}"
    if m:
        return f"{sign}{h:02d}:{m:02d}"
    return f"{sign}{h:02d}"


_MAX_WIDTH = 16 << 20  # the widest one date directive pads to (see the width parse)


def format_date(fmt: str, d: _dt.datetime, nanos: int = 0) -> str:
    """GNU date's format directives with the ``-_0^#`` flags and widths."""
    out: list[str] = []
    i, n = 0, len(fmt)
    while i < n:
        c = fmt[i]
        if c != "%" or i + 1 >= n:
            out.append(c)
            i += 1
            continue
        j = i + 1
        flag = ""
        while j < n and fmt[j] in "-_0^#":
            flag += fmt[j]
            j += 1
        width = ""
        while j < n and fmt[j].isdigit():
            width += fmt[j]
            j += 1
        if len(width) > 8 or width and int(width) > _MAX_WIDTH:
            # GNU pads to up to INT_MAX (`date +%999999999Y`: 1 GB of output; +954 MiB in
            # the fuzz); capped per directive as printf's width is (issue 20)
            width = str(_MAX_WIDTH)
        colons = 0
        while j < n and fmt[j] == ":":
            colons += 1
            j += 1
        if j >= n:
            out.append(fmt[i:])
            break
        conv = fmt[j]
        j += 1
        if conv in "EO" and j < n and fmt[j] in "cCdeHImMSuUVwWxXyYgGjklnNpPrRtTzZsaAbBhDFq":
            conv = fmt[j]  # the E and O modifiers change nothing in the C locale
            j += 1
        if conv == "N":
            # %N: nanoseconds; a width keeps that many digits (more are zeros), "-" all nine
            digs = f"{nanos:09d}"
            if width and "-" not in flag:
                w = int(width)
                digs = digs[:w] if w <= 9 else digs + "0" * (w - 9)
            out.append(digs)
            i = j
            continue
        val, kind = _directive(conv, d, nanos, colons, flag)
        if val is None:
            out.append(fmt[i:j])
            i = j
            continue
        up = "^" in flag
        if "#" in flag:
            if conv in "aAbBh":
                up = True
            elif conv in "Zp":  # "#" swaps the case: these are upper case already
                val = val.lower()
                up = False
        if up and conv != "P":  # glibc leaves %P lower case even with ^
            val = val.upper()
        pad = "0" if kind == "0" else (" " if kind == "_" else "")
        for f in flag:
            if f == "-":
                pad = "-"
            elif f == "_":
                pad = " "
            elif f == "0":
                pad = "0"
        if kind in ("0", "_"):
            natural = {"Y": 4, "G": 4, "j": 3, "N": 9, "q": 1, "u": 1, "w": 1}.get(conv, 2)
            if conv in "zs":
                natural = len(val)
            if conv == "N" and width:
                val = val[:int(width)]
                width = ""
            digits = val.lstrip("-+")
            sign = val[:len(val) - len(digits)]
            digits = digits.lstrip(" ").lstrip("0") or "0" if kind != "s" else digits
            if conv in "zs":
                digits = val.lstrip("-+")
            if pad == "-":
                val = sign + digits
            else:
                w = int(width) if width else natural
                pc = " " if pad == " " else "0"
                if conv == "N" and not width:
                    w = 9
                if pc == "0":
                    val = sign + digits.rjust(w - len(sign), "0")
                else:
                    val = (sign + digits).rjust(w, " ")
        elif width and pad != "-":
            pc = "0" if pad == "0" else " "
            val = val.rjust(int(width), pc)
        out.append(val)
        i = j
    return "".join(out)


def _directive(c: str, d: _dt.datetime, nanos: int, colons: int, flag: str) -> tuple[str | None, str]:
    """(value, padding kind): '0' zero-padded number, '_' space-padded number, 's' string."""
    wd = d.weekday()
    if c == "a":
        return _DAYS[wd][:3], "s"
    if c == "A":
        return _DAYS[wd], "s"
    if c in "bh":
        return _MONTHS[d.month - 1][:3], "s"
    if c == "B":
        return _MONTHS[d.month - 1], "s"
    if c == "c":
        return format_date("%a %b %e %H:%M:%S %Y", d), "s"
    if c == "C":
        return f"{d.year // 100:02d}", "0"
    if c == "d":
        return f"{d.day:02d}", "0"
    if c == "D":
        return format_date("%m/%d/%y", d), "s"
    if c == "e":
        return f"{d.day:2d}", "_"
    if c == "F":
        return format_date("%Y-%m-%d", d), "s"
    if c == "g":
        return f"{d.isocalendar()[0] % 100:02d}", "0"
    if c == "G":
        return f"{d.isocalendar()[0]}", "0"
    if c == "H":
        return f"{d.hour:02d}", "0"
    if c == "I":
        return f"{(d.hour % 12) or 12:02d}", "0"
    if c == "j":
        return f"{d.timetuple().tm_yday:03d}", "0"
    if c == "k":
        return f"{d.hour:2d}", "_"
    if c == "l":
        return f"{(d.hour % 12) or 12:2d}", "_"
    if c == "m":
        return f"{d.month:02d}", "0"
    if c == "M":
        return f"{d.minute:02d}", "0"
    if c == "n":
        return "\n", "s"
    if c == "N":
        return f"{nanos:09d}", "0"
    if c == "p":
        return ("AM" if d.hour < 12 else "PM"), "s"
    if c == "P":
        return ("am" if d.hour < 12 else "pm"), "s"
    if c == "q":
        return str((d.month - 1) // 3 + 1), "0"
    if c == "r":
        return format_date("%I:%M:%S %p", d), "s"
    if c == "R":
        return format_date("%H:%M", d), "s"
    if c == "s":
        return str(calendar.timegm(d.utctimetuple())), "0"
    if c == "S":
        return f"{d.second:02d}", "0"
    if c == "t":
        return "\t", "s"
    if c == "T":
        return format_date("%H:%M:%S", d), "s"
    if c == "u":
        return str(wd + 1), "0"
    if c == "U":
        return f"{(d.timetuple().tm_yday + 6 - (wd + 1) % 7) // 7:02d}", "0"
    if c == "V":
        return f"{d.isocalendar()[1]:02d}", "0"
    if c == "w":
        return str((wd + 1) % 7), "0"
    if c == "W":
        return f"{(d.timetuple().tm_yday + 6 - wd) // 7:02d}", "0"
    if c == "x":
        return format_date("%m/%d/%y", d), "s"
    if c == "X":
        return format_date("%H:%M:%S", d), "s"
    if c == "y":
        return f"{d.year % 100:02d}", "0"
    if c == "Y":
        return str(d.year), "0"
    if c == "z":
        return _offset(d, colons), "s"
    if c == "Z":
        return _tzname(d), "s"
    if c == "%":
        return "%", "s"
    return None, "s"


_UNITS = {"sec": 1, "second": 1, "min": 60, "minute": 60, "hour": 3600, "day": 86400, "week": 604800,
          "fortnight": 1209600, "month": "month", "year": "year"}
_MON = {m[:3].lower(): i + 1 for i, m in enumerate(_MONTHS)}
_WDAY = {d[:3].lower(): i for i, d in enumerate(_DAYS)}


def _unit(w: str) -> int | str | None:
    w = w.lower()
    if w.endswith("s") and w[:-1] in _UNITS:
        w = w[:-1]
    if w in ("secs",):
        w = "sec"
    if w == "mins":
        w = "min"
    return _UNITS.get(w)


# gnulib parse-datetime's zone abbreviations (minutes east of UTC); the second group are
# daylight names, one hour ahead of their base
_ZONE_ABBR = {"GMT": 0, "UT": 0, "UTC": 0, "WET": 0, "ART": -180, "BRT": -180, "NST": -210, "AST": -240,
              "CLT": -240, "EST": -300, "CST": -360, "MST": -420, "PST": -480, "AKST": -540, "HST": -600,
              "HAST": -600, "SST": -720, "WAT": 60, "CET": 60, "MET": 60, "MEZ": 60, "EET": 120, "CAT": 120,
              "SAST": 120, "EAT": 180, "MSK": 180, "IST": 330, "SGT": 480, "KST": 540, "JST": 540,
              "GST": 600, "NZST": 720,
              "WEST": 60, "BST": 60, "BRST": -120, "NDT": -150, "ADT": -180, "CLST": -180, "EDT": -240,
              "CDT": -300, "MDT": -360, "PDT": -420, "AKDT": -480, "HADT": -540, "CEST": 120, "MEST": 120,
              "MESZ": 120, "EEST": 180, "MSD": 240, "NZDT": 780}


def _yy(y: str) -> str:
    """A two-digit year as parse-datetime reads it: 69-99 are 19xx, 00-68 are 20xx."""
    if len(y) == 2:
        return str(int(y) + (1900 if int(y) >= 69 else 2000))
    return y


def parse_date(s: str, now: _dt.datetime, tz: _dt.tzinfo) -> _dt.datetime | None:
    """The common part of GNU date -d: ISO forms, @epoch, month names, relative items."""
    s = s.strip()
    mtz = re.match(r'TZ="([^"]*)"\s*', s)
    inline_tz: _dt.tzinfo | None = None
    if mtz:  # GNU: a leading TZ="zone" interprets the rest in that zone
        inline_tz = _tz_from(mtz.group(1))
        s = s[mtz.end():]
    if s == "":
        s = "today 00:00"  # GNU: an empty date is the start of today
    # 5-Mar-2023, Mar-5-2023 (dashes between a month name and numbers)
    s = re.sub(r"\b(\d{1,2})-([A-Za-z]{3,9})-(\d{4}|\d{2})\b", lambda m: f"{m[1]} {m[2]} {_yy(m[3])}", s)
    s = re.sub(r"\b([A-Za-z]{3,9})-(\d{1,2})-(\d{4}|\d{2})\b", lambda m: f"{m[1]} {m[2]} {_yy(m[3])}", s)
    if s.startswith("@"):
        from decimal import Decimal, InvalidOperation
        if not re.fullmatch(r"\s*[-+]?(?:\d+(?:[.,]\d*)?|[.,]\d+)\s*", s[1:]):
            return None
        try:
            v = Decimal(s[1:].strip().replace(",", "."))
            if not v.is_finite():
                return None
        except InvalidOperation:
            return None
        sec = int(v.to_integral_value(rounding="ROUND_FLOOR"))
        micro = int((v - sec) * 1000000)  # truncated, like GNU's nanosecond parse
        try:
            return _dt.datetime.fromtimestamp(sec, tz) + _dt.timedelta(microseconds=micro)
        except (OverflowError, OSError, ValueError):
            return None
    toks = re.findall(r"\d{4}-\d{1,2}-\d{1,2}(?:[T ]\d{1,2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?)?(?:Z|[+-]\d{2}:?\d{2})?"
                      r"|\d{1,2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:\s*[ap]\.?m\.?)?|\d{1,2}/\d{1,2}/\d{2,4}"
                      r"|\d{4}/\d{1,2}/\d{1,2}|[+-]\d{2}:\d{2}"
                      r"|[+-]?\d+(?:\s*[ap]m)?|[A-Za-z]+\.?|,|\S", s, re.I)
    date: tuple[int, int, int] | None = None
    tod: tuple[int, int, int, int] | None = None
    zone: _dt.tzinfo | None = None
    rel_s = 0
    rel_m = 0
    rel_y = 0
    wday: tuple[int, int] | None = None
    i = 0
    have_any_date_item = False

    def num(t: str) -> bool:
        return bool(re.fullmatch(r"[+-]?\d+", t))

    # "+ 1 day": a lone sign belongs to the number after it
    merged: list[str] = []
    for t in toks:
        if merged and merged[-1] in ("+", "-") and re.fullmatch(r"\d+", t):
            merged[-1] = merged[-1] + t
        else:
            merged.append(t)
    toks = merged

    after_time = -1  # index just past a time-of-day token
    while i < len(toks):
        t = toks[i]
        tl = t.lower().rstrip(".")
        if i == after_time and zone is None:
            # GNU's grammar: HH:MM[:SS] followed by a signed number is a zone offset
            # ("10:00 +2 hours" is 10:00 at UTC+2, then one hour later)
            mz = re.fullmatch(r"([+-])(\d{1,4})(?::(\d{2}))?", t)
            if mz:
                d = mz.group(2)
                if mz.group(3) is not None:
                    hh, mm = int(d), int(mz.group(3))
                elif len(d) <= 2:
                    hh, mm = int(d), 0
                else:
                    hh, mm = divmod(int(d), 100)
                if hh * 60 + mm > 24 * 60 or mm >= 60:
                    return None  # parse-datetime: a zone offset beyond a day is an error
                off = _dt.timedelta(hours=hh, minutes=mm)
                zone = _dt.timezone(off if mz.group(1) == "+" else -off)
                i += 1
                continue
        m = re.fullmatch(r"(\d{4})-(\d{1,2})-(\d{1,2})(?:[T ](\d{1,2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?)?"
                         r"(Z|[+-]\d{2}:?\d{2})?", t, re.I)
        if m:
            date = (int(m.group(1)), int(m.group(2)), int(m.group(3)))
            if m.group(4):
                ns = int((m.group(7) or "0").ljust(9, "0")[:9])
                tod = (int(m.group(4)), int(m.group(5)), int(m.group(6) or 0), ns)
                after_time = i + 1
            if m.group(8):
                z = m.group(8)
                if z.upper() == "Z":
                    zone = _dt.timezone.utc
                else:
                    zz = z.replace(":", "")
                    off = _dt.timedelta(hours=int(zz[1:3]), minutes=int(zz[3:5]))
                    zone = _dt.timezone(off if zz[0] == "+" else -off)
            i += 1
            continue
        m = re.fullmatch(r"(\d{1,2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?(?:\s*([ap])\.?m\.?)?", t, re.I)
        if m:
            h = int(m.group(1))
            if m.group(5):
                h = h % 12 + (12 if m.group(5).lower() == "p" else 0)
            tod = (h, int(m.group(2)), int(m.group(3) or 0), int((m.group(4) or "0").ljust(9, "0")[:9]))
            i += 1
            if not m.group(5):
                after_time = i
            continue
        m = re.fullmatch(r"(\d{4})/(\d{1,2})/(\d{1,2})", t)
        if m:
            date = (int(m.group(1)), int(m.group(2)), int(m.group(3)))
            i += 1
            continue
        m = re.fullmatch(r"([+-])(\d{2}):?(\d{2})", t)
        if m and tod is not None and not (i + 1 < len(toks) and _unit(toks[i + 1]) is not None):
            off = _dt.timedelta(hours=int(m.group(2)), minutes=int(m.group(3)))
            zone = _dt.timezone(off if m.group(1) == "+" else -off)
            i += 1
            continue
        m = re.fullmatch(r"(\d{1,2})/(\d{1,2})/(\d{2,4})", t)
        if m:
            y = int(m.group(3))
            if len(m.group(3)) == 2:
                y += 2000 if y < 69 else 1900
            date = (y, int(m.group(1)), int(m.group(2)))
            i += 1
            continue
        m = re.fullmatch(r"(\d{1,2})\s*([ap])m", t, re.I)
        if m:
            h = int(m.group(1)) % 12 + (12 if m.group(2).lower() == "p" else 0)
            tod = (h, 0, 0, 0)
            i += 1
            continue
        if tl in ("now",):
            i += 1
            continue
        if tl == "today":
            i += 1
            continue
        if tl == "yesterday":
            rel_s -= 86400
            i += 1
            continue
        if tl == "tomorrow":
            rel_s += 86400
            i += 1
            continue
        if (tl in ("utc", "gmt", "z") or t.upper() in _ZONE_ABBR) and t.isalpha():
            mins = _ZONE_ABBR.get(t.upper(), 0)
            i += 1
            # "UTC+2", "GMT-0330": a signed number right after a zone name shifts it
            if i < len(toks) and re.fullmatch(r"[+-]\d{1,4}", toks[i]) and not (
                    i + 1 < len(toks) and _unit(toks[i + 1]) is not None):
                d = toks[i][1:]
                hh, mm = (int(d), 0) if len(d) <= 2 else divmod(int(d), 100)
                if hh * 60 + mm > 24 * 60 or mm >= 60:
                    return None
                mins += (hh * 60 + mm) * (1 if toks[i][0] == "+" else -1)
                i += 1
            zone = _dt.timezone(_dt.timedelta(minutes=mins)) if mins else _dt.timezone.utc
            continue
        if tl in ("am", "pm", "a.m", "p.m") and tod is not None and tod[0] <= 12:
            h = tod[0] % 12 + (12 if tl[0] == "p" else 0)
            tod = (h,) + tod[1:]
            i += 1
            continue
        if tl in ("ago",):
            i += 1
            continue
        if tl in ("next", "last", "this") and i + 1 < len(toks):
            k = {"next": 1, "last": -1, "this": 0}[tl]
            nxt = toks[i + 1].lower()
            u = _unit(nxt)
            if u is not None:
                amt = k
                i += 2
                if i < len(toks) and toks[i].lower() == "ago":
                    amt = -amt
                    i += 1
                if u == "month":
                    rel_m += amt
                elif u == "year":
                    rel_y += amt
                else:
                    rel_s += amt * int(u)
                continue
            if nxt[:3] in _WDAY:
                wday = (_WDAY[nxt[:3]], k)
                i += 2
                continue
            return None
        if num(t):
            u = _unit(toks[i + 1]) if i + 1 < len(toks) else None
            if u is not None:
                amt = int(t)
                i += 2
                if i < len(toks) and toks[i].lower() == "ago":
                    amt = -amt
                    i += 1
                if u == "month":
                    rel_m += amt
                elif u == "year":
                    rel_y += amt
                else:
                    rel_s += amt * int(u)
                continue
            # "15 Jan 2024" / "Jan 15 2024" handled with month names below
            if i + 1 < len(toks) and toks[i + 1].lower()[:3] in _MON and not t.startswith(("+", "-")):
                mon = _MON[toks[i + 1].lower()[:3]]
                day = int(t)
                y = now.year
                i += 2
                if i < len(toks) and re.fullmatch(r"\d{4}|\d{2}", toks[i]):
                    y = int(_yy(toks[i]))
                    i += 1
                date = (y, mon, day)
                continue
            if re.fullmatch(r"\d{8}", t):
                date = (int(t[:4]), int(t[4:6]), int(t[6:]))
                i += 1
                continue
            if re.fullmatch(r"\d{4}", t) and date is not None and have_any_date_item:
                date = (int(t), date[1], date[2])
                i += 1
                continue
            return None
        if tl[:3] in _MON and (len(tl) == 3 or _MONTHS[_MON[tl[:3]] - 1].lower().startswith(tl)
                               or tl == "sept"):
            mon = _MON[tl[:3]]
            i += 1
            day = 1
            y = now.year
            if i < len(toks) and re.fullmatch(r"\d{1,2}", toks[i]):
                day = int(toks[i])
                i += 1
                if i < len(toks) and toks[i] == ",":
                    i += 1
                if i < len(toks) and re.fullmatch(r"\d{4}", toks[i]):
                    y = int(toks[i])
                    i += 1
            date = (y, mon, day)
            have_any_date_item = True
            continue
        if tl[:3] in _WDAY and (len(tl) == 3 or _DAYS[_WDAY[tl[:3]]].lower().startswith(tl)):
            wday = (_WDAY[tl[:3]], 0)
            i += 1
            if i < len(toks) and toks[i] == ",":
                i += 1
            continue
        if tl == ",":
            i += 1
            continue
        u = _unit(tl)
        if u is not None:  # bare unit: "hour" = +1 hour
            i += 1
            amt = 1
            if i < len(toks) and toks[i].lower() == "ago":
                amt = -1
                i += 1
            if u == "month":
                rel_m += amt
            elif u == "year":
                rel_y += amt
            else:
                rel_s += amt * int(u)
            continue
        return None
    base_tz = zone or inline_tz or tz
    cur = now.astimezone(base_tz)
    try:
        if date is not None:
            y, mo, dd = date
            if tod is None:
                tod = (0, 0, 0, 0)
            base = _dt.datetime(y, mo, dd, tod[0], tod[1], tod[2], tod[3] // 1000, tzinfo=base_tz)
        elif tod is not None:
            base = cur.replace(hour=tod[0], minute=tod[1], second=tod[2], microsecond=tod[3] // 1000)
        elif wday is not None:
            base = cur.replace(hour=0, minute=0, second=0, microsecond=0)
        else:
            base = cur
        if wday is not None and date is None:  # GNU ignores a day of week next to a date
            target, k = wday
            delta = (target - base.weekday()) % 7
            if k == 1 and delta == 0:
                delta = 7
            if k == -1:
                delta = delta - 7 if delta else -7
            base = base + _dt.timedelta(days=delta)
            if date is None and tod is None:
                base = base.replace(hour=0, minute=0, second=0, microsecond=0)
        if rel_y or rel_m:
            tm = base.month - 1 + rel_m + 12 * rel_y
            ny, nm = base.year + tm // 12, tm % 12 + 1
            # GNU normalises an overflowing day (Jan 31 + 1 month = Mar 2/3)
            extra = base.day - 1
            base = base.replace(year=ny, month=nm, day=1) + _dt.timedelta(days=extra)
        if rel_s:
            # calendar-day arithmetic keeps wall time across DST like GNU
            days, secs = divmod(rel_s, 86400)
            if secs == 0:
                naive = base.replace(tzinfo=None) + _dt.timedelta(days=days)
                base = naive.replace(tzinfo=base.tzinfo)
            else:
                base = (base.astimezone(_dt.timezone.utc) + _dt.timedelta(seconds=rel_s)).astimezone(base_tz)
        return base.astimezone(tz)
    except (ValueError, OverflowError):
        return None


@command("date", usage="date [OPTION]... [+FORMAT]", help="Print the date and time (virtual clock, TZ from the env).")
def date(ctx: CommandContext, argv: list[str]) -> int:
    o = _Opts(ctx, argv, "d:f:I?r:Rs:u", {"date": "d:", "file": "f:", "iso-8601": "I?", "reference": "r:",
                                            "rfc-email": "R", "rfc-2822": "R", "rfc-822": "R", "set": "s:",
                                            "universal": "u", "utc": "u", "rfc-3339": "rfc-3339:",
                                            "debug": "debug", "resolution": "resolution"},
              stop_at_operand=False)
    # -I takes an optional attached argument: re-scan for -Ixxx forms the tiny getopt split.
    if o.error:
        return o.fail(1)
    opts: list[tuple[str, str | None]] = []
    for k, v in o.opts:
        opts.append((k, v))
    iso: str | None = None
    rfc3339: str | None = None
    fixed: list[str] = []
    for k, v in opts:
        if k == "I":
            iso = v or "date"
        elif k == "rfc-3339":
            rfc3339 = v
    utc = o.has("u")
    tz = _zone(ctx, utc)
    if o.has("s"):
        ctx.error("cannot set date: Operation not permitted")
        return 1
    fmt = None
    if len(o.args) > 1:
        ctx.error(f"extra operand {_q(ctx, o.args[1])}")
        return _try(ctx, "date", 1)
    for a in o.args:
        if a.startswith("+"):
            fmt = a[1:]
        else:
            fixed.append(a)
    if fixed:
        ctx.error(f"invalid date {_q(ctx, fixed[0])}")
        return 1
    if fmt is not None and (iso or o.has("R") or rfc3339):
        ctx.error("multiple output formats specified")
        return 1
    nowt = _time.time_ns()
    now = _dt.datetime.fromtimestamp(nowt // 10**9, tz).replace(microsecond=(nowt // 1000) % 10**6)
    nanos = nowt % 10**9
    dates: list[tuple[_dt.datetime, int] | None | str] = []
    dstr = o.last("d")
    if o.has("r"):
        ref = o.last("r") or ""
        try:
            st = ctx.fs.stat(ctx.path(ref))
        except OSError as e:
            ctx.os_error(e, ref)
            return 1
        mt = st.st_mtime
        ns = int(round((mt - int(mt)) * 1e9)) if mt >= 0 else 0
        dates.append((_dt.datetime.fromtimestamp(int(mt), tz), ns))
    elif o.has("f"):
        fn = o.last("f") or "-"
        try:
            data = ctx.stdin.read() if fn == "-" else _read(ctx, fn)
        except OSError as e:
            ctx.os_error(e, fn)
            return 1
        for line in data.decode("utf-8", "surrogateescape").splitlines():
            p = parse_date(line, now, tz)
            dates.append(None if p is None else (p, 0) if False else (p, 0) if p else None)
            if p is None:
                dates[-1] = line
    elif dstr is not None:
        p = parse_date(dstr, now, tz)
        if p is None:
            ctx.error(f"invalid date {_q(ctx, dstr)}")
            return 1
        ns = p.microsecond * 1000
        mf = re.search(r"(?:\d:\d\d|^\s*@\d+)[.,](\d+)", dstr)
        if mf:
            ns = int(mf.group(1).ljust(9, "0")[:9])  # the datetime keeps microseconds only
        dates.append((p, ns if (dstr.strip() and dstr.strip().lower() != "now") else nanos))
    else:
        dates.append((now, nanos))
    if iso is not None:
        iso_fmts = {"date": "%Y-%m-%d", "hours": "%Y-%m-%dT%H%:z", "minutes": "%Y-%m-%dT%H:%M%:z",
                    "seconds": "%Y-%m-%dT%H:%M:%S%:z", "ns": "%Y-%m-%dT%H:%M:%S,%N%:z"}
        cands = [k for k in iso_fmts if k.startswith(iso)]
        if not cands:
            ctx.error(f"invalid argument {_q(ctx, iso)} for {_q(ctx, '--iso-8601')}")
            ctx.stderr.write("Valid arguments are:\n  - \u2018hours\u2019\n  - \u2018minutes\u2019\n"
                             "  - \u2018date\u2019\n  - \u2018seconds\u2019\n  - \u2018ns\u2019\n".encode())
            return _try(ctx, "date", 1)
        fmt = iso_fmts[cands[0]]
    elif rfc3339 is not None:
        r = {"date": "%Y-%m-%d", "seconds": "%Y-%m-%d %H:%M:%S%:z", "ns": "%Y-%m-%d %H:%M:%S.%N%:z"}
        if rfc3339 not in r:
            ctx.error(f"invalid argument {_q(ctx, rfc3339)} for {_q(ctx, '--rfc-3339')}")
            return _try(ctx, "date", 1)
        fmt = r[rfc3339]
    elif o.has("R"):
        fmt = "%a, %d %b %Y %H:%M:%S %z"
    elif fmt is None:
        fmt = "%a %b %e %H:%M:%S %Z %Y"
    st = 0
    for item in dates:
        if isinstance(item, str):
            ctx.error(f"invalid date {_q(ctx, item)}")
            st = 1
            continue
        if item is None:
            continue
        d, ns = item
        _w(ctx, format_date(fmt, d, ns) + "\n")
    return st


def _read(ctx: CommandContext, fn: str) -> bytes:
    with ctx.fs.open(ctx.path(fn), "rb") as f:
        return f.read()


_unused: Callable[..., object] = io.BytesIO


_FLOCK_USAGE = "flock [options] <file>|<directory> <command> [<argument>...]"


@command("flock", usage=_FLOCK_USAGE, help="Manage a file lock while running a command (a sandbox has no "
         "competing process, so every lock is granted at once).")
def flock(ctx: CommandContext, argv: list[str]) -> int:
    """util-linux flock: options (getopt, stopping at the first operand), then an fd number,
    or a lock file (created if missing) and a command, ``-c`` taking a shell command line."""
    o = _Opts(ctx, argv, "sxeunoFw:E:", {
        "shared": "s", "exclusive": "x", "unlock": "u", "nonblocking": "n", "nb": "n", "close": "o",
        "no-fork": "F", "verbose": "verbose", "timeout": "w", "wait": "w", "conflict-exit-code": "E"},
        status=64)
    if o.error:
        return o.fail(64)
    ops = o.args
    if not ops:
        ctx.error("not enough arguments")
        return _try(ctx, "flock", 64)
    if len(ops) == 1:
        if not ops[0].isdigit():
            ctx.error(f"bad file descriptor: '{ops[0]}'")
            return 64
        return 0  # the lock on an open descriptor is always granted here
    target = ops[0]
    if ops[1] in ("-c", "--command"):
        if len(ops) != 3:
            ctx.error(f"{ops[1]} requires exactly one command argument")
            return _try(ctx, "flock", 64)
        cmd = ["sh", "-c", ops[2]]
    else:
        cmd = ops[1:]
    p = ctx.path(target)
    try:
        if not ctx.fs.exists(p):
            with ctx.fs.open(p, "ab"):
                pass
    except OSError as e:
        ctx.error(f"cannot open lock file {target}: {e.strerror or 'No such file or directory'}")
        return 66 if e.errno == 2 else 73
    return _run_flock(ctx, cmd)


def _run_flock(ctx: CommandContext, cmd: list[str]) -> int:
    """Run the command; one that cannot run (missing, not executable) is EX_UNAVAILABLE (69)."""
    from ._args import run_checked
    st, not_run = run_checked(ctx, cmd, "flock", lambda n, why: f"failed to execute {n}: {why}")
    if not_run:
        return 69
    return st


# coreutils test / [ (test.c): the program env, xargs and find -exec run, whose grammar and
# messages differ from the shell builtin's (`invalid integer ‘a’`, `missing argument after`).
_T_UNOPS = frozenset("-e -r -w -x -f -d -s -S -c -b -p -L -h -t -u -g -k -G -O -n -z".split())
_T_BINOPS = frozenset("= == != -nt -ot -ef -eq -ne -lt -le -gt -ge".split())
_T_INT = re.compile(r"[ \t]*[-+]?[0-9]+[ \t]*\Z")


class _TestSyntax(Exception):
    pass


class _CoreTest:
    def __init__(self, ctx: CommandContext, args: list[str]) -> None:
        from ._args import quote
        self.ctx, self.a, self.pos, self.q = ctx, args, 0, (lambda s: quote(ctx, s))

    def beyond(self) -> None:
        raise _TestSyntax(f"missing argument after {self.q(self.a[-1])}")

    def advance(self, f: bool) -> None:
        self.pos += 1
        if f and self.pos >= len(self.a):
            self.beyond()

    def integer(self, s: str) -> int:
        if not _T_INT.match(s):
            raise _TestSyntax(f"invalid integer {self.q(s)}")
        return int(s.strip(" \t"))

    def binary(self) -> bool:
        from ..shell.testexpr import binary_test
        a, op, b = self.a[self.pos], self.a[self.pos + 1], self.a[self.pos + 2]
        self.pos += 3
        if op in ("-eq", "-ne", "-lt", "-le", "-gt", "-ge"):
            x, y = self.integer(a), self.integer(b)
            return {"-eq": x == y, "-ne": x != y, "-lt": x < y, "-le": x <= y, "-gt": x > y, "-ge": x >= y}[op]
        return binary_test(op, a, b, self.ctx.fs, self.ctx.cwd)

    def unary(self) -> bool:
        from ..shell.testexpr import unary_test
        op = self.a[self.pos]
        self.advance(True)
        operand = self.a[self.pos]
        self.pos += 1
        if op == "-t":
            self.integer(operand)
            return False
        return unary_test(op, operand, self.ctx.fs, self.ctx.cwd, lambda n: False)

    def term(self) -> bool:
        a = self.a
        if self.pos >= len(a):
            self.beyond()
        neg = False
        while a[self.pos] == "!":
            neg = not neg
            self.advance(True)
        if a[self.pos] == "(":
            self.advance(True)
            n = 1
            while self.pos + n < len(a) and a[self.pos + n] != ")":
                if n == 4:
                    n = len(a) - self.pos
                    break
                n += 1
            v = self.posix(n)
            if self.pos >= len(a):
                raise _TestSyntax(f"{self.q(')')} expected")
            if a[self.pos] != ")":
                raise _TestSyntax(f"{self.q(')')} expected, found {self.q(a[self.pos])}")
            self.pos += 1
        elif len(a) - self.pos >= 3 and a[self.pos + 1] in _T_BINOPS:
            v = self.binary()
        elif len(a[self.pos]) == 2 and a[self.pos][0] == "-":
            if a[self.pos] not in _T_UNOPS:
                raise _TestSyntax(f"{self.q(a[self.pos])}: unary operator expected")
            v = self.unary()
        else:
            v = a[self.pos] != ""
            self.pos += 1
        return v != neg

    def and_(self) -> bool:
        v = True
        while True:
            v = self.term() and v
            if self.pos < len(self.a) and self.a[self.pos] == "-a":
                self.advance(False)
                continue
            return v

    def expr(self) -> bool:
        if self.pos >= len(self.a):
            self.beyond()
        v = False
        while True:
            v = self.and_() or v
            if self.pos < len(self.a) and self.a[self.pos] == "-o":
                self.advance(False)
                continue
            return v

    def one(self) -> bool:
        v = self.a[self.pos] != ""
        self.pos += 1
        return v

    def two(self) -> bool:
        a, p = self.a, self.pos
        if a[p] == "!":
            self.advance(False)
            return not self.one()
        if len(a[p]) == 2 and a[p][0] == "-":
            if a[p] in _T_UNOPS:
                return self.unary()
            raise _TestSyntax(f"{self.q(a[p])}: unary operator expected")
        self.beyond()
        return False

    def three(self) -> bool:
        a, p = self.a, self.pos
        if a[p + 1] in _T_BINOPS:
            return self.binary()
        if a[p] == "!":
            self.advance(True)
            return not self.two()
        if a[p] == "(" and a[p + 2] == ")":
            self.advance(False)
            v = self.one()
            self.advance(False)
            return v
        if a[p + 1] in ("-a", "-o"):
            return self.expr()
        raise _TestSyntax(f"{self.q(a[p + 1])}: binary operator expected")

    def posix(self, n: int) -> bool:
        a, p = self.a, self.pos
        if n == 1:
            return self.one()
        if n == 2:
            return self.two()
        if n == 3:
            return self.three()
        if n == 4:
            if a[p] == "!":
                self.advance(True)
                return not self.three()
            if a[p] == "(" and a[p + 3] == ")":
                self.advance(False)
                v = self.two()
                self.advance(False)
                return v
        return self.expr()


@command("test", "[", usage="test EXPRESSION", help="Evaluate conditional expression.")
def coreutils_test(ctx: CommandContext, argv: list[str]) -> int:
    args = argv[1:]
    if argv[0].rsplit("/", 1)[-1] == "[":
        if len(args) == 1 and args[0] in ("--help", "--version"):
            from ._args import _print_help
            _print_help(ctx, "[")
            return 0
        if not args or args[-1] != "]":
            from ._args import quote
            ctx.error(f"missing {quote(ctx, ']')}")
            return 2
        args = args[:-1]
    if not args:
        return 1
    t = _CoreTest(ctx, args)
    try:
        v = t.posix(len(args))
        if t.pos != len(args):
            raise _TestSyntax(f"extra argument {t.q(args[t.pos])}")
    except _TestSyntax as e:
        ctx.error(str(e))
        return 2
    return 0 if v else 1
