"""Narrow a group's bandwidth-threshold miss down to the nodes or links behind it.

A full-scale or intra-rack group that misses a bandwidth threshold implicates every
node in it; the reference names them all, and the report then points at testScale
diagnose. With ``isolateFailures`` (default on) the Workflow does that step itself
before it decides: it creates a child Workflow with testScale diagnose over the failed
groups' nodes (the same category, thresholds and template), waits for its verdict and
then names only what the diagnosis convicted, each with the evidence. A diagnosis that
convicts nothing (the miss did not reproduce) or cannot run leaves the whole-group
attribution as it was, so isolation can only sharpen a verdict, never hide a failure.

The child is an ordinary Workflow owned by its parent (deterministic name, created if
absent), so a restarted controller adopts it and ``kubectl get workflows`` shows it.
"""

from __future__ import annotations

import copy

from nvcre.words import count
from nvcre.controller import conditions as c
from nvcre.controller import labels as L
from nvcre.controller import naming
from nvcre.controller.conditions import NodeReason, WorkflowReason
from nvcre.kube.resources import NVCRE_API_VERSION
from nvcre.objpath import dig

BANDWIDTH_KEYS = ("busBandwidthGBps", "algBandwidthGBps")
THRESHOLD_REASONS = ("ThresholdViolated", "PerformanceOutlier")
RUNNING, SUCCEEDED, FAILED = "Running", "Succeeded", "Failed"
MIN_NODES = 4  # below this the diagnosis borrows nodes of passing groups as proven-good partners
MAX_GROUPS = 128


def child_name(parent: str) -> str:
    return naming.truncate(f"{parent}-isolate", naming.MAX_WORKFLOW_NAME)


def is_isolation(wf: dict) -> bool:
    """Whether ``wf`` is itself an isolation diagnose (owned by a Workflow)."""
    return dig(L.controller_of(wf), "kind") == "Workflow"


def eligible_groups(wf: dict) -> list[dict]:
    """The failed groups whose only failing was a missed bandwidth threshold on several nodes.

    Groups where a health detector fired, that crashed or timed out are already
    attributed (or are not a bandwidth question) and are left alone.
    """
    spec = wf.get("spec") or {}
    orch = spec.get("orchestration") or {}
    if orch.get("isolateFailures") is False or orch.get("diagnose") or orch.get("testScale") == "diagnose" or is_isolation(wf):
        return []
    if dig(L.controller_of(wf), "kind") == "WorkloadRun":
        return []  # a user's own workload is run as asked, not re-run in pairs
    thresholds = dig(spec, "validation", "performance", "thresholds", "thresholds") or {}
    st = wf.get("status") or {}
    outlier_driven = any(g.get("reason") == "PerformanceOutlier" for g in st.get("failedGroups") or [])
    if not any(key in thresholds for key in BANDWIDTH_KEYS) and not outlier_driven:
        return []
    hardware = {n["name"] for n in st.get("failedNodes") or [] if n.get("reason") == NodeReason.HARDWARE_FAILURE_DETECTED}
    out = []
    for g in st.get("failedGroups") or []:
        nodes = g.get("nodes") or []
        if g.get("reason") in THRESHOLD_REASONS and len(nodes) >= 2 and not hardware & set(nodes):
            out.append(g)
    return out[:MAX_GROUPS]


def isolation_nodes(wf: dict, groups: list[dict]) -> list[str]:
    """The failed groups' nodes, plus nodes of passing groups when there are too few to
    find proven-good partners among them."""
    nodes = sorted({n for g in groups for n in g.get("nodes") or []})
    if len(nodes) >= MIN_NODES:
        return nodes
    failed = {n["name"] for n in dig(wf, "status", "failedNodes") or []}
    passing = sorted({
        n
        for g in dig(wf, "status", "orchestration", "groups") or []
        if g.get("phase") == SUCCEEDED
        for n in g.get("nodes") or []
    } - set(nodes) - failed)
    return sorted(nodes + passing[: MIN_NODES - len(nodes)])


def begin(st: dict, wf: dict, groups: list[dict], generation) -> None:
    """Record in the status (one write) that the groups are being narrowed down."""
    nodes = isolation_nodes(wf, groups)
    name = child_name(wf["metadata"]["name"])
    st.setdefault("orchestration", {})["isolation"] = {
        "workflow": name,
        "phase": RUNNING,
        "groups": [g["name"] for g in groups],
        "nodes": nodes,
    }
    c.set_status_phase(
        st, c.IN_PROGRESS, WorkflowReason.ISOLATING_FAULTS,
        f"{count(len(groups), 'group')} missed a bandwidth threshold; narrowing {count(len(nodes), 'node')} down with Workflow {name}",
        generation=generation,
    )


def child_body(parent: dict, nodes: list[str]) -> dict:
    """A diagnose Workflow over ``nodes`` running the parent's category, template and thresholds."""
    meta = parent["metadata"]
    spec = copy.deepcopy(parent.get("spec") or {})
    orch = spec.setdefault("orchestration", {})
    key = dig(orch, "topology", "topologyKey")
    for field in ("topology", "nodesPerJob", "isolateFailures", "placement"):
        orch.pop(field, None)
    execution = orch.get("execution") or {}
    orch["execution"] = {k: v for k, v in execution.items() if k in ("maxConcurrent", "timeoutPerJob")}
    orch["target"] = {"nodeNames": list(nodes)}
    orch["iterations"] = 1
    orch["testScale"] = "diagnose"
    orch["diagnose"] = {"minGroupSize": 2, **({"topologyKey": key} if key else {})}
    performance = dig(spec, "validation", "performance") or {}
    if not any(k in (dig(performance, "thresholds", "thresholds") or {}) for k in BANDWIDTH_KEYS):
        from nvcre.controller.outlier_check import isolation_threshold

        if bar := isolation_threshold(parent):  # outliers started it: the pairs are judged by the outlier bar
            spec["validation"] = {"performance": {"enabled": True, "thresholds": {"thresholds": bar}}}
    labels = {k: v for k, v in (meta.get("labels") or {}).items() if k != L.CERTIFICATION}
    labels[L.WORKFLOW] = meta["name"]  # the parent: `kubectl get workflows -l` finds its isolation
    annotations = dict(meta.get("annotations") or {})
    annotations[L.REQUESTED_TEST_SCALE] = "diagnose"
    return {
        "apiVersion": NVCRE_API_VERSION,
        "kind": "Workflow",
        "metadata": {
            "name": child_name(meta["name"]),
            "namespace": meta["namespace"],
            "labels": labels,
            "annotations": annotations,
            "ownerReferences": [L.owner_reference(parent)],
        },
        "spec": spec,
    }


def fold(st: dict, child: dict | None, note: str = "") -> str:
    """Apply the child's verdict to the parent's status; returns the summary for its message.

    Convicted nodes replace the whole-group ThresholdViolation entries of the isolated
    nodes; a link names both of its ends; anything inconclusive keeps the groups'
    attribution.
    """
    iso = st["orchestration"]["isolation"]
    isolated = set(iso.get("nodes") or [])
    cst = dig(child, "status") or {}
    diag = dig(cst, "orchestration", "diagnose") or {}
    findings = diag.get("findings") or {}
    links = findings.get("links") or []
    racks = findings.get("racks") or []
    convicted: list[dict] = []
    for n in cst.get("failedNodes") or []:
        if n.get("name") in isolated:
            convicted.append({k: v for k, v in n.items() if k in ("name", "reason", "message")})
    for link in links:
        for end, other in ((link["a"], link["b"]), (link["b"], link["a"])):
            if end in isolated and all(x["name"] != end for x in convicted):
                convicted.append({
                    "name": end, "reason": NodeReason.THRESHOLD_VIOLATION,
                    "message": f"link {link['a']}<->{link['b']} fails only with both ends ({other}): {link.get('message', '')}"[:1024],
                })
    rounds, tests = findings.get("rounds"), findings.get("tests")
    effort = f" in {count(rounds, 'round')}, {count(tests or 0, 'test')}" if rounds is not None else ""
    iso["links"] = [f"{x['a']}<->{x['b']}" for x in links][:256]
    iso["racks"] = [str(x.get("rack", "")) for x in racks][:64]
    if rounds is not None:
        iso["rounds"], iso["tests"] = int(rounds), int(tests or 0)
    decided = bool(convicted) and not racks and not findings.get("unresolved")
    if not decided:
        if child is None:
            why = note or "the isolation Workflow could not run"
        elif c.is_true(cst.get("conditions"), c.SUCCEEDED):
            why = f"the miss did not reproduce{effort}; every node of the groups stays named"
        else:
            why = (c.message_of(cst.get("conditions"), c.FAILED) or "isolation inconclusive") + "; every node of the groups stays named"
        iso["phase"], iso["message"] = FAILED, why[:1024]
        return why
    names = sorted({x["name"] for x in convicted})
    keep = [
        n for n in st.get("failedNodes") or []
        if not (n.get("name") in isolated and n.get("reason") == NodeReason.THRESHOLD_VIOLATION)
    ]
    st["failedNodes"], _ = c.merge_failed_nodes(keep, convicted)
    st["failedNodeCount"] = len({n["name"] for n in st["failedNodes"]})
    summary = f"isolated to {', '.join(names[:8])}{' …' if len(names) > 8 else ''}{effort}"
    for g in st.get("failedGroups") or []:
        if g.get("name") in set(iso.get("groups") or []):
            inside = [n for n in names if n in set(g.get("nodes") or [])]
            tail = f"; isolated to {', '.join(inside[:8])}" if inside else "; isolation cleared every node of this group"
            g["message"] = ((g.get("message") or "") + tail)[:1024]
    iso["phase"], iso["convicted"], iso["message"] = SUCCEEDED, names, summary[:1024]
    return summary
