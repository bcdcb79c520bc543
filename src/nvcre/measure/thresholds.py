"""CEL thresholds: the registry of metric keys and the compile check.

A threshold maps a metric key to a CEL expression over one double variable,
``value``, that must return a bool (``value >= 900``). This module is the single
place that knows the valid keys and how an expression is compiled, so the API
validation, the renderer and the Job's judgement cannot disagree.
"""

from __future__ import annotations

from dataclasses import dataclass

import cel

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
    try:
        program = cel.compile(expression)
    except Exception as err:  # the CEL library raises its own error types
        return ThresholdProblem(
            key, "InvalidThresholdExpression", f"CEL expression {expression!r} does not compile: {_first_line(err)}"
        )
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
