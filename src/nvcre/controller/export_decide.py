"""What a ReportExport should do next: a pure decision over typed inputs.

The reconciler gathers the export, its source Certification and its policy, calls
:func:`decide` and applies the result; delivery outcomes come back through
:func:`after_attempt`. Nothing here reads the clock or the network, so every branch
(retries, backoff, Retry-After, cancel, retryNonce, retention, suspend, a source
deleted before it finished) is tested from tables.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from nvcre.api.common import parse_duration

# Phases (the reference's names).
WAITING = "WaitingForResult"
SNAPSHOT_READY = "SnapshotReady"
RETRYING = "Retrying"
DELIVERED = "Delivered"
FAILED = "Failed"
CANCELLED = "Cancelled"
SKIPPED = "Skipped"
FINISHED = (DELIVERED, FAILED, CANCELLED, SKIPPED)

#: HTTP statuses worth another attempt: timeouts, rate limits and server errors.
RETRIABLE_STATUS = frozenset({408, 425, 429}) | frozenset(range(500, 600))
#: How long a snapshot that cannot be built is retried before the export fails.
SNAPSHOT_GIVE_UP_SECONDS = 300.0


class Action(str, Enum):
    WAIT = "wait"  # nothing to do until the source or the clock moves
    SNAPSHOT = "snapshot"  # build and store the report snapshot
    DELIVER = "deliver"  # POST the stored snapshot now
    DELETE = "delete"  # retention ran out
    STATUS = "status"  # only the status changes


@dataclass(frozen=True)
class Source:
    """The source Certification as the reconciler found it."""

    exists: bool
    uid_matches: bool = True
    terminal: bool = False
    result: str | None = None  # PASSED | FAILED | INCOMPLETE | NOT JUDGED


@dataclass(frozen=True)
class Settings:
    """The export's frozen retry and retention settings, in seconds."""

    initial_backoff: float = 10.0
    max_backoff: float = 900.0
    max_attempts: int = 100
    max_elapsed: float = 86400.0
    keep_succeeded: float = 168 * 3600.0
    keep_failed: float = 720 * 3600.0

    @classmethod
    def from_spec(cls, spec: dict) -> Settings:
        retry, keep = spec.get("retry") or {}, spec.get("retention") or {}
        return cls(
            initial_backoff=parse_duration(retry.get("initialBackoff", "10s")),
            max_backoff=parse_duration(retry.get("maxBackoff", "15m")),
            max_attempts=int(retry.get("maxAttempts", 100)),
            max_elapsed=parse_duration(retry.get("maxElapsedTime", "24h")),
            keep_succeeded=parse_duration(keep.get("succeeded", "168h")),
            keep_failed=parse_duration(keep.get("failed", "720h")),
        )


@dataclass
class Decision:
    action: Action
    status: dict = field(default_factory=dict)  # fields to set on the status (None deletes)
    requeue: float | None = None  # seconds until the next look, None: only on events
    event: tuple[str, str, str] | None = None  # (type, reason, message) on a phase change


def backoff(settings: Settings, cycle_attempts: int, retry_after: float | None = None) -> float:
    """Seconds before the next attempt: doubling from initialBackoff, capped at maxBackoff;
    a server's Retry-After is honoured up to the cap."""
    delay = settings.initial_backoff * (2 ** max(0, cycle_attempts - 1))
    if retry_after is not None and retry_after > 0:
        delay = max(delay, retry_after)
    return min(delay, settings.max_backoff)


def decide(spec: dict, status: dict, source: Source, *, now: float, suspended: bool,
           parse_time, format_time) -> Decision:
    """The next step for one export. ``parse_time``/``format_time`` convert RFC 3339."""
    settings = Settings.from_spec(spec)
    phase = status.get("phase")
    nonce = spec.get("retryNonce")

    if phase in FINISHED:
        if phase == FAILED and nonce and nonce != status.get("observedRetryNonce") and status.get("snapshotRef"):
            return Decision(Action.DELIVER, {
                "phase": RETRYING, "reason": "RetryRequested", "message": "retryNonce changed: a new delivery cycle",
                "observedRetryNonce": nonce, "cycleAttempts": 0, "cycleStartedAt": format_time(now),
                "nextAttemptTime": None, "completionTime": None,
            }, event=("Normal", "RetryRequested", "retryNonce changed: delivering again"))
        done = parse_time(status.get("completionTime")) or now
        keep = settings.keep_succeeded if phase == DELIVERED else settings.keep_failed
        if now >= done + keep:
            return Decision(Action.DELETE)
        return Decision(Action.WAIT, requeue=done + keep - now)

    if spec.get("cancel"):
        return Decision(Action.STATUS, {"phase": CANCELLED, "reason": "Cancelled", "message": "spec.cancel is true",
                                        "completionTime": format_time(now), "nextAttemptTime": None},
                        event=("Normal", "ExportCancelled", "delivery cancelled by spec.cancel"))

    if not status.get("snapshotRef"):
        return _before_snapshot(status, source, now=now, format_time=format_time, parse_time=parse_time)

    if suspended:
        return Decision(Action.STATUS, {"reason": "PolicySuspended", "message": "the policy is suspended; delivery waits"}
                        if status.get("reason") != "PolicySuspended" else {}, requeue=None)

    cycle_start = parse_time(status.get("cycleStartedAt")) or now
    if now - cycle_start >= settings.max_elapsed:
        return give_up(now, format_time, "MaxElapsedTimeExceeded",
                        f"no successful delivery within maxElapsedTime ({int(settings.max_elapsed)}s)")
    due = parse_time(status.get("nextAttemptTime"))
    if due is not None and due > now:
        return Decision(Action.WAIT, requeue=due - now)
    return Decision(Action.DELIVER)


def _before_snapshot(status: dict, source: Source, *, now: float, format_time, parse_time) -> Decision:
    if not source.exists or not source.uid_matches:
        return Decision(Action.STATUS, {
            "phase": SKIPPED, "reason": "SourceDeletedBeforeCompletion",
            "message": "the Certification was deleted before it finished", "completionTime": format_time(now),
        }, event=("Warning", "SourceDeletedBeforeCompletion", "the Certification was deleted before it finished"))
    if not source.terminal:
        return Decision(Action.STATUS if status.get("phase") != WAITING else Action.WAIT,
                        {"phase": WAITING, "reason": "WaitingForResult", "message": "the Certification is still running"}
                        if status.get("phase") != WAITING else {})
    started = parse_time(status.get("snapshotStartedAt"))
    if started is not None and now - started >= SNAPSHOT_GIVE_UP_SECONDS:
        return give_up(now, format_time, "SnapshotBuildFailed",
                        f"the report snapshot could not be built within {int(SNAPSHOT_GIVE_UP_SECONDS)}s: "
                        f"{status.get('message') or 'unknown error'}")
    return Decision(Action.SNAPSHOT, {"snapshotStartedAt": status.get("snapshotStartedAt") or format_time(now),
                                      "result": source.result})


def give_up(now: float, format_time, reason: str, message: str) -> Decision:
    """The export ends Failed with this reason."""
    return Decision(Action.STATUS, {"phase": FAILED, "reason": reason, "message": message[:1024],
                                    "completionTime": format_time(now), "nextAttemptTime": None},
                    event=("Warning", reason, message[:1024]))


@dataclass(frozen=True)
class Outcome:
    """One POST's result: an HTTP status, or a transport error (status None)."""

    http_status: int | None
    error: str | None = None
    retry_after: float | None = None


def after_attempt(spec: dict, status: dict, outcome: Outcome, *, now: float, format_time, parse_time) -> Decision:
    """The status after one delivery attempt."""
    settings = Settings.from_spec(spec)
    attempts = int(status.get("attempts") or 0) + 1
    cycle = int(status.get("cycleAttempts") or 0) + 1
    base = {"attempts": attempts, "cycleAttempts": cycle, "lastAttemptTime": format_time(now),
            "firstAttemptTime": status.get("firstAttemptTime") or format_time(now),
            "lastHTTPStatus": outcome.http_status}
    code = outcome.http_status
    if code is not None and 200 <= code < 300:
        return Decision(Action.STATUS, {**base, "phase": DELIVERED, "reason": "Delivered",
                                        "message": f"delivered (HTTP {code}) after {attempts} attempt{'s' if attempts != 1 else ''}",
                                        "completionTime": format_time(now), "nextAttemptTime": None},
                        event=("Normal", "ReportDelivered", f"report delivered (HTTP {code})"))
    what = f"HTTP {code}" if code is not None else (outcome.error or "transport error")
    if code is not None and code not in RETRIABLE_STATUS:
        rejected = give_up(now, format_time, "DeliveryRejected",
                            f"the receiver answered {what}; not retried (set a new spec.retryNonce to try again)")
        return Decision(Action.STATUS, {**base, **rejected.status}, event=rejected.event)
    if cycle >= settings.max_attempts:
        failed = give_up(now, format_time, "MaxAttemptsExceeded",
                          f"{cycle} attempts failed; the last: {what}")
        return Decision(Action.STATUS, {**base, **failed.status}, event=failed.event)
    delay = backoff(settings, cycle, outcome.retry_after)
    cycle_start = parse_time(status.get("cycleStartedAt")) or now
    if now + delay - cycle_start > settings.max_elapsed:
        failed = give_up(now, format_time, "MaxElapsedTimeExceeded",
                          f"the next attempt would pass maxElapsedTime; the last: {what}")
        return Decision(Action.STATUS, {**base, **failed.status}, event=failed.event)
    return Decision(Action.STATUS, {**base, "phase": RETRYING, "reason": "DeliveryFailed",
                                    "message": f"attempt {attempts} failed: {what}; next in {int(delay)}s"[:1024],
                                    "nextAttemptTime": format_time(now + delay)},
                    requeue=delay,
                    event=("Warning", "DeliveryFailed", f"attempt {attempts} failed: {what}"[:1024]) if status.get("phase") != RETRYING else None)
