"""The README's API table names every kind the package serves and every cloud a
cluster can come from (a kind or a cloud added without a row fails here)."""

from __future__ import annotations

import re
from pathlib import Path

from modelplane.api.clouds import CLOUDS
from modelplane.api.kinds import CLOUD_KINDS, KINDS

README = Path(__file__).resolve().parents[2] / "README.md"


def _api_rows() -> dict[str, str]:
    """The README's `## The API` table: each row by its kind cell."""
    text = README.read_text(encoding="utf-8")
    section = text[text.index("## The API") :]
    section = section[: section.index("\n## ", 1)] if "\n## " in section[1:] else section
    rows = re.findall(r"^\| ([A-Za-z, ]+) \|(.*)\|$", section, flags=re.M)
    return {kinds: rest for kinds, rest in rows if kinds != "kind"}


def test_every_kind_has_a_row() -> None:
    named = {k.strip() for cell in _api_rows() for k in cell.split(",")}
    assert {k.kind for k in KINDS} - named == set()
    assert "FleetQuota" in named  # the kind the table once left out


def test_every_cloud_is_named_where_clusters_are_provisioned() -> None:
    rows = _api_rows()
    (provisioning,) = [cell for cell in rows if "EKSCluster" in cell]
    assert {k.kind for k in CLOUD_KINDS} == {k.strip() for k in provisioning.split(",")}
    for cloud in CLOUDS:
        assert re.search(rf"`(source: )?{cloud.name}`", rows[provisioning]), cloud.name
        assert f"`{cloud.name}`" in rows["InferenceCluster"], cloud.name
