"""The one report model: everything a person or a tool is told about a run.

The CLI (text, JSON, JUnit, Markdown, HTML), the MCP server and the demo all render
this model, and it is built by one pure function (``nvcre.report.build``) from the
statuses of a Certification or WorkloadRun and its children. Keeping a single model
means no two surfaces can disagree about a verdict or a failed node.

The JSON form (``Report.to_json_dict``) is a documented, versioned schema
(``docs/report-schema.md``); bump ``SCHEMA_VERSION`` on any incompatible change.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

SCHEMA_VERSION = "nvcre.report/v1"

Result = Literal["PASSED", "FAILED", "INCOMPLETE", "NOT JUDGED", "RUNNING"]
CategoryStatus = Literal["Succeeded", "Failed", "Running", "Pending"]
NodeStatus = Literal["Passed", "Failed", "Untested", "Excluded"]


class _Model(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)


class BandwidthRow(_Model):
    """One message size of an NCCL sweep: display strings plus the numbers behind them."""

    size: str  # "16 GB" (1024-based, as nccl-tests users read it)
    size_bytes: int
    alg_bw: str = Field(alias="algBW")  # "473.44 GB/s"
    bus_bw: str = Field(alias="busBW")
    alg_bw_gbps: float = Field(alias="algBWGBps")
    bus_bw_gbps: float = Field(alias="busBWGBps")
    samples: int = 0
    low: bool = False  # the peak bus bandwidth here is below the threshold's minimum
    provisional: bool = False  # read from an incomplete log; not a verdict


class FailureLog(_Model):
    """An excerpt from one workload pod of a failed group (evidence, not a verdict)."""

    pod_name: str = ""
    node_name: str = ""
    exit_code: int | None = None
    reason: str | None = None
    tail: str | None = None


class NodeEvidence(_Model):
    """What a person checks before acting on a failed node: the number against the bar,
    what its peers did, where the evidence came from, and what to do next."""

    metric: str | None = None  # the threshold key ("busBandwidthGBps")
    measured: str | None = None  # display form with unit ("185.75 GB/s")
    measured_value: float | None = None
    unit: str | None = None
    bar: str | None = None  # the threshold expression ("value >= 300")
    bar_source: str | None = None  # where the bar was set (the category's options, spec, catalog)
    peer_median: str | None = None
    peer_median_value: float | None = None
    peers: int = 0  # how many other groups the median is over
    group: str | None = None
    job: str | None = None
    pod: str | None = None
    node: str | None = None  # the node the evidence's pod ran on
    log_tail: list[str] = Field(default_factory=list)  # whole lines from this node's own pod
    log_note: str | None = None  # why no tail is shown (the captured pod ran elsewhere)
    next_step: str | None = None
    kind: str | None = None  # nic | gpu | link | rack | workload | scheduling


class FailedNode(_Model):
    """A node the run blamed, why, and in which category."""

    name: str
    reason: str  # WorkloadFailed | ThresholdViolation | HardwareFailureDetected
    message: str = ""
    category: str = ""  # domain/variant
    group: str | None = None
    evidence: NodeEvidence | None = None


class FailedGroup(_Model):
    name: str
    node_count: int
    nodes: list[str] = Field(default_factory=list)
    reason: str = ""
    failure_log: FailureLog | None = None


class GroupResult(_Model):
    """One node group of a category: where it ran, what it measured, how it ended."""

    name: str
    nodes: list[str] = Field(default_factory=list)
    domain: str | None = None  # clique or rack the group sits in, when known
    phase: str = "Pending"  # Pending | Running | Succeeded | Failed
    job_name: str | None = None
    bus_bw: str | None = Field(default=None, alias="busBW")  # peak over sizes, display form
    bus_bw_gbps: float | None = Field(default=None, alias="busBWGBps")
    transport: list[str] = Field(default_factory=list)
    bandwidth: list[BandwidthRow] = Field(default_factory=list)
    below_min: bool = False
    provisional: bool = False


class TrainingResult(_Model):
    """Training metrics of one group (goodput and throughput), as display strings."""

    name: str
    node_count: int = 0
    goodput: str | None = None
    tflops: str | None = None
    step_time: str | None = None


class Diagnosis(_Model):
    """Where adaptive fault isolation (testScale diagnose) stands and what it found."""

    stage: str | None = None
    rounds: int | None = None
    healthy_count: int = 0
    suspect_count: int = 0
    suspect_nodes: list[str] = Field(default_factory=list)
    suspect_links: list[list[str]] = Field(default_factory=list)
    suspect_domains: list[str] = Field(default_factory=list)
    max_bw: str | None = Field(default=None, alias="maxBW")
    max_bw_group: str | None = Field(default=None, alias="maxBWGroup")
    min_bw: str | None = Field(default=None, alias="minBW")
    min_bw_group: str | None = Field(default=None, alias="minBWGroup")
    notes: list[str] = Field(default_factory=list)


class Outlier(_Model):
    """A group well below the median of its shape (fleet-relative; needs no threshold)."""

    group: str
    nodes: list[str] = Field(default_factory=list)
    value: float
    median: float
    fraction: float
    shape: str = ""
    message: str = ""


class Regression(_Model):
    """A node's figure fell below its own last passing result by more than the margin."""

    node: str
    category: str
    scope: str = ""
    value: float
    previous: float
    previous_run: str = ""
    margin: float = 0.0
    message: str = ""


class CategoryReport(_Model):
    domain: str
    variant: str
    status: CategoryStatus = "Pending"
    failure_reason: str | None = None
    status_detail: str | None = None  # "Blocked:" line: why pods cannot be scheduled
    health_check: str | None = None  # a node health detector that could not be evaluated (it cannot fire)
    isolation: str | None = None  # a threshold miss narrowed down to nodes: what it is doing or found
    runtime: str | None = None
    runtime_seconds: float | None = None
    test_scale: str | None = None
    nodes_per_job: int | None = None
    jobs: int | None = None
    groups_done: int = 0
    groups_total: int = 0
    iterations: int | None = None
    placement: str | None = None  # only for Unpinned
    target_nodes: int | None = None
    exercised_nodes: int | None = None
    mnnvl: str | None = None  # Enabled | Disabled
    thresholds: dict[str, str] = Field(default_factory=dict)
    threshold_sources: dict[str, str] = Field(default_factory=dict)  # key -> where it was set
    bus_bw_minimum_gbps: float | None = Field(default=None, alias="busBWMinimumGBps")
    bandwidth: list[BandwidthRow] = Field(default_factory=list)
    transport: list[str] = Field(default_factory=list)
    groups: list[GroupResult] = Field(default_factory=list)
    failed_groups: list[FailedGroup] = Field(default_factory=list)
    failed_nodes: list[FailedNode] = Field(default_factory=list)
    training: list[TrainingResult] = Field(default_factory=list)
    pod_logs: list[FailureLog] = Field(default_factory=list)  # a WorkloadRun: each pod's tail, kept before cleanup
    diagnose: Diagnosis | None = None
    env: list[str] = Field(default_factory=list)  # variable NAMES only, never values
    next_steps: list[str] = Field(default_factory=list)
    stage: str | None = None  # readiness stage it ran at
    judged: bool | None = None  # None: a run from before judging was recorded
    judging: str | None = None  # what judged it (derived bar with its source) or why nothing did
    derived_thresholds: list[str] = Field(default_factory=list)  # "busBandwidthGBps >= 460 (production: ...)"
    outliers: list[Outlier] = Field(default_factory=list)
    outlier_check: str | None = None
    regressions: list[Regression] = Field(default_factory=list)
    gpu_hours: float | None = None
    inferred: list[str] = Field(default_factory=list)  # hardware values read from the nodes, not the catalog

    @property
    def key(self) -> str:
        return f"{self.domain}/{self.variant}"

    @property
    def passed(self) -> bool:
        """Succeeded and judged: a category nothing judged did not pass, it only ran."""
        return self.status == "Succeeded" and self.judged is not False

    @property
    def not_judged(self) -> bool:
        return self.status == "Succeeded" and self.judged is False

    @property
    def verdict(self) -> str:
        """The status a person reads: NOT JUDGED in place of a Succeeded nothing judged."""
        return "NOT JUDGED" if self.not_judged else self.status


class Exclusion(_Model):
    name: str
    reason: str = ""
    message: str = ""  # what about this node excluded it (set when a target had no capable node)
    ran_in: list[str] = Field(default_factory=list)  # categories that did run on it (domain/variant)

    @property
    def why(self) -> str:
        """"InsufficientGPUCapacity (node has 7 allocatable ...)", or the reason alone."""
        return f"{self.reason} ({self.message})" if self.message and self.reason else (self.message or self.reason)


class NodeResult(_Model):
    """One target node's outcome across all categories, for the per-node map."""

    name: str
    domain: str | None = None  # clique or rack used to lay the map out
    status: NodeStatus = "Untested"
    reasons: list[str] = Field(default_factory=list)


class Condition(_Model):
    type: str
    status: str
    reason: str = ""
    message: str = ""


class Report(_Model):
    schema_version: str = SCHEMA_VERSION
    kind: Literal["Certification", "WorkloadRun"] = "Certification"
    name: str
    namespace: str = "default"
    platform: str = "unknown"
    gpu: str = "unknown"
    total_nodes: int = 0
    excluded_nodes: list[str] = Field(default_factory=list)
    exclusion_reason: str | None = None
    exclusions: list[Exclusion] = Field(default_factory=list)
    categories: list[CategoryReport] = Field(default_factory=list)
    categories_passed: int = 0  # succeeded and judged
    categories_not_judged: int = 0  # succeeded, but no threshold, stage or tool judged them
    categories_total: int = 0
    failed_nodes: list[str] = Field(default_factory=list)  # unique names, [] never null
    failed_node_details: list[FailedNode] = Field(default_factory=list)
    node_results: list[NodeResult] = Field(default_factory=list)
    env: list[str] = Field(default_factory=list)  # spec-level variable NAMES only
    conditions: list[Condition] = Field(default_factory=list)
    result: Result = "RUNNING"
    gpu_hours: float | None = None  # spent by every category's Jobs

    @property
    def categories_text(self) -> str:
        """"1/1 passed", or "0/1 passed, 1 not judged": never a pass count beside NOT JUDGED."""
        text = f"{self.categories_passed}/{self.categories_total} passed"
        return f"{text}, {self.categories_not_judged} not judged" if self.categories_not_judged else text

    def to_json_dict(self) -> dict:
        """The documented JSON form: camelCase keys, absent optionals left out, lists kept."""
        return self.model_dump(by_alias=True, exclude_none=True, mode="json")
