"""The CLI's resource-limit flags: --memory --cpus --pids --file-size --disk on every sandbox command."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from agentic_bash.cli import app, parse_size, sandbox_kwargs

MiB = 1 << 20


@pytest.mark.parametrize("text,want", [("512k", 512 << 10), ("256m", 256 * MiB), ("2g", 2 << 30),
                                       ("1.5G", 3 << 29), ("10MiB", 10 * MiB), ("4096", 4096),
                                       ("1t", 1 << 40), (" 64M ", 64 * MiB)])
def test_parse_size(text: str, want: int) -> None:
    assert parse_size(text) == want


@pytest.mark.parametrize("text", ["", "m", "-1m", "1x", "0", "1.2.3m", "inf", "1e9"])
def test_parse_size_refuses(text: str) -> None:
    with pytest.raises(ValueError):
        parse_size(text)


def test_flags_become_limits_fields() -> None:
    kw = sandbox_kwargs({"isolation": "namespace", "memory": 256 * MiB, "cpus": 0.5, "pids": 128,
                         "file_size": 10 * MiB, "disk": 1 << 30})
    lim = kw["limits"]
    assert (lim.max_memory_bytes, lim.cpu_quota, lim.max_processes, lim.max_file_bytes,
            lim.max_fs_bytes) == (256 * MiB, 0.5, 128, 10 * MiB, 1 << 30)
    # not given: the defaults stay
    from agentic_bash import Limits
    assert sandbox_kwargs({"isolation": "virtual"})["limits"] == Limits()


@pytest.mark.parametrize("cmd", ["run", "shell", "snapshot", "restore"])
def test_every_sandbox_command_takes_the_flags(cmd: str) -> None:
    out = CliRunner().invoke(app, [cmd, "--help"], env={"COLUMNS": "200"}).output
    for flag in ("--memory", "--cpus", "--pids", "--file-size", "--disk"):
        assert flag in out, (cmd, flag)


@pytest.mark.parametrize("args,msg", [(["--memory", "lots"], "not a size"),
                                      (["--cpus", "0"], "between 0.01 and 1024"),
                                      (["--pids", "0"], "--pids"),
                                      (["--disk", "-5m"], "not a size")])
def test_bad_values_are_usage_errors(args: list[str], msg: str) -> None:
    r = CliRunner().invoke(app, ["run", "-i", "virtual", *args, "--cmd", "true"])
    assert r.exit_code == 2, r.output
    assert msg in r.output, r.output
