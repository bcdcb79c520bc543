"""One rule picks the label that tells a fleet's racks apart, for diagnose and the report."""

from __future__ import annotations

from nvcre.discovery.racks import rack_label
from nvcre.report.build import node_domain_map

L1, L2, L3 = (f"topology.k8s.aws/network-node-layer-{i}" for i in (1, 2, 3))


def aws_fleet(racks: int, per_rack: int) -> dict[str, dict[str, str]]:
    return {
        f"n{r}{i}": {L1: "nn-spine", L2: "nn-agg", L3: f"nn-rack{r}"}
        for r in range(racks) for i in range(per_rack)
    }


def test_the_lowest_network_layer_that_splits_the_fleet_wins():
    labels = aws_fleet(4, 4)
    assert rack_label(labels, labels) == L3
    assert rack_label(labels, labels, "nvidia.com/gpu.clique") == L3  # preferred but absent


def test_a_preferred_label_that_splits_wins_over_the_list():
    labels = aws_fleet(2, 4)
    for i, name in enumerate(sorted(labels)):
        labels[name]["nvidia.com/gpu.clique"] = f"clique-{i % 4}"
    assert rack_label(labels, labels, "nvidia.com/gpu.clique") == "nvidia.com/gpu.clique"


def test_labels_that_split_nothing_or_everything_are_not_racks():
    one_rack = aws_fleet(1, 4)
    assert rack_label(one_rack, one_rack, require_split=True) is None
    assert rack_label(one_rack, one_rack) == L3  # still its one rack for the node map
    per_node = {f"n{i}": {"topology.kubernetes.io/rack": f"r{i}"} for i in range(4)}
    assert rack_label(per_node, per_node, require_split=True) is None
    assert rack_label({"a": {}}, {"a": {}}) is None


def test_the_report_node_map_groups_a_simulated_aws_fleet_by_rack():
    labels = aws_fleet(2, 2)
    nodes = [{"metadata": {"name": n, "labels": lab}} for n, lab in labels.items()]
    assert node_domain_map(nodes) == {"n00": "nn-rack0", "n01": "nn-rack0", "n10": "nn-rack1", "n11": "nn-rack1"}
