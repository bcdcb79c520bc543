"""WorkloadRun end to end: mpi, torch and exec, each Pinned and Unpinned, on the fleet."""

from __future__ import annotations

import pytest

from nvcre.kube.resources import NVCRE_API_VERSION

FRAMEWORKS = {
    "mpi": {"mpi": {"binary": "/usr/local/bin/all_reduce_perf_mpi", "mpirunPath": "/usr/local/mpi/bin/mpirun",
                    "args": ["-b", "8", "-e", "1G", "-f", "2", "-n", "20"]}},
    "torch": {"torch": {"script": "/workspace/train.py", "args": ["--epochs", "1"]}},
    "exec": {"exec": {"command": ["echo", "hello from exec"]}},
}


def _run(name: str, namespace: str, framework: str, placement: str) -> dict:
    spec = {
        "image": "nvcr.io/nvidia/pytorch:26.01-py3",
        "framework": FRAMEWORKS[framework],
        "numNodes": 2,
        "orchestration": {"placement": placement, "timeoutPerJob": "30m"},
    }
    if framework == "mpi":
        spec["bandwidthMeasurement"] = {"logProfileRef": "nccl-bandwidth", "testType": "all_reduce"}
    return {"apiVersion": NVCRE_API_VERSION, "kind": "WorkloadRun", "metadata": {"name": name, "namespace": namespace}, "spec": spec}


@pytest.mark.parametrize("framework", ["mpi", "torch", "exec"])
def test_workloadrun_pinned_and_unpinned(framework, sim_fleet, controller, kube, namespace, e2e):
    sim_fleet.start("healthy.yaml", nodes=4, racks=1)
    controller.start()
    # One after the other: run side by side, the Unpinned ranks could only start as the Pinned
    # groups free nodes, and a rank that starts after the other one finished may be placed on
    # the node it just left (a finished pod no longer counts for the spread constraint).
    for placement in ("Pinned", "Unpinned"):
        name = f"{framework}-{placement.lower()}"
        e2e.apply(kube, _run(name, namespace, framework, placement))
        run = e2e.wait_terminal(kube, "WorkloadRun", name, namespace, 300, controller)
        assert e2e.true_condition(run, "Succeeded"), run["status"]
        assert e2e.true_condition(run, "Succeeded")["reason"] == "WorkflowSucceeded"
        wf = kube.get(NVCRE_API_VERSION, "Workflow", run["status"]["workflowRef"]["name"], namespace)
        groups = wf["status"]["orchestration"]["groups"]
        jobs = kube.list(NVCRE_API_VERSION, "Job", namespace, label_selector=f"nvcre.nvidia.com/workflow={wf['metadata']['name']}")
        assert jobs and all(e2e.true_condition(j, "Succeeded") for j in jobs)
        if placement == "Pinned":
            # numNodes is per group: 4 nodes in groups of 2, each Job pinned to its nodes
            assert [len(g["nodes"]) for g in groups] == [2, 2]
            for job in jobs:
                assert set(job["status"]["nodesRan"]) <= set(job["spec"]["nodes"])
        else:
            assert len(groups) == 1 and not groups[0].get("nodes")
            assert len(jobs[0]["status"]["nodesRan"]) == 2
            assert run["status"]["exercisedNodeCount"] == 2
        if framework == "mpi":
            for job in jobs:
                assert job["status"]["measurements"]["busBandwidthGBps"] > 0
