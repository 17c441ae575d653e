"""The ModelDeployment composer's side of revisions and Progressive rollouts.

`plan_rollout` reads what `rollout.decide` needs from the function's input
(this deployment's composed ModelReplicas, the clusters' labels and signals,
the ModelCache) and `Revisions` answers, per planned replica, which revision
it runs and the spec to compose it from. Without a Progressive rollout every
replica runs the spec's revision (a template change reaches each replica
where it runs, as before).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from modelplane.api import constants as c
from modelplane.api.autoscaling import ReplicaSignals
from modelplane.api.model_deployment import ModelDeploymentSpec
from modelplane.api.readers import ObservedInferenceCluster, not_scraping, read_model_replica
from modelplane.api.rollout import STRATEGY_MAKE_BEFORE_BREAK, read_rollout_status
from modelplane.compose.common import meta
from modelplane.compose.deployments.revision import (
    Template,
    replica_template,
    revision_of,
    template_of,
    with_template,
)
from modelplane.compose.deployments.rollout import (
    ReplicaRevision,
    RolloutInput,
    RolloutPlan,
    decide,
)
from modelplane.compose.types import Resource
from modelplane.scheduling.framework import ScheduleInput


@dataclass
class Revisions:
    """Which revision each replica runs, and the spec each revision is composed from."""

    spec: ModelDeploymentSpec
    target: str  # the spec's revision
    place: str  # the revision new placements run
    templates: Mapping[str, Template]
    actual: Mapping[str, str | None]  # own replica name → the revision it runs (None: unread)
    rollout: RolloutPlan | None = None  # None: every replica follows the spec (in place)
    in_place: frozenset[str] = frozenset()  # outdated replicas updated where they run
    _specs: dict[str, ModelDeploymentSpec | None] = field(default_factory=dict)

    def of(self, name: str) -> str:
        """The revision replica `name` is composed at: the spec's when every replica follows
        the spec or it is updated in place; else its own when it exists (and reads), or the
        one new placements run."""
        if self.rollout is None or name in self.in_place:
            return self.target
        return self.actual.get(name) or self.place

    @property
    def replacing(self) -> bool:
        """Whether replicas of another revision are replaced under MakeBeforeBreak (and so
        may be updated in place instead where nothing can surge)."""
        return (
            self.rollout is not None
            and self.rollout.status is None
            and self.spec.rollout.strategy == STRATEGY_MAKE_BEFORE_BREAK
        )

    def moves(self) -> dict[str, str]:
        """The replicas the scheduler replaces this cycle, each with the revision it goes to."""
        if self.rollout is None:
            return {}
        return {n: self.place for n in self.rollout.outdated if n not in self.in_place}

    def running(self, name: str) -> str:
        """The revision replica `name` runs now (a draining one is kept as observed)."""
        return self.actual.get(name) or self.of(name)

    def listed(self, name: str, draining: bool) -> str:
        """The revision status.placements names for scheduled replica `name`: a draining
        one's own (it is kept as observed), another's the one it is composed at."""
        return self.running(name) if draining else self.of(name)

    def spec_for(self, revision: str) -> ModelDeploymentSpec | None:
        """The deployment's spec running `revision`; None when it cannot be composed (an
        unknown revision, or one that no longer fits the spec's form)."""
        if revision == self.target:
            return self.spec
        if revision not in self._specs:
            template = self.templates.get(revision)
            fits = None if template is None else with_template(self.spec, template)
            self._specs[revision] = fits
        return self._specs[revision]

    def canary(self, revision: str) -> int | None:
        """The traffic percentage the endpoints of `revision` share as canaries, if any."""
        if self.rollout is None or revision not in self.rollout.canary:
            return None
        return self.rollout.canary_percent


def own_replicas(composed: Mapping[str, Resource]) -> list[Resource]:
    """This deployment's composed ModelReplicas, as observed."""
    return [o for o in composed.values() if o.get("kind") == c.KIND_MODEL_REPLICA]


def plan_revisions(
    composite: Resource,
    composed: Mapping[str, Resource],
    spec: ModelDeploymentSpec,
    observed: ScheduleInput,
    clusters: Mapping[str, ObservedInferenceCluster],
) -> Revisions:
    """The revisions of this cycle (and, under rollout Progressive, the rollout's next step)."""
    template = template_of(spec)
    target = revision_of(template)
    read: dict[str, str | None] = {}
    templates: dict[str, Template] = {}
    replicas = []
    for obj in own_replicas(composed):
        r = read_model_replica(obj)
        if r is None:
            continue
        t = replica_template(obj.get("spec"))
        rev = None if t is None else revision_of(t)
        if t is not None and rev is not None:
            templates.setdefault(rev, t)
        read[r.name] = rev
        replicas.append(ReplicaRevision(r.name, r.cluster, r.index, rev, r.ready))
    if spec.rollout.strategy == STRATEGY_MAKE_BEFORE_BREAK:
        return _replacing(spec, target, template, read, templates)
    if not spec.rollout.progressive:
        return Revisions(spec, target, target, {target: template}, read)
    plan = decide(
        RolloutInput(
            rollout=spec.rollout,
            replicas_wanted=spec.replicas,
            revision=target,
            template=template,
            prior=read_rollout_status(_status(composite)),
            replicas=tuple(sorted(replicas, key=lambda r: (r.cluster, r.index, r.name))),
            clusters={n: cl.labels for n, cl in clusters.items()},
            signals=_signals(replicas, clusters, str(meta(composite).get("namespace", ""))),
            templates=templates,
            cache_ready=_cache_ready(spec, observed),
            unscraped=frozenset(not_scraping(clusters, {r.cluster for r in replicas})),
        )
    )
    return Revisions(spec, target, plan.place, plan.templates, read, plan)


def _replacing(
    spec: ModelDeploymentSpec,
    target: str,
    template: Template,
    read: Mapping[str, str | None],
    templates: Mapping[str, Template],
) -> Revisions:
    """MakeBeforeBreak: replicas of another (readable) revision keep running it and are
    replaced by replicas of the spec's, like any other move (the scheduler places the
    replacements within maxSurge); `in_place` may later update some where they are."""
    outdated = frozenset(n for n, rev in read.items() if rev is not None and rev != target)
    if not outdated:
        return Revisions(spec, target, target, {target: template}, read)
    plan = RolloutPlan(outdated=outdated, place=target, templates={**templates, target: template})
    return Revisions(spec, target, target, plan.templates, read, plan)


def _status(composite: Resource) -> object:
    status = composite.get("status")
    return status if isinstance(status, dict) else {}


def _signals(
    replicas: list[ReplicaRevision],
    clusters: Mapping[str, ObservedInferenceCluster],
    namespace: str,
) -> dict[str, ReplicaSignals]:
    """Each replica's latest signals, from its cluster's agent report on pods in `namespace`."""
    out = {}
    for r in replicas:
        cl = clusters.get(r.cluster)
        signal = None if cl is None else cl.signal(r.name, namespace)
        if signal is not None:
            out[r.name] = signal
    return out


def _cache_ready(spec: ModelDeploymentSpec, observed: ScheduleInput) -> Callable[[str], bool]:
    """Whether the spec's cache is Ready on a cluster (always, without caches)."""
    if not spec.caches:
        return lambda cluster: True
    cache = observed.cache
    if cache is None:
        return lambda cluster: False
    return cache.ready_on


def revision_labels(revision: str) -> dict[str, str]:
    """The label naming a replica's (or endpoint's) revision."""
    return {c.LABEL_REVISION: revision}
