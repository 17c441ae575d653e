"""The manifests a ModelCache sends to each workload cluster (SPEC §6).

Pure functions over the typed spec. Per cluster, in the cache's namespace:
the namespace itself (never deleted: replicas share it), a `ReadWriteMany`
PersistentVolumeClaim named after the cache, and for the hydration a
ServiceAccount, a Role that may only get and patch the one result
ConfigMap, its RoleBinding, that ConfigMap, the one-shot Job and, while the
Job needs it, a copy of the source's credentials Secret.

Security decisions:
- The Job runs a fixed command (`modelplane hydrate <source>`). Every user
  string (repo, revision, bucket, prefix, endpoint, URL, inline content)
  travels as one whole environment value; nothing is spliced into a shell
  script or a template. Kubernetes still expands `$(VAR)` in env values, so
  every `$` is doubled (`$$` is Kubernetes' escape) and the process receives
  the user's text byte for byte.
- Credentials never pass through the function: the Secret copy is an Object
  whose manifest has no data, filled by provider-kubernetes from the
  control-plane Secret (`references[].patchesFrom`).
- The Job's name carries a digest of what it fetches, so a changed source is
  a new Job (a Job's pod template is immutable) and a result is trusted only
  when it reports the same digest.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from modelplane.api import constants as c
from modelplane.api.model_cache import HYDRATE_COMMANDS, ArtifactSource, HydrateEnv, ModelCacheSpec
from modelplane.api.objects import short_hash
from modelplane.compose import readiness
from modelplane.compose.objects import object_metadata
from modelplane.compose.types import Resource

MAX_NAME = 63
HASH = 8
RUN_AS = 65532
CACHE_VOLUME = "cache"
TMP_VOLUME = "tmp"
HEADERS_VOLUME = "headers"
JOB_BACKOFF_LIMIT = 4
# A Job is complete (or failed) when its condition says so; provider-kubernetes
# evaluates this on the workload cluster.
PVC_BOUND_CEL = "has(object.status) && has(object.status.phase) && object.status.phase == 'Bound'"


def _claim_bound(observed: Resource | None) -> bool:
    status = (readiness.wrapped(observed) or {}).get("status")
    phase = status.get("phase") if isinstance(status, dict) else None
    return phase == "Bound" if phase is not None else readiness.object_ready(observed)


# The readiness rules of a cache's items (registered, so a kept Object is read
# by the rule it declared): a Job is ready once Complete, a claim once Bound,
# everything else once it exists.
JOB_COMPLETE = readiness.register(readiness.condition_rule("JobComplete", "Complete"))
CLAIM_BOUND = readiness.register(
    readiness.ReadinessRule(
        "ClaimBound", {"policy": readiness.POLICY_CEL, "celQuery": PVC_BOUND_CEL}, _claim_bound
    )
)
# Objects whose wrapped object another controller writes (the result
# ConfigMap, written by the Job) must not be reset by the provider: no Update.
NO_UPDATE = ["Observe", "Create", "Delete"]
# Shared objects (the namespace) are never deleted with the cache.
NO_DELETE = ["Observe", "Create", "Update", "LateInitialize"]
# An adopted claim (ExistingPVC) is only observed: never created, changed or deleted.
OBSERVE_ONLY = ["Observe"]


def bounded(base: str, *suffix: str, limit: int = MAX_NAME) -> str:
    """`base-suffix...`, cut to `limit` characters with a hash of `base` when longer."""
    full = "-".join((base, *suffix))
    if len(full) <= limit:
        return full
    tail = "-".join(suffix)
    keep = max(1, limit - len(tail) - HASH - 2)
    return f"{base[:keep].rstrip('-.')}-{short_hash(base, length=HASH)}-{tail}"


def pvc_object_name(cache: str, cluster: str) -> str:
    """The control-plane Object that holds (or adopts) a cache's claim on `cluster`."""
    return object_name(cache, cluster, "pvc")


def object_name(cache: str, cluster: str, what: str) -> str:
    """The control-plane name of one Object a cache places on `cluster`."""
    return bounded(f"{cache}-{cluster}", what)


def k8s_literal(value: str) -> str:
    """`value` escaped against Kubernetes' `$(VAR)` expansion of env values."""
    return value.replace("$", "$$")


def source_hash(spec: ModelCacheSpec) -> str:
    """A short digest of what is fetched (the artifact), in the Job's name and its result."""
    canonical = json.dumps(spec.artifact.to_dict(), sort_keys=True, separators=(",", ":"))
    return short_hash(canonical, length=HASH)


@dataclass(frozen=True)
class CacheNames:
    """The names of everything one cache places in its namespace on a cluster."""

    cache: str
    namespace: str
    claim: str
    digest: str

    @property
    def result(self) -> str:
        """The ConfigMap the Job reports into."""
        return bounded(self.cache, "hydration", limit=253)

    @property
    def account(self) -> str:
        """The Job's ServiceAccount, Role and RoleBinding."""
        return bounded(self.cache, "hydrator", limit=253)

    @property
    def credentials(self) -> str:
        """The copy of the source's credentials Secret."""
        return bounded(self.cache, "source-credentials", limit=253)

    @property
    def job(self) -> str:
        """The hydration Job (its name is a label value, so at most 63 characters)."""
        return bounded(self.cache, "hydrate", self.digest)


def _meta(names: CacheNames, name: str, labels: dict[str, str]) -> dict[str, Any]:
    return {"name": name, "namespace": names.namespace, "labels": dict(labels)}


def namespace(names: CacheNames) -> Resource:
    """The cache's namespace on the cluster (the same manifest a replica sends)."""
    return {
        "apiVersion": c.CORE_API_VERSION,
        "kind": "Namespace",
        "metadata": {"name": names.namespace, "labels": {c.LABEL_MANAGED_BY: c.MANAGED_BY}},
    }


def claim(
    names: CacheNames, size: str, storage_class: str | None, labels: dict[str, str]
) -> Resource:
    """The ReadWriteMany claim holding the copy (backend PVC)."""
    spec: dict[str, Any] = {
        "accessModes": ["ReadWriteMany"],
        "resources": {"requests": {"storage": size}},
    }
    if storage_class:
        spec["storageClassName"] = storage_class
    return {
        "apiVersion": c.CORE_API_VERSION,
        "kind": "PersistentVolumeClaim",
        "metadata": _meta(names, names.claim, labels),
        "spec": spec,
    }


def adopted_claim(names: CacheNames) -> Resource:
    """The user's existing claim, as an observe-only Object sees it (ExistingPVC)."""
    return {
        "apiVersion": c.CORE_API_VERSION,
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": names.claim, "namespace": names.namespace},
    }


def result_configmap(names: CacheNames, labels: dict[str, str]) -> Resource:
    """The ConfigMap the Job writes its measurements into (created empty)."""
    return {
        "apiVersion": c.CORE_API_VERSION,
        "kind": "ConfigMap",
        "metadata": _meta(names, names.result, labels),
    }


def service_account(names: CacheNames, labels: dict[str, str]) -> Resource:
    """The Job's identity; it carries no other permission than the Role's."""
    return {
        "apiVersion": c.CORE_API_VERSION,
        "kind": "ServiceAccount",
        "metadata": _meta(names, names.account, labels),
    }


def role(names: CacheNames, labels: dict[str, str]) -> Resource:
    """May read and write the one result ConfigMap, nothing else."""
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": _meta(names, names.account, labels),
        "rules": [
            {
                "apiGroups": [""],
                "resources": ["configmaps"],
                "resourceNames": [names.result],
                "verbs": ["get", "patch"],
            }
        ],
    }


def role_binding(names: CacheNames, labels: dict[str, str]) -> Resource:
    """Binds the Role to the Job's ServiceAccount."""
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": _meta(names, names.account, labels),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": names.account},
        "subjects": [
            {"kind": "ServiceAccount", "name": names.account, "namespace": names.namespace}
        ],
    }


def credentials_secret(names: CacheNames, labels: dict[str, str]) -> Resource:
    """The Secret copy's manifest: no data here, the provider patches it in."""
    return {
        "apiVersion": c.CORE_API_VERSION,
        "kind": "Secret",
        "metadata": _meta(names, names.credentials, labels),
        "type": "Opaque",
    }


def credentials_references(source_secret: str, namespace: str) -> list[dict[str, Any]]:
    """provider-kubernetes references copying the control-plane Secret's data."""
    return [
        {
            "patchesFrom": {
                "apiVersion": c.CORE_API_VERSION,
                "kind": "Secret",
                "name": source_secret,
                "namespace": namespace,
                "fieldPath": "data",
            },
            "toFieldPath": "data",
        }
    ]


def source_secret(source: ArtifactSource) -> str | None:
    """The control-plane Secret the source needs copied, if any."""
    if source.hugging_face is not None and source.hugging_face.token_secret_ref is not None:
        return source.hugging_face.token_secret_ref.name
    if source.s3 is not None and source.s3.credentials_secret_ref is not None:
        return source.s3.credentials_secret_ref.name
    if source.http is not None and source.http.headers_secret_ref is not None:
        return source.http.headers_secret_ref.name
    return None


def _value(name: str, value: str) -> dict[str, Any]:
    return {"name": name, "value": k8s_literal(value)}


def _secret_key(name: str, secret: str, key: str, *, optional: bool = False) -> dict[str, Any]:
    ref: dict[str, Any] = {"name": secret, "key": key}
    if optional:
        ref["optional"] = True
    return {"name": name, "valueFrom": {"secretKeyRef": ref}}


def _source_env(source: ArtifactSource, names: CacheNames) -> list[dict[str, Any]]:
    """The source's parameters, each user string one whole (escaped) env value."""
    env: list[dict[str, Any]] = []
    if source.hugging_face is not None:
        hf = source.hugging_face
        env += [_value(HydrateEnv.HF_REPO, hf.repo), _value(HydrateEnv.HF_REVISION, hf.revision)]
        if hf.token_secret_ref is not None:
            env.append(_secret_key(HydrateEnv.HF_TOKEN, names.credentials, hf.token_secret_ref.key))
    elif source.s3 is not None:
        s3 = source.s3
        env += [_value(HydrateEnv.S3_BUCKET, s3.bucket), _value(HydrateEnv.S3_PREFIX, s3.prefix)]
        env += [_value(HydrateEnv.S3_REGION, s3.region)] if s3.region else []
        env += [_value(HydrateEnv.S3_ENDPOINT, s3.endpoint)] if s3.endpoint else []
        if s3.credentials_secret_ref is not None:
            for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
                env.append(_secret_key(key, names.credentials, key))
            env.append(
                _secret_key(
                    "AWS_SESSION_TOKEN", names.credentials, "AWS_SESSION_TOKEN", optional=True
                )
            )
    elif source.http is not None:
        env.append(_value(HydrateEnv.HTTP_URL, source.http.url))
        env += [_value(HydrateEnv.HTTP_SHA256, source.http.sha256)] if source.http.sha256 else []
        if source.http.headers_secret_ref is not None:
            env.append(_value(HydrateEnv.HTTP_HEADERS_DIR, c.HYDRATE_HEADERS_DIR))
    elif source.inline is not None:
        env.append(_value(HydrateEnv.INLINE_CONTENT, source.inline.content))
        env.append(_value(HydrateEnv.INLINE_FILE, source.inline.file_name))
    return env


def _volumes(source: ArtifactSource, names: CacheNames) -> tuple[list[Any], list[Any]]:
    volumes: list[dict[str, Any]] = [
        {"name": CACHE_VOLUME, "persistentVolumeClaim": {"claimName": names.claim}},
        {"name": TMP_VOLUME, "emptyDir": {}},
    ]
    mounts: list[dict[str, Any]] = [
        {"name": CACHE_VOLUME, "mountPath": c.HYDRATE_MOUNT},
        {"name": TMP_VOLUME, "mountPath": "/tmp"},
    ]
    if source.http is not None and source.http.headers_secret_ref is not None:
        volumes.append({"name": HEADERS_VOLUME, "secret": {"secretName": names.credentials}})
        mounts.append(
            {"name": HEADERS_VOLUME, "mountPath": c.HYDRATE_HEADERS_DIR, "readOnly": True}
        )
    return volumes, mounts


def job(spec: ModelCacheSpec, names: CacheNames, labels: dict[str, str], image: str) -> Resource:
    """The one-shot hydration Job in `image`: a fixed command, user strings only as env values."""
    source = spec.artifact.source
    env = [
        _value(HydrateEnv.DEST, f"{c.HYDRATE_MOUNT}/{c.HYDRATE_SUBPATH}"),
        _value(HydrateEnv.SOURCE_HASH, names.digest),
        _value(HydrateEnv.RESULT_CONFIGMAP, names.result),
        {
            "name": HydrateEnv.RESULT_NAMESPACE,
            "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}},
        },
        # huggingface_hub keeps its own cache and lock files under HF_HOME.
        _value("HF_HOME", "/tmp/hf-home"),
        _value("HF_HUB_DISABLE_TELEMETRY", "1"),
        *_source_env(source, names),
    ]
    volumes, mounts = _volumes(source, names)
    container = {
        "name": "hydrate",
        "image": image,
        "command": ["modelplane", "hydrate", HYDRATE_COMMANDS[source.kind]],
        "env": env,
        "volumeMounts": mounts,
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"]},
        },
    }
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": _meta(names, names.job, labels),
        "spec": {
            "backoffLimit": JOB_BACKOFF_LIMIT,
            "template": {
                "metadata": {"labels": dict(labels)},
                "spec": {
                    "restartPolicy": "Never",
                    "serviceAccountName": names.account,
                    "securityContext": {
                        "runAsNonRoot": True,
                        "runAsUser": RUN_AS,
                        "runAsGroup": RUN_AS,
                        "fsGroup": RUN_AS,
                        "seccompProfile": {"type": "RuntimeDefault"},
                    },
                    "containers": [container],
                    "volumes": volumes,
                },
            },
        },
    }


def wrap(
    name: str,
    namespace_: str,
    provider_config: str,
    manifest: Resource,
    labels: dict[str, str],
    *,
    rule: readiness.ReadinessRule = readiness.EXISTS,
    policies: list[str] | None = None,
    references: list[dict[str, Any]] | None = None,
    read_after_ready: bool = False,
) -> Resource:
    """Wrap `manifest` in a provider-kubernetes Object on the cluster's provider config.

    The Object is watched when its readiness reads a status or, with
    `read_after_ready`, when the composer keeps reading what another controller
    writes into it once it is Ready (the Job's result).
    """
    spec: dict[str, Any] = {
        "forProvider": {"manifest": manifest},
        "providerConfigRef": {"kind": "ClusterProviderConfig", "name": provider_config},
        "readiness": rule.wire(),
    }
    if rule.watched or read_after_ready:
        # provider-kubernetes observes a Ready Object once per --poll (10 minutes
        # by default): unwatched, a finished Job's result would reach the cache
        # that long after it was written.
        spec["watch"] = True
    if policies is not None:
        spec["managementPolicies"] = list(policies)
    if references:
        spec["references"] = references
    return {
        "apiVersion": c.PROVIDER_KUBERNETES_API_VERSION,
        "kind": "Object",
        "metadata": object_metadata(name, namespace_, labels),
        "spec": spec,
    }
