"""content_key and parse_spec: a spec remembered by its exact content (tests/api/test_memo.py)."""

from __future__ import annotations

from typing import Any

from modelplane.api.frozen import frozen
from modelplane.api.serving_stack import ServingStackSpec
from modelplane.compose import common
from modelplane.compose.common import content_key, parse_spec


def _xr(spec: Any) -> dict[str, Any]:
    return {"apiVersion": "x/v1", "kind": "X", "metadata": {"name": "a"}, "spec": spec}


def test_equal_specs_share_a_key_and_crossplane_bookkeeping_is_no_part_of_it() -> None:
    spec = {"a": [1, {"b": "c"}], "d": None}
    key = content_key(_xr(spec))
    assert content_key(_xr(frozen(spec))) == key
    assert content_key(_xr({**spec, "crossplane": {"resourceRefs": [{"name": "r"}]}})) == key


def test_values_of_other_types_or_content_never_share_a_key() -> None:
    specs = [
        {"n": 1},
        {"n": 1.0},
        {"n": True},
        {"n": "1"},
        {"n": [1]},
        {"n": None},
        {"n": "a', 'm': 'b"},
        {"n": "a", "m": "b"},
        {},
        None,
    ]
    assert len({content_key(_xr(s)) for s in specs}) == len(specs)
    # Any spec that is not an object reads as none at all (`spec_body`).
    assert content_key(_xr("spec")) == content_key(_xr(None))


def _stack(cluster: Any, refs: int) -> dict[str, Any]:
    spec = {"clusterName": cluster, "providerConfigName": "pc"}
    spec["crossplane"] = {"resourceRefs": [{"name": f"r{i}"} for i in range(refs)]}
    return frozen({"metadata": {"name": "s"}, "spec": spec})


def test_a_spec_parses_once_by_content_as_it_parses_afresh() -> None:
    for cluster in ("east", 7, None):  # valid, and two invalid ones
        common._PARSED.clear()
        afresh = parse_spec(ServingStackSpec, _stack(cluster, 0))
        assert (afresh[0] is None) == (cluster != "east")
        # Other decoded objects of the same spec (Crossplane's bookkeeping changed).
        again = parse_spec(ServingStackSpec, _stack(cluster, 1))
        assert again == afresh
        assert again[0] is afresh[0]
    # Another spec is parsed on its own.
    west, _ = parse_spec(ServingStackSpec, _stack("west", 1))
    assert west is not None and west.cluster_name == "west"
