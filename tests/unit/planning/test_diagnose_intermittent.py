"""Intermittent nodes beside other faults (issue 15, item 4), on the planner's own simulator.

The scenario is the e2e's (tests/e2e/test_diagnose_pairwise.py): 64 nodes in racks of 20, 16,
16 and 12, a NIC at half rate (node 21), a slow link between racks (05-40), a node that crashes
half of its runs (58), 1 % flips, the controller's policy (cross check after faults, per-pair
check). Before the fix the intermittent node's screen pair was re-run together until it crashed
three times and then reported unresolved (or the node was cleared), and the cross check waited
for that: the link came 7 rounds after the screen. Now the node is named Intermittent and the
link found within the e2e's round budget, on every seed here."""

from __future__ import annotations

import pytest

from nvcre.planning.diagnose import DiagnosePolicy, Round, next_round, record, start
from nvcre.planning.diagnose_sim import Fleet, Scenario, run_planner

NAMES = [f"gpu-node-{i:02d}" for i in range(1, 65)]
RACKS = [20, 16, 16, 12]
BUDGET = 4  # the screen and 3 rounds, as the e2e asserts


def _topology() -> dict[str, str]:
    topo, at = {}, 0
    for r, size in enumerate(RACKS):
        for _ in range(size):
            topo[NAMES[at]] = f"rack-{r + 1}"
            at += 1
    return topo


def _scenario(seed: int, flip: float = 0.01) -> Scenario:
    return Scenario(NAMES, _topology(), bad_nodes={"gpu-node-21": 0.5},
                    bad_links={frozenset(("gpu-node-05", "gpu-node-40")): 0.3},
                    intermittent={"gpu-node-58": 0.5}, flip=flip, seed=seed, kind="e2e")


def _controller_policy(sc: Scenario) -> DiagnosePolicy:
    return DiagnosePolicy(threshold=sc.threshold, cross_check_after_faults=True, link_check="pairwise")


@pytest.mark.parametrize("seed", range(24))
def test_node_link_and_intermittent_node_are_named_within_the_budget(seed):
    st = run_planner(_scenario(seed), _controller_policy(_scenario(seed)), roundtrip=True)
    v = st.verdict
    got = (v.rounds, [b["name"] for b in v.bad_nodes], [x["name"] for x in v.intermittent],
           [(x["a"], x["b"]) for x in v.bad_links], [u["message"] for u in v.unresolved])
    assert [b["name"] for b in v.bad_nodes] == ["gpu-node-21"], got
    assert [x["name"] for x in v.intermittent] == ["gpu-node-58"], got
    entry = v.intermittent[0]
    assert entry["reason"] == "Intermittent" and 2 <= entry["fails"] < entry["tests"], got
    assert [tuple(sorted((x["a"], x["b"]))) for x in v.bad_links] == [("gpu-node-05", "gpu-node-40")], got
    assert not v.bad_racks and not v.unresolved, got
    assert v.rounds <= BUDGET, got
    # every other node cleared
    assert set(v.good_nodes) == set(NAMES) - {"gpu-node-21", "gpu-node-58"}, got


@pytest.mark.parametrize("seed", range(40))
def test_an_intermittent_node_is_never_cleared_nor_blamed_on_its_partners(seed):
    # the default policy (no cross check after faults): a crash-only screen pair that disagrees
    # with itself is probed with proven-good partners in one per-pair Job
    sc = _scenario(seed)
    sc.bad_nodes, sc.bad_links = {}, {}
    fleet = Fleet(sc)
    state = start(sc.nodes, sc.topology, DiagnosePolicy(threshold=sc.threshold))
    while isinstance(step := next_round(state), Round):
        state = record(state, [fleet.run(g, tag) for g, tag in zip(step.groups, step.tags)])
    v = step
    flaky = state.names.index("gpu-node-58")
    crashed = sum(1 for t in state.tests if flaky in t[1] and t[3] == "F")
    passed = sum(1 for t in state.tests if flaky in t[1] and t[3] == "P")
    assert not v.unresolved, v.unresolved
    if v.bad_nodes:  # never a partner; the node itself only when it failed every test it was in
        assert [b["name"] for b in v.bad_nodes] == ["gpu-node-58"] and crashed >= 3 and not passed, v.bad_nodes
    elif crashed >= 2:  # more than one flip explains: it is reported, never cleared
        assert [x["name"] for x in v.intermittent] == ["gpu-node-58"], (crashed, v.notes)
    else:  # a flip crashes a whole Job: only failed transfers of its own in a per-pair Job single it out
        assert [x["name"] for x in v.intermittent] in ([], ["gpu-node-58"]), v.intermittent
        for x in v.intermittent:
            assert 2 <= x["fails"] < x["tests"] and any(e["kind"] == "cross-pairwise" for e in x["evidence"]), x
