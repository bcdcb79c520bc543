"""A TrainJob's phase between its launcher exiting and Trainer marking it Complete."""

from __future__ import annotations

from nvcre.controller import workload_state as ws

TJ = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "metadata": {"name": "w"}, "spec": {}, "status": {}}


def _pod(name: str, phase: str) -> dict:
    return {"metadata": {"name": name, "labels": {"nvcre.nvidia.com/role": "worker"}}, "status": {"phase": phase}}


def test_finished_pods_of_an_unfinished_trainjob_mean_running_not_pending():
    assert ws.workload_phase([TJ], [_pod("w-node-0-0", "Succeeded")]).phase == ws.RUNNING


def test_trainjob_without_pods_is_pending_and_its_conditions_decide_the_end():
    assert ws.workload_phase([TJ], []).phase == ws.PENDING
    done = {**TJ, "status": {"conditions": [{"type": "Complete", "status": "True", "message": "ok"}]}}
    assert ws.workload_phase([done], [_pod("w-node-0-0", "Succeeded")]).phase == ws.SUCCEEDED
    failed = {**TJ, "status": {"conditions": [{"type": "Failed", "status": "True", "message": "jobset failed"}]}}
    assert ws.workload_phase([failed], [_pod("w-node-0-0", "Failed")]) == ws.WorkloadPhase(ws.FAILED, "jobset failed")
