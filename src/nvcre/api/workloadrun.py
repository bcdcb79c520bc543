"""WorkloadRun: run any multi-node GPU workload without the catalog.

Give an image, exactly one framework (torch, mpi or exec) and a node count; the
controller builds one Workflow from it with the platform's NCCL environment, the
shared-memory volume and GPU/NIC requests. The spec is immutable.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, StringConstraints, model_validator

from nvcre.api.common import (
    MAX_NODES,
    PHASE_DESCRIPTION,
    ApiModel,
    Conditions,
    Duration,
    FailedNodes,
    FieldProblem,
    LocalObjectReference,
    NamespacedRef,
    Phase,
    Quantity,
    TargetSpec,
    Timestamp,
    TypedLocalObjectReference,
    cel,
)
from nvcre.api.gang import GangSchedulerSpec
from nvcre.api.kinds import AGE, FAILED_NODES, RUN_PHASE, CrdInfo, KubeObject, PrinterColumn
from nvcre.api.measurement import BandwidthMeasurementConfig, GoodputMeasurementConfig
from nvcre.api.options import (
    ENV_NAME_PATTERN,
    NIC_RESOURCE_PATTERN,
    STORAGE_SIZE_PATTERN,
    Placement,
    Thresholds,
    WorkloadMetadata,
    check_env_names_unique,
    check_nic_resource_name,
    check_thresholds,
    nic_resource_rule,
)
from nvcre.api.quantity import parse_quantity
from nvcre.api.rules import (
    ENV_RULE,
    MAX_GPUS_PER_NODE,
    MAX_NICS_PER_NODE,
    MAX_REPEAT,
    MIRROR_PATTERN,
    MOUNT_RULE,
    RESERVED_MOUNT_PATHS,
    RESERVED_VOLUME_NAMES,
    VOLUME_RULE,
    ConfigMapName,
    StorageClassName,
    check_config_key,
    check_env_name,
)
from nvcre.api.workflow import OverrideSpec

_FREE_OBJECT = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
# Free objects whose one field a CEL rule reads is bounded, so the rule's cost estimate is.
_VOLUME = {**_FREE_OBJECT, "properties": {"name": {"type": "string", "maxLength": 253}}}
_MOUNT = {**_FREE_OBJECT, "properties": {"mountPath": {"type": "string", "maxLength": 4096}}}
Arg = Annotated[str, StringConstraints(max_length=4096)]
Args = Annotated[list[Arg], Field(max_length=256)]
MAX_RUN_ENV = 128


class TorchFramework(ApiModel):
    """torchrun: exactly one of script or module."""

    script: Annotated[str, StringConstraints(min_length=1, max_length=4096)] | None = Field(
        None, description="Script run as `torchrun <script> <args>`."
    )
    module: Annotated[str, StringConstraints(min_length=1, max_length=4096)] | None = Field(
        None, description="Module run as `torchrun -m <module> <args>`."
    )
    args: Args | None = None

    @classmethod
    def cel_rules(cls) -> list[dict[str, str]]:
        return [cel("has(self.script) != has(self.module)", "set exactly one of script or module")]

    @model_validator(mode="after")
    def _one_entry(self) -> "TorchFramework":
        if (self.script is None) == (self.module is None):
            raise FieldProblem("", "set exactly one of script or module")
        return self


class MpiFramework(ApiModel):
    """mpirun from a launcher pod, ranks over sshd on the workers (NCCL tests and other MPI programs)."""

    binary: Annotated[str, StringConstraints(min_length=1, max_length=4096)] = Field(description="Program each rank runs.")
    args: Args | None = Field(None, description="Arguments for the program.")
    mpi_args: Args | None = Field(None, description="Extra mpirun arguments, before the program.")
    mpi_implementation: Literal["OpenMPI"] = Field("OpenMPI", description="MPI flavour (OpenMPI).")
    mpirun_path: Annotated[str, StringConstraints(min_length=1, max_length=4096)] = Field(
        description="Path of mpirun in the image, e.g. /usr/local/mpi/bin/mpirun."
    )


class ExecFramework(ApiModel):
    """An arbitrary command on every node."""

    command: Annotated[list[Arg], Field(min_length=1, max_length=64)]
    args: Args | None = None


class FrameworkSpec(ApiModel):
    """Exactly one of torch, mpi or exec."""

    torch: TorchFramework | None = None
    mpi: MpiFramework | None = None
    exec: ExecFramework | None = None

    @classmethod
    def cel_rules(cls) -> list[dict[str, str]]:
        return [
            cel(
                "[has(self.torch), has(self.mpi), has(self.exec)].filter(x, x).size() == 1",
                "set exactly one of torch, mpi or exec",
            )
        ]

    @model_validator(mode="after")
    def _exactly_one(self) -> "FrameworkSpec":
        chosen = [name for name in ("torch", "mpi", "exec") if getattr(self, name) is not None]
        if len(chosen) != 1:
            found = f" (found {', '.join(chosen)})" if chosen else ""
            raise FieldProblem("", f"set exactly one of torch, mpi or exec{found}")
        return self

    @property
    def kind(self) -> str:
        return "torch" if self.torch else "mpi" if self.mpi else "exec"


class RunEnvVar(ApiModel):
    """A workload variable: a literal value, or valueFrom (MPI forwards it by bare name)."""

    name: Annotated[str, StringConstraints(min_length=1, max_length=256, pattern=ENV_NAME_PATTERN)]
    value: Annotated[str, StringConstraints(max_length=4096)] | None = None
    value_from: dict[str, Any] | None = Field(None, json_schema_extra=_FREE_OBJECT)

    @classmethod
    def cel_rules(cls) -> list[dict[str, str]]:
        return [cel("!(has(self.value) && has(self.valueFrom))", "set value or valueFrom, not both", field_path=".valueFrom"),
                dict(ENV_RULE)]

    @model_validator(mode="after")
    def _one_source(self) -> "RunEnvVar":
        if self.value is not None and self.value_from is not None:
            raise FieldProblem("valueFrom", "set value or valueFrom, not both")
        reserved = check_env_name(self.name)
        if reserved:
            raise FieldProblem("name", reserved)
        return self


class ConfigMapRef(ApiModel):
    name: ConfigMapName


class RunConfig(ApiModel):
    """Files mounted at /config: inline content (becomes ConfigMap <run>-config) or an existing ConfigMap."""

    inline: Annotated[dict[str, Annotated[str, StringConstraints(max_length=262144)]], Field(max_length=64)] | None = Field(
        None, description="File name -> content (a file name, not a path; checked by nvcrectl and the controller: "
        "map keys have no size bound the API server's CEL cost estimate could use)."
    )
    config_map_ref: ConfigMapRef | None = None

    @classmethod
    def cel_rules(cls) -> list[dict[str, str]]:
        return [cel("!(has(self.inline) && has(self.configMapRef))", "set inline or configMapRef, not both")]

    @model_validator(mode="after")
    def _exclusive(self) -> "RunConfig":
        if self.inline is not None and self.config_map_ref is not None:
            raise FieldProblem("", "set inline or configMapRef, not both")
        for key in self.inline or {}:
            problem = check_config_key(key)
            if problem:
                raise FieldProblem(f"inline[{key}]", problem)
        return self


class RunCheckpoint(ApiModel):
    """Checkpoint PVC <run>-checkpoint-pvc (ReadWriteMany) and restarts from it."""

    storage_size: Annotated[str, StringConstraints(max_length=32, pattern=STORAGE_SIZE_PATTERN)]
    storage_class_name: StorageClassName | None = None
    max_restarts: Annotated[int, Field(ge=0)] = 0


class RunOrchestration(ApiModel):
    """How the run is grouped and timed."""

    test_scale: Literal["intra-node", "intra-rack", "full-scale"] | None = Field(
        None, description="intra-node (numNodes forced to 1), intra-rack (one group per clique) or full-scale."
    )
    repeat_count: Annotated[int, Field(ge=1, le=MAX_REPEAT)] = Field(1, description="Iterations.")
    max_concurrent: Annotated[int, Field(ge=0)] | None = Field(None, description="Jobs at once; 0 = unlimited.")
    timeout_per_job: Duration | None = Field(None, description="Per-Job run budget (default 24h).")
    placement: Placement | None = Field(
        None,
        description="Pinned (default): target nodes partitioned into groups of numNodes. Unpinned: one job of "
        "exactly numNodes, placed by the scheduler; cannot be combined with intra-node or intra-rack.",
    )

    @classmethod
    def cel_rules(cls) -> list[dict[str, str]]:
        return [
            cel(
                "!has(self.placement) || self.placement != 'Unpinned' || !has(self.testScale) || self.testScale == 'full-scale'",
                "placement Unpinned runs one job and cannot be combined with testScale intra-node or intra-rack",
                field_path=".placement",
            )
        ]

    @model_validator(mode="after")
    def _unpinned(self) -> "RunOrchestration":
        if self.placement == "Unpinned" and self.test_scale not in (None, "full-scale"):
            raise FieldProblem(
                "placement", f"placement Unpinned runs one job and cannot be combined with testScale {self.test_scale}"
            )
        return self


ResourceMap = Annotated[dict[str, Quantity], Field(max_length=32)]


class ResourceRequirements(ApiModel):
    """Container resources (core shape). nvidia.com/gpu is filled from gpusPerNode when not named."""

    limits: ResourceMap | None = None
    requests: ResourceMap | None = None
    claims: Annotated[list[dict[str, Any]], Field(max_length=16)] | None = Field(
        None, json_schema_extra={"items": _FREE_OBJECT}
    )

    @classmethod
    def cel_rules(cls) -> list[dict[str, str]]:
        return [
            cel(
                "!has(self.requests) || !has(self.limits) || self.requests.all(k, !(k in self.limits) || "
                "!quantity(string(self.requests[k])).isGreaterThan(quantity(string(self.limits[k]))))",
                "a request must not exceed its limit",
                field_path=".requests",
            )
        ]

    @model_validator(mode="after")
    def _requests_within_limits(self) -> "ResourceRequirements":
        for name, req in (self.requests or {}).items():
            lim = (self.limits or {}).get(name)
            if lim is not None and parse_quantity(req) > parse_quantity(lim):
                raise FieldProblem(f"requests[{name}]", f"request {req} must not exceed the limit {lim}")
        return self


FreeList = Annotated[list[dict[str, Any]], Field(max_length=64)]


class WorkloadRunSpec(ApiModel):
    """The workload, its framework, how many nodes, and how it is measured and judged."""

    target: TargetSpec | None = Field(None, description="Nodes to run on; unset means all GPU nodes.")
    image: Annotated[str, StringConstraints(min_length=1, max_length=512)] = Field(description="Container image.")
    framework: FrameworkSpec = Field(description="Exactly one of torch, mpi or exec.")
    num_nodes: Annotated[int, Field(ge=1, le=MAX_NODES)] = Field(
        description="Pinned: nodes per job group (all target nodes are partitioned into groups of this size). "
        "Unpinned: the size of the single job."
    )
    orchestration: RunOrchestration | None = None
    gpus_per_node: Annotated[int, Field(ge=1, le=MAX_GPUS_PER_NODE)] | None = Field(
        None, description="Default: from the GPU architecture.")
    mlnx_per_node: Annotated[int, Field(ge=0, le=MAX_NICS_PER_NODE)] | None = Field(
        None, description="RDMA NICs per node; 0 opts out.")
    nic_resource_name: Annotated[str, StringConstraints(max_length=253, pattern=NIC_RESOURCE_PATTERN)] | None = None
    enable_mnnvl: bool | None = Field(None, alias="enableMNNVL", description="Default: true on gb200/gb300.")
    image_pull_secrets: Annotated[list[LocalObjectReference], Field(max_length=16)] | None = None
    workload_registry: Annotated[str, StringConstraints(max_length=253, pattern=MIRROR_PATTERN)] | None = Field(
        None,
        description="nvcre extension for air-gapped sites: pull every image of the run (its image, init containers, "
        "and sidecars a platform adds, such as GCP's TCPXO daemon) from this mirror, host[:port][/path]. The registry "
        "host is replaced; the repository path and tag/digest are kept; Docker Hub short names are expanded.",
    )
    env: Annotated[list[RunEnvVar], Field(max_length=MAX_RUN_ENV)] | None = Field(
        None,
        description="Merged over the platform NCCL environment; a user value wins. MPI ranks get them as -x.",
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]},
    )
    volumes: FreeList | None = Field(None, description="Pod volumes (core Volume).", json_schema_extra={"items": _VOLUME})
    volume_mounts: FreeList | None = Field(
        None, description="Mounts in the workload container (core VolumeMount).", json_schema_extra={"items": _MOUNT}
    )
    init_containers: FreeList | None = Field(
        None, description="Init containers (core Container).", json_schema_extra={"items": _FREE_OBJECT}
    )
    config: RunConfig | None = None
    checkpoint: RunCheckpoint | None = None
    resources: ResourceRequirements | None = None
    thresholds: Thresholds | None = Field(None, description="Metric key -> CEL over `value`.")
    goodput_measurement: GoodputMeasurementConfig | None = None
    bandwidth_measurement: BandwidthMeasurementConfig | None = None
    overrides: Annotated[list[OverrideSpec], Field(max_length=64)] | None = Field(
        None, description="Appended after the platform overrides."
    )
    gang_scheduler: GangSchedulerSpec | None = None
    workload_metadata: WorkloadMetadata | None = None
    scheduling_stall_grace_seconds: Annotated[int, Field(ge=1)] | None = Field(
        None, description="Unschedulable grace before WorkloadSchedulingBlocked (default 300)."
    )

    @classmethod
    def cel_rules(cls) -> list[dict[str, str]]:
        return [nic_resource_rule(), dict(VOLUME_RULE), dict(MOUNT_RULE)]

    @model_validator(mode="after")
    def _check(self) -> "WorkloadRunSpec":
        check_thresholds(self.thresholds)
        check_nic_resource_name(self.nic_resource_name)
        check_env_names_unique(self.env)
        for index, volume in enumerate(self.volumes or []):
            if not isinstance(volume.get("name", ""), str) or len(volume.get("name", "")) > 253:
                raise FieldProblem(f"volumes[{index}].name", "must be a string of at most 253 characters")
            if volume.get("name") in RESERVED_VOLUME_NAMES:
                raise FieldProblem(f"volumes[{index}].name", f"volume name {volume['name']!r} is reserved")
        for index, mount in enumerate(self.volume_mounts or []):
            if not isinstance(mount.get("mountPath", ""), str) or len(mount.get("mountPath", "")) > 4096:
                raise FieldProblem(f"volumeMounts[{index}].mountPath", "must be a string of at most 4096 characters")
            if mount.get("mountPath") in RESERVED_MOUNT_PATHS:
                raise FieldProblem(f"volumeMounts[{index}].mountPath", f"mount path {mount['mountPath']!r} is reserved")
        return self


class WorkloadRunStatus(ApiModel):
    """Observed state, mirrored from the run's Workflow."""

    conditions: Conditions | None = None
    phase: Phase | None = Field(None, description=PHASE_DESCRIPTION)
    workflow_ref: NamespacedRef | None = None
    detected_platform: Annotated[str, StringConstraints(max_length=32)] | None = None
    detected_gpu_architecture: Annotated[str, StringConstraints(max_length=32)] | None = Field(
        None, alias="detectedGPUArchitecture"
    )
    resolved_gpus_per_node: int | None = None
    succeeded_nodes_ref: TypedLocalObjectReference | None = None
    failed_nodes_ref: TypedLocalObjectReference | None = None
    failed_node_count: Annotated[int, Field(ge=0)] | None = None
    failed_nodes: FailedNodes | None = None
    exercised_node_count: Annotated[int, Field(ge=0)] | None = Field(None, description="Unpinned: nodes the pods used.")
    start_time: Timestamp | None = None
    completion_time: Timestamp | None = None


class WorkloadRun(KubeObject):
    """Run an ad-hoc workload (image + framework + node count)."""

    kind: Literal["WorkloadRun"] = "WorkloadRun"
    spec: WorkloadRunSpec
    status: WorkloadRunStatus | None = None

    crd = CrdInfo(
        plural="workloadruns",
        singular="workloadrun",
        short_names=("wr", "wlr"),
        columns=(
            RUN_PHASE,
            PrinterColumn("Nodes", ".spec.numNodes", "integer"),
            FAILED_NODES,
            PrinterColumn("Platform", ".status.detectedPlatform", priority=1),
            PrinterColumn("GPU", ".status.detectedGPUArchitecture", priority=1),
            AGE,
        ),
        spec_rules=(cel("self == oldSelf", "spec is immutable after creation"),),
    )
