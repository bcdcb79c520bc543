"""Per-pair lines of the pairwise bandwidth check (``nvcre.workloads.pairwise``).

A line ``# nvcre-pair <host a> <host b> busbw=<GB/s or -> rc=<exit code>`` is one pair's
result: its peak bus bandwidth, or None when its run failed (no figure: crash
evidence, never a slow measurement). Anything else in the log is left to the nccl-tests
parser (the slowest pair's own output follows the pair lines).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from nvcre.measure.logtext import split_k8s_prefix

_PAIR = re.compile(r"^#\s*nvcre-pair\s+(\S{1,253})\s+(\S{1,253})\s+busbw=(\S{1,32})\s+rc=(-?\d{1,4})\s*$")
MAX_PAIRS = 1 << 20  # a log never holds more (4096 hosts: 8 million pairs; a check runs on suspects)


@dataclass(frozen=True)
class PairResult:
    a: str
    b: str
    busbw: float | None  # peak bus bandwidth, GB/s; None: the pair's run failed
    rc: int


def parse_pair_lines(text: str) -> list[PairResult]:
    """Every pair line of ``text``, in log order; other lines are skipped. A figure that is not
    a positive finite number, or a pair that exited non-zero, carries no figure."""
    out: list[PairResult] = []
    for raw in text.splitlines():
        if "nvcre-pair " not in raw:
            continue
        match = _PAIR.match(split_k8s_prefix(raw.rstrip("\r\n"))[1].strip())
        if not match:
            continue
        a, b, figure, rc = match.groups()
        value: float | None
        try:
            value = float(figure)
        except ValueError:
            value = None
        if value is not None and (not math.isfinite(value) or value <= 0 or int(rc) != 0):
            value = None
        out.append(PairResult(a, b, value, int(rc)))
        if len(out) >= MAX_PAIRS:
            break
    return out
