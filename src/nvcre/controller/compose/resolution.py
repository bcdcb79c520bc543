"""Planning input: a category resolved against the catalog for this platform and GPU, with
what must be read from the cluster to render it (GKE networks, TCPXO, NIC resources)."""

from __future__ import annotations

from nvcre.controller import labels as L
from nvcre.controller.compose.bodies import CATEGORY_INDEX
from nvcre.controller.compose.discovery import discover, gpu_nodes
from nvcre.controller.compose.errors import PlanError
from nvcre.controller.conditions import WorkflowReason
from nvcre.controller.context import Context
from nvcre.kube.resources import NVCRE_API_VERSION
from nvcre.objpath import dig

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
