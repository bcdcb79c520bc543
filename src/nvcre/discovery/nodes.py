"""Which nodes a Certification or WorkloadRun targets, and why the others are left out.

Pure: Node objects as plain dicts in, ``Selection`` out. Every node that matched the
user's target but will not run gets an ``{name, reason, message}`` exclusion, so the
report can say INCOMPLETE and name it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from nvcre.api.quantity import parse_quantity

GPU_PRESENT_LABEL = "nvidia.com/gpu.present"
UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"
GPU_RESOURCE = "nvidia.com/gpu"


@dataclass
class Selection:
    selected: list[dict[str, Any]] = field(default_factory=list)
    excluded: list[dict[str, str]] = field(default_factory=list)  # [{name, reason, message}]

    @property
    def names(self) -> list[str]:
        return [name_of(n) for n in self.selected]


def name_of(node: Mapping[str, Any]) -> str:
    return (node.get("metadata") or {}).get("name", "")


def labels_of(node: Mapping[str, Any]) -> Mapping[str, str]:
    return (node.get("metadata") or {}).get("labels") or {}


def target_dict(target: Any) -> dict[str, Any]:
    """A TargetSpec (pydantic model or dict, camelCase) as a plain camelCase dict."""
    if target is None:
        return {}
    if hasattr(target, "model_dump"):
        return target.model_dump(by_alias=True, exclude_none=True)
    return dict(target)


def requirement_matches(labels: Mapping[str, str], req: Mapping[str, Any], *, numeric: bool = False) -> bool:
    """One nodeSelectorRequirement against a node's labels. ``numeric``: Gt/Lt compare integers
    as the scheduler does (pod affinity, ``workloads.placement``); without it other operators
    never match, as in the reference's node filter (discovery)."""
    key, op, values = req.get("key"), req.get("operator"), list(req.get("values") or [])
    if op == "In":
        return key in labels and labels[key] in values
    if op == "NotIn":
        return key not in labels or labels[key] not in values
    if op == "Exists":
        return key in labels
    if op == "DoesNotExist":
        return key not in labels
    if numeric and op in ("Gt", "Lt") and key in labels and len(values) == 1:
        try:
            have, bound = int(labels[key]), int(values[0])
        except ValueError:
            return False
        return have > bound if op == "Gt" else have < bound
    return False


def _taint_matches(taint: Mapping[str, Any], selector: Mapping[str, Any]) -> bool:
    if taint.get("key") != selector.get("key"):
        return False
    if selector.get("value") and taint.get("value", "") != selector["value"]:
        return False
    if selector.get("effect") and taint.get("effect") != selector["effect"]:
        return False
    return True


def select_target_nodes(nodes: Sequence[Mapping[str, Any]], target: Any) -> Selection:
    """Apply the target: nodeSelector, matchExpressions, nodeNames, taintSelectors, then
    skip cordoned nodes (unless the unschedulable taint is selected) and nodes without
    ``nvidia.com/gpu.present=true``. Only nodes the user's filters matched are reported
    as excluded; the result is sorted by name."""
    spec = target_dict(target)
    selector = spec.get("nodeSelector") or {}
    expressions = spec.get("matchExpressions") or []
    names = set(spec.get("nodeNames") or [])
    taint_selectors = spec.get("taintSelectors") or []
    opt_in_cordoned = any(t.get("key") == UNSCHEDULABLE_TAINT for t in taint_selectors)
    result = Selection()
    for node in sorted(nodes, key=name_of):
        labels = labels_of(node)
        if any(labels.get(k) != v for k, v in selector.items()):
            continue
        if not all(requirement_matches(labels, e) for e in expressions):
            continue
        if names and name_of(node) not in names:
            continue
        taints = (node.get("spec") or {}).get("taints") or []
        if not all(any(_taint_matches(t, s) for t in taints) for s in taint_selectors):
            continue
        if (node.get("spec") or {}).get("unschedulable") and not opt_in_cordoned:
            if labels.get(GPU_PRESENT_LABEL) == "true":
                result.excluded.append(
                    {"name": name_of(node), "reason": "Cordoned",
                     "message": "node is cordoned (spec.unschedulable); add a taintSelector for "
                     f"{UNSCHEDULABLE_TAINT} to certify it"}
                )
            continue
        if labels.get(GPU_PRESENT_LABEL) != "true":
            continue
        result.selected.append(dict(node))
    return result


def allocatable_gpus(node: Mapping[str, Any], field: str = "allocatable") -> int:
    """Allocatable ``nvidia.com/gpu`` (``field="capacity"``: the installed count); 0 when
    absent or unreadable (meaning unknown)."""
    raw = ((node.get("status") or {}).get(field) or {}).get(GPU_RESOURCE)
    if raw is None:
        return 0
    try:
        return int(parse_quantity(str(raw)))
    except (ValueError, TypeError):
        return 0


def gpu_condition_failures(node: Mapping[str, Any]) -> list[str]:
    """The node's GPU conditions that report a problem, as "Type=Status (reason)".

    The same rule as the ``gpu-health-condition`` detector: a condition naming the GPU
    that ends in Healthy/Ready is bad when False; any other GPU condition when True.
    """
    bad = []
    for c in (node.get("status") or {}).get("conditions") or []:
        kind = str(c.get("type", ""))
        if "gpu" not in kind.lower():
            continue
        positive = kind.lower().endswith(("healthy", "ready"))
        if (positive and c.get("status") == "False") or (not positive and c.get("status") == "True"):
            bad.append(f"{kind}={c.get('status')}" + (f" ({c['reason']})" if c.get("reason") else ""))
    return bad


def capacity_filter(nodes: Sequence[Mapping[str, Any]], gpus_per_node: int) -> Selection:
    """Drop nodes that report fewer allocatable GPUs than one job asks for.

    A missing or zero value is unknown (DRA clusters publish no device-plugin count),
    so the node is kept rather than silently lost.
    """
    result = Selection()
    for node in nodes:
        have = allocatable_gpus(node)
        if 0 < have < gpus_per_node:
            result.excluded.append(
                {"name": name_of(node), "reason": "InsufficientGPUCapacity",
                 "message": f"node has {have} allocatable nvidia.com/gpu; the job needs {gpus_per_node} per node"}
            )
        else:
            result.selected.append(dict(node))
    return result


def tolerations_for(target: Any) -> list[dict[str, str]]:
    """The tolerations a target's taintSelectors imply: Equal with a value, else Exists."""
    out = []
    for sel in target_dict(target).get("taintSelectors") or []:
        tol: dict[str, str] = {"key": sel["key"]}
        if sel.get("value"):
            tol.update(operator="Equal", value=sel["value"])
        else:
            tol["operator"] = "Exists"
        if sel.get("effect"):
            tol["effect"] = sel["effect"]
        out.append(tol)
    return out
