"""Statuses stay well under the API server's 1.5 MB object limit at 4096 nodes.

Worst cases, not typical ones: every node failed, every group failed, per-group
bandwidth recorded, the diagnose state full of node names.
"""

from __future__ import annotations

import json

import pytest

from nvcre.api.certification import CertificationStatus
from nvcre.api.job import JobStatus
from nvcre.api.workflow import WorkflowStatus

LIMIT = 1_572_864  # bytes the API server accepts per object
WELL_UNDER = 1_048_576  # 1 MiB: a third of the limit left for what we did not foresee
# Long names on purpose: cloud node names look like ip-10-0-123-45.us-west-2.compute.internal.
NODES = [f"ip-10-{i // 256}-{i % 256}-17.us-west-2.compute.internal" for i in range(4096)]
NOW = "2026-11-30T07:00:00Z"


def _size(status) -> int:
    return len(json.dumps(status.to_k8s(), separators=(",", ":")))


def _conditions():
    return [
        {"type": t, "status": s, "reason": r, "message": "m" * 200, "lastTransitionTime": NOW, "observedGeneration": 1}
        for t, s, r in (("InProgress", "False", "NotApplicable"), ("Succeeded", "False", "NotApplicable"),
                        ("Failed", "True", "IterationsFailed"), ("ValidationFailed", "True", "JobValidationFailed"))
    ]


def _bandwidth(points: int):
    return [{"sizeBytes": 8 << i, "algBwGBps": 473.44, "busBwGBps": 932.09, "samples": 9} for i in range(points)]


def _all_failed_body(*, warnings: list[dict] = (), orchestration: dict | None = None) -> dict:
    """A 4096-node Workflow status in which every group failed: the worst case both size tests
    start from (the second adds every warning at its cap)."""
    groups = [NODES[i : i + 8] for i in range(0, 4096, 8)]
    return {
        "conditions": _conditions() + list(warnings),
        "phase": "Failed",
        "summary": {"groups": "512/512", "iteration": "1/1"},
        "failedNodeCount": 4096,
        "failedNodesRef": {"kind": "ConfigMap", "name": "failed-nodes-0123abcd"},
        "orchestration": {
            "totalNodes": 4096, "nodesPerJob": 8, "totalGroups": 512, "currentIteration": 1,
            "testScale": "full-scale", "detectedPlatform": "aws", "detectedGPUArchitecture": "gb300",
            "groups": [
                {"name": f"group-{g}", "nodes": nodes, "phase": "Failed", "retries": 0,
                 "jobRef": {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job", "name": f"cert-comm-nccl-group-{g}-iter-1"},
                 "startTime": NOW, "completionTime": NOW, "bandwidth": _bandwidth(1), "transport": "IB"}
                for g, nodes in enumerate(groups)
            ],
            **(orchestration or {}),
        },
        # Every node blamed once, a few hundred twice (a retry failing for another reason).
        "failedNodes": [{"name": n, "reason": "WorkloadFailed"} for n in NODES]
        + [{"name": n, "reason": "ThresholdViolation"} for n in NODES[:256]],
        "failedGroups": [
            {"name": f"group-{g}", "iteration": 1, "reason": "JobValidationFailed",
             "message": "Threshold \"busBandwidthGBps\" violated: measured 350.0000, expression: value >= 400",
             **({"failureLog": {"podName": "p", "nodeName": nodes[0], "exitCode": 1, "tail": "x" * 8192}} if g < 16 else {})}
            for g, nodes in enumerate(groups)
        ],
        "bandwidth": _bandwidth(33),
        "transport": ["IB", "Socket"],
    }


def test_workflow_status_at_4096_nodes_all_failed():
    status = WorkflowStatus.model_validate(_all_failed_body())
    size = _size(status)
    print(f"Workflow status, 4096 nodes all failed: {size} bytes ({size / LIMIT:.0%} of the limit)")
    assert size < WELL_UNDER


def _judging_at_most() -> dict:
    """A stage's decision with every derived threshold and text at its longest."""
    derived = [{"key": "k" * 64, "expression": "e" * 256, "bar": 370.0, "stage": "preproduction", "fraction": 0.95,
                "acceptance": 370.0, "scope": "s" * 128, "source": "s" * 512, "text": "t" * 1024} for _ in range(8)]
    return {"state": "stage", "judged": True, "stage": "preproduction", "message": "m" * 1024, "derived": derived,
            "gpusPerNode": 8, "nicsPerNode": 8, "image": "i" * 256, "inferred": ["v" * 256] * 8}


def test_workflow_status_at_4096_nodes_all_failed_with_every_warning():
    """The worst case above plus judging, outliers and regressions, each list full and each text at its
    longest (made by the code that writes them, then truncated as the controller does)."""
    from nvcre.api.workflow import MAX_STATUS_OUTLIERS, MAX_STATUS_REGRESSIONS
    from nvcre.judge.ledger import Regression
    from nvcre.judge.outliers import Outlier

    groups = [NODES[i : i + 8] for i in range(0, 4096, 8)]
    shape = "8 nodes x 8 GPUs, inter-node, " + "x" * 128
    outliers = [Outlier(f"group-{g}-" + "g" * 100, tuple(groups[g]), 184.97, 371.95, 0.9, shape).to_dict()
                for g in range(MAX_STATUS_OUTLIERS)]
    regressions = [Regression(node=n, category="communication/nccl-all-reduce-" + "c" * 100, scope="s" * 300,
                              value=297.2, previous=372.4, previous_run="r" * 300, margin=0.1, run="r" * 300).to_dict()
                   for n in NODES[:MAX_STATUS_REGRESSIONS]]
    assert all(len(o["message"]) == 512 and len(o["nodes"]) == 8 for o in outliers)  # at their caps
    assert all(len(r["message"]) == 512 for r in regressions)
    warnings = [{"type": t, "status": "True", "reason": t, "message": "m" * 1024, "lastTransitionTime": NOW,
                 "observedGeneration": 1} for t in ("PerformanceOutlier", "Regression")]
    status = WorkflowStatus.model_validate(_all_failed_body(warnings=warnings, orchestration={
        "judging": _judging_at_most(),
        "performanceOutliers": outliers,
        "outlierCheck": "o" * 512,
        "ledger": "l" * 512,
        "regressions": regressions,
    }))
    size = _size(status)
    print(f"Workflow status, 4096 nodes all failed, every warning: {size} bytes ({size / LIMIT:.0%} of the limit)")
    assert size < WELL_UNDER


def test_workflow_status_refuses_more_warnings_than_it_keeps():
    from nvcre.api.workflow import MAX_STATUS_OUTLIERS, MAX_STATUS_REGRESSIONS

    outlier = {"group": "g", "value": 1.0, "median": 2.0, "fraction": 0.9}
    with pytest.raises(ValueError, match="performanceOutliers"):
        WorkflowStatus.model_validate({"orchestration": {"performanceOutliers": [outlier] * (MAX_STATUS_OUTLIERS + 1)}})
    regression = {"node": "n", "category": "c", "value": 1.0, "previous": 2.0}
    with pytest.raises(ValueError, match="regressions"):
        WorkflowStatus.model_validate({"orchestration": {"regressions": [regression] * (MAX_STATUS_REGRESSIONS + 1)}})


def test_certification_status_at_4096_nodes():
    status = CertificationStatus.model_validate(
        {
            "conditions": _conditions()[:3],
            "phase": "Failed",
            "summary": {"categoriesPassed": "0/8", "categoriesFailed": 8, "failedNodeCount": 4096,
                        "excludedNodeCount": 96, "result": "FAILED"},
            "platform": "aws", "gpuArchitecture": "gb300", "totalNodes": 4192,
            "excludedNodes": [{"name": f"gpu-spare-{i:04d}", "reason": "Cordoned"} for i in range(96)],
            "categoryStatuses": [
                {"domain": "communication", "variant": f"nccl-variant-{i}", "status": "Failed",
                 "workflowRef": {"name": f"cert-communication-nccl-{i}"}, "failedNodeCount": 4096,
                 "failedNodesRef": {"kind": "ConfigMap", "name": f"failed-nodes-{i:08d}"},
                 "startTime": NOW, "completionTime": NOW, "message": "m" * 300}
                for i in range(8)
            ],
            "failedNodes": [{"name": n, "reason": "WorkloadFailed"} for n in NODES],
        }
    )
    size = _size(status)
    print(f"Certification status, 4096 nodes all failed: {size} bytes ({size / LIMIT:.0%} of the limit)")
    assert size < WELL_UNDER


def test_workflow_status_in_diagnose_at_4096_nodes():
    status = WorkflowStatus.model_validate(
        {
            "conditions": _conditions(),
            "phase": "InProgress",
            "orchestration": {
                "totalNodes": 4096, "testScale": "diagnose",
                "groups": [{"name": f"bisect-{g}", "nodes": NODES[g * 2 : g * 2 + 2], "phase": "Running"} for g in range(64)],
                "diagnose": {"stage": "bisection", "round": 3, "healthyNodes": NODES[128:], "suspectNodes": NODES[:128],
                             "suspectLinks": [NODES[i : i + 2] for i in range(0, 16, 2)]},
            },
        }
    )
    size = _size(status)
    print(f"Workflow status, diagnose round at 4096 nodes: {size} bytes ({size / LIMIT:.0%} of the limit)")
    assert size < WELL_UNDER


def test_job_status_full_scale_4096():
    status = JobStatus.model_validate(
        {
            "conditions": _conditions(),
            "phase": "Failed",
            "failedNodeCount": 4096,
            "failedNodes": [{"name": n, "reason": "HardwareFailureDetected", "message": "node condition GPUHealthy=False"}
                            for n in NODES],
            "failureLog": {"podName": "p", "nodeName": NODES[0], "exitCode": 137, "reason": "OOMKilled", "tail": "x" * 8192},
            "measurements": {"bandwidth": _bandwidth(33), "transport": "IB", "busBandwidthGBps": 932.09},
        }
    )
    size = _size(status)
    print(f"Job status, 4096-node group all failed: {size} bytes ({size / LIMIT:.0%} of the limit)")
    assert size < WELL_UNDER


def test_workflow_status_refuses_many_failure_logs():
    groups = [{"name": f"g{i}", "failureLog": {"tail": "x"}} for i in range(17)]
    with pytest.raises(ValueError, match="failureLog"):
        WorkflowStatus.model_validate({"failedGroups": groups})
