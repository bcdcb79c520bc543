"""GPUs per node from DRA ResourceSlices: whole GPUs only (the device ``type`` attribute)."""

from __future__ import annotations

from nvcre.discovery.gpu import gpu_counts_from_resource_slices, products_from_resource_slices


def _dev(name, kind, product="NVIDIA B200", beta=False):
    attrs = {"productName": {"string": product}}
    if kind is not None:
        attrs["type"] = {"string": kind}
    return {"name": name, "basic": {"attributes": attrs}} if beta else {"name": name, "attributes": attrs}


def test_only_devices_typed_gpu_count():
    slices = [
        {"spec": {"driver": "gpu.nvidia.com", "nodeName": "n1",
                  "devices": [_dev(f"gpu-{i}", "gpu") for i in range(8)] + [_dev(f"mig-{i}", "mig") for i in range(14)]}},
        # v1beta1 shape (attributes under "basic"), split over two slices of one pool
        {"spec": {"driver": "gpu.nvidia.com", "nodeName": "n2", "devices": [_dev("gpu-0", "GPU", beta=True)]}},
        {"spec": {"driver": "gpu.nvidia.com", "nodeName": "n2", "devices": [_dev("gpu-1", "gpu", beta=True), _dev("x", None)]}},
        {"spec": {"driver": "rdma.nscale.com", "nodeName": "n1", "devices": [_dev("nic-0", "gpu")]}},
        {"spec": {"driver": "gpu.nvidia.com", "devices": [_dev("gpu-0", "gpu")]}},  # no node: not counted
    ]
    assert gpu_counts_from_resource_slices(slices) == {"n1": 8, "n2": 2}


def test_product_read_from_a_gpu_device_not_a_mig_partition():
    slices = [{"spec": {"driver": "gpu.nvidia.com", "nodeName": "n1",
                        "devices": [_dev("mig-0", "mig", product="NVIDIA B200 MIG 1g.23gb"), _dev("gpu-0", "gpu")]}}]
    assert products_from_resource_slices(slices) == {"n1": "NVIDIA-B200"}
