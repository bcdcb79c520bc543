"""BandwidthMeasurement / GoodputMeasurement reconcilers: logs -> metrics by LogProfile.

While the Job runs, the launcher log is sampled every ``sampleInterval`` into
provisional results (Measuring=True). When the Job ends, the Job reconciler freezes
the measurement with its one complete read; this reconciler is the safety net for a
measurement the Job did not freeze (created by hand, or a restart in between), and
never touches a Complete one.
"""

from __future__ import annotations

from nvcre.controller import conditions as c
from nvcre.controller import workload_state as ws
from nvcre.controller.gather import job_pods
from nvcre.controller.context import Context, parse_duration, parse_time, write_status
from nvcre.controller.measurements import BANDWIDTH_PROFILES, complete_status, read_bandwidth, read_goodput, training_logs
from nvcre.kube.resources import NVCRE_API_VERSION
from nvcre.objpath import dig


JOB_FREEZE_GRACE = 30.0  # seconds the Job reconciler gets to freeze its measurement itself


def _read(ctx: Context, kind: str, m: dict, job_name: str):
    """A sample of the Job's logs, parsed by the measurement's profile."""
    namespace, spec = m["metadata"]["namespace"], m.get("spec") or {}
    pods = job_pods(ctx, namespace, job_name)
    profile_name = spec.get("logProfileRef", "")
    if kind == "BandwidthMeasurement" or profile_name in BANDWIDTH_PROFILES:
        pod = ws.launcher_pod(pods)
        return read_bandwidth(ctx.kube.pod_log(pod["metadata"]["name"], namespace) if pod else None)
    profile = ctx.kube.get(NVCRE_API_VERSION, "LogProfile", profile_name)
    if profile is None:
        ctx.events.emit(m, "Warning", "LogProfileNotFound", f"LogProfile {profile_name} does not exist")
    return read_goodput(training_logs(ctx.kube, pods, profile), profile)


def _make(kind: str):
    def reconcile(ctx: Context, namespace: str, name: str) -> float | None:
        m = ctx.kube.get(NVCRE_API_VERSION, kind, name, namespace)
        if m is None or m["metadata"].get("deletionTimestamp"):
            if m is None:  # deleted while a watch was away (a relist sends no DELETED)
                ctx.cache.drop(kind, namespace, name)
            return None
        m.setdefault("apiVersion", NVCRE_API_VERSION)
        m.setdefault("kind", kind)
        ctx.cache.put(m)
        st = m.get("status") or {}
        if c.is_true(st.get("conditions"), "Complete"):
            return None
        spec = m.get("spec") or {}
        interval = parse_duration(spec.get("sampleInterval"), 60.0) or 60.0
        job_name = (dig(spec.get("jobRef"), "name") or "")
        # the Job's conditions, from the watch cache (a fleet-sized object, read each sample)
        job = ctx.cache.get("Job", namespace, job_name) or ctx.kube.get(NVCRE_API_VERSION, "Job", job_name, namespace)
        if job is None:
            write_status(ctx, m, lambda o: complete_status(o["status"], "JobFailed", f"Job {job_name} not found", ctx.now_text(), None))
            return None
        jconds = dig(job, "status", "conditions")
        age = ctx.now() - (parse_time(m["metadata"].get("creationTimestamp")) or ctx.now())
        if not c.is_terminal(jconds) and age < interval:
            return interval - age  # first provisional sample one interval in
        if c.is_terminal(jconds):
            ended = max((parse_time(x.get("lastTransitionTime")) or 0.0) for x in jconds if x.get("status") == "True")
            if ctx.now() - ended < JOB_FREEZE_GRACE:  # the Job freezes its own measurement from its one
                return ended + JOB_FREEZE_GRACE - ctx.now()  # final read (an event); else read at the deadline
        reading = _read(ctx, kind, m, job_name)
        if c.is_terminal(jconds):
            ok = c.is_true(jconds, c.SUCCEEDED)
            reason = "JobSucceeded" if ok and reading.ok else ("JobFailed" if not ok else (reading.note or "NoDataCollected"))
            if reason not in ("JobSucceeded", "JobFailed", "LogsUnavailable", "NoDataCollected"):
                reason = "NoDataCollected"
            write_status(ctx, m, lambda o: complete_status(o["status"], reason, reading.message or reading.note or "final read", ctx.now_text(), reading if reading.ok else None))
            return None

        def provisional(o: dict) -> bool:
            ost = o["status"]
            if c.is_true(ost.get("conditions"), "Complete"):
                return False
            before = dict(ost)
            ost.setdefault("startTime", ctx.now_text())
            if reading.ok:
                ost.update(reading.status)
            c.set_condition(ost.setdefault("conditions", []), "Measuring", True, "Sampling", "provisional results while the Job runs")
            ost["phase"] = "Measuring"
            return ost != before

        write_status(ctx, m, provisional)
        return interval

    reconcile.__name__ = f"reconcile_{kind.lower()}"
    return reconcile


reconcile_bandwidth = _make("BandwidthMeasurement")
reconcile_goodput = _make("GoodputMeasurement")
