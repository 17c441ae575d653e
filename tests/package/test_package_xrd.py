"""The generated XRDs, Compositions and package metadata, checked against hand-written facts."""

from __future__ import annotations

import dataclasses
import re
import types
import typing
from pathlib import Path
from typing import Any, Literal

import pytest
from pydantic import BaseModel, Field
from pydantic.fields import FieldInfo

from modelplane import __version__
from modelplane.api import constants as c
from modelplane.api.clouds import CLOUDS
from modelplane.api.common import KubeModel, cel_rules
from modelplane.api.kinds import KINDS, MODEL_DEPLOYMENT, Kind, PrinterColumn
from modelplane.api.xrd import (
    DEFAULT_FUNCTION_PACKAGE,
    UPJET_PROVIDERS,
    SchemaError,
    activation_policy,
    api_reference,
    composition,
    configuration,
    function_package_meta,
    installed_name,
    model_schema,
    package_files,
    repository_path,
    to_dns_label,
    upjet_packages,
    xrd,
)
from modelplane.local import ControlPlane, load_paths

BY_KIND = {k.kind: k for k in KINDS}
FORBIDDEN_KEYWORDS = {
    "$ref",
    "$defs",
    "anyOf",
    "oneOf",
    "allOf",
    "not",
    "title",
    "patternProperties",
    "propertyNames",
    "const",
    "nullable",
}


def _root(kind: Kind) -> dict[str, Any]:
    (version,) = xrd(kind)["spec"]["versions"]
    return version["schema"]["openAPIV3Schema"]


def _walk(node: dict[str, Any], path: str = "") -> typing.Iterator[tuple[str, dict[str, Any]]]:
    yield path, node
    for name, sub in node.get("properties", {}).items():
        yield from _walk(sub, f"{path}.{name}")
    if isinstance(node.get("items"), dict):
        yield from _walk(node["items"], f"{path}[]")
    if isinstance(node.get("additionalProperties"), dict):
        yield from _walk(node["additionalProperties"], f"{path}{{}}")


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.kind)
def test_every_schema_node_is_structural(kind: Kind) -> None:
    nodes = list(_walk(_root(kind)))
    # Guards against an empty walk; the smallest kind (ModelEndpoint) has 10 nodes.
    assert len(nodes) >= 10
    for path, node in nodes:
        assert not FORBIDDEN_KEYWORDS & set(node), f"{kind.kind}{path}: {set(node)}"
        # Kubernetes' IntOrString is the one structural node without a type.
        typed = "type" in node or node.get("x-kubernetes-int-or-string") is True
        assert typed, f"{kind.kind}{path} has no type"
        if "properties" in node or "additionalProperties" in node:
            assert node["type"] == "object", f"{kind.kind}{path}"
        assert not ("properties" in node and "additionalProperties" in node), path
        assert node.get("additionalProperties", {}) is not False, path
        for req in node.get("required", []):
            assert req in node["properties"], f"{kind.kind}{path}: required {req} undeclared"
        if node.get("type") == "array":
            assert isinstance(node["items"], dict), path


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.kind)
def test_crossplane_owned_fields_are_left_to_crossplane(kind: Kind) -> None:
    root = _root(kind)
    assert root["required"] == ["spec"]
    assert "crossplane" not in root["properties"]["spec"]["properties"]
    assert "conditions" not in root["properties"]["status"]["properties"]
    # Status is written by the function after pydantic validation: no CEL there.
    for path, node in _walk(root["properties"]["status"]):
        assert "x-kubernetes-validations" not in node, path


_SELF_PATH = re.compile(r"\bself((?:\.\w+)+)(\()?")


def _undeclared_reads(node: dict[str, Any]) -> list[str]:
    """Field paths a node's CEL rules read through `self.` that its schema does not declare.

    The API server type-checks rules against declared properties only; data kept
    by x-kubernetes-preserve-unknown-fields is invisible to CEL, so such a rule
    makes the whole CRD invalid.
    """
    bad = []
    for rule in node.get("x-kubernetes-validations", []):
        for m in _SELF_PATH.finditer(rule["rule"]):
            segments = m.group(1)[1:].split(".")
            if m.group(2):  # the last segment is a method call: self.devices.all(...)
                segments = segments[:-1]
            # At the schema root the API server declares ObjectMeta's name and
            # generateName itself; nothing else of metadata is visible.
            if "spec" in node.get("properties", {}) and segments[:2] in (
                ["metadata", "name"],
                ["metadata", "generateName"],
            ):
                continue
            cur = node
            for seg in segments:
                if seg not in cur.get("properties", {}):
                    bad.append(f"self.{'.'.join(segments)} ({rule['rule']})")
                    break
                cur = cur["properties"][seg]
    return bad


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.kind)
def test_every_field_has_a_description_for_kubectl_explain(kind: Kind) -> None:
    root = _root(kind)
    missing = [
        path
        for top in ("spec", "status")
        for path, node in _walk(root["properties"][top], top)
        if path != top and not path.endswith(("[]", "{}")) and not node.get("description")
    ]
    assert missing == []


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.kind)
def test_api_reference_lists_every_field_with_its_xrd_description(kind: Kind) -> None:
    text = api_reference()
    section = text.split(f"\n## {kind.kind}\n", 1)[1].split("\n## ", 1)[0]
    rows = 0
    for top in ("spec", "status"):
        for path, node in _walk(_root(kind)["properties"][top], top):
            if path == top or path.endswith(("[]", "{}")):
                continue  # list items and map values are described by their field
            rows += 1
            (row,) = [line for line in section.splitlines() if line.startswith(f"| `{path}` |")]
            description = node["description"].replace("<", "&lt;").replace(">", "&gt;")
            assert row.endswith(f" | {description} |"), row
    assert rows > 0, "no field walked: nothing checked"


def _walk_with_ancestors(
    node: dict[str, Any], path: str = "", ancestors: tuple[tuple[str, dict[str, Any]], ...] = ()
) -> typing.Iterator[tuple[str, dict[str, Any], tuple[tuple[str, dict[str, Any]], ...]]]:
    yield path, node, ancestors
    here = (*ancestors, (path, node))
    for name, sub in node.get("properties", {}).items():
        yield from _walk_with_ancestors(sub, f"{path}.{name}", here)
    if isinstance(node.get("items"), dict):
        yield from _walk_with_ancestors(node["items"], f"{path}[]", here)
    if isinstance(node.get("additionalProperties"), dict):
        yield from _walk_with_ancestors(node["additionalProperties"], f"{path}{{}}", here)


def _unbounded(node: dict[str, Any]) -> str | None:
    """The bound a list, map or string node lacks (the API server's CEL cost estimate
    multiplies by it), or None."""
    if node.get("type") == "array" and "maxItems" not in node:
        return "maxItems"
    if isinstance(node.get("additionalProperties"), dict) and "maxProperties" not in node:
        return "maxProperties"
    if node.get("type") == "string" and "maxLength" not in node and "enum" not in node:
        return "maxLength"
    return None


def _rule_reads(node: dict[str, Any]) -> typing.Iterator[tuple[str, dict[str, Any]]]:
    """Every declared node a node's CEL rules read through `self.`, with the fields of
    the items of a list they read (a macro such as `all` visits each item)."""
    for rule in node.get("x-kubernetes-validations", []):
        for m in _SELF_PATH.finditer(rule["rule"]):
            cur, trail = node, ""
            for seg in m.group(1)[1:].split("."):
                if seg not in cur.get("properties", {}):
                    break
                cur, trail = cur["properties"][seg], f"{trail}.{seg}"
                yield trail, cur
                items = cur.get("items") if cur.get("type") == "array" else None
                for name, sub in (items or {}).get("properties", {}).items():
                    yield f"{trail}[].{name}", sub


def _cel_bound_violations(root: dict[str, Any]) -> list[str]:
    bad = []
    for path, node, ancestors in _walk_with_ancestors(root):
        if not node.get("x-kubernetes-validations"):
            continue
        for where, ancestor in ancestors:
            missing = _unbounded(ancestor) if ancestor.get("type") != "string" else None
            if missing:
                bad.append(f"{where or '<root>'}: {missing} (holds rules at {path})")
        for read, sub in _rule_reads(node):
            missing = _unbounded(sub)
            if missing:
                bad.append(f"{path}{read}: {missing} (read by a rule)")
    return sorted(set(bad))


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.kind)
def test_everything_a_cel_rule_iterates_is_bounded(kind: Kind) -> None:
    # Without maxItems / maxProperties / maxLength the API server's cost estimate
    # for a rule is unbounded and it refuses the CRD (or the rule) outright.
    assert _cel_bound_violations(_root(kind)) == []


def test_cel_bound_walk_flags_an_unbounded_list_holding_rules() -> None:
    rule = {"rule": "self.k.size() > 0"}
    bounded = {"type": "string", "maxLength": 8}
    root = {
        "type": "object",
        "properties": {
            "terms": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"k": {"type": "string"}, "b": bounded},
                    "x-kubernetes-validations": [rule],
                },
            }
        },
    }
    assert _cel_bound_violations(root) == [
        ".terms: maxItems (holds rules at .terms[])",
        ".terms[].k: maxLength (read by a rule)",
    ]


def test_undeclared_reads_flags_fields_hidden_by_preserve_unknown_fields() -> None:
    node = {
        "type": "object",
        "properties": {"t": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
        "x-kubernetes-validations": [{"rule": "has(self.t) && self.t.spec.size() == 1"}],
    }
    assert _undeclared_reads(node) == [
        "self.t.spec (has(self.t) && self.t.spec.size() == 1)",
    ]


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.kind)
def test_cel_rules_read_only_declared_fields(kind: Kind) -> None:
    rules = 0
    for path, node in _walk(_root(kind)):
        rules += len(node.get("x-kubernetes-validations", []))
        assert _undeclared_reads(node) == [], path
    assert rules > 0


# (kind, wire path, required, default) — written from SPEC §2, not from the models.
PARITY = [
    ("InferenceClass", "spec.devices", True, None),
    ("InferenceClass", "spec.devices[].name", True, None),
    ("InferenceClass", "spec.devices[].driver", True, None),
    ("InferenceClass", "spec.devices[].claim", False, "DRA"),
    ("InferenceClass", "spec.devices[].count", False, 1),
    ("InferenceClass", "spec.devices[].deviceClassName", False, None),
    ("InferenceClass", "spec.provisioning", False, None),
    ("InferenceClass", "spec.provisioning.provider", True, None),
    ("InferenceCluster", "spec.source", True, None),
    ("InferenceCluster", "spec.pools", True, None),
    ("InferenceCluster", "spec.pools[].className", True, None),
    ("InferenceCluster", "spec.pools[].maxNodeCount", False, None),
    ("InferenceCluster", "spec.existing.kubeconfigSecretRef", True, None),
    ("InferenceCluster", "spec.existing.kubeconfigSecretRef.key", False, "kubeconfig"),
    ("InferenceCluster", "spec.eks.kubernetesVersion", False, "1.36"),
    ("InferenceCluster", "spec.taints[].effect", True, None),
    ("ModelDeployment", "spec.replicas", False, 1),
    ("ModelDeployment", "spec.nodeSelector", False, None),
    ("ModelDeployment", "spec.nodeSelector.devices", True, None),
    ("ModelDeployment", "spec.nodeSelector.devices[].count", False, 1),
    ("ModelDeployment", "spec.workers.count", False, 1),
    ("ModelDeployment", "spec.workers.template", True, None),
    ("ModelDeployment", "spec.prefill.workers.topology.dataLocal", False, 1),
    (
        "ModelDeployment",
        "spec.workers.topology",
        False,
        {"tensor": 1, "pipeline": 1, "data": 1, "dataLocal": 1},
    ),
    ("ModelDeployment", "spec.tolerations[].operator", False, "Equal"),
    ("ModelReplica", "spec.deploymentName", True, None),
    ("ModelReplica", "spec.clusterName", True, None),
    ("ModelReplica", "spec.index", True, None),
    ("ModelReplica", "spec.prefill.nodePoolName", True, None),
    ("ModelReplica", "spec.prefill.deviceRequests", False, []),
    ("ModelReplica", "spec.prefill.deviceRequests[].deviceClassName", True, None),
]


def _xrd_field(kind: Kind, path: str) -> tuple[dict[str, Any], bool]:
    """The schema node at a wire path and whether its parent requires it."""
    node = _root(kind)
    required = False
    for seg in path.split("."):
        items = seg.endswith("[]")
        name = seg.removesuffix("[]")
        required = name in node.get("required", [])
        node = node["properties"][name]
        if items:
            node = node["items"]
    return node, required


def _unwrap(tp: Any) -> Any:
    """Strip Optional, list and Annotated wrappers down to the element type."""
    while True:
        origin = typing.get_origin(tp)
        if origin is typing.Annotated:
            tp = typing.get_args(tp)[0]
        elif origin in (typing.Union, types.UnionType):
            (tp,) = [a for a in typing.get_args(tp) if a is not type(None)]
        elif origin is list:
            tp = typing.get_args(tp)[0]
        else:
            return tp


def _pydantic_field(kind: Kind, path: str) -> FieldInfo:
    """The pydantic field at a wire path (camelCase segments, `[]` for list items)."""
    segments = path.split(".")
    assert segments[0] == "spec"
    model: Any = kind.spec
    info: FieldInfo | None = None
    for seg in segments[1:]:
        name = seg.removesuffix("[]")
        matches = [f for f in model.model_fields.values() if (f.alias or "") == name]
        matches += [f for n, f in model.model_fields.items() if n == name and f.alias is None]
        assert len(matches) == 1, f"{path}: no field {name} on {model.__name__}"
        info = matches[0]
        model = _unwrap(info.annotation)
    assert info is not None
    return info


@pytest.mark.parametrize(("kind_name", "path", "required", "default"), PARITY)
def test_required_and_defaults_match_pydantic(
    kind_name: str, path: str, required: bool, default: Any
) -> None:
    kind = BY_KIND[kind_name]
    node, xrd_required = _xrd_field(kind, path)
    assert xrd_required is required
    assert node.get("default") == default

    info = _pydantic_field(kind, path)
    assert info.is_required() is required
    if not required:
        value = info.get_default(call_default_factory=True)
        if isinstance(value, BaseModel):
            value = value.model_dump(by_alias=True, mode="json")
        assert value == default


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.kind)
def test_no_printer_column_is_named_like_crossplanes(kind: Kind) -> None:
    # Crossplane appends SYNCED, READY, COMPOSITION, COMPOSITIONREVISION and AGE
    # to every XR's CRD (crossplane-runtime v2.3.3 pkg/xcrd, CompositeResourcePrinterColumns).
    (version,) = xrd(kind)["spec"]["versions"]
    names = {col["name"].upper() for col in version.get("additionalPrinterColumns", [])}
    assert names.isdisjoint({"SYNCED", "READY", "COMPOSITION", "COMPOSITIONREVISION", "AGE"})


def test_a_column_named_like_crossplanes_is_refused() -> None:
    kind = dataclasses.replace(
        MODEL_DEPLOYMENT, printer_columns=(PrinterColumn("Ready", ".status.readyReplicas"),)
    )
    with pytest.raises(SchemaError, match="'Ready' is Crossplane's"):
        xrd(kind)


# (kind, scope, short name, printer column names, scale)
SHAPES = [
    ("InferenceClass", "Cluster", "iclass", ["Provider", "Devices"], None),
    ("InferenceCluster", "Cluster", "icluster", ["Source", "Provider-Config"], None),
    (
        "ModelDeployment",
        "Namespaced",
        "mdep",
        ["Desired", "Placed", "Ready-Replicas", "Scheduled"],
        {".spec.replicas", ".status.replicas"},
    ),
    ("ModelReplica", "Namespaced", "mrep", ["Deployment", "Cluster", "Index", "Pool"], None),
]


@pytest.mark.parametrize(("kind_name", "scope", "short", "columns", "scale"), SHAPES)
def test_xrd_names_scope_columns_and_scale(
    kind_name: str, scope: str, short: str, columns: list[str], scale: set[str] | None
) -> None:
    doc = xrd(BY_KIND[kind_name])
    assert doc["apiVersion"] == "apiextensions.crossplane.io/v2"
    assert doc["kind"] == "CompositeResourceDefinition"
    spec = doc["spec"]
    assert doc["metadata"]["name"] == f"{spec['names']['plural']}.modelplane.ai"
    assert spec["group"] == "modelplane.ai"
    assert spec["scope"] == scope
    assert spec["names"]["kind"] == kind_name
    assert spec["names"]["shortNames"] == [short]
    assert "modelplane" in spec["names"]["categories"]
    (version,) = spec["versions"]
    assert (version["name"], version["served"], version["referenceable"]) == (
        "v1alpha1",
        True,
        True,
    )
    # Crossplane appends SYNCED/READY/COMPOSITION/AGE itself; ours must not repeat them.
    assert [col["name"] for col in version["additionalPrinterColumns"]] == columns
    if scale is None:
        assert "subresources" not in version
    else:
        got = version["subresources"]["scale"]
        assert {got["specReplicasPath"], got["statusReplicasPath"]} == scale


def test_scale_paths_point_at_integer_fields() -> None:
    root = _root(MODEL_DEPLOYMENT)
    scale = xrd(MODEL_DEPLOYMENT)["spec"]["versions"][0]["subresources"]["scale"]
    for key in ("specReplicasPath", "statusReplicasPath"):
        top, name = scale[key].lstrip(".").split(".")
        assert root["properties"][top]["properties"][name]["type"] == "integer"
    if "labelSelectorPath" in scale:
        top, name = scale["labelSelectorPath"].lstrip(".").split(".")
        assert root["properties"][top]["properties"][name]["type"] == "string"


# SPEC §2: the provisioning and serving-stack kinds are internal, in their own group.
INTERNAL_INFRA_KINDS = {cloud.composite_kind for cloud in CLOUDS} | {"ServingStack"}


def test_internal_kinds_are_namespaced_in_the_infrastructure_group() -> None:
    internal = {k.kind: k for k in KINDS if k.group == c.INFRA_GROUP}
    assert set(internal) == INTERNAL_INFRA_KINDS
    assert {k.scope for k in internal.values()} == {"Namespaced"}


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.kind)
def test_composition_is_one_pipeline_step_calling_the_function(kind: Kind) -> None:
    doc = composition(kind)
    assert doc["apiVersion"] == "apiextensions.crossplane.io/v1"
    group = c.INFRA_GROUP if kind.kind in INTERNAL_INFRA_KINDS else c.GROUP
    assert doc["spec"]["compositeTypeRef"] == {
        "apiVersion": f"{group}/{c.VERSION}",
        "kind": kind.kind,
    }
    assert doc["spec"]["mode"] == "Pipeline"
    step: dict[str, Any] = {
        "step": "compose",
        "functionRef": {"name": "modelplane-function-modelplane"},
        # The image the package runs, which the composers place on clusters too.
        "input": {
            "apiVersion": "fn.modelplane.ai/v1alpha1",
            "kind": "Input",
            "image": f"xpkg.crossplane.io/modelplane/function-modelplane:v{__version__}",
        },
    }
    if kind.kind == "ModelDeployment":
        # What its composer reads at every call, fetched before the first
        # (tests/crossplane/test_up_front.py).
        step["requirements"] = {
            "requiredResources": [
                {
                    "requirementName": "up-front-inference-clusters",
                    "apiVersion": "modelplane.ai/v1alpha1",
                    "kind": "InferenceCluster",
                },
                {
                    "requirementName": "up-front-model-replicas",
                    "apiVersion": "modelplane.ai/v1alpha1",
                    "kind": "ModelReplica",
                    "matchLabels": {"app.kubernetes.io/managed-by": "modelplane"},
                },
                {
                    "requirementName": "up-front-fleet-quotas",
                    "apiVersion": "modelplane.ai/v1alpha1",
                    "kind": "FleetQuota",
                },
            ]
        }
    assert doc["spec"]["pipeline"] == [step]
    assert xrd(kind)["spec"]["defaultCompositionRef"] == {"name": doc["metadata"]["name"]}


def test_configuration_declares_crossplane_and_its_dependencies() -> None:
    doc = configuration()
    assert (doc["apiVersion"], doc["kind"]) == ("meta.pkg.crossplane.io/v1", "Configuration")
    assert doc["spec"]["crossplane"] == {"version": ">=v2.3.0, <v3.0.0"}
    deps = {d.get("function") or d.get("provider"): d["version"] for d in doc["spec"]["dependsOn"]}
    assert deps == {
        "xpkg.crossplane.io/modelplane/function-modelplane": ">=v0.1.0, <v0.2.0",
        "xpkg.crossplane.io/crossplane-contrib/provider-kubernetes": ">=v1.2.1, <v2.0.0",
        # The InferenceGateway installs Envoy Gateway through a Release.
        "xpkg.crossplane.io/crossplane-contrib/provider-helm": ">=v1.3.0, <v2.0.0",
        # EKSCluster / GKECluster / AKSCluster: the upjet family providers, at the
        # release the conformance CRDs come from (v2.6.0) up to the next major.
        **{
            f"xpkg.upbound.io/upbound/provider-{service}": ">=v2.6.0, <v3.0.0"
            for service in (
                "aws-eks",
                "aws-ec2",
                "aws-iam",
                "aws-efs",
                "gcp-container",
                "gcp-compute",
                "gcp-cloudplatform",
                "azure-containerservice",
                "azure-network",
                "azure-managedidentity",
                "azure-authorization",
                "azure-azure",
            )
        },
    }
    fn = function_package_meta()
    assert (fn["apiVersion"], fn["kind"]) == ("meta.pkg.crossplane.io/v1", "Function")
    assert fn["metadata"]["name"] == "function-modelplane"


def test_activation_policy_activates_what_the_composers_emit() -> None:
    policy = activation_policy()
    assert policy["kind"] == "ManagedResourceActivationPolicy"
    activate = policy["spec"]["activate"]
    # provider-kubernetes' namespaced Object: every composed workload object;
    # provider-helm's Release: the serving stack.
    assert activate[:2] == ["objects.kubernetes.m.crossplane.io", "releases.helm.m.crossplane.io"]
    # Provisioning: only the v2 namespaced upjet groups.
    clouds = (".aws.m.upbound.io", ".gcp.m.upbound.io", "azure.m.upbound.io")
    assert all(a.endswith(clouds) for a in activate[2:])


# xpkg.ToDNSLabel's own test table (crossplane-runtime v2.3.3 pkg/xpkg/name_test.go)
# plus repository paths worked out by hand from go-containerregistry v0.21.6.
@pytest.mark.parametrize(
    ("value", "label"),
    [
        ("-hi/my.name/is-", "hi-my-name-is"),
        ("a" * 64, "a" * 63),
        ("a" * 60 + "----", "a" * 60),
        ("Upper/Case_x", "pper-asex"),
    ],
)
def test_to_dns_label_matches_crossplane(value: str, label: str) -> None:
    assert to_dns_label(value) == label


@pytest.mark.parametrize(
    ("ref", "path"),
    [
        ("xpkg.crossplane.io/modelplane/function-modelplane", "modelplane/function-modelplane"),
        ("localhost:5000/fn", "fn"),
        ("docker.io/fn", "library/fn"),
        ("acme/fn", "acme/fn"),
        ("fn", "library/fn"),
        ("registry.example.com/a/b/c", "a/b/c"),
    ],
)
def test_repository_path_matches_go_containerregistry(ref: str, path: str) -> None:
    assert repository_path(ref) == path


def test_installed_name_of_the_default_package() -> None:
    assert installed_name(DEFAULT_FUNCTION_PACKAGE) == "modelplane-function-modelplane"


def test_package_files_layout_and_determinism() -> None:
    files = package_files()
    assert files == package_files()
    expected = {
        "configuration/crossplane.yaml",
        "configuration/activation-policy.yaml",
        "function/crossplane.yaml",
        "rbac/roles.yaml",  # beside the package roots, applied apart (docs/security.md)
    }
    for plural in (
        "inferenceclasses",
        "inferenceclusters",
        "modeldeployments",
        "modelreplicas",
        "eksclusters",
        "gkeclusters",
        "aksclusters",
        "servingstacks",
        "modelcaches",
        "fleetquotas",
        "modelendpoints",
        "modelservices",
        "inferencegateways",
    ):
        base = f"configuration/apis/{plural}"
        expected |= {f"{base}/definition.yaml", f"{base}/composition.yaml"}
    assert set(files) == expected
    for text in files.values():
        assert text.startswith("# Generated by `modelplane package build`")
        assert "&id" not in text and "*id" not in text  # no YAML anchors


# A tiny model exercising each rewrite, with its structural schema written by hand.
class _Inner(KubeModel):
    """Inner docs."""

    model_config = KubeModel.model_config | {"json_schema_extra": cel_rules(("true", "m"))}

    n: int = Field(default=2, ge=0)


class _Outer(KubeModel):
    """Outer docs."""

    maybe: int | None = None
    ratio: float = Field(default=0.5, gt=0, lt=1)
    fixed: Literal["X"] = "X"
    labels: dict[str, str] | None = None
    inner: _Inner = Field(default_factory=_Inner, description="Field docs.")
    items: list[_Inner] = Field(min_length=1)
    blob: dict[str, Any] = Field(json_schema_extra={"x-kubernetes-preserve-unknown-fields": True})


def test_model_schema_rewrites_pydantic_into_structural_form() -> None:
    inner = {
        "description": "Inner docs.",
        "type": "object",
        "properties": {"n": {"type": "integer", "minimum": 0, "default": 2}},
        "x-kubernetes-validations": [{"message": "m", "rule": "true"}],
    }
    assert model_schema(_Outer) == {
        "description": "Outer docs.",
        "type": "object",
        "properties": {
            "maybe": {"type": "integer"},
            "ratio": {
                "type": "number",
                "default": 0.5,
                "minimum": 0,
                "exclusiveMinimum": True,
                "maximum": 1,
                "exclusiveMaximum": True,
            },
            "fixed": {"enum": ["X"], "type": "string", "default": "X"},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "inner": {**inner, "description": "Field docs.", "default": {"n": 2}},
            "items": {"type": "array", "minItems": 1, "items": inner},
            "blob": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        },
        "required": ["items", "blob"],
    }
    no_cel = model_schema(_Outer, cel=False, omit=frozenset({"items"}))
    assert "items" not in no_cel["properties"]
    assert no_cel["required"] == ["blob"]
    assert "x-kubernetes-validations" not in no_cel["properties"]["inner"]


class _Union(KubeModel):
    value: int | str


def test_model_schema_rejects_real_unions() -> None:
    with pytest.raises(SchemaError, match="value"):
        model_schema(_Union)


def test_activation_policy_covers_every_managed_resource_a_render_composes() -> None:
    # Independent of the policy's source: what the composers emit for the quickstart
    # fleet, the routing example and the provisioned clusters. Provider configs are
    # not managed resources (no ManagedResourceDefinition), nor are Crossplane's Usages.
    root = Path(__file__).resolve().parent.parent.parent
    emitted = set()
    for example in ("quickstart", "routing", "clusters"):
        result = ControlPlane(load_paths([root / "examples" / example]), simulate=True).run(50)
        for xr in result.composites():
            for obj in result.composed_of(xr):
                group = obj["apiVersion"].split("/")[0]
                managed = group.endswith((".m.crossplane.io", ".m.upbound.io"))
                if managed and not obj["kind"].endswith("ProviderConfig"):
                    kind = obj["kind"].lower()
                    # English plurals as the CRDs spell them: accessentries, natgateways.
                    consonant_y = kind.endswith("y") and kind[-2] not in "aeiou"
                    plural = f"{kind[:-1]}ies" if consonant_y else f"{kind}s"
                    emitted.add(f"{plural}.{group}")
    assert emitted == set(activation_policy()["spec"]["activate"])


def test_each_activated_upjet_kind_is_served_by_the_provider_package_depended_on() -> None:
    # Against the upjet CRDs the oracles hold (provider-upjet-aws/gcp v2.6.0): the
    # CRD of every activated `<plural>.<group>` exists, spells that plural, and its
    # group `<service>.<cloud>.m.upbound.io` is the family member
    # `provider-<cloud>-<service>` the Configuration depends on (a cloud's own
    # group `<cloud>.m.upbound.io`, Azure's ResourceGroup, is `provider-<cloud>-<cloud>`).
    import yaml
    from oracles import CONFORMANCE

    crds = CONFORMANCE / "crds"
    if not crds.is_dir():
        pytest.skip("schema oracles not found at ../shared/conformance")
    packages = {p.rsplit("/", 1)[1] for p, _ in upjet_packages()}
    for package, mrds in UPJET_PROVIDERS.items():
        for mrd in mrds:
            plural, group = mrd.split(".", 1)
            parts = group.removesuffix(".m.upbound.io").split(".")
            service, cloud = parts[0], parts[-1]
            assert package == f"provider-{cloud}-{service}", mrd
            crd = yaml.safe_load(
                (crds / f"provider-upjet-{cloud}" / f"{group}_{plural}.yaml").read_text()
            )
            assert (crd["spec"]["group"], crd["spec"]["names"]["plural"]) == (group, plural)
    assert packages == set(UPJET_PROVIDERS)
    upjet = [m for m in activation_policy()["spec"]["activate"] if m.endswith(".m.upbound.io")]
    assert sorted(upjet) == sorted(m for mrds in UPJET_PROVIDERS.values() for m in mrds)
