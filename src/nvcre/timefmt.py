"""Times and durations as Kubernetes writes them: the one parser of each for the project.

``parse_datetime`` / ``parse_time`` read RFC 3339 (``2026-11-30T07:00:00Z``, with or
without fractions or an offset) as an aware datetime / epoch seconds, None when
absent or malformed; ``parse_duration`` reads Go-style durations (``1h30m``, ``90s``,
``500ms``, a bare number is seconds) leniently, with a default for absent or
malformed text (the strict spec check is ``nvcre.api.common.parse_duration``).
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

_UNITS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}


def parse_datetime(value: Any) -> datetime | None:
    if not value:
        return None
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=timezone.utc)
    try:
        parsed = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)


def parse_time(value: Any) -> float | None:
    parsed = parse_datetime(value)
    return parsed.timestamp() if parsed is not None else None


def format_time(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_duration(text: Any, default: float | None = None) -> float | None:
    """``1h30m``, ``15m``, ``90s``, ``500ms`` -> seconds; absent or unparseable -> default."""
    if not text:
        return default
    total, number, i, text = 0.0, "", 0, str(text).strip()
    while i < len(text):
        ch = text[i]
        if ch.isdigit() or ch == ".":
            number += ch
            i += 1
            continue
        unit = "ms" if text[i : i + 2] == "ms" else ch
        if unit not in _UNITS or not number:
            return default
        try:
            total += float(number) * _UNITS[unit]
        except ValueError:
            return default
        number = ""
        i += len(unit)
    if number:  # a bare number is seconds
        try:
            total += float(number)
        except ValueError:
            return default
    return total
