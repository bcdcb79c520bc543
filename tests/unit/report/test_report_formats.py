"""JSON, JUnit, Markdown and HTML renderings of the same report model."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

import report_samples as samples
from nvcre.errors import UserError
from nvcre.report import SCHEMA_VERSION, build_report
from nvcre.report.json_report import json_schema, render_json
from nvcre.report.junit import render_junit
from nvcre.report.markdown import render_markdown
from nvcre.report.html import render_html
from nvcre.report.render import render


def _subset(expected, actual, path="$"):
    """Every key the reference JSON has, ours has with the same value (failedNodes null == [])."""
    if isinstance(expected, dict):
        assert isinstance(actual, dict), path
        for k, v in expected.items():
            if k == "failedNodes" and v is None:
                assert actual.get(k) == [], f"{path}.{k}"
                continue
            assert k in actual, f"{path}.{k} missing"
            _subset(v, actual[k], f"{path}.{k}")
    elif isinstance(expected, list):
        assert isinstance(actual, list) and len(actual) == len(expected), path
        for i, (e, a) in enumerate(zip(expected, actual)):
            _subset(e, a, f"{path}[{i}]")
    else:
        assert expected == actual, f"{path}: {expected!r} != {actual!r}"


@pytest.mark.parametrize(
    "fixture, builder",
    [
        ("nvcre-cert-report-hardware-failed.txt", samples.hardware_failed),
        ("nvcre-cert-report-threshold-violation.txt", samples.threshold_violation),
    ],
)
def test_json_carries_the_reference_keys(fixtures_dir: Path, fixture, builder):
    expected = json.loads((fixtures_dir / "reports" / fixture).read_text().split("--- results.json ---")[1])
    ours = json.loads(render_json(build_report(builder())))
    _subset(expected, ours)
    assert ours["schemaVersion"] == SCHEMA_VERSION


def test_json_snapshot_bandwidth_shape(fixtures_dir: Path):
    snap = json.loads((fixtures_dir / "reports" / "nvcre-report-snapshot-complete-bandwidth.json").read_text())["report"]
    ours = json.loads(render_json(build_report(samples.passing_gb300())))
    # same keys per bandwidth row as the reference snapshot, plus the numbers behind them
    assert set(snap["categories"][0]["bandwidth"][0]) <= set(ours["categories"][0]["bandwidth"][0])
    row = ours["categories"][0]["bandwidth"][0]
    assert row == {
        "size": "16 GB",
        "sizeBytes": 16 << 30,
        "algBW": "473.44 GB/s",
        "busBW": "932.09 GB/s",
        "algBWGBps": 473.44,
        "busBWGBps": 932.09,
        "samples": 9,
        "low": False,
        "provisional": False,
    }
    assert set(snap) - {"exclusionReason"} <= set(ours)


def test_json_failure_details_groups_logs_and_transport():
    ours = json.loads(render_json(build_report(samples.seeds_failure())))
    assert ours["result"] == "FAILED"
    assert ours["failedNodes"] == ["gpu-node-07", "gpu-node-12"]
    details = {d["name"]: d for d in ours["failedNodeDetails"]}
    assert details["gpu-node-07"]["reason"] == "ThresholdViolation"
    assert details["gpu-node-12"]["reason"] == "HardwareFailureDetected"
    assert "Xid 79" in details["gpu-node-12"]["message"]
    ar = ours["categories"][0]
    g1 = next(g for g in ar["failedGroups"] if g["name"] == "group-1")
    assert g1["failureLog"]["podName"] == "wf-ar-group-1-launcher-x7k2p"
    assert g1["failureLog"]["exitCode"] == 1
    assert [g["transport"] for g in ar["groups"]] == [["IB"], ["IB"]]
    assert [len(g["bandwidth"]) for g in ar["groups"]] == [6, 4]  # group-1 died after 1 GB
    assert ar["groups"][0]["belowMin"] is True
    assert ar["busBWMinimumGBps"] == 900.0
    assert ours["env"] == ["NCCL_SOCKET_IFNAME"]
    assert "eth0-secret-value" not in json.dumps(ours)


def test_json_schema_is_generated_from_the_model():
    schema = json_schema()
    assert schema["$id"] == SCHEMA_VERSION
    assert "failedNodeDetails" in schema["properties"]
    assert "failureLog" in json.dumps(schema)


def test_junit_suite_per_category_case_per_group_and_failed_node():
    xml = render_junit(build_report(samples.seeds_failure()))
    root = ET.fromstring(xml)
    suites = {s.get("name"): s for s in root.findall("testsuite")}
    assert set(suites) == {"communication/nccl-all-reduce", "training/nemotron5-8b"}
    ar = suites["communication/nccl-all-reduce"]
    names = [c.get("name") for c in ar.findall("testcase")]
    assert "node gpu-node-07" in names and "node gpu-node-12" in names
    assert any(n.startswith("group group-0") for n in names)
    assert int(ar.get("failures")) == 4  # two groups and two nodes
    node12 = next(c for c in ar.findall("testcase") if c.get("name") == "node gpu-node-12")
    assert node12.find("failure").get("type") == "HardwareFailureDetected"
    assert suites["training/nemotron5-8b"].get("failures") == "0"
    assert root.get("failures") == "4"


def test_junit_incomplete_is_an_error_case():
    root = ET.fromstring(render_junit(build_report(samples.excluded_incomplete())))
    assert root.get("errors") == "1"
    assert "node002" in root.find(".//error").text


def test_markdown_for_a_ticket():
    md = render_markdown(build_report(samples.seeds_failure()))
    assert md.startswith("# Certification `gpu-cluster-cert`: **FAILED**")
    assert "| `gpu-node-07` | ThresholdViolation | communication/nccl-all-reduce |" in md
    assert "| 16 GB |" in md and "LOW" in md


def test_html_is_self_contained_and_shows_the_evidence():
    page = render_html(build_report(samples.seeds_failure()))
    assert page.startswith("<!DOCTYPE html>")
    # no external assets: nothing fetched from anywhere
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", page)
    assert "<script" not in page and "@import" not in page and "url(" not in page
    assert page.count("<svg") == 1  # the all-reduce plot (training has no bandwidth)
    assert page.count("<polyline") == 2  # one line per group
    assert "minimum 900 GB/s" in page
    assert "gpu-node-07" in page and "HardwareFailureDetected" in page
    assert "clique-0 (8 nodes" in page and "clique-1 (8 nodes · 2 failed" not in page
    assert "Xid 79" in page
    assert "eth0-secret-value" not in page


def test_html_escapes_untrusted_text():
    objs = samples.seeds_failure()
    objs.jobs[1]["status"]["failedNodes"][0]["message"] = "<script>alert(1)</script>"
    page = render_html(build_report(objs))
    assert "<script>" not in page and "&lt;script&gt;" in page


def test_render_rejects_an_unknown_format():
    with pytest.raises(UserError, match="unknown format 'xml'"):
        render(build_report(samples.passing_gb300()), "xml")


def test_yaml_report_is_the_json_document():
    import json

    import yaml

    report = build_report(samples.seeds_failure())
    assert yaml.safe_load(render(report, "yaml")) == json.loads(render(report, "json"))


@pytest.mark.parametrize(
    "builder", [samples.seeds_failure, samples.passing_gb300, samples.excluded_incomplete, samples.hardware_failed]
)
def test_sample_statuses_are_valid_api_statuses(builder):
    """The samples use the API's real status shapes, so the builder reads what the controller writes."""
    from nvcre.api.certification import CertificationStatus
    from nvcre.api.job import JobStatus
    from nvcre.api.workflow import WorkflowStatus

    objs = builder()
    CertificationStatus.model_validate(objs.root["status"], by_alias=True, by_name=False)
    for wf in objs.workflows:
        WorkflowStatus.model_validate(wf["status"], by_alias=True, by_name=False)
    for job in objs.jobs:
        JobStatus.model_validate(job["status"], by_alias=True, by_name=False)


def test_schema_doc_names_every_field(repo_root):
    """docs/report-schema.md and the model list the same fields."""
    from nvcre.report.model import BandwidthRow, CategoryReport, Diagnosis, FailedGroup, FailedNode, GroupResult, Report

    doc = (repo_root / "docs" / "report-schema.md").read_text()
    for model in (Report, CategoryReport, BandwidthRow, GroupResult, FailedGroup, FailedNode, Diagnosis):
        for name, info in model.model_fields.items():
            alias = info.alias or name
            assert f"`{alias}`" in doc, f"{model.__name__}.{alias} is not documented in docs/report-schema.md"
