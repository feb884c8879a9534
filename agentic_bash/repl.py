"""The interactive REPL on one persistent session (prompt-toolkit on a tty, plain lines otherwise)."""

from __future__ import annotations

import os
import re
import select
import signal
import sys
import threading
from typing import Any, Callable, Iterable, TextIO

__all__ = ["repl"]

PS1 = "$ "
PS2 = "> "
EXIT_INTERRUPTED = 130

_KEYWORDS = ("if", "then", "else", "elif", "fi", "case", "esac", "for", "select", "while",
             "until", "do", "done", "in", "function", "time", "coproc", "[[", "]]", "{", "}", "!")
# after these a word is a command name (an operator or a reserved word that starts a list)
_CMD_START = re.compile(r"(?:^|[;&|(`]|\$\(|\b(?:then|else|elif|do|time|!)\s)\s*$")
_WORD = re.compile(r"[^\s;&|()<>`'\"]*$")


def _no_commands(text: str) -> bool:
    """True when ``text`` holds only comments and blanks: an interactive shell runs nothing
    for it and $? stays (a run of it would be 0, as for ``bash -c '# c'``)."""
    from .shell.parser import ParseError, parse_cached
    try:
        return not parse_cached(text).items
    except (ParseError, RecursionError, ValueError):
        return False


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
        self.out.flush()
        return True


# ---------------------------------------------------------------- completion
def _builtin_names() -> set[str]:
    from .shell.builtins import BUILTINS

    return set(BUILTINS)


class _Names:
    """What the session knows (functions, aliases, variables, $PATH commands), re-read lazily
    after each command."""

    def __init__(self, sb: Any) -> None:
        self.sb = sb
        self._cache: tuple[set[str], set[str]] | None = None

    def invalidate(self) -> None:
        self._cache = None

    def get(self) -> tuple[set[str], set[str]]:
        if self._cache is None:
            commands = _builtin_names() | set(_KEYWORDS)
            variables: set[str] = set()
            try:
                state = self.sb.get_state()
                commands |= set(state.get("functions") or ()) | set(state.get("aliases") or ())
                vars_ = state.get("vars") or {}
                variables = set(vars_)
                path = (vars_.get("PATH") or {}).get("value") or "/usr/local/bin:/usr/bin:/bin"
            except Exception:  # noqa: BLE001 - completion never breaks the prompt
                path = "/usr/local/bin:/usr/bin:/bin"
            env = {"HOME", "PATH", "PWD", "OLDPWD", "USER", "SHELL", "TERM", "LANG", "RANDOM",
                   "LINENO", "SECONDS", "BASH_VERSION", "HOSTNAME", "UID", "PPID", "IFS"}
            variables |= env
            for d in dict.fromkeys(p for p in str(path).split(":") if p.startswith("/")):
                try:
                    for f in self.sb.list_files(d):
                        if f.type != "dir" and f.mode & 0o111:
                            commands.add(f.name)
                except Exception:  # noqa: BLE001
                    continue
            self._cache = (commands, variables)
        return self._cache


def _files(sb: Any, word: str) -> Iterable[tuple[str, str]]:
    """(completion text, display) for file names starting with ``word``."""
    d, _, base = word.rpartition("/")
    directory = (d or "/") if word.startswith("/") else (d or ".")
    try:
        entries = sb.list_files(directory)
    except Exception:  # noqa: BLE001
        return
    for f in entries:
        if f.name.startswith(base) and (base.startswith(".") or not f.name.startswith(".")):
            text = (d + "/" if d or word.startswith("/") else "") + f.name
            yield (text + "/" if f.type == "dir" else text), f.name + ("/" if f.type == "dir" else "")


def completions(sb: Any, names: _Names, text_before: str) -> list[tuple[str, int, str]]:
    """Completions for the text before the cursor: (replacement, start offset (<= 0), display)."""
    m = _WORD.search(text_before)
    word = m.group(0) if m else ""
    before = text_before[:len(text_before) - len(word)]
    out: list[tuple[str, int, str]] = []
    vm = re.search(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)?$", text_before)
    if vm is not None:
        part = vm.group(1) or ""
        brace = text_before[vm.start() + 1:vm.start() + 2] == "{"
        for v in sorted(names.get()[1]):
            if v.startswith(part):
                out.append((v + ("}" if brace else ""), -len(part), "$" + v))
        return out
    if _CMD_START.search(before) and "/" not in word:
        for c in sorted(names.get()[0]):
            if c.startswith(word):
                out.append((c, -len(word), c))
        return out
    for text, display in sorted(_files(sb, word)):
        out.append((text, -len(word), display))
    return out


def _make_completer(sb: Any, names: _Names) -> Any:
    from prompt_toolkit.completion import Completer, Completion

    class ShellCompleter(Completer):
        def get_completions(self, document: Any, complete_event: Any) -> Any:
            for text, start, display in completions(sb, names, document.text_before_cursor):
                yield Completion(text, start_position=start, display=display)

    return ShellCompleter()


# ---------------------------------------------------------------- running one command
def _write(stream: Any, chunk: bytes) -> None:
    try:
        stream.write(chunk)
        stream.flush()
    except (BrokenPipeError, ValueError):
        pass


def _terminal_size(fd: int) -> tuple[int, int]:
    try:
        sz = os.get_terminal_size(fd)
        return max(1, sz.lines), max(1, sz.columns)
    except OSError:
        return 24, 80


def _run_on_terminal(sb: Any, script: str, fd_in: int, fd_out: int,
                     interrupted: threading.Event, early_keys: bytearray,
                     typeahead: bytearray | None = None) -> Any:
    """Run ``script`` with a pseudo-terminal of its own (in the sandbox when there is one),
    relaying our terminal to it in raw mode: keys (Ctrl-C included) reach the program or the
    interpreter as on a real terminal, the window size follows ours. Keys nothing read (typed
    ahead, as at bash while a command runs) are added to ``typeahead`` for the next prompt."""
    import termios
    import tty

    rows, cols = _terminal_size(fd_out)
    spec = {"term": os.environ.get("TERM") or "xterm-256color", "rows": rows, "cols": cols}
    out = sys.stdout.buffer
    tail = bytearray(b"\n")
    box: dict[str, Any] = {}

    def on_stdout(chunk: bytes) -> None:
        if chunk:
            tail[:] = chunk[-1:]
        _write(out, chunk)

    # keys typed after Enter, before the run existed, are typed at its terminal first
    typed = bytes(early_keys) or None
    early_keys.clear()

    done = threading.Event()

    def work() -> None:
        try:
            box["result"] = sb.run_stream(script, on_stdout=on_stdout, tty=spec, stdin=typed)
        except BaseException as exc:  # noqa: BLE001 - handed back to the main thread
            box["error"] = exc
        finally:
            done.set()

    resized = threading.Event()
    old_winch = signal.signal(signal.SIGWINCH, lambda *_: resized.set())
    saved = termios.tcgetattr(fd_in)
    t = threading.Thread(target=work, name="agentic-bash-repl-run", daemon=True)
    try:
        tty.setraw(fd_in, termios.TCSANOW)
        t.start()
        backlog = bytearray()   # keys the run could not take yet (it was starting)
        while t.is_alive():
            try:
                ready, _, _ = select.select([fd_in], [], [], 0.05)
            except InterruptedError:
                ready = []
            if interrupted.is_set():
                interrupted.clear()
                backlog.extend(b"\x03")
            if resized.is_set():
                resized.clear()
                sb.tty_resize(*_terminal_size(fd_out))
            if ready:
                try:
                    data = os.read(fd_in, 4096)
                except OSError:
                    data = b""
                backlog.extend(data)
            if backlog and (sb.tty_input(bytes(backlog)) or len(backlog) > 65536):
                backlog.clear()
    finally:
        termios.tcsetattr(fd_in, termios.TCSADRAIN, saved)
        signal.signal(signal.SIGWINCH, old_winch)
    _wait_run(done, sb)
    if tail != b"\n":
        _write(out, b"\n")   # the prompt starts on a line of its own
    if "error" in box:
        raise box["error"]
    r = box["result"]
    if typeahead is not None:
        left = (r.extra.get("tty_unread") or "").encode("utf-8", "surrogateescape")
        unsent = bytes(backlog)
        if b"\x03" in unsent:      # an interrupt discards what was typed before it
            left, unsent = b"", unsent[unsent.rindex(b"\x03") + 1:]
        typeahead += left + unsent
    return r


def _store_typeahead(session: Any, data: bytes) -> None:
    """Keys typed during a command that it did not read become the next prompt's input, as
    readline reads a shell's typeahead (the terminal's Enter arrives as a newline)."""
    from prompt_toolkit.input.typeahead import store_typeahead
    from prompt_toolkit.input.vt100_parser import Vt100Parser
    keys: list[Any] = []
    parser = Vt100Parser(keys.append)
    parser.feed(data.replace(b"\r\n", b"\r").replace(b"\n", b"\r").decode("utf-8", "replace"))
    parser.flush()
    store_typeahead(session.input, keys)


def _wait_run(done: threading.Event, sb: Any) -> None:
    """Until the run's thread has finished; Ctrl-C interrupts the run. An Event, not
    Thread.join(): a join cut short by KeyboardInterrupt can leave is_alive() False while
    the thread still runs (CPython 3.11), and the run's result was then missing."""
    while True:
        try:
            if done.wait(0.1):
                return
        except KeyboardInterrupt:
            sb.interrupt()


def _run_plain(sb: Any, script: str) -> Any:
    """Run with output streamed as produced; Ctrl-C (SIGINT) interrupts the command."""
    box: dict[str, Any] = {}

    done = threading.Event()

    def work() -> None:
        try:
            box["result"] = sb.run_stream(script, on_stdout=lambda c: _write(sys.stdout.buffer, c),
                                          on_stderr=lambda c: _write(sys.stderr.buffer, c))
        except BaseException as exc:  # noqa: BLE001 - handed back to the main thread
            box["error"] = exc
        finally:
            done.set()

    t = threading.Thread(target=work, name="agentic-bash-repl-run", daemon=True)
    t.start()
    _wait_run(done, sb)
    if "error" in box:
        raise box["error"]
    return box["result"]


def _report(r: Any, err: TextIO) -> None:
    if r.exit_code == 0 and not r.timed_out:
        return
    status = f"[exit {r.exit_code}{' timed out' if r.timed_out else ''}, {r.duration * 1000:.1f} ms]"
    err.write(f"\x1b[2m{status}\x1b[0m\n")
    err.flush()


# ---------------------------------------------------------------- history
def _seed_history(sb: Any, entries: list[str]) -> None:
    """Turn the session's history on (as in an interactive bash) with the REPL's saved
    commands first, so the ``history`` builtin shows them; and make the session interactive
    (errors without line numbers, ``$-`` with i), as %reset and %restore undo it."""
    try:
        state = sb.get_state()
        state.setdefault("options", {})["history"] = True
        state["history"] = entries + list(state.get("history") or [])
        state["interactive"] = True
        sb.set_state(state)
    except Exception:  # noqa: BLE001 - a REPL without history still works
        pass


def _seed_stdin_script(sb: Any) -> None:
    """Make a piped REPL's session read as `bash < script` does: errors name the shell and
    the line (``bash: line 3: …``, not ``bash: -c: line 3:``), ``$-`` without c."""
    try:
        state = sb.get_state()
        state["stdin_script"] = True
        sb.set_state(state)
    except Exception:  # noqa: BLE001 - the REPL still works, with bash -c's wording
        pass


def _prompt_session(sb: Any, history_file: str | None, names: _Names,
                    early_keys: bytearray) -> Any:
    from prompt_toolkit import PromptSession
    from prompt_toolkit.history import FileHistory
    from prompt_toolkit.key_binding import KeyBindings

    path = history_file or os.path.expanduser("~/.agentic_bash_history")
    history = FileHistory(path)
    from .shell.state import HISTORY_MAX
    _seed_history(sb, list(reversed(list(history.load_history_strings())))[-HISTORY_MAX:])
    kb = KeyBindings()

    @kb.add("enter")
    def _(event: Any) -> None:
        buf = event.current_buffer
        if buf.complete_state is not None and buf.complete_state.current_completion is not None:
            buf.apply_completion(buf.complete_state.current_completion)
            return
        if _needs_more(buf.text):
            buf.insert_text("\n")   # a multi-line command stays one history entry
        else:
            buf.validate_and_handle()

    from prompt_toolkit.keys import Keys

    @kb.add("c-c")
    @kb.add(Keys.SIGINT)   # (the terminal is cooked again while the prompt winds down)
    def _(event: Any) -> None:
        fut = event.app.future
        if fut is not None and not fut.done():
            event.app.exit(exception=KeyboardInterrupt, style="class:aborting")
        else:   # pressed right after Enter: it belongs to the command that starts now
            early_keys.extend(b"\x03")

    return PromptSession(history=history, completer=_make_completer(sb, names),
                         complete_while_typing=False, key_bindings=kb, multiline=True,
                         prompt_continuation=lambda width, line, soft: PS2.rjust(width))


# ---------------------------------------------------------------- the loop
def repl(sb: Any, *, history_file: str | None = None, stdin: TextIO | None = None) -> int:
    """Read commands until EOF (Ctrl-D) or ``exit [N]``; returns the exit status."""
    from .errors import SandboxCrashed, SandboxError

    stdin = stdin or sys.stdin
    interactive = stdin.isatty() and sys.stdout.isatty()
    meta = _Meta(sb, sys.stdout)
    names = _Names(sb)
    last = 0
    cwd = ""
    read_line: Callable[[str], str]
    early_keys = bytearray()   # typed after Enter, before the command's terminal exists
    typeahead = bytearray()    # typed during a command, read by nothing: the next lines
    interrupted = threading.Event()
    read_lines = [0]   # (piped) lines of stdin read so far: a command's errors name its line
    old_int = signal.getsignal(signal.SIGINT)
    if interactive:
        try:
            cwd = sb.cwd
        except Exception:  # noqa: BLE001
            cwd = ""
        from prompt_toolkit.input.typeahead import get_typeahead
        session = _prompt_session(sb, history_file, names, early_keys)

        # A SIGINT outside the prompt (the terminal is cooked for a moment after Enter;
        # kill -INT) counts as the interrupt character typed at the command's terminal.
        # prompt() installs its own handler while it reads and puts this one back.
        signal.signal(signal.SIGINT, lambda *_: interrupted.set())

        def read_line(prompt: str) -> str:
            if typeahead:
                _store_typeahead(session, bytes(typeahead))
                typeahead.clear()
            # handle_sigint=False: our handler stays installed all along, so a SIGINT while
            # the prompt winds down (the terminal is cooked again) is not lost with its loop
            line = session.prompt(prompt, handle_sigint=False)
            if interrupted.is_set():
                interrupted.clear()
                early_keys.extend(b"\x03")
            # keys typed after Enter: kept by prompt-toolkit as typeahead, or still in its
            # input's buffer (read while the prompt wound down)
            inp = session.input
            keys = list(get_typeahead(inp)) + list(inp.read_keys()) + list(inp.flush_keys())
            for key in keys:
                early_keys.extend((key.data or "").encode("utf-8", "surrogateescape"))
            return line
    else:
        _seed_stdin_script(sb)

        def read_line(prompt: str) -> str:
            line = stdin.readline()
            if not line:
                raise EOFError
            read_lines[0] += 1
            return line.rstrip("\n")

    try:
        while True:
            try:
                first = read_lines[0] + 1
                text = read_line(f"{cwd}{PS1}" if interactive else PS1)
                if not interactive:
                    while _needs_more(text):
                        text += "\n" + read_line(PS2)
            except EOFError:
                if interactive:
                    sys.stderr.write("exit\n")
                break
            except KeyboardInterrupt:   # Ctrl-C at the prompt: a fresh line, $? = 130
                last = EXIT_INTERRUPTED
                continue
            if not text.strip() or ("#" in text and _no_commands(text)):
                continue
            if text.lstrip().startswith("%"):
                try:
                    meta.handle(text.strip())
                except (SandboxError, OSError) as exc:
                    sys.stderr.write(f"error: {exc}\n")
                if interactive:
                    _seed_history(sb, [])   # a reset or restored session is interactive again
                else:
                    _seed_stdin_script(sb)
                names.invalidate()
                try:
                    cwd = sb.cwd
                except Exception:  # noqa: BLE001
                    pass
                continue
            try:
                if interactive:
                    r = _run_on_terminal(sb, text, stdin.fileno(), sys.stdout.fileno(), interrupted,
                                         early_keys, typeahead)
                else:
                    # (as bash reading its script from stdin: $LINENO and `bash: line 7:` count
                    # the lines read before this command)
                    r = _run_plain(sb, "\n" * (first - 1) + text)
            except SandboxCrashed as exc:
                # DESIGN decision 10: the Sandbox stays usable, its next run starts a fresh
                # sandbox process over the same files. A person at the prompt goes on; a
                # piped script stops (its later commands would run without the lost state)
                sys.stderr.write(f"agentic-bash: sandbox error: {exc}\n")
                if not interactive:
                    return 125
                sys.stderr.write("agentic-bash: the next command starts a fresh sandbox "
                                 "(files kept; variables, functions and cwd as at start)\n")
                last = 125
                _seed_history(sb, [])
                continue
            except SandboxError as exc:
                sys.stderr.write(f"agentic-bash: sandbox error: {exc}\n")
                return 125
            names.invalidate()
            meta.last = r
            cwd = r.cwd or cwd
            if interactive:
                _report(r, sys.stderr)
            last = r.exit_code
            # `exit`, exec, set -e end the shell; a syntax error, ${x:?}, an unbound variable
            # under set -u or a failed exec end only a non-interactive one (bash < file): an
            # interactive bash reports them and reads the next line
            if r.extra.get("exited") and not (interactive and r.extra.get("fatal")):
                break
    finally:
        if interactive:
            signal.signal(signal.SIGINT, old_int)
    return last

