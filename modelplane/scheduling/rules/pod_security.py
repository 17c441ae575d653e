"""Pod Security: no new replica on a cluster whose level forbids the deployment's templates.

Each InferenceCluster sets the Pod Security Standards level of the namespaces
Modelplane creates on it (`spec.podSecurity`, `api/pod_security.py`). A
deployment whose pod template that level forbids is not placed there: the
cluster's verdict names the level and the first field, so `Scheduled` says
why before any replica exists (the ModelReplica composer refuses such a
template too, should a replica reach it). A replica already running stays: a
level tightened later deletes nothing, like a quota lowered below use.
"""

from __future__ import annotations

from collections.abc import Collection, Hashable

from modelplane.api.pod_security import LEVELS, templates_violations
from modelplane.api.readers import ObservedInferenceCluster, ObservedModelReplica
from modelplane.scheduling.framework import Eviction, Rejection, ScheduleInput


def _by_level(inp: ScheduleInput) -> tuple[tuple[str, ...], ...]:
    """The deployment's violations at each level of `LEVELS`, in order."""
    templates = [
        (role.workers.template, f"{role.workers_path}.template")
        for role in inp.spec.roles().values()
    ]
    return tuple(tuple(templates_violations(templates, level)) for level in LEVELS)


def _forbidden(inp: ScheduleInput, level: str) -> tuple[str, ...]:
    # A level that is not one of LEVELS was read as restricted already.
    by_level = dict(zip(LEVELS, _by_level(inp), strict=True))
    return by_level.get(level, by_level["restricted"])


class PodSecurityFilter:
    """A cluster whose Pod Security level forbids the deployment's templates takes none."""

    name = "PodSecurity"

    def admit(self, inp: ScheduleInput, cluster: ObservedInferenceCluster) -> Rejection | None:
        """Refuse a cluster whose level forbids some field of a template."""
        found = _forbidden(inp, cluster.pod_security)
        if not found:
            return None
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        return Rejection("PodSecurityForbidden", (cluster.pod_security, found[0] + more))

    def suspects(self, inp: ScheduleInput) -> Collection[str]:
        """The clusters at a level the templates break."""
        bad = {level for level, found in zip(LEVELS, _by_level(inp), strict=True) if found}
        return [n for n, cl in inp.clusters.items() if cl.pod_security in bad]

    def key(self, inp: ScheduleInput) -> Hashable:
        """What each level forbids of the deployment's templates."""
        return _by_level(inp)

    def evict(
        self, inp: ScheduleInput, cluster: ObservedInferenceCluster, replica: ObservedModelReplica
    ) -> Eviction | None:
        """Never: a level tightened later deletes nothing that runs."""
        return None
