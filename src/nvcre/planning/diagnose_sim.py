"""A seeded fault-scenario simulator for diagnose, with ground truth.

No Kubernetes: a group "runs" by looking at the injected faults. It exists so the
planner (and the reference baseline in ``bench/``) can be measured on thousands
of clusters in seconds.

Fault semantics (the same ones the planner's docstring states)
    * bad node: any group that contains it runs slow (its NIC/GPU bandwidth
      factor) and fails the threshold;
    * bad link (a, b): a group that contains both a and b runs slow;
    * bad rack: its uplink is degraded, so a group with nodes inside and outside
      that rack runs slow; groups entirely inside the rack are fine.

Noise
    * bandwidth: measured = nominal x worst fault factor x (1 + N(0, sigma));
      the group passes when measured >= threshold;
    * flaky outcome: with probability ``flip`` the verdict is inverted. A
      flipped pass reads as a crashed job (no measurement, WorkloadFailed); a
      flipped failure reads as a healthy measurement (an intermittent fault
      that did not show this time).
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from nvcre.planning.diagnose import (
    DiagnosePolicy,
    DiagnoseState,
    GroupResult,
    Round,
    next_round,
    record,
    start,
)

NOMINAL_GBPS = 400.0
THRESHOLD_RATIO = 0.9
RACK_SIZES = {16: 4, 64: 16, 232: 18, 512: 16, 4096: 16}
KINDS = ("healthy", "node", "nodes", "link-intra", "link-cross", "rack")
EXTRA_KINDS = ("node+link", "pair2", "intermittent")  # node + link anywhere; two bad nodes in one
# screen pair; one node that crashes about half of its runs


def cluster(n: int, rack_size: int | None = None) -> tuple[list[str], dict[str, str]]:
    """``n`` node names and their racks (``rack_size`` nodes each, the last may be short).

    ``rack_size=0`` gives no topology at all (no rack labels, no rack faults).
    """
    names = [f"gpu-node-{i:04d}" for i in range(n)]
    if rack_size == 0:
        return names, {}
    if rack_size == -1:  # uneven: racks of 1.5, 0.5, 1, 1.25 and 0.75 times the usual size, an odd one too
        base = RACK_SIZES.get(n, 16)
        pattern = [max(1, round(base * f)) for f in (1.5, 0.5, 1.0, 1.25, 0.75)] + [max(1, base // 2 + 1)]
        topo, rack, left, i = {}, 0, 0, 0
        for name in names:
            if left == 0:
                left, rack = pattern[i % len(pattern)], rack + 1
                i += 1
            topo[name] = f"rack-{rack - 1:03d}"
            left -= 1
        return names, topo
    size = rack_size or RACK_SIZES.get(n, 16)
    return names, {name: f"rack-{i // size:03d}" for i, name in enumerate(names)}


@dataclass
class Scenario:
    nodes: list[str]
    topology: dict[str, str]
    bad_nodes: dict[str, float] = field(default_factory=dict)           # node -> bandwidth factor
    bad_links: dict[frozenset, float] = field(default_factory=dict)     # {a, b} -> factor
    bad_racks: dict[str, float] = field(default_factory=dict)           # rack -> factor
    intermittent: dict[str, float] = field(default_factory=dict)       # node -> chance a run crashes
    flip: float = 0.0
    bw_sigma: float = 0.02
    seed: int = 0
    kind: str = "custom"
    mnnvl: bool = False  # groups inside one rack run over NVLink: a bad NIC shows only across racks

    @property
    def threshold(self) -> float:
        return NOMINAL_GBPS * THRESHOLD_RATIO

    def factor(self, group: Sequence[str]) -> float:
        """The slowdown the injected faults impose on ``group`` (1.0 = healthy)."""
        worst = 1.0
        members = set(group)
        if self.mnnvl and len({self.topology.get(n) for n in group}) <= 1 and self.topology:
            return worst  # one NVLink domain: no NIC, link or uplink on the path
        for n in group:
            f = self.bad_nodes.get(n)
            if f is not None and f < worst:
                worst = f
        for pair, f in self.bad_links.items():
            if f < worst and pair <= members:
                worst = f
        if self.bad_racks:
            racks = {self.topology.get(n) for n in group}
            if len(racks) > 1:
                for r, f in self.bad_racks.items():
                    if r in racks and f < worst:
                        worst = f
        return worst


def make_scenario(n: int, kind: str, seed: int, flip: float = 0.0, bw_sigma: float = 0.02,
                  rack_size: int | None = None) -> Scenario:
    """One random cluster of ``kind`` (see ``KINDS``); same arguments, same scenario."""
    if kind not in KINDS + EXTRA_KINDS:
        raise ValueError(f"kind must be one of {KINDS + EXTRA_KINDS}")
    rng = random.Random(f"{n}:{kind}:{seed}")
    nodes, topo = cluster(n, rack_size)
    sc = Scenario(nodes, topo, flip=flip, bw_sigma=bw_sigma, seed=seed, kind=kind)

    def degraded() -> float:
        return rng.uniform(0.35, 0.8)

    if kind == "node":
        sc.bad_nodes = {rng.choice(nodes): degraded()}
    elif kind == "nodes":
        sc.bad_nodes = {x: degraded() for x in rng.sample(nodes, rng.randint(2, 5))}
    elif kind == "link-intra":
        racks = sorted(set(topo.values()))
        rack = rng.choice(racks)
        members = [x for x in nodes if topo[x] == rack]
        a, b = rng.sample(members, 2)
        sc.bad_links = {frozenset((a, b)): degraded()}
    elif kind == "link-cross":
        a = rng.choice(nodes)
        b = rng.choice([x for x in nodes if topo.get(x) != topo.get(a)] or [x for x in nodes if x != a])
        sc.bad_links = {frozenset((a, b)): degraded()}
    elif kind == "node+link":
        a, b, c = rng.sample(nodes, 3)
        sc.bad_nodes = {a: degraded()}
        sc.bad_links = {frozenset((b, c)): degraded()}
    elif kind == "pair2":  # both ends of one screen pair (consecutive nodes of one rack)
        racks = sorted({r for r in topo.values() if sum(1 for x in topo.values() if x == r) >= 2}) or [None]
        rack = rng.choice(racks)
        members = [x for x in nodes if topo.get(x) == rack] if rack else nodes
        i = rng.randrange(0, len(members) // 2) * 2
        sc.bad_nodes = {members[i]: degraded(), members[i + 1]: degraded()}
    elif kind == "intermittent":
        sc.intermittent = {rng.choice(nodes): rng.uniform(0.4, 0.6)}
    elif kind == "rack":
        sc.bad_racks = {rng.choice(sorted(set(topo.values()))): degraded()}
    return sc


def observably_bad(sc: Scenario, name: str, min_group: int) -> bool:
    """Whether naming ``name`` bad is consistent with the injected faults: it is bad, or
    no group the planner may run (at least ``min_group`` nodes) holding it can pass, so it
    is observationally a bad node (e.g. alone in a rack whose uplink is degraded, or whose
    only rack mate is bad while the uplink is degraded)."""
    if name in sc.bad_nodes or name in sc.intermittent:
        return True
    if sum(1 for pair in sc.bad_links if name in pair) >= 2:
        return True  # an end of two bad links fails with two different partners: it reads as a bad node
    if min_group <= 1:
        return sc.factor([name]) < 1.0
    group = [name]
    for y in sc.nodes:  # greedy: a passing group of min_group nodes holding ``name``
        if y != name and y not in sc.intermittent and sc.factor(group + [y]) >= 1.0:
            group.append(y)
            if len(group) >= min_group:
                return False
    return True


class Fleet:
    """Runs groups against a scenario with seeded noise; counts what it ran."""

    def __init__(self, scenario: Scenario, seed: int | None = None) -> None:
        self.sc = scenario
        self.rng = random.Random(f"noise:{scenario.seed if seed is None else seed}:{scenario.kind}")
        self.tests = 0
        self.node_rounds = 0
        self.shown = 0  # runs or transfers an intermittent node's own fault failed (its fault showed)

    def run_pairwise(self, group: Sequence[str]) -> GroupResult:
        """One Job that measures every pair of ``group`` in turn (send/receive between the
        two nodes, as NIC mesh checks do): per-pair bandwidth follows the same faults; the
        job as a whole can crash (a flip or an intermittent member), leaving no figures."""
        self.tests += 1
        self.node_rounds += len(group)
        sc = self.sc
        if sc.flip and self.rng.random() < sc.flip:
            return GroupResult(list(group), False, None, "WorkloadFailed", "crash")
        pairs: dict[tuple[str, str], float | None] = {}
        for a, b in self._touched_pairs(group):
            value: float | None = round(NOMINAL_GBPS * sc.factor([a, b]) * (1.0 + self.rng.gauss(0.0, sc.bw_sigma)), 2)
            for n in (a, b):  # an intermittent end fails some of its transfers: no figure for them
                q = sc.intermittent.get(n)
                if q is not None and self.rng.random() < q:
                    value = None
                    self.shown += 1
            pairs[(a, b)] = value
        figures = [v for v in pairs.values() if v is not None]
        worst = min(figures) if figures else None
        slow = worst is not None and worst < sc.threshold
        failed = len(figures) < len(pairs)
        if not slow and not failed:
            return GroupResult(list(group), True, worst if worst is not None else NOMINAL_GBPS, "", "", pairs=pairs)
        if slow:  # measured below the bar: the slowest pair is the Job's figure
            return GroupResult(list(group), False, worst, "ThresholdViolation", "slow", pairs=pairs)
        return GroupResult(list(group), False, None, "WorkloadFailed", "crash", pairs=pairs)

    def _touched_pairs(self, group: Sequence[str]) -> list[tuple[str, str]]:
        """Every pair of a small group; in a large one the pairs a fault touches (a bad node's,
        a bad link, a bad rack's boundary) plus 64 others. An untouched pair reads nominal with
        2 % noise, so it never falls below the bar (5 sigma): drawing all 8 million pairs of
        4096 nodes would only slow the benchmark, not change a verdict."""
        sc = self.sc
        members = list(group)
        if len(members) <= 128:
            return [(a, b) for i, a in enumerate(members) for b in members[i + 1:]]
        inside = set(members)
        where = {x: i for i, x in enumerate(members)}
        out: set[tuple[str, str]] = set()

        def add(a: str, b: str) -> None:
            if a != b:
                out.add((a, b) if where[a] < where[b] else (b, a))

        for x in list(sc.bad_nodes) + list(sc.intermittent):
            if x in inside:
                for y in members:
                    add(x, y)
        for pair in sc.bad_links:
            a, b = sorted(pair)
            if a in inside and b in inside:
                add(a, b)
        for rack in sc.bad_racks:
            ins = [x for x in members if sc.topology.get(x) == rack]
            outs = [x for x in members if sc.topology.get(x) != rack]
            for a in ins:
                for b in outs:
                    add(a, b)
        for k in range(64):
            add(members[k % len(members)], members[(k * 7 + 1) % len(members)])
        return sorted(out)

    def run(self, group: Sequence[str], tag: str = "") -> GroupResult:
        if tag == "pairwise":
            return self.run_pairwise(group)
        self.tests += 1
        self.node_rounds += len(group)
        sc = self.sc
        measured = NOMINAL_GBPS * sc.factor(group) * (1.0 + self.rng.gauss(0.0, sc.bw_sigma))
        passed = measured >= sc.threshold
        crash = False
        for n in group:  # every intermittent member draws, whatever the outcome (a fixed noise stream)
            q = sc.intermittent.get(n)
            if q is not None and self.rng.random() < q:
                crash = True
                self.shown += 1
        if crash:
            return GroupResult(list(group), False, None, "WorkloadFailed", "crash")
        if sc.flip and self.rng.random() < sc.flip:
            if passed:
                return GroupResult(list(group), False, None, "WorkloadFailed", "crash")
            healthy = NOMINAL_GBPS * (1.0 + self.rng.gauss(0.0, sc.bw_sigma))
            return GroupResult(list(group), True, max(healthy, sc.threshold * 1.05), "")
        return GroupResult(list(group), passed, round(measured, 2), "" if passed else "ThresholdViolation",
                           "" if passed else "slow")


@dataclass
class RunStats:
    verdict: object
    rounds: int
    first_fail_round: int | None   # first round in which a screen or cross test failed
    tests: int
    node_rounds: int
    node_rounds_after_first: int
    plan_seconds: list[float]
    max_groups_per_round: int
    disjoint: bool
    intermittent_shown: int = 0  # how often an intermittent node's fault failed a run or a transfer


class RoundTripMismatch(AssertionError):
    """The state's JSON form planned differently than the state itself."""


def _round_trip(state: DiagnoseState) -> DiagnoseState:
    return DiagnoseState.from_dict(json.loads(json.dumps(state.to_dict())))


def run_planner(sc: Scenario, policy: DiagnosePolicy | None = None, roundtrip: bool = False,
                max_steps: int = 10_000) -> RunStats:
    """Diagnose ``sc`` with the planner end to end, recording what it cost.

    ``roundtrip``: beside the state, keep a copy that goes through its JSON dict form
    before every round (as the controller's status does) and raise RoundTripMismatch
    the moment the two plan a different round or reach a different verdict.
    """
    policy = policy or DiagnosePolicy(threshold=sc.threshold)
    fleet = Fleet(sc)
    t0 = time.perf_counter()
    state = start(sc.nodes, sc.topology, policy)
    shadow = _round_trip(state) if roundtrip else None
    plan = [time.perf_counter() - t0]
    first_fail = None
    after_first = 0
    widest = 0
    disjoint = True
    for _ in range(max_steps):
        t0 = time.perf_counter()
        step = next_round(state)
        plan[-1] += time.perf_counter() - t0
        if shadow is not None:
            shadow = _round_trip(shadow)
            other = next_round(shadow)
            mine = step.to_dict() if not isinstance(step, Round) else (step.number, step.groups, step.tags)
            theirs = other.to_dict() if not isinstance(other, Round) else (other.number, other.groups, other.tags)
            if mine != theirs:
                raise RoundTripMismatch(f"round {state.round + 1}: direct {str(mine)[:300]} != "
                                        f"round-tripped {str(theirs)[:300]}")
        if not isinstance(step, Round):
            break
        widest = max(widest, len(step.groups))
        seen: set[str] = set()
        for g in step.groups:
            if seen.intersection(g):
                disjoint = False
            seen.update(g)
        results = [fleet.run(g, tag) for g, tag in zip(step.groups, step.tags)]
        if step.number > 1:
            after_first += sum(len(g) for g in step.groups)
        if first_fail is None and any(
            not r.passed and tag in ("screen", "cross", "pairwise") for r, tag in zip(results, step.tags)
        ):
            first_fail = step.number
        t1 = time.perf_counter()
        state = record(state, results)
        plan.append(time.perf_counter() - t1)
        if shadow is not None:
            shadow = record(shadow, results)
    else:
        raise RuntimeError(f"the planner did not finish within {max_steps} rounds")
    verdict = step
    return RunStats(verdict, verdict.rounds, first_fail, fleet.tests, fleet.node_rounds, after_first,
                    plan, widest, disjoint, fleet.shown)
