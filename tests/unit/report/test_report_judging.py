"""Every report format says how each category was judged, and what the run cost.

Issue 14's audit: Markdown showed a category nothing judged as "✅ Succeeded", JUnit had
no derived bar, regressions or GPU-hours, and the text summary counted it as passed.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest
import yaml

import report_samples as samples
from nvcre.report import build_report
from nvcre.report.render import render

FORMATS = ("text", "json", "yaml", "html", "markdown", "junit")
SOURCE = "NVIDIA/cluster-readiness-engine:docs/designs/021-performance-threshold-enforcement.md"


def _render(fmt: str, stage: str | None = None) -> str:
    return render(build_report(samples.judged_out_of_the_box(stage)), fmt)


def _flat(text: str) -> str:
    """The words of a rendering, whatever it wraps or escapes (text cards wrap long lines)."""
    for junk in ("│", "\n", "&gt;", "&amp;"):
        text = text.replace(junk, " " if junk != "&gt;" else ">")
    return " ".join(text.replace("-  ", "-").split())


@pytest.mark.parametrize("fmt", FORMATS)
def test_not_judged_outliers_regressions_and_gpu_hours_in_every_format(fmt):
    out = _flat(_render(fmt))
    assert "NOT JUDGED" in out or '"judged": false' in out or "judged: false" in out
    assert "no thresholds and no stage" in out
    assert "measured 184.97 GB/s, below 0.9 x the median 371.95 GB/s" in out  # PerformanceOutlier
    assert "h100-node-09" in out and "372.4" in out and "burn-in/cert-yesterday" in out  # Regression
    assert "64" in out and ("GPU-hours" in out or "gpuHours" in out)


@pytest.mark.parametrize("fmt", FORMATS)
def test_derived_bar_and_its_source_in_every_format(fmt):
    out = _flat(_render(fmt, "production"))
    assert "busBandwidthGBps >= 370 (production: H100 inter-node 2-32 nodes acceptance line" in out
    assert SOURCE in out.replace(" ", "") or SOURCE in out


def test_markdown_never_shows_a_category_nothing_judged_as_succeeded():
    md = _render("markdown")
    assert "### ⚠️ communication/nccl-all-reduce: NOT JUDGED" in md
    assert "✅" not in md
    assert "| Categories | 0/1 passed, 1 not judged |" in md
    assert "| GPU-hours | 64.00 |" in md
    assert "| `h100-node-09` | 297.2 | 372.4 | burn-in/cert-yesterday |" in md


def test_text_summary_count_is_honest_beside_not_judged():
    text = _render("text")
    assert "Categories:   0/1 passed, 1 not judged" in text
    assert "Result:       NOT JUDGED" in text
    assert "1/1 passed" not in text
    assert "Status:    NOT JUDGED (workload Succeeded)" in text
    judged = _render("text", "production")
    assert "Categories:   1/1 passed" in judged and "not judged" not in judged


def test_json_and_yaml_carry_the_counts_and_the_judging_facts():
    for doc in (json.loads(_render("json")), yaml.safe_load(_render("yaml"))):
        assert (doc["categoriesPassed"], doc["categoriesNotJudged"], doc["categoriesTotal"]) == (0, 1, 1)
        assert doc["gpuHours"] == 64.0
        cat = doc["categories"][0]
        assert cat["judged"] is False and cat["gpuHours"] == 64.0
        assert cat["outliers"][0]["group"] == "group-1"
        assert cat["regressions"][0]["previousRun"] == "burn-in/cert-yesterday"
    derived = json.loads(_render("json", "production"))["categories"][0]
    assert derived["stage"] == "production" and derived["derivedThresholds"][0].startswith("busBandwidthGBps >= 370")


def test_junit_properties_regressions_and_the_bar_on_each_group():
    root = ET.fromstring(_render("junit"))
    suite = root.find("testsuite")
    props = {p.get("name"): p.get("value") for p in suite.find("properties")}
    assert props["judged"] == "false" and props["gpuHours"] == "64.00" and props["gpuHoursTotal"] == "64.00"
    cases = {c.get("name"): c for c in suite.findall("testcase")}
    assert cases["judged"].find("error").get("message").startswith("NOT JUDGED: no thresholds")
    assert "last pass 372.4" in cases["regression h100-node-09"].find("system-err").text
    assert root.get("failures") == "0"  # warnings are not failures
    staged = ET.fromstring(_render("junit", "production")).find("testsuite")
    props = [(p.get("name"), p.get("value")) for p in staged.find("properties")]
    assert ("stage", "production") in props
    assert any(n == "derivedThreshold" and SOURCE in v for n, v in props)
    group = next(c for c in staged.findall("testcase") if c.get("name").startswith("group group-0"))
    assert "bar: busBandwidthGBps >= 370" in group.find("system-out").text


def test_an_outlier_group_is_never_ticked_in_the_text_report():
    """A group that passed its (absent) thresholds but is a PerformanceOutlier is marked '!'
    with OUTLIER beside its figure, not '✓', in the per-group rows of the text report."""
    from nvcre.report.text import _group_rows

    report = build_report(samples.judged_out_of_the_box(None))
    category = next(c for c in report.categories if c.outliers)
    slow = category.outliers[0].group
    groups = [g for g in category.groups if g.name == slow]
    assert groups, "the sample's outlier group must be among its groups"
    rows = _group_rows(groups, set(), {slow})
    assert rows[0].lstrip().startswith("!") and "OUTLIER" in rows[1], rows
    assert _group_rows(groups, set())[0].lstrip().startswith("✓")
