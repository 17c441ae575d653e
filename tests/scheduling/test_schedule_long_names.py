"""Long deployment and cluster names: label values are shortened, identity is not.

Object names may be 253 characters, label values only 63. The composer writes
the shortened form into labels and `status.selector`; the scheduler must still
recognise the deployment's own replicas and their cluster, from the spec or
from the shortened labels, so nothing is replaced or double-charged.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from schedfleet import L4, cluster, deployment, placements, replica, request, resolved, verdicts

from modelplane.api import constants as c
from modelplane.compose.deployments import model_deployment as md
from modelplane.compose.types import ComposeInput
from modelplane.scheduling import replica_name, schedule

# 81 and 119 characters: valid object names, too long for label values.
DEP = "llama-3-1-70b-instruct-" + "x" * 50 + "-serving"
CLUSTER = "gpu-cluster." + "eu-west-1." * 10 + "example"
# What label_value makes of them, written out by hand: the name cut to 52
# characters (a trailing "." dropped) plus the first 10 hex of its sha256.
DEP_LABEL = "llama-3-1-70b-instruct-xxxxxxxxxxxxxxxxxxxxxxxxxxxxx-755d9fd27b"
CLUSTER_LABEL = "gpu-cluster.eu-west-1.eu-west-1.eu-west-1.eu-west-1-20a06d06fa"
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
REQUESTS = [request("gpu", L4)]
GPU = [resolved("gpu", cel=L4)]


def test_names_are_long_and_their_labels_are_written_out():
    assert (len(DEP), len(CLUSTER)) == (81, 119)
    assert (len(DEP_LABEL), len(CLUSTER_LABEL)) == (63, 62)


def valid_labels(obj: dict[str, Any]) -> bool:
    values = obj["metadata"]["labels"].values()
    return all(len(v) <= 63 and LABEL_VALUE.match(v) for v in values)


def compose_once(
    fleet: list[dict[str, Any]], observed: dict[str, dict[str, Any]]
) -> md.ComposeResult:
    required = {
        md.CLUSTERS_REQUIREMENT: fleet,
        md.REPLICAS_REQUIREMENT: list(copy.deepcopy(observed).values()),
        md.QUOTAS_REQUIREMENT: [],
        md.PRIORITIES_REQUIREMENT: [],
    }
    dep = deployment(2, REQUESTS, name=DEP)
    return md.compose(ComposeInput(dep, observed=copy.deepcopy(observed), required=required))


def test_composed_labels_and_selector_use_the_short_form_and_survive_a_second_reconcile():
    fleet = [cluster(CLUSTER, {"l4": ("l4-1x", 4)})]
    first = compose_once(fleet, {})
    assert first.fatal is None
    manifests = {k: d.resource for k, d in first.desired.items()}
    assert len(manifests) == 2
    for obj in manifests.values():
        assert valid_labels(obj), obj["metadata"]["labels"]
        assert obj["metadata"]["labels"][c.LABEL_DEPLOYMENT] == DEP_LABEL
        assert obj["metadata"]["labels"][c.LABEL_CLUSTER] == CLUSTER_LABEL
        assert obj["spec"]["deploymentName"] == DEP
        assert obj["spec"]["clusterName"] == CLUSTER
    assert first.status["selector"] == f"modelplane.ai/deployment={DEP_LABEL}"
    # The requirement that lists the fleet's replicas still selects these.
    fleet_req = first.requirements[md.REPLICAS_REQUIREMENT]
    assert fleet_req.match_labels == {"app.kubernetes.io/managed-by": "modelplane"}
    for obj in manifests.values():
        assert obj["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "modelplane"
    names = sorted(o["metadata"]["name"] for o in manifests.values())
    assert names == sorted(replica_name("team-a", DEP, CLUSTER, i) for i in (0, 1))

    # Second reconcile: the replicas exist (Ready), in the observed composed
    # resources and in the fleet listing. Nothing moves, nothing is replaced.
    observed = {}
    for key, obj in manifests.items():
        obj = copy.deepcopy(obj)
        obj["metadata"]["creationTimestamp"] = "2026-01-01T00:00:00Z"
        obj["status"] = {"conditions": [{"type": "Ready", "status": "True"}]}
        observed[key] = obj
    second = compose_once(fleet, observed)
    assert {k: d.resource for k, d in second.desired.items()} == manifests
    assert all(d.ready == "True" for d in second.desired.values())
    assert [e.reason for e in second.events] == []


def label_only(obj: dict[str, Any]) -> dict[str, Any]:
    """A replica whose spec does not name its deployment or cluster (labels only)."""
    obj = copy.deepcopy(obj)
    del obj["spec"]["deploymentName"], obj["spec"]["clusterName"]
    return obj


def test_a_replica_known_only_by_its_short_labels_is_retained():
    fleet = [cluster(CLUSTER, {"l4": ("l4-1x", 4)})]
    own = replica(DEP, CLUSTER, 0, "l4", GPU, ready=True)
    assert own["metadata"]["labels"][c.LABEL_DEPLOYMENT] == DEP_LABEL
    result = schedule(deployment(1, REQUESTS, name=DEP), fleet, [label_only(own)])
    assert placements(result) == [(CLUSTER, 0, "l4")]
    assert result.replicas[0].retained
    assert result.replicas[0].name == own["metadata"]["name"]
    assert result.replaced == ()


def test_another_deployments_replica_known_only_by_labels_is_charged_on_its_cluster():
    # One node, held by another deployment's replica on the long-named cluster.
    fleet = [cluster(CLUSTER, {"l4": ("l4-1x", 1)})]
    other = replica("other-" + DEP, CLUSTER, 0, "l4", GPU, ready=True)
    result = schedule(deployment(1, REQUESTS, name=DEP), fleet, [label_only(other)])
    assert placements(result) == []
    assert verdicts(result) == {CLUSTER: "InsufficientCapacity"}
