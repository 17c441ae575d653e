"""docs/serving-stack.md's kind table against a render of every example: no kind reaches a
cluster that nothing installed there serves."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from modelplane.api import constants as c
from modelplane.api.frozen import thaw
from modelplane.api.readers import read_inference_cluster
from modelplane.api.serving_stack import COMPONENT_RELEASES, ServingStackSpec
from modelplane.compose.clusters.stack.charts import charts
from modelplane.local import ControlPlane, load_paths
from modelplane.local.engine import RenderResult
from modelplane.local.output import cluster_manifests

ROOT = Path(__file__).resolve().parent.parent.parent
TABLE = ROOT / "docs" / "serving-stack.md"
# A scenario is a folder holding manifests directly (as .ci/run renders them).
SCENARIOS = sorted({p.parent for p in (ROOT / "examples").rglob("*.yaml")})
ROW = re.compile(r"^\| `([^`]+)` \| (\w+) \| [^|]+ \| (.+) \|$")


def installers() -> dict[tuple[str, str], list[str]]:
    """(group, kind) → its installers, parsed from the doc's table."""
    out: dict[tuple[str, str], list[str]] = {}
    for line in TABLE.read_text(encoding="utf-8").splitlines():
        m = ROW.match(line)
        if m:
            group = "" if m.group(1) == "core" else m.group(1)
            out[(group, m.group(2))] = re.findall(r"`([^`]+)`", m.group(3))
    return out


def _group(api_version: str) -> str:
    return api_version.rsplit("/", 1)[0] if "/" in api_version else ""


@cache
def _render(scenario: Path) -> RenderResult:
    return ControlPlane(load_paths([scenario]), simulate=True).run(50)


def _clusters_by_provider_config(result: RenderResult) -> dict[str, str]:
    out = {}
    for obj in result.store.list(c.API_VERSION, "InferenceCluster"):
        cluster = read_inference_cluster(obj)
        if cluster is not None and cluster.provider_config_name:
            out[cluster.provider_config_name] = cluster.name
    return out


def _present_charts(result: RenderResult) -> dict[str, set[str]]:
    """Per cluster, `chart:<name>` of each component it already runs (servingStack.present):
    the stack checks it is there instead of installing it, so it serves the same kinds;
    and `present:Dynamo` where the platform team runs Dynamo (servingStack.dynamo.present)."""
    by_key = {chart.key: chart.name for chart, _ in charts(ServingStackSpec(
        cluster_name="x", provider_config_name="x"))}  # fmt: skip
    out: dict[str, set[str]] = {}
    for obj in result.store.list(c.API_VERSION, "InferenceCluster"):
        stack = (obj.get("spec") or {}).get("servingStack") or {}
        names = {f"chart:{by_key[COMPONENT_RELEASES[p]]}" for p in stack.get("present") or []}
        if (stack.get("dynamo") or {}).get("present") is True:
            names.add("present:Dynamo")
        out[obj["metadata"]["name"]] = names
    return out


def installed(result: RenderResult, present: bool = True) -> dict[str, set[str]]:
    """Per cluster, what the render installs there: `chart:<name>`, `crd:<name>`, and
    (with `present`) the charts of the components it already runs."""
    by_pc = _clusters_by_provider_config(result)
    out: dict[str, set[str]] = _present_charts(result) if present else {}
    for obj in result.store.objects():
        if obj.get("kind") != "Release" or _group(obj["apiVersion"]) != "helm.m.crossplane.io":
            continue
        pc = obj["spec"]["providerConfigRef"]["name"]
        chart = obj["spec"]["forProvider"]["chart"]["name"]
        out.setdefault(by_pc.get(pc, pc), set()).add(f"chart:{chart}")
    for cluster, manifest in cluster_manifests(result):
        if manifest["kind"] == "CustomResourceDefinition":
            out.setdefault(cluster, set()).add(f"crd:{manifest['metadata']['name']}")
    return out


def _kinds_sent(manifest: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(group, kind, what) of the manifest and of each kind it routes to."""
    name = f"{manifest['kind']} {manifest['metadata'].get('name')}"
    out = [(_group(manifest["apiVersion"]), manifest["kind"], name)]
    if manifest["kind"] == "HTTPRoute":
        for rule in manifest["spec"].get("rules") or []:
            for ref in rule.get("backendRefs") or []:
                kind = ref.get("kind", "Service")
                out.append((ref.get("group", ""), kind, f"{name} backendRef {kind}"))
    return out


def _platform_stacks(result: RenderResult) -> set[str]:
    """Clusters whose serving stack the platform team runs (Modelplane installs none)."""
    return {
        str(o["metadata"]["name"])
        for o in result.store.objects()
        if o.get("kind") == "InferenceCluster"
        and ((o.get("spec") or {}).get("servingStack") or {}).get("enabled") is False
    }


def unserved(result: RenderResult, present: bool = True) -> list[str]:
    """Every kind that reaches a cluster with no table row or a missing installer."""
    table, have = installers(), installed(result, present)
    problems = []
    for cluster, manifest in cluster_manifests(result):
        for group, kind, what in _kinds_sent(manifest):
            row = table.get((group, kind))
            if row is None:
                problems.append(f"{cluster}: {what}: {group or 'core'}/{kind} is not in the table")
                continue
            if cluster in _platform_stacks(result):
                continue  # `servingStack.enabled: false`: the platform installs the stack
            missing = [i for i in row if i != "kubernetes" and i not in have.get(cluster, set())]
            if missing:
                problems.append(f"{cluster}: {what}: nothing installs {', '.join(missing)}")
    return problems


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_kind_a_cluster_receives_is_served_there(scenario: Path) -> None:
    result = _render(scenario)
    assert cluster_manifests(result), "nothing reached a cluster: nothing checked"
    assert unserved(result) == []


def test_the_required_examples_are_covered() -> None:
    # The scenarios the table must hold for: KServe, disaggregation, each scheduler.
    names = {str(p.relative_to(ROOT)) for p in SCENARIOS}
    assert {
        "examples/kserve/single-gpu",
        "examples/kserve/multi-node",
        "examples/kserve/disaggregated",
        "examples/workloads/disaggregated",
        "examples/scheduling/disaggregated",
        "examples/workloads/kai",
        "examples/workloads/volcano",
        "examples/workloads/kueue",
        "examples/workloads/dynamo",
    } <= names
    kinds = {
        (_group(m["apiVersion"]), m["kind"])
        for s in (ROOT / "examples/workloads/kai", ROOT / "examples/workloads/kueue")
        for _, m in cluster_manifests(_render(s))
    }
    assert {("scheduling.run.ai", "Queue"), ("kueue.x-k8s.io", "LocalQueue")} <= kinds


def test_a_brownfield_cluster_is_served_by_what_it_already_runs() -> None:
    """examples/brownfield installs no cert-manager, NFD or Envoy Gateway (they are
    present); its Issuers, Certificates and Gateway are served by those, and without
    the present components counted the same render is refused."""
    result = _render(ROOT / "examples" / "brownfield")
    assert unserved(result) == []
    releases = {o["spec"]["forProvider"]["chart"]["name"] for o in result.store.objects()
                if o.get("kind") == "Release"}  # fmt: skip
    assert not {"cert-manager", "node-feature-discovery", "gateway-helm"} & releases
    refused = unserved(result, present=False)
    assert any("nothing installs chart:cert-manager" in p for p in refused)
    assert any("nothing installs chart:gateway-helm" in p for p in refused)


def test_a_dynamo_cluster_is_served_by_the_dynamo_its_platform_team_runs() -> None:
    """examples/workloads/dynamo installs nothing of Dynamo; its DynamoGraphDeployments are
    served by the Dynamo the cluster declares present, and without it counted the same
    render is refused for exactly those."""
    result = _render(ROOT / "examples" / "workloads" / "dynamo")
    assert unserved(result) == []
    graphs = [m for _, m in cluster_manifests(result) if m["kind"] == "DynamoGraphDeployment"]
    assert len(graphs) == 3
    refused = unserved(result, present=False)
    assert len(refused) == 3
    assert all("DynamoGraphDeployment" in p and "present:Dynamo" in p for p in refused)


def test_the_check_fails_when_an_installer_is_missing() -> None:
    # The same KAI render, with the KAI release taken away, is refused.
    result = _render(ROOT / "examples" / "workloads" / "kai")
    assert unserved(result) == []
    kai = [
        o
        for o in result.store.objects()
        if o.get("kind") == "Release"
        and o["spec"]["forProvider"]["chart"]["name"] == "kai-scheduler"
    ]
    assert len(kai) == 1
    # A composed object's spec is stored read-only: the edit replaces it.
    release = kai[0]
    spec = release["spec"]
    release["spec"] = thaw(spec)
    release["spec"]["forProvider"]["chart"]["name"] = "not-kai"
    try:
        problems = unserved(result)
    finally:
        release["spec"] = spec
    assert problems and all("nothing installs chart:kai-scheduler" in p for p in problems)
    assert {p.split(": ")[1].split(" ")[0] for p in problems} == {"PodGroup", "Queue"}
