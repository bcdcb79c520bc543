"""What each simulated GPU architecture looks like and how fast it is.

One table, so the Node labels (what GPU Feature Discovery would write), the fabric
model (NVLink and NIC rates) and the emulators (device names in tool output, TFLOP/s
in training logs) all agree. Rates are the measured or pass-line figures collected in
``shared/reference/peers-and-limits.md`` (section 5), not datasheet peaks:

* ``nvlink_busbw``: intra-node all-reduce bus bandwidth an 8-GPU (or 4-GPU) node
  reaches at large sizes (H100 ~476-478 GB/s with NVLS; H200 pass line ~431-460).
* ``nic_gbs``: what NCCL gets out of one NIC (NDR 400 Gb/s: 46-49 GB/s; HDR: ~24;
  XDR/CX8 800 Gb/s: ~94-98).
* ``mnnvl_busbw``: all-reduce bus bandwidth across an NVL72 NVLink domain (GB200
  ~882, GB300 ~923 measured at 16 GB).
"""

from __future__ import annotations

from dataclasses import dataclass

from nvcre.errors import UserError


@dataclass(frozen=True)
class ArchSpec:
    """One GPU architecture as a node of it presents itself."""

    key: str  # short name used by the catalog: h100, gb200, ...
    product: str  # nvidia.com/gpu.product label value
    device_name: str  # what nvidia-smi / nccl-tests print
    family: str  # nvidia.com/gpu.family
    compute: tuple[int, int]  # CUDA compute capability
    memory_mib: int  # nvidia.com/gpu.memory
    gpus_per_node: int
    cpu_arch: str  # kubernetes.io/arch of the host
    nvlink_busbw: float  # GB/s, intra-node ring bus bandwidth
    nic_count: int  # RDMA NICs per node (0 = none: TCP only)
    nic_gbs: float  # GB/s one NIC delivers to NCCL
    mnnvl_busbw: float | None  # GB/s across an NVL72 domain, None if not NVL72
    tflops: float  # achieved dense BF16 TFLOP/s per GPU in Megatron pretraining
    pci_device_id: str  # hex, as dcgmi lists "GPU Device IDs"
    pci_buses: tuple[str, ...]  # one bus id per GPU, as in "[0000:18:00]"


_DGX_BUSES = ("18", "2a", "3a", "5d", "9a", "ab", "ba", "db")
_GB_BUSES = ("01", "02", "03", "04")

ARCHITECTURES: dict[str, ArchSpec] = {
    spec.key: spec
    for spec in (
        ArchSpec("h100", "NVIDIA-H100-80GB-HBM3", "NVIDIA H100 80GB HBM3", "hopper", (9, 0), 81559,
                 8, "amd64", 478.0, 8, 48.5, None, 540.0, "2330", _DGX_BUSES),
        ArchSpec("h200", "NVIDIA-H200", "NVIDIA H200", "hopper", (9, 0), 143771,
                 8, "amd64", 462.0, 8, 48.5, None, 600.0, "2335", _DGX_BUSES),
        ArchSpec("a100", "NVIDIA-A100-SXM4-80GB", "NVIDIA A100-SXM4-80GB", "ampere", (8, 0), 81920,
                 8, "amd64", 232.0, 8, 24.0, None, 165.0, "20b2", _DGX_BUSES),
        ArchSpec("b200", "NVIDIA-B200", "NVIDIA B200", "blackwell", (10, 0), 183359,
                 8, "amd64", 780.0, 8, 48.5, None, 1100.0, "2901", _DGX_BUSES),
        ArchSpec("b300", "NVIDIA-B300-SXM6-AC", "NVIDIA B300 SXM6 AC", "blackwell", (10, 3), 275040,
                 8, "amd64", 810.0, 8, 94.0, None, 1300.0, "3182", _DGX_BUSES),
        ArchSpec("gb200", "NVIDIA-GB200", "NVIDIA GB200", "blackwell", (10, 0), 189471,
                 4, "arm64", 720.0, 4, 48.5, 885.0, 1180.0, "2941", _GB_BUSES),
        ArchSpec("gb300", "NVIDIA-GB300", "NVIDIA GB300", "blackwell", (10, 3), 284208,
                 4, "arm64", 740.0, 4, 98.0, 925.0, 1390.0, "31c2", _GB_BUSES),
        ArchSpec("l40s", "NVIDIA-L40S", "NVIDIA L40S", "ada-lovelace", (8, 9), 46068,
                 8, "amd64", 22.0, 8, 24.0, None, 180.0, "26b9", _DGX_BUSES),
        ArchSpec("l40", "NVIDIA-L40", "NVIDIA L40", "ada-lovelace", (8, 9), 46068,
                 8, "amd64", 20.0, 4, 24.0, None, 150.0, "26b5", _DGX_BUSES),
        # A GPU the catalog has no defaults for (seed 003's H20 nodes): 8 GPUs, NV18, eight
        # 200 Gb/s RoCE ports (~24 GB/s each through NCCL), single-node all-reduce ~465 GB/s.
        # TFLOP/s is a simulation value (no published training figure).
        ArchSpec("h20", "NVIDIA-H20", "NVIDIA H20", "hopper", (9, 0), 97871,
                 8, "amd64", 465.0, 8, 24.0, None, 120.0, "2329", _DGX_BUSES),
        ArchSpec("rtxpro6000", "NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition",
                 "NVIDIA RTX PRO 6000 Blackwell Server Edition", "blackwell", (12, 0), 97887,
                 8, "amd64", 40.0, 0, 0.0, None, 250.0, "2bb5", _DGX_BUSES),
    )
}

#: Driver the simulated nodes report (GFD cuda.driver.* labels, dcgmi metadata).
DRIVER_VERSION = (570, 133, 20)
CUDA_RUNTIME = (12, 8)
DCGM_VERSION = "3.3.9"
NCCL_VERSION = "2.27.7+cuda12.9"
NCCL_VERSION_CODE = 22707
NCCL_TESTS_VERSION = "2.17.8"

#: TCP throughput per node when NCCL falls back to sockets (one 100 GbE-class link).
SOCKET_GBS = 10.0


def arch_spec(key: str) -> ArchSpec:
    """Look an architecture up by its short name; unknown names are a user error."""
    spec = ARCHITECTURES.get(key.lower())
    if spec is None:
        allowed = ", ".join(sorted(ARCHITECTURES))
        raise UserError(f"--gpu: unknown GPU architecture {key!r}; allowed: {allowed}")
    return spec
