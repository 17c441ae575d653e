"""provider-kubernetes `Object`s (names, composed items, wrapping, rollout
observation), and the Crossplane Usages that order composed resources' deletion.

Every manifest a replica sends to its workload cluster is an `Item`: a
composed-resource key, the control-plane Object's name, the manifest, and the
readiness rule it declares (`readiness.py`). `wrap` turns an item into a
`kubernetes.m.crossplane.io/v1alpha1` Object in the replica's namespace on the
control plane, pointed at the cluster's ClusterProviderConfig, carrying its
rule's policy as `spec.readiness`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from modelplane.api import constants as c
from modelplane.api.objects import NAME_HASH, short_hash
from modelplane.api.objects import dns_label as dns_label  # its home moved to api
from modelplane.compose.readiness import ReadinessRule, wrapped
from modelplane.compose.types import Resource

MAX_NAME = 63
USAGE_API_VERSION = "protection.crossplane.io/v1beta1"


def object_metadata(name: str, namespace: str, labels: dict[str, str]) -> Resource:
    """A provider-kubernetes Object's metadata: its identity and labels, and the external
    name and finalizer the provider would otherwise write in updates of their own.

    provider-kubernetes writes both onto every Object before anything else, each in
    an update of its own: the external name, which for an Object is its own name
    (crossplane-runtime's NameAsExternalName), and the managed resource finalizer.
    Composed with both in place, an Object is spared the two updates, and the
    composite that composed it the reconciles their watch events would start.
    """
    return {
        "name": name,
        "namespace": namespace,
        "labels": dict(labels),
        "annotations": {c.EXTERNAL_NAME_ANNOTATION: name},
        "finalizers": [c.PROVIDER_FINALIZER],
    }


@dataclass(frozen=True)
class Ref:
    """A composed resource by apiVersion, kind and name (in the composite's namespace)."""

    api_version: str
    kind: str
    name: str


def usage(name: str, namespace: str, of: Ref, by: Ref, reason: str) -> Resource:
    """A Crossplane Usage: `of` cannot be deleted while `by` exists.

    `replayDeletion` re-issues the blocked deletion as soon as `by` is gone, so
    tearing a cluster down proceeds in order instead of waiting for a resync.
    """
    return {
        "apiVersion": USAGE_API_VERSION,
        "kind": "Usage",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "of": {"apiVersion": of.api_version, "kind": of.kind, "resourceRef": {"name": of.name}},
            "by": {"apiVersion": by.api_version, "kind": by.kind, "resourceRef": {"name": by.name}},
            "reason": reason,
            "replayDeletion": True,
        },
    }


def object_name(replica: str, *suffix: str) -> str:
    """The control-plane Object name for one wrapped manifest of `replica`."""
    full = "-".join((replica, *suffix))
    if len(full) <= MAX_NAME:
        return full
    tail = "-".join(suffix)
    keep = MAX_NAME - len(tail) - 10
    return f"{replica[:keep].rstrip('-.')}-{short_hash(replica, length=NAME_HASH)}-{tail}"


@dataclass(frozen=True)
class Item:
    """One manifest a composer sends to a workload cluster, with its declared readiness.

    `what` names it in conditions; `serves` marks the items whose readiness
    is the workload's (the `WorkloadReady` condition); `deletable=False`
    leaves the wrapped object on the cluster when the Object is deleted, for
    objects several replicas share, like their namespace.
    """

    key: str  # the composed-resource key
    name: str  # the control-plane Object's name
    manifest: Resource
    rule: ReadinessRule
    what: str
    serves: bool = False
    deletable: bool = True


def wrap(item: Item, namespace: str, provider_config: str, labels: dict[str, str]) -> Resource:
    """Wrap `item`'s manifest in a provider-kubernetes Object declaring its readiness rule."""
    spec: dict[str, Any] = {
        "forProvider": {"manifest": item.manifest},
        "providerConfigRef": {"kind": "ClusterProviderConfig", "name": provider_config},
        "readiness": item.rule.wire(),
    }
    if item.rule.watched:
        # provider-kubernetes polls a wrapped object every --poll (10 minutes by
        # default); watched, its status reaches the Object (and the replica's
        # readiness) as soon as the workload cluster changes it.
        spec["watch"] = True
    if not item.deletable:
        spec["managementPolicies"] = ["Observe", "Create", "Update", "LateInitialize"]
    return {
        "apiVersion": c.PROVIDER_KUBERNETES_API_VERSION,
        "kind": "Object",
        "metadata": object_metadata(item.name, namespace, labels),
        "spec": spec,
    }


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
    live = wrapped(observed)
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
