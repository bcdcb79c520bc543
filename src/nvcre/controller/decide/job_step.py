"""What one pass of a running Job does next, decided from what it gathered.

The Job reconciler gathers (workload objects, pods, nodes, the clocks, and the stall
reading when one is due), calls ``decide_job_step`` and enacts the ``JobStep``: it
collects the evidence the step names (failure log, final measurement reading), tries
a checkpoint restart where the step allows one, and writes the status with
``job_pass.apply_pass``. Nothing here reads the API server or the clock.

The order of the rules is the order of precedence: a node that vanished names only
itself; a rank placed outside its pinned group fails the Job naming nobody (its result
would not be about the group); a workload that ended (or was deleted, or ran out of time) is judged by
``job_end``; a stalled run, then one that never started, fail; anything else is in
progress.
"""

from __future__ import annotations

from dataclasses import dataclass

from nvcre.controller import conditions as c
from nvcre.controller import faults
from nvcre.controller import workload_state as ws
from nvcre.controller.clock import ClockDecision
from nvcre.controller.conditions import JobReason
from nvcre.controller.decide.job_end import decide_end
from nvcre.controller.decide.job_pass import Terminal

PROGRESS, WAIT, TERMINAL = "progress", "wait", "terminal"


@dataclass(frozen=True)
class JobFacts:
    """What the gather step saw (the pure part of ``job.Observation`` plus the clocks)."""

    phase: ws.WorkloadPhase
    objects: list[dict]
    pods: list[dict]
    label: str
    blocked: str | None  # the pods' unschedulable message, whatever the grace period says
    gone: list[str]  # nodes of the group deleted while it ran
    clocks: ClockDecision
    now: float
    startup_grace_seconds: float
    stalled: str | None = None  # the stall reading, gathered only where ``stall_check_due`` says
    off_group: tuple[str, ...] = ()  # nodes the ranks of a Pinned group were bound to outside it


@dataclass(frozen=True)
class JobStep:
    """The decision. ``action``: PROGRESS (write the in-progress reason), WAIT (the last pods
    are ending: write progress, look again in ``wait_seconds``) or TERMINAL (write ``terminal``).

    ``try_restart``: a dead training workload; restart it from its checkpoint first when
    the budget and its log allow, and only otherwise write the step.
    ``failure_log``: collect a failure log with this reason ("" for the failed container's
    own); ``failure_log_fixed``: a failure log already known (no read needed).
    ``read_measurements``: read the launcher log once for the final measurement.
    ``blame``: the nodes a terminal verdict names instead of the group (vanished nodes).
    ``prefetch``: the workload has ended and the verdict waits for its last pods: read the
    logs of the pods that have ended now, so the terminal pass finds its evidence read.
    """

    action: str
    terminal: Terminal | None = None
    wait_seconds: float | None = None
    try_restart: bool = False
    failure_log: str | None = None
    failure_log_fixed: dict | None = None
    read_measurements: bool = False
    blame: tuple[str, ...] = ()
    prefetch: bool = False


def stall_check_due(phase: ws.WorkloadPhase, blocked: str | None, gone: list[str], clocks: ClockDecision) -> bool:
    """Whether the stall rule can decide this pass (so the gather step reads the rank-0 log)."""
    return phase.phase == ws.RUNNING and not blocked and not gone and not clocks.timed_out


def _ended(f: JobFacts) -> JobStep:
    if f.phase.phase == ws.ABSENT:
        return JobStep(TERMINAL, Terminal(c.FAILED, JobReason.WORKLOAD_FAILED, f"Workload {f.label} was deleted"))
    if f.phase.phase in (ws.FAILED, ws.SUCCEEDED):
        end = decide_end(f.phase, f.objects, f.pods, now=f.now, label=f.label)
        restart = f.phase.phase == ws.FAILED
        if end.wait:
            return JobStep(WAIT, wait_seconds=end.wait_seconds, try_restart=restart, prefetch=True)
        return JobStep(TERMINAL, Terminal(end.phase, end.reason, end.message, end.blame_group), try_restart=restart,
                       failure_log="" if end.phase == c.FAILED else None, read_measurements=True)
    # A timeout while the pods could not even be scheduled is the cluster's capacity,
    # not the nodes' fault: nobody is named then.
    return JobStep(TERMINAL, Terminal(c.FAILED, JobReason.JOB_TIMED_OUT, f.clocks.timed_out or "", blame_group=not f.blocked),
                   failure_log="Timeout")


def decide_job_step(f: JobFacts) -> JobStep:
    """The next step of a running Job (see the module docstring for the precedence)."""
    phase = f.phase.phase
    if f.gone and phase != ws.ABSENT:  # named as what happened; only those nodes are blamed
        return JobStep(TERMINAL, Terminal(c.FAILED, JobReason.WORKLOAD_FAILED,
                                          f"Workload {f.label} failed: {faults.vanished_message(f.gone)}"),
                       failure_log="" if phase == ws.FAILED else None, blame=tuple(f.gone))
    if f.off_group and phase != ws.ABSENT:
        return JobStep(TERMINAL, Terminal(c.FAILED, JobReason.WORKLOAD_PLACED_OFF_GROUP,
                                          f"Workload {f.label}: {faults.off_group_message(list(f.off_group))}",
                                          blame_group=False))
    if phase in (ws.FAILED, ws.SUCCEEDED, ws.ABSENT) or f.clocks.timed_out:
        return _ended(f)
    if stall_check_due(f.phase, f.blocked, f.gone, f.clocks) and f.stalled:
        return JobStep(TERMINAL, Terminal(c.FAILED, JobReason.WORKLOAD_STALLED, f"Workload stalled: {f.stalled}"),
                       try_restart=True, failure_log="Stalled")
    if phase in (ws.PENDING, ws.RUNNING) and not f.blocked:
        stuck = faults.startup_stall(f.pods, now=f.now, grace_seconds=f.startup_grace_seconds)
        if stuck:
            return JobStep(TERMINAL, Terminal(c.FAILED, JobReason.WORKLOAD_STARTUP_STALLED,
                                              f"Workload {f.label} did not start: {stuck}"),
                           failure_log_fixed={"reason": faults.STARTUP_STALL_REASON, "tail": stuck})
    return JobStep(PROGRESS)
