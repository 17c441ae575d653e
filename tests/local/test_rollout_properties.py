"""Properties of Progressive rollouts and rollbacks over random fleets, on the embedded engine.

Each example builds a fleet (2–4 clusters in two regions, L4 pools of 1–3
nodes, the fleet gateway and a ModelService), renders a deployment at an old
image to its fixed point, then changes the image and reconciles round by
round with random waves, surge, analysis limits and per-cluster signals of
the new revision (some clusters' errors or TTFT break the limits, so some
rollouts roll back). After every round:

- the model never has 0 Ready ModelEndpoints once it had one;
- the deployment's ModelReplicas never exceed `spec.replicas + maxSurge`, besides
  replaced ones leaving the routes (`drainMessage`).

At the fixed point a Complete rollout runs only the new revision and a
RolledBack one only the old.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from modelplane.api import constants as c
from modelplane.api.model_deployment import ModelDeploymentSpec
from modelplane.api.objects import is_condition_true
from modelplane.compose.deployments.revision import revision_of, template_of
from modelplane.local.engine import ControlPlane
from modelplane.local.loader import load_paths

Obj = dict[str, Any]
EXAMPLE = Path(__file__).resolve().parents[2] / "examples/operations/progressive/pass"
OLD_IMAGE, NEW_IMAGE = "vllm/vllm-openai:v0.10.2", "vllm/vllm-openai:v0.11.0"
REGIONS = ("us-east-1", "us-west-2")


def _base() -> tuple[list[Obj], Obj, Obj]:
    """The example's shared objects, one of its clusters (with its Secret), its deployment."""
    objs = load_paths([EXAMPLE / "fleet.yaml", EXAMPLE / "deployment.yaml"])
    shared = [o for o in objs if o["kind"] not in ("InferenceCluster", "Secret", "ModelDeployment")]
    cl = next(o for o in objs if o["kind"] == "InferenceCluster")
    dep = next(o for o in objs if o["kind"] == "ModelDeployment")
    return shared, cl, dep


def _cluster(template: Obj, name: str, region: str, nodes: int) -> list[Obj]:
    cl = copy.deepcopy(template)
    cl["metadata"] = {"name": name, "labels": {"region": region}}
    cl["spec"]["existing"]["kubeconfigSecretRef"]["name"] = f"{name}-kubeconfig"
    cl["spec"]["pools"][0]["nodeCount"] = nodes
    cl["spec"]["gateway"]["address"] = f"{name}.inference.example.com"
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": f"{name}-kubeconfig", "namespace": "modelplane-system"},
        "type": "Opaque",
        "data": {"kubeconfig": "YXBpVmVyc2lvbjogdjEKa2luZDogQ29uZmlnCg=="},
    }
    return [secret, cl]


def _signals(
    name: str, cluster: str | None, revision: str, at: str, errors: int, ttft: float
) -> Obj:
    data = {
        "deployment": "ml-team/chat",
        "revision": revision,
        "requestsWaiting": "0",
        "requestsRunning": "1",
        "ttftP90Seconds": str(ttft),
        "requests": "1000",
        "errors": str(errors),
        "scrapedAt": at,
    }
    if cluster is not None:
        data["cluster"] = cluster
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": f"render-signals-{name}",
            "namespace": "ml-team",
            "labels": {"modelplane.ai/render-fixture": "signals"},
        },
        "data": data,
    }


def _with_image(dep: Obj, image: str) -> Obj:
    out = copy.deepcopy(dep)
    out["spec"]["workers"]["template"]["spec"]["containers"][0]["image"] = image
    return out


def _revision(dep: Obj) -> str:
    spec = {k: v for k, v in dep["spec"].items() if k != "crossplane"}
    return revision_of(template_of(ModelDeploymentSpec.model_validate(spec)))


@st.composite
def rollouts(draw: st.DrawFn) -> tuple[list[Obj], Obj, Obj, int]:
    """A fleet with fixtures, the deployment at the old and at the new image, its surge."""
    shared, template, dep = _base()
    n = draw(st.integers(2, 4))
    clusters = [f"c{i}" for i in range(n)]
    objs = list(shared)
    for i, name in enumerate(clusters):
        objs += _cluster(template, name, REGIONS[i % 2], draw(st.integers(1, 3)))
    old = _with_image(dep, OLD_IMAGE)
    surge = draw(st.sampled_from([1, 2, "50%"]))
    waves = draw(
        st.sampled_from(
            [
                [{"clusterSelector": {"matchLabels": {"region": REGIONS[0]}}}, {"percent": 100}],
                [{"percent": 34}, {"percent": 100}],
                [{"percent": 100}],
                [{"clusterSelector": {"matchLabels": {"region": REGIONS[1]}}}],
            ]
        )
    )
    rollout = {
        "strategy": "Progressive",
        "maxSurge": surge,
        "waves": waves,
        "analysis": {
            "durationSeconds": draw(st.sampled_from([0, 300])),
            "maxErrorRate": 0.01,
            "maxTtftP90Seconds": 1.0,
            "trafficPercent": draw(st.sampled_from([None, 10])),
        },
        "onFailure": "Rollback",
    }
    rollout["analysis"] = {k: v for k, v in rollout["analysis"].items() if v is not None}
    old["spec"]["replicas"] = draw(st.integers(1, 4))
    old["spec"]["rollout"] = rollout
    new = _with_image(old, NEW_IMAGE)
    objs.append(_signals("old", None, _revision(old), "2026-11-01T01:00:00Z", 1, 0.5))
    for i, name in enumerate(clusters):
        errors = draw(st.sampled_from([0, 2, 2, 2, 2, 50]))
        ttft = draw(st.sampled_from([0.4, 0.4, 0.4, 0.4, 2.0]))
        at = f"2026-11-01T0{2 + i}:00:00Z"
        objs.append(_signals(f"new-{name}", name, _revision(new), at, errors, ttft))
    want = old["spec"]["replicas"]
    absolute = surge if isinstance(surge, int) else max(1, -(-int(surge[:-1]) * want // 100))
    return objs, old, new, absolute


def _mine(plane: ControlPlane, kind: str) -> list[Obj]:
    return [
        o
        for o in plane.store.list(c.API_VERSION, kind)
        if (o.get("metadata") or {}).get("labels", {}).get(c.LABEL_DEPLOYMENT) == "chat"
    ]


def _leaving(plane: ControlPlane) -> int:
    """Replaced replicas leaving the routes (a `drainMessage` says what each waits for):
    not counted against maxSurge, as a Deployment's terminating Pods are not."""
    found = plane.store.list(c.API_VERSION, "ModelDeployment")
    placements = [p for d in found for p in (d.get("status") or {}).get("placements") or []]
    return sum(1 for p in placements if p.get("drainMessage"))


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rollouts())
def test_a_rollout_or_rollback_never_leaves_the_model_without_endpoints(
    case: tuple[list[Obj], Obj, Obj, int],
) -> None:
    objs, old, new, surge = case
    want = old["spec"]["replicas"]
    plane = ControlPlane([*objs, old])
    plane.run(80)
    seen: dict[str, int] = {"ready": 0, "rounds": 0}

    def check(_: object) -> None:
        ready = [
            e for e in _mine(plane, "ModelEndpoint") if is_condition_true(e, c.CONDITION_READY)
        ]
        replicas = _mine(plane, "ModelReplica")
        seen["rounds"] += 1
        if seen["ready"]:
            assert ready, f"round {seen['rounds']}: no Ready endpoint"
        seen["ready"] = max(seen["ready"], len(ready))
        assert len(replicas) - _leaving(plane) <= want + surge, (
            f"round {seen['rounds']}: {len(replicas)} replicas, {_leaving(plane)} leaving"
        )

    check(None)
    stored = plane.store.get(
        next(k for k, o in plane.store.items() if o["kind"] == "ModelDeployment")
    )
    assert stored is not None
    plane.store.put({**stored, "spec": new["spec"]})
    plane.run(120, progress=check)
    final = next(o for o in plane.store.list(c.API_VERSION, "ModelDeployment"))
    rollout = final["status"]["rollout"]
    revisions = {p["revision"] for p in final["status"]["placements"]}
    if rollout["decision"] == "Complete":
        assert revisions == {_revision(new)}
    if rollout["decision"] == "RolledBack":
        assert revisions == {_revision(old)}
