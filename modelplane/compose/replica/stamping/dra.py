"""GPUs bind only through DRA (SPEC §4).

A role with device requests gets one `resource.k8s.io/v1` ResourceClaimTemplate
(one request per resolved device request); every serving pod references it in
`spec.resourceClaims`, its engine container in `resources.claims`, and the pod
tolerates `nvidia.com/gpu:NoSchedule`. Every resolved request is a `claim: DRA`
device of a GPU pool, and the pool pin already keeps the pod on that pool, so
the toleration can never put it on a GPU node it was not placed on.

Any `nvidia.com/gpu` request or limit the user put in the pod template is
removed (and reported), because it would ask the legacy device plugin for a
second, unrelated set of GPUs.

A ResourceClaimTemplate's spec is immutable, yet a replica's resolved device
requests can change in place (an edited selector that still matches the pinned
pool). So the template's name carries a digest of its spec (8 hex of sha256
over the spec as canonical JSON): a changed spec is a new template the pods
roll to, and the previous one is kept until the workload has rolled every pod
off it (`retiring_claims`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from modelplane.api import constants as c
from modelplane.api.model_replica import ResolvedDeviceRequest
from modelplane.api.objects import short_hash
from modelplane.compose import objects
from modelplane.compose.replica.stamping import upsert
from modelplane.compose.types import Resource

CLAIM_NAME = "devices"
CLAIM_HASH = 8


def spec_hash(spec: Any) -> str:
    """A short digest of `spec` (canonical JSON: sorted keys, no spaces)."""
    canonical = json.dumps(spec, sort_keys=True, separators=(",", ":"))
    return short_hash(canonical, length=CLAIM_HASH)


def claim_template(
    name: str, metadata: Resource, requests: list[ResolvedDeviceRequest]
) -> tuple[Resource, str]:
    """The DRA ResourceClaimTemplate for `requests` and the digest of its spec.

    Its name is `<name>-<digest>`; `metadata` gives its namespace and labels.
    """
    spec = {
        "spec": {
            "devices": {
                "requests": [
                    {
                        "name": r.name,
                        "exactly": {
                            "deviceClassName": r.device_class_name,
                            "allocationMode": "ExactCount",
                            "count": r.count,
                            "selectors": [{"cel": {"expression": s.cel}} for s in r.selectors],
                        },
                    }
                    for r in requests
                ]
            }
        }
    }
    digest = spec_hash(spec)
    template = {
        "apiVersion": c.DRA_API_VERSION,
        "kind": "ResourceClaimTemplate",
        "metadata": {**metadata, "name": f"{name}-{digest}"},
        "spec": spec,
    }
    return template, digest


def stamp_claims(pod: dict[str, Any], engine: dict[str, Any], template: str) -> None:
    """Make the pod claim `template`'s devices for its engine, and tolerate GPU nodes."""
    claims = list(pod.get("resourceClaims") or [])
    upsert(claims, {"name": CLAIM_NAME, "resourceClaimTemplateName": template})
    pod["resourceClaims"] = claims
    resources = engine.setdefault("resources", {})
    ctr_claims = list(resources.get("claims") or [])
    upsert(ctr_claims, {"name": CLAIM_NAME})
    resources["claims"] = ctr_claims
    tolerations = list(pod.get("tolerations") or [])
    gpu = {"key": c.GPU_TOLERATION_KEY, "operator": "Exists", "effect": "NoSchedule"}
    if gpu not in tolerations:
        tolerations.append(gpu)
    pod["tolerations"] = tolerations


def _strip(ctr: Any, where: str) -> list[str]:
    res = ctr.get("resources") if isinstance(ctr, dict) else None
    if not isinstance(res, dict):
        return []
    warnings = []
    for part in ("limits", "requests"):
        values = res.get(part)
        if isinstance(values, dict) and c.GPU_RESOURCE_NAME in values:
            del values[c.GPU_RESOURCE_NAME]
            warnings.append(
                f"{where}[{ctr.get('name')}].resources.{part}"
                f"[{c.GPU_RESOURCE_NAME}] ignored: GPUs bind only through DRA"
            )
            if not values:
                del res[part]
    return warnings


def strip_gpu_resources(pod: dict[str, Any], where: str) -> list[str]:
    """Remove device-plugin GPU requests and limits; one warning per removal."""
    return [
        warning
        for key in ("initContainers", "containers")
        for ctr in pod.get(key) or []
        for warning in _strip(ctr, f"{where}.spec.{key}")
    ]


def retiring_claims(
    observed: Mapping[str, Resource], role: str, key: str, template: str, workload_key: str
) -> list[str]:
    """The observed keys of a role's previous claim templates that must stay.

    They stay until the role's workload (`workload_key`) has rolled every pod
    onto `template`: a pod of the previous revision that is recreated
    mid-rollout (evicted, crashed node) needs its ResourceClaimTemplate.
    `<role>-claims` is the key from before templates carried a digest.
    """
    if objects.rolled_onto(observed.get(workload_key), template):
        return []
    previous = re.compile(rf"^{re.escape(role)}-claims(-[0-9a-f]{{8}})?$")
    return [k for k in sorted(observed) if k != key and previous.match(k)]
