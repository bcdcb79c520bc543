"""The report's judging facts: what judged a category, outliers, regressions, GPU-hours.

Read from the Workflow's status (``orchestration.judging``, ``performanceOutliers``,
``regressions``) and its Jobs; a pure function of the statuses like the rest of report/.
"""

from __future__ import annotations

import json
from datetime import datetime

from nvcre.report.model import CategoryReport, Outlier, Regression
from nvcre.objpath import dig

JUDGING_ANNOTATION = "nvcre.nvidia.com/judging"


def _parse(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        return datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    except ValueError:
        return None


def judging_record(wf: dict | None) -> dict:
    orch = dig(wf, "status", "orchestration") or {}
    if orch.get("judging"):
        return orch["judging"]
    raw = dig(wf, "metadata", "annotations", JUDGING_ANNOTATION)
    try:
        value = json.loads(raw) if raw else {}
    except ValueError:
        value = {}
    return value if isinstance(value, dict) else {}


def job_gpu_hours(job: dict, gpus_per_node: int) -> float | None:
    """GPU-hours one Job spent: workload running time x nodes x GPUs per node."""
    st = job.get("status") or {}
    start = _parse(st.get("workloadStartTime"))
    ends = [_parse(c.get("lastTransitionTime")) for c in st.get("conditions") or []
            if c.get("type") in ("Succeeded", "Failed") and c.get("status") == "True"]
    end = next((e for e in ends if e), None)
    nodes = len(dig(job, "spec", "nodes") or st.get("nodesRan") or [])
    if start is None or end is None or not nodes or gpus_per_node <= 0:
        return None
    seconds = max(0.0, (end - start).total_seconds()) - float(st.get("blockedSeconds") or 0)
    return max(0.0, seconds) * nodes * gpus_per_node / 3600.0


def add_judging(category: CategoryReport, wf: dict | None, jobs: list[dict], recorded: dict) -> None:
    record = judging_record(wf)
    if record:
        category.judged = bool(record.get("judged"))
        category.stage = record.get("stage")
        category.judging = record.get("message") or None
        category.derived_thresholds = [d.get("text") or f"{d.get('key')} {d.get('expression')}" for d in record.get("derived") or []]
        category.inferred = list(record.get("inferred") or [])
    elif recorded.get("judged") is not None:
        category.judged = bool(recorded["judged"])
        category.stage = recorded.get("stage")
        category.judging = recorded.get("judging")
    orch = dig(wf, "status", "orchestration") or {}
    # the status's camelCase keys (previousRun) are the models' aliases; unknown keys are ignored
    category.outliers = [Outlier.model_validate(o) for o in orch.get("performanceOutliers") or []]
    category.outlier_check = orch.get("outlierCheck")
    category.regressions = [Regression.model_validate(r) for r in orch.get("regressions") or []]
    gpus = int(record.get("gpusPerNode") or 0)
    hours = [h for j in jobs if (h := job_gpu_hours(j, gpus)) is not None]
    category.gpu_hours = round(sum(hours), 3) if hours else None


def judging_lines(category: CategoryReport) -> list[str]:
    """Short lines for text and HTML: never silent about an unjudged category."""
    lines: list[str] = []
    if category.judged is False:
        lines.append(f"NOT JUDGED: {(category.judging or 'no thresholds and no stage').removeprefix('not judged: ')}")
    for text in category.derived_thresholds:
        lines.append(f"Judged by: {text}")
    for o in category.outliers:
        lines.append(f"PerformanceOutlier: {o.message or o.group}")
    if category.outlier_check and not category.outliers:
        lines.append(f"Outliers: {category.outlier_check}")
    for r in category.regressions:
        lines.append(f"Regression: {r.message or r.node}")
    if category.inferred:
        lines.append("Inferred from the nodes: " + ", ".join(category.inferred))
    if category.gpu_hours is not None:
        lines.append(f"GPU-hours: {category.gpu_hours:.2f}")
    return lines
