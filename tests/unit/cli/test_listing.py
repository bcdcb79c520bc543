"""`certification list`: one row per run from its status alone, in every listing format."""

from __future__ import annotations

import json
import sys
from datetime import datetime, timezone
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "report"))
import report_samples as samples  # noqa: E402

from nvcre.cli.listing import COLUMNS, WIDE, run_row  # noqa: E402
from nvcre.cli.output import write_rows  # noqa: E402


def _failed_cert() -> dict:
    root = samples.seeds_failure().root
    root["metadata"]["creationTimestamp"] = "2026-08-06T16:27:30Z"
    root["status"]["failedNodes"] = [{"name": "gpu-node-07", "reason": "ThresholdViolation"},
                                     {"name": "gpu-node-12", "reason": "HardwareFailureDetected"}]
    return root


def test_row_from_status():
    row = run_row(_failed_cert(), now=datetime(2026, 8, 6, 18, 30, tzinfo=timezone.utc))
    assert row["result"] == "FAILED" and (row["categoriesPassed"], row["categoriesTotal"]) == (1, 2)
    assert row["failedNodes"] == ["gpu-node-07", "gpu-node-12"] and row["age"] == "2h"
    passed = samples.passing_gb300().root
    assert run_row(passed)["result"] == "PASSED"
    assert run_row(samples.excluded_incomplete().root)["result"] in ("INCOMPLETE", "PASSED")


def test_every_listing_format(capsys):
    rows = [run_row(_failed_cert())]
    for fmt in ("json", "yaml"):
        write_rows(rows, fmt, columns=COLUMNS, wide_columns=WIDE, name=lambda r: r["name"],
                   document=lambda items: {"items": list(items)})
        out = capsys.readouterr().out
        doc = json.loads(out) if fmt == "json" else yaml.safe_load(out)
        assert doc["items"][0]["result"] == "FAILED"
    write_rows(rows, "name", columns=COLUMNS, name=lambda r: f"certification.nvcre.nvidia.com/{r['name']}")
    assert capsys.readouterr().out == "certification.nvcre.nvidia.com/gpu-cluster-cert\n"
    write_rows(rows, "wide", columns=COLUMNS, wide_columns=WIDE, name=lambda r: r["name"])
    wide = capsys.readouterr().out
    assert "FAILED NODES" in wide and "gpu-node-07, gpu-node-12" in wide
    write_rows(rows, "table", columns=COLUMNS, wide_columns=WIDE, name=lambda r: r["name"])
    table = capsys.readouterr().out
    assert table.splitlines()[0].split() == ["NAMESPACE", "NAME", "RESULT", "CATEGORIES", "FAILED", "AGE"]
    assert "FAILED NODES" not in table
