"""A Certification pass as data: which category to act on, and how its status changes.

The reconciler gathers the running category's Workflow (and waits for its ledger
write), calls ``decide_advance`` and enacts the ``CertificationStep``: create the next
category's Workflow, or write one of the ``apply_*`` functions below. Each apply is
a pure edit of a fresh status copy that refuses (returns False) when the status has
already moved on, so replaying it after a 409 conflict never decides a category twice.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

from nvcre.controller import conditions as c
from nvcre.controller import judging
from nvcre.controller.conditions import CertificationReason as R
from nvcre.controller.views import CertificationStatusView, workflow_status

MAX_CERT_FAILED_NODES = 2048  # names + reasons only; messages stay on the Workflows
FINALIZE, START, MARK, MIRROR = "finalize", "start", "mark", "mirror"
DONE = ("Succeeded", "Failed")


@dataclass(frozen=True)
class CertificationStep:
    """``action``: FINALIZE (every category ended), START (create category ``index``'s
    Workflow), MARK (category ``index`` ended as ``status`` with ``message``) or MIRROR
    (still running; show ``detail`` on the category)."""

    action: str
    index: int = -1
    status: str = ""
    message: str = ""
    detail: str | None = None


def current_index(status: CertificationStatusView) -> int | None:
    """The first category that has not ended (None: all have)."""
    entries = status.get("categoryStatuses") or []
    return next((i for i, e in enumerate(entries) if e.get("status") not in DONE), None)


def decide_advance(status: CertificationStatusView, workflow: dict | None) -> CertificationStep:
    """The next step for a started Certification; ``workflow``: the running category's, as read."""
    index = current_index(status)
    if index is None:
        return CertificationStep(FINALIZE)
    entry = status["categoryStatuses"][index]
    if entry.get("status") == "Pending":
        return CertificationStep(START, index)
    if workflow is None:
        return CertificationStep(MARK, index, "Failed",
                                 f"Workflow for category {entry['domain']}/{entry['variant']} not found")
    conds = workflow_status(workflow).get("conditions") or []
    if c.is_true(conds, c.FAILED):
        return CertificationStep(MARK, index, "Failed", c.message_of(conds, c.FAILED))
    if c.is_true(conds, c.SUCCEEDED):
        return CertificationStep(MARK, index, "Succeeded")
    # still running: mirror the blocked detail so `kubectl get` shows why it waits
    blocked = c.reason_of(conds, c.IN_PROGRESS) == "JobSchedulingBlocked"
    return CertificationStep(MIRROR, index, detail=c.message_of(conds, c.IN_PROGRESS) if blocked else None)


def summary(entries: list[dict], failed_nodes: list[dict], excluded: list[dict]) -> dict:
    done = [e for e in entries if e.get("status") in DONE]
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


def seed_status(o: dict, categories: list[dict], resolved: list, workflow: dict, found, now_text: str) -> bool:
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
    st["summary"] = summary(entries, [], excluded)
    c.set_status_phase(
        st, c.IN_PROGRESS, R.WORKFLOW_CREATED,
        f"Created Workflow for category {categories[0]['domain']}/{categories[0]['variant']} (1 of {len(categories)})",
        generation=o["metadata"].get("generation"),
    )
    return True


def fold_finished(ost: dict, cur: dict, workflow: dict | None, status: str, message: str, now_text: str) -> None:
    """A category's Workflow ended: its results into the category entry and the Certification."""
    wst = workflow_status(workflow)
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


def apply_category(o: dict, index: int, status: str, *, workflow: dict | None, reason: str | None, message: str,
                   now_text: str, label: str) -> bool:
    """Category ``index`` (``label``: domain/variant as the spec names it) started (InProgress)
    or ended; False when already so."""
    ost = o["status"]
    entries = ost.get("categoryStatuses") or []
    cur = entries[index]
    if cur.get("status") == status and status != "InProgress":
        return False
    before = copy.deepcopy(ost)
    cur["status"] = status
    gen = o["metadata"].get("generation")
    if workflow is not None:
        cur["workflowRef"] = {"name": workflow["metadata"]["name"], "namespace": o["metadata"]["namespace"]}
    if status == "InProgress":
        cur["startTime"] = cur.get("startTime") or now_text
        c.set_status_phase(ost, c.IN_PROGRESS, reason or R.WORKFLOW_CREATED, message, generation=gen)
    else:
        fold_finished(ost, cur, workflow, status, message, now_text)
        verb = "succeeded" if status == "Succeeded" else "failed"
        c.set_status_phase(ost, c.IN_PROGRESS, R.WORKFLOW_RUNNING,
                           f"Workflow for category {label} {verb}, advancing to next category",
                           generation=gen)
    ost["summary"] = summary(entries, ost.get("failedNodes") or [], ost.get("excludedNodes") or [])
    return ost != before


def apply_mirror(o: dict, index: int, detail: str | None) -> bool:
    """A running category shows why its Workflow waits (or nothing, once it no longer does)."""
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


def failed_message(entries: list[dict]) -> str:
    """"One or more certification categories failed: <category> (<why>); ...": the why of each."""
    why = [f"{e['domain']}/{e['variant']}" + (f" ({e['message']})" if e.get("message") else "")
           for e in entries if e.get("status") == "Failed"]
    return ("One or more certification categories failed: " + "; ".join(why))[:2048]


def apply_final(o: dict) -> bool:
    """Every category ended: the verdict; False while one still runs or nothing changed."""
    ost = o["status"]
    entries = ost.get("categoryStatuses") or []
    if any(e.get("status") not in DONE for e in entries):
        return False
    before = copy.deepcopy(ost)
    gen = o["metadata"].get("generation")
    if any(e.get("status") == "Failed" for e in entries):
        c.set_status_phase(ost, c.FAILED, R.WORKFLOW_FAILED, failed_message(entries), generation=gen)
    else:
        c.set_status_phase(ost, c.SUCCEEDED, R.ALL_SUCCEEDED, "All certification categories completed successfully", generation=gen)
    ost["summary"] = summary(entries, ost.get("failedNodes") or [], ost.get("excludedNodes") or [])
    return ost != before


def waiting_message(target: dict, include_cordoned: bool, deadline_text: str, bound: float) -> str:
    """What a Certification waiting for target nodes says: the selector and until when it
    waits. It names the deadline, not the seconds left, so it does not change while it waits
    (a countdown would rewrite the status on every look)."""
    selector = ",".join(f"{k}={v}" for k, v in (target.get("nodeSelector") or {}).items()) or "the target"
    lead = "No nodes (including unschedulable) match" if include_cordoned else "No schedulable nodes match"
    return (f"{lead} {selector}; retrying as nodes join or change until {deadline_text} "
            f"({int(bound)}s after creation), then failing. Nodes that are cordoned or unschedulable do not count.")
