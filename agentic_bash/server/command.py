"""The ``agentic-bash serve`` subcommand (registered on the CLI's typer app by cli.py)."""

from __future__ import annotations

import os
import secrets
import sys
from typing import Any, Callable, Optional

import typer

__all__ = ["register_serve"]


def _serve(opts: dict[str, Any], to_kwargs: Callable[[dict[str, Any]], dict[str, Any]], host: str,
           port: int, base_dir: Optional[str], max_output: int, sessions: bool, db: Optional[str],
           api_key: Optional[str], ttl: float, max_sessions: int, pool_size: int,
           max_body: int, log_level: str, rest_port: Optional[int] = None,
           grpc_port: Optional[int] = None) -> None:
    from ..errors import SandboxError
    kwargs = to_kwargs(opts)
    try:
        if sessions:
            from .launch import serve_sessions
            key = api_key or os.environ.get("AGENTIC_BASH_API_KEY", "")
            if not key:
                key = secrets.token_urlsafe(24)
                print(f"agentic-bash serve: no --api-key or AGENTIC_BASH_API_KEY; generated key: {key}",
                      file=sys.stderr, flush=True)
            serve_sessions(host=host, port=port, db=db or "agentic-bash-sessions.db", api_key=key,
                           sandbox_kwargs=kwargs, default_ttl=ttl, max_sessions=max_sessions,
                           reap_interval=min(30.0, max(0.2, ttl / 4)), pool_size=pool_size,
                           max_body=max_body, log_level=log_level)
        else:
            from .launch import serve_runtime
            from .runtime import default_base_dir
            kwargs.pop("workdir", None)   # /app is the initial cwd in the runtime contract
            if host not in ("127.0.0.1", "::1", "localhost"):
                # the runtime contract has no authentication (in a cluster, the agent-sandbox
                # router and NetworkPolicy decide who reaches the pod)
                print(f"agentic-bash serve: listening on {host} without authentication: whoever "
                      "reaches this port runs commands in the sandbox", file=sys.stderr, flush=True)
            serve_runtime(host=host, port=port, base_dir=base_dir or default_base_dir(),
                          sandbox_kwargs=kwargs, max_output=max_output, max_body=max_body,
                          log_level=log_level, rest_port=rest_port, grpc_port=grpc_port)
    except SandboxError as exc:
        typer.echo(f"agentic-bash serve: {exc}", err=True)
        raise typer.Exit(125) from None
    except OSError as exc:   # the address is taken, the db cannot be opened, ...
        typer.echo(f"agentic-bash serve: {exc.strerror or exc}", err=True)
        raise typer.Exit(1) from None


def _fallback_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """--isolation/--env/--mount/--timeout/--strict, for a CLI without a shared option group."""
    import functools
    import inspect
    extra = [
        ("isolation", str, typer.Option("auto", "--isolation", "-i", help="virtual | namespace | landlock | none | auto")),
        ("strict", bool, typer.Option(False, "--strict", help="Refuse to start if isolation is degraded")),
        ("env", list[str], typer.Option([], "--env", "-e", help="NAME=VALUE (repeatable)")),
        ("mount", list[str], typer.Option([], "--mount", "-m", help="DEST=SRC[:ro|cow|rw] (repeatable)")),
        ("timeout", Optional[float], typer.Option(None, "--timeout", "-t", help="Default seconds per run")),
    ]
    sig = inspect.signature(fn, eval_str=True)
    own = [p for p in sig.parameters.values() if p.name != "opts"]
    params = own + [inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, default=o, annotation=a)
                    for n, a, o in extra]

    @functools.wraps(fn)
    def wrapper(**kw: Any) -> Any:
        opts = {n: kw.pop(n) for n, _, _ in extra}
        return fn(opts=opts, **kw)
    wrapper.__signature__ = sig.replace(parameters=params)  # type: ignore[attr-defined]
    return wrapper


def _fallback_kwargs(opts: dict[str, Any]) -> dict[str, Any]:
    from ..limits import Limits
    env = {}
    for item in opts.get("env") or []:
        k, sep, v = item.partition("=")
        if not sep or not k:
            raise typer.BadParameter(f"expected NAME=VALUE, got {item!r}", param_hint="--env")
        env[k] = v
    mounts = {}
    for item in opts.get("mount") or []:
        dest, sep, src = item.partition("=")
        mode = "cow"
        head, colon, tail = src.rpartition(":")
        if colon and tail in ("ro", "cow", "rw"):
            src, mode = head, tail
        if not sep or not os.path.isdir(src):
            raise typer.BadParameter(f"{item!r}: expected DEST=SRC[:ro|cow|rw], SRC a directory",
                                     param_hint="--mount")
        mounts[dest] = (os.path.realpath(src), mode)
    kw: dict[str, Any] = {"isolation": opts.get("isolation") or "auto", "strict": bool(opts.get("strict"))}
    if env:
        kw["env"] = env
    if mounts:
        kw["mounts"] = mounts
    if opts.get("timeout") is not None:
        kw["limits"] = Limits(timeout=float(opts["timeout"]))
    return kw


def register_serve(app: typer.Typer, decorate: Callable[[Callable[..., Any]], Callable[..., Any]] | None = None,
                   to_kwargs: Callable[[dict[str, Any]], dict[str, Any]] | None = None) -> None:
    """Add ``serve`` to ``app``; ``decorate`` adds the shared sandbox options (passed to the
    command as ``opts``), ``to_kwargs`` turns them into Sandbox keyword arguments."""

    decorate = decorate or _fallback_options
    to_kwargs = to_kwargs or _fallback_kwargs

    @app.command()
    @decorate
    def serve(
        opts: Any = None,
        host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on"),
        port: int = typer.Option(8888, "--port", "-p", min=0, max=65535,
                                 help="Port to listen on (0: any free port, printed)"),
        base_dir: Optional[str] = typer.Option(
            None, "--base-dir",
            help="Host directory shown as /app, the initial cwd (default: $SANDBOX_BASE_DIR or /app)"),
        max_output: int = typer.Option(1 << 20, "--max-output", min=1024,
                                       help="Bytes kept per stream in a reply (head + tail)"),
        max_body: int = typer.Option(512 << 20, "--max-body", min=1,
                                     help="Bytes a request body (an upload) may have; larger is 413"),
        sessions: bool = typer.Option(False, "--sessions",
                                      help="Serve the multi-session API (/v1/sessions) instead"),
        db: Optional[str] = typer.Option(None, "--db", help="--sessions: SQLite session store file"),
        api_key: Optional[str] = typer.Option(
            None, "--api-key", help="--sessions: bearer key (default: $AGENTIC_BASH_API_KEY)"),
        ttl: float = typer.Option(1800.0, "--ttl", min=0.1,
                                  help="--sessions: default idle seconds before a session is reaped"),
        max_sessions: int = typer.Option(1000, "--max-sessions", min=1,
                                         help="--sessions: live sessions at most"),
        pool_size: int = typer.Option(
            0, "--pool-size", min=0,
            help="--sessions: sandboxes kept ready for sessions created with the server's options"),
        log_level: str = typer.Option("warning", "--log-level",
                                      help="debug | info | warning | error"),
        sandboxd: bool = typer.Option(False, "--sandboxd",
                                      help="Also serve sandboxd's API (KEP-539.2): REST on "
                                           "--rest-port, gRPC ProcessService on --grpc-port"),
        rest_port: Optional[int] = typer.Option(
            None, "--rest-port", min=0, max=65535,
            help="sandboxd REST port (default 8080 with --sandboxd; /v1 is on --port as well)"),
        grpc_port: Optional[int] = typer.Option(
            None, "--grpc-port", min=0, max=65535,
            help="sandboxd gRPC ProcessService port (default 9090 with --sandboxd)"),
    ) -> None:
        """Serve the kubernetes-sigs/agent-sandbox runtime HTTP contract (GET /, POST /execute,
        /upload, /download, /list, /exists; sandboxd's /v1/files, /v1/health, /v1/metadata) on
        one persistent bash session, with --sandboxd also sandboxd's gRPC ProcessService, or
        with --sessions a multi-session API behind a bearer key."""
        if sandboxd:
            rest_port = 8080 if rest_port is None else rest_port
            grpc_port = 9090 if grpc_port is None else grpc_port
        if sessions and (rest_port is not None or grpc_port is not None):
            raise typer.BadParameter("sandboxd's API is served by the runtime, not with --sessions",
                                     param_hint="--sandboxd/--rest-port/--grpc-port")
        _serve(dict(opts or {}), to_kwargs, host, port, base_dir, max_output, sessions, db,
               api_key, ttl, max_sessions, pool_size, max_body, log_level, rest_port, grpc_port)
