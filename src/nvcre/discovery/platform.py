"""Which platform (cloud or on-prem flavour) a node runs on, from its providerID.

Pure functions over Node objects as plain dicts (what the Kubernetes API returns).
The platform picks the override fragments (``catalog/overrides/platform/<name>.yaml``).
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Iterable, Mapping

from nvcre.errors import UserError

PLATFORMS: tuple[str, ...] = ("aws", "gcp", "azure", "oci", "nscale", "togetherai", "mistral", "forge", "onprem")

# providerID prefix -> platform, checked in this order (case-sensitive prefixes).
_PREFIXES: tuple[tuple[str, str], ...] = (
    ("aws://", "aws"),
    ("gce://", "gcp"),
    ("azure://", "azure"),
    ("ocid1.", "oci"),  # OCI OCIDs have no scheme
    ("nscale://", "nscale"),
    ("metal3://", "mistral"),
)
FORGE_SITE_LABEL = "nke.nvidia.com/site-name"
TOGETHER_WORKER_LABEL = "node-role.together.ai/worker"


def _labels(node: Mapping[str, Any]) -> Mapping[str, str]:
    return (node.get("metadata") or {}).get("labels") or {}


def node_platform(node: Mapping[str, Any]) -> str:
    """The platform of one node.

    An empty providerID is bare metal: Forge when the hostname says so or the Forge site
    label is present, otherwise on-prem. ``kubevirt://`` is Together AI only with its
    worker label. Anything unrecognised (``openstack://``, ``kind://``) is on-prem.
    """
    provider_id = ((node.get("spec") or {}).get("providerID") or "").strip()
    labels = _labels(node)
    if not provider_id:
        if "forge" in labels.get("kubernetes.io/hostname", "") or FORGE_SITE_LABEL in labels:
            return "forge"
        return "onprem"
    for prefix, platform in _PREFIXES:
        if provider_id.startswith(prefix):
            return platform
    if provider_id.startswith("kubevirt://") and TOGETHER_WORKER_LABEL in labels:
        return "togetherai"
    return "onprem"


def platform_counts(nodes: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """How many nodes are on each platform."""
    return dict(Counter(node_platform(n) for n in nodes))


def cluster_platform(nodes: Iterable[Mapping[str, Any]]) -> str:
    """The one platform of a set of nodes; zero nodes means on-prem.

    There is no majority rule for platforms: mixed platforms cannot share one NCCL
    configuration, so they are refused with the counts.
    """
    counts = platform_counts(nodes)
    if not counts:
        return "onprem"
    if len(counts) > 1:
        detail = ", ".join(f"{name} ({n})" for name, n in sorted(counts.items()))
        raise UserError(f"heterogeneous platforms detected: {detail}; target one platform per Certification")
    return next(iter(counts))


def check_platform(name: str) -> str:
    """Validate a platform given by a user (``--platform``)."""
    value = (name or "").strip().lower()
    if value not in PLATFORMS:
        raise UserError(f"--platform: unknown platform {name!r}; valid: {', '.join(PLATFORMS)}")
    return value
