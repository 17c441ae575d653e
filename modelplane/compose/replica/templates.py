"""Label and annotation value templates of `InferenceCluster.spec.scheduling` (SPEC §5).

A value may use exactly `{{ .Namespace }}`, `{{ .Name }}` (the deployment) and
`{{ .Cluster }}`. Rendering is plain text substitution of those three tokens:
no template engine ever sees user text, so a value cannot call functions,
range over data or read anything but the three variables.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from modelplane.api.inference_cluster import render_template, template_errors
from modelplane.api.objects import LABEL_VALUE_PATTERN, MAX_LABEL_VALUE


@dataclass(frozen=True)
class TemplateVars:
    """The only values a template can reach."""

    namespace: str
    name: str
    cluster: str


def render(value: str, variables: TemplateVars) -> str:
    """Substitute the three supported variables in `value` (validate it first)."""
    return render_template(value, variables.namespace, variables.name, variables.cluster)


def render_map(
    field: str, values: Mapping[str, str] | None, variables: TemplateVars, *, labels: bool
) -> tuple[dict[str, str], list[str]]:
    """Render every value of a label/annotation map; return (rendered, errors).

    Errors name the field and key (e.g. `spec.scheduling.defaultLabels[team]`).
    For labels, a rendered value that is not a valid label value is an error too.
    """
    out: dict[str, str] = {}
    errors: list[str] = []
    for key, raw in sorted((values or {}).items(), key=lambda kv: str(kv[0])):
        where = f"{field}[{key}]"
        if not isinstance(key, str):
            errors.append(f"{where}: key must be a string")
            continue
        if not isinstance(raw, str):
            errors.append(f"{where}: value must be a string")
            continue
        errs = template_errors(raw)
        if errs:
            errors.extend(f"{where}: {e}" for e in errs)
            continue
        rendered = render(raw, variables)
        if labels and (len(rendered) > MAX_LABEL_VALUE or not LABEL_VALUE_PATTERN.match(rendered)):
            errors.append(
                f"{where}: {raw!r} renders to {rendered!r}, which is not a valid label value "
                "(at most 63 alphanumerics, '-', '_' or '.', alphanumeric at both ends)"
            )
            continue
        out[key] = rendered
    return out, errors
