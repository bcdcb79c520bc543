"""The terminal report: a header box, one card per category, a Summary card.

The layout follows the reference's samples (box width 66, labels in a fixed column,
marks ✓ ✗ ?) so people who know those reports read ours without relearning.
"""

from __future__ import annotations

import textwrap

from nvcre.report.format import headline_rows, truncate
from nvcre.report.model import CategoryReport, GroupResult, Report

WIDTH = 66
INNER = WIDTH - 2
# More groups than this in "Bandwidth by group" and only the failed or LOW ones are listed.
MAX_GROUP_ROWS = 16
MAX_SUMMARY_NODES = 20


def render_text(report: Report) -> str:
    lines: list[str] = [""]
    title = f"{report.kind} Report"
    lines += ["╔" + "═" * INNER + "╗", "║" + title.center(INNER) + "║", "╚" + "═" * INNER + "╝", ""]
    lines += _header(report)
    lines.append("")
    for category in report.categories:
        lines += _card(category.key, _category_body(category, report.namespace) + _judging_rows(category))
        lines.append("")
    lines += _card("Summary", _summary_body(report))
    lines.append("")
    return "\n".join(lines) + "\n"


def _header(report: Report) -> list[str]:
    rows = [
        f"  {'Name:':<11}{report.name}",
        f"  {'Platform:':<11}{report.platform}",
        f"  {'GPU:':<11}{report.gpu}",
        f"  {'Nodes:':<11}{report.total_nodes}",
    ]
    if report.excluded_nodes:
        shown = ", ".join(report.excluded_nodes[:8]) + (", ..." if len(report.excluded_nodes) > 8 else "")
        rows.append(f"  {'Excluded:':<11}{len(report.excluded_nodes)} ({shown})")
        reasons = [report.exclusion_reason] if report.exclusion_reason else []
        for reason in reasons:
            rows.append(" " * 13 + reason)
    if report.env:
        rows.append(f"  {'Env:':<11}{', '.join(report.env)}")
    return rows


def _card(title: str, body: list[str]) -> list[str]:
    out = ["┌" + "─" * INNER + "┐", _row("  " + title), "├" + "─" * INNER + "┤"]
    out += [_row(line) for line in body]
    out.append("└" + "─" * INNER + "┘")
    return out


def _row(content: str) -> str:
    return "│" + truncate(content, INNER).ljust(INNER) + "│"


def _field(label: str, value: object) -> str:
    return f"  {label:<11}{value}"


def _wrapped(label: str, value: str) -> list[str]:
    """A labelled value that may be long: continuation lines align under the value."""
    width = INNER - 13 - 1
    parts = textwrap.wrap(value, width, break_on_hyphens=False) or [""]
    return [_field(label, parts[0])] + [" " * 13 + p for p in parts[1:]]


def _indented(text: str, indent: int, max_lines: int = 4) -> list[str]:
    width = INNER - indent - 1
    parts = textwrap.wrap(text, width, break_on_hyphens=False) or []
    if len(parts) > max_lines:
        parts = parts[:max_lines]
        parts[-1] = truncate(parts[-1] + " ...", width)
    return [" " * indent + p for p in parts]


def _reason_line(text: str, indent: int) -> str:
    return " " * indent + truncate(text, INNER - indent - 1)


def _category_body(c: CategoryReport, namespace: str) -> list[str]:
    body = [_field("Status:", c.status)]
    if c.failure_reason:
        body.append(_field("Reason:", truncate(c.failure_reason, INNER - 13 - 1)))
    if c.status_detail:
        body += _wrapped("Blocked:", c.status_detail)
    if c.isolation:
        body += _wrapped("Isolation:", c.isolation)
    if c.runtime:
        suffix = f" (across {c.iterations} iterations)" if c.iterations else ""
        body.append(_field("Runtime:", c.runtime + suffix))
    if c.test_scale and not c.placement:
        body.append(_field("Scale:", c.test_scale))
    if c.nodes_per_job and c.test_scale != "diagnose":
        body.append(_field("Nodes/Job:", c.nodes_per_job))
    if c.jobs is not None:
        body.append(_field("Jobs:", c.jobs))
    if c.status == "Running" and c.groups_total:
        body.append(_field("Groups:", f"{c.groups_done}/{c.groups_total} done"))
    if c.placement:
        body.append(_field("Placement:", c.placement))
    if c.mnnvl:
        body.append(_field("MNNVL:", c.mnnvl))
    if c.env:
        body += _wrapped("Env:", ", ".join(c.env))

    if c.failed_groups:
        body += ["", "  Failed Groups:"]
        for fg in c.failed_groups:
            body.append(f"      ✗  {fg.name} ({fg.node_count} nodes)")
            if fg.reason:
                body.append(_reason_line(fg.reason, 9))
            body += _node_list(fg.nodes)
            if fg.failure_log:
                log = fg.failure_log
                body.append("         Failure Log (one captured pod):")
                exit_text = "" if log.exit_code is None else f" / Exit: {log.exit_code}"
                if log.reason:
                    exit_text += f" ({log.reason})"
                body.append(_reason_line(f"Pod:  {log.pod_name}", 11))
                body.append(_reason_line(f"Node: {log.node_name}{exit_text}", 11))
                if log.tail:
                    tail = _log_lines(log.tail)
                    body.append("           Tail:")
                    body += [_reason_line(t, 13) for t in tail]

    if c.failed_nodes:
        body += ["", "  Failed Nodes:"]
        for (reason, message), names in _same_failure(c).items():
            if len(names) == 1:
                body.append(f"      ✗  {names[0]}  {reason}")
            else:
                body.append(f"      ✗  {len(names)} nodes  {reason}")
            if message:
                body += _indented(message, 9, max_lines=3)
            if len(names) > 1:
                body += _node_list(names)

    measured = [g for g in c.groups if g.bandwidth or g.phase == "Failed"]
    if len([g for g in c.groups if g.bandwidth]) > 1 and len(c.groups) > 1:
        body += ["", "  Bandwidth by group:"]
        body += _group_rows(measured, {fg.name for fg in c.failed_groups})

    if c.diagnose:
        d = c.diagnose
        body += ["", "  Diagnosis:"]
        for label, value in (
            ("Stage:", d.stage),
            ("Rounds:", d.rounds),
            ("Healthy:", f"{d.healthy_count} nodes"),
            ("Suspect:", ", ".join(d.suspect_nodes) or None),
            ("Links:", ", ".join(" <-> ".join(pair) for pair in d.suspect_links) or None),
            ("Racks:", ", ".join(d.suspect_domains) or None),
        ):
            if value not in (None, ""):
                body.append(_reason_line(f"{label:<11}{value}", 4))
        if d.max_bw:
            body += [f"    {'Max BW:':<11}{d.max_bw}", f"        {d.max_bw_group}"]
        if d.min_bw:
            body += [f"    {'Min BW:':<11}{d.min_bw}", f"        {d.min_bw_group}"]
        for note in d.notes:
            body += _indented(f"Note: {note}", 4, max_lines=3)

    if c.training:
        body.append("")
        for t in c.training:
            label = f"{t.name} ({t.node_count} nodes)" if t.name else "all nodes"
            body.append(f"  {label}")
            if t.goodput:
                body.append(f"    {'Goodput:':<13}{t.goodput}")
            if t.tflops:
                body.append(f"    {'TFLOPs/GPU:':<13}{t.tflops}")
            if t.step_time:
                body.append(f"    {'Step Time:':<13}{t.step_time}")

    if c.transport:
        body += ["", f"  Transport: {', '.join(c.transport)}"]
    if c.bandwidth:
        if not c.transport:
            body.append("")
        body.append("  Bandwidth:")
        body.append(f"    {'Size':<11}{'AlgBW':<13}{'BusBW':<13}Samples")
        shown = headline_rows(c.bandwidth)
        if len(shown) < len(c.bandwidth):
            body.append(f"    ({len(c.bandwidth) - len(shown)} smaller sizes in -o json)")
        for r in shown:
            flag = "  LOW" if r.low else ""
            body.append(f"    {r.size:<11}{r.alg_bw:<13}{r.bus_bw:<13}{r.samples}{flag}")
        if any(r.provisional for r in c.bandwidth):
            body.append("    (provisional: read from an incomplete log)")
        if c.bus_bw_minimum_gbps is not None and any(r.low for r in c.bandwidth):
            body.append(f"    LOW: peak bus bandwidth under {c.bus_bw_minimum_gbps:g} GB/s")

    for step in c.next_steps:
        body.append("")
        body += _wrapped("Next step:", step)
    return body


def _same_failure(c: CategoryReport) -> dict[tuple[str, str], list[str]]:
    """Failed nodes sharing one reason and message (a whole group blamed at once) print once."""
    out: dict[tuple[str, str], list[str]] = {}
    for n in c.failed_nodes:
        out.setdefault((n.reason, n.message), []).append(n.name)
    return out


def _log_lines(tail: str, keep: int = 8) -> list[str]:
    """The informative end of a log: separator rules and blank lines dropped."""
    lines = [line for line in tail.splitlines() if line.strip() and line.strip().strip("-=*#_~ ")]
    return lines[-keep:]


def _group_label(g: GroupResult, unique_domain: bool = True) -> str:
    if g.domain and unique_domain:
        return f"{g.domain} ({len(g.nodes)} nodes)"
    if 0 < len(g.nodes) <= 4:
        return f"{g.name} ({', '.join(g.nodes)})"
    return f"{g.name} ({len(g.nodes)} nodes)"


def _node_list(nodes: list[str]) -> list[str]:
    """A few nodes one per line (as the reference prints them); many as a wrapped list."""
    if len(nodes) <= 4:
        return [f"           - {n}" for n in nodes]
    return _indented(", ".join(nodes), 11, max_lines=6)


def _group_rows(groups: list[GroupResult], listed: set[str]) -> list[str]:
    shown = groups
    hidden: list[GroupResult] = []
    if len(groups) > MAX_GROUP_ROWS:
        shown = [g for g in groups if g.phase == "Failed" or g.below_min]
        hidden = [g for g in groups if g not in shown]
    rows = []
    domains = [g.domain for g in groups]
    for g in shown:
        bad = g.phase == "Failed" or g.below_min
        mark = "✗" if bad else ("?" if g.provisional or g.phase != "Succeeded" else "✓")
        rows.append(f"      {mark}  {_group_label(g, domains.count(g.domain) == 1)}")
        if g.bus_bw:
            rows.append(f"         {g.bus_bw}{'  LOW' if g.below_min else ''}{'  (provisional)' if g.provisional else ''}")
        else:
            rows.append("         no bandwidth data")
        if g.transport:
            rows.append(f"         Transport: {', '.join(g.transport)}")
        if bad and g.name not in listed:
            rows += _node_list(g.nodes)
    if hidden:
        values = [g.bus_bw_gbps for g in hidden if g.bus_bw_gbps is not None]
        spread = f" ({min(values):.2f} to {max(values):.2f} GB/s)" if values else ""
        rows.append(f"      ✓  {len(hidden)} other groups passed{spread}")
    return rows


def _summary_body(report: Report) -> list[str]:
    body = [f"  {'Categories:':<14}{report.categories_passed}/{report.categories_total} passed"]
    if not report.failed_nodes:
        body.append(f"  {'Failed Nodes:':<14}none")
    else:
        body.append(f"  {'Failed Nodes:':<14}{len(report.failed_nodes)}")
        reasons: dict[str, list[str]] = {}
        for d in report.failed_node_details:
            reasons.setdefault(d.name, [])
            if d.reason not in reasons[d.name]:
                reasons[d.name].append(d.reason)
        for name in report.failed_nodes[:MAX_SUMMARY_NODES]:
            body.append(f"    - {name}  {', '.join(reasons.get(name, []))}")
        if len(report.failed_nodes) > MAX_SUMMARY_NODES:
            body.append(f"    ... and {len(report.failed_nodes) - MAX_SUMMARY_NODES} more (see -o json)")
    if report.gpu_hours is not None:
        body.append(f"  {'GPU-hours:':<14}{report.gpu_hours:.2f}")
    body.append(f"  {'Result:':<14}{report.result}")
    return body


def _judging_rows(category: CategoryReport) -> list[str]:
    """What judged the category (or that nothing did), outliers, regressions, GPU-hours."""
    from nvcre.report.judging import judging_lines

    rows: list[str] = []
    for line in judging_lines(category):
        rows += textwrap.wrap(line, INNER - 4, initial_indent="  ", subsequent_indent="    ") or [""]
    return rows
