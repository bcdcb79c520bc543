"""The simulated fleet: Node objects (and DRA ResourceSlices) that look like real GPU nodes.

A node carries what GPU Feature Discovery, the device plugins and the cloud's node
controller would have put on it: ``nvidia.com/gpu.*`` labels, a providerID of the
platform's shape, allocatable GPUs and RDMA NICs, rack/topology labels and, for
NVL72 systems, ``nvidia.com/gpu.clique``. Its address is 127.0.0.1 and its kubelet
port is the one fake kubelet that serves the whole fleet.

Everything here is pure: :func:`build_fleet` returns plain dicts and facts; the
kubelet sends them to the API server.
"""

from __future__ import annotations

import hashlib
import math
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from nvcre.errors import UserError
from nvcre.sim.faults import FaultModel
from nvcre.sim.hardware import CUDA_RUNTIME, DRIVER_VERSION, ArchSpec, arch_spec
from nvcre.sim.platforms import PlatformSpec, platform_spec

FLEET_LABEL = "sim.nvcre.nvidia.com/fleet"
RACK_ANNOTATION = "sim.nvcre.nvidia.com/rack"
GPU_HEALTH_CONDITION = "GpuHealthy"
NODE_IP = "127.0.0.1"
KUBELET_VERSION = "v1.34.1"
DRA_DRIVER = "gpu.nvidia.com"


@dataclass(frozen=True)
class FleetSpec:
    """The shape of a fleet: how many nodes of which GPU on which platform."""

    nodes: int = 16
    platform: str = "aws"
    gpu: str = "h100"
    racks: int = 2
    dra: bool = False
    name_prefix: str = "gpu-node"
    fleet_name: str = "sim"
    kubelet_port: int = 10250
    #: nodes per rack, in order (racks of unequal size); empty: ``racks`` racks of (nearly) equal size
    rack_sizes: tuple[int, ...] = ()

    def validate(self) -> None:
        if not 1 <= self.nodes <= 4096:
            raise UserError(f"--nodes: must be between 1 and 4096, got {self.nodes}")
        if self.rack_sizes:
            validate_rack_sizes(self.rack_sizes, self.nodes)
        elif self.racks < 1:
            raise UserError(f"--racks: must be at least 1, got {self.racks}")
        elif self.racks > self.nodes:
            raise UserError(f"--racks: {self.racks} racks for {self.nodes} nodes; a rack needs a node")
        arch_spec(self.gpu)
        platform_spec(self.platform)

    def rack_count(self) -> int:
        return len(self.rack_sizes) or self.racks


def validate_rack_sizes(sizes, nodes: int) -> None:
    """rackSizes must be whole positive node counts that add up to the fleet."""
    if isinstance(sizes, (str, bytes)) or not isinstance(sizes, (list, tuple)) or not sizes:
        raise UserError(f"rackSizes: must be a non-empty list of node counts, got {sizes!r}")
    for i, size in enumerate(sizes):
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise UserError(f"rackSizes[{i}]: must be a whole number of nodes >= 1, got {size!r}")
    if sum(sizes) != nodes:
        raise UserError(f"rackSizes: {list(sizes)} adds up to {sum(sizes)} nodes, but the fleet has {nodes}; "
                        "the sizes must add up to the node count")


@dataclass(frozen=True)
class NodeFacts:
    """What the fabric model and the emulators need to know about one node."""

    name: str
    index: int
    arch: ArchSpec
    platform: str
    rack: str
    clique: str | None
    gpus: int  # physically present
    allocatable_gpus: int
    rdma_resources: dict[str, str] = field(default_factory=dict)
    dra: bool = False

    @property
    def nic_count(self) -> int:
        return self.arch.nic_count

    def pod_ip(self, serial: int) -> str:
        """A stable, fleet-unique pod IP for the ``serial``-th pod on this node."""
        block = 64 + self.index // 256
        return f"10.{block}.{self.index % 256}.{2 + serial % 250}"


@dataclass
class Fleet:
    """Node objects, ResourceSlices and facts for one fleet."""

    spec: FleetSpec
    facts: dict[str, NodeFacts]
    nodes: list[dict[str, Any]]
    resource_slices: list[dict[str, Any]]

    @property
    def names(self) -> list[str]:
        return [n["metadata"]["name"] for n in self.nodes]

    @property
    def racks(self) -> set[str]:
        return {f.rack for f in self.facts.values()}


def node_names(count: int, prefix: str = "gpu-node") -> list[str]:
    """gpu-node-01..NN (three digits from 100 nodes, four from 1000)."""
    width = max(2, len(str(count)))
    return [f"{prefix}-{i:0{width}d}" for i in range(1, count + 1)]


def _rack_of(index: int, count: int, racks: int, sizes: tuple[int, ...] = ()) -> int:
    """The rack (0-based) of the ``index``-th node: by ``sizes`` when given, else even chunks."""
    if sizes:
        end = 0
        for rack, size in enumerate(sizes):
            end += size
            if index < end:
                return rack
        return len(sizes) - 1
    per_rack = math.ceil(count / racks)
    return index // per_rack


def _stable_uuid(*parts: object) -> str:
    digest = hashlib.sha256("/".join(str(p) for p in parts).encode()).hexdigest()
    return str(uuid.UUID(hex=digest[:32]))


def gpu_uuid(node: str, gpu: int) -> str:
    return "GPU-" + _stable_uuid("gpu", node, gpu)


def build_fleet(spec: FleetSpec, faults: FaultModel | None = None) -> Fleet:
    """Build every Node (and ResourceSlice for DRA fleets) of a fleet."""
    spec.validate()
    faults = faults or FaultModel()
    arch = arch_spec(spec.gpu)
    platform = platform_spec(spec.platform)
    names = node_names(spec.nodes, spec.name_prefix)
    cluster_uuid = _stable_uuid("clique", spec.fleet_name)
    facts: dict[str, NodeFacts] = {}
    nodes: list[dict[str, Any]] = []
    slices: list[dict[str, Any]] = []
    for index, name in enumerate(names):
        rack_index = _rack_of(index, spec.nodes, spec.racks, spec.rack_sizes)
        rack = f"rack-{rack_index + 1}"
        clique = f"{cluster_uuid}.{rack_index + 1}" if arch.mnnvl_busbw else None
        allocatable = faults.allocatable_gpus(name, arch.gpus_per_node)
        fact = NodeFacts(
            name=name,
            index=index,
            arch=arch,
            platform=platform.key,
            rack=rack,
            clique=clique,
            gpus=arch.gpus_per_node,
            allocatable_gpus=allocatable,
            rdma_resources=platform.rdma(arch),
            dra=spec.dra,
        )
        facts[name] = fact
        nodes.append(node_object(fact, spec, platform))
        if spec.dra:
            slices.append(resource_slice(fact, spec.fleet_name))
    fleet = Fleet(spec=spec, facts=facts, nodes=nodes, resource_slices=slices)
    faults.validate_against(set(names), fleet.racks)
    return fleet


def gfd_labels(arch: ArchSpec, *, with_product: bool = True) -> dict[str, str]:
    """The labels GPU Feature Discovery writes for this GPU."""
    labels = {
        "nvidia.com/gpu.present": "true",
        "nvidia.com/gpu.count": str(arch.gpus_per_node),
        "nvidia.com/gpu.family": arch.family,
        "nvidia.com/gpu.memory": str(arch.memory_mib),
        "nvidia.com/gpu.compute.major": str(arch.compute[0]),
        "nvidia.com/gpu.compute.minor": str(arch.compute[1]),
        "nvidia.com/gpu.replicas": "1",
        "nvidia.com/gpu.sharing-strategy": "none",
        "nvidia.com/gpu.mode": "compute",
        "nvidia.com/mig.capable": "true" if arch.family in ("hopper", "ampere", "blackwell") else "false",
        "nvidia.com/cuda.driver.major": str(DRIVER_VERSION[0]),
        "nvidia.com/cuda.driver.minor": str(DRIVER_VERSION[1]),
        "nvidia.com/cuda.driver.rev": str(DRIVER_VERSION[2]),
        "nvidia.com/cuda.driver-version.full": ".".join(map(str, DRIVER_VERSION)),
        "nvidia.com/cuda.runtime.major": str(CUDA_RUNTIME[0]),
        "nvidia.com/cuda.runtime.minor": str(CUDA_RUNTIME[1]),
        "nvidia.com/gfd.timestamp": str(int(time.time())),
    }
    if with_product:
        labels["nvidia.com/gpu.product"] = arch.product
    return labels


def node_object(fact: NodeFacts, spec: FleetSpec, platform: PlatformSpec) -> dict[str, Any]:
    """The v1 Node for one simulated machine (labels, capacity, status)."""
    arch = fact.arch
    labels: dict[str, str] = {
        "kubernetes.io/hostname": fact.name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": arch.cpu_arch,
        "node.kubernetes.io/instance-type": platform.instance_type(arch),
        "topology.kubernetes.io/region": platform.region,
        "topology.kubernetes.io/zone": platform.zone,
        FLEET_LABEL: spec.fleet_name,
    }
    labels.update(gfd_labels(arch, with_product=not fact.dra))
    if fact.clique:
        labels["nvidia.com/gpu.clique"] = fact.clique
    if fact.rdma_resources:
        labels["feature.node.kubernetes.io/rdma.available"] = "true"
    labels.update(platform.rack_labels(fact.rack, spec.fleet_name))
    labels.update(platform.extra_labels(fact.name, fact.index))

    resources: dict[str, str] = {
        "cpu": "192" if arch.gpus_per_node == 8 else "144",
        "memory": "2097152Mi" if arch.gpus_per_node == 8 else "884736Mi",
        "ephemeral-storage": "30Ti",
        "hugepages-2Mi": platform.hugepages_2mi(arch),
        "pods": "110",
    }
    capacity = dict(resources)
    allocatable = dict(resources)
    if not fact.dra:
        capacity["nvidia.com/gpu"] = str(fact.gpus)
        allocatable["nvidia.com/gpu"] = str(fact.allocatable_gpus)
    capacity.update(fact.rdma_resources)
    allocatable.update(fact.rdma_resources)

    node: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": fact.name,
            "labels": labels,
            "annotations": {
                RACK_ANNOTATION: fact.rack,
                "node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
            },
        },
        "spec": {},
        "status": {
            "capacity": capacity,
            "allocatable": allocatable,
            "conditions": initial_conditions(),
            "addresses": [{"type": "InternalIP", "address": NODE_IP}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": spec.kubelet_port}},
            "nodeInfo": {
                "machineID": hashlib.md5(fact.name.encode()).hexdigest(),
                "systemUUID": _stable_uuid("system", fact.name),
                "bootID": _stable_uuid("boot", fact.name, time.time()),
                "kernelVersion": "6.8.0-1024-nvidia" if arch.cpu_arch == "amd64" else "6.8.0-1024-nvidia-64k",
                "osImage": "Ubuntu 24.04.2 LTS",
                "containerRuntimeVersion": "containerd://2.0.5",
                "kubeletVersion": KUBELET_VERSION,
                "kubeProxyVersion": "",
                "operatingSystem": "linux",
                "architecture": arch.cpu_arch,
            },
        },
    }
    provider_id = platform.provider_id(fact.name, fact.index, spec.fleet_name)
    if provider_id:
        node["spec"]["providerID"] = provider_id
    return node


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def initial_conditions() -> list[dict[str, str]]:
    """A healthy node: no pressure, Ready, and the GPU health agent's all-clear."""
    now = _now()

    def cond(kind: str, status: str, reason: str, message: str) -> dict[str, str]:
        return {
            "type": kind,
            "status": status,
            "reason": reason,
            "message": message,
            "lastHeartbeatTime": now,
            "lastTransitionTime": now,
        }

    return [
        cond("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
        cond("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
        cond("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
        cond("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
        cond(GPU_HEALTH_CONDITION, "True", "GpuHealthCheckPassed", "all GPUs passed health checks"),
    ]


def resource_slice(fact: NodeFacts, fleet_name: str = "sim", api_version: str = "resource.k8s.io/v1") -> dict[str, Any]:
    """The GPU DRA driver's ResourceSlice for one node (``gpu.nvidia.com``)."""
    arch = fact.arch
    flat = not api_version.endswith("v1beta1")
    devices = []
    for gpu in range(fact.gpus):
        attributes = {
            "type": {"string": "gpu"},
            "uuid": {"string": gpu_uuid(fact.name, gpu)},
            "productName": {"string": arch.device_name},
            "brand": {"string": "Nvidia"},
            "architecture": {"string": arch.family.capitalize()},
            "cudaComputeCapability": {"version": f"{arch.compute[0]}.{arch.compute[1]}.0"},
            "driverVersion": {"version": ".".join(map(str, DRIVER_VERSION))},
            "cudaDriverVersion": {"version": f"{CUDA_RUNTIME[0]}.{CUDA_RUNTIME[1]}.0"},
            "pcieBusID": {"string": f"0000:{arch.pci_buses[gpu % len(arch.pci_buses)]}:00.0"},
            "index": {"int": gpu},
            "minor": {"int": gpu},
        }
        capacity = {"memory": {"value": f"{arch.memory_mib}Mi"}}
        device: dict[str, Any] = {"name": f"gpu-{gpu}"}
        if flat:
            device.update({"attributes": attributes, "capacity": capacity})
        else:
            device["basic"] = {"attributes": attributes, "capacity": capacity}
        devices.append(device)
    return {
        "apiVersion": api_version,
        "kind": "ResourceSlice",
        "metadata": {
            "name": f"{fact.name}-gpu.nvidia.com",
            "labels": {FLEET_LABEL: fleet_name},
        },
        "spec": {
            "driver": DRA_DRIVER,
            "nodeName": fact.name,
            "pool": {"name": fact.name, "generation": 1, "resourceSliceCount": 1},
            "devices": devices,
        },
    }
