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
