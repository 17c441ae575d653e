"""The render's YAML stream reads back as exactly the objects written."""

from __future__ import annotations

from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from modelplane.local.output import dump_yaml

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
