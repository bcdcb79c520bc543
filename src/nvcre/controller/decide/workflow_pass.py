"""One Workflow pass as data, and how it lands in the status: retries, iteration rollover,
isolation start, the verdict.

The reconciler gathers which running groups' Jobs ended (``Finished``) and which
groups it launched, then ``apply_workflow_pass`` folds that into a fresh copy of the
Workflow. It is replayed unchanged on a 409 conflict, and refuses (returns False) when
another pass already moved the Workflow on (another iteration, another group count,
a terminal phase), so a replay never counts a group twice.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from nvcre.controller import conditions as c
from nvcre.controller import outlier_check
from nvcre.controller import isolation
from nvcre.controller import workflow_core as core
from nvcre.controller.conditions import WorkflowReason
from nvcre.controller.decide.job_pass import blamed_nodes
from nvcre.api.common import GROUP_VERSION as NVCRE_API_VERSION  # the schema's name for it: decisions import no kube
from nvcre.objpath import dig

MAX_FAILED_GROUPS = 128  # keep status small: the first failed groups, all failed nodes
COMPACT_GROUPS = 256  # above this many groups, group entries carry no jobRef or times
FAILED_GROUP_TAIL = 512  # log excerpt kept per failed group (the Job keeps the full excerpt)
GROUP_BANDWIDTH_LIMIT = 32  # per-group bandwidth tables only for small Workflows
GROUP_NODES_LIMIT = 1024  # nodes listed per failed group


@dataclass(frozen=True)
class Finished:
    index: int
    outcome: core.GroupOutcome
    job: dict | None  # the group's Job as last read (None: it is gone)


@dataclass
class WorkflowPass:
    iteration: int
    group_count: int
    finished: list[Finished] = field(default_factory=list)
    launched: list[tuple[int, str]] = field(default_factory=list)  # (group index, Job name)
    blocked: list[str] = field(default_factory=list)  # "job X scheduling blocked: ..." lines
    diagnose_round: bool = False
    now_text: str = ""
    events: list[tuple[str, str, str]] = field(default_factory=list)  # filled by apply (outliers), emitted after the write


def apply_workflow_pass(o: dict, p: WorkflowPass) -> bool:
    """Fold the pass into ``o['status']``; False when nothing changed or the pass is stale."""
    ost = o.setdefault("status", {})
    if c.is_terminal(ost.get("conditions")):
        return False
    orch = ost.setdefault("orchestration", {})
    groups = orch.get("groups") or []
    if int(orch.get("currentIteration") or 1) != p.iteration or len(groups) != p.group_count:
        return False  # another pass moved on; the next pass re-decides
    before = repr(ost)
    p.events.clear()  # a replay after a conflict decides them again
    spec_orch = dig(o, "spec", "orchestration") or {}
    iterations = int(spec_orch.get("iterations") or 1)
    retry_budget = int(dig(spec_orch, "execution", "retryFailedGroups") or 0)
    pending = _fold_finished(ost, groups, p, retry_budget)
    if pending:
        ost["failedNodes"], _ = c.merge_failed_nodes(ost.get("failedNodes"), pending)
        ost["failedNodeCount"] = len({n["name"] for n in ost["failedNodes"]})
    _mark_launched(groups, p, o["metadata"].get("namespace"))
    done = sum(1 for g in groups if g.get("phase") in (core.SUCCEEDED, core.FAILED))
    ost["summary"] = {"groups": f"{done}/{len(groups)}", "iteration": f"{p.iteration}/{iterations}"}
    gen = o["metadata"].get("generation")
    if done == len(groups) and p.diagnose_round:
        pass  # the diagnose driver records the round and plans the next one
    elif done == len(groups):
        _iteration_done(o, ost, p, iterations, gen)
    else:
        _progress(ost, groups, p, iterations, gen)
    return repr(ost) != before


def _fold_finished(ost: dict, groups: list[dict], p: WorkflowPass, retry_budget: int) -> list[dict]:
    """Finished groups: a retry (retryFailedGroups) or their outcome; returns failed nodes to merge."""
    pending: list[dict] = []
    for f in p.finished:
        g = groups[f.index]
        if g.get("phase") != core.RUNNING:
            continue
        if retryable(f.outcome, int(g.get("retries") or 0), retry_budget, diagnose=p.diagnose_round):
            # the failed attempt's nodes are recorded, the group runs again under a new Job
            pending.extend(blamed_nodes(dig(f.job, "status") or {}, list(g.get("nodes") or [])))
            g["retries"] = int(g.get("retries") or 0) + 1
            g["phase"] = core.PENDING
            for key in ("jobRef", "startTime", "completionTime"):
                g.pop(key, None)
            continue
        g["phase"] = f.outcome.phase
        if len(groups) <= COMPACT_GROUPS:
            g["completionTime"] = p.now_text
        absorb_job(ost, g, f.outcome, f.job, p.iteration, len(groups), pending, diagnose=p.diagnose_round)
    return pending


def retryable(outcome: core.GroupOutcome, retries: int, budget: int, *, diagnose: bool = False) -> bool:
    """A failed group runs again while retryFailedGroups allows; never after a timeout or in a diagnosis."""
    return (outcome.phase == core.FAILED and not diagnose and outcome.reason != c.JobReason.JOB_TIMED_OUT
            and retries < budget)


def _mark_launched(groups: list[dict], p: WorkflowPass, namespace: str | None) -> None:
    for i, job_name in p.launched:
        g = groups[i]
        if g.get("phase") == core.PENDING:
            g["phase"] = core.RUNNING
            if len(groups) <= COMPACT_GROUPS:  # large plans derive the Job name from the group
                g["jobRef"] = {"apiVersion": NVCRE_API_VERSION, "kind": "Job", "name": job_name, "namespace": namespace}
                g["startTime"] = p.now_text


def _iteration_done(o: dict, ost: dict, p: WorkflowPass, iterations: int, gen) -> None:
    """Every group ended: the next iteration, an isolation of threshold misses, or the verdict."""
    orch, groups = ost["orchestration"], ost["orchestration"]["groups"]
    if p.iteration >= iterations:  # the fleet-relative check, before isolation picks its groups
        p.events[:] = outlier_check.apply(ost, o, p.iteration)
    if p.iteration < iterations:
        orch.setdefault("iterationHistory", []).append({"iteration": p.iteration, "groups": [summary(g) for g in groups]})
        orch["completedIterations"] = p.iteration
        orch["currentIteration"] = p.iteration + 1
        for g in groups:
            for key in ("jobRef", "startTime", "completionTime", "bandwidth", "transport"):
                g.pop(key, None)
            g["phase"], g["retries"] = core.PENDING, 0
        ost["summary"] = {"groups": f"0/{len(groups)}", "iteration": f"{p.iteration + 1}/{iterations}"}
        c.set_status_phase(ost, c.IN_PROGRESS, WorkflowReason.ITERATION_COMPLETED,
                           f"Iteration {p.iteration}/{iterations} completed, starting next", generation=gen)
    elif to_isolate := isolation.eligible_groups(o):
        isolation.begin(ost, o, to_isolate, gen)
    else:
        finalize(ost, iterations, gen, p.now_text)


def _progress(ost: dict, groups: list[dict], p: WorkflowPass, iterations: int, gen) -> None:
    running = sum(1 for g in groups if g.get("phase") == core.RUNNING)
    text = f"Iteration {p.iteration}/{iterations}: {running} groups running"
    if p.blocked:
        c.set_status_phase(ost, c.IN_PROGRESS, WorkflowReason.JOB_SCHEDULING_BLOCKED,
                           (text + "; " + "; ".join(p.blocked))[:1024], generation=gen)
        return
    current = c.reason_of(ost.get("conditions"), c.IN_PROGRESS)
    fresh = current in (WorkflowReason.GROUPS_PARTITIONED, WorkflowReason.ITERATION_COMPLETED, "")
    reason = WorkflowReason.JOB_CREATED if (p.launched and fresh) else WorkflowReason.JOB_RUNNING
    c.set_status_phase(ost, c.IN_PROGRESS, reason, text, generation=gen)


def summary(g: dict) -> dict:
    out = {"name": g["name"], "phase": g.get("phase", core.PENDING)}
    if g.get("jobRef"):
        out["jobName"] = g["jobRef"]["name"]
    for key in ("startTime", "completionTime"):
        if g.get(key):
            out[key] = g[key]
    return out


def _absorb_measurements(st: dict, group: dict, jst: dict, n_groups: int) -> None:
    measured = jst.get("measurements") or {}
    if (figure := outlier_check.headline(measured)) is not None:
        group["headline"] = figure  # the fleet-relative outlier check compares these
    if measured.get("bandwidth"):
        if n_groups <= GROUP_BANDWIDTH_LIMIT:
            group["bandwidth"] = measured["bandwidth"][:64]
        st["bandwidth"] = running_mean(st.get("bandwidth") or [], measured["bandwidth"])
    if measured.get("transport"):
        group["transport"] = measured["transport"]
        seen = st.setdefault("transport", [])
        for t in str(measured["transport"]).split(","):
            if t and t not in seen and len(seen) < 8:
                seen.append(t)
    if not group.get("nodes") and jst.get("nodesRan"):  # Unpinned: where the scheduler put it
        orch = st.setdefault("orchestration", {})
        orch["exercisedNodes"] = sorted(set(orch.get("exercisedNodes") or []) | set(jst["nodesRan"]))


def absorb_job(st: dict, group: dict, outcome: core.GroupOutcome, job: dict | None, iteration: int, n_groups: int,
               pending: list[dict], *, diagnose: bool = False) -> None:
    """Fold a finished group's Job into the Workflow: failed groups and bandwidth now; its
    failed nodes go to ``pending``, merged once per pass (one merge, not one per Job)."""
    jst = dig(job, "status") or {}
    _absorb_measurements(st, group, jst, n_groups)
    if diagnose:
        # a failing diagnose test implicates its group, not each node: only a health
        # detector's finding is node evidence; the planner's verdict names the rest
        pending.extend(n for n in jst.get("failedNodes") or [] if n.get("reason") == c.NodeReason.HARDWARE_FAILURE_DETECTED)
        return
    if jst.get("failedNodes"):
        # A message that only repeats the group's verdict stays on the Job and in
        # failedGroups; node-specific ones (a health detector's finding) are kept.
        pending.extend(
            n if n.get("reason") == c.NodeReason.HARDWARE_FAILURE_DETECTED else {"name": n["name"], "reason": n["reason"]}
            for n in blamed_nodes(jst, list(group.get("nodes") or jst.get("nodesRan") or []))
        )
    if outcome.phase == core.FAILED:
        _record_failed_group(st, group, outcome, jst, iteration)


def _record_failed_group(st: dict, group: dict, outcome: core.GroupOutcome, jst: dict, iteration: int) -> None:
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
        "nodes": list(group.get("nodes") or jst.get("nodesRan") or [])[:GROUP_NODES_LIMIT],
        "reason": (reason or "")[:128] or None,
        "message": (outcome.message or "")[:1024] or None,
        "failureLog": short_log(jst.get("failureLog")),
    }
    failed.append({k: v for k, v in entry.items() if v is not None})


def short_log(log: dict | None) -> dict | None:
    if not log:
        return None
    out = dict(log)
    if out.get("tail"):
        out["tail"] = out["tail"][-FAILED_GROUP_TAIL:]
    return out


def running_mean(current: list[dict], new: list[dict]) -> list[dict]:
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


def finalize(st: dict, iterations: int, generation, now_text: str, note: str = "") -> None:
    verdict = core.final_verdict(st.get("orchestration") or {}, st.get("failedNodes") or [], st.get("failedGroups") or [], iterations)
    message = f"{verdict.message}; {note}"[:1024] if note else verdict.message
    c.set_status_phase(st, verdict.phase, verdict.reason, message, generation=generation)
    if verdict.validation_failed:
        c.set_condition(st.setdefault("conditions", []), c.VALIDATION_FAILED, True, WorkflowReason.JOB_VALIDATION_FAILED,
                        "One or more Jobs failed performance threshold validation", generation=generation)
    st["completionTime"] = now_text
    st["failedNodeCount"] = len({n["name"] for n in st.get("failedNodes") or []})


def apply_plan(o: dict, plan, diagnose_state: dict | None, message: str, now_text: str) -> bool:
    """The first write of a Workflow: its planned groups (and diagnose state); False when
    another pass already planned it (a replay after a 409 conflict plans nothing twice)."""
    st = o.setdefault("status", {})
    orch = st.get("orchestration") or {}
    if orch.get("groups") or orch.get("diagnose"):
        return False
    st["orchestration"] = {**orch, **plan.orchestration}
    st["orchestration"]["groups"] = plan.groups
    if diagnose_state is not None:
        st["orchestration"]["diagnose"] = diagnose_state
    st["startTime"] = st.get("startTime") or now_text
    st["summary"] = {"groups": f"0/{len(plan.groups)}", "iteration": f"1/{plan.iterations}"}
    c.set_status_phase(st, c.IN_PROGRESS, WorkflowReason.GROUPS_PARTITIONED, message, generation=o["metadata"].get("generation"))
    return True


@dataclass(frozen=True)
class IsolationEnd:
    """What folding the isolation child's verdict decided: the summary line and the isolation phase."""

    summary: str
    phase: str


def apply_isolation_end(o: dict, child: dict | None, note: str, now_text: str) -> IsolationEnd | None:
    """Fold the ended isolation child (or ``note`` why there is none) in and decide the
    Workflow; None when the Workflow already moved on (terminal, or no isolation running)."""
    ost = o["status"]
    if c.is_terminal(ost.get("conditions")) or dig(ost, "orchestration", "isolation", "phase") != isolation.RUNNING:
        return None
    summary = isolation.fold(ost, child, note)
    iterations = int(dig(o, "spec", "orchestration", "iterations") or 1)
    finalize(ost, iterations, o["metadata"].get("generation"), now_text, note=summary)
    return IsolationEnd(summary, ost["orchestration"]["isolation"]["phase"])
