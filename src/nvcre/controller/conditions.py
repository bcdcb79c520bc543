"""Status conditions: the exclusive phase triple and the additive quality signals.

Every tier (Certification, Workflow, Job, WorkloadRun) has exactly one of
InProgress / Succeeded / Failed True at a time; the other two are written False
with reason NotApplicable so ``kubectl wait --for=condition=...`` and readers never
see two phases at once. ValidationFailed (a measurement missed its threshold) and
HardwareFailed (a node health detector fired) are additive: they sit beside the
phase, because a run can succeed and still miss its bandwidth target.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone

# The vocabulary is defined once, in nvcre.api.conditions; the reconcilers use these names.
from nvcre.api.conditions import phase_of  # noqa: F401 (re-exported: one phase reading for all)
from nvcre.objpath import dig
from nvcre.api.conditions import (  # noqa: F401 (re-exported)
    EXCLUSIVE_TYPES as PHASES,
    FAILED,
    HARDWARE_FAILED,
    HEALTH_CHECK_ERROR,
    IN_PROGRESS,
    NOT_APPLICABLE,
    SUCCEEDED,
    VALIDATION_FAILED,
    CertificationReasons,
    FailedNodeReasons,
    JobReasons,
    WorkflowReasons,
    WorkloadRunReasons,
)

def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def find(conditions: list[dict] | None, ctype: str) -> dict | None:
    for cond in conditions or []:
        if cond.get("type") == ctype:
            return cond
    return None


def is_true(conditions: list[dict] | None, ctype: str) -> bool:
    cond = find(conditions, ctype)
    return bool(cond and cond.get("status") == "True")


def is_terminal(conditions: list[dict] | None) -> bool:
    return phase_of(conditions) in (SUCCEEDED, FAILED)


def reason_of(conditions: list[dict] | None, ctype: str) -> str:
    cond = find(conditions, ctype)
    return (dig(cond, "reason") or "")


def message_of(conditions: list[dict] | None, ctype: str) -> str:
    cond = find(conditions, ctype)
    return (dig(cond, "message") or "")


def set_condition(
    conditions: list[dict],
    ctype: str,
    status: bool,
    reason: str,
    message: str = "",
    *,
    generation: int | None = None,
    now: str | None = None,
) -> bool:
    """Set one condition in place; lastTransitionTime moves only when the status flips.

    Returns whether anything changed, so a caller can skip a no-op write.
    """
    value = "True" if status else "False"
    cond = find(conditions, ctype)
    if cond is None:
        cond = {"type": ctype}
        conditions.append(cond)
        changed = True
    else:
        changed = False
    if cond.get("status") != value:
        cond["status"] = value
        cond["lastTransitionTime"] = now or _now()
        changed = True
    for key, val in (("reason", reason), ("message", message)):
        if cond.get(key) != val:
            cond[key] = val
            changed = True
    if generation is not None and cond.get("observedGeneration") != generation:
        cond["observedGeneration"] = generation
        changed = True
    cond.setdefault("lastTransitionTime", now or _now())
    return changed


def set_phase(
    conditions: list[dict],
    phase: str,
    reason: str,
    message: str = "",
    *,
    generation: int | None = None,
    now: str | None = None,
) -> bool:
    """Make ``phase`` the one True exclusive condition; the others False/NotApplicable."""
    if phase not in PHASES:
        raise ValueError(f"not an exclusive phase: {phase}")
    changed = False
    for ctype in PHASES:
        if ctype == phase:
            changed |= set_condition(conditions, ctype, True, reason, message, generation=generation, now=now)
        else:
            changed |= set_condition(conditions, ctype, False, NOT_APPLICABLE, "", generation=generation, now=now)
    return changed


@dataclass(frozen=True)
class Transition:
    """A change of the True exclusive phase, the moment an Event is due."""

    before: str | None
    after: str
    reason: str
    message: str

    @property
    def event_type(self) -> str:
        return "Warning" if self.after == FAILED else "Normal"


def transition(before: list[dict] | None, after: list[dict] | None) -> Transition | None:
    """The phase transition between two condition lists, or None when the phase and reason held.

    A change of reason within InProgress (WorkloadCreated -> WorkloadRunning) counts
    as a transition too: those are the progress steps ``kubectl describe`` should show.
    """
    new_phase = phase_of(after)
    if new_phase is None:
        return None
    old_phase = phase_of(before)
    new_reason = reason_of(after, new_phase)
    if old_phase == new_phase and reason_of(before, new_phase) == new_reason:
        return None
    return Transition(old_phase, new_phase, new_reason, message_of(after, new_phase))


def flipped_true(before: list[dict] | None, after: list[dict] | None, ctype: str) -> bool:
    """Whether an additive condition went from absent/False to True (one Warning then)."""
    return is_true(after, ctype) and not is_true(before, ctype)


# ---------------------------------------------------------------- reasons per tier
class CertificationReason(CertificationReasons):
    """The documented Certification reasons, plus the shorter names the reconciler uses."""

    ALL_SUCCEEDED = CertificationReasons.ALL_WORKFLOWS_SUCCEEDED
    NAME_COLLISION = CertificationReasons.WORKFLOW_NAME_COLLISION
    VALIDATION_FAILED = CertificationReasons.WORKFLOW_VALIDATION_FAILED


WorkflowReason = WorkflowReasons
JobReason = JobReasons
WorkloadRunReason = WorkloadRunReasons
NodeReason = FailedNodeReasons
"""Why a node is named as failed (FailedNode.reason)."""


def merge_failed_nodes(existing: list[dict] | None, new: list[dict]) -> tuple[list[dict], bool]:
    """Union by (name, reason), sorted by name then reason; entries are never removed."""
    by_key = {(n["name"], n["reason"]): n for n in existing or [] if n.get("name")}
    added = False
    for node in new:
        if not node.get("name"):
            continue
        key = (node["name"], node["reason"])
        if key not in by_key:
            by_key[key] = {k: v for k, v in node.items() if v not in (None, "")}
            added = True
    return [by_key[k] for k in sorted(by_key)], added


def set_status_phase(
    status: dict, phase: str, reason: str, message: str = "", *, generation: int | None = None, now: str | None = None
) -> bool:
    """Set the exclusive condition and mirror it into ``status.phase`` (for printer columns)."""
    conditions = status.setdefault("conditions", [])
    changed = set_phase(conditions, phase, reason, message, generation=generation, now=now)
    if status.get("phase") != phase:
        status["phase"] = phase
        changed = True
    return changed
