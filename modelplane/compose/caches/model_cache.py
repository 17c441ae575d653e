"""ModelCache composer: stage an artifact once on every matching cluster (SPEC §6).

Inputs it requires: every InferenceCluster (the cache's `clusterSelector` is
applied here) and the ModelDeployments of its namespace (to list, in
`status.references`, those that name it). It never requires a Secret: the
credentials' value must not pass through the function.

Per matched cluster (Ready, publishing a provider config), as
provider-kubernetes Objects on that cluster (`manifests.py`):
- backend `PVC`: the namespace, a ReadWriteMany claim named after the cache,
  the hydration Job with its ServiceAccount, Role and RoleBinding, the result
  ConfigMap the Job writes, and, until the copy is Ready, the credentials
  Secret copy;
- backend `ExistingPVC`: an observe-only Object on `storage.claimName`; no Job.

A cluster the cache already placed a copy on stays covered while it is
NotReady or lacks a provider config (its Objects are kept as observed): a
copy is never torn down because a cluster blinked.

Each cluster's phase is read only from observed state: `Ready` once the
result ConfigMap reports `Ready` for the current source digest (resolved
digest, bytes and completion time are the Job's own measurements), `Failed`
once the Job failed (its failure message), `Hydrating` while the Job exists,
else `Pending`. `ArtifactReady` summarises them; the cache is Ready when every
covered cluster's copy is.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from modelplane.api import constants as c
from modelplane.api.model_cache import (
    IMPLEMENTED_SOURCES,
    ClusterCacheStatus,
    ModelCacheSpec,
    ModelCacheStatus,
    caches_named,
    read_hydration_result,
    source_errors,
)
from modelplane.api.objects import condition, condition_status, label_value
from modelplane.api.readers import read_inference_cluster
from modelplane.api.reasons import ArtifactReadyReason, ValidReason
from modelplane.compose import readiness
from modelplane.compose.caches import manifests as m
from modelplane.compose.common import as_desired, meta, parse_spec
from modelplane.compose.outcome import fatal, hold, wait
from modelplane.compose.types import (
    ComposeInput,
    ComposeResult,
    DesiredResource,
    Requirement,
    Resource,
)
from modelplane.scheduling.labels import selector_matches

CLUSTERS_REQUIREMENT = "inference-clusters"
DEPLOYMENTS_REQUIREMENT = "model-deployments"
MAX_MESSAGE = 1024


def requirements(namespace: str) -> dict[str, Requirement]:
    """What the composer needs fetched: every InferenceCluster, the namespace's deployments."""
    return {
        CLUSTERS_REQUIREMENT: Requirement(api_version=c.API_VERSION, kind="InferenceCluster"),
        DEPLOYMENTS_REQUIREMENT: Requirement(
            api_version=c.API_VERSION, kind="ModelDeployment", namespace=namespace
        ),
    }


# ── InferenceClusters, through their reader ─────────────────────────────────


@dataclass(frozen=True)
class Target:
    """An InferenceCluster as the cache composer needs it."""

    name: str
    labels: Mapping[str, str]
    ready: bool
    provider_config: str | None
    storage_class: str | None
    image: str | None = None
    """The cluster's `modelplaneImage`: its hydration Job runs that instead of the function's."""


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def read_targets(objs: list[Resource]) -> list[Target]:
    """The InferenceClusters' names, labels, readiness, provider config and storage class."""
    out = []
    for obj in objs:
        cl = read_inference_cluster(obj)
        if cl is None:
            continue
        storage_class = cl.storage.storage_class_name if cl.storage is not None else None
        out.append(
            Target(
                cl.name,
                cl.labels,
                cl.ready,
                cl.provider_config_name,
                storage_class,
                cl.modelplane_image,
            )
        )
    return sorted(out, key=lambda t: t.name)


# ── Observation ──────────────────────────────────────────────────────────────


def _wrapped(observed: Resource | None) -> Mapping[str, Any]:
    return readiness.wrapped(observed) or {}


def _job_failure(observed: Resource | None) -> str | None:
    cond = condition(_wrapped(observed), "Failed")
    if cond is None or cond.get("status") != "True":
        return None
    parts = [str(cond.get(k)) for k in ("reason", "message") if cond.get(k)]
    return ": ".join(parts) or "the Job failed"


def _sync_error(observed: Resource | None) -> str | None:
    cond = condition(observed, c.CONDITION_SYNCED)
    if cond is None or cond.get("status") != "False":
        return None
    return str(cond.get("message") or cond.get("reason") or "not synced")


def _claim_phase(observed: Resource | None) -> str | None:
    phase = _wrapped(observed).get("status")
    phase = phase.get("phase") if isinstance(phase, Mapping) else None
    return phase if isinstance(phase, str) else None


# ── One cluster ─────────────────────────────────────────────────────────────


@dataclass
class Copy:
    """What one cluster's copy composes and how it stands."""

    status: ClusterCacheStatus
    desired: dict[str, Resource] = field(default_factory=dict)
    secret_missing: str | None = None


def _key(cluster: str, what: str) -> str:
    # Cluster names are DNS subdomains, so "/" cannot occur in them.
    return f"{cluster}/{what}"


_object_name = m.object_name


def _running(job_obs: Resource | None, names: m.CacheNames, result: Any) -> str:
    """What a Hydrating copy waits for: the Job, or the result of a completed Job."""
    if condition_status(_wrapped(job_obs), "Complete") == "True":
        # The provider observes the Job and the ConfigMap separately; the
        # result may simply not have been observed yet.
        return f"Job {names.job} completed; waiting for its result in ConfigMap {names.result}"
    retry = f"; last attempt: {result.message}" if result is not None and result.message else ""
    return f"Job {names.job} running{retry}"


def _hydrated_copy(
    inp: ComposeInput, spec: ModelCacheSpec, names: m.CacheNames, cluster: str
) -> Copy:
    """Phase of a PVC-backed copy from its observed Job, result and credentials."""
    job_obs = inp.observed.get(_key(cluster, f"job-{names.digest}"))
    result = read_hydration_result(_wrapped(inp.observed.get(_key(cluster, "result"))).get("data"))
    result = result if result is not None and result.source_hash == names.digest else None
    base = ClusterCacheStatus(cluster=cluster, claim_name=names.claim)
    copy = Copy(base)
    secret = m.source_secret(spec.artifact.source)
    if secret is not None:
        copy.secret_missing = _sync_error(inp.observed.get(_key(cluster, "credentials")))
    if result is not None and result.phase == "Ready":
        copy.status = base.model_copy(
            update={
                "phase": "Ready",
                "resolved_digest": result.resolved_digest,
                "bytes_staged": int(result.bytes_staged) if result.bytes_staged else None,
                "last_hydrated_at": result.completed_at,
                "message": f"staged by Job {names.job}",
            }
        )
        copy.secret_missing = None
        return copy
    failure = _job_failure(job_obs)
    if failure is not None:
        detail = f" ({result.message})" if result is not None and result.message else ""
        copy.status = base.model_copy(
            update={"phase": "Failed", "message": f"Job {names.job}: {failure}{detail}"}
        )
    elif copy.secret_missing is not None:
        copy.status = base.model_copy(
            update={"message": f"credentials Secret {secret!r}: {copy.secret_missing}"}
        )
    elif _wrapped(job_obs):
        copy.status = base.model_copy(
            update={"phase": "Hydrating", "message": _running(job_obs, names, result)}
        )
    else:
        copy.status = base.model_copy(update={"message": f"Job {names.job} not created yet"})
    return copy


def _pvc_copy(
    inp: ComposeInput, spec: ModelCacheSpec, names: m.CacheNames, target: Target, pc: str
) -> Copy:
    copy = _hydrated_copy(inp, spec, names, target.name)
    labels = _labels(names.cache, target.name)
    storage = spec.storage
    assert storage.size is not None  # the spec validator requires it for PVC
    wanted: dict[str, tuple[Resource, dict[str, Any]]] = {
        "namespace": (m.namespace(names), {"policies": m.NO_DELETE}),
        "pvc": (
            m.claim(
                names, storage.size, storage.storage_class_name or target.storage_class, labels
            ),
            {"rule": m.CLAIM_BOUND},
        ),
        "result": (
            m.result_configmap(names, labels),
            {"policies": m.NO_UPDATE, "read_after_ready": True},
        ),
        "serviceaccount": (m.service_account(names, labels), {}),
        "role": (m.role(names, labels), {}),
        "rolebinding": (m.role_binding(names, labels), {}),
        f"job-{names.digest}": (
            m.job(spec, names, labels, target.image or inp.image),
            {"rule": m.JOB_COMPLETE},
        ),
    }
    secret = m.source_secret(spec.artifact.source)
    if secret is not None and copy.status.phase != "Ready":
        # Removed once the copy is Ready: the credentials live on the cluster
        # only while a Job may need them.
        refs = m.credentials_references(secret, names.namespace)
        wanted["credentials"] = (m.credentials_secret(names, labels), {"references": refs})
    for what, (manifest, opts) in wanted.items():
        name = _object_name(names.cache, target.name, what)
        copy.desired[_key(target.name, what)] = m.wrap(
            name, names.namespace, pc, manifest, labels, **opts
        )
    return copy


def _existing_copy(inp: ComposeInput, names: m.CacheNames, target: Target, pc: str) -> Copy:
    key = _key(target.name, "pvc")
    phase = _claim_phase(inp.observed.get(key))
    status = ClusterCacheStatus(cluster=target.name, claim_name=names.claim)
    if phase == "Bound":
        status.phase, status.message = "Ready", f"existing claim {names.claim} Bound"
    elif phase == "Lost":
        status.phase, status.message = "Failed", f"existing claim {names.claim} Lost its volume"
    else:
        status.message = (
            f"existing claim {names.claim} {'is ' + phase if phase else 'not observed yet'}"
        )
    labels = _labels(names.cache, target.name)
    obj = m.wrap(
        _object_name(names.cache, target.name, "pvc"),
        names.namespace,
        pc,
        m.adopted_claim(names),
        labels,
        rule=m.CLAIM_BOUND,
        policies=m.OBSERVE_ONLY,
    )
    return Copy(status, {key: obj})


def _kept_copy(inp: ComposeInput, spec: ModelCacheSpec, names: m.CacheNames, t: Target) -> Copy:
    """A covered cluster the composer cannot reach now: keep what it placed there.

    Its phase is still read from what was observed (a staged copy stays Ready).
    """
    prefix = _key(t.name, "")
    kept = {k: as_desired(o) for k, o in inp.observed.items() if k.startswith(prefix)}
    why = "NotReady" if not t.ready else "without status.providerConfigName"
    if spec.storage.backend == "ExistingPVC":
        status = _existing_copy(inp, names, t, "").status
    else:
        status = _hydrated_copy(inp, spec, names, t.name).status
    note = f"InferenceCluster {t.name} is {why}: its copy is kept as it is"
    return Copy(status.model_copy(update={"message": note}), kept)


def _labels(cache: str, cluster: str) -> dict[str, str]:
    return {
        c.LABEL_MANAGED_BY: c.MANAGED_BY,
        c.LABEL_CACHE: label_value(cache),
        c.LABEL_CLUSTER: label_value(cluster),
    }


def _covered(inp: ComposeInput, spec: ModelCacheSpec) -> list[Target]:
    """Matching clusters that are usable now, or that already hold a copy."""
    targets = read_targets(list(inp.required.get(CLUSTERS_REQUIREMENT, [])))
    out = []
    for t in targets:
        if not selector_matches(spec.cluster_selector, t.labels):
            continue
        placed = any(k.startswith(_key(t.name, "")) for k in inp.observed)
        if (t.ready and t.provider_config) or placed:
            out.append(t)
    return out


def _copy(inp: ComposeInput, spec: ModelCacheSpec, names: m.CacheNames, t: Target) -> Copy:
    if not t.ready or t.provider_config is None:
        return _kept_copy(inp, spec, names, t)
    if spec.storage.backend == "ExistingPVC":
        return _existing_copy(inp, names, t, t.provider_config)
    return _pvc_copy(inp, spec, names, t, t.provider_config)


# ── The composite ───────────────────────────────────────────────────────────


def _summary(result: ComposeResult, copies: list[Copy]) -> None:
    """Set `ArtifactReady` (and warnings) from the copies' phases."""
    n = len(copies)
    ready = sum(1 for x in copies if x.status.phase == "Ready")
    failed = [x.status for x in copies if x.status.phase == "Failed"]
    missing = [x for x in copies if x.secret_missing is not None]
    ok = False
    if n == 0:
        reason = ArtifactReadyReason.NO_CLUSTERS
        message = "no Ready InferenceCluster matches spec.clusterSelector"
    elif failed:
        reason = ArtifactReadyReason.HYDRATION_FAILED
        message = "; ".join(f"cluster {s.cluster}: {s.message}" for s in failed)
    elif missing:
        reason = ArtifactReadyReason.SECRET_NOT_FOUND
        message = "; ".join(f"cluster {x.status.cluster}: {x.status.message}" for x in missing)
    elif ready == n:
        ok, reason = True, ArtifactReadyReason.READY
        message = f"staged on {ready}/{n} cluster(s)"
    else:
        reason = ArtifactReadyReason.HYDRATING
        waiting = [
            f"{x.status.cluster} ({x.status.phase})" for x in copies if x.status.phase != "Ready"
        ]
        message = f"{ready}/{n} cluster(s) Ready; waiting for " + ", ".join(waiting)
    message = message[:MAX_MESSAGE]
    result.condition(c.CONDITION_ARTIFACT_READY, ok, str(reason), message)
    if reason in (ArtifactReadyReason.HYDRATION_FAILED, ArtifactReadyReason.SECRET_NOT_FOUND):
        result.warn(str(reason), message)
    result.ready = "True" if ok else "False"


def _references(inp: ComposeInput, name: str) -> list[str]:
    deployments = inp.required.get(DEPLOYMENTS_REQUIREMENT, [])
    return sorted(
        str(meta(d).get("name"))
        for d in deployments
        if name in caches_named(d) and meta(d).get("name")
    )


def compose(inp: ComposeInput) -> ComposeResult:
    """Compose every covered cluster's copy and publish per-cluster status."""
    result = ComposeResult()
    md = meta(inp.composite)
    name, ns = _str(md.get("name")), _str(md.get("namespace"))
    if name is None or ns is None:
        return fatal("ModelCache has no metadata.name or metadata.namespace")
    spec, error = parse_spec(ModelCacheSpec, inp.composite)
    if spec is None:
        return hold(
            inp,
            result,
            c.CONDITION_VALID,
            ValidReason.INVALID_SPEC,
            error,
            readiness=readiness.observed_ready,
        )
    result.condition(c.CONDITION_VALID, True, str(ValidReason.VALID))
    result.requirements = requirements(ns)
    if not all(inp.fetched(r) for r in result.requirements):
        return wait(inp, result, readiness=readiness.observed_ready)

    source = spec.artifact.source
    status = ModelCacheStatus(source=source.kind, references=_references(inp, name))
    result.status = status.to_dict()
    if source.kind not in IMPLEMENTED_SOURCES:
        message = (
            f"spec.artifact.source.{source.kind}: not implemented yet; use huggingFace, s3, "
            "http or inline"
        )
        return hold(
            inp,
            result,
            c.CONDITION_ARTIFACT_READY,
            ArtifactReadyReason.SOURCE_NOT_IMPLEMENTED,
            message,
            readiness=readiness.observed_ready,
        )
    errors = source_errors(source)
    if errors:
        return hold(
            inp,
            result,
            c.CONDITION_ARTIFACT_READY,
            ArtifactReadyReason.INVALID_SOURCE,
            "; ".join(errors),
            readiness=readiness.observed_ready,
        )

    claim = spec.storage.claim_name if spec.storage.backend == "ExistingPVC" else name
    assert claim is not None
    names = m.CacheNames(cache=name, namespace=ns, claim=claim, digest=m.source_hash(spec))
    copies = [_copy(inp, spec, names, t) for t in _covered(inp, spec)]
    for copy in copies:
        for key, obj in copy.desired.items():
            observed = inp.observed.get(key)
            ok = observed is not None and readiness.observed_ready(observed)
            result.desired[key] = DesiredResource(obj, "True" if ok else "False")
    staged = sum(1 for x in copies if x.status.phase == "Ready")
    status.clusters = [x.status for x in copies]
    status.ready = f"{staged}/{len(copies)}"
    result.status = status.to_dict()
    _summary(result, copies)
    return result
