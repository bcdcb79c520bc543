"""Measured values for threshold keys, read from measurement statuses.

The judging itself is ``nvcre.measure.thresholds.evaluate_thresholds`` (one place for
the rules and messages); this module only turns BandwidthMeasurement and
GoodputMeasurement statuses into the ``{key: value}`` map it judges.
"""

from __future__ import annotations


def _num(value, *, positive: bool = False) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return None if positive and number <= 0 else number


def bandwidth_values(results: list[dict] | None) -> dict[str, float | None]:
    """busBandwidthGBps / algBandwidthGBps: the highest per-size averages."""

    def best(field: str) -> float | None:
        values = [v for row in results or [] if (v := _num(row.get(field))) is not None]
        return max(values) if values else None

    return {"busBandwidthGBps": best("busBW"), "algBandwidthGBps": best("algBW")}


def goodput_values(status: dict | None) -> dict[str, float | None]:
    status = status or {}
    return {
        "goodputRatio": _num(status.get("result"), positive=True),
        "avgTFLOPsPerGPU": _num(status.get("avgTFLOPSPerGPU")),
        "avgStepTimeSec": _num(status.get("avgStepTimeSec")),
    }
