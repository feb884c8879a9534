"""Start the runtime or the sessions service under uvicorn (what ``agentic-bash serve`` calls)."""

from __future__ import annotations

import logging
import signal
import socket
from typing import Any

__all__ = ["serve_runtime", "serve_sessions"]


def _uvicorn(app: Any, host: str, port: int, log_level: str) -> None:
    try:
        import uvicorn
    except ImportError:  # pragma: no cover - the [server] extra is missing
        raise SystemExit("agentic-bash serve needs the server extra: pip install 'agentic-bash[server]'")
    logging.basicConfig(level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    # the port actually bound (useful with --port 0), on one line a test or a script can read
    print(f"agentic-bash serve: listening on http://{host}:{sock.getsockname()[1]}", flush=True)
    config = uvicorn.Config(app, log_level=log_level, access_log=log_level == "debug",
                            timeout_graceful_shutdown=5)
    server = uvicorn.Server(config)
    # uvicorn stops gracefully on SIGTERM and then re-raises it to the handler it found: make
    # that handler an exception, so the caller's cleanup (closing sandboxes, snapshotting
    # sessions) runs instead of the process dying on the default action
    signal.signal(signal.SIGTERM, _terminated)
    server.run(sockets=[sock])


def _terminated(signum: int, frame: Any) -> None:
    raise SystemExit(128 + signum)


def serve_runtime(*, host: str, port: int, base_dir: str, sandbox_kwargs: dict[str, Any],
                  max_output: int, max_body: int = 512 << 20, log_level: str = "warning") -> None:
    """The agent-sandbox runtime contract over one Sandbox (created before listening, so the
    readiness probe passes only once the sandbox is up)."""
    from .runtime import RuntimeHost, create_app, sandbox_factory
    make, inside = sandbox_factory(base_dir, **sandbox_kwargs)
    host_obj = RuntimeHost(make)
    host_obj.start()
    try:
        _uvicorn(create_app(host_obj, max_output=max_output, max_body=max_body, sandbox_dir=inside),
                 host, port, log_level)
    finally:
        host_obj.close()


def serve_sessions(*, host: str, port: int, db: str, api_key: str, sandbox_kwargs: dict[str, Any],
                   default_ttl: float, max_sessions: int, reap_interval: float,
                   pool_size: int = 0, max_body: int = 512 << 20, log_level: str = "warning") -> None:
    """The multi-session service (``/v1/sessions``), its store in SQLite file ``db``."""
    from .sessions import SessionManager, create_sessions_app
    mgr = SessionManager(db, sandbox_defaults=sandbox_kwargs, default_ttl=default_ttl,
                         max_sessions=max_sessions, reap_interval=reap_interval, pool_size=pool_size)
    mgr.start()
    try:
        _uvicorn(create_sessions_app(mgr, api_key=api_key, max_body=max_body), host, port, log_level)
    finally:
        mgr.close()
