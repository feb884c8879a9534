"""jq over the VFS: libjq (the ``jq`` package) runs the filter, in-process or in a worker process; output like the jq 1.6 CLI."""

# libjq cannot be interrupted and holds the GIL, so inputs are bounded by
# limits.max_variable_bytes and only small, non-looping work runs in-process (see _light);
# the rest runs in a worker process that the deadline kills and RLIMIT_DATA caps (jqeval.serve).
# $ENV / env are rebound to the sandbox's environment (libjq would read the host's), and
# module imports are refused (they would read the host filesystem).

from __future__ import annotations

import json
import os
import re
import sys
import threading
import time
from typing import Any

from ..executors.native import helper_processes
from .base import CommandContext, command
from .jqeval import (_PRELUDE, _compile, _jq, _uses_input, compile_alone, dump_json, evaluate,
                     format_number)

__all__ = ["dump_json", "format_number"]

_USAGE = """Usage:\tjq [OPTIONS] FILTER [FILES...]
\tjq [OPTIONS] --args FILTER [ARGUMENTS...]
\tjq [OPTIONS] --jsonargs FILTER [JSON_VALUES...]

jq is a tool for processing JSON inputs, applying the given filter to
its JSON text inputs and producing the filter's results as JSON on
standard output.

The simplest filter is ., which copies jq's input to its output
unmodified (except for formatting, but note that IEEE754 is used
for number representation internally, with all that that implies).

For more advanced filters see the jq(1) manpage ("man jq")
and/or https://stedolan.github.io/jq

Example:

\t$ echo '{"foo": 0}' | jq .
\t{
\t  "foo": 0
\t}

Some of the options include:
  -c               compact instead of pretty-printed output;
  -n               use `null` as the single input value;
  -e               set the exit status code based on the output;
  -s               read (slurp) all inputs into an array; apply filter to it;
  -r               output raw strings, not JSON texts;
  -a               output ASCII with escape sequences;
  -S               sort keys of objects on output;
  -C               colorize JSON;
  -M               monochrome (don't colorize JSON);
  --tab            use tabs for indentation;
  --arg a v        set variable $a to value <v>;
  --argjson a v    set variable $a to JSON value <v>;
  --slurpfile a f  set variable $a to an array of JSON texts read from <f>;
  --rawfile a f    set variable $a to a string consisting of the contents of <f>;
  --args           remaining arguments are string arguments, not files;
  --jsonargs       remaining arguments are JSON arguments, not files;
  --               terminates argument processing;

Named arguments are also available as $ARGS.named[], while
positional arguments are available as $ARGS.positional[].

See the manpage for more options.
"""

_BAD_MODULE = re.compile(r"^\s*(import|include)\b|\bmodulemeta\b|get_search_list")


@command("jq", usage="jq [OPTIONS] FILTER [FILES...]", help="Command-line JSON processor (libjq).")
def jq(ctx: CommandContext, argv: list[str]) -> int:
    if _jq is None:
        ctx.stderr.write(b"jq: the jq Python package (libjq bindings) is not installed\n")
        return 2
    opts = {"r": False, "j": False, "c": False, "n": False, "s": False, "e": False, "S": False, "a": False,
            "R": False, "seq": False}
    indent: int | str = 2
    named: dict[str, Any] = {}
    positional: list[Any] = []
    slurpfiles: list[tuple[str, str, str]] = []
    filter_: str | None = None
    files: list[str] = []
    from_file: str | None = None
    rest_mode: str | None = None
    args = argv[1:]
    i = 0
    limit = ctx.budget.limits.max_variable_bytes

    def usage_err(msg: str) -> int:
        ctx.stderr.write(f"jq: {msg}\n".encode())
        ctx.stderr.write(b"Use jq --help for help with command-line options,\nor see the jq manpage, "
                         b"or online docs  at https://stedolan.github.io/jq\n")
        return 2

    def read_file(name: str) -> bytes:
        with ctx.fs.open(ctx.path(name), "rb") as f:
            data = f.read(limit + 1 if limit is not None else -1)
        if limit is not None and len(data) > limit:
            raise _TooBig(name)
        return data

    end_opts = False
    while i < len(args):
        a = args[i]
        i += 1
        if rest_mode is not None and filter_ is not None and (end_opts or not a.startswith("-") or a == "-"):
            if rest_mode == "args":
                positional.append(a)
            else:
                try:
                    positional.append(json.loads(a))
                except ValueError:
                    return usage_err(f"Invalid JSON text passed to --jsonargs")
            continue
        if end_opts or not a.startswith("-") or a == "-":
            if filter_ is None and from_file is None:
                filter_ = a
            else:
                files.append(a)
            continue
        if a == "--":
            end_opts = True
            continue
        if a.startswith("--"):
            name = a[2:]
            if name in ("raw-output",):
                opts["r"] = True
            elif name == "join-output":
                opts["r"] = opts["j"] = True
            elif name == "compact-output":
                opts["c"] = True
            elif name == "null-input":
                opts["n"] = True
            elif name == "slurp":
                opts["s"] = True
            elif name == "exit-status":
                opts["e"] = True
            elif name == "sort-keys":
                opts["S"] = True
            elif name == "ascii-output":
                opts["a"] = True
            elif name == "raw-input":
                opts["R"] = True
            elif name in ("color-output", "monochrome-output", "unbuffered", "stream-errors"):
                pass
            elif name == "seq":
                opts["seq"] = True
            elif name == "tab":
                indent = "\t"
            elif name == "indent":
                if i >= len(args):
                    return usage_err("--indent takes one parameter")
                m = re.match(r"\s*[+-]?\d+", args[i])  # jq 1.6 reads it with atoi()
                n = int(m.group()) if m else 0
                i += 1
                if n > 7 or n < -1:
                    return usage_err("--indent takes a number between -1 and 7")
                indent = "\t" if n == -1 else n
            elif name in ("arg", "argjson", "slurpfile", "rawfile"):
                if i + 1 >= len(args):
                    return usage_err(f"--{name} takes two parameters (e.g. --{name} varname "
                                     f"{'value' if name in ('arg', 'argjson') else 'filename'})")
                k, v = args[i], args[i + 1]
                i += 2
                if name == "arg":
                    named[k] = v
                elif name == "argjson":
                    try:
                        named[k] = json.loads(v)
                    except ValueError:
                        return usage_err("invalid JSON text passed to --argjson")
                else:
                    try:
                        data = read_file(v)
                    except OSError as e:
                        ctx.stderr.write(f"jq: Bad JSON in --{name} {k} {v}: Could not open {v}: "
                                         f"{e.strerror}\n".encode())
                        return 2
                    except _TooBig:
                        ctx.stderr.write(f"jq: error: {v}: input larger than the sandbox limit "
                                         f"({limit} bytes)\n".encode())
                        return 2
                    text = data.decode("utf-8", "replace")
                    if name == "rawfile":
                        named[k] = text
                    else:
                        named[k] = None  # (parsed with the inputs: see jqeval.evaluate)
                        slurpfiles.append((k, v, text))
            elif name in ("from-file",):
                if i >= len(args):
                    return usage_err("-f takes a parameter")
                from_file = args[i]
                i += 1
            elif name == "args":
                rest_mode = "args"
            elif name == "jsonargs":
                rest_mode = "jsonargs"
            elif name == "help":
                ctx.stdout.write(_USAGE.encode())
                return 0
            elif name == "version":
                ctx.stdout.write(b"jq-1.6\n")
                return 0
            else:
                return usage_err(f"Unknown option {a}")
            continue
        # short options, clustered
        for c in a[1:]:
            if c in "rcnseSaRj":
                opts[c] = True
                if c == "j":
                    opts["r"] = True
            elif c in "CM":
                pass
            elif c == "h":
                ctx.stdout.write(_USAGE.encode())
                return 0
            elif c == "f":
                if i >= len(args):
                    return usage_err("-f takes a parameter")
                from_file = args[i]
                i += 1
            elif c == "L":
                i += 1
            else:
                return usage_err(f"Unknown option {a}")
    if from_file is not None:
        if filter_ is not None:
            files.insert(0, filter_)
        try:
            filter_ = read_file(from_file).decode("utf-8", "replace")
        except OSError as e:
            ctx.stderr.write(f"jq: error: Could not open {from_file}: {e.strerror}\n".encode())
            return 2
        except _TooBig:
            ctx.stderr.write(b"jq: error: program file too large\n")
            return 2
    if filter_ is None:
        filter_ = "."
    if _BAD_MODULE.search(filter_):
        ctx.stderr.write(b"jq: error: modules are not available in the sandbox\njq: 1 compile error\n")
        return 3
    if _light(filter_, 0):
        # compile errors before any input is read, as jq's (checked with placeholder values:
        # the arguments' names are what compiling needs). Not for the others: libjq's
        # compiler folds constants (`"x" * 1e9` built its gigabyte while compiling)
        names = dict.fromkeys([*named, "ARGS"])
        try:
            _compile(_PRELUDE + filter_, {**names, "__agentic_env": None, "__agentic_fname": None})
        except ValueError as behind:
            try:
                compile_alone(filter_, names, behind)
            except ValueError:
                # (its message, from evaluate with the real arguments)
                return evaluate({"filter": filter_, "opts": opts, "indent": indent, "named": named,
                                 "positional": positional, "sources": [], "status": 0, "slurpfiles": [],
                                 "env": {}}, ctx.stdout.write, ctx.stderr.write, ctx.budget.check)

    # -- inputs --------------------------------------------------------------------------
    status = 0
    total = 0
    sources: list[tuple[str, bytes]] = []
    if not files:
        data = ctx.stdin.read(limit + 1) if limit is not None else ctx.stdin.read()
        if limit is not None and len(data) > limit:
            ctx.stderr.write(f"jq: error: input larger than the sandbox limit ({limit} bytes)\n".encode())
            return 2
        if not opts["n"] or _uses_input(filter_):
            sources.append(("<stdin>", data))
    else:
        for fn in files:
            try:
                if fn == "-":  # stdin among the files; a second "-" finds it drained
                    data = ctx.stdin.read(limit + 1) if limit is not None else ctx.stdin.read()
                    if limit is not None and len(data) > limit:
                        raise _TooBig(fn)
                    fn = "<stdin>"
                else:
                    data = read_file(fn)
            except _TooBig:
                ctx.stderr.write(f"jq: error: {fn}: input larger than the sandbox limit ({limit} bytes)\n"
                                 .encode())
                return 2
            except OSError as e:
                ctx.stderr.write(f"jq: error: Could not open file {fn}: {e.strerror}\n".encode())
                status = 2
                continue
            total += len(data)
            if limit is not None and total > limit:
                ctx.stderr.write(f"jq: error: input larger than the sandbox limit ({limit} bytes)\n".encode())
                return 2
            sources.append((fn, data))
    ctx.budget.check()
    job = {"filter": filter_, "opts": opts, "indent": indent, "named": named, "positional": positional,
           "sources": sources, "status": status, "slurpfiles": slurpfiles, "env": dict(ctx.env)}
    if _light(filter_, sum(len(d) for _, d in sources) + sum(len(t) for _, _, t in slurpfiles)
              + _args_size(named, positional, filter_, job["env"])):
        return evaluate(job, ctx.stdout.write, ctx.stderr.write, ctx.budget.check)
    return _in_worker(ctx, job)


class _TooBig(Exception):
    pass


# -- in-process or in the worker ------------------------------------------------------------
# libjq holds the GIL and cannot be interrupted: a program that loops or recurses in it
# (`def f: f; f`, `last(range(1e9))`, `[limit(1e9; repeat(1))]`) stopped every thread of the
# process, the watchdog's too, and `"x" * 1e9` built 1 GB in the caller's process; parsing a
# 60 MB array held it 25 s (+1.2 GiB). In-process runs only work bounded by its input, and
# small: an input of at most _LIGHT_INPUT bytes, a program of at most _LIGHT_PROGRAM
# characters that names no construct iterating or recursing by itself or super-linear in its
# input (_LOOPS: def, range, repeat, reduce, regular expressions, substring searches, `*`
# for string repetition...), and whose output is at most _LIGHT_OUTPUT bytes by the bound of
# _amplification (`[.,.] | [.,.] | ...` doubles at each stage). Everything else runs in a
# worker process (jqeval.serve: `python -I -S` with the binding and jqeval only, ~20 MB; not a
# fork of the caller, whose copy-on-write pages counted again in the process tree's RSS): the
# parent relays its outputs with the deadline checked and kills it at the stop; RLIMIT_DATA
# caps its memory at what it uses plus held_cap. An idle worker is kept for the next call
# (_IDLE s, then it ends by itself): jq in a loop pays the start-up (~30-60 ms) once.
_LIGHT_INPUT = 64 << 10
_LIGHT_PROGRAM = 256
_LIGHT_OUTPUT = 16 << 20
_LOOPS = re.compile(r"\b(?:def|range|repeat|recurse|recurse_down|while|until|reduce|foreach|"
                    r"combinations|splits|sub|gsub|scan|match|capture|test|indices|index|rindex|"
                    r"inside|contains|_strindices|pow|exp10|getpath|setpath|delpaths|label)\b|\*")
# (review12) quadratic and worse without any of those: a variable (the whole input, an
# argument, the environment) used per element of a generator (`. as $a | .[] | $a[]`,
# `--argjson a` + `[$a[] | $a[]]`: 1,500 elements ran 5.4 s past a 1 s timeout, frozen),
# and a path built per value (`[paths]` or `tostream` of a 20 KB nesting: 4.7 s, > 20 s)
_VARIABLE = re.compile(r"\$(?!__loc__\b)[A-Za-z_]|\b(?:as|env|input|inputs)\b")
_GENERATOR = re.compile(r"\[\s*\]|\.\.|\b(?:map|map_values|any|all|add|flatten|group_by|sort_by|"
                        r"unique_by|min_by|max_by|INDEX|IN|walk|limit|first|last|nth|isempty|"
                        r"keys|keys_unsorted|values|to_entries|with_entries|from_entries|del|"
                        r"paths|join|splits|implode|explode|ascii_downcase|ascii_upcase)\b")
_PATHS = re.compile(r"\b(?:paths|leaf_paths|tostream|fromstream|pick|path)\b")
_UPDATE = re.compile(r"(?<![=!<>])=(?!=)|\bdel\b")   # (paths of their left side: `..` too)
_IDLE = 1.0


def _amplification(src: str) -> int:
    """An upper bound on how many times its input a program's output can hold: the product,
    over its ``|`` stages, of one plus the stage's references to its input (``.``, ``$``,
    a string's ``\\(...)``) and operators that repeat one (``,``, ``+``)."""
    n = 1
    for stage in src.split("|"):
        n *= 1 + sum(stage.count(c) for c in ".$,+")
        if n > 1 << 30:
            break
    return n


def _args_size(named: dict, positional: list, src: str, env: dict) -> int:
    """Bytes of what the program may read besides its inputs: its arguments (--argjson and
    --jsonargs values too, as JSON) and, when it names it, the environment."""
    n = 0
    for v in (*named.values(), *positional):
        n += len(v) if isinstance(v, str) else len(json.dumps(v)) if v is not None else 0
        if n > _LIGHT_INPUT:
            return n
    if "env" in src or "ENV" in src:
        n += sum(len(k) + len(v) + 2 for k, v in env.items())
    return n


def _light(src: str, size: int) -> bool:
    """Whether ``src`` on ``size`` bytes of input runs in-process (see above)."""
    if size > _LIGHT_INPUT or len(src) > _LIGHT_PROGRAM:
        return False
    # (the program as written, strings too: a string's `\\(...)` is code, and flattening
    # strings away hid `"\\(last(range(3e7)))"` from _LOOPS: 53 s past a 1 s timeout; a
    # word or a dot in a string's text only sends a program to the worker)
    if _LOOPS.search(src) is not None or _PATHS.search(src) is not None or (
            ".." in src and _UPDATE.search(src) is not None):
        return False
    if _VARIABLE.search(src) is not None and _GENERATOR.search(src) is not None:
        return False
    return _amplification(src) * max(size, 1 << 10) <= _LIGHT_OUTPUT


class _Worker:
    __slots__ = ("proc", "idle_since", "reaper", "counted")

    def __init__(self, proc: Any) -> None:
        self.proc = proc
        self.idle_since = 0.0
        self.reaper: threading.Thread | None = None
        self.counted = True   # (its start was counted by _spawn)

    def ended(self) -> None:
        """Reaped: counted once in native.helper_processes (see there)."""
        with _COUNT_LOCK:
            if self.counted:
                self.counted = False
                helper_processes[1] += 1

    def kill(self) -> None:
        p = self.proc
        try:
            p.kill()
        except OSError:
            pass
        for f in (p.stdin, p.stdout):
            try:
                f.close()
            except OSError:
                pass
        try:
            p.wait()
            self.ended()
        except Exception:  # noqa: BLE001
            pass


_POOL: list[_Worker] = []
_POOL_LOCK = threading.Lock()
_COUNT_LOCK = threading.Lock()
_POOL_PID = os.getpid()


def _spawn() -> _Worker:
    import subprocess

    from . import jqeval
    from ..limits import no_kick
    here = jqeval.__file__
    jqdir = os.path.dirname(_jq.__file__) if _jq is not None else ""
    # (in the namespace level the runner's imports are /proc/self/fd/N paths: pin_imports)
    fds = tuple({int(m.group(1)) for m in re.finditer(r"^/proc/self/fd/(\d+)", f"{here}\n{jqdir}", re.M)})
    code = ("import sys, importlib.util as u; sys.path.insert(0, sys.argv[1]); "
            "s = u.spec_from_file_location('agentic_jqeval', sys.argv[2]); m = u.module_from_spec(s); "
            "s.loader.exec_module(m); m.serve(float(sys.argv[3]))")
    with _COUNT_LOCK:
        # counted before the fork: a refused or failed one moved the sandbox's counters too
        helper_processes[0] += 1
    try:
        if not _EXEC_OK[0]:
            with no_kick:
                return _Worker(_Forked())
        with no_kick:
            proc = subprocess.Popen(["/proc/self/exe", "-I", "-S", "-c", code, jqdir, here, str(_IDLE)],
                                    executable="/proc/self/exe" if os.path.exists("/proc/self/exe") else sys.executable,
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                    close_fds=True, pass_fds=fds, env={}, cwd="/", bufsize=0)
            return _Worker(proc)   # (in the block: a kick before it would lose the process)
    except PermissionError:
        with _COUNT_LOCK:
            helper_processes[1] += 1
        if not _EXEC_OK[0]:
            raise
        # (review12) the namespace level: the runner's python is a file of the host's root,
        # detached by pivot_root, and Landlock refuses its exec; a python of the sandbox's
        # tree would load the workload's libraries and stdlib (/usr is its overlay) in a
        # helper outside its cgroups. A fork of this process runs only code already loaded.
        _EXEC_OK[0] = False
        return _spawn()
    except BaseException:
        with _COUNT_LOCK:
            helper_processes[1] += 1
        raise


_EXEC_OK = [True]
"""Whether the worker is exec'd (else forked: see _spawn, _Forked)."""


class _Forked:
    """The worker as a fork of this process running jqeval.serve on two pipes, with
    Popen's methods that _Worker and _talk use. Every other descriptor is closed in the
    child first (the runner's channel, its cgroup files), and the inherited objects are
    frozen out of the collector's sight (a collection would copy their pages)."""

    def __init__(self) -> None:
        import gc
        import signal
        r0, w0 = os.pipe2(os.O_CLOEXEC)
        r1, w1 = os.pipe2(os.O_CLOEXEC)
        pid = os.fork()
        if pid == 0:
            try:
                gc.freeze()
                try:
                    signal.set_wakeup_fd(-1)
                    for s_ in (signal.SIGINT, signal.SIGTERM, signal.SIGALRM, signal.SIGCHLD):
                        signal.signal(s_, signal.SIG_DFL)
                except (ValueError, OSError):
                    pass
                os.dup2(r0, 0)
                os.dup2(w1, 1)
                null = os.open("/dev/null", os.O_WRONLY)
                os.dup2(null, 2)
                os.closerange(3, 1 << 20)
                from .jqeval import serve
                serve(_IDLE)
            finally:
                os._exit(0)
        os.close(r0)
        os.close(w1)
        self.pid = pid
        self.returncode: int | None = None
        self._lock = threading.Lock()
        self.stdin = open(w0, "wb", buffering=0)
        self.stdout = open(r1, "rb", buffering=0)

    def poll(self) -> int | None:
        return self._wait(os.WNOHANG)

    def wait(self) -> int | None:
        return self._wait(0)

    def _wait(self, flags: int) -> int | None:
        if flags == 0 and self.returncode is None:
            try:   # (waited for without the lock and not reaped: see kill)
                os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOWAIT)
            except ChildProcessError:
                pass
        with self._lock:
            if self.returncode is None:
                try:
                    pid, st = os.waitpid(self.pid, os.WNOHANG)
                except ChildProcessError:
                    self.returncode = -1
                else:
                    if pid:
                        self.returncode = os.waitstatus_to_exitcode(st)
            return self.returncode

    def kill(self) -> None:
        with self._lock:   # (reaped only under it: the pid is still this child's)
            if self.returncode is None:
                try:
                    os.kill(self.pid, 9)
                except ProcessLookupError:
                    pass


def _acquire() -> _Worker:
    global _POOL_PID
    with _POOL_LOCK:
        if _POOL_PID != os.getpid():  # (a forked host: the pipes are its parent's)
            _POOL.clear()
            _POOL_PID = os.getpid()
        now = time.monotonic()
        while _POOL:
            w = _POOL.pop()
            if now - w.idle_since < _IDLE / 2 and w.proc.poll() is None:
                return w
            w.kill()
    return _spawn()


def _release(w: _Worker) -> None:
    w.idle_since = time.monotonic()
    with _POOL_LOCK:
        if _POOL_PID == os.getpid() and len(_POOL) < 2:
            _POOL.append(w)
            if w.reaper is None:
                # (an idle worker ends by itself: it is waited for here, and no zombie stays)
                from ..limits import start_thread
                w.reaper = threading.Thread(target=_reap, args=(w,), name="agentic-bash-jq-reaper", daemon=True)
                start_thread(w.reaper)
            return
    w.kill()


def _reap(w: _Worker) -> None:
    try:
        w.proc.wait()
        w.ended()
    except Exception:  # noqa: BLE001
        pass
    with _POOL_LOCK:
        idle = w in _POOL
        if idle:
            _POOL.remove(w)
    if idle:  # (one in use is closed by its user, who may be reading its pipe right now)
        w.kill()


def _in_worker(ctx: CommandContext, job: dict) -> int:
    """``evaluate(job)`` in a worker process (see _light); its outputs to ctx."""
    from ._args import held_cap
    job["cap"] = held_cap(ctx)
    sources = job.pop("sources")
    job["sources"] = [(name, len(d)) for name, d in sources]
    head = json.dumps(job).encode()
    for attempt in (0, 1):
        try:
            w = _acquire()
        except OSError as e:
            ctx.stderr.write(f"jq: error: cannot start: {e.strerror}\n".encode())
            return 2
        done = False
        try:
            st = _talk(ctx, w, head, sources)
            if st is None:  # (the worker was gone before it read the job: a fresh one)
                continue
            done = True
            return st
        finally:
            if done:
                _release(w)
            else:
                w.kill()
    ctx.stderr.write(b"jq: error: cannot start\n")
    return 2


def _talk(ctx: CommandContext, w: _Worker, head: bytes, sources: list[tuple[str, bytes]]) -> int | None:
    """Send the job, relay the frames; the exit status, or None if the worker ended before
    it took the job. Raises MemoryError when it ran out of memory (or died)."""
    import select
    budget = ctx.budget
    wfd = w.proc.stdin.fileno()
    rfd = w.proc.stdout.fileno()
    os.set_blocking(wfd, False)
    pending = [len(head).to_bytes(8, "little"), head, *(d for _, d in sources)]
    out = bytearray()
    acked = False
    try:
        while True:
            budget.check()
            want_w = [wfd] if pending else []
            rl, wl, _ = select.select([rfd], want_w, [], 0.02)
            if wl:
                try:
                    n = os.write(wfd, memoryview(pending[0])[:1 << 20])
                except BrokenPipeError:
                    pending.clear()
                    continue
                if n == len(pending[0]):
                    pending.pop(0)
                else:
                    pending[0] = memoryview(pending[0])[n:]
            if not rl:
                continue
            chunk = os.read(rfd, 1 << 20)
            if not chunk:
                if not acked:
                    return None
                raise MemoryError("memory exhausted")  # (killed by its memory cap, most likely)
            out += chunk
            while len(out) >= 5:
                n = int.from_bytes(out[1:5], "little")
                if len(out) < 5 + n:
                    break
                kind, payload = out[0:1], bytes(out[5:5 + n])
                del out[:5 + n]
                if kind == b"a":
                    acked = True
                elif kind == b"o":
                    ctx.stdout.write(payload)
                elif kind == b"e":
                    ctx.stderr.write(payload)
                elif kind == b"x":
                    return int(payload)
                else:
                    raise MemoryError("memory exhausted")
    finally:
        try:
            os.set_blocking(wfd, True)
        except OSError:
            pass
