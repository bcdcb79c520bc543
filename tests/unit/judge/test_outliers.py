"""Outlier statistics: median of same-shape groups, a stated minimum, ties, equal values."""

from __future__ import annotations

import random

import pytest

from nvcre.controller import outlier_check
from nvcre.judge.outliers import MIN_GROUPS, GroupFigure, find_outliers

SHAPE = "4 nodes x 8 GPUs, inter-node"


def _figs(values, shape=SHAPE):
    return [GroupFigure(f"group-{i}", (f"n{i}a", f"n{i}b"), v, shape) for i, v in enumerate(values)]


def test_the_issue_case_one_slow_group_among_four():
    check = find_outliers(_figs([371.5, 184.97, 372.2, 373.1]))
    assert [o.group for o in check.outliers] == ["group-1"]
    o = check.outliers[0]
    assert o.median == pytest.approx((371.5 + 372.2) / 2) and o.fraction == 0.9
    assert "50% of the median" in o.message and "n1a" in o.message


def test_all_equal_and_ties_are_not_outliers():
    assert find_outliers(_figs([370.0] * 8)).outliers == ()
    assert find_outliers(_figs([300.0, 300.0, 370.0, 370.0, 370.0])).outliers != ()
    # two slow groups tied at the same value are both named, sorted by name
    check = find_outliers(_figs([370, 370, 370, 370, 150, 150]))
    assert [o.group for o in check.outliers] == ["group-4", "group-5"]


def test_one_group_or_fewer_than_the_minimum_are_not_compared_and_say_so():
    one = find_outliers(_figs([185.0]))
    assert one.outliers == () and "1 group, fewer than 3; not compared" in one.note
    two = find_outliers(_figs([370.0, 185.0]))
    assert two.outliers == () and f"fewer than {MIN_GROUPS}" in two.note


def test_shapes_are_compared_only_with_themselves():
    figs = _figs([470, 468, 472], "1 node x 8 GPUs, intra-node") + _figs([372, 371, 370], SHAPE)
    assert find_outliers(figs).outliers == ()  # 370 is not slow next to intra-node 470


def test_the_median_is_robust_to_a_minority_of_slow_groups():
    values = [370.0] * 9 + [10.0] * 4  # four dead groups do not move the reference
    check = find_outliers(_figs(values))
    assert len(check.outliers) == 4 and check.outliers[0].median == 370.0


def test_fraction_is_stated_and_bad_fractions_refused():
    assert find_outliers(_figs([100, 100, 100, 80]), 0.7).outliers == ()
    assert len(find_outliers(_figs([100, 100, 100, 80]), 0.85).outliers) == 1
    for bad in (0, -0.5, 1.5):
        with pytest.raises(ValueError):
            find_outliers(_figs([1, 2, 3]), bad)


def test_nonsense_figures_are_skipped():
    figs = _figs([370, 371, 372]) + [GroupFigure("nan", ("x",), float("nan"), SHAPE), GroupFigure("neg", ("y",), -1.0, SHAPE)]
    assert find_outliers(figs).outliers == ()


def test_random_fleets_flag_exactly_the_injected_slow_groups():
    rng = random.Random(14)
    for _ in range(200):
        n = rng.randint(3, 64)
        values = [rng.uniform(365, 375) for _ in range(n)]
        slow = set(rng.sample(range(n), rng.randint(0, (n - 1) // 2)))
        for i in slow:
            values[i] *= rng.uniform(0.3, 0.85)
        assert {int(o.group.split("-")[1]) for o in find_outliers(_figs(values)).outliers} == slow


def _wf(groups, fail=False):
    ann = {"nvcre.nvidia.com/judging": '{"gpusPerNode":8,"judged":false,"state":"none"}'}
    if fail:
        ann["nvcre.nvidia.com/fail-on-outlier"] = "true"
    return {"metadata": {"name": "wf", "annotations": ann, "generation": 1}}, {
        "orchestration": {"testScale": "full-scale", "groups": groups}, "conditions": []}


def _groups():
    return [{"name": f"group-{i}", "nodes": [f"gpu-node-{4 * i + j:02d}" for j in range(1, 5)], "phase": "Succeeded",
             "headline": v} for i, v in enumerate([371.5, 184.97, 372.2, 373.1])]


def test_controller_pass_warns_by_default():
    wf, st = _wf(_groups())
    events = outlier_check.apply(st, wf, 1)
    assert [e[1] for e in events] == ["PerformanceOutlier"] and "gpu-node-05" in events[0][2]
    assert st["orchestration"]["performanceOutliers"][0]["group"] == "group-1"
    assert st["orchestration"]["performanceOutliers"][0]["shape"] == "4 nodes x 8 GPUs, inter-node"
    cond = next(c for c in st["conditions"] if c["type"] == "PerformanceOutlier")
    assert cond["status"] == "True"
    assert not st.get("failedGroups") and all(g["phase"] == "Succeeded" for g in st["orchestration"]["groups"])


def test_controller_pass_fails_and_hands_the_group_to_isolation():
    from nvcre.controller import isolation

    wf, st = _wf(_groups(), fail=True)
    outlier_check.apply(st, wf, 1)
    assert st["failedGroups"][0]["reason"] == "PerformanceOutlier"
    assert st["orchestration"]["groups"][1]["phase"] == "Failed"
    wf["spec"] = {"orchestration": {"testScale": "full-scale"}}
    wf["status"] = st
    assert [g["name"] for g in isolation.eligible_groups(wf)] == ["group-1"]
    child = isolation.child_body({**wf, "metadata": {**wf["metadata"], "namespace": "ns", "uid": "u"},
                                  "apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Workflow"}, ["gpu-node-05"])
    bar = child["spec"]["validation"]["performance"]["thresholds"]["thresholds"]["busBandwidthGBps"]
    assert bar == "value >= 334.67"  # 0.9 x median 371.85


def test_controller_pass_skips_diagnose_and_groups_without_figures():
    wf, st = _wf([{"name": "g", "nodes": ["a"], "phase": "Succeeded"}])
    assert outlier_check.apply(st, wf, 1) == [] and "performanceOutliers" not in st["orchestration"]
    wf, st = _wf(_groups())
    st["orchestration"]["testScale"] = "diagnose"
    assert outlier_check.apply(st, wf, 1) == []
