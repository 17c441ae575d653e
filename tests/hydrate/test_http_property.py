"""A property over random cut points and resume sequences: Ready means exactly the source's bytes.

Each example is a sequence of runs of one HTTP source against a loopback
server whose behaviour changes between runs — cut bodies, Range ignored or
misreported, If-Range ignored, validators missing or weak, no length, chunked,
a new version of the file. Whenever a run ends Ready, the published file is
byte for byte the version the server was serving; no run ends any other way
than Ready or a HydrationError; and once the server behaves, a run reaches
Ready whatever the earlier runs left behind.
"""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hydration import files, run
from hypothesis import example, given, settings
from hypothesis import strategies as st
from loopback import FileServer, serving_files

from modelplane.hydrate import sources
from modelplane.hydrate.staging import HydrationError

# Three versions of the file: two of one length (so only the bytes differ), one shorter.
_BASE = bytes(range(256)) * 600
VERSIONS = [
    _BASE,
    bytes(reversed(_BASE)),
    b"".join(hashlib.sha256(i.to_bytes(4, "big")).digest() for i in range(3750)),
]
NAME = "model.bin"

# What a careless, broken or changing server does in one run, on top of a
# careful one; each run draws a few.
FAULTS = {
    "cut": {},  # `cut_after` is drawn separately
    "ignores Range": {"honour_range": False},
    "ignores If-Range": {"honour_if_range": False},
    "serves another range": {},  # `range_shift` is drawn separately
    "no Content-Length": {"send_length": False},
    "HEAD without a length": {"head_length": False},
    "chunked": {"chunked": True},
    "no ETag": {"send_etag": False},
    "weak ETag": {"weak_etag": True},
    "no Last-Modified": {"last_modified": None},
    "file changed": {},  # the next version from this run on
}

runs = st.fixed_dictionaries(
    {
        "faults": st.sets(st.sampled_from(sorted(FAULTS)), max_size=3),
        "cut_after": st.integers(1, len(_BASE) - 1),
        "range_shift": st.sampled_from([1, -1, 4096, -4096]),
    }
)


def _behave(server: FileServer, run_: dict[str, Any], version: int) -> None:
    """A careful server serving `version` (its own ETag and date), plus the run's faults."""
    careful: dict[str, Any] = {
        "payload": VERSIONS[version],
        "last_modified": f"Mon, 0{version + 1} Jun 2026 00:00:00 GMT",
        "cut_after": run_["cut_after"] if "cut" in run_["faults"] else None,
        "range_shift": run_["range_shift"] if "serves another range" in run_["faults"] else 0,
        "honour_range": True,
        "honour_if_range": True,
        "send_length": True,
        "head_length": True,
        "chunked": False,
        "send_etag": True,
        "weak_etag": False,
    }
    for fault in run_["faults"]:
        careful.update(FAULTS[fault])
    for name, value in careful.items():
        setattr(server, name, value)


@pytest.fixture(scope="module")
def server() -> Iterator[FileServer]:
    """One server for every example (each run sets all of its behaviour first)."""
    with serving_files(FileServer(b"")) as state:
        yield state


def _cut(*faults: str) -> dict[str, Any]:
    return {"faults": {"cut", *faults}, "cut_after": 50_000, "range_shift": 0}


def _then(*faults: str) -> dict[str, Any]:
    return {"faults": set(faults), "cut_after": 1, "range_shift": 4096}


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
# The runs that published mixed files before (issue 24), always tried first.
@example(history=[_cut(), _then("ignores Range")], pinned=None)
@example(history=[_cut(), _then("file changed", "ignores If-Range")], pinned=None)
@example(
    history=[_cut("no ETag"), _then("no ETag", "file changed", "ignores If-Range")], pinned=None
)
@example(
    history=[
        _cut("no Last-Modified"),
        _then("no Last-Modified", "file changed", "ignores If-Range"),
    ],
    pinned=None,
)
@example(history=[_cut(), _then("serves another range")], pinned=None)
@example(history=[_cut("no Content-Length")], pinned=None)
@given(history=st.lists(runs, min_size=1, max_size=5), pinned=st.none() | st.integers(0, 2))
def test_a_ready_cache_always_holds_exactly_the_sources_bytes(
    server: FileServer, history: list[dict[str, Any]], pinned: int | None
) -> None:
    sha256 = None if pinned is None else hashlib.sha256(VERSIONS[pinned]).hexdigest()
    with tempfile.TemporaryDirectory() as tmp:
        dest = Path(tmp) / "model"
        fetch = sources.http(f"{server.url}/files/{NAME}", sha256)
        version = 0
        for run_ in history:
            version = (version + ("file changed" in run_["faults"])) % len(VERSIONS)
            _behave(server, run_, version)
            outcome = run(fetch, dest)
            assert outcome.error is None or isinstance(outcome.error, HydrationError), outcome.error
            assert outcome.final.phase in ("Ready", "Failed")
            if outcome.staged is not None:
                assert files(dest) == {NAME: server.payload}
                return
        # The server behaves from now on (the pinned version when there is one):
        # whatever the runs above left in the workspace, the next run is Ready.
        version = version if pinned is None else pinned
        _behave(server, {"faults": set(), "cut_after": 0, "range_shift": 0}, version)
        outcome = run(fetch, dest)
        assert outcome.final.phase == "Ready", outcome.final.message
        assert files(dest) == {NAME: VERSIONS[version]}
