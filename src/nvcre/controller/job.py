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
from nvcre.controller import workload_state as ws
from nvcre.controller.conditions import JobReason, NodeReason
from nvcre.controller.context import Context, parse_duration, parse_time, write_status
from nvcre.controller.health_check import unhealthy_nodes
from nvcre.controller.measurements import (
    Reading,
    complete_status,
    measurement_objects,
    read_bandwidth,
    read_goodput,
    training_logs,
)
from nvcre.kube.resources import NVCRE_API_VERSION

log = logging.getLogger(__name__)

TRAINJOB_API = "trainer.kubeflow.org/v1alpha1"
INCLUDE_CORDONED = L.PREFIX + "include-cordoned"


# ---------------------------------------------------------------- desired workload
def desired_workload(job: dict) -> list[dict]:
    """The workload objects this Job creates: labelled, owned by the Job, in its namespace."""
    meta, spec = job["metadata"], job.get("spec") or {}
    workload = spec.get("workload") or {}
    ns = meta.get("namespace")
    if workload.get("trainJob") is not None:
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
    wf = (meta.get("labels") or {}).get(L.WORKFLOW)
    extra = ((spec.get("workloadMetadata") or {}).get("labels")) or {}
    for obj in objects:
        om = obj.setdefault("metadata", {})
        om["namespace"] = ns
        om.setdefault("labels", {}).update({**extra, **L.managed_labels(job=meta["name"], workflow=wf)})
        om["ownerReferences"] = [L.owner_reference(job)]
        template = (obj.get("spec") or {}).get("template")
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
    kube = ctx.kube
    job = kube.get(NVCRE_API_VERSION, "Job", name, namespace)
    if job is None or job["metadata"].get("deletionTimestamp"):
        return None
    ctx.metrics.store.put(job)
    status = job.get("status") or {}
    conds = status.get("conditions") or []
    desired = desired_workload(job)

    if c.is_terminal(conds):
        if _awaiting_verdict(job):
            return _judge_late(ctx, job, desired)
        _cleanup(ctx, job, desired)
        return None

    if not status.get("workloadRef"):
        return _create_workload(ctx, job, desired)

    observed = [o for o in (_get(ctx, o) for o in desired) if o is not None]
    pods = kube.list("v1", "Pod", namespace, label_selector=ws.job_pod_selector(name))
    return _observe(ctx, job, desired, observed, pods)


def _get(ctx: Context, obj: dict) -> dict | None:
    got = ctx.kube.get(obj["apiVersion"], obj["kind"], obj["metadata"]["name"], obj["metadata"].get("namespace"))
    if got is not None:
        got.setdefault("apiVersion", obj["apiVersion"])
        got.setdefault("kind", obj["kind"])
    return got


def _create_workload(ctx: Context, job: dict, desired: list[dict]) -> float | None:
    meta = job["metadata"]
    if not desired:
        msg = "spec.workload has neither trainJob nor native.objects: nothing to run"
        write_status(ctx, job, lambda o: _fail(o, JobReason.WORKLOAD_CREATION_ERROR, msg, nodes_reason=NodeReason.WORKLOAD_FAILED))
        return None
    created_any = False
    for mobj in measurement_objects(job):
        try:
            ctx.kube.create(mobj)
        except Exception as err:
            ctx.events.emit(job, "Warning", "MeasurementCreationError", f"{mobj['kind']} {mobj['metadata']['name']}: {err}")
    restarted = int((job.get("status") or {}).get("restartCount") or 0) > 0
    for obj in desired:
        current = _get(ctx, obj) if restarted else None
        if current is not None and current["metadata"].get("deletionTimestamp"):
            return 2.0  # the previous attempt's object is still going away
        if current is not None and _finished(current):
            ctx.kube.delete(obj["apiVersion"], obj["kind"], obj["metadata"]["name"], obj["metadata"].get("namespace"),
                            uid=current["metadata"]["uid"])
            return 2.0  # left over from the interrupted attempt
        try:
            _, created = ctx.kube.create(obj)
        except Exception as err:  # API refusals are retried with backoff; they do not fail the Job
            ctx.events.emit(job, "Warning", JobReason.WORKLOAD_CREATION_ERROR, f"{obj['kind']} {obj['metadata']['name']}: {err}")
            return 10.0
        created_any |= created
        if created:
            wf = (meta.get("labels") or {}).get(L.WORKFLOW, "")
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
    return ctx.settings.poll_seconds


def _observe(ctx: Context, job: dict, desired: list[dict], observed: list[dict], pods: list[dict]) -> float | None:
    meta, spec = job["metadata"], job.get("spec") or {}
    now = ctx.now()
    group = spec.get("nodes") or L.group_nodes(job)
    ran = ws.pod_nodes(ws.with_remembered(pods, ctx.placements.get((meta.get("namespace", ""), meta["name"])) or {}))

    # health: every node of the group (or where pods ran), before any failure is attributed
    include_cordoned = (meta.get("annotations") or {}).get(INCLUDE_CORDONED) == "true"
    watch = sorted(set(group) | set(ran))
    if len(watch) > 4:  # one LIST beats many GETs
        wanted = set(watch)
        nodes = [n for n in ctx.kube.list("v1", "Node", label_selector="nvidia.com/gpu.present") if n["metadata"]["name"] in wanted]
    else:
        nodes = [n for n in (ctx.kube.get("v1", "Node", nn) for nn in watch) if n is not None]
    try:
        sick = unhealthy_nodes(spec, nodes, include_cordoned=include_cordoned)
    except Exception as err:  # a detector that does not compile is reported, the run goes on
        ctx.events.emit(job, "Warning", "NodeHealthMonitorError", str(err))
        sick = {}

    phase = ws.workload_phase(observed, pods)
    blocked = ws.unschedulable_message(pods) if phase.phase in (ws.PENDING, ws.RUNNING) else None
    grace = float(spec.get("schedulingStallGraceSeconds") or ctx.settings.scheduling_stall_grace_seconds)
    timeout = parse_duration(spec.get("timeoutPerJob"), None)
    decision = clock.advance(
        job.get("status") or {},
        now=now,
        running=phase.phase == ws.RUNNING,
        unschedulable=blocked,
        grace_seconds=grace,
        timeout_seconds=timeout,
    )
    primary = _primary(observed) or _primary(desired)
    label = f"{primary['kind']}/{primary['metadata']['name']}" if primary else "workload"

    failure_log = None
    reading: Reading | None = None
    terminal: tuple[str, str, str] | None = None  # (phase, reason, message)
    verdict = None
    if phase.phase == ws.ABSENT:
        terminal = (c.FAILED, JobReason.WORKLOAD_FAILED, f"Workload {label} was deleted")
    elif phase.phase == ws.FAILED and _restart_from_checkpoint(ctx, job, desired, pods, sick):
        return 2.0
    elif phase.phase == ws.FAILED:
        failure_log = _failure_log(ctx, job, pods)
        reading = _final_reading(ctx, job, pods)  # what it measured before dying (goodput of a crash)
        detail = f": {phase.message}" if phase.message else ""
        terminal = (c.FAILED, JobReason.WORKLOAD_FAILED, f"Workload {label} has failed{detail}")
    elif phase.phase == ws.SUCCEEDED:
        reading = _final_reading(ctx, job, pods)
        terminal = (c.SUCCEEDED, JobReason.WORKLOAD_COMPLETED, f"Workload {label} completed successfully")
        verdict = _verdict(ctx, job, reading, since=now)
    elif decision.timed_out:
        failure_log = _failure_log(ctx, job, pods, reason="Timeout")
        terminal = (c.FAILED, JobReason.JOB_TIMED_OUT, decision.timed_out)
    elif phase.phase == ws.RUNNING and not blocked and (stalled := _stalled(ctx, job, pods)):
        if _restart_from_checkpoint(ctx, job, desired, pods, sick):
            return 2.0
        failure_log = _failure_log(ctx, job, pods, reason="Stalled")
        terminal = (c.FAILED, JobReason.WORKLOAD_STALLED, f"Workload stalled: {stalled}")

    newly_sick: set[str] = set()

    def mutate(o: dict) -> bool:
        st = o["status"]
        if c.is_terminal(st.get("conditions")):
            return False  # someone (an earlier pass) already decided
        gen = o["metadata"].get("generation")
        before = copy.deepcopy(st)
        known = {n["name"] for n in st.get("failedNodes") or [] if n.get("reason") == NodeReason.HARDWARE_FAILURE_DETECTED}
        newly_sick.clear()
        newly_sick.update(set(sick) - known)
        for key, value in decision.updates.items():
            if value is None:
                st.pop(key, None)
            else:
                st[key] = value
        if ran:
            st["nodesRan"] = sorted(set(st.get("nodesRan") or []) | set(ran))
        if sick:
            entries = [{"name": n, "reason": NodeReason.HARDWARE_FAILURE_DETECTED, "message": m} for n, m in sorted(sick.items())]
            st["failedNodes"], added = c.merge_failed_nodes(st.get("failedNodes"), entries)
            if added:
                c.set_condition(
                    st.setdefault("conditions", []), c.HARDWARE_FAILED, True, JobReason.HARDWARE_FAILURE_DETECTED,
                    f"Hardware failure detected on node(s): [{' '.join(sorted(sick))}]", generation=gen,
                )
        if terminal is not None:
            t_phase, t_reason, t_message = terminal
            if not st.get("workloadStartTime") and (started := ws.first_container_start(pods)):
                st["workloadStartTime"] = started  # it ran and ended between two looks
            c.set_status_phase(st, t_phase, t_reason, t_message, generation=gen)
            if failure_log is not None:
                st.setdefault("failureLog", failure_log)
            # A timeout while the pods could not even be scheduled is the cluster's
            # capacity, not the nodes' fault: nobody is named then.
            if t_phase == c.FAILED and not (blocked and t_reason == JobReason.JOB_TIMED_OUT):
                _blame(st, group or ran or st.get("nodesRan") or [], NodeReason.WORKLOAD_FAILED, t_message)
            if reading is not None and reading.job_fields:
                st["measurements"] = {**(st.get("measurements") or {}), **reading.job_fields}
            if verdict is not None:
                _apply_verdict(st, verdict, group or ran, gen)
        else:
            if decision.blocked_message:
                reason, message = JobReason.WORKLOAD_SCHEDULING_BLOCKED, decision.blocked_message
            elif phase.phase == ws.RUNNING:
                reason, message = JobReason.WORKLOAD_RUNNING, f"Workload {label} is running"
            else:
                current = c.reason_of(st.get("conditions"), c.IN_PROGRESS)
                reason = current if current in (JobReason.WORKLOAD_CREATED, JobReason.WORKLOAD_ADOPTED) else JobReason.WORKLOAD_PENDING
                message = c.message_of(st.get("conditions"), c.IN_PROGRESS) if reason != JobReason.WORKLOAD_PENDING else f"Workload {label} is pending"
            c.set_status_phase(st, c.IN_PROGRESS, reason, message, generation=gen)
        return st != before

    written = write_status(ctx, job, mutate)
    if written is not None and newly_sick:
        wf = (meta.get("labels") or {}).get(L.WORKFLOW, "")
        for node in sorted(newly_sick):
            ctx.metrics.hardware_failures.labels(namespace=meta.get("namespace", ""), job=meta["name"], workflow=wf, node=node).inc()
    if terminal is not None:
        if written is not None:
            ctx.placements.pop((meta.get("namespace", ""), meta["name"]), None)
        _finish_measurements(ctx, job, reading, terminal[0])
        if written is not None and not _awaiting_verdict(written):
            _cleanup(ctx, written, desired)
            return None
        return 5.0
    return min(ctx.settings.poll_seconds, max(1.0, grace / 2)) if blocked else ctx.settings.poll_seconds


# ---------------------------------------------------------------- verdicts
def _blame(status: dict, nodes: list[str], reason: str, message: str) -> None:
    """Name every group node, only when no node was named more precisely before."""
    if status.get("failedNodes") or not nodes:
        return
    entries = [{"name": n, "reason": reason, "message": message[:1024]} for n in nodes]
    status["failedNodes"], _ = c.merge_failed_nodes(status.get("failedNodes"), entries)


def _verdict(ctx: Context, job: dict, reading: Reading | None, *, since: float):
    """The threshold decision, or None when there are no thresholds or it must wait for data."""
    from nvcre.measure.thresholds import evaluate_thresholds

    spec = job.get("spec") or {}
    thresholds = spec.get("thresholds") or {}
    if not thresholds:
        return None
    values = reading.values if reading is not None else {}
    timeout = parse_duration(spec.get("measurementTimeout"), ctx.settings.measurement_timeout_seconds) or 0.0
    conds = (job.get("status") or {}).get("conditions")
    succeeded = c.find(conds, c.SUCCEEDED) if c.is_true(conds, c.SUCCEEDED) else None
    started = parse_time(succeeded.get("lastTransitionTime")) if succeeded else None
    timed_out = ctx.now() - (started or since) >= timeout
    decision = evaluate_thresholds(thresholds, values, timed_out=timed_out, timeout_seconds=timeout or 300.0)
    return None if decision.pending else decision


def _apply_verdict(status: dict, decision, nodes: list[str], generation) -> None:
    conds = status.setdefault("conditions", [])
    c.set_condition(conds, c.VALIDATION_FAILED, decision.failed, decision.reason, decision.message, generation=generation)
    evals = [e.to_dict() for e in decision.evaluations]
    if evals:
        status["measurements"] = {**(status.get("measurements") or {}), "thresholds": evals}
    if decision.failed:
        _blame(status, nodes, NodeReason.THRESHOLD_VIOLATION, decision.message)


def _awaiting_verdict(job: dict) -> bool:
    st = job.get("status") or {}
    return (
        bool((job.get("spec") or {}).get("thresholds"))
        and c.is_true(st.get("conditions"), c.SUCCEEDED)
        and c.find(st.get("conditions"), c.VALIDATION_FAILED) is None
    )


def _judge_late(ctx: Context, job: dict, desired: list[dict]) -> float | None:
    """Succeeded but the measurement was not readable yet: try again until the timeout."""
    pods = ctx.kube.list("v1", "Pod", job["metadata"].get("namespace"), label_selector=ws.job_pod_selector(job["metadata"]["name"]))
    reading = _final_reading(ctx, job, pods)
    decision = _verdict(ctx, job, reading, since=ctx.now())
    if decision is None:
        return 5.0
    group = (job.get("spec") or {}).get("nodes") or L.group_nodes(job)

    def mutate(o: dict) -> bool:
        st = o["status"]
        if c.find(st.get("conditions"), c.VALIDATION_FAILED) is not None:
            return False
        if reading is not None and reading.job_fields:
            st["measurements"] = {**(st.get("measurements") or {}), **reading.job_fields}
        _apply_verdict(st, decision, group or st.get("nodesRan") or [], o["metadata"].get("generation"))
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
        return read_bandwidth(ctx.kube.pod_log(pod["metadata"]["name"], pod["metadata"]["namespace"]) if pod else None)
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
        message = "final read of the launcher log" if ok else ((reading.message or reading.note) if reading else "")
        existing = ctx.kube.get(NVCRE_API_VERSION, kind, mobj["metadata"]["name"], mobj["metadata"]["namespace"])
        if existing is None:
            continue
        existing.setdefault("apiVersion", NVCRE_API_VERSION)
        existing.setdefault("kind", kind)
        write_status(ctx, existing, lambda o: complete_status(o["status"], reason, message, ctx.now_text(), reading if ok else None))


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
        text = ctx.kube.pod_log(pod["metadata"]["name"], pod["metadata"]["namespace"], tail_lines=ws.FAILURE_LOG_LINES)
        entry = {"podName": pod["metadata"]["name"], "nodeName": (pod.get("spec") or {}).get("nodeName"), "reason": reason}
        entry["tail"] = ws.log_tail(text)[-8000:]
        return {k: v for k, v in entry.items() if v not in (None, "")}
    namespace = job["metadata"].get("namespace")
    text = ctx.kube.pod_log(failed.pod, namespace, container=failed.container or None, tail_lines=ws.FAILURE_LOG_LINES)
    entry = {
        "podName": failed.pod,
        "nodeName": failed.node or None,
        "exitCode": failed.exit_code,
        "reason": reason or failed.reason,
        "tail": ws.log_tail(text)[-8000:],
    }
    return {k: v for k, v in entry.items() if v not in (None, "")}


# ---------------------------------------------------------------- stall detection
_STALL_CHECKED: dict[str, float] = {}  # Job uid -> when its log was last read for a stall check


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
    if now - _STALL_CHECKED.get(uid, 0.0) < interval:
        return None
    _STALL_CHECKED[uid] = now
    pod = ws.launcher_pod(pods)
    text = ctx.kube.pod_log(pod["metadata"]["name"], pod["metadata"]["namespace"]) if pod else None
    profile = ctx.kube.get(NVCRE_API_VERSION, "LogProfile", gm.get("logProfileRef", ""))
    if not text or not profile:
        return None
    # two sample intervals of slack, as the reference allows, before calling it a stall
    return stall_verdict(text, profile, now=now - 2 * interval, multiplier=float(multiplier),
                         started_at=parse_time((job.get("status") or {}).get("workloadStartTime")),
                         resumed_at=parse_time((job.get("status") or {}).get("schedulingResumedTime")),
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
    if budget is None or budget[0] >= budget[1] or sick:
        if budget is not None:
            log.info("Job %s: no restart (restarts %s, unhealthy nodes %s)", job["metadata"]["name"], budget, sorted(sick))
        return False  # no checkpointing, no restarts left, or a node is unhealthy (restarting there is futile)
    pod = ws.launcher_pod(pods)
    text = ctx.kube.pod_log(pod["metadata"]["name"], pod["metadata"]["namespace"]) if pod else None
    if not saved_a_checkpoint(text, log_profile(ctx.kube, job)):
        log.info("Job %s: no restart, the dead attempt saved no checkpoint (%d bytes of log)", job["metadata"]["name"], len(text or ""))
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
    if written is not None and int((written.get("status") or {}).get("restartCount") or 0) >= attempt:
        _cleanup(ctx, written, [o for o in desired if o["kind"] not in KEEP_ON_RESTART])
    return True


# ---------------------------------------------------------------- clean-up
def _fail(o: dict, reason: str, message: str, *, nodes_reason: str) -> bool:
    st = o["status"]
    if c.is_terminal(st.get("conditions")):
        return False
    c.set_status_phase(st, c.FAILED, reason, message, generation=o["metadata"].get("generation"))
    _blame(st, (o.get("spec") or {}).get("nodes") or L.group_nodes(o), nodes_reason, message)
    return True


def _cleanup(ctx: Context, job: dict, desired: list[dict]) -> None:
    """Delete the workload objects (and with them their pods) once the Job is decided."""
    for obj in desired:
        meta = obj["metadata"]
        current = ctx.kube.get(obj["apiVersion"], obj["kind"], meta["name"], meta.get("namespace"))
        if current is None or current["metadata"].get("deletionTimestamp"):
            continue
        if not L.controlled_by(current, job):
            continue  # never delete what another owner made
        ctx.kube.delete(obj["apiVersion"], obj["kind"], meta["name"], meta.get("namespace"), uid=current["metadata"]["uid"])
