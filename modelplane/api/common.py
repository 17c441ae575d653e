"""Building blocks shared by every Modelplane kind.

The models here are the contract: `modelplane package build` turns them into XRD
schemas, and composers parse observed objects with them. Fields are snake_case in
Python and camelCase on the wire.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic.alias_generators import to_camel

from modelplane.api import constants as c


def cel_rules(*rules: tuple[str, str]) -> dict[str, Any]:
    """Return a JSON-schema extra carrying `x-kubernetes-validations` rules.

    Each rule is `(CEL expression, message)`; the XRD generator copies them
    verbatim so the API server enforces what the pydantic validators enforce.
    """
    return {"x-kubernetes-validations": [{"rule": r, "message": m} for r, m in rules]}


class KubeModel(BaseModel):
    """Base of every spec model: camelCase wire names, unknown fields rejected, read-only.

    Read-only because a parsed spec is shared: `parse_spec` hands every caller
    the one model it remembers for a spec (a changed spec is `model_copy(update=…)`).
    """

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        validate_default=True,
        frozen=True,
    )

    def to_dict(self) -> dict[str, Any]:
        """Return the wire form: camelCase keys, unset optionals omitted."""
        return self.model_dump(by_alias=True, exclude_none=True, mode="json")


class StatusModel(KubeModel):
    """Base of status models; tolerant of fields written by other controllers, and
    built up field by field by a composer (not read-only)."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="ignore",
        frozen=False,
    )


DNSLabel = Annotated[str, Field(min_length=1, max_length=63, pattern=c.DNS_LABEL_PATTERN)]
DNSSubdomain = Annotated[str, Field(min_length=1, max_length=253, pattern=c.DNS_SUBDOMAIN_PATTERN)]
QualifiedName = Annotated[
    str, Field(min_length=1, max_length=286, pattern=c.QUALIFIED_NAME_PATTERN)
]
QuantityString = Annotated[str, Field(min_length=1, max_length=64, pattern=c.QUANTITY_PATTERN)]
CELExpression = Annotated[str, Field(min_length=1, max_length=10 * 1024)]
ObjectName = DNSSubdomain


class Condition(StatusModel):
    """A Kubernetes condition."""

    type: str
    status: Literal["True", "False", "Unknown"]
    reason: str | None = None
    message: str | None = None
    last_transition_time: str | None = None
    observed_generation: int | None = None


class ConditionedStatus(StatusModel):
    """Status every kind carries."""

    conditions: list[Condition] | None = None


class SecretKeyRef(KubeModel):
    """A key of a Secret in a named namespace."""

    namespace: DNSLabel = Field(description="Namespace of the Secret.")
    name: ObjectName = Field(description="Name of the Secret.")
    key: str = Field(
        default=c.DEFAULT_KUBECONFIG_KEY,
        min_length=1,
        max_length=253,
        description="Key of the Secret's data to read.",
    )


class LocalSecretKeyRef(KubeModel):
    """A key of a Secret in the referencing object's namespace."""

    name: ObjectName = Field(
        description="Name of the Secret (in the referencing object's namespace)."
    )
    key: str = Field(min_length=1, max_length=253, description="Key of the Secret's data.")


class LabelSelectorRequirement(KubeModel):
    """One term of a label selector."""

    model_config = KubeModel.model_config | {
        "json_schema_extra": cel_rules(
            (
                "self.operator in ['In', 'NotIn'] ? (has(self.values) && size(self.values) > 0)"
                " : (!has(self.values) || size(self.values) == 0)",
                "values must be non-empty for In and NotIn and empty for Exists and DoesNotExist",
            )
        )
    }

    key: str = Field(min_length=1, max_length=317, description="The label key the term applies to.")
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"] = Field(
        description="How the label's value is compared."
    )
    values: list[str] | None = Field(
        default=None,
        max_length=64,
        description="Values for In and NotIn; empty for Exists and DoesNotExist.",
    )

    @model_validator(mode="after")
    def _values_match_operator(self) -> LabelSelectorRequirement:
        # Kubernetes' own LabelSelector validation: set operators need values,
        # existence operators must have none.
        has_values = bool(self.values)
        if self.operator in ("In", "NotIn") and not has_values:
            raise ValueError(f"values must be non-empty when operator is {self.operator}")
        if self.operator in ("Exists", "DoesNotExist") and has_values:
            raise ValueError(f"values must be empty when operator is {self.operator}")
        return self


class LabelSelector(KubeModel):
    """A Kubernetes LabelSelector: every term must match; empty matches all."""

    match_labels: dict[str, str] | None = Field(
        default=None, description="Labels a selected object must carry, key to value."
    )
    # Bounded: the API server costs each term's CEL rule by the list's size.
    match_expressions: list[LabelSelectorRequirement] | None = Field(
        default=None, max_length=32, description="Terms a selected object must all satisfy."
    )


class Toleration(KubeModel):
    """Tolerates an InferenceCluster taint, like a Pod toleration."""

    model_config = KubeModel.model_config | {
        "json_schema_extra": cel_rules(
            (
                "has(self.key) && size(self.key) > 0 || self.operator == 'Exists'",
                "operator must be Exists when key is empty",
            ),
            (
                "self.operator != 'Exists' || !has(self.value) || size(self.value) == 0",
                "value must be empty when operator is Exists",
            ),
        )
    }

    key: str | None = Field(
        default=None,
        max_length=317,
        description="Taint key to tolerate; empty (with Exists) tolerates every taint.",
    )
    operator: Literal["Equal", "Exists"] = Field(
        default="Equal", description="Equal compares the value; Exists matches any value."
    )
    value: str | None = Field(
        default=None, max_length=63, description="Taint value to match when operator is Equal."
    )
    effect: Literal["NoSchedule", "NoExecute"] | None = Field(
        default=None, description="Taint effect to tolerate; empty tolerates every effect."
    )

    @model_validator(mode="after")
    def _operator_rules(self) -> Toleration:
        # Pod toleration validation: an empty key tolerates every taint only
        # with Exists, and Exists compares no value.
        if not self.key and self.operator != "Exists":
            raise ValueError("operator must be Exists when key is empty")
        if self.operator == "Exists" and self.value:
            raise ValueError("value must be empty when operator is Exists")
        return self


class LocalObjectReference(KubeModel):
    """A reference to an object in the same namespace."""

    name: ObjectName = Field(description="Name of the object in the same namespace.")


_PATTERN_NAMES = {
    c.QUANTITY_PATTERN: "a Kubernetes quantity (e.g. 80Gi, 500m, 1e3)",
    c.SEMVER_PATTERN: "a semantic version (e.g. 570.124.6; numbers without leading zeros)",
    c.DNS_LABEL_PATTERN: "a DNS label (lower-case alphanumerics and '-')",
    c.DNS_SUBDOMAIN_PATTERN: "a DNS subdomain (lower-case alphanumerics, '-' and '.')",
    c.QUALIFIED_NAME_PATTERN: "a qualified name ([domain/]identifier of at most 32 characters)",
    c.IMAGE_PATTERN: "an image reference (registry/path[:tag][@sha256:digest])",
    c.DURATION_PATTERN: "a duration of hours, minutes and seconds (e.g. 5m, 1h30m, 90s)",
}


def format_validation_error(err: ValidationError, prefix: str = "") -> str:
    """Render a pydantic error as `field.path: message; ...` using wire names."""
    parts = []
    for e in err.errors():
        loc = ""
        for p in e["loc"]:
            if isinstance(p, int):
                loc += f"[{p}]"
            elif p != "__root__":
                loc = f"{loc}.{p}" if loc else str(p)
        if prefix:
            loc = f"{prefix}{'' if loc.startswith('[') else '.'}{loc}" if loc else prefix
        msg = e["msg"]
        if e["type"] == "string_pattern_mismatch":
            pattern = (e.get("ctx") or {}).get("pattern", "")
            what = _PATTERN_NAMES.get(pattern, f"a string matching {pattern}")
            msg = f"{e['input']!r} is not {what}"
        if msg.startswith("Value error, "):
            msg = msg[len("Value error, ") :]
        parts.append(f"{loc}: {msg}" if loc else msg)
    return "; ".join(parts)
