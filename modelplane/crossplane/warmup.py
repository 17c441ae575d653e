"""What a worker process runs once at start-up, before it takes its first call.

A fresh interpreter pays, on its first call, for what no later call pays
again: lazily built CEL environments and compiled selectors, the first
validation of each pydantic model, the growth of its heap. A worker that runs
one small synthetic call of the fleet-wide path first (a ModelDeployment with
CEL selectors over two InferenceClusters, decoded, scheduled, composed and
encoded), and one bare call of every other kind, pays for them at start-up,
where no deadline counts. What that call decoded is then forgotten, and the
interpreter's objects so far are moved out of the garbage collector's sight
(`gc.freeze`): a call's collections then never walk the modules again.
"""

from __future__ import annotations

import gc
from typing import Any

import crossplane.function.proto.v1.run_function_pb2 as fnv1

from modelplane.api import constants as c
from modelplane.api.inference_class import Device
from modelplane.api.inference_cluster import GPUPool, InferenceClusterStatus
from modelplane.compose import registry
from modelplane.compose.deployments.model_deployment import (
    CLUSTERS_REQUIREMENT,
    QUOTAS_REQUIREMENT,
    REPLICAS_REQUIREMENT,
)
from modelplane.crossplane import convert
from modelplane.crossplane.servicer import run_serialized

_GPU: dict[str, Any] = {
    "name": "gpu",
    "claim": "DRA",
    "driver": "gpu.nvidia.com",
    "deviceClassName": "gpu.nvidia.com",
    "count": 8,
    "attributes": {
        "productName": {"string": "warm-up GPU"},
        "driverVersion": {"version": "570.124.6"},
    },
    "capacity": {"memory": {"value": "81559Mi"}},
}

_POOL = GPUPool(name="gpu", class_name="warm-up", nodes=2, devices=[Device.model_validate(_GPU)])


def _cluster(i: int) -> dict[str, Any]:
    return {
        "apiVersion": c.API_VERSION,
        "kind": c.KIND_INFERENCE_CLUSTER,
        "metadata": {
            "name": f"warm-up-{i}",
            "uid": f"warm-up-{i}",
            "resourceVersion": "1",
            "labels": {"region": "warm-up"},
        },
        "spec": {"source": "Existing", "pools": [{"name": "gpu", "className": "warm-up"}]},
        "status": {
            "conditions": [{"type": "Ready", "status": "True"}],
            **InferenceClusterStatus(gpu_pools=[_POOL]).to_dict(),
        },
    }


_SELECTORS = [
    {"cel": 'device.driver == "gpu.nvidia.com"'},
    {"cel": 'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0'},
    {"cel": 'device.attributes["gpu.nvidia.com"].driverVersion.isGreaterThan(semver("550.0.0"))'},
]

DEPLOYMENT: dict[str, Any] = {
    "apiVersion": c.API_VERSION,
    "kind": c.KIND_MODEL_DEPLOYMENT,
    "metadata": {"name": "warm-up", "namespace": "warm-up"},
    "spec": {
        "replicas": 3,
        "clusterSelector": {"matchLabels": {"region": "warm-up"}},
        "nodeSelector": {"devices": [{"name": "gpu", "count": 2, "selectors": _SELECTORS}]},
        "workers": {
            "count": 1,
            "template": {
                "spec": {"containers": [{"name": "engine", "image": "vllm/vllm-openai:v0.11.0"}]}
            },
        },
    },
}


def request() -> fnv1.RunFunctionRequest:
    """The synthetic fleet-wide call: a ModelDeployment over two clusters, fetched."""
    req = fnv1.RunFunctionRequest()
    req.observed.composite.resource.CopyFrom(convert.dict_to_struct(DEPLOYMENT))
    for i in range(2):
        item = req.required_resources[CLUSTERS_REQUIREMENT].items.add()
        item.resource.CopyFrom(convert.dict_to_struct(_cluster(i)))
    # Fetched and empty: no replicas yet, no FleetQuota in the namespace.
    req.required_resources[REPLICAS_REQUIREMENT].SetInParent()
    req.required_resources[QUOTAS_REQUIREMENT].SetInParent()
    return req


def warm_up() -> None:
    """Run the synthetic calls through the whole path, forget them, and freeze the heap."""
    run_serialized(request().SerializeToString())
    for api_version, kind in registry.COMPOSERS:
        bare = fnv1.RunFunctionRequest()
        bare.observed.composite.resource.CopyFrom(
            convert.dict_to_struct(
                {"apiVersion": api_version, "kind": kind, "metadata": {"name": "warm-up"}}
            )
        )
        run_serialized(bare.SerializeToString())
    convert.DECODE_CACHE.clear()
    gc.collect()
    gc.freeze()
