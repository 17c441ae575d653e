"""The e2e scenarios' inputs, as plain documents: each scenario has its own names."""

from __future__ import annotations

from typing import Any

Doc = dict[str, Any]
API = "modelplane.ai/v1alpha1"


def namespace(name: str) -> Doc:
    """A Namespace."""
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def inference_class(name: str, gpus: int = 1, product: str = "NVIDIA L4") -> Doc:
    """A node recipe of `gpus` GPUs (NVIDIA L4s unless told) claimed through DRA."""
    return {
        "apiVersion": API,
        "kind": "InferenceClass",
        "metadata": {"name": name},
        "spec": {
            "devices": [
                {
                    "name": "gpu",
                    "claim": "DRA",
                    "driver": "gpu.nvidia.com",
                    "deviceClassName": "gpu.nvidia.com",
                    "count": gpus,
                    "attributes": {"productName": {"string": product}},
                    "capacity": {"memory": {"value": "23034Mi"}},
                }
            ]
        },
    }


def inference_cluster(
    name: str,
    secret_ref: dict[str, str],
    class_name: str,
    nodes: int = 4,
    pools: list[Doc] | None = None,
) -> Doc:
    """An existing cluster reached through a kubeconfig Secret, serving stack off.

    Its inventory agent is the fleet's own process (`modelplane dev up` runs one
    per workload cluster), declared with `servingStack.inventory.enabled`.
    """
    declared = pools or [{"name": "l4", "className": class_name, "nodeCount": nodes}]
    return {
        "apiVersion": API,
        "kind": "InferenceCluster",
        "metadata": {"name": name, "labels": {"e2e.modelplane.ai/fleet": "yes"}},
        "spec": {
            "source": "Existing",
            "existing": {"kubeconfigSecretRef": secret_ref},
            "pools": declared,
            "servingStack": {"enabled": False, "inventory": {"enabled": True}},
            # The address of the platform's gateway in front of the cluster:
            # ModelEndpoints (and so ModelServices) need one.
            "gateway": {"address": f"{name}.inference.test"},
        },
    }


def deployment(
    name: str,
    ns: str,
    replicas: int = 2,
    gpus: int = 1,
    labels: dict[str, str] | None = None,
    topology: dict[str, int] | None = None,
    cache: str | None = None,
    product: str = "NVIDIA L4",
    clusters: dict[str, str] | None = None,
) -> Doc:
    """A ModelDeployment of `replicas` replicas of one vLLM engine on L4s."""
    workers: Doc = {
        "count": 1,
        "template": {
            "metadata": {"labels": {"app": name, **(labels or {})}},
            "spec": {
                "containers": [
                    {
                        "name": "engine",
                        "image": "vllm/vllm-openai:v0.11.0",
                        "args": ["--model=Qwen/Qwen2.5-0.5B-Instruct"],
                    }
                ]
            },
        },
    }
    if topology:
        workers["topology"] = topology
    spec: Doc = {
        "replicas": replicas,
        "nodeSelector": {
            "devices": [
                {
                    "name": "gpu",
                    "count": gpus,
                    "selectors": [
                        {"cel": f'device.attributes["gpu.nvidia.com"].productName == "{product}"'}
                    ],
                }
            ]
        },
        "workers": workers,
    }
    if clusters:
        spec["clusterSelector"] = {"matchLabels": clusters}
    if cache:
        spec["caches"] = [{"name": cache}]
    return {
        "apiVersion": API,
        "kind": "ModelDeployment",
        "metadata": {"name": name, "namespace": ns},
        "spec": spec,
    }


def model_cache(name: str, ns: str) -> Doc:
    """A ModelCache of a Hugging Face model on a claim per matching cluster."""
    return {
        "apiVersion": API,
        "kind": "ModelCache",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "artifact": {
                "kind": "Weights",
                "source": {
                    "huggingFace": {"repo": "Qwen/Qwen2.5-0.5B-Instruct", "revision": "main"}
                },
            },
            "storage": {"backend": "PVC", "size": "5Gi"},
            "replication": "AllMatchingClusters",
        },
    }


def model_service(name: str, ns: str, model: str) -> Doc:
    """A ModelService routing to every ModelEndpoint labelled model=<model>."""
    return {
        "apiVersion": API,
        "kind": "ModelService",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"endpoints": [{"selector": {"matchLabels": {"model": model}}, "weight": 1}]},
    }


def inference_gateway() -> Doc:
    """The control plane's InferenceGateway `default` (one HTTP listener)."""
    return {
        "apiVersion": API,
        "kind": "InferenceGateway",
        "metadata": {"name": "default"},
        "spec": {},
    }


def platform_gateway() -> list[Doc]:
    """The Gateway a platform team runs in front of a cluster whose serving stack is off:
    the one every replica's HTTPRoute names (plain HTTP: no fleet gateway crosses it)."""
    return [
        {
            "apiVersion": "gateway.networking.k8s.io/v1",
            "kind": "GatewayClass",
            "metadata": {"name": "platform"},
            "spec": {"controllerName": "gateway.envoyproxy.io/gatewayclass-controller"},
        },
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "modelplane-system"}},
        {
            "apiVersion": "gateway.networking.k8s.io/v1",
            "kind": "Gateway",
            "metadata": {"name": "modelplane-inference", "namespace": "modelplane-system"},
            "spec": {
                "gatewayClassName": "platform",
                "listeners": [
                    {
                        "name": "http",
                        "port": 80,
                        "protocol": "HTTP",
                        "allowedRoutes": {"namespaces": {"from": "All"}},
                    }
                ],
            },
        },
    ]
