"""The nvcre Job one group runs as: the Workflow's template, its thresholds, and the
workload rendered for the group's nodes. Nothing is written here."""

from __future__ import annotations

import json

from nvcre.controller import labels as L
from nvcre.controller import naming
from nvcre.controller.compose import INCLUDE_CORDONED, PlanError, adapter_of, resolve_for_workflow
from nvcre.controller.conditions import WorkflowReason
from nvcre.controller.context import Context
from nvcre.controller.gather import all_gpu_nodes
from nvcre.kube.resources import NVCRE_API_VERSION
from nvcre.objpath import dig
from nvcre.timefmt import parse_duration
from nvcre.workloads import pairwise

GROUP_NODES_ANNOTATION_LIMIT = 64  # the group-nodes annotation repeats spec.nodes: small groups only
DEFAULT_HEALTH = {"cel": {"expression": "node.spec.unschedulable == true"}}


def resolved_for(ctx: Context, wf: dict):
    """The Workflow's resolved category, memoised per Workflow (dropped when it ends: Context.forget)."""
    meta, st = wf["metadata"], wf.get("status") or {}
    orch = st.get("orchestration") or {}
    platform = orch.get("detectedPlatform") or "onprem"
    arch = orch.get("detectedGPUArchitecture") or "unknown"
    key = (meta.get("uid", ""), meta["name"], platform, arch)
    resolved = ctx.memos.resolved.get(key)
    if resolved is None:
        try:
            resolved = resolve_for_workflow(ctx, wf, platform, arch)
        except PlanError:
            raise
        except Exception as err:
            category = dig(wf, "spec", "category")
            raise PlanError(WorkflowReason.PARTITION_ERROR, f"cannot resolve {category}: {getattr(err, 'message', err)}") from err
        ctx.memos.resolved.put(key, resolved)
    return resolved


def _fleet(ctx: Context, members: list[str]):
    """The Nodes that exist now (name -> labels) for a group large enough to be placed by
    its exceptions (``workloads.placement``); None for a small one: it lists its hostnames."""
    from nvcre.workloads.placement import EXPLICIT_LIMIT, labels_by_name

    if len(members) <= EXPLICIT_LIMIT:
        return None
    return labels_by_name(all_gpu_nodes(ctx))


def _render(ctx: Context, wf: dict, resolved, group: dict, job_name: str) -> list[dict]:
    from nvcre.workloads.render import render_workload

    orch_spec = dig(wf, "spec", "orchestration") or {}
    members = list(group.get("nodes") or [])
    try:
        return render_workload(
            resolved,
            name=naming.workload_name(job_name),
            namespace=wf["metadata"]["namespace"],
            nodes=members,  # empty for Unpinned: the scheduler places the pods
            adapter=adapter_of(wf),
            target=orch_spec.get("target"),
            job=job_name,
            group=group["name"],
            pairwise=group.get("check") == "pairwise",  # diagnose's per-pair bandwidth check
            fleet=_fleet(ctx, members),
        )
    except Exception as err:
        raise PlanError(WorkflowReason.PARTITION_ERROR, f"cannot render the workload for {group['name']}: {getattr(err, 'message', err)}") from err


def _job_spec(wf: dict, resolved, group: dict, objects: list[dict]) -> dict:
    spec = wf.get("spec") or {}
    orch_spec = spec.get("orchestration") or {}
    job_spec = json.loads(json.dumps(dig(spec, "jobTemplate", "spec") or {}))
    job_spec["workload"] = {"native": {"adapter": adapter_of(wf), "category": spec.get("category"), "objects": objects}}
    ckpt = resolved.workload.checkpoint
    if ckpt:  # the adapter made the volume; the Job restarts from it
        pvc = next((o["metadata"]["name"] for o in objects if o.get("kind") == "PersistentVolumeClaim"), None)
        if pvc:
            job_spec["checkpoint"] = {"pvcName": pvc, "maxRestarts": int(ckpt.get("maxRestarts") or 0)}
    performance = dig(spec, "validation", "performance") or {}
    thresholds = (dig(performance, "thresholds", "thresholds")) or {}
    if performance.get("enabled", bool(thresholds)) and thresholds:
        job_spec["thresholds"] = dict(thresholds)
        if performance.get("measurementTimeout"):
            job_spec["measurementTimeout"] = performance["measurementTimeout"]
    timeout = dig(orch_spec, "execution", "timeoutPerJob")
    if timeout and group.get("check") == "pairwise":  # one run per round-robin step, in turn
        seconds = parse_duration(timeout)
        if seconds:
            timeout = pairwise.format_seconds(pairwise.job_seconds(seconds, len(group.get("nodes") or [])))
    if timeout:
        job_spec["timeoutPerJob"] = timeout
    if group.get("nodes"):
        job_spec["nodes"] = list(group["nodes"])
    job_spec.setdefault("nodeHealthMonitor", DEFAULT_HEALTH)
    return job_spec


def _job_metadata(wf: dict, group: dict, job_name: str, iteration: int) -> dict:
    meta = wf["metadata"]
    tmeta = dig(wf, "spec", "jobTemplate", "metadata") or {}
    annotations = dict(tmeta.get("annotations") or {})
    if len(group.get("nodes") or []) <= GROUP_NODES_ANNOTATION_LIMIT:  # larger groups: spec.nodes alone
        annotations[L.GROUP_NODES] = ",".join(group.get("nodes") or [])
    if dig(meta.get("annotations"), INCLUDE_CORDONED):
        annotations[INCLUDE_CORDONED] = "true"
    labels = {**(tmeta.get("labels") or {}),
              **L.managed_labels(workflow=meta["name"], group=group["name"], iteration=str(iteration))}
    for run_label in (L.CERTIFICATION, L.WORKLOAD_RUN):  # the run the Job belongs to
        if dig(meta.get("labels"), run_label):
            labels[run_label] = meta["labels"][run_label]
    return {"name": job_name, "namespace": meta["namespace"], "labels": labels, "annotations": annotations,
            "ownerReferences": [L.owner_reference(wf)]}


def job_for_group(ctx: Context, wf: dict, group: dict, job_name: str, iteration: int) -> dict:
    """The nvcre Job for one group: the template, the thresholds, and the workload rendered for the group."""
    resolved = resolved_for(ctx, wf)
    objects = _render(ctx, wf, resolved, group, job_name)
    return {"apiVersion": NVCRE_API_VERSION, "kind": "Job", "metadata": _job_metadata(wf, group, job_name, iteration),
            "spec": _job_spec(wf, resolved, group, objects)}
