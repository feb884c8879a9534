"""Start the runtime or the sessions service under uvicorn (what ``agentic-bash serve`` calls)."""

from __future__ import annotations

import logging
import signal
import socket
import threading
from typing import Any, Callable

__all__ = ["serve_runtime", "serve_sessions"]


GRACE_SECONDS = 5.0
"""On SIGTERM/SIGINT/SIGHUP, requests in flight get this long to finish; a command still
running at 3/5 of it is interrupted, so its request is answered before uvicorn gives up."""


def _listen(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    return sock


def _uvicorn(app: Any, host: str, port: int, log_level: str,
             on_exit: Callable[[], None] | None = None, rest_port: int | None = None) -> None:
    try:
        import uvicorn
    except ImportError:  # pragma: no cover - the [server] extra is missing
        raise SystemExit("agentic-bash serve needs the server extra: pip install 'agentic-bash[server]'")
    logging.basicConfig(level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    sock = _listen(host, port)
    socks = [sock]
    if rest_port is not None and (rest_port != port or port == 0):
        # sandboxd's REST API on its own port too (the same app: /v1/... is served on both)
        try:
            socks.append(_listen(host, rest_port))
        except OSError:
            sock.close()
            raise
    # the ports actually bound (useful with 0), each on one line a test or a script can read
    # (printed once all are bound: "listening" means every listener is there)
    print(f"agentic-bash serve: listening on http://{host}:{sock.getsockname()[1]}", flush=True)
    if len(socks) > 1:
        print(f"agentic-bash serve: sandboxd REST on http://{host}:{socks[1].getsockname()[1]}", flush=True)
    config = uvicorn.Config(app, log_level=log_level, access_log=log_level == "debug",
                            timeout_graceful_shutdown=GRACE_SECONDS)

    class Server(uvicorn.Server):   # type: ignore[misc]
        def handle_exit(self, sig: int, frame: Any) -> None:
            first = not self.should_exit
            super().handle_exit(sig, frame)
            if first and on_exit is not None:
                t = threading.Timer(GRACE_SECONDS * 0.6, on_exit)
                t.daemon = True
                t.start()
    server = Server(config)
    # uvicorn stops gracefully on SIGTERM and then re-raises it to the handler it found: make
    # that handler an exception, so the caller's cleanup (closing sandboxes, snapshotting
    # sessions) runs instead of the process dying on the default action
    signal.signal(signal.SIGTERM, _terminated)

    def hangup(signum: int, frame: Any) -> None:
        # SIGHUP stops the server as SIGTERM does (uvicorn leaves it to the default action,
        # which skipped the cleanup); uvicorn raises it again at the end: then it is 129
        signal.signal(signal.SIGHUP, _terminated)
        server.handle_exit(signum, frame)
    signal.signal(signal.SIGHUP, hangup)
    server.run(sockets=socks)


def _terminated(signum: int, frame: Any) -> None:
    raise SystemExit(128 + signum)


def _stop_on_signals() -> None:
    """Until uvicorn runs: SIGTERM and SIGHUP unwind (SystemExit) so the sandbox being set up
    is closed, not abandoned by the default action."""
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, _terminated)


def serve_runtime(*, host: str, port: int, base_dir: str, sandbox_kwargs: dict[str, Any],
                  max_output: int, max_body: int = 512 << 20, log_level: str = "warning",
                  rest_port: int | None = None, grpc_port: int | None = None) -> None:
    """The agent-sandbox runtime contract over one Sandbox (created before listening, so the
    readiness probe passes only once the sandbox is up): the python-runtime routes and
    sandboxd's /v1 REST routes on ``port`` (and on ``rest_port`` if given), sandboxd's gRPC
    ProcessService on ``grpc_port`` if given (0: any free port; each is printed)."""
    from .runtime import RuntimeHost, create_app, default_timeout, direct_files, sandbox_factory
    _stop_on_signals()
    make, inside = sandbox_factory(base_dir, **sandbox_kwargs)
    files = direct_files(base_dir, **sandbox_kwargs)
    host_obj = RuntimeHost(make)
    host_obj.start()
    grpc_server = None
    try:
        if grpc_port is not None:
            from .process import ProcessService, serve_process_service
            svc = ProcessService(host_obj, inside, files, max_output=max_output,
                                 default_timeout=default_timeout())
            grpc_server, bound = serve_process_service(svc, host, grpc_port)
            print(f"agentic-bash serve: sandboxd gRPC ProcessService on {host}:{bound}", flush=True)
        _uvicorn(create_app(host_obj, max_output=max_output, max_body=max_body, sandbox_dir=inside,
                            files=files),
                 host, port, log_level, on_exit=host_obj.stop, rest_port=rest_port)
    finally:
        host_obj.stop()
        if grpc_server is not None:
            grpc_server.stop(grace=1.0).wait(3.0)
        host_obj.close()


def serve_sessions(*, host: str, port: int, db: str, api_key: str, sandbox_kwargs: dict[str, Any],
                   default_ttl: float, max_sessions: int, reap_interval: float,
                   pool_size: int = 0, max_body: int = 512 << 20, log_level: str = "warning") -> None:
    """The multi-session service (``/v1/sessions``), its store in SQLite file ``db``."""
    from .sessions import SessionManager, create_sessions_app
    _stop_on_signals()
    mgr = SessionManager(db, sandbox_defaults=sandbox_kwargs, default_ttl=default_ttl,
                         max_sessions=max_sessions, reap_interval=reap_interval, pool_size=pool_size)
    mgr.start()
    try:
        _uvicorn(create_sessions_app(mgr, api_key=api_key, max_body=max_body), host, port, log_level)
    finally:
        mgr.close()
