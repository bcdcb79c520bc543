"""Pure decisions of the Workflow: a group's outcome, what to launch, the final verdict.

Plain dicts in, plain data out; the Workflow reconciler gathers the Jobs and writes
what these functions decide.
"""

from __future__ import annotations

from dataclasses import dataclass

from nvcre.controller import conditions as c
from nvcre.controller.conditions import WorkflowReason
from nvcre.objpath import dig

RUNNING, PENDING, SUCCEEDED, FAILED = "Running", "Pending", "Succeeded", "Failed"


@dataclass(frozen=True)
class GroupOutcome:
    phase: str  # Running | Succeeded | Failed
    reason: str = ""  # the Job's deciding reason
    message: str = ""
    hardware: bool = False
    validation: bool = False
    blocked: str | None = None  # WorkloadSchedulingBlocked message while running


def group_outcome(job: dict | None) -> GroupOutcome:
    """What a group's Job says about the group; a missing Job fails the group."""
    if job is None:
        return GroupOutcome(FAILED, "JobDeleted", "the group's Job was deleted")
    st = job.get("status") or {}
    conds = st.get("conditions") or []
    hardware = c.is_true(conds, c.HARDWARE_FAILED)
    validation = c.is_true(conds, c.VALIDATION_FAILED)
    if c.is_true(conds, c.FAILED):
        return GroupOutcome(FAILED, c.reason_of(conds, c.FAILED), c.message_of(conds, c.FAILED), hardware, validation)
    if c.is_true(conds, c.SUCCEEDED):
        awaiting = bool(dig(job, "spec", "thresholds")) and c.find(conds, c.VALIDATION_FAILED) is None
        if awaiting:
            return GroupOutcome(RUNNING)
        if hardware:
            return GroupOutcome(FAILED, c.reason_of(conds, c.HARDWARE_FAILED), c.message_of(conds, c.HARDWARE_FAILED), True, validation)
        if validation:
            return GroupOutcome(FAILED, c.reason_of(conds, c.VALIDATION_FAILED), c.message_of(conds, c.VALIDATION_FAILED), False, True)
        return GroupOutcome(SUCCEEDED, c.reason_of(conds, c.SUCCEEDED), c.message_of(conds, c.SUCCEEDED))
    blocked = None
    if c.reason_of(conds, c.IN_PROGRESS) == "WorkloadSchedulingBlocked":
        blocked = c.message_of(conds, c.IN_PROGRESS)
    return GroupOutcome(RUNNING, blocked=blocked)


def groups_to_launch(groups: list[dict], max_concurrent: int) -> list[int]:
    """Indexes of Pending groups to start now: in order, node-disjoint from running ones."""
    busy = {n for g in groups if g.get("phase") == RUNNING for n in g.get("nodes") or []}
    running = sum(1 for g in groups if g.get("phase") == RUNNING)
    picked = []
    for i, g in enumerate(groups):
        if g.get("phase") != PENDING:
            continue
        if max_concurrent and running + len(picked) >= max_concurrent:
            break
        nodes = set(g.get("nodes") or [])
        if nodes & busy:
            continue
        picked.append(i)
        busy |= nodes
    return picked


VALIDATION_REASONS = ("ThresholdViolated", "MeasurementTimeout", "UnknownThresholdKey", "InvalidThresholdExpression",
                      "PerformanceOutlier")


@dataclass(frozen=True)
class Final:
    phase: str
    reason: str
    message: str
    validation_failed: bool


def final_verdict(orchestration: dict, failed_nodes: list[dict], failed_groups: list[dict], iterations: int) -> Final:
    """Succeeded when no group failed in any iteration; else the reason by precedence:
    hardware, then thresholds only, then the runs themselves."""
    failed_count = sum(1 for g in orchestration.get("groups") or [] if g.get("phase") == FAILED) + sum(
        1 for it in orchestration.get("iterationHistory") or [] for g in it.get("groups") or [] if g.get("phase") == FAILED
    )
    hardware = any(n.get("reason") == "HardwareFailureDetected" for n in failed_nodes) or any(
        g.get("reason") == "HardwareFailureDetected" for g in failed_groups
    )
    validation = any(g.get("reason") in VALIDATION_REASONS for g in failed_groups) or any(
        n.get("reason") == "ThresholdViolation" for n in failed_nodes
    )
    only_validation = bool(failed_groups) and all(g.get("reason") in VALIDATION_REASONS for g in failed_groups)
    message = f"{failed_count} groups failed across {iterations} iterations"
    if not failed_count:
        return Final(c.SUCCEEDED, WorkflowReason.JOB_COMPLETED, f"All {iterations} iterations completed successfully", validation)
    if hardware:
        return Final(c.FAILED, WorkflowReason.JOB_HARDWARE_FAILED, message + "; hardware failures occurred on one or more nodes", validation)
    if only_validation:
        return Final(c.FAILED, WorkflowReason.JOB_VALIDATION_FAILED, message, True)
    return Final(c.FAILED, WorkflowReason.ITERATIONS_FAILED, message, validation)
