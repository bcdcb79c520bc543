"""Run objects (as the API server holds them) that reproduce the shared report fixtures.

Each builder returns ``RunObjects`` for one fixture in ``tests/data/fixtures/reports`` or
for the seeds' failure sample, so the renderers are checked against real layouts.
"""

from __future__ import annotations

from nvcre.report import RunObjects

T0 = "2026-08-06T16:27:30Z"


def cond(ctype: str, reason: str, message: str = "", status: str = "True") -> dict:
    return {"type": ctype, "status": status, "reason": reason, "message": message, "lastTransitionTime": T0}


def job_ref(name: str) -> dict:
    return {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job", "name": name}


def cert(name: str, categories: list[dict], conditions: list[dict], statuses: list[dict], **spec) -> dict:
    return {
        "apiVersion": "nvcre.nvidia.com/v1alpha1",
        "kind": "Certification",
        "metadata": {"name": name, "namespace": "burn-in"},
        "spec": {"target": {}, "categories": categories, **spec},
        "status": {"conditions": conditions, "categoryStatuses": statuses},
    }


def workflow(name: str, conditions: list[dict], orchestration: dict, **status) -> dict:
    return {
        "apiVersion": "nvcre.nvidia.com/v1alpha1",
        "kind": "Workflow",
        "metadata": {"name": name, "namespace": "burn-in", "uid": f"uid-{name}"},
        "spec": {"orchestration": {"iterations": 1}},
        "status": {"conditions": conditions, "orchestration": orchestration, **status},
    }


def job(name: str, workflow_name: str, conditions: list[dict], **status) -> dict:
    return {
        "apiVersion": "nvcre.nvidia.com/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "burn-in", "labels": {"nvcre.nvidia.com/workflow": workflow_name}},
        "status": {"conditions": conditions, **status},
    }


def excluded_incomplete() -> RunObjects:
    c = cert(
        "cert-excluded",
        [{"domain": "communication", "variant": "nccl-all-reduce", "options": {"testScale": "intra-node"}}],
        [cond("Succeeded", "AllWorkflowsSucceeded")],
        [{"domain": "communication", "variant": "nccl-all-reduce", "status": "Succeeded", "workflowRef": {"name": "wf-ar"}}],
    )
    wf = workflow(
        "wf-ar",
        [cond("Succeeded", "JobCompleted", "All 1 iterations completed successfully")],
        {
            "totalNodes": 1,
            "nodesPerJob": 1,
            "totalGroups": 1,
            "detectedPlatform": "onprem",
            "detectedGPUArchitecture": "h100",
            "excludedNodes": [{"name": "node002", "reason": "HeterogeneousGPU"}],
            "exclusionReason": "target set has more than one GPU architecture; certified h100 only",
            "groups": [{"name": "group-0", "nodes": ["node001"], "phase": "Succeeded"}],
        },
    )
    return RunObjects(root=c, workflows=[wf])


def _training_failed(name: str, job_conditions: list[dict]) -> RunObjects:
    c = cert(
        name,
        [{"domain": "training", "variant": "nemotron5-8b"}],
        [cond("Failed", "WorkflowFailed", "One or more certification categories failed")],
        [{"domain": "training", "variant": "nemotron5-8b", "status": "Failed", "workflowRef": {"name": "wf-tr"}}],
    )
    wf = workflow(
        "wf-tr",
        [cond("Failed", "IterationsFailed", "1 groups failed across 1 iterations")],
        {
            "totalNodes": 2,
            "nodesPerJob": 2,
            "totalGroups": 1,
            "detectedPlatform": "onprem",
            "detectedGPUArchitecture": "h100",
            "groups": [
                {
                    "name": "group-0",
                    "nodes": ["node001", "node002"],
                    "phase": "Failed",
                    "jobRef": job_ref("wf-tr-group-0"),
                    "startTime": "2026-08-06T10:00:00Z",
                    "completionTime": "2026-08-06T10:10:00Z",
                }
            ],
        },
    )
    j = job("wf-tr-group-0", "wf-tr", job_conditions)
    return RunObjects(root=c, workflows=[wf], jobs=[j])


def hardware_failed() -> RunObjects:
    return _training_failed(
        "cert-hw",
        [
            cond("Succeeded", "WorkloadCompleted", "Workload 1/1 completed successfully"),
            cond("HardwareFailed", "HardwareFailureDetected", "Hardware failure detected on nodes: node001"),
        ],
    )


def threshold_violation() -> RunObjects:
    return _training_failed(
        "cert-threshold",
        [
            cond("Succeeded", "WorkloadCompleted", "Workload 1/1 completed successfully"),
            cond(
                "ValidationFailed",
                "ThresholdViolated",
                'Threshold "goodputRatio" violated: measured 0.8800, expression: value >= 0.95',
            ),
        ],
    )


def _sweep(peak: float, transport: str = "IB") -> dict:
    """Job.status.measurements as the controller writes it: numbers per size, one transport."""
    sizes = [1 << 20, 16 << 20, 256 << 20, 1 << 30, 4 << 30, 16 << 30]
    points = []
    for i, size in enumerate(sizes):
        bus = round(peak * (0.15 + 0.85 * (i / (len(sizes) - 1)) ** 0.6), 2)
        points.append({"sizeBytes": size, "algBwGBps": round(bus / 1.875, 2), "busBwGBps": bus, "samples": 9})
    return {"bandwidth": points, "transport": transport, "busBandwidthGBps": max(p["busBwGBps"] for p in points)}


def seeds_failure(nodes: int = 16) -> RunObjects:
    """The seeds' sample: all-reduce fails, gpu-node-07 slow NIC, gpu-node-12 GPU lost."""
    names = [f"gpu-node-{i:02d}" for i in range(1, nodes + 1)]
    node_objs = [
        {"metadata": {"name": n, "labels": {"nvidia.com/gpu.clique": f"clique-{(i // 8)}"}}} for i, n in enumerate(names)
    ]
    c = cert(
        "gpu-cluster-cert",
        [
            {
                "domain": "communication",
                "variant": "nccl-all-reduce",
                "options": {"thresholds": {"busBandwidthGBps": "value >= 900"}, "env": [{"name": "NCCL_DEBUG", "value": "INFO"}]},
            },
            {"domain": "training", "variant": "nemotron5-8b"},
        ],
        [cond("Failed", "WorkflowFailed", "One or more certification categories failed")],
        [
            {"domain": "communication", "variant": "nccl-all-reduce", "status": "Failed", "workflowRef": {"name": "wf-ar"}},
            {"domain": "training", "variant": "nemotron5-8b", "status": "Succeeded", "workflowRef": {"name": "wf-tr"}},
        ],
        env=[{"name": "NCCL_SOCKET_IFNAME", "value": "eth0-secret-value"}],
    )
    partial = _sweep(120.0)
    wf_ar = workflow(
        "wf-ar",
        [cond("Failed", "JobHardwareFailed", "2 groups failed across 1 iterations; hardware failures occurred on one or more nodes")],
        {
            "totalNodes": nodes,
            "nodesPerJob": 8,
            "totalGroups": 2,
            "detectedPlatform": "aws",
            "detectedGPUArchitecture": "gb300",
            "groups": [
                {
                    "name": f"group-{g}",
                    "nodes": names[g * 8 : (g + 1) * 8],
                    "domains": [f"clique-{g}"],
                    "phase": "Failed",
                    "jobRef": job_ref(f"wf-ar-group-{g}"),
                    "startTime": "2026-08-06T16:30:00Z",
                    "completionTime": "2026-08-06T17:12:18Z",
                }
                for g in range(2)
            ],
        },
    )
    group1 = wf_ar["status"]["orchestration"]["groups"][1]
    group1["bandwidth"] = partial["bandwidth"][:4]
    group1["transport"] = partial["transport"]
    j0 = job(
        "wf-ar-group-0",
        "wf-ar",
        [
            cond("Succeeded", "WorkloadCompleted", "Workload 1/1 completed successfully"),
            cond("ValidationFailed", "ThresholdViolated", 'Threshold "busBandwidthGBps" violated: measured 412.3000, expression: value >= 900'),
        ],
        failedNodes=[
            {
                "name": "gpu-node-07",
                "reason": "ThresholdViolation",
                "message": "bus bandwidth 412.30 GB/s with gpu-node-07, 931.80 GB/s without it; NIC mlx5_3 degraded",
            }
        ],
        measurements=_sweep(412.3),
    )
    j1 = job(
        "wf-ar-group-1",
        "wf-ar",
        [
            cond("Failed", "WorkloadFailed", "Workload 1/1 failed: launcher exited with code 1"),
            cond("HardwareFailed", "HardwareFailureDetected", "Hardware failure detected on node(s): [gpu-node-12]"),
        ],
        failedNodes=[
            {
                "name": "gpu-node-12",
                "reason": "HardwareFailureDetected",
                "message": "GPU 3 fell off the bus (Xid 79); node condition GpuHealthy=False",
            }
        ],
        failureLog={
            "podName": "wf-ar-group-1-launcher-x7k2p",
            "nodeName": "gpu-node-09",
            "exitCode": 1,
            "reason": "Error",
            "tail": "gpu-node-12: transport/net_ib.cc:1296 NCCL WARN NET/IB : Got completion with error 12\nmpirun noticed that process rank 35 exited on signal 6",
        },
    )
    wf_tr = workflow(
        "wf-tr",
        [cond("Succeeded", "JobCompleted", "All 1 iterations completed successfully")],
        {
            "totalNodes": nodes,
            "nodesPerJob": nodes,
            "totalGroups": 1,
            "groups": [
                {
                    "name": "group-0",
                    "nodes": names,
                    "phase": "Succeeded",
                    "jobRef": job_ref("wf-tr-group-0"),
                    "startTime": "2026-08-06T17:13:00Z",
                    "completionTime": "2026-08-06T17:41:30Z",
                }
            ],
        },
    )
    j_tr = job(
        "wf-tr-group-0",
        "wf-tr",
        [cond("Succeeded", "WorkloadCompleted", "Workload 1/1 completed successfully")],
        measurements={"goodputRatio": 0.93, "avgTFLOPsPerGPU": 812.5, "avgStepTimeSec": 1.84},
    )
    return RunObjects(root=c, workflows=[wf_ar, wf_tr], jobs=[j0, j1, j_tr], nodes=node_objs)


def passing_gb300() -> RunObjects:
    """The seeds' passing sample: aws / gb300 / 16 nodes, one all-reduce group."""
    c = cert(
        "nvcrectl-20260806-162730",
        [{"domain": "communication", "variant": "nccl-all-reduce"}],
        [cond("Succeeded", "AllWorkflowsSucceeded", "All certification categories completed successfully")],
        [{"domain": "communication", "variant": "nccl-all-reduce", "status": "Succeeded", "workflowRef": {"name": "wf"}}],
        enableMNNVL=True,
    )
    wf = workflow(
        "wf",
        [cond("Succeeded", "JobCompleted")],
        {
            "totalNodes": 16,
            "nodesPerJob": 16,
            "totalGroups": 1,
            "detectedPlatform": "aws",
            "detectedGPUArchitecture": "gb300",
            "groups": [
                {
                    "name": "group-0",
                    "nodes": [f"n{i}" for i in range(16)],
                    "phase": "Succeeded",
                    "jobRef": job_ref("wf-group-0"),
                    "startTime": "2026-08-06T16:28:00Z",
                    "completionTime": "2026-08-06T16:31:56Z",
                }
            ],
        },
    )
    j = job("wf-group-0", "wf", [cond("Succeeded", "WorkloadCompleted")])
    bm = {
        "kind": "BandwidthMeasurement",
        "metadata": {"name": "wf-group-0-bandwidth", "namespace": "burn-in"},
        "spec": {"jobRef": {"apiGroup": "nvcre.nvidia.com", "kind": "Job", "name": "wf-group-0"}, "logProfileRef": "nccl-bandwidth"},
        "status": {
            "conditions": [cond("Complete", "JobSucceeded")],
            "results": [{"sizeBytes": 16 << 30, "algBW": "473.44", "busBW": "932.09", "samples": 9}],
        },
    }
    return RunObjects(root=c, workflows=[wf], jobs=[j], bandwidth_measurements=[bm])


def _timed_job(name: str, wf_name: str, nodes: list[str]) -> dict:
    """A finished Job whose workload ran 30 minutes on its nodes (for GPU-hours)."""
    j = job(name, wf_name, [{**cond("Succeeded", "WorkloadCompleted"), "lastTransitionTime": "2026-08-06T17:00:00Z"}],
            workloadStartTime="2026-08-06T16:30:00Z")
    j["spec"] = {"nodes": nodes}
    return j


def judged_out_of_the_box(stage: str | None = None) -> RunObjects:
    """Issue 14's first run: 16 H100 nodes, 4 per job, one slow NIC, no thresholds.

    Without a stage nothing judges the category (NOT JUDGED) and the slow group is a
    PerformanceOutlier; a node also regressed against its ledger record. With a stage the
    derived bar and its source judge it.
    """
    nodes = [f"h100-node-{i:02d}" for i in range(16)]
    groups = [nodes[i:i + 4] for i in range(0, 16, 4)]
    peaks = [371.5, 371.0 if stage else 184.97, 372.4, 373.1]  # with a stage, the NIC was repaired
    derived = []
    if stage:
        text = ("busBandwidthGBps >= 370 (production: H100 inter-node 2-32 nodes acceptance line, source "
                "NVIDIA/cluster-readiness-engine:docs/designs/021-performance-threshold-enforcement.md)")
        derived = [{"key": "busBandwidthGBps", "expression": "value >= 370", "bar": 370, "stage": stage,
                    "fraction": 1.0, "acceptance": 370, "scope": "H100 inter-node 2-32 nodes",
                    "source": "NVIDIA/cluster-readiness-engine:docs/designs/021-performance-threshold-enforcement.md",
                    "text": text}]
        judging = {"state": "stage", "judged": True, "stage": stage, "message": text, "derived": derived,
                   "gpusPerNode": 8}
    else:
        judging = {"state": "none", "judged": False, "gpusPerNode": 8,
                   "message": "not judged: no thresholds and no stage; set spec.stage (bring-up, burn-in, "
                              "preproduction, production) or thresholds"}
    c = cert(
        "cert-ootb",
        [{"domain": "communication", "variant": "nccl-all-reduce", "options": {"nodesPerJob": 4}}],
        [cond("Succeeded", "AllWorkflowsSucceeded")],
        [{"domain": "communication", "variant": "nccl-all-reduce", "status": "Succeeded",
          "workflowRef": {"name": "wf-ar"}, "judged": judging["judged"], "judging": judging["message"]}],
    )
    wf = workflow(
        "wf-ar",
        [cond("Succeeded", "JobCompleted")],
        {
            "totalNodes": 16, "nodesPerJob": 4, "totalGroups": 4,
            "detectedPlatform": "onprem", "detectedGPUArchitecture": "h100",
            "groups": [{"name": f"group-{i}", "nodes": g, "phase": "Succeeded", "jobRef": job_ref(f"wf-ar-group-{i}")}
                       for i, g in enumerate(groups)],
            "judging": judging,
            "performanceOutliers": [] if stage else [{
                "group": "group-1", "nodes": groups[1], "value": 184.97, "median": 371.95, "fraction": 0.9,
                "shape": "4 nodes x 8 GPUs, inter-node",
                "message": "group-1 (h100-node-04, h100-node-05, h100-node-06, h100-node-07) measured 184.97 GB/s, "
                           "below 0.9 x the median 371.95 GB/s of 4 groups of its shape"}],
            "outlierCheck": "4 groups of 1 shape compared with their median (fraction 0.9, at least 3 groups)",
            "regressions": [{
                "node": "h100-node-09", "category": "communication/nccl-all-reduce", "scope": "inter-node 4-node",
                "value": 297.2, "previous": 372.4, "previousRun": "burn-in/cert-yesterday", "margin": 0.1,
                "message": "h100-node-09: 297.2 GB/s is more than 10 % below its last pass 372.4 GB/s "
                           "(burn-in/cert-yesterday)"}],
        },
    )
    jobs = [_timed_job(f"wf-ar-group-{i}", "wf-ar", g) for i, g in enumerate(groups)]
    bms = [{
        "kind": "BandwidthMeasurement",
        "metadata": {"name": f"wf-ar-group-{i}-bandwidth", "namespace": "burn-in"},
        "spec": {"jobRef": {"apiGroup": "nvcre.nvidia.com", "kind": "Job", "name": f"wf-ar-group-{i}"},
                 "logProfileRef": "nccl-bandwidth"},
        "status": {"conditions": [cond("Complete", "JobSucceeded")],
                   "results": [{"sizeBytes": 16 << 30, "algBW": f"{p / 1.875:.2f}", "busBW": f"{p:.2f}", "samples": 9}]},
    } for i, p in enumerate(peaks)]
    return RunObjects(root=c, workflows=[wf], jobs=jobs, bandwidth_measurements=bms)
