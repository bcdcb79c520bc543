"""Certification reconciler: discover targets, then run one Workflow per category, in order.

First pass: validate every category against the catalog, discover the target nodes
(waiting a bounded time for some to appear), create the first category's Workflow
and seed every category's status in one write. Later passes mirror the running
category's Workflow and, when it ends, start the next one. A failed category does
not stop the later ones. The verdict groups results by category; a pass with
excluded nodes is reported INCOMPLETE, not PASSED.
"""

from __future__ import annotations

import copy
import logging

from nvcre.controller import compose
from nvcre.controller import conditions as c
from nvcre.controller import judging
from nvcre.controller import ledger
from nvcre.controller import labels as L
from nvcre.controller import report_export
from nvcre.controller.conditions import CertificationReason as R
from nvcre.controller.context import Context, parse_time, write_status
from nvcre.kube.resources import NVCRE_API_VERSION
from nvcre.objpath import dig

log = logging.getLogger(__name__)

MAX_CERT_FAILED_NODES = 2048  # names + reasons only; messages stay on the Workflows


def reconcile_certification(ctx: Context, namespace: str, name: str) -> float | None:
    cert = ctx.kube.get(NVCRE_API_VERSION, "Certification", name, namespace)
    if cert is None or cert["metadata"].get("deletionTimestamp"):
        if cert is None:  # deleted while a watch was away (a relist sends no DELETED)
            ctx.cache.drop("Certification", namespace, name)
        return None
    ctx.cache.put(cert)
    st = cert.get("status") or {}
    if not st.get("categoryStatuses"):
        if c.is_terminal(st.get("conditions")):
            return None
        return _start(ctx, cert)
    return _advance(ctx, cert)


def _fail(ctx: Context, cert: dict, reason: str, message: str) -> None:
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
    """No target node yet: InProgress/WaitingForNodes, Failed after the bound."""
    created = parse_time(cert["metadata"].get("creationTimestamp")) or ctx.now()
    waited = ctx.now() - created
    bound = ctx.settings.waiting_for_nodes_seconds
    if waited >= bound:
        _fail(ctx, cert, R.VALIDATION_FAILED, f"No schedulable target nodes were found within {int(bound)}s")
        return None
    selector = ",".join(f"{k}={v}" for k, v in (target.get("nodeSelector") or {}).items()) or "the target"
    lead = "No nodes (including unschedulable) match" if compose.include_cordoned(target) else "No schedulable nodes match"
    message = (
        f"{lead} {selector}; retrying for up to {int(bound - waited)}s more. "
        "Nodes that are cordoned or unschedulable do not count."
    )
    write_status(ctx, cert, lambda o: c.set_status_phase(o["status"], c.IN_PROGRESS, R.WAITING_FOR_NODES, message))
    return min(5.0, ctx.settings.resync_seconds)


def _seed_status(o: dict, categories: list[dict], resolved: list, workflow: dict, found, now_text: str) -> bool:
    """The first write: every category Pending but the first, which has its Workflow."""
    st = o["status"]
    if st.get("categoryStatuses"):
        return False
    excluded = [{"name": e["name"], "reason": e["reason"]} for e in found.excluded]
    entries = []
    for cat, res in zip(categories, resolved):
        entry = {"domain": cat["domain"], "variant": cat["variant"], "status": "Pending", "testScale": res.test_scale}
        if res.nodes_per_job:
            entry["nodesPerJob"] = res.nodes_per_job
        entries.append(entry)
    entries[0]["status"] = "InProgress"
    entries[0]["workflowRef"] = {"name": workflow["metadata"]["name"], "namespace": o["metadata"]["namespace"]}
    entries[0]["startTime"] = now_text
    st["categoryStatuses"] = entries
    st["platform"] = found.platform
    st["gpuArchitecture"] = found.arch
    st["totalNodes"] = len(found.nodes)
    if resolved and resolved[0].extra.get("inferredHardware"):
        st["inferredHardware"] = resolved[0].extra["inferredHardware"]
    if excluded:
        st["excludedNodes"] = excluded
    st["summary"] = _summary(entries, [], excluded)
    c.set_status_phase(
        st, c.IN_PROGRESS, R.WORKFLOW_CREATED,
        f"Created Workflow for category {categories[0]['domain']}/{categories[0]['variant']} (1 of {len(categories)})",
        generation=o["metadata"].get("generation"),
    )
    return True


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
    write_status(ctx, cert, lambda o: _seed_status(o, categories, resolved, workflow, found, now_text))
    return ctx.settings.resync_seconds


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


def _summary(entries: list[dict], failed_nodes: list[dict], excluded: list[dict]) -> dict:
    done = [e for e in entries if e.get("status") in ("Succeeded", "Failed")]
    passed = sum(1 for e in entries if e.get("status") == "Succeeded")
    failed = sum(1 for e in entries if e.get("status") == "Failed")
    if len(done) < len(entries):
        result = "RUNNING"
    elif failed:
        result = "FAILED"
    elif judging.not_judged(entries):
        result = "NOT JUDGED"
    else:
        result = "INCOMPLETE" if excluded else "PASSED"
    return {
        "categoriesPassed": f"{passed}/{len(entries)}",
        "categoriesFailed": failed,
        "failedNodeCount": len({n["name"] for n in failed_nodes}),
        "excludedNodeCount": len(excluded),
        "result": result,
    }


def _advance(ctx: Context, cert: dict) -> float | None:
    st = cert.get("status") or {}
    entries = st.get("categoryStatuses") or []
    from nvcre.catalog.resolve import canonical_category

    spec = cert.get("spec") or {}
    categories = [canonical_category(cat) for cat in spec.get("categories") or []]
    ns = cert["metadata"]["namespace"]

    index = next((i for i, e in enumerate(entries) if e.get("status") not in ("Succeeded", "Failed")), None)
    if index is None:
        return _finalize(ctx, cert)
    entry = entries[index]
    if entry.get("status") == "Pending":
        platform, arch = st.get("platform") or "onprem", st.get("gpuArchitecture") or "unknown"
        try:
            resolved = compose.resolve_certification_category(cert, index, platform, arch)
        except Exception as err:
            return _mark_category(ctx, cert, index, "Failed", message=f"cannot resolve: {getattr(err, 'message', err)}"[:1024])
        workflow = _ensure_workflow(ctx, cert, index, resolved, compose.choose_adapter(ctx), total_nodes=st.get("totalNodes"))
        if workflow is None:
            return None
        cat = categories[index]
        message = f"Created Workflow for category {cat['domain']}/{cat['variant']} ({index + 1} of {len(entries)})"
        return _mark_category(ctx, cert, index, "InProgress", workflow=workflow, reason=R.WORKFLOW_CREATED, message=message)

    ref = entry.get("workflowRef") or {}
    wf = ctx.kube.get(NVCRE_API_VERSION, "Workflow", ref.get("name", ""), ref.get("namespace") or ns)
    if wf is None:
        return _mark_category(ctx, cert, index, "Failed", message=f"Workflow for category {entry['domain']}/{entry['variant']} not found")
    wst = wf.get("status") or {}
    conds = wst.get("conditions") or []
    if (wait := ledger.wait_for(ctx, wf)) is not None:
        return wait  # the ledger (and any Regression) is written before the category is decided
    if c.is_true(conds, c.FAILED):
        return _mark_category(ctx, cert, index, "Failed", workflow=wf, message=c.message_of(conds, c.FAILED))
    if c.is_true(conds, c.SUCCEEDED):
        return _mark_category(ctx, cert, index, "Succeeded", workflow=wf)
    # still running: mirror the blocked detail so `kubectl get` shows why it waits
    detail = c.message_of(conds, c.IN_PROGRESS) if c.reason_of(conds, c.IN_PROGRESS) == "JobSchedulingBlocked" else None

    def mutate(o: dict) -> bool:
        ost = o["status"]
        cur = (ost.get("categoryStatuses") or [])[index]
        before = copy.deepcopy(ost)
        if detail:
            cur["statusDetail"] = detail[:1024]
        else:
            cur.pop("statusDetail", None)
        if c.phase_of(ost.get("conditions")) != c.IN_PROGRESS:
            c.set_status_phase(ost, c.IN_PROGRESS, R.WORKFLOW_RUNNING, "Certification in progress")
        return ost != before

    write_status(ctx, cert, mutate)
    return ctx.settings.resync_seconds


def _fold_finished(ost: dict, cur: dict, workflow: dict | None, status: str, message: str, now_text: str) -> None:
    """A category's Workflow ended: its results into the category entry and the Certification."""
    from nvcre.controller import judging

    wst = dig(workflow, "status") or {}
    cur["completionTime"] = now_text
    cur.pop("statusDetail", None)
    for key in ("succeededNodesRef", "failedNodesRef"):  # the node-result ConfigMaps
        if wst.get(key):
            cur[key] = wst[key]
    orch = wst.get("orchestration") or {}
    if orch.get("nodesPerJob"):
        cur["nodesPerJob"] = orch["nodesPerJob"]
    if orch.get("totalGroups") is not None:
        cur["jobs"] = int(orch["totalGroups"]) * max(1, int(orch.get("completedIterations") or 0) or int(orch.get("currentIteration") or 1))
    failed = wst.get("failedNodes") or []
    cur["failedNodeCount"] = len({n["name"] for n in failed})
    if c.is_true(wst.get("conditions"), c.VALIDATION_FAILED):
        cur["validationFailed"] = True
    if status == "Failed" and message:
        cur["message"] = message[:1024]
    cur.update(judging.category_fields(workflow))
    merged, _ = c.merge_failed_nodes(ost.get("failedNodes"), [{"name": n["name"], "reason": n["reason"]} for n in failed])
    ost["failedNodes"] = merged[:MAX_CERT_FAILED_NODES]
    if orch.get("excludedNodes"):
        have = {e["name"] for e in ost.get("excludedNodes") or []}
        extra = [e for e in orch["excludedNodes"] if e["name"] not in have]
        if extra:
            ost["excludedNodes"] = sorted((ost.get("excludedNodes") or []) + extra, key=lambda e: e["name"])


def _mark_category(
    ctx: Context, cert: dict, index: int, status: str, *, workflow: dict | None = None, reason: str | None = None, message: str = ""
) -> float | None:
    cats = dig(cert, "spec", "categories") or []
    cat = cats[index]
    now_text = ctx.now_text()
    wst = dig(workflow, "status") or {}

    def mutate(o: dict) -> bool:
        ost = o["status"]
        entries = ost.get("categoryStatuses") or []
        cur = entries[index]
        if cur.get("status") == status and status != "InProgress":
            return False
        before = copy.deepcopy(ost)
        cur["status"] = status
        if workflow is not None:
            cur["workflowRef"] = {"name": workflow["metadata"]["name"], "namespace": o["metadata"]["namespace"]}
        if status == "InProgress":
            cur["startTime"] = cur.get("startTime") or now_text
            c.set_status_phase(ost, c.IN_PROGRESS, reason or R.WORKFLOW_CREATED, message, generation=o["metadata"].get("generation"))
        else:
            _fold_finished(ost, cur, workflow, status, message, now_text)
            verb = "succeeded" if status == "Succeeded" else "failed"
            c.set_status_phase(
                ost, c.IN_PROGRESS, R.WORKFLOW_RUNNING,
                f"Workflow for category {cat['domain']}/{cat['variant']} {verb}, advancing to next category",
                generation=o["metadata"].get("generation"),
            )
        ost["summary"] = _summary(entries, ost.get("failedNodes") or [], ost.get("excludedNodes") or [])
        changed = ost != before
        if changed and status == "Failed":
            outcome["failed"] = message
        return changed

    outcome: dict = {}
    written = write_status(ctx, cert, mutate)
    if "failed" in outcome and written is not None:  # the phase stays InProgress (next category); the Event says what happened
        ctx.events.emit(written or cert, "Warning", R.WORKFLOW_FAILED,
                        f"Workflow for category {cat['domain']}/{cat['variant']} failed"
                        + (f": {outcome['failed']}" if outcome["failed"] else ""))
    return 0.0


def _failed_message(entries: list[dict]) -> str:
    """"One or more certification categories failed: <category> (<why>); ...": the why of each."""
    why = [f"{e['domain']}/{e['variant']}" + (f" ({e['message']})" if e.get("message") else "")
           for e in entries if e.get("status") == "Failed"]
    return ("One or more certification categories failed: " + "; ".join(why))[:2048]


def _finalize(ctx: Context, cert: dict) -> float | None:
    def mutate(o: dict) -> bool:
        ost = o["status"]
        entries = ost.get("categoryStatuses") or []
        if any(e.get("status") not in ("Succeeded", "Failed") for e in entries):
            return False
        before = copy.deepcopy(ost)
        gen = o["metadata"].get("generation")
        if any(e.get("status") == "Failed" for e in entries):
            c.set_status_phase(ost, c.FAILED, R.WORKFLOW_FAILED, _failed_message(entries), generation=gen)
        else:
            c.set_status_phase(ost, c.SUCCEEDED, R.ALL_SUCCEEDED, "All certification categories completed successfully", generation=gen)
        ost["summary"] = _summary(entries, ost.get("failedNodes") or [], ost.get("excludedNodes") or [])
        return ost != before

    write_status(ctx, cert, mutate)
    return None
