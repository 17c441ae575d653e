"""The render shows a wrapped object's status only where the real control plane keeps it fresh.

provider-kubernetes observes an Object right after creating it and then once
per `--poll` (ten minutes by default) unless the Object is watched. A wrapped
object whose status a workload cluster's controller writes later (a
GatewayClass accepted, a Deployment rolled out) is therefore shown as first
observed for up to ten minutes when its Object is not watched; the render,
which shows the settled status, would then predict what the real fleet does
not hold. Every example's render is checked: an Object whose predicted
wrapped object carries a status is watched, unless that status is settled when
the object is created.
"""

from __future__ import annotations

import pytest

from modelplane.api import constants as c
from modelplane.compose.readiness import wrapped

from .example_renders import example_dirs, rendered

# Status the API server sets when it creates the object, never changed later
# by a controller: the first observation is the settled one.
SETTLED_AT_CREATION = {("v1", "Namespace"): {"phase"}}


def _late_status(manifest: dict[str, object]) -> set[str]:
    status = manifest.get("status")
    fields = set(status) if isinstance(status, dict) else set()
    settled = SETTLED_AT_CREATION.get((str(manifest.get("apiVersion")), str(manifest.get("kind"))))
    return fields - (settled or set())


@pytest.mark.parametrize("example", example_dirs())
def test_every_object_whose_status_the_render_predicts_is_watched(example: str) -> None:
    unwatched = []
    for obj in rendered(example).store.objects():
        if (
            obj.get("apiVersion") != c.PROVIDER_KUBERNETES_API_VERSION
            or obj.get("kind") != "Object"
        ):
            continue
        late = _late_status(wrapped(obj) or {})
        if late and not (obj.get("spec") or {}).get("watch"):
            unwatched.append(f"{obj['metadata']['name']}: status {sorted(late)}")
    assert not unwatched, unwatched
