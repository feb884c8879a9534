"""The file API of a virtual-mode Sandbox against FIFOs the script made: a clear error, never a wait for the other end."""

from __future__ import annotations

import errno
import threading

import pytest

import agentic_bash as ab


@pytest.mark.parametrize("op", ["read", "write", "read_link"])
def test_virtual_file_api_does_not_wait_on_a_fifo(op: str) -> None:
    # before: read_file/write_file of a FIFO waited for a writer/reader (MemoryFS's FIFO
    # timeout: an hour) on the caller's own thread
    with ab.Sandbox("virtual") as sb:
        assert sb.run("mkfifo /workspace/f; ln -s f /workspace/l").exit_code == 0
        box: dict[str, BaseException] = {}

        def go() -> None:
            try:
                if op == "write":
                    sb.write_file("/workspace/f", b"x")
                else:
                    sb.read_file("/workspace/l" if op == "read_link" else "/workspace/f")
            except BaseException as e:  # noqa: BLE001
                box["e"] = e
        t = threading.Thread(target=go, daemon=True)
        t.start()
        t.join(30)
        assert not t.is_alive(), "the file API waited on a FIFO"
        e = box.get("e")
        assert isinstance(e, OSError) and e.errno == errno.ENXIO, repr(e)
        # a regular file next to it still works both ways
        sb.write_file("/workspace/g", b"ok")
        assert sb.read_file("/workspace/g") == b"ok"


@pytest.mark.parametrize("spelling", ["203.0.113.7", "::ffff:203.0.113.7", "::ffff:cb00:7107",
                                      "0:0:0:0:0:ffff:cb00:7107", "64:ff9b::203.0.113.7",
                                      "2002:cb00:7107::1", "::203.0.113.7"])
def test_policy_refuses_this_hosts_address_in_every_spelling(spelling: str) -> None:
    # before: [::ffff:<this host's IPv4>] passed the proxy's "address of this host" check (it
    # compared strings) and reached a host service listening on 0.0.0.0
    from agentic_bash.network.policy import NetworkPolicy
    p = NetworkPolicy.coerce("public")
    addrs, why = p.decide(spelling, 5432, lambda h: [], local_addrs=frozenset({"203.0.113.7"}))
    assert addrs == [] and "address of this host" in why, (addrs, why)
    # a public address that is not this host's still goes through
    assert p.decide("203.0.113.8", 5432, lambda h: [],
                    local_addrs=frozenset({"203.0.113.7"})) == (["203.0.113.8"], "")


def test_layer_export_is_bounded_by_tar_bytes_not_only_file_data(tmp_path) -> None:  # noqa: ANN001
    # empty files take an inode each, and ~1.5 KiB of tar headers: a layer of millions of
    # them made a snapshot (in the sandbox) and a crash salvage (on the host) that large
    import io

    from agentic_bash.isolation.layerscan import export_layer_tar
    upper = tmp_path / "upper"
    upper.mkdir()
    for i in range(2000):
        (upper / f"f{i}").touch()
    uppers = [{"target": "/workspace", "upper": str(upper)}]
    buf = io.BytesIO()
    export_layer_tar(uppers, buf)
    assert len(buf.getvalue()) > 1 << 20
    with pytest.raises(OSError) as ei:
        export_layer_tar(uppers, io.BytesIO(), max_bytes=1 << 20)
    assert ei.value.errno == errno.EFBIG
    export_layer_tar(uppers, io.BytesIO(), max_bytes=8 << 20)   # room enough: no refusal
