"""Which Node label says which rack (or NVLink domain) a node sits in.

Clouds and operators label placement differently: an NVLink clique from GPU Feature
Discovery, a rack label, or a cloud's network-topology layers (where the top layers
hold the whole fleet and only the lowest one tells racks apart). One list and one
rule serve every part that groups nodes by rack: the diagnose planner's topology, the
report's node map and ``cluster info``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

# Most useful first. For AWS and GCP the layer nearest to the node comes first.
RACK_LABELS = (
    "nvidia.com/gpu.clique",
    "topology.kubernetes.io/rack",
    "topology.k8s.aws/network-node-layer-3",
    "cloud.google.com/gce-topology-subblock",
    "topology.nks.nscale.com/accelerator-domain",
    "kubernetes.azure.com/ppg",
    "topology.k8s.aws/network-node-layer-2",
    "cloud.google.com/gce-topology-block",
    "topology.k8s.aws/network-node-layer-1",
)

# The network-topology label the reference groups a cloud's nodes by (``cluster info``,
# ``workloadrun run --topology-domain``): the layer that tells T1 leaf switches apart.
DEFAULT_TOPOLOGY_KEYS = {
    "aws": "topology.k8s.aws/network-node-layer-1",
    "gcp": "cloud.google.com/gce-topology-block",
    "azure": "kubernetes.azure.com/ppg",
}


def default_topology_key(platform: str) -> str | None:
    """The platform's topology label key, None for platforms without one."""
    return DEFAULT_TOPOLOGY_KEYS.get(platform)


def rack_label(nodes: Iterable[str], labels: Mapping[str, Mapping[str, str]], preferred: str | None = None,
               *, require_split: bool = False) -> str | None:
    """The first label (``preferred`` first) that every node carries and that splits them
    into several domains of more than one node; else (unless ``require_split``) the first
    label any node carries, so a single-rack fleet still gets its one rack; else None."""
    names = list(nodes)
    keys = ([preferred] if preferred else []) + [k for k in RACK_LABELS if k != preferred]
    for key in keys:
        values = [(labels.get(n) or {}).get(key) for n in names]
        present = [v for v in values if v]
        if names and len(present) == len(names) and 1 < len(set(present)) < len(names):
            return key
    if require_split:
        return None
    for key in keys:
        if any((labels.get(n) or {}).get(key) for n in names):
            return key
    return None
