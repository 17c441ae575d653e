"""InferenceCluster composer: publish the cluster's GPU pools and how to reach it.

For `source: Existing` the cluster is reached through a kubeconfig Secret: the
composer checks the Secret and key exist (never reading the credential itself),
composes a provider-kubernetes ClusterProviderConfig that points at it, and
publishes that config's name so ModelReplicas can target the cluster. Each pool's
InferenceClass is required and its devices are copied verbatim into
`status.gpuPools`, which is all the scheduler reads.
"""

from __future__ import annotations

from modelplane.api import constants as c
from modelplane.api.inference_class import InferenceClassSpec
from modelplane.api.inference_cluster import InferenceClusterSpec
from modelplane.api.objects import condition_status, label_value
from modelplane.compose.common import keep_observed, meta, parse_spec
from modelplane.compose.types import ComposeInput, ComposeResult, DesiredResource, Requirement

PROVIDER_CONFIG_KEY = "provider-config"
SECRET_REQUIREMENT = "kubeconfig-secret"


def class_requirement(class_name: str) -> str:
    """The requirement name under which a pool's InferenceClass is fetched."""
    return f"class-{class_name}"


def provider_config_name(cluster: str) -> str:
    """The name of the ClusterProviderConfig that reaches a cluster.

    Providers track usage with the config's name in a label, so the name is
    kept to a valid label value (hashed when the prefix pushes it past 63).
    """
    return label_value(f"modelplane-{cluster}")


def compose(inp: ComposeInput) -> ComposeResult:
    """Compose the cluster's provider config and publish its pools and readiness."""
    result = ComposeResult()
    name = str(meta(inp.composite).get("name", ""))
    spec, error = parse_spec(InferenceClusterSpec, inp.composite)
    if spec is None:
        # The provider config may already serve replicas: keep it rather than
        # answer with a desired state that would delete it.
        result.fatal = f"invalid InferenceCluster {name}: {error}"
        return result

    for class_name in sorted({p.class_name for p in spec.pools}):
        result.requirements[class_requirement(class_name)] = Requirement(
            api_version=c.API_VERSION, kind="InferenceClass", match_name=class_name
        )
    secret_ref = spec.existing.kubeconfig_secret_ref if spec.existing else None
    if secret_ref is not None:
        result.requirements[SECRET_REQUIREMENT] = Requirement(
            api_version="v1",
            kind="Secret",
            match_name=secret_ref.name,
            namespace=secret_ref.namespace,
        )
    if not all(inp.fetched(r) for r in result.requirements):
        result.desired = keep_observed(inp)
        return result

    pools_ok = _publish_pools(inp, spec, result)

    if spec.source != "Existing" or secret_ref is None:
        message = (
            f"spec.source: {spec.source} clusters are not provisioned by this version of "
            "Modelplane; use source Existing with spec.existing.kubeconfigSecretRef"
        )
        result.condition(
            c.CONDITION_CREDENTIALS_RESOLVED, False, c.REASON_UNSUPPORTED_SOURCE, message
        )
        result.warn(c.REASON_UNSUPPORTED_SOURCE, message)
        result.ready = "False"
        return result

    creds_ok = _check_secret(inp, secret_ref.namespace, secret_ref.name, secret_ref.key, result)

    pc_name = provider_config_name(name)
    provider_config = {
        "apiVersion": c.PROVIDER_KUBERNETES_API_VERSION,
        "kind": "ClusterProviderConfig",
        "metadata": {
            "name": pc_name,
            "labels": {c.LABEL_CLUSTER: name, c.LABEL_MANAGED_BY: c.MANAGED_BY},
        },
        "spec": {
            "credentials": {
                "source": "Secret",
                "secretRef": {
                    "namespace": secret_ref.namespace,
                    "name": secret_ref.name,
                    "key": secret_ref.key,
                },
            }
        },
    }
    # A provider config has no status of its own: it is ready once it exists.
    pc_observed = PROVIDER_CONFIG_KEY in inp.observed
    result.desired[PROVIDER_CONFIG_KEY] = DesiredResource(
        provider_config, "True" if pc_observed else "False"
    )
    result.status["providerConfigName"] = pc_name
    if spec.gateway is not None and spec.gateway.address:
        result.status["gatewayAddress"] = spec.gateway.address

    result.ready = "True" if (pools_ok and creds_ok and pc_observed) else "False"
    return result


def _publish_pools(inp: ComposeInput, spec: InferenceClusterSpec, result: ComposeResult) -> bool:
    """Resolve every pool's class into `status.gpuPools`; False if any could not be."""
    gpu_pools = []
    problems: list[tuple[str, str]] = []
    for i, pool in enumerate(spec.pools):
        field = f"spec.pools[{i}].className"
        found = inp.required.get(class_requirement(pool.class_name), [])
        if not found:
            problems.append(
                (
                    c.REASON_CLASS_NOT_FOUND,
                    f"{field}: InferenceClass {pool.class_name!r} of pool {pool.name!r} not found",
                )
            )
            continue
        klass = found[0]
        class_spec, error = parse_spec(InferenceClassSpec, klass)
        if class_spec is None:
            problems.append(
                (
                    c.REASON_INVALID_CLASS,
                    f"{field}: InferenceClass {pool.class_name!r} is invalid: {error}",
                )
            )
            continue
        # The class's devices as the API server stores them (defaults applied):
        # the scheduler matches selectors against exactly what was declared.
        gpu_pools.append(
            {
                "name": pool.name,
                "className": pool.class_name,
                "nodes": pool.capacity_nodes,
                "devices": [d.to_dict() for d in class_spec.devices],
            }
        )
        if condition_status(klass, c.CONDITION_READY) == "False":
            problems.append(
                (
                    c.REASON_INVALID_CLASS,
                    f"{field}: InferenceClass {pool.class_name!r} is not Ready",
                )
            )
    result.status["gpuPools"] = gpu_pools
    if problems:
        reason = problems[0][0]
        message = "; ".join(m for _, m in problems)
        result.condition(c.CONDITION_POOLS_RESOLVED, False, reason, message)
        for r, m in problems:
            result.warn(r, m)
        return False
    result.condition(
        c.CONDITION_POOLS_RESOLVED,
        True,
        c.REASON_RESOLVED,
        f"{len(gpu_pools)} pool(s) published: "
        + ", ".join(f"{p['name']} ({p['className']}, {p['nodes']} nodes)" for p in gpu_pools),
    )
    return True


def _check_secret(
    inp: ComposeInput, namespace: str, name: str, key: str, result: ComposeResult
) -> bool:
    """Check the kubeconfig Secret and key exist; never copies the credential."""
    field = "spec.existing.kubeconfigSecretRef"
    found = inp.required.get(SECRET_REQUIREMENT, [])
    if not found:
        message = f"{field}: Secret {namespace}/{name} not found"
        result.condition(
            c.CONDITION_CREDENTIALS_RESOLVED, False, c.REASON_SECRET_NOT_FOUND, message
        )
        result.warn(c.REASON_SECRET_NOT_FOUND, message)
        return False
    secret = found[0]
    keys = set((secret.get("data") or {}).keys()) | set((secret.get("stringData") or {}).keys())
    if key not in keys:
        message = f"{field}.key: Secret {namespace}/{name} has no key {key!r}"
        result.condition(
            c.CONDITION_CREDENTIALS_RESOLVED, False, c.REASON_SECRET_KEY_MISSING, message
        )
        result.warn(c.REASON_SECRET_KEY_MISSING, message)
        return False
    result.condition(
        c.CONDITION_CREDENTIALS_RESOLVED,
        True,
        c.REASON_RESOLVED,
        f"kubeconfig from Secret {namespace}/{name} key {key!r}",
    )
    return True
