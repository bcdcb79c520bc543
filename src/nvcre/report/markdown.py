"""Markdown for a ticket or a pull request: the verdict first, then the evidence."""

from __future__ import annotations

from nvcre.report.evidence import with_units
from nvcre.report.format import count, headline_rows, singular_ones
from nvcre.report.model import CategoryReport, Report

_MARK = {"Succeeded": "✅", "NOT JUDGED": "⚠️", "Failed": "❌", "Running": "⏳", "Pending": "⏸"}


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
        f"| Categories | {report.categories_text} |",
        f"| Failed nodes | {len(report.failed_nodes) or 'none'} |",
    ]
    if report.gpu_hours is not None:
        out.append(f"| GPU-hours | {report.gpu_hours:.2f} |")
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
    out = [f"### {_MARK.get(c.verdict, '')} {c.key}: {c.verdict}", ""]
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
    out += _judging(c)
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


def _judging(c: CategoryReport) -> list[str]:
    """What judged the category (the derived bar and its source) or that nothing did, then warnings."""
    out: list[str] = []
    if c.judged is False:
        out += [f"> **NOT JUDGED:** {_cell((c.judging or 'no thresholds and no stage').removeprefix('not judged: '))}", ""]
    elif c.stage or c.derived_thresholds:
        out.append(f"- **Stage:** {_cell(c.stage or 'none')}")
    out += [f"- **Judged by:** {_cell(text)}" for text in c.derived_thresholds]
    if c.inferred:
        out.append(f"- **Inferred from the nodes:** {_cell(', '.join(c.inferred))}")
    if c.gpu_hours is not None:
        out.append(f"- **GPU-hours:** {c.gpu_hours:.2f}")
    if out and out[-1]:
        out.append("")
    if c.outliers:
        out += ["**PerformanceOutlier warnings**", ""]
        out += [f"- `{o.group}`: {_cell(o.message or f'{o.value:g} below {o.fraction:g} x median {o.median:g}')}"
                for o in c.outliers]
        out.append("")
    elif c.outlier_check:
        out += [f"- **Outliers:** {_cell(c.outlier_check)}", ""]
    if c.regressions:
        out += ["**Regression warnings**", "", "| Node | Now | Last pass | Run | Message |", "|---|---:|---:|---|---|"]
        out += [f"| `{r.node}` | {r.value:g} | {r.previous:g} | {_cell(r.previous_run)} | {_cell(r.message)} |"
                for r in c.regressions]
        out.append("")
    return out
