"""The ``agentic-bash`` command line: run, shell, snapshot, restore."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any, Optional

import typer

from .errors import SandboxError

__all__ = ["app", "main"]

app = typer.Typer(
    add_completion=False, no_args_is_help=True,
    help="A stateful, isolated bash for AI agents.",
)

EXIT_TIMEOUT = 124   # like timeout(1)
EXIT_SANDBOX = 125   # the sandbox itself failed (not the script)


def _parse_env(items: list[str]) -> dict[str, str]:
    env: dict[str, str] = {}
    for item in items:
        if "=" not in item:
            raise typer.BadParameter(f"expected K=V, got {item!r}", param_hint="--env")
        k, v = item.split("=", 1)
        env[k] = v
    return env


def _parse_mounts(items: list[str]) -> dict[str, Any]:
    from .session import Mount

    mounts: dict[str, Any] = {}
    for item in items:
        if "=" not in item:
            raise typer.BadParameter(f"expected DEST=SRC[:ro|cow|rw], got {item!r}", param_hint="--mount")
        dest, src = item.split("=", 1)
        mode = "cow"
        head, sep, tail = src.rpartition(":")
        if sep and tail in ("ro", "cow", "rw"):
            src, mode = head, tail
        if not Path(src).is_dir():
            raise typer.BadParameter(f"{src}: not a directory", param_hint="--mount")
        mounts[dest] = Mount(str(Path(src).resolve()), mode=mode)
    return mounts


def _make_sandbox(isolation: str, env: list[str], workdir: str, mount: list[str],
                  timeout: float | None, strict: bool = False):
    from .limits import Limits
    from .session import Sandbox

    limits = Limits() if timeout is None else Limits(timeout=timeout)
    return Sandbox(isolation=isolation, env=_parse_env(env), workdir=workdir,
                   mounts=_parse_mounts(mount) or None, limits=limits, strict=strict)


def _emit(result, as_json: bool) -> int:
    if as_json:
        sys.stdout.write(json.dumps(result.to_dict()) + "\n")
    else:
        sys.stdout.buffer.write(result.stdout_bytes)
        sys.stdout.buffer.flush()
        sys.stderr.buffer.write(result.stderr_bytes)
        sys.stderr.buffer.flush()
    if result.timed_out:
        return EXIT_TIMEOUT
    return result.exit_code


def _script_with_args(script: str, args: list[str]) -> str:
    # `set --` on the script's first line keeps LINENO of every later line unchanged.
    if not args:
        return script
    return "set -- " + " ".join(shlex.quote(a) for a in args) + "; " + script


IsolationOpt = typer.Option("auto", "--isolation", "-i", help="virtual | namespace | landlock | none | auto")
EnvOpt = typer.Option([], "--env", "-e", help="K=V added to the sandbox environment (repeatable)")
WorkdirOpt = typer.Option("/workspace", "--workdir", "-w", help="Initial working directory inside the sandbox")
MountOpt = typer.Option([], "--mount", "-m", help="DEST=SRC[:ro|cow|rw] host directory mount (repeatable)")
TimeoutOpt = typer.Option(None, "--timeout", "-t", help="Seconds before the run is stopped (exit 124)")


@app.command(context_settings={"allow_interspersed_args": False, "ignore_unknown_options": True})
def run(
    file: Optional[str] = typer.Argument(None, help="Host script file to run, like `bash FILE`"),
    args: list[str] = typer.Argument(None, help="Arguments for FILE ($1, $2, ...)"),
    cmd: Optional[str] = typer.Option(None, "--cmd", "-c", help="Script text to run"),
    isolation: str = IsolationOpt,
    timeout: Optional[float] = TimeoutOpt,
    env: list[str] = EnvOpt,
    workdir: str = WorkdirOpt,
    mount: list[str] = MountOpt,
    as_json: bool = typer.Option(False, "--json", help="Print the Result as JSON"),
    strict: bool = typer.Option(False, "--strict", help="Refuse to start if isolation is degraded"),
) -> None:
    """Run a script (--cmd) or a host FILE in a fresh sandbox; its exit code becomes ours."""
    args = list(args or [])
    if cmd is None and file is None:
        typer.echo("agentic-bash run: give --cmd SCRIPT or FILE", err=True)
        raise typer.Exit(2)
    if cmd is not None and file is not None:
        args = [file, *args]   # like `bash -c SCRIPT arg0 arg1`: extra operands are arguments
    if cmd is None:
        try:
            script = Path(file).read_bytes().decode("utf-8", "surrogateescape")  # type: ignore[arg-type]
        except OSError as exc:
            typer.echo(f"agentic-bash: {file}: {exc.strerror}", err=True)
            raise typer.Exit(127 if isinstance(exc, FileNotFoundError) else 126) from None
    else:
        script = cmd
    try:
        with _make_sandbox(isolation, env, workdir, mount, timeout, strict) as sb:
            result = sb.run(_script_with_args(script, args))
    except SandboxError as exc:
        typer.echo(f"agentic-bash: sandbox error: {exc}", err=True)
        raise typer.Exit(EXIT_SANDBOX) from None
    raise typer.Exit(_emit(result, as_json))


@app.command()
def shell(
    isolation: str = IsolationOpt,
    env: list[str] = EnvOpt,
    workdir: str = WorkdirOpt,
    mount: list[str] = MountOpt,
    timeout: Optional[float] = TimeoutOpt,
    history_file: Optional[str] = typer.Option(None, "--history-file", help="REPL history (default ~/.agentic_bash_history)"),
) -> None:
    """An interactive REPL on one persistent sandbox session."""
    from .repl import repl

    try:
        sb = _make_sandbox(isolation, env, workdir, mount, timeout)
    except SandboxError as exc:
        typer.echo(f"agentic-bash: sandbox error: {exc}", err=True)
        raise typer.Exit(EXIT_SANDBOX) from None
    with sb:
        code = repl(sb, history_file=history_file)
    raise typer.Exit(code)


def _sandbox_from(src: Optional[str], isolation: str, env: list[str], workdir: str, mount: list[str],
                  timeout: float | None, strict: bool):
    if src is None:
        return _make_sandbox(isolation, env, workdir, mount, timeout, strict)
    from .limits import Limits
    from .session import Sandbox

    limits = Limits() if timeout is None else Limits(timeout=timeout)
    return Sandbox.from_snapshot(src, isolation=isolation, env=_parse_env(env), workdir=workdir,
                                 mounts=_parse_mounts(mount) or None, limits=limits, strict=strict)


def _run_and_save(sb, cmd: Optional[str], out: Optional[str], exclude_env: list[str],
                  as_json: bool) -> int:
    code = 0
    if cmd is not None:
        code = _emit(sb.run(cmd), as_json)
    if out is not None:
        sb.snapshot(out, exclude_env=exclude_env)   # atomic: temp file + rename
    return code


ExcludeEnvOpt = typer.Option([], "--exclude-env", help="Variable kept out of the snapshot (repeatable)")


@app.command()
def snapshot(
    out: str = typer.Option(..., "--out", "-o", help="Snapshot file to write (atomically)"),
    from_: Optional[str] = typer.Option(None, "--from", help="Start from this snapshot"),
    cmd: Optional[str] = typer.Option(None, "--cmd", "-c", help="Script to run before saving"),
    isolation: str = IsolationOpt,
    env: list[str] = EnvOpt,
    workdir: str = WorkdirOpt,
    mount: list[str] = MountOpt,
    timeout: Optional[float] = TimeoutOpt,
    exclude_env: list[str] = ExcludeEnvOpt,
    as_json: bool = typer.Option(False, "--json", help="Print the Result as JSON"),
    strict: bool = typer.Option(False, "--strict", help="Refuse to start if isolation is degraded"),
) -> None:
    """Run --cmd in a sandbox (restored from --from if given) and write its snapshot to --out;
    the script's exit code becomes ours."""
    try:
        with _sandbox_from(from_, isolation, env, workdir, mount, timeout, strict) as sb:
            code = _run_and_save(sb, cmd, out, exclude_env, as_json)
    except SandboxError as exc:
        typer.echo(f"agentic-bash: sandbox error: {exc}", err=True)
        raise typer.Exit(EXIT_SANDBOX) from None
    raise typer.Exit(code)


@app.command()
def restore(
    in_: str = typer.Option(..., "--in", help="Snapshot file to resume"),
    cmd: Optional[str] = typer.Option(None, "--cmd", "-c", help="Script to run (else the REPL opens)"),
    out: Optional[str] = typer.Option(None, "--out", "-o", help="Save the session here afterwards"),
    isolation: str = IsolationOpt,
    env: list[str] = EnvOpt,
    workdir: str = WorkdirOpt,
    mount: list[str] = MountOpt,
    timeout: Optional[float] = TimeoutOpt,
    exclude_env: list[str] = ExcludeEnvOpt,
    as_json: bool = typer.Option(False, "--json", help="Print the Result as JSON"),
    strict: bool = typer.Option(False, "--strict", help="Refuse to start if isolation is degraded"),
    history_file: Optional[str] = typer.Option(None, "--history-file", help="REPL history file"),
) -> None:
    """Resume a snapshot: run --cmd (and save to --out), or open the REPL on it."""
    try:
        with _sandbox_from(in_, isolation, env, workdir, mount, timeout, strict) as sb:
            if cmd is None:
                from .repl import repl

                code = repl(sb, history_file=history_file)
                if out is not None:
                    sb.snapshot(out, exclude_env=exclude_env)
            else:
                code = _run_and_save(sb, cmd, out, exclude_env, as_json)
    except SandboxError as exc:
        typer.echo(f"agentic-bash: sandbox error: {exc}", err=True)
        raise typer.Exit(EXIT_SANDBOX) from None
    raise typer.Exit(code)


# ---------------------------------------------------------------- mcp (tools helper, issue 17)
@app.command()
def mcp(
    isolation: str = IsolationOpt,
    env: list[str] = EnvOpt,
    workdir: str = WorkdirOpt,
    mount: list[str] = MountOpt,
    timeout: Optional[float] = TimeoutOpt,
    strict: bool = typer.Option(False, "--strict", help="Refuse to start if isolation is degraded"),
    max_bytes: int = typer.Option(16384, "--max-bytes", min=256,
                                  help="Budget of one tool answer in bytes (long output keeps its start and end)"),
) -> None:
    """Serve the agent tools (bash, read_file, write_file, list_files, edit_file) and the
    workspace files over MCP on stdin/stdout, on one persistent sandbox session."""
    from .tools.mcp_server import run_stdio
    from .tools.render import Renderer

    try:
        code = run_stdio(lambda: _make_sandbox(isolation, env, workdir, mount, timeout, strict),
                         renderer=Renderer(max_bytes=max_bytes))
    except SandboxError as exc:
        typer.echo(f"agentic-bash: sandbox error: {exc}", err=True)
        raise typer.Exit(EXIT_SANDBOX) from None
    except ImportError as exc:
        typer.echo(f"agentic-bash: {exc}", err=True)
        raise typer.Exit(EXIT_SANDBOX) from None
    raise typer.Exit(code)


def main() -> None:
    app(prog_name="agentic-bash")
