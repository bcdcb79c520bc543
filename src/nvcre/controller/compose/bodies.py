"""Child bodies: the Workflow a Certification category or a WorkloadRun becomes
(deterministic names, owned by their parent)."""

from __future__ import annotations

from nvcre.controller import labels as L
from nvcre.controller import naming
from nvcre.controller.compose.discovery import INCLUDE_CORDONED, include_cordoned
from nvcre.controller.context import Context
from nvcre.kube.resources import NVCRE_API_VERSION
from nvcre.objpath import dig

ADAPTER_ANNOTATION = L.PREFIX + "adapter"
CATEGORY_INDEX = L.PREFIX + "category-index"


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


def is_diagnose(wf: dict) -> bool:
    orch = dig(wf, "spec", "orchestration") or {}
    return bool(orch.get("diagnose")) or orch.get("testScale") == "diagnose"
