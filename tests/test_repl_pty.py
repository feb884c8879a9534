"""`agentic-bash shell` driven through a real pseudo-terminal: Ctrl-C, Tab, history, exit, vim."""

from __future__ import annotations

import os
import re
import shutil
import sys

import pytest

pexpect = pytest.importorskip("pexpect")

TIMEOUT = 30   # seconds per expected output; generous for a loaded machine
STARTUP_TIMEOUT = 120
PROMPT = "/workspace$"


def _level_ok(level: str) -> bool:
    from agentic_bash.isolation.plan import plan
    from agentic_bash.isolation.probe import probe

    try:
        return plan(level, probe()).level == level
    except Exception:  # noqa: BLE001
        return False


def _level(name: str) -> object:
    return pytest.param(name, marks=pytest.mark.skipif(
        not _level_ok(name), reason=f"isolation {name!r} not available here"))


ALL_LEVELS = ["virtual", _level("namespace"), _level("landlock"), "none"]
SANDBOXED = [_level("namespace"), _level("landlock")]


class Repl:
    def __init__(self, tmp_path, level: str, *, history: str | None = None,
                 rows: int = 30, cols: int = 100) -> None:
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path),
               "TERM": "xterm", "LANG": "C.UTF-8", "PROMPT_TOOLKIT_NO_CPR": "1"}
        args = ["-m", "agentic_bash", "shell", "-i", level,
                "--history-file", history or str(tmp_path / "history")]
        # -i none starts in the caller's directory
        self.prompt_text = f"{tmp_path}$" if level == "none" else PROMPT
        self.level = level
        self.c = pexpect.spawn(sys.executable, args, env=env, cwd=str(tmp_path),
                               timeout=TIMEOUT, dimensions=(rows, cols))
        self.log = bytearray()
        self.started = False

    def expect(self, text: str) -> None:
        self.c.expect_exact(text)
        self.log += self.c.before + (self.c.after if isinstance(self.c.after, bytes) else b"")

    def expect_rendered(self, word: str) -> None:
        """``word`` on the screen, even when the line editor drew it in pieces (the typed
        part, then the completed rest, with cursor moves between)."""
        esc = r"(?:\x1b\[[0-9;?]*[A-Za-z]|\x1b[=>])*"
        self.c.expect(esc.join(re.escape(ch) for ch in word).encode())
        self.log += self.c.before + self.c.after

    def prompt(self) -> None:
        if not self.started:
            # start-up (interpreter, zygote, sandbox) on a machine shared with parallel
            # test runs: the first prompt gets a longer bound than each command's output
            self.c.expect_exact(self.prompt_text, timeout=STARTUP_TIMEOUT)
            self.log += self.c.before + self.c.after
            self.started = True
            return
        self.expect(self.prompt_text)

    def run(self, line: str, then: str) -> None:
        """Type ``line``, wait for ``then`` in its output (text the echoed line does not
        hold), then for the next prompt."""
        assert then not in line
        self.c.sendline(line)
        self.expect(then)
        self.prompt()

    def finish(self) -> int:
        self.c.expect(pexpect.EOF)
        self.log += self.c.before
        self.c.close()
        return self.c.exitstatus

    def close(self) -> None:
        if self.c.isalive():
            self.c.terminate(force=True)


@pytest.fixture
def repl_factory(tmp_path):
    made: list[Repl] = []

    def make(level: str, **kw: object) -> Repl:
        r = Repl(tmp_path, level, **kw)  # type: ignore[arg-type]
        made.append(r)
        return r
    yield make
    for r in made:
        r.close()


@pytest.mark.parametrize("level", ALL_LEVELS)
def test_ctrl_c_interrupts_the_command_not_the_repl(repl_factory, level):
    r = repl_factory(level)
    r.prompt()
    r.c.sendline("echo sta''rt; sleep 30; echo e''nd")
    r.expect("start")   # the output, not the echoed line: the command is running
    r.c.sendcontrol("c")
    r.expect("[exit 130")
    r.prompt()
    r.run("echo rc=$?", "rc=130")
    r.c.sendline("while :; do :; done")
    r.expect("while")   # the echoed line
    r.c.sendcontrol("c")
    r.expect("[exit 130")
    r.prompt()
    r.c.sendline("exit 0")
    assert r.finish() == 0
    assert b"end" not in r.log
    assert b"Traceback" not in r.log and b"KeyError" not in r.log


@pytest.mark.parametrize("level", ["virtual", _level("namespace")])
def test_exit_n_and_ctrl_d_leave_with_the_status(repl_factory, level):
    r = repl_factory(level)
    r.prompt()
    r.c.sendline("exit 5")
    assert r.finish() == 5
    r = repl_factory(level)
    r.prompt()
    r.c.sendline("false")
    r.expect("[exit 1")
    r.prompt()
    r.c.sendcontrol("d")
    assert r.finish() == 1


@pytest.mark.parametrize("level", ["virtual", _level("namespace")])
def test_tab_completes_commands_files_variables_functions(repl_factory, level):
    r = repl_factory(level)
    r.prompt()
    r.run("touch myfile_abc; MYVAR_XYZ=1; myfunc_q() { echo fq-ran; }; echo ma''de", "made")
    r.c.send("ech\t")
    r.expect_rendered("echo")
    r.c.send(" $MYVAR_X\t")
    r.expect_rendered("MYVAR_XYZ")
    r.c.send(" myfile_a\t")
    r.expect_rendered("myfile_abc")
    r.c.send("\r")
    r.expect("1 myfile_abc")
    r.prompt()
    r.c.send("myfunc\t")
    r.expect_rendered("myfunc_q")
    r.c.send("\r")
    r.expect("fq-ran")
    r.prompt()
    r.c.send("cat /etc/hostn\t")
    r.expect_rendered("hostname")
    r.c.sendcontrol("c")   # abandon the line at the prompt
    r.prompt()
    r.c.sendline("exit 3")
    assert r.finish() == 3
    assert b"\r\nsandbox" not in r.log   # /etc/hostname was not printed


def test_history_persists_and_recalls_multiline_commands_whole(repl_factory, tmp_path):
    hist = str(tmp_path / "hist")
    r = repl_factory("virtual", history=hist)
    r.prompt()
    r.run("echo one-$((1))", "one-1")
    r.c.sendline("if true; then")
    r.c.sendline("echo two-$((2))")
    r.c.sendline("fi")
    r.expect("two-2")
    r.prompt()
    r.c.sendline("exit")
    assert r.finish() == 0

    r = repl_factory("virtual", history=hist)
    r.prompt()
    r.c.sendline("history")
    r.expect("echo one-$((1))")
    r.expect("echo two-$((2))")
    r.prompt()
    r.c.send("\x1b[A\x1b[A\x1b[A")   # Up: `history`, `exit`, then the if-block as one entry
    r.expect("fi")
    r.c.send("\r")
    r.expect("two-2")
    r.prompt()
    r.c.sendline("exit 0")
    assert r.finish() == 0


@pytest.mark.skipif(shutil.which("vim") is None, reason="vim not installed")
@pytest.mark.parametrize("level", SANDBOXED)
def test_vim_gets_a_terminal_and_quits(repl_factory, level):
    r = repl_factory(level, rows=30, cols=100)
    r.prompt()
    r.run("stty size; echo term=$TERM", "term=xterm")
    assert b"30 100" in r.log
    r.c.sendline("vim -N -u NONE x.txt")
    r.expect("\x1b[?1049h")       # vim switched to the alternate screen: it has a terminal
    r.expect("[New")
    r.c.send("\x1b:q\r")
    r.expect("\x1b[?1049l")       # and left it
    r.prompt()
    r.c.setwinsize(40, 120)
    r.run("stty size", "40 120")
    r.c.sendline("exit 0")
    assert r.finish() == 0
    assert b"Traceback" not in r.log


@pytest.mark.parametrize("level", SANDBOXED)
def test_interactive_python_gets_a_terminal(repl_factory, level):
    if not shutil.which("python3"):
        pytest.skip("no python3")
    r = repl_factory(level)
    r.prompt()
    r.c.sendline("python3 -q")
    r.expect(">>> ")
    r.c.sendline("print(6*7)")
    r.expect("42")
    r.expect(">>> ")
    r.c.sendcontrol("c")          # handled by Python's REPL: it keeps running
    r.expect("KeyboardInterrupt")
    r.expect(">>> ")
    r.c.sendline("import sys; sys.exit(3)")
    r.expect("[exit 3")
    r.prompt()
    r.c.sendline("exit 0")
    assert r.finish() == 0
