"""regressionMargin flows from the Certification (spec or category) through the composed
Workflow into the ledger update, and a Regression carries the margin that was applied."""

from __future__ import annotations

import copy

import pytest

from nvcre.controller import compose
from nvcre.controller import ledger as W
from nvcre.controller.context import Context, Settings
from nvcre.controller.judging import REGRESSION_MARGIN_ANNOTATION
from nvcre.judge import ledger as J

from fake_kube import FakeKube

API = "nvcre.nvidia.com/v1alpha1"
NOW = 1_800_000_000.0
SCOPE = "2 nodes x 8 GPUs, inter-node"
CERT = {
    "apiVersion": API, "kind": "Certification",
    "metadata": {"name": "c2", "namespace": "ns", "uid": "cert-uid"},
    "spec": {"target": {}, "regressionMargin": 0.3, "categories": [
        {"domain": "communication", "variant": "nccl-all-reduce", "options": {"regressionMargin": 0.15}},
        {"domain": "communication", "variant": "nccl-all-gather"},
        {"domain": "communication", "variant": "nccl-alltoall"},
    ]},
}


class _CertKube:
    def get(self, *a, **k):
        return CERT if a[1] == "Certification" else None


def _composed(index: int, cert: dict = CERT) -> dict:
    resolved = compose.resolve_certification_category(cert, index, "aws", "h100")
    return compose.workflow_for_category(Context(kube=_CertKube(), settings=Settings()), cert, index, resolved, "native")


def test_the_category_margin_wins_then_the_spec_margin_then_none():
    assert W.regression_margin(_composed(0)) == 0.15
    assert W.regression_margin(_composed(1)) == 0.3
    bare = copy.deepcopy(CERT)
    bare["spec"].pop("regressionMargin")
    wf = _composed(2, bare)
    assert REGRESSION_MARGIN_ANNOTATION not in wf["metadata"].get("annotations", {})
    assert W.regression_margin(wf) is None  # the ledger applies its default, 0.10


@pytest.mark.parametrize("raw", ["0", "1", "-0.1", "ten", "nan"])
def test_a_margin_annotation_edited_out_of_range_falls_back_to_the_default(raw):
    assert W.regression_margin({"metadata": {"name": "wf", "annotations": {REGRESSION_MARGIN_ANNOTATION: raw}}}) is None


def _ended_workflow(margin: str | None, headline: float) -> dict:
    annotations = {REGRESSION_MARGIN_ANNOTATION: margin} if margin else {}
    return {
        "apiVersion": API, "kind": "Workflow",
        "metadata": {"name": "wf", "namespace": "ns", "annotations": annotations, "ownerReferences": [
            {"apiVersion": API, "kind": "Certification", "name": "c2", "uid": "cert-uid", "controller": True}]},
        "spec": {"category": "communication/nccl-all-reduce"},
        "status": {
            "completionTime": "2026-12-02T05:00:00Z",
            "conditions": [{"type": "Succeeded", "status": "True", "reason": "JobCompleted", "message": "",
                            "lastTransitionTime": "2026-12-02T05:00:00Z"}],
            "orchestration": {"testScale": "full-scale", "judging": {"judged": True, "stage": "production", "gpusPerNode": 8},
                              "groups": [{"name": "group-0", "nodes": ["n1", "n2"], "phase": "Succeeded",
                                          "headline": headline}]},
        },
    }


def _run(margin: str | None, headline: float) -> tuple[FakeKube, dict]:
    kube = FakeKube([])
    ctx = Context(kube=kube, settings=Settings(), clock=lambda: NOW)
    for node in ("n1", "n2"):  # both nodes passed at 400 in an earlier run
        status, _ = J.update(None, [J.NodeResult(node=node, category="communication/nccl-all-reduce", scope=SCOPE,
                                                 result=J.PASSED, time="2026-12-02T04:00:00Z", run="ns/c1", value=400.0)])
        kube.add({"apiVersion": API, "kind": W.KIND, "metadata": {"name": node, "namespace": "ledger"},
                  "spec": {"nodeName": node}, "status": status})
    kube.add(_ended_workflow(margin, headline))
    return kube, W.record_workflow(ctx, kube.get(API, "Workflow", "wf", "ns"))


@pytest.mark.parametrize("margin, headline, flagged", [
    (None, 340.0, True),     # the default 0.10: 15 % down is a Regression
    ("0.2", 340.0, False),   # a stated 0.2 lets 15 % pass
    ("0.2", 320.0, False),   # exactly the margin: not a Regression
    ("0.2", 319.0, True),
    ("0.05", 379.0, True),
])
def test_the_workflow_margin_reaches_the_ledger_update(monkeypatch, margin, headline, flagged):
    monkeypatch.setenv("NVCRE_LEDGER_NAMESPACE", "ledger")
    kube, written = _run(margin, headline)
    regressions = written["status"]["orchestration"].get("regressions") or []
    assert [r["node"] for r in regressions] == (["n1", "n2"] if flagged else [])
    if flagged:
        stated = float(margin) if margin else J.DEFAULT_REGRESSION_MARGIN
        assert {r["margin"] for r in regressions} == {stated}
        assert f"(margin {stated:.0%})" in regressions[0]["message"]
        assert ("Warning", "Regression") in kube.events
    record = kube.get(API, W.KIND, "n1", "ledger")["status"]
    assert record["results"][0]["value"] == headline and record["results"][0]["lastPass"]["value"] == 400.0
