"""The ClusterRoles of Modelplane's two personas, generated from the kinds (RBAC as data).

The **platform team** owns the fleet: every kind, cluster-scoped and namespaced,
including the FleetQuotas that grant a namespace its devices and PriorityClasses,
and the ModelReplicas and ModelEndpoints the function composes. **ML teams** own
what they serve in their namespaces: ModelDeployments (and their scale
subresource), ModelCaches and ModelServices; everything else they only read.

Five ClusterRoles, written by `modelplane package build` to `package/rbac/`
(beside the package roots: a Configuration package carries only XRDs,
Compositions and their metadata) and applied with `kubectl apply -f`:

- `modelplane:platform`: every verb on every Modelplane kind; aggregated to
  nothing, bound cluster-wide to the platform team;
- `modelplane:aggregate-to-edit`: write of the ML team's kinds; aggregated to
  Kubernetes' `admin` and `edit`;
- `modelplane:aggregate-to-view`: read of every namespaced kind; aggregated to
  `admin`, `edit` and `view`;
- `modelplane:fleet-view`: read of the cluster-scoped kinds; bound cluster-wide
  to whoever may see the fleet;
- `modelplane:ml-team`: the ML team's write and read in one role, to bind in a
  team's namespace where `edit` is more than it should have.

So a team given Kubernetes' `edit` (or `admin`) in its namespace may write its
ModelDeployments, ModelCaches and ModelServices and read the rest there, and
never write a FleetQuota, a ModelReplica or a ModelEndpoint: the write verbs of
those are in `modelplane:platform` only.
"""

from __future__ import annotations

from typing import Any

from modelplane.api import constants as c
from modelplane.api.kinds import KINDS, Kind

RBAC_API_VERSION = "rbac.authorization.k8s.io/v1"
READ = ["get", "list", "watch"]
WRITE = ["create", "update", "patch", "delete", "deletecollection"]
# What an ML team writes, by kind; the scale subresource is `kubectl scale mdep`.
ML_TEAM_KINDS = (c.KIND_MODEL_DEPLOYMENT, c.KIND_MODEL_CACHE, c.KIND_MODEL_SERVICE)
AGGREGATE = "rbac.authorization.k8s.io/aggregate-to-"


def _rules(kinds: list[Kind], verbs: list[str], subresources: bool) -> list[dict[str, Any]]:
    groups = sorted({k.group for k in kinds})
    rules = []
    for group in groups:
        resources = sorted(k.plural for k in kinds if k.group == group)
        if subresources:
            resources += sorted(f"{k.plural}/scale" for k in kinds if k.group == group and k.scale)
        rules.append({"apiGroups": [group], "resources": resources, "verbs": list(verbs)})
    return rules


def _role(name: str, rules: list[dict[str, Any]], to: tuple[str, ...] = ()) -> dict[str, Any]:
    labels = {c.LABEL_MANAGED_BY: c.MANAGED_BY, **{f"{AGGREGATE}{r}": "true" for r in to}}
    return {
        "apiVersion": RBAC_API_VERSION,
        "kind": "ClusterRole",
        "metadata": {"name": name, "labels": labels},
        "rules": rules,
    }


def cluster_roles() -> list[dict[str, Any]]:
    """The five ClusterRoles (see the module docstring), in a fixed order."""
    every = list(KINDS)
    namespaced = [k for k in KINDS if k.scope == "Namespaced"]
    cluster = [k for k in KINDS if k.scope == "Cluster"]
    ml = [k for k in KINDS if k.kind in ML_TEAM_KINDS]
    ml_write = _rules(ml, [*READ, *WRITE], subresources=True)
    read = _rules(namespaced, READ, subresources=False)
    return [
        _role("modelplane:platform", _rules(every, [*READ, *WRITE], subresources=True)),
        _role("modelplane:aggregate-to-edit", ml_write, ("admin", "edit")),
        _role("modelplane:aggregate-to-view", read, ("admin", "edit", "view")),
        _role("modelplane:fleet-view", _rules(cluster, READ, subresources=False)),
        _role("modelplane:ml-team", ml_write + read),
    ]
