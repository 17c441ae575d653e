"""Table tests: InferenceClass and InferenceCluster composers, input → expected output."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from modelplane.api.frozen import frozen
from modelplane.compose.clusters import inference_class, inference_cluster, sources
from modelplane.compose.common import keep_observed
from modelplane.compose.types import (
    ComposeInput,
    ConditionOut,
    DesiredResource,
    EventOut,
    Requirement,
)

GPU = {
    "name": "gpu",
    "driver": "gpu.nvidia.com",
    "deviceClassName": "gpu.nvidia.com",
    "count": 8,
    "attributes": {"architecture": {"string": "Hopper"}},
    "capacity": {"memory": {"value": "80Gi"}},
}
FABRIC = {
    "name": "ib",
    "claim": "Synthetic",
    "driver": "fabric.modelplane.ai",
    "attributes": {"type": {"string": "InfiniBand"}},
}
# What the API server would store for GPU/FABRIC once XRD defaults apply.
GPU_STORED = {**GPU, "claim": "DRA"}
FABRIC_STORED = {**FABRIC, "count": 1}


def klass(name: str, *devices: dict[str, Any], ready: str | None = None) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "InferenceClass",
        "metadata": {"name": name},
        "spec": {"devices": [copy.deepcopy(d) for d in devices]},
    }
    if ready is not None:
        obj["status"] = {"conditions": [{"type": "Ready", "status": ready}]}
    return obj


def cluster(**spec: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "source": "Existing",
        "existing": {"kubeconfigSecretRef": {"namespace": "fleet", "name": "kc", "key": "config"}},
        "pools": [{"name": "h100", "className": "h100-8x", "nodeCount": 2, "maxNodeCount": 5}],
        # The serving stack has its own tests (test_cluster_sources.py).
        "servingStack": {"enabled": False},
        # Crossplane v2 bookkeeping: composers must ignore it.
        "crossplane": {"compositionRef": {"name": "x"}},
    }
    base.update(spec)
    return {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "InferenceCluster",
        "metadata": {"name": "east"},
        "spec": base,
    }


SECRET = {
    "apiVersion": "v1",
    "kind": "Secret",
    "metadata": {"name": "kc", "namespace": "fleet"},
    "data": {"config": "ZmFrZQ=="},
}
PROVIDER_CONFIG = {
    "apiVersion": "kubernetes.m.crossplane.io/v1alpha1",
    "kind": "ClusterProviderConfig",
    "metadata": {
        "name": "modelplane-east",
        "labels": {"modelplane.ai/cluster": "east", "app.kubernetes.io/managed-by": "modelplane"},
    },
    "spec": {
        "credentials": {
            "source": "Secret",
            "secretRef": {"namespace": "fleet", "name": "kc", "key": "config"},
        }
    },
}
REQUIREMENTS = {
    "class-h100-8x": Requirement("modelplane.ai/v1alpha1", "InferenceClass", match_name="h100-8x"),
    "kubeconfig-secret": Requirement("v1", "Secret", match_name="kc", namespace="fleet"),
    # The cluster is observed through its inventory Object, a composed resource
    # (test_cluster_sources.py), not through required resources.
}
OBSERVATIONS: dict[str, list[dict[str, Any]]] = {}
POOL_H100 = {
    "name": "h100",
    "className": "h100-8x",
    "nodes": 5,
    "devices": [GPU_STORED, FABRIC_STORED],
}


class TestInferenceClass:
    def test_valid_class_is_ready_and_counts_claimable_devices(self) -> None:
        r = inference_class.compose(ComposeInput(klass("h100-8x", GPU, FABRIC)))
        assert r.fatal is None
        assert r.ready == "True"
        assert r.status == {"draDevices": 8}
        assert r.conditions == [
            ConditionOut(
                "Valid", "True", "Valid", "devices per node: 8× gpu (DRA), 1× ib (Synthetic)"
            )
        ]
        assert r.events == []
        assert r.desired == {}

    @pytest.mark.parametrize(
        ("device", "message"),
        [
            (
                {**GPU, "deviceClassName": None},
                "spec.devices[0]: deviceClassName is required when claim is DRA",
            ),
            (
                {**GPU, "attributes": {"arch": {"string": "Hopper", "int": 9}}},
                "spec.devices[0].attributes.arch: "
                "exactly one of string, int, bool or version must be set",
            ),
            (
                {**GPU, "capacity": {"memory": {"value": "lots"}}},
                "spec.devices[0].capacity.memory.value: 'lots' is not a Kubernetes quantity "
                "(e.g. 80Gi, 500m, 1e3)",
            ),
            (
                {**GPU, "count": "eight"},
                "spec.devices[0].count: Input should be a valid integer, "
                "unable to parse string as an integer",
            ),
        ],
    )
    def test_invalid_class_reports_the_field(self, device: dict[str, Any], message: str) -> None:
        device = {k: v for k, v in device.items() if v is not None}
        r = inference_class.compose(ComposeInput(klass("bad", device)))
        assert r.fatal is None
        assert r.ready == "False"
        assert r.conditions == [ConditionOut("Valid", "False", "InvalidSpec", message)]
        assert r.events == [EventOut("Warning", "InvalidSpec", message)]

    def test_duplicate_device_names_are_invalid(self) -> None:
        r = inference_class.compose(ComposeInput(klass("dup", GPU, {**FABRIC, "name": "gpu"})))
        assert r.conditions[0].reason == "InvalidSpec"
        assert "device names must be unique: 'gpu' appears twice" in r.conditions[0].message

    def test_class_without_claimable_devices_warns(self) -> None:
        r = inference_class.compose(ComposeInput(klass("ib-only", FABRIC)))
        assert r.ready == "True"
        assert r.status == {"draDevices": 0}
        assert r.conditions[0].reason == "NoClaimableDevices"
        assert r.events[0].severity == "Warning"


class TestInferenceCluster:
    def test_first_call_only_requires_inputs(self) -> None:
        r = inference_cluster.compose(ComposeInput(cluster()))
        assert r.fatal is None
        assert r.requirements == REQUIREMENTS
        assert r.desired == {}
        assert r.status == {}
        # outcome.wait: not ready until the inputs are fetched.
        assert r.ready == "False"

    def test_unfetched_inputs_keep_observed_resources(self) -> None:
        observed = {
            "provider-config": {
                **PROVIDER_CONFIG,
                "metadata": {**PROVIDER_CONFIG["metadata"], "uid": "u1"},
            }
        }
        r = inference_cluster.compose(ComposeInput(cluster(), observed=observed))
        assert r.desired == {"provider-config": DesiredResource(PROVIDER_CONFIG)}

    def test_resolved_cluster_publishes_pools_and_provider_config(self) -> None:
        required = {
            **OBSERVATIONS,
            "class-h100-8x": [klass("h100-8x", GPU, FABRIC)],
            "kubeconfig-secret": [SECRET],
        }
        r = inference_cluster.compose(ComposeInput(cluster(), required=required))
        assert r.fatal is None
        assert r.status == {"gpuPools": [POOL_H100], "providerConfigName": "modelplane-east"}
        assert r.desired == {"provider-config": DesiredResource(PROVIDER_CONFIG, "False")}
        # Not Ready until the provider config is observed to exist.
        assert r.ready == "False"
        assert [(x.type, x.status, x.reason) for x in r.conditions] == [
            ("PoolsResolved", "True", "Resolved"),
            ("CredentialsResolved", "True", "Resolved"),
            ("ServingStackReady", "True", "Disabled"),
            ("HardwareDrift", "Unknown", "NotObserved"),
        ]
        assert r.events == []

    def test_ready_once_provider_config_observed(self) -> None:
        required = {
            **OBSERVATIONS,
            "class-h100-8x": [klass("h100-8x", GPU, FABRIC)],
            "kubeconfig-secret": [SECRET],
        }
        spec_gw = {"gateway": {"address": "east.example.com"}}
        inp = ComposeInput(
            cluster(**spec_gw), observed={"provider-config": PROVIDER_CONFIG}, required=required
        )
        r = inference_cluster.compose(inp)
        assert r.ready == "True"
        assert r.desired["provider-config"].ready == "True"
        assert r.status["gatewayAddress"] == "east.example.com"

    def test_missing_class_is_a_condition_naming_the_field(self) -> None:
        required: dict[str, list[dict[str, Any]]] = {
            **OBSERVATIONS,
            "class-h100-8x": [],
            "kubeconfig-secret": [SECRET],
        }
        r = inference_cluster.compose(
            ComposeInput(
                cluster(), observed={"provider-config": PROVIDER_CONFIG}, required=required
            )
        )
        message = "spec.pools[0].className: InferenceClass 'h100-8x' of pool 'h100' not found"
        assert r.fatal is None
        assert r.ready == "False"
        assert ConditionOut("PoolsResolved", "False", "ClassNotFound", message) in r.conditions
        assert EventOut("Warning", "ClassNotFound", message) in r.events
        # The pool is published as unknown, never left out: leaving it out would
        # read as "the pool is gone" and replace the replicas on it (issue 10).
        assert r.status["gpuPools"] == [
            {
                "name": "h100",
                "className": "h100-8x",
                "nodes": 5,
                "devices": [],
                "reason": "ClassNotFound",
                "message": message,
            }
        ]
        # The provider config is still composed: the cluster stays reachable.
        assert "provider-config" in r.desired

    def test_invalid_class_is_a_condition(self) -> None:
        bad = klass("h100-8x", {**GPU, "deviceClassName": None})
        bad["spec"]["devices"][0].pop("deviceClassName")
        required = {**OBSERVATIONS, "class-h100-8x": [bad], "kubeconfig-secret": [SECRET]}
        r = inference_cluster.compose(ComposeInput(cluster(), required=required))
        cond = next(x for x in r.conditions if x.type == "PoolsResolved")
        assert cond.reason == "InvalidClass"
        assert cond.message.startswith(
            "spec.pools[0].className: InferenceClass 'h100-8x' is invalid: spec.devices[0]"
        )
        (pool,) = r.status["gpuPools"]
        assert (pool["name"], pool["reason"], pool["devices"]) == ("h100", "InvalidClass", [])

    def test_class_refused_by_its_composer_publishes_the_pool_as_unknown(self) -> None:
        refused = klass("h100-8x", GPU, ready="False")
        refused["status"]["conditions"].append(
            {"type": "Valid", "status": "False", "message": "spec.devices[0]: bad version"}
        )
        required = {**OBSERVATIONS, "class-h100-8x": [refused], "kubeconfig-secret": [SECRET]}
        r = inference_cluster.compose(ComposeInput(cluster(), required=required))
        (pool,) = r.status["gpuPools"]
        assert pool["reason"] == "InvalidClass"
        assert pool["message"] == (
            "spec.pools[0].className: InferenceClass 'h100-8x' is invalid: "
            "spec.devices[0]: bad version"
        )

    def test_unready_class_blocks_readiness(self) -> None:
        required = {
            **OBSERVATIONS,
            "class-h100-8x": [klass("h100-8x", GPU, ready="False")],
            "kubeconfig-secret": [SECRET],
        }
        r = inference_cluster.compose(
            ComposeInput(
                cluster(), observed={"provider-config": PROVIDER_CONFIG}, required=required
            )
        )
        assert r.ready == "False"
        assert next(x for x in r.conditions if x.type == "PoolsResolved").message == (
            "spec.pools[0].className: InferenceClass 'h100-8x' is not Ready"
        )

    @pytest.mark.parametrize(
        ("secrets", "reason", "message"),
        [
            ([], "SecretNotFound", "spec.existing.kubeconfigSecretRef: Secret fleet/kc not found"),
            (
                [{**SECRET, "data": {"other": "eA=="}}],
                "SecretKeyMissing",
                "spec.existing.kubeconfigSecretRef.key: Secret fleet/kc has no key 'config'",
            ),
        ],
    )
    def test_secret_problems_are_conditions(
        self, secrets: list[dict[str, Any]], reason: str, message: str
    ) -> None:
        required = {
            **OBSERVATIONS,
            "class-h100-8x": [klass("h100-8x", GPU)],
            "kubeconfig-secret": secrets,
        }
        r = inference_cluster.compose(
            ComposeInput(
                cluster(), observed={"provider-config": PROVIDER_CONFIG}, required=required
            )
        )
        assert r.ready == "False"
        assert ConditionOut("CredentialsResolved", "False", reason, message) in r.conditions
        assert EventOut("Warning", reason, message) in r.events

    def test_secret_data_never_leaves_the_composer(self) -> None:
        required = {
            **OBSERVATIONS,
            "class-h100-8x": [klass("h100-8x", GPU)],
            "kubeconfig-secret": [SECRET],
        }
        r = inference_cluster.compose(ComposeInput(cluster(), required=required))
        assert "ZmFrZQ==" not in repr(r)

    def test_invalid_spec_is_fatal_so_existing_config_survives(self) -> None:
        r = inference_cluster.compose(
            ComposeInput(cluster(pools=[{"name": "Bad_Name", "className": "x"}]))
        )
        assert r.fatal is not None
        assert "spec.pools[0].name" in r.fatal

    def test_a_provisioned_pool_whose_class_says_not_how_holds(self) -> None:
        obj = cluster(source="GKE", gke={"project": "p", "region": "r", "zones": ["r-a"]})
        del obj["spec"]["existing"]
        required = {**OBSERVATIONS, "class-h100-8x": [klass("h100-8x", GPU)]}
        r = inference_cluster.compose(ComposeInput(obj, required=required))
        assert r.ready == "False"
        assert r.desired == {}
        cond = next(x for x in r.conditions if x.type == "PoolsResolved")
        assert (cond.status, cond.reason) == ("False", "NotProvisionable")
        assert cond.message.startswith(
            "spec.pools[0].className: InferenceClass 'h100-8x' of pool 'h100' has no "
            "spec.provisioning for GKE"
        )

    def test_pool_nodes_use_max_node_count_else_node_count(self) -> None:
        pools = [
            {"name": "a", "className": "h100-8x", "nodeCount": 3},
            {"name": "b", "className": "h100-8x", "nodeCount": 1, "maxNodeCount": 7},
        ]
        required = {
            **OBSERVATIONS,
            "class-h100-8x": [klass("h100-8x", GPU)],
            "kubeconfig-secret": [SECRET],
        }
        r = inference_cluster.compose(ComposeInput(cluster(pools=pools), required=required))
        assert [(p["name"], p["nodes"]) for p in r.status["gpuPools"]] == [("a", 3), ("b", 7)]


@pytest.mark.parametrize(
    ("cluster_name", "expected"),
    [
        ("east", "modelplane-east"),
        ("c" * 52, "modelplane-" + "c" * 52),
    ],
)
def test_provider_config_name_keeps_short_names_readable(cluster_name: str, expected: str) -> None:
    assert inference_cluster.provider_config_name(cluster_name) == expected


def test_provider_config_name_of_a_long_cluster_fits_a_label_value() -> None:
    # Providers label ProviderConfigUsages with the config's name.
    long_a, long_b = "c" * 60 + "a", "c" * 60 + "b"
    a, b = (
        inference_cluster.provider_config_name(long_a),
        inference_cluster.provider_config_name(long_b),
    )
    assert len(a) <= 63 and len(b) <= 63
    assert a != b
    assert a.startswith("modelplane-ccc")


def test_kept_resources_carry_intent_not_server_owned_fields() -> None:
    # Desired state is server-side-apply intent: echoing finalizers or owner
    # references would make the function co-own them.
    observed = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "x",
            "namespace": "ns",
            "labels": {"a": "b"},
            "uid": "u",
            "finalizers": ["provider.example/finalizer"],
            "ownerReferences": [{"kind": "X", "name": "owner"}],
            "resourceVersion": "7",
        },
        "data": {"k": "v"},
        "status": {"conditions": []},
    }
    kept = keep_observed(ComposeInput(cluster(), observed={"cm": observed}))
    assert kept == {
        "cm": DesiredResource(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "x", "namespace": "ns", "labels": {"a": "b"}},
                "data": {"k": "v"},
            }
        )
    }


@pytest.mark.parametrize(
    "stack",
    [
        None,
        {"enabled": True},
        {"enabled": True, "kserve": {"enabled": True}, "inventory": {"enabled": False}},
    ],
)
def test_a_remembered_serving_stack_spec_is_the_one_built_afresh(
    stack: dict[str, Any] | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec: dict[str, Any] = {"scheduling": {"schedulerName": "kai-scheduler", "install": True}}
    spec["servingStack"] = stack

    def stack_spec(composite: dict[str, Any], afresh: bool = False) -> Any:
        if afresh:
            sources._STACK_SPECS.clear()
        required = {"class-h100-8x": [frozen(klass("h100-8x", GPU))], "kubeconfig-secret": [SECRET]}
        res = inference_cluster.compose(ComposeInput(composite, {}, required))
        return res.desired["serving-stack"].resource["spec"]

    plain = cluster(**spec)
    expected = stack_spec(plain, afresh=True)
    assert expected["clusterName"] == "east"
    assert stack_spec(frozen(plain)) == expected
    # A new object, the same spec but Crossplane's bookkeeping: remembered.
    moved = copy.deepcopy(plain)
    moved["spec"]["crossplane"] = {"resourceRefs": [{"name": "r"}]}
    built = []
    made = sources._stack_spec

    def counted(*args: Any) -> Any:
        built.append(args[0])
        return made(*args)

    monkeypatch.setattr(sources, "_stack_spec", counted)
    assert stack_spec(moved) == stack_spec(plain) == expected
    assert built == []
    # The same spec under another name: its own stack spec.
    west = copy.deepcopy(plain)
    west["metadata"]["name"] = "west"
    assert stack_spec(west) == stack_spec(west, afresh=True) != expected
    assert built == ["west", "west"]
