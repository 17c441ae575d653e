"""`modelplane render` pauses the cyclic garbage collector while it works, and restores it."""

from __future__ import annotations

import gc

import pytest

from modelplane.cli.render import _collector_paused


@pytest.mark.parametrize("enabled", [True, False])
def test_the_collector_is_off_inside_and_as_it_was_after(enabled: bool) -> None:
    was = gc.isenabled()
    try:
        (gc.enable if enabled else gc.disable)()
        with _collector_paused():
            assert not gc.isenabled()
        assert gc.isenabled() is enabled
        with pytest.raises(RuntimeError), _collector_paused():
            raise RuntimeError("a failed render")
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()


def test_what_it_built_is_left_to_the_oldest_generation() -> None:
    with _collector_paused():
        kept = [{"n": [i]} for i in range(50_000)]
    # Already in the oldest generation: no young-generation pass walks them.
    oldest = {id(x) for x in gc.get_objects(generation=2)}
    assert id(kept[0]) in oldest and id(kept[-1]["n"]) in oldest
    # A cycle made meanwhile is still collected by a full pass.
    with _collector_paused():
        cycle: list[object] = []
        cycle.append(cycle)
        del cycle
    assert gc.collect() >= 1
