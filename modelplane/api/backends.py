"""The serving backends as the API knows them: each one's name and the cluster
setting that enables it.

`ModelDeployment.spec.backend` names a backend; an InferenceCluster runs it
when the setting its declaration names is true (Native needs none: every
cluster runs it). This one table is what the reader of a cluster's backends
(`api.readers.read_backends`), the scheduler's refusal of a cluster lacking one
(`scheduling.words`) and the composer's backend registry
(`compose.replica.backends`, where each backend carries its declaration) all
use, so a new backend names its setting once and no message points at another
backend's. `tests/compose/test_backends.py` ties the `Backend` enum, this table
and the registry together.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel

from modelplane.api import constants as c
from modelplane.api.inference_cluster import InferenceClusterSpec, ServingStackConfig


def _wire(model: type[BaseModel], name: str) -> str:
    alias = model.model_fields[name].alias
    return alias if alias is not None else name


@dataclass(frozen=True)
class BackendDeclaration:
    """A serving backend's name and the `spec.servingStack` block that enables it."""

    name: str
    # The field of `ServingStackConfig` (its Python name) whose `enabled` says
    # the cluster runs this backend; None: every cluster runs it.
    stack_field: str | None = None

    @property
    def setting(self) -> str | None:
        """The cluster's wire path that enables it (`spec.servingStack.<block>.enabled`)."""
        if self.stack_field is None:
            return None
        stack = _wire(InferenceClusterSpec, "serving_stack")
        return f"spec.{stack}.{_wire(ServingStackConfig, self.stack_field)}.enabled"

    def enabled(self, stack: ServingStackConfig | None) -> bool:
        """Whether a cluster with this `spec.servingStack` (None: absent) runs the backend."""
        if self.stack_field is None:
            return True
        block = getattr(stack, self.stack_field, None) if stack is not None else None
        return block is not None and block.enabled is True


NATIVE = BackendDeclaration(c.BACKEND_NATIVE)
KSERVE = BackendDeclaration(c.BACKEND_KSERVE, "kserve")
DECLARED: dict[str, BackendDeclaration] = {b.name: b for b in (NATIVE, KSERVE)}


def runs_everywhere(name: str) -> bool:
    """Whether every cluster runs the backend called `name` (an unknown name: no)."""
    declared = DECLARED.get(name)
    return declared is not None and declared.stack_field is None


def enabling_setting(name: str) -> str | None:
    """The cluster setting that enables the backend called `name`, if it needs one."""
    declared = DECLARED.get(name)
    return declared.setting if declared is not None else None
