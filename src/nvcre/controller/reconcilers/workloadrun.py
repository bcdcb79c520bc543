"""WorkloadRun reconciler: a user's image and framework (mpi, torch, exec) as a Workflow.

The run is resolved like a catalog category (``resolve_workloadrun``) and becomes one
Workflow named after the run; from there the Workflow and Job reconcilers do the
work. The run mirrors its Workflow's verdict, with the same exclusive conditions
and reasons as the other tiers.
"""

from __future__ import annotations

import copy

from nvcre.controller import compose
from nvcre.controller import conditions as c
from nvcre.controller import labels as L
from nvcre.controller.conditions import WorkloadRunReason as R
from nvcre.controller.context import Context, write_status
from nvcre.controller.runtime.queue import Retry
from nvcre.controller.reconcilers.own import forget_object, live_object
from nvcre.kube.resources import NVCRE_API_VERSION
from nvcre.objpath import dig


def reconcile_workloadrun(ctx: Context, namespace: str, name: str) -> float | None:
    run = live_object(ctx, "WorkloadRun", namespace, name)
    if run is None:
        return None
    st = run.get("status") or {}
    if c.is_terminal(st.get("conditions")):
        forget_object(ctx, "WorkloadRun", namespace, name, run["metadata"].get("uid"))
        return None
    if st.get("workflowRef"):
        return _mirror(ctx, run)
    return _create(ctx, run)


def _fail(ctx: Context, run: dict, reason: str, message: str) -> None:
    ctx.waiting(run, False)
    write_status(ctx, run, lambda o: c.set_status_phase(o["status"], c.FAILED, reason, message, generation=o["metadata"].get("generation")))


def _create(ctx: Context, run: dict) -> float | None:
    from nvcre.catalog.resolve import resolve_workloadrun

    spec = run.get("spec") or {}
    target = spec.get("target") or {}
    found = compose.discover(compose.gpu_nodes(ctx), target)
    ctx.waiting(run, not found.nodes)
    if not found.nodes:  # a Node that joins or changes wakes it (operator.wake_waiting); a run has no deadline
        write_status(ctx, run, lambda o: c.set_status_phase(o["status"], c.IN_PROGRESS, "WaitingForNodes", "No schedulable GPU nodes match the target"))
        return None
    try:
        resolved = resolve_workloadrun(run, platform=found.platform, gpu_arch=found.arch)
    except Exception as err:
        _fail(ctx, run, R.BUILD_FAILED, str(getattr(err, "message", err))[:1024])
        return None
    adapter = compose.choose_adapter(ctx)
    body = compose.workflow_for_run(run, resolved, adapter)
    try:
        existing, created = ctx.kube.create(body)
    except Exception as err:
        ctx.events.emit(run, "Warning", "WorkflowCreationError", f"Failed to create Workflow {body['metadata']['name']}: {err}")
        raise Retry(f"Workflow {body['metadata']['name']} not created: {err}") from err
    if not L.controlled_by(existing, run):
        _fail(ctx, run, R.WORKFLOW_FAILED, f"Workflow {body['metadata']['name']} exists and is not controlled by this WorkloadRun")
        return None
    if created:
        for event_type, reason, message in resolved.events:
            ctx.events.emit(run, event_type, reason, message)

    def mutate(o: dict) -> bool:
        ost = o["status"]
        if ost.get("workflowRef"):
            return False
        ost["workflowRef"] = {"name": existing["metadata"]["name"], "namespace": o["metadata"]["namespace"]}
        ost["detectedPlatform"] = found.platform
        ost["detectedGPUArchitecture"] = found.arch
        ost["resolvedGpusPerNode"] = resolved.gpus_per_node
        c.set_status_phase(ost, c.IN_PROGRESS, R.WORKFLOW_CREATED, f"Workflow {existing['metadata']['name']} created",
                           generation=o["metadata"].get("generation"))
        return True

    write_status(ctx, run, mutate)
    return None  # the Workflow's watch events wake its owner


def _mirror(ctx: Context, run: dict) -> float | None:
    ref = dig(run, "status", "workflowRef") or {}
    wf = ctx.kube.get(NVCRE_API_VERSION, "Workflow", ref.get("name", ""), ref.get("namespace") or run["metadata"]["namespace"])
    if wf is None:
        _fail(ctx, run, R.WORKFLOW_DELETED, "Workflow was deleted")
        return None
    wst = wf.get("status") or {}
    conds = wst.get("conditions") or []

    def mutate(o: dict) -> bool:
        ost = o["status"]
        before = copy.deepcopy(ost)
        gen = o["metadata"].get("generation")
        exercised = dig(wst, "orchestration", "exercisedNodes")
        if exercised:
            ost["exercisedNodeCount"] = len(exercised)
        for key in ("succeededNodesRef", "failedNodesRef"):  # the node-result ConfigMaps
            if wst.get(key):
                ost[key] = wst[key]
        if wst.get("failedNodes"):
            ost["failedNodes"] = [{"name": n["name"], "reason": n["reason"]} for n in wst["failedNodes"]][:2048]
            ost["failedNodeCount"] = len({n["name"] for n in wst["failedNodes"]})
        if c.is_true(conds, c.VALIDATION_FAILED):
            c.set_condition(ost.setdefault("conditions", []), c.VALIDATION_FAILED, True, R.THRESHOLD_VIOLATION,
                            c.message_of(conds, c.VALIDATION_FAILED), generation=gen)
        if c.is_true(conds, c.FAILED):
            reason = R.WORKFLOW_VALIDATION_FAILED if c.reason_of(conds, c.FAILED) == "JobValidationFailed" else R.WORKFLOW_FAILED
            c.set_status_phase(ost, c.FAILED, reason, c.message_of(conds, c.FAILED), generation=gen)
        elif c.is_true(conds, c.SUCCEEDED):
            c.set_status_phase(ost, c.SUCCEEDED, R.WORKFLOW_SUCCEEDED, "Workflow completed successfully", generation=gen)
        return ost != before

    write_status(ctx, run, mutate)
    return None  # terminal, or the Workflow's next watch event wakes its owner
