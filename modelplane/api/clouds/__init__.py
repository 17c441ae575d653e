"""The clouds that provision InferenceClusters: one module per cloud, one registry.

Each cloud module (`eks`, `gke`, `aks`) holds its API blocks and its `CLOUD`
declaration (`base.Cloud`: capabilities as data); `CLOUDS` below is the one
place a cloud is registered. Everything that varies by cloud is read from
here: the `source`/`provider`/`cloud` enums (`SOURCES`, `CLOUD_NAMES`), the
provisioning composites' kinds (`api/kinds.py`), the upjet providers the
package depends on (`api/xrd.py`) and what the composers and the render
simulation need (`compose/clusters/clouds/`, `local/`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from modelplane.api.clouds import aks, eks, gke
from modelplane.api.clouds.base import Cloud

CLOUDS: tuple[Cloud, ...] = (eks.CLOUD, gke.CLOUD, aks.CLOUD)

CLOUD_NAMES: tuple[str, ...] = tuple(cloud.name for cloud in CLOUDS)
EXISTING = "Existing"
# InferenceCluster `spec.source`: a cluster that exists, or one a cloud provisions.
SOURCES: tuple[str, ...] = (EXISTING, *CLOUD_NAMES)
_BY_NAME = {cloud.name: cloud for cloud in CLOUDS}

# The enums the XRDs carry, generated from the registry. Pydantic sees the
# Literal (so the schema lists exactly the registered names); type checkers see
# `str`, because a Literal built at runtime cannot be checked statically.
if TYPE_CHECKING:
    CloudName = str
    SourceName = str
    StackCloudName = str
else:
    CloudName = Literal[CLOUD_NAMES]
    SourceName = Literal[SOURCES]
    StackCloudName = Literal[(*CLOUD_NAMES, EXISTING)]


def cloud_named(name: str) -> Cloud | None:
    """The registered cloud called `name` (a `source` or `provider` value); None for Existing."""
    return _BY_NAME.get(name)


def cloud_managing(api_version: str, kind: str) -> Cloud | None:
    """The cloud whose provider reconciles a managed resource of this kind, if any."""
    for cloud in CLOUDS:
        if cloud.manages(api_version, kind):
            return cloud
    return None


def source_rules(field: str) -> list[tuple[str, str]]:
    """CEL rules: a cloud's block is required when `field` names that cloud."""
    return [
        (
            f"self.{field} != '{cloud.name}' || has(self.{cloud.block})",
            f"{cloud.block} is required when {field} is {cloud.name}",
        )
        for cloud in CLOUDS
    ]


__all__ = [
    "CLOUDS",
    "CLOUD_NAMES",
    "EXISTING",
    "SOURCES",
    "Cloud",
    "CloudName",
    "SourceName",
    "StackCloudName",
    "cloud_managing",
    "cloud_named",
    "source_rules",
]
