"""One category of a run, projected from its Workflow and Jobs: status, the shape of
the run, groups, failures, training metrics, diagnosis and runtime.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from nvcre.words import count
from nvcre.catalog.resolve import canonical_category
from nvcre.measure.thresholds import threshold_minimum
from nvcre.report.failures import (
    failed_node,
    distinct_failed,
    group_of_job,
    collect_failed_groups,
    next_step_hints,
    to_failure_log,
)
from nvcre.report.evidence import attach_evidence, threshold_sources
from nvcre.report.format import human_duration, to_float
from nvcre.report.groups import group_result, group_jobs_without_status, aggregate_bandwidth
from nvcre.report.model import CategoryReport, Diagnosis, GroupResult, TrainingResult
from nvcre.report.sources import (
    LABEL_WORKFLOW,
    LABEL_CATEGORY,
    LABEL_WORKLOAD_RUN,
    ANNOTATION_TEST_SCALE,
    true_condition,
    parse_time,
    env_names,
    workload_env,
    phase_of,
    orchestration_status,
    groups_status,
)
from nvcre.objpath import dig


@dataclass
class CategoryPlan:
    domain: str
    variant: str
    status: str | None  # from the parent's categoryStatuses
    options: dict
    workflow: dict | None
    parent_failed_nodes: list[dict]
    recorded: dict = field(default_factory=dict)  # the parent's categoryStatuses entry


def certification_plans(root: dict, workflows: list[dict]) -> list[CategoryPlan]:
    spec = root.get("spec") or {}
    statuses = dig(root.get("status"), "categoryStatuses") or []
    by_name = {dig(w.get("metadata"), "name"): w for w in workflows}
    plans = []
    for index, cat in enumerate(spec.get("categories") or []):
        canon = canonical_category(cat)
        domain, variant = canon.get("domain", ""), canon.get("variant", "")
        cstatus = category_status_for(statuses, index, domain, variant)
        ref = dig(cstatus, "workflowRef") or {}
        wf = by_name.get(ref.get("name")) or workflow_by_labels(workflows, domain, variant)
        plans.append(
            CategoryPlan(
                domain=domain,
                variant=variant,
                status=dig(cstatus, "status"),
                options=cat.get("options") or {},
                workflow=wf,
                parent_failed_nodes=dig(cstatus, "failedNodes") or [],
                recorded=cstatus or {},
            )
        )
    return plans


def category_status_for(statuses: list[dict], index: int, domain: str, variant: str) -> dict | None:
    for s in statuses:
        if s.get("domain") == domain and s.get("variant") == variant:
            return s
    return statuses[index] if index < len(statuses) else None


def workflow_by_labels(workflows: list[dict], domain: str, variant: str) -> dict | None:
    for wf in workflows:
        labels = dig(wf.get("metadata"), "labels") or {}
        if labels.get(LABEL_CATEGORY) in (f"{domain}.{variant}", f"{domain}-{variant}", f"{domain}/{variant}"):
            return wf
        if labels.get("nvcre.nvidia.com/domain") == domain and labels.get("nvcre.nvidia.com/variant") == variant:
            return wf
    return None


def workloadrun_plan(root: dict, workflows: list[dict]) -> CategoryPlan:
    spec = root.get("spec") or {}
    status = root.get("status") or {}
    ref = dig(status.get("workflowRef"), "name")
    wf = next((w for w in workflows if dig(w.get("metadata"), "name") == ref), workflows[0] if workflows else None)
    orch = spec.get("orchestration") or {}
    options = {"testScale": orch.get("testScale"), "thresholds": spec.get("thresholds") or {}, "env": spec.get("env")}
    if spec.get("enableMNNVL") is not None:
        options["enableMNNVL"] = spec["enableMNNVL"]
    return CategoryPlan(
        domain="workloadrun",
        variant=(dig(root.get("metadata"), "name") or ""),
        status=phase_of(status.get("conditions") or []),
        options=options,
        workflow=wf,
        parent_failed_nodes=status.get("failedNodes") or [],
    )


def option(plan: CategoryPlan, spec: dict, key: str) -> Any:
    """Per-category option, else the spec-level default (the reference's merge rule)."""
    value = plan.options.get(key)
    if value not in (None, "", [], {}):
        return value
    return spec.get(key)


def jobs_of(wf: dict | None, jobs: list[dict]) -> list[dict]:
    if not wf:
        return []
    wmeta = wf.get("metadata") or {}
    name, uid = wmeta.get("name"), wmeta.get("uid")
    refs = {(dig(g.get("jobRef"), "name")) for g in groups_status(wf)} - {None}
    out = []
    for job in jobs:
        jmeta = job.get("metadata") or {}
        owners = jmeta.get("ownerReferences") or []
        if (
            dig(jmeta.get("labels"), LABEL_WORKFLOW) == name
            or any(o.get("kind") == "Workflow" and (o.get("name") == name or (uid and o.get("uid") == uid)) for o in owners)
            or jmeta.get("name") in refs
        ):
            out.append(job)
    return out


def category_report(
    plan: CategoryPlan,
    spec: dict,
    all_jobs: list[dict],
    bms: list[dict],
    gms: list[dict],
    node_domains: dict[str, str],
    now: datetime | None,
    namespace: str,
) -> CategoryReport:
    wf = plan.workflow
    wstatus = dig(wf, "status") or {}
    wconds = wstatus.get("conditions") or []
    orch = orchestration_status(wf)
    jobs = jobs_of(wf, all_jobs)
    jobs_by_name = {dig(j.get("metadata"), "name"): j for j in jobs}
    key = f"{plan.domain}/{plan.variant}"

    status = category_phase(plan.status, wconds)
    failed = true_condition(wconds, "Failed")
    if failed is None and plan.recorded.get("message") and status == "Failed":
        failed = {"message": plan.recorded["message"]}
    blocked = true_condition(wconds, "InProgress")
    status_detail = plan.recorded.get("statusDetail") if status == "Running" else None
    if status_detail is None and status == "Running" and blocked and blocked.get("reason") in ("JobSchedulingBlocked", "WorkloadSchedulingBlocked"):
        status_detail = blocked.get("message") or None
    if status == "Running" and status_detail is None:
        status_detail = job_blocked_detail(jobs)

    thresholds = dict(option(plan, spec, "thresholds") or {})
    wf_thresholds = dig(wf, "spec", "validation", "performance") or {}
    for k, v in (dig(wf_thresholds.get("thresholds"), "thresholds") or {}).items():
        thresholds.setdefault(k, v)
    bus_min = threshold_minimum(thresholds.get("busBandwidthGBps"))

    placement = dig(wf, "spec", "orchestration", "placement") or orch.get("placement")
    test_scale = (
        dig(wf, "metadata", "annotations", ANNOTATION_TEST_SCALE)
        or plan.recorded.get("testScale")
        or option(plan, spec, "testScale")
        or orch.get("testScale")
        or (None if placement == "Unpinned" else "full-scale")
    )

    groups = [
        group_result(g, jobs_by_name, jobs, bms, node_domains, bus_min) for g in groups_status(wf)
    ]
    group_jobs_without_status(groups, jobs, bms, node_domains, bus_min)

    cleared = isolation_cleared(orch.get("isolation"))
    failed_nodes = distinct_failed(
        [failed_node(n, key, None) for n in plan.parent_failed_nodes]
        + [failed_node(n, key, None) for n in wstatus.get("failedNodes") or []]
        + [
            failed_node(n, key, group_of_job(j, groups))
            for j in jobs
            for n in dig(j.get("status"), "failedNodes") or []
            # a Job blames its whole group; an isolation that convicted some of them cleared the rest
            if not (n.get("reason") == "ThresholdViolation" and n.get("name") in cleared)
        ]
    )
    failed_groups = collect_failed_groups(groups, jobs_by_name, wstatus, failed_nodes)
    for n in failed_nodes:  # a node's message is left out when it repeats its group's
        if not n.message:
            n.message = next((fg.reason for fg in failed_groups if n.name in fg.nodes), "")

    iterations = dig(wf, "spec", "orchestration", "iterations")
    runtime_s = runtime_of(wf, groups, jobs, now if status == "Running" else None, plan.recorded)
    total_nodes = orch.get("totalNodes")
    exercised = len(orch.get("exercisedNodes") or []) or len({n for g in groups for n in g.nodes}) or None

    category = CategoryReport(
        domain=plan.domain,
        variant=plan.variant,
        status=status,
        failure_reason=(failed.get("message") or failed.get("reason")) if (failed and status == "Failed") else None,
        status_detail=status_detail,
        health_check=health_check_problem(jobs),
        runtime=human_duration(runtime_s) if runtime_s is not None else None,
        runtime_seconds=runtime_s,
        test_scale=None if placement == "Unpinned" else test_scale,
        nodes_per_job=orch.get("nodesPerJob") or plan.recorded.get("nodesPerJob") or option(plan, spec, "nodesPerJob"),
        jobs=(orch.get("totalGroups") or len(groups) or None) if wf else plan.recorded.get("jobs"),
        groups_done=sum(1 for g in groups if g.phase in ("Succeeded", "Failed")),
        groups_total=orch.get("totalGroups") or len(groups),
        iterations=iterations if iterations and iterations > 1 else None,
        placement=placement_text(placement, exercised, total_nodes),
        target_nodes=total_nodes,
        exercised_nodes=exercised,
        mnnvl=mnnvl_label(plan, spec, orch),
        thresholds=thresholds,
        threshold_sources=threshold_sources(plan.options, spec, thresholds),
        bus_bw_minimum_gbps=bus_min,
        bandwidth=aggregate_bandwidth(groups, bus_min),
        transport=sorted({t for g in groups for t in g.transport}),
        groups=groups,
        failed_groups=failed_groups,
        failed_nodes=failed_nodes,
        training=training_results(groups, jobs_by_name, gms),
        pod_logs=[to_failure_log(x) for j in jobs if dig(j.get("metadata"), "labels", LABEL_WORKLOAD_RUN)
                  for x in dig(j.get("status"), "podLogs") or []],
        env=env_names(
            list(spec.get("env") or [])
            + list(plan.options.get("env") or [])
            + workload_env(dig(wf, "spec", "jobTemplate"))
        ),
    )
    from nvcre.report.judging import add_judging

    add_judging(category, wf, jobs, plan.recorded)
    category.diagnose = diagnosis_of(orch.get("diagnose"), groups)
    category.isolation = isolation_text(orch.get("isolation"))
    category.next_steps = next_step_hints(category, namespace)
    attach_evidence(category, namespace, {
        dig(j.get("metadata"), "name"): [to_failure_log(x) for x in dig(j.get("status"), "podLogs") or []] for j in jobs})
    return category


def isolation_cleared(raw: Any) -> set[str]:
    """Nodes a decided isolation found healthy: their group's blame no longer holds."""
    if not isinstance(raw, dict) or raw.get("phase") != "Succeeded":
        return set()
    return set(raw.get("nodes") or []) - set(raw.get("convicted") or [])


def isolation_text(raw: Any) -> str | None:
    """One line on the isolation of a threshold miss: running, or what it found."""
    if not isinstance(raw, dict) or not raw.get("workflow"):
        return None
    if raw.get("phase") == "Running":
        return (f"narrowing {count(len(raw.get('nodes') or []), 'node')} of {count(len(raw.get('groups') or []), 'failed group')} "
                f"down (Workflow {raw['workflow']})")
    return f"{raw.get('message') or raw.get('phase')} (Workflow {raw['workflow']})"


def diagnosis_of(raw: Any, groups: list[GroupResult]) -> Diagnosis | None:
    """The diagnose status, plus the best and worst final group bandwidths as evidence."""
    if not isinstance(raw, dict) or not raw:
        return None
    final = [g for g in groups if g.bus_bw_gbps is not None and not g.provisional]
    best = max(final, key=lambda g: g.bus_bw_gbps, default=None)
    worst = min(final, key=lambda g: g.bus_bw_gbps, default=None)
    notes = raw.get("notes")
    return Diagnosis(
        stage=raw.get("stage"),
        rounds=raw.get("round"),
        healthy_count=len(raw.get("healthyNodes") or []),
        suspect_count=len(raw.get("suspectNodes") or []),
        suspect_nodes=sorted(raw.get("suspectNodes") or []),
        suspect_links=[list(pair) for pair in raw.get("suspectLinks") or []],
        suspect_domains=list(raw.get("suspectDomains") or []),
        max_bw=best.bus_bw if best else None,
        max_bw_group=(best.domain or best.name) if best else None,
        min_bw=worst.bus_bw if worst else None,
        min_bw_group=(worst.domain or worst.name) if worst else None,
        notes=[str(n) for n in notes] if isinstance(notes, list) else ([notes] if isinstance(notes, str) else []),
    )


def placement_text(placement: str | None, exercised: int | None, total: int | None) -> str | None:
    """Only Unpinned gets a Placement line: how much of the target the one job used."""
    if placement != "Unpinned":
        return None
    if exercised and total:
        return f"Unpinned ({exercised} of {total} target nodes exercised)"
    if total:
        return f"Unpinned (the scheduler picks among {total} target nodes)"
    return "Unpinned"


def category_phase(parent: str | None, wconds: list[dict]) -> str:
    raw = parent or phase_of(wconds)
    if raw == "Succeeded":
        return "Succeeded"
    if raw == "Failed":
        return "Failed"
    if raw in ("InProgress", "Running"):
        return "Running"
    return "Pending"


def job_blocked_detail(jobs: list[dict]) -> str | None:
    for job in jobs:
        c = true_condition(dig(job.get("status"), "conditions") or [], "InProgress")
        if c and c.get("reason") == "WorkloadSchedulingBlocked":
            return c.get("message") or None
    return None


def health_check_problem(jobs: list[dict]) -> str | None:
    """A node health detector that could not be evaluated (NodeHealthMonitorError on a Job)."""
    for job in jobs:
        c = true_condition(dig(job, "status", "conditions") or [], "NodeHealthMonitorError")
        if c:
            return c.get("message") or c.get("reason") or None
    return None


def mnnvl_label(plan: CategoryPlan, spec: dict, orch: dict) -> str | None:
    value = plan.options.get("enableMNNVL")
    if value is None:
        value = spec.get("enableMNNVL")
    if value is None:
        value = orch.get("enableMNNVL", orch.get("mnnvl"))
    if value is None:
        return None
    if isinstance(value, str):
        return value
    return "Enabled" if value else "Disabled"


def training_results(groups: list[GroupResult], jobs_by_name: dict, gms: list[dict]) -> list[TrainingResult]:
    out = []
    for g in groups:
        st = goodput_status(jobs_by_name.get(g.job_name) if g.job_name else None, g.job_name, gms)
        if not st:
            continue
        ratio = to_float(st.get("result", st.get("goodputRatio")))
        ratio = ratio if ratio is not None and ratio > 0 else None  # 0 means not measured
        tflops = to_float(st.get("avgTFLOPSPerGPU", st.get("avgTFLOPsPerGPU")))
        step = to_float(st.get("avgStepTimeSec"))
        if ratio is None and tflops is None and step is None:
            continue
        out.append(
            TrainingResult(
                name=g.name,
                node_count=len(g.nodes),
                goodput=f"{ratio:.2f} ({ratio * 100:.0f}%)" if ratio is not None else None,
                tflops=f"{tflops:.1f}" if tflops is not None else None,
                step_time=f"{step:.2f}s" if step is not None else None,
            )
        )
    return out


def goodput_status(job: dict | None, job_name: str | None, gms: list[dict]) -> dict | None:
    jstatus = dig(job, "status") or {}
    if isinstance(jstatus.get("goodput"), dict):
        return jstatus["goodput"]
    m = jstatus.get("measurements") or {}
    if any(m.get(k) is not None for k in ("goodputRatio", "avgTFLOPsPerGPU", "avgStepTimeSec")):
        return {"result": m.get("goodputRatio"), "avgTFLOPSPerGPU": m.get("avgTFLOPsPerGPU"), "avgStepTimeSec": m.get("avgStepTimeSec")}
    for gm in gms:
        if job_name and dig(gm.get("spec"), "jobRef", "name") == job_name:
            return gm.get("status") or None
    return None


def runtime_of(
    wf: dict | None, groups: list[GroupResult], jobs: list[dict], now: datetime | None, recorded: dict
) -> float | None:
    """Earliest group start to latest completion, across iterations (running: up to ``now``)."""
    starts, ends = [], []
    history = orchestration_status(wf).get("iterationHistory") or []
    entries = [g for it in history for g in it.get("groups") or []] + groups_status(wf)
    for g in entries:
        if (s := parse_time(g.get("startTime"))) is not None:
            starts.append(s)
        if (e := parse_time(g.get("completionTime"))) is not None:
            ends.append(e)
    if not starts:
        for j in jobs:
            st = j.get("status") or {}
            if (s := parse_time(st.get("workloadStartTime") or st.get("startTime"))) is not None:
                starts.append(s)
            if (e := parse_time(st.get("completionTime"))) is not None:
                ends.append(e)
    if not starts and (s := parse_time(recorded.get("startTime"))) is not None:
        starts.append(s)
        if (e := parse_time(recorded.get("completionTime"))) is not None:
            ends.append(e)
    if not starts:
        return None
    end = now if now is not None else (max(ends) if ends else None)
    if end is None:
        return None
    return max(0.0, (end - min(starts)).total_seconds())
