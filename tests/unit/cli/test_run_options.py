"""`certification run` option flags (section 7.3 of the reference) and the registry pull Secret."""

from __future__ import annotations

import base64
import json

import pytest

from nvcre.cli.main import main
from nvcre.cli.run_options import (
    SPEC_KEYS, OptionFlags, add_pull_secret, apply_option_flags, pull_secret, registry_credentials, with_registry,
)
from nvcre.errors import UserError


def _spec():
    return {"target": {}, "categories": [
        {"domain": "communication", "variant": "nccl-all-reduce"},
        {"domain": "training", "variant": "nemotron5-8b",
         "options": {"workloadRegistry": "other.example", "imagePullSecrets": [{"name": "own"}], "maxSteps": 7}},
    ]}


def test_every_flag_lands_on_its_spec_option():
    from nvcre.api.certification import CertificationSpec

    flags = OptionFlags(nodes_per_job=2, gpus_per_node=4, enable_checkpoint=True, enable_mnnvl=False, max_steps=-1,
                        exit_duration_mins=9, startup_stall_timeout_seconds=600, repeat_count=3, max_restarts=1,
                        storage_class="fast", image="nvcr.io/nvidia/pytorch:25.08-py3",
                        workload_registry="mirror.local:5000", stage="burn-in", regression_margin=0.15)
    spec = _spec()
    used = apply_option_flags(spec, flags)
    assert sorted(used) == sorted(flag for _, flag in SPEC_KEYS.values())
    parsed = CertificationSpec.model_validate(spec)
    for attr, (key, _) in SPEC_KEYS.items():
        model_attr = "storage_class_name" if attr == "storage_class" else attr
        assert getattr(parsed, model_attr) == getattr(flags, attr), key
    # a category's own option stays (merge rule) except the registry: the whole run uses the mirror
    assert spec["categories"][1]["options"]["maxSteps"] == 7
    assert spec["categories"][1]["options"]["workloadRegistry"] == "mirror.local:5000"


def test_unset_flags_change_nothing():
    spec = _spec()
    assert apply_option_flags(spec, OptionFlags()) == []
    assert spec == _spec()


def test_bad_registry_flag_is_refused_by_name():
    with pytest.raises(UserError, match="--workload-registry"):
        apply_option_flags(_spec(), OptionFlags(workload_registry="https://mirror/"))


def test_credentials_rules():
    assert registry_credentials(None, None, None) is None
    assert registry_credentials("m.local", "u", "p") == ("u", "p")
    with pytest.raises(UserError, match="need --workload-registry"):
        registry_credentials(None, "u", "p")
    with pytest.raises(UserError, match="give both"):
        registry_credentials("m.local", "u", None)


def test_pull_secret_is_a_dockerconfigjson_for_the_mirror_host():
    secret = pull_secret("run1", "ns1", "mirror.local:5000/nvcr", "alice", "s3cret")
    assert secret["type"] == "kubernetes.io/dockerconfigjson"
    assert secret["metadata"] == {"name": "nvcrectl-pull-run1", "namespace": "ns1",
                                  "labels": {"app.kubernetes.io/managed-by": "nvcrectl"}}
    config = json.loads(base64.b64decode(secret["data"][".dockerconfigjson"]))
    entry = config["auths"]["mirror.local:5000"]
    assert entry["username"] == "alice" and base64.b64decode(entry["auth"]).decode() == "alice:s3cret"


def test_pull_secret_reaches_every_category():
    spec = _spec()
    add_pull_secret(spec, "nvcrectl-pull-x")
    add_pull_secret(spec, "nvcrectl-pull-x")  # once only
    assert spec["imagePullSecrets"] == [{"name": "nvcrectl-pull-x"}]
    assert spec["categories"][1]["options"]["imagePullSecrets"] == [{"name": "own"}, {"name": "nvcrectl-pull-x"}]


def test_with_registry_on_models_overrides_category_registries():
    from nvcre.api.certification import CertificationSpec

    spec = with_registry(CertificationSpec.model_validate(_spec()), "mirror.local")
    assert spec.workload_registry == "mirror.local"
    assert spec.categories[1].options.workload_registry == "mirror.local"
    assert spec.categories[0].options is None


@pytest.mark.parametrize("argv,needle", [
    (["--nodes-per-job", "0"], "nodesPerJob"),
    (["--max-steps", "-2"], "maxSteps"),
    (["--repeat-count", "0"], "repeatCount"),
    (["--regression-margin", "0"], "spec.regressionMargin"),
    (["--regression-margin", "1"], "spec.regressionMargin"),
    (["--regression-margin", "-0.2"], "spec.regressionMargin"),
    (["--regression-margin", "ten"], "--regression-margin"),
    (["--workload-registry", "http://x/"], "--workload-registry"),
    (["--workload-registry-username", "u", "--workload-registry-password", "p"], "need --workload-registry"),
])
def test_bad_flag_is_refused_before_any_cluster_call(tmp_path, capsys, argv, needle):
    code = main(["certification", "run", "--category", "communication/nccl-all-reduce",
                 "--kubeconfig", str(tmp_path / "missing"), *argv])
    captured = capsys.readouterr()
    assert code != 0 and captured.out == ""
    assert needle in captured.err, captured.err
    assert "Traceback" not in captured.err


def test_an_unknown_stage_flag_is_refused_naming_the_field():
    from nvcre.api.certification import CertificationSpec

    spec = _spec()
    apply_option_flags(spec, OptionFlags(stage="golden"))
    with pytest.raises(Exception) as err:
        CertificationSpec.model_validate(spec)
    assert "stage" in str(err.value) and "production" in str(err.value)
