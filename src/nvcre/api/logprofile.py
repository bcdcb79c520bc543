"""LogProfile (cluster-scoped, no status): how to read a framework's logs.

Regex patterns with named captures turn log lines into training steps,
checkpoints and bandwidth rows. Profiles are data, so a new framework or log
format is a new LogProfile, not new code.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StringConstraints, model_validator

from nvcre.api.common import ApiModel, FieldProblem
from nvcre.api.kinds import AGE, CrdInfo, KubeObject, PrinterColumn
from nvcre.measure.userregex import UserRegexError, compile_user_regex

# Bounds the API server's CEL cost estimate can afford for the RE2 rules below.
MAX_REGEX_LEN = 1024
MAX_EXAMPLE_LEN = 1024


class TimestampFormat(ApiModel):
    """How ``(?P<timestamp>...)`` captures are read."""

    layout: Annotated[str, StringConstraints(min_length=1, max_length=128)] = Field(
        description="Go time layout, e.g. 2006-01-02T15:04:05.999999999Z (RFC 3339) or 2006-01-02 15:04:05.999999. "
        "Without a timestamp capture the kubelet's RFC 3339 line prefix is used."
    )


class EventPattern(ApiModel):
    """A regex with named captures for one kind of log event."""

    regex: Annotated[str, StringConstraints(min_length=1, max_length=MAX_REGEX_LEN)] = Field(
        description="RE2 regex (Go regexp syntax, linear-time matching) with named groups (?P<name>...): "
        "globalStep, iteration, epoch, step, stepTiming, loss, tflops, elapsedTime, saveDuration, path, "
        "timestamp, size, algBW, busBW, transport. Lookaround and backreferences are refused."
    )
    example: Annotated[str, StringConstraints(max_length=MAX_EXAMPLE_LEN)] | None = Field(
        None, description="A log line the regex must match (checked when loading)."
    )
    units: Annotated[dict[str, Literal["s", "ms", "us"]], Field(max_length=8)] | None = Field(
        None, description="Unit of duration captures (stepTiming, elapsedTime, saveDuration): s (default), ms or us."
    )

    @classmethod
    def cel_rules(cls) -> list[dict[str, str]]:
        # The API server's CEL ``matches`` is Go's RE2: a regex RE2 cannot compile makes
        # both sides an evaluation error, so the object is refused at admission.
        return [
            {"rule": "''.matches(self.regex) || !''.matches(self.regex)",
             "message": "regex must be valid RE2 (Go regexp) syntax: no lookaround, no backreferences",
             "fieldPath": ".regex"},
            {"rule": "!has(self.example) || self.example.matches(self.regex)",
             "message": "example does not match regex", "fieldPath": ".example"},
        ]

    @model_validator(mode="after")
    def _compiles(self) -> "EventPattern":
        try:
            compiled = compile_user_regex(self.regex)
        except UserRegexError as err:
            raise FieldProblem("regex", str(err)) from None
        if self.example is not None and not compiled.search(self.example):
            raise FieldProblem("example", "example does not match regex")
        return self


class LogPatterns(ApiModel):
    """One optional pattern per event kind."""

    training_step: EventPattern | None = None
    checkpoint_save: EventPattern | None = None
    checkpoint_done: EventPattern | None = None
    checkpoint_restore: EventPattern | None = None
    checkpoint_loaded: EventPattern | None = None
    application_start: EventPattern | None = None
    warmup_step: EventPattern | None = None
    bandwidth_result: EventPattern | None = None
    network_transport: EventPattern | None = None


class WorkerStrategy(ApiModel):
    """Which pods' logs to read."""

    type: Literal["Single", "Multi"] = Field(description="Single: one pod. Multi: lifecycle and steps from chosen pods.")
    lifecycle_pod: Literal["first", "last"] = "first"
    training_step_pod: Literal["first", "last"] = "first"
    replicated_job_name: Annotated[str, StringConstraints(min_length=1, max_length=63)] = Field(
        "trainer", description="Replicated job whose pods are read (launcher for MPI, node for loopback)."
    )


class LogProfileSpec(ApiModel):
    """Patterns and reading strategy for one log format."""

    timestamp: TimestampFormat
    patterns: LogPatterns = Field(default_factory=LogPatterns)
    worker_strategy: WorkerStrategy | None = None
    container_name: Annotated[str, StringConstraints(max_length=63)] | None = Field(
        None, description="Container to read; auto-detected when empty."
    )
    warmup_steps: Annotated[int, Field(ge=0)] | None = Field(None, description="Steps excluded from averages.")
    log_interval: Annotated[int, Field(ge=1)] | None = Field(
        None, description="Only steps that are multiples of this are used."
    )


class LogProfile(KubeObject):
    """How to parse a workload's logs into measurements."""

    kind: Literal["LogProfile"] = "LogProfile"
    spec: LogProfileSpec

    crd = CrdInfo(
        plural="logprofiles",
        singular="logprofile",
        short_names=("lp",),
        scope="Cluster",
        has_status=False,
        columns=(
            PrinterColumn("Workers", ".spec.workerStrategy.type"),
            PrinterColumn("Replicated-Job", ".spec.workerStrategy.replicatedJobName", priority=1),
            AGE,
        ),
    )
