"""How nodes of each cloud or on-prem platform identify themselves.

Platform detection reads ``spec.providerID`` (and a few labels); the catalog's
overrides then ask for the platform's RDMA resource. So a simulated node carries
the providerID shape, instance type, RDMA extended resources and topology labels a
real node of that platform has (see ``tests/data/fixtures/nodes`` and the platform table
in ``shared/reference/nvcre-catalog-platforms.md``).
"""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass
from typing import Callable

from nvcre.errors import UserError
from nvcre.sim.hardware import ArchSpec


@dataclass(frozen=True)
class PlatformSpec:
    """Identity of one platform's nodes."""

    key: str
    region: str
    zone: str
    provider_id: Callable[[str, int, str], str]  # (node name, index, fleet) -> providerID
    extra_labels: Callable[[str, int], dict[str, str]]  # (node name, index) -> labels
    rdma: Callable[[ArchSpec], dict[str, str]]  # arch -> extended resources for the NICs
    instance_type: Callable[[ArchSpec], str]
    rack_labels: Callable[[str, str], dict[str, str]]  # (rack name, fleet) -> labels
    hugepages_2mi: Callable[[ArchSpec], str] = lambda arch: "0"  # preallocated 2 MiB pages (EFA needs them)


def _hex_id(*parts: object, length: int = 17) -> str:
    digest = hashlib.sha256("/".join(str(p) for p in parts).encode()).hexdigest()
    return digest[:length]


def _uuid(*parts: object) -> str:
    return str(uuid.UUID(hex=_hex_id(*parts, length=32)))


def _no_labels(_name: str, _index: int) -> dict[str, str]:
    return {}


def _aws_rdma(arch: ArchSpec) -> dict[str, str]:
    if arch.key == "gb300":
        return {}  # RoCE NICs arrive through a DRA claim (roce.networking.k8s.aws)
    if arch.key == "gb200":
        return {"vpc.amazonaws.com/efa": "4"}
    if arch.nic_count == 0:
        return {}
    return {"vpc.amazonaws.com/efa": "32" if arch.key in ("h100", "h200", "b200") else "4"}


def _aws_hugepages(arch: ArchSpec) -> str:
    """EKS GPU AMIs preallocate 2 MiB hugepages for EFA (5128 pages = 10256Mi); nodes without EFA have none."""
    return "10256Mi" if _aws_rdma(arch) else "0"


def _aws_instance(arch: ArchSpec) -> str:
    return {
        "h100": "p5.48xlarge",
        "h200": "p5en.48xlarge",
        "a100": "p4de.24xlarge",
        "b200": "p6-b200.48xlarge",
        "b300": "p6-b300.48xlarge",
        "gb200": "p6e-gb200.36xlarge",
        "gb300": "p6e-gb300.36xlarge",
        "l40s": "g6e.48xlarge",
        "l40": "g6.48xlarge",
        "rtxpro6000": "g7e.48xlarge",
    }[arch.key]


def _aws_racks(rack: str, fleet: str) -> dict[str, str]:
    return {
        "topology.k8s.aws/network-node-layer-1": f"nn-{_hex_id(fleet, 'spine', length=17)}",
        "topology.k8s.aws/network-node-layer-2": f"nn-{_hex_id(fleet, 'agg', length=17)}",
        "topology.k8s.aws/network-node-layer-3": f"nn-{_hex_id(fleet, rack, length=17)}",
    }


def _gcp_rdma(arch: ArchSpec) -> dict[str, str]:
    if arch.nic_count == 0:
        return {}
    if arch.key in ("gb200", "gb300"):
        out: dict[str, str] = {}
        for i in range(4):
            out[f"networking.gke.io.networks/rdma-{i}"] = "1"
            out[f"networking.gke.io.networks/rdma-{i}.IP"] = "1"
        return out
    out = {}
    for i in range(1, 9):
        out[f"networking.gke.io.networks/gpu-nic{i - 1}"] = "1"
        out[f"networking.gke.io.networks/gpu-nic{i - 1}.IP"] = "1"
    return out


def _gcp_instance(arch: ArchSpec) -> str:
    return {
        "h100": "a3-megagpu-8g",
        "h200": "a3-ultragpu-8g",
        "a100": "a2-ultragpu-8g",
        "b200": "a4-highgpu-8g",
        "b300": "a4-highgpu-8g",
        "gb200": "a4x-highgpu-4g",
        "gb300": "a4x-maxgpu-4g",
        "l40s": "g2-standard-96",
        "l40": "g2-standard-96",
        "rtxpro6000": "g4-standard-384",
    }[arch.key]


def _gcp_racks(rack: str, fleet: str) -> dict[str, str]:
    return {
        "cloud.google.com/gce-topology-block": _hex_id(fleet, "block", length=32),
        "cloud.google.com/gce-topology-subblock": _hex_id(fleet, rack, length=32),
    }


def _mlnx(arch: ArchSpec) -> dict[str, str]:
    """The Mellanox device plugin counts RDMA functions, not NICs: a GB200/GB300 tray's
    ConnectX ports and BlueField functions make 8, which the catalog asks of those nodes."""
    if not arch.nic_count:
        return {}
    return {"nvidia.com/mlnxnics": str(max(arch.nic_count, 8) if arch.key.startswith("gb") else arch.nic_count)}


def _rdma_ib(arch: ArchSpec) -> dict[str, str]:
    return {"rdma/ib": "1k"} if arch.nic_count else {}


def _nscale_rdma(arch: ArchSpec) -> dict[str, str]:
    # a shared-device plugin: the legacy catalog fragment asks 8 shares whatever the NIC count
    return {"nscale.com/rdmashare": str(max(8, arch.nic_count))} if arch.nic_count else {}


def _generic_racks(rack: str, _fleet: str) -> dict[str, str]:
    return {"topology.kubernetes.io/rack": rack}


def _instance(name: str) -> Callable[[ArchSpec], str]:
    def pick(arch: ArchSpec) -> str:
        return f"{name}.{arch.key}.{arch.gpus_per_node}x"

    return pick


def _azure_instance(arch: ArchSpec) -> str:
    return {
        "h100": "Standard_ND96isr_H100_v5",
        "h200": "Standard_ND96isr_H200_v5",
        "a100": "Standard_ND96amsr_A100_v4",
        "gb200": "Standard_ND128isr_NDR_GB200_v6",
        "gb300": "Standard_ND128isr_GB300_v6",
    }.get(arch.key, f"Standard_ND_{arch.key.upper()}")


def _oci_instance(arch: ArchSpec) -> str:
    return {
        "h100": "BM.GPU.H100.8",
        "h200": "BM.GPU.H200.8",
        "a100": "BM.GPU.A100-v2.8",
        "b200": "BM.GPU.B200.8",
        "gb200": "BM.GPU.GB200.4",
        "gb300": "BM.GPU.GB300.4",
        "l40s": "BM.GPU.L40S.4",
    }.get(arch.key, f"BM.GPU.{arch.key.upper()}")


PLATFORMS: dict[str, PlatformSpec] = {
    spec.key: spec
    for spec in (
        PlatformSpec(
            "aws", "us-east-1", "us-east-1a",
            lambda name, i, fleet: f"aws:///us-east-1a/i-0{_hex_id(fleet, name, length=16)}",
            _no_labels, _aws_rdma, _aws_instance, _aws_racks, _aws_hugepages,
        ),
        PlatformSpec(
            "gcp", "us-central1", "us-central1-b",
            lambda name, i, fleet: f"gce://nvcre-sim/us-central1-b/{name}",
            lambda name, i: {"cloud.google.com/gke-nodepool": "gpu-pool",
                             "nvidia.com/gpu.machine": "Google-Compute-Engine"},
            _gcp_rdma, _gcp_instance, _gcp_racks,
        ),
        PlatformSpec(
            "azure", "eastus", "eastus-1",
            lambda name, i, fleet: (
                f"azure:///subscriptions/{_uuid(fleet, 'sub')}/resourceGroups/nvcre-sim/providers/"
                f"Microsoft.Compute/virtualMachineScaleSets/gpu/virtualMachines/{i}"
            ),
            lambda name, i: {"kubernetes.azure.com/agentpool": "gpu"},
            _mlnx, _azure_instance, _generic_racks,
        ),
        PlatformSpec(
            "oci", "us-ashburn-1", "US-ASHBURN-AD-1",
            lambda name, i, fleet: f"ocid1.instance.oc1.iad.{_hex_id(fleet, name, length=60)}",
            _no_labels, _mlnx, _oci_instance,
            lambda rack, fleet: {"oci.oraclecloud.com/rdma.local_block_id": _hex_id(fleet, rack, length=12)},
        ),
        PlatformSpec(
            "togetherai", "us-west", "us-west-1",
            lambda name, i, fleet: f"kubevirt://{name}",
            lambda name, i: {"node-role.together.ai/worker": "true",
                             "feature.node.kubernetes.io/rdma.available": "true",
                             "feature.node.kubernetes.io/rdma.capable": "true"},
            _mlnx, _instance("together"), _generic_racks,
        ),
        PlatformSpec(
            "nscale", "glomfjord", "glomfjord-1",
            lambda name, i, fleet: f"nscale://instance/{_uuid(fleet, name)}",
            _no_labels, _nscale_rdma, _instance("nscale"),
            lambda rack, fleet: {"topology.nks.nscale.com/accelerator-domain": rack},
        ),
        PlatformSpec(
            "mistral", "eu-paris", "eu-paris-1",
            lambda name, i, fleet: f"metal3://nvcre-sim/{name}/{_uuid(fleet, name)}",
            _no_labels, _rdma_ib, _instance("metal3"), _generic_racks,
        ),
        PlatformSpec(
            "onprem", "onprem", "onprem-1",
            lambda name, i, fleet: "",
            _no_labels, _rdma_ib, _instance("baremetal"), _generic_racks,
        ),
    )
}


def platform_spec(key: str) -> PlatformSpec:
    """Look a platform up by name; unknown names are a user error."""
    spec = PLATFORMS.get(key.lower())
    if spec is None:
        allowed = ", ".join(sorted(PLATFORMS))
        raise UserError(f"--platform: unknown platform {key!r}; allowed: {allowed}")
    return spec


#: Extended-resource names (or prefixes) that carry RDMA NICs into a pod.
RDMA_RESOURCE_PREFIXES = (
    "rdma/",
    "nvidia.com/mlnxnics",
    "vpc.amazonaws.com/efa",
    "networking.gke.io.networks/rdma-",
    "networking.gke.io.networks/gpu-nic",
    "nscale.com/rdmashare",
)


def is_rdma_resource(name: str) -> bool:
    """True when an extended resource name is one of the RDMA NIC kinds."""
    return any(name.startswith(prefix) for prefix in RDMA_RESOURCE_PREFIXES)
