"""Job (nvcre.nvidia.com, not batch/v1): one workload run on one node group.

The Job creates the workload through an adapter, watches node health while it
runs, enforces its clocks, judges thresholds after it succeeds and names the
nodes that failed. Its workload and measurement configs are immutable: a verdict
must be about the workload that ran.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, StringConstraints, model_validator

from nvcre.api.common import (
    MAX_NODES,
    PHASE_DESCRIPTION,
    ApiModel,
    BandwidthTable,
    Conditions,
    Duration,
    FailedNodes,
    FailureLog,
    FieldProblem,
    NodeName,
    ObjectRef,
    Phase,
    ThresholdEvaluation,
    Timestamp,
    Transport,
    cel,
)
from nvcre.api.kinds import AGE, FAILED_NODES, RUN_PHASE, CrdInfo, KubeObject, PrinterColumn
from nvcre.api.measurement import BandwidthMeasurementConfig, GoodputMeasurementConfig
from nvcre.api.options import Thresholds, WorkloadMetadata, check_thresholds
from nvcre.api.rules import DETECTOR_SHAPE, cel_expression
from nvcre.health.detectors import check_detector_expression

_FREE_OBJECT = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}


class WorkloadSpec(ApiModel):
    """The workload to create, exactly one kind: a Kubeflow Trainer TrainJob spec, or our
    native (core Kubernetes only) workload."""

    train_job: dict[str, Any] | None = Field(
        None, description="Kubeflow Trainer v2 TrainJob spec.", json_schema_extra=_FREE_OBJECT
    )
    native: dict[str, Any] | None = Field(
        None,
        description="Core-Kubernetes workload: batch/v1 Indexed Jobs plus a headless Service (our extension).",
        json_schema_extra=_FREE_OBJECT,
    )

    @classmethod
    def cel_rules(cls) -> list[dict[str, str]]:
        return [cel("has(self.trainJob) != has(self.native)", "set exactly one of trainJob or native")]

    @model_validator(mode="after")
    def _exactly_one(self) -> "WorkloadSpec":
        if (self.train_job is None) == (self.native is None):
            raise FieldProblem("", "set exactly one of trainJob or native")
        return self


class CelHealthCheck(ApiModel):
    """A CEL expression over ``node`` (a full Node object); true means unhealthy."""

    expression: cel_expression(2048, DETECTOR_SHAPE)

    @model_validator(mode="after")
    def _compiles(self) -> "CelHealthCheck":
        # Checked against the declared variables (only `node`): a typo'd name would
        # otherwise fail on every Node at run time and the detector would never fire.
        problem = check_detector_expression(self.expression)
        if problem is not None:
            raise FieldProblem("expression", problem)
        return self


class NodeHealthMonitor(ApiModel):
    """How node health is judged while the workload runs (default: ``node.spec.unschedulable == true``)."""

    cel: CelHealthCheck


class JobCheckpoint(ApiModel):
    """Restart the workload from its checkpoint PVC when it fails."""

    pvc_name: Annotated[str, StringConstraints(min_length=1, max_length=253)]
    max_restarts: Annotated[int, Field(ge=0)] = 0


_IMMUTABLE_JOB_FIELDS = ("workloadMetadata", "nodeHealthMonitor", "goodputMeasurement", "bandwidthMeasurement")


class JobSpec(ApiModel):
    """One workload on one group of nodes."""

    workload: WorkloadSpec = Field(
        description="The workload to create. Immutable.",
        json_schema_extra={"x-kubernetes-validations": [cel("self == oldSelf", "workload is immutable")]},
    )
    workload_metadata: WorkloadMetadata | None = Field(
        None,
        description="Labels for the workload object only. Immutable.",
        json_schema_extra={"x-kubernetes-validations": [cel("self == oldSelf", "workloadMetadata is immutable")]},
    )
    node_health_monitor: NodeHealthMonitor | None = Field(
        None,
        description="Node health check while running. Immutable.",
        json_schema_extra={"x-kubernetes-validations": [cel("self == oldSelf", "nodeHealthMonitor is immutable")]},
    )
    checkpoint: JobCheckpoint | None = None
    stall_multiplier: Annotated[int, Field(ge=1)] | None = Field(
        None, description="Training stall detection: fail when no step for this many step times. Unset: off."
    )
    startup_stall_timeout_seconds: Annotated[int, Field(ge=1)] | None = Field(
        None, description="Budget for the first training step (default 1200); used with stallMultiplier."
    )
    scheduling_stall_grace_seconds: Annotated[int, Field(ge=1)] = Field(
        300, description="Pods unschedulable this long report WorkloadSchedulingBlocked; the clocks pause."
    )
    timeout_per_job: Duration | None = Field(
        None, description="Run budget once the workload runs; blocked time does not count (our extension)."
    )
    goodput_measurement: GoodputMeasurementConfig | None = Field(
        None,
        description="Create <job>-goodput. Immutable.",
        json_schema_extra={"x-kubernetes-validations": [cel("self == oldSelf", "goodputMeasurement is immutable")]},
    )
    bandwidth_measurement: BandwidthMeasurementConfig | None = Field(
        None,
        description="Create <job>-bandwidth. Immutable.",
        json_schema_extra={"x-kubernetes-validations": [cel("self == oldSelf", "bandwidthMeasurement is immutable")]},
    )
    thresholds: Thresholds | None = Field(None, description="Metric key -> CEL over `value`; judged after success.")
    measurement_timeout: Duration | None = Field(None, description="Wait for measurements after success (default 5m).")
    nodes: Annotated[list[NodeName], Field(max_length=MAX_NODES)] | None = Field(
        None, description="The group's nodes (pinned placement), the source of failure attribution (our extension)."
    )

    @classmethod
    def cel_rules(cls) -> list[dict[str, str]]:
        return [
            cel(f"has(self.{name}) == has(oldSelf.{name})", f"{name} cannot be added or removed after creation")
            for name in _IMMUTABLE_JOB_FIELDS
        ]

    @model_validator(mode="after")
    def _check(self) -> "JobSpec":
        check_thresholds(self.thresholds)
        return self


MAX_PAIRS = 32896  # every pair of 257 nodes: diagnose's per-pair check runs on at most 256 (docs/diagnose.md)
PAIR_NODES = 4096


class PairMeasurements(ApiModel):
    """Bus bandwidth of every pair a per-pair check measured (our extension): pair k is
    ``nodes[a[k]]`` with ``nodes[b[k]]``; parallel lists keep 2,016 pairs (64 nodes) near 30 kB."""

    nodes: Annotated[list[NodeName], Field(max_length=PAIR_NODES)] = Field(description="The nodes the pairs index.")
    a: Annotated[list[Annotated[int, Field(ge=0)]], Field(max_length=MAX_PAIRS)] = Field(description="First node of each pair.")
    b: Annotated[list[Annotated[int, Field(ge=0)]], Field(max_length=MAX_PAIRS)] = Field(description="Second node of each pair.")
    bus_bandwidth_gbps: Annotated[list[Annotated[float, Field(ge=0)]], Field(max_length=MAX_PAIRS)] = Field(
        alias="busBandwidthGBps", description="Peak bus bandwidth of each pair, GB/s; 0 where its run failed (no figure).")


class JobMeasurements(ApiModel):
    """What the Job measured, copied from its measurements when it ended (our extension)."""

    pairs: PairMeasurements | None = Field(
        None, description="A per-pair bandwidth check's figure for every pair it measured (our extension).")

    bandwidth: BandwidthTable | None = Field(None, description="Bandwidth per message size.")
    transport: Transport | None = Field(None, description="NCCL network used (IB, Socket, ...).")
    bus_bandwidth_gbps: float | None = Field(None, alias="busBandwidthGBps", description="Peak bus bandwidth, GB/s.")
    alg_bandwidth_gbps: float | None = Field(None, alias="algBandwidthGBps", description="Peak algorithm bandwidth, GB/s.")
    goodput_ratio: float | None = None
    nccl_version: Annotated[str, StringConstraints(max_length=64)] | None = Field(
        None, description="NCCL version the workload loaded, from its NCCL INFO lines (our extension)."
    )
    image_digest: Annotated[str, StringConstraints(max_length=512)] | None = Field(
        None, description="The image that actually ran (the kubelet's imageID, a digest), from the pods (our extension)."
    )
    avg_tflops_per_gpu: float | None = Field(None, alias="avgTFLOPsPerGPU")
    avg_step_time_sec: float | None = None
    thresholds: Annotated[list[ThresholdEvaluation], Field(max_length=16)] | None = Field(
        None, description="Each threshold with its measured value and verdict."
    )


MAX_POD_LOGS = 8


class JobStatus(ApiModel):
    """Observed state of one Job."""

    conditions: Conditions | None = None
    phase: Phase | None = Field(None, description=PHASE_DESCRIPTION)
    failed_nodes: FailedNodes | None = Field(
        None, description="Nodes that failed, one entry per (name, reason), sorted; never removed."
    )
    failed_node_count: Annotated[int, Field(ge=0)] | None = Field(
        None, description="Distinct failed nodes (for `kubectl get`; our extension)."
    )
    workload_ref: ObjectRef | None = Field(None, description="The workload object created.")
    workload_start_time: Timestamp | None = Field(None, description="When the workload was first seen running.")
    scheduling_blocked_since: Timestamp | None = None
    scheduling_resumed_time: Timestamp | None = None
    blocked_seconds: Annotated[int, Field(ge=0)] | None = Field(
        None, description="Total seconds pods were unschedulable (paused clocks; our extension)."
    )
    restart_count: Annotated[int, Field(ge=0)] | None = None
    failure_log: FailureLog | None = None
    pod_logs: Annotated[list[FailureLog], Field(max_length=MAX_POD_LOGS)] | None = Field(
        None,
        description="A WorkloadRun's Job, and any failed Job: each pod's node, exit code and log tail (whole lines), "
        f"read before the workload is deleted (the launcher first, then the pods on sick or blamed nodes, at most "
        f"{MAX_POD_LOGS} pods, 200 lines / 8 KiB each; our extension).",
    )
    nodes_ran: Annotated[list[NodeName], Field(max_length=MAX_NODES)] | None = Field(
        None, description="Nodes the workload's pods ran on (Unpinned attribution; our extension)."
    )
    measurements: JobMeasurements | None = None


class Job(KubeObject):
    """Run one workload on one node group and judge it."""

    kind: Literal["Job"] = "Job"
    spec: JobSpec
    status: JobStatus | None = None

    crd = CrdInfo(
        plural="jobs",
        singular="job",
        short_names=("nvjob",),
        columns=(
            RUN_PHASE,
            PrinterColumn("BusBW-GBps", ".status.measurements.busBandwidthGBps", "number"),
            FAILED_NODES,
            PrinterColumn("Workload", ".status.workloadRef.name", priority=1),
            AGE,
        ),
    )
