"""What providers and workload clusters would report, simulated.

provider-kubernetes Objects become Synced and Ready (an inventory probe, whose
query never holds, Synced and not Ready), their
`status.atProvider.manifest` the wrapped manifest with a plausible status for
its kind (a Deployment or LeaderWorkerSet Available with every replica ready,
a PersistentVolumeClaim Bound, a Job Complete; Envoy Gateway resources on the
control plane as `gateway_sim.py` describes); an Object whose provider
config does not exist fails to sync, as the real provider would. provider-helm
Releases become deployed and Ready. A Crossplane Usage whose user exists is
owned by that user as well, as Crossplane's Usage controller makes it (so the
Usage goes with its user). Everything simulated is derived from the
object itself (timestamps from its creationTimestamp), so a second pass over
an unchanged object changes nothing.
"""

from __future__ import annotations

import base64
from collections import Counter
from collections.abc import Callable, Container
from typing import Any, NamedTuple

from modelplane.api import constants as c
from modelplane.api.model_cache import HydrateEnv, HydrationResult
from modelplane.api.objects import short_hash
from modelplane.compose.clusters.inventory import PROBE
from modelplane.local.conditions import Clock, set_condition, writable_dict
from modelplane.local.deletion import store_usages, user_key
from modelplane.local.gateway_sim import (
    GATEWAY_STATUS,
    allocate,
    gateway_address,
    gateway_status,
)
from modelplane.local.loader import scope_of
from modelplane.local.passes import Passes
from modelplane.local.simulate_cloud import simulate_cloud, stuck_replicas
from modelplane.local.store import Key, Obj, ObjectStore

OBJECT_GROUPS = ("kubernetes.m.crossplane.io", "kubernetes.crossplane.io")
RELEASE_GROUPS = ("helm.m.crossplane.io", "helm.crossplane.io")
BACKEND_GROUP = "gateway.envoyproxy.io"


def _group(obj: Obj) -> str:
    api_version = str(obj.get("apiVersion", ""))
    return api_version.rsplit("/", 1)[0] if "/" in api_version else ""


def _of_kinds(store: ObjectStore, kinds: dict[str, tuple[str, ...]]) -> list[tuple[Key, Obj]]:
    """The store's objects of the given kinds (kind → API groups), in key order.

    Read kind by kind from the store's index rather than by scanning (and
    sorting) every object: keys sort by apiVersion and kind first, so the
    concatenation is in key order.
    """
    return [
        pair
        for api_version, kind in store.kinds()
        if _group({"apiVersion": api_version}) in kinds.get(kind, ())
        for pair in store.select(api_version, kind)
    ]


def _replicas(manifest: Obj) -> int:
    value = (manifest.get("spec") or {}).get("replicas", 1)
    return value if isinstance(value, int) and value >= 0 else 1


def _deployment(manifest: Obj, at: str) -> dict[str, Any]:
    n = _replicas(manifest)
    return {
        "observedGeneration": 1,
        "replicas": n,
        "updatedReplicas": n,
        "readyReplicas": n,
        "availableReplicas": n,
        "conditions": [
            {
                "type": "Available",
                "status": "True",
                "lastUpdateTime": at,
                "lastTransitionTime": at,
                "reason": "MinimumReplicasAvailable",
                "message": "Deployment has minimum availability.",
            },
            {
                "type": "Progressing",
                "status": "True",
                "lastUpdateTime": at,
                "lastTransitionTime": at,
                "reason": "NewReplicaSetAvailable",
                "message": "ReplicaSet has successfully progressed.",
            },
        ],
    }


def _leader_worker_set(manifest: Obj, at: str) -> dict[str, Any]:
    n = _replicas(manifest)
    return {
        "replicas": n,
        "readyReplicas": n,
        "updatedReplicas": n,
        "conditions": [
            {
                "type": "Available",
                "status": "True",
                "lastTransitionTime": at,
                "reason": "AllGroupsReady",
                "message": "All replicas are ready",
            }
        ],
    }


def _pvc(manifest: Obj, at: str) -> dict[str, Any]:
    spec = manifest.get("spec") or {}
    status: dict[str, Any] = {"phase": "Bound"}
    if spec.get("accessModes"):
        status["accessModes"] = list(spec["accessModes"])
    storage = ((spec.get("resources") or {}).get("requests") or {}).get("storage")
    if storage:
        status["capacity"] = {"storage": storage}
    return status


def _job(manifest: Obj, at: str) -> dict[str, Any]:
    return {
        "startTime": at,
        "completionTime": at,
        "succeeded": 1,
        "conditions": [
            {
                "type": "SuccessCriteriaMet",
                "status": "True",
                "lastProbeTime": at,
                "lastTransitionTime": at,
                "reason": "CompletionsReached",
                "message": "Reached expected number of succeeded pods",
            },
            {
                "type": "Complete",
                "status": "True",
                "lastProbeTime": at,
                "lastTransitionTime": at,
                "reason": "CompletionsReached",
                "message": "Reached expected number of succeeded pods",
            },
        ],
    }


def _namespace(manifest: Obj, at: str) -> dict[str, Any]:
    return {"phase": "Active"}


def _cert_manager_ready(manifest: Obj, at: str) -> dict[str, Any]:
    """An Issuer or Certificate as cert-manager reports it once it can issue / has issued."""
    return {"conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": at}]}


def _llm_inference_service(manifest: Obj, at: str) -> dict[str, Any]:
    meta = manifest.get("metadata") or {}
    host = f"{meta.get('name')}-kserve-workload-svc.{meta.get('namespace')}.svc.cluster.local"
    ready = {"status": "True", "lastTransitionTime": at}
    return {
        "url": f"http://{host}",
        "address": {"url": f"http://{host}"},
        "conditions": [
            {"type": t, **ready} for t in ("MainWorkloadReady", "WorkloadsReady", "Ready")
        ],
    }


def _dynamo_graph(manifest: Obj, at: str) -> dict[str, Any]:
    """A DynamoGraphDeployment as Dynamo's operator reports it once every component is up."""
    ready = {
        "type": "Ready",
        "status": "True",
        "lastTransitionTime": at,
        "reason": "AllComponentsReady",
        "message": "every component is ready",
    }
    return {"state": "successful", "conditions": [ready]}


WORKLOAD_STATUS: dict[tuple[str, str], Callable[[Obj, str], dict[str, Any]]] = {
    ("apps", "Deployment"): _deployment,
    ("leaderworkerset.x-k8s.io", "LeaderWorkerSet"): _leader_worker_set,
    ("", "PersistentVolumeClaim"): _pvc,
    ("batch", "Job"): _job,
    ("", "Namespace"): _namespace,
    **GATEWAY_STATUS,
    ("serving.kserve.io", "LLMInferenceService"): _llm_inference_service,
    ("nvidia.com", "DynamoGraphDeployment"): _dynamo_graph,
    ("cert-manager.io", "Issuer"): _cert_manager_ready,
    ("cert-manager.io", "Certificate"): _cert_manager_ready,
}
"""Plausible observed status per wrapped kind; kinds not listed just exist."""


def observed_manifest(manifest: Obj, at: str, stuck: frozenset[str] = frozenset()) -> Obj:
    """The wrapped manifest as the workload cluster would return it.

    A workload of a replica in `stuck` (pod label values an `unschedulable`
    render fixture names) stays unavailable: its pods never get a node.
    """
    # Only what is changed here is copied: the rest is shared with the Object's
    # spec, which nothing changes in place (applying replaces it), so the
    # observed copy of a large manifest costs no second copy of its content.
    out = dict(manifest)
    meta = out.setdefault("metadata", {})
    if type(meta) is dict:
        meta = out["metadata"] = dict(meta)
    if scope_of(out) == "Namespaced" and not meta.get("namespace"):
        meta["namespace"] = "default"
    make = WORKLOAD_STATUS.get((_group(out), str(out.get("kind", ""))))
    if make is not None:
        status = _warming_up(out, make(out, at))
        replica = ((out.get("metadata") or {}).get("labels") or {}).get(c.LABEL_REPLICA)
        if replica in stuck:
            status = _unavailable(status, "pods Unschedulable (render fixture)")
        out["status"] = status
    return out


WARMING_UP_ANNOTATION = "render.modelplane.ai/warming-up"
"""A pod-template annotation (value "true") that keeps a simulated workload warming up."""


def _warming_up(workload: Obj, status: dict[str, Any]) -> dict[str, Any]:
    """The status of a workload whose pods never become ready, if its template asks for it.

    Render only: it lets an example show a replica that is placed but not yet
    serving (the engine still loading weights). Real clusters ignore it.
    """
    spec = workload.get("spec") or {}
    template = spec.get("template") or (spec.get("leaderWorkerTemplate") or {}).get(
        "workerTemplate"
    )
    annotations = ((template or {}).get("metadata") or {}).get("annotations") or {}
    if annotations.get(WARMING_UP_ANNOTATION) != "true":
        return status
    return _unavailable(status, "warming up")


def _unavailable(status: dict[str, Any], message: str) -> dict[str, Any]:
    """A workload status with no ready replica and Available=False saying why."""
    if "conditions" not in status:
        return status
    status = {k: v for k, v in status.items() if k not in ("readyReplicas", "availableReplicas")}
    status["conditions"] = [
        {**x, "status": "False", "reason": "MinimumReplicasUnavailable", "message": message}
        if x.get("type") == "Available"
        else x
        for x in status["conditions"]
    ]
    return status


def _provider_config_key(obj: Obj) -> Key:
    """The provider config an Object or Release names (the provider's default when none)."""
    ref = (obj.get("spec") or {}).get("providerConfigRef") or {"name": "default"}
    name = str(ref.get("name", "default"))
    api_version = str(obj.get("apiVersion", ""))
    namespace = str((obj.get("metadata") or {}).get("namespace") or "")
    if _group(obj).endswith(".m.crossplane.io"):
        kind = str(ref.get("kind") or "ClusterProviderConfig")
        ns = namespace if kind == "ProviderConfig" else ""
    else:
        kind, ns = "ProviderConfig", ""
    return Key(api_version, kind, ns, name)


def _reference_keys(obj: Obj) -> tuple[Key, ...]:
    """The objects an Object's `references` patch from or depend on, in order."""
    keys = []
    for ref in (obj.get("spec") or {}).get("references") or []:
        src = (ref or {}).get("patchesFrom") or (ref or {}).get("dependsOn") or {}
        keys.append(
            Key(
                str(src.get("apiVersion", "")),
                str(src.get("kind", "")),
                str(src.get("namespace") or ""),
                str(src.get("name", "")),
            )
        )
    return tuple(keys)


def _first_missing(store: ObjectStore, keys: tuple[Key, ...]) -> int | None:
    """The index of the first key the store lacks, or None when it has them all."""
    return next((i for i, key in enumerate(keys) if key not in store), None)


def _not_found(key: Key) -> str:
    return f"{key.kind} {key.namespace}/{key.name}" if key.namespace else f"{key.kind} {key.name}"


def _sync_error(reads: ObjectReads) -> str | None:
    """Why provider-kubernetes could not sync an Object (its provider config or a
    reference is missing), or None when it could."""
    if not reads.config_found:
        return f"cannot get referenced {_not_found(reads.provider_config)}: not found"
    if reads.first_missing is not None:
        missing = reads.references[reads.first_missing]
        return f"cannot resolve references: {_not_found(missing)}: not found"
    return None


def _keep_written_data(obj: Obj, live: Obj) -> None:
    """Without the Update policy the provider never resets the live object, so the
    `data` another writer put there (a hydration Job's result) stays observed."""
    policies = (obj.get("spec") or {}).get("managementPolicies")
    previous = ((obj.get("status") or {}).get("atProvider") or {}).get("manifest") or {}
    no_update = isinstance(policies, list) and "Update" not in policies and "*" not in policies
    if no_update and isinstance(previous.get("data"), dict):
        live["data"] = previous["data"]


def _spec_readiness(obj: Obj) -> Any:
    spec = obj.get("spec")
    return spec.get("readiness") if isinstance(spec, dict) else None


def _simulate_object(
    store: ObjectStore,
    obj: Obj,
    clock: Clock,
    stuck: frozenset[str],
    addresses: Addresses | None,
    reads: ObjectReads,
) -> None:
    """Simulate one Object in place; `reads` are what it reads now (`_object_reads`)."""
    error = _sync_error(reads)
    if error is not None:
        set_condition(obj, "Synced", "False", "ReconcileError", error, clock)
        return
    manifest = _spec_manifest(obj)
    if manifest is None:
        set_condition(
            obj, "Synced", "False", "ReconcileError", "spec.forProvider.manifest: required", clock
        )
        return
    at = str((obj.get("metadata") or {}).get("creationTimestamp") or clock.stamp())
    status = writable_dict(obj, "status")
    live = observed_manifest(manifest, at, stuck)
    if (_group(live), live.get("kind")) == GATEWAY_KIND:
        addresses = addresses if addresses is not None else Addresses(store)
        live["status"] = gateway_status(live, at, _gateway_address(addresses, obj, live))
    _keep_written_data(obj, live)
    ready = "False" if _spec_readiness(obj) == PROBE.policy else "True"
    if reads.named is False:
        # No route names it: Envoy Gateway never read it, so it has no status, and the
        # Object's readiness query (its Accepted condition) is not met.
        live.pop("status", None)
        ready = "False"
    status["atProvider"] = {"manifest": live}
    if addresses is not None:
        addresses.changed(obj)
    set_condition(obj, "Synced", "True", "ReconcileSuccess", "", clock)
    set_condition(obj, "Ready", ready, "Available" if ready == "True" else "Unavailable", "", clock)
    _connection_details(store, obj)


SIMULATED_VALUE = base64.b64encode(b"simulated by modelplane render").decode()


def _connection_details(store: ObjectStore, obj: Obj) -> None:
    """The connection Secret provider-kubernetes writes from an Object's `connectionDetails`.

    Its keys are the ones the Object names (`toConnectionSecretKey`); the values
    are placeholders, as nothing real was read from a cluster.
    """
    spec = obj.get("spec") or {}
    name = (spec.get("writeConnectionSecretToRef") or {}).get("name")
    details = spec.get("connectionDetails") or []
    if not name or not isinstance(details, list):
        return
    meta = obj.get("metadata") or {}
    keys = sorted({str(d.get("toConnectionSecretKey")) for d in details if isinstance(d, dict)})
    owner = {
        "apiVersion": obj.get("apiVersion"),
        "kind": obj.get("kind"),
        "name": meta.get("name"),
        "uid": meta.get("uid", ""),
        "controller": True,
    }
    store.put(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {
                "name": name,
                "namespace": meta.get("namespace") or "default",
                "ownerReferences": [owner],
            },
            "type": "connection.crossplane.io/v1alpha1",
            "data": dict.fromkeys(keys, SIMULATED_VALUE),
        }
    )


GATEWAY_KIND = ("gateway.networking.k8s.io", "Gateway")


def _wrapped_address(obj: Obj) -> str | None:
    """The address an Object's wrapped Gateway reports, if it reports one."""
    live = ((obj.get("status") or {}).get("atProvider") or {}).get("manifest") or {}
    addresses = (live.get("status") or {}).get("addresses") or []
    value = addresses[0].get("value") if addresses and isinstance(addresses[0], dict) else None
    return value if isinstance(value, str) else None


class Addresses:
    """The addresses the render's wrapped Gateways report, kept current through a pass.

    Read from every Object once, on first use, then updated as each Object is
    simulated: looking the taken addresses up afresh for every Gateway would
    read every Object once per Gateway.
    """

    def __init__(self, store: ObjectStore) -> None:
        """Addresses of `store`'s Objects, read when a Gateway first asks."""
        self._store = store
        self._by_key: dict[Key, str] | None = None
        self._holders: Counter[str] = Counter()

    def _index(self) -> dict[Key, str]:
        if self._by_key is None:
            self._by_key = {}
            for other in self._store.list(c.PROVIDER_KUBERNETES_API_VERSION, "Object"):
                address = _wrapped_address(other)
                if address is not None:
                    self._by_key[Key.of(other)] = address
            self._holders.update(self._by_key.values())
        return self._by_key

    def taken(self, obj: Obj) -> Container[str]:
        """The addresses every Object but `obj` reports."""
        return _Taken(self._holders, self._index().get(Key.of(obj)))

    def changed(self, obj: Obj) -> None:
        """Note that `obj`'s reported state was just replaced."""
        if self._by_key is None or obj.get("apiVersion") != c.PROVIDER_KUBERNETES_API_VERSION:
            return
        key = Key.of(obj)
        old, new = self._by_key.pop(key, None), _wrapped_address(obj)
        if old is not None:
            self._holders[old] -= 1
        if new is not None:
            self._by_key[key] = new
            self._holders[new] += 1


class _Taken:
    """An address is taken when an Object other than the asking one reports it."""

    def __init__(self, holders: Counter[str], mine: str | None) -> None:
        self._holders, self._mine = holders, mine

    def __contains__(self, address: object) -> bool:
        return self._holders.get(address, 0) > (1 if address == self._mine else 0)  # type: ignore[call-overload]


def _gateway_address(addresses: Addresses, obj: Obj, live: Obj) -> str:
    """A wrapped Gateway's address: its own, unless another Gateway of the render holds it.

    Each cluster's Gateway is a load balancer of its own (the cluster is the
    provider config the Object reaches), so no two share an address.
    """
    taken = addresses.taken(obj)
    meta = live.get("metadata") or {}
    cluster = str(((obj.get("spec") or {}).get("providerConfigRef") or {}).get("name", ""))
    preferred = gateway_address(str(meta.get("namespace", "")), str(meta.get("name", "")), cluster)
    return allocate(preferred, _wrapped_address(obj), taken)


def _simulate_release(obj: Obj, clock: Clock) -> None:
    chart = ((obj.get("spec") or {}).get("forProvider") or {}).get("chart") or {}
    at_provider: dict[str, Any] = {
        "state": "deployed",
        "revision": 1,
        "releaseDescription": "Install complete",
    }
    if chart.get("version"):
        at_provider["version"] = str(chart["version"])
    status = writable_dict(obj, "status")
    status["atProvider"] = at_provider
    status["synced"] = True
    set_condition(obj, "Synced", "True", "ReconcileSuccess", "", clock)
    set_condition(obj, "Ready", "True", "Available", "", clock)


def _wrapped(obj: Obj) -> Obj:
    manifest = ((obj.get("status") or {}).get("atProvider") or {}).get("manifest")
    return manifest if isinstance(manifest, dict) else {}


def _hydration_env(job: Obj) -> dict[str, str]:
    pod = ((job.get("spec") or {}).get("template") or {}).get("spec") or {}
    env = (pod.get("containers") or [{}])[0].get("env") or []
    return {str(e.get("name")): str(e["value"]) for e in env if "value" in e}


def _job_secrets(job: Obj) -> set[str]:
    """The Secrets a Job's pod cannot start without (required env keys, volumes)."""
    pod = ((job.get("spec") or {}).get("template") or {}).get("spec") or {}
    names = {str(v["secret"].get("secretName")) for v in pod.get("volumes") or [] if "secret" in v}
    for ctr in pod.get("containers") or []:
        for e in ctr.get("env") or []:
            ref = (e.get("valueFrom") or {}).get("secretKeyRef")
            if ref and not ref.get("optional"):
                names.add(str(ref.get("name")))
    return names


def _secret_unsynced(objects: list[Obj], pc: Any, names: set[str]) -> bool:
    """Whether a Secret the Job needs is an Object on its cluster that failed to sync."""
    for other in objects:
        wrapped = ((other.get("spec") or {}).get("forProvider") or {}).get("manifest") or {}
        if (
            wrapped.get("kind") == "Secret"
            and (other.get("spec") or {}).get("providerConfigRef") == pc
            and (wrapped.get("metadata") or {}).get("name") in names
            and not any(
                x.get("type") == "Synced" and x.get("status") == "True"
                for x in (other.get("status") or {}).get("conditions") or []
            )
        ):
            return True
    return False


def _completed_job_env(obj: Obj) -> dict[str, str]:
    """The environment of the Job an Object wraps, once it is Complete (else empty)."""
    job = _wrapped(obj)
    if job.get("kind") != "Job":
        return {}
    complete = any(
        x.get("type") == "Complete" and x.get("status") == "True"
        for x in (job.get("status") or {}).get("conditions") or []
    )
    return _hydration_env(job) if complete else {}


def simulate_hydration(store: ObjectStore, pairs: list[tuple[Key, Obj]] | None = None) -> list[Key]:
    """Report what each completed ModelCache hydration Job would have measured.

    The Job's result ConfigMap (an Object on the same provider config) gets a
    `Ready` result with a visibly simulated digest (`simulated:<hash>`) and a
    byte count, both derived from the Job's environment, and the Job's
    creation time as completion time: deterministic, so a fixed point exists.
    `pairs` are the store's Objects in key order when the caller has them.
    """
    if pairs is None:
        pairs = _of_kinds(store, {"Object": OBJECT_GROUPS})
    objects = [o for _, o in pairs]
    written: list[Key] = []
    for obj in objects:
        env = _completed_job_env(obj)
        if HydrateEnv.RESULT_CONFIGMAP not in env:
            continue
        job = _wrapped(obj)
        digest = short_hash(*sorted(f"{k}={v}" for k, v in env.items()), length=12)
        result = HydrationResult(
            source_hash=env.get(HydrateEnv.SOURCE_HASH, ""),
            phase="Ready",
            resolved_digest=f"simulated:{digest}",
            bytes_staged=str(1_000_000_000 + int(digest[:6], 16)),
            completed_at=str(job.get("status", {}).get("completionTime", "")),
            message="simulated by modelplane render",
        )
        pc = (obj.get("spec") or {}).get("providerConfigRef")
        if _secret_unsynced(objects, pc, _job_secrets(job)):
            continue  # the pod cannot start: nothing is staged
        for key, other in pairs:
            cm = _wrapped(other)
            if (
                cm.get("kind") == "ConfigMap"
                and (other.get("spec") or {}).get("providerConfigRef") == pc
                and (cm.get("metadata") or {}).get("name") == env[HydrateEnv.RESULT_CONFIGMAP]
                and (cm.get("metadata") or {}).get("labels", {}).get(c.LABEL_CACHE)
            ):
                # The observed manifest is shared read-only once read: written anew.
                at = writable_dict(writable_dict(other, "status"), "atProvider")
                at["manifest"] = {**cm, "data": result.to_data()}
                written.append(key)
    return written


class ObjectReads(NamedTuple):
    """Everything simulating an Object reads besides the Object itself.

    The first four are derived from the Object alone, so a pass over an
    Object at the version of its last pass takes them from that pass; the
    rest are what the store and the fixtures say now.
    """

    provider_config: Key
    references: tuple[Key, ...]
    replica: Any
    # The Envoy Gateway Backend it wraps (`_wrapped_backend`), if any.
    backend: tuple[str, str, str] | None
    config_found: bool
    first_missing: int | None
    stuck: bool
    # An Envoy Gateway Backend: whether a route names it (None for any other kind).
    named: bool | None = None


def _spec_manifest(obj: Obj) -> Obj | None:
    """The manifest an Object wraps (`spec.forProvider.manifest`), if it is an object."""
    manifest = ((obj.get("spec") or {}).get("forProvider") or {}).get("manifest")
    return manifest if isinstance(manifest, dict) else None


def _replica_label(obj: Obj) -> Any:
    """The replica (pod label value) of the workload an Object wraps, if it names one."""
    manifest = _spec_manifest(obj)
    labels = (manifest.get("metadata") or {}).get("labels") if manifest is not None else None
    return labels.get(c.LABEL_REPLICA) if isinstance(labels, dict) else None


def _object_reads(
    store: ObjectStore,
    obj: Obj,
    stuck: frozenset[str],
    last: object = None,
    kinds: set[tuple[str, str]] | None = None,
    named: Container[tuple[str, str, str]] = frozenset(),
) -> ObjectReads:
    """What simulating `obj` reads now; `last` is its last pass's reads, if at its version.

    The kinds of the objects it looks up are added to `kinds`; `named` is every
    Backend a route names as the pass began (`named_backends`).
    """
    if isinstance(last, ObjectReads):
        config, references, replica = last.provider_config, last.references, last.replica
        backend = last.backend
    else:
        config, references, replica, backend = (
            _provider_config_key(obj),
            _reference_keys(obj),
            _replica_label(obj),
            _wrapped_backend(obj),
        )
        if kinds is not None:
            kinds.update(key[:2] for key in (config, *references))
    return ObjectReads(
        config,
        references,
        replica,
        backend,
        config in store,
        _first_missing(store, references) if references else None,
        replica in stuck,
        None if backend is None else backend in named,
    )


def _wrapped_backend(obj: Obj) -> tuple[str, str, str] | None:
    """An Object wrapping an Envoy Gateway Backend: (provider config, namespace, name)."""
    manifest = _spec_manifest(obj)
    if manifest is None or manifest.get("kind") != "Backend" or _group(manifest) != BACKEND_GROUP:
        return None
    meta = manifest.get("metadata") or {}
    return (
        _provider_config_key(obj).name,
        _manifest_namespace(manifest),
        str(meta.get("name") or ""),
    )


def _manifest_namespace(manifest: Obj) -> str:
    """A wrapped namespaced object's namespace, "default" when it names none, as its
    observed copy reads (`observed_manifest`)."""
    return str((manifest.get("metadata") or {}).get("namespace") or "default")


def named_backends(store: ObjectStore) -> frozenset[tuple[str, str, str]]:
    """Every Envoy Gateway Backend an HTTPRoute names, as (provider config, namespace,
    name): Envoy Gateway reads, and judges (Accepted), only a Backend some route refers
    to, so the render must not show one judged that no route names."""
    out = set()
    for _, obj in _of_kinds(store, {"Object": OBJECT_GROUPS}):
        manifest = _spec_manifest(obj)
        if manifest is None or manifest.get("kind") != "HTTPRoute":
            continue
        config, namespace = _provider_config_key(obj).name, _manifest_namespace(manifest)
        rules = (manifest.get("spec") or {}).get("rules") or []
        for rule in (r for r in rules if isinstance(r, dict)):
            for ref in rule.get("backendRefs") or []:
                if isinstance(ref, dict) and ref.get("kind") == "Backend":
                    ns = str(ref.get("namespace") or namespace)
                    out.add((config, ns, str(ref.get("name") or "")))
    return frozenset(out)


def _step(api_version: str, kind: str) -> str | None:
    """Which simulation step a kind's objects go through ("Object", "Release"), if any."""
    group = _group({"apiVersion": api_version})
    if kind == "Object" and group in OBJECT_GROUPS:
        return "Object"
    if kind == "Release" and group in RELEASE_GROUPS:
        return "Release"
    return None


def _simulate_objects(
    store: ObjectStore,
    clock: Clock,
    passes: Passes,
    pairs: list[tuple[Key, Obj]],
    context: tuple[frozenset[str], frozenset[tuple[str, str, str]]],
    addresses: Addresses,
    fast: bool = False,
) -> list[Key]:
    """Simulate the Objects that changed, or whose reads did, since their last pass.

    `context`: the stuck replicas and the Backends routes name, as the pass began.
    `fast`: nothing any Object reads changed since the last pass (`Passes.world_still`).
    """
    touched = []
    kinds = passes.kinds("Object")
    stuck, named = context
    for key, obj in pairs:
        if fast and passes.current("Object", store, key):
            continue  # nothing it reads changed since it was last read
        last = passes.last_reads("Object", store, key)
        reads = _object_reads(store, obj, stuck, last, kinds, named)
        if reads == last:
            continue
        _simulate_object(store, obj, clock, stuck, addresses, reads)
        passes.simulated("Object", key, reads)
        touched.append(key)
    return touched


def _simulate_releases(
    store: ObjectStore, clock: Clock, passes: Passes, pairs: list[tuple[Key, Obj]]
) -> list[Key]:
    """Simulate the Releases that changed since their last pass (a Release reads only itself)."""
    touched = []
    for key, obj in pairs:
        if passes.unchanged("Release", store, key, ()):
            continue
        _simulate_release(obj, clock)
        passes.simulated("Release", key, ())
        touched.append(key)
    return touched


def simulate(store: ObjectStore, clock: Clock, passes: Passes | None = None) -> list[Key]:
    """Update every provider object in the store as its provider would.

    Every object it changes in place is noted in the store (`store.touch`, or
    `store.touch_status` where its status alone changed) once the whole pass is
    done; what else it creates or replaces goes through `store.put`. An Object
    or Release that `passes` shows unchanged since its last pass, with
    unchanged reads, is left as it is. Returns the keys it noted.
    """
    passes = Passes() if passes is None else passes
    stuck = stuck_replicas(store)
    # A route is an Object's spec: the Backends named change only with an Object's body.
    bodies = tuple(
        (kind, store.kind_body_version(*kind)) for kind in store.kinds() if _step(*kind) == "Object"
    )
    named = passes.derived("named backends", bodies, lambda: named_backends(store))
    addresses = Addresses(store)
    objects: list[tuple[Key, Obj]] = []
    touched: list[Key] = []
    start = _world(store, passes.kinds("Object"), stuck, named)
    fast = passes.world_still("Object", start)
    objects_at_start = _objects_world(store)
    # Kind by kind in the store's (sorted) order: the concatenation is key order.
    for api_version, kind in store.kinds():
        step = _step(api_version, kind)
        if step == "Object":
            pairs = store.select(api_version, kind)
            objects += pairs
            touched += _simulate_objects(
                store, clock, passes, pairs, (stuck, named), addresses, fast
            )
        elif step == "Release":
            touched += _simulate_releases(store, clock, passes, store.select(api_version, kind))
    cloud = simulate_cloud(store, clock, passes)
    # Usages given an owner are replaced (`store.put` noted them), not changed in
    # place: reported with the rest, not noted a second time.
    owned = simulate_usage_owners(store, passes)
    hydrated = _hydrate(store, passes, objects, objects_at_start, [*touched, *cloud, *owned])
    # Once per key: a second note of an object digests it all again to find
    # nothing new (an inventory Object is simulated, then its summary written).
    touched = list(dict.fromkeys([*touched, *cloud, *owned, *hydrated]))
    # Objects, Releases and hydration change statuses alone: only the status is
    # digested again. Cloud resources are noted whole.
    whole, put = set(cloud), set(owned)
    for key in touched:
        if key in whole:
            store.touch(key)
        elif key not in put:
            store.touch_status(key)
    # After every change of the pass: the version the next pass must still find.
    # The pass changes no Object's spec, so no route: the Backends named are the same.
    passes.world_after("Object", start, _world(store, passes.kinds("Object"), stuck, named))
    passes.world_after(HYDRATION, objects_at_start, _objects_world(store))
    passes.settle(store)
    return touched


def simulate_usage_owners(store: ObjectStore, passes: Passes | None = None) -> list[Key]:
    """Give each Usage whose user exists an ownerReference to it, as Crossplane's
    Usage controller does (apiVersion, kind, name and uid; neither controller nor
    blocking), after the owners it already has; the Usages it changed.

    The object is replaced, not edited: a composed object's metadata lists are
    shared between objects (`apply.Applier`). A Usage `passes` shows unchanged
    since its last pass, whose user is still absent or still has the same uid,
    is left as it is: that pass left it owned by that user already, or found
    no user.
    """
    passes = Passes() if passes is None else passes
    changed = []
    for key, usage in store_usages(store):
        last: Any = passes.last_reads(USAGE_OWNERS, store, key)  # (user key, `_user_uid`)
        if last is not None and _user_uid(store, last[0]) == last[1]:
            continue
        by = user_key(usage)
        found = _user_uid(store, by)
        passes.simulated(USAGE_OWNERS, key, (by, found))
        if by is None or found is None:
            continue
        uid = found[0]
        meta = usage.get("metadata") or {}
        owners = list(meta.get("ownerReferences") or [])
        if any(o.get("uid") == uid for o in owners):
            continue
        owner = {"apiVersion": by.api_version, "kind": by.kind, "name": by.name, "uid": uid}
        store.put({**usage, "metadata": {**meta, "ownerReferences": [*owners, owner]}})
        changed.append(key)
    return changed


USAGE_OWNERS = "UsageOwner"
"""The simulation step that gives a Usage its user as an owner (`simulate_usage_owners`)."""


def _user_uid(store: ObjectStore, by: Key | None) -> tuple[Any] | None:
    """The uid of the Usage user `by` names, in a tuple (it may have none); None when
    there is no such user in the store."""
    user = None if by is None else store.get(by)
    return None if user is None else ((user.get("metadata") or {}).get("uid", ""),)


def _world(
    store: ObjectStore,
    kinds: set[tuple[str, str]],
    stuck: frozenset[str],
    named: frozenset[tuple[str, str, str]],
) -> tuple[Any, ...]:
    """A stamp of what Objects read besides themselves: the versions of the kinds they
    look objects up in (any change to one changes it), the stuck replicas and the
    Backends routes name."""
    return stuck, named, tuple(sorted((kind, store.kind_version(*kind)) for kind in kinds))


HYDRATION = "hydration"


def _objects_world(store: ObjectStore) -> tuple[Any, ...]:
    """A stamp of every Object: the versions of the Object kinds (any change moves one)."""
    return tuple(
        (api_version, store.kind_version(api_version, kind))
        for api_version, kind in store.kinds()
        if _step(api_version, kind) == "Object"
    )


def _hydrate(
    store: ObjectStore,
    passes: Passes,
    objects: list[tuple[Key, Obj]],
    start: tuple[Any, ...],
    touched: list[Key],
) -> list[Key]:
    """`simulate_hydration`, unless no Object changed since the last pass wrote its results.

    Hydration reads Objects alone and writes the same results from the same
    Objects; a pass that began and ended with the same Objects wrote nothing
    new, so while they stay as it left them (not changed since, in the store
    or in place by this pass) its results are still in place.
    """
    still = passes.world_still(HYDRATION, start) and _objects_world(store) == start
    if still and not any(k.kind == "Object" and _step(*k[:2]) == "Object" for k in touched):
        return []
    return simulate_hydration(store, objects)  # changes wrapped manifests of Objects
