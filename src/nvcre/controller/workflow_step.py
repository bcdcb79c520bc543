"""One pass over a Workflow's groups: gather the running groups' Jobs, launch pending
groups, write the pass (``decide.workflow_pass``), then act on what was written.

Shared by the Workflow reconciler and the diagnose driver (a diagnose round is a set
of ordinary groups), so neither imports the other. Jobs have deterministic names and
are created only if absent, so a restart never duplicates one.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from nvcre.controller import compose
from nvcre.controller import conditions as c
from nvcre.controller import group_job
from nvcre.controller import isolation
from nvcre.controller import labels as L
from nvcre.controller import naming
from nvcre.controller import workflow_core as core
from nvcre.controller import workload_objects
from nvcre.controller.conditions import WorkflowReason
from nvcre.controller.context import Context
from nvcre.controller.decide.workflow_pass import Finished, WorkflowPass, apply_workflow_pass
from nvcre.controller.node_results import write_workflow_status
from nvcre.kube.resources import NVCRE_API_VERSION
from nvcre.objpath import dig

LAUNCH_BATCH = 64  # Jobs created per pass (in parallel), then the status write


def job_name(wf: dict, group: dict, iteration: int) -> str:
    orch = dig(wf, "status", "orchestration") or {}
    iterations = int(dig(wf, "spec", "orchestration", "iterations") or 1)
    # diagnose runs many rounds: every round's Jobs need names of their own
    retries = int(group.get("retries") or 0)
    single = iterations <= 1 and len(orch.get("groups") or []) <= 1 and not compose.is_diagnose(wf) and not retries
    # a retry gets a Job of its own (no waiting for the failed one to go away; it stays for the report)
    name = f"{group['name']}-r{retries}" if retries else group["name"]
    return naming.job_name(wf["metadata"]["name"], name, iteration, single=single)


def _poll_running(ctx: Context, wf: dict, groups: list[dict], iteration: int) -> tuple[list[Finished], list[str]]:
    """The running groups whose Jobs ended, and the scheduling-blocked ones' messages.

    The Jobs come as the watch last delivered them: a stale copy only delays a decision
    (phases only move forward); a Job about to be decided on is confirmed with a GET.
    """
    ns = wf["metadata"]["namespace"]
    jobs = ctx.cache.jobs_of(ns, wf["metadata"]["name"])
    finished: list[Finished] = []
    blocked: list[str] = []
    for i, g in enumerate(groups):
        if g.get("phase") != core.RUNNING:
            continue
        name = dig(g, "jobRef", "name") or job_name(wf, g, iteration)
        job = jobs.get(name)
        if job is None or core.group_outcome(job).phase != core.RUNNING:
            job = ctx.kube.get(NVCRE_API_VERSION, "Job", name, ns)
        outcome = core.group_outcome(job)
        if outcome.phase != core.RUNNING:
            finished.append(Finished(i, outcome, job))
        elif outcome.blocked:
            blocked.append(f"job {name} scheduling blocked: {outcome.blocked}")
    return finished, blocked


class LaunchRefused(Exception):
    """A group's Job cannot be made (a render error, a foreign Job with our name): the Workflow fails."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason, self.message = reason, message


def _create_job(ctx: Context, wf: dict, body: dict) -> tuple[dict, bool]:
    """Create a group's Job; a large rendered workload goes into its ConfigMap first."""
    configmap = workload_objects.externalize(body, wf)
    if configmap is not None:
        ctx.kube.create(configmap)
    return ctx.kube.create(body)


def _launch(ctx: Context, wf: dict, groups: list[dict], finished: list[Finished], iteration: int,
            max_concurrent: int) -> tuple[list[tuple[int, str]], bool]:
    """Create the next batch of pending groups' Jobs (create-if-absent: a restart adopts what
    exists); returns (launched, whether more wait), raises LaunchRefused."""
    probe = [dict(g) for g in groups]  # shallow: only the phase changes
    for f in finished:
        probe[f.index]["phase"] = core.SUCCEEDED
    todo = core.groups_to_launch(probe, max_concurrent)
    batch = todo[:LAUNCH_BATCH]
    bodies = []
    for i in batch:
        name = job_name(wf, groups[i], iteration)
        try:
            bodies.append((i, name, group_job.job_for_group(ctx, wf, groups[i], name, iteration)))
        except compose.PlanError as err:
            raise LaunchRefused(err.reason, err.message) from err
    with ThreadPoolExecutor(max_workers=min(8, max(1, len(bodies)))) as pool:
        answers = list(pool.map(lambda item: _create_job(ctx, wf, item[2]), bodies))
    launched = []
    for (i, name, _), (existing, created) in zip(bodies, answers):
        if not created and not L.controlled_by(existing, wf):
            raise LaunchRefused(WorkflowReason.JOB_NAME_COLLISION,
                                f"Job {name} exists and is not controlled by Workflow {wf['metadata']['name']}")
        launched.append((i, name))
    return launched, len(todo) > len(batch)


def step(ctx: Context, wf: dict, *, diagnose_round: bool = False) -> float | None:
    """Gather, launch, write one pass; returns the requeue delay."""
    spec, st = wf.get("spec") or {}, wf.get("status") or {}
    orch = st.get("orchestration") or {}
    groups = orch.get("groups") or []  # read only: the write edits a fresh copy
    iteration = int(orch.get("currentIteration") or 1)
    execution = dig(spec, "orchestration", "execution") or {}
    finished, blocked = _poll_running(ctx, wf, groups, iteration)
    try:
        launched, more = _launch(ctx, wf, groups, finished, iteration, int(execution.get("maxConcurrent") or 0))
    except LaunchRefused as err:
        write_workflow_status(ctx, wf, lambda o: c.set_status_phase(o["status"], c.FAILED, err.reason, err.message))
        return None
    decision = WorkflowPass(iteration, len(groups), finished, launched, blocked, diagnose_round, ctx.now_text())
    written = write_workflow_status(ctx, wf, lambda o: apply_workflow_pass(o, decision))
    if written is not None:
        for event_type, reason, note in decision.events:  # PerformanceOutlier
            ctx.events.emit(written, event_type, reason, note)
    return _after_write(ctx, written, iteration, more)


def _after_write(ctx: Context, written: dict | None, iteration: int, more: bool) -> float | None:
    if written is None:
        return None
    wst = written.get("status") or {}
    orch = wst.get("orchestration") or {}
    if int(orch.get("currentIteration") or 1) > iteration:
        delete_iteration_jobs(ctx, written, iteration)
        return 0.0
    if c.is_terminal(wst.get("conditions")):
        from nvcre.controller import ledger

        if ledger.applies(written) and not ledger.recorded(written):
            ledger.record_workflow(ctx, written)  # in the pass that decided: the Certification waits for it
        return None
    if dig(orch, "isolation", "phase") == isolation.RUNNING:
        return 0.0  # create the isolation Workflow now
    return 0.0 if more else None  # the Jobs' watch events wake their Workflow


def delete_iteration_jobs(ctx: Context, wf: dict, iteration: int) -> None:
    """At an iteration boundary the previous iteration's Jobs go (the history keeps their outcome)."""
    ns = wf["metadata"]["namespace"]
    jobs = ctx.cache.jobs_of(ns, wf["metadata"]["name"]).values()
    if not jobs:
        jobs = ctx.kube.list(NVCRE_API_VERSION, "Job", ns, label_selector=f"{L.WORKFLOW}={wf['metadata']['name']}")
    for job in jobs:
        if dig(job["metadata"].get("labels"), L.ITERATION) == str(iteration) and L.controlled_by(job, wf):
            ctx.kube.delete(NVCRE_API_VERSION, "Job", job["metadata"]["name"], ns, uid=job["metadata"]["uid"])
