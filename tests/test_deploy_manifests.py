"""deploy/*.yaml against the vendored agent-sandbox CRD schemas, offline; the Containerfile."""

from __future__ import annotations

import copy
import json
import pathlib
import re
import shutil
import subprocess

import pytest

yaml = pytest.importorskip("yaml")
jsonschema = pytest.importorskip("jsonschema")

ROOT = pathlib.Path(__file__).resolve().parent.parent
DEPLOY = ROOT / "deploy"
SCHEMAS = DEPLOY / "schemas"
DNS1123 = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def _strict(node):
    """What kubectl's strict field validation does with a structural schema: an object that
    lists properties refuses others, unless it preserves unknown fields."""
    if isinstance(node, dict):
        node = {k: _strict(v) for k, v in node.items()}
        if ("properties" in node and "additionalProperties" not in node
                and not node.get("x-kubernetes-preserve-unknown-fields")):
            node["additionalProperties"] = False
        return node
    if isinstance(node, list):
        return [_strict(v) for v in node]
    return node


def _validator(api_version: str, kind: str):
    group, _, version = api_version.rpartition("/")
    path = SCHEMAS / f"{group}_{kind.lower()}_{version}.json"
    assert path.exists(), f"no vendored schema for {api_version} {kind}"
    schema = _strict(json.loads(path.read_text()))
    schema["properties"]["metadata"] = json.loads(
        (SCHEMAS / "io.k8s.apimachinery_objectmeta_v1.json").read_text())
    schema["properties"]["apiVersion"] = {"const": api_version}
    schema["properties"]["kind"] = {"const": kind}
    return jsonschema.Draft7Validator(schema, format_checker=jsonschema.FormatChecker())


def _errors(doc) -> list[str]:
    errs = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
            for e in _validator(doc["apiVersion"], doc["kind"]).iter_errors(doc)]
    name = (doc.get("metadata") or {}).get("name", "")
    if not DNS1123.match(name) or len(name) > 253:
        errs.append(f"metadata/name: {name!r} is not a DNS-1123 subdomain")
    return errs


def _docs():
    out = []
    for f in sorted(DEPLOY.glob("*.yaml")):
        for doc in yaml.safe_load_all(f.read_text()):
            if doc:
                out.append((f.name, doc))
    return out


def test_every_manifest_validates_against_the_current_crd_version():
    docs = _docs()
    kinds = {d["kind"] for _, d in docs}
    assert {"SandboxTemplate", "SandboxWarmPool", "SandboxClaim"} <= kinds
    for name, doc in docs:
        assert doc["apiVersion"] == "extensions.agents.x-k8s.io/v1beta1", name
        assert _errors(doc) == [], name


def test_the_check_fails_on_broken_manifests():
    docs = {d["kind"]: d for _, d in _docs() if d["metadata"]["name"] in
            ("agentic-bash", "agentic-bash-pool", "agent-session-1")}
    bad = copy.deepcopy(docs["SandboxTemplate"])
    bad["spec"]["podTemplate"]["spec"]["containers"][0]["readinessProbe"]["httpGett"] = {}
    assert any("httpGett" in e for e in _errors(bad))
    bad = copy.deepcopy(docs["SandboxTemplate"])
    bad["spec"]["podTemplate"]["spec"]["automountServiceAccountToken"] = "no"
    assert any("automountServiceAccountToken" in e for e in _errors(bad))
    bad = copy.deepcopy(docs["SandboxWarmPool"])
    del bad["spec"]["sandboxTemplateRef"]
    assert _errors(bad)
    bad = copy.deepcopy(docs["SandboxClaim"])
    bad["spec"]["lifecycle"]["shutdownPolicy"] = "Evaporate"
    assert _errors(bad)
    bad = copy.deepcopy(docs["SandboxClaim"])
    bad["spec"]["sandboxTemplateRef"] = {"name": "x"}          # v1alpha1's field, gone in v1beta1
    assert _errors(bad)
    bad = copy.deepcopy(docs["SandboxClaim"])
    bad["metadata"]["name"] = "Agent_Session"
    assert _errors(bad)
    bad = copy.deepcopy(docs["SandboxClaim"])
    bad["apiVersion"] = "extensions.agents.x-k8s.io/v1alpha1"
    with pytest.raises(AssertionError):
        _errors(bad)


def test_template_runs_serve_safely():
    by_name = {d["metadata"]["name"]: d for _, d in _docs()}
    for tname in ("agentic-bash", "agentic-bash-virtual"):
        pod = by_name[tname]["spec"]["podTemplate"]["spec"]
        assert pod["automountServiceAccountToken"] is False
        assert pod["securityContext"]["runAsNonRoot"] is True
        (c,) = pod["containers"]
        assert c["args"][0] == "serve" and "8888" in c["args"]
        assert c["readinessProbe"]["httpGet"] == {"path": "/", "port": 8888}
        assert {"cpu", "memory"} <= set(c["resources"]["requests"]) <= set(c["resources"]["limits"]) | {"ephemeral-storage"}
        assert c["securityContext"]["allowPrivilegeEscalation"] is False
        assert c["securityContext"]["capabilities"]["drop"] == ["ALL"]
    ns = by_name["agentic-bash"]["spec"]["podTemplate"]["spec"]
    assert ns["hostUsers"] is False                      # procMount Unmasked requires it
    assert ns["containers"][0]["securityContext"]["procMount"] == "Unmasked"
    assert by_name["agentic-bash-pool"]["spec"]["sandboxTemplateRef"]["name"] == "agentic-bash"
    assert by_name["agent-session-1"]["spec"]["warmPoolRef"]["name"] == "agentic-bash-pool"


def test_containerfile_shape():
    text = (ROOT / "Containerfile").read_text().replace("\\\n", " ")   # joined continuations
    assert re.search(r"^FROM \S*debian:\S+-slim", text, re.M) or re.search(r"^FROM python:\S+-slim", text, re.M)
    users = re.findall(r"^USER (\S+)", text, re.M)
    assert users and users[-1] not in ("root", "0")
    assert re.search(r'^CMD \["agentic-bash", "serve"', text, re.M) or re.search(r'^CMD \["serve"', text, re.M)
    assert re.search(r"^HEALTHCHECK .*http://127\.0\.0\.1:8888/", text, re.M)
    assert "EXPOSE 8888" in text


def test_container_image_builds():
    builder = next((b for b in ("podman", "docker", "buildah") if shutil.which(b)), None)
    if builder is None:
        pytest.skip("no container builder (podman, docker or buildah) on this machine")
    probe = subprocess.run([builder, "info"], capture_output=True, timeout=60)
    if probe.returncode != 0:
        pytest.skip(f"{builder} is installed but its engine is not usable here: "
                    f"{probe.stderr.decode(errors='replace').strip()[:200]}")
    args = ([builder, "bud"] if builder == "buildah" else [builder, "build"])
    r = subprocess.run(args + ["-f", "Containerfile", "-t", "agentic-bash:test", "."], cwd=ROOT,
                       capture_output=True, timeout=1800)
    assert r.returncode == 0, r.stderr.decode(errors="replace")[-3000:]


def test_seccomp_profile_follows_our_own_filter():
    from agentic_bash.isolation.seccomp_filter import DEFAULT_DENY
    prof = json.loads((DEPLOY / "seccomp" / "agentic-bash.json").read_text())
    assert prof["defaultAction"] == "SCMP_ACT_ALLOW"
    (rule,) = prof["syscalls"]
    assert rule["action"] == "SCMP_ACT_ERRNO" and rule["errnoRet"] == 1
    setup = {"mount", "umount2", "pivot_root", "unshare", "setns", "fsopen", "fsconfig", "fsmount",
             "fspick", "move_mount", "open_tree", "mount_setattr"}
    assert set(rule["names"]) == set(DEFAULT_DENY) - setup      # what the server needs stays open
    assert {"ptrace", "bpf", "kexec_load", "init_module", "keyctl"} <= set(rule["names"])
    assert "profiles/agentic-bash.json" in (DEPLOY / "sandbox-template.yaml").read_text()
