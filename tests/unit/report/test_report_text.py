"""The text report reproduces the shared fixtures and the seeds' sample byte for byte."""

from __future__ import annotations

from pathlib import Path

import pytest

import report_samples as samples
from nvcre.report import build_report
from nvcre.report.text import WIDTH, render_text


def _fixture_text(fixtures_dir: Path, name: str) -> str:
    text = (fixtures_dir / "reports" / name).read_text()
    return text.split("--- results.json ---")[0].rstrip("\n") + "\n\n"


@pytest.mark.parametrize(
    "fixture, builder",
    [
        ("nvcre-cert-report-excluded-node-incomplete.txt", samples.excluded_incomplete),
        ("nvcre-cert-report-hardware-failed.txt", samples.hardware_failed),
        ("nvcre-cert-report-threshold-violation.txt", samples.threshold_violation),
    ],
)
def test_text_matches_fixture(fixtures_dir, fixture, builder):
    expected = _fixture_text(fixtures_dir, fixture)
    assert render_text(build_report(builder())) == expected


def test_text_matches_seeds_passing_sample(data_dir):
    seed = next(p for p in (data_dir / "seeds").iterdir() if "nvcrectl-20260806-162730" in p.read_text())
    lines = seed.read_text().splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith("╔"))
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("│  Result:")) + 1
    expected = "\n" + "\n".join(lines[start : end + 1]) + "\n\n"
    assert render_text(build_report(samples.passing_gb300())) == expected


def test_every_line_fits_the_box():
    text = render_text(build_report(samples.seeds_failure()))
    for line in text.splitlines():
        if line.startswith(("│", "┌", "└", "├", "╔", "║", "╚")):
            assert len(line) == WIDTH, line


def test_failure_sample_names_nodes_reasons_and_hints():
    text = render_text(build_report(samples.seeds_failure()))
    assert "✗  gpu-node-07  ThresholdViolation" in text
    assert "✗  gpu-node-12  HardwareFailureDetected" in text
    assert "Status:    Failed" in text
    assert "Runtime:   42m 18s" in text
    assert "Result:       FAILED" in text
    assert "Categories:   1/2 passed" in text
    assert "Failed Nodes: 2" in text
    assert "kubectl describe node gpu-node-12" in text
    assert "412.30 GB/s  LOW" in text
    assert "Pod:  wf-ar-group-1-launcher-x7k2p" in text
    assert "Node: gpu-node-09 / Exit: 1 (Error)" in text


def test_env_names_shown_values_never():
    report = build_report(samples.seeds_failure())
    text = render_text(report)
    assert "NCCL_SOCKET_IFNAME" in text and "NCCL_DEBUG" in text
    assert "eth0-secret-value" not in text and "INFO," not in text
    assert "eth0-secret-value" not in report.model_dump_json()


def test_blocked_category_shows_blocked_line_and_progress():
    objs = samples.seeds_failure()
    objs.root["status"]["conditions"] = [samples.cond("InProgress", "WorkflowRunning", "Certification in progress")]
    objs.root["status"]["categoryStatuses"][0]["status"] = "InProgress"
    wf = objs.workflows[0]
    wf["status"]["conditions"] = [
        samples.cond(
            "InProgress",
            "JobSchedulingBlocked",
            "job wf-ar-group-1 scheduling blocked: 0/16 nodes are available: 8 Insufficient nvidia.com/gpu",
        )
    ]
    wf["status"]["orchestration"]["groups"][1]["phase"] = "Running"
    del wf["status"]["orchestration"]["groups"][1]["completionTime"]
    text = render_text(build_report(objs))
    assert "Status:    Running" in text
    assert "Blocked:   job wf-ar-group-1 scheduling blocked:" in text
    assert "Insufficient nvidia.com/gpu" in text
    assert "Groups:    1/2 done" in text
    assert "Result:       RUNNING" in text


def test_resolved_env_names_come_from_the_rendered_workload():
    objs = samples.seeds_failure()
    objs.workflows[0]["spec"]["jobTemplate"] = {
        "spec": {
            "workload": {
                "native": {
                    "launcher": {"containers": [{"name": "l", "env": [{"name": "NCCL_IB_HCA", "value": "mlx5_0,mlx5_1"}]}]},
                    "workers": {"containers": [{"name": "w", "env": [{"name": "FI_PROVIDER", "value": "efa"}]}]},
                }
            }
        }
    }
    report = build_report(objs)
    assert {"NCCL_IB_HCA", "FI_PROVIDER", "NCCL_DEBUG"} <= set(report.categories[0].env)
    assert "mlx5_0" not in report.model_dump_json() and "efa" not in render_text(report)


def test_diagnose_section_from_the_workflow_status():
    objs = samples.seeds_failure()
    wf = objs.workflows[0]
    wf["status"]["orchestration"]["testScale"] = "diagnose"
    wf["status"]["orchestration"]["diagnose"] = {
        "stage": "complete",
        "round": 3,
        "healthyNodes": [f"gpu-node-{i:02d}" for i in range(1, 17) if i not in (7, 12)],
        "suspectNodes": ["gpu-node-07"],
        "suspectLinks": [["gpu-node-03", "gpu-node-11"]],
        "notes": ["cross-rack links are certified by a clean re-run after the repair"],
    }
    report = build_report(objs)
    d = report.categories[0].diagnose
    assert (d.stage, d.rounds, d.healthy_count, d.suspect_nodes) == ("complete", 3, 14, ["gpu-node-07"])
    assert d.max_bw == "412.30 GB/s" and d.max_bw_group == "clique-0"
    text = render_text(report)
    assert "  Diagnosis:" in text and "Stage:     complete" in text and "Healthy:   14 nodes" in text
    assert "Suspect:   gpu-node-07" in text and "Links:     gpu-node-03 <-> gpu-node-11" in text
    assert "Scale:     diagnose" in text and "Nodes/Job" not in text.split("training/")[0]
    assert "testScale: diagnose" not in text  # no hint to run what already ran
    assert all(len(line) == 66 for line in text.splitlines() if line and line[0] in "│┌└├")
