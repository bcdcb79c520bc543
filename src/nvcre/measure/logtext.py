"""Small helpers shared by the log parsers: Kubernetes timestamp prefixes and times.

Pod logs are read with timestamps, so every line may start with the kubelet's
RFC3339Nano stamp (``2026-08-06T14:10:20.194667376-07:00 <content>``). The
parsers strip it before matching tool output and keep it as a fallback time.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

# A kubelet prefix: RFC3339 with optional fraction and a zone (Z or +hh:mm), then one space.
_K8S_PREFIX = re.compile(
    r"^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2}))\s"
)
# A permissive timestamp: date, 'T' or space, time, optional fraction and zone.
_TIMESTAMP = re.compile(
    r"^\s*(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2}):(\d{2})(?:[.,](\d+))?\s*(?:(Z|[+-]\d{2}:?\d{2})\s*)?$"
)


def split_k8s_prefix(line: str) -> tuple[str | None, str]:
    """Return (timestamp text or None, the line without the kubelet prefix).

    Only a well-formed prefix followed by a space is removed; anything else is
    left untouched, so raw tool output and kubelet output can be mixed.
    """
    if len(line) > 20 and line[4] == "-" and line[10] == "T":
        match = _K8S_PREFIX.match(line)
        if match:
            return match.group(1), line[match.end():]
    return None, line


def strip_k8s_prefix(line: str) -> str:
    """The line without its kubelet timestamp prefix (if any)."""
    return split_k8s_prefix(line)[1]


def parse_timestamp(text: str | None) -> datetime | None:
    """Parse an RFC3339 or ``YYYY-MM-DD HH:MM:SS[.ffffff]`` time; naive times are UTC.

    Fractions longer than microseconds are truncated (Python's resolution). Returns
    None for anything that is not such a time, so a garbled stamp never raises.
    """
    if not text:
        return None
    match = _TIMESTAMP.match(text)
    if not match:
        return None
    year, month, day, hour, minute, second, frac, zone = match.groups()
    micros = int((frac or "0")[:6].ljust(6, "0"))
    tz = timezone.utc
    try:
        if zone and zone != "Z":
            sign = -1 if zone[0] == "-" else 1
            digits = zone[1:].replace(":", "")
            hours, minutes = int(digits[:2]), int(digits[2:4])
            if minutes > 59:
                return None
            # timezone() refuses offsets of a day or more (ValueError below).
            tz = timezone(sign * timedelta(hours=hours, minutes=minutes))
        stamp = datetime(int(year), int(month), int(day), int(hour), int(minute), int(second), micros, tzinfo=tz)
        # A stamp at the calendar's edge with an offset cannot be shown in UTC (year 0 or
        # 10000): not a time a log line can carry, so it is no stamp at all.
        stamp.astimezone(timezone.utc)
    except (ValueError, OverflowError):
        return None
    return stamp


def format_timestamp(value: datetime | None) -> str | None:
    """RFC3339 in UTC with trailing zeros of the fraction dropped (``...:05Z``, ``...:52.889599Z``)."""
    if value is None:
        return None
    utc = value.astimezone(timezone.utc)
    text = utc.strftime("%Y-%m-%dT%H:%M:%S")
    if utc.microsecond:
        text += ("." + f"{utc.microsecond:06d}").rstrip("0")
    return text + "Z"


# --- bounded log reading ---------------------------------------------------------------------
# A pod may print without limit; the controller reads at most the first LOG_HEAD_BYTES
# and, when the log is longer, its last LOG_TAIL_LINES lines (at most LOG_TAIL_BYTES),
# with one marker line between them. Every parser also cuts a line at MAX_LINE_CHARS.
LOG_HEAD_BYTES = 8 * 1024 * 1024
LOG_TAIL_BYTES = 2 * 1024 * 1024
LOG_TAIL_LINES = 5000
MAX_LINE_CHARS = 8192
TRUNCATION_MARKER = "[nvcre: log cut here: read the first {head} bytes and the last {tail} lines]"


def join_head_tail(head: str, tail: str | None) -> str:
    """The head of a long log, the marker line, then its tail (overlap not removed)."""
    if not tail:
        return head
    cut = head.rfind("\n")
    head = head[: cut + 1] if cut >= 0 else head + "\n"
    marker = TRUNCATION_MARKER.format(head=LOG_HEAD_BYTES, tail=LOG_TAIL_LINES)
    return head + marker + "\n" + tail


def bounded_log(text: str | None) -> str | None:
    """A log text cut to the same head and tail the API read takes (for callers given text)."""
    if text is None or len(text) <= LOG_HEAD_BYTES + LOG_TAIL_BYTES:
        return text
    tail = text[-LOG_TAIL_BYTES:]
    newline = tail.find("\n")
    tail = tail[newline + 1:] if 0 <= newline < len(tail) - 1 else tail
    return join_head_tail(text[:LOG_HEAD_BYTES], tail)
