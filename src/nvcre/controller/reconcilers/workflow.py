"""Workflow reconciler: one category across node groups and iterations.

A pass checks namespace access, plans the groups once (discovery, platform and GPU
detection, partition), then polls the running groups' Jobs, launches pending groups
(node-disjoint, at most maxConcurrent) and, when an iteration is done, starts the
next or decides. Jobs have deterministic names and are created only if absent, so a
restart never duplicates one; all group bookkeeping goes into one status write.
"""

from __future__ import annotations

import logging

from nvcre.words import count
from nvcre.controller import compose
from nvcre.controller import conditions as c
from nvcre.controller import diagnose
from nvcre.controller import isolation
from nvcre.controller import ledger
from nvcre.controller import labels as L
from nvcre.controller import node_results
from nvcre.controller import plan as planning
from nvcre.controller.access import RUN_ROLEBINDING, missing_message
from nvcre.controller.conditions import WorkflowReason
from nvcre.controller.context import Context, parse_time
from nvcre.controller.decide.workflow_pass import (  # noqa: F401 - re-exported for older importers
    COMPACT_GROUPS,
    FAILED_GROUP_TAIL,
    GROUP_BANDWIDTH_LIMIT,
    MAX_FAILED_GROUPS,
)
from nvcre.controller.decide.workflow_pass import absorb_job as _absorb_job  # noqa: F401
from nvcre.controller.decide.workflow_pass import IsolationEnd, apply_isolation_end, apply_plan
from nvcre.controller.node_results import write_workflow_status
from nvcre.controller.workflow_step import LAUNCH_BATCH  # noqa: F401
from nvcre.controller.workflow_step import job_name as _job_name  # noqa: F401
from nvcre.controller.workflow_step import step as _step
from nvcre.controller.reconcilers.own import forget_object, running_object
from nvcre.controller.runtime.queue import Retry
from nvcre.kube.resources import NVCRE_API_VERSION
from nvcre.objpath import dig

log = logging.getLogger(__name__)


def _planned(wf: dict) -> bool:
    """Its groups (or its diagnose run) are planned: the passes that follow read the cache."""
    orch = dig(wf, "status", "orchestration") or {}
    return bool(orch.get("groups") or orch.get("diagnose"))


def reconcile_workflow(ctx: Context, namespace: str, name: str) -> float | None:
    wf = running_object(ctx, "Workflow", namespace, name, running=_planned)
    if wf is None:
        return None
    status = wf.get("status") or {}
    if c.is_terminal(status.get("conditions")):
        forget_object(ctx, "Workflow", namespace, name, wf["metadata"].get("uid"))
        ref = status.get("failedNodesRef") or {}
        if ref and ctx.kube.get("v1", "ConfigMap", ref.get("name", ""), wf["metadata"]["namespace"]) is None:
            node_results.ensure(ctx, wf)  # a crash came between the terminal write and the ConfigMaps
        if ledger.applies(wf) and not ledger.recorded(wf):
            ledger.record_workflow(ctx, wf)  # what each node proved, kept beyond this run
        return None

    allowed, wait = _check_access(ctx, wf)
    if not allowed:
        return wait

    orch = status.get("orchestration") or {}
    if compose.is_diagnose(wf):
        if not orch.get("diagnose"):
            return _plan(ctx, wf)
        return diagnose.step_diagnose(ctx, wf)
    if dig(orch, "isolation", "phase") == isolation.RUNNING:
        return _step_isolation(ctx, wf)
    if not orch.get("groups"):
        return _plan(ctx, wf)
    return _step(ctx, wf)


# ---------------------------------------------------------------- access
def _check_access(ctx: Context, wf: dict) -> tuple[bool, float | None]:
    """(True, None) when the controller may run the Workflow's workloads in its namespace;
    else (False, when to look again: None once it has failed for good).

    The wait is woken by a RoleBinding change in the namespace (``Controller.observe_bindings``)
    and otherwise returns only at its give-up deadline. Right after such a change a denial
    may be the API server's authorizer not having seen the binding yet: ``Retry`` asks again
    with the key's backoff instead of waiting for the deadline.
    """
    ns = wf["metadata"]["namespace"]
    denied = ctx.access.missing(ns, compose.adapter_of(wf))
    if not denied:
        ctx.waiting_for_access(wf, False)
        if c.reason_of(dig(wf, "status", "conditions"), c.IN_PROGRESS) == WorkflowReason.NAMESPACE_PERMISSIONS_MISSING:
            write_workflow_status(ctx, wf, lambda o: c.set_status_phase(o["status"], c.IN_PROGRESS, WorkflowReason.GROUPS_PARTITIONED, "Namespace permissions granted"))
        return True, None
    message = missing_message(ns, denied)
    created = parse_time(wf["metadata"].get("creationTimestamp")) or ctx.now()
    left = created + ctx.settings.namespace_access_timeout_seconds - ctx.now()
    if left <= 0:
        ctx.waiting_for_access(wf, False)
        write_workflow_status(ctx, wf, lambda o: c.set_status_phase(o["status"], c.FAILED, WorkflowReason.NAMESPACE_PERMISSIONS_MISSING, message))
        return False, None  # failed: no planning from the stale body
    ctx.waiting_for_access(wf, True)
    first = c.reason_of(dig(wf, "status", "conditions"), c.IN_PROGRESS) != WorkflowReason.NAMESPACE_PERMISSIONS_MISSING
    write_workflow_status(ctx, wf, lambda o: c.set_status_phase(o["status"], c.IN_PROGRESS, WorkflowReason.NAMESPACE_PERMISSIONS_MISSING, message))
    if first:
        ctx.events.emit(wf, "Warning", WorkflowReason.NAMESPACE_PERMISSIONS_MISSING, f"create RoleBinding {RUN_ROLEBINDING}: {message}")
    if ctx.access.settling(ns):
        raise Retry(f"namespace {ns}: a RoleBinding just changed and access is still denied", cap=left)
    return False, left  # the give-up deadline


# ---------------------------------------------------------------- planning
def _plan(ctx: Context, wf: dict) -> float | None:
    try:
        plan = planning.plan_workflow(ctx, wf)
    except compose.PlanError as err:
        write_workflow_status(ctx, wf, lambda o: _plan_failed(o["status"], err))
        return None
    n_nodes = len(plan.nodes)
    message = f"Discovered {n_nodes} nodes, partitioned into {len(plan.groups)} groups ({plan.nodes_per_job} nodes/job)"

    diagnose_state = None
    if compose.is_diagnose(wf):
        try:
            diagnose_state = diagnose.start_state(wf, plan)
        except Exception as err:  # too few nodes, a bad policy value: the spec's problem
            write_workflow_status(ctx, wf, lambda o: c.set_status_phase(o["status"], c.FAILED, WorkflowReason.PARTITION_ERROR,
                                                               f"diagnose cannot start: {getattr(err, 'message', err)}"))
            return None
        message = f"Discovered {n_nodes} nodes; diagnose starts with a screening round"

    now_text = ctx.now_text()
    for event_type, reason, note in plan.events:
        ctx.events.emit(wf, event_type, reason, note)
    write_workflow_status(ctx, wf, lambda o: apply_plan(o, plan, diagnose_state, message, now_text))
    return 0.0


def _plan_failed(st: dict, err) -> bool:
    """Failed with the plan's reason; the nodes that could not run are listed with why."""
    if err.excluded:
        orch = st.setdefault("orchestration", {})
        orch["excludedNodes"] = err.excluded
        reasons = sorted({e.get("message") or e["reason"] for e in err.excluded})
        orch["exclusionReason"] = "; ".join(reasons)[:1024]
    c.set_status_phase(st, c.FAILED, err.reason, err.message)
    return True


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
            started = (f"Created Workflow {iso['workflow']}: diagnose over {count(len(iso.get('nodes') or []), 'node')} of "
                       f"{count(len(iso.get('groups') or []), 'group')} that missed a bandwidth threshold")
            ctx.events.emit(wf, "Normal", WorkflowReason.ISOLATING_FAULTS, started)
            _emit_on_owner(ctx, wf, "Normal", "IsolationStarted", started)
            return None  # the child's watch events wake this Workflow
    if child is not None and not L.controlled_by(child, wf):
        child, note = None, f"Workflow {iso['workflow']} exists and is not controlled by Workflow {meta['name']}"
    if child is not None and not c.is_terminal(dig(child, "status", "conditions")):
        return None  # the child's watch events wake this Workflow
    now_text = ctx.now_text()
    ended: list[IsolationEnd] = []

    def mutate(o: dict) -> bool:
        ended[:] = [e for e in [apply_isolation_end(o, child, note, now_text)] if e is not None]
        return bool(ended)

    written = write_workflow_status(ctx, wf, mutate)
    if written is not None and ended:
        sharp = ended[0].phase == isolation.SUCCEEDED
        kind, reason = ("Normal", "FaultsIsolated") if sharp else ("Warning", "IsolationInconclusive")
        ctx.events.emit(written, kind, reason, ended[0].summary)
        _emit_on_owner(ctx, written, kind, reason, f"{meta['name']}: {ended[0].summary}")
    return None


def _emit_on_owner(ctx: Context, wf: dict, event_type: str, reason: str, note: str) -> None:
    """The same Event on the Certification (or WorkloadRun) that owns the Workflow, so
    ``kubectl describe certification`` tells the isolation story too."""
    meta = wf.get("metadata") or {}
    for ref in meta.get("ownerReferences") or []:
        if ref.get("kind") in ("Certification", "WorkloadRun") and ref.get("controller", True):
            owner = {"apiVersion": ref.get("apiVersion", NVCRE_API_VERSION), "kind": ref["kind"],
                     "metadata": {"name": ref["name"], "namespace": meta.get("namespace"), "uid": ref.get("uid")}}
            ctx.events.emit(owner, event_type, reason, note)
            return
