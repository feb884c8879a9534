"""``sandbox.isolation``: what is actually enforced, per mechanism, verified where it runs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from .._values import value_methods
from .plan import DISABLED, ENFORCED, MECHANISMS, Plan

__all__ = ["IsolationReport", "report_from_plan", "verify"]


@value_methods
@dataclass(frozen=True, slots=True, repr=False, eq=False)
class IsolationReport:
    """``mechanisms`` maps each of ``MECHANISMS`` to ``enforced``, ``unavailable: <reason>``
    or ``disabled``; ``enforced`` is the set of names actually applied."""

    level: str
    requested: str
    mechanisms: Mapping[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()

    @property
    def enforced(self) -> frozenset[str]:
        return frozenset(k for k, v in self.mechanisms.items() if v == ENFORCED)

    def __str__(self) -> str:
        head = f"isolation: {self.level}"
        if self.requested != self.level:
            head += f" (requested {self.requested!r})"
        if self.level == "none":
            head += " — native commands run on the host with nothing confined"
        elif self.level == "virtual":
            head += " — interpreter in this process over a virtual filesystem; no native commands"
        width = max(len(m) for m in self.mechanisms) if self.mechanisms else 0
        lines = [head] + [f"  {m.ljust(width)}  {self.mechanisms[m]}" for m in self.mechanisms]
        lines += [f"  note: {n}" for n in self.notes]
        lines += [f"  warning: {w}" for w in self.warnings]
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {"level": self.level, "requested": self.requested,
                "mechanisms": dict(self.mechanisms), "enforced": sorted(self.enforced),
                "notes": list(self.notes), "warnings": list(self.warnings)}


def report_from_plan(p: Plan) -> IsolationReport:
    """The report of a level that starts no sandbox process (``virtual``, ``none``)."""
    if p.sandboxed:
        raise ValueError("a sandboxed plan is reported only after verify()")
    mech = {m: p.mechanisms.get(m, DISABLED) for m in MECHANISMS}
    notes: tuple[str, ...] = ()
    if p.level == "virtual":
        notes = ("no host process is started; unknown commands exit 127",
                 "network: none (no network in virtual mode)" if p.network == "deny" else
                 f"network: {p.network} — only /dev/tcp and /dev/udp, connected from this "
                 "process to addresses the policy checked")
    elif p.level == "none":
        notes = ("network: the host's (isolation='none' confines nothing)",)
    return IsolationReport(p.level, p.requested, mech, notes, p.warnings)


def verify(p: Plan, observed: Mapping[str, Any]) -> IsolationReport:
    """Turn planned mechanisms into the report, keeping ``enforced`` only for what the runner
    observed from inside itself (``observed`` comes from runner.self_check()).

    Security invariant: an advertised protection that is not applied is the worst bug, so a
    planned mechanism without positive evidence is reported ``unavailable``.
    """
    mech: dict[str, str] = {}
    problems: list[str] = []
    for m in MECHANISMS:
        planned = p.mechanisms.get(m, DISABLED)
        if planned != ENFORCED:
            mech[m] = planned
            continue
        ok, why = _evidence(m, observed)
        if ok:
            mech[m] = ENFORCED
        else:
            mech[m] = f"unavailable: not applied ({why})"
            problems.append(m)
    notes = []
    if mech.get("seccomp") == ENFORCED:
        if observed.get("seccomp_notify"):
            notes.append("seccomp refusals are itemised in Result.violations (user "
                         "notification answered outside the sandboxed process)")
        else:
            notes.append("seccomp refusals return EPERM/ENOSYS and are not itemised in "
                         "Result.violations")
    if p.level == "namespace":
        notes.append(("/usr /etc /opt /var are copy-on-write in the session layer" if p.cow_system
                      else "/usr /etc /opt /var are read-only (not real root); installs go to "
                           "$HOME or a venv")
                     + f"; session layer on {p.session_layer}")
    notes.append(_network_note(p.network, mech, observed))
    if observed.get("meminfo") or p.level == "landlock":
        notes.append(_memory_view_note(str(observed.get("meminfo")
                                            or "host (no mount namespace)")))
    if p.level == "landlock":
        notes.append("host filesystem view (read-only); writes only under the workspace")
    if observed.get("fast_spawn"):
        # (cspawn14) a speed, not a protection: every child gets the same set-up either way
        fs = str(observed["fast_spawn"])
        notes.append("native spawns: compiled (executors/_fastspawn.c)" if fs == "compiled"
                     else f"native spawns: pure Python, slower ({fs})")
    warnings = p.warnings + tuple(f"{m} was planned but is not in effect" for m in problems)
    if observed.get("engine_error"):
        # (compat12) an install missing a required module (check11 saw it as a timeout with
        # no limit_exceeded): the sandbox works, but not as documented
        warnings += (f"the interpreter could not be imported in the sandbox "
                     f"({observed['engine_error']}): each run is /bin/bash -c, and shell state "
                     "(variables, functions, cd) does not carry over between runs; install the "
                     "package's dependencies",)
    return IsolationReport(p.level, p.requested, mech, tuple(notes), warnings)


def _memory_view_note(meminfo: str) -> str:
    """(compat12) What `free`, top, psutil and node's os.totalmem() are told (procfs.py)."""
    if meminfo.startswith("sandbox"):
        src = ("its memory cgroup" if "cgroup" in meminfo
               else "the watchdog's last sample (every 50 ms while busy)")
        return ("memory view: /proc/meminfo is the sandbox's own (MemTotal = max_memory_bytes, "
                f"free and available from {src}, no swap), rewritten by pid 1 as each "
                "reader opens it; sysinfo(2) tells a program its per-program cap "
                "(max_process_memory) when that is lower")
    why = meminfo.partition("(")[2].rstrip(")") or "not replaced"
    return f"memory view: /proc/meminfo is the host's ({why})"


def _network_note(mode: str, mech: Mapping[str, str], o: Mapping[str, Any]) -> str:
    if mode == "host":
        return "network: host — shares the host's network stack (host loopback services are reachable)"
    if mech.get("network_namespace") != ENFORCED:
        return f"network: {mode} requested but NOT enforced (no own network namespace)"
    if mode == "deny":
        return "network: deny — own network namespace with only loopback"
    if mech.get("network_proxy") != ENFORCED:
        return f"network: {mode} — own network namespace, but the proxy is not running: loopback only"
    what = ("any host whose addresses are public" if mode == "public"
            else "only the allowlisted hosts/networks")
    return (f"network: {mode} — own network namespace; outbound only through the library's "
            f"proxy (HTTP CONNECT, http:// and SOCKS5 at 127.0.0.1:3128, DNS at "
            f"127.0.0.1:53) to {what}; loopback, private, link-local/metadata, CGNAT, ULA, "
            "multicast and this host's addresses refused; "
            + ("TCP of tools that ignore the proxy variables is redirected to it (nftables in "
               "the sandbox's own namespace, SO_ORIGINAL_DST; "
               + ("IPv4 and IPv6" if o.get("transparent6") else "IPv4 only") +
               "); other non-loopback traffic is refused" if o.get("transparent") else
               "tools that ignore the proxy variables get 'Network is unreachable'"
               + (f" (no redirect: {o['transparent_error']})" if o.get("transparent_error")
                  else "")))


def _evidence(m: str, o: Mapping[str, Any]) -> tuple[bool, str]:
    if m == "network_proxy":
        ok = bool(o.get("network_proxy"))
        return ok, "" if ok else "the sandbox's proxy listeners did not arrive"
    if m in ("user_namespace", "mount_namespace", "pid_namespace", "network_namespace"):
        key = {"user_namespace": "user", "mount_namespace": "mnt", "pid_namespace": "pid",
               "network_namespace": "net"}[m]
        ok = key in o.get("new_namespaces", ())
        return ok, "" if ok else f"/proc/self/ns/{key} equals the host's"
    if m == "overlay":
        ok = bool(o.get("overlay_mounts"))
        return ok, "" if ok else "no overlay mount in the sandbox root"
    if m == "seccomp":
        ok = o.get("seccomp_mode") == 2
        return ok, "" if ok else f"Seccomp mode {o.get('seccomp_mode')!r}"
    if m == "no_new_privs":
        ok = o.get("no_new_privs") == 1
        return ok, "" if ok else f"NoNewPrivs {o.get('no_new_privs')!r}"
    if m == "caps_dropped":
        ok = o.get("cap_eff") == 0 and o.get("cap_bnd") == 0 and o.get("cap_prm") == 0
        return ok, "" if ok else f"CapEff {o.get('cap_eff')!r} CapBnd {o.get('cap_bnd')!r}"
    if m == "landlock":
        ok = bool(o.get("landlock_abi_applied"))
        return ok, "" if ok else str(o.get("landlock_error") or "not restricted")
    return False, "unknown mechanism"
