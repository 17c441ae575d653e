"""provider-kubernetes `Object`s: names, wrapping, readiness policies and observation.

Every manifest a replica sends to its workload cluster is wrapped in a
`kubernetes.m.crossplane.io/v1alpha1` Object in the replica's namespace on the
control plane, pointed at the cluster's ClusterProviderConfig. A workload's
Object derives readiness from a CEL query over the wrapped object's `Available`
condition (a Deployment or LeaderWorkerSet publishes Available, not Ready); an
HTTPRoute's from one over `status.parents` (ready once a Gateway it names has
Accepted it: a created but rejected route serves nothing); a config-only
Object is ready once it is created (`SuccessfulCreate`).
"""

from __future__ import annotations

import re
from typing import Any, Literal

from modelplane.api import constants as c
from modelplane.api.objects import condition, condition_status, short_hash
from modelplane.compose.types import Resource

MAX_NAME = 63
AVAILABLE_CEL = (
    "has(object.status) && has(object.status.conditions) && "
    "object.status.conditions.exists(x, x.type == 'Available' && x.status == 'True')"
)

# The replica's HTTPRoute names exactly one parent Gateway, so "some parent
# accepted it" is "its Gateway accepted it".
ROUTE_ACCEPTED_CEL = (
    "has(object.status) && has(object.status.parents) && "
    "object.status.parents.exists(p, has(p.conditions) && "
    "p.conditions.exists(x, x.type == 'Accepted' && x.status == 'True'))"
)

Readiness = Literal["Workload", "Route", "Config"]


# Name hashes stay 8 characters: every composed name so far was built with
# them, and a changed name would recreate the object on the cluster.
NAME_HASH = 8


def dns_label(name: str, max_len: int = MAX_NAME) -> str:
    """Turn `name` into an RFC 1035 label of at most `max_len` characters.

    Characters outside `[a-z0-9-]` become `-`, a leading digit gets an `m-`
    prefix (Service and LeaderWorkerSet names must start with a letter), and a
    name that is altered or too long keeps its uniqueness through a short hash
    of the original.
    """
    clean = re.sub(r"[^a-z0-9-]", "-", name.lower()).strip("-")
    if clean == name and clean[:1].isalpha() and len(clean) <= max_len:
        return clean
    if not clean[:1].isalpha():
        clean = f"m-{clean}"
    digest = short_hash(name, length=NAME_HASH)
    keep = max_len - len(digest) - 1
    return f"{clean[:keep].rstrip('-')}-{digest}"


def object_name(replica: str, *suffix: str) -> str:
    """The control-plane Object name for one wrapped manifest of `replica`."""
    full = "-".join((replica, *suffix))
    if len(full) <= MAX_NAME:
        return full
    tail = "-".join(suffix)
    keep = MAX_NAME - len(tail) - 10
    return f"{replica[:keep].rstrip('-.')}-{short_hash(replica, length=NAME_HASH)}-{tail}"


def wrap(
    name: str,
    namespace: str,
    provider_config: str,
    manifest: Resource,
    readiness: Readiness,
    labels: dict[str, str],
    *,
    deletable: bool = True,
) -> Resource:
    """Wrap `manifest` in a provider-kubernetes Object.

    `deletable=False` leaves the wrapped object on the cluster when the Object
    is deleted (management policies without Delete), for objects several
    replicas share, like their namespace.
    """
    spec: dict[str, Any] = {
        "forProvider": {"manifest": manifest},
        "providerConfigRef": {"kind": "ClusterProviderConfig", "name": provider_config},
    }
    if readiness == "Workload":
        spec["readiness"] = {"policy": "DeriveFromCelQuery", "celQuery": AVAILABLE_CEL}
    elif readiness == "Route":
        spec["readiness"] = {"policy": "DeriveFromCelQuery", "celQuery": ROUTE_ACCEPTED_CEL}
    else:
        spec["readiness"] = {"policy": "SuccessfulCreate"}
    if not deletable:
        spec["managementPolicies"] = ["Observe", "Create", "Update", "LateInitialize"]
    return {
        "apiVersion": c.PROVIDER_KUBERNETES_API_VERSION,
        "kind": "Object",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(labels)},
        "spec": spec,
    }


def _wrapped_status(observed: Resource | None) -> Resource | None:
    at = ((observed or {}).get("status") or {}).get("atProvider") or {}
    manifest = at.get("manifest") if isinstance(at, dict) else None
    return manifest if isinstance(manifest, dict) else None


def workload_available(observed: Resource | None) -> bool:
    """Whether an observed workload Object reports its wrapped object Available.

    The wrapped object's own `Available` condition (status.atProvider.manifest)
    decides when present; otherwise the Object's `Ready` condition, which
    provider-kubernetes derives from the same CEL query.
    """
    if observed is None:
        return False
    wrapped = _wrapped_status(observed)
    available = condition_status(wrapped, "Available")
    if available is not None:
        return available == "True"
    return condition_status(observed, c.CONDITION_READY) == "True"


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _pod_specs(workload: Resource) -> list[Any]:
    spec = workload.get("spec")
    spec = spec if isinstance(spec, dict) else {}
    if workload.get("kind") == "LeaderWorkerSet":
        lwt = spec.get("leaderWorkerTemplate")
        lwt = lwt if isinstance(lwt, dict) else {}
        templates = [lwt.get("leaderTemplate"), lwt.get("workerTemplate")]
    else:
        templates = [spec.get("template")]
    return [t.get("spec") for t in templates if isinstance(t, dict)]


def rolled_onto(observed: Resource | None, claim_template: str) -> bool:
    """Whether an observed Deployment/LeaderWorkerSet Object has finished
    rolling every pod (group) onto pod templates that claim `claim_template`.

    Until then, pods of the previous revision may still be (re)created and
    need the previous ResourceClaimTemplate.
    """
    live = _wrapped_status(observed)
    if live is None:
        return False
    pods = _pod_specs(live)
    if not pods:
        return False
    for pod in pods:
        claims = pod.get("resourceClaims") if isinstance(pod, dict) else None
        names = [x.get("resourceClaimTemplateName") for x in claims or [] if isinstance(x, dict)]
        if claim_template not in names:
            return False
    meta, spec, status = (live.get(k) for k in ("metadata", "spec", "status"))
    if not isinstance(status, dict):
        return False
    generation = _int(meta.get("generation")) if isinstance(meta, dict) else None
    seen = _int(status.get("observedGeneration"))
    if generation is not None and (seen is None or seen < generation):
        return False
    wanted = _int(spec.get("replicas")) if isinstance(spec, dict) else None
    wanted = 1 if wanted is None else wanted
    # `replicas` counts old and new pods (groups) alike: equal to the updated
    # count and the desired count, no old-revision pod is left.
    updated, total = (_int(status.get(k)) or 0 for k in ("updatedReplicas", "replicas"))
    return updated == wanted == total


def _route_parents(observed: Resource | None) -> list[dict[str, Any]]:
    status = (_wrapped_status(observed) or {}).get("status")
    parents = status.get("parents") if isinstance(status, dict) else None
    return [p for p in parents if isinstance(p, dict)] if isinstance(parents, list) else []


def route_accepted(observed: Resource | None) -> bool:
    """Whether an observed HTTPRoute Object reports its route Accepted by a Gateway.

    The wrapped route's `status.parents` decide when present; otherwise the
    Object's `Ready` condition, which provider-kubernetes derives from the
    same CEL query.
    """
    if observed is None:
        return False
    parents = _route_parents(observed)
    if parents:
        return any(condition_status({"status": p}, "Accepted") == "True" for p in parents)
    return condition_status(observed, c.CONDITION_READY) == "True"


def route_rejection(observed: Resource | None) -> str | None:
    """Why a Gateway did not accept the route (`Reason: message`), if it said so."""
    for parent in _route_parents(observed):
        cond = condition({"status": parent}, "Accepted")
        if cond is not None and cond.get("status") == "False":
            reason, message = cond.get("reason"), cond.get("message")
            return ": ".join(str(x) for x in (reason, message) if x) or "Accepted=False"
    return None


def config_ready(observed: Resource | None) -> bool:
    """Whether an observed config-only Object exists on its cluster.

    Ready=True says so; with no Ready condition yet, a reported
    status.atProvider.manifest shows the provider has applied it.
    """
    if observed is None:
        return False
    ready = condition_status(observed, c.CONDITION_READY)
    if ready is not None:
        return ready == "True"
    return _wrapped_status(observed) is not None
