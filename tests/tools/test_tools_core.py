"""agentic_bash.tools: schemas, argument checking, the handler on a live session, rendering."""

from __future__ import annotations

import json
import re

import jsonschema
import pytest

from agentic_bash import Limits, PolicyViolation, Sandbox
from agentic_bash.result import Result
from agentic_bash.tools import (
    TOOL_NAMES, Renderer, ToolArgumentError, anthropic_schemas, cut_middle, handle,
    openai_schemas, parse_arguments, schemas,
)


# ------------------------------------------------------------------ schemas
def test_names_exact():
    assert TOOL_NAMES == ("bash", "read_file", "write_file", "list_files", "edit_file")
    props = {s["name"]: set(s["parameters"]["properties"]) for s in schemas()}
    assert props == {"bash": {"command", "timeout"}, "read_file": {"path"},
                     "write_file": {"path", "content"}, "list_files": {"path"},
                     "edit_file": {"path", "old", "new"}}


@pytest.mark.parametrize("flavour", ["neutral", "openai", "openai-strict", "responses", "anthropic"])
def test_schemas_are_valid_json_schema(flavour):
    if flavour == "neutral":
        got = [(s["name"], s["parameters"]) for s in schemas()]
    elif flavour == "openai":
        got = [(s["function"]["name"], s["function"]["parameters"]) for s in openai_schemas()]
        assert all(s["type"] == "function" for s in openai_schemas())
    elif flavour == "openai-strict":
        got = [(s["function"]["name"], s["function"]["parameters"]) for s in openai_schemas(strict=True)]
        for _, p in got:   # structured outputs: every property required, no extra keys
            assert set(p["required"]) == set(p["properties"]) and p["additionalProperties"] is False
    elif flavour == "responses":
        got = [(s["name"], s["parameters"]) for s in openai_schemas(api="responses")]
    else:
        got = [(s["name"], s["input_schema"]) for s in anthropic_schemas()]
    assert [n for n, _ in got] == list(TOOL_NAMES)
    for _, schema in got:
        jsonschema.Draft202012Validator.check_schema(schema)
        assert schema["type"] == "object"


def test_schema_copies_are_independent():
    a = anthropic_schemas()
    a[0]["input_schema"]["properties"].clear()
    assert anthropic_schemas()[0]["input_schema"]["properties"]


def test_schema_subset_and_unknown_names():
    assert [s["name"] for s in anthropic_schemas(["bash"])] == ["bash"]
    with pytest.raises(ValueError, match="unknown tool"):
        openai_schemas(["bash", "rm"])
    with pytest.raises(TypeError):
        openai_schemas("bash")


ARG_CASES = [
    ("bash", {"command": "ls"}), ("bash", {"command": "ls", "timeout": 2}),
    ("bash", {"command": "ls", "timeout": 0.5}), ("bash", {"command": ""}),
    ("bash", {"command": "ls", "timeout": 0}), ("bash", {"command": "ls", "timeout": -1}),
    ("bash", {"command": "ls", "timeout": "5"}), ("bash", {"command": "ls", "timeout": True}),
    ("bash", {}), ("bash", {"command": ["ls"]}), ("bash", {"command": "ls", "cwd": "/"}),
    ("read_file", {"path": "a"}), ("read_file", {"path": ""}), ("read_file", {"path": 3}),
    ("write_file", {"path": "a", "content": ""}), ("write_file", {"path": "a"}),
    ("write_file", {"path": "a", "content": None}), ("list_files", {"path": "."}),
    ("list_files", {}), ("edit_file", {"path": "a", "old": "x", "new": ""}),
    ("edit_file", {"path": "a", "old": "", "new": "y"}), ("edit_file", {"path": "a", "old": "x"}),
]


@pytest.mark.parametrize("name,args", ARG_CASES)
def test_argument_checks_agree_with_jsonschema(name, args):
    schema = next(s["parameters"] for s in schemas() if s["name"] == name)
    valid = jsonschema.Draft202012Validator(schema).is_valid(args)
    try:
        parse_arguments(name, args)
        ours = True
    except ToolArgumentError:
        ours = False
    assert ours == valid


def test_strict_nulls_mean_absent():
    args = {"command": "ls", "timeout": None}
    strict = openai_schemas(["bash"], strict=True)[0]["function"]["parameters"]
    jsonschema.validate(args, strict)
    assert parse_arguments("bash", args) == {"command": "ls"}
    assert parse_arguments("bash", json.dumps(args)) == {"command": "ls"}


# ------------------------------------------------------------------ the handler
def test_bash_state_persists_and_renders(sb):
    out = handle(sb, "bash", {"command": "cd /tmp && X=41; echo out; echo err >&2; touch made"})
    assert out == ("exit code: 0\nstdout:\nout\nstderr:\nerr\nfiles created: /tmp/made\ncwd: /tmp")
    out = handle(sb, "bash", json.dumps({"command": "echo $((X+1)); exit 3"}))
    assert out == "exit code: 3\nstdout:\n42\ncwd: /tmp"


def test_bash_timeout_in_words(sb):
    out = handle(sb, "bash", {"command": "echo started; sleep 5", "timeout": 0.3})
    assert out.startswith("exit code: 124\ntimed out: the command was stopped after 0.3 s")
    assert "started" in out


def test_bash_limit_hit_in_words():
    with Sandbox(isolation="virtual", limits=Limits(max_output_bytes=1000)) as s:
        out = handle(s, "bash", {"command": "seq 1 100000"})
    assert "output limit hit" in out and "max_output_bytes" in out


@pytest.mark.parametrize("name,args,want", [
    ("bash", {}, "error: bash: missing required argument 'command'"),
    ("bash", {"command": 7}, "error: bash: argument 'command' must be a string, not int"),
    ("bash", "{nope", "error: bash: arguments are not valid JSON"),
    ("bash", "[1]", "error: bash: arguments must be a JSON object, not list"),
    ("bash", {"command": "ls", "timeout": 0}, "error: bash: argument 'timeout' must be a positive number"),
    ("rm", {"path": "/"}, "error: unknown tool 'rm'; available tools: bash, read_file"),
    ("read_file", {"path": "missing"}, "error: read_file: /workspace/missing: No such file or directory"),
    ("read_file", {"path": "/tmp"}, "error: read_file: /tmp: Is a directory"),
    ("list_files", {"path": "missing"}, "error: list_files: /workspace/missing: No such file or directory"),
    ("edit_file", {"path": "missing", "old": "a", "new": "b"},
     "error: edit_file: /workspace/missing: No such file or directory"),
    ("write_file", {"path": "/tmp", "content": "x"}, "error: write_file: /tmp: Is a directory"),
    ("write_file", {"path": "a\0b", "content": "x"}, "error: write_file: argument 'path' must not contain a NUL"),
    ("bash", {"command": "ls", "timeout": 10 ** 400}, "error: bash: argument 'timeout' must be a positive number"),
    ("bash", '{"command": "ls", "timeout": NaN}', "error: bash: argument 'timeout' must be a positive number"),
    ("bash", "[" * 100_000, "error: bash: arguments could not be read (RecursionError)"),
])
def test_bad_calls_are_error_strings(sb, name, args, want):
    out = handle(sb, name, args)
    assert isinstance(out, str) and out.startswith(want), out


def test_lone_surrogates_in_content_are_written_replaced(sb):
    assert handle(sb, "write_file", {"path": "s.txt", "content": "a\ud800b"}).startswith("created /workspace/s.txt (3 bytes)")
    assert sb.read_file("s.txt") == b"a?b"


def test_file_tools_roundtrip(sb):
    assert handle(sb, "write_file", {"path": "src/app.py", "content": "def f():\n    return 1\n"}) == \
        "created /workspace/src/app.py (22 bytes)\nfiles created: /workspace/src/app.py"
    assert handle(sb, "read_file", {"path": "/workspace/src/app.py"}) == "def f():\n    return 1\n"
    assert handle(sb, "write_file", {"path": "src/app.py", "content": "x = 1\n"}).startswith(
        "overwrote /workspace/src/app.py (6 bytes)")
    assert handle(sb, "list_files", {"path": "src"}) == "/workspace/src: 1 entry\napp.py  (6 bytes)"
    assert handle(sb, "list_files", {"path": "."}) == "/workspace: 1 entry\nsrc/"
    sb.run("cd src")   # relative paths follow the shell's cwd
    assert handle(sb, "read_file", {"path": "app.py"}) == "x = 1\n"
    assert handle(sb, "list_files", {"path": "app.py"}) == "/workspace/src/app.py is a file, 6 bytes"
    sb.run(": > empty; printf 'a\\0b' > bin")
    assert handle(sb, "read_file", {"path": "empty"}) == "(/workspace/src/empty is empty)"
    assert handle(sb, "read_file", {"path": "bin"}).startswith("error: read_file: /workspace/src/bin: binary file")


def test_edit_file(sb):
    sb.write_file("m.py", "a = 1\nb = 2\nb = 2\nc = 3\n")
    sb.run("chmod 755 m.py")
    out = handle(sb, "edit_file", {"path": "m.py", "old": "b = 2", "new": "b = 20"})
    assert out.startswith("error: edit_file: `old` occurs 2 times in /workspace/m.py (at lines 2, 3); nothing changed")
    out = handle(sb, "edit_file", {"path": "m.py", "old": "a  = 1", "new": "a = 10"})
    assert out.startswith("error: edit_file: `old` was not found in /workspace/m.py; nothing changed")
    assert handle(sb, "edit_file", {"path": "m.py", "old": "a", "new": "a"}).startswith("error: edit_file: `old` and `new` are the same")
    assert sb.read_file("m.py") == b"a = 1\nb = 2\nb = 2\nc = 3\n"   # untouched by the refusals
    out = handle(sb, "edit_file", {"path": "m.py", "old": "b = 2\nc", "new": "b = 2\nB = 9\nc"})
    assert out == ("edited /workspace/m.py: replaced 1 occurrence, now lines 3-5\n"
                   "1 | a = 1\n2 | b = 2\n3 | b = 2\n4 | B = 9\n5 | c = 3\nfiles modified: /workspace/m.py")
    assert sb.read_file("m.py") == b"a = 1\nb = 2\nb = 2\nB = 9\nc = 3\n"
    assert sb.run("stat -c %a m.py").stdout == "755\n"   # the mode survives the rewrite
    sb.run("printf '\\xff\\xfe' > latin")
    assert handle(sb, "edit_file", {"path": "latin", "old": "a", "new": "b"}).startswith(
        "error: edit_file: /workspace/latin: not UTF-8 text")


def test_crashed_and_closed_sandboxes_are_error_strings():
    class Crashing:
        cwd = "/"

        def run(self, *a, **k):
            from agentic_bash import SandboxCrashed
            raise SandboxCrashed("runner killed by SIGKILL")

    assert handle(Crashing(), "bash", {"command": "ls"}).startswith(
        "error: bash: the sandbox process died during this call (runner killed by SIGKILL)")
    s = Sandbox(isolation="virtual")
    s.close()
    assert handle(s, "bash", {"command": "ls"}) == "error: bash: the sandbox is closed"


# ------------------------------------------------------------------ rendering
def _lines(n: int) -> bytes:
    return b"".join(b"line %08d of the output\n" % i for i in range(n))


def test_ten_megabytes_render_within_budget_first_and_last_line_intact():
    data = _lines(420_000)   # 10.5 MB
    assert len(data) > 10_000_000
    r = Result(stdout_bytes=data, exit_code=0, cwd="/w")
    for budget in (2_000, 16_384, 100_000):
        text = Renderer(max_bytes=budget).render(r)
        assert len(text.encode()) <= budget
        lines = text.split("\n")
        assert lines[2] == "line 00000000 of the output"
        body_end = lines.index("cwd: /w")
        assert lines[body_end - 1] == "line 00419999 of the output"
        marker = next(ln for ln in lines if ln.startswith("[... "))
        dropped = int(marker.split()[1])
        kept = sum(len(ln) + 1 for ln in lines[2:body_end] if not ln.startswith("[... "))
        assert dropped + kept == len(data)   # the marker says exactly how much is gone


def test_ten_megabytes_through_a_live_session(sb):
    out = handle(sb, "bash", {"command": "seq 1 1500000; echo done >&2"}, renderer=Renderer(max_bytes=4096))
    assert len(out.encode()) <= 4096
    assert out.startswith("exit code: 0\nstdout:\n1\n2\n")
    assert "\n1500000\nstderr:\ndone\n" in out and "bytes (" in out and "lines) cut here ...]" in out


def test_render_is_deterministic_and_parts_select():
    r = Result(stdout_bytes=_lines(5000), stderr_bytes=b"E\n" * 3000, exit_code=137, cwd="/w",
               duration=1.25, files_created=("/w/b", "/w/a"), files_deleted=("/w/z",))
    rr = Renderer(max_bytes=3000)
    assert rr.render(r) == rr.render(r) == Renderer(max_bytes=3000).render(r)
    text = rr.render(r)
    assert text.startswith("exit code: 137 (killed by SIGKILL)\nstdout:\nline 00000000")
    assert "files created: /w/a, /w/b\nfiles deleted: /w/z\ncwd: /w" in text and "duration" not in text
    only = Renderer(parts=frozenset({"exit_code", "stderr"})).render(r)
    assert only.startswith("exit code: 137") and "stdout" not in only and "cwd" not in only
    assert Renderer(parts=frozenset({"duration"})).render(r) == "duration: 1.250 s"
    with pytest.raises(ValueError, match="unknown parts"):
        Renderer(parts=frozenset({"stdin"}))
    with pytest.raises(ValueError):
        Renderer(max_bytes=10)


def test_render_notes_in_words():
    r = Result(exit_code=1, timed_out=True, truncated=True,
               violations=(PolicyViolation("network", "connect to 10.0.0.1:80 refused"),),
               extra={"limit_exceeded": "max_loop_iterations", "restart_reason": "runner died"})
    text = Renderer().render(r, timeout=5)
    for words in ("timed out: the command was stopped after 5 s",
                  "limit hit: the command ran into the limit on loop iterations per call (max_loop_iterations)",
                  "output limit hit", "refused by policy: network: connect to 10.0.0.1:80 refused",
                  "restarted before this command (runner died)"):
        assert words in text


@pytest.mark.parametrize("name,words", [("memory", "the memory limit"), ("processes", "the limit on processes"),
                                        ("disk", "the limit on what the session may store"),
                                        ("max_jobs", "the limit on background jobs"), ("odd", "the odd limit")])
def test_limit_names_in_words(name, words):
    # Result.limit_exceeded (a field, or in extra before that field existed) by short or field name
    r = Result(exit_code=1, extra={"limit_exceeded": name})
    assert f"limit hit: the command ran into {words} ({name})" in Renderer().render(r)
    r = Result(exit_code=124, timed_out=True, extra={"limit_exceeded": "timeout"})
    assert "limit hit" not in Renderer().render(r) and "timed out" in Renderer().render(r)


def test_file_lists_are_capped():
    r = Result(files_created=tuple(f"/w/f{i:05d}" for i in range(5000)), cwd="/w")
    text = Renderer(max_bytes=2000, max_files=10).render(r)
    assert "/w/f00009, and 4990 more" in text and len(text.encode()) <= 2000
    big = Renderer(max_bytes=2000, max_files=5000).render(r)
    assert len(big.encode()) <= 2000 and "cut here" in big


@pytest.mark.parametrize("data", [b"\xff" * 5000, "é".encode() * 5000, b"x" * 5000, b"a\n" * 2500])
def test_cut_middle_bounds_any_bytes(data):
    for budget in (64, 100, 1000):
        out = cut_middle(data, budget)
        assert len(out.encode()) <= budget
    assert cut_middle(b"short", 100) == "short"


# ------------------------------------------------------------------ properties
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_json = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
                     lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=8), c, max_size=3),
                     max_leaves=8)
_args = st.one_of(_json, st.dictionaries(st.sampled_from(["command", "timeout", "path", "content", "old", "new", "x"]),
                                         _json, max_size=4),
                  st.text(max_size=30))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.sampled_from(list(TOOL_NAMES) + ["nope"]), args=_args)
def test_handle_never_raises(sb, name, args):
    if name == "bash" and isinstance(args, dict) and isinstance(args.get("command"), str):
        args = {**args, "command": "echo " + json.dumps(args["command"])[:40].replace("`", "").replace("$", "")}
    out = handle(sb, name, args, renderer=Renderer(max_bytes=512))
    assert isinstance(out, str) and out and len(out.encode()) <= 512


@settings(max_examples=300, deadline=None)
@given(lines=st.lists(st.text(alphabet=st.characters(blacklist_characters="\n[", blacklist_categories=("Cs",)),
                              max_size=40), min_size=1, max_size=400),
       budget=st.integers(min_value=64, max_value=4000), frac=st.floats(min_value=0.0, max_value=1.0))
def test_cut_middle_properties(lines, budget, frac):
    data = ("\n".join(lines) + "\n").encode()
    out = cut_middle(data, budget, frac)
    assert len(out.encode()) <= budget
    if len(data) <= budget:
        assert out == data.decode()
        return
    m = re.search(r"\[\.\.\. (\d+) bytes \((\d+) lines?\) cut here \.\.\.\]\n", out)
    assert m, out
    dropped, lines_dropped = int(m.group(1)), int(m.group(2))
    tail = out[m.end():].encode()
    before = out[:m.start()].encode()
    # the newline before the marker is the data's own when its kept head ends with one
    for head in {before, before[:-1] if before.endswith(b"\n") else before}:
        gone = data[len(head):len(head) + dropped]
        if data == head + gone + tail and gone.count(b"\n") == lines_dropped:
            break
    else:
        raise AssertionError(f"shown + dropped != input: {out!r}")


def test_restart_after_a_crash_is_said_in_words():
    import os
    import select
    import signal

    from agentic_bash.isolation.probe import probe
    caps = probe()
    if not (caps.user_namespace and caps.overlay_userns):
        pytest.skip("user namespaces are unavailable here")
    script = {"command": "cat /workspace/f; echo \"X=$X\""}
    with Sandbox(isolation="namespace") as s:
        handle(s, "bash", {"command": "echo kept > /workspace/f; X=lost"})
        os.kill(s._ex.pid, signal.SIGKILL)   # the sandbox process dies between two calls
        assert select.select([s._ex._pidfd], [], [], 10)[0]
        # right after the kill, the dying sandbox may still answer one call, or that call may
        # be the one that notices the death (and says so); the restart follows at the latest
        # on the call after
        outs = [handle(s, "bash", script) for _ in range(3)]
    restarted = [o for o in outs if "the sandbox process had died and was restarted" in o]
    assert restarted, outs
    before = outs[:outs.index(restarted[0])]
    assert all(o == "exit code: 0\nstdout:\nkept\nX=lost\ncwd: /workspace"
               or o.startswith("error: bash: the sandbox process died during this call") for o in before), outs
    assert restarted[0].startswith("exit code: 0\nthe sandbox process had died and was restarted before this command")
    assert "stdout:\nkept\nX=\n" in restarted[0]   # files kept, shell state from the defaults
