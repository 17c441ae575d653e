"""Readiness rules: how a composed item says it is ready, and how that is read back.

Every item a composer emits declares one rule. The rule has two faces:

- its **wire form**, the provider-kubernetes Object's `spec.readiness` (a policy
  and, for a CEL policy, its query), which the provider evaluates on the
  workload cluster and reports as the Object's `Ready` condition;
- its **reading**, a pure function over the observed Object that the composer
  uses to mark the item (and the composite) ready — always from observed state,
  never from having composed something (SPEC §4).

Rules are registered by their wire form, so a composer that holds (keeps every
observed item, `outcome.hold`) recovers each observed item's rule from the
Object itself: the manifest stays byte-identical and no rule is guessed from
the wrapped kind. An Object whose declared policy no rule knows (written by an
older or newer function) is read through its own `Ready` condition, which is
the provider's evaluation of whatever it declared.

The rules today:
- `DEPLOYMENT_ROLLED_OUT`: a Deployment: the controller saw its generation and
  every replica is updated and available (its `Available` condition is not
  enough: a one-replica Deployment allowed one unavailable Pod is Available
  with none running);
- `WORKLOAD_AVAILABLE`: a LeaderWorkerSet (or any workload that publishes
  `Available` once all its groups are ready): the wrapped object's `Available`;
- `ROUTE_ACCEPTED`: an HTTPRoute: a parent Gateway `Accepted` it (a created but
  rejected route serves nothing);
- `EXISTS`: config-only objects (Namespace, Service, claim templates,
  PodGroups): created on the cluster;
- `ACCEPTED`, `PROGRAMMED`: Gateway API objects (a GatewayClass or Envoy
  Gateway Backend is `Accepted`, a Gateway `Programmed`), used by the routing
  wing on the control plane and by the serving stack on workload clusters.
- `READY_CONDITION`: the wrapped object's own `Ready` (KServe, cert-manager).
Backends register their own next to their kind, e.g. the Dynamo backend's
`DynamoGraphReady` (`compose/replica/backends/dynamo.py`).
A new kind of item adds its rule with `condition_rule` (a wrapped condition,
e.g. KServe's `Ready`) or a `ReadinessRule` of its own, and `register`s it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from modelplane.api import constants as c
from modelplane.api.objects import condition, condition_status
from modelplane.compose.types import Readiness, Resource

POLICY_CEL = "DeriveFromCelQuery"
POLICY_CREATED = "SuccessfulCreate"


@dataclass(frozen=True)
class ReadinessRule:
    """One way a composed item is ready: its Object's policy and its observed reading."""

    name: str
    policy: Mapping[str, str]  # the Object's spec.readiness
    reads: Callable[[Resource | None], bool]  # the observed Object → ready?

    @property
    def watched(self) -> bool:
        """Whether readiness reads the object's status, so its Object should watch it.

        A rule that only needs the object to exist is settled once it is
        created; any other changes when the workload cluster's controllers act,
        and provider-kubernetes sees that on its next poll unless it watches.
        """
        return self.policy.get("policy") != POLICY_CREATED

    def wire(self) -> dict[str, str]:
        """The Object's `spec.readiness` (a fresh copy)."""
        return dict(self.policy)

    def ready(self, observed: Resource | None) -> Readiness:
        """The item's desired readiness from its observed Object (absent: not ready)."""
        return "True" if observed is not None and self.reads(observed) else "False"


def wrapped(observed: Resource | None) -> Resource | None:
    """The wrapped object as the provider last observed it (`status.atProvider.manifest`).

    The one reader of a provider-kubernetes Object's observed manifest: None
    when any level is absent, null or not an object, never an exception.
    """
    status = (observed or {}).get("status")
    at = status.get("atProvider") if isinstance(status, dict) else None
    manifest = at.get("manifest") if isinstance(at, dict) else None
    return manifest if isinstance(manifest, dict) else None


def object_ready(observed: Resource | None) -> bool:
    """The Object's own `Ready` condition is True (the provider's verdict)."""
    return condition_status(observed, c.CONDITION_READY) == "True"


def _condition_cel(condition_type: str) -> str:
    return (
        "has(object.status) && has(object.status.conditions) && "
        f"object.status.conditions.exists(x, x.type == '{condition_type}' && x.status == 'True')"
    )


def condition_rule(name: str, condition_type: str) -> ReadinessRule:
    """Ready when the wrapped object's `condition_type` condition is True.

    The wrapped object's condition decides when the provider reported it;
    otherwise the Object's `Ready` condition, which the provider derives from
    the same CEL query.
    """

    def reads(observed: Resource | None) -> bool:
        status = condition_status(wrapped(observed), condition_type)
        return status == "True" if status is not None else object_ready(observed)

    return ReadinessRule(
        name, {"policy": POLICY_CEL, "celQuery": _condition_cel(condition_type)}, reads
    )


def _route_parents(observed: Resource | None) -> list[dict[str, Any]]:
    status = (wrapped(observed) or {}).get("status")
    parents = status.get("parents") if isinstance(status, dict) else None
    return [p for p in parents if isinstance(p, dict)] if isinstance(parents, list) else []


def route_accepted(observed: Resource | None) -> bool:
    """Whether an observed HTTPRoute Object reports its route Accepted by a Gateway.

    The wrapped route's `status.parents` decide when present; otherwise the
    Object's `Ready` condition, which the provider derives from the same query.
    """
    parents = _route_parents(observed)
    if parents:
        return any(condition_status({"status": p}, "Accepted") == "True" for p in parents)
    return object_ready(observed)


def route_rejection(observed: Resource | None) -> str | None:
    """Why a Gateway did not accept the route (`Reason: message`), if it said so."""
    for parent in _route_parents(observed):
        cond = condition({"status": parent}, "Accepted")
        if cond is not None and cond.get("status") == "False":
            reason, message = cond.get("reason"), cond.get("message")
            return ": ".join(str(x) for x in (reason, message) if x) or "Accepted=False"
    return None


def exists(observed: Resource | None) -> bool:
    """Whether an observed config-only Object exists on its cluster.

    Ready=True says so; with no Ready condition yet, a reported
    `status.atProvider.manifest` shows the provider has applied it.
    """
    ready = condition_status(observed, c.CONDITION_READY)
    if ready is not None:
        return ready == "True"
    return wrapped(observed) is not None


def _count(status: Mapping[str, Any], key: str) -> int:
    value = status.get(key, 0)
    return value if isinstance(value, int) and not isinstance(value, bool) else -1


def _section(obj: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = obj.get(key)
    return value if isinstance(value, Mapping) else {}


def deployment_rolled_out(observed: Resource | None) -> bool:
    """Whether an observed Deployment runs every replica it asks for, of its current template.

    Not its `Available` condition: with `maxUnavailable: 1` a one-replica
    Deployment is Available with no Pod running at all. Ready is what
    `kubectl rollout status` waits for: the controller has seen the current
    generation, and every replica is updated and available, none left over.
    Without a reported status, the Object's `Ready` (the same query) decides.
    """
    obj = wrapped(observed)
    if obj is None or not isinstance(obj.get("status"), Mapping):
        return object_ready(observed)
    spec, status, meta = (_section(obj, k) for k in ("spec", "status", "metadata"))
    want = spec.get("replicas", 1)
    generation, seen = meta.get("generation"), status.get("observedGeneration")
    if isinstance(generation, int) and not (isinstance(seen, int) and seen >= generation):
        return False
    counts = [_count(status, k) for k in ("replicas", "updatedReplicas", "availableReplicas")]
    return isinstance(want, int) and all(n == want for n in counts)


def _or_zero(field: str) -> str:
    return f"(has(object.status.{field}) ? object.status.{field} : 0)"


_WANT = "(has(object.spec) && has(object.spec.replicas) ? object.spec.replicas : 1)"
DEPLOYMENT_ROLLED_OUT_CEL = (
    "has(object.status) && "
    "(!has(object.metadata) || !has(object.metadata.generation) || "
    "(has(object.status.observedGeneration) && "
    "object.status.observedGeneration >= object.metadata.generation)) && "
    + " && ".join(
        f"{_or_zero(f)} == {_WANT}" for f in ("replicas", "updatedReplicas", "availableReplicas")
    )
)

# The replica's HTTPRoute names exactly one parent Gateway, so "some parent
# accepted it" is "its Gateway accepted it".
ROUTE_ACCEPTED_CEL = (
    "has(object.status) && has(object.status.parents) && "
    "object.status.parents.exists(p, has(p.conditions) && "
    "p.conditions.exists(x, x.type == 'Accepted' && x.status == 'True'))"
)

WORKLOAD_AVAILABLE = condition_rule("WorkloadAvailable", "Available")
DEPLOYMENT_ROLLED_OUT = ReadinessRule(
    "DeploymentRolledOut",
    {"policy": POLICY_CEL, "celQuery": DEPLOYMENT_ROLLED_OUT_CEL},
    deployment_rolled_out,
)
ROUTE_ACCEPTED = ReadinessRule(
    "RouteAccepted", {"policy": POLICY_CEL, "celQuery": ROUTE_ACCEPTED_CEL}, route_accepted
)
EXISTS = ReadinessRule("Exists", {"policy": POLICY_CREATED}, exists)
ACCEPTED = condition_rule("Accepted", "Accepted")
PROGRAMMED = condition_rule("Programmed", "Programmed")
OBJECT_READY = ReadinessRule("ObjectReady", {}, object_ready)
"""The fallback for an Object whose declared policy no registered rule knows."""

_RULES: dict[tuple[str, str], ReadinessRule] = {}


def _wire_key(policy: Any) -> tuple[str, str] | None:
    if not isinstance(policy, dict):
        return None
    return str(policy.get("policy", "")), str(policy.get("celQuery", ""))


def register(rule: ReadinessRule) -> ReadinessRule:
    """Make `rule` recoverable from an observed Object's declared policy; returns it.

    Two rules with the same wire form would read one Object two ways, so a
    second registration of a wire form is refused.
    """
    key = _wire_key(rule.policy)
    assert key is not None
    known = _RULES.get(key)
    if known is not None and known is not rule:
        raise ValueError(f"readiness rule {rule.name!r} declares the same policy as {known.name!r}")
    _RULES[key] = rule
    return rule


for _rule in (
    WORKLOAD_AVAILABLE,
    DEPLOYMENT_ROLLED_OUT,
    ROUTE_ACCEPTED,
    EXISTS,
    ACCEPTED,
    PROGRAMMED,
):
    register(_rule)

# Ready when the wrapped object's own `Ready` condition is True: a KServe
# LLMInferenceService, a cert-manager Issuer or Certificate. One rule, as one
# wire form may be registered once.
READY_CONDITION = register(condition_rule("ReadyCondition", "Ready"))


def declared(observed: Resource) -> ReadinessRule:
    """The rule an observed Object declared in its `spec.readiness` (else `OBJECT_READY`)."""
    spec = observed.get("spec")
    key = _wire_key(spec.get("readiness") if isinstance(spec, dict) else None)
    return _RULES.get(key, OBJECT_READY) if key is not None else OBJECT_READY


def observed_ready(observed: Resource) -> bool:
    """Whether an observed Object is ready by the rule it declared."""
    return declared(observed).reads(observed)
