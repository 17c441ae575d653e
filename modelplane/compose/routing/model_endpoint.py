"""ModelEndpoint composer: decide whether an endpoint may receive traffic.

An endpoint composes nothing; `status.ready` is True when its spec is valid
and, when it names a credential, the Secret exists with that key. The Secret
is required only to check its key names: its value is never copied into
desired state, status, conditions or events (Crossplane does deliver required
resources to the function over its mTLS channel). The gateway reads the value
itself (see `model_service.py`).
"""

from __future__ import annotations

from modelplane.api import constants as c
from modelplane.api.model_endpoint import ModelEndpointSpec, ModelEndpointStatus
from modelplane.api.reasons import CredentialsResolvedReason, ValidReason
from modelplane.compose import outcome
from modelplane.compose.common import meta, parse_spec
from modelplane.compose.types import ComposeInput, ComposeResult, Requirement

SECRET_REQUIREMENT = "auth-secret"


def compose(inp: ComposeInput) -> ComposeResult:
    """Validate the endpoint and its credential reference; publish `status.ready`."""
    result = ComposeResult(status=ModelEndpointStatus(ready=False).to_dict())
    spec, error = parse_spec(ModelEndpointSpec, inp.composite)
    if spec is None:
        return outcome.hold(inp, result, c.CONDITION_VALID, ValidReason.INVALID_SPEC, error)
    up = spec.upstream()
    result.condition(
        c.CONDITION_VALID, True, ValidReason.VALID, f"{up.scheme} upstream {up.host}:{up.port}"
    )
    ref = spec.auth_secret_ref
    if ref is None:
        result.condition(
            c.CONDITION_CREDENTIALS_RESOLVED,
            True,
            CredentialsResolvedReason.RESOLVED,
            "no credential: requests are forwarded without one",
        )
        return _ready(result)
    namespace = str(meta(inp.composite).get("namespace") or "")
    result.requirements[SECRET_REQUIREMENT] = Requirement(
        api_version="v1", kind="Secret", match_name=ref.name, namespace=namespace
    )
    if not inp.fetched(SECRET_REQUIREMENT):
        result.condition(
            c.CONDITION_CREDENTIALS_RESOLVED,
            None,
            CredentialsResolvedReason.WAITING_FOR_RESOURCES,
            f"waiting for Secret {namespace}/{ref.name}",
        )
        return outcome.wait(inp, result)
    found = inp.required.get(SECRET_REQUIREMENT) or []
    field = "spec.authSecretRef"
    if not found:
        return outcome.hold(
            inp,
            result,
            c.CONDITION_CREDENTIALS_RESOLVED,
            CredentialsResolvedReason.SECRET_NOT_FOUND,
            f"{field}.name: Secret {namespace}/{ref.name} not found; the endpoint is not "
            "routed to until it exists",
        )
    secret = found[0]
    keys = set((secret.get("data") or {}).keys()) | set((secret.get("stringData") or {}).keys())
    if ref.key not in keys:
        return outcome.hold(
            inp,
            result,
            c.CONDITION_CREDENTIALS_RESOLVED,
            CredentialsResolvedReason.SECRET_KEY_MISSING,
            f"{field}.key: Secret {namespace}/{ref.name} has no key {ref.key!r}; the endpoint "
            "is not routed to until it has",
        )
    result.condition(
        c.CONDITION_CREDENTIALS_RESOLVED,
        True,
        CredentialsResolvedReason.RESOLVED,
        f"header {spec.header_name} from Secret {namespace}/{ref.name} key {ref.key!r}",
    )
    return _ready(result)


def _ready(result: ComposeResult) -> ComposeResult:
    result.status = ModelEndpointStatus(ready=True).to_dict()
    result.ready = "True"
    return result
