"""Markdown for a ticket or a pull request: the verdict first, then the evidence."""

from __future__ import annotations

from nvcre.report.evidence import with_units
from nvcre.report.format import count, headline_rows, singular_ones
from nvcre.report.model import CategoryReport, Report

_MARK = {"Succeeded": "✅", "Failed": "❌", "Running": "⏳", "Pending": "⏸"}


def _cell(text: object) -> str:
    return str(text if text is not None else "").replace("|", "\\|").replace("\n", " ")


def render_markdown(report: Report) -> str:
    out = [f"# {report.kind} `{report.name}`: **{report.result}**", ""]
    out += [
        "| | |",
        "|---|---|",
        f"| Namespace | `{report.namespace}` |",
        f"| Platform | {report.platform} |",
        f"| GPU | {report.gpu} |",
        f"| Nodes | {report.total_nodes} |",
        f"| Categories passed | {report.categories_passed}/{report.categories_total} |",
        f"| Failed nodes | {len(report.failed_nodes) or 'none'} |",
    ]
    if report.env:
        out.append(f"| Env (names) | {_cell(', '.join(report.env))} |")
    out.append("")
    if report.failed_node_details:
        out += ["## Failed nodes", "", "| Node | Reason | Category | Message |", "|---|---|---|---|"]
        for n in report.failed_node_details:
            out.append(f"| `{n.name}` | {n.reason} | {n.category} | {_cell(n.message)} |")
        out.append("")
    if report.exclusions:
        out += ["## Excluded nodes", "", "| Node | Reason |", "|---|---|"]
        out += [f"| `{e.name}` | {_cell(e.why)} |" for e in report.exclusions]
        out.append("")
    out += ["## Categories", ""]
    for c in report.categories:
        out += _category(c)
    return "\n".join(out).rstrip() + "\n"


def _category(c: CategoryReport) -> list[str]:
    out = [f"### {_MARK.get(c.status, '')} {c.key}: {c.status}", ""]
    facts = []
    for label, value in (
        ("Reason", singular_ones(with_units(c.failure_reason)) if c.failure_reason else None),
        ("Blocked", c.status_detail),
        ("Isolation", c.isolation),
        ("Runtime", c.runtime),
        ("Scale", c.test_scale),
        ("Placement", c.placement),
        ("Nodes/Job", c.nodes_per_job),
        ("Jobs", c.jobs),
        ("MNNVL", c.mnnvl),
        ("Transport", ", ".join(c.transport) or None),
        ("Env (names)", ", ".join(c.env) or None),
    ):
        if value not in (None, ""):
            facts.append(f"- **{label}:** {_cell(value)}")
    out += facts + [""]
    if c.bandwidth:
        out += ["| Size | AlgBW | BusBW | Samples | |", "|---:|---:|---:|---:|---|"]
        for r in headline_rows(c.bandwidth):
            out.append(f"| {r.size} | {r.alg_bw} | {r.bus_bw} | {r.samples} | {'LOW' if r.low else ''} |")
        out.append("")
    if c.failed_groups:
        out += ["**Failed groups**", ""]
        for fg in c.failed_groups:
            out.append(f"- `{fg.name}` ({count(fg.node_count, 'node')}): {_cell(singular_ones(with_units(fg.reason)))}")
            if fg.failure_log and fg.failure_log.tail:
                log = fg.failure_log
                out += ["", f"  Log of `{log.pod_name}` on `{log.node_name}` (exit {log.exit_code}):", "", "  ```"]
                out += [f"  {line}" for line in log.tail.splitlines()[-20:]]
                out += ["  ```"]
        out.append("")
    if c.training:
        out += ["| Group | Nodes | Goodput | TFLOPs/GPU | Step time |", "|---|---:|---:|---:|---:|"]
        out += [f"| {t.name} | {t.node_count} | {t.goodput or ''} | {t.tflops or ''} | {t.step_time or ''} |" for t in c.training]
        out.append("")
    for step in c.next_steps:
        out += [f"> **Next step:** {step}", ""]
    return out
