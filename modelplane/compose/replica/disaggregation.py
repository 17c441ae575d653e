"""Prefill → decode on the native backend: what makes requests flow through prefill first.

A disaggregated replica gets, beside its two workloads:

- an inference-extension **InferencePool** (`inference.networking.k8s.io/v1`)
  over the replica's serving pods of both roles (labelled
  `llm-d.ai/inferenceServing: "true"`), on the engine port;
- its **endpoint picker** (EPP): llm-d's inference scheduler, the picker and
  P/D plugins since GAIE v1.6 live there, as a Deployment with its Service,
  ServiceAccount, Role/RoleBinding (it watches the pool and its pods) and a
  ConfigMap holding its `EndpointPickerConfig` with llm-d's P/D profile:
  `pd-profile-handler` runs the `prefill` profile (pods labelled
  `llm-d.ai/role: prefill`) and then the `decode` profile (`llm-d.ai/role:
  decode`), and `prefill-header-handler` tells the decode pod which prefill
  pod to use;
- the decode pods' **routing sidecar** (a native sidecar: an init container
  with `restartPolicy: Always`) on the engine port, which sends the prompt to
  the chosen prefill pod and then hands the request to the decode engine, moved
  to `DECODE_ENGINE_PORT`;
- the **KV-transfer connector** for vLLM on both roles (NIXL,
  `kv_role: kv_both`) unless the user configured one, and the NIXL side
  channel on the pod's IP;
- the replica's HTTPRoute pointing at the InferencePool instead of the decode
  Service.

Facts come from upstream documentation, read for facts only: llm-d's
"Disaggregated Prefill/Decode" architecture page (llm-d.ai/docs/architecture/
Components/disagg_prefill-decode), the llm-d-inference-scheduler deployment
manifests and sample P/D `EndpointPickerConfig` (plugins `prefill-header-handler`,
`prefill-filter`, `decode-filter`, `max-score-picker`, `prefix-cache-scorer`,
`pd-profile-handler`), GAIE's "Configuring via YAML" guide
(site-src/guides/epp-configuration/config-text.md: the config's fixed
apiVersion/kind), and the llm-d-routing-sidecar README (`-port`, `-vllm-port`,
`-connector=nixlv2`). Images and versions are pinned below and nowhere else.
"""

from __future__ import annotations

import json
from typing import Any

from modelplane.api import constants as c
from modelplane.compose import readiness
from modelplane.compose.objects import Item
from modelplane.compose.replica import workload
from modelplane.compose.replica.workload import ReplicaContext
from modelplane.compose.types import Resource

# Pinned images: the llm-d endpoint picker (EPP) and the decode routing sidecar,
# the pair llm-d's v0.3 guides deploy together; every flag, plugin type and the
# config apiVersion used here were checked at these tags.
# Provenance: llm-d/llm-d-inference-scheduler@v0.3.2 (commit c834d27a; the repository
# is now llm-d/llm-d-router, same tags), whose release workflow pushes
# ghcr.io/llm-d/<repository>:<tag>; its EPP registers prefill-header-handler,
# prefill-filter, decode-filter and pd-profile-handler, on GAIE v1.0.0's runner
# (InferencePool inference.networking.k8s.io/v1, max-score-picker, prefix-cache-scorer).
EPP_IMAGE = "ghcr.io/llm-d/llm-d-inference-scheduler:v0.3.2"
# Provenance: llm-d/llm-d-routing-sidecar@v0.3.0 (commit 3004256a), same release
# workflow; cmd/llm-d-routing-sidecar defines -port, -vllm-port, -connector (nixlv2)
# and -secure-proxy. Later sidecars ship from llm-d-router and drop -connector for
# --kv-connector (v0.10.0), so moving this pin means moving the flags with it.
ROUTING_SIDECAR_IMAGE = "ghcr.io/llm-d/llm-d-routing-sidecar:v0.3.0"
EPP_GRPC_PORT = 9002
EPP_HEALTH_PORT = 9003
EPP_METRICS_PORT = 9090
EPP_CONFIG_FILE = "config.yaml"
EPP_CONFIG_DIR = "/etc/epp"
DECODE_ENGINE_PORT = 8200
NIXL_SIDE_CHANNEL_PORT = "5557"
ROLE_LABEL = "llm-d.ai/role"
# On the serving pods only (a Deployment's pods, LeaderWorkerSet leaders): the pool's members.
SERVING_LABEL = "llm-d.ai/inferenceServing"
KV_TRANSFER_FLAG = "--kv-transfer-config"
NIXL_CONFIG = json.dumps(
    {"kv_connector": "NixlConnector", "kv_role": "kv_both"}, separators=(",", ":")
)
SIDECAR_NAME = "routing-proxy"


def picker_config() -> str:
    """The endpoint picker's EndpointPickerConfig: llm-d's prefill/decode profile."""
    config = {
        "apiVersion": "inference.networking.x-k8s.io/v1alpha1",
        "kind": "EndpointPickerConfig",
        "plugins": [
            {"type": "prefill-header-handler"},
            {"type": "prefix-cache-scorer"},
            {"type": "prefill-filter"},
            {"type": "decode-filter"},
            {"type": "max-score-picker"},
            {"type": "pd-profile-handler"},
        ],
        "schedulingProfiles": [
            {
                "name": role,
                "plugins": [
                    {"pluginRef": f"{role}-filter"},
                    {"pluginRef": "max-score-picker"},
                    {"pluginRef": "prefix-cache-scorer", "weight": 2},
                ],
            }
            for role in (c.ROLE_PREFILL, c.ROLE_DECODE)
        ],
    }
    return json.dumps(config, indent=2) + "\n"  # JSON is YAML


def _pods(manifest: Resource) -> list[dict[str, Any]]:
    spec = manifest["spec"]
    if manifest["kind"] == "Deployment":
        return [spec["template"]]
    lwt = spec["leaderWorkerTemplate"]
    return [lwt["leaderTemplate"], lwt["workerTemplate"]]


def _nixl(engine: dict[str, Any]) -> None:
    args = [str(x) for x in engine.get("args") or []]
    command = [str(x) for x in engine.get("command") or []]
    if not any(a.startswith(KV_TRANSFER_FLAG) for a in command + args):
        engine["args"] = [*args, f"{KV_TRANSFER_FLAG}={NIXL_CONFIG}"]
    env = list(engine.get("env") or [])
    names = {e.get("name") for e in env if isinstance(e, dict)}
    if "VLLM_NIXL_SIDE_CHANNEL_HOST" not in names:
        env.append(
            {
                "name": "VLLM_NIXL_SIDE_CHANNEL_HOST",
                "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}},
            }
        )
    if "VLLM_NIXL_SIDE_CHANNEL_PORT" not in names:
        env.append({"name": "VLLM_NIXL_SIDE_CHANNEL_PORT", "value": NIXL_SIDE_CHANNEL_PORT})
    engine["env"] = env


def _move_engine(engine: dict[str, Any], port: int) -> None:
    """Serve the decode engine on DECODE_ENGINE_PORT: the sidecar takes `port`."""
    engine["args"] = [*(engine.get("args") or []), f"--port={DECODE_ENGINE_PORT}"]
    for p in engine.get("ports") or []:
        if isinstance(p, dict) and p.get("containerPort") == port:
            p["containerPort"] = DECODE_ENGINE_PORT
    probe = (engine.get("readinessProbe") or {}).get("httpGet")
    if isinstance(probe, dict) and probe.get("port") == port:
        probe["port"] = DECODE_ENGINE_PORT


def _sidecar(port: int) -> Resource:
    return {
        "name": SIDECAR_NAME,
        "image": ROUTING_SIDECAR_IMAGE,
        "restartPolicy": "Always",
        "args": [
            f"--port={port}",
            f"--vllm-port={DECODE_ENGINE_PORT}",
            "--connector=nixlv2",
            "--secure-proxy=false",
        ],
        "ports": [{"name": c.ENGINE_PORT_NAME, "containerPort": port, "protocol": "TCP"}],
    }


def stamp_pods(manifest: Resource, role: str, port: int) -> None:
    """Stamp one role's workload for P/D: role label, NIXL flags; on decode the
    routing sidecar in front of the engine, which moves to DECODE_ENGINE_PORT."""
    for i, tpl in enumerate(_pods(manifest)):
        if i > 0:
            continue  # an LWS worker: part of the leader's engine, not an endpoint
        pod = tpl["spec"]
        engine = workload.engine(pod)
        _nixl(engine)
        meta = tpl.setdefault("metadata", {})
        meta["labels"] = {**(meta.get("labels") or {}), ROLE_LABEL: role, SERVING_LABEL: "true"}
        if role == c.ROLE_DECODE:
            _move_engine(engine, port)
            pod["initContainers"] = [*(pod.get("initContainers") or []), _sidecar(port)]


def _picker_labels(ctx: ReplicaContext) -> dict[str, str]:
    # Not the replica label: the picker's pod must not match the pool's selector.
    labels = {k: v for k, v in ctx.labels.items() if k != c.LABEL_REPLICA}
    return {**labels, **_picker_selector(ctx)}


def _picker_selector(ctx: ReplicaContext) -> dict[str, str]:
    return {
        "app.kubernetes.io/instance": ctx.base,
        "app.kubernetes.io/component": "endpoint-picker",
    }


def _meta(ctx: ReplicaContext, name: str) -> Resource:
    return {"name": name, "namespace": ctx.namespace, "labels": _picker_labels(ctx)}


def _picker_pod(ctx: ReplicaContext, name: str, pool: str) -> Resource:
    return {
        "metadata": {"labels": _picker_labels(ctx)},
        "spec": {
            "serviceAccountName": name,
            "containers": [
                {
                    "name": "epp",
                    "image": EPP_IMAGE,
                    "args": [
                        f"--pool-name={pool}",
                        f"--pool-namespace={ctx.namespace}",
                        f"--config-file={EPP_CONFIG_DIR}/{EPP_CONFIG_FILE}",
                        f"--grpc-port={EPP_GRPC_PORT}",
                        f"--grpc-health-port={EPP_HEALTH_PORT}",
                    ],
                    "ports": [
                        {"name": "grpc", "containerPort": EPP_GRPC_PORT, "protocol": "TCP"},
                        {"name": "grpc-health", "containerPort": EPP_HEALTH_PORT},
                        {"name": "metrics", "containerPort": EPP_METRICS_PORT},
                    ],
                    "readinessProbe": {
                        "grpc": {"port": EPP_HEALTH_PORT, "service": "inference-extension"},
                        "periodSeconds": 2,
                    },
                    "volumeMounts": [{"name": "config", "mountPath": EPP_CONFIG_DIR}],
                }
            ],
            "volumes": [{"name": "config", "configMap": {"name": name}}],
        },
    }


def _rbac(ctx: ReplicaContext, name: str) -> list[Resource]:
    watch = ["get", "list", "watch"]
    return [
        {"apiVersion": c.CORE_API_VERSION, "kind": "ServiceAccount", "metadata": _meta(ctx, name)},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": _meta(ctx, name),
            "rules": [
                {"apiGroups": [""], "resources": ["pods"], "verbs": watch},
                {"apiGroups": [c.INFERENCE_GROUP], "resources": ["inferencepools"], "verbs": watch},
                {
                    "apiGroups": ["inference.networking.x-k8s.io"],
                    "resources": ["inferenceobjectives", "inferencemodelrewrites"],
                    "verbs": watch,
                },
            ],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": _meta(ctx, name),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
            "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": ctx.namespace}],
        },
    ]


def _picker(ctx: ReplicaContext, name: str, pool: str) -> list[tuple[str, Resource]]:
    selector = _picker_selector(ctx)
    config = {
        "apiVersion": c.CORE_API_VERSION,
        "kind": "ConfigMap",
        "metadata": _meta(ctx, name),
        "data": {EPP_CONFIG_FILE: picker_config()},
    }
    deployment = {
        "apiVersion": c.APPS_API_VERSION,
        "kind": "Deployment",
        "metadata": _meta(ctx, name),
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": selector},
            "template": _picker_pod(ctx, name, pool),
        },
    }
    service = {
        "apiVersion": c.CORE_API_VERSION,
        "kind": "Service",
        "metadata": _meta(ctx, name),
        "spec": {
            "selector": selector,
            "ports": [
                {
                    "name": "grpc",
                    "port": EPP_GRPC_PORT,
                    "targetPort": EPP_GRPC_PORT,
                    "protocol": "TCP",
                    "appProtocol": "http2",
                }
            ],
        },
    }
    kinds = ("serviceaccount", "role", "rolebinding")
    return [
        *zip(kinds, _rbac(ctx, name), strict=True),
        ("config", config),
        ("deployment", deployment),
        ("service", service),
    ]


def items(ctx: ReplicaContext, port: int) -> tuple[list[Item], str]:
    """The InferencePool and its endpoint picker for a disaggregated replica, and the
    pool's name (the replica's HTTPRoute backend)."""
    pool, name = ctx.base, f"{ctx.base}-epp"
    manifest = {
        "apiVersion": c.INFERENCE_POOL_API_VERSION,
        "kind": "InferencePool",
        "metadata": workload.metadata(pool, ctx),
        "spec": {
            "selector": {"matchLabels": {c.LABEL_REPLICA: ctx.base, SERVING_LABEL: "true"}},
            "targetPorts": [{"number": port}],
            "endpointPickerRef": {
                "name": name,
                "port": {"number": EPP_GRPC_PORT},
                "failureMode": "FailClose",
            },
        },
    }
    out = [
        Item(
            "inferencepool",
            workload.object_name(ctx, None, "inferencepool"),
            manifest,
            readiness.EXISTS,
            f"InferencePool {pool}",
        )
    ]
    for kind, obj in _picker(ctx, name, pool):
        serves = kind == "deployment"
        rule = readiness.DEPLOYMENT_ROLLED_OUT if serves else readiness.EXISTS
        what = f"{obj['kind']} {name} (endpoint picker)"
        key = f"picker-{kind}"
        obj_name = workload.object_name(ctx, None, "epp", kind)
        out.append(Item(key, obj_name, obj, rule, what, serves=serves))
    return out, pool
