"""Benchmark: scheduling one deployment versus decoding its RunFunctionRequest.

One ModelDeployment of 100 replicas over N InferenceClusters × 8 pools (4
InferenceClasses), with a few hundred replicas of other deployments in the
fleet. The clusters and replicas travel as required resources of a protobuf
RunFunctionRequest, as Crossplane sends them. We time (a) merely decoding that
request into Python dicts with the SDK's `struct_to_dict`, and (b) `schedule()`
on the decoded objects, and print (b)/(a) per fleet size and the 1,000/100
scaling of (b) — for the fleet above and for one whose clusters all publish
different device lists (distinct shapes), and (d) the same with a
deployment nothing can take (a replica missing: every cluster is explained,
only the rejections status lists in full). Then (c) decoding a 1,000-cluster
request cold (an empty decode cache) against cached (every object's
resourceVersion seen before), and the whole ModelDeployment call cold and
cached.

    .venv/bin/python benchmarks/bench_scheduler.py [--repeat 5]

The last two fleets put tenancy in play (issue 29): the deployment has a
priority, its namespace a FleetQuota (limits by InferenceClass, DeviceClass and
selector) and every other replica a lower priority, a quarter of them in the
deployment's namespace (they count against the quota).

Targets: scheduling ≤ 2× decoding at 1,000 clusters; 10× clusters ≤ 12× time
(every fleet); a cached call ≤ 25% of a cold one.
"""

from __future__ import annotations

import argparse
import copy
import gc
import time
from collections.abc import Callable
from typing import Any

import crossplane.function.proto.v1.run_function_pb2 as fnv1
from crossplane.function.resource import dict_to_struct
from crossplane.function.resource import struct_to_dict as sdk_struct_to_dict

from modelplane.api import constants as c
from modelplane.api.inference_class import Device
from modelplane.api.inference_cluster import GPUPool, InferenceClusterStatus
from modelplane.api.model_deployment import ModelDeploymentSpec
from modelplane.compose.deployments.model_deployment import (
    CLUSTERS_REQUIREMENT,
    PRIORITIES_REQUIREMENT,
    QUOTAS_REQUIREMENT,
    REPLICAS_REQUIREMENT,
)
from modelplane.crossplane import FunctionRunner
from modelplane.crossplane.convert import DECODE_CACHE, DecodeCache, to_input
from modelplane.scheduling import ScheduleResult, replica_name, schedule
from modelplane.scheduling.framework import build_input
from modelplane.scheduling.scheduler import schedule_input

ENGINE = {"spec": {"containers": [{"name": "engine", "image": "vllm/vllm-openai:v0.11.0"}]}}


def _gpu(product: str, count: int, memory: str, arch: str) -> dict[str, Any]:
    return {
        "name": "gpu",
        "claim": "DRA",
        "driver": "gpu.nvidia.com",
        "deviceClassName": "gpu.nvidia.com",
        "count": count,
        "attributes": {
            "productName": {"string": product},
            "architecture": {"string": arch},
            "driverVersion": {"version": "570.124.6"},
        },
        "capacity": {"memory": {"value": memory}},
    }


FABRIC = {
    "name": "fabric",
    "claim": "Synthetic",
    "driver": "fabric.modelplane.ai",
    "count": 1,
    "attributes": {"type": {"string": "InfiniBand"}, "rdma": {"bool": True}},
}
NIC = {
    "name": "nic",
    "claim": "DRA",
    "driver": "rdma.example.com",
    "deviceClassName": "rdma.example.com",
    "count": 2,
}
CLASSES = {
    "h100-8x-ib": [_gpu("NVIDIA H100 80GB HBM3", 8, "81559Mi", "Hopper"), FABRIC],
    "a100-4x": [_gpu("NVIDIA A100-SXM4-40GB", 4, "40960Mi", "Ampere"), NIC],
    "l40s-2x": [_gpu("NVIDIA L40S", 2, "46068Mi", "Ada Lovelace")],
    "l4-1x": [_gpu("NVIDIA L4", 1, "23034Mi", "Ada Lovelace")],
}
REGIONS = ["us-east-1", "us-west-2", "eu-west-1", "ap-south-1"]


def _distinct(devices: list[dict[str, Any]], i: int) -> list[dict[str, Any]]:
    """The class's devices with a driver version of cluster i's own."""
    out = copy.deepcopy(devices)
    for d in out:
        if "driverVersion" in d.get("attributes", {}):
            d["attributes"]["driverVersion"] = {"version": f"570.{124 + i // 100}.{i % 100}"}
    return out


def cluster(i: int, distinct: bool = False) -> dict[str, Any]:
    """Cluster i: 8 pools, two of each class, sizes varying by cluster.

    With `distinct`, every cluster's pools publish their own driver version, so
    no two clusters share a device list (a shape).
    """
    pools = []
    for k, (klass, devices) in enumerate(CLASSES.items()):
        published = _distinct(devices, i) if distinct else devices
        for j in range(2):
            pools.append(
                GPUPool(
                    name=f"{klass.split('-')[0]}-{j}",
                    class_name=klass,
                    nodes=1 + (i * 7 + k * 3 + j) % 6,
                    devices=[Device.model_validate(d) for d in published],
                )
            )
    return {
        "apiVersion": c.INFRA_API_VERSION.replace(c.INFRA_GROUP, c.GROUP),
        "kind": "InferenceCluster",
        "metadata": {
            "name": f"cluster-{i:04d}",
            "labels": {"region": REGIONS[i % 4], "tier": "premium" if i % 3 else "standard"},
        },
        "spec": {
            "source": "Existing",
            "pools": [{"name": p.name, "className": p.class_name} for p in pools],
            "taints": [{"key": "maintenance", "effect": "NoSchedule"}] if i % 50 == 7 else [],
            # The PriorityClasses the tenancy case names exist on every cluster:
            # a cluster without the one a replica's pods name is refused
            # (`PriorityClassMissing`), and the case would time a refusal.
            "scheduling": {
                "existingPriorityClasses": [p["metadata"]["name"] for p in PRIORITY_CLASSES]
            },
        },
        "status": {
            "conditions": [{"type": "Ready", "status": "False" if i % 97 == 5 else "True"}],
            **InferenceClusterStatus(gpu_pools=pools).to_dict(),
        },
    }


def other_replica(i: int, clusters: int) -> dict[str, Any]:
    """A replica of another deployment holding 4 GPUs of an H100 pool."""
    cl = f"cluster-{(i * 13) % clusters:04d}"
    return {
        "apiVersion": c.API_VERSION,
        "kind": "ModelReplica",
        "metadata": {
            "name": replica_name("team-b", f"other-{i % 10}", cl, i),
            "namespace": "team-b",
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "labels": {c.LABEL_DEPLOYMENT: f"other-{i % 10}", c.LABEL_CLUSTER: cl},
        },
        "spec": {
            "deploymentName": f"other-{i % 10}",
            "clusterName": cl,
            "index": i,
            "nodePoolName": "h100-0",
            "deviceRequests": [
                {
                    "name": "gpu",
                    "deviceClassName": "gpu.nvidia.com",
                    "count": 4,
                    "selectors": [{"cel": 'device.driver == "gpu.nvidia.com"'}],
                }
            ],
            "workers": {"count": 1, "template": ENGINE},
        },
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }


DEPLOYMENT: dict[str, Any] = {
    "apiVersion": c.API_VERSION,
    "kind": "ModelDeployment",
    "metadata": {"name": "llama-70b", "namespace": "team-a"},
    "spec": {
        "replicas": 100,
        "clusterSelector": {
            "matchExpressions": [
                {
                    "key": "region",
                    "operator": "In",
                    "values": ["us-east-1", "us-west-2", "eu-west-1"],
                }
            ]
        },
        "tolerations": [],
        "nodeSelector": {
            "devices": [
                {
                    "name": "gpu",
                    "count": 2,
                    "selectors": [
                        {"cel": 'device.driver == "gpu.nvidia.com"'},
                        {
                            "cel": 'device.capacity["gpu.nvidia.com"].memory'
                            '.compareTo(quantity("40Gi")) >= 0'
                        },
                        {
                            "cel": 'device.attributes["gpu.nvidia.com"].driverVersion'
                            '.isGreaterThan(semver("550.0.0"))'
                        },
                    ],
                }
            ]
        },
        "workers": {"count": 1, "template": ENGINE},
    },
}


# Tenancy in play (issue 29): the deployment has a priority and its namespace a FleetQuota
# with a limit per InferenceClass, one per DeviceClass and one by selector; every other
# replica has a priority (lower), so a missing replica tries preemption.
QUOTA = {
    "metadata": {"name": "team-a", "namespace": "team-a"},
    "spec": {
        "limits": [
            {"name": "h100", "inferenceClasses": ["h100-8x-ib"], "devices": 100000},
            {"name": "gpus", "deviceClassName": "gpu.nvidia.com", "devices": 100000},
            {
                "name": "large",
                "selector": 'device.capacity["gpu.nvidia.com"].memory'
                '.compareTo(quantity("40Gi")) >= 0',
                "devices": 100000,
            },
        ]
    },
}
PRIORITY_CLASSES = [
    {"metadata": {"name": "critical"}, "value": 100000},
    {"metadata": {"name": "batch"}, "value": 100},
]


def tenant(replicas: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The other replicas with priority batch, and every fourth in the deployment's namespace."""
    out = copy.deepcopy(replicas)
    for i, r in enumerate(out):
        r["spec"]["priority"] = "batch"
        if i % 4 == 0:
            r["metadata"]["namespace"] = "team-a"
    return out


def schedule_tenancy(
    deployment: dict[str, Any], clusters: list[Any], replicas: list[Any]
) -> ScheduleResult:
    """`schedule` with the namespace's FleetQuota and the PriorityClasses."""
    spec = ModelDeploymentSpec.model_validate({**deployment["spec"], "priority": "critical"})
    inp = build_input(
        "team-a", "llama-70b", spec, clusters, replicas, None, [QUOTA], PRIORITY_CLASSES
    )
    return schedule_input(inp, explain_all=False)


def unplaceable() -> dict[str, Any]:
    """DEPLOYMENT asking for 16 GPUs a node: no pool has them, every replica is missing."""
    dep = copy.deepcopy(DEPLOYMENT)
    dep["spec"]["nodeSelector"]["devices"][0]["count"] = 16
    return dep


def request(
    clusters: int, distinct: bool = False, missing: bool = False
) -> fnv1.RunFunctionRequest:
    """The RunFunctionRequest Crossplane sends: clusters and replicas as required resources.

    Every object carries a uid and a resourceVersion, as an API server returns it.
    """
    req = fnv1.RunFunctionRequest()
    deployment = unplaceable() if missing else DEPLOYMENT
    req.observed.composite.resource.CopyFrom(dict_to_struct(deployment))
    for i in range(clusters):
        obj = cluster(i, distinct)
        obj["metadata"].update(uid=f"uid-cluster-{i}", resourceVersion="1")
        req.required_resources["clusters"].items.add().resource.CopyFrom(dict_to_struct(obj))
    for i in range(clusters // 4):
        item = req.required_resources["replicas"].items.add()
        item.resource.CopyFrom(dict_to_struct(other_replica(i, clusters)))
    return req


def decode(req: fnv1.RunFunctionRequest) -> dict[str, Any]:
    """Merely decode the request into Python dicts (the baseline)."""
    return {
        "composite": sdk_struct_to_dict(req.observed.composite.resource),
        "required": {
            name: [sdk_struct_to_dict(item.resource) for item in rs.items]
            for name, rs in req.required_resources.items()
        },
    }


def cpu(fn: Callable[[], Any], repeat: int, setup: Callable[[], Any] = lambda: None) -> float:
    """Minimum CPU seconds of this process for `fn` over `repeat` runs, `setup` before each."""
    times = []
    for _ in range(repeat):
        setup()
        gc.collect()
        t0 = time.process_time()
        fn()
        times.append(time.process_time() - t0)
    return min(times)


def fleet(
    n: int, distinct: bool, repeat: int, missing: bool = False, tenancy: bool = False
) -> float:
    """Print decode and schedule CPU times over one fleet; return the schedule time.

    CPU time, not wall time: the machine may be shared, and CPU time is what a
    call costs on a core of its own.
    """
    req = request(n, distinct, missing)
    t_decode = cpu(lambda: decode(req), repeat)
    # Fresh (uncached) dicts, so every call reads every cluster: the cold figure.
    inp = to_input(req, None)
    clusters, replicas = inp.required["clusters"], inp.required["replicas"]
    if tenancy:
        replicas = tenant(replicas)

    def run() -> ScheduleResult:
        if tenancy:
            return schedule_tenancy(inp.composite, clusters, replicas)
        return schedule(inp.composite, clusters, replicas, explain_all=False)

    result = run()
    if not missing and len(result.replicas) != result.desired:
        # A case meant to place that places nothing times a refusal instead.
        refused = {v.reason for v in result.clusters if not v.eligible}
        raise SystemExit(
            f"{n} clusters{_label(distinct, missing, tenancy)}: placed "
            f"{len(result.replicas)}/{result.desired} (refusals: {sorted(refused)})"
        )
    t_sched = cpu(run, repeat)
    detailed = sum(1 for v in result.clusters if v.pools)
    print(
        f"{n:5d} clusters × 8 pools{_label(distinct, missing, tenancy)}, "
        f"{len(replicas)} other replicas: decode {t_decode * 1e3:7.1f} ms, "
        f"schedule {t_sched * 1e3:7.1f} ms; schedule/decode {t_sched / t_decode:.2f}× "
        f"(target ≤ 2×); placed {len(result.replicas)}/{result.desired}, "
        f"{len(result.clusters)} verdicts ({detailed} pool by pool)"
    )
    return t_sched


def _label(distinct: bool, missing: bool, tenancy: bool = False) -> str:
    return (
        (" (distinct shapes)" if distinct else "")
        + (" (nothing fits)" if missing else "")
        + (" (quota + priorities)" if tenancy else "")
    )


def as_required(req: fnv1.RunFunctionRequest) -> fnv1.RunFunctionRequest:
    """`req` with its objects under the requirement names the ModelDeployment composer asks for."""
    out = fnv1.RunFunctionRequest()
    out.observed.CopyFrom(req.observed)
    out.required_resources[CLUSTERS_REQUIREMENT].CopyFrom(req.required_resources["clusters"])
    out.required_resources[REPLICAS_REQUIREMENT].CopyFrom(req.required_resources["replicas"])
    out.required_resources[QUOTAS_REQUIREMENT].SetInParent()
    out.required_resources[PRIORITIES_REQUIREMENT].SetInParent()
    return out


def cached(n: int, repeat: int) -> None:
    """Print cold against cached decoding, and the whole call, over `n` clusters."""
    req = as_required(request(n))
    cache = DecodeCache()
    cold = cpu(lambda: to_input(req, cache), repeat, setup=cache.clear)
    to_input(req, cache)
    warm = cpu(lambda: to_input(req, cache), repeat)
    print(
        f"{n:5d} clusters: decode cold {cold * 1e3:7.1f} ms, cached {warm * 1e3:6.1f} ms "
        f"({warm / cold:.1%}; CPU time)"
    )
    runner = FunctionRunner(log_errors=False)
    rsp = runner.run(req)
    assert not rsp.results or rsp.results[0].severity != fnv1.SEVERITY_FATAL, rsp.results
    assert len(rsp.desired.resources) == 100, "the call must schedule and compose every replica"
    cold = cpu(lambda: runner.run(req), repeat, setup=DECODE_CACHE.clear)
    runner.run(req)
    warm = cpu(lambda: runner.run(req), repeat)
    print(
        f"{n:5d} clusters: ModelDeployment call cold {cold * 1e3:7.1f} ms, cached "
        f"{warm * 1e3:6.1f} ms ({warm / cold:.1%}; target ≤ 25%)"
    )


def main() -> None:
    """Run the benchmark and print the ratios."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    cases = [(d, m, False) for d, m in ((False, False), (True, False), (False, True), (True, True))]
    cases += [(False, False, True), (False, True, True)]
    for distinct, missing, tenancy in cases:
        sched_time = {n: fleet(n, distinct, args.repeat, missing, tenancy) for n in (100, 1000)}
        print(
            f"scaling 1000/100 clusters{_label(distinct, missing, tenancy)}: "
            f"{sched_time[1000] / sched_time[100]:.2f}× (target ≤ 12×)"
        )
    cached(1000, max(2, args.repeat // 2))


if __name__ == "__main__":
    main()
