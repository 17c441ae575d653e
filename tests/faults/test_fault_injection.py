"""Fault injection: render the quickstart to a steady state, inject one fault, render again.

The promise under test is SPEC §3.3 and §9: an ordinary edit or a fault the
control plane cannot verify never tears down a Ready serving replica. The
steady state is what `modelplane render examples/quickstart --output-dir DIR`
writes under DIR/control-plane; each fault edits that snapshot (or the
function's wire messages, for faults an edit to the snapshot cannot express
because a composer rewrites them every round) and the snapshot is rendered
again through the same loader and embedded control plane the CLI uses.

A workload is lost when a ModelReplica that was Ready before the fault is gone
from the store afterwards, or when the provider-kubernetes Object wrapping its
Deployment/LeaderWorkerSet is (the engine deletes what a composer leaves out
of its desired state, as Crossplane does).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import crossplane.function.proto.v1.run_function_pb2 as fnv1
import pytest
from click.testing import CliRunner

from modelplane.cli.main import cli
from modelplane.crossplane import FunctionRunner
from modelplane.crossplane.convert import dict_to_struct, struct_to_dict
from modelplane.local import ControlPlane, NotConvergedError, RenderResult, load_paths
from modelplane.local.output import dump_yaml

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "examples" / "quickstart"
API = "modelplane.ai/v1alpha1"
WORKLOAD_KINDS = {"Deployment", "LeaderWorkerSet"}
# The quickstart's steady state: qwen-small on both clusters' l4 pools, llama-70b on
# eu-west-h100's h100 pool, all three Ready.
READY_REPLICAS = 3

Obj = dict[str, Any]
Edit = Callable[[list[Obj]], list[Obj]]


# ── The steady state ────────────────────────────────────────────────────────


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The control-plane snapshot `render --output-dir` writes for the quickstart."""
    out = tmp_path_factory.mktemp("quickstart")
    res = CliRunner().invoke(
        cli, ["render", str(QUICKSTART), "-o", "json", "--output-dir", str(out)]
    )
    assert res.exit_code == 0, res.output
    return out / "control-plane"


def _ready(obj: Obj) -> bool:
    conditions = (obj.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _key(obj: Obj) -> tuple[str, str, str, str]:
    m = obj.get("metadata") or {}
    return (obj["apiVersion"], obj["kind"], m.get("namespace") or "", m["name"])


def _workloads(objects: list[Obj]) -> dict[tuple[str, str], set[tuple[str, str, str, str]]]:
    """Ready ModelReplica (namespace, name) → keys of the Objects wrapping its workload."""
    by_key = {_key(o): o for o in objects}
    out: dict[tuple[str, str], set[tuple[str, str, str, str]]] = {}
    for o in objects:
        if o["apiVersion"] != API or o["kind"] != "ModelReplica" or not _ready(o):
            continue
        m = o["metadata"]
        wrapped = set()
        for ref in (o.get("spec") or {}).get("crossplane", {}).get("resourceRefs", []):
            key = (ref["apiVersion"], ref["kind"], m["namespace"], ref["name"])
            obj = by_key.get(key)
            manifest = ((obj or {}).get("spec") or {}).get("forProvider", {}).get("manifest", {})
            if ref["kind"] == "Object" and manifest.get("kind") in WORKLOAD_KINDS:
                wrapped.add(key)
        out[(m["namespace"], m["name"])] = wrapped
    return out


def _lost(before: list[Obj], after: list[Obj]) -> list[str]:
    """The Ready workloads of `before` that `after` no longer holds."""
    keys = {_key(o) for o in after}
    lost = []
    for (ns, name), wrapped in sorted(_workloads(before).items()):
        if (API, "ModelReplica", ns, name) not in keys:
            lost.append(f"{ns}/{name}")
        elif not wrapped <= keys:
            lost.append(f"{ns}/{name} (workload Object)")
    return lost


def _render(objects: list[Obj], tmp: Path, runner: FunctionRunner | None = None) -> RenderResult:
    """Write a snapshot and render it as `modelplane render` would."""
    path = tmp / "snapshot.yaml"
    path.write_text(dump_yaml(objects), encoding="utf-8")
    try:
        return ControlPlane(load_paths([path]), runner=runner).run()
    except NotConvergedError as err:  # judged on the state reached, like the CLI's output dir
        return err.result


# ── Faults: edits to the snapshot ───────────────────────────────────────────


def _find(objects: list[Obj], kind: str, name: str) -> Obj:
    found = [o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name]
    assert len(found) == 1, f"{kind} {name} not in the snapshot"
    return found[0]


def delete(kind: str, name: str) -> Edit:
    """Delete one object."""

    def edit(objects: list[Obj]) -> list[Obj]:
        gone = _find(objects, kind, name)
        return [o for o in objects if o is not gone]

    return edit


def rename_pool_class(cluster: str, pool: str, class_name: str) -> Edit:
    """Point a pool at a class that does not exist (a typo)."""

    def edit(objects: list[Obj]) -> list[Obj]:
        spec = _find(objects, "InferenceCluster", cluster)["spec"]
        [target] = [p for p in spec["pools"] if p["name"] == pool]
        target["className"] = class_name
        return objects

    return edit


def set_driver_version(class_name: str, version: str) -> Edit:
    """Give every device of a class that has one a new driverVersion attribute."""

    def edit(objects: list[Obj]) -> list[Obj]:
        for device in _find(objects, "InferenceClass", class_name)["spec"]["devices"]:
            if "driverVersion" in device.get("attributes", {}):
                device["attributes"]["driverVersion"] = {"version": version}
        return objects

    return edit


def provider_config_of(cluster: str) -> Edit:
    """Delete the ClusterProviderConfig a cluster publishes."""

    def edit(objects: list[Obj]) -> list[Obj]:
        name = _find(objects, "InferenceCluster", cluster)["status"]["providerConfigName"]
        return delete("ClusterProviderConfig", name)(objects)

    return edit


# ── Faults: the function's wire messages ────────────────────────────────────

Mutate = Callable[[Obj], bool]  # edits a status in place; False when it does not apply


class FaultyRunner(FunctionRunner):
    """The function, with one fault applied to its requests or responses.

    `status` rewrites the status a composite of `kind` named `name` reports
    (every round, so no composer can repair it); `ready` overrides its
    readiness; `required` rewrites the required resources a composite of `kind`
    receives (name → objects).
    """

    def __init__(
        self,
        kind: str,
        name: str | None = None,
        *,
        status: Mutate | None = None,
        ready: bool | None = None,
        required: Callable[[dict[str, list[Obj]]], dict[str, list[Obj]]] | None = None,
    ) -> None:
        super().__init__(log_errors=False)
        self.kind, self.name = kind, name
        self.status, self.ready, self.required = status, ready, required
        self.applied = 0  # calls the fault changed (a fault that never applies proves nothing)

    def _targets(self, xr: Obj) -> bool:
        meta = xr.get("metadata") or {}
        return xr.get("kind") == self.kind and self.name in (None, meta.get("name"))

    async def RunFunction(  # noqa: N802  # the gRPC method name
        self, req: fnv1.RunFunctionRequest, context: Any
    ) -> fnv1.RunFunctionResponse:
        """Run the real function, faulted where this runner targets."""
        target = self._targets(struct_to_dict(req.observed.composite.resource))
        if target and self.required is not None:
            self._rewrite_required(req)
        rsp = await super().RunFunction(req, context)
        if target and self.status is not None:
            desired = struct_to_dict(rsp.desired.composite.resource)
            if self.status(desired.setdefault("status", {})):
                self.applied += 1
                rsp.desired.composite.resource.CopyFrom(dict_to_struct(desired))
        if target and self.ready is not None:
            self.applied += 1
            rsp.desired.composite.ready = fnv1.READY_TRUE if self.ready else fnv1.READY_FALSE
        return rsp

    def _rewrite_required(self, req: fnv1.RunFunctionRequest) -> None:
        assert self.required is not None
        current = {
            name: [struct_to_dict(r.resource) for r in resources.items]
            for name, resources in req.required_resources.items()
        }
        if not current:
            return  # the first call of a reconcile: nothing fetched yet
        rewritten = self.required(current)
        self.applied += 1
        req.required_resources.clear()
        for name, objs in rewritten.items():
            items = req.required_resources[name].items
            for obj in objs:
                items.append(fnv1.Resource(resource=dict_to_struct(obj)))


def pool_status(cluster: str, pool: str, change: Callable[[Obj], Any]) -> FaultyRunner:
    """Publish one pool of a cluster malformed: `change` edits (or replaces) the entry."""

    def mutate(status: Obj) -> bool:
        # Calls that answer only with requirements publish no pools yet.
        pools = status.get("gpuPools") or []
        for i, p in enumerate(pools):
            if isinstance(p, dict) and p.get("name") == pool:
                replaced = change(p)
                if replaced is not None:
                    pools[i] = replaced
                return True
        return False

    return FaultyRunner("InferenceCluster", cluster, status=mutate)


def first_device(change: Callable[[Obj], None]) -> Callable[[Obj], None]:
    """Edit the first device of a published pool."""

    def edit(pool: Obj) -> None:
        change(pool["devices"][0])

    return edit


def _set(path: tuple[str, ...], value: Any) -> Callable[[Obj], None]:
    def edit(obj: Obj) -> None:
        for k in path[:-1]:
            obj = obj[k]
        obj[path[-1]] = value

    return edit


def drop_required(required: dict[str, list[Obj]]) -> dict[str, list[Obj]]:
    """Every requirement unresolved, as on a call before the control plane fetched them."""
    return {}


def duplicate_required(required: dict[str, list[Obj]]) -> dict[str, list[Obj]]:
    """Every required object delivered twice."""
    return {k: [*v, *copy.deepcopy(v)] for k, v in required.items()}


# ── The table ───────────────────────────────────────────────────────────────


@dataclass(frozen=True)
class Fault:
    """One fault: an edit to the snapshot, or a faulted function runner."""

    edit: Edit | None = None
    runner: Callable[[], FunctionRunner] | None = None


MEMORY = ("capacity", "memory", "value")
PRODUCT = ("attributes", "productName")

# Faults that tear down a Ready replica today (issue 10, "retain when you cannot
# verify"). Each is strict: once the fix lands it XPASSes and fails the suite,
# so the marker must go.


# The XRD's semver pattern refuses a leading zero (570.124.06) before any composer
# sees it; a version past uint64 passes the pattern but not the DRA CEL layer, so the
# class composer refuses the class and its pools become unknown.
UNREADABLE_VERSION = "18446744073709551616.0.0"


FAULTS = [
    pytest.param(Fault(), id="no-fault"),
    # The InferenceClass side.
    pytest.param(
        Fault(edit=delete("InferenceClass", "l4-1x")),
        id="class-deleted-l4-1x",
    ),
    pytest.param(
        Fault(edit=delete("InferenceClass", "h100-8x-ib")),
        id="class-deleted-h100",
    ),
    pytest.param(
        Fault(edit=rename_pool_class("eu-west-h100", "l4", "l4-2x")),
        id="class-misnamed-eu-west-h100-l4",
    ),
    pytest.param(
        Fault(edit=rename_pool_class("us-east-l4", "l4", "l4-2x")),
        id="class-misnamed-us-east-l4-l4",
    ),
    pytest.param(
        Fault(edit=set_driver_version("l4-1x", UNREADABLE_VERSION)),
        id="class-driver-version-unparsable-l4-1x",
    ),
    pytest.param(
        Fault(edit=set_driver_version("h100-8x-ib", UNREADABLE_VERSION)),
        id="class-driver-version-unparsable-h100",
    ),
    # Malformed published devices (status.gpuPools of eu-west-h100's l4 pool).
    pytest.param(
        Fault(
            runner=lambda: pool_status("eu-west-h100", "l4", first_device(_set(MEMORY, "24 GB")))
        ),
        id="published-capacity-unparsable",
    ),
    pytest.param(
        Fault(runner=lambda: pool_status("eu-west-h100", "l4", first_device(_set(MEMORY, 24)))),
        id="published-capacity-not-a-string",
    ),
    pytest.param(
        Fault(
            runner=lambda: pool_status(
                "eu-west-h100", "l4", first_device(_set(("capacity", "memory"), "23034Mi"))
            )
        ),
        id="published-capacity-bare-quantity",
    ),
    pytest.param(
        Fault(
            runner=lambda: pool_status(
                "eu-west-h100", "l4", first_device(_set(("capacity",), ["23034Mi"]))
            )
        ),
        id="published-capacity-not-a-map",
    ),
    pytest.param(
        Fault(
            runner=lambda: pool_status(
                "eu-west-h100", "l4", first_device(_set(PRODUCT, {"string": 4}))
            )
        ),
        id="published-attribute-wrong-type",
    ),
    pytest.param(
        Fault(
            runner=lambda: pool_status(
                "eu-west-h100", "l4", first_device(_set(PRODUCT, {"bytes": "NVIDIA L4"}))
            )
        ),
        id="published-attribute-unknown-kind",
    ),
    pytest.param(
        Fault(
            runner=lambda: pool_status(
                "eu-west-h100",
                "l4",
                first_device(_set(("attributes", "driverVersion"), {"version": "570.124.06"})),
            )
        ),
        id="published-attribute-version-unparsable",
    ),
    pytest.param(
        Fault(runner=lambda: pool_status("eu-west-h100", "l4", _set(("devices",), "gpu"))),
        id="published-devices-not-a-list",
    ),
    pytest.param(
        Fault(runner=lambda: pool_status("eu-west-h100", "l4", _set(("devices",), ["gpu"]))),
        id="published-device-not-an-object",
    ),
    pytest.param(
        Fault(runner=lambda: pool_status("eu-west-h100", "l4", lambda p: "l4")),
        id="published-pool-not-an-object",
    ),
    pytest.param(
        Fault(runner=lambda: pool_status("eu-west-h100", "l4", _set(("nodes",), "two"))),
        id="published-nodes-not-a-number",
    ),
    # The cluster side.
    pytest.param(
        Fault(runner=lambda: FaultyRunner("InferenceCluster", "eu-west-h100", ready=False)),
        id="cluster-not-ready-eu-west-h100",
    ),
    pytest.param(
        Fault(runner=lambda: FaultyRunner("InferenceCluster", "us-east-l4", ready=False)),
        id="cluster-not-ready-us-east-l4",
    ),
    pytest.param(
        Fault(edit=delete("Secret", "eu-west-h100-kubeconfig")),
        id="kubeconfig-secret-deleted-eu-west-h100",
    ),
    pytest.param(
        Fault(edit=delete("Secret", "us-east-l4-kubeconfig")),
        id="kubeconfig-secret-deleted-us-east-l4",
    ),
    pytest.param(
        Fault(edit=provider_config_of("eu-west-h100")), id="provider-config-deleted-eu-west-h100"
    ),
    pytest.param(
        Fault(edit=provider_config_of("us-east-l4")), id="provider-config-deleted-us-east-l4"
    ),
    # Required resources not yet fetched, or delivered twice.
    *(
        pytest.param(
            Fault(runner=lambda kind=kind, how=how: FaultyRunner(kind, required=how)),
            id=f"required-{label}-{kind}",
        )
        for kind in ("InferenceCluster", "ModelDeployment", "ModelReplica")
        for label, how in (("missing", drop_required), ("duplicated", duplicate_required))
    ),
]


@pytest.mark.parametrize("fault", FAULTS)
def test_fault_loses_no_ready_workload(
    fault: Fault, snapshot: Path, tmp_path: Path, request: pytest.FixtureRequest, fault_log: Any
) -> None:
    before = load_paths([snapshot])
    assert len(_workloads(before)) == READY_REPLICAS
    assert all(_workloads(before).values()), "every Ready replica wraps a workload Object"
    objects = copy.deepcopy(before)
    if fault.edit is not None:
        objects = fault.edit(objects)
    runner = fault.runner() if fault.runner is not None else None
    after = _render(objects, tmp_path, runner).store.objects()
    if isinstance(runner, FaultyRunner):
        assert runner.applied > 0, "the fault never applied"
    lost = _lost(before, after)
    fault_log.record(request.node.callspec.id, lost, request.node.get_closest_marker("xfail"))
    assert lost == []


# ── The harness can fail ────────────────────────────────────────────────────


def test_harness_counts_a_scaled_down_replica_as_lost(snapshot: Path, tmp_path: Path) -> None:
    # Scaling down is a legitimate teardown; here it proves the count is not vacuous.
    before = load_paths([snapshot])
    objects = copy.deepcopy(before)
    _find(objects, "ModelDeployment", "qwen-small")["spec"]["replicas"] = 1
    lost = _lost(before, _render(objects, tmp_path).store.objects())
    assert len(lost) == 1
    assert lost[0].startswith("ml-team/qwen-small-")


def test_harness_counts_a_deleted_workload_object_as_lost(snapshot: Path) -> None:
    before = load_paths([snapshot])
    [(replica, wrapped)] = [
        (k, v) for k, v in _workloads(before).items() if k[1].startswith("llama-70b-")
    ]
    after = [o for o in before if _key(o) not in wrapped]
    assert _lost(before, after) == [f"{replica[0]}/{replica[1]} (workload Object)"]
