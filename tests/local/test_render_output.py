"""The render's YAML stream reads back as exactly the objects written."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from modelplane.local import ControlPlane, load_paths, output
from modelplane.local.output import dump_yaml

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

# Strings that stress the emitter's style choices: YAML keywords and numbers
# that must be quoted, indicators, leading/trailing spaces, line breaks
# (literal blocks), long lines (folding), unicode.
_TRICKY = st.sampled_from(
    [
        "",
        "yes",
        "no",
        "on",
        "null",
        "~",
        "1e3",
        "0x1F",
        "012",
        "- a",
        ": b",
        "#c",
        "a: b",
        " lead",
        "trail ",
        "two\nlines",
        "ends\n",
        "\n",
        "tab\tin",
        "ünï",
        "*star",
        "&amp",
        "x" * 120,
        "word " * 30,
    ]
)
_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**53), 2**53),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=40),
    _TRICKY,
)
_JSON = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.text(max_size=12) | _TRICKY, inner, max_size=4),
    ),
    max_leaves=25,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.dictionaries(st.text(max_size=12) | _TRICKY, _JSON, max_size=5), max_size=3))
def test_every_document_reads_back_equal(docs: list[dict[str, Any]]) -> None:
    back = [d for d in yaml.safe_load_all(dump_yaml(docs))]
    assert back == docs


def test_objects_are_written_out_whole_even_when_shared() -> None:
    shared = {"app": "chat"}
    text = dump_yaml([{"a": shared, "b": shared}])
    assert "&" not in text and "*" not in text
    assert text == "---\na:\n  app: chat\nb:\n  app: chat\n"


def _pyyaml_reference(docs: list[Any]) -> str:
    """The writer before events were built directly: PyYAML's representer and serializer."""
    return yaml.dump_all(
        docs,
        Dumper=output._Dumper,
        sort_keys=True,
        default_flow_style=False,
        allow_unicode=True,
        explicit_start=True,
    )


_ANY = st.one_of(_JSON, st.dates(), st.lists(_JSON, max_size=3))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.dictionaries(st.text(max_size=12) | _TRICKY, _ANY, max_size=5), max_size=3))
def test_the_writer_is_byte_identical_to_pyyamls_dumper(docs: list[dict[str, Any]]) -> None:
    assert dump_yaml(docs) == _pyyaml_reference(docs)


@given(st.lists(_JSON, max_size=3))
def test_any_top_level_value_is_written_as_pyyaml_would(docs: list[Any]) -> None:
    assert dump_yaml(docs) == _pyyaml_reference(docs)


def test_mixed_key_types_stay_unsorted_and_floats_keep_their_spelling() -> None:
    docs: list[Any] = [{"b": 1.0, 1: 1e20, "a": [float("inf"), float("nan"), -0.5]}, {}, [], "x\ny"]
    assert dump_yaml(docs) == _pyyaml_reference(docs)


# Documents shaped like Kubernetes objects (string keys, nested mappings and
# sequences of mappings or scalars), with text of every kind at every depth:
# what the block writer writes itself rather than leaving to the emitter.
_WORDS = st.lists(st.sampled_from(["a", "bb", "word", "x" * 30, "ü", "#", ":", "-"]), max_size=25)
_TEXT = st.one_of(
    _TRICKY,
    st.text(max_size=30),
    _WORDS.map(" ".join),
    _WORDS.map("\n".join),
    st.from_regex(r"[a-z0-9][a-z0-9.\-/]{0,40}", fullmatch=True),
)
_LEAF = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**53), 2**53), st.floats(allow_nan=False), _TEXT
)
_KEY = st.one_of(st.from_regex(r"[a-zA-Z][a-zA-Z0-9.\-/]{0,20}", fullmatch=True), _TRICKY)
_NODE = st.recursive(
    _LEAF,
    lambda inner: st.one_of(
        st.dictionaries(_KEY, inner, max_size=4),
        st.lists(st.one_of(_LEAF, st.dictionaries(_KEY, inner, max_size=3)), max_size=3),
    ),
    max_leaves=30,
)
_OBJECTS = st.lists(st.dictionaries(_KEY, _NODE, min_size=1, max_size=5), min_size=1, max_size=3)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_OBJECTS)
def test_the_block_writer_writes_what_the_emitter_writes(docs: list[dict[str, Any]]) -> None:
    assert dump_yaml(docs) == _pyyaml_reference(docs)


@pytest.mark.parametrize(
    "example", ["quickstart", "clusters", "caches/huggingface", "kserve/multi-node"]
)
def test_the_block_writer_writes_every_rendered_object_itself(example: str) -> None:
    # Rendered objects are the writer's own, not the emitter's (otherwise the
    # property above would mostly compare the emitter with itself), and the
    # stream is still the emitter's byte for byte.
    objects = ControlPlane(load_paths([str(EXAMPLES / example)])).run().store.objects()
    writer = output._BlockWriter()
    assert all(writer.document(obj) is not None for obj in objects)
    assert dump_yaml(objects) == _pyyaml_reference(objects)


@pytest.mark.parametrize(
    "docs",
    [
        pytest.param([{"metadata": {"labels": {"a" * n: "v"}}}], id=f"key-of-{n}")
        for n in (127, 128, 129, 200)
    ]
    + [
        pytest.param([{"spec": {"a": {"b": text}, "list": [text]}}], id=repr(text))
        for text in ("\u2028", "\u2029", "a\u2028b", "x\u2028 y", "\x85", "\r", "a\rb")
    ],
)
def test_long_keys_and_other_line_breaks_are_written_as_the_emitter_writes_them(
    docs: list[Any],
) -> None:
    # Keys past 128 characters are complex keys (`? key`); U+2028/U+2029, NEL
    # and CR break lines, so the text after them is indented where it stands.
    assert dump_yaml(docs) == _pyyaml_reference(docs)


def test_streamed_json_is_the_text_json_dumps_writes() -> None:
    # `render -o json` streams its output; the text must be what one
    # json.dumps (indent 2, sorted keys, no ASCII escaping) writes, in parts
    # smaller than the whole (so the whole never has to exist at once).
    import json

    objects = ControlPlane(load_paths([str(EXAMPLES / "quickstart")])).run().store.objects()
    objects.append({"apiVersion": "v1", "kind": "ConfigMap", "data": {"ü": "\u001b[0m", "n": 1.5}})
    parts: list[str] = []
    output.write_json(objects, parts.append)
    doc = {"apiVersion": "v1", "kind": "List", "items": objects}
    expected = json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    assert "".join(parts) == expected
    assert len(parts) > 2 and max(map(len, parts)) < len(expected) / 2
