"""Live faults on the test bed (issue 13): the API server restarted mid-run, every watch
expired mid-run (410 Gone), and a Node deleted mid-run. Each ends with the right verdict,
no duplicate children, nothing lost; the vanished node is named as such."""

from __future__ import annotations

import json
import time

from nvcre.kube.resources import NVCRE_API_VERSION

# What the controller creates, watched for ADDED events (an object made twice shows two UIDs)
CREATED_KINDS = {
    "batch.Job": ("batch", "v1", "jobs"),
    "Workflow": ("nvcre.nvidia.com", "v1alpha1", "workflows"),
    "Job": ("nvcre.nvidia.com", "v1alpha1", "jobs"),
    "BandwidthMeasurement": ("nvcre.nvidia.com", "v1alpha1", "bandwidthmeasurements"),
}
ALL_REDUCE = {"domain": "communication", "variant": "nccl-all-reduce", "options": {"nodesPerJob": 2}}


def _workload_pods_running(kube, namespace):
    pods = kube.list("v1", "Pod", namespace)
    return pods if pods and all((p.get("status") or {}).get("phase") == "Running" for p in pods) else None


def test_api_server_restart_mid_run_ends_passed_without_duplicates(sim_fleet, controller, kube, namespace, control_plane, e2e):
    sim_fleet.start("healthy.yaml", nodes=4, racks=1, time_scale=30.0)
    controller.start()
    e2e.apply(kube, e2e.certification("restart", namespace, [ALL_REDUCE]))
    e2e.wait_for(lambda: _workload_pods_running(kube, namespace), 120, "workload pods running", controller.log_tail)
    control_plane.restart_apiserver(downtime_s=3.0)
    cert = e2e.wait_terminal(kube, "Certification", "restart", namespace, 300, controller)
    assert e2e.true_condition(cert, "Succeeded"), json.dumps(cert["status"])[:2000]
    jobs = kube.list(NVCRE_API_VERSION, "Job", namespace)
    assert len(jobs) == 2 and len({j["metadata"]["uid"] for j in jobs}) == 2  # one per group, never recreated
    assert all(e2e.true_condition(j, "Succeeded") for j in jobs)
    assert len(kube.list(NVCRE_API_VERSION, "Workflow", namespace)) == 1
    assert controller.proc.poll() is None  # the controller rode it out


def test_watch_expiry_mid_run_relists_and_ends_passed_without_duplicates(sim_fleet, controller, kube, kubeconfig,
                                                                       namespace, control_plane, e2e):
    """etcd compacted to its head, then the API server restarted: every resourceVersion the
    controller holds is gone (etcd keeps nothing older, the new watch cache starts at the
    head), so every watch it resumes is answered 410 Gone and must be relisted."""
    sim_fleet.start("healthy.yaml", nodes=4, racks=1, time_scale=30.0)
    creations = e2e.Creations(str(kubeconfig), namespace, CREATED_KINDS)
    try:
        controller.start()
        e2e.apply(kube, e2e.certification("expiry", namespace, [ALL_REDUCE]))
        e2e.wait_for(lambda: _workload_pods_running(kube, namespace), 120, "workload pods running", controller.log_tail)
        uids = {j["metadata"]["name"]: j["metadata"]["uid"] for j in kube.list(NVCRE_API_VERSION, "Job", namespace)}
        pieces = {j["metadata"]["name"] for j in kube.list("batch/v1", "Job", namespace)}  # launcher + worker per group
        kube.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "bump", "namespace": namespace}})
        revision = control_plane.compact_etcd()  # the write above moved the head past every version held
        control_plane.restart_apiserver(downtime_s=1.0)
        cert = e2e.wait_terminal(kube, "Certification", "expiry", namespace, 300, controller)
        assert e2e.true_condition(cert, "Succeeded"), json.dumps(cert["status"])[:2000]
        jobs = kube.list(NVCRE_API_VERSION, "Job", namespace)
        assert {j["metadata"]["name"]: j["metadata"]["uid"] for j in jobs} == uids and len(uids) == 2  # one per group
        assert all(e2e.true_condition(j, "Succeeded") and j["status"]["measurements"]["busBandwidthGBps"] for j in jobs)
        assert len(kube.list(NVCRE_API_VERSION, "Workflow", namespace)) == 1
        assert controller.proc.poll() is None  # the controller rode it out
        log = "\n".join(p.read_text(errors="replace") for p in controller.log_dir.glob("controller-*.log"))
        relisted = [line for line in log.splitlines() if "410 Gone" in line and "relisting" in line]
        assert relisted, f"no watch saw 410 Gone after compaction at revision {revision}:\n{controller.log_tail()}"
        time.sleep(3)  # let the creation watch catch the last events
        assert not creations.duplicates(), creations.duplicates()
        assert creations.names("batch.Job") == pieces and len(pieces) == 4 and len(creations.names("Workflow")) == 1
        print("\n".join(relisted))
    finally:
        creations.close()


def test_a_node_deleted_mid_run_is_reported_as_vanished(sim_fleet, controller, kube, namespace, kubectl, e2e):
    sim_fleet.start("healthy.yaml", nodes=2, racks=1, time_scale=10.0)
    controller.start()
    e2e.apply(kube, e2e.certification("vanish", namespace, [ALL_REDUCE]))
    pods = e2e.wait_for(lambda: _workload_pods_running(kube, namespace), 120, "workload pods running", controller.log_tail)
    victim = sorted(p["spec"]["nodeName"] for p in pods)[0]
    kubectl("delete", "node", victim, "--wait=false")
    cert = e2e.wait_terminal(kube, "Certification", "vanish", namespace, 180, controller)
    assert e2e.true_condition(cert, "Failed"), json.dumps(cert["status"])[:2000]
    (job,) = kube.list(NVCRE_API_VERSION, "Job", namespace)
    failed = e2e.true_condition(job, "Failed")
    assert failed["reason"] == "WorkloadFailed" and "vanished" in failed["message"] and victim in failed["message"], failed
    assert [n["name"] for n in job["status"]["failedNodes"]] == [victim]
