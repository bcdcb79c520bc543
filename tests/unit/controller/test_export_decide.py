"""ReportExport decisions from tables: phases, retries, backoff, cancel, retryNonce, retention."""

from __future__ import annotations

import pytest

from nvcre.controller import export_decide as d
from nvcre.controller.context import format_time, parse_time

T0 = 1_800_000_000.0
SPEC = {"retry": {"initialBackoff": "10s", "maxBackoff": "1m", "maxAttempts": 5, "maxElapsedTime": "1h"},
        "retention": {"succeeded": "1h", "failed": "2h"}}
READY = {"phase": d.SNAPSHOT_READY, "snapshotRef": {"name": "x-report"}, "cycleStartedAt": format_time(T0)}


def decide(status, source=d.Source(exists=True, terminal=True, result="FAILED"), *, spec=SPEC, now=T0, suspended=False):
    return d.decide(spec, status, source, now=now, suspended=suspended, parse_time=parse_time, format_time=format_time)


def attempt(status, outcome, *, spec=SPEC, now=T0):
    return d.after_attempt(spec, status, outcome, now=now, format_time=format_time, parse_time=parse_time)


@pytest.mark.parametrize("source, action, phase", [
    (d.Source(exists=True, terminal=False), d.Action.STATUS, d.WAITING),
    (d.Source(exists=False), d.Action.STATUS, d.SKIPPED),
    (d.Source(exists=True, uid_matches=False), d.Action.STATUS, d.SKIPPED),
    (d.Source(exists=True, terminal=True, result="PASSED"), d.Action.SNAPSHOT, None),
])
def test_before_the_snapshot(source, action, phase):
    got = decide({}, source)
    assert got.action is action
    assert got.status.get("phase") == phase


def test_waiting_twice_writes_nothing():
    got = decide({"phase": d.WAITING}, d.Source(exists=True, terminal=False))
    assert got.action is d.Action.WAIT and got.status == {}


def test_a_snapshot_that_cannot_be_built_fails_after_five_minutes():
    status = {"snapshotStartedAt": format_time(T0)}
    assert decide(status, now=T0 + 299).action is d.Action.SNAPSHOT
    late = decide(status, now=T0 + 300)
    assert late.status["phase"] == d.FAILED and late.status["reason"] == "SnapshotBuildFailed"


def test_ready_delivers_now_and_waits_for_next_attempt_time():
    assert decide(READY).action is d.Action.DELIVER
    later = {**READY, "phase": d.RETRYING, "nextAttemptTime": format_time(T0 + 30)}
    got = decide(later)
    assert got.action is d.Action.WAIT and got.requeue == pytest.approx(30)
    assert decide(later, now=T0 + 30).action is d.Action.DELIVER


def test_suspended_policy_holds_delivery():
    got = decide(READY, suspended=True)
    assert got.action is d.Action.STATUS and got.status["reason"] == "PolicySuspended"
    assert decide({**READY, "reason": "PolicySuspended"}, suspended=True).status == {}


def test_cancel_stops_unless_delivered():
    got = decide(READY, spec={**SPEC, "cancel": True})
    assert got.status["phase"] == d.CANCELLED
    delivered = {**READY, "phase": d.DELIVERED, "completionTime": format_time(T0)}
    assert decide(delivered, spec={**SPEC, "cancel": True}).action is d.Action.WAIT


@pytest.mark.parametrize("code", [200, 201, 202, 204])
def test_2xx_is_delivered(code):
    got = attempt(READY, d.Outcome(code))
    assert got.status["phase"] == d.DELIVERED and got.status["attempts"] == 1 and got.status["lastHTTPStatus"] == code


@pytest.mark.parametrize("outcome", [d.Outcome(500), d.Outcome(503), d.Outcome(429), d.Outcome(408), d.Outcome(None, "refused")])
def test_retriable_answers_back_off(outcome):
    got = attempt(READY, outcome)
    assert got.status["phase"] == d.RETRYING and got.requeue == pytest.approx(10)
    assert got.status["nextAttemptTime"] == format_time(T0 + 10)


@pytest.mark.parametrize("code", [301, 400, 401, 403, 404, 413])
def test_other_answers_fail_without_retry(code):
    got = attempt(READY, d.Outcome(code))
    assert got.status["phase"] == d.FAILED and got.status["reason"] == "DeliveryRejected" and got.status["attempts"] == 1


def test_backoff_doubles_to_the_cap_and_honours_retry_after():
    settings = d.Settings.from_spec(SPEC)
    assert [d.backoff(settings, n) for n in range(1, 6)] == [10, 20, 40, 60, 60]
    assert d.backoff(settings, 1, retry_after=45) == 45
    assert d.backoff(settings, 1, retry_after=3600) == 60


def test_max_attempts_ends_the_cycle():
    status = {**READY, "cycleAttempts": 4, "attempts": 4}
    got = attempt(status, d.Outcome(503))
    assert got.status["phase"] == d.FAILED and got.status["reason"] == "MaxAttemptsExceeded" and got.status["attempts"] == 5


def test_max_elapsed_time_ends_the_cycle():
    got = decide({**READY, "phase": d.RETRYING}, now=T0 + 3600)
    assert got.status["phase"] == d.FAILED and got.status["reason"] == "MaxElapsedTimeExceeded"
    near = attempt(READY, d.Outcome(503), now=T0 + 3595)
    assert near.status["reason"] == "MaxElapsedTimeExceeded"


def test_retry_nonce_starts_a_new_cycle_only_once():
    failed = {**READY, "phase": d.FAILED, "completionTime": format_time(T0), "attempts": 5, "cycleAttempts": 5}
    got = decide(failed, spec={**SPEC, "retryNonce": "again"}, now=T0 + 10)
    assert got.action is d.Action.DELIVER
    assert got.status["cycleAttempts"] == 0 and got.status["observedRetryNonce"] == "again"
    assert got.status["cycleStartedAt"] == format_time(T0 + 10) and got.status["completionTime"] is None
    seen = {**failed, "observedRetryNonce": "again"}
    assert decide(seen, spec={**SPEC, "retryNonce": "again"}, now=T0 + 10).action is d.Action.WAIT


@pytest.mark.parametrize("phase, keep", [(d.DELIVERED, 3600), (d.FAILED, 7200), (d.CANCELLED, 7200), (d.SKIPPED, 7200)])
def test_retention(phase, keep):
    done = {"phase": phase, "completionTime": format_time(T0)}
    waiting = decide(done, now=T0 + keep - 1)
    assert waiting.action is d.Action.WAIT and waiting.requeue == pytest.approx(1)
    assert decide(done, now=T0 + keep).action is d.Action.DELETE
