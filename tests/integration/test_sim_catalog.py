"""Catalog workloads rendered by the native adapter run on the simulated fleet, and their
logs read with the product's own parsers: loopback nccl-tests, alltoall over MPI,
DCGM level 4, Megatron pretraining (with a checkpoint resume after a failure)."""

from __future__ import annotations

import json

import pytest

from nvcre.catalog.resolve import resolve_category
from nvcre.workloads.render import render_workload
from nvcre.measure.logprofile import default_log_profile
from nvcre.measure.nccl import parse_nccl_log
from nvcre.measure.training import parse_training_text
from nvcre.testbed.waiting import wait_until


@pytest.fixture(scope="module")
def sim(module_fleet):
    return module_fleet(4, racks=1, time_scale=200.0)


def _run(kubectl, namespace, key, nodes, name, options=None, timeout_s=90):
    domain, variant = key.split("/")
    category = {"domain": domain, "variant": variant}
    if options:
        category["options"] = options
    objects = render_workload(resolve_category(category, platform="aws", gpu_arch="h100"), name=name,
                              namespace=namespace, nodes=nodes)
    kubectl("apply", "-n", namespace, "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
    jobs = [o["metadata"]["name"] for o in objects if o["kind"] == "Job"]

    def done(job):
        status = json.loads(kubectl("get", "job", "-n", namespace, job, "-o", "json").stdout).get("status", {})
        conds = {c["type"]: c["status"] for c in status.get("conditions") or []}
        return "Complete" if conds.get("Complete") == "True" else "Failed" if conds.get("Failed") == "True" else None

    return {job: wait_until(lambda: done(job), timeout_s=timeout_s, what=f"Job {job} to finish") for job in jobs}


def _logs(kubectl, namespace, selector):
    pods = json.loads(kubectl("get", "pods", "-n", namespace, "-l", selector, "-o", "json").stdout)["items"]
    pods.sort(key=lambda p: p["metadata"]["name"])
    return [kubectl("logs", "-n", namespace, p["metadata"]["name"]).stdout for p in pods]


def test_loopback_on_one_node(sim, kubectl, namespace):
    assert _run(kubectl, namespace, "communication/nccl-loopback", ["gpu-node-03"], "lb") == {"lb": "Complete"}
    (log,) = _logs(kubectl, namespace, "job-name=lb")
    result = parse_nccl_log(log)
    assert result.ranks == 8 and result.concluded
    # SHM and P2P are disabled: the ranks of one node talk through its NICs
    peak = max(r.out_of_place.bus_bw for r in result.rows)
    assert peak == pytest.approx(sim.expected_busbw(["gpu-node-03"], size=16 << 30, loopback=True), rel=0.05)


def test_alltoall_over_mpi(sim, kubectl, namespace):
    outcome = _run(kubectl, namespace, "communication/nccl-alltoall", ["gpu-node-01", "gpu-node-02"], "a2a",
                   {"maxBytes": "1G", "numIterations": 5, "numCycles": 1})
    assert outcome == {"a2a-worker": "Complete", "a2a-launcher": "Complete"}
    (log,) = _logs(kubectl, namespace, "job-name=a2a-launcher")
    result = parse_nccl_log(log)
    assert result.collective == "alltoall" and result.rows[0].dtype == "uint8"
    assert max(r.out_of_place.bus_bw for r in result.rows) == pytest.approx(
        sim.expected_busbw(["gpu-node-01", "gpu-node-02"], op="alltoall", size=1 << 30), rel=0.05)


def test_dcgm_level4(sim, kubectl, namespace):
    assert _run(kubectl, namespace, "diagnostics/dcgm-level4", ["gpu-node-04"], "dcgm") == {"dcgm": "Complete"}
    (log,) = _logs(kubectl, namespace, "job-name=dcgm")
    report = json.loads(log)
    statuses = {r["status"] for c in report["DCGM GPU Diagnostic"]["test_categories"] for t in c["tests"]
                for r in t["results"]}
    assert statuses <= {"Pass", "Skip"}


def test_megatron_pretraining(sim, kubectl, namespace):
    outcome = _run(kubectl, namespace, "training/nemotron5-8b", ["gpu-node-01", "gpu-node-02"], "gpt")
    assert outcome == {"gpt": "Complete"}
    first, last = _logs(kubectl, namespace, "job-name=gpt")
    profile = default_log_profile("megatron-training")
    lifecycle, steps = parse_training_text(first, profile), parse_training_text(last, profile)
    assert lifecycle.application_start_time is not None and not lifecycle.steps
    assert steps.steps[-1].global_step == 50
    assert steps.steps[-1].tflops == pytest.approx(540, rel=0.1)
    assert "global batch size:    16" in last


def test_megatron_resumes_from_its_checkpoint_after_a_crash(module_fleet, kubectl, namespace):
    module_fleet(2, racks=1, time_scale=200.0, name_prefix="flaky", fleet_name="flaky",
                 faults=["flaky-node:node=flaky-01,probability=0.7"])
    # The flaky fault crashes a run with probability 0.7, drawn per pod: a pod whose first
    # run happened not to crash proves nothing here, so try a fresh pod with a fresh
    # checkpoint directory (bounded).
    for attempt in range(8):
        name = f"trainer-{attempt}"
        script = ("torchrun --nnodes 1 --nproc-per-node 8 pretrain_gpt.py --train-iters 60 --log-interval 10 "
                  f"--save /ckpt{attempt} --load /ckpt{attempt} --save-interval 10")
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
               "spec": {"restartPolicy": "OnFailure", "nodeSelector": {"kubernetes.io/hostname": "flaky-01"},
                        "containers": [{"name": "train", "image": "pytorch", "command": ["bash", "-c", script],
                                        "resources": {"limits": {"nvidia.com/gpu": "8"}}}]}}
        kubectl("apply", "-n", namespace, "-f", "-", input=json.dumps(pod))

        def phase():
            return json.loads(kubectl("get", "pod", "-n", namespace, name, "-o", "json").stdout)["status"].get("phase")

        wait_until(lambda: phase() == "Succeeded", timeout_s=120, what="the trainer to finish despite crashes")
        status = json.loads(kubectl("get", "pod", "-n", namespace, name, "-o", "json").stdout)["status"]
        restarts = status["containerStatuses"][0]["restartCount"]
        if restarts >= 1:
            break
        kubectl("delete", "pod", "-n", namespace, name, "--wait=false")
    assert restarts >= 1, "no run crashed in 8 pods with a 0.7 crash probability"
    log = kubectl("logs", "-n", namespace, name).stdout
    metrics = parse_training_text(log, default_log_profile("megatron-training"))
    assert f"Loading checkpoint from /ckpt{attempt}" in log and metrics.restore is not None
    assert metrics.steps[-1].global_step == 60 and metrics.steps[0].global_step > 10
    assert "Watchdog caught collective operation timeout" in kubectl("logs", "-n", namespace, name, "--previous").stdout


def test_gpu_off_bus_fails_the_training_job_and_its_peers(module_fleet, kubectl, namespace):
    module_fleet(2, racks=1, time_scale=200.0, name_prefix="xid", fleet_name="xid",
                 faults=["gpu-off-bus:node=xid-02,gpu=6,atFraction=0.4"])
    outcome = _run(kubectl, namespace, "training/nemotron5-8b", ["xid-01", "xid-02"], "bad", timeout_s=120)
    assert outcome == {"bad": "Failed"}
    node = json.loads(kubectl("get", "node", "xid-02", "-o", "json").stdout)
    assert [c["status"] for c in node["status"]["conditions"] if c["type"] == "GpuHealthy"] == ["False"]
    pods = json.loads(kubectl("get", "pods", "-n", namespace, "-l", "job-name=bad", "-o", "json").stdout)["items"]
    logs = {p["spec"]["nodeName"]: kubectl("logs", "-n", namespace, p["metadata"]["name"]).stdout for p in pods}
    assert any("NCCL error" in text or "CUDA error" in text for node, text in logs.items() if node == "xid-02")
    assert any("Watchdog caught collective operation timeout" in text or "CUDA error" in text
               for node, text in logs.items() if node == "xid-01")
