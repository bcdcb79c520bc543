"""`cluster info` warns about nodes a run would exclude or fail before anything runs."""

from __future__ import annotations

from nvcre.cli.cluster import cluster_summary, render_table
from nvcre.discovery.nodes import gpu_condition_failures


def _node(name: str, gpus: int = 8, conditions: list[dict] | None = None, labels: dict | None = None) -> dict:
    return {
        "metadata": {"name": name, "labels": {"nvidia.com/gpu.present": "true", **(labels or {})}},
        "status": {"allocatable": {"nvidia.com/gpu": str(gpus)},
                   "conditions": [{"type": "Ready", "status": "True"}] + (conditions or [])},
    }


def test_failing_gpu_condition_and_missing_gpus_are_warned():
    nodes = [
        _node("ok"),
        _node("sick", conditions=[{"type": "GpuHealthy", "status": "False", "reason": "XidError"}]),
        _node("xid", conditions=[{"type": "GpuXidError", "status": "True"}]),
        _node("healthy-too", conditions=[{"type": "GpuHealthy", "status": "True"}]),
        _node("no-plugin", gpus=0, labels={"nvidia.com/gpu.count": "8"}),
    ]
    summary = cluster_summary(nodes)
    text = render_table(summary)
    assert "node sick: GPU health condition failing: GpuHealthy=False (XidError)" in text
    assert "node xid: GPU health condition failing: GpuXidError=True" in text
    assert "healthy-too" not in text and "node ok" not in text
    assert "1 GPU node with no allocatable nvidia.com/gpu (device plugin not running?): no-plugin" in text


def test_condition_rule_matches_the_detector():
    assert gpu_condition_failures(_node("a", conditions=[{"type": "NvidiaGPUReady", "status": "False"}])) == ["NvidiaGPUReady=False"]
    assert gpu_condition_failures(_node("b", conditions=[{"type": "DiskPressure", "status": "True"}])) == []


def test_fewer_allocatable_than_installed_gpus_is_warned():
    short = _node("short")
    short["status"]["capacity"] = {"nvidia.com/gpu": "8"}
    short["status"]["allocatable"] = {"nvidia.com/gpu": "7"}
    full = _node("full")
    full["status"]["capacity"] = {"nvidia.com/gpu": "8"}
    text = render_table(cluster_summary([short, full, _node("no-capacity-field")]))
    assert "warning: node short: 7 of 8 GPUs allocatable" in text and "kubectl describe node short" in text
    assert "node full" not in text and "no-capacity-field" not in text


def test_counts_read_in_the_right_number():
    text = render_table(cluster_summary([_node("only", labels={"topology.kubernetes.io/rack": "r1"})],
                                        topology_key="topology.kubernetes.io/rack"))
    assert "(1 node in the cluster)" in text and "(1 node x 8)" in text and "1 domain\n" in text
    assert "1 nodes" not in text
