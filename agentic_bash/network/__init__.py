"""Network policy for sandboxes: public (default, through a filtering proxy), deny, allowlist, host."""

from __future__ import annotations

import warnings
from typing import Any

from .policy import MODES, NetworkPolicy, blocked_reason, canonical_host, parse_rule

__all__ = ["MODES", "NetworkPolicy", "blocked_reason", "canonical_host", "parse_rule",
           "resolve_network"]


def resolve_network(value: Any, isolation: str) -> NetworkPolicy | None:
    """``Sandbox(network=)`` checked before anything starts (TypeError/ValueError naming the
    parameter). ``None`` stays None: the default is ``public`` where there is a sandbox process
    and no network at all in ``virtual``. ``host`` warns: host loopback services answer."""
    if value is None:
        return None
    try:
        policy = NetworkPolicy.coerce(value)
    except (TypeError, ValueError) as e:
        raise type(e)(f"network: {e}") from None
    if policy.mode == "host" and isolation != "none":
        warnings.warn("network='host': the sandbox shares the host's network stack; services "
                      "on the host's loopback (databases, Docker API, cloud metadata) are "
                      "reachable", RuntimeWarning, stacklevel=4)
    return policy
