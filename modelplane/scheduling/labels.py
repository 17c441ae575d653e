"""Label selectors and taints with Kubernetes semantics (the filters build on them)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from modelplane.api.common import LabelSelector, Toleration
from modelplane.api.inference_cluster import Taint


def selector_matches(selector: LabelSelector | None, labels: Mapping[str, str]) -> bool:
    """Whether a Kubernetes LabelSelector matches `labels` (a missing selector matches all)."""
    if selector is None:
        return True
    for key, value in (selector.match_labels or {}).items():
        if labels.get(key) != value:
            return False
    for req in selector.match_expressions or ():
        values = req.values or []
        present = req.key in labels
        if req.operator == "In" and (not present or labels[req.key] not in values):
            return False
        if req.operator == "NotIn" and present and labels[req.key] in values:
            return False
        if req.operator == "Exists" and not present:
            return False
        if req.operator == "DoesNotExist" and present:
            return False
    return True


def tolerates(toleration: Toleration, taint: Taint) -> bool:
    """Whether one toleration tolerates one taint, with Pod toleration semantics."""
    if toleration.effect is not None and toleration.effect != taint.effect:
        return False
    if toleration.key and toleration.key != taint.key:
        return False
    if toleration.operator == "Exists":
        return True
    return (toleration.value or "") == (taint.value or "")


def untolerated(taints: Sequence[Taint], tolerations: Sequence[Toleration]) -> list[Taint]:
    """The taints no toleration tolerates, in their published order."""
    return [t for t in taints if not any(tolerates(tol, t) for tol in tolerations)]


def describe_taint(taint: Taint) -> str:
    """Render a taint the way kubectl does: key=value:Effect."""
    key = f"{taint.key}={taint.value}" if taint.value else taint.key
    return f"{key}:{taint.effect}"
