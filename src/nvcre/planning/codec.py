"""Compact text encodings for planner state that lives in a Kubernetes status.

A diagnose state at 4096 nodes must stay a few tens of kilobytes, so node sets are
written as index ranges (``"0-17,40,42-43"``) over a fixed node order, and long
lists (names, per-node flags) as zlib-compressed base64.
"""

from __future__ import annotations

import base64
import json
import zlib
from collections.abc import Iterable


def ranges(indices: Iterable[int]) -> str:
    """``[0,1,2,5,7,8]`` -> ``"0-2,5,7-8"`` (input need not be sorted; duplicates dropped)."""
    items = sorted(set(indices))
    parts: list[str] = []
    i = 0
    while i < len(items):
        j = i
        while j + 1 < len(items) and items[j + 1] == items[j] + 1:
            j += 1
        parts.append(str(items[i]) if i == j else f"{items[i]}-{items[j]}")
        i = j + 1
    return ",".join(parts)


def unranges(text: str) -> list[int]:
    """Inverse of :func:`ranges`, sorted ascending."""
    out: list[int] = []
    if not text:
        return out
    for part in text.split(","):
        if "-" in part:
            lo, hi = part.split("-", 1)
            out.extend(range(int(lo), int(hi) + 1))
        else:
            out.append(int(part))
    return out


def seq(indices: list[int]) -> str | list[int]:
    """An ordered node list, losslessly: ranges when ascending without repeats, else the list.

    Planning reads member order (splits, pairs), so a round trip must keep it.
    """
    items = list(indices)
    if all(a < b for a, b in zip(items, items[1:])):
        return ranges(items)
    return items


def unseq(value: str | list[int]) -> list[int]:
    """Inverse of :func:`seq`."""
    return unranges(value) if isinstance(value, str) else [int(i) for i in value]


def pack(value) -> str:
    """Any JSON value -> compressed base64 text."""
    raw = json.dumps(value, separators=(",", ":")).encode()
    return base64.b64encode(zlib.compress(raw, 9)).decode("ascii")


def unpack(text: str):
    return json.loads(zlib.decompress(base64.b64decode(text)).decode())
