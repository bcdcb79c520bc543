"""Live faults on the test bed (issue 13): the API server restarted mid-run, and a Node
deleted mid-run. Each ends with the right verdict, no duplicate children, nothing lost;
the vanished node is named as such."""

from __future__ import annotations

import json

from nvcre.kube.resources import NVCRE_API_VERSION

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
