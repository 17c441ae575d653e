"""The render's `signals` fixture: what the simulated agent reports per replica (issue 30).

Hand-built stores: ModelReplicas of ml-team/chat on cluster `east` (Ready, routed
through a Ready ModelEndpoint), labelled with their revision, a `signals`
fixture, the InferenceCluster `east` (its agent scrapes engine metrics unless a
test says otherwise) and the inventory Object the simulated agent writes its
summary into.
"""

from __future__ import annotations

from typing import Any

import pytest

from modelplane.api import constants as c
from modelplane.compose.clusters.inventory import inventory_observation, observed_inventory
from modelplane.local.conditions import Clock
from modelplane.local.passes import Passes
from modelplane.local.simulate_cloud import IgnoredSignals, ignored_signals, simulate_cloud
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


SCRAPES = {"servingStack": {"inventory": {"engineMetrics": True}}}


def _cluster(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "InferenceCluster",
        "metadata": {"name": name},
        "spec": {"source": "Existing", **spec},
    }


def _store(
    fixture: dict[str, str],
    replicas: dict[str, str | None],
    east: dict[str, Any] | None = None,
) -> ObjectStore:
    store = ObjectStore()
    store.put(_cluster("east", SCRAPES if east is None else east))
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


# (case, east's spec beyond its source, replicas the simulated agent reports).
SCRAPING = [
    ("engineMetrics true", SCRAPES, ["chat-a", "chat-b"]),
    ("no servingStack: off by default", {}, []),
    ("no inventory block: off by default", {"servingStack": {}}, []),
    ("engineMetrics false", {"servingStack": {"inventory": {"engineMetrics": False}}}, []),
    ("agent disabled", {"servingStack": {"inventory": {"enabled": False, "engineMetrics": True}}},
     []),
    # With the stack disabled, the platform team's own agent declares what it does.
    ("platform team's agent scrapes",
     {"servingStack": {"enabled": False, "inventory": {"engineMetrics": True}}},
     ["chat-a", "chat-b"]),
    # A setting that does not read is no promise that the agent scrapes.
    ("unreadable", {"servingStack": {"inventory": {"engineMetrics": "often"}}}, []),
]  # fmt: skip


@pytest.mark.parametrize(("case", "east", "reported"), SCRAPING, ids=[c[0] for c in SCRAPING])
def test_only_an_agent_that_scrapes_reports_engine_signals(
    case: str, east: dict[str, Any], reported: list[str]
) -> None:
    store = _store({"requestsWaiting": "10"}, {"chat-a": None, "chat-b": None}, east)
    assert sorted(_reported(store)) == reported


def test_a_fixture_on_a_cluster_that_does_not_scrape_is_ignored_with_a_warning() -> None:
    store = _store({"requestsWaiting": "10"}, {"chat-a": None}, {})
    assert _reported(store) == {}
    (ignored,) = ignored_signals(store)
    assert ignored == IgnoredSignals("ml-team/render-signals-chat", "ml-team/chat", "east")
    assert ignored.message == (
        "render fixture ConfigMap ml-team/render-signals-chat (signals of ml-team/chat) is "
        "ignored on cluster east: its inventory agent does not scrape engine metrics "
        "(spec.servingStack.inventory.engineMetrics is not true), so a real cluster reports "
        "no engine signal there; set it to true on InferenceCluster east for the fixture to apply"
    )


def test_a_fixture_believed_everywhere_warns_nothing() -> None:
    store = _store({"requestsWaiting": "10"}, {"chat-a": None})
    assert sorted(_reported(store)) == ["chat-a"]
    assert ignored_signals(store) == []


def test_warnings_name_each_cluster_the_fixture_speaks_for() -> None:
    # No `cluster` in the fixture: it speaks for every cluster hosting the deployment.
    store = _store({"requestsWaiting": "10"}, {"chat-a": None}, {})
    store.put(_cluster("west", SCRAPES))
    store.put(_cluster("north", {}))  # hosts nothing of ml-team/chat: not named
    west = _replica("chat-w", None)
    west["spec"] = {"clusterName": "west", "deploymentName": "chat"}
    store.put(west)
    assert [i.cluster for i in ignored_signals(store)] == ["east"]
    # A fixture naming a cluster speaks for that one alone.
    pinned = store.get(Key("v1", "ConfigMap", "ml-team", "render-signals-chat"))
    assert pinned is not None
    store.put({**pinned, "data": {**pinned["data"], "cluster": "north"}})
    assert [i.cluster for i in ignored_signals(store)] == ["north"]
