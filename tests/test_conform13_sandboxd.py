"""sandboxd's gRPC ProcessService as a reflection client (grpcurl and the like) sees it."""

from __future__ import annotations

import re

import pytest

from server_util import start_server

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")
grpc = pytest.importorskip("grpc")
pytest.importorskip("grpc_reflection")
pytest.importorskip("k8s_agent_sandbox")

try:
    from k8s_agent_sandbox.commands._process_stubs import process_pb2 as official  # noqa: E402
except ImportError:  # pragma: no cover - a client without the grpc extra
    pytest.skip("k8s-agent-sandbox[grpc] is not installed", allow_module_level=True)


def _shape(fd):
    """Every message's fields (name, number, type, presence, oneof) and the service's methods."""
    out = {}
    for m in fd.message_types_by_name.values():
        out[m.name] = sorted((f.name, f.number, f.type, f.has_presence,
                              f.containing_oneof.name if f.containing_oneof else None) for f in m.fields)
    for s in fd.services_by_name.values():
        for meth in s.methods:
            out[f"rpc {meth.name}"] = (meth.input_type.name, meth.output_type.name,
                                       meth.client_streaming, meth.server_streaming)
    return out


def test_reflection_shows_the_proto_the_official_client_was_generated_from(tmp_path):
    from google.protobuf import descriptor_pool
    from grpc_reflection.v1alpha.proto_reflection_descriptor_database import (
        ProtoReflectionDescriptorDatabase,
    )
    srv = start_server("--base-dir", str(tmp_path), "-i", "virtual", "--rest-port", "0", "--grpc-port", "0")
    try:
        port = int(re.search(r"ProcessService on [^ ]+:(\d+)", srv.output()).group(1))
        with grpc.insecure_channel(f"127.0.0.1:{port}") as ch:
            db = ProtoReflectionDescriptorDatabase(ch)
            assert "process.v1.ProcessService" in list(db.get_services())
            pool = descriptor_pool.DescriptorPool(db)
            served = pool.FindFileContainingSymbol("process.v1.ProcessService")
            got = _shape(served)
    finally:
        srv.stop()
    want = _shape(official.DESCRIPTOR)
    # `optional string cwd` and `optional PTY pty`: presence is part of the contract (a
    # client may send cwd="" on purpose); they were plain fields here before
    assert got == want
