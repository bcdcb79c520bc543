"""Reads every reconciler shares: from the watch cache once it has synced, live before.

A reconcile pass never lists: pods, batch Jobs, Nodes and our own Jobs come from the
cache (``nvcre.controller.runtime.cache``); only until a kind's first complete list has arrived
(start-up, or a unit test without watches) do these fall back to a live read.
"""

from __future__ import annotations

from nvcre.controller import conditions as c
from nvcre.controller import labels as L
from nvcre.controller import workload_state as ws
from nvcre.controller.context import Context
from nvcre.kube.resources import NVCRE_API_VERSION
from nvcre.objpath import dig


def job_pods(ctx: Context, namespace: str, name: str) -> list[dict]:
    """The workload's pods: from the watch cache once it is synced, else one labelled LIST."""
    if ctx.cache.synced("Pod", namespace):
        return ctx.cache.pieces_of(namespace, name, "Pod")
    return ctx.kube.list("v1", "Pod", namespace, label_selector=ws.job_pod_selector(name))


def watched_nodes(ctx: Context, names: list[str]) -> list[dict]:
    """The Nodes a Job's health checks read: from the watch cache; live GETs only for a few
    names the cache lacks (or everything, before the Node watch has synced)."""
    if ctx.cache.synced("Node"):
        found = ctx.cache.nodes(names)
        missing = sorted(set(names) - {n["metadata"]["name"] for n in found})
        if len(missing) > 4:
            return found
        return found + [n for n in (ctx.kube.get("v1", "Node", m) for m in missing) if n is not None]
    if len(names) > 4:  # one LIST beats many GETs
        wanted = set(names)
        return [n for n in ctx.kube.list("v1", "Node", label_selector="nvidia.com/gpu.present") if n["metadata"]["name"] in wanted]
    return [n for n in (ctx.kube.get("v1", "Node", nn) for nn in names) if n is not None]


def all_gpu_nodes(ctx: Context) -> list[dict]:
    """Every GPU Node (``nvidia.com/gpu.present`` set): what target selection starts from."""
    if ctx.cache.synced("Node"):
        return ctx.cache.of_kind("Node")
    return ctx.kube.list("v1", "Node")


def workflow_jobs(ctx: Context, namespace: str, workflow: str) -> dict[str, dict]:
    """The Workflow's Jobs by name: the cached copies, with a live read for any not yet terminal
    (a decision on a stale copy only waits; a terminal copy is final)."""
    jobs = dict(ctx.cache.jobs_of(namespace, workflow))
    for name, job in list(jobs.items()):
        if not c.is_terminal(dig(job, "status", "conditions")):
            fresh = ctx.kube.get(NVCRE_API_VERSION, "Job", name, namespace)
            if fresh is None:
                del jobs[name]
            else:
                jobs[name] = fresh
    if not jobs:  # nothing cached (a restart before kopf's first events, or no watches): one live list
        jobs = {j["metadata"]["name"]: j for j in ctx.kube.list(NVCRE_API_VERSION, "Job", namespace,
                                                               label_selector=f"{L.WORKFLOW}={workflow}")}
    return jobs
