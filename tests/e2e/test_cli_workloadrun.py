"""`nvcrectl workloadrun run FILE --wait` on a healthy simulated fleet: the seeds'
WorkloadRun quick start (NCCL all-reduce, MPI, Unpinned placement, four nodes)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

NVCRECTL = str(Path(sys.executable).with_name("nvcrectl"))

RUN = {
    "apiVersion": "nvcre.nvidia.com/v1alpha1",
    "kind": "WorkloadRun",
    "metadata": {"name": "nccl-all-reduce"},
    "spec": {
        "image": "nvcr.io/nvidia/pytorch:26.01-py3",
        "numNodes": 4,
        "framework": {
            "mpi": {
                "binary": "/usr/local/bin/all_reduce_perf_mpi",
                "mpirunPath": "/usr/local/mpi/bin/mpirun",
                "args": ["-b", "8", "-e", "32G", "-f", "2", "-n", "100"],
            }
        },
        "orchestration": {"placement": "Unpinned"},
        "bandwidthMeasurement": {"logProfileRef": "nccl-bandwidth", "testType": "all_reduce"},
    },
}


def test_workloadrun_run_wait(sim_fleet, controller, kubeconfig, tmp_path, kube, e2e):
    sim_fleet.start("healthy.yaml", nodes=8)
    controller.start()
    manifest = tmp_path / "nccl-all-reduce.yaml"
    manifest.write_text(yaml.safe_dump(RUN))
    results = tmp_path / "results.json"
    env = {**os.environ, "KUBECONFIG": kubeconfig}
    run = subprocess.run(
        [NVCRECTL, "workloadrun", "run", str(manifest), "-n", "wr-quickstart", "--wait", "--timeout", "5m",
         "--results-file", str(results)],
        capture_output=True, text=True, env=env, timeout=600,
    )
    assert run.returncode == 0, f"{run.stdout}\n{run.stderr}\n{controller.log_tail()}"
    assert "workloadrun.nvcre.nvidia.com/nccl-all-reduce created in namespace wr-quickstart" in run.stderr
    assert "WorkloadRun Report" in run.stdout
    assert "Placement: Unpinned (4 of 8 target nodes exercised)" in run.stdout, run.stdout
    report = json.loads(results.read_text())
    assert report["kind"] == "WorkloadRun" and report["result"] == "PASSED"
    category = report["categories"][0]
    assert category["status"] == "Succeeded"
    assert category["bandwidth"], "the run's NCCL sweep is in the report"

    ns = "wr-quickstart"
    assert f"namespace/{ns} created" in run.stderr
    again = subprocess.run([NVCRECTL, "workloadrun", "report", "nccl-all-reduce", "-n", ns, "-o", "markdown"],
                           capture_output=True, text=True, env=env, timeout=120)
    assert again.returncode == 0 and again.stdout.startswith("# WorkloadRun `nccl-all-reduce`: **PASSED**"), again.stderr
    missing = subprocess.run([NVCRECTL, "workloadrun", "report", "nccl-all-reduce"], capture_output=True, text=True, env=env, timeout=120)
    assert missing.returncode == 2 and f"add -n {ns}" in missing.stderr
    # the report lists the nodes it ran on and keeps the pods' log tails after the pods are gone
    ran = category["groups"][0]["nodes"]
    assert len(ran) == 4 and f"Ran on:    4 nodes: {', '.join(sorted(ran))}" in run.stdout, run.stdout
    e2e.wait_for(lambda: not kube.list("v1", "Pod", ns), 120, "the run's pods to be deleted")
    after = subprocess.run([NVCRECTL, "workloadrun", "report", "nccl-all-reduce", "-n", ns, "-o", "json"],
                           capture_output=True, text=True, env=env, timeout=120)
    logs = json.loads(after.stdout)["categories"][0]["podLogs"]
    launcher = logs[0]
    # the launcher (no GPUs) may sit on any node; the workers are the nodes it ran on
    assert "launcher" in launcher["podName"] and launcher["nodeName"] and launcher["exitCode"] == 0, launcher
    assert "Avg bus bandwidth" in launcher["tail"], launcher["tail"][-2000:]
    assert {x["nodeName"] for x in logs[1:]} == set(ran), logs  # one worker pod per node it ran on
    text = subprocess.run([NVCRECTL, "workloadrun", "report", "nccl-all-reduce", "-n", ns],
                          capture_output=True, text=True, env=env, timeout=120).stdout
    assert "Pod Logs (read before the pods were deleted):" in text and "Avg bus bandwidth" in text, text
    # cleanup removes the run and its namespace
    gone = subprocess.run([NVCRECTL, "workloadrun", "cleanup", "nccl-all-reduce", "-n", ns],
                          capture_output=True, text=True, env=env, timeout=300)
    assert gone.returncode == 0 and f"namespace/{ns} deleted" in gone.stdout, gone.stderr


def test_workloadrun_cleanup_after_the_report(kubeconfig, tmp_path, kube):
    """`workloadrun run --wait --cleanup -n NEW`: no controller runs, so the wait ends; the
    partial report is printed, then the WorkloadRun and the namespace the run created go."""
    manifest = tmp_path / "run.yaml"
    manifest.write_text(yaml.safe_dump(RUN))
    env = {**os.environ, "KUBECONFIG": kubeconfig}
    run = subprocess.run([NVCRECTL, "workloadrun", "run", str(manifest), "-n", "wr-cleanup", "--wait", "--timeout", "3s",
                          "--cleanup", "-o", "json"], capture_output=True, text=True, env=env, timeout=300)
    assert run.returncode == 5, run.stderr
    assert json.loads(run.stdout)["kind"] == "WorkloadRun"
    assert "workloadrun.nvcre.nvidia.com/nccl-all-reduce deleted" in run.stderr
    assert "namespace/wr-cleanup deleted (nvcrectl created it for this run)" in run.stderr
    assert kube.get("nvcre.nvidia.com/v1alpha1", "WorkloadRun", "nccl-all-reduce", "wr-cleanup") is None
