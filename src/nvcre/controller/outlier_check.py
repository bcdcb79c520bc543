"""The fleet-relative outlier pass at the end of a Workflow's last iteration.

Pure over the Workflow status dict (the caller writes it in its one status write and
emits the returned Events): each group's headline is compared with the median of the
groups of the same shape (nvcre.judge.outliers). By default an outlier is a warning (a
``PerformanceOutlier`` condition, an Event, the report); with ``failOnOutlier`` the
group fails with reason PerformanceOutlier, which makes it a candidate for the existing
isolation (controller/isolation.py) so the slow node, not the whole group, is named.
"""

from __future__ import annotations

from nvcre.api.workflow import MAX_STATUS_OUTLIERS
from nvcre.controller import conditions as c
from nvcre.controller.judging import FAIL_ON_OUTLIER_ANNOTATION, OUTLIER_FRACTION_ANNOTATION, judging_of
from nvcre.judge.outliers import DEFAULT_FRACTION, GroupFigure, find_outliers
from nvcre.objpath import dig

PERFORMANCE_OUTLIER = "PerformanceOutlier"
MAX_OUTLIERS = MAX_STATUS_OUTLIERS  # the worst ones (find_outliers sorts them); the condition gives the count


def headline(measured: dict) -> float | None:
    """A Job's headline figure: peak bus bandwidth, else TFLOP/s per GPU."""
    for key in ("busBandwidthGBps", "avgTFLOPsPerGPU"):
        value = measured.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
            return round(float(value), 2)
    return None


def _fraction(wf: dict) -> float:
    raw = dig(wf, "metadata", "annotations", OUTLIER_FRACTION_ANNOTATION)
    try:
        value = float(raw) if raw else DEFAULT_FRACTION
    except ValueError:
        return DEFAULT_FRACTION
    return value if 0 < value <= 1 else DEFAULT_FRACTION


def fail_on_outlier(wf: dict) -> bool:
    return dig(wf, "metadata", "annotations", FAIL_ON_OUTLIER_ANNOTATION) == "true"


def _shape(gpus: int | None, nodes: int, scale: str | None) -> str:
    per = f" x {gpus} GPUs" if gpus else ""
    scope = "intra-node" if nodes == 1 or scale == "intra-node" else ("intra-rack" if scale == "intra-rack" else "inter-node")
    return f"{nodes} node{'s' if nodes != 1 else ''}{per}, {scope}"


def apply(st: dict, wf: dict, iteration: int) -> list[tuple[str, str, str]]:
    """Record outliers on the status in place; return the Events to emit after the write."""
    orch = st.setdefault("orchestration", {})
    scale = orch.get("testScale")
    if scale == "diagnose" or orch.get("diagnose"):
        return []
    gpus = judging_of(wf).get("gpusPerNode")
    shapes: dict[int, str] = {}
    figures = [
        GroupFigure(g["name"], tuple(g.get("nodes") or ()), float(g["headline"]),
                    shapes.get(len(g["nodes"])) or shapes.setdefault(len(g["nodes"]), _shape(gpus, len(g["nodes"]), scale)))
        for g in orch.get("groups") or []
        if g.get("headline") is not None and g.get("nodes")
    ]
    if not figures:
        return []
    check = find_outliers(figures, _fraction(wf))
    orch["outlierCheck"] = check.note
    if not check.outliers:
        return []
    orch["performanceOutliers"] = [o.to_dict() for o in check.outliers[:MAX_OUTLIERS]]
    failing = fail_on_outlier(wf)
    summary = f"{len(check.outliers)} group(s) below {check.outliers[0].fraction:g} x the median of their shape: " + "; ".join(
        o.message for o in check.outliers[:4])
    c.set_condition(st.setdefault("conditions", []), PERFORMANCE_OUTLIER, True, PERFORMANCE_OUTLIER, summary[:1024],
                    generation=dig(wf, "metadata", "generation"))
    events = [("Warning", PERFORMANCE_OUTLIER, o.message[:1024]) for o in check.outliers[:16]]
    if failing:
        by_name = {g["name"]: g for g in orch.get("groups") or []}
        failed = st.setdefault("failedGroups", [])
        named = set()
        for o in check.outliers:
            g = by_name.get(o.group)
            if g is None or g.get("phase") == "Failed":
                continue
            g["phase"] = "Failed"
            failed.append({"name": o.group, "iteration": iteration, "nodes": list(o.nodes)[:1024],
                           "reason": PERFORMANCE_OUTLIER, "message": o.message[:1024]})
            named.update(o.nodes)
        if named:
            entries = [{"name": n, "reason": c.NodeReason.THRESHOLD_VIOLATION} for n in sorted(named)]
            st["failedNodes"], _ = c.merge_failed_nodes(st.get("failedNodes"), entries)
            st["failedNodeCount"] = len({n["name"] for n in st["failedNodes"]})
    return events


def isolation_threshold(wf: dict) -> dict[str, str]:
    """For an isolation started by outliers with no bandwidth threshold: the outlier bar as one."""
    orch = dig(wf, "status", "orchestration") or {}
    outliers = orch.get("performanceOutliers") or []
    if not outliers:
        return {}
    bar = min(float(o["fraction"]) * float(o["median"]) for o in outliers)
    return {"busBandwidthGBps": f"value >= {round(bar, 2):g}"}
