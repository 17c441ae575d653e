"""Crossplane core on the local fleet: webhooks on, its Usage webhook a URL webhook."""

from __future__ import annotations

import base64
import shutil
from pathlib import Path

import pytest

from modelplane.dev import parts, xpcore
from modelplane.dev.fleet import CROSSPLANE_SERVICE_ACCOUNT

# The shape of the release's cluster/webhookconfigurations/usage.yaml (v2.3.4),
# and a README that is not a manifest.
USAGE = """
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: crossplane-no-usages
webhooks:
  - admissionReviewVersions: [v1]
    clientConfig:
      service: {name: webhook-service, namespace: system, path: /validate-no-usages}
    failurePolicy: Fail
    name: nousages.protection.crossplane.io
    objectSelector:
      matchLabels: {crossplane.io/in-use: "true"}
    rules:
      - {apiGroups: ["*"], apiVersions: ["*"], operations: [DELETE], resources: ["*"]}
    sideEffects: None
"""


def test_the_usage_webhook_points_at_loopback_with_the_fleet_ca(tmp_path: Path) -> None:
    (tmp_path / "usage.yaml").write_text(USAGE)
    (tmp_path / "README.md").write_text("not a manifest\n")
    (doc,) = xpcore.webhook_configurations(tmp_path, 9444, b"PEM")
    assert doc["kind"] == "ValidatingWebhookConfiguration"
    assert doc["metadata"] == {"name": "crossplane-no-usages"}
    (hook,) = doc["webhooks"]
    assert hook["clientConfig"] == {
        "url": "https://127.0.0.1:9444/validate-no-usages",
        "caBundle": base64.b64encode(b"PEM").decode(),
    }
    # What makes it enforce Usages, kept as the release wrote it.
    assert hook["objectSelector"] == {"matchLabels": {"crossplane.io/in-use": "true"}}
    assert hook["rules"][0]["operations"] == ["DELETE"]
    assert hook["failurePolicy"] == "Fail"


def test_core_start_turns_webhooks_on_with_a_server_certificate(tmp_path: Path) -> None:
    argv = xpcore.start_argv(
        "crossplane",
        cache_dir=tmp_path / "xpkg",
        client_certs=tmp_path / "client",
        server_certs=tmp_path / "server",
        ports={"metrics": 1, "health": 2, "webhook": 3},
        extra=["--poll-interval=10s"],
    )
    assert argv[:3] == ["crossplane", "core", "start"]
    assert "--enable-webhooks=true" in argv
    assert not any(a.startswith("--enable-webhooks=false") for a in argv)
    assert f"--tls-server-certs-dir={tmp_path / 'server'}" in argv
    assert "--webhook-port=3" in argv
    assert argv[-1] == "--poll-interval=10s"


def _argv(tmp_path: Path, **runtime: str) -> list[str]:
    return xpcore.start_argv(
        "crossplane",
        cache_dir=tmp_path / "xpkg",
        client_certs=tmp_path / "client",
        server_certs=tmp_path / "server",
        ports={"metrics": 1, "health": 2, "webhook": 3},
        extra=[],
        **runtime,
    )


def test_the_fleet_runs_the_function_itself_unless_told_otherwise(tmp_path: Path) -> None:
    """`dev up` keeps the External runtime; the function-pod scenario asks for Crossplane's
    own Deployment runtime, and then nothing says External."""
    runtime = [a for a in _argv(tmp_path) if a.startswith("--package-runtime")]
    assert runtime == ["--package-runtime=External"]
    deployment = _argv(tmp_path, runtime=xpcore.DEPLOYMENT)
    assert [a for a in deployment if a.startswith("--package-runtime")] == [
        "--package-runtime=Deployment"
    ]
    assert not any("External" in a for a in deployment)
    with pytest.raises(ValueError, match="unknown package runtime"):
        _argv(tmp_path, runtime="deployment")  # Crossplane's names are case-sensitive


def _crossplane_source() -> Path:
    if shutil.which("go") is None:
        pytest.skip("Go is not installed: the Crossplane module cannot be read")
    part = parts.parts()["crossplane"]
    try:
        return parts.module_dir(part.module, part.version)
    except parts.PartsError as err:
        pytest.skip(f"the Crossplane module is not at hand: {err}")


def test_the_pinned_release_serves_only_the_usage_webhook_and_no_conversion() -> None:
    """What the fleet registers is all the release asks for: one webhook (Usages),
    and no core CRD converting through a webhook (`core init` would point it at a
    Service the fleet has not)."""
    source = _crossplane_source()
    docs = xpcore.webhook_configurations(source / xpcore.WEBHOOK_CONFIGURATIONS, 9444, b"PEM")
    hooks = [(d["kind"], w["clientConfig"]["url"]) for d in docs for w in d["webhooks"]]
    assert hooks == [
        ("ValidatingWebhookConfiguration", "https://127.0.0.1:9444/validate-no-usages")
    ]
    assert xpcore.webhook_converted_crds(source / xpcore.CORE_CRDS) == []


def test_the_service_account_made_for_the_deployment_runtime_is_the_one_core_reads() -> None:
    """The Deployment runtime reads Crossplane's own ServiceAccount (`--service-account`,
    by default) before it makes anything; the control plane makes the one the release
    names, since no Helm chart does."""
    source = _crossplane_source() / "cmd" / "crossplane" / "core" / "core.go"
    lines = source.read_text().splitlines()
    (line,) = [text for text in lines if 'env:"POD_SERVICE_ACCOUNT"' in text]
    assert f'default:"{CROSSPLANE_SERVICE_ACCOUNT}"' in line
