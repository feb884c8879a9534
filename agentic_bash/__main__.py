"""``python -m agentic_bash`` is the CLI."""

from .cli import main

main()
