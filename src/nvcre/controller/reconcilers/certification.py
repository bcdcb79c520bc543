"""Certification reconciler: discover targets, then run one Workflow per category, in order.

First pass: validate every category against the catalog, discover the target nodes
(waiting a bounded time for some to appear), create the first category's Workflow
and seed every category's status in one write. Later passes mirror the running
category's Workflow and, when it ends, start the next one. A failed category does
not stop the later ones. The verdict groups results by category; a pass with
excluded nodes is reported INCOMPLETE, not PASSED.
"""

from __future__ import annotations

import logging

from nvcre.controller import compose
from nvcre.controller import conditions as c
from nvcre.controller import ledger
from nvcre.controller import labels as L
from nvcre.controller.reconcilers import report_export
from nvcre.controller.conditions import CertificationReason as R
from nvcre.controller.context import Context, format_time, parse_time, write_status
from nvcre.controller.decide import certification as D
from nvcre.controller.views import certification_status
from nvcre.controller.decide.certification import MAX_CERT_FAILED_NODES  # noqa: F401 - re-exported
from nvcre.controller.reconcilers.own import forget_object, live_object
from nvcre.kube.resources import NVCRE_API_VERSION
from nvcre.objpath import dig

log = logging.getLogger(__name__)


def reconcile_certification(ctx: Context, namespace: str, name: str) -> float | None:
    cert = live_object(ctx, "Certification", namespace, name)
    if cert is None:
        return None
    st = cert.get("status") or {}
    if not st.get("categoryStatuses"):
        if c.is_terminal(st.get("conditions")):
            forget_object(ctx, "Certification", namespace, name, cert["metadata"].get("uid"))
            return None
        return _start(ctx, cert)
    return _advance(ctx, cert)


def _fail(ctx: Context, cert: dict, reason: str, message: str) -> None:
    ctx.waiting(cert, False)
    def mutate(o: dict) -> bool:
        st = o["status"]
        if c.is_terminal(st.get("conditions")):
            return False
        c.set_status_phase(st, c.FAILED, reason, message, generation=o["metadata"].get("generation"))
        st["summary"] = {**(st.get("summary") or {}), "result": "FAILED"}
        return True

    write_status(ctx, cert, mutate)


def _unknown_category(categories: list[dict]) -> str | None:
    from nvcre.catalog.resolve import valid_categories

    known = set(valid_categories())
    for cat in categories:
        key = f"{cat.get('domain')}/{cat.get('variant')}"
        if key not in known:
            return key
    return None


def _wait_for_nodes(ctx: Context, cert: dict, target: dict) -> float | None:
    """No target node yet: InProgress/WaitingForNodes until the deadline, then Failed.

    A Node that joins or changes wakes the Certification (``operator.wake_waiting``), so the
    pass returns the deadline, not a poll; the message names the deadline, so a pass that
    finds nothing new writes nothing.
    """
    created = parse_time(cert["metadata"].get("creationTimestamp")) or ctx.now()
    bound = ctx.settings.waiting_for_nodes_seconds
    left = created + bound - ctx.now()
    if left <= 0:
        _fail(ctx, cert, R.VALIDATION_FAILED, f"No schedulable target nodes were found within {int(bound)}s")
        return None
    ctx.waiting(cert, True)
    message = D.waiting_message(target, compose.include_cordoned(target), format_time(created + bound), bound)
    write_status(ctx, cert, lambda o: c.set_status_phase(o["status"], c.IN_PROGRESS, R.WAITING_FOR_NODES, message))
    return left


def _start(ctx: Context, cert: dict) -> float | None:
    from nvcre.catalog.resolve import canonical_category

    spec = cert.get("spec") or {}
    # the catalog's own names: an alias the user wrote (nccl-all-to-all) is not what objects carry
    categories = [canonical_category(cat) for cat in spec.get("categories") or []]
    if (unknown := _unknown_category(categories)) is not None:
        _fail(ctx, cert, R.CATEGORY_NOT_FOUND, f"Unknown certification category: {unknown}")
        return None
    target = spec.get("target") or {}
    found = compose.discover(compose.gpu_nodes(ctx), target)
    if not found.nodes:
        return _wait_for_nodes(ctx, cert, target)
    ctx.waiting(cert, False)
    adapter = compose.choose_adapter(ctx)
    try:
        resolved = [compose.resolve_certification_category(cert, i, found.platform, found.arch, nodes=found.nodes)
                    for i in range(len(categories))]
    except Exception as err:
        _fail(ctx, cert, compose.certification_reason_for(err), str(getattr(err, "message", err))[:1024])
        return None
    # report exports are registered before any Workflow starts, so none misses its run
    report_export.register(ctx, cert, ctx.settings.controller_namespace)
    workflow = _ensure_workflow(ctx, cert, 0, resolved[0], adapter, total_nodes=len(found.nodes))
    if workflow is None:
        return None
    now_text = ctx.now_text()
    for event_type, reason, note in found.events:
        ctx.events.emit(cert, event_type, reason, note)
    write_status(ctx, cert, lambda o: D.seed_status(o, categories, resolved, workflow, found, now_text))
    return None  # the Workflow's watch events wake its owner


def _ensure_workflow(ctx: Context, cert: dict, index: int, resolved, adapter: str, total_nodes: int | None = None) -> dict | None:
    body = compose.workflow_for_category(ctx, cert, index, resolved, adapter, total_nodes=total_nodes)
    try:
        existing, created = ctx.kube.create(body)
    except Exception as err:
        ctx.events.emit(cert, "Warning", "WorkflowCreationError", f"Failed to create Workflow {body['metadata']['name']}: {err}")
        _fail(ctx, cert, R.WORKFLOW_FAILED, f"Failed to create Workflow {body['metadata']['name']}: {err}")
        return None
    if not L.controlled_by(existing, cert):
        _fail(ctx, cert, R.NAME_COLLISION, f"Workflow {body['metadata']['name']} exists and is not controlled by this Certification")
        return None
    if created:  # once, when the category starts (e.g. GPUArchitectureDefaults)
        for event_type, reason, message in resolved.events:
            ctx.events.emit(cert, event_type, reason, f"{resolved.key}: {message}")
    return existing


def _advance(ctx: Context, cert: dict) -> float | None:
    """Gather the running category's Workflow, decide (``decide_advance``), enact."""
    st = certification_status(cert)
    index = D.current_index(st)
    workflow = None
    if index is not None and st["categoryStatuses"][index].get("status") != "Pending":
        ref = st["categoryStatuses"][index].get("workflowRef") or {}
        workflow = ctx.kube.get(NVCRE_API_VERSION, "Workflow", ref.get("name", ""), ref.get("namespace") or cert["metadata"]["namespace"])
        if workflow is not None and (wait := ledger.wait_for(ctx, workflow)) is not None:
            return wait  # the ledger (and any Regression) is written before the category is decided
    step = D.decide_advance(st, workflow)
    if step.action == D.FINALIZE:
        write_status(ctx, cert, D.apply_final)
        return None
    if step.action == D.START:
        return _start_category(ctx, cert, step.index)
    if step.action == D.MARK:
        return _mark_category(ctx, cert, step.index, step.status, workflow=workflow, message=step.message)
    write_status(ctx, cert, lambda o: D.apply_mirror(o, step.index, step.detail))
    return None  # the Workflow's watch events wake its owner


def _start_category(ctx: Context, cert: dict, index: int) -> float | None:
    """Create category ``index``'s Workflow and mark the category InProgress."""
    from nvcre.catalog.resolve import canonical_category

    st = cert.get("status") or {}
    platform, arch = st.get("platform") or "onprem", st.get("gpuArchitecture") or "unknown"
    try:
        resolved = compose.resolve_certification_category(cert, index, platform, arch)
    except Exception as err:
        return _mark_category(ctx, cert, index, "Failed", message=f"cannot resolve: {getattr(err, 'message', err)}"[:1024])
    workflow = _ensure_workflow(ctx, cert, index, resolved, compose.choose_adapter(ctx), total_nodes=st.get("totalNodes"))
    if workflow is None:
        return None
    cat = canonical_category((dig(cert, "spec", "categories") or [])[index])
    total = len(st.get("categoryStatuses") or [])
    message = f"Created Workflow for category {cat['domain']}/{cat['variant']} ({index + 1} of {total})"
    return _mark_category(ctx, cert, index, "InProgress", workflow=workflow, reason=R.WORKFLOW_CREATED, message=message)


def _mark_category(
    ctx: Context, cert: dict, index: int, status: str, *, workflow: dict | None = None, reason: str | None = None, message: str = ""
) -> float | None:
    cat = (dig(cert, "spec", "categories") or [])[index]
    label = f"{cat['domain']}/{cat['variant']}"
    now_text = ctx.now_text()
    outcome: dict = {}

    def mutate(o: dict) -> bool:
        changed = D.apply_category(o, index, status, workflow=workflow, reason=reason, message=message,
                                   now_text=now_text, label=label)
        if changed and status == "Failed":
            outcome["failed"] = message
        return changed

    written = write_status(ctx, cert, mutate)
    if "failed" in outcome and written is not None:  # the phase stays InProgress (next category); the Event says what happened
        ctx.events.emit(written or cert, "Warning", R.WORKFLOW_FAILED,
                        f"Workflow for category {label} failed" + (f": {outcome['failed']}" if outcome["failed"] else ""))
    return 0.0
