"""sandboxd's gRPC ProcessService (Execute, Start, WriteStdin, SendSignal, ResizeTTY) over the runtime's Sandbox."""

# Contract: kubernetes-sigs/agent-sandbox packages/sandboxd spec/process/v1/process.proto and
# pkg/server/process.go (KEP-539.2); the official client's commands.run() calls Execute with
# ["/bin/sh", "-c", command], env_vars, cwd and the gRPC deadline as its command timeout.
# Messages are built from a descriptor written here (protobuf's message factory, in a pool of
# our own, so a client's generated process_pb2 in the same process does not clash) instead of
# vendoring generated code. Each process is a fresh subshell of the session (cd, exports and
# functions do not outlive it; files do), started in the root (/app) or a confined `cwd`,
# with `env_vars` over the session's environment: ["sh"|"bash", "-c", script, ...] runs the
# script with our bash, any other argv runs as one simple command. Differences on purpose:
# processes share the one session, so they run one at a time (a Start stream holds the
# session until its process exits; other calls queue behind it); SendSignal's SIGINT, SIGTERM
# and SIGKILL all interrupt the run (its exit code is ours, 130, where upstream's Go server
# reports -1 for a signalled child); Execute output past --max-output per stream is cut
# head+tail (a whole 4 MiB answer would exceed a gRPC client's default receive limit).

from __future__ import annotations

import itertools
import logging
import os
import posixpath
import queue
import shlex
import threading
from typing import Any, Iterator

from ..errors import SandboxCrashed, SandboxError
from .gate import Abandoned, Gate
from .hostfiles import HostFiles
from .paths import BadPath, Denied, confine

__all__ = ["ProcessService", "serve_process_service"]

log = logging.getLogger("agentic_bash.server")

_SERVICE = "process.v1.ProcessService"
_CHUNK = 64 << 10        # bytes per streamed output event at most
_SHELLS = {"sh", "bash", "dash"}
_SHELL_FLAGS = {"e": "set -e", "u": "set -u", "x": "set -x", "l": "", "c": ""}


def _messages() -> dict[str, Any]:
    """The process.v1 message classes, from a descriptor built here in a private pool."""
    from google.protobuf import descriptor_pb2, descriptor_pool, empty_pb2, message_factory
    F = descriptor_pb2.FieldDescriptorProto
    pool = descriptor_pool.DescriptorPool()
    pool.Add(descriptor_pb2.FileDescriptorProto.FromString(empty_pb2.DESCRIPTOR.serialized_pb))
    fd = descriptor_pb2.FileDescriptorProto(name="process/v1/process.proto",
                                            package="process.v1", syntax="proto3",
                                            dependency=["google/protobuf/empty.proto"])
    enum = fd.enum_type.add(name="Signal")
    for name, num in (("SIGNAL_UNSPECIFIED", 0), ("SIGNAL_SIGINT", 2), ("SIGNAL_SIGKILL", 9),
                      ("SIGNAL_SIGTERM", 15)):
        enum.value.add(name=name, number=num)

    def msg(name: str, fields: list[tuple[str, int, int, str | None]], oneofs: dict[str, list[str]] | None = None,
            repeated: tuple[str, ...] = (), optional: tuple[str, ...] = ()) -> Any:
        m = fd.message_type.add(name=name)
        index = {}
        # proto3 `optional` fields get a synthetic oneof each, after the real ones (as protoc
        # writes them): server reflection then shows the proto upstream publishes
        oneofs = {**(oneofs or {}), **{f"_{f}": [f] for f in optional}}
        for i, (oname, members) in enumerate(oneofs.items()):
            m.oneof_decl.add(name=oname)
            for f in members:
                index[f] = i
        for fname, num, ftype, tname in fields:
            f = m.field.add(name=fname, number=num, type=ftype,
                            label=F.LABEL_REPEATED if fname in repeated else F.LABEL_OPTIONAL)
            if tname:
                f.type_name = tname
            if fname in index:
                f.oneof_index = index[fname]
            if fname in optional:
                f.proto3_optional = True
        return m

    msg("PTY", [("cols", 1, F.TYPE_UINT32, None), ("rows", 2, F.TYPE_UINT32, None)])
    cfg = msg("ProcessConfig", [("command", 1, F.TYPE_STRING, None),
                                ("env_vars", 2, F.TYPE_MESSAGE, ".process.v1.ProcessConfig.EnvVarsEntry"),
                                ("cwd", 3, F.TYPE_STRING, None)],
              repeated=("command", "env_vars"), optional=("cwd",))
    entry = cfg.nested_type.add(name="EnvVarsEntry")
    entry.field.add(name="key", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    entry.field.add(name="value", number=2, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    entry.options.map_entry = True
    msg("StartRequest", [("config", 1, F.TYPE_MESSAGE, ".process.v1.ProcessConfig"),
                         ("pty", 2, F.TYPE_MESSAGE, ".process.v1.PTY")], optional=("pty",))
    msg("InitEvent", [("process_id", 1, F.TYPE_INT32, None)])
    msg("ExitEvent", [("exit_code", 1, F.TYPE_INT32, None)])
    msg("StartResponse", [("init", 1, F.TYPE_MESSAGE, ".process.v1.InitEvent"),
                          ("stdout", 2, F.TYPE_BYTES, None), ("stderr", 3, F.TYPE_BYTES, None),
                          ("exit", 4, F.TYPE_MESSAGE, ".process.v1.ExitEvent")],
        oneofs={"event": ["init", "stdout", "stderr", "exit"]})
    msg("ExecuteRequest", [("config", 1, F.TYPE_MESSAGE, ".process.v1.ProcessConfig")])
    msg("ExecuteResponse", [("exit_code", 1, F.TYPE_INT32, None), ("stdout", 2, F.TYPE_BYTES, None),
                            ("stderr", 3, F.TYPE_BYTES, None)])
    msg("WriteStdinRequest", [("process_id", 1, F.TYPE_INT32, None), ("input", 2, F.TYPE_BYTES, None),
                              ("eof", 3, F.TYPE_MESSAGE, ".google.protobuf.Empty")],
        oneofs={"payload": ["input", "eof"]})
    msg("WriteStdinResponse", [])
    msg("SendSignalRequest", [("process_id", 1, F.TYPE_INT32, None),
                              ("signal", 2, F.TYPE_ENUM, ".process.v1.Signal")])
    msg("SendSignalResponse", [])
    msg("ResizeTTYRequest", [("process_id", 1, F.TYPE_INT32, None), ("cols", 2, F.TYPE_UINT32, None),
                             ("rows", 3, F.TYPE_UINT32, None)])
    msg("ResizeTTYResponse", [])
    svc = fd.service.add(name="ProcessService")
    for name, streams in (("Start", True), ("Execute", False), ("WriteStdin", False),
                          ("SendSignal", False), ("ResizeTTY", False)):
        req = "StartRequest" if name == "Start" else f"{name}Request"
        resp = "StartResponse" if name == "Start" else f"{name}Response"
        svc.method.add(name=name, input_type=f".process.v1.{req}", output_type=f".process.v1.{resp}",
                       server_streaming=streams)
    pool.Add(fd)
    out: dict[str, Any] = {m.name: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"process.v1.{m.name}"))
                           for m in fd.message_type}
    out["__pool__"] = pool
    return out


def _cut(data: bytes, limit: int) -> bytes:
    """``data`` cut to ``limit`` bytes, head and tail, with a marker between."""
    if len(data) <= limit:
        return data
    head = limit // 2
    tail = limit - head
    return data[:head] + f"\n... [{len(data) - head - tail} bytes elided] ...\n".encode() + data[len(data) - tail:]


def script_for(argv: list[str]) -> str:
    """The bash script that runs ``argv`` as sandboxd would exec it."""
    if len(argv) >= 3 and posixpath.basename(argv[0]) in _SHELLS and argv[1].startswith("-") \
            and argv[1].endswith("c") and all(ch in _SHELL_FLAGS for ch in argv[1][1:]):
        pre = [_SHELL_FLAGS[ch] for ch in argv[1][1:] if _SHELL_FLAGS[ch]]
        if len(argv) > 4:
            pre.append("set -- " + shlex.join(argv[4:]))
        return "; ".join(pre + [argv[2]])
    return shlex.join(argv)


class _Proc:
    """A started process: its gate, stdin (a pipe, or the run's terminal), terminal flag."""

    def __init__(self, pid: int, tty: bool) -> None:
        self.pid = pid
        self.tty = tty
        self.gate = Gate()
        self.lock = threading.Lock()
        self.pending: list[bytes] = []       # keys typed at a terminal before the run started
        self.stdin_r: Any = None
        self.stdin_w = -1
        self.gone = False                    # the client's stream ended
        self.started = False                 # its run has taken the keys typed so far

    def close_stdin(self) -> None:
        with self.lock:
            fd, self.stdin_w = self.stdin_w, -1
        if fd >= 0:
            os.close(fd)


class ProcessService:
    """The ProcessService handlers over ``host`` (a RuntimeHost); paths confined to
    ``inside`` as the sandbox sees it, checked on the host through ``files`` when given."""

    def __init__(self, host: Any, inside: str, files: HostFiles | None, *, max_output: int = 1 << 20,
                 default_timeout: float | None = None) -> None:
        self.host = host
        self.inside = inside
        self.files = files
        self.max_output = max_output
        self.default_timeout = default_timeout
        self.m = _messages()
        self._ids = itertools.count(1)
        self._procs: dict[int, _Proc] = {}
        self._lock = threading.Lock()

    # ---------------------------------------------------------------- helpers
    def _prepare(self, req: Any, context: Any) -> tuple[str, str, dict[str, str] | None]:
        import grpc
        if not req.HasField("config") or not list(req.config.command):
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "command is required")
        cfg = req.config
        env = dict(cfg.env_vars) or None
        for k in env or {}:
            if not k or "=" in k or "\x00" in k or "\x00" in env[k]:   # type: ignore[index]
                context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"invalid env key {k!r}")
        if any("\x00" in a for a in cfg.command):
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "command contains a NUL byte")
        cwd = self.inside
        if cfg.cwd:
            p = cfg.cwd
            if p == self.inside or p.startswith(self.inside.rstrip("/") + "/"):
                p = p[len(self.inside):]
            try:
                cwd = confine(p, self.inside)
                if self.files is not None:
                    with self.files.resolve(p) as r:
                        if r.st is None:
                            raise FileNotFoundError(cfg.cwd)
                        import stat
                        if not stat.S_ISDIR(r.st.st_mode):
                            raise NotADirectoryError(cfg.cwd)
            except Denied:
                context.abort(grpc.StatusCode.PERMISSION_DENIED,
                              f"cwd: access denied: path {cfg.cwd!r}: path escapes sandbox root")
            except BadPath as e:
                context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"cwd: {e}")
            except (FileNotFoundError, NotADirectoryError):
                context.abort(grpc.StatusCode.NOT_FOUND,
                              f"failed to start command: command or path not found: chdir {cfg.cwd}")
        # one line before the script's first: bash's messages give its own line numbers
        return "( :; " + script_for(list(cfg.command)) + "\n)", cwd, env

    def _timeout(self, context: Any) -> tuple[float | None, bool]:
        """(seconds the run may take, whether that is the client's deadline)."""
        left = context.time_remaining()      # (a huge number when the call has no deadline)
        t = self.default_timeout
        if left is not None and 0 < left < 10 ** 7 and (t is None or left <= t):
            return left, True
        return t, False

    def _not_found(self, argv: list[str], r: Any) -> str | None:
        """The upstream error for an argv whose program could not be run (127/126 with our
        bash's message for it), else None."""
        if script_for(argv) != shlex.join(argv) or r.exit_code not in (126, 127):
            return None
        tail = r.stderr.rstrip("\n").rsplit("\n", 1)[-1]
        if f"{argv[0]}: command not found" in tail or f"{argv[0]}: No such file or directory" in tail:
            return "not found"
        if r.exit_code == 126 and f"{argv[0]}: Permission denied" in tail:
            return "denied"
        return None

    def _call(self, context: Any, gate: Gate, fn: Any) -> Any:
        import grpc
        if not context.add_callback(lambda: gate.abandon_soon(self.host.interrupt)):
            gate.abandon(self.host.interrupt)    # the call has already ended: never run it
        try:
            return self.host.call(lambda sb: gate.run(lambda: fn(sb))).value
        except Abandoned:
            context.abort(grpc.StatusCode.CANCELLED, "the client went away before the command started")
        except SandboxCrashed as e:
            context.abort(grpc.StatusCode.INTERNAL, f"the sandbox crashed; the next call restarts it: {e}")
        except SandboxError as e:
            context.abort(grpc.StatusCode.UNAVAILABLE, f"{type(e).__name__}: {e}")
        except (TypeError, ValueError) as e:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(e))

    # ---------------------------------------------------------------- RPCs
    def Execute(self, req: Any, context: Any) -> Any:
        import grpc
        script, cwd, env = self._prepare(req, context)
        t, deadline = self._timeout(context)
        r = self._call(context, Gate(), lambda sb: sb.run(script, cwd=cwd, env=env, timeout=t))
        if r.timed_out and deadline:
            # the client's deadline, reached by our clock a moment before grpc's: answered as
            # grpc would (the official client reports DEADLINE_EXCEEDED as timed_out)
            context.abort(grpc.StatusCode.DEADLINE_EXCEEDED, "Deadline Exceeded")
        argv = list(req.config.command)
        bad = self._not_found(argv, r)
        if bad == "not found":
            context.abort(grpc.StatusCode.NOT_FOUND,
                          f"failed to execute command: command or path not found: {r.stderr.strip()}")
        if bad == "denied":
            context.abort(grpc.StatusCode.PERMISSION_DENIED,
                          f"failed to execute command: permission denied: {r.stderr.strip()}")
        return self.m["ExecuteResponse"](exit_code=r.exit_code, stdout=_cut(r.stdout_bytes, self.max_output),
                                         stderr=_cut(r.stderr_bytes, self.max_output))

    def Start(self, req: Any, context: Any) -> Iterator[Any]:
        script, cwd, env = self._prepare(req, context)
        M = self.m
        tty = req.HasField("pty")
        proc = _Proc(next(self._ids), tty)
        spec = None
        if tty:
            spec = {"rows": req.pty.rows or 24, "cols": req.pty.cols or 80}
        else:
            r_fd, proc.stdin_w = os.pipe()
            proc.stdin_r = os.fdopen(r_fd, "rb", buffering=0)
        events: queue.Queue[tuple[str, Any]] = queue.Queue(maxsize=256)
        t, _ = self._timeout(context)

        def put(item: tuple[str, Any]) -> None:
            while not proc.gone:
                try:
                    events.put(item, timeout=0.5)
                    return
                except queue.Full:
                    continue

        def out(kind: str) -> Any:
            def deliver(chunk: bytes) -> None:
                for i in range(0, len(chunk), _CHUNK):
                    put((kind, chunk[i:i + _CHUNK]))
            return deliver

        def run(sb: Any) -> Any:
            with proc.lock:
                typed = b"".join(proc.pending)
                proc.pending.clear()
                proc.started = True
            stdin = proc.stdin_r if not tty else (typed or None)
            return sb.run_stream(script, on_stdout=out("stdout"), on_stderr=out("stderr"), stdin=stdin,
                                 cwd=cwd, env=env, timeout=t, tty=spec)

        def work() -> None:
            try:
                r = self.host.call(lambda sb: proc.gate.run(lambda: run(sb))).value
                if r.truncated or getattr(r, "limit_exceeded", None) == "output":
                    # the sandbox's output limit (Limits.max_output_bytes) stopped the stream:
                    # said on stderr rather than ending as if that were all
                    limit = getattr(getattr(self.host.sandbox, "limits", None), "max_output_bytes", None)
                    put(("stderr", (f"\n[agentic-bash: output past the sandbox's limit"
                                    f"{f' of {limit} bytes' if limit else ''} was not streamed]\n").encode()))
                put(("exit", r.exit_code))
            except Abandoned:
                put(("exit", 130))
            except BaseException as e:  # noqa: BLE001 - reported on the stream
                put(("error", e))

        with self._lock:
            self._procs[proc.pid] = proc
        if not context.add_callback(lambda: self._gone(proc)):
            self._gone(proc)                     # the call has already ended: never run it
        worker = threading.Thread(target=work, name=f"agentic-bash-process-{proc.pid}", daemon=True)
        worker.start()
        try:
            yield M["StartResponse"](init=M["InitEvent"](process_id=proc.pid))
            while True:
                try:
                    kind, val = events.get(timeout=0.5)
                except queue.Empty:
                    if proc.gone or not context.is_active():
                        return           # cancelled, or the server stops: this thread is free
                    continue
                if kind == "stdout":
                    yield M["StartResponse"](stdout=val)
                elif kind == "stderr":
                    yield M["StartResponse"](stderr=val)
                elif kind == "exit":
                    self._forget(proc)
                    yield M["StartResponse"](exit=M["ExitEvent"](exit_code=val))
                    return
                else:
                    self._forget(proc)
                    self._abort_for(context, val)
                    return
        finally:
            self._gone(proc)

    def _abort_for(self, context: Any, e: BaseException) -> None:
        import grpc
        if isinstance(e, SandboxCrashed):
            context.abort(grpc.StatusCode.INTERNAL, f"the sandbox crashed; the next call restarts it: {e}")
        if isinstance(e, SandboxError):
            context.abort(grpc.StatusCode.UNAVAILABLE, f"{type(e).__name__}: {e}")
        if isinstance(e, (TypeError, ValueError)):
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(e))
        context.abort(grpc.StatusCode.INTERNAL, f"{type(e).__name__}: {e}")

    def _forget(self, proc: _Proc) -> None:
        with self._lock:
            self._procs.pop(proc.pid, None)
        proc.close_stdin()

    def _gone(self, proc: _Proc) -> None:
        """The stream ended (any way): a process still queued never runs, a running one is
        interrupted; its stdin is closed."""
        if proc.gone:
            return
        proc.gone = True
        self._forget(proc)
        proc.gate.abandon_soon(self.host.interrupt)
        r = proc.stdin_r
        if r is not None:
            # closed once the run no longer reads it (here only if it never started)
            def close_when_done() -> None:
                import time
                while proc.gate.state == "running":
                    time.sleep(0.2)
                try:
                    r.close()
                except OSError:
                    pass
            threading.Thread(target=close_when_done, daemon=True).start()

    def _get(self, pid: int, context: Any) -> _Proc:
        import grpc
        with self._lock:
            proc = self._procs.get(pid)
        if proc is None:
            context.abort(grpc.StatusCode.NOT_FOUND, f"process {pid} not found")
        return proc  # type: ignore[return-value]

    def WriteStdin(self, req: Any, context: Any) -> Any:
        import grpc
        proc = self._get(req.process_id, context)
        which = req.WhichOneof("payload")
        if proc.tty:
            data = b"\x04" if which == "eof" else bytes(req.input)
            if data:
                with proc.lock:
                    if not proc.started:
                        proc.pending.append(data)
                        return self.m["WriteStdinResponse"]()
                # the run may still be setting its terminal up: typed once it takes keys
                import time
                deadline = time.monotonic() + 5.0
                while not proc.gone and proc.gate.state == "running":
                    sb = self.host.sandbox
                    if sb is not None and sb.tty_input(data):
                        break
                    if time.monotonic() > deadline:
                        context.abort(grpc.StatusCode.UNAVAILABLE, "the process's terminal takes no input")
                    time.sleep(0.02)
            return self.m["WriteStdinResponse"]()
        if which == "eof":
            proc.close_stdin()
            return self.m["WriteStdinResponse"]()
        data = memoryview(bytes(req.input))
        with proc.lock:
            fd = os.dup(proc.stdin_w) if proc.stdin_w >= 0 else -1
        if fd < 0:
            if data:
                context.abort(grpc.StatusCode.FAILED_PRECONDITION, f"process {req.process_id} has no stdin")
            return self.m["WriteStdinResponse"]()
        try:
            while data:
                n = os.write(fd, data)
                data = data[n:]
        except BrokenPipeError:
            context.abort(grpc.StatusCode.INTERNAL, "failed to write stdin: the process no longer reads it")
        finally:
            os.close(fd)
        return self.m["WriteStdinResponse"]()

    def SendSignal(self, req: Any, context: Any) -> Any:
        import grpc
        proc = self._get(req.process_id, context)
        if req.signal not in (2, 9, 15):
            context.abort(grpc.StatusCode.INVALID_ARGUMENT,
                          f"unsupported or unspecified signal: {req.signal}")
        proc.gate.abandon_soon(self.host.interrupt)
        return self.m["SendSignalResponse"]()

    def ResizeTTY(self, req: Any, context: Any) -> Any:
        import grpc
        proc = self._get(req.process_id, context)
        if not proc.tty:
            context.abort(grpc.StatusCode.FAILED_PRECONDITION,
                          f"failed to resize TTY: process {req.process_id} has no terminal")
        if proc.gate.state == "running" and self.host.sandbox is not None:
            self.host.sandbox.tty_resize(req.rows or 24, req.cols or 80)
        return self.m["ResizeTTYResponse"]()

    def handler(self) -> Any:
        """The generic gRPC handler for process.v1.ProcessService."""
        import grpc
        M = self.m

        def unary(fn: Any, req: str, resp: str) -> Any:
            return grpc.unary_unary_rpc_method_handler(fn, request_deserializer=M[req].FromString,
                                                       response_serializer=M[resp].SerializeToString)
        return grpc.method_handlers_generic_handler(_SERVICE, {
            "Execute": unary(self.Execute, "ExecuteRequest", "ExecuteResponse"),
            "Start": grpc.unary_stream_rpc_method_handler(
                self.Start, request_deserializer=M["StartRequest"].FromString,
                response_serializer=M["StartResponse"].SerializeToString),
            "WriteStdin": unary(self.WriteStdin, "WriteStdinRequest", "WriteStdinResponse"),
            "SendSignal": unary(self.SendSignal, "SendSignalRequest", "SendSignalResponse"),
            "ResizeTTY": unary(self.ResizeTTY, "ResizeTTYRequest", "ResizeTTYResponse"),
        })


def serve_process_service(service: ProcessService, host: str, port: int, workers: int = 32) -> tuple[Any, int]:
    """(a started grpc.Server with ``service``, the port bound: ``port``, or the OS's
    choice for 0)."""
    try:
        import grpc
    except ImportError:  # pragma: no cover - the [server] extra is missing
        raise SandboxError("the gRPC ProcessService needs grpcio and protobuf: "
                           "pip install 'agentic-bash[server]'") from None
    from concurrent.futures import ThreadPoolExecutor
    # (no SO_REUSEPORT: a second server on the same port must fail, not share the calls)
    server = grpc.server(ThreadPoolExecutor(max_workers=workers, thread_name_prefix="agentic-bash-grpc"),
                         options=[("grpc.so_reuseport", 0)])
    server.add_generic_rpc_handlers((service.handler(),))
    try:
        # server reflection, as sandboxd registers it: grpcurl needs no .proto file
        from grpc_reflection.v1alpha import reflection
        reflection.enable_server_reflection((_SERVICE, reflection.SERVICE_NAME), server,
                                            pool=service.m["__pool__"])
    except ImportError:  # pragma: no cover - grpcio-reflection is part of the [server] extra
        log.info("grpcio-reflection is not installed: no gRPC server reflection")
    addr = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    try:
        bound = server.add_insecure_port(addr)
    except RuntimeError:          # grpc's "Failed to bind to address"
        bound = 0
    if not bound:
        server.stop(None)
        raise OSError(f"cannot listen on {addr} for the gRPC ProcessService (address in use?)")
    server.start()
    return server, bound
