"""Reading a running workload: its phase, scheduling stalls and the failure excerpt.

Pure functions over the plain objects the API server returns (batch/v1 Jobs,
Kubeflow TrainJobs, Pods), so the Job reconciler's decisions can be tested
without a cluster.
"""

from __future__ import annotations

from dataclasses import dataclass

from nvcre.controller import labels as L
from nvcre.measure.failures import log_tail as _log_tail
from nvcre.objpath import dig

PENDING, RUNNING, SUCCEEDED, FAILED, ABSENT = "Pending", "Running", "Succeeded", "Failed", "Absent"
ROLE_LABELS = ("nvcre.nvidia.com/role", "training.kubeflow.org/replica-type", "jobset.sigs.k8s.io/replicatedjob-name")
LAUNCHER_STEP_LABEL = "trainer.kubeflow.org/trainjob-ancestor-step"
FAILURE_LOG_LINES = 800
FAILURE_LOG_BYTES = 32 * 1024
# A WorkloadRun keeps every pod's tail (status.podLogs): a quarter of the failure log's caps each
POD_LOG_LINES = 200
POD_LOG_BYTES = FAILURE_LOG_BYTES // 4


@dataclass(frozen=True)
class WorkloadPhase:
    phase: str
    message: str = ""


def _cond(obj: dict, ctype: str) -> dict | None:
    for cond in dig(obj, "status", "conditions") or []:
        if cond.get("type") == ctype and cond.get("status") == "True":
            return cond
    return None


def is_launcher(obj: dict) -> bool:
    """Whether a workload object or pod is the launcher whose end decides the run."""
    meta = obj.get("metadata") or {}
    labels = meta.get("labels") or {}
    for key in ROLE_LABELS:  # asked of every pod of a group several times a pass: no generator
        value = labels.get(key)
        if value is not None and str(value).lower() == "launcher":
            return True
    if labels.get(LAUNCHER_STEP_LABEL) == "trainer":
        return True
    return "-launcher" in meta.get("name", "")


def batch_job_phase(job: dict) -> str:
    if _cond(job, "Failed"):
        return FAILED
    if _cond(job, "Complete") or _cond(job, "SuccessCriteriaMet"):
        return SUCCEEDED
    status = job.get("status") or {}
    if status.get("active") or status.get("ready") or status.get("succeeded"):
        return RUNNING
    return PENDING


def workload_phase(objects: list[dict], pods: list[dict]) -> WorkloadPhase:
    """The workload's phase from its top objects (batch Jobs or a TrainJob) and pods.

    With a launcher (MPI), the launcher's end decides; otherwise every batch Job must
    complete. Any Failed object fails the run. Running means at least one pod runs.
    """
    if not objects:
        return WorkloadPhase(ABSENT)
    trainjobs = [o for o in objects if o.get("kind") == "TrainJob"]
    if trainjobs:
        tj = trainjobs[0]
        if (c := _cond(tj, "Failed")) is not None:
            return WorkloadPhase(FAILED, c.get("message", ""))
        if (c := _cond(tj, "Complete")) is not None:
            return WorkloadPhase(SUCCEEDED, c.get("message", ""))
        if dig(tj, "spec", "suspend"):
            return WorkloadPhase(PENDING, "suspended")
        if any(dig(p, "status", "phase") in ("Running", "Succeeded") for p in pods):
            # Pods ran and some finished: the TrainJob is finishing (JobSet and Trainer
            # set Complete a moment after the launcher exits), not pending again.
            return WorkloadPhase(RUNNING)
    batch = [o for o in objects if o.get("kind") == "Job" and o.get("apiVersion") == "batch/v1"]
    if batch:
        for job in batch:
            if batch_job_phase(job) == FAILED:
                cond = _cond(job, "Failed") or {}
                return WorkloadPhase(FAILED, cond.get("message") or cond.get("reason", ""))
        launchers = [j for j in batch if is_launcher(j)]
        deciding = launchers or batch
        if all(batch_job_phase(j) == SUCCEEDED for j in deciding):
            return WorkloadPhase(SUCCEEDED)
        if (ended := launcher_pod_end(launchers, pods)) is not None:
            return ended
    if any(dig(p, "status", "phase") == "Running" for p in pods):
        return WorkloadPhase(RUNNING)
    if any(dig(p, "status", "phase") == "Failed" for p in pods) and not batch and not trainjobs:
        return WorkloadPhase(FAILED, "a pod failed")
    return WorkloadPhase(PENDING)


def pod_ended(pod: dict) -> str | None:
    """SUCCEEDED or FAILED once a pod has ended, else None.

    The phase when the kubelet has posted it; before that, main containers that have all
    terminated and will not be restarted (``restartPolicy`` Never, or OnFailure with every
    exit code 0): a kubelet posts the containers' end first and the phase in a later status
    update, seconds later when hundreds of pods end at once.
    """
    phase = dig(pod, "status", "phase")
    if phase in ("Succeeded", "Failed"):
        return SUCCEEDED if phase == "Succeeded" else FAILED
    statuses = dig(pod, "status", "containerStatuses") or []
    ends = [dig(cs, "state", "terminated") for cs in statuses]
    if not ends or any(end is None for end in ends):
        return None
    ok = all(end.get("exitCode") == 0 for end in ends)
    policy = dig(pod, "spec", "restartPolicy") or "Always"
    if policy == "Never" or (policy == "OnFailure" and ok):
        return SUCCEEDED if ok else FAILED
    return None


def launcher_pod_end(launchers: list[dict], pods: list[dict]) -> WorkloadPhase | None:
    """The run's end read from the launcher pod itself, before the job controller marks its
    batch Job (seconds later at fleet scale): with ``backoffLimit: 0`` a launcher pod that
    has ended (``pod_ended``) is the run's end, exit 0 a success and anything else a failure."""
    if len(launchers) != 1 or int(dig(launchers[0], "spec", "backoffLimit") or 0) != 0:
        return None
    mine = [p for p in pods if is_launcher(p) and not dig(p, "metadata", "deletionTimestamp")]
    if len(mine) != 1:
        return None
    ended = pod_ended(mine[0])
    if ended == SUCCEEDED:
        return WorkloadPhase(SUCCEEDED)
    if ended == FAILED:
        failed = failed_container(mine)
        return WorkloadPhase(FAILED, f"launcher pod {mine[0]['metadata']['name']} failed"
                                     + (f" (exit code {failed.exit_code}, {failed.reason})" if failed else ""))
    return None


def unschedulable_message(pods: list[dict]) -> str | None:
    """The scheduler's message if a pod is unscheduled with PodScheduled=False/Unschedulable.

    SchedulingGated pods and pods without a PodScheduled condition do not count: they
    are waiting on something else than free capacity.
    """
    unbound = [p for p in pods if not dig(p, "spec", "nodeName") and not dig(p, "metadata", "deletionTimestamp")]
    for pod in sorted(unbound, key=lambda p: p.get("metadata", {}).get("name", "")):  # the bound are most: sort the rest
        for cond in dig(pod, "status", "conditions") or []:
            if cond.get("type") == "PodScheduled" and cond.get("status") == "False" and cond.get("reason") == "Unschedulable":
                return cond.get("message") or "pod is unschedulable"
    return None


def _uses_gpus(pod: dict) -> bool:
    for container in dig(pod, "spec", "containers") or []:
        res = container.get("resources") or {}
        for section in ("limits", "requests"):
            if str((dig(res.get(section), "nvidia.com/gpu") or "0")) not in ("0", ""):
                return True
    return bool(dig(pod, "spec", "resourceClaims"))


def placement_record(pod: dict) -> dict | None:
    """What ``pod_nodes`` needs of a bound pod, kept from the watch: a pod that ran and was
    gone before the next look (replaced, evicted, cleaned up) still counts where it ran."""
    spec = pod.get("spec") or {}
    if not spec.get("nodeName"):
        return None
    return {
        "metadata": {"name": (dig(pod.get("metadata"), "name") or "")},
        "spec": {
            "nodeName": spec["nodeName"],
            "containers": [{"resources": c.get("resources") or {}} for c in spec.get("containers") or []],
            **({"resourceClaims": spec["resourceClaims"]} if spec.get("resourceClaims") else {}),
        },
    }


def with_remembered(pods: list[dict], remembered: dict[str, dict]) -> list[dict]:
    """The listed pods plus the remembered placements of pods no longer listed."""
    listed = {dig(p, "metadata", "name") for p in pods}
    gone = sorted(name for name in remembered if name not in listed)  # usually none: sort only those
    return list(pods) + [remembered[name] for name in gone]


def pod_nodes(pods: list[dict], *, live_only: bool = False) -> list[str]:
    """Nodes the workload's ranks (the pods that use GPUs; all pods if none do) ran on, sorted."""
    ranks = [p for p in pods if _uses_gpus(p)] or pods
    out = set()
    for pod in ranks:
        node = dig(pod, "spec", "nodeName")
        phase = dig(pod, "status", "phase")
        if node and (not live_only or phase in ("Pending", "Running", None)):
            out.add(node)
    return sorted(out)


def first_container_start(pods: list[dict]) -> str | None:
    """The earliest container start among the workload's pods (RFC 3339), if any ran."""
    starts = []
    for pod in pods:
        for cs in dig(pod, "status", "containerStatuses") or []:
            for state in ("running", "terminated"):
                started = dig(cs.get("state"), state, "startedAt")
                if started:
                    starts.append(started)
    return min(starts) if starts else None


@dataclass(frozen=True)
class FailedContainer:
    pod: str
    node: str
    container: str
    exit_code: int
    reason: str


def failed_container(pods: list[dict]) -> FailedContainer | None:
    """The first container that terminated with a non-zero code, OOMKilled preferred."""
    found: list[FailedContainer] = []
    for pod in sorted(pods, key=lambda p: p.get("metadata", {}).get("name", "")):
        status = pod.get("status") or {}
        for cs in (status.get("initContainerStatuses") or []) + (status.get("containerStatuses") or []):
            for state_key in ("state", "lastState"):
                term = dig(cs.get(state_key), "terminated")
                if term and term.get("exitCode", 0) != 0:
                    found.append(
                        FailedContainer(
                            pod=pod["metadata"]["name"],
                            node=(dig(pod.get("spec"), "nodeName") or ""),
                            container=cs.get("name", ""),
                            exit_code=int(term.get("exitCode", 1)),
                            reason=term.get("reason") or "Error",
                        )
                    )
                    break
    oom = [f for f in found if f.reason == "OOMKilled"]
    return (oom or found or [None])[0]


def log_tail(text: str | None, lines: int = FAILURE_LOG_LINES, limit: int = FAILURE_LOG_BYTES) -> str:
    """The failure log tail: the last ``lines`` lines, then exactly the last ``limit`` bytes
    (``nvcre.measure.failures.log_tail``)."""
    return _log_tail(text or "", max_lines=lines, max_bytes=limit)


def whole_line_tail(text: str | None, lines: int, limit: int) -> str:
    """``log_tail`` without the fragment its byte cap leaves at the front: whole lines only
    (our ``podLogs``; the reference's ``failureLog.tail`` keeps the cap where it falls)."""
    tail = log_tail(text, lines, limit)
    whole = log_tail(text, lines, 1 << 62)
    if tail == whole or "\n" not in tail[:-1]:
        return tail
    start = len(whole) - len(tail)
    return tail if whole[start - 1] == "\n" else tail.split("\n", 1)[1]


def launcher_pod(pods: list[dict]) -> dict | None:
    """The pod whose log carries the results: the launcher, else the first rank."""
    ordered = sorted(pods, key=lambda p: p.get("metadata", {}).get("name", ""))
    launchers = [p for p in ordered if is_launcher(p)]
    if launchers:
        return launchers[0]
    ranked = sorted(ordered, key=lambda p: int((dig(p.get("metadata", {}).get("annotations"), "batch.kubernetes.io/job-completion-index") or 0) or 0))
    return ranked[0] if ranked else None


def log_pods(pods: list[dict], limit: int, first: set[str] | frozenset[str] = frozenset()) -> list[dict]:
    """The pods whose log tails a Job keeps: the launcher first, then the ranks on the
    ``first`` nodes (the sick or blamed ones, so a large group still keeps theirs), then
    ranks that ended with a non-zero exit code, then the other ranks in order."""
    launchers = sorted((p for p in pods if is_launcher(p)), key=lambda p: dig(p, "metadata", "name") or "")

    def order(pod: dict) -> int:
        if dig(pod, "spec", "nodeName") in first:
            return 0
        return 1 if main_container(pod)[1] not in (None, 0) else 2

    ranks = sorted(rank_ordered(pods), key=order)  # stable: rank order within each class
    return (launchers + ranks)[:limit]


def main_container(pod: dict) -> tuple[str | None, int | None, str | None]:
    """(the pod's first container, its exit code and termination reason once it has ended)."""
    containers = dig(pod, "spec", "containers") or []
    name = containers[0].get("name") if containers else None
    for cs in dig(pod, "status", "containerStatuses") or []:
        if cs.get("name") == name:
            term = dig(cs, "state", "terminated") or dig(cs, "lastState", "terminated") or {}
            code = term.get("exitCode")
            return name, (int(code) if code is not None else None), term.get("reason") or None
    return name, None, None


def rank_ordered(pods: list[dict]) -> list[dict]:
    """GPU rank pods (no launcher) in completion-index order."""
    ranks = [p for p in pods if not is_launcher(p)]
    return sorted(
        ranks,
        key=lambda p: (
            int((dig(p.get("metadata", {}).get("annotations"), "batch.kubernetes.io/job-completion-index") or 0) or 0),
            p.get("metadata", {}).get("name", ""),
        ),
    )


def training_log_pods(pods: list[dict], profile: dict | None) -> list[dict]:
    """The pods whose logs a training LogProfile reads, in worker order.

    A ``Multi`` worker strategy takes lifecycle events from one rank and steps from
    another (Megatron prints iteration lines on the last rank only), so both logs are
    needed; a single-worker profile reads the result pod alone.
    """
    strategy = dig(profile, "spec", "workerStrategy") or {}
    ranks = rank_ordered(pods)
    if strategy.get("type") != "Multi" or len(ranks) < 2:
        pod = launcher_pod(pods)
        return [pod] if pod else []
    return [ranks[0], ranks[-1]]


def job_pod_selector(job_name: str) -> str:
    return f"{L.JOB}={job_name}"


def image_digest(pods: list[dict]) -> str | None:
    """The image the workload's main container really ran, as the kubelet reports it
    (``imageID``: a digest), so a record says what ran, not only which tag was asked for."""
    for pod in pods:
        for cs in dig(pod, "status", "containerStatuses") or []:
            image_id = cs.get("imageID") or ""
            if "@sha256:" in image_id:
                return image_id[:512]
    return None
