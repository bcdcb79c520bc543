"""Stage derivation: the user's thresholds win; a stage derives its fraction of the line;
nothing judged is said, never a quiet pass."""

from __future__ import annotations

import pytest

from nvcre.api.certification import CertificationSpec
from nvcre.api.common import FieldProblem
from nvcre.api.load import load_text
from nvcre.errors import UserError
from nvcre.judge.stages import NO_BASELINE, NONE, STAGE, STAGES, TOOL, USER, Scope, judging_for, scope_of

BW = ("busBandwidthGBps", "algBandwidthGBps")


def _judge(stage, *, arch="h100", scope=Scope("intra-node", 1), user=None, measured=BW, nics=8,
           category="communication/nccl-all-reduce", platform="aws"):
    return judging_for(category=category, stage=stage, user_thresholds=user, measured_keys=measured, arch=arch,
                       platform=platform, nics_per_node=nics, scope=scope)


def test_production_is_the_public_acceptance_line_with_its_source():
    j = _judge("production")
    assert j.state == STAGE and j.judged
    assert j.thresholds == {"busBandwidthGBps": "value >= 460"}
    text = j.derived[0].text
    assert text.startswith("busBandwidthGBps >= 460 (production: H100 intra-node acceptance line, source ")
    assert "azurehpc-health-checks" in text


@pytest.mark.parametrize("stage, bar", [("bring-up", 296), ("burn-in", 333), ("preproduction", 351.5), ("production", 370)])
def test_each_stage_is_its_stated_fraction_of_the_inter_node_line(stage, bar):
    j = _judge(stage, scope=Scope("inter-node", 4), platform="azure")  # 8 x 400G NDR InfiniBand
    assert j.derived[0].bar == bar and j.thresholds["busBandwidthGBps"] == f"value >= {bar:g}"


@pytest.mark.parametrize("platform", ["aws", "gcp"])
def test_inter_node_on_a_platform_fabric_without_a_figure_is_not_judged(platform):
    """EFA and TCPX have no published line; the IB/RoCE 370 is not borrowed for them."""
    j = _judge("production", scope=Scope("inter-node", 4), platform=platform)
    assert j.state == NO_BASELINE and not j.judged and not j.thresholds
    assert j.message.startswith(f"not judged: no baseline for h100/{platform} (communication/nccl-all-reduce, "
                                "inter-node 4-node)")


def test_user_thresholds_always_win():
    j = _judge("production", user={"busBandwidthGBps": "value >= 100"})
    assert j.state == USER and j.thresholds == {"busBandwidthGBps": "value >= 100"} and not j.derived


def test_no_stage_and_no_thresholds_is_not_judged_and_says_how_to_fix_it():
    j = _judge(None)
    assert j.state == NONE and not j.judged and "set spec.stage" in j.message


def test_a_stage_without_a_baseline_names_arch_and_platform():
    j = _judge("production", arch="h20")  # H20 has only a measured report, no acceptance line
    assert j.state == NO_BASELINE and not j.judged
    assert j.message.startswith("not judged: no baseline for h20/aws") and j.message.endswith("set thresholds")
    unknown = _judge("burn-in", arch="l20")
    assert unknown.state == NO_BASELINE and "l20/aws" in unknown.message


def test_a_tool_verdict_is_a_judgement():
    j = _judge(None, category="diagnostics/dcgm-level4", measured=())
    assert j.state == TOOL and j.judged


def test_unknown_nic_count_or_large_groups_have_no_inter_node_baseline():
    assert _judge("production", scope=Scope("inter-node", 4), nics=None, platform="azure").state == NO_BASELINE
    assert _judge("production", scope=Scope("inter-node", 128), platform="azure").state == NO_BASELINE


def test_scope_follows_test_scale_and_group_size():
    assert scope_of("intra-node", None, False) == Scope("intra-node", 1)
    assert scope_of("full-scale", 1, False).scope == "intra-node"
    assert scope_of("intra-rack", 18, True) == Scope("mnnvl", 18)
    assert scope_of("full-scale", 4, False) == Scope("inter-node", 4)


@pytest.mark.parametrize("stage", STAGES)
def test_derived_bar_never_exceeds_the_acceptance_line_at_any_covered_size(stage):
    for nodes in range(2, 33):  # every group size the entry covers
        j = _judge(stage, scope=Scope("inter-node", nodes), platform="azure")
        assert j.state == STAGE and 0 < j.derived[0].bar <= j.derived[0].acceptance


def _cert(extra: str) -> str:
    return f"""
apiVersion: nvcre.nvidia.com/v1alpha1
kind: Certification
metadata: {{name: c, namespace: n}}
spec:
  target: {{}}
  categories:
    - domain: communication
      variant: nccl-all-reduce
{extra}
"""


@pytest.mark.parametrize(
    "extra, field",
    [
        ("  stage: prod", "stage"),
        ("      options: {stage: golden}", "stage"),
        ("  outlierFraction: -0.5", "outlierFraction"),
        ("  outlierFraction: 1.5", "outlierFraction"),
        ("  failOnOutlier: sometimes", "failOnOutlier"),
        ("  regressionMargin: -0.1", "spec.regressionMargin"),
        ("  regressionMargin: 0", "spec.regressionMargin"),
        ("  regressionMargin: 1", "spec.regressionMargin"),
        ("  regressionMargin: 1.5", "spec.regressionMargin"),
        ("  regressionMargin: '0.1'", "spec.regressionMargin"),
        ("      options: {regressionMargin: 0}", "categories[0].options.regressionMargin"),
    ],
)
def test_bad_judging_options_are_refused_naming_the_field(extra, field):
    with pytest.raises(UserError) as err:
        load_text(_cert(extra))
    assert field in err.value.message


def test_unknown_stage_message_lists_the_allowed_values():
    with pytest.raises(UserError) as err:
        load_text(_cert("  stage: prod"))
    assert all(s in err.value.message for s in STAGES), err.value.message


def test_stage_on_spec_and_per_category_merges_category_first():
    (cert,) = load_text("""
apiVersion: nvcre.nvidia.com/v1alpha1
kind: Certification
metadata: {name: c, namespace: n}
spec:
  target: {}
  stage: burn-in
  categories:
    - {domain: communication, variant: nccl-all-reduce}
    - {domain: communication, variant: nccl-all-gather, options: {stage: production}}
""")
    assert cert.spec.options_for(0).stage == "burn-in" and cert.spec.options_for(1).stage == "production"


def test_crd_enum_lists_the_stages():
    from nvcre.api.crd import build_crd
    from nvcre.api.certification import Certification

    schema = build_crd(Certification)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    spec = schema["properties"]["spec"]["properties"]
    assert spec["stage"]["enum"] == list(STAGES)
    assert spec["categories"]["items"]["properties"]["options"]["properties"]["stage"]["enum"] == list(STAGES)
    assert spec["outlierFraction"]["minimum"] > 0
    margin = spec["regressionMargin"]
    assert (margin["minimum"], margin["exclusiveMinimum"], margin["maximum"], margin["exclusiveMaximum"]) == (0, True, 1, True)


_ = (CertificationSpec, FieldProblem)


def test_reports_never_show_an_unjudged_category_as_a_quiet_pass():
    from nvcre.report.model import CategoryReport, Outlier, Report
    from nvcre.report.render import RESULT_EXIT, render

    cat = CategoryReport(domain="communication", variant="nccl-all-reduce", status="Succeeded", judged=False,
                         judging="not judged: no thresholds and no stage; set spec.stage",
                         outliers=[Outlier(group="group-1", nodes=["gpu-node-07"], value=185.0, median=372.0, fraction=0.9,
                                           message="group group-1 (gpu-node-05, gpu-node-06, gpu-node-07, gpu-node-08) "
                                                   "measured 185")], gpu_hours=1.5)
    report = Report(name="r", categories=[cat], categories_passed=1, categories_total=1, result="NOT JUDGED", gpu_hours=1.5)
    assert RESULT_EXIT[report.result] == 4
    text = render(report, "text")
    assert "NOT JUDGED: no thresholds and no stage; set spec.stage" in text and "PerformanceOutlier" in text and "gpu-node-07" in text
    assert "GPU-hours:" in text and "Result:       NOT JUDGED" in text
    assert "NOT JUDGED" in render(report, "html") and "PerformanceOutlier" in render(report, "html")
    junit = render(report, "junit")
    assert 'errors="1"' in junit and "NOT JUDGED" in junit
    assert '"judged": false' in render(report, "json")


def test_resolution_of_an_unknown_gpu_uses_the_nodes_not_the_fallback():
    from nvcre.controller.compose import resolve_certification_category
    from nvcre.sim.fleet import FleetSpec, build_fleet

    nodes = build_fleet(FleetSpec(nodes=4, gpu="h20", platform="onprem")).nodes
    cert = {"metadata": {"name": "c", "namespace": "n"},
            "spec": {"target": {}, "categories": [{"domain": "communication", "variant": "nccl-all-reduce"}]}}
    resolved = resolve_certification_category(cert, 0, "onprem", "h20", nodes=nodes)
    assert resolved.gpus_per_node == 8 and resolved.mlnx_per_node == 1  # a shared rdma/ib pool: one device
    assert any("nvidia.com/gpu capacity" in s for s in resolved.extra["inferred"])
    own = {**cert, "spec": {**cert["spec"], "gpusPerNode": 4}}
    assert resolve_certification_category(own, 0, "onprem", "h20", nodes=nodes).gpus_per_node == 4  # the user's value wins
