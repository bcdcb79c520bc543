"""Behaviours where nvcre must agree with the reference API (issue 11, item 2)."""

from __future__ import annotations

import pytest

from nvcre.api.gang import DEFAULT_QUEUE_LABEL_KEY, GangSchedulerSpec
from nvcre.api.load import parse_object
from nvcre.api.options import CategoryOptions, nic_resource_rule
from nvcre.api.workloadrun import WorkloadRunSpec
from nvcre.catalog.resolve import resolve_category
from nvcre.errors import ManifestError


def _run(**extra):
    spec = {"image": "img", "framework": {"exec": {"command": ["true"]}}, "numNodes": 1, **extra}
    return {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "WorkloadRun", "metadata": {"name": "r"}, "spec": spec}


def _cert(**spec):
    body = {"target": {}, "categories": [{"domain": "communication", "variant": "nccl-all-reduce"}], **spec}
    return {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Certification", "metadata": {"name": "c"}, "spec": body}


def test_empty_queue_label_key_means_the_default():
    gang = GangSchedulerSpec.model_validate({"schedulerName": "kai-scheduler", "queueLabelKey": ""})
    assert gang.queue_label_key == DEFAULT_QUEUE_LABEL_KEY == "kai.scheduler/queue"
    cert = parse_object(_cert(gangScheduler={"schedulerName": "kai-scheduler", "queueLabelKey": ""}))
    assert cert.spec.gang_scheduler.queue_label_key == "kai.scheduler/queue"
    run = parse_object(_run(gangScheduler={"schedulerName": "kai-scheduler", "queueLabelKey": ""}))
    assert run.spec.gang_scheduler.queue_label_key == "kai.scheduler/queue"
    r = resolve_category({"domain": "communication", "variant": "nccl-all-reduce"}, None, platform="aws", gpu_arch="h100",
                         gang_scheduler={"schedulerName": "kai-scheduler", "queueLabelKey": ""})
    assert r.labels["kai.scheduler/queue"] == "default-queue"
    with pytest.raises(ManifestError):
        parse_object(_run(gangScheduler={"schedulerName": "kai-scheduler", "queueLabelKey": "not a key"}))


@pytest.mark.parametrize("name", ["kubernetes.io/rdma", "k8s.io/nic", "example.k8s.io/ib"])
def test_workloadrun_nic_resource_refuses_reserved_domains_like_certification(name):
    with pytest.raises(ManifestError) as run_err:
        parse_object(_run(nicResourceName=name))
    with pytest.raises(ManifestError) as cert_err:
        parse_object(_cert(nicResourceName=name))
    assert run_err.value.field == "spec.nicResourceName"
    assert str(run_err.value).endswith("spec.nicResourceName: nicResourceName must not be under kubernetes.io/ or k8s.io/")
    assert str(cert_err.value).endswith("spec.nicResourceName: nicResourceName must not be under kubernetes.io/ or k8s.io/")


def test_one_nic_rule_serves_certification_options_and_workloadrun():
    rule = nic_resource_rule()
    assert rule in CategoryOptions.cel_rules() and rule in WorkloadRunSpec.cel_rules()
    assert parse_object(_run(nicResourceName="rdma/ib")).spec.nic_resource_name == "rdma/ib"


def test_unpinned_without_nodes_per_job_names_the_category():
    with pytest.raises(ManifestError) as caught:
        parse_object(_cert(placement="Unpinned"))
    assert "communication/nccl-all-reduce" in caught.value.message and "nodesPerJob" in caught.value.message
    cert = _cert()
    cert["spec"]["categories"] = [
        {"domain": "communication", "variant": "nccl-all-reduce", "options": {"nodesPerJob": 2}},
        {"domain": "training", "variant": "nemotron5-8b", "options": {"placement": "Unpinned"}},
    ]
    with pytest.raises(ManifestError) as caught:
        parse_object(cert)
    assert caught.value.field == "spec.categories[1].options.placement"
    assert "training/nemotron5-8b" in caught.value.message


def test_resolve_refuses_unpinned_without_nodes_per_job_naming_the_category():
    with pytest.raises(ManifestError) as caught:
        resolve_category({"domain": "training", "variant": "nemotron5-8b", "options": {"placement": "Unpinned"}}, None,
                         platform="aws", gpu_arch="h100", index=0)
    assert caught.value.field == "spec.categories[0].options.placement"
    assert "training/nemotron5-8b" in caught.value.message
    ok = resolve_category({"domain": "training", "variant": "nemotron5-8b",
                           "options": {"placement": "Unpinned", "nodesPerJob": 2}}, None, platform="aws", gpu_arch="h100")
    assert ok.placement == "Unpinned" and ok.nodes_per_job == 2


@pytest.mark.parametrize("field", ["succeeded", "failed"])
def test_report_export_retention_runs_from_an_hour_to_a_year(field):
    """As the reference: retention 1h to 8760h, in the model and in the CRD's own rule (the
    general 720h bound of run durations must not cap a record's lifetime)."""
    from nvcre.api.crd import build_crd
    from nvcre.api.reportexport import ReportExportPolicy, RetentionSpec

    from .schema_sim import problems

    schema = build_crd(ReportExportPolicy)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    retention = schema["properties"]["spec"]["properties"]["retention"]["properties"][field]
    for ok in ("1h", "8760h", "5000h"):
        assert getattr(RetentionSpec.model_validate({field: ok}), field) == ok
        assert problems(retention, ok) == [], ok
    for bad in ("59m", "8761h"):
        with pytest.raises(ValueError, match="1h to 8760h"):
            RetentionSpec.model_validate({field: bad})
        assert problems(retention, bad), bad
