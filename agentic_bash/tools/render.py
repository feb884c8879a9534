"""Turn a Result (or file text) into bounded, deterministic text for a model's context."""

from __future__ import annotations

import signal
from dataclasses import dataclass, field
from typing import Any, Iterable

__all__ = ["ALL_PARTS", "DEFAULT_PARTS", "Renderer", "cut_middle"]

ALL_PARTS = frozenset({"exit_code", "notes", "stdout", "stderr", "files", "cwd", "duration"})
# duration is off by default: the same call must render the same text every time
DEFAULT_PARTS = ALL_PARTS - {"duration"}

# Result.limit_exceeded names a limit either by its short name (what run() reports) or by the
# Limits field; both read the same to a model
_LIMIT_WORDS = {
    "timeout": "the time limit",
    "commands": "the limit on commands per call",
    "loop_iterations": "the limit on loop iterations per call",
    "call_depth": "the limit on function/source/eval nesting",
    "output": "the limit on output bytes per stream",
    "variable_size": "the limit on the size of one variable or here-doc",
    "disk": "the limit on what the session may store",
    "file_size": "the limit on the size of one file",
    "processes": "the limit on processes",
    "memory": "the memory limit",
    "jobs": "the limit on background jobs",
}
_LIMIT_WORDS.update({
    "max_commands": _LIMIT_WORDS["commands"], "max_loop_iterations": _LIMIT_WORDS["loop_iterations"],
    "max_call_depth": _LIMIT_WORDS["call_depth"], "max_output_bytes": _LIMIT_WORDS["output"],
    "max_variable_bytes": _LIMIT_WORDS["variable_size"], "max_fs_bytes": _LIMIT_WORDS["disk"],
    "max_file_count": "the limit on files the session may store",
    "max_file_bytes": _LIMIT_WORDS["file_size"], "max_processes": _LIMIT_WORDS["processes"],
    "max_memory_bytes": _LIMIT_WORDS["memory"], "max_jobs": _LIMIT_WORDS["jobs"],
})


def _marker(dropped: int, lines: int) -> bytes:
    unit = "line" if lines == 1 else "lines"
    return f"\n[... {dropped} bytes ({lines} {unit}) cut here ...]\n".encode()


def _decode(data: bytes) -> str:
    return data.decode("utf-8", "replace")


def cut_middle(data: bytes | str, budget: int, head_fraction: float = 0.5) -> str:
    """``data`` as text of at most ``budget`` UTF-8 bytes: whole if it fits, else its start
    and its end, cut at line boundaries where one is near, with a marker saying how many
    bytes and lines were dropped between them."""
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogateescape")
    if len(data) <= budget:   # decoding never makes text shorter: only then can it fit whole
        text = _decode(data)
        if len(text.encode()) <= budget:
            return text
    # a replacement character is 3 bytes for 1 invalid input byte: shrink until it fits
    avail = budget - len(_marker(len(data), len(data)))   # digits: an upper bound for both counts
    for _ in range(8):
        if avail <= 0:
            return _decode(data[:max(budget, 0)]).encode()[:max(budget, 0)].decode("utf-8", "ignore")
        head = int(avail * head_fraction)
        tail = avail - head
        h_end = head
        nl = data.rfind(b"\n", 0, head)
        if nl >= head // 2:
            h_end = nl + 1
        t_start = len(data) - tail
        nl = data.find(b"\n", t_start, len(data) - 1)
        if 0 <= nl and nl - t_start <= tail // 2:
            t_start = nl + 1
        # never split a UTF-8 character: a half character would decode to U+FFFD
        while 0 < h_end < len(data) and 0x80 <= data[h_end] < 0xC0:
            h_end -= 1
        while t_start < len(data) and 0x80 <= data[t_start] < 0xC0:
            t_start += 1
        dropped = t_start - h_end
        mark = _marker(dropped, data.count(b"\n", h_end, t_start))
        if data[h_end - 1:h_end] == b"\n":
            mark = mark[1:]
        out = _decode(data[:h_end]).encode() + mark + _decode(data[t_start:]).encode()
        if len(out) <= budget:
            return out.decode("utf-8")
        avail -= len(out) - budget
    return out[:budget].decode("utf-8", "ignore")


def _signal_words(code: int) -> str:
    if 128 < code < 128 + 65:
        try:
            name = signal.Signals(code - 128).name
        except ValueError:
            return ""
        return f" (killed by {name})"
    return ""


@dataclass(frozen=True, slots=True)
class Renderer:
    """How tool results are shown to a model.

    ``max_bytes``: the whole rendered text, markers included, in UTF-8 bytes.
    ``parts``: which sections appear (``exit_code``, ``notes`` — timeouts, limit hits,
    refusals, restarts in words —, ``stdout``, ``stderr``, ``files``, ``cwd``, ``duration``).
    ``max_files``: changed paths listed per kind before "and N more".
    ``head_fraction``: share of a cut stream kept from its start (the rest from its end).
    The same input always renders to the same text.
    """

    max_bytes: int = 16_384
    parts: frozenset[str] = field(default=DEFAULT_PARTS)
    max_files: int = 50
    head_fraction: float = 0.5

    def __post_init__(self) -> None:
        if not isinstance(self.max_bytes, int) or self.max_bytes < 256:
            raise ValueError(f"max_bytes must be an int >= 256, not {self.max_bytes!r}")
        parts = frozenset(self.parts)
        unknown = parts - ALL_PARTS
        if unknown:
            raise ValueError(f"unknown parts {sorted(unknown)}; known: {sorted(ALL_PARTS)}")
        object.__setattr__(self, "parts", parts)
        if not 0.0 <= self.head_fraction <= 1.0:
            raise ValueError(f"head_fraction must be within [0, 1], not {self.head_fraction!r}")
        if self.max_files < 0:
            raise ValueError(f"max_files must be >= 0, not {self.max_files!r}")

    # ---------------------------------------------------------------- pieces
    def notes(self, result: Any, timeout: float | None = None) -> list[str]:
        """The facts about a run a model must not miss, in words."""
        out: list[str] = []
        extra = getattr(result, "extra", None) or {}
        if getattr(result, "restarted", False) or extra.get("restart_reason"):
            reason = extra.get("restart_reason")
            out.append("the sandbox process had died and was restarted before this command"
                       + (f" ({reason})" if reason else "")
                       + "; files were kept, shell state came from the last snapshot or the defaults")
        if result.timed_out:
            after = f" after {timeout:g} s" if timeout else ""
            out.append(f"timed out: the command was stopped{after}; output and file changes up to "
                       "that point are kept")
        limit = getattr(result, "limit_exceeded", None) or extra.get("limit_exceeded")
        if limit:
            names = [limit] if isinstance(limit, str) else list(limit)
            for n in names:
                if (n == "timeout" and result.timed_out) or (n in ("output", "max_output_bytes") and result.truncated):
                    continue   # said below / above in the words of those flags
                words = _LIMIT_WORDS.get(str(n), f"the {n} limit")
                out.append(f"limit hit: the command ran into {words} ({n})")
        if result.truncated:
            out.append("output limit hit: the sandbox kept only part of the output "
                       "(Limits.max_output_bytes); redirect to a file and read it in pieces")
        for v in list(result.violations)[:10]:
            target = getattr(v, "target", None)
            out.append(f"refused by policy: {v.kind}: {v.detail}" + (f" ({target})" if target else ""))
        if len(result.violations) > 10:
            out.append(f"refused by policy: {len(result.violations) - 10} more")
        return out

    def _files(self, result: Any) -> list[str]:
        lines = []
        for kind in ("created", "modified", "deleted"):
            paths: Iterable[str] = getattr(result, f"files_{kind}", ())
            paths = sorted(paths)
            if not paths:
                continue
            shown = paths[:self.max_files]
            more = f", and {len(paths) - len(shown)} more" if len(paths) > len(shown) else ""
            lines.append(f"files {kind}: " + ", ".join(shown) + more)
        return lines

    # ---------------------------------------------------------------- whole
    def render(self, result: Any, *, timeout: float | None = None) -> str:
        """A Result as text within ``max_bytes``: header facts, then stdout and stderr cut
        head+tail to share what is left of the budget."""
        p = self.parts
        head: list[str] = []
        if "exit_code" in p:
            head.append(f"exit code: {result.exit_code}{_signal_words(result.exit_code)}")
        if "notes" in p:
            head.extend(self.notes(result, timeout))
        foot: list[str] = []
        if "files" in p:
            foot.extend(self._files(result))
        if "cwd" in p and getattr(result, "cwd", ""):
            foot.append(f"cwd: {result.cwd}")
        if "duration" in p:
            foot.append(f"duration: {result.duration:.3f} s")
        # the facts may take at most half the budget; the streams get the rest
        fixed = "\n".join(head + foot)
        if len(fixed.encode()) > self.max_bytes // 2:
            head_t = cut_middle("\n".join(head), self.max_bytes // 4, 1.0)
            foot_t = cut_middle("\n".join(foot), self.max_bytes // 4, 1.0)
        else:
            head_t, foot_t = "\n".join(head), "\n".join(foot)
        streams = [(n, getattr(result, f"{n}_bytes")) for n in ("stdout", "stderr")
                   if n in p and getattr(result, f"{n}_bytes")]
        sections = [s for s in (head_t,) if s]
        if not streams and ("stdout" in p or "stderr" in p):
            sections.append("(no output)")
        overhead = sum(len(s.encode()) + 1 for s in sections) + (len(foot_t.encode()) + 1 if foot_t else 0)
        overhead += sum(len(n) + 3 for n, _ in streams)  # "name:\n" + the newline after it
        room = max(self.max_bytes - overhead, 0)
        for (n, data), share in zip(streams, _shares([len(d) for _, d in streams], room)):
            body = cut_middle(data, share, self.head_fraction)
            sections.append(f"{n}:\n{body[:-1] if body.endswith(chr(10)) else body}")
        if foot_t:
            sections.append(foot_t)
        text = "\n".join(sections)
        if len(text.encode()) > self.max_bytes:   # only with pathological tiny budgets
            text = cut_middle(text, self.max_bytes, self.head_fraction)
        return text

    def text(self, data: bytes | str) -> str:
        """File text or a listing within ``max_bytes``, cut head+tail."""
        return cut_middle(data, self.max_bytes, self.head_fraction)


def _shares(sizes: list[int], room: int) -> list[int]:
    """Split ``room`` bytes between streams: a small one keeps all it has, the rest is even."""
    if not sizes:
        return []
    shares = [0] * len(sizes)
    left, todo = room, sorted(range(len(sizes)), key=lambda i: sizes[i])
    while todo:
        even = left // len(todo)
        i = todo.pop(0)
        shares[i] = min(sizes[i], even)
        left -= shares[i]
    return shares
