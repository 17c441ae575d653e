"""The serving-backend filter: a replica goes only where its backend runs.

A backend other than Native needs its controller on the cluster, which an
InferenceCluster declares with the setting `api.backends` names for it (KServe:
`spec.servingStack.kserve.enabled: true`), read by `api.readers.read_backends`.
Native runs everywhere. A disaggregated deployment's replicas route through an
InferencePool, so they go only to clusters that serve InferencePools
(`spec.servingStack.inferencePool.enabled`, on by default; read by
`api.readers.read_inference_pools`), refused elsewhere with the same reason;
except on a backend that routes prefill and decode itself (Dynamo's frontend),
which needs no InferencePool.
"""

from __future__ import annotations

from collections.abc import Collection, Hashable

from modelplane.api.backends import needs_inference_pool, runs_everywhere
from modelplane.api.constants import DISAGGREGATED
from modelplane.api.readers import ObservedInferenceCluster, ObservedModelReplica
from modelplane.scheduling.framework import Eviction, Rejection, ScheduleInput


def _pooled(inp: ScheduleInput) -> bool:
    """Whether the deployment's replicas route prefill → decode through an InferencePool."""
    return inp.spec.prefill is not None and needs_inference_pool(inp.spec.backend)


class BackendFilter:
    """`spec.backend`: refuse clusters that cannot run the deployment's serving backend."""

    name = "Backend"

    def admit(self, inp: ScheduleInput, cluster: ObservedInferenceCluster) -> Rejection | None:
        """Refuse a cluster not declaring the backend (or whose declaration is unreadable)."""
        if _pooled(inp) and cluster.inference_pools is not True:
            why = "unreadable" if cluster.inference_pools is None else "not-enabled"
            return Rejection("BackendUnsupported", (DISAGGREGATED, why))
        backend = inp.spec.backend
        if runs_everywhere(backend):
            return None
        if cluster.backends is not None and backend in cluster.backends:
            return None
        why = "unreadable" if cluster.backends is None else "not-enabled"
        return Rejection("BackendUnsupported", (backend, why))

    def suspects(self, inp: ScheduleInput) -> Collection[str]:
        """The clusters that do not (verifiably) run the backend, or disaggregation."""
        out: set[str] = set()
        if _pooled(inp):
            out.update(n for n, cl in inp.clusters.items() if cl.inference_pools is not True)
        backend = inp.spec.backend
        if not runs_everywhere(backend):
            out.update(
                n
                for n, cl in inp.clusters.items()
                if cl.backends is None or backend not in cl.backends
            )
        return out

    def key(self, inp: ScheduleInput) -> Hashable:
        """The backend, and whether the deployment is disaggregated."""
        return inp.spec.backend, _pooled(inp)

    def evict(
        self, inp: ScheduleInput, cluster: ObservedInferenceCluster, replica: ObservedModelReplica
    ) -> Eviction | None:
        """A replica leaves a cluster that verifiably no longer runs its backend.

        An unreadable `spec.servingStack` cannot be verified: the replica stays.
        """
        if _pooled(inp) and cluster.inference_pools is False:
            return Eviction("BackendUnsupported", (cluster.name, DISAGGREGATED))
        backend = inp.spec.backend
        if runs_everywhere(backend) or cluster.backends is None or backend in cluster.backends:
            return None
        return Eviction("BackendUnsupported", (cluster.name, backend))
