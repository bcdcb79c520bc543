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


GPU_RESOURCE = "nvidia.com/gpu"
GPU_COUNT_LABEL = "nvidia.com/gpu.count"
MAX_NICS_PER_NODE = 64  # a larger amount is a shared-device plugin's pool, not NICs


@dataclass(frozen=True)
class InferredHardware:
    """Sizing read from the nodes for an architecture the catalog has no row for.

    ``sources`` says where each value came from, for the report ("inferred" values);
    a value nothing on the nodes shows stays None and is not guessed.
    """

    gpus_per_node: int | None
    nics_per_node: int | None
    nic_resource: str | None
    sources: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"sources": list(self.sources)}
        if self.gpus_per_node is not None:
            out["gpusPerNode"] = self.gpus_per_node
        if self.nics_per_node is not None:
            out["mlnxPerNode"] = self.nics_per_node
        if self.nic_resource:
            out["nicResourceName"] = self.nic_resource
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> "InferredHardware | None":
        if not data:
            return None
        return cls(data.get("gpusPerNode"), data.get("mlnxPerNode"), data.get("nicResourceName"),
                   tuple(data.get("sources") or ()))


def _int(value: Any) -> int | None:
    from nvcre.api.quantity import parse_quantity

    try:
        number = int(parse_quantity(str(value)))
    except (TypeError, ValueError, ArithmeticError):
        return None
    return number if number >= 0 else None


def _mode(values: list[int]) -> int | None:
    """The most common value; a tie goes to the larger (a node short of GPUs is the exception)."""
    if not values:
        return None
    counts = Counter(values)
    best = max(counts.values())
    return max(v for v, n in counts.items() if n == best)


def infer_hardware(nodes: Iterable[Mapping[str, Any]]) -> InferredHardware:
    """GPUs and RDMA NICs per node from the nodes' capacity/allocatable and GFD labels.

    GPUs: ``nvidia.com/gpu`` capacity (what the node has, not what is free now), else
    the ``nvidia.com/gpu.count`` label. NICs: the one ``rdma/*`` or ``nvidia.com/mlnxnics``
    resource every node advertises, its most common amount. Nothing is assumed.
    """
    gpu_values: list[int] = []
    gpu_from = ""
    nic_amounts: dict[str, list[int]] = {}
    listed = list(nodes)
    for node in listed:
        status = node.get("status") or {}
        capacity = status.get("capacity") or status.get("allocatable") or {}
        labels = (node.get("metadata") or {}).get("labels") or {}
        gpus = _int(capacity.get(GPU_RESOURCE))
        if gpus:
            gpu_values.append(gpus)
            gpu_from = gpu_from or f"{GPU_RESOURCE} capacity"
        elif (count := _int(labels.get(GPU_COUNT_LABEL))):
            gpu_values.append(count)
            gpu_from = gpu_from or f"{GPU_COUNT_LABEL} label"
        for name, amount in ((status.get("allocatable") or {})).items():
            if name.startswith("rdma/") or name == "nvidia.com/mlnxnics":
                if (value := _int(amount)) is not None:
                    nic_amounts.setdefault(name, []).append(value)
    sources: list[str] = []
    gpus_per_node = _mode(gpu_values)
    if gpus_per_node is not None:
        sources.append(f"gpusPerNode={gpus_per_node} ({gpu_from})")
    everywhere = sorted(name for name, amounts in nic_amounts.items() if len(amounts) == len(listed))
    nic_resource = everywhere[0] if len(everywhere) == 1 else None
    nics = _mode(nic_amounts[nic_resource]) if nic_resource else None
    if nic_resource and nics is not None and nics > MAX_NICS_PER_NODE:
        sources.append(f"mlnxPerNode=1 ({nic_resource} allocatable {nics} is a shared-device pool, not a NIC count; "
                       "NICs per node unknown)")
        nics = 1
    elif nic_resource:
        sources.append(f"mlnxPerNode={nics} ({nic_resource} allocatable)")
    elif listed and not nic_amounts:
        sources.append("mlnxPerNode not inferred: no rdma/* or nvidia.com/mlnxnics resource on the nodes; set it")
    elif len(everywhere) > 1:
        sources.append(f"mlnxPerNode not inferred: several NIC resources ({', '.join(everywhere)}); set it")
    return InferredHardware(gpus_per_node, nics, nic_resource, tuple(sources))
