"""Argument checks for the public API: TypeError/ValueError naming the parameter, before any side effect."""

# One place for every Sandbox(...) keyword: ``SANDBOX_OPTIONS`` maps each parameter to a
# checker ``(name, value) -> value`` (returning the value to use). A new constructor
# parameter (network=, hide=, read_only=, image=, allow_ptrace=, ...) gets one entry here;
# ``check_sandbox_options`` rejects names it does not know, so ``Sandbox(bogus=1)`` is a
# TypeError from the Sandbox, not from whichever executor happens to receive it.

from __future__ import annotations

import math
import os
from typing import Any, Callable, Mapping

__all__ = ["ISOLATION_LEVELS", "SANDBOX_OPTIONS", "check_path", "check_run_args", "check_sandbox_options",
           "check_write_data", "plain_run_args"]

_Checker = Callable[[str, Any], Any]

ISOLATION_LEVELS = ("auto", "virtual", "namespace", "landlock", "none")


def _tname(v: Any) -> str:
    return type(v).__name__


def _bool(name: str, v: Any) -> bool:
    if not isinstance(v, bool):
        raise TypeError(f"{name} must be True or False, not {_tname(v)}")
    return v


def _str(name: str, v: Any) -> str:
    if not isinstance(v, str):
        raise TypeError(f"{name} must be a str, not {_tname(v)}")
    if not v or "\0" in v:
        raise ValueError(f"{name} must be a non-empty string without NUL, not {v!r}")
    return v


def _int(name: str, v: Any, lo: int = 0) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise TypeError(f"{name} must be an int, not {_tname(v)}")
    if v < lo:
        raise ValueError(f"{name} must be >= {lo}, not {v}")
    return v


def _opt(check: _Checker) -> _Checker:
    return lambda name, v: None if v is None else check(name, v)


def check_path(name: str, v: Any) -> str:
    """A path argument: str or os.PathLike[str]."""
    if isinstance(v, os.PathLike):
        v = os.fspath(v)
    if not isinstance(v, str):
        raise TypeError(f"{name} must be a str path, not {_tname(v)}")
    if "\0" in v:
        raise ValueError(f"{name} must not contain NUL: {v!r}")
    return v


def _abs_path(name: str, v: Any) -> str:
    v = check_path(name, v)
    if not v.startswith("/"):
        raise ValueError(f"{name} must be an absolute path, not {v!r}")
    return v


def _env(name: str, v: Any) -> dict[str, str] | None:
    if v is None:
        return None
    if not isinstance(v, Mapping):
        raise TypeError(f"{name} must be a mapping of str to str, not {_tname(v)}")
    out: dict[str, str] = {}
    for k, x in v.items():
        if not isinstance(k, str):
            raise TypeError(f"{name} keys must be str, not {_tname(k)} ({k!r})")
        if not k or "=" in k or "\0" in k:
            raise ValueError(f"{name}: invalid variable name {k!r}")
        if not isinstance(x, str):
            raise TypeError(f"{name}[{k!r}] must be a str, not {_tname(x)}")
        if "\0" in x:
            raise ValueError(f"{name}[{k!r}] must not contain NUL")
        out[k] = x
    return out


def _timeout(name: str, v: Any) -> float | None:
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise TypeError(f"{name} must be a number of seconds, not {_tname(v)} ({v!r})")
    if not math.isfinite(v) or v <= 0:
        raise ValueError(f"{name} must be a positive, finite number of seconds, not {v!r}")
    return v


def _limits(name: str, v: Any) -> Any:
    from .limits import Limits
    if v is None or isinstance(v, Limits):
        return v
    hint = " (e.g. Limits(**{...}))" if isinstance(v, Mapping) else ""
    raise TypeError(f"{name} must be an agentic_bash.Limits, not {_tname(v)}{hint}")


def _isolation(name: str, v: Any) -> str:
    if not isinstance(v, str):
        raise TypeError(f"{name} must be a str, not {_tname(v)}")
    if v not in ISOLATION_LEVELS:
        raise ValueError(f"{name} must be one of {', '.join(ISOLATION_LEVELS)}, not {v!r}")
    return v


def _mounts(name: str, v: Any) -> Any:
    if v is None:
        return None
    if not isinstance(v, Mapping):
        raise TypeError(f"{name} must be a mapping of sandbox path to host directory, not "
                        f"{_tname(v)}")
    for dest, spec in v.items():
        where = f"{name}[{dest!r}]"
        _abs_path(f"{name} key {dest!r}", dest)
        if hasattr(spec, "src") and hasattr(spec, "mode"):
            src, mode = spec.src, spec.mode
        elif isinstance(spec, tuple):
            if len(spec) != 2:
                raise ValueError(f"{where} must be (host_dir, mode), not {spec!r}")
            src, mode = spec
        else:
            src, mode = spec, "cow"
        src = check_path(where, src)
        if mode not in ("cow", "ro", "rw"):
            raise ValueError(f"{where}: mode must be 'cow', 'ro' or 'rw', not {mode!r}")
        if not os.path.isdir(src):
            why = "does not exist" if not os.path.lexists(src) else "is not a directory"
            raise ValueError(f"{where}: host directory {src!r} {why}")
    return v


def _commands(name: str, v: Any) -> Any:
    if v is None:
        return None
    if isinstance(v, Mapping):
        for k, fn in v.items():
            _command_name(f"{name} key", k)
            if not callable(fn):
                raise TypeError(f"{name}[{k!r}] must be callable, not {_tname(fn)}")
        return v
    if isinstance(v, (str, bytes)):
        raise TypeError(f"{name} takes a list of command names, not a string")
    try:
        items = list(v)
    except TypeError:
        raise TypeError(f"{name} must be a list of command names or a mapping of name to "
                        f"function, not {_tname(v)}") from None
    for k in items:
        _command_name(f"{name} entry", k)
    return items


def _allowlist(name: str, v: Any) -> Any:
    if v is None:
        return None
    if isinstance(v, (str, bytes)) or isinstance(v, Mapping):
        raise TypeError(f"{name} must be a collection of command names, not {_tname(v)}")
    try:
        items = list(v)
    except TypeError:
        raise TypeError(f"{name} must be a collection of command names, not {_tname(v)}") \
            from None
    for k in items:
        _command_name(f"{name} entry", k)
    return set(items)


def _command_name(name: str, v: Any) -> str:
    if not isinstance(v, str):
        raise TypeError(f"{name} must be a str command name, not {_tname(v)}")
    if not v or "/" in v or "\0" in v or any(c.isspace() for c in v):
        raise ValueError(f"{name}: invalid command name {v!r}")
    return v


def _callable(name: str, v: Any) -> Any:
    if v is not None and not callable(v):
        raise TypeError(f"{name} must be callable, not {_tname(v)}")
    return v


def _transforms(name: str, v: Any) -> tuple[Any, ...]:
    if callable(v):
        raise TypeError(f"{name} must be a sequence of functions (wrap one in a list)")
    try:
        fns = tuple(v)
    except TypeError:
        raise TypeError(f"{name} must be a sequence of functions, not {_tname(v)}") from None
    for fn in fns:
        if not callable(fn):
            raise TypeError(f"{name} entries must be callable, not {_tname(fn)}")
    return fns


def _network(name: str, v: Any) -> Any:
    # the network package owns what a policy may be ('public', 'deny', 'host', 'allow',
    # 'allowlist', a NetworkPolicy or its dict); this only asks it, before anything starts
    if v is None:
        return None
    from .network.policy import NetworkPolicy
    try:
        NetworkPolicy.coerce(v)
    except (TypeError, ValueError) as e:
        raise type(e)(f"{name}: {e}") from None
    return v


def _engine(name: str, v: Any) -> str:
    if v not in ("interpreter", "bash"):
        raise ValueError(f"{name} must be 'interpreter' or 'bash', not {v!r}")
    return v


def _any(name: str, v: Any) -> Any:
    return v


def _image(name: str, value: Any) -> Any:
    """A built image's name or directory (str/PathLike) or a snapshot tar's bytes."""
    if isinstance(value, (str, os.PathLike, bytes, bytearray, memoryview)):
        return value
    raise TypeError(f"{name} must be an image name, a directory, a snapshot path or bytes, "
                    f"not {_tname(value)}")


def _patterns(name: str, v: Any) -> tuple[str, ...]:
    """Protected-path globs (hide=, read_only=): workspace-relative, ``**`` any depth."""
    if v is None:
        return ()
    if isinstance(v, (str, bytes)) or isinstance(v, Mapping):
        raise TypeError(f"{name} takes a list of glob patterns, not {_tname(v)}")
    try:
        items = list(v)
    except TypeError:
        raise TypeError(f"{name} takes a list of glob patterns, not {_tname(v)}") from None
    for pat in items:
        if not isinstance(pat, str):
            raise TypeError(f"{name} entries must be str patterns, not {_tname(pat)}")
        if not pat.strip("/") or "\0" in pat:
            raise ValueError(f"{name}: empty pattern or NUL in {pat!r}")
        if pat.startswith("/"):
            raise ValueError(f"{name}: patterns are relative to the workspace, not absolute: "
                             f"{pat!r}")
        if ".." in pat.split("/"):
            raise ValueError(f"{name}: '..' is not allowed in a pattern: {pat!r}")
    return tuple(items)


SANDBOX_OPTIONS: dict[str, _Checker] = {
    "isolation": _isolation,
    "env": _env,
    "workdir": _abs_path,
    "mounts": _mounts,
    "limits": _limits,
    "strict": _bool,
    "commands": _commands,
    "prefer_inprocess": _bool,
    "hostname": _str,
    "user": _str,
    "uid": _opt(_int),
    "pid": lambda n, v: _int(n, v, 1),
    "ppid": _int,
    "commands_allowlist": _allowlist,
    "transforms": _transforms,
    "on_output": _callable,
    "on_violation": _callable,
    "on_command": _callable,
    "on_result": _callable,
    "before_run": _callable,
    "after_run": _callable,
    # keyword-only extras, forwarded to the executor
    "network": _network,
    "base": _opt(check_path),
    "image": _opt(_image),
    "engine": _engine,
    "hide": _patterns,
    "read_only": _patterns,
    "allow_ptrace": _bool,
    "_snapshot": _any,   # Sandbox.from_snapshot's private channel
}
"""Every keyword ``Sandbox()`` accepts, with its checker. Add new parameters here."""


def check_sandbox_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """Check ``Sandbox(**options)``; returns the values to use. Unknown names are a TypeError
    (with the closest known name, if one is close)."""
    out: dict[str, Any] = {}
    for k, v in options.items():
        check = SANDBOX_OPTIONS.get(k)
        if check is None:
            import difflib
            near = difflib.get_close_matches(k, [n for n in SANDBOX_OPTIONS if n[0] != "_"], 1)
            hint = f" (did you mean {near[0]!r}?)" if near else ""
            raise TypeError(f"Sandbox() got an unexpected keyword argument {k!r}{hint}")
        out[k] = check(k, v)
    return out


def plain_run_args(script: Any, stdin: Any, env: Any, cwd: Any, timeout: Any) -> bool:
    """Whether ``run()``'s arguments are the common call's (a str script, stdin None or bytes,
    no env, cwd or timeout): nothing check_run_args would refuse or change, so the per-call
    path skips it."""
    return (type(script) is str and env is None and cwd is None and timeout is None
            and (stdin is None or type(stdin) is bytes))


def check_run_args(script: Any, stdin: Any, env: Any, cwd: Any,
                   timeout: Any) -> tuple[Any, dict[str, str] | None, str | None, float | None]:
    """Check ``run()``'s arguments; returns (stdin, env, cwd, timeout) to use."""
    if not isinstance(script, str):
        raise TypeError(f"script must be a str, not {_tname(script)}")
    if not (stdin is None or isinstance(stdin, (str, bytes, bytearray, memoryview))
            or callable(getattr(stdin, "read", None))):
        raise TypeError(f"stdin must be bytes, str or a binary file, not {_tname(stdin)}")
    return (stdin, _env("env", env), None if cwd is None else check_path("cwd", cwd),
            _timeout("timeout", timeout))


def check_write_data(data: Any) -> bytes:
    """``write_file``'s data: bytes-like or str (UTF-8)."""
    if isinstance(data, str):
        return data.encode("utf-8", "surrogateescape")
    if isinstance(data, (bytes, bytearray, memoryview)):
        return bytes(data)
    raise TypeError(f"data must be bytes or str, not {_tname(data)}")
