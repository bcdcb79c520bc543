"""The node readiness ledger: what each node proved, one bounded record per node.

Pure: ``update`` folds one Workflow's results for a node into its record and returns the
regressions it found. The record keeps the latest result per (category, scope) with the
environment it was measured in, the last *passing* figure for the same key (the
reference a regression is measured against), and a bounded history of earlier results,
so a record stays a few tens of KB however long a node lives (4096 nodes: a bounded
number of objects of bounded size).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from nvcre.judge.stages import STAGE_RANK

PASSED, FAILED, NOT_JUDGED = "Passed", "Failed", "NotJudged"
RESULTS = (PASSED, FAILED, NOT_JUDGED)
MAX_RESULTS = 32  # latest result per (category, scope) kept
MAX_HISTORY = 16  # earlier results kept, newest first
DEFAULT_REGRESSION_MARGIN = 0.10  # a drop of more than 10 % below the last pass is a Regression
MAX_TEXT = 256


@dataclass(frozen=True)
class NodeResult:
    """One node's outcome in one category run."""

    node: str
    category: str
    scope: str  # the shape it was measured in: "4 nodes x 8 GPUs, inter-node"
    result: str  # Passed | Failed | NotJudged
    time: str
    run: str  # namespace/certification
    workflow: str = ""
    stage: str | None = None
    value: float | None = None  # the figure measured (None: not attributable to this node)
    bar: str | None = None  # the threshold applied, as text
    reason: str | None = None
    environment: dict[str, str] = field(default_factory=dict)  # image, driver, cuda, nccl, transport
    gpu_hours: float | None = None

    @property
    def key(self) -> str:
        return f"{self.category}|{self.scope}"

    def to_entry(self) -> dict[str, Any]:
        if self.result not in RESULTS:
            raise ValueError(f"result must be one of {', '.join(RESULTS)}, not {self.result!r}")
        out: dict[str, Any] = {"category": self.category, "scope": self.scope[:MAX_TEXT], "result": self.result,
                               "time": self.time, "run": self.run[:MAX_TEXT]}
        for name, value in (("workflow", self.workflow), ("stage", self.stage), ("bar", self.bar),
                            ("reason", self.reason)):
            if value:
                out[name] = str(value)[:MAX_TEXT]
        if self.value is not None:
            out["value"] = round(float(self.value), 2)
        if self.gpu_hours is not None:
            out["gpuHours"] = round(float(self.gpu_hours), 4)
        if self.environment:
            out["environment"] = {k: str(v)[:128] for k, v in sorted(self.environment.items())[:8]}
        return out


@dataclass(frozen=True)
class Regression:
    node: str
    category: str
    scope: str
    value: float
    previous: float
    previous_run: str
    run: str
    margin: float

    @property
    def message(self) -> str:
        drop = 1 - self.value / self.previous if self.previous else 0
        return (f"{self.node}: {self.category} ({self.scope}) measured {self.value:g} in {self.run}, {drop:.0%} below "
                f"its last passing {self.previous:g} in {self.previous_run} (margin {self.margin:.0%})")

    def to_dict(self) -> dict[str, Any]:
        from nvcre.api.workflow import MAX_WARNING_MESSAGE

        return {"node": self.node, "category": self.category[:128], "scope": self.scope[:128], "value": self.value,
                "previous": self.previous, "previousRun": self.previous_run[:128], "margin": self.margin,
                "message": self.message[:MAX_WARNING_MESSAGE]}


def check_margin(margin: float | None) -> float:
    """The regression margin to apply: ``regressionMargin``, a fraction in (0, 1); None: the default."""
    if margin is None:
        return DEFAULT_REGRESSION_MARGIN
    if isinstance(margin, bool) or not isinstance(margin, (int, float)) or not 0 < margin < 1:
        raise ValueError(f"regressionMargin must be a fraction in (0, 1), not {margin!r}")
    return float(margin)


def regressed(value: float, previous: float, margin: float) -> bool:
    """``value`` is more than ``margin`` below ``previous``. A drop of exactly the margin is not a
    regression: the comparison allows a relative 1e-9, far below the 0.01 the figures are kept
    at, so 360 after 400 at a margin of 0.10 never becomes one through float rounding."""
    return previous > 0 and (previous - value) > previous * (margin + 1e-9)


def stage_cleared(results: list[dict]) -> str | None:
    """The stage a node has cleared: its latest result in every category passed, and the
    lowest stage those passes were judged at (a node is as ready as its weakest proof)."""
    if not results or any(r.get("result") != PASSED for r in results):
        return None
    staged = [r["stage"] for r in results if r.get("stage") in STAGE_RANK]
    if not staged:
        return None
    return min(staged, key=lambda s: STAGE_RANK[s])


def last_result(results: list[dict]) -> str | None:
    """Failed if any latest result failed, else NotJudged if any was not judged, else Passed."""
    if not results:
        return None
    found = {r.get("result") for r in results}
    return FAILED if FAILED in found else NOT_JUDGED if NOT_JUDGED in found else PASSED


def update(record: dict | None, new: list[NodeResult], margin: float | None = None) -> tuple[dict, list[Regression]]:
    """Fold ``new`` (one run's results for one node) into ``record`` (its status; None = first)."""
    bound = check_margin(margin)
    out = dict(record) if record else {}  # entries are replaced, never edited in place: a shallow copy is enough
    results: list[dict] = list(out.get("results") or [])
    history: list[dict] = list(out.get("history") or [])
    by_key = {f"{r.get('category')}|{r.get('scope')}": i for i, r in enumerate(results)}
    regressions: list[Regression] = []
    for res in sorted(new, key=lambda r: (r.time, r.key)):
        if out.get("node") and out["node"] != res.node:
            raise ValueError(f"result for {res.node} folded into the record of {out['node']}")
        out["node"] = res.node
        entry = res.to_entry()
        index = by_key.get(res.key)
        previous = results[index] if index is not None else None
        last_pass = None
        if previous is not None:
            last_pass = ({"value": previous["value"], "run": previous.get("run", ""), "time": previous.get("time", "")}
                         if previous.get("result") == PASSED and previous.get("value") is not None
                         else previous.get("lastPass"))
            history.insert(0, {k: v for k, v in previous.items() if k != "lastPass"})
        if last_pass:
            entry["lastPass"] = last_pass
            if res.value is not None and last_pass.get("value") and regressed(float(res.value), float(last_pass["value"]), bound):
                regressions.append(Regression(res.node, res.category, res.scope, round(float(res.value), 2),
                                              float(last_pass["value"]), str(last_pass.get("run", "")), res.run, bound))
        if index is None:
            results.append(entry)
            by_key[res.key] = len(results) - 1
        else:
            results[index] = entry
    if len(results) > MAX_RESULTS:  # the oldest keys go to history
        results.sort(key=lambda r: r.get("time", ""), reverse=True)
        history = results[MAX_RESULTS:] + history
        results = results[:MAX_RESULTS]
    results.sort(key=lambda r: (r.get("category", ""), r.get("scope", "")))
    out["results"] = results
    out["history"] = history[:MAX_HISTORY]
    latest = max(results, key=lambda r: r.get("time", "")) if results else {}
    out["stageCleared"] = stage_cleared(results)
    out["lastResult"] = last_result(results)
    out["lastRun"] = latest.get("run")
    out["lastRunTime"] = latest.get("time")
    out = {k: v for k, v in out.items() if v is not None}
    return out, regressions


def is_ready(record: dict, stage: str | None) -> bool:
    """Cleared at ``stage`` or above (any stage when None)."""
    cleared = record.get("stageCleared")
    if cleared not in STAGE_RANK:
        return False
    return stage is None or STAGE_RANK[cleared] >= STAGE_RANK[stage]
