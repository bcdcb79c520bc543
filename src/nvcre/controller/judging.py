"""Where the controller applies the judging cores (nvcre.judge) to its objects.

At composition: the stage derives thresholds into the Workflow's spec (so Jobs, isolation
and diagnose judge them like the user's) and the decision, with its source, travels as
an annotation that the Workflow's plan copies into its status. At the end of a category:
the Certification reads that decision back to say whether the category was judged.
"""

from __future__ import annotations

import json
from typing import Any

from nvcre.controller import labels as L
from nvcre.judge.stages import NONE, Judging, judging_for, scope_of
from nvcre.objpath import dig

JUDGING_ANNOTATION = L.PREFIX + "judging"
OUTLIER_FRACTION_ANNOTATION = L.PREFIX + "outlier-fraction"
FAIL_ON_OUTLIER_ANNOTATION = L.PREFIX + "fail-on-outlier"
REGRESSION_MARGIN_ANNOTATION = L.PREFIX + "regression-margin"


def option(spec: dict, category: dict, name: str) -> Any:
    """A category option after the merge: the category's value, else the spec's."""
    own = dig(category, "options", name)
    return own if own is not None else spec.get(name)


def judging_for_category(spec: dict, category: dict, resolved, total_nodes: int | None) -> Judging:
    """The Judging of one Certification category on the detected hardware."""
    from nvcre.catalog.data import load_catalog

    entry = load_catalog().lookup(category["domain"], category["variant"])
    measured = tuple((entry.data.get("thresholds") or ()) if entry else ())
    npj = resolved.nodes_per_job or total_nodes
    if resolved.test_scale == "diagnose":
        npj = 2  # diagnose judges pairs
    return judging_for(
        category=resolved.key,
        stage=option(spec, category, "stage"),
        user_thresholds=resolved.thresholds,
        measured_keys=measured,
        arch=resolved.gpu_arch,
        platform=resolved.platform,
        nics_per_node=resolved.mlnx_per_node,
        scope=scope_of(resolved.test_scale, npj, bool(resolved.enable_mnnvl)),
    )


def annotate(body: dict, spec: dict, category: dict, judging: Judging, resolved=None) -> dict:
    """Put the derived thresholds into the Workflow spec and the decision into annotations."""
    annotations = body["metadata"].setdefault("annotations", {})
    record = judging.to_dict()
    record["gpusPerNode"] = int(getattr(resolved, "gpus_per_node", 0) or 0)
    record["nicsPerNode"] = int(getattr(resolved, "mlnx_per_node", 0) or 0)
    if getattr(resolved, "image", None):
        record["image"] = str(resolved.image)[:256]
    inferred = dig(getattr(resolved, "extra", None), "inferred")
    if inferred:
        record["inferred"] = list(inferred)[:8]
    annotations[JUDGING_ANNOTATION] = json.dumps(record, separators=(",", ":"), sort_keys=True)
    fraction = option(spec, category, "outlierFraction")
    if fraction is not None:
        annotations[OUTLIER_FRACTION_ANNOTATION] = f"{float(fraction):g}"
    if option(spec, category, "failOnOutlier"):
        annotations[FAIL_ON_OUTLIER_ANNOTATION] = "true"
    margin = option(spec, category, "regressionMargin")
    if margin is not None:  # the ledger update reads it when the Workflow ends
        annotations[REGRESSION_MARGIN_ANNOTATION] = repr(float(margin))
    if judging.derived and not dig(body["spec"], "validation", "performance"):
        body["spec"]["validation"] = {"performance": {"enabled": True, "thresholds": {"thresholds": dict(judging.thresholds)}}}
    return body


def judging_of(wf: dict | None) -> dict:
    """The decision recorded on a Workflow (status first, then the annotation); {} when none."""
    if not wf:
        return {}
    recorded = dig(wf, "status", "orchestration", "judging")
    if recorded:
        return recorded
    raw = dig(wf, "metadata", "annotations", JUDGING_ANNOTATION)
    if not raw:
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def category_fields(wf: dict | None) -> dict:
    """What a Certification category status records of its Workflow's judging."""
    judging = judging_of(wf)
    if not judging:  # a Workflow composed before judging existed: nothing to claim
        return {}
    out: dict[str, Any] = {"judged": bool(judging.get("judged")), "judging": str(judging.get("message") or "")[:1024]}
    if judging.get("stage"):
        out["stage"] = judging["stage"]
    outliers = dig(wf, "status", "orchestration", "performanceOutliers") or []
    if outliers:
        out["outliers"] = len(outliers)
    return out


def not_judged(entries: list[dict]) -> bool:
    """Any finished category that nothing judged."""
    return any(e.get("judged") is False for e in entries)


__all__ = ["NONE", "annotate", "category_fields", "judging_for_category", "judging_of", "not_judged"]
