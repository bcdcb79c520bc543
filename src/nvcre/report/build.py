"""Build the report from statuses: a pure function, no cluster access.

Input is what the API server holds for one run, as plain dicts (camelCase, the shape
``kubectl get -o json`` prints) or nvcre API models: the Certification or WorkloadRun,
its Workflows and Jobs, and optionally its measurements and the target Nodes (for the
rack/clique layout of the node map). ``nvcre.report.collect`` gathers them through
``nvcre.kube``; tests pass them in directly.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Iterable

from nvcre.report.format import gbps_text, human_duration, human_size, to_float
from nvcre.report.model import (
    BandwidthRow,
    CategoryReport,
    Condition,
    Diagnosis,
    Exclusion,
    FailedGroup,
    FailedNode,
    FailureLog,
    GroupResult,
    NodeResult,
    Report,
    TrainingResult,
)
from nvcre.measure.thresholds import threshold_minimum

LABEL_WORKFLOW = "nvcre.nvidia.com/workflow"
LABEL_GROUP = "nvcre.nvidia.com/group"
LABEL_CERTIFICATION = "nvcre.nvidia.com/certification"
LABEL_CATEGORY = "nvcre.nvidia.com/category"
ANNOTATION_TEST_SCALE = "nvcre.nvidia.com/requested-test-scale"
ANNOTATION_GROUP_NODES = "nvcre.nvidia.com/group-nodes"
# Node labels that place a node in a rack or NVLink clique, most specific first.
DOMAIN_LABELS = (
    "nvidia.com/gpu.clique",
    "topology.nks.nscale.com/accelerator-domain",
    "topology.k8s.aws/network-node-layer-1",
    "cloud.google.com/gce-topology-block",
    "kubernetes.azure.com/ppg",
    "topology.kubernetes.io/rack",
)
BANDWIDTH_DOMAINS = {"communication"}


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
    root = _plain(objects.root)
    workflows = [_plain(w) for w in objects.workflows]
    jobs = [_plain(j) for j in objects.jobs]
    bms = [_plain(b) for b in objects.bandwidth_measurements]
    gms = [_plain(g) for g in objects.goodput_measurements]
    nodes = [_plain(n) for n in objects.nodes]

    meta = root.get("metadata") or {}
    spec = root.get("spec") or {}
    status = root.get("status") or {}
    kind = root.get("kind") or ("WorkloadRun" if "framework" in spec else "Certification")
    node_domains = _node_domains(nodes)

    if kind == "WorkloadRun":
        plans = [_workloadrun_plan(root, workflows)]
    else:
        plans = _certification_plans(root, workflows)

    categories = [
        _category(plan, spec, jobs, bms, gms, node_domains, now, meta.get("namespace") or "default") for plan in plans
    ]

    exclusions = _exclusions(status, workflows)
    conditions = [_condition(c) for c in status.get("conditions") or []]
    result = _result(status.get("conditions") or [], categories, exclusions)

    details = _distinct_failed(n for c in categories for n in c.failed_nodes)
    platform, gpu = _platform_gpu(status, workflows)
    total_nodes = _total_nodes(status, workflows, categories)

    report = Report(
        kind=kind,
        name=meta.get("name", ""),
        namespace=meta.get("namespace") or "default",
        platform=platform,
        gpu=gpu,
        total_nodes=total_nodes,
        excluded_nodes=[e.name for e in exclusions],
        exclusion_reason=_exclusion_reason(status, workflows, exclusions),
        exclusions=exclusions,
        categories=categories,
        categories_passed=sum(1 for c in categories if c.passed),
        categories_total=len(categories),
        failed_nodes=sorted({d.name for d in details}),
        failed_node_details=details,
        env=_env_names(spec.get("env")),
        conditions=conditions,
        result=result,
    )
    report.node_results = _node_results(report, node_domains)
    return report


# ---------------------------------------------------------------- plumbing


def _plain(obj: Any) -> dict:
    """Accept an API model or a dict; return the dict the API server would hold."""
    if obj is None:
        return {}
    if isinstance(obj, dict):
        return obj
    dump = getattr(obj, "model_dump", None)
    if dump is not None:
        return dump(by_alias=True, exclude_none=True, mode="json")
    to_dict = getattr(obj, "to_dict", None)
    if to_dict is not None:
        return to_dict()
    raise TypeError(f"cannot read {type(obj).__name__} as a Kubernetes object")


def _cond(conditions: list[dict], ctype: str) -> dict | None:
    for c in conditions or []:
        if c.get("type") == ctype and str(c.get("status")) == "True":
            return c
    return None


def _condition(c: dict) -> Condition:
    return Condition(
        type=c.get("type", ""), status=str(c.get("status", "")), reason=c.get("reason") or "", message=c.get("message") or ""
    )


def _time(value: Any) -> datetime | None:
    if not value:
        return None
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=timezone.utc)
    try:
        parsed = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)


def _env_names(env: Any) -> list[str]:
    names: list[str] = []
    for item in env or []:
        name = item.get("name") if isinstance(item, dict) else getattr(item, "name", None)
        if name and name not in names:
            names.append(name)
    return names


def _workload_env(template: Any) -> list[dict]:
    """Every ``env`` entry of the rendered workload (containers, init containers, launcher):
    the variables the run really sets. Only their names reach the report."""
    found: list[dict] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "env" and isinstance(value, list):
                    found.extend(v for v in value if isinstance(v, dict) and v.get("name"))
                else:
                    walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(template)
    return found


# ---------------------------------------------------------------- categories


@dataclass
class _Plan:
    domain: str
    variant: str
    status: str | None  # from the parent's categoryStatuses
    options: dict
    workflow: dict | None
    parent_failed_nodes: list[dict]
    recorded: dict = field(default_factory=dict)  # the parent's categoryStatuses entry


def _certification_plans(root: dict, workflows: list[dict]) -> list[_Plan]:
    spec = root.get("spec") or {}
    statuses = (root.get("status") or {}).get("categoryStatuses") or []
    by_name = {(w.get("metadata") or {}).get("name"): w for w in workflows}
    plans = []
    for index, cat in enumerate(spec.get("categories") or []):
        domain, variant = cat.get("domain", ""), cat.get("variant", "")
        cstatus = _category_status_for(statuses, index, domain, variant)
        ref = (cstatus or {}).get("workflowRef") or {}
        wf = by_name.get(ref.get("name")) or _workflow_by_labels(workflows, domain, variant)
        plans.append(
            _Plan(
                domain=domain,
                variant=variant,
                status=(cstatus or {}).get("status"),
                options=cat.get("options") or {},
                workflow=wf,
                parent_failed_nodes=(cstatus or {}).get("failedNodes") or [],
                recorded=cstatus or {},
            )
        )
    return plans


def _category_status_for(statuses: list[dict], index: int, domain: str, variant: str) -> dict | None:
    for s in statuses:
        if s.get("domain") == domain and s.get("variant") == variant:
            return s
    return statuses[index] if index < len(statuses) else None


def _workflow_by_labels(workflows: list[dict], domain: str, variant: str) -> dict | None:
    for wf in workflows:
        labels = (wf.get("metadata") or {}).get("labels") or {}
        if labels.get(LABEL_CATEGORY) in (f"{domain}.{variant}", f"{domain}-{variant}", f"{domain}/{variant}"):
            return wf
        if labels.get("nvcre.nvidia.com/domain") == domain and labels.get("nvcre.nvidia.com/variant") == variant:
            return wf
    return None


def _workloadrun_plan(root: dict, workflows: list[dict]) -> _Plan:
    spec = root.get("spec") or {}
    status = root.get("status") or {}
    ref = (status.get("workflowRef") or {}).get("name")
    wf = next((w for w in workflows if (w.get("metadata") or {}).get("name") == ref), workflows[0] if workflows else None)
    orch = spec.get("orchestration") or {}
    options = {"testScale": orch.get("testScale"), "thresholds": spec.get("thresholds") or {}, "env": spec.get("env")}
    if spec.get("enableMNNVL") is not None:
        options["enableMNNVL"] = spec["enableMNNVL"]
    return _Plan(
        domain="workloadrun",
        variant=(root.get("metadata") or {}).get("name", ""),
        status=_phase_of(status.get("conditions") or []),
        options=options,
        workflow=wf,
        parent_failed_nodes=status.get("failedNodes") or [],
    )


def _phase_of(conditions: list[dict]) -> str | None:
    for ctype in ("Failed", "Succeeded", "InProgress"):
        if _cond(conditions, ctype):
            return ctype
    return None


def _option(plan: _Plan, spec: dict, key: str) -> Any:
    """Per-category option, else the spec-level default (the reference's merge rule)."""
    value = plan.options.get(key)
    if value not in (None, "", [], {}):
        return value
    return spec.get(key)


def _jobs_of(wf: dict | None, jobs: list[dict]) -> list[dict]:
    if not wf:
        return []
    wmeta = wf.get("metadata") or {}
    name, uid = wmeta.get("name"), wmeta.get("uid")
    refs = {((g.get("jobRef") or {}).get("name")) for g in _groups_status(wf)} - {None}
    out = []
    for job in jobs:
        jmeta = job.get("metadata") or {}
        owners = jmeta.get("ownerReferences") or []
        if (
            (jmeta.get("labels") or {}).get(LABEL_WORKFLOW) == name
            or any(o.get("kind") == "Workflow" and (o.get("name") == name or (uid and o.get("uid") == uid)) for o in owners)
            or jmeta.get("name") in refs
        ):
            out.append(job)
    return out


def _orch(wf: dict | None) -> dict:
    return ((wf or {}).get("status") or {}).get("orchestration") or {}


def _groups_status(wf: dict | None) -> list[dict]:
    return _orch(wf).get("groups") or []


def _category(
    plan: _Plan,
    spec: dict,
    all_jobs: list[dict],
    bms: list[dict],
    gms: list[dict],
    node_domains: dict[str, str],
    now: datetime | None,
    namespace: str,
) -> CategoryReport:
    wf = plan.workflow
    wstatus = (wf or {}).get("status") or {}
    wconds = wstatus.get("conditions") or []
    orch = _orch(wf)
    jobs = _jobs_of(wf, all_jobs)
    jobs_by_name = {(j.get("metadata") or {}).get("name"): j for j in jobs}
    key = f"{plan.domain}/{plan.variant}"

    status = _category_status(plan.status, wconds)
    failed = _cond(wconds, "Failed")
    if failed is None and plan.recorded.get("message") and status == "Failed":
        failed = {"message": plan.recorded["message"]}
    blocked = _cond(wconds, "InProgress")
    status_detail = plan.recorded.get("statusDetail") if status == "Running" else None
    if status_detail is None and status == "Running" and blocked and blocked.get("reason") in ("JobSchedulingBlocked", "WorkloadSchedulingBlocked"):
        status_detail = blocked.get("message") or None
    if status == "Running" and status_detail is None:
        status_detail = _job_blocked_detail(jobs)

    thresholds = dict(_option(plan, spec, "thresholds") or {})
    wf_thresholds = (((wf or {}).get("spec") or {}).get("validation") or {}).get("performance") or {}
    for k, v in ((wf_thresholds.get("thresholds") or {}).get("thresholds") or {}).items():
        thresholds.setdefault(k, v)
    bus_min = threshold_minimum(thresholds.get("busBandwidthGBps"))

    placement = (((wf or {}).get("spec") or {}).get("orchestration") or {}).get("placement") or orch.get("placement")
    test_scale = (
        ((wf or {}).get("metadata") or {}).get("annotations", {}).get(ANNOTATION_TEST_SCALE)
        or plan.recorded.get("testScale")
        or _option(plan, spec, "testScale")
        or orch.get("testScale")
        or (None if placement == "Unpinned" else "full-scale")
    )

    groups = [
        _group(g, jobs_by_name, jobs, bms, node_domains, bus_min) for g in _groups_status(wf)
    ]
    _group_jobs_without_status(groups, jobs, bms, node_domains, bus_min)

    failed_nodes = _distinct_failed(
        [_failed_node(n, key, None) for n in plan.parent_failed_nodes]
        + [_failed_node(n, key, None) for n in wstatus.get("failedNodes") or []]
        + [_failed_node(n, key, _group_of_job(j, groups)) for j in jobs for n in (j.get("status") or {}).get("failedNodes") or []]
    )
    failed_groups = _failed_groups(groups, jobs_by_name, wstatus, failed_nodes)
    for n in failed_nodes:  # a node's message is left out when it repeats its group's
        if not n.message:
            n.message = next((fg.reason for fg in failed_groups if n.name in fg.nodes), "")

    iterations = (((wf or {}).get("spec") or {}).get("orchestration") or {}).get("iterations")
    runtime_s = _runtime_seconds(wf, groups, jobs, now if status == "Running" else None, plan.recorded)
    total_nodes = orch.get("totalNodes")
    exercised = len(orch.get("exercisedNodes") or []) or len({n for g in groups for n in g.nodes}) or None

    category = CategoryReport(
        domain=plan.domain,
        variant=plan.variant,
        status=status,
        failure_reason=(failed.get("message") or failed.get("reason")) if (failed and status == "Failed") else None,
        status_detail=status_detail,
        runtime=human_duration(runtime_s) if runtime_s is not None else None,
        runtime_seconds=runtime_s,
        test_scale=None if placement == "Unpinned" else test_scale,
        nodes_per_job=orch.get("nodesPerJob") or plan.recorded.get("nodesPerJob") or _option(plan, spec, "nodesPerJob"),
        jobs=(orch.get("totalGroups") or len(groups) or None) if wf else plan.recorded.get("jobs"),
        groups_done=sum(1 for g in groups if g.phase in ("Succeeded", "Failed")),
        groups_total=orch.get("totalGroups") or len(groups),
        iterations=iterations if iterations and iterations > 1 else None,
        placement=_placement_text(placement, exercised, total_nodes),
        target_nodes=total_nodes,
        exercised_nodes=exercised,
        mnnvl=_mnnvl(plan, spec, orch),
        thresholds=thresholds,
        bus_bw_minimum_gbps=bus_min,
        bandwidth=_aggregate_bandwidth(groups, bus_min),
        transport=sorted({t for g in groups for t in g.transport}),
        groups=groups,
        failed_groups=failed_groups,
        failed_nodes=failed_nodes,
        training=_training(groups, jobs_by_name, gms),
        env=_env_names(
            list(spec.get("env") or [])
            + list(plan.options.get("env") or [])
            + _workload_env(((wf or {}).get("spec") or {}).get("jobTemplate"))
        ),
    )
    category.diagnose = _diagnosis(orch.get("diagnose"), groups)
    category.next_steps = _next_steps(category, namespace)
    return category


def _diagnosis(raw: Any, groups: list[GroupResult]) -> Diagnosis | None:
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


def _placement_text(placement: str | None, exercised: int | None, total: int | None) -> str | None:
    """Only Unpinned gets a Placement line: how much of the target the one job used."""
    if placement != "Unpinned":
        return None
    if exercised and total:
        return f"Unpinned ({exercised} of {total} target nodes exercised)"
    if total:
        return f"Unpinned (the scheduler picks among {total} target nodes)"
    return "Unpinned"


def _category_status(parent: str | None, wconds: list[dict]) -> str:
    raw = parent or _phase_of(wconds)
    if raw == "Succeeded":
        return "Succeeded"
    if raw == "Failed":
        return "Failed"
    if raw in ("InProgress", "Running"):
        return "Running"
    return "Pending"


def _job_blocked_detail(jobs: list[dict]) -> str | None:
    for job in jobs:
        c = _cond((job.get("status") or {}).get("conditions") or [], "InProgress")
        if c and c.get("reason") == "WorkloadSchedulingBlocked":
            return c.get("message") or None
    return None


def _mnnvl(plan: _Plan, spec: dict, orch: dict) -> str | None:
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


# ---------------------------------------------------------------- groups and bandwidth


def _group(
    g: dict, jobs_by_name: dict, jobs: list[dict], bms: list[dict], node_domains: dict, bus_min: float | None
) -> GroupResult:
    job_name = (g.get("jobRef") or {}).get("name")
    job = jobs_by_name.get(job_name) if job_name else None
    if job is None:
        job = next((j for j in jobs if ((j.get("metadata") or {}).get("labels") or {}).get(LABEL_GROUP) == g.get("name")), None)
        job_name = (job or {}).get("metadata", {}).get("name", job_name)
    # Unpinned groups name no nodes up front; the Job records where its pods ran
    nodes = list(g.get("nodes") or []) or list(((job or {}).get("status") or {}).get("nodesRan") or [])
    domains = g.get("domains") or []
    group = GroupResult(
        name=g.get("name", ""),
        nodes=nodes,
        domain=(domains[0] if len(domains) == 1 else None) or _common_domain(nodes, node_domains),
        phase=g.get("phase") or _job_phase(job) or "Pending",
        job_name=job_name,
    )
    _attach_bandwidth(group, job, bms, bus_min, recorded=g)
    return group


def _group_jobs_without_status(
    groups: list[GroupResult], jobs: list[dict], bms: list[dict], node_domains: dict, bus_min: float | None
) -> None:
    """A Workflow status that lists no groups (yet) still has Jobs worth reporting."""
    if groups:
        return
    for job in jobs:
        meta = job.get("metadata") or {}
        nodes = [n for n in ((meta.get("annotations") or {}).get(ANNOTATION_GROUP_NODES) or "").split(",") if n]
        group = GroupResult(
            name=(meta.get("labels") or {}).get(LABEL_GROUP) or meta.get("name", ""),
            nodes=nodes,
            domain=_common_domain(nodes, node_domains),
            phase=_job_phase(job) or "Pending",
            job_name=meta.get("name"),
        )
        _attach_bandwidth(group, job, bms, bus_min)
        groups.append(group)


def _job_phase(job: dict | None) -> str | None:
    if not job:
        return None
    conds = (job.get("status") or {}).get("conditions") or []
    if _cond(conds, "Failed"):
        return "Failed"
    if _cond(conds, "Succeeded"):
        return "Failed" if _cond(conds, "ValidationFailed") else "Succeeded"
    if _cond(conds, "InProgress"):
        return "Running"
    return None


def _common_domain(nodes: list[str], node_domains: dict[str, str]) -> str | None:
    found = {node_domains[n] for n in nodes if n in node_domains}
    return found.pop() if len(found) == 1 else None


def _attach_bandwidth(
    group: GroupResult, job: dict | None, bms: list[dict], bus_min: float | None, recorded: dict | None = None
) -> None:
    """Fill a group's per-size bandwidth and transport: from the Workflow's group record
    (it outlives the Job), else the Job, else its BandwidthMeasurement."""
    source = None
    if recorded and recorded.get("bandwidth"):
        source = (list(recorded["bandwidth"]), _transport_list(recorded.get("transport")), bool(recorded.get("provisional")))
    source = source or _bandwidth_source(job, bms)
    if source is None:
        return
    results, transport, provisional = source
    rows = []
    for r in results:
        size = int(to_float(r.get("sizeBytes", r.get("size"))) or 0)
        alg_raw = _first(r, "algBW", "algBwGBps", "algBWGBps")
        bus_raw = _first(r, "busBW", "busBwGBps", "busBWGBps")
        alg, bus = to_float(alg_raw), to_float(bus_raw)
        if alg is None or bus is None:
            continue
        rows.append(
            BandwidthRow(
                size=human_size(size),
                size_bytes=size,
                alg_bw=gbps_text(alg_raw) or "",
                bus_bw=gbps_text(bus_raw) or "",
                alg_bw_gbps=alg,
                bus_bw_gbps=bus,
                samples=int(r.get("samples") or 0),
                provisional=provisional,
            )
        )
    rows.sort(key=lambda r: r.size_bytes)
    group.bandwidth = rows
    group.transport = transport
    group.provisional = provisional and bool(rows)
    if rows:
        peak = max(rows, key=lambda r: r.bus_bw_gbps)
        group.bus_bw, group.bus_bw_gbps = peak.bus_bw, peak.bus_bw_gbps
        if bus_min is not None and peak.bus_bw_gbps < bus_min:
            group.below_min = True
            peak.low = True


def _bandwidth_source(job: dict | None, bms: list[dict]) -> tuple[list[dict], list[str], bool] | None:
    if job:
        jstatus = job.get("status") or {}
        m = jstatus.get("measurements") or {}
        if m.get("bandwidth"):
            return list(m["bandwidth"]), _transport_list(m.get("transport")), bool(m.get("provisional"))
        bw = jstatus.get("bandwidth")
        if isinstance(bw, dict) and (bw.get("results") or bw.get("transport")):
            return list(bw.get("results") or []), _transport_list(bw.get("transport")), bool(bw.get("provisional"))
        if isinstance(bw, list) and bw:
            return list(bw), _transport_list(jstatus.get("transport")), False
    job_name = ((job or {}).get("metadata") or {}).get("name")
    for bm in bms:
        ref = ((bm.get("spec") or {}).get("jobRef") or {}).get("name")
        if job_name and ref == job_name:
            st = bm.get("status") or {}
            complete = _cond(st.get("conditions") or [], "Complete")
            provisional = not complete or complete.get("reason") not in ("JobSucceeded", None, "")
            return list(st.get("results") or st.get("bandwidth") or []), _transport_list(st.get("transport")), provisional
    return None


def _first(row: dict, *keys: str) -> Any:
    for key in keys:
        if row.get(key) is not None:
            return row[key]
    return None


def _transport_list(value: Any) -> list[str]:
    if not value:
        return []
    if isinstance(value, str):
        return sorted({t.strip() for t in value.split(",") if t.strip()})
    return sorted({str(t) for t in value if t})


def _aggregate_bandwidth(groups: list[GroupResult], bus_min: float | None) -> list[BandwidthRow]:
    """The category's table: one group as measured; several averaged per size, weighted by samples."""
    measured = [g for g in groups if g.bandwidth and not g.provisional] or [g for g in groups if g.bandwidth]
    if not measured:
        return []
    if len(measured) == 1:
        return [row.model_copy() for row in measured[0].bandwidth]
    by_size: dict[int, list[BandwidthRow]] = {}
    for g in measured:
        for row in g.bandwidth:
            by_size.setdefault(row.size_bytes, []).append(row)
    rows = []
    for size, items in sorted(by_size.items()):
        weights = [max(r.samples, 1) for r in items]
        total = sum(weights)
        alg = sum(r.alg_bw_gbps * w for r, w in zip(items, weights)) / total
        bus = sum(r.bus_bw_gbps * w for r, w in zip(items, weights)) / total
        rows.append(
            BandwidthRow(
                size=human_size(size),
                size_bytes=size,
                alg_bw=gbps_text(alg) or "",
                bus_bw=gbps_text(bus) or "",
                alg_bw_gbps=round(alg, 2),
                bus_bw_gbps=round(bus, 2),
                samples=sum(r.samples for r in items),
                provisional=any(r.provisional for r in items),
            )
        )
    if bus_min is not None and rows:
        peak = max(rows, key=lambda r: r.bus_bw_gbps)
        peak.low = peak.bus_bw_gbps < bus_min
    return rows


# ---------------------------------------------------------------- failures


def _failed_node(raw: Any, category: str, group: str | None) -> FailedNode:
    raw = _plain(raw) if not isinstance(raw, str) else {"name": raw}
    return FailedNode(
        name=raw.get("name", ""),
        reason=raw.get("reason") or "WorkloadFailed",
        message=raw.get("message") or "",
        category=raw.get("category") or category,
        group=raw.get("group") or group,
    )


def _distinct_failed(nodes: Iterable[FailedNode]) -> list[FailedNode]:
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


def _group_of_job(job: dict, groups: list[GroupResult]) -> str | None:
    name = (job.get("metadata") or {}).get("name")
    return next((g.name for g in groups if g.job_name == name), None)


def _failed_groups(
    groups: list[GroupResult], jobs_by_name: dict, wstatus: dict, failed_nodes: list[FailedNode]
) -> list[FailedGroup]:
    recorded = {fg.get("name"): fg for fg in wstatus.get("failedGroups") or []}
    out = []
    for g in groups:
        if g.phase != "Failed" and g.name not in recorded:
            continue
        job = jobs_by_name.get(g.job_name) if g.job_name else None
        rec = recorded.get(g.name) or {}
        reason = rec.get("message") or _job_failure_reason(job) or rec.get("reason") or _fallback_reason(g, failed_nodes)
        log = rec.get("failureLog") or ((job or {}).get("status") or {}).get("failureLog")
        out.append(
            FailedGroup(
                name=g.name,
                node_count=len(g.nodes) or int(rec.get("nodeCount") or 0),
                nodes=g.nodes or list(rec.get("nodes") or []),
                reason=reason,
                failure_log=_failure_log(log) if log else None,
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
                failure_log=_failure_log(log) if log else None,
            )
        )
    return out


def _job_failure_reason(job: dict | None) -> str | None:
    conds = ((job or {}).get("status") or {}).get("conditions") or []
    for ctype in ("Failed", "HardwareFailed", "ValidationFailed"):
        c = _cond(conds, ctype)
        if c and (c.get("message") or c.get("reason")):
            return c.get("message") or c.get("reason")
    return None


def _fallback_reason(group: GroupResult, failed_nodes: list[FailedNode]) -> str:
    mine = [n for n in failed_nodes if n.name in group.nodes or n.group == group.name]
    mine.sort(key=lambda n: n.reason != "ThresholdViolation")
    return mine[0].message or mine[0].reason if mine else ""


def _failure_log(raw: dict) -> FailureLog:
    exit_code = raw.get("exitCode")
    return FailureLog(
        pod_name=raw.get("podName", ""),
        node_name=raw.get("nodeName", ""),
        exit_code=int(exit_code) if exit_code is not None else None,
        reason=raw.get("reason"),
        tail=raw.get("tail"),
    )


def _next_steps(category: CategoryReport, namespace: str) -> list[str]:
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


# ---------------------------------------------------------------- training


def _training(groups: list[GroupResult], jobs_by_name: dict, gms: list[dict]) -> list[TrainingResult]:
    out = []
    for g in groups:
        st = _goodput_status(jobs_by_name.get(g.job_name) if g.job_name else None, g.job_name, gms)
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


def _goodput_status(job: dict | None, job_name: str | None, gms: list[dict]) -> dict | None:
    jstatus = (job or {}).get("status") or {}
    if isinstance(jstatus.get("goodput"), dict):
        return jstatus["goodput"]
    m = jstatus.get("measurements") or {}
    if any(m.get(k) is not None for k in ("goodputRatio", "avgTFLOPsPerGPU", "avgStepTimeSec")):
        return {"result": m.get("goodputRatio"), "avgTFLOPSPerGPU": m.get("avgTFLOPsPerGPU"), "avgStepTimeSec": m.get("avgStepTimeSec")}
    for gm in gms:
        if job_name and ((gm.get("spec") or {}).get("jobRef") or {}).get("name") == job_name:
            return gm.get("status") or None
    return None


# ---------------------------------------------------------------- time


def _runtime_seconds(
    wf: dict | None, groups: list[GroupResult], jobs: list[dict], now: datetime | None, recorded: dict
) -> float | None:
    """Earliest group start to latest completion, across iterations (running: up to ``now``)."""
    starts, ends = [], []
    history = _orch(wf).get("iterationHistory") or []
    entries = [g for it in history for g in it.get("groups") or []] + _groups_status(wf)
    for g in entries:
        if (s := _time(g.get("startTime"))) is not None:
            starts.append(s)
        if (e := _time(g.get("completionTime"))) is not None:
            ends.append(e)
    if not starts:
        for j in jobs:
            st = j.get("status") or {}
            if (s := _time(st.get("workloadStartTime") or st.get("startTime"))) is not None:
                starts.append(s)
            if (e := _time(st.get("completionTime"))) is not None:
                ends.append(e)
    if not starts and (s := _time(recorded.get("startTime"))) is not None:
        starts.append(s)
        if (e := _time(recorded.get("completionTime"))) is not None:
            ends.append(e)
    if not starts:
        return None
    end = now if now is not None else (max(ends) if ends else None)
    if end is None:
        return None
    return max(0.0, (end - min(starts)).total_seconds())


# ---------------------------------------------------------------- header and summary


def _exclusions(status: dict, workflows: list[dict]) -> list[Exclusion]:
    found: dict[str, Exclusion] = {}
    sources = [(status.get("excludedNodes") or [], status.get("exclusionReason") or "")]
    for wf in workflows:
        orch = _orch(wf)
        sources.append((orch.get("excludedNodes") or [], orch.get("exclusionReason") or ""))
    for items, reason in sources:
        for item in items:
            if isinstance(item, str):
                found.setdefault(item, Exclusion(name=item, reason=reason))
            elif isinstance(item, dict) and item.get("name"):
                found.setdefault(item["name"], Exclusion(name=item["name"], reason=item.get("reason") or reason))
    return sorted(found.values(), key=lambda e: e.name)


def _exclusion_reason(status: dict, workflows: list[dict], exclusions: list[Exclusion]) -> str | None:
    if not exclusions:
        return None
    for text in [status.get("exclusionReason")] + [_orch(wf).get("exclusionReason") for wf in workflows]:
        if text:
            return text
    reasons = sorted({e.reason for e in exclusions if e.reason})
    return "; ".join(reasons) or None


def _result(conditions: list[dict], categories: list[CategoryReport], exclusions: list[Exclusion]) -> str:
    if _cond(conditions, "Failed"):
        return "FAILED"
    if _cond(conditions, "Succeeded"):
        return "INCOMPLETE" if exclusions else "PASSED"
    return "RUNNING"


def _platform_gpu(status: dict, workflows: list[dict]) -> tuple[str, str]:
    platform = status.get("platform") or status.get("detectedPlatform")
    gpu = status.get("gpuArchitecture") or status.get("detectedGPUArchitecture") or status.get("gpu")
    for wf in workflows:
        orch = _orch(wf)
        platform = platform or orch.get("detectedPlatform")
        gpu = gpu or orch.get("detectedGPUArchitecture")
    return platform or "unknown", gpu or "unknown"


def _total_nodes(status: dict, workflows: list[dict], categories: list[CategoryReport]) -> int:
    for key in ("totalNodes", "targetNodes", "targetNodeCount"):
        value = status.get(key)
        if isinstance(value, int):
            return value
        if isinstance(value, list):
            return len(value)
    counts = [_orch(wf).get("totalNodes") or 0 for wf in workflows]
    if counts and max(counts):
        return max(counts)
    return len({n for c in categories for g in c.groups for n in g.nodes})


def _node_domains(nodes: list[dict]) -> dict[str, str]:
    out = {}
    for node in nodes:
        meta = node.get("metadata") or {}
        labels = meta.get("labels") or {}
        for key in DOMAIN_LABELS:
            if labels.get(key):
                out[meta.get("name", "")] = labels[key]
                break
    return out


def _node_results(report: Report, node_domains: dict[str, str]) -> list[NodeResult]:
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
        if r.status != "Failed":  # a node that failed somewhere shows failed, excluded or not
            r.status = "Excluded"
        label = f"excluded: {ex.reason}" if ex.reason else "excluded"
        if label not in r.reasons:
            r.reasons.append(label)
    return sorted(results.values(), key=lambda r: (r.domain or "~", r.name))
