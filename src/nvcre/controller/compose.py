"""Where the controller composes the pure cores: catalog, discovery, partition, render.

The reconcilers stay short because every "what should this look like" question is
answered here from plain data: the Workflow a Certification category becomes, the
groups a Workflow runs, the Job (with its rendered, pinned workload) a group gets.
Nothing here writes to the API server; reads are limited to the objects the
answer depends on (the Workflow's source object and the Nodes).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field

from nvcre.controller import labels as L
from nvcre.controller import naming
from nvcre.controller.conditions import CertificationReason, WorkflowReason
from nvcre.controller.context import Context
from nvcre.kube.resources import NVCRE_API_VERSION

log = logging.getLogger(__name__)

CATEGORY_INDEX = L.PREFIX + "category-index"
ADAPTER_ANNOTATION = L.PREFIX + "adapter"
INCLUDE_CORDONED = L.PREFIX + "include-cordoned"
UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"
GPU_PRESENT = "nvidia.com/gpu.present"


class PlanError(Exception):
    """A decision cannot be made from the spec and the cluster; carries the Failed reason."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


# ---------------------------------------------------------------- discovery
@dataclass
class Discovery:
    nodes: list[dict]
    excluded: list[dict]
    platform: str
    arch: str
    products: list[str]
    events: list[tuple[str, str, str]] = field(default_factory=list)


def include_cordoned(target: dict | None) -> bool:
    return any(t.get("key") == UNSCHEDULABLE_TAINT for t in (target or {}).get("taintSelectors") or [])


def discover(all_nodes: list[dict], target: dict | None, *, gpus_per_node: int | None = None) -> Discovery:
    """Target selection, majority GPU architecture, capacity filter and platform, with exclusions."""
    from nvcre.discovery.gpu import majority_arch
    from nvcre.discovery.nodes import capacity_filter, select_target_nodes
    from nvcre.discovery.platform import cluster_platform

    selection = select_target_nodes(all_nodes, target or {})
    excluded = list(selection.excluded)
    events: list[tuple[str, str, str]] = []
    if excluded:
        events.append(("Warning", "CordonedNodesExcluded", f"{len(excluded)} cordoned node(s) excluded: {_names(excluded)}"))
    vote = majority_arch(selection.selected)
    if vote.excluded:
        events.append(("Warning", "HeterogeneousGPU", f"certifying {vote.arch} only; excluded {_names(vote.excluded)}"))
    excluded += vote.excluded
    kept = list(vote.kept)
    if gpus_per_node:
        cap = capacity_filter(kept, gpus_per_node)
        if cap.excluded:
            events.append(("Warning", "InsufficientGPUCapacity", f"excluded {_names(cap.excluded)}"))
        excluded += cap.excluded
        kept = cap.selected
    platform = cluster_platform(kept) if kept else "onprem"
    return Discovery(kept, sorted(excluded, key=lambda e: e["name"]), platform, vote.arch, list(vote.products), events)


def _names(entries: list[dict], limit: int = 10) -> str:
    names = [e["name"] for e in entries]
    more = f" and {len(names) - limit} more" if len(names) > limit else ""
    return ", ".join(names[:limit]) + more


def gpu_nodes(ctx: Context) -> list[dict]:
    return ctx.kube.list("v1", "Node")


# ---------------------------------------------------------------- resolution
def resolve_certification_category(cert: dict, index: int, platform: str, arch: str, nodes: list[dict] | None = None,
                                   inferred: dict | None = None):
    from nvcre.catalog.resolve import resolve_category
    from nvcre.controller.hardware import inferred_for, with_inferred

    hw = inferred_for(cert, arch, nodes, inferred)
    spec = with_inferred(cert.get("spec") or {}, hw)
    resolved = resolve_category(
        spec["categories"][index],
        spec,
        platform=platform,
        gpu_arch=arch,
        gang_scheduler=spec.get("gangScheduler"),
        target=spec.get("target"),
        index=index,
        source=f"Certification/{cert['metadata']['name']}",
    )
    if hw is not None:
        resolved.extra["inferred"] = list(hw.sources)
        resolved.extra["inferredHardware"] = hw.to_dict()
    return resolved


def choose_adapter(ctx: Context) -> str:
    """native unless Kubeflow Trainer's TrainJob is installed (or the setting forces one)."""
    if ctx.settings.adapter in ("native", "trainjob"):
        return ctx.settings.adapter
    try:
        return "trainjob" if ctx.kube.kind_installed("trainer.kubeflow.org/v1alpha1", "TrainJob") else "native"
    except Exception:
        return "native"


def workflow_for_category(ctx: Context, cert: dict, index: int, resolved, adapter: str, total_nodes: int | None = None) -> dict:
    """The Workflow object one Certification category runs as (deterministic name)."""
    from nvcre.controller import judging

    meta, spec = cert["metadata"], cert.get("spec") or {}
    category = spec["categories"][index]
    options = category.get("options")
    name = naming.workflow_name(meta["name"], category["domain"], category["variant"], options)
    body = build_workflow(
        name=name,
        namespace=meta["namespace"],
        owner=cert,
        resolved=resolved,
        target=spec.get("target"),
        adapter=adapter,
        labels={
            L.CERTIFICATION: meta["name"][:63],
            L.CATEGORY_DOMAIN: category["domain"],
            L.CATEGORY_VARIANT: category["variant"],
        },
        annotations={CATEGORY_INDEX: str(index)},
        stall_grace=(category.get("options") or {}).get("schedulingStallGraceSeconds") or spec.get("schedulingStallGraceSeconds"),
    )
    return judging.annotate(body, spec, category, judging.judging_for_category(spec, category, resolved, total_nodes), resolved)


def build_workflow(*, name, namespace, owner, resolved, target, adapter, labels, annotations, stall_grace=None) -> dict:
    job_spec: dict = {
        "workload": {"native": {"adapter": adapter, "category": resolved.key}},
        "nodeHealthMonitor": {"cel": {"expression": resolved.node_health_expression or "node.spec.unschedulable == true"}},
    }
    if resolved.measurement is not None:
        key = "bandwidthMeasurement" if resolved.measurement.kind == "BandwidthMeasurement" else "goodputMeasurement"
        job_spec[key] = resolved.measurement.to_spec()
    if stall_grace:
        job_spec["schedulingStallGraceSeconds"] = int(stall_grace)
    if resolved.stall_multiplier:
        job_spec["stallMultiplier"] = resolved.stall_multiplier
    if resolved.startup_stall_timeout_seconds:
        job_spec["startupStallTimeoutSeconds"] = resolved.startup_stall_timeout_seconds
    orchestration: dict = {
        "execution": {"maxConcurrent": resolved.max_concurrent or 0},
        "iterations": resolved.iterations or 1,
        "testScale": resolved.test_scale,
        "placement": resolved.placement or "Pinned",
    }
    if resolved.timeout_per_job:
        orchestration["execution"]["timeoutPerJob"] = resolved.timeout_per_job
    if target:
        orchestration["target"] = target
    if resolved.nodes_per_job:
        orchestration["nodesPerJob"] = resolved.nodes_per_job
    if resolved.test_scale == "intra-rack":
        orchestration["topology"] = {"topologyKey": resolved.topology_key or "nvidia.com/gpu.clique", "strictDomain": True}
    elif resolved.topology_key and resolved.test_scale != "diagnose":
        orchestration["topology"] = {"topologyKey": resolved.topology_key, "strictDomain": False}
    if resolved.test_scale == "diagnose":
        orchestration["diagnose"] = {"minGroupSize": resolved.min_group_size or 2}
        if resolved.topology_key:
            orchestration["diagnose"]["topologyKey"] = resolved.topology_key
    elif not getattr(resolved, "isolate_failures", True):
        orchestration["isolateFailures"] = False
    body: dict = {
        "apiVersion": NVCRE_API_VERSION,
        "kind": "Workflow",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {**L.managed_labels(), **labels},
            "annotations": {
                **annotations,
                L.REQUESTED_TEST_SCALE: resolved.requested_test_scale or resolved.test_scale,
                ADAPTER_ANNOTATION: adapter,
            },
            "ownerReferences": [L.owner_reference(owner)],
        },
        "spec": {
            "category": resolved.key,
            "jobTemplate": {"metadata": {"labels": {L.MANAGED_BY: L.MANAGER}}, "spec": job_spec},
            "orchestration": orchestration,
        },
    }
    if include_cordoned(target):
        body["metadata"]["annotations"][INCLUDE_CORDONED] = "true"
    if resolved.thresholds:
        performance = {"enabled": True, "thresholds": {"thresholds": dict(resolved.thresholds)}}
        if resolved.measurement_timeout:
            performance["measurementTimeout"] = resolved.measurement_timeout
        body["spec"]["validation"] = {"performance": performance}
    return body


def resolve_for_workflow(ctx: Context, wf: dict, platform: str, arch: str, nodes: list[dict] | None = None):
    """Re-resolve the Workflow's category from its source (Certification or WorkloadRun)."""
    meta = wf["metadata"]
    labels = meta.get("labels") or {}
    owner = L.controller_of(wf) or {}
    ns = meta["namespace"]
    if owner.get("kind") == "WorkloadRun" or labels.get(L.WORKLOAD_RUN):
        from nvcre.catalog.resolve import resolve_workloadrun

        run = ctx.kube.get(NVCRE_API_VERSION, "WorkloadRun", owner.get("name") or labels[L.WORKLOAD_RUN], ns)
        if run is None:
            raise PlanError(WorkflowReason.PARTITION_ERROR, "the WorkloadRun this Workflow belongs to is gone")
        return resolve_workloadrun(run, platform=platform, gpu_arch=arch)
    if owner.get("kind") == "Workflow":  # an isolation diagnose runs its parent's category
        parent = ctx.kube.get(NVCRE_API_VERSION, "Workflow", owner["name"], ns)
        if parent is None:
            raise PlanError(WorkflowReason.PARTITION_ERROR, "the Workflow this isolation belongs to is gone")
        return resolve_for_workflow(ctx, parent, platform, arch, nodes)
    cert_name = owner.get("name") or labels.get(L.CERTIFICATION)
    cert = ctx.kube.get(NVCRE_API_VERSION, "Certification", cert_name, ns) if cert_name else None
    if cert is None:
        raise PlanError(WorkflowReason.PARTITION_ERROR, "the Certification this Workflow belongs to is gone")
    index = int((meta.get("annotations") or {}).get(CATEGORY_INDEX, "0"))
    recorded = ((wf.get("status") or {}).get("orchestration") or {}).get("inferredHardware")
    return resolve_certification_category(cert, index, platform, arch, nodes, recorded)


def adapter_of(wf: dict) -> str:
    """The adapter a Workflow's Jobs render with: its template's, else its annotation's."""
    template = ((wf.get("spec") or {}).get("jobTemplate") or {}).get("spec") or {}
    chosen = ((template.get("workload") or {}).get("native") or {}).get("adapter")
    return chosen or (wf["metadata"].get("annotations") or {}).get(ADAPTER_ANNOTATION) or "native"


def is_diagnose(wf: dict) -> bool:
    orch = (wf.get("spec") or {}).get("orchestration") or {}
    return bool(orch.get("diagnose")) or orch.get("testScale") == "diagnose"


# ---------------------------------------------------------------- the Workflow's plan
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


def plan_workflow(ctx: Context, wf: dict) -> Plan:
    from nvcre.planning.partition import PartitionError, plan_groups

    spec = wf.get("spec") or {}
    orch = spec.get("orchestration") or {}
    target = orch.get("target")
    all_nodes = gpu_nodes(ctx)
    first = discover(all_nodes, target)
    if not first.nodes:
        raise PlanError(WorkflowReason.NODE_DISCOVERY_ERROR, "No target nodes found matching orchestration target")
    from nvcre.discovery.platform import platform_counts

    counts = platform_counts(first.nodes)
    if len(counts) > 1:
        raise PlanError(WorkflowReason.HETEROGENEOUS_PLATFORM, f"Target nodes report different platforms: {counts}")
    try:
        resolved = resolve_for_workflow(ctx, wf, first.platform, first.arch, first.nodes)
    except PlanError:
        raise
    except Exception as err:  # a catalog or option problem is the spec's, named in the message
        raise PlanError(WorkflowReason.PARTITION_ERROR, f"cannot resolve {spec.get('category') or 'the workload'}: {getattr(err, 'message', err)}") from err
    found = discover(all_nodes, target, gpus_per_node=resolved.gpus_per_node)
    if not found.nodes:
        raise PlanError(WorkflowReason.PARTITION_ERROR, f"no capable nodes: {len(found.excluded)} excluded ({_names(found.excluded)})")
    names = [n["metadata"]["name"] for n in found.nodes]
    labels = {n["metadata"]["name"]: (n["metadata"].get("labels") or {}) for n in found.nodes}
    test_scale = orch.get("testScale") or resolved.test_scale or "full-scale"
    placement = orch.get("placement") or "Pinned"
    npj = orch.get("nodesPerJob") or resolved.nodes_per_job
    if npj is None and resolved.min_gpus:
        npj = resolved.valid_node_count(len(names)) or None
        if npj is None:
            raise PlanError(WorkflowReason.PARTITION_ERROR, f"{len(names)} nodes cannot run {resolved.key} (needs {resolved.min_gpus} GPUs)")
    elif npj is not None and resolved.min_gpus:
        npj = resolved.valid_node_count(min(int(npj), len(names))) or int(npj)
    topology = orch.get("topology") or {}
    key = topology.get("topologyKey") or (orch.get("diagnose") or {}).get("topologyKey") or resolved.topology_key
    if test_scale == "diagnose":
        groups = []
        nodes_per_job = len(names)
        excluded_partition = []
    else:
        try:
            partition = plan_groups(test_scale, names, labels, nodes_per_job=npj, topology_key=key, placement=placement)
        except PartitionError as err:
            raise PlanError(WorkflowReason.PARTITION_ERROR, err.message) from err
        groups = []
        for g in partition.groups:
            entry = g.to_dict()
            entry["phase"] = "Pending"
            entry["retries"] = 0
            groups.append(entry)
        excluded_partition = [{"name": e.node, "reason": "MissingTopologyLabel", "message": e.reason} for e in partition.excluded]
        nodes_per_job = max((len(g.nodes) or g.size for g in partition.groups), default=0)
    excluded = sorted(found.excluded + excluded_partition, key=lambda e: e["name"])
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
    from nvcre.controller.judging import judging_of

    if judged := judging_of(wf):
        orchestration["judging"] = judged
    if resolved.extra.get("inferredHardware"):
        orchestration["inferredHardware"] = resolved.extra["inferredHardware"]
    if excluded:
        orchestration["excludedNodes"] = [{"name": e["name"], "reason": e["reason"]} for e in excluded]
        reasons = sorted({e.get("message") or e["reason"] for e in excluded})
        orchestration["exclusionReason"] = "; ".join(reasons)[:1024]
    return Plan(names, groups, orchestration, int(orch.get("iterations") or 1), nodes_per_job, found.events, labels, key)


# ---------------------------------------------------------------- a group's Job
_RESOLVED_CACHE: dict[tuple[str, str, str, str], object] = {}


def job_for_group(ctx: Context, wf: dict, group: dict, job_name: str, iteration: int) -> dict:
    """The nvcre Job for one group: the template, the thresholds, and the workload rendered for the group."""
    from nvcre.catalog.resolve import render_workload

    meta, spec = wf["metadata"], wf.get("spec") or {}
    st = wf.get("status") or {}
    orch_status = st.get("orchestration") or {}
    orch_spec = spec.get("orchestration") or {}
    platform = orch_status.get("detectedPlatform") or "onprem"
    arch = orch_status.get("detectedGPUArchitecture") or "unknown"
    cache_key = (meta.get("uid", ""), meta["name"], platform, arch)
    resolved = _RESOLVED_CACHE.get(cache_key)
    if resolved is None:
        try:
            resolved = resolve_for_workflow(ctx, wf, platform, arch)
        except PlanError:
            raise
        except Exception as err:
            raise PlanError(WorkflowReason.PARTITION_ERROR, f"cannot resolve {spec.get('category')}: {getattr(err, 'message', err)}") from err
        _RESOLVED_CACHE[cache_key] = resolved
    template = spec.get("jobTemplate") or {}
    job_spec = json.loads(json.dumps(template.get("spec") or {}))
    adapter = adapter_of(wf)
    nodes = list(group.get("nodes") or [])  # empty for Unpinned: the scheduler places the pods
    try:
        objects = render_workload(
            resolved,
            name=naming.workload_name(job_name),
            namespace=meta["namespace"],
            nodes=nodes,
            adapter=adapter,
            target=orch_spec.get("target"),
            job=job_name,
            group=group["name"],
        )
    except Exception as err:
        raise PlanError(WorkflowReason.PARTITION_ERROR, f"cannot render the workload for {group['name']}: {getattr(err, 'message', err)}") from err
    job_spec["workload"] = {"native": {"adapter": adapter, "category": spec.get("category"), "objects": objects}}
    ckpt = resolved.workload.checkpoint
    if ckpt:  # the adapter made the volume; the Job restarts from it
        pvc = next((o["metadata"]["name"] for o in objects if o.get("kind") == "PersistentVolumeClaim"), None)
        if pvc:
            job_spec["checkpoint"] = {"pvcName": pvc, "maxRestarts": int(ckpt.get("maxRestarts") or 0)}
    performance = (spec.get("validation") or {}).get("performance") or {}
    thresholds = ((performance.get("thresholds") or {}).get("thresholds")) or {}
    if performance.get("enabled", bool(thresholds)) and thresholds:
        job_spec["thresholds"] = dict(thresholds)
        if performance.get("measurementTimeout"):
            job_spec["measurementTimeout"] = performance["measurementTimeout"]
    timeout = (orch_spec.get("execution") or {}).get("timeoutPerJob")
    if timeout:
        job_spec["timeoutPerJob"] = timeout
    if group.get("nodes"):
        job_spec["nodes"] = list(group["nodes"])
    job_spec.setdefault("nodeHealthMonitor", {"cel": {"expression": "node.spec.unschedulable == true"}})
    tmeta = template.get("metadata") or {}
    annotations = dict(tmeta.get("annotations") or {})
    annotations[L.GROUP_NODES] = ",".join(group.get("nodes") or [])
    if (meta.get("annotations") or {}).get(INCLUDE_CORDONED):
        annotations[INCLUDE_CORDONED] = "true"
    labels = {
        **(tmeta.get("labels") or {}),
        **L.managed_labels(workflow=meta["name"], group=group["name"], iteration=str(iteration)),
    }
    if (meta.get("labels") or {}).get(L.CERTIFICATION):
        labels[L.CERTIFICATION] = meta["labels"][L.CERTIFICATION]
    return {
        "apiVersion": NVCRE_API_VERSION,
        "kind": "Job",
        "metadata": {
            "name": job_name,
            "namespace": meta["namespace"],
            "labels": labels,
            "annotations": annotations,
            "ownerReferences": [L.owner_reference(wf)],
        },
        "spec": job_spec,
    }


def certification_reason_for(err: Exception) -> str:
    text = str(getattr(err, "message", err))
    if "unknown" in text.lower() and "categor" in text.lower():
        return CertificationReason.CATEGORY_NOT_FOUND
    return CertificationReason.VALIDATION_FAILED
