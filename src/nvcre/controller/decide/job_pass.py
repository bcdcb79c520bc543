"""One Job pass as data: what the gathered state says, and how it lands in the status.

``JobPass`` is the decision of one reconcile pass of a running Job (clock updates,
nodes ran on, unhealthy nodes, the terminal verdict or the in-progress reason);
``apply_pass`` writes it into a status dict and is safe to replay on a fresh copy
after a 409 conflict: it only moves forward, never undoes a terminal phase.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from nvcre.controller import conditions as c
from nvcre.controller import workload_state as ws
from nvcre.controller.conditions import JobReason, NodeReason

MESSAGE_ENTRIES = 32  # a group verdict repeats its message on this many node entries, the rest carry name and reason
MESSAGE_LIMIT = 1024
BLAME_ENTRIES = 512  # a group verdict lists this many nodes; failedNodeCount counts them all


@dataclass(frozen=True)
class Terminal:
    phase: str
    reason: str
    message: str
    blame_group: bool = True  # name every group node (WorkloadFailed) unless a node was named more precisely


@dataclass
class JobPass:
    """Everything one pass decided; the reconciler writes it with ``apply_pass``."""

    clock_updates: dict = field(default_factory=dict)
    ran: list[str] = field(default_factory=list)
    sick: dict[str, str] = field(default_factory=dict)
    group: list[str] = field(default_factory=list)
    terminal: Terminal | None = None
    failure_log: dict | None = None
    pod_logs: list[dict] | None = None  # a WorkloadRun's Job: every pod's tail, read before the cleanup
    job_fields: dict | None = None  # measurement fields of the final reading
    verdict: object | None = None  # a thresholds decision (nvcre.measure.thresholds)
    blocked_message: str | None = None
    running: bool = False
    label: str = "workload"
    first_start: str | None = None
    health_error: tuple[str, str] | None = None  # (reason, message): detectors that could not be evaluated


def blame(status: dict, nodes: list[str], reason: str, message: str) -> None:
    """Name every group node, only when no node was named more precisely before.

    The verdict is the group's, the same for every node, so a large group keeps it
    compact: the message on the first ``MESSAGE_ENTRIES`` entries, the first
    ``BLAME_ENTRIES`` nodes listed and ``failedNodeCount`` counting all of them; the rest
    of a uniform group verdict is the group itself (``blamed_nodes`` expands it), so a
    failed 4096-node group stays far below the object size limit.
    """
    if status.get("failedNodes") or not nodes:
        return
    text = message[:MESSAGE_LIMIT]
    ordered = sorted(set(nodes))
    entries = [{"name": n, "reason": reason, **({"message": text} if i < MESSAGE_ENTRIES else {})}
               for i, n in enumerate(ordered[:BLAME_ENTRIES])]
    status["failedNodes"], _ = c.merge_failed_nodes(status.get("failedNodes"), entries)
    status["failedNodeCount"] = len(ordered)


def blamed_nodes(job_status: dict, group: list[str]) -> list[dict]:
    """A Job's failed nodes in full: the listed entries plus, when the list was cut (a
    uniform group verdict, see ``blame``), the rest of the group with the same reason."""
    listed = list(job_status.get("failedNodes") or [])
    named = {n.get("name") for n in listed}
    count = int(job_status.get("failedNodeCount") or 0)
    reasons = {n.get("reason") for n in listed}
    if count <= len(named) or len(reasons) != 1:
        return listed
    reason = reasons.pop()
    return listed + [{"name": n, "reason": reason} for n in sorted(set(group)) if n not in named]


def apply_verdict(status: dict, decision, nodes: list[str], generation) -> None:
    conds = status.setdefault("conditions", [])
    c.set_condition(conds, c.VALIDATION_FAILED, decision.failed, decision.reason, decision.message, generation=generation)
    evals = [e.to_dict() for e in decision.evaluations]
    if evals:
        status["measurements"] = {**(status.get("measurements") or {}), "thresholds": evals}
    if decision.failed:
        blame(status, nodes, NodeReason.THRESHOLD_VIOLATION, decision.message)


def newly_sick(status: dict, sick: dict[str, str]) -> set[str]:
    known = {n["name"] for n in status.get("failedNodes") or [] if n.get("reason") == NodeReason.HARDWARE_FAILURE_DETECTED}
    return set(sick) - known


def health_entries(listed: list[dict] | None, sick: dict[str, str]) -> list[dict]:
    """Entries for nodes the health check found sick. Each node is listed (its own verdict),
    but only the first ``MESSAGE_ENTRIES`` of them carry their message: a fleet-wide event
    (4096 NotReady nodes, 1 KiB each) would otherwise push the Job past the object limit."""
    known = [n for n in listed or [] if n.get("reason") == NodeReason.HARDWARE_FAILURE_DETECTED]
    room = MESSAGE_ENTRIES - sum(1 for n in known if n.get("message"))
    seen = {n.get("name") for n in known}
    out = []
    for name, message in sorted(sick.items()):
        if name in seen:
            continue
        entry = {"name": name, "reason": NodeReason.HARDWARE_FAILURE_DETECTED}
        if room > 0 and message:
            entry["message"] = message[:MESSAGE_LIMIT]
            room -= 1
        out.append(entry)
    return out


def _record_health(st: dict, sick: dict[str, str], gen) -> None:
    if not sick:
        return
    st["failedNodes"], added = c.merge_failed_nodes(st.get("failedNodes"), health_entries(st.get("failedNodes"), sick))
    if added:
        st["failedNodeCount"] = len({n["name"] for n in st["failedNodes"]})
        names = sorted(sick)
        shown = " ".join(names[:MESSAGE_ENTRIES]) + (f" and {len(names) - MESSAGE_ENTRIES} more" if len(names) > MESSAGE_ENTRIES else "")
        c.set_condition(st.setdefault("conditions", []), c.HARDWARE_FAILED, True, JobReason.HARDWARE_FAILURE_DETECTED,
                        f"Hardware failure detected on node(s): [{shown}]", generation=gen)


def _apply_terminal(st: dict, p: JobPass, gen) -> None:
    t = p.terminal
    if not st.get("workloadStartTime") and p.first_start:
        st["workloadStartTime"] = p.first_start  # it ran and ended between two looks
    c.set_status_phase(st, t.phase, t.reason, t.message, generation=gen)
    if p.failure_log is not None:
        st.setdefault("failureLog", p.failure_log)
    if p.pod_logs:
        st.setdefault("podLogs", p.pod_logs)
    if t.phase == c.FAILED and t.blame_group:
        blame(st, p.group or p.ran or st.get("nodesRan") or [], NodeReason.WORKLOAD_FAILED, t.message)
    if p.job_fields:
        st["measurements"] = {**(st.get("measurements") or {}), **p.job_fields}
    if p.verdict is not None:
        apply_verdict(st, p.verdict, p.group or p.ran, gen)


def _apply_in_progress(st: dict, p: JobPass, gen) -> None:
    if p.blocked_message:
        reason, message = JobReason.WORKLOAD_SCHEDULING_BLOCKED, p.blocked_message
    elif p.running:
        reason, message = JobReason.WORKLOAD_RUNNING, f"Workload {p.label} is running"
    else:
        current = c.reason_of(st.get("conditions"), c.IN_PROGRESS)
        if current in (JobReason.WORKLOAD_CREATED, JobReason.WORKLOAD_ADOPTED):
            reason, message = current, c.message_of(st.get("conditions"), c.IN_PROGRESS)
        else:
            reason, message = JobReason.WORKLOAD_PENDING, f"Workload {p.label} is pending"
    c.set_status_phase(st, c.IN_PROGRESS, reason, message, generation=gen)


def apply_pass(obj: dict, p: JobPass) -> bool:
    """Write the pass into ``obj['status']``; False when nothing changed or it is already decided."""
    st = obj.setdefault("status", {})
    if c.is_terminal(st.get("conditions")):
        return False  # an earlier pass already decided
    gen = obj["metadata"].get("generation")
    before = repr(st)
    for key, value in p.clock_updates.items():
        if value is None:
            st.pop(key, None)
        else:
            st[key] = value
    _record_health(st, p.sick, gen)
    if p.health_error is not None:
        conds = st.setdefault("conditions", [])
        if c.message_of(conds, c.HEALTH_CHECK_ERROR) != p.health_error[1]:
            c.set_condition(conds, c.HEALTH_CHECK_ERROR, True, p.health_error[0], p.health_error[1], generation=gen)
    if p.terminal is not None:
        _apply_terminal(st, p, gen)
    else:
        _apply_in_progress(st, p, gen)
    changed = repr(st) != before
    return _record_ran(st, p, changed) or changed


def _record_ran(st: dict, p: JobPass, changed: bool) -> bool:
    """Merge the nodes the pods ran on into ``nodesRan``; True when that wrote something.

    A pinned group's pods run on its nodes (anywhere else ends the Job as placed off its
    group, a write of its own), so its ``nodesRan`` rides along with a write that happens
    anyway: while 4096 pods were being placed, writing each pass's few new nodes meant a
    322 KiB status write a second. An Unpinned Job's nodes are only known from here (its
    node events reach it through them): they are written at once.
    """
    if not p.ran or (p.group and not changed):
        return False
    merged = sorted(set(st.get("nodesRan") or []) | set(p.ran))
    if merged == st.get("nodesRan"):
        return False
    st["nodesRan"] = merged
    return True


def running(phase: ws.WorkloadPhase) -> bool:
    return phase.phase == ws.RUNNING
