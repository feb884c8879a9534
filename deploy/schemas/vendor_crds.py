"""Regenerate the vendored CRD schemas from a checkout of kubernetes-sigs/agent-sandbox."""

# usage: python deploy/schemas/vendor_crds.py /path/to/agent-sandbox [COMMIT]
# Writes <group>_<kind>_<version>.json: the openAPIV3Schema of the storage (current) version
# of the extensions CRDs (k8s/crds/*.yaml), descriptions dropped, the source named in $comment.

from __future__ import annotations

import json
import pathlib
import sys

import yaml

CRDS = ("extensions.agents.x-k8s.io_sandboxtemplates.yaml",
        "extensions.agents.x-k8s.io_sandboxwarmpools.yaml",
        "extensions.agents.x-k8s.io_sandboxclaims.yaml")


def strip(node):
    if isinstance(node, dict):
        return {k: strip(v) for k, v in node.items() if k != "description"}
    if isinstance(node, list):
        return [strip(v) for v in node]
    return node


def main(src: str, commit: str = "") -> None:
    out = pathlib.Path(__file__).parent
    for name in CRDS:
        crd = yaml.safe_load((pathlib.Path(src) / "k8s" / "crds" / name).read_text())
        group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
        for v in crd["spec"]["versions"]:
            if not v.get("storage"):
                continue
            schema = strip(v["schema"]["openAPIV3Schema"])
            schema["$comment"] = (f"openAPIV3Schema of {kind} {group}/{v['name']} from "
                                  f"kubernetes-sigs/agent-sandbox k8s/crds/{name}"
                                  + (f" at {commit}" if commit else "") + " (descriptions dropped)")
            dest = out / f"{group}_{kind.lower()}_{v['name']}.json"
            dest.write_text(json.dumps(schema, indent=1, sort_keys=True) + "\n")
            print(dest, dest.stat().st_size)


if __name__ == "__main__":
    main(*sys.argv[1:])
