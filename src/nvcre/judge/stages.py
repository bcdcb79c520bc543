"""Readiness stages: which thresholds judge a category, and where each one came from.

Order: the user's thresholds always win; else a stage derives thresholds as its stated
fraction of the shipped acceptance line for this GPU, fabric and scope; a category whose
workload measures nothing is judged by the tool itself (DCGM passes or fails). Anything
else is *not judged*, and says why, so a run is never a quiet success.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

from nvcre.judge.baselines import Baseline, BaselineSet, load_baselines

STAGES: tuple[str, ...] = ("bring-up", "burn-in", "preproduction", "production")
STAGE_RANK = {name: i for i, name in enumerate(STAGES)}

# state values
USER, STAGE, TOOL, NONE, NO_BASELINE = "thresholds", "stage", "tool", "none", "no-baseline"
JUDGED_STATES = (USER, STAGE, TOOL)


@dataclass(frozen=True)
class DerivedThreshold:
    key: str
    expression: str  # CEL over `value`, as the Job evaluates it
    bar: float
    stage: str
    fraction: float
    acceptance: float
    scope: str
    source: str

    @property
    def text(self) -> str:
        share = "" if self.fraction == 1 else f"{self.fraction:g} x {self.acceptance:g}, "
        return (f"{self.key} >= {self.bar:g} ({self.stage}: {share}{self.scope} acceptance line, "
                f"source {self.source})")

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "expression": self.expression, "bar": self.bar, "stage": self.stage,
                "fraction": self.fraction, "acceptance": self.acceptance, "scope": self.scope,
                "source": self.source[:512], "text": self.text[:1024]}


@dataclass(frozen=True)
class Judging:
    """How a category is judged (our extension, shown in Workflow status and reports)."""

    state: str
    stage: str | None = None
    thresholds: dict[str, str] = field(default_factory=dict)  # what the Jobs evaluate
    derived: tuple[DerivedThreshold, ...] = ()
    message: str = ""

    @property
    def judged(self) -> bool:
        return self.state in JUDGED_STATES

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"state": self.state, "judged": self.judged, "message": self.message[:1024]}
        if self.stage:
            out["stage"] = self.stage
        if self.derived:
            out["derived"] = [d.to_dict() for d in self.derived]
        return out


@dataclass(frozen=True)
class Scope:
    scope: str  # intra-node | inter-node | mnnvl
    nodes: int | None

    @property
    def text(self) -> str:
        return f"inter-node {self.nodes}-node" if self.scope == "inter-node" and self.nodes else self.scope


def scope_of(test_scale: str | None, nodes_per_job: int | None, mnnvl: bool) -> Scope:
    """The scope a group of this Workflow measures: one node, an NVLink domain or the network."""
    if test_scale == "intra-node" or nodes_per_job == 1:
        return Scope("intra-node", 1)
    if test_scale == "intra-rack" and mnnvl:
        return Scope("mnnvl", nodes_per_job)
    return Scope("inter-node", nodes_per_job)


def _bar(value: float) -> float:
    return round(value, 2)


def judging_for(
    *,
    category: str,
    stage: str | None,
    user_thresholds: dict[str, str] | None,
    measured_keys: Iterable[str],
    arch: str,
    platform: str,
    nics_per_node: int | None,
    scope: Scope,
    baselines: BaselineSet | None = None,
) -> Judging:
    """Decide the thresholds one category's Jobs evaluate, and say where they came from.

    ``measured_keys``: the threshold keys the catalog entry measures (empty: the workload's
    own exit code is the verdict). Only bandwidth and throughput keys have baselines.
    """
    user = dict(user_thresholds or {})
    measured = tuple(measured_keys)
    if user:
        return Judging(USER, stage, user, (), "judged by the thresholds in the spec")
    if not measured:
        return Judging(TOOL, stage, {}, (), f"{category} passes or fails by the tool's own verdict")
    if not stage:
        return Judging(NONE, None, {}, (),
                       "not judged: no thresholds and no stage; set spec.stage (bring-up, burn-in, preproduction, "
                       "production) or thresholds")
    data = baselines or load_baselines()
    stage_row = data.stages.get(stage)
    if stage_row is None:  # admission refuses unknown stages; data and API disagree
        return Judging(NO_BASELINE, stage, {}, (), f"not judged: stage {stage!r} has no fraction in the baselines")
    derived: list[DerivedThreshold] = []
    for key in ("busBandwidthGBps", "avgTFLOPsPerGPU"):
        if key not in measured:
            continue
        entry: Baseline | None = data.find(arch=arch, category=category, scope=scope.scope, metric=key,
                                           nodes=scope.nodes, platform=platform, nics_per_node=nics_per_node)
        if entry is None or entry.acceptance is None:
            continue
        bar = _bar(entry.acceptance * stage_row.fraction)
        derived.append(DerivedThreshold(
            key=key, expression=f"value >= {bar:g}", bar=bar, stage=stage, fraction=stage_row.fraction,
            acceptance=entry.acceptance, scope=f"{arch.upper()} {entry.scope_text}", source=entry.cited,
        ))
    if not derived:
        return Judging(NO_BASELINE, stage, {}, (),
                       f"not judged: no baseline for {arch}/{platform} ({category}, {scope.text}); set thresholds")
    return Judging(STAGE, stage, {d.key: d.expression for d in derived}, tuple(derived),
                   "; ".join(d.text for d in derived))
