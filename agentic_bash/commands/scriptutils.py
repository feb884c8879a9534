"""Helpers shell scripts lean on: util-linux ``getopt``, ncurses ``tput`` and gettext's ``envsubst``."""

from __future__ import annotations

import re
import stat

from .base import CommandContext, command, strerror


def _out(ctx: CommandContext, s: str) -> None:
    ctx.stdout.write(s.encode("utf-8", "surrogateescape"))


def _err(ctx: CommandContext, s: str) -> None:
    ctx.stderr.write(s.encode("utf-8", "surrogateescape"))


# -- getopt --------------------------------------------------------------------------------


class _Getopt:
    """glibc getopt_long over ``args`` that, unlike parse_opts, reports every bad option and goes on.

    ``spec`` is a getopt(3) optstring (a leading ``+`` stops at the first operand, ``-`` returns
    operands in place, a following ``:`` silences the messages); ``longs`` maps a long name to
    0/1/2 (no, required, optional argument).  ``run`` yields ``(kind, name, value)`` events:
    ``("short", c, arg)``, ``("long", name, arg)``, ``("operand", None, word)``, and sets ``failed``.
    """

    def __init__(self, spec: str, longs: dict[str, int], prog: str, *, alternative: bool = False,
                 quiet: bool = False, posix: bool = False) -> None:
        self.mode = ""
        if spec[:1] in "+-" and spec:
            self.mode, spec = spec[0], spec[1:]
        if posix and not self.mode:
            self.mode = "+"
        if spec.startswith(":"):
            quiet, spec = True, spec[1:]
        self.shorts: dict[str, int] = {}
        i = 0
        while i < len(spec):
            c = spec[i]
            i += 1
            kind = 0
            if spec[i:i + 2] == "::":
                kind, i = 2, i + 2
            elif spec[i:i + 1] == ":":
                kind, i = 1, i + 1
            self.shorts[c] = kind
        self.longs = longs
        self.prog = prog
        self.alternative = alternative
        self.quiet = quiet
        self.failed = False
        self.messages: list[str] = []

    def _fail(self, msg: str) -> None:
        self.failed = True
        if not self.quiet:
            self.messages.append(f"{self.prog}: {msg}\n")

    def _long(self, body: str, prefix: str, args: list[str], i: int, events: list) -> tuple[int, bool]:
        """Match ``body`` (after the dashes); returns (next index, matched-or-reported)."""
        name, eq, val = body.partition("=")
        if name in self.longs:
            full = name
        else:
            cands = [k for k in self.longs if k.startswith(name)] if name else []
            if not cands:
                return i, False
            if len(cands) > 1:
                poss = " ".join(f"'{prefix}{c}'" for c in cands)
                self._fail(f"option '{prefix}{body}' is ambiguous; possibilities: {poss}")
                return i, True
            full = cands[0]
        kind = self.longs[full]
        value: str | None = None
        if eq:
            if kind == 0:
                self._fail(f"option '{prefix}{full}' doesn't allow an argument")
                return i, True
            value = val
        elif kind == 1:
            if i >= len(args):
                self._fail(f"option '{prefix}{full}' requires an argument")
                return i, True
            value = args[i]
            i += 1
        events.append(("long", full, value))
        return i, True

    def run(self, args: list[str]) -> tuple[list[tuple[str, str | None, str | None]], list[str]]:
        events: list[tuple[str, str | None, str | None]] = []
        operands: list[str] = []
        i, n = 0, len(args)
        while i < n:
            a = args[i]
            i += 1
            if a == "--":
                operands.extend(args[i:])
                break
            if a.startswith("--"):
                i, ok = self._long(a[2:], "--", args, i, events)
                if not ok:
                    self._fail(f"unrecognized option '{a}'")
                continue
            if a.startswith("-") and a != "-":
                # -a (alternative): "-word" is a long option first, unless it is one known short
                if self.alternative and (len(a) > 2 or a[1] not in self.shorts):
                    i, ok = self._long(a[1:], "-", args, i, events)
                    if ok:
                        continue
                    if a[1] not in self.shorts:
                        self._fail(f"unrecognized option '{a}'")
                        continue
                j = 1
                while j < len(a):
                    c = a[j]
                    j += 1
                    kind = self.shorts.get(c)
                    if kind is None or c in ":;":
                        self._fail(f"invalid option -- '{c}'")
                        continue
                    if kind == 0:
                        events.append(("short", c, None))
                        continue
                    rest = a[j:]
                    if rest:
                        events.append(("short", c, rest))
                    elif kind == 2:
                        events.append(("short", c, None))
                    elif i < n:
                        events.append(("short", c, args[i]))
                        i += 1
                    else:
                        self._fail(f"option requires an argument -- '{c}'")
                    break
                continue
            if self.mode == "-":
                events.append(("operand", None, a))
                continue
            operands.append(a)
            if self.mode == "+":
                operands.extend(args[i:])
                break
        return events, operands


_GETOPT_HELP = """
Usage:
 getopt <optstring> <parameters>
 getopt [options] [--] <optstring> <parameters>
 getopt [options] -o|--options <optstring> [options] [--] <parameters>

Parse command options.

Options:
 -a, --alternative             allow long options starting with single -
 -l, --longoptions <longopts>  the long options to be recognized
 -n, --name <progname>         the name under which errors are reported
 -o, --options <optstring>     the short options to be recognized
 -q, --quiet                   disable error reporting by getopt(3)
 -Q, --quiet-output            no normal output
 -s, --shell <shell>           set quoting conventions to those of <shell>
 -T, --test                    test for getopt(1) version
 -u, --unquoted                do not quote the output

 -h, --help                    display this help
 -V, --version                 display version

For more details see getopt(1).
"""

_GETOPT_OWN_LONGS = {"alternative": 0, "help": 0, "longoptions": 1, "name": 1, "options": 1,
                     "quiet": 0, "quiet-output": 0, "shell": 1, "test": 0, "unquoted": 0,
                     "version": 0}
_GETOPT_OWN_SHORT = {"a": "alternative", "h": "help", "l": "longoptions", "n": "name",
                     "o": "options", "q": "quiet", "Q": "quiet-output", "s": "shell", "T": "test",
                     "u": "unquoted", "V": "version"}


def _getopt_quote(s: str, shell: str) -> str:
    # util-linux: sh/bash close the quote around a ' ('\''); tcsh/csh also escape ! and newline
    body = s.replace("'", "'\\''")
    if shell in ("tcsh", "csh"):
        body = body.replace("!", "'\\!'").replace("\n", "\\n")
    return f"'{body}'"


@command("getopt", usage="getopt [options] [--] optstring parameters",
         help="Parse command options (util-linux getopt(1)) and print them normalised and quoted.")
def getopt_cmd(ctx: CommandContext, argv: list[str]) -> int:
    args = argv[1:]

    def usage_fail(msg: str) -> int:
        _err(ctx, f"getopt: {msg}\nTry 'getopt --help' for more information.\n")
        return 2

    if not args:
        return usage_fail("missing optstring argument")
    quote, shell, alternative, quiet, quiet_out = True, "bash", False, False, False
    prog = "getopt"
    optstring: str | None = None
    longs: dict[str, int] = {}
    if not args[0].startswith("-") or "GETOPT_COMPATIBLE" in ctx.env:
        # the first form, `getopt optstring parameters`: old getopt(1), output unquoted
        quote = False
        optstring, params = args[0], args[1:]
    else:
        own = _Getopt("+ao:l:n:qQs:TuhV", _GETOPT_OWN_LONGS, "getopt")
        events, rest = own.run(args)
        if own.failed:
            return usage_fail(own.messages[0][len("getopt: "):].rstrip("\n"))
        for kind, name, value in events:
            key = _GETOPT_OWN_SHORT.get(name or "", name) if kind == "short" else name
            if key == "alternative":
                alternative = True
            elif key == "help":
                _out(ctx, _GETOPT_HELP)
                return 0
            elif key == "version":
                _out(ctx, "getopt from util-linux 2.38.1\n")
                return 0
            elif key == "longoptions":
                for spec in re.split(r"[,\s]+", value or ""):
                    if spec:
                        kind_ = 2 if spec.endswith("::") else 1 if spec.endswith(":") else 0
                        longs[spec.rstrip(":")] = kind_
            elif key == "name":
                prog = value or ""
            elif key == "options":
                optstring = value or ""
            elif key == "quiet":
                quiet = True
            elif key == "quiet-output":
                quiet_out = True
            elif key == "shell":
                if value not in ("sh", "bash", "csh", "tcsh"):
                    return usage_fail("unknown shell after -s or --shell argument")
                shell = value
            elif key == "test":
                return 4
            elif key == "unquoted":
                quote = False
        params = rest
        if optstring is None:
            if not params:
                return usage_fail("missing optstring argument")
            optstring, params = params[0], params[1:]
    parser = _Getopt(optstring, longs, prog, alternative=alternative, quiet=quiet,
                     posix="POSIXLY_CORRECT" in ctx.env)
    events, operands = parser.run(params)
    for m in parser.messages:
        _err(ctx, m)
    if quiet_out:
        return 1 if parser.failed else 0

    def q(s: str) -> str:
        return _getopt_quote(s, shell) if quote else s

    parts: list[str] = []
    for kind, name, value in events:
        if kind == "operand":
            parts.append(" " + q(value or ""))
            continue
        takes = parser.shorts.get(name or "", 0) if kind == "short" else longs.get(name or "", 0)
        parts.append(f" -{name}" if kind == "short" else f" --{name}")
        if takes:
            parts.append(" " + q(value or ""))
    parts.append(" --")
    parts.extend(" " + q(o) for o in operands)
    _out(ctx, "".join(parts) + "\n")
    return 1 if parser.failed else 0


# -- envsubst ------------------------------------------------------------------------------

_ENV_REF = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")

_ENVSUBST_HELP = """Usage: envsubst [OPTION] [SHELL-FORMAT]

Substitutes the values of environment variables.

Operation mode:
  -v, --variables             output the variables occurring in SHELL-FORMAT

Informative output:
  -h, --help                  display this help and exit
  -V, --version               output version information and exit

In normal operation mode, standard input is copied to standard output,
with references to environment variables of the form $VARIABLE or ${VARIABLE}
being replaced with the corresponding values.  If a SHELL-FORMAT is given,
only those environment variables that are referenced in SHELL-FORMAT are
substituted; otherwise all environment variables references occurring in
standard input are substituted.

When --variables is used, standard input is ignored, and the output consists
of the environment variables that are referenced in SHELL-FORMAT, one per line.

Report bugs in the bug tracker at <https://savannah.gnu.org/projects/gettext>
or by email to <bug-gettext@gnu.org>.
"""


@command("envsubst", usage="envsubst [OPTION] [SHELL-FORMAT]",
         help="Copy stdin to stdout with $VAR and ${VAR} replaced by exported variables.")
def envsubst(ctx: CommandContext, argv: list[str]) -> int:
    variables = False
    operands: list[str] = []
    args = argv[1:]
    i = 0
    while i < len(args):
        a = args[i]
        i += 1
        if a == "--":
            operands.extend(args[i:])
            break
        if a in ("-v", "--variables") or (a.startswith("--v") and "--variables".startswith(a)):
            variables = True
        elif a == "-h" or (a.startswith("--h") and "--help".startswith(a)):
            _out(ctx, _ENVSUBST_HELP)
            return 0
        elif a == "-V" or (a.startswith("--ve") and "--version".startswith(a)):
            _out(ctx, "envsubst (GNU gettext-runtime) 0.21\n")
            return 0
        elif a.startswith("--"):
            _err(ctx, f"envsubst: unrecognized option '{a}'\nTry 'envsubst --help' for more information.\n")
            return 1
        elif a.startswith("-") and a != "-":
            bad = next((c for c in a[1:] if c not in "vhV"), None)
            if bad is not None:
                _err(ctx, f"envsubst: invalid option -- '{bad}'\nTry 'envsubst --help' for more information.\n")
                return 1
            if "h" in a:
                _out(ctx, _ENVSUBST_HELP)
                return 0
            if "V" in a:
                _out(ctx, "envsubst (GNU gettext-runtime) 0.21\n")
                return 0
            variables = True
        else:
            operands.append(a)
    if len(operands) > 1:
        _err(ctx, "envsubst: too many arguments\n")
        return 1
    if variables:
        if not operands:
            _err(ctx, "envsubst: missing arguments\n")
            return 1
        # every reference, repeats included, in order
        _out(ctx, "".join((m.group(1) or m.group(2)) + "\n" for m in _ENV_REF.finditer(operands[0])))
        return 0
    allowed: set[str] | None = None
    if operands:
        allowed = {m.group(1) or m.group(2) for m in _ENV_REF.finditer(operands[0])}
    data = ctx.stdin.read().decode("utf-8", "surrogateescape")

    def sub(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(2)
        if allowed is not None and name not in allowed:
            return m.group(0)
        return ctx.env.get(name, "")

    _out(ctx, _ENV_REF.sub(sub, data))
    return 0


# -- tput ----------------------------------------------------------------------------------


def _tparm(cap: str, params: list[int | str]) -> str:
    """Evaluate a terminfo parameterised string (the % language of terminfo(5))."""
    p: list[int | str] = list(params) + [0] * (9 - len(params))
    stack: list[int | str] = []
    dyn: dict[str, int | str] = {}
    out: list[str] = []

    def pop_int() -> int:
        v = stack.pop() if stack else 0
        if isinstance(v, int):
            return v
        try:
            return int(v)
        except ValueError:
            return 0

    def skip(i: int, stop_at_else: bool) -> int:
        # skip to the matching %e (if wanted) or %; at this nesting level
        depth = 0
        while i < len(cap):
            if cap[i] == "%" and i + 1 < len(cap):
                c = cap[i + 1]
                i += 2
                if c == "?":
                    depth += 1
                elif c == ";":
                    if depth == 0:
                        return i
                    depth -= 1
                elif c == "e" and depth == 0 and stop_at_else:
                    return i
                continue
            i += 1
        return i

    i = 0
    while i < len(cap):
        ch = cap[i]
        if ch != "%":
            out.append(ch)
            i += 1
            continue
        i += 1
        if i >= len(cap):
            break
        c = cap[i]
        i += 1
        if c == "%":
            out.append("%")
        elif c == "p" and i < len(cap):
            stack.append(p[int(cap[i]) - 1] if cap[i].isdigit() and cap[i] != "0" else 0)
            i += 1
        elif c == "P" and i < len(cap):
            dyn[cap[i]] = stack.pop() if stack else 0
            i += 1
        elif c == "g" and i < len(cap):
            stack.append(dyn.get(cap[i], 0))
            i += 1
        elif c == "'" and i + 1 < len(cap):
            stack.append(ord(cap[i]))
            i += 2
        elif c == "{":
            j = cap.find("}", i)
            j = len(cap) if j < 0 else j
            try:
                stack.append(int(cap[i:j]))
            except ValueError:
                stack.append(0)
            i = j + 1
        elif c == "l":
            v = stack.pop() if stack else ""
            stack.append(len(str(v)))
        elif c in "+-*/m&|^=<>AO":
            b, a = pop_int(), pop_int()
            r = {"+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b,
                 "/": lambda: int(a / b) if b else 0, "m": lambda: a - b * int(a / b) if b else 0,
                 "&": lambda: a & b, "|": lambda: a | b, "^": lambda: a ^ b,
                 "=": lambda: int(a == b), "<": lambda: int(a < b), ">": lambda: int(a > b),
                 "A": lambda: int(bool(a) and bool(b)), "O": lambda: int(bool(a) or bool(b))}[c]()
            stack.append(r)
        elif c == "!":
            stack.append(int(not pop_int()))
        elif c == "~":
            stack.append(~pop_int())
        elif c == "i":
            for k in (0, 1):
                if isinstance(p[k], int):
                    p[k] = p[k] + 1  # type: ignore[operator]
        elif c == "?":
            pass
        elif c == "t":
            if not pop_int():
                i = skip(i, True)
        elif c == "e":
            i = skip(i, False)
        elif c == ";":
            pass
        elif c == "c":
            out.append(chr(pop_int() & 0xFF))
        elif c == "s":
            out.append(str(stack.pop() if stack else ""))
        else:
            # %[[:]flags][width[.precision]][doxXs]
            m = re.match(r":?([-+# ]*)(\d*)(?:\.(\d+))?([doxXs])", cap[i - 1:])
            if not m:
                continue
            i += m.end() - 1
            flags, width, prec, conv = m.groups()
            fmt = "%" + flags + width + ("." + prec if prec else "") + conv
            if conv == "s":
                out.append(fmt % str(stack.pop() if stack else ""))
            else:
                out.append(fmt % pop_int())
    return "".join(out)


_PADDING = re.compile(r"\$<[\d.]+[*/]*>")

_TPUT_USAGE = """Usage: tput [options] [command]

Options:
  -S <<       read commands from standard input
  -T TERM     use this instead of $TERM
  -V          print curses-version
  -x          do not try to clear scrollback

Commands:
  clear       clear the screen
  init        initialize the terminal
  reset       reinitialize the terminal
  capname     unlike clear/init/reset, print value for capability "capname"
"""

def _nparams(text: str) -> int:
    return max((int(d) for d in re.findall(r"%p([1-9])", text)), default=0)


def _tput_one(ctx: CommandContext, entry: tuple, words: list[str], scrollback: bool = True) -> tuple[int, int]:
    """Print one capability; returns (status, words used).  A status stops the command line."""
    longname, bools, nums, strs = entry
    cap = words[0]
    if cap == "clear" and "clear" in strs:
        # tput's clear also clears the scrollback (the E3 extension) unless -x
        _out(ctx, _PADDING.sub("", strs["clear"] + (strs.get("E3", "") if scrollback else "")))
        return 0, 1
    if cap == "longname":
        _out(ctx, longname)
        return 0, 1
    if cap in ("init", "reset"):
        # these set terminal modes first; a sandbox has no terminal
        _err(ctx, "tput: terminal attributes: No such device or address\n\n")
        return 10, 1
    if cap in ("lines", "cols"):
        env = ctx.env.get("LINES" if cap == "lines" else "COLUMNS", "")
        if env.isdigit() and int(env) > 0:
            _out(ctx, f"{int(env)}\n")
        else:
            _out(ctx, f"{nums.get(cap, 24 if cap == 'lines' else 80)}\n")
        return 0, 1
    if cap in nums:
        _out(ctx, f"{nums[cap]}\n")
        return 0, 1
    if cap in bools:
        return 0, 1
    if cap in strs:
        text = strs[cap]
        want = _nparams(text)
        given = words[1:1 + want]
        if given:
            params: list[int | str] = []
            for w in given:
                try:
                    params.append(int(w, 0))
                except ValueError:
                    params.append(w)
            text = _tparm(text, params)
        _out(ctx, _PADDING.sub("", text))
        return 0, 1 + len(given)
    from ._terminfo import TERMINFO
    if cap == "clear":
        return 2, 1
    if any(cap in e[2] for e in TERMINFO.values()):
        # a numeric capability this terminal lacks prints -1
        _out(ctx, "-1\n")
        return 0, 1
    if any(cap in e[1] or cap in e[3] for e in TERMINFO.values()):
        return 1, 1
    _err(ctx, f"tput: unknown terminfo capability '{cap}'\n")
    return 4, 1


@command("tput", usage="tput [-T term] [-S] [-V] [-x] capname [params...]",
         help="Print terminal capabilities from a built-in terminfo table (xterm, screen, tmux, linux, vt100, dumb, ...).")
def tput(ctx: CommandContext, argv: list[str]) -> int:
    from ._terminfo import TERMINFO

    args = argv[1:]
    term: str | None = None
    from_stdin = False
    scrollback = True
    while args and args[0].startswith("-") and len(args[0]) > 1:
        a = args.pop(0)
        if a == "--":
            break
        if a.startswith("-T"):
            if len(a) > 2:
                term = a[2:]
            elif args:
                term = args.pop(0)
            else:
                _err(ctx, "tput: option requires an argument -- 'T'\n" + _TPUT_USAGE)
                return 2
        elif a == "-S":
            from_stdin = True
        elif a == "-V":
            _out(ctx, "ncurses 6.4.20221231\n")
            return 0
        elif a == "-x":
            scrollback = False
        else:
            _err(ctx, f"tput: invalid option -- '{a[1]}'\n" + _TPUT_USAGE)
            return 2
    if term is None:
        term = ctx.env.get("TERM", "")
    if not term:
        _err(ctx, "tput: No value for $TERM and no -T specified\n")
        return 2
    entry = TERMINFO.get(term)
    if entry is None:
        _err(ctx, f'tput: unknown terminal "{term}"\n')
        return 3
    if from_stdin:
        for line in ctx.stdin.read().decode("utf-8", "surrogateescape").splitlines():
            words = line.split()
            status = _tput_one(ctx, entry, words, scrollback)[0] if words else 0
            if status:
                return status
        return 0
    if not args:
        _err(ctx, _TPUT_USAGE)
        return 2
    # ncurses 6 takes several capabilities on one line, each with the parameters it uses;
    # the first that fails ends the line with its status
    while args:
        status, used = _tput_one(ctx, entry, args, scrollback)
        if status:
            return status
        args = args[used:]
    return 0


# -- pagers, stty, locale: what they do with no terminal -----------------------------------


def _is_dir(ctx: CommandContext, p: str) -> bool:
    try:
        return stat.S_ISDIR(ctx.fs.stat(p).st_mode)
    except OSError:
        return False


def _read_file(ctx: CommandContext, name: str) -> bytes:
    with ctx.fs.open(ctx.path(name), "rb") as f:
        return f.read()


@command("less", usage="less [options] [file...]",
         help="With no terminal (always, here) less copies its files to stdout like cat.")
def less(ctx: CommandContext, argv: list[str]) -> int:
    files = [a for a in argv[1:] if not (a.startswith("-") or a.startswith("+")) or a == "-"]
    if not files:
        ctx.stdout.write(ctx.stdin.read())
        return 0
    for name in files:
        if name == "-":
            ctx.stdout.write(ctx.stdin.read())
            continue
        p = ctx.path(name)
        # less reports a bad file on stdout and still exits 0 when it is not paging
        if _is_dir(ctx, p):
            _out(ctx, f"{name} is a directory\n")
            continue
        try:
            ctx.stdout.write(_read_file(ctx, name))
        except OSError as e:
            _out(ctx, f"{name}: {strerror(e)}\n")
    return 0


@command("more", usage="more [options] [file...]",
         help="With no terminal more prints each file under a ':::' header, like util-linux more.")
def more(ctx: CommandContext, argv: list[str]) -> int:
    files = [a for a in argv[1:] if not (a.startswith("-") or a.startswith("+"))]
    if not files:
        ctx.stdout.write(ctx.stdin.read())
        return 0
    bar = "::::::::::::::"
    for name in files:
        p = ctx.path(name)
        if _is_dir(ctx, p):
            _out(ctx, f"\n*** {name}: directory ***\n\n")
            continue
        try:
            data = _read_file(ctx, name)
        except OSError as e:
            _err(ctx, f"more: cannot open {name}: {strerror(e)}\n")
            continue
        _out(ctx, f"{bar}\n{name}\n{bar}\n")
        ctx.stdout.write(data)
    return 0


@command("stty", usage="stty [-F device] [-a|-g] [setting...]",
         help="Terminal line settings; a sandbox's stdin is never a terminal.")
def stty(ctx: CommandContext, argv: list[str]) -> int:
    if argv[1:2] == ["--version"]:
        _out(ctx, "stty (GNU coreutils) 9.1\n")
        return 0
    _err(ctx, "stty: 'standard input': Inappropriate ioctl for device\n")
    return 1


_LC_CATEGORIES = ("LC_CTYPE", "LC_NUMERIC", "LC_TIME", "LC_COLLATE", "LC_MONETARY", "LC_MESSAGES",
                  "LC_PAPER", "LC_NAME", "LC_ADDRESS", "LC_TELEPHONE", "LC_MEASUREMENT",
                  "LC_IDENTIFICATION")
_LOCALES = ("C", "C.utf8", "POSIX")


@command("locale", usage="locale [-a | -m | NAME...]",
         help="Report the locale settings from LANG/LC_* (the sandbox has C, C.utf8 and POSIX).")
def locale(ctx: CommandContext, argv: list[str]) -> int:
    args = argv[1:]
    env = ctx.env
    if args in (["-a"], ["--all-locales"]):
        _out(ctx, "".join(n + "\n" for n in _LOCALES))
        return 0
    for a in args:
        if a.startswith("-") and a not in ("-a", "--all-locales"):
            _err(ctx, f"locale: invalid option -- '{a[1:2]}'\n"
                      "Try `locale --help' or `locale --usage' for more information.\n")
            return 64
    lc_all = env.get("LC_ALL", "")
    lang = env.get("LANG", "")

    def effective(cat: str) -> str:
        return lc_all or env.get(cat, "") or lang or "POSIX"

    if args:
        status = 0
        for a in args:
            if a == "charmap":
                eff = effective("LC_CTYPE").lower()
                _out(ctx, "UTF-8\n" if "utf-8" in eff or "utf8" in eff else "ANSI_X3.4-1968\n")
            elif a in _LC_CATEGORIES:
                continue
            else:
                _err(ctx, f'locale: unknown name "{a}"\n')
                status = 1
        return status
    lines = [f"LANG={lang}", f"LANGUAGE={env.get('LANGUAGE', '')}"]
    for cat in _LC_CATEGORIES:
        # glibc quotes a value it derived, and prints one set explicitly as it is
        if not lc_all and env.get(cat):
            lines.append(f"{cat}={env[cat]}")
        else:
            lines.append(f'{cat}="{effective(cat)}"')
    lines.append(f"LC_ALL={lc_all}")
    _out(ctx, "\n".join(lines) + "\n")
    return 0


# -- pathchk, logger -----------------------------------------------------------------------

_PORTABLE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-/")


def _pathchk_one(ctx: CommandContext, name: str, basic: bool, extra: bool) -> bool:
    from ._args import quote, quoteaf, quotef
    if extra:
        for comp in name.split("/"):
            if comp.startswith("-"):
                ctx.error(f"leading '-' in a component of file name {quoteaf(name)}")
                return False
    if (basic or extra) and not name:
        ctx.error("empty file name")
        return False
    exists = False
    if basic:
        bad = next((c for c in name if c not in _PORTABLE), None)
        if bad is not None:
            ctx.error(f"nonportable character {quote(ctx, bad)} in file name {quoteaf(name)}")
            return False
    else:
        too_long = len(name.encode("utf-8", "surrogateescape")) >= 4096 or any(
            len(c.encode("utf-8", "surrogateescape")) > 255 for c in name.split("/"))
        try:
            if too_long:
                raise OSError(36, "File name too long")
            if not name:
                raise OSError(2, "No such file or directory")  # lstat("") fails
            ctx.fs.stat(ctx.path(name), follow_symlinks=False)
            exists = True
        except OSError as e:
            if e.errno != 2 or not name:
                ctx.error(f"{quotef(name)}: {strerror(e)}")
                return False
    if basic and len(name.encode("utf-8", "surrogateescape")) >= 256:
        ctx.error(f"limit 255 exceeded by length {len(name.encode('utf-8', 'surrogateescape'))} of file name {quoteaf(name)}")
        return False
    if basic or not exists:
        limit = 14 if basic else 255
        for comp in name.split("/"):
            n = len(comp.encode("utf-8", "surrogateescape"))
            if n > limit:
                ctx.error(f"limit {limit} exceeded by length {n} of file name component {quote(ctx, comp)}")
                return False
    return True


@command("pathchk", usage="pathchk [OPTION]... NAME...",
         help="Diagnose invalid or non-portable file names.")
def pathchk(ctx: CommandContext, argv: list[str]) -> int:
    from ._args import OptError, parse_opts
    try:
        opts, names = parse_opts(ctx, argv, "pP", {"portability": None}, status=1)
    except OptError as e:
        return e.status
    keys = {k for k, _ in opts}
    basic = "p" in keys or "portability" in keys
    extra = "P" in keys or "portability" in keys
    if not names:
        ctx.error("missing operand")
        ctx.stderr.write(b"Try 'pathchk --help' for more information.\n")
        return 1
    ok = True
    for n in names:
        ok = _pathchk_one(ctx, n, basic, extra) and ok
    return 0 if ok else 1


@command("logger", usage="logger [options] [message]",
         help="Log to the system log; a sandbox has no syslog socket, so messages go nowhere.")
def logger(ctx: CommandContext, argv: list[str]) -> int:
    # util-linux logger: without a syslog socket a plain call still succeeds silently; with
    # -s (also copy to stderr) it reports the missing socket and fails
    if any(a == "-s" or a == "--stderr" or (a.startswith("-") and not a.startswith("--") and "s" in a[1:]
                                           and not any(c in a[1:] for c in "tpfnPu"))
           for a in argv[1:]):
        _err(ctx, "logger: socket /dev/log: No such file or directory\n")
        return 1
    if "-" in argv[1:] or not [a for a in argv[1:] if not a.startswith("-")]:
        ctx.stdin.read()
    return 0


# -- clear, dircolors ----------------------------------------------------------------------

@command("clear", usage="clear [-T TERM] [-V] [-x]", help="Clear the screen (the terminfo clear string, plus E3 unless -x).")
def clear(ctx: CommandContext, argv: list[str]) -> int:
    from ._terminfo import TERMINFO

    term = ctx.env.get("TERM")
    scrollback = True
    args = argv[1:]
    while args:
        a = args.pop(0)
        if a == "-V":
            _out(ctx, "ncurses 6.4.20221231\n")
            return 0
        if a == "-x":
            scrollback = False
        elif a.startswith("-T"):
            term = a[2:] or (args.pop(0) if args else "")
        else:
            _err(ctx, f"clear: invalid option -- '{a.lstrip('-')[:1]}'\nUsage: clear [options]\n")
            return 2
    if not term:
        _err(ctx, "TERM environment variable not set.\n")
        return 1
    entry = TERMINFO.get(term)
    if entry is None:
        _err(ctx, f"'{term}': unknown terminal type.\n")
        return 1
    strs = entry[3]
    if "clear" not in strs:
        return 1
    _out(ctx, _PADDING.sub("", strs["clear"] + (strs.get("E3", "") if scrollback else "")))
    return 0


# coreutils 9.1's default database: the colours, and the TERM globs they apply to
_LS_COLORS = 'rs=0:di=01;34:ln=01;36:mh=00:pi=40;33:so=01;35:do=01;35:bd=40;33;01:cd=40;33;01:or=40;31;01:mi=00:su=37;41:sg=30;43:ca=00:tw=30;42:ow=34;42:st=37;44:ex=01;32:*.tar=01;31:*.tgz=01;31:*.arc=01;31:*.arj=01;31:*.taz=01;31:*.lha=01;31:*.lz4=01;31:*.lzh=01;31:*.lzma=01;31:*.tlz=01;31:*.txz=01;31:*.tzo=01;31:*.t7z=01;31:*.zip=01;31:*.z=01;31:*.dz=01;31:*.gz=01;31:*.lrz=01;31:*.lz=01;31:*.lzo=01;31:*.xz=01;31:*.zst=01;31:*.tzst=01;31:*.bz2=01;31:*.bz=01;31:*.tbz=01;31:*.tbz2=01;31:*.tz=01;31:*.deb=01;31:*.rpm=01;31:*.jar=01;31:*.war=01;31:*.ear=01;31:*.sar=01;31:*.rar=01;31:*.alz=01;31:*.ace=01;31:*.zoo=01;31:*.cpio=01;31:*.7z=01;31:*.rz=01;31:*.cab=01;31:*.wim=01;31:*.swm=01;31:*.dwm=01;31:*.esd=01;31:*.avif=01;35:*.jpg=01;35:*.jpeg=01;35:*.mjpg=01;35:*.mjpeg=01;35:*.gif=01;35:*.bmp=01;35:*.pbm=01;35:*.pgm=01;35:*.ppm=01;35:*.tga=01;35:*.xbm=01;35:*.xpm=01;35:*.tif=01;35:*.tiff=01;35:*.png=01;35:*.svg=01;35:*.svgz=01;35:*.mng=01;35:*.pcx=01;35:*.mov=01;35:*.mpg=01;35:*.mpeg=01;35:*.m2v=01;35:*.mkv=01;35:*.webm=01;35:*.webp=01;35:*.ogm=01;35:*.mp4=01;35:*.m4v=01;35:*.mp4v=01;35:*.vob=01;35:*.qt=01;35:*.nuv=01;35:*.wmv=01;35:*.asf=01;35:*.rm=01;35:*.rmvb=01;35:*.flc=01;35:*.avi=01;35:*.fli=01;35:*.flv=01;35:*.gl=01;35:*.dl=01;35:*.xcf=01;35:*.xwd=01;35:*.yuv=01;35:*.cgm=01;35:*.emf=01;35:*.ogv=01;35:*.ogx=01;35:*.aac=00;36:*.au=00;36:*.flac=00;36:*.m4a=00;36:*.mid=00;36:*.midi=00;36:*.mka=00;36:*.mp3=00;36:*.mpc=00;36:*.ogg=00;36:*.ra=00;36:*.wav=00;36:*.oga=00;36:*.opus=00;36:*.spx=00;36:*.xspf=00;36:*~=00;90:*#=00;90:*.bak=00;90:*.old=00;90:*.orig=00;90:*.part=00;90:*.rej=00;90:*.swp=00;90:*.tmp=00;90:*.dpkg-dist=00;90:*.dpkg-old=00;90:*.ucf-dist=00;90:*.ucf-new=00;90:*.ucf-old=00;90:*.rpmnew=00;90:*.rpmorig=00;90:*.rpmsave=00;90:'
_DIRCOLORS_TERMS = ("Eterm", "ansi", "*color*", "con[0-9]*x[0-9]*", "cons25", "console", "cygwin",
                    "*direct*", "dtterm", "gnome", "hurd", "jfbterm", "konsole", "kterm", "linux",
                    "linux-c", "mlterm", "putty", "rxvt*", "screen*", "st", "terminator", "tmux*",
                    "vt100", "xterm*")


@command("dircolors", usage="dircolors [OPTION]... [FILE]", help="Output commands to set the LS_COLORS environment variable.")
def dircolors(ctx: CommandContext, argv: list[str]) -> int:
    import fnmatch

    from ._args import OptError, parse_opts
    try:
        opts, ops = parse_opts(ctx, argv, "bcp", {"sh": "b", "bourne-shell": "b", "csh": "c",
                                                  "c-shell": "c", "print-database": "p"}, status=1)
    except OptError as e:
        return e.status
    keys = [k for k, _ in opts]
    if "p" in keys:
        ctx.error("--print-database is not supported here")
        return 1
    if ops:
        ctx.error(f"extra operand {ops[0]!r}" if len(ops) > 1 else f"{ops[0]}: No such file or directory")
        return 1
    shell = ctx.env.get("SHELL", "")
    if "b" not in keys and "c" not in keys and not shell:
        ctx.error("no SHELL environment variable, and no shell type option given")
        return 1
    csh = "c" in keys or ("b" not in keys and shell.rsplit("/", 1)[-1] in ("csh", "tcsh"))
    term = ctx.env.get("TERM", "")
    colour = bool(ctx.env.get("COLORTERM")) or any(fnmatch.fnmatchcase(term, g) for g in _DIRCOLORS_TERMS)
    value = _LS_COLORS if colour else ""
    _out(ctx, f"setenv LS_COLORS '{value}'\n" if csh else f"LS_COLORS='{value}';\nexport LS_COLORS\n")
    return 0
