"""Isolation of a threshold miss: which groups qualify, the child diagnose Workflow it
creates, and how the child's verdict replaces (or does not replace) the group blame."""

from __future__ import annotations

import copy

from nvcre.api.load import parse_object
from nvcre.catalog.resolve import resolve_category
from nvcre.controller import isolation
from nvcre.controller.compose import build_workflow

NODES_A = [f"n{i:02d}" for i in range(1, 9)]
NODES_B = [f"n{i:02d}" for i in range(9, 17)]
TV = "ThresholdViolation"


def workflow(*, failed_groups, failed_nodes=None, groups=None, thresholds=None, **orchestration) -> dict:
    return {
        "apiVersion": "nvcre.nvidia.com/v1alpha1",
        "kind": "Workflow",
        "metadata": {
            "name": "cert-communication-nccl-all-r", "namespace": "ns", "uid": "wf-uid",
            "labels": {"app.kubernetes.io/managed-by": "nvcre", "nvcre.nvidia.com/certification": "cert"},
            "annotations": {"nvcre.nvidia.com/category-index": "0"},
            "ownerReferences": [{"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Certification", "name": "cert",
                                 "uid": "cert-uid", "controller": True}],
        },
        "spec": {
            "category": "communication/nccl-all-reduce",
            "jobTemplate": {"spec": {"workload": {"native": {"adapter": "native", "category": "communication/nccl-all-reduce"}}}},
            "orchestration": {"testScale": "full-scale", "nodesPerJob": 8, "iterations": 1, "placement": "Pinned",
                              "execution": {"maxConcurrent": 3, "retryFailedGroups": 1, "timeoutPerJob": "20m"},
                              "topology": {"topologyKey": "nvidia.com/gpu.clique", "strictDomain": False},
                              **orchestration},
            "validation": {"performance": {"enabled": True, "thresholds": {"thresholds": thresholds or {"busBandwidthGBps": "value >= 300"}}}},
        },
        "status": {
            "orchestration": {"groups": groups or [
                {"name": "group-0", "nodes": NODES_A, "phase": "Failed"},
                {"name": "group-1", "nodes": NODES_B, "phase": "Succeeded"},
            ]},
            "failedGroups": failed_groups,
            "failedNodes": failed_nodes if failed_nodes is not None else [
                {"name": n, "reason": TV} for g in failed_groups if g["reason"] == "ThresholdViolated" for n in g["nodes"]
            ],
        },
    }


def threshold_group(name="group-0", nodes=NODES_A):
    return {"name": name, "iteration": 1, "nodes": list(nodes), "reason": "ThresholdViolated",
            "message": "busBandwidthGBps 185.2 does not satisfy value >= 300"}


def test_a_threshold_miss_on_several_nodes_qualifies():
    wf = workflow(failed_groups=[threshold_group()])
    assert [g["name"] for g in isolation.eligible_groups(wf)] == ["group-0"]


def test_groups_already_attributed_or_not_about_bandwidth_do_not_qualify():
    hardware = {"name": "group-1", "nodes": NODES_B, "reason": "HardwareFailureDetected"}
    crashed = {"name": "group-1", "nodes": NODES_B, "reason": "WorkloadFailed"}
    single = threshold_group("group-5", ["n05"])
    assert isolation.eligible_groups(workflow(failed_groups=[crashed, single])) == []
    # a threshold group with a node a health detector named is explained already
    named = threshold_group()
    wf = workflow(failed_groups=[named, hardware], failed_nodes=[{"name": "n03", "reason": "HardwareFailureDetected"}])
    assert isolation.eligible_groups(wf) == []
    # a goodput threshold is not a bandwidth question
    assert isolation.eligible_groups(workflow(failed_groups=[threshold_group()], thresholds={"goodputRatio": "value >= 0.9"})) == []


def test_opting_out_and_diagnose_workflows_never_isolate():
    assert isolation.eligible_groups(workflow(failed_groups=[threshold_group()], isolateFailures=False)) == []
    assert isolation.eligible_groups(workflow(failed_groups=[threshold_group()], testScale="diagnose", diagnose={"minGroupSize": 2})) == []
    child = isolation.child_body(workflow(failed_groups=[threshold_group()]), NODES_A)
    child["status"] = {"failedGroups": [threshold_group()]}
    assert isolation.is_isolation(child) and isolation.eligible_groups(child) == []
    run = workflow(failed_groups=[threshold_group()])
    run["metadata"]["ownerReferences"][0]["kind"] = "WorkloadRun"
    assert isolation.eligible_groups(run) == []


def test_a_tiny_failed_group_borrows_proven_good_partners():
    pair = threshold_group("group-3", ["n05", "n06"])
    groups = [{"name": "group-3", "nodes": ["n05", "n06"], "phase": "Failed"},
              {"name": "group-4", "nodes": ["n07", "n08"], "phase": "Succeeded"},
              {"name": "group-5", "nodes": ["n09", "n10"], "phase": "Succeeded"}]
    wf = workflow(failed_groups=[pair], groups=groups)
    assert isolation.isolation_nodes(wf, [pair]) == ["n05", "n06", "n07", "n08"]
    big = workflow(failed_groups=[threshold_group()])
    assert isolation.isolation_nodes(big, [threshold_group()]) == NODES_A


def test_begin_records_the_isolation_and_stays_in_progress():
    wf = workflow(failed_groups=[threshold_group()])
    st = copy.deepcopy(wf["status"])
    isolation.begin(st, wf, isolation.eligible_groups(wf), 1)
    iso = st["orchestration"]["isolation"]
    assert iso == {"workflow": isolation.child_name(wf["metadata"]["name"]), "phase": "Running",
                   "groups": ["group-0"], "nodes": NODES_A}
    progress = next(x for x in st["conditions"] if x["type"] == "InProgress")
    assert progress["status"] == "True" and progress["reason"] == "IsolatingFaults"


def test_the_child_is_a_valid_diagnose_workflow_over_the_groups_nodes():
    parent = workflow(failed_groups=[threshold_group()])
    child = isolation.child_body(parent, NODES_A)
    parse_object(child)  # the API model (and so the CRD schema) accepts it
    orch = child["spec"]["orchestration"]
    assert orch["testScale"] == "diagnose" and orch["target"] == {"nodeNames": NODES_A}
    assert orch["diagnose"] == {"minGroupSize": 2, "topologyKey": "nvidia.com/gpu.clique"}
    assert "nodesPerJob" not in orch and "topology" not in orch and orch["iterations"] == 1
    assert orch["execution"] == {"maxConcurrent": 3, "timeoutPerJob": "20m"}  # no retries inside a diagnosis
    assert child["spec"]["validation"] == parent["spec"]["validation"]  # judged by the same thresholds
    meta = child["metadata"]
    assert meta["ownerReferences"][0]["kind"] == "Workflow" and meta["ownerReferences"][0]["uid"] == "wf-uid"
    assert "nvcre.nvidia.com/certification" not in meta["labels"]  # not a category of the Certification
    assert meta["labels"]["nvcre.nvidia.com/workflow"] == parent["metadata"]["name"]
    assert len(meta["name"]) <= 31 and isolation.child_name(parent["metadata"]["name"]) == meta["name"]
    assert parent["spec"]["orchestration"]["nodesPerJob"] == 8  # the parent is untouched


def _child(*, phase="Failed", failed_nodes=(), links=(), racks=(), unresolved=()):
    return {
        "metadata": {"name": "child"},
        "status": {
            "conditions": [{"type": phase, "status": "True", "reason": "IterationsFailed" if phase == "Failed" else "JobCompleted",
                            "message": "Diagnosis complete"}],
            "failedNodes": list(failed_nodes),
            "orchestration": {"diagnose": {"findings": {"links": list(links), "racks": list(racks),
                                                        "unresolved": list(unresolved), "rounds": 3, "tests": 9}}},
        },
    }


def _begun(failed_groups=None):
    wf = workflow(failed_groups=failed_groups or [threshold_group(), threshold_group("group-1", NODES_B)])
    st = copy.deepcopy(wf["status"])
    isolation.begin(st, wf, isolation.eligible_groups(wf), 1)
    return st


def test_a_convicted_node_replaces_the_whole_group_blame():
    st = _begun()
    st["failedNodes"].append({"name": "n12", "reason": "HardwareFailureDetected", "message": "XID 79"})
    summary = isolation.fold(st, _child(failed_nodes=[{"name": "n07", "reason": TV, "message": "failed 2 of 2 tests"}]))
    assert {(n["name"], n["reason"]) for n in st["failedNodes"]} == {("n07", TV), ("n12", "HardwareFailureDetected")}
    assert st["failedNodeCount"] == 2
    assert summary == "isolated to n07 in 3 rounds, 9 tests"
    iso = st["orchestration"]["isolation"]
    assert iso["phase"] == "Succeeded" and iso["convicted"] == ["n07"] and iso["rounds"] == 3
    messages = {g["name"]: g["message"] for g in st["failedGroups"]}
    assert messages["group-0"].endswith("; isolated to n07")
    assert messages["group-1"].endswith("isolation cleared every node of this group")


def test_a_link_names_both_ends_with_the_evidence():
    st = _begun()
    isolation.fold(st, _child(links=[{"a": "n03", "b": "n11", "message": "the pair failed twice on its own"}]))
    named = {n["name"]: n for n in st["failedNodes"]}
    assert set(named) == {"n03", "n11"}
    assert "link n03<->n11" in named["n03"]["message"] and "(n11)" in named["n03"]["message"]
    assert st["orchestration"]["isolation"]["links"] == ["n03<->n11"]


def test_an_inconclusive_isolation_keeps_every_node_of_the_groups_named():
    for child, why in (
        (_child(phase="Succeeded"), "did not reproduce"),
        (_child(failed_nodes=[{"name": "n02", "reason": TV}], racks=[{"rack": "rack-1"}]), "Diagnosis complete"),
        (_child(failed_nodes=[{"name": "n02", "reason": TV}], unresolved=[{"nodes": ["n04", "n05"]}]), "Diagnosis complete"),
        (None, "could not run"),
    ):
        st = _begun()
        before = copy.deepcopy(st["failedNodes"])
        summary = isolation.fold(st, child)
        assert st["failedNodes"] == before and why in summary
        assert st["orchestration"]["isolation"]["phase"] == "Failed"
        assert "stays named" in summary or child is None


def test_the_option_reaches_the_workflow_spec_only_when_turned_off():
    def spec_of(**options):
        cat = {"domain": "communication", "variant": "nccl-all-reduce", **({"options": options} if options else {})}
        resolved = resolve_category(cat, None, platform="onprem", gpu_arch="h100")
        body = build_workflow(name="w", namespace="ns", owner={"apiVersion": "v", "kind": "Certification",
                                                               "metadata": {"name": "c", "uid": "u"}},
                              resolved=resolved, target=None, adapter="native", labels={}, annotations={})
        return resolved, body["spec"]["orchestration"]

    on, orch_on = spec_of()
    off, orch_off = spec_of(isolateFailures=False)
    assert on.isolate_failures and "isolateFailures" not in orch_on
    assert not off.isolate_failures and orch_off["isolateFailures"] is False
