"""CEL thresholds: the registry of metric keys and the compile check.

A threshold maps a metric key to a CEL expression over one double variable,
``value``, that must return a bool (``value >= 900``). This module is the single
place that knows the valid keys and how an expression is compiled, so the API
validation, the renderer and the Job's judgement cannot disagree.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import lru_cache

import cel

from nvcre.measure.celcost import SCALAR, RuntimeBudget, check_cost

# Compile-time bounds (see nvcre.measure.celcost): the library cannot interrupt an
# evaluation, so an expression is only ever run after its estimated cost fits.
MAX_THRESHOLD_LEN = 1024
THRESHOLD_COST_LIMIT = 100_000
# Runtime budget of one judgement (all of a Job's thresholds): a threshold over one number
# takes microseconds, so anything near this is the estimate being wrong. Entries left when
# it is spent are not run, and an expression that alone ran over it is never run again in
# this process (the controller re-judges on every reconcile; one stall must not repeat).
THRESHOLD_BUDGET_S = 0.5
_OVER_BUDGET: dict[str, float] = {}  # expression -> seconds its one evaluation took
_OVER_BUDGET_MAX = 1024

# Metric key -> (unit, where the measured value comes from).
THRESHOLD_KEYS: dict[str, tuple[str, str]] = {
    "busBandwidthGBps": ("GB/s", "BandwidthMeasurement: highest bus bandwidth over message sizes"),
    "algBandwidthGBps": ("GB/s", "BandwidthMeasurement: highest algorithm bandwidth over message sizes"),
    "goodputRatio": ("ratio 0-1", "GoodputMeasurement: goodput result"),
    "avgTFLOPsPerGPU": ("TFLOP/s", "GoodputMeasurement: mean TFLOP/s per GPU"),
    "avgStepTimeSec": ("s", "GoodputMeasurement: mean step time after warmup"),
}


def valid_keys_text() -> str:
    """The valid keys, sorted, as a user reads them in an error message."""
    return ", ".join(sorted(THRESHOLD_KEYS))


@dataclass(frozen=True)
class ThresholdProblem:
    """Why one threshold entry cannot be used."""

    key: str
    reason: str  # UnknownThresholdKey | InvalidThresholdExpression
    message: str


def check_threshold(key: str, expression: str) -> ThresholdProblem | None:
    """Return the problem with one ``key: expression`` entry, or None when usable.

    The expression must compile and, evaluated at a probe value, return a bool.
    """
    if key not in THRESHOLD_KEYS:
        return ThresholdProblem(
            key, "UnknownThresholdKey", f"unknown threshold key {key!r}; valid keys: {valid_keys_text()}"
        )
    if not isinstance(expression, str) or not expression.strip():
        return ThresholdProblem(key, "InvalidThresholdExpression", "the expression is empty; write e.g. 'value >= 900'")
    if len(expression) > MAX_THRESHOLD_LEN:
        return ThresholdProblem(key, "InvalidThresholdExpression",
                                f"the expression is longer than {MAX_THRESHOLD_LEN} characters")
    try:
        program = _compiled(expression)
    except Exception as err:  # the CEL library raises its own error types
        return ThresholdProblem(
            key, "InvalidThresholdExpression", f"CEL expression {expression!r} does not compile: {_first_line(err)}"
        )
    cost = check_cost(expression, THRESHOLD_COST_LIMIT, {"value": SCALAR})
    if cost is not None:
        return ThresholdProblem(key, "InvalidThresholdExpression", f"CEL expression refused: {cost}")
    try:
        probe = program.execute({"value": 1.0})
    except Exception as err:
        return ThresholdProblem(
            key, "InvalidThresholdExpression", f"CEL expression {expression!r} cannot be evaluated over 'value': {_first_line(err)}"
        )
    if not isinstance(probe, bool):
        return ThresholdProblem(
            key, "InvalidThresholdExpression", f"CEL expression {expression!r} must return a bool, got {type(probe).__name__}"
        )
    return None


def _first_line(err: Exception) -> str:
    text = str(err).strip() or type(err).__name__
    return text.splitlines()[0]


# --- judging measured values -----------------------------------------------------------

DEFAULT_MEASUREMENT_TIMEOUT_S = 300.0


@dataclass(frozen=True)
class ThresholdEvaluation:
    """The verdict on one ``key: expression`` entry."""

    metric: str
    expression: str
    measured_value: float | None
    passed: bool
    reason: str  # ThresholdMet | ThresholdViolated | MeasurementUnavailable | InvalidThresholdExpression
    message: str

    def to_dict(self) -> dict:
        return {
            "metric": self.metric,
            "expression": self.expression,
            "measuredValue": self.measured_value,
            "passed": self.passed,
            "reason": self.reason,
            "message": self.message,
        }


@dataclass(frozen=True)
class ThresholdDecision:
    """The verdict on a whole threshold map, shaped like the Job's ValidationFailed condition.

    ``failed`` is the condition's status (True = ValidationFailed). ``pending`` is True
    only for MeasurementUnavailable: the caller waits for the measurement and asks
    again, passing ``timed_out=True`` once its measurement timeout has passed.
    """

    failed: bool
    pending: bool
    reason: str
    message: str
    evaluations: tuple[ThresholdEvaluation, ...] = ()
    missing: tuple[str, ...] = ()
    unknown: tuple[str, ...] = ()
    version: int = 1

    def to_dict(self) -> dict:
        """The evidence annotation body (camelCase, like the rest of the API)."""
        return {
            "version": self.version,
            "failed": self.failed,
            "reason": self.reason,
            "message": self.message,
            "evaluations": [e.to_dict() for e in self.evaluations],
        }


def _format_go_duration(seconds: float) -> str:
    """300 -> '5m0s', 90 -> '1m30s', 3700 -> '1h1m40s' (how the reference prints timeouts)."""
    total = int(round(seconds))
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes}m{secs}s"
    if minutes:
        return f"{minutes}m{secs}s"
    return f"{secs}s"


def _usable(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def _over_budget(key: str, expression: str, value: float, message: str) -> ThresholdEvaluation:
    return ThresholdEvaluation(key, expression, value, False, "InvalidThresholdExpression",
                               f"Threshold {key!r}: expression {expression!r} {message}; simplify it")


def _evaluate_one(key: str, expression: str, value: float, budget: RuntimeBudget) -> ThresholdEvaluation:
    problem = check_threshold(key, expression)
    if problem is not None:
        return ThresholdEvaluation(
            key, str(expression), value, False, problem.reason, f'Threshold "{key}": {problem.message}'
        )
    if expression in _OVER_BUDGET:
        return _over_budget(key, expression, value, f"took {_OVER_BUDGET[expression]:.2f} s once, over the runtime "
                            f"budget of {budget.limit_s:g} s per judgement, and is not run again")
    if budget.exhausted:
        return _over_budget(key, expression, value, f"was not evaluated: this judgement spent its runtime budget "
                            f"of {budget.limit_s:g} s on the thresholds before it")
    try:
        verdict = budget.spend(lambda: _compiled(expression).execute({"value": value}))
    except Exception as err:  # a runtime type error in the user's expression
        return ThresholdEvaluation(
            key, expression, value, False, "InvalidThresholdExpression",
            f"Threshold {key!r}: expression {expression!r} failed on measured {value:.4f}: {_first_line(err)}",
        )
    if budget.last_s > budget.limit_s:
        if len(_OVER_BUDGET) >= _OVER_BUDGET_MAX:
            _OVER_BUDGET.clear()
        _OVER_BUDGET[expression] = budget.last_s
        return _over_budget(key, expression, value, f"took {budget.last_s:.2f} s, over the runtime budget of "
                            f"{budget.limit_s:g} s per judgement (its result is not used)")
    if not isinstance(verdict, bool):
        return ThresholdEvaluation(
            key, expression, value, False, "InvalidThresholdExpression",
            f"Threshold {key!r}: expression {expression!r} must return a bool",
        )
    if verdict:
        return ThresholdEvaluation(
            key, expression, value, True, "ThresholdMet",
            f'Threshold "{key}" met: measured {value:.4f}, expression: {expression}',
        )
    return ThresholdEvaluation(
        key, expression, value, False, "ThresholdViolated",
        f'Threshold "{key}" violated: measured {value:.4f}, expression: {expression}',
    )


@lru_cache(maxsize=256)
def _compiled(expression: str):
    return cel.compile(expression)


def evaluate_thresholds(
    thresholds: dict[str, str] | None,
    metrics: dict[str, float | None],
    *,
    timed_out: bool = False,
    timeout_seconds: float = DEFAULT_MEASUREMENT_TIMEOUT_S,
    budget: RuntimeBudget | None = None,
) -> ThresholdDecision:
    """Judge measured ``metrics`` against ``thresholds``; never raises on user input.

    Order (as the reference judges): unknown keys fail at once; a missing value makes
    the decision pending (or ``MeasurementTimeout`` once ``timed_out``); then every
    entry is evaluated and the first failure in key order names the condition. All
    evaluations together spend at most ``budget`` (``THRESHOLD_BUDGET_S`` by default); an
    entry over it fails as ``InvalidThresholdExpression`` saying so.
    """
    thresholds = dict(thresholds or {})
    if not thresholds:
        return ThresholdDecision(False, False, "ThresholdsMet", "No performance thresholds configured")
    unknown = tuple(sorted(str(k) for k in thresholds if k not in THRESHOLD_KEYS))
    if unknown:
        return ThresholdDecision(
            True, False, "UnknownThresholdKey",
            f"unknown threshold key(s) [{', '.join(unknown)}]; valid keys: [{', '.join(THRESHOLD_KEYS)}]",
            unknown=unknown,
        )
    missing = tuple(sorted(k for k in thresholds if _usable(metrics.get(k)) is None))
    if missing:
        evaluations = tuple(
            ThresholdEvaluation(k, str(thresholds[k]), None, False, "MeasurementUnavailable",
                                f"no measured value for {k}")
            for k in missing
        )
        if timed_out:
            return ThresholdDecision(
                True, False, "MeasurementTimeout",
                f"Measurement data not available within {_format_go_duration(timeout_seconds)} "
                f"for keys: [{', '.join(missing)}]",
                evaluations=evaluations, missing=missing,
            )
        return ThresholdDecision(
            False, True, "MeasurementUnavailable",
            f"Waiting for measurement data for keys: [{', '.join(missing)}]",
            evaluations=evaluations, missing=missing,
        )
    budget = budget if budget is not None else RuntimeBudget(THRESHOLD_BUDGET_S)
    evaluations = tuple(
        _evaluate_one(key, str(thresholds[key]), _usable(metrics[key]), budget)  # type: ignore[arg-type]
        for key in sorted(thresholds)
    )
    failures = [e for e in evaluations if not e.passed]
    if failures:
        first = failures[0]
        return ThresholdDecision(True, False, first.reason, first.message, evaluations=evaluations)
    return ThresholdDecision(
        False, False, "ThresholdsMet", "All performance thresholds satisfied", evaluations=evaluations
    )


_LOWER_BOUND = re.compile(r"\bvalue\s*>=?\s*(-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)")
_LOWER_BOUND_REVERSED = re.compile(r"(-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)\s*<=?\s*value\b")


def threshold_minimum(expression: str | None) -> float | None:
    """The lower bound a threshold sets (for the report's LOW flag), or None if it sets none.

    ``"300"`` and ``"value >= 300"`` and ``"value > 300 && value < 900"`` give 300.0;
    an upper bound alone (``value <= 900``) gives None. With several lower bounds
    joined by ``&&`` the tightest (largest) wins.
    """
    if expression is None:
        return None
    text = str(expression).strip()
    try:
        return float(text)
    except ValueError:
        pass
    if "||" in text:
        return None  # a disjunction has no single minimum
    bounds = [float(m) for m in _LOWER_BOUND.findall(text)]
    bounds += [float(m) for m in _LOWER_BOUND_REVERSED.findall(text)]
    return max(bounds) if bounds else None
