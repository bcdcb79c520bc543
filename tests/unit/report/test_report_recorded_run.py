"""The report over objects recorded from a real run on the test bed (the seeds' failure
sample: 16 simulated H100 nodes, slow NIC on gpu-node-07, GPU lost on gpu-node-12).

data/failure-sample-run.json is what the API server held when the run ended, saved by
tests/e2e/test_cli_certification.py (managedFields stripped).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nvcre.report import RunObjects, build_report
from nvcre.report.html import render_html
from nvcre.report.json_report import render_json
from nvcre.report.text import WIDTH, render_text

DATA = Path(__file__).parent / "data" / "failure-sample-run.json"


@pytest.fixture(scope="module")
def report():
    d = json.loads(DATA.read_text())
    return build_report(
        RunObjects(
            root=d["root"],
            workflows=d["workflows"],
            jobs=d["jobs"],
            bandwidth_measurements=d["bandwidthMeasurements"],
            goodput_measurements=d["goodputMeasurements"],
            nodes=d["nodes"],
        )
    )


def test_verdict_and_attribution(report):
    assert report.result == "FAILED"
    assert (report.categories_passed, report.categories_total) == (1, 2)
    reasons = {(d.name, d.reason) for d in report.failed_node_details}
    assert ("gpu-node-07", "ThresholdViolation") in reasons
    assert ("gpu-node-12", "HardwareFailureDetected") in reasons
    assert report.excluded_nodes == ["gpu-node-12"]  # lost a GPU, so training left it out


def test_bandwidth_per_group_and_size(report):
    ar = report.categories[0]
    assert [g.transport for g in ar.groups] == [["IB"], ["IB"]]
    assert len(ar.bandwidth) == 32  # 8 B .. 16 GB, every size kept for JSON
    assert ar.groups[0].below_min and ar.bus_bw_minimum_gbps == 300
    assert ar.failed_groups[1].failure_log is not None


def test_text_is_compact_and_boxed(report):
    text = render_text(report)
    assert all(len(line) == WIDTH for line in text.splitlines() if line and line[0] in "│┌└├╔║╚")
    assert "smaller sizes in -o json" in text
    card = text.split("Failed Nodes:")[1]
    assert card.count("violated: measured") == 1  # the group's eight identical blames print once
    assert "8 nodes  ThresholdViolation" in text
    assert "testScale: diagnose" in text  # the whole group was blamed: bisecting it finds the node
    assert "kubectl describe node gpu-node-12" in text


def test_node_map_shows_failed_over_excluded(report):
    by_name = {n.name: n for n in report.node_results}
    assert by_name["gpu-node-12"].status == "Failed"
    assert any(r.startswith("excluded") for r in by_name["gpu-node-12"].reasons)
    assert by_name["gpu-node-09"].status == "Passed"
    assert len(by_name) == 16


def test_json_and_html_render(report):
    data = json.loads(render_json(report))
    assert len(data["categories"][0]["groups"][0]["bandwidth"]) == 32
    page = render_html(report)
    assert page.count("<polyline") == 2 and "minimum 300 GB/s" in page
