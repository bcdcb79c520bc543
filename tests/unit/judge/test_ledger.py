"""The node readiness ledger: regressions against the node's own last pass, bounds, stages."""

from __future__ import annotations

import json

import pytest

from nvcre.cli.nodes import select_rows
from nvcre.controller import ledger as W
from nvcre.errors import UserError
from nvcre.judge import ledger as J

SCOPE = "4 nodes x 8 GPUs, inter-node"


def _r(value, result=J.PASSED, t="2026-12-02T04:00:00Z", run="ns/c1", stage="production", cat="communication/nccl-all-reduce",
       scope=SCOPE, node="gpu-node-07"):
    return J.NodeResult(node=node, category=cat, scope=scope, result=result, time=t, run=run, stage=stage, value=value,
                        environment={"nccl": "2.27.7+cuda12.9", "transport": "IB"})


def test_first_pass_clears_the_stage():
    rec, regs = J.update(None, [_r(371.0)])
    assert regs == [] and rec["stageCleared"] == "production" and rec["lastResult"] == "Passed"
    assert rec["results"][0]["environment"]["nccl"] == "2.27.7+cuda12.9"


@pytest.mark.parametrize("new, flagged", [(372.0, False), (340.0, False), (334.0, False), (333.0, True), (297.0, True)])
def test_regression_margin_is_ten_percent_below_the_last_pass(new, flagged):
    rec, _ = J.update(None, [_r(371.0)])
    rec, regs = J.update(rec, [_r(new, t="2026-12-02T05:00:00Z", run="ns/c2")])
    assert bool(regs) is flagged
    if flagged:
        assert regs[0].previous == 371.0 and regs[0].previous_run == "ns/c1" and regs[0].run == "ns/c2"
        assert "below its last passing 371" in regs[0].message


@pytest.mark.parametrize("margin, previous, new, flagged", [
    (0.20, 400.0, 320.0, False),   # a drop of exactly the margin is not a regression
    (0.20, 400.0, 319.99, True),   # one hundredth more is
    (0.10, 371.0, 333.9, False),   # 371 x 0.9 is 333.90000000000003 in floats: still exactly the margin
    (0.10, 371.0, 333.89, True),
    (0.05, 372.0, 353.4, False),
    (0.05, 372.0, 353.39, True),
])
def test_regression_boundary_is_exactly_the_margin(margin, previous, new, flagged):
    rec, _ = J.update(None, [_r(previous)], margin=margin)
    rec, regs = J.update(rec, [_r(new, t="2026-12-02T05:00:00Z", run="ns/c2")], margin=margin)
    assert bool(regs) is flagged
    if flagged:
        assert regs[0].margin == margin and regs[0].to_dict()["margin"] == margin


@pytest.mark.parametrize("margin, flagged", [(None, True), (0.15, True), (0.25, False)])
def test_the_stated_margin_decides_a_twenty_percent_drop(margin, flagged):
    rec, _ = J.update(None, [_r(371.0)])
    rec, regs = J.update(rec, [_r(297.0, t="2026-12-02T05:00:00Z", run="ns/c2")], margin=margin)
    assert bool(regs) is flagged
    if flagged:
        stated = J.DEFAULT_REGRESSION_MARGIN if margin is None else margin
        assert regs[0].margin == stated and f"(margin {stated:.0%})" in regs[0].message


def test_regression_is_measured_against_the_last_passing_result_not_the_last_result():
    rec, _ = J.update(None, [_r(371.0)])
    rec, _ = J.update(rec, [_r(185.0, J.FAILED, t="2026-12-02T05:00:00Z", run="ns/c2")])  # the broken run
    assert "stageCleared" not in rec
    rec, regs = J.update(rec, [_r(300.0, t="2026-12-02T06:00:00Z", run="ns/c3")])
    assert regs and regs[0].previous == 371.0 and regs[0].previous_run == "ns/c1"


def test_a_margin_outside_zero_one_is_refused():
    for bad in (0, 1, -0.2, 2, 1.0, "0.2", True, float("nan")):
        with pytest.raises(ValueError, match="regressionMargin"):
            J.update(None, [_r(1.0)], margin=bad)
    with pytest.raises(ValueError):
        J.update(None, [_r(1.0, result="Maybe")])


def test_other_scopes_and_unattributable_figures_are_not_compared():
    rec, _ = J.update(None, [_r(371.0)])
    rec, regs = J.update(rec, [_r(200.0, scope="2 nodes x 8 GPUs, inter-node", t="2026-12-02T05:00:00Z")])
    assert regs == []
    rec, regs = J.update(rec, [_r(None, t="2026-12-02T06:00:00Z")])  # cleared by isolation: no figure of its own
    assert regs == []


def test_failed_result_uncleared_and_stage_is_the_weakest_proof():
    rec, _ = J.update(None, [_r(371.0), _r(None, cat="diagnostics/dcgm-level4", scope="1 node x 8 GPUs, intra-node",
                                            stage="burn-in")])
    assert rec["stageCleared"] == "burn-in"
    rec, _ = J.update(rec, [_r(185.0, J.FAILED, t="2026-12-02T05:00:00Z")])
    assert "stageCleared" not in rec and rec["lastResult"] == "Failed"
    rec, _ = J.update(None, [_r(371.0, J.NOT_JUDGED, stage=None)])
    assert "stageCleared" not in rec and rec["lastResult"] == "NotJudged"


def test_record_size_is_bounded_over_a_long_life():
    rec = None
    for i in range(500):
        rec, _ = J.update(rec, [_r(370.0 + i % 3, t=f"2026-12-{1 + i // 100:02d}T{i % 24:02d}:{i % 60:02d}:00Z",
                                   run=f"ns/run-{i}", scope=f"{2 + i % 50} nodes x 8 GPUs, inter-node")])
    assert len(rec["results"]) <= J.MAX_RESULTS and len(rec["history"]) <= J.MAX_HISTORY
    assert len(json.dumps(rec)) < 48_000


def test_a_record_belongs_to_one_node():
    rec, _ = J.update(None, [_r(1.0)])
    with pytest.raises(ValueError):
        J.update(rec, [_r(1.0, node="gpu-node-08")])


def _wf(*, failed=(), iso=None, judged=True):
    judging = {"judged": judged, "state": "stage" if judged else "none", "stage": "production" if judged else None,
               "gpusPerNode": 8, "image": "nvcr.io/nvidia/pytorch:26.01-py3",
               "derived": [{"key": "busBandwidthGBps", "bar": 370.0, "stage": "production"}] if judged else []}
    orch = {"testScale": "full-scale", "judging": judging, "groups": [
        {"name": "group-0", "nodes": ["a", "b"], "phase": "Failed", "headline": 185.0},
        {"name": "group-1", "nodes": ["c", "d"], "phase": "Succeeded", "headline": 372.0}]}
    if iso:
        orch["isolation"] = iso
    return {"metadata": {"name": "wf", "namespace": "ns", "ownerReferences": [
        {"kind": "Certification", "name": "c1", "controller": True, "apiVersion": "nvcre.nvidia.com/v1alpha1", "uid": "u"}]},
            "spec": {"category": "communication/nccl-all-reduce"},
            "status": {"orchestration": orch, "failedNodes": [{"name": n, "reason": "ThresholdViolation"} for n in failed]}}


def test_node_results_from_a_workflow_name_the_convicted_node_only():
    wf = _wf(failed=["a"], iso={"phase": "Succeeded", "nodes": ["a", "b"], "convicted": ["a"]})
    labels = {"a": {"nvidia.com/cuda.driver-version.full": "570.133.20", "nvidia.com/cuda.runtime.major": "12",
                    "nvidia.com/cuda.runtime.minor": "8"}}
    out = {r.node: r for r in W.node_results(wf, "ns/c1", "2026-12-02T04:00:00Z", [], labels)}
    assert out["a"].result == "Failed" and out["a"].value == 185.0
    assert out["b"].result == "Passed" and out["b"].value is None  # cleared by isolation: not its figure
    assert out["c"].value == 372.0 and out["c"].stage == "production" and out["c"].bar.startswith("busBandwidthGBps >= 370")
    assert out["a"].environment["driver"] == "570.133.20" and out["a"].environment["cuda"] == "12.8"
    assert out["a"].environment["image"].startswith("nvcr.io/")


def test_unjudged_run_records_not_judged_without_a_stage():
    out = W.node_results(_wf(judged=False), "ns/c1", "2026-12-02T04:00:00Z", [], {})
    assert {r.result for r in out} == {"NotJudged"} and all(r.stage is None for r in out)


def test_drain_list_filters():
    recs = []
    for node, stage, result in (("n1", "production", "Passed"), ("n2", "burn-in", "Passed"), ("n3", None, "Failed")):
        st = {"lastResult": result, **({"stageCleared": stage} if stage else {})}
        recs.append({"metadata": {"name": node}, "spec": {"nodeName": node}, "status": st})
    names = lambda rows: [r["node"] for r in rows]  # noqa: E731
    assert names(select_rows(recs, stage="production", not_ready=True)) == ["n2", "n3"]
    assert names(select_rows(recs, stage="burn-in")) == ["n1", "n2"]
    assert names(select_rows(recs, result="Failed")) == ["n3"]
    assert names(select_rows(recs, not_ready=True)) == ["n3"]
    with pytest.raises(UserError):
        select_rows(recs, stage="gold")
    with pytest.raises(UserError):
        select_rows(recs, result="ok")
