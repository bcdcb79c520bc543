"""How a workload's end turns into a Job verdict: who is to blame, and when to write it.

Two rules the plain "the launcher failed, so the group failed" reading gets wrong:

* A launcher that fails while some of its workers never started (unschedulable,
  still pulling the image, not even created) did not find a node fault: it ran out of
  waiting. The verdict is ``WorkloadSchedulingBlocked`` and names no node, as a
  timeout while unschedulable does; slow scheduling on a real cluster must never
  read as node failures.
* The verdict is written once the last pod has ended (its exit code and log are part
  of the evidence), not while pods still run; a pod that does not end within
  ``settle_seconds`` of the workload's end does not hold the verdict back longer.
  A pod has ended when its containers have terminated for good (``workload_state.pod_ended``),
  even if the kubelet has not posted the pod's phase yet (it does so in a later status update: waiting for it
  would add one status round trip to every decision). While pods still run, the
  next look is the settle deadline: their ends arrive as watch events.
"""

from __future__ import annotations

from dataclasses import dataclass

from nvcre.controller import workload_state as ws
from nvcre.controller.conditions import JobReason
from nvcre.timefmt import parse_time
from nvcre.objpath import dig

SETTLE_SECONDS = 30.0


@dataclass(frozen=True)
class EndDecision:
    """``wait``: look again in ``wait_seconds`` at the latest (the settle deadline; pod events
    come sooner); else the terminal (phase, reason, message)."""

    wait: bool
    phase: str = ""
    reason: str = ""
    message: str = ""
    blame_group: bool = True  # a WorkloadFailed verdict names every node of the group
    wait_seconds: float = 0.0


def _started(pod: dict) -> bool:
    for cs in dig(pod, "status", "containerStatuses") or []:
        state = cs.get("state") or {}
        if state.get("running") or state.get("terminated") or cs.get("lastState", {}).get("terminated"):
            return True
    return dig(pod, "status", "phase") in ("Running", "Succeeded", "Failed")


def _live(pod: dict) -> bool:
    return dig(pod, "status", "phase") in ("Pending", "Running", None) and _started(pod) and ws.pod_ended(pod) is None


def _waiting_reason(pod: dict) -> str:
    """Why a pod has not started: the scheduler's message or the container's waiting reason."""
    if not dig(pod, "spec", "nodeName"):
        for cond in dig(pod, "status", "conditions") or []:
            if cond.get("type") == "PodScheduled" and cond.get("status") == "False":
                return f"unscheduled ({cond.get('reason') or 'Pending'}: {cond.get('message') or ''})".strip()
        return "not scheduled yet"
    for cs in dig(pod, "status", "containerStatuses") or []:
        waiting = dig(cs, "state", "waiting") or {}
        if waiting.get("reason"):
            return f"{waiting['reason']} on {pod['spec']['nodeName']}"
    return f"starting on {pod['spec']['nodeName']}"


def expected_ranks(objects: list[dict]) -> int:
    """How many non-launcher pods the workload's batch Jobs ask for (0: unknown)."""
    total = 0
    for obj in objects:
        if obj.get("kind") == "Job" and str(obj.get("apiVersion", "")).startswith("batch/") and not ws.is_launcher(obj):
            spec = obj.get("spec") or {}
            total += int(spec.get("parallelism") or spec.get("completions") or 1)
    return total


def ended_at(objects: list[dict], pods: list[dict] | None = None) -> float | None:
    """When the workload reported its end: the latest Failed/Complete transition of its
    objects, else when the launcher pod's containers finished."""
    times = []
    for obj in objects:
        for cond in dig(obj, "status", "conditions") or []:
            if cond.get("type") in ("Failed", "Complete", "SuccessCriteriaMet") and cond.get("status") == "True":
                if (t := parse_time(cond.get("lastTransitionTime"))) is not None:
                    times.append(t)
    if not times:
        for pod in pods or []:
            if ws.is_launcher(pod):
                for cs in dig(pod, "status", "containerStatuses") or []:
                    if (t := parse_time(dig(cs, "state", "terminated", "finishedAt"))) is not None:
                        times.append(t)
    return max(times) if times else None


def not_started(objects: list[dict], pods: list[dict]) -> tuple[int, int, str]:
    """(ranks that never started, ranks expected, an example reason) for a launcher workload."""
    if not any(ws.is_launcher(p) for p in pods) and not any(ws.is_launcher(o) for o in objects):
        return 0, 0, ""  # no launcher: every pod is a rank and ran its own course
    ranks = [p for p in pods if not ws.is_launcher(p) and not dig(p, "metadata", "deletionTimestamp")]
    expected = max(expected_ranks(objects), len(ranks))
    waiting = [p for p in ranks if not _started(p)]
    missing = expected - len(ranks)
    example = _waiting_reason(waiting[0]) if waiting else ("pods not created" if missing > 0 else "")
    return len(waiting) + max(0, missing), expected, example


def decide_end(phase: ws.WorkloadPhase, objects: list[dict], pods: list[dict], *, now: float, label: str,
               settle_seconds: float = SETTLE_SECONDS) -> EndDecision:
    """The verdict for a workload that reported Failed or Succeeded (``phase``)."""
    end = ended_at(objects, pods)
    live = [p["metadata"]["name"] for p in pods if _live(p) and not ws.is_launcher(p)]
    if live and end is not None and now - end < settle_seconds:
        return EndDecision(wait=True, wait_seconds=settle_seconds - (now - end))
    if phase.phase == ws.SUCCEEDED:
        return EndDecision(False, "Succeeded", JobReason.WORKLOAD_COMPLETED, f"Workload {label} completed successfully")
    waiting, expected, example = not_started(objects, pods)
    if waiting:
        message = (f"Workload {label} failed while {waiting} of {expected} workers had not started "
                   f"({example}): scheduling or start-up, not a node fault")
        return EndDecision(False, "Failed", JobReason.WORKLOAD_SCHEDULING_BLOCKED, message[:1024], blame_group=False)
    detail = f": {phase.message}" if phase.message else ""
    return EndDecision(False, "Failed", JobReason.WORKLOAD_FAILED, f"Workload {label} has failed{detail}")
