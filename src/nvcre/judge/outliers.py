"""Fleet-relative outliers: a group far below the groups of its own shape.

Needs no threshold and no baseline, so hardware nobody published figures for is still
judged against itself. Groups are compared only with groups of the same shape (nodes per
job, GPUs per node, scope), against the *median* of that shape: one slow group cannot
drag the reference down with it, as it drags a mean. A shape with fewer groups than the
stated minimum is not compared (a median of two says nothing about which one is slow),
and the result says so instead of staying silent.
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import median
from typing import Iterable

DEFAULT_FRACTION = 0.9
MIN_GROUPS = 3


@dataclass(frozen=True)
class GroupFigure:
    name: str
    nodes: tuple[str, ...]
    value: float  # the headline: peak bus bandwidth (GB/s) or TFLOP/s per GPU
    shape: str  # e.g. "4 nodes x 8 GPUs, inter-node"


@dataclass(frozen=True)
class Outlier:
    group: str
    nodes: tuple[str, ...]
    value: float
    median: float
    fraction: float
    shape: str

    @property
    def ratio(self) -> float:
        return self.value / self.median if self.median else 0.0

    @property
    def message(self) -> str:
        names = ", ".join(self.nodes[:4]) + (f" and {len(self.nodes) - 4} more" if len(self.nodes) > 4 else "")
        return (f"group {self.group} ({names}) measured {self.value:g}, {self.ratio:.0%} of the median "
                f"{self.median:g} of {self.shape} groups (below {self.fraction:g} x median)")

    def to_dict(self) -> dict:
        from nvcre.api.workflow import MAX_OUTLIER_NODES, MAX_WARNING_MESSAGE

        return {"group": self.group[:128], "nodes": list(self.nodes)[:MAX_OUTLIER_NODES], "value": round(self.value, 2),
                "median": round(self.median, 2), "fraction": self.fraction, "shape": self.shape[:128],
                "message": self.message[:MAX_WARNING_MESSAGE]}


@dataclass(frozen=True)
class OutlierCheck:
    outliers: tuple[Outlier, ...]
    note: str  # how the check ran, or why a shape was not compared


def check_fraction(fraction: float | None) -> float:
    """The fraction to use; a value outside (0, 1] is a caller's bug (admission refuses it)."""
    if fraction is None:
        return DEFAULT_FRACTION
    value = float(fraction)
    if not 0 < value <= 1:
        raise ValueError(f"outlierFraction must be in (0, 1], not {fraction!r}")
    return value


def find_outliers(figures: Iterable[GroupFigure], fraction: float | None = None,
                  min_groups: int = MIN_GROUPS) -> OutlierCheck:
    """Every group below ``fraction`` x the median of its shape (shapes with >= min_groups)."""
    bar = check_fraction(fraction)
    if min_groups < 2:
        raise ValueError("min_groups must be at least 2")
    by_shape: dict[str, list[GroupFigure]] = {}
    for fig in figures:
        if fig.value is None or fig.value != fig.value or fig.value < 0:  # None, NaN or nonsense: not a figure
            continue
        by_shape.setdefault(fig.shape, []).append(fig)
    found: list[Outlier] = []
    notes: list[str] = []
    for shape in sorted(by_shape):
        group = by_shape[shape]
        if len(group) < min_groups:
            notes.append(f"{shape}: {len(group)} group{'s' if len(group) != 1 else ''}, fewer than {min_groups}; not compared")
            continue
        mid = median(f.value for f in group)
        if mid <= 0:
            notes.append(f"{shape}: median is 0; not compared")
            continue
        slow = [f for f in group if f.value < bar * mid]
        found += [Outlier(f.name, f.nodes, f.value, mid, bar, shape) for f in sorted(slow, key=lambda f: (f.value, f.name))]
        notes.append(f"{shape}: {len(group)} groups, median {mid:g}, bar {bar:g} x median = {bar * mid:.2f}; "
                     f"{len(slow)} below")
    if not by_shape:
        notes.append("no group reported a headline figure")
    return OutlierCheck(tuple(found), "; ".join(notes)[:512])
