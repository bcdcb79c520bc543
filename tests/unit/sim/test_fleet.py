"""Simulated Node objects look like the real GPU nodes in tests/data/fixtures/nodes."""

from __future__ import annotations

import pytest
import yaml

from nvcre.errors import ManifestError, UserError
from nvcre.sim.faults import FaultModel, parse_fault_flag
from nvcre.sim.fleet import FleetSpec, build_fleet, node_names


def _fixture_nodes(fixtures_dir, name):
    docs = yaml.safe_load_all((fixtures_dir / "nodes" / name).read_text())
    return [d for d in docs if d and d.get("kind") == "Node"]


def test_names_are_zero_padded():
    assert node_names(3) == ["gpu-node-01", "gpu-node-02", "gpu-node-03"]
    assert node_names(512)[0] == "gpu-node-001"
    assert node_names(512)[-1] == "gpu-node-512"


def test_aws_h100_node_matches_the_real_shape(fixtures_dir):
    real = _fixture_nodes(fixtures_dir, "nvcre-uat-aws-h100-p5-nodes.yaml")[0]
    node = build_fleet(FleetSpec(nodes=2, platform="aws", gpu="h100")).nodes[0]
    for label in ("nvidia.com/gpu.present", "nvidia.com/gpu.product", "nvidia.com/gpu.count",
                  "nvidia.com/gpu.family", "node.kubernetes.io/instance-type", "kubernetes.io/arch"):
        assert node["metadata"]["labels"][label] == real["metadata"]["labels"][label], label
    assert node["spec"]["providerID"].startswith("aws:///")
    for key in ("nvidia.com/gpu", "vpc.amazonaws.com/efa"):
        assert node["status"]["allocatable"][key] == real["status"]["allocatable"][key]
    assert node["status"]["addresses"] == [{"type": "InternalIP", "address": "127.0.0.1"}]
    ready = [c for c in node["status"]["conditions"] if c["type"] == "Ready"][0]
    assert ready["status"] == "True"


def test_gb200_nodes_carry_a_clique_per_rack(fixtures_dir):
    real = _fixture_nodes(fixtures_dir, "nvcre-uat-gcp-gb200-a4x-nodes.yaml")[0]
    fleet = build_fleet(FleetSpec(nodes=4, platform="gcp", gpu="gb200", racks=2))
    labels = [n["metadata"]["labels"] for n in fleet.nodes]
    assert labels[0]["nvidia.com/gpu.product"] == real["metadata"]["labels"]["nvidia.com/gpu.product"]
    assert labels[0]["nvidia.com/gpu.count"] == "4"
    cliques = [l["nvidia.com/gpu.clique"] for l in labels]
    assert cliques[0] == cliques[1] != cliques[2] == cliques[3]
    assert cliques[0].rsplit(".", 1)[1] == "1"
    assert fleet.nodes[0]["spec"]["providerID"].startswith("gce://")
    assert "networking.gke.io.networks/rdma-0" in fleet.nodes[0]["status"]["allocatable"]


@pytest.mark.parametrize(
    "platform,prefix,rdma",
    [
        ("azure", "azure://", "nvidia.com/mlnxnics"),
        ("oci", "ocid1.", "nvidia.com/mlnxnics"),
        ("togetherai", "kubevirt://", "nvidia.com/mlnxnics"),
        ("nscale", "nscale://", "nscale.com/rdmashare"),
        ("mistral", "metal3://", "rdma/ib"),
    ],
)
def test_platform_identity(platform, prefix, rdma):
    node = build_fleet(FleetSpec(nodes=1, racks=1, platform=platform)).nodes[0]
    assert node["spec"]["providerID"].startswith(prefix)
    assert rdma in node["status"]["allocatable"]


def test_onprem_has_no_provider_id():
    node = build_fleet(FleetSpec(nodes=1, racks=1, platform="onprem")).nodes[0]
    assert "providerID" not in node["spec"]


def test_dra_fleet_has_slices_and_no_product_label():
    fleet = build_fleet(FleetSpec(nodes=2, racks=1, dra=True))
    node = fleet.nodes[0]
    assert "nvidia.com/gpu.product" not in node["metadata"]["labels"]
    assert node["metadata"]["labels"]["nvidia.com/gpu.present"] == "true"
    assert "nvidia.com/gpu" not in node["status"]["allocatable"]
    slice_ = fleet.resource_slices[0]
    assert slice_["spec"]["driver"] == "gpu.nvidia.com"
    assert slice_["spec"]["nodeName"] == "gpu-node-01"
    assert len(slice_["spec"]["devices"]) == 8
    assert slice_["spec"]["devices"][0]["attributes"]["productName"]["string"] == "NVIDIA H100 80GB HBM3"


def test_too_few_gpus_lowers_allocatable_only():
    faults = FaultModel((parse_fault_flag("too-few-gpus:node=gpu-node-02,allocatable=6"),))
    fleet = build_fleet(FleetSpec(nodes=2, racks=1), faults)
    node = fleet.nodes[1]
    assert node["status"]["capacity"]["nvidia.com/gpu"] == "8"
    assert node["status"]["allocatable"]["nvidia.com/gpu"] == "6"


def test_fault_naming_an_unknown_node_is_refused():
    faults = FaultModel((parse_fault_flag("degraded-nic:node=gpu-node-99,factor=0.5"),))
    with pytest.raises(ManifestError, match="gpu-node-99"):
        build_fleet(FleetSpec(nodes=2, racks=1), faults)


@pytest.mark.parametrize(
    "spec,field",
    [
        (FleetSpec(nodes=0), "--nodes"),
        (FleetSpec(nodes=2, racks=3), "--racks"),
        (FleetSpec(gpu="z900"), "--gpu"),
        (FleetSpec(platform="mars"), "--platform"),
    ],
)
def test_bad_shapes_name_the_flag(spec, field):
    with pytest.raises(UserError, match=field):
        build_fleet(spec)


def test_rack_sizes_build_uneven_racks_in_order():
    fleet = build_fleet(FleetSpec(nodes=64, rack_sizes=(20, 16, 16, 12)))
    by_rack: dict[str, list[str]] = {}
    for name, fact in fleet.facts.items():
        by_rack.setdefault(fact.rack, []).append(name)
    assert {r: len(v) for r, v in by_rack.items()} == {"rack-1": 20, "rack-2": 16, "rack-3": 16, "rack-4": 12}
    assert fleet.facts["gpu-node-20"].rack == "rack-1" and fleet.facts["gpu-node-21"].rack == "rack-2"
    assert fleet.facts["gpu-node-53"].rack == "rack-4"
    # the default is still the even split
    assert {f.rack for f in build_fleet(FleetSpec(nodes=64, racks=4)).facts.values() if f.index < 16} == {"rack-1"}


@pytest.mark.parametrize("sizes, message", [
    ((20, 16, 16), "adds up to 52 nodes, but the fleet has 64"),
    ((64, 0), "rackSizes[1]: must be a whole number of nodes >= 1, got 0"),
    ((32, 32.0), "rackSizes[1]"),
])
def test_bad_rack_sizes_say_what_is_allowed(sizes, message):
    with pytest.raises(UserError) as err:
        build_fleet(FleetSpec(nodes=64, rack_sizes=sizes))
    assert message in str(err.value)


def test_scenario_rack_sizes_are_checked_against_the_shape():
    from nvcre.sim.faults import parse_scenario

    shape = parse_scenario({"fleet": {"nodes": 64, "rackSizes": [20, 16, 16, 12]}}).fleet
    assert shape.rack_sizes == (20, 16, 16, 12)
    for fleet, words in (({"nodes": 60, "rackSizes": [20, 16, 16, 12]}, "add up to 64 nodes, not the fleet's 60"),
                         ({"nodes": 64, "racks": 2, "rackSizes": [20, 16, 16, 12]}, "racks is 2 but rackSizes names 4"),
                         ({"rackSizes": [20, 0]}, "fleet.rackSizes[1]: Input should be greater than or equal to 1"),
                         ({"rackSizes": []}, "fleet.rackSizes")):
        with pytest.raises(ManifestError) as err:
            parse_scenario({"fleet": fleet})
        assert words in str(err.value), (fleet, str(err.value))
