"""Registers ``awk`` (and the gawk/mawk/nawk aliases) from the awk package."""

from __future__ import annotations

from .awk.cli import awk_main
from .base import CommandContext, command

__all__ = ["awk"]


@command("awk", "gawk", "mawk", "nawk", usage="awk [-F fs] [-v var=value] [-f progfile | 'prog'] [file ...]",
         help="Pattern scanning and text processing language (POSIX awk with common gawk extensions).")
def awk(ctx: CommandContext, argv: list[str]) -> int:
    return awk_main(ctx, argv)
