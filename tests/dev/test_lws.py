"""The LeaderWorkerSet controller's configuration and its webhooks as URL webhooks."""

from __future__ import annotations

import base64
from pathlib import Path

import yaml

from modelplane.dev import lws

# The shape of the release's config/webhook folder: manifests naming a Service,
# a kustomization whose JSON patch narrows the pod webhook to a group's Pods.
MANIFESTS = """
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: mutating-webhook-configuration}
webhooks:
- name: mleaderworkerset.kb.io
  clientConfig: {service: {name: webhook-service, namespace: system, path: /mutate-lws}}
  rules: [{apiGroups: [leaderworkerset.x-k8s.io], resources: [leaderworkersets]}]
- name: mpod.kb.io
  clientConfig: {service: {name: webhook-service, namespace: system, path: /mutate--v1-pod}}
  rules: [{apiGroups: [""], resources: [pods]}]
- name: mdisaggregatedset.kb.io
  clientConfig: {service: {name: webhook-service, namespace: system, path: /mutate-ds}}
  rules: [{apiGroups: [disaggregatedset.x-k8s.io], resources: [disaggregatedsets]}]
"""
PATCH = """
- op: replace
  path: /webhooks/1
  value:
    name: mpod.kb.io
    clientConfig: {service: {name: webhook-service, namespace: system, path: /mutate--v1-pod}}
    objectSelector:
      matchExpressions: [{key: leaderworkerset.sigs.k8s.io/name, operator: Exists}]
    rules: [{apiGroups: [""], resources: [pods]}]
"""
KUSTOMIZATION = """
resources: [manifests.yaml]
patches:
- path: mutating-patch.yaml
  target: {kind: MutatingWebhookConfiguration, name: mutating-webhook-configuration}
"""


def _release(tmp_path: Path) -> Path:
    (tmp_path / "manifests.yaml").write_text(MANIFESTS)
    (tmp_path / "mutating-patch.yaml").write_text(PATCH)
    (tmp_path / "kustomization.yaml").write_text(KUSTOMIZATION)
    return tmp_path


def test_the_webhooks_point_at_loopback_with_the_fleet_ca_and_the_releases_patch(
    tmp_path: Path,
) -> None:
    (doc,) = lws.webhook_configurations(_release(tmp_path), 9555, b"PEM")
    assert doc["metadata"] == {"name": "lws-mutating-webhook-configuration"}
    by_name = {w["name"]: w for w in doc["webhooks"]}
    # The DisaggregatedSet webhook is dropped: the fleet serves only these two.
    assert sorted(by_name) == ["mleaderworkerset.kb.io", "mpod.kb.io"]
    assert by_name["mpod.kb.io"]["clientConfig"] == {
        "url": "https://127.0.0.1:9555/mutate--v1-pod",
        "caBundle": base64.b64encode(b"PEM").decode(),
    }
    # The release's patch: the pod webhook sees only a LeaderWorkerSet's Pods.
    assert by_name["mpod.kb.io"]["objectSelector"]["matchExpressions"][0]["key"] == (
        "leaderworkerset.sigs.k8s.io/name"
    )
    assert "objectSelector" not in by_name["mleaderworkerset.kb.io"]
    assert by_name["mleaderworkerset.kb.io"]["clientConfig"]["url"] == (
        "https://127.0.0.1:9555/mutate-lws"
    )


def test_the_configuration_turns_off_what_a_cluster_would_provide(tmp_path: Path) -> None:
    conf = lws.config(9555, 9556, 9557, tmp_path)
    assert conf["apiVersion"] == "config.lws.x-k8s.io/v1alpha1"
    assert conf["internalCertManagement"] == {"enable": False}
    assert conf["leaderElection"] == {"leaderElect": False}
    assert conf["webhook"] == {"host": "127.0.0.1", "port": 9555, "certDir": str(tmp_path)}
    assert conf["metrics"]["bindAddress"] == "127.0.0.1:9556"
    assert conf["health"]["healthProbeBindAddress"] == "127.0.0.1:9557"
    yaml.safe_dump(conf)  # the file the controller reads
