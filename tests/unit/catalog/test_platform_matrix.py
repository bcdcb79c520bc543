"""The platform x GPU override matrix, one cell at a time (the reference's table, re-derived).

Each cell names a platform, a GPU architecture, the entry classes the reference's block
applies to, and the facts it states for them. For every cell:

* the facts are asserted on every entry of each listed class (all three collectives,
  both training entries, ...), so a fragment that forgets one entry fails here;
* one render per class (native adapter) is compared with tests/golden/platforms/<cell>.yaml.

Regenerate the goldens on purpose with
``NVCRE_UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/unit/catalog/test_platform_matrix.py``
and read the diff.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from nvcre.catalog.model import ResolvedCategory
from nvcre.catalog.mpirun import mpirun_argv
from nvcre.catalog.resolve import resolve_category
from nvcre.workloads.render import render_workload
from nvcre.workloads.output import dump_yaml

GOLDEN = Path(__file__).resolve().parents[2] / "golden" / "platforms"

# Entry classes as the reference's table names them.
CLASSES = {
    "C": ("communication/nccl-all-reduce", "communication/nccl-all-gather", "communication/nccl-alltoall"),
    "LB": ("communication/nccl-loopback",),
    "NV": ("communication/nccl-loopback-nvswitch",),
    "D": ("diagnostics/dcgm-level4",),
    "T": ("training/nemotron5-8b", "training/nemotron5-56b"),
}

EFA_IMAGE = "public.ecr.aws/hpc-cloud/nccl-tests:latest"
# gb200-env without NCCL_NVLS_ENABLE: since the reference's v0.8.0 only fragments with a
# measurement behind it (Azure H100, AWS GB300, Nscale, GCP H100) set it; NCCL probes otherwise.
GB200_ENV = {"NCCL_DEBUG": "INFO", "NCCL_CUMEM_ENABLE": "1", "NCCL_P2P_NET_CHUNKSIZE": "2097152"}
NO_NVLS = ("NCCL_NVLS_ENABLE",)
NVL72_IB_ENV = {
    "NCCL_IB_PCI_RELAXED_ORDERING": "1", "SHARP_COLL_ENABLE_PCI_RELAXED_ORDERING": "1",
    "OMPI_MCA_btl_openib_warn_default_gid_prefix": "0", "PMIX_MCA_gds": "^ds12",
}
OCI_ROCE_ENV = {
    "NCCL_IB_PCI_RELAXED_ORDERING": "1", "NCCL_IB_TC": "41", "NCCL_IB_SL": "0", "NCCL_IB_QPS_PER_CONNECTION": "4",
    "NCCL_IB_GID_INDEX": "3", "OMPI_MCA_coll_hcoll_enable": "0", "OMPI_MCA_orte_keep_fqdn_hostnames": "t",
}
TCP_MPI = ["--mca pml ob1", "--mca btl tcp,self", "--mca btl_tcp_if_include eth0", "--mca oob tcp",
           "--mca oob_tcp_if_include eth0"]
NO_UCC_HCOLL = ["--mca coll_ucc_enable 0", "--mca coll_hcoll_enable 0"]
GPU_TOL = "nvidia.com/gpu"
ARM_TOL = "kubernetes.io/arch"


@dataclass(frozen=True)
class Cell:
    id: str
    platform: str
    arch: str
    classes: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict)
    no_env: tuple[str, ...] = ()
    resources: dict[str, str | None] = field(default_factory=dict)  # None: must be absent
    annotations: dict[str, str] = field(default_factory=dict)  # value must be contained
    tolerations: tuple[str, ...] = ()
    no_tolerations: tuple[str, ...] = ()
    image: str | None = None
    claims: dict[str, str] = field(default_factory=dict)  # deviceClass -> count
    no_claims: tuple[str, ...] = ()
    host_paths: tuple[str, ...] = ()
    compute_domain: bool | None = None
    topology_key: str | None = None
    mpi_args: tuple[str, ...] = ()  # contiguous groups in the mpirun args
    mpirun: str | None = None
    binary: str | None = None
    command: tuple[str, ...] = ()  # substrings of the rank command line (incl. preCommand)
    privileged: bool | None = None
    sidecars: tuple[str, ...] = ()
    capabilities: tuple[str, ...] = ()
    pod_resources: dict[str, dict[str, str]] = field(default_factory=dict)
    config_maps: tuple[str, ...] = ()  # ConfigMap names rendered (entry name substituted for <e>)
    only: tuple[str, ...] = ()  # restrict the facts to these classes (others are rendered only)
    options: dict[str, Any] = field(default_factory=dict)
    note: str = ""


CELLS: list[Cell] = [
    Cell("aws-h100-efa", "aws", "h100", ("C", "LB", "NV"), image=EFA_IMAGE,
         env={"FI_EFA_USE_DEVICE_RDMA": "1", "FI_PROVIDER": "efa", "NCCL_SOCKET_IFNAME": "eth0", "NCCL_DEBUG": "INFO"},
         resources={"vpc.amazonaws.com/efa": "32"}),
    Cell("aws-h100-efa-mpi", "aws", "h100", ("C",), mpirun="/opt/amazon/openmpi/bin/mpirun",
         binary="/opt/nccl-tests/build/"),
    Cell("aws-any-training", "aws", "b200", ("T",),
         command=("rm -rf /opt/amazon", "unset NCCL_NET_PLUGIN", "NCCL_TUNER_PLUGIN", "AWS_OFI_NCCL_VERSION")),
    Cell("aws-h100-training", "aws", "h100", ("T",), resources={"vpc.amazonaws.com/efa": "32"},
         env={"ATTENTION_BACKEND": "auto"}, no_env=("NVTE_FUSED_ATTN", "NVTE_FLASH_ATTN"),
         pod_resources={"limits": {"cpu": "192", "memory": "1800Gi"}, "requests": {"cpu": "128", "memory": "1200Gi"}},
         command=("rm -rf /opt/amazon",)),
    Cell("aws-gb200", "aws", "gb200", ("C", "LB", "NV", "T"), resources={"vpc.amazonaws.com/efa": "4"},
         env={"FI_PROVIDER": "efa", "FI_EFA_USE_DEVICE_RDMA": "1", "NCCL_MNNVL_ENABLE": "1"}, compute_domain=True,
         capabilities=("IPC_LOCK",)),
    Cell("aws-gb200-comm", "aws", "gb200", ("C",), image=EFA_IMAGE,
         resources={"vpc.amazonaws.com/efa": "4", "hugepages-2Mi": "10256Mi", "memory": "800Gi"},
         env={"FI_EFA_FORK_SAFE": "1", "LD_LIBRARY_PATH": "/opt/amazon/openmpi/lib:/opt/nccl/build/lib:/opt/amazon/efa/lib:"
              "/opt/aws-ofi-nccl/install/lib:/usr/local/nvidia/lib:/opt/amazon/ofi-nccl/lib/aarch64-linux-gnu"},
         mpi_args=("--bind-to none", "--mca pml ^cm,ucx", "--mca btl tcp,self",
                   "--mca btl_tcp_if_exclude lo,docker0,veth_def_agent", "--mca plm_rsh_agent ssh")),
    Cell("aws-gb200-training", "aws", "gb200", ("T",), env={"ATTENTION_BACKEND": "auto"},
         command=('--attention-backend "${ATTENTION_BACKEND:-flash}"',)),
    Cell("aws-gb300", "aws", "gb300", ("C", "LB", "NV", "T"), claims={"roce.networking.k8s.aws": "8"}, compute_domain=True),
    Cell("aws-gb300-comm", "aws", "gb300", ("C",), image=EFA_IMAGE,
         command=("rm -rf /opt/amazon/efa /opt/amazon/ofi-nccl /opt/aws-ofi-nccl", "NCCL_NET_PLUGIN", "NCCL_TUNER_PLUGIN"),
         mpirun="/opt/amazon/openmpi/bin/mpirun",
         mpi_args=("--prefix /opt/amazon/openmpi --bind-to none", "--mca orte_keep_fqdn_hostnames true", *TCP_MPI),
         env={"NCCL_DEBUG_SUBSYS": "NET,INIT", "NCCL_SOCKET_IFNAME": "eth0", "NCCL_IB_GID_INDEX": "3",
              "NCCL_NVLS_ENABLE": "1", "NCCL_CUMEM_ENABLE": "1", "NCCL_NET_GDR_C2C": "1"}),
    Cell("gcp-h100-tcpxo", "gcp", "h100", ("C", "LB", "NV", "T"), image="nvcr.io/nvidia/pytorch:25.06-py3",
         sidecars=("tcpxo-daemon",), tolerations=(GPU_TOL,),
         annotations={"devices.gke.io/container.tcpxo-daemon": "/dev/dmabuf_import_helper",
                      "networking.gke.io/interfaces": '{"interfaceName":"eth8","network":"vpc8"}'},
         host_paths=("/home/kubernetes/bin/nvidia", "/sys", "/proc/sys", "/dev/aperture_devices"),
         env={"NCCL_FASTRAK_IFNAME": "eth1,eth2,eth3,eth4,eth5,eth6,eth7,eth8", "NCCL_FASTRAK_CTRL_DEV": "eth0",
              "NCCL_SOCKET_IFNAME": "eth0", "NCCL_CROSS_NIC": "0", "NCCL_ALGO": "Ring,Tree", "NCCL_PROTO": "Simple",
              "NCCL_P2P_NET_CHUNKSIZE": "524288", "NCCL_NET_GDR_LEVEL": "PIX", "NCCL_TUNER_PLUGIN": "libnccl-tuner.so",
              "NCCL_NVLS_ENABLE": "0", "NCCL_CUMEM_ENABLE": "1", "NCCL_NET_GDR_C2C": "1",
              "LD_LIBRARY_PATH": "/usr/lib/x86_64-linux-gnu:/usr/local/nvidia/lib64"}),
    Cell("gcp-gb200-rdma", "gcp", "gb200", ("C", "LB", "NV", "T"), tolerations=(ARM_TOL, GPU_TOL),
         resources={f"networking.gke.io.networks/rdma-{i}": "1" for i in range(4)},
         annotations={"networking.gke.io/interfaces": '{"interfaceName":"rdma3","network":"rdma-3"}'},
         env={"NCCL_NET_GDR_LEVEL": "5"}, compute_domain=True),
    Cell("gcp-gb300-rdma", "gcp", "gb300", ("C", "LB", "NV", "T"), tolerations=(ARM_TOL, GPU_TOL),
         resources={f"networking.gke.io.networks/rdma-{i}": "1" for i in range(4)}, env={"NCCL_NET_GDR_LEVEL": "5"}),
    Cell("gcp-rtxpro6000-8gpu", "gcp", "rtxpro6000", ("C",), tolerations=(GPU_TOL,),
         env={"NCCL_IB_DISABLE": "1", "NCCL_SOCKET_IFNAME": "eth0", "NCCL_NET_PLUGIN": "none", "NCCL_P2P_LEVEL": "SYS"},
         resources={"nvidia.com/mlnxnics": None}),
    Cell("gcp-rtxpro6000-4gpu", "gcp", "rtxpro6000", ("C",), options={"gpusPerNode": 4},
         env={"NCCL_P2P_LEVEL": "PHB", "NCCL_IB_DISABLE": "1"}),
    Cell("azure-h100-ib", "azure", "h100", ("C", "LB", "NV"), resources={"nvidia.com/mlnxnics": "8"},
         env={"NCCL_IB_PCI_RELAXED_ORDERING": "1", "NCCL_SOCKET_IFNAME": "eth0", "NCCL_TOPO_FILE": "/etc/nccl/topo.xml"},
         config_maps=("<e>-azure-topo",)),
    Cell("azure-h100-comm", "azure", "h100", ("C",),
         env={"OMPI_MCA_coll_hcoll_enable": "0", "OMPI_MCA_orte_keep_fqdn_hostnames": "t", "UCX_IB_PCI_RELAXED_ORDERING": "on",
              "UCX_MEM_EVENTS": "n", "UCX_NET_DEVICES": "eth0", "UCX_TLS": "tcp", "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
              "NCCL_MIN_NCHANNELS": "32", "NCCL_NET_GDR_LEVEL": "5", "NCCL_NVLS_ENABLE": "1",
              "NCCL_IB_QPS_PER_CONNECTION": "4", "NCCL_IGNORE_CPU_AFFINITY": "1", "NCCL_P2P_NET_CHUNKSIZE": "2097152"}),
    Cell("azure-h100-training", "azure", "h100", ("T",), resources={"nvidia.com/mlnxnics": "8"}, capabilities=("IPC_LOCK",),
         env={"NCCL_IB_PCI_RELAXED_ORDERING": "1", "NCCL_IGNORE_CPU_AFFINITY": "1", "NCCL_SOCKET_IFNAME": "eth0",
              "NCCL_TOPO_FILE": "/etc/nccl/topo.xml", "NCCL_COLLNET_ENABLE": "1", "NCCL_IB_QPS_PER_CONNECTION": "4",
              "NCCL_IB_SPLIT_DATA_ON_QPS": "0", "NCCL_IB_AR_THRESHOLD": "0", "NCCL_IB_HCA": "mlx5",
              "UCX_TLS": "rc,cuda_copy,cuda_ipc", "UCX_NET_DEVICES": "all"},
         config_maps=("<e>-azure-topo",)),
    Cell("azure-a100", "azure", "a100", ("C", "T"), resources={"nvidia.com/mlnxnics": "8"},
         env={"NCCL_IB_PCI_RELAXED_ORDERING": "1", "NCCL_SOCKET_IFNAME": "eth0", "NCCL_COLLNET_ENABLE": "1",
              "NCCL_IB_HCA": "mlx5", "NCCL_TOPO_FILE": "/etc/nccl/topo.xml"},
         config_maps=("<e>-azure-topo",)),
    Cell("azure-gb200", "azure", "gb200", ("C", "T"), resources={"nvidia.com/mlnxnics": "8"}, compute_domain=True,
         no_env=("NCCL_TOPO_FILE", "NCCL_NVLS_ENABLE"),
         note="no GB200 topology file is shipped; the H100 one is not mounted there"),
    Cell("azure-gb200-training", "azure", "gb200", ("T",), env={"NCCL_COLLNET_ENABLE": "1", "NCCL_IB_HCA": "mlx5"}),
    Cell("oci-h100-sriov", "oci", "h100", ("C", "LB", "NV"), resources={"nvidia.com/mlnxnics": "8"},
         annotations={"k8s.v1.cni.cncf.io/networks": ",".join(["network-operator/sriov-net"] * 8)},
         env={**OCI_ROCE_ENV, "NCCL_IB_SPLIT_DATA_ON_QPS": "0", "NCCL_SOCKET_IFNAME": "eth0"}),
    Cell("oci-gb200-no-nic", "oci", "gb200", ("C",), resources={"nvidia.com/mlnxnics": None},
         annotations={}, env={"UCX_IB_GID_INDEX": "3", **OCI_ROCE_ENV}, no_env=("NCCL_DMABUF_ENABLE", "NCCL_NVLS_ENABLE")),
    Cell("oci-gb300", "oci", "gb300", ("C", "T"), resources={"nvidia.com/mlnxnics": "4"},
         env={**OCI_ROCE_ENV, "UCX_IB_GID_INDEX": "3", "NCCL_TOPO_FILE": "/etc/nccl/topo.xml",
              "NCCL_IB_ADAPTIVE_ROUTING": "1", "NCCL_IB_SPLIT_DATA_ON_QPS": "1"},
         host_paths=("/etc/nccl/topo.xml",), no_env=("NCCL_DMABUF_ENABLE",)),
    Cell("oci-gb300-comm-mpi", "oci", "gb300", ("C",), mpi_args=(*TCP_MPI, *NO_UCC_HCOLL)),
    Cell("oci-gb300-no-mnnvl", "oci", "gb300", ("C", "T"), options={"enableMNNVL": False},
         env={"NCCL_DMABUF_ENABLE": "0", "NCCL_MNNVL_ENABLE": "0"}, compute_domain=False),
    Cell("oci-gb300-loopback", "oci", "gb300", ("LB",), env={"UCX_IB_GID_INDEX": "3", "NCCL_IB_GID_INDEX": "3"}),
    Cell("oci-l40s-training", "oci", "l40s", ("T",), resources={"nvidia.com/mlnxnics": "2"},
         env={**OCI_ROCE_ENV, "NCCL_NVLS_ENABLE": "0", "NCCL_MNNVL_ENABLE": "0"}),
    Cell("oci-dcgm", "oci", "h100", ("D",), privileged=False),
    Cell("togetherai-h100", "togetherai", "h100", ("C", "LB", "NV", "T"), resources={"nvidia.com/mlnxnics": "8"},
         env={"NCCL_IB_PCI_RELAXED_ORDERING": "1", "NCCL_IGNORE_CPU_AFFINITY": "1", "NCCL_SOCKET_IFNAME": "eth0",
              "NCCL_IB_QPS_PER_CONNECTION": "2", "NCCL_IB_SPLIT_DATA_ON_QPS": "0", "NCCL_IB_AR_THRESHOLD": "0",
              "NCCL_CUMEM_ENABLE": "1"}, no_env=NO_NVLS),
    Cell("mistral-gb300", "mistral", "gb300", ("C", "LB", "NV", "T"), resources={"rdma/ib": "1", "nvidia.com/gpu": "4"},
         tolerations=(ARM_TOL, GPU_TOL),
         env={"NCCL_IB_HCA": "mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1", "NCCL_IB_PCI_RELAXED_ORDERING": "1",
              "UCX_NET_DEVICES": "mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1", "SHARP_COLL_ENABLE_PCI_RELAXED_ORDERING": "1",
              "OMPI_MCA_btl_openib_warn_default_gid_prefix": "0", "PMIX_MCA_gds": "^ds12", "CUDA_CACHE_DISABLE": "1",
              "NCCL_DMABUF_ENABLE": "0", "NCCL_MNNVL_ENABLE": "1"}),
    Cell("nscale-legacy-h100", "nscale", "h100", ("C",), resources={"nscale.com/rdmashare": "8"},
         env={"NCCL_SOCKET_IFNAME": "eth0", "NCCL_IB_QPS_PER_CONNECTION": "8", "NCCL_IB_HCA": "^mlx5_bond",
              "UCX_NET_DEVICES": ",".join(f"mlx5_{i}:1" for i in range(12)), "NCCL_NET_GDR_LEVEL": "2"},
         no_claims=("gpu.nvidia.com",)),
    Cell("nscale-gb300-dra", "nscale", "gb300", ("C", "LB", "T"), resources={"nvidia.com/gpu": None},
         claims={"gpu.nvidia.com": "4", "rdma.nscale.com": "4"}, tolerations=(ARM_TOL, GPU_TOL),
         env={**NVL72_IB_ENV, **GB200_ENV, "NCCL_SOCKET_IFNAME": "eth0", "NCCL_NVLS_ENABLE": "1"},
         topology_key="topology.nks.nscale.com/accelerator-domain"),
    Cell("nscale-b200-dra", "nscale", "b200", ("C", "LB", "T"), resources={"nvidia.com/gpu": None},
         claims={"gpu.nvidia.com": "8", "rdma.nscale.com": "8"}, tolerations=(GPU_TOL,),
         env={**NVL72_IB_ENV, **GB200_ENV, "NCCL_SOCKET_IFNAME": "eth0", "NCCL_NVLS_ENABLE": "1"}),
    Cell("nscale-gpu-only", "nscale", "gb300", ("NV", "D"), resources={"nvidia.com/gpu": None},
         claims={"gpu.nvidia.com": "4"}, no_claims=("rdma.nscale.com",)),
    Cell("nscale-dcgm", "nscale", "b200", ("D",), command=("nvidia-dcgm-dra.nvidia-platform.svc:5555",)),
    Cell("forge-l40", "forge", "l40", ("C", "LB"), env={"CUDA_DEVICE_ORDER": "PCI_BUS_ID"}),
    Cell("forge-l40-comm", "forge", "l40", ("C",), resources={"nvidia.com/mlnxnics": "4"},
         env={"NCCL_IB_GID_INDEX": "3", "NCCL_IB_PCI_RELAXED_ORDERING": "1", "NCCL_IB_QPS_PER_CONNECTION": "4",
              "NCCL_IB_SL": "0", "NCCL_IB_SPLIT_DATA_ON_QPS": "0", "NCCL_SOCKET_IFNAME": "eth0",
              "OMPI_MCA_coll_hcoll_enable": "0", "OMPI_MCA_coll_ucc_enable": "0", "OMPI_MCA_orte_keep_fqdn_hostnames": "t",
              "UCX_IB_PCI_RELAXED_ORDERING": "on", "UCX_MEM_EVENTS": "n", "UCX_NET_DEVICES": "eth0", "UCX_TLS": "tcp"}),
    Cell("forge-gb200", "forge", "gb200", ("C",), mpi_args=(*NO_UCC_HCOLL, *TCP_MPI),
         env={**GB200_ENV, "UCX_TLS": "tcp", "UCX_NET_DEVICES": "eth0"}),
    Cell("onprem-gb200-nvl72", "onprem", "gb200", ("C", "LB", "NV", "T"), tolerations=(ARM_TOL, GPU_TOL),
         options={"nicResourceName": "rdma/ib"}, resources={"rdma/ib": "8"}, env=NVL72_IB_ENV, compute_domain=True),
    Cell("onprem-gb300-no-nic", "onprem", "gb300", ("C", "T"), env=NVL72_IB_ENV, no_env=NO_NVLS,
         resources={"rdma/ib": None, "nvidia.com/mlnxnics": None}, note="no NIC known: nothing requested"),
    Cell("onprem-b200-hgx", "onprem", "b200", ("C", "LB", "NV", "T"), tolerations=(GPU_TOL,), no_tolerations=(ARM_TOL,),
         options={"nicResourceName": "nvidia.com/mlnxnics"}, resources={"nvidia.com/mlnxnics": "8"}),
    Cell("onprem-b200-no-nccl-env", "onprem", "b200", ("C", "LB", "NV"),
         no_env=("NCCL_IB_PCI_RELAXED_ORDERING", "NCCL_SOCKET_IFNAME", "NCCL_CUMEM_ENABLE", "NCCL_NVLS_ENABLE"),
         note="deliberately no NCCL environment on HGX B200/B300 (NCCL's own probing is right there)"),
    Cell("onprem-b300-hgx", "onprem", "b300", ("C",), tolerations=(GPU_TOL,), no_tolerations=(ARM_TOL,),
         resources={"": None}),
    Cell("any-gb200-compute-domain", "togetherai", "gb200", ("C", "LB", "NV", "T"), compute_domain=True,
         env={"NCCL_MNNVL_ENABLE": "1"}),
    Cell("any-gb300-comm-env", "togetherai", "gb300", ("C", "LB", "NV"), env=GB200_ENV, no_env=NO_NVLS),
    Cell("any-gb200-training-clique", "togetherai", "gb200", ("T",), topology_key="nvidia.com/gpu.clique"),
    Cell("any-gb300-dcgm-clique", "togetherai", "gb300", ("D",), topology_key="nvidia.com/gpu.clique", compute_domain=False),
    Cell("any-l40-training", "oci", "l40", ("T",), env={"NCCL_NVLS_ENABLE": "0", "NCCL_MNNVL_ENABLE": "0"}),
    Cell("any-l40s-training", "togetherai", "l40s", ("T",), env={"NCCL_NVLS_ENABLE": "0", "NCCL_MNNVL_ENABLE": "0"}),
    Cell("any-rdma-hostpath", "aws", "h100", ("C", "T"), options={"rdmaDeviceAccess": "hostPath"},
         host_paths=("/dev/infiniband",), privileged=True),
    Cell("training-attention-flash", "oci", "gb300", ("T",), no_env=("ATTENTION_BACKEND", "NVTE_FUSED_ATTN"),
         command=('--attention-backend "${ATTENTION_BACKEND:-flash}"',), note="every platform but AWS H100/GB200 runs flash"),
    Cell("bare-base", "onprem", "h100", ("C", "LB", "NV", "D", "T"), no_env=("NCCL_SOCKET_IFNAME",),
         note="an architecture with no block renders the entry as it is", only=("C", "LB", "NV")),
]


def _resolve(cell: Cell, key: str) -> ResolvedCategory:
    domain, variant = key.split("/")
    return resolve_category({"domain": domain, "variant": variant, "options": dict(cell.options) or None}, None,
                            platform=cell.platform, gpu_arch=cell.arch)


def _render(r: ResolvedCategory) -> list[dict]:
    per_node = r.nodes_per_job == 1
    nodes = ["node-001"] if per_node else ["node-001", "node-002"]
    if r.min_gpus and not per_node:
        nodes = [f"node-{i:03d}" for i in range(1, (r.valid_node_count(8) or 8) + 1)]
    name = f"golden-{r.variant}"
    return render_workload(r, name=name, namespace="nvcre-golden", nodes=nodes, adapter="native",
                           job=name, group="group-0")


def _command_line(r: ResolvedCategory) -> str:
    w = r.workload
    parts = [*w.pre_command, *w.command, *w.args]
    if w.mpi is not None:
        command, args = mpirun_argv(w)
        parts += [*command, *args]
    return " ".join(parts)


def _facts(cell: Cell, r: ResolvedCategory, objects: list[dict]) -> list[str]:
    """Every fact of the cell that does not hold for this entry, as readable lines."""
    w, env = r.workload, dict(r.env)
    bad: list[str] = []
    for name, value in cell.env.items():
        if env.get(name) != value:
            bad.append(f"env {name}={value!r}, got {env.get(name)!r}")
    bad += [f"env {name} must be unset, got {env[name]!r}" for name in cell.no_env if name in env]
    for name, value in cell.resources.items():
        if value is None:
            if name in w.resources or (name == "" and any(not k for k in w.resources)):
                bad.append(f"resource {name or '<empty name>'} must not be requested, got {w.resources}")
        elif w.resources.get(name) != value:
            bad.append(f"resource {name}: {value}, got {w.resources.get(name)!r}")
    for key, part in cell.annotations.items():
        if part not in w.pod_annotations.get(key, ""):
            bad.append(f"annotation {key} should contain {part!r}, got {w.pod_annotations.get(key)!r}")
    if not cell.annotations and cell.id == "oci-gb200-no-nic" and "k8s.v1.cni.cncf.io/networks" in w.pod_annotations:
        bad.append("no SR-IOV network annotation when mlnxPerNode is 0")
    tolerated = {t.get("key") for t in w.tolerations}
    bad += [f"toleration {k} missing" for k in cell.tolerations if k not in tolerated and not w.blanket_toleration]
    bad += [f"toleration {k} must not be added" for k in cell.no_tolerations if k in tolerated]
    if cell.image and r.image != cell.image:
        bad.append(f"image {cell.image}, got {r.image}")
    claims = {c["deviceClass"]: str(c["count"]) for c in w.claims}
    for cls, count in cell.claims.items():
        if claims.get(cls) != count:
            bad.append(f"claim {cls} x{count}, got {claims}")
    bad += [f"claim {cls} must not be made" for cls in cell.no_claims if cls in claims]
    paths = {h["path"] for h in w.host_paths}
    bad += [f"hostPath {p} missing (have {sorted(paths)})" for p in cell.host_paths if p not in paths]
    if cell.compute_domain is not None and w.compute_domain != cell.compute_domain:
        bad.append(f"computeDomain {cell.compute_domain}, got {w.compute_domain}")
    if cell.topology_key and r.topology_key != cell.topology_key:
        bad.append(f"topologyKey {cell.topology_key}, got {r.topology_key}")
    line = _command_line(r)
    bad += [f"command line should contain {part!r}" for part in cell.command if part not in line]
    if w.mpi is not None:
        joined = " ".join(w.mpi.extra_args)
        bad += [f"mpirun args should contain {a!r}, got {joined!r}" for a in cell.mpi_args if a not in joined]
        if cell.mpirun and w.mpi.mpirun != cell.mpirun:
            bad.append(f"mpirun {cell.mpirun}, got {w.mpi.mpirun}")
        if cell.binary and not w.mpi.binary.startswith(cell.binary):
            bad.append(f"binary under {cell.binary}, got {w.mpi.binary}")
    elif cell.binary and not (w.command and w.command[0].startswith(cell.binary)):
        bad.append(f"binary under {cell.binary}, got {w.command[:1]}")
    if cell.privileged is not None and bool(w.privileged) != cell.privileged:
        bad.append(f"privileged {cell.privileged}, got {w.privileged}")
    names = {s["name"] for s in w.sidecars}
    bad += [f"sidecar {s} missing" for s in cell.sidecars if s not in names]
    bad += [f"capability {cap} missing" for cap in cell.capabilities if cap not in w.capabilities]
    for part, amounts in cell.pod_resources.items():
        for name, value in amounts.items():
            if (w.pod_resources.get(part) or {}).get(name) != value:
                bad.append(f"{part}.{name} {value}, got {(w.pod_resources.get(part) or {}).get(name)!r}")
    rendered_cms = {o["metadata"]["name"] for o in objects if o.get("kind") == "ConfigMap"}
    for cm in cell.config_maps:
        wanted = cm.replace("<e>", f"golden-{r.variant}")
        if wanted not in rendered_cms:
            bad.append(f"ConfigMap {wanted} not rendered (have {sorted(rendered_cms)})")
    return bad


def test_cell_ids_are_unique():
    assert len({c.id for c in CELLS}) == len(CELLS)


@pytest.mark.parametrize("cell", CELLS, ids=lambda c: c.id)
def test_cell_facts_hold_for_every_listed_entry(cell: Cell):
    problems = []
    for cls in cell.only or cell.classes:
        for key in CLASSES[cls]:
            r = _resolve(cell, key)
            problems += [f"{key}: {p}" for p in _facts(cell, r, _render(r))]
    assert not problems, f"{cell.id} ({cell.platform}/{cell.arch}): " + "; ".join(problems)


@pytest.mark.parametrize("cell", CELLS, ids=lambda c: c.id)
def test_cell_golden(cell: Cell):
    parts = [f"# cell {cell.id}: platform {cell.platform}, gpu {cell.arch}, entries {', '.join(cell.classes)}"
             + (f", options {cell.options}" if cell.options else "") + (f"\n# {cell.note}" if cell.note else "") + "\n"]
    for cls in cell.classes:
        key = CLASSES[cls][0]
        r = _resolve(cell, key)
        parts.append(f"# ===== {cls}: {key}; overrides: {', '.join(r.applied_overrides) or 'none'}\n" + dump_yaml(_render(r)))
    text = "".join(parts)
    path = GOLDEN / f"{cell.id}.yaml"
    if os.environ.get("NVCRE_UPDATE_GOLDEN") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    assert path.exists(), f"missing {path}; run NVCRE_UPDATE_GOLDEN=1 pytest {__file__}"
    assert text == path.read_text(), f"{path.name} differs from a fresh render; review and regenerate"


def test_every_golden_belongs_to_a_cell():
    stale = {p.stem for p in GOLDEN.glob("*.yaml")} - {c.id for c in CELLS}
    assert not stale, f"golden files without a cell: {sorted(stale)}"
