"""The fleet view as one self-contained HTML page.

A grid of clusters × pools, each pool with a usage bar coloured by deployment
(draining replicas hatched), its free devices, its cloud stock-out and what-if
suggestions, each cluster with its hardware drift and unschedulable replicas,
then every deployment (its rollout and the revision its replicas run per cluster)
and, for those with missing replicas, each cluster's reason (expand it).
Everything is inline — CSS, a few lines of script, no fonts or images — and a
Content-Security-Policy forbids any fetch, so the page opens offline. Every
string that comes from a manifest goes through `html.escape`.
"""

from __future__ import annotations

import hashlib
from html import escape

from modelplane.cli.fleet_view import ClusterView, DeploymentView, FleetView, PoolView, Usage

_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#1d2330;background:#f6f7f9}
h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:24px 0 8px}
.sub{color:#5b6475;margin-bottom:16px}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(340px,1fr));gap:12px}
.cluster{background:#fff;border:1px solid #d8dce3;border-radius:8px;padding:12px}
.cluster h3{margin:0 0 8px;font-size:15px}.cluster.notready{border-color:#d9534f}
.tag{font-size:11px;padding:1px 6px;border-radius:8px;background:#eef0f4;margin-left:6px}
.tag.bad{background:#fbe3e2;color:#a12622}.tag.warn{background:#fff3cd;color:#7a5a00}
.alert{font-size:12px;margin-top:2px}.alert.stockout,.alert.stuck{color:#a12622}
.alert.drift{color:#7a5a00}
.pool{margin:8px 0 12px}.pool .head{display:flex;justify-content:space-between}
.bar{display:flex;height:18px;background:#e9ecf1;border-radius:4px;overflow:hidden;margin:4px 0}
.seg{height:100%;border-right:1px solid #fff}
.seg.draining{background-image:repeating-linear-gradient(45deg,rgba(255,255,255,.6) 0 4px,
transparent 4px 8px)}
.legend span{display:inline-block;margin-right:10px;font-size:12px}
.sw{display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:4px}
.free{color:#5b6475;font-size:12px}.over{color:#a12622;font-weight:600}
.whatif{font-size:12px;color:#1a5d1a;margin-top:2px}
details{background:#fff;border:1px solid #d8dce3;border-radius:8px;padding:8px 12px;margin:6px 0}
summary{cursor:pointer;font-weight:600}
table{border-collapse:collapse;margin-top:6px;width:100%}
td,th{text-align:left;padding:3px 8px;border-top:1px solid #eef0f4;vertical-align:top}
.rev{font-size:12px;font-family:ui-monospace,monospace}
"""

# Expand or collapse every unplaced deployment's reasons at once.
_SCRIPT = """
document.getElementById("toggle").addEventListener("click", function () {
  var all = document.querySelectorAll("details.unplaced");
  var open = !Array.prototype.every.call(all, function (d) { return d.open; });
  all.forEach(function (d) { d.open = open; });
});
document.body.setAttribute("data-ready", "true");
"""

_CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'"


def colour(deployment: str) -> str:
    """A stable colour per deployment (the same name, the same colour on every page)."""
    hue = int(hashlib.sha256(deployment.encode()).hexdigest()[:4], 16) % 360
    return f"hsl({hue},62%,52%)"


def _segment(u: Usage, capacity: int) -> str:
    width = 100 * u.devices / capacity if capacity else 0
    state = "draining" if u.draining else ("ready" if u.ready else "not ready")
    title = escape(f"{u.deployment} — {u.replica} ({u.role}): {u.devices} device(s), {state}")
    cls = "seg draining" if u.draining else "seg"
    return (
        f'<div class="{cls}" title="{title}" '
        f'style="width:{width:.2f}%;background-color:{colour(u.deployment)}"></div>'
    )


def _pool(p: PoolView) -> str:
    bar = "".join(_segment(u, p.capacity) for u in p.used)
    free_cls = "free over" if p.free < 0 else "free"
    draining = sum(1 for u in p.used if u.draining)
    lines = [
        '<div class="pool">',
        f'<div class="head"><span><b>{escape(p.name)}</b> '
        f'<span class="tag">{escape(p.class_name)}</span></span>'
        f"<span>{p.nodes} node(s) × {p.devices_per_node} device(s)</span></div>",
        f'<div class="bar">{bar}</div>',
        f'<div class="{free_cls}">{p.used_devices} of {p.capacity} device(s) used, '
        f"{p.free} free" + (f", {draining} draining replica(s)" if draining else "") + "</div>",
    ]
    if p.unknown:
        lines.append(f'<div class="free over">{escape(p.unknown)}</div>')
    if p.stock_out:
        lines.append(f'<div class="alert stockout">{escape(p.stock_out)}</div>')
    lines += [f'<div class="alert drift">drift: {escape(d)}</div>' for d in p.drift]
    lines += [
        f'<div class="whatif">what if: {escape(s.deployment)}: {escape(s.text)}</div>'
        for s in p.suggestions
    ]
    lines.append("</div>")
    return "\n".join(lines)


def _cluster(cl: ClusterView) -> str:
    tags = "" if cl.ready else '<span class="tag bad">NotReady</span>'
    tags += "".join(f'<span class="tag bad">{escape(t)}</span>' for t in cl.taints)
    if cl.drift:
        tags += '<span class="tag warn">HardwareDrift</span>'
    cls = "cluster" if cl.ready else "cluster notready"
    pools = "\n".join(_pool(p) for p in cl.pools) or '<div class="free">no pools published</div>'
    shown = any(p.drift for p in cl.pools)
    alerts = (
        f'<div class="alert drift">drift: {escape(cl.drift)}</div>'
        if cl.drift and not shown
        else ""
    )
    alerts += "".join(
        f'<div class="alert stuck">unschedulable: {escape(s)}</div>' for s in cl.unschedulable
    )
    return f'<section class="{cls}"><h3>{escape(cl.name)}{tags}</h3>\n{pools}\n{alerts}</section>'


def _legend(view: FleetView) -> str:
    names = sorted({u.deployment for cl in view.clusters for p in cl.pools for u in p.used})
    items = "".join(
        f'<span><i class="sw" style="background:{colour(n)}"></i>{escape(n)}</span>' for n in names
    )
    return f'<div class="legend">{items}</div>'


def _unplaced(d: DeploymentView, expanded: bool) -> str:
    rows = "".join(
        f"<tr><td>{escape(r.cluster)}</td><td>{escape(r.reason)}</td>"
        f"<td>{escape(r.message)}</td><td>{escape(r.what_if or '')}</td></tr>"
        for r in d.rejections
    )
    hints = "".join(f'<div class="whatif">what if: {escape(t)}</div>' for t in d.what_if)
    opened = " open" if expanded else ""
    return (
        f'<details class="unplaced"{opened}><summary>{escape(d.name)}: '
        f"{d.missing} of {d.desired} replica(s) unplaced</summary>{hints}"
        "<table><tr><th>cluster</th><th>reason</th><th>why</th><th>what if</th></tr>"
        f"{rows}</table></details>"
    )


_DECISION_TAG = {"Progressing": "tag warn", "Paused": "tag warn", "RolledBack": "tag bad"}


def _rollout(d: DeploymentView) -> str:
    """The rollout's decision and revision, then one line per cluster and revision."""
    head = ""
    if d.rollout is not None:
        cls = _DECISION_TAG.get(d.rollout, "tag")
        head = f'<span class="{cls}">{escape(d.rollout)}</span> {escape(d.revision or "")}'
    lines = "".join(
        f'<div class="rev">{escape(r.cluster)}: {escape(r.revision or "")} ×{r.replicas}'
        + (f" ({r.ready} ready)" if r.ready < r.replicas else "")
        + "</div>"
        for r in d.revisions
    )
    return head + lines


def _deployments(view: FleetView) -> str:
    rows = "".join(
        f"<tr><td>{escape(d.name)}</td><td>{d.placed} / {d.desired}</td><td>{d.ready}</td>"
        f"<td>{d.draining}</td><td>{d.unschedulable}</td><td>{_rollout(d)}</td></tr>"
        for d in view.deployments
    )
    return (
        "<table><tr><th>deployment</th><th>placed</th><th>ready</th><th>draining</th>"
        f"<th>unschedulable</th><th>rollout: revisions per cluster</th></tr>{rows}</table>"
    )


def _money(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def _costs(view: FleetView) -> str:
    """Cost per hour per cluster and per deployment, when some pool declares a price."""
    if not any(p.price is not None for cl in view.clusters for p in cl.pools):
        return ""
    clusters = "".join(
        f"<tr><td>{escape(cl.name)}</td><td>{_money(cl.cost_per_hour)}</td></tr>"
        for cl in view.clusters
    )
    deployments = "".join(
        f"<tr><td>{escape(d.name)}</td><td>{_money(d.cost_per_hour)}</td></tr>"
        for d in view.deployments
    )
    return (
        "<h2>Cost per hour</h2>"
        f"<table><tr><th>cluster</th><th>cost / hour</th></tr>{clusters}</table>"
        f"<table><tr><th>deployment</th><th>cost / hour</th></tr>{deployments}</table>"
    )


def _tenancy(view: FleetView) -> str:
    """Each deployment's namespace quota use and latest preemption, when any exists."""
    rows = "".join(
        f"<tr><td>{escape(d.name)}</td><td>{escape('; '.join(d.quota))}</td>"
        f"<td>{escape(d.preemption or '')}</td></tr>"
        for d in view.deployments
        if d.quota or d.preemption
    )
    if not rows:
        return ""
    return (
        "<h2>Quotas and preemption</h2>"
        f"<table><tr><th>deployment</th><th>FleetQuota</th><th>latest preemption</th></tr>"
        f"{rows}</table>"
    )


def render_html(view: FleetView, title: str = "Modelplane fleet") -> str:
    """The whole page."""
    unplaced = [d for d in view.deployments if d.missing or d.rejections]
    devices = sum(p.capacity for cl in view.clusters for p in cl.pools)
    used = sum(p.used_devices for cl in view.clusters for p in cl.pools)
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">',
        f"<title>{escape(title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{escape(title)}</h1>",
        f'<div class="sub">{len(view.clusters)} cluster(s), {used} of {devices} device(s) '
        f"used, {len(unplaced)} deployment(s) with unplaced replicas</div>",
        _legend(view),
        '<div class="grid">',
        *(_cluster(cl) for cl in view.clusters),
        "</div>",
        "<h2>Deployments</h2>",
        _deployments(view),
        _tenancy(view),
        _costs(view),
    ]
    if unplaced:
        parts += [
            '<h2>Unplaced replicas <button id="toggle" type="button">expand all</button></h2>',
            *(_unplaced(d, i == 0) for i, d in enumerate(unplaced)),
        ]
    else:
        parts.append('<button id="toggle" type="button" hidden>expand all</button>')
    parts += [f"<script>{_SCRIPT}</script>", "</body></html>", ""]
    return "\n".join(parts)
