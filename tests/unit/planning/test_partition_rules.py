"""Partition rules per testScale and the launch scheduler."""

from __future__ import annotations

import pytest

from nvcre.planning.partition import (
    Group,
    PartitionError,
    next_batch,
    partition_full_scale,
    partition_intra_node,
    partition_intra_rack,
    partition_simple,
    partition_topology,
    plan_groups,
)

KEY = "nvidia.com/gpu.clique"


def nodes(n: int, prefix: str = "n") -> list[str]:
    return [f"{prefix}{i}" for i in range(n)]


def racks(*sizes: int) -> tuple[list[str], dict[str, dict[str, str]]]:
    names, labels = [], {}
    for r, size in enumerate(sizes, start=1):
        for i in range(size):
            name = f"r{r}-{i}"
            names.append(name)
            labels[name] = {KEY: f"rack-{r}"}
    return names, labels


def test_intra_node_is_one_sorted_group_per_node():
    p = partition_intra_node(["b", "a", "c", "a"])
    assert [g.nodes for g in p.groups] == [("a",), ("b",), ("c",)]
    assert [g.name for g in p.groups] == ["group-0", "group-1", "group-2"]


def test_no_nodes_is_an_error():
    with pytest.raises(PartitionError, match="no nodes"):
        partition_intra_node([])


def test_intra_rack_groups_by_clique_largest_first_and_excludes_unlabelled():
    names, labels = racks(2, 3)
    names.append("loose")
    p = partition_intra_rack(names, labels, KEY)
    assert [g.domains for g in p.groups] == [("rack-2",), ("rack-1",)]
    assert p.groups[0].nodes == ("r2-0", "r2-1", "r2-2")
    assert [(e.node, e.reason) for e in p.excluded] == [("loose", f"missing topology label {KEY}")]


def test_intra_rack_strict_rejects_a_missing_label_with_the_reference_message():
    names, labels = racks(2)
    with pytest.raises(PartitionError, match='node "x" missing topology label'):
        partition_intra_rack(names + ["x"], labels, KEY, strict=True)


def test_intra_rack_undersized_domain_is_excluded_with_a_reason():
    names, labels = racks(3, 1)
    p = partition_intra_rack(names, labels, KEY, min_group_size=2)
    assert len(p.groups) == 1
    assert p.excluded[0].node == "r2-0" and "at least 2" in p.excluded[0].reason


def test_full_scale_without_size_is_one_group():
    p = partition_full_scale(nodes(5))
    assert len(p.groups) == 1 and len(p.groups[0].nodes) == 5


def test_simple_chunks_borrow_for_the_overflow_group():
    # the reference's example: 10 nodes, 4 per job
    names = [f"n{i:02d}" for i in range(10)]
    p = partition_simple(names, 4)
    assert [g.name for g in p.groups] == ["group-0", "group-1", "group-2-overflow"]
    assert p.groups[2].nodes == ("n06", "n07", "n08", "n09")
    assert p.groups[2].overflow
    assert p.covered_nodes == set(names)


def test_simple_exact_multiple_has_no_overflow():
    p = partition_simple(nodes(8), 4)
    assert [g.overflow for g in p.groups] == [False, False]


@pytest.mark.parametrize("npj", [0, -3])
def test_size_below_one_is_rejected_for_chunking(npj):
    with pytest.raises(PartitionError, match="nodesPerJob must be >= 1"):
        partition_simple(nodes(4), npj)


def test_size_larger_than_the_cluster_is_an_error():
    with pytest.raises(PartitionError, match="larger than"):
        partition_full_scale(nodes(3), 4)


def test_topology_packing_with_overflow_matches_the_reference_example():
    names, labels = racks(4, 4, 2)
    p = partition_topology(names, labels, KEY, 4)
    assert [g.name for g in p.groups] == ["group-0", "group-1", "group-2-overflow"]
    assert p.groups[0].domains == ("rack-1",) and p.groups[1].domains == ("rack-2",)
    over = p.groups[2]
    assert over.nodes == ("r1-0", "r1-1", "r3-0", "r3-1")
    assert over.domains == ("rack-1", "rack-3")
    assert over.domain_node_counts == {"rack-3": 2, "rack-1": 2}
    assert p.covered_nodes == set(names)


def test_topology_packing_spans_domains_when_a_job_is_bigger_than_a_rack():
    names, labels = racks(3, 3, 3, 3)
    p = partition_topology(names, labels, KEY, 6)
    assert [len(g.nodes) for g in p.groups] == [6, 6]
    assert all(len(g.domains) == 2 for g in p.groups)


def test_unpinned_is_one_group_with_a_size_and_no_nodes():
    p = plan_groups("full-scale", nodes(6), nodes_per_job=2, placement="Unpinned")
    assert p.placement == "Unpinned"
    assert p.groups == [Group(name="group-0", nodes=(), size=2)]


@pytest.mark.parametrize("scale", ["diagnose", "intra-rack"])
def test_unpinned_rejects_diagnose_and_strict_domains(scale):
    with pytest.raises(PartitionError, match="Unpinned"):
        plan_groups(scale, nodes(6), nodes_per_job=2, placement="Unpinned")


def test_unpinned_needs_an_explicit_size():
    with pytest.raises(PartitionError, match="explicit nodesPerJob"):
        plan_groups("full-scale", nodes(6), placement="Unpinned")


def test_plan_groups_dispatches_and_names_bad_input():
    names, labels = racks(2, 2)
    assert len(plan_groups("intra-node", names).groups) == 4
    assert len(plan_groups("intra-rack", names, labels).groups) == 2
    with pytest.raises(PartitionError, match="testScale must be one of"):
        plan_groups("pairwise", names)
    with pytest.raises(PartitionError, match="round by round"):
        plan_groups("diagnose", names)
    with pytest.raises(PartitionError, match="placement must be"):
        plan_groups("full-scale", names, placement="Floating")


def test_groups_are_deterministic_whatever_the_input_order():
    names, labels = racks(4, 4, 2)
    a = partition_topology(names, labels, KEY, 4)
    b = partition_topology(list(reversed(names)), labels, KEY, 4)
    assert a == b


def test_next_batch_honours_max_concurrent_and_node_overlap():
    groups = partition_simple([f"n{i:02d}" for i in range(10)], 4).groups
    assert next_batch(groups, running=[], done=[], max_concurrent=0) == ["group-0", "group-1"]
    # the overflow group borrows n06/n07 from group-1, so it waits for group-1
    assert next_batch(groups, running=["group-1"], done=["group-0"]) == []
    assert next_batch(groups, running=[], done=["group-0", "group-1"]) == ["group-2-overflow"]
    assert next_batch(groups, running=[], done=[], max_concurrent=1) == ["group-0"]
    assert next_batch(groups, running=["group-0"], done=[], max_concurrent=1) == []


def test_next_batch_launches_unpinned_groups():
    g = [Group(name="group-0", nodes=(), size=3)]
    assert next_batch(g, running=[], done=[]) == ["group-0"]
