"""testScale diagnose end to end: 64 simulated nodes in 4 racks with one degraded NIC and
one bad link between racks; the Certification names exactly that node and that link,
within the round budget, and passes every other node. The ledger keeps the verdict per
node: one NodeReadiness for each of the 64, the node and both link ends Failed."""

from __future__ import annotations

import uuid

from nvcre.kube.resources import NVCRE_API_VERSION

BAD_NODE = "gpu-node-21"
BAD_LINK = ("gpu-node-05", "gpu-node-40")
SCENARIO = {
    "name": "diagnose",
    "fleet": {"nodes": 64, "platform": "aws", "gpu": "h100", "racks": 4},
    "seed": 5,
    "noise": 0.01,
    "faults": [
        {"type": "degraded-nic", "node": BAD_NODE, "factor": 0.5},
        {"type": "bad-link", "nodes": list(BAD_LINK), "factor": 0.3},
    ],
}


def test_diagnose_names_the_node_and_the_link(sim_fleet, controller, kube, namespace, e2e, monkeypatch):
    ledger_ns = f"nvcre-ledger-{uuid.uuid4().hex[:6]}"
    kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ledger_ns}})
    monkeypatch.setenv("NVCRE_LEDGER_NAMESPACE", ledger_ns)
    sim_fleet.start(SCENARIO, time_scale=240.0)
    controller.start()
    e2e.apply(kube, e2e.certification("diagnose", namespace, [
        {"domain": "communication", "variant": "nccl-all-reduce",
         "options": {"testScale": "diagnose", "thresholds": {"busBandwidthGBps": "value >= 300"}}},
    ]))
    cert = e2e.wait_terminal(kube, "Certification", "diagnose", namespace, 1200, controller)
    assert e2e.true_condition(cert, "Failed"), cert["status"]
    wf = kube.get(NVCRE_API_VERSION, "Workflow", cert["status"]["categoryStatuses"][0]["workflowRef"]["name"], namespace)
    diag = wf["status"]["orchestration"]["diagnose"]
    failed = {n["name"]: n for n in wf["status"].get("failedNodes") or []}
    assert set(failed) == {BAD_NODE}, (failed, diag.get("findings"))
    assert failed[BAD_NODE]["reason"] in ("ThresholdViolation", "WorkloadFailed")
    assert "failed" in failed[BAD_NODE]["message"]  # the evidence: which tests failed and passed
    links = [tuple(sorted((x["a"], x["b"]))) for x in diag["findings"]["links"]]
    assert links == [tuple(sorted(BAD_LINK))], diag["findings"]
    assert not diag["findings"]["racks"] and not diag["findings"]["unresolved"]
    # the planner's own budget (maxRounds) bounds it; a cross-rack link needs a halving
    # search, so this scenario takes more rounds than a node fault alone (measured: 13-14)
    assert diag["findings"]["rounds"] <= 20, diag["findings"]
    assert "Diagnosis complete" in e2e.true_condition(wf, "Failed")["message"]
    # every other node passed: nobody else is named on the Certification either
    assert {n["name"] for n in cert["status"].get("failedNodes") or []} == {BAD_NODE}
    # the ledger: every diagnosed node has its record, as the verdict says
    assert wf["status"]["orchestration"]["ledger"] == f"64 node records in namespace {ledger_ns}", wf["status"]["orchestration"]
    records = {r["metadata"]["name"]: r["status"] for r in kube.list(NVCRE_API_VERSION, "NodeReadiness", ledger_ns)}
    assert len(records) == 64, sorted(records)
    for node in (BAD_NODE, *BAD_LINK):
        assert records[node]["lastResult"] == "Failed", records[node]
    entry = records[BAD_NODE]["results"][0]
    assert entry["scope"].startswith("diagnosis") and entry["run"] == f"{namespace}/diagnose" and entry["gpuHours"] > 0
    assert entry["reason"].startswith(failed[BAD_NODE]["reason"]), entry
    link_reason = records["gpu-node-05"]["results"][0]["reason"]
    assert link_reason.startswith("link ") and "gpu-node-40" in link_reason, link_reason
    assert {n for n, r in records.items() if r["lastResult"] == "Passed"} == set(records) - {BAD_NODE, *BAD_LINK}
