"""Failed nodes and failed groups of a category, and the next-step hints a person
reads beside them (advice, never a verdict).
"""

from __future__ import annotations

from typing import Any, Iterable

from nvcre.report.model import CategoryReport, FailedGroup, FailedNode, FailureLog, GroupResult
from nvcre.report.sources import BANDWIDTH_DOMAINS, plain, true_condition
from nvcre.objpath import dig


def failed_node(raw: Any, category: str, group: str | None) -> FailedNode:
    raw = plain(raw) if not isinstance(raw, str) else {"name": raw}
    return FailedNode(
        name=raw.get("name", ""),
        reason=raw.get("reason") or "WorkloadFailed",
        message=raw.get("message") or "",
        category=raw.get("category") or category,
        group=raw.get("group") or group,
    )


def distinct_failed(nodes: Iterable[FailedNode]) -> list[FailedNode]:
    """One entry per (node, reason, category); a message or group from any source fills a gap."""
    seen: dict[tuple, FailedNode] = {}
    for n in nodes:
        if not n.name:
            continue
        k = (n.name, n.reason, n.category)
        if k not in seen:
            seen[k] = n.model_copy()
            continue
        kept = seen[k]
        kept.message = kept.message or n.message
        kept.group = kept.group or n.group
    return sorted(seen.values(), key=lambda n: (n.name, n.reason, n.category, n.message))


def group_of_job(job: dict, groups: list[GroupResult]) -> str | None:
    name = dig(job.get("metadata"), "name")
    return next((g.name for g in groups if g.job_name == name), None)


def collect_failed_groups(
    groups: list[GroupResult], jobs_by_name: dict, wstatus: dict, failed_nodes: list[FailedNode]
) -> list[FailedGroup]:
    recorded = {fg.get("name"): fg for fg in wstatus.get("failedGroups") or []}
    out = []
    for g in groups:
        if g.phase != "Failed" and g.name not in recorded:
            continue
        job = jobs_by_name.get(g.job_name) if g.job_name else None
        rec = recorded.get(g.name) or {}
        reason = rec.get("message") or job_failure_reason(job) or rec.get("reason") or fallback_reason(g, failed_nodes)
        # the Job keeps the whole excerpt; the Workflow's copy is cut to 512 characters
        log = dig(job, "status", "failureLog") or rec.get("failureLog")
        out.append(
            FailedGroup(
                name=g.name,
                node_count=len(g.nodes) or int(rec.get("nodeCount") or 0),
                nodes=g.nodes or list(rec.get("nodes") or []),
                reason=reason,
                failure_log=to_failure_log(log) if log else None,
            )
        )
    known = {g.name for g in groups}
    for name, rec in recorded.items():
        if name in known:
            continue
        log = rec.get("failureLog")
        out.append(
            FailedGroup(
                name=name or "",
                node_count=int(rec.get("nodeCount") or len(rec.get("nodes") or [])),
                nodes=list(rec.get("nodes") or []),
                reason=rec.get("message") or rec.get("reason") or "",
                failure_log=to_failure_log(log) if log else None,
            )
        )
    return out


def job_failure_reason(job: dict | None) -> str | None:
    conds = dig(job, "status", "conditions") or []
    for ctype in ("Failed", "HardwareFailed", "ValidationFailed"):
        c = true_condition(conds, ctype)
        if c and (c.get("message") or c.get("reason")):
            return c.get("message") or c.get("reason")
    return None


def fallback_reason(group: GroupResult, failed_nodes: list[FailedNode]) -> str:
    mine = [n for n in failed_nodes if n.name in group.nodes or n.group == group.name]
    mine.sort(key=lambda n: n.reason != "ThresholdViolation")
    return mine[0].message or mine[0].reason if mine else ""


def to_failure_log(raw: dict) -> FailureLog:
    exit_code = raw.get("exitCode")
    return FailureLog(
        pod_name=raw.get("podName", ""),
        node_name=raw.get("nodeName", ""),
        exit_code=int(exit_code) if exit_code is not None else None,
        reason=raw.get("reason"),
        tail=raw.get("tail"),
    )


def next_step_hints(category: CategoryReport, namespace: str) -> list[str]:
    """Hints for the person reading the report: what to run next, never a verdict."""
    steps: list[str] = []
    measures_bandwidth = category.domain in BANDWIDTH_DOMAINS or any(g.bandwidth for g in category.groups)
    if category.status == "Failed" and measures_bandwidth and category.test_scale != "diagnose":
        def blamed(fg: FailedGroup) -> set[str]:
            return {n.name for n in category.failed_nodes if n.name in fg.nodes or n.group == fg.name}

        unattributed = [
            fg
            for fg in category.failed_groups
            if fg.node_count >= 2
            and (
                not blamed(fg)  # nobody named
                or blamed(fg) >= set(fg.nodes)  # the whole group named: no node singled out
                or not any(g.name == fg.name and g.bandwidth for g in category.groups)
            )
        ]
        if unattributed or (not category.failed_nodes and (category.nodes_per_job or 0) >= 2):
            steps.append(
                "rerun this category with testScale: diagnose; it bisects the failing group to tell a "
                "node-local fault from one on the path between nodes"
            )
    hw = sorted({n.name for n in category.failed_nodes if n.reason == "HardwareFailureDetected"})
    if hw:
        steps.append(f"inspect the node's conditions and GPU health: kubectl describe node {hw[0]}")
    if category.status_detail:
        steps.append(
            f"pods cannot be scheduled; see kubectl get pods -n {namespace} -o wide and the nodes' free GPUs "
            "(the run's clock is paused while it is blocked)"
        )
    return steps
