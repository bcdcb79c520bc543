"""The Workflow's plan: which nodes, which groups, what the orchestration status starts as.

Discovery (target selection, majority GPU, capacity) and the category's resolution
come from ``compose``; the partition from ``nvcre.planning``. Nothing is written here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from nvcre.controller.compose import (
    Discovery,
    PlanError,
    adapter_of,
    discover,
    gpu_nodes,
    platform_detections,
    resolve_for_workflow,
)
from nvcre.controller.conditions import WorkflowReason
from nvcre.controller.context import Context
from nvcre.objpath import dig
from nvcre.workloads import pairwise as pairwise_check

#: Largest diagnosis that runs the per-pair check (32,640 pairs in 255 steps); above it the
#: link search narrows by halving (docs/diagnose.md)
PAIRWISE_MAX_NODES = 256


@dataclass
class Plan:
    nodes: list[str]
    groups: list[dict]
    orchestration: dict
    iterations: int
    nodes_per_job: int
    events: list[tuple[str, str, str]]
    labels: dict[str, dict] = field(default_factory=dict)  # node -> labels (diagnose topology)
    topology_key: str | None = None
    pairwise: bool = False  # the category can run diagnose's per-pair bandwidth check on these nodes


def _discover_and_resolve(ctx: Context, wf: dict):
    """(capable nodes' discovery, the resolved category), or PlanError naming what is wrong."""
    from nvcre.discovery.platform import platform_counts

    spec = wf.get("spec") or {}
    target = dig(spec, "orchestration", "target")
    all_nodes = gpu_nodes(ctx)
    first = discover(all_nodes, target)
    if not first.nodes:
        raise PlanError(WorkflowReason.NODE_DISCOVERY_ERROR, "No target nodes found matching orchestration target")
    counts = platform_counts(first.nodes)
    if len(counts) > 1:
        raise PlanError(WorkflowReason.HETEROGENEOUS_PLATFORM, f"Target nodes report different platforms: {counts}")
    try:
        detections = platform_detections(ctx, first.nodes, first.platform, first.arch)
        resolved = resolve_for_workflow(ctx, wf, first.platform, first.arch, detections, first.nodes)
    except PlanError:
        raise
    except Exception as err:  # a catalog or option problem is the spec's, named in the message
        raise PlanError(WorkflowReason.PARTITION_ERROR, f"cannot resolve {spec.get('category') or 'the workload'}: {getattr(err, 'message', err)}") from err
    found = discover(all_nodes, target, gpus_per_node=resolved.gpus_per_node)
    if not found.nodes:
        raise _no_capable(found, all_nodes, resolved.key)
    return found, resolved


def _no_capable(found: Discovery, all_nodes: list[dict], category: str) -> PlanError:
    """PlanError naming, per node, what excluded it (and for a lone node what can diagnose it)."""
    from nvcre.controller.capable import explain, target_nodes

    if not found.excluded:
        return PlanError(WorkflowReason.PARTITION_ERROR, f"no capable nodes for {category}")
    message, entries = explain(found.excluded, target_nodes(all_nodes), category)
    return PlanError(WorkflowReason.PARTITION_ERROR, message, entries)


def _nodes_per_job(orch: dict, resolved, count: int) -> int | None:
    npj = orch.get("nodesPerJob") or resolved.nodes_per_job
    if npj is None and resolved.min_gpus:
        npj = resolved.valid_node_count(count) or None
        if npj is None:
            raise PlanError(WorkflowReason.PARTITION_ERROR, f"{count} nodes cannot run {resolved.key} (needs {resolved.min_gpus} GPUs)")
    elif npj is not None and resolved.min_gpus:
        npj = resolved.valid_node_count(min(int(npj), count)) or int(npj)
    return npj


def _partition(test_scale: str, names: list[str], labels: dict, npj, key, placement: str) -> tuple[list[dict], list[dict], int]:
    """(groups, nodes the partition excluded, nodes per job)."""
    from nvcre.planning.partition import PartitionError, plan_groups

    if test_scale == "diagnose":
        return [], [], len(names)
    try:
        partition = plan_groups(test_scale, names, labels, nodes_per_job=npj, topology_key=key, placement=placement)
    except PartitionError as err:
        raise PlanError(WorkflowReason.PARTITION_ERROR, err.message) from err
    groups = [{**g.to_dict(), "phase": "Pending", "retries": 0} for g in partition.groups]
    excluded = [{"name": e.node, "reason": "MissingTopologyLabel", "message": e.reason} for e in partition.excluded]
    return groups, excluded, max((len(g.nodes) or g.size for g in partition.groups), default=0)


def _orchestration(found: Discovery, resolved, names: list[str], groups: list[dict], nodes_per_job: int,
                   test_scale: str, placement: str, excluded: list[dict]) -> dict:
    orchestration = {
        "totalNodes": len(names),
        "nodesPerJob": nodes_per_job,
        "totalGroups": len(groups),
        "currentIteration": 1,
        "completedIterations": 0,
        "testScale": test_scale,
        "placement": placement,
        "detectedPlatform": found.platform,
        "detectedGPUArchitecture": found.arch,
        "mnnvl": bool(resolved.enable_mnnvl),
    }
    if found.products:
        orchestration["gpuProducts"] = found.products[:16]
    if resolved.extra.get("inferredHardware"):
        orchestration["inferredHardware"] = resolved.extra["inferredHardware"]
    if excluded:
        orchestration["excludedNodes"] = [{"name": e["name"], "reason": e["reason"]} for e in excluded]
        reasons = sorted({e.get("message") or e["reason"] for e in excluded})
        orchestration["exclusionReason"] = "; ".join(reasons)[:1024]
    return orchestration


def plan_workflow(ctx: Context, wf: dict) -> Plan:
    orch = dig(wf, "spec", "orchestration") or {}
    found, resolved = _discover_and_resolve(ctx, wf)
    names = [n["metadata"]["name"] for n in found.nodes]
    labels = {n["metadata"]["name"]: (n["metadata"].get("labels") or {}) for n in found.nodes}
    test_scale = orch.get("testScale") or resolved.test_scale or "full-scale"
    placement = orch.get("placement") or "Pinned"
    npj = _nodes_per_job(orch, resolved, len(names))
    key = dig(orch, "topology", "topologyKey") or dig(orch, "diagnose", "topologyKey") or resolved.topology_key
    groups, cut, nodes_per_job = _partition(test_scale, names, labels, npj, key, placement)
    excluded = sorted(found.excluded + cut, key=lambda e: e["name"])
    orchestration = _orchestration(found, resolved, names, groups, nodes_per_job, test_scale, placement, excluded)
    from nvcre.controller.judging import judging_of

    if judged := judging_of(wf):  # what judges this category (stage, baseline, user thresholds)
        orchestration["judging"] = judged
    events = [*found.events, *getattr(resolved, "events", ())]  # e.g. GKENetworkDetection, TCPXOPluginDetection
    return Plan(names, groups, orchestration, int(orch.get("iterations") or 1), nodes_per_job, events, labels, key,
                pairwise=pairwise_check.available(resolved, adapter_of(wf)) and len(names) <= PAIRWISE_MAX_NODES)
