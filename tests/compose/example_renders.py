"""Every example folder rendered once per test session, and the golden files kept of them.

The upgrade tests (composed identity, observed state of a release) compare what the
current function composes for `examples/**` with what is kept under `tests/golden/`;
`MODELPLANE_UPDATE_GOLDEN=1` rewrites the kept files instead (tests/README.md).
"""

from __future__ import annotations

import functools
import gzip
import json
import os
from pathlib import Path
from typing import Any

import crossplane.function.proto.v1.run_function_pb2 as fnv1

from modelplane.local import ControlPlane, load_paths
from modelplane.local.engine import RenderResult
from modelplane.local.fetch import Fetched, Fetcher
from modelplane.local.store import Key

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
GOLDEN = ROOT / "tests" / "golden"
UPDATE_ENV = "MODELPLANE_UPDATE_GOLDEN"


def example_dirs() -> list[str]:
    """Every folder of examples/ that holds YAML, relative to examples/ (what `render` takes)."""
    found = {p.parent.relative_to(EXAMPLES).as_posix() for p in EXAMPLES.rglob("*.yaml")}
    return sorted(found)


def golden_name(example: str) -> str:
    """The file name an example's golden data is kept under (its path, `/` as `__`)."""
    return example.replace("/", "__")


@functools.cache
def control_plane(example: str) -> tuple[ControlPlane, RenderResult]:
    """The example rendered to its fixed point (as `modelplane render` does), once,
    with the control plane that rendered it."""
    plane = ControlPlane(load_paths([EXAMPLES / example]))
    return plane, plane.run()


def rendered(example: str) -> RenderResult:
    """The example rendered to its fixed point."""
    return control_plane(example)[1]


def requests(example: str) -> dict[str, fnv1.RunFunctionRequest]:
    """For each composite of the rendered example, the request Crossplane would send
    now: the composite and its composed resources as observed, and the required
    resources its last call settled on, fetched again."""
    plane, result = control_plane(example)
    out = {}
    for xr in result.composites():
        key = Key.of(xr)
        req = plane.pipeline.request(xr, plane.fetcher.observed(xr))
        settled = plane.pipeline.settled.get(key)
        if settled is not None:
            fill_required(req, plane.fetcher, plane.fetcher.require(settled))
        out[str(key)] = req
    return out


def fill_required(req: fnv1.RunFunctionRequest, fetcher: Fetcher, required: Fetched) -> None:
    """Put fetched objects into the request's required (or extra) resources, as Crossplane."""
    for fetch, objs in required:
        target = req.required_resources if fetch.field == "required" else req.extra_resources
        items = target[fetch.name].items
        for obj in objs:
            items.add().resource.CopyFrom(fetcher.struct(obj))


def updating() -> bool:
    """Whether this run rewrites the golden files instead of checking them."""
    return os.environ.get(UPDATE_ENV, "") not in ("", "0")


def write_golden(path: Path, value: Any) -> None:
    """Keep value as gzipped canonical JSON (sorted keys, one key per line; `zcat` reads it).

    Compressed because the examples repeat most of what they compose (1.6 MB of text
    for the composed identities alone, some 0.1 MB gzipped); no timestamp in the
    gzip header, so rewriting an unchanged value rewrites the same bytes.
    """
    text = json.dumps(value, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(text.encode("utf-8"), compresslevel=9, mtime=0))


def read_golden(path: Path) -> Any:
    """A kept golden value."""
    return json.loads(gzip.decompress(path.read_bytes()).decode("utf-8"))
