"""Judged out of the box (issue 14), end to end on the simulated fleet: 16 H100 nodes on
Azure (8 x 400G NDR InfiniBand, the fabric the 370 GB/s line is published for; on AWS EFA
or GCP TCPX the stage says not judged), gpu-node-07's NIC at half rate, NO thresholds anywhere.

1. ``stage: production`` derives the inter-node acceptance line (370 GB/s, with its
   source) and the run FAILS naming gpu-node-07 with the bar and the source;
2. no stage: NOT JUDGED (exit 4) plus a PerformanceOutlier warning naming gpu-node-07;
3. the NIC "repaired": the node is cleared at production in ``nvcrectl nodes``;
4. a new 20 % slowdown on gpu-node-12: a Regression against its own last pass, under the
   run's stated ``regressionMargin`` (0.15, which a 20 % drop still exceeds).
The ledger lives in its own namespace and outlives the runs' namespaces.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import yaml

from nvcre.kube.resources import NVCRE_API_VERSION

NVCRECTL = str(Path(sys.executable).with_name("nvcrectl"))
NCCL = {"domain": "communication", "variant": "nccl-all-reduce", "options": {"nodesPerJob": 4}}


def _scenario(faults: list[dict]) -> dict:
    return {"name": "issue-14", "fleet": {"nodes": 16, "platform": "azure", "gpu": "h100", "racks": 2},
            "seed": 14, "noise": 0.01, "faults": faults}


def _nvcrectl(kubeconfig, *args, timeout=600):
    env = {**os.environ, "KUBECONFIG": str(kubeconfig)}
    return subprocess.run([NVCRECTL, *args], capture_output=True, text=True, env=env, timeout=timeout)


def _cert(e2e, name, namespace, **spec):
    return e2e.certification(name, namespace, [NCCL], **spec)


def test_stage_outliers_ledger_and_regression(sim_fleet, controller, kube, namespace, kubeconfig, e2e, tmp_path, monkeypatch):
    ledger_ns = f"nvcre-ledger-{uuid.uuid4().hex[:6]}"
    kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ledger_ns}})
    monkeypatch.setenv("NVCRE_LEDGER_NAMESPACE", ledger_ns)
    sim_fleet.start(_scenario([{"type": "degraded-nic", "node": "gpu-node-07", "factor": 0.5}]))
    controller.start()

    # 1. production: FAILED, gpu-node-07 named, with the bar and its source
    e2e.apply(kube, _cert(e2e, "prod-1", namespace, stage="production"))
    cert = e2e.wait_terminal(kube, "Certification", "prod-1", namespace, 420, controller)
    assert cert["status"]["summary"]["result"] == "FAILED", cert["status"]
    entry = cert["status"]["categoryStatuses"][0]
    assert entry["judged"] is True and entry["stage"] == "production"
    assert "busBandwidthGBps >= 370 (production: H100 inter-node" in entry["judging"], entry
    wf = kube.get(NVCRE_API_VERSION, "Workflow", entry["workflowRef"]["name"], namespace)
    judging = wf["status"]["orchestration"]["judging"]
    assert judging["state"] == "stage" and judging["derived"][0]["expression"] == "value >= 370"
    assert "cluster-readiness-engine" in judging["derived"][0]["source"]
    iso = wf["status"]["orchestration"].get("isolation") or {}
    child = kube.get(NVCRE_API_VERSION, "Workflow", iso.get("workflow", "-"), namespace) or {}
    why = json.dumps({"isolation": iso, "child": child.get("status"), "groups": wf["status"]["orchestration"]["groups"]})[:6000]
    assert {(n["name"], n["reason"]) for n in wf["status"]["failedNodes"]} == {("gpu-node-07", "ThresholdViolation")}, why
    report = _nvcrectl(kubeconfig, "certification", "report", "prod-1", "-n", namespace, "-o", "json")
    assert report.returncode == 1, report.stderr
    doc = json.loads(report.stdout)
    assert doc["failedNodes"] == ["gpu-node-07"] and doc["result"] == "FAILED"
    assert doc["categories"][0]["derivedThresholds"][0].startswith("busBandwidthGBps >= 370 (production")
    assert doc["gpuHours"] > 0

    # 2. no stage, no thresholds: NOT JUDGED (exit 4) and a PerformanceOutlier naming gpu-node-07
    cert_file = tmp_path / "unjudged.yaml"
    cert_file.write_text(yaml.safe_dump(_cert(e2e, "unjudged-2", namespace)))
    run = _nvcrectl(kubeconfig, "certification", "run", "--cert-file", str(cert_file), "-n", namespace, "--wait",
                    "--timeout", "7m")
    assert run.returncode == 4, run.stdout + run.stderr
    assert "NOT JUDGED" in run.stdout and "PerformanceOutlier" in run.stdout and "gpu-node-07" in run.stdout, run.stdout
    cert = kube.get(NVCRE_API_VERSION, "Certification", "unjudged-2", namespace)
    assert cert["status"]["summary"]["result"] == "NOT JUDGED"
    wf = kube.get(NVCRE_API_VERSION, "Workflow", cert["status"]["categoryStatuses"][0]["workflowRef"]["name"], namespace)
    outliers = wf["status"]["orchestration"]["performanceOutliers"]
    assert len(outliers) == 1 and "gpu-node-07" in outliers[0]["nodes"] and outliers[0]["value"] < 0.6 * outliers[0]["median"]
    assert e2e.true_condition(wf, "PerformanceOutlier")

    # 3. the NIC repaired: the node clears production; the drain list is empty of it
    sim_fleet.stop()
    sim_fleet.start(_scenario([]))
    e2e.apply(kube, _cert(e2e, "prod-3", namespace, stage="production"))
    cert = e2e.wait_terminal(kube, "Certification", "prod-3", namespace, 420, controller)
    assert cert["status"]["summary"]["result"] == "PASSED", cert["status"]
    nodes = _nvcrectl(kubeconfig, "nodes", "-n", ledger_ns, "-o", "json")
    assert nodes.returncode == 0, nodes.stderr
    rows = {r["node"]: r for r in json.loads(nodes.stdout)["nodes"]}
    assert rows["gpu-node-07"]["stageCleared"] == "production" and rows["gpu-node-07"]["lastResult"] == "Passed"
    env = rows["gpu-node-07"]["results"][0]["environment"]
    assert env["nccl"].startswith("2.") and env["driver"] and env["transport"]
    assert "@sha256:" in env["imageDigest"], env  # the image that ran, not only its tag
    drain = _nvcrectl(kubeconfig, "nodes", "-n", ledger_ns, "--not-ready", "--stage", "production", "-o", "name")
    assert drain.returncode == 0 and drain.stdout == "", drain.stdout

    # 4. a new 20 % slowdown on gpu-node-12: FAILED at production and a Regression for it,
    #    judged by the margin the run states (0.15) rather than the default 0.10
    sim_fleet.stop()
    sim_fleet.start(_scenario([{"type": "degraded-nic", "node": "gpu-node-12", "factor": 0.8}]))
    e2e.apply(kube, _cert(e2e, "prod-4", namespace, stage="production", regressionMargin=0.15))
    cert = e2e.wait_terminal(kube, "Certification", "prod-4", namespace, 420, controller)
    wf = kube.get(NVCRE_API_VERSION, "Workflow", cert["status"]["categoryStatuses"][0]["workflowRef"]["name"], namespace)
    regressions = wf["status"]["orchestration"].get("regressions") or []
    assert [r["node"] for r in regressions] == ["gpu-node-12"], wf["status"]["orchestration"]
    assert regressions[0]["previousRun"] == f"{namespace}/prod-3" and regressions[0]["value"] < 0.85 * regressions[0]["previous"]
    assert regressions[0]["margin"] == 0.15 and "(margin 15%)" in regressions[0]["message"], regressions[0]
    drain = _nvcrectl(kubeconfig, "nodes", "-n", ledger_ns, "--not-ready", "--stage", "production", "-o", "name")
    assert drain.stdout.split() == ["gpu-node-12"], drain.stdout
    text = _nvcrectl(kubeconfig, "certification", "report", "prod-4", "-n", namespace)
    assert "Regression: gpu-node-12" in text.stdout and "GPU-hours" in text.stdout, text.stdout
    metrics = controller.metrics()
    assert 'nvcre_node_readiness_status{node="gpu-node-07",stage="production"} 1.0' in metrics
    assert 'nvcre_node_readiness_status{node="gpu-node-12",stage="none"} 0.0' in metrics


def test_unknown_gpu_fleet_is_sized_from_its_nodes_and_judged_by_outliers(sim_fleet, controller, kube, namespace, kubeconfig,
                                                                          e2e, monkeypatch):
    """12 simulated H20 nodes (no catalog defaults, no acceptance line), one slow NIC. Together AI's
    fragment requests the NICs for any GPU (on-prem only does so for GB200/GB300/B200/B300)."""
    ledger_ns = f"nvcre-ledger-{uuid.uuid4().hex[:6]}"
    kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ledger_ns}})
    monkeypatch.setenv("NVCRE_LEDGER_NAMESPACE", ledger_ns)
    sim_fleet.start({"name": "h20", "fleet": {"nodes": 12, "platform": "togetherai", "gpu": "h20", "racks": 1}, "seed": 3,
                     "noise": 0.01, "faults": [{"type": "degraded-nic", "node": "gpu-node-02", "factor": 0.5}]})
    controller.start()
    e2e.apply(kube, _cert(e2e, "h20", namespace, stage="production"))
    cert = e2e.wait_terminal(kube, "Certification", "h20", namespace, 420, controller)
    st = cert["status"]
    assert st["gpuArchitecture"] == "h20" and st["summary"]["result"] == "NOT JUDGED", st
    assert st["inferredHardware"]["gpusPerNode"] == 8 and "nvidia.com/gpu capacity" in st["inferredHardware"]["sources"][0]
    assert "mlnxPerNode=8 (nvidia.com/mlnxnics allocatable)" in st["inferredHardware"]["sources"]
    assert st["categoryStatuses"][0]["judging"].startswith("not judged: no baseline for h20/togetherai")
    wf = kube.get(NVCRE_API_VERSION, "Workflow", st["categoryStatuses"][0]["workflowRef"]["name"], namespace)
    orch = wf["status"]["orchestration"]
    jobs = kube.list(NVCRE_API_VERSION, "Job", namespace)
    why = json.dumps({"check": orch.get("outlierCheck"), "groups": orch.get("groups"),
                      "jobs": [j.get("status") for j in jobs]})[:8000]
    assert orch.get("performanceOutliers"), why
    outliers = orch["performanceOutliers"]
    assert [o["nodes"] for o in outliers] == [["gpu-node-01", "gpu-node-02", "gpu-node-03", "gpu-node-04"]], outliers
    assert outliers[0]["shape"] == "4 nodes x 8 GPUs, inter-node"
    report = _nvcrectl(kubeconfig, "certification", "report", "h20", "-n", namespace)
    assert report.returncode == 4, report.stdout + report.stderr
    assert "Inferred from the nodes: gpusPerNode=8" in report.stdout and "NOT JUDGED: no baseline for h20/togetherai" in report.stdout
