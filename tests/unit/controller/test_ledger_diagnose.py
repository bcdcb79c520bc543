"""A testScale diagnose run writes the ledger: the Workflow is composed from a Certification
as the controller does, the diagnosis is run by the real planner against a simulated
fleet, and its verdict is written by the controller's own ``_verdict`` (the status a
diagnose Workflow ends with: groups emptied, ``orchestration.diagnose.findings``,
``failedNodes``)."""

from __future__ import annotations

import copy

from fake_kube import FakeKube

from nvcre.controller import compose
from nvcre.controller import ledger as W
from nvcre.controller import conditions as c
from nvcre.controller import labels as L
from nvcre.controller.context import Context, Settings, format_time
from nvcre.controller.diagnose import _verdict
from nvcre.judge import ledger as J
from nvcre.planning.diagnose import DiagnosePolicy, Round, next_round, record, start
from nvcre.planning.diagnose_sim import Fleet, Scenario, cluster

API = "nvcre.nvidia.com/v1alpha1"
NOW = 1_800_000_000.0
END = "2026-12-02T04:00:00Z"


def _cert(**options) -> dict:
    return {"apiVersion": API, "kind": "Certification", "metadata": {"name": "diag", "namespace": "ns", "uid": "cert-uid"},
            "spec": {"target": {}, "categories": [{"domain": "communication", "variant": "nccl-all-reduce",
                                                   "options": {"testScale": "diagnose", **options}}]}}


class _CertKube:
    def __init__(self, cert: dict) -> None:
        self.cert = cert

    def get(self, *a, **k):
        return self.cert if a[1] == "Certification" else None


def _diagnosed(sc: Scenario, cert: dict) -> tuple[dict, list[dict]]:
    """The ended diagnose Workflow and one nvcre Job per test the planner ran."""
    resolved = compose.resolve_certification_category(cert, 0, "aws", "h100")
    wf = compose.workflow_for_category(Context(kube=_CertKube(cert), settings=Settings()), cert, 0, resolved, "native")
    wf["metadata"].update(namespace="ns", ownerReferences=[
        {"apiVersion": API, "kind": "Certification", "name": "diag", "uid": "cert-uid", "controller": True}])
    policy = DiagnosePolicy(threshold=sc.threshold, cross_check_after_faults=True, link_check="search")
    state, fleet, jobs = start(sc.nodes, sc.topology, policy), Fleet(sc), []
    while isinstance(step := next_round(state), Round):
        results = [fleet.run(g, t) for g, t in zip(step.groups, step.tags)]
        for i, (group, res) in enumerate(zip(step.groups, results)):
            begin = NOW + 600 * step.number
            jobs.append({
                "apiVersion": API, "kind": "Job",
                "metadata": {"name": f"{wf['metadata']['name']}-r{step.number}-{i}", "namespace": "ns",
                             "creationTimestamp": format_time(begin), "labels": {L.WORKFLOW: wf["metadata"]["name"]}},
                "spec": {"nodes": list(group)},
                "status": {"workloadStartTime": format_time(begin),
                           "conditions": [{"type": "Succeeded" if res.passed else "Failed", "status": "True",
                                           "lastTransitionTime": format_time(begin + 360)}],
                           "measurements": {"busBandwidthGBps": res.measured, "ncclVersion": "2.27.7+cuda12.9",
                                            "transport": "IB"}},
            })
        state = record(state, results)
    st = {"orchestration": {"testScale": "diagnose", "diagnose": state.to_dict(), "groups": []}, "conditions": []}
    _verdict(st, step, 1, END)
    wf["status"] = st
    return wf, jobs


def _node_fault_and_link() -> tuple[dict, list[dict], list[str]]:
    nodes, topo = cluster(16, 8)
    sc = Scenario(nodes, topo, bad_nodes={nodes[3]: 0.5}, bad_links={frozenset((nodes[1], nodes[12])): 0.3}, seed=1)
    wf, jobs = _diagnosed(sc, _cert(thresholds={"busBandwidthGBps": "value >= 300"}))
    return wf, jobs, nodes


def test_a_diagnosis_records_every_node_it_ran_over():
    wf, jobs, nodes = _node_fault_and_link()
    assert wf["status"]["orchestration"]["groups"] == []  # what a grouped run reads: nothing
    out = {r.node: r for r in W.node_results(wf, "ns/diag", END, jobs, {})}
    assert sorted(out) == nodes
    bad = out[nodes[3]]
    assert bad.result == J.FAILED and bad.reason.startswith("ThresholdViolation: failed ")  # the diagnosis's evidence
    for end, other in ((nodes[1], nodes[12]), (nodes[12], nodes[1])):
        assert out[end].result == J.FAILED and f"link {nodes[1]}<->{nodes[12]}" in out[end].reason
        assert other in out[end].reason
    cleared = [n for n in nodes if n not in (nodes[1], nodes[3], nodes[12])]
    assert all(out[n].result == J.PASSED and out[n].reason is None for n in cleared)
    for r in out.values():
        assert r.scope == "diagnosis (adaptive isolation), 8 GPUs per node" and r.value is None
        assert r.category == "communication/nccl-all-reduce" and r.workflow == wf["metadata"]["name"]
        assert r.bar == "busBandwidthGBps value >= 300" and r.stage is None
        assert r.environment["nccl"] == "2.27.7+cuda12.9" and r.environment["transport"] == "IB"
        assert r.gpu_hours and r.gpu_hours > 0
    # GPU-hours: every test a node took part in, its share of the group's 6 minutes x 8 GPUs
    spent = sum(0.1 * 8 for j in jobs if nodes[3] in j["spec"]["nodes"])
    assert abs(out[nodes[3]].gpu_hours - spent) < 1e-6


def test_a_rack_at_fault_leaves_its_nodes_not_cleared():
    nodes, topo = cluster(24, 8)
    wf, jobs = _diagnosed(Scenario(nodes, topo, bad_racks={"rack-001": 0.5}, seed=1),
                          _cert(thresholds={"busBandwidthGBps": "value >= 300"}))
    out = {r.node: r for r in W.node_results(wf, "ns/diag", END, jobs, {})}
    in_rack = [n for n in nodes if topo[n] == "rack-001"]
    assert all(out[n].result == J.NOT_JUDGED and "rack rack-001 at fault" in out[n].reason for n in in_rack)
    assert all(out[n].result == J.PASSED for n in nodes if n not in in_rack)


def test_a_diagnosis_nothing_judged_clears_no_node():
    nodes, topo = cluster(8, 8)
    wf, jobs = _diagnosed(Scenario(nodes, topo, seed=2), _cert())
    assert c.phase_of(wf["status"]["conditions"]) == c.SUCCEEDED  # healthy: nothing failed, nothing judged either
    out = W.node_results(wf, "ns/diag", END, jobs, {})
    assert len(out) == 8 and {r.result for r in out} == {J.NOT_JUDGED}
    assert all(r.reason.startswith("not judged") and r.stage is None for r in out)


def test_an_unreadable_diagnose_state_records_nothing_rather_than_guessing():
    wf, jobs, _ = _node_fault_and_link()
    broken = copy.deepcopy(wf)
    broken["status"]["orchestration"]["diagnose"]["version"] = 99
    assert W.node_results(broken, "ns/diag", END, jobs, {}) == []


def test_record_workflow_writes_a_node_readiness_per_diagnosed_node(monkeypatch):
    monkeypatch.setenv("NVCRE_LEDGER_NAMESPACE", "ledger")
    wf, jobs, nodes = _node_fault_and_link()
    kube = FakeKube([])
    ctx = Context(kube=kube, settings=Settings(), clock=lambda: NOW)
    for job in jobs:
        ctx.metrics.store.put(job)
    kube.add(wf)
    written = W.record_workflow(ctx, kube.get(API, "Workflow", wf["metadata"]["name"], "ns"))
    assert written["status"]["orchestration"]["ledger"] == "16 node records in namespace ledger"
    records = {r["metadata"]["name"]: r["status"] for r in kube.list(API, W.KIND, "ledger")}
    assert sorted(records) == nodes
    assert records[nodes[3]]["lastResult"] == "Failed" and records[nodes[12]]["lastResult"] == "Failed"
    assert records[nodes[0]]["lastResult"] == "Passed"
    entry = records[nodes[3]]["results"][0]
    assert entry["scope"].startswith("diagnosis") and entry["run"] == "ns/diag" and entry["gpuHours"] > 0


def test_a_diagnosis_that_ended_before_its_verdict_records_nothing():
    wf, jobs, nodes = _node_fault_and_link()
    cut = copy.deepcopy(wf)
    del cut["status"]["orchestration"]["diagnose"]["findings"]
    cut["status"]["orchestration"]["groups"] = [{"name": "r3-0", "nodes": nodes[:2], "phase": "Succeeded", "headline": 390.0}]
    assert W.node_results(cut, "ns/diag", END, jobs, {}) == []


def test_record_workflow_reads_node_labels_from_the_watch_cache_not_a_list(monkeypatch):
    """At 4096 nodes a Node LIST is about 41 MB: once the cache holds the Nodes, recording a
    finished Workflow makes no LIST request at all (issue 12), and still records the driver."""
    monkeypatch.setenv("NVCRE_LEDGER_NAMESPACE", "ledger")
    wf, jobs, nodes = _node_fault_and_link()
    kube = FakeKube([])
    ctx = Context(kube=kube, settings=Settings(), clock=lambda: NOW)
    for job in jobs:
        ctx.cache.put(job)
    listed = [{"apiVersion": "v1", "kind": "Node", "metadata": {
        "name": n, "labels": {"nvidia.com/gpu.present": "true", "nvidia.com/cuda.driver-version.full": "580.65.06"}}}
        for n in nodes]
    ctx.cache.replace("Node", listed)
    kube.add(wf)
    written = W.record_workflow(ctx, kube.get(API, "Workflow", wf["metadata"]["name"], "ns"))
    assert written["status"]["orchestration"]["ledger"] == "16 node records in namespace ledger"
    assert "Node" not in kube.lists and "Job" not in kube.lists, kube.lists
    record = kube.get(API, W.KIND, nodes[0], "ledger")
    assert record["status"]["results"][0]["environment"].get("driver") == "580.65.06", record["status"]["results"][0]
