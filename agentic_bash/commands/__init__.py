"""In-process coreutils and friends over the VFS; each command is ``(ctx, argv) -> int``."""

from __future__ import annotations

import pkgutil

from .base import REGISTRY, CommandContext, CommandSpec, command

__all__ = ["MODULES", "REGISTRY", "CommandContext", "CommandSpec", "command", "load_all"]

# Which module registers which commands: a lookup imports only the module it needs (start-up
# stays cheap). tests/commands/test_lazy_table.py checks this against what the modules register;
# a module missing here still loads when the registry is iterated (load_all(eager=True)).
MODULES: dict[str, tuple[str, ...]] = {
    "archive": ("bunzip2", "bzcat", "bzip2", "gunzip", "gzip", "tar", "unxz", "unzip", "xz",
        "xzcat", "zcat", "zip"),
    "awkcmd": ("awk", "gawk", "mawk", "nawk"),
    "bccmd": ("bc",),
    "coreextra": ("dd", "factor", "link", "nice", "stdbuf", "sum", "tsort", "unlink"),
    "diffcmd": ("cmp", "diff", "patch"),
    "exprcmd": ("expr",),
    "fieldutils": ("comm", "cut", "expand", "fold", "join", "nl", "paste", "tr", "unexpand"),
    "fileutils": ("chgrp", "chmod", "chown", "cp", "install", "ln", "mkdir", "mkfifo", "mktemp",
        "mv", "pwd", "readlink", "realpath", "rm", "rmdir", "sync", "touch", "truncate"),
    "findcmd": ("find",),
    "grepcmd": ("egrep", "fgrep", "grep"),
    "hashutils": ("b2sum", "base32", "base64", "basenc", "cksum", "md5sum", "sha1sum", "sha224sum",
        "sha256sum", "sha384sum", "sha512sum", "shasum"),
    "jqcmd": ("jq",),
    "lscmd": ("df", "dir", "du", "file", "ls", "stat", "tree", "vdir"),
    "moretext": ("column", "csplit", "fmt", "iconv", "numfmt", "pr", "shuf", "split"),
    "odcmd": ("hd", "hexdump", "od", "strings", "xxd"),
    "scriptutils": ("clear", "dircolors", "envsubst", "getopt", "less", "locale", "logger", "more", "pathchk", "stty", "tput"),
    "sedcmd": ("sed",),
    "sortcmd": ("sort", "uniq"),
    "sysutils": ("arch", "date", "env", "false", "flock", "getconf", "groups", "hostname", "id", "kill",
        "logname", "nohup", "nproc", "printenv", "ps", "sleep", "time", "timeout", "true", "tty",
        "uname", "users", "which", "whoami", "test", "["),
    "textutils": ("basename", "cat", "dirname", "echo", "head", "printf", "rev", "seq", "tac",
        "tail", "tee", "wc", "yes"),
    "xargscmd": ("xargs",),
}

_loaded = False


def _import_everything() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    from .base import import_commands
    try:
        for m in pkgutil.iter_modules(__path__):
            if not m.name.startswith("_") and m.name != "base":
                import_commands(f"{__name__}.{m.name}")
    except BaseException:
        _loaded = False  # a stopped run: the next listing imports the rest
        raise


REGISTRY.lazy = {n: f"{__name__}.{mod}" for mod, names in MODULES.items() for n in names}  # type: ignore[attr-defined]
REGISTRY.everything = _import_everything  # type: ignore[attr-defined]


def load_all(eager: bool = False) -> dict[str, CommandSpec]:
    """The registry; a command's module is imported on first use (all of them with ``eager``)."""
    if eager:
        _import_everything()
    return REGISTRY
