"""ModelCache: an artifact (weights, a tokenizer, bytes) staged once per cluster.

The spec says where the artifact comes from (`spec.artifact.source`, exactly one
of Hugging Face, S3 or an S3-compatible store, HTTP(S), inline content, or the
reserved `oci` / `configMap`), where it is stored on each cluster
(`spec.storage`) and which clusters get a copy (`spec.clusterSelector`).

The per-cluster status is a contract other kinds read (a deployment's placement
prefers clusters whose copy is Ready; a replica waits for its cluster's copy):
the cache composer writes it by constructing `ModelCacheStatus`, and every
other module reads it only through `read_model_cache`, which never raises and
keeps a malformed entry as *unknown* rather than dropping it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import Field, TypeAdapter, ValidationError, model_validator

from modelplane.api.common import (
    ConditionedStatus,
    DNSSubdomain,
    KubeModel,
    LabelSelector,
    LocalObjectReference,
    LocalSecretKeyRef,
    QuantityString,
    StatusModel,
    cel_rules,
    format_validation_error,
)
from modelplane.api.constants import HYDRATE_SUBPATH

# Inline content travels to the hydration Job as one environment value; the
# cap keeps the Job (and the composite) far below etcd's object size limit.
MAX_INLINE_BYTES = 64 * 1024
MAX_URL = 2048
# A Hugging Face repo id: `name` or `namespace/name` (the Hub's own rule:
# alphanumerics, '-', '_', '.', no leading separator).
HF_REPO_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}(/[A-Za-z0-9][A-Za-z0-9._-]{0,95})?$"
# An S3 bucket name (AWS's rule, which S3-compatible stores share).
S3_BUCKET_PATTERN = r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$"
SHA256_PATTERN = r"^[0-9a-f]{64}$"
SOURCE_KINDS = ("huggingFace", "s3", "http", "inline", "oci", "configMap")
IMPLEMENTED_SOURCES = ("huggingFace", "s3", "http", "inline")

Phase = Literal["Pending", "Hydrating", "Ready", "Failed"]
PHASES: tuple[str, ...] = ("Pending", "Hydrating", "Ready", "Failed")


class HuggingFaceSource(KubeModel):
    """A Hugging Face Hub repository at a revision (resolved to a commit when staged)."""

    repo: str = Field(
        min_length=1,
        max_length=193,
        pattern=HF_REPO_PATTERN,
        description="Repository id on the Hub, `name` or `namespace/name`.",
    )
    revision: str = Field(
        default="main",
        min_length=1,
        max_length=255,
        description="Branch, tag or commit; resolved to a commit when staged.",
    )
    token_secret_ref: LocalSecretKeyRef | None = Field(
        default=None, description="A Secret key holding a Hub token (gated or private repos)."
    )


class S3Source(KubeModel):
    """Objects under a prefix of an S3 bucket, on AWS or an S3-compatible store."""

    bucket: str = Field(
        min_length=3, max_length=63, pattern=S3_BUCKET_PATTERN, description="Bucket name."
    )
    prefix: str = Field(
        default="", max_length=1024, description="Key prefix; every object under it is staged."
    )
    region: str | None = Field(
        default=None, max_length=64, description="Region of the bucket (signing region)."
    )
    endpoint: str | None = Field(
        default=None,
        max_length=MAX_URL,
        description="Endpoint of an S3-compatible store (MinIO, R2, GCS interop); absent for AWS.",
    )
    credentials_secret_ref: LocalObjectReference | None = Field(
        default=None,
        description="A Secret with AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY "
        "(and optionally AWS_SESSION_TOKEN).",
    )


class HTTPSource(KubeModel):
    """One file over HTTP(S), optionally verified against its sha256."""

    url: str = Field(
        min_length=1, max_length=MAX_URL, description="http or https URL, without credentials."
    )
    sha256: str | None = Field(
        default=None,
        pattern=SHA256_PATTERN,
        description="Expected sha256 (hex) of the file; the download fails on a mismatch.",
    )
    headers_secret_ref: LocalObjectReference | None = Field(
        default=None, description="A Secret whose keys are request header names."
    )


class InlineSource(KubeModel):
    """Small content written as one file (a tokenizer config, a chat template)."""

    model_config = KubeModel.model_config | {
        "json_schema_extra": cel_rules(
            (
                "self.fileName != '.' && self.fileName != '..'",
                "fileName must name a file, not . or ..",
            )
        )
    }

    content: str = Field(
        max_length=MAX_INLINE_BYTES, description="The file's content (at most 64 KiB)."
    )
    file_name: str = Field(
        default="content",
        min_length=1,
        max_length=253,
        pattern=r"^[^/]+$",
        description="Name of the file in the cache folder.",
    )

    @model_validator(mode="after")
    def _a_file(self) -> InlineSource:
        if self.file_name in (".", ".."):
            raise ValueError("fileName must name a file, not . or ..")
        return self


class ArtifactSource(KubeModel):
    """Where the artifact comes from: exactly one source."""

    model_config = KubeModel.model_config | {
        "json_schema_extra": cel_rules(
            (
                "[has(self.huggingFace), has(self.s3), has(self.http), has(self.inline),"
                " has(self.oci), has(self.configMap)].filter(x, x).size() == 1",
                "exactly one of huggingFace, s3, http, inline, oci or configMap must be set",
            )
        )
    }

    hugging_face: HuggingFaceSource | None = None
    s3: S3Source | None = None
    http: HTTPSource | None = None
    inline: InlineSource | None = None
    oci: dict[str, Any] | None = Field(
        default=None, description="Reserved: accepted, reported as not implemented yet."
    )
    config_map: dict[str, Any] | None = Field(
        default=None, description="Reserved: accepted, reported as not implemented yet."
    )

    @model_validator(mode="after")
    def _exactly_one(self) -> ArtifactSource:
        if len(self.kinds()) != 1:
            raise ValueError(
                "exactly one of huggingFace, s3, http, inline, oci or configMap must be set"
            )
        return self

    def kinds(self) -> list[str]:
        """The wire names of the sources that are set."""
        values = (self.hugging_face, self.s3, self.http, self.inline, self.oci, self.config_map)
        return [k for k, v in zip(SOURCE_KINDS, values, strict=True) if v is not None]

    @property
    def kind(self) -> str:
        """The wire name of the one source that is set."""
        return self.kinds()[0]


class Artifact(KubeModel):
    """What is staged and where it comes from."""

    kind: Literal["Weights", "Tokenizer", "Bytes"] = Field(
        default="Weights", description="What the artifact is: Weights, Tokenizer or Bytes."
    )
    source: ArtifactSource


class CacheStorage(KubeModel):
    """Where each cluster keeps its copy."""

    model_config = KubeModel.model_config | {
        "json_schema_extra": cel_rules(
            ("self.backend != 'PVC' || has(self.size)", "size is required when backend is PVC"),
            (
                "self.backend != 'ExistingPVC' || has(self.claimName)",
                "claimName is required when backend is ExistingPVC",
            ),
        )
    }

    backend: Literal["PVC", "ExistingPVC"] = Field(
        default="PVC",
        description="PVC: a ReadWriteMany claim per cluster, hydrated by a Job; ExistingPVC: "
        "adopt claimName on each cluster, no Job.",
    )
    size: QuantityString | None = Field(
        default=None, description="Size of each cluster's claim (required for PVC)."
    )
    storage_class_name: str | None = Field(
        default=None,
        max_length=253,
        description="Absent: each cluster's spec.storage.storageClassName, else its default.",
    )
    claim_name: DNSSubdomain | None = Field(
        default=None, description="The PersistentVolumeClaim ExistingPVC adopts on each cluster."
    )

    @model_validator(mode="after")
    def _backend_fields(self) -> CacheStorage:
        if self.backend == "PVC" and self.size is None:
            raise ValueError("size is required when backend is PVC")
        if self.backend == "ExistingPVC" and self.claim_name is None:
            raise ValueError("claimName is required when backend is ExistingPVC")
        return self


class ModelCacheSpec(KubeModel):
    """An artifact, its storage, and the clusters that hold a copy."""

    artifact: Artifact
    storage: CacheStorage
    replication: Literal["AllMatchingClusters"] = Field(
        default="AllMatchingClusters",
        description="Where copies go: every Ready cluster clusterSelector matches.",
    )
    cluster_selector: LabelSelector | None = Field(
        default=None,
        description="Which InferenceClusters hold a copy, by their labels; absent means all.",
    )


class ClusterCacheStatus(StatusModel):
    """The copy on one cluster."""

    cluster: str = Field(description="The InferenceCluster holding this copy.")
    phase: Phase = Field(default="Pending", description="Pending, Hydrating, Ready or Failed.")
    claim_name: str | None = Field(default=None, description="The PVC holding the copy there.")
    resolved_digest: str | None = Field(
        default=None, description="HF commit, S3 ETag manifest hash or sha256 the Job measured."
    )
    bytes_staged: int | None = Field(default=None, description="Bytes the Job staged.")
    last_hydrated_at: str | None = Field(
        default=None, description="When the Job finished staging (RFC 3339)."
    )
    message: str | None = Field(
        default=None, description="What the copy waits for, or why it failed."
    )


class ModelCacheStatus(ConditionedStatus):
    """Per-cluster copies, the deployments using them, and a `k/n` summary."""

    source: str | None = Field(default=None, description="Which kind of source is staged.")
    clusters: list[ClusterCacheStatus] | None = Field(
        default=None, description="The copy on each covered cluster."
    )
    references: list[str] | None = Field(
        default=None, description="ModelDeployments in this namespace that name this cache."
    )
    ready: str | None = Field(default=None, description="Clusters whose copy is Ready: `k/n`.")


# ── URL checks (a condition, not a schema rule: the composer names the field) ──

# RFC 3986 characters; anything else (spaces, newlines, backticks, quotes) is
# refused rather than guessed at.
_URL_CHARS = re.compile(r"^[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=%]+$")


def url_errors(url: str, field: str) -> list[str]:
    """Why `url` may not be fetched (empty when it may): http(s) only, no credentials."""
    if not _URL_CHARS.match(url):
        return [f"{field}: {url!r} contains characters a URL may not (whitespace, quotes, `)"]
    parts = urlsplit(url)
    errors = []
    if parts.scheme not in ("https", "http"):
        errors.append(f"{field}: scheme {parts.scheme or '(none)'!r} is not http or https")
    if not parts.hostname:
        errors.append(f"{field}: no host")
    if parts.username is not None or parts.password is not None:
        errors.append(
            f"{field}: credentials in the URL are refused; use a Secret reference instead"
        )
    return errors


def source_errors(source: ArtifactSource) -> list[str]:
    """URL problems of a source's fetchable addresses (HTTP url, S3 endpoint)."""
    base = "spec.artifact.source"
    if source.http is not None:
        return url_errors(source.http.url, f"{base}.http.url")
    if source.s3 is not None and source.s3.endpoint is not None:
        return url_errors(source.s3.endpoint, f"{base}.s3.endpoint")
    return []


# ── The tolerant reader ──────────────────────────────────────────────────────


@dataclass(frozen=True)
class CacheCopy:
    """The copy on one cluster as other kinds read it.

    `phase` is "Unknown" when the entry could not be read; `problem` says why.
    """

    cluster: str
    phase: str
    claim_name: str | None = None
    resolved_digest: str | None = None
    bytes_staged: int | None = None
    last_hydrated_at: str | None = None
    message: str | None = None
    problem: str | None = None

    @property
    def ready(self) -> bool:
        """Whether the copy is staged and may be mounted."""
        return self.phase == "Ready"


@dataclass(frozen=True)
class ObservedModelCache:
    """A ModelCache as deployments, replicas and the CLI see it."""

    namespace: str
    name: str
    copies: tuple[CacheCopy, ...]  # one per cluster, sorted; unknown entries included
    unreadable: tuple[str, ...] = ()  # entries without a cluster name ("path: why")
    backend: str = "PVC"  # spec.storage.backend

    @property
    def sub_path(self) -> str | None:
        """The folder of the claim a replica mounts: the Job's `model` folder for PVC."""
        return HYDRATE_SUBPATH if self.backend == "PVC" else None

    def copy_on(self, cluster: str) -> CacheCopy | None:
        """The copy on `cluster`, or None when the cache does not cover it."""
        return next((x for x in self.copies if x.cluster == cluster), None)

    def covers(self, cluster: str) -> bool:
        """Whether the cache stages a copy on `cluster` (whatever its phase)."""
        return self.copy_on(cluster) is not None

    def ready_on(self, cluster: str) -> bool:
        """Whether the copy on `cluster` is Ready."""
        copy = self.copy_on(cluster)
        return copy is not None and copy.ready


_CLUSTERS = ClusterCacheStatus.model_fields  # wire names below come from the model
_W_CLUSTERS = ModelCacheStatus.model_fields["clusters"].alias or "clusters"
_W_CLUSTER = _CLUSTERS["cluster"].alias or "cluster"


def _read_copy(raw: Any, path: str) -> CacheCopy | str:
    if not isinstance(raw, Mapping) or not isinstance(raw.get(_W_CLUSTER), str):
        return f"{path}: no cluster name"
    cluster = str(raw[_W_CLUSTER])
    try:
        entry = ClusterCacheStatus.model_validate(raw)
    except ValidationError as err:
        return CacheCopy(cluster, "Unknown", problem=format_validation_error(err, path))
    return CacheCopy(
        cluster,
        entry.phase,
        entry.claim_name,
        entry.resolved_digest,
        entry.bytes_staged,
        entry.last_hydrated_at,
        entry.message,
    )


def read_model_cache(obj: Mapping[str, Any]) -> ObservedModelCache:
    """Read a ModelCache's per-cluster copies; never raises.

    A named entry that does not validate is kept with phase "Unknown" and the
    validation message; an entry without a cluster name is listed in
    `unreadable`.
    """
    meta = obj.get("metadata")
    meta = meta if isinstance(meta, Mapping) else {}
    status = obj.get("status")
    raw = status.get(_W_CLUSTERS) if isinstance(status, Mapping) else None
    copies: dict[str, CacheCopy] = {}
    unreadable: list[str] = []
    if raw is not None and not isinstance(raw, list):
        unreadable.append(f"status.{_W_CLUSTERS}: not a list")
    for i, entry in enumerate(raw if isinstance(raw, list) else []):
        read = _read_copy(entry, f"status.{_W_CLUSTERS}[{i}]")
        if isinstance(read, str):
            unreadable.append(read)
        else:
            copies.setdefault(read.cluster, read)
    spec = obj.get("spec")
    storage = spec.get("storage") if isinstance(spec, Mapping) else None
    backend = storage.get("backend") if isinstance(storage, Mapping) else None
    return ObservedModelCache(
        namespace=str(meta.get("namespace") or ""),
        name=str(meta.get("name") or ""),
        copies=tuple(copies[k] for k in sorted(copies)),
        unreadable=tuple(unreadable),
        backend="ExistingPVC" if backend == "ExistingPVC" else "PVC",
    )


_CACHES = TypeAdapter(list[LocalObjectReference])


def caches_named(deployment: Mapping[str, Any]) -> list[str]:
    """The ModelCache names a ModelDeployment's `spec.caches` lists (malformed: none)."""
    spec = deployment.get("spec")
    raw = spec.get("caches") if isinstance(spec, Mapping) else None
    try:
        return [ref.name for ref in _CACHES.validate_python(raw or [])]
    except ValidationError:
        return []


# ── The hydration contract: what the Job reads and what it reports ──────────
#
# The composer writes these environment variables into the Job and the
# hydrator reads them (user strings travel only as whole values); the
# hydrator writes a `HydrationResult` into the ConfigMap the composer observes.


class HydrateEnv:
    """Environment variable names of the hydration Job's fixed command."""

    DEST = "MODELPLANE_DEST"
    SOURCE_HASH = "MODELPLANE_SOURCE_HASH"
    RESULT_CONFIGMAP = "MODELPLANE_RESULT_CONFIGMAP"
    RESULT_NAMESPACE = "MODELPLANE_RESULT_NAMESPACE"
    HF_REPO = "MODELPLANE_HF_REPO"
    HF_REVISION = "MODELPLANE_HF_REVISION"
    HF_TOKEN = "HF_TOKEN"  # huggingface_hub's own variable
    S3_BUCKET = "MODELPLANE_S3_BUCKET"
    S3_PREFIX = "MODELPLANE_S3_PREFIX"
    S3_REGION = "MODELPLANE_S3_REGION"
    S3_ENDPOINT = "MODELPLANE_S3_ENDPOINT"
    HTTP_URL = "MODELPLANE_HTTP_URL"
    HTTP_SHA256 = "MODELPLANE_HTTP_SHA256"
    HTTP_HEADERS_DIR = "MODELPLANE_HTTP_HEADERS_DIR"
    INLINE_CONTENT = "MODELPLANE_INLINE_CONTENT"
    INLINE_FILE = "MODELPLANE_INLINE_FILE"


# The hydrator subcommand per source kind (`modelplane hydrate <command>`).
HYDRATE_COMMANDS: dict[str, str] = {
    "huggingFace": "huggingface",
    "s3": "s3",
    "http": "http",
    "inline": "inline",
}


class HydrationResult(StatusModel):
    """What one hydration run measured, as the ConfigMap's `data` (string values)."""

    source_hash: str
    phase: Literal["Hydrating", "Ready", "Failed"]
    resolved_digest: str | None = None
    bytes_staged: str | None = Field(default=None, pattern=r"^[0-9]{1,20}$")
    completed_at: str | None = None
    message: str | None = Field(default=None, max_length=1024)

    def to_data(self) -> dict[str, str]:
        """The ConfigMap `data` form (camelCase keys, unset values omitted)."""
        return {k: str(v) for k, v in self.to_dict().items()}


def read_hydration_result(data: Any) -> HydrationResult | None:
    """The result a hydration ConfigMap's `data` carries, or None when it carries none."""
    if not isinstance(data, Mapping):
        return None
    try:
        return HydrationResult.model_validate(data)
    except ValidationError:
        return None
