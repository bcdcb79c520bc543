"""Statuses stay well under the API server's 1.5 MB object limit at 4096 nodes."""

import json

from nvcre.controller import conditions as c
from nvcre.controller.decide import workflow_pass as wfmod
from nvcre.controller import workflow_core as core
from nvcre.controller.diagnose import rack_key

LIMIT = 1536 * 1024


def test_workflow_status_at_4096_failed_nodes_stays_small():
    names = [f"gpu-node-{i:04d}" for i in range(4096)]
    groups = [{"name": f"group-{i}", "nodes": [n], "phase": "Running", "retries": 0} for i, n in enumerate(names)]
    st: dict = {"orchestration": {"groups": groups, "currentIteration": 1}}
    table = [{"sizeBytes": 8 << k, "algBwGBps": 1.5, "busBwGBps": 2.5, "samples": 1} for k in range(32)]
    pending: list[dict] = []
    for g in groups:
        conds: list[dict] = []
        c.set_phase(conds, c.FAILED, "WorkloadFailed", "exit 1")
        job_status = {
            "conditions": conds,
            "failedNodes": [{"name": g["nodes"][0], "reason": "WorkloadFailed", "message": "Workload Job/x has failed: " + "y" * 200}],
            "measurements": {"bandwidth": table},
            "failureLog": {"podName": "p", "exitCode": 1, "tail": "z" * 8000},
        }
        g["phase"] = core.FAILED
        wfmod.absorb_job(st, g, core.group_outcome({"status": job_status}), {"status": job_status}, 1, len(groups), pending)
    st["failedNodes"], _ = c.merge_failed_nodes(None, pending)
    wfmod.finalize(st, 1, 1, "2026-11-30T00:00:00Z")
    size = len(json.dumps(st))
    assert size < LIMIT / 2, size
    assert len(st["failedNodes"]) == 4096 and st["failedNodeCount"] == 4096
    assert c.phase_of(st["conditions"]) == c.FAILED
    assert len(st["failedGroups"]) == wfmod.MAX_FAILED_GROUPS


def test_rack_key_prefers_a_label_that_splits_nodes_into_racks():
    nodes = ["a", "b", "c", "d"]
    labels = {n: {"topology.kubernetes.io/rack": "r1" if n in "ab" else "r2", "kubernetes.io/hostname": n} for n in nodes}
    assert rack_key(nodes, labels, "nvidia.com/gpu.clique") == "topology.kubernetes.io/rack"
    labels = {n: {"nvidia.com/gpu.clique": "x.1" if n in "ab" else "x.2", "topology.kubernetes.io/rack": "r1"} for n in nodes}
    assert rack_key(nodes, labels, "nvidia.com/gpu.clique") == "nvidia.com/gpu.clique"
    assert rack_key(nodes, {n: {} for n in nodes}, "nvidia.com/gpu.clique") == "nvidia.com/gpu.clique"
