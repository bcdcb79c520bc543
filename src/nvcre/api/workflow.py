"""Workflow: one category (or one WorkloadRun) across node groups and iterations.

Created by the Certification and WorkloadRun controllers, rarely by hand. It plans
groups for the testScale, creates one Job per group per iteration (bounded by
maxConcurrent), runs diagnose rounds, and rolls results up for the report.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, StringConstraints, model_validator

from nvcre.api.common import (
    InferredHardware,
    MAX_NODES,
    PHASE_DESCRIPTION,
    ApiModel,
    BandwidthTable,
    Conditions,
    Duration,
    ExcludedNode,
    FailedGroup,
    FailedNodes,
    FieldProblem,
    NodeName,
    NumberString,
    ObjectRef,
    Phase,
    TargetSpec,
    Timestamp,
    Transport,
    TypedLocalObjectReference,
    cel,
)
from nvcre.api.gang import GangSchedulerSpec
from nvcre.api.job import JobSpec
from nvcre.api.kinds import AGE, FAILED_NODES, RUN_PHASE, CrdInfo, KubeObject, PrinterColumn
from nvcre.api.options import Placement, TestScale, Thresholds, check_thresholds

_FREE_OBJECT = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
MAX_FAILURE_LOGS = 16
# Outliers and regressions are warnings: the status keeps the first few (worst outliers,
# regressions by node) with short messages, so a 4096-node Workflow that also fails on
# every node stays under 1 MiB (tests/unit/api/test_status_size.py); the conditions say
# how many there were, and the ledger (NodeReadiness) keeps every node's figures.
MAX_STATUS_OUTLIERS = 32
MAX_OUTLIER_NODES = 8  # the group's first nodes; all of them are in groups[]
MAX_STATUS_REGRESSIONS = 32
MAX_WARNING_MESSAGE = 512
"""Failed groups that carry a log excerpt on the Workflow; keeps the status small at 4096 nodes."""
GroupName = Annotated[str, StringConstraints(min_length=1, max_length=128)]
MAX_FAILED_ISOLATED = 128
"""Failed groups one isolation narrows down (the Workflow keeps at most that many failed groups)."""


class TopologySpec(ApiModel):
    """Pack groups by a node label (e.g. nvidia.com/gpu.clique)."""

    topology_key: Annotated[str, StringConstraints(min_length=1, max_length=317)]
    strict_domain: bool = Field(False, description="One group per domain at its natural size.")


class DiagnoseSpec(ApiModel):
    """Adaptive fault isolation settings."""

    min_group_size: Annotated[int, Field(ge=1)] = Field(2, description="Smallest group a split goes down to.")
    topology_key: Annotated[str, StringConstraints(max_length=317)] | None = Field(
        None, description="Label that defines racks/cliques for screening; unset: chunks of ceil(sqrt(N)) nodes."
    )


class ExecutionSpec(ApiModel):
    """How Jobs are launched."""

    max_concurrent: Annotated[int, Field(ge=0)] = Field(0, description="Jobs at once; 0 = unlimited.")
    timeout_per_job: Duration | None = Field(None, description="Per-Job run budget; unset = no timeout.")
    retry_failed_groups: Annotated[int, Field(ge=0)] = Field(0, description="Retries of a failed group (not timeouts).")


class OrchestrationSpec(ApiModel):
    """Which nodes, how they are grouped, how Jobs run."""

    target: TargetSpec | None = Field(None, description="Nodes to run on; unset means all GPU nodes.")
    topology: TopologySpec | None = None
    diagnose: DiagnoseSpec | None = Field(None, description="Set for testScale diagnose.")
    isolate_failures: bool | None = Field(
        None,
        description="Groups that miss a bandwidth threshold are narrowed down by a child diagnose Workflow before "
        "nodes are named (unset: true; our extension).",
    )
    execution: ExecutionSpec = Field(default_factory=ExecutionSpec)
    iterations: Annotated[int, Field(ge=1)] = Field(1, description="How many times every group runs.")
    placement: Placement | None = Field(None, description="Pinned (default) or Unpinned (one job, scheduler-placed).")
    nodes_per_job: Annotated[int, Field(ge=1)] | None = Field(
        None, description="Group size (Unpinned: the single job's size). Unset: all nodes (our extension)."
    )
    test_scale: TestScale | None = Field(None, description="The testScale asked for, for the report (our extension).")

    @classmethod
    def cel_rules(cls) -> list[dict[str, str]]:
        return [
            cel(
                "!has(self.placement) || self.placement != 'Unpinned' || "
                "(!has(self.diagnose) && (!has(self.topology) || !self.topology.strictDomain))",
                "placement Unpinned cannot be combined with diagnose or a strict topology domain",
                field_path=".placement",
            ),
            cel(
                "!has(self.placement) || self.placement != 'Unpinned' || "
                "(!has(self.testScale) || self.testScale == 'full-scale')",
                "placement Unpinned cannot be combined with testScale intra-node, intra-rack or diagnose",
                field_path=".placement",
            ),
        ]

    @model_validator(mode="after")
    def _unpinned(self) -> "OrchestrationSpec":
        if self.placement == "Unpinned":
            if self.diagnose is not None or (self.topology is not None and self.topology.strict_domain):
                raise FieldProblem("placement", "placement Unpinned cannot be combined with diagnose or a strict topology domain")
            if self.test_scale not in (None, "full-scale"):
                raise FieldProblem("placement", f"placement Unpinned cannot be combined with testScale {self.test_scale}")
        return self


class StringMatch(ApiModel):
    """Match a string: equals, in, notIn (ANDed)."""

    equals: Annotated[str, StringConstraints(max_length=64)] | None = None
    in_: Annotated[list[Annotated[str, StringConstraints(max_length=64)]], Field(max_length=32)] | None = Field(
        None, alias="in"
    )
    not_in: Annotated[list[Annotated[str, StringConstraints(max_length=64)]], Field(max_length=32)] | None = None


class IntMatch(ApiModel):
    equals: int | None = None
    greater_than: int | None = None
    less_than: int | None = None


class TopologyMatch(ApiModel):
    mode: Literal["simple", "topology"] | None = None
    domain_count: IntMatch | None = None


class WhenSpec(ApiModel):
    """When an override or dependency applies; all parts set are ANDed, empty always matches."""

    gpu_architecture: StringMatch | None = Field(None, alias="gpuArchitecture")
    platform: StringMatch | None = None
    workload_kind: Annotated[str, StringConstraints(max_length=64)] | None = None
    topology: TopologyMatch | None = None
    config: dict[str, Any] | None = Field(None, json_schema_extra=_FREE_OBJECT)
    expression: Annotated[str, StringConstraints(max_length=2048)] | None = Field(
        None, description="CEL over gpuArchitecture, platform, workloadKind, topology, config."
    )


class OrchestrationOverride(ApiModel):
    """Orchestration fields an override replaces when set."""

    target: TargetSpec | None = None
    topology: TopologySpec | None = None
    execution: ExecutionSpec | None = None
    iterations: Annotated[int, Field(ge=1)] | None = None
    placement: Placement | None = None


class OverrideSpec(ApiModel):
    """A conditional patch on the Job template, dependencies or orchestration."""

    when: WhenSpec
    job_template: dict[str, Any] | None = Field(
        None, description="Strategic merge patch on jobTemplate.", json_schema_extra=_FREE_OBJECT
    )
    job_template_patch: Annotated[list[dict[str, Any]], Field(max_length=256)] | None = Field(
        None, description="RFC 6902 JSON Patch, applied after jobTemplate.", json_schema_extra={"items": _FREE_OBJECT}
    )
    dependencies: Annotated[list[dict[str, Any]], Field(max_length=64)] | None = Field(
        None, json_schema_extra={"items": _FREE_OBJECT}
    )
    orchestration: OrchestrationOverride | None = None


class PerformanceTracking(ApiModel):
    per_node: bool = False
    per_domain: bool = False


class ThresholdSet(ApiModel):
    thresholds: Thresholds | None = None

    @model_validator(mode="after")
    def _check(self) -> "ThresholdSet":
        check_thresholds(self.thresholds)
        return self


class PerformanceValidation(ApiModel):
    """Threshold judging, copied into each Job when it is created."""

    enabled: bool = False
    plugin: Annotated[str, StringConstraints(max_length=64)] | None = None
    config: dict[str, Any] | None = Field(None, json_schema_extra=_FREE_OBJECT)
    tracking: PerformanceTracking | None = None
    thresholds: ThresholdSet | None = None
    measurement_timeout: Duration | None = None


class ValidationSpec(ApiModel):
    performance: PerformanceValidation | None = None


class JobTemplateMeta(ApiModel):
    """Labels and annotations copied onto each Job (never onto the workload)."""

    labels: Annotated[dict[str, Annotated[str, StringConstraints(max_length=63)]], Field(max_length=64)] | None = None
    annotations: Annotated[dict[str, Annotated[str, StringConstraints(max_length=65536)]], Field(max_length=64)] | None = None


class JobTemplate(ApiModel):
    metadata: JobTemplateMeta | None = None
    spec: JobSpec


class WorkflowSpec(ApiModel):
    """A category's plan: the Job template, how to group nodes, overrides and dependencies."""

    namespace: Annotated[str, StringConstraints(max_length=63)] | None = Field(
        None, description="Unused: everything is created in the Workflow's own namespace."
    )
    job_template: JobTemplate
    orchestration: OrchestrationSpec
    dependencies: Annotated[list[dict[str, Any]], Field(max_length=64)] | None = Field(
        None,
        description="Objects created before the Jobs (TrainingRuntime, ComputeDomain, PVC, ConfigMap), each with an "
        "optional `when`.",
        json_schema_extra={"items": _FREE_OBJECT},
    )
    overrides: Annotated[list[OverrideSpec], Field(max_length=64)] | None = Field(
        None, description="Applied in order; every match applies."
    )
    validation: ValidationSpec | None = None
    gang_scheduler: GangSchedulerSpec | None = Field(
        None,
        description="Resolved gang-scheduling contract. Immutable.",
        json_schema_extra={"x-kubernetes-validations": [cel("self == oldSelf", "gangScheduler is immutable")]},
    )
    category: Annotated[str, StringConstraints(max_length=128)] | None = Field(
        None, description="domain/variant this Workflow runs, when created by a Certification (our extension)."
    )

    @classmethod
    def cel_rules(cls) -> list[dict[str, str]]:
        return [
            cel(
                "has(self.gangScheduler) == has(oldSelf.gangScheduler)",
                "gangScheduler cannot be added or removed after creation",
            )
        ]


GroupPhase = Literal["Pending", "Running", "Succeeded", "Failed"]


class GroupStatus(ApiModel):
    """One node group of the current iteration."""

    name: GroupName
    nodes: Annotated[list[NodeName], Field(max_length=MAX_NODES)] | None = None
    domains: Annotated[list[Annotated[str, StringConstraints(max_length=128)]], Field(max_length=1024)] | None = None
    domain_node_counts: Annotated[dict[str, int], Field(max_length=1024)] | None = None
    overflow: bool | None = None
    phase: GroupPhase = "Pending"
    check: Literal["pairwise"] | None = Field(
        None, description="What the group's Job measures when not the whole group at once: pairwise = every pair of "
        "its nodes in turn (diagnose's per-pair bandwidth check; our extension).")
    retries: Annotated[int, Field(ge=0)] = 0
    job_ref: ObjectRef | None = None
    start_time: Timestamp | None = None
    completion_time: Timestamp | None = None
    bandwidth: BandwidthTable | None = Field(
        None, description="Bandwidth per message size for this group (our extension; keep to the sizes reported)."
    )
    transport: Transport | None = Field(None, description="NCCL network the group used (our extension).")
    headline: float | None = Field(
        None, description="The group's headline figure: peak bus bandwidth over sizes (GB/s), else TFLOP/s per GPU; "
        "what the fleet-relative outlier check compares (our extension)."
    )


class DerivedThresholdStatus(ApiModel):
    """A threshold a readiness stage derived from a shipped baseline (our extension)."""

    key: Annotated[str, StringConstraints(max_length=64)]
    expression: Annotated[str, StringConstraints(max_length=256)]
    bar: float | None = None
    stage: Annotated[str, StringConstraints(max_length=32)] | None = None
    fraction: float | None = None
    acceptance: float | None = None
    scope: Annotated[str, StringConstraints(max_length=128)] | None = None
    source: Annotated[str, StringConstraints(max_length=512)] | None = None
    text: Annotated[str, StringConstraints(max_length=1024)] | None = None


class JudgingStatus(ApiModel):
    """What judges this category and where its thresholds came from (our extension)."""

    state: Annotated[str, StringConstraints(max_length=32)] = Field(
        description="thresholds (the spec's), stage (derived from a baseline), tool (the workload's own verdict), "
        "none (nothing judged it) or no-baseline (a stage without a baseline for this hardware)."
    )
    judged: bool = False
    stage: Annotated[str, StringConstraints(max_length=32)] | None = None
    message: Annotated[str, StringConstraints(max_length=1024)] | None = None
    derived: Annotated[list[DerivedThresholdStatus], Field(max_length=8)] | None = None
    gpus_per_node: int | None = None
    nics_per_node: int | None = None
    image: Annotated[str, StringConstraints(max_length=256)] | None = None
    inferred: Annotated[list[Annotated[str, StringConstraints(max_length=256)]], Field(max_length=8)] | None = Field(
        None, description="Hardware values read from the nodes rather than the catalog's defaults."
    )


class OutlierStatus(ApiModel):
    """A group well below the median of the groups of its shape (our extension)."""

    group: Annotated[str, StringConstraints(max_length=128)]
    nodes: Annotated[list[NodeName], Field(max_length=MAX_OUTLIER_NODES)] | None = None
    value: float
    median: float
    fraction: float
    shape: Annotated[str, StringConstraints(max_length=128)] | None = None
    message: Annotated[str, StringConstraints(max_length=MAX_WARNING_MESSAGE)] | None = None


class RegressionStatus(ApiModel):
    """A node's figure below its own last passing result on the same category and scope (our extension)."""

    node: NodeName
    category: Annotated[str, StringConstraints(max_length=128)]
    scope: Annotated[str, StringConstraints(max_length=128)] | None = None
    value: float
    previous: float
    previous_run: Annotated[str, StringConstraints(max_length=128)] | None = None
    margin: float | None = None
    message: Annotated[str, StringConstraints(max_length=MAX_WARNING_MESSAGE)] | None = None


class IterationRecord(ApiModel):
    """A finished iteration's groups (compact)."""

    iteration: Annotated[int, Field(ge=1)]
    groups: Annotated[list["GroupSummary"], Field(max_length=MAX_NODES)] = Field(default_factory=list)


class GroupSummary(ApiModel):
    name: GroupName
    phase: GroupPhase
    job_name: Annotated[str, StringConstraints(max_length=253)] | None = None
    start_time: Timestamp | None = None
    completion_time: Timestamp | None = None


class AppliedOverride(ApiModel):
    index: Annotated[int, Field(ge=0)]
    when: Annotated[str, StringConstraints(max_length=512)] | None = None
    patches: Annotated[str, StringConstraints(max_length=1024)] | None = None
    no_op: bool | None = None


class DiagnoseStatus(ApiModel):
    """Compact state of adaptive fault isolation. The planner owns the shape of anything
    beyond the typed fields (kept as-is by the API server)."""

    preserve_unknown_fields = True
    model_config = {"extra": "allow"}

    stage: Annotated[str, StringConstraints(max_length=64)] | None = Field(
        None, description="intra-screening, inter-screening, bisection, confirmation, cross-boundary, complete, ..."
    )
    round: Annotated[int, Field(ge=0)] | None = None
    healthy_nodes: Annotated[list[NodeName], Field(max_length=MAX_NODES)] | None = None
    suspect_nodes: Annotated[list[NodeName], Field(max_length=MAX_NODES)] | None = None
    suspect_links: Annotated[list[Annotated[list[NodeName], Field(min_length=2, max_length=2)]], Field(max_length=1024)] | None = (
        Field(None, description="Node pairs that fail only together.")
    )
    suspect_domains: Annotated[list[Annotated[str, StringConstraints(max_length=128)]], Field(max_length=1024)] | None = (
        Field(None, description="Racks/cliques or boundaries that fail only across.")
    )


class IsolationStatus(ApiModel):
    """Narrowing a threshold miss down to nodes: the child diagnose Workflow and what it found."""

    workflow: Annotated[str, StringConstraints(max_length=253)] = Field(description="The child diagnose Workflow.")
    phase: Literal["Running", "Succeeded", "Failed"] = Field(
        description="Running; Succeeded: its verdict replaced the group attribution; Failed: it did not, the "
        "groups' nodes stay named."
    )
    groups: Annotated[list[GroupName], Field(max_length=MAX_FAILED_ISOLATED)] | None = Field(
        None, description="The failed groups being narrowed down."
    )
    nodes: Annotated[list[NodeName], Field(max_length=MAX_NODES)] | None = Field(
        None, description="The nodes the diagnosis ran over (the groups' nodes, plus healthy references for tiny groups)."
    )
    convicted: Annotated[list[NodeName], Field(max_length=MAX_NODES)] | None = Field(
        None, description="Nodes the diagnosis named (bad nodes and both ends of bad links)."
    )
    links: Annotated[list[Annotated[str, StringConstraints(max_length=512)]], Field(max_length=256)] | None = Field(
        None, description="Bad links found, as 'a<->b'."
    )
    racks: Annotated[list[Annotated[str, StringConstraints(max_length=128)]], Field(max_length=64)] | None = Field(
        None, description="Racks or switches found at fault."
    )
    rounds: Annotated[int, Field(ge=0)] | None = None
    tests: Annotated[int, Field(ge=0)] | None = None
    message: Annotated[str, StringConstraints(max_length=1024)] | None = None


class DependencyRef(ApiModel):
    api_version: Annotated[str, StringConstraints(max_length=253)]
    kind: Annotated[str, StringConstraints(max_length=63)]
    name: Annotated[str, StringConstraints(max_length=253)]
    namespace: Annotated[str, StringConstraints(max_length=63)] | None = None
    scope: Literal["workflow", "job", "iteration", ""] | None = None
    group_name: Annotated[str, StringConstraints(max_length=128)] | None = None
    iteration: int | None = None


class OrchestrationStatus(ApiModel):
    """Grouping, progress and what was detected."""

    total_nodes: int | None = None
    nodes_per_job: int | None = None
    total_groups: int | None = None
    current_iteration: int | None = None
    completed_iterations: int | None = None
    test_scale: TestScale | None = None
    placement: Placement | None = None
    detected_platform: Annotated[str, StringConstraints(max_length=32)] | None = None
    detected_gpu_architecture: Annotated[str, StringConstraints(max_length=32)] | None = Field(
        None, alias="detectedGPUArchitecture"
    )
    gpu_products: Annotated[list[Annotated[str, StringConstraints(max_length=128)]], Field(max_length=16)] | None = None
    mnnvl: bool | None = Field(None, description="Multi-node NVLink was enabled.")
    excluded_nodes: Annotated[list[ExcludedNode], Field(max_length=MAX_NODES)] | None = Field(
        None, description="Target nodes left out, each with its reason (our extension of the reference's names list)."
    )
    exclusion_reason: Annotated[str, StringConstraints(max_length=1024)] | None = None
    exercised_nodes: Annotated[list[NodeName], Field(max_length=MAX_NODES)] | None = Field(
        None, description="Unpinned: nodes the pods actually ran on."
    )
    applied_overrides: Annotated[list[AppliedOverride], Field(max_length=64)] | None = None
    diagnose: DiagnoseStatus | None = None
    isolation: IsolationStatus | None = Field(
        None, description="Set while (and after) failed groups were narrowed down to nodes (our extension)."
    )
    groups: Annotated[list[GroupStatus], Field(max_length=MAX_NODES)] | None = None
    iteration_history: Annotated[list[IterationRecord], Field(max_length=64)] | None = None
    judging: JudgingStatus | None = Field(None, description="What judges this category (our extension).")
    inferred_hardware: InferredHardware | None = Field(
        None, description="GPUs and NICs per node read from the nodes, for a GPU without catalog defaults."
    )
    performance_outliers: Annotated[list[OutlierStatus], Field(max_length=MAX_STATUS_OUTLIERS)] | None = Field(
        None, description="Groups below the stated fraction of the median of same-shape groups (our extension)."
    )
    outlier_check: Annotated[str, StringConstraints(max_length=512)] | None = Field(
        None, description="How the outlier check ran, or why it could not (too few groups of a shape)."
    )
    ledger: Annotated[str, StringConstraints(max_length=512)] | None = Field(
        None, description="Set once the node readiness ledger was written for this Workflow (or why it was not)."
    )
    regressions: Annotated[list[RegressionStatus], Field(max_length=MAX_STATUS_REGRESSIONS)] | None = Field(
        None, description="Nodes whose figure fell below their own last passing result by more than the margin."
    )


class DomainResult(ApiModel):
    """Per-domain (rack/clique) roll-up, with tracking.perDomain."""

    node_count: Annotated[int, Field(ge=0)] | None = None
    status: Annotated[str, StringConstraints(max_length=32)] | None = None
    average_tflops: NumberString | None = None


class WorkflowSummary(ApiModel):
    """Counts for `kubectl get` (our extension)."""

    groups: Annotated[str, StringConstraints(max_length=32)] = Field("0/0", description="'done/total' groups.")
    iteration: Annotated[str, StringConstraints(max_length=32)] = Field("0/0", description="'current/total'.")


class WorkflowStatus(ApiModel):
    """Observed state of a Workflow; compact at 4096 nodes (measured by a unit test)."""

    conditions: Conditions | None = None
    phase: Phase | None = Field(None, description=PHASE_DESCRIPTION)
    namespace: Annotated[str, StringConstraints(max_length=63)] | None = Field(
        None, description="Resolved namespace (kept for compatibility; everything runs in the Workflow's namespace)."
    )
    summary: WorkflowSummary | None = None
    failed_node_count: Annotated[int, Field(ge=0)] | None = None
    succeeded_nodes_ref: TypedLocalObjectReference | None = None
    failed_nodes_ref: TypedLocalObjectReference | None = None
    dependency_refs: Annotated[list[DependencyRef], Field(max_length=256)] | None = None
    orchestration: OrchestrationStatus | None = None
    failed_nodes: FailedNodes | None = Field(
        None, description="Failed nodes of this category; messages only where node-specific (our extension)."
    )
    failed_groups: Annotated[list[FailedGroup], Field(max_length=MAX_NODES)] | None = Field(
        None, description="Groups of the current iteration whose Job failed (our extension)."
    )
    domain_results: Annotated[dict[str, DomainResult], Field(max_length=1024)] | None = Field(
        None, description="Per-domain results (with validation.performance.tracking.perDomain)."
    )
    bandwidth: BandwidthTable | None = Field(None, description="Category bandwidth per message size (our extension).")
    transport: Annotated[list[Transport], Field(max_length=8)] | None = Field(
        None, description="NCCL networks seen across groups (our extension)."
    )
    start_time: Timestamp | None = None
    completion_time: Timestamp | None = None

    @classmethod
    def cel_rules(cls) -> list[dict[str, str]]:
        return [
            cel(
                f"!has(self.failedGroups) || self.failedGroups.filter(g, has(g.failureLog)).size() <= {MAX_FAILURE_LOGS}",
                f"at most {MAX_FAILURE_LOGS} failed groups carry a failureLog (the rest are on their Jobs)",
                field_path=".failedGroups",
            )
        ]

    @model_validator(mode="after")
    def _few_logs(self) -> "WorkflowStatus":
        logs = sum(1 for group in self.failed_groups or [] if group.failure_log is not None)
        if logs > MAX_FAILURE_LOGS:
            raise FieldProblem(
                "failedGroups", f"at most {MAX_FAILURE_LOGS} failed groups carry a failureLog, got {logs}"
            )
        return self


class Workflow(KubeObject):
    """Run one category across node groups and iterations."""

    kind: Literal["Workflow"] = "Workflow"
    spec: WorkflowSpec
    status: WorkflowStatus | None = None

    crd = CrdInfo(
        plural="workflows",
        singular="workflow",
        short_names=("wf", "nvwf"),
        columns=(
            RUN_PHASE,
            PrinterColumn("Scale", ".status.orchestration.testScale"),
            PrinterColumn("Groups", ".status.summary.groups", description="Groups done/total"),
            FAILED_NODES,
            PrinterColumn("Iteration", ".status.summary.iteration", priority=1),
            PrinterColumn("Platform", ".status.orchestration.detectedPlatform", priority=1),
            PrinterColumn("GPU", ".status.orchestration.detectedGPUArchitecture", priority=1),
            AGE,
        ),
    )


IterationRecord.model_rebuild()
