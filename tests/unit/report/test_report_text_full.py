"""The full text layout (the CLI's, at the terminal's width) of the brief's failure
sample, pinned by goldens at 80 and 200 columns, plus the facts a reader needs for
gpu-node-07 whatever the width. Regenerate with NVCRE_UPDATE_GOLDEN=1 after review."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import report_samples as samples
from nvcre.report import build_report
from nvcre.report.text import render_text

GOLDEN = Path(__file__).parent / "golden"


@pytest.mark.parametrize("width", [80, 200])
def test_failure_sample_golden(width):
    text = render_text(build_report(samples.seeds_failure()), width)
    path = GOLDEN / f"failure-sample-{width}.txt"
    if os.environ.get("NVCRE_UPDATE_GOLDEN"):
        path.write_text(text)
    assert text == path.read_text()


@pytest.mark.parametrize("width", [80, 120, 200, None])
def test_gpu_node_07_evidence_at_any_width(width):
    text = render_text(build_report(samples.seeds_failure()), width)
    lines = text.splitlines()
    if width is not None:
        assert all(len(line) <= width for line in lines)
    assert "..." not in text.replace("report ... -o", "")  # nothing cut
    flat = " ".join(line.strip("│ ").strip() for line in lines)
    node07 = flat.split("✗  gpu-node-07  ThresholdViolation", 1)[1].split("✗  gpu-node-12", 1)[0]
    assert "Measured:  412.30 GB/s (busBandwidthGBps)" in node07
    assert "Bar:       value >= 900, set in the category's options.thresholds" in node07
    assert "Peers:" in node07
    assert "Next step:" in node07 and "NICs" in node07


def test_peer_median_over_complete_groups_only():
    """Group-1 crashed (a GPU fell off the bus): its partial sweep is not a peer."""
    report = build_report(samples.seeds_failure())
    ev = next(n for n in report.categories[0].failed_nodes if n.name == "gpu-node-07").evidence
    assert ev.peers == 0 and ev.peer_median is None
    text = render_text(report, 100)
    assert "no other group has a complete measurement" in text


def test_peer_median_and_low_rows_per_group():
    objs = samples.seeds_failure()
    # group-1 healthy: a complete sweep at 930 GB/s, no crash
    objs.jobs[1] = samples.job("wf-ar-group-1", "wf-ar", [samples.cond("Succeeded", "WorkloadCompleted")],
                               measurements=samples._sweep(930.0))
    del objs.workflows[0]["status"]["orchestration"]["groups"][1]["bandwidth"]
    objs.workflows[0]["status"]["orchestration"]["groups"][1]["phase"] = "Succeeded"
    report = build_report(objs)
    c = report.categories[0]
    ev = next(n for n in c.failed_nodes if n.name == "gpu-node-07").evidence
    assert ev.peer_median == "930.00 GB/s" and ev.peers == 1
    # the category table is the bad group's, not a mean of 412 and 930
    assert max(r.bus_bw_gbps for r in c.bandwidth) == pytest.approx(412.3)
    text = render_text(report, 100)
    assert "Peers:     median 930.00 GB/s over 1 other group" in text
    bad = text.split("Bandwidth, group-0", 1)[1].split("Bandwidth, group-1", 1)[0]
    good = text.split("Bandwidth, group-1", 1)[1].split("│  Next step", 1)[0]
    big_rows = [l for l in bad.splitlines() if " GB/s " in l and ("GB  " in l or "MB  " in l)]
    assert big_rows and all("LOW" in l for l in big_rows)  # LOW on every row below the bar
    assert "16 GB" in good and all("LOW" not in l for l in good.splitlines() if "16 GB" in l)


def test_own_pod_log_tail_whole_lines():
    objs = samples.seeds_failure()
    log = objs.jobs[1]["status"]["failureLog"]
    log["nodeName"] = "gpu-node-12"
    log["tail"] = "ment of a cut line\n" + "\n".join(f"rank {i}: NCCL WARN Cuda failure 'unspecified launch failure'" for i in range(12))
    log["tail"] = log["tail"][-600:]
    report = build_report(objs)
    ev = next(n for n in report.categories[0].failed_nodes if n.name == "gpu-node-12").evidence
    assert ev.pod == "wf-ar-group-1-launcher-x7k2p" and ev.node == "gpu-node-12"
    assert len(ev.log_tail) == 8 and all(line.startswith("rank ") for line in ev.log_tail)
    text = render_text(report, 120)
    assert "Log tail (its own pod):" in text and "ment of a cut line" not in text


def test_reference_width_is_unchanged_by_evidence():
    """66 columns stays the reference's layout: no evidence block, no per-group tables."""
    text = render_text(build_report(samples.seeds_failure()))
    assert "Measured:" not in text and "Cordon:" not in text
    assert all(len(line) == 66 for line in text.splitlines() if line and line[0] in "│┌└├")


def test_html_has_a_bandwidth_table_per_group_and_the_evidence():
    from nvcre.report.html import render_html

    objs = samples.seeds_failure()
    objs.jobs[1] = samples.job("wf-ar-group-1", "wf-ar", [samples.cond("Succeeded", "WorkloadCompleted")],
                               measurements=samples._sweep(930.0))
    del objs.workflows[0]["status"]["orchestration"]["groups"][1]["bandwidth"]
    objs.workflows[0]["status"]["orchestration"]["groups"][1]["phase"] = "Succeeded"
    page = render_html(build_report(objs))
    assert "averaged" not in page
    assert page.count("<table class='bw'>") == 2
    assert "group-0 (clique-0, 8 nodes) · LOW" in page and "group-1 (clique-1, 8 nodes)" in page
    assert "<b>measured</b> 412.30 GB/s" in page and "<b>peers</b> median 930.00 GB/s" in page
    assert "kubectl cordon gpu-node-07<" in page


def test_threshold_violation_names_the_nodes_own_pod_and_its_tail():
    """A failed Certification Job records each node's own pod (status.podLogs): the
    ThresholdViolation on gpu-node-07 names that pod and shows its whole-line tail."""
    objs = samples.seeds_failure()
    objs.jobs[0]["status"]["podLogs"] = [
        {"podName": "wf-ar-group-0-launcher-q2w9z", "nodeName": "gpu-node-01", "exitCode": 0, "tail": "launcher\n"},
        {"podName": "wf-ar-group-0-worker-6", "nodeName": "gpu-node-07", "exitCode": 0, "reason": "Completed",
         "tail": "NCCL INFO NET/IB : mlx5_3:1/IB speed 100000 (degraded)\nrank 48 done\n"},
    ]
    report = build_report(objs)
    c = report.categories[0]
    ev = next(n for n in c.failed_nodes if n.name == "gpu-node-07").evidence
    assert (ev.pod, ev.node, ev.job) == ("wf-ar-group-0-worker-6", "gpu-node-07", "wf-ar-group-0")
    assert ev.log_tail == ["NCCL INFO NET/IB : mlx5_3:1/IB speed 100000 (degraded)", "rank 48 done"]
    assert c.pod_logs == []  # a Certification's pods are evidence per node, not a WorkloadRun's pod list
    text = render_text(report, 120)
    node07 = text.split("✗  gpu-node-07  ThresholdViolation", 1)[1].split("✗  gpu-node-12", 1)[0]
    assert "pod wf-ar-group-0-worker-6 on gpu-node-07" in node07 and "mlx5_3:1/IB speed 100000" in node07
    assert "Pod Logs" not in text


def test_failed_group_reason_shows_the_unit_and_reads_in_the_singular():
    text = render_text(build_report(samples.seeds_failure()), 120)
    assert 'violated: measured 412.30 GB/s, expression: value >= 900' in text and "412.3000" not in text
    assert "across 1 iteration;" in text and "1 iterations" not in text
    # the reference layout keeps the condition's own words
    assert "1 iterations" in render_text(build_report(samples.seeds_failure()))


def test_workload_next_step_selects_the_jobs_pods():
    from nvcre.report.evidence import next_step
    from nvcre.report.model import CategoryReport, FailedNode, GroupResult

    category = CategoryReport(domain="diagnostics", variant="dcgm-level4", status="Failed",
                              groups=[GroupResult(name="group-3", nodes=["gpu-node-09"], job_name="cert-diag-group-3-iter-1")])
    kind, step = next_step(FailedNode(name="gpu-node-09", reason="WorkloadFailed", group="group-3"), category, "burn-in")
    assert kind == "workload"
    assert "-l nvcre.nvidia.com/job=cert-diag-group-3-iter-1 --field-selector spec.nodeName=gpu-node-09" in step
    assert "job=group-3" not in step


def test_junit_and_html_count_one_node_in_the_singular():
    from nvcre.report.html import render_html
    from nvcre.report.junit import render_junit
    from nvcre.report.model import CategoryReport, FailedGroup, GroupResult, Report

    c = CategoryReport(domain="diagnostics", variant="dcgm-level4", status="Failed",
                       groups=[GroupResult(name="group-0", nodes=["gpu-node-01"], phase="Failed")],
                       failed_groups=[FailedGroup(name="group-0", node_count=1, nodes=["gpu-node-01"], reason="1 groups failed across 1 iterations")])
    report = Report(kind="Certification", name="c", categories=[c])
    assert 'name="group group-0 (1 node)"' in render_junit(report)
    page = render_html(report)
    assert "(1 node): 1 group failed across 1 iteration" in page and "1 nodes" not in page
