"""An upload over a set-user-ID file does not hand the uploaded bytes its set-ID bits."""

import os
import stat

from agentic_bash.server.hostfiles import HostFiles, Upload


def test_upload_over_a_setuid_file_drops_the_set_id_bits(tmp_path) -> None:
    target = tmp_path / "tool"
    target.write_bytes(b"old")
    os.chmod(target, 0o6755)
    up = Upload(HostFiles(str(tmp_path), "/app"), "tool")
    up.write(b"#!/bin/sh\necho new\n")
    up.commit()
    mode = stat.S_IMODE(os.stat(target).st_mode)
    assert mode == 0o755, oct(mode)
    assert target.read_bytes() == b"#!/bin/sh\necho new\n"
