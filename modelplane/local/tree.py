"""The `tree` view of a render: every XR with its conditions, resources and events."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.console import Group, RenderableType
from rich.markup import escape
from rich.text import Text
from rich.tree import Tree

from modelplane.api import constants as c
from modelplane.api.model_cache import read_model_cache
from modelplane.api.model_service import read_service_status
from modelplane.api.objects import condition as get_condition
from modelplane.api.objects import conditions
from modelplane.api.readers import read_devices, read_inference_cluster, read_model_deployment
from modelplane.local.deletion import wave_lines
from modelplane.local.engine import RenderResult, owned_by
from modelplane.local.loader import is_composite
from modelplane.local.store import Key, Obj

_KIND_ORDER = {
    c.KIND_INFERENCE_CLASS: 0,
    c.KIND_INFERENCE_CLUSTER: 1,
    c.KIND_MODEL_DEPLOYMENT: 2,
    c.KIND_MODEL_REPLICA: 3,
}
# Routing kinds: the gateway with the fleet, then endpoints and the services over them.
_KIND_ORDER.update({c.KIND_INFERENCE_GATEWAY: 1, c.KIND_MODEL_ENDPOINT: 4, c.KIND_MODEL_SERVICE: 5})


def _status(cond: Mapping[str, Any] | None) -> str | None:
    return str(cond.get("status")) if cond else None


def _mark(status: str | None) -> str:
    if status == "True":
        return "[green]True[/]"
    if status == "False":
        return "[red]False[/]"
    return "[yellow]Unknown[/]"


def _title(obj: Obj) -> str:
    key = Key.of(obj)
    ready = get_condition(obj, c.CONDITION_READY)
    synced = get_condition(obj, c.CONDITION_SYNCED)
    return (
        f"[bold]{escape(key.kind)}[/] [cyan]{escape(str(key).split(' ', 1)[1])}[/]  "
        f"Ready={_mark(_status(ready))} "
        f"Synced={_mark(_status(synced))}"
    )


def _condition_line(cond: Mapping[str, Any]) -> str:
    message = cond.get("message") or ""
    type_, reason = escape(str(cond.get("type"))), escape(str(cond.get("reason", "")))
    text = f"{type_}={_mark(cond.get('status'))} {reason}"
    return f"{text}: {escape(message)}" if message else text


def _device_text(device: Mapping[str, Any]) -> str:
    d = read_devices([device])[0]
    claim = "DRA" if d.dra else "Synthetic"
    return f"{d.count}× {d.name} ({claim}, {d.driver})"


def _pools(node: Tree, obj: Obj) -> None:
    cluster = read_inference_cluster(obj) if obj.get("kind") == c.KIND_INFERENCE_CLUSTER else None
    if cluster is None or not (cluster.pools or cluster.unreadable):
        return
    branch = node.add("[bold]GPU pools[/]")
    for pool in cluster.pools:
        if pool.unknown is not None:
            branch.add(
                escape(
                    f"{pool.name}: class {pool.class_name}, {pool.nodes} nodes, "
                    f"unknown ({pool.unknown.reason}): {pool.unknown.message}"
                )
            )
            continue
        devices = ", ".join(_device_text(d) for d in pool.devices)
        branch.add(
            escape(f"{pool.name}: class {pool.class_name}, {pool.nodes} nodes, per node {devices}")
        )
    for problem in cluster.unreadable:
        branch.add(escape(f"unreadable: {problem}"))


def _placements(node: Tree, obj: Obj) -> None:
    if obj.get("kind") != c.KIND_MODEL_DEPLOYMENT:
        return
    status = read_model_deployment(obj).status
    if status.placements:
        branch = node.add("[bold]Placements[/]")
        for p in status.placements:
            pools = ", ".join(f"{r.role}→{r.pool}" for r in p.pools)
            ready = "[green]ready[/]" if p.ready else "[yellow]not ready[/]"
            branch.add(
                f"{escape(p.cluster)} #{p.index} {escape(pools)} ({escape(p.replica_name)}) {ready}"
            )
    if status.unschedulable:
        branch = node.add("[bold red]Unschedulable[/]")
        for r in status.unschedulable:
            branch.add(f"{escape(r.cluster)}: {escape(r.reason)}: {escape(r.message)}")
        if status.unschedulable_omitted:
            branch.add(f"… and {status.unschedulable_omitted} more cluster(s)")


def _cache_copies(node: Tree, obj: Obj) -> None:
    """A ModelCache's copy on each cluster: phase, digest, bytes, claim."""
    if obj.get("kind") != c.KIND_MODEL_CACHE:
        return
    seen = read_model_cache(obj)
    if not seen.copies and not seen.unreadable:
        return
    branch = node.add("[bold]Copies[/]")
    for copy in seen.copies:
        mark = "[green]Ready[/]" if copy.ready else f"[yellow]{escape(copy.phase)}[/]"
        facts = [f"claim {copy.claim_name}"] if copy.claim_name else []
        if copy.resolved_digest:
            facts.append(f"digest {copy.resolved_digest}")
        if copy.bytes_staged is not None:
            facts.append(f"{copy.bytes_staged} bytes")
        detail = copy.problem or copy.message
        tail = f" — {escape(detail)}" if detail else ""
        branch.add(f"{escape(copy.cluster)}: {mark} ({escape(', '.join(facts))}){tail}")
    for problem in seen.unreadable:
        branch.add(f"[red]unreadable[/] {escape(problem)}")


def _service_routes(node: Tree, obj: Obj) -> None:
    """A ModelService's address and its weighted endpoint table."""
    if obj.get("kind") != c.KIND_MODEL_SERVICE:
        return
    status = read_service_status(obj)
    if status is None:
        node.add("[red]status unreadable[/]")
        return
    address = escape(status.address) if status.address else "(none yet)"
    branch = node.add(f"[bold]Address[/] {address}")
    endpoints = status.endpoints or []
    total = sum(e.weight for e in endpoints) or 1
    for e in endpoints:
        ready = "[green]ready[/]" if e.ready else "[yellow]not ready[/]"
        share = f"{100 * e.weight / total:.1f}%"
        branch.add(f"{escape(e.name)}  weight {e.weight} ({share}) {ready}")


def _backend(node: Tree, obj: Obj) -> None:
    if obj.get("kind") != c.KIND_MODEL_REPLICA:
        return
    spec = obj.get("spec")
    backend = spec.get("backend") if isinstance(spec, dict) else None
    node.add(f"[bold]Backend[/] {escape(str(backend or c.BACKEND_NATIVE))}")


def _xr_node(result: RenderResult, obj: Obj, node: Tree) -> None:
    for type_ in (c.CONDITION_READY, c.CONDITION_SYNCED):
        cond = get_condition(obj, type_)
        if cond and cond.get("status") != "True":
            node.add(_condition_line(cond))
    for cond in conditions(obj):
        if cond.get("type") not in (c.CONDITION_READY, c.CONDITION_SYNCED):
            node.add(_condition_line(cond))
    _pools(node, obj)
    _placements(node, obj)
    _cache_copies(node, obj)
    _service_routes(node, obj)
    _backend(node, obj)
    for child in result.composed_of(obj):
        if is_composite(child["apiVersion"], child["kind"]):
            _xr_node(result, child, node.add(_title(child)))
            continue
        key = Key.of(child)
        ready = "[green]ready[/]" if result.composed_ready(child) else "[yellow]not ready[/]"
        node.add(f"{escape(key.kind)} {escape(str(key).split(' ', 1)[1])} {ready}")
    for ev in result.events.get(Key.of(obj), []):
        if ev.type == "Warning":
            node.add(f"[yellow]⚠ {escape(ev.reason)}[/]: {escape(ev.message)}")


def render_tree(result: RenderResult) -> RenderableType:
    """A rich renderable of every top-level XR with nested XRs under their parents."""
    composites = result.composites()
    nested = {Key.of(x) for x in composites for parent in composites if owned_by(x, parent)}
    roots = sorted(
        (x for x in composites if Key.of(x) not in nested),
        key=lambda x: (_KIND_ORDER.get(x["kind"], 9), Key.of(x)),
    )
    trees: list[RenderableType] = []
    for xr in roots:
        tree = Tree(_title(xr))
        _xr_node(result, xr, tree)
        trees.append(tree)
    if result.deletions or result.stuck:
        trees.append(deletion_tree(result))
    summary = Text(
        f"{len(result.store)} objects, {len(composites)} composite resources, "
        f"fixed point after {result.rounds} round(s)",
        style="dim",
    )
    return Group(*trees, summary)


def deletion_tree(result: RenderResult) -> Tree:
    """The deletion order of a render that deleted something: wave by wave, then what is stuck."""
    tree = Tree("[bold]Deletion order[/]")
    for title, lines in wave_lines(result.deletions):
        branch = tree.add(f"[bold]{escape(title)}[/]")
        for line in lines:
            branch.add(escape(line))
    for message in result.stuck:
        tree.add(f"[red]stuck[/] {escape(message)}")
    return tree
