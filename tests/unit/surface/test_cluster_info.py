"""`cluster info` summarises real Node objects the way nvcre's discovery reads them."""

from __future__ import annotations

import yaml

from nvcre.cli.cluster import cluster_summary, render_table


def _nodes(fixtures_dir, name):
    docs = [d for d in yaml.safe_load_all((fixtures_dir / "nodes" / name).read_text()) if d]
    return [d for d in docs if d.get("kind") == "Node"]


def test_gb300_fixture(fixtures_dir):
    summary = cluster_summary(_nodes(fixtures_dir, "nvcre-uat-aws-gb300-nodes.yaml"))
    assert summary["platform"] == "aws"
    assert summary["gpuArchitecture"] == "gb300"
    assert summary["readyGPUNodes"] == 2 and summary["gpus"] == 8
    assert "nvidia.com/gpu.clique" in summary["topology"]
    assert summary["mnnvlDefault"] is True
    text = render_table(summary)
    assert "Platform:  aws" in text and "2 ready of 2" in text


def test_cordoned_node_is_not_ready(fixtures_dir):
    summary = cluster_summary(_nodes(fixtures_dir, "nvcre-uat-aws-h100-cordoned-node.yaml"))
    assert summary["gpuNodes"] == 1 and summary["readyGPUNodes"] == 0


def test_dra_nodes_count_gpus_from_resource_slices():
    node = {
        "metadata": {"name": "dra-0", "labels": {"nvidia.com/gpu.present": "true"}},
        "spec": {"providerID": "nscale://abc"},
        "status": {"allocatable": {"cpu": "64"}, "conditions": [{"type": "Ready", "status": "True"}]},
    }
    gpu = {"type": {"string": "gpu"}, "productName": {"string": "NVIDIA GB300"}}
    devices = [{"name": f"gpu-{i}", "attributes": gpu} for i in range(4)]
    # the driver publishes MIG partitions in the same pool: they are not GPUs of their own
    devices += [{"name": f"gpu-0-mig-1g-{i}", "attributes": {"type": {"string": "mig"}, "productName": {"string": "NVIDIA GB300"}}}
                for i in range(7)]
    slices = [{"spec": {"driver": "gpu.nvidia.com", "nodeName": "dra-0", "devices": devices}},
              {"spec": {"driver": "compute-domain.nvidia.com", "nodeName": "dra-0", "devices": [{"name": "channel-0"}]}}]
    summary = cluster_summary([node], slices)
    assert summary["gpus"] == 4
    assert summary["draNodes"] == ["dra-0"]
    assert summary["gpuArchitecture"] == "gb300"
    assert "counted from ResourceSlices" in render_table(summary)


def test_no_gpu_nodes_warns_nothing_and_counts_zero():
    plain = {"metadata": {"name": "cpu-0", "labels": {}}, "status": {"conditions": [{"type": "Ready", "status": "True"}]}}
    summary = cluster_summary([plain])
    assert summary["gpuNodes"] == 0 and summary["gpus"] == 0 and summary["platform"] == "none"


def _gpu_node(name, labels):
    return {
        "metadata": {"name": name, "labels": {"nvidia.com/gpu.present": "true", **labels}},
        "spec": {"providerID": "aws:///us-east-1a/i-0"},
        "status": {"allocatable": {"nvidia.com/gpu": "8"}, "conditions": [{"type": "Ready", "status": "True"}]},
    }


def test_topology_key_groups_by_that_label_alone():
    nodes = [
        _gpu_node("n1", {"example.com/pod": "p1", "nvidia.com/gpu.clique": "c.1"}),
        _gpu_node("n2", {"example.com/pod": "p1", "nvidia.com/gpu.clique": "c.1"}),
        _gpu_node("n3", {"example.com/pod": "p2", "nvidia.com/gpu.clique": "c.2"}),
        _gpu_node("n4", {"nvidia.com/gpu.clique": "c.2"}),
    ]
    default = cluster_summary(nodes)
    assert "nvidia.com/gpu.clique" in default["topology"] and default["topologyKey"] is None
    summary = cluster_summary(nodes, topology_key="example.com/pod")
    assert list(summary["topology"]) == ["example.com/pod"]  # the clique label is not used any more
    assert summary["topology"]["example.com/pod"] == {"p1": 2, "p2": 1}
    assert summary["topologyDomains"] == [
        {"name": "p1", "nodes": ["n1", "n2"], "nodeCount": 2},
        {"name": "p2", "nodes": ["n3"], "nodeCount": 1},
    ]
    assert any("1 GPU node without label example.com/pod: n4" in w for w in summary["warnings"])
    text = render_table(summary)
    assert "example.com/pod: 2 domains" in text and "p1: 2 nodes" in text and "p2: 1 node\n" in text


def test_topology_key_nobody_carries():
    summary = cluster_summary([_gpu_node("n1", {})], topology_key="example.com/rack")
    assert summary["topologyDomains"] == []
    assert "no GPU node carries the label example.com/rack" in render_table(summary)


def test_topology_key_must_be_a_label_key():
    import pytest

    from nvcre.cli.cluster import check_topology_key
    from nvcre.errors import UserError

    assert check_topology_key("topology.kubernetes.io/rack") == "topology.kubernetes.io/rack"
    for bad in ("Bad_Prefix/rack", "rack name", "-rack", "x" * 64, "/rack", ""):
        with pytest.raises(UserError) as err:
            check_topology_key(bad)
        assert err.value.message.startswith("--topology-key: ") and err.value.exit_code == 2
