"""Certification: the object a user creates; names target nodes and categories to run.

The controller creates one Workflow per category, in order, and groups the results
by category. The spec is immutable: a verdict must describe exactly what was asked.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StringConstraints, model_validator

from nvcre.api.common import (
    DNS_LABEL_PATTERN,
    PHASE_DESCRIPTION,
    ApiModel,
    Conditions,
    ExcludedNode,
    FailedNodes,
    FieldProblem,
    InferredHardware,
    NamespacedRef,
    Phase,
    TargetSpec,
    Timestamp,
    TypedLocalObjectReference,
    cel,
)
from nvcre.api.gang import GangSchedulerSpec
from nvcre.api.kinds import AGE, RUN_PHASE, CrdInfo, KubeObject, PrinterColumn
from nvcre.api.options import MAX_ENV, MAX_WORKLOAD_LABELS, CategoryOptions, TestScale, merge_options

Domain = Literal["communication", "diagnostics", "training"]
DOMAINS: tuple[str, ...] = ("communication", "diagnostics", "training")
MAX_CATEGORIES = 64


class CertificationCategory(ApiModel):
    """One catalog category to run (``domain/variant``), with optional per-category options."""

    domain: Domain = Field(description="Catalog domain: communication, diagnostics or training.")
    variant: Annotated[str, StringConstraints(min_length=1, max_length=63, pattern=DNS_LABEL_PATTERN)] = Field(
        description="Catalog variant within the domain, e.g. nccl-all-reduce, dcgm-level4, nemotron5-8b."
    )
    options: CategoryOptions | None = Field(
        None, description="Per-category options; a set value beats the global one (env and labels merge)."
    )

    @property
    def key(self) -> str:
        return f"{self.domain}/{self.variant}"


def _catalog_aliases() -> dict[tuple[str, str], tuple[str, str]]:
    """(domain, alias) -> the catalog's (domain, variant): two spellings of one category
    are one category, for the duplicate check here and in the CRD rule."""
    from nvcre.api.category_aliases import category_aliases

    return category_aliases()


def _canonical_variant_cel(var: str) -> str:
    """CEL for ``var``'s variant spelled as the catalog names it (nested ternaries: no map
    is built per comparison, so the rule's cost stays a few units per pair)."""
    expr = f"{var}.variant"
    for (domain, alias), (_, variant) in reversed(list(_catalog_aliases().items())):
        expr = f"({var}.domain == '{domain}' && {var}.variant == '{alias}' ? '{variant}' : {expr})"
    return expr


def duplicate_categories_rule() -> dict[str, str]:
    """The CRD rule that refuses identical duplicate categories, as ``_check_categories`` does."""
    same_options = "(has(c.options) ? (has(d.options) && d.options == c.options) : !has(d.options))"
    return cel(
        f"self.categories.all(c, self.categories.exists_one(d, d.domain == c.domain && "
        f"{_canonical_variant_cel('d')} == {_canonical_variant_cel('c')} && {same_options}))",
        DUPLICATE_MESSAGE,
        field_path=".categories",
    )


DUPLICATE_MESSAGE = ("identical duplicate categories (same domain, variant, counting catalog aliases, and options); "
                     "a category runs once per listing, so list it once or change its options")


def _effective(field: str, default: str) -> str:
    """CEL for a category option's value after the merge (category, else global, else default)."""
    return f"((has(c.options) && has(c.options.{field})) ? c.options.{field} : (has(self.{field}) ? self.{field} : {default}))"


class CertificationSpec(CategoryOptions):
    """What to certify. The category options set here apply to every category."""

    target: TargetSpec = Field(
        description="Nodes to certify. Empty matches every GPU node (nvidia.com/gpu.present=true) not cordoned."
    )
    categories: Annotated[list[CertificationCategory], Field(min_length=1, max_length=MAX_CATEGORIES)] = Field(
        description="Categories to run, one after another, in this order (1 to 64)."
    )
    gang_scheduler: GangSchedulerSpec | None = Field(
        None, description="Opt every workload pod into a gang-aware scheduler (e.g. KAI Scheduler)."
    )

    @classmethod
    def cel_rules(cls) -> list[dict[str, str]]:
        placement = _effective("placement", "'Pinned'")
        scale = _effective("testScale", "'full-scale'")
        category_sets = "(has(c.options) && has(c.options.{0}))"
        return super().cel_rules() + [
            cel(
                "!has(self.placement) || self.placement != 'Unpinned' || has(self.nodesPerJob) || self.categories.all(c, "
                f"({category_sets.format('placement')} && c.options.placement != 'Unpinned') || "
                f"{category_sets.format('nodesPerJob')})",
                "placement Unpinned needs an explicit nodesPerJob (globally or on every category it applies to)",
                field_path=".placement",
            ),
            cel(
                f"has(self.nodesPerJob) || self.categories.all(c, !{category_sets.format('placement')} || "
                f"c.options.placement != 'Unpinned' || {category_sets.format('nodesPerJob')})",
                "a category with placement Unpinned needs an explicit nodesPerJob (globally or on the category)",
                field_path=".categories",
            ),
            cel(
                f"self.categories.all(c, !({category_sets.format('placement')} || {category_sets.format('testScale')}) || "
                f"{placement} != 'Unpinned' || {scale} == 'full-scale')",
                "placement Unpinned cannot be combined with testScale intra-node, intra-rack or diagnose",
                field_path=".categories",
            ),
            cel(
                "!has(self.env) || self.categories.all(c, !has(c.options) || !has(c.options.env) || "
                f"size(self.env) + c.options.env.filter(e, !self.env.exists(g, g.name == e.name)).size() <= {MAX_ENV})",
                f"env after merging spec.env and a category's options.env must have at most {MAX_ENV} entries",
                field_path=".categories",
            ),
            cel(
                "!has(self.workloadMetadata) || !has(self.workloadMetadata.labels) || self.categories.all(c, "
                "!has(c.options) || !has(c.options.workloadMetadata) || !has(c.options.workloadMetadata.labels) || "
                "size(self.workloadMetadata.labels) + c.options.workloadMetadata.labels.filter(k, "
                f"!(k in self.workloadMetadata.labels)).size() <= {MAX_WORKLOAD_LABELS})",
                f"workloadMetadata.labels after merging global and category labels must have at most "
                f"{MAX_WORKLOAD_LABELS} entries",
                field_path=".categories",
            ),
            duplicate_categories_rule(),
        ]

    @model_validator(mode="after")
    def _check_categories(self) -> "CertificationSpec":
        seen: dict[str, int] = {}
        aliases = _catalog_aliases()
        for index, category in enumerate(self.categories):
            domain, variant = aliases.get((category.domain, category.variant), (category.domain, category.variant))
            key = category.model_copy(update={"domain": domain, "variant": variant}).model_dump_json(
                by_alias=True, exclude_none=True)
            if key in seen:
                raise FieldProblem(
                    f"categories[{index}]",
                    f"duplicate of categories[{seen[key]}] (same domain, variant, counting catalog aliases, and "
                    "options); a category runs once per listing, so list it once or change its options",
                )
            seen[key] = index
            merged = merge_options(self, category.options)
            own = category.options or CategoryOptions()
            where = f"categories[{index}].options"
            if merged.placement == "Unpinned":
                if merged.nodes_per_job is None:
                    raise FieldProblem(
                        f"{where}.placement" if own.placement else "placement",
                        f"category {category.domain}/{category.variant}: placement Unpinned needs an explicit "
                        "nodesPerJob (globally or on the category)",
                    )
                if merged.test_scale not in (None, "full-scale"):
                    field = "placement" if own.placement else "testScale"
                    raise FieldProblem(
                        f"{where}.{field}",
                        f"category {category.domain}/{category.variant}: placement Unpinned cannot be combined "
                        f"with testScale {merged.test_scale}",
                    )
            if merged.env and len(merged.env) > MAX_ENV:
                raise FieldProblem(
                    f"{where}.env",
                    f"env after merging spec.env and this category's options.env has {len(merged.env)} entries; "
                    f"at most {MAX_ENV} are allowed",
                )
            labels = merged.workload_metadata.labels if merged.workload_metadata else None
            if labels and len(labels) > MAX_WORKLOAD_LABELS:
                raise FieldProblem(
                    f"{where}.workloadMetadata.labels",
                    f"workloadMetadata.labels after merging global and category labels has {len(labels)} entries; "
                    f"at most {MAX_WORKLOAD_LABELS} are allowed",
                )
        return self

    def options_for(self, index: int) -> CategoryOptions:
        """The merged options category ``index`` runs with."""
        return merge_options(self, self.categories[index].options)


CategoryPhase = Literal["Pending", "InProgress", "Succeeded", "Failed"]


class CategoryStatus(ApiModel):
    """The result of one category, in spec order."""

    domain: str
    variant: str
    status: CategoryPhase = Field("Pending", description="Pending, InProgress, Succeeded or Failed.")
    workflow_ref: NamespacedRef | None = Field(None, description="The category's Workflow.")
    succeeded_nodes_ref: TypedLocalObjectReference | None = Field(None, description="ConfigMap of nodes that passed.")
    failed_nodes_ref: TypedLocalObjectReference | None = Field(None, description="ConfigMap of failed nodes.")
    start_time: Timestamp | None = None
    completion_time: Timestamp | None = None
    test_scale: TestScale | None = Field(None, description="The testScale the category ran with.")
    nodes_per_job: int | None = None
    jobs: int | None = Field(None, description="Jobs the category ran (all groups and iterations).")
    failed_node_count: int | None = Field(None, description="Distinct nodes that failed in this category.")
    validation_failed: bool | None = Field(None, description="A threshold was missed.")
    message: Annotated[str, StringConstraints(max_length=1024)] | None = Field(
        None, description="Why the category failed (the Workflow's Failed message)."
    )
    status_detail: Annotated[str, StringConstraints(max_length=1024)] | None = Field(
        None, description="While running: why it is blocked (e.g. pods unschedulable)."
    )
    stage: Annotated[str, StringConstraints(max_length=32)] | None = Field(None, description="The readiness stage it ran at.")
    judged: bool | None = Field(None, description="Something judged the result (thresholds, a stage, the tool).")
    judging: Annotated[str, StringConstraints(max_length=1024)] | None = Field(
        None, description="What judged it, or why nothing did (our extension)."
    )
    outliers: int | None = Field(None, description="PerformanceOutlier groups found (our extension).")


CertificationResult = Literal["PASSED", "FAILED", "INCOMPLETE", "NOT JUDGED", "RUNNING"]


class CertificationSummary(ApiModel):
    """Counts that `kubectl get` columns read (our extension)."""

    categories_passed: Annotated[str, StringConstraints(max_length=16)] = Field(
        "0/0", description="'N/M': categories succeeded out of categories in the spec."
    )
    categories_failed: int = 0
    failed_node_count: int = Field(0, description="Distinct nodes that failed in any category.")
    excluded_node_count: int = Field(0, description="Target nodes left out of the run.")
    result: CertificationResult = Field(
        "RUNNING", description="PASSED, FAILED, INCOMPLETE (passed, but some target nodes were excluded), NOT JUDGED (nothing judged a "
        "category: no thresholds, no stage or no baseline) or RUNNING."
    )


class CertificationStatus(ApiModel):
    """Observed state. Detail per node lives on the Workflows; this stays small at 4096 nodes."""

    conditions: Conditions | None = None
    phase: Phase | None = Field(None, description=PHASE_DESCRIPTION)
    observed_generation: int | None = None
    summary: CertificationSummary | None = None
    platform: Annotated[str, StringConstraints(max_length=32)] | None = Field(None, description="Detected platform.")
    gpu_architecture: Annotated[str, StringConstraints(max_length=32)] | None = Field(
        None, alias="gpuArchitecture", description="Detected GPU architecture (majority of target nodes)."
    )
    total_nodes: int | None = Field(None, description="Target nodes discovered.")
    inferred_hardware: InferredHardware | None = Field(
        None, description="GPUs and NICs per node read from the nodes, for a GPU without catalog defaults."
    )
    excluded_nodes: Annotated[list[ExcludedNode], Field(max_length=8192)] | None = Field(
        None, description="Target nodes left out, each with a reason."
    )
    category_statuses: Annotated[list[CategoryStatus], Field(max_length=MAX_CATEGORIES)] | None = None
    failed_nodes: FailedNodes | None = Field(
        None, description="Nodes that failed in any category, one entry per (name, reason); messages on the Workflows."
    )


class Certification(KubeObject):
    """Certify target nodes by running catalog categories on them."""

    kind: Literal["Certification"] = "Certification"
    spec: CertificationSpec
    status: CertificationStatus | None = None

    crd = CrdInfo(
        plural="certifications",
        singular="certification",
        short_names=("cert", "certs"),
        columns=(
            RUN_PHASE,
            PrinterColumn("Result", ".status.summary.result", description="PASSED, FAILED, INCOMPLETE, NOT JUDGED or RUNNING"),
            PrinterColumn("Passed", ".status.summary.categoriesPassed", description="Categories passed, N/M"),
            PrinterColumn("Failed-Nodes", ".status.summary.failedNodeCount", "integer"),
            PrinterColumn("Platform", ".status.platform", priority=1),
            PrinterColumn("GPU", ".status.gpuArchitecture", priority=1),
            AGE,
        ),
        spec_rules=(cel("self == oldSelf", "spec is immutable after creation"),),
    )
