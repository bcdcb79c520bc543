"""Scalars and round trips: quantities, durations, camelCase dumps, parse(dump(x)) == x."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from nvcre.api import KINDS, conditions
from nvcre.api.common import parse_duration
from nvcre.api.load import format_path, load_file, parse_object
from nvcre.api.quantity import parse_quantity
from nvcre.api.workflow import DiagnoseStatus

SEEDS = sorted((Path(__file__).resolve().parents[3] / "examples" / "seeds").glob("*.yaml"))


@pytest.mark.parametrize(
    "text,value",
    [(64, Decimal(64)), ("500Gi", Decimal(500 * 2**30)), ("250m", Decimal("0.25")), ("1.5", Decimal("1.5")),
     ("1e3", Decimal(1000)), ("2k", Decimal(2000)), ("-1", Decimal(-1))],
)
def test_quantities(text, value):
    assert parse_quantity(text) == value


@pytest.mark.parametrize("text", ["", "1 Gi", "Gi", "1GB", True, "1.2.3"])
def test_bad_quantities(text):
    with pytest.raises(ValueError):
        parse_quantity(text)


def test_durations():
    assert parse_duration("1h30m") == 5400
    assert parse_duration("500ms") == 0.5
    assert parse_duration("15m") == 900
    with pytest.raises(ValueError, match="not a duration"):
        parse_duration("1 hour")


@pytest.mark.parametrize("path", SEEDS, ids=lambda p: p.name)
def test_round_trip_is_stable(path: Path):
    obj = load_file(path)[0]
    dumped = obj.to_k8s()
    assert parse_object(dumped).to_k8s() == dumped
    assert "_" not in "".join(dumped["spec"])  # camelCase keys on the wire


def test_camel_case_aliases_for_acronyms():
    obj = load_file(next(p for p in SEEDS if "gang-scheduled" in p.name))[0]
    assert "enableMNNVL" in obj.to_k8s()["spec"]


def test_diagnose_status_keeps_planner_fields():
    state = DiagnoseStatus.model_validate({"stage": "bisection", "round": 2, "evidence": {"g1": "failed"}})
    assert state.to_k8s()["evidence"] == {"g1": "failed"}


def test_format_path():
    assert format_path(("spec", "categories", 0, "options", "testScale")) == "spec.categories[0].options.testScale"
    assert format_path(("spec", "labels", "kueue.x-k8s.io/queue-name")) == "spec.labels[kueue.x-k8s.io/queue-name]"
    assert format_path(("spec", "framework", "function-after[_exactly_one(), FrameworkSpec]")) == "spec.framework"


def test_every_kind_is_registered_and_parses_minimal_objects():
    assert set(KINDS) == {"Certification", "Workflow", "Job", "WorkloadRun", "GoodputMeasurement",
                          "BandwidthMeasurement", "LogProfile", "ReportExportPolicy", "ReportExport", "NodeReadiness"}
    webhook = {"url": "https://tracker.example.com/nvcre"}
    minimal_specs = {
        "ReportExportPolicy": {"source": {"namespaces": ["gpu-certs"]}, "webhook": webhook},
        "ReportExport": {"sourceRef": {"namespace": "gpu-certs", "name": "c", "uid": "u1"},
                         "policyRef": {"name": "p", "uid": "u2"}, "webhook": webhook},
        "Workflow": {"jobTemplate": {"spec": {"workload": {"native": {"jobs": []}}}}, "orchestration": {}},
        "Job": {"workload": {"trainJob": {"runtimeRef": {"name": "r"}}}},
        "GoodputMeasurement": {"jobRef": {"kind": "Job", "name": "j"}, "logProfileRef": "megatron-training"},
        "BandwidthMeasurement": {"jobRef": {"kind": "Job", "name": "j"}, "logProfileRef": "nccl-bandwidth"},
        "LogProfile": {"timestamp": {"layout": "2006-01-02T15:04:05Z07:00"}},
        "NodeReadiness": {"nodeName": "gpu-node-01"},
    }
    for kind, spec in minimal_specs.items():
        obj = parse_object({"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": kind, "metadata": {"name": "x"}, "spec": spec})
        assert type(obj).__name__ == kind


def test_condition_reasons_cover_every_tier():
    for tier, reasons in conditions.REASONS_BY_TIER.items():
        assert reasons.IN_PROGRESS and reasons.SUCCEEDED and reasons.FAILED, tier
    assert conditions.FailedNodeReasons.ALL == ("WorkloadFailed", "ThresholdViolation", "HardwareFailureDetected")
    assert conditions.JobReasons.THRESHOLD_VIOLATED != conditions.FailedNodeReasons.THRESHOLD_VIOLATION


def test_status_objects_read_back_from_the_server_parse():
    obj = {
        "apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job",
        "metadata": {"name": "j", "namespace": "ns", "uid": "u", "managedFields": [{"manager": "kubectl"}]},
        "spec": {"workload": {"native": {}}, "schedulingStallGraceSeconds": 300},
        "status": {"phase": "Failed", "failedNodeCount": 1,
                   "conditions": [{"type": "Failed", "status": "True", "reason": "WorkloadFailed", "message": "x",
                                   "lastTransitionTime": "2026-11-30T07:00:00Z", "observedGeneration": 1}],
                   "failedNodes": [{"name": "n1", "reason": "WorkloadFailed"}],
                   "measurements": {"busBandwidthGBps": 932.09, "bandwidth": [
                       {"sizeBytes": 17179869184, "algBwGBps": 473.44, "busBwGBps": 932.09, "samples": 9}]}},
    }
    job = parse_object(obj)
    assert job.status.measurements.bandwidth[0].bus_bw_gbps == 932.09
    assert job.status.failed_nodes[0].reason == "WorkloadFailed"


def test_a_kubectl_list_document_is_expanded(tmp_path):
    listing = tmp_path / "list.yaml"
    listing.write_text(
        "apiVersion: v1\nkind: List\nitems:\n"
        "- apiVersion: nvcre.nvidia.com/v1alpha1\n  kind: LogProfile\n  metadata: {name: a}\n"
        "  spec: {timestamp: {layout: x}}\n"
        "- apiVersion: nvcre.nvidia.com/v1alpha1\n  kind: LogProfile\n  metadata: {name: b}\n"
        "  spec: {timestamp: {layout: x}}\n"
    )
    assert [o.name for o in load_file(listing)] == ["a", "b"]


def test_the_message_counts_further_problems():
    from nvcre.errors import ManifestError

    obj = {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "WorkloadRun", "metadata": {"name": "x"},
           "spec": {"numNodes": 0, "framework": {"exec": {"command": ["true"]}}}}
    with pytest.raises(ManifestError) as caught:
        parse_object(obj)
    assert "(and 1 more problem)" in str(caught.value)
