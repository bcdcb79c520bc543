"""Threshold judging: order of checks, messages, and never raising on user input."""

from __future__ import annotations

import pytest

from nvcre.measure.thresholds import THRESHOLD_KEYS, check_threshold, evaluate_thresholds, threshold_minimum


def test_violation_message_matches_reference_shape():
    decision = evaluate_thresholds({"busBandwidthGBps": "value >= 400"}, {"busBandwidthGBps": 350.0})
    assert decision.failed and not decision.pending
    assert decision.reason == "ThresholdViolated"
    assert decision.message == 'Threshold "busBandwidthGBps" violated: measured 350.0000, expression: value >= 400'


def test_all_met():
    decision = evaluate_thresholds(
        {"busBandwidthGBps": "value >= 400", "algBandwidthGBps": "value >= 200 && value <= 900"},
        {"busBandwidthGBps": 450, "algBandwidthGBps": 250.5},
    )
    assert not decision.failed and decision.reason == "ThresholdsMet"
    assert decision.message == "All performance thresholds satisfied"
    assert [e.metric for e in decision.evaluations] == ["algBandwidthGBps", "busBandwidthGBps"]
    assert all(e.passed for e in decision.evaluations)


def test_unknown_keys_checked_first_even_with_missing_values():
    decision = evaluate_thresholds({"zeta": "value > 1", "alpha": "value > 1", "goodputRatio": "value > 0.9"}, {})
    assert decision.failed and decision.reason == "UnknownThresholdKey"
    assert decision.unknown == ("alpha", "zeta")
    assert decision.message.startswith("unknown threshold key(s) [alpha, zeta]; valid keys: [busBandwidthGBps, ")
    for key in THRESHOLD_KEYS:
        assert key in decision.message


def test_missing_value_is_pending_then_times_out():
    thresholds = {"goodputRatio": "value >= 0.9", "busBandwidthGBps": "value >= 1"}
    pending = evaluate_thresholds(thresholds, {"busBandwidthGBps": 2.0, "goodputRatio": None})
    assert pending.pending and not pending.failed and pending.reason == "MeasurementUnavailable"
    assert pending.missing == ("goodputRatio",)
    timed_out = evaluate_thresholds(thresholds, {"busBandwidthGBps": 2.0}, timed_out=True)
    assert timed_out.failed and timed_out.reason == "MeasurementTimeout"
    assert timed_out.message == "Measurement data not available within 5m0s for keys: [goodputRatio]"
    nan = evaluate_thresholds({"goodputRatio": "value > 0"}, {"goodputRatio": float("nan")})
    assert nan.pending


def test_first_failure_in_key_order_names_the_condition():
    decision = evaluate_thresholds(
        {"goodputRatio": "value >= 0.95", "avgStepTimeSec": "value <= 1.0", "busBandwidthGBps": "value >= 10"},
        {"goodputRatio": 0.88, "avgStepTimeSec": 2.5, "busBandwidthGBps": 20},
    )
    assert decision.reason == "ThresholdViolated"
    assert decision.message.startswith('Threshold "avgStepTimeSec" violated: measured 2.5000')
    failed = [e.metric for e in decision.evaluations if not e.passed]
    assert failed == ["avgStepTimeSec", "goodputRatio"]


@pytest.mark.parametrize("expression", ["value >=", "value + 1", "value >= 'a'", "", "   ", "foo > 1"])
def test_invalid_expression_is_a_reason_not_a_crash(expression):
    decision = evaluate_thresholds({"busBandwidthGBps": expression}, {"busBandwidthGBps": 10.0})
    assert decision.failed and decision.reason == "InvalidThresholdExpression"
    assert "busBandwidthGBps" in decision.message or expression.strip() == ""


def test_non_string_expression_and_empty_map():
    decision = evaluate_thresholds({"busBandwidthGBps": 400}, {"busBandwidthGBps": 10.0})
    assert decision.failed and decision.reason == "InvalidThresholdExpression"
    assert not evaluate_thresholds({}, {}).failed
    assert not evaluate_thresholds(None, {"busBandwidthGBps": 1}).failed


def test_decision_serializes_as_evidence():
    decision = evaluate_thresholds({"busBandwidthGBps": "value >= 400"}, {"busBandwidthGBps": 350})
    data = decision.to_dict()
    assert data["failed"] is True and data["reason"] == "ThresholdViolated"
    assert data["evaluations"] == [
        {
            "metric": "busBandwidthGBps",
            "expression": "value >= 400",
            "measuredValue": 350.0,
            "passed": False,
            "reason": "ThresholdViolated",
            "message": decision.message,
        }
    ]


@pytest.mark.parametrize(
    "expression,minimum",
    [
        ("300", 300.0),
        ("value >= 300", 300.0),
        ("value > 300", 300.0),
        ("value >= 300 && value <= 1200", 300.0),
        ("300 <= value", 300.0),
        ("value >= 1.5e2", 150.0),
        ("value <= 900", None),
        ("value >= 1 || value < 0", None),
        (None, None),
        ("value > 100 && value >= 250", 250.0),
    ],
)
def test_threshold_minimum(expression, minimum):
    assert threshold_minimum(expression) == minimum


def test_check_threshold_still_works():
    assert check_threshold("busBandwidthGBps", "value >= 1") is None
    assert check_threshold("nope", "value >= 1").reason == "UnknownThresholdKey"
