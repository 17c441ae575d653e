"""The cloud seam: one `Cloud` per cloud in one registry, and nothing else naming a cloud."""

from __future__ import annotations

import re
from pathlib import Path
from typing import get_args

import pytest

from modelplane.api.clouds import CLOUD_NAMES, CLOUDS, EXISTING, SOURCES, Cloud, cloud_named
from modelplane.api.clouds.base import CSIDriver
from modelplane.api.inference_class import Provisioning
from modelplane.api.inference_cluster import InferenceClusterSpec
from modelplane.api.kinds import KINDS
from modelplane.api.serving_stack import ServingStackSpec
from modelplane.compose.clusters.clouds import PROVISIONERS
from modelplane.compose.registry import composer_for

PACKAGE = Path(__file__).resolve().parents[2] / "modelplane"
# The only places a cloud may be named as a string: its own modules.
CLOUD_MODULES = (PACKAGE / "api" / "clouds", PACKAGE / "compose" / "clusters" / "clouds")
CLOUD_NAME = re.compile(r'"(EKS|GKE|AKS)"')


def test_no_cloud_is_named_outside_the_cloud_modules() -> None:
    # What `grep -rn '"EKS"\|"GKE"\|"AKS"' modelplane` checks: a branch on a
    # cloud's name anywhere else would treat the next cloud as one of these.
    found = [
        f"{path.relative_to(PACKAGE.parent)}:{n}: {line.strip()}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if not any(path.is_relative_to(d) for d in CLOUD_MODULES)
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if CLOUD_NAME.search(line)
    ]
    assert found == []


def test_every_cloud_has_one_composer_in_the_same_order() -> None:
    assert [p.cloud for p in PROVISIONERS] == list(CLOUDS)
    assert len(set(CLOUD_NAMES)) == len(CLOUDS)


@pytest.mark.parametrize("cloud", CLOUDS, ids=lambda c: c.name)
def test_a_clouds_composite_is_a_kind_served_by_its_composer(cloud: Cloud) -> None:
    kind = next(k for k in KINDS if k.kind == cloud.composite_kind)
    assert kind.spec is cloud.spec_model
    assert composer_for(kind.api_version, kind.kind) is not None


@pytest.mark.parametrize("cloud", CLOUDS, ids=lambda c: c.name)
def test_the_kinds_carry_each_clouds_block(cloud: Cloud) -> None:
    # The block fields are written out (typed) on the models; this keeps them
    # in step with the registry.
    cluster = InferenceClusterSpec.model_fields[cloud.block]
    provisioning = Provisioning.model_fields[cloud.block]
    assert cloud.source_model in get_args(cluster.annotation)
    assert cloud.class_model in get_args(provisioning.annotation)


def test_the_enums_are_generated_from_the_registry() -> None:
    assert (EXISTING, *CLOUD_NAMES) == SOURCES
    source = InferenceClusterSpec.model_json_schema(by_alias=True)["properties"]["source"]
    assert source["enum"] == list(SOURCES)
    provider = Provisioning.model_json_schema(by_alias=True)["properties"]["provider"]
    assert provider["enum"] == list(CLOUD_NAMES)
    stack = ServingStackSpec.model_json_schema(by_alias=True)["properties"]["cloud"]
    assert stack["enum"] == [*CLOUD_NAMES, EXISTING]
    assert cloud_named(EXISTING) is None


@pytest.mark.parametrize("cloud", CLOUDS, ids=lambda c: c.name)
def test_every_cloud_maps_every_csi_driver_and_manages_its_pools(cloud: Cloud) -> None:
    assert set(cloud.storage_classes) == set(get_args(CSIDriver))
    for managed in (cloud.node_pool, cloud.system_pool):
        assert cloud.manages(managed.api_version, managed.kind)
    assert cloud.stockout_codes


@pytest.mark.parametrize("cloud", CLOUDS, ids=lambda c: c.name)
def test_a_source_block_missing_for_its_cloud_is_refused(cloud: Cloud) -> None:
    with pytest.raises(ValueError, match=f"{cloud.block} is required when source is {cloud.name}"):
        InferenceClusterSpec.model_validate(
            {"source": cloud.name, "pools": [{"name": "a", "className": "x"}]}
        )
