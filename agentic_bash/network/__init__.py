"""Network policy for sandboxed modes (allow, deny, allowlist)."""
