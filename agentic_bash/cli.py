"""The ``agentic-bash`` command line: run, shell, snapshot, restore."""

from __future__ import annotations

import base64
import functools
import inspect
import json
import math
import os
import re
import shlex
import signal
import sys
import threading
import warnings
from enum import Enum
from pathlib import Path
from typing import Any, Callable, Optional

import typer
import typer.core

from .errors import SandboxError

__all__ = ["SANDBOX_OPTIONS", "app", "main", "open_sandbox", "sandbox_kwargs", "sandbox_options"]

app = typer.Typer(
    add_completion=False, no_args_is_help=True,
    help="A stateful, isolated bash for AI agents.",
    # plain one-line errors (like bash), not rich boxes wrapped at the terminal's width
    rich_markup_mode=None, pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _print_version(value: bool) -> None:
    if value:
        from . import __version__
        typer.echo(f"agentic-bash {__version__}")
        raise typer.Exit()


@app.callback()
def _root(version: bool = typer.Option(False, "--version", "-V", is_eager=True, callback=_print_version,
                                       help="Print the version and exit")) -> None:
    pass

EXIT_USAGE = 2       # like bash and click: a usage error
EXIT_TIMEOUT = 124   # like timeout(1)
EXIT_SANDBOX = 125   # the sandbox itself failed (not the script)
EXIT_SIGPIPE = 141   # like bash when the reader of its output went away
LEVELS = ("auto", "virtual", "namespace", "landlock", "none")
Level = Enum("Level", {v: v for v in LEVELS}, type=str)  # typer validates the choice
MOUNT_MODES = ("ro", "cow", "rw")


# ---------------------------------------------------------------- option parsing helpers
def _parse_env(items: list[str]) -> dict[str, str]:
    env: dict[str, str] = {}
    for item in items:
        k, sep, v = item.partition("=")
        if not sep or not k:
            raise typer.BadParameter(f"expected NAME=VALUE, got {item!r}", param_hint="'--env' / '-e'")
        env[k] = v
    return env


def parse_mount(item: str) -> tuple[str, str, str]:
    """``DEST=SRC[:ro|cow|rw]`` -> (dest, absolute src, mode); BadParameter says what is wrong."""
    hint = "'--mount' / '-m'"
    dest, sep, src = item.partition("=")
    if not sep or not dest or not src:
        raise typer.BadParameter(f"{item!r}: expected DEST=SRC[:ro|cow|rw]", param_hint=hint)
    if not dest.startswith("/"):
        raise typer.BadParameter(f"{item!r}: DEST {dest!r} must be an absolute path inside the sandbox",
                                 param_hint=hint)
    mode = "cow"
    head, colon, tail = src.rpartition(":")
    if colon and not Path(src).is_dir():
        # SRC:MODE (a directory whose name holds a colon is taken whole when it exists)
        if tail not in MOUNT_MODES:
            raise typer.BadParameter(
                f"{item!r}: unknown mode {tail!r} (expected one of {', '.join(MOUNT_MODES)})",
                param_hint=hint)
        src, mode = head, tail
    p = Path(src)
    if not p.exists():
        raise typer.BadParameter(f"{item!r}: {src}: no such directory", param_hint=hint)
    if not p.is_dir():
        raise typer.BadParameter(f"{item!r}: {src}: not a directory", param_hint=hint)
    return dest, str(p.resolve()), mode


def _parse_mounts(items: list[str]) -> dict[str, Any]:
    from .session import Mount

    mounts: dict[str, Any] = {}
    for item in items:
        dest, src, mode = parse_mount(item)
        mounts[dest] = Mount(src, mode=mode)
    return mounts


def _positive_seconds(value: Optional[float]) -> Optional[float]:
    if value is not None and not (value > 0 and math.isfinite(value)):
        raise typer.BadParameter(f"must be a positive number of seconds, not {value:g}")
    return value


def _network_mode(value: Optional[str]) -> Optional[str]:
    if value is not None and value not in ("public", "deny", "host", "allow", "registries"):
        raise typer.BadParameter(f"must be public, deny, host or registries, not {value!r}")
    return value


def _network_rules(value: list[str]) -> list[str]:
    from .network import parse_rule
    for rule in value or ():
        try:
            parse_rule(rule)
        except ValueError as e:
            raise typer.BadParameter(str(e)) from None
    return value


def _network_kwargs(o: dict[str, Any]) -> dict[str, Any]:
    """Sandbox(network=...) from --network and --allow (only when given)."""
    mode, rules = o.get("network"), list(o.get("allow") or ())
    if mode == "registries":
        from .network import NetworkPolicy
        return {"network": NetworkPolicy.registries(*rules)}
    if rules:
        if mode not in (None, "public"):
            raise typer.BadParameter(f"--allow needs --network public, not {mode!r}",
                                     param_hint="--allow")
        from .network import NetworkPolicy
        return {"network": NetworkPolicy(allow=rules)}
    return {"network": mode} if mode is not None else {}


_SIZE = re.compile(r"([0-9]+(?:\.[0-9]+)?)\s*([kmgt]?)(i?b)?", re.I)


def parse_size(text: str) -> int:
    """``256m``, ``1g``, ``1.5G``, ``10MiB``, ``512k`` or plain bytes -> bytes (powers of 1024,
    as docker --memory does). ValueError for anything else."""
    m = _SIZE.fullmatch(text.strip())
    if m is None:
        raise ValueError(f"not a size: {text!r} (e.g. 512k, 256m, 2g)")
    n = float(m.group(1)) * 1024 ** "_kmgt".index(m.group(2).lower() or "_")
    if n < 1:
        raise ValueError(f"a size must be at least one byte: {text!r}")
    return int(n)


def _size_option(value: Optional[str]) -> Optional[int]:
    if value is None:
        return None
    try:
        return parse_size(value)
    except ValueError as e:
        raise typer.BadParameter(str(e)) from None


def _cpus_option(value: Optional[float]) -> Optional[float]:
    if value is not None and not (0.01 <= value <= 1024):
        raise typer.BadParameter(f"must be between 0.01 and 1024 CPUs, not {value:g}")
    return value


# ---------------------------------------------------------------- the shared option group
# One place for every option that shapes the Sandbox: run, shell, snapshot and restore all
# take them. To add one: append (parameter name, type, typer.Option(...)) here and map it to
# Sandbox keyword arguments in sandbox_kwargs() (Limits fields in _limits_kwargs()).
SANDBOX_OPTIONS: list[tuple[str, Any, Any]] = [
    ("isolation", Level, typer.Option(
        "auto", "--isolation", "-i",
        help="An explicit level not available here is an error; auto falls back")),
    ("strict", bool, typer.Option(
        False, "--strict", help="Refuse to start if any mechanism of the level is missing")),
    ("env", list[str], typer.Option(
        [], "--env", "-e", help="NAME=VALUE added to the sandbox environment (repeatable)")),
    ("workdir", Optional[str], typer.Option(
        None, "--workdir", "-w",
        help="Initial working directory (default /workspace; -i none: the current directory)")),
    ("mount", list[str], typer.Option(
        [], "--mount", "-m", help="DEST=SRC[:ro|cow|rw] host directory mount (repeatable)")),
    ("timeout", Optional[float], typer.Option(
        None, "--timeout", "-t", callback=_positive_seconds,
        help="Seconds before a run is stopped (exit 124)")),
    ("image", Optional[str], typer.Option(
        None, "--image", help="Start from a named image (agentic-bash image build) or its snapshot tar")),
    # network (issue #12)
    ("network", Optional[str], typer.Option(
        None, "--network", callback=_network_mode,
        help="public (default: the internet through a filtering proxy, never host or private "
             "addresses), deny (loopback only), host (the host's network, unconfined) or "
             "registries (only the package registries pip, npm and apt are set up to use, "
             "plus any --allow)")),
    ("allow", list[str], typer.Option(
        [], "--allow", callback=_network_rules,
        help="Allowlist RULE: NAME, *.SUFFIX or CIDR, each with an optional :PORT; only "
             "listed hosts are reachable (repeatable)")),
    # resource limits of the whole sandbox (issue #11)
    ("memory", Optional[str], typer.Option(
        None, "--memory", callback=_size_option,
        help="Memory of the whole sandbox, e.g. 256m, 2g; past it the workload is killed (137)")),
    ("cpus", Optional[float], typer.Option(
        None, "--cpus", callback=_cpus_option, help="CPU share of the whole sandbox, e.g. 0.5")),
    ("pids", Optional[int], typer.Option(
        None, "--pids", min=1, help="Processes and threads of the workload alive at once")),
    ("file_size", Optional[str], typer.Option(
        None, "--file-size", callback=_size_option,
        help="Largest file a process may write, e.g. 10m ('File too large' past it)")),
    ("disk", Optional[str], typer.Option(
        None, "--disk", callback=_size_option,
        help="Bytes the session layer, /tmp and /dev/shm may each hold, e.g. 1g (ENOSPC past it)")),
]


class SandboxOptions(dict):
    """The shared options' values, by parameter name."""


def sandbox_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Give a command every option of SANDBOX_OPTIONS; it receives them as ``opts``."""
    sig = inspect.signature(fn, eval_str=True)
    own = [p for p in sig.parameters.values() if p.name != "opts"]
    names = [name for name, _, _ in SANDBOX_OPTIONS]
    shared = [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=opt, annotation=ann)
              for name, ann, opt in SANDBOX_OPTIONS]

    @functools.wraps(fn)
    def wrapper(**kw: Any) -> Any:
        opts = SandboxOptions((n, kw.pop(n)) for n in names)
        opts.update((k, v.value) for k, v in opts.items() if isinstance(v, Enum))
        return fn(**kw, opts=opts)

    params = own + shared
    wrapper.__signature__ = sig.replace(parameters=params)  # type: ignore[attr-defined]
    wrapper.__annotations__ = {p.name: p.annotation for p in params}
    return wrapper


def _limits_kwargs(o: dict[str, Any]) -> dict[str, Any]:
    """Limits(...) fields from the shared options (only those given)."""
    out: dict[str, Any] = {}
    if o.get("timeout") is not None:
        out["timeout"] = o["timeout"]
    for opt, field in (("memory", "max_memory_bytes"), ("cpus", "cpu_quota"),
                       ("pids", "max_processes"), ("file_size", "max_file_bytes"),
                       ("disk", "max_fs_bytes")):
        if o.get(opt) is not None:
            out[field] = o[opt]
    return out


def sandbox_kwargs(o: dict[str, Any]) -> dict[str, Any]:
    """Sandbox(...) keyword arguments from the shared options."""
    from .limits import Limits

    workdir = o.get("workdir")
    if workdir is None:
        workdir = os.getcwd() if o["isolation"] == "none" else "/workspace"
    return dict(isolation=o["isolation"], env=_parse_env(o.get("env") or []), workdir=workdir,
                mounts=_parse_mounts(o.get("mount") or []) or None,
                limits=Limits(**_limits_kwargs(o)), strict=bool(o.get("strict")),
                **({"image": o["image"]} if o.get("image") else {}), **_network_kwargs(o))


def _warn(message: str) -> None:
    sys.stderr.write(f"agentic-bash: warning: {message}\n")
    sys.stderr.flush()


def open_sandbox(o: dict[str, Any], *, snapshot: Optional[str] = None,
                 extra: Optional[dict[str, Any]] = None) -> Any:
    """A Sandbox built from the shared options (resumed from ``snapshot`` if given).

    An explicitly requested level that is not available here is an error, as with --strict;
    only ``-i auto`` falls back. Warnings go to stderr as one line each."""
    from .errors import IsolationUnavailable
    from .session import Sandbox

    kw = sandbox_kwargs(o)
    kw.update(extra or {})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if snapshot is None:
            sb = Sandbox(**kw)
        else:
            sb = Sandbox.from_snapshot(snapshot, **kw)
    wanted = kw["isolation"]
    if wanted != "auto" and sb.isolation_level != wanted:
        sb.close()
        why = "; ".join(str(w.message) for w in caught) or f"it runs as {sb.isolation_level!r}"
        raise IsolationUnavailable(f"isolation {wanted!r} is not available here ({why}); "
                                   "use -i auto to fall back")
    seen: set[str] = set()
    for w in caught:
        msg = str(w.message)
        # (the plan and the session both say that -i none confines nothing)
        key = msg.replace("native commands", "commands")
        if key not in seen:
            seen.add(key)
            _warn(msg)
    return sb


class _Command(typer.core.TyperCommand):
    """Records the operands given after ``--`` (``run --cmd SCRIPT -- ARGS``)."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        ctx.meta["agentic_bash.after_dashdash"] = (
            list(args[args.index("--") + 1:]) if "--" in args else None)
        return super().parse_args(ctx, args)


def _usage_error(message: str, param_hint: str | None = None) -> None:
    raise typer.BadParameter(message, param_hint=param_hint)


# ---------------------------------------------------------------- output
def _json_result(result: Any) -> str:
    d = result.to_dict()
    for name in ("stdout", "stderr"):
        raw = getattr(result, f"{name}_bytes")
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError:
            # lossless: the text form keeps U+FFFD for readers, the bytes ride in base64
            d[f"{name}_b64"] = base64.b64encode(raw).decode("ascii")
    return json.dumps(d)


def _emit(result: Any, as_json: bool, streamed: bool = False) -> int:
    try:
        if as_json:
            sys.stdout.write(_json_result(result) + "\n")
            sys.stdout.flush()
        elif not streamed:
            sys.stdout.buffer.write(result.stdout_bytes)
            sys.stdout.buffer.flush()
            sys.stderr.buffer.write(result.stderr_bytes)
            sys.stderr.buffer.flush()
    except BrokenPipeError:
        _stdout_gone.set()
        _silence(1)
    if _stdout_gone.is_set():
        return EXIT_SIGPIPE
    if result.timed_out:
        try:
            sys.stderr.write("agentic-bash: timed out"
                             + (f" after {result.duration:.3g} s" if result.duration else "") + "\n")
            sys.stderr.flush()
        except BrokenPipeError:
            _silence(2)
        return EXIT_TIMEOUT
    return result.exit_code


# Set once the reader of our stdout has gone (`agentic-bash run ... | head -1`): the run is
# stopped, as the writer in `bash -c ... | head` dies of SIGPIPE, and the status is 141.
_stdout_gone = threading.Event()


def _silence(fd: int) -> None:
    """Point ``fd`` at /dev/null, so buffered output left for it at exit cannot fail again."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, fd)
        os.close(null)
    except OSError:
        pass


def _live_writer(fd: int, chunk: bytes, on_gone: Callable[[], None] | None = None) -> None:
    """Output as it is produced, flushed at once so stdout and stderr keep their order; when
    stdout's reader has gone, ``on_gone()`` is called once (it stops the run)."""
    if fd == 1 and _stdout_gone.is_set():
        return
    stream = sys.stdout.buffer if fd == 1 else sys.stderr.buffer
    try:
        stream.write(chunk)
        stream.flush()
    except BrokenPipeError:
        _silence(fd)
        if fd == 1 and not _stdout_gone.is_set():
            _stdout_gone.set()
            if on_gone is not None:
                on_gone()


def _host_stdin() -> Any:
    """The host's stdin for ``run`` when it is not a terminal (like bash), else None."""
    try:
        if sys.stdin is None or sys.stdin.isatty():
            return None
        return sys.stdin.buffer
    except (ValueError, OSError):   # closed
        return None


def _on_terminal(as_json: bool) -> bool:
    """True when a person runs us at a terminal (stdin, stdout and stderr all one): the run
    then gets a terminal of its own, as `bash -c` has the person's (read, vim, python3 and
    `[ -t 0 ]` work; Ctrl-C is the interrupt character typed at it)."""
    if as_json:
        return False
    try:
        return all(f is not None and f.isatty() for f in (sys.stdin, sys.stdout, sys.stderr))
    except (ValueError, OSError):
        return False


def _script_with_args(script: str, args: list[str]) -> str:
    # `set --` on the script's first line keeps LINENO of every later line unchanged.
    if not args:
        return script
    return "set -- " + " ".join(shlex.quote(a) for a in args) + "; " + script


def _run_streaming(sb: Any, script: str, as_json: bool, stdin: Any, terminal: bool = False) -> Any:
    """One run; Ctrl-C (SIGINT) interrupts the script, which then ends with status 130 as
    under bash, and the sandbox is closed normally. With ``terminal`` the run has a
    pseudo-terminal relayed to ours (see _on_terminal)."""
    if terminal:
        from .repl import _run_on_terminal
        interrupted = threading.Event()   # a SIGINT from elsewhere: Ctrl-C typed at the run
        old_int = signal.signal(signal.SIGINT, lambda *_: interrupted.set())
        try:
            return _run_on_terminal(sb, script, sys.stdin.fileno(), sys.stdout.fileno(),
                                    interrupted, bytearray())
        finally:
            signal.signal(signal.SIGINT, old_int)
    def on_sigint(signum: int, frame: Any) -> None:
        # from a thread: the handler may run while this thread holds the channel's lock
        threading.Thread(target=sb.interrupt, daemon=True).start()
    old = None
    if threading.current_thread() is threading.main_thread():
        old = signal.signal(signal.SIGINT, on_sigint)
    try:
        if as_json:
            return sb.run(script, stdin=stdin)
        def gone() -> None:
            threading.Thread(target=sb.interrupt, daemon=True).start()
        return sb.run_stream(script, stdin=stdin,
                             on_stdout=lambda c: _live_writer(1, c, gone),
                             on_stderr=lambda c: _live_writer(2, c))
    finally:
        if old is not None:
            signal.signal(signal.SIGINT, old)


# ---------------------------------------------------------------- commands
JsonOpt = typer.Option(False, "--json", help="Print the Result as JSON (output collected)")


@app.command(cls=_Command, context_settings={"allow_interspersed_args": False})
@sandbox_options
def run(
    ctx: typer.Context,
    file: Optional[str] = typer.Argument(None, help="Host script file to run, like `bash FILE` ('-': read the script from stdin)"),
    args: list[str] = typer.Argument(None, help="Arguments for FILE ($1, $2, ...)"),
    cmd: Optional[str] = typer.Option(None, "--cmd", "-c",
                                      help="Script text to run (arguments after --)"),
    as_json: bool = JsonOpt,
    *, opts: SandboxOptions,
) -> None:
    """Run a script (--cmd) or a host FILE in a fresh sandbox; its exit code becomes ours.

    Output streams as it is produced; stdin is passed through when it is not a terminal.
    FILE's directory is mounted read-only at the same path, so `source "$(dirname "$0")/x"`
    works."""
    args = list(args or [])
    operands = [file, *args] if file is not None else []
    if cmd is None and file is None:
        _usage_error("give --cmd SCRIPT or FILE", "FILE")
    extra: dict[str, Any] = {}
    script_on_stdin = False
    if cmd is not None:
        after = ctx.meta.get("agentic_bash.after_dashdash")
        if operands and operands != after:
            _usage_error(f"--cmd and FILE ({operands[0]!r}) are mutually exclusive "
                         "(arguments for --cmd go after --)", "'--cmd' / '-c'")
        script, args = cmd, operands
        name = None
    elif file == "-":
        # `bash -`: the script is read from stdin (which it then no longer has)
        script = sys.stdin.buffer.read().decode("utf-8", "surrogateescape") if sys.stdin else ""
        name = None
        script_on_stdin = True
    else:
        try:
            script = Path(file).read_bytes().decode("utf-8", "surrogateescape")  # type: ignore[arg-type]
        except OSError as exc:
            typer.echo(f"agentic-bash: {file}: {exc.strerror}", err=True)
            raise typer.Exit(127 if isinstance(exc, FileNotFoundError) else 126) from None
        name = file
    try:
        if name is not None:
            name, opts = _script_file_setup(name, opts)
        with open_sandbox(opts, extra=extra) as sb:
            if name is not None:
                state = sb.get_state()
                state["script_name"] = name
                sb.set_state(state)
            result = _run_streaming(sb, _script_with_args(script, args), as_json,
                                    None if script_on_stdin else _host_stdin(),
                                    terminal=not script_on_stdin and _on_terminal(as_json))
    except SandboxError as exc:
        typer.echo(f"agentic-bash: sandbox error: {exc}", err=True)
        raise typer.Exit(EXIT_SANDBOX) from None
    raise typer.Exit(_emit(result, as_json, streamed=not as_json))


def _script_file_setup(name: str, opts: SandboxOptions) -> tuple[str, SandboxOptions]:
    """``run FILE``: $0 and BASH_SOURCE become FILE's path; outside -i none its directory is
    mounted read-only at the same absolute path (and $0 is that path), so sibling files can be
    sourced with `source "$(dirname "$0")/lib.sh"`."""
    if opts["isolation"] == "none":
        return name, opts
    path = os.path.abspath(name)
    directory = os.path.dirname(path)
    o = SandboxOptions(opts)
    taken = [parse_mount(m)[0] for m in o.get("mount") or []]
    if not any(directory == t or directory.startswith(t.rstrip("/") + "/") for t in taken):
        src = _script_dir_source(directory, path)
        o["mount"] = [*(o.get("mount") or []), f"{directory}={src}:ro"]
    return path, o


# (attack10) names whose presence marks a directory as holding credentials: `run ~/x.sh`
# mounted the whole home, and the sandbox read ~/.ssh/id_rsa
_CREDENTIAL_NAMES = frozenset((
    ".ssh", ".gnupg", ".aws", ".azure", ".kube", ".docker", ".netrc", ".git-credentials",
    ".pypirc", ".npmrc", ".env", ".config", ".password-store", ".vault-token", ".bash_history",
    ".git"))


def _script_dir_source(directory: str, path: str) -> str:
    """What is mounted at FILE's directory: the directory itself, or (a home, the root, or a
    directory holding credential files such as .ssh, .aws, .env, .git) a private copy of
    its top-level non-hidden regular files, FILE included, removed at exit."""
    try:
        names = set(os.listdir(directory))
    except OSError:
        names = set()
    home = os.path.realpath(os.path.expanduser("~"))
    if (os.path.realpath(directory) not in (home, "/")
            and not names & _CREDENTIAL_NAMES):
        return directory
    import atexit
    import shutil
    import tempfile
    copy = tempfile.mkdtemp(prefix="agentic-bash-script-")
    atexit.register(shutil.rmtree, copy, True)
    kept = 0
    for n in sorted(names):
        f = os.path.join(directory, n)
        if n.startswith(".") or not os.path.isfile(f) or os.path.getsize(f) > 1 << 20:
            if os.path.realpath(f) != os.path.realpath(path):
                continue
        if kept >= 200 and os.path.realpath(f) != os.path.realpath(path):
            continue
        try:
            shutil.copyfile(f, os.path.join(copy, n))
            kept += 1
        except OSError:
            pass
    os.chmod(copy, 0o755)
    typer.echo(f"agentic-bash: {directory} holds credentials or is a home: only its "
               f"top-level files are visible in the sandbox, not its dot-files or "
               f"subdirectories", err=True)
    return copy


@app.command()
@sandbox_options
def shell(
    history_file: Optional[str] = typer.Option(None, "--history-file",
                                               help="REPL history (default ~/.agentic_bash_history)"),
    *, opts: SandboxOptions,
) -> None:
    """An interactive REPL on one persistent sandbox session."""
    from .repl import repl

    try:
        sb = open_sandbox(opts)
    except SandboxError as exc:
        typer.echo(f"agentic-bash: sandbox error: {exc}", err=True)
        raise typer.Exit(EXIT_SANDBOX) from None
    with sb:
        code = repl(sb, history_file=history_file)
    raise typer.Exit(code)


def _snapshot_out(value: Optional[str]) -> Optional[str]:
    """--out must name a file in an existing, writable directory: checked before the script
    runs, so a typo does not cost the session it would have saved."""
    if value is None:
        return None
    if not value:
        raise typer.BadParameter("empty; name the snapshot file to write")
    if os.path.isdir(value):
        raise typer.BadParameter(f"{value!r} is a directory; name the snapshot file to write")
    parent = os.path.dirname(os.path.abspath(value))
    if not os.path.isdir(parent):
        raise typer.BadParameter(f"{value!r}: no such directory {parent}")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise typer.BadParameter(f"{value!r}: directory {parent} is not writable")
    return value


def _save(sb: Any, out: str, exclude_env: list[str]) -> None:
    try:
        sb.snapshot(out, exclude_env=exclude_env)   # atomic: temp file + rename
    except OSError as exc:
        raise SandboxError(f"cannot write snapshot {out}: {exc.strerror or exc}") from None


def _run_and_save(sb: Any, cmd: Optional[str], out: Optional[str], exclude_env: list[str],
                  as_json: bool) -> int:
    code = 0
    if cmd is not None:
        code = _emit(_run_streaming(sb, cmd, as_json, _host_stdin(), terminal=_on_terminal(as_json)),
                     as_json, streamed=not as_json)
    if out is not None:
        _save(sb, out, exclude_env)
    return code


ExcludeEnvOpt = typer.Option([], "--exclude-env", help="Variable kept out of the snapshot (repeatable)")


@app.command()
@sandbox_options
def snapshot(
    dest: Optional[str] = typer.Argument(None, metavar="[OUT]", callback=_snapshot_out,
                                         help="Snapshot file to write (or --out)"),
    out: Optional[str] = typer.Option(None, "--out", "-o", callback=_snapshot_out,
                                      help="Snapshot file to write (atomically)"),
    from_: Optional[str] = typer.Option(None, "--from", help="Start from this snapshot"),
    cmd: Optional[str] = typer.Option(None, "--cmd", "-c", help="Script to run before saving"),
    exclude_env: list[str] = ExcludeEnvOpt,
    as_json: bool = JsonOpt,
    *, opts: SandboxOptions,
) -> None:
    """Run --cmd in a sandbox (restored from --from if given) and write its snapshot to --out;
    the script's exit code becomes ours."""
    if (dest is None) == (out is None):
        raise typer.BadParameter("give the snapshot file to write once: snapshot OUT or snapshot --out OUT",
                                 param_hint="OUT")
    try:
        with open_sandbox(opts, snapshot=from_) as sb:
            code = _run_and_save(sb, cmd, out if out is not None else dest, exclude_env, as_json)
    except SandboxError as exc:
        typer.echo(f"agentic-bash: sandbox error: {exc}", err=True)
        raise typer.Exit(EXIT_SANDBOX) from None
    raise typer.Exit(code)


@app.command()
@sandbox_options
def restore(
    snapshot: Optional[str] = typer.Argument(None, metavar="[SNAPSHOT]",
                                             help="Snapshot file to resume (or --in)"),
    in_: Optional[str] = typer.Option(None, "--in", help="Snapshot file to resume"),
    cmd: Optional[str] = typer.Option(None, "--cmd", "-c", help="Script to run (else the REPL opens)"),
    out: Optional[str] = typer.Option(None, "--out", "-o", callback=_snapshot_out,
                                      help="Save the session here afterwards"),
    exclude_env: list[str] = ExcludeEnvOpt,
    as_json: bool = JsonOpt,
    history_file: Optional[str] = typer.Option(None, "--history-file", help="REPL history file"),
    *, opts: SandboxOptions,
) -> None:
    """Resume a snapshot: run --cmd (and save to --out), or open the REPL on it."""
    if (snapshot is None) == (in_ is None):
        raise typer.BadParameter("give the snapshot file once: restore SNAPSHOT or restore --in SNAPSHOT",
                                 param_hint="SNAPSHOT")
    try:
        with open_sandbox(opts, snapshot=in_ if in_ is not None else snapshot) as sb:
            if cmd is None:
                from .repl import repl

                code = repl(sb, history_file=history_file)
                if out is not None:
                    _save(sb, out, exclude_env)
            else:
                code = _run_and_save(sb, cmd, out, exclude_env, as_json)
    except SandboxError as exc:
        typer.echo(f"agentic-bash: sandbox error: {exc}", err=True)
        raise typer.Exit(EXIT_SANDBOX) from None
    raise typer.Exit(code)


# ---------------------------------------------------------------- mcp (tools helper, issue 17)
@app.command()
@sandbox_options
def mcp(
    max_bytes: int = typer.Option(16384, "--max-bytes", min=256,
                                  help="Budget of one tool answer in bytes (long output keeps its start and end)"),
    *, opts: SandboxOptions,
) -> None:
    """Serve the agent tools (bash, read_file, write_file, list_files, edit_file) and the
    workdir's files over MCP on stdin/stdout, on one persistent sandbox session."""
    from .tools.mcp_server import run_stdio
    from .tools.render import Renderer

    try:
        code = run_stdio(lambda: open_sandbox(opts), renderer=Renderer(max_bytes=max_bytes))
    except SandboxError as exc:
        typer.echo(f"agentic-bash: sandbox error: {exc}", err=True)
        raise typer.Exit(EXIT_SANDBOX) from None
    except ImportError as exc:
        typer.echo(f"agentic-bash: {exc}", err=True)
        raise typer.Exit(EXIT_SANDBOX) from None
    raise typer.Exit(code)


# `serve` (helper serve): the subcommand lives in server/command.py
def _register_serve() -> None:
    from .server.command import register_serve
    register_serve(app, sandbox_options, sandbox_kwargs)


_register_serve()


image_app = typer.Typer(help="Named images: a session layer built once, shared read-only by many sandboxes.",
                        no_args_is_help=True, rich_markup_mode=None)
app.add_typer(image_app, name="image")


@image_app.command("build")
@sandbox_options
def image_build(
    name: str = typer.Argument(..., help="Image name ([A-Za-z0-9][A-Za-z0-9._-]*)"),
    cmd: str = typer.Option(..., "--cmd", "-c", help="Build script, e.g. 'pip install numpy pandas'"),
    *, opts: SandboxOptions,
) -> None:
    """Run --cmd in a fresh sandbox and keep what it wrote as image NAME."""
    from .packages.images import build_image
    kw = sandbox_kwargs(opts)
    timeout = kw["limits"].timeout if opts.get("timeout") is not None else 1800
    spinner: Any = None
    if sys.stderr.isatty():
        from rich.console import Console
        spinner = Console(stderr=True).status(f"building image {name}: {cmd}")
        spinner.start()
    try:
        img = build_image(name, cmd, timeout=timeout, **kw)
    except (SandboxError, ValueError) as exc:
        typer.echo(f"agentic-bash: image build: {exc}", err=True)
        raise typer.Exit(1) from None
    finally:
        if spinner is not None:
            spinner.stop()
    pk = ", ".join(f"{p.name}=={p.version} ({p.manager})" for p in img.packages) or "no packages"
    typer.echo(f"{img.name}: {img.size} bytes, {pk}")


@image_app.command("ls")
def image_ls(as_json: bool = typer.Option(False, "--json", help="One JSON document")) -> None:
    """List the built images."""
    import datetime
    from .packages.images import list_images
    imgs = list_images()
    if as_json:
        typer.echo(json.dumps([{"name": i.name, "size": i.size, "created": i.created,
                                "packages": [p.to_json() for p in i.packages], "path": i.root}
                               for i in imgs]))
        return
    for i in imgs:
        when = datetime.datetime.fromtimestamp(i.created).strftime("%Y-%m-%d %H:%M")
        typer.echo(f"{i.name}\t{i.size}\t{when}\t{len(i.packages)} packages")


@image_app.command("rm")
def image_rm(names: list[str] = typer.Argument(..., help="Images to remove")) -> None:
    """Remove images (sandboxes already running on one keep it until they close)."""
    from .packages.images import remove_image
    code = 0
    for n in names:
        try:
            remove_image(n)
        except (SandboxError, ValueError) as exc:
            typer.echo(f"agentic-bash: image rm: {exc}", err=True)
            code = 1
    raise typer.Exit(code)


def _exit_on_signal(signum: int, frame: Any) -> None:
    raise SystemExit(128 + signum)


def main() -> None:
    # SIGTERM and SIGHUP (the terminal closed) unwind like an exit with bash's 128+N, so the
    # sandbox is closed (its session directory removed) rather than left to the default
    # action; `serve` and `mcp` put their own handlers in place while they serve
    for sig in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(sig) is signal.SIG_DFL:
            signal.signal(sig, _exit_on_signal)
    app(prog_name="agentic-bash")
