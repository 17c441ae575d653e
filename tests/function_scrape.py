"""docs/autoscaling.md's scrape of the function's metrics, read from the doc, and
Prometheus' Kubernetes pod discovery and relabelling as far as the doc uses them.

Shared by the doc's unit test (`docs/test_function_metrics_doc.py`, against the
labels Crossplane's source says it gives) and the end-to-end test that applies
the same rules to the function Pod a real Crossplane made
(`e2e/test_function_pod_real.py`).
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path
from typing import Any

import yaml

DOC = Path(__file__).resolve().parents[1] / "docs" / "autoscaling.md"
SECTION = DOC.read_text(encoding="utf-8").split("## 4. The control plane's own metrics")[1]
SECTION = SECTION.split("\n## ")[0]


def blocks(label: str) -> list[str]:
    """The section's fenced blocks of one language (`yaml`, `sh`, `promql`), in order."""
    return re.findall(rf"```{label}\n(.*?)```", SECTION, flags=re.S)


def scrape_job() -> dict[str, Any]:
    """The section's one Prometheus scrape job (its `scrape_configs` entry)."""
    (block,) = [b for b in blocks("yaml") if "scrape_configs" in b]
    (job,) = yaml.safe_load(block)["scrape_configs"]
    return dict(job)


def metrics_container() -> dict[str, Any]:
    """The container the section adds METRICS_PORT to (its fragment of a
    DeploymentRuntimeConfig's pod template), with that env."""
    (env,) = [b for b in blocks("yaml") if "METRICS_PORT" in b]
    (container,) = yaml.safe_load(textwrap.dedent(env))["containers"]
    return dict(container)


def discovered(labels: dict[str, str], ip: str, namespace: str) -> dict[str, str]:
    """A pod as Prometheus' Kubernetes discovery (role: pod) labels its target: each pod
    label as __meta_kubernetes_pod_label_<name, other than [a-zA-Z0-9_] as _>."""
    meta = {
        "__meta_kubernetes_pod_label_" + re.sub(r"[^a-zA-Z0-9_]", "_", k): v
        for k, v in labels.items()
    }
    return {**meta, "__meta_kubernetes_pod_ip": ip, "__meta_kubernetes_namespace": namespace}


def relabel(target: dict[str, str], rules: list[dict[str, Any]]) -> dict[str, str] | None:
    """Prometheus relabelling for the actions the doc uses (keep; replace, the default):
    source labels joined with ';', the regex anchored at both ends, `$1` its group."""
    for rule in rules:
        value = ";".join(target.get(k, "") for k in rule.get("source_labels", []))
        match = re.fullmatch(rule.get("regex", "(.*)"), value)
        action = rule.get("action", "replace")
        if action == "keep" and match is None:
            return None
        if action == "replace" and match is not None:
            replaced = match.expand(rule.get("replacement", "$1").replace("$1", r"\g<1>"))
            target = {**target, rule["target_label"]: replaced}
    return target
