"""Writing a render: YAML/JSON streams and the per-cluster output directory."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import yaml

from modelplane.api import constants as c
from modelplane.api.clouds import cloud_managing
from modelplane.api.frozen import FrozenDict, FrozenList
from modelplane.api.readers import read_inference_cluster
from modelplane.local import jsontext
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


_DICTS: frozenset[type] = frozenset((dict, FrozenDict))
_LISTS: frozenset[type] = frozenset((list, FrozenList))
"""The containers a store holds: plain, or read-only (`convert.as_stored`)."""


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
    elif kind in _DICTS:
        _mapping(data, out)
    elif kind in _LISTS:
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
    Written by `_BlockWriter` when it can write every document; otherwise by
    libyaml's emitter from events.
    """
    docs = list(objects)
    writer = _BlockWriter()
    parts: list[str] = []
    try:
        for obj in docs:
            text = writer.document(obj)
            if text is None:
                # The emitter carries state from one document to the next (an
                # open end), so the whole stream goes through it.
                return _emitted(docs)
            parts.append(text)
    finally:
        # The memos live for one stream only: memory stays bounded by one render.
        _str_events.clear()
        _implicit.clear()
    return "".join(parts)


def _emitted(objects: Iterable[Any]) -> str:
    """The documents as libyaml's emitter writes them, from events built directly."""
    events: list[yaml.Event] = [yaml.StreamStartEvent()]
    for obj in objects:
        events.append(yaml.DocumentStartEvent(explicit=True))
        _events(obj, events)
        events.append(yaml.DocumentEndEvent(explicit=False))
    events.append(yaml.StreamEndEvent())
    return str(yaml.emit(events, Dumper=_Dumper, allow_unicode=True))


_WIDTH = 80
"""libyaml's line width (PyYAML's default): it breaks a scalar at a space past it."""
_SIMPLE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/:-]*(?<!:)\Z")
"""Strings libyaml writes the same wherever they stand: no indicator, space, quote
or line break, no `:` at the end. As they are when they read back as strings,
else in single quotes (timestamps, numbers, booleans)."""


_MAX_SIMPLE_KEY = 128
"""The longest key libyaml writes as a simple key (`key: value`)."""


_BREAKS = frozenset("\r\x85\u2028\u2029")
"""Line breaks to libyaml besides "\n": text after one is indented where it stands."""


def _has_break(text: str) -> bool:
    return not _BREAKS.isdisjoint(text)


def _simple_text(value: str) -> str | None:
    """A `_SIMPLE` string's text: as it is, or single-quoted when it would read back
    as another type; None for any other string."""
    if not _SIMPLE.match(value):
        return None
    return value if _plain_tag(value) == _STR else f"'{value}'"


class _UnwritableError(Exception):
    """A document `_BlockWriter` leaves to the emitter (a shape it does not write)."""


class _BlockWriter:
    """Writes JSON documents as block YAML text, exactly as `_emitted` would.

    The layout of block mappings and (indentless) sequences is fixed; what
    is not, the text of each scalar, comes from libyaml itself: a scalar is
    emitted once in a small document that puts it at the same indentation and
    column, and its text is remembered. Scalars that cannot be broken across
    lines (no space) or that end before the line width read the same at any
    column, so most are emitted once per stream. A document of another shape
    (a sequence in a sequence, keys that are not strings, values of other
    types, text that ends in a line break) is left to the emitter.
    """

    def __init__(self) -> None:
        """Start with nothing remembered (the memos live for one stream)."""
        self._keys: dict[str, str] = {}
        self._fixed: dict[str, str] = {}  # strings whose text is the same anywhere
        self._free: dict[tuple[type, Any], str | None] = {}
        self._placed: dict[tuple[str, str, int, int], str] = {}

    def document(self, obj: Any) -> str | None:
        """The document's text (from `---`), or None when it is left to the emitter."""
        if type(obj) not in _DICTS or not obj:
            return None
        out = ["---\n"]
        try:
            self._mapping(obj, 0, out)
        except _UnwritableError:
            return None
        return "".join(out)

    def _mapping(self, data: dict[Any, Any], indent: int, out: list[str]) -> None:
        pad = " " * indent
        try:
            items = sorted(data.items())
        except TypeError:
            raise _UnwritableError from None
        keys, fixed = self._keys, self._fixed
        for key, value in items:
            name = keys.get(key) if type(key) is str else None
            head = pad + (name if name is not None else self._key(key)) + ":"
            kind = type(value)
            if kind is str:
                text = fixed.get(value)
                if text is not None:  # most values: remembered, the same anywhere
                    out.append(f"{head} {text}\n")
                    continue
            if kind in _DICTS and value:
                out.append(head + "\n")
                self._mapping(value, indent + 2, out)
            elif kind in _LISTS and value:
                out.append(head + "\n")
                self._sequence(value, indent, out)
            else:
                out.append(head + " " + self._scalar(value, "map", indent, len(head) + 1) + "\n")

    def _sequence(self, items: list[Any], indent: int, out: list[str]) -> None:
        """An indentless sequence: the value of a key of the mapping at `indent`."""
        dash = " " * indent + "- "
        for item in items:
            kind = type(item)
            if kind in _DICTS and item:
                sub: list[str] = []
                self._mapping(item, indent + 2, sub)
                out.append(dash + sub[0][indent + 2 :])
                out.extend(sub[1:])
            elif kind in _LISTS and item:
                raise _UnwritableError
            else:
                out.append(dash + self._scalar(item, "seq", indent, indent + 2) + "\n")

    def _key(self, key: Any) -> str:
        if type(key) is not str:
            raise _UnwritableError
        text = self._keys.get(key)
        if text is None:
            text = self._keys[key] = self._emitted_key(key)
        return text

    def _emitted_key(self, key: str) -> str:
        if len(key) > _MAX_SIMPLE_KEY:
            raise _UnwritableError  # written as a complex key (`? key`)
        simple = _simple_text(key)
        if simple is not None:
            return simple
        lines = _emitted([{key: 0}]).split("\n")
        # "---", "<key>: 0", "": a key that is written on one line, as a simple key.
        if len(lines) != 3 or not lines[1].endswith(": 0") or _has_break(lines[1]):
            raise _UnwritableError
        return lines[1][:-3]

    def _scalar(self, value: Any, slot: str, indent: int, column: int) -> str:
        kind = type(value)
        if kind is str:
            return self._str(value, slot, indent, column)
        if kind is bool:
            return "true" if value else "false"
        if value is None:
            return "null"
        if kind is int:
            return str(value)
        if kind is float or kind in _DICTS or kind in _LISTS:  # {} and [] too
            return self._free_text(value, (kind, repr(value)))
        raise _UnwritableError

    def _str(self, value: str, slot: str, indent: int, column: int) -> str:
        text = self._fixed.get(value)
        if text is not None:
            return text
        text = _simple_text(value)
        if text is not None:
            self._fixed[value] = text
            return text
        free = self._free_text(value, (str, value))
        if free is not None and " " not in value:
            self._fixed[value] = free  # one line, never broken: the same anywhere
            return free
        if free is not None and column + len(free) <= _WIDTH:
            return free
        if value.endswith("\n") and (len(value) == 1 or value[-2] in "\n\r"):
            raise _UnwritableError  # a block scalar kept open ("|+") ends the document open
        key = (value, slot, indent, column)
        text = self._placed.get(key)
        if text is None:
            text = self._placed[key] = self._placed_text(value, slot, indent, column)
        return text

    def _free_text(self, value: Any, memo: tuple[type, Any]) -> Any:
        """The value's one-line text when it stands right after `k: ` (None: not one line)."""
        if memo in self._free:
            return self._free[memo]
        lines = _emitted([{"k": value}]).split("\n")
        one_line = len(lines) == 3 and lines[1].startswith("k: ") and not _has_break(lines[1])
        text = lines[1][3:] if one_line else None
        if text is None and type(value) is not str:
            raise _UnwritableError
        self._free[memo] = text
        return text

    def _placed_text(self, value: str, slot: str, indent: int, column: int) -> str:
        """The value's text where it stands: emitted in a document that puts it there."""
        depth, lead = divmod(indent, 2)
        if lead or (slot == "map" and not 1 <= column - indent - 2 <= _MAX_SIMPLE_KEY):
            raise _UnwritableError  # no simple key puts a value there
        if slot == "map":
            key = "k" * (column - indent - 2)
            doc: Any = {key: value}
            prefix = " " * indent + key + ": "
        else:
            doc, prefix = {"k": [value]}, " " * indent + "- "
        for _ in range(depth):
            doc = {"k": doc}
        lines = _emitted([doc]).split("\n")
        skip = 1 + depth + (0 if slot == "map" else 1)
        text = "\n".join(lines[skip:]).rstrip("\n")
        if not text.startswith(prefix):
            raise _UnwritableError
        return text[len(prefix) :]


def dump_json(objects: Iterable[Obj]) -> str:
    """A Kubernetes `v1 List` of the objects as JSON."""
    doc = {"apiVersion": "v1", "kind": "List", "items": list(objects)}
    return json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def write_json(objects: Iterable[Obj], write: Callable[[str], Any]) -> None:
    """`dump_json`'s text, handed to `write` one object at a time.

    `json.dumps` keeps every piece of the text in a list and then the whole
    text, several times the size of the output at once (most of a large
    render's peak memory); each object is encoded on its own instead, by
    `jsontext.encode` (the same text, written faster than the standard
    library's indented encoder; a container the objects share, written
    once). The List's own keys sort around its items.
    """
    sep = '{\n  "apiVersion": "v1",\n  "items": ['
    objects = list(objects)  # alive while written: `jsontext.Shared` keys texts by identity
    shared = jsontext.Shared()
    for obj in objects:
        write(sep + "\n    " + jsontext.encode(obj, 2, shared))
        sep = ","
    end = "\n  ]" if sep == "," else sep + "]"
    write(end + ',\n  "kind": "List"\n}\n')


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
    for obj in result.store.list(c.API_VERSION, c.KIND_INFERENCE_CLUSTER):
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


HELM_GROUP = "helm.m.crossplane.io"


def provider_of(obj: Obj) -> str | None:
    """The provider that reconciles a managed resource (cloud MRs and Releases), if any."""
    api_version, kind = str(obj.get("apiVersion", "")), str(obj.get("kind", ""))
    cloud = cloud_managing(api_version, kind)
    if cloud is not None:
        return cloud.provider
    group = api_version.rsplit("/", 1)[0] if "/" in api_version else ""
    if group == HELM_GROUP and not kind.endswith("ProviderConfig"):
        return "provider-helm"
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
