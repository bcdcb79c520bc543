"""The fault-scenario simulator: fault semantics, noise, determinism."""

from __future__ import annotations

import pytest

from nvcre.planning.diagnose_sim import KINDS, Fleet, Scenario, cluster, make_scenario


def test_cluster_layout_puts_consecutive_nodes_in_racks():
    names, topo = cluster(10, 4)
    assert names[0] == "gpu-node-0000" and topo["gpu-node-0009"] == "rack-002"


def test_fault_semantics_node_link_and_rack():
    names, topo = cluster(8, 4)
    sc = Scenario(names, topo, bad_nodes={names[0]: 0.5}, bad_links={frozenset((names[1], names[2])): 0.6},
                  bad_racks={"rack-001": 0.7})
    assert sc.factor([names[0], names[3]]) == 0.5           # a bad node fails any group
    assert sc.factor([names[1], names[3]]) == 1.0           # one end of a link is fine
    assert sc.factor([names[1], names[2]]) == 0.6           # both ends fail together
    assert sc.factor([names[4], names[5]]) == 1.0           # inside the bad rack is fine
    assert sc.factor([names[3], names[4]]) == 0.7           # crossing its boundary is not


@pytest.mark.parametrize("kind", KINDS)
def test_scenarios_are_seeded(kind):
    a, b = make_scenario(64, kind, 5), make_scenario(64, kind, 5)
    assert (a.bad_nodes, a.bad_links, a.bad_racks) == (b.bad_nodes, b.bad_links, b.bad_racks)


def test_scenario_kinds_inject_what_they_say():
    assert 2 <= len(make_scenario(232, "nodes", 1).bad_nodes) <= 5
    link = next(iter(make_scenario(232, "link-cross", 1).bad_links))
    sc = make_scenario(232, "link-cross", 1)
    a, b = sorted(link)
    assert sc.topology[a] != sc.topology[b]
    with pytest.raises(ValueError):
        make_scenario(16, "meteor", 1)


def test_noise_flips_at_about_the_configured_rate():
    names, topo = cluster(16, 4)
    sc = Scenario(names, topo, flip=0.05, bw_sigma=0.0)
    fleet = Fleet(sc, seed=1)
    fails = sum(not fleet.run(names[:4]).passed for _ in range(4000))
    assert 140 < fails < 260
    assert fleet.tests == 4000 and fleet.node_rounds == 16000
