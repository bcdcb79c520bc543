import pytest

from nvcre.catalog.hardware import check_gpu_arch, hardware_defaults
from nvcre.discovery.gpu import (
    majority_arch,
    node_arch,
    parse_product,
    products_from_resource_slices,
    sanitize_product,
)
from nvcre.errors import UserError


@pytest.mark.parametrize(
    "product, arch",
    [
        ("NVIDIA-H100-80GB-HBM3", "h100"),
        ("NVIDIA-H100-NVL", "h100"),
        ("NVIDIA-A100-SXM4-40GB", "a100"),
        ("NVIDIA-GB200", "gb200"),
        ("NVIDIA-GB200-NVL72", "gb200"),
        ("NVIDIA-GB300-NVL72", "gb300"),
        ("NVIDIA-L40", "l40"),
        ("NVIDIA-L40S", "l40s"),
        ("NVIDIA-B300-SXM6-AC", "b300"),
        ("NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition", "rtxpro6000"),
        ("NVIDIA GB300", "gb300"),
        ("NVIDIA RTX PRO 6000 Blackwell Server Edition", "rtxpro6000"),
        ("", ""),
    ],
)
def test_parse_product(product, arch):
    assert parse_product(product) == arch


@pytest.mark.parametrize(
    "fixture, arch",
    [
        ("nvcre-uat-aws-h100-p5-nodes.yaml", "h100"),
        ("nvcre-uat-aws-gb300-nodes.yaml", "gb300"),
        ("nvcre-uat-gcp-gb200-a4x-nodes.yaml", "gb200"),
        ("nvcre-int-gcp-rtxpro6000-nodes-and-cert.yaml", "rtxpro6000"),
        ("nvcre-int-aws-a100-node-dcgm-level4-cert.yaml", "a100"),
    ],
)
def test_arch_of_real_nodes(nodes_of, fixture, arch):
    vote = majority_arch(nodes_of(fixture))
    assert vote.arch == arch
    assert not vote.excluded


def _node(name, product=None):
    labels = {"nvidia.com/gpu.present": "true"}
    if product:
        labels["nvidia.com/gpu.product"] = product
    return {"metadata": {"name": name, "labels": labels}}


def test_majority_excludes_minority_with_reason_and_keeps_unlabelled():
    nodes = [_node("c", "NVIDIA-H100-80GB-HBM3"), _node("a", "NVIDIA-H100-80GB-HBM3"),
             _node("b", "NVIDIA-A100-SXM4-40GB"), _node("d")]
    vote = majority_arch(nodes)
    assert vote.arch == "h100"
    assert [n["metadata"]["name"] for n in vote.kept] == ["a", "c", "d"]
    assert vote.excluded == [{"name": "b", "reason": "HeterogeneousGPU",
                              "message": "GPU architecture a100 differs from the majority h100 (2 of 3 labelled nodes)"}]
    assert vote.products == ["NVIDIA-H100-80GB-HBM3"]


def test_tie_goes_to_first_node_by_name_and_unlabelled_is_unknown():
    assert majority_arch([_node("z", "NVIDIA-GB200"), _node("a", "NVIDIA-B200")]).arch == "b200"
    vote = majority_arch([_node("x"), _node("y")])
    assert vote.arch == "unknown" and len(vote.kept) == 2


def test_resource_slice_fallback_names_the_arch():
    slices = [
        {"spec": {"driver": "gpu.nvidia.com", "nodeName": "dra-1",
                  "devices": [{"name": "gpu-0", "attributes": {"productName": {"string": "NVIDIA GB300"}}}]}},
        {"spec": {"driver": "other.example.com", "nodeName": "dra-2",
                  "devices": [{"name": "x", "attributes": {"productName": {"string": "NVIDIA H100"}}}]}},
    ]
    products = products_from_resource_slices(slices)
    assert products == {"dra-1": "NVIDIA-GB300"}
    assert node_arch(_node("dra-1"), products) == "gb300"
    assert node_arch(_node("dra-2"), products) == "unknown"
    assert sanitize_product("NVIDIA  B200 (rev*1)") == "NVIDIA-B200-rev1"


def test_hardware_defaults_table_platform_override_and_fallback_warning():
    h100 = hardware_defaults("h100", "aws")
    assert (h100.gpus_per_node, h100.mlnx_per_node, h100.mnnvl, h100.known) == (8, 8, False, True)
    gb200 = hardware_defaults("gb200", "aws")
    assert (gb200.gpus_per_node, gb200.mnnvl) == (4, True)
    # An explicit 0 in the platform table wins (OCI GB200 requests no NIC by default).
    assert hardware_defaults("gb200", "oci").mlnx_per_node == 0
    assert hardware_defaults("l40s", "oci").gpus_per_node == 4
    assert hardware_defaults("gb300", "nscale").mlnx_per_node == 4
    assert h100.warning() is None
    new = hardware_defaults("x999", "aws")
    assert (new.gpus_per_node, new.mlnx_per_node, new.known) == (4, 0, False)
    assert 'GPU architecture "x999" has no entry' in new.warning()
    assert "gpusPerNode=4 mlnxPerNode=0" in new.warning()
    assert hardware_defaults("unknown").warning() is None


def test_check_gpu_arch_accepts_products_and_refuses_unknown():
    assert check_gpu_arch("NVIDIA-H100-80GB-HBM3") == "h100"
    assert check_gpu_arch("GB300") == "gb300"
    with pytest.raises(UserError, match="--gpu-arch: unknown GPU architecture 'v100'"):
        check_gpu_arch("v100")
