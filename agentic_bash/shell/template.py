"""Parse a new one-liner by shape: its data words become placeholders, the shape is parsed once."""

# Why hand-written: a parse cache keyed by the exact text misses every new line an agent
# sends, and most of those lines differ from an earlier one only in data words (numbers,
# file names, quoted strings). Such a word, anywhere the parser never looks at its text,
# is swapped for a placeholder identifier; the resulting shape is parsed (and remembered)
# once, and each new line's tree is that shape with the words put back. A word the parser
# does look at stays in the shape: reserved words, command names, options (`-gt`), words
# touching a redirection or `=`, the name after `for`/`select`, and any line with a
# construct whose text is kept or re-read (here-documents, `$( )`, backquotes, `(( ))`,
# comments, backslashes, function definitions) is not templated at all.

from __future__ import annotations

import re
from typing import Any, Callable

from .._lazyre import lazy_compile as _lazy_re
from . import nodes as N
from .parser import _COOP_HAZARD, _plain_line

__all__ = ["templated"]

_PH = "_AgbT"
_PH_RE = _lazy_re(_PH + r"(\d+)_")
_TOKEN = _lazy_re(r"""'[^'\n]+'|'[^']*'|"[^"\\$`!\n]+"|"(?:[^"\\]|\\.)*"|\$\{[^{}]*\}|\$\{|\$\w|"""
                    r"""\$?\(\([^()]*\)\)|[A-Za-z0-9_./:%+,@-]+|[ \t]+|\n|.""")
# the same tokens, each with the blanks after it
_TOKEN_WS = _lazy_re(r"""('[^'\n]+'|'[^']*'|"[^"\\$`!\n]+"|"(?:[^"\\]|\\.)*"|\$\{[^{}]*\}|\$\{|\$\w|"""
                       r"""\$?\(\([^()]*\)\)|[A-Za-z0-9_./:%+,@-]+|\n|.)([ \t]*)""")
# single characters that end templating: an escape, a comment, parentheses a token above
# did not take whole (nested arithmetic), a quote left open
_STOP = frozenset("\\#'\"`")
_SIMPLE_DQ = _lazy_re(r"""^"[^"\\$`!\n]+"$""")
_PLAIN_FIRST = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./:%+,@")
_SKIP = ("<<", "`", "function", "()", "<(", ">(", _PH)
_CMDSUB = re.compile(r"\$\((?!\()")  # $( … ), not $(( … ))
_KEYWORDS = frozenset("if then else elif fi case esac for select while until do done in function "
                      "time { } ! [[ ]] coproc".split())
# words the pipeline check (parser._COOP_HAZARD) or the parser itself reads
_KEEP = _KEYWORDS | frozenset("timeout wait eval source bash sh read . ..".split())
# after these the next word starts a command
_CMD_BEFORE = frozenset(";|&(){}\n") | {"if", "then", "else", "elif", "while", "until", "do", "!", "time"}
_AFTER_OK = frozenset(" \t\n;|&)")
_BEFORE_OK = frozenset(" \t\n;|(")

_V_RE = _lazy_re(r"\bv\[(\d+)\]")
_HELPER_RE = _lazy_re(r"\b(s\d+)\(v\)")
_SHAPES: dict[tuple[str, bool], Any] = {}
_SHAPES_MAX = 512
_NONE = object()


def _shape(script: str, where: list[int] | None = None) -> tuple[str, list[str]] | None:
    """(the shape's text, the data words taken out); ``where`` gets each word's offset."""
    body = script.lstrip(" \t")
    lead = script[:len(script) - len(body)]
    if where is None:
        pairs = _TOKEN_WS.findall(body)  # (token, the blanks after it)
    else:
        ms = list(_TOKEN_WS.finditer(body))
        pairs = [m.groups() for m in ms]
    out: list[str] = [lead] if lead else []
    vals: list[str] = []
    last = "\n"  # the last token
    prev = lead[-1] if lead else "\n"  # the character before this token
    n = len(pairs)
    for i, (t, ws) in enumerate(pairs):
        c = t[0]
        if t == "${" or t in _STOP or (t == "(" and not ws and i + 1 < n and pairs[i + 1][0][:1] == "("):
            return None  # nested braces or parentheses, escapes, comments: text that matters
        if (prev in _BEFORE_OK and (c in _PLAIN_FIRST or (c == "'" and len(t) > 2 and t[-1] == "'" and "\n" not in t)
                                    or (c == '"' and _SIMPLE_DQ.match(t)))
                and (ws or i + 1 == n or pairs[i + 1][0][0] in _AFTER_OK)
                and last not in _CMD_BEFORE and last not in ("for", "select")
                and "<" not in last and ">" not in last and t not in _KEEP):
            if c == "'" or c == '"':
                out.append(f"{c}{_PH}{len(vals)}_{c}")
                vals.append(t[1:-1])
            else:
                out.append(f"{_PH}{len(vals)}_")
                vals.append(t)
            if where is not None:
                where.append(len(lead) + ms[i].start() + (c == "'" or c == '"'))
        else:
            out.append(t)
        if ws:
            out.append(ws)
            prev = ws[-1]
        else:
            prev = t[-1]
        last = t
    if not vals:
        return None
    return "".join(out), vals


def _compile(node: Any) -> Callable[[list[str]], Any] | None:
    """A builder of ``node`` with the placeholders put back, or None when it holds none (the
    shape's node itself is then shared: nodes are immutable and a Simple's cached plan is
    a function of its fields)."""
    t = type(node)
    if t is str:
        m = _PH_RE.search(node)
        if m is None:
            return None
        if m.start() == 0 and m.end() == len(node):
            k = int(m.group(1))
            return lambda v: v[k]
        if _PH_RE.search(node, m.end()) is None:
            pre, k, post = node[:m.start()], int(m.group(1)), node[m.end():]
            return lambda v: pre + v[k] + post
        return lambda v: _PH_RE.sub(lambda mm: v[int(mm.group(1))], node)
    if t is tuple:
        subs = [(i, f) for i, x in enumerate(node) if (f := _compile(x)) is not None]
        if not subs:
            return None
        items = list(node)
        if len(items) == 1:
            f0 = subs[0][1]
            return lambda v: (f0(v),)

        def tup(v: list[str]) -> tuple[Any, ...]:
            out = items.copy()
            for i, f in subs:
                out[i] = f(v)
            return tuple(out)
        return tup
    names = N._FIELDS.get(t)
    if names is None:
        if not hasattr(t, "__dataclass_fields__"):
            return None
        names = N._FIELDS[t] = tuple(t.__dataclass_fields__)
    fields = [f for f in t.__dataclass_fields__.values() if f.init]  # type: ignore[attr-defined]
    parts = [(getattr(node, f.name), _compile(getattr(node, f.name))) for f in fields]
    if all(f is None for _, f in parts):
        return None
    if len(parts) == 1:
        g0 = parts[0][1]
        return lambda v: t(g0(v))
    if len(parts) == 2:
        (a0, g0), (a1, g1) = parts
        return lambda v: t(a0 if g0 is None else g0(v), a1 if g1 is None else g1(v))
    if len(parts) == 3:
        (a0, g0), (a1, g1), (a2, g2) = parts
        return lambda v: t(a0 if g0 is None else g0(v), a1 if g1 is None else g1(v),
                           a2 if g2 is None else g2(v))
    return lambda v: t(*[a if g is None else g(v) for a, g in parts])


def _codegen(shape: Any) -> Callable[[list[str]], Any] | None:
    """``_compile`` as one generated function: a single nested constructor expression with
    the shared subtrees as constants (no builder call, list copy or test per level); None
    when the shape holds no placeholder or nests too deep for one expression."""
    ns: dict[str, Any] = {}
    helpers: list[str] = []
    helper_used: dict[str, set[int]] = {}
    every = {int(i) for i in _PH_RE.findall(repr(shape))}

    def const(x: Any) -> str:
        name = f"c{len(ns)}"
        ns[name] = x
        return name

    def gen(node: Any, depth: int) -> str | None:
        if depth > 60:
            raise RecursionError
        t = type(node)
        if t is str:
            m = _PH_RE.search(node)
            if m is None:
                return None
            if m.start() == 0 and m.end() == len(node):
                return f"v[{int(m.group(1))}]"
            if _PH_RE.search(node, m.end()) is None:
                return f"{const(node[:m.start()])} + v[{int(m.group(1))}] + {const(node[m.end():])}"
            return f"_sub(lambda mm: v[int(mm.group(1))], {const(node)})"
        if t is tuple:
            subs = [gen(x, depth + 1) for x in node]
            if all(e is None for e in subs):
                return None
            return "(" + "".join(f"{e if e is not None else const(x)}, " for x, e in zip(node, subs)) + ")"
        fields = getattr(t, "__dataclass_fields__", None)
        if fields is None:
            return None
        vals = [getattr(node, f.name) for f in fields.values() if f.init]
        subs = [gen(x, depth + 1) for x in vals]
        if all(e is None for e in subs):
            return None
        # (the node class's twin builds the same node for less: nodes._fast_init)
        expr = (f"{const(N.TWINS.get(t, t))}("
                + ", ".join(e if e is not None else const(x) for x, e in zip(vals, subs)) + ")")
        if t is not N.Simple and t is not N.Script and t is not N.CaseArm:
            return expr
        # the placeholders this node's value depends on (its own and its helpers'; a
        # string with several placeholders is rebuilt by _sub from all of v)
        used = {int(i) for i in _V_RE.findall(expr)}
        for h in _HELPER_RE.findall(expr):
            used |= helper_used[h]
        if "_sub(" in expr:
            used = set(every)
        # The same node for the same values (`echo y` in each new `if`, a case arm, a
        # branch): a Simple keeps its execution plan, and the subtree is not rebuilt. A node
        # that depends on every placeholder differs in every new line: not remembered.
        memo = used != every
        plan = _plan_code(node, gen, const) if t is N.Simple else ""
        if not memo and not plan:
            return expr
        k = len(helpers)
        name = f"s{k}"
        helper_used[name] = used
        if memo:
            key = "(" + "".join(f"v[{i}], " for i in sorted(used)) + ")"
            helpers.append(f"def {name}(v, m={{}}):\n    k = {key}\n    r = m.get(k)\n    if r is None:\n"
                           f"        if len(m) > 64:\n            m.clear()\n        r = m[k] = {expr}\n{plan}"
                           f"    return r\n")
        else:
            helpers.append(f"def {name}(v):\n    if True:\n        r = {expr}\n{plan}    return r\n")
        return f"{name}(v)"

    try:
        body = gen(shape, 0)
    except RecursionError:
        return None
    if body is None:
        return None
    ns["_sub"] = _PH_RE.sub
    ns["_setattr"] = object.__setattr__
    exec("".join(helpers) + f"def build(v):\n    return {body}\n", ns)  # noqa: S102 - generated from our own tree
    return ns["build"]  # type: ignore[no-any-return]


def _plan_code(node: N.Simple, gen: Callable[[Any, int], str | None], const: Callable[[Any], str]) -> str:
    """Lines for a generated Simple builder (after ``r = m[k] = …``) that set the new node's
    execution plan as interpreter._simple_plan would make it, or "" to leave that to the
    interpreter. A shape whose plan is an argv of static words (and ``$name``s) stays one
    for any values but two: an unquoted value must still expand to itself (_static_lit),
    and a value after the command name must not read as an assignment (the plan's
    ``set -k`` flag); both are tested on the values, and failing either leaves the plan
    unset. (The plan is a function of the node's fields: same node, same plan.)"""
    from . import interpreter as I
    plan = I._simple_plan(node)  # (the shape's own node: never run, only read here)
    if plan[0] not in (I._P_ARGV, I._P_ARGVP) or plan[2] or len(plan[1]) != len(node.words):
        return ""
    items: list[str] = []
    tests: list[str] = []
    for i, (a, w) in enumerate(zip(plan[1], node.words)):
        if type(a) is not str:
            if gen(a[0], 1) is not None:
                return ""  # (a `$name` whose node holds data: not shared with the shape)
            items.append(const(a))
            continue
        if _PH_RE.search(a) is None:
            items.append(const(a))
            continue
        if i == 0:
            return ""  # (a command name made of data: the plan depends on which name)
        e = gen(a, 1)
        if e is None:
            return ""
        if type(w.parts[0]) is N.Lit:
            tests.append(f"_static({e})")
        tests.append(f"not _assign({e})")
        items.append(e)
    if not tests:
        return ""
    c_static, c_assign = const(I._static_lit), const(I._ASSIGN_WORD.match)
    cond = " and ".join(tests).replace("_static(", c_static + "(").replace("_assign(", c_assign + "(")
    return (f"        if {cond}:\n"
            f"            _setattr(r, 'plan', ({plan[0]}, ({''.join(x + ', ' for x in items)}), False))\n")


# A second level keyed by the line with its digit runs taken out (the "skeleton"): lines
# that differ only in numbers (the usual new line: a loop bound, a line number, an id) get
# their shape and data words from one C-level split instead of the tokenizer loop. Digits
# never decide a token's boundaries or whether it is a data word (no reserved word, option
# test or special token holds one), so one line's shape is every such line's, provided the
# digit runs outside data words are the same ones (they are part of the key then).
_DIGITS = _lazy_re(r"(\d+)")
_SKELS: dict[tuple[str, bool], tuple[tuple[int, ...], dict[tuple[str, ...], Any]]] = {}
_SKELS_MAX = 512


def _hazard_hint(s: str) -> bool:
    """False when parser._COOP_HAZARD cannot match ``s`` nor its shape text (whose text
    outside the placeholders is the line's): each of its branches needs one of these."""
    return ("&" in s or "(" in s or "sh" in s or "read" in s or "wait" in s or "eval" in s
            or "source" in s or "coproc" in s or "timeout" in s or _DOT_WS.search(s) is not None)


_DOT_WS = re.compile(r"\.\s")


def _recipe(script: str, digits: list[str]) -> tuple[tuple[int, ...], Any]:
    """(indices of the digit runs the shape text holds, (shape text, values from digits))
    for a line templating takes, or ((), None) for one it does not."""
    for s in _SKIP:
        if s in script:
            return (), None
    if "$(" in script and _CMDSUB.search(script):
        return (), None
    where: list[int] = []
    sh = _shape(script, where)
    if sh is None:
        return (), None
    text, vals = sh
    if _hazard_hint(script) and (any(_COOP_HAZARD.search(v) for v in vals) or (
            len(_COOP_HAZARD.findall(script)) != len(_COOP_HAZARD.findall(text)))):
        # a data word the parser's pipeline check reads (a quoted `&`, `/bin/sh`, a quoted
        # `-t` after read): the shape's Pipeline.coop would not be the line's
        return (), None
    spans = [(m.start(), m.end()) for m in _DIGITS.finditer(script)]
    fixed = []
    exprs = []
    j = 0
    for k, (start, val) in enumerate(zip(where, vals)):
        end = start + len(val)
        pieces = []
        pos = start
        while j < len(spans) and spans[j][0] < end:
            a, b = spans[j]
            if a < start:
                fixed.append(j)  # a digit run the shape text keeps
                j += 1
                continue
            if a > pos:
                pieces.append(repr(script[pos:a]))
            pieces.append(f"d[{j}]")
            pos = b
            j += 1
        if pos < end:
            pieces.append(repr(script[pos:end]))
        exprs.append(" + ".join(pieces) or "''")
        _ = k
    fixed.extend(range(j, len(spans)))
    ns: dict[str, Any] = {}
    exec(f"def vals(d):\n    return [{', '.join(exprs)}]\n", ns)  # noqa: S102 - from our own text
    return tuple(fixed), (text, ns["vals"])


def templated(script: str, extglob: bool, parse: Callable[..., Any]) -> N.Script | None:
    """The tree of ``script`` built from its shape's, or None (then parse it as usual).
    ``parse`` is parser.parse_with_warnings; a shape that warns or fails is never used."""
    if len(script) > 400:
        return None
    plain = _plain_line(script)
    if plain is not None:
        return plain  # plain words only: the parser's own fast path builds it for less
    parts = _DIGITS.split(script)
    digits = parts[1::2]
    skel = ("\0".join(parts[0::2]), extglob)  # (a NUL cannot come from a script's text)
    ent = _SKELS.get(skel)
    if ent is None:
        fixed, rec = _recipe(script, digits)
        if len(_SKELS) >= _SKELS_MAX:
            _SKELS.clear()
        ent = _SKELS[skel] = (fixed, {tuple(digits[i] for i in fixed): rec})
    else:
        fixed = ent[0]
        fv = tuple([digits[i] for i in fixed]) if fixed else ()  # (mostly none: every number is data)
        if fv in ent[1]:
            rec = ent[1][fv]
        else:
            rec = ent[1][fv] = _recipe(script, digits)[1]
            if len(ent[1]) > 64:
                ent[1].clear()
    if rec is None:
        return None
    text, mk = rec
    vals = mk(digits)
    key = (text, extglob)
    tree = _SHAPES.get(key)
    if tree is None:
        try:
            shape, warns = parse(text, extglob=extglob)
        except Exception:  # noqa: BLE001 - the script itself gets the ordinary parse
            shape, warns = None, True
        tree = _NONE if warns or shape is None else (_codegen(shape) or _compile(shape) or (lambda v: shape))
        if len(_SHAPES) >= _SHAPES_MAX:
            _SHAPES.clear()
        _SHAPES[key] = tree
    if tree is _NONE:
        return None
    return tree(vals)
