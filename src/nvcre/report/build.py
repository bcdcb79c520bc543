"""Build the report from statuses: a pure function, no cluster access.

Input is what the API server holds for one run, as plain dicts (camelCase, the shape
``kubectl get -o json`` prints) or nvcre API models: the Certification or WorkloadRun,
its Workflows and Jobs, and optionally its measurements and the target Nodes (for the
rack/clique layout of the node map). ``nvcre.report.collect`` gathers them through
``nvcre.kube``; tests pass them in directly.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from nvcre.discovery.racks import rack_label
from nvcre.report.category import certification_plans, workloadrun_plan, category_report
from nvcre.report.failures import distinct_failed
from nvcre.report.model import CategoryReport, Exclusion, NodeResult, Report
from nvcre.report.sources import (
    plain,
    true_condition,
    to_condition,
    env_names,
    orchestration_status,
)
from nvcre.objpath import dig


@dataclass
class RunObjects:
    """Everything the API server holds about one run, as read by ``nvcre.report.collect``."""

    root: Any  # Certification or WorkloadRun
    workflows: list[Any] = field(default_factory=list)
    jobs: list[Any] = field(default_factory=list)
    bandwidth_measurements: list[Any] = field(default_factory=list)
    goodput_measurements: list[Any] = field(default_factory=list)
    nodes: list[Any] = field(default_factory=list)


def build_report(objects: RunObjects, now: datetime | None = None) -> Report:
    """Project one run's statuses onto the report model.

    ``now`` closes the runtime of categories that are still running; without it a
    running category shows the time its groups have finished so far.
    """
    root = plain(objects.root)
    workflows = [plain(w) for w in objects.workflows]
    jobs = [plain(j) for j in objects.jobs]
    bms = [plain(b) for b in objects.bandwidth_measurements]
    gms = [plain(g) for g in objects.goodput_measurements]
    nodes = [plain(n) for n in objects.nodes]

    meta = root.get("metadata") or {}
    spec = root.get("spec") or {}
    status = root.get("status") or {}
    kind = root.get("kind") or ("WorkloadRun" if "framework" in spec else "Certification")
    node_domains = node_domain_map(nodes)

    if kind == "WorkloadRun":
        plans = [workloadrun_plan(root, workflows)]
    else:
        plans = certification_plans(root, workflows)

    categories = [
        category_report(plan, spec, jobs, bms, gms, node_domains, now, meta.get("namespace") or "default") for plan in plans
    ]

    exclusions = collect_exclusions(status, workflows)
    for ex in exclusions:  # a node excluded by one category may still have run in another
        ex.ran_in = [c.key for c in categories if any(ex.name in g.nodes for g in c.groups)]
    conditions = [to_condition(c) for c in status.get("conditions") or []]
    result = overall_result(status.get("conditions") or [], categories, exclusions)

    details = distinct_failed(n for c in categories for n in c.failed_nodes)
    platform, gpu = platform_gpu(status, workflows)
    total_nodes = count_target_nodes(status, workflows, categories)

    report = Report(
        kind=kind,
        name=meta.get("name", ""),
        namespace=meta.get("namespace") or "default",
        platform=platform,
        gpu=gpu,
        total_nodes=total_nodes,
        excluded_nodes=[e.name for e in exclusions],
        exclusion_reason=exclusion_text(status, workflows, exclusions),
        exclusions=exclusions,
        categories=categories,
        categories_passed=sum(1 for c in categories if c.passed),
        categories_not_judged=sum(1 for c in categories if c.not_judged),
        categories_total=len(categories),
        failed_nodes=sorted({d.name for d in details}),
        failed_node_details=details,
        env=env_names(spec.get("env")),
        conditions=conditions,
        result=result,
    )
    report.node_results = node_result_rows(report, node_domains)
    hours = [c.gpu_hours for c in categories if c.gpu_hours is not None]
    report.gpu_hours = round(sum(hours), 3) if hours else None
    return report


def collect_exclusions(status: dict, workflows: list[dict]) -> list[Exclusion]:
    found: dict[str, Exclusion] = {}
    sources = [(status.get("excludedNodes") or [], status.get("exclusionReason") or "")]
    for wf in workflows:
        orch = orchestration_status(wf)
        sources.append((orch.get("excludedNodes") or [], orch.get("exclusionReason") or ""))
    for items, reason in sources:
        for item in items:
            if isinstance(item, str):
                found.setdefault(item, Exclusion(name=item, reason=reason))
            elif isinstance(item, dict) and item.get("name"):
                found.setdefault(item["name"], Exclusion(name=item["name"], reason=item.get("reason") or reason,
                                                         message=item.get("message") or ""))
    return sorted(found.values(), key=lambda e: e.name)


def exclusion_text(status: dict, workflows: list[dict], exclusions: list[Exclusion]) -> str | None:
    if not exclusions:
        return None
    for text in [status.get("exclusionReason")] + [orchestration_status(wf).get("exclusionReason") for wf in workflows]:
        if text:
            return text
    reasons = sorted({e.reason for e in exclusions if e.reason})
    return "; ".join(reasons) or None


def overall_result(conditions: list[dict], categories: list[CategoryReport], exclusions: list[Exclusion]) -> str:
    if true_condition(conditions, "Failed"):
        return "FAILED"
    if true_condition(conditions, "Succeeded"):
        if any(c.judged is False for c in categories):
            return "NOT JUDGED"
        return "INCOMPLETE" if exclusions else "PASSED"
    return "RUNNING"


def platform_gpu(status: dict, workflows: list[dict]) -> tuple[str, str]:
    platform = status.get("platform") or status.get("detectedPlatform")
    gpu = status.get("gpuArchitecture") or status.get("detectedGPUArchitecture") or status.get("gpu")
    for wf in workflows:
        orch = orchestration_status(wf)
        platform = platform or orch.get("detectedPlatform")
        gpu = gpu or orch.get("detectedGPUArchitecture")
    return platform or "unknown", gpu or "unknown"


def count_target_nodes(status: dict, workflows: list[dict], categories: list[CategoryReport]) -> int:
    for key in ("totalNodes", "targetNodes", "targetNodeCount"):
        value = status.get(key)
        if isinstance(value, int):
            return value
        if isinstance(value, list):
            return len(value)
    counts = [orchestration_status(wf).get("totalNodes") or 0 for wf in workflows]
    if counts and max(counts):
        return max(counts)
    return len({n for c in categories for g in c.groups for n in g.nodes})


def node_domain_map(nodes: list[dict]) -> dict[str, str]:
    """node -> its rack, by the one label that tells this fleet's racks apart."""
    labels = {(dig(n.get("metadata"), "name") or ""): dig(n.get("metadata"), "labels") or {} for n in nodes}
    key = rack_label(labels, labels)
    return {name: lab[key] for name, lab in labels.items() if key and lab.get(key)}


def node_result_rows(report: Report, node_domains: dict[str, str]) -> list[NodeResult]:
    results: dict[str, NodeResult] = {}

    def entry(name: str) -> NodeResult:
        if name not in results:
            results[name] = NodeResult(name=name, domain=node_domains.get(name))
        return results[name]

    for cat in report.categories:
        for g in cat.groups:
            for n in g.nodes:
                r = entry(n)
                r.domain = r.domain or g.domain
                if g.phase == "Succeeded" and r.status == "Untested":
                    r.status = "Passed"
    for fn in report.failed_node_details:
        r = entry(fn.name)
        r.status = "Failed"
        label = f"{fn.category}: {fn.reason}"
        if label not in r.reasons:
            r.reasons.append(label)
    for ex in report.exclusions:
        r = entry(ex.name)
        if r.status == "Untested":  # a node that ran somewhere shows how it did there
            r.status = "Excluded"
        label = f"excluded: {ex.reason}" if ex.reason else "excluded"
        if label not in r.reasons:
            r.reasons.append(label)
    return sorted(results.values(), key=lambda r: (r.domain or "~", r.name))
