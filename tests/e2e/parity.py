"""Render parity: what `modelplane render --output-dir` predicts, read back from the real fleet.

Every object the render writes must exist on the real control plane or in the
real workload cluster it names, and every field the render predicts must hold
there (the real object may carry more: API-server defaults, status the real
providers fill). Fields only a server sets are left out of the comparison:
uid, resourceVersion, timestamps, managedFields, and on composites the
conditions' times and Crossplane's own bookkeeping (listed in IGNORED).
"""

from __future__ import annotations

import contextlib
import fnmatch
import ipaddress
import json
import subprocess
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from modelplane.dev.kubeapi import Api
from modelplane.local.gateway_sim import ADDRESSES

# Keys whose values only a server (or only the render's clock) decides.
IGNORED_KEYS = frozenset(
    {
        "uid",
        "resourceVersion",
        "creationTimestamp",
        "generation",
        "managedFields",
        "lastTransitionTime",
        "lastUpdateTime",
        "lastProbeTime",
        "observedGeneration",
        # When the inventory agent wrote its summary (the render's clock is fixed).
        "observedAt",
    }
)
# Whole fields left out, by path: (kind or "*", dotted path).
IGNORED_PATHS: frozenset[tuple[str, str]] = frozenset(
    {
        # Crossplane's bookkeeping of the composite's composed resources and
        # the composition revision it picked: names and order are the real
        # reconciler's (checked through the composed objects themselves).
        ("*", "spec.crossplane"),
        # The render invents one ServiceAccount token / kubeconfig text per
        # Secret; the real Secrets hold dev up's kubeconfigs.
        ("Secret", "data"),
        ("Secret", "stringData"),
    }
)
# Condition messages may name times or counts of events; the type, status and
# reason are the verdict.
CONDITION_KEYS = ("type", "status", "reason")


@dataclass(frozen=True)
class Difference:
    """One predicted field that the real object does not hold as predicted."""

    where: str
    path: str
    predicted: Any
    real: Any

    def __str__(self) -> str:
        return f"{self.where}: {self.path}: render {self.predicted!r}, real {self.real!r}"


def render(inputs: Path, out: Path) -> None:
    """Run `modelplane render -o yaml --output-dir` over a folder of manifests."""
    cmd = [
        sys.executable,
        "-m",
        "modelplane",
        "render",
        str(inputs),
        "-o",
        "yaml",
        "--output-dir",
        str(out),
    ]
    subprocess.run(cmd, check=True, capture_output=True)


def predicted(out: Path, part: str) -> Iterator[tuple[Path, dict[str, Any]]]:
    """Every object the render wrote under out/<part> (control-plane, or clusters/<name>)."""
    for path in sorted((out / part).rglob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if isinstance(doc, dict) and doc.get("kind"):
                yield path, doc


def _conditions(value: Any) -> dict[str, dict[str, Any]]:
    items = value if isinstance(value, list) else []
    return {
        str(c.get("type")): {k: c.get(k) for k in CONDITION_KEYS}
        for c in items
        if isinstance(c, dict)
    }


def _compare_conditions(want: Any, got: Any, path: str) -> Iterator[tuple[str, Any, Any]]:
    """Every predicted condition holds (type, status, reason); the real object may add
    conditions of its own (Crossplane's `Responsive`, see the README)."""
    real = _conditions(got)
    for kind, cond in _conditions(want).items():
        if real.get(kind) != cond:
            yield f"{path}[{kind}]", cond, real.get(kind)


def _ignored(kind: str, path: str) -> bool:
    return any(path == p and k in ("*", kind) for k, p in IGNORED_PATHS)


def compare(kind: str, want: Any, got: Any, path: str = "") -> Iterator[tuple[str, Any, Any]]:
    """Each place where `want` (the render) is not a subset of `got` (the real object)."""
    if _ignored(kind, path):
        return
    if path.endswith(".json") and isinstance(want, str) and isinstance(got, str):
        # A ConfigMap's JSON document (the inventory summary): compared as data.
        with contextlib.suppress(ValueError):
            want, got = json.loads(want), json.loads(got)
    if isinstance(want, Mapping):
        yield from _compare_mapping(kind, want, got, path)
    elif isinstance(want, list):
        if not isinstance(got, list) or len(got) != len(want):
            yield path, want, got
            return
        for i, (w, g) in enumerate(zip(want, got, strict=True)):
            yield from compare(kind, w, g, f"{path}[{i}]")
    elif want != got and not _same_gateway_address(want, got):
        yield path, want, got


# A Gateway's address is its load balancer's: the render gives each Gateway a
# documentation address (RFC 5737, `local.gateway_sim`), the real fleet the one
# its load balancer hands out (inside the fleet network's 10/8). Parity holds
# when every place the render puts one address holds the same real one: a
# one-to-one mapping, built as the comparison meets the pairs.
_GATEWAY_ADDRESSES: dict[str, str] = {}


def _same_gateway_address(want: Any, got: Any) -> bool:
    if not (isinstance(want, str) and isinstance(got, str) and want in ADDRESSES):
        return False
    with contextlib.suppress(ValueError):
        if ipaddress.ip_address(got) not in ipaddress.ip_network("10.0.0.0/8"):
            return False
    known = _GATEWAY_ADDRESSES.get(want)
    if known is None and got not in _GATEWAY_ADDRESSES.values():
        _GATEWAY_ADDRESSES[want] = got
        return True
    return known == got


def _compare_mapping(
    kind: str, want: Mapping[str, Any], got: Any, path: str
) -> Iterator[tuple[str, Any, Any]]:
    if not isinstance(got, Mapping):
        yield path, want, got
        return
    for key, value in want.items():
        if key in IGNORED_KEYS:
            continue
        sub = f"{path}.{key}" if path else str(key)
        if _ignored(kind, sub):
            continue
        if key == "conditions":
            yield from _compare_conditions(value, got.get(key), sub)
        elif key not in got:
            yield sub, value, None
        else:
            yield from compare(kind, value, got[key], sub)


def differences(
    out: Path, part: str, api: Api, unobserved: frozenset[str] = frozenset()
) -> tuple[int, list[Difference]]:
    """(objects compared, differences) between the render's part and one real API server.

    `unobserved` holds shell-style patterns over "<part> <Kind> <ns>/<name> <path>"
    for what the real fleet cannot observe.
    """
    found: list[Difference] = []
    count = 0
    for _, doc in predicted(out, part):
        meta = doc.get("metadata") or {}
        where = f"{part} {doc['kind']} {meta.get('namespace', '')}/{meta['name']}"
        real = api.get(doc["apiVersion"], doc["kind"], meta["name"], meta.get("namespace", ""))
        count += 1
        diffs = [("", "exists", None)] if real is None else compare(doc["kind"], doc, real)
        found += [
            Difference(where, p, w, g)
            for p, w, g in diffs
            if not any(fnmatch.fnmatchcase(f"{where} {p or '*'}", u) for u in unobserved)
        ]
    return count, found
