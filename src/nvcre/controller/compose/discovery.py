"""Discovery aggregation: the nodes a target selects, the majority GPU architecture,
capacity and platform, with every exclusion named (read from the cached Nodes)."""

from __future__ import annotations

from dataclasses import dataclass, field

from nvcre.controller import labels as L
from nvcre.controller.context import Context
from nvcre.discovery.nodes import UNSCHEDULABLE_TAINT
from nvcre.objpath import dig

GPU_PRESENT = "nvidia.com/gpu.present"
INCLUDE_CORDONED = L.PREFIX + "include-cordoned"


@dataclass
class Discovery:
    nodes: list[dict]
    excluded: list[dict]
    platform: str
    arch: str
    products: list[str]
    events: list[tuple[str, str, str]] = field(default_factory=list)


def include_cordoned(target: dict | None) -> bool:
    return any(t.get("key") == UNSCHEDULABLE_TAINT for t in dig(target, "taintSelectors") or [])


def discover(all_nodes: list[dict], target: dict | None, *, gpus_per_node: int | None = None) -> Discovery:
    """Target selection, majority GPU architecture, capacity filter and platform, with exclusions."""
    from nvcre.discovery.gpu import majority_arch
    from nvcre.discovery.nodes import capacity_filter, select_target_nodes
    from nvcre.discovery.platform import cluster_platform

    selection = select_target_nodes(all_nodes, target or {})
    excluded = list(selection.excluded)
    events: list[tuple[str, str, str]] = []
    if excluded:
        events.append(("Warning", "CordonedNodesExcluded", f"{len(excluded)} cordoned node(s) excluded: {_names(excluded)}"))
    vote = majority_arch(selection.selected)
    if vote.excluded:
        events.append(("Warning", "HeterogeneousGPU", f"certifying {vote.arch} only; excluded {_names(vote.excluded)}"))
    excluded += vote.excluded
    kept = list(vote.kept)
    if gpus_per_node:
        cap = capacity_filter(kept, gpus_per_node)
        if cap.excluded:
            events.append(("Warning", "InsufficientGPUCapacity", f"excluded {_names(cap.excluded)}"))
        excluded += cap.excluded
        kept = cap.selected
    platform = cluster_platform(kept) if kept else "onprem"
    return Discovery(kept, sorted(excluded, key=lambda e: e["name"]), platform, vote.arch, list(vote.products), events)


def _names(entries: list[dict], limit: int = 10) -> str:
    names = [e["name"] for e in entries]
    more = f" and {len(names) - limit} more" if len(names) > limit else ""
    return ", ".join(names[:limit]) + more


def gpu_nodes(ctx: Context) -> list[dict]:
    from nvcre.controller.gather import all_gpu_nodes

    return all_gpu_nodes(ctx)
