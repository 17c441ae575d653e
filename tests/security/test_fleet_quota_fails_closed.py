"""Issue 40, finding 5: a FleetQuota that fails open.

Before the defence the first FleetQuota of a namespace by name was the only one
that counted, so a second one named to sort first replaced the platform's; and
a limit whose selector did not compile, failed at run time or ran out of its
cost budget counted nothing and reported `WithinQuota=True`. Now every quota of
the namespace applies (the tightest wins), a selector that cannot judge a
device counts it (the limit refuses what it might cover) and says so in
`WithinQuota=False` (`SelectorError`, naming the field), and `modelplane
validate` refuses a selector that does not compile.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from modelplane.cli.main import cli
from modelplane.local import RenderResult
from tests.security.tenants import (
    HOSTILE,
    L4,
    condition,
    deployment,
    get,
    namespace,
    placements,
    quota,
    render,
    replicas,
    warned,
    workloads,
)

TENANCY = "examples/tenancy"
QUICKSTART = "examples/quickstart"
# Compiles, and fails on every device: the attribute domain has no such attribute.
FAILS_AT_RUN_TIME = 'device.attributes["gpu.nvidia.com"].nope == "x"'
DOES_NOT_COMPILE = "device.nope == 1"


@pytest.fixture(scope="module")
def tenancy() -> RenderResult:
    return render(TENANCY)


@pytest.fixture(scope="module")
def quickstart() -> RenderResult:
    return render(QUICKSTART)


def test_a_second_quota_named_to_sort_first_does_not_loosen_the_first(
    tenancy: RenderResult,
) -> None:
    generous = quota("aaa-mine", [{"name": "h100", "devices": 1000}], ns="lab")
    rendered = render(TENANCY, generous)
    dep = get(rendered, "ModelDeployment", "lab", "experiments")
    status, reason, message = condition(dep, "Scheduled")
    assert (status, reason) == ("False", "QuotaExceeded"), message
    assert "FleetQuota lab limit h100: 8/8 devices" in message
    assert placements(rendered, "lab") == placements(tenancy, "lab")
    assert condition(get(rendered, "FleetQuota", "lab", "aaa-mine"), "WithinQuota")[:2] == (
        "True",
        "WithinLimits",
    )
    for ns in ("team-a",):
        assert placements(rendered, ns) == placements(tenancy, ns)
        assert workloads(rendered, ns) == workloads(tenancy, ns)


@pytest.mark.parametrize("selector", [FAILS_AT_RUN_TIME, DOES_NOT_COMPILE])
def test_a_selector_that_cannot_be_evaluated_fails_closed(
    quickstart: RenderResult, selector: str
) -> None:
    # The platform's limit: no L4 at all for the namespace, by a broken selector.
    cap = quota("cap", [{"name": "l4", "devices": 0, "selector": selector}])
    rendered = render(QUICKSTART, namespace(), cap, deployment("chat", L4, count=1))
    assert replicas(rendered, HOSTILE) == []
    dep = get(rendered, "ModelDeployment", HOSTILE, "chat")
    assert condition(dep, "Scheduled")[:2] == ("False", "QuotaExceeded")
    status, reason, message = condition(get(rendered, "FleetQuota", HOSTILE, "cap"), "WithinQuota")
    assert (status, reason) == ("False", "SelectorError")
    assert message.startswith("spec.limits[0].selector: ")
    assert warned(rendered, "FleetQuota", HOSTILE, "cap", "SelectorError")
    assert placements(rendered, "ml-team") == placements(quickstart, "ml-team")
    assert workloads(rendered, "ml-team") == workloads(quickstart, "ml-team")


def test_validate_refuses_a_quota_selector_that_does_not_compile(tmp_path: Path) -> None:
    path = tmp_path / "quota.yaml"
    cap = quota("cap", [{"name": "l4", "devices": 0, "selector": DOES_NOT_COMPILE}])
    path.write_text(yaml.safe_dump(cap), encoding="utf-8")
    result = CliRunner().invoke(cli, ["validate", "--skip-references", str(path)])
    assert result.exit_code == 1, result.output
    assert "spec.limits[0].selector: invalid device selector" in result.output
