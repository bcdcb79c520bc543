"""The bad-vs-intermittent split on per-pair counts follows the noise model (issue 15, diagnose v2).

Regression: at 4096 nodes, two bad nodes in one screen pair at p = 5 %, the per-pair decode
reported the second bad node Intermittent ("failed 4094 of 4095") although every pair of it
was slow: "fails some, completes others" ignored that flips and a named mate explain the rest.
"""

from __future__ import annotations

import math

import pytest

from nvcre.planning.diagnose_cases import decode_pairs
from nvcre.planning.diagnose_sim import make_scenario, run_planner
from nvcre.planning.pair_noise import ALPHA, FLIP_P, INTERMITTENT_MAX, binom_cdf, flips_explain


def exact_cdf(k: int, n: int, p: float) -> float:
    return sum(math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(k + 1))


@pytest.mark.parametrize("n,p", [(1, 0.05), (9, 0.2), (60, 0.05), (200, 0.2)])
def test_binom_cdf_matches_the_exact_sum(n, p):
    for k in range(-1, n + 1):
        assert binom_cdf(k, n, p) == pytest.approx(exact_cdf(k, n, p) if k >= 0 else 0.0, abs=1e-12)


def test_no_pass_is_bad_and_small_counts_with_a_pass_stay_intermittent():
    assert flips_explain(3, 0) and flips_explain(4095, 0)
    assert not flips_explain(0, 0)  # nothing failed: nothing to explain
    # few transfers: one completed is as likely an intermittent node as a flip (as before)
    for t in (3, 5, 9, 15):
        assert not flips_explain(t - 1, 1), t


def test_large_counts_follow_the_flip_rate():
    # a dead node at 4095 transfers and 5 % flips completes about 205: bad, not Intermittent
    assert flips_explain(4095 - 205, 205)
    assert flips_explain(4094, 1)
    # a share clearly between: Intermittent
    for passes in (300, 1000, 2048, 3000):
        assert not flips_explain(4095 - passes, passes), passes
    assert flips_explain(58, 2) and not flips_explain(57, 3)  # 60 transfers: the bound sits at 2


@pytest.mark.parametrize("t", list(range(1, 80)) + [255, 511, 1023, 4095])
def test_the_noise_bound_reads_an_intermittent_node_bad_at_most_alpha_of_the_time(t):
    # beyond the old rule (no pass at all: bad, which an intermittent node failing INTERMITTENT_MAX
    # meets with 0.8^t), a pass read as a flip convicts the most-failing intermittent node <= ALPHA
    top = max((k for k in range(1, t + 1) if flips_explain(t - k, k)), default=0)
    assert all(flips_explain(t - k, k) for k in range(1, top + 1))  # the bad reading is one interval
    assert binom_cdf(top, t, 1 - INTERMITTENT_MAX) - binom_cdf(0, t, 1 - INTERMITTENT_MAX) <= ALPHA, (t, top)


@pytest.mark.parametrize("t", [511, 1023, 4095])
def test_a_dead_node_with_flips_is_read_bad_in_large_jobs(t):
    top = max(k for k in range(t + 1) if flips_explain(t - k, k))
    assert binom_cdf(top, t, FLIP_P) >= 1 - 2 * ALPHA, (t, top)


def test_bad_counts_are_refused_with_a_message():
    with pytest.raises(ValueError, match="fails and passes must be >= 0"):
        flips_explain(-1, 3)


def test_failed_transfers_with_a_few_passes_name_a_dead_node_not_an_intermittent_one():
    m = 400
    members = list(range(m))
    passed = set(range(1, 10))  # 9 of 399 transfers completed: what flips explain
    failed = [(0, j) for j in range(1, m) if j not in passed]
    out = decode_pairs([], members, [0] * m, False, failed=failed)
    assert out["nodes"] == [0] and out["intermittent"] == [], out
    # the same node completing half its transfers is Intermittent
    failed = [(0, j) for j in range(1, m) if j % 2]
    out = decode_pairs([], members, [0] * m, False, failed=failed)
    assert out["nodes"] == [] and [x[0] for x in out["intermittent"]] == [0], out


def test_two_slow_rack_mates_are_both_bad_not_one_bad_and_one_intermittent():
    # racks of 8; nodes 6 and 7 (rack 0) slow at 0.70 and 0.60 of 400: their pair reads the
    # slower one's figure, which disagreed with 6's own and made 6 read as its rack's uplink,
    # then as "intermittent, slow with 62 of 63"
    m = 64
    dom = [i // 8 for i in range(m)]
    slow = [(6, j, 280.0) for j in range(m) if j not in (6, 7)]
    slow += [(min(7, j), max(7, j), 240.0) for j in range(m) if j != 7]
    out = decode_pairs(slow, list(range(m)), dom, True)
    assert out["nodes"] == [6, 7] and out["intermittent"] == [] and out["links"] == [], out


def test_a_pair_of_bad_nodes_whose_screen_flipped_at_4096_nodes_is_named_bad():
    sc = make_scenario(4096, "pair2", 0, 0.05, rack_size=-1)
    st = run_planner(sc)
    names = {b["name"] for b in st.verdict.bad_nodes}
    assert names == set(sc.bad_nodes) and not st.verdict.intermittent, st.verdict.to_dict()["intermittent"]


def test_a_named_node_with_fewer_than_two_slow_rack_mates_keeps_its_partners():
    # (issue 15, found case seed14-6139) racks [0, 1] and [2]: node 1 slow beside node 0 (inside) and
    # node 2 (across) at agreeing figures: named on the Job, its partners kept for the per-path rule
    out = decode_pairs([(0, 1, 302.4), (1, 2, 281.5)], [0, 1, 2], [0, 0, 1], True, failed=[(0, 2)])
    assert out["nodes"] == [1] and out["partners"] == [[1, [0, 2]]], out
    # two slow rack mates: evidence whatever crossed, nothing kept
    dom = [0, 0, 0, 1]
    out = decode_pairs([(0, 1, 280.0), (0, 2, 281.0), (0, 3, 279.0)], [0, 1, 2, 3], dom, True)
    assert out["nodes"] == [0] and out["partners"] == [], out
    # without racks there is no path to doubt
    assert decode_pairs([(0, 1, 280.0), (0, 2, 281.0)], [0, 1, 2], [0, 0, 0], False)["partners"] == []
