"""The --wait progress view: a live table on a terminal, change lines otherwise."""

from __future__ import annotations

import sys
from pathlib import Path

from rich.console import Console

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "report"))
import report_samples as samples  # noqa: E402

from nvcre.cli.run import _progress_lines, _progress_table  # noqa: E402
from nvcre.report import build_report  # noqa: E402


def _blocked_report():
    objs = samples.seeds_failure()
    objs.root["status"]["conditions"] = [samples.cond("InProgress", "WorkflowRunning", "Certification in progress")]
    objs.root["status"]["categoryStatuses"][0]["status"] = "InProgress"
    objs.root["status"]["categoryStatuses"][1]["status"] = "Pending"
    wf = objs.workflows[0]
    wf["status"]["conditions"] = [samples.cond("InProgress", "JobSchedulingBlocked", "0/16 nodes are available: 8 Insufficient nvidia.com/gpu")]
    wf["status"]["orchestration"]["groups"][1]["phase"] = "Running"
    return build_report(objs)


def test_progress_lines_show_phase_groups_and_blocked():
    lines = _progress_lines(_blocked_report(), 75)
    assert lines[0].startswith("[  1m15s] communication/nccl-all-reduce")
    assert "Running" in lines[0] and "1/2 groups" in lines[0]
    assert lines[1].strip() == "Blocked: 0/16 nodes are available: 8 Insufficient nvidia.com/gpu"
    assert "training/nemotron5-8b" in lines[2] and "Pending" in lines[2]


def test_live_table_renders_every_category():
    console = Console(record=True, width=140)
    console.print(_progress_table(_blocked_report(), 75, 5400))
    text = console.export_text()
    assert "RUNNING" in text and "elapsed 1m15s of 1h30m" in text
    assert "communication/nccl-all-reduce" in text and "1/2" in text and "Insufficient" in text
    assert "training/nemotron5-8b" in text and "Pending" in text
