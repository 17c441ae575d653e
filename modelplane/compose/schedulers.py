"""In-cluster GPU scheduler integration: how a replica's pods are stamped (SPEC §5).

Modelplane composes onto the scheduler a cluster runs; it never reimplements
one. Every serving pod gets the priority class (the deployment's
`spec.priority`, else the cluster's `spec.scheduling.defaultPriority`, else
none), the cluster's `schedulerName`, and its `defaultLabels` /
`defaultAnnotations` rendered over `{{ .Namespace }}`, `{{ .Name }}`,
`{{ .Cluster }}` (see `templates.py`). On top of that, each scheduler's own
documented contract:

- **KAI** (`schedulerName: kai-scheduler`): gang scheduling through an explicit
  `scheduling.run.ai/v2alpha2` PodGroup whose `minMember` is every pod of the
  replica and whose `queue` is the pods' `kai.scheduler/queue` label (the legacy
  `runai/queue` label as a fallback). A pod joins an explicit PodGroup through
  the `pod-group-name` annotation (`PodGroupAnnotationForPod` in KAI's
  `pkg/common/constants/constants.go`), and carries
  `kai.scheduler/skip-podgrouper: "true"` so KAI's pod-grouper does not create
  its own group for the pod's Deployment/LeaderWorkerSet owner (externally
  created PodGroups and that annotation are supported from KAI v0.15, as the
  Grove KAI backend documents and does for its own pods).
- **Volcano** (`schedulerName: volcano`): an explicit
  `scheduling.volcano.sh/v1beta1` PodGroup (`minMember` = every pod, `queue`
  from the `scheduling.volcano.sh/queue-name` label/annotation when the
  platform team sets one, else Volcano's default queue); pods join it through
  the `scheduling.k8s.io/group-name` annotation (volcano-sh/volcano issue #3431;
  without it Volcano's controller makes one PodGroup per pod).
- **Kueue** is not a scheduler: it admits workloads labelled with
  `kueue.x-k8s.io/queue-name`. Kueue documents the label on the top-level
  object (`metadata.labels` of the Deployment or LeaderWorkerSet; "Run
  LeaderWorkerSet" task page: one Kueue workload per LWS group, so each group
  is admitted as a gang). When a cluster's rendered `defaultLabels` carry that
  label, it is copied onto the workload object as well as the pods, whatever
  the `schedulerName`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from modelplane.api import constants as c
from modelplane.compose.templates import TemplateVars, render_map
from modelplane.compose.types import Resource

Gang = Literal["kai", "volcano"]


@dataclass(frozen=True)
class SchedulingPlan:
    """What the cluster's scheduler needs on every pod and workload of a replica."""

    scheduler_name: str | None = None
    priority_class: str | None = None
    pod_labels: dict[str, str] = field(default_factory=dict)
    pod_annotations: dict[str, str] = field(default_factory=dict)
    workload_labels: dict[str, str] = field(default_factory=dict)
    gang: Gang | None = None
    queue: str | None = None


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def plan(
    scheduling: Any,
    priority: str | None,
    variables: TemplateVars,
    pod_group_name: str,
) -> tuple[SchedulingPlan, list[str]]:
    """Build the scheduling plan from a cluster's raw `spec.scheduling`.

    Returns the plan and the errors (each naming its field); the caller must not
    compose pods from a plan that came with errors.
    """
    errors: list[str] = []
    cfg = scheduling if isinstance(scheduling, dict) else {}
    if scheduling is not None and not isinstance(scheduling, dict):
        errors.append("spec.scheduling: must be an object")
    maps: list[dict[str, str]] = []
    for key, is_labels in (("defaultLabels", True), ("defaultAnnotations", False)):
        raw = cfg.get(key)
        if raw is not None and not isinstance(raw, dict):
            errors.append(f"spec.scheduling.{key}: must be a map of strings")
            raw = None
        rendered, errs = render_map(f"spec.scheduling.{key}", raw, variables, labels=is_labels)
        errors.extend(errs)
        # Modelplane's own label prefix is reserved for what it stamps itself.
        maps.append({k: v for k, v in rendered.items() if not k.startswith(c.LABEL_PREFIX)})
    labels, annotations = maps
    scheduler = _str(cfg.get("schedulerName"))
    gang: Gang | None = None
    queue: str | None = None
    if scheduler == c.KAI_SCHEDULER_NAME:
        gang = "kai"
        queue = labels.get(c.KAI_QUEUE_LABEL) or labels.get(c.KAI_LEGACY_QUEUE_LABEL)
        annotations[c.KAI_POD_GROUP_ANNOTATION] = pod_group_name
        annotations[c.KAI_SKIP_PODGROUPER_ANNOTATION] = "true"
    elif scheduler == c.VOLCANO_SCHEDULER_NAME:
        gang = "volcano"
        queue = annotations.get(c.VOLCANO_QUEUE_KEY) or labels.get(c.VOLCANO_QUEUE_KEY)
        annotations[c.VOLCANO_GROUP_ANNOTATION] = pod_group_name
    workload_labels = {}
    if c.KUEUE_QUEUE_LABEL in labels:
        workload_labels[c.KUEUE_QUEUE_LABEL] = labels[c.KUEUE_QUEUE_LABEL]
    result = SchedulingPlan(
        scheduler_name=scheduler,
        priority_class=priority or _str(cfg.get("defaultPriority")),
        pod_labels=labels,
        pod_annotations=annotations,
        workload_labels=workload_labels,
        gang=gang,
        queue=queue,
    )
    return result, errors


def stamp_pod(meta: dict[str, Any], pod: dict[str, Any], p: SchedulingPlan) -> None:
    """Stamp the plan on one pod template: labels, annotations, scheduler and priority."""
    meta["labels"] = {**(meta.get("labels") or {}), **p.pod_labels}
    annotations = {**(meta.get("annotations") or {}), **p.pod_annotations}
    if annotations:
        meta["annotations"] = annotations
    if p.scheduler_name:
        pod["schedulerName"] = p.scheduler_name
    if p.priority_class:
        pod["priorityClassName"] = p.priority_class


def pod_group(
    p: SchedulingPlan, name: str, namespace: str, min_member: int, labels: dict[str, str]
) -> Resource | None:
    """The gang-scheduling PodGroup the plan calls for, or None."""
    if p.gang is None:
        return None
    api_version = c.KAI_PODGROUP_API_VERSION if p.gang == "kai" else c.VOLCANO_PODGROUP_API_VERSION
    spec: dict[str, Any] = {"minMember": min_member}
    if p.queue:
        spec["queue"] = p.queue
    if p.priority_class:
        spec["priorityClassName"] = p.priority_class
    return {
        "apiVersion": api_version,
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(labels)},
        "spec": spec,
    }
