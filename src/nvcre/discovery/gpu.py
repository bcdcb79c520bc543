"""GPU architecture of nodes and the hardware sizing that follows from it.

Pure functions over Node and ResourceSlice objects as plain dicts. The architecture
comes from the GPU Feature Discovery label ``nvidia.com/gpu.product``; nodes without
it (DRA-only clusters) can take the product from the NVIDIA DRA driver's
ResourceSlices. Sizing (GPUs and NICs per node, MNNVL) is catalog data
(``catalog/_lib/gpu-defaults.yaml``).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Any, Iterable, Mapping


PRODUCT_LABEL = "nvidia.com/gpu.product"
DRA_GPU_DRIVER = "gpu.nvidia.com"
UNKNOWN = "unknown"


def parse_product(product: str | None) -> str:
    """Architecture from a product string: ``NVIDIA-H100-80GB-HBM3`` -> ``h100``.

    Accepts the GFD label form (hyphens) and the DRA form (spaces, ``NVIDIA GB300``).
    RTX PRO 6000 is the one product whose name has spaces/hyphens before the model ends.
    Empty in, empty out.
    """
    text = (product or "").strip()
    if not text:
        return ""
    for prefix in ("NVIDIA-", "NVIDIA "):
        if text.upper().startswith(prefix):
            text = text[len(prefix):]
            break
    if re.sub(r"\s+", "-", text).upper().startswith("RTX-PRO-6000"):
        return "rtxpro6000"
    return re.split(r"[-\s]", text, maxsplit=1)[0].lower()


def sanitize_product(name: str) -> str:
    """Turn a DRA ``productName`` into the GFD label form (``NVIDIA GB300`` -> ``NVIDIA-GB300``)."""
    kept = re.sub(r"[^A-Za-z0-9\-_. ]", "", name or "")
    return "-".join(kept.split())


def _device_attributes(device: Mapping[str, Any]) -> Mapping[str, Any]:
    """A ResourceSlice device's attributes (resource.k8s.io/v1, or v1beta1's ``basic``)."""
    return device.get("attributes") or (device.get("basic") or {}).get("attributes") or {}


def _device_type(device: Mapping[str, Any]) -> str:
    """The NVIDIA DRA driver's ``type`` attribute (``gpu``, ``mig``, ...), lower-cased; '' if absent."""
    value = _device_attributes(device).get("type") or {}
    return str(value.get("string", "") if isinstance(value, Mapping) else value).strip().lower()


def gpu_counts_from_resource_slices(slices: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """Node name -> number of whole GPUs in its ``gpu.nvidia.com`` ResourceSlices.

    Only devices whose ``type`` attribute says ``gpu`` count: the driver also publishes
    MIG partitions (and other device kinds) in the same pool, and counting those would
    inflate a node's GPUs (a GPU split into 7 MIG devices is one GPU, not 8)."""
    counts: dict[str, int] = {}
    for rs in slices:
        spec = rs.get("spec") or {}
        node = spec.get("nodeName")
        if spec.get("driver") != DRA_GPU_DRIVER or not node:
            continue
        whole = sum(1 for device in spec.get("devices") or [] if _device_type(device) == "gpu")
        counts[node] = counts.get(node, 0) + whole
    return counts


def products_from_resource_slices(slices: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """Node name -> product (label form) from NVIDIA GPU ResourceSlices.

    Takes the first device with a string ``productName`` attribute in each slice of the
    ``gpu.nvidia.com`` driver that names a node (a device typed as something other
    than ``gpu``, e.g. a MIG partition, is passed over).
    """
    found: dict[str, str] = {}
    for rs in slices:
        spec = rs.get("spec") or {}
        node = spec.get("nodeName")
        if spec.get("driver") != DRA_GPU_DRIVER or not node or node in found:
            continue
        for device in spec.get("devices") or []:
            if _device_type(device) not in ("", "gpu"):
                continue
            attrs = _device_attributes(device)
            product = (attrs.get("productName") or {}).get("string")
            if product:
                found[node] = sanitize_product(product)
                break
    return found


def node_product(node: Mapping[str, Any], slice_products: Mapping[str, str] | None = None) -> str:
    """The raw GPU product of a node: its label, else the ResourceSlice product, else ''."""
    labels = (node.get("metadata") or {}).get("labels") or {}
    product = labels.get(PRODUCT_LABEL, "")
    if not product and slice_products:
        product = slice_products.get((node.get("metadata") or {}).get("name", ""), "")
    return product


def node_arch(node: Mapping[str, Any], slice_products: Mapping[str, str] | None = None) -> str:
    """The architecture of a node, or ``unknown`` when nothing names its GPU."""
    return parse_product(node_product(node, slice_products)) or UNKNOWN


@dataclass(frozen=True)
class ArchVote:
    """Result of the majority rule over target nodes."""

    arch: str  # the winner, or "unknown" when no node is labelled
    kept: list[dict[str, Any]]
    excluded: list[dict[str, str]]  # [{name, reason}]
    counts: dict[str, int]
    products: list[str]  # distinct raw products of the kept nodes, sorted


def majority_arch(nodes: list[Mapping[str, Any]], slice_products: Mapping[str, str] | None = None) -> ArchVote:
    """Keep the nodes of the most common architecture; exclude the rest with a reason.

    Unlabelled nodes do not vote and are kept (nothing says they differ). A tie goes to
    the architecture of the first node in name order, so the result is deterministic.
    """
    ordered = sorted(nodes, key=lambda n: (n.get("metadata") or {}).get("name", ""))
    archs = [node_arch(n, slice_products) for n in ordered]
    counts = Counter(a for a in archs if a != UNKNOWN)
    if not counts:
        return ArchVote(UNKNOWN, list(ordered), [], {}, [])
    best = max(counts.values())
    winner = next(a for a in archs if a != UNKNOWN and counts[a] == best)
    kept, excluded, products = [], [], set()
    for node, arch in zip(ordered, archs):
        name = (node.get("metadata") or {}).get("name", "")
        if arch in (winner, UNKNOWN):
            kept.append(node)
            product = node_product(node, slice_products)
            if product:
                products.add(product)
        else:
            excluded.append(
                {
                    "name": name,
                    "reason": "HeterogeneousGPU",
                    "message": f"GPU architecture {arch} differs from the majority {winner} "
                    f"({counts[winner]} of {sum(counts.values())} labelled nodes)",
                }
            )
    return ArchVote(winner, kept, excluded, dict(counts), sorted(products))


@dataclass(frozen=True)
class HardwareDefaults:
    """How a node of an architecture is sized, and where the numbers came from."""

    arch: str
    gpus_per_node: int
    mlnx_per_node: int
    mnnvl: bool
    known: bool  # False when the architecture has no row and the fallback was used

    def warning(self, fields: str = "spec.gpusPerNode and spec.mlnxPerNode (or spec.categories[].options)") -> str | None:
        """The GPUArchitectureDefaults warning, or None when the architecture is known
        (or simply unlabelled: that is a different problem and stays silent)."""
        if self.known or not self.arch or self.arch == UNKNOWN:
            return None
        return (
            f'GPU architecture "{self.arch}" has no entry in the catalog\'s GPU defaults; the job is sized as '
            f"gpusPerNode={self.gpus_per_node} mlnxPerNode={self.mlnx_per_node}. If the nodes differ, set {fields}, "
            "and file an issue so the catalog learns this architecture."
        )


def defaults_from_table(table: Mapping[str, Any], arch: str, platform: str | None = None) -> HardwareDefaults:
    """Sizing for ``arch`` on ``platform`` from the GPU defaults table (the catalog owns it and
    passes it in): the architecture row, then the platform's field-wise override (a present
    field wins, even 0), else the fallback row."""
    row = table["architectures"].get(arch)
    known = row is not None
    values = dict(row if known else table["fallback"])
    values.update(((table.get("platforms") or {}).get(platform or "") or {}).get(arch) or {})
    return HardwareDefaults(
        arch=arch,
        gpus_per_node=int(values["gpusPerNode"]),
        mlnx_per_node=int(values["mlnxPerNode"]),
        mnnvl=bool(values.get("mnnvl", False)),
        known=known,
    )
