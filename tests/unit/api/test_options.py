"""merge_options follows the reference's rules: replace wholesale, except env and labels."""

from __future__ import annotations

from nvcre.api.certification import CertificationSpec
from nvcre.api.options import CategoryOptions, EnvVar, WorkloadMetadata, merge_env, merge_labels, merge_options


def _opts(**kw) -> CategoryOptions:
    return CategoryOptions.model_validate(kw)


def test_category_value_replaces_global():
    merged = merge_options(_opts(nodesPerJob=8, testScale="intra-rack"), _opts(nodesPerJob=2))
    assert merged.nodes_per_job == 2
    assert merged.test_scale == "intra-rack"


def test_unset_and_empty_category_values_keep_the_global_one():
    merged = merge_options(
        _opts(image="nvcr.io/a:1", thresholds={"busBandwidthGBps": "value >= 900"}, imagePullSecrets=[{"name": "s"}]),
        _opts(thresholds={}, imagePullSecrets=[]),
    )
    assert merged.image == "nvcr.io/a:1"
    assert merged.thresholds == {"busBandwidthGBps": "value >= 900"}
    assert [s.name for s in merged.image_pull_secrets] == ["s"]


def test_maps_and_lists_other_than_env_and_labels_replace_wholesale():
    merged = merge_options(
        _opts(thresholds={"busBandwidthGBps": "value >= 900", "algBandwidthGBps": "value > 1"}),
        _opts(thresholds={"goodputRatio": "value >= 0.9"}),
    )
    assert merged.thresholds == {"goodputRatio": "value >= 0.9"}


def test_false_and_zero_are_set_values():
    merged = merge_options(_opts(enableMNNVL=True, mlnxPerNode=4, maxConcurrent=3), _opts(enableMNNVL=False, mlnxPerNode=0, maxConcurrent=0))
    assert merged.enable_mnnvl is False
    assert merged.mlnx_per_node == 0
    assert merged.max_concurrent == 0


def test_env_merges_per_name_category_wins_and_order_is_stable():
    merged = merge_options(
        _opts(env=[{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]),
        _opts(env=[{"name": "B", "value": "20"}, {"name": "C", "value": "3"}]),
    )
    assert [(v.name, v.value) for v in merged.env] == [("A", "1"), ("B", "20"), ("C", "3")]


def test_labels_merge_per_key_and_a_category_cannot_remove_a_global_label():
    merged = merge_options(
        _opts(workloadMetadata={"labels": {"environment": "burn-in", "team": "a"}}),
        _opts(workloadMetadata={"labels": {"team": "b", "kueue.x-k8s.io/queue-name": "q"}}),
    )
    assert merged.workload_metadata.labels == {"environment": "burn-in", "team": "b", "kueue.x-k8s.io/queue-name": "q"}


def test_no_options_anywhere_gives_empty_options():
    merged = merge_options(None, None)
    assert merged.model_dump(exclude_none=True) == {}


def test_global_options_come_inline_from_the_certification_spec():
    spec = CertificationSpec.model_validate(
        {
            "target": {},
            "testScale": "intra-node",
            "env": [{"name": "NCCL_DEBUG", "value": "INFO"}],
            "categories": [
                {"domain": "communication", "variant": "nccl-all-reduce", "options": {"testScale": "full-scale"}},
                {"domain": "training", "variant": "nemotron5-8b"},
            ],
        }
    )
    assert spec.options_for(0).test_scale == "full-scale"
    assert spec.options_for(1).test_scale == "intra-node"
    assert [v.name for v in spec.options_for(1).env] == ["NCCL_DEBUG"]


def test_startup_stall_timeout_any_category_value_wins():
    merged = merge_options(_opts(startupStallTimeoutSeconds=1200), _opts(startupStallTimeoutSeconds=60))
    assert merged.startup_stall_timeout_seconds == 60


def test_merge_helpers_for_catalog_layers():
    catalog = [EnvVar(name="NCCL_DEBUG", value="WARN"), EnvVar(name="X", value="1")]
    assert [(v.name, v.value) for v in merge_env(catalog, [EnvVar(name="NCCL_DEBUG", value="INFO")])] == [
        ("NCCL_DEBUG", "INFO"),
        ("X", "1"),
    ]
    assert merge_env(None, []) is None
    assert merge_labels({"a": "1"}, None, {"a": "2", "b": "3"}) == {"a": "2", "b": "3"}
    assert merge_labels(None, {}) is None


def test_merge_does_not_mutate_its_inputs():
    glob = _opts(env=[{"name": "A", "value": "1"}], workloadMetadata={"labels": {"a": "1"}})
    merge_options(glob, _opts(env=[{"name": "A", "value": "2"}], workloadMetadata={"labels": {"a": "2"}}))
    assert glob.env[0].value == "1"
    assert glob.workload_metadata.labels == {"a": "1"}
    assert isinstance(glob.workload_metadata, WorkloadMetadata)
