"""Writing a render: YAML/JSON streams and the per-cluster output directory."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from modelplane.api import constants as c
from modelplane.api.readers import read_inference_cluster
from modelplane.local.engine import RenderResult
from modelplane.local.simulate import OBJECT_GROUPS
from modelplane.local.store import Obj

CLUSTER_SCOPE_DIR = "_cluster"


# libyaml's emitter (in C) when PyYAML was built with it: the same representer
# decides every style, and the emitter writes a render's YAML several times
# faster than the pure-Python one (most of a large render's time otherwise).
_BaseDumper: type[yaml.SafeDumper] = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


class _Dumper(_BaseDumper):  # type: ignore[valid-type,misc]
    """Block-style YAML; multi-line strings as literal blocks."""

    def ignore_aliases(self, data: Any) -> bool:
        """Never anchors: every object is written out whole, as kubectl does."""
        return True


def _str(dumper: yaml.representer.SafeRepresenter, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


# The events PyYAML's representer and serializer would produce for these
# dumper settings, built directly: for a large render the generic per-node
# machinery (representing, resolving every scalar twice) cost more than the C
# emitter itself. Types other than plain JSON ones go through the representer.
_STR = "tag:yaml.org,2002:str"
_RESOLVER = yaml.resolver.Resolver()
_implicit: dict[str, str] = {}


def _plain_tag(value: str) -> str:
    """The tag a plain scalar would resolve to (memoized: values repeat a lot)."""
    tag = _implicit.get(value)
    if tag is None:
        tag = _implicit[value] = _RESOLVER.resolve(yaml.ScalarNode, value, (True, False))
    return tag


def _scalar(tag: str, value: str, style: str | None = None) -> yaml.ScalarEvent:
    implicit = (_plain_tag(value) == tag, tag == _STR)
    return yaml.ScalarEvent(None, tag, implicit, value, style=style)


_str_events: dict[str, yaml.ScalarEvent] = {}


def _str_event(value: str) -> yaml.ScalarEvent:
    """One (immutable, shared) event per distinct string: keys and values repeat a lot."""
    event = _str_events.get(value)
    if event is None:
        event = _str_events[value] = _scalar(_STR, value, "|" if "\n" in value else None)
    return event


_CONSTANTS = {
    True: _scalar("tag:yaml.org,2002:bool", "true"),
    False: _scalar("tag:yaml.org,2002:bool", "false"),
    None: _scalar("tag:yaml.org,2002:null", "null"),
}


_MAP_START = yaml.MappingStartEvent(None, "tag:yaml.org,2002:map", True, flow_style=False)
_MAP_END = yaml.MappingEndEvent()
_SEQ_START = yaml.SequenceStartEvent(None, "tag:yaml.org,2002:seq", True, flow_style=False)
_SEQ_END = yaml.SequenceEndEvent()


def _mapping(data: dict[Any, Any], out: list[yaml.Event]) -> None:
    out.append(_MAP_START)
    try:
        items = sorted(data.items())
    except TypeError:  # as PyYAML's representer: keys of mixed types stay in insertion order
        items = list(data.items())
    append = out.append
    for key, value in items:
        # String keys and values (most of them) skip a call, from the memo.
        if type(key) is str:
            append(_str_events.get(key) or _str_event(key))
        else:
            _events(key, out)
        if type(value) is str:
            append(_str_events.get(value) or _str_event(value))
        else:
            _events(value, out)
    append(_MAP_END)


def _events(data: Any, out: list[yaml.Event]) -> None:
    """Append the events of one value, as `_Dumper` would serialize it."""
    kind = type(data)
    if kind is str:
        out.append(_str_event(data))
    elif kind is dict:
        _mapping(data, out)
    elif kind is list:
        out.append(_SEQ_START)
        for item in data:
            _events(item, out)
        out.append(_SEQ_END)
    elif kind is bool or data is None:
        out.append(_CONSTANTS[data])
    elif kind is int:
        out.append(_scalar("tag:yaml.org,2002:int", str(data)))
    else:
        _node_events(_REPRESENTER.represent_data(data), out)


def _node_events(node: yaml.Node, out: list[yaml.Event]) -> None:
    """Events of a node from the representer (floats, dates, anything unusual)."""
    if isinstance(node, yaml.ScalarNode):
        out.append(_scalar(node.tag, node.value, node.style))
    elif isinstance(node, yaml.SequenceNode):
        out.append(yaml.SequenceStartEvent(None, node.tag, True, flow_style=False))
        for item in node.value:
            _node_events(item, out)
        out.append(yaml.SequenceEndEvent())
    else:
        out.append(yaml.MappingStartEvent(None, node.tag, True, flow_style=False))
        for key, value in node.value:
            _node_events(key, out)
            _node_events(value, out)
        out.append(yaml.MappingEndEvent())


class _Representer(yaml.representer.SafeRepresenter):
    """`_Dumper`'s representer alone, for values outside the fast path."""

    def ignore_aliases(self, data: Any) -> bool:
        """Never anchors, as in `_Dumper`."""
        return True


_Representer.add_representer(str, _str)
_REPRESENTER = _Representer(default_flow_style=False, sort_keys=True)


def dump_yaml(objects: Iterable[Obj]) -> str:
    """A multi-document YAML stream; keys sorted, the way kubectl prints objects.

    Byte for byte what `yaml.dump_all(..., Dumper=_Dumper, sort_keys=True,
    default_flow_style=False, allow_unicode=True, explicit_start=True)` writes.
    """
    events: list[yaml.Event] = [yaml.StreamStartEvent()]
    try:
        for obj in objects:
            events.append(yaml.DocumentStartEvent(explicit=True))
            _events(obj, events)
            events.append(yaml.DocumentEndEvent(explicit=False))
    finally:
        # The memos live for one stream only: memory stays bounded by one render.
        _str_events.clear()
        _implicit.clear()
    events.append(yaml.StreamEndEvent())
    return str(yaml.emit(events, Dumper=_Dumper, allow_unicode=True))


def dump_json(objects: Iterable[Obj]) -> str:
    """A Kubernetes `v1 List` of the objects as JSON."""
    doc = {"apiVersion": "v1", "kind": "List", "items": list(objects)}
    return json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def deletion_comments(result: RenderResult) -> list[str]:
    """The deletion order (and anything stuck) as YAML comment lines; none without a deletion."""
    from modelplane.local.deletion import wave_lines

    out = []
    for title, lines in wave_lines(result.deletions):
        out.append(f"# deletion {title}:")
        out += [f"#   {line}" for line in lines]
    out += [f"# deletion stuck: {message}" for message in result.stuck]
    return out


def _kind_dirs(keys: Iterable[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """Directory name per (apiVersion, kind): the lower-case kind, plus the group if
    two API groups in the output share that kind."""
    by_kind: dict[str, set[str]] = {}
    for api_version, kind in keys:
        by_kind.setdefault(kind, set()).add(api_version)
    out = {}
    for kind, versions in by_kind.items():
        for av in versions:
            group = av.rsplit("/", 1)[0] if "/" in av else "core"
            out[(av, kind)] = kind.lower() if len(versions) == 1 else f"{kind.lower()}.{group}"
    return out


def _path(root: Path, kind_dir: str, obj: Obj) -> Path:
    meta = obj.get("metadata") or {}
    namespace = meta.get("namespace") or CLUSTER_SCOPE_DIR
    return root / kind_dir / str(namespace) / f"{meta.get('name', '_unnamed')}.yaml"


def cluster_name_for(result: RenderResult, obj: Obj) -> str | None:
    """The workload cluster a provider-kubernetes Object targets.

    The Object's provider config is mapped back to the InferenceCluster that
    publishes it in `status.providerConfigName`; without one, the provider
    config's own name stands for the cluster.
    """
    api_version = str(obj.get("apiVersion", ""))
    group = api_version.rsplit("/", 1)[0] if "/" in api_version else ""
    if group not in OBJECT_GROUPS or obj.get("kind") != "Object":
        return None
    ref = (obj.get("spec") or {}).get("providerConfigRef") or {}
    pc_name = ref.get("name")
    if not pc_name:
        return None
    for obj in result.store.list(c.API_VERSION, "InferenceCluster"):
        cluster = read_inference_cluster(obj)
        if cluster is not None and cluster.provider_config_name == pc_name:
            return cluster.name
    return str(pc_name)


def cluster_manifests(result: RenderResult) -> list[tuple[str, Obj]]:
    """Every manifest bound for a workload cluster, as (cluster, manifest), in store order."""
    out = []
    for obj in result.store.objects():
        cluster = cluster_name_for(result, obj)
        manifest = ((obj.get("spec") or {}).get("forProvider") or {}).get("manifest")
        if cluster is not None and isinstance(manifest, dict):
            out.append((cluster, manifest))
    return out


PROVIDER_DIRS = {
    ".aws.m.upbound.io": "provider-upjet-aws",
    ".gcp.m.upbound.io": "provider-upjet-gcp",
    "helm.m.crossplane.io": "provider-helm",
}


def provider_of(obj: Obj) -> str | None:
    """The provider that reconciles a managed resource (cloud MRs and Releases), if any."""
    api_version = str(obj.get("apiVersion", ""))
    group = api_version.rsplit("/", 1)[0] if "/" in api_version else ""
    for suffix, provider in PROVIDER_DIRS.items():
        if group.endswith(suffix) and not obj.get("kind", "").endswith("ProviderConfig"):
            return provider
    return None


def _write_providers(objects: list[Obj], root: Path) -> list[Path]:
    """`providers/<provider>/<kind>/<ns>/<name>.yaml`: what each provider would reconcile."""
    mine = [(p, o) for o in objects if (p := provider_of(o)) is not None]
    dirs = _kind_dirs((o["apiVersion"], o["kind"]) for _, o in mine)
    return [
        _write(_path(root / "providers" / p, dirs[(o["apiVersion"], o["kind"])], o), o)
        for p, o in mine
    ]


def write_output_dir(result: RenderResult, root: Path) -> list[Path]:
    """Write `control-plane/<kind>/<ns|_cluster>/<name>.yaml` for every stored object,
    `clusters/<cluster>/<kind>/<ns|_cluster>/<name>.yaml` for every wrapped manifest and
    `providers/<provider>/...` for every cloud managed resource and Release."""
    written: list[Path] = []
    # Start from a clean slate: a file left from an earlier render would claim
    # an object that no longer exists.
    for sub in ("control-plane", "clusters", "providers"):
        shutil.rmtree(root / sub, ignore_errors=True)
    objects = result.store.objects()
    dirs = _kind_dirs((o["apiVersion"], o["kind"]) for o in objects)
    for obj in objects:
        written.append(
            _write(_path(root / "control-plane", dirs[(obj["apiVersion"], obj["kind"])], obj), obj)
        )
    manifests = cluster_manifests(result)
    mdirs = _kind_dirs((str(m.get("apiVersion", "")), str(m.get("kind", ""))) for _, m in manifests)
    for cluster, manifest in manifests:
        kind_dir = mdirs[(str(manifest.get("apiVersion", "")), str(manifest.get("kind", "")))]
        written.append(_write(_path(root / "clusters" / cluster, kind_dir, manifest), manifest))
    written += _write_providers(objects, root)
    return written


def _write(path: Path, obj: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dump_yaml([obj]), encoding="utf-8")
    return path
