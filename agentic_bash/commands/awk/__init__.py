"""awk: a POSIX awk (with common gawk extensions) compiled to Python, over the VFS."""

from __future__ import annotations

from .interp import Program, run_program
from .parser import AwkSyntaxError

__all__ = ["AwkSyntaxError", "Program", "main", "run_program"]


def main(ctx, argv: list[str]) -> int:  # noqa: ANN001
    from .cli import awk_main
    return awk_main(ctx, argv)
