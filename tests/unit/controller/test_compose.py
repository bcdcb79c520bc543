"""The Workflow a category becomes and the Job a group gets, from the real catalog."""

import pytest

from nvcre.controller import compose, group_job, labels as L
from nvcre.controller.context import Context, Settings
from nvcre.controller.reconcilers.job import desired_workload
from nvcre.controller.measurements import read_bandwidth

CERT = {
    "apiVersion": "nvcre.nvidia.com/v1alpha1",
    "kind": "Certification",
    "metadata": {"name": "gpu-cluster-cert", "namespace": "ns", "uid": "cert-uid"},
    "spec": {
        "target": {"nodeSelector": {"nvidia.com/gpu.present": "true"}},
        "categories": [
            {"domain": "communication", "variant": "nccl-all-reduce",
             "options": {"nodesPerJob": 8, "thresholds": {"busBandwidthGBps": "value >= 300"}}},
            {"domain": "training", "variant": "nemotron5-8b"},
        ],
    },
}


class _NoKube:
    def get(self, *a, **k):
        return CERT if a[1] == "Certification" else None


def test_workflow_for_category_and_job_for_group():
    resolved = compose.resolve_certification_category(CERT, 0, "aws", "h100")
    ctx = Context(kube=_NoKube(), settings=Settings())
    wf = compose.workflow_for_category(ctx, CERT, 0, resolved, "native")
    assert len(wf["metadata"]["name"]) <= 31
    assert wf["metadata"]["labels"][L.CERTIFICATION] == "gpu-cluster-cert"
    assert wf["spec"]["validation"]["performance"]["thresholds"]["thresholds"] == {"busBandwidthGBps": "value >= 300"}
    assert wf["spec"]["jobTemplate"]["spec"]["bandwidthMeasurement"]["logProfileRef"] == "nccl-bandwidth"
    assert wf["spec"]["orchestration"]["nodesPerJob"] == 8
    wf["metadata"]["uid"] = "wf-uid"
    wf["status"] = {"orchestration": {"detectedPlatform": "aws", "detectedGPUArchitecture": "h100"}}
    group = {"name": "group-0", "nodes": [f"gpu-node-{i:02d}" for i in range(1, 9)]}
    job = group_job.job_for_group(ctx, wf, group, "wf-group-0-iter-1", 1)
    assert job["spec"]["thresholds"] == {"busBandwidthGBps": "value >= 300"}
    assert job["spec"]["nodes"] == group["nodes"]
    assert job["metadata"]["annotations"][L.GROUP_NODES] == ",".join(group["nodes"])
    objects = job["spec"]["workload"]["native"]["objects"]
    assert any(o["kind"] == "Job" for o in objects)
    job["metadata"]["uid"] = "job-uid"
    desired = desired_workload(job)
    for obj in desired:
        assert obj["metadata"]["labels"][L.JOB] == "wf-group-0-iter-1"
        assert obj["metadata"]["ownerReferences"][0]["uid"] == "job-uid"


def test_read_bandwidth_on_real_fixture(fixtures_dir):
    text = (fixtures_dir / "nccl" / "nvcre-a100-allreduce-2node-k8s-debug.log").read_text()
    reading = read_bandwidth(text)
    assert reading.ok
    assert reading.values["busBandwidthGBps"] > 0
    assert reading.status["results"] and reading.status["bandwidth"]
    assert read_bandwidth(None).note == "LogsUnavailable"
    assert read_bandwidth("garbage\n").note == "NoDataCollected"


def test_a_pairwise_groups_timeout_is_scaled_by_its_round_robin_steps():
    resolved = compose.resolve_certification_category(CERT, 0, "aws", "h100")
    ctx = Context(kube=_NoKube(), settings=Settings())
    wf = compose.workflow_for_category(ctx, CERT, 0, resolved, "native")
    wf["metadata"]["uid"] = "wf-uid"
    wf["status"] = {"orchestration": {"detectedPlatform": "aws", "detectedGPUArchitecture": "h100"}}
    wf["spec"]["orchestration"].setdefault("execution", {})["timeoutPerJob"] = "15m"
    nodes = [f"gpu-node-{i:02d}" for i in range(64)]
    plain = group_job.job_for_group(ctx, wf, {"name": "g", "nodes": nodes}, "wf-g-iter-1", 1)
    assert plain["spec"]["timeoutPerJob"] == "15m"
    check = group_job.job_for_group(ctx, wf, {"name": "g", "nodes": nodes, "check": "pairwise"}, "wf-g-iter-1", 1)
    assert check["spec"]["timeoutPerJob"] == "15h45m"  # 63 two-node runs, 15 minutes each
    odd = group_job.job_for_group(ctx, wf, {"name": "g", "nodes": nodes[:5], "check": "pairwise"}, "wf-g-iter-1", 1)
    assert odd["spec"]["timeoutPerJob"] == "1h15m"  # 5 nodes: 5 steps, one node sits out each
