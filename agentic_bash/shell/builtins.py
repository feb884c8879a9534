"""Shell builtins: ``fn(sh, argv) -> int`` writing through the shell's fd table."""

from __future__ import annotations

import errno
import io
import os
import re
import select
import stat
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Callable

from .._lazyre import lazy_compile as _lazy_re
from ..errors import LimitExceeded, ParseError
from ..limits import WATCH_EARLY_MAX, WATCH_GRACE, Budget, charge_read, check_words
from ..vfs.paths import normalize
from . import nodes as N
from .expand import ExpansionError
from .quoting import printable_filename
from .state import (
    ARRAY, ASSOC, CAPCASE, EXPORT, HISTORY_MAX, INTEGER, LOWER, NAMEREF, READONLY, SET_OPTIONS, SPECIAL,
    TEMPVAR, TRACE, UPPER, VAR_COST, list_cost, new_var_cost,
    LETTER_TO_OPTION, Var, VarError,
)

if TYPE_CHECKING:  # pragma: no cover
    from .interpreter import Interpreter

__all__ = ["BUILTINS", "builtin"]


def _circular_ref() -> type[BaseException]:
    """interpreter.CircularRef, looked up only when an exception is being matched."""
    from .interpreter import CircularRef
    return CircularRef

BUILTINS: dict[str, Callable[[Interpreter, list[str]], int]] = {}
NULL_INPUT = io.BytesIO(b"")
_NAME_RE = _lazy_re(r"[A-Za-z_][A-Za-z_0-9]*\Z")
_ASSIGN_RE = _lazy_re(r"([A-Za-z_][A-Za-z_0-9]*)(\[.*\])?(\+?)=(.*)\Z", re.S)

KEYWORDS = frozenset("if then else elif fi case esac for select while until do done in function time { } ! [[ ]] coproc".split())


def builtin(*names: str):
    def deco(fn):
        for n in names:
            BUILTINS[n] = fn
        return fn
    return deco


def _out(sh: Interpreter, s: str) -> None:
    if len(s) > _OUT_CHUNK:
        out = sh.fds.get(1)
        if out is None:
            raise OSError(errno.EBADF, "Bad file descriptor")
        _write_chunked(out, s)
        return
    sh.write_out(s.encode("utf-8", "surrogateescape"))


_OUT_CHUNK = 1 << 20


def _write_chunked(out: Any, s: str) -> None:
    """Write a long ``s`` encoded a MiB at a time: its whole encoding (plus the copy that
    built it) was a transient as large as the value for each writer, which no pool counted
    (six jobs each echoing a 60 MB value into sort peaked at +0.8-1 GiB; contract13)."""
    for i in range(0, len(s), _OUT_CHUNK):
        out.write(s[i:i + _OUT_CHUNK].encode("utf-8", "surrogateescape"))


def _usage_err(sh: Interpreter, name: str, msg: str, status: int = 2) -> int:
    sh.error(f"{name}: {msg}")
    return status


_LEGAL_NUM_RE = _lazy_re(r"[ \t\n]*([-+]?[0-9]+)[ \t\n]*\Z")


def legal_number(s: str) -> int | None:
    """bash's legal_number: an intmax_t, surrounding blanks allowed; None if not one (or if
    it overflows)."""
    m = _LEGAL_NUM_RE.match(s)
    if m is None:
        return None
    n = int(m.group(1))
    return n if -(1 << 63) <= n < (1 << 63) else None


def _bad_opt(sh: Interpreter, name: str, opt: str, usage: str) -> int:
    sh.error(f"{name}: {opt}: invalid option")
    sh.write_err(f"{name}: usage: {usage}\n".encode())
    return 2


# ---------------------------------------------------------------------------- trivial
@builtin(":", "true")
def b_true(sh: Interpreter, argv: list[str]) -> int:
    return 0


@builtin("false")
def b_false(sh: Interpreter, argv: list[str]) -> int:
    return 1


@builtin("echo")
def b_echo(sh: Interpreter, argv: list[str]) -> int:
    if (len(argv) < 2 or argv[1][:1] != "-") and not sh.state.shopt["xpg_echo"]:
        # no option, no escapes: the words and a newline
        out = sh.fds.get(1)
        if out is None:
            raise OSError(errno.EBADF, "Bad file descriptor")
        if len(argv) == 2 and len(argv[1]) > _OUT_CHUNK:
            _write_chunked(out, argv[1])
            out.write(b"\n")
            return 0
        out.write(((argv[1] if len(argv) == 2 else " ".join(argv[1:])) + "\n").encode("utf-8", "surrogateescape"))
        return 0
    args = argv[1:]
    nl = True
    esc = sh.state.shopt["xpg_echo"]
    i = 0
    if sh.dash:
        # dash's echo: only a first -n is an option, and escapes are always interpreted
        if args[:1] == ["-n"]:
            nl = False
            i = 1
    else:
        while i < len(args):
            a = args[i]
            if len(a) > 1 and a[0] == "-" and all(c in "neE" for c in a[1:]):
                for c in a[1:]:
                    if c == "n":
                        nl = False
                    elif c == "e":
                        esc = True
                    else:
                        esc = False
                i += 1
            else:
                break
    s = " ".join(args[i:])
    if esc:
        from .printf import echo_escapes
        data, stop = echo_escapes(s)
        if stop:
            nl = False
        if nl:
            data += b"\n"
    else:
        data = (s + "\n" if nl else s).encode("utf-8", "surrogateescape")
    sh.write_out(data)
    return 0


_printf_mod: Any = None  # shell.printf, imported on the first printf (a per-call import cost ~0.4 us)


def _printf_localtime(sh: Interpreter) -> Callable[[float], Any]:
    """%(fmt)T's local time: in the zone TZ names in the environment the shell exports (bash
    calls tzset when an exported TZ changes, and `TZ=x printf` exports it for the command);
    UTC without one, as the sandbox's `date` (never the host's zone)."""
    import datetime as _dt

    from ..commands.sysutils import _tz_from
    tz = _tz_from(sh.state.environ().get("TZ") or "")

    def localtime(t: float) -> Any:
        d = _dt.datetime.fromtimestamp(t, tz)
        off = d.utcoffset()
        return time.struct_time((*d.timetuple()[:9], d.tzname() or "UTC",
                                 int(off.total_seconds()) if off is not None else 0))
    return localtime


@builtin("printf")
def b_printf(sh: Interpreter, argv: list[str]) -> int:
    global _printf_mod
    pf = _printf_mod
    if pf is not None and len(argv) == 2:
        f = argv[1]
        if f[:1] != "-" and f.isascii():
            data = pf.plain(f)  # (`printf 'text\n'`: format()'s first test, without its call)
            if data is not None:
                sh.write_out(data)
                return 0
    if sh.dash and len(argv) > 1:
        if argv[1][:1] == "-" and argv[1] not in ("-", "--"):
            sh.error(f"printf: Illegal option {argv[1][:2]}")  # (dash's printf has no -v)
            return 2
        m = _DASH_PRINTF_BAD.search(argv[2] if argv[1] == "--" and len(argv) > 2 else argv[1])
        if m:
            sh.error(f"printf: {m.group(0)}: invalid directive")  # (no %q, %Q, %(…)T in dash)
            return 2
    if pf is None:
        try:
            from . import printf as pf
        except ImportError:  # pragma: no cover - shell.printf not landed: use the command
            return sh.run_external(argv)
        _printf_mod = pf
    args = argv[1:]
    var = None
    while args and args[0].startswith("-") and args[0] != "-":
        if args[0] == "--":
            args = args[1:]
            break
        if args[0] == "-v":
            if len(args) < 2:
                sh.error("printf: -v: option requires an argument")
                sh.write_err(b"printf: usage: printf [-v var] format [arguments]\n")
                return 2
            var = args[1]
            args = args[2:]
        elif args[0].startswith("-v"):
            var = args[0][2:]
            args = args[1:]
        else:
            return _bad_opt(sh, "printf", args[0][:2], "printf [-v var] format [arguments]")
    if not args:
        sh.write_err(b"printf: usage: printf [-v var] format [arguments]\n")
        return 2
    byte_chars = False
    if not (args[0].isascii() if len(args) == 1 else all(a.isascii() for a in args)) and sh.byte_locale():
        # the C locale: %q quotes each non-ASCII byte, '\xc3 is 195
        from .interpreter import byte_view
        args = [byte_view(a) for a in args]
        byte_chars = True
    def assign_n(name: str, count: int) -> str | None:
        try:
            sh.set_var(name, str(count))
        except VarError as e:
            return e.message
        return None

    data, status, errors = pf.format(args[0], args[1:], byte_chars=byte_chars, assign_n=assign_n,
                                     flush=sh.write_out if var is None else None,
                                     localtime=_printf_localtime(sh) if "T" in args[0] else None)
    if var is None and errors:
        # bash's stdout is line-buffered: an error comes after the complete lines formatted
        # before it (what shows under 2>&1), the rest of a partial line after the error
        pos = 0
        for e, at in zip(errors, getattr(errors, "at", [0] * len(errors))):
            cut = data.rfind(b"\n", pos, at) + 1
            if cut > pos:
                sh.write_out(data[pos:cut])
                pos = cut
            sh.error(e)
        data = data[pos:]
    else:
        for e in errors:
            sh.error(e)
    if var is not None:
        try:
            # a shell variable is a C string: it ends at the first NUL (bash)
            s = data.split(b"\0", 1)[0].decode("utf-8", "surrogateescape")
            if "[" in var and var.endswith("]"):
                nm, _, sub = var.partition("[")
                sh.assign_element(nm, sh.sub_word(sub[:-1]), s)
            else:
                if not _NAME_RE.match(var):
                    sh.error(f"printf: `{var}': not a valid identifier")
                    return 2
                sh.set_var(var, s)
        except VarError as e:
            sh.error(e.message)
            return 1
        except _circular_ref():
            return 1  # resolving the name already warned
    else:
        sh.write_out(data)
    return status


# ---------------------------------------------------------------------------- test
@builtin("test", "[")
def b_test(sh: Interpreter, argv: list[str]) -> int:
    from .testexpr import evaluate
    bracket = argv[0] == "["
    args = argv[1:]
    if bracket:
        if not args or args[-1] != "]":
            sh.error("[: missing `]'")
            return 2
        args = args[:-1]
    if sh.dash and "==" in args:
        # dash's test has no `==` (a common bashism in #!/bin/sh scripts): the word before it
        # is an "unexpected operator", status 2
        i = args.index("==")
        if 0 < i < len(args) - 1 and args[i - 1] not in ("=", "!=", "!"):
            sh.error(f"{argv[0]}: {args[i - 1]}: unexpected operator")
            return 2
    st, msg = evaluate(args, fs=sh.cmd_fs(), cwd=sh.state.cwd, is_var_set=sh.var_is_set, bracket=bracket,
                       is_option_set=sh.option_is_set, uid=sh.info.uid, gid=sh.info.gid,
                       isatty=sh.fd_is_tty)
    if msg:
        sh.error(msg)
    return st


# ---------------------------------------------------------------------------- cd & dirs
def _physical_path(sh: Interpreter, path: str) -> str:
    """Absolute ``path`` resolved one component at a time as the kernel does (a symlink
    replaced by its target before the next ``..``); OSError as chdir(2) would fail."""
    todo = [c for c in reversed(path.split("/")) if c and c != "."]
    out: list[str] = []
    hops = 0
    while todo:
        c = todo.pop()
        if c == "..":
            if out:
                out.pop()
            continue
        cur = "/" + "/".join(out + [c])
        s = sh.fs.lstat(cur)
        if s.is_symlink:
            hops += 1
            if hops > 40:
                raise OSError(errno.ELOOP, os.strerror(errno.ELOOP))
            t = sh.fs.readlink(cur)
            if t.startswith("/"):
                out = []
            todo.extend(x for x in reversed(t.split("/")) if x and x != ".")
            continue
        if todo and not s.is_dir:
            raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR))
        out.append(c)
    return "/" + "/".join(out)


def _exists(sh: Interpreter, path: str) -> bool:
    try:
        sh.fs.stat(path)
    except OSError:
        return False
    return True


def _chdir(sh: Interpreter, target: str, *, physical: bool = False) -> str | None:
    """Change directory; returns an error message or None."""
    st = sh.state
    if physical:
        # -P: chdir(2) resolves each `..` after the symlinks before it (`cd -P lnk/..` is
        # the link target's parent; from a logical cwd under a link too), as the kernel does
        raw = target if target.startswith("/") else st.cwd.rstrip("/") + "/" + target
        try:
            target = _physical_path(sh, raw)
        except OSError as e:
            return f"{target}: {os.strerror(e.errno or errno.ENOENT)}"
    if ".." in target.split("/"):
        # bash's canonicalization checks that what precedes each `..` is a directory:
        # `cd /nonexistent/..` fails instead of landing in /
        base = target if target.startswith("/") else st.cwd.rstrip("/") + "/" + target
        comps: list[str] = []
        for c in base.split("/"):
            if c in ("", "."):
                continue
            if c != "..":
                comps.append(c)
                continue
            cur = "/" + "/".join(comps)
            try:
                if not sh.fs.stat(cur).is_dir:
                    return f"{target}: Not a directory"
            except FileNotFoundError:
                # (check10) bash then tries chdir(target) from where it is: from a removed
                # cwd `cd ..` reaches its parent
                if (target.startswith("/") or not (st.cwd + "/").startswith(cur.rstrip("/") + "/")
                        or _exists(sh, st.cwd)):
                    return f"{target}: No such file or directory"
            except NotADirectoryError:
                return f"{target}: Not a directory"
            except OSError:
                pass
            if comps:
                comps.pop()
    path = normalize(target, st.cwd)
    try:
        s = sh.fs.stat(path)
    except FileNotFoundError:
        return f"{target}: No such file or directory"
    except NotADirectoryError:
        return f"{target}: Not a directory"
    except OSError as e:
        return f"{target}: {os.strerror(e.errno or 1)}"
    if not s.is_dir:
        return f"{target}: Not a directory"
    if not sh.fs.access(path, os.X_OK) if hasattr(sh.fs, "access") else False:
        return f"{target}: Permission denied"
    if physical:
        try:
            path = sh.fs.realpath(path)
        except Exception:
            pass
    old = st.cwd
    st.cwd = path
    try:
        sh.set_var("OLDPWD", old)
        sh.set_var("PWD", path)
    except VarError:
        pass
    return None


@builtin("cd")
def b_cd(sh: Interpreter, argv: list[str]) -> int:
    args = argv[1:]
    physical = False
    while args and args[0].startswith("-") and args[0] != "-" and len(args[0]) > 1:
        a = args.pop(0)
        if a == "--":
            break
        for c in a[1:]:
            if c == "P":
                physical = True
            elif c == "L":
                physical = False
            elif c == "e":
                pass  # (-@ needs O_XATTR, which Linux bash lacks: an invalid option there)
            else:
                return _bad_opt(sh, "cd", "-" + c, "cd [-L|[-P [-e]] [-@]] [dir]")
    if len(args) > 1:
        if sh.dash:
            args = args[:1]  # (dash ignores the rest)
        else:
            sh.error("cd: too many arguments")
            return 1
    print_dir = False
    if not args:
        home = sh.get_scalar("HOME")
        if home is None:
            sh.error("cd: HOME not set")
            return 1
        if not home:
            return 0  # an empty HOME: nothing to do, as `cd ""`
        target = home
    else:
        target = args[0]
        if target == "-":
            old = sh.get_scalar("OLDPWD")
            if old is None:
                sh.error("cd: OLDPWD not set")
                return 1
            if not old:
                _out(sh, "\n")  # (bash: an empty OLDPWD is `cd ""`, its name printed)
                return 0
            target = old
            print_dir = True
        elif target == "":
            return 0
    if not target.startswith("/") and not target.startswith(".") and args:
        cdpath = sh.get_scalar("CDPATH")
        if cdpath:
            for d in cdpath.split(":"):
                cand = normalize(target, normalize(d or ".", sh.state.cwd))
                try:
                    if sh.fs.stat(cand).is_dir:
                        err = _chdir(sh, cand, physical=physical)
                        if err is None:
                            if d:
                                _out(sh, sh.state.cwd + "\n")
                            return _pwd_readonly(sh)
                except OSError:
                    pass
    err = _chdir(sh, target, physical=physical)
    if err:
        if sh.dash:
            sh.error(f"cd: can't cd to {args[0] if args else target}")
            return 2
        name, _, why = err.rpartition(": ")
        sh.error(f"cd: {printable_filename(name)}: {why}")
        return 1
    if print_dir:
        _out(sh, sh.state.cwd + "\n")
    return _pwd_readonly(sh)


def _pwd_readonly(sh: Interpreter) -> int:
    """bash's bindpwd after a change of directory: a readonly OLDPWD or PWD is reported and
    cd fails (the directory has changed)."""
    for n in ("OLDPWD", "PWD"):
        v = sh.state.find(n)
        if v is not None and v.attrs & READONLY:
            sh.error(f"{n}: readonly variable")
            return 1
    return 0


@builtin("pwd")
def b_pwd(sh: Interpreter, argv: list[str]) -> int:
    r = _getopt(sh, "pwd", argv[1:], "LP", "pwd [-LP]")
    if type(r) is int:
        return r
    flags = r[0]  # type: ignore[index]
    phys = bool(flags) and flags[-1][0] == "P"  # the last of -L/-P wins
    cwd = sh.state.cwd
    if phys:
        try:
            cwd = sh.fs.realpath(cwd)
        except Exception:
            pass
    _out(sh, cwd + "\n")
    return 0


def _dirs_list(sh: Interpreter, long: bool = False) -> list[str]:
    items = [sh.state.cwd] + sh.state.dirstack
    return items if long else [sh.tilde_short(d) for d in items]


_PUSHD_USAGE = "pushd [-n] [+N | -N | dir]"
_POPD_USAGE = "popd [-n] [+N | -N]"


def _stack_args(sh: Interpreter, name: str, args: list[str], usage: str) -> list[str] | int:
    """pushd/popd operands without ``-n``/``--``; a ``+x``/``-x`` word that is not an index
    is an "invalid number" (status 2), as bash checks before touching the stack."""
    out: list[str] = []
    rest = False
    for a in args:
        if not rest and a == "--":
            rest = True
        elif not rest and a == "-n":
            continue
        elif not rest and len(a) > 1 and a[0] in "+-" and not a[1:].isdigit():
            sh.error(f"{name}: {a}: invalid number")
            sh.write_err(f"{name}: usage: {usage}\n".encode())
            return 2
        else:
            out.append(a)
    return out


@builtin("dirs")
def b_dirs(sh: Interpreter, argv: list[str]) -> int:
    long = per_line = verbose = False
    for a in argv[1:]:
        if a == "--":
            break
        if a[:1] not in ("-", "+") or len(a) < 2 or not (
                a[1:].isdigit() or a[0] == "-" and set(a[1:]) <= set("clpv")):
            # bash: any word that is not all option letters must be a stack index
            sh.error(f"dirs: {a}: invalid {'option' if a[:1] not in ('-', '+') else 'number'}")
            sh.write_err(b"dirs: usage: dirs [-clpv] [+N] [-N]\n")
            return 2
    for a in argv[1:]:
        if a == "--":
            break
        if a == "-c":
            sh.state.dirstack = []
            return 0
        if a.startswith("-") and len(a) > 1 and not a[1:].isdigit():
            for c in a[1:]:
                if c == "l":
                    long = True
                elif c == "p":
                    per_line = True
                elif c == "v":
                    verbose = per_line = True
                else:
                    return _bad_opt(sh, "dirs", "-" + c, "dirs [-clpv] [+N] [-N]")
        elif a[:1] in "+-" and a[1:].isdigit():
            items = _dirs_list(sh, long)
            n = int(a[1:])
            idx = n if a[0] == "+" else len(items) - 1 - n
            if not 0 <= idx < len(items):
                sh.error(f"dirs: {a[1:]}: directory stack index out of range" if sh.state.dirstack
                         else "dirs: directory stack empty")
                return 1
            _out(sh, items[idx] + "\n")
            return 0
    items = _dirs_list(sh, long)
    if verbose:
        _out(sh, "".join(f"{i:2d}  {d}\n" for i, d in enumerate(items)))
    elif per_line:
        _out(sh, "".join(d + "\n" for d in items))
    else:
        _out(sh, " ".join(items) + "\n")
    return 0


@builtin("pushd")
def b_pushd(sh: Interpreter, argv: list[str]) -> int:
    r = _stack_args(sh, "pushd", argv[1:], _PUSHD_USAGE)
    if type(r) is int:
        return r
    args: list[str] = r  # type: ignore[assignment]
    if len(args) > 1:
        sh.error("pushd: too many arguments")
        return 1
    st = sh.state
    no_cd = "-n" in argv[1:argv.index("--") if "--" in argv else len(argv)]
    if no_cd and not (args and args[0][:1] in "+-" and args[0][1:].isdigit()):
        # -n: the directory goes under the top of the stack, no cd (and no check)
        if not args:
            return 0
        sh.grow(list_cost(args[:1]))   # (max_shell_bytes: contract13)
        st.dirstack.insert(0, args[0])
        _out(sh, " ".join(_dirs_list(sh)) + "\n")
        return 0
    if not args:
        if not st.dirstack:
            sh.error("pushd: no other directory")
            return 1
        top = st.dirstack[0]
        err = _chdir(sh, top)
        if err:
            sh.error(f"pushd: {err}")
            return 1
        st.dirstack[0] = sh.get_scalar("OLDPWD") or "/"
    elif args[0][:1] in "+-" and args[0][1:].isdigit():
        items = [st.cwd] + st.dirstack
        n = int(args[0][1:])
        k = n if args[0][0] == "+" else len(items) - 1 - n
        if not 0 <= k < len(items):
            sh.error(f"pushd: {args[0]}: directory stack index out of range" if st.dirstack
                     else "pushd: directory stack empty")
            return 1
        items = items[k:] + items[:k]
        err = _chdir(sh, items[0])
        if err:
            sh.error(f"pushd: {err}")
            return 1
        st.dirstack = items[1:]
    else:
        old = st.cwd
        dash = args[0] == "-"
        if dash:
            prev = sh.get_scalar("OLDPWD")
            if prev is None:
                sh.error("pushd: OLDPWD not set")
                return 1
            args[0] = prev
        err = _chdir(sh, args[0])
        if err:
            sh.error(f"pushd: {err}")
            return 1
        if dash:
            _out(sh, st.cwd + "\n")  # `pushd -` is `cd -`, which names the new directory
        sh.grow(list_cost((old,)))
        st.dirstack.insert(0, old)
    _out(sh, " ".join(_dirs_list(sh)) + "\n")
    return 0


@builtin("popd")
def b_popd(sh: Interpreter, argv: list[str]) -> int:
    st = sh.state
    r = _stack_args(sh, "popd", argv[1:], _POPD_USAGE)
    if type(r) is int:
        return r
    args: list[str] = r  # type: ignore[assignment]
    for a in args:
        if not (len(a) > 1 and a[0] in "+-"):
            sh.error(f"popd: {a}: invalid argument")
            sh.write_err(f"popd: usage: {_POPD_USAGE}\n".encode())
            return 2
    if not st.dirstack:
        sh.error("popd: directory stack empty")
        return 1
    if args and args[0][:1] in "+-" and args[0][1:].isdigit():
        items = [st.cwd] + st.dirstack
        n = int(args[0][1:])
        k = n if args[0][0] == "+" else len(items) - 1 - n
        if not 0 <= k < len(items):
            sh.error(f"popd: {args[0]}: directory stack index out of range")
            return 1
        if k == 0:
            err = _chdir(sh, st.dirstack[0])
            if err:
                sh.error(f"popd: {err}")
                return 1
            st.dirstack.pop(0)
        else:
            del st.dirstack[k - 1]
    else:
        top = st.dirstack[0]
        err = _chdir(sh, top)
        if err:
            sh.error(f"popd: {err}")
            return 1
        st.dirstack.pop(0)
    _out(sh, " ".join(_dirs_list(sh)) + "\n")
    return 0


# ---------------------------------------------------------------------------- variables
def _parse_flags(sh: Interpreter, name: str, args: list[str], allowed: str, usage: str
                 ) -> tuple[set[str], set[str], list[str]] | int:
    on: set[str] = set()
    off: set[str] = set()
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            i += 1
            break
        if len(a) > 1 and a[0] in "-+" and not _ASSIGN_RE.match(a[1:]) or a in ("-", "+") and False:
            for c in a[1:]:
                if c not in allowed:
                    return _bad_opt(sh, name, a[0] + c, usage)
                (on if a[0] == "-" else off).add(c)
            i += 1
        else:
            break
    return on, off, args[i:]


_FLAG_BITS = {"a": ARRAY, "A": ASSOC, "i": INTEGER, "l": LOWER, "u": UPPER, "n": NAMEREF,
              "r": READONLY, "x": EXPORT, "t": TRACE, "c": CAPCASE}
_TYPESET_USAGE = ("typeset [-aAfFgiIlnrtux] name[=value] ... or typeset -p [-aAfFilnrtux] "
                  "[name ...]")
DECL_USAGE = "declare [-aAfFgiIlnrtux] [name[=value] ...] or declare -p [-aAfFilnrtux] [name ...]"


def _posix_listed(line: str, cmd: str) -> str:
    """`declare -Ar a=(...)` as readonly/export -p print it in posix mode: `readonly -A a=(...)`
    (only the array letters are kept)."""
    flags, _, rest = line[len("declare -"):].partition(" ")
    keep = "".join(c for c in flags if c in "aA")
    return f"{cmd} -{keep} {rest}" if keep else f"{cmd} {rest}"


def _func_attrs(sh: Interpreter, n: str) -> str:
    st = sh.state
    return (("r" if n in st.func_readonly else "") + ("t" if n in st.func_trace else "")
            + ("x" if n in getattr(st, "exported_funcs", ()) else ""))


def _print_functions(sh: Interpreter, names: list[str] | None, only_names: bool,
                     want: str = "", attr_line: bool = True) -> int:
    """declare -f/-F listing: a function with attributes is followed (-f) or shown (-F) as
    `declare -f<rtx> name`; ``want`` (-r/-t/-x given with no names) keeps only those."""
    from .unparse import format_function
    fns = sh.state.functions
    status = 0
    for n in (sorted(fns) if names is None else names):
        f = fns.get(n)
        if f is None:
            status = 1
            continue
        attrs = _func_attrs(sh, n)
        if want and not all(c in attrs for c in want):
            continue
        if only_names:
            _out(sh, f"declare -f{attrs} {n}\n")
        else:
            _out(sh, format_function(f) + "\n" + (f"declare -f{attrs} {n}\n" if attrs and attr_line else ""))
    return status


# the attributes bash gives a compound word's variable before assigning its list
_TYPE_FLAGS = frozenset("aAgiluIc")


def decl_compound(sh: Interpreter, argv: list[str], assign: Any) -> bool:
    """A declaration's compound word (`declare -r a=(1 2)`), met while expanding the command
    whose words so far are ``argv``: bash assigns it then, before the builtin runs.  The
    variable gets the type attributes among the options before the word (-aAgiluc; -a/-A
    for readonly, none for export), then its list (traced as `+ a=('1' '2')`).  True: the
    builtin then sees only the name.  A failure drops the command line, except for
    declare/local/typeset in a function (False: the builtin gets the word and fails too)."""
    name = argv[0]
    on: set[str] = set()
    for a in argv[1:]:
        if a[:1] != "-" or a == "--" or len(a) < 2:
            break
        on.update(a[1:])
    if name == "export" or name == "readonly":
        on &= {"a", "A"}
    else:
        on &= _TYPE_FLAGS
    # (`local a=(1 2)` at top level sets a global a, then local refuses to run)
    local = bool(sh.funcstack) and "g" not in on and name != "export" and name != "readonly"
    try:
        _declare_one(sh, assign.name, None, assign.append, None, assign, on, set(), local)
    except VarError as e:
        from .interpreter import AbortLine
        fr = sh.cmd_frame
        # (bash names the function, eval or source whose first command this is)
        sh.error(f"{fr[0]}: {e.message}" if fr is not None and sh.budget.commands == fr[1] + 1 else e.message)
        if sh.funcstack and name != "export" and name != "readonly":
            return False  # in a function it is not fatal: the builtin gets the word and fails too
        raise AbortLine(1) from None
    return True


def b_declare_impl(sh: Interpreter, argv: list[str], *, local: bool = False) -> int:
    name = argv[0]
    if local and not sh.funcstack:
        # bash's local_builtin checks the function context before it reads any option
        for a in argv[1:]:
            if a == "--" or len(a) < 2 or a[0] not in "-+" or _ASSIGN_RE.match(a[1:]):
                break
            if any(c not in "aAcfFgiIlnprtux" for c in a[1:]):
                sh.error("local: can only be used in a function")
                return 1
    parsed = _parse_flags(sh, name, argv[1:], "aAcfFgiIlnprtux", DECL_USAGE if name == "declare" else
                          "local [option] name[=value] ..." if name == "local" else _TYPESET_USAGE)
    if isinstance(parsed, int):
        return parsed
    on, off, args = parsed
    arrays = sh.__dict__.pop("decl_arrays", None) or {}
    if local and not sh.funcstack:
        # bash has already made the compound assignments (`local a=(1 2)` at top level
        # sets a global a) when the builtin refuses to run
        for assign in arrays.values():
            try:
                _declare_one(sh, assign.name, None, assign.append, None, assign, on - {"g"}, off, False)
            except VarError:
                pass
        if sh.dash:
            sh.error("local: not in a function")
            return 2
        sh.error("local: can only be used in a function")
        return 1
    if local and "g" in on:
        local = False  # `local -g` declares a global, as `declare -g` does
    if name in ("declare", "typeset") and sh.funcstack and "g" not in on:
        local = True
    if ("f" in on or "F" in on) and any("=" in a for a in args):
        sh.error(f"{name}: cannot use `-f' to make functions")
        return 1
    if ("f" in on or "F" in on) and args and "p" not in on and (on - {"f", "F"} or off):
        # declare -ft/-fx/+ft NAME: set function attributes (only the trace one matters here)
        status = 0
        for a in args:
            bad = next((c for c in "aAin" if c in on), "")
            if bad:
                sh.error(f"{name}: -{bad}: invalid option")
                return 1
            if a not in sh.state.functions:
                status = 1
                continue
            if "r" in off and a in sh.state.func_readonly:
                sh.error(f"{name}: {a}: readonly function")
                status = 1
                continue
            if "x" in on or "x" in off:
                ex = set(getattr(sh.state, "exported_funcs", ()))
                ex.add(a) if "x" in on else ex.discard(a)
                sh.state.exported_funcs = frozenset(ex)  # type: ignore[attr-defined]
            if "r" in on:
                sh.state.func_readonly = sh.state.func_readonly | {a}
            if "t" in on:
                sh.state.func_trace = sh.state.func_trace | {a}
            elif "t" in off:
                sh.state.func_trace = sh.state.func_trace - {a}
        return status
    if "f" in on or "F" in on:
        if "p" in on or not args or True:
            if not args:
                return _print_functions(sh, None, "F" in on, "".join(c for c in "rtx" if c in on))
            st = 0
            for a in args:
                if a in sh.state.functions:
                    if "F" in on and sh.state.shopt.get("extdebug"):
                        # extdebug: the definition's line and file (bash -c's is "environment")
                        fn = sh.state.functions[a]
                        src = sh.state.func_sources.get(a) or "environment"
                        _out(sh, f"{a} {getattr(fn, 'line', 0)} {src}\n")
                    elif "F" in on:
                        _out(sh, f"declare -f{_func_attrs(sh, a)} {a}\n" if "p" in on else a + "\n")
                    else:
                        _print_functions(sh, [a], False, attr_line="p" in on)
                else:
                    st = 1
            return st
    if "p" in on or (not args and (on - {"g"} or not off)):
        if not args:
            return _print_vars(sh, on - {"p", "g"}, name == "declare" or name == "typeset" or name == "local",
                               only_local=local and name == "local")
        st = 0
        own = sh.state.scopes[sh.state.local_index()] if name == "local" else None
        for a in args:
            if own is not None:
                # local -p shows only the function's own locals
                v = own.get(a)
                if v is not None and v.attrs & TEMPVAR:
                    v = None
            else:
                v = sh.lookup_var(a)
            if v is None:
                sh.error(f"{name}: {a}: not found")
                st = 1
                continue
            _out(sh, sh.declare_line(a, v) + "\n")
        return st
    status = 0
    for idx, a in enumerate(args):
        if a == "-" and local:
            # local -: the function's shell options are restored when it returns
            sc = sh.state.scopes[sh.state.local_index()]
            if "-" not in sc:
                sc["-"] = Var(dict(sh.state.options))
            continue
        assign = arrays.get(idx)
        elem_decl = False
        m = _ASSIGN_RE.match(a) if assign is None else None
        if assign is not None:
            vname, sub, append, value = assign.name, None, assign.append, None
        elif m:
            vname, sub, append, value = m.group(1), m.group(2), m.group(3) == "+", m.group(4)
        else:
            vname, sub, append, value = a, None, False, None
            if "[" in a and a.endswith("]") and _NAME_RE.match(a.split("[", 1)[0]):
                vname = a.split("[", 1)[0]
                ex = sh.lookup_var(vname)
                if "A" not in on and (ex is None or not ex.attrs & ASSOC):
                    elem_decl = True  # `declare -r c[100]` declares an (empty) indexed array
        if not _NAME_RE.match(vname):
            sh.error(f"{name}: `{a}': not a valid identifier")
            status = 1
            continue
        if "n" in on and value is not None and assign is None:
            if value == "":
                sh.error(f"{name}: `': not a valid identifier")
                status = 1
                continue
            if not _NAME_RE.match(value.split("[", 1)[0]):
                sh.error(f"{name}: `{value}': invalid variable name for name reference")
                status = 1
                continue
            if value == vname and not sh.funcstack:
                sh.error(f"{name}: {vname}: nameref variable self references not allowed")
                status = 1
                continue
            if value == vname and sh.funcstack:
                # a function may declare a self reference (bash warns twice: the check and
                # the lookup while binding; the reference then resolves in the global scope)
                sh.error(f"{name}: warning: {vname}: circular name reference")
                sh.error(f"warning: {vname}: circular name reference")
            ex = sh.state.scopes[sh.state.local_index()].get(vname) if local else sh.state.find(vname)
            if ex is not None and ex.attrs & (ARRAY | ASSOC) and not ex.attrs & NAMEREF:
                sh.error(f"{name}: {vname}: reference variable cannot be an array")
                status = 1
                continue
        if off & {"a", "A"}:
            ex = sh.state.scopes[sh.state.local_index()].get(vname) if local else sh.lookup_var(vname)
            if ex is not None and ex.attrs & (ARRAY | ASSOC):
                sh.error(f"{name}: {vname}: cannot destroy array variables in this way")
                status = 1
                continue
        try:
            if "n" in off and value is not None and assign is None and not local:
                ex = sh.state.find(vname)
                if ex is not None and ex.attrs & NAMEREF:
                    # declare +n ref=v assigns v through the reference first, then ref
                    # stops being one (keeping the name it held as its value)
                    _declare_one(sh, vname, sub, append, value, None, on, off - {"n"}, local)
                    value, sub, append = None, None, False
            _declare_one(sh, vname, sub, append, value, assign, on | {"a"} if elem_decl else on, off, local)
        except VarError as e:
            # (a bad subscript is reported without the builtin's name)
            sh.error(e.message if e.message.endswith("bad array subscript") else f"{name}: {e.message}")
            status = 1
        except ExpansionError as e:
            bare = getattr(e, "subscript", False) and not getattr(e, "arith", False)
            sh.error(e.message if bare else f"{name}: {e.message}")
            from .interpreter import ExitShell
            raise ExitShell(1) from None
    return status


# bash's readonly dynamic variables (computed on use, never stored)
_RO_DYNAMIC = frozenset(("SHELLOPTS", "BASHOPTS"))
_LOCALE_VARS = frozenset(("LC_ALL", "LC_CTYPE", "LC_COLLATE", "LC_MESSAGES", "LC_NUMERIC", "LC_TIME"))


def _declare_one(sh: Interpreter, vname: str, sub: str | None, append: bool, value: str | None,
                 assign: Any, on: set[str], off: set[str], local: bool) -> None:
    st = sh.state
    if "n" not in on and "n" not in off:
        target = st.resolve_ref(vname) if not local else vname
    else:
        target = vname
    if target in _RO_DYNAMIC and (local or value is not None or assign is not None):
        raise VarError(f"{target}: readonly variable")
    if local:
        li = st.local_index()
        sc = st.scopes[li]
        var = sc.get(target)
        temp = None
        for i in range(len(st.scopes) - 1, li, -1):
            temp = st.scopes[i].get(target)
            if temp is not None:
                # bash: `v=1 eval 'local v'` makes the eval's own v local in place (it goes
                # when eval returns); other builtins' v is copied into a new local
                if st.scopes[i].bltn:  # type: ignore[attr-defined]
                    var = temp
                    var.attrs &= ~TEMPVAR
                break
        if var is not None and var.attrs & TEMPVAR and temp is None:
            var.attrs &= ~TEMPVAR  # the function's own prefix assignment becomes its local
        elif var is None or (temp is not None and var is not temp):
            outer = temp if temp is not None else st.find(target)
            glob = st.scopes[0].get(target) if len(st.scopes) > 1 else None
            if glob is not None and glob.attrs & READONLY:
                # bash refuses to shadow a readonly global (a readonly local of a caller may be)
                raise VarError(f"{target}: readonly variable")
            sh.grow(new_var_cost(target, value))   # (with its value: contract13)
            var = Var(None)
            if outer is not None and outer.attrs & TEMPVAR:
                # a local inherits the value of a prefix assignment's binding (bash)
                var = Var(outer.value if type(outer.value) is str else None, EXPORT)
            elif st.shopt.get("localvar_inherit") and outer is not None:
                var = outer.copy()
            elif outer is not None and st.scopes[-1] is not sc and outer is st.scopes[-1].get(target):
                # `x=tmp local x`: the new local starts with the prefix binding's value
                var = Var(outer.value, outer.attrs & EXPORT)
            elif outer is not None and outer.attrs & EXPORT:
                var.attrs = EXPORT  # a local of an exported name is exported too (bash)
            sc[target] = var
    else:
        if "g" in on and len(st.scopes) > 1:
            var = st.scopes[0].get(target)
            if var is None:
                sh.grow(new_var_cost(target, value))   # (with its value: contract13)
                var = Var(None)
                st.scopes[0][target] = var
        else:
            var = st.find(target)
            if var is None:
                sh.grow(new_var_cost(target, value))   # (with its value: contract13)
                var = Var(None)
                st.scopes[0][target] = var
    if "n" in on and value is None and assign is None and type(var.value) is str \
            and not (var.attrs & NAMEREF):
        cur = var.value
        if not _NAME_RE.match(cur.split("[", 1)[0]) or cur == target:
            # bash refuses to turn a variable whose value is not a name into a nameref
            raise VarError(f"`{cur}': invalid variable name for name reference")
    if var.attrs & READONLY and (value is not None or assign is not None or (on - {"r", "x", "g", "p", "t"}) or "r" in off):
        if value is not None or assign is not None or "n" in on:
            # (other attributes may still be added to a readonly variable)
            raise VarError(f"{target}: readonly variable")
        if "r" in off:
            raise VarError(f"{target}: readonly variable")
    for c in sorted(on):  # -A before -a: with both, bash makes an assoc and fails on -a
        bit = _FLAG_BITS.get(c)
        if bit is None:
            continue
        if bit == ARRAY and var.attrs & ASSOC:
            raise VarError(f"{target}: cannot convert associative to indexed array")
        if bit == ASSOC and var.attrs & ARRAY:
            raise VarError(f"{target}: cannot convert indexed to associative array")
        if bit in (UPPER, LOWER, CAPCASE):
            var.attrs &= ~(UPPER | LOWER | CAPCASE)  # one case attribute replaces another
        if bit != READONLY:
            var.attrs |= bit
    if len(on & {"l", "u", "c"}) > 1:
        var.attrs &= ~(LOWER | UPPER | CAPCASE)  # bash: two of -l -u -c together cancel out
    if var.attrs & ASSOC and type(var.value) is str:
        var.value = {"0": var.value}
    for c in off:
        bit = _FLAG_BITS.get(c)
        if bit is not None and bit not in (ARRAY, ASSOC):
            var.attrs &= ~bit
    if var.attrs & ARRAY and type(var.value) is str:
        var.value = {0: var.value}
    elif var.attrs & (ARRAY | ASSOC) and var.value is None and value is not None and sub is None:
        var.value = {}  # `readonly -A x=1` gives x=([0]="1")
    if assign is not None:
        sh.set_array(target, assign.array, append=append, var=var, decl=True)
    elif value is not None and var.attrs & (ARRAY | ASSOC) and value.startswith("(") and value.endswith(")") \
            and sub is None:
        from .parser import decl_assign
        a2 = decl_assign(N.Word((N.Lit(f"{target}={value}"),), f"{target}={value}"))
        if a2 is not None and a2.array is not None:
            sh.set_array(target, a2.array, append=append, var=var, decl=True)
        else:
            var.value = {0: value} if not var.attrs & ASSOC else {"0": value}
    elif value is not None:
        if sub is None and len(value) >= 1024:
            sh.grow(len(value))  # (the shell's memory cap: contract12)
        if sub is not None:
            sh.assign_element(target, N.Word((N.Lit(sub[1:-1]),) if sub != "[]" else (), sub[1:-1]),
                              value, append=append)
        elif var.attrs & NAMEREF and "n" in on:
            if value and not _NAME_RE.match(value.split("[")[0]):
                raise VarError(f"`{value}': invalid variable name for name reference")
            if value == vname and not sh.funcstack:
                raise VarError(f"{vname}: nameref variable self references not allowed")
            var.value = value
        elif type(var.value) is dict:
            key: Any = "0" if var.attrs & ASSOC else 0
            if var.attrs & ASSOC and not append:
                value = sh._coerce(var, value)
            else:
                value = sh._coerce(var, value, var.value.get(key, "") if append else None)
            var.own()[key] = value
        else:
            var.value = sh._coerce(var, value, (var.value or "") if append else None)
            if target in _LOCALE_VARS and type(var.value) is str:
                sh.locale_check(target, var.value)
            elif target == "OPTIND":
                sh.getopts_state = (0, 0)  # (`local OPTIND=1` restarts getopts, as set_var does)
    elif var.attrs & INTEGER and "i" in on and type(var.value) is str:
        var.value = str(sh.arith(var.value))
    if target in _LOCALE_VARS:
        var.attrs |= SPECIAL  # later plain assignments still reach set_var's setlocale check
    if "r" in on:
        var.attrs |= READONLY
    if value is not None and st.options["allexport"] and type(var.value) is str:
        var.attrs |= EXPORT
    st.env_cache = None


def _print_vars(sh: Interpreter, flags: set[str], decl: bool, only_local: bool = False) -> int:
    st = sh.state
    if only_local:
        items = {k: v for k, v in st.scopes[st.local_index()].items() if k != "-" and not v.attrs & TEMPVAR}
    else:
        items = sh.listed_vars(decl=True)
    bits = 0
    for c in flags:
        bits |= _FLAG_BITS.get(c, 0)
    out = []
    for n in sorted(items):
        v = items[n]
        if bits and (v.attrs & bits) != bits:
            continue
        if decl and not flags and not only_local and False:
            continue
        out.append(sh.declare_line(n, v))
    if out:
        _out(sh, "\n".join(out) + "\n")
    return 0


@builtin("declare", "typeset")
def b_declare(sh: Interpreter, argv: list[str]) -> int:
    if len(argv) == 1 or all(a in ("--", "-g") for a in argv[1:]):
        return b_set(sh, ["set"])  # no attributes and no names: `set`'s listing
    return b_declare_impl(sh, argv)


@builtin("local")
def b_local(sh: Interpreter, argv: list[str]) -> int:
    if len(argv) == 1:
        if not sh.funcstack:
            sh.error("local: can only be used in a function")
            return 1
        for n, v in sorted(sh.state.scopes[sh.state.local_index()].items()):
            if v.attrs & TEMPVAR:
                continue  # the call's prefix assignments are not its locals
            _out(sh, ("local -" if n == "-" else sh.declare_line(n, v)) + "\n")
        return 0
    return b_declare_impl(sh, argv, local=True)


@builtin("export")
def b_export(sh: Interpreter, argv: list[str]) -> int:
    parsed = _parse_flags(sh, "export", argv[1:], "aAfnp", "export [-fn] [name[=value] ...] or export -p")
    if isinstance(parsed, int):
        return parsed
    on, off, args = parsed
    if not args and "f" in on:
        # export -f alone lists the exported functions
        from .unparse import format_function
        st = sh.state
        for n in sorted(getattr(st, "exported_funcs", ())):
            if n in st.functions:
                _out(sh, f"{format_function(st.functions[n])}\ndeclare -fx {n}\n")
        return 0
    if not args:  # with names, -p prints nothing and exports them (bash 5.2)
        want = EXPORT | (ARRAY if "a" in on else 0) | (ASSOC if "A" in on else 0)
        posix = sh.state.options.get("posix")
        for n, v in sorted(sh.listed_vars().items()):
            if v.attrs & want == want:
                line = sh.declare_line(n, v)
                _out(sh, (_posix_listed(line, "export") if posix else line) + "\n")
        return 0
    if "f" in on:
        # export -f: child shells (bash -c, bash script) get these functions; kept as an
        # immutable set so a subshell's state copy never changes its parent's
        st = sh.state
        names = set(getattr(st, "exported_funcs", ()))
        status = 0
        for a in args:
            if a not in st.functions:
                sh.error(f"export: {a}: not a function")
                status = 1
            elif "n" in on:
                names.discard(a)
            else:
                names.add(a)
        st.exported_funcs = frozenset(names)  # type: ignore[attr-defined]
        return status
    flags = {"x"} if "n" not in on else set()
    offs = {"x"} if "n" in on else set()
    # -a/-A (accepted, undocumented) make a value given here an array, as readonly's do
    aflags = flags | (on & {"a", "A"})
    status = 0
    arrays = sh.__dict__.pop("decl_arrays", None) or {}
    for idx, a in enumerate(args):
        m = _ASSIGN_RE.match(a)
        vname = m.group(1) if m else a
        if not _NAME_RE.match(vname) or (not m and "=" in a) or (m and m.group(2) is not None
                                                               and idx not in arrays):
            sh.error(f"export: `{vname + (m.group(2) or '') if m else a}': not a valid identifier")
            status = 1
            continue
        try:
            if idx in arrays:
                assign = arrays[idx]
                _declare_one(sh, assign.name, None, assign.append, None, assign, flags, offs, False)
            elif m:
                _declare_one(sh, m.group(1), m.group(2), m.group(3) == "+", m.group(4), None, aflags, offs, False)
            else:
                _declare_one(sh, vname, None, False, None, None, flags, offs, False)
        except VarError as e:
            sh.error(e.message)
            status = 1
    sh.state.env_cache = None
    return status


@builtin("readonly")
def b_readonly(sh: Interpreter, argv: list[str]) -> int:
    # (-n, undocumented: bash's "undo", which cannot take readonly away: a NAME=VALUE is
    # assigned without it, a NAME is left as it is)
    parsed = _parse_flags(sh, "readonly", argv[1:], "aAfnp", "readonly [-aAf] [name[=value] ...] or readonly -p")
    if isinstance(parsed, int):
        return parsed
    on, off, args = parsed
    if not args and "f" in on:
        if sh.state.options.get("posix"):
            for n in sorted(sh.state.func_readonly):
                if n in sh.state.functions:
                    _out(sh, f"readonly -f {n}\n")
            return 0
        return _print_functions(sh, None, False, "r")
    if not args:
        want = READONLY | (ARRAY if "a" in on else 0) | (ASSOC if "A" in on else 0)
        posix = sh.state.options.get("posix")
        for n, v in sorted(sh.listed_vars().items()):
            if v.attrs & want == want:
                line = sh.declare_line(n, v)
                _out(sh, (_posix_listed(line, "readonly") if posix else line) + "\n")
        return 0
    status = 0
    arrays = sh.__dict__.pop("decl_arrays", None) or {}
    # bash: -a/-A shape only an array value given here; `readonly -a x` is a plain readonly
    undo = "n" in on
    aflags = (set() if undo else {"r"}) | (on & {"a", "A"})
    flags = set() if undo else {"r"}
    for idx, a in enumerate(args):
        m = _ASSIGN_RE.match(a)
        vname = m.group(1) if m else a
        if not _NAME_RE.match(vname) or (m and m.group(2) is not None and idx not in arrays):
            # an element (`readonly a[1]=x`) is no identifier to readonly or export (bash)
            sh.error(f"readonly: `{vname + (m.group(2) or '') if m else a}': not a valid identifier")
            status = 1
            continue
        try:
            if "f" in on:
                if vname not in sh.state.functions:
                    sh.error(f"readonly: {vname}: not a function")
                    status = 1
                elif not undo:
                    sh.state.func_readonly = sh.state.func_readonly | {vname}
                continue
            if undo and not m and idx not in arrays:
                continue
            if idx in arrays:
                assign = arrays[idx]
                _declare_one(sh, assign.name, None, assign.append, None, assign, aflags, set(), False)
            elif m:
                _declare_one(sh, vname, m.group(2), m.group(3) == "+", m.group(4), None, aflags, set(), False)
            else:
                _declare_one(sh, vname, None, False, None, None, flags, set(), False)
        except VarError as e:
            sh.error(e.message)
            status = 1
    return status


@builtin("unset")
def b_unset(sh: Interpreter, argv: list[str]) -> int:
    args = argv[1:]
    mode = ""
    fv: set[str] = set()
    while args and args[0].startswith("-") and len(args[0]) > 1:
        a = args.pop(0)
        if a == "--":
            break
        for c in a[1:]:
            if c in "fvn":
                fv.add(c)
                mode = c
            else:
                return _bad_opt(sh, "unset", "-" + c, "unset [-f] [-v] [-n] [name ...]")
    if "f" in fv and "v" in fv:
        sh.error("unset: cannot simultaneously unset a function and a variable")
        return 1
    if "f" in fv:
        mode = "f"
    status = 0
    for a in args:
        if mode == "f" or (mode == "" and a in sh.state.functions and sh.state.find(a) is None):
            if a in sh.state.func_readonly:
                sh.error(f"unset: {a}: cannot unset: readonly function")
                status = 1
            else:
                sh.state.functions.pop(a, None)
            continue
        if mode != "n" and "[" not in a:
            rn = sh.state.resolve_ref(a)
            if "[" in rn and rn.endswith("]"):
                a = rn  # a nameref to an array element: unset the element
        if "[" in a and a.endswith("]"):
            nm, _, sub = a.partition("[")
            sub = sub[:-1]
            if not _NAME_RE.match(nm):
                if mode == "v":
                    sh.error(f"unset: `{a}': not a valid identifier")
                    status = 1
                continue
            try:
                sub = sh.expand_subscript(sub)
            except ExpansionError as e:
                sh.error(e.message)
                status = 1
                continue
            rn = sh.state.resolve_ref(nm)
            var = sh.state.find(rn)
            if var is None:
                continue
            if var.attrs & READONLY:
                sh.error(f"unset: {rn}: cannot unset: readonly variable")
                status = 1
                continue
            if type(var.value) is not dict and not var.attrs & (ARRAY | ASSOC):
                # a scalar is element 0 of itself; any other subscript is an error (bash)
                try:
                    zero = sub not in ("@", "*") and sh.arith(sub) == 0
                except ExpansionError as e:
                    e.discard = False  # type: ignore[attr-defined]
                    e.subscript = True  # type: ignore[attr-defined]
                    raise
                if zero:
                    sh.unset_var(rn)
                else:
                    sh.error(f"unset: {rn}: not an array variable")
                    status = 1
                continue
            if sub in ("@", "*") and not var.attrs & ASSOC:
                # bash 5.2: every element goes, the (now empty) array stays; an associative
                # array's `@` and `*` are keys like any other
                if type(var.value) is dict:
                    var.top = None
                    var.value = {}
                continue
            # (a declared array with no elements yet has no dict)
            var_d: dict[Any, str] = var.value if type(var.value) is dict else {}
            var.top = None  # (an element goes: array_top's cache no longer holds)
            if var.attrs & ASSOC:
                if sub in var_d:
                    del var.own()[sub]
                continue
            try:
                i = sh.arith(sub)
            except ExpansionError as e:
                e.discard = False  # type: ignore[attr-defined]  # bash -c gives up here
                e.subscript = True  # type: ignore[attr-defined]
                raise
            if i < 0:
                j = (max(var_d) + 1 if var_d else 0) + i
                if j < 0:
                    # bash: a negative index before the first element is an error
                    sh.error(f"unset: [{sub}]: bad array subscript")
                    status = 1
                    continue
                i = j
            if i in var_d and var.value is var_d:
                del var.own()[i]
            continue
        if not _NAME_RE.match(a):
            # bash: only -v insists on an identifier; otherwise the word names no variable
            # and (being no function either) there is nothing to unset
            if mode == "v":
                sh.error(f"unset: `{a}': not a valid identifier")
                status = 1
            continue
        if mode == "n":
            v = sh.state.find(a)
            if v is not None and v.attrs & READONLY:
                sh.error(f"unset: {a}: cannot unset: readonly variable")
                status = 1
                continue
            sh.unset_var(a, follow_ref=False)
            continue
        v = sh.state.find(a)
        if v is None and mode != "v" and a in sh.state.functions:
            del sh.state.functions[a]
            continue
        if v is None and a in _RO_DYNAMIC:
            sh.error(f"unset: {a}: cannot unset: readonly variable")
            status = 1
            continue
        status |= sh.unset_var(a)
    return status


@builtin("shift")
def b_shift(sh: Interpreter, argv: list[str]) -> int:
    text, n = _numeric_operand(sh, "shift", argv)
    if n is None:
        if text is not None:
            return 1
        n = 1
    shown = "--" if argv[1:2] == ["--"] else None  # (bash names `--` when it was given)
    if n < 0:
        sh.error(f"shift: {shown or text}: shift count out of range")
        return 1
    pos = sh.state.positional
    if n > len(pos):
        if sh.state.shopt.get("shift_verbose") or sh.state.options["posix"]:
            sh.error(f"shift: {shown or n}: shift count out of range")
        return 1
    sh.state.positional = pos[n:]
    return 0


@builtin("set")
def b_set(sh: Interpreter, argv: list[str]) -> int:
    st = sh.state
    args = argv[1:]
    if not args:
        from .builtins_compat import quote_set
        out = []
        for n, v in sorted(sh.listed_vars().items()):
            if v.value is None:
                continue
            if type(v.value) is dict:
                out.append(f"{n}={sh.array_literal(v)}")
            else:
                out.append(f"{n}={quote_set(sh.qv(v.value))}")
        if out:
            _out(sh, "\n".join(out) + "\n")
        from .unparse import format_function
        for n in sorted(st.functions):
            _out(sh, format_function(st.functions[n]) + "\n")
        return 0
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            sh.grow(list_cost(args[i + 1:]))   # (max_shell_bytes: contract13)
            st.positional = args[i + 1:]
            sh.set_args += 1
            return 0
        if a == "-":
            # the old `set -`: xtrace and verbose off, then the rest (if any) are the arguments
            st.options["xtrace"] = st.options["verbose"] = False
            if i + 1 < len(args):
                sh.grow(list_cost(args[i + 1:]))
                st.positional = args[i + 1:]
                sh.set_args += 1
            return 0
        if a == "+":
            i += 1  # a lone + changes nothing (bash: an empty flag cluster)
            continue
        if a[:1] not in "-+" or len(a) < 2:
            sh.grow(list_cost(args[i:]))
            st.positional = args[i:]
            sh.set_args += 1
            return 0
        on = a[0] == "-"
        if a[1:] == "o" or a[1] == "o" and len(a) == 2:
            if i + 1 >= len(args):
                if on:
                    for k in sorted(SET_OPTIONS):
                        _out(sh, f"{k:<15}\t{'on' if st.options[k] else 'off'}\n")
                else:
                    for k in sorted(SET_OPTIONS):
                        _out(sh, f"set {'-' if st.options[k] else '+'}o {k}\n")
                i += 1
                continue
            opt = args[i + 1]
            if sh.dash and opt not in _DASH_SET_O:
                _dash_set_o(sh, opt)
            if opt not in st.options:
                sh.error(f"set: {opt}: invalid option name")
                return 2
            st.options[opt] = on
            if opt == "posix":
                # (bash's set -o posix binds POSIXLY_CORRECT=y; +o posix unsets it)
                if on:
                    sh.set_var("POSIXLY_CORRECT", "y")
                else:
                    st.scopes[0].pop("POSIXLY_CORRECT", None)
            if on and opt in ("emacs", "vi"):
                st.options["vi" if opt == "emacs" else "emacs"] = False  # one editing mode
            i += 2
            continue
        takes_o = False
        # bash checks the whole cluster first: `set -ez` changes nothing (and so cannot exit)
        for c in a[1:]:
            if c != "o" and c not in LETTER_TO_OPTION:
                sh.error(f"set: {a[0]}{c}: invalid option")
                sh.write_err(b"set: usage: set [-abefhkmnptuvxBCEHPT] [-o option-name] [--] [-] [arg ...]\n")
                return 2
        for c in a[1:]:
            if c == "o":
                takes_o = True
                continue
            st.options[LETTER_TO_OPTION[c]] = on
        i += 1
        if takes_o:
            if i >= len(args):
                for k in sorted(SET_OPTIONS):
                    _out(sh, f"{k:<15}\t{'on' if st.options[k] else 'off'}\n")
                continue
            if sh.dash and args[i] not in _DASH_SET_O:
                _dash_set_o(sh, args[i])
            if args[i] not in st.options:
                sh.error(f"set: {args[i]}: invalid option name")
                return 2
            st.options[args[i]] = on
            i += 1
    return 0


_DASH_PRINTF_BAD = _lazy_re(r"(?<!%)(?:%%)*%[-+ #0]*(?:\d+|\*)?(?:\.(?:\d+|\*)?)?[qQ(]")

DASH_MISSING = frozenset(("declare", "typeset", "let", "shopt", "pushd", "popd", "dirs", "source",
                          "mapfile", "readarray", "enable", "builtin", "caller", "compgen",
                          "complete", "compopt", "disown", "help", "history", "logout", "suspend",
                          "bind", "fc"))
"""bash's builtins dash lacks: `sh` (dash here) looks them up as commands (`declare: not found`)."""

_DASH_SET_O = frozenset(("errexit", "noglob", "ignoreeof", "interactive", "monitor", "noexec",
                         "stdin", "xtrace", "verbose", "vi", "emacs", "noclobber", "allexport",
                         "notify", "nounset", "privileged", "nolog", "debug"))


def _dash_set_o(sh: Interpreter, opt: str) -> None:
    """`sh` is dash here: `set -o pipefail` (and any option dash lacks) is an error of a special
    builtin, which ends the shell with 2."""
    from .interpreter import ExitShell
    sh.error(f"set: Illegal option -o {opt}")
    raise ExitShell(2)


@builtin("shopt")
def b_shopt(sh: Interpreter, argv: list[str]) -> int:
    st = sh.state
    mode = ""
    quiet = printable = setopt = False
    args = argv[1:]
    while args and args[0].startswith("-") and len(args[0]) > 1:
        a = args.pop(0)
        if a == "--":
            break
        for c in a[1:]:
            if c in "su":
                if mode and mode != c:
                    sh.error("shopt: cannot set and unset shell options simultaneously")
                    return 1
                mode = c
            elif c == "q":
                quiet = True
            elif c == "p":
                printable = True
            elif c == "o":
                setopt = True
            else:
                return _bad_opt(sh, "shopt", "-" + c, "shopt [-pqsu] [-o] [optname ...]")
    table = st.options if setopt else st.shopt
    if not args:
        for k in (sorted(table) if setopt else table):
            v = table[k]
            if mode == "s" and not v or mode == "u" and v:
                continue
            if quiet:
                continue
            if printable or (mode and False):
                _out(sh, f"{'set' if setopt else 'shopt'} {'-s' if v else '-u'} {k}\n" if not setopt
                     else f"set {'-o' if v else '+o'} {k}\n")
            elif not quiet:
                _out(sh, f"{k:<15}\t{'on' if v else 'off'}\n")
        return 0
    status = 0
    for a in args:
        if a not in table:
            sh.error(f"shopt: {a}: invalid shell option name" if not setopt else f"shopt: {a}: invalid option name")
            # bash quirk: `shopt -so bogus` reports the name but still succeeds
            if not (setopt and mode):
                status = 1
            continue
        if mode == "s":
            if a == "extdebug" and not table[a] and sh.argv_base is None \
                    and not (table.get("compat44") and sh.funcstack):
                # bash starts BASH_ARGV/BASH_ARGC the first time extdebug comes on, with
                # the positional parameters of that moment (a function's own, inside one);
                # under compat44 a function turning it on starts none (only later calls'
                # frames show: pure-bash-bible's reverse_array relies on it)
                sh.argv_base = tuple(sh.state.positional)
            table[a] = True
        elif mode == "u":
            table[a] = False
        else:
            v = table[a]
            if not v:
                status = 1
            if quiet:
                continue
            if printable:
                _out(sh, f"set {'-o' if v else '+o'} {a}\n" if setopt else f"shopt {'-s' if v else '-u'} {a}\n")
            else:
                _out(sh, f"{a:<15}\t{'on' if v else 'off'}\n")
    return status


# ---------------------------------------------------------------------------- control flow
def _fatal(e: Any) -> Any:
    """``e`` (an ExitShell) marked as ending a non-interactive shell only: an interactive
    bash reports the error and reads the next command (the REPL goes on)."""
    e.fatal = True
    return e


@builtin("exit")
def b_exit(sh: Interpreter, argv: list[str]) -> int:
    from .interpreter import ExitShell
    n = _exit_status(sh, "exit", argv)
    if sh.funcstack and sh.state.traps and "EXIT" in sh.state.traps:
        # bash runs the EXIT trap where `exit` ran: inside the function, with its locals,
        # positional parameters and FUNCNAME / BASH_LINENO frames
        n = sh.run_exit_trap(n)
    raise ExitShell(n)


def _exit_status(sh: Interpreter, name: str, argv: list[str]) -> int:
    """bash's get_exitstat for exit/return: ``--`` skipped, no operand = ``$?``, a
    non-number is status 2, and a second operand abandons the whole script (status 1)."""
    text, n = _numeric_operand(sh, name, argv)
    if n is None:
        return sh.state.last_status if text is None else 2
    return n & 255


def _numeric_operand(sh: Interpreter, name: str, argv: list[str]) -> tuple[str | None, int | None]:
    """bash's get_numeric_arg for exit/return/shift/break/continue: the operand after an
    optional ``--`` as (text, number); (None, None) without one; (text, None) when it is no
    number ("numeric argument required" reported). A second operand abandons the whole
    script, as in bash -c."""
    args = argv[2:] if argv[1:2] == ["--"] else argv[1:]
    if not args:
        return None, None
    n = legal_number(args[0])
    if n is None:
        sh.error(f"{name}: {args[0]}: numeric argument required")
        return args[0], None
    if len(args) > 1:
        from .interpreter import ExitShell
        sh.error(f"{name}: too many arguments")
        x = ExitShell(1)
        x.subscript = True  # (bash's DISCARD: a script file only drops the line)
        raise x
    return args[0], n


@builtin("logout")
def b_logout(sh: Interpreter, argv: list[str]) -> int:
    sh.error("logout: not login shell: use `exit'")
    return 1


@builtin("return")
def b_return(sh: Interpreter, argv: list[str]) -> int:
    from .interpreter import ReturnFn
    if not sh.funcstack and not sh.source_depth:
        _numeric_operand(sh, "return", argv)  # (bash reads the operand first: its errors come first)
        sh.error("return: can only `return' from a function or sourced script")
        return 2
    raise ReturnFn(_exit_status(sh, "return", argv))


def _loopctl(sh: Interpreter, argv: list[str], kind: str) -> int:
    from .interpreter import ExitShell, LoopCtl
    if not sh.loop_depth:
        sh.error(f"{kind}: only meaningful in a `for', `while', or `until' loop")
        return 0
    text, n = _numeric_operand(sh, kind, argv)
    if n is None:
        if text is not None:
            raise ExitShell(128)  # bash treats a non-number as fatal: the shell exits with 128
        n = 1
    if n < 1:
        # bash leaves every enclosing loop, with status 1 (and names `--` when it was given)
        sh.error(f"{kind}: {'--' if argv[1:2] == ['--'] else text}: loop count out of range")
        raise LoopCtl("break", sh.loop_depth, 1)
    raise LoopCtl(kind, min(n, sh.loop_depth))


@builtin("break")
def b_break(sh: Interpreter, argv: list[str]) -> int:
    return _loopctl(sh, argv, "break")


@builtin("continue")
def b_continue(sh: Interpreter, argv: list[str]) -> int:
    return _loopctl(sh, argv, "continue")


class LiveAliases(Mapping[str, str]):
    """The shell's aliases as the parser sees them: empty unless ``shopt -s expand_aliases``."""

    def __init__(self, sh: Interpreter) -> None:
        self.sh = sh

    def _m(self) -> dict[str, str]:
        st = self.sh.state
        return st.aliases if st.shopt["expand_aliases"] else {}

    def __getitem__(self, k: str) -> str:
        return self._m()[k]

    def get(self, k: str, default: Any = None) -> Any:  # type: ignore[override]
        return self._m().get(k, default)

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self._m())

    def __len__(self) -> int:
        return len(self._m())

    def __bool__(self) -> bool:
        return True


def _by_lines(sh: Interpreter, src: str) -> bool:
    """Whether eval/source must parse ``src`` one command line at a time, as bash's
    parse_and_execute does: aliases defined or used in it (an ``alias`` takes effect from
    the next line)."""
    st = sh.state
    return "alias" in src or (st.shopt["expand_aliases"] and bool(st.aliases)) or \
        ("set" in src and _SETS_VERBOSE.search(src) is not None) or "cond_stale" in st.__dict__


# `set -v` (or -o verbose) in eval'd or sourced text: the lines after it are echoed as read
_SETS_VERBOSE = _lazy_re(r"\bset\s[^\n;&|]*(?:-[a-zA-Z]*v|verbose)")


@builtin("eval")
def b_eval(sh: Interpreter, argv: list[str]) -> int:
    from .parser import parse_cached_at
    who = "eval"
    if argv[1:2] == ["\0cmdsub"]:
        # a `...` substitution the parser could not parse (see Parser.parse_backtick_body)
        who = "command substitution"
        argv = argv[1:]
    args = argv[1:]
    # eval takes no options but honours `--`; any other -x word is an invalid option
    if who == "eval" and args and args[0][:1] == "-" and len(args[0]) > 1:
        if args[0] != "--":
            return _bad_opt(sh, "eval", args[0][:2], "eval [arg ...]")
        args = args[1:]
    src = " ".join(args)
    if not src.strip():
        return 0
    st = sh.state
    try:
        script = parse_cached_at(src, sh.lineno - 1)
    except ParseError:
        script = None
    if script is None or st.shopt["expand_aliases"] or "<<" in src or st.options["verbose"] or \
            ("set" in src and _SETS_VERBOSE.search(src) is not None) or "cond_stale" in st.__dict__:
        # bash parses an eval string one command line at a time: the lines before a syntax
        # error run, and an alias defined on one line is used on the next (and here-document
        # warnings come in order)
        return _eval_lines(sh, src, who)
    return _eval_frame(sh, lambda: _run_discarding(sh, script))


def _eval_frame(sh: Interpreter, body: Callable[[], int]) -> int:
    """Run ``body`` as eval does: one more call level (bounded) and PS4 character, and a
    line-discarding error (``$((1/0))``) ends the eval with its status instead of the line."""
    from .interpreter import ExitShell
    lim = sh.budget.limits.max_call_depth
    sh.call_depth += 1
    # xtrace: commands run by eval (and source) show one more PS4 character, as in bash
    level = getattr(sh, "xtrace_level", 0)
    sh.xtrace_level = level + 1
    frame, sh.cmd_frame = sh.cmd_frame, ("eval", sh.budget.commands)
    try:
        if lim is not None and sh.call_depth > lim * 4:
            sh.error("eval: maximum eval nesting level exceeded")
            return 1
        try:
            return body()
        except ExitShell as e:
            if getattr(e, "errexit", False) and sh.funcstack:
                e.pop_ctx = True  # type: ignore[attr-defined]  # (see call_function)
            if not e.discard:
                raise
            # eval is where bash stops discarding: $((1/0)) in eval fails the eval (status 1)
            sh.state.last_status = e.status
            return e.status
    finally:
        sh.call_depth -= 1
        sh.xtrace_level = level
        sh.cmd_frame = frame


def _eval_lines(sh: Interpreter, src: str, who: str = "eval") -> int:
    from .parser import CommandReader
    base = max(sh.lineno - 1, 0)  # lines count from the eval command's (bash)
    reader = CommandReader(src, extglob=bool(sh.state.shopt.get("extglob")), aliases=LiveAliases(sh),
                           line_base=base)

    def run() -> int:
        status = 0
        while True:
            reader.extglob = bool(sh.state.shopt.get("extglob"))
            start = reader.consumed[1]
            try:
                tree = reader.next()
            except ParseError as e:
                _eval_warnings(sh, reader)
                stale = _stale_cond(sh, reader, start)
                if stale is not None:
                    # (bash fails at the [[ before it reads on to this error)
                    _report_parse_error(sh, stale, src, who)
                    return 2
                e.line -= base
                if getattr(e, "before", None):
                    e.before = tuple((ln - base, m) for ln, m in e.before)  # type: ignore[attr-defined]
                saved_line, sh.lineno = sh.lineno, base + 1
                _report_parse_error(sh, e, src, who)
                if getattr(e, "resume_pos", None) is not None:
                    # a bad compound assignment drops its line; the rest of the text runs
                    sh.lineno = saved_line
                    status = sh.state.last_status = 1
                    continue
                return 1 if getattr(e, "status", 2) == 1 else 2
            _eval_warnings(sh, reader)
            _verbose_echo(sh, reader, start)
            if tree is None:
                return status
            stale = _stale_cond(sh, reader, start)
            if stale is not None:
                _report_parse_error(sh, stale, src, who)
                return 2
            status = _run_discarding(sh, tree)
    return _eval_frame(sh, run)


_COND_START = _lazy_re(r"\[\[[ \t]+(\(|\$'(?:[^'\\]|\\.)*'|[^ \t\n]+)")


def _stale_cond(sh: Interpreter, reader: Any, start: int) -> ParseError | None:
    """bash leaves its parser in a bad state after a [[ ]] syntax error in eval'd or sourced
    text: the next [[ it parses (in a later eval, source, $( )) fails as a syntax error at
    its first word.  The error for the command just read, if that is now."""
    st = sh.state
    if "cond_stale" not in st.__dict__:
        return None
    text, end = reader.consumed
    m = _COND_START.search(text, start, end)
    if m is None:
        return None
    del st.__dict__["cond_stale"]
    tok = m.group(1)
    if tok.startswith("$'"):
        # bash shows such a word decoded and single-quoted, then $'...'-quoted if need be
        from .lexer import decode_ansic
        from .quoting import ansic_quote, needs_ansic
        tok = "'" + decode_ansic(tok[2:-1]) + "'"
        if needs_ansic(tok):
            tok = ansic_quote(tok)
    return ParseError(f"syntax error near unexpected token `{tok}'", text.count("\n", 0, m.start()) + 1)


def _note_cond_error(sh: Interpreter, e: ParseError) -> None:
    if getattr(e, "cond", False):
        sh.state.__dict__["cond_stale"] = True


def _verbose_echo(sh: Interpreter, reader: Any, start: int) -> None:
    """set -v: the text just read, echoed to stderr as bash's reader does."""
    if sh.state.options["verbose"]:
        text, end = reader.consumed
        text = text[start:end]
        if text:
            sh.write_err((text if text.endswith("\n") else text + "\n").encode("utf-8", "surrogateescape"))


def _eval_warnings(sh: Interpreter, reader: Any) -> None:
    """Here-document warnings of eval'd text, in bash's top-level form."""
    if reader.warnings:
        saved = sh.lineno
        for ln, msg in reader.warnings:
            sh.lineno = ln
            sh.error(f"warning: {msg}")
        sh.lineno = saved
        reader.warnings.clear()


def _run_discarding(sh: Interpreter, script: Any) -> int:
    """Run a sourced file: an error that discards a command line (``$((1/0))``, a readonly
    assignment) abandons that line of the file only, as bash's parse_and_execute does."""
    from .interpreter import AbortLine, ExitShell
    if not script.items:
        sh.state.last_status = 0   # comments only: 0, as bash's `. file` and `eval` give
        return 0
    skip = False
    for item in script.items:
        if skip:
            # the rest of the failed command line goes (an item ended by a newline ends it)
            skip = not item.newline
            continue
        try:
            if item.background:
                sh.run_background(item.cmd)
            else:
                sh.execute(item.cmd)
        except ExitShell as e:
            if not e.discard:
                raise
            if isinstance(e, AbortLine) and sh.state.options["errexit"]:
                raise ExitShell(e.status) from None  # set -e: a failed readonly assignment ends the shell
            sh.state.last_status = e.status
            skip = not item.newline
    return sh.state.last_status


def _report_parse_error(sh: Interpreter, e: ParseError, src: str, who: str) -> None:
    base = sh.funcstack[-1][2] if sh.funcstack else (sh.source_stack[-1] if sh.source_stack else sh.script_name)
    _note_cond_error(sh, e)
    line = sh.lineno + max(e.line, 1) - 1
    for ln, msg in getattr(e, "before", ()):
        sh.write_err(f"{base}: {who}: line {sh.lineno + max(ln, 1) - 1}: {msg}\n".encode("utf-8", "surrogateescape"))
    sh.write_err(f"{base}: {who}: line {line}: {e.message}\n".encode("utf-8", "surrogateescape"))
    if e.message.startswith("syntax error near"):
        lines = src.split("\n")
        ln = lines[e.line - 1] if 0 < e.line <= len(lines) else src
        sl = getattr(e, "source_line", None)
        if src.endswith("\\") and sl is not None:
            ln = sl  # a lone backslash at the end (see Parser.unexpected)
        sh.write_err(f"{base}: {who}: line {line}: `{ln}'\n".encode("utf-8", "surrogateescape"))


@builtin("source", ".")
def b_source(sh: Interpreter, argv: list[str]) -> int:
    r = _getopt(sh, argv[0], argv[1:], "", f"{argv[0]} filename [arguments]")
    if type(r) is int:
        return r
    argv = argv[:1] + r[1]  # type: ignore[index]
    if len(argv) < 2:
        sh.error(f"{argv[0]}: filename argument required")
        sh.write_err(f"{argv[0]}: usage: {argv[0]} filename [arguments]\n".encode())
        return 2
    st = _source_file(sh, argv)
    # bash runs the RETURN trap once the file was looked for (found or not; also after
    # `return`, with $? still the status before it), if one is set here: inside a function
    # only under set -T or when the function set it itself
    trap = sh.state.traps.get("RETURN") if sh.state.traps else None
    if trap and not sh.in_trap:
        sh.in_trap = True
        try:
            sh.run_string(trap, trap=True)
        finally:
            sh.in_trap = False
    return st


def _source_file(sh: Interpreter, argv: list[str]) -> int:
    from .interpreter import ExitShell, ReturnFn
    from .parser import CommandReader, parse
    fname = argv[1]
    path = None
    if "/" in fname:
        path = normalize(fname, sh.state.cwd)
    else:
        if sh.state.shopt.get("sourcepath", True):
            for d in (sh.get_scalar("PATH") or "").split(":"):
                cand = normalize(fname, normalize(d or ".", sh.state.cwd))
                try:
                    if sh.fs.stat(cand).is_file:
                        path = cand
                        break
                except OSError:
                    pass
        if path is None:
            if sh.state.options.get("posix"):
                # posix mode does not fall back to the current directory
                sh.error(f"{argv[0]}: {fname}: file not found")
                raise _fatal(ExitShell(1))
            path = normalize(fname, sh.state.cwd)
    try:
        with sh.cmd_fs().open(path, "rb") as f:
            data = f.read()
    except IsADirectoryError:
        sh.error(f"{argv[0]}: {fname}: is a directory")
        return 1
    except OSError as e:
        sh.error(f"{fname}: {os.strerror(e.errno or 2)}")
        if sh.state.options.get("posix"):
            raise _fatal(ExitShell(1)) from None  # a special builtin's error ends a posix shell
        return 1
    # bash's input reader drops NUL bytes (`echo a\0b` in a file runs `echo ab`)
    src = data.translate(None, b"\0").decode("utf-8", "surrogateescape")

    def syntax_error(e: ParseError) -> int:
        _note_cond_error(sh, e)
        for ln, msg in getattr(e, "before", ()):
            sh.write_err(f"{fname}: line {ln}: {msg}\n".encode("utf-8", "surrogateescape"))
        sh.write_err(f"{fname}: line {e.line}: {e.message}\n".encode("utf-8", "surrogateescape"))
        if e.message.startswith("syntax error near"):
            lines = src.split("\n")
            ln = lines[e.line - 1] if 0 < e.line <= len(lines) else src
            sh.write_err(f"{fname}: line {e.line}: `{ln}'\n".encode("utf-8", "surrogateescape"))
        sh.state.last_status = 257  # what bash's RETURN trap sees after a syntax error
        return 2

    script: Any = None
    if not _by_lines(sh, src) and "<<" not in src and not sh.state.options["verbose"]:
        try:
            script = parse(src)
        except ParseError as e:
            if e.line <= 1 and getattr(e, "resume_pos", None) is None:
                return syntax_error(e)
            # the lines before the error run first, as bash does
    lim = sh.budget.limits.max_call_depth
    if lim is not None and sh.source_depth >= lim:
        sh.error(f"{fname}: maximum source nesting level exceeded")
        return 1
    saved_pos = None
    if len(argv) > 2:
        saved_pos = sh.state.positional
        sh.state.positional = argv[2:]
        set_before = sh.set_args
    sh.source_depth += 1
    sh.source_stack.append(fname)
    sh.source_calls.append((len(sh.funcstack), sh.lineno))
    saved_line = sh.lineno
    saved_report = sh.line_frame, sh.top_items
    sh.line_frame, sh.top_items = 0, None  # (a report in the file names its own line)
    level = getattr(sh, "xtrace_level", 0)
    sh.xtrace_level = level + 1
    frame, sh.cmd_frame = sh.cmd_frame, (argv[0], sh.budget.commands)
    try:
        if script is not None:
            st = _run_discarding(sh, script)
        else:
            st = 0
            reader = CommandReader(src, extglob=bool(sh.state.shopt.get("extglob")), aliases=LiveAliases(sh))
            while True:
                reader.extglob = bool(sh.state.shopt.get("extglob"))
                start = reader.consumed[1]
                try:
                    tree = reader.next()
                except ParseError as e:
                    _eval_warnings(sh, reader)
                    st = syntax_error(e)
                    if getattr(e, "resume_pos", None) is None:
                        break
                    st = sh.state.last_status = 1  # a bad compound assignment drops its line
                    continue
                _eval_warnings(sh, reader)
                _verbose_echo(sh, reader, start)
                if tree is None:
                    break
                stale = _stale_cond(sh, reader, start)
                if stale is not None:
                    st = syntax_error(stale)
                    break
                st = _run_discarding(sh, tree)
    except ReturnFn as r:
        st = r.status
    except ExitShell as e:
        if getattr(e, "errexit", False) and sh.funcstack:
            e.pop_ctx = True  # type: ignore[attr-defined]  # (see call_function)
        raise
    finally:
        sh.xtrace_level = level
        sh.cmd_frame = frame
        sh.source_depth -= 1
        sh.source_stack.pop()
        sh.source_calls.pop()
        sh.lineno = saved_line
        sh.line_frame, sh.top_items = saved_report
        # bash restores the caller's $@ unless `set` replaced the file's at top level
        if saved_pos is not None and (sh.funcstack or sh.set_args == set_before):
            sh.state.positional = saved_pos
    return st


@builtin("exec")
def b_exec(sh: Interpreter, argv: list[str]) -> int:
    from .interpreter import ExitShell
    r = _getopt(sh, "exec", argv[1:], "cla:",
                "exec [-cl] [-a name] [command [argument ...]] [redirection ...]")
    if type(r) is int:
        return r
    args = r[1]  # type: ignore[index]
    if not args:
        return 0
    a0: str | None = None
    clear = False
    for c, v in r[0]:  # type: ignore[index]
        if c == "a":
            a0 = v
        elif c == "c":
            clear = True
    if any(c == "l" for c, _ in r[0]):  # type: ignore[index]
        a0 = "-" + (a0 if a0 is not None else args[0])
    fn = BUILTINS.get(args[0])
    if fn is None and sh.host is not None and "/" not in args[0] and not sh.host.can_run(sh, args[0]):
        sh.error(f"exec: {args[0]}: not found")
        raise _fatal(ExitShell(127))
    if "/" in args[0]:
        st = _exec_path_error(sh, args[0])
        if st:
            if sh.state.shopt.get("execfail"):
                return st
            raise _fatal(ExitShell(st))
    if a0 is not None or clear:
        # a native program's argv[0] and environment (executors/inprocess.py)
        sh.exec_opts = (a0, clear)  # type: ignore[attr-defined]
    try:
        st = _dispatch_no_func(sh, args)
    finally:
        sh.exec_opts = None  # type: ignore[attr-defined]
    raise ExitShell(st)


def _exec_path_error(sh: Interpreter, name: str) -> int:
    """exec of a path that cannot run: bash names it absolute (the cwd joined on, a leading
    ./ dropped) and, for a directory or a file without an x bit, says so twice."""
    path = name
    if not path.startswith("/"):
        while path.startswith("./"):
            path = path[2:]
        path = sh.state.cwd.rstrip("/") + "/" + path
    try:
        s = sh.fs.stat(normalize(name, sh.state.cwd))
    except OSError:
        sh.error(f"{path}: No such file or directory")
        return 127
    why = "Is a directory" if s.is_dir else "Permission denied" if not s.st_mode & 0o111 else ""
    if not why:
        return 0
    sh.error(f"{path}: {why}")
    sh.error(f"exec: {path}: cannot execute: {why}")
    return 126


def _dispatch_no_func(sh: Interpreter, args: list[str]) -> int:
    fn = BUILTINS.get(args[0])
    if fn is not None and args[0] not in sh.disabled_builtins():
        return sh.run_builtin(fn, args)
    return sh.run_external(args)


_STD_PATH = "/bin:/usr/bin"  # `getconf PATH`: what command -p searches


@builtin("command")
def b_command(sh: Interpreter, argv: list[str]) -> int:
    args = argv[1:]
    mode = ""
    std: str | None = None
    while args and args[0].startswith("-") and len(args[0]) > 1:
        a = args.pop(0)
        if a == "--":
            break
        for c in a[1:]:
            if c in "vV":
                mode = c
            elif c == "p":
                std = _STD_PATH
            else:
                return _bad_opt(sh, "command", "-" + c, "command [-pVv] command [arg ...]")
    if not args:
        return 0
    if mode:
        # bash: -v/-V fail only when no name at all was found
        found = False
        for name in args:
            r = _describe(sh, name, "v" if mode == "v" else "V", no_funcs=False,
                          abspath=mode == "V", path=std)
            if r:
                if mode == "V":
                    sh.error(f"command: {name}: not found")
            else:
                found = True
        return 0 if found else 1
    if std is not None and "/" not in args[0] and sh.host is not None and (
            args[0] not in BUILTINS or args[0] in sh.disabled_builtins()):
        # command -p: the utility from the standard PATH, whatever PATH says
        p = sh.host.find_path(sh, args[0], std)
        if p is None:
            sh.error(f"{printable_filename(args[0])}: command not found")
            return 127
        return sh.run_external(args, resolved=p)  # (argv[0] as typed, as bash's execve)
    return _dispatch_no_func(sh, args)


@builtin("builtin")
def b_builtin(sh: Interpreter, argv: list[str]) -> int:
    r = _getopt(sh, "builtin", argv[1:], "", "builtin [shell-builtin [arg ...]]")
    if type(r) is int:
        return r
    argv = argv[:1] + r[1]  # type: ignore[index]
    if len(argv) < 2:
        return 0
    fn = BUILTINS.get(argv[1])
    if fn is None:
        sh.error(f"builtin: {argv[1]}: not a shell builtin")
        return 1
    return sh.run_builtin(fn, argv[1:])


def _find_path(sh: Interpreter, name: str, path: str | None = None) -> str | None:
    if "/" in name:
        p = normalize(name, sh.state.cwd)
        try:
            s = sh.fs.stat(p)
            if s.is_file and s.st_mode & 0o111:
                return name
        except OSError:
            pass
        return None
    host = sh.host
    if host is not None:
        return host.find_path(sh, name, path)
    return None


def _describe(sh: Interpreter, name: str, mode: str, no_funcs: bool = False, all_: bool = False,
              path_only: bool = False, force_path: bool = False, abspath: bool = False,
              path: str | None = None) -> int:
    """type/command -v/-V; returns 0 if found."""
    st = sh.state
    found = False
    if not force_path:
        if name in st.aliases and st.shopt["expand_aliases"]:
            if True:  # aliases only exist for the shell when expand_aliases is on
                found = True
                if mode == "t":
                    _out(sh, "alias\n")
                elif mode == "v":
                    from .builtins_compat import quote_single
                    _out(sh, f"alias {name}={quote_single(st.aliases[name])}\n")
                elif mode == "V":
                    _out(sh, f"{name} is aliased to `{st.aliases[name]}'\n")
                if not all_:
                    return 0
        if name in KEYWORDS:
            found = True
            if mode == "t":
                _out(sh, "keyword\n")
            elif mode == "v":
                _out(sh, name + "\n")
            elif mode == "V":
                _out(sh, f"{name} is a shell keyword\n")
            if not all_:
                return 0
        if not no_funcs and name in st.functions:
            found = True
            if mode == "t":
                _out(sh, "function\n")
            elif mode == "v":
                _out(sh, name + "\n")
            elif mode == "V":
                from .unparse import format_function
                _out(sh, f"{name} is a function\n{format_function(st.functions[name])}\n")
            if not all_:
                return 0
        if name in BUILTINS and name not in sh.disabled_builtins():
            found = True
            if mode == "t":
                _out(sh, "builtin\n")
            elif mode == "v":
                _out(sh, name + "\n")
            elif mode == "V":
                from .interpreter import SPECIAL_BUILTINS
                special = sh.state.options["posix"] and name in SPECIAL_BUILTINS
                _out(sh, f"{name} is a {'special ' if special else ''}shell builtin\n")
            if not all_:
                return 0
    if not all_ and path is None and "/" not in name:
        st.sync_hash(sh.get_scalar("PATH"))
        hashed = st.hash.get(name)
        if hashed is not None:
            # bash shows a relative hashed path from "./"
            if not hashed.startswith(("/", "./")):
                hashed = "./" + hashed
            if mode == "t":
                _out(sh, "file\n")
            elif mode in ("v", "p"):
                _out(sh, hashed + "\n")
            elif mode == "V":
                _out(sh, f"{name} is hashed ({hashed})\n")
            return 0
    if all_:
        paths = sh.host.find_all_paths(sh, name, path) if sh.host else []
    else:
        paths = [_find_path(sh, name, path)]
    for p in paths:
        if p is None:
            continue
        found = True
        if mode == "t":
            _out(sh, "file\n")
        elif mode in ("v", "p"):
            _out(sh, p + "\n")
        elif mode == "V":
            if abspath and not p.startswith("/"):
                # command -V: a relative PATH entry is shown from the current directory
                p = st.cwd.rstrip("/") + "/" + (p[2:] if p.startswith("./") else p)
            _out(sh, f"{name} is {p}\n")
    return 0 if found else 1


@builtin("type")
def b_type(sh: Interpreter, argv: list[str]) -> int:
    args = argv[1:]
    if sh.dash:
        return _dash_type(sh, args)
    mode = "V"
    all_ = force_path = no_funcs = False
    while args and args[0].startswith("-") and len(args[0]) > 1:
        a = args.pop(0)
        if a == "--":
            break
        for c in a[1:]:
            if c == "t":
                mode = "t"
            elif c == "p":
                mode = "p"
            elif c == "P":
                mode = "p"
                force_path = True
            elif c == "a":
                all_ = True
            elif c == "f":
                no_funcs = True
            else:
                return _bad_opt(sh, "type", "-" + c, "type [-afptP] name [name ...]")
    status = 0
    for name in args:
        r = _describe(sh, name, mode, no_funcs=no_funcs, all_=all_, force_path=force_path)
        if r:
            status = 1
            if mode == "V":
                sh.error(f"type: {name}: not found")
    return status


def _dash_bad_option(args: list[str], letters: str, with_arg: str) -> str:
    """The first option letter dash's builtin does not know (its getopt over ``args``), or ''."""
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--" or a[:1] != "-" or a == "-":
            return ""
        for k, c in enumerate(a[1:]):
            if c not in letters:
                return c
            if c in with_arg:
                if k + 2 == len(a):
                    i += 1
                break
        i += 1
    return ""


def _dash_type(sh: Interpreter, args: list[str]) -> int:
    """dash's type: no options (each word is a name), a function is only named, a name not
    found is said on stdout with status 127."""
    status = 0
    for name in args:
        if name in sh.state.functions:
            _out(sh, f"{name} is a shell function\n")
            continue
        if _describe(sh, name, "V", no_funcs=True, all_=False, force_path=False):
            _out(sh, f"{name}: not found\n")
            status = 127
    return status


@builtin("hash")
def b_hash(sh: Interpreter, argv: list[str]) -> int:
    from .state import hash_order
    r = _getopt(sh, "hash", argv[1:], "dlp:rt", "hash [-lr] [-p pathname] [-dt] [name ...]")
    if type(r) is int:
        return r
    opts, args = r  # type: ignore[misc]
    flags = {f for f, _ in opts}
    pathname = next((v for f, v in reversed(opts) if f == "p"), None)
    st = sh.state
    st.sync_hash(sh.get_scalar("PATH"))
    if not st.options["hashall"]:
        sh.error("hash: hashing disabled")
        return 1
    if not args and flags & {"d", "t"}:
        sh.error(f"hash: {'-d' if 'd' in flags else '-t'}: option requires an argument")
        return 1
    if not args and "r" not in flags:
        if not st.hash:
            if "l" not in flags:  # bash 5.2 keeps `hash -l` quiet
                _out(sh, "hash: hash table empty\n")
            return 0
        names = hash_order(list(st.hash))
        if "l" in flags:
            _out(sh, "".join(f"builtin hash -p {printable_filename(st.hash[n], True)} "
                             f"{printable_filename(n, True)}\n" for n in names))
        else:
            _out(sh, "hits\tcommand\n" + "".join(f"{st.hash_hits.get(n, 0):4d}\t{st.hash[n]}\n" for n in names))
        return 0
    if "r" in flags:
        st.hash.clear()
        st.hash_hits.clear()
    status = 0
    if "t" in flags:
        many = len(args) > 1
        for a in args:
            if a in st.hash:
                hp = st.hash[a]
                if not hp.startswith(("/", "./")):
                    hp = "./" + hp
                if "l" in flags:
                    _out(sh, f"builtin hash -p {hp} {a}\n")  # (bash: not quoted here)
                else:
                    _out(sh, f"{a}\t{hp}\n" if many else f"{hp}\n")
            else:
                sh.error(f"hash: {a}: not found")
                status = 1
        return status
    for a in args:
        if "/" in a:
            continue
        if pathname is not None:
            st.hash[a] = pathname
            st.hash_hits[a] = 0
        elif "d" in flags:
            if a in st.hash:
                del st.hash[a]
                st.hash_hits.pop(a, None)
            elif st.hash:  # bash: no table yet, nothing to complain about
                sh.error(f"hash: {a}: not found")
                status = 1
        elif a in BUILTINS or a in st.functions:
            continue
        else:
            p = _find_path(sh, a)
            if p is None:
                sh.error(f"hash: {a}: not found")
                status = 1
            else:
                st.hash[a] = p
                st.hash_hits[a] = 0
    return status


# ---------------------------------------------------------------------------- read & mapfile
def _long_line(sh: Interpreter, stream: Any, first: bytes, parts: list[bytes]) -> bytes:
    """The rest of a line longer than one chunk. Security: a line without end
    (`yes | tr -d '\\n' | read x`) is bounded by max_variable_bytes and the deadline
    instead of growing in memory until the host runs out."""
    lim = sh.budget.limits.max_variable_bytes
    have = sum(len(p) for p in parts)
    buf = bytearray(first)
    while True:
        if lim is not None and have + len(buf) > lim:
            raise LimitExceeded("max_variable_bytes", f"read: line exceeds max_variable_bytes ({lim} bytes)")
        sh.budget.check()
        chunk = stream.readline(65536)
        buf += chunk
        if not chunk or chunk.endswith(b"\n"):
            return bytes(buf)


def _read_record(sh: Interpreter, stream: Any, delim: bytes | None, nchars: int | None,
                 exact: bool, raw: bool) -> tuple[bytes, bool]:
    """Read one record; returns (data, eof_hit). Backslash-newline continues unless raw."""
    buf = bytearray()
    if stream is None:
        return b"", True
    if delim == b"\n" and nchars is None and hasattr(stream, "readline"):
        parts: list[bytes] = []
        while True:
            line = stream.readline(65536)
            if len(line) == 65536 and not line.endswith(b"\n"):
                line = _long_line(sh, stream, line, parts)
            if not line:
                return b"".join(parts), True
            if not line.endswith(b"\n"):
                parts.append(line)
                data = b"".join(parts)
                return data.translate(None, b"\0"), True
            body = line[:-1]
            if not body.isascii() and _mb_swallows_end(body) and not sh.byte_locale():
                # the newline completes a character bash's read_mbchar was reading (an
                # invalid sequence: Latin-1 text in a UTF-8 locale): the record goes on
                parts.append(line)
                continue
            if not raw and body.endswith(b"\\"):
                # an odd number of trailing backslashes escapes the newline: continue
                k = len(body) - len(body.rstrip(b"\\"))
                if k % 2 == 1:
                    parts.append(body[:-1])
                    continue
            parts.append(body)
            data = b"".join(parts)
            return (data.translate(None, b"\0") if b"\0" in data else data), False
    count = 0
    nread = 0
    budget = sh.budget
    # a byte above 0x7f starts a character (bash's read_mbchar): -n/-N count characters,
    # and the bytes that end it are taken with it, a delimiter or NUL among them
    mb = not sh.byte_locale()
    while True:
        if nchars is not None and count >= nchars:
            return bytes(buf), False
        c = stream.read(1)
        if not c:
            return bytes(buf), True
        nread += 1
        if not nread & 0x3FFF:
            # the bytes read, not the ones kept: NULs are dropped, and bash's `read -n 3 x
            # </dev/zero` never ends; ours ends at the deadline
            budget.charge_read(0x4000)
        if not raw and c == b"\\":
            c2 = stream.read(1)
            if not c2:
                return bytes(buf), True
            if c2 == b"\n":
                continue
            buf += b"\\" + c2
            if mb and c2[0] >= 0x80:
                buf += _mb_tail(stream, c2)
            count += 1
            continue
        if not exact and delim is not None and c == delim:
            return bytes(buf), False
        if c == b"\0":
            continue  # bash drops NUL bytes from what read stores
        buf += c
        if mb and c[0] >= 0x80:
            buf += _mb_tail(stream, c)
        count += 1
        if not count & 0xFFFF:
            # security: an endless record (`read -d '' x < /dev/zero`-like) stays bounded
            lim = sh.budget.limits.max_variable_bytes
            if lim is not None and len(buf) > lim:
                raise LimitExceeded("max_variable_bytes", f"read: input exceeds max_variable_bytes ({lim} bytes)")
            sh.budget.check()


def _assoc_target(sh: Interpreter, name: str) -> bool:
    """Is ``name`` (through a nameref) an associative array, which read -a and mapfile refuse?"""
    var = sh.state.find(sh.state.resolve_ref(name) or name)
    return var is not None and bool(var.attrs & ASSOC)


def _mb_len(lead: int) -> int:
    """Bytes glibc's UTF-8 mbrtowc wants for a character starting with ``lead`` (1: invalid
    at once). It still knows the old 5- and 6-byte forms, so 0xf8-0xfd start one."""
    if lead < 0xc2 or lead > 0xfd:
        return 1
    return 2 if lead < 0xe0 else 3 if lead < 0xf0 else 4 if lead < 0xf8 else 5 if lead < 0xfc else 6


def _mb_swallows_end(body: bytes) -> bool:
    """Does bash's read, taking ``body`` a character at a time, still want a byte for the
    character at its end (so the newline after it is taken as part of that character)?"""
    try:
        body.decode("utf-8")
        return False  # (all whole characters)
    except UnicodeDecodeError:
        pass
    i, n = 0, len(body)
    while i < n:
        b = body[i]
        i += 1
        if b < 0x80:
            continue
        need = _mb_len(b) - 1
        while need > 0:
            if i == n:
                return True
            c = body[i]
            i += 1
            need -= 1
            if c & 0xC0 != 0x80:
                break  # (invalid: the byte that made it so belongs to the character)
    return False


def _mb_tail(stream: Any, first: bytes) -> bytes:
    """The bytes after ``first`` that make one character, as bash's read_mbchar takes them:
    more while the sequence is an incomplete one, the byte that makes it invalid included
    (it is read, so it is kept)."""
    tail = b""
    need = _mb_len(first[0]) - 1
    while need > 0:
        c = stream.read(1)
        if not c:
            break
        tail += c
        need -= 1
        if c[0] & 0xC0 != 0x80:
            break
    return tail


class _PlainChars:
    """The characters of ``s`` as _split_read's (char, escaped) pairs, none escaped, made
    one at a time."""

    __slots__ = ("s",)

    def __init__(self, s: str) -> None:
        self.s = s

    def __len__(self) -> int:
        return len(self.s)

    def __getitem__(self, k: Any) -> Any:
        if type(k) is slice:
            return _PlainChars(self.s[k])
        return (self.s[k], False)

    def __iter__(self) -> Any:
        return ((c, False) for c in self.s)


def _split_read(s: str, n: int, ifs: str | None, raw: bool) -> list[str]:
    """bash's read field splitting with escapes (``\\x`` keeps x literal when not raw)."""
    if ifs is None:
        ifs = " \t\n"
    ws = "".join(c for c in ifs if c in " \t\n")
    # characters as (char, escaped); with no escape to undo, a view made on demand (the list
    # of pairs took ~72 bytes a character: 4 GB for a 60 MB line; contract12)
    chars: Any = _PlainChars(s) if raw or "\\" not in s else []
    i = 0 if type(chars) is list else len(s)
    while i < len(s):
        c = s[i]
        if not raw and c == "\\":
            if i + 1 < len(s):
                chars.append((s[i + 1], True))
            # (a backslash ending the input is dropped)
            i += 2
            continue
        chars.append((c, False))
        i += 1
    def isifs(k: int) -> bool:
        return not chars[k][1] and chars[k][0] in ifs
    def isws(k: int) -> bool:
        return not chars[k][1] and chars[k][0] in ws
    fields: list[str] = []
    L = len(chars)
    k = 0
    while k < L and isws(k):
        k += 1
    while len(fields) < n - 1 and k < L:
        start = k
        while k < L and not isifs(k):
            k += 1
        fields.append("".join(c for c, _ in chars[start:k]))
        if not len(fields) & 0xFFFF:
            check_words(len(fields), k, "read: array")  # (contract12: word lists are bounded)
        # consume delimiter: ws* [nonws] ws*
        while k < L and isws(k):
            k += 1
        if k < L and isifs(k) and not isws(k):
            k += 1
            while k < L and isws(k):
                k += 1
    if len(fields) < n:
        rest = chars[k:]
        # strip trailing IFS whitespace
        e = len(rest)
        while e > 0 and not rest[e - 1][1] and rest[e - 1][0] in ws:
            e -= 1
        if any(not esc and ch in ifs for ch, esc in rest[:e]):
            # bash: once the rest holds an unquoted separator, escaped IFS whitespace at
            # its end goes too (`read x <<< 'a b\ '` gives "a b", `<<< 'a\ '` keeps "a ")
            while e > 0 and rest[e - 1][0] in ws:
                e -= 1
        rest = rest[:e]
        text = "".join(c for c, _ in rest)
        if n > 1 or True:
            # a single trailing non-whitespace IFS delimiter is dropped when it ends the last field
            if rest and not rest[-1][1] and rest[-1][0] in ifs and rest[-1][0] not in ws and len(fields) == n - 1:
                inner = rest[:-1]
                if not any((not esc and ch in ifs) for ch, esc in inner):
                    text = "".join(c for c, _ in inner)
        if k < L or fields or True:
            fields.append(text)
    return fields


@builtin("read")
def b_read(sh: Interpreter, argv: list[str]) -> int:
    args = argv[1:]
    if sh.dash and args and args[0][:1] == "-":
        bad = _dash_bad_option(args, "pr", "p")
        if bad:
            sh.error(f"read: Illegal option -{bad}")
            return 2
    raw = silent = False
    delim: bytes | None = b"\n"
    nchars: int | None = None
    exact = False
    prompt = None
    array = None
    fd = -1  # (-1: stdin, no -u)
    timeout = None
    i = 0
    while i < len(args):
        a = args[i]
        if not a.startswith("-") or a == "-":
            break
        if a == "--":
            i += 1
            break
        j = 1
        while j < len(a):
            c = a[j]
            if c in "rse":
                if c == "r":
                    raw = True
                elif c == "s":
                    silent = True
                j += 1
                continue
            if c in "dnNpautiI":
                val = a[j + 1:]
                if not val:
                    i += 1
                    if i >= len(args):
                        sh.error(f"read: -{c}: option requires an argument")
                        sh.write_err(b"read: usage: read [-ers] [-a array] [-d delim] [-i text] [-n nchars] [-N nchars] [-p prompt] [-t timeout] [-u fd] [name ...]\n")
                        return 2
                    val = args[i]
                if c == "d":
                    delim = val.encode("utf-8", "surrogateescape")[:1] if val else b"\0"
                elif c in "nN":
                    try:
                        nchars = int(val)
                        if nchars < 0:
                            raise ValueError
                    except ValueError:
                        sh.error(f"read: {val}: invalid number")
                        return 1
                    exact = c == "N"
                elif c == "p":
                    prompt = val
                elif c == "a":
                    array = val
                elif c == "u":
                    try:
                        fd = int(val)
                        if fd < 0:
                            raise ValueError
                    except ValueError:
                        sh.error(f"read: {val}: invalid file descriptor specification")
                        return 1
                elif c == "t":
                    # bash's uconvert: [sign]digits[.digits] ("" is 0); the sign goes to the
                    # whole seconds only, so -0.5 is half a second while -1.5 is refused
                    m = re.fullmatch(r"([-+]?)([0-9]*)(\.[0-9]*)?", val)
                    timeout = float((m.group(2) or "0") + (m.group(3) or ".").ljust(2, "0")) if m else -1.0
                    if m is None or m.group(1) == "-" and int(m.group(2) or 0) > 0:
                        sh.error(f"read: {val}: invalid timeout specification")
                        return 1
                break
            sh.error(f"read: -{c}: invalid option")
            sh.write_err(b"read: usage: read [-ers] [-a array] [-d delim] [-i text] [-n nchars] [-N nchars] [-p prompt] [-t timeout] [-u fd] [name ...]\n")
            return 2
        i += 1
    names = args[i:]
    _ = silent
    if array is not None and not _NAME_RE.match(array):
        sh.error(f"read: `{array}': not a valid identifier")
        return 1
    if fd < 0:
        fd = 0
        if sh.fds.get(0) is None:
            if timeout != 0:  # (read -t 0 just finds nothing to read)
                sh.error("read: read error: 0: Bad file descriptor")  # a closed stdin (<&-)
            return 1
    stream = sh.fds.get(fd)
    if stream is None:
        sh.error(f"read: {fd}: invalid file descriptor: Bad file descriptor")
        return 1
    if prompt is not None and sh.fd_is_tty(fd):
        # bash shows -p's prompt (on stderr) only when the input is a terminal
        sh.write_err(prompt.encode("utf-8", "surrogateescape"))
    timed = _timed_input(stream, timeout) if timeout is not None else None
    if timeout == 0:
        return 0 if timed is None or timed.ready() else 1
    if timed is not None:
        stream = timed
    elif getattr(getattr(stream, "_rawp", None), "nread", None) == 0 and not stream.closed:
        # a pipe no buffered reader has taken from: read it a byte at a time, as bash does,
        # so the rest stays in the pipe for the commands that follow (a native one too)
        stream = _PipeBytes(stream._rawp)
    try:
        data, eof = _read_record(sh, stream, delim, nchars, exact, raw)
    except OSError as e:
        sh.error(f"read: read error: {fd}: {os.strerror(e.errno or 5)}")
        return 1
    lim = sh.budget.limits.max_variable_bytes
    if lim is not None and len(data) > lim:
        data = data[:lim]
    if b"\0" in data:
        data = data[:data.index(b"\0")]  # (a NUL taken into a character ends bash's C string)
    if array is not None and _assoc_target(sh, array):
        sh.error(f"read: {array}: not an indexed array")  # (after the input was read, as bash)
        return 1
    s = data.decode("utf-8", "surrogateescape")
    if eof and not data:
        # nothing read: variables are still assigned empty (bash sets them)
        if array is not None:
            sh.set_array_values(array, [])
        elif _assign_read_names(sh, names or ["REPLY"], []):
            return 1
        return 142 if timed is not None and timed.expired else 1
    ifs = sh.get_ifs()
    if array is not None:
        if exact:
            vals = [s if raw else _unescape_read(s)]
        else:
            vals = _split_read(s, 1 << 30, ifs, raw)
            if vals and vals[-1] == "":
                vals.pop()
        sh.set_array_values(array, vals)
    elif not names:
        if not raw:
            s = _unescape_read(s)
        _assign_read(sh, "REPLY", s)
    elif exact:
        # -N takes the characters as they are, but without -r a backslash still escapes
        if _assign_read_names(sh, names, [s if raw else _unescape_read(s)]):
            return 1
    else:
        if _assign_read_names(sh, names, _split_read(s, len(names), ifs, raw)):
            return 1
    if timed is not None and timed.expired:
        return 142  # 128 + SIGALRM: what bash's timed-out read returns, with the partial input kept
    return 1 if eof else 0


class _TimedInput:
    """A pipe-like input read byte by byte against ``read -t``'s deadline; when it passes,
    reads return end-of-file and ``expired`` is set."""

    __slots__ = ("stream", "fd", "deadline", "expired")

    def __init__(self, stream: Any, fd: int, timeout: float) -> None:
        self.stream = stream
        self.fd = fd
        self.deadline = time.monotonic() + timeout
        self.expired = False

    def _poll(self, n: int) -> bytes | None:
        # non-blocking for one call: buffered bytes come first, then whatever the pipe holds
        os.set_blocking(self.fd, False)
        try:
            return self.stream.read(n)
        except BlockingIOError:
            return None
        finally:
            os.set_blocking(self.fd, True)

    def read(self, n: int = 1) -> bytes:
        while True:
            c = self._poll(n)
            if c is not None:
                return c
            left = self.deadline - time.monotonic()
            if left <= 0:
                self.expired = True
                return b""
            # (in slices, the run's deadline checked between them: `read -t 99999999999`
            # overflowed select's timeout, an internal error)
            select.select([self.fd], [], [], min(left, 0.05))
            charge_read(0)

    def ready(self) -> bool:
        """read -t 0: is there input (or end-of-file) to read now?"""
        if select.select([self.fd], [], [], 0)[0]:
            return True
        peek = getattr(self.stream, "peek", None)
        if peek is None:
            return False
        os.set_blocking(self.fd, False)
        try:
            return bool(peek(1))
        except BlockingIOError:
            return False
        finally:
            os.set_blocking(self.fd, True)


class _PipeBytes:
    """``read``'s view of a pipe: it takes no byte past the record, as bash's one-byte
    reads do, but finds the record's end by looking at the pipe's head with tee(2) (which
    copies without consuming) and takes the line with one read(2); where tee is missing,
    a byte at a time."""

    __slots__ = ("raw", "fd")

    def __init__(self, raw: Any) -> None:
        self.raw = raw
        self.fd = raw.fileno()

    def _head(self) -> bytes:
        """Bytes at the pipe's head, not taken (b"" when none are there yet)."""
        raw = self.raw
        if raw.peeked and raw.peeked_at == raw.handoffs:
            return raw.peeked  # (only `read` took from the pipe since: still its head)
        tee = _tee()
        if tee is None:
            return b""
        sc = raw.scratch
        if sc is None:
            try:
                sc = raw.scratch = os.pipe()
            except OSError:
                return b""
        n = tee(self.fd, sc[1], 65536, 2)  # SPLICE_F_NONBLOCK
        if n <= 0:
            return b""  # empty (EAGAIN), at EOF, or no pipe (EINVAL): a one-byte read decides
        data = os.read(sc[0], n)
        raw.peeked, raw.peeked_at = data, raw.handoffs
        return data

    def read(self, size: int = -1) -> bytes:
        if size != 1:
            raise io.UnsupportedOperation("read(1) only")
        self.raw.peeked = b""
        return os.read(self.fd, 1)

    def readline(self, size: int = -1) -> bytes:
        buf = bytearray()
        raw = self.raw
        fd = self.fd
        while size < 0 or len(buf) < size:
            head = self._head()
            if head:
                want = len(head) if size < 0 else min(len(head), size - len(buf))
                k = head.find(b"\n", 0, want)
                take = k + 1 if k >= 0 else want
                got = os.read(fd, take)
                raw.peeked = head[len(got):] if head[:len(got)] == got else b""
                buf += got
                if not got or got.endswith(b"\n"):
                    break
                continue
            raw.peeked = b""
            c = os.read(fd, 1)  # (blocks until the writer writes or closes)
            if not c:
                break
            buf += c
            if c == b"\n":
                break
        return bytes(buf)


_TEE: Any = None


def _tee() -> Any:
    """libc's tee(2), or None."""
    global _TEE
    if _TEE is None:
        try:
            import ctypes
            fn = ctypes.CDLL(None, use_errno=True).tee
            fn.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_size_t, ctypes.c_uint]
            fn.restype = ctypes.c_ssize_t
            _TEE = fn
        except (OSError, AttributeError):
            _TEE = False
    return _TEE or None


def _timed_input(stream: Any, timeout: float) -> _TimedInput | None:
    """Wrap an input that can block (a pipe, socket or terminal) for ``read -t``; regular
    files and in-memory input are never waited on, so they need no deadline."""
    try:
        fd = stream.fileno()
        mode = os.fstat(fd).st_mode
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
        return None
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    return _TimedInput(stream, fd, timeout)


def _assign_read_names(sh: Interpreter, names: list[str], vals: list[str]) -> bool:
    """Assign ``vals`` to ``names`` in order; bash stops (status 1) at the first word that
    is no variable name, after assigning the names before it."""
    for k, n in enumerate(names):
        if not _NAME_RE.match(n.split("[")[0]) or ("[" in n and not n.endswith("]")) or n.endswith("[]"):
            sh.error(f"read: `{n}': not a valid identifier")
            return True
        try:
            _assign_read(sh, n, vals[k] if k < len(vals) else "")
        except _circular_ref():
            return True  # a circular nameref: warned, and read fails
    return False


def _unescape_read(s: str) -> str:
    out = []
    i = 0
    while i < len(s):
        if s[i] == "\\" and i + 1 < len(s):
            out.append(s[i + 1])
            i += 2
        else:
            out.append(s[i])
            i += 1
    return "".join(out)


def _assign_read(sh: Interpreter, name: str, value: str) -> None:
    if "[" in name and name.endswith("]"):
        nm, _, sub = name.partition("[")
        sh.assign_element(nm, sh.sub_word(sub[:-1]), value)
    else:
        sh.set_var(name, value)


@builtin("mapfile", "readarray")
def b_mapfile(sh: Interpreter, argv: list[str]) -> int:
    args = argv[1:]
    strip = False
    delim = b"\n"
    count = 0
    skip = 0
    origin = None
    fd = -1  # (-1: stdin, no -u)
    callback = None
    quantum = 5000
    r = _getopt(sh, argv[0], args, "d:n:O:s:tu:C:c:", f"{argv[0]} [-d delim] [-n count] [-O origin] "
                "[-s count] [-t] [-u fd] [-C callback] [-c quantum] [array]")
    if type(r) is int:
        return r
    for c, val in r[0]:  # type: ignore[index]
        if c == "t":
            strip = True
        elif c == "d":
            delim = val.encode("utf-8", "surrogateescape")[:1] if val else b"\0"  # type: ignore[union-attr]
        elif c == "C":
            callback = val
        else:
            k = legal_number(val)  # type: ignore[arg-type]
            what = {"n": "line count", "s": "line count", "O": "array origin",
                    "u": "file descriptor specification", "c": "callback quantum"}[c]
            if k is None or k < 0 or c == "c" and k == 0:
                sh.error(f"{argv[0]}: {val}: invalid {what}")
                return 1
            if c == "n":
                count = k
            elif c == "s":
                skip = k
            elif c == "O":
                origin = k
            elif c == "u":
                fd = k
            else:
                quantum = k
    args = r[1]  # type: ignore[index]
    i = 0
    if args and not args[0]:
        sh.error(f"{argv[0]}: empty array variable name")
        return 2
    if args and not _NAME_RE.match(args[0]):
        sh.error(f"{argv[0]}: `{args[0]}': not a valid identifier")
        return 1
    name = args[i] if i < len(args) else "MAPFILE"
    if fd < 0:
        fd = 0
        if sh.fds.get(0) is None:
            fd = -1  # a closed stdin (<&-): bash's mapfile takes the error for the end
    stream = sh.fds.get(fd) if fd >= 0 else NULL_INPUT
    if stream is None:
        sh.error(f"{argv[0]}: {fd}: invalid file descriptor: Bad file descriptor")
        return 1
    if type(stream).__name__ == "DirInput":
        stream = NULL_INPUT  # bash's mapfile takes a read error for the end of its input
    # the target is checked before anything is read (the input stays for the next reader)
    var = sh.state.find(sh.state.resolve_ref(name) or name)
    if var is not None and var.attrs & READONLY:
        sh.error(f"{name}: readonly variable")
        return 1
    if _assoc_target(sh, name):
        sh.error(f"{argv[0]}: {name}: not an indexed array")
        return 1
    lines: list[str] = []
    n = 0
    budget = sh.budget
    # security: the array as a whole is bounded like a buffer a command holds
    # (`mapfile -d '' a </dev/zero` reads one empty element per byte, forever)
    cap = budget.held_cap()
    sc = budget.shell_cap   # (the array joins the shell's memory: contract12)
    if sc is not None and (cap is None or sc < cap):
        cap = sc
    held = 0
    over = Budget.HELD_OVERHEAD + 49   # (and the str object each line becomes)
    lines_mode = delim == b"\n" and hasattr(stream, "readline")
    while True:
        if count and len(lines) >= count:
            break
        if lines_mode:
            rec = stream.readline(65536)
            if len(rec) == 65536 and not rec.endswith(b"\n"):
                rec = _long_line(sh, stream, rec, [])
        else:
            buf = bytearray()
            while True:
                ch = stream.read(1)
                if not ch:
                    break
                buf += ch
                if ch == delim:
                    break
                if not len(buf) & 0x3FFF:
                    budget.check_size(len(buf), f"{argv[0]}: line")
            rec = bytes(buf)
        if not rec:
            break
        held += len(rec) + over
        if cap is not None and held > cap:
            raise LimitExceeded("max_variable_bytes", f"{argv[0]}: input exceeds {cap} bytes held in memory")
        budget.charge_read(len(rec))
        n += 1
        if n <= skip:
            continue
        if strip and rec.endswith(delim):
            rec = rec[:-1]
        if b"\0" in rec:  # bash stores C strings: an element ends at its first NUL
            rec = rec[:rec.index(b"\0")]
        lines.append(rec.decode("utf-8", "surrogateescape"))
    var = sh.state.find(name)
    if var is not None and var.attrs & READONLY:
        sh.error(f"{name}: readonly variable")
        return 1
    if origin is None:
        sh.set_array_values(name, lines)
    else:
        if var is None or type(var.value) is not dict:
            sh.set_array_values(name, [])
            var = sh.state.find(name)
        d = var.own()
        for k, ln in enumerate(lines):
            d[origin + k] = ln  # type: ignore[union-attr,index]
    if callback:
        # -C callback every -c quantum lines, given the element's index and its text (run
        # after the whole read here; bash interleaves it with the assignments)
        from .quoting import quote_single
        base = origin or 0
        q = quantum if quantum > 0 else 5000
        for k, ln in enumerate(lines):
            if (k + 1) % q == 0:
                sh.run_string(f"{callback} {base + k} {quote_single(ln)}")
    return 0


# ---------------------------------------------------------------------------- traps & signals
SIGNALS = {
    "HUP": 1, "INT": 2, "QUIT": 3, "ILL": 4, "TRAP": 5, "ABRT": 6, "BUS": 7, "FPE": 8, "KILL": 9,
    "USR1": 10, "SEGV": 11, "USR2": 12, "PIPE": 13, "ALRM": 14, "TERM": 15, "STKFLT": 16,
    "CHLD": 17, "CONT": 18, "STOP": 19, "TSTP": 20, "TTIN": 21, "TTOU": 22, "URG": 23,
    "XCPU": 24, "XFSZ": 25, "VTALRM": 26, "PROF": 27, "WINCH": 28, "IO": 29, "PWR": 30, "SYS": 31,
}
SIGNUM = {v: k for k, v in SIGNALS.items()}


def _signal_table() -> str:
    """``kill -l`` / ``trap -l`` exactly as bash prints it on Linux (with real-time signals)."""
    names = [(n, "SIG" + SIGNUM[n]) for n in sorted(SIGNUM)]
    names += [(n, "SIG" + _rt_name(n)) for n in range(34, 65)]
    items = [f"{n:2d}) {nm}" for n, nm in names]
    lines = []
    for i in range(0, len(items), 5):
        row = items[i:i + 5]
        lines.append("\t".join(row) + ("\t" if len(row) < 5 else ""))
    return "\n".join(lines) + "\n"




def _rt_name(n: int) -> str:
    """Linux real-time signal n (32..64) as bash names it: 32 and 33 have no name."""
    if n < 34:
        return str(n)
    return "RTMIN" if n == 34 else f"RTMIN+{n - 34}" if n <= 49 else "RTMAX" if n == 64 else f"RTMAX-{64 - n}"


_RT_NAMES = {_rt_name(n): n for n in range(34, 65)}


def _sig_name(s: str) -> str | None:
    u = s.upper()
    if u.startswith("SIG"):
        u = u[3:]
    if u in ("EXIT", "ERR", "DEBUG", "RETURN"):
        return u
    if s.isdigit():
        n = int(s)
        if n == 0:
            return "EXIT"
        return SIGNUM.get(n) or (_rt_name(n) if 34 <= n <= 64 else None)
    if u in SIGNALS or u in _RT_NAMES:
        return u
    m = re.fullmatch(r"RTMIN\+([0-9]+)", u)  # bash computes these (RTMIN+16 is RTMAX-14); RTMAX-k
    if m and int(m.group(1)) <= 30:         # only by name, up to RTMAX-14
        return _rt_name(34 + int(m.group(1)))
    return None


_TRAP_USAGE = "trap [-lp] [[arg] signal_spec ...]"


def _trap_sig(s: str) -> str | None:
    """bash's decode_signal for trap: a number below 65 or a name (any case, SIG optional
    for real signals only: ``SIGEXIT`` is not a signal spec)."""
    if s.isdigit():
        n = int(s)
        if n == 0:
            return "EXIT"
        return SIGNUM.get(n) or (_rt_name(n) if 32 <= n <= 64 else None)
    u = s.upper()
    if u in ("EXIT", "ERR", "DEBUG", "RETURN"):
        return u
    if u.startswith("SIG"):
        u = u[3:]
    return u if u in SIGNALS or u in _RT_NAMES else None


@builtin("trap")
def b_trap(sh: Interpreter, argv: list[str]) -> int:
    from .quoting import _single_quote
    r = _getopt(sh, "trap", argv[1:], "lp", _TRAP_USAGE)
    if type(r) is int:
        return r
    letters = {f for f, _ in r[0]}  # type: ignore[index]
    args = r[1]  # type: ignore[index]
    st = sh.state
    listing = "l" in letters
    display = "p" in letters
    if listing:
        _out(sh, _signal_table())
        return 0
    if display or not args:
        traps = st.traps
        if sh.is_subshell and traps == getattr(sh, "fork_traps", traps):
            traps = getattr(sh, "parent_traps", traps)  # an untouched subshell lists the parent's
        status = 0
        if args:
            keys = []
            for a in args:
                name = _trap_sig(a)
                if name is None:
                    sh.error(f"trap: {a}: invalid signal specification")
                    status = 1
                else:
                    keys.append(name)
        else:
            keys = (["EXIT"] + [SIGNUM[i] for i in sorted(SIGNUM)] + [_rt_name(n) for n in range(32, 65)]
                    + ["DEBUG", "ERR", "RETURN"])
        for k in keys:
            if k in traps:
                nm = k if k in ("EXIT", "DEBUG", "ERR", "RETURN") or k.isdigit() else "SIG" + k
                # bash prints the handler single-quoted as written, newlines and all
                _out(sh, f"trap -- {_single_quote(traps[k]) if traps[k] else chr(39) * 2} {nm}\n")
        return status
    first = args[0]
    if first.isdigit() and _trap_sig(first) is not None:
        action = "-"  # `trap 0 INT`: every word is a signal to reset (old form)
        sigs = args
    elif first != "-" and len(args) == 1 and _trap_sig(first) is not None:
        action, sigs = "-", args
    elif len(args) == 1:
        sh.write_err(f"trap: usage: {_TRAP_USAGE}\n".encode())
        return 2
    else:
        action, sigs = first, args[1:]
    status = 0
    for s in sigs:
        name = _trap_sig(s)
        if name is None:
            sh.error(f"trap: {s}: invalid signal specification")
            status = 1
            continue
        if action == "-":
            st.traps.pop(name, None)
        else:
            sh.grow(VAR_COST + len(action))   # (max_shell_bytes: contract13)
            st.traps[name] = action
    return status


@builtin("kill")
def b_kill(sh: Interpreter, argv: list[str]) -> int:
    args = argv[1:]
    sig = "TERM"
    if not args:
        sh.write_err(b"kill: usage: kill [-s sigspec | -n signum | -sigspec] pid | jobspec ... or kill -l [sigspec]\n")
        return 2
    if args[0] in ("-l", "-L"):
        if len(args) > 1:
            # (each operand in turn: a bad one is reported and the rest still listed)
            status = 0
            for a in args[1:]:
                if a.isdigit():
                    n = int(a)
                    if n > 128:
                        n -= 128
                    nm = "EXIT" if n == 0 else SIGNUM.get(n) or (_rt_name(n) if 34 <= n <= 64 else None)
                    if nm is None:
                        sh.error(f"kill: {a}: invalid signal specification")
                        status = 1
                        continue
                    _out(sh, nm + "\n")
                else:
                    nm = _sig_name(a)
                    if nm == "EXIT" and a.upper() == "EXIT":
                        _out(sh, "0\n")
                        continue
                    if nm is None or nm not in SIGNALS and nm not in _RT_NAMES:
                        sh.error(f"kill: {a}: invalid signal specification")
                        status = 1
                        continue
                    _out(sh, f"{SIGNALS.get(nm) or _RT_NAMES[nm]}\n")
            return status
        _out(sh, _signal_table())
        return 0
    if args[0] in ("-s", "-n"):
        if len(args) < 2:
            sh.error(f"kill: {args[0]}: option requires an argument")
            return 1  # (bash's sh_needarg then EXECUTION_FAILURE, not a usage status)
        sig = args[1]
        args = args[2:]
    elif args[0].startswith("-") and len(args[0]) > 1 and args[0] != "--":
        sig = args[0][1:]
        args = args[1:]
    if args and args[0] == "--":
        args = args[1:]
    name = _sig_name(sig)
    if name is None or name not in SIGNALS and name != "EXIT":
        sh.error(f"kill: {sig}: invalid signal specification")
        return 1
    if not args:  # (`kill -9` with no pid: bash's usage)
        sh.write_err(b"kill: usage: kill [-s sigspec | -n signum | -sigspec] pid | jobspec ... or kill -l [sigspec]\n")
        return 2
    status = 0
    for a in args:
        st = _send_signal(sh, a, name)
        if st:
            status = st
    return status


def _send_signal(sh: Interpreter, target: str, sig: str) -> int:
    from .interpreter import ExitShell
    jobs = sh.jobs
    if target.startswith("%"):
        from .jobs import job_view
        job = jobs.find(target, job_view(sh)) if jobs else None
        if job is None:
            sh.error(f"kill: {target}: no such job")
            return 1
        nat = getattr(job, "native", None)
        if nat is not None and job.single and sig in SIGNALS and nat.poll() is None:
            # a job that is one native command: bash signals its process group, which may
            # trap the signal or ignore it (the job then goes on)
            nat.kill_group(SIGNALS[sig])
            return 0
    elif target.lstrip("-").isdigit():
        pid = int(target)
        if pid == -1:
            return _signal_all(sh, sig)
        own = jobs.by_pid.get(pid) if jobs and pid > 0 else None
        if pid == sh.pid and pid != sh.bashpid and sh.top is not sh:
            # `kill $$` in a subshell, $( ) or job: the signal is for the shell $$ names,
            # which acts on it once its foreground command is done (a `wait` it is in
            # returns at once for a trapped one)
            if sig != "EXIT":
                sh.sig_queue.append(sig)
            return 0
        if pid in (sh.pid, sh.bashpid, 0) and (own is None or pid == sh.pid):
            # (a subshell's BASHPID is made up: a job's pid that happens to equal it, `$!`
            # of a native job, is that job)
            if sig == "EXIT":
                return 0  # signal 0 only checks that the process exists (no EXIT trap)
            trap = sh.state.traps.get(sig)
            if trap is not None:
                if trap:
                    # bash runs it once kill is done: $? in the trap is kill's 0
                    sh.state.last_status = 0
                    sh.run_string(trap, trap=True)
                return 0
            if sig in ("CHLD", "WINCH", "URG", "CONT", "EXIT"):
                return 0
            if sig in ("STOP", "TSTP", "TTIN", "TTOU"):
                return 0
            # (killed_by: the subshell or `bash -c` this ends is reported as bash reports a
            # child a signal ended)
            sh.killed_by = SIGNALS.get(sig, 15)
            raise ExitShell(128 + sh.killed_by)
        job = jobs.by_pid.get(pid) if jobs else None
        if job is None:
            if getattr(sh.host, "native", None) is not None:
                # a real process (a disowned job, one found by pgrep or a pid file): the
                # real signal, as bash sends it (the sandbox's own processes refuse it)
                return _kill_real(sh, pid, sig)
            sh.error(f"kill: ({pid}) - No such process")
            return 1
        nat = getattr(job, "native", None)
        if nat is not None and jobs.jobs.get(job.num) is not job:
            if nat.pid == pid and nat.poll() is None:
                return _kill_real(sh, pid, sig)  # disowned, still running
            # reaped by `wait`: the pid is no longer ours (bash: ESRCH)
            sh.error(f"kill: ({pid}) - No such process")
            return 1
        if nat is not None and nat.pid == pid and nat.poll() is None and sig in SIGNALS:
            # `$!` of a native job is a real process: it gets the real signal (and may trap it)
            try:
                os.kill(pid, SIGNALS[sig])
            except OSError:
                pass
            return 0
    else:
        if not target:
            sh.error("kill: `': not a pid or valid job spec")
            return 1
        sh.error(f"kill: {target}: arguments must be process or job IDs")
        return 1
    if sig in ("EXIT", "CHLD", "WINCH", "URG", "CONT"):
        return 0
    if not job.done.is_set():
        child = job.child
        trap = child.state.traps.get(sig) if child is not None else None
        if trap:
            return 0
        job.killed = True
        if child is not None:
            child.budget.cancel("killed")
            child.kill_signal = SIGNALS.get(sig, 15)
    return 0


def _kill_real(sh: Interpreter, pid: int, sig: str) -> int:
    num = 0 if sig == "EXIT" else SIGNALS.get(sig)
    if num is None:
        return 0
    try:
        os.kill(pid, num)
    except ProcessLookupError:
        sh.error(f"kill: ({pid}) - No such process")
        return 1
    except OSError as e:
        sh.error(f"kill: ({pid}) - {os.strerror(e.errno or 1)}")
        return 1
    return 0


def _signal_all(sh: Interpreter, sig: str) -> int:
    """``kill -SIG -1``: kill(2) with pid -1 signals every process the caller may except
    itself (and init). Here: every background job of the session and every native process
    the session started (its process group: what it started too); the shell goes on.
    Nothing to signal: bash's ESRCH message, status 1."""
    from .jobs import _live_jobs
    jobs = [j for j in list(_live_jobs(sh, sh.jobs)) if j.child is not sh] if sh.jobs is not None else []
    launcher = getattr(sh.host, "native", None)
    procs = [p for p in list(getattr(launcher, "live", ())) if p.poll() is None]
    if not jobs and not procs:
        sh.error("kill: (-1) - No such process")
        return 1
    if sig == "EXIT":
        return 0  # (signal 0: they exist)
    num = SIGNALS.get(sig)
    for p in procs:
        if num is not None:
            p.kill_group(num)
    if sig in ("CHLD", "WINCH", "URG", "CONT"):
        return 0
    for job in jobs:
        if job.done.is_set():
            continue
        child = job.child
        trap = child.state.traps.get(sig) if child is not None else None
        if trap:
            continue
        job.killed = True
        if child is not None:
            child.budget.cancel("killed")
            child.kill_signal = num or 15
    return 0


@builtin("wait")
def b_wait(sh: Interpreter, argv: list[str]) -> int:
    r = _getopt(sh, "wait", argv[1:], "fnp:", "wait [-fn] [-p var] [id ...]")
    if type(r) is int:
        return r
    any_ = "n" in {f for f, _ in r[0]}  # type: ignore[index]
    args = r[1]  # type: ignore[index]
    for a in args:
        if not a.isdigit() and not a.startswith("%"):
            sh.error(f"wait: `{a}': not a pid or valid job spec")
            return 1
    pvar = None
    for f, v in r[0]:  # type: ignore[index]
        if f == "p":
            pvar = v
    if pvar is not None:
        # -p VAR: unset first, then the pid of the job whose status is returned (bash 5.1)
        try:
            sh.unset_var(pvar)
        except Exception:
            pass
    sh.__dict__["_waited_timeout"] = False
    st_ = _wait(sh, args, any_, pvar)
    # jobs of this run end at its deadline: a wait they released then is the run's timeout
    # (`sleep 100 & wait` as a script's last line ended 0, not timed out, in virtual mode).
    # On a starved machine the watchdog stops them up to WATCH_EARLY_MAX early (limits.early),
    # before this run's own check would see its deadline: CI saw `sleep 100 & wait -n` end
    # 124 with timed_out False at 0.9 s of a 1 s timeout
    b = sh.budget
    d = b.deadline
    if sh.__dict__.pop("_waited_timeout", False) and d is not None and not b._cancelled and (
            time.monotonic() >= d + WATCH_GRACE - WATCH_EARLY_MAX):
        b.cancel("timeout")
    b.check()
    return st_


def _signal_death(sh: Interpreter, job: Any) -> str | None:
    """bash's report of a background job a signal ended (not INT, TERM or PIPE, nor one the
    shell traps), `bash: line 2:  4242 Killed                  sleep 10`; None for any
    other end, or one already reported (bash reports each once, then forgets the job)."""
    st = job.status
    if not st or st <= 128 or getattr(sh, "in_cmdsub", False):
        return None
    nat = getattr(job, "native", None)
    if not (nat is not None and getattr(nat, "signaled", False) or job.killed or job.signaled):
        return None
    table = sh.jobs
    seen = getattr(table, "notified", None)
    if seen is None:
        seen = set()
        if table is not None:
            table.notified = seen  # type: ignore[attr-defined]
    if job in seen:
        return None
    import signal as _signal
    sig = st - 128
    try:
        sname = _signal.Signals(sig).name[3:]
        text = _signal.strsignal(sig) or f"Unknown signal {sig}"
    except ValueError:
        sname, text = "", f"Unknown signal {sig}"
    if sig in (_signal.SIGINT, _signal.SIGTERM, _signal.SIGPIPE) or sname in sh.state.traps:
        return None
    seen.add(job)
    if job.listing:
        return f"{sh.err_prefix()}{job.listing}"
    return f"{sh.err_prefix()}{job.pid:>5} {text:<24}{job.cmd_text}\n"


def notify_job_deaths(sh: Interpreter) -> None:
    """After a foreground command: the background jobs a signal has ended since are reported
    (as bash -c does once it has reaped them) and leave the job table; `wait` still knows
    their status. Not in $( ), a pipeline stage or a background job's own shell."""
    jobs = sh.jobs
    if jobs is None or sh.in_cmdsub or sh.forked_simple or getattr(sh, "_bg_job", None) is not None:
        return
    for j in sorted(jobs.jobs.values(), key=lambda j: j.num):
        if j.done.is_set():
            line = _signal_death(sh, j)
            if line is not None:
                sh.write_err(line.encode("utf-8", "surrogateescape"))
                jobs.remove(j)


def _wait_note(sh: Interpreter, pvar: str | None, job: Any) -> None:
    if getattr(job, "timed_out", False):
        sh.__dict__["_waited_timeout"] = True  # (see b_wait)
    line = _signal_death(sh, job)
    if line is not None:
        sh.write_err(line.encode("utf-8", "surrogateescape"))
    if pvar is not None and getattr(job, "pid", None) is not None:
        try:
            sh.set_var(pvar, str(job.pid))
        except VarError as e:
            sh.error(e.message)


def _host_signals(sh: Interpreter) -> None:
    take = getattr(sh.host, "take_signals", None)
    if take is not None and getattr(sh.host, "signal_fd", None) is not None:
        take(sh)


def _wait_signaled(sh: Interpreter) -> int:
    """A signal sent to the shell while `wait` waits: a trapped one ends the wait with
    128+n (its trap runs right after), an untrapped fatal one ends the shell; 0 otherwise.
    (First takes what programs sent the shell meanwhile: _host_signals.)"""
    _host_signals(sh)
    if sh.top is not sh or not sh.sig_queue:
        return 0
    for sig in list(sh.sig_queue):
        trap = sh.state.traps.get(sig)
        if trap:
            return 128 + SIGNALS.get(sig, 15)
    sh.take_signals()  # (drops ignored ones, raises for a fatal one; a trap "" just goes)
    return 0


def _procsub_status(sh: Interpreter, a: str) -> int | None:
    """The status of the last process substitution when ``a`` is its pid (`cat <(exit 3);
    wait $!`: bash 5.1), once it has ended; None for any other operand."""
    ps = sh.__dict__.get("last_procsub")
    if ps is None or not a.isdigit() or int(a) != ps[0]:
        return None
    while ps[1].is_alive():
        ps[1].join(0.02)
        sh.budget.check()
    return ps[2][0]


def _wait(sh: Interpreter, args: list[str], any_: bool, pvar: str | None) -> int:
    jobs = sh.jobs
    if jobs is None:
        if args:
            status = 0
            for a in args:
                if (pst := _procsub_status(sh, a)) is not None:
                    status = pst
                    continue
                status = 127
                sh.error(f"wait: pid {a} is not a child of this shell" if a.isdigit() else f"wait: {a}: no such job")
            return status
        return 0 if not any_ else 127
    budget = sh.budget
    from .jobs import job_view, own_jobs
    if any_:
        pending = [j for j in own_jobs(sh, list(jobs.jobs.values())) if not j.reported]
        if args:
            # `wait -n ID...`: the first of those jobs to end
            picked = []
            for a in args:
                j = jobs.find(a, job_view(sh)) if a.startswith("%") else jobs.by_pid.get(int(a))
                if j is not None and j in pending and j not in picked:
                    picked.append(j)
            pending = picked
        if not pending:
            return 127
        while True:
            for j in pending:
                if j.done.is_set():
                    j.reported = True
                    jobs.remove(j)
                    _wait_note(sh, pvar, j)
                    return j.status or 0
            budget.check()
            if st := _wait_signaled(sh):
                return st
            pending[0].done.wait(budget.step(0.01))
    if not args:
        for j in own_jobs(sh, list(jobs.jobs.values())):
            while not j.done.wait(budget.step(0.02)):
                budget.check()
                if st := _wait_signaled(sh):
                    return st
            jobs.remove(j)
            _wait_note(sh, None, j)
        # (a signal the last job sent just before it ended arrived while `wait` waited)
        return _wait_signaled(sh)
    status = 0
    done: list[Any] = []  # (reaped once every operand was waited for: `wait %1 %1` is 0)
    for a in args:
        job = jobs.find(a, job_view(sh))
        if job is None and (pst := _procsub_status(sh, a)) is not None:
            status = pst
            continue
        if job is None:
            if a.isdigit():
                sh.error(f"wait: pid {a} is not a child of this shell")
            else:
                sh.error(f"wait: {a}: no such job")
            status = 127
            continue
        while not job.done.wait(budget.step(0.02)):
            budget.check()
            if st := _wait_signaled(sh):
                return st
        if st := _wait_signaled(sh):
            return st
        status = job.status or 0
        if job not in done:
            done.append(job)
            _wait_note(sh, pvar, job)
        elif pvar is not None:
            sh.set_var(pvar, str(job.pid))
    for job in done:
        jobs.remove(job)
    return status


@builtin("jobs")
def b_jobs(sh: Interpreter, argv: list[str]) -> int:
    jobs = sh.jobs
    opts = [a for a in argv[1:] if a.startswith("-") and len(a) > 1]
    specs = [a for a in argv[1:] if not (a.startswith("-") and len(a) > 1)]
    only_pids = "-p" in opts
    long = "-l" in opts
    from .jobs import job_view
    # (a subshell's own jobs only, numbered among themselves: see jobs.job_view)
    view = job_view(sh, listing=True)
    items = jobs.visible(view) if jobs is not None else []
    cur = items[-1].vnum if items else 0
    prev = items[-2].vnum if len(items) > 1 else 0
    status = 0
    if specs:
        # jobspec operands list just those jobs, in order; an unknown one is an error
        wanted: list[Any] = []
        for a in specs:
            j = jobs.find(a, view) if jobs is not None else None
            if j is None:
                status = 1
            wanted.append(j if j is not None else a)
        items = wanted
    elif jobs is None:
        return 0
    for j in items:
        if type(j) is str:
            sh.error(f"jobs: {j}: no such job")
            continue
        if j.done.is_set():
            # bash -c (no job control) has already reaped finished jobs: not listed
            jobs.remove(j)
            continue
        if only_pids:
            _out(sh, f"{j.pid}\n")
            continue
        mark = "+" if j.vnum == cur else ("-" if j.vnum == prev else " ")
        if j.done.is_set():
            state = "Done" if not j.status else f"Exit {j.status}"
            if j.killed:
                state = "Terminated"
        else:
            state = "Running"
        pid = f"{j.pid:>5} " if long else " "  # (bash: "[1]+ %5d Running", "[1]+  Running")
        _out(sh, f"[{j.vnum}]{mark} {pid}{state:<24}{j.cmd_text}{' &' if state == 'Running' else ''}\n")
        if j.done.is_set():
            jobs.remove(j)
    return status


@builtin("disown")
def b_disown(sh: Interpreter, argv: list[str]) -> int:
    r = _getopt(sh, "disown", argv[1:], "ahr", "disown [-h] [-ar] [jobspec ... | pid ...]")
    if type(r) is int:
        return r
    flags = {f for f, _ in r[0]}  # type: ignore[index]
    args = r[1]  # type: ignore[index]
    jobs = sh.jobs
    from .jobs import job_view
    if jobs is None:
        for a in args:
            sh.error(f"disown: {a}: no such job")
        if not args and not flags & {"a", "r"}:
            sh.error("disown: current: no such job")
            return 1
        return 1 if args else 0
    if args:
        picked = []
        status = 0
        for a in args:
            j = jobs.find(a, job_view(sh))
            if j is None:
                sh.error(f"disown: {a}: no such job")
                status = 1
            else:
                picked.append(j)
    else:
        status = 0
        allj = jobs.visible(job_view(sh))
        if "a" in flags or "r" in flags:
            picked = [j for j in allj if "r" not in flags or not j.done.is_set()]
        else:
            picked = allj[-1:]
            if not picked:
                sh.error("disown: current: no such job")
                return 1
    if "h" in flags:
        return status  # -h: kept in the table, only spared SIGHUP (none is sent here)
    for j in picked:
        jobs.remove(j)
    return status


@builtin("fg", "bg")
def b_fg(sh: Interpreter, argv: list[str]) -> int:
    sh.error(f"{argv[0]}: no job control")
    return 1


@builtin("suspend")
def b_suspend(sh: Interpreter, argv: list[str]) -> int:
    sh.error("suspend: no job control")
    return 1


# ---------------------------------------------------------------------------- misc
def _getopts_name_check(sh: Interpreter, name: str) -> int:
    if _NAME_RE.match(name):
        return 0
    sh.error(f"getopts: `{name}': not a valid identifier")
    return 1


@builtin("getopts")
def b_getopts(sh: Interpreter, argv: list[str]) -> int:
    bad: list[bool] = []
    st = _getopts(sh, argv, bad)
    return 2 if bad else st  # bash: the name could not be assigned (a readonly variable)


def _end_of_options(sh: Interpreter, set_name: Callable[[str], None]) -> None:
    """getopts at the end of the options: name is ``?`` and OPTARG unset, as bash's (a
    readonly OPTARG silently stays)."""
    v = sh.state.find("OPTARG")
    if v is not None and not v.attrs & READONLY:
        try:
            sh.unset_var("OPTARG")
        except Exception:  # noqa: BLE001
            pass
    set_name("?")


def _getopts(sh: Interpreter, argv: list[str], bad: list[bool]) -> int:
    def bind(var: str, v: str, name_var: bool = False) -> None:
        try:
            sh.set_var(var, v)
        except VarError as e:
            sh.error(e.message)
            if name_var:
                bad.append(True)

    r = _getopt(sh, "getopts", argv[1:], "", "getopts optstring name [arg ...]")
    if type(r) is int:
        return r
    argv = argv[:1] + r[1]  # type: ignore[index]
    if len(argv) < 3:
        sh.write_err(b"getopts: usage: getopts optstring name [arg ...]\n")
        return 2
    optstring, name = argv[1], argv[2]
    args = argv[3:] if len(argv) > 3 else list(sh.state.positional)
    silent = optstring.startswith(":")
    opterr = sh.get_scalar("OPTERR")
    # bash (sv_opterr): a non-empty OPTERR whose atoi() is 0 silences the messages
    m = re.match(r"[ \t\n]*[-+]?[0-9]+", opterr) if opterr else None
    quiet = bool(opterr) and (m is None or int(m.group()) == 0)
    if silent:
        optstring = optstring[1:]
    try:
        optind = int(sh.get_scalar("OPTIND") or "1")
    except ValueError:
        optind = 1
    last_ind, pos = sh.getopts_state
    if optind != last_ind or optind <= 1 and pos == 0:
        pos = 0
    if optind < 1:
        optind = 1

    def finish(ind: int, p: int) -> None:
        sh.set_var("OPTIND", str(ind))
        sh.getopts_state = (ind, p)

    valid = bool(_NAME_RE.match(name))
    if not valid:
        set_name = lambda v: None  # noqa: E731 - bash still moves OPTIND/OPTARG
    else:
        set_name = lambda v: bind(name, v, True)  # noqa: E731
    if optind > len(args):
        _end_of_options(sh, set_name)
        finish(len(args) + 1, 0)
        return 1
    arg = args[optind - 1]
    if pos >= len(arg):
        pos = 0  # (the arguments changed under a position inside an old one: start this one)
    if pos == 0:
        if arg == "--":
            _end_of_options(sh, set_name)
            finish(optind + 1, 0)
            return 1
        if not arg.startswith("-") or arg == "-":
            _end_of_options(sh, set_name)
            finish(optind, 0)
            return 1
        pos = 1
    c = arg[pos]
    pos += 1
    idx = optstring.find(c) if c != ":" else -1
    if idx < 0:
        if silent:
            bind("OPTARG", c)
        else:
            if not quiet:
                sh.write_err(f"{sh.script_name}: illegal option -- {c}\n".encode("utf-8", "surrogateescape"))
            sh.unset_var("OPTARG")
        set_name("?")
        if pos >= len(arg):
            finish(optind + 1, 0)
        else:
            finish(optind, pos)
        return 0
    if idx + 1 < len(optstring) and optstring[idx + 1] == ":":
        if pos < len(arg):
            bind("OPTARG", arg[pos:])
            finish(optind + 1, 0)
        elif optind < len(args):
            bind("OPTARG", args[optind])
            finish(optind + 2, 0)
        else:
            if silent:
                set_name(":")
                bind("OPTARG", c)
            else:
                if not quiet:
                    sh.write_err(f"{sh.script_name}: option requires an argument -- {c}\n".encode("utf-8", "surrogateescape"))
                set_name("?")
                sh.unset_var("OPTARG")
            finish(optind + 1, 0)
            return 0
        set_name(c)
        return _getopts_name_check(sh, name)
    sh.unset_var("OPTARG")
    set_name(c)
    if pos >= len(arg):
        finish(optind + 1, 0)
    else:
        finish(optind, pos)
    return _getopts_name_check(sh, name)


@builtin("let")
def b_let(sh: Interpreter, argv: list[str]) -> int:
    if argv[1:2] == ["--"]:
        argv = argv[:1] + argv[2:]
    if len(argv) < 2:
        sh.error("let: expression expected")
        return 1
    v = 0
    sh.in_let = True
    try:
        for a in argv[1:]:
            try:
                v = sh.arith(a)
            except ExpansionError as e:
                if e.status == 127 and e.message.endswith(": unbound variable"):
                    from .interpreter import expansion_exit
                    sh.error(e.message)  # set -u: fatal, as in bash
                    raise expansion_exit(e) from None
                # a readonly assignment and a subscript error are reported without the
                # builtin's name, as in bash; the latter ends the shell
                sub = getattr(e, "subscript", False)
                sh.error(e.message if sub or e.message.endswith(": readonly variable") else f"let: {e.message}")
                if sub:
                    from .interpreter import expansion_exit
                    raise expansion_exit(e) from None
                return 1
    finally:
        sh.in_let = False
    return 0 if v != 0 else 1


def _opts(sh: Interpreter, name: str, args: list[str], letters: str, usage: str
          ) -> tuple[set[str], list[str]] | int:
    """bash's internal_getopt for flag-only builtins: leading ``-xy`` words (``--`` ends
    them, a lone ``-`` is an operand); an unknown letter is a usage error (status 2)."""
    flags: set[str] = set()
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            i += 1
            break
        if len(a) < 2 or a[0] != "-":
            break
        for c in a[1:]:
            if c not in letters:
                return _bad_opt(sh, name, "-" + c, usage)
            flags.add(c)
        i += 1
    return flags, args[i:]


def _getopt(sh: Interpreter, name: str, args: list[str], spec: str, usage: str
            ) -> tuple[list[tuple[str, str | None]], list[str]] | int:
    """bash's internal_getopt: ``spec`` is getopt letters (``a:`` takes an argument, attached
    or the next word); ``--`` ends the options, ``-`` or a non-dash word is the first operand.
    An unknown letter or a missing argument prints bash's message and the usage line
    (status 2).  Returns ``([(letter, arg-or-None)], operands)``."""
    out: list[tuple[str, str | None]] = []
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            i += 1
            break
        if len(a) < 2 or a[0] != "-":
            break
        i += 1
        j = 1
        while j < len(a):
            c = a[j]
            k = spec.find(c) if c != ":" else -1
            if k < 0:
                return _bad_opt(sh, name, "-" + c, usage)
            if spec[k + 1:k + 2] == ":":
                if j + 1 < len(a):
                    out.append((c, a[j + 1:]))
                elif i < len(args):
                    out.append((c, args[i]))
                    i += 1
                else:
                    sh.error(f"{name}: -{c}: option requires an argument")
                    sh.write_err(f"{name}: usage: {usage}\n".encode())
                    return 2
                break
            out.append((c, None))
            j += 1
    return out, args[i:]


_ALIAS_BAD = frozenset(" \t\n()<>;&|\"'\\`$/")


def _alias_line(name: str, value: str) -> str:
    from .builtins_compat import quote_single
    return f"alias {'-- ' if name.startswith('-') else ''}{name}={quote_single(value)}\n"


@builtin("alias")
def b_alias(sh: Interpreter, argv: list[str]) -> int:
    r = _opts(sh, "alias", argv[1:], "p", "alias [-p] [name[=value] ... ]")
    if type(r) is int:
        return r
    flags, args = r  # type: ignore[misc]
    aliases = sh.state.aliases
    if not args or "p" in flags:
        _out(sh, "".join(_alias_line(k, aliases[k]) for k in sorted(aliases)))
        if not args:
            return 0
    status = 0
    for a in args:
        k, eq, v = a.partition("=")
        if eq and k:
            if any(c in _ALIAS_BAD for c in k):
                sh.error(f"alias: `{k}': invalid alias name")
                status = 1
            else:
                sh.grow(VAR_COST + len(k) + len(v))   # (max_shell_bytes: contract13)
                aliases[k] = v
        elif a in aliases:
            _out(sh, _alias_line(a, aliases[a]))
        else:
            sh.error(f"alias: {a}: not found")
            status = 1
    return status


@builtin("unalias")
def b_unalias(sh: Interpreter, argv: list[str]) -> int:
    usage = "unalias [-a] name [name ...]"
    r = _opts(sh, "unalias", argv[1:], "a", usage)
    if type(r) is int:
        return r
    flags, args = r  # type: ignore[misc]
    if "a" in flags:
        sh.state.aliases.clear()
        return 0
    if not args:
        sh.write_err(f"unalias: usage: {usage}\n".encode())
        return 2
    status = 0
    for a in args:
        if a in sh.state.aliases:
            del sh.state.aliases[a]
        else:
            sh.error(f"unalias: {a}: not found")
            status = 1
    return status


@builtin("umask")
def b_umask(sh: Interpreter, argv: list[str]) -> int:
    r = _getopt(sh, "umask", argv[1:], "pS", "umask [-p] [-S] [mode]")
    if type(r) is int:
        return r
    opts, args = r  # type: ignore[misc]
    flags = {c for c, _ in opts}
    if args:
        m = _umask_value(sh, args[0], sh.state.umask)
        if m is None:
            return 1
        sh.state.umask = m
        if "S" not in flags:
            return 0  # (bash prints the mask after setting it only with -S)
    m = sh.state.umask
    if "S" in flags:
        def perms(shift: int) -> str:
            bits = (~m >> shift) & 7
            return ("r" if bits & 4 else "") + ("w" if bits & 2 else "") + ("x" if bits & 1 else "")
        text = f"u={perms(6)},g={perms(3)},o={perms(0)}"
        _out(sh, ("umask -S " if "p" in flags else "") + text + "\n")
    else:
        _out(sh, ("umask " if "p" in flags else "") + f"{m:04o}\n")
    return 0


_WHO = {"u": 0o700, "g": 0o070, "o": 0o007, "a": 0o777}
_PERM = {"r": 0o444, "w": 0o222, "x": 0o111}


def _umask_value(sh: Interpreter, spec: str, cur: int) -> int | None:
    """The mask ``umask spec`` sets: an octal number, or a symbolic mode applied to the
    permissions the current mask leaves (bash's symbolic_umask: ``u=rwx,g=rx,o=``, ``g+w``)."""
    if spec[:1].isdigit():
        if any(c not in "01234567" for c in spec) or int(spec, 8) > 0o7777:
            sh.error(f"umask: {spec}: octal number out of range")
            return None
        return int(spec, 8) & 0o777
    perms = ~cur & 0o777
    for clause in spec.split(","):
        i, who = 0, 0
        while i < len(clause) and clause[i] in _WHO:
            who |= _WHO[clause[i]]
            i += 1
        if not who:
            who = 0o777
        op = clause[i] if i < len(clause) else ""
        if op not in ("+", "-", "="):
            sh.error(f"umask: `{op or chr(0)}': invalid symbolic mode operator")
            return None
        i += 1
        bits = 0
        for c in clause[i:]:
            if c not in _PERM:
                sh.error(f"umask: `{c}': invalid symbolic mode character")
                return None
            bits |= _PERM[c]
        bits &= who
        if op == "+":
            perms |= bits
        elif op == "-":
            perms &= ~bits
        else:
            perms = (perms & ~who) | bits
    return ~perms & 0o777


@builtin("caller")
def b_caller(sh: Interpreter, argv: list[str]) -> int:
    # bash reads FUNCNAME / BASH_LINENO / BASH_SOURCE (with their `source` frames, and a
    # "main" bottom frame only when running a script file)
    stack = sh.call_frames()
    if sh.script_name != "bash":
        stack.append(("main", 0, sh.script_name))
    if not stack:
        return 1
    r = _getopt(sh, "caller", argv[1:], "", "caller [expr]")
    if type(r) is int:
        return r
    args = r[1]  # type: ignore[index]
    if not args:
        src = stack[1][2] if len(stack) > 1 else "NULL"
        _out(sh, f"{stack[0][1]} {src}\n")
        return 0
    arg = args[0]
    try:
        n = int(arg.strip())
    except ValueError:
        sh.error(f"caller: {arg}: invalid number")
        sh.write_err(b"caller: usage: caller [expr]\n")
        return 2
    if n < 0 or n + 1 >= len(stack):
        return 1
    _out(sh, f"{stack[n][1]} {stack[n + 1][0]} {stack[n + 1][2]}\n")
    return 0


@builtin("enable")
def b_enable(sh: Interpreter, argv: list[str]) -> int:
    r = _getopt(sh, "enable", argv[1:], "adnpsf:", "enable [-a] [-dnps] [-f filename] [name ...]")
    if type(r) is int:
        return r
    flags = {f for f, _ in r[0]}  # type: ignore[index]
    args = r[1]  # type: ignore[index]
    disable = "n" in flags
    dis = set(sh.state.disabled)
    if not args:
        # the listing: -a every builtin, -n the disabled ones, else the enabled ones;
        # -s only POSIX's special builtins
        from .interpreter import SPECIAL_BUILTINS
        for k in sorted(BUILTINS):
            if "s" in flags and k not in SPECIAL_BUILTINS:
                continue
            if "a" not in flags and (k in dis) != disable:
                continue
            _out(sh, f"enable {'-n ' if k in dis else ''}{k}\n")
        return 0
    status = 0
    for a in args:
        if a not in BUILTINS:
            sh.error(f"enable: {a}: not a shell builtin")
            status = 1
        elif disable:
            dis.add(a)
        else:
            dis.discard(a)
    sh.state.disabled = frozenset(dis)
    return status


@builtin("help")
def b_help(sh: Interpreter, argv: list[str]) -> int:
    r = _getopt(sh, "help", argv[1:], "dms", "help [-dms] [pattern ...]")
    if type(r) is int:
        return r
    from fnmatch import fnmatchcase

    from .helptopics import HELP_TOPICS
    flags = {f for f, _ in r[0]}  # type: ignore[index]
    pats = r[1]  # type: ignore[index]
    if not pats:
        _out(sh, _help_listing(sh, HELP_TOPICS))
        return 0
    found = False
    if not flags & {"d", "s"} and any(_help_hits(p, HELP_TOPICS) for p in pats):
        # the long texts are bash's own (GPL) and not kept here: where a real bash can run
        # in the sandbox it prints them; otherwise the synopsis and one-line description
        st = _native_help(sh, argv[1:])
        if st is not None:
            return st
    for pat in pats:
        glob = "*" in pat or "?" in pat or re.search(r"\[.*\]", pat) is not None
        hits = [t for t in HELP_TOPICS if t[0] == pat] or \
            [t for t in HELP_TOPICS if (fnmatchcase(t[0], pat) if glob else t[0].startswith(pat))]
        if not hits:
            continue
        found = True
        if glob:
            _out(sh, f"Shell commands matching keyword `{pat}'\n\n")
        for name, syn, desc in hits:
            if "d" in flags:
                _out(sh, f"{name} - {desc}\n")
            elif "s" in flags:
                _out(sh, f"{name}: {syn}\n")
            else:
                # (the long text is not kept: the synopsis and the one-line description)
                _out(sh, f"{name}: {syn}\n    {desc}\n")
    if not found:  # bash names the last pattern
        pat = pats[-1]
        sh.error(f"help: no help topics match `{pat}'.  Try `help help' or `man -k {pat}' or `info {pat}'.")
        return 1
    return 0


def _help_hits(pat: str, topics: Any) -> bool:
    from fnmatch import fnmatchcase
    glob = "*" in pat or "?" in pat or re.search(r"\[.*\]", pat) is not None
    return any(t[0] == pat or (fnmatchcase(t[0], pat) if glob else t[0].startswith(pat)) for t in topics)


def _native_help(sh: Interpreter, args: list[str]) -> int | None:
    """`help ARGS` printed by /usr/bin/bash run as a program of the sandbox (namespace level),
    or None where no native program can run or there is no bash to run."""
    fn = getattr(sh.host, "native_bash", None)
    if fn is None:
        return None
    # (--posix: a startup file named by BASH_ENV is not read)
    return fn(sh, ["bash", "--posix", "-c", 'help "$@"', "bash", *args])


def _help_listing(sh: Interpreter, topics: Any) -> str:
    """`help` with no pattern: bash's header and every synopsis in two columns of half the
    terminal's width (COLUMNS, else 80), cut with a `>`, a `*` marking a disabled builtin
    (bash's show_builtin_command_help and dispcolumn)."""
    ver = sh.get_scalar("BASH_VERSION") or "5.2.15(1)-release"
    mach = sh.get_scalar("MACHTYPE") or "x86_64-pc-linux-gnu"
    cols = sh.get_scalar("COLUMNS") or ""
    width = (int(cols) if cols.isdigit() and 0 < int(cols) < 10000 else 80) // 2
    width = min(width, 128)  # (bash's buffer)
    if width <= 3:
        width = 40
    dis = set(sh.state.disabled)
    n = len(topics)
    height = (n + 1) // 2
    out = [f"GNU bash, version {ver} ({mach})\n"
           "These shell commands are defined internally.  Type `help' to see this list.\n"
           "Type `help name' to find out more about the function `name'.\n"
           "Use `info bash' to find out more about the shell in general.\n"
           "Use `man -k' or `info' to find out more about commands not in this list.\n\n"
           "A star (*) next to a name means that the command is disabled.\n\n"]

    def cell(i: int, second: bool) -> str:
        # (wdispcolumn: at most width-2 characters; one that fills the column to within two
        # places is cut, its last kept character (two in the second column) becoming `>`)
        name, syn = topics[i][0], topics[i][1]
        mark = "*" if name in dis else " "
        shown = min(len(syn) if len(syn) < width else width - 2, width - 2)
        if shown + 1 >= width - 2:
            return mark + syn[:shown - (2 if second else 1)] + ">"
        return mark + syn

    for i in range(height):
        left = cell(i, False)
        if 2 * i >= n or i + height >= n:
            out.append(left + "\n")
            continue
        out.append(left.ljust(width) + cell(i + height, True) + "\n")
    return "".join(out)


@builtin("times")
def b_times(sh: Interpreter, argv: list[str]) -> int:
    # the shell's line is this process's CPU (the interpreter's), the second its reaped
    # children's (native programs')
    t = os.times()

    def f(v: float) -> str:
        m = int(v // 60)
        return f"{m}m{v - 60 * m:.3f}s"
    _out(sh, f"{f(t.user)} {f(t.system)}\n{f(t.children_user)} {f(t.children_system)}\n")
    return 0


@builtin("history")
def b_history(sh: Interpreter, argv: list[str]) -> int:
    if len(argv) > 1 and argv[1] == "-c":
        sh.state.history.clear()
        return 0
    if not sh.state.options["history"]:
        return 0  # bash -c keeps no history
    for i, h in enumerate(sh.state.history[-HISTORY_MAX:], 1):
        _out(sh, f"{i:5d}  {h}\n")
    return 0


_COMP_USAGE = ("compgen [-abcdefgjksuv] [-o option] [-A action] [-G globpat] [-W wordlist] [-F function] "
               "[-C command] [-X filterpat] [-P prefix] [-S suffix] [word]")
_COMPLETE_USAGE = ("complete [-abcdefgjksuv] [-pr] [-DEI] [-o option] [-A action] [-G globpat] [-W wordlist] "
                   "[-F function] [-C command] [-X filterpat] [-P prefix] [-S suffix] [name ...]")
_COMP_LETTERS = {"a": "alias", "b": "builtin", "c": "command", "d": "directory", "e": "export",
                 "f": "file", "g": "group", "j": "job", "k": "keyword", "s": "service", "u": "user",
                 "v": "variable"}
# bash's action order (gen_action_completions), and how `complete -p` spells each
_COMP_ACTIONS = ("alias", "arrayvar", "binding", "builtin", "command", "directory", "disabled",
                 "enabled", "export", "file", "function", "group", "helptopic", "hostname", "job",
                 "keyword", "running", "service", "setopt", "shopt", "signal", "stopped", "user",
                 "variable")
_COMP_OPTIONS = ("bashdefault", "default", "dirnames", "filenames", "noquote", "nosort", "nospace",
                 "plusdirs")
_COMP_KEYWORDS = "if then else elif fi case esac for select while until do done in function time { } ! [[ ]] coproc".split()


def _comp_files(sh: Interpreter, word: str, dirs_only: bool) -> list[str]:
    """readline's filename completion of ``word``: entries of its directory starting with its
    last component (dot files included), directories only for -d."""
    d, _, base = word.rpartition("/")
    lookup = d if "/" in word else "."
    if "/" in word and not d:
        lookup = "/"
    path = normalize(lookup, sh.state.cwd)
    try:
        names = sorted(sh.fs.listdir(path))
    except OSError:
        return []
    out = []
    for n in names:
        if not n.startswith(base) or (not base.startswith(".") and n in (".", "..")):
            continue
        full = normalize(n, path)
        if dirs_only:
            try:
                if not sh.fs.stat(full).is_dir:
                    continue
            except OSError:
                continue
        out.append((d + "/" if "/" in word else "") + n)
    return out


def _comp_generate(sh: Interpreter, spec: dict, word: str) -> list[str]:
    acts = spec["actions"]
    out: list[str] = []
    st = sh.state

    def pre(names: Any) -> list[str]:
        return [n for n in names if n.startswith(word)]

    for act in _COMP_ACTIONS:
        if act not in acts:
            continue
        if act == "alias":
            out += pre(sorted(st.aliases))
        elif act == "arrayvar":
            out += pre(n for n in sorted(st.all_names()) if (v := st.find(n)) is not None and v.attrs & (ARRAY | ASSOC))
        elif act in ("builtin", "enabled"):
            out += pre(sorted(BUILTINS))
        elif act == "command":
            out += pre(sorted(st.aliases)) + pre(sorted(BUILTINS)) + pre(sorted(st.functions)) + pre(_COMP_KEYWORDS)
            seen = set()
            for d in (sh.get_scalar("PATH") or "").split(":"):
                try:
                    names = sorted(sh.fs.listdir(normalize(d or ".", st.cwd)))
                except OSError:
                    continue
                for n in names:
                    if n.startswith(word) and n not in seen:
                        seen.add(n)
                        out.append(n)
        elif act == "directory":
            out += _comp_files(sh, word, True)
        elif act == "export":
            out += pre(sorted(st.environ()))
        elif act == "file":
            out += _comp_files(sh, word, False)
        elif act == "function":
            out += pre(sorted(st.functions))
        elif act == "group":
            out += pre([getattr(sh.info, "group", "user")])
        elif act == "user":
            out += pre([getattr(sh.info, "user", "user")])
        elif act == "keyword":
            out += pre(_COMP_KEYWORDS)
        elif act == "setopt":
            out += pre(sorted(st.options))
        elif act == "shopt":
            out += pre(st.shopt)  # in bash's table order, as shopt lists them
        elif act == "signal":
            out += pre(["EXIT"] + ["SIG" + n for n, _ in sorted(SIGNALS.items(), key=lambda kv: kv[1])])
        elif act == "variable":
            out += pre(sh.set_names())
    if spec.get("G") is not None:
        out += sh.glob(spec["G"]) or []
    if "helptopic" in acts:
        from .helptopics import HELP_TOPICS
        out += pre(t[0] for t in HELP_TOPICS)
    if spec.get("W") is not None:
        from .parser import parse_word
        try:
            # (bash's gen_wordlist_matches: split at IFS, honouring quotes and backslashes,
            # then each word expanded without further splitting)
            # (each piece expands as a word does, brace expansion and splitting included, but
            # no pathname expansion)
            # (an expansion error there is reported and ends the command line, as bash's
            # expansion of the list does: `${`, $((1/0)), ${x:?})
            from .interpreter import AbortLine, expansion_exit
            words = []
            for w in _comp_split(spec["W"], sh.get_ifs()):
                try:
                    words.append(parse_word(w))
                except ParseError:
                    if "${" not in w:
                        raise
                    sh.error(f"{w}: bad substitution")
                    raise AbortLine(1) from None
            opts = st.options
            saved = opts["noglob"]
            opts["noglob"] = True
            try:
                out += pre(sh.expand_words(words))
            except ExpansionError as e:
                sh.error(e.message)
                raise expansion_exit(e) from None
            finally:
                opts["noglob"] = saved
        except ParseError:
            pass
    if spec.get("F") is not None:
        sh.error("compgen: warning: -F option may not work as you expect")
        fn = st.functions.get(spec["F"])
        if fn is None:
            sh.error(f"completion: function `{spec['F']}' not found")
        else:
            out += _comp_function(sh, spec["F"], fn, word)
    if spec.get("C") is not None:
        sh.error("compgen: warning: -C option may not work as you expect")
        out += _comp_command(sh, spec["C"], word)
    if spec.get("X") is not None:
        from . import patterns as _pat
        pat = spec["X"]
        neg = pat.startswith("!")
        if neg:
            pat = pat[1:]
        ext = st.shopt["extglob"]
        out = [w for w in out if _pat.fnmatch(pat, w, extglob=ext) == neg]
    if not out and "dirnames" in spec["options"]:
        out += _comp_files(sh, word, True)  # (only when nothing else matched)
    elif not out and "default" in spec["options"]:
        out += _comp_files(sh, word, False)
    if "plusdirs" in spec["options"]:
        out += _comp_files(sh, word, True)
    pfx, sfx = spec.get("P") or "", spec.get("S") or ""
    return [pfx + w + sfx for w in out]


def _comp_split(text: str, ifs: str | None) -> list[str]:
    """compgen -W's list split as bash's split_at_delims: at IFS characters outside quotes
    and not after a backslash (runs of IFS whitespace are one delimiter; empty words go)."""
    delims = " \t\n" if ifs is None else ifs
    out: list[str] = []
    cur: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "\\" and i + 1 < n:
            cur.append(text[i:i + 2])
            i += 2
            continue
        if c in "'\"`":
            j = text.find(c, i + 1)
            j = n - 1 if j < 0 else j
            cur.append(text[i:j + 1])
            i = j + 1
            continue
        if c == "$" and i + 1 < n and text[i + 1] in "({":
            # (an expansion is one piece: its IFS characters do not split here)
            close = ")" if text[i + 1] == "(" else "}"
            depth, j = 0, i + 1
            while j < n:
                if text[j] == text[i + 1]:
                    depth += 1
                elif text[j] == close:
                    depth -= 1
                    if depth == 0:
                        break
                j += 1
            cur.append(text[i:j + 1])
            i = j + 1
            continue
        if c in delims:
            if cur:
                out.append("".join(cur))
                cur = []
            i += 1
            continue
        cur.append(c)
        i += 1
    if cur:
        out.append("".join(cur))
    return out


def _comp_function(sh: Interpreter, name: str, fn: Any, word: str) -> list[str]:
    """compgen -F: ``name`` called as bash calls it outside completion (arguments compgen,
    the word and an empty previous word; COMP_WORDS empty, COMP_CWORD -1, COMP_LINE empty,
    COMP_POINT 0); COMPREPLY's elements, unfiltered. The COMP_* variables go afterwards."""
    names = ("COMP_WORDS", "COMP_CWORD", "COMP_LINE", "COMP_POINT", "COMPREPLY")
    try:
        sh.set_array_values("COMP_WORDS", [])
        sh.set_var("COMP_CWORD", "-1")
        sh.set_var("COMP_LINE", "")
        sh.set_var("COMP_POINT", "0")
    except VarError:
        pass
    try:
        sh.call_function(name, fn, ["compgen", word, ""])
        v = sh.state.find("COMPREPLY")
        if v is None or v.value is None:
            return []
        if type(v.value) is dict:
            return [v.value[k] for k in sorted(v.value)] if not v.attrs & ASSOC else list(v.value.values())
        return [v.value]
    finally:
        _unset_quietly(sh, names)


def _unset_quietly(sh: Interpreter, names: tuple[str, ...]) -> None:
    """The COMP_* variables a completion generator set, gone (whatever unset thinks of them)."""
    for nm in names:
        try:
            sh.unset_var(nm)
        except Exception:  # noqa: BLE001
            pass


def _comp_command(sh: Interpreter, command: str, word: str) -> list[str]:
    """compgen -C: bash's gen_command_matches: ``command 'compgen' 'word' ''`` run as a command
    substitution (COMP_* set as for -F), its output split at newlines (a backslash-newline
    joins), unfiltered."""
    from .parser import parse
    from .quoting import _single_quote
    # (exported, and no COMP_WORDS/COMP_CWORD: the command is not a function)
    names = ("COMP_LINE", "COMP_POINT", "COMP_TYPE", "COMP_KEY")
    for nm, val in zip(names, ("", "0", "0", "0")):
        try:
            sh.set_var(nm, val)
            v = sh.state.find(nm)
            if v is not None:
                v.attrs |= EXPORT
        except VarError:
            pass
    try:
        text = f"{command} {_single_quote('compgen')} {_single_quote(word)} ''"
        try:
            out = sh.command_subst(parse(text))
        except ParseError:
            return []
        return [w for w in re.split(r"(?<!\\)\n+", out) if w]
    finally:
        _unset_quietly(sh, names)


def _comp_parse(sh: Interpreter, name: str, args: list[str], letters: str) -> tuple[dict, list[str]] | int:
    """Options shared by compgen and complete; returns (spec, operands) or an exit status."""
    spec: dict[str, Any] = {"actions": [], "options": [], "flags": []}
    usage = _COMP_USAGE if name == "compgen" else _COMPLETE_USAGE
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            i += 1
            break
        if not a.startswith("-") or a == "-":
            break
        j = 1
        i += 1
        while j < len(a):
            c = a[j]
            j += 1
            if c in _COMP_LETTERS:
                spec["actions"].append(_COMP_LETTERS[c])
                continue
            if c in letters:
                spec["flags"].append(c)
                continue
            if c in "oAGWFCXPS":
                val = a[j:] if j < len(a) else (args[i] if i < len(args) else None)
                if val is None:
                    sh.error(f"{name}: -{c}: option requires an argument")
                    sh.write_err(f"{name}: usage: {usage}\n".encode())
                    return 2
                if j >= len(a):
                    i += 1
                j = len(a)
                if c == "o":
                    if val not in _COMP_OPTIONS:
                        sh.error(f"{name}: {val}: invalid option name")
                        return 2
                    spec["options"].append(val)
                elif c == "A":
                    if val not in _COMP_ACTIONS:
                        sh.error(f"{name}: {val}: invalid action name")
                        return 2
                    spec["actions"].append(val)
                else:
                    spec[c] = val
                continue
            return _bad_opt(sh, name, "-" + c, usage)
    return spec, args[i:]


def _comp_line(spec: dict, target: str) -> str:
    parts = ["complete"]
    for o in _COMP_OPTIONS:
        if o in spec["options"]:
            parts.append(f"-o {o}")
    letters = {v: k for k, v in _COMP_LETTERS.items()}
    for act in ("alias", "builtin", "command", "directory", "export", "file", "group", "job",
                "keyword", "service", "user", "variable"):
        if act in spec["actions"]:
            parts.append("-" + letters[act])
    for act in ("arrayvar", "binding", "disabled", "enabled", "function", "helptopic", "hostname",
                "running", "setopt", "shopt", "signal", "stopped"):
        if act in spec["actions"]:
            parts.append(f"-A {act}")
    for c in "GWPSXC":
        if spec.get(c) is not None:
            parts.append(f"-{c} " + "'" + spec[c].replace("'", "'\\''") + "'")
    if spec.get("F") is not None:
        parts.append(f"-F {spec['F']}")
    parts.append(target)
    return " ".join(parts)


@builtin("compgen", "complete", "compopt")
def b_compgen(sh: Interpreter, argv: list[str]) -> int:
    name = argv[0]
    if name == "compopt":
        # outside a completion function there is nothing to change (bad option names first)
        a = argv[1:]
        for k, x in enumerate(a):
            if x in ("-o", "+o") and k + 1 < len(a) and a[k + 1] not in _COMP_OPTIONS:
                sh.error(f"compopt: {a[k + 1]}: invalid option name")
                return 2
        sh.error("compopt: not currently executing completion function")
        return 1
    if name == "compgen":
        r = _comp_parse(sh, name, argv[1:], "")
        if isinstance(r, int):
            return r
        spec, ops = r
        word = ops[0] if ops else ""
        matched = _comp_generate(sh, spec, word)
        for w in matched:
            _out(sh, w + "\n")
        return 0 if matched else 1
    r = _comp_parse(sh, name, argv[1:], "prDEI")
    if isinstance(r, int):
        return r
    spec, ops = r
    specs: dict[str, dict] = sh.state.__dict__.setdefault("compspecs", {})
    flags = spec["flags"]
    targets = list(ops) + [{"D": "-D", "E": "-E", "I": "-I"}[f] for f in flags if f in "DEI"]
    if "r" in flags:
        if not targets:
            specs.clear()
            return 0
        status = 0
        for t in targets:
            if specs.pop(t, None) is None:
                sh.error(f"complete: {t}: no completion specification")
                status = 1
        return status
    if "p" in flags or (not targets and len(argv) == 1):
        status = 0
        for t in targets or list(specs):
            if t in specs:
                _out(sh, _comp_line(specs[t], t) + "\n")
            else:
                sh.error(f"complete: {t}: no completion specification")
                status = 1
        return status
    if not targets:
        # (an action or option and no command name: bash prints just its usage line)
        sh.write_err(f"complete: usage: {_COMPLETE_USAGE}\n".encode())
        return 2
    for t in targets:
        specs[t] = spec
    return 0


# letter: (resource name, unit factor, description, unit), in the order bash 5.2 lists them on
# Linux; the third column of _ULIMIT_VIRTUAL is what a process with no real limits reports
_ULIMITS = {
    "R": ("RLIMIT_RTTIME", 1, "real-time non-blocking time", "microseconds"),
    "c": ("RLIMIT_CORE", 1024, "core file size", "blocks"),
    "d": ("RLIMIT_DATA", 1024, "data seg size", "kbytes"),
    "e": ("RLIMIT_NICE", 1, "scheduling priority", ""),
    "f": ("RLIMIT_FSIZE", 1024, "file size", "blocks"),
    "i": ("RLIMIT_SIGPENDING", 1, "pending signals", ""),
    "l": ("RLIMIT_MEMLOCK", 1024, "max locked memory", "kbytes"),
    "m": ("RLIMIT_RSS", 1024, "max memory size", "kbytes"),
    "n": ("RLIMIT_NOFILE", 1, "open files", ""),
    "p": ("", 512, "pipe size", "512 bytes"),
    "q": ("RLIMIT_MSGQUEUE", 1, "POSIX message queues", "bytes"),
    "r": ("RLIMIT_RTPRIO", 1, "real-time priority", ""),
    "s": ("RLIMIT_STACK", 1024, "stack size", "kbytes"),
    "t": ("RLIMIT_CPU", 1, "cpu time", "seconds"),
    "u": ("RLIMIT_NPROC", 1, "max user processes", ""),
    "v": ("RLIMIT_AS", 1024, "virtual memory", "kbytes"),
    "x": ("RLIMIT_LOCKS", 1, "file locks", ""),
}
_INF = -1  # resource.RLIM_INFINITY
_ULIMIT_VIRTUAL = {"c": 0, "e": 0, "i": 63371, "l": 8 << 20, "n": 1024, "q": 819200, "r": 0,
                   "s": 8 << 20, "u": 63371}
"""A virtual sandbox has no processes of its own: plausible limits (the rest unlimited)."""
_ULIMIT_USAGE = "ulimit [-SHabcdefiklmnpqrstuvxPRT] [limit]"


def ulimit_of(sh: Interpreter, c: str) -> tuple[int, int]:
    """(soft, hard) of limit ``c`` in raw units (bytes, seconds...), -1 for unlimited: what
    the shell set, else what its native children start with."""
    own = getattr(sh.state, "ulimits", None)
    if own and c in own:
        return own[c]
    name = _ULIMITS[c][0]
    native = getattr(sh.host, "native", None)
    if native is not None:
        import resource
        try:
            soft, hard = resource.getrlimit(getattr(resource, name))
        except (AttributeError, OSError, ValueError):
            pass
        else:
            # the launcher's per-program caps (Limits.max_process_memory: RLIMIT_DATA,
            # max_address_space: RLIMIT_AS) are set on each child, not on the shell
            cap = {"d": "max_data", "v": "max_memory"}.get(c)
            cap_v = getattr(native, cap, None) if cap else None
            if isinstance(cap_v, int):
                soft = cap_v if soft < 0 or soft > cap_v else soft
                hard = cap_v if hard < 0 or hard > cap_v else hard
            return soft, hard
    v = _ULIMIT_VIRTUAL.get(c, _INF)
    return v, v


def _ulimit_text(v: int, factor: int) -> str:
    return "unlimited" if v == _INF or v < 0 else str(v // factor)


@builtin("ulimit")
def b_ulimit(sh: Interpreter, argv: list[str]) -> int:
    """bash's ulimit: reports the limits native children get and sets them for every later one
    (``-S`` soft, ``-H`` hard, both by default); a hard limit is only ever lowered."""
    # bash: each limit option may be followed by its own value; several options print with
    # their descriptions
    cmds: list[list] = []
    soft = hard = show_all = False
    args = argv[1:]
    i = 0
    while i < len(args):
        a = args[i]
        if a.startswith("-") and len(a) > 1 and a != "--":
            for c in a[1:]:
                if c == "a":
                    show_all = True
                elif c == "S":
                    soft = True
                elif c == "H":
                    hard = True
                elif c in _ULIMITS:
                    cmds.append([c, None])
                else:
                    return _bad_opt(sh, "ulimit", "-" + c, _ULIMIT_USAGE)
            if cmds and i + 1 < len(args) and not args[i + 1].startswith("-"):
                cmds[-1][1] = args[i + 1]
                i += 1
        elif a != "--" and not cmds:
            cmds.append(["f", a])
        i += 1
    pick = 1 if hard and not soft else 0

    def show(c: str, desc: bool) -> None:
        _, factor, text, unit = _ULIMITS[c]
        v = 8 if c == "p" else ulimit_of(sh, c)[pick]
        val = _ulimit_text(v, 1 if c == "p" else factor)
        if desc:
            tag = f"({unit}, -{c}) " if unit else f"(-{c}) "
            _out(sh, f"{text:<20} {tag:>20}{val}\n")
        else:
            _out(sh, f"{val}\n")
    if show_all:
        for c in _ULIMITS:
            show(c, True)
        return 0
    if not cmds:
        cmds = [["f", None]]
    rc = 0
    for c, value in cmds:
        if value is None:
            show(c, len(cmds) > 1)
            continue
        _, factor, desc, _ = _ULIMITS[c]
        cur_s, cur_h = ulimit_of(sh, c)
        if value == "unlimited":
            new = _INF
        elif value == "hard":
            new = cur_h
        elif value == "soft":
            new = cur_s
        elif value.isdigit():
            new = int(value) * factor
        else:
            sh.error(f"ulimit: {value}: invalid number")
            return 1
        if c == "p":
            sh.error(f"ulimit: {desc}: cannot modify limit: Invalid argument")
            rc = 1
            continue
        set_soft = soft or not hard
        set_hard = hard or not soft
        ns = new if set_soft else cur_s
        nh = new if set_hard else cur_h

        def above(a: int, b: int) -> bool:  # a > b, unlimited being the largest
            return (a == _INF or a < 0) and not (b == _INF or b < 0) or (
                a >= 0 and b >= 0 and a > b)
        if set_hard and above(nh, cur_h):
            # nothing in the sandbox may raise a hard limit (no CAP_SYS_RESOURCE)
            sh.error(f"ulimit: {desc}: cannot modify limit: Operation not permitted")
            rc = 1
            continue
        if above(ns, nh):
            sh.error(f"ulimit: {desc}: cannot modify limit: Invalid argument")
            rc = 1
            continue
        sh.state.ulimits = {**(getattr(sh.state, "ulimits", None) or {}), c: (ns, nh)}
    return rc
