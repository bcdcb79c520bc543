"""The terminal report: a header box, one card per category, a Summary card.

The layout follows the reference's samples (labels in a fixed column, marks ✓ ✗ ?) so
people who know those reports read ours without relearning. Two modes
(docs/design/160-text-report-modes.md):

- width 66, the default of ``render_text``: the reference's own layout, byte for byte
  (long values are cut with "..."), pinned by the shared fixtures;
- any other width (the CLI passes the terminal's, 80 in a pipe) or ``None`` (``--wide``,
  as wide as the longest line): nothing is cut, long values wrap, and every failed node
  carries its evidence (measured value and unit, the bar and its source, the peers'
  median, the Job and pod, its own log tail, a next step), each group's bandwidth table
  with LOW on every row under the bar, coverage per excluded node, and the nodes to
  cordon.
"""

from __future__ import annotations

import contextvars
import textwrap

from nvcre.report.evidence import with_units
from nvcre.report.format import count, headline_rows, singular_ones, truncate
from nvcre.report.model import CategoryReport, GroupResult, Report

WIDTH = 66
INNER = WIDTH - 2
# More groups than this in "Bandwidth by group" and only the failed or LOW ones are listed.
MAX_GROUP_ROWS = 16
MAX_SUMMARY_NODES = 20
MIN_WIDTH = 40
WIDE_LIMIT = 100_000  # "no limit" while measuring the --wide layout
MAX_GROUP_TABLES = 4  # per-group bandwidth tables in the full layout: the LOW/failed ones first

_W: contextvars.ContextVar[int] = contextvars.ContextVar("text_inner", default=INNER)


def _inner() -> int:
    return _W.get()


def _full() -> bool:
    """The full layout (evidence, wrapping) rather than the reference's 66 columns."""
    return _W.get() != INNER


def render_text(report: Report, width: int | None = WIDTH) -> str:
    """The report at ``width`` columns (66: the reference layout); ``None``: --wide."""
    if width is None:
        measured = _render(report, WIDE_LIMIT)
        longest = max(len(line[1:-1].rstrip()) for line in measured.splitlines() if line.startswith("│"))
        return _render(report, max(WIDTH, longest + 2 + 2))
    return _render(report, max(MIN_WIDTH, width))


def _render(report: Report, width: int) -> str:
    token = _W.set(width - 2)
    try:
        return _render_now(report)
    finally:
        _W.reset(token)


def _render_now(report: Report) -> str:
    lines: list[str] = [""]
    title = f"{report.kind} Report"
    lines += ["╔" + "═" * _inner() + "╗", "║" + title.center(_inner()) + "║", "╚" + "═" * _inner() + "╝", ""]
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
    if report.excluded_nodes and _full():
        untested = sum(1 for ex in report.exclusions if not ex.ran_in)
        count = len(report.excluded_nodes)
        what = ("not tested" if untested == count else "left out of some categories" if untested == 0
                else f"{untested} not tested at all")
        rows.append(f"  {'Excluded:':<11}{count} node{_s(count)}, {what}")
        codes = {ex.reason for ex in report.exclusions}
        for ex in report.exclusions[:MAX_SUMMARY_NODES]:
            why = ex.why or report.exclusion_reason or "excluded"
            if not ex.message and ex.reason and report.exclusion_reason and len(codes) == 1 and report.exclusion_reason != ex.reason:
                why = f"{ex.reason} ({report.exclusion_reason})"
            if ex.ran_in:  # tested by some categories, left out of others: say both
                why = f"ran in {', '.join(ex.ran_in)}; excluded from the others: {why}"
            rows += _indented(f"- {ex.name}: {why}", 13, max_lines=5)
        if len(report.exclusions) > MAX_SUMMARY_NODES:
            rows.append(" " * 13 + f"... and {len(report.exclusions) - MAX_SUMMARY_NODES} more (see -o json)")
    elif report.excluded_nodes:
        shown = ", ".join(report.excluded_nodes[:8]) + (", ..." if len(report.excluded_nodes) > 8 else "")
        rows.append(f"  {'Excluded:':<11}{len(report.excluded_nodes)} ({shown})")
        reasons = [report.exclusion_reason] if report.exclusion_reason else []
        for reason in reasons:
            rows.append(" " * 13 + reason)
    if report.env:
        rows.append(f"  {'Env:':<11}{', '.join(report.env)}")
    return rows


def _card(title: str, body: list[str]) -> list[str]:
    out = ["┌" + "─" * _inner() + "┐", _row("  " + title), "├" + "─" * _inner() + "┤"]
    out += [_row(line) for line in body]
    out.append("└" + "─" * _inner() + "┘")
    return out


def _row(content: str) -> str:
    return "│" + truncate(content, _inner()).ljust(_inner()) + "│"


def _s(n: int) -> str:
    return "" if n == 1 else "s"


def _field(label: str, value: object) -> str:
    return f"  {label:<11}{value}"


def _wrapped(label: str, value: str) -> list[str]:
    """A labelled value that may be long: continuation lines align under the value."""
    width = _inner() - 13 - 1
    parts = textwrap.wrap(value, width, break_on_hyphens=False) or [""]
    return [_field(label, parts[0])] + [" " * 13 + p for p in parts[1:]]


def _indented(text: str, indent: int, max_lines: int = 4) -> list[str]:
    width = _inner() - indent - 1
    parts = textwrap.wrap(text, width, break_on_hyphens=False) or []
    if _full():
        max_lines = max(max_lines, 12)
    if len(parts) > max_lines:
        parts = parts[:max_lines]
        parts[-1] = truncate(parts[-1] + " ...", width)
    return [" " * indent + p for p in parts]


def _reason_line(text: str, indent: int) -> str:
    return " " * indent + truncate(text, _inner() - indent - 1)


def _reason_lines(text: str, indent: int) -> list[str]:
    """A long line: cut in the reference layout, wrapped (never cut) in the full one."""
    if not _full():
        return [_reason_line(text, indent)]
    return _indented(text, indent, max_lines=12) or [" " * indent]


def _category_body(c: CategoryReport, namespace: str) -> list[str]:
    body = [_field("Status:", c.verdict if c.verdict == c.status else f"{c.verdict} (workload {c.status})")]
    if c.failure_reason and _full():
        body += _wrapped("Reason:", singular_ones(with_units(c.failure_reason)))
    elif c.failure_reason:
        body.append(_field("Reason:", truncate(c.failure_reason, _inner() - 13 - 1)))
    if c.status_detail:
        body += _wrapped("Blocked:", c.status_detail)
    if c.health_check:
        body += _wrapped("Health:", c.health_check)
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
    ran = sorted({n for g in c.groups for n in g.nodes})
    if _full() and ran:
        shown = ", ".join(ran) if len(ran) <= MAX_SUMMARY_NODES else f"{', '.join(ran[:MAX_SUMMARY_NODES])} and {len(ran) - MAX_SUMMARY_NODES} more"
        body += _wrapped("Ran on:", f"{len(ran)} node{_s(len(ran))}: {shown}")
    if c.placement:
        body.append(_field("Placement:", c.placement))
    if c.mnnvl:
        body.append(_field("MNNVL:", c.mnnvl))
    if c.env:
        body += _wrapped("Env:", ", ".join(c.env))

    if c.failed_groups:
        body += ["", "  Failed Groups:"]
        for fg in c.failed_groups:
            body.append(f"      ✗  {fg.name} ({count(fg.node_count, 'node')})")
            if fg.reason:
                body += _reason_lines(singular_ones(with_units(fg.reason)) if _full() else fg.reason, 9)
            body += _node_list(fg.nodes)
            if fg.failure_log:
                log = fg.failure_log
                body.append("         Failure Log (one captured pod):")
                exit_text = "" if log.exit_code is None else f" / Exit: {log.exit_code}"
                if log.reason:
                    exit_text += f" ({log.reason})"
                body += _reason_lines(f"Pod:  {log.pod_name}", 11)
                body += _reason_lines(f"Node: {log.node_name}{exit_text}", 11)
                if log.tail:
                    tail = _log_lines(log.tail)
                    body.append("           Tail:")
                    for t in tail:
                        body += _reason_lines(t, 13)

    if c.failed_nodes and _full():
        body += ["", "  Failed Nodes:"]
        body += _failed_nodes_full(c)
    elif c.failed_nodes:
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
        body += _group_rows(measured, {fg.name for fg in c.failed_groups}, {o.group for o in c.outliers})

    if c.diagnose:
        d = c.diagnose
        body += ["", "  Diagnosis:"]
        for label, value in (
            ("Stage:", d.stage),
            ("Rounds:", d.rounds),
            ("Healthy:", count(d.healthy_count, "node")),
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
            label = f"{t.name} ({count(t.node_count, 'node')})" if t.name else "all nodes"
            body.append(f"  {label}")
            if t.goodput:
                body.append(f"    {'Goodput:':<13}{t.goodput}")
            if t.tflops:
                body.append(f"    {'TFLOPs/GPU:':<13}{t.tflops}")
            if t.step_time:
                body.append(f"    {'Step Time:':<13}{t.step_time}")

    body += _pod_log_rows(c)
    if c.transport:
        body += ["", f"  Transport: {', '.join(c.transport)}"]
    per_group = [g for g in c.groups if g.bandwidth]
    if _full() and len(per_group) > 1:
        body += _group_tables(c, per_group)
    elif c.bandwidth:
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
        if _full() and step.startswith("inspect the node's conditions"):
            continue  # each failed node carries its own next step
        body.append("")
        body += _wrapped("Next step:", step)
    return body


def _pod_log_rows(c: CategoryReport) -> list[str]:
    """A WorkloadRun's pods: where each ran, how it ended and its log's last lines (-o json: the whole tail)."""
    if not c.pod_logs:
        return []
    body = ["", "  Pod Logs (read before the pods were deleted):"]
    for log in c.pod_logs:
        end = "" if log.exit_code is None else f", exit {log.exit_code}"
        end += f" ({log.reason})" if log.reason else ""
        body += _reason_lines(f"{log.pod_name} on {log.node_name or 'an unknown node'}{end}", 6)
        for line in _log_lines(log.tail or "", keep=6):
            body += _reason_lines(line, 9)
    return body


def _evidence_key(n) -> tuple:
    e = n.evidence
    return (n.reason, n.message, e.measured if e else None, e.group if e else None, e.pod if e else None)


def _failed_nodes_full(c: CategoryReport) -> list[str]:
    """Each failed node (or nodes blamed together) with the evidence behind it."""
    body: list[str] = []
    same: dict[tuple, list] = {}
    for n in c.failed_nodes:
        same.setdefault(_evidence_key(n), []).append(n)
    for nodes in same.values():
        first = nodes[0]
        names = [n.name for n in nodes]
        label = names[0] if len(names) == 1 else f"{len(names)} nodes"
        body.append(f"      ✗  {label}  {first.reason}")
        if len(names) > 1:
            body += _node_list(names)
        if first.message:
            body += _indented(first.message, 9, max_lines=6)
        e = first.evidence
        if e is None:
            continue
        facts: list[tuple[str, str]] = []
        if e.measured:
            facts.append(("Measured:", e.measured + (f" ({e.metric})" if e.metric else "")))
        if e.bar:
            facts.append(("Bar:", e.bar + (f", set in {e.bar_source}" if e.bar_source else "")))
        if e.peer_median:
            facts.append(("Peers:", f"median {e.peer_median} over {e.peers} other group{_s(e.peers)}"))
        elif e.metric == "busBandwidthGBps":
            facts.append(("Peers:", "no other group has a complete measurement"))
        source = ", ".join(x for x in (f"Job {e.job}" if e.job else "", e.group or "") if x)
        if e.pod:
            source = (source + "; " if source else "") + f"pod {e.pod} on {e.node}"
        if source:
            facts.append(("Evidence:", source))
        for label, value in facts:
            body += _labelled(label, value, 9)
        if e.log_tail:
            body.append(" " * 9 + "Log tail (its own pod):")
            for line in e.log_tail:
                body += _reason_lines(line, 11)
        elif e.log_note:
            body += _labelled("Log:", e.log_note, 9)
        if e.next_step:
            body += _labelled("Next step:", e.next_step, 9)
    return body


def _labelled(label: str, value: str, indent: int) -> list[str]:
    """``label`` at ``indent``, the value after it, continuation lines under the value."""
    lead = indent + 11
    parts = textwrap.wrap(value, max(20, _inner() - lead - 1), break_on_hyphens=False) or [""]
    return [" " * indent + f"{label:<11}{parts[0]}"] + [" " * lead + p for p in parts[1:]]


def _group_tables(c: CategoryReport, groups: list[GroupResult]) -> list[str]:
    """Bandwidth per group (never a mean of good and bad groups), LOW on each row under the bar."""
    bad = [g for g in groups if g.below_min or g.phase == "Failed"]
    good = sorted((g for g in groups if g not in bad), key=lambda g: -(g.bus_bw_gbps or 0))
    shown = (bad + good)[:MAX_GROUP_TABLES] if len(groups) > MAX_GROUP_TABLES else bad + good
    body = [] if c.transport else [""]
    domains = [g.domain for g in groups]
    for g in shown:
        flags = ("  LOW" if g.below_min else "") + ("  (provisional)" if g.provisional else "")
        body.append(f"  Bandwidth, {_group_label(g, domains.count(g.domain) == 1)}:{flags}")
        body.append(f"    {'Size':<11}{'AlgBW':<13}{'BusBW':<13}Samples")
        rows = headline_rows(g.bandwidth)
        for r in rows:
            body.append(f"    {r.size:<11}{r.alg_bw:<13}{r.bus_bw:<13}{r.samples}{'  LOW' if r.low else ''}")
    hidden = [g for g in groups if g not in shown]
    if hidden:
        values = [g.bus_bw_gbps for g in hidden if g.bus_bw_gbps is not None]
        spread = f", peaks {min(values):.2f} to {max(values):.2f} GB/s" if values else ""
        body.append(f"    ({len(hidden)} more group{_s(len(hidden))} above the bar{spread}; every table in -o json)")
    if c.bus_bw_minimum_gbps is not None and any(r.low for g in shown for r in g.bandwidth):
        body.append(f"    LOW: bus bandwidth under {c.bus_bw_minimum_gbps:g} GB/s")
    return body


def _same_failure(c: CategoryReport) -> dict[tuple[str, str], list[str]]:
    """Failed nodes sharing one reason and message (a whole group blamed at once) print once."""
    out: dict[tuple[str, str], list[str]] = {}
    for n in c.failed_nodes:
        out.setdefault((n.reason, n.message), []).append(n.name)
    return out


def _log_lines(tail: str, keep: int = 8) -> list[str]:
    """The informative end of a log: separator rules and blank lines dropped; in the
    full layout a fragment the capture cut off is dropped too (whole lines only)."""
    if _full():
        from nvcre.report.evidence import log_lines

        return log_lines(tail, keep)
    lines = [line for line in tail.splitlines() if line.strip() and line.strip().strip("-=*#_~ ")]
    return lines[-keep:]


def _group_label(g: GroupResult, unique_domain: bool = True) -> str:
    if _full():  # the group's own name, as JSON, HTML and the Failed Groups list say it
        where = f"{g.domain}, " if g.domain else ""
        return f"{g.name} ({where}{len(g.nodes)} node{_s(len(g.nodes))})"
    if g.domain and unique_domain:
        return f"{g.domain} ({count(len(g.nodes), 'node')})"
    if 0 < len(g.nodes) <= 4:
        return f"{g.name} ({', '.join(g.nodes)})"
    return f"{g.name} ({count(len(g.nodes), 'node')})"


def _node_list(nodes: list[str]) -> list[str]:
    """A few nodes one per line (as the reference prints them); many as a wrapped list."""
    if len(nodes) <= 4:
        return [f"           - {n}" for n in nodes]
    return _indented(", ".join(nodes), 11, max_lines=6)


def _group_rows(groups: list[GroupResult], listed: set[str], outliers: set[str] = frozenset()) -> list[str]:
    """One row per group; a PerformanceOutlier group is marked ``!``, never ``✓``, even where it
    passed (a warning names it below, and a tick beside it would contradict that)."""
    shown = groups
    hidden: list[GroupResult] = []
    if len(groups) > MAX_GROUP_ROWS:
        shown = [g for g in groups if g.phase == "Failed" or g.below_min or g.name in outliers]
        hidden = [g for g in groups if g not in shown]
    rows = []
    domains = [g.domain for g in groups]
    for g in shown:
        bad = g.phase == "Failed" or g.below_min
        slow = g.name in outliers
        mark = "✗" if bad else ("?" if g.provisional or g.phase != "Succeeded" else ("!" if slow else "✓"))
        rows.append(f"      {mark}  {_group_label(g, domains.count(g.domain) == 1)}")
        if g.bus_bw:
            rows.append(f"         {g.bus_bw}{'  LOW' if g.below_min else ''}{'  OUTLIER' if slow and not bad else ''}"
                        f"{'  (provisional)' if g.provisional else ''}")
        else:
            rows.append("         no bandwidth data")
        if g.transport:
            rows.append(f"         Transport: {', '.join(g.transport)}")
        if bad and g.name not in listed:
            rows += _node_list(g.nodes)
    if hidden:
        values = [g.bus_bw_gbps for g in hidden if g.bus_bw_gbps is not None]
        spread = f" ({min(values):.2f} to {max(values):.2f} GB/s)" if values else ""
        rows.append(f"      ✓  {len(hidden)} other group{_s(len(hidden))} passed{spread}")
    return rows


def _summary_body(report: Report) -> list[str]:
    body = [f"  {'Categories:':<14}{report.categories_text}"]
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
        if _full():
            names = report.failed_nodes
            cmd = ("kubectl cordon " + " ".join(names)) if len(names) <= 8 else (
                f"nvcrectl {report.kind.lower()} report {report.name} -n {report.namespace} -o name | xargs kubectl cordon")
            parts = textwrap.wrap(cmd, max(20, _inner() - 17), break_on_hyphens=False)
            body += [f"  {'Cordon:':<14}{parts[0]}"] + [" " * 16 + p for p in parts[1:]]
    if report.gpu_hours is not None:
        body.append(f"  {'GPU-hours:':<14}{report.gpu_hours:.2f}")
    if _full() and report.excluded_nodes:
        body.append(f"  {'Not tested:':<14}{len(report.excluded_nodes)} excluded node{_s(len(report.excluded_nodes))} (see the header)")
    body.append(f"  {'Result:':<14}{report.result}")
    return body


def _judging_rows(category: CategoryReport) -> list[str]:
    """What judged the category (or that nothing did), outliers, regressions, GPU-hours."""
    from nvcre.report.judging import judging_lines

    rows: list[str] = []
    for line in judging_lines(category):
        rows += textwrap.wrap(line, INNER - 4, initial_indent="  ", subsequent_indent="    ") or [""]
    return rows
