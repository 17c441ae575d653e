"""Composed identity is stable: for every example, the identity of everything the
function composes matches its golden file (tests/golden/identity/<example>.json.gz).

A composed resource's identity is what makes Crossplane, provider-kubernetes or a
workload cluster treat it as the same object: apiVersion, kind, namespace and name,
every label and annotation (the composite and composition-resource-name that bind it
to its XR, the `modelplane.ai/*` labels, the revision hash). For a
provider-kubernetes `Object` also the cluster it targets (its providerConfigRef) and
the same of the manifest it carries, down to the metadata of every template in it
(a pod template's labels changed restarts the pods). Nothing is left out: the render
runs on a simulated clock, so no label or annotation changes without a change of
input. A change is a replacement on a live fleet; when one is meant, the release
notes name it and the golden files are rewritten (`MODELPLANE_UPDATE_GOLDEN=1`,
tests/README.md).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from .example_renders import (
    GOLDEN,
    example_dirs,
    golden_name,
    read_golden,
    rendered,
    updating,
    write_golden,
)

IDENTITY = GOLDEN / "identity"
COMPOSITE_LABEL = "crossplane.io/composite"
# Composed kinds the examples must cover, so a change to the render that stops
# composing one of them is seen here too.
COVERED = {"ModelReplica", "Object", "ServingStack", "ModelEndpoint", "Usage"}


def _meta(metadata: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in ("labels", "annotations"):
        if metadata.get(key):
            out[key] = dict(metadata[key])
    return out


def _key(obj: Mapping[str, Any]) -> str:
    md = obj.get("metadata") or {}
    where = f"{md['namespace']}/" if md.get("namespace") else ""
    return f"{obj.get('apiVersion')} {obj.get('kind')} {where}{md.get('name')}"


def _templates(value: Any, path: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """The metadata of every template nested in a manifest's spec, by path."""
    if isinstance(value, Mapping):
        for key, sub in sorted(value.items()):
            here = f"{path}.{key}"
            if key == "metadata" and isinstance(sub, Mapping):
                found = _meta(sub)
                if sub.get("name"):
                    found["name"] = sub["name"]
                if found:
                    yield here, found
            else:
                yield from _templates(sub, here)
    elif isinstance(value, list):
        for i, sub in enumerate(value):
            yield from _templates(sub, f"{path}[{i}]")


def identity(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The identity of one composed resource (see the module's docstring)."""
    out = _meta(obj.get("metadata") or {})
    spec = obj.get("spec") or {}
    if obj.get("kind") == "Object" and isinstance(spec.get("forProvider"), Mapping):
        out["providerConfig"] = (spec.get("providerConfigRef") or {}).get("name")
        manifest = spec["forProvider"].get("manifest") or {}
        inner: dict[str, Any] = {"id": _key(manifest), **_meta(manifest.get("metadata") or {})}
        templates = dict(_templates(manifest.get("spec"), "spec"))
        if templates:
            inner["templates"] = templates
        out["manifest"] = inner
    return out


def identities(example: str) -> dict[str, dict[str, Any]]:
    """The identity of everything composed in an example's render, by object."""
    result = rendered(example)
    return {
        _key(obj): identity(obj)
        for obj in result.store.objects()
        if COMPOSITE_LABEL in ((obj.get("metadata") or {}).get("labels") or {})
    }


def differences(kept: Mapping[str, Any], now: Mapping[str, Any]) -> list[str]:
    """One line per composed resource gone, new, or whose identity changed (and how)."""
    lines = [f"gone: {k}" for k in sorted(set(kept) - set(now))]
    lines += [f"new: {k}" for k in sorted(set(now) - set(kept))]
    for key in sorted(set(kept) & set(now)):
        lines += [f"changed: {key}: {d}" for d in _field_changes(kept[key], now[key], "")]
    return lines


def _field_changes(before: Any, after: Any, path: str) -> Iterator[str]:
    if isinstance(before, Mapping) and isinstance(after, Mapping):
        for k in sorted(set(before) | set(after)):
            yield from _field_changes(before.get(k), after.get(k), f"{path}.{k}" if path else k)
    elif before != after:
        yield f"{path}: {before!r} -> {after!r}"


@pytest.mark.parametrize("example", example_dirs())
def test_composed_identity_matches_the_golden_file(example: str) -> None:
    now = identities(example)
    path = IDENTITY / f"{golden_name(example)}.json.gz"
    if updating():
        write_golden(path, now)
    assert path.is_file(), f"{path} is missing; write it with MODELPLANE_UPDATE_GOLDEN=1"
    lines = differences(read_golden(path), now)
    shown = "\n".join(lines[:40]) + (f"\n... and {len(lines) - 40} more" if len(lines) > 40 else "")
    assert not lines, (
        f"examples/{example}: the identity of composed resources changed (a replacement on a "
        f"live fleet; name it in CHANGELOG.md and rewrite with MODELPLANE_UPDATE_GOLDEN=1):\n"
        + shown
    )


def test_every_golden_file_belongs_to_an_example() -> None:
    names = {f"{golden_name(e)}.json.gz" for e in example_dirs()}
    assert {p.name for p in IDENTITY.iterdir()} == names


def test_the_examples_cover_every_kind_of_composed_resource() -> None:
    kinds = {key.split()[1] for e in example_dirs() for key in identities(e)}
    assert kinds >= COVERED, COVERED - kinds


def test_a_changed_name_label_or_template_is_named() -> None:
    kept = {
        "v1 Thing ns/a": {"labels": {"modelplane.ai/revision": "abc"}},
        "v1 Thing ns/b": {"manifest": {"templates": {"spec.template.metadata": {"labels": {}}}}},
    }
    now = {
        "v1 Thing ns/a": {"labels": {"modelplane.ai/revision": "abd"}},
        "v1 Thing ns/c": {"manifest": {"templates": {"spec.template.metadata": {"labels": {}}}}},
    }
    assert differences(kept, now) == [
        "gone: v1 Thing ns/b",
        "new: v1 Thing ns/c",
        "changed: v1 Thing ns/a: labels.modelplane.ai/revision: 'abc' -> 'abd'",
    ]
