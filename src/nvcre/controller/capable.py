"""Why a target has no capable node: the reason per node, and for a lone node the
category that can still diagnose it.

A Certification that targets only a node the category excludes (a GPU fell off the
bus, so the node has fewer allocatable GPUs than the job asks for) would otherwise end
"no capable nodes" and leave the node that most needs a diagnosis without one. The
message names each node with what excluded it (its allocatable GPUs, a failing GPU
health condition) and, for a single node, the catalog's diagnostics category with the
options that let it run there. Pure: excluded entries and Node dicts in, text out.
"""

from __future__ import annotations

from nvcre.discovery.nodes import UNSCHEDULABLE_TAINT, allocatable_gpus, gpu_condition_failures
from nvcre.objpath import dig

MAX_LISTED = 10  # nodes named in the message; the status keeps a message on as many
MAX_NODE_MESSAGE = 256  # ExcludedNode.message's bound


def node_detail(entry: dict, node: dict | None) -> str:
    """What excluded the node: the exclusion's message plus any failing GPU health condition."""
    parts = [entry["message"]] if entry.get("message") else []
    failing = gpu_condition_failures(node) if node else []
    if failing:
        parts.append(f"GPU health condition failing: {', '.join(failing)}")
    return "; ".join(parts)


def node_reason(entry: dict, node: dict | None) -> str:
    """"<Reason> (<what excluded it>)", e.g. "InsufficientGPUCapacity (node has 7 ...; GPU health ...)"."""
    detail = node_detail(entry, node)
    return (entry.get("reason") or "Excluded") + (f" ({detail})" if detail else "")


def diagnostics_key() -> str | None:
    """The catalog category that diagnoses one node's GPUs (a per-node diagnostics entry)."""
    from nvcre.catalog.data import load_catalog

    for entry in load_catalog().sorted_entries():
        if entry.domain == "diagnostics" and entry.launch == "per-node":
            return entry.key
    return None


def diagnosis_hint(entry: dict, node: dict | None, category: str) -> str | None:
    """What to run so the node gets a diagnosis, or None when nothing would let it run."""
    diag = diagnostics_key()
    if diag is None or node is None:
        return None
    changes = []
    if entry.get("reason") == "InsufficientGPUCapacity" and allocatable_gpus(node) > 0:
        changes.append(f"options.gpusPerNode: {allocatable_gpus(node)} (the GPUs it can still allocate)")
    elif entry.get("reason") == "Cordoned" and gpu_condition_failures(node):
        changes.append(f"a taintSelector for {UNSCHEDULABLE_TAINT} (it is cordoned)")
    if not changes:
        return None
    verb = "rerun" if category == diag else "run"
    return f"{verb} {diag} on {entry['name']} with {' and '.join(changes)} to diagnose it"


def explain(excluded: list[dict], nodes: dict[str, dict], category: str) -> tuple[str, list[dict]]:
    """(the Failed message, the excluded entries with a per-node message on the first ones)."""
    lines = [f"{e['name']} excluded: {node_reason(e, nodes.get(e['name']))}" for e in excluded[:MAX_LISTED]]
    more = f"; and {len(excluded) - MAX_LISTED} more" if len(excluded) > MAX_LISTED else ""
    message = f"no capable nodes for {category}: " + "; ".join(lines) + more
    if len(excluded) == 1 and (hint := diagnosis_hint(excluded[0], nodes.get(excluded[0]["name"]), category)):
        message += f"; {hint}"
    entries = [{"name": e["name"], "reason": e["reason"]} for e in excluded]
    for entry, source in zip(entries, excluded[:MAX_LISTED]):
        if detail := node_detail(source, nodes.get(source["name"])):
            entry["message"] = detail[:MAX_NODE_MESSAGE]
    return message, entries


def target_nodes(all_nodes: list[dict]) -> dict[str, dict]:
    return {dig(n, "metadata", "name"): n for n in all_nodes}
