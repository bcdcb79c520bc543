"""Unknown GPU models are sized from the nodes, never from a fixed fallback."""

from __future__ import annotations

from nvcre.catalog.hardware import is_known_architecture
from nvcre.discovery.gpu import infer_hardware
from nvcre.sim.fleet import FleetSpec, build_fleet


def _node(gpus=None, label=None, **alloc):
    labels = {"nvidia.com/gpu.count": str(label)} if label is not None else {}
    capacity = {"nvidia.com/gpu": str(gpus)} if gpus is not None else {}
    return {"metadata": {"name": "n", "labels": labels}, "status": {"capacity": capacity, "allocatable": {**capacity, **alloc}}}


def test_gpus_from_capacity_and_nics_from_the_resource():
    hw = infer_hardware([_node(8, **{"nvidia.com/mlnxnics": "8"}) for _ in range(3)])
    assert (hw.gpus_per_node, hw.nics_per_node, hw.nic_resource) == (8, 8, "nvidia.com/mlnxnics")
    assert hw.sources == ("gpusPerNode=8 (nvidia.com/gpu capacity)", "mlnxPerNode=8 (nvidia.com/mlnxnics allocatable)")


def test_label_when_no_device_plugin_and_majority_over_odd_nodes():
    assert infer_hardware([_node(label=4)]).gpus_per_node == 4
    assert infer_hardware([_node(8), _node(8), _node(7)]).gpus_per_node == 8


def test_shared_device_pool_is_not_a_nic_count():
    hw = infer_hardware([_node(8, **{"rdma/ib": "1k"})])
    assert hw.nics_per_node == 1 and "shared-device pool" in hw.sources[1]


def test_nothing_on_the_nodes_means_nothing_inferred():
    hw = infer_hardware([_node()])
    assert hw.gpus_per_node is None and hw.nics_per_node is None
    assert "not inferred" in hw.sources[0]


def test_the_simulated_h20_fleet_is_unknown_to_the_catalog_and_sized_from_its_nodes():
    fleet = build_fleet(FleetSpec(nodes=4, gpu="h20", platform="onprem"))
    assert not is_known_architecture("h20")
    hw = infer_hardware(fleet.nodes)
    assert hw.gpus_per_node == 8 and hw.nic_resource == "rdma/ib"
