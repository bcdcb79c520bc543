"""Where the controller composes the pure cores: discovery aggregation and category resolution.

The reconcilers stay short because every "what should this look like" question is
answered from plain data: the nodes a target selects, the Workflow a Certification
category becomes, the category a Workflow re-resolves. The Workflow's plan lives in
``plan.py`` and a group's Job in ``group_job.py``. Nothing here writes to the API
server; reads are limited to the objects the answer depends on (the Workflow's source
object and the cached Nodes).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from nvcre.controller import labels as L
from nvcre.controller import naming
from nvcre.controller.conditions import CertificationReason, WorkflowReason
from nvcre.controller.context import Context
from nvcre.discovery.nodes import UNSCHEDULABLE_TAINT
from nvcre.kube.resources import NVCRE_API_VERSION
from nvcre.objpath import dig

log = logging.getLogger(__name__)

CATEGORY_INDEX = L.PREFIX + "category-index"
ADAPTER_ANNOTATION = L.PREFIX + "adapter"
INCLUDE_CORDONED = L.PREFIX + "include-cordoned"
GPU_PRESENT = "nvidia.com/gpu.present"


class PlanError(Exception):
    """A decision cannot be made from the spec and the cluster; carries the Failed reason."""

    def __init__(self, reason: str, message: str, excluded: list[dict] | None = None) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message
        self.excluded = excluded or []  # {name, reason[, message]}: the nodes that could not run, for the status


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
    return any(t.get("key") == UNSCHEDULABLE_TAINT for t in dig(target, "taintSelectors") or [])


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
    from nvcre.controller.gather import all_gpu_nodes

    return all_gpu_nodes(ctx)


# ---------------------------------------------------------------- resolution
def platform_detections(ctx: Context, nodes: list[dict], platform: str, arch: str) -> dict:
    """What must be read from the cluster to render for this platform (resolve kwargs).

    GCP H100 (TCPXO): the GPU NIC network names from the nodes' allocatable and the
    plugin version from the nccl-tcpxo-installer pods. Elsewhere nothing."""
    if platform != "gcp" or arch != "h100":
        return {}
    from nvcre.discovery.gke import (
        INSTALLER_LABEL, INSTALLER_NAMESPACE, detect_gke_networks, detect_tcpxo_plugin, profile_for,
    )

    try:
        pods = ctx.kube.list("v1", "Pod", INSTALLER_NAMESPACE, label_selector="=".join(INSTALLER_LABEL))
        tcpxo = detect_tcpxo_plugin(pods)
    except Exception as err:  # RBAC or API trouble: the fallback profile, said so
        tcpxo = profile_for(None, message=f"cannot list the nccl-tcpxo-installer pods ({err}); rendering for the v1.0.15 profile")
    return {"gke_networks": detect_gke_networks(nodes), "tcpxo": tcpxo}


def resolve_certification_category(cert: dict, index: int, platform: str, arch: str, detections: dict | None = None,
                                   nodes: list[dict] | None = None, inferred: dict | None = None):
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
        **(detections or {}),
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
    from nvcre.catalog.resolve import canonical_category

    # the catalog's own names (an alias the user wrote is not what objects carry); a
    # duplicate category with other options gets a name of its own
    name = naming.category_workflow_name(meta["name"], [canonical_category(c) for c in spec["categories"]], index)
    body = build_workflow(
        name=name,
        namespace=meta["namespace"],
        owner=cert,
        resolved=resolved,
        target=spec.get("target"),
        adapter=adapter,
        labels={
            L.CERTIFICATION: meta["name"][:63],
            L.CATEGORY_DOMAIN: resolved.domain,
            L.CATEGORY_VARIANT: resolved.variant,
        },
        annotations={CATEGORY_INDEX: str(index)},
        stall_grace=dig(category, "options", "schedulingStallGraceSeconds") or spec.get("schedulingStallGraceSeconds"),
    )
    return judging.annotate(body, spec, category, judging.judging_for_category(spec, category, resolved, total_nodes), resolved)


def workflow_for_run(run: dict, resolved, adapter: str) -> dict:
    """The Workflow a WorkloadRun runs as: named after the run, owned by it."""
    spec = run.get("spec") or {}
    return build_workflow(
        name=run["metadata"]["name"],
        namespace=run["metadata"]["namespace"],
        owner=run,
        resolved=resolved,
        target=spec.get("target") or None,
        adapter=adapter,
        labels={L.WORKLOAD_RUN: run["metadata"]["name"][:63]},
        annotations={},
        stall_grace=spec.get("schedulingStallGraceSeconds"),
    )


def _template_job_spec(resolved, adapter: str, stall_grace) -> dict:
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
    return job_spec


def _orchestration_spec(resolved, target) -> dict:
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
    return orchestration


def build_workflow(*, name, namespace, owner, resolved, target, adapter, labels, annotations, stall_grace=None) -> dict:
    job_spec = _template_job_spec(resolved, adapter, stall_grace)
    orchestration = _orchestration_spec(resolved, target)
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


def resolve_for_workflow(ctx: Context, wf: dict, platform: str, arch: str, detections: dict | None = None,
                         nodes: list[dict] | None = None):
    """Re-resolve the Workflow's category from its source (Certification or WorkloadRun),
    with what the cluster says for this platform (``platform_detections``) and, on
    on-prem GB200/GB300/B200/B300 without a nicResourceName, the NIC resource found on
    the target nodes (a Normal ``NICResourceDetection`` event says why when none is)."""
    from dataclasses import replace

    from nvcre.discovery.nics import DETECTING_ARCHS, DETECTING_PLATFORMS, detect_nic_resource

    target = dig(wf, "spec", "orchestration", "target")
    if detections is None:
        detections = {}
        if platform == "gcp" and arch == "h100":
            nodes = discover(gpu_nodes(ctx), target).nodes
            detections = platform_detections(ctx, nodes, platform, arch)
    resolved = _resolve_source(ctx, wf, platform, arch, detections, nodes)
    if platform in DETECTING_PLATFORMS and arch in DETECTING_ARCHS and not resolved.nic_resource_name \
            and "nic_resource_name" not in detections:
        nodes = nodes if nodes is not None else discover(gpu_nodes(ctx), target).nodes
        found = detect_nic_resource(nodes, platform=platform, arch=arch, mlnx_per_node=resolved.mlnx_per_node)
        if found.resource_name:
            resolved = _resolve_source(ctx, wf, platform, arch, {**detections, "nic_resource_name": found.resource_name}, nodes)
        if found.message:
            resolved = replace(resolved, events=(*resolved.events, ("Normal", "NICResourceDetection", found.message)))
    return resolved


def _resolve_source(ctx: Context, wf: dict, platform: str, arch: str, detections: dict, nodes: list[dict] | None = None):
    meta = wf["metadata"]
    labels = meta.get("labels") or {}
    owner = L.controller_of(wf) or {}
    ns = meta["namespace"]
    if owner.get("kind") == "WorkloadRun" or labels.get(L.WORKLOAD_RUN):
        from nvcre.catalog.resolve import resolve_workloadrun

        run = ctx.kube.get(NVCRE_API_VERSION, "WorkloadRun", owner.get("name") or labels[L.WORKLOAD_RUN], ns)
        if run is None:
            raise PlanError(WorkflowReason.PARTITION_ERROR, "the WorkloadRun this Workflow belongs to is gone")
        return resolve_workloadrun(run, platform=platform, gpu_arch=arch, **detections)
    if owner.get("kind") == "Workflow":  # an isolation diagnose runs its parent's category
        parent = ctx.kube.get(NVCRE_API_VERSION, "Workflow", owner["name"], ns)
        if parent is None:
            raise PlanError(WorkflowReason.PARTITION_ERROR, "the Workflow this isolation belongs to is gone")
        return _resolve_source(ctx, parent, platform, arch, detections, nodes)
    cert_name = owner.get("name") or labels.get(L.CERTIFICATION)
    cert = ctx.kube.get(NVCRE_API_VERSION, "Certification", cert_name, ns) if cert_name else None
    if cert is None:
        raise PlanError(WorkflowReason.PARTITION_ERROR, "the Certification this Workflow belongs to is gone")
    index = int((dig(meta.get("annotations"), CATEGORY_INDEX) or "0"))
    recorded = dig(wf, "status", "orchestration", "inferredHardware")
    return resolve_certification_category(cert, index, platform, arch, detections, nodes, recorded)


def adapter_of(wf: dict) -> str:
    """The adapter a Workflow's Jobs render with: its template's, else its annotation's."""
    template = dig(wf, "spec", "jobTemplate", "spec") or {}
    chosen = dig(template, "workload", "native", "adapter")
    return chosen or dig(wf["metadata"].get("annotations"), ADAPTER_ANNOTATION) or "native"


def is_diagnose(wf: dict) -> bool:
    orch = dig(wf, "spec", "orchestration") or {}
    return bool(orch.get("diagnose")) or orch.get("testScale") == "diagnose"


def certification_reason_for(err: Exception) -> str:
    text = str(getattr(err, "message", err))
    if "unknown" in text.lower() and "categor" in text.lower():
        return CertificationReason.CATEGORY_NOT_FOUND
    return CertificationReason.VALIDATION_FAILED
