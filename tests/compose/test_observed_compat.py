"""The new function reads what the old one wrote.

For every example, `tests/golden/observed-<release>/<example>.json.gz` keeps the
observed state the release left when its render settled: per composite, the
composite itself (its spec and the status the function wrote), each composed
resource as observed (with what the simulated providers and clusters reported),
and the required resources its last call was given. The test sends the function
each composite's request twice, through its gRPC entry point: once with that kept
state, once with the state of today's render, and requires the same answer (the
desired composite status and resources, results, conditions and requirements),
apart from the changes `tests/golden/observed-changes.yaml` names with a reason.

The function input (the Composition's step input) is today's in both requests:
an upgrade installs it with the new Configuration. Each call starts from an empty
decode cache, as a new function process does.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import crossplane.function.proto.v1.run_function_pb2 as fnv1
import pytest
import yaml
from google.protobuf.json_format import MessageToDict, ParseDict
from google.protobuf.struct_pb2 import Struct

from modelplane import __version__
from modelplane.api.kinds import KINDS
from modelplane.crossplane import FunctionRunner, convert
from modelplane.local.pipeline import run_function

from .example_renders import (
    GOLDEN,
    example_dirs,
    golden_name,
    read_golden,
    requests,
    updating,
    write_golden,
)

CHANGES = GOLDEN / "observed-changes.yaml"
MAPS = ("required", "extra")


def kept_dir() -> Path:
    """The observed state of the newest release kept (the current version's when none is)."""
    kept = sorted(
        (p for p in GOLDEN.glob("observed-*") if p.is_dir()),
        key=lambda p: tuple(int(x) for x in p.name.removeprefix("observed-").split(".")),
    )
    return kept[-1] if kept else GOLDEN / f"observed-{__version__}"


def _ref(obj: Mapping[str, Any]) -> str:
    md = obj.get("metadata") or {}
    where = f"{md['namespace']}/" if md.get("namespace") else ""
    rv = md.get("resourceVersion", "")
    return f"{obj.get('apiVersion')} {obj.get('kind')} {where}{md.get('name')}@{rv}"


def observed_state(reqs: Mapping[str, fnv1.RunFunctionRequest]) -> dict[str, Any]:
    """What the requests observe, each object kept once (composites share most of it)."""
    objects: dict[str, Any] = {}

    def put(s: Struct) -> str:
        obj = MessageToDict(s)
        ref = _ref(obj)
        objects.setdefault(ref, obj)
        return ref

    composites: dict[str, Any] = {}
    for key, req in sorted(reqs.items()):
        entry: dict[str, Any] = {"composite": put(req.observed.composite.resource)}
        entry["observed"] = {n: put(r.resource) for n, r in req.observed.resources.items()}
        for name, field in zip(MAPS, (req.required_resources, req.extra_resources), strict=True):
            if field:
                entry[name] = {n: [put(i.resource) for i in r.items] for n, r in field.items()}
        composites[key] = entry
    return {"objects": objects, "composites": composites}


def with_observed(
    req: fnv1.RunFunctionRequest, kept: Mapping[str, Any], objects: Mapping[str, Any]
) -> fnv1.RunFunctionRequest:
    """Today's request for a composite, observing the kept state instead of today's."""
    out = fnv1.RunFunctionRequest()
    out.CopyFrom(req)
    out.observed.Clear()
    out.required_resources.clear()
    out.extra_resources.clear()
    ParseDict(objects[kept["composite"]], out.observed.composite.resource)
    for name, ref in kept["observed"].items():
        ParseDict(objects[ref], out.observed.resources[name].resource)
    for name, target in zip(MAPS, (out.required_resources, out.extra_resources), strict=True):
        for sel, refs in (kept.get(name) or {}).items():
            items = target[sel].items
            for ref in refs:
                ParseDict(objects[ref], items.add().resource)
    return out


def answer(req: fnv1.RunFunctionRequest) -> dict[str, Any]:
    """What the function desires for a request (its response without meta and context)."""
    # Decoded objects are cached by uid and resourceVersion; the kept state and
    # today's may share both with different content.
    convert.DECODE_CACHE.clear()
    rsp = MessageToDict(run_function(FunctionRunner(log_errors=False), req))
    return {k: v for k, v in rsp.items() if k not in ("meta", "context")}


def differences(before: Any, after: Any, path: str = "") -> Iterator[str]:
    """Where two answers differ, one line per leaf (lists compared whole)."""
    if isinstance(before, Mapping) and isinstance(after, Mapping):
        for k in sorted(set(before) | set(after)):
            yield from differences(before.get(k), after.get(k), f"{path}.{k}" if path else k)
    elif before != after:
        yield f"{path}: {str(before)[:160]} -> {str(after)[:160]}"


def named_changes() -> dict[tuple[str, str], str]:
    """The changes release notes name: (example, composite) → reason."""
    doc = yaml.safe_load(CHANGES.read_text(encoding="utf-8")) or {}
    out = {}
    for entry in doc.get("changes") or []:
        assert entry.get("reason"), f"{CHANGES}: {entry} needs a reason"
        out[(entry["example"], entry["composite"])] = entry["reason"]
    return out


@pytest.mark.parametrize("example", example_dirs())
def test_the_function_desires_the_same_from_the_state_the_release_left(example: str) -> None:
    now = requests(example)
    name = f"{golden_name(example)}.json.gz"
    fresh = GOLDEN / f"observed-{__version__}" / name
    if updating() and not fresh.exists():
        # A release's observed state is kept as it was: only this version's, and
        # only where it is missing, is written (at release, or for a new example).
        write_golden(fresh, observed_state(now))
    path = kept_dir() / name
    assert path.is_file(), f"{path} is missing; write it with MODELPLANE_UPDATE_GOLDEN=1"
    kept = read_golden(path)
    gone = sorted(set(kept["composites"]) - set(now))
    assert not gone, f"examples/{example}: composites no longer rendered: {gone}"
    named = named_changes()
    failures = []
    for key, entry in sorted(kept["composites"].items()):
        old = with_observed(now[key], entry, kept["objects"])
        lines = list(differences(answer(old), answer(now[key])))
        reason = named.get((example, key))
        if reason is None and lines:
            failures.append(f"{key}:\n  " + "\n  ".join(lines[:10]))
        elif reason is not None and not lines:
            failures.append(f"{key}: listed in {CHANGES.name} ({reason}) but answers the same")
    assert not failures, (
        f"examples/{example}: the function answers differently from the observed state "
        f"{path.parent.name} kept (name the change in {CHANGES.name} and CHANGELOG.md):\n"
        + "\n".join(failures)
    )


def test_every_kept_state_belongs_to_an_example() -> None:
    names = {f"{golden_name(e)}.json.gz" for e in example_dirs()}
    assert {p.name for p in kept_dir().iterdir()} == names


def test_every_named_change_belongs_to_an_example() -> None:
    examples = set(example_dirs())
    assert all(example in examples for example, _ in named_changes())


def test_the_kept_state_feeds_every_kind_of_composer() -> None:
    kinds = set()
    for example in example_dirs():
        kept = read_golden(kept_dir() / f"{golden_name(example)}.json.gz")
        kinds |= {key.split()[0] for key in kept["composites"]}
    assert kinds == {kind.kind for kind in KINDS}
