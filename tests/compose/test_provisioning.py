"""EKSCluster and GKECluster composers: hand-written expected managed resources, status.

`expected/provisioning/*.yaml` hold a composite and, written by hand from SPEC
§7 and issue 13 (not generated from the code), the managed resources it must
compose. The conformance oracle checks every composed resource against the
provider-upjet CRDs and Crossplane's Usage.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from modelplane.api.inventory_summary import summarize
from modelplane.api.provisioning import read_provisioned_cluster
from modelplane.compose.clusters.clouds import eks as eks_cluster
from modelplane.compose.clusters.clouds import gke as gke_cluster
from modelplane.compose.clusters.clouds.provisioned import INVENTORY_REQUIREMENT, SECRET_REQUIREMENT
from modelplane.compose.types import ComposeInput, ComposeResult

HERE = Path(__file__).resolve().parent
CASES = {p.stem: p for p in sorted((HERE / "expected" / "provisioning").glob("*.yaml"))}
COMPOSERS = {"EKSCluster": eks_cluster.compose, "GKECluster": gke_cluster.compose}
FETCHED: dict[str, list[dict[str, Any]]] = {SECRET_REQUIREMENT: [], INVENTORY_REQUIREMENT: []}


def _case(name: str) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(CASES[name].read_text())
    return data


def _compose(
    composite: dict[str, Any],
    observed: dict[str, Any] | None = None,
    required: dict[str, list[dict[str, Any]]] | None = None,
) -> ComposeResult:
    fn = COMPOSERS[composite["kind"]]
    return fn(ComposeInput(composite, observed or {}, FETCHED if required is None else required))


def _cond(res: ComposeResult, type_: str) -> tuple[str, str, str]:
    (cond,) = [x for x in res.conditions if x.type == type_]
    return cond.status, str(cond.reason), cond.message


@pytest.mark.parametrize("name", sorted(CASES))
def test_expected_managed_resources(name: str) -> None:
    case = _case(name)
    res = _compose(case["composite"])
    assert res.fatal is None
    assert sorted(res.desired) == sorted(case.get("keys") or case["resources"])
    for key, want in case["resources"].items():
        assert res.desired[key].resource == want, key


@pytest.mark.parametrize("name", sorted(CASES))
def test_composed_resources_pass_the_oracles(name: str, oracle: Any) -> None:
    res = _compose(_case(name)["composite"])
    assert res.desired, "nothing composed: nothing checked"
    for key, desired in res.desired.items():
        assert [str(i) for i in oracle.validate(desired.resource)] == [], key


def _pool_labels_and_taints(resource: dict[str, Any]) -> tuple[dict[str, str], list[Any]]:
    body = resource["spec"]["forProvider"]
    body = body.get("nodeConfig", body)
    return body.get("labels") or {}, body.get("taint") or []


@pytest.mark.parametrize("name", sorted(CASES))
def test_gpu_pools_carry_label_and_taint_the_system_pool_neither(name: str) -> None:
    composite = _case(name)["composite"]
    res = _compose(composite)
    gpu_pools = [p["name"] for p in composite["spec"]["pools"] if p.get("accelerator")]
    assert gpu_pools
    taint = {"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"}
    for pool in gpu_pools:
        labels, taints = _pool_labels_and_taints(res.desired[f"nodepool-{pool}"].resource)
        assert labels["modelplane.ai/pool"] == pool
        assert taints == [taint]
    labels, taints = _pool_labels_and_taints(res.desired["nodepool-system"].resource)
    assert "modelplane.ai/pool" not in labels and taints == []


def _ready(extra: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"status": {"conditions": [{"type": "Ready", "status": "True"}], **(extra or {})}}


def _all_ready(res: ComposeResult) -> dict[str, Any]:
    return {key: {**d.resource, **_ready()} for key, d in res.desired.items()}


def test_waits_for_its_requirements_and_keeps_what_exists() -> None:
    composite = _case("eks")["composite"]
    observed = {"vpc": {**_case("eks")["resources"]["vpc"], **_ready()}}
    res = _compose(composite, observed, required={})
    assert set(res.requirements) == {SECRET_REQUIREMENT, INVENTORY_REQUIREMENT}
    assert list(res.desired) == ["vpc"]
    assert res.ready == "False"


def test_reachable_only_once_the_control_plane_is_ready_and_its_secret_exists() -> None:
    composite = _case("gke")["composite"]
    observed = _all_ready(_compose(composite))
    no_secret = _compose(composite, observed)
    assert _cond(no_secret, "ControlPlaneReady")[:2] == ("False", "ConnectionSecretMissing")
    assert (
        read_provisioned_cluster(no_secret.__dict__ | {"status": no_secret.status}).reachable
        is False
    )
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "eu-west-kubeconfig"}}
    res = _compose(composite, observed, {SECRET_REQUIREMENT: [secret], INVENTORY_REQUIREMENT: []})
    assert _cond(res, "ControlPlaneReady")[:2] == ("True", "Ready")
    view = read_provisioned_cluster({"status": res.status})
    assert view.reachable
    assert view.status is not None and view.status.kubeconfig_secret is not None
    assert (view.status.kubeconfig_secret.namespace, view.status.kubeconfig_secret.name) == (
        "modelplane-system",
        "eu-west-kubeconfig",
    )
    assert res.ready == "True"


def _node(name: str, pool: str, ready: str = "True") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"modelplane.ai/pool": pool}},
        "status": {"conditions": [{"type": "Ready", "status": ready}]},
    }


def _inventory(*nodes: dict[str, Any]) -> dict[str, Any]:
    """The observed inventory Object, as the agent would have written it for `nodes`."""
    data = summarize(nodes, [], [], "2026-01-01T00:00:00Z", 300).to_data()
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "data": data}
    return {
        "apiVersion": "kubernetes.m.crossplane.io/v1alpha1",
        "kind": "Object",
        "status": {"atProvider": {"manifest": cm}},
    }


AWS_STOCKOUT = (
    "async create failed: waiting for EKS Node Group (us-east:us-east-pool-h100) create: "
    "unexpected state 'CREATE_FAILED', wanted target 'ACTIVE'. last error: "
    "AsgInstanceLaunchFailures: Could not launch On-Demand Instances. "
    "InsufficientInstanceCapacity - We currently do not have sufficient p5.48xlarge capacity "
    "in the Availability Zone you requested (us-east-1a)."
)


def test_a_stocked_out_node_group_names_zone_and_accelerator_and_the_nodes_up() -> None:
    composite = _case("eks")["composite"]
    observed = _all_ready(_compose(composite))
    observed["nodepool-h100"]["status"] = {
        "conditions": [
            {"type": "Ready", "status": "False", "reason": "Creating"},
            {
                "type": "Synced",
                "status": "False",
                "reason": "ReconcileError",
                "message": AWS_STOCKOUT,
            },
        ],
        "atProvider": {"status": "CREATE_FAILED"},
    }
    inventory = _inventory(_node("a", "h100"), _node("b", "h100", "False"), _node("c", "l4"))
    res = _compose(
        composite, observed, {SECRET_REQUIREMENT: [], INVENTORY_REQUIREMENT: [inventory]}
    )
    status, reason, message = _cond(res, "InsufficientGPUCapacity")
    assert (status, reason) == ("True", "StockOut")
    assert "'h100'" in message and "us-east-1a" in message and "nvidia-h100-80gb" in message
    assert "1 of 2 node(s) up" in message
    assert _cond(res, "NodePoolsReady")[:2] == ("False", "Degraded")
    view = read_provisioned_cluster({"status": res.status})
    h100 = view.pool("h100")
    assert h100 is not None and h100.stock_out is not None
    assert (h100.nodes_up, h100.desired_nodes, h100.ready) == (1, 2, False)
    assert (h100.stock_out.zone, h100.stock_out.accelerator) == ("us-east-1a", "nvidia-h100-80gb")
    l4 = view.pool("l4")
    assert l4 is not None and (l4.stock_out, l4.nodes_up, l4.ready) == (None, 1, True)
    assert any(e.severity == "Warning" and e.reason == "StockOut" for e in res.events)


def test_a_gke_stockout_without_a_zone_in_the_message_names_the_pools_zone() -> None:
    composite = _case("gke")["composite"]
    observed = _all_ready(_compose(composite))
    observed["nodepool-a100"]["status"] = {
        "conditions": [
            {"type": "Synced", "status": "False", "message": "GCE_STOCKOUT: retry later"}
        ]
    }
    res = _compose(composite, observed)
    status, _, message = _cond(res, "InsufficientGPUCapacity")
    assert status == "True"
    assert "zone europe-west4-a" in message and "nvidia-tesla-a100" in message
    # No inventory observed: a stocked-out pool offers none rather than a guess.
    assert "0 of 2 node(s) up" in message


def test_an_invalid_vpc_cidr_holds_and_keeps_everything() -> None:
    composite = _case("eks")["composite"]
    observed = _all_ready(_compose(composite))
    composite = {
        **composite,
        "spec": {
            **composite["spec"],
            "network": {"vpcCidr": "10.8.0.0/28", "zones": ["us-east-1a", "us-east-1b"]},
        },
    }
    res = _compose(composite, observed)
    status, reason, message = _cond(res, "Valid")
    assert (status, reason) == ("False", "InvalidSpec")
    assert message.startswith("spec.network.vpcCidr:")
    assert sorted(res.desired) == sorted(observed)
    assert res.ready == "False"


def test_an_invalid_spec_holds_naming_the_field() -> None:
    composite = _case("gke")["composite"]
    broken = {**composite, "spec": {**composite["spec"], "zones": []}}
    res = _compose(broken)
    status, reason, message = _cond(res, "Valid")
    assert (status, reason) == ("False", "InvalidSpec")
    assert "spec.zones" in message
    assert res.desired == {}


def test_an_existing_vpc_composes_no_network_and_mounts_efs_in_its_subnets() -> None:
    composite = {
        "apiVersion": "infrastructure.modelplane.ai/v1alpha1",
        "kind": "EKSCluster",
        "metadata": {"name": "byo", "namespace": "modelplane-system"},
        "spec": {
            "clusterName": "byo",
            "region": "eu-central-1",
            "network": {"existing": {"vpcId": "vpc-1", "subnetIds": ["subnet-a", "subnet-b"]}},
            "csiDrivers": ["SharedFilesystem"],
            "pools": [{"name": "l4", "instanceType": "g6.xlarge", "nodeCount": 1}],
        },
    }
    res = _compose(composite)
    kinds = {d.resource["kind"] for d in res.desired.values()}
    assert not kinds & {"VPC", "Subnet", "NATGateway", "InternetGateway", "RouteTable"}
    cluster = res.desired["cluster"].resource["spec"]["forProvider"]
    assert cluster["vpcConfig"]["subnetIds"] == ["subnet-a", "subnet-b"]
    # Mount targets need the cluster security group, known once the cluster is up.
    assert not [k for k in res.desired if k.startswith("efs-mount")]
    observed = {
        "cluster": {"status": {"atProvider": {"vpcConfig": {"clusterSecurityGroupId": "sg-9"}}}}
    }
    res = _compose(composite, observed)
    mounts = {
        k: d.resource["spec"]["forProvider"] for k, d in res.desired.items() if "efs-mount" in k
    }
    assert [m["subnetId"] for m in mounts.values()] == ["subnet-a", "subnet-b"]
    assert all(m["securityGroups"] == ["sg-9"] for m in mounts.values())
    assert res.status["network"] == "vpc-1"
    addon = res.desired["addon-aws-efs-csi-driver"].resource["spec"]["forProvider"]
    assert addon["addonName"] == "aws-efs-csi-driver"


def test_a_malformed_status_reads_as_unknown_not_absent() -> None:
    view = read_provisioned_cluster({"status": {"pools": [{"name": "x", "desiredNodes": "many"}]}})
    assert view.status is None and view.problem is not None
    assert "status.pools" in view.problem
    assert not view.reachable


def test_gke_publishes_the_google_identity_its_providers_add_to_the_kubeconfig() -> None:
    # GKE's kubeconfig carries no credential on a default cluster (no client
    # certificate); the identity supplies the token, from a key when one is named.
    composite = _case("gke")["composite"]
    plain = _compose(composite)
    assert plain.status["identity"] == {
        "type": "GoogleApplicationCredentials",
        "source": "InjectedIdentity",
    }
    keyed = dict(composite, spec=dict(composite["spec"]))
    ref = {"namespace": "crossplane-system", "name": "gcp-sa", "key": "credentials.json"}
    keyed["spec"]["identity"] = {"secretRef": ref}
    assert _compose(keyed).status["identity"] == {
        "type": "GoogleApplicationCredentials",
        "source": "Secret",
        "secretRef": ref,
    }
    eks = _compose(_case("eks")["composite"])
    assert "identity" not in eks.status
