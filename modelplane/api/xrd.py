"""Generate the Crossplane package from the API types.

Everything here is a pure function of `modelplane.api`: the XRD of each kind in
`kinds.KINDS` (a structural OpenAPI schema derived from the kind's pydantic spec
and status models), its pipeline Composition, and the package metadata. The CLI
(`modelplane package build`) writes what `package_files()` returns.

Kubernetes structural schemas forbid `$ref` and restrict `anyOf`/`oneOf`/`allOf`,
so pydantic's JSON schema is rewritten: references are inlined, `Optional[X]`
becomes `X` (simply not required), maps become `additionalProperties`, and
`x-kubernetes-*` extensions attached with `json_schema_extra` are kept.
"""

from __future__ import annotations

import json
import re
from typing import Any

import yaml
from pydantic import BaseModel
from pydantic.json_schema import GenerateJsonSchema, NoDefault
from pydantic_core import core_schema

from modelplane import __version__
from modelplane.api import constants as c
from modelplane.api.clouds import CLOUDS
from modelplane.api.common import _PATTERN_NAMES as PATTERN_NAMES
from modelplane.api.function_input import function_input
from modelplane.api.kinds import KINDS, Kind
from modelplane.api.rbac import cluster_roles

# Crossplane v2.3 is the first release whose XRDs can declare the scale
# subresource (crossplane/crossplane#7004), which ModelDeployment needs; the
# next major may drop the v2 XRD and the v1alpha1 MRAP the package ships.
CROSSPLANE_VERSION = ">=v2.3.0, <v3.0.0"
# Where the Function package is published unless `--function-package` says otherwise.
DEFAULT_FUNCTION_PACKAGE = c.FUNCTION_PACKAGE
# Semantic versioning: before 1.0 a minor release may break the function's
# contract with the XRDs, after it a major release.
_MAJOR, _MINOR = (int(x) for x in __version__.split(".")[:2])
_NEXT_BREAKING = f"v0.{_MINOR + 1}.0" if _MAJOR == 0 else f"v{_MAJOR + 1}.0.0"
FUNCTION_VERSION = f">=v{__version__}, <{_NEXT_BREAKING}"
# v1.2.1 is the first release serving the namespaced `kubernetes.m.crossplane.io`
# Object composers emit; v2 may change that API.
PROVIDER_KUBERNETES_PACKAGE = "xpkg.crossplane.io/crossplane-contrib/provider-kubernetes"
PROVIDER_KUBERNETES_VERSION = ">=v1.2.1, <v2.0.0"
# v1.3.0 serves the namespaced `helm.m.crossplane.io` Release and
# ClusterProviderConfig the serving stack and the InferenceGateway compose, with
# every field they set: v1.4.0 adds only fields they leave out (a Release's
# `ssaForceConflicts`, the `NebiusServiceAccountCredentials` identity). It is the
# release the local fleet applies the CRDs of (the Go module proxy serves no
# later one), so the fleet satisfies the requirement. v2 may change that API.
PROVIDER_HELM_PACKAGE = "xpkg.crossplane.io/crossplane-contrib/provider-helm"
PROVIDER_HELM_VERSION = ">=v1.3.0, <v2.0.0"
# The upjet family providers the clouds' composites compose through, and the
# managed resources (ManagedResourceDefinition names, `<plural>.<group>`) each
# serves, gathered from each cloud's `upjet_providers` (api/clouds/): the one
# table the Configuration's dependsOn, the activation policy and
# docs/install.md are built from. v2.6.0 is the release whose CRDs
# the conformance oracles hold (every composed resource is checked against
# them); v3 may change the namespaced `.m.` APIs. GKE's Filestore CSI driver
# provisions Filestore instances itself; the project only needs their API
# (`file.googleapis.com`) enabled, a ProjectService.
UPJET_REGISTRY = "xpkg.upbound.io/upbound"
UPJET_VERSION = ">=v2.6.0, <v3.0.0"
UPJET_PROVIDERS: dict[str, tuple[str, ...]] = {
    name: mrds for cloud in CLOUDS for name, mrds in cloud.upjet_providers.items()
}
# Managed resource kinds the package composes, by ManagedResourceDefinition name
# (`<plural>.<group>`): what the package's activation policy turns on.
MANAGED_RESOURCES = (
    f"objects.{c.PROVIDER_KUBERNETES_API_VERSION.split('/')[0]}",
    # ServingStack: provider-helm Releases.
    f"releases.{c.PROVIDER_HELM_API_VERSION.split('/')[0]}",
    *(mrd for mrds in UPJET_PROVIDERS.values() for mrd in mrds),
)


def upjet_packages() -> list[tuple[str, str]]:
    """Each upjet provider package the Configuration depends on, with its version constraint."""
    return [(f"{UPJET_REGISTRY}/{name}", UPJET_VERSION) for name in UPJET_PROVIDERS]


ACTIVATION_POLICY_NAME = "modelplane"

PACKAGE_NAME = "modelplane"
CONFIGURATION_ROOT = "configuration"
FUNCTION_ROOT = "function"
COMPOSE_STEP = "compose"
XRD_API_VERSION = "apiextensions.crossplane.io/v2"
COMPOSITION_API_VERSION = "apiextensions.crossplane.io/v1"
LICENSE = "Apache-2.0"

# Crossplane appends these columns to every XR's CRD (SYNCED, READY,
# COMPOSITION, COMPOSITIONREVISION, AGE); declaring them again would print twice.
CROSSPLANE_COLUMN_PATHS = frozenset(
    {
        ".status.conditions[?(@.type=='Synced')].status",
        ".status.conditions[?(@.type=='Ready')].status",
        ".metadata.creationTimestamp",
    }
)
CROSSPLANE_COLUMN_NAMES = frozenset(
    {"SYNCED", "READY", "COMPOSITION", "COMPOSITIONREVISION", "AGE"}
)
# Fields Crossplane injects into every XR schema itself; it overrides ours.
CROSSPLANE_SPEC_FIELDS = frozenset({"crossplane"})
CROSSPLANE_STATUS_FIELDS = frozenset({"conditions", "crossplane"})

RBAC_FILE = "rbac/roles.yaml"
HEADER = (
    "# Generated by `modelplane package build` from modelplane/api. Do not edit:\n"
    "# change the API types and run `modelplane package build` again.\n"
)

# OpenAPI keywords a structural schema may carry, copied as they are.
_PASSTHROUGH = (
    "description",
    "type",
    "format",
    "enum",
    "pattern",
    "minLength",
    "maxLength",
    "minimum",
    "maximum",
    "multipleOf",
    "minItems",
    "maxItems",
    "uniqueItems",
    "minProperties",
    "maxProperties",
    "default",
)
# Keywords dropped on purpose: `title` is noise; `propertyNames` has no
# structural-schema equivalent (pydantic still checks map keys).
_DROPPED = frozenset({"title", "propertyNames", "additionalProperties", "$defs"})


class PackageRefError(ValueError):
    """A `--function-package` value that is not an OCI repository without tag or digest."""


# go-containerregistry (pkg/name, v0.21.6, which Crossplane v2.3.4 uses) defaults
# a registry-less reference to Docker Hub and gives its one-segment repositories
# the `library/` namespace.
_DOCKER_HUB = ("index.docker.io", "docker.io")
_REPOSITORY = re.compile(r"^[a-z0-9_./-]{2,255}$")


def repository_path(ref: str) -> str:
    """The repository part of an OCI package reference, as go-containerregistry reads it.

    `xpkg.crossplane.io/modelplane/function-modelplane` → `modelplane/function-modelplane`.
    The first segment is a registry only when it holds a '.' or ':'. A tag or a
    digest is refused: a dependency names a repository and constrains the version apart.
    """
    if "@" in ref or ":" in ref.rsplit("/", 1)[-1]:
        raise PackageRefError(
            f"{ref!r}: give the package repository without a tag or digest "
            "(the version constraint is written separately)"
        )
    first, _, rest = ref.partition("/")
    registry, repo = (first, rest) if rest and ("." in first or ":" in first) else ("", ref)
    if not _REPOSITORY.match(repo):
        raise PackageRefError(
            f"{ref!r}: a repository is 2-255 lower-case letters, digits and '_./-'"
        )
    if registry in ("", *_DOCKER_HUB) and "/" not in repo:
        repo = f"library/{repo}"
    return repo


def to_dns_label(value: str) -> str:
    """Crossplane's `xpkg.ToDNSLabel` (crossplane-runtime v2.3.3, pkg/xpkg/name.go).

    Keeps `a-z0-9`, turns `. / : -` into '-' except at the first, the 63rd and the
    last byte, stops after the 63rd byte and trims dashes. Upper-case and other
    bytes are dropped, not lowered.
    """
    out = []
    last = len(value.encode()) - 1
    i = 0  # byte offset of the character, as Go's `for i := range s` yields
    for ch in value:
        if "a" <= ch <= "z" or "0" <= ch <= "9":
            out.append(ch)
        if ch in "./:-" and i not in (0, 62, last):
            out.append("-")
        if i == 62:
            break
        i += len(ch.encode())
    return "".join(out).strip("-")


def installed_name(ref: str) -> str:
    """The name Crossplane gives a package it installs as a dependency of the Configuration.

    Crossplane's dependency resolver (v2.3.4, internal/controller/pkg/resolver) names
    the Function `ToDNSLabel(RepositoryStr(ref))`; every Composition's functionRef
    must use that name or nothing composes.
    """
    return to_dns_label(repository_path(ref))


class _KubeSchemaGenerator(GenerateJsonSchema):
    """JSON-schema generator that also reports defaults built by `default_factory`."""

    def get_default_value(self, schema: core_schema.WithDefaultSchema) -> Any:
        """Return the static default, or call a zero-argument default factory."""
        if "default" in schema:
            return schema["default"]
        factory = schema.get("default_factory")
        if factory is not None and not schema.get("default_factory_takes_data"):
            return factory()  # type: ignore[call-arg]
        return NoDefault

    def encode_default(self, dft: Any) -> Any:
        """Encode a default as the wire form writes it: unset optionals omitted, not null."""
        return _without_none(super().encode_default(dft))


def _without_none(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_none(v) for v in value]
    return value


class SchemaError(ValueError):
    """The API types use a construct a structural schema cannot express."""


def _resolve(node: dict[str, Any], defs: dict[str, Any], path: str) -> dict[str, Any]:
    """Inline `$ref` and collapse `Optional[X]` unions, merging sibling keywords."""
    while True:
        if "$ref" in node:
            rest = {k: v for k, v in node.items() if k != "$ref"}
            target = dict(defs[node["$ref"].rsplit("/", 1)[-1]])
            node = _merge(target, rest)
        elif "anyOf" in node or "oneOf" in node or "allOf" in node:
            key = next(k for k in ("anyOf", "oneOf", "allOf") if k in node)
            branches = [b for b in node[key] if b.get("type") != "null"]
            if len(branches) != 1:
                raise SchemaError(f"{path}: unions other than Optional[X] are not structural")
            rest = {k: v for k, v in node.items() if k != key}
            if rest.get("default", ...) is None:
                del rest["default"]
            node = _merge(dict(branches[0]), rest)
        else:
            return node


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """Overlay field-level keywords on a referenced schema, concatenating CEL rules."""
    out = {**base, **over}
    rules = base.get("x-kubernetes-validations", []) + over.get("x-kubernetes-validations", [])
    if rules:
        out["x-kubernetes-validations"] = rules
    return out


# Keywords `_structural` understands besides the pass-through ones and extensions.
_HANDLED = frozenset(
    {"const", "properties", "required", "items", "patternProperties"}
    | {"exclusiveMinimum", "exclusiveMaximum", "$ref", "anyOf", "oneOf", "allOf"}
)


def _scalar_keywords(node: dict[str, Any]) -> dict[str, Any]:
    """The node's own validation keywords in OpenAPI 3.0 form."""
    out: dict[str, Any] = {key: node[key] for key in _PASSTHROUGH if key in node}
    if "const" in node:
        out["enum"] = [node["const"]]
    # JSON Schema 2020-12 states exclusive bounds as numbers; OpenAPI 3.0 (and
    # Kubernetes) as a boolean beside minimum/maximum.
    for bound, exclusive in (("minimum", "exclusiveMinimum"), ("maximum", "exclusiveMaximum")):
        if exclusive in node:
            out[bound] = node[exclusive]
            out[exclusive] = True
    return out


def _map_values(
    node: dict[str, Any], defs: dict[str, Any], path: str, *, cel: bool
) -> dict[str, Any] | bool | None:
    """A map's value schema; True for `dict[str, Any]` (preserve), None when not a map."""
    pattern_props = node.get("patternProperties")
    extra = node.get("additionalProperties")
    if pattern_props:
        if len(pattern_props) != 1:
            raise SchemaError(f"{path}: maps need a single value type")
        (value,) = pattern_props.values()
        return _structural(value, defs, f"{path}{{}}", cel=cel)
    if isinstance(extra, dict) and extra:
        return _structural(extra, defs, f"{path}{{}}", cel=cel)
    if (extra is True or extra == {}) and not node.get("properties"):
        return True  # dict[str, Any]: keep whatever the user wrote
    return None


def _children(
    node: dict[str, Any], defs: dict[str, Any], path: str, *, cel: bool
) -> dict[str, Any]:
    """Properties, list items and map values, each rewritten recursively."""
    out: dict[str, Any] = {}
    if "properties" in node:
        out["type"] = "object"
        out["properties"] = {
            name: _structural(sub, defs, f"{path}.{name}", cel=cel)
            for name, sub in node["properties"].items()
        }
        if node.get("required"):
            out["required"] = list(node["required"])
    if "items" in node:
        out["items"] = _structural(node["items"], defs, f"{path}[]", cel=cel)
    values = _map_values(node, defs, path, cel=cel)
    if isinstance(values, dict):
        out["additionalProperties"] = values
    if values is True or node.get("x-kubernetes-preserve-unknown-fields"):
        out["x-kubernetes-preserve-unknown-fields"] = True
    return out


def _extensions(node: dict[str, Any], *, cel: bool) -> dict[str, Any]:
    """`x-kubernetes-*` extensions other than preserve-unknown-fields (CEL rules if `cel`)."""
    return {
        key: value
        for key, value in node.items()
        if key.startswith("x-kubernetes-")
        and key != "x-kubernetes-preserve-unknown-fields"
        and (cel or key != "x-kubernetes-validations")
    }


def _structural(node: dict[str, Any], defs: dict[str, Any], path: str, *, cel: bool) -> dict:
    """Rewrite one pydantic JSON-schema node as a Kubernetes structural schema node."""
    node = _resolve(node, defs, path)
    unknown = {
        k
        for k in set(node) - set(_PASSTHROUGH) - _DROPPED - _HANDLED
        if not k.startswith("x-kubernetes-")
    }
    if unknown:
        raise SchemaError(f"{path}: unsupported JSON-schema keywords {sorted(unknown)}")
    out = _scalar_keywords(node)
    out.update(_children(node, defs, path, cel=cel))
    out.update(_extensions(node, cel=cel))
    typeless = ("x-kubernetes-preserve-unknown-fields", "x-kubernetes-int-or-string")
    if "type" not in out and not any(out.get(k) for k in typeless):
        raise SchemaError(f"{path}: every schema node needs a type")
    return out


def model_schema(
    model: type[BaseModel],
    *,
    cel: bool = True,
    omit: frozenset[str] = frozenset(),
) -> dict[str, Any]:
    """Return the structural OpenAPI schema of a pydantic model (wire names, inlined).

    `cel=False` drops `x-kubernetes-validations`; `omit` drops top-level fields.
    """
    raw = model.model_json_schema(
        by_alias=True, mode="validation", schema_generator=_KubeSchemaGenerator
    )
    defs = raw.get("$defs", {})
    schema = _structural(raw, defs, model.__name__, cel=cel)
    props = schema.get("properties", {})
    for name in omit:
        props.pop(name, None)
    if "required" in schema:
        schema["required"] = [r for r in schema["required"] if r not in omit]
        if not schema["required"]:
            del schema["required"]
    return schema


def _printer_columns(kind: Kind) -> list[dict[str, Any]]:
    """The kind's printer columns, minus those Crossplane adds to every XR.

    A column Crossplane already prints is dropped; any other column named like
    one of Crossplane's is refused, since `kubectl get` would show two of a name.
    """
    cols = []
    for col in kind.printer_columns:
        if col.json_path in CROSSPLANE_COLUMN_PATHS:
            continue
        if col.name.upper() in CROSSPLANE_COLUMN_NAMES:
            raise SchemaError(f"{kind.kind}: printer column {col.name!r} is Crossplane's")
        entry: dict[str, Any] = {"name": col.name, "type": col.type, "jsonPath": col.json_path}
        if col.priority:
            entry["priority"] = col.priority
        if col.description:
            entry["description"] = col.description
        cols.append(entry)
    return cols


def _singleton_rule(kind: Kind) -> list[dict[str, str]]:
    if kind.singleton_name is None:
        return []
    return [
        {
            "rule": f"self.metadata.name == '{kind.singleton_name}'",
            "message": kind.singleton_message,
        }
    ]


def xrd(kind: Kind) -> dict[str, Any]:
    """Return the apiextensions.crossplane.io/v2 CompositeResourceDefinition of a kind."""
    # Status is written only by Modelplane's function after pydantic validation;
    # CEL rules there would add API-server cost and catch nothing.
    spec = model_schema(kind.spec, omit=CROSSPLANE_SPEC_FIELDS)
    status = model_schema(kind.status, cel=False, omit=CROSSPLANE_STATUS_FIELDS)
    names: dict[str, Any] = {
        "kind": kind.kind,
        "listKind": f"{kind.kind}List",
        "plural": kind.plural,
        "singular": kind.singular,
    }
    if kind.short_names:
        names["shortNames"] = list(kind.short_names)
    if kind.categories:
        names["categories"] = list(kind.categories)
    version: dict[str, Any] = {
        "name": kind.version,
        "served": True,
        "referenceable": True,
    }
    columns = _printer_columns(kind)
    if columns:
        version["additionalPrinterColumns"] = columns
    if kind.scale:
        version["subresources"] = {"scale": dict(kind.scale)}
    version["schema"] = {
        "openAPIV3Schema": {
            "type": "object",
            "description": kind.description,
            "properties": {"spec": spec, "status": status},
            "required": ["spec"],
            # Root-level rules reach metadata.name (Crossplane >= v2.2).
            "x-kubernetes-validations": [
                {
                    "rule": f"size(self.metadata.name) <= {c.MAX_COMPOSITE_NAME}",
                    "message": c.COMPOSITE_NAME_MESSAGE,
                },
                *_singleton_rule(kind),
            ],
        }
    }
    return {
        "apiVersion": XRD_API_VERSION,
        "kind": "CompositeResourceDefinition",
        "metadata": {"name": kind.xrd_name},
        "spec": {
            "group": kind.group,
            "names": names,
            "scope": kind.scope,
            "defaultCompositionRef": {"name": kind.composition_name},
            "versions": [version],
        },
    }


def composition(kind: Kind, function_package: str = DEFAULT_FUNCTION_PACKAGE) -> dict[str, Any]:
    """Return the kind's pipeline Composition: one step calling Modelplane's function.

    The step names the Function as Crossplane installs it from `function_package`,
    and its input the image that package runs (what the composers place on
    workload clusters too). What the kind's composer always reads with a fixed
    selector the step fetches before the first call (`Kind.up_front`).
    """
    step: dict[str, Any] = {
        "step": COMPOSE_STEP,
        "functionRef": {"name": installed_name(function_package)},
        "input": function_input(function_package),
    }
    if kind.up_front:
        step["requirements"] = {"requiredResources": [u.selector() for u in kind.up_front]}
    return {
        "apiVersion": COMPOSITION_API_VERSION,
        "kind": "Composition",
        "metadata": {"name": kind.composition_name},
        "spec": {
            "compositeTypeRef": {"apiVersion": kind.api_version, "kind": kind.kind},
            "mode": "Pipeline",
            "pipeline": [step],
        },
    }


def _annotations(description: str) -> dict[str, str]:
    return {
        "meta.crossplane.io/maintainer": "Modelplane",
        "meta.crossplane.io/license": LICENSE,
        "meta.crossplane.io/description": description,
    }


def configuration(function_package: str = DEFAULT_FUNCTION_PACKAGE) -> dict[str, Any]:
    """Return the Configuration package metadata (`package/configuration/crossplane.yaml`).

    It depends only on what the Compositions call or compose: the function,
    provider-kubernetes (Objects), provider-helm (the ServingStack's and the
    InferenceGateway's Releases) and the upjet family providers of the
    clouds' managed resources (`UPJET_PROVIDERS`).
    """
    return {
        "apiVersion": "meta.pkg.crossplane.io/v1",
        "kind": "Configuration",
        "metadata": {
            "name": PACKAGE_NAME,
            "annotations": _annotations(
                "Modelplane: place and serve open-weight models across a fleet of "
                "Kubernetes GPU clusters."
            ),
        },
        "spec": {
            "crossplane": {"version": CROSSPLANE_VERSION},
            "dependsOn": [
                {"function": function_package, "version": FUNCTION_VERSION},
                {"provider": PROVIDER_KUBERNETES_PACKAGE, "version": PROVIDER_KUBERNETES_VERSION},
                {"provider": PROVIDER_HELM_PACKAGE, "version": PROVIDER_HELM_VERSION},
                *({"provider": p, "version": v} for p, v in upjet_packages()),
            ],
        },
    }


def function_package_meta() -> dict[str, Any]:
    """Return the Function package metadata (`package/function/crossplane.yaml`).

    Its metadata.name is the package's own name; the Function object installed
    in a cluster is named after the repository it is pulled from (`installed_name`).
    """
    return {
        "apiVersion": "meta.pkg.crossplane.io/v1",
        "kind": "Function",
        "metadata": {
            "name": c.FUNCTION_NAME,
            "annotations": _annotations(
                "Modelplane's composition function: one server composing every Modelplane kind."
            ),
        },
        "spec": {"crossplane": {"version": CROSSPLANE_VERSION}},
    }


def activation_policy() -> dict[str, Any]:
    """Return the ManagedResourceActivationPolicy for the managed resources the package composes.

    Crossplane v2 providers with safe-start install their ManagedResourceDefinitions
    inactive; without this policy their controllers would never start.
    """
    return {
        "apiVersion": "apiextensions.crossplane.io/v1alpha1",
        "kind": "ManagedResourceActivationPolicy",
        "metadata": {"name": ACTIVATION_POLICY_NAME},
        "spec": {"activate": list(MANAGED_RESOURCES)},
    }


class _Dumper(yaml.SafeDumper):
    """Block-style YAML with indented lists and literal multi-line strings."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        """Indent sequences under their key, as kubectl and kubebuilder do."""
        super().increase_indent(flow, False)

    def ignore_aliases(self, data: Any) -> bool:
        """Never emit anchors: shared sub-schemas are written out in full."""
        return True


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def to_yaml(doc: dict[str, Any]) -> str:
    """Render one document the way the package stores it (stable, key order kept)."""
    return yaml.dump(
        doc,
        Dumper=_Dumper,
        sort_keys=False,
        default_flow_style=False,
        allow_unicode=True,
        width=1 << 16,
    )


def package_files(function_package: str = DEFAULT_FUNCTION_PACKAGE) -> dict[str, str]:
    """Return every generated package file: path relative to `package/` → YAML text.

    Two package roots: `configuration/` (XRDs, Compositions, activation policy)
    and `function/` (the Function's metadata; the runtime image is embedded at build);
    beside them `rbac/`, the personas' ClusterRoles (`api/rbac.py`), applied apart.
    """
    conf, fn = CONFIGURATION_ROOT, FUNCTION_ROOT
    files = {
        f"{conf}/crossplane.yaml": HEADER
        + f"# Build: crossplane xpkg build --package-root=package/{conf}\n"
        + to_yaml(configuration(function_package)),
        f"{conf}/activation-policy.yaml": HEADER + to_yaml(activation_policy()),
        f"{fn}/crossplane.yaml": HEADER
        + f"# Build: crossplane xpkg build --package-root=package/{fn} "
        + "--embed-runtime-image=<image built from the Dockerfile>\n"
        + to_yaml(function_package_meta()),
    }
    for kind in KINDS:
        base = f"{conf}/apis/{kind.plural}"
        files[f"{base}/definition.yaml"] = HEADER + to_yaml(xrd(kind))
        files[f"{base}/composition.yaml"] = HEADER + to_yaml(composition(kind, function_package))
    files[RBAC_FILE] = (
        HEADER
        + "# The personas' ClusterRoles (docs/security.md): kubectl apply -f package/rbac/\n"
        + "---\n".join(to_yaml(role) for role in cluster_roles())
    )
    return dict(sorted(files.items()))


# ---------------------------------------------------------------------------------------
# API reference (docs/api-reference.md), generated from the same schemas as the XRDs.

API_REFERENCE_HEADER = """\
<!-- Generated by `modelplane package build` from modelplane/api. Do not edit:
change the API types and run `modelplane package build` again. -->

# API reference

Every kind, field, type, bound, default and validation rule below comes from the
XRD schemas `modelplane package build` generates from `modelplane/api`; the
descriptions are the ones `kubectl explain` prints once the package is installed
(for example `kubectl explain modeldeployments.spec.workers`). Crossplane adds
`spec.crossplane` and `status.conditions` to every kind itself.
"""


def _md(text: str) -> str:
    """Table-cell text: pipes escaped, angle brackets not read as HTML."""
    return text.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;").replace("\n", " ")


def _type_name(node: dict[str, Any]) -> str:
    """`string`, `[]object`, `map[string]integer`, `object`..."""
    if node.get("type") == "array":
        return "[]" + _type_name(node.get("items", {}))
    if isinstance(node.get("additionalProperties"), dict):
        return "map[string]" + _type_name(node["additionalProperties"])
    return str(node.get("type", "any"))


def _range(low: Any, high: Any, unit: str = "") -> str:
    if low is not None and high is not None:
        return f"{low}–{high}{unit}"
    if high is not None:
        return f"≤ {high}{unit}"
    return f"≥ {low}{unit}" if low is not None else ""


def _bounds(node: dict[str, Any]) -> str:
    """The node's enum, bounds and pattern, in words."""
    parts = [
        _range(node.get("minItems"), node.get("maxItems"), " items"),
        _range(node.get("minProperties"), node.get("maxProperties"), " entries"),
        _range(node.get("minLength"), node.get("maxLength"), " chars"),
        _range(node.get("minimum"), node.get("maximum")),
    ]
    if "enum" in node:
        parts.append("one of " + ", ".join(f"`{v}`" for v in node["enum"]))
    if "pattern" in node:
        words = PATTERN_NAMES.get(node["pattern"])
        parts.append(words or f"pattern `{node['pattern']}`")
    return "; ".join(p for p in parts if p)


def _field_rows(node: dict[str, Any], prefix: str, rules: list[tuple[str, str]]) -> list[str]:
    """One table row per field under node (depth first); CEL rules gathered on the way."""
    rows = []
    required = set(node.get("required", []))
    for name, sub in node.get("properties", {}).items():
        path = f"{prefix}.{name}" if prefix else name
        default = f"`{json.dumps(sub['default'])}`" if "default" in sub else ""
        cells = [
            f"`{path}`",
            _md(_type_name(sub)),
            "yes" if name in required else "",
            _md(default),
            _md(_bounds(sub)),
            _md(sub.get("description", "")),
        ]
        rows.append("| " + " | ".join(cells) + " |")
        rows += _nested_rows(sub, path, rules)
    return rows


def _nested_rows(node: dict[str, Any], path: str, rules: list[tuple[str, str]]) -> list[str]:
    """Rows below a field: its object fields, list items' or map values' fields."""
    rules += [(path, r["message"]) for r in node.get("x-kubernetes-validations", [])]
    if node.get("type") == "array" and isinstance(node.get("items"), dict):
        items = node["items"]
        rules += [(f"{path}[]", r["message"]) for r in items.get("x-kubernetes-validations", [])]
        return _field_rows(items, f"{path}[]", rules)
    values = node.get("additionalProperties")
    if isinstance(values, dict):
        rules += [(f"{path}{{}}", r["message"]) for r in values.get("x-kubernetes-validations", [])]
        return _field_rows(values, f"{path}{{}}", rules)
    return _field_rows(node, path, rules)


def _section(title: str, node: dict[str, Any]) -> list[str]:
    rules: list[tuple[str, str]] = [
        (title, r["message"]) for r in node.get("x-kubernetes-validations", [])
    ]
    rows = _field_rows(node, title, rules)
    out = [f"### {title}", "", _md(node.get("description", "")), ""]
    out += ["| field | type | required | default | bounds | description |"]
    out += ["|---|---|---|---|---|---|", *rows, ""]
    if rules:
        out += ["Validation rules (CEL, enforced by the API server):", ""]
        out += [f"- `{where}`: {_md(message)}" for where, message in rules]
        out.append("")
    return out


def _kind_reference(kind: Kind) -> list[str]:
    (version,) = xrd(kind)["spec"]["versions"]
    root = version["schema"]["openAPIV3Schema"]
    scope = "cluster-scoped" if kind.scope == "Cluster" else "namespaced"
    names = ", ".join(f"`{n}`" for n in (kind.plural, *kind.short_names))
    out = [
        f"## {kind.kind}",
        "",
        f"`{kind.api_version}`, {scope} ({names}). {_md(kind.description)}",
        "",
    ]
    columns = version.get("additionalPrinterColumns", [])
    if columns:
        shown = ", ".join(f"{c_['name']} (`{c_['jsonPath']}`)" for c_ in columns)
        out += [f"`kubectl get` columns: {_md(shown)}, then Crossplane's own.", ""]
    out += _section("spec", root["properties"]["spec"])
    out += _section("status", root["properties"]["status"])
    return out


def api_reference() -> str:
    """The API reference in Markdown: every kind's fields from its XRD schema."""
    lines = [API_REFERENCE_HEADER]
    lines += ["Kinds: " + ", ".join(f"[{k.kind}](#{k.kind.lower()})" for k in KINDS) + ".", ""]
    for kind in KINDS:
        lines += _kind_reference(kind)
    return "\n".join(lines).rstrip("\n") + "\n"
