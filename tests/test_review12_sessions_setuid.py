"""serve --sessions: an upload served from the host beside a running command makes no set-user/group-ID file, as the sandbox's own file call cannot (review12)."""

from __future__ import annotations

import os
import stat
import threading
import time
import urllib.request

import pytest

from agentic_bash.server.hostfiles import HostFiles, Upload
from server_util import start_server

KEY = "test-key-" + "r" * 20


def test_a_new_upload_never_gets_set_id_bits(tmp_path) -> None:
    for mode in (0o4755, 0o2755, 0o6777):
        up = Upload(HostFiles(str(tmp_path), "/app"), f"new-{mode:o}", mode)
        up.write(b"#!/bin/sh\nid\n")
        up.commit()
        got = stat.S_IMODE(os.stat(tmp_path / f"new-{mode:o}").st_mode)
        assert got == mode & 0o1777, (oct(mode), oct(got))


def test_sessions_upload_beside_a_running_command_in_a_rw_mount(tmp_path) -> None:
    pytest.importorskip("starlette")
    pytest.importorskip("uvicorn")
    from agentic_bash.client import RemoteSandbox
    from agentic_bash.isolation.plan import plan
    from agentic_bash.isolation.probe import probe
    if plan("namespace", probe()).level != "namespace":
        pytest.skip("namespace level unavailable")
    data = tmp_path / "data"
    data.mkdir()
    srv = start_server("--sessions", "--db", str(tmp_path / "s.db"), "--api-key", KEY,
                       "-i", "namespace", "-m", f"/data={data}:rw")
    try:
        with RemoteSandbox(srv.url, api_key=KEY, workdir="/data") as sb:
            assert sb.run("echo up").stdout == "up\n"
            t = threading.Thread(target=sb.run, args=("touch started; sleep 10",), daemon=True)
            t.start()
            end = time.monotonic() + 60
            while not (data / "started").exists() and time.monotonic() < end:
                time.sleep(0.05)
            assert (data / "started").exists()
            req = urllib.request.Request(
                f"{srv.url}/v1/sessions/{sb.id}/files?path=/data/tool&mode=4755",
                data=b"#!/bin/sh\nid\n", method="PUT",
                headers={"authorization": f"Bearer {KEY}"})
            urllib.request.urlopen(req, timeout=60).read()
            beside = t.is_alive()   # (served from the host while the command ran)
            t.join(60)
        got = stat.S_IMODE(os.stat(data / "tool").st_mode)
        assert not got & (stat.S_ISUID | stat.S_ISGID), oct(got)
        assert got == 0o755 and beside, (oct(got), beside)
    finally:
        srv.stop()
