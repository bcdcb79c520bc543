"""Sizing for GPUs the catalog does not know, read from the nodes (never a fixed fallback).

For an architecture without a row in ``catalog/_lib/gpu-defaults.yaml`` (H20, L20, ...),
GPUs and RDMA NICs per node come from the target nodes (nvcre.discovery.gpu.infer_hardware)
and are fed to the resolver as if the user had set them globally; a value the user did
set wins. The sources travel to the report as "inferred" values.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from nvcre.catalog.hardware import is_known_architecture
from nvcre.discovery.gpu import InferredHardware, infer_hardware
from nvcre.objpath import dig


def inferred_for(cert: Mapping[str, Any], arch: str, nodes: Sequence[Mapping[str, Any]] | None = None,
                 recorded: Mapping[str, Any] | None = None) -> InferredHardware | None:
    """What to infer for ``arch``: None for a catalogued architecture (or an unlabelled fleet)."""
    if not arch or arch == "unknown" or is_known_architecture(arch):
        return None
    if recorded:
        return InferredHardware.from_dict(recorded)
    if nodes:
        return infer_hardware(nodes)
    return InferredHardware.from_dict((dig(cert, "status", "inferredHardware")))


def with_inferred(spec: Mapping[str, Any], hw: InferredHardware | None) -> dict[str, Any]:
    """The spec with the inferred values as global options wherever the user set none."""
    out = dict(spec)
    if hw is None:
        return out
    for field, value in (("gpusPerNode", hw.gpus_per_node), ("mlnxPerNode", hw.nics_per_node),
                         ("nicResourceName", hw.nic_resource)):
        if value is not None and out.get(field) in (None, ""):
            out[field] = value
    return out
