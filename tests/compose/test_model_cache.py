"""ModelCache composer: tables of observed state → desired state, plus the security properties.

Expected manifests are written out by hand; adversarial values are checked
against an independent model of Kubernetes' `$(VAR)` expansion; every emitted
manifest is checked by the schema oracles.
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from modelplane.api.model_cache import ModelCacheSpec, read_model_cache
from modelplane.compose.caches import model_cache
from modelplane.compose.caches.manifests import source_hash
from modelplane.compose.caches.model_cache import CLUSTERS_REQUIREMENT, DEPLOYMENTS_REQUIREMENT
from modelplane.compose.types import ComposeInput, ComposeResult

NS = "ml-team"
HF_SOURCE = {"huggingFace": {"repo": "Qwen/Qwen2.5-0.5B-Instruct", "revision": "main"}}


def cluster(
    name: str,
    labels: dict[str, str] | None = None,
    *,
    ready: bool = True,
    provider_config: bool = True,
    storage_class: str | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"source": "Existing"}
    if storage_class:
        spec["storage"] = {"storageClassName": storage_class}
    status: dict[str, Any] = {
        "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]
    }
    if provider_config:
        status["providerConfigName"] = f"modelplane-{name}"
    return {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "InferenceCluster",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": spec,
        "status": status,
    }


def cache(
    source: dict[str, Any] | None = None,
    storage: dict[str, Any] | None = None,
    selector: dict[str, Any] | None = None,
    name: str = "qwen",
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "artifact": {"kind": "Weights", "source": source or HF_SOURCE},
        "storage": storage or {"backend": "PVC", "size": "5Gi"},
    }
    if selector is not None:
        spec["clusterSelector"] = selector
    return {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "ModelCache",
        "metadata": {"name": name, "namespace": NS},
        "spec": spec,
    }


def compose(
    xr: dict[str, Any],
    clusters: list[dict[str, Any]],
    observed: dict[str, Any] | None = None,
    deployments: list[dict[str, Any]] | None = None,
) -> ComposeResult:
    return model_cache.compose(
        ComposeInput(
            composite=xr,
            observed=observed or {},
            required={CLUSTERS_REQUIREMENT: clusters, DEPLOYMENTS_REQUIREMENT: deployments or []},
        )
    )


def digest(xr: dict[str, Any]) -> str:
    return source_hash(ModelCacheSpec.model_validate(xr["spec"]))


def manifest(res: ComposeResult, key: str) -> dict[str, Any]:
    return res.desired[key].resource["spec"]["forProvider"]["manifest"]


def cond(res: ComposeResult, type_: str) -> tuple[str, str, str]:
    (c,) = [x for x in res.conditions if x.type == type_]
    return c.status, c.reason, c.message


def observe(
    obj: dict[str, Any], wrapped_status: dict[str, Any] | None = None, **extra: Any
) -> dict[str, Any]:
    """An Object as provider-kubernetes reports it: Ready, the wrapped object with a status."""
    out = copy.deepcopy(obj)
    live = copy.deepcopy(out["spec"]["forProvider"]["manifest"])
    if wrapped_status is not None:
        live["status"] = wrapped_status
    live.update(extra)
    out["status"] = {
        "conditions": [{"type": "Ready", "status": "True"}, {"type": "Synced", "status": "True"}],
        "atProvider": {"manifest": live},
    }
    return out


# ── What is composed where ───────────────────────────────────────────────────


def test_one_copy_per_ready_matching_cluster_with_its_storage_class() -> None:
    xr = cache(selector={"matchLabels": {"tier": "gpu"}})
    clusters = [
        cluster("a", {"tier": "gpu"}, storage_class="efs-rwx"),
        cluster("b", {"tier": "gpu"}, ready=False),  # not Ready, holds no copy: skipped
        cluster("c", {"tier": "cpu"}),  # not selected
        cluster("d", {"tier": "gpu"}, provider_config=False),  # unreachable, holds no copy
    ]
    res = compose(xr, clusters)
    h = digest(xr)
    assert sorted(res.desired) == sorted(
        f"a/{k}"
        for k in ("namespace", "pvc", "result", "serviceaccount", "role", "rolebinding", f"job-{h}")
    )
    assert manifest(res, "a/pvc") == {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {
            "name": "qwen",
            "namespace": NS,
            "labels": {
                "app.kubernetes.io/managed-by": "modelplane",
                "modelplane.ai/cache": "qwen",
                "modelplane.ai/cluster": "a",
            },
        },
        "spec": {
            "accessModes": ["ReadWriteMany"],
            "resources": {"requests": {"storage": "5Gi"}},
            "storageClassName": "efs-rwx",
        },
    }
    pvc = res.desired["a/pvc"].resource
    assert pvc["metadata"] == {
        "name": "qwen-a-pvc",
        "namespace": NS,
        "labels": manifest(res, "a/pvc")["metadata"]["labels"],
        "annotations": {"crossplane.io/external-name": "qwen-a-pvc"},
        "finalizers": ["finalizer.managedresource.crossplane.io"],
    }
    assert pvc["spec"]["providerConfigRef"] == {
        "kind": "ClusterProviderConfig",
        "name": "modelplane-a",
    }
    assert res.status["clusters"] == [
        {
            "cluster": "a",
            "phase": "Pending",
            "claimName": "qwen",
            "message": f"Job qwen-hydrate-{h} not created yet",
        }
    ]
    assert res.status["ready"] == "0/1" and res.status["source"] == "huggingFace"
    assert cond(res, "ArtifactReady")[:2] == ("False", "Hydrating")
    assert res.ready == "False"


def test_the_objects_whose_later_state_the_cache_reads_are_watched() -> None:
    # provider-kubernetes observes a Ready, unwatched Object once per --poll (10
    # minutes by default): the Job's result is written after its Object is Ready,
    # and a claim can be Lost after it was Bound.
    xr = cache()
    res = compose(xr, [cluster("a")])
    watched = sorted(k for k, d in res.desired.items() if d.resource["spec"].get("watch"))
    assert watched == ["a/job-" + digest(xr), "a/pvc", "a/result"]
    adopted = cache(storage={"backend": "ExistingPVC", "claimName": "llama-weights"})
    assert compose(adopted, [cluster("a")]).desired["a/pvc"].resource["spec"]["watch"] is True


def test_the_caches_storage_class_wins_over_the_clusters() -> None:
    xr = cache(storage={"size": "1Gi", "storageClassName": "fast-rwx"})
    res = compose(xr, [cluster("a", storage_class="efs-rwx"), cluster("b")])
    assert manifest(res, "a/pvc")["spec"]["storageClassName"] == "fast-rwx"
    assert manifest(res, "b/pvc")["spec"]["storageClassName"] == "fast-rwx"
    res = compose(cache(), [cluster("b")])
    assert "storageClassName" not in manifest(res, "b/pvc")["spec"]  # the cluster's default


def test_the_hydration_job_hand_written() -> None:
    xr = cache(
        source={
            "huggingFace": {
                "repo": "Qwen/Qwen2.5-0.5B-Instruct",
                "revision": "v1.0",
                "tokenSecretRef": {"name": "hf-token", "key": "token"},
            }
        }
    )
    res = compose(xr, [cluster("a")])
    h = digest(xr)
    labels = {
        "app.kubernetes.io/managed-by": "modelplane",
        "modelplane.ai/cache": "qwen",
        "modelplane.ai/cluster": "a",
    }
    assert manifest(res, f"a/job-{h}") == {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": f"qwen-hydrate-{h}", "namespace": NS, "labels": labels},
        "spec": {
            "backoffLimit": 4,
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "restartPolicy": "Never",
                    "serviceAccountName": "qwen-hydrator",
                    "securityContext": {
                        "runAsNonRoot": True,
                        "runAsUser": 65532,
                        "runAsGroup": 65532,
                        "fsGroup": 65532,
                        "seccompProfile": {"type": "RuntimeDefault"},
                    },
                    "containers": [
                        {
                            "name": "hydrate",
                            "image": "xpkg.crossplane.io/modelplane/function-modelplane:v0.1.0",
                            "command": ["modelplane", "hydrate", "huggingface"],
                            "env": [
                                {"name": "MODELPLANE_DEST", "value": "/cache/model"},
                                {"name": "MODELPLANE_SOURCE_HASH", "value": h},
                                {"name": "MODELPLANE_RESULT_CONFIGMAP", "value": "qwen-hydration"},
                                {
                                    "name": "MODELPLANE_RESULT_NAMESPACE",
                                    "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}},
                                },
                                {"name": "HF_HOME", "value": "/tmp/hf-home"},
                                {"name": "HF_HUB_DISABLE_TELEMETRY", "value": "1"},
                                {
                                    "name": "MODELPLANE_HF_REPO",
                                    "value": "Qwen/Qwen2.5-0.5B-Instruct",
                                },
                                {"name": "MODELPLANE_HF_REVISION", "value": "v1.0"},
                                {
                                    "name": "HF_TOKEN",
                                    "valueFrom": {
                                        "secretKeyRef": {
                                            "name": "qwen-source-credentials",
                                            "key": "token",
                                        }
                                    },
                                },
                            ],
                            "volumeMounts": [
                                {"name": "cache", "mountPath": "/cache"},
                                {"name": "tmp", "mountPath": "/tmp"},
                            ],
                            "securityContext": {
                                "allowPrivilegeEscalation": False,
                                "readOnlyRootFilesystem": True,
                                "capabilities": {"drop": ["ALL"]},
                            },
                        }
                    ],
                    "volumes": [
                        {"name": "cache", "persistentVolumeClaim": {"claimName": "qwen"}},
                        {"name": "tmp", "emptyDir": {}},
                    ],
                },
            },
        },
    }
    # The Job's Role reaches exactly one object: the result ConfigMap.
    assert manifest(res, "a/role")["rules"] == [
        {
            "apiGroups": [""],
            "resources": ["configmaps"],
            "resourceNames": ["qwen-hydration"],
            "verbs": ["get", "patch"],
        }
    ]
    assert res.desired["a/result"].resource["spec"]["managementPolicies"] == [
        "Observe",
        "Create",
        "Delete",
    ]
    assert res.desired["a/namespace"].resource["spec"]["managementPolicies"] == [
        "Observe",
        "Create",
        "Update",
        "LateInitialize",
    ]


def test_a_changed_source_is_a_new_job() -> None:
    a, b = (
        cache(),
        cache(source={"huggingFace": {"repo": "Qwen/Qwen2.5-0.5B-Instruct", "revision": "v2"}}),
    )
    assert digest(a) != digest(b)
    keys_a = {k for k in compose(a, [cluster("x")]).desired if "/job-" in k}
    keys_b = {k for k in compose(b, [cluster("x")]).desired if "/job-" in k}
    assert keys_a == {f"x/job-{digest(a)}"} and keys_b == {f"x/job-{digest(b)}"}


def test_existing_pvc_adopts_the_claim_observe_only_and_runs_no_job() -> None:
    xr = cache(storage={"backend": "ExistingPVC", "claimName": "llama-weights"})
    res = compose(xr, [cluster("a")])
    assert list(res.desired) == ["a/pvc"]
    obj = res.desired["a/pvc"].resource
    assert obj["spec"]["managementPolicies"] == ["Observe"]
    assert obj["spec"]["forProvider"]["manifest"] == {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "llama-weights", "namespace": NS},
    }
    assert res.status["clusters"][0]["phase"] == "Pending"

    bound = compose(xr, [cluster("a")], {"a/pvc": observe(obj, {"phase": "Bound"})})
    assert bound.status["clusters"][0]["phase"] == "Ready"
    assert bound.status["clusters"][0]["claimName"] == "llama-weights"
    assert (bound.status["ready"], bound.ready) == ("1/1", "True")
    lost = compose(xr, [cluster("a")], {"a/pvc": observe(obj, {"phase": "Lost"})})
    assert lost.status["clusters"][0]["phase"] == "Failed"
    assert cond(lost, "ArtifactReady")[1] == "HydrationFailed"


# ── Phases, read only from observed state ────────────────────────────────────


def _observed_pvc_copy(
    xr: dict[str, Any], result_data: dict[str, str] | None, job_status: dict[str, Any] | None
) -> dict[str, Any]:
    first = compose(xr, [cluster("a")])
    h = digest(xr)
    observed = {k: observe(d.resource) for k, d in first.desired.items()}
    if job_status is not None:
        observed[f"a/job-{h}"] = observe(first.desired[f"a/job-{h}"].resource, job_status)
    else:
        del observed[f"a/job-{h}"]
    if result_data is not None:
        observed["a/result"] = observe(first.desired["a/result"].resource, None, data=result_data)
    return observed


SECRET_SOURCE = {
    "s3": {
        "bucket": "models",
        "prefix": "tiny/",
        "endpoint": "https://minio.example.com:9000",
        "credentialsSecretRef": {"name": "minio"},
    }
}


def test_a_running_job_is_hydrating() -> None:
    xr = cache()
    observed = _observed_pvc_copy(
        xr, {"sourceHash": digest(xr), "phase": "Hydrating"}, {"active": 1}
    )
    res = compose(xr, [cluster("a")], observed)
    assert res.status["clusters"][0]["phase"] == "Hydrating"
    assert cond(res, "ArtifactReady") == (
        "False",
        "Hydrating",
        "0/1 cluster(s) Ready; waiting for a (Hydrating)",
    )


def test_ready_copy_reports_the_jobs_measurements_and_drops_the_credentials() -> None:
    xr = cache(source=SECRET_SOURCE)
    h = digest(xr)
    assert "a/credentials" in compose(xr, [cluster("a")]).desired
    result = {
        "sourceHash": h,
        "phase": "Ready",
        "resolvedDigest": "s3-etags:sha256:" + "ab" * 32,
        "bytesStaged": "120013",
        "completedAt": "2026-01-02T03:04:05Z",
    }
    observed = _observed_pvc_copy(xr, result, {"succeeded": 1})
    res = compose(xr, [cluster("a")], observed)
    assert res.status["clusters"] == [
        {
            "cluster": "a",
            "phase": "Ready",
            "claimName": "qwen",
            "resolvedDigest": "s3-etags:sha256:" + "ab" * 32,
            "bytesStaged": 120013,
            "lastHydratedAt": "2026-01-02T03:04:05Z",
            "message": f"staged by Job qwen-hydrate-{h}",
        }
    ]
    assert "a/credentials" not in res.desired  # removed once hydration finished
    assert f"a/job-{h}" in res.desired and "a/pvc" in res.desired
    assert cond(res, "ArtifactReady") == ("True", "Ready", "staged on 1/1 cluster(s)")
    assert res.ready == "True"


def test_a_result_for_another_source_digest_is_not_trusted() -> None:
    xr = cache()
    stale = {
        "sourceHash": "00000000",
        "phase": "Ready",
        "resolvedDigest": "abc",
        "bytesStaged": "1",
    }
    res = compose(xr, [cluster("a")], _observed_pvc_copy(xr, stale, {"active": 1}))
    assert res.status["clusters"][0]["phase"] == "Hydrating"


def test_a_failed_job_is_hydration_failed_with_its_message_and_a_warning() -> None:
    xr = cache()
    job_status = {
        "failed": 5,
        "conditions": [
            {
                "type": "Failed",
                "status": "True",
                "reason": "BackoffLimitExceeded",
                "message": "Job has reached the specified backoff limit",
            }
        ],
    }
    result = {"sourceHash": digest(xr), "phase": "Failed", "message": "HTTP 404 Not Found"}
    res = compose(xr, [cluster("a")], _observed_pvc_copy(xr, result, job_status))
    message = (
        f"Job qwen-hydrate-{digest(xr)}: BackoffLimitExceeded: Job has reached the specified "
        "backoff limit (HTTP 404 Not Found)"
    )
    assert res.status["clusters"][0] == {
        "cluster": "a",
        "phase": "Failed",
        "claimName": "qwen",
        "message": message,
    }
    assert cond(res, "ArtifactReady") == ("False", "HydrationFailed", f"cluster a: {message}")
    assert [(e.severity, e.reason) for e in res.events] == [("Warning", "HydrationFailed")]


def test_a_missing_credentials_secret_is_secret_not_found() -> None:
    xr = cache(source=SECRET_SOURCE)
    first = compose(xr, [cluster("a")])
    unsynced = observe(first.desired["a/credentials"].resource)
    unsynced["status"] = {
        "conditions": [
            {
                "type": "Synced",
                "status": "False",
                "reason": "ReconcileError",
                "message": "cannot resolve references: Secret ml-team/minio: not found",
            }
        ]
    }
    res = compose(xr, [cluster("a")], {"a/credentials": unsynced})
    status, reason, message = cond(res, "ArtifactReady")
    assert (status, reason) == ("False", "SecretNotFound")
    assert message == (
        "cluster a: credentials Secret 'minio': cannot resolve references: "
        "Secret ml-team/minio: not found"
    )
    assert res.events[0].reason == "SecretNotFound"


def test_no_cluster_matches() -> None:
    res = compose(cache(selector={"matchLabels": {"x": "y"}}), [cluster("a")])
    assert res.desired == {} and res.status["ready"] == "0/0"
    assert cond(res, "ArtifactReady")[:2] == ("False", "NoClusters")


def test_a_copy_on_a_cluster_that_went_not_ready_is_kept_as_it_is() -> None:
    xr = cache()
    placed = {k: observe(d.resource) for k, d in compose(xr, [cluster("a")]).desired.items()}
    res = compose(xr, [cluster("a", ready=False, provider_config=False)], placed)
    assert sorted(res.desired) == sorted(placed)
    assert res.status["clusters"][0]["message"] == (
        "InferenceCluster a is NotReady: its copy is kept as it is"
    )
    # A cluster that is gone (or no longer selected) loses its copy.
    assert compose(xr, [], placed).desired == {}


def test_references_list_the_deployments_that_name_the_cache() -> None:
    def dep(name: str, caches: Any) -> dict[str, Any]:
        return {"metadata": {"name": name, "namespace": NS}, "spec": {"caches": caches}}

    deployments = [
        dep("b", [{"name": "qwen"}]),
        dep("a", [{"name": "qwen"}]),
        dep("c", [{"name": "x"}]),
        dep("d", "bad"),
    ]
    res = compose(cache(), [cluster("a")], deployments=deployments)
    assert res.status["references"] == ["a", "b"]


def test_waits_for_its_requirements_keeping_what_exists() -> None:
    xr = cache()
    placed = {k: observe(d.resource) for k, d in compose(xr, [cluster("a")]).desired.items()}
    res = model_cache.compose(ComposeInput(composite=xr, observed=placed))
    assert set(res.requirements) == {CLUSTERS_REQUIREMENT, DEPLOYMENTS_REQUIREMENT}
    assert set(res.desired) == set(placed)
    # The function never asks for a Secret: no credential passes through it.
    assert all(r.kind != "Secret" for r in res.requirements.values())


# ── Bad input never crashes ───────────────────────────────────────────────────


@pytest.mark.parametrize(
    ("source", "field"),
    [({"oci": {"image": "registry/x:1"}}, "oci"), ({"configMap": {"name": "x"}}, "configMap")],
)
def test_reserved_sources_are_not_implemented_conditions(
    source: dict[str, Any], field: str
) -> None:
    xr = cache(source=source)
    placed = {"a/pvc": observe(compose(cache(), [cluster("a")]).desired["a/pvc"].resource)}
    res = compose(xr, [cluster("a")], placed)
    assert cond(res, "ArtifactReady") == (
        "False",
        "SourceNotImplemented",
        f"spec.artifact.source.{field}: not implemented yet; use huggingFace, s3, http or inline",
    )
    assert set(res.desired) == {"a/pvc"}  # what exists is kept
    assert res.events[0].reason == "SourceNotImplemented" and res.ready == "False"


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("file:///etc/passwd", "scheme 'file' is not http or https"),
        ("https://user:pw@example.com/x", "credentials in the URL are refused"),
        ("https://example.com/`id`", "contains characters a URL may not"),
        ("https://example.com/a\nb", "contains characters a URL may not"),
        ("https://example.com/a b", "contains characters a URL may not"),
        ("ftp://example.com/x", "scheme 'ftp' is not http or https"),
        ("https:///x", "no host"),
    ],
)
def test_bad_urls_are_refused_with_a_condition_naming_the_field(url: str, why: str) -> None:
    res = compose(cache(source={"http": {"url": url}}), [cluster("a")])
    status, reason, message = cond(res, "ArtifactReady")
    assert (status, reason) == ("False", "InvalidSource")
    assert message.startswith("spec.artifact.source.http.url: ") and why in message
    assert res.desired == {}


def test_a_bad_s3_endpoint_is_refused_too() -> None:
    src = {"s3": {"bucket": "models", "endpoint": "http://k:s@minio:9000"}}
    res = compose(cache(source=src), [cluster("a")])
    assert cond(res, "ArtifactReady")[2].startswith("spec.artifact.source.s3.endpoint: ")


def test_an_invalid_spec_is_a_valid_condition_never_a_crash() -> None:
    res = compose(cache(source={"huggingFace": {"repo": "a; rm -rf /"}}), [cluster("a")])
    status, reason, message = cond(res, "Valid")
    assert (status, reason) == ("False", "InvalidSpec")
    assert message.startswith("spec.artifact.source.huggingFace.repo: 'a; rm -rf /' is not")
    assert res.desired == {}


# ── Security: user strings only as whole values; no Secret value anywhere ─────


def k8s_expand(value: str, env: dict[str, str]) -> str:
    """Kubernetes' expansion of `$(VAR)` in env values (third_party/forked/golang/expansion).

    `$$` is an escaped `$`; `$(NAME)` is replaced when NAME is defined, kept
    otherwise; any other `$` is literal.
    """
    out, i = [], 0
    while i < len(value):
        if value[i] == "$" and i + 1 < len(value):
            nxt = value[i + 1]
            if nxt == "$":
                out.append("$")
                i += 2
                continue
            if nxt == "(":
                end = value.find(")", i + 2)
                if end != -1:
                    name = value[i + 2 : end]
                    out.append(env.get(name, f"$({name})"))
                    i = end + 1
                    continue
        out.append(value[i])
        i += 1
    return "".join(out)


ADVERSARIAL = [
    {"huggingFace": {"repo": "org/model", "revision": "$(id)"}},
    {"huggingFace": {"repo": "org/model", "revision": "`id`; rm -rf / #"}},
    {"s3": {"bucket": "models", "prefix": "{{ .Env }}/$(HOME)/'; rm -rf /", "region": "$(id)"}},
    {"http": {"url": "https://example.com/x?a=$(id)&b=';rm%20-rf%20/"}},
    {"inline": {"content": "#!/bin/sh\nrm -rf / $(id) `id` {{ .Env }}", "fileName": "x.sh"}},
]


def _user_strings(source: dict[str, Any]) -> list[str]:
    (body,) = source.values()
    return [v for k, v in body.items() if isinstance(v, str) and k != "fileName"]


@pytest.mark.parametrize("source", ADVERSARIAL, ids=lambda s: next(iter(s)))
def test_adversarial_values_reach_the_job_only_as_whole_env_values(source: dict[str, Any]) -> None:
    res = compose(cache(source=source), [cluster("a")])
    (job_key,) = [k for k in res.desired if "/job-" in k]
    (ctr,) = manifest(res, job_key)["spec"]["template"]["spec"]["containers"]
    # A fixed command, no args, no shell.
    assert ctr["command"][:2] == ["modelplane", "hydrate"] and len(ctr["command"]) == 3
    assert "args" not in ctr
    defined = {e["name"]: "PWNED" for e in ctr["env"]} | {"id": "PWNED", "HOME": "PWNED"}
    values = {e["name"]: k8s_expand(e["value"], defined) for e in ctr["env"] if "value" in e}
    texts = _user_strings(source)
    assert texts, "the case carries no user string"
    for text in texts:
        # Each user string arrives whole, byte for byte, as exactly one env value...
        assert list(values.values()).count(text) == 1, text
    # ...and appears in no command, arg or other manifest field.
    for key, desired in res.desired.items():
        body = json.dumps(desired.resource)
        for text in texts:
            hits = body.count(json.dumps(text)[1:-1].replace("$", "$$"))
            assert hits == (1 if key == job_key else 0), (key, text)
    assert " -c" not in json.dumps(ctr["command"]) and "sh" not in ctr["command"]


def test_no_emitted_manifest_contains_a_secret_value() -> None:
    value = "hf_SUPERSECRETTOKENVALUE"
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "hf-token", "namespace": NS},
        "data": {"token": "aGZfU1VQRVJTRUNSRVRUT0tFTlZBTFVF"},
        "stringData": {"token": value},
    }
    src = {"huggingFace": {"repo": "org/m", "tokenSecretRef": {"name": "hf-token", "key": "token"}}}
    xr = cache(source=src)
    # Even if a Secret were handed to the function, nothing of it would travel on.
    res = model_cache.compose(
        ComposeInput(
            composite=xr,
            required={
                CLUSTERS_REQUIREMENT: [cluster("a")],
                DEPLOYMENTS_REQUIREMENT: [],
                "x": [secret],
            },
        )
    )
    out = json.dumps(
        [d.resource for d in res.desired.values()]
        + [res.status, [c.message for c in res.conditions], [e.message for e in res.events]]
    )
    assert value not in out and "aGZfU1VQRVJTRUNSRVRUT0tFTlZBTFVF" not in out
    creds = res.desired["a/credentials"].resource
    assert creds["spec"]["forProvider"]["manifest"] == {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": creds["spec"]["forProvider"]["manifest"]["metadata"],
        "type": "Opaque",
    }
    assert creds["spec"]["references"] == [
        {
            "patchesFrom": {
                "apiVersion": "v1",
                "kind": "Secret",
                "name": "hf-token",
                "namespace": NS,
                "fieldPath": "data",
            },
            "toFieldPath": "data",
        }
    ]


# ── Conformance and the reader ────────────────────────────────────────────────

CONFORMANCE_CASES = {
    "hf": cache(
        source={"huggingFace": {"repo": "o/m", "tokenSecretRef": {"name": "t", "key": "k"}}}
    ),
    "s3": cache(source=SECRET_SOURCE, storage={"size": "20Gi", "storageClassName": "rwx"}),
    "http": cache(
        source={
            "http": {
                "url": "https://e.com/m.gguf",
                "sha256": "a" * 64,
                "headersSecretRef": {"name": "h"},
            }
        }
    ),
    "inline": cache(source={"inline": {"content": "{}", "fileName": "tokenizer.json"}}),
    "existing": cache(storage={"backend": "ExistingPVC", "claimName": "weights"}),
}


@pytest.mark.parametrize("case", CONFORMANCE_CASES)
def test_every_emitted_manifest_conforms(case: str, oracle: Any) -> None:
    res = compose(CONFORMANCE_CASES[case], [cluster("a"), cluster("b")])
    assert res.desired
    for key, desired in res.desired.items():
        issues = oracle.validate(desired.resource)
        assert not issues, f"{key}: {[(i.path, i.message) for i in issues]}"


def test_the_oracle_rejects_a_broken_job(oracle: Any) -> None:
    res = compose(cache(), [cluster("a")])
    (job_key,) = [k for k in res.desired if "/job-" in k]
    obj = copy.deepcopy(res.desired[job_key].resource)
    obj["spec"]["forProvider"]["manifest"]["spec"]["backoffLimt"] = 4
    assert oracle.validate(obj)


def test_the_reader_keeps_malformed_entries_as_unknown() -> None:
    obj = {
        "metadata": {"name": "qwen", "namespace": NS},
        "status": {
            "clusters": [
                {"cluster": "b", "phase": "Ready", "claimName": "qwen"},
                {"cluster": "a", "phase": "Exploded"},
                {"phase": "Ready"},
                "junk",
            ]
        },
    }
    seen = read_model_cache(obj)
    assert [(x.cluster, x.phase) for x in seen.copies] == [("a", "Unknown"), ("b", "Ready")]
    assert seen.copy_on("a") is not None and "phase" in (seen.copy_on("a").problem or "")
    assert seen.unreadable == (
        "status.clusters[2]: no cluster name",
        "status.clusters[3]: no cluster name",
    )
    assert seen.ready_on("b") and not seen.ready_on("a") and seen.covers("a")
    assert not seen.covers("c")
    assert read_model_cache({"status": {"clusters": "x"}}).unreadable == (
        "status.clusters: not a list",
    )
    assert read_model_cache({}).copies == ()


def test_status_written_by_the_composer_round_trips_through_the_reader() -> None:
    xr = cache(storage={"backend": "ExistingPVC", "claimName": "w"})
    first = compose(xr, [cluster("a")])
    res = compose(
        xr, [cluster("a")], {"a/pvc": observe(first.desired["a/pvc"].resource, {"phase": "Bound"})}
    )
    seen = read_model_cache({**xr, "status": res.status})
    assert [(x.cluster, x.phase, x.claim_name) for x in seen.copies] == [("a", "Ready", "w")]
    assert not seen.unreadable and re.fullmatch(r"\d+/\d+", res.status["ready"])


def test_a_completed_job_whose_result_is_not_observed_yet_is_still_hydrating() -> None:
    xr = cache()
    complete = {"succeeded": 1, "conditions": [{"type": "Complete", "status": "True"}]}
    res = compose(xr, [cluster("a")], _observed_pvc_copy(xr, None, complete))
    assert res.status["clusters"][0]["phase"] == "Hydrating"
    assert res.status["clusters"][0]["message"] == (
        f"Job qwen-hydrate-{digest(xr)} completed; waiting for its result in ConfigMap "
        "qwen-hydration"
    )


def test_a_job_object_not_yet_applied_on_the_cluster_is_pending() -> None:
    xr = cache()
    first = compose(xr, [cluster("a")])
    unapplied = copy.deepcopy(first.desired[f"a/job-{digest(xr)}"].resource)
    res = compose(xr, [cluster("a")], {f"a/job-{digest(xr)}": unapplied})
    assert res.status["clusters"][0]["phase"] == "Pending"


def test_a_kept_copy_still_reports_its_observed_phase() -> None:
    xr = cache()
    result = {
        "sourceHash": digest(xr),
        "phase": "Ready",
        "resolvedDigest": "abc",
        "bytesStaged": "7",
    }
    observed = _observed_pvc_copy(xr, result, {"succeeded": 1})
    res = compose(xr, [cluster("a", ready=False)], observed)
    (copy_,) = res.status["clusters"]
    assert (copy_["phase"], copy_["resolvedDigest"]) == ("Ready", "abc")
    assert copy_["message"] == "InferenceCluster a is NotReady: its copy is kept as it is"
    assert sorted(res.desired) == sorted(observed)


# ── Never a crash: arbitrary observed state and specs ─────────────────────────


_JUNK = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=12,
)
_FIELDS = st.sampled_from(["status", "spec", "metadata", "data", "atProvider", "conditions"])


@settings(max_examples=150, deadline=None)
@given(
    spec=st.dictionaries(
        st.sampled_from(["artifact", "storage", "clusterSelector", "replication", "x"]),
        _JUNK,
        max_size=4,
    ),
    observed=st.dictionaries(st.sampled_from(["a/pvc", "a/result", "a/credentials", "b/x"]), _JUNK),
    cluster_junk=st.dictionaries(_FIELDS, _JUNK, max_size=3),
)
def test_the_composer_never_raises(
    spec: dict[str, Any], observed: dict[str, Any], cluster_junk: dict[str, Any]
) -> None:
    xr = {**cache(), "spec": spec}
    obs = {k: v if isinstance(v, dict) else {"status": v} for k, v in observed.items()}
    clusters = [cluster("a"), {**cluster("b"), **cluster_junk}]
    res = compose(xr, clusters, obs)
    assert res.fatal is None
    valid = [c for c in res.conditions if c.type == "Valid"]
    assert valid and valid[0].status in ("True", "False")


@settings(max_examples=150, deadline=None)
@given(
    result=st.dictionaries(
        st.sampled_from(["sourceHash", "phase", "bytesStaged", "resolvedDigest", "x"]), _JUNK
    ),
    job=_JUNK,
)
def test_malformed_observations_never_raise(result: dict[str, Any], job: Any) -> None:
    xr = cache()
    first = compose(xr, [cluster("a")])
    observed = {k: observe(d.resource) for k, d in first.desired.items()}
    observed["a/result"]["status"]["atProvider"]["manifest"]["data"] = result
    observed[f"a/job-{digest(xr)}"]["status"]["atProvider"]["manifest"]["status"] = job
    res = compose(xr, [cluster("a")], observed)
    assert res.fatal is None and len(res.status["clusters"]) == 1
