"""Logs of pods that have ended, read once per Job and kept until its verdict.

A finished workload's verdict waits for its last pods to end (``decide/job_end``), and
the terminal pass then reads its evidence: the launcher's whole log (the measurement),
the failed container's tail and up to eight pod tails. Those reads went through the API
server to the kubelets after the last pod had ended, so they sat between the evidence
and the decision (the controller's largest wait at 1024 nodes). A container that has
terminated for good writes nothing more, so its log can be read while the verdict
still waits for the other pods (``prefetch``) and served from memory on the terminal
pass. Entries are keyed by the Job's uid and dropped with its other memos
(``Context.forget``) when it turns terminal; the memo's bound caps the rest.
"""

from __future__ import annotations

from nvcre.controller import workload_state as ws
from nvcre.controller.context import Context
from nvcre.controller.parallel_reads import read_all
from nvcre.objpath import dig


def _restarts(pod: dict) -> int:
    return sum(int(cs.get("restartCount") or 0) for cs in dig(pod, "status", "containerStatuses") or [])


def _key(job: dict, pod: dict, container: str | None, tail_lines: int | None) -> tuple:
    meta = pod.get("metadata") or {}
    return (dig(job, "metadata", "uid") or "", meta.get("uid") or meta.get("name"), container, tail_lines, _restarts(pod))


def pod_log(ctx: Context, job: dict, pod: dict, *, container: str | None = None, tail_lines: int | None = None) -> str | None:
    """The pod's log (whole, or its last ``tail_lines``), from memory when it was read after
    the pod had ended. Only an ended pod's read is kept: a running one still writes."""
    meta = pod.get("metadata") or {}
    namespace = meta.get("namespace") or dig(job, "metadata", "namespace") or ""
    ended = ws.pod_ended(pod) is not None and bool(dig(job, "metadata", "uid"))
    key = _key(job, pod, container, tail_lines)
    if ended:
        hit = ctx.memos.ended_logs.get(key)
        if hit is not None:
            return hit
    text = ctx.kube.pod_log(meta["name"], namespace, container=container, tail_lines=tail_lines)
    if ended and text is not None:
        ctx.memos.ended_logs.put(key, text)
    return text


def evidence_reads(job: dict, pods: list[dict], first: set[str], *, pod_tails: bool) -> list[tuple[dict, str | None, int | None]]:
    """The reads a Job's terminal pass will make of pods that have ended already: (pod,
    container, tail lines); the launcher's whole log when the Job measures bandwidth, the
    failed container's tail and, with ``pod_tails`` (the Job keeps them), the tails of the
    pods its status keeps (the sick nodes' ``first``)."""
    from nvcre.api.job import MAX_POD_LOGS

    by_name = {dig(p, "metadata", "name"): p for p in pods}
    reads: list[tuple[dict, str | None, int | None]] = []
    launcher = ws.launcher_pod(pods)
    if dig(job, "spec", "bandwidthMeasurement") and launcher is not None:
        reads.append((launcher, None, None))
    failed = ws.failed_container(pods)
    if failed is not None and failed.pod in by_name:
        reads.append((by_name[failed.pod], failed.container or None, ws.FAILURE_LOG_LINES))
    for pod in ws.log_pods(pods, MAX_POD_LOGS, first=first) if pod_tails else []:
        reads.append((pod, ws.main_container(pod)[0], ws.POD_LOG_LINES))
    return [r for r in reads if ws.pod_ended(r[0]) is not None]


def prefetch(ctx: Context, job: dict, pods: list[dict], first: set[str], *, pod_tails: bool) -> int:
    """Read (concurrently) the ended pods' logs the terminal pass will need; returns how many
    were read from the API server (the rest were in memory already)."""
    todo = {str(i): r for i, r in enumerate(evidence_reads(job, pods, first, pod_tails=pod_tails))
            if ctx.memos.ended_logs.get(_key(job, r[0], r[1], r[2])) is None}
    read_all({i: (lambda r=r: pod_log(ctx, job, r[0], container=r[1], tail_lines=r[2])) for i, r in todo.items()})
    return len(todo)
