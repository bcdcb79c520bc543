"""A failed or absent measurement is crash (or hang) evidence, never a slow magnitude.

Regression for issue 15's audit: a pairwise transfer that failed read 0.0 and was decoded
as a slow pair, so every node of a three-node set was named bad at p = 0.
"""

from __future__ import annotations

from nvcre.planning.diagnose import DiagnosePolicy, GroupResult, Round, next_round, record, start
from nvcre.planning.diagnose_cases import decode_pairs
from nvcre.planning.diagnose_sim import Scenario, run_planner

NODES = ["gpu-node-000", "gpu-node-001", "gpu-node-002"]
TOPO = {"gpu-node-000": "rack-00", "gpu-node-001": "rack-00", "gpu-node-002": "rack-01"}


def audit_policy(max_rounds: int, after_faults: bool = False) -> DiagnosePolicy:
    return DiagnosePolicy(min_group_size=1, max_screen_size=2, cross_check="full",
                          cross_check_after_faults=after_faults, threshold=360.0, marginal_band=0.0, max_rounds=max_rounds, link_check="pairwise")


def test_audit_counterexample_convicts_no_healthy_node():
    # rack-00's uplink at half rate, gpu-node-000 crashing a quarter of its runs: the cross check
    # crashed and the pairwise Job's (000, 001) transfer failed; 001 is healthy and must stay so
    sc = Scenario(NODES, TOPO, bad_racks={"rack-00": 0.5}, intermittent={"gpu-node-000": 0.25}, flip=0.0, seed=0)
    for max_rounds in (3, 60):
        v = run_planner(sc, audit_policy(max_rounds), roundtrip=True).verdict
        named = {b["name"]: b for b in v.bad_nodes}
        assert "gpu-node-001" not in named, v.bad_nodes
        # 002 alone in rack-01 reads like the rack boundary: named only with that alternative
        assert all(x == "gpu-node-000" or b.get("alternative") == "uplink of rack-01" for x, b in named.items())
        for b in v.bad_nodes:
            assert "at 0.0" not in b["message"]


def _state_at_pairwise(after_faults: bool):
    """A 3-node diagnosis driven to its pairwise round: screens pass, then the cross check runs
    as one per-pair Job, or (cross check after faults) as a collective that crashes first."""
    state = start(NODES, TOPO, audit_policy(60, after_faults))
    step = next_round(state)
    state = record(state, [GroupResult(g, True, 395.0) for g in step.groups])
    step = next_round(state)
    if after_faults:
        assert step.tags == ["cross"]
        state = record(state, [GroupResult(step.groups[0], False, None, "WorkloadFailed", "crash")])
        step = next_round(state)
    assert step.tags == ["pairwise"] and sorted(step.groups[0]) == NODES
    return state, step


def test_failed_transfers_read_as_zero_or_none_convict_nobody():
    for failed, after_faults in [(f, a) for f in (0.0, None, float("nan"), -1.0) for a in (False, True)]:
        state, step = _state_at_pairwise(after_faults)
        pairs = {("gpu-node-000", "gpu-node-001"): failed, ("gpu-node-000", "gpu-node-002"): 395.0,
                 ("gpu-node-001", "gpu-node-002"): 396.0}
        state = record(state, [GroupResult(step.groups[0], False, 0.0, "WorkloadFailed", "slow", pairs=pairs)])
        assert state.tests[-1][4] is None  # stored as a crash: no magnitude
        while isinstance(step := next_round(state), Round):
            state = record(state, [GroupResult(g, True, 395.0) for g in step.groups])
        assert not step.bad_nodes and not step.bad_racks and not step.bad_links, (failed, step.to_dict())


def test_a_node_whose_transfers_fail_with_some_partners_is_intermittent_not_its_partners():
    members = list(range(8))
    failed = [(3, j) if 3 < j else (j, 3) for j in (0, 5, 6)]
    out = decode_pairs([], members, [0] * 8, False, failed=failed)
    assert out["nodes"] == [] and [x[0] for x in out["intermittent"]] == [3]
    assert out["links"] == [] and out["slow"] == 0


def test_a_slow_node_is_named_from_its_measured_pairs_only():
    # node 2 slow with every partner that was measured; its transfer with 0 failed
    slow = [(1, 2, 200.0), (2, 3, 201.0), (2, 4, 199.0)]
    out = decode_pairs(slow, [0, 1, 2, 3, 4], [0] * 5, False, failed=[(0, 2)])
    assert out["nodes"] == [2]
    # zero-valued pairs are not slow pairs: nobody is bad for a failed transfer alone
    out = decode_pairs([], [0, 1, 2], [0] * 3, False, failed=[(0, 1)])
    assert out["nodes"] == [] and out["racks"] == [] and out["links"] == []


def test_record_keeps_no_magnitude_for_a_crash_or_a_zero_figure():
    state = start(NODES, TOPO, DiagnosePolicy(threshold=360.0, min_group_size=1))
    step = next_round(state)
    results = [GroupResult(step.groups[0], False, 0.0, "", "slow"), GroupResult(step.groups[1], False, 180.0, "x", "crash")]
    state = record(state, results)
    assert [t[4] for t in state.tests] == [None, None]
    assert [t[3] for t in state.tests] == ["F", "F"]
