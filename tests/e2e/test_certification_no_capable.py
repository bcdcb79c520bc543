"""A Certification that targets only a node whose GPU fell off the bus: the category
cannot run there (7 allocatable GPUs, the job asks for 8), and instead of a bare
"no capable nodes" the Workflow, the Certification and the report say why for the
node and which category can diagnose it. Following that hint gets the node its
diagnosis: DCGM runs on it and the Certification fails naming it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from nvcre.kube.resources import NVCRE_API_VERSION

NVCRECTL = str(Path(sys.executable).with_name("nvcrectl"))

SCENARIO = {
    "name": "lone-sick-node",
    "fleet": {"nodes": 2, "platform": "aws", "gpu": "h100", "racks": 1},
    "seed": 3,
    "faults": [{"type": "gpu-off-bus", "node": "gpu-node-02", "gpu": 3, "afterSeconds": 0}],
}


def _failed_message(obj: dict) -> str:
    return next(c["message"] for c in obj["status"]["conditions"] if c["type"] == "Failed" and c["status"] == "True")


def test_a_lone_sick_node_is_explained_and_its_diagnosis_runs(sim_fleet, controller, kube, namespace, kubeconfig, e2e):
    sim_fleet.start(SCENARIO)
    e2e.wait_for(lambda: any(c["type"] == "GpuHealthy" and c["status"] == "False"
                             for c in kube.get("v1", "Node", "gpu-node-02")["status"]["conditions"]), 60, "GpuHealthy=False")
    controller.start()
    target = {"nodeNames": ["gpu-node-02"]}
    e2e.apply(kube, e2e.certification("lone", namespace, [{"domain": "diagnostics", "variant": "dcgm-level4"}], target=target))
    cert = e2e.wait_terminal(kube, "Certification", "lone", namespace, 120, controller)
    wf = kube.get(NVCRE_API_VERSION, "Workflow", cert["status"]["categoryStatuses"][0]["workflowRef"]["name"], namespace)
    message = _failed_message(wf)
    assert "gpu-node-02 excluded: InsufficientGPUCapacity (node has 7 allocatable nvidia.com/gpu" in message, message
    assert "GpuHealthy=False (GpuFellOffBus)" in message
    hint = "rerun diagnostics/dcgm-level4 on gpu-node-02 with options.gpusPerNode: 7"
    assert hint in message and hint in _failed_message(cert)

    report = subprocess.run([NVCRECTL, "certification", "report", "lone", "-n", namespace, "-o", "json"],
                            capture_output=True, text=True, timeout=120, env={"KUBECONFIG": kubeconfig, "PATH": "/usr/bin:/bin"})
    assert report.returncode == 1, report.stderr
    data = json.loads(report.stdout)
    [excluded] = data["exclusions"]
    assert excluded["name"] == "gpu-node-02" and "GpuHealthy=False" in excluded["message"], excluded
    assert hint in data["categories"][0]["failureReason"]
    text = subprocess.run([NVCRECTL, "certification", "report", "lone", "-n", namespace, "--wide"],
                          capture_output=True, text=True, timeout=120, env={"KUBECONFIG": kubeconfig, "PATH": "/usr/bin:/bin"})
    assert "- gpu-node-02: InsufficientGPUCapacity (node has 7 allocatable" in text.stdout, text.stdout

    # the hint is honest: with it DCGM runs on the node and the verdict names it
    e2e.apply(kube, e2e.certification("lone-diag", namespace, [
        {"domain": "diagnostics", "variant": "dcgm-level4", "options": {"gpusPerNode": 7}}], target=target))
    diag = e2e.wait_terminal(kube, "Certification", "lone-diag", namespace, 300, controller)
    assert diag["status"]["categoryStatuses"][0]["status"] == "Failed", diag["status"]
    assert [n["name"] for n in diag["status"]["failedNodes"]] == ["gpu-node-02"], diag["status"]
    assert not diag["status"].get("excludedNodes")
