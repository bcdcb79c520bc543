"""Which extended resource carries the RDMA NICs on on-prem nodes.

Clouds have fixed NIC resources (named in their fragments). On-prem clusters name
theirs freely (``rdma/ib``, ``rdma/rdma_shared_device_a``, ``nvidia.com/mlnxnics``), so
nvcre looks at the nodes: exactly one candidate present in the needed amount on every
target node is used; otherwise nothing is requested and a message says why.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from nvcre.api.quantity import parse_quantity

DETECTING_PLATFORMS = ("onprem",)
DETECTING_ARCHS = ("gb200", "gb300", "b200", "b300")


@dataclass(frozen=True)
class NicDetection:
    resource_name: str | None
    message: str | None  # for a Normal NICResourceDetection event; None when a user value or a clean pick


def _candidates(node: Mapping[str, Any]) -> dict[str, float]:
    allocatable = (node.get("status") or {}).get("allocatable") or {}
    found = {}
    for name, amount in allocatable.items():
        if name.startswith("rdma/") or name == "nvidia.com/mlnxnics":
            try:
                found[name] = float(parse_quantity(str(amount)))
            except (ValueError, TypeError):
                continue
    return found


def detect_nic_resource(
    nodes: Sequence[Mapping[str, Any]],
    *,
    platform: str,
    arch: str,
    mlnx_per_node: int,
    user_value: str | None = None,
) -> NicDetection:
    """The NIC resource to request, or None with a reason.

    A user's ``nicResourceName`` always wins. Detection only runs on on-prem GB200,
    GB300, B200 and B300 (elsewhere the platform fragment names the resource).
    A shared-device plugin advertising one pooled device needs ``mlnxPerNode: 1``.
    """
    if user_value:
        return NicDetection(user_value, None)
    if platform not in DETECTING_PLATFORMS or arch not in DETECTING_ARCHS or not nodes:
        return NicDetection(None, None)
    need = max(mlnx_per_node, 1)
    per_node = [_candidates(n) for n in nodes]
    names = sorted(set().union(*per_node))
    if not names:
        return NicDetection(None, "no RDMA NIC resource (rdma/* or nvidia.com/mlnxnics) is allocatable on the target "
                            "nodes; no NIC is requested. Set nicResourceName if the NICs use another name.")
    qualifying = [name for name in names if all(c.get(name, 0) >= need for c in per_node)]
    if len(qualifying) == 1:
        return NicDetection(qualifying[0], None)
    if len(qualifying) > 1:
        return NicDetection(None, f"several RDMA NIC resources qualify ({', '.join(qualifying)}); no NIC is requested. "
                            "Set nicResourceName to choose one.")
    return NicDetection(None, f"RDMA NIC resources {', '.join(names)} are present but not at {need} per node on every "
                        "target node; no NIC is requested. Set nicResourceName and mlnxPerNode (1 for a shared-device plugin).")
