"""Display forms shared by every renderer: sizes, durations, bandwidths.

They live apart from the renderers so text, Markdown, HTML and JSON show the same
strings for the same numbers.
"""

from __future__ import annotations

import math
import re

# Message sizes print the way the measurement package prints them ("16 GB", 1024-based).
from nvcre.measure.nccl import format_size as human_size  # noqa: F401
from nvcre.words import count  # noqa: F401  (re-exported for the renderers)


def human_duration(seconds: float) -> str:
    """"42s" under a minute, "5m 30s" under an hour, "2h 5m" beyond."""
    total = int(max(0.0, seconds))
    if total < 60:
        return f"{total}s"
    if total < 3600:
        return f"{total // 60}m {total % 60}s"
    return f"{total // 3600}h {(total % 3600) // 60}m"


def gbps_text(value: str | float | None) -> str | None:
    """A bandwidth as "473.44 GB/s"; a measured string keeps the precision it was read with."""
    if value is None:
        return None
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return None
        if text.endswith("GB/s"):
            return text
        return f"{text} GB/s"
    return f"{value:.2f} GB/s"


def to_float(value: object) -> float | None:
    """A number from a status field that may hold it as a string ("932.09")."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    text = str(value).strip().removesuffix("GB/s").strip()
    try:
        number = float(text)
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def truncate(text: str, width: int) -> str:
    """Cut ``text`` to ``width`` characters, marking the cut with "..."."""
    if len(text) <= width:
        return text
    if width <= 3:
        return text[:width]
    return text[: width - 3] + "..."


HEADLINE_MIN_BYTES = 1 << 20
HEADLINE_ROWS = 8


def headline_rows(rows: list, limit: int = HEADLINE_ROWS) -> list:
    """The sizes a person reads: 1 MB and up (below, latency dominates), the largest ``limit``.

    The JSON report keeps every size; text, Markdown and the HTML table show these.
    """
    big = [r for r in rows if r.size_bytes >= HEADLINE_MIN_BYTES] or list(rows)
    return big[-limit:]


_ONE_PLURAL = re.compile(r"\b1 (group|iteration|node|job|pod)s\b")


def singular_ones(text: str) -> str:
    """A controller message read aloud: "across 1 iterations" -> "across 1 iteration".
    The conditions keep the reference's words; the report a person reads corrects them."""
    return _ONE_PLURAL.sub(lambda m: f"1 {m.group(1)}", text)
