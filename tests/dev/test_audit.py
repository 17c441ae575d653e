"""The audit attribution a benchmark reads an audited fleet's writes with."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from modelplane.dev import audit


def _event(
    name: str,
    status: dict[str, Any] | None = None,
    *,
    agent: str = "crossplane/v2.3.4 (linux/amd64) kubernetes/abc",
    resource: str = "modelreplicas",
    sub: str = "status",
    stage: str = "ResponseComplete",
) -> dict[str, Any]:
    event: dict[str, Any] = {
        "stage": stage,
        "verb": "update",
        "userAgent": agent,
        "objectRef": {
            "apiGroup": "modelplane.ai",
            "resource": resource,
            "subresource": sub,
            "namespace": "team",
            "name": name,
        },
        "responseStatus": {"code": 200},
    }
    if status is not None:
        event["requestObject"] = {"status": status}
    return event


def _ready(status: str, at: str, reason: str = "Available") -> dict[str, Any]:
    return {"type": "Ready", "status": status, "reason": reason, "lastTransitionTime": at}


def test_a_writer_is_named_by_its_user_agent() -> None:
    assert audit.agent_of("crossplane/v2.3.4 (linux/amd64) kubernetes/abc") == "crossplane"
    assert (
        audit.agent_of("kube-controller-manager/v1.34.1 (linux/amd64)") == "kube-controller-manager"
    )
    assert audit.agent_of("") == "unknown"


def test_only_a_served_write_counts() -> None:
    assert audit.parse_event("wl-1", _event("a", stage="ResponseStarted")) is None
    write = audit.parse_event("wl-1", _event("a", sub=""))
    assert write is not None and write.target == "modelreplicas"


def test_a_status_write_is_attributed_to_the_fields_it_changed() -> None:
    writes = [
        audit.parse_event("control-plane", e)
        for e in (
            _event("a", {"conditions": [_ready("False", "t1", "Creating")]}),
            # Only the time stamp moves: a write nothing reads differently.
            _event("a", {"conditions": [_ready("False", "t2", "Creating")]}),
            _event("a", {"conditions": [_ready("True", "t3")], "endpoint": "/x"}),
            _event("b", {"endpoint": "/y"}),
        )
    ]
    counts = audit.attribute(w for w in writes if w is not None)
    key = ("control plane", "crossplane", "modelreplicas/status", "update")
    assert counts == {
        (*key, "conditions[Ready]"): 1,
        (*key, "(unchanged)"): 1,
        (*key, "conditions[Ready], endpoint"): 1,
        (*key, "endpoint"): 1,
    }


def test_an_object_seen_in_an_earlier_window_is_compared_with_what_it_had() -> None:
    seen: audit.Seen = {}
    first = audit.parse_event("control-plane", _event("a", {"endpoint": "/x"}))
    again = audit.parse_event("control-plane", _event("a", {"endpoint": "/x"}))
    assert first is not None and again is not None
    audit.attribute([first], seen)
    (key,) = audit.attribute([again], seen)
    assert key[-1] == "(unchanged)"


def test_the_reader_returns_what_each_log_gained_and_leaves_a_partial_line(
    tmp_path: Path,
) -> None:
    log = tmp_path / "wl-1.log"
    log.write_text(json.dumps(_event("old")) + "\n")
    reader = audit.Reader({"wl-1": log, "wl-2": tmp_path / "absent.log"})
    reader.mark()
    whole = json.dumps(_event("new", resource="deployments", sub=""))
    with log.open("a") as f:
        f.write(whole + "\n" + whole[:10])
    assert [(w.cluster, w.name, w.target) for w in reader.read()] == [
        ("wl-1", "new", "deployments")
    ]
    with log.open("a") as f:
        f.write(whole[10:] + "\n")
    assert [w.name for w in reader.read()] == ["new"]
    assert reader.read() == []


def test_an_audited_fleet_logs_writes_only_and_no_secret_bodies(tmp_path: Path) -> None:
    import yaml

    from modelplane.dev.fleet import Fleet

    assert Fleet(tmp_path)._audit_flags("wl-1") == []
    flags = Fleet(tmp_path, audit=True)._audit_flags("wl-1")
    assert f"--audit-log-path={tmp_path.resolve() / 'audit' / 'wl-1.log'}" in flags
    policy = yaml.safe_load((tmp_path / "audit" / "policy.yaml").read_text())
    reads, bodies, rest = policy["rules"]
    assert reads == {"level": "None", "verbs": ["get", "list", "watch"]}
    # Bodies only of our kinds and the Objects they compose: a Secret (core group)
    # is logged by name, never with its data.
    assert bodies["level"] == "Request"
    assert {r["group"] for r in bodies["resources"]} == {
        "modelplane.ai",
        "kubernetes.m.crossplane.io",
    }
    assert rest == {"level": "Metadata"}
