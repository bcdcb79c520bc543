"""A target with no capable node says why per node, and a lone node is pointed at the
category that can still diagnose it (the hint is checked by following it)."""

from __future__ import annotations

import pytest

from nvcre.controller import capable
from nvcre.controller import conditions as c
from nvcre.controller.reconcilers.certification import reconcile_certification
from nvcre.controller.context import Context, Settings
from nvcre.controller.reconcilers.workflow import reconcile_workflow
from nvcre.report.build import RunObjects, build_report
from nvcre.report.text import render_text
from nvcre.sim.fleet import FleetSpec, build_fleet

from fake_kube import FakeKube

API = "nvcre.nvidia.com/v1alpha1"


def _fell_off_the_bus(node: dict) -> None:
    """What the simulated health agent does on XID 79: GpuHealthy=False, one GPU fewer allocatable."""
    node["status"]["allocatable"]["nvidia.com/gpu"] = "7"
    for cond in node["status"]["conditions"]:
        if cond["type"] == "GpuHealthy":
            cond.update(status="False", reason="GpuFellOffBus", message="GPU 3 has fallen off the bus: XID 79")


@pytest.fixture
def world():
    fleet = build_fleet(FleetSpec(nodes=3, racks=1))
    _fell_off_the_bus(fleet.nodes[1])
    fleet.nodes[2]["spec"]["unschedulable"] = True
    kube = FakeKube(fleet.nodes)
    return kube, Context(kube=kube, settings=Settings(), clock=lambda: 1_800_000_000.0), fleet.nodes


def _run(kube, ctx, name: str, nodes: list[str], category: dict) -> tuple[dict, dict]:
    kube.add({"apiVersion": API, "kind": "Certification", "metadata": {"name": name, "namespace": "ns"},
              "spec": {"target": {"nodeNames": nodes}, "categories": [category]}})
    reconcile_certification(ctx, "ns", name)
    wf_name = kube.get(API, "Certification", name, "ns")["status"]["categoryStatuses"][0]["workflowRef"]["name"]
    reconcile_workflow(ctx, "ns", wf_name)
    reconcile_certification(ctx, "ns", name)
    reconcile_certification(ctx, "ns", name)
    return kube.get(API, "Certification", name, "ns"), kube.get(API, "Workflow", wf_name, "ns")


def test_a_lone_gpu_failed_node_is_explained_and_pointed_at_its_diagnosis(world):
    kube, ctx, nodes = world
    cert, wf = _run(kube, ctx, "lone", ["gpu-node-02"], {"domain": "diagnostics", "variant": "dcgm-level4"})
    failed = c.reason_of(wf["status"]["conditions"], c.FAILED), next(
        x["message"] for x in wf["status"]["conditions"] if x["type"] == "Failed")
    assert failed[0] == "PartitionError"
    message = failed[1]
    assert "gpu-node-02 excluded: InsufficientGPUCapacity (node has 7 allocatable nvidia.com/gpu; the job needs 8" in message
    assert "GPU health condition failing: GpuHealthy=False (GpuFellOffBus)" in message
    assert message.endswith("rerun diagnostics/dcgm-level4 on gpu-node-02 with options.gpusPerNode: 7 "
                            "(the GPUs it can still allocate) to diagnose it"), message
    [entry] = wf["status"]["orchestration"]["excludedNodes"]
    assert entry["name"] == "gpu-node-02" and "GpuHealthy=False" in entry["message"]
    # the Certification says it too: its Failed message, its category, its excluded nodes
    cert_failed = next(x["message"] for x in cert["status"]["conditions"] if x["type"] == "Failed")
    assert "diagnostics/dcgm-level4 (no capable nodes" in cert_failed and "options.gpusPerNode: 7" in cert_failed
    assert cert["status"]["categoryStatuses"][0]["message"] == message
    assert "GpuHealthy=False" in cert["status"]["excludedNodes"][0]["message"]
    # and the report, per node and per category
    report = build_report(RunObjects(cert, [wf], nodes=nodes))
    assert report.exclusions[0].message == entry["message"]
    text = " ".join(render_text(report, 200).split())
    assert "- gpu-node-02: InsufficientGPUCapacity (node has 7 allocatable" in text
    assert "options.gpusPerNode: 7" in text

    # following the hint gets the node its diagnosis: the Workflow plans one group on it
    _, wf2 = _run(kube, ctx, "lone-diag", ["gpu-node-02"],
                  {"domain": "diagnostics", "variant": "dcgm-level4", "options": {"gpusPerNode": 7}})
    assert c.reason_of(wf2["status"]["conditions"], c.IN_PROGRESS) == "GroupsPartitioned", wf2["status"]
    assert [g["nodes"] for g in wf2["status"]["orchestration"]["groups"]] == [["gpu-node-02"]]


def test_another_category_points_at_the_diagnostics_category(world):
    kube, ctx, _ = world
    _, wf = _run(kube, ctx, "loop", ["gpu-node-02"], {"domain": "communication", "variant": "nccl-loopback"})
    message = next(x["message"] for x in wf["status"]["conditions"] if x["type"] == "Failed")
    assert message.startswith("no capable nodes for communication/nccl-loopback: gpu-node-02 excluded: ")
    assert message.endswith("; run diagnostics/dcgm-level4 on gpu-node-02 with options.gpusPerNode: 7 "
                            "(the GPUs it can still allocate) to diagnose it")


def test_several_nodes_each_say_why_and_no_single_hint(world):
    kube, ctx, _ = world
    _, wf = _run(kube, ctx, "two", ["gpu-node-02", "gpu-node-03"], {"domain": "diagnostics", "variant": "dcgm-level4"})
    message = next(x["message"] for x in wf["status"]["conditions"] if x["type"] == "Failed")
    assert "gpu-node-02 excluded: InsufficientGPUCapacity" in message
    assert "gpu-node-03 excluded: Cordoned (node is cordoned (spec.unschedulable)" in message
    assert "to diagnose it" not in message
    assert [e["reason"] for e in wf["status"]["orchestration"]["excludedNodes"]] == ["InsufficientGPUCapacity", "Cordoned"]


def test_a_cordoned_healthy_node_gets_its_own_advice_not_a_diagnosis():
    entry = {"name": "n1", "reason": "Cordoned", "message": "node is cordoned (spec.unschedulable); add a taintSelector"}
    node = {"metadata": {"name": "n1"}, "status": {"conditions": [{"type": "GpuHealthy", "status": "True"}]}}
    assert capable.diagnosis_hint(entry, node, "communication/nccl-all-reduce") is None
    node["status"]["conditions"][0]["status"] = "False"
    hint = capable.diagnosis_hint(entry, node, "communication/nccl-all-reduce")
    assert hint == ("run diagnostics/dcgm-level4 on n1 with a taintSelector for node.kubernetes.io/unschedulable "
                    "(it is cordoned) to diagnose it")


def test_the_listing_is_bounded():
    excluded = [{"name": f"n{i:03d}", "reason": "InsufficientGPUCapacity", "message": "x" * 400} for i in range(40)]
    message, entries = capable.explain(excluded, {}, "diagnostics/dcgm-level4")
    assert message.count(" excluded: ") == capable.MAX_LISTED and message.endswith("; and 30 more")
    assert len(entries) == 40 and sum("message" in e for e in entries) == capable.MAX_LISTED
    assert all(len(e.get("message", "")) <= capable.MAX_NODE_MESSAGE for e in entries)
