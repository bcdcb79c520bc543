"""An intermittent node that fails some tests and passes others is probed and reported
Intermittent (docs/design/050, intermittent; issue 15 item 1): screen pairs that crashed once
and passed their re-run share one per-pair probe, a crash-only node with a pass of its own is
never named bad, and a node that crashed with every partner is named bad only after the probe
shows it fails every transfer."""

from __future__ import annotations

from nvcre.planning.diagnose import DiagnosePolicy, Round, next_round, record, start
from nvcre.planning.diagnose_sim import Fleet, GroupResult, Scenario, make_scenario, run_planner

NAMES = [f"gpu-node-{i:02d}" for i in range(1, 65)]
TOPOLOGY = {n: f"rack-{i // 16}" for i, n in enumerate(NAMES)}
CRASHED = [{"gpu-node-01", "gpu-node-02"}, {"gpu-node-03", "gpu-node-04"}]


def _drive(sc: Scenario, policy: DiagnosePolicy, forced=lambda number, group: None):
    fleet, rounds = Fleet(sc), []
    state = start(sc.nodes, sc.topology, policy)
    while isinstance(step := next_round(state), Round):
        rounds.append(step)
        state = record(state, [forced(step.number, set(g)) or fleet.run(g, tag)
                               for g, tag in zip(step.groups, step.tags)])
    return step, rounds


def _crash_then_pass(number: int, group: set):
    """Both screen pairs crash in round 1 and pass their re-run in round 2 (a flip would too)."""
    if group in CRASHED and number in (1, 2):
        return (GroupResult(sorted(group), False, None, "WorkloadFailed", "crash") if number == 1
                else GroupResult(sorted(group), True, 400.0, ""))
    return None


def test_pairs_that_crashed_once_and_passed_share_one_probe_and_the_intermittent_member_is_named():
    # before: each pair ran once more, passed (two passes against a crash) and was cleared as flaky.
    # The controller's setting (cross check beside the follow-ups): the re-runs, then one probe
    sc = Scenario(NAMES, TOPOLOGY, intermittent={"gpu-node-02": 0.5}, seed=3)
    v, rounds = _drive(sc, DiagnosePolicy(threshold=sc.threshold, cross_check_after_faults=True), _crash_then_pass)
    probe = rounds[2]
    assert probe.tags == ["pairwise"]  # one Job for both pairs, the proven-good partners held once
    assert set().union(*CRASHED) <= set(probe.groups[0]) and len(probe.groups[0]) == 4 + 8
    assert [x["name"] for x in v.intermittent] == ["gpu-node-02"]
    assert 2 <= v.intermittent[0]["fails"] < v.intermittent[0]["tests"]
    assert not v.bad_nodes and not v.unresolved
    assert {"gpu-node-01", "gpu-node-03", "gpu-node-04"} <= set(v.good_nodes)  # never blamed


def test_crash_only_screens_riding_the_cross_check_in_pairs_name_the_intermittent_member():
    # the default without crossCheckAfterFaults: the crashed screens ride round 2's per-pair Job
    # over every node, whose transfers single the intermittent member out (no re-run, no probe)
    sc = Scenario(NAMES, TOPOLOGY, intermittent={"gpu-node-02": 0.5}, seed=3)
    v, rounds = _drive(sc, DiagnosePolicy(threshold=sc.threshold), _crash_then_pass)
    assert [r.tags for r in rounds[1:]] == [["pairwise"]] and len(rounds[1].groups[0]) == len(NAMES)
    assert [x["name"] for x in v.intermittent] == ["gpu-node-02"]
    assert 2 <= v.intermittent[0]["fails"] < v.intermittent[0]["tests"]
    assert not v.bad_nodes and not v.unresolved


def test_a_shared_probe_of_flipped_pairs_clears_them_all():
    sc = Scenario(NAMES, TOPOLOGY, seed=3)
    for policy in (DiagnosePolicy(threshold=sc.threshold, cross_check_after_faults=True), DiagnosePolicy(threshold=sc.threshold)):
        v, rounds = _drive(sc, policy, _crash_then_pass)
        assert rounds[-1 if not policy.cross_check_after_faults else 2].tags == ["pairwise"]
        assert v.passed and not v.intermittent and not v.unresolved


def test_without_the_per_pair_check_the_pairs_run_once_more_as_before():
    sc = Scenario(NAMES, TOPOLOGY, seed=3)
    v, rounds = _drive(sc, DiagnosePolicy(threshold=sc.threshold, link_check="search"), _crash_then_pass)
    assert rounds[2].tags == ["retest", "retest"] and v.passed


def test_a_node_that_crashes_with_every_partner_is_named_bad_after_failing_every_transfer():
    sc = Scenario(NAMES, TOPOLOGY, intermittent={"gpu-node-13": 1.0}, seed=1)  # every run of it dies
    v, rounds = _drive(sc, DiagnosePolicy(threshold=sc.threshold))
    assert [b["name"] for b in v.bad_nodes] == ["gpu-node-13"] and not v.intermittent
    assert [r.tags for r in rounds[1:]][-1] == ["pairwise"]  # the third look: the per-pair probe


def test_bench_runs_once_named_bad_are_reported_intermittent():
    # bench/diagnose.py's intermittent class: runs in which the node crashed in every test it ran
    # (screen, re-run or pair split, partner tests) were named bad on crashes alone; with a pass of
    # its own among them (search policy, no probe) or with the per-pair probe, it is Intermittent
    for n, seed, policy in ((232, 7, DiagnosePolicy), (232, 0, lambda t: DiagnosePolicy(threshold=t, max_concurrent=3)),
                            (64, 3, lambda t: DiagnosePolicy(threshold=t, link_check="search"))):
        sc = make_scenario(n, "intermittent", seed, 0.0)
        v = run_planner(sc, policy(threshold=sc.threshold) if policy is DiagnosePolicy else policy(sc.threshold),
                        roundtrip=True).verdict
        (flaky,) = sc.intermittent
        assert [x["name"] for x in v.intermittent] == [flaky] and not v.bad_nodes, (n, seed, v.bad_nodes)
