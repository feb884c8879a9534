"""In-process coreutils and friends over the VFS; each command is ``(ctx, argv) -> int``."""
