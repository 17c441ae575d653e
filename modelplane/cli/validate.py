"""`modelplane validate PATH...`: check manifests offline, the way the control plane would.

Every Modelplane document is checked against the XRD schema `modelplane package
build` generates from the API types (types, required fields, enums, bounds,
patterns, unknown fields, defaults) and its CEL rules (`x-kubernetes-validations`,
evaluated with cel-expr-python); every DRA device selector is compiled with
`modelplane.dra`; the spec is parsed by the same types the function uses; and
references between documents are resolved (an InferenceCluster pool's class must
be among the documents). Documents of other kinds (Secrets, Namespaces) are
counted and left alone.

Each problem names the file, the document (1-based), the object, the field and,
where one is close, a fix ("did you mean ..."); a selector's compiler message may
add a line pointing at the column. Exit status 1
when there is any problem, else 0 with a one-line summary.
"""

from __future__ import annotations

import copy
import difflib
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import click
import yaml
from cel_expr_python import cel
from pydantic import ValidationError

from modelplane.api import constants as c
from modelplane.api.common import format_validation_error
from modelplane.api.kinds import INFERENCE_CLASS, INFERENCE_CLUSTER, KINDS, Kind, kind_for
from modelplane.api.xrd import CROSSPLANE_SPEC_FIELDS, xrd
from modelplane.compose.registry import provisioning_problems, spec_problems
from modelplane.dra.cel import CompileError, compile_selector

YAML_SUFFIXES = (".yaml", ".yml")
MODELPLANE_GROUPS = (c.GROUP, c.INFRA_GROUP)
# Top-level fields of a Kubernetes object; `status` is written by controllers,
# never by `kubectl apply`, so it is not checked.
TOP_LEVEL = ("apiVersion", "kind", "metadata", "spec", "status")


@dataclass(frozen=True)
class Problem:
    """One reason a document would be refused, with where and how to fix it."""

    file: str
    document: int
    what: str
    field: str
    message: str
    fix: str = ""

    def __str__(self) -> str:
        where = f"{self.file}: document {self.document} ({self.what})"
        text = (
            f"{where}: {self.field}: {self.message}" if self.field else f"{where}: {self.message}"
        )
        return f"{text}; {self.fix}" if self.fix else text


@dataclass
class Document:
    """One YAML document and where it came from."""

    file: str
    index: int
    body: Any

    @property
    def what(self) -> str:
        """`Kind/name` (or `Kind/namespace/name`) for messages."""
        if not isinstance(self.body, dict):
            return "not a mapping"
        meta = self.body.get("metadata")
        meta = meta if isinstance(meta, dict) else {}
        parts = [str(self.body.get("kind", "?"))]
        if meta.get("namespace"):
            parts.append(str(meta["namespace"]))
        parts.append(str(meta.get("name", "?")))
        return "/".join(parts)


@dataclass
class Report:
    """Everything one validation run found."""

    files: int = 0
    checked: Counter[str] = field(default_factory=Counter)
    other: int = 0
    problems: list[Problem] = field(default_factory=list)

    def summary(self) -> str:
        """The one-line summary printed when there is no problem."""
        kinds = ", ".join(f"{n} {k}" for k, n in sorted(self.checked.items()))
        total = sum(self.checked.values())
        line = f"{_count(total, 'Modelplane document')} valid in {_count(self.files, 'file')}"
        line += f" ({kinds})" if kinds else ""
        if self.other:
            line += f"; {_count(self.other, 'document')} of other kinds not checked"
        return line


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """`did you mean 'x'?` for the closest choice, or an empty string."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f"did you mean {close[0]!r}?" if close else ""


# ---------------------------------------------------------------------------------------
# Reading documents.


def _files(paths: Iterable[str | Path]) -> list[Path]:
    out: list[Path] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            out += sorted(f for f in p.rglob("*") if f.is_file() and f.suffix in YAML_SUFFIXES)
        elif p.is_file():
            out.append(p)
        else:
            raise click.BadParameter(f"{p}: no such file or directory", param_hint="PATH")
    return out


def read_documents(paths: Iterable[str | Path], report: Report) -> list[Document]:
    """Every non-empty YAML document under `paths`; unreadable files become problems."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    docs: list[Document] = []
    for f in _files(paths):
        report.files += 1
        try:
            bodies = list(yaml.load_all(f.read_text(encoding="utf-8"), Loader=loader))
        except (yaml.YAMLError, UnicodeDecodeError) as err:
            report.problems.append(Problem(str(f), 1, "file", "", f"not valid YAML: {err}"))
            continue
        docs += [Document(str(f), i, b) for i, b in enumerate(bodies, 1) if b is not None]
    return docs


# ---------------------------------------------------------------------------------------
# Structural schema: what the API server checks before CEL, with defaulting.

_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
}

Issue = tuple[str, str, str]  # (field path, message, fix)


def _type_issue(value: Any, schema: dict[str, Any], path: str) -> Issue | None:
    want = schema.get("type")
    if want is None:
        return None
    ok = isinstance(value, _TYPES[want]) and (want == "boolean" or not isinstance(value, bool))
    if ok:
        return None
    shown = "null" if value is None else type(value).__name__
    return (path, f"{_short(value)} is not of type {want} (got {shown})", "")


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _string_issues(value: str, schema: dict[str, Any], path: str) -> list[Issue]:
    out = []
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        out.append((path, f"at most {schema['maxLength']} characters ({len(value)} given)", ""))
    if "minLength" in schema and len(value) < schema["minLength"]:
        out.append((path, f"at least {schema['minLength']} characters", ""))
    if "pattern" in schema and not re.search(schema["pattern"], value):
        out.append((path, f"{_short(value)} does not match {schema['pattern']}", ""))
    return out


def _number_issues(value: float, schema: dict[str, Any], path: str) -> list[Issue]:
    out = []
    low, high = schema.get("minimum"), schema.get("maximum")
    if low is not None and (value < low or (schema.get("exclusiveMinimum") and value == low)):
        out.append((path, f"{value} is below the minimum {low}", ""))
    if high is not None and (value > high or (schema.get("exclusiveMaximum") and value == high)):
        out.append((path, f"{value} is above the maximum {high}", ""))
    return out


def _size_issues(value: Any, schema: dict[str, Any], path: str) -> list[Issue]:
    """minItems/maxItems on lists, minProperties/maxProperties on maps."""
    low, high, noun = (
        ("minItems", "maxItems", "items")
        if isinstance(value, list)
        else ("minProperties", "maxProperties", "entries")
    )
    out = []
    if high in schema and len(value) > schema[high]:
        out.append((path, f"at most {schema[high]} {noun} ({len(value)} given)", ""))
    if low in schema and len(value) < schema[low]:
        out.append((path, f"at least {schema[low]} {noun} ({len(value)} given)", ""))
    return out


def _enum_issue(value: Any, schema: dict[str, Any], path: str) -> Issue | None:
    allowed = schema.get("enum")
    if allowed is None or value in allowed:
        return None
    fix = did_you_mean(value, [str(a) for a in allowed]) if isinstance(value, str) else ""
    return (path, f"{_short(value)} is not one of {', '.join(map(str, allowed))}", fix)


def _object(value: dict[str, Any], schema: dict[str, Any], path: str, out: list[Issue]) -> None:
    """Check (and default, in place) the fields of an object node."""
    props: dict[str, Any] = schema.get("properties", {})
    values = schema.get("additionalProperties")
    preserve = schema.get("x-kubernetes-preserve-unknown-fields", False)
    for key in list(value):
        if value[key] is None and key in props:
            del value[key]  # the API server prunes nulls of non-nullable fields
            continue
        sub = f"{path}.{key}" if path else key
        if key in props:
            value[key] = check_node(value[key], props[key], sub, out)
        elif isinstance(values, dict):
            value[key] = check_node(value[key], values, f"{path}[{key!r}]", out)
        elif not preserve:
            out.append((sub, "unknown field", did_you_mean(key, props)))
    for key, sub_schema in props.items():
        if key not in value and "default" in sub_schema:
            value[key] = copy.deepcopy(sub_schema["default"])
    for key in schema.get("required", []):
        if key not in value:
            out.append((f"{path}.{key}" if path else key, "required field is missing", ""))


def _scalar_issues(value: Any, schema: dict[str, Any], path: str) -> list[Issue]:
    enum = _enum_issue(value, schema, path)
    out = [enum] if enum else []
    if isinstance(value, str):
        out += _string_issues(value, schema, path)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        out += _number_issues(value, schema, path)
    return out


def check_node(value: Any, schema: dict[str, Any], path: str, out: list[Issue]) -> Any:
    """Check a value against a structural schema node; return it with defaults applied.

    Issues are appended to `out`; CEL rules run on a node only when everything
    under it passed, as their messages assume well-typed input.
    """
    issue = _type_issue(value, schema, path)
    if issue:
        out.append(issue)
        return value
    before = len(out)
    if isinstance(value, dict):
        _object(value, schema, path, out)
        out += _size_issues(value, schema, path)
    elif isinstance(value, list):
        out += _size_issues(value, schema, path)
        item = schema.get("items")
        if isinstance(item, dict):
            value = [check_node(v, item, f"{path}[{i}]", out) for i, v in enumerate(value)]
    else:
        out += _scalar_issues(value, schema, path)
    if len(out) == before:
        out += _cel_issues(value, schema, path)
    return value


# ---------------------------------------------------------------------------------------
# CEL rules (x-kubernetes-validations).


@cache
def _cel_env() -> Any:
    return cel.NewEnv(variables={"self": cel.Type.DYN})


@cache
def _cel_program(rule: str) -> Any:
    return _cel_env().compile(rule)


def _cel_issues(value: Any, schema: dict[str, Any], path: str) -> list[Issue]:
    out = []
    for rule in schema.get("x-kubernetes-validations", []):
        try:
            result = _cel_program(rule["rule"]).eval(_cel_env().Activation({"self": value}))
        except RuntimeError as err:  # a rule this engine cannot run is reported, not raised
            out.append((path or "<root>", f"rule {rule['rule']!r} cannot be checked: {err}", ""))
            continue
        if result.type() == cel.Type.BOOL and result.value() is True:
            continue
        message = rule.get("message") or f"failed rule: {rule['rule']}"
        if result.type() != cel.Type.BOOL:
            message = f"{message} (rule {rule['rule']!r} did not evaluate: {result.value()})"
        out.append((path or "<root>", message, ""))
    return out


# ---------------------------------------------------------------------------------------
# One document.


@cache
def _root_schema(kind_name: str) -> dict[str, Any]:
    (kind,) = (k for k in KINDS if k.kind == kind_name)
    (version,) = xrd(kind)["spec"]["versions"]
    root = copy.deepcopy(version["schema"]["openAPIV3Schema"])
    # What the API server declares itself: the type identifiers and ObjectMeta
    # (the root CEL rule reads metadata.name); status is not user input.
    props = root["properties"]
    props["status"] = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    props["apiVersion"] = {"type": "string"}
    props["kind"] = {"type": "string"}
    props["metadata"] = {
        "type": "object",
        "properties": {"name": {"type": "string", "minLength": 1}},
        "required": ["name"],
        "x-kubernetes-preserve-unknown-fields": True,
    }
    root["required"] = ["metadata", *root.get("required", [])]
    # Crossplane adds spec.crossplane to every XR's CRD itself.
    for name in CROSSPLANE_SPEC_FIELDS:
        props["spec"].setdefault("properties", {})[name] = {
            "type": "object",
            "x-kubernetes-preserve-unknown-fields": True,
        }
    return root


def classify(doc: Document) -> tuple[Kind | None, Problem | None]:
    """The Modelplane kind of a document; a problem when it is malformed or misspelled."""
    body = doc.body
    if not isinstance(body, dict):
        return None, _problem(doc, "", "a manifest must be a mapping")
    api_version, kind = body.get("apiVersion"), body.get("kind")
    for name, val in (("apiVersion", api_version), ("kind", kind)):
        if not isinstance(val, str) or not val:
            return None, _problem(doc, name, "required (a non-empty string)")
    assert isinstance(api_version, str) and isinstance(kind, str)
    found = kind_for(api_version, kind)
    if found is not None:
        return found, None
    by_name = {k.kind: k for k in KINDS}
    if kind in by_name:
        want = by_name[kind].api_version
        return None, _problem(doc, "apiVersion", f"{kind} is served as {want}", f"use {want}")
    group = api_version.rsplit("/", 1)[0] if "/" in api_version else ""
    if group in MODELPLANE_GROUPS or difflib.get_close_matches(kind, by_name, n=1, cutoff=0.8):
        fix = did_you_mean(kind, by_name) or f"one of {', '.join(by_name)}"
        return None, _problem(doc, "kind", f"{api_version} has no kind {kind!r}", fix)
    return None, None


def _problem(doc: Document, path: str, message: str, fix: str = "") -> Problem:
    return Problem(doc.file, doc.index, doc.what, path, message, fix)


def _selector_issues(spec: Any, path: str) -> Iterator[Issue]:
    """Compile every DRA device selector (`...selectors[i].cel`) under a spec."""
    if isinstance(spec, dict):
        for key, value in spec.items():
            if key == "selectors" and isinstance(value, list):
                yield from _compile_selectors(value, f"{path}.{key}")
            else:
                yield from _selector_issues(value, f"{path}.{key}")
    elif isinstance(spec, list):
        for i, value in enumerate(spec):
            yield from _selector_issues(value, f"{path}[{i}]")


def _quota_selector_issues(spec: dict[str, Any]) -> Iterator[Issue]:
    """Compile every FleetQuota limit's selector: one that does not compile would make
    its limit refuse every placement it might cover (it fails closed)."""
    limits = spec.get("limits")
    for i, limit in enumerate(limits if isinstance(limits, list) else []):
        yield from _selector_issue(
            limit, "selector", f"spec.limits[{i}]", " (the limit would refuse all it may cover)"
        )


def _compile_selectors(selectors: list[Any], path: str) -> Iterator[Issue]:
    for i, sel in enumerate(selectors):
        yield from _selector_issue(sel, "cel", f"{path}[{i}]")


def _selector_issue(entry: Any, key: str, path: str, why: str = "") -> Iterator[Issue]:
    """The compiler's refusal of the selector at `entry[key]`, if it is a string."""
    expr = entry.get(key) if isinstance(entry, dict) else None
    if not isinstance(expr, str):
        return
    try:
        compile_selector(expr)
    except CompileError as err:
        fix = "try it with `modelplane cel eval EXPRESSION --device FILE`"
        yield (f"{path}.{key}", f"invalid device selector{why}: {err}", fix)


def _function_issues(kind: Kind, spec: dict[str, Any]) -> list[Issue]:
    """What the function's own types refuse beyond the schema (e.g. label templates)."""
    try:
        parsed = kind.spec.model_validate(_plain(spec))
    except ValidationError as err:
        return [("spec", f"the function would refuse it: {format_validation_error(err)}", "")]
    return [_refused(message) for message in spec_problems(kind.kind, parsed)]


def _refused(message: str) -> Issue:
    """A composer's message (`spec.field: why`) as an issue on that field."""
    field, sep, why = message.partition(": ")
    if sep and field.startswith("spec") and " " not in field:
        return (field, f"the function would refuse it: {why}", "")
    return ("spec", f"the function would refuse it: {message}", "")


def check_document(doc: Document, kind: Kind) -> list[Problem]:
    """Schema, CEL rules, selectors and the function's types, for one Modelplane document."""
    issues: list[Issue] = []
    doc.body = check_node(copy.deepcopy(doc.body), _root_schema(kind.kind), "", issues)
    spec = doc.body.get("spec")
    if not issues and isinstance(spec, dict):
        issues += _selector_issues(spec, "spec")
        if kind.kind == "FleetQuota":
            issues += _quota_selector_issues(spec)
    if not issues and isinstance(spec, dict):
        issues += _function_issues(kind, spec)
    return [_problem(doc, path, message, fix) for path, message, fix in issues]


# ---------------------------------------------------------------------------------------
# References between documents.


@dataclass(frozen=True)
class Reference:
    """A field of one kind naming an object of another: `<list>[].<key>` under spec."""

    source: str
    list_field: str
    key: str
    target: str
    same_namespace: bool


# Checked only while the target kind is served: ModelDeployment.spec.caches
# names ModelCaches, which are checked once Modelplane serves that kind.
REFERENCES = (
    Reference("InferenceCluster", "pools", "className", "InferenceClass", same_namespace=False),
    Reference("ModelDeployment", "caches", "name", "ModelCache", same_namespace=True),
)


def _key(doc: Document, namespaced: bool) -> tuple[str, str]:
    meta = doc.body.get("metadata") or {}
    namespace = str(meta.get("namespace") or "default") if namespaced else ""
    return namespace, str(meta.get("name"))


def _targets(docs: Iterable[Document], ref: Reference) -> dict[str, set[str]]:
    """Names of the target kind by namespace ("" for cluster-scoped lookups)."""
    out: dict[str, set[str]] = {}
    for d in docs:
        if d.body.get("kind") == ref.target:
            namespace, name = _key(d, ref.same_namespace)
            out.setdefault(namespace, set()).add(name)
    return out


def _dangling(doc: Document, ref: Reference, targets: dict[str, set[str]]) -> Iterator[Problem]:
    namespace, _ = _key(doc, ref.same_namespace)
    known = targets.get(namespace, set())
    entries = doc.body.get("spec", {}).get(ref.list_field) or []
    for i, entry in enumerate(entries):
        name = entry.get(ref.key) if isinstance(entry, dict) else None
        if isinstance(name, str) and name not in known:
            where = f" in namespace {namespace!r}" if ref.same_namespace else ""
            fix = did_you_mean(name, known) or "add it, or validate the file that defines it"
            path = f"spec.{ref.list_field}[{i}].{ref.key}"
            yield _problem(doc, path, f"{ref.target} {name!r} not found{where}", fix)


def reference_problems(valid: list[Document], every: list[Document]) -> list[Problem]:
    """References from valid documents that name no document of `every` (REFERENCES)."""
    served = {k.kind for k in KINDS}
    out: list[Problem] = []
    for ref in (r for r in REFERENCES if r.target in served):
        targets = _targets(every, ref)
        for doc in (d for d in valid if d.body.get("kind") == ref.source):
            out += _dangling(doc, ref, targets)
    return out


def _plain(spec: dict[str, Any]) -> dict[str, Any]:
    """A spec without the fields Crossplane adds, as the function parses it."""
    return {k: v for k, v in spec.items() if k not in CROSSPLANE_SPEC_FIELDS}


def _parsed(doc: Document, kind: Kind) -> Any:
    """A valid document's spec as the function's types read it."""
    return kind.spec.model_validate(_plain(doc.body.get("spec") or {}))


def provisioning_issues(valid: list[Document]) -> list[Problem]:
    """A cloud cluster's pools the composer would not provision with their classes
    (PoolsResolved NotProvisionable): checked once every class it names is among `valid`."""
    classes = {
        _key(d, namespaced=False)[1]: _parsed(d, INFERENCE_CLASS)
        for d in valid
        if d.body.get("kind") == INFERENCE_CLASS.kind
    }
    out: list[Problem] = []
    for doc in (d for d in valid if d.body.get("kind") == INFERENCE_CLUSTER.kind):
        spec = _parsed(doc, INFERENCE_CLUSTER)
        if all(p.class_name in classes for p in spec.pools):
            name = _key(doc, namespaced=False)[1]
            for message in provisioning_problems(name, spec, classes):
                field, message, fix = _refused(message)
                out.append(_problem(doc, field, message, fix))
    return out


def validate_paths(paths: Iterable[str | Path], *, references: bool = True) -> Report:
    """Validate every document under `paths`; the report lists each problem found."""
    report = Report()
    valid: list[Document] = []
    ours: list[Document] = []
    for doc in read_documents(paths, report):
        kind, problem = classify(doc)
        if problem is not None:
            report.problems.append(problem)
        elif kind is None:
            report.other += 1
        else:
            ours.append(doc)
            found = check_document(doc, kind)
            report.problems += found
            report.checked[kind.kind] += 1
            if not found:
                valid.append(doc)
    if references:
        report.problems += reference_problems(valid, ours)
        report.problems += provisioning_issues(valid)
    return report


@click.command("validate")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--skip-references",
    is_flag=True,
    help="Do not resolve references between documents (for a partial set of manifests).",
)
def validate(paths: tuple[Path, ...], skip_references: bool) -> None:
    """Validate manifests offline: XRD schemas, CEL rules, selectors and references.

    PATH is a file or a directory (searched recursively for *.yaml and *.yml).
    Prints one line per problem and exits 1, or a one-line summary and exits 0.
    """
    report = validate_paths(paths, references=not skip_references)
    if report.problems:
        for problem in report.problems:
            click.echo(str(problem))
        click.echo(f"{_count(len(report.problems), 'problem')} found", err=True)
        raise SystemExit(1)
    click.echo(report.summary())
