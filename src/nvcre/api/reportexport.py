"""ReportExportPolicy and ReportExport: finished reports delivered to a webhook.

A platform team's tracker (a CMDB, a ticket queue, a fleet dashboard) wants every
finished Certification's report without polling the cluster. A
``ReportExportPolicy`` says which Certifications (namespaces, label selector) go to
which HTTPS endpoint, with what retry and retention; the controller registers one
``ReportExport`` per (Certification, policy) when the run starts, with frozen copies
of the policy's settings, takes a snapshot of the report when the run ends and
delivers it with an ``Idempotency-Key``. Field names, defaults and bounds follow the
reference (section 2.8 of its API); ``webhook.caBundle`` is our addition for
endpoints signed by a private CA.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StringConstraints, model_validator

from nvcre.api.common import (
    DNS_SUBDOMAIN_PATTERN,
    ApiModel,
    FieldProblem,
    parse_duration,
    Conditions,
    Duration,
    ShortText,
    Timestamp,
    cel,
)
from nvcre.api.kinds import AGE, CrdInfo, KubeObject, PrinterColumn
from nvcre.api.rules import bounded_duration

MAX_POLICY_NAMESPACES = 64
MAX_URL_LEN = 2048
#: A Certification matches at most this many policies (the reference's cap).
MAX_POLICIES_PER_SOURCE = 32
#: Delivery limits for one report: raw JSON and its gzip form.
MAX_PAYLOAD_BYTES = 8 * 1024 * 1024
MAX_COMPRESSED_BYTES = 512 * 1024

Name = Annotated[str, StringConstraints(min_length=1, max_length=253, pattern=DNS_SUBDOMAIN_PATTERN)]
Uid = Annotated[str, StringConstraints(max_length=64)]


def _check_between(model: ApiModel, field: str, low: str, high: str) -> None:
    """The Python twin of :func:`_between` (the CLI refuses what the API server would)."""
    value = getattr(model, field)
    if value is not None and not parse_duration(low) <= parse_duration(value) <= parse_duration(high):
        alias = type(model).model_fields[field].alias or field
        raise FieldProblem(alias, f"must be between {low} and {high}, not {value}")


def _between(field: str, low: str, high: str) -> dict[str, str]:
    return cel(
        f"!has(self.{field}) || (duration(self.{field}) >= duration('{low}') && duration(self.{field}) <= duration('{high}'))",
        f"{field} must be between {low} and {high}",
        field_path=f".{field}",
    )


class LabelSelectorRequirement(ApiModel):
    key: Annotated[str, StringConstraints(min_length=1, max_length=317)]
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"]
    values: Annotated[list[Annotated[str, StringConstraints(max_length=63)]], Field(max_length=64)] | None = None


class LabelSelector(ApiModel):
    """A Kubernetes label selector (matchLabels AND matchExpressions)."""

    match_labels: Annotated[dict[str, Annotated[str, StringConstraints(max_length=63)]], Field(max_length=64)] | None = None
    match_expressions: Annotated[list[LabelSelectorRequirement], Field(max_length=32)] | None = None


class ExportSource(ApiModel):
    """Which finished runs are exported."""

    kind: Literal["Certification"] = Field("Certification", description="The only kind exported: Certification.")
    namespaces: Annotated[list[Annotated[str, StringConstraints(min_length=1, max_length=63)]],
                          Field(min_length=1, max_length=MAX_POLICY_NAMESPACES,
                                json_schema_extra={"x-kubernetes-list-type": "set"})] = Field(
        description="Namespaces whose Certifications are exported (1 to 64)."
    )
    selector: LabelSelector | None = Field(None, description="Only Certifications with these labels; all when absent.")


class SecretKeyRef(ApiModel):
    name: Name
    key: Annotated[str, StringConstraints(min_length=1, max_length=253)] = "token"


class WebhookSpec(ApiModel):
    """Where and how a report is sent."""

    url: Annotated[str, StringConstraints(min_length=9, max_length=MAX_URL_LEN, pattern=r"^https://\S+$")] = Field(
        description="HTTPS endpoint that receives a POST per finished run (https only)."
    )
    bearer_token_secret_ref: SecretKeyRef | None = Field(
        None, description="Secret (in the policy's namespace) whose key holds the bearer token sent in Authorization."
    )
    timeout: Duration = Field("10s", description="Per-attempt timeout, 1s to 5m.")
    ca_bundle: Annotated[str, StringConstraints(max_length=65536)] | None = Field(
        None, description="PEM CA certificates that sign the endpoint (an nvcre addition); the system roots otherwise."
    )

    @classmethod
    def cel_rules(cls) -> list[dict[str, str]]:
        return [_between("timeout", "1s", "5m")]

    @model_validator(mode="after")
    def _bounds(self) -> "WebhookSpec":
        _check_between(self, "timeout", "1s", "5m")
        return self


class RetrySpec(ApiModel):
    """Backoff between attempts: doubling from initialBackoff up to maxBackoff."""

    initial_backoff: Duration = Field("10s", description="First wait, 1s to 1h.")
    max_backoff: Duration = Field("15m", description="Longest wait, at least initialBackoff, at most 24h.")
    max_attempts: Annotated[int, Field(ge=1, le=10000)] = Field(100, description="Attempts per delivery cycle, 1 to 10000.")
    max_elapsed_time: Duration = Field("24h", description="Give up a cycle after this long, at most 720h.")

    @classmethod
    def cel_rules(cls) -> list[dict[str, str]]:
        return [
            _between("initialBackoff", "1s", "1h"),
            _between("maxBackoff", "1s", "24h"),
            _between("maxElapsedTime", "1s", "720h"),
            cel("!has(self.initialBackoff) || !has(self.maxBackoff) || duration(self.maxBackoff) >= duration(self.initialBackoff)",
                "maxBackoff must be at least initialBackoff", field_path=".maxBackoff"),
        ]

    @model_validator(mode="after")
    def _bounds(self) -> "RetrySpec":
        _check_between(self, "initial_backoff", "1s", "1h")
        _check_between(self, "max_backoff", "1s", "24h")
        _check_between(self, "max_elapsed_time", "1s", "720h")
        if parse_duration(self.max_backoff) < parse_duration(self.initial_backoff):
            raise FieldProblem("maxBackoff", f"must be at least initialBackoff ({self.initial_backoff}), not {self.max_backoff}")
        return self


RetentionDuration = bounded_duration(3600.0, 8760 * 3600.0)


class RetentionSpec(ApiModel):
    """How long a finished ReportExport (and its snapshot) is kept."""

    # A year, not the run-length bound of other durations: retention is a record's lifetime.
    succeeded: RetentionDuration = Field("168h", description="After delivery, 1h to 8760h.")
    failed: RetentionDuration = Field("720h", description="After a failed or cancelled delivery, 1h to 8760h.")


class ReportExportPolicySpec(ApiModel):
    source: ExportSource
    webhook: WebhookSpec
    retry: RetrySpec = Field(default_factory=RetrySpec)
    retention: RetentionSpec = Field(default_factory=RetentionSpec)
    suspend: bool = Field(False, description="No new exports are registered and pending deliveries wait while true.")


class ReportExportPolicy(KubeObject):
    """Which finished Certifications are delivered to which webhook."""

    kind: Literal["ReportExportPolicy"] = "ReportExportPolicy"
    spec: ReportExportPolicySpec

    crd = CrdInfo(
        plural="reportexportpolicies",
        singular="reportexportpolicy",
        short_names=("rep",),
        has_status=False,
        columns=(
            PrinterColumn("URL", ".spec.webhook.url"),
            PrinterColumn("Suspended", ".spec.suspend", "boolean"),
            AGE,
        ),
    )


class SourceRef(ApiModel):
    kind: Literal["Certification"] = "Certification"
    namespace: Annotated[str, StringConstraints(min_length=1, max_length=63)]
    name: Name
    uid: Uid


class PolicyRef(ApiModel):
    name: Name
    uid: Uid
    generation: Annotated[int, Field(ge=0)] = 0


class ReportExportSpec(ApiModel):
    """One (run, policy) delivery; every input is frozen at registration."""

    source_ref: SourceRef
    policy_ref: PolicyRef
    webhook: WebhookSpec
    retry: RetrySpec = Field(default_factory=RetrySpec)
    retention: RetentionSpec = Field(default_factory=RetentionSpec)
    cluster_id: Annotated[str, StringConstraints(max_length=128)] = Field("", alias="clusterID")
    report_id: Annotated[str, StringConstraints(max_length=128)] = Field("", alias="reportID")
    cancel: bool = Field(False, description="Stop delivering (phase Cancelled) unless already delivered.")
    retry_nonce: Annotated[str, StringConstraints(max_length=128)] | None = Field(
        None, description="Change it to start a new delivery cycle after Failed."
    )

    @classmethod
    def cel_rules(cls) -> list[dict[str, str]]:
        frozen = ("sourceRef", "policyRef", "webhook", "retry", "retention", "clusterID", "reportID")
        return [cel(f"self.{name} == oldSelf.{name}", f"{name} is immutable; only cancel and retryNonce can change",
                    field_path=f".{name}") for name in frozen]


ExportPhase = Literal["WaitingForResult", "SnapshotReady", "Retrying", "Delivered", "Failed", "Cancelled", "Skipped"]


class SnapshotRef(ApiModel):
    name: Name


class ReportExportStatus(ApiModel):
    phase: ExportPhase | None = None
    reason: Annotated[str, StringConstraints(max_length=128)] | None = None
    message: ShortText | None = None
    report_id: Annotated[str, StringConstraints(max_length=128)] | None = Field(None, alias="reportID")
    result: Literal["PASSED", "FAILED", "INCOMPLETE", "NOT JUDGED"] | None = None
    snapshot_ref: SnapshotRef | None = None
    sha256: Annotated[str, StringConstraints(max_length=64)] | None = None
    payload_bytes: Annotated[int, Field(ge=0)] | None = None
    attempts: Annotated[int, Field(ge=0)] | None = None
    cycle_attempts: Annotated[int, Field(ge=0)] | None = None
    last_http_status: Annotated[int, Field(ge=0, le=999)] | None = Field(None, alias="lastHTTPStatus")
    snapshot_started_at: Timestamp | None = None
    cycle_started_at: Timestamp | None = None
    first_attempt_time: Timestamp | None = None
    last_attempt_time: Timestamp | None = None
    next_attempt_time: Timestamp | None = None
    completion_time: Timestamp | None = None
    observed_retry_nonce: Annotated[str, StringConstraints(max_length=128)] | None = None
    conditions: Conditions | None = None


class ReportExport(KubeObject):
    """The delivery of one finished run's report under one policy."""

    kind: Literal["ReportExport"] = "ReportExport"
    spec: ReportExportSpec
    status: ReportExportStatus | None = None

    crd = CrdInfo(
        plural="reportexports",
        singular="reportexport",
        short_names=("rex",),
        columns=(
            PrinterColumn("Source", ".spec.sourceRef.name"),
            PrinterColumn("Result", ".status.result"),
            PrinterColumn("Delivery", ".status.phase"),
            PrinterColumn("Attempts", ".status.attempts", "integer"),
            AGE,
        ),
    )
