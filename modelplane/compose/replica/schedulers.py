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
from modelplane.api.inference_cluster import SchedulingConfig
from modelplane.compose.replica.templates import TemplateVars, render_map
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


def _gang(
    scheduler: str | None, labels: dict[str, str], annotations: dict[str, str], group: str
) -> tuple[Gang | None, str | None]:
    """The gang the scheduler needs and its queue; stamps the pods' group annotations."""
    if scheduler == c.KAI_SCHEDULER_NAME:
        annotations[c.KAI_POD_GROUP_ANNOTATION] = group
        annotations[c.KAI_SKIP_PODGROUPER_ANNOTATION] = "true"
        return "kai", labels.get(c.KAI_QUEUE_LABEL) or labels.get(c.KAI_LEGACY_QUEUE_LABEL)
    if scheduler == c.VOLCANO_SCHEDULER_NAME:
        annotations[c.VOLCANO_GROUP_ANNOTATION] = group
        return "volcano", annotations.get(c.VOLCANO_QUEUE_KEY) or labels.get(c.VOLCANO_QUEUE_KEY)
    return None, None


def plan(
    scheduling: SchedulingConfig | None,
    priority: str | None,
    variables: TemplateVars,
    pod_group_name: str,
) -> tuple[SchedulingPlan, list[str]]:
    """Build the scheduling plan from a cluster's `spec.scheduling` (read by `api.readers`).

    Returns the plan and the errors (each naming its field and key, e.g. a
    label value that renders to an invalid label); the caller must not
    compose pods from a plan that came with errors.
    """
    cfg = scheduling or SchedulingConfig()
    labels, label_errors = render_map(
        "spec.scheduling.defaultLabels", cfg.default_labels, variables, labels=True
    )
    annotations, annotation_errors = render_map(
        "spec.scheduling.defaultAnnotations", cfg.default_annotations, variables, labels=False
    )
    # Modelplane's own label prefix is reserved for what it stamps itself.
    labels = {k: v for k, v in labels.items() if not k.startswith(c.LABEL_PREFIX)}
    annotations = {k: v for k, v in annotations.items() if not k.startswith(c.LABEL_PREFIX)}
    gang, queue = _gang(cfg.scheduler_name, labels, annotations, pod_group_name)
    # Kueue admits the top-level object; it reads the queue label there.
    workload_labels = {k: v for k, v in labels.items() if k == c.KUEUE_QUEUE_LABEL}
    result = SchedulingPlan(
        scheduler_name=cfg.scheduler_name or None,
        priority_class=priority or cfg.default_priority or None,
        pod_labels=labels,
        pod_annotations=annotations,
        workload_labels=workload_labels,
        gang=gang,
        queue=queue,
    )
    return result, label_errors + annotation_errors


def stamp_pod(meta: dict[str, Any], pod: dict[str, Any], p: SchedulingPlan) -> None:
    """Stamp the plan on one pod template: labels, annotations, scheduler and priority."""
    meta["labels"] = {**(meta.get("labels") or {}), **p.pod_labels}
    annotations = {**(meta.get("annotations") or {}), **p.pod_annotations}
    if annotations:
        meta["annotations"] = annotations
    if p.scheduler_name:
        pod["schedulerName"] = p.scheduler_name
    # The fleet decides a pod's priority: the template's own never survives.
    pod.pop("priorityClassName", None)
    pod.pop("priority", None)
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
