"""Planning and reporting the network: which mechanisms a mode promises, strict refusals, notes."""

from __future__ import annotations

import dataclasses

import pytest

from agentic_bash.errors import IsolationUnavailable
from agentic_bash.isolation.plan import DISABLED, ENFORCED, plan
from agentic_bash.isolation.probe import Capabilities
from agentic_bash.isolation.report import report_from_plan, verify
from agentic_bash.network import NetworkPolicy

FULL = Capabilities(linux=True, real_root=False, user_namespace=True, mount_namespace=True,
                    pid_namespace=True, network_namespace=True, overlay_userns=True,
                    tmpfs_user_xattr=True, landlock_abi=7, seccomp=True,
                    seccomp_user_notif=True, seccomp_library=True)
NO_NETNS = dataclasses.replace(FULL, network_namespace=False,
                               reasons={"network_namespace": "EPERM"})


@pytest.mark.parametrize("network, netns, proxy", [
    ("public", ENFORCED, ENFORCED), (None, ENFORCED, ENFORCED), ("deny", ENFORCED, DISABLED),
    ("host", DISABLED, DISABLED), ("allow", DISABLED, DISABLED),
    (NetworkPolicy(allow=["x.test"]), ENFORCED, ENFORCED)])
def test_namespace_level_promises(network, netns: str, proxy: str) -> None:
    p = plan("namespace", FULL, network=network)
    assert (p.mechanisms["network_namespace"], p.mechanisms["network_proxy"]) == (netns, proxy)


def test_strict_refuses_what_cannot_be_enforced() -> None:
    for level, caps in (("landlock", FULL), ("namespace", NO_NETNS)):
        for network in ("public", "deny", NetworkPolicy(allow=["x.test"])):
            with pytest.raises(IsolationUnavailable, match="network"):
                plan(level, caps, strict=True, network=network)
        plan(level, caps, strict=True, network="host")  # nothing network-wise promised
    p = plan("landlock", FULL, network="public")
    assert any("network_namespace" in w for w in p.warnings)


def test_virtual_defaults_to_no_network() -> None:
    assert plan("virtual", None, network=None).network == "deny"
    assert plan("virtual", None, network="public").network == "public"
    assert "no network" in " ".join(report_from_plan(plan("virtual", None, network=None)).notes)


def test_report_needs_evidence_for_the_proxy() -> None:
    p = plan("namespace", FULL, network="public")
    seen = {"new_namespaces": ["user", "mnt", "pid", "net"], "overlay_mounts": ["/x"],
            "seccomp_mode": 2, "no_new_privs": 1, "cap_eff": 0, "cap_prm": 0, "cap_bnd": 0,
            "landlock_abi_applied": 7}
    r = verify(p, {**seen, "network_proxy": True, "transparent": True})
    assert {"network_namespace", "network_proxy"} <= r.enforced
    assert any("redirected" in n for n in r.notes)
    r = verify(p, {**seen, "network_proxy": True, "transparent_error": "no libnftables"})
    assert any("Network is unreachable" in n and "no libnftables" in n for n in r.notes)
    r = verify(p, seen)  # listeners never arrived: not claimed
    assert r.mechanisms["network_proxy"].startswith("unavailable")
    assert any("network_proxy" in w for w in r.warnings)


def test_none_level_cannot_enforce_a_network_policy() -> None:
    p = plan("none", None, network="public")
    assert p.network == "host" and any("cannot enforce network" in w for w in p.warnings)
    with pytest.raises(IsolationUnavailable, match="network"):
        plan("none", None, strict=True, network=NetworkPolicy(allow=["x.test"]))
    assert not plan("none", None, network=None).warnings[1:]  # only the level's own warning
