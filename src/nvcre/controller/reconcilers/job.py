"""Job reconciler: run one workload on one node group, watch it, judge it, clean up.

Each pass gathers (the Job, its workload objects, pods and nodes), decides with the
pure helpers (workload phase, clocks, health, thresholds) and writes one status
update. The workload objects have deterministic names and are created only if
absent, so a controller killed between any two steps finds and adopts what it made.
At the end the complete launcher log is read once; the verdict is judged on it and
written together with the terminal phase, then the workload is deleted.
"""

from __future__ import annotations

import copy
import logging
from dataclasses import dataclass, field
from typing import NoReturn

from nvcre.controller import clock
from nvcre.controller.checkpoint import (
    KEEP_ON_RESTART,
    attempt_log_object,
    log_profile,
    prior_attempt_logs,
    restart_budget,
    saved_a_checkpoint,
)
from nvcre.controller import conditions as c
from nvcre.controller import labels as L
from nvcre.controller import naming
from nvcre.controller import faults, spec_guard, workload_objects
from nvcre.controller import workload_state as ws
from nvcre.controller.conditions import JobReason, NodeReason
from nvcre.controller.context import Context, parse_duration, parse_time, write_status
from nvcre.controller.decide.job_step import TERMINAL, WAIT, JobFacts, JobStep, decide_job_step, stall_check_due
from nvcre.controller.decide.restart import decide_restart
from nvcre.controller.decide.job_pass import JobPass, apply_pass, apply_verdict, blame, newly_sick
from nvcre.controller.gather import job_pods, watched_nodes
from nvcre.controller.health_check import check_nodes
from nvcre.controller import ended_logs
from nvcre.controller.parallel_reads import read_all
from nvcre.controller.runtime.queue import RETRY_MAX_S, Retry
from nvcre.controller.measurements import (
    Reading,
    complete_status,
    measurement_objects,
    read_bandwidth,
    with_pairs,
    read_goodput,
    training_logs,
)
from nvcre.controller.views import job_status
from nvcre.controller.reconcilers.own import forget_object, running_object
from nvcre.kube.client import ApiError, TransportError
from nvcre.kube.resources import NVCRE_API_VERSION
from nvcre.objpath import dig
from nvcre.workloads.mpi import with_generated_keys

log = logging.getLogger(__name__)

TRAINJOB_API = "trainer.kubeflow.org/v1alpha1"
INCLUDE_CORDONED = L.PREFIX + "include-cordoned"
PHASE_KINDS = frozenset({("batch/v1", "Job"), (TRAINJOB_API, "TrainJob"), ("v1", "Pod")})


# ---------------------------------------------------------------- desired workload
def desired_workload(job: dict, rendered: list[dict] | None = None) -> list[dict]:
    """The workload objects this Job creates: labelled, owned by the Job, in its namespace.

    ``rendered``: the objects of an ``objectsRef`` (see ``workload_objects``), already read.
    """
    meta, spec = job["metadata"], job.get("spec") or {}
    workload = spec.get("workload") or {}
    ns = meta.get("namespace")
    if rendered is not None:
        objects = copy.deepcopy(rendered)
    elif workload.get("trainJob") is not None:
        objects = [
            {
                "apiVersion": TRAINJOB_API,
                "kind": "TrainJob",
                "metadata": {"name": naming.workload_name(meta["name"])},
                "spec": copy.deepcopy(workload["trainJob"]),
            }
        ]
    else:
        native = workload.get("native") or {}
        objects = copy.deepcopy(native.get("objects") or [])
    wf = dig(meta.get("labels"), L.WORKFLOW)
    extra = (dig(spec, "workloadMetadata", "labels")) or {}
    for obj in objects:
        om = obj.setdefault("metadata", {})
        om["namespace"] = ns
        om.setdefault("labels", {}).update({**extra, **L.managed_labels(job=meta["name"], workflow=wf)})
        om["ownerReferences"] = [L.owner_reference(job)]
        template = dig(obj, "spec", "template")
        if isinstance(template, dict):
            template.setdefault("metadata", {}).setdefault("labels", {})[L.JOB] = meta["name"]
    return objects


def _primary(objects: list[dict]) -> dict | None:
    tops = [o for o in objects if o.get("kind") in ("TrainJob", "Job")]
    launchers = [o for o in tops if ws.is_launcher(o)]
    pick = (launchers or tops or objects or [None])[0]
    return pick


def _ref(obj: dict) -> dict:
    return {
        "apiVersion": obj["apiVersion"],
        "kind": obj["kind"],
        "name": obj["metadata"]["name"],
        "namespace": obj["metadata"].get("namespace"),
    }


# ---------------------------------------------------------------- the reconciler
def reconcile_job(ctx: Context, namespace: str, name: str) -> float | None:
    job = running_object(ctx, "Job", namespace, name)
    if job is None:
        return None
    status = job.get("status") or {}
    try:
        desired = desired_workload(job, rendered_objects(ctx, job))
    except workload_objects.WorkloadObjectsError as err:  # e.g. its ConfigMap not readable yet
        ctx.events.emit(job, "Warning", JobReason.WORKLOAD_CREATION_ERROR, str(err))
        raise Retry(str(err)) from err

    if c.is_terminal(status.get("conditions")):
        forget_object(ctx, "Job", namespace, name, job["metadata"].get("uid"))
        if _awaiting_verdict(job):
            return _judge_late(ctx, job, desired)
        _freeze_unfinished(ctx, job)
        _cleanup(ctx, job, desired)
        return None

    if not status.get("workloadRef") or spec_guard.refusal(desired):
        return _create_workload(ctx, job, desired)
    return _observe(ctx, job, desired)


# ---------------------------------------------------------------- gather (cache first, live reads until synced)
def _get(ctx: Context, obj: dict) -> dict | None:
    meta = obj["metadata"]
    if obj.get("apiVersion") == "batch/v1" and ctx.cache.synced("batch.Job", meta.get("namespace")):
        return ctx.cache.get("batch.Job", meta.get("namespace"), meta["name"])
    got = ctx.kube.get(obj["apiVersion"], obj["kind"], meta["name"], meta.get("namespace"))
    if got is not None:
        got.setdefault("apiVersion", obj["apiVersion"])
        got.setdefault("kind", obj["kind"])
    return got


def rendered_objects(ctx: Context, job: dict) -> list[dict] | None:
    """The objects behind the Job's ``objectsRef`` (read once per Job), or None when inline."""
    ref = workload_objects.objects_ref(job)
    if ref is None:
        return None
    key = (job["metadata"].get("uid", ""), ref.get("sha256", ""))
    found = ctx.memos.workloads.get(key)
    if found is None:
        cm = ctx.kube.get("v1", "ConfigMap", ref.get("name", ""), job["metadata"].get("namespace"))
        found = workload_objects.resolve(job, cm)
        ctx.memos.workloads.put(key, found)
    return found


def _create_workload(ctx: Context, job: dict, desired: list[dict]) -> float | None:
    meta = job["metadata"]
    if not desired:
        msg = "spec.workload has neither trainJob nor native.objects: nothing to run"
        write_status(ctx, job, lambda o: _fail(o, JobReason.WORKLOAD_CREATION_ERROR, msg, nodes_reason=NodeReason.WORKLOAD_FAILED))
        return None
    refused = spec_guard.refusal(desired)
    if refused:  # never created, whoever asked: a terminal verdict, not a retry loop
        ctx.events.emit(job, "Warning", JobReason.WORKLOAD_CREATION_ERROR, refused)
        write_status(ctx, job, lambda o: _refuse(o, refused))
        return None
    created_any = False
    for mobj in measurement_objects(job):
        try:
            ctx.kube.create(mobj)
        except Exception as err:
            ctx.events.emit(job, "Warning", "MeasurementCreationError", f"{mobj['kind']} {mobj['metadata']['name']}: {err}")
    restarted = int(dig(job, "status", "restartCount") or 0) > 0
    for obj in desired:
        current = _get(ctx, obj) if restarted else None
        if current is not None and (current["metadata"].get("deletionTimestamp") or _finished(current)):
            return _previous_attempt_going(ctx, obj, current)
        try:
            _, created = ctx.kube.create(with_generated_keys(obj))  # an SSH key exists only in its Secret
        except Exception as err:  # API refusals are retried with backoff; they do not fail the Job
            ctx.events.emit(job, "Warning", JobReason.WORKLOAD_CREATION_ERROR, f"{obj['kind']} {obj['metadata']['name']}: {err}")
            raise Retry(f"{obj['kind']} {obj['metadata']['name']} not created: {err}") from err
        created_any |= created
        if created:
            wf = (dig(meta.get("labels"), L.WORKFLOW) or "")
            ctx.metrics.workloads_created.labels(namespace=meta.get("namespace", ""), job=meta["name"], workflow=wf).inc()
    primary = _primary(desired)
    reason = JobReason.WORKLOAD_CREATED if created_any else JobReason.WORKLOAD_ADOPTED
    message = f"Workload {primary['kind']}/{primary['metadata']['name']} created and is starting"

    def mutate(o: dict) -> bool:
        st = o["status"]
        if st.get("workloadRef") or c.is_terminal(st.get("conditions")):
            return False
        st["workloadRef"] = _ref(primary)
        c.set_status_phase(st, c.IN_PROGRESS, reason, message, generation=o["metadata"].get("generation"))
        return True

    write_status(ctx, job, mutate)
    return None  # the workloadRef write and the created objects' watch events bring the next pass


def _previous_attempt_going(ctx: Context, obj: dict, current: dict) -> float | None:
    """The previous attempt's object (same name) is finished or still going away: delete it
    if need be, and look again when it is gone. A watched kind's DELETED event wakes the Job
    (it carries the Job's label); any other kind is retried with the queue's backoff."""
    meta = obj["metadata"]
    if not current["metadata"].get("deletionTimestamp"):  # left over from the interrupted attempt
        ctx.kube.delete(obj["apiVersion"], obj["kind"], meta["name"], meta.get("namespace"), uid=current["metadata"]["uid"])
    if obj.get("apiVersion") == "batch/v1" and ctx.cache.synced("batch.Job", meta.get("namespace")):
        return None
    raise Retry(f"{obj['kind']} {meta['name']} of the previous attempt is still being deleted", cap=10.0)


@dataclass
class Observation:
    """What one pass of a running Job gathered."""

    job: dict
    desired: list[dict]
    objects: list[dict]
    pods: list[dict]
    group: list[str]
    ran: list[str]
    sick: dict[str, str]
    phase: ws.WorkloadPhase
    blocked: str | None
    label: str
    health_error: tuple[str, str] | None = None  # (reason, message): a detector that could not run
    gone: list[str] = field(default_factory=list)  # nodes of the group deleted while it ran


def phase_objects(desired: list[dict]) -> list[dict]:
    """The workload objects whose status decides its phase (batch Jobs, a TrainJob, bare Pods):
    the only ones a pass reads. Secrets, Services and ConfigMaps have no phase, and reading
    them live on every pod event cost a busy API server four GETs a pass."""
    deciding = [o for o in desired if (o.get("apiVersion"), o.get("kind")) in PHASE_KINDS]
    return deciding or desired


def _gather(ctx: Context, job: dict, desired: list[dict]) -> Observation:
    meta, spec = job["metadata"], job.get("spec") or {}
    objects = [o for o in (_get(ctx, o) for o in phase_objects(desired)) if o is not None]
    pods = job_pods(ctx, meta.get("namespace", ""), meta["name"])
    group = spec.get("nodes") or L.group_nodes(job)
    ran = ws.pod_nodes(ws.with_remembered(pods, ctx.placements.get((meta.get("namespace", ""), meta["name"])) or {}))
    include_cordoned = dig(meta.get("annotations"), INCLUDE_CORDONED) == "true"
    watch = sorted(set(group) | set(ran))
    nodes = watched_nodes(ctx, watch)
    # A detector that does not compile, or cannot be evaluated on some node, is reported
    # (condition, Event, report line) and the run goes on: it must not fail silently.
    health_error: tuple[str, str] | None = None  # (reason, message)
    try:
        sick, eval_error = check_nodes(spec, nodes, include_cordoned=include_cordoned, memo=ctx.memos.monitors)
        if eval_error:
            health_error = (JobReason.DETECTOR_EVALUATION_FAILED, eval_error)
    except Exception as err:
        sick, health_error = {}, (JobReason.DETECTOR_INVALID, str(err))
    phase = ws.workload_phase(objects, pods)
    blocked = ws.unschedulable_message(pods) if phase.phase in (ws.PENDING, ws.RUNNING) else None
    primary = _primary(objects) or _primary(desired)
    label = f"{primary['kind']}/{primary['metadata']['name']}" if primary else "workload"
    gone = faults.vanished_nodes(watch, nodes) if phase.phase != ws.SUCCEEDED else []
    return Observation(job, desired, objects, pods, group, ran, sick, phase, blocked, label, health_error, gone)


def _facts(ctx: Context, job: dict, obs: Observation, grace: float, timeout: float | None) -> JobFacts:
    """The pure part of the gathered state, with the clocks advanced and the stall read when due."""
    now = ctx.now()
    clocks = clock.advance(job_status(job), now=now, running=obs.phase.phase == ws.RUNNING,
                           unschedulable=obs.blocked, grace_seconds=grace, timeout_seconds=timeout)
    stalled = _stalled(ctx, job, obs.pods) if stall_check_due(obs.phase, obs.blocked, obs.gone, clocks) else None
    return JobFacts(obs.phase, obs.objects, obs.pods, obs.label, obs.blocked, obs.gone, clocks, now,
                    ctx.settings.startup_stall_grace_seconds, stalled, off_group=tuple(faults.off_group(obs.group, obs.ran)))


def _observe(ctx: Context, job: dict, desired: list[dict]) -> float | None:
    """Gather, decide (``decide_job_step``), enact: evidence, a checkpoint restart, the write."""
    obs = _gather(ctx, job, desired)
    spec = job.get("spec") or {}
    grace = float(spec.get("schedulingStallGraceSeconds") or ctx.settings.scheduling_stall_grace_seconds)
    timeout = parse_duration(spec.get("timeoutPerJob"), None)
    facts = _facts(ctx, job, obs, grace, timeout)
    step = decide_job_step(facts)
    if step.try_restart and _restart_from_checkpoint(ctx, job, desired, obs.pods, obs.sick):
        return None  # its status write (workloadRef dropped) is a watch event: the next pass creates the workload
    p = _job_pass(obs, facts, step)
    if step.prefetch:
        _prefetch_evidence(ctx, job, obs)
    got = _read_evidence(ctx, job, obs, step, p)
    if "failure_log" in got:
        p.failure_log = got["failure_log"]
    reading = got.get("reading")  # a crash's too (goodput of what it did)
    if step.read_measurements:
        p.job_fields = dict(reading.job_fields) if reading is not None and reading.job_fields else {}
        if digest := ws.image_digest(obs.pods):
            p.job_fields["imageDigest"] = digest
        if step.terminal is not None and step.terminal.phase != c.FAILED:
            p.verdict = _verdict(ctx, job, reading, since=facts.now)
    if "pod_logs" in got:
        p.pod_logs = got["pod_logs"]
    elif _keeps_pod_logs(job, p):  # only the thresholds failed it: known after the reading
        p.pod_logs = _pod_logs(ctx, job, obs.pods, first=set(p.sick) | set(step.blame))
    return _write_pass(ctx, job, obs, p, reading, step.wait_seconds,
                       _next_look(ctx, job, obs, facts.clocks, grace, timeout))


def _prefetch_evidence(ctx: Context, job: dict, obs: Observation) -> None:
    """While the verdict waits for the last pods, read the logs of those that have ended
    (``ended_logs``); a failed read only means the terminal pass reads it itself."""
    failing = obs.phase.phase == ws.FAILED or bool(dig(job, "metadata", "labels", L.WORKLOAD_RUN))
    try:
        ended_logs.prefetch(ctx, job, obs.pods, set(obs.sick), pod_tails=failing)
    except (ApiError, TransportError) as exc:
        log.info("Job %s: reading ended pods' logs early: %s", job["metadata"]["name"], exc)


def _keeps_pod_logs(job: dict, p: JobPass) -> bool:
    """The workload (and its pods) is deleted next: a WorkloadRun keeps every pod's output,
    a failed Certification Job each node's own pod (the report's evidence)."""
    return p.terminal is not None and bool(dig(job, "metadata", "labels", L.WORKLOAD_RUN) or _failing(p))


def _read_evidence(ctx: Context, job: dict, obs: Observation, step: JobStep, p: JobPass) -> dict:
    """The reads the step asks for, at the same time: the failure log, the final measurement
    reading and, when the Job already fails (or is a WorkloadRun's), the pods' log tails.

    Pods on the sick nodes and, where the verdict narrowed it (vanished nodes), the group's
    come first; the whole group would put every rank first and order nothing.
    """
    reads: dict = {}
    if step.failure_log_fixed is None and step.failure_log is not None:
        reads["failure_log"] = lambda: _failure_log(ctx, job, obs.pods, reason=step.failure_log or None)
    if step.read_measurements:
        reads["reading"] = lambda: _final_reading(ctx, job, obs.pods)
    if _keeps_pod_logs(job, p):
        reads["pod_logs"] = lambda: _pod_logs(ctx, job, obs.pods, first=set(p.sick) | set(step.blame))
    return read_all(reads)


def _job_pass(obs: Observation, facts: JobFacts, step: JobStep) -> JobPass:
    """The step as a status write (the evidence it asks for is read next)."""
    clocks = facts.clocks
    p = JobPass(clock_updates=dict(clocks.updates), ran=obs.ran, sick=obs.sick, group=list(step.blame) or obs.group,
                blocked_message=clocks.blocked_message, running=obs.phase.phase == ws.RUNNING or step.action == WAIT,
                label=obs.label, first_start=ws.first_container_start(obs.pods), health_error=obs.health_error,
                terminal=step.terminal if step.action == TERMINAL else None)
    if step.failure_log_fixed is not None:
        p.failure_log = dict(step.failure_log_fixed)
    return p


def _next_look(ctx: Context, job: dict, obs: Observation, clocks, grace: float, timeout: float | None) -> float | None:
    """When this Job needs a look without any event: its next clock deadline, or never.

    Pod, workload and Node changes arrive as watch events; only the clocks (the
    scheduling grace, timeoutPerJob, the stall check) need a timer. Before the watches
    have synced their first list wakes every unfinished Job (``Controller.replace``).
    """
    due = []
    status = job.get("status") or {}
    now = ctx.now()
    if obs.blocked and not clocks.blocked_message:
        since = parse_time(clocks.updates.get("schedulingBlockedSince") or status.get("schedulingBlockedSince")) or now
        due.append(since + grace - now)
    if timeout is not None:
        start = parse_time(clocks.updates.get("workloadStartTime") or status.get("workloadStartTime"))
        if start is not None and not obs.blocked:
            due.append(start + timeout - now)
    gm = dig(job, "spec", "goodputMeasurement")
    if gm and dig(job, "spec", "stallMultiplier"):
        due.append(parse_duration(gm.get("sampleInterval"), 60.0) or 60.0)
    return max(0.5, min(due)) if due else None


def _write_pass(ctx: Context, job: dict, obs: Observation, p: JobPass, reading: Reading | None, wait: float | None,
                next_look: float | None) -> float | None:
    meta = job["metadata"]
    sick: set[str] = set()

    health_news: list[str] = []

    def mutate(o: dict) -> bool:
        sick.clear()
        sick.update(newly_sick(o.get("status") or {}, p.sick))
        health_news.clear()
        if p.health_error and c.message_of(dig(o, "status", "conditions") or [], c.HEALTH_CHECK_ERROR) != p.health_error[1]:
            health_news.append(p.health_error[1])
        return apply_pass(o, p)

    written = write_status(ctx, job, mutate)
    if written is not None and health_news:
        ctx.events.emit(job, "Warning", c.HEALTH_CHECK_ERROR, health_news[-1])
    if written is not None and sick:
        wf = (dig(meta.get("labels"), L.WORKFLOW) or "")
        for node in sorted(sick):
            ctx.metrics.hardware_failures.labels(namespace=meta.get("namespace", ""), job=meta["name"], workflow=wf, node=node).inc()
    if p.terminal is None:  # the last pods' ends arrive as events; ``wait`` is only their deadline
        return min(x for x in (wait, next_look) if x is not None) if wait is not None or next_look is not None else None
    if written is not None:
        ctx.forget(meta.get("uid"), meta.get("namespace", ""), meta["name"])
    _finish_measurements(ctx, job, reading, p.terminal.phase)
    if written is None:
        return None  # gone
    if not _awaiting_verdict(written):
        _cleanup(ctx, written, obs.desired)
        return None
    _await_measurement(ctx, written)


# ---------------------------------------------------------------- verdicts
def _verdict(ctx: Context, job: dict, reading: Reading | None, *, since: float):
    """The threshold decision, or None when there are no thresholds or it must wait for data."""
    from nvcre.measure.thresholds import evaluate_thresholds

    spec = job.get("spec") or {}
    thresholds = spec.get("thresholds") or {}
    if not thresholds:
        return None
    values = reading.values if reading is not None else {}
    timeout = parse_duration(spec.get("measurementTimeout"), ctx.settings.measurement_timeout_seconds) or 0.0
    conds = dig(job, "status", "conditions")
    succeeded = c.find(conds, c.SUCCEEDED) if c.is_true(conds, c.SUCCEEDED) else None
    started = parse_time(succeeded.get("lastTransitionTime")) if succeeded else None
    timed_out = ctx.now() - (started or since) >= timeout
    decision = evaluate_thresholds(thresholds, values, timed_out=timed_out, timeout_seconds=timeout or 300.0)
    return None if decision.pending else decision


def _awaiting_verdict(job: dict) -> bool:
    st = job.get("status") or {}
    return (
        bool(dig(job, "spec", "thresholds"))
        and c.is_true(st.get("conditions"), c.SUCCEEDED)
        and c.find(st.get("conditions"), c.VALIDATION_FAILED) is None
    )


def _measurement_deadline(ctx: Context, job: dict) -> float:
    """When a Succeeded Job's thresholds stop waiting for data: ``measurementTimeout`` after
    Succeeded turned true (as the reference times it)."""
    timeout = parse_duration(dig(job, "spec", "measurementTimeout"), ctx.settings.measurement_timeout_seconds) or 0.0
    conds = dig(job, "status", "conditions")
    succeeded = c.find(conds, c.SUCCEEDED) if c.is_true(conds, c.SUCCEEDED) else None
    started = parse_time(succeeded.get("lastTransitionTime")) if succeeded else None
    return (started if started is not None else ctx.now()) + timeout


def _await_measurement(ctx: Context, job: dict) -> NoReturn:
    """The thresholds wait for a value the final read of the logs did not give (the kubelet
    did not answer, the log was cut short): no watch reports a log becoming readable, so
    ask again with the key's backoff (0.5 s, 1 s, 2 s ...), the last try at the deadline
    when ``_verdict`` turns the wait into ``MeasurementTimeout``."""
    left = max(0.0, _measurement_deadline(ctx, job) - ctx.now())
    raise Retry(f"Job {job['metadata']['name']}: the threshold measurement is not readable yet "
                f"({left:.0f}s left of measurementTimeout)", cap=min(RETRY_MAX_S, left))


def _judge_late(ctx: Context, job: dict, desired: list[dict]) -> float | None:
    """Succeeded but the measurement was not readable yet: read again until the timeout."""
    pods = job_pods(ctx, job["metadata"].get("namespace", ""), job["metadata"]["name"])
    reading = _final_reading(ctx, job, pods)
    decision = _verdict(ctx, job, reading, since=ctx.now())
    if decision is None:
        _await_measurement(ctx, job)
    group = dig(job, "spec", "nodes") or L.group_nodes(job)
    # thresholds failed the Job: keep the nodes' own pod output before the cleanup (the whole
    # group was slow, so no node goes first; failed ranks still do, see ws.log_pods)
    logs = _pod_logs(ctx, job, pods) if decision.failed else []

    def mutate(o: dict) -> bool:
        st = o["status"]
        if c.find(st.get("conditions"), c.VALIDATION_FAILED) is not None:
            return False
        if reading is not None and reading.job_fields:
            st["measurements"] = {**(st.get("measurements") or {}), **reading.job_fields}
        if logs:
            st.setdefault("podLogs", logs)
        apply_verdict(st, decision, group or st.get("nodesRan") or [], o["metadata"].get("generation"))
        return True

    written = write_status(ctx, job, mutate)
    _finish_measurements(ctx, job, reading, c.SUCCEEDED)
    if written is not None:
        _cleanup(ctx, written, desired)
    return None


# ---------------------------------------------------------------- logs and measurements
def _final_reading(ctx: Context, job: dict, pods: list[dict]) -> Reading | None:
    """Read the complete launcher log once and parse it by the Job's measurement config."""
    spec = job.get("spec") or {}
    bw, gp = spec.get("bandwidthMeasurement"), spec.get("goodputMeasurement")
    if not bw and not gp:
        return None
    if bw:
        pod = ws.launcher_pod(pods)
        text = ended_logs.pod_log(ctx, job, pod) if pod else None
        return with_pairs(read_bandwidth(text), text, pods)  # a per-pair check's pairs, named by node
    profile = ctx.kube.get(NVCRE_API_VERSION, "LogProfile", gp.get("logProfileRef", ""))
    return read_goodput(training_logs(ctx.kube, pods, profile), profile, prior_attempt_logs(ctx.kube, job))


def _finish_measurements(ctx: Context, job: dict, reading: Reading | None, outcome: str) -> None:
    """Freeze the Job's measurement objects with the final reading (first write wins)."""
    for mobj in measurement_objects(job):
        kind = mobj["kind"]
        is_bw = kind == "BandwidthMeasurement"
        ok = reading is not None and reading.ok and (is_bw == ("peakBusBwGBps" in reading.status))
        if outcome == c.SUCCEEDED:
            reason = "JobSucceeded" if ok else (reading.note if reading and reading.note in ("LogsUnavailable", "NoDataCollected") else "NoDataCollected")
        else:
            reason = "JobFailed"
        # rows the parser skipped are named by line even when the rest measured (a `1e999` row)
        message = ("final read of the launcher log" + (f"; {reading.message}" if reading.message else "")
                   if ok else ((reading.message or reading.note) if reading else ""))
        existing = ctx.kube.get(NVCRE_API_VERSION, kind, mobj["metadata"]["name"], mobj["metadata"]["namespace"])
        if existing is None:
            continue
        existing.setdefault("apiVersion", NVCRE_API_VERSION)
        existing.setdefault("kind", kind)
        write_status(ctx, existing, lambda o: complete_status(o["status"], reason, message, ctx.now_text(), reading if ok else None))


def _freeze_unfinished(ctx: Context, job: dict) -> None:
    """A crash came between the Job's terminal write and freezing its measurements: freeze
    them now from the final read (the logs are still there: the workload goes only after)."""
    namespace = job["metadata"].get("namespace", "")
    unfinished = False
    for mobj in measurement_objects(job):
        kind, name = mobj["kind"], mobj["metadata"]["name"]
        seen = ctx.cache.get(kind, namespace, name) or ctx.kube.get(NVCRE_API_VERSION, kind, name, namespace)
        if seen is not None and not c.is_true(dig(seen, "status", "conditions"), "Complete"):
            unfinished = True
    if not unfinished:
        return
    reading = _final_reading(ctx, job, job_pods(ctx, namespace, job["metadata"]["name"]))
    outcome = c.SUCCEEDED if c.is_true(dig(job, "status", "conditions"), c.SUCCEEDED) else c.FAILED
    _finish_measurements(ctx, job, reading, outcome)


def _failure_log(ctx: Context, job: dict, pods: list[dict], reason: str | None = None) -> dict:
    """Pod, node, exit code, termination reason and the log's last lines."""
    failed = ws.failed_container(pods)
    if failed is None and reason is None:
        if not pods:
            return {"reason": "PodNotFound", "tail": "no pods for this Job were found when the failure was recorded"}
        return {"reason": "NoTerminatedContainer", "tail": "no container had terminated with a non-zero exit code"}
    if failed is None:  # timeout: the launcher (or first) pod's log
        pod = ws.launcher_pod(pods)
        if pod is None:
            return {"reason": reason, "tail": "no pods were running when the Job timed out"}
        text = ended_logs.pod_log(ctx, job, pod, tail_lines=ws.FAILURE_LOG_LINES)
        entry = {"podName": pod["metadata"]["name"], "nodeName": dig(pod, "spec", "nodeName"), "reason": reason}
        entry["tail"] = ws.log_tail(text)
        return {k: v for k, v in entry.items() if v not in (None, "")}
    pod = next((p for p in pods if dig(p, "metadata", "name") == failed.pod), None) or {"metadata": {"name": failed.pod}}
    text = ended_logs.pod_log(ctx, job, pod, container=failed.container or None, tail_lines=ws.FAILURE_LOG_LINES)
    entry = {
        "podName": failed.pod,
        "nodeName": failed.node or None,
        "exitCode": failed.exit_code,
        "reason": reason or failed.reason,
        "tail": ws.log_tail(text),
    }
    return {k: v for k, v in entry.items() if v not in (None, "")}


def _failing(p: JobPass) -> bool:
    """The pass ends the Job failed, or its thresholds failed it."""
    return p.terminal is not None and (p.terminal.phase == c.FAILED or bool(getattr(p.verdict, "failed", False)))


def _pod_logs(ctx: Context, job: dict, pods: list[dict], first: set[str] = frozenset()) -> list[dict]:
    """Each pod's node, exit code and log tail cut at a line boundary (the failure log's
    helper, a quarter of its caps); pods on the ``first`` nodes come right after the launcher."""
    from nvcre.api.job import MAX_POD_LOGS

    chosen = ws.log_pods(pods, MAX_POD_LOGS, first=first)

    def read(pod: dict):
        return lambda: ended_logs.pod_log(ctx, job, pod, container=ws.main_container(pod)[0], tail_lines=ws.POD_LOG_LINES)

    texts = read_all({str(i): read(pod) for i, pod in enumerate(chosen)})
    out = []
    for i, pod in enumerate(chosen):
        _, code, reason = ws.main_container(pod)
        entry = {"podName": pod["metadata"]["name"], "nodeName": dig(pod, "spec", "nodeName"), "exitCode": code,
                 "reason": reason, "tail": ws.whole_line_tail(texts[str(i)], ws.POD_LOG_LINES, ws.POD_LOG_BYTES)}
        out.append({k: v for k, v in entry.items() if v not in (None, "")})
    return out


# ---------------------------------------------------------------- stall detection
def _stalled(ctx: Context, job: dict, pods: list[dict]) -> str | None:
    """Why a running training workload counts as stalled (stallMultiplier set), or None.

    The rank-0 log is read at most once per goodput sampleInterval per Job; a restart of
    the controller only makes the next check come sooner.
    """
    spec = job.get("spec") or {}
    multiplier = spec.get("stallMultiplier")
    gm = spec.get("goodputMeasurement")
    if not multiplier or not gm:
        return None
    uid = job["metadata"].get("uid", job["metadata"]["name"])
    interval = parse_duration(gm.get("sampleInterval"), 60.0) or 60.0
    now = ctx.now()
    if now - ctx.memos.stall_checked.get(uid, 0.0) < interval:
        return None
    ctx.memos.stall_checked.put(uid, now)
    pod = ws.launcher_pod(pods)
    text = ctx.kube.pod_log(pod["metadata"]["name"], pod["metadata"]["namespace"]) if pod else None
    profile = ctx.kube.get(NVCRE_API_VERSION, "LogProfile", gm.get("logProfileRef", ""))
    if not text or not profile:
        return None
    # two sample intervals of slack, as the reference allows, before calling it a stall
    return stall_verdict(text, profile, now=now - 2 * interval, multiplier=float(multiplier),
                         started_at=parse_time(dig(job, "status", "workloadStartTime")),
                         resumed_at=parse_time(dig(job, "status", "schedulingResumedTime")),
                         startup_timeout=float(spec.get("startupStallTimeoutSeconds") or 1200))


def stall_verdict(text: str, profile: dict, *, now: float, multiplier: float, started_at: float | None,
                  resumed_at: float | None, startup_timeout: float) -> str | None:
    """Pure: the stall reason for a training log at ``now`` (epoch seconds), or None."""
    from datetime import datetime, timezone

    from nvcre.measure.training import parse_training_log, stall_reason

    try:
        metrics = parse_training_log(text, profile)
    except Exception:
        return None  # an unreadable log is not evidence of a stall
    anchor = max(t for t in (started_at, resumed_at, 0.0) if t is not None) or None
    return stall_reason(
        metrics,
        datetime.fromtimestamp(now, timezone.utc),
        stall_multiplier=multiplier,
        started_at=datetime.fromtimestamp(anchor, timezone.utc) if anchor else None,
        startup_stall_timeout_s=startup_timeout,
    )


# ---------------------------------------------------------------- checkpoint restart
def _finished(obj: dict) -> bool:
    return ws.batch_job_phase(obj) in (ws.SUCCEEDED, ws.FAILED) if obj.get("kind") == "Job" else False


def _restart_from_checkpoint(ctx: Context, job: dict, desired: list[dict], pods: list[dict], sick: dict) -> bool:
    """Restart a dead training workload from its checkpoint when allowed; True if it did."""
    budget = restart_budget(job)
    first = decide_restart(budget, sorted(sick), None)
    if not first.restart:
        if budget is not None:
            log.info("Job %s: no restart (%s)", job["metadata"]["name"], first.why)
        return False
    pod = ws.launcher_pod(pods)
    text = ctx.kube.pod_log(pod["metadata"]["name"], pod["metadata"]["namespace"]) if pod else None
    decision = decide_restart(budget, sorted(sick), saved_a_checkpoint(text, log_profile(ctx.kube, job)))
    if not decision.restart:
        log.info("Job %s: no restart, %s (%d bytes of log)", job["metadata"]["name"], decision.why, len(text or ""))
        return False
    attempt = budget[0] + 1
    ctx.kube.create(attempt_log_object(job, attempt, text or ""))
    message = f"Restarting workload from checkpoint (restart {attempt}/{budget[1]})"

    def mutate(o: dict) -> bool:
        st = o["status"]
        if c.is_terminal(st.get("conditions")) or int(st.get("restartCount") or 0) >= attempt:
            return False
        st["restartCount"] = attempt
        for key in ("workloadRef", "workloadStartTime", "schedulingBlockedSince", "schedulingResumedTime"):
            st.pop(key, None)
        c.set_status_phase(st, c.IN_PROGRESS, JobReason.WORKLOAD_RESTARTING, message, generation=o["metadata"].get("generation"))
        return True

    written = write_status(ctx, job, mutate)
    if written is not None and int(dig(written, "status", "restartCount") or 0) >= attempt:
        _cleanup(ctx, written, [o for o in desired if o["kind"] not in KEEP_ON_RESTART])
    return True


# ---------------------------------------------------------------- clean-up
def _fail(o: dict, reason: str, message: str, *, nodes_reason: str) -> bool:
    st = o["status"]
    if c.is_terminal(st.get("conditions")):
        return False
    c.set_status_phase(st, c.FAILED, reason, message, generation=o["metadata"].get("generation"))
    blame(st, dig(o, "spec", "nodes") or L.group_nodes(o), nodes_reason, message)
    return True


def _refuse(o: dict, message: str) -> bool:
    """Failed for a spec the controller will not create: no node is to blame."""
    st = o["status"]
    if c.is_terminal(st.get("conditions")):
        return False
    c.set_status_phase(st, c.FAILED, JobReason.WORKLOAD_CREATION_ERROR, message, generation=o["metadata"].get("generation"))
    return True


def _cleanup(ctx: Context, job: dict, desired: list[dict]) -> None:
    """Delete the workload objects (and with them their pods) once the Job is decided."""
    if spec_guard.refusal(desired):
        return  # nothing is created from a refused spec
    for obj in desired:
        meta = obj["metadata"]
        current = ctx.kube.get(obj["apiVersion"], obj["kind"], meta["name"], meta.get("namespace"))
        if current is None or current["metadata"].get("deletionTimestamp"):
            continue
        if not L.controlled_by(current, job):
            continue  # never delete what another owner made
        ctx.kube.delete(obj["apiVersion"], obj["kind"], meta["name"], meta.get("namespace"), uid=current["metadata"]["uid"])
