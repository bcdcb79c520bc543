"""Benchmark: one node-health pass over 4096 simulated Node objects (budget 0.5 s).

Nodes are shaped like real GPU nodes (GFD labels, managedFields, 40 images,
conditions with timestamps), a few of them faulty. Prints the cold pass (every
Node new), the warm pass (unchanged Nodes come from the verdict cache) and a cold
pass with one extra user detector, plus the ratio to the budget.
"""

from __future__ import annotations

import copy
import time

from nvcre.health.detectors import NodeHealthMonitor, default_detectors

BUDGET_S = 0.5
NODES = 4096


def make_node(index: int) -> dict:
    name = f"gpu-node-{index:04d}"
    stamp = "2026-11-30T07:00:00Z"
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "uid": f"uid-{index}",
            "resourceVersion": "1000",
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/arch": "amd64",
                "nvidia.com/gpu.present": "true",
                "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
                "nvidia.com/gpu.count": "8",
                "nvidia.com/gpu.family": "hopper",
                "nvidia.com/gpu.clique": f"clique-{index // 18}",
                "nvidia.com/cuda.driver.major": "570",
                "node.kubernetes.io/instance-type": "p5.48xlarge",
                "topology.kubernetes.io/zone": "us-east-1e",
            },
            "annotations": {"node.alpha.kubernetes.io/ttl": "0", "volumes.kubernetes.io/controller-managed-attach-detach": "true"},
            "managedFields": [
                {"manager": "kubelet", "operation": "Update", "fieldsV1": {"f:status": {f"f:c{i}": {} for i in range(30)}}}
                for _ in range(3)
            ],
        },
        "spec": {"providerID": f"aws:///us-east-1e/i-{index:017d}", "podCIDR": "10.0.0.0/24"},
        "status": {
            "capacity": {"cpu": "192", "memory": "2052347172Ki", "nvidia.com/gpu": "8", "vpc.amazonaws.com/efa": "32", "pods": "110"},
            "allocatable": {"cpu": "191", "memory": "2000000000Ki", "nvidia.com/gpu": "8", "vpc.amazonaws.com/efa": "32", "pods": "110"},
            "conditions": [
                {"type": t, "status": "False", "reason": f"Kubelet{t}", "message": "ok", "lastHeartbeatTime": stamp, "lastTransitionTime": stamp}
                for t in ("MemoryPressure", "DiskPressure", "PIDPressure")
            ]
            + [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "kubelet is posting ready status",
                "lastHeartbeatTime": stamp, "lastTransitionTime": stamp}],
            "addresses": [{"type": "InternalIP", "address": f"10.0.{index // 256}.{index % 256}"}, {"type": "Hostname", "address": name}],
            "images": [{"names": [f"nvcr.io/nvidia/image-{i}@sha256:{'a' * 64}", f"nvcr.io/nvidia/image-{i}:26.01"], "sizeBytes": 123456789}
                       for i in range(40)],
            "nodeInfo": {"kubeletVersion": "v1.31.0", "osImage": "Ubuntu 22.04", "kernelVersion": "6.8.0"},
        },
    }
    if index % 1000 == 7:
        node["status"]["allocatable"]["nvidia.com/gpu"] = "7"
        node["status"]["conditions"].append({"type": "GpuXidError", "status": "True", "reason": "Xid79",
                                            "message": "GPU has fallen off the bus"})
    if index % 1000 == 12:
        node["spec"]["unschedulable"] = True
    return node


def timed(monitor: NodeHealthMonitor, nodes: list[dict]) -> tuple[float, int]:
    start = time.perf_counter()
    findings = monitor.evaluate(nodes)
    return time.perf_counter() - start, len(findings)


def main() -> None:
    nodes = [make_node(i) for i in range(NODES)]
    monitor = NodeHealthMonitor(default_detectors())
    cold, fired = timed(monitor, nodes)
    warm, _ = timed(monitor, nodes)
    changed = copy.deepcopy(nodes)
    for node in changed:
        node["metadata"]["resourceVersion"] = "1001"
    user = NodeHealthMonitor(
        default_detectors()
        + [{"name": "taint", "expression": "node.spec.taints.exists(t, t.key == 'gpu.health/error')", "message": "tainted"}]
    )
    with_user, _ = timed(user, changed)
    print(f"node-health CEL, {NODES} nodes, {len(default_detectors())} default detectors ({fired} findings)")
    print(f"  cold pass:              {cold:.3f} s  ({cold / BUDGET_S:.0%} of the {BUDGET_S} s budget)")
    print(f"  warm pass (cached):     {warm:.3f} s  ({warm / BUDGET_S:.0%} of budget)")
    print(f"  cold + 1 user detector: {with_user:.3f} s  ({with_user / BUDGET_S:.0%} of budget)")
    print(f"  per node (cold):        {cold / NODES * 1e6:.1f} us")


if __name__ == "__main__":
    main()
