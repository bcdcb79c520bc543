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
           category="communication/nccl-all-reduce"):
    return judging_for(category=category, stage=stage, user_thresholds=user, measured_keys=measured, arch=arch,
                       platform="aws", nics_per_node=nics, scope=scope)


def test_production_is_the_public_acceptance_line_with_its_source():
    j = _judge("production")
    assert j.state == STAGE and j.judged
    assert j.thresholds == {"busBandwidthGBps": "value >= 460"}
    text = j.derived[0].text
    assert text.startswith("busBandwidthGBps >= 460 (production: H100 intra-node acceptance line, source ")
    assert "azurehpc-health-checks" in text


@pytest.mark.parametrize("stage, bar", [("bring-up", 296), ("burn-in", 333), ("preproduction", 351.5), ("production", 370)])
def test_each_stage_is_its_stated_fraction_of_the_inter_node_line(stage, bar):
    j = _judge(stage, scope=Scope("inter-node", 4))
    assert j.derived[0].bar == bar and j.thresholds["busBandwidthGBps"] == f"value >= {bar:g}"


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
    assert _judge("production", scope=Scope("inter-node", 4), nics=None).state == NO_BASELINE
    assert _judge("production", scope=Scope("inter-node", 128)).state == NO_BASELINE


def test_scope_follows_test_scale_and_group_size():
    assert scope_of("intra-node", None, False) == Scope("intra-node", 1)
    assert scope_of("full-scale", 1, False).scope == "intra-node"
    assert scope_of("intra-rack", 18, True) == Scope("mnnvl", 18)
    assert scope_of("full-scale", 4, False) == Scope("inter-node", 4)


@pytest.mark.parametrize("stage", STAGES)
def test_derived_bar_never_exceeds_the_acceptance_line_at_any_covered_size(stage):
    for nodes in range(2, 33):  # every group size the entry covers
        j = _judge(stage, scope=Scope("inter-node", nodes))
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


_ = (CertificationSpec, FieldProblem)
