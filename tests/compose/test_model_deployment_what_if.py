"""The what-if answer where people read it: status.unschedulable and the Scheduled condition."""

from __future__ import annotations

from pathlib import Path

from modelplane.api import constants as c
from modelplane.local import ControlPlane, Key, load_paths

ROOT = Path(__file__).resolve().parents[2]
UNPLACEABLE = ROOT / "examples" / "operations" / "unplaceable"


def _status(name: str) -> dict:
    store = ControlPlane(load_paths([str(UNPLACEABLE)])).run(50).store
    obj = store.get(Key(c.API_VERSION, "ModelDeployment", "ml-team", name))
    assert obj is not None
    return obj["status"]


def test_status_and_condition_carry_the_smallest_change() -> None:
    status = _status("llama-70b")
    what_if = {u["cluster"]: u.get("whatIf") for u in status["unschedulable"]}
    assert what_if == {
        "us-east-1a": "add 2 nodes to pool h100 to place 2 more replicas",
        "us-west-2a": "add 2 nodes to pool h100 to place 2 more replicas",
        "eu-west-1a": None,  # no pool matches: growing its L4 pool cannot help
    }
    (scheduled,) = [x for x in status["conditions"] if x["type"] == c.CONDITION_SCHEDULED]
    assert scheduled["reason"] == "Partial"
    assert scheduled["message"].startswith(
        "placed 2 of 4 replicas: add 2 nodes to pool h100 on cluster us-east-1a to place "
        "2 more replicas (1 other cluster(s) could be grown instead); "
    )


def test_a_stocked_out_pool_is_named_never_grown(tmp_path: Path) -> None:
    """examples/clusters with llama-70b asking for 6 replicas: eu-west's a100 pool
    (2 nodes at most, 2 replicas each) takes 4; us-east's h100 pool is stocked out
    (its fixture), so no answer adds h100 nodes there: its entry names the
    stock-out and the condition offers the next-best pool, eu-west's a100, past its
    maxNodeCount, which it says to raise."""
    import yaml

    docs = []
    for path in sorted((ROOT / "examples" / "clusters").glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if (
                doc
                and doc.get("kind") == "ModelDeployment"
                and doc["metadata"]["name"] == "llama-70b"
            ):
                doc["spec"]["replicas"] = 6
            if doc:
                docs.append(doc)
    (tmp_path / "all.yaml").write_text(yaml.safe_dump_all(docs))
    store = ControlPlane(load_paths([str(tmp_path)])).run(50).store
    obj = store.get(Key(c.API_VERSION, "ModelDeployment", "ml-team", "llama-70b"))
    assert obj is not None
    what_if = {u["cluster"]: u.get("whatIf") for u in obj["status"]["unschedulable"]}
    assert what_if["us-east"].startswith("pool h100 cannot grow (cloud stock-out: ")
    assert what_if["us-east"].endswith(": adding nodes cannot help until the cloud has capacity")
    # a100 already counts its maxNodeCount (2) of nodes: the node added is past it.
    assert what_if["eu-west"] == (
        "add 1 node to pool a100 (past its maxNodeCount 2: raise it to 3) to place 2 more replicas"
    )
    (scheduled,) = [x for x in obj["status"]["conditions"] if x["type"] == c.CONDITION_SCHEDULED]
    assert scheduled["message"].startswith(
        "placed 4 of 6 replicas: pool h100 on cluster us-east cannot grow (cloud stock-out: "
    )
    assert (
        "; instead add 1 node to pool a100 (past its maxNodeCount 2: raise it to 3) on cluster "
        "eu-west to place 2 more replicas" in (scheduled["message"])
    )
    assert "to pool h100" not in scheduled["message"]
