"""Objects and composites are composed with the finalizer their controller writes first.

Before it creates anything, provider-kubernetes (crossplane-runtime's managed
reconciler) writes two things onto an Object, each in an update of its own:
the external name, which for an Object is the Object's own name
(NameAsExternalName), and the managed resource finalizer. Each update is a
control-plane write and a watch event that reconciles the composite that
composed the Object again. Composed with both in place, the provider finds
them there and skips both updates (measured on the local fleet: the audit log
of the control plane shows neither update for such an Object).

Crossplane does the same to a composite: its finalizer first, in an update, a
watch event for the composite that composed it. A ModelDeployment composes its
ModelReplicas and ModelEndpoints with it (the hand-written manifests of
test_model_deployment_composer.py and test_deployment_endpoints.py).

A copy kept as observed (`as_desired`) keeps the finalizer, or the apply would
take it off again and the controller put it back.
"""

from __future__ import annotations

import pytest

from modelplane.api import constants as c
from modelplane.compose.common import as_desired

from .example_renders import example_dirs, rendered

FINALIZER = "finalizer.managedresource.crossplane.io"
COMPOSITE = "composite.apiextensions.crossplane.io"
EXTERNAL_NAME = "crossplane.io/external-name"


def _is_object(obj: dict[str, object]) -> bool:
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    return api_version == c.PROVIDER_KUBERNETES_API_VERSION and kind == "Object"


@pytest.mark.parametrize("example", example_dirs())
def test_every_composed_object_carries_its_external_name_and_the_provider_finalizer(
    example: str,
) -> None:
    objects = [o for o in rendered(example).store.objects() if _is_object(o)]
    missing = [
        o["metadata"]["name"]
        for o in objects
        if (o["metadata"].get("annotations") or {}).get(EXTERNAL_NAME) != o["metadata"]["name"]
        or FINALIZER not in (o["metadata"].get("finalizers") or [])
    ]
    assert not missing, missing


def _observed(api_version: str, kind: str, finalizers: list[str]) -> dict[str, object]:
    return {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {
            "name": "x",
            "namespace": "team",
            "uid": "1",
            "annotations": {EXTERNAL_NAME: "x"},
            "finalizers": finalizers,
        },
        "spec": {"a": 1},
        "status": {"b": 2},
    }


def test_a_kept_object_keeps_the_provider_finalizer_and_nothing_else_server_owned() -> None:
    kept = as_desired(
        _observed(c.PROVIDER_KUBERNETES_API_VERSION, "Object", [FINALIZER, "in-use.example"])
    )
    assert kept == {
        "apiVersion": c.PROVIDER_KUBERNETES_API_VERSION,
        "kind": "Object",
        "metadata": {
            "name": "x",
            "namespace": "team",
            "annotations": {EXTERNAL_NAME: "x"},
            "finalizers": [FINALIZER],
        },
        "spec": {"a": 1},
    }


@pytest.mark.parametrize(
    ("api_version", "kind", "finalizers"),
    [
        # An Object the provider has not finalized yet: nothing to keep.
        (c.PROVIDER_KUBERNETES_API_VERSION, "Object", []),
        # Any other kind's finalizers are its controllers', never the function's.
        (c.API_VERSION, "ModelReplica", [FINALIZER]),
        ("protection.crossplane.io/v1beta1", "Usage", [FINALIZER]),
    ],
)
def test_no_other_finalizer_is_kept(api_version: str, kind: str, finalizers: list[str]) -> None:
    kept = as_desired(_observed(api_version, kind, finalizers))
    assert "finalizers" not in kept["metadata"]


def test_a_kept_composite_keeps_crossplanes_finalizer() -> None:
    kept = as_desired(_observed(c.API_VERSION, "ModelReplica", ["other.example", COMPOSITE]))
    assert kept["metadata"]["finalizers"] == [COMPOSITE]
