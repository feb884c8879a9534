"""plan() over fabricated Capabilities for every combination, and the report built from it."""

from __future__ import annotations

import itertools

import pytest

from agentic_bash.errors import IsolationUnavailable
from agentic_bash.isolation.plan import DISABLED, ENFORCED, LEVELS, MECHANISMS, plan
from agentic_bash.isolation.probe import Capabilities
from agentic_bash.isolation.report import report_from_plan, verify

FLAGS = ("user_namespace", "mount_namespace", "pid_namespace", "network_namespace",
         "overlay_userns", "tmpfs_user_xattr", "seccomp", "seccomp_library", "real_root")
CORE = ("user_namespace", "mount_namespace", "pid_namespace", "overlay_userns")

FULL = Capabilities(linux=True, real_root=False, user_namespace=True, mount_namespace=True,
                    pid_namespace=True, network_namespace=True, overlay_userns=True,
                    tmpfs_user_xattr=True, landlock_abi=7, seccomp=True,
                    seccomp_user_notif=True, seccomp_library=True)


def all_caps():
    for bits in itertools.product((False, True), repeat=len(FLAGS)):
        for abi in (0, 7):
            kw = dict(zip(FLAGS, bits))
            yield Capabilities(linux=True, landlock_abi=abi,
                               reasons={"user_namespace": "EPERM"}, **kw)
    yield Capabilities()  # not Linux at all


def promised(level: str, network: str, caps: Capabilities) -> set[str]:
    if level in ("auto", "namespace"):
        p = {"user_namespace", "mount_namespace", "pid_namespace", "overlay", "no_new_privs",
             "caps_dropped", "seccomp"}
        if caps.landlock_abi:
            p.add("landlock")
        if network != "allow":
            p.add("network_namespace")
        return p
    if level == "landlock":
        p = {"landlock", "seccomp", "no_new_privs", "caps_dropped"}
        return p | ({"network_namespace"} if network != "allow" else set())
    if level == "none" and network != "allow":
        return {"network_namespace"}  # asked for, and nothing at this level can give it
    return set()


def supported(m: str, caps: Capabilities, level: str = "namespace") -> bool:
    if not caps.linux:
        return False
    if level in ("landlock", "none") and m == "network_namespace":
        return False  # no namespaces at these levels
    return {"user_namespace": caps.user_namespace, "mount_namespace": caps.mount_namespace,
            "pid_namespace": caps.pid_namespace, "network_namespace": caps.network_namespace,
            "overlay": caps.overlay_userns, "landlock": caps.landlock_abi > 0,
            "seccomp": caps.seccomp and caps.seccomp_library, "no_new_privs": True,
            "caps_dropped": True}[m]


@pytest.mark.parametrize("network", ["allow", "deny"])
@pytest.mark.parametrize("level", LEVELS)
def test_every_combination(level: str, network: str) -> None:
    for caps in all_caps():
        for strict in (False, True):
            try:
                p = plan(level, caps, strict=strict, network=network)
            except IsolationUnavailable:
                assert strict
                assert any(not supported(m, caps, level) for m in promised(level, network, caps))
                continue
            assert set(p.mechanisms) == set(MECHANISMS)
            for m, state in p.mechanisms.items():
                assert state in (ENFORCED, DISABLED) or state.startswith("unavailable: ")
                if state == ENFORCED:  # never plan what the kernel cannot do
                    assert supported(m, caps, p.level), (level, caps, m)
            if strict:
                for m in promised(p.level, network, caps):
                    assert p.mechanisms[m] == ENFORCED, (level, m, caps)
            if level in ("auto", "namespace"):
                core = caps.linux and all(getattr(caps, f) for f in CORE)
                assert p.level == ("namespace" if core else "virtual")
                if not core:
                    assert p.warnings  # degradation is loud
                else:
                    assert p.cow_system == caps.real_root
                    assert p.session_layer == ("tmpfs" if caps.tmpfs_user_xattr else "disk")
            else:
                assert p.level == level
            if p.level in ("none", "virtual"):
                assert all(v == DISABLED for v in p.mechanisms.values())
            if network == "allow":
                assert p.mechanisms["network_namespace"] == DISABLED
            if p.seccomp_notify:  # refusals itemised only where the kernel can notify
                assert caps.seccomp_user_notif and p.applies("seccomp")


def test_auto_never_picks_landlock_or_none() -> None:
    for caps in all_caps():
        assert plan("auto", caps).level in ("namespace", "virtual")


def test_strict_namespace_without_userns_names_the_reason() -> None:
    caps = Capabilities(linux=True, reasons={"user_namespace": "unshare(CLONE_NEWUSER): EPERM"})
    with pytest.raises(IsolationUnavailable, match="CLONE_NEWUSER"):
        plan("namespace", caps, strict=True)
    p = plan("auto", caps)
    assert p.level == "virtual" and "falling back" in p.warnings[0]


def test_namespace_without_landlock_is_not_a_strict_failure() -> None:
    caps = Capabilities(**{**{f: getattr(FULL, f) for f in FULL.__slots__}, "landlock_abi": 0})
    p = plan("namespace", caps, strict=True)
    assert p.mechanisms["landlock"].startswith("unavailable")


def test_landlock_level_without_landlock() -> None:
    caps = Capabilities(**{**{f: getattr(FULL, f) for f in FULL.__slots__}, "landlock_abi": 0})
    with pytest.raises(IsolationUnavailable):
        plan("landlock", caps, strict=True)
    p = plan("landlock", caps)
    assert any("NOT confined" in w for w in p.warnings)


def test_unknown_level() -> None:
    with pytest.raises(ValueError):
        plan("docker", FULL)


def good_observation() -> dict:
    return {"new_namespaces": ["user", "mnt", "pid"], "overlay_mounts": ["/workspace"],
            "seccomp_mode": 2, "no_new_privs": 1, "cap_eff": 0, "cap_prm": 0, "cap_bnd": 0,
            "landlock_abi_applied": 7}


def test_verify_reports_only_what_was_observed() -> None:
    p = plan("namespace", FULL)
    r = verify(p, good_observation())
    assert r.enforced == frozenset({"user_namespace", "mount_namespace", "pid_namespace",
                                    "overlay", "landlock", "seccomp", "no_new_privs",
                                    "caps_dropped"})
    assert r.mechanisms["network_namespace"] == DISABLED
    assert "not itemised" in str(r)
    for key, bad in (("seccomp_mode", 0), ("no_new_privs", 0), ("cap_eff", 1),
                     ("landlock_abi_applied", 0), ("overlay_mounts", []),
                     ("new_namespaces", ["user", "mnt"])):
        obs = good_observation() | {key: bad}
        r = verify(p, obs)
        assert len(r.enforced) == 7, key
        assert any("not in effect" in w for w in r.warnings)


def test_report_strings() -> None:
    r = report_from_plan(plan("none", FULL))
    assert r.enforced == frozenset()
    assert "nothing confined" in str(r)
    r = report_from_plan(plan("virtual", FULL))
    assert "virtual" in str(r) and r.to_dict()["level"] == "virtual"
    with pytest.raises(ValueError):
        report_from_plan(plan("namespace", FULL))
