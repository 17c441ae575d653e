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
    # The field of `ServingStackConfig` (its Python name) whose `flag` says
    # the cluster runs this backend; None: every cluster runs it.
    stack_field: str | None = None
    # The block's boolean that says so: `enabled` when the serving stack can
    # install the backend, `present` when only the platform team does.
    flag: str = "enabled"
    # Whether a disaggregated replica routes through an InferencePool (so needs
    # the cluster to serve them); Dynamo's own frontend routes prefill/decode.
    pool_for_disaggregation: bool = True

    @property
    def setting(self) -> str | None:
        """The cluster's wire path that enables it (`spec.servingStack.<block>.<flag>`)."""
        if self.stack_field is None:
            return None
        stack = _wire(InferenceClusterSpec, "serving_stack")
        return f"spec.{stack}.{_wire(ServingStackConfig, self.stack_field)}.{self.flag}"

    def enabled(self, stack: ServingStackConfig | None) -> bool:
        """Whether a cluster with this `spec.servingStack` (None: absent) runs the backend."""
        if self.stack_field is None:
            return True
        block = getattr(stack, self.stack_field, None) if stack is not None else None
        return block is not None and getattr(block, self.flag) is True


NATIVE = BackendDeclaration(c.BACKEND_NATIVE)
KSERVE = BackendDeclaration(c.BACKEND_KSERVE, "kserve")
DYNAMO = BackendDeclaration(
    c.BACKEND_DYNAMO, "dynamo", flag="present", pool_for_disaggregation=False
)
DECLARED: dict[str, BackendDeclaration] = {b.name: b for b in (NATIVE, KSERVE, DYNAMO)}


def runs_everywhere(name: str) -> bool:
    """Whether every cluster runs the backend called `name` (an unknown name: no)."""
    declared = DECLARED.get(name)
    return declared is not None and declared.stack_field is None


def needs_inference_pool(name: str) -> bool:
    """Whether a disaggregated replica of the backend called `name` routes through an
    InferencePool (an unknown name: yes, the stricter answer)."""
    declared = DECLARED.get(name)
    return declared is None or declared.pool_for_disaggregation


def enabling_setting(name: str) -> str | None:
    """The cluster setting that enables the backend called `name`, if it needs one."""
    declared = DECLARED.get(name)
    return declared.setting if declared is not None else None
