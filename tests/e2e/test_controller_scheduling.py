"""Scheduling stalls: pods the scheduler cannot place report WorkloadSchedulingBlocked with
the scheduler's message, the clocks pause, and the Job then recovers or times out."""

from __future__ import annotations

from nvcre.kube.resources import NVCRE_API_VERSION


def _job_of(kube, namespace, node):
    for job in kube.list(NVCRE_API_VERSION, "Job", namespace):
        if node in (job["spec"].get("nodes") or []):
            return job
    return None


def _start(sim_fleet, controller, kube, namespace, e2e, timeout_per_job):
    sim_fleet.start("healthy.yaml", nodes=2, racks=1)
    controller.start()
    e2e.hold_gpus(kube, namespace, "gpu-node-01")
    e2e.apply(kube, e2e.certification("blocked", namespace, [
        {"domain": "communication", "variant": "nccl-loopback",
         "options": {"testScale": "intra-node", "schedulingStallGraceSeconds": 2, "timeoutPerJob": timeout_per_job}},
    ]))

    def blocked():
        job = _job_of(kube, namespace, "gpu-node-01")
        cond = job and e2e.true_condition(job, "InProgress")
        return job if cond and cond["reason"] == "WorkloadSchedulingBlocked" else None

    job = e2e.wait_for(blocked, 120, "WorkloadSchedulingBlocked", controller.log_tail)
    msg = e2e.true_condition(job, "InProgress")["message"]
    assert msg.startswith("Workload pods are unschedulable: ") and "nvidia.com/gpu" in msg, msg
    assert job["status"].get("schedulingBlockedSince")
    return job


def test_blocked_then_recovers(sim_fleet, controller, kube, namespace, e2e):
    job = _start(sim_fleet, controller, kube, namespace, e2e, "10m")
    wf_name = job["metadata"]["labels"]["nvcre.nvidia.com/workflow"]
    e2e.wait_for(
        lambda: (e2e.true_condition(kube.get(NVCRE_API_VERSION, "Workflow", wf_name, namespace), "InProgress") or {}).get("reason") == "JobSchedulingBlocked",
        60, "the Workflow to relay JobSchedulingBlocked",
    )
    detail = e2e.wait_for(
        lambda: (kube.get(NVCRE_API_VERSION, "Certification", "blocked", namespace)["status"].get("categoryStatuses") or [{}])[0].get("statusDetail"),
        60, "the Certification to show the blocked detail",
    )
    assert "unschedulable" in detail
    e2e.release_gpus(kube, namespace)  # capacity comes back
    cert = e2e.wait_terminal(kube, "Certification", "blocked", namespace, 300, controller)
    assert e2e.true_condition(cert, "Succeeded"), cert["status"]
    done = kube.get(NVCRE_API_VERSION, "Job", job["metadata"]["name"], namespace)
    assert done["status"].get("schedulingResumedTime")
    assert not done["status"].get("schedulingBlockedSince")
    assert not done["status"].get("failedNodes")


def test_blocked_until_timeout(sim_fleet, controller, kube, namespace, e2e):
    job = _start(sim_fleet, controller, kube, namespace, e2e, "20s")
    cert = e2e.wait_terminal(kube, "Certification", "blocked", namespace, 300, controller)
    assert e2e.true_condition(cert, "Failed")
    done = kube.get(NVCRE_API_VERSION, "Job", job["metadata"]["name"], namespace)
    failed = e2e.true_condition(done, "Failed")
    assert failed["reason"] == "JobTimedOut" and "unschedulable" in failed["message"]
    # capacity, not the node, was the problem: the node is not named
    assert not done["status"].get("failedNodes")
    other = _job_of(kube, namespace, "gpu-node-02")
    assert e2e.true_condition(other, "Succeeded")
    name, wf = done["metadata"]["name"], done["metadata"]["labels"]["nvcre.nvidia.com/workflow"]
    metrics = controller.metrics()  # a timed-out Job counts as failed, and only as failed
    assert f'nvcre_job_status{{job="{name}",namespace="{namespace}",status="failed",workflow="{wf}"}} 1.0' in metrics
    assert f'nvcre_job_status{{job="{name}",namespace="{namespace}",status="in_progress",workflow="{wf}"}} 0.0' in metrics
