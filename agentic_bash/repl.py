"""The interactive REPL on one persistent session (prompt-toolkit on a tty, plain lines otherwise)."""

from __future__ import annotations

import os
import sys
import threading
from typing import Any, Callable, TextIO

__all__ = ["repl"]

PS1 = "$ "
PS2 = "> "


def _needs_more(text: str) -> bool:
    """True when ``text`` is an incomplete command (open quote, missing ``fi``, here-doc …)."""
    from .shell.parser import needs_more_input

    return needs_more_input(text + "\n")


class _Meta:
    """REPL meta-commands starting with ``%``."""

    def __init__(self, sb: Any, out: TextIO) -> None:
        self.sb = sb
        self.out = out
        self.last: Any = None

    def handle(self, line: str) -> bool:
        words = line.split()
        cmd, args = words[0], words[1:]
        if cmd == "%reset":
            self.sb.reset()
            self.out.write("session reset\n")
        elif cmd == "%files":
            r = self.last
            if r is None:
                self.out.write("no command run yet\n")
            else:
                for label, paths in (("created", r.files_created), ("modified", r.files_modified),
                                     ("deleted", r.files_deleted)):
                    for p in paths:
                        self.out.write(f"{label}: {p}\n")
        elif cmd == "%snapshot" and len(args) == 1:
            self.sb.snapshot(args[0])
            self.out.write(f"snapshot written to {args[0]}\n")
        elif cmd == "%restore" and len(args) == 1:
            with open(args[0], "rb") as f:
                self.sb.restore(f.read())
            self.out.write(f"restored from {args[0]}\n")
        elif cmd == "%help":
            self.out.write("%reset  %files  %snapshot FILE  %restore FILE  %help\n")
        else:
            self.out.write(f"unknown meta-command: {line} (try %help)\n")
        return True


def _run_interruptible(sb: Any, script: str) -> Any:
    """Run in a worker thread so Ctrl-C in the main thread interrupts the command, not the REPL."""
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["r"] = sb.run(script)
        except BaseException as exc:  # noqa: BLE001 - handed back to the main thread
            box["e"] = exc

    t = threading.Thread(target=work, daemon=True)
    t.start()
    while t.is_alive():
        try:
            t.join(0.1)
        except KeyboardInterrupt:
            interrupt = getattr(sb, "interrupt", None)
            if interrupt is not None:
                interrupt()
    if "e" in box:
        raise box["e"]
    return box["r"]


def _report(r: Any, err: TextIO, tty: bool) -> None:
    status = f"[exit {r.exit_code}{' timed out' if r.timed_out else ''}, {r.duration * 1000:.1f} ms]"
    err.write(f"\x1b[2m{status}\x1b[0m\n" if tty else status + "\n")
    err.flush()


def _write_result(r: Any) -> None:
    sys.stdout.buffer.write(r.stdout_bytes)
    sys.stdout.flush()
    sys.stderr.buffer.write(r.stderr_bytes)
    sys.stderr.flush()


def repl(sb: Any, *, history_file: str | None = None, stdin: TextIO | None = None) -> int:
    """Read commands until EOF; returns the last exit status."""
    from .errors import SandboxError

    stdin = stdin or sys.stdin
    tty = stdin.isatty() and sys.stdout.isatty()
    meta = _Meta(sb, sys.stdout)
    last = 0
    read_line: Callable[[str], str]
    if tty:
        from prompt_toolkit import PromptSession
        from prompt_toolkit.history import FileHistory

        path = history_file or os.path.expanduser("~/.agentic_bash_history")
        session: Any = PromptSession(history=FileHistory(path))
        read_line = lambda prompt: session.prompt(prompt)  # noqa: E731
    else:
        def read_line(prompt: str) -> str:
            line = stdin.readline()
            if not line:
                raise EOFError
            return line.rstrip("\n")

    while True:
        try:
            text = read_line(PS1)
            while _needs_more(text):
                text += "\n" + read_line(PS2)
        except EOFError:
            break
        except KeyboardInterrupt:
            continue
        if not text.strip():
            continue
        if text.lstrip().startswith("%"):
            try:
                meta.handle(text.strip())
            except (SandboxError, OSError) as exc:
                sys.stderr.write(f"error: {exc}\n")
            continue
        try:
            r = _run_interruptible(sb, text)
        except SandboxError as exc:
            sys.stderr.write(f"agentic-bash: sandbox error: {exc}\n")
            return 125
        meta.last = r
        _write_result(r)
        if tty:
            _report(r, sys.stderr, tty)
        last = r.exit_code
    return last
