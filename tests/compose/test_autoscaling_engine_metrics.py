"""Autoscaling on a fleet whose agents may not scrape engine metrics.

A cluster reports engine signals only when its inventory agent scrapes them
(`spec.servingStack.inventory.engineMetrics: true`). The InferenceClusters
here are written as the real agent would leave them: a cluster that scrapes
has `status.replicaSignals`, one that does not has none. The decision must
use the signals where they exist, hold the count where none can come, and
say which clusters and which setting. Every expected value is by hand.
"""

from __future__ import annotations

from typing import Any

import pytest

from modelplane.api.model_deployment import ModelDeploymentSpec
from modelplane.api.objects import replica_base
from modelplane.api.readers import ObservedInferenceCluster, read_inference_cluster
from modelplane.api.reasons import AutoscalingReason as R
from modelplane.compose.deployments.conditions import autoscaling_condition
from modelplane.compose.deployments.scaling import plan_scaling
from modelplane.compose.types import ComposeResult

AT = "2026-11-01T01:00:00Z"
ON = {"inventory": {"engineMetrics": True}}
OFF = {"inventory": {"engineMetrics": False}}
HINT = (
    "do not scrape engine metrics, so they report no engine signal: set "
    "spec.servingStack.inventory.engineMetrics: true on those InferenceClusters"
)
ONE_HINT = (
    "does not scrape engine metrics, so it reports no engine signal: set "
    "spec.servingStack.inventory.engineMetrics: true on that InferenceCluster"
)


def _cluster(name: str, stack: dict[str, Any] | None, waiting: float) -> ObservedInferenceCluster:
    """A cluster with replica chat-<name>-0; its agent reports it only when it scrapes."""
    spec: dict[str, Any] = {} if stack is None else {"servingStack": stack}
    inventory = (stack or {}).get("inventory", {})
    scrapes = inventory.get("enabled", True) and inventory.get("engineMetrics") is True
    signals = [
        {"replica": replica_base(f"chat-{name}-0"), "reachable": True, "scrapedAt": AT,
         "windowSeconds": 300, "requestsWaiting": waiting, "requestsRunning": 0}
    ] if scrapes else []  # fmt: skip
    obj = {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "InferenceCluster",
        "metadata": {"name": name},
        "spec": spec,
        "status": {"replicaSignals": signals} if signals else {},
    }
    read = read_inference_cluster(obj)
    assert read is not None
    return read


def _replica(cluster: str) -> dict[str, Any]:
    return {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "ModelReplica",
        "metadata": {"name": f"chat-{cluster}-0", "namespace": "ml"},
        "spec": {"clusterName": cluster, "deploymentName": "chat"},
    }


def _spec() -> ModelDeploymentSpec:
    return ModelDeploymentSpec.model_validate(
        {
            "replicas": 2,
            "autoscaling": {"maxReplicas": 8, "targets": {"queueDepthPerReplica": 5}},
            "nodeSelector": {"devices": [{"name": "gpu", "selectors": [{"cel": "true"}]}]},
            "workers": {"template": {"spec": {"containers": [{"name": "engine"}]}}},
        }
    )


# (case, east's servingStack, west's, desired, reason, clusters named as not scraping).
# Each cluster's one replica has 12 requests waiting when its agent reports it.
CASES = [
    # 24 waiting against 5 per replica: ceil(24 / 5) = 5.
    ("both scrape: signals used", ON, ON, 5, R.SCALED_UP, ()),
    # No signal at all: held at 2, never scaled on absent data.
    ("neither scrapes (default)", None, None, 2, R.SIGNALS_MISSING, ("east", "west")),
    ("neither scrapes (false)", OFF, OFF, 2, R.SIGNALS_MISSING, ("east", "west")),
    # The agent is off: it scrapes nothing, whatever engineMetrics says.
    ("agent disabled", {"inventory": {"enabled": False, "engineMetrics": True}}, OFF, 2,
     R.SIGNALS_MISSING, ("east", "west")),
    # The platform team's agent (stack disabled) declares that it scrapes.
    ("platform team's agent", {"enabled": False, "inventory": {"engineMetrics": True}}, ON, 5,
     R.SCALED_UP, ()),
    # Only east reports: 12 waiting, west's counts as zero: 12 / 2 = 6 per replica,
    # ratio 1.2: ceil(2 × 1.2) = 3; west named, as it never will report.
    ("only east scrapes", ON, None, 3, R.SCALED_UP, ("west",)),
    # A setting that does not read is unknown, not "off": not named.
    ("unreadable setting", {"inventory": {"engineMetrics": "often"}}, None, 2,
     R.SIGNALS_MISSING, ("west",)),
]  # fmt: skip


@pytest.mark.parametrize(
    ("case", "east", "west", "desired", "reason", "named"), CASES, ids=[c[0] for c in CASES]
)
def test_signals_are_used_only_where_the_agent_scrapes(
    case: str,
    east: dict[str, Any] | None,
    west: dict[str, Any] | None,
    desired: int,
    reason: R,
    named: tuple[str, ...],
) -> None:
    clusters = {"east": _cluster("east", east, 12), "west": _cluster("west", west, 12)}
    observed = {f"r{i}": _replica(cl) for i, cl in enumerate(("east", "west"))}
    scaling = plan_scaling(_spec(), {}, observed, clusters)
    assert scaling is not None
    d = scaling.decision
    assert (d.current, d.desired, d.reason) == (2, desired, reason)
    assert d.unscraped == named
    if len(named) == 1:
        assert f"the inventory agent of cluster {named[0]} {ONE_HINT}" in d.message
    elif named:
        assert f"the inventory agents of clusters {', '.join(named)} {HINT}" in d.message
    else:
        assert "engineMetrics" not in d.message


def test_the_hold_is_a_condition_and_a_warning_naming_the_setting() -> None:
    clusters = {"east": _cluster("east", None, 12), "west": _cluster("west", OFF, 12)}
    observed = {f"r{i}": _replica(cl) for i, cl in enumerate(("east", "west"))}
    scaling = plan_scaling(_spec(), {}, observed, clusters)
    assert scaling is not None
    result = ComposeResult()
    autoscaling_condition(result, scaling)
    (cond,) = [x for x in result.conditions if x.type == "Autoscaling"]
    assert (cond.status, cond.reason) == ("Unknown", "SignalsMissing")
    assert cond.message == (
        "2 → 2 replicas (held: signals missing); 0 of 2 replicas reporting; the inventory "
        f"agents of clusters east, west {HINT}; no fresh signal from chat-east-0, chat-west-0 "
        "(never scales down while one is missing)"
    )
    warnings = [(e.reason, e.message) for e in result.events if e.severity == "Warning"]
    assert warnings == [("SignalsMissing", f"the inventory agents of clusters east, west {HINT}")]


def test_a_scraping_fleet_gets_no_such_warning() -> None:
    clusters = {"east": _cluster("east", ON, 12), "west": _cluster("west", ON, 12)}
    observed = {f"r{i}": _replica(cl) for i, cl in enumerate(("east", "west"))}
    scaling = plan_scaling(_spec(), {}, observed, clusters)
    assert scaling is not None
    result = ComposeResult()
    autoscaling_condition(result, scaling)
    assert not [e for e in result.events if e.severity == "Warning"]
