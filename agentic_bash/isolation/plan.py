"""Pure planning: which mechanisms a level applies given probed ``Capabilities``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from .._values import value_methods
from ..errors import IsolationUnavailable
from .probe import Capabilities

__all__ = ["DISABLED", "ENFORCED", "LEVELS", "MECHANISMS", "Plan", "plan"]

MECHANISMS: tuple[str, ...] = (
    "user_namespace", "mount_namespace", "pid_namespace", "network_namespace", "overlay",
    "landlock", "seccomp", "no_new_privs", "caps_dropped", "network_proxy",
)
LEVELS: tuple[str, ...] = ("auto", "namespace", "landlock", "none", "virtual")
ENFORCED = "enforced"
DISABLED = "disabled"
_NS = ("user_namespace", "mount_namespace", "pid_namespace")


def _unavail(reason: str) -> str:
    return f"unavailable: {reason}"


@value_methods
@dataclass(frozen=True, slots=True, repr=False, eq=False)
class Plan:
    """What a sandbox of ``level`` will apply. ``mechanisms`` uses the report's vocabulary
    (``enforced`` here means *to be applied*; the runner verifies before the report says so)."""

    requested: str
    level: str
    """Resolved level: ``namespace``, ``landlock``, ``virtual`` or ``none``."""
    mechanisms: Mapping[str, str] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    network: str = "host"
    """Network mode: ``public``, ``allowlist``, ``deny`` or ``host`` (see network.NetworkPolicy)."""
    session_layer: str = ""
    """``tmpfs`` or ``disk`` (tmpfs without user xattrs cannot hold overlay upper dirs)."""
    cow_system: bool = False
    """/usr /etc /opt /var are copy-on-write (caller is real root) instead of read-only."""
    landlock_abi: int = 0
    seccomp_notify: bool = False

    def applies(self, name: str) -> bool:
        return self.mechanisms.get(name) == ENFORCED

    @property
    def sandboxed(self) -> bool:
        return self.level in ("namespace", "landlock")


def plan(level: str, caps: Capabilities, *, strict: bool = False, network: Any = "host") -> Plan:
    """Resolve ``level`` against ``caps``. Pure; raises ``IsolationUnavailable`` only when
    ``strict`` and a mechanism the level promises is missing (or ``level`` is unknown).
    ``network`` is a mode name or a ``NetworkPolicy`` (``allow`` is ``host``'s old name)."""
    import dataclasses

    from ..network.policy import NetworkPolicy
    if level not in LEVELS:
        raise ValueError(f"isolation must be one of {', '.join(LEVELS)}; got {level!r}")
    mode = NetworkPolicy.coerce(network).mode
    if level == "none" and network is not None and mode != "host":
        # nothing confines isolation='none': a network policy asked for would be a lie
        why = f"isolation='none' cannot enforce network={mode!r} (commands use the host's network)"
        if strict:
            raise IsolationUnavailable(why)
        p = _plan(level, caps, strict, mode)
        return dataclasses.replace(p, warnings=p.warnings + (why,), network="host")
    p = _plan(level, caps, strict, mode)
    if network is None and p.level in ("virtual", "none"):
        # the default: no network in virtual mode; 'none' is the host's anyway
        p = dataclasses.replace(p, network="deny" if p.level == "virtual" else "host",
                                mechanisms={**p.mechanisms, "network_proxy": DISABLED})
    return p


def _plan(level: str, caps: Capabilities, strict: bool, network: str) -> Plan:
    if level == "virtual":
        return Plan(level, "virtual", {m: DISABLED for m in MECHANISMS}, network=network)
    if level == "none":
        return Plan(level, "none", {m: DISABLED for m in MECHANISMS}, (
            "isolation='none': native commands run on the host with nothing confined",),
            network=network)
    if level == "landlock":
        return _plan_landlock(caps, strict, network)
    return _plan_namespace(level, caps, strict, network)


def _common(caps: Capabilities, mech: dict[str, str], missing: list[str]) -> int:
    """seccomp, no_new_privs, caps_dropped and Landlock, shared by both sandboxed levels."""
    if not caps.linux:
        for m in ("seccomp", "no_new_privs", "caps_dropped", "landlock"):
            mech[m] = _unavail("not Linux")
            missing.append(m)
        return 0
    if caps.seccomp and caps.seccomp_library:
        mech["seccomp"] = ENFORCED
    else:
        why = caps.reasons.get("seccomp") or caps.reasons.get("seccomp_library") or "unsupported"
        mech["seccomp"] = _unavail(why)
        missing.append("seccomp")
    mech["no_new_privs"] = ENFORCED
    mech["caps_dropped"] = ENFORCED
    if caps.landlock_abi > 0:
        mech["landlock"] = ENFORCED
    else:
        mech["landlock"] = _unavail(caps.reason("landlock"))
    return caps.landlock_abi


def _plan_proxy(network: str, mech: dict[str, str], missing: list[str]) -> None:
    """The filtering proxy stands between the sandbox and the internet for ``public`` and
    ``allowlist``; it needs the sandbox's own network namespace."""
    if network not in ("public", "allowlist"):
        mech["network_proxy"] = DISABLED
    elif mech.get("network_namespace") == ENFORCED:
        mech["network_proxy"] = ENFORCED
    else:
        mech["network_proxy"] = _unavail("needs the sandbox's own network namespace")
        missing.append("network_proxy")


def _plan_namespace(requested: str, caps: Capabilities, strict: bool, network: str) -> Plan:
    mech: dict[str, str] = {}
    missing: list[str] = []
    for m in _NS:
        if getattr(caps, m):
            mech[m] = ENFORCED
        else:
            mech[m] = _unavail(caps.reason(m))
            missing.append(m)
    if caps.overlay_userns:
        mech["overlay"] = ENFORCED
    else:
        mech["overlay"] = _unavail(caps.reason("overlay_userns"))
        missing.append("overlay")
    if network == "host":
        mech["network_namespace"] = DISABLED
    elif caps.network_namespace:
        mech["network_namespace"] = ENFORCED
    else:
        mech["network_namespace"] = _unavail(caps.reason("network_namespace"))
        missing.append("network_namespace")
    _plan_proxy(network, mech, missing)
    abi = _common(caps, mech, missing)
    if strict and missing:
        raise IsolationUnavailable(
            f"isolation={requested!r} (strict) cannot enforce: "
            + "; ".join(f"{m} ({mech[m].removeprefix('unavailable: ')})" for m in missing))
    core_missing = [m for m in missing if m in _NS or m == "overlay"]
    if core_missing:
        why = "; ".join(f"{m}: {mech[m].removeprefix('unavailable: ')}" for m in core_missing)
        return Plan(requested, "virtual", {m: DISABLED for m in MECHANISMS}, (
            f"isolation={requested!r}: the kernel sandbox is not possible here ({why}); "
            "falling back to 'virtual' (no native commands)",), network=network)
    warnings = tuple(f"isolation={requested!r}: {m} {mech[m]}" for m in missing)
    if mech["landlock"] != ENFORCED:
        warnings += (f"isolation={requested!r}: landlock {mech['landlock']}",)
    return Plan(requested, "namespace", mech, warnings, network=network,
                session_layer="tmpfs" if caps.tmpfs_user_xattr else "disk",
                cow_system=caps.real_root, landlock_abi=abi,
                seccomp_notify=caps.seccomp_user_notif and mech["seccomp"] == ENFORCED)


def _plan_landlock(caps: Capabilities, strict: bool, network: str) -> Plan:
    mech: dict[str, str] = {m: DISABLED for m in ("user_namespace", "mount_namespace",
                                                  "pid_namespace", "overlay")}
    missing: list[str] = []
    abi = _common(caps, mech, missing)
    if abi == 0:
        missing.append("landlock")
    if network == "host":
        mech["network_namespace"] = DISABLED
    else:
        # Without namespaces the only network confinement is Landlock's TCP rules (ABI >= 4).
        mech["network_namespace"] = _unavail("isolation='landlock' uses no namespaces")
        missing.append("network_namespace")
    _plan_proxy(network, mech, missing)
    if strict and missing:
        raise IsolationUnavailable(
            "isolation='landlock' (strict) cannot enforce: "
            + "; ".join(f"{m} ({mech[m].removeprefix('unavailable: ')})" for m in missing))
    warnings = tuple(f"isolation='landlock': {m} {mech[m]}" for m in missing)
    if abi == 0:
        warnings += ("isolation='landlock' without Landlock: writes are NOT confined to the "
                     "workspace",)
    return Plan("landlock", "landlock", mech, warnings, network=network, landlock_abi=abi,
                seccomp_notify=caps.seccomp_user_notif and mech["seccomp"] == ENFORCED)
