"""InferenceCluster composer: publish the cluster's GPU pools and how to reach it.

For `source: Existing` the cluster is reached through a kubeconfig Secret: the
composer checks the Secret and key exist (never reading the credential itself),
composes a provider-kubernetes ClusterProviderConfig that points at it, and
publishes that config's name so ModelReplicas can target the cluster. Each pool's
InferenceClass is required and its devices are copied verbatim into the
published pools (`InferenceClusterStatus.gpu_pools`), which is all the
scheduler reads. A pool whose class is missing or invalid is published as
*unknown* (with a reason), never left out: leaving it out would read as "the
pool is gone" and tear down the replicas on it.
"""

from __future__ import annotations

from functools import partial

from modelplane.api import constants as c
from modelplane.api.common import SecretKeyRef
from modelplane.api.inference_class import InferenceClassSpec
from modelplane.api.inference_cluster import (
    GPUPool,
    InferenceClusterSpec,
    InferenceClusterStatus,
    Pool,
)
from modelplane.api.objects import condition, condition_status, label_value
from modelplane.api.reasons import CredentialsResolvedReason, PoolsResolvedReason, UnknownReason
from modelplane.compose import outcome
from modelplane.compose.clusters import sources
from modelplane.compose.clusters.infra import provider_configs
from modelplane.compose.common import meta, parse_spec
from modelplane.compose.types import (
    ComposeInput,
    ComposeResult,
    DesiredResource,
    Requirement,
    Resource,
)
from modelplane.scheduling.words import truncate

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


def gateway_addresses(
    spec: InferenceClusterSpec, observed: str | None
) -> tuple[str | None, str | None]:
    """(effective, observed) gateway address: `spec.gateway.address` wins when given.

    The given address is what clients and the control plane use (a DNS name in
    front of the load balancer); the address the composed Gateway reports is
    used otherwise, and is published beside it either way.
    """
    given = spec.gateway.address if spec.gateway is not None else None
    return (given or observed), observed


def compose(inp: ComposeInput) -> ComposeResult:
    """Compose the cluster's infrastructure and provider configs; publish pools and readiness."""
    result = ComposeResult()
    name = str(meta(inp.composite).get("name", ""))
    spec, error = parse_spec(InferenceClusterSpec, inp.composite)
    if spec is None:
        # The provider config may already serve replicas: keep it rather than
        # answer with a desired state that would delete it.
        return outcome.fatal(f"invalid InferenceCluster {name}: {error}")

    result.requirements = _requirements(spec)
    if not all(inp.fetched(r) for r in result.requirements):
        return outcome.wait(inp, result)

    pools, pools_ok = _publish_pools(inp, spec, result)
    status = InferenceClusterStatus(gpu_pools=pools)
    pc_name = provider_config_name(name)
    if spec.source == "Existing":
        reachable, view = _existing(inp, spec, result, name, pc_name), None
    else:
        reach = sources.provision(inp, result, name, spec, _classes(inp, spec), pc_name)
        if reach.problem is not None:
            result.status = status.to_dict()  # the pools, published while provisioning waits
            reason = PoolsResolvedReason.NOT_PROVISIONABLE
            return outcome.hold(inp, result, c.CONDITION_POOLS_RESOLVED, reason, reach.problem)
        reachable, view = reach.provider_config is not None, reach.view
    _, address = sources.serving_stack(inp, result, name, spec, pc_name, view)
    if view is not None:
        sources.capacity(result, spec, pools, view)
        if pools_ok:
            _resolved(result, pools)  # a stocked-out pool publishes only the nodes up
    inventory, why = sources.observe(inp, result, name, spec, pc_name if reachable else None)
    inventory = sources.freshness(inp, result, spec, inventory)
    sources.drift(result, status, pools, inventory, why)
    answers = sources.reachability(inp, result)
    if reachable:
        status.provider_config_name = pc_name
    status.gateway_address, status.observed_gateway_address = gateway_addresses(spec, address)
    status.gpu_pools = pools
    result.status = status.to_dict()
    configs_up = all(k in inp.observed for k in sources.PROVIDER_CONFIG_KEYS if k in result.desired)
    # ServingStackReady is its own answer: a reachable cluster is Ready while its
    # stack installs (replica workloads report their own readiness).
    # An API server that stopped answering: not Ready, so nothing new lands
    # there; the replicas already there are the scheduler's to keep.
    ok = pools_ok and reachable and configs_up and answers is not False
    result.ready = "True" if ok else "False"
    return result


def _classes(inp: ComposeInput, spec: InferenceClusterSpec) -> dict[str, InferenceClassSpec]:
    fetched = [o for p in spec.pools for o in inp.required.get(class_requirement(p.class_name), [])]
    return sources.parse_classes(fetched)


def _existing(
    inp: ComposeInput, spec: InferenceClusterSpec, result: ComposeResult, name: str, pc_name: str
) -> bool:
    """An existing cluster: its kubeconfig Secret behind both providers' configs."""
    secret_ref = spec.existing.kubeconfig_secret_ref if spec.existing else None
    assert secret_ref is not None  # the spec's own rule: existing is required for Existing
    creds_ok = _check_secret(inp, secret_ref, result)
    secret = {"namespace": secret_ref.namespace, "name": secret_ref.name, "key": secret_ref.key}
    stack = spec.serving_stack is None or spec.serving_stack.enabled
    for key, obj in provider_configs(name, pc_name, secret).items():
        if key == sources.HELM_PROVIDER_CONFIG_KEY and not stack:
            continue  # only the serving stack's Releases use provider-helm
        # A provider config has no status of its own: it is ready once it exists.
        result.desired[key] = DesiredResource(obj, "True" if key in inp.observed else "False")
    return creds_ok


def _requirements(spec: InferenceClusterSpec) -> dict[str, Requirement]:
    """Every pool's InferenceClass and, for an existing cluster, its kubeconfig Secret."""
    reqs = {
        class_requirement(class_name): Requirement(
            api_version=c.API_VERSION, kind="InferenceClass", match_name=class_name
        )
        for class_name in sorted({p.class_name for p in spec.pools})
    }
    secret_ref = spec.existing.kubeconfig_secret_ref if spec.existing else None
    if secret_ref is not None:
        reqs[SECRET_REQUIREMENT] = Requirement(
            api_version="v1",
            kind="Secret",
            match_name=secret_ref.name,
            namespace=secret_ref.namespace,
        )
    return reqs


Problem = tuple[PoolsResolvedReason, str]


def _resolve_pool(inp: ComposeInput, i: int, pool: Pool) -> tuple[GPUPool, Problem | None]:
    """One pool's published entry, and what is wrong with its class (None when nothing).

    A pool whose class is missing or invalid is published as *unknown*, never
    left out: a replica already on it must be kept, not replaced (SPEC §3.3).
    """
    field = f"spec.pools[{i}].className"
    unknown = partial(
        GPUPool, name=pool.name, class_name=pool.class_name, nodes=pool.capacity_nodes
    )
    found = inp.required.get(class_requirement(pool.class_name), [])
    if not found:
        msg = f"{field}: InferenceClass {pool.class_name!r} of pool {pool.name!r} not found"
        return unknown(reason=UnknownReason.CLASS_NOT_FOUND, message=msg), (
            PoolsResolvedReason.CLASS_NOT_FOUND,
            msg,
        )
    klass = found[0]
    class_spec, error = parse_spec(InferenceClassSpec, klass)
    if class_spec is None or condition_status(klass, c.CONDITION_VALID) == "False":
        why = error or _condition_message(klass, c.CONDITION_VALID)
        msg = f"{field}: InferenceClass {pool.class_name!r} is invalid: {why}"
        return unknown(reason=UnknownReason.INVALID_CLASS, message=truncate(msg, 1024)), (
            PoolsResolvedReason.INVALID_CLASS,
            msg,
        )
    # The class's devices as the API server stores them (defaults applied):
    # the scheduler matches selectors against exactly what was declared.
    published = unknown(
        devices=class_spec.devices,
        price_per_device_hour=_first(pool.price_per_device_hour, class_spec.price_per_device_hour),
        capacity_type=class_spec.pool_capacity(pool.capacity_type),
    )
    if condition_status(klass, c.CONDITION_READY) == "False":
        msg = f"{field}: InferenceClass {pool.class_name!r} is not Ready"
        return published, (PoolsResolvedReason.INVALID_CLASS, msg)
    return published, None


def _first(*values: float | None) -> float | None:
    """The first value set (a pool's own price wins over its class's, even a price of 0)."""
    return next((v for v in values if v is not None), None)


def _condition_message(obj: Resource, type_: str) -> str:
    cond = condition(obj, type_)
    message = cond.get("message") if cond is not None else None
    return message if isinstance(message, str) and message else f"{type_} is False"


def _publish_pools(
    inp: ComposeInput, spec: InferenceClusterSpec, result: ComposeResult
) -> tuple[list[GPUPool], bool]:
    """Every pool's published entry, and whether all of them resolved."""
    pools: list[GPUPool] = []
    problems: list[Problem] = []
    for i, pool in enumerate(spec.pools):
        published, problem = _resolve_pool(inp, i, pool)
        pools.append(published)
        if problem is not None:
            problems.append(problem)
    if problems:
        message = "; ".join(m for _, m in problems)
        result.condition(c.CONDITION_POOLS_RESOLVED, False, str(problems[0][0]), message)
        for reason, msg in problems:
            result.warn(str(reason), msg)
        return pools, False
    _resolved(result, pools)
    return pools, True


def _resolved(result: ComposeResult, pools: list[GPUPool]) -> None:
    result.condition(
        c.CONDITION_POOLS_RESOLVED,
        True,
        str(PoolsResolvedReason.RESOLVED),
        f"{len(pools)} pool(s) published: "
        + ", ".join(f"{p.name} ({p.class_name}, {p.nodes} nodes)" for p in pools),
    )


def _check_secret(inp: ComposeInput, ref: SecretKeyRef, result: ComposeResult) -> bool:
    """Check the kubeconfig Secret and key exist; never copies the credential."""
    field = "spec.existing.kubeconfigSecretRef"
    found = inp.required.get(SECRET_REQUIREMENT, [])
    where = f"Secret {ref.namespace}/{ref.name}"
    problem: tuple[CredentialsResolvedReason, str] | None = None
    if not found:
        problem = (CredentialsResolvedReason.SECRET_NOT_FOUND, f"{field}: {where} not found")
    elif ref.key not in _secret_keys(found[0]):
        problem = (
            CredentialsResolvedReason.SECRET_KEY_MISSING,
            f"{field}.key: {where} has no key {ref.key!r}",
        )
    if problem is not None:
        result.condition(c.CONDITION_CREDENTIALS_RESOLVED, False, str(problem[0]), problem[1])
        result.warn(str(problem[0]), problem[1])
        return False
    result.condition(
        c.CONDITION_CREDENTIALS_RESOLVED,
        True,
        str(CredentialsResolvedReason.RESOLVED),
        f"kubeconfig from {where} key {ref.key!r}",
    )
    return True


def _secret_keys(secret: Resource) -> set[str]:
    data, string_data = secret.get("data"), secret.get("stringData")
    keys = set(data) if isinstance(data, dict) else set()
    return keys | (set(string_data) if isinstance(string_data, dict) else set())
