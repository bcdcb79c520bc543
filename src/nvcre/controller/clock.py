"""The Job's clocks: timeoutPerJob and the scheduling-stall pause, as a pure function.

The run clock starts when the workload is first seen running. While its pods are
Unschedulable the clock is frozen (a full cluster is not the workload's fault);
past the grace period the Job says so with the scheduler's message. On recovery the
start time is pushed forward by the blocked time, so the budget counts again from
where it stopped. A blocked episode longer than the whole timeout ends the Job too.
"""

from __future__ import annotations

from dataclasses import dataclass

from nvcre.timefmt import format_time, parse_time


@dataclass(frozen=True)
class ClockDecision:
    """Status fields to set (None = remove) and what the Job should report."""

    updates: dict[str, str | None]
    blocked_message: str | None  # set once the episode is past its grace period
    timed_out: str | None  # the timeout message, when the budget is spent
    running_seconds: float


def advance(
    status: dict,
    *,
    now: float,
    running: bool,
    unschedulable: str | None,
    grace_seconds: float,
    timeout_seconds: float | None,
) -> ClockDecision:
    updates: dict[str, str | None] = {}
    start = parse_time(status.get("workloadStartTime"))
    blocked_since = parse_time(status.get("schedulingBlockedSince"))
    blocked_message = None
    timed_out = None

    if unschedulable is not None:
        if blocked_since is None:
            blocked_since = now
            updates["schedulingBlockedSince"] = format_time(now)
        episode = now - blocked_since
        if episode >= grace_seconds:
            blocked_message = f"Workload pods are unschedulable: {unschedulable}"
        running_seconds = max(0.0, blocked_since - start) if start is not None else 0.0
        if timeout_seconds is not None and episode > timeout_seconds:
            timed_out = "Job exceeded timeoutPerJob while its pods were unschedulable"
        elif timeout_seconds is not None and running_seconds > timeout_seconds:
            timed_out = "Job exceeded timeoutPerJob"
        return ClockDecision(updates, blocked_message, timed_out, running_seconds)

    if blocked_since is not None:  # recovered: the blocked time does not count
        if start is not None:
            start += now - max(blocked_since, start)
            updates["workloadStartTime"] = format_time(start)
        updates["schedulingBlockedSince"] = None
        updates["schedulingResumedTime"] = format_time(now)
    if running and start is None:
        start = now
        updates["workloadStartTime"] = format_time(now)
    running_seconds = (now - start) if start is not None else 0.0
    if timeout_seconds is not None and running_seconds > timeout_seconds:
        timed_out = "Job exceeded timeoutPerJob"
    return ClockDecision(updates, None, timed_out, running_seconds)
