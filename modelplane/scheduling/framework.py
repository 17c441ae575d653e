"""The scheduler's seams, in the shape of kube-scheduler's framework.

One cycle reads a typed `ScheduleInput` and runs named steps over one
`CycleState`. Behaviour that varies by policy is a *rule* object registered in
a tuple (`modelplane.scheduling.rules`: `FILTERS`, `SCORES`), one rule per module:

- a `ClusterFilter` answers two questions about one cluster, each with its own
  reason code: `admit` — may a new replica go here? — and `evict` — must an
  existing replica leave? The answers differ: a NoSchedule taint repels new
  replicas but keeps existing ones. It also names, once per cycle, the
  clusters it may refuse (`suspects`): every other one is admitted without asking.
- a `PoolFilter` refuses single pools of otherwise admitted clusters for new
  replicas (`rules.POOL_FILTERS`): a refused pool does not match any role
  of the deployment for the fill, the explanation and the what-if, and the
  verdict names the rule's reason.
- a `ClusterScore` orders the fill: each rule scores a cluster from 0 to 100
  and carries a weight; the cluster with the highest weighted sum (then the
  first name) takes the next replica (see `scores`).

A rule keeps whatever it computes under its own key (`CycleState.rule_state`)
rather than in new CycleState fields, so adding a rule touches only its module,
its registration and its test.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Collection, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar, cast

from modelplane.api.common import LabelSelector, Toleration
from modelplane.api.fleet_quota import ObservedQuota, namespace_quota
from modelplane.api.frozen import FrozenDict, ReadOnlyDict, memoized
from modelplane.api.memo import memos_on, on_clear, remembered
from modelplane.api.model_cache import ObservedModelCache, read_model_cache
from modelplane.api.model_deployment import ModelDeploymentSpec
from modelplane.api.objects import label_value
from modelplane.api.readers import (
    ObservedInferenceCluster,
    ObservedModelReplica,
    ObservedPlacer,
    read_inference_cluster,
    read_model_replica,
    read_placer,
)
from modelplane.scheduling.labels import selector_matches
from modelplane.scheduling.types import ClusterReason, EvictReason

T = TypeVar("T")


@dataclass(frozen=True)
class ScheduleInput:
    """Everything one scheduling cycle knows, read and typed once.

    `clusters` is every InferenceCluster by name (sorted); `candidates` the
    names `spec.clusterSelector` selects; `replicas` every ModelReplica of the
    fleet (unique by namespace/name). `caches` holds the ModelCaches of
    `spec.caches` found in the deployment's namespace, by name, read through
    their reader (per-cluster copies); None when they were not looked up.
    """

    namespace: str
    name: str
    spec: ModelDeploymentSpec
    clusters: Mapping[str, ObservedInferenceCluster]
    candidates: frozenset[str]
    replicas: tuple[ObservedModelReplica, ...]
    caches: Mapping[str, ObservedModelCache] | None = None
    tolerations: tuple[Toleration, ...] = ()  # the deployment's (spec.tolerations)
    missing_caches: tuple[str, ...] = ()  # names in spec.caches looked up and not found
    quota: ObservedQuota | None = None  # every FleetQuota of the namespace as one, if any
    priorities: Mapping[str, int] = field(default_factory=dict)  # PriorityClass name → value
    # Replicas a higher-priority replica preempts: (namespace, name) → (preemptor, its value).
    preempted: Mapping[tuple[str, str], tuple[ObservedModelReplica, int]] = field(
        default_factory=dict
    )
    # This deployment's replicas a Progressive rollout replaces now: name → the revision
    # their replacements run (make-before-break, like any other move).
    outdated: Mapping[str, str] = field(default_factory=dict)
    # This deployment's replicas that take traffic (Ready, and their ModelEndpoint Ready
    # where they get one); None: every Ready replica does. A draining replica leaves only
    # once enough replacements serve, so the model is never left without an endpoint.
    serving: frozenset[str] | None = None

    def priority(self, name: str | None) -> int:
        """A PriorityClass's value; 0 without a name, or for a class not found."""
        return self.priorities.get(name, 0) if name else 0

    def preemptor(self, replica: ObservedModelReplica) -> ObservedModelReplica | None:
        """The replica that preempts `replica`, when its priority is strictly higher."""
        hit = self.preempted.get((replica.namespace, replica.name))
        if hit is None or hit[1] <= self.priority(replica.priority):
            return None
        return hit[0]

    @property
    def cache(self) -> ObservedModelCache | None:
        """The deployment's ModelCache (`spec.caches[0]`) when it was found."""
        names = [x.name for x in self.spec.caches or ()]
        return (self.caches or {}).get(names[0]) if names else None


class ClusterTable(ReadOnlyDict[str, ObservedInferenceCluster]):
    """Every cluster's reading by name, sorted: what one cycle reads of the fleet.

    A table read from the same cluster objects is shared by every call that
    sees them (`read_clusters`), so what later steps derive from the whole
    table alone is remembered on it (`fleet_derived`); nothing changes it once built.
    """

    __slots__ = ("derived",)

    def __init__(self, items: Mapping[str, ObservedInferenceCluster]) -> None:
        """The table of `items`, in their order."""
        super().__init__(items)
        self.derived: dict[Hashable, Any] = {}


def fleet_derived(
    clusters: Mapping[str, ObservedInferenceCluster], key: Hashable, derive: Callable[[], T]
) -> T:
    """`derive()`, remembered under `key` on `clusters` when it is a `ClusterTable`.

    `derive` must depend on the table alone (and on what `key` names), and its
    answer is shared: callers never change it.
    """
    if not isinstance(clusters, ClusterTable):
        return derive()
    return remembered(clusters.derived, key, derive)


def _unique_clusters(objects: Sequence[Mapping[str, Any]]) -> ClusterTable:
    parsed: dict[str, ObservedInferenceCluster] = {}
    for obj in objects:
        cl = read_inference_cluster(obj)
        # Names are unique in a real fleet; keep a deterministic one if not.
        if cl is not None and (cl.name not in parsed or repr(cl) < repr(parsed[cl.name])):
            parsed[cl.name] = cl
    return ClusterTable({k: parsed[k] for k in sorted(parsed)})


def _unique_replicas(
    objects: Sequence[Mapping[str, Any]], by_label: Mapping[str, str]
) -> tuple[ObservedModelReplica, ...]:
    unique: dict[tuple[str, str], ObservedModelReplica] = {}
    for obj in objects:
        named, r = memoized(obj, "scheduling.replica", _label_free)
        if not named:
            r = read_model_replica(obj, by_label)
        if r is None:
            continue
        key = (r.namespace, r.name)
        # Object names are unique in a real fleet; keep a deterministic one if not.
        if key not in unique or repr(r) < repr(unique[key]):
            unique[key] = r
    return tuple(unique[k] for k in sorted(unique))


def _label_free(obj: Mapping[str, Any]) -> tuple[bool, ObservedModelReplica | None]:
    """(True, its reading) for a replica whose spec names its cluster: the reading needs
    no label map, so a read-only object keeps it (`memoized`); else (False, None)."""
    spec = obj.get("spec")
    cluster = spec.get("clusterName") if isinstance(spec, Mapping) else None
    if isinstance(cluster, str) and cluster:
        return True, read_model_replica(obj)
    return False, None


def _caches(objects: Sequence[Mapping[str, Any]]) -> dict[str, ObservedModelCache]:
    seen = (read_model_cache(obj) for obj in objects)
    return {c.name: c for c in sorted(seen, key=lambda c: c.name) if c.name}


class LastRead:
    """What was last read from a list of read-only objects, reused while the same arrive.

    Objects decoded once per version are shared between calls (`api.frozen`):
    the same objects, in the same order, read the same, so a fleet unchanged
    since the last call (the same cluster objects, one per version) is not
    read again. Held for one list only; plain dicts, which could have been
    changed in place, are never remembered.
    """

    def __init__(self) -> None:
        self.clear()
        on_clear(self.clear)

    def clear(self) -> None:
        """Forget what was read."""
        self._held = False  # whether anything is remembered
        self._objects: tuple[Any, ...] = ()
        self._extra: Any = None
        self._value: Any = None

    def get(self, objects: Sequence[Any], extra: Any, read: Callable[[], T]) -> T:
        """`read()`, or what it returned for these very objects (and `extra`) last time."""
        if (
            self._held
            and extra is self._extra
            and len(objects) == len(self._objects)
            and all(map(operator.is_, objects, self._objects))
        ):
            return cast(T, self._value)
        value = read()
        if memos_on() and all(type(o) is FrozenDict for o in objects):
            self._held = True
            self._objects, self._extra, self._value = tuple(objects), extra, value
        return value


_CLUSTERS = LastRead()
_REPLICAS = LastRead()


def _read_clusters(
    clusters: Sequence[Mapping[str, Any]],
) -> tuple[ClusterTable, dict[str, str]]:
    """Every cluster by name, and each cluster's name by its label value."""
    parsed = _unique_clusters(clusters)
    return parsed, {label_value(k): k for k in sorted(parsed, reverse=True)}


def read_clusters(clusters: Sequence[Mapping[str, Any]]) -> Mapping[str, ObservedInferenceCluster]:
    """Every InferenceCluster by name (sorted), as a scheduling cycle reads them.

    The reading of the last list is reused while the same objects arrive (`LastRead`),
    so a composer and the cycle it runs share one reading of an unchanged fleet. The
    mapping is shared: callers never change it.
    """
    return _CLUSTERS.get(clusters, None, lambda: _read_clusters(clusters))[0]


def build_input(
    namespace: str,
    name: str,
    spec: ModelDeploymentSpec,
    clusters: Sequence[Mapping[str, Any]],
    replicas: Sequence[Mapping[str, Any]],
    caches: Sequence[Mapping[str, Any]] | None = None,
    quotas: Sequence[Mapping[str, Any]] = (),
    priority_classes: Sequence[Mapping[str, Any]] = (),
    placers: Sequence[Mapping[str, Any]] | None = None,
) -> ScheduleInput:
    """The typed input of one cycle: a parsed spec and the raw objects observed around it.

    `quotas` are the FleetQuotas of the deployment's namespace, `priority_classes`
    the PriorityClasses (their values give `spec.priority` a fleet meaning),
    `placers` the ModelDeployments owning the fleet's preempting replicas: a
    preemption is honoured only for a replica its deployment's status lists, at
    that deployment's priority (None: not looked up, every one is trusted — for
    callers that built the replicas themselves; the composer always passes them).

    The spec is the caller's, parsed once (the composer validated it before
    asking for anything); the clusters, replicas and caches are read here.
    `caches` is None when they were not looked up.
    """
    parsed, by_label = _CLUSTERS.get(clusters, None, lambda: _read_clusters(clusters))
    found = None if caches is None else _caches(caches)
    missing = (
        () if found is None else tuple(x.name for x in spec.caches or () if x.name not in found)
    )
    unique = _REPLICAS.get(replicas, by_label, lambda: _unique_replicas(replicas, by_label))
    values = read_priorities(priority_classes)
    return ScheduleInput(
        namespace=namespace,
        name=name,
        spec=spec,
        clusters=parsed,
        candidates=selected(parsed, spec.cluster_selector),
        replicas=unique,
        caches=found,
        tolerations=tuple(spec.tolerations or ()),
        missing_caches=missing,
        quota=namespace_quota(list(quotas)),
        priorities=values,
        preempted=_preemptions(unique, values, _placers(placers)),
    )


def selected(
    clusters: Mapping[str, ObservedInferenceCluster], selector: LabelSelector | None
) -> frozenset[str]:
    """The names of the clusters `selector` selects (every one without a selector).

    Many deployments share a selector: the answer is remembered on the fleet's
    table by the selector's content (`fleet_derived`).
    """
    key = "candidates " + ("" if selector is None else selector.model_dump_json())
    return fleet_derived(
        clusters,
        key,
        lambda: frozenset(k for k, cl in clusters.items() if selector_matches(selector, cl.labels)),
    )


def read_priorities(objects: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """PriorityClass name → value; an entry without a name or an integer value is left out."""
    out: dict[str, int] = {}
    for obj in objects:
        meta = obj.get("metadata")
        name = meta.get("name") if isinstance(meta, Mapping) else None
        value = obj.get("value")
        if isinstance(value, float) and value.is_integer():
            value = int(value)  # protobuf's numbers arrive as floats
        if isinstance(name, str) and type(value) is int:
            out[name] = value
    return out


def _placers(
    objects: Sequence[Mapping[str, Any]] | None,
) -> Mapping[tuple[str, str], ObservedPlacer] | None:
    if objects is None:
        return None
    return {(p.namespace, p.name): p for o in objects if (p := read_placer(o)) is not None}


def vouched_priority(
    r: ObservedModelReplica, placers: Mapping[tuple[str, str], ObservedPlacer] | None
) -> tuple[bool, str | None]:
    """Whether a preempting replica may preempt, and at which PriorityClass: its owning
    deployment's, when that deployment exists and its status lists the replica."""
    if placers is None:
        return True, r.priority
    owner = None if r.deployment_is_label else placers.get((r.namespace, r.deployment))
    if owner is None or r.name not in owner.placed:
        return False, None
    return True, owner.priority


def _preemptions(
    replicas: Sequence[ObservedModelReplica],
    values: Mapping[str, int],
    placers: Mapping[tuple[str, str], ObservedPlacer] | None = None,
) -> dict[tuple[str, str], tuple[ObservedModelReplica, int]]:
    """Who preempts whom: the highest-priority preemptor of each named replica, among the
    preempting replicas their own deployment placed (`vouched_priority`)."""
    out: dict[tuple[str, str], tuple[ObservedModelReplica, int]] = {}
    for r in replicas:
        if not r.preempts:
            continue
        vouched, priority = vouched_priority(r, placers)
        if not vouched:
            continue
        value = values.get(priority, 0) if priority else 0
        for victim in r.preempts:
            held = out.get(victim)
            if held is None or value > held[1] or (value == held[1] and r.order < held[0].order):
                out[victim] = (r, value)
    return out


def read_input(
    deployment: Mapping[str, Any],
    clusters: Sequence[Mapping[str, Any]],
    replicas: Sequence[Mapping[str, Any]],
    caches: Sequence[Mapping[str, Any]] | None = None,
) -> ScheduleInput:
    """Read raw objects into a ScheduleInput, parsing the (already validated) deployment.

    For callers holding only the raw deployment (tests, benchmarks, `schedule`);
    the composer and `modelplane explain` build theirs with
    `modelplane.compose.deployments.observed.scheduler_input`.
    """
    meta = deployment.get("metadata")
    meta = meta if isinstance(meta, Mapping) else {}
    spec = ModelDeploymentSpec.model_validate(dict(deployment.get("spec") or {}))
    namespace, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
    return build_input(namespace, name, spec, clusters, replicas, caches)


@dataclass(frozen=True)
class Rejection:
    """A filter's answer when it refuses: a reason code and the names/numbers behind it."""

    reason: ClusterReason
    detail: tuple[str, ...] = ()


@dataclass(frozen=True)
class Eviction:
    """A filter's answer when an existing replica must leave: a code and its details."""

    reason: EvictReason
    detail: tuple[str, ...] = ()


@dataclass
class RuleStates:
    """Per-rule state: each rule keeps what it computes under its own key."""

    _by_rule: dict[str, Any] = field(default_factory=dict)

    def get(self, rule: str, factory: Callable[[], T]) -> T:
        """The state of `rule`, created by `factory` on first use."""
        state: T | None = self._by_rule.get(rule)
        if state is None:
            state = self._by_rule[rule] = factory()
        return state


class ClusterFilter(Protocol):
    """A cluster filter: may a new replica go here, and must an existing one leave?

    Two hooks are optional, and a rule without them is correct as it is: it is
    asked about every cluster (`suspects`), and no cycle reuses verdicts while
    it is registered (`key`). See `filter_suspects` and `filter_key`.
    """

    name: str

    def admit(self, inp: ScheduleInput, cluster: ObservedInferenceCluster) -> Rejection | None:
        """None when a new replica may be placed on `cluster`, else why not."""

    def evict(
        self, inp: ScheduleInput, cluster: ObservedInferenceCluster, replica: ObservedModelReplica
    ) -> Eviction | None:
        """None when `replica` may stay on `cluster`, else why it must leave."""


class Suspecting(Protocol):
    """The optional hook of a `ClusterFilter` that names the clusters it may refuse."""

    def suspects(self, inp: ScheduleInput) -> Collection[str] | None:
        """The names of the clusters `admit` may refuse (it admits every other); None: any.

        Lets a cycle skip the rule where it cannot refuse, so one over a large fleet
        asks it only about the clusters it may keep out.
        """


class Keyed(Protocol):
    """The optional hook of a `ClusterFilter` that lets cycles share its verdicts."""

    def key(self, inp: ScheduleInput) -> Hashable:
        """Everything of `inp` but its clusters that `admit` reads, as a hashable value.

        Two inputs over the same cluster table with equal keys for every rule get
        the same verdicts, so a cycle reuses them (`scheduler.filter_clusters`).
        """


NOT_KEYED = None
"""`filter_key` of a rule without a `key`: its verdicts are never shared."""


def filter_suspects(rule: ClusterFilter, inp: ScheduleInput) -> Collection[str] | None:
    """The clusters `rule` may refuse; None (any of them) when it does not say."""
    hook = getattr(rule, "suspects", None)
    return None if hook is None else cast(Suspecting, rule).suspects(inp)


def filter_key(rule: ClusterFilter, inp: ScheduleInput) -> Hashable:
    """What `rule`'s verdicts depend on besides the clusters; `NOT_KEYED` when it does not say."""
    hook = getattr(rule, "key", None)
    return NOT_KEYED if hook is None else (cast(Keyed, rule).key(inp),)


class AdmitsEveryCluster:
    """The cluster hooks of a rule that only evicts or refuses pools: it never refuses a
    whole cluster, reads nothing to say so, and its verdicts are shared by every caller."""

    def admit(self, inp: ScheduleInput, cluster: ObservedInferenceCluster) -> Rejection | None:
        """Never refuses a cluster."""
        return None

    def suspects(self, inp: ScheduleInput) -> Collection[str]:
        """No cluster: `admit` refuses none."""
        return ()

    def key(self, inp: ScheduleInput) -> Hashable:
        """Nothing: `admit` reads nothing."""
        return ()


PoolKey = tuple[str, str]  # (cluster, pool)


class PoolFilter(Protocol):
    """A pool filter: which pools of which clusters may not take a new replica."""

    name: str

    def refusals(self, inp: ScheduleInput) -> Mapping[PoolKey, Rejection]:
        """The refused (cluster, pool) pairs and why, computed once per cycle."""


class ClusterScore(Protocol):
    """A score rule: how much the fill wants the next replica on a cluster (higher first).

    The score is normalised, within [0, 100]; the fill sums the rules' scores
    times their weights. A score may depend only on the cluster's own state and
    what `prepare` fixed for the cycle: after a placement the fill re-scores
    just the cluster that took it.
    """

    name: str

    @property
    def weight(self) -> int:
        """How much this rule counts against the others (a positive integer)."""

    def prepare(self, states: RuleStates, inp: ScheduleInput) -> None:
        """Read what the rule needs from the cycle's input, once, before the fill."""

    def score(self, states: RuleStates, cluster: str) -> float:
        """The cluster's normalised score now, within [0, 100]."""

    def placed(self, states: RuleStates, cluster: str) -> None:
        """Note that one replica (new or kept) now counts on `cluster`."""
