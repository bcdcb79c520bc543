"""Category options: set globally on a Certification spec or per category, and merged.

Every option defaults to unset (None) in the model and in the CRD, never to its
documented value: a CRD default would be written into every category's options
and then beat the global setting in the merge. The documented defaults apply at
resolution time (catalog, platform, GPU), after :func:`merge_options`.

Merge rules (from the reference's ResolveOptions): start from the global options;
a per-category value that is set and non-empty replaces the global one wholesale,
except ``env`` (merged per variable name) and ``workloadMetadata.labels`` (merged
per key). A category can change or add a name/key but cannot remove a global one.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, StringConstraints, model_validator

from nvcre.api.common import (
    LABEL_VALUE_PATTERN,
    QUALIFIED_NAME_PATTERN,
    ApiModel,
    Duration,
    FieldProblem,
    LocalObjectReference,
    Quantity,
    cel,
)
from nvcre.api.quantity import parse_quantity
from nvcre.api.rules import (
    ENV_RULE,
    MAX_GPUS_PER_NODE,
    MAX_NICS_PER_NODE,
    MAX_REPEAT,
    StorageClassName,
    check_env_name,
)
from nvcre.measure.thresholds import THRESHOLD_KEYS, check_threshold
from nvcre.api.rules import MIRROR_PATTERN, THRESHOLD_SHAPE, cel_expression

TestScale = Literal["intra-node", "intra-rack", "full-scale", "diagnose"]
Stage = Literal["bring-up", "burn-in", "preproduction", "production"]
Placement = Literal["Pinned", "Unpinned"]
RdmaDeviceAccess = Literal["hostPath", "devicePlugin"]

MAX_ENV = 32
MAX_WORKLOAD_LABELS = 32
ENV_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*$"
NIC_RESOURCE_PATTERN = (
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/"
    r"[a-zA-Z0-9]([-A-Za-z0-9_.]{0,61}[a-zA-Z0-9])?$"
)
SOURCE_REPO_PATTERN = r"^(https|ssh)://[A-Za-z0-9._~:/@%+-]+$"
STORAGE_SIZE_PATTERN = r"^([0-9]+(\.[0-9]+)?)(Ki|Mi|Gi|Ti|Pi|Ei)?$"
MAX_BYTES_PATTERN = r"^[0-9]+(K|M|G|T)?$"
DCGM_HOST_PATTERN = r"^[A-Za-z0-9]([-A-Za-z0-9.]*[A-Za-z0-9])?(:[0-9]{1,5})?$"
RESERVED_LABEL_KEY = "app.kubernetes.io/managed-by"
RESERVED_LABEL_PREFIX = "nvcre.nvidia.com/"

_THRESHOLD_KEY_LIST = ", ".join(f"'{k}'" for k in THRESHOLD_KEYS)

Thresholds = Annotated[
    dict[str, cel_expression(1024, THRESHOLD_SHAPE)],
    Field(
        max_length=16,
        json_schema_extra={
            "x-kubernetes-validations": [
                {
                    "rule": f"self.all(k, k in [{_THRESHOLD_KEY_LIST}])",
                    "message": f"unknown threshold key; valid keys: {', '.join(sorted(THRESHOLD_KEYS))}",
                }
            ]
        },
    ),
]
"""Metric key -> CEL expression over ``value``. The API server checks the keys and each
expression's shape (``nvcre.api.rules.THRESHOLD_SHAPE``); the expressions are compiled
and their cost estimated by :func:`check_thresholds` (the API server cannot)."""


def check_thresholds(thresholds: dict[str, str] | None, path: str = "thresholds") -> None:
    """Raise FieldProblem at ``<path>.<key>`` for the first unusable threshold entry."""
    for key, expression in (thresholds or {}).items():
        problem = check_threshold(key, expression)
        if problem is not None:
            raise FieldProblem(f"{path}.{key}", problem.message)


class EnvVar(ApiModel):
    """One environment variable for the workload, by value only.

    ``valueFrom`` is refused: the variable reaches MPI ranks as ``-x NAME=VALUE`` on
    the mpirun command line, so only a literal value can travel.
    """

    name: Annotated[str, StringConstraints(min_length=1, max_length=256, pattern=ENV_NAME_PATTERN)] = Field(
        description="Variable name (letters, digits, underscore; not starting with a digit)."
    )
    value: Annotated[str, StringConstraints(max_length=4096)] = Field("", description="Literal value.")
    value_from: dict[str, Any] | None = Field(
        None,
        description="Not supported: values must be literal because MPI ranks receive them on the command line.",
        json_schema_extra={"type": "object", "x-kubernetes-preserve-unknown-fields": True},
    )

    @classmethod
    def cel_rules(cls) -> list[dict[str, str]]:
        return [
            dict(ENV_RULE),
            cel(
                "!has(self.valueFrom)",
                "valueFrom is not allowed: env values reach MPI ranks on the command line, so set value",
                field_path=".valueFrom",
            )
        ]

    @model_validator(mode="after")
    def _no_value_from(self) -> "EnvVar":
        if self.value_from is not None:
            raise FieldProblem(
                "valueFrom", "valueFrom is not allowed: env values reach MPI ranks on the command line, so set value"
            )
        reserved = check_env_name(self.name)
        if reserved:
            raise FieldProblem("name", reserved)
        return self


def check_env_names_unique(env: list[Any] | None) -> None:
    """Refuse a second variable with the same name (the API server does, via listType=map)."""
    seen: set[str] = set()
    for index, var in enumerate(env or []):
        if var.name in seen:
            raise FieldProblem(f"env[{index}].name", f"duplicate variable {var.name!r}; each name may appear once")
        seen.add(var.name)


LabelValue = Annotated[str, StringConstraints(max_length=63, pattern=LABEL_VALUE_PATTERN)]


class WorkloadMetadata(ApiModel):
    """Labels for the submitted workload object only (not pods, not templates).

    Kueue and gang schedulers read the submitted object before any pod exists. At
    most 32 labels after merging catalog, global, per-category and the gang queue label.
    """

    labels: Annotated[dict[str, LabelValue], Field(max_length=MAX_WORKLOAD_LABELS)] | None = Field(
        None,
        description="Labels merged per key: catalog, then global, then per category. At most 32. Keys under "
        "nvcre.nvidia.com/ and app.kubernetes.io/managed-by are reserved.",
    )

    @classmethod
    def cel_rules(cls) -> list[dict[str, str]]:
        return [
            cel(
                "!has(self.labels) || self.labels.all(k, k != 'app.kubernetes.io/managed-by' "
                "&& !k.startsWith('nvcre.nvidia.com/'))",
                "label keys app.kubernetes.io/managed-by and nvcre.nvidia.com/* are reserved",
                field_path=".labels",
            ),
            cel(
                f"!has(self.labels) || self.labels.all(k, k.size() <= 317 && k.matches('{QUALIFIED_NAME_PATTERN}'))",
                "every label key must be a qualified name ([prefix/]name, name at most 63 characters)",
                field_path=".labels",
            ),
            cel(
                "!has(self.labels) || self.labels.all(k, !k.contains('/') || k.matches('^[^/]{1,253}/'))",
                "a label key prefix must be at most 253 characters",
                field_path=".labels",
            ),
        ]

    @model_validator(mode="after")
    def _check_keys(self) -> "WorkloadMetadata":
        import re

        for key in self.labels or {}:
            path = f"labels[{key}]"
            if key == RESERVED_LABEL_KEY or key.startswith(RESERVED_LABEL_PREFIX):
                raise FieldProblem(path, "label keys app.kubernetes.io/managed-by and nvcre.nvidia.com/* are reserved")
            if len(key) > 317 or not re.fullmatch(QUALIFIED_NAME_PATTERN, key):
                raise FieldProblem(path, "a label key must be a qualified name ([prefix/]name, name at most 63 characters)")
            if "/" in key and len(key.split("/")[0]) > 253:
                raise FieldProblem(path, "a label key prefix must be at most 253 characters")
        return self


class ResourceAmounts(ApiModel):
    """CPU and memory amounts for training containers."""

    cpu: Quantity | None = None
    memory: Quantity | None = None

    @classmethod
    def cel_rules(cls) -> list[dict[str, str]]:
        return [
            cel(
                f"!has(self.{name}) || !quantity(string(self.{name})).isLessThan(quantity('0'))",
                f"{name} must not be negative",
                field_path=f".{name}",
            )
            for name in ("cpu", "memory")
        ]

    @model_validator(mode="after")
    def _not_negative(self) -> "ResourceAmounts":
        for name in ("cpu", "memory"):
            value = getattr(self, name)
            if value is not None and parse_quantity(value) < 0:
                raise FieldProblem(name, f"{name} must not be negative")
        return self


class CategoryResources(ApiModel):
    """CPU and memory for training entries. Each of the four values falls back
    independently to its default (limits cpu 128, memory 800Gi; requests cpu 64, memory 500Gi)."""

    limits: ResourceAmounts | None = None
    requests: ResourceAmounts | None = None

    @classmethod
    def cel_rules(cls) -> list[dict[str, str]]:
        return [
            cel(
                f"!has(self.requests) || !has(self.limits) || !has(self.requests.{name}) || !has(self.limits.{name}) "
                f"|| !quantity(string(self.requests.{name})).isGreaterThan(quantity(string(self.limits.{name})))",
                f"requests.{name} must not exceed limits.{name}",
                field_path=f".requests.{name}",
            )
            for name in ("cpu", "memory")
        ]

    @model_validator(mode="after")
    def _requests_within_limits(self) -> "CategoryResources":
        if self.requests is None or self.limits is None:
            return self
        for name in ("cpu", "memory"):
            req, lim = getattr(self.requests, name), getattr(self.limits, name)
            if req is not None and lim is not None and parse_quantity(req) > parse_quantity(lim):
                raise FieldProblem(f"requests.{name}", f"requests.{name} ({req}) must not exceed limits.{name} ({lim})")
        return self


def _pos(description: str, minimum: int = 1, maximum: int = 2_147_483_647) -> Any:
    return Field(None, ge=minimum, le=maximum, description=description)


NIC_RESERVED_MESSAGE = "nicResourceName must not be under kubernetes.io/ or k8s.io/"


def nic_resource_rule() -> dict[str, str]:
    """The CRD rule refusing reserved resource domains; Certification options and
    WorkloadRun share it (the reference applies the same rule to both)."""
    return cel(
        "!has(self.nicResourceName) || !(self.nicResourceName.startsWith('kubernetes.io/') "
        "|| self.nicResourceName.startsWith('k8s.io/') || self.nicResourceName.matches('^[^/]*[.]k8s[.]io/'))",
        NIC_RESERVED_MESSAGE,
        field_path=".nicResourceName",
    )


def check_nic_resource_name(value: str | None) -> None:
    """The same rule as ``nic_resource_rule``, for manifests checked before the API server."""
    if value:
        prefix = value.split("/")[0]
        if prefix in ("kubernetes.io", "k8s.io") or prefix.endswith(".k8s.io"):
            raise FieldProblem("nicResourceName", NIC_RESERVED_MESSAGE)


class CategoryOptions(ApiModel):
    """Options for how a category runs; settable on the Certification spec (global) and
    per category (``categories[].options``). Unset means: use the catalog/platform/GPU default."""

    # Sizing and grouping.
    test_scale: TestScale | None = Field(
        None,
        description="Grouping strategy (default full-scale): intra-node (one job per node), intra-rack (one group per "
        "nvidia.com/gpu.clique domain), full-scale (groups of nodesPerJob, default all nodes), diagnose (adaptive "
        "fault isolation). Read by the multi-node communication entries.",
    )
    nodes_per_job: int | None = _pos(
        "Nodes per job group. Unset: training entries use the largest valid count, others all matching nodes. "
        "Clamped to the matching nodes and the entry's valid sizes."
    )
    placement: Placement | None = Field(
        None,
        description="Pinned (default): every target node is partitioned into pinned groups. Unpinned: one job of "
        "exactly nodesPerJob nodes placed by the scheduler inside the target; needs an explicit nodesPerJob and "
        "cannot be combined with intra-node, intra-rack or diagnose.",
    )
    min_group_size: int | None = _pos("Diagnose: smallest group bisection splits down to (default 2).")
    max_concurrent: int | None = _pos("Jobs running at once (default 0 = unlimited).", minimum=0)
    isolate_failures: bool | None = Field(
        None,
        description="A multi-node group that misses a bandwidth threshold is narrowed down, by diagnose rounds over "
        "its nodes, to the nodes or links responsible, and only those are named (default true; our extension). "
        "false: every node of the group is named, as the reference does.",
    )
    repeat_count: int | None = _pos("How many times the category runs (default 1); becomes Workflow iterations.",
                                    maximum=MAX_REPEAT)
    timeout_per_job: Duration | None = Field(
        None,
        description="Wall-clock budget per Job once its workload runs (default: the entry's, else 15m for diagnose, "
        "else 1h). Time blocked on scheduling does not count.",
    )
    measurement_timeout: Duration | None = Field(
        None, description="How long to wait for measurements after a Job succeeds (default 5m)."
    )
    scheduling_stall_grace_seconds: int | None = _pos(
        "How long pods may stay unschedulable before the Job reports WorkloadSchedulingBlocked (default 300)."
    )
    startup_stall_timeout_seconds: int | None = _pos(
        "Training: budget for the first training step (default: the entry's, 1200 for the Nemotron entries)."
    )

    # Hardware shape.
    gpus_per_node: int | None = _pos("GPUs per node (default: from the GPU architecture, 4 when unknown).",
                                     maximum=MAX_GPUS_PER_NODE)
    mlnx_per_node: int | None = _pos(
        "RDMA NICs per node (default: from architecture and platform). 0 opts out: no NIC request and no "
        "k8s.v1.cni.cncf.io/networks annotation.",
        minimum=0,
        maximum=MAX_NICS_PER_NODE,
    )
    nic_resource_name: Annotated[str, StringConstraints(max_length=253, pattern=NIC_RESOURCE_PATTERN)] | None = Field(
        None,
        description="Extended resource name for RDMA NICs (e.g. rdma/ib, nvidia.com/mlnxnics). Auto-detected on "
        "on-prem when exactly one candidate exists. Names under kubernetes.io/ and k8s.io/ are refused.",
    )
    enable_mnnvl: bool | None = Field(
        None,
        alias="enableMNNVL",
        description="Multi-node NVLink (ComputeDomain). Default: true on gb200 and gb300, false elsewhere.",
    )
    rdma_device_access: RdmaDeviceAccess | None = Field(
        None,
        description="devicePlugin (default): NICs come from the device plugin. hostPath: mount /dev/infiniband and "
        "run the worker privileged.",
    )
    resources: CategoryResources | None = Field(None, description="CPU and memory for training containers.")

    # Workload content.
    image: Annotated[str, StringConstraints(min_length=1, max_length=512)] | None = Field(
        None,
        description="Replaces the workload image (trainer, primary container, and init containers that shared it). "
        "Set it per category so other categories keep their images.",
    )
    image_pull_secrets: Annotated[list[LocalObjectReference], Field(max_length=16)] | None = Field(
        None, description="Pull secrets for every workload pod, launcher included. Replaced wholesale."
    )
    workload_registry: Annotated[str, StringConstraints(max_length=253, pattern=MIRROR_PATTERN)] | None = Field(
        None,
        description="nvcre extension for air-gapped sites: pull every workload image (containers, init containers, "
        "sidecars, launcher) from this mirror, host[:port][/path]. The registry host is replaced; the repository path "
        "and tag/digest are kept; Docker Hub short names are expanded (ubuntu -> library/ubuntu).",
    )
    env: Annotated[list[EnvVar], Field(max_length=MAX_ENV)] | None = Field(
        None,
        description="Workload environment, at most 32 entries, literal values only. Merged per name: catalog and "
        "platform, then spec.env, then the category's options.env.",
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]},
    )
    workload_metadata: WorkloadMetadata | None = Field(
        None, description="Labels on the submitted workload object, merged per key (catalog < global < category)."
    )
    thresholds: Thresholds | None = Field(
        None,
        description="Pass criteria: metric key -> CEL expression over `value` (a double) returning bool, e.g. "
        "'value >= 900'. Keys: " + ", ".join(sorted(THRESHOLD_KEYS)) + ". No thresholds by default. Replaced wholesale.",
    )
    stage: Stage | None = Field(
        None,
        description="Readiness stage (our extension): bring-up, burn-in, preproduction or production. Where no "
        "threshold is set, the stage derives one as its stated fraction of the shipped acceptance line for the "
        "detected GPU, fabric and scope (production: the line itself; `nvcrectl certification baselines`). "
        "Thresholds in the spec always win.",
    )
    outlier_fraction: float | None = Field(
        None,
        ge=0.05,
        le=1.0,
        description="A group whose headline figure is below this fraction of the median of the groups of the "
        "same shape is a PerformanceOutlier (default 0.9; needs at least 3 such groups). Our extension.",
    )
    fail_on_outlier: bool | None = Field(
        None,
        description="A PerformanceOutlier fails the category, and the slow node is isolated and named "
        "(default false: a warning).",
    )
    regression_margin: float | None = Field(
        None,
        gt=0,
        lt=1,
        description="A node whose figure falls more than this fraction below its own last passing result on the "
        "same category, scope and topology is reported as a Regression (default 0.10; a drop of exactly the "
        "margin is not one). A fraction in (0, 1). Our extension.",
    )
    dcgm_host: Annotated[str, StringConstraints(min_length=1, max_length=253, pattern=DCGM_HOST_PATTERN)] | None = Field(
        None,
        description="diagnostics/dcgm-level4: DCGM hostengine as host[:port] (default nvidia-dcgm.gpu-operator.svc:5555).",
    )
    source_repo: Annotated[str, StringConstraints(max_length=2048, pattern=SOURCE_REPO_PATTERN)] | None = Field(
        None, description="Training: Megatron-LM clone URL; https:// or ssh:// only."
    )

    # NCCL test knobs.
    max_bytes: Annotated[str, StringConstraints(max_length=16, pattern=MAX_BYTES_PATTERN)] | None = Field(
        None, description="NCCL tests largest message size, -e (default 16G; 32G on gb200/gb300)."
    )
    num_iterations: int | None = _pos("NCCL tests iterations, -n (default 100; 5 in diagnose).")
    num_cycles: int | None = _pos("NCCL tests cycles, -N (default 10; 1 in diagnose).")

    # Training knobs.
    max_steps: int | None = _pos("Training steps (default 50); -1 means unlimited.", minimum=-1)
    exit_duration_mins: int | None = _pos("Training: EXIT_DURATION_MINS (default 30).")
    enable_checkpoint: bool | None = Field(
        None, description="Training: checkpoint to a PVC and restart from it on failure (default false)."
    )
    storage_class_name: StorageClassName | None = Field(
        None, description="Checkpoint PVC storage class (default: the cluster's)."
    )
    storage_size: Annotated[str, StringConstraints(max_length=32, pattern=STORAGE_SIZE_PATTERN)] | None = Field(
        None, description="Checkpoint PVC size (default 10Ti)."
    )
    save_interval: int | None = _pos("Training: steps between checkpoints (default 250).")
    save_retain_interval: int | None = _pos("Training: checkpoint retention interval (default 1000).")
    save_top_k: int | None = _pos("Training: checkpoints kept (default 1).")
    max_restarts: int | None = _pos("Checkpoint restarts allowed (default: the entry's).", minimum=0)

    @classmethod
    def cel_rules(cls) -> list[dict[str, str]]:
        return [
            cel(
                "!has(self.placement) || self.placement != 'Unpinned' || !has(self.testScale) "
                "|| self.testScale == 'full-scale'",
                "placement Unpinned runs one job and cannot be combined with testScale intra-node, intra-rack or diagnose",
                field_path=".placement",
            ),
            nic_resource_rule(),
        ]

    @model_validator(mode="after")
    def _check_options(self) -> "CategoryOptions":
        if self.placement == "Unpinned" and self.test_scale not in (None, "full-scale"):
            raise FieldProblem(
                "placement",
                f"placement Unpinned runs one job and cannot be combined with testScale {self.test_scale}; "
                "use full-scale or Pinned",
            )
        check_thresholds(self.thresholds)
        check_env_names_unique(self.env)
        check_nic_resource_name(self.nic_resource_name)
        return self


OPTION_FIELDS: tuple[str, ...] = tuple(CategoryOptions.model_fields)


def _is_set(value: Any) -> bool:
    """The reference's "set" test: not nil, not an empty string, slice or map."""
    if value is None:
        return False
    if isinstance(value, (str, list, dict)) and len(value) == 0:
        return False
    return True


def merge_env(*layers: list[EnvVar] | None) -> list[EnvVar] | None:
    """Merge env lists per name: a later layer replaces a name in place or appends it."""
    merged: dict[str, EnvVar] = {}
    for layer in layers:
        for var in layer or []:
            merged[var.name] = var
    return list(merged.values()) or None


def merge_labels(*layers: dict[str, str] | None) -> dict[str, str] | None:
    """Merge label maps per key, later layers winning; None when no layer has labels."""
    merged: dict[str, str] = {}
    for layer in layers:
        merged.update(layer or {})
    return merged or None


def merge_options(global_options: CategoryOptions | None, category: CategoryOptions | None) -> CategoryOptions:
    """The options one category runs with: global options overlaid by the category's.

    ``global_options`` may be the Certification spec itself (it carries the options inline).
    A set, non-empty category value replaces the global one; ``env`` merges per name and
    ``workloadMetadata.labels`` per key. The result is unvalidated-by-cap (the 32-entry
    caps apply to each level and are re-checked by the resolver after catalog layers).
    """
    base = {name: getattr(global_options, name) for name in OPTION_FIELDS} if global_options else {}
    merged: dict[str, Any] = {name: base.get(name) for name in OPTION_FIELDS}
    for name in OPTION_FIELDS:
        value = getattr(category, name) if category is not None else None
        if name == "env":
            merged["env"] = merge_env(base.get("env"), value)
        elif name == "workload_metadata":
            labels = merge_labels(
                base["workload_metadata"].labels if base.get("workload_metadata") else None,
                value.labels if value is not None else None,
            )
            merged["workload_metadata"] = WorkloadMetadata.model_construct(labels=labels) if labels is not None else None
        elif name == "startup_stall_timeout_seconds":
            if value is not None:
                merged[name] = value
        elif _is_set(value):
            merged[name] = value
    return CategoryOptions.model_construct(**{k: v for k, v in merged.items() if v is not None})


def options_of(spec: Any) -> CategoryOptions:
    """The global CategoryOptions carried inline by a Certification spec."""
    return CategoryOptions.model_construct(
        **{name: getattr(spec, name) for name in OPTION_FIELDS if getattr(spec, name, None) is not None}
    )
