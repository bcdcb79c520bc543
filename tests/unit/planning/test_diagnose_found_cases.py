"""Cases a random search (multi-fault scenarios, every policy option, JSON round trip before
every round) found against the planner, kept as fixed regressions: at p = 0 no healthy node
is named bad and nothing raises. Each line says what went wrong before the fix."""

from __future__ import annotations

import pytest

from nvcre.planning.diagnose import DiagnosePolicy
from nvcre.planning.diagnose_sim import Scenario, make_scenario, run_planner
from nvcre.planning.diagnose_sim import observably_bad as explains


def _scenario(racks: list[int] | None, n: int, bad: dict, links: dict, uplinks: dict = {},  # noqa: B006
              intermittent: dict = {}, seed: int = 0, mnnvl: bool = False) -> Scenario:  # noqa: B006
    names = [f"gpu-node-{i:03d}" for i in range(n)]
    topo = {}
    if racks:
        at = 0
        for r, size in enumerate(racks):
            for _ in range(size):
                topo[names[at]] = f"rack-{r:02d}"
                at += 1
    sc = Scenario(names, topo, flip=0.0, seed=seed, mnnvl=mnnvl)
    sc.bad_nodes = {names[i]: f for i, f in bad.items()}
    sc.bad_links = {frozenset((names[a], names[b])): f for (a, b), f in links.items()}
    sc.bad_racks = {f"rack-{r:02d}": f for r, f in uplinks.items()}
    sc.intermittent = {names[i]: q for i, q in intermittent.items()}
    return sc


CASES = {
    # node 2 failed only beside node 0 (a link) and passed beside node 1: it was named bad
    "same-partner-failures-are-a-link": (
        _scenario([2, 2], 4, {3: 0.365}, {(0, 2): 0.770}, seed=5869),
        dict(max_screen_size=32, cross_check_after_faults=False, max_rounds=21, link_check="search")),
    # node 3 read 0.42 beside node 0 and 0.60 beside node 1 (both NIC-slow, passing inside
    # their rack over NVLink): two readings at different magnitudes counted as two observations
    "different-magnitudes-are-one-observation": (
        _scenario([3, 2, 1], 6, {1: 0.603, 0: 0.429}, {(5, 0): 0.540, (1, 2): 0.771}, intermittent={5: 0.552},
                  seed=7230, mnnvl=True),
        dict(min_group_size=3, max_concurrent=7, max_screen_size=3, cross_check="representatives",
             cross_check_after_faults=True, marginal_band=0.1, max_rounds=4)),
    # node 0 (bad, and one end of a named link) was cleared as the link's end and then served
    # as a "proven-good" partner: node 5 was named bad beside it
    "partners-must-have-passed": (
        _scenario([1] * 8, 8, {4: 0.543, 6: 0.377, 0: 0.702}, {(3, 0): 0.349, (5, 2): 0.703},
                  intermittent={1: 0.498}, seed=8324),
        dict(max_screen_size=3, cross_check="none", cross_check_after_faults=False, max_rounds=7)),
    # the pairwise Job read the already named link 4-5 as one more slow partner of each end: both
    # were "slow with every partner" although rack-02's uplink explains the rest
    "a-named-link-is-no-partner-evidence": (
        _scenario([2, 1, 3], 6, {0: 0.736}, {(5, 4): 0.641, (5, 2): 0.570}, {2: 0.506}, seed=5011),
        dict(min_group_size=1, max_concurrent=1, max_screen_size=32, cross_check_after_faults=True,
             marginal_band=0.0, max_rounds=21)),
    # rack-02's uplink plus a link inside it: nodes 5 and 7 were named bad (slow with every
    # partner) although their pair inside the rack read far slower than their crossing pairs
    "an-uplink-is-not-two-bad-nodes": (
        _scenario([2, 3, 3], 8, {4: 0.795, 6: 0.598, 3: 0.723}, {(7, 5): 0.370, (5, 3): 0.345}, {2: 0.549},
                  intermittent={5: 0.363}, seed=4610),
        dict(min_group_size=1, marginal_band=0.0, max_rounds=21, cross_check_after_faults=True)),
    # MNNVL, single-node tests: node 4 passed alone, then read slow with three NIC-slow partners
    # in the pairwise Job and was named bad on that Job alone
    "a-pass-then-only-slow-partners-is-confirmed": (
        _scenario([1, 2, 2], 5, {0: 0.728, 2: 0.431, 1: 0.569}, {(1, 3): 0.530}, intermittent={3: 0.621},
                  seed=7324, mnnvl=True),
        dict(min_group_size=1, max_screen_size=32, cross_check_after_faults=True, marginal_band=0.1,
             max_rounds=21)),
    # representatives with one free rack: a one-node "rack probe" became a one-member suspect
    # pair and the planner raised IndexError
    "no-one-node-rack-probe": (
        _scenario([3, 3, 1], 7, {}, {}, intermittent={6: 0.704}, seed=5328, mnnvl=True),
        dict(max_concurrent=3, cross_check="representatives", cross_check_after_faults=False,
             marginal_band=0.1, max_rounds=13)),
    # a crash beside an intermittent partner hid that every measured failure of node 6 left rack-02,
    # whose uplink explains them
    "seed7-18855": (
        _scenario([3, 1, 3], 7, {4: 0.8, 0: 0.798}, {}, {2: 0.562}, intermittent={4: 0.8}, seed=4951,
                  mnnvl=True),
        dict(max_screen_size=32, cross_check="representatives", max_rounds=21, link_check="search")),
    # node 2 read slow three times beside node 0 (NIC-slow, passing inside its rack over NVLink); a
    # crash beside an intermittent node hid the shared partner
    "seed7-20898": (
        _scenario([2, 2], 4, {0: 0.726}, {(1, 3): 0.463}, {}, intermittent={3: 0.766}, seed=5319, mnnvl=True),
        dict(max_concurrent=7, max_screen_size=3, cross_check="representatives",
             cross_check_after_faults=True, max_rounds=9)),
    # a screen triple read 0.35, node 8 then 0.55 beside a partner: the triple's figure came from
    # someone else (NVLink hid it)
    "seed7-21134": (
        _scenario([8, 1], 9, {2: 0.554, 6: 0.342}, {(3, 4): 0.346, (2, 4): 0.49}, {}, intermittent={},
                  seed=8169, mnnvl=True),
        dict(max_concurrent=7, max_screen_size=32, cross_check="none", marginal_band=0.1, max_rounds=5)),
    # node 0 read 0.31, 0.43 and 0.55 beside three partners: three magnitudes are the partners' faults,
    # one observation of node 0
    "seed7-25515": (
        _scenario([3, 3], 6, {4: 0.529, 3: 0.309, 5: 0.436}, {(3, 4): 0.592}, {}, intermittent={2: 0.757},
                  seed=40, mnnvl=True),
        dict(max_screen_size=3, cross_check="representatives", marginal_band=0.0, max_rounds=13)),
    # node 1 read slow inside its rack only on a bad link, clearly slower than its crossing failures
    # (the rack uplink)
    "seed7-27439": (
        _scenario([3, 2], 5, {0: 0.77}, {(0, 3): 0.436, (1, 2): 0.328}, {0: 0.394}, intermittent={4: 0.355},
                  seed=1833, mnnvl=False),
        dict(min_group_size=1, max_concurrent=7, max_screen_size=32, cross_check_after_faults=True,
             marginal_band=0.1, link_check="search")),
    # node 5 read slow twice beside the same partner and never passed: a link between them reads the same
    "seed7-34430": (
        _scenario([3, 3], 6, {0: 0.761, 1: 0.445}, {(2, 5): 0.737}, {}, intermittent={4: 0.356}, seed=9118,
                  mnnvl=True),
        dict(max_screen_size=32, marginal_band=0.0, max_rounds=5, link_check="search")),
    # a three-node pairwise Job: node 2 read 0.63 beside node 0 (link + uplink) and 0.80 beside
    # node 1 (slow): two magnitudes, two other bottlenecks, yet it was named slow with every partner
    "three-node-pairs-at-two-magnitudes": (
        _scenario([1, 2], 3, {1: 0.82}, {(0, 2): 0.734}, {0: 0.617}, intermittent={0: 0.292}, seed=2438,
                  mnnvl=False),
        dict(min_group_size=1, max_concurrent=7, max_screen_size=3, cross_check_after_faults=True,
             marginal_band=0.1)),
    # --- issue 15, second search pass (seed 11, 90 CPU-s): found while the intermittent probes changed
    "mnnvl-uplink-partner-small-budget": (
        _scenario([3, 3, 1], 7, {}, {}, {0: 0.324}, intermittent={4: 0.604}, seed=1481, mnnvl=True),
        dict(marginal_band=0.0, max_rounds=4)),
    # --- issue 15, third pass (seed 11 search): a per-pair Job named a node that never passed "slow
    # with every partner" although each of its slow partners was slow with others too (bad nodes
    # and a degraded uplink): the Job alone cannot say whose fault; confirmed with a proven-good
    # partner like a node that passed before
    "shared-slow-partners-never-passed-uplink": (
        _scenario([2, 3], 5, {4: 0.652}, {(1, 2): 0.819}, {0: 0.427}, intermittent={3: 0.676}, seed=4986),
        dict(min_group_size=1, max_concurrent=1, max_screen_size=2, cross_check="none",
             cross_check_after_faults=False, max_rounds=60)),
    "shared-slow-partners-never-passed-mnnvl": (
        _scenario([1, 1, 1, 1], 4, {2: 0.362, 1: 0.623}, {(1, 0): 0.349, (1, 3): 0.749}, {},
                  intermittent={3: 0.431}, seed=6105, mnnvl=True),
        dict(min_group_size=1, max_concurrent=2, max_screen_size=2, cross_check="representatives",
             cross_check_after_faults=False, marginal_band=0.1, max_rounds=13)),
    # --- issue 15, fourth pass: a probe's proven-good partners were both in rack-01, whose uplink
    # is degraded; healthy node 4 read slow with both (and beside its intermittent mate 3), was
    # named dead, and was listed unresolved as well when the round budget ran out
    "probe-partners-behind-one-uplink": (
        _scenario([1, 2, 3], 6, {}, {}, {1: 0.5468863154441657}, intermittent={3: 0.7344519939276803},
                  seed=4365),
        dict(min_group_size=2, max_concurrent=3, max_screen_size=2, cross_check="representatives",
             cross_check_after_faults=True, marginal_band=0.03, max_rounds=5, link_check="pairwise")),
    # --- issue 15, fifth pass (seed 11 search, 5 of 24,077): "one boundary is no evidence"
    # node 8 read slow in a four-node per-pair Job only with nodes 3 and 4, both in rack-01, whose
    # uplink (0.37) no passing test had crossed: named bad on the Job although it passed beside node 1
    "job-partners-behind-one-uplink": (
        _scenario([3, 3, 3], 9, {7: 0.5753882591649178, 5: 0.6324704942611776},
                  {(1, 7): 0.4544042629354662, (0, 3): 0.5769203655898568}, {1: 0.3658451224308884},
                  intermittent={6: 0.5489605122429875}, seed=104),
        dict(min_group_size=3, max_concurrent=1, max_screen_size=32, cross_check="representatives",
             cross_check_after_faults=True, marginal_band=0.0, max_rounds=60, link_check="pairwise")),
    # MNNVL: node 0 passed beside node 3 (across racks), then read slow beside node 2 (NIC-slow, proven
    # only inside its rack) and nodes 4 and 5 (behind rack-02's uplink, never crossed by a pass)
    "a-pass-then-failures-behind-an-open-uplink": (
        _scenario([2, 2, 2], 6, {2: 0.32639403090752017, 5: 0.3461238424981702}, {}, {2: 0.34446155168514464},
                  intermittent={1: 0.6791784693614825}, seed=1903, mnnvl=True),
        dict(min_group_size=2, max_concurrent=1, max_screen_size=3, cross_check="representatives",
             cross_check_after_faults=False, marginal_band=0.0, max_rounds=60, link_check="search")),
    # node 1 (on the bad link 1-2) read 0.76 inside its rack beside node 2, its crossing failures 0.35
    # (rack-01's uplink): the rack probe named it bad on the inside reading alone
    "rack-probe-inside-reading-is-not-the-crossing-one": (
        _scenario([3, 3], 6, {0: 0.5543800858579867}, {(0, 5): 0.37453443811323966, (1, 2): 0.7513654685093066},
                  {1: 0.3438860945476174}, intermittent={4: 0.7885199574325275}, seed=3942),
        dict(min_group_size=1, max_concurrent=7, max_screen_size=32, cross_check="representatives",
             cross_check_after_faults=True, marginal_band=0.0, max_rounds=21, link_check="pairwise")),
    # node 4 failed beside node 0 (the bad link 0-4) and beside nodes 6 and 9 (behind rack-01's uplink,
    # no pass across it), after passing beside node 1: named bad
    "a-pass-then-a-link-and-an-open-uplink": (
        _scenario([5, 6], 11, {5: 0.6236198203088873, 3: 0.48800437942734065, 7: 0.37376335233157343},
                  {(1, 7): 0.6854804811558297, (0, 4): 0.7431483410748689}, {1: 0.6864032316218596},
                  intermittent={5: 0.31374095801855056}, seed=2901),
        dict(min_group_size=2, max_concurrent=0, max_screen_size=2, cross_check="full",
             cross_check_after_faults=True, marginal_band=0.1, max_rounds=9, link_check="pairwise")),
    # MNNVL: node 1 never passed and failed only beside nodes 3 and 4 (NIC-slow, proven inside rack-01,
    # whose boundary no pass crossed): named bad with its own rack's uplink as the alternative
    "failures-behind-one-open-rack-never-passed": (
        _scenario([3, 3], 6, {3: 0.7854556667562265, 4: 0.6993706267909126, 5: 0.5974112368441069},
                  {(1, 5): 0.712270829300732, (0, 3): 0.7567936653882142}, {}, intermittent={0: 0.728321708255663},
                  seed=1693, mnnvl=True),
        dict(min_group_size=2, max_concurrent=7, max_screen_size=32, cross_check="full",
             cross_check_after_faults=True, marginal_band=0.1, max_rounds=3, link_check="search")),
    # --- the same pass, seed 12 search: node 3 passed alone, then read slow beside nodes 0 and 2 (two
    # other racks) in a three-node per-pair Job; its own rack-02's uplink (0.41), never crossed by a pass,
    # explains both pairs
    "job-pass-then-slow-across-its-own-open-uplink": (
        _scenario([2, 1, 3], 6, {5: 0.46868165984151045, 1: 0.8118591132100443, 4: 0.3253463084676492}, {},
                  {2: 0.4120572380987829}, intermittent={5: 0.6284702489051452}, seed=5540),
        dict(min_group_size=1, max_concurrent=7, max_screen_size=5, cross_check="full",
             cross_check_after_faults=True, marginal_band=0.1, max_rounds=7, link_check="pairwise")),
    # MNNVL, three NIC-slow nodes proven inside their racks, marginalBand 0.1: the link search's partner
    # tally named nodes 5, 6 and 8 on failures at 0.35 beside nodes 1 and 2 while they read 0.98 elsewhere
    "link-tally-counts-only-failures-the-node-explains": (
        _scenario([3, 3, 3], 9, {3: 0.48259269483037126, 1: 0.6503018576241874, 2: 0.3171587511069111}, {}, {},
                  seed=8305, mnnvl=True),
        dict(min_group_size=3, max_concurrent=3, max_screen_size=5, cross_check="full",
             cross_check_after_faults=True, marginal_band=0.1, max_rounds=60, link_check="search")),
    # MNNVL, NIC-slow nodes proven inside their racks (seed 12; closed by the path rules above)
    "seed12-22544-mnnvl-partners-proven-inside": (
        _scenario([2, 2, 2], 6, {0: 0.7041745776125894, 1: 0.8451093941451215, 3: 0.6154878524380137},
                  {(3, 4): 0.745086767880581, (2, 5): 0.5549294780971157}, {}, seed=442, mnnvl=True),
        dict(min_group_size=2, max_concurrent=1, max_screen_size=32, cross_check="representatives",
             cross_check_after_faults=False, marginal_band=0.1, max_rounds=60, link_check="pairwise")),
    "seed13-14678-mnnvl-partners-proven-inside": (
        _scenario([4, 4, 4], 12, {8: 0.7632723117705849, 9: 0.4593856299306931, 0: 0.828335293103597},
                  {(5, 10): 0.8154068893808919}, {}, seed=1256, mnnvl=True),
        dict(min_group_size=2, max_concurrent=7, max_screen_size=32, cross_check="none",
             cross_check_after_faults=False, marginal_band=0.1, max_rounds=21, link_check="search")),
    # seed 13: pair (0, 14) read 0.30, node 0 then 0.62 beside node 1 (NIC-slow, proven inside rack-01):
    # the pair's figure was its mate's (NIC 0.30, passing inside rack-02 over NVLink), yet node 0 was named
    "pair-slower-than-the-node-is-the-mates": (
        _scenario([1, 5, 9], 15, {13: 0.672540611237221, 14: 0.3025245985312377, 1: 0.609152267899917},
                  {(5, 12): 0.3152675466756136}, {}, seed=6876, mnnvl=True),
        dict(min_group_size=2, max_concurrent=2, max_screen_size=2, cross_check="none",
             cross_check_after_faults=True, marginal_band=0.03, max_rounds=21, link_check="pairwise")),
    # seed 13: in a four-node per-pair Job node 3 read 0.35 and 0.36 across rack-01's degraded uplink and
    # 0.88 beside its slow rack mate: the 0.88 pair proves it faster than 0.36, yet it was "slow with all"
    "job-pair-faster-than-the-node-clears-it": (
        _scenario([2, 2], 4, {2: 0.8050552033112228}, {(1, 3): 0.8044087271633238}, {1: 0.3216031277385895},
                  intermittent={2: 0.6714311170683194}, seed=8504),
        dict(min_group_size=1, max_concurrent=7, max_screen_size=5, cross_check="representatives",
             cross_check_after_faults=False, marginal_band=0.03, max_rounds=13, link_check="pairwise")),
    # seed 14: one rack of five; node 4 failed three times beside node 0 (the bad link 0-4) and once in
    # its screen triple with node 3 (bad 0.64), whose pair (2, 3) without it read the triple's figure:
    # the triple was counted as a second partner, so "one partner is no evidence" did not apply
    "triple-explained-by-its-pair-is-no-second-partner": (
        _scenario([5], 5, {3: 0.6392451647640764}, {(0, 4): 0.6701808858064792, (1, 3): 0.5799043197259812}, {},
                  seed=759),
        dict(min_group_size=2, max_concurrent=0, max_screen_size=2, cross_check="representatives",
             cross_check_after_faults=False, marginal_band=0.0, max_rounds=60, link_check="pairwise")),
    # seed 14: a three-node per-pair Job of crashed screens; node 5 read slow beside nodes 3 and 4 (both
    # bad, never passed) and was named "slow with every partner"
    "job-of-unproven-partners": (
        _scenario([3, 3], 6, {4: 0.332137339316684, 2: 0.6156341798716014, 3: 0.3142968805055993},
                  {(0, 2): 0.46429043616858257, (2, 5): 0.5814820744207037}, {1: 0.7816269370855948},
                  intermittent={4: 0.5643051869305379}, seed=1306),
        dict(min_group_size=1, max_concurrent=3, max_screen_size=2, cross_check="full",
             cross_check_after_faults=False, marginal_band=0.0, max_rounds=5, link_check="pairwise")),
    # seed 15: three nodes, a link 1-2 and rack-01's uplink at similar figures, node 1 intermittent: node
    # 2 read slow beside nodes 0 and 1 in the all-node per-pair Job, neither of them ever passed
    "three-node-job-of-unproven-partners": (
        _scenario([1, 2], 3, {}, {(1, 2): 0.7293863225055006}, {1: 0.7931029414040229},
                  intermittent={1: 0.6533627841958057}, seed=8841),
        dict(min_group_size=1, max_concurrent=7, max_screen_size=5, cross_check="full",
             cross_check_after_faults=False, marginal_band=0.03, max_rounds=3, link_check="pairwise")),
    # --- diagnose v2 (seed 14 case 6139): links 0-1 and 0-2, rack-00's uplink and an intermittent node 2;
    # node 1 passed alone, then read slow in the all-node per-pair Job beside node 0 (the link, inside its
    # rack) and node 2 (across rack-00's boundary, which no pass had crossed) at agreeing figures: two
    # faults read as one slow node, named on the Job
    "seed14-6139-job-pass-then-a-link-and-an-open-uplink": (
        _scenario([2, 1], 3, {}, {(0, 1): 0.7334728292727759, (0, 2): 0.5920546470856323}, {0: 0.7184858815054216},
                  intermittent={2: 0.5602933545151227}, seed=6289),
        dict(min_group_size=1, max_concurrent=0, max_screen_size=32, cross_check="full",
             cross_check_after_faults=False, marginal_band=0.1, max_rounds=7, link_check="pairwise")),
    # seed 15 case 1014, MNNVL, the link search: node 8 never passed and failed only beside NIC-slow nodes
    # 0, 1 and 7, each proven only inside its NVLink domain (no crossing pass of its own)
    "seed15-1014-never-passed-beside-partners-proven-inside": (
        _scenario([1, 5, 2, 2], 10, {7: 0.5437240072661158, 0: 0.5719663754366322, 1: 0.48867280623967835}, {}, {},
                  seed=1579, mnnvl=True),
        dict(min_group_size=3, max_concurrent=2, max_screen_size=2, cross_check="none",
             cross_check_after_faults=False, marginal_band=0.1, max_rounds=21, link_check="search")),
}


def verdict_sets(v) -> dict[str, set[str]]:
    """The node sets a verdict names; each node belongs to at most one of them."""
    return {"good": set(v.good_nodes), "bad": {b["name"] for b in v.bad_nodes},
            "intermittent": {x["name"] for x in v.intermittent},
            "unresolved": {n for u in v.unresolved for n in u["nodes"]}}


def assert_consistent(v) -> None:
    sets = verdict_sets(v)
    kinds = sorted(sets)
    for i, a in enumerate(kinds):
        for b in kinds[i + 1:]:
            assert not sets[a] & sets[b], f"node(s) {sorted(sets[a] & sets[b])} are both {a} and {b}"


@pytest.mark.parametrize("name", sorted(CASES))
def test_found_case_convicts_no_healthy_node_at_p0(name):
    sc, options = CASES[name]
    policy = DiagnosePolicy(threshold=sc.threshold, **options)
    stats = run_planner(sc, policy, roundtrip=True)
    v = stats.verdict
    assert stats.disjoint and stats.rounds <= policy.max_rounds
    rack_alternative = {b["name"] for b in v.bad_nodes if b.get("alternative", "").startswith("uplink of")}
    wrong = [b["name"] for b in v.bad_nodes if not explains(sc, b["name"], policy.min_group_size)
             and not (b["name"] in rack_alternative and sc.bad_racks)]
    assert not wrong, f"healthy node(s) {wrong} named bad at p=0"
    assert_consistent(v)


def test_pairs_with_a_node_read_intermittent_are_its_own_not_its_partners():
    # (issue 15, the search with Intermittent verdicts checked too) MNNVL, three racks of 7: NIC-slow
    # nodes 12, 15 and 19 pass inside their NVLink domain and read slow with every node outside it (14
    # of 20: a share, so Intermittent); healthy node 6, slow beside those three and on its bad link to
    # node 11, was reported Intermittent as well
    sc = _scenario([7, 7, 7], 21, {19: 0.31063190723873385, 15: 0.8362175925324118, 12: 0.43861466580134445},
                   {(6, 11): 0.528893861561917}, seed=376, mnnvl=True)
    policy = DiagnosePolicy(threshold=sc.threshold, min_group_size=2, max_concurrent=2, max_screen_size=2,
                            cross_check="full", cross_check_after_faults=True, marginal_band=0.0, max_rounds=4,
                            link_check="pairwise")
    v = run_planner(sc, policy, roundtrip=True).verdict
    named = {x["name"] for x in v.intermittent} | {b["name"] for b in v.bad_nodes}
    assert {"gpu-node-012", "gpu-node-015", "gpu-node-019"} <= named
    wrong = sorted(x for x in named if not explains(sc, x, policy.min_group_size))
    assert not wrong, f"healthy node(s) {wrong} reported bad or Intermittent at p=0"
    assert_consistent(v)


def test_two_bad_rack_mates_whose_screen_flipped_are_still_named():
    # (diagnose v2, the per-path rule pair by pair) uneven racks, p = 5 %: nodes 6 and 7, a rack of
    # their own, both slow; their screen pair flipped to a pass and the all-node per-pair Job read
    # each slow with every partner. That pass held the slow rack mate, so it needs a flip under
    # every reading and does not make them "passed" nodes to doubt: both are named, not left
    # unresolved for want of a partner outside three open racks
    sc = make_scenario(16, "pair2", 11, 0.05, rack_size=-1)
    v = run_planner(sc, DiagnosePolicy(threshold=sc.threshold, cross_check="full"), roundtrip=True).verdict
    assert {b["name"] for b in v.bad_nodes} == set(sc.bad_nodes) == {"gpu-node-0006", "gpu-node-0007"}
    assert_consistent(v)


def test_slow_pairs_of_a_cleared_node_do_not_vanish():
    # (diagnose v2, seed14-6139) node 1, doubted after the all-node per-pair Job read it slow beside
    # node 0 (link 0-1, inside rack-00) and node 2 (across rack-00's degraded uplink), passes its
    # confirmations: the pair inside the rack, both ends passing without each other, is the link;
    # the crossing pair, whose other end is Intermittent on crashes only, stays unresolved with the Job
    sc, options = CASES["seed14-6139-job-pass-then-a-link-and-an-open-uplink"]
    v = run_planner(sc, DiagnosePolicy(threshold=sc.threshold, **options), roundtrip=True).verdict
    assert [(x["a"], x["b"]) for x in v.bad_links] == [("gpu-node-000", "gpu-node-001")]
    assert [u["nodes"] for u in v.unresolved] == [["gpu-node-001"]]
    assert "gpu-node-002" in v.unresolved[0]["message"] and "uplink of rack-00" in v.unresolved[0]["message"]
    assert any(e["kind"] == "cross-pairwise" and not e["passed"] for e in v.unresolved[0]["evidence"])
    assert not v.bad_nodes and {x["name"] for x in v.intermittent} == {"gpu-node-002"}
    assert_consistent(v)
