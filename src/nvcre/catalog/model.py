"""What resolution produces: one category, fully decided, ready for an adapter.

``ResolvedCategory`` is plain data. The controller reads its sizing, timeout,
thresholds and measurement; ``render_workload`` turns its ``workload`` into
Kubernetes objects. Nothing here knows how the objects are laid out.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class MpiSpec:
    """How the launcher starts the ranks: ``timeout <s> [prefix] mpirun <args> -x .. <binary> <binaryArgs>``."""

    mpirun: str
    timeout_seconds: int
    prefix: tuple[str, ...]  # e.g. ("env", "-u", "OMPI_MCA_btl_tcp_if_include", ...)
    extra_args: tuple[str, ...]  # platform mpirun arguments, after the leading ones
    binary: str
    binary_args: tuple[str, ...]


@dataclass(frozen=True)
class WorkloadSpec:
    """The workload's pods, adapter-neutral.

    ``launch`` is ``mpi`` (a launcher runs mpirun over sshd workers), ``torchrun`` (every
    node runs torchrun, rank from its index), ``per-node`` (one process per node, no
    rendezvous) or ``exec`` (the user's command on every node).
    """

    launch: str
    image: str
    command: tuple[str, ...]  # per-node/exec/torchrun: the rank container's command
    args: tuple[str, ...]
    mpi: MpiSpec | None
    env: tuple[tuple[str, str], ...]  # ordered, each name once
    gpus_per_node: int
    resources: dict[str, str]  # per rank pod, requests == limits (nvidia.com/gpu, NICs, hugepages, ...)
    pod_resources: dict[str, dict[str, str]]  # cpu/memory limits and requests (training)
    capabilities: tuple[str, ...]
    privileged: bool | None
    host_network: bool
    restart_policy: str
    pod_annotations: dict[str, str]
    tolerations: tuple[dict[str, Any], ...]  # named tolerations from the entry and fragments
    blanket_toleration: bool  # the entry tolerates every taint ({operator: Exists})
    host_paths: tuple[dict[str, Any], ...]  # {name, path, mountPath, type?}
    sidecars: tuple[dict[str, Any], ...]  # {name, image, command, args, capabilities, mounts, env}
    claims: tuple[dict[str, Any], ...]  # DRA: {name, deviceClass, count}
    compute_domain: bool
    pre_command: tuple[str, ...]  # shell lines run before the main command
    init_script: str | None  # training: fetch the Megatron-LM source (same image)
    checkpoint: dict[str, Any] | None  # {storageSize, storageClassName?, maxRestarts}
    image_pull_secrets: tuple[str, ...] = ()
    volumes: tuple[dict[str, Any], ...] = ()  # WorkloadRun user volumes (core Volume dicts)
    volume_mounts: tuple[dict[str, Any], ...] = ()
    init_containers: tuple[dict[str, Any], ...] = ()  # WorkloadRun user init containers
    env_refs: tuple[tuple[str, dict[str, Any]], ...] = ()  # WorkloadRun valueFrom vars (forwarded to MPI by name)
    config: dict[str, Any] | None = None  # WorkloadRun /config: {"inline": {file: text}} or {"configMapRef": name}
    config_files: tuple[dict[str, Any], ...] = ()  # catalog files: {name, mountPath, data} -> ConfigMap <workload>-<name>


@dataclass(frozen=True)
class Measurement:
    kind: str  # BandwidthMeasurement | GoodputMeasurement
    log_profile: str
    sample_interval: str
    test_type: str | None = None

    def to_spec(self) -> dict[str, str]:
        """The measurement config a Job carries (``bandwidthMeasurement`` / ``goodputMeasurement``)."""
        spec = {"logProfileRef": self.log_profile, "sampleInterval": self.sample_interval}
        if self.test_type:
            spec["testType"] = self.test_type
        return spec


@dataclass(frozen=True)
class GangScheduling:
    scheduler_name: str
    queue: str
    queue_label_key: str

    @property
    def is_kai(self) -> bool:
        return self.scheduler_name == "kai-scheduler"


@dataclass(frozen=True)
class ResolvedCategory:
    """One category after catalog, platform and GPU overrides and the user's options."""

    domain: str
    variant: str
    platform: str
    gpu_arch: str
    summary: str
    workload: WorkloadSpec
    env: tuple[tuple[str, str], ...]
    env_sources: dict[str, str]  # variable -> the file/block or user field that set it
    labels: dict[str, str]  # workloadMetadata labels for the submitted object
    image: str
    image_pull_secrets: tuple[str, ...]
    timeout_per_job: str
    test_scale: str
    requested_test_scale: str | None
    nodes_per_job: int | None  # None: all nodes (or, for training, the largest valid count)
    placement: str  # Pinned | Unpinned
    gpus_per_node: int
    mlnx_per_node: int
    nic_resource_name: str | None
    enable_mnnvl: bool
    thresholds: dict[str, str]
    measurement: Measurement | None
    measurement_timeout: str | None
    applied_overrides: tuple[str, ...]
    gang: GangScheduling | None
    topology_key: str | None
    iterations: int
    max_concurrent: int
    min_group_size: int
    node_health_expression: str
    stall_multiplier: int | None = None
    startup_stall_timeout_seconds: int | None = None
    min_gpus: int | None = None
    tensor_parallel: int = 1
    pipeline_parallel: int = 1
    warnings: tuple[str, ...] = ()
    # (type, reason, message) for the owner object when its Workflow is created, e.g.
    # ("Warning", "GKENetworkDetection", "..."); warnings above are the CLI's text form.
    events: tuple[tuple[str, str, str], ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)
    isolate_failures: bool = True  # narrow a group's threshold miss down to nodes before naming them
    workload_registry: str | None = None  # mirror every workload image is pulled from (nvcre.workloads.registry)

    @property
    def key(self) -> str:
        return f"{self.domain}/{self.variant}"

    def valid_node_count(self, available: int) -> int:
        """Largest node count <= ``available`` the workload can run on (0 when none).

        Training needs nodes x GPUs >= minGPUs and a GPU total divisible by TP x PP;
        other entries take any count.
        """
        if not self.min_gpus:
            return max(available, 0)
        model_parallel = self.tensor_parallel * self.pipeline_parallel
        for n in range(available, 0, -1):
            total = n * self.gpus_per_node
            if total >= self.min_gpus and total % model_parallel == 0:
                return n
        return 0
