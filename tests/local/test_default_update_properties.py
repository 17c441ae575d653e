"""The default update (rollout MakeBeforeBreak) over random fleets, on the embedded engine.

Each example builds a fleet (2–3 clusters of 1–2 single-L4 nodes, so a
cluster holds at most that many replicas, and as many replicas as nodes or
one fewer), renders a deployment with the
default rollout strategy at an old image to its fixed point, changes the
image and reconciles round by round. The embedded engine reports a workload
Ready as soon as it is applied, so a replica changed *in place* is counted
here as not serving in the round it changed (its pod restarts and reloads
the weights on a real cluster). After every round:

- the serving endpoints never drop below the Ready ones before the change
  minus `maxUnavailable`, where the fleet has a node free for a surge, and
  minus at most `max(1, maxUnavailable)` where it has none (one at a time in
  place);
- the deployment's ModelReplicas never exceed `spec.replicas + maxSurge`, besides
  replaced ones leaving the routes (`drainMessage`).

At the fixed point every replica runs the new revision.
"""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from local.test_rollout_properties import (
    NEW_IMAGE,
    OLD_IMAGE,
    REGIONS,
    _base,
    _cluster,
    _leaving,
    _mine,
    _revision,
    _with_image,
)

from modelplane.api import constants as c
from modelplane.api.objects import is_condition_true
from modelplane.local.engine import ControlPlane

Obj = dict[str, Any]


@st.composite
def updates(draw: st.DrawFn) -> tuple[list[Obj], Obj, Obj, int, int]:
    """A fleet, the deployment at the old and the new image, its node count and maxUnavailable."""
    shared, template, dep = _base()
    objs = list(shared)
    nodes = 0
    for i in range(draw(st.integers(2, 3))):
        n = draw(st.integers(1, 2))
        nodes += n
        objs += _cluster(template, f"c{i}", REGIONS[i % 2], n)
    old = _with_image(dep, OLD_IMAGE)
    # As many replicas as nodes (nothing can surge) or one fewer (one can).
    old["spec"]["replicas"] = draw(st.integers(max(1, nodes - 1), nodes))
    unavailable = draw(st.sampled_from([None, 0, 1]))
    old["spec"]["rollout"] = {} if unavailable is None else {"maxUnavailable": unavailable}
    return objs, old, _with_image(old, NEW_IMAGE), nodes, unavailable or 0


def _serving(plane: ControlPlane, before: dict[str, str]) -> tuple[int, dict[str, str]]:
    """Ready endpoints whose replica kept its revision since the last round, and the revisions."""
    now = {
        r["metadata"]["name"]: r["metadata"]["labels"].get(c.LABEL_REVISION, "")
        for r in _mine(plane, "ModelReplica")
    }
    count = 0
    for e in _mine(plane, "ModelEndpoint"):
        if not is_condition_true(e, c.CONDITION_READY):
            continue
        replica = e["metadata"]["name"]  # a replica's endpoint carries its name
        if replica in now and before.get(replica, now[replica]) == now[replica]:
            count += 1
    return count, now


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(updates())
def test_an_image_change_keeps_the_model_serving(
    case: tuple[list[Obj], Obj, Obj, int, int],
) -> None:
    objs, old, new, nodes, unavailable = case
    want = old["spec"]["replicas"]
    plane = ControlPlane([*objs, old])
    plane.run(80)
    base, revisions = _serving(plane, {})
    assert base == want, f"{base} of {want} endpoints Ready before the change"
    allowed = unavailable if nodes > want else max(1, unavailable)
    seen = {"rounds": 0, "revisions": revisions}

    def check(_: object) -> None:
        seen["rounds"] += 1
        serving, seen["revisions"] = _serving(plane, seen["revisions"])
        assert serving >= want - allowed, (
            f"round {seen['rounds']}: {serving} of {want} endpoints serve "
            f"(maxUnavailable {unavailable}, {nodes} nodes)"
        )
        assert len(_mine(plane, "ModelReplica")) - _leaving(plane) <= want + 1

    stored = plane.store.get(
        next(k for k, o in plane.store.items() if o["kind"] == "ModelDeployment")
    )
    assert stored is not None
    spec = copy.deepcopy(new["spec"])
    plane.store.put({**stored, "spec": spec})
    plane.run(120, progress=check)
    final = next(o for o in plane.store.list(c.API_VERSION, "ModelDeployment"))
    assert {p["revision"] for p in final["status"]["placements"]} == {_revision(new)}
    assert len(final["status"]["placements"]) == want
