"""The cross check as one per-pair Job, and crashed screens measured pair by pair (issue 15).

With ``linkCheck: pairwise`` the Job that used to follow a failing all-node group holds the
same nodes, so it is the cross check itself: a link, rack or hidden bad node costs n
node-rounds after the screen instead of 2n. Crashed screens (a flip reads as a crash) are
measured with every other member of a per-pair Job instead of being re-run twice.
"""

from __future__ import annotations

from nvcre.planning.diagnose import DiagnosePolicy, GroupResult, Round, next_round, record, start
from nvcre.planning.diagnose_sim import Fleet, Scenario, cluster


def _scenario(n=32, rack=8, nodes=(), links=(), dead=()) -> Scenario:
    names, topo = cluster(n, rack)
    return Scenario(names, topo, bad_nodes={f"gpu-node-{i:04d}": 0.5 for i in nodes},
                    bad_links={frozenset((f"gpu-node-{a:04d}", f"gpu-node-{b:04d}")): 0.5 for a, b in links},
                    intermittent={f"gpu-node-{i:04d}": 1.0 for i in dead}, bw_sigma=0.0)


def _drive(sc: Scenario, policy: DiagnosePolicy | None = None, crash=lambda rnd, g: False):
    """Run to a verdict; ``crash(round, group)`` turns chosen results into crashes (a flip)."""
    fleet = Fleet(sc)
    state = start(sc.nodes, sc.topology, policy or DiagnosePolicy(threshold=sc.threshold))
    rounds = []
    while isinstance(step := next_round(state), Round):
        rounds.append(step)
        state = record(state, [GroupResult(g, False, None, "WorkloadFailed", "crash") if crash(step.number, g)
                               else fleet.run(g, tag) for g, tag in zip(step.groups, step.tags)])
    return step, rounds, state


def _after(rounds) -> int:
    return sum(len(g) for r in rounds[1:] for g in r.groups)


def test_a_cross_rack_link_is_named_from_the_cross_check_itself_for_n_node_rounds():
    sc = _scenario(n=64, rack=16, links=[(3, 40)])
    v, rounds, state = _drive(sc)
    assert [(x["a"], x["b"]) for x in v.bad_links] == [("gpu-node-0003", "gpu-node-0040")]
    assert not v.bad_nodes and not v.bad_racks
    assert [r.tags for r in rounds[1:]] == [["pairwise"]] and _after(rounds) == 64
    assert [t[2] for t in state.tests if len(t[1]) == 64] == ["cross-pairwise"]  # a cross check in the history
    # the collective first with crossCheckAfterFaults (its per-pair Job takes riders), as before
    v, rounds, _ = _drive(sc, DiagnosePolicy(threshold=sc.threshold, cross_check_after_faults=True))
    assert [r.tags for r in rounds[1:]] == [["cross"], ["pairwise"]] and _after(rounds) == 128
    assert [(x["a"], x["b"]) for x in v.bad_links] == [("gpu-node-0003", "gpu-node-0040")]


def test_crashed_screens_ride_the_cross_check_and_a_link_still_costs_n():
    # two screen pairs crash (flips), a link hides across racks: no re-run of the pairs, one Job
    sc = _scenario(n=64, rack=16, links=[(3, 40)])
    v, rounds, _ = _drive(sc, crash=lambda rnd, g: rnd == 1 and ("gpu-node-0010" in g or "gpu-node-0050" in g))
    assert [(x["a"], x["b"]) for x in v.bad_links] == [("gpu-node-0003", "gpu-node-0040")]
    assert not v.bad_nodes and not v.unresolved
    assert [r.tags for r in rounds[1:]] == [["pairwise"]] and _after(rounds) == 64
    assert {"gpu-node-0010", "gpu-node-0011", "gpu-node-0050", "gpu-node-0051"} <= set(v.good_nodes)


def test_the_cross_check_that_dies_once_runs_again_and_twice_settles_the_crashed_screens_alone():
    sc = _scenario(n=32, rack=8)
    died = []

    def crash(rnd, g):
        if rnd == 1:
            return "gpu-node-0004" in g
        if len(g) == 32 and len(died) < 2:  # the per-pair cross check dies twice
            died.append(rnd)
            return True
        return False

    v, rounds, _ = _drive(sc, crash=crash)
    assert v.passed and not v.bad_nodes and died == [2, 3]
    tags = [r.tags for r in rounds[1:]]
    assert tags[:2] == [["pairwise"], ["pairwise"]] and "retest" in tags[2]
    assert tags[-1] == ["pairwise"] and len(rounds[-1].groups[0]) == 32  # the cross check once they were noise


def test_a_dead_node_among_crashed_screens_is_named_from_the_cross_checks_pairs():
    # gpu-node-0004 fails every run: its screen crashes, and so does each of its transfers
    sc = _scenario(n=32, rack=8, dead=[4])
    v, rounds, _ = _drive(sc)
    assert [b["name"] for b in v.bad_nodes] == ["gpu-node-0004"]
    assert v.bad_nodes[0]["reason"] == "WorkloadFailed"
    assert "gpu-node-0005" in v.good_nodes and not v.unresolved
    assert [r.tags for r in rounds[1:]] == [["pairwise"]]


def test_crashed_screens_beside_a_slow_node_share_one_per_pair_job_not_two_reruns_each():
    # node 13 is slow (its screen reads slow); pairs 4-5 and 20-21 crash by flips: one per-pair
    # Job of the four crashed nodes beside 13's partner tests, 4 node-rounds, not 2 x (2 + 2)
    sc = _scenario(n=32, rack=8, nodes=[13])
    crash = lambda rnd, g: rnd == 1 and ("gpu-node-0004" in g or "gpu-node-0020" in g)  # noqa: E731
    v, rounds, _ = _drive(sc, crash=crash)
    assert [b["name"] for b in v.bad_nodes] == ["gpu-node-0013"] and not v.unresolved
    assert {"gpu-node-0004", "gpu-node-0005", "gpu-node-0020", "gpu-node-0021"} <= set(v.good_nodes)
    assert len(rounds) == 2 and sorted(rounds[1].tags) == ["pairwise", "solo", "solo"]
    job = next(g for g, t in zip(rounds[1].groups, rounds[1].tags) if t == "pairwise")
    assert sorted(job) == ["gpu-node-0004", "gpu-node-0005", "gpu-node-0020", "gpu-node-0021"]
    assert _after(rounds) == 4 + 4
    # one crashed pair: proven-good partners fill the Job to four nodes (each member measured thrice)
    v, rounds, _ = _drive(sc, crash=lambda rnd, g: rnd == 1 and "gpu-node-0004" in g)
    job = next(g for g, t in zip(rounds[1].groups, rounds[1].tags) if t == "pairwise")
    assert len(job) == 4 and {"gpu-node-0004", "gpu-node-0005"} <= set(job)
    assert [b["name"] for b in v.bad_nodes] == ["gpu-node-0013"] and "gpu-node-0004" in v.good_nodes


def test_a_dead_node_beside_a_slow_node_is_named_from_the_crashed_screens_job():
    sc = _scenario(n=32, rack=8, nodes=[13], dead=[20])
    v, rounds, _ = _drive(sc)
    assert sorted(b["name"] for b in v.bad_nodes) == ["gpu-node-0013", "gpu-node-0020"]
    assert "gpu-node-0021" in v.good_nodes and not v.unresolved
    assert len(rounds) <= 3


def test_the_crashed_screens_job_that_dies_twice_reruns_the_screens_as_before():
    sc = _scenario(n=32, rack=8, nodes=[13])

    def crash(rnd, g):
        return (rnd == 1 and "gpu-node-0004" in g) or (rnd in (2, 3) and "gpu-node-0004" in g and len(g) == 4)

    v, rounds, _ = _drive(sc, crash=crash)
    assert [b["name"] for b in v.bad_nodes] == ["gpu-node-0013"] and "gpu-node-0004" in v.good_nodes
    assert "pairwise" in rounds[2].tags and "retest" in rounds[3].tags
    assert any("died" in n for n in v.notes)
    # died once: run again, and its pairs clear them (no re-run of the screens)
    v, rounds, _ = _drive(sc, crash=lambda rnd, g: (rnd == 1 and "gpu-node-0004" in g)
                          or (rnd == 2 and "gpu-node-0004" in g and len(g) == 4))
    assert "gpu-node-0004" in v.good_nodes and "retest" not in [t for r in rounds for t in r.tags]


def test_a_slow_pair_whose_ends_both_pass_partners_once_does_not_wait_for_the_cross_check():
    # node 13 is slow (pair 12-13 reads slow); 13's partner test flips to a pass and 12's to a
    # crash. 12 then passes twice: the pair's slow figure still needs a bottleneck (a flip never
    # reads slow), so 13, cleared by one pass, is confirmed with a new partner and named; no
    # all-node check is needed to find it (n node-rounds)
    sc = _scenario(n=32, rack=8, nodes=[13])
    fleet = Fleet(sc)
    state = start(sc.nodes, sc.topology, DiagnosePolicy(threshold=sc.threshold))
    rounds = []
    while isinstance(step := next_round(state), Round):
        rounds.append(step)
        results = []
        for g, tag in zip(step.groups, step.tags):
            r = fleet.run(g, tag)
            if step.number == 2 and tag == "solo":  # both partner tests flip
                r = GroupResult(g, True, 400.0) if not r.passed else GroupResult(g, False, None, "WorkloadFailed",
                                                                                  "crash")
            results.append(r)
        state = record(state, results)
    v = step
    assert [b["name"] for b in v.bad_nodes] == ["gpu-node-0013"] and "gpu-node-0012" in v.good_nodes
    assert max(len(g) for r in rounds[1:] for g in r.groups) <= 4 and _after(rounds) <= 12
    assert any("is confirmed" in n for n in v.notes)
