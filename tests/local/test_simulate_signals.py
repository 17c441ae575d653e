"""The render's `signals` fixture: what the simulated agent reports per replica (issue 30).

Hand-built stores: ModelReplicas of ml-team/chat on cluster `east` (Ready, routed
through a Ready ModelEndpoint), labelled with their revision, a `signals`
fixture, and the inventory Object the simulated agent writes its summary into.
"""

from __future__ import annotations

from typing import Any

from modelplane.api import constants as c
from modelplane.compose.clusters.inventory import inventory_observation, observed_inventory
from modelplane.local.conditions import Clock
from modelplane.local.passes import Passes
from modelplane.local.simulate_cloud import simulate_cloud
from modelplane.local.store import Key, ObjectStore

READY = [{"type": "Ready", "status": "True", "reason": "Ready", "message": ""}]


def _replica(name: str, revision: str | None) -> dict[str, Any]:
    labels = {} if revision is None else {"modelplane.ai/revision": revision}
    return {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "ModelReplica",
        "metadata": {"name": name, "namespace": "ml-team", "labels": labels},
        "spec": {"clusterName": "east", "deploymentName": "chat"},
        "status": {"conditions": READY},
    }


def _store(fixture: dict[str, str], replicas: dict[str, str | None]) -> ObjectStore:
    store = ObjectStore()
    for name, revision in replicas.items():
        store.put(_replica(name, revision))
        store.put(
            {
                "apiVersion": "modelplane.ai/v1alpha1",
                "kind": "ModelEndpoint",
                "metadata": {"name": name, "namespace": "ml-team"},
                "status": {"conditions": READY},
            }
        )
    store.put(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": "render-signals-chat",
                "namespace": "ml-team",
                "labels": {"modelplane.ai/render-fixture": "signals"},
            },
            "data": {"deployment": "ml-team/chat", "scrapedAt": "2026-11-01T01:00:00Z", **fixture},
        }
    )
    observation = inventory_observation("east", "modelplane-east")
    manifest = observation["spec"]["forProvider"]["manifest"]
    observation["status"] = {"atProvider": {"manifest": dict(manifest)}}
    store.put(observation)
    return store


def _reported(store: ObjectStore, passes: Passes | None = None) -> dict[str, dict[str, Any]]:
    """Per replica (pod label), what the simulated agent's summary says."""
    passes = passes or Passes()
    simulate_cloud(store, Clock(), passes)
    passes.settle(store)
    (observed,) = [o for o in store.objects() if o["kind"] == "Object"]
    summary, problem = observed_inventory(observed)
    assert summary is not None, problem
    return {s.replica: s.to_dict() for s in summary.replicas or []}


def test_requests_and_errors_are_each_replicas() -> None:
    store = _store(
        {"requestsWaiting": "10", "requests": "120", "errors": "3"},
        {"chat-a": None, "chat-b": None},
    )
    got = _reported(store)
    assert sorted(got) == ["chat-a", "chat-b"]
    for one in got.values():
        assert (one["requests"], one["errors"]) == (120, 3)  # each replica's, not spread
        assert one["requestsWaiting"] == 5.0  # a total, spread over the two


def test_without_requests_nothing_is_reported_for_them() -> None:
    got = _reported(_store({"requestsWaiting": "4"}, {"chat-a": None}))
    assert "requests" not in got["chat-a"] and "errors" not in got["chat-a"]


def test_bad_counts_are_not_reported_and_do_not_crash() -> None:
    got = _reported(_store({"requests": "-1", "errors": "many"}, {"chat-a": None}))
    assert "requests" not in got["chat-a"] and "errors" not in got["chat-a"]


def test_a_revision_reports_only_its_replicas() -> None:
    store = _store(
        {"requestsWaiting": "10", "requests": "50", "errors": "9", "revision": "b2"},
        {"chat-a": "a1", "chat-b": "b2", "chat-c": "b2", "chat-d": None},
    )
    got = _reported(store)
    assert sorted(got) == ["chat-b", "chat-c"]
    assert [(s["requests"], s["errors"], s["requestsWaiting"]) for s in got.values()] == [
        (50, 9, 5.0),
        (50, 9, 5.0),
    ]


def test_a_replica_relabelled_to_the_revision_reports_on_the_next_pass() -> None:
    # The summary is memoized by what it is made of: a label change must reach it.
    store = _store({"requests": "7", "revision": "b2"}, {"chat-a": "a1", "chat-b": "b2"})
    passes = Passes()
    assert sorted(_reported(store, passes)) == ["chat-b"]
    key = Key(c.API_VERSION, "ModelReplica", "ml-team", "chat-a")
    relabelled = store.get(key)
    assert relabelled is not None
    relabelled = {**relabelled, "metadata": {**relabelled["metadata"]}}
    relabelled["metadata"]["labels"] = {"modelplane.ai/revision": "b2"}
    store.put(relabelled)
    assert sorted(_reported(store, passes)) == ["chat-a", "chat-b"]
