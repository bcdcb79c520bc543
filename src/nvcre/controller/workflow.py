"""Workflow reconciler: one category across node groups and iterations.

A pass checks namespace access, plans the groups once (discovery, platform and GPU
detection, partition), then polls the running groups' Jobs, launches pending groups
(node-disjoint, at most maxConcurrent) and, when an iteration is done, starts the
next or decides. Jobs have deterministic names and are created only if absent, so a
restart never duplicates one; all group bookkeeping goes into one status write.
"""

from __future__ import annotations

import copy
import logging
from concurrent.futures import ThreadPoolExecutor

from nvcre.controller import compose
from nvcre.controller import conditions as c
from nvcre.controller import isolation
from nvcre.controller import ledger
from nvcre.controller import labels as L
from nvcre.controller import naming
from nvcre.controller import node_results
from nvcre.controller import outlier_check
from nvcre.controller import workflow_core as core
from nvcre.controller.access import RUN_ROLEBINDING, AccessChecker, missing_message
from nvcre.controller.conditions import WorkflowReason
from nvcre.controller.context import Context, parse_time
from nvcre.controller.node_results import write_workflow_status
from nvcre.kube.resources import NVCRE_API_VERSION

log = logging.getLogger(__name__)

MAX_FAILED_GROUPS = 128  # keep status small: the first failed groups, all failed nodes
COMPACT_GROUPS = 256  # above this many groups, group entries carry no jobRef or times
FAILED_GROUP_TAIL = 512  # log excerpt kept per failed group (the Job keeps the full excerpt)
LAUNCH_BATCH = 64  # Jobs created per pass (in parallel), then the status write
GROUP_BANDWIDTH_LIMIT = 32  # per-group bandwidth tables only for small Workflows


def reconcile_workflow(ctx: Context, namespace: str, name: str) -> float | None:
    wf = ctx.kube.get(NVCRE_API_VERSION, "Workflow", name, namespace)
    if wf is None or wf["metadata"].get("deletionTimestamp"):
        return None
    ctx.metrics.store.put(wf)
    status = wf.get("status") or {}
    if c.is_terminal(status.get("conditions")):
        ref = status.get("failedNodesRef") or {}
        if ref and ctx.kube.get("v1", "ConfigMap", ref.get("name", ""), wf["metadata"]["namespace"]) is None:
            node_results.ensure(ctx, wf)  # a crash came between the terminal write and the ConfigMaps
        if ledger.applies(wf) and not ledger.recorded(wf):
            ledger.record_workflow(ctx, wf)  # what each node proved, kept beyond this run
        return None

    if (wait := _check_access(ctx, wf)) is not None:
        return wait

    orch = status.get("orchestration") or {}
    if compose.is_diagnose(wf):
        from nvcre.controller.diagnose import step_diagnose

        if not orch.get("diagnose"):
            return _plan(ctx, wf)
        return step_diagnose(ctx, wf)
    if (orch.get("isolation") or {}).get("phase") == isolation.RUNNING:
        return _step_isolation(ctx, wf)
    if not orch.get("groups"):
        return _plan(ctx, wf)
    return _step(ctx, wf)


# ---------------------------------------------------------------- access
def _check_access(ctx: Context, wf: dict) -> float | None:
    checker: AccessChecker = getattr(ctx, "access", None) or AccessChecker(ctx.kube)
    ctx.access = checker  # type: ignore[attr-defined]
    ns = wf["metadata"]["namespace"]
    denied = checker.missing(ns, compose.adapter_of(wf))
    if not denied:
        if c.reason_of((wf.get("status") or {}).get("conditions"), c.IN_PROGRESS) == WorkflowReason.NAMESPACE_PERMISSIONS_MISSING:
            write_workflow_status(ctx, wf, lambda o: c.set_status_phase(o["status"], c.IN_PROGRESS, WorkflowReason.GROUPS_PARTITIONED, "Namespace permissions granted"))
        return None
    message = missing_message(ns, denied)
    created = parse_time(wf["metadata"].get("creationTimestamp")) or ctx.now()
    if ctx.now() - created > ctx.settings.namespace_access_timeout_seconds:
        write_workflow_status(ctx, wf, lambda o: c.set_status_phase(o["status"], c.FAILED, WorkflowReason.NAMESPACE_PERMISSIONS_MISSING, message))
        return None
    first = c.reason_of((wf.get("status") or {}).get("conditions"), c.IN_PROGRESS) != WorkflowReason.NAMESPACE_PERMISSIONS_MISSING
    write_workflow_status(ctx, wf, lambda o: c.set_status_phase(o["status"], c.IN_PROGRESS, WorkflowReason.NAMESPACE_PERMISSIONS_MISSING, message))
    if first:
        ctx.events.emit(wf, "Warning", WorkflowReason.NAMESPACE_PERMISSIONS_MISSING, f"create RoleBinding {RUN_ROLEBINDING}: {message}")
    return 10.0


# ---------------------------------------------------------------- planning
def _plan(ctx: Context, wf: dict) -> float | None:
    try:
        plan = compose.plan_workflow(ctx, wf)
    except compose.PlanError as err:
        write_workflow_status(ctx, wf, lambda o: c.set_status_phase(o["status"], c.FAILED, err.reason, err.message))
        return None
    n_nodes = len(plan.nodes)
    message = f"Discovered {n_nodes} nodes, partitioned into {len(plan.groups)} groups ({plan.nodes_per_job} nodes/job)"

    diagnose_state = None
    if compose.is_diagnose(wf):
        from nvcre.controller.diagnose import start_state

        try:
            diagnose_state = start_state(wf, plan)
        except Exception as err:  # too few nodes, a bad policy value: the spec's problem
            write_workflow_status(ctx, wf, lambda o: c.set_status_phase(o["status"], c.FAILED, WorkflowReason.PARTITION_ERROR,
                                                               f"diagnose cannot start: {getattr(err, 'message', err)}"))
            return None
        message = f"Discovered {n_nodes} nodes; diagnose starts with a screening round"

    def mutate(o: dict) -> bool:
        st = o["status"]
        orch = st.get("orchestration") or {}
        if orch.get("groups") or orch.get("diagnose"):
            return False
        st["orchestration"] = {**orch, **plan.orchestration}
        st["orchestration"]["groups"] = plan.groups
        if diagnose_state is not None:
            st["orchestration"]["diagnose"] = diagnose_state
        st["startTime"] = st.get("startTime") or ctx.now_text()
        st["summary"] = {"groups": f"0/{len(plan.groups)}", "iteration": f"1/{plan.iterations}"}
        c.set_status_phase(st, c.IN_PROGRESS, WorkflowReason.GROUPS_PARTITIONED, message, generation=o["metadata"].get("generation"))
        return True

    for event_type, reason, note in plan.events:
        ctx.events.emit(wf, event_type, reason, note)
    write_workflow_status(ctx, wf, mutate)
    return 0.0


# ---------------------------------------------------------------- one step
def _job_name(wf: dict, group: dict, iteration: int) -> str:
    orch = (wf.get("status") or {}).get("orchestration") or {}
    iterations = int(((wf.get("spec") or {}).get("orchestration") or {}).get("iterations") or 1)
    # diagnose runs many rounds: every round's Jobs need names of their own
    retries = int(group.get("retries") or 0)
    single = iterations <= 1 and len(orch.get("groups") or []) <= 1 and not compose.is_diagnose(wf) and not retries
    # a retry gets a Job of its own (no waiting for the failed one to go away; it stays for the report)
    name = f"{group['name']}-r{retries}" if retries else group["name"]
    return naming.job_name(wf["metadata"]["name"], name, iteration, single=single)


def _step(ctx: Context, wf: dict, *, diagnose_round: bool = False) -> float | None:
    meta, spec = wf["metadata"], wf.get("spec") or {}
    st = wf.get("status") or {}
    orch = st.get("orchestration") or {}
    groups = copy.deepcopy(orch.get("groups") or [])
    iteration = int(orch.get("currentIteration") or 1)
    iterations = int((spec.get("orchestration") or {}).get("iterations") or 1)
    execution = (spec.get("orchestration") or {}).get("execution") or {}
    max_concurrent = int(execution.get("maxConcurrent") or 0)

    # 1. poll running groups
    finished: list[tuple[int, core.GroupOutcome, dict | None]] = []
    blocked: list[str] = []
    # The Jobs as the watch last delivered them: a stale copy only delays a decision
    # (phases only move forward), and it spares a GET per group or a multi-MB LIST per pass.
    jobs: dict[str, dict] = {
        j["metadata"]["name"]: j
        for j in ctx.metrics.store.of_kind("Job")
        if j["metadata"].get("namespace") == meta["namespace"] and (j["metadata"].get("labels") or {}).get(L.WORKFLOW) == meta["name"]
    }
    for i, g in enumerate(groups):
        if g.get("phase") != core.RUNNING:
            continue
        job_name = (g.get("jobRef") or {}).get("name") or _job_name(wf, g, iteration)
        job = jobs.get(job_name)
        if job is None or core.group_outcome(job).phase != core.RUNNING:
            # not seen yet, or about to be decided on: confirm with a live read
            job = ctx.kube.get(NVCRE_API_VERSION, "Job", job_name, meta["namespace"])
        outcome = core.group_outcome(job)
        if outcome.phase == core.RUNNING:
            if outcome.blocked:
                blocked.append(f"job {job_name} scheduling blocked: {outcome.blocked}")
            continue
        finished.append((i, outcome, job))

    # 2. launch pending groups (create-if-absent: a restart adopts what exists), a
    # batch per pass so a 4096-group plan shows progress and keeps each write small
    launched: list[tuple[int, str]] = []
    probe = copy.deepcopy(groups)
    for i, _, _ in finished:
        probe[i]["phase"] = core.SUCCEEDED
    batch = core.groups_to_launch(probe, max_concurrent)[:LAUNCH_BATCH]
    more_to_launch = len(core.groups_to_launch(probe, max_concurrent)) > len(batch)
    bodies = []
    for i in batch:
        job_name = _job_name(wf, groups[i], iteration)
        try:
            bodies.append((i, job_name, compose.job_for_group(ctx, wf, groups[i], job_name, iteration)))
        except compose.PlanError as err:
            write_workflow_status(ctx, wf, lambda o: c.set_status_phase(o["status"], c.FAILED, err.reason, err.message))
            return None
    with ThreadPoolExecutor(max_workers=min(8, max(1, len(bodies)))) as pool:
        answers = list(pool.map(lambda item: ctx.kube.create(item[2]), bodies))
    for (i, job_name, _), (existing, created) in zip(bodies, answers):
        if not created and not L.controlled_by(existing, wf):
            msg = f"Job {job_name} exists and is not controlled by Workflow {meta['name']}"
            write_workflow_status(ctx, wf, lambda o: c.set_status_phase(o["status"], c.FAILED, WorkflowReason.JOB_NAME_COLLISION, msg))
            return None
        launched.append((i, job_name))

    now_text = ctx.now_text()
    outlier_events: list[tuple[str, str, str]] = []

    def mutate(o: dict) -> bool:
        ost = o["status"]
        if c.is_terminal(ost.get("conditions")):
            return False
        oorch = ost.setdefault("orchestration", {})
        cur = oorch.get("groups") or []
        if int(oorch.get("currentIteration") or 1) != iteration or len(cur) != len(groups):
            return False  # another pass moved on; the next pass re-decides
        before = copy.deepcopy(ost)
        pending: list[dict] = []
        retry_budget = int((((o.get("spec") or {}).get("orchestration") or {}).get("execution") or {}).get("retryFailedGroups") or 0)
        for i, outcome, job in finished:
            g = cur[i]
            if g.get("phase") != core.RUNNING:
                continue
            if (outcome.phase == core.FAILED and not diagnose_round and outcome.reason != c.JobReason.JOB_TIMED_OUT
                    and int(g.get("retries") or 0) < retry_budget):
                # retryFailedGroups: the failed attempt's nodes are recorded, the group runs again
                pending.extend(((job or {}).get("status") or {}).get("failedNodes") or [])
                g["retries"] = int(g.get("retries") or 0) + 1
                g["phase"] = core.PENDING
                for key in ("jobRef", "startTime", "completionTime"):
                    g.pop(key, None)
                continue
            g["phase"] = outcome.phase
            if len(cur) <= COMPACT_GROUPS:
                g["completionTime"] = now_text
            _absorb_job(ost, g, outcome, job, iteration, len(cur), pending, diagnose=diagnose_round)
        if pending:
            ost["failedNodes"], _ = c.merge_failed_nodes(ost.get("failedNodes"), pending)
            ost["failedNodeCount"] = len({n["name"] for n in ost["failedNodes"]})
        for i, job_name in launched:
            g = cur[i]
            if g.get("phase") == core.PENDING:
                g["phase"] = core.RUNNING
                if len(cur) <= COMPACT_GROUPS:  # large plans derive the Job name from the group
                    g["jobRef"] = {"apiVersion": NVCRE_API_VERSION, "kind": "Job", "name": job_name, "namespace": o["metadata"]["namespace"]}
                    g["startTime"] = now_text
        done = sum(1 for g in cur if g.get("phase") in (core.SUCCEEDED, core.FAILED))
        ost["summary"] = {"groups": f"{done}/{len(cur)}", "iteration": f"{iteration}/{iterations}"}
        gen = o["metadata"].get("generation")
        if done == len(cur) and diagnose_round:
            pass  # the diagnose driver records the round and plans the next one
        elif done == len(cur):
            if iteration >= iterations:
                outlier_events[:] = outlier_check.apply(ost, o, iteration)
            if iteration < iterations:
                history = oorch.setdefault("iterationHistory", [])
                history.append({"iteration": iteration, "groups": [_summary(g) for g in cur]})
                oorch["completedIterations"] = iteration
                oorch["currentIteration"] = iteration + 1
                for g in cur:
                    for key in ("jobRef", "startTime", "completionTime", "bandwidth", "transport"):
                        g.pop(key, None)
                    g["phase"], g["retries"] = core.PENDING, 0
                ost["summary"] = {"groups": f"0/{len(cur)}", "iteration": f"{iteration + 1}/{iterations}"}
                c.set_status_phase(ost, c.IN_PROGRESS, WorkflowReason.ITERATION_COMPLETED,
                                   f"Iteration {iteration}/{iterations} completed, starting next", generation=gen)
            elif to_isolate := isolation.eligible_groups(o):
                isolation.begin(ost, o, to_isolate, gen)
            else:
                _finalize(ost, iterations, gen, now_text)
        else:
            running = sum(1 for g in cur if g.get("phase") == core.RUNNING)
            summary = f"Iteration {iteration}/{iterations}: {running} groups running"
            if blocked:
                c.set_status_phase(ost, c.IN_PROGRESS, WorkflowReason.JOB_SCHEDULING_BLOCKED,
                                   (summary + "; " + "; ".join(blocked))[:1024], generation=gen)
            else:
                current = c.reason_of(ost.get("conditions"), c.IN_PROGRESS)
                fresh = current in (WorkflowReason.GROUPS_PARTITIONED, WorkflowReason.ITERATION_COMPLETED, "")
                reason = WorkflowReason.JOB_CREATED if (launched and fresh) else WorkflowReason.JOB_RUNNING
                c.set_status_phase(ost, c.IN_PROGRESS, reason, summary, generation=gen)
        return ost != before

    written = write_workflow_status(ctx, wf, mutate)
    if written is None:
        return None
    for event_type, reason, note in outlier_events:
        ctx.events.emit(written, event_type, reason, note)
    if int(((written.get("status") or {}).get("orchestration") or {}).get("currentIteration") or 1) > iteration:
        _delete_iteration_jobs(ctx, written, iteration)
        return 0.0
    if c.is_terminal((written.get("status") or {}).get("conditions")):
        return None
    if (((written.get("status") or {}).get("orchestration") or {}).get("isolation") or {}).get("phase") == isolation.RUNNING:
        return 0.0  # create the isolation Workflow now
    return 0.0 if more_to_launch else ctx.settings.resync_seconds


# ---------------------------------------------------------------- isolation
def _step_isolation(ctx: Context, wf: dict) -> float | None:
    """Create the child diagnose Workflow if absent; when it has ended, fold its verdict in and decide."""
    meta = wf["metadata"]
    iso = wf["status"]["orchestration"]["isolation"]
    child = ctx.kube.get(NVCRE_API_VERSION, "Workflow", iso["workflow"], meta["namespace"])
    note = ""
    if child is None:
        try:
            child, created = ctx.kube.create(isolation.child_body(wf, iso.get("nodes") or []))
        except Exception as err:  # refused by the API server: decide without it
            child, created, note = None, False, f"the isolation Workflow could not be created: {err}"[:512]
        if created:
            ctx.events.emit(wf, "Normal", WorkflowReason.ISOLATING_FAULTS,
                            f"Created Workflow {iso['workflow']}: diagnose over {len(iso.get('nodes') or [])} nodes of "
                            f"{len(iso.get('groups') or [])} groups that missed a bandwidth threshold")
            return ctx.settings.resync_seconds
    if child is not None and not L.controlled_by(child, wf):
        child, note = None, f"Workflow {iso['workflow']} exists and is not controlled by Workflow {meta['name']}"
    if child is not None and not c.is_terminal((child.get("status") or {}).get("conditions")):
        return ctx.settings.resync_seconds  # the child's watch events wake this Workflow
    iterations = int(((wf.get("spec") or {}).get("orchestration") or {}).get("iterations") or 1)
    now_text = ctx.now_text()
    outcome: dict = {}

    def mutate(o: dict) -> bool:
        ost = o["status"]
        if c.is_terminal(ost.get("conditions")) or ((ost.get("orchestration") or {}).get("isolation") or {}).get("phase") != isolation.RUNNING:
            return False
        outcome["summary"] = isolation.fold(ost, child, note)
        outcome["phase"] = ost["orchestration"]["isolation"]["phase"]
        _finalize(ost, iterations, o["metadata"].get("generation"), now_text, note=outcome["summary"])
        return True

    written = write_workflow_status(ctx, wf, mutate)
    if written is not None and outcome:
        sharp = outcome["phase"] == isolation.SUCCEEDED
        ctx.events.emit(written, "Normal" if sharp else "Warning", "FaultsIsolated" if sharp else "IsolationInconclusive",
                        outcome["summary"])
    return None


def _summary(g: dict) -> dict:
    out = {"name": g["name"], "phase": g.get("phase", core.PENDING)}
    if g.get("jobRef"):
        out["jobName"] = g["jobRef"]["name"]
    for key in ("startTime", "completionTime"):
        if g.get(key):
            out[key] = g[key]
    return out


def _absorb_job(st: dict, group: dict, outcome: core.GroupOutcome, job: dict | None, iteration: int, n_groups: int,
                pending: list[dict], *, diagnose: bool = False) -> None:
    """Fold a finished group's Job into the Workflow: failed groups and bandwidth now; its
    failed nodes go to ``pending``, merged once per pass (one merge, not one per Job)."""
    jst = (job or {}).get("status") or {}
    measured = jst.get("measurements") or {}
    if (figure := outlier_check.headline(measured)) is not None:
        group["headline"] = figure  # the fleet-relative outlier check compares these
    if measured.get("bandwidth"):
        if n_groups <= GROUP_BANDWIDTH_LIMIT:
            group["bandwidth"] = measured["bandwidth"][:64]
        st["bandwidth"] = _running_mean(st.get("bandwidth") or [], measured["bandwidth"])
    if measured.get("transport"):
        group["transport"] = measured["transport"]
        seen = st.setdefault("transport", [])
        for t in str(measured["transport"]).split(","):
            if t and t not in seen and len(seen) < 8:
                seen.append(t)
    if not group.get("nodes") and jst.get("nodesRan"):  # Unpinned: where the scheduler put it
        orch = st.setdefault("orchestration", {})
        orch["exercisedNodes"] = sorted(set(orch.get("exercisedNodes") or []) | set(jst["nodesRan"]))
    if diagnose:
        # a failing diagnose test implicates its group, not each node: only a health
        # detector's finding is node evidence; the planner's verdict names the rest
        pending.extend(n for n in jst.get("failedNodes") or [] if n.get("reason") == c.NodeReason.HARDWARE_FAILURE_DETECTED)
        return
    if jst.get("failedNodes"):
        # A message that only repeats the group's verdict stays on the Job and in
        # failedGroups; node-specific ones (a health detector's finding) are kept.
        entries = [
            n if n.get("reason") == c.NodeReason.HARDWARE_FAILURE_DETECTED else {"name": n["name"], "reason": n["reason"]}
            for n in jst["failedNodes"]
        ]
        pending.extend(entries)
    if outcome.phase != core.FAILED:
        return
    failed = st.setdefault("failedGroups", [])
    if len(failed) >= MAX_FAILED_GROUPS:
        return
    # Hardware wins the group's reason, then a missed threshold, then the run's own failure.
    if outcome.hardware:
        reason = c.JobReason.HARDWARE_FAILURE_DETECTED
    elif outcome.validation and not c.is_true(jst.get("conditions"), c.FAILED):
        reason = c.reason_of(jst.get("conditions"), c.VALIDATION_FAILED) or outcome.reason
    else:
        reason = outcome.reason
    entry = {
        "name": group["name"],
        "iteration": iteration,
        "nodes": list(group.get("nodes") or jst.get("nodesRan") or [])[:1024],
        "reason": (reason or "")[:128] or None,
        "message": (outcome.message or "")[:1024] or None,
        "failureLog": _short_log(jst.get("failureLog")),
    }
    failed.append({k: v for k, v in entry.items() if v is not None})


def _short_log(log: dict | None) -> dict | None:
    if not log:
        return None
    out = dict(log)
    if out.get("tail"):
        out["tail"] = out["tail"][-FAILED_GROUP_TAIL:]
    return out


def _running_mean(current: list[dict], new: list[dict]) -> list[dict]:
    """Fold one group's per-size table into the category's mean (samples = groups so far)."""
    by_size = {int(r["sizeBytes"]): r for r in current}
    new_by = {int(r["sizeBytes"]): r for r in new}
    out = []
    for size in sorted(set(by_size) | set(new_by)):
        old, add = by_size.get(size), new_by.get(size)
        if add is None:
            out.append(old)
            continue
        n = int(old.get("samples") or 1) if old else 0
        base_alg = float(old["algBwGBps"]) * n if old else 0.0
        base_bus = float(old["busBwGBps"]) * n if old else 0.0
        out.append({
            "sizeBytes": size,
            "algBwGBps": round((base_alg + float(add["algBwGBps"])) / (n + 1), 2),
            "busBwGBps": round((base_bus + float(add["busBwGBps"])) / (n + 1), 2),
            "samples": n + 1,
        })
    return out[:64]


def _finalize(st: dict, iterations: int, generation, now_text: str, note: str = "") -> None:
    verdict = core.final_verdict(st.get("orchestration") or {}, st.get("failedNodes") or [], st.get("failedGroups") or [], iterations)
    message = f"{verdict.message}; {note}"[:1024] if note else verdict.message
    c.set_status_phase(st, verdict.phase, verdict.reason, message, generation=generation)
    if verdict.validation_failed:
        c.set_condition(st.setdefault("conditions", []), c.VALIDATION_FAILED, True, WorkflowReason.JOB_VALIDATION_FAILED,
                        "One or more Jobs failed performance threshold validation", generation=generation)
    st["completionTime"] = now_text
    st["failedNodeCount"] = len({n["name"] for n in st.get("failedNodes") or []})


def _delete_iteration_jobs(ctx: Context, wf: dict, iteration: int) -> None:
    """At an iteration boundary the previous iteration's Jobs go (the history keeps their outcome)."""
    ns = wf["metadata"]["namespace"]
    for job in ctx.kube.list(NVCRE_API_VERSION, "Job", ns, label_selector=f"{L.WORKFLOW}={wf['metadata']['name']},{L.ITERATION}={iteration}"):
        if L.controlled_by(job, wf):
            ctx.kube.delete(NVCRE_API_VERSION, "Job", job["metadata"]["name"], ns, uid=job["metadata"]["uid"])
