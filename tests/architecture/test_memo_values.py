"""What a memo hands out cannot be changed by the caller who gets it.

A memo hands the same value to every caller of the same key: a caller that
changed it in place would change what every later caller gets. So every value
a registered memo hands out is read-only (a frozen model or dataclass, a
tuple, a `FrozenDict`, a `ReadOnlyDict`, a `MappingProxyType`), or each caller gets a copy of
its own. One check per entry of `api.memo.MEMOS`: it takes a value the memo
hands out, tries to change it, and requires that the change raises or does not
reach the next caller. A memo without a check fails
`test_every_memo_has_a_check`; the one exception, the shape table, says why.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from modelplane.api import constants as c
from modelplane.api.frozen import FrozenDict, frozen
from modelplane.api.memo import MEMOS, memos_on
from modelplane.api.model_deployment import ModelDeploymentSpec
from modelplane.api.readers import (
    ObservedInferenceCluster,
    read_inference_cluster,
    read_model_replica,
)
from modelplane.cli.plans import deployment_plan
from modelplane.compose import common
from modelplane.compose.clusters import drift, managed, serving_stack, sources
from modelplane.compose.deployments import endpoints, listing
from modelplane.compose.deployments.planner import DeploymentPlan
from modelplane.dra import _regex, cel
from modelplane.dra.quantity import parse_quantity
from modelplane.dra.semver import parse_semver
from modelplane.local import ControlPlane, Key, load_paths
from modelplane.local.store import ObjectStore
from modelplane.scheduling import fill, framework, ledger, matching, retain, state

ROOT = Path(__file__).resolve().parents[2]
Check = Callable[[], None]
CHANGES = (AttributeError, TypeError, ValidationError)  # what refusing a change raises

# The shape table interns published device lists: each `Shape` it hands out
# is the table's own entry, which matching fills in (its `matches`) as the
# memo's work. It is not a value handed to a caller to read but the memo's
# state, written only by `scheduling.matching`.
EXEMPT = {"scheduling.matching.SHARED": "the table's entries are the memo's own state"}


@pytest.fixture(scope="module")
def store() -> ObjectStore:
    """The quickstart, rendered: a fleet whose objects the memos read."""
    return ControlPlane(load_paths([str(ROOT / "examples" / "quickstart")])).run().store


def _objects(store: ObjectStore, kind: str) -> list[Any]:
    return [frozen(o) for o in store.list(c.API_VERSION, kind, None, None)]


def _refused(change: Callable[[], object]) -> None:
    with pytest.raises(CHANGES):
        change()


def _deployment(store: ObjectStore) -> Key:
    return next(k for k in store if k.kind == c.KIND_MODEL_DEPLOYMENT)


def _planned(store: ObjectStore) -> DeploymentPlan:
    """One deployment planned over the store, with memos on: every scheduler memo filled."""
    assert memos_on()
    key = _deployment(store)
    plan = deployment_plan(store, key.namespace, key.name)
    assert plan is not None
    return plan


# --- api ----------------------------------------------------------------------------


def _reading(store: ObjectStore) -> ObservedInferenceCluster:
    cluster = read_inference_cluster(_objects(store, c.KIND_INFERENCE_CLUSTER)[0])
    assert cluster is not None
    return cluster


def check_frozen_memoized(store: ObjectStore) -> None:
    obj = _objects(store, c.KIND_INFERENCE_CLUSTER)[0]
    cluster = read_inference_cluster(obj)
    assert cluster is not None and read_inference_cluster(obj) is cluster  # remembered
    _refused(lambda: setattr(cluster, "name", "other"))
    _refused(lambda: cluster.labels.__setitem__("x", "y"))  # type: ignore[index]
    _refused(lambda: cluster.unschedulable.clear())  # type: ignore[attr-defined]
    _refused(lambda: cluster.signals.clear())  # type: ignore[attr-defined]
    replica = read_model_replica(_objects(store, c.KIND_MODEL_REPLICA)[0])
    assert replica is not None
    _refused(lambda: setattr(replica, "ready", not replica.ready))
    spec, _ = common.parse_spec(ModelDeploymentSpec, _objects(store, c.KIND_MODEL_DEPLOYMENT)[0])
    assert spec is not None
    _refused(lambda: setattr(spec, "replicas", spec.replicas + 1))


# --- dra ----------------------------------------------------------------------------


def check_regex() -> None:
    pattern = _regex._compile("a+")
    _refused(lambda: setattr(pattern, "pattern", "b"))


def check_quantity() -> None:
    q = parse_quantity("1Gi")
    _refused(lambda: setattr(q, "unscaled", 2))


def check_semver() -> None:
    v = parse_semver("1.2.3")
    _refused(lambda: setattr(v, "major", 2))


def check_qvals() -> None:
    q = parse_quantity("3Gi")
    handed = cel._qvalue(q)
    handed.append("changed")  # the engine's own list: the caller's to change
    assert cel._qvalue(q) == handed[:2] and len(cel._qvalue(q)) == 2
    _refused(lambda: cel._qpair(q).__setitem__(0, "x"))  # type: ignore[index]


def check_svals() -> None:
    v = parse_semver("1.2.3-rc.1")
    handed = cel._svalue(v)
    handed.append("changed")
    assert len(cel._svalue(v)) == 2
    _refused(lambda: cel._spair(v).__setitem__(0, "x"))  # type: ignore[index]


def check_version_value() -> None:
    _refused(lambda: cel._version_value("1.2.3").__setitem__(0, "x"))  # type: ignore[index]
    _refused(lambda: cel._version_value("1.2.3-rc.1").__setitem__(0, "x"))  # type: ignore[index]


def check_capacity_value() -> None:
    _refused(lambda: cel._capacity_value("80Gi").__setitem__(0, "x"))  # type: ignore[index]


def check_envs() -> None:
    envs = cel._envs()
    assert isinstance(envs, tuple)
    _refused(lambda: setattr(envs[0], "changed", True))


def check_compile() -> None:
    program = cel._compile("device.driver == 'x'")
    assert not isinstance(program, str)
    _refused(lambda: setattr(program, "expression", "true"))


def check_selector() -> None:
    selector = cel.compile_selector("device.driver == 'x'")
    _refused(lambda: setattr(selector, "expression", "true"))
    _refused(lambda: setattr(selector, "_program", None))
    assert cel.compile_selector("device.driver == 'x'").expression == "device.driver == 'x'"


# --- scheduling ---------------------------------------------------------------------


def check_role_ids(store: ObjectStore) -> None:
    _planned(store)
    ids = matching._ROLE_IDS
    assert len(ids) and all(type(ids.get(k)) is int for k in ids)


def check_cluster_pools(store: ObjectStore) -> None:
    cluster = _reading(store)
    pools = matching.cluster_pools(cluster, matching.SHARED.shapes)
    assert matching.cluster_pools(cluster, matching.SHARED.shapes) is pools  # remembered
    _refused(lambda: setattr(pools, "names", ()))
    _refused(lambda: pools.shapes.clear())  # type: ignore[attr-defined]
    _refused(lambda: pools.nodes.__setitem__("x", 1))  # type: ignore[index]
    assert isinstance(pools.names, tuple)


def check_fleet_derived(store: ObjectStore) -> None:
    _planned(store)
    table = framework.read_clusters(_objects(store, c.KIND_INFERENCE_CLUSTER))
    assert isinstance(table, framework.ClusterTable)
    _planned_over(store, table)
    assert table.derived, "nothing was remembered on the table"
    for value in _leaves(table.derived.values()):
        _refused(lambda v=value: v.__setitem__("x", 1) if hasattr(v, "__getitem__") else v.add(1))


def _planned_over(store: ObjectStore, table: framework.ClusterTable) -> None:
    """What the scheduler derives of a whole table, derived on `table`."""
    shapes = matching.SHARED.shapes
    from modelplane.scheduling import scheduler

    scheduler.fleet_pools(table, shapes)
    framework.selected(table, None)


def _leaves(values: Any) -> Iterator[Any]:
    """The containers in remembered values (tuples opened: a tuple itself is read-only)."""
    for v in values:
        if isinstance(v, tuple):
            yield from _leaves(v)
        elif isinstance(v, (dict, list, set)) or hasattr(v, "keys"):
            yield v


def check_clusters_table(store: ObjectStore) -> None:
    objects = _objects(store, c.KIND_INFERENCE_CLUSTER)
    table = framework.read_clusters(objects)
    assert framework.read_clusters(objects) is table  # remembered
    name = next(iter(table))
    _refused(lambda: table.__setitem__(name, table[name]))  # type: ignore[index]
    _refused(lambda: table.pop(name))  # type: ignore[attr-defined]
    _refused(lambda: table.update({}))  # type: ignore[attr-defined]
    copied = dict(table)
    copied.pop(name)
    assert name in framework.read_clusters(objects)


def check_replicas(store: ObjectStore) -> None:
    _planned(store)
    held = framework._REPLICAS._value
    assert isinstance(held, tuple) and held
    _refused(lambda: setattr(held[0], "ready", True))


def check_losers(store: ObjectStore) -> None:
    _planned(store)
    assert isinstance(retain._LOSERS._losers, tuple)


def check_fleet_runs(store: ObjectStore) -> None:
    _planned(store)
    runs = fill._FLEET_RUNS._runs
    _refused(lambda: runs.clear())  # type: ignore[attr-defined]
    _refused(lambda: runs.__setitem__(("x", "y"), None))  # type: ignore[index]


def check_by_order(store: ObjectStore) -> None:
    _planned(store)
    order = state._BY_ORDER._order
    assert isinstance(order.by_order, tuple) and order.by_order
    _refused(lambda: order.owned.clear())  # type: ignore[attr-defined]
    assert all(isinstance(v, tuple) for v in order.owned.values())
    _refused(lambda: setattr(order, "by_order", ()))


def check_pool_losers(store: ObjectStore) -> None:
    plan = _planned(store)
    held = [
        entry
        for cl in plan.input.clusters.values()
        for entry in cl.derived.get("retain.losers", {}).values()
    ]
    assert held, "no pool's losers were remembered"
    assert all(isinstance(entry[3], tuple) for entry in held)


def check_replays() -> None:
    charges = [(((1,),), 1, 1)]
    first = ledger.replayed((2,), 2, False, charges)  # type: ignore[arg-type]
    after = dict(first.free)
    first.free.clear()  # a ledger is the caller's: restored from a copy
    second = ledger.replayed((2,), 2, False, charges)  # type: ignore[arg-type]
    assert second.free == after


# --- compose ------------------------------------------------------------------------


def check_parser() -> None:
    found = common._parser(ModelDeploymentSpec)
    assert isinstance(found, tuple)


def check_parsed(store: ObjectStore) -> None:
    obj = _objects(store, c.KIND_MODEL_DEPLOYMENT)[0]
    plain = {**obj, "spec": dict(obj["spec"])}  # not read-only: parsed by content alone
    spec, _ = common.parse_spec(ModelDeploymentSpec, plain)
    again, _ = common.parse_spec(ModelDeploymentSpec, {**plain, "spec": dict(plain["spec"])})
    assert spec is not None and again is spec  # one model for equal content
    _refused(lambda: setattr(spec, "replicas", 99))
    _refused(lambda: setattr(spec.workers, "count", 99))


def check_compared() -> None:
    from modelplane.api.inference_class import Device
    from modelplane.api.inventory import DeviceShape

    device = Device.model_validate(
        {"name": "gpu", "driver": "gpu.nvidia.com", "deviceClassName": "gpu.nvidia.com", "count": 8}
    )
    shape = DeviceShape.model_validate(
        {"driver": "gpu.nvidia.com", "devicesPerNode": 4, "nodes": 1}
    )
    handed = drift._compared(device, shape)
    before = list(handed)
    handed.clear()
    assert drift._compared(device, shape) == before


def _copied(memo: Any, derive: Callable[[], Any]) -> None:
    first = memo.get(("test", "copied"), derive)
    expected = derive()
    first.clear()
    assert memo.get(("test", "copied"), derive) == expected


def check_stack_specs() -> None:
    _copied(sources._STACK_SPECS, lambda: {"a": [1, {"b": 2}]})


def check_fixed() -> None:
    _copied(serving_stack._FIXED, lambda: {"releases": [{"name": "x"}]})


def check_as_label() -> None:
    assert isinstance(managed._as_label("replica-east-0"), str)


def check_listings(store: ObjectStore) -> None:
    listed = _objects(store, c.KIND_MODEL_REPLICA)
    index = listing.listing(listed)
    assert listing.listing(listed) is index  # remembered
    _refused(lambda: index.by_id.clear())  # type: ignore[attr-defined]
    _refused(lambda: setattr(index, "unnamed", ()))


def check_valid_url() -> None:
    assert isinstance(endpoints._valid_url("http://10.0.0.1:8000"), bool)


def check_cached_property(store: ObjectStore) -> None:
    cluster = _reading(store)
    assert isinstance(cluster.packing, str) and isinstance(cluster.has_unknown_pools, bool)
    replica = read_model_replica(_objects(store, c.KIND_MODEL_REPLICA)[0])
    assert replica is not None and isinstance(replica.order, tuple)  # a NamedTuple


CHECKS: dict[str, Callable[..., None]] = {
    "api.frozen.memoized": check_frozen_memoized,
    "dra._regex._compile": check_regex,
    "dra.quantity.parse_quantity": check_quantity,
    "dra.semver.parse_semver": check_semver,
    "dra.cel._QVALS": check_qvals,
    "dra.cel._SVALS": check_svals,
    "dra.cel._version_value": check_version_value,
    "dra.cel._capacity_value": check_capacity_value,
    "dra.cel._envs": check_envs,
    "dra.cel._compile": check_compile,
    "dra.cel._selector": check_selector,
    "scheduling.matching._ROLE_IDS": check_role_ids,
    "scheduling.matching.cluster_pools": check_cluster_pools,
    "scheduling.framework.fleet_derived": check_fleet_derived,
    "scheduling.framework._CLUSTERS": check_clusters_table,
    "scheduling.framework._REPLICAS": check_replicas,
    "scheduling.retain._LOSERS": check_losers,
    "scheduling.fill._FLEET_RUNS": check_fleet_runs,
    "scheduling.state._BY_ORDER": check_by_order,
    "scheduling.retain._pool_losers": check_pool_losers,
    "scheduling.ledger._REPLAYS": check_replays,
    "compose.common._parser": check_parser,
    "compose.common._PARSED": check_parsed,
    "compose.clusters.drift._COMPARED": check_compared,
    "compose.clusters.sources._STACK_SPECS": check_stack_specs,
    "compose.clusters.serving_stack._FIXED": check_fixed,
    "compose.clusters.managed._as_label": check_as_label,
    "compose.deployments.listing._LISTINGS": check_listings,
    "compose.deployments.endpoints._valid_url": check_valid_url,
    "api.readers.ObservedInferenceCluster.packing": check_cached_property,
    "api.readers.ObservedInferenceCluster.has_unknown_pools": check_cached_property,
    "api.readers.ObservedModelReplica.order": check_cached_property,
}


def test_every_memo_has_a_check() -> None:
    names = {m.name for m in MEMOS}
    assert names - set(EXEMPT) == set(CHECKS), "a memo without a check, or a check of no memo"


@pytest.mark.parametrize("name", sorted(CHECKS))
def test_a_value_handed_out_cannot_be_changed(name: str, request: pytest.FixtureRequest) -> None:
    check = CHECKS[name]
    if "store" in check.__code__.co_varnames[: check.__code__.co_argcount]:
        check(request.getfixturevalue("store"))
    else:
        check()


def test_a_frozen_dict_of_a_reading_still_reads_as_a_dict() -> None:
    """The read-only containers are dicts to every reader (isinstance, equality, json)."""
    labels = FrozenDict({"a": "b"})
    assert isinstance(labels, dict) and labels == {"a": "b"}
    assert dataclasses.is_dataclass(ObservedInferenceCluster)
