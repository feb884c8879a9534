"""AST transform plugins: ``Sandbox(transforms=[fn(script_ast) -> script_ast])`` before each run."""

# The executor takes script text, so a transformed tree is printed back to bash with
# shell.unparse (one top-level command per line) and that text runs. A script no transform
# changed runs as written (LINENO, alias expansion and late syntax errors stay exactly as
# bash's), and one that does not parse is passed through so the run reports the syntax
# error the way bash -c does.

from __future__ import annotations

from typing import Any, Callable, Iterable

from .errors import ParseError

__all__ = ["apply_transforms", "command_names"]


def apply_transforms(script: str, transforms: Iterable[Callable[[Any], Any]]) -> str:
    """Parse ``script``, pass the AST through each transform (one returning None leaves the
    tree unchanged: an observer), and return the text to run."""
    from .shell.parser import parse
    from .shell.unparse import format_command

    try:
        tree = parse(script)
    except (ParseError, RecursionError):
        return script
    out = tree
    for fn in transforms:
        new = fn(out)
        if new is not None:
            out = new
    if out is tree:
        return script
    lines = []
    for item in out.items:
        text = format_command(item.cmd)
        lines.append(text + (" &" if item.background else ""))
    return "\n".join(lines) + ("\n" if lines else "")


def command_names(tree: Any) -> list[str]:
    """Every literal command name in ``tree`` (nested lists, pipelines, functions, ``$( )``),
    in order of appearance; a handy base for tracing or auditing transforms."""
    from .shell import nodes as N

    found: list[str] = []
    seen: set[int] = set()

    def walk(node: Any) -> None:
        if id(node) in seen or node is None or isinstance(node, (str, int, float, bool, bytes)):
            return
        seen.add(id(node))
        if isinstance(node, (tuple, list)):
            for x in node:
                walk(x)
            return
        if isinstance(node, N.Simple) and node.words:
            w = node.words[0]
            lit = _literal(w)
            if lit is not None:
                found.append(lit)
        for name in getattr(type(node), "__slots__", ()):
            walk(getattr(node, name, None))

    walk(tree)
    return found


def _literal(word: Any) -> str | None:
    from .shell import nodes as N

    parts = getattr(word, "parts", None)
    if not parts:
        return None
    out = []
    for p in parts:
        if isinstance(p, (N.Lit, N.Escaped, N.SQ, N.ANSIC)):
            out.append(p.text)
        else:
            return None
    return "".join(out)
