"""One self-contained HTML page: the verdict, the node map, the plots and the evidence.

No external assets (no scripts, fonts or images from anywhere): the file is attached
to tickets and opened offline, so styles are inline and plots are inline SVG.
"""

from __future__ import annotations

import math
from html import escape

from nvcre.report.evidence import with_units
from nvcre.report.format import count, headline_rows, human_size, singular_ones
from nvcre.report.model import CategoryReport, GroupResult, NodeResult, Report

PALETTE = ["#2563eb", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#ca8a04", "#db2777", "#4b5563"]
RESULT_COLOR = {"PASSED": "#15803d", "FAILED": "#b91c1c", "INCOMPLETE": "#b45309", "NOT JUDGED": "#b45309", "RUNNING": "#1d4ed8"}
STATUS_COLOR = {"NOT JUDGED": "#b45309", "Succeeded": "#15803d", "Failed": "#b91c1c", "Running": "#1d4ed8", "Pending": "#6b7280"}
NODE_CLASS = {"Passed": "ok", "Failed": "bad", "Excluded": "excl", "Untested": "none"}
MAX_PLOT_GROUPS = 12
LOG_LINES = 14  # the end of a failure log is where the reason is; the pre shows it without scrolling

CSS = """
*{box-sizing:border-box}
body{margin:0;font:15px/1.45 -apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;color:#1f2937;background:#f3f4f6}
main{max-width:1200px;margin:0 auto;padding:28px 32px 48px}
h1{font-size:26px;margin:0 0 4px}
h2{font-size:19px;margin:30px 0 12px}
h3{font-size:16px;margin:0}
.sub{color:#6b7280;margin:0 0 18px}
.badge{display:inline-block;padding:3px 12px;border-radius:999px;color:#fff;font-weight:700;font-size:14px;letter-spacing:.04em;vertical-align:middle}
.facts{display:grid;grid-template-columns:repeat(auto-fit,minmax(150px,1fr));gap:12px;margin:18px 0}
.fact{background:#fff;border-radius:10px;padding:12px 14px;box-shadow:0 1px 2px rgba(0,0,0,.06)}
.fact b{display:block;font-size:22px}
.fact span{color:#6b7280;font-size:12px;text-transform:uppercase;letter-spacing:.05em}
.card{background:#fff;border-radius:12px;padding:18px 20px;margin:14px 0;box-shadow:0 1px 3px rgba(0,0,0,.08)}
.card header{display:flex;justify-content:space-between;align-items:center;gap:12px;margin-bottom:10px}
.pill{padding:2px 10px;border-radius:999px;color:#fff;font-size:13px;font-weight:600}
table{border-collapse:collapse;width:100%;font-size:14px}
th,td{text-align:left;padding:6px 10px;border-bottom:1px solid #e5e7eb;vertical-align:top}
th{color:#6b7280;font-weight:600;font-size:12px;text-transform:uppercase;letter-spacing:.04em}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
.low{color:#b91c1c;font-weight:700}
td code{white-space:nowrap;display:inline-block;margin:0 4px 2px 0}
table.bw{max-width:720px}
code,pre{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:13px}
pre{background:#111827;color:#e5e7eb;padding:10px 12px;border-radius:8px;overflow:auto;max-height:260px}
.kv{display:grid;grid-template-columns:max-content 1fr;gap:4px 16px;margin:6px 0 12px}
.kv dt{color:#6b7280}
.kv dd{margin:0}
.reason{display:inline-block;padding:1px 8px;border-radius:6px;font-size:12px;font-weight:600;background:#fee2e2;color:#991b1b}
.reason.ThresholdViolation{background:#fef3c7;color:#92400e}
.map{display:flex;flex-wrap:wrap;gap:14px}
.domain{background:#fff;border-radius:10px;padding:10px 12px;box-shadow:0 1px 2px rgba(0,0,0,.06)}
.domain h4{margin:0 0 8px;font-size:13px;color:#374151}
.tiles{display:grid;grid-template-columns:repeat(4,84px);gap:6px}
.tile{border-radius:6px;padding:6px 4px;font-size:11px;text-align:center;color:#fff;overflow:hidden;white-space:nowrap;text-overflow:ellipsis}
.tile.ok{background:#16a34a}.tile.bad{background:#dc2626}.tile.excl{background:#d97706}.tile.none{background:#9ca3af}
.legend{display:flex;gap:16px;font-size:13px;color:#4b5563;margin:6px 0 12px}
.legend i{display:inline-block;width:12px;height:12px;border-radius:3px;margin-right:5px;vertical-align:-1px}
.next{border-left:4px solid #2563eb;background:#eff6ff;padding:8px 12px;border-radius:0 8px 8px 0;margin:10px 0}
.blocked{border-left:4px solid #d97706;background:#fffbeb;padding:8px 12px;border-radius:0 8px 8px 0;margin:10px 0}
svg text{font-family:inherit}
footer{color:#9ca3af;font-size:12px;margin-top:30px}
"""


def render_html(report: Report) -> str:
    color = RESULT_COLOR.get(report.result, "#374151")
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{escape(report.kind)} {escape(report.name)}: {report.result}</title>",
        f"<style>{CSS}</style></head><body><main>",
        f'<h1>{escape(report.kind)} <code>{escape(report.name)}</code> '
        f'<span class="badge" style="background:{color}">{report.result}</span></h1>',
        f'<p class="sub">namespace <code>{escape(report.namespace)}</code> · platform {escape(report.platform)} · '
        f"GPU {escape(report.gpu)}</p>",
        _facts(report),
    ]
    if report.failed_node_details:
        parts.append(_failed_nodes(report))
    if report.node_results:
        parts.append(_node_map(report.node_results))
    parts.append("<h2>Categories</h2>")
    parts += [_category(c) for c in report.categories]
    if report.exclusions:
        parts.append(_exclusions(report))
    env = f" · env names: {escape(', '.join(report.env))}" if report.env else ""
    parts.append(f"<footer>{escape(report.schema_version)}{env} · generated by nvcrectl</footer>")
    parts.append("</main></body></html>")
    return "\n".join(parts) + "\n"


def _facts(report: Report) -> str:
    items = [
        ("Nodes", report.total_nodes),
        ("Categories passed", f"{report.categories_passed}/{report.categories_total}"),
        ("Failed nodes", len(report.failed_nodes)),
        ("Excluded nodes", len(report.excluded_nodes)),
    ]
    if report.categories_not_judged:
        items.insert(2, ("Not judged", report.categories_not_judged))
    if report.gpu_hours is not None:
        items.append(("GPU-hours", f"{report.gpu_hours:.2f}"))
    cells = "".join(f'<div class="fact"><b>{escape(str(v))}</b><span>{escape(k)}</span></div>' for k, v in items)
    return f'<div class="facts">{cells}</div>'


def _failed_nodes(report: Report) -> str:
    """One row per distinct blame: a whole group blamed with one message is one row."""
    rows: dict[tuple, list] = {}
    for n in report.failed_node_details:
        e = n.evidence
        key = (n.reason, n.message, n.category, n.group, e.measured if e else None, e.pod if e else None)
        rows.setdefault(key, []).append(n)
    body = []
    for (reason, message, category, group, _, _), nodes in rows.items():
        who = ", ".join(f"<code>{escape(x.name)}</code>" for x in nodes)
        e = nodes[0].evidence
        facts = [escape(message)] if message else []
        if e is not None:
            if e.measured:
                facts.append(f"<b>measured</b> {escape(e.measured)}" + (f" ({escape(e.metric)})" if e.metric else ""))
            if e.bar:
                facts.append(f"<b>bar</b> <code>{escape(e.bar)}</code>" + (f", set in {escape(e.bar_source)}" if e.bar_source else ""))
            if e.peer_median:
                facts.append(f"<b>peers</b> median {escape(e.peer_median)} over {e.peers} other group{'s' if e.peers != 1 else ''}")
            source = ", ".join(x for x in (f"Job {e.job}" if e.job else "", f"pod {e.pod} on {e.node}" if e.pod else "") if x)
            if source:
                facts.append(f"<b>from</b> {escape(source)}")
            if e.log_tail:
                facts.append("<pre>" + escape("\n".join(e.log_tail)) + "</pre>")
        step = escape(e.next_step) if e is not None and e.next_step else ""
        body.append(
            f"<tr><td>{who}</td>"
            f'<td><span class="reason {escape(reason)}">{escape(reason)}</span></td>'
            f"<td>{escape(category)}{' · ' + escape(group) if group else ''}</td>"
            f"<td>{'<br>'.join(facts)}</td><td>{step}</td></tr>"
        )
    cordon = " ".join(report.failed_nodes)
    return (
        '<h2>Failed nodes</h2><div class="card"><table><thead><tr><th>Node</th><th>Reason</th><th>Where</th>'
        f"<th>Evidence</th><th>Next step</th></tr></thead><tbody>{''.join(body)}</tbody></table>"
        f"<p>Cordon them: <code>kubectl cordon {escape(cordon)}</code></p></div>"
    )


def _node_map(nodes: list[NodeResult]) -> str:
    by_domain: dict[str, list[NodeResult]] = {}
    for n in nodes:
        by_domain.setdefault(n.domain or "no rack or clique label", []).append(n)
    boxes = []
    for domain, members in by_domain.items():
        tiles = "".join(
            f'<div class="tile {NODE_CLASS[n.status]}" title="{escape(n.name)}: {escape(n.status)}'
            f'{" — " + escape("; ".join(n.reasons)) if n.reasons else ""}">{escape(_short(n.name))}</div>'
            for n in members
        )
        failed = sum(1 for n in members if n.status == "Failed")
        note = f" · {failed} failed" if failed else ""
        boxes.append(
            f'<div class="domain"><h4>{escape(domain)} ({count(len(members), "node")}{note})</h4><div class="tiles">{tiles}</div></div>'
        )
    legend = (
        '<div class="legend"><span><i style="background:#16a34a"></i>passed</span>'
        '<span><i style="background:#dc2626"></i>failed</span><span><i style="background:#d97706"></i>excluded</span>'
        '<span><i style="background:#9ca3af"></i>not tested yet</span></div>'
    )
    return f'<h2>Nodes by rack / clique</h2>{legend}<div class="map">{"".join(boxes)}</div>'


def _short(name: str) -> str:
    return name if len(name) <= 14 else "…" + name[-13:]


def _category(c: CategoryReport) -> str:
    color = STATUS_COLOR.get(c.verdict, "#374151")
    facts = []
    for label, value in (
        ("Runtime", c.runtime),
        ("Scale", c.test_scale),
        ("Placement", c.placement),
        ("Nodes/Job", c.nodes_per_job),
        ("Jobs", c.jobs),
        ("Groups done", f"{c.groups_done}/{c.groups_total}" if c.groups_total else None),
        ("MNNVL", c.mnnvl),
        ("Transport", ", ".join(c.transport) or None),
        ("Thresholds", ", ".join(f"{k}: {v}" for k, v in c.thresholds.items()) or None),
        ("Env (names)", ", ".join(c.env) or None),
        ("Reason", singular_ones(with_units(c.failure_reason)) if c.failure_reason else None),
        ("Isolation", c.isolation),
    ):
        if value not in (None, ""):
            facts.append(f"<dt>{escape(label)}</dt><dd>{escape(str(value))}</dd>")
    parts = [
        f'<section class="card"><header><h3>{escape(c.key)}</h3>'
        f'<span class="pill" style="background:{color}">{escape(c.verdict)}</span></header>',
        f'<dl class="kv">{"".join(facts)}</dl>',
    ]
    if c.status_detail:
        parts.append(f'<div class="blocked"><b>Blocked:</b> {escape(c.status_detail)}</div>')
    from nvcre.report.judging import judging_lines

    for line in judging_lines(c):
        parts.append(f'<div class="next">{escape(line)}</div>')
    if c.diagnose:
        d = c.diagnose
        found = []
        if d.suspect_nodes:
            found.append("suspect nodes: " + ", ".join(d.suspect_nodes))
        if d.suspect_links:
            found.append("suspect links: " + ", ".join(" ↔ ".join(p) for p in d.suspect_links))
        if d.suspect_domains:
            found.append("suspect racks: " + ", ".join(d.suspect_domains))
        parts.append(
            f'<div class="next"><b>Diagnosis</b> ({escape(d.stage or "?")}, {count(d.rounds or 0, "round")}, '
            f"{count(d.healthy_count, 'node')} healthy): {escape('; '.join(found) or 'no fault isolated')}"
            + "".join(f"<br><small>{escape(n)}</small>" for n in d.notes)
            + "</div>"
        )
    plotted = [g for g in c.groups if len(g.bandwidth) >= 1]
    if plotted:
        parts.append(_plot(plotted, c.bus_bw_minimum_gbps))
    if c.bandwidth:
        parts.append(_bandwidth_table(c))
    if c.failed_groups:
        parts.append(_failed_groups(c))
    if c.pod_logs:
        parts.append(_pod_logs(c))
    if c.training:
        rows = "".join(
            f"<tr><td>{escape(t.name)}</td><td class='num'>{t.node_count}</td><td class='num'>{escape(t.goodput or '')}</td>"
            f"<td class='num'>{escape(t.tflops or '')}</td><td class='num'>{escape(t.step_time or '')}</td></tr>"
            for t in c.training
        )
        parts.append(
            "<table><thead><tr><th>Group</th><th class='num'>Nodes</th><th class='num'>Goodput</th>"
            f"<th class='num'>TFLOPs/GPU</th><th class='num'>Step time</th></tr></thead><tbody>{rows}</tbody></table>"
        )
    parts += [f'<div class="next"><b>Next step:</b> {escape(s)}</div>' for s in c.next_steps]
    parts.append("</section>")
    return "\n".join(parts)


def _bandwidth_table(c: CategoryReport) -> str:
    """One table per group (a mean of good and bad groups is a number no group measured):
    the groups under the bar or failed first, at most four, LOW on every row under the bar."""
    measured = [g for g in c.groups if g.bandwidth]
    if len(measured) <= 1:
        name = measured[0].name if measured else ""
        return _one_table(c.bandwidth, f"{name}, as measured" if name else "as measured")
    bad = [g for g in measured if g.below_min or g.phase == "Failed"]
    good = sorted((g for g in measured if g not in bad), key=lambda g: -(g.bus_bw_gbps or 0))
    shown = (bad + good)[:4]
    parts = []
    for g in shown:
        flags = (" · LOW" if g.below_min else "") + (" · provisional" if g.provisional else "")
        where = f"{g.domain}, " if g.domain else ""
        parts.append(_one_table(g.bandwidth, f"{g.name} ({where}{count(len(g.nodes), 'node')}){flags}"))
    if len(measured) > len(shown):
        parts.append(f"<p class='muted'>{len(measured) - len(shown)} more groups above the bar; every table is in the JSON report.</p>")
    return "".join(parts)


def _one_table(rows_in: list, title: str) -> str:
    rows = "".join(
        f"<tr><td class='num'>{escape(r.size)}</td><td class='num'>{escape(r.alg_bw)}</td>"
        f"<td class='num{' low' if r.low else ''}'>{escape(r.bus_bw)}{' LOW' if r.low else ''}</td>"
        f"<td class='num'>{r.samples}</td></tr>"
        for r in headline_rows(rows_in)
    )
    hidden = len(rows_in) - len(headline_rows(rows_in))
    if hidden:
        title += f"; {hidden} smaller sizes are in the plot and the JSON report"
    return (
        f"<table class='bw'><caption style='text-align:left;color:#6b7280;font-size:13px'>Bandwidth by message size ({escape(title)})</caption>"
        "<thead><tr><th class='num'>Size</th><th class='num'>AlgBW</th><th class='num'>BusBW</th>"
        f"<th class='num'>Samples</th></tr></thead><tbody>{rows}</tbody></table>"
    )


def _failed_groups(c: CategoryReport) -> str:
    items = []
    for fg in c.failed_groups:
        log = ""
        if fg.failure_log:
            fl = fg.failure_log
            code = "" if fl.exit_code is None else f", exit {fl.exit_code}"
            why = f" ({escape(fl.reason)})" if fl.reason else ""
            log = (
                f"<p>Log of pod <code>{escape(fl.pod_name)}</code> on <code>{escape(fl.node_name)}</code>{code}{why}</p>"
                + (f"<pre>{escape(chr(10).join(fl.tail.splitlines()[-LOG_LINES:]))}</pre>" if fl.tail else "")
            )
        items.append(
            f"<li><b>{escape(fg.name)}</b> ({count(fg.node_count, 'node')}): {escape(singular_ones(with_units(fg.reason)))}"
            f"<br><small>{escape(', '.join(fg.nodes))}</small>{log}</li>"
        )
    return f"<h4>Failed groups</h4><ul>{''.join(items)}</ul>"


def _pod_logs(c: CategoryReport) -> str:
    """A WorkloadRun's pods, each with its node, how it ended and its log tail (kept before cleanup)."""
    items = []
    for log in c.pod_logs:
        code = "" if log.exit_code is None else f", exit {log.exit_code}"
        why = f" ({escape(log.reason)})" if log.reason else ""
        tail = f"<pre>{escape(chr(10).join(log.tail.splitlines()[-LOG_LINES:]))}</pre>" if log.tail else ""
        items.append(f"<details><summary><code>{escape(log.pod_name)}</code> on <code>{escape(log.node_name)}</code>"
                     f"{code}{why}</summary>{tail}</details>")
    return f"<h4>Pod logs (read before the pods were deleted)</h4>{''.join(items)}"


def _plot(groups: list[GroupResult], minimum: float | None) -> str:
    """Bus bandwidth against message size, one line per group, log2 x-axis."""
    shown = sorted(groups, key=lambda g: (not (g.below_min or g.phase == "Failed"), g.name))[:MAX_PLOT_GROUPS]
    width, height = 760, 320
    left, right, top, bottom = 64, 180, 18, 46
    pw, ph = width - left - right, height - top - bottom
    sizes = sorted({r.size_bytes for g in shown for r in g.bandwidth if r.size_bytes > 0})
    if not sizes:
        return ""
    lo, hi = math.log2(sizes[0]), math.log2(sizes[-1])
    if hi == lo:
        lo, hi = lo - 1, hi + 1
    ymax = max([r.bus_bw_gbps for g in shown for r in g.bandwidth] + [minimum or 0]) * 1.1 or 1.0
    step = _nice_step(ymax / 5)

    def x(size: int) -> float:
        return left + (math.log2(size) - lo) / (hi - lo) * pw

    def y(value: float) -> float:
        return top + ph - value / ymax * ph

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
        'role="img" aria-label="bus bandwidth by message size">'
    ]
    tick = 0.0
    while tick <= ymax:
        out.append(f'<line x1="{left}" x2="{left + pw}" y1="{y(tick):.1f}" y2="{y(tick):.1f}" stroke="#e5e7eb"/>')
        out.append(
            f'<text x="{left - 8}" y="{y(tick) + 4:.1f}" font-size="11" text-anchor="end" fill="#6b7280">{tick:g}</text>'
        )
        tick += step
    every = max(1, math.ceil(len(sizes) / 8))
    for i, s in enumerate(sizes):
        if i % every:
            continue
        out.append(f'<line x1="{x(s):.1f}" x2="{x(s):.1f}" y1="{top}" y2="{top + ph}" stroke="#f3f4f6"/>')
        out.append(
            f'<text x="{x(s):.1f}" y="{top + ph + 16}" font-size="11" text-anchor="middle" fill="#6b7280">{human_size(s)}</text>'
        )
    out.append(f'<line x1="{left}" x2="{left}" y1="{top}" y2="{top + ph}" stroke="#9ca3af"/>')
    out.append(f'<line x1="{left}" x2="{left + pw}" y1="{top + ph}" y2="{top + ph}" stroke="#9ca3af"/>')
    out.append(
        f'<text x="{left + pw / 2}" y="{height - 8}" font-size="12" text-anchor="middle" fill="#374151">'
        "message size (log2 scale)</text>"
    )
    out.append(
        f'<text x="14" y="{top + ph / 2}" font-size="12" text-anchor="middle" fill="#374151" '
        f'transform="rotate(-90 14 {top + ph / 2})">bus bandwidth (GB/s)</text>'
    )
    if minimum is not None:
        out.append(
            f'<line x1="{left}" x2="{left + pw}" y1="{y(minimum):.1f}" y2="{y(minimum):.1f}" stroke="#dc2626" '
            'stroke-dasharray="6 4" stroke-width="1.5"/>'
        )
        out.append(
            f'<text x="{left + pw - 4}" y="{y(minimum) - 5:.1f}" font-size="11" text-anchor="end" fill="#dc2626">'
            f"minimum {minimum:g} GB/s</text>"
        )
    for i, g in enumerate(shown):
        color = PALETTE[i % len(PALETTE)]
        points = " ".join(f"{x(r.size_bytes):.1f},{y(r.bus_bw_gbps):.1f}" for r in g.bandwidth if r.size_bytes > 0)
        dash = ' stroke-dasharray="4 3"' if g.provisional else ""
        out.append(f'<polyline points="{points}" fill="none" stroke="{color}" stroke-width="2.2"{dash}/>')
        for r in g.bandwidth:
            if r.size_bytes > 0:
                out.append(
                    f'<circle cx="{x(r.size_bytes):.1f}" cy="{y(r.bus_bw_gbps):.1f}" r="3" fill="{color}">'
                    f"<title>{escape(g.name)} · {escape(r.size)}: {escape(r.bus_bw)} ({r.samples} samples)</title></circle>"
                )
        ly = top + 12 + i * 18
        label = g.name  # the handle the rest of the report uses; the rack is in the node map
        flag = " LOW" if g.below_min else (" (provisional)" if g.provisional else "")
        out.append(f'<line x1="{left + pw + 16}" x2="{left + pw + 36}" y1="{ly - 4}" y2="{ly - 4}" stroke="{color}" stroke-width="3"/>')
        out.append(
            f'<text x="{left + pw + 42}" y="{ly}" font-size="12" fill="{"#b91c1c" if g.below_min else "#374151"}">'
            f"{escape(_short(label))}{flag}</text>"
        )
    if len(groups) > len(shown):
        out.append(
            f'<text x="{left + pw + 16}" y="{top + 12 + len(shown) * 18}" font-size="11" fill="#6b7280">'
            f"+{len(groups) - len(shown)} more groups</text>"
        )
    out.append("</svg>")
    return "".join(out)


def _nice_step(raw: float) -> float:
    if raw <= 0:
        return 1.0
    power = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 2.5, 5, 10):
        if raw <= m * power:
            return m * power
    return 10 * power


def _exclusions(report: Report) -> str:
    rows = "".join(
        f"<tr><td><code>{escape(e.name)}</code></td><td>{escape(e.why)}</td>"
        f"<td>{escape(', '.join(e.ran_in)) if e.ran_in else 'not tested'}</td></tr>"
        for e in report.exclusions
    )
    return (
        "<h2>Excluded nodes</h2><div class='card'><p>Categories left these target nodes out, so a passing run is "
        "INCOMPLETE rather than PASSED. A node that still ran in some category shows where.</p><table><thead><tr>"
        f"<th>Node</th><th>Why</th><th>Ran in</th></tr></thead><tbody>{rows}</tbody></table></div>"
    )
